//! `kir fuzz [--cases N] [--seed S] [--insts N] [--funcs N] [--pipeline P] [--sm SM] [--out-dir DIR]
//! [--reduce-budget N] [--no-ptxas] [--no-emu] [--require-ptxas] [--require-gpu] [--device N]
//! [--gpu-timeout S] [--gpu-in-process] [--time-limit S] [--shard K/N] [--approx]`: generate random
//! valid modules (a kernel and 0 to `--funcs` device functions it calls) and check each through
//! every stage of kir (see [`kir_harness::fuzz`]).
//!
//! Guarantees:
//! - Case i (0-based) is the module [`kir::ir::generate::random_module`] makes from seed `S + i`,
//!   so `kir fuzz --cases 1 --seed S+i` reproduces it alone; with `--funcs 0` it is the kernel
//!   [`kir::ir::generate::random_kernel`] makes. Per case: the verifiers accept it (barriers across
//!   calls), the interpreter runs it as written, calls and all, without a fault (races and
//!   uninitialized reads checked), inlining every call preserves its results bit for bit, the
//!   pipeline preserves them bit for bit, `ptxas` accepts its PTX (inlined, and with the
//!   functions as `.func`s; when found), the PTX emulator runs the inlined kernel's PTX and agrees
//!   with the interpreter (always, unless `--no-emu`), and the GPU agrees with the interpreter
//!   (when there is one).
//! - `--shard K/N` runs the K-th of N contiguous, disjoint ranges of the `--cases` case indices
//!   ([`kir_harness::shard::Shard::cases`]), each case with the seed it has unsharded, so the N
//!   shards together run exactly the cases of one unsharded run and a shard's failure is
//!   reproduced by its seed alone; the first line names the shard's seeds, the summary ends with
//!   `; shard K/N`, and `--time-limit` counts the shard's cases.
//! - `--approx` lets the generator write approximate f32 ops (`ex2`, `tanh`, `div.approx`, ...):
//!   the emulator and the GPU are then judged by the interpreter's per-element error enclosures
//!   (issue 42). A case whose only differences lie where an enclosure cannot decide (an
//!   approximate op's error reached a comparison, conversion, branch or address) is *unverified*:
//!   neither passed nor failed, counted in the summary.
//! - `--vectors` lets the generator write vector values (`vec.vN.T`, `insert`, `extract`).
//! - A missing `ptxas` or GPU is announced on stdout with a `skip:` line and the check is skipped;
//!   a missing `ptxas` is an error (exit 1) with `--require-ptxas` or when `CI=true`, a missing
//!   GPU with `--require-gpu` or `KIR_REQUIRE_GPU=1`.
//! - Every GPU module load and launch runs in a worker process ([`kir_harness::isolate::IsolatedGpu`],
//!   this executable as `kir __gpu-worker`; `--gpu-in-process` runs them here instead): a driver
//!   that crashes (its PTX JIT segfaulting) or hangs (`--gpu-timeout`, default 60 s) ends the
//!   worker, not the campaign; the next check starts a new one.
//! - A crash of NVIDIA's tools — ptxas killed by a signal or failing without an error message, the
//!   driver's process dying — is a `CRASH` line, not a `FAIL` line: counted apart from kir's
//!   failures in the summary, reduced like a failure (as its own kind: the same tool, signal and
//!   stage), and kept as `DIR/case-SEED.kir` plus `DIR/case-SEED.ptx`, the PTX the tool crashed on.
//!   Driver crashes met while reducing another failure are counted in the summary too.
//! - Each failing case is reduced ([`kir_harness::fuzz::reduce_module`], functions included) and written to
//!   `DIR/case-SEED.kir`: a ready-to-run file with its `; run:` line. One line per failure and a
//!   summary (cases, failures, tool crashes, checks run — ptxas, ptx-emu, GPU — emulator failures,
//!   cases per second) go to stdout.
//! - `--time-limit S` starts no case after S seconds; the summary then counts the cases that ran,
//!   after a `time limit:` line saying how many of `--cases` that was. A reduction still running
//!   at the limit stops there and writes the smallest failing module it has.
//! - Exit 0 when every case passes, 1 when any fails (or a required tool is missing), 3 when none
//!   fails but NVIDIA's tools crashed on some (not kir's failure, but never silent), 2 on a usage
//!   error. `--insts` above [`MAX_INSTS`] is a usage error naming the limit (a case's cost grows
//!   faster than its size: the reducer and the analyses are not linear in it), and so is `--funcs`
//!   above [`MAX_FUNCS`] (a function makes at most two calls and the kernel six, so inlining can
//!   copy the first function up to 6 × 2^(N-1) times: 768 copies at the limit).

use super::common::usage;
use kir::ptx::gpu::{GpuError, GpuRunner};
use kir::ptx::SmVersion;
use kir_harness::fuzz::{self, FuzzConfig, Ran};
use kir_harness::gpu_exec::GpuExec;
use kir_harness::isolate::IsolatedGpu;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The exit status when no case failed but NVIDIA's tools crashed on some.
pub const EXIT_TOOL_CRASH: u8 = 3;

/// The largest `--insts` accepted.
pub const MAX_INSTS: usize = 20_000;
/// The largest `--funcs` accepted.
pub const MAX_FUNCS: usize = 8;

#[derive(clap::Args)]
#[command(mut_arg("require_gpu", |a| a.help("Fail when there is no GPU (also: KIR_REQUIRE_GPU=1)")))]
pub struct Args {
    /// Number of cases.
    #[arg(long, default_value_t = 100)]
    pub cases: u64,
    /// Seed of the first case (case i uses seed S + i).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Target instructions per kernel.
    #[arg(long, default_value_t = kir::ir::generate::GenConfig::default().insts)]
    pub insts: usize,
    /// Device functions per case: each module has 0 to N of them (0: kernels without calls).
    #[arg(long, default_value_t = kir::ir::generate::GenConfig::with_funcs().max_funcs)]
    pub funcs: usize,
    /// The pass pipeline whose results must equal the unoptimized kernel's.
    #[arg(long, default_value = kir::passes::DEFAULT_PIPELINE)]
    pub pipeline: String,
    /// PTX target for ptxas (and the GPU when it has no better match).
    #[arg(long, default_value = "sm_80")]
    pub sm: String,
    /// Where reduced failing cases are written.
    #[arg(long, default_value = "fuzz-failures")]
    pub out_dir: String,
    /// Most checks the reducer may run per failing case.
    #[arg(long, default_value_t = 2000)]
    pub reduce_budget: usize,
    /// Do not run ptxas even when it is found.
    #[arg(long)]
    pub no_ptxas: bool,
    /// Do not run the PTX in the PTX emulator.
    #[arg(long)]
    pub no_emu: bool,
    /// Let the generator write approximate ops (judged by the interpreter's error enclosures).
    #[arg(long)]
    pub approx: bool,
    /// Let the generator write vector values (`vec`, `insert`, `extract`).
    #[arg(long)]
    pub vectors: bool,
    /// Fail when ptxas is not found (also when CI=true).
    #[arg(long)]
    pub require_ptxas: bool,
    #[command(flatten)]
    pub gpu: super::run_options::GpuArgs,
    /// Seconds a GPU run (module load and launch, in the worker process) may take before the
    /// worker is killed and the run reported as hung.
    #[arg(long, default_value_t = 60)]
    pub gpu_timeout: u64,
    /// Load and run the GPU's modules in this process, without a worker (a driver crash then ends
    /// the campaign; for debugging the driver calls).
    #[arg(long)]
    pub gpu_in_process: bool,
    /// Start no new case after this many seconds: the campaign ends with its summary of the cases
    /// it ran (for a session on a lent GPU, or any run under a deadline); a reduction running at
    /// the limit stops and writes the smallest failing case it has.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Run only shard K of N (1 <= K <= N): the K-th of N contiguous ranges of the cases, each
    /// with its unsharded seed (docs/testing.md, "Running on several machines").
    #[arg(long, value_name = "K/N", value_parser = kir_harness::shard::Shard::parse)]
    pub shard: Option<kir_harness::shard::Shard>,
}

/// The GPU as the campaign uses it: in a worker process (the default) or in this one.
enum Gpu {
    Isolated(IsolatedGpu),
    InProcess(GpuRunner),
}

impl Gpu {
    fn exec(&mut self) -> &mut dyn GpuExec {
        match self {
            Gpu::Isolated(g) => g,
            Gpu::InProcess(r) => r,
        }
    }

    fn open(a: &Args) -> Result<Gpu, GpuError> {
        if a.gpu_in_process {
            return GpuRunner::new(a.gpu.device).map(Gpu::InProcess);
        }
        let exe = std::env::current_exe()
            .map_err(|e| GpuError::Driver(format!("cannot find the kir executable for the GPU worker: {e}")))?;
        IsolatedGpu::start_with_timeout(&exe, a.gpu.device, Duration::from_secs(a.gpu_timeout.max(1)))
            .map(Gpu::Isolated)
    }
}

pub fn run(a: &Args) -> ExitCode {
    let pipeline = match kir::passes::parse_pipeline(&a.pipeline) {
        Ok(p) => p,
        Err(e) => return usage(format!("--pipeline: {e}")),
    };
    let Some(sm) = SmVersion::from_name(&a.sm) else {
        let names: Vec<&str> = SmVersion::ALL.iter().map(|v| v.name()).collect();
        return usage(format!("--sm `{}`: unknown target (expected one of {})", a.sm, names.join(", ")));
    };
    if a.insts == 0 {
        return usage("--insts must be at least 1");
    }
    if a.insts > MAX_INSTS {
        return usage(format!(
            "--insts {}: at most {MAX_INSTS} instructions per kernel (the interpreter, ptxas and the reducer run on every case; larger kernels belong in benchmarks, not fuzzing)",
            a.insts
        ));
    }
    if a.time_limit.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return usage("--time-limit must be a positive number of seconds");
    }
    if a.funcs > MAX_FUNCS {
        return usage(format!("--funcs {}: at most {MAX_FUNCS} functions per module", a.funcs));
    }
    let mut cfg = FuzzConfig::new();
    cfg.set_insts(a.insts);
    cfg.gen.max_funcs = a.funcs;
    cfg.pipeline = pipeline;
    cfg.emu = !a.no_emu;
    cfg.gen.allow_approx = a.approx;
    cfg.gen.allow_vectors = a.vectors;
    // The case indices this run takes: all of them, or its shard's range.
    let indices = a.shard.map_or(0..a.cases, |sh| sh.cases(a.cases));
    let which = match a.shard {
        None => format!("{} cases from seed {}", a.cases, a.seed),
        Some(sh) if indices.is_empty() => {
            format!("shard {sh}, 0 of {} cases from seed {} (no seed: more shards than cases)", a.cases, a.seed)
        }
        Some(sh) => format!(
            "shard {sh}, {} of {} cases from seed {}: seeds {} to {}",
            indices.end - indices.start,
            a.cases,
            a.seed,
            a.seed.wrapping_add(indices.start),
            a.seed.wrapping_add(indices.end - 1)
        ),
    };
    println!(
        "kir fuzz: {which} (about {} instructions each, 0 to {} functions; pipeline {})",
        a.insts,
        a.funcs,
        cfg.pipeline.spec()
    );
    // Passes documented to change float results: their changes show up as failures (the
    // comparison stays bit for bit), which is what fuzzing them is for.
    for pass in ["fma-contract"] {
        if cfg.pipeline.spec().split(',').any(|p| p.trim() == pass) {
            println!(
                "note: {pass} changes float rounding by design: original and optimized kernels are still compared bit for bit, so the cases it changes fail"
            );
        }
    }

    // Tools.
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !a.no_ptxas {
        if kir::ptx::tools::find_ptxas().is_some() {
            cfg.ptxas = Some(sm);
        } else if a.require_ptxas || ci {
            eprintln!(
                "error: ptxas not found and it is required ({}; --require-ptxas or CI=true)",
                kir::ptx::tools::INSTALL_HINT
            );
            return ExitCode::from(1);
        } else {
            println!("skip: ptxas not found ({}); PTX is not assembled", kir::ptx::tools::INSTALL_HINT);
        }
    }
    let require_gpu = a.gpu.required();
    let mut gpu: Option<(Gpu, SmVersion)> = match Gpu::open(a) {
        Ok(mut g) => {
            match g.exec().compute_capability().map_err(|e| e.to_string()).and_then(kir_harness::gpu_exec::sm_for) {
                Ok(gsm) => {
                    if g.exec().is_emulated() {
                        println!(
                        "note: the GPU column runs on `{}`, kir's emulated CUDA driver (KIR_CUDA_DRIVER), not on hardware",
                        g.exec().device_name().unwrap_or_default()
                    );
                    }
                    Some((g, gsm))
                }
                Err(e) => {
                    eprintln!("error: GPU: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        Err(e @ GpuError::DriverSelection(_)) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        Err(e) => {
            let reason = match e {
                GpuError::NoDriver => "no CUDA driver (libcuda not found)".to_string(),
                GpuError::NoDevice => format!("the CUDA driver reports no device {}", a.gpu.device),
                other => other.to_string(),
            };
            if require_gpu {
                eprintln!("error: no GPU: {reason}; a GPU is required (--require-gpu or KIR_REQUIRE_GPU=1)");
                return ExitCode::from(1);
            }
            println!("skip: no GPU: {reason}; interpreter vs GPU is not compared");
            None
        }
    };

    let start = Instant::now();
    let (mut failed, mut ptxas_runs, mut emu_runs, mut gpu_runs) = (0u64, 0u64, 0u64, 0u64);
    let (mut emu_failed, mut ptxas_crashed, mut driver_crashed) = (0u64, 0u64, 0u64);
    let mut cases = 0u64;
    let mut unverified = 0u64;
    let past_time_limit = || a.time_limit.is_some_and(|t| start.elapsed().as_secs_f64() >= t);
    for i in indices.clone() {
        if past_time_limit() {
            println!(
                "time limit: {} s reached after {} of {} cases; no further case is started",
                a.time_limit.unwrap_or(0.0),
                i - indices.start,
                indices.end - indices.start
            );
            break;
        }
        cases += 1;
        let seed = a.seed.wrapping_add(i);
        let (m, named) = fuzz::generate_case(seed, &cfg);
        let mut ran = Ran::default();
        let result = fuzz::check_module(&m, &named, &cfg, gpu.as_mut().map(|(g, s)| (g.exec(), *s)), &mut ran);
        ptxas_runs += ran.ptxas as u64;
        emu_runs += ran.emu as u64;
        gpu_runs += ran.gpu as u64;
        let Err(failure) = result else {
            if ran.unverified {
                unverified += 1;
                println!("UNVERIFIED case seed {seed}: an engine differed where the error enclosures cannot decide");
            }
            continue;
        };
        match failure.kind {
            fuzz::FailureKind::PtxasCrash(_) => ptxas_crashed += 1,
            fuzz::FailureKind::DriverCrash { .. } => driver_crashed += 1,
            fuzz::FailureKind::Emu(_) | fuzz::FailureKind::EmuMismatch => {
                failed += 1;
                emu_failed += 1;
            }
            _ => failed += 1,
        }
        let crash = failure.kind.is_tool_crash();
        println!("{} case seed {seed}: {failure}", if crash { "CRASH" } else { "FAIL" });
        let mut check = |c: &kir::ir::Module| -> Option<fuzz::Failure> {
            // Past the time limit every candidate counts as passing: the reducer keeps the
            // smallest failing module found so far and finishes at once.
            if past_time_limit() {
                return None;
            }
            let mut ran = Ran::default();
            fuzz::check_module(c, &named, &cfg, gpu.as_mut().map(|(g, s)| (g.exec(), *s)), &mut ran).err()
        };
        let (small, last, rs) = fuzz::reduce_module(&m, &failure.kind, &mut check, a.reduce_budget);
        let cut_short = past_time_limit();
        let last = last.unwrap_or(failure.clone());
        let text = fuzz::repro_file(&small, seed, &last, &cfg, &named);
        let dir = std::path::Path::new(&a.out_dir);
        let path = dir.join(format!("case-{seed}.kir"));
        let mut written = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, text)).map(|_| None);
        if let (Ok(_), Some(ptx)) = (&written, last.ptx.as_ref().or(failure.ptx.as_ref())) {
            let ptx_path = dir.join(format!("case-{seed}.ptx"));
            written = std::fs::write(&ptx_path, ptx).map(|_| Some(ptx_path)).map_err(|e| {
                std::io::Error::new(e.kind(), format!("{}: {e}", dir.join(format!("case-{seed}.ptx")).display()))
            });
        }
        match written {
            Ok(ptx_path) => {
                println!(
                    "  reduced from {} to {} instructions ({} blocks, {} functions) in {} checks{}: {}",
                    fuzz::module_insts(&m),
                    fuzz::module_insts(&small),
                    small.bodies().map(|b| b.blocks.len()).sum::<usize>(),
                    small.funcs.len(),
                    rs.checks,
                    if cut_short { ", stopped at --time-limit" } else { "" },
                    path.display()
                );
                if let Some(p) = ptx_path {
                    println!("  the PTX {} crashed on: {}", crash_tool(&last.kind), p.display());
                }
            }
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(1);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let crashed = ptxas_crashed + driver_crashed;
    let gpu_note = match &gpu {
        None => " (no GPU)".to_string(),
        Some((Gpu::Isolated(g), _)) if g.stats().crashes + g.stats().timeouts > 0 => {
            let st = g.stats();
            format!(
                " (the driver's worker process crashed {} and hung {} times, reducers included; {} workers started)",
                st.crashes, st.timeouts, st.workers
            )
        }
        Some(_) => String::new(),
    };
    let ptxas_note = if cfg.ptxas.is_some() { String::new() } else { " (skipped)".to_string() };
    let emu_note = if cfg.emu { format!(" ({emu_failed} failed there)") } else { " (--no-emu)".to_string() };
    let crash_note = if crashed > 0 {
        format!(", {crashed} crashed NVIDIA's tools (ptxas {ptxas_crashed}, driver {driver_crashed})")
    } else {
        String::new()
    };
    let shard_note = a.shard.map(|sh| format!("; shard {sh}")).unwrap_or_default();
    let unverified_note = if unverified > 0 {
        format!(", {unverified} unverified (differences only where an error enclosure cannot decide)")
    } else {
        String::new()
    };
    println!(
        "fuzz: {cases} cases, {} passed, {failed} failed{crash_note}{unverified_note}; ptxas ran on {ptxas_runs}{ptxas_note}, ptx-emu on {emu_runs}{emu_note}, GPU on {gpu_runs}{gpu_note}; {secs:.2} s ({:.1} cases/s){shard_note}",
        cases - failed - crashed - unverified,
        if secs > 0.0 { cases as f64 / secs } else { 0.0 }
    );
    if failed > 0 {
        ExitCode::from(1)
    } else if crashed > 0 {
        println!(
            "note: no kir failure, but NVIDIA's tools crashed on {crashed} case{} (exit {EXIT_TOOL_CRASH}): report them with the PTX kept in {}",
            if crashed == 1 { "" } else { "s" },
            a.out_dir
        );
        ExitCode::from(EXIT_TOOL_CRASH)
    } else {
        ExitCode::SUCCESS
    }
}

/// Which tool a crash kind names.
fn crash_tool(k: &fuzz::FailureKind) -> &'static str {
    match k {
        fuzz::FailureKind::PtxasCrash(_) => "ptxas",
        _ => "the driver",
    }
}
