//! Verifier unit tests: SSA dominance, unreachable blocks, block arguments and branch conditions,
//! on kernels built programmatically and on parsed text.

use kir_ir::diag::Severity;
use kir_ir::verify::{verify_kernel, verify_module};
use kir_ir::*;

mod common;
use common::*;

fn kernel(src: &str) -> Kernel {
    parse(src).unwrap_or_else(|d| panic!("test kernel does not parse: {d:#?}")).kernels.remove(0)
}

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
fn a_loop_with_block_parameters_is_clean() {
    let k = kernel(
        "kernel @sum(%n: u32, %out: ptr<global, u32>) {
entry:
  jmp loop(0, 0)
loop(%i: u32, %acc: u32):
  %acc.next = add.u32 %acc, %i
  %i.next = add.u32 %i, 1
  %more = lt.u32 %i.next, %n
  br %more, loop(%i.next, %acc.next), exit(%acc.next)
exit(%r: u32):
  store %out[0], %r
  ret
}",
    );
    assert_clean(&k);
}

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
fn block_parameters_dominate_only_their_block_s_dominance_region() {
    let k = kernel(
        "kernel @k(%p: pred) {
entry:
  br %p, a(1), b
a(%x: u32):
  jmp b
b:
  %y = add.u32 %x, 1
  ret
}",
    );
    assert_error(&k, "`%x` is used in block `b`, but its definition in block `a` does not dominate this use");
}

#[test]
fn block_arguments_are_uses_at_the_end_of_the_branching_block() {
    // A value defined in the same block as the jump, after nothing else: fine.
    let k = kernel(
        "kernel @k() {
entry:
  %v = add.u32 1, 2
  jmp next(%v)
next(%w: u32):
  ret
}",
    );
    assert_clean(&k);
    // A value defined in the target, passed on the edge into it from a block it does not dominate.
    let k = kernel(
        "kernel @k() {
entry:
  jmp next(%v)
next(%w: u32):
  %v = add.u32 %w, 1
  ret
}",
    );
    assert_error(&k, "`%v` is used in block `entry`, but its definition in block `next` does not dominate this use");
    // A loop latch passing its own value back to the header: fine.
    let k = kernel(
        "kernel @k(%n: u32) {
entry:
  jmp h(0)
h(%i: u32):
  %i2 = add.u32 %i, 1
  %c = lt.u32 %i2, %n
  br %c, h(%i2), out
out:
  ret
}",
    );
    assert_clean(&k);
}

#[test]
fn branch_condition_is_a_use_at_the_end_of_the_block() {
    let k = kernel(
        "kernel @k(%n: u32) {
entry:
  %c = lt.u32 %n, 4
  br %c, a, a
a:
  ret
}",
    );
    assert_clean(&k);
    let k = kernel(
        "kernel @k(%n: u32) {
entry:
  br %c, a, b
a:
  %c = lt.u32 %n, 4
  ret
b:
  ret
}",
    );
    assert_error(&k, "`%c` is used in block `entry`, but its definition in block `a` does not dominate this use");
}

#[test]
fn unreachable_blocks_warn_once_and_skip_dominance() {
    // `dead` uses %y from `live`, which does not dominate it: not reported, the block is dead.
    let k = kernel(
        "kernel @k(%out: ptr<global, u32>) {
entry:
  jmp live
dead:
  store %out[0], %y
  jmp dead
live:
  %y = add.u32 1, 2
  ret
}",
    );
    let d = verify_kernel(&k);
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].severity, Severity::Warning);
    assert_eq!(d[0].message, "block `dead` is unreachable");
    // Type errors inside unreachable blocks are still errors.
    let k = kernel(
        "kernel @k(%out: ptr<global, f32>) {
entry:
  ret
dead:
  %v = add.u32 1, 2
  store %out[0], %v
  ret
}",
    );
    let d = verify_kernel(&k);
    assert_eq!(d.iter().filter(|d| d.is_error()).count(), 1, "{d:#?}");
}

#[test]
fn values_defined_in_unreachable_blocks_cannot_be_used_in_reachable_ones() {
    let k = kernel(
        "kernel @k() {
entry:
  jmp exit
dead:
  %y = add.u32 1, 2
  jmp exit
exit:
  %z = add.u32 %y, 1
  ret
}",
    );
    assert_error(&k, "block `dead` is unreachable, so `%y` is never defined");
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

#[test]
fn kernel_parameters_dominate_everything() {
    let k = kernel(
        "kernel @k(%a: u32, %p: pred) {
entry:
  br %p, x, y
x:
  %u = add.u32 %a, 1
  jmp y
y:
  %v = add.u32 %a, 2
  ret
}",
    );
    assert_clean(&k);
}

#[test]
fn every_kernel_of_a_module_is_verified() {
    let m = parse(
        "kernel @a() {
entry:
  ret
}
kernel @b(%n: u32) {
entry:
  br %n, entry, entry
}",
    )
    .unwrap();
    let d = verify_module(&m);
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(d[0].notes.iter().any(|n| n.contains("in kernel `@b`")));
}
