//! `cvt`: conversions between all numeric types (never `pred`).
//!
//! Guarantees (the defaults are part of the language, see docs/language.md "Conversions"):
//! - int → int: the source value (sign- or zero-extended per the SOURCE type) is truncated to the
//!   destination width, or clamped to the destination range with `.sat`.
//! - float → int: rounded to an integral value (default `rzi`; a non-integral rounding `rn/rz/rm/rp`
//!   is read as `rni/rzi/rmi/rpi`), then clamped to the destination range (always, as PTX);
//!   NaN gives 0.
//! - int → float: correctly rounded (default `rn`; `rz/rm/rp` honoured).
//! - float → float: widening is exact; narrowing (and f16 ↔ bf16) is correctly rounded (default
//!   `rn`). With an integral rounding the value is first rounded to an integral value (sign of
//!   zero kept), then converted to nearest. A NaN gives the destination's canonical NaN.
//! - `.sat` with a float destination clamps the result to `[+0.0, 1.0]` (NaN and `-0.0` → `+0.0`).
//! - `.ftz` flushes an f32 subnormal source and an f32 subnormal result to a zero of the same sign.

use super::float::{self, Class, Exact, Fmt, Mode};
use super::int;
use crate::op::Rounding;
use crate::types::ScalarType;

/// Rounds a float (classified) to an integral magnitude in the integral rounding `mode`.
/// Returns `(negative, magnitude)`; magnitudes beyond 2^80 are reported as 2^80 (beyond every
/// integer type, so the caller's saturation gives the same result).
fn round_integral(neg: bool, mant: u64, exp: i32, mode: Mode) -> (bool, u128) {
    const CAP: u128 = 1 << 80;
    if exp >= 0 {
        let mag = if exp >= 75 { CAP } else { ((mant as u128) << exp).min(CAP) };
        return (neg, mag);
    }
    let shift = (-exp) as u32;
    let (q, rem, half) = if shift >= 64 {
        // mant < 2^53 < 2^63: strictly below one half.
        (0u128, mant as u128, u128::MAX)
    } else {
        let m = mant as u128;
        (m >> shift, m & ((1u128 << shift) - 1), 1u128 << (shift - 1))
    };
    let inexact = rem != 0;
    let up = match mode {
        Mode::Rn => rem > half || (rem == half && q & 1 == 1),
        Mode::Rz => false,
        Mode::Rp => inexact && !neg,
        Mode::Rm => inexact && neg,
    };
    (neg, q + up as u128)
}

/// Evaluates `cvt` on raw bits.
#[inline]
pub fn cvt(to: ScalarType, from: ScalarType, rounding: Option<Rounding>, sat: bool, ftz: bool, a: u64) -> u64 {
    match (Fmt::of(to), Fmt::of(from)) {
        (None, None) => {
            if !to.is_int() || !from.is_int() {
                return 0;
            }
            let v = int::value(a, from.bits(), from.is_signed_int());
            int::from_i128(v, to.bits(), to.is_signed_int(), sat)
        }
        (None, Some(ff)) => {
            if !to.is_int() {
                return 0;
            }
            let a = if ftz && ff == Fmt::F32 { ff.flush(a) } else { a };
            let mode = Mode::of(rounding.unwrap_or(Rounding::Rzi));
            let (lo, hi) = int::range(to.bits(), to.is_signed_int());
            let v: i128 = match float::unpack(ff, a) {
                Class::Nan | Class::Zero(_) => 0,
                Class::Inf(neg) => {
                    if neg {
                        lo
                    } else {
                        hi
                    }
                }
                Class::Fin { neg, mant, exp } => {
                    let (neg, mag) = round_integral(neg, mant, exp, mode);
                    if neg {
                        -(mag as i128)
                    } else {
                        mag as i128
                    }
                }
            };
            int::from_i128(v, to.bits(), to.is_signed_int(), true)
        }
        (Some(tf), None) => {
            if !from.is_int() {
                return 0;
            }
            let v = int::value(a, from.bits(), from.is_signed_int());
            let mode = Mode::of(rounding.unwrap_or(Rounding::Rn));
            let r = if v == 0 {
                tf.zero(false)
            } else {
                float::round_exact(tf, mode, Exact { neg: v < 0, mant: v.unsigned_abs(), exp: 0, sticky: false })
            };
            finish(tf, sat, ftz, r)
        }
        (Some(tf), Some(ff)) => {
            let a = if ftz && ff == Fmt::F32 { ff.flush(a) } else { a };
            let r = match rounding {
                Some(r) if r.is_integral() => match float::unpack(ff, a) {
                    Class::Fin { neg, mant, exp } => {
                        let (neg, mag) = round_integral(neg, mant, exp, Mode::of(r));
                        if mag == 0 {
                            tf.zero(neg)
                        } else if exp >= 0 {
                            // Already integral: convert the exact value.
                            float::convert(ff, tf, Mode::Rn, a)
                        } else {
                            float::round_exact(tf, Mode::Rn, Exact { neg, mant: mag, exp: 0, sticky: false })
                        }
                    }
                    _ => float::convert(ff, tf, Mode::Rn, a),
                },
                r => float::convert(ff, tf, Mode::of(r.unwrap_or(Rounding::Rn)), a),
            };
            finish(tf, sat, ftz, r)
        }
    }
}

/// Applies `.sat` (clamp to [+0, 1], NaN → +0) and `.ftz` (f32 destination) to a float result.
#[inline]
fn finish(tf: Fmt, sat: bool, ftz: bool, r: u64) -> u64 {
    let r = if ftz && tf == Fmt::F32 { tf.flush(r) } else { r };
    if !sat {
        return r;
    }
    if tf.is_nan(r) || tf.is_neg(r) {
        tf.zero(false)
    } else if tf.to_f64(r) > 1.0 {
        tf.one()
    } else {
        r
    }
}
