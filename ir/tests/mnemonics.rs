//! The mnemonic table (`kir_ir::mnemonic`) drives both the printer and the parser:
//!
//! - every op of `all_ops()` prints to a spelling that parses back to it, through exactly one
//!   family, and every family spells some op;
//! - no two families share a head, and no spelling is accepted by two families;
//! - the non-canonical spellings the parser has always accepted (an explicit `.rn`, cvt modifiers
//!   in any order, modifiers on types that ignore them, ...) read as the same ops as before;
//! - rejected spellings get the same messages as before, word for word (they are user-facing).
//!
//! The expectations of the last two lists were recorded from the parser before the table existed.

use kir_ir::mnemonic::{Head, FAMILIES};
use kir_ir::op::*;
use kir_ir::text::parse::parse_mnemonic;
use kir_ir::types::{AddrSpace, ScalarType, Type};
use std::collections::BTreeMap;

use ScalarType::*;

/// The annotation `parse_mnemonic` needs to read `op` back.
fn annot(op: &Op) -> Option<Type> {
    match op {
        Op::PtrCast(t) => Some(*t),
        _ => None,
    }
}

/// The families (by index) that accept `m` as one of their ops.
fn accepting(m: &str, annot: Option<Type>) -> Vec<usize> {
    FAMILIES.iter().enumerate().filter(|(_, f)| matches!(f.parse(m, annot), Some(Ok(_)))).map(|(i, _)| i).collect()
}

#[test]
fn every_op_round_trips_through_exactly_one_family() {
    let mut ops = all_ops();
    assert!(ops.len() > 1000, "all_ops() should be exhaustive, got {}", ops.len());
    // all_ops() leaves calls out (they need a callee); the text format spells them all the same.
    ops.push(Op::Call(0));
    let mut used = vec![0usize; FAMILIES.len()];
    for op in &ops {
        let m = op.mnemonic();
        assert_eq!(parse_mnemonic(&m, annot(op)), Ok(*op), "`{m}`");
        assert_eq!(op.to_string(), m);
        let splitting: Vec<usize> =
            FAMILIES.iter().enumerate().filter(|(_, f)| (f.split)(op).is_some()).map(|(i, _)| i).collect();
        assert_eq!(splitting.len(), 1, "{op:?} is split by families {splitting:?}");
        assert_eq!(accepting(&m, annot(op)), splitting, "`{m}` is read by another family than prints it");
        used[splitting[0]] += 1;
    }
    for (i, n) in used.iter().enumerate() {
        assert!(*n > 0, "family {i} ({:?}) spells no op", FAMILIES[i].head);
    }
}

#[test]
fn ops_with_payloads_print_as_before() {
    // `call` and `addr` drop their payload, `ptrcast` its type: the statement spells them.
    for (op, m) in [
        (Op::Call(7), "call"),
        (Op::SharedAddr(3), "addr"),
        (Op::PtrCast(Type::Ptr(AddrSpace::Shared, F32)), "ptrcast"),
        // Float flags print only where the op takes them.
        (Op::Bin(BinOp::Add, U32, FloatFlags::APPROX), "add.u32"),
        (Op::Bin(BinOp::MulHi, F32, FloatFlags { mode: FloatMode::Full, ftz: true }), "mul.hi.f32"),
        (Op::Bin(BinOp::Min, F32, FloatFlags::APPROX), "min.f32"),
        (Op::Unary(UnOp::Neg, F32, FloatFlags::APPROX), "neg.f32"),
        (Op::Unary(UnOp::Sqrt, U32, FloatFlags { mode: FloatMode::Exact(Rounding::Rz), ftz: true }), "sqrt.rz.ftz.u32"),
        (Op::Fma(F32, FloatFlags { mode: FloatMode::Exact(Rounding::Rzi), ftz: false }), "fma.rzi.f32"),
        (Op::Cvt { to: F32, from: F64, rounding: Some(Rounding::Rn), sat: true, ftz: true }, "cvt.rn.sat.ftz.f32.f64"),
        (Op::Cvt { to: S32, from: F16, rounding: None, sat: false, ftz: true }, "cvt.ftz.s32.f16"),
    ] {
        assert_eq!(op.mnemonic(), m, "{op:?}");
    }
}

#[test]
fn no_two_families_share_a_head() {
    let mut heads: BTreeMap<Vec<&str>, usize> = BTreeMap::new();
    for (i, fam) in FAMILIES.iter().enumerate() {
        let hs = fam.heads();
        assert!(!hs.is_empty(), "family {i} has no head");
        if let Head::Sub(set) = fam.head {
            assert!(set.words().all(|w| !w.contains('.')), "a sub-op head is one word: {set:?}");
        }
        for h in hs {
            assert!(h.iter().all(|w| !w.is_empty() && !w.contains('.')), "head {h:?}");
            if let Some(j) = heads.insert(h.clone(), i) {
                panic!("families {j} and {i} both have the head {h:?}");
            }
        }
    }
    // A head that extends another (`mul.wide` after the binary op `mul`) is read by its own family
    // only (the lookup takes the longest head); the spellings test below checks that the shorter
    // family rejects what the longer one prints.
    assert!(heads.contains_key(&vec!["mul", "wide"]) && heads.contains_key(&vec!["mul"]));
}

/// Spellings the parser accepts beyond the printed ones, and what they read as.
fn accepted() -> Vec<(&'static str, Option<Type>, Op)> {
    let rn_ftz = FloatFlags { mode: FloatMode::RN, ftz: true };
    let rz = FloatFlags { mode: FloatMode::Exact(Rounding::Rz), ftz: false };
    let rz_ftz = FloatFlags { mode: FloatMode::Exact(Rounding::Rz), ftz: true };
    let full_ftz = FloatFlags { mode: FloatMode::Full, ftz: true };
    let cvt = |to, from, rounding, sat, ftz| Op::Cvt { to, from, rounding, sat, ftz };
    let shared_f32 = Type::Ptr(AddrSpace::Shared, F32);
    vec![
        // An explicit `.rn`, the default the printer leaves out.
        ("add.rn.f32", None, Op::Bin(BinOp::Add, F32, FloatFlags::RN)),
        ("mul.rn.ftz.f16", None, Op::Bin(BinOp::Mul, F16, rn_ftz)),
        ("fma.rn.f64", None, Op::Fma(F64, FloatFlags::RN)),
        ("sqrt.rn.f32", None, Op::Unary(UnOp::Sqrt, F32, FloatFlags::RN)),
        ("div.full.ftz.f32", None, Op::Bin(BinOp::Div, F32, full_ftz)),
        // Float modifiers are syntax: the verifier, not the parser, judges them per type.
        ("sqrt.rz.u32", None, Op::Unary(UnOp::Sqrt, U32, rz)),
        ("ex2.rz.ftz.f32", None, Op::Unary(UnOp::Ex2, F32, rz_ftz)),
        ("fma.approx.u32", None, Op::Fma(U32, FloatFlags::APPROX)),
        ("add.rz.f64", None, Op::Bin(BinOp::Add, F64, rz)),
        ("min.f32", None, Op::Bin(BinOp::Min, F32, FloatFlags::RN)),
        ("shl.f32", None, Op::Bin(BinOp::Shl, F32, FloatFlags::RN)),
        ("neg.f32", None, Op::Unary(UnOp::Neg, F32, FloatFlags::RN)),
        ("mul.hi.f32", None, Op::Bin(BinOp::MulHi, F32, FloatFlags::RN)),
        ("mul.wide.f32", None, Op::MulWide(F32)),
        ("mad.pred", None, Op::Mad(Pred)),
        ("mov.pred", None, Op::Mov(Pred)),
        ("lt.pred", None, Op::Cmp(CmpOp::Lt, Pred)),
        // cvt modifiers in any order, any rounding, `pred` included.
        ("cvt.sat.rz.f32.f64", None, cvt(F32, F64, Some(Rounding::Rz), true, false)),
        ("cvt.ftz.sat.rni.f32.f16", None, cvt(F32, F16, Some(Rounding::Rni), true, true)),
        ("cvt.ftz.rn.f16.f32", None, cvt(F16, F32, Some(Rounding::Rn), false, true)),
        ("cvt.ftz.sat.s32.f32", None, cvt(S32, F32, None, true, true)),
        ("cvt.rpi.pred.u32", None, cvt(Pred, U32, Some(Rounding::Rpi), false, false)),
        ("bitcast.f32.u64", None, Op::Bitcast { to: F32, from: U64 }),
        // Pointer ops: `offset` and `offset.bytes`, payloads set by the caller.
        ("offset", None, Op::PtrOffset),
        ("offset.bytes", None, Op::PtrOffsetBytes),
        ("ptrcast", Some(shared_f32), Op::PtrCast(shared_f32)),
        ("addr", None, Op::SharedAddr(0)),
        ("call", None, Op::Call(0)),
        ("atom.cas", None, Op::AtomicCas),
        ("shfl.idx.pred", None, Op::Shfl(ShflMode::Idx, Pred)),
        ("vote.ballot", None, Op::Vote(VoteMode::Ballot)),
        ("global_id.z", None, Op::Special(SpecialReg::GlobalId(Dim::Z))),
    ]
}

#[test]
fn non_canonical_spellings_read_as_before() {
    for (m, annot, want) in accepted() {
        assert_eq!(parse_mnemonic(m, annot), Ok(want), "`{m}`");
        assert_eq!(accepting(m, annot).len(), 1, "`{m}` is accepted by several families");
    }
}

/// Rejected spellings and their messages, exactly.
const REJECTED: &[(&str, &str)] = &[
    ("frob.u32", "unknown op `frob.u32`"),
    ("", "unknown op ``"),
    ("TID.x", "unknown op `TID.x`"),
    ("mul.hi", "`mul.hi` is missing a modifier or type suffix"),
    // Missing and unknown types.
    ("add", "`add` needs a type suffix (e.g. `add.u32`)"),
    ("fma", "`fma` needs a type suffix (e.g. `fma.u32`)"),
    ("sqrt", "`sqrt` needs a type suffix (e.g. `sqrt.u32`)"),
    ("add.q32", "unknown type `q32` in `add.q32`"),
    ("add.", "unknown type `` in `add.`"),
    ("add.rz.q32", "unknown type `q32` in `add.rz.q32`"),
    ("fma.foo.bar", "unknown type `bar` in `fma.foo.bar`"),
    ("mul.hi.q32", "unknown type `q32` in `mul.hi.q32`"),
    ("eq.q32", "unknown type `q32` in `eq.q32`"),
    ("mul.foo", "unknown type `foo` in `mul.foo`"),
    // Float modifiers where none are taken, or out of place.
    ("add.approx.u32", "unexpected modifier `.approx` in `add.approx.u32`"),
    ("min.ftz.f32", "unexpected modifier `.ftz` in `min.ftz.f32`"),
    ("neg.rz.f32", "unexpected modifier `.rz` in `neg.rz.f32`"),
    ("shl.rz.ftz.f32", "unexpected modifier `.rz` in `shl.rz.ftz.f32`"),
    ("add.ftz.rz.f32", "unexpected modifier `.ftz` in `add.ftz.rz.f32`"),
    ("add.ftz.ftz.f32", "unexpected modifier `.ftz` in `add.ftz.ftz.f32`"),
    ("add.rz.rm.f32", "unexpected modifier `.rm` in `add.rz.rm.f32`"),
    ("fma.approx.full.f32", "unexpected modifier `.full` in `fma.approx.full.f32`"),
    ("add.rzi.f32", "unexpected modifier `.rzi` in `add.rzi.f32`"),
    ("sqrt.sat.f32", "unexpected modifier `.sat` in `sqrt.sat.f32`"),
    ("mul.wide.rz.f32", "`mul.wide.rz.f32` has unexpected modifiers"),
    ("add..f32", "unexpected modifier `.` in `add..f32`"),
    // Fixed shapes: too few or too many parts.
    ("tid", "`tid` is missing a modifier or type suffix"),
    ("tid.x.y", "`tid.x.y` has unexpected modifiers"),
    ("laneid.x", "`laneid.x` has unexpected modifiers"),
    ("mov", "`mov` is missing a modifier or type suffix"),
    ("mov.rz.f32", "`mov.rz.f32` has unexpected modifiers"),
    ("mul.wide", "`mul.wide` is missing a modifier or type suffix"),
    ("mul.hi.rz.u32", "`mul.hi.rz.u32` has unexpected modifiers"),
    ("eq", "`eq` is missing a modifier or type suffix"),
    ("eq.ftz.f32", "`eq.ftz.f32` has unexpected modifiers"),
    ("select.u32.u32", "`select.u32.u32` has unexpected modifiers"),
    ("bitcast.f32", "`bitcast.f32` is missing a modifier or type suffix"),
    ("bitcast.f32.u32.u32", "`bitcast.f32.u32.u32` has unexpected modifiers"),
    ("bitcast.q.u32", "unknown type `q` in `bitcast.q.u32`"),
    ("bitcast.u32.q", "unknown type `q` in `bitcast.u32.q`"),
    ("load.u32", "`load.u32` has unexpected modifiers"),
    ("barrier.sync", "`barrier.sync` has unexpected modifiers"),
    ("call.uni", "`call.uni` has unexpected modifiers"),
    ("addr.x", "`addr.x` has unexpected modifiers"),
    // Dimensions and mode words.
    ("tid.w", "`tid.w`: the dimension must be `x`, `y` or `z`"),
    ("global_id.X", "`global_id.X`: the dimension must be `x`, `y` or `z`"),
    ("atom", "`atom` is missing a modifier or type suffix"),
    ("atom.sub", "unknown atomic operation `sub` (expected add, min, max, exch or cas)"),
    ("atom.add.u32", "`atom.add.u32` has unexpected modifiers"),
    ("atom.cas.u32", "`atom.cas.u32` has unexpected modifiers"),
    ("shfl.sideways.f32", "unknown shuffle mode `sideways` (expected down, up, bfly or idx)"),
    ("shfl.sideways.q32", "unknown shuffle mode `sideways` (expected down, up, bfly or idx)"),
    ("shfl.down", "`shfl.down` is missing a modifier or type suffix"),
    ("shfl.down.q32", "unknown type `q32` in `shfl.down.q32`"),
    ("vote.some", "unknown vote mode `some` (expected all, any or ballot)"),
    ("vote.all.pred", "`vote.all.pred` has unexpected modifiers"),
    // Conversions.
    ("cvt", "`cvt` needs a destination and a source type (e.g. `cvt.f32.u32`)"),
    ("cvt.f32", "`cvt.f32` needs a destination and a source type (e.g. `cvt.f32.u32`)"),
    ("cvt.q32.u32", "unknown type `q32` in `cvt.q32.u32`"),
    ("cvt.q1.q2", "unknown type `q1` in `cvt.q1.q2`"),
    ("cvt.rz.rn.f32.f64", "unexpected modifier `.rn` in `cvt.rz.rn.f32.f64`"),
    ("cvt.sat.sat.f32.f64", "unexpected modifier `.sat` in `cvt.sat.sat.f32.f64`"),
    ("cvt.approx.f32.f64", "unexpected modifier `.approx` in `cvt.approx.f32.f64`"),
    // Pointer ops.
    ("offset.foo", "unexpected modifier `.foo` in `offset.foo` (did you mean `offset.bytes`?)"),
    ("offset.bytes.u32", "`offset.bytes.u32` has unexpected modifiers"),
    ("offset.foo.bar", "`offset.foo.bar` has unexpected modifiers"),
    ("ptrcast", "`ptrcast` needs the target pointer type: `%q = ptrcast %p : ptr<global, u8>`"),
    ("ptrcast.u8", "`ptrcast.u8` has unexpected modifiers"),
];

#[test]
fn rejected_spellings_keep_their_messages() {
    for (m, want) in REJECTED {
        assert_eq!(parse_mnemonic(m, None), Err(want.to_string()), "`{m}`");
        assert!(accepting(m, None).is_empty(), "`{m}` is accepted by a family");
    }
    // `ptrcast` wants a pointer annotation, not just any type.
    let want = "`ptrcast` needs the target pointer type: `%q = ptrcast %p : ptr<global, u8>`";
    assert_eq!(parse_mnemonic("ptrcast", Some(Type::U32)), Err(want.to_string()));
}
