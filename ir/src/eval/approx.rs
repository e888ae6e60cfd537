//! The approximate ops (`ex2 lg2 rsqrt sin cos tanh`, and the `.approx`/`.full` forms of
//! `div sqrt rcp`) and the error bounds measured for them on an H100.
//!
//! Guarantees:
//! - kir defines each approximate op as the mathematical function of its (exactly widened) input,
//!   computed with the host's f64 math library and rounded once to nearest in the op's type. For
//!   f32 this is the correctly rounded result except in rare cases where the f64 result lies
//!   within an f64 ulp of an f32 rounding boundary. The `.approx`/`.full` forms of `div sqrt rcp`
//!   are the correctly rounded (`rn`) result, except `div.approx.f32` by |b| in (2^126, 2^128):
//!   a signed zero, NaN for an infinite dividend ([`div_approx`], as the GPU).
//! - Special values follow IEEE: `ex2(-inf) = +0`, `ex2(+inf) = +inf`, `lg2(±0) = -inf`,
//!   `lg2(x < 0) = NaN`, `lg2(+inf) = +inf`, `rsqrt(+0) = +inf`, `rsqrt(-0) = -inf`,
//!   `rsqrt(x < 0) = NaN`, `rsqrt(+inf) = +0`, `sin/cos(±inf) = NaN`, `tanh(±inf) = ±1`; NaN in,
//!   canonical NaN out. These, and the special results below, are the H100's bit for bit
//!   (tests/hardware/h100 `approx_f32`, the `.all` runs).
//! - `sin.approx.f32` (with or without `.ftz`) is a signed zero when `|x| * f32(1/2π)`, rounded to
//!   f32, is below 2^-25 (subnormal inputs included): the GPU's unit works on `x / 2π` in fixed
//!   point with 25 fraction bits (measured: `sin(1.84e-7) = 0`, `sin(1.91e-7) != 0`). Elsewhere
//!   `sin` is the rounded function as above.
//! - [`bound`] gives the GPU's maximum error for each f32 approximate op as MEASURED on an H100
//!   over all 2^32 inputs (hardware-truth `approx/mufu.json`; docs/language.md "Approximate ops"
//!   has the table), against the correctly rounded result; the ISA's documented figures are not
//!   used where the hardware is better (`tanh`: 134 ulp, not 2^-11) or worse (`sin`/`cos` away
//!   from 0). `eval::within_error_bound` checks a GPU result against kir's result with it.

use super::float::{self, Fmt, Mode};
use crate::op::{BinOp, FloatMode, Op, UnOp};

/// Which transcendental an op computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Ex2,
    Lg2,
    Rsqrt,
    Sin,
    Cos,
    Tanh,
}

#[inline]
fn apply(f: Func, x: f64) -> f64 {
    match f {
        Func::Ex2 => x.exp2(),
        Func::Lg2 => x.log2(),
        Func::Rsqrt => 1.0 / x.sqrt(),
        Func::Sin => x.sin(),
        Func::Cos => x.cos(),
        Func::Tanh => x.tanh(),
    }
}

/// Evaluates a transcendental on raw bits of format `fmt`, with `ftz` (f32 only).
#[inline]
pub fn eval(f: Func, fmt: Fmt, ftz: bool, a: u64) -> u64 {
    let ftz = ftz && fmt == Fmt::F32;
    let a = if ftz { fmt.flush(a) } else { a };
    if f == Func::Sin && fmt == Fmt::F32 && sin_is_zero(a as u32) {
        return a & 0x8000_0000;
    }
    let y = apply(f, fmt.to_f64(a));
    let r = float::convert(Fmt::F64, fmt, Mode::Rn, y.to_bits());
    if ftz {
        fmt.flush(r)
    } else {
        r
    }
}

/// Whether the H100's `sin.approx.f32` of `x` (bits) is a signed zero: `|x| * f32(1/2π)` rounded
/// to f32 is below 2^-25 (the unit's fixed-point input has 25 fraction bits of a turn). Measured
/// on the `approx_f32` runs: every input below the threshold gives ±0, every one above it not.
pub fn sin_is_zero(x: u32) -> bool {
    let ax = f32::from_bits(x & 0x7fff_ffff);
    let turns = ax * (0.5 / std::f64::consts::PI) as f32;
    turns < 2f32.powi(-25)
}

/// `div.approx.f32` (raw f32 bits): the correctly rounded quotient, except that for |b| in
/// (2^126, 2^128) the GPU's reciprocal of b is a zero of b's sign (PTX: "returns zero"), so the
/// result is a signed zero for a finite `a` and the canonical NaN for an infinite one (measured:
/// `2 / -2^127 = -0`, `inf / 2^127 = NaN`, tests/hardware/h100 `div_approx_f32.all`).
pub fn div_approx(ftz: bool, a: u64, b: u64) -> u64 {
    let mb = b as u32 & 0x7fff_ffff;
    if mb > 0x7e80_0000 && mb < 0x7f80_0000 {
        let ma = a as u32 & 0x7fff_ffff;
        return if ma >= 0x7f80_0000 { 0x7fff_ffff } else { (a ^ b) & 0x8000_0000 };
    }
    float::div(Fmt::F32, Mode::Rn, ftz, a, b)
}

/// The GPU's maximum error for an approximate op, relative to the exact result (measured).
/// A GPU result `g` for exact result `y` is within the bound when
/// `|g - y| <= max(ulp * ulp(y), abs, rel * |y|)` for inputs in `domain` (outside it nothing
/// is bounded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorBound {
    /// Error in units in the last place of the exact result.
    pub ulp: u32,
    /// Absolute error.
    pub abs: f64,
    /// Relative error.
    pub rel: f64,
    /// The input range `[lo, hi]` over which the bound holds (was measured).
    pub domain: (f64, f64),
    /// Where, inside `domain`, the absolute bound applies instead of the ulp/relative one
    /// (`lg2`: the absolute bound holds for x in [0.5, 2]).
    pub abs_domain: Option<(f64, f64)>,
}

const ALL: (f64, f64) = (f64::NEG_INFINITY, f64::INFINITY);

/// `sin`/`cos.approx.f32`'s measured absolute error bound on [-100π, 100π]: 2^-14.7 = 3.757e-5
/// (measured maximum 3.654e-5 for `sin` at x = 311.03, 3.660e-5 for `cos` at x = 312.65).
pub const SIN_COS_ABS: f64 = 3.757e-5;

impl ErrorBound {
    const fn ulp(n: u32) -> ErrorBound {
        ErrorBound { ulp: n, abs: 0.0, rel: 0.0, domain: ALL, abs_domain: None }
    }
}

/// The measured bound of an f32 approximate op (`None` for ops kir evaluates exactly), against
/// the correctly rounded result, from an H100 run over all 2^32 inputs (`approx/mufu.json`:
/// maximum ulp difference, `max_abs_err_domain`; divisions over 10 divisors x 2^32 dividends):
/// `ex2.approx` 2 ulp; `lg2.approx` absolute 2^-22 for x in [0.5, 2] (the result nears 0 at x = 1:
/// 23.9 million ulp at x = 1 - 2^-24, absolute 7.4e-8), 2 ulp elsewhere; `rsqrt.approx` 2 ulp;
/// `rcp.approx` 1 ulp; `sqrt.approx` 1 ulp; `tanh.approx` 134 ulp; `sin/cos.approx` absolute
/// 2^-14.7 in [-100π, 100π] (measured 3.66e-5 at |x| = 312.7; the error grows with |x|, about
/// |x| * 2^-23, and stays below the ISA's 2^-20.9 only for |x| < π), none outside; `div.approx`
/// 2 ulp for divisors in [2^-126, 2^126] (1 measured for the 10 divisors; the GPU computes
/// `a * rcp.approx(b)`, whose two errors can add to more than 1), `div.full` 2 ulp (the same).
/// For f64 approximations (`rcp.approx.ftz.f64`) nothing was measured and PTX documents no
/// bound: the result is reported as unbounded (`ulp = u32::MAX`).
pub fn bound(op: &Op) -> Option<ErrorBound> {
    let (ty, b) = match op {
        Op::Unary(u, ty, f) => {
            let b = match u {
                UnOp::Ex2 => ErrorBound::ulp(2),
                UnOp::Lg2 => ErrorBound { abs: 2f64.powf(-22.0), abs_domain: Some((0.5, 2.0)), ..ErrorBound::ulp(2) },
                UnOp::Rsqrt => ErrorBound::ulp(2),
                UnOp::Sin | UnOp::Cos => {
                    let r = 100.0 * std::f64::consts::PI;
                    ErrorBound { ulp: 0, abs: SIN_COS_ABS, rel: 0.0, domain: (-r, r), abs_domain: Some((-r, r)) }
                }
                UnOp::Tanh => ErrorBound::ulp(134),
                UnOp::Rcp if f.mode.is_approx() => ErrorBound::ulp(1),
                UnOp::Sqrt if f.mode.is_approx() => ErrorBound::ulp(1),
                _ => return None,
            };
            (*ty, b)
        }
        Op::Bin(BinOp::Div, ty, f) if ty.is_float() => match f.mode {
            FloatMode::Approx => (*ty, ErrorBound { domain: (2f64.powi(-126), 2f64.powi(126)), ..ErrorBound::ulp(2) }),
            FloatMode::Full => (*ty, ErrorBound::ulp(2)),
            FloatMode::Exact(_) => return None,
        },
        _ => return None,
    };
    if ty == crate::types::ScalarType::F32 {
        Some(b)
    } else {
        Some(ErrorBound::ulp(u32::MAX))
    }
}

/// The size of one ulp at `y` in format `fmt` (the spacing of the format around `|y|`).
pub fn ulp_of(fmt: Fmt, y: f64) -> f64 {
    let (p, emin) = match fmt {
        Fmt::F16 => (11, -14),
        Fmt::BF16 => (8, -126),
        Fmt::F32 => (24, -126),
        Fmt::F64 => (53, -1022),
    };
    let e = if y == 0.0 { emin } else { (y.abs().log2().floor() as i32).max(emin) };
    2f64.powi(e - (p - 1))
}
