//! Verifier unit tests: SSA dominance, block arguments and branch conditions, on kernels built
//! programmatically (IR the parser cannot produce, or edited in place). The cases written as
//! `.kir` text are filetests: `tests/filetests/verify/ssa_*.kir` and
//! `every_kernel_is_verified.kir` (run by `tests/filetests.rs` in the `kir` crate).

use kir_ir::*;

mod common;
use common::*;

fn add(k: &mut Kernel, b: BlockId, name: &str, x: Operand, y: Operand) -> ValueId {
    let i = k.append_inst(
        b,
        Op::Bin(BinOp::Add, ScalarType::U32, FloatFlags::RN),
        vec![x, y],
        Some((name.into(), Type::U32)),
        Span::DUMMY,
    );
    k.inst(i).result.unwrap()
}

fn jmp(block: BlockId, args: Vec<Operand>) -> Terminator {
    Terminator::Jmp(BlockCall { block, args })
}

fn br(cond: Operand, t: BlockId, e: BlockId) -> Terminator {
    Terminator::Br { cond, then_: BlockCall { block: t, args: vec![] }, else_: BlockCall { block: e, args: vec![] } }
}

const ONE: Operand = Operand::Const(Constant { ty: ScalarType::U32, bits: 1 });

#[test]
fn use_before_definition_in_the_same_block() {
    let mut k = Kernel::new("k");
    let b = k.add_block("entry");
    let a = k.add_param("a", Type::U32);
    let y = add(&mut k, b, "y", a.into(), ONE);
    let x = add(&mut k, b, "x", a.into(), ONE);
    // %y = add %x, 1 before %x is defined.
    let first = k.blocks[0].insts[0];
    k.inst_mut(first).args[0] = x.into();
    let _ = y;
    assert_error(&k, "`%x` is used before it is defined in block `entry`");
}

#[test]
fn an_instruction_cannot_use_its_own_result() {
    let mut k = Kernel::new("k");
    let b = k.add_block("entry");
    let y = add(&mut k, b, "y", ONE, ONE);
    let i = k.blocks[0].insts[0];
    k.inst_mut(i).args[0] = y.into();
    assert_error(&k, "`add.u32` uses its own result `%y`");
}

#[test]
fn definition_must_dominate_use_across_blocks() {
    // entry -> then -> join, entry -> join; %y defined in `then`, used in `join`.
    let mut k = Kernel::new("k");
    let p = k.add_param("p", Type::PRED);
    let entry = k.add_block("entry");
    let then = k.add_block("then");
    let join = k.add_block("join");
    k.block_mut(entry).term = br(p.into(), then, join);
    let y = add(&mut k, then, "y", ONE, ONE);
    k.block_mut(then).term = jmp(join, vec![]);
    add(&mut k, join, "z", y.into(), ONE);
    assert_error(&k, "`%y` is used in block `join`, but its definition in block `then` does not dominate this use");
    // Passing it through a block parameter fixes it.
    let mut k2 = Kernel::new("k");
    let p = k2.add_param("p", Type::PRED);
    let entry = k2.add_block("entry");
    let then = k2.add_block("then");
    let join = k2.add_block("join");
    let yp = k2.add_block_param(join, "yp", Type::U32);
    k2.block_mut(entry).term = Terminator::Br {
        cond: p.into(),
        then_: BlockCall { block: then, args: vec![] },
        else_: BlockCall { block: join, args: vec![ONE] },
    };
    let y = add(&mut k2, then, "y", ONE, ONE);
    k2.block_mut(then).term = jmp(join, vec![y.into()]);
    add(&mut k2, join, "z", yp.into(), ONE);
    assert_clean(&k2);
}

#[test]
fn block_argument_arity_and_types() {
    let mut k = Kernel::new("k");
    let x = k.add_param("x", Type::F32);
    let entry = k.add_block("entry");
    let next = k.add_block("next");
    k.add_block_param(next, "i", Type::U32);
    k.block_mut(entry).term = jmp(next, vec![]);
    assert_error(&k, "block `next` takes 1 argument, but `jmp` passes 0");
    k.block_mut(entry).term = jmp(next, vec![ONE, ONE]);
    assert_error(&k, "block `next` takes 1 argument, but `jmp` passes 2");
    k.block_mut(entry).term = jmp(next, vec![x.into()]);
    assert_error(
        &k,
        "block argument 1 of `jmp` is `%x`, of type `f32`, but parameter `%i` of block `next` has type `u32`",
    );
    k.block_mut(entry).term = jmp(next, vec![Constant::f32(1.0).into()]);
    assert_error(&k, "block argument 1 of `jmp` is the constant `1.0`, of type `f32`");
    k.block_mut(entry).term = jmp(next, vec![ONE]);
    assert_clean(&k);
    // Both edges of a br are checked, and named.
    let p = k.add_param("p", Type::PRED);
    k.block_mut(entry).term = Terminator::Br {
        cond: p.into(),
        then_: BlockCall { block: next, args: vec![ONE] },
        else_: BlockCall { block: next, args: vec![x.into()] },
    };
    let e = errors(&k);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].contains("the `else` edge of `br`"), "{e:#?}");
}

#[test]
fn branch_condition_must_be_pred() {
    let mut k = Kernel::new("k");
    let n = k.add_param("n", Type::U32);
    let entry = k.add_block("entry");
    let exit = k.add_block("exit");
    k.block_mut(entry).term = br(n.into(), exit, exit);
    assert_error(&k, "the condition of `br` must be a `pred`, but `%n` has type `u32`");
    k.block_mut(entry).term = br(Constant::pred(true).into(), exit, exit);
    assert_clean(&k);
}
