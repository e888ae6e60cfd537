//! The evaluator against bit patterns an NVIDIA H100 computed (tests/hardware/h100/ops; each case
//! cites its run id and element, `add_f64[3594]` being element 3594 of the run `add_f64`, whose
//! inputs and GPU output are named in `tests/hardware/h100/ops/manifest.json`). One test per rule
//! of docs/language.md "Semantics": NaN results per op and type, float → int conversions of NaN,
//! NaN through float → float conversions, `.ftz` flushing before rounding, and the conversions to
//! bf16 that round through f32.

use kir_ir::eval::eval;
use kir_ir::{BinOp, FloatFlags, FloatMode, Op, Rounding, ScalarType as T, UnOp};

const MODES: [Rounding; 4] = [Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp];

fn fl(r: Rounding, ftz: bool) -> FloatFlags {
    FloatFlags { mode: FloatMode::Exact(r), ftz }
}
/// `op` on `ty` in every rounding mode: all four must give `want`.
fn bin_all(op: BinOp, ty: T, a: u64, b: u64, want: u64, case: &str) {
    for r in MODES {
        let got = eval(&Op::Bin(op, ty, fl(r, false)), &[a, b]);
        assert_eq!(got, want, "{case} ({r:?}): {got:#x}, want {want:#x}");
    }
}
fn fma_all(ty: T, a: u64, b: u64, c: u64, want: u64, case: &str) {
    for r in MODES {
        let got = eval(&Op::Fma(ty, fl(r, false)), &[a, b, c]);
        assert_eq!(got, want, "{case} ({r:?}): {got:#x}, want {want:#x}");
    }
}
fn un_all(op: UnOp, ty: T, a: u64, want: u64, case: &str) {
    for r in MODES {
        let got = eval(&Op::Unary(op, ty, fl(r, false)), &[a]);
        assert_eq!(got, want, "{case} ({r:?}): {got:#x}, want {want:#x}");
    }
}
fn cvt(to: T, from: T, rounding: Option<Rounding>, sat: bool, ftz: bool, a: u64) -> u64 {
    eval(&Op::Cvt { to, from, rounding, sat, ftz }, &[a])
}

const F64_DEFAULT_NAN: u64 = 0xfff8_0000_0000_0000;

#[test]
fn f64_add_sub_mul_return_b_then_a_quieted() {
    // One NaN operand: returned quieted, sign and payload kept.
    bin_all(BinOp::Add, T::F64, 0x7ff0_0000_0000_0001, 0, 0x7ff8_0000_0000_0001, "add_f64[3944]");
    bin_all(BinOp::Mul, T::F64, 0, 0x7ff0_0000_0000_0001, 0x7ff8_0000_0000_0001, "mul_f64[58]");
    // Two NaNs: b wins, whatever its sign or signaling bit.
    bin_all(BinOp::Add, T::F64, 0x7ff8_0000_0000_0000, 0xfff8_0000_0000_0000, 0xfff8_0000_0000_0000, "add_f64[3589]");
    bin_all(BinOp::Add, T::F64, 0x7ff8_0000_0000_0000, 0x7ff0_0000_0000_0001, 0x7ff8_0000_0000_0001, "add_f64[3594]");
    bin_all(BinOp::Mul, T::F64, 0x7ff8_0000_0000_0000, 0xfff8_0000_0000_0000, 0xfff8_0000_0000_0000, "mul_f64[3589]");
    bin_all(
        BinOp::Mul,
        T::F64,
        0x7ff0_0000_0000_0001,
        0x7ff8_0000_0000_0000,
        0x7ff8_0000_0000_0000,
        "mul_rz_f64[3996]",
    );
    // sub returns a NaN b as it is, not negated.
    bin_all(BinOp::Sub, T::F64, 0, 0xfff8_0000_0000_0000, 0xfff8_0000_0000_0000, "sub_f64[53]");
    bin_all(
        BinOp::Sub,
        T::F64,
        0x7ff8_0000_0000_0000,
        0xfff8_0000_0000_0000,
        0xfff8_0000_0000_0000,
        "sub_rz_f64[3589]",
    );
    bin_all(
        BinOp::Sub,
        T::F64,
        0x7ff0_0000_0000_0001,
        0x7ff8_0000_0000_0000,
        0x7ff8_0000_0000_0000,
        "sub_rm_f64[3996]",
    );
}

#[test]
fn f64_div_returns_a_then_b_quieted() {
    bin_all(BinOp::Div, T::F64, 0x7ff8_0000_0000_0000, 0xfff8_0000_0000_0000, 0x7ff8_0000_0000_0000, "div_f64[3589]");
    bin_all(
        BinOp::Div,
        T::F64,
        0x7ff0_0000_0000_0001,
        0x7ff8_0000_0000_0000,
        0x7ff8_0000_0000_0001,
        "div_rp_f64[3996]",
    );
    bin_all(BinOp::Div, T::F64, 0, 0x7ff0_0000_0000_0001, 0x7ff8_0000_0000_0001, "div_f64[58]");
}

#[test]
fn f64_fma_returns_b_then_c_then_a_quieted() {
    fma_all(
        T::F64,
        0xfff1_7225_3c18_22db,
        0x7ff7_8201_c154_6e2e,
        0xfffd_143d_02e1_0faa,
        0x7fff_8201_c154_6e2e,
        "fma_f64[7342]",
    );
    fma_all(T::F64, 0x7ff8_0000_0000_0000, 0, 0xfff0_0000_0000_0001, 0xfff8_0000_0000_0001, "fma_f64[3342]");
    // 0 * inf + NaN: the NaN operand, not the default NaN.
    fma_all(T::F64, 0, 0x7ff0_0000_0000_0000, 0x7ff8_0000_0000_0000, 0x7ff8_0000_0000_0000, "fma_rm_f64[189]");
}

#[test]
fn f64_invalid_operations_give_the_negative_default_nan() {
    bin_all(BinOp::Add, T::F64, 0x7ff0_0000_0000_0000, 0xfff0_0000_0000_0000, F64_DEFAULT_NAN, "add_rm_f64[3451]");
    bin_all(BinOp::Mul, T::F64, 0, 0x7ff0_0000_0000_0000, F64_DEFAULT_NAN, "mul_rp_f64[50]");
    bin_all(BinOp::Div, T::F64, 0, 0, F64_DEFAULT_NAN, "div_f64[0]");
    bin_all(BinOp::Div, T::F64, 0x7ff0_0000_0000_0000, 0x7ff0_0000_0000_0000, F64_DEFAULT_NAN, "div_rz_f64[3450]");
    fma_all(T::F64, 0, 0x7ff0_0000_0000_0000, 0, F64_DEFAULT_NAN, "fma_rn_f64[176]");
    un_all(UnOp::Sqrt, T::F64, 0x8000_0000_0000_0001, F64_DEFAULT_NAN, "sqrt_rp_f64[3]");
    // inf - inf via sub.
    bin_all(BinOp::Sub, T::F64, 0x7ff0_0000_0000_0000, 0x7ff0_0000_0000_0000, F64_DEFAULT_NAN, "sub: inf - inf");
}

#[test]
fn f64_sqrt_and_rcp_quiet_their_nan() {
    un_all(UnOp::Sqrt, T::F64, 0x7ff0_0000_0000_0001, 0x7ff8_0000_0000_0001, "sqrt_f64[58]");
    un_all(UnOp::Rcp, T::F64, 0x7ff0_0000_0000_0001, 0x7ff8_0000_0000_0001, "rcp_f64[58]");
}

#[test]
fn f64_min_max_ignore_one_nan_and_return_b_quieted_for_two() {
    bin_all(BinOp::Min, T::F64, 0, 0x7ff8_0000_0000_0000, 0, "min_f64[52]");
    bin_all(BinOp::Min, T::F64, 0x7ff8_0000_0000_0000, 0xfff8_0000_0000_0000, 0xfff8_0000_0000_0000, "min_f64[3589]");
    bin_all(BinOp::Min, T::F64, 0x7ff8_0000_0000_0000, 0x7ff8_0000_0000_0001, 0x7ff8_0000_0000_0001, "min_f64[3590]");
    bin_all(BinOp::Max, T::F64, 0x7ff8_0000_0000_0000, 0x7ff0_0000_0000_0001, 0x7ff8_0000_0000_0001, "max_f64[3594]");
}

#[test]
fn f16_bf16_f32_nan_results_are_canonical() {
    bin_all(BinOp::Add, T::F32, 0x7f80_0001, 0, 0x7fff_ffff, "add_f32[3944]");
    bin_all(BinOp::Mul, T::F32, 0, 0x7f80_0000, 0x7fff_ffff, "mul_rz_f32[50]");
    bin_all(BinOp::Max, T::F32, 0x7fc0_0000, 0xffc0_0000, 0x7fff_ffff, "max_f32[3589]");
    bin_all(BinOp::Mul, T::BF16, 0x7fc0, 0, 0x7fff, "mul_rz_bf16[3328]");
    fma_all(T::F16, 0, 0, 0x7e00, 0x7fff, "fma_f16[13]");
    un_all(UnOp::Sqrt, T::F32, 0xbf80_0000, 0x7fff_ffff, "sqrt_f32[15]");
    for ftz in [false, true] {
        let got = eval(&Op::Bin(BinOp::Div, T::F32, fl(Rounding::Rn, ftz)), &[0x7fc1_2345, 0x3f80_0000]);
        assert_eq!(got, 0x7fff_ffff, "div.f32 ftz={ftz}");
    }
}

#[test]
fn neg_and_abs_keep_nan_payloads() {
    un_all(UnOp::Neg, T::F64, 0x7ff0_0000_0000_0001, 0xfff0_0000_0000_0001, "neg_f64[58]");
    un_all(UnOp::Abs, T::F16, 0xfc01, 0x7c01, "abs_f16[64513]");
}

#[test]
fn ftz_mul_and_div_flush_results_subnormal_before_rounding() {
    // 2^-126 * (1 - 2^-24) rounds to 2^-126 in rn (and away from zero in rp/rm), but the exact
    // product is subnormal: flushed to a zero of its sign, in every mode.
    let m = |r, a, b| eval(&Op::Bin(BinOp::Mul, T::F32, fl(r, true)), &[a, b]);
    for r in MODES {
        assert_eq!(m(r, 0x0080_0000, 0x3f7f_ffff), 0, "mul_ftz_f32[698] {r:?}");
        assert_eq!(m(r, 0x0080_0000, 0xbf7f_ffff), 0x8000_0000, "mul_ftz_f32[699] {r:?}");
        assert_eq!(m(r, 0x8080_0000, 0x3f7f_ffff), 0x8000_0000, "mul_ftz_f32[766] {r:?}");
        assert_eq!(m(r, 0x8080_0000, 0xbf7f_ffff), 0, "mul_ftz_f32[767] {r:?}");
        // Exactly 2^-126 stays.
        assert_eq!(m(r, 0x0080_0000, 0x3f80_0000), 0x0080_0000, "2^-126 * 1 {r:?}");
    }
    // Without .ftz the same product rounds to the smallest normal (rn).
    assert_eq!(eval(&Op::Bin(BinOp::Mul, T::F32, fl(Rounding::Rn, false)), &[0x0080_0000, 0x3f7f_ffff]), 0x0080_0000);
    let d = |r, a, b| eval(&Op::Bin(BinOp::Div, T::F32, fl(r, true)), &[a, b]);
    for r in MODES {
        assert_eq!(d(r, 0x0080_0000, 0x3f80_0001), 0, "div_ftz_f32[696] {r:?}");
        assert_eq!(d(r, 0x0080_0000, 0xbf80_0001), 0x8000_0000, "div_rp_ftz_f32[697] {r:?}");
        assert_eq!(d(r, 0x8080_0000, 0x3f80_0001), 0x8000_0000, "div_rp_ftz_f32[764] {r:?}");
        assert_eq!(d(r, 0x8080_0000, 0xbf80_0001), 0, "div_rp_ftz_f32[765] {r:?}");
    }
}

#[test]
fn float_to_int_nan() {
    let rs = [None, Some(Rounding::Rni), Some(Rounding::Rzi), Some(Rounding::Rmi), Some(Rounding::Rpi)];
    for r in rs {
        for sat in [false, true] {
            // To 64 bits: 0x8000000000000000 from every float type, signed or unsigned.
            assert_eq!(cvt(T::S64, T::F32, r, sat, false, 0x7fc0_0000), 1 << 63, "cvt_s64_f32[52]");
            assert_eq!(cvt(T::U64, T::F16, r, sat, false, 0x7c01), 1 << 63, "cvt_rni_sat_u64_f16[3976]");
            assert_eq!(cvt(T::U64, T::BF16, r, sat, false, 0xff81), 1 << 63, "cvt_u64_bf16");
            assert_eq!(cvt(T::S64, T::F64, r, sat, false, 0x7ff8_0000_0000_0000), 1 << 63, "cvt_s64_f64[52]");
            // From f64 to 8/16/32 bits: the destination's sign bit, signed or unsigned.
            assert_eq!(cvt(T::U8, T::F64, r, sat, false, 0x7ff8_0000_0000_0000), 0x80, "cvt_u8_f64[52]");
            assert_eq!(cvt(T::S16, T::F64, r, sat, false, 0x7ff8_0000_0000_0000), 0x8000, "cvt_sat_s16_f64[52]");
            assert_eq!(cvt(T::U32, T::F64, r, sat, false, 0xfff0_0000_0000_0001), 0x8000_0000, "cvt_rpi_u32_f64");
            // From f16/bf16/f32 to 8/16/32 bits: 0.
            assert_eq!(cvt(T::S32, T::F32, r, sat, false, 0x7fc0_0000), 0, "cvt_s32_f32[52]");
            assert_eq!(cvt(T::U8, T::BF16, r, sat, false, 0x7f81), 0, "cvt_rzi_sat_u8_bf16[4872]");
            assert_eq!(cvt(T::S16, T::F16, r, sat, false, 0xfe00), 0, "cvt_s16_f16");
        }
        assert_eq!(cvt(T::S64, T::F32, r, false, true, 0xffc0_0001), 1 << 63, "cvt_ftz_s64_f32");
    }
}

#[test]
fn float_to_float_nan() {
    let c = |to, from, r, ftz, a| cvt(to, from, r, false, ftz, a);
    // Widening to f64: f32 and bf16 payloads move up, quieted, sign kept.
    assert_eq!(c(T::F64, T::F32, None, false, 0xffc0_0001), 0xfff8_0000_2000_0000, "cvt_f64_f32[55]");
    assert_eq!(c(T::F64, T::F32, None, false, 0x7f80_0001), 0x7ff8_0000_2000_0000, "cvt_f64_f32 sNaN");
    assert_eq!(c(T::F64, T::BF16, None, false, 0x7f81), 0x7ff8_2000_0000_0000, "cvt_f64_bf16[32641]");
    // ... but f16, and f32 with .ftz, give the canonical f32 NaN widened.
    assert_eq!(c(T::F64, T::F32, None, true, 0xffc0_0001), 0x7fff_ffff_e000_0000, "cvt_ftz_f64_f32[55]");
    assert_eq!(c(T::F64, T::F16, None, false, 0x7c01), 0x7fff_ffff_e000_0000, "cvt_f64_f16[31745]");
    // bf16 → f32 keeps the bits (not even quieted), except with .ftz.
    assert_eq!(c(T::F32, T::BF16, None, false, 0x7f81), 0x7f81_0000, "cvt_f32_bf16[32641]");
    assert_eq!(c(T::F32, T::BF16, None, true, 0x7f81), 0x7fff_ffff, "cvt_ftz_f32_bf16[32641]");
    assert_eq!(c(T::F32, T::F16, None, false, 0x7c01), 0x7fff_ffff, "cvt_f32_f16[31745]");
    // Narrowing from f64 keeps the top of the payload, quieted, with its sign (not to bf16).
    for r in [None, Some(Rounding::Rz), Some(Rounding::Rm), Some(Rounding::Rp)] {
        for ftz in [false, true] {
            assert_eq!(c(T::F32, T::F64, r, ftz, 0xfff8_0000_0000_0001), 0xffc0_0000, "cvt_f32_f64[55]");
        }
        assert_eq!(c(T::F16, T::F64, r, false, 0xfff8_0000_0000_0001), 0xfe00, "cvt_rz_f16_f64[55]");
        assert_eq!(c(T::F16, T::F64, r, false, 0x7ff8_0000_0000_0000), 0x7e00, "cvt_f16_f64[52]");
        assert_eq!(c(T::BF16, T::F64, r, false, 0xfff8_0000_0000_0001), 0x7fff, "cvt_bf16_f64[55]");
        assert_eq!(c(T::F16, T::F32, r, false, 0xffc0_0001), 0x7fff, "cvt_rn_f16_f32[55]");
    }
    // Same type: f64 quiets, the others canonicalize (integral roundings too).
    assert_eq!(c(T::F64, T::F64, None, false, 0xfff8_0000_0000_0001), 0xfff8_0000_0000_0001, "cvt_f64_f64[55]");
    assert_eq!(
        c(T::F64, T::F64, Some(Rounding::Rni), false, 0x7ff0_0000_0000_0001),
        0x7ff8_0000_0000_0001,
        "cvt_rni_f64_f64"
    );
    assert_eq!(c(T::F32, T::F32, Some(Rounding::Rzi), false, 0x7fc0_0001), 0x7fff_ffff, "cvt_rzi_f32_f32");
    assert_eq!(c(T::F16, T::F16, None, false, 0x7e01), 0x7fff, "cvt_f16_f16");
    // .sat: +0.
    assert_eq!(cvt(T::F32, T::F64, None, true, false, 0xfff8_0000_0000_0001), 0, "cvt_sat_f32_f64[55]");
    assert_eq!(cvt(T::F64, T::F32, None, true, false, 0x7fc0_0000), 0, "cvt_sat_f64_f32");
}

#[test]
fn conversions_to_bf16_from_ints_and_f64_round_through_f32() {
    // -1782579201 = -(0xd4 * 2^23 + 2^22 + 1): rounds up once, but to f32 it is
    // -(0xd48000 * 2^7), a tie in bf16 that rounds to even (down).
    assert_eq!(cvt(T::BF16, T::S32, None, false, false, 0x95bf_ffff), 0xced4, "cvt_bf16_s32[639]");
    assert_eq!(cvt(T::BF16, T::S32, Some(Rounding::Rn), false, false, 0x95bf_ffff), 0xced4, "cvt_rn_bf16_s32[639]");
    assert_eq!(cvt(T::BF16, T::S64, None, false, false, 0xb540_0000_0000_0001), 0xde96, "cvt_bf16_s64[728]");
    assert_eq!(cvt(T::BF16, T::U32, None, false, false, 0x6a40_0001), 0x4ed4, "cvt_bf16_u32: same lowering");
    // 127.25 + 2^-46: rounds to f32 127.25, a tie in bf16 that goes to even 127.
    assert_eq!(cvt(T::BF16, T::F64, None, false, false, 0x405f_d000_0000_0001), 0x42fe, "cvt_bf16_f64[339]");
    assert_eq!(cvt(T::BF16, T::F64, None, true, false, 0x3ee0_efff_ffff_ffff), 0x3708, "cvt_sat_bf16_f64[1043]");
    // The directed roundings compose: one rounding.
    assert_eq!(cvt(T::BF16, T::F64, Some(Rounding::Rp), false, false, 0x405f_d000_0000_0001), 0x42ff);
    assert_eq!(cvt(T::BF16, T::S32, Some(Rounding::Rz), false, false, 0x95bf_ffff), 0xced4);
    assert_eq!(cvt(T::BF16, T::S32, Some(Rounding::Rm), false, false, 0x95bf_ffff), 0xced5);
    // f16 from ints is one rounding (every integer below f16's overflow is exact in f32).
    assert_eq!(cvt(T::F16, T::S32, None, false, false, 2049), 0x6800);
}
