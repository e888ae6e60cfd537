//! `kir fuzz` as CI runs it: 50 generated modules (kernels with 0 to 3 device functions) through
//! the verifiers, the interpreter (calls as written, and inlined), the default pipeline (results
//! preserved bit for bit), ptxas (required under CI=true), the PTX emulator and the GPU when there
//! is one; plus its usage errors, `--funcs 0` (the kernels of before functions), and the reduction
//! of an emulator mismatch to a ready-to-run `.kir`.

mod cli;
use cli::kir;
use kir_harness::fuzz::{self, Failure, FailureKind, FuzzConfig};
use kir_harness::{compare::Strictness, emu_exec, gpu_exec};

use std::process::Command;

#[test]
fn fifty_cases_pass_every_check() {
    let dir = std::env::temp_dir().join(format!("kir-fuzz-cli-{}", std::process::id()));
    let ptxas = kir_backend_ptx::tools::require_tool_or_skip("ptxas");
    let (code, out, err) = kir(&["fuzz", "--cases", "50", "--seed", "1", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("fuzz: 50 cases, 50 passed, 0 failed;"), "{out}");
    if ptxas.is_some() {
        assert!(out.contains("ptxas ran on 50,"), "{out}");
    } else {
        assert!(out.contains("skip: ptxas not found"), "{out}");
    }
    // The emulator column never skips.
    assert!(out.contains(", ptx-emu on 50 (0 failed there), "), "{out}");
    if kir_backend_ptx::gpu::devices().is_ok() {
        assert!(out.contains("GPU on 50;"), "{out}");
    } else {
        assert!(out.contains("skip: no GPU: "), "{out}");
        assert!(out.contains("GPU on 0 (no GPU)"), "{out}");
    }
    assert!(!dir.exists(), "no failure, so nothing is written");
}

#[test]
fn requiring_a_missing_gpu_fails() {
    if kir_backend_ptx::gpu::devices().is_ok() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kir"))
        .args(["fuzz", "--cases", "1", "--no-ptxas"])
        .env("KIR_REQUIRE_GPU", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: no GPU: no CUDA driver (libcuda not found); a GPU is required"), "{err}");
}

#[test]
fn usage_errors() {
    let (code, _, err) = kir(&["fuzz", "--pipeline", "fold,nonsense"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: --pipeline: "), "{err}");
    let (code, _, err) = kir(&["fuzz", "--sm", "sm_70"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!("fuzz_bad_sm", err);
    let (code, _, err) = kir(&["fuzz", "--insts", "0"]);
    assert_eq!(code, 2);
    assert_eq!(err, "error: --insts must be at least 1\n");
    let (code, _, err) = kir(&["fuzz", "--funcs", "9"]);
    assert_eq!(code, 2);
    assert_eq!(err, "error: --funcs 9: at most 8 functions per module\n");
}

/// `--funcs 0` fuzzes the kernels `random_kernel` makes (no calls); the default has functions,
/// and the case's module is what the generator makes from the seed.
#[test]
fn funcs_sets_how_many_functions_a_case_may_have() {
    let (code, out, err) = kir(&["fuzz", "--cases", "20", "--seed", "7", "--funcs", "0", "--no-ptxas", "--no-emu"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("0 to 0 functions"), "{out}");
    assert!(out.contains("fuzz: 20 cases, 20 passed, 0 failed;"), "{out}");
    let mut cfg = FuzzConfig::new();
    assert_eq!(cfg.gen.max_funcs, 3);
    let with: usize = (0..20).map(|s| fuzz::generate_case(s, &cfg).0.funcs.len()).sum();
    assert!(with > 10, "{with} functions in 20 cases");
    cfg.gen.max_funcs = 0;
    for s in 0..5 {
        let (m, _) = fuzz::generate_case(s, &cfg);
        assert!(m.funcs.is_empty());
        assert_eq!(m.kernels, vec![kir_ir::generate::random_kernel(s, &cfg.gen)]);
    }
}

/// Large kernels once made the generator and the barrier verifier disagree (seed 100967: a barrier
/// under a branch on a global load, which the verifier rightly counts as divergent because the
/// kernel writes global memory). The generator now treats loaded values as divergent.
#[test]
fn large_generated_kernels_are_accepted_by_the_barrier_verifier() {
    let dir = std::env::temp_dir().join(format!("kir-fuzz-large-{}", std::process::id()));
    let (code, out, err) = kir(&[
        "fuzz",
        "--cases",
        "100",
        "--seed",
        "100900",
        "--insts",
        "300",
        "--no-ptxas",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("fuzz: 100 cases, 100 passed, 0 failed;"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_emu_turns_the_emulator_column_off() {
    let (code, out, err) = kir(&["fuzz", "--cases", "3", "--seed", "1", "--no-ptxas", "--no-emu"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(", ptx-emu on 0 (--no-emu), "), "{out}");
}

/// An emulator mismatch goes through the reducer like a GPU mismatch: a backend "bug" injected
/// into the PTX (the low half of a multiply replaced by the high half) is reduced to a small
/// kernel that still shows it, written as a ready-to-run `.kir` with its `; run:` line.
#[test]
fn emulator_mismatches_are_reduced_to_a_ready_to_run_kir() {
    let cfg = FuzzConfig::new();
    let bug = |ptx: &str| ptx.replace("mad.lo.u32", "mad.hi.u32");
    // The injected stage: every real check first (so reduction candidates that fault or loop are
    // other failures), then the corrupted PTX in the emulator against the interpreter.
    let check = |c: &kir_ir::Module, named: &[(String, String)]| -> Option<Failure> {
        let mut ran = fuzz::Ran::default();
        if let Err(f) = fuzz::check_module(c, named, &cfg, None, &mut ran) {
            return Some(f);
        }
        let flat = fuzz::inlined(c).ok()?;
        let k = &flat.kernels[0];
        let bound = fuzz::bind_case(k, named).ok()?;
        let launch = fuzz::launch_config(&cfg.contract);
        let reference = fuzz::interpret(flat.verified_kernel(&k.name)?, &launch, &bound, cfg.fuel).ok()?;
        let ptx = bug(&gpu_exec::ptx_in_module(&flat, k, emu_exec::EMU_SM).ok()?);
        let got = match fuzz::emulate(k, &ptx, &launch, &bound, 1 << 30) {
            Ok(b) => b,
            Err(f) => return Some(f),
        };
        fuzz::compare_all(k, &bound, &reference, &got, Strictness::Bitwise)
            .err()
            .map(|e| Failure::new(FailureKind::EmuMismatch, e))
    };
    // A case with functions, so that the reducer has calls and function bodies to remove.
    let found = (1..60).find_map(|seed| {
        let (m, named) = fuzz::generate_case(seed, &cfg);
        match check(&m, &named) {
            Some(f) if f.kind == FailureKind::EmuMismatch && m.has_calls() => Some((seed, m, named, f)),
            _ => None,
        }
    });
    let (seed, m, named, failure) = found.expect("a generated module whose PTX multiplies");
    let (small, last, stats) = fuzz::reduce_module(&m, &failure.kind, &mut |c| check(c, &named), 2000);
    let last = last.expect("the failure persists");
    assert_eq!(last.kind, FailureKind::EmuMismatch);
    let (before, after) = (fuzz::module_insts(&m), fuzz::module_insts(&small));
    assert!(after < before && stats.kept > 0, "{stats:?}");
    assert!(after <= 12, "reduced to {after} instructions:\n{}", kir_ir::print_module(&small));
    // The multiply may be the one of a function's sink (then the call and that function stay);
    // every other function goes.
    assert!(small.funcs.len() <= 1, "functions nothing needs are deleted:\n{}", kir_ir::print_module(&small));
    let text = fuzz::repro_file(&small, seed, &last, &cfg, &named);
    assert!(text.contains("; failure: interpreter and ptx-emu differ: "), "{text}");
    assert!(text.contains("\n; run: @fuzz grid(2) block(64) in=rand:u32:128:"), "{text}");
    let m = kir_ir::parse(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    assert!(fuzz::verifies_module(&m).is_ok(), "{text}");
    let flat = fuzz::inlined(&m).unwrap();
    assert!(
        gpu_exec::ptx_in_module(&flat, &flat.kernels[0], emu_exec::EMU_SM).unwrap().contains("mad.lo.u32"),
        "{text}"
    );
}

/// The hostile-input report: `kir fuzz --pipeline fma-contract` passed 2,200 cases although the
/// pass changes rounding by design — generated kernels had no `mul` whose only use is an `add`.
/// Now the generator writes that shape, the rounding change is seen (bit-for-bit comparison), the
/// header says why such cases fail, and the reproduction names the pipeline (and `--funcs 0`,
/// which keeps the cases of that report: kernels without functions).
#[test]
fn fuzzing_a_rounding_changing_pass_sees_the_change() {
    let dir = std::env::temp_dir().join(format!("kir-fuzz-fma-{}", std::process::id()));
    let (code, out, err) = kir(&[
        "fuzz",
        "--cases",
        "8",
        "--seed",
        "26",
        "--funcs",
        "0",
        "--pipeline",
        "fma-contract",
        "--no-ptxas",
        "--no-emu",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("note: fma-contract changes float rounding by design"), "{out}");
    assert!(
        out.contains("FAIL case seed 26: passes changed the interpreter's results: original vs optimized: "),
        "{out}"
    );
    let repro = std::fs::read_to_string(dir.join("case-26.kir")).unwrap();
    assert!(
        repro.starts_with(
            "; kir fuzz: case seed 26 (reproduce: kir fuzz --cases 1 --seed 26 --funcs 0 --pipeline fma-contract)\n"
        ),
        "{repro}"
    );
    assert!(repro.contains("mul.f32") || repro.contains("mul.f64") || repro.contains("mul.f16"), "{repro}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--time-limit` ends a campaign between cases with the summary of the cases that ran (what a
/// session on a lent GPU needs: a run killed by `timeout` prints no summary), and refuses a
/// limit that is not a positive number of seconds.
#[test]
fn a_time_limit_ends_the_campaign_with_its_summary() {
    let dir = std::env::temp_dir().join(format!("kir-fuzz-time-{}", std::process::id()));
    let (code, out, err) = kir(&[
        "fuzz",
        "--cases",
        "100000",
        "--insts",
        "20",
        "--no-ptxas",
        "--time-limit",
        "0.5",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let line = out.lines().find(|l| l.starts_with("time limit: ")).unwrap_or_else(|| panic!("{out}"));
    let ran: u64 = line.split(" after ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    assert!(ran > 0 && ran < 100000, "{line}");
    assert!(line.ends_with(&format!("of 100000 cases; no further case is started")), "{line}");
    assert!(out.contains(&format!("fuzz: {ran} cases, {ran} passed, 0 failed;")), "{out}");
    for bad in ["0", "-1", "inf", "soon"] {
        let (code, _, err) = kir(&["fuzz", &format!("--time-limit={bad}")]);
        assert_eq!(code, 2, "--time-limit={bad}: {err}");
    }
}

/// Issue 42: `--approx` lets the generator write approximate ops; the emulator is judged by the
/// interpreter's per-element error enclosures. Seeds 1..300 include cases whose approximate ops'
/// errors reach comparisons or conversions (unverified, counted apart) and none that fails.
#[test]
fn approximate_ops_are_judged_by_error_enclosures() {
    let dir = std::env::temp_dir().join(format!("kir-fuzz-approx-{}", std::process::id()));
    let (code, out, err) =
        kir(&["fuzz", "--approx", "--cases", "300", "--seed", "1", "--no-ptxas", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("FAIL"), "{out}");
    let summary = out.lines().find(|l| l.starts_with("fuzz: 300 cases, ")).unwrap_or_else(|| panic!("{out}"));
    let unverified = out.lines().filter(|l| l.starts_with("UNVERIFIED case seed ")).count();
    assert!(unverified > 0 && unverified < 30, "{out}");
    assert!(
        summary.contains(&format!(
            ", {} passed, 0 failed, {unverified} unverified (differences only where an error enclosure cannot decide);",
            300 - unverified
        )),
        "{summary}"
    );
    assert!(!dir.exists(), "no failure, so nothing is written");
}
