//! The engine behind `kir test`: every check of one `.kir` file, reported as rows.
//!
//! For each file: parse, verify (including barrier verification), the default pass pipeline with
//! the verifier after every pass, PTX emission (and `ptxas` for sm_80 and sm_90 when found), and
//! `; check-ptx:` lines — one row. Then for each `; run:` directive: the launch in the interpreter
//! on the module as written and after the pass pipeline, whose outputs must be bit-identical, and
//! the directive's `; expect:` checks — one row; the same launch (kernel or graph, launch by
//! launch with its temporaries) in the PTX emulator on the PTX of the optimized module (what
//! `kir ptx` writes for it, sm_80) — one `ptx-emu` row, which never skips; and the same launch on
//! the GPU — one row (`skip: no GPU` without one). The emulator and the GPU are compared with the
//! interpreter within the directive's tolerance, or else the tolerance derived from the
//! approximate ops used (`crate::tolerance`). When the interpreter row fails, the two rows after it
//! are not reported (there is nothing trustworthy to compare with). All three engines run through
//! [`crate::engine::Engine`]; the emulator and the GPU get the inputs the interpreter started from.
//!
//! A file marked `; source: hardware ...` holds expectations recorded on a GPU: they are the
//! specification, so its `ptx-emu` and `gpu` rows are checked against the file's `; expect:` lines
//! (the recorded bits), not against the interpreter, and are reported even when the interpreter
//! row fails (each engine is judged by the hardware on its own). A `gpu` row that differs from the
//! recording reports *drift* (another GPU or driver computes other bits). `--bless` never rewrites
//! a hardware-recorded file; `--record-gpu` writes the missing ones from a real GPU's outputs
//! (never from kir's emulated driver) and never overwrites one.
//!
//! Guarantees:
//! - Every problem is a FAIL row with a message that locates it (file, line, kernel); nothing
//!   panics on bad input and no failure is silently dropped.
//! - A row is `ok` only when its check actually ran and passed; a check that could not run is a
//!   `skip` row that says why.
//! - Results are deterministic: the same file gives the same rows.
//! - A crash of NVIDIA's tools fails its row and says so, never as a verdict on the PTX: `ptxas
//!   crashed on the PTX` (a signal, or no error message), and with [`Context::detect_isolated`]
//!   (as `kir test` runs) a driver that dies loading or running a module fails that `gpu` row
//!   (`the driver's PTX JIT crashed (SIGSEGV) ...`) and the next row gets a fresh worker.

use crate::compare::{compare_buffers, elements_match, Strictness};
use crate::directives::{parse_directives, Expect, Expected, RunDirective, Tolerance};
use crate::emu_exec::EmuFailure;
use crate::engine::Engine as _;
use crate::engine::{EmuProgram, EngineError, Inputs, Interpreter, Launch, PtxEmulator};
use kir_backend_ptx::{gpu, tools, PtxOptions, SmVersion};
use kir_interp::args::{parse_arg_spec, ArgSpec};
use kir_interp::{Arg, Buffer, LaunchConfig, Options};
use kir_ir::diag::{self, Diagnostic};
use kir_ir::verify::{Checked, Verified, VerifiedKernel};
use kir_ir::Module;
use std::path::{Path, PathBuf};

/// The outcome of one row.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok,
    /// The run passed every check that ran, but the directive expects nothing of its outputs (no
    /// `; expect:`): a wrong kernel would pass too. `kir test --strict` makes it a failure.
    Unverified,
    Fail(String),
    Skip(String),
}

/// One reported row.
#[derive(Clone, Debug)]
pub struct Row {
    /// What was checked, e.g. `kernels/a.kir` or `kernels/a.kir:12 @relu_backward interp`.
    pub label: String,
    pub outcome: Outcome,
    /// Extra information for an `ok` row (e.g. which tools ran).
    pub note: Option<String>,
}

/// Why the GPU side cannot run, or the runner to use (in this process, or in a worker process:
/// [`Context::detect_isolated`]).
pub enum GpuState {
    Available(Box<dyn crate::gpu_exec::GpuExec>),
    Unavailable(String),
    /// `KIR_CUDA_DRIVER` names a driver that cannot be used: every GPU row fails with this.
    Misconfigured(String),
}

/// State shared across files: tools found once, the GPU opened once.
pub struct Context {
    pub ptxas: Option<PathBuf>,
    pub gpu: GpuState,
    /// Turn a missing GPU into a failure.
    pub require_gpu: bool,
    /// Interpreter options for directive launches.
    pub interp: Options,
    /// Emulator options for the `ptx-emu` rows.
    pub emu: kir_ptx_emu::Options,
    /// Applied to each file's PTX before the emulator loads it (identity when `None`): lets tests
    /// corrupt the emitted PTX on purpose and check that the `ptx-emu` rows catch it.
    pub emu_ptx_hook: Option<PtxHook>,
    /// Race and uninitialized-read detection in the interpreter runs (on by default; a directive
    /// may turn them off with a reason, `kir test --no-checks` turns them off everywhere).
    pub checks: bool,
    /// Write missing or differing `.npy` expectations from the interpreter's output.
    pub bless: bool,
    /// What `bless` wrote: `PATH (new ...)` / `PATH (changed ...)`.
    pub blessed: Vec<String>,
    /// Write the missing `.npy` expectations of `; source: hardware` files from the GPU's
    /// outputs (`kir test --record-gpu`); refused on kir's emulated driver.
    pub record_gpu: bool,
    /// The pass pipeline whose output the `interp` (second run), `ptx-emu`, ptxas and `gpu` rows
    /// run: [`kir_passes::DEFAULT_PIPELINE`] unless a caller sets another.
    pub pipeline: String,
}

/// A rewrite of PTX text (see [`Context::emu_ptx_hook`]).
pub type PtxHook = Box<dyn Fn(&str) -> String>;

impl Context {
    /// Finds ptxas and opens the first GPU, if any, in this process (never panics without a driver).
    pub fn detect(require_gpu: bool) -> Context {
        Self::with_gpu(require_gpu, gpu::GpuRunner::new(0).map(|r| Box::new(r) as Box<dyn crate::gpu_exec::GpuExec>))
    }

    /// [`Context::detect`] with the GPU's driver calls in a worker process
    /// ([`crate::isolate::IsolatedGpu`]; `worker_exe` is the `kir` executable), so that a driver
    /// that crashes on some PTX fails that row, not the run.
    pub fn detect_isolated(require_gpu: bool, worker_exe: &Path) -> Context {
        let timeout = std::time::Duration::from_secs(600);
        let g = crate::isolate::IsolatedGpu::start_with_timeout(worker_exe, 0, timeout);
        Self::with_gpu(require_gpu, g.map(|g| Box::new(g) as Box<dyn crate::gpu_exec::GpuExec>))
    }

    fn with_gpu(require_gpu: bool, runner: Result<Box<dyn crate::gpu_exec::GpuExec>, gpu::GpuError>) -> Context {
        let gpu = match runner {
            Ok(r) => GpuState::Available(r),
            Err(gpu::GpuError::NoDriver) => GpuState::Unavailable("no GPU (CUDA driver library not found)".into()),
            Err(e @ gpu::GpuError::DriverSelection(_)) => GpuState::Misconfigured(e.to_string()),
            Err(e) => GpuState::Unavailable(format!("no GPU ({e})")),
        };
        Context {
            ptxas: tools::find_ptxas(),
            gpu,
            require_gpu,
            interp: Options::default(),
            emu: kir_ptx_emu::Options::default(),
            emu_ptx_hook: None,
            checks: true,
            bless: false,
            blessed: Vec::new(),
            record_gpu: false,
            pipeline: kir_passes::DEFAULT_PIPELINE.to_string(),
        }
    }

    /// The optional tools this run uses, for the summary of `kir test`: `tools: ptxas 12.9.86
    /// (PATH), GPU: none (WHY)`; `ptxas: not found`; `GPU: NAME (emulated, KIR_CUDA_DRIVER)` or
    /// `GPU: NAME`; `GPU: error (WHY)` when `KIR_CUDA_DRIVER` is unusable.
    pub fn tools_summary(&self) -> String {
        let ptxas = match &self.ptxas {
            Some(p) => match tools::ptxas_version(p) {
                Some(v) => format!("ptxas {v} ({})", p.display()),
                None => format!("ptxas ({})", p.display()),
            },
            None => "ptxas: not found".to_string(),
        };
        let gpu = match &self.gpu {
            GpuState::Available(r) => {
                let name = r.device_name().unwrap_or_else(|e| format!("unnamed ({e})"));
                if r.is_emulated() {
                    format!("GPU: {name} (emulated, KIR_CUDA_DRIVER)")
                } else {
                    format!("GPU: {name}")
                }
            }
            GpuState::Unavailable(why) => {
                let why = why.strip_prefix("no GPU (").and_then(|w| w.strip_suffix(')')).unwrap_or(why);
                format!("GPU: none ({why})")
            }
            GpuState::Misconfigured(why) => format!("GPU: error ({why})"),
        };
        format!("tools: {ptxas}, {gpu}")
    }
}

/// The outputs of one interpreter launch, and the inputs it started from.
pub(crate) struct Outputs {
    buffers: Vec<Buffer>,
    /// Parameter name of each buffer.
    names: Vec<String>,
    /// The launch's arguments (kernel or graph parameters, in order).
    args: Vec<Arg>,
    /// The buffers before the launch.
    initial: Vec<Buffer>,
}

impl Outputs {
    /// The same launch with another engine's buffers (same order and names).
    fn with_buffers(&self, buffers: Vec<Buffer>) -> Outputs {
        Outputs { buffers, names: self.names.clone(), args: self.args.clone(), initial: self.initial.clone() }
    }

    /// The inputs this launch started from, for another engine.
    fn inputs(&self) -> Inputs<'_> {
        Inputs { args: &self.args, buffers: &self.initial, names: &self.names }
    }
}

/// A file's PTX loaded in the emulator, or why it could not be.
type EmuPtx = Result<EmuProgram, EmuFailure>;

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

fn rendered(diags: &[Diagnostic], sources: &diag::SourceMap) -> String {
    indent(diag::render_map(diags, sources, false).trim_end())
}

/// Tests one file; `emit` receives each row as soon as it is decided.
pub fn test_file(path: &Path, ctx: &mut Context, emit: &mut dyn FnMut(Row)) {
    let label = path.display().to_string();
    let source = match crate::files::read_source(path) {
        Ok(s) => s,
        Err(e) => {
            return emit(Row { label: label.clone(), outcome: Outcome::Fail(format!("cannot read: {e}")), note: None })
        }
    };
    let (module, sources) = match kir_ir::text::load::load_source(path, source.clone()) {
        Ok(l) => (l.module, l.sources),
        Err(e) => {
            return emit(Row {
                label: label.clone(),
                outcome: Outcome::Fail(format!("does not parse:\n{}", indent(e.render(false).trim_end()))),
                note: None,
            })
        }
    };
    let directives = match parse_directives(&source) {
        Ok(d) => d,
        Err(errs) => {
            let msg: Vec<String> = errs.iter().map(|e| format!("    {label}:{}: {}", e.line, e.message)).collect();
            return emit(Row {
                label: label.clone(),
                outcome: Outcome::Fail(format!("bad directives:\n{}", msg.join("\n"))),
                note: None,
            });
        }
    };
    let verified = match kir_ir::verify::check(module) {
        Ok(c) => c,
        Err(d) => {
            let diags = d.into_vec();
            return emit(Row {
                label: label.clone(),
                outcome: Outcome::Fail(format!(
                    "does not check:\n{}",
                    indent(diag::render_map(&diags, &sources, false).trim_end())
                )),
                note: None,
            });
        }
    };
    let pipeline = match kir_passes::parse_pipeline(&ctx.pipeline) {
        Ok(p) => p,
        Err(e) => {
            return emit(Row {
                label: label.clone(),
                outcome: Outcome::Fail(format!("pass pipeline `{}`: {e}", ctx.pipeline)),
                note: None,
            })
        }
    };
    let run_cfg = kir_passes::RunConfig { verify_each: true, ..Default::default() };
    // The module as written, for the interpreter's first column; the pipeline takes the other.
    let written = verified.clone();
    let optimized = match kir_passes::run_pipeline(verified, &pipeline, &run_cfg, &mut std::io::sink()) {
        Ok((optimized, _)) => optimized,
        Err(e) => {
            let detail = rendered(e.diagnostics(), &sources);
            return emit(Row {
                label: label.clone(),
                outcome: Outcome::Fail(format!("pass pipeline `{}` failed: {e}\n{detail}", ctx.pipeline)),
                note: None,
            });
        }
    };
    // PTX of the optimized module, assembled for the oldest and newest supported targets.
    let mut notes = vec![format!("passes: {}", ctx.pipeline)];
    let ptx = if optimized.kernels.is_empty() {
        None
    } else {
        match kir_backend_ptx::emit_module(&optimized, &PtxOptions::new(SmVersion::Sm80)) {
            Ok(p) => Some(p),
            Err(d) => {
                return emit(Row {
                    label: label.clone(),
                    outcome: Outcome::Fail(format!("PTX emission failed:\n{}", rendered(&d, &sources))),
                    note: None,
                })
            }
        }
    };
    if let Some(ptx) = &ptx {
        if ctx.ptxas.is_some() {
            for sm in [SmVersion::Sm80, SmVersion::Sm90] {
                let text = if sm == SmVersion::Sm80 {
                    ptx.clone()
                } else {
                    match kir_backend_ptx::emit_module(&optimized, &PtxOptions::new(sm)) {
                        Ok(p) => p,
                        Err(d) => {
                            return emit(Row {
                                label: label.clone(),
                                outcome: Outcome::Fail(format!(
                                    "PTX emission for {} failed:\n{}",
                                    sm.name(),
                                    rendered(&d, &sources)
                                )),
                                note: None,
                            })
                        }
                    }
                };
                if let Err(e) = tools::run_ptxas_checked(&text, sm) {
                    // A crash of ptxas is NVIDIA's bug, not a verdict on the PTX: said as such.
                    let what = if e.is_crash() { "ptxas crashed on" } else { "ptxas rejected" };
                    return emit(Row {
                        label: label.clone(),
                        outcome: Outcome::Fail(format!(
                            "{what} the PTX for {}:\n{}",
                            sm.name(),
                            indent(&e.to_string())
                        )),
                        note: None,
                    });
                }
            }
            notes.push("ptxas sm_80, sm_90".into());
        } else {
            notes.push("ptxas not found: PTX not assembled".into());
        }
        // check-ptx lines must match in order.
        let mut from = 0;
        for (line, pat) in &directives.ptx_checks {
            match ptx[from..].find(pat.as_str()) {
                Some(p) => from += p + pat.len(),
                None => {
                    return emit(Row {
                        label: label.clone(),
                        outcome: Outcome::Fail(format!(
                            "{label}:{line}: check-ptx `{pat}` not found in the PTX (after the previous match)"
                        )),
                        note: None,
                    })
                }
            }
        }
    } else if let Some((line, _)) = directives.ptx_checks.first() {
        return emit(Row {
            label: label.clone(),
            outcome: Outcome::Fail(format!("{label}:{line}: check-ptx given but the file has no kernel")),
            note: None,
        });
    }
    emit(Row { label: label.clone(), outcome: Outcome::Ok, note: Some(notes.join("; ")) });

    let base_dir = path.parent().map(Path::to_path_buf);
    if directives.runs.is_empty() {
        return;
    }
    let emu_ptx = EmuProgram::new(&optimized, Some(&source), ctx.emu_ptx_hook.as_deref());
    for d in &directives.runs {
        let file = FileEnv { label: &label, sources: &sources, hardware: directives.hardware.as_ref() };
        run_directive(d, &file, &written, &optimized, &emu_ptx, base_dir.as_deref(), ctx, emit);
    }
}

/// The directive's arguments, parsed (`NAME=SPEC`).
pub(crate) fn named_specs(d: &RunDirective) -> Result<Vec<(String, ArgSpec)>, String> {
    d.args
        .iter()
        .map(|(k, v)| parse_arg_spec(v).map(|s| (k.clone(), s)).map_err(|e| format!("argument `{k}`: {e}")))
        .collect()
}

/// What the rows of one file's directives share: its label, its sources and whether its
/// expectations were recorded on hardware.
struct FileEnv<'a> {
    label: &'a str,
    sources: &'a diag::SourceMap,
    hardware: Option<&'a crate::directives::Source>,
}

/// Which engine's outputs an expectation is checked against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EngineKind {
    Interp,
    Emu,
    /// `emulated`: the CUDA driver is kir's emulated one (`KIR_CUDA_DRIVER=emu`).
    Gpu {
        emulated: bool,
    },
}

/// Runs one directive in the interpreter (as written, and after passes) and on the GPU.
#[allow(clippy::too_many_arguments)]
fn run_directive(
    d: &RunDirective,
    fenv: &FileEnv,
    module: &Verified,
    optimized: &Checked,
    emu_ptx: &EmuPtx,
    base_dir: Option<&Path>,
    ctx: &mut Context,
    emit: &mut dyn FnMut(Row),
) {
    let shape = match (d.grid, d.block) {
        (Some(g), Some(b)) => format!(" grid({}) block({})", dims(g), dims(b)),
        _ => String::new(),
    };
    let (file, sources) = (fenv.label, fenv.sources);
    let label = format!("{file}:{} @{}{shape}", d.line, d.target);
    let fail = |msg: String| Row { label: format!("{label} interp"), outcome: Outcome::Fail(msg), note: None };
    let specs = match named_specs(d) {
        Ok(s) => s,
        Err(e) => return emit(fail(e)),
    };
    let opts = directive_options(d, &ctx.interp, ctx.checks);
    if let Some(want) = &d.fault {
        return emit(expected_fault_row(d, want, file, &label, sources, module, &specs, base_dir, opts));
    }
    // The whole-warps precondition of full-mask collectives: refused before any engine runs, so
    // the PTX emulator and the GPU never see the launch either.
    if let (Some(k), Some(block)) = (module.kernel(&d.target), d.block) {
        let cfg = LaunchConfig { grid: d.grid.unwrap_or([1; 3]), block, dynamic_shared_bytes: d.shared_bytes };
        if let Err(e) = kir_interp::check_whole_warps(&module.funcs, k, &cfg) {
            return emit(fail(render_run_error(RunError::Interp(Box::new(e)), sources)));
        }
    }
    let emu_opts = match d.fuel {
        Some(n) => ctx.emu.clone().with_fuel(n),
        None => ctx.emu.clone(),
    };
    // The emulator computes `mma` with the interpreter's tensor-core rule, whatever the PTX target.
    let emu_opts =
        kir_ptx_emu::Options { tensor_cores: Some(crate::tensor_cores::emulator_rule(opts.tensor_cores)), ..emu_opts };
    let (before, after) =
        match (interpret(module, d, &specs, base_dir, &opts), interpret(optimized, d, &specs, base_dir, &opts)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) => return emit(fail(render_run_error(e, sources))),
            (_, Err(e)) => return emit(fail(format!("after passes: {}", render_run_error(e, sources)))),
        };
    for (i, (a, b)) in before.buffers.iter().zip(&after.buffers).enumerate() {
        let c = compare_buffers(a, b, Strictness::Bitwise, 5);
        if !c.is_match() {
            return emit(fail(format!(
                "outputs differ after passes `{}` in buffer `{}`: {c}",
                ctx.pipeline, before.names[i]
            )));
        }
    }
    let env = ExpectEnv { file, module, run: d, specs: &specs, base_dir, opts: &opts, hardware: fenv.hardware };
    // Judged by the recorded hardware bits: the other engines are checked against the
    // expectations themselves, so they need not wait for the interpreter to agree.
    let judged_by_hardware = fenv.hardware.is_some() && !d.expects.is_empty();
    match check_expectations(&before, EngineKind::Interp, &env, ctx) {
        Ok(checked) => {
            let mut note = format!("bit-identical after passes; {}", d.checks.describe());
            if !ctx.checks {
                note = "bit-identical after passes; checks off (--no-checks)".into();
            }
            if checked.is_empty() {
                note.push_str("; no `; expect:` line, so the outputs themselves were not checked");
            } else {
                note.push_str(&format!("; expected: {}", checked.join(", ")));
            }
            emit(Row {
                label: format!("{label} interp"),
                outcome: if checked.is_empty() { Outcome::Unverified } else { Outcome::Ok },
                note: Some(note),
            });
        }
        Err(msg) if judged_by_hardware => emit(fail(msg)),
        Err(msg) => return emit(fail(msg)),
    }

    // The directive's tolerance, else one derived from the approximate ops the code uses.
    let (cmp_tol, tol_source) = match d.tol {
        Some(t) => (t, "given"),
        None => match optimized.graph(&d.target) {
            Some(g) => (crate::tolerance::derived_tolerance_graph(optimized, g).0, "derived"),
            None => match optimized.kernel(&d.target) {
                Some(k) => (crate::tolerance::derived_tolerance(&optimized.funcs, k), "derived"),
                None => (Tolerance::Exact, "derived"),
            },
        },
    };

    // No `tol=` and approximate ops in a kernel: the interpreter's per-element error enclosures
    // judge the other engines (`crate::enclosure`); a graph keeps the derived tolerance.
    let enclosures = match (d.tol, cmp_tol, launch_of(optimized, d)) {
        // A recording judges the engines itself.
        _ if judged_by_hardware => None,
        (None, t, Launch::Kernel { name, cfg }) if t != Tolerance::Exact => {
            match crate::enclosure::run_enclosed(module, name, &cfg, &before.inputs(), &opts) {
                Ok((_, enc)) => Some(enc),
                Err(e) => return emit(fail(format!("the run with error enclosures failed: {e}"))),
            }
        }
        _ => None,
    };
    let judge = |other: &[Buffer], compared: &[bool]| -> Result<String, String> {
        match &enclosures {
            Some(enc) => crate::enclosure::judge(&before.names, &before.buffers, other, enc, compared, sources)
                .map(|note| format!("matches the interpreter {note}")),
            None => match first_difference_in(&before, other, cmp_tol, tol_source, compared) {
                Some(msg) => Err(msg),
                None => Ok(format!("matches the interpreter (tol {cmp_tol}, {tol_source})")),
            },
        }
    };

    // The PTX emulator (never skipped) and the GPU run the optimized module on the inputs the
    // interpreter started from.
    let (launch, inputs) = (launch_of(optimized, d), before.inputs());
    let mut emu = PtxEmulator::new(emu_ptx, optimized, emu_opts);
    let emu_label = format!("{label} {}", emu.name());
    let (outcome, note) = match emu.run(&launch, &inputs) {
        Err(e) => (Outcome::Fail(e.to_string()), None),
        Ok(emu_buffers) if judged_by_hardware => {
            match check_expectations(&before.with_buffers(emu_buffers), EngineKind::Emu, &env, ctx) {
                Ok(checked) => (Outcome::Ok, Some(format!("matches the hardware: {}", checked.join(", ")))),
                Err(msg) => (Outcome::Fail(format!("the PTX emulator does not reproduce the hardware: {msg}")), None),
            }
        }
        Ok(emu_buffers) => match judge(&emu_buffers, &vec![true; emu_buffers.len()]) {
            Err(msg) => (Outcome::Fail(msg), None),
            Ok(note) => (Outcome::Ok, Some(note)),
        },
    };
    emit(Row { label: emu_label, outcome, note });

    // The GPU side.
    let gpu_label = format!("{label} gpu");
    let runner = match &mut ctx.gpu {
        GpuState::Available(r) => r,
        GpuState::Unavailable(why) => {
            let outcome = if ctx.require_gpu {
                Outcome::Fail(format!("{why}; --require-gpu was given"))
            } else {
                Outcome::Skip("no GPU".into())
            };
            return emit(Row { label: gpu_label, outcome, note: None });
        }
        GpuState::Misconfigured(why) => {
            return emit(Row { label: gpu_label, outcome: Outcome::Fail(why.clone()), note: None });
        }
    };
    let mut gpu = crate::engine::Gpu::new(runner.as_mut(), optimized);
    let gpu_buffers = match gpu.run(&launch, &inputs) {
        Ok(b) => b,
        Err(e) => return emit(Row { label: gpu_label, outcome: Outcome::Fail(e.to_string()), note: None }),
    };
    // The device's target, which the run asked of it once: its tensor-core rule, below.
    let device_sm = gpu.sm();
    if judged_by_hardware {
        let device = runner.device_name().unwrap_or_else(|_| "this GPU".into());
        let emulated = runner.is_emulated();
        let gpu_outputs = before.with_buffers(gpu_buffers);
        let row = match check_expectations(&gpu_outputs, EngineKind::Gpu { emulated }, &env, ctx) {
            Ok(checked) => Row {
                label: gpu_label,
                outcome: Outcome::Ok,
                note: Some(format!("{device} reproduces the recording: {}", checked.join(", "))),
            },
            Err(msg) => {
                let recorded = fenv.hardware.map(|h| h.description.as_str()).filter(|s| !s.is_empty());
                Row {
                    label: gpu_label,
                    outcome: Outcome::Fail(format!(
                        "drift: {device} computes other bits than {}: {msg}",
                        recorded.map_or("were recorded".to_string(), |r| format!("were recorded on {r}"))
                    )),
                    note: None,
                }
            }
        };
        return emit(row);
    }
    // Buffers the hardware's scheduling orders (`; order-dependent:`) are not compared.
    let unordered = |name: &str| d.order_dependent.iter().any(|o| o == name);
    if let Some(unknown) = d.order_dependent.iter().find(|o| !before.names.contains(o)) {
        let msg = format!(
            "`; order-dependent:` names `{unknown}`, which is not a buffer of @{} (its buffers: {})",
            d.target,
            before.names.join(", ")
        );
        return emit(Row { label: gpu_label, outcome: Outcome::Fail(msg), note: None });
    }
    let compared: Vec<bool> = before.names.iter().map(|n| !unordered(n)).collect();
    // Tensor cores compute differently per device generation: a GPU whose rule is not the run's
    // is compared with the interpreter computing its rule.
    let device_rule = if crate::tensor_cores::uses_tensor_cores(optimized) {
        match device_sm {
            Ok(sm) => Some(crate::tensor_cores::rule_of_device(sm)).filter(|r| *r != opts.tensor_cores),
            Err(e) => return emit(Row { label: gpu_label, outcome: Outcome::Fail(e.to_string()), note: None }),
        }
    } else {
        None
    };
    if let Some(rule) = device_rule {
        let theirs = Options { tensor_cores: rule, ..opts.clone() };
        let reference = match interpret(module, d, &specs, base_dir, &theirs) {
            Ok(r) => r,
            Err(e) => {
                return emit(fail(format!(
                    "the run with this GPU's tensor-core rule: {}",
                    render_run_error(e, sources)
                )))
            }
        };
        let rule = crate::tensor_cores::rule_name(rule);
        let row = match first_difference_in(&reference, &gpu_buffers, cmp_tol, tol_source, &compared) {
            Some(msg) => {
                Row { label: gpu_label, outcome: Outcome::Fail(format!("{msg} (tensor cores: {rule})")), note: None }
            }
            None => Row {
                label: gpu_label,
                outcome: Outcome::Ok,
                note: Some(format!(
                    "matches the interpreter computing this GPU's tensor cores ({rule}; tol {cmp_tol}, {tol_source})"
                )),
            },
        };
        return emit(row);
    }
    let matched = match judge(&gpu_buffers, &compared) {
        Err(msg) => return emit(Row { label: gpu_label, outcome: Outcome::Fail(msg), note: None }),
        Ok(note) => note,
    };
    if d.order_dependent.is_empty() {
        return emit(Row { label: gpu_label, outcome: Outcome::Ok, note: Some(matched) });
    }
    // Unverified when every buffer the kernel may write is order-dependent: nothing it computed
    // was compared.
    let written: Vec<String> = match optimized.kernel(&d.target) {
        Some(k) => {
            let access = kir_ir::analysis::effects::param_access(k);
            let writes = |n: &&String| k.param_by_name(n).is_some_and(|(i, _)| access[i].write || access[i].atomic);
            before.names.iter().filter(writes).cloned().collect()
        }
        None => Vec::new(),
    };
    let skipped = d.order_dependent.join(", ");
    let row = if !written.is_empty() && written.iter().all(|w| unordered(w)) {
        Row {
            label: gpu_label,
            outcome: Outcome::Unverified,
            note: Some(format!("ran; every buffer it writes is order-dependent ({skipped}), so none was compared")),
        }
    } else {
        Row {
            label: gpu_label,
            outcome: Outcome::Ok,
            note: Some(format!("{matched}; order-dependent, not compared: {skipped}")),
        }
    };
    emit(row);
}

/// What an expectation is checked in: the file, its module as written, the run and its inputs.
struct ExpectEnv<'a> {
    file: &'a str,
    module: &'a Verified,
    run: &'a RunDirective,
    specs: &'a [(String, ArgSpec)],
    base_dir: Option<&'a Path>,
    opts: &'a Options,
    /// `; source: hardware`: the expectations were recorded on a GPU.
    hardware: Option<&'a crate::directives::Source>,
}

/// Checks every `; expect:` line of the run against `outputs` (of `engine`); the descriptions
/// of those checked, or the first failure.
fn check_expectations(
    outputs: &Outputs,
    engine: EngineKind,
    env: &ExpectEnv,
    ctx: &mut Context,
) -> Result<Vec<String>, String> {
    let mut checked = Vec::with_capacity(env.run.expects.len());
    for e in &env.run.expects {
        check_expectation(e, outputs, engine, env, ctx)?;
        checked.push(e.describe());
    }
    Ok(checked)
}

/// Checks one `; expect:` line against the outputs of the run as written; `Err` is the row's
/// failure message (located at the expectation's line).
fn check_expectation(
    e: &Expect,
    outputs: &Outputs,
    engine: EngineKind,
    env: &ExpectEnv,
    ctx: &mut Context,
) -> Result<(), String> {
    let (file, line) = (env.file, e.line);
    let tol = e.tol.unwrap_or(Tolerance::Exact);
    let Some(bi) = outputs.names.iter().position(|n| *n == e.buffer) else {
        return Err(format!("{file}:{line}: expect names `{}`, which is not a buffer argument of this run", e.buffer));
    };
    let joined;
    let buf = if e.joined.is_empty() {
        &outputs.buffers[bi]
    } else {
        joined = join_buffers(e, outputs, bi, file)?;
        &joined
    };
    match &e.expected {
        Expected::Values { start, end, values } if e.sorted => {
            if *end > buf.len() {
                return Err(format!(
                    "{file}:{line}: expect range {start}..{end} is past the end of `{}` ({} elements)",
                    e.buffer,
                    buf.len()
                ));
            }
            let want = values
                .iter()
                .map(|text| {
                    kir_interp::args::number_constant(text, buf.elem)
                        .map(|c| c.bits)
                        .map_err(|err| format!("{file}:{line}: expected value `{text}`: {err}"))
                })
                .collect::<Result<Vec<u64>, String>>()?;
            let got = Buffer::from_bits(buf.elem, (*start..*end).map(|i| buf.get_bits(i)));
            let c = compare_expected(&Buffer::from_bits(buf.elem, want), &got, true, tol);
            if c.is_match() {
                Ok(())
            } else {
                Err(format!(
                    "{file}:{line}: {}[{start}..{end}] sorted differs from the values sorted (tol {tol}): {c}{}",
                    e.buffer,
                    tolerance_hint(buf.elem, &c)
                ))
            }
        }
        Expected::Values { start, end, values } => {
            if *end > buf.len() {
                return Err(format!(
                    "{file}:{line}: expect range {start}..{end} is past the end of `{}` ({} elements)",
                    e.buffer,
                    buf.len()
                ));
            }
            // The first mismatch; for floats also the distance in ulps of each of the first few,
            // the largest, and the `tol=` that would accept them.
            let mut lines: Vec<String> = Vec::new();
            let (mut count, mut max_ulps, mut all_ulps) = (0usize, 0u64, true);
            for (j, text) in values.iter().enumerate() {
                let idx = start + j;
                let want = kir_interp::args::number_constant(text, buf.elem)
                    .map_err(|err| format!("{file}:{line}: expected value `{text}`: {err}"))?;
                let got = buf.get_bits(idx);
                if !elements_match(buf.elem, want.bits, got, Strictness::Within(tol)) {
                    let shown = crate::compare::render_element(buf.elem, got);
                    if !buf.elem.is_float() {
                        return Err(format!(
                            "{file}:{line}: {}[{idx}] is {shown}, expected {text} (tol {tol})",
                            e.buffer
                        ));
                    }
                    let nan = |b: u64| crate::compare::render_element(buf.elem, b).starts_with("NaN");
                    let ulps =
                        (!nan(want.bits) && !nan(got)).then(|| crate::compare::ulp_distance(buf.elem, want.bits, got));
                    count += 1;
                    match ulps {
                        Some(u) => max_ulps = max_ulps.max(u),
                        None => all_ulps = false,
                    }
                    let apart = ulps.map(|u| format!(", {u} ulp apart")).unwrap_or_default();
                    if lines.is_empty() {
                        lines.push(format!(
                            "{file}:{line}: {}[{idx}] is {shown}, expected {text} (tol {tol}{apart})",
                            e.buffer
                        ));
                    } else if lines.len() < 5 {
                        let paren = ulps.map(|u| format!(" ({u} ulp)")).unwrap_or_default();
                        lines.push(format!("    {}[{idx}] is {shown}, expected {text}{paren}", e.buffer));
                    }
                }
            }
            if count == 0 {
                return Ok(());
            }
            if count > lines.len() {
                lines.push(format!("    ... and {} more", count - lines.len()));
            }
            if all_ulps && max_ulps > 0 {
                lines.push(format!("    {}", crate::compare::tolerance_hint_line(count, max_ulps)));
            }
            Err(lines.join("\n"))
        }
        Expected::Npy { path } => check_npy(e, path, buf, tol, engine, env, ctx),
        Expected::Reference { target, grid, block, shared_bytes } => {
            let m = env.module;
            let ran = if m.graph(target).is_some() {
                let specs = specs_for_graph(m, target, env.specs);
                run_graph(m, target, &specs, env.base_dir, env.opts)
            } else if let Some(k) = m.verified_kernel(target) {
                let (Some(grid), Some(block)) = (grid.or(env.run.grid), block.or(env.run.block)) else {
                    return Err(format!(
                        "{file}:{line}: reference @{target} is a kernel and the run is a graph: give its launch shape (`@{target} grid(..) block(..)`)"
                    ));
                };
                let cfg =
                    LaunchConfig { grid, block, dynamic_shared_bytes: shared_bytes.unwrap_or(env.run.shared_bytes) };
                let names: Vec<&str> = k.params.iter().map(|p| k.value(*p).name.as_str()).collect();
                let specs: Vec<(String, ArgSpec)> =
                    env.specs.iter().filter(|(n, _)| names.contains(&n.as_str())).cloned().collect();
                run_kernel(k, &cfg, &specs, env.base_dir, env.opts)
            } else {
                return Err(format!("{file}:{line}: no kernel or graph `@{target}` in this file to compare with"));
            };
            let reference = ran.map_err(|err| {
                format!(
                    "{file}:{line}: reference @{target}: {}",
                    render_run_error(err, &diag::SourceMap::single(file, "")).trim_end()
                )
            })?;
            let Some(ri) = reference.names.iter().position(|n| *n == e.buffer) else {
                return Err(format!("{file}:{line}: reference @{target} has no buffer parameter `{}`", e.buffer));
            };
            let c = compare_expected(&reference.buffers[ri], buf, e.sorted, tol);
            if c.is_match() {
                Ok(())
            } else {
                Err(format!(
                    "{file}:{line}: `{}` differs from reference @{target}'s (tol {tol}): {c}{}",
                    e.buffer,
                    tolerance_hint(buf.elem, &c)
                ))
            }
        }
    }
}

/// `want` against `got` as an `expect:` line asks: element by element, or as multisets (`sorted`),
/// within `tol`; at most 5 differences are kept for the message.
fn compare_expected(want: &Buffer, got: &Buffer, sorted: bool, tol: Tolerance) -> crate::compare::Comparison {
    if sorted {
        crate::compare::compare_sorted(want, got, Strictness::Within(tol), 5)
    } else {
        compare_buffers(want, got, Strictness::Within(tol), 5)
    }
}

/// The line after a failed float expectation saying which `tol=` would accept it, or nothing.
fn tolerance_hint(elem: kir_ir::ScalarType, c: &crate::compare::Comparison) -> String {
    crate::compare::expect_tolerance_hint(elem, c).map(|h| format!("\n    {h}")).unwrap_or_default()
}

/// The run's arguments that graph `name` of `m` takes (by parameter name).
fn specs_for_graph(m: &Module, name: &str, specs: &[(String, ArgSpec)]) -> Vec<(String, ArgSpec)> {
    let Some(g) = m.graph(name) else { return specs.to_vec() };
    specs.iter().filter(|(n, _)| g.params.iter().any(|p| p.name == *n)).cloned().collect()
}

/// The buffers of a joined expectation (`A+B == @a.npy+@b.npy sorted`), end to end.
fn join_buffers(e: &Expect, outputs: &Outputs, first: usize, file: &str) -> Result<Buffer, String> {
    let mut all = outputs.buffers[first].clone();
    for (name, _) in &e.joined {
        let Some(i) = outputs.names.iter().position(|n| n == name) else {
            return Err(format!(
                "{file}:{}: expect names `{name}`, which is not a buffer argument of this run",
                e.line
            ));
        };
        let b = &outputs.buffers[i];
        if b.elem != all.elem {
            return Err(format!(
                "{file}:{}: `{}` ({}) and `{name}` ({}) cannot be joined: different element types",
                e.line, e.buffer, all.elem, b.elem
            ));
        }
        all.bytes.extend_from_slice(&b.bytes);
    }
    Ok(all)
}

/// The files of a joined expectation, read and put end to end like [`join_buffers`].
fn read_joined(first: &Path, e: &Expect, base_dir: Option<&Path>) -> Result<Buffer, String> {
    let mut all = kir_interp::npy::read(first)?;
    for (_, path) in &e.joined {
        let full = base_dir.map_or_else(|| PathBuf::from(path), |d| d.join(path));
        let b = kir_interp::npy::read(&full)?;
        if b.elem != all.elem {
            return Err(format!(
                "{}: element type {} differs from the first file's {}",
                full.display(),
                b.elem,
                all.elem
            ));
        }
        all.bytes.extend_from_slice(&b.bytes);
    }
    Ok(all)
}

/// A `.npy` expectation: compared with the buffer (as multisets when `sorted`); with `--bless`,
/// written from the interpreter's output when missing or different (never over a file that is not
/// `.npy`, nor over one of the run's inputs, nor in a `; source: hardware` file); with
/// `--record-gpu`, a hardware file's missing expectation is written from a real GPU's output.
#[allow(clippy::too_many_arguments)]
fn check_npy(
    e: &Expect,
    path: &str,
    buf: &Buffer,
    tol: Tolerance,
    engine: EngineKind,
    env: &ExpectEnv,
    ctx: &mut Context,
) -> Result<(), String> {
    let (file, line) = (env.file, e.line);
    let full = env.base_dir.map_or_else(|| PathBuf::from(path), |d| d.join(path));
    let shown = full.display().to_string();
    let is_input = env.specs.iter().any(|(_, s)| match s {
        ArgSpec::Npy(p) => crate::files::same_file(&env.base_dir.map_or_else(|| p.clone(), |d| d.join(p)), &full),
        _ => false,
    });
    if is_input {
        return Err(format!("{file}:{line}: {shown} is also an input of this run: an expectation needs its own file"));
    }
    let mut hint = String::new();
    let why_differs = match std::fs::metadata(&full) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(format!("{file}:{line}: cannot read {shown}: {err}")),
        Ok(_) => {
            let mut want = read_joined(&full, e, env.base_dir).map_err(|err| {
                format!("{file}:{line}: {err} (not overwritten, even with --bless: it is not a .npy file kir can read)")
            })?;
            // NumPy has no bfloat16: a bf16 buffer's file holds its bit patterns as `<u2`, which
            // is how `--bless` writes it too (docs/testing.md).
            if want.elem == kir_ir::types::ScalarType::U16 && buf.elem == kir_ir::types::ScalarType::BF16 {
                want.elem = kir_ir::types::ScalarType::BF16;
            }
            let c = compare_expected(&want, buf, e.sorted, tol);
            if c.is_match() {
                return Ok(());
            }
            let how = if e.sorted { ", compared sorted" } else { "" };
            hint = tolerance_hint(buf.elem, &c);
            Some(format!("{c}{how}"))
        }
    };
    if !e.joined.is_empty() {
        // Joined files are written by no one (which bytes would go to which file?).
        return Err(match why_differs {
            Some(c) => format!("{file}:{line}: `{}` differs from {} (tol {tol}): {c}{hint}", e.describe(), shown),
            None => format!(
                "{file}:{line}: expected output {shown} does not exist (joined expectations are never written by kir)"
            ),
        });
    }
    if let Some(hw) = env.hardware {
        return hardware_expectation(e, &full, buf, why_differs.map(|c| c + &hint), hw, engine, env, ctx);
    }
    if !ctx.bless || engine != EngineKind::Interp {
        return Err(match why_differs {
            None => format!(
                "{file}:{line}: expected output {shown} does not exist; `kir test --bless` writes it from the interpreter's output"
            ),
            Some(c) => format!(
                "{file}:{line}: `{}` differs from {shown} (tol {tol}): {c}{hint}\n    (if the new output is right, `kir test --bless` rewrites the file)",
                e.buffer
            ),
        });
    }
    if let Some(parent) = full.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|err| format!("{file}:{line}: --bless: cannot create {}: {err}", parent.display()))?;
    }
    crate::files::write_atomically(&full, &kir_interp::npy::encode(buf))
        .map_err(|err| format!("{file}:{line}: --bless: {err}"))?;
    let what = match why_differs {
        None => format!("new, {}[{}]", buf.elem, buf.len()),
        Some(c) => format!("changed: {c}"),
    };
    ctx.blessed.push(format!("{shown} ({what}; {file}:{line})"));
    Ok(())
}

/// A missing or differing expectation of a `; source: hardware` file: never rewritten from kir's
/// output; a missing one is written from a real GPU's output with `--record-gpu`.
#[allow(clippy::too_many_arguments)]
fn hardware_expectation(
    e: &Expect,
    full: &Path,
    buf: &Buffer,
    why_differs: Option<String>,
    hw: &crate::directives::Source,
    engine: EngineKind,
    env: &ExpectEnv,
    ctx: &mut Context,
) -> Result<(), String> {
    let (file, line) = (env.file, e.line);
    let shown = full.display();
    let refuse_bless = if ctx.bless {
        format!(
            "\n    (not rewritten by --bless: {file}:{} says the expectations were recorded on hardware; if kir disagrees, kir is wrong until the data says otherwise)",
            hw.line
        )
    } else {
        String::new()
    };
    match why_differs {
        Some(c) => Err(format!("{file}:{line}: `{}` differs from the recorded {shown} (tol {tol}): {c}{refuse_bless}", e.buffer, tol = e.tol.unwrap_or(Tolerance::Exact))),
        None => match engine {
            EngineKind::Gpu { emulated: false } if ctx.record_gpu => {
                if kir_interp::npy::is_compressed(full) {
                    return Err(format!("{file}:{line}: --record-gpu writes plain .npy files: name the expectation `.npy` (compress it with xz afterwards)"));
                }
                if let Some(parent) = full.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .map_err(|err| format!("{file}:{line}: --record-gpu: cannot create {}: {err}", parent.display()))?;
                }
                crate::files::write_atomically(full, &kir_interp::npy::encode(buf))
                    .map_err(|err| format!("{file}:{line}: --record-gpu: {err}"))?;
                ctx.blessed.push(format!("{shown} (recorded from the GPU, {}[{}]; {file}:{line})", buf.elem, buf.len()));
                Ok(())
            }
            EngineKind::Gpu { emulated: true } if ctx.record_gpu => Err(format!(
                "{file}:{line}: {shown} does not exist, and --record-gpu refuses to record it from kir's emulated CUDA driver (KIR_CUDA_DRIVER=emu): hardware truth comes from a GPU"
            )),
            _ => Err(format!(
                "{file}:{line}: the hardware recording {shown} does not exist (kir never writes it from its own output; on a machine with a GPU, `kir test --record-gpu` records it){refuse_bless}"
            )),
        },
    }
}

/// The first buffer among those `compared` marks that differs from the interpreter's beyond `tol`.
fn first_difference_in(
    reference: &Outputs,
    other: &[Buffer],
    tol: Tolerance,
    tol_source: &str,
    compared: &[bool],
) -> Option<String> {
    if other.len() != reference.buffers.len() {
        return Some(format!("{} buffers came back, expected {}", other.len(), reference.buffers.len()));
    }
    reference.buffers.iter().zip(other).enumerate().filter(|(i, _)| compared[*i]).find_map(|(i, (a, b))| {
        let c = compare_buffers(a, b, Strictness::Within(tol), 5);
        (!c.is_match()).then(|| {
            format!("buffer `{}` differs from the interpreter (tol {tol}, {tol_source}): {c}", reference.names[i])
        })
    })
}

/// What the emulator and the GPU run for directive `d` in `m`: its graph, or its kernel with the
/// directive's launch shape (1 where it gives none).
fn launch_of<'a>(m: &Module, d: &'a RunDirective) -> Launch<'a> {
    if m.graph(&d.target).is_some() {
        return Launch::Graph { name: &d.target };
    }
    let cfg = LaunchConfig {
        grid: d.grid.unwrap_or([1; 3]),
        block: d.block.unwrap_or([1; 3]),
        dynamic_shared_bytes: d.shared_bytes,
    };
    Launch::Kernel { name: &d.target, cfg }
}

fn dims(d: [u32; 3]) -> String {
    match d {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("{x},{y}"),
        [x, y, z] => format!("{x},{y},{z}"),
    }
}

/// A failure of a launch: a bad argument or an interpreter error.
/// The row of a run that must fault (`; fault:`): the interpreter, on the file as written and on
/// one host thread (so that even a cross-block race names the same threads every time), must stop
/// with that fault. A faulting run has no outputs to compare, so it gets no other row; an
/// `; expect:` beside a `; fault:` is a failure.
#[allow(clippy::too_many_arguments)]
fn expected_fault_row(
    d: &RunDirective,
    want: &crate::directives::ExpectedFault,
    file: &str,
    label: &str,
    sources: &diag::SourceMap,
    module: &Verified,
    specs: &[(String, ArgSpec)],
    base_dir: Option<&Path>,
    opts: Options,
) -> Row {
    let row = |outcome: Outcome, note: Option<String>| Row { label: format!("{label} interp"), outcome, note };
    if let Some(e) = d.expects.first() {
        return row(
            Outcome::Fail(format!("{file}:{}: a run that must fault (`; fault:`) has no outputs to expect", e.line)),
            None,
        );
    }
    match interpret_fault_run(module, d, specs, base_dir, opts) {
        Ok(_) => {
            row(Outcome::Fail(format!("{file}:{}: expected {}, the run passed", want.line, want.describe())), None)
        }
        Err(RunError::Args(msg)) => row(Outcome::Fail(msg), None),
        Err(RunError::Interp(e)) => match want.check(&e) {
            Ok(()) => row(Outcome::Ok, Some(format!("faulted as expected: {}", want.describe()))),
            Err(msg) => row(
                Outcome::Fail(format!(
                    "{file}:{}: {msg}\n    {}",
                    want.line,
                    render_run_error(RunError::Interp(e), sources)
                )),
                None,
            ),
        },
    }
}

/// The interpreter options of directive `d`'s runs: `base` with the directive's runtime checks
/// (`checks=`; none when `checks_on` is false, as with `kir test --no-checks`) and its `fuel=`.
pub(crate) fn directive_options(d: &RunDirective, base: &Options, checks_on: bool) -> Options {
    let opts = Options {
        races: checks_on && d.checks.races,
        uninit: checks_on && d.checks.uninit,
        tensor_cores: d.tensor_cores.unwrap_or(base.tensor_cores),
        ..base.clone()
    };
    match d.fuel {
        Some(n) => opts.with_fuel(n),
        None => opts,
    }
}

/// [`interpret`] for a run that must fault (`; fault:`), on one host thread: the fault reported is
/// then the same on every machine, even for a cross-block race, which the interpreter's
/// determinism contract leaves open (that other faults do not depend on the host threads is
/// checked by tests/interp_faults.rs).
pub(crate) fn interpret_fault_run(
    m: &Verified,
    d: &RunDirective,
    specs: &[(String, ArgSpec)],
    base_dir: Option<&Path>,
    opts: Options,
) -> Result<Outputs, RunError> {
    interpret(m, d, specs, base_dir, &Options { threads: Some(1), ..opts })
}

/// Why a directive's interpreter run gave no outputs.
pub(crate) enum RunError {
    /// The directive cannot run (its target, launch shape or arguments).
    Args(String),
    /// The interpreter stopped: a fault or an invalid launch.
    Interp(Box<kir_interp::InterpError>),
}

/// Runs directive `d`'s target (a kernel, with the directive's launch shape, or a graph) of `m`
/// in the interpreter with `specs` and `opts`: the one setup `kir test` rows and the `fault`
/// filetests share.
pub(crate) fn interpret(
    m: &Verified,
    d: &RunDirective,
    specs: &[(String, ArgSpec)],
    base_dir: Option<&Path>,
    opts: &Options,
) -> Result<Outputs, RunError> {
    if m.graph(&d.target).is_some() {
        return run_graph(m, &d.target, specs, base_dir, opts);
    }
    let Some(k) = m.verified_kernel(&d.target) else {
        return Err(RunError::Args(format!("no kernel or graph `@{}` in this file", d.target)));
    };
    let (Some(grid), Some(block)) = (d.grid, d.block) else {
        return Err(RunError::Args(format!("@{} is a kernel: the directive needs grid(..) and block(..)", d.target)));
    };
    let cfg = LaunchConfig { grid, block, dynamic_shared_bytes: d.shared_bytes };
    run_kernel(k, &cfg, specs, base_dir, opts)
}

impl From<EngineError> for RunError {
    fn from(e: EngineError) -> RunError {
        match e {
            EngineError::Interp(e) => RunError::Interp(e),
            other => RunError::Args(other.to_string()),
        }
    }
}

fn render_run_error(e: RunError, sources: &diag::SourceMap) -> String {
    match e {
        RunError::Args(msg) => msg,
        RunError::Interp(err) => format!("interpreter:\n{}", rendered(&[err.to_diagnostic()], sources)),
    }
}

fn run_kernel(
    k: VerifiedKernel<'_>,
    cfg: &LaunchConfig,
    specs: &[(String, ArgSpec)],
    base_dir: Option<&Path>,
    opts: &Options,
) -> Result<Outputs, RunError> {
    let bound = kir_interp::args::bind(&k, specs, base_dir).map_err(RunError::Args)?;
    let mut names = vec![String::new(); bound.buffers.len()];
    for (p, b) in bound.param_buffer.iter().enumerate() {
        if let Some(b) = b {
            names[*b] = k.value(k.params[p]).name.to_string();
        }
    }
    let launch = Launch::Kernel { name: &k.name, cfg: cfg.clone() };
    let inputs = Inputs { args: &bound.args, buffers: &bound.buffers, names: &names };
    let buffers = Interpreter::new(k.module(), opts.clone()).run(&launch, &inputs).map_err(RunError::from)?;
    Ok(Outputs { buffers, names, args: bound.args, initial: bound.buffers })
}

fn run_graph(
    m: &Verified,
    name: &str,
    specs: &[(String, ArgSpec)],
    base_dir: Option<&Path>,
    opts: &Options,
) -> Result<Outputs, RunError> {
    let g = m.graph(name).ok_or_else(|| RunError::Args(format!("no graph `@{name}`")))?;
    let bound = kir_interp::graph::bind_graph(g, specs, base_dir).map_err(RunError::Args)?;
    let mut names = vec![String::new(); bound.buffers.len()];
    for (p, a) in bound.args.iter().enumerate() {
        if let Arg::Buffer(b) = a {
            if let Some(n) = names.get_mut(*b) {
                *n = g.params[p].name.clone();
            }
        }
    }
    let inputs = Inputs { args: &bound.args, buffers: &bound.buffers, names: &names };
    let buffers = Interpreter::new(m, opts.clone()).run(&Launch::Graph { name }, &inputs).map_err(RunError::from)?;
    Ok(Outputs { buffers, names, args: bound.args, initial: bound.buffers })
}
