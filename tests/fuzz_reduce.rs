//! The fuzz reducer on injected failures: the reduced module is small, still verifies, still fails
//! the same way, and its written reproduction is a `.kir` file whose `; run:` line `kir run`
//! accepts. Generated cases are modules with device functions (the default of `kir fuzz`), so the
//! reducer also deletes functions nothing calls and reduces function bodies; a failure inside a
//! function keeps one call and the function.

use kir_harness::fuzz::{self, Failure, FailureKind, FuzzConfig};
use kir_ir::{BinOp, Kernel, Module, Op, ScalarType};
use std::process::Command;

fn has_op(k: &Kernel, pred: &dyn Fn(&Op) -> bool) -> bool {
    k.placed_insts().any(|(_, i)| pred(&k.inst(i).op))
}

/// Whether the kernel, or a function, of `m` contains an op matching `pred`.
fn module_has_op(m: &Module, pred: &dyn Fn(&Op) -> bool) -> bool {
    m.bodies().any(|k| has_op(k, pred))
}

/// The first generated case (from seed 0 up) whose module satisfies `want`.
fn find_case(cfg: &FuzzConfig, want: &dyn Fn(&Module) -> bool) -> (u64, Module, Vec<(String, String)>) {
    for seed in 0..200 {
        let (m, named) = fuzz::generate_case(seed, cfg);
        if want(&m) {
            return (seed, m, named);
        }
    }
    panic!("no generated module in 200 seeds is the one wanted");
}

/// Runs `kir run` with the launch and arguments of the file's first `; run:` line.
fn kir_run_directive(path: &std::path::Path) -> (i32, String, String) {
    let src = std::fs::read_to_string(path).unwrap();
    let d = kir_harness::directives::parse_directives(&src).unwrap_or_else(|e| panic!("{e:?}"));
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

/// Reduces the first generated case that `want` picks, with an injected failure whenever `fails`
/// holds; checks the result has at most `max_insts` instructions (kernel and functions) and at
/// most `max_funcs` functions; returns it.
fn reduce_injected_module(
    name: &str,
    want: &dyn Fn(&Module) -> bool,
    fails: &dyn Fn(&Module) -> bool,
    max_insts: usize,
    max_funcs: usize,
) -> Module {
    let cfg = FuzzConfig::new();
    let (seed, m0, named) = find_case(&cfg, want);
    let kind = FailureKind::Custom(format!("contains {name}"));
    // The injected bug: a stage that fails whenever the module has the property, after every
    // real check passed (so candidates that loop forever or fault are rejected as other failures).
    let mut checks = 0usize;
    let mut check = |c: &Module| -> Option<Failure> {
        checks += 1;
        let mut ran = fuzz::Ran::default();
        if let Err(f) = fuzz::check_module(c, &named, &cfg, None, &mut ran) {
            return Some(f);
        }
        fails(c).then(|| Failure::new(kind.clone(), ""))
    };
    let (small, last, stats) = fuzz::reduce_module(&m0, &kind, &mut check, 5000);
    let text = kir_ir::print_module(&small);
    let (before, after) = (fuzz::module_insts(&m0), fuzz::module_insts(&small));
    eprintln!("seed {seed}: {before} -> {after} instructions, {stats:?}\n{text}");
    assert!(after <= max_insts, "seed {seed}: reduced from {before} to {after} instructions:\n{text}");
    assert!(small.funcs.len() <= max_funcs, "seed {seed}: {} functions left:\n{text}", small.funcs.len());
    assert!(after < before);
    assert!(fuzz::verifies_module(&small).is_ok(), "{text}");
    assert!(fails(&small), "the failure must persist:\n{text}");
    assert_eq!(last.map(|f| f.kind), Some(kind.clone()));
    assert!(stats.kept > 0 && stats.checks <= 5000, "{stats:?}");
    assert!(checks >= stats.checks);

    // The reproduction file parses, verifies and runs with its own `; run:` line.
    let failure = Failure::new(kind, "injected");
    let file = fuzz::repro_file(&small, seed, &failure, &cfg, &named);
    assert!(file.lines().any(|l| l.starts_with("; run: @fuzz grid(2) block(64) in=rand:u32:128:")), "{file}");
    let m = kir_ir::parse(&file).unwrap_or_else(|d| panic!("{d:?}\n{file}"));
    let mut compacted = small.clone();
    compacted.bodies_mut().for_each(Kernel::compact);
    assert!(m.structurally_eq(&compacted), "{file}");
    let dir = std::env::temp_dir().join(format!("kir-fuzz-reduce-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("case.kir");
    std::fs::write(&path, &file).unwrap();
    let (code, out, err) = kir_run_directive(&path);
    assert_eq!(code, 0, "kir run rejects the reproduction:\n{err}\n{file}");
    assert!(out.contains("%out: u32[128]") || out.contains("%fout: f32[128]") || out.is_empty(), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
    small
}

fn reduce_injected(name: &str, pred: &'static dyn Fn(&Op) -> bool, max_insts: usize) {
    let has = |m: &Module| module_has_op(m, pred);
    reduce_injected_module(name, &has, &has, max_insts, 1);
}

#[test]
fn reduces_an_injected_mul_failure_to_a_few_instructions() {
    reduce_injected("mul.s32", &|op| matches!(op, Op::Bin(BinOp::Mul, ScalarType::S32, _)), 3);
}

#[test]
fn reduces_an_injected_barrier_failure_keeping_barrier_verification() {
    reduce_injected("barrier", &|op| matches!(op, Op::Barrier), 3);
}

fn has_shfl(k: &Kernel) -> bool {
    has_op(k, &|op| matches!(op, Op::Shfl(..)))
}

/// Whether a function of `m` that a kernel calls holds a shuffle.
fn shfl_in_called_func(m: &Module) -> bool {
    m.funcs.iter().any(|f| {
        has_shfl(f) && m.kernels.iter().any(|k| !k.callees.is_empty() && k.callees.iter().any(|c| c.name == f.name))
    })
}

/// A failure inside a function (a full-mask shuffle there, reached by a call: barrier
/// verification across calls must keep accepting each candidate) reduces to the kernel calling
/// one function that holds little more than the shuffle.
#[test]
fn reduces_a_failure_inside_a_function_to_one_call_and_a_small_function() {
    let small =
        reduce_injected_module("a shuffle in a called function", &shfl_in_called_func, &shfl_in_called_func, 6, 1);
    assert_eq!(small.funcs.len(), 1, "{}", kir_ir::print_module(&small));
    assert!(!has_shfl(&small.kernels[0]), "{}", kir_ir::print_module(&small));
}

/// A failure that needs a shuffle somewhere but not a call (the case's shuffle sits in a called
/// function): the reducer inlines the calls and keeps no function.
#[test]
fn a_failure_that_does_not_need_calls_loses_its_functions() {
    let anywhere = |m: &Module| m.bodies().any(has_shfl);
    let small = reduce_injected_module("a shuffle", &shfl_in_called_func, &anywhere, 6, 0);
    assert!(small.funcs.is_empty() && small.kernels[0].callees.is_empty(), "{}", kir_ir::print_module(&small));
}

#[test]
fn a_kernel_that_does_not_fail_is_returned_unchanged() {
    let cfg = FuzzConfig::new();
    let (m, _) = fuzz::generate_case(3, &cfg);
    let k = m.kernels[0].clone();
    let mut never = |_: &Kernel| -> Option<Failure> { None };
    let (same, last, stats) = fuzz::reduce(&k, &FailureKind::Verify, &mut never, 100);
    assert_eq!(same, k);
    assert_eq!(last, None);
    assert_eq!(stats.checks, 0);
    let mut never = |_: &Module| -> Option<Failure> { None };
    let (same, last, stats) = fuzz::reduce_module(&m, &FailureKind::Verify, &mut never, 100);
    assert_eq!(same, m);
    assert_eq!(last, None);
    assert_eq!(stats.checks, 0);
}

#[test]
fn a_different_failure_kind_is_not_accepted() {
    // Fails with kind A when the kernel has a store, with kind B otherwise: reducing kind A must
    // keep a store even though removing it would still "fail".
    let cfg = FuzzConfig { gen: kir_ir::generate::GenConfig::default(), ..FuzzConfig::new() };
    let (_, m, _) = find_case(&cfg, &|m| module_has_op(m, &|op| matches!(op, Op::Store)));
    let k = m.kernels[0].clone();
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
