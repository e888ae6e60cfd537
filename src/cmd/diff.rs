//! `kir diff FILE (--kernel K --grid X[,Y[,Z]] --block X[,Y[,Z]] | --graph G) [--arg NAME=VALUE]...
//! [--against gpu|ptx-emu] [--shared BYTES] [--tol ulp:N|rel:X|abs:X|exact] [--limit N]
//! [--time [--reps N]] [--device N] [--require-gpu]`: run a kernel (or launch graph) in the
//! interpreter and on the GPU or in the PTX emulator with identical inputs and compare every buffer.
//!
//! Guarantees:
//! - The launch options are `kir run`'s ([`super::run_options::LaunchArgs`]: the same flags, help
//!   and rules). Arguments use exactly `kir run`'s syntax and checks (every parameter once, by name; scalar and
//!   buffer element types); a problem is a clear message and exit 2. The file is parsed and
//!   verified first (exit 1 with located errors).
//! - The interpreter runs first; its written buffers are summarized on stdout as `kir run` does.
//!   A fault there prints the located diagnostic and exits 1.
//! - What the interpreter is compared with (`--against`): `gpu`, or `ptx-emu` (the PTX kir emits
//!   for the file, sm_80, run in [`kir_ptx_emu`] through [`kir_harness::emu_exec`]). The default is `gpu`
//!   when a GPU is present, or required (`--require-gpu`, `KIR_REQUIRE_GPU=1`), or `--time` is
//!   given; otherwise `ptx-emu`, and the output says that it was chosen because there is no GPU.
//! - Against the GPU without a usable one (no CUDA driver, no device) it prints
//!   `skip: no GPU: REASON` and exits 0, unless a GPU is required: then it prints an error and
//!   exits 1. The emulator side never skips; a fault there prints its PTX line, instruction, block
//!   and thread (and the `.kir` line it was emitted for) and exits 1.
//! - Every buffer (inputs too, which catches stray writes) is compared with
//!   [`kir_harness::compare::compare_buffers`]: integers exactly, floats NaN-aware under `--tol`, or the
//!   tolerance derived from the approximate ops used ([`kir_harness::tolerance`]). For each differing
//!   buffer the first `--limit` mismatches are printed (index, interpreter value, the other
//!   engine's value, ULP distance), then a summary line. Exit 0 when every buffer matches, 1
//!   otherwise (also for a GPU-side error such as a module the driver rejects).
//! - `--time` (kernels, GPU only) times `--reps` further launches by CUDA events and prints the
//!   median and the bandwidth achieved for the global-memory bytes the interpreter counted (read +
//!   written), as `kir run --stats` reports them. On kir's emulated driver (`KIR_CUDA_DRIVER=emu`,
//!   device `kir-ptx-emu ...`) the line says the time is the emulator's CPU wall time and gives no
//!   bandwidth.
//! - The GPU section's header names the device (`GPU (sm_90, device 0: NAME)`), marked `emulated`
//!   for kir's emulated driver.
//! - Every run goes through [`kir_harness::engine::Engine`] on the same [`Inputs`]: the
//!   [`Interpreter`], then the [`PtxEmulator`] or the [`engine::Gpu`]; `--time` times the PTX the
//!   GPU engine ran ([`engine::Gpu::kernel_ptx`]) with [`gpu_exec::time_kernel`].

use super::common::{self, usage};
use super::run_options::{GpuArgs, LaunchArgs};

use kir::interp::{args, Arg, Buffer, ErrorKind, LaunchConfig};
use kir::ptx::gpu::{GpuError, GpuRunner};
use kir_harness::compare::{compare_buffers, Strictness};
use kir_harness::directives::Tolerance;
use kir_harness::engine::{self, EmuProgram, Engine as _, EngineError, Inputs, Interpreter, PtxEmulator};
use kir_harness::{emu_exec, gpu_exec};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(mut_arg("require_gpu", |a| a.help("Fail (exit 1) instead of skipping when there is no GPU (also: KIR_REQUIRE_GPU=1)")))]
pub struct Args {
    /// The .kir file.
    pub file: String,
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// What to compare the interpreter with: `gpu`, or `ptx-emu` (the emitted PTX in kir's PTX
    /// emulator). Default: gpu when a GPU is present or required (or with --time), else ptx-emu.
    #[arg(long, value_enum)]
    pub against: Option<Against>,
    /// Float tolerance: exact, ulp:N, rel:X or abs:X (default: derived from the approximate ops).
    #[arg(long)]
    pub tol: Option<String>,
    /// Mismatches printed per buffer.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Time the kernel on the GPU by CUDA events (median of --reps launches) and print GB/s
    /// (GPU only).
    #[arg(long)]
    pub time: bool,
    /// Launches timed with --time.
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

/// The engine the interpreter is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Against {
    /// The GPU (CUDA driver).
    Gpu,
    /// The PTX emulator (`kir_ptx_emu`): no GPU needed.
    PtxEmu,
}

/// A kernel or graph with bound arguments, ready for both engines.
enum Target<'m> {
    Kernel { k: kir::ir::verify::VerifiedKernel<'m>, cfg: LaunchConfig },
    Graph { g: &'m kir::ir::graph::Graph },
}

pub fn run(a: &Args) -> ExitCode {
    if let Err(code) = a.launch.apply_max_memory() {
        return code;
    }
    let loaded = match common::load_checked(&a.file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let m = &loaded.module;
    if a.time && a.against == Some(Against::PtxEmu) {
        return usage("--time measures the GPU; it cannot be used with --against ptx-emu");
    }
    let target = match &a.launch.graph {
        Some(name) => {
            if a.time {
                return usage("--time is for kernels (time the graph's kernels one at a time)");
            }
            match common::select_graph(&loaded, name) {
                Ok(g) => Target::Graph { g },
                Err(code) => return code,
            }
        }
        None => {
            let k = match common::select_kernel(&loaded, a.launch.target.kernel.as_deref()) {
                Ok(k) => k,
                Err(code) => return code,
            };
            let Some(k) = loaded.module.verified_kernel(&k.name) else {
                return common::file_error(&loaded.path, format!("no kernel `@{}`", k.name));
            };
            let (grid, block) = match a.launch.dims() {
                Ok(d) => d,
                Err(e) => return usage(e),
            };
            Target::Kernel { k, cfg: LaunchConfig { grid, block, dynamic_shared_bytes: a.launch.target.shared } }
        }
    };
    let named = match common::named_args(&a.launch.target.args) {
        Ok(n) => n,
        Err(e) => return usage(e),
    };
    // Bind: the engines' shared arguments and, per buffer parameter, its name and buffer index.
    let (launch_args, initial, buffer_params, written) = match &target {
        Target::Kernel { k, .. } => match args::bind(k, &named, None) {
            Ok(b) => {
                let w = kir::interp::outputs::written_params(k);
                let mut params = Vec::new();
                let mut written = Vec::new();
                for (i, p) in k.params.iter().enumerate() {
                    if let Some(bi) = b.param_buffer[i] {
                        params.push((k.value(*p).name.to_string(), bi));
                        written.push(w[i]);
                    }
                }
                (b.args, b.buffers, params, written)
            }
            Err(e) => return usage(e),
        },
        Target::Graph { g } => match kir::interp::graph::bind_graph(g, &named, None) {
            Ok(b) => {
                let mut writes = std::collections::BTreeSet::new();
                for l in &g.launches {
                    writes.extend(kir::ir::analysis::effects::launch_effects(m, l).writes);
                }
                let mut params = Vec::new();
                let mut written = Vec::new();
                for (p, arg) in g.params.iter().zip(&b.args) {
                    if let Arg::Buffer(bi) = arg {
                        params.push((p.name.clone(), *bi));
                        written.push(writes.contains(&p.name));
                    }
                }
                (b.args, b.buffers, params, written)
            }
            Err(e) => return usage(e),
        },
    };
    let (tol, why) = match &a.tol {
        Some(t) => match Tolerance::parse(t) {
            Ok(t) => (t, "given with --tol".to_string()),
            Err(e) => return usage(format!("--tol: {e}")),
        },
        None => {
            let (t, d) = match &target {
                Target::Kernel { k, .. } => kir_harness::tolerance::derived_tolerance_explained(&m.funcs, k),
                Target::Graph { g } => kir_harness::tolerance::derived_tolerance_graph(m, g),
            };
            (t, format!("derived: {d}"))
        }
    };
    // Without --tol, a kernel's approximate ops are judged by per-element error enclosures.
    let use_enclosures = a.tol.is_none() && tol != Tolerance::Exact && matches!(target, Target::Kernel { .. });

    // Every engine gets the same inputs; the buffers carry their parameters' names.
    let mut names = vec![String::new(); initial.len()];
    for (n, bi) in &buffer_params {
        if let Some(slot) = names.get_mut(*bi) {
            slot.clone_from(n);
        }
    }
    let inputs = Inputs { args: &launch_args, buffers: &initial, names: &names };
    let launch = match &target {
        Target::Kernel { k, cfg } => engine::Launch::Kernel { name: &k.name, cfg: *cfg },
        Target::Graph { g } => engine::Launch::Graph { name: &g.name },
    };

    // Interpreter.
    let mut interpreter = Interpreter::new(m, a.launch.interp_options(false, false));
    let interp = match interpreter.run(&launch, &inputs) {
        Ok(b) => b,
        Err(EngineError::Interp(e)) => {
            loaded.emit(&[e.to_diagnostic()]);
            return ExitCode::from(if e.kind == ErrorKind::InvalidLaunch { 2 } else { 1 });
        }
        Err(e) => return common::file_error(&loaded.path, e),
    };
    let stats = interpreter.last_stats().cloned().unwrap_or_default();
    let enclosures = match (&launch, use_enclosures) {
        (engine::Launch::Kernel { name, cfg }, true) => {
            match kir_harness::enclosure::run_enclosed(m, name, cfg, &inputs, &a.launch.interp_options(false, false)) {
                Ok((_, enc)) => Some(enc),
                Err(e) => return common::file_error(&loaded.path, e),
            }
        }
        _ => None,
    };
    let judging = Judging { tol, enclosures: enclosures.as_ref(), sources: &loaded.sources };
    println!("interpreter:");
    for ((name, bi), w) in buffer_params.iter().zip(&written) {
        if *w {
            println!("  %{name}: {}", kir::interp::outputs::summary(&interp[*bi]));
        }
    }
    match &enclosures {
        Some(e) => {
            let n: usize = e.buffers.iter().map(Vec::len).sum();
            println!(
                "tolerance: per-element error enclosures ({why}; {n} elements inexact{})",
                if e.unusable.is_some() { "; unusable, see below" } else { "" }
            );
        }
        None => println!("tolerance: {tol} ({why})"),
    }

    // The GPU, unless the emulator was asked for or there is none and none is required.
    let require = a.gpu.required();
    let mut runner = None;
    let mut no_gpu = None;
    if a.against != Some(Against::PtxEmu) {
        match GpuRunner::new(a.gpu.device) {
            Ok(r) => runner = Some(r),
            Err(e @ (GpuError::NoDriver | GpuError::NoDevice)) => {
                let reason = match e {
                    GpuError::NoDriver => "no CUDA driver (libcuda not found)".to_string(),
                    _ => format!("the CUDA driver reports no device {}", a.gpu.device),
                };
                if require {
                    eprintln!("error: no GPU: {reason}; a GPU is required (--require-gpu or KIR_REQUIRE_GPU=1)");
                    return ExitCode::from(1);
                }
                if a.against == Some(Against::Gpu) || a.time {
                    println!("skip: no GPU: {reason}; the GPU side was not run");
                    return ExitCode::SUCCESS;
                }
                no_gpu = Some(reason);
            }
            Err(e) => {
                eprintln!("error: GPU: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let Some(mut runner) = runner else {
        return against_emulator(a, &loaded, &launch, &inputs, &interp, &buffer_params, &judging, no_gpu);
    };
    let sm = match runner.compute_capability().map_err(|e| e.to_string()).and_then(gpu_exec::sm_for) {
        Ok(sm) => sm,
        Err(e) => {
            eprintln!("error: GPU: {e}");
            return ExitCode::from(1);
        }
    };
    let gpu_result = {
        let mut gpu = engine::Gpu::with_sm(&mut runner, m, sm);
        gpu.run(&launch, &inputs).and_then(|b| match &target {
            // The PTX `--time` times: the one the engine ran.
            Target::Kernel { k, .. } => gpu.kernel_ptx(&k.name).map(|p| (b, p.to_string())),
            Target::Graph { .. } => Ok((b, String::new())),
        })
    };
    let (gpu, ptx) = match gpu_result {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: GPU ({}): {e}", sm.name());
            return ExitCode::from(1);
        }
    };
    let device = runner.device_name().unwrap_or_else(|_| "?".into());
    let emulated = kir::ptx::gpu::is_emulated_device(&device);
    println!("GPU ({}, device {}: {device}{}):", sm.name(), a.gpu.device, if emulated { ", emulated" } else { "" });
    let differing = report(&buffer_params, &interp, &gpu, &judging, a.limit, "GPU");
    if differing == 0 {
        println!("diff: {} buffers compared, all match ({})", buffer_params.len(), judging.name());
    } else {
        println!("diff: {differing} of {} buffers differ ({})", buffer_params.len(), judging.name());
    }
    if a.time {
        if let Target::Kernel { k, cfg } = &target {
            match gpu_exec::time_kernel(&mut runner, k, &ptx, cfg, &launch_args, &initial, a.reps.max(1)) {
                Ok(times) => {
                    let med = gpu_exec::median(&times).unwrap_or(f64::NAN);
                    let bytes = stats.global_bytes_read + stats.global_bytes_written;
                    let gbs = if med > 0.0 { bytes as f64 / (med * 1e-3) / 1e9 } else { f64::NAN };
                    if emulated {
                        // Not GPU time: the emulated driver's events record the host's wall clock.
                        println!(
                            "time: median {med:.4} ms of {} launches (CUDA events of the emulated device: CPU wall time of the PTX emulator, not GPU time); {bytes} bytes of global memory traffic (interpreter count)",
                            times.len()
                        );
                    } else {
                        println!(
                            "time: median {med:.4} ms of {} launches (CUDA events); {bytes} bytes of global memory traffic (interpreter count) = {gbs:.1} GB/s",
                            times.len()
                        );
                    }
                }
                Err(e) => {
                    eprintln!("error: GPU timing: {e}");
                    return ExitCode::from(1);
                }
            }
        }
    }
    if differing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Runs the target in the PTX emulator on the interpreter's inputs and reports the comparison
/// (`no_gpu`: why the emulator was chosen by default).
#[allow(clippy::too_many_arguments)]
fn against_emulator(
    a: &Args,
    loaded: &common::Loaded<kir::ir::verify::Checked>,
    launch: &engine::Launch<'_>,
    inputs: &Inputs<'_>,
    interp: &[Buffer],
    buffer_params: &[(String, usize)],
    judging: &Judging<'_>,
    no_gpu: Option<String>,
) -> ExitCode {
    let m = &loaded.module;
    let ptx = match emu_exec::module_ptx(m, Some(&loaded.source)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: ptx-emu: PTX emission failed: {e}");
            return ExitCode::from(1);
        }
    };
    let program = EmuProgram::from_ptx(ptx);
    if let Err(e) = &program {
        eprintln!("error: ptx-emu: {e}");
        return ExitCode::from(1);
    }
    // kir's PTX in the emulator computes `mma` as the interpreter does (the sm_90 rule unless
    // `--tensor-cores` says otherwise), not by the emitted `.target`.
    let emu_opts = kir_ptx_emu::Options {
        tensor_cores: Some(kir_harness::tensor_cores::emulator_rule(a.launch.tensor_cores.unwrap_or_default())),
        ..a.launch.emu_options()
    };
    let buffers = match PtxEmulator::new(&program, m, emu_opts).run(launch, inputs) {
        Ok(b) => b,
        Err(EngineError::Emu(e)) => {
            eprintln!("error: {}", e.message.trim_start_matches("ptx-emu: ").replace('\n', "\n  "));
            eprintln!("  (in the PTX emulator, running the PTX `kir ptx {}` prints)", loaded.path);
            return ExitCode::from(1);
        }
        Err(e) => {
            eprintln!("error: ptx-emu: {e}");
            return ExitCode::from(1);
        }
    };
    match no_gpu {
        Some(why) => println!("ptx-emu ({} PTX; the default without a GPU: {why}):", emu_exec::EMU_SM.name()),
        None => println!("ptx-emu ({} PTX):", emu_exec::EMU_SM.name()),
    }
    let differing = report(buffer_params, interp, &buffers, judging, a.limit, "ptx-emu");
    if differing == 0 {
        println!("diff: {} buffers compared, all match ({})", buffer_params.len(), judging.name());
        ExitCode::SUCCESS
    } else {
        println!("diff: {differing} of {} buffers differ ({})", buffer_params.len(), judging.name());
        ExitCode::from(1)
    }
}

/// How buffers are compared: a tolerance, or the interpreter's per-element enclosures.
struct Judging<'a> {
    tol: Tolerance,
    enclosures: Option<&'a kir::interp::enclose::Enclosures>,
    sources: &'a kir::ir::diag::SourceMap,
}

impl Judging<'_> {
    /// `tolerance ulp:2` or `per-element enclosures`.
    fn name(&self) -> String {
        match self.enclosures {
            Some(_) => "per-element error enclosures".into(),
            None => format!("tolerance {}", self.tol),
        }
    }
}

/// Prints the comparison of every buffer against the other engine (`other`: its name); returns
/// how many differ.
fn report(
    params: &[(String, usize)],
    interp: &[Buffer],
    gpu: &[Buffer],
    judging: &Judging<'_>,
    limit: usize,
    other: &str,
) -> usize {
    let mut differing = 0;
    for (name, bi) in params {
        let (x, y) = (&interp[*bi], &gpu[*bi]);
        if let Some(enc) = judging.enclosures {
            let entries = enc.buffers.get(*bi).map_or(&[][..], |v| v.as_slice());
            match kir_harness::enclosure::judge_buffer(name, x, y, entries, enc.unusable.as_ref(), judging.sources) {
                Ok(m) => println!("  %{name}: match ({} {} elements, {})", x.len(), x.elem, m.describe()),
                Err(d) => {
                    differing += 1;
                    println!("  %{name}: DIFFERS: {}", d.message.replace("this engine", other));
                }
            }
            continue;
        }
        let c = compare_buffers(x, y, Strictness::Within(judging.tol), limit);
        let max = if x.elem.is_float() { format!(", max {} ulp", c.max_ulps) } else { String::new() };
        if let Some(s) = &c.structural {
            differing += 1;
            println!("  %{name}: DIFFERS: {s}");
        } else if c.is_match() {
            println!("  %{name}: match ({} {} elements{max})", x.len(), x.elem);
        } else {
            differing += 1;
            println!("  %{name}: DIFFERS: {} of {} elements{max}", c.count, x.len());
            for mm in &c.first {
                let ulps = mm.ulps.map(|u| format!(" ({u} ulp)")).unwrap_or_default();
                println!("    [{}] interpreter {}, {other} {}{ulps}", mm.index, mm.expected, mm.actual);
            }
            if c.count > c.first.len() {
                println!("    ... and {} more", c.count - c.first.len());
            }
        }
    }
    differing
}
