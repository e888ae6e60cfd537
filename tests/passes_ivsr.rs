//! `ivsr` (passes/src/ivsr.rs) preserves semantics bit for bit and does what it claims on the
//! loops `unroll` leaves.
//!
//! - Properties: on random valid kernels with loops (`kir_ir::generate`), partially unrolled by 2
//!   or 3 and then strength-reduced, the interpreter's outputs are bit-identical to the original's;
//!   and a counted loop whose index is `j * s + c` (any `s`, `c`, start and bound, so products and
//!   sums wrap around 2^32) keeps its outputs after `unroll,ivsr,dce` at factors 2 to 5.
//! - Hand-written kernels pin the transformation: after unrolling by 4, the main loop holds no
//!   `mad`, its copies step the new induction variable by `%s` and the counter's chain is rebased;
//!   a loop with one copy of its body is left alone.

use kir_interp::{Arg, Buffer, LaunchConfig, Options};
use kir_ir::generate::GenConfig;
use kir_ir::{Constant, Kernel, ScalarType};
use kir_passes::{parse_pipeline, run_on_kernel};
use proptest::prelude::*;
use verified_launch::launch;

mod generated;
mod verified_launch;

fn loopy(insts: usize, divergent: bool) -> GenConfig {
    generated::loopy(insts, 40, divergent)
}

/// Runs `pipeline` on `k`; returns the sum of the named statistic over its steps.
fn apply(k: &mut Kernel, pipeline: &str, stat: &str) -> u64 {
    let p = parse_pipeline(pipeline).unwrap();
    let r = run_on_kernel(k, &p).unwrap_or_else(|e| panic!("{e}: {:?}", e.diagnostics()));
    r.steps.iter().map(|s| s.stats.get(stat)).sum()
}

/// `q[t] = sum over j in [start, n) of p[(j * s + c) & 255] + (j * s + c)` for each of 32
/// threads, with `c` offset by the thread: the index is a `mad` of the counter.
const STRIDED: &str = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %start: u32, %n: u32, %s: u32, %c: u32) {
entry:
  %t = tid.x
  %ct = add.u32 %c, %t
  jmp head(%start, 0)
head(%j: u32, %acc: u32):
  %more = lt.u32 %j, %n
  br %more, body, done
body:
  %idx = mad.u32 %j, %s, %ct
  %w = and.u32 %idx, 255
  %x = load %p[%w]
  %y = add.u32 %x, %idx
  %acc.next = add.u32 %acc, %y
  %j.next = add.u32 %j, 1
  jmp head(%j.next, %acc.next)
done:
  store %q[%t], %acc
  ret
}
";

fn parse_one(src: &str) -> Kernel {
    kir_ir::parse(src).unwrap_or_else(|e| panic!("{e:?}")).kernels.into_iter().next().unwrap()
}

fn run_strided(k: &Kernel, start: u32, n: u32, s: u32, c: u32) -> Vec<u32> {
    let mut bufs = vec![
        Buffer::from_bits(ScalarType::U32, (0..256u64).map(|i| i.wrapping_mul(0x9e37_79b9) & 0xffff_ffff)),
        Buffer::from_bits(ScalarType::U32, [0u64; 32]),
    ];
    let args = [
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::Scalar(Constant::u32(start)),
        Arg::Scalar(Constant::u32(n)),
        Arg::Scalar(Constant::u32(s)),
        Arg::Scalar(Constant::u32(c)),
    ];
    let opts = Options { races: true, uninit: true, threads: Some(1), ..Options::default() };
    launch(k, &LaunchConfig::linear(1, 32), &args, &mut bufs, &opts)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", kir_ir::print_kernel(k)));
    bufs[1].to_u32()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn strength_reduction_after_partial_unrolling_preserves_interpreter_outputs(
        seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160,
    ) {
        let pipeline = if seed % 2 == 0 { "unroll{max-trip=0 factor=2},ivsr,dce" } else { "unroll{max-trip=0 factor=3},fold,simplify-cfg,ivsr,cse,dce" };
        generated::pipeline_keeps_outputs(seed, &loopy(insts, seed % 3 == 0), input_seed, pipeline)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn a_strided_index_keeps_its_values_when_products_wrap(
        factor in 2u32..6, start in prop_oneof![0u32..8, (u32::MAX - 8)..=u32::MAX],
        trips in 0u32..23, s in any::<u32>(), c in any::<u32>(),
    ) {
        let original = parse_one(STRIDED);
        let mut k = original.clone();
        let families = apply(&mut k, &format!("unroll{{max-trip=0 factor={factor}}},fold,simplify-cfg,ivsr,dce"), "induction families reduced");
        prop_assert!(families >= 1, "{}", kir_ir::print_kernel(&k));
        // A bound below the start runs nothing; one past it wraps the counter through 2^32 - 1.
        let n = start.wrapping_add(trips);
        let n = if n < start { u32::MAX } else { n };
        prop_assert_eq!(run_strided(&original, start, n, s, c), run_strided(&k, start, n, s, c));
    }
}

#[test]
fn the_unrolled_main_loop_steps_the_index_instead_of_multiplying() {
    let mut k = parse_one(STRIDED);
    let stats = parse_pipeline("unroll{max-trip=0 factor=4},fold,simplify-cfg,ivsr,dce").unwrap();
    let r = run_on_kernel(&mut k, &stats).unwrap();
    let stat = |name: &str| r.steps.iter().map(|s| s.stats.get(name)).sum::<u64>();
    assert_eq!(stat("induction families reduced"), 1, "{}", kir_ir::print_kernel(&k));
    assert_eq!(stat("instructions strength-reduced"), 4, "{}", kir_ir::print_kernel(&k));
    assert_eq!(stat("chain values rebased"), 3, "j+2, j+3 and j+4 (j+1 already is):\n{}", kir_ir::print_kernel(&k));
    let text = kir_ir::print_kernel(&k);
    // Four copies of `mad` in the main loop and one in the remainder loop before; after, the
    // remainder loop's (one copy of its body: left alone) and the new variable's initial value
    // before the main loop.
    let mads: Vec<&str> = text.lines().filter(|l| l.contains("mad.u32")).collect();
    assert_eq!(mads.len(), 2, "the main loop still multiplies:\n{text}");
    assert!(mads[0].contains(".sr.init = mad.u32 %s, %start, %ct"), "{text}");
    assert_eq!(text.lines().filter(|l| l.ends_with(", %s")).count(), 3, "copies 2 to 4 step by %s:\n{text}");
    assert!(text.contains("mul.u32 %s, 4"), "the back edge's stride is computed before the loop:\n{text}");
    for n in [0u32, 1, 3, 4, 5, 8, 13] {
        assert_eq!(run_strided(&parse_one(STRIDED), 2, n, 7, 11), run_strided(&k, 2, n, 7, 11), "n = {n}");
    }
}

#[test]
fn a_loop_with_one_copy_of_its_body_is_left_alone() {
    let mut k = parse_one(STRIDED);
    let before = kir_ir::print_kernel(&k);
    assert_eq!(apply(&mut k, "ivsr", "induction families reduced"), 0);
    assert_eq!(apply(&mut k, "ivsr", "chain values rebased"), 0);
    assert_eq!(kir_ir::print_kernel(&k), before);
}
