//! `cvt`: conversions between all numeric types (never `pred`).
//!
//! Guarantees (the defaults are part of the language, see docs/language.md "Conversions"). Every
//! rule below is what an H100 computes for the PTX kir emits (tests/hardware/h100/ops,
//! `cvt_from_*.kir`; run ids cited as `cvt_u8_f64[52]`).
//!
//! - int → int: the source value (sign- or zero-extended per the SOURCE type) is truncated to the
//!   destination width, or clamped to the destination range with `.sat`.
//! - float → int: rounded to an integral value (default `rzi`; a non-integral rounding `rn/rz/rm/rp`
//!   is read as `rni/rzi/rmi/rpi`), then clamped to the destination range (always, as PTX).
//!   A NaN gives, with or without `.sat` and in every rounding ([`nan_to_int`]): `0x8000000000000000`
//!   for a 64-bit destination (`cvt_s64_f32`, `cvt_u64_f16`); the destination's sign bit
//!   (`0x80`, `0x8000`, `0x80000000`) from f64 to 8/16/32 bits, signed or unsigned
//!   (`cvt_u8_f64[52]` is 128); 0 from f16/bf16/f32 to 8/16/32 bits.
//! - int → float: correctly rounded (default `rn`; `rz/rm/rp` honoured), except that bf16 is
//!   reached through f32: the integer is rounded to f32, then to bf16, both in the op's rounding
//!   (one rounding for `rz/rm/rp`, which compose; two for `rn`: `cvt_bf16_s32[639]`).
//! - float → float: widening is exact; narrowing (and f16 ↔ bf16) is correctly rounded (default
//!   `rn`), except f64 → bf16, which rounds to f32 then to bf16 in the op's rounding
//!   (`cvt_bf16_f64[339]`). With an integral rounding the value is first rounded to an integral
//!   value (sign of zero kept), then converted to nearest.
//! - float → float NaN ([`nan_to_float`]): from f64, the payload is kept (truncated to the
//!   destination's fraction, from the top), with its sign and the quiet bit set, except to bf16,
//!   which gives the canonical `0x7fff`. To f64 from f32 (without `.ftz`) and from bf16 likewise
//!   (payload extended with zeros, quiet bit set); from f16, and from f32 with `.ftz`, it is
//!   `0x7fffffffe0000000` (the canonical f32 NaN widened). `cvt.f32.bf16` without `.ftz` keeps
//!   the bits exactly (`0x7f81` → `0x7f810000`, not quieted). Every other conversion to f16, bf16
//!   or f32 gives the canonical NaN (`0x7fff`, `0x7fffffff`); f64 → f64 gives the NaN quieted.
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
                Class::Nan => return nan_to_int(to, ff),
                Class::Zero(_) => 0,
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
                let x = Exact { neg: v < 0, mant: v.unsigned_abs(), exp: 0, sticky: false };
                if tf == Fmt::BF16 {
                    // Through f32 (two roundings in the op's direction).
                    float::convert(Fmt::F32, tf, mode, float::round_exact(Fmt::F32, mode, x))
                } else {
                    float::round_exact(tf, mode, x)
                }
            };
            finish(tf, sat, ftz, r)
        }
        (Some(tf), Some(ff)) => {
            let a = if ftz && ff == Fmt::F32 { ff.flush(a) } else { a };
            if ff.is_nan(a) {
                return finish(tf, sat, ftz, nan_to_float(tf, ff, ftz, a));
            }
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
                r => {
                    let mode = Mode::of(r.unwrap_or(Rounding::Rn));
                    if ff == Fmt::F64 && tf == Fmt::BF16 {
                        // Through f32 (two roundings in the op's direction).
                        float::convert(Fmt::F32, tf, mode, float::convert(ff, Fmt::F32, mode, a))
                    } else {
                        float::convert(ff, tf, mode, a)
                    }
                }
            };
            finish(tf, sat, ftz, r)
        }
    }
}

/// The integer a float → int `cvt` gives for a NaN (any rounding, with or without `.sat`):
/// `0x8000000000000000` to 64 bits; from f64, the destination's sign bit (`cvt_u8_f64[52]`: 128,
/// `cvt_s32_f64`: `0x80000000`); from f16, bf16, f32 to 8/16/32 bits, 0.
#[inline]
fn nan_to_int(to: ScalarType, from: Fmt) -> u64 {
    let w = to.bits();
    if w == 64 || from == Fmt::F64 {
        1 << (w - 1)
    } else {
        0
    }
}

/// Moves a NaN's payload from `from` to `to` (left-aligned: truncated or extended with zeros at
/// the bottom), keeping the sign, with the quiet bit set.
#[inline]
fn move_payload(from: Fmt, to: Fmt, a: u64) -> u64 {
    let pay = a & (from.quiet_bit() * 2 - 1);
    let pay =
        if to.frac() >= from.frac() { pay << (to.frac() - from.frac()) } else { pay >> (from.frac() - to.frac()) };
    let sign = if from.is_neg(a) { to.sign_bit() } else { 0 };
    sign | to.inf(false) | pay | to.quiet_bit()
}

/// The NaN a float → float `cvt` (without `.sat`) gives for a NaN `a` (see the header).
#[inline]
fn nan_to_float(to: Fmt, from: Fmt, ftz: bool, a: u64) -> u64 {
    match (to, from) {
        (Fmt::F64, Fmt::F64 | Fmt::BF16) => move_payload(from, to, a),
        (Fmt::F64, Fmt::F32) if !ftz => move_payload(from, to, a),
        // The canonical f32 NaN, widened: 0x7fffffffe0000000.
        (Fmt::F64, _) => move_payload(Fmt::F32, Fmt::F64, Fmt::F32.canonical_nan()),
        (Fmt::F32, Fmt::BF16) if !ftz => a << 16,
        (Fmt::F32 | Fmt::F16, Fmt::F64) => move_payload(from, to, a),
        _ => to.canonical_nan(),
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
