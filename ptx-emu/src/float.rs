//! Floating-point semantics of PTX instructions, for f16, bf16, f32 and f64 held as raw bits.
//!
//! Exact instructions (`add sub mul fma div sqrt rcp` with `.rn .rz .rm .rp`, `cvt`) return the
//! IEEE 754 result of the exact operation rounded once in the written direction: round-to-nearest
//! f32/f64 arithmetic uses the host's IEEE hardware, which is exactly that; directed roundings and
//! every conversion go through `rustc_apfloat` (a port of LLVM's APFloat), so no result is ever
//! rounded twice. f16/bf16 arithmetic (`.rn` only in PTX) is computed in f64 and rounded once to
//! the 16-bit format: exact, because 53 >= 2p + 2 for p = 11 and 8.
//!
//! PTX rules applied here (ISA "Floating-Point Instructions"): `.ftz` (f32 only) flushes subnormal
//! inputs and results to zero of the same sign; `.sat` clamps the result to [0.0, 1.0] with NaN
//! giving +0.0; `neg`/`abs` only touch the sign bit (NaNs included); `min`/`max` ignore a NaN
//! operand and order -0.0 below +0.0.
//!
//! What the ISA leaves open was measured on an NVIDIA H100 (sm_90, PTX JIT-compiled by driver
//! 580; the recordings are under `tests/hardware/h100/`, `ops/` and `collectives/`; run ids such as
//! `add_f64[52]` name a kernel and an element of them):
//! - **NaN results of f16, bf16 and f32 arithmetic** (`add sub mul div fma sqrt rcp`, `min`/`max`
//!   of two NaNs, every rounding, with or without `.ftz`) are the canonical NaN `0x7fff` /
//!   `0x7fffffff`, whatever the operands' payloads or signs.
//! - **f64 arithmetic passes an operand's NaN through, quieted** (bit 51 set, sign and payload
//!   kept), choosing among NaN operands in a fixed order: `add`/`sub`/`mul`: b, then a
//!   (`add_f64[3589]`: `0x7ff8000000000000 + 0xfff8000000000000` = `0xfff8000000000000`; `sub`
//!   does not flip the sign of b's NaN); `div`: a, then b; `fma a, b, c`: b, then c, then a
//!   (`fma_f64[3342]`: `fma(0x7ff8000000000000, 0, 0xfff0000000000001)` = `0xfff8000000000001`);
//!   `sqrt`, `rcp`: a; `min`/`max` of two NaNs: b. An invalid operation without NaN operands (0 *
//!   inf, inf - inf, 0/0, inf/inf, sqrt of a number below zero) gives the default NaN
//!   `0xfff8000000000000`, negative (`mul_f64[50]`, `div_f64[0]`, `sqrt_f64[3]`).
//! - **`.ftz` f32 results are flushed by their exact value**: a result whose exact value is below
//!   2^-126 in magnitude becomes a zero of its sign even when rounding takes it up to ±2^-126
//!   (`mul_ftz_f32[698]`: `2^-126 * 0.99999994` = `+0`; `mul_rm_ftz_f32[699]`, `div_rp_ftz_f32[696]`).
//! - **Float → float conversions** of NaN, per PTX instruction: `cvt.f64.f32` quiets and keeps
//!   sign and payload (`cvt_f64_f32`: `0x7fc00001` → `0x7ff8000020000000`); `cvt.f32.bf16` is the
//!   bit pattern shifted left 16, a signaling NaN stays signaling (`cvt_f32_bf16[32641]`: `0x7f81`
//!   → `0x7f810000`); `cvt.{rn,rz,rm,rp}.f32.f64` and `.f16.f64` quiet and keep the sign and the
//!   payload's top bits (`0x7ff0000000000001` → `0x7fc00000`, `0xfff8000000000000` → `0xfe00`);
//!   `cvt.f32.f16`, `cvt.ftz.f32.f32`, `cvt.rni.f32.f32` and every conversion to f16 or bf16 from
//!   f32, f16 or bf16 give the canonical NaN; `cvt.rni.f64.f64` quiets and keeps the rest. Not
//!   measured (kir emits them as two steps through f32) and modelled as those two steps:
//!   `cvt.f64.f16`, `cvt.f64.bf16`; not measured and canonical: `cvt.bf16.f64`, `cvt.f16.bf16`
//!   and the like, `cvt.rni` on f16/bf16.
//! - **Float → integer conversions** saturate; NaN gives `1 << (width - 1)` from f64 at every
//!   width (`cvt_u8_f64[52]`: 128, `cvt_s32_f64`: `0x80000000`), and from f32, f16 and bf16 gives
//!   `0x8000000000000000` for 64-bit destinations and 0 for narrower ones (`cvt_s64_f32[52]`,
//!   `cvt_u64_f16[3976]`).
//!
//! Approximate instructions: the PTX ISA only bounds their error. The emulator computes what the
//! H100 was measured to compute where a model of its unit exists, else the correctly rounded value
//! (which is within the measured bound: `tests/hardware/h100/approx/mufu.json`, all 2^32 inputs):
//!
//! | instruction | the emulator computes | measured on the H100 (max over 2^32 inputs) |
//! |---|---|---|
//! | `ex2.approx.f32` | [`crate::mufu`]'s table model (98% of the GPU's bits on the measured binades) | 2 ulp |
//! | `lg2.approx.f32` | log2(x) in f64, rounded to f32 | abs 2^-22 on [0.5, 2], else 2 ulp |
//! | `rsqrt.approx.f32` | [`crate::mufu`]'s model (98-99%) | 2 ulp |
//! | `rsqrt.approx.f64` | 1/sqrt(x) in f64, rounded | not measured |
//! | `sin/cos.approx.f32` | sin/cos in f64, rounded to f32; sin is a signed zero for |x|/2pi < 2^-25 | abs 2^-14.7 on [-100pi, 100pi] |
//! | `tanh.approx.f32` | tanh in f64, rounded to f32 | 134 ulp |
//! | `rcp.approx.f32` | [`crate::mufu`]'s model (99%) | 1 ulp |
//! | `rcp.approx.ftz.f64` | 1/x rounded to nearest, subnormals flushed | not measured |
//! | `sqrt.approx.f32` | [`crate::mufu`]'s model (99.4-99.6%) | 1 ulp |
//! | `div.approx.f32` | a * rcp(b) (the model), rounded to nearest; 0 for |b| in (2^126, 2^128) | 1 ulp on 10 divisors |
//! | `div.full.f32` | `div.approx`'s result for |b| <= 2^126, a / b rounded to nearest above | 1 ulp on 10 divisors |
//!
//! Comparisons of emulator results use kir's derived tolerances (`harness/src/tolerance.rs`), not this
//! table.
//!
//! Special values follow the ISA tables (ex2(-inf) = +0, lg2(0) = -inf, lg2(x<0) = NaN,
//! rsqrt(0) = +inf, sin(inf) = NaN, ...), which the f64 library functions also give.

use rustc_apfloat::ieee::{BFloat, Double, Half, Single};
use rustc_apfloat::{Float, FloatConvert, Round};

/// A float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FTy {
    F16,
    BF16,
    F32,
    F64,
}

/// A rounding direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rnd {
    /// To nearest, ties to even.
    N,
    /// Toward zero.
    Z,
    /// Toward minus infinity.
    M,
    /// Toward plus infinity.
    P,
}

impl Rnd {
    fn ap(self) -> Round {
        match self {
            Rnd::N => Round::NearestTiesToEven,
            Rnd::Z => Round::TowardZero,
            Rnd::M => Round::TowardNegative,
            Rnd::P => Round::TowardPositive,
        }
    }
}

impl FTy {
    pub fn canonical_nan(self) -> u64 {
        match self {
            FTy::F16 | FTy::BF16 => 0x7fff,
            FTy::F32 => 0x7fff_ffff,
            FTy::F64 => 0x7fff_ffff_ffff_ffff,
        }
    }

    /// The NaN an H100 makes for an invalid operation: the canonical NaN for f16, bf16 and f32
    /// (which also replaces every NaN result of their arithmetic), `0xfff8000000000000` for f64.
    pub fn default_nan(self) -> u64 {
        match self {
            FTy::F64 => 0xfff8_0000_0000_0000,
            t => t.canonical_nan(),
        }
    }

    /// The number of fraction bits.
    pub fn frac_bits(self) -> u32 {
        match self {
            FTy::F16 => 10,
            FTy::BF16 => 7,
            FTy::F32 => 23,
            FTy::F64 => 52,
        }
    }

    /// The quiet bit (the top fraction bit).
    pub fn quiet_bit(self) -> u64 {
        1 << (self.frac_bits() - 1)
    }

    pub fn sign_bit(self) -> u64 {
        match self {
            FTy::F16 | FTy::BF16 => 0x8000,
            FTy::F32 => 0x8000_0000,
            FTy::F64 => 1 << 63,
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            FTy::F16 | FTy::BF16 => 16,
            FTy::F32 => 32,
            FTy::F64 => 64,
        }
    }

    /// The value as an f64 (exact for every format).
    pub fn to_f64(self, b: u64) -> f64 {
        match self {
            FTy::F16 => half::f16::from_bits(b as u16).to_f64(),
            FTy::BF16 => half::bf16::from_bits(b as u16).to_f64(),
            FTy::F32 => f32::from_bits(b as u32) as f64,
            FTy::F64 => f64::from_bits(b),
        }
    }

    pub fn is_nan(self, b: u64) -> bool {
        self.to_f64(b).is_nan()
    }

    /// An f64 rounded to this format in direction `r`, canonical NaN for NaN.
    pub fn from_f64(self, x: f64, r: Rnd) -> u64 {
        if x.is_nan() {
            return self.canonical_nan();
        }
        if self == FTy::F64 {
            return x.to_bits();
        }
        if r == Rnd::N {
            return match self {
                FTy::F16 => half::f16::from_f64(x).to_bits() as u64,
                FTy::BF16 => half::bf16::from_f64(x).to_bits() as u64,
                _ => (x as f32).to_bits() as u64,
            };
        }
        convert(FTy::F64, self, r, x.to_bits())
    }

    /// Whether `b` is subnormal.
    pub fn is_subnormal(self, b: u64) -> bool {
        let x = self.to_f64(b);
        x != 0.0
            && x.is_finite()
            && !match self {
                FTy::F16 => half::f16::from_bits(b as u16).is_normal(),
                FTy::BF16 => half::bf16::from_bits(b as u16).is_normal(),
                FTy::F32 => f32::from_bits(b as u32).is_normal(),
                FTy::F64 => f64::from_bits(b).is_normal(),
            }
    }
}

/// The NaN result of an arithmetic instruction whose exact result is NaN, given its operands in
/// the order the H100 picks among them (module header): f64 passes the first NaN operand through
/// with its quiet bit set, or makes the default NaN when no operand is NaN; f16, bf16 and f32
/// always give the canonical NaN.
pub fn nan_result(t: FTy, ops: &[u64]) -> u64 {
    if t == FTy::F64 {
        if let Some(&n) = ops.iter().find(|&&o| t.is_nan(o)) {
            return n | t.quiet_bit();
        }
        return t.default_nan();
    }
    t.canonical_nan()
}

/// `.ftz` on an f32 result `v` rounded in direction `r`, as an H100 does it: a result whose exact
/// value is below 2^-126 in magnitude becomes a zero of its sign, also when rounding carried it up
/// to ±2^-126 (`mul_ftz_f32[698]`). `toward_zero` recomputes the result rounded toward zero (only
/// called for a result of magnitude 2^-126, where the exact value may lie on either side).
pub fn ftz32_result(v: u32, r: Rnd, toward_zero: impl FnOnce() -> u32) -> u32 {
    if v & 0x7fff_ffff == 0x0080_0000 && r != Rnd::Z && toward_zero() & 0x7f80_0000 == 0 {
        return v & 0x8000_0000;
    }
    ftz32(v)
}

/// `.ftz` on an input or result: a subnormal becomes a zero of the same sign.
#[inline]
pub fn ftz32(b: u32) -> u32 {
    if b & 0x7f80_0000 == 0 {
        b & 0x8000_0000
    } else {
        b
    }
}

#[inline]
pub fn ftz64(b: u64) -> u64 {
    if b & 0x7ff0_0000_0000_0000 == 0 {
        b & (1 << 63)
    } else {
        b
    }
}

/// `.sat`: clamp to [0, 1], NaN → +0.
pub fn sat(t: FTy, b: u64) -> u64 {
    let x = t.to_f64(b);
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1.0 {
        t.from_f64(1.0, Rnd::N)
    } else {
        b
    }
}

/// Two-operand exact arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

macro_rules! ap_arith {
    ($T:ty, $op:expr, $r:expr, $a:expr, $b:expr) => {{
        let (a, b) = (<$T>::from_bits($a as u128), <$T>::from_bits($b as u128));
        let v = match $op {
            Arith::Add => a.add_r(b, $r).value,
            Arith::Sub => a.sub_r(b, $r).value,
            Arith::Mul => a.mul_r(b, $r).value,
            Arith::Div => a.div_r(b, $r).value,
        };
        if v.is_nan() {
            None
        } else {
            Some(v.to_bits() as u64)
        }
    }};
}

/// `op.rnd.T a, b` (no ftz/sat: callers apply them). A NaN result follows [`nan_result`]: f64
/// `div` picks a's NaN before b's, `add`/`sub`/`mul` b's before a's.
pub fn arith(t: FTy, op: Arith, r: Rnd, a: u64, b: u64) -> u64 {
    let out = match (t, r) {
        (FTy::F32, Rnd::N) => {
            let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
            let v = match op {
                Arith::Add => x + y,
                Arith::Sub => x - y,
                Arith::Mul => x * y,
                Arith::Div => x / y,
            };
            (!v.is_nan()).then_some(v.to_bits() as u64)
        }
        (FTy::F64, Rnd::N) => {
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            let v = match op {
                Arith::Add => x + y,
                Arith::Sub => x - y,
                Arith::Mul => x * y,
                Arith::Div => x / y,
            };
            (!v.is_nan()).then_some(v.to_bits())
        }
        (FTy::F32, r) => ap_arith!(Single, op, r.ap(), a, b),
        (FTy::F64, r) => ap_arith!(Double, op, r.ap(), a, b),
        (FTy::F16, r) => ap_arith!(Half, op, r.ap(), a, b),
        (FTy::BF16, r) => ap_arith!(BFloat, op, r.ap(), a, b),
    };
    out.unwrap_or_else(|| match op {
        Arith::Div => nan_result(t, &[a, b]),
        _ => nan_result(t, &[b, a]),
    })
}

/// `fma.rnd.T a, b, c`: a*b+c rounded once; a NaN result follows [`nan_result`] with the operands
/// in the order b, c, a (f64, measured: `fma_f64`).
pub fn fma(t: FTy, r: Rnd, a: u64, b: u64, c: u64) -> u64 {
    macro_rules! ap {
        ($T:ty) => {{
            let v = <$T>::from_bits(a as u128)
                .mul_add_r(<$T>::from_bits(b as u128), <$T>::from_bits(c as u128), r.ap())
                .value;
            if v.is_nan() {
                None
            } else {
                Some(v.to_bits() as u64)
            }
        }};
    }
    let out = match (t, r) {
        (FTy::F32, Rnd::N) => {
            let v = f32::from_bits(a as u32).mul_add(f32::from_bits(b as u32), f32::from_bits(c as u32));
            (!v.is_nan()).then_some(v.to_bits() as u64)
        }
        (FTy::F64, Rnd::N) => {
            let v = f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c));
            (!v.is_nan()).then_some(v.to_bits())
        }
        (FTy::F32, _) => ap!(Single),
        (FTy::F64, _) => ap!(Double),
        (FTy::F16, _) => ap!(Half),
        (FTy::BF16, _) => ap!(BFloat),
    };
    out.unwrap_or_else(|| nan_result(t, &[b, c, a]))
}

/// `sqrt.rnd.T a` for f32/f64: correctly rounded in every direction. The f64 square root rounded
/// to nearest is `s`; the exact root lies on the side of `s` given by the sign of `a - s*s`
/// (computed exactly with one fused multiply-add), which decides the directed results.
///
/// A NaN operand passes through quieted (f64) or gives the canonical NaN; a negative one gives
/// the default NaN ([`FTy::default_nan`]; -0 gives -0).
pub fn sqrt(t: FTy, r: Rnd, a: u64) -> u64 {
    let x = t.to_f64(a);
    if x.is_nan() || x < 0.0 {
        return nan_result(t, &[a]);
    }
    if x == 0.0 || x.is_infinite() {
        return a;
    }
    match t {
        FTy::F64 => {
            // Scale subnormal (and tiny) inputs by 2^128 so that the remainder a - s*s cannot
            // underflow; sqrt(x * 2^128) = sqrt(x) * 2^64 exactly, and the scaling back by 2^-64
            // is exact because the root of an f64 is never subnormal.
            let (xs, back) =
                if x < f64::MIN_POSITIVE * 2f64.powi(54) { (x * 2f64.powi(128), 2f64.powi(-64)) } else { (x, 1.0) };
            let s = xs.sqrt();
            let rem = (-s).mul_add(s, xs);
            let up = || f64::from_bits(s.to_bits() + 1);
            let down = || f64::from_bits(s.to_bits() - 1);
            let v = match r {
                Rnd::N => s,
                Rnd::P if rem > 0.0 => up(),
                Rnd::M | Rnd::Z if rem < 0.0 => down(),
                _ => s,
            };
            (v * back).to_bits()
        }
        _ => {
            // f32 (and the 16-bit formats): the f64 root has 53 bits; if it is not representable
            // in the target format, it lies strictly between the same two neighbours as the exact
            // root, so rounding it in direction r is exact. If it is representable, s*s is exact in
            // f64 and compares with x directly.
            let s = x.sqrt();
            let near = t.from_f64(s, Rnd::N);
            if t.to_f64(near) != s {
                return t.from_f64(s, r);
            }
            let sq = s * s;
            let exact_above = x > sq;
            let exact_below = x < sq;
            // `near` is positive and finite: its neighbours are one bit pattern away.
            match r {
                Rnd::P if exact_above => near + 1,
                Rnd::M | Rnd::Z if exact_below => near - 1,
                _ => near,
            }
        }
    }
}

/// Conversion between float formats with rounding; NaN as the H100 converts it (module header).
pub fn convert(from: FTy, to: FTy, r: Rnd, b: u64) -> u64 {
    if from.is_nan(b) {
        return convert_nan(from, to, b);
    }
    macro_rules! conv {
        ($F:ty) => {{
            let x = <$F>::from_bits(b as u128);
            let mut lost = false;
            match to {
                FTy::F16 => FloatConvert::<Half>::convert_r(x, r.ap(), &mut lost).value.to_bits() as u64,
                FTy::BF16 => FloatConvert::<BFloat>::convert_r(x, r.ap(), &mut lost).value.to_bits() as u64,
                FTy::F32 => FloatConvert::<Single>::convert_r(x, r.ap(), &mut lost).value.to_bits() as u64,
                FTy::F64 => FloatConvert::<Double>::convert_r(x, r.ap(), &mut lost).value.to_bits() as u64,
            }
        }};
    }
    match from {
        FTy::F16 => conv!(Half),
        FTy::BF16 => conv!(BFloat),
        FTy::F32 => conv!(Single),
        FTy::F64 => conv!(Double),
    }
}

/// The NaN `cvt` makes of the NaN `b` (measured on an H100 per PTX instruction; module header).
fn convert_nan(from: FTy, to: FTy, b: u64) -> u64 {
    let sign = |to: FTy| if b & from.sign_bit() != 0 { to.sign_bit() } else { 0 };
    // The payload (fraction) moved to the destination's fraction width, top bits kept.
    let frac = |to: FTy| {
        let f = b & (from.quiet_bit() * 2 - 1);
        let (fb, tb) = (from.frac_bits(), to.frac_bits());
        if tb >= fb {
            f << (tb - fb)
        } else {
            f >> (fb - tb)
        }
    };
    let exp = |to: FTy| (to.sign_bit() - 1) & !(to.quiet_bit() * 2 - 1);
    match (from, to) {
        // `cvt.f32.bf16`: the bits shifted, signaling NaNs included (`cvt_f32_bf16[32641]`).
        (FTy::BF16, FTy::F32) => b << 16,
        // Widening to f64 and narrowing from it: quieted, sign and (top of the) payload kept.
        (FTy::F32, FTy::F64) | (FTy::F64, FTy::F32) | (FTy::F64, FTy::F16) | (FTy::F64, FTy::F64) => {
            sign(to) | exp(to) | to.quiet_bit() | frac(to)
        }
        // Not measured: as the two steps through f32 that kir emits for them.
        (FTy::F16 | FTy::BF16, FTy::F64) => convert_nan(FTy::F32, FTy::F64, convert_nan(from, FTy::F32, b)),
        _ => to.canonical_nan(),
    }
}

/// A float rounded to an integral value of the same format (`cvt.rni.f32.f32` ...); a zero result
/// keeps the operand's sign. NaN: f64 quieted (`cvt_rni_f64_f64`), others canonical.
pub fn round_integral(t: FTy, r: Rnd, b: u64) -> u64 {
    if t.is_nan(b) {
        return nan_result(t, &[b]);
    }
    macro_rules! ri {
        ($F:ty) => {
            <$F>::from_bits(b as u128).round_to_integral(r.ap()).value.to_bits() as u64
        };
    }
    match t {
        FTy::F16 => ri!(Half),
        FTy::BF16 => ri!(BFloat),
        FTy::F32 => ri!(Single),
        FTy::F64 => ri!(Double),
    }
}

/// Float → integer (`cvt.rzi.s32.f32` ...): rounded to an integral value in direction r, then
/// clamped to the destination range (PTX saturates float-to-integer conversions always). NaN, as
/// measured on an H100: `1 << (bits - 1)` from f64 (`cvt_u8_f64[52]` = 128) and into 64 bits from
/// any format (`cvt_s64_f32[52]`), 0 from f32/f16/bf16 into 8, 16 or 32 bits.
pub fn to_int(t: FTy, r: Rnd, b: u64, bits: u32, signed: bool) -> u64 {
    if t.is_nan(b) {
        return if t == FTy::F64 || bits == 64 { 1 << (bits - 1) } else { 0 };
    }
    let mut exact = false;
    macro_rules! ti {
        ($F:ty) => {{
            let x = <$F>::from_bits(b as u128);
            if signed {
                x.to_i128_r(bits as usize, r.ap(), &mut exact).value as i128 as u128
            } else {
                x.to_u128_r(bits as usize, r.ap(), &mut exact).value
            }
        }};
    }
    let v = match t {
        FTy::F16 => ti!(Half),
        FTy::BF16 => ti!(BFloat),
        FTy::F32 => ti!(Single),
        FTy::F64 => ti!(Double),
    };
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    (v as u64) & mask
}

/// Integer → float with rounding. `v` holds the integer's bits, sign-extended if `signed`.
pub fn from_int(t: FTy, r: Rnd, v: u64, signed: bool) -> u64 {
    macro_rules! fi {
        ($F:ty) => {{
            if signed {
                <$F>::from_i128_r(v as i64 as i128, r.ap()).value.to_bits() as u64
            } else {
                <$F>::from_u128_r(v as u128, r.ap()).value.to_bits() as u64
            }
        }};
    }
    match t {
        FTy::F16 => fi!(Half),
        FTy::BF16 => fi!(BFloat),
        FTy::F32 => fi!(Single),
        FTy::F64 => fi!(Double),
    }
}

/// `min`/`max` (without `.NaN`). Two NaNs: b's quieted for f64 (`min_f64[3588]`), else canonical.
pub fn minmax(t: FTy, max: bool, a: u64, b: u64) -> u64 {
    let (x, y) = (t.to_f64(a), t.to_f64(b));
    match (x.is_nan(), y.is_nan()) {
        (true, true) => return nan_result(t, &[b]),
        (true, false) => return b,
        (false, true) => return a,
        _ => {}
    }
    if x == y {
        // Equal values: only zeros of different signs differ; -0 < +0.
        let a_neg = a & t.sign_bit() != 0;
        return if a_neg == max { b } else { a };
    }
    if (x < y) != max {
        a
    } else {
        b
    }
}

/// Comparison operators of `setp`/`set` on floats: ordered ones are false on NaN, `u` ones true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FCmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[inline]
pub fn compare(c: FCmp, x: f64, y: f64) -> bool {
    let un = x.is_nan() || y.is_nan();
    match c {
        FCmp::Eq => !un && x == y,
        FCmp::Ne => !un && x != y,
        FCmp::Lt => !un && x < y,
        FCmp::Le => !un && x <= y,
        FCmp::Gt => !un && x > y,
        FCmp::Ge => !un && x >= y,
        FCmp::Equ => un || x == y,
        FCmp::Neu => un || x != y,
        FCmp::Ltu => un || x < y,
        FCmp::Leu => un || x <= y,
        FCmp::Gtu => un || x > y,
        FCmp::Geu => un || x >= y,
        FCmp::Num => !un,
        FCmp::Nan => un,
    }
}

/// Approximate unary functions (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approx {
    Ex2,
    Lg2,
    Rsqrt,
    Sin,
    Cos,
    Tanh,
    Rcp,
    Sqrt,
}

pub fn approx(t: FTy, f: Approx, ftz: bool, a: u64) -> u64 {
    // f32 rcp/rsqrt/sqrt/ex2: the model of the H100's unit (crate::mufu), kept where it is within
    // the op's measured distance from the correctly rounded result computed below.
    let r = rounded(t, f, ftz, a);
    // sin: the unit takes x / 2π in fixed point with 25 fraction bits, so a turn below 2^-25
    // (subnormals too, with or without .ftz) gives a signed zero (measured: approx_f32 runs).
    if f == Approx::Sin && t == FTy::F32 {
        let turns = f32::from_bits(a as u32 & 0x7fff_ffff) * (0.5 / std::f64::consts::PI) as f32;
        if turns < 2f32.powi(-25) {
            return a & 0x8000_0000;
        }
    }
    let model = match f {
        Approx::Rcp => Some(crate::mufu::Fun::Rcp),
        Approx::Rsqrt => Some(crate::mufu::Fun::Rsqrt),
        Approx::Sqrt => Some(crate::mufu::Fun::Sqrt),
        Approx::Ex2 => Some(crate::mufu::Fun::Ex2),
        _ => None,
    };
    return match model {
        Some(m) if t == FTy::F32 => {
            let x = if ftz { ftz32(a as u32) } else { a as u32 };
            crate::mufu::approx_or(m, ftz, x, r as u32) as u64
        }
        _ => r,
    };

    /// The function rounded once to nearest (ftz: input and result flushed).
    fn rounded(t: FTy, f: Approx, ftz: bool, a: u64) -> u64 {
        let mut x = t.to_f64(a);
        if ftz && t.is_subnormal(a) {
            x = if x < 0.0 { -0.0 } else { 0.0 };
        }
        let v = match f {
            Approx::Ex2 => x.exp2(),
            Approx::Lg2 => {
                if x == 0.0 {
                    f64::NEG_INFINITY
                } else {
                    x.log2()
                }
            }
            Approx::Rsqrt => {
                if x == 0.0 {
                    if x.is_sign_negative() {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }
                } else {
                    1.0 / x.sqrt()
                }
            }
            Approx::Sin => x.sin(),
            Approx::Cos => x.cos(),
            Approx::Tanh => x.tanh(),
            Approx::Rcp => {
                let v = match t {
                    FTy::F64 => {
                        let v = ftz64((1.0 / x).to_bits());
                        if f64::from_bits(v).is_nan() {
                            t.canonical_nan()
                        } else {
                            v
                        }
                    }
                    _ => arith(t, Arith::Div, Rnd::N, t.from_f64(1.0, Rnd::N), t.from_f64(x, Rnd::N)),
                };
                return if ftz && t == FTy::F32 { ftz32(v as u32) as u64 } else { v };
            }
            Approx::Sqrt => return sqrt(t, Rnd::N, t.from_f64(x, Rnd::N)),
        };
        let r = t.from_f64(v, Rnd::N);
        if ftz && t == FTy::F32 {
            ftz32(r as u32) as u64
        } else {
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f32) -> u64 {
        x.to_bits() as u64
    }

    #[test]
    fn directed_rounding_of_addition() {
        // 1 + 2^-30 is not representable in f32: rz/rm give 1, rp gives the next float up.
        let tiny = f(2f32.powi(-30));
        assert_eq!(arith(FTy::F32, Arith::Add, Rnd::Z, f(1.0), tiny), f(1.0));
        assert_eq!(arith(FTy::F32, Arith::Add, Rnd::P, f(1.0), tiny), f(1.0) + 1);
        assert_eq!(arith(FTy::F32, Arith::Add, Rnd::M, f(-1.0), tiny), f(-1.0));
        assert_eq!(arith(FTy::F32, Arith::Add, Rnd::N, f(1.0), tiny), f(1.0));
        // Exact zero sums: +0 except toward minus infinity.
        assert_eq!(arith(FTy::F32, Arith::Add, Rnd::N, f(1.0), f(-1.0)), 0);
        assert_eq!(arith(FTy::F32, Arith::Add, Rnd::M, f(1.0), f(-1.0)), f(-0.0));
        // Overflow toward zero gives the largest finite value.
        assert_eq!(arith(FTy::F32, Arith::Mul, Rnd::Z, f(f32::MAX), f(2.0)), f(f32::MAX));
        assert_eq!(arith(FTy::F32, Arith::Div, Rnd::N, f(0.0), f(0.0)), 0x7fff_ffff);
    }

    #[test]
    fn square_roots_round_in_every_direction() {
        let two = f(2.0);
        let n = sqrt(FTy::F32, Rnd::N, two);
        assert_eq!(n, f(2f32.sqrt()));
        let (z, p) = (sqrt(FTy::F32, Rnd::Z, two), sqrt(FTy::F32, Rnd::P, two));
        assert_eq!(p, z + 1);
        assert!((f32::from_bits(z as u32) as f64) < 2f64.sqrt() && (f32::from_bits(p as u32) as f64) > 2f64.sqrt());
        assert_eq!(sqrt(FTy::F32, Rnd::Z, f(4.0)), f(2.0));
        assert_eq!(sqrt(FTy::F32, Rnd::N, f(-1.0)), 0x7fff_ffff);
        let (z, p) = (sqrt(FTy::F64, Rnd::Z, 2f64.to_bits()), sqrt(FTy::F64, Rnd::P, 2f64.to_bits()));
        assert_eq!(p, z + 1);
        assert!(z == 2f64.sqrt().to_bits() || p == 2f64.sqrt().to_bits());
        assert_eq!(sqrt(FTy::F64, Rnd::M, 4f64.to_bits()), 2f64.to_bits());
        // Subnormal inputs (the remainder would underflow without scaling).
        assert_eq!(sqrt(FTy::F64, Rnd::Z, 0x000f_ffff_ffff_ffff), 0x1fff_ffff_ffff_fffe);
        assert_eq!(sqrt(FTy::F64, Rnd::Z, 0x0000_0000_0000_07e8), 0x1eb6_7e93_ddbc_0e72);
        assert_eq!(sqrt(FTy::F64, Rnd::P, 0x0000_0000_0000_07e8), 0x1eb6_7e93_ddbc_0e73);
    }

    #[test]
    fn conversions_saturate_and_round() {
        assert_eq!(to_int(FTy::F32, Rnd::Z, f(-1.5), 32, true), (-1i32) as u32 as u64);
        assert_eq!(to_int(FTy::F32, Rnd::N, f(2.5), 32, true), 2);
        assert_eq!(to_int(FTy::F32, Rnd::Z, f(1e20), 32, true), i32::MAX as u64);
        assert_eq!(to_int(FTy::F32, Rnd::Z, f(-5.0), 32, false), 0);
        assert_eq!(to_int(FTy::F32, Rnd::Z, f(f32::NAN), 32, true), 0);
        assert_eq!(from_int(FTy::F32, Rnd::Z, 0xffff_ffff, false), f(4294967040.0));
        assert_eq!(convert(FTy::F32, FTy::F16, Rnd::N, f(1.0)), 0x3c00);
        assert_eq!(convert(FTy::F32, FTy::BF16, Rnd::Z, f(1.0 + 2f32.powi(-9))), 0x3f80);
        assert_eq!(round_integral(FTy::F32, Rnd::Z, f(-0.3)), f(-0.0));
    }

    #[test]
    fn nan_results_follow_the_h100() {
        // add_f64[3589]: b's NaN; div_f64[3589]: a's; mul_f64[50]: the default NaN.
        let (q, d) = (0x7ff8_0000_0000_0000, 0xfff8_0000_0000_0000);
        assert_eq!(arith(FTy::F64, Arith::Add, Rnd::N, q, d), d);
        assert_eq!(arith(FTy::F64, Arith::Sub, Rnd::Z, q, d), d);
        assert_eq!(arith(FTy::F64, Arith::Div, Rnd::N, q, d), q);
        assert_eq!(arith(FTy::F64, Arith::Mul, Rnd::P, 0, 0x7ff0_0000_0000_0000), d);
        // fma_f64[3342]: c's NaN (quieted) before a's.
        assert_eq!(fma(FTy::F64, Rnd::N, q, 0, 0xfff0_0000_0000_0001), 0xfff8_0000_0000_0001);
        assert_eq!(sqrt(FTy::F64, Rnd::N, 0x8000_0000_0000_0001), d);
        assert_eq!(minmax(FTy::F64, false, q, 0x7ff0_0000_0000_0001), 0x7ff8_0000_0000_0001);
        // f32: canonical whatever the operands.
        assert_eq!(arith(FTy::F32, Arith::Add, Rnd::Z, 0xffc0_0001, 0), 0x7fff_ffff);
        // Conversions: cvt_f32_bf16[32641], cvt_f64_f32[55], cvt_f32_f64[55], cvt_f16_f64[53].
        assert_eq!(convert(FTy::BF16, FTy::F32, Rnd::N, 0x7f81), 0x7f81_0000);
        assert_eq!(convert(FTy::F32, FTy::F64, Rnd::N, 0xffc0_0001), 0xfff8_0000_2000_0000);
        assert_eq!(convert(FTy::F64, FTy::F32, Rnd::Z, 0xfff8_0000_0000_0001), 0xffc0_0000);
        assert_eq!(convert(FTy::F64, FTy::F16, Rnd::N, d), 0xfe00);
        assert_eq!(convert(FTy::F32, FTy::BF16, Rnd::N, 0xffc0_0000), 0x7fff);
        // cvt_f64_f16[31745] runs as cvt.f32.f16 then cvt.f64.f32.
        assert_eq!(convert(FTy::F16, FTy::F64, Rnd::N, 0x7c01), 0x7fff_ffff_e000_0000);
        // cvt_u8_f64[52], cvt_s64_f32[52], and 0 from f32 into 32 bits.
        assert_eq!(to_int(FTy::F64, Rnd::Z, q, 8, false), 0x80);
        assert_eq!(to_int(FTy::F32, Rnd::Z, 0x7fc0_0000, 64, true), 1 << 63);
        assert_eq!(to_int(FTy::F32, Rnd::Z, 0x7fc0_0000, 32, true), 0);
    }

    #[test]
    fn ftz_judges_the_exact_result() {
        // mul_ftz_f32[698]: 2^-126 * 0.99999994 rounds to 2^-126 but is flushed.
        let (a, b) = (0x0080_0000, 0x3f7f_ffff);
        let v = arith(FTy::F32, Arith::Mul, Rnd::N, a, b) as u32;
        assert_eq!(v, 0x0080_0000);
        assert_eq!(ftz32_result(v, Rnd::N, || arith(FTy::F32, Arith::Mul, Rnd::Z, a, b) as u32), 0);
        // mul_ftz_f32[694]: exactly 2^-126 stays.
        assert_eq!(ftz32_result(0x0080_0000, Rnd::N, || 0x0080_0000), 0x0080_0000);
        assert_eq!(ftz32_result(0x8000_0001, Rnd::N, || unreachable!()), 0x8000_0000);
    }

    #[test]
    fn min_max_order_signed_zeros_and_skip_nan() {
        let (pz, nz, nan) = (f(0.0), f(-0.0), f(f32::NAN));
        assert_eq!(minmax(FTy::F32, false, pz, nz), nz);
        assert_eq!(minmax(FTy::F32, false, nz, pz), nz);
        assert_eq!(minmax(FTy::F32, true, nz, pz), pz);
        assert_eq!(minmax(FTy::F32, true, nan, f(3.0)), f(3.0));
        assert_eq!(minmax(FTy::F32, true, nan, nan), 0x7fff_ffff);
    }
}
