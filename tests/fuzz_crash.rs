//! Crashes of NVIDIA's tools during `kir fuzz`, without those tools: the emulated CUDA driver's
//! crash hook (`KIR_CUDA_EMU_CRASH_ON_LOAD`: SIGSEGV inside `cuModuleLoadDataEx`, as the real
//! driver's JIT did on an H100) and fake `ptxas` scripts (`KIR_PTXAS`) that kill themselves with
//! SIGSEGV or fail without a message. The campaign must survive, report each crash as a crash (not
//! as a kir failure, not as "ptxas rejects the PTX"), count it apart, keep the PTX, and exit 3.
//! Through the library: the isolated runner's recovery from a crash, a hang and a sticky kernel
//! fault, and the reducer treating a crash as "not this failure".

mod cli;
use kir_backend_ptx::gpu::{GpuError, KernelLaunch, Launch, Param, Stage};
use kir_harness::fuzz::{self, Failure, FailureKind};
use kir_harness::gpu_exec::GpuExec;
use kir_harness::isolate::IsolatedGpu;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn temp_dir(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kir-fuzz-crash-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// An executable shell script.
#[cfg(unix)]
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// `kir fuzz --cases 10 --seed 1 --no-ptxas --require-gpu EXTRA --out-dir DIR` on kir's emulated
/// driver, whose JIT crashes (SIGSEGV) on every module with a `vote.sync`.
fn campaign_on_a_jit_that_crashes_on_vote(dir: &std::path::Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["fuzz", "--cases", "10", "--seed", "1", "--no-ptxas", "--require-gpu"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out-dir", dir.to_str().unwrap()]);
    cli::kir_with_env(
        &args,
        &[("KIR_CUDA_DRIVER", "emu"), ("KIR_CUDA_EMU_LOG", ""), ("KIR_CUDA_EMU_CRASH_ON_LOAD", "vote.sync")],
    )
}

/// The driver's JIT crashes (SIGSEGV) on every module with a `vote.sync`: those cases are CRASH
/// lines with the PTX kept beside a reduced `.kir`, the others pass, the campaign finishes, and
/// the exit status is 3 (NVIDIA's crash, not kir's failure, but not silent).
#[test]
fn a_driver_jit_crash_ends_the_worker_not_the_campaign() {
    let dir = temp_dir("jit");
    let (code, out, err) = campaign_on_a_jit_that_crashes_on_vote(&dir, &["--reduce-budget", "40"]);
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(out.contains("CRASH case seed 1: driver JIT crashed (SIGSEGV): kir's GPU worker process died while JIT-compiling the PTX module (cuModuleLoadDataEx)"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    let crashes = out.lines().filter(|l| l.starts_with("CRASH case seed ")).count();
    assert!((1..10).contains(&crashes), "some cases crash, some pass:\n{out}");
    assert!(
        out.contains(&format!(
            "fuzz: 10 cases, {} passed, 0 failed, {crashes} crashed NVIDIA's tools (ptxas 0, driver {crashes}); ",
            10 - crashes
        )),
        "{out}"
    );
    assert!(out.contains(&format!("GPU on {} (the driver's worker process crashed ", 10 - crashes)), "{out}");
    assert!(out.contains("note: no kir failure, but NVIDIA's tools crashed on"), "{out}");
    let ptx = std::fs::read_to_string(dir.join("case-1.ptx")).unwrap();
    assert!(ptx.contains("vote.sync") && ptx.contains(".visible .entry fuzz("), "{ptx}");
    let kir = std::fs::read_to_string(dir.join("case-1.kir")).unwrap();
    assert!(kir.contains("; failure: driver JIT crashed (SIGSEGV)"), "{kir}");
    assert!(kir.contains("beside this file (case-1.ptx)"), "{kir}");
    let m = kir_ir::parse(&kir).unwrap_or_else(|d| panic!("{d:?}\n{kir}"));
    assert!(fuzz::verifies_module(&m).is_ok(), "{kir}");
    assert!(kir.contains("vote."), "reduced, but still crashing:\n{kir}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A ptxas that crashes on some PTX (SIGSEGV on modules with a shuffle, success otherwise): CRASH
/// lines saying "ptxas crashed (SIGSEGV)", never "ptxas rejects the PTX"; counted apart; exit 3.
#[cfg(unix)]
#[test]
fn a_ptxas_crash_is_not_a_rejection() {
    let dir = temp_dir("ptxas");
    let fake =
        script(&dir.join("bin"), "ptxas", "for f; do :; done\ngrep -q shfl.sync \"$f\" && kill -SEGV $$\nexit 0");
    let out_dir = dir.join("out");
    let args = [
        "fuzz",
        "--cases",
        "6",
        "--seed",
        "1",
        "--no-emu",
        "--reduce-budget",
        "10",
        "--out-dir",
        out_dir.to_str().unwrap(),
    ];
    let (code, out, err) = cli::kir_with_env(&args, &[("KIR_PTXAS", fake.to_str().unwrap())]);
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(!out.contains("rejects") && !out.contains("FAIL"), "{out}");
    let crashes: Vec<&str> = out.lines().filter(|l| l.starts_with("CRASH case seed ")).collect();
    assert!(!crashes.is_empty() && crashes.len() < 6, "{out}");
    for l in &crashes {
        assert!(l.contains(": ptxas crashed (SIGSEGV): on the PTX for sm_80 ("), "{l}");
    }
    let n = crashes.len();
    assert!(
        out.contains(&format!("{n} crashed NVIDIA's tools (ptxas {n}, driver 0); ptxas ran on {}", 6 - n)),
        "{out}"
    );
    let seed: &str = crashes[0].split_whitespace().nth(3).unwrap().trim_end_matches(':');
    let ptx = std::fs::read_to_string(out_dir.join(format!("case-{seed}.ptx"))).unwrap();
    assert!(ptx.contains("shfl.sync"), "{ptx}");

    // Failing without a message is a crash too; failing with ptxas's error messages is a rejection
    // (kir's failure: exit 1).
    let silent = script(&dir.join("bin"), "ptxas-silent", "exit 1");
    let args = [
        "fuzz",
        "--cases",
        "1",
        "--seed",
        "1",
        "--no-emu",
        "--reduce-budget",
        "3",
        "--out-dir",
        out_dir.to_str().unwrap(),
    ];
    let (code, out, err) = cli::kir_with_env(&args, &[("KIR_PTXAS", silent.to_str().unwrap())]);
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(out.contains("CRASH case seed 1: ptxas crashed (exit 1 without an error message)"), "{out}");
    let rejecting = script(
        &dir.join("bin"),
        "ptxas-rejecting",
        "echo \"ptxas fatal   : Unresolved extern function 'f'\" >&2\nexit 255",
    );
    let (code, out, err) = cli::kir_with_env(&args, &[("KIR_PTXAS", rejecting.to_str().unwrap())]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("FAIL case seed 1: ptxas rejects the PTX: ptxas ("), "{out}");
    assert!(out.contains("fuzz: 1 cases, 0 passed, 1 failed; "), "{out}");

    // kir test's rows say it too.
    let (code, out, err) =
        cli::kir_with_env(&["test", "kernels/relu_backward.kir"], &[("KIR_PTXAS", fake.to_str().unwrap())]);
    assert_eq!(code, 0, "no shuffle in relu_backward: {out}\n{err}");
    let crash_all = script(&dir.join("bin"), "ptxas-crash", "kill -SEGV $$");
    let (code, out, _) =
        cli::kir_with_env(&["test", "kernels/relu_backward.kir"], &[("KIR_PTXAS", crash_all.to_str().unwrap())]);
    assert_eq!(code, 1);
    assert!(
        out.contains("ptxas crashed on the PTX for sm_80:\n    ptxas crashed (SIGSEGV) on the module for sm_80 ("),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

const STORE_TID: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry store_tid(.param .u64 out)
{
    .reg .b32 %r<2>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
";

/// `STORE_TID` with a marker the crash hook is told to look for.
fn crashing_ptx() -> String {
    STORE_TID.replace(".address_size 64", ".address_size 64\n// crash here")
}

const SPIN: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry spin(.param .u64 out)
{
$loop:
    bra $loop;
}
";

fn run(g: &mut IsolatedGpu, ptx: &str, kernel: &str, threads: u32, buf: usize) -> Result<Vec<Vec<u8>>, GpuError> {
    let launch = Launch { grid: (1, 1, 1), block: (threads, 1, 1), dynamic_shared_bytes: 0 };
    g.run_sequence(&[vec![0u8; buf]], &[KernelLaunch { ptx, kernel, launch, params: vec![Param::Buffer(0)] }])
}

/// The isolated runner after a JIT crash, a hang and a kernel fault: each is reported (the crash
/// with its signal and stage) and the next run works on a fresh worker.
#[test]
fn the_isolated_runner_survives_crashes_hangs_and_sticky_faults() {
    let env = [
        ("KIR_CUDA_DRIVER", "emu"),
        ("KIR_CUDA_EMU_LOG", ""),
        ("KIR_CUDA_EMU_CRASH_ON_LOAD", "// crash here"),
        // So that the endless loop below runs until the timeout.
        ("KIR_CUDA_EMU_FUEL", "1000000000000000"),
    ];
    let exe = Path::new(env!("CARGO_BIN_EXE_kir"));
    let mut g = IsolatedGpu::start_with_env(exe, 0, Duration::from_secs(60), &env).unwrap();
    assert!(g.is_emulated());
    assert_eq!(g.compute_capability(), Ok((9, 0)));
    let ok = |r: Result<Vec<Vec<u8>>, GpuError>| {
        let out = r.unwrap();
        assert_eq!(&out[0][..8], &[0, 0, 0, 0, 1, 0, 0, 0]);
    };
    ok(run(&mut g, STORE_TID, "store_tid", 4, 16));
    assert_eq!(
        run(&mut g, &crashing_ptx(), "store_tid", 4, 16),
        Err(GpuError::Crashed { stage: Stage::Loading, how: "SIGSEGV".into() })
    );
    ok(run(&mut g, STORE_TID, "store_tid", 4, 16));
    // A kernel that never ends: killed after the timeout.
    g.timeout = Duration::from_secs(2);
    let e = run(&mut g, SPIN, "spin", 1, 4).unwrap_err();
    assert_eq!(e, GpuError::TimedOut { stage: Stage::Running, secs: 2 });
    g.timeout = Duration::from_secs(60);
    ok(run(&mut g, STORE_TID, "store_tid", 4, 16));
    // Out of bounds: a driver error, sticky for a context; the next run gets a fresh one.
    let e = run(&mut g, STORE_TID, "store_tid", 64, 16).unwrap_err();
    assert!(matches!(e, GpuError::Driver(_)), "{e:?}");
    ok(run(&mut g, STORE_TID, "store_tid", 4, 16));
    // A module the JIT rejects keeps the worker.
    let workers = g.stats().workers;
    assert!(matches!(run(&mut g, ".version 8.0\nnonsense", "k", 1, 4), Err(GpuError::ModuleRejected { .. })));
    ok(run(&mut g, STORE_TID, "store_tid", 4, 16));
    let st = g.stats();
    assert_eq!((st.crashes, st.timeouts, st.workers), (1, 1, workers));
    assert_eq!(st.workers, 4, "the first, then one after the crash, the hang and the fault");
}

/// A worker that cannot open the device reports why, as the in-process runner would.
#[test]
fn a_worker_without_a_driver_says_so() {
    let exe = Path::new(env!("CARGO_BIN_EXE_kir"));
    let e =
        IsolatedGpu::start_with_env(exe, 0, Duration::from_secs(20), &[("KIR_CUDA_DRIVER", "/nonexistent/libcuda.so")])
            .err()
            .unwrap();
    assert!(
        matches!(&e, GpuError::DriverSelection(m) if m.contains("KIR_CUDA_DRIVER=/nonexistent/libcuda.so")),
        "{e:?}"
    );
    let e = IsolatedGpu::start_with_env(exe, 3, Duration::from_secs(20), &[("KIR_CUDA_DRIVER", "emu")]).err().unwrap();
    assert_eq!(e, GpuError::NoDevice);
}

/// While reducing a kir failure, a candidate on which the driver crashes is "not this failure":
/// it is dropped, and the result still fails the original way.
#[test]
fn the_reducer_does_not_follow_a_crash() {
    let cfg = fuzz::FuzzConfig::new();
    let (m, _) = fuzz::generate_case(3, &cfg);
    let before = fuzz::module_insts(&m);
    let wanted = FailureKind::Custom("big".into());
    // Candidates under half the size "crash the driver"; the others fail the wanted way.
    let mut crashes = 0;
    let mut check = |c: &kir_ir::Module| -> Option<Failure> {
        if fuzz::module_insts(c) < before / 2 {
            crashes += 1;
            Some(
                Failure::new(FailureKind::DriverCrash { stage: Stage::Loading, how: "SIGSEGV".into() }, "")
                    .with_ptx("x"),
            )
        } else {
            Some(Failure::new(FailureKind::Custom("big".into()), ""))
        }
    };
    let (small, last, _) = fuzz::reduce_module(&m, &wanted, &mut check, 300);
    assert!(crashes > 0);
    assert_eq!(last.unwrap().kind, wanted);
    let after = fuzz::module_insts(&small);
    assert!(after >= before / 2 && after < before, "{before} -> {after}");
}

/// `--time-limit` cuts a reduction short (a GPU reduction can take minutes: every candidate loads a
/// module): the case is written as reduced so far, still failing, and the line says so.
#[test]
fn a_time_limit_cuts_a_reduction_short_and_keeps_the_failing_case() {
    let dir = temp_dir("time-reduce");
    let (code, out, err) = campaign_on_a_jit_that_crashes_on_vote(&dir, &["--time-limit", "0.01"]);
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(out.contains(", stopped at --time-limit: "), "{out}");
    assert!(out.contains("time limit: 0.01 s reached after 1 of 10 cases"), "{out}");
    let kir = std::fs::read_to_string(dir.join("case-1.kir")).unwrap();
    assert!(kir.contains("; failure: driver JIT crashed (SIGSEGV)") && kir.contains("vote."), "{kir}");
    std::fs::remove_dir_all(&dir).ok();
}
