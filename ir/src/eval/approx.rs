//! The approximate ops (`ex2 lg2 rsqrt sin cos tanh`, and the `.approx`/`.full` forms of
//! `div sqrt rcp`) and the GPU's documented error bounds for them.
//!
//! Guarantees:
//! - kir defines each approximate op as the mathematical function of its (exactly widened) input,
//!   computed with the host's f64 math library and rounded once to nearest in the op's type. For
//!   f32 this is the correctly rounded result except in rare cases where the f64 result lies
//!   within an f64 ulp of an f32 rounding boundary. The `.approx`/`.full` forms of `div sqrt rcp`
//!   are the correctly rounded (`rn`) result.
//! - Special values follow IEEE: `ex2(-inf) = +0`, `ex2(+inf) = +inf`, `lg2(±0) = -inf`,
//!   `lg2(x < 0) = NaN`, `lg2(+inf) = +inf`, `rsqrt(+0) = +inf`, `rsqrt(-0) = -inf`,
//!   `rsqrt(x < 0) = NaN`, `rsqrt(+inf) = +0`, `sin/cos(±inf) = NaN`, `tanh(±inf) = ±1`; NaN in,
//!   canonical NaN out.
//! - [`bound`] gives the GPU's maximum error for each approximate op as the PTX ISA documents it,
//!   and [`within_bound`] checks a GPU result against kir's result with that bound.

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
    let y = apply(f, fmt.to_f64(a));
    let r = float::convert(Fmt::F64, fmt, Mode::Rn, y.to_bits());
    if ftz {
        fmt.flush(r)
    } else {
        r
    }
}

/// The GPU's documented maximum error for an approximate op, relative to the exact result.
/// A GPU result `g` for exact result `y` is within the bound when
/// `|g - y| <= max(ulp * ulp(y), abs, rel * |y|)` for inputs in `domain` (outside it the PTX ISA
/// gives no bound).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorBound {
    /// Error in units in the last place of the exact result.
    pub ulp: u32,
    /// Absolute error.
    pub abs: f64,
    /// Relative error.
    pub rel: f64,
    /// The input range `[lo, hi]` over which the bound is documented.
    pub domain: (f64, f64),
    /// Where, inside `domain`, the absolute bound applies instead of the ulp/relative one
    /// (`lg2`: the absolute bound holds for x in [0.5, 2]).
    pub abs_domain: Option<(f64, f64)>,
}

const ALL: (f64, f64) = (f64::NEG_INFINITY, f64::INFINITY);

impl ErrorBound {
    const fn ulp(n: u32) -> ErrorBound {
        ErrorBound { ulp: n, abs: 0.0, rel: 0.0, domain: ALL, abs_domain: None }
    }
}

/// The documented bound of an approximate op; `None` for ops kir evaluates exactly. Figures are
/// those of the PTX ISA (f32): `ex2.approx` 2 ulp; `lg2.approx` 2 ulp, absolute 2^-22 for x in
/// [0.5, 2]; `rsqrt.approx` relative 2^-22.9 (3 ulp); `sin/cos.approx` absolute 2^-20.9 in
/// [-100π, 100π]; `tanh.approx` relative 2^-11; `rcp.approx` 1 ulp; `sqrt.approx` relative 2^-23
/// (2 ulp); `div.approx` 2 ulp for divisors in [2^-126, 2^126]; `div.full` 2 ulp. For f64
/// approximations (`rcp.approx.ftz.f64`) PTX documents no bound: the result is reported as
/// unbounded (`ulp = u32::MAX`).
pub fn bound(op: &Op) -> Option<ErrorBound> {
    let (ty, b) = match op {
        Op::Unary(u, ty, f) => {
            let b = match u {
                UnOp::Ex2 => ErrorBound::ulp(2),
                UnOp::Lg2 => ErrorBound { abs: 2f64.powf(-22.0), abs_domain: Some((0.5, 2.0)), ..ErrorBound::ulp(2) },
                UnOp::Rsqrt => ErrorBound { rel: 2f64.powf(-22.9), ..ErrorBound::ulp(3) },
                UnOp::Sin | UnOp::Cos => {
                    let r = 100.0 * std::f64::consts::PI;
                    ErrorBound { ulp: 0, abs: 2f64.powf(-20.9), rel: 0.0, domain: (-r, r), abs_domain: Some((-r, r)) }
                }
                UnOp::Tanh => ErrorBound { rel: 2f64.powf(-11.0), ..ErrorBound::ulp(8192) },
                UnOp::Rcp if f.mode.is_approx() => ErrorBound::ulp(1),
                UnOp::Sqrt if f.mode.is_approx() => ErrorBound { rel: 2f64.powf(-23.0), ..ErrorBound::ulp(2) },
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
