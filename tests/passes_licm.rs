//! `licm` (passes/src/licm.rs) preserves semantics bit for bit: on random valid kernels with loops
//! (`kir_ir::generate`, loops on, nested up to the generator's default depth) and random inputs, the
//! interpreter's outputs before and after `licm` alone, and after the default pipeline with `licm`
//! inserted before `dce`, are bit-identical, and the IR verifies after every pass (`verify_each`,
//! which also checks that a run reporting "unchanged" left the kernel untouched). The case counts
//! are bounded so the file runs in seconds. A fixed sample of seeds must hoist something (the
//! property is not vacuous), and hand-written kernels pin what moves and what does not: invariant
//! arithmetic and address computation move to the preheader, loads and loop-variant values stay, and
//! a loop entered by a conditional branch (no unique preheader) is left alone.

use kir_ir::generate::{self, GenConfig};
use kir_ir::Kernel;
use kir_passes::{parse_pipeline, run_on_kernel};
use proptest::prelude::*;

mod generated;

/// Runs `pipeline` on `k` (verifying after every pass); returns how many instructions `licm` hoisted.
fn apply(k: &mut Kernel, pipeline: &str) -> Result<u64, String> {
    let p = parse_pipeline(pipeline)?;
    let r = run_on_kernel(k, &p).map_err(|e| {
        let diags: Vec<String> = e.diagnostics().iter().map(|d| d.message.clone()).collect();
        format!("{e}: {diags:?}")
    })?;
    Ok(r.steps.iter().filter(|s| s.name == "licm").map(|s| s.stats.get("instructions hoisted")).sum())
}

fn check(seed: u64, cfg: &GenConfig, input_seed: u64, pipeline: &str) -> Result<(), TestCaseError> {
    generated::pipeline_keeps_outputs(seed, cfg, input_seed, pipeline).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn licm_alone_preserves_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160, const_percent in 10u32..70) {
        check(seed, &generated::loopy(insts, const_percent, seed % 2 == 0), input_seed, "licm")?;
    }

    #[test]
    fn licm_in_the_pipeline_preserves_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160) {
        check(seed, &generated::loopy(insts, 40, seed % 2 == 1), input_seed, "fold,simplify-cfg,licm,dce,licm")?;
    }
}

#[test]
fn licm_hoists_something_on_generated_loops() {
    let (mut hoisted, mut with_loops) = (0u64, 0usize);
    for seed in 0..60u64 {
        let g = generate::generate(seed, &generated::loopy(120, 40, false));
        if g.loops == 0 {
            continue;
        }
        with_loops += 1;
        let mut k = g.kernel.clone();
        hoisted += apply(&mut k, "licm").unwrap();
    }
    eprintln!("licm hoisted {hoisted} instructions from {with_loops} generated kernels with loops");
    assert!(with_loops >= 10, "only {with_loops} of 60 generated kernels have loops");
    assert!(hoisted > 0, "licm hoisted nothing from {with_loops} kernels with loops");
}

fn parse_one(src: &str) -> Kernel {
    let m = kir_ir::parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    m.kernels.into_iter().next().unwrap()
}

/// The instructions of block `name`, printed.
fn block_text(k: &Kernel, name: &str) -> Vec<String> {
    let text = kir_ir::print_kernel(k);
    let mut out = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if !l.starts_with("  ") {
            inside = l.starts_with(&format!("{name}:")) || l.starts_with(&format!("{name}("));
            continue;
        }
        if inside {
            out.push(l.trim().to_string());
        }
    }
    out
}

#[test]
fn invariant_arithmetic_and_addresses_move_loads_stay() {
    let src = "kernel @k(%p: ptr<global, u32>, %q: ptr<global, u32>, %n: u32, %s: u32) {
entry:
  %t = tid.x
  jmp head(0, 0)
head(%i: u32, %acc: u32):
  %more = lt.u32 %i, %n
  br %more, body, done
body:
  %row = mul.u32 %s, 16
  %base = offset %p, %row
  %d = div.u32 %n, %s
  %e = add.u32 %d, %t
  %x = load %base[%i]
  %y = load %q[%t]
  %a1 = add.u32 %acc, %x
  %a2 = add.u32 %a1, %y
  %a3 = add.u32 %a2, %e
  %i.next = add.u32 %i, 1
  jmp head(%i.next, %a3)
done:
  store %q[%t], %acc
  ret
}
";
    let mut k = parse_one(src);
    let hoisted = apply(&mut k, "licm").unwrap();
    assert_eq!(hoisted, 4, "{}", kir_ir::print_kernel(&k));
    let entry = block_text(&k, "entry");
    assert_eq!(entry.len(), 6, "{entry:?}");
    for want in ["%row = mul.u32", "%base = offset", "%d = div.u32", "%e = add.u32"] {
        assert!(entry.iter().any(|l| l.starts_with(want)), "`{want}` not hoisted: {entry:?}");
    }
    let body = block_text(&k, "body");
    assert!(body.iter().any(|l| l.starts_with("%y = load")), "the invariant load moved: {body:?}");
    assert!(body.iter().any(|l| l.starts_with("%x = load")), "{body:?}");
    // A second run finds nothing left.
    assert_eq!(apply(&mut k, "licm").unwrap(), 0);
}

#[test]
fn no_unique_preheader_no_motion() {
    let src = "kernel @k(%q: ptr<global, u32>, %n: u32, %s: u32) {
entry:
  %t = tid.x
  %go = lt.u32 %t, %n
  br %go, head(0), done
head(%i: u32):
  %more = lt.u32 %i, %n
  br %more, body, done
body:
  %row = mul.u32 %s, 16
  store %q[%i], %row
  %i.next = add.u32 %i, 1
  jmp head(%i.next)
done:
  ret
}
";
    let mut k = parse_one(src);
    assert_eq!(apply(&mut k, "licm").unwrap(), 0, "{}", kir_ir::print_kernel(&k));
}

/// Many loops in sequence, each with an invariant instruction, and a block with many invariant
/// instructions: everything moves, in one run, in time linear in the kernel (no per-loop sweep of
/// the whole kernel, no per-instruction shifting of a block).
#[test]
fn many_loops_and_long_blocks() {
    const LOOPS: usize = 3000;
    const LONG: usize = 20000;
    let mut src = String::from("kernel @k(%q: ptr<global, u32>, %n: u32, %s: u32) {\nentry:\n  jmp h0(0)\n");
    for i in 0..LOOPS {
        let next = if i + 1 < LOOPS { format!("h{}(0)", i + 1) } else { "last(0)".to_string() };
        // Each loop's exit is its own block ending in `jmp`: the next loop's unique preheader.
        src.push_str(&format!(
            "h{i}(%i{i}: u32):\n  %c{i} = lt.u32 %i{i}, %n\n  br %c{i}, b{i}, e{i}\n\
             b{i}:\n  %v{i} = mul.u32 %s, {i}\n  store %q[%i{i}], %v{i}\n  %j{i} = add.u32 %i{i}, 1\n  jmp h{i}(%j{i})\n\
             e{i}:\n  jmp {next}\n"
        ));
    }
    src.push_str("last(%t: u32):\n  %lc = lt.u32 %t, %n\n  br %lc, lb, done\nlb:\n  %w0 = add.u32 %s, 1\n");
    for i in 1..LONG {
        src.push_str(&format!("  %w{i} = add.u32 %w{}, 1\n", i - 1));
    }
    src.push_str(&format!(
        "  store %q[%t], %w{}\n  %t1 = add.u32 %t, 1\n  jmp last(%t1)\ndone:\n  ret\n}}\n",
        LONG - 1
    ));
    let mut k = parse_one(&src);
    let t = std::time::Instant::now();
    let hoisted = apply(&mut k, "licm").unwrap();
    assert_eq!(hoisted as usize, LOOPS + LONG);
    // Generous: the run above takes milliseconds; a quadratic one takes far longer.
    assert!(t.elapsed().as_secs() < 20, "licm took {:?}", t.elapsed());
}
