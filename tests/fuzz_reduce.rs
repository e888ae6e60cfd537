//! The fuzz reducer on injected failures: the reduced kernel is small, still verifies, still fails
//! the same way, and its written reproduction is a `.kir` file whose `; run:` line `kir run`
//! accepts.

use kir::fuzz::{self, Failure, FailureKind, FuzzConfig};
use kir_ir::{BinOp, Kernel, Op, ScalarType};
use std::process::Command;

fn has_op(k: &Kernel, pred: &dyn Fn(&Op) -> bool) -> bool {
    k.placed_insts().any(|(_, i)| pred(&k.inst(i).op))
}

/// The first generated case (from seed 0 up) whose kernel contains an op matching `pred`.
fn find_case(cfg: &FuzzConfig, pred: &dyn Fn(&Op) -> bool) -> (u64, Kernel, Vec<(String, String)>) {
    for seed in 0..200 {
        let (k, named) = fuzz::generate_case(seed, cfg);
        if has_op(&k, pred) {
            return (seed, k, named);
        }
    }
    panic!("no generated kernel in 200 seeds contains the op");
}

/// Runs `kir run` with the launch and arguments of the file's first `; run:` line.
fn kir_run_directive(path: &std::path::Path) -> (i32, String, String) {
    let src = std::fs::read_to_string(path).unwrap();
    let d = kir::directives::parse_directives(&src).unwrap_or_else(|e| panic!("{e:?}"));
    let r = &d.runs[0];
    let dims = |d: [u32; 3]| format!("{},{},{}", d[0], d[1], d[2]);
    let mut args = vec![
        "run".to_string(),
        path.display().to_string(),
        "--kernel".into(),
        r.target.clone(),
        "--grid".into(),
        dims(r.grid.unwrap()),
        "--block".into(),
        dims(r.block.unwrap()),
    ];
    for (n, v) in &r.args {
        args.push("--arg".into());
        args.push(format!("{n}={v}"));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kir")).args(&args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn reduce_injected(name: &str, pred: &'static dyn Fn(&Op) -> bool, max_insts: usize) {
    let cfg = FuzzConfig::new();
    let (seed, k, named) = find_case(&cfg, pred);
    let kind = FailureKind::Custom(format!("contains {name}"));
    // The injected bug: a stage that fails whenever the kernel contains the op, after every real
    // check passed (so candidates that loop forever or fault are rejected as other failures).
    let mut checks = 0usize;
    let mut check = |c: &Kernel| -> Option<Failure> {
        checks += 1;
        let mut ran = fuzz::Ran::default();
        if let Err(f) = fuzz::check_kernel(c, &named, &cfg, None, &mut ran) {
            return Some(f);
        }
        has_op(c, pred).then(|| Failure::new(kind.clone(), ""))
    };
    let (small, last, stats) = fuzz::reduce(&k, &kind, &mut check, 5000);
    let text = kir_ir::print_kernel(&small);
    eprintln!("seed {seed}: {} -> {} instructions, {stats:?}\n{text}", k.inst_count(), small.inst_count());
    assert!(
        small.inst_count() <= max_insts,
        "seed {seed}: reduced from {} to {} instructions:\n{text}",
        k.inst_count(),
        small.inst_count()
    );
    assert!(small.inst_count() < k.inst_count());
    assert!(fuzz::verifies(&small).is_ok(), "{text}");
    assert!(has_op(&small, pred), "the failure must persist:\n{text}");
    assert_eq!(last.map(|f| f.kind), Some(kind.clone()));
    assert!(stats.kept > 0 && stats.checks <= 5000, "{stats:?}");
    assert!(checks >= stats.checks);

    // The reproduction file parses, verifies and runs with its own `; run:` line.
    let failure = Failure::new(kind, "injected");
    let file = fuzz::repro_file(&small, seed, &failure, &cfg, &named);
    assert!(file.lines().any(|l| l.starts_with("; run: @fuzz grid(2) block(64) in=rand:u32:128:")), "{file}");
    let m = kir_ir::parse(&file).unwrap_or_else(|d| panic!("{d:?}\n{file}"));
    assert!(m.structurally_eq(&kir_ir::Module { kernels: vec![small.clone()], graphs: vec![], funcs: vec![] }), "{file}");
    let dir = std::env::temp_dir().join(format!("kir-fuzz-reduce-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("case.kir");
    std::fs::write(&path, &file).unwrap();
    let (code, out, err) = kir_run_directive(&path);
    assert_eq!(code, 0, "kir run rejects the reproduction:\n{err}\n{file}");
    assert!(out.contains("%out: u32[128]") || out.contains("%fout: f32[128]") || out.is_empty(), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reduces_an_injected_mul_failure_to_a_few_instructions() {
    reduce_injected("mul.s32", &|op| matches!(op, Op::Bin(BinOp::Mul, ScalarType::S32, _)), 3);
}

#[test]
fn reduces_an_injected_barrier_failure_keeping_barrier_verification() {
    reduce_injected("barrier", &|op| matches!(op, Op::Barrier), 3);
}

#[test]
fn a_kernel_that_does_not_fail_is_returned_unchanged() {
    let cfg = FuzzConfig::new();
    let (k, _) = fuzz::generate_case(3, &cfg);
    let mut never = |_: &Kernel| -> Option<Failure> { None };
    let (same, last, stats) = fuzz::reduce(&k, &FailureKind::Verify, &mut never, 100);
    assert_eq!(same, k);
    assert_eq!(last, None);
    assert_eq!(stats.checks, 0);
}

#[test]
fn a_different_failure_kind_is_not_accepted() {
    // Fails with kind A when the kernel has a store, with kind B otherwise: reducing kind A must
    // keep a store even though removing it would still "fail".
    let cfg = FuzzConfig::new();
    let (_, k, _) = find_case(&cfg, &|op| matches!(op, Op::Store));
    let a = FailureKind::Custom("A".into());
    let mut check = |c: &Kernel| -> Option<Failure> {
        let kind = if has_op(c, &|op| matches!(op, Op::Store)) { "A" } else { "B" };
        Some(Failure::new(FailureKind::Custom(kind.into()), ""))
    };
    let (small, last, _) = fuzz::reduce(&k, &a, &mut check, 5000);
    assert!(has_op(&small, &|op| matches!(op, Op::Store)), "{}", kir_ir::print_kernel(&small));
    assert_eq!(last.unwrap().kind, a);
    assert!(small.inst_count() <= 3, "{}", kir_ir::print_kernel(&small));
}
