//! IEEE 754 binary float arithmetic on raw bits for f16, bf16, f32 and f64, in every rounding mode.
//!
//! Guarantees:
//! - [`add`], [`sub`], [`mul`], [`fma`], [`div`], [`sqrt`], [`rcp`] and [`convert`] return the
//!   correctly rounded result of the exact operation in the requested [`Mode`] (ties-to-even for
//!   `Rn`), including subnormal results, overflow (to infinity or the largest finite value, per
//!   mode) and the sign of exact zeros (`x + (-x)` is `+0`, or `-0` under `Rm`).
//! - The exact path is integer arithmetic on the significands ([`round_exact`] is the only place a
//!   value is rounded); round-to-nearest f32/f64 take the host's IEEE operations as a fast path,
//!   and f16/bf16 round-to-nearest go through one f32 operation plus one rounding, which is exact
//!   for `+ - * / sqrt` because 24 >= 2p + 2 for p = 11 and p = 8. The tests check the fast paths
//!   against the exact path.
//! - NaN results are the H100's (measured: tests/hardware/h100/ops, see docs/language.md
//!   "Semantics"). f16, bf16 and f32: every NaN result is the format's canonical NaN
//!   ([`Fmt::canonical_nan`]: `0x7fff`, `0x7fffffff`), whatever the operands' payloads. f64: a NaN
//!   operand is returned quieted (quiet bit set, sign and payload kept), the first NaN in the op's
//!   order — `add`/`sub`/`mul`: `b` then `a`; `div`: `a` then `b`; `fma`: `b`, `c`, then `a`
//!   ; `sub` returns a NaN `b` without negating it — and an invalid operation
//!   without a NaN operand (`0 * inf`, `inf - inf`, `0 / 0`, `inf / inf`, `sqrt` of a negative
//!   number) gives the default NaN `0xfff8000000000000` ([`Fmt::default_nan`]). `min`/`max`
//!   return the other operand when one is NaN; two NaNs give the canonical NaN (f16, bf16, f32)
//!   or `b` quieted (f64).
//! - `ftz` (f32 only) flushes subnormal inputs and results to a zero of the same sign, applied
//!   by [`add`], [`sub`], [`mul`], [`fma`], [`div`], [`sqrt`] and [`rcp`] when asked (the `soft_*`
//!   functions never flush). A result is flushed when the exact result is below the smallest
//!   normal in magnitude, before rounding: `mul`/`div`/`fma`/`rcp` flush a value that would round
//!   up to `±2^-126` (measured for `mul` and `div`, e.g. `mul_ftz_f32[698]`).
//! - [`convert`] (used by the approximate ops) turns a NaN into the canonical NaN of the
//!   destination; `cvt`'s own NaN rules are in module `cvt`.

use std::cmp::Ordering;

use crate::op::Rounding;
use crate::types::ScalarType;

/// A binary float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fmt {
    F16,
    BF16,
    F32,
    F64,
}

/// A non-integral IEEE rounding direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// To nearest, ties to even.
    Rn,
    /// Toward zero.
    Rz,
    /// Toward minus infinity.
    Rm,
    /// Toward plus infinity.
    Rp,
}

impl Mode {
    /// The direction of a rounding modifier; the integral roundings map to their direction
    /// (`rni` → `Rn`, `rzi` → `Rz`, `rmi` → `Rm`, `rpi` → `Rp`).
    pub fn of(r: Rounding) -> Mode {
        match r {
            Rounding::Rn | Rounding::Rni => Mode::Rn,
            Rounding::Rz | Rounding::Rzi => Mode::Rz,
            Rounding::Rm | Rounding::Rmi => Mode::Rm,
            Rounding::Rp | Rounding::Rpi => Mode::Rp,
        }
    }
}

impl Fmt {
    pub fn of(ty: ScalarType) -> Option<Fmt> {
        Some(match ty {
            ScalarType::F16 => Fmt::F16,
            ScalarType::BF16 => Fmt::BF16,
            ScalarType::F32 => Fmt::F32,
            ScalarType::F64 => Fmt::F64,
            _ => return None,
        })
    }
    /// Explicit fraction bits.
    #[inline(always)]
    pub const fn frac(self) -> u32 {
        match self {
            Fmt::F16 => 10,
            Fmt::BF16 => 7,
            Fmt::F32 => 23,
            Fmt::F64 => 52,
        }
    }
    #[inline(always)]
    pub const fn ebits(self) -> u32 {
        match self {
            Fmt::F16 => 5,
            Fmt::BF16 | Fmt::F32 => 8,
            Fmt::F64 => 11,
        }
    }
    #[inline(always)]
    const fn bias(self) -> i32 {
        (1 << (self.ebits() - 1)) - 1
    }
    #[inline(always)]
    pub const fn sign_bit(self) -> u64 {
        1 << (self.frac() + self.ebits())
    }
    #[inline(always)]
    const fn exp_all_ones(self) -> u64 {
        (1 << self.ebits()) - 1
    }
    #[inline(always)]
    const fn frac_mask(self) -> u64 {
        (1 << self.frac()) - 1
    }
    /// The canonical NaN: `0x7fff` (f16, bf16), `0x7fffffff` (f32), `0x7fffffffffffffff` (f64):
    /// the NaN every f16/bf16/f32 NaN result is (and the literal `nan`).
    #[inline(always)]
    pub const fn canonical_nan(self) -> u64 {
        self.sign_bit() - 1
    }
    /// The NaN an invalid operation without NaN operands gives (`0 * inf`, `inf - inf`, `0 / 0`,
    /// `sqrt(-1)`): the canonical NaN for f16, bf16 and f32, `0xfff8000000000000` (negative,
    /// quiet, payload 0) for f64, as the H100 computes (`mul_f64[50]`, `div_f64[0]`).
    #[inline(always)]
    pub const fn default_nan(self) -> u64 {
        match self {
            Fmt::F64 => 0xfff8_0000_0000_0000,
            _ => self.canonical_nan(),
        }
    }
    /// The quiet bit (the fraction's top bit).
    #[inline(always)]
    pub const fn quiet_bit(self) -> u64 {
        1 << (self.frac() - 1)
    }
    #[inline(always)]
    pub const fn inf(self, neg: bool) -> u64 {
        (self.exp_all_ones() << self.frac()) | if neg { self.sign_bit() } else { 0 }
    }
    #[inline(always)]
    pub const fn zero(self, neg: bool) -> u64 {
        if neg {
            self.sign_bit()
        } else {
            0
        }
    }
    #[inline(always)]
    const fn max_finite(self, neg: bool) -> u64 {
        self.inf(neg) - 1
    }
    /// `1.0` in this format.
    pub const fn one(self) -> u64 {
        (self.bias() as u64) << self.frac()
    }
    #[inline(always)]
    pub const fn is_nan(self, bits: u64) -> bool {
        bits & (self.sign_bit() - 1) > self.inf(false)
    }
    #[inline(always)]
    pub const fn is_neg(self, bits: u64) -> bool {
        bits & self.sign_bit() != 0
    }
    #[inline(always)]
    pub const fn is_subnormal(self, bits: u64) -> bool {
        bits & (self.exp_all_ones() << self.frac()) == 0 && bits & self.frac_mask() != 0
    }
    /// Flushes a subnormal to the zero of the same sign; other values unchanged.
    #[inline(always)]
    pub const fn flush(self, bits: u64) -> u64 {
        if self.is_subnormal(bits) {
            bits & self.sign_bit()
        } else {
            bits
        }
    }
    /// Replaces any NaN by the canonical NaN.
    #[inline(always)]
    pub const fn canon(self, bits: u64) -> u64 {
        if self.is_nan(bits) {
            self.canonical_nan()
        } else {
            bits
        }
    }
    /// The NaN result of an op whose operands, in the op's priority order, are `ops`, given
    /// that the result is NaN: f16/bf16/f32 give the canonical NaN; f64 gives the
    /// first NaN operand quieted, or the default NaN when no operand is NaN (an invalid
    /// operation).
    #[inline]
    pub fn nan_result(self, ops: &[u64]) -> u64 {
        if self != Fmt::F64 {
            return self.canonical_nan();
        }
        for &x in ops {
            if self.is_nan(x) {
                return x | self.quiet_bit();
            }
        }
        self.default_nan()
    }
    /// The exact value as f64 (every format here widens exactly to f64).
    #[inline(always)]
    pub fn to_f64(self, bits: u64) -> f64 {
        match self {
            Fmt::F16 => half::f16::from_bits(bits as u16).to_f64(),
            Fmt::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
            Fmt::F32 => f32::from_bits(bits as u32) as f64,
            Fmt::F64 => f64::from_bits(bits),
        }
    }
}

/// A value classified for the exact path. `Fin` is `(-1)^neg * mant * 2^exp`, `mant != 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Nan,
    Inf(bool),
    Zero(bool),
    Fin { neg: bool, mant: u64, exp: i32 },
}

#[inline]
pub fn unpack(fmt: Fmt, bits: u64) -> Class {
    let neg = fmt.is_neg(bits);
    let e = (bits >> fmt.frac()) & fmt.exp_all_ones();
    let f = bits & fmt.frac_mask();
    let lsb_exp = |biased: i32| biased - fmt.bias() - fmt.frac() as i32;
    if e == fmt.exp_all_ones() {
        if f == 0 {
            Class::Inf(neg)
        } else {
            Class::Nan
        }
    } else if e == 0 {
        if f == 0 {
            Class::Zero(neg)
        } else {
            Class::Fin { neg, mant: f, exp: lsb_exp(1) }
        }
    } else {
        Class::Fin { neg, mant: f | (1 << fmt.frac()), exp: lsb_exp(e as i32) }
    }
}

/// An exact nonzero value `(-1)^neg * (mant + d) * 2^exp` with `d = 0` when `!sticky` and
/// `0 < d < 1` when `sticky`. Producers set `sticky` only when `mant >= 2^119`, so the unknown
/// part lies far below the rounding position of every format.
#[derive(Clone, Copy, Debug)]
pub struct Exact {
    pub neg: bool,
    pub mant: u128,
    pub exp: i32,
    pub sticky: bool,
}

#[inline]
fn overflow(fmt: Fmt, mode: Mode, neg: bool) -> u64 {
    let to_inf = match mode {
        Mode::Rn => true,
        Mode::Rz => false,
        Mode::Rp => !neg,
        Mode::Rm => neg,
    };
    if to_inf {
        fmt.inf(neg)
    } else {
        fmt.max_finite(neg)
    }
}

/// Rounds an exact value to `fmt` in `mode`: the one rounding step of the exact path.
pub fn round_exact(fmt: Fmt, mode: Mode, x: Exact) -> u64 {
    let Exact { neg, mant, exp, sticky } = x;
    if mant == 0 {
        return fmt.zero(neg);
    }
    debug_assert!(!sticky || mant >= 1 << 119);
    let frac = fmt.frac() as i32;
    let msb = 127 - mant.leading_zeros() as i32;
    let e_top = msb + exp; // value in [2^e_top, 2^(e_top+1))
    if e_top > fmt.bias() {
        return overflow(fmt, mode, neg);
    }
    let emin = 1 - fmt.bias();
    let mut q = e_top.max(emin) - frac; // exponent of the result's last place
    let shift = q - exp;
    let (mut m, half, inexact): (u128, Ordering, bool) = if shift <= 0 {
        (mant << (-shift) as u32, Ordering::Less, sticky)
    } else if shift >= 128 {
        let half = if shift == 128 { mant.cmp(&(1u128 << 127)).then(sticky_ord(sticky)) } else { Ordering::Less };
        (0, half, true)
    } else {
        let rem = mant & ((1u128 << shift) - 1);
        let half = rem.cmp(&(1u128 << (shift - 1))).then(sticky_ord(sticky));
        (mant >> shift, half, rem != 0 || sticky)
    };
    let up = match mode {
        Mode::Rn => half == Ordering::Greater || (half == Ordering::Equal && m & 1 == 1),
        Mode::Rz => false,
        Mode::Rp => inexact && !neg,
        Mode::Rm => inexact && neg,
    };
    if up {
        m += 1;
        if m >> (frac + 1) != 0 {
            m >>= 1;
            q += 1;
        }
    }
    let sign = fmt.zero(neg);
    if m >> frac != 0 {
        let biased = q + frac + fmt.bias();
        if biased as u64 >= fmt.exp_all_ones() {
            return overflow(fmt, mode, neg);
        }
        sign | (biased as u64) << frac | (m as u64 & fmt.frac_mask())
    } else {
        sign | m as u64
    }
}

#[inline(always)]
fn sticky_ord(sticky: bool) -> Ordering {
    if sticky {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// Shifts `m` so its top bit is bit 125, adjusting the exponent (value unchanged).
#[inline]
fn norm125(m: u128, e: i32) -> (u128, i32) {
    let s = m.leading_zeros() as i32 - 2;
    if s >= 0 {
        (m << s, e - s)
    } else {
        (m, e) // never: producers keep mantissas below 2^126
    }
}

/// The exact sum of two nonzero finite values; `None` when it is exactly zero.
fn add_exact(n1: bool, m1: u128, e1: i32, n2: bool, m2: u128, e2: i32) -> Option<Exact> {
    let (mut a, mut b) = (norm125(m1, e1), norm125(m2, e2));
    let (mut na, mut nb) = (n1, n2);
    if a.1 < b.1 {
        std::mem::swap(&mut a, &mut b);
        std::mem::swap(&mut na, &mut nb);
    }
    let d = (a.1 - b.1) as u32;
    let (bs, sticky) = if d >= 128 { (0, true) } else { (b.0 >> d, b.0 & ((1u128 << d) - 1) != 0) };
    let exp = a.1;
    Some(if na == nb {
        Exact { neg: na, mant: a.0 + bs, exp, sticky }
    } else {
        match a.0.cmp(&bs) {
            Ordering::Greater => Exact { neg: na, mant: a.0 - bs - sticky as u128, exp, sticky },
            Ordering::Equal => return None,
            Ordering::Less => Exact { neg: nb, mant: bs - a.0, exp, sticky: false },
        }
    })
}

/// The sign of an exact zero sum of two operands whose signs are `n1`, `n2`.
#[inline]
fn zero_sum_sign(n1: bool, n2: bool, mode: Mode) -> bool {
    if n1 == n2 {
        n1
    } else {
        mode == Mode::Rm
    }
}

/// The exact path of `add` (integer arithmetic, any mode; `add` uses the host for `Rn` f32/f64).
/// The `soft_*` functions are public so tests can check the fast paths against them.
pub fn soft_add(fmt: Fmt, mode: Mode, a: u64, b: u64) -> u64 {
    match (unpack(fmt, a), unpack(fmt, b)) {
        (Class::Nan, _) | (_, Class::Nan) => fmt.nan_result(&[b, a]),
        (Class::Inf(x), Class::Inf(y)) => {
            if x == y {
                fmt.inf(x)
            } else {
                fmt.default_nan()
            }
        }
        (Class::Inf(x), _) | (_, Class::Inf(x)) => fmt.inf(x),
        (Class::Zero(x), Class::Zero(y)) => fmt.zero(zero_sum_sign(x, y, mode)),
        (Class::Zero(_), _) => b,
        (_, Class::Zero(_)) => a,
        (Class::Fin { neg: n1, mant: m1, exp: e1 }, Class::Fin { neg: n2, mant: m2, exp: e2 }) => {
            match add_exact(n1, m1 as u128, e1, n2, m2 as u128, e2) {
                Some(x) => round_exact(fmt, mode, x),
                None => fmt.zero(mode == Mode::Rm),
            }
        }
    }
}

pub fn soft_mul(fmt: Fmt, mode: Mode, a: u64, b: u64) -> u64 {
    match (unpack(fmt, a), unpack(fmt, b)) {
        (Class::Nan, _) | (_, Class::Nan) => fmt.nan_result(&[b, a]),
        (Class::Inf(_), Class::Zero(_)) | (Class::Zero(_), Class::Inf(_)) => fmt.default_nan(),
        (Class::Inf(x), Class::Inf(y)) => fmt.inf(x != y),
        (Class::Inf(x), Class::Fin { neg: y, .. }) | (Class::Fin { neg: y, .. }, Class::Inf(x)) => fmt.inf(x != y),
        (Class::Zero(x), Class::Zero(y)) => fmt.zero(x != y),
        (Class::Zero(x), Class::Fin { neg: y, .. }) | (Class::Fin { neg: y, .. }, Class::Zero(x)) => fmt.zero(x != y),
        (Class::Fin { neg: n1, mant: m1, exp: e1 }, Class::Fin { neg: n2, mant: m2, exp: e2 }) => {
            round_exact(fmt, mode, Exact { neg: n1 != n2, mant: m1 as u128 * m2 as u128, exp: e1 + e2, sticky: false })
        }
    }
}

pub fn soft_fma(fmt: Fmt, mode: Mode, a: u64, b: u64, c: u64) -> u64 {
    let (ca, cb, cc) = (unpack(fmt, a), unpack(fmt, b), unpack(fmt, c));
    if ca == Class::Nan || cb == Class::Nan || cc == Class::Nan {
        return fmt.nan_result(&[b, c, a]);
    }
    // The product's class.
    enum P {
        Inf(bool),
        Zero(bool),
        Fin(bool, u128, i32),
    }
    let p = match (ca, cb) {
        (Class::Inf(_), Class::Zero(_)) | (Class::Zero(_), Class::Inf(_)) => return fmt.default_nan(),
        (Class::Inf(x), Class::Inf(y)) => P::Inf(x != y),
        (Class::Inf(x), Class::Fin { neg: y, .. }) | (Class::Fin { neg: y, .. }, Class::Inf(x)) => P::Inf(x != y),
        (Class::Zero(x), Class::Zero(y)) => P::Zero(x != y),
        (Class::Zero(x), Class::Fin { neg: y, .. }) | (Class::Fin { neg: y, .. }, Class::Zero(x)) => P::Zero(x != y),
        (Class::Fin { neg: n1, mant: m1, exp: e1 }, Class::Fin { neg: n2, mant: m2, exp: e2 }) => {
            P::Fin(n1 != n2, m1 as u128 * m2 as u128, e1 + e2)
        }
        _ => return fmt.nan_result(&[b, c, a]),
    };
    match (p, cc) {
        (P::Inf(x), Class::Inf(y)) => {
            if x == y {
                fmt.inf(x)
            } else {
                fmt.default_nan()
            }
        }
        (P::Inf(x), _) | (_, Class::Inf(x)) => fmt.inf(x),
        (P::Zero(x), Class::Zero(y)) => fmt.zero(zero_sum_sign(x, y, mode)),
        (P::Zero(_), _) => c,
        (P::Fin(n, m, e), Class::Zero(_)) => round_exact(fmt, mode, Exact { neg: n, mant: m, exp: e, sticky: false }),
        (P::Fin(n, m, e), Class::Fin { neg, mant, exp }) => match add_exact(n, m, e, neg, mant as u128, exp) {
            Some(x) => round_exact(fmt, mode, x),
            None => fmt.zero(mode == Mode::Rm),
        },
        (_, Class::Nan) => fmt.nan_result(&[b, c, a]),
    }
}

pub fn soft_div(fmt: Fmt, mode: Mode, a: u64, b: u64) -> u64 {
    match (unpack(fmt, a), unpack(fmt, b)) {
        (Class::Nan, _) | (_, Class::Nan) => fmt.nan_result(&[a, b]),
        (Class::Inf(_), Class::Inf(_)) | (Class::Zero(_), Class::Zero(_)) => fmt.default_nan(),
        (Class::Inf(x), Class::Zero(y)) => fmt.inf(x != y),
        (Class::Inf(x), Class::Fin { neg: y, .. }) => fmt.inf(x != y),
        (Class::Zero(x), Class::Inf(y)) | (Class::Fin { neg: x, .. }, Class::Inf(y)) => fmt.zero(x != y),
        (Class::Zero(x), Class::Fin { neg: y, .. }) => fmt.zero(x != y),
        (Class::Fin { neg: x, .. }, Class::Zero(y)) => fmt.inf(x != y),
        (Class::Fin { neg: n1, mant: m1, exp: e1 }, Class::Fin { neg: n2, mant: m2, exp: e2 }) => {
            // Normalize both to 64-bit significands with the top bit set, then divide with 64
            // extra quotient bits: the quotient has 64 or 65 bits, the remainder is the sticky.
            let (s1, s2) = (m1.leading_zeros(), m2.leading_zeros());
            let (n, d) = ((m1 << s1) as u128, (m2 << s2) as u128);
            let (q, r) = ((n << 64) / d, (n << 64) % d);
            let exp = e1 - s1 as i32 - (e2 - s2 as i32) - 64;
            // Keep the sticky invariant (mant >= 2^120) by shifting the quotient up.
            let q = q << 56;
            round_exact(fmt, mode, Exact { neg: n1 != n2, mant: q, exp: exp - 56, sticky: r != 0 })
        }
    }
}

/// Integer square root of a u128 (floor).
fn isqrt(n: u128) -> u128 {
    if n == 0 {
        return 0;
    }
    let mut r = (n as f64).sqrt() as u128;
    if r == 0 {
        r = 1;
    }
    r = (r + n / r) / 2;
    while r * r > n {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

pub fn soft_sqrt(fmt: Fmt, mode: Mode, a: u64) -> u64 {
    match unpack(fmt, a) {
        Class::Nan => fmt.nan_result(&[a]),
        Class::Zero(neg) => fmt.zero(neg),
        Class::Inf(false) => fmt.inf(false),
        Class::Inf(true) | Class::Fin { neg: true, .. } => fmt.default_nan(),
        Class::Fin { neg: false, mant, exp } => {
            // Top bit at 124 or 125 with an even exponent; the root then has 63 bits.
            let (mut m, mut e) = (mant as u128, exp);
            let s = m.leading_zeros() as i32 - 3;
            m <<= s;
            e -= s;
            if e & 1 != 0 {
                m <<= 1;
                e -= 1;
            }
            let r = isqrt(m);
            let sticky = r * r != m;
            let shift = 120 - (127 - r.leading_zeros() as i32);
            round_exact(fmt, mode, Exact { neg: false, mant: r << shift, exp: e / 2 - shift, sticky })
        }
    }
}

/// Rounds the exact value of `bits` (format `from`) to format `to`: widening is exact, narrowing
/// rounds in `mode`. NaN becomes the canonical NaN of `to`.
pub fn convert(from: Fmt, to: Fmt, mode: Mode, bits: u64) -> u64 {
    match unpack(from, bits) {
        Class::Nan => to.canonical_nan(),
        Class::Inf(n) => to.inf(n),
        Class::Zero(n) => to.zero(n),
        Class::Fin { neg, mant, exp } => round_exact(to, mode, Exact { neg, mant: mant as u128, exp, sticky: false }),
    }
}

/// Rounds an f32 result (bits) of an f16/bf16 computation done in f32 to its format, to nearest.
#[inline]
fn narrow_rn(fmt: Fmt, r: f32) -> u64 {
    convert(Fmt::F32, fmt, Mode::Rn, r.to_bits() as u64)
}

#[inline(always)]
fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
#[inline(always)]
fn f64v(x: u64) -> f64 {
    f64::from_bits(x)
}
#[inline(always)]
fn b32(x: f32) -> u64 {
    Fmt::F32.canon(x.to_bits() as u64)
}
/// An f64 result of the host: its bits, or when it is NaN the NaN the GPU gives for operands
/// `ops` (in the op's priority order).
#[inline(always)]
fn b64(x: f64, ops: &[u64]) -> u64 {
    if x.is_nan() {
        Fmt::F64.nan_result(ops)
    } else {
        x.to_bits()
    }
}

/// Applies `ftz` around an op: flushes inputs before and the result after (f32 only, as PTX).
#[inline(always)]
fn ftz_in(fmt: Fmt, ftz: bool, x: u64) -> u64 {
    if ftz && fmt == Fmt::F32 {
        Fmt::F32.flush(x)
    } else {
        x
    }
}

/// Flushes an f32 `.ftz` result `r` (rounded in `mode`) whose exact value is below the smallest
/// normal in magnitude: a subnormal `r`, and also `r = ±2^-126` when the exact value was below it
/// and rounded up. `exact_rz` computes the same op rounded toward zero, which is below `2^-126`
/// exactly when the exact value is; it runs only in that rare case.
#[inline(always)]
fn ftz_out(fmt: Fmt, ftz: bool, mode: Mode, r: u64, exact_rz: impl FnOnce() -> u64) -> u64 {
    if !(ftz && fmt == Fmt::F32) {
        return r;
    }
    const MIN_NORMAL: u64 = 0x0080_0000;
    if r & 0x7fff_ffff == MIN_NORMAL && mode != Mode::Rz && exact_rz() & 0x7fff_ffff < MIN_NORMAL {
        return r & Fmt::F32.sign_bit();
    }
    Fmt::F32.flush(r)
}

#[inline(always)]
pub fn add(fmt: Fmt, mode: Mode, ftz: bool, a: u64, b: u64) -> u64 {
    let (a, b) = (ftz_in(fmt, ftz, a), ftz_in(fmt, ftz, b));
    let r = match (fmt, mode) {
        (Fmt::F32, Mode::Rn) => b32(f32v(a) + f32v(b)),
        (Fmt::F64, Mode::Rn) => b64(f64v(a) + f64v(b), &[b, a]),
        (Fmt::F16 | Fmt::BF16, Mode::Rn) => narrow_rn(fmt, fmt.to_f64(a) as f32 + fmt.to_f64(b) as f32),
        _ => soft_add(fmt, mode, a, b),
    };
    ftz_in(fmt, ftz, r)
}

#[inline(always)]
pub fn sub(fmt: Fmt, mode: Mode, ftz: bool, a: u64, b: u64) -> u64 {
    let b = ftz_in(fmt, ftz, b);
    // Negating b is exact; a NaN b is not negated (the GPU returns it with its own sign).
    let nb = if fmt.is_nan(b) { b } else { b ^ fmt.sign_bit() };
    add(fmt, mode, ftz, a, nb)
}

#[inline(always)]
pub fn mul(fmt: Fmt, mode: Mode, ftz: bool, a: u64, b: u64) -> u64 {
    let (a, b) = (ftz_in(fmt, ftz, a), ftz_in(fmt, ftz, b));
    let r = match (fmt, mode) {
        (Fmt::F32, Mode::Rn) => b32(f32v(a) * f32v(b)),
        (Fmt::F64, Mode::Rn) => b64(f64v(a) * f64v(b), &[b, a]),
        (Fmt::F16 | Fmt::BF16, Mode::Rn) => narrow_rn(fmt, fmt.to_f64(a) as f32 * fmt.to_f64(b) as f32),
        _ => soft_mul(fmt, mode, a, b),
    };
    ftz_out(fmt, ftz, mode, r, || soft_mul(fmt, Mode::Rz, a, b))
}

#[inline(always)]
pub fn fma(fmt: Fmt, mode: Mode, ftz: bool, a: u64, b: u64, c: u64) -> u64 {
    let (a, b, c) = (ftz_in(fmt, ftz, a), ftz_in(fmt, ftz, b), ftz_in(fmt, ftz, c));
    let r = match (fmt, mode) {
        (Fmt::F32, Mode::Rn) => b32(f32v(a).mul_add(f32v(b), f32v(c))),
        (Fmt::F64, Mode::Rn) => b64(f64v(a).mul_add(f64v(b), f64v(c)), &[b, c, a]),
        _ => soft_fma(fmt, mode, a, b, c),
    };
    ftz_out(fmt, ftz, mode, r, || soft_fma(fmt, Mode::Rz, a, b, c))
}

#[inline(always)]
pub fn div(fmt: Fmt, mode: Mode, ftz: bool, a: u64, b: u64) -> u64 {
    let (a, b) = (ftz_in(fmt, ftz, a), ftz_in(fmt, ftz, b));
    let r = match (fmt, mode) {
        (Fmt::F32, Mode::Rn) => b32(f32v(a) / f32v(b)),
        (Fmt::F64, Mode::Rn) => b64(f64v(a) / f64v(b), &[a, b]),
        (Fmt::F16 | Fmt::BF16, Mode::Rn) => narrow_rn(fmt, fmt.to_f64(a) as f32 / fmt.to_f64(b) as f32),
        _ => soft_div(fmt, mode, a, b),
    };
    ftz_out(fmt, ftz, mode, r, || soft_div(fmt, Mode::Rz, a, b))
}

#[inline(always)]
pub fn sqrt(fmt: Fmt, mode: Mode, ftz: bool, a: u64) -> u64 {
    let a = ftz_in(fmt, ftz, a);
    let r = match (fmt, mode) {
        (Fmt::F32, Mode::Rn) => b32(f32v(a).sqrt()),
        (Fmt::F64, Mode::Rn) => b64(f64v(a).sqrt(), &[a]),
        (Fmt::F16 | Fmt::BF16, Mode::Rn) => narrow_rn(fmt, (fmt.to_f64(a) as f32).sqrt()),
        _ => soft_sqrt(fmt, mode, a),
    };
    ftz_in(fmt, ftz, r)
}

#[inline(always)]
pub fn rcp(fmt: Fmt, mode: Mode, ftz: bool, a: u64) -> u64 {
    div(fmt, mode, ftz, fmt.one(), a)
}

/// `min`: a NaN operand is ignored (both NaN → canonical NaN, f64: `b` quieted); `-0.0 < +0.0`.
#[inline(always)]
pub fn min(fmt: Fmt, ftz: bool, a: u64, b: u64) -> u64 {
    minmax(fmt, ftz, a, b, true)
}

/// `max`: a NaN operand is ignored (both NaN → canonical NaN, f64: `b` quieted); `-0.0 < +0.0`.
#[inline(always)]
pub fn max(fmt: Fmt, ftz: bool, a: u64, b: u64) -> u64 {
    minmax(fmt, ftz, a, b, false)
}

#[inline(always)]
fn minmax(fmt: Fmt, ftz: bool, a: u64, b: u64, want_min: bool) -> u64 {
    let (a, b) = (ftz_in(fmt, ftz, a), ftz_in(fmt, ftz, b));
    match (fmt.is_nan(a), fmt.is_nan(b)) {
        (true, true) => return fmt.nan_result(&[b, a]),
        (true, false) => return b,
        (false, true) => return a,
        _ => {}
    }
    let (x, y) = (fmt.to_f64(a), fmt.to_f64(b));
    let a_less = if x == y { fmt.is_neg(a) && !fmt.is_neg(b) } else { x < y };
    if a_less == want_min {
        a
    } else {
        b
    }
}
