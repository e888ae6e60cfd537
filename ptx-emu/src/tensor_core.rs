//! The tensor cores' arithmetic: what one `mma.sync` or `wgmma` output element is, bit for bit.
//!
//! **Sources.** The block-FMA model published with the hardware measurements of Faizan A. Khattak
//! and Mantas Mikaitis ("Accurate Models of NVIDIA Tensor Cores", arXiv 2512.07004; repository
//! `north-numerical-computing/MATLAB-tensor-core`, `models/*TC.m`), as restated and confirmed in
//! kir's `../shared/hardware-truth/tensor-cores/README.md`: it reproduces every fp16, bf16 and tf32
//! row measured on A100, H100, H200 and B200 (5,000 of 5,000 each; `tests/tensor_core_truth.rs`),
//! and, chained over k, all 16,384 outputs of kir's H100 recording of Triton's sm_90a matmul
//! (`tests/triton_corpus.rs` at the workspace root). Nothing here calls or copies kir's evaluator.
//!
//! **The model.** `d = c + Σ_k a_k·b_k` is computed in blocks of n products, in order of k; the f32
//! result of one block is the c of the next. One block:
//! 1. Every non-zero product is exact: its significand is the product of the inputs' significands,
//!    its exponent `ea + eb` (a subnormal input keeps its format's minimum exponent). Zero
//!    products are dropped; c = ±0 is left out.
//! 2. `E` = the largest exponent among the products and c, at least -133.
//! 3. Every term is truncated (no rounding, no sticky bit) to a multiple of `2^(E - 23 - extra)`.
//! 4. The integers are summed exactly; the sum is normalised and truncated toward zero to f32
//!    (subnormal results kept; a magnitude of `2^128` or more is Inf).
//! 5. A NaN term (a NaN input, c NaN, or Inf·0) or an Inf of each sign gives NaN (the canonical
//!    `0x7fffffff`, as NVIDIA's f32 arithmetic makes it); otherwise an Inf term gives that Inf.
//!
//! **Parameters** ([`TensorCores`]): [`TensorCores::Sm80`] (A100) has blocks of 8 f16/bf16
//! products and 1 extra bit; [`TensorCores::Sm90`] (H100, H200, B200) blocks of 16 and 2 extra
//! bits. tf32 blocks are 4 products on sm_80 and 8 on sm_90: the published models' values
//! (`A100TC.m`, `H100TC.m`), which the data cannot confirm (its tf32 rows have 4 products: one
//! block either way).
//!
//! **Not covered by the data, chosen here:** a block whose terms are all zero gives +0 (as the
//! published model does), and a negative sum that truncates to zero gives -0 (truncation toward
//! zero keeps the sign). tf32 operands are f32 bit patterns whose low 13 fraction bits are ignored
//! (the ISA leaves tf32's layout to the implementation; `cvt.rna.tf32.f32` clears them), except
//! that an f32 NaN stays a NaN. f16 accumulators are not modelled (the emulator has no
//! `mma` with f16 C/D), nor fp8 inputs (the measured fp8 rows follow another rule).

/// An input format of a tensor-core product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// IEEE binary16: elements are 16-bit patterns.
    F16,
    /// bfloat16: elements are 16-bit patterns.
    BF16,
    /// TensorFloat-32: elements are f32 bit patterns, of which the low 13 fraction bits are ignored.
    TF32,
}

/// Whose tensor cores: the block size and extra alignment bits of one GPU generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorCores {
    /// The A100 (sm_80) rule: blocks of 8 f16/bf16 (4 tf32) products, 1 extra bit.
    Sm80,
    /// The H100/H200 (sm_90) and B200 (sm_100) rule: blocks of 16 f16/bf16 (8 tf32) products, 2
    /// extra bits.
    Sm90,
}

impl TensorCores {
    /// The rule for PTX targeting `sm_<sm>`: [`TensorCores::Sm90`] from sm_90 up (sm_90a, sm_100,
    /// ...), [`TensorCores::Sm80`] below (sm_80, sm_86, sm_89; older targets have no model of
    /// their own and get the sm_80 rule).
    pub fn for_sm(sm: u32) -> TensorCores {
        if sm >= 90 {
            TensorCores::Sm90
        } else {
            TensorCores::Sm80
        }
    }

    /// Products per block for inputs of format `f`.
    pub fn block(self, f: Format) -> usize {
        match (self, f) {
            (TensorCores::Sm80, Format::TF32) => 4,
            (TensorCores::Sm80, _) => 8,
            (TensorCores::Sm90, Format::TF32) => 8,
            (TensorCores::Sm90, _) => 16,
        }
    }

    /// Fraction bits kept below the largest exponent beyond f32's 23.
    pub fn extra_bits(self) -> u32 {
        match self {
            TensorCores::Sm80 => 1,
            TensorCores::Sm90 => 2,
        }
    }

    /// `c + Σ a[k]·b[k]` as f32 bits: blocks of [`TensorCores::block`] products in order of k,
    /// each block's result the next block's c. `a` and `b` hold elements of format `f` (16-bit
    /// patterns for f16/bf16 in the low bits, f32 patterns for tf32) and have the same length;
    /// `c` is f32 bits.
    pub fn dot(self, f: Format, a: &[u32], b: &[u32], c: u32) -> u32 {
        assert_eq!(a.len(), b.len(), "a dot product of {} and {} elements", a.len(), b.len());
        let n = self.block(f);
        let mut acc = c;
        for (ab, bb) in a.chunks(n).zip(b.chunks(n)) {
            acc = self.block_fma(f, ab, bb, acc);
        }
        acc
    }

    /// One block: `c + Σ a[k]·b[k]` for at most [`TensorCores::block`] products, as f32 bits.
    pub fn block_fma(self, f: Format, a: &[u32], b: &[u32], c: u32) -> u32 {
        debug_assert!(a.len() <= self.block(f) && a.len() == b.len());
        let extra = self.extra_bits() as i32;
        // (negative, significand, fraction bits, exponent) of every non-zero finite term.
        let mut terms: Vec<(bool, u64, i32, i32)> = Vec::with_capacity(a.len() + 1);
        let (mut nan, mut pos_inf, mut neg_inf) = (false, false, false);
        for (&x, &y) in a.iter().zip(b) {
            let (x, y) = (decode(f, x), decode(f, y));
            let neg = x.neg != y.neg;
            match (x.class, y.class) {
                (Class::Nan, _) | (_, Class::Nan) | (Class::Inf, Class::Zero) | (Class::Zero, Class::Inf) => nan = true,
                (Class::Inf, _) | (_, Class::Inf) => *if neg { &mut neg_inf } else { &mut pos_inf } = true,
                (Class::Zero, _) | (_, Class::Zero) => {}
                (Class::Finite, Class::Finite) => terms.push((neg, x.sig * y.sig, 2 * x.frac, x.exp + y.exp)),
            }
        }
        let cv = decode_f32(c);
        match cv.class {
            Class::Nan => nan = true,
            Class::Inf => *if cv.neg { &mut neg_inf } else { &mut pos_inf } = true,
            Class::Zero => {}
            Class::Finite => terms.push((cv.neg, cv.sig, cv.frac, cv.exp)),
        }
        if nan || (pos_inf && neg_inf) {
            return CANONICAL_NAN;
        }
        if pos_inf || neg_inf {
            return if neg_inf { NEG_INF } else { POS_INF };
        }
        let Some(top) = terms.iter().map(|t| t.3).max() else { return 0 };
        // The weight of one unit of the fixed-point sum.
        let lsb = top.max(-133) - 23 - extra;
        let mut sum: i64 = 0;
        for &(neg, sig, frac, exp) in &terms {
            // |term| = sig * 2^(exp - frac), truncated to a multiple of 2^lsb.
            let shift = exp - frac - lsb;
            let units = if shift >= 0 {
                (sig << shift) as i64
            } else if shift > -64 {
                (sig >> -shift) as i64
            } else {
                0
            };
            sum += if neg { -units } else { units };
        }
        truncate_to_f32(sum < 0, sum.unsigned_abs(), lsb)
    }
}

/// NVIDIA's canonical f32 NaN.
const CANONICAL_NAN: u32 = 0x7fff_ffff;
const POS_INF: u32 = 0x7f80_0000;
const NEG_INF: u32 = 0xff80_0000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Zero,
    Finite,
    Inf,
    Nan,
}

/// An element: the value `sig * 2^(exp - frac)` with its sign, `sig < 2^(frac + 1)`.
#[derive(Clone, Copy, Debug)]
struct Elem {
    class: Class,
    neg: bool,
    sig: u64,
    frac: i32,
    exp: i32,
}

/// Decodes an IEEE-style pattern with `ebits` exponent and `fbits` fraction bits.
fn decode_ieee(bits: u32, ebits: u32, fbits: u32) -> Elem {
    let neg = bits >> (ebits + fbits) & 1 == 1;
    let e = (bits >> fbits) & ((1 << ebits) - 1);
    let m = (bits & ((1 << fbits) - 1)) as u64;
    let bias = (1i32 << (ebits - 1)) - 1;
    let (class, sig, exp) = match (e, m) {
        (0, 0) => (Class::Zero, 0, 0),
        (0, m) => (Class::Finite, m, 1 - bias),
        (e, 0) if e == (1 << ebits) - 1 => (Class::Inf, 0, 0),
        (e, _) if e == (1 << ebits) - 1 => (Class::Nan, 0, 0),
        (e, m) => (Class::Finite, m | 1 << fbits, e as i32 - bias),
    };
    Elem { class, neg, sig, frac: fbits as i32, exp }
}

fn decode_f32(bits: u32) -> Elem {
    decode_ieee(bits, 8, 23)
}

fn decode(f: Format, bits: u32) -> Elem {
    match f {
        Format::F16 => decode_ieee(bits & 0xffff, 5, 10),
        Format::BF16 => decode_ieee(bits & 0xffff, 8, 7),
        Format::TF32 => {
            let x = decode_f32(bits);
            if x.class == Class::Nan {
                return x;
            }
            decode_ieee(bits >> 13, 8, 10)
        }
    }
}

/// `±units * 2^lsb` truncated toward zero to f32 bits; `2^128` or more in magnitude is Inf.
fn truncate_to_f32(neg: bool, units: u64, lsb: i32) -> u32 {
    let sign = (neg as u32) << 31;
    if units == 0 {
        return 0;
    }
    let width = 64 - units.leading_zeros() as i32;
    let exp = lsb + width - 1;
    if exp > 127 {
        return sign | POS_INF;
    }
    let mag = if exp >= -126 {
        let sig = if width > 24 { units >> (width - 24) } else { units << (24 - width) };
        ((exp + 127) as u32) << 23 | (sig as u32 & 0x7f_ffff)
    } else {
        // Subnormal: a multiple of 2^-149.
        let shift = lsb + 149;
        (if shift >= 0 {
            units << shift
        } else if shift > -64 {
            units >> -shift
        } else {
            0
        }) as u32
    };
    sign | mag
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16(x: f32) -> u32 {
        half::f16::from_f32(x).to_bits() as u32
    }

    #[test]
    fn the_rule_follows_the_target() {
        assert_eq!(TensorCores::for_sm(80), TensorCores::Sm80);
        assert_eq!(TensorCores::for_sm(89), TensorCores::Sm80);
        assert_eq!(TensorCores::for_sm(75), TensorCores::Sm80);
        assert_eq!(TensorCores::for_sm(90), TensorCores::Sm90);
        assert_eq!(TensorCores::for_sm(100), TensorCores::Sm90);
    }

    #[test]
    fn exact_small_sums_are_exact() {
        let a: Vec<u32> = (0..16).map(|i| f16(i as f32 - 7.0)).collect();
        let b: Vec<u32> = (0..16).map(|i| f16((i % 5) as f32 - 2.0)).collect();
        let want: f32 = 3.5 + (0..16).map(|i| (i as f32 - 7.0) * ((i % 5) as f32 - 2.0)).sum::<f32>();
        for tc in [TensorCores::Sm80, TensorCores::Sm90] {
            assert_eq!(f32::from_bits(tc.dot(Format::F16, &a, &b, 3.5f32.to_bits())), want, "{tc:?}");
        }
    }

    #[test]
    fn terms_are_truncated_below_the_alignment_window() {
        // 1*1 + (-2^-15)(2^-15) + c, c = -2^-24, on sm_90: E = 0, so terms are truncated to
        // multiples of 2^-25. -2^-30 truncates to 0 and c is kept: 1 - 2^-24. (The exact sum
        // 1 - 2^-24 - 2^-30 truncated once would be 1 - 2^-23.)
        let (one, neg_tiny, tiny) = (f16(1.0), f16(-(2f32.powi(-15))), f16(2f32.powi(-15)));
        let c = (-(2f32.powi(-24))).to_bits();
        let d = TensorCores::Sm90.dot(Format::F16, &[one, neg_tiny], &[one, tiny], c);
        assert_eq!(f32::from_bits(d), 1.0 - 2f32.powi(-24));
    }

    #[test]
    fn the_result_is_truncated_toward_zero() {
        // 1 + 3 * 2^-24 lies between 1 + 2^-23 and 1 + 2^-22 (a tie that rounds to even upwards):
        // truncation gives 1 + 2^-23, and -1 - 3 * 2^-24 gives -(1 + 2^-23).
        let (one, c) = (f16(1.0), 3.0 * 2f32.powi(-24));
        let d = TensorCores::Sm90.dot(Format::F16, &[one], &[one], c.to_bits());
        assert_eq!(f32::from_bits(d), 1.0 + 2f32.powi(-23));
        let d = TensorCores::Sm90.dot(Format::F16, &[f16(-1.0)], &[one], (-c).to_bits());
        assert_eq!(f32::from_bits(d), -1.0 - 2f32.powi(-23));
    }

    #[test]
    fn blocks_chain_in_order_of_k_and_their_size_and_window_follow_the_rule() {
        // Eight products of 2^-25 (2^-13 * 2^-12), then 1 * 1. sm_80 (blocks of 8): the first
        // block sums the small ones exactly (2^-22), the second adds 1: 1 + 2^-22. In the other
        // order, 1 comes first and each 2^-25 is below sm_80's window (multiples of 2^-24): 1.
        // sm_90 (one block of 16, multiples of 2^-25) keeps them in either order: 1 + 2^-22.
        let (s, t, one, z) = (f16(2f32.powi(-13)), f16(2f32.powi(-12)), f16(1.0), 0);
        let mut a = vec![s; 8];
        a.extend([one, z, z, z, z, z, z, z]);
        let mut b = vec![t; 8];
        b.extend([one, z, z, z, z, z, z, z]);
        let (ra, rb): (Vec<u32>, Vec<u32>) = (a.iter().rev().copied().collect(), b.iter().rev().copied().collect());
        let want = 1.0 + 2f32.powi(-22);
        assert_eq!(f32::from_bits(TensorCores::Sm80.dot(Format::F16, &a, &b, 0)), want);
        assert_eq!(f32::from_bits(TensorCores::Sm80.dot(Format::F16, &ra, &rb, 0)), 1.0);
        assert_eq!(f32::from_bits(TensorCores::Sm90.dot(Format::F16, &a, &b, 0)), want);
        assert_eq!(f32::from_bits(TensorCores::Sm90.dot(Format::F16, &ra, &rb, 0)), want);
    }

    #[test]
    fn special_values() {
        let (one, inf, ninf, nan, zero) = (f16(1.0), 0x7c00, 0xfc00, 0x7e00, 0);
        let tc = TensorCores::Sm90;
        assert_eq!(tc.dot(Format::F16, &[inf, one], &[one, one], 0), POS_INF);
        assert_eq!(tc.dot(Format::F16, &[inf, ninf], &[one, one], 0), CANONICAL_NAN);
        assert_eq!(tc.dot(Format::F16, &[inf], &[zero], 0), CANONICAL_NAN);
        assert_eq!(tc.dot(Format::F16, &[nan], &[one], 0), CANONICAL_NAN);
        assert_eq!(tc.dot(Format::F16, &[one], &[one], f32::NEG_INFINITY.to_bits()), NEG_INF);
        assert_eq!(tc.dot(Format::F16, &[zero], &[one], (-0.0f32).to_bits()), 0);
        // Overflow: 2^127 * 2 + 2^127 * 2 (tf32 products) is 2^129: Inf.
        let big = 2f32.powi(127).to_bits();
        let two = 2f32.to_bits();
        assert_eq!(tc.dot(Format::TF32, &[big, big], &[two, two], 0), POS_INF);
        // An f32 NaN whose payload lies in the ignored tf32 bits is still a NaN.
        assert_eq!(tc.dot(Format::TF32, &[0x7f80_0001], &[two], 0), CANONICAL_NAN);
    }

    #[test]
    fn tf32_ignores_the_low_13_bits_and_subnormal_results_survive() {
        let x = 1.0f32.to_bits() | 0x1fff;
        assert_eq!(f32::from_bits(TensorCores::Sm80.dot(Format::TF32, &[x], &[x], 0)), 1.0);
        // 2^-70 * 2^-70 = 2^-140: E is clamped to -133, the lsb is 2^-158, the result subnormal.
        let s = 2f32.powi(-70).to_bits();
        assert_eq!(f32::from_bits(TensorCores::Sm90.dot(Format::TF32, &[s], &[s], 0)), 2f32.powi(-140));
        // -2^-152 truncates to -0.
        let t = 2f32.powi(-76).to_bits();
        let nt = (-(2f32.powi(-76))).to_bits();
        assert_eq!(TensorCores::Sm90.dot(Format::TF32, &[t], &[nt], 0), 0x8000_0000);
    }
}
