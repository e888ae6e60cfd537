//! Integer, logic, select, mov and bitcast semantics of `kir_ir::eval` against hand-computed values.

use kir_ir::eval::{eval, eval_const};
use kir_ir::{BinOp, CmpOp, Constant, FloatFlags, Op, ScalarType as T, UnOp};

fn bin(op: BinOp, ty: T, a: u64, b: u64) -> u64 {
    eval(&Op::Bin(op, ty, FloatFlags::RN), &[a, b])
}
fn un(op: UnOp, ty: T, a: u64) -> u64 {
    eval(&Op::Unary(op, ty, FloatFlags::RN), &[a])
}
fn cmp(op: CmpOp, ty: T, a: u64, b: u64) -> u64 {
    eval(&Op::Cmp(op, ty), &[a, b])
}
fn s(ty: T, v: i64) -> u64 {
    (v as u64) & ty.mask()
}

#[test]
fn add_sub_mul_wrap_at_every_width() {
    assert_eq!(bin(BinOp::Add, T::U8, 200, 100), 44);
    assert_eq!(bin(BinOp::Add, T::S8, s(T::S8, 127), 1), 0x80);
    assert_eq!(bin(BinOp::Add, T::U16, 0xffff, 2), 1);
    assert_eq!(bin(BinOp::Add, T::S16, s(T::S16, -32768), s(T::S16, -1)), 0x7fff);
    assert_eq!(bin(BinOp::Add, T::U32, 0xffff_ffff, 1), 0);
    assert_eq!(bin(BinOp::Add, T::U64, u64::MAX, 2), 1);
    assert_eq!(bin(BinOp::Sub, T::U8, 3, 5), 254);
    assert_eq!(bin(BinOp::Sub, T::S32, 0, s(T::S32, i32::MIN as i64)), 0x8000_0000);
    assert_eq!(bin(BinOp::Sub, T::U64, 0, 1), u64::MAX);
    assert_eq!(bin(BinOp::Mul, T::U8, 16, 17), 16);
    assert_eq!(bin(BinOp::Mul, T::S16, s(T::S16, -300), 300), s(T::S16, -90000 & 0xffff));
    assert_eq!(bin(BinOp::Mul, T::U32, 0x1_0001, 0x1_0001), 0x0002_0001);
    assert_eq!(bin(BinOp::Mul, T::S64, s(T::S64, -3), 5), s(T::S64, -15));
    assert_eq!(bin(BinOp::Mul, T::U64, 1 << 63, 2), 0);
}

#[test]
fn mul_hi_and_mul_wide_signed_and_unsigned() {
    assert_eq!(bin(BinOp::MulHi, T::U8, 0xff, 0xff), 0xfe);
    assert_eq!(bin(BinOp::MulHi, T::S8, s(T::S8, -1), s(T::S8, -1)), 0); // 1 = 0x0001
    assert_eq!(bin(BinOp::MulHi, T::S8, s(T::S8, -128), 127), s(T::S8, -64)); // -16256 = 0xc080
    assert_eq!(bin(BinOp::MulHi, T::U32, 0xffff_ffff, 0xffff_ffff), 0xffff_fffe);
    assert_eq!(bin(BinOp::MulHi, T::S32, s(T::S32, -1), 1), 0xffff_ffff);
    assert_eq!(bin(BinOp::MulHi, T::U64, u64::MAX, u64::MAX), u64::MAX - 1);
    assert_eq!(bin(BinOp::MulHi, T::S64, s(T::S64, i64::MIN), s(T::S64, i64::MIN)), 1 << 62);
    assert_eq!(bin(BinOp::MulHi, T::S64, s(T::S64, -2), 3), u64::MAX);
    let wide = |ty, a, b| eval(&Op::MulWide(ty), &[a, b]);
    assert_eq!(wide(T::U8, 0xff, 0xff), 0xfe01);
    assert_eq!(wide(T::S8, s(T::S8, -128), s(T::S8, -128)), 0x4000);
    assert_eq!(wide(T::S8, s(T::S8, -1), 2), 0xfffe);
    assert_eq!(wide(T::U16, 0xffff, 0xffff), 0xfffe_0001);
    assert_eq!(wide(T::S16, s(T::S16, -2), 3), 0xffff_fffa);
    assert_eq!(wide(T::U32, 0xffff_ffff, 0xffff_ffff), 0xffff_fffe_0000_0001);
    assert_eq!(wide(T::S32, s(T::S32, -1), s(T::S32, -1)), 1);
    assert_eq!(wide(T::S32, s(T::S32, i32::MIN as i64), 2), s(T::S64, -(1i64 << 32)));
    // mul.wide of a 64-bit type does not exist.
    assert_eq!(wide(T::U64, 3, 3), 0);
}

#[test]
fn mad_is_low_half_of_a_times_b_plus_c() {
    let mad = |ty, a, b, c| eval(&Op::Mad(ty), &[a, b, c]);
    assert_eq!(mad(T::U8, 16, 16, 5), 5);
    assert_eq!(mad(T::S32, s(T::S32, -3), 7, 1), s(T::S32, -20));
    assert_eq!(mad(T::U64, u64::MAX, 2, 3), 1);
}

#[test]
fn division_by_zero_gives_all_ones_and_min_over_minus_one_wraps() {
    for ty in [T::U8, T::U16, T::U32, T::U64, T::S8, T::S16, T::S32, T::S64] {
        assert_eq!(bin(BinOp::Div, ty, 7, 0), ty.mask(), "{ty} 7/0");
        assert_eq!(bin(BinOp::Div, ty, s(ty, -7), 0), ty.mask(), "{ty} -7/0");
        assert_eq!(bin(BinOp::Rem, ty, 7, 0), ty.mask(), "{ty} 7%0");
        assert_eq!(bin(BinOp::Div, ty, 0, 0), ty.mask(), "{ty} 0/0");
    }
    for ty in [T::S8, T::S16, T::S32, T::S64] {
        let min = 1u64 << (ty.bits() - 1);
        assert_eq!(bin(BinOp::Div, ty, min, ty.mask()), min, "{ty} MIN/-1");
        assert_eq!(bin(BinOp::Rem, ty, min, ty.mask()), 0, "{ty} MIN%-1");
    }
    // Truncating division, remainder takes the dividend's sign.
    assert_eq!(bin(BinOp::Div, T::S32, s(T::S32, -7), 2), s(T::S32, -3));
    assert_eq!(bin(BinOp::Rem, T::S32, s(T::S32, -7), 2), s(T::S32, -1));
    assert_eq!(bin(BinOp::Rem, T::S8, 7, s(T::S8, -2)), 1);
    assert_eq!(bin(BinOp::Div, T::U8, 250, 7), 35);
    assert_eq!(bin(BinOp::Rem, T::U64, u64::MAX, 10), 5);
}

#[test]
fn min_max_follow_signedness() {
    assert_eq!(bin(BinOp::Min, T::U8, 0x80, 1), 1);
    assert_eq!(bin(BinOp::Min, T::S8, 0x80, 1), 0x80);
    assert_eq!(bin(BinOp::Max, T::S16, 0xffff, 0), 0);
    assert_eq!(bin(BinOp::Max, T::U16, 0xffff, 0), 0xffff);
    assert_eq!(bin(BinOp::Min, T::S64, u64::MAX, 0), u64::MAX);
    assert_eq!(bin(BinOp::Max, T::U64, u64::MAX, 0), u64::MAX);
}

#[test]
fn logic_on_ints_and_preds() {
    assert_eq!(bin(BinOp::And, T::U8, 0xf0, 0x3c), 0x30);
    assert_eq!(bin(BinOp::Or, T::S16, 0xf000, 0x000f), 0xf00f);
    assert_eq!(bin(BinOp::Xor, T::U64, u64::MAX, 1), u64::MAX - 1);
    assert_eq!(un(UnOp::Not, T::U8, 0x0f), 0xf0);
    assert_eq!(un(UnOp::Not, T::S32, 0), 0xffff_ffff);
    for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        assert_eq!(bin(BinOp::And, T::Pred, a, b), a & b);
        assert_eq!(bin(BinOp::Or, T::Pred, a, b), a | b);
        assert_eq!(bin(BinOp::Xor, T::Pred, a, b), a ^ b);
    }
    assert_eq!(un(UnOp::Not, T::Pred, 0), 1);
    assert_eq!(un(UnOp::Not, T::Pred, 1), 0);
}

#[test]
fn shifts_clamp_amounts_at_or_above_the_width() {
    assert_eq!(bin(BinOp::Shl, T::U8, 1, 7), 0x80);
    assert_eq!(bin(BinOp::Shl, T::U8, 1, 8), 0);
    assert_eq!(bin(BinOp::Shl, T::U32, 3, 31), 0x8000_0000);
    assert_eq!(bin(BinOp::Shl, T::U32, 3, 32), 0);
    assert_eq!(bin(BinOp::Shl, T::S64, 1, 63), 1 << 63);
    assert_eq!(bin(BinOp::Shl, T::S64, 1, 64), 0);
    assert_eq!(bin(BinOp::Shl, T::U16, 1, 0xffff_ffff), 0);
    assert_eq!(bin(BinOp::Shr, T::U8, 0x80, 7), 1);
    assert_eq!(bin(BinOp::Shr, T::U8, 0x80, 8), 0);
    assert_eq!(bin(BinOp::Shr, T::U64, u64::MAX, 100), 0);
    assert_eq!(bin(BinOp::Shr, T::S8, 0x80, 3), 0xf0);
    assert_eq!(bin(BinOp::Shr, T::S8, 0x80, 8), 0xff);
    assert_eq!(bin(BinOp::Shr, T::S8, 0x40, 8), 0);
    assert_eq!(bin(BinOp::Shr, T::S32, 0x8000_0000, 1000), 0xffff_ffff);
    assert_eq!(bin(BinOp::Shr, T::S64, 1 << 63, 64), u64::MAX);
    assert_eq!(bin(BinOp::Shr, T::S16, 0x4000, 14), 1);
}

#[test]
fn neg_and_abs_wrap_at_min() {
    assert_eq!(un(UnOp::Neg, T::S8, 5), s(T::S8, -5));
    assert_eq!(un(UnOp::Neg, T::S8, 0x80), 0x80);
    assert_eq!(un(UnOp::Abs, T::S8, 0x80), 0x80);
    assert_eq!(un(UnOp::Abs, T::S16, s(T::S16, -300)), 300);
    assert_eq!(un(UnOp::Neg, T::S64, 1 << 63), 1 << 63);
    assert_eq!(un(UnOp::Abs, T::S64, 1 << 63), 1 << 63);
    assert_eq!(un(UnOp::Abs, T::S32, s(T::S32, -1)), 1);
    // Unsigned neg is not an op.
    assert_eq!(un(UnOp::Neg, T::U32, 5), 0);
}

#[test]
fn integer_comparisons_follow_signedness() {
    assert_eq!(cmp(CmpOp::Lt, T::S8, 0xff, 0), 1);
    assert_eq!(cmp(CmpOp::Lt, T::U8, 0xff, 0), 0);
    assert_eq!(cmp(CmpOp::Ge, T::S64, 0, u64::MAX), 1);
    assert_eq!(cmp(CmpOp::Ge, T::U64, 0, u64::MAX), 0);
    assert_eq!(cmp(CmpOp::Le, T::U32, 5, 5), 1);
    assert_eq!(cmp(CmpOp::Gt, T::S16, 5, 5), 0);
    assert_eq!(cmp(CmpOp::Ne, T::U16, 5, 6), 1);
    assert_eq!(cmp(CmpOp::Eq, T::Pred, 1, 1), 1);
    assert_eq!(cmp(CmpOp::Ne, T::Pred, 1, 0), 1);
    assert_eq!(cmp(CmpOp::Eq, T::Pred, 0, 1), 0);
}

#[test]
fn select_mov_bitcast() {
    let sel = |c, a, b| eval(&Op::Select(T::U32), &[c, a, b]);
    assert_eq!(sel(1, 10, 20), 10);
    assert_eq!(sel(0, 10, 20), 20);
    assert_eq!(eval(&Op::Mov(T::S16), &[0xbeef]), 0xbeef);
    assert_eq!(eval(&Op::Bitcast { to: T::F32, from: T::U32 }, &[0x3f80_0000]), 0x3f80_0000);
    assert_eq!(eval(&Op::Bitcast { to: T::S64, from: T::F64 }, &[u64::MAX]), u64::MAX);
    assert_eq!(eval(&Op::Bitcast { to: T::U16, from: T::F32 }, &[1]), 0);
}

#[test]
fn int_to_int_conversions() {
    let cvt = |to, from, sat, a| eval(&Op::Cvt { to, from, rounding: None, sat, ftz: false }, &[a]);
    assert_eq!(cvt(T::S32, T::S8, false, 0x80), 0xffff_ff80); // sign-extends per the source
    assert_eq!(cvt(T::U32, T::S8, false, 0x80), 0xffff_ff80);
    assert_eq!(cvt(T::S32, T::U8, false, 0x80), 0x80); // zero-extends per the source
    assert_eq!(cvt(T::U8, T::U32, false, 0x1234), 0x34); // truncates
    assert_eq!(cvt(T::U8, T::U32, true, 0x1234), 0xff); // saturates
    assert_eq!(cvt(T::S8, T::S32, true, s(T::S32, -1000)), 0x80);
    assert_eq!(cvt(T::S8, T::S32, true, 1000), 0x7f);
    assert_eq!(cvt(T::U16, T::S32, true, s(T::S32, -5)), 0);
    assert_eq!(cvt(T::S32, T::U32, true, 0xffff_ffff), 0x7fff_ffff);
    assert_eq!(cvt(T::U64, T::S64, true, u64::MAX), 0);
    assert_eq!(cvt(T::S64, T::U64, true, u64::MAX), i64::MAX as u64);
    assert_eq!(cvt(T::S64, T::S16, false, 0x8000), s(T::S64, -32768));
}

#[test]
fn eval_const_checks_types() {
    let add = Op::Bin(BinOp::Add, T::U32, FloatFlags::RN);
    assert_eq!(eval_const(&add, &[Constant::u32(2), Constant::u32(3)]), Some(Constant::u32(5)));
    assert_eq!(eval_const(&add, &[Constant::u32(2), Constant::s32(3)]), None);
    assert_eq!(eval_const(&add, &[Constant::u32(2)]), None);
    assert_eq!(eval_const(&Op::Load, &[]), None);
    let wide = Op::MulWide(T::S32);
    assert_eq!(
        eval_const(&wide, &[Constant::s32(-2), Constant::s32(3)]),
        Some(Constant::from_bits(T::S64, (-6i64) as u64))
    );
    let lt = Op::Cmp(CmpOp::Lt, T::S32);
    assert_eq!(eval_const(&lt, &[Constant::s32(-2), Constant::s32(3)]), Some(Constant::pred(true)));
    let shl = Op::Bin(BinOp::Shl, T::U8, FloatFlags::RN);
    assert_eq!(
        eval_const(&shl, &[Constant::from_bits(T::U8, 3), Constant::u32(2)]),
        Some(Constant::from_bits(T::U8, 12))
    );
}
