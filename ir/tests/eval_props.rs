//! Property tests of `kir_ir::eval`: `eval_lanes` agrees with `eval` lane by lane, the host fast
//! paths agree with the exact integer path, and rn results equal the host's IEEE operations.

use kir_ir::eval::float::{self, Fmt, Mode};
use kir_ir::eval::{eval, eval_lanes};
use kir_ir::{BinOp, CmpOp, FloatFlags, FloatMode, Op, Rounding, ScalarType as T, UnOp};
use proptest::prelude::*;

const ROUNDINGS: [Rounding; 4] = [Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp];

/// A broad list of pure ops over every type and modifier combination the evaluator defines.
fn all_ops() -> Vec<Op> {
    let mut ops = Vec::new();
    let flags = |r, ftz| FloatFlags { mode: FloatMode::Exact(r), ftz };
    for ty in T::ALL {
        ops.push(Op::Mov(ty));
        ops.push(Op::Select(ty));
        for c in CmpOp::ALL {
            if c.accepts(ty) {
                ops.push(Op::Cmp(c, ty));
            }
        }
        for b in BinOp::ALL {
            if !b.accepts(ty) {
                continue;
            }
            if ty.is_float() && b.has_float_mode() {
                for r in ROUNDINGS {
                    for ftz in [false, true] {
                        ops.push(Op::Bin(b, ty, flags(r, ftz)));
                    }
                }
                ops.push(Op::Bin(b, ty, FloatFlags::APPROX));
            } else {
                ops.push(Op::Bin(b, ty, FloatFlags::RN));
            }
        }
        for u in UnOp::ALL {
            if !u.accepts(ty) {
                continue;
            }
            if u.has_float_mode() {
                for r in ROUNDINGS {
                    ops.push(Op::Unary(u, ty, flags(r, false)));
                }
                ops.push(Op::Unary(u, ty, FloatFlags { mode: FloatMode::Approx, ftz: true }));
            } else {
                ops.push(Op::Unary(u, ty, FloatFlags::RN));
            }
        }
        if ty.is_int() {
            ops.push(Op::Mad(ty));
            if ty.bits() <= 32 {
                ops.push(Op::MulWide(ty));
            }
        }
        if ty.is_float() {
            for r in ROUNDINGS {
                ops.push(Op::Fma(ty, flags(r, false)));
            }
            ops.push(Op::Fma(ty, flags(Rounding::Rn, true)));
        }
        for to in T::ALL {
            if to.is_pred() || ty.is_pred() {
                continue;
            }
            for rounding in [None, Some(Rounding::Rn), Some(Rounding::Rm), Some(Rounding::Rpi), Some(Rounding::Rni)] {
                for sat in [false, true] {
                    ops.push(Op::Cvt { to, from: ty, rounding, sat, ftz: sat });
                }
            }
            if to.bits() == ty.bits() {
                ops.push(Op::Bitcast { to, from: ty });
            }
        }
    }
    ops
}

/// Operand bits for a type: random, biased towards special values for floats.
fn operand(ty: Option<T>, raw: u64, pick: u8) -> u64 {
    let Some(ty) = ty else { return raw };
    let fmt = Fmt::of(ty);
    let special = |f: Fmt| -> u64 {
        let s = f.sign_bit();
        [0, s, f.inf(false), f.inf(true), f.canonical_nan(), 1, s | 1, f.one(), f.one() | s][pick as usize % 9]
    };
    match fmt {
        Some(f) if pick % 4 == 0 => special(f),
        _ if ty.is_pred() => raw & 1,
        _ if ty == T::U32 && pick % 5 == 1 => raw % 80, // shift amounts around the widths
        _ => raw & ty.mask(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn eval_lanes_matches_eval(op_index in any::<prop::sample::Index>(),
                               raws in prop::collection::vec(any::<u64>(), 96),
                               picks in prop::collection::vec(any::<u8>(), 96),
                               mask in any::<u32>(),
                               full in any::<bool>()) {
        let ops = all_ops();
        let op = &ops[op_index.index(ops.len())];
        let sig = op.signature();
        let n = op.arity();
        let mut cols = vec![[0u64; 32]; n];
        for (i, col) in cols.iter_mut().enumerate() {
            for l in 0..32 {
                let k = i * 32 + l;
                col[l] = operand(sig.args[i].and_then(|t| t.scalar()), raws[k], picks[k]);
            }
        }
        let mask = if full { u32::MAX } else { mask };
        let refs: Vec<&[u64; 32]> = cols.iter().collect();
        let sentinel = 0xdead_beef_u64;
        let mut out = [sentinel; 32];
        eval_lanes(op, &refs, &mut out, mask);
        for l in 0..32 {
            if mask >> l & 1 == 1 {
                let args: Vec<u64> = cols.iter().map(|c| c[l]).collect();
                prop_assert_eq!(out[l], eval(op, &args), "{} lane {} args {:x?}", op, l, args);
                let rt = sig.result.and_then(|t| t.scalar()).unwrap();
                prop_assert_eq!(out[l] & !rt.mask(), 0, "{} result above its width", op);
            } else {
                prop_assert_eq!(out[l], sentinel, "lane {} outside the mask was written", l);
            }
        }
    }

    #[test]
    fn f32_rn_ops_equal_host_ops(a in any::<u32>(), b in any::<u32>(), c in any::<u32>()) {
        let (x, y, z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
        let (a, b, c) = (a as u64, b as u64, c as u64);
        let f = Fmt::F32;
        let check = |got: u64, want: f32| {
            if want.is_nan() { got == 0x7fff_ffff } else { got == want.to_bits() as u64 }
        };
        let bin = |op| eval(&Op::Bin(op, T::F32, FloatFlags::RN), &[a, b]);
        prop_assert!(check(bin(BinOp::Add), x + y));
        prop_assert!(check(bin(BinOp::Sub), x - y));
        prop_assert!(check(bin(BinOp::Mul), x * y));
        prop_assert!(check(bin(BinOp::Div), x / y));
        prop_assert!(check(eval(&Op::Fma(T::F32, FloatFlags::RN), &[a, b, c]), x.mul_add(y, z)));
        prop_assert!(check(eval(&Op::Unary(UnOp::Sqrt, T::F32, FloatFlags::RN), &[a]), x.sqrt()));
        // The exact integer path agrees with the host in rn.
        prop_assert!(check(float::soft_add(f, Mode::Rn, a, b), x + y));
        prop_assert!(check(float::soft_mul(f, Mode::Rn, a, b), x * y));
        prop_assert!(check(float::soft_div(f, Mode::Rn, a, b), x / y));
        prop_assert!(check(float::soft_fma(f, Mode::Rn, a, b, c), x.mul_add(y, z)));
        prop_assert!(check(float::soft_sqrt(f, Mode::Rn, a), x.sqrt()));
    }

    #[test]
    fn f64_rn_ops_equal_host_ops(a in any::<u64>(), b in any::<u64>(), c in any::<u64>()) {
        let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
        let f = Fmt::F64;
        // A NaN result is the first NaN operand in the op's order, quieted, else the default NaN
        // 0xfff8000000000000 (the H100's rules; eval_hardware.rs).
        let nan = |ops: &[u64]| {
            ops.iter().find(|&&o| f64::from_bits(o).is_nan()).map_or(0xfff8_0000_0000_0000, |&o| o | 1 << 51)
        };
        let check = |got: u64, want: f64, ops: &[u64]| {
            if want.is_nan() { got == nan(ops) } else { got == want.to_bits() }
        };
        let bin = |op| eval(&Op::Bin(op, T::F64, FloatFlags::RN), &[a, b]);
        prop_assert!(check(bin(BinOp::Add), x + y, &[b, a]));
        prop_assert!(check(bin(BinOp::Mul), x * y, &[b, a]));
        prop_assert!(check(bin(BinOp::Div), x / y, &[a, b]));
        prop_assert!(check(eval(&Op::Fma(T::F64, FloatFlags::RN), &[a, b, c]), x.mul_add(y, z), &[b, c, a]));
        prop_assert!(check(float::soft_add(f, Mode::Rn, a, b), x + y, &[b, a]));
        prop_assert!(check(float::soft_mul(f, Mode::Rn, a, b), x * y, &[b, a]));
        prop_assert!(check(float::soft_div(f, Mode::Rn, a, b), x / y, &[a, b]));
        prop_assert!(check(float::soft_fma(f, Mode::Rn, a, b, c), x.mul_add(y, z), &[b, c, a]));
        prop_assert!(check(float::soft_sqrt(f, Mode::Rn, a), x.sqrt(), &[a]));
        prop_assert!(check(eval(&Op::Unary(UnOp::Sqrt, T::F64, FloatFlags::RN), &[a]), x.sqrt(), &[a]));
        let sub = eval(&Op::Bin(BinOp::Sub, T::F64, FloatFlags::RN), &[a, b]);
        prop_assert!(check(sub, x - y, &[b, a]));
    }

    /// f64 values with nearby exponents, so sums and products stress the rounding position.
    #[test]
    fn f64_rn_near_exponents(ma in any::<u64>(), mb in any::<u64>(), mc in any::<u64>(),
                             ea in 1000u64..1050, eb in 1000u64..1050, ec in 950u64..1100, sb in any::<bool>()) {
        let mk = |m: u64, e: u64, neg: bool| (m & ((1 << 52) - 1)) | e << 52 | (neg as u64) << 63;
        let (a, b, c) = (mk(ma, ea, false), mk(mb, eb, sb), mk(mc, ec, !sb));
        let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
        prop_assert_eq!(float::soft_add(Fmt::F64, Mode::Rn, a, b), (x + y).to_bits());
        prop_assert_eq!(float::soft_fma(Fmt::F64, Mode::Rn, a, b, c), x.mul_add(y, z).to_bits());
    }

    /// Directed roundings against an independent oracle: the exact result computed in f64 (exact
    /// for products of f32 values and for f16 sums/products) stepped to the neighbouring value.
    #[test]
    fn directed_rounding_brackets_the_exact_result(a in any::<u32>(), b in any::<u32>(), fmt_i in 0usize..3, op_i in 0usize..3) {
        let fmt = [Fmt::F16, Fmt::BF16, Fmt::F32][fmt_i];
        let (a, b) = match fmt { Fmt::F32 => (a as u64, b as u64), _ => ((a & 0xffff) as u64, (b & 0xffff) as u64) };
        let (x, y) = (fmt.to_f64(a), fmt.to_f64(b));
        let exact = match op_i { 0 => x * y, 1 => x + y, _ => x - y };
        // Only where the f64 result is exact (always for products; sums when TwoSum's error is 0).
        let err = if op_i == 0 { 0.0 } else {
            let (p, q) = (x, if op_i == 1 { y } else { -y });
            let s = p + q; let bb = s - p; (p - (s - bb)) + (q - bb)
        };
        if !(exact.is_finite() && err == 0.0) {
            return Ok(()); // no exact f64 oracle for this input
        }
        let ty = match fmt { Fmt::F16 => T::F16, Fmt::BF16 => T::BF16, _ => T::F32 };
        let op = [BinOp::Mul, BinOp::Add, BinOp::Sub][op_i];
        let r = |m| fmt.to_f64(eval(&Op::Bin(op, ty, FloatFlags { mode: FloatMode::Exact(m), ftz: false }), &[a, b]));
        let (rn, rz, rm, rp) = (r(Rounding::Rn), r(Rounding::Rz), r(Rounding::Rm), r(Rounding::Rp));
        // rm <= exact <= rp, each is exact or the two are adjacent, rz is the one towards zero.
        prop_assert!(rm <= exact && exact <= rp, "{} {} {}", rm, exact, rp);
        if rm == rp {
            prop_assert_eq!(rm, exact);
        } else {
            let (lo, hi) = (fmt.to_f64(float::convert(Fmt::F64, fmt, Mode::Rm, exact.to_bits())), fmt.to_f64(float::convert(Fmt::F64, fmt, Mode::Rp, exact.to_bits())));
            prop_assert_eq!((rm, rp), (lo, hi));
            // Neighbours: nothing representable strictly between them.
            let mid = fmt.to_f64(float::convert(Fmt::F64, fmt, Mode::Rn, ((rm + rp) / 2.0).to_bits()));
            prop_assert!(mid == rm || mid == rp || rm.is_infinite() || rp.is_infinite());
        }
        prop_assert_eq!(rz, if exact >= 0.0 { rm } else { rp });
        prop_assert!(rn == rm || rn == rp);
        if rm != rp && rm.is_finite() && rp.is_finite() {
            let (dl, dh) = (exact - rm, rp - exact);
            if dl < dh { prop_assert_eq!(rn, rm); }
            if dh < dl { prop_assert_eq!(rn, rp); }
        }
    }

    /// f16/bf16 rn via one f32 operation equals the exact path.
    #[test]
    fn narrow_rn_fast_path_equals_exact_path(a in any::<u16>(), b in any::<u16>(), bf in any::<bool>()) {
        let fmt = if bf { Fmt::BF16 } else { Fmt::F16 };
        let (a, b) = (a as u64, b as u64);
        prop_assert_eq!(float::add(fmt, Mode::Rn, false, a, b), float::soft_add(fmt, Mode::Rn, a, b));
        prop_assert_eq!(float::mul(fmt, Mode::Rn, false, a, b), float::soft_mul(fmt, Mode::Rn, a, b));
        prop_assert_eq!(float::div(fmt, Mode::Rn, false, a, b), float::soft_div(fmt, Mode::Rn, a, b));
        prop_assert_eq!(float::sqrt(fmt, Mode::Rn, false, a), float::soft_sqrt(fmt, Mode::Rn, a));
    }

    /// f32 `.ftz` mul/div/fma in every mode, fast path or exact path: inputs flushed, and a result
    /// whose exact value is below 2^-126 in magnitude (its rz rounding is) is a zero of its sign,
    /// even where it rounds up to 2^-126 (the H100 flushes before rounding: `mul_ftz_f32[698]`).
    /// Operands near 2^-63 make such products common.
    #[test]
    fn f32_ftz_flushes_before_rounding(ma in any::<u32>(), mb in any::<u32>(), mc in any::<u32>(),
                                       ea in 55u32..70, eb in 55u32..70, signs in any::<u8>(), raw in any::<bool>()) {
        let mk = |m: u32, e: u32, neg: bool| ((m & 0x7f_ffff) | e << 23 | (neg as u32) << 31) as u64;
        let (a, b, c) = if raw {
            (ma as u64, mb as u64, mc as u64)
        } else {
            (mk(ma, ea, signs & 1 != 0), mk(mb, eb, signs & 2 != 0), mk(mc, 1, signs & 4 != 0))
        };
        let f = Fmt::F32;
        let (fa, fb, fc) = (f.flush(a), f.flush(b), f.flush(c));
        let want = |rz: u64, r: u64| {
            if !f.is_nan(r) && rz & 0x7fff_ffff < 0x0080_0000 { r & 0x8000_0000 } else { r }
        };
        for r in ROUNDINGS {
            let m = Mode::of(r);
            let fl = FloatFlags { mode: FloatMode::Exact(r), ftz: true };
            prop_assert_eq!(eval(&Op::Bin(BinOp::Mul, T::F32, fl), &[a, b]),
                want(float::soft_mul(f, Mode::Rz, fa, fb), float::soft_mul(f, m, fa, fb)), "mul {:?}", r);
            prop_assert_eq!(eval(&Op::Bin(BinOp::Div, T::F32, fl), &[a, b]),
                want(float::soft_div(f, Mode::Rz, fa, fb), float::soft_div(f, m, fa, fb)), "div {:?}", r);
            prop_assert_eq!(eval(&Op::Fma(T::F32, fl), &[a, b, c]),
                want(float::soft_fma(f, Mode::Rz, fa, fb, fc), float::soft_fma(f, m, fa, fb, fc)), "fma {:?}", r);
        }
    }

    /// Conversions f64 → f32 in rn equal the host's `as f32`.
    #[test]
    fn f64_to_f32_rn_equals_host(a in any::<u64>()) {
        let x = f64::from_bits(a);
        let got = eval(&Op::Cvt { to: T::F32, from: T::F64, rounding: None, sat: false, ftz: false }, &[a]);
        // A NaN keeps its sign and the top of its payload, quieted (cvt_f32_f64 on the H100).
        let nan = (a >> 32 & 0x8000_0000) | 0x7fc0_0000 | (a >> 29 & 0x003f_ffff);
        if x.is_nan() { prop_assert_eq!(got, nan); } else { prop_assert_eq!(got, (x as f32).to_bits() as u64); }
        let back = eval(&Op::Cvt { to: T::F64, from: T::F32, rounding: None, sat: false, ftz: false }, &[got]);
        if !x.is_nan() { prop_assert_eq!(back, ((x as f32) as f64).to_bits()); }
    }

    /// Float → int in rzi equals the host's saturating `as` cast, except that a NaN gives
    /// 0x8000000000000000 to 64 bits (the H100: `cvt_s64_f32[52]`), where the host gives 0.
    #[test]
    fn f32_to_int_rzi_equals_host_saturating_cast(a in any::<u32>()) {
        let x = f32::from_bits(a);
        let c = |to| eval(&Op::Cvt { to, from: T::F32, rounding: Some(Rounding::Rzi), sat: false, ftz: false }, &[a as u64]);
        prop_assert_eq!(c(T::S32), x as i32 as u32 as u64);
        prop_assert_eq!(c(T::U32), x as u32 as u64);
        prop_assert_eq!(c(T::S64), if x.is_nan() { 1 << 63 } else { x as i64 as u64 });
        prop_assert_eq!(c(T::U8), x as u8 as u64);
        prop_assert_eq!(c(T::S16), x as i16 as u16 as u64);
    }

    /// Int → float in rn equals the host's `as` cast.
    #[test]
    fn int_to_float_rn_equals_host(v in any::<i64>()) {
        let c = |to, from, a| eval(&Op::Cvt { to, from, rounding: None, sat: false, ftz: false }, &[a]);
        prop_assert_eq!(c(T::F32, T::S64, v as u64), (v as f32).to_bits() as u64);
        prop_assert_eq!(c(T::F64, T::S64, v as u64), (v as f64).to_bits());
        prop_assert_eq!(c(T::F64, T::U64, v as u64), (v as u64 as f64).to_bits());
        prop_assert_eq!(c(T::F32, T::U32, v as u32 as u64), (v as u32 as f32).to_bits() as u64);
    }
}
