//! Verifier unit tests: operand and result types, op forms and modifiers, memory ops, built
//! programmatically (as passes build IR, with dummy spans).

use kir_ir::*;

mod common;
use common::*;

/// A kernel whose parameters have `arg_tys` and whose entry block runs `op` on them, then returns.
fn one_inst(op: Op, arg_tys: &[Type], result: Option<Type>) -> Kernel {
    let mut k = Kernel::new("k");
    let args: Vec<Operand> = arg_tys.iter().enumerate().map(|(i, t)| k.add_param(format!("a{i}"), *t).into()).collect();
    let b = k.add_block("entry");
    k.append_inst(b, op, args, result.map(|t| ("r".into(), t)), Span::DUMMY);
    k
}

const F32: Type = Type::F32;
const U32: Type = Type::U32;
const PRED: Type = Type::PRED;

fn t(s: ScalarType) -> Type {
    Type::Scalar(s)
}
fn gptr(s: ScalarType) -> Type {
    Type::Ptr(AddrSpace::Global, s)
}

#[test]
fn operand_type_must_match_the_op() {
    let k = one_inst(Op::Bin(BinOp::Add, ScalarType::F32, FloatFlags::RN), &[U32, F32], Some(F32));
    assert_error(&k, "operand 1 of `add.f32` must be `f32`, but `%a0` has type `u32`");
    assert_clean(&one_inst(Op::Bin(BinOp::Add, ScalarType::F32, FloatFlags::RN), &[F32, F32], Some(F32)));
}

#[test]
fn constant_operand_type_must_match_the_op() {
    let mut k = one_inst(Op::Mov(ScalarType::F32), &[], None);
    let i = k.blocks[0].insts[0];
    k.inst_mut(i).args = [Constant::u32(1).into()].into_iter().collect();
    let r = k.add_value("r", F32, ValueDef::Inst(i), Span::DUMMY);
    k.inst_mut(i).result = Some(r);
    assert_error(&k, "operand 1 of `mov.f32` must be `f32`, but the constant `1` has type `u32`");
}

#[test]
fn result_type_must_be_what_the_op_produces() {
    let k = one_inst(Op::Cmp(CmpOp::Lt, ScalarType::U32), &[U32, U32], Some(U32));
    assert_error(&k, "the result `%r` of `lt.u32` has type `u32`, but `lt.u32` produces `pred`");
    let k = one_inst(Op::MulWide(ScalarType::U32), &[U32, U32], Some(U32));
    assert_error(&k, "produces `u64`");
    assert_clean(&one_inst(Op::MulWide(ScalarType::S16), &[t(ScalarType::S16); 2], Some(Type::S32)));
}

#[test]
fn result_presence() {
    // Ops without a value may not have a result.
    let k = one_inst(Op::Store, &[gptr(ScalarType::U32), U32, U32], Some(U32));
    assert_error(&k, "`store` produces no value");
    let k = one_inst(Op::Barrier, &[], Some(U32));
    assert_error(&k, "`barrier` produces no value");
    // Pure ops and loads must have one.
    let k = one_inst(Op::Bin(BinOp::Add, ScalarType::U32, FloatFlags::RN), &[U32, U32], None);
    assert_error(&k, "`add.u32` computes a value, but this instruction has no result");
    let k = one_inst(Op::Load, &[gptr(ScalarType::U32), U32], None);
    assert_error(&k, "`load` computes a value");
    // Ops with side effects may drop theirs.
    assert_clean(&one_inst(Op::Atomic(AtomicOp::Add), &[gptr(ScalarType::U32), U32, U32], None));
    assert_clean(&one_inst(Op::Shfl(ShflMode::Down, ScalarType::F32), &[F32, U32, U32], None));
}

#[test]
fn operand_count_must_match_arity() {
    let mut k = one_inst(Op::Bin(BinOp::Add, ScalarType::U32, FloatFlags::RN), &[U32, U32], Some(U32));
    let i = k.blocks[0].insts[0];
    k.inst_mut(i).args.pop();
    assert_error(&k, "`add.u32` takes 2 operands, but this instruction has 1");
}

/// Every binary op and type: accepted types verify, the others are rejected with an error.
#[test]
fn binary_ops_accept_exactly_their_types() {
    for op in BinOp::ALL {
        for ty in ScalarType::ALL {
            let b = if matches!(op, BinOp::Shl | BinOp::Shr) { U32 } else { t(ty) };
            let k = one_inst(Op::Bin(op, ty, FloatFlags::RN), &[t(ty), b], Some(t(ty)));
            // Float division exists for f32 and f64 only.
            let valid = op.accepts(ty) && !(op == BinOp::Div && matches!(ty, ScalarType::F16 | ScalarType::BF16));
            if valid {
                assert_clean(&k);
            } else {
                assert!(!errors(&k).is_empty(), "{op:?} {ty} should be rejected");
            }
        }
    }
}

#[test]
fn unary_and_compare_ops_accept_exactly_their_types() {
    for op in UnOp::ALL {
        for ty in ScalarType::ALL {
            let flags = if op.approx_only() { FloatFlags::APPROX } else { FloatFlags::RN };
            let k = one_inst(Op::Unary(op, ty, flags), &[t(ty)], Some(t(ty)));
            assert_eq!(errors(&k).is_empty(), op.accepts(ty), "{op:?} {ty}: {:?}", errors(&k));
        }
    }
    for op in CmpOp::ALL {
        for ty in ScalarType::ALL {
            let k = one_inst(Op::Cmp(op, ty), &[t(ty), t(ty)], Some(PRED));
            assert_eq!(errors(&k).is_empty(), op.accepts(ty), "{op:?} {ty}");
        }
    }
}

#[test]
fn shift_amount_is_u32() {
    let k = one_inst(Op::Bin(BinOp::Shl, ScalarType::U64, FloatFlags::RN), &[Type::U64, Type::U64], Some(Type::U64));
    assert_error(&k, "the shift amount of `shl.u64` must be `u32`");
}

fn flags(mode: FloatMode, ftz: bool) -> FloatFlags {
    FloatFlags { mode, ftz }
}

#[test]
fn float_modifiers_only_where_the_op_has_them() {
    use FloatMode::*;
    let bin = |op, ty, f| one_inst(Op::Bin(op, ty, f), &[t(ty), t(ty)], Some(t(ty)));
    let un = |op, ty, f| one_inst(Op::Unary(op, ty, f), &[t(ty)], Some(t(ty)));
    let f32 = ScalarType::F32;
    let f64 = ScalarType::F64;
    // Rounding modes on float arithmetic.
    for r in [Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp] {
        assert_clean(&bin(BinOp::Add, f32, flags(Exact(r), false)));
        assert_clean(&bin(BinOp::Mul, f64, flags(Exact(r), false)));
        assert_clean(&un(UnOp::Sqrt, f64, flags(Exact(r), false)));
    }
    assert_error(&bin(BinOp::Add, f32, flags(Exact(Rounding::Rzi), false)), "integral rounding `.rzi`");
    // `.approx`: div/sqrt/rcp f32 only.
    assert_clean(&bin(BinOp::Div, f32, flags(Approx, false)));
    assert_clean(&un(UnOp::Sqrt, f32, flags(Approx, true)));
    assert_clean(&un(UnOp::Rcp, f32, flags(Approx, false)));
    assert_error(&bin(BinOp::Add, f32, flags(Approx, false)), "`.approx` is not available");
    assert_error(&bin(BinOp::Div, f64, flags(Approx, false)), "`.approx` is not available");
    assert_error(&un(UnOp::Sqrt, f64, flags(Approx, false)), "`.approx` is not available");
    // `.full`: div.f32 only.
    assert_clean(&bin(BinOp::Div, f32, flags(Full, false)));
    assert_error(&bin(BinOp::Div, f64, flags(Full, false)), "`.full` exists only for `div.f32`");
    assert_error(&un(UnOp::Sqrt, f32, flags(Full, false)), "`.full` exists only for `div.f32`");
    // Approx-only ops require `.approx`: no rounding, no `.full`.
    for op in [UnOp::Rsqrt, UnOp::Ex2, UnOp::Lg2, UnOp::Sin, UnOp::Cos, UnOp::Tanh] {
        assert_clean(&un(op, f32, flags(Approx, false)));
        assert_clean(&un(op, f32, flags(Approx, true)));
        assert_error(&un(op, f32, FloatFlags::RN), "exists only as an approximation");
        assert_error(&un(op, f32, flags(Exact(Rounding::Rz), false)), "exists only as an approximation");
        assert_error(&un(op, f32, flags(Full, false)), "exists only as an approximation");
    }
    // `.ftz`: f16/f32 only.
    assert_clean(&bin(BinOp::Add, f32, flags(Exact(Rounding::Rn), true)));
    assert_clean(&bin(BinOp::Add, ScalarType::F16, flags(Exact(Rounding::Rn), true)));
    assert_error(&bin(BinOp::Add, f64, flags(Exact(Rounding::Rn), true)), "`.ftz` is only available");
    assert_error(&bin(BinOp::Add, ScalarType::BF16, flags(Exact(Rounding::Rn), true)), "`.ftz` is only available");
    // Ops without float modes carry none.
    assert_error(
        &bin(BinOp::Min, f32, flags(Exact(Rounding::Rn), true)),
        "`min.f32` takes no float modifiers, but carries `.ftz`",
    );
    assert_error(
        &bin(BinOp::Add, ScalarType::U32, flags(Exact(Rounding::Rz), false)),
        "takes no float modifiers, but carries `.rz`",
    );
    assert_error(&un(UnOp::Neg, f32, flags(Approx, false)), "takes no float modifiers");
    // fma: rounding and ftz, never approx.
    let fma = |f| one_inst(Op::Fma(f32, f), &[F32; 3], Some(F32));
    assert_clean(&fma(flags(Exact(Rounding::Rz), true)));
    assert_error(&fma(flags(Approx, false)), "`.approx` is not available");
}

#[test]
fn mad_is_integer_and_fma_is_float() {
    assert_clean(&one_inst(Op::Mad(ScalarType::S32), &[Type::S32; 3], Some(Type::S32)));
    assert_error(&one_inst(Op::Mad(ScalarType::F32), &[F32; 3], Some(F32)), "`mad` does not take `f32`");
    assert_error(
        &one_inst(Op::Fma(ScalarType::U32, FloatFlags::RN), &[U32; 3], Some(U32)),
        "`fma` does not take `u32`",
    );
}

#[test]
fn mul_wide_needs_a_widened_type() {
    assert_error(
        &one_inst(Op::MulWide(ScalarType::U64), &[Type::U64; 2], Some(Type::U64)),
        "`mul.wide` does not take `u64`",
    );
    assert_error(&one_inst(Op::MulWide(ScalarType::F32), &[F32; 2], Some(F32)), "`mul.wide` does not take `f32`");
}

#[test]
fn invalid_op_is_reported_once_not_with_cascading_type_errors() {
    // The operands are u32, not the (meaningless) u64 the invalid op names: only the op is reported.
    let k = one_inst(Op::MulWide(ScalarType::U64), &[U32, U32], Some(Type::U64));
    assert_eq!(errors(&k).len(), 1, "{:?}", errors(&k));
}

#[test]
fn cvt_rounding_rules() {
    use ScalarType as S;
    let cvt = |to: ScalarType, from: ScalarType, rounding: Option<Rounding>, sat: bool, ftz: bool| {
        one_inst(Op::Cvt { to, from, rounding, sat, ftz }, &[t(from)], Some(t(to)))
    };
    // Defaults always verify between numeric types.
    for to in ScalarType::ALL.into_iter().filter(|t| !t.is_pred()) {
        for from in ScalarType::ALL.into_iter().filter(|t| !t.is_pred()) {
            assert_clean(&cvt(to, from, None, false, false));
            assert_clean(&cvt(to, from, None, true, false));
        }
    }
    assert_error(&cvt(S::Pred, S::U32, None, false, false), "does not convert to or from `pred`");
    assert_error(&cvt(S::U32, S::Pred, None, false, false), "does not convert to or from `pred`");
    assert_error(&cvt(S::U16, S::U32, Some(Rounding::Rn), false, false), "rounding `.rn` is not valid");
    assert_clean(&cvt(S::S32, S::F32, Some(Rounding::Rzi), false, false));
    assert_clean(&cvt(S::S32, S::F32, Some(Rounding::Rni), true, true));
    assert_error(&cvt(S::S32, S::F32, Some(Rounding::Rn), false, false), "rounding `.rn` is not valid");
    assert_clean(&cvt(S::F32, S::U32, Some(Rounding::Rz), false, false));
    assert_error(&cvt(S::F32, S::U32, Some(Rounding::Rzi), false, false), "rounding `.rzi` is not valid");
    assert_clean(&cvt(S::F16, S::F32, Some(Rounding::Rn), false, false));
    assert_clean(&cvt(S::BF16, S::F16, Some(Rounding::Rz), false, false));
    assert_error(&cvt(S::F32, S::F16, Some(Rounding::Rn), false, false), "widening float conversions are exact");
    assert_clean(&cvt(S::F32, S::F32, Some(Rounding::Rmi), false, false));
    assert_error(&cvt(S::F32, S::F32, Some(Rounding::Rm), false, false), "rounding `.rm` is not valid");
    assert_error(&cvt(S::F64, S::S32, None, false, true), "`.ftz` needs an `f32`");
    assert_clean(&cvt(S::F64, S::F32, None, false, true));
}

#[test]
fn bitcast_needs_equal_widths() {
    use ScalarType as S;
    assert_clean(&one_inst(Op::Bitcast { to: S::U32, from: S::F32 }, &[F32], Some(U32)));
    assert_clean(&one_inst(Op::Bitcast { to: S::BF16, from: S::S16 }, &[t(S::S16)], Some(t(S::BF16))));
    assert_error(&one_inst(Op::Bitcast { to: S::U64, from: S::F32 }, &[F32], Some(Type::U64)), "same width");
    assert_error(&one_inst(Op::Bitcast { to: S::Pred, from: S::Pred }, &[PRED], Some(PRED)), "does not take `pred`");
}

#[test]
fn memory_ops() {
    use ScalarType as S;
    // load
    assert_clean(&one_inst(Op::Load, &[gptr(S::F32), t(S::S64)], Some(F32)));
    assert_error(
        &one_inst(Op::Load, &[U32, U32], Some(U32)),
        "`load` needs a pointer, but its address `%a0` has type `u32`",
    );
    assert_error(&one_inst(Op::Load, &[gptr(S::F32), F32], Some(F32)), "the index of `load` must be an integer");
    assert_error(&one_inst(Op::Load, &[gptr(S::F32), U32], Some(U32)), "produces `f32`");
    // store
    assert_clean(&one_inst(Op::Store, &[gptr(S::U8), U32, t(S::U8)], None));
    assert_error(
        &one_inst(Op::Store, &[gptr(S::F32), U32, U32], None),
        "needs an `f32` stored value, but `%a2` has type `u32`",
    );
    // atomics: element types per AtomicOp::accepts, on global and shared memory.
    for a in [AtomicOp::Add, AtomicOp::Min, AtomicOp::Max, AtomicOp::Exch] {
        for ty in ScalarType::ALL.into_iter().filter(|t| !t.is_pred()) {
            for space in [AddrSpace::Global, AddrSpace::Shared] {
                let k = one_inst(Op::Atomic(a), &[Type::Ptr(space, ty), U32, t(ty)], Some(t(ty)));
                assert_eq!(errors(&k).is_empty(), a.accepts(ty), "atom.{} {ty}", a.name());
            }
        }
    }
    assert_clean(&one_inst(Op::AtomicCas, &[gptr(S::U64), U32, Type::U64, Type::U64], Some(Type::U64)));
    assert_error(
        &one_inst(Op::AtomicCas, &[gptr(S::F32), U32, F32, F32], Some(F32)),
        "`atom.cas` is not available for `f32`",
    );
    assert_error(&one_inst(Op::AtomicCas, &[gptr(S::U32), U32, U32, F32], Some(U32)), "needs a `u32` new value");
}

#[test]
fn pointer_arithmetic_and_casts() {
    use ScalarType as S;
    assert_clean(&one_inst(Op::PtrOffset, &[gptr(S::F32), t(S::S32)], Some(gptr(S::F32))));
    assert_clean(&one_inst(Op::PtrOffsetBytes, &[gptr(S::F32), Type::U64], Some(gptr(S::F32))));
    assert_error(
        &one_inst(Op::PtrOffset, &[gptr(S::F32), F32], Some(gptr(S::F32))),
        "the element count of `offset` must be an integer",
    );
    assert_error(&one_inst(Op::PtrOffset, &[gptr(S::F32), U32], Some(gptr(S::U32))), "produces `ptr<global, f32>`");
    assert_error(&one_inst(Op::PtrOffset, &[U32, U32], Some(U32)), "`offset` needs a pointer");
    assert_clean(&one_inst(Op::PtrCast(gptr(S::U8)), &[gptr(S::F32)], Some(gptr(S::U8))));
    assert_error(
        &one_inst(
            Op::PtrCast(Type::Ptr(AddrSpace::Shared, S::U8)),
            &[gptr(S::F32)],
            Some(Type::Ptr(AddrSpace::Shared, S::U8)),
        ),
        "cannot change the address space",
    );
    assert_error(&one_inst(Op::PtrCast(U32), &[gptr(S::F32)], Some(U32)), "is not a pointer type");
}

#[test]
fn shared_addr() {
    let mut k = one_inst(Op::SharedAddr(0), &[], Some(Type::Ptr(AddrSpace::Shared, ScalarType::F32)));
    assert_error(&k, "`addr` refers to shared declaration #0, but kernel `@k` has 0 shared declarations");
    k.shared.push(SharedDecl {
        name: "tile".into(),
        elem: ScalarType::F32,
        len: Some(256),
        align: 4,
        span: Span::DUMMY,
    });
    assert_clean(&k);
    k.shared[0].elem = ScalarType::U32;
    assert_error(&k, "produces `ptr<shared, u32>`");
}

#[test]
fn warp_collectives_and_select() {
    use ScalarType as S;
    for ty in ScalarType::ALL {
        let k = one_inst(Op::Shfl(ShflMode::Bfly, ty), &[t(ty), U32, U32], Some(t(ty)));
        assert_eq!(errors(&k).is_empty(), matches!(ty, S::U32 | S::S32 | S::F32), "shfl {ty}");
    }
    assert_error(
        &one_inst(Op::Shfl(ShflMode::Idx, S::U32), &[U32, U32, Type::U64], Some(U32)),
        "the member mask of `shfl.idx.u32` must be `u32`",
    );
    assert_clean(&one_inst(Op::Vote(VoteMode::Ballot), &[PRED, U32], Some(U32)));
    assert_error(
        &one_inst(Op::Vote(VoteMode::All), &[U32, U32], Some(PRED)),
        "the predicate of `vote.all` must be `pred`",
    );
    assert_error(&one_inst(Op::Vote(VoteMode::Any), &[PRED, U32], Some(U32)), "produces `pred`");
    assert_error(
        &one_inst(Op::Select(S::F32), &[U32, F32, F32], Some(F32)),
        "the condition of `select.f32` must be `pred`",
    );
}

#[test]
fn every_error_is_reported_at_once() {
    let mut k = Kernel::new("k");
    let x = k.add_param("x", U32);
    let b = k.add_block("entry");
    k.append_inst(
        b,
        Op::Bin(BinOp::Add, ScalarType::F32, FloatFlags::RN),
        vec![x.into(), x.into()],
        Some(("a".into(), F32)),
        Span::DUMMY,
    );
    k.append_inst(
        b,
        Op::Unary(UnOp::Ex2, ScalarType::F32, FloatFlags::RN),
        vec![Constant::f32(1.0).into()],
        Some(("e".into(), F32)),
        Span::DUMMY,
    );
    k.append_inst(b, Op::Store, vec![x.into(), Constant::u32(0).into(), x.into()], None, Span::DUMMY);
    k.block_mut(b).term = Terminator::Br {
        cond: x.into(),
        then_: BlockCall { block: BlockId(0), args: vec![] },
        else_: BlockCall { block: BlockId(0), args: vec![] },
    };
    let e = errors(&k);
    // two operand mismatches, the missing .approx, the non-pointer store, the non-pred condition
    assert_eq!(e.len(), 5, "{e:#?}");
}

#[test]
fn non_canonical_constants_are_rejected() {
    let mut k = one_inst(Op::Mov(ScalarType::U8), &[], Some(t(ScalarType::U8)));
    let i = k.blocks[0].insts[0];
    k.inst_mut(i).args = [Operand::Const(Constant { ty: ScalarType::U8, bits: 0x100 })].into_iter().collect();
    assert_error(&k, "non-canonical `u8` constant");
    let mut k = one_inst(Op::Mov(ScalarType::Pred), &[], Some(PRED));
    let i = k.blocks[0].insts[0];
    k.inst_mut(i).args = [Operand::Const(Constant { ty: ScalarType::Pred, bits: 2 })].into_iter().collect();
    assert_error(&k, "non-canonical `pred` constant");
}
