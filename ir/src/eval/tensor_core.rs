//! The arithmetic of NVIDIA tensor cores: `d = sum_k a[k]·b[k] + c` with f16, bf16 or tf32 inputs
//! and an f32 accumulator, as the hardware computes it (not correctly rounded).
//!
//! Sources: the block-FMA model of F. A. Khattak and M. Mikaitis, "Accurate Models of NVIDIA Tensor
//! Cores" (arXiv 2512.07004; MATLAB models in `north-numerical-computing/MATLAB-tensor-core`,
//! `models/{A100,H100,B200}TC.m`), and their hardware measurements in
//! `../shared/hardware-truth/tensor-cores/` (A100, H100, H200, B200; README.md there states the
//! model). This is an implementation of that model written from those two sources alone, separate
//! from the PTX emulator's (the project keeps the oracle and the emulator independent).
//! `ir/tests/tensor_core_truth.rs` checks it bit for bit against every fp16, bf16 and tf32 row.
//!
//! The model, for one block of `n` products plus an f32 addend `c` ([`TensorCoreRule`] gives `n`
//! and the number of extra alignment bits `x`):
//! 1. Each non-zero product `a·b` is exact: significand `sa·sb` (twice the input's fraction bits),
//!    exponent `ea + eb`, where a subnormal input keeps the format's minimum exponent (so the
//!    product is not normalised: its significand may lie in `[0, 4)`). Zero products are dropped,
//!    and so is `c = 0`.
//! 2. `E` = the largest exponent among the products and `c`, clamped to at least -133.
//! 3. Every term is shifted to a fixed point with `23 + x` fraction bits below `2^E` and its
//!    magnitude **truncated** (no guard, round or sticky bit).
//! 4. The integers are summed exactly (here in `i128`; no host float is involved).
//! 5. The sum is normalised and **truncated toward zero** to f32 (subnormal results kept). A NaN
//!    input, `0·Inf`, or `+Inf` with `-Inf` gives the canonical NaN `0x7fffffff` (kir's f32 NaN;
//!    the measurements hold no NaN or Inf, so this is the model's rule with kir's NaN); an Inf
//!    operand otherwise gives that Inf; a finite sum beyond f32 gives Inf of its sign.
//!
//! [`dot`] chains blocks over `k` in order: the f32 result of one block is the `c` of the next.
//! That is what one PTX `mma.sync` (`m16n8k16` for f16/bf16: one block of 16 on sm_90, two of 8
//! on sm_80; `m16n8k8` tf32) and successive `mma`s accumulating into the same registers compute.
//!
//! Choices the measurements do not decide (every measured `c` and result is a normal number
//! near 1): a sum that cancels exactly gives +0; if every product and `c` is zero the result is
//! -0 only when all of them are -0 (IEEE's rule for sums); a non-zero sum below f32's smallest
//! subnormal truncates to a zero of its sign.

/// The tensor-core arithmetic of a device generation. The rule only matters for the block size and
/// the number of extra alignment bits ([`TensorCoreRule::block_size`],
/// [`TensorCoreRule::extra_bits`]). The default is [`TensorCoreRule::Sm90`], the H100's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TensorCoreRule {
    /// sm_80 (A100, measured): blocks of 8 f16/bf16 products (4 tf32), 1 extra bit.
    Sm80,
    /// sm_90 (H100 and H200, measured): blocks of 16 f16/bf16 products (8 tf32), 2 extra bits.
    #[default]
    Sm90,
    /// sm_100 (B200, measured): the same parameters as sm_90.
    Sm100,
}

/// The input format of `a` and `b` (the accumulator `c` and the result are always f32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorCoreInput {
    /// IEEE binary16: the 16-bit pattern.
    F16,
    /// bfloat16: the 16-bit pattern (the top half of an f32).
    Bf16,
    /// TensorFloat-32, as PTX holds it in a `.b32` register: the f32 bit pattern of a value with 10
    /// fraction bits. The 13 low fraction bits are ignored (PTX leaves them unspecified; convert
    /// with `cvt.rna.tf32.f32` first).
    Tf32,
}

impl TensorCoreRule {
    /// The rule for a device of compute capability `cc` (major·10 + minor: 80 for sm_80, 90 for
    /// sm_90): below 90 the sm_80 rule, 90 to 99 the sm_90 rule, 100 and above the sm_100 rule.
    /// Only sm_80, sm_90 and sm_100 were measured: sm_86/sm_89 and sm_120 get their neighbour's
    /// rule, unverified.
    pub fn from_compute_capability(cc: u32) -> TensorCoreRule {
        match cc {
            0..=89 => TensorCoreRule::Sm80,
            90..=99 => TensorCoreRule::Sm90,
            _ => TensorCoreRule::Sm100,
        }
    }

    /// The number of products summed before one normalisation (the published models' `fma`
    /// parameter): f16/bf16 8 on sm_80 and 16 on sm_90/sm_100; tf32 4 and 8. (The measured tf32 rows
    /// have 4 products, one block under either rule; the tf32 sizes come from the published models.)
    pub fn block_size(self, fmt: TensorCoreInput) -> usize {
        let wide = !matches!(self, TensorCoreRule::Sm80);
        match (fmt, wide) {
            (TensorCoreInput::Tf32, false) => 4,
            (TensorCoreInput::Tf32, true) => 8,
            (_, false) => 8,
            (_, true) => 16,
        }
    }

    /// Fraction bits kept below the block's largest exponent beyond f32's 23 (the models' `neab`).
    pub fn extra_bits(self) -> u32 {
        match self {
            TensorCoreRule::Sm80 => 1,
            TensorCoreRule::Sm90 | TensorCoreRule::Sm100 => 2,
        }
    }
}

/// kir's canonical f32 NaN (eval.rs: the H100's NaN for f32).
const F32_NAN: u32 = 0x7fff_ffff;
const F32_INF: u32 = 0x7f80_0000;
/// The lowest block exponent `E` (the models' `min_exp_limit`).
const MIN_BLOCK_EXP: i32 = -133;

/// `sum_k a[k]·b[k] + c` as the tensor cores of `rule` compute it, blocks of
/// [`TensorCoreRule::block_size`] products chained over `k` in order (the module header states
/// the model). `a` and `b` hold raw bits of `fmt` (bits above the format's width are ignored), `c`
/// and the result f32 bits. Pure and total: on `a.len() != b.len()` only the common prefix is
/// used; never panics.
pub fn dot(rule: TensorCoreRule, fmt: TensorCoreInput, a: &[u64], b: &[u64], c: u32) -> u32 {
    let n = a.len().min(b.len());
    let block = rule.block_size(fmt);
    let mut acc = c;
    let mut k = 0;
    while k < n {
        let end = (k + block).min(n);
        acc = block_fma(rule, fmt, &a[k..end], &b[k..end], acc);
        k = end;
    }
    acc
}

/// A decoded finite input: value `sign · sig · 2^(exp - frac)`, `exp` the exponent of the
/// significand's leading (implicit) bit position; a subnormal keeps the minimum exponent.
#[derive(Clone, Copy)]
enum Num {
    Nan,
    Inf(bool),
    Finite { neg: bool, sig: u64, exp: i32 },
}

/// The widths of a format: (exponent bits, fraction bits).
fn layout(fmt: TensorCoreInput) -> (u32, u32) {
    match fmt {
        TensorCoreInput::F16 => (5, 10),
        TensorCoreInput::Bf16 => (8, 7),
        TensorCoreInput::Tf32 => (8, 10),
    }
}

/// Decodes `bits` of a format with `ebits` exponent and `frac` fraction bits laid out at the bottom
/// of the word (sign above them).
fn decode(bits: u64, ebits: u32, frac: u32) -> Num {
    let bias = (1i32 << (ebits - 1)) - 1;
    let f = bits & ((1 << frac) - 1);
    let e = ((bits >> frac) & ((1 << ebits) - 1)) as i32;
    let neg = (bits >> (frac + ebits)) & 1 == 1;
    if e == (1 << ebits) - 1 {
        return if f == 0 { Num::Inf(neg) } else { Num::Nan };
    }
    if e == 0 {
        Num::Finite { neg, sig: f, exp: 1 - bias }
    } else {
        Num::Finite { neg, sig: f | (1 << frac), exp: e - bias }
    }
}

fn decode_input(fmt: TensorCoreInput, bits: u64) -> Num {
    let (ebits, frac) = layout(fmt);
    match fmt {
        TensorCoreInput::F16 | TensorCoreInput::Bf16 => decode(bits & 0xffff, ebits, frac),
        // tf32 in an f32 word: drop the 13 low fraction bits.
        TensorCoreInput::Tf32 => decode((bits & 0xffff_ffff) >> 13, ebits, frac),
    }
}

/// One term of the block sum: `(-1)^neg · sig · 2^lsb`, with `exp` the exponent it contributes to
/// the block's `E`.
struct Term {
    neg: bool,
    sig: u128,
    lsb: i32,
    exp: i32,
}

/// One block: `sum a[i]·b[i] + c` (at most one block of products; the module header's steps 1-5).
fn block_fma(rule: TensorCoreRule, fmt: TensorCoreInput, a: &[u64], b: &[u64], c: u32) -> u32 {
    let (_, frac) = layout(fmt);
    let mut terms: Vec<Term> = Vec::with_capacity(a.len() + 1);
    let (mut nan, mut pos_inf, mut neg_inf) = (false, false, false);
    // Whether every zero seen so far is -0 (for the sign of an all-zero sum).
    let mut all_neg_zero = true;
    for (&x, &y) in a.iter().zip(b) {
        match (decode_input(fmt, x), decode_input(fmt, y)) {
            (Num::Nan, _) | (_, Num::Nan) => nan = true,
            (Num::Inf(s), Num::Inf(t)) => {
                if s ^ t {
                    neg_inf = true
                } else {
                    pos_inf = true
                }
            }
            (Num::Inf(s), Num::Finite { neg, sig, .. }) | (Num::Finite { neg, sig, .. }, Num::Inf(s)) => {
                if sig == 0 {
                    nan = true // 0 · Inf
                } else if s ^ neg {
                    neg_inf = true
                } else {
                    pos_inf = true
                }
            }
            (Num::Finite { neg: s, sig: p, exp: e }, Num::Finite { neg: t, sig: q, exp: f }) => {
                let neg = s ^ t;
                if p == 0 || q == 0 {
                    all_neg_zero &= neg;
                } else {
                    let exp = e + f;
                    terms.push(Term { neg, sig: (p * q) as u128, lsb: exp - 2 * frac as i32, exp });
                }
            }
        }
    }
    match decode(c as u64, 8, 23) {
        Num::Nan => nan = true,
        Num::Inf(true) => neg_inf = true,
        Num::Inf(false) => pos_inf = true,
        Num::Finite { neg, sig: 0, .. } => all_neg_zero &= neg,
        Num::Finite { neg, sig, exp } => terms.push(Term { neg, sig: sig as u128, lsb: exp - 23, exp }),
    }
    if nan || (pos_inf && neg_inf) {
        return F32_NAN;
    }
    if pos_inf {
        return F32_INF;
    }
    if neg_inf {
        return F32_INF | 0x8000_0000;
    }
    if terms.is_empty() {
        return if all_neg_zero { 0x8000_0000 } else { 0 };
    }
    let big_e = terms.iter().map(|t| t.exp).max().unwrap_or(MIN_BLOCK_EXP).max(MIN_BLOCK_EXP);
    // The fixed point's unit: 23 + x fraction bits below 2^E.
    let unit = big_e - 23 - rule.extra_bits() as i32;
    let mut sum: i128 = 0;
    for t in &terms {
        // shift <= 25 for every term (lsb <= exp <= E), so the left shift cannot overflow.
        let shift = t.lsb - unit;
        let mag = if shift >= 0 {
            t.sig << shift
        } else if -shift < 128 {
            t.sig >> -shift
        } else {
            0
        };
        let mag = mag as i128;
        sum += if t.neg { -mag } else { mag };
    }
    to_f32_rz(sum, unit)
}

/// `sum · 2^unit` truncated toward zero to f32 bits; Inf beyond f32's range; +0 for an exact 0.
fn to_f32_rz(sum: i128, unit: i32) -> u32 {
    if sum == 0 {
        return 0;
    }
    let sign = if sum < 0 { 0x8000_0000 } else { 0 };
    let mag = sum.unsigned_abs();
    let nb = 128 - mag.leading_zeros() as i32;
    // The exponent of the leading bit.
    let top = unit + nb - 1;
    if top > 127 {
        return sign | F32_INF;
    }
    if top >= -126 {
        let m = if nb > 24 { mag >> (nb - 24) } else { mag << (24 - nb) } as u32;
        return sign | (((top + 127) as u32) << 23) | (m & 0x7f_ffff);
    }
    // Subnormal: the number of 2^-149 units, truncated (top < -126 keeps it below 2^23).
    let shift = unit + 149;
    let m = if shift >= 0 {
        mag << shift
    } else if -shift < 128 {
        mag >> -shift
    } else {
        0
    };
    sign | m as u32
}

#[cfg(test)]
mod tests {
    use super::TensorCoreInput::{Bf16, Tf32, F16};
    use super::TensorCoreRule::{Sm100, Sm80, Sm90};
    use super::*;

    const ONE_H: u64 = 0x3c00; // f16 1.0
    const ONE_F: u32 = 0x3f80_0000; // f32 1.0

    #[test]
    fn rules_from_compute_capability() {
        assert_eq!(TensorCoreRule::from_compute_capability(80), Sm80);
        assert_eq!(TensorCoreRule::from_compute_capability(89), Sm80);
        assert_eq!(TensorCoreRule::from_compute_capability(90), Sm90);
        assert_eq!(TensorCoreRule::from_compute_capability(100), Sm100);
        assert_eq!(TensorCoreRule::default(), Sm90);
        assert_eq!((Sm80.block_size(F16), Sm80.block_size(Bf16), Sm80.block_size(Tf32)), (8, 8, 4));
        assert_eq!((Sm90.block_size(F16), Sm100.block_size(Bf16), Sm90.block_size(Tf32)), (16, 16, 8));
    }

    #[test]
    fn exact_cases() {
        // 1·1 + 1 = 2; an empty dot product is c.
        assert_eq!(dot(Sm90, F16, &[ONE_H], &[ONE_H], ONE_F), 0x4000_0000);
        assert_eq!(dot(Sm90, F16, &[], &[], 0x1234_5678), 0x1234_5678);
        // 16 products of 1.5·1.5 = 2.25 each: 36 (exact).
        let a = [0x3e00u64; 16];
        assert_eq!(dot(Sm90, F16, &a, &a, 0), 36f32.to_bits());
        // bf16 and tf32 decode: 1.5 · -2 = -3.
        assert_eq!(dot(Sm90, Bf16, &[0x3fc0], &[0xc000], 0), 0xc040_0000);
        assert_eq!(dot(Sm80, Tf32, &[0x3fc0_0000], &[0xc000_0000], 0), 0xc040_0000);
        // tf32: the 13 low bits of the word are ignored.
        assert_eq!(dot(Sm80, Tf32, &[0x3fc0_1fff], &[0xc000_0000], 0), 0xc040_0000);
    }

    #[test]
    fn truncation_not_rounding() {
        // 1 + 1.5·2^-24 (f16 2^-12 · 1.5·2^-12): on sm_90 the unit is 2^-25, the sum 2^25 + 3 units
        // is truncated to 1 (round to nearest would give 1 + 2^-23).
        let a = [0x0c00u64]; // f16 2^-12
        let b = [0x0e00u64]; // f16 1.5·2^-12
        assert_eq!(dot(Sm90, F16, &a, &b, ONE_F), ONE_F);
        // Negative sums truncate toward zero too: -1 - 1.5·2^-24 gives -1.
        assert_eq!(dot(Sm90, F16, &a, &[0x8e00], ONE_F | 0x8000_0000), ONE_F | 0x8000_0000);
        // Alignment truncates each term: 8 products of 1.5·2^-26 (f16 2^-13 · 1.5·2^-13) are 0.75 of
        // a unit each and vanish against c = 1, though their exact sum 1.5·2^-23 would add at least
        // one ulp under any rounding of the exact sum.
        let x = [0x0800u64; 8]; // 2^-13
        let y = [0x0a00u64; 8]; // 1.5·2^-13
        assert_eq!(dot(Sm90, F16, &x, &y, ONE_F), ONE_F);
        // The same products without c set E themselves and are exact: 12·2^-26.
        assert_eq!(dot(Sm90, F16, &x, &y, 0), (12.0f32 * 2f32.powi(-26)).to_bits());
    }

    #[test]
    fn extra_bits_tell_the_rules_apart() {
        // c = 1 and four products of 2^-25 (f16 2^-12 · 2^-13). On sm_90 (unit 2^-25) each is one
        // unit and together they make 2^-23, one ulp of 1. On sm_80 (unit 2^-24) each is half a
        // unit, truncated to 0.
        let a = [0x0c00u64; 4]; // 2^-12
        let b = [0x0800u64; 4]; // 2^-13
        assert_eq!(dot(Sm90, F16, &a, &b, ONE_F), ONE_F + 1);
        assert_eq!(dot(Sm80, F16, &a, &b, ONE_F), ONE_F);
    }

    #[test]
    fn blocks_chain_in_order() {
        // The first block's f32 result is the next block's c. 16 products of 2^-25 with c = 1: sm_90
        // sums them in one block (16 units of 2^-25: 1 + 2^-21 exactly); sm_80 truncates each of
        // them to 0 against c = 1 in both of its blocks of 8.
        let a = [0x0c00u64; 16];
        let b = [0x0800u64; 16];
        assert_eq!(dot(Sm90, F16, &a, &b, ONE_F), ONE_F + 4);
        assert_eq!(dot(Sm80, F16, &a, &b, ONE_F), ONE_F);
        // Without c the first sm_80 block is exact (8·2^-25 = 2^-22), then the second adds 2^-22.
        assert_eq!(dot(Sm80, F16, &a, &b, 0), 2f32.powi(-21).to_bits());
        // 17 products on sm_90 make two blocks: c = -1 cancels in the first block, and the second
        // block's tiny product is then exact (in one block it would vanish against E = 0).
        let mut a = vec![0x3c00u64; 16];
        let mut b = vec![0u64; 16];
        b[0] = 0x3c00; // 1·1
        a.push(0x0c00);
        b.push(0x0800); // 2^-25 in the second block
        assert_eq!(dot(Sm90, F16, &a, &b, ONE_F | 0x8000_0000), 2f32.powi(-25).to_bits());
    }

    #[test]
    fn subnormal_inputs() {
        // f16 subnormal 2^-24 (0x0001) times 2^-24: 2^-48, exact as an f32 without c.
        assert_eq!(dot(Sm90, F16, &[0x0001], &[0x0001], 0), 2f32.powi(-48).to_bits());
        // A subnormal input keeps the minimum exponent -14: 0x0001·1.0 has exponent -14, so with
        // another product 2^-14·... the block's E is -14, not -24. Both are exact here.
        assert_eq!(dot(Sm90, F16, &[0x0001, 0x0400], &[ONE_H, ONE_H], 0), (2f32.powi(-24) + 2f32.powi(-14)).to_bits());
        // bf16 subnormals: 2^-133 · 2^-133 = 2^-266, far below f32: E clamps to -133 and the
        // term truncates to 0, leaving c; alone it truncates to +0.
        let s = 0x0001u64; // bf16 2^-133
        assert_eq!(dot(Sm90, Bf16, &[s], &[s], ONE_F), ONE_F);
        assert_eq!(dot(Sm90, Bf16, &[s], &[s], 0), 0);
        // A subnormal f32 result: 2^-130 · 2^-10 = 2^-140.
        assert_eq!(dot(Sm90, Bf16, &[0x0008], &[0x3a80], 0), 2f32.powi(-140).to_bits());
        // A subnormal c takes part with exponent -126.
        assert_eq!(dot(Sm90, F16, &[0], &[0], 1), 1);
        assert_eq!(dot(Sm90, Bf16, &[0x0008], &[0x3a80], 1), 2f32.powi(-140).to_bits() + 1);
    }

    #[test]
    fn zero_products_dropped() {
        // A zero product does not take part in E: with 0·x and a tiny product, the tiny product
        // sets E and stays exact.
        assert_eq!(dot(Sm90, F16, &[0x0000, 0x0001], &[0x7bff, 0x0001], 0), 2f32.powi(-48).to_bits());
        // c = 0 is left out: 2^-48 + 0.
        assert_eq!(dot(Sm90, F16, &[0x0001], &[0x0001], 0x8000_0000), 2f32.powi(-48).to_bits());
        // Signs of zero: all -0 gives -0, otherwise +0; an exact cancellation gives +0.
        assert_eq!(dot(Sm90, F16, &[0x8000], &[ONE_H], 0x8000_0000), 0x8000_0000);
        assert_eq!(dot(Sm90, F16, &[0x8000], &[ONE_H], 0), 0);
        assert_eq!(dot(Sm90, F16, &[ONE_H], &[0xbc00], ONE_F), 0);
    }

    #[test]
    fn nan_and_inf() {
        let inf_h = 0x7c00u64;
        let nan_h = 0x7e00u64;
        assert_eq!(dot(Sm90, F16, &[nan_h], &[ONE_H], ONE_F), F32_NAN);
        assert_eq!(dot(Sm90, F16, &[ONE_H], &[ONE_H], 0xffc0_0001), F32_NAN);
        assert_eq!(dot(Sm90, F16, &[inf_h], &[0], ONE_F), F32_NAN); // Inf · 0
        assert_eq!(dot(Sm90, F16, &[inf_h], &[ONE_H], ONE_F), F32_INF);
        assert_eq!(dot(Sm90, F16, &[inf_h], &[0xbc00], ONE_F), F32_INF | 0x8000_0000);
        // +Inf with -Inf: among products, and a product against c.
        assert_eq!(dot(Sm90, F16, &[inf_h, inf_h], &[ONE_H, 0xbc00], 0), F32_NAN);
        assert_eq!(dot(Sm90, F16, &[inf_h], &[ONE_H], 0xff80_0000), F32_NAN);
        // Across blocks: the first block's Inf is the second block's c.
        let mut a = vec![inf_h];
        a.extend([0u64; 7]);
        a.push(0xfc00);
        let b = vec![ONE_H; 9];
        assert_eq!(dot(Sm80, F16, &a, &b, 0), F32_NAN);
        // A finite sum beyond f32 gives Inf: f32::MAX + 2^104 (bf16 2^52 · 2^52) is 2^128; a
        // smaller addition truncates back to f32::MAX.
        assert_eq!(dot(Sm90, Bf16, &[0x5980], &[0x5980], f32::MAX.to_bits()), F32_INF);
        assert_eq!(dot(Sm90, F16, &[0x7bff], &[0x7bff], f32::MAX.to_bits()), f32::MAX.to_bits());
        let big = [0x7bffu64; 16]; // 65504
        assert_eq!(dot(Sm90, F16, &big, &big, 0), (16.0 * 65504.0f32 * 65504.0).to_bits());
        // bf16 products reach 2^255: beyond f32.
        assert_eq!(dot(Sm90, Bf16, &[0x7f00], &[0x7f00], 0), F32_INF);
        assert_eq!(dot(Sm90, Bf16, &[0x7f00], &[0xff00], 0), F32_INF | 0x8000_0000);
    }
}
