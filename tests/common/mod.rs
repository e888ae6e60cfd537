//! Shared helpers for the kernel reference tests (`tests/kernels_*.rs`).
//!
//! Guarantees:
//! - [`load`] loads a file of `kernels/` (with its imports) and panics with the rendered diagnostics if it does not
//!   parse; [`launch`] runs a kernel in the interpreter and panics with the rendered interpreter
//!   error if the launch fails. Tests therefore fail loudly, never pass on an error.
//! - [`check`] compares element by element against an f64 reference with a per-element bound and
//!   fails listing the worst offenders; NaN matches only NaN, infinities only the same infinity.
//! - The reference math here (sigmoid, tanh-GELU, the normal CDF via [`erfc`]) is plain f64 Rust,
//!   independent of kir and of the kernels' approximations.
#![allow(dead_code)]

use kir_interp::{Arg, Buffer, LaunchConfig, Options};
use kir_ir::types::{Constant, ScalarType};
use kir_ir::Module;

/// The f32 unit roundoff, 2^-24.
pub const EPS: f64 = 1.0 / 16_777_216.0;

/// Parses `kernels/<file>`.
pub fn load(file: &str) -> Module {
    let path = format!("{}/kernels/{file}", env!("CARGO_MANIFEST_DIR"));
    match kir_ir::text::load::load_file(std::path::Path::new(&path)) {
        Ok(l) => l.module,
        Err(e) => panic!("{}", e.render(false)),
    }
}

/// Launches `kernel` of `module` with a 1-D or multi-dimensional shape; panics on an interpreter error.
pub fn launch(module: &Module, kernel: &str, grid: [u32; 3], block: [u32; 3], args: &[Arg], bufs: &mut [Buffer]) {
    let v = kir_ir::verify::verify(module.clone()).unwrap_or_else(|d| panic!("the module does not verify: {d}"));
    let k = v.verified_kernel(kernel).unwrap_or_else(|| panic!("no kernel @{kernel}"));
    let cfg = LaunchConfig { grid, block, dynamic_shared_bytes: 0 };
    if let Err(e) = kir_interp::launch_verified(k, &cfg, args, bufs, &Options::default()) {
        panic!("@{kernel} failed: {}", kir_ir::diag::render(&[e.to_diagnostic()], kernel, "", false));
    }
}

/// `ceil(n / b)`.
pub fn blocks(n: usize, b: u32) -> u32 {
    n.div_ceil(b as usize) as u32
}

pub fn u32a(v: u32) -> Arg {
    Arg::Scalar(Constant::u32(v))
}
pub fn f32a(v: f32) -> Arg {
    Arg::Scalar(Constant::f32(v))
}
pub fn buf(i: usize) -> Arg {
    Arg::Buffer(i)
}

/// The `rand` generator of docs/testing.md: splitmix64, floats uniform in [-1, 1).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        kir_ir::generate::splitmix64(&mut self.0)
    }
    /// Uniform in [-1, 1) on a 2^-23 grid (exact in f32).
    pub fn unit(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f64 / 16_777_216.0 * 2.0 - 1.0) as f32
    }
    /// Uniform in [-s, s).
    pub fn vec(&mut self, n: usize, s: f32) -> Vec<f32> {
        (0..n).map(|_| self.unit() * s).collect()
    }
}

/// Storage types of the gated kernels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Storage {
    F32,
    F16,
    BF16,
}

impl Storage {
    pub fn suffix(self) -> &'static str {
        match self {
            Storage::F32 => "f32",
            Storage::F16 => "f16",
            Storage::BF16 => "bf16",
        }
    }
    /// Rounds to the storage type (nearest even) and back.
    pub fn round(self, v: f32) -> f32 {
        match self {
            Storage::F32 => v,
            Storage::F16 => half::f16::from_f32(v).to_f32(),
            Storage::BF16 => half::bf16::from_f32(v).to_f32(),
        }
    }
    /// A buffer of `v` (each value must already be representable: see [`Storage::round`]).
    pub fn buffer(self, v: &[f32]) -> Buffer {
        match self {
            Storage::F32 => Buffer::from_f32(v),
            Storage::F16 => Buffer::from_u16_bits(
                ScalarType::F16,
                &v.iter().map(|x| half::f16::from_f32(*x).to_bits()).collect::<Vec<_>>(),
            ),
            Storage::BF16 => Buffer::from_u16_bits(
                ScalarType::BF16,
                &v.iter().map(|x| half::bf16::from_f32(*x).to_bits()).collect::<Vec<_>>(),
            ),
        }
    }
    pub fn zeros(self, n: usize) -> Buffer {
        let t = match self {
            Storage::F32 => ScalarType::F32,
            Storage::F16 => ScalarType::F16,
            Storage::BF16 => ScalarType::BF16,
        };
        Buffer::zeros(t, n)
    }
    /// Unit roundoff of the type (half an ulp at 1).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Storage::F32 => EPS,
            Storage::F16 => 1.0 / 2048.0,
            Storage::BF16 => 1.0 / 256.0,
        }
    }
    /// Half the spacing of the type's subnormals: the absolute rounding error near zero.
    pub fn subnormal_half_step(self) -> f64 {
        match self {
            Storage::F32 => 2f64.powi(-150),
            Storage::F16 => 2f64.powi(-25),
            Storage::BF16 => 2f64.powi(-134),
        }
    }
    /// The bound on storing a value computed in f32 with absolute error `err` around `r`: the f32
    /// error, plus rounding to the storage type of a value up to `|r| + err`.
    pub fn stored_bound(self, r: f64, err: f64) -> f64 {
        match self {
            Storage::F32 => err,
            s => err + s.unit_roundoff() * (r.abs() + err) + s.subnormal_half_step(),
        }
    }
}

/// Compares `got` with `want` element by element: `|got - want| <= tol[i]`, NaN only with NaN,
/// infinities only with the same infinity. Panics listing up to 8 failures, worst first.
pub fn check(what: &str, got: &[f64], want: &[f64], tol: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    assert_eq!(tol.len(), want.len(), "{what}: tolerance length");
    let mut bad: Vec<(f64, usize)> = Vec::new();
    for i in 0..want.len() {
        let (g, w, t) = (got[i], want[i], tol[i]);
        let ok = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if w.is_infinite() || g.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= t
        };
        if !ok {
            let excess = if t > 0.0 { (g - w).abs() / t } else { f64::INFINITY };
            bad.push((if excess.is_nan() { f64::INFINITY } else { excess }, i));
        }
    }
    if !bad.is_empty() {
        bad.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
        let lines: Vec<String> = bad
            .iter()
            .take(8)
            .map(|&(_, i)| {
                format!(
                    "  [{i}] got {:e} want {:e} (|diff| {:e} > tol {:e})",
                    got[i],
                    want[i],
                    (got[i] - want[i]).abs(),
                    tol[i]
                )
            })
            .collect();
        panic!("{what}: {} of {} elements out of tolerance:\n{}", bad.len(), want.len(), lines.join("\n"));
    }
}

/// The f32 value of `v` as f64 (for building references from f32 inputs).
pub fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|x| *x as f64).collect()
}

// ---------------------------------------------------------------- reference math (f64) ----

pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

pub const GELU_K0: f64 = 0.797_884_560_802_865_4; // sqrt(2 / pi)
pub const GELU_K1: f64 = 0.044_715;

/// `u = sqrt(2/pi) (x + 0.044715 x^3)` of the tanh-approximation GELU.
pub fn gelu_u(x: f64) -> f64 {
    GELU_K0 * (x + GELU_K1 * x * x * x)
}

/// tanh-approximation GELU, `0.5 x (1 + tanh u) = x sigma(2u)` (the second form keeps relative
/// accuracy for large negative x, where `1 + tanh u` cancels in f64 too).
pub fn gelu_tanh(x: f64) -> f64 {
    x * sigmoid(2.0 * gelu_u(x))
}

/// The two terms of the derivative of [`gelu_tanh`]: `sigma(2u)` and
/// `x * 2 sigma(2u) sigma(-2u) du/dx` (their sum is the derivative).
pub fn gelu_tanh_grad_terms(x: f64) -> (f64, f64) {
    let u = gelu_u(x);
    let du = GELU_K0 * (1.0 + 3.0 * GELU_K1 * x * x);
    let (s, sb) = (sigmoid(2.0 * u), sigmoid(-2.0 * u));
    (s, x * 2.0 * s * sb * du)
}

pub fn gelu_tanh_grad(x: f64) -> f64 {
    let (a, b) = gelu_tanh_grad_terms(x);
    a + b
}

/// `v = 2u log2(e)`, the exponent the GELU kernels feed to ex2 (their error bound grows with |v|).
pub fn gelu_v(x: f64) -> f64 {
    2.0 * gelu_u(x) * std::f64::consts::LOG2_E
}

pub fn silu(x: f64) -> f64 {
    x * sigmoid(x)
}

pub fn silu_grad(x: f64) -> f64 {
    let s = sigmoid(x);
    s * (1.0 + x * (1.0 - s))
}

/// erfc(x) = 1 - erf(x) with erf from the all-positive series erf(x) = 2/sqrt(pi) e^(-x^2) sum
/// 2^n x^(2n+1) / (2n+1)!! for |x| < 2 (absolute error ~1e-16, so relative ~1e-13 at x = 2), and
/// the continued fraction of erfc for x >= 2 (relative error ~1e-15). Far below the f32 bounds.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.0 {
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > 1e-17 * sum {
            n += 1.0;
            term *= 2.0 * x * x / (2.0 * n + 1.0);
            sum += term;
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp() * sum
    } else {
        // erfc(x) = e^(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        let mut t = x;
        for n in (1..=400).rev() {
            t = x + (n as f64 / 2.0) / t;
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / t
    }
}

/// Standard normal CDF.
pub fn phi_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Standard normal density.
pub fn phi_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Central difference of `f` at `x` with step `h = 1e-4 max(1, |x|)`; returns (estimate, h).
pub fn central_diff(f: impl Fn(f64) -> f64, x: f64) -> (f64, f64) {
    let h = 1e-4 * x.abs().max(1.0);
    ((f(x + h) - f(x - h)) / (2.0 * h), h)
}
