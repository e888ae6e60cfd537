//! Float semantics of `kir_ir::eval` against hand-computed values: rounding modes, fma, f16/bf16,
//! NaN and signed zero, comparisons, conversions, approximate ops and their bounds.

use kir_ir::eval::{eval, max_ulp_error, within_error_bound};
use kir_ir::{BinOp, CmpOp, FloatFlags, FloatMode, Op, Rounding, ScalarType as T, UnOp};

const MODES: [Rounding; 4] = [Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp];

fn fl(r: Rounding) -> FloatFlags {
    FloatFlags { mode: FloatMode::Exact(r), ftz: false }
}
fn bin_r(op: BinOp, ty: T, r: Rounding, a: u64, b: u64) -> u64 {
    eval(&Op::Bin(op, ty, fl(r)), &[a, b])
}
/// The results in modes rn, rz, rm, rp.
fn modes(op: BinOp, ty: T, a: u64, b: u64) -> [u64; 4] {
    MODES.map(|r| bin_r(op, ty, r, a, b))
}
fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}
fn f64b(x: f64) -> u64 {
    x.to_bits()
}
fn cvt(to: T, from: T, rounding: Option<Rounding>, sat: bool, a: u64) -> u64 {
    eval(&Op::Cvt { to, from, rounding, sat, ftz: false }, &[a])
}

#[test]
fn f32_add_rounding_modes_differ_on_one_plus_tiny() {
    let tiny = f32b(2f32.powi(-30));
    let one = f32b(1.0);
    // 1 + 2^-30: rn, rz, rm give 1.0; rp gives the next float.
    assert_eq!(modes(BinOp::Add, T::F32, one, tiny), [0x3f80_0000, 0x3f80_0000, 0x3f80_0000, 0x3f80_0001]);
    // 1 - 2^-30: rn and rp give 1.0; rz and rm give the float below.
    assert_eq!(modes(BinOp::Sub, T::F32, one, tiny), [0x3f80_0000, 0x3f7f_ffff, 0x3f7f_ffff, 0x3f80_0000]);
    // Negative: -1 - 2^-30: rm goes away from zero.
    let m1 = f32b(-1.0);
    assert_eq!(modes(BinOp::Sub, T::F32, m1, tiny), [0xbf80_0000, 0xbf80_0000, 0xbf80_0001, 0xbf80_0000]);
}

#[test]
fn f64_add_mul_div_rounding_modes() {
    let one = f64b(1.0);
    let tiny = f64b(2f64.powi(-60));
    assert_eq!(
        modes(BinOp::Add, T::F64, one, tiny),
        [0x3ff0_0000_0000_0000, 0x3ff0_0000_0000_0000, 0x3ff0_0000_0000_0000, 0x3ff0_0000_0000_0001]
    );
    assert_eq!(
        modes(BinOp::Sub, T::F64, f64b(-1.0), tiny),
        [0xbff0_0000_0000_0000, 0xbff0_0000_0000_0000, 0xbff0_0000_0000_0001, 0xbff0_0000_0000_0000]
    );
    // (1 + 2^-52)^2 = 1 + 2^-51 + 2^-104.
    let a = f64b(1.0 + f64::EPSILON);
    assert_eq!(
        modes(BinOp::Mul, T::F64, a, a),
        [0x3ff0_0000_0000_0002, 0x3ff0_0000_0000_0002, 0x3ff0_0000_0000_0002, 0x3ff0_0000_0000_0003]
    );
    // 1/3.
    assert_eq!(
        modes(BinOp::Div, T::F64, one, f64b(3.0)),
        [0x3fd5_5555_5555_5555, 0x3fd5_5555_5555_5555, 0x3fd5_5555_5555_5555, 0x3fd5_5555_5555_5556]
    );
    assert_eq!(
        modes(BinOp::Div, T::F64, f64b(-1.0), f64b(3.0)),
        [0xbfd5_5555_5555_5555, 0xbfd5_5555_5555_5555, 0xbfd5_5555_5555_5556, 0xbfd5_5555_5555_5555]
    );
    // 2/3 rounds up under rn.
    assert_eq!(
        modes(BinOp::Div, T::F64, f64b(2.0), f64b(3.0)),
        [0x3fe5_5555_5555_5555, 0x3fe5_5555_5555_5555, 0x3fe5_5555_5555_5555, 0x3fe5_5555_5555_5556]
    );
}

#[test]
fn f32_div_sqrt_rcp_rounding_modes() {
    assert_eq!(modes(BinOp::Div, T::F32, f32b(1.0), f32b(3.0)), [0x3eaa_aaab, 0x3eaa_aaaa, 0x3eaa_aaaa, 0x3eaa_aaab]);
    let sqrt = |r, a| eval(&Op::Unary(UnOp::Sqrt, T::F32, fl(r)), &[a]);
    assert_eq!(MODES.map(|r| sqrt(r, f32b(2.0))), [0x3fb5_04f3, 0x3fb5_04f3, 0x3fb5_04f3, 0x3fb5_04f4]);
    assert_eq!(MODES.map(|r| sqrt(r, f32b(4.0))), [0x4000_0000; 4]);
    assert_eq!(sqrt(Rounding::Rn, f32b(-0.0)), 0x8000_0000);
    assert_eq!(sqrt(Rounding::Rz, f32b(-1.0)), 0x7fff_ffff);
    let rcp = |r, a| eval(&Op::Unary(UnOp::Rcp, T::F32, fl(r)), &[a]);
    assert_eq!(MODES.map(|r| rcp(r, f32b(3.0))), [0x3eaa_aaab, 0x3eaa_aaaa, 0x3eaa_aaaa, 0x3eaa_aaab]);
    assert_eq!(rcp(Rounding::Rn, f32b(-0.0)), f32b(f32::NEG_INFINITY));
    let sqrt64 = |r, a| eval(&Op::Unary(UnOp::Sqrt, T::F64, fl(r)), &[a]);
    // sqrt(2) = 0x3ff6a09e667f3bcc|c9...: rn and rz/rm agree, rp is one above.
    assert_eq!(
        MODES.map(|r| sqrt64(r, f64b(2.0))),
        [0x3ff6_a09e_667f_3bcd, 0x3ff6_a09e_667f_3bcc, 0x3ff6_a09e_667f_3bcc, 0x3ff6_a09e_667f_3bcd]
    );
}

#[test]
fn overflow_goes_to_inf_or_max_per_mode() {
    let max = f32b(f32::MAX);
    assert_eq!(modes(BinOp::Add, T::F32, max, max), [0x7f80_0000, 0x7f7f_ffff, 0x7f7f_ffff, 0x7f80_0000]);
    let nmax = f32b(-f32::MAX);
    assert_eq!(modes(BinOp::Add, T::F32, nmax, nmax), [0xff80_0000, 0xff7f_ffff, 0xff80_0000, 0xff7f_ffff]);
    let m64 = f64b(f64::MAX);
    assert_eq!(
        modes(BinOp::Mul, T::F64, m64, f64b(2.0)),
        [0x7ff0_0000_0000_0000, 0x7fef_ffff_ffff_ffff, 0x7fef_ffff_ffff_ffff, 0x7ff0_0000_0000_0000]
    );
}

#[test]
fn subnormal_results_and_ftz() {
    let min_sub = 1u64; // 2^-149
    let half = f32b(0.5);
    // 2^-150 is a tie between 0 and 2^-149: even is 0.
    assert_eq!(modes(BinOp::Mul, T::F32, min_sub, half), [0, 0, 0, 1]);
    assert_eq!(
        modes(BinOp::Mul, T::F32, min_sub | 0x8000_0000, half),
        [0x8000_0000, 0x8000_0000, 0x8000_0001, 0x8000_0000]
    );
    // 2^-126 * 0.5 is subnormal: kept, or flushed to +0 with .ftz.
    let min_norm = f32b(f32::MIN_POSITIVE);
    assert_eq!(bin_r(BinOp::Mul, T::F32, Rounding::Rn, min_norm, half), 0x0040_0000);
    let ftz = FloatFlags { mode: FloatMode::RN, ftz: true };
    assert_eq!(eval(&Op::Bin(BinOp::Mul, T::F32, ftz), &[min_norm, half]), 0);
    assert_eq!(eval(&Op::Bin(BinOp::Mul, T::F32, ftz), &[min_norm | 0x8000_0000, half]), 0x8000_0000);
    // Subnormal inputs are flushed too.
    assert_eq!(eval(&Op::Bin(BinOp::Add, T::F32, ftz), &[min_sub, min_sub]), 0);
    assert_eq!(bin_r(BinOp::Add, T::F32, Rounding::Rn, min_sub, min_sub), 2);
    // .ftz is a no-op on f64.
    let ftz64 = Op::Bin(BinOp::Add, T::F64, ftz);
    assert_eq!(eval(&ftz64, &[1, 1]), 2);
}

#[test]
fn signed_zero_in_add_and_sub() {
    let (pz, nz) = (f32b(0.0), f32b(-0.0));
    assert_eq!(modes(BinOp::Add, T::F32, nz, pz), [pz, pz, nz, pz]);
    assert_eq!(modes(BinOp::Add, T::F32, pz, nz), [pz, pz, nz, pz]);
    assert_eq!(modes(BinOp::Add, T::F32, nz, nz), [nz; 4]);
    assert_eq!(modes(BinOp::Add, T::F32, pz, pz), [pz; 4]);
    assert_eq!(modes(BinOp::Sub, T::F32, f32b(1.0), f32b(1.0)), [pz, pz, nz, pz]);
    assert_eq!(modes(BinOp::Add, T::F64, f64b(1.5), f64b(-1.5)), [0, 0, 1 << 63, 0]);
    assert_eq!(modes(BinOp::Mul, T::F32, nz, f32b(3.0)), [nz; 4]);
}

#[test]
fn fma_rounds_once() {
    // a = 1 + 2^-12: a*a = 1 + 2^-11 + 2^-24; mul rounds (tie, to even) to 1 + 2^-11.
    let a = f32b(1.0 + 2f32.powi(-12));
    let c = f32b(-(1.0 + 2f32.powi(-11)));
    let fma = |ty, r, a, b, c| eval(&Op::Fma(ty, fl(r)), &[a, b, c]);
    assert_eq!(fma(T::F32, Rounding::Rn, a, a, c), f32b(2f32.powi(-24)));
    let p = bin_r(BinOp::Mul, T::F32, Rounding::Rn, a, a);
    assert_eq!(bin_r(BinOp::Add, T::F32, Rounding::Rn, p, c), 0);
    // The same in f64 with a = 1 + 2^-27.
    let a = f64b(1.0 + 2f64.powi(-27));
    let c = f64b(-(1.0 + 2f64.powi(-26)));
    assert_eq!(fma(T::F64, Rounding::Rn, a, a, c), f64b(2f64.powi(-54)));
    let p = bin_r(BinOp::Mul, T::F64, Rounding::Rn, a, a);
    assert_eq!(bin_r(BinOp::Add, T::F64, Rounding::Rn, p, c), 0);
    // Directed fma: 1 * 1 + 2^-30 in f32.
    let (one, tiny) = (f32b(1.0), f32b(2f32.powi(-30)));
    assert_eq!(MODES.map(|r| fma(T::F32, r, one, one, tiny)), [0x3f80_0000, 0x3f80_0000, 0x3f80_0000, 0x3f80_0001]);
    // Directed f64 fma with an inexact product: (1+2^-52)^2 - 1 = 2^-51 + 2^-104, exact in f64? No:
    // it needs 54 bits, so rp rounds up and rz down.
    let a = f64b(1.0 + f64::EPSILON);
    let r = MODES.map(|r| fma(T::F64, r, a, a, f64b(-1.0)));
    assert_eq!(r[1], f64b(2f64.powi(-51)));
    assert_eq!(r[3], f64b(2f64.powi(-51)) + 1);
    assert_eq!(r[0], f64b(2f64.powi(-51)));
    // Exact zero sum: +0 except under rm.
    let (pz, nz) = (f32b(0.0), f32b(-0.0));
    assert_eq!(MODES.map(|r| fma(T::F32, r, one, one, f32b(-1.0))), [pz, pz, nz, pz]);
    assert_eq!(MODES.map(|r| fma(T::F32, r, nz, one, nz)), [nz; 4]);
    // inf * 0 + c is NaN; inf + -inf is NaN.
    let inf = f32b(f32::INFINITY);
    assert_eq!(fma(T::F32, Rounding::Rz, inf, pz, one), 0x7fff_ffff);
    assert_eq!(fma(T::F32, Rounding::Rz, inf, one, f32b(f32::NEG_INFINITY)), 0x7fff_ffff);
}

#[test]
fn f16_arithmetic_edges() {
    let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
    // Overflow: 65504 + 16 = 65520 is the tie between 65504 and 2^16: rounds to inf.
    assert_eq!(modes(BinOp::Add, T::F16, h(65504.0), h(16.0)), [0x7c00, 0x7bff, 0x7bff, 0x7c00]);
    assert_eq!(bin_r(BinOp::Add, T::F16, Rounding::Rn, h(65504.0), h(15.0)), 0x7bff);
    // Ties to even: 2049 → 2048, 2051 → 2052.
    assert_eq!(bin_r(BinOp::Add, T::F16, Rounding::Rn, h(2048.0), h(1.0)), h(2048.0));
    assert_eq!(bin_r(BinOp::Add, T::F16, Rounding::Rn, h(2050.0), h(1.0)), h(2052.0));
    assert_eq!(modes(BinOp::Add, T::F16, h(2048.0), h(1.0)), [0x6800, 0x6800, 0x6800, 0x6801]);
    // Subnormals.
    assert_eq!(bin_r(BinOp::Add, T::F16, Rounding::Rn, 1, 1), 2);
    assert_eq!(bin_r(BinOp::Mul, T::F16, Rounding::Rn, 0x0400, h(0.5)), 0x0200);
    assert_eq!(modes(BinOp::Mul, T::F16, 1, h(0.5)), [0, 0, 0, 1]);
    // fma rounds once: a = 1 + 2^-6, a*a - (1 + 2^-5) = 2^-12.
    let a = h(1.0 + 2f32.powi(-6));
    let c = h(-(1.0 + 2f32.powi(-5)));
    assert_eq!(eval(&Op::Fma(T::F16, FloatFlags::RN), &[a, a, c]), 0x0c00);
    let p = bin_r(BinOp::Mul, T::F16, Rounding::Rn, a, a);
    assert_eq!(bin_r(BinOp::Add, T::F16, Rounding::Rn, p, c), 0);
    // NaN results are the canonical f16 NaN.
    assert_eq!(bin_r(BinOp::Add, T::F16, Rounding::Rn, 0x7c00, 0xfc00), 0x7fff);
    assert_eq!(bin_r(BinOp::Mul, T::F16, Rounding::Rz, 0x7e01, h(1.0)), 0x7fff);
}

#[test]
fn bf16_arithmetic_edges() {
    // 1 + 2^-8 is a tie in bf16 (ulp 2^-7): even is 1.0; rp rounds up.
    assert_eq!(modes(BinOp::Add, T::BF16, 0x3f80, 0x3b80), [0x3f80, 0x3f80, 0x3f80, 0x3f81]);
    // 1 + 3*2^-9 is above the tie.
    assert_eq!(bin_r(BinOp::Add, T::BF16, Rounding::Rn, 0x3f80, 0x3bc0), 0x3f81);
    // 1 + 3*2^-8 is a tie between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
    assert_eq!(bin_r(BinOp::Add, T::BF16, Rounding::Rn, 0x3f80, 0x3c40), 0x3f82);
    // Overflow.
    assert_eq!(modes(BinOp::Add, T::BF16, 0x7f7f, 0x7f7f), [0x7f80, 0x7f7f, 0x7f7f, 0x7f80]);
    // Multiplication: 1.5 * 1.5 = 2.25 exactly.
    assert_eq!(bin_r(BinOp::Mul, T::BF16, Rounding::Rn, 0x3fc0, 0x3fc0), 0x4010);
    // fma of bf16: 1*1 + 2^-9 rounds to 1 (rn), up (rp).
    let fma = |r| eval(&Op::Fma(T::BF16, fl(r)), &[0x3f80, 0x3f80, 0x3b00]);
    assert_eq!(MODES.map(fma), [0x3f80, 0x3f80, 0x3f80, 0x3f81]);
    assert_eq!(bin_r(BinOp::Div, T::BF16, Rounding::Rz, 0x7fc0, 0x3f80), 0x7fff);
}

#[test]
fn nan_results_and_neg_abs_keep_payload() {
    // f32: the canonical NaN; f64: the H100's default NaN for invalid operations (more in
    // eval_hardware.rs).
    let payload = 0x7fc0_0001u64;
    assert_eq!(bin_r(BinOp::Add, T::F32, Rounding::Rn, payload, f32b(1.0)), 0x7fff_ffff);
    assert_eq!(bin_r(BinOp::Mul, T::F32, Rounding::Rp, f32b(0.0), f32b(f32::INFINITY)), 0x7fff_ffff);
    assert_eq!(
        bin_r(BinOp::Sub, T::F64, Rounding::Rn, f64b(f64::INFINITY), f64b(f64::INFINITY)),
        0xfff8_0000_0000_0000
    );
    assert_eq!(bin_r(BinOp::Div, T::F64, Rounding::Rm, 0, 0), 0xfff8_0000_0000_0000);
    assert_eq!(bin_r(BinOp::Add, T::F64, Rounding::Rn, 0x7ff0_0000_0000_0001, f64b(1.0)), 0x7ff8_0000_0000_0001);
    let neg = Op::Unary(UnOp::Neg, T::F32, FloatFlags::RN);
    let abs = Op::Unary(UnOp::Abs, T::F32, FloatFlags::RN);
    assert_eq!(eval(&neg, &[payload]), 0xffc0_0001);
    assert_eq!(eval(&abs, &[0xffc0_0001]), payload);
    assert_eq!(eval(&neg, &[0]), 0x8000_0000);
    assert_eq!(eval(&Op::Unary(UnOp::Neg, T::F16, FloatFlags::RN), &[0x3c00]), 0xbc00);
    assert_eq!(eval(&Op::Unary(UnOp::Abs, T::F64, FloatFlags::RN), &[f64b(-2.0)]), f64b(2.0));
}

#[test]
fn min_max_nan_and_signed_zero() {
    let nan = 0x7fc0_0001u64;
    let one = f32b(1.0);
    let (pz, nz) = (f32b(0.0), f32b(-0.0));
    let mm = |op, a, b| bin_r(op, T::F32, Rounding::Rn, a, b);
    assert_eq!(mm(BinOp::Min, nan, one), one);
    assert_eq!(mm(BinOp::Min, one, nan), one);
    assert_eq!(mm(BinOp::Max, nan, one), one);
    assert_eq!(mm(BinOp::Max, nan, nan), 0x7fff_ffff);
    assert_eq!(mm(BinOp::Min, nz, pz), nz);
    assert_eq!(mm(BinOp::Min, pz, nz), nz);
    assert_eq!(mm(BinOp::Max, nz, pz), pz);
    assert_eq!(mm(BinOp::Max, pz, nz), pz);
    assert_eq!(mm(BinOp::Min, f32b(-3.0), f32b(2.0)), f32b(-3.0));
    assert_eq!(mm(BinOp::Max, f32b(-3.0), f32b(f32::INFINITY)), f32b(f32::INFINITY));
    assert_eq!(bin_r(BinOp::Min, T::F64, Rounding::Rn, f64b(1.0), f64b(-1.0)), f64b(-1.0));
    assert_eq!(bin_r(BinOp::Max, T::F16, Rounding::Rn, 0x7e00, 0x3c00), 0x3c00);
    assert_eq!(bin_r(BinOp::Max, T::BF16, Rounding::Rn, 0x7fc0, 0xffc0), 0x7fff);
}

#[test]
fn float_comparisons_ordered_and_unordered() {
    let nan = f32b(f32::NAN);
    let one = f32b(1.0);
    let c = |op, a, b| eval(&Op::Cmp(op, T::F32), &[a, b]);
    for op in [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Num] {
        assert_eq!(c(op, nan, one), 0, "{op:?}");
        assert_eq!(c(op, one, nan), 0, "{op:?}");
    }
    for op in [CmpOp::Equ, CmpOp::Neu, CmpOp::Ltu, CmpOp::Leu, CmpOp::Gtu, CmpOp::Geu, CmpOp::Nan] {
        assert_eq!(c(op, nan, one), 1, "{op:?}");
    }
    assert_eq!(c(CmpOp::Eq, f32b(-0.0), f32b(0.0)), 1);
    assert_eq!(c(CmpOp::Lt, f32b(-0.0), f32b(0.0)), 0);
    assert_eq!(c(CmpOp::Ne, one, f32b(2.0)), 1);
    assert_eq!(c(CmpOp::Neu, one, one), 0);
    assert_eq!(c(CmpOp::Ltu, one, f32b(2.0)), 1);
    assert_eq!(c(CmpOp::Geu, one, f32b(2.0)), 0);
    assert_eq!(c(CmpOp::Num, one, one), 1);
    assert_eq!(eval(&Op::Cmp(CmpOp::Lt, T::F16), &[0xbc00, 0x3c00]), 1);
    assert_eq!(eval(&Op::Cmp(CmpOp::Gt, T::BF16), &[0x3f80, 0xff80]), 1);
    assert_eq!(eval(&Op::Cmp(CmpOp::Le, T::F64), &[f64b(2.0), f64b(2.0)]), 1);
}

#[test]
fn float_to_int_conversions() {
    let c = |to, r, x: f32| cvt(to, T::F32, r, false, f32b(x));
    let s32 = |v: i32| v as u32 as u64;
    let r = [Some(Rounding::Rni), Some(Rounding::Rzi), Some(Rounding::Rmi), Some(Rounding::Rpi)];
    assert_eq!(r.map(|r| c(T::S32, r, -2.5)), [s32(-2), s32(-2), s32(-3), s32(-2)]);
    assert_eq!(r.map(|r| c(T::S32, r, 2.5)), [2, 2, 2, 3]);
    assert_eq!(r.map(|r| c(T::S32, r, 3.5)), [4, 3, 3, 4]);
    assert_eq!(r.map(|r| c(T::S32, r, 0.3)), [0, 0, 0, 1]);
    assert_eq!(r.map(|r| c(T::S32, r, -0.7)), [s32(-1), 0, s32(-1), 0]);
    // Default is rzi.
    assert_eq!(c(T::S32, None, 2.7), 2);
    assert_eq!(c(T::S32, None, -2.7), s32(-2));
    // NaN → 0; out of range saturates.
    assert_eq!(c(T::S32, None, f32::NAN), 0);
    assert_eq!(c(T::U8, None, f32::NAN), 0);
    assert_eq!(c(T::S32, None, 1e10), 0x7fff_ffff);
    assert_eq!(c(T::S32, None, -1e10), 0x8000_0000);
    assert_eq!(c(T::U32, None, -5.0), 0);
    assert_eq!(c(T::U8, None, 300.0), 255);
    assert_eq!(c(T::S8, None, -300.0), 0x80);
    assert_eq!(c(T::U64, None, f32::INFINITY), u64::MAX);
    assert_eq!(c(T::S64, None, f32::NEG_INFINITY), 1 << 63);
    assert_eq!(cvt(T::U64, T::F64, None, false, f64b(2f64.powi(63))), 1 << 63);
    assert_eq!(cvt(T::S64, T::F64, None, false, f64b(2f64.powi(63))), i64::MAX as u64);
    assert_eq!(cvt(T::S64, T::F64, None, false, f64b(-(2f64.powi(63)))), 1 << 63);
    assert_eq!(cvt(T::U16, T::F16, Some(Rounding::Rni), false, 0x3e00), 2); // 1.5 → 2
    assert_eq!(cvt(T::S16, T::BF16, None, false, 0xc2f7), 0xff85_u64 & 0xffff); // -123.5 → -123
                                                                                // ftz: the smallest subnormal rounds up to 1 unless flushed.
    let rpi = |ftz| eval(&Op::Cvt { to: T::S32, from: T::F32, rounding: Some(Rounding::Rpi), sat: false, ftz }, &[1]);
    assert_eq!(rpi(false), 1);
    assert_eq!(rpi(true), 0);
}

#[test]
fn int_to_float_conversions() {
    let c = |to, from, r, a| cvt(to, from, r, false, a);
    let r = [None, Some(Rounding::Rz), Some(Rounding::Rm), Some(Rounding::Rp)];
    assert_eq!(r.map(|r| c(T::F32, T::U32, r, 0xffff_ffff)), [0x4f80_0000, 0x4f7f_ffff, 0x4f7f_ffff, 0x4f80_0000]);
    // -16777217 is a tie between -16777216 and -16777218.
    let v = (-16_777_217i32) as u32 as u64;
    assert_eq!(r.map(|r| c(T::F32, T::S32, r, v)), [0xcb80_0000, 0xcb80_0000, 0xcb80_0001, 0xcb80_0000]);
    assert_eq!(c(T::F64, T::U64, None, u64::MAX), f64b(2f64.powi(64)));
    assert_eq!(c(T::F64, T::U64, Some(Rounding::Rz), u64::MAX), f64b(2f64.powi(64)) - 1);
    assert_eq!(c(T::F32, T::S64, None, 1 << 63), 0xdf00_0000);
    assert_eq!(c(T::F16, T::U32, None, 70000), 0x7c00);
    assert_eq!(c(T::F16, T::U32, Some(Rounding::Rz), 70000), 0x7bff);
    assert_eq!(c(T::BF16, T::S8, None, 0xff), 0xbf80);
    assert_eq!(c(T::F32, T::S32, None, 0), 0);
    // .sat on a float destination.
    assert_eq!(cvt(T::F32, T::S32, None, true, 5), f32b(1.0));
    assert_eq!(cvt(T::F32, T::S32, None, true, (-5i32) as u32 as u64), 0);
}

#[test]
fn float_to_float_conversions() {
    let c = |to, from, r, a| cvt(to, from, r, false, a);
    let r = [None, Some(Rounding::Rz), Some(Rounding::Rm), Some(Rounding::Rp)];
    // 1 + 2^-11 is a tie in f16.
    let x = f32b(1.0 + 2f32.powi(-11));
    assert_eq!(r.map(|r| c(T::F16, T::F32, r, x)), [0x3c00, 0x3c00, 0x3c00, 0x3c01]);
    assert_eq!(r.map(|r| c(T::F16, T::F32, r, f32b(70000.0))), [0x7c00, 0x7bff, 0x7bff, 0x7c00]);
    assert_eq!(r.map(|r| c(T::F16, T::F32, r, f32b(-70000.0))), [0xfc00, 0xfbff, 0xfc00, 0xfbff]);
    // Subnormal f16 results: 2^-25 is a tie between 0 and 2^-24.
    assert_eq!(r.map(|r| c(T::F16, T::F32, r, f32b(2f32.powi(-25)))), [0, 0, 0, 1]);
    // f64 → f32.
    assert_eq!(r.map(|r| c(T::F32, T::F64, r, f64b(1.0 / 3.0))), [0x3eaa_aaab, 0x3eaa_aaaa, 0x3eaa_aaaa, 0x3eaa_aaab]);
    assert_eq!(c(T::F32, T::F64, None, f64b(1e300)), 0x7f80_0000);
    assert_eq!(c(T::F32, T::F64, Some(Rounding::Rz), f64b(1e300)), 0x7f7f_ffff);
    // Widening is exact.
    assert_eq!(c(T::F64, T::F32, None, x), f64b(1.0 + 2f64.powi(-11)));
    assert_eq!(c(T::F32, T::F16, None, 0x0001), f32b(2f32.powi(-24)));
    assert_eq!(c(T::F64, T::BF16, None, 0xc2f7), f64b(-123.5));
    // f16 ↔ bf16.
    assert_eq!(r.map(|r| c(T::BF16, T::F16, r, 0x3c01)), [0x3f80, 0x3f80, 0x3f80, 0x3f81]);
    assert_eq!(c(T::F16, T::BF16, None, 0x4780), 0x7c00); // 65536 overflows f16
    assert_eq!(c(T::F16, T::BF16, None, 0x3f80), 0x3c00);
    // NaN: the H100's rules (eval_hardware.rs); signed zeros and infinities kept.
    assert_eq!(c(T::F64, T::F32, None, 0x7fc0_0001), 0x7ff8_0000_2000_0000);
    assert_eq!(c(T::F16, T::F64, None, f64b(f64::NAN)), 0x7e00);
    assert_eq!(c(T::F32, T::F16, None, 0x7e01), 0x7fff_ffff);
    assert_eq!(c(T::F16, T::F32, Some(Rounding::Rz), f32b(-0.0)), 0x8000);
    assert_eq!(c(T::BF16, T::F64, Some(Rounding::Rz), f64b(f64::NEG_INFINITY)), 0xff80);
    // Integral roundings in float → float.
    let ri = |r, x: f32| c(T::F32, T::F32, Some(r), f32b(x));
    assert_eq!(ri(Rounding::Rni, 2.5), f32b(2.0));
    assert_eq!(ri(Rounding::Rni, -3.5), f32b(-4.0));
    assert_eq!(ri(Rounding::Rzi, -0.3), f32b(-0.0));
    assert_eq!(ri(Rounding::Rpi, 0.3), f32b(1.0));
    assert_eq!(ri(Rounding::Rmi, -0.3), f32b(-1.0));
    assert_eq!(ri(Rounding::Rmi, 1e20), f32b(1e20));
    assert_eq!(c(T::F16, T::F64, Some(Rounding::Rzi), f64b(2.75)), 0x4000);
    // .sat clamps to [+0, 1].
    let sat = |x: f32| cvt(T::F32, T::F32, None, true, f32b(x));
    assert_eq!(sat(1.5), f32b(1.0));
    assert_eq!(sat(-3.0), 0);
    assert_eq!(sat(-0.0), 0);
    assert_eq!(sat(f32::NAN), 0);
    assert_eq!(sat(0.25), f32b(0.25));
    assert_eq!(cvt(T::F16, T::F32, None, true, f32b(2.0)), 0x3c00);
    // .ftz on an f32 destination.
    let ftz = Op::Cvt { to: T::F32, from: T::F64, rounding: None, sat: false, ftz: true };
    assert_eq!(eval(&ftz, &[f64b(-1e-40)]), 0x8000_0000);
    assert_eq!(cvt(T::F32, T::F64, None, false, f64b(1e-40)), f32b(1e-40));
}

#[test]
fn approximate_ops_special_values() {
    let ap = |op, x: f32| eval(&Op::Unary(op, T::F32, FloatFlags::APPROX), &[f32b(x)]);
    assert_eq!(ap(UnOp::Ex2, f32::NEG_INFINITY), 0);
    assert_eq!(ap(UnOp::Ex2, f32::INFINITY), f32b(f32::INFINITY));
    assert_eq!(ap(UnOp::Ex2, 3.0), f32b(8.0));
    assert_eq!(ap(UnOp::Ex2, -1.0), f32b(0.5));
    assert_eq!(ap(UnOp::Lg2, 0.0), f32b(f32::NEG_INFINITY));
    assert_eq!(ap(UnOp::Lg2, -0.0), f32b(f32::NEG_INFINITY));
    assert_eq!(ap(UnOp::Lg2, -1.0), 0x7fff_ffff);
    assert_eq!(ap(UnOp::Lg2, 8.0), f32b(3.0));
    assert_eq!(ap(UnOp::Lg2, f32::INFINITY), f32b(f32::INFINITY));
    assert_eq!(ap(UnOp::Rsqrt, 0.0), f32b(f32::INFINITY));
    assert_eq!(ap(UnOp::Rsqrt, -0.0), f32b(f32::NEG_INFINITY));
    assert_eq!(ap(UnOp::Rsqrt, 4.0), f32b(0.5));
    assert_eq!(ap(UnOp::Rsqrt, -4.0), 0x7fff_ffff);
    assert_eq!(ap(UnOp::Rsqrt, f32::INFINITY), 0);
    assert_eq!(ap(UnOp::Sin, 0.0), 0);
    assert_eq!(ap(UnOp::Sin, -0.0), 0x8000_0000);
    assert_eq!(ap(UnOp::Sin, f32::INFINITY), 0x7fff_ffff);
    assert_eq!(ap(UnOp::Cos, 0.0), f32b(1.0));
    assert_eq!(ap(UnOp::Sin, 1.0), f32b(1f64.sin() as f32));
    assert_eq!(ap(UnOp::Tanh, f32::INFINITY), f32b(1.0));
    assert_eq!(ap(UnOp::Tanh, f32::NEG_INFINITY), f32b(-1.0));
    assert_eq!(ap(UnOp::Tanh, 0.5), f32b(0.5f64.tanh() as f32));
    assert_eq!(ap(UnOp::Ex2, f32::NAN), 0x7fff_ffff);
    // .approx forms of rcp, sqrt, div are the correctly rounded result.
    assert_eq!(ap(UnOp::Rcp, 3.0), 0x3eaa_aaab);
    assert_eq!(ap(UnOp::Sqrt, 2.0), 0x3fb5_04f3);
    let div = |m| eval(&Op::Bin(BinOp::Div, T::F32, FloatFlags { mode: m, ftz: false }), &[f32b(1.0), f32b(3.0)]);
    assert_eq!(div(FloatMode::Approx), 0x3eaa_aaab);
    assert_eq!(div(FloatMode::Full), 0x3eaa_aaab);
    // ex2.approx.ftz flushes a subnormal result.
    let ftz = FloatFlags { mode: FloatMode::Approx, ftz: true };
    assert_eq!(eval(&Op::Unary(UnOp::Ex2, T::F32, ftz), &[f32b(-140.0)]), 0);
    assert_ne!(ap(UnOp::Ex2, -140.0), 0);
}

#[test]
fn documented_error_bounds() {
    let un = |op, m| Op::Unary(op, T::F32, FloatFlags { mode: m, ftz: false });
    assert_eq!(max_ulp_error(&un(UnOp::Ex2, FloatMode::Approx)), Some(2));
    assert_eq!(max_ulp_error(&un(UnOp::Lg2, FloatMode::Approx)), Some(2));
    assert_eq!(max_ulp_error(&un(UnOp::Rcp, FloatMode::Approx)), Some(1));
    assert_eq!(max_ulp_error(&un(UnOp::Rcp, FloatMode::RN)), None);
    assert_eq!(max_ulp_error(&un(UnOp::Sqrt, FloatMode::RN)), None);
    assert_eq!(max_ulp_error(&un(UnOp::Sin, FloatMode::Approx)), Some(u32::MAX));
    assert_eq!(max_ulp_error(&un(UnOp::Tanh, FloatMode::Approx)), Some(134));
    assert_eq!(max_ulp_error(&un(UnOp::Rsqrt, FloatMode::Approx)), Some(2));
    assert_eq!(max_ulp_error(&un(UnOp::Sqrt, FloatMode::Approx)), Some(1));
    let div = |m| Op::Bin(BinOp::Div, T::F32, FloatFlags { mode: m, ftz: false });
    assert_eq!(max_ulp_error(&div(FloatMode::Full)), Some(2));
    assert_eq!(max_ulp_error(&div(FloatMode::Approx)), Some(2));
    assert_eq!(max_ulp_error(&div(FloatMode::RN)), None);
    assert_eq!(max_ulp_error(&Op::Bin(BinOp::Add, T::F32, FloatFlags::RN)), None);
    // within_error_bound accepts a 2-ulp miss of ex2 and rejects a 3-ulp one.
    let ex2 = un(UnOp::Ex2, FloatMode::Approx);
    let x = f32b(0.3);
    let want = eval(&ex2, &[x]);
    assert!(within_error_bound(&ex2, &[x], want + 2));
    assert!(!within_error_bound(&ex2, &[x], want + 3));
    // sin: absolute 2^-14.7 (measured on [-100π, 100π]) near a zero of sin.
    let sin = un(UnOp::Sin, FloatMode::Approx);
    let pi = f32b(std::f32::consts::PI);
    let want = f32::from_bits(eval(&sin, &[pi]) as u32);
    assert!(within_error_bound(&sin, &[pi], f32b(want + 3.7e-5)));
    assert!(!within_error_bound(&sin, &[pi], f32b(want + 4e-5)));
    // sin.approx of a subnormal or of |x| < 2pi * 2^-25 is a signed zero, as on the H100.
    for (x, z) in [(1e-45f32, 0u64), (-1e-40, 0x8000_0000), (1.84e-7, 0), (-5e-27, 0x8000_0000)] {
        assert_eq!(eval(&sin, &[f32b(x)]), z, "sin({x})");
    }
    assert_ne!(eval(&sin, &[f32b(1.91e-7)]), 0);
    // Exact ops must match bit for bit.
    let add = Op::Bin(BinOp::Add, T::F32, FloatFlags::RN);
    assert!(within_error_bound(&add, &[f32b(1.0), f32b(2.0)], f32b(3.0)));
    assert!(!within_error_bound(&add, &[f32b(1.0), f32b(2.0)], f32b(3.0) + 1));
}
