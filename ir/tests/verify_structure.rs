//! Verifier unit tests: entity handles, back-pointers, placement, names, the entry block, shared
//! memory, and where diagnostics point when entities have no source location.

use kir_ir::diag::Severity;
use kir_ir::verify::{verify_module, MAX_STATIC_SHARED_BYTES};
use kir_ir::*;

mod common;
use common::*;

/// `out[tid] = a + 1` over a loop-free diamond: a clean kernel the tests then break.
fn sample() -> Kernel {
    let mut k = Kernel::new("sample");
    let out = k.add_param("out", Type::Ptr(AddrSpace::Global, ScalarType::U32));
    let a = k.add_param("a", Type::U32);
    let entry = k.add_block("entry");
    let body = k.add_block("body");
    let exit = k.add_block("exit");
    let tid = k.append_inst(
        entry,
        Op::Special(SpecialReg::Tid(Dim::X)),
        vec![],
        Some(("tid".into(), Type::U32)),
        Span::DUMMY,
    );
    let tid = k.inst(tid).result.unwrap();
    let c = k.append_inst(
        entry,
        Op::Cmp(CmpOp::Lt, ScalarType::U32),
        vec![tid.into(), a.into()],
        Some(("c".into(), Type::PRED)),
        Span::DUMMY,
    );
    let c = k.inst(c).result.unwrap();
    k.block_mut(entry).term = Terminator::Br {
        cond: c.into(),
        then_: BlockCall { block: body, args: vec![] },
        else_: BlockCall { block: exit, args: vec![] },
    };
    let s = k.append_inst(
        body,
        Op::Bin(BinOp::Add, ScalarType::U32, FloatFlags::RN),
        vec![a.into(), Constant::u32(1).into()],
        Some(("s".into(), Type::U32)),
        Span::DUMMY,
    );
    let s = k.inst(s).result.unwrap();
    k.append_inst(body, Op::Store, vec![out.into(), tid.into(), s.into()], None, Span::DUMMY);
    k.block_mut(body).term = Terminator::Jmp(BlockCall { block: exit, args: vec![] });
    k
}

#[test]
fn the_sample_kernel_is_clean() {
    assert_clean(&sample());
}

#[test]
fn a_kernel_needs_a_block() {
    assert_error(&Kernel::new("k"), "kernel `@k` has no blocks");
}

#[test]
fn dangling_value_handles_are_reported() {
    let mut k = sample();
    let i = k.blocks[1].insts[0];
    k.inst_mut(i).args[0] = Operand::Value(ValueId(999));
    assert_error(&k, "operand 1 of `add.u32` uses a value that does not exist (dangling handle #999)");
    let mut k = sample();
    k.blocks[0].term = Terminator::Br {
        cond: Operand::Value(ValueId(u32::MAX)),
        then_: BlockCall { block: BlockId(1), args: vec![] },
        else_: BlockCall { block: BlockId(2), args: vec![] },
    };
    assert_error(&k, "the condition of `br` uses a value that does not exist");
    let mut k = sample();
    k.params.push(ValueId(77));
    assert_error(&k, "kernel parameter 3 is a dangling value handle (#77)");
}

#[test]
fn dangling_block_and_instruction_handles_are_reported() {
    let mut k = sample();
    k.blocks[1].term = Terminator::Jmp(BlockCall { block: BlockId(9), args: vec![] });
    assert_error(&k, "`jmp` targets block #9, which does not exist");
    let mut k = sample();
    k.blocks[2].insts.push(InstId(500));
    assert_error(&k, "block `exit` lists instruction #500 (position 1), which does not exist");
    let mut k = sample();
    let r = k.blocks[1].insts[0];
    k.insts[r.index()].result = Some(ValueId(400));
    assert_error(&k, "the result of `add.u32` is a dangling value handle (#400)");
}

#[test]
fn an_instruction_is_placed_once() {
    let mut k = sample();
    let i = k.blocks[1].insts[0];
    k.blocks[2].insts.push(i);
    assert_error(&k, "instruction `add.u32` is placed in block `body` and again in block `exit`");
    let mut k = sample();
    let i = k.blocks[1].insts[0];
    k.blocks[1].insts.insert(1, i);
    assert_error(&k, "instruction `add.u32` is placed twice in block `body`");
}

#[test]
fn value_definitions_point_back() {
    let mut k = sample();
    let r = k.inst(k.blocks[1].insts[0]).result.unwrap();
    k.values[r.index()].def = ValueDef::Param(0);
    assert_error(&k, "the result `%s` of `add.u32` records its definition as Param(0)");
    let mut k = sample();
    k.values[k.params[1].index()].def = ValueDef::Param(0);
    assert_error(&k, "kernel parameter `%a` records its definition as Param(0), but it is parameter 1");
    let mut k = sample();
    let p = k.add_block_param(BlockId(2), "p", Type::U32);
    k.values[p.index()].def = ValueDef::BlockParam(BlockId(1), 0);
    assert_error(&k, "block parameter `%p` records its definition as BlockParam(BlockId(1), 0)");
    // A value both a kernel parameter and an instruction result.
    let mut k = sample();
    let a = k.params[1];
    let i = k.blocks[1].insts[0];
    k.inst_mut(i).result = Some(a);
    assert_error(&k, "value `%a` is defined more than once");
}

#[test]
fn uses_of_removed_instructions_are_reported() {
    let mut k = sample();
    // Remove the `add` from its block but keep using its result in the store.
    k.blocks[1].insts.remove(0);
    assert_error(&k, "`%s` is used by `store`, but no parameter or placed instruction defines it");
    // Dead arena entries that nobody uses are fine.
    let mut k = sample();
    k.create_inst(Op::Barrier, vec![], None, Span::DUMMY);
    assert_clean(&k);
}

#[test]
fn compact_then_verify_reports_dangling_uses() {
    let mut k = sample();
    k.blocks[1].insts.remove(0);
    k.compact();
    assert_error(&k, "dangling handle");
}

#[test]
fn pointers_to_pred_are_rejected() {
    let mut k = sample();
    k.add_param("bad", Type::Ptr(AddrSpace::Global, ScalarType::Pred));
    assert_error(&k, "`%bad` has type `ptr<global, pred>`: pointers to `pred` are not allowed");
}

#[test]
fn names_are_unique() {
    let mut k = sample();
    let i = k.blocks[1].insts[0];
    let r = k.inst(i).result.unwrap();
    k.values[r.index()].name = "tid".into();
    assert_error(&k, "duplicate value name `%tid`");
    let mut k = sample();
    k.blocks[2].name = "body".into();
    assert_error(&k, "duplicate block label `body`");
    let mut k = sample();
    for _ in 0..2 {
        k.shared.push(SharedDecl {
            name: "t".into(),
            elem: ScalarType::F32,
            len: Some(4),
            align: 4,
            span: Span::DUMMY,
        });
    }
    assert_error(&k, "duplicate shared declaration `@t`");
    let m = Module { kernels: vec![sample(), sample()], ..Default::default() };
    let d = verify_module(&m);
    assert_eq!(d.iter().filter(|d| d.is_error()).count(), 1, "{d:#?}");
    assert!(d[0].message.contains("duplicate kernel name `@sample`"));
}

#[test]
fn names_must_be_spellable() {
    let mut k = sample();
    let r = k.inst(k.blocks[1].insts[0]).result.unwrap();
    k.values[r.index()].name = "a b".into();
    assert_error(&k, "value name `%a b` cannot be written");
    let mut k = sample();
    k.values[k.params[0].index()].name = Default::default();
    assert_error(&k, "value name `%` cannot be written");
    let mut k = sample();
    k.blocks[2].name = "ret".into();
    assert_error(&k, "block label `ret` cannot be written");
    let mut k = sample();
    k.blocks[2].name = "9lives".into();
    assert_error(&k, "block label `9lives` cannot be written");
    let mut k = sample();
    k.blocks[2].name = "exit..x".into();
    assert_error(&k, "block label `exit..x` cannot be written");
    let mut k = sample();
    k.name = "1k".into();
    assert_error(&k, "kernel name `@1k` cannot be written");
    // Names the printer and parser accept.
    let mut k = sample();
    k.blocks[2].name = "loop.exit_2".into();
    let r = k.inst(k.blocks[1].insts[0]).result.unwrap();
    k.values[r.index()].name = "0.s.1".into();
    assert_clean(&k);
}

#[test]
fn the_entry_block_has_no_parameters() {
    let mut k = sample();
    k.add_block_param(BlockId(0), "i", Type::U32);
    assert_error(&k, "the entry block `entry` has 1 parameter, but the entry block takes none");
}

#[test]
fn branching_back_to_the_entry_block_is_allowed() {
    let mut k = sample();
    let cond = match &k.blocks[0].term {
        Terminator::Br { cond, .. } => *cond,
        _ => unreachable!(),
    };
    // body: loop back to entry or leave.
    k.blocks[1].term = Terminator::Br {
        cond,
        then_: BlockCall { block: BlockId(0), args: vec![] },
        else_: BlockCall { block: BlockId(2), args: vec![] },
    };
    assert_clean(&k);
}

fn decl(name: &str, elem: ScalarType, len: Option<u64>, align: u32) -> SharedDecl {
    SharedDecl { name: name.into(), elem, len, align, span: Span::DUMMY }
}

#[test]
fn shared_memory_rules() {
    let mut k = sample();
    k.shared = vec![decl("a", ScalarType::F32, None, 4), decl("b", ScalarType::U32, None, 4)];
    assert_error(&k, "dynamic shared memory (`[]`) only once");

    // Exactly 48 KiB of static shared memory is fine; one more element is not.
    let mut k = sample();
    k.shared =
        vec![decl("a", ScalarType::F32, Some(MAX_STATIC_SHARED_BYTES / 4), 4), decl("d", ScalarType::F32, None, 4)];
    assert_clean(&k);
    k.shared.push(decl("b", ScalarType::U8, Some(1), 1));
    assert_error(&k, "declares 49153 bytes of static shared memory, more than the 49152 bytes");

    // Alignment padding counts: 1 byte, then an f64 aligned to 256.
    let mut k = sample();
    k.shared = vec![decl("a", ScalarType::U8, Some(1), 1), decl("b", ScalarType::F64, Some(6112), 256)];
    // 1 + 255 bytes of padding + 6112 * 8 = 49152: exactly the limit.
    assert_clean(&k);
    k.shared[1].len = Some(6113);
    assert_error(&k, "declares 49160 bytes");

    let mut k = sample();
    k.shared = vec![decl("a", ScalarType::Pred, Some(4), 1)];
    assert_error(&k, "has element type `pred`");
    k.shared = vec![decl("a", ScalarType::F32, Some(4), 2)];
    assert_error(&k, "alignment 2, which is not a power of two of at least 4");
    k.shared = vec![decl("a", ScalarType::F32, Some(4), 12)];
    assert_error(&k, "alignment 12");
    k.shared = vec![decl("a", ScalarType::F32, Some(0), 4)];
    assert_error(&k, "has length 0");
}

#[test]
fn diagnostics_never_point_at_a_dummy_span() {
    // Parsed kernel: the instruction has a span.
    let src = "kernel @k(%n: u32) {\nentry:\n  %x = add.f32 %n, 1.0\n  ret\n}\n";
    let m = parse(src).unwrap();
    let d = verify_module(&m);
    assert_eq!(d.len(), 1);
    let span = d[0].span().unwrap();
    assert_eq!(&src[span.range()], "%x = add.f32 %n, 1.0");

    // A pass then appends an instruction without a span: the caret falls back to its block.
    let mut m = m;
    let k = &mut m.kernels[0];
    let n = k.params[0];
    k.append_inst(
        BlockId(0),
        Op::Bin(BinOp::Mul, ScalarType::F32, FloatFlags::RN),
        vec![n.into(), n.into()],
        Some(("y".into(), Type::F32)),
        Span::DUMMY,
    );
    let d = verify_module(&m);
    assert_eq!(d.len(), 3, "{d:#?}");
    let fallback: Vec<_> = d.iter().filter(|d| d.message.contains("mul.f32")).collect();
    assert_eq!(fallback.len(), 2);
    for f in fallback {
        let p = f.primary.as_ref().unwrap();
        assert_eq!(&src[p.span.range()], "entry");
        assert!(p.message.contains("in this block; the instruction has no source location"), "{}", p.message);
        assert!(f.notes.iter().any(|n| n.contains("instruction `%y = mul.f32 %n, %n`")), "{:?}", f.notes);
    }

    // Entirely pass-built kernel: no caret at all, the entity is named in the notes.
    let mut k = Kernel::new("k");
    let b = k.add_block("entry");
    k.append_inst(
        b,
        Op::Unary(UnOp::Sin, ScalarType::F32, FloatFlags::RN),
        vec![Constant::f32(1.0).into()],
        Some(("s".into(), Type::F32)),
        Span::DUMMY,
    );
    let d = kir_ir::verify::verify_body(&k, None, None).0;
    assert_eq!(d.len(), 1);
    assert!(d[0].primary.is_none());
    assert!(
        d[0].notes.iter().any(|n| n.contains("in kernel `@k`, block `entry`, instruction `%s = sin.f32 1.0`")),
        "{:?}",
        d[0].notes
    );
}

#[test]
fn unreachable_blocks_are_warnings() {
    let mut k = sample();
    let dead = k.add_block("dead");
    k.append_inst(dead, Op::Barrier, vec![], None, Span::DUMMY);
    let d = kir_ir::verify::verify_body(&k, None, None).0;
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].severity, Severity::Warning);
    assert_eq!(d[0].message, "block `dead` is unreachable");
}

#[test]
fn diagnostics_are_sorted_by_source_position() {
    let src = "kernel @k(%n: u32, %out: ptr<global, f32>) {\nentry:\n  br %n, a, a\na:\n  %x = add.f32 %n, 1.0\n  store %out[0], %n\n  ret\n}\n";
    let m = parse(src).unwrap();
    let d = verify_module(&m);
    assert_eq!(d.len(), 3, "{d:#?}");
    let starts: Vec<u32> = d.iter().map(|d| d.span().unwrap().start).collect();
    let mut sorted = starts.clone();
    sorted.sort();
    assert_eq!(starts, sorted);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// A mutation of one handle of the sample kernel to an arbitrary (often dangling) index.
    #[derive(Clone, Debug)]
    enum Mutation {
        Operand { inst: usize, arg: usize, to: u32 },
        Target { block: usize, to: u32 },
        Placed { block: usize, to: u32 },
        Result { inst: usize, to: u32 },
        Param { to: u32 },
        Def { value: usize, to: u32 },
        Remove { block: usize },
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            (0..8usize, 0..3usize, 0..12u32).prop_map(|(inst, arg, to)| Mutation::Operand { inst, arg, to }),
            (0..3usize, 0..5u32).prop_map(|(block, to)| Mutation::Target { block, to }),
            (0..3usize, 0..8u32).prop_map(|(block, to)| Mutation::Placed { block, to }),
            (0..8usize, 0..12u32).prop_map(|(inst, to)| Mutation::Result { inst, to }),
            (0..12u32).prop_map(|to| Mutation::Param { to }),
            (0..12usize, 0..6u32).prop_map(|(value, to)| Mutation::Def { value, to }),
            (0..3usize).prop_map(|block| Mutation::Remove { block }),
        ]
    }

    fn apply(k: &mut Kernel, m: &Mutation) {
        match *m {
            Mutation::Operand { inst, arg, to } => {
                if let Some(a) = k.insts.get_mut(inst).and_then(|i| i.args.get_mut(arg)) {
                    *a = Operand::Value(ValueId(to));
                }
            }
            Mutation::Target { block, to } => {
                if let Some(b) = k.blocks.get_mut(block) {
                    for c in b.term.successors_mut() {
                        c.block = BlockId(to);
                    }
                }
            }
            Mutation::Placed { block, to } => {
                if let Some(b) = k.blocks.get_mut(block) {
                    b.insts.push(InstId(to));
                }
            }
            Mutation::Result { inst, to } => {
                if let Some(i) = k.insts.get_mut(inst) {
                    i.result = Some(ValueId(to));
                }
            }
            Mutation::Param { to } => k.params.push(ValueId(to)),
            Mutation::Def { value, to } => {
                if let Some(v) = k.values.get_mut(value) {
                    v.def = match to % 3 {
                        0 => ValueDef::Param(to),
                        1 => ValueDef::BlockParam(BlockId(to), to),
                        _ => ValueDef::Inst(InstId(to)),
                    };
                }
            }
            Mutation::Remove { block } => {
                if let Some(b) = k.blocks.get_mut(block) {
                    b.insts.pop();
                }
            }
        }
    }

    proptest! {
        /// Whatever the handles, the verifier returns (never panics), and a mutated kernel that it
        /// accepts without errors still prints.
        #[test]
        fn the_verifier_never_panics(ms in proptest::collection::vec(mutation(), 1..6)) {
            let mut k = sample();
            for m in &ms {
                apply(&mut k, m);
            }
            let d = kir_ir::verify::verify_body(&k, None, None).0;
            if !d.iter().any(|d| d.is_error()) {
                let _ = print_kernel(&k);
            }
        }
    }
}
