//! `unroll`, `offsets`, `cse` and `layout` (passes/src/{unroll,offsets,cse,layout}.rs) preserve semantics bit for
//! bit, and do what they claim on the loops kernels are made of.
//!
//! - Properties: on random valid kernels with loops (`kir_ir::generate`: constant trip counts 0..4,
//!   uniform bounds `x rem 5`, thread-dependent bounds `tid & 3`, nested, with barriers and
//!   collectives in them) and random inputs, the interpreter's outputs are bit-identical before and
//!   after each pass alone, after partial unrolling by 2 and 3 (so the main loop runs for the
//!   small trip counts the generator makes), and after the default pipeline; the IR verifies after
//!   every pass. Sample seeds must unroll fully and partially (the properties are not vacuous).
//! - Hand-written kernels pin the transformations: a 16-step tile loop becomes straight-line code
//!   with constant shared-memory offsets; a counted loop keeps its results for every trip count
//!   around the unroll factor; a trip count that wraps around 2^32 is counted exactly; loops that
//!   leave from their body, or hold a barrier (partial unrolling), are left alone; an index whose
//!   `add` may wrap is not split into pointer and offset; `cse` merges only dominating duplicates.

use kir_interp::{Arg, Buffer, LaunchConfig, Options};
use kir_ir::analysis::cfg::Cfg;
use kir_ir::analysis::loops::LoopForest;
use kir_ir::generate::{self, GenConfig};
use kir_ir::{Constant, Kernel, ScalarType};
use kir_passes::{parse_pipeline, run_on_kernel, DEFAULT_PIPELINE};
use proptest::prelude::*;
mod verified_launch;
use verified_launch::launch;

mod generated;

/// Runs `pipeline` on `k` (verifying after every pass); returns the sum of the named statistic.
fn apply(k: &mut Kernel, pipeline: &str, stat: &str) -> Result<u64, String> {
    let p = parse_pipeline(pipeline)?;
    let r = run_on_kernel(k, &p).map_err(|e| {
        let diags: Vec<String> = e.diagnostics().iter().map(|d| d.message.clone()).collect();
        format!("{e}: {diags:?}")
    })?;
    Ok(r.steps.iter().map(|s| s.stats.get(stat)).sum())
}

fn check(seed: u64, cfg: &GenConfig, input_seed: u64, pipeline: &str) -> Result<(), TestCaseError> {
    generated::pipeline_keeps_outputs(seed, cfg, input_seed, pipeline).map_err(TestCaseError::fail)
}

fn loopy(insts: usize, divergent: bool) -> GenConfig {
    generated::loopy(insts, 40, divergent)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn unroll_alone_preserves_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160) {
        check(seed, &loopy(insts, seed % 2 == 0), input_seed, "unroll")?;
    }

    #[test]
    fn partial_unrolling_by_2_and_3_preserves_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160) {
        let pipeline = if seed % 2 == 0 { "unroll{max-trip=0 factor=2}" } else { "unroll{max-trip=0 factor=3}" };
        check(seed, &loopy(insts, seed % 3 == 0), input_seed, pipeline)?;
    }

    #[test]
    fn offsets_and_cse_preserve_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160) {
        check(seed, &loopy(insts, seed % 2 == 1), input_seed, "unroll,fold,offsets,cse,dce")?;
    }

    #[test]
    fn the_default_pipeline_preserves_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160) {
        check(seed, &loopy(insts, seed % 2 == 0), input_seed, DEFAULT_PIPELINE)?;
    }
}

#[test]
fn generated_loops_are_unrolled_fully_and_partially() {
    let (mut full, mut partial, mut with_loops) = (0u64, 0u64, 0usize);
    for seed in 0..80u64 {
        let g = generate::generate(seed, &loopy(120, seed % 2 == 0));
        if g.loops == 0 {
            continue;
        }
        with_loops += 1;
        let mut k = g.kernel.clone();
        full += apply(&mut k, "unroll", "loops fully unrolled").unwrap();
        let mut k = g.kernel.clone();
        partial += apply(&mut k, "unroll{max-trip=0 factor=2}", "loops partially unrolled").unwrap();
    }
    eprintln!("{with_loops} kernels with loops: {full} loops fully unrolled, {partial} partially (by 2)");
    assert!(with_loops >= 10, "only {with_loops} of 80 generated kernels have loops");
    assert!(full >= 10, "only {full} loops fully unrolled");
    assert!(partial >= 5, "only {partial} loops partially unrolled");
}

fn parse_one(src: &str) -> Kernel {
    let m = kir_ir::parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    m.kernels.into_iter().next().unwrap()
}

fn loops(k: &Kernel) -> usize {
    LoopForest::new(&Cfg::new(k)).loops().len()
}

/// Runs `k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32)` on 64 threads: `%p` holds
/// 0, 3, 6, ... (256 elements), `%q` 256 zeros; returns `%q`.
fn run_pq(k: &Kernel, n: u32) -> Vec<u32> {
    let mut bufs = vec![
        Buffer::from_bits(ScalarType::U32, (0..256u64).map(|i| i * 3)),
        Buffer::from_bits(ScalarType::U32, [0u64; 256]),
    ];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(n))];
    let opts = Options { races: true, uninit: true, threads: Some(1), ..Options::default() };
    launch(k, &LaunchConfig::linear(1, 64), &args, &mut bufs, &opts).unwrap_or_else(|e| panic!("{e:?}"));
    bufs[1].to_u32()
}

#[test]
fn a_tile_loop_becomes_straight_line_code_with_constant_offsets() {
    let src = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32) reqntid(64) {
  shared @tile: u32[256]
entry:
  %t = tid.x
  %sp = addr @tile
  %row = shl.u32 %t, 2
  %x = load %p[%row]
  store %sp[%t], %x
  barrier
  jmp inner(0, 0)
inner(%j: u32, %acc: u32):
  %more = lt.u32 %j, 16
  br %more, body, done
body:
  %ia = add.u32 %t, %j
  %ib = mad.u32 %j, 4, %t
  %a = load %sp[%ia]
  %b = load %p[%ib]
  %ab = mul.u32 %a, %b
  %acc.next = add.u32 %acc, %ab
  %j.next = add.u32 %j, 1
  jmp inner(%j.next, %acc.next)
done:
  store %q[%t], %acc
  ret
}
";
    // %sp[%t + 15] runs past the 64 elements written: give the tile 256 and write all of it.
    let src = src.replace("store %sp[%t], %x\n", "store %sp[%t], %x\n  %t64 = add.u32 %t, 64\n  store %sp[%t64], %x\n");
    let original = parse_one(&src);
    let mut k = original.clone();
    let full = apply(&mut k, DEFAULT_PIPELINE, "loops fully unrolled").unwrap();
    assert_eq!(full, 1);
    assert_eq!(loops(&k), 0, "{}", kir_ir::print_kernel(&k));
    let text = kir_ir::print_kernel(&k);
    assert!(text.contains("load %sp.t[15]"), "shared loads at constant offsets of one pointer:\n{text}");
    assert!(text.contains("load %p.t[60]"), "global loads at constant offsets of one pointer:\n{text}");
    assert_eq!(text.matches(" = offset ").count(), 2, "one pointer per base: `%sp + %t` for the stores and loads of the tile, `%p + %t` for the loads of `%p`:\n{text}");
    assert!(!text.contains("mad.u32"), "the copies' `mad j, 4, t` became constant offsets:\n{text}");
    assert_eq!(run_pq(&original, 0), run_pq(&k, 0));
}

const COUNTED: &str = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32) {
entry:
  %t = tid.x
  jmp head(0, %t)
head(%i: u32, %acc: u32):
  %more = lt.u32 %i, %n
  br %more, body, done
body:
  %x = load %p[%i]
  %odd = and.u32 %x, 1
  %isodd = ne.u32 %odd, 0
  br %isodd, odd, join(%x)
odd:
  %x3 = mul.u32 %x, %acc
  jmp join(%x3)
join(%v: u32):
  %acc.next = add.u32 %acc, %v
  %i.next = add.u32 %i, 1
  jmp head(%i.next, %acc.next)
done:
  store %q[%t], %acc
  ret
}
";

#[test]
fn a_counted_loop_keeps_its_results_for_every_trip_count() {
    let original = parse_one(COUNTED);
    for factor in [2u32, 3, 4, 8] {
        let mut k = original.clone();
        let partial =
            apply(&mut k, &format!("unroll{{factor={factor}}},fold,simplify-cfg,dce"), "loops partially unrolled")
                .unwrap();
        assert_eq!(partial, 1, "{}", kir_ir::print_kernel(&k));
        assert_eq!(loops(&k), 2, "a main loop and the remainder:\n{}", kir_ir::print_kernel(&k));
        for n in [0, 1, 2, 3, 4, 5, 7, 8, 9, 17, 64] {
            assert_eq!(run_pq(&original, n), run_pq(&k, n), "factor {factor}, n = {n}\n{}", kir_ir::print_kernel(&k));
        }
    }
}

#[test]
fn a_trip_count_that_wraps_around_is_counted_exactly() {
    // i = 2^32 - 2, 2^32 - 1, 0, 1, then i == 2 stops it: four trips.
    let src = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32) {
entry:
  %t = tid.x
  jmp head(4294967294, 0)
head(%i: u32, %acc: u32):
  %go = ne.u32 %i, 2
  br %go, body, done
body:
  %acc.next = add.u32 %acc, %i
  %i.next = add.u32 %i, 1
  jmp head(%i.next, %acc.next)
done:
  store %q[%t], %acc
  ret
}
";
    let original = parse_one(src);
    let mut k = original.clone();
    assert_eq!(apply(&mut k, "unroll,fold,simplify-cfg,dce", "loops fully unrolled").unwrap(), 1);
    assert_eq!(loops(&k), 0);
    let text = kir_ir::print_kernel(&k);
    assert!(text.contains("store %q[%t], 4294967294"), "(2^32-2) + (2^32-1) + 0 + 1 wraps to 2^32-2:\n{text}");
    assert_eq!(run_pq(&original, 0), run_pq(&k, 0));
}

#[test]
fn loops_the_passes_must_leave_alone() {
    // Leaves from its body: neither kind applies.
    let breaks = COUNTED.replace("br %isodd, odd, join(%x)", "br %isodd, done, join(%x)");
    let mut k = parse_one(&breaks);
    let stats = apply(&mut k, "unroll", "loops partially unrolled").unwrap()
        + apply(&mut k, "unroll", "loops fully unrolled").unwrap();
    assert_eq!(stats, 0, "{}", kir_ir::print_kernel(&k));
    // A barrier in a counted loop with a parameter bound: no partial unrolling ...
    let barrier = COUNTED.replace("  %acc.next = add.u32", "  barrier\n  %acc.next = add.u32");
    let barrier = barrier.replace("br %isodd, odd, join(%x)", "jmp join(%x)");
    let mut k = parse_one(&barrier);
    assert_eq!(apply(&mut k, "unroll", "loops partially unrolled").unwrap(), 0, "{}", kir_ir::print_kernel(&k));
    // ... but with a constant bound it is unrolled fully, barriers copied in order.
    let constant = barrier.replace("lt.u32 %i, %n", "lt.u32 %i, 3");
    let original = parse_one(&constant);
    let mut k = original.clone();
    assert_eq!(apply(&mut k, "unroll", "loops fully unrolled").unwrap(), 1);
    assert_eq!(kir_ir::print_kernel(&k).matches("barrier").count(), 3, "{}", kir_ir::print_kernel(&k));
    assert_eq!(run_pq(&original, 0), run_pq(&k, 0));
    // Over the size limits: left as a loop.
    let long = COUNTED.replace("lt.u32 %i, %n", "lt.u32 %i, 200");
    let mut k = parse_one(&long);
    assert_eq!(apply(&mut k, "unroll{factor=0}", "loops fully unrolled").unwrap(), 0);
    assert_eq!(loops(&k), 1);
}

#[test]
fn an_index_that_may_wrap_is_not_split() {
    let src = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32) {
entry:
  %t = tid.x
  %i1 = add.u32 %t, 4
  %x = load %p[%i1]
  %i2 = add.u32 %n, 4
  %lt = lt.u32 %i2, 256
  %i3 = select.u32 %lt, %i2, 0
  %y = load %p[%i3]
  %i4 = add.u32 %t, 4294967295
  %ok = lt.u32 %i4, 256
  %i5 = select.u32 %ok, %i4, 0
  %z = load %p[%i5]
  %s = add.u32 %x, %y
  %s2 = add.u32 %s, %z
  store %q[%t], %s2
  ret
}
";
    let original = parse_one(src);
    let mut k = original.clone();
    assert_eq!(apply(&mut k, "offsets", "constant offsets folded").unwrap(), 1);
    let text = kir_ir::print_kernel(&k);
    assert!(text.contains("%x = load %p.t[4]"), "tid.x < 1024, so %t + 4 does not wrap:\n{text}");
    assert!(text.contains("%y = load %p[%i3]") && text.contains("%z = load %p[%i5]"), "{text}");
    for n in [0, 100, 4294967294] {
        assert_eq!(run_pq(&original, n), run_pq(&k, n));
    }
}

#[test]
fn cse_merges_only_what_dominates() {
    let src = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32) {
entry:
  %t = tid.x
  %a = mul.u32 %t, 3
  %c = lt.u32 %t, %n
  br %c, then, else
then:
  %b = mul.u32 %t, 3
  %d = add.u32 %b, %n
  jmp join(%d)
else:
  %e = add.u32 %t, %n
  jmp join(%e)
join(%v: u32):
  %f = add.u32 %t, %n
  %g = add.u32 %a, %f
  %h = add.u32 %g, %v
  store %q[%t], %h
  ret
}
";
    let original = parse_one(src);
    let mut k = original.clone();
    assert_eq!(apply(&mut k, "cse", "instructions merged").unwrap(), 1, "{}", kir_ir::print_kernel(&k));
    let text = kir_ir::print_kernel(&k);
    assert!(!text.contains("%b = mul"), "`%b` is `%a`, which dominates it:\n{text}");
    assert!(text.contains("%f = add.u32 %t, %n"), "`%e` in a sibling block does not dominate `%f`:\n{text}");
    for n in [0, 10, 64] {
        assert_eq!(run_pq(&original, n), run_pq(&k, n));
    }
}

#[test]
fn layout_puts_blocks_in_the_order_they_run() {
    // `exit` written before the code that runs first: `layout` moves it to the end.
    let src = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32) {
entry:
  %t = tid.x
  %c = lt.u32 %t, %n
  br %c, then, else
exit(%v: u32):
  store %q[%t], %v
  ret
else:
  %e = add.u32 %t, 7
  jmp exit(%e)
then:
  %x = load %p[%t]
  jmp exit(%x)
}
";
    let original = parse_one(src);
    let mut k = original.clone();
    assert_eq!(apply(&mut k, "layout", "blocks moved").unwrap(), 2, "then and exit swap places");
    let names: Vec<&str> = k.blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["entry", "then", "else", "exit"]);
    assert_eq!(apply(&mut k, "layout", "blocks moved").unwrap(), 0, "a second run moves nothing");
    for n in [0, 10, 64] {
        assert_eq!(run_pq(&original, n), run_pq(&k, n));
    }
}

/// `unroll{explain}` (`kir opt --print-unroll`) reports every loop it looks at: how it was unrolled,
/// or each reason it was not.
#[test]
fn explain_says_what_happened_to_each_loop_and_why() {
    let notes = |src: &str, pipeline: &str| -> Vec<String> {
        let mut k = parse_one(src);
        let p = parse_pipeline(pipeline).unwrap();
        let r = run_on_kernel(&mut k, &p).unwrap();
        r.warnings
            .iter()
            .map(|d| std::iter::once(d.message.clone()).chain(d.notes.iter().cloned()).collect::<Vec<_>>().join(" | "))
            .collect()
    };
    assert_eq!(
        notes(COUNTED, "unroll{explain}"),
        ["loop `head` of @k unrolled by 4: main loop `head.by4` in front of it"]
    );
    let constant = COUNTED.replace("lt.u32 %i, %n", "lt.u32 %i, 3");
    assert_eq!(
        notes(&constant, "unroll{explain}"),
        ["loop `head` of @k fully unrolled: 3 trips, 28 instructions copied"]
    );
    let breaks = COUNTED.replace("br %isodd, odd, join(%x)", "br %isodd, done, join(%x)");
    assert_eq!(
        notes(&breaks, "unroll{explain}"),
        ["loop `head` of @k not unrolled | block `body` leaves the loop (to `done`), not only its header"]
    );
    let barrier = COUNTED.replace("  %acc.next = add.u32", "  barrier\n  %acc.next = add.u32");
    assert_eq!(
        notes(&barrier, "unroll{explain max-body=8}"),
        ["loop `head` of @k not unrolled | full unrolling: no header parameter starts at a constant and steps to a constant trip count of at most max-trip=64 | partial unrolling: it holds a barrier, a warp collective or a call"]
    );
    let long = COUNTED.replace("lt.u32 %i, %n", "lt.u32 %i, 200");
    assert_eq!(
        notes(&long, "unroll{explain factor=0}"),
        ["loop `head` of @k not unrolled | full unrolling: no header parameter starts at a constant and steps to a constant trip count of at most max-trip=64"]
    );
    assert!(notes(COUNTED, "unroll").is_empty(), "no notes without explain");
}
