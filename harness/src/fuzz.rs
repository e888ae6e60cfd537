//! Random-kernel fuzzing: generated modules ([`kir_ir::generate`]: a kernel and the device
//! functions it calls) checked through every stage of kir, and a delta-debugging reducer for the
//! failures found.
//!
//! Guarantees:
//! - [`check_module`] runs, in order, and stops at the first failure: the verifier and the barrier
//!   verifier (across calls: [`kir_ir::verify::check`]) accept the module;
//!   the interpreter runs its kernel as written, calls executed with a call stack
//!   ([`kir_interp::launch_verified`] on the checked module; launched as the generator's [`LaunchContract`] says, with race
//!   and uninitialized-read detection on) without a fault; when the module has calls,
//!   [`kir_ir::inline::inline_module`] succeeds, its output verifies, and the inlined kernel's
//!   buffers equal the reference's bit for bit; the pass pipeline succeeds with the verifier
//!   after every pass (on the module as written when the pipeline has the `inline` pass, as the
//!   default one does, else on the inlined module), and the optimized kernel's buffers equal the
//!   reference's bit for bit; the PTX emitter accepts the call-free (inlined) kernel; `ptxas`
//!   accepts its PTX, and, for a module with calls, the PTX of the kernel with its functions as
//!   `.func`s (when a target is given); the PTX emulator ([`crate::engine::PtxEmulator`] on that
//!   PTX, when [`FuzzConfig::emu`] is on, as it is by default) runs the call-free kernel's PTX
//!   without a fault and its buffers equal the interpreter's bit for bit (integers, NaN payloads
//!   and the sign of zero included: [`engine_strictness`]); and, when a GPU runner is given, the
//!   GPU's buffers ([`crate::engine::Gpu`], whose errors keep the driver's [`GpuError`]; same PTX;
//!   on hardware, for a module with calls, also the PTX with `.func`s) equal the interpreter's
//!   the same way. [`check_kernel`] is the same for a module holding only that
//!   kernel.
//! - A crash of NVIDIA's tools is its own failure kind, never a kir failure and never "ptxas
//!   rejects the PTX": ptxas killed by a signal or failing without an error message is
//!   [`FailureKind::PtxasCrash`]; a driver that dies while loading or running the PTX (the GPU
//!   runner must then be isolated, [`crate::isolate::IsolatedGpu`], or it takes this process with
//!   it) is [`FailureKind::DriverCrash`]. Both carry the PTX the tool crashed on
//!   ([`Failure::ptx`]); [`FailureKind::is_tool_crash`] tells them apart from kir's failures.
//! - A [`Failure`] carries a [`FailureKind`]; two failures are "the same" when their kinds are
//!   equal (the detail text, e.g. a value, may change while reducing). So while a kir failure is
//!   reduced, a candidate on which a tool crashes is "not this failure" and is dropped; a crash
//!   is reduced as its own kind (the same tool, the same signal, the same stage).
//! - [`reduce_module`] only ever returns a module that verifies (verifier and barrier verifier;
//!   only the verifier when the failure is the barrier verifier's, neither when it is the
//!   verifier's) and on which the check reports a failure of the given kind: each candidate (every
//!   call inlined and the functions deleted, or the calls of one kernel inlined; a
//!   function nothing calls deleted, a parameter its function does not use deleted with its
//!   arguments; in each kernel and function: fewer instructions, calls
//!   included, a branch turned into a jump with the blocks it made unreachable deleted, fewer
//!   block parameters) is re-verified and re-checked and kept only then. It is a delta-debugging
//!   loop: chunks of instructions halving in size down to single instructions, body by body,
//!   repeated until a full round makes no progress or the check budget is spent. Blocks that only
//!   jump on are bypassed and deleted. [`reduce`] is the same on a single kernel.
//! - [`repro_file`] is a complete `.kir` file: comments stating the seed and failure, a `; run:`
//!   line with the launch and arguments the check used (accepted by `kir run` and `kir test`), and
//!   the module (its functions, then the kernel).
//! - Everything is deterministic for a given seed and configuration; nothing panics.

use crate::compare::{compare_buffers, Strictness};
use crate::engine::{EmuProgram, Engine as _, EngineError, Gpu, Inputs, Launch, PtxEmulator};
use crate::gpu_exec::GpuExec;
use kir_backend_ptx::gpu::{GpuError, Stage};
use kir_backend_ptx::tools::PtxasError;
use kir_backend_ptx::SmVersion;
use kir_interp::{args, Buffer, ErrorKind, LaunchConfig, Options};
use kir_ir::diag::has_errors;
use kir_ir::generate::{GenConfig, LaunchContract};
use kir_ir::verify::{Checked, Verified, VerifiedKernel};
use kir_ir::{BlockId, Constant, InstId, Kernel, Module, Op, Operand, Terminator, Type};
use kir_passes::{edit, Pipeline};
use std::fmt;

/// What went wrong, coarsely: the reducer keeps a candidate only if the kind stays the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The IR verifier rejected the kernel.
    Verify,
    /// The barrier verifier rejected the kernel.
    Barrier,
    /// The interpreter reported a fault of this kind (e.g. "data race") or an invalid launch.
    Interp(String),
    /// A pass broke or rejected the kernel (pass name).
    Pass(String),
    /// The optimized kernel's results differ from the original's.
    PassChangedResult,
    /// `inline_module` failed, or its output does not verify.
    Inline,
    /// The kernel with its calls inlined gives other results than the module as written (or
    /// faults where that does not).
    InlineChangedResult,
    /// The PTX emitter refused the kernel.
    Emit,
    /// `ptxas` rejected the PTX (its error messages; not a crash).
    Ptxas,
    /// `ptxas` crashed: how (`SIGSEGV`, `exit 139 (SIGSEGV)`, `exit 1 without an error message`).
    /// NVIDIA's bug, not kir's.
    PtxasCrash(String),
    /// The CUDA driver's process died while loading (its JIT compiler) or running the PTX: the
    /// stage and how (`SIGSEGV`). NVIDIA's bug, not kir's (seen only with an isolated runner).
    DriverCrash { stage: Stage, how: String },
    /// The GPU run failed (driver error, module rejected by the JIT, no answer in time).
    Gpu,
    /// The GPU's results differ from the interpreter's.
    GpuMismatch,
    /// The PTX emulator could not run the kernel's PTX: it does not load, the launch is refused, or
    /// the kernel faults (the kind, e.g. "out-of-bounds access").
    Emu(String),
    /// The PTX emulator's results differ from the interpreter's.
    EmuMismatch,
    /// A failure reported by a caller-supplied check (tests of the reducer).
    Custom(String),
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureKind::Verify => write!(f, "verifier rejects the kernel"),
            FailureKind::Barrier => write!(f, "barrier verifier rejects the kernel"),
            FailureKind::Interp(k) => write!(f, "interpreter: {k}"),
            FailureKind::Pass(p) => write!(f, "pass `{p}` failed"),
            FailureKind::PassChangedResult => write!(f, "passes changed the interpreter's results"),
            FailureKind::Inline => write!(f, "inlining failed"),
            FailureKind::InlineChangedResult => write!(f, "inlining changed the interpreter's results"),
            FailureKind::Emit => write!(f, "PTX emission failed"),
            FailureKind::Ptxas => write!(f, "ptxas rejects the PTX"),
            FailureKind::PtxasCrash(how) => write!(f, "ptxas crashed ({how})"),
            FailureKind::DriverCrash { stage: Stage::Loading, how } => write!(f, "driver JIT crashed ({how})"),
            FailureKind::DriverCrash { stage, how } => {
                write!(f, "CUDA driver crashed ({how}) while {}", stage.describe())
            }
            FailureKind::Gpu => write!(f, "GPU run failed"),
            FailureKind::GpuMismatch => write!(f, "interpreter and GPU differ"),
            FailureKind::Emu(k) => write!(f, "ptx-emu: {k}"),
            FailureKind::EmuMismatch => write!(f, "interpreter and ptx-emu differ"),
            FailureKind::Custom(s) => write!(f, "{s}"),
        }
    }
}

impl FailureKind {
    /// Whether this is a crash of NVIDIA's tools (ptxas, the driver), not a failure of kir.
    pub fn is_tool_crash(&self) -> bool {
        matches!(self, FailureKind::PtxasCrash(_) | FailureKind::DriverCrash { .. })
    }
}

/// A failed check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub detail: String,
    /// For a tool crash: the PTX the tool crashed on.
    pub ptx: Option<String>,
}

impl Failure {
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> Failure {
        Failure { kind, detail: detail.into(), ptx: None }
    }

    /// The failure with the PTX it happened on.
    pub fn with_ptx(mut self, ptx: &str) -> Failure {
        self.ptx = Some(ptx.to_string());
        self
    }
}

/// A failed `ptxas` run as a failure: a crash ([`FailureKind::PtxasCrash`], with the PTX) or a
/// rejection ([`FailureKind::Ptxas`]). `what` prefixes the detail (e.g. "with calls").
pub fn ptxas_failure(e: PtxasError, ptx: &str, what: &str) -> Failure {
    let prefix = if what.is_empty() { String::new() } else { format!("{what}: ") };
    match e {
        PtxasError::Crashed { ptxas, sm, how, log } => {
            let mut detail = format!("{prefix}on the PTX for {sm} ({})", ptxas.display());
            if !log.trim().is_empty() {
                detail.push_str(&format!("; it printed:\n{}", log.trim_end()));
            }
            Failure::new(FailureKind::PtxasCrash(how), detail).with_ptx(ptx)
        }
        other => Failure::new(FailureKind::Ptxas, format!("{prefix}{other}")),
    }
}

/// A failed GPU run as a failure: a crash of the driver's process ([`FailureKind::DriverCrash`],
/// with the PTX) or a GPU failure ([`FailureKind::Gpu`]).
pub fn gpu_failure(e: GpuError, ptx: &str, what: &str) -> Failure {
    let prefix = if what.is_empty() { String::new() } else { format!("{what}: ") };
    match e {
        GpuError::Crashed { stage, how } => {
            let during = if stage == Stage::Loading { format!(" while {}", stage.describe()) } else { String::new() };
            Failure::new(
                FailureKind::DriverCrash { stage, how },
                format!("{prefix}kir's GPU worker process died{during}; a new one takes over"),
            )
            .with_ptx(ptx)
        }
        other => Failure::new(FailureKind::Gpu, format!("{prefix}{other}")),
    }
}

/// How the PTX emulator's and the GPU's buffers are compared with the interpreter's: bit for bit
/// (integers, NaN payloads, signed zeros) when the kernel has no approximate op — always for
/// generated kernels, whose generator writes none unless [`GenConfig::allow_approx`] is set
/// (`kir fuzz --approx`) — else by the interpreter's per-element error enclosures
/// ([`crate::enclosure`]; this derived tolerance only says that there are approximate ops).
pub fn engine_strictness(funcs: &[Kernel], k: &Kernel) -> Strictness {
    match crate::tolerance::derived_tolerance(funcs, k) {
        crate::directives::Tolerance::Exact => Strictness::Bitwise,
        tol => Strictness::Within(tol),
    }
}

/// How a strictness reads in a failure's detail.
fn strictness_words(s: Strictness) -> String {
    match s {
        Strictness::Bitwise => "bit for bit".to_string(),
        Strictness::Within(t) => format!("tolerance {t}"),
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// How cases are generated and checked.
pub struct FuzzConfig {
    pub gen: GenConfig,
    pub contract: LaunchContract,
    /// The pipeline whose results must equal the unoptimized kernel's.
    pub pipeline: Pipeline,
    /// Run `ptxas` for this target (None: skip).
    pub ptxas: Option<SmVersion>,
    /// Interpreter fuel per launch. Generated kernels need far less (at most 64176
    /// thread-instructions over seeds 0..1000 at 80 instructions, 128 threads), so a reduction
    /// candidate that loops forever fails fast with "fuel exhausted".
    pub fuel: u64,
    /// Run the kernel's PTX in the PTX emulator and compare with the interpreter.
    pub emu: bool,
}

impl FuzzConfig {
    /// Sets the generator's instruction target and scales the fuel with it.
    pub fn set_insts(&mut self, insts: usize) {
        self.gen.insts = insts;
        self.fuel = (1u64 << 20).max((insts as u64).saturating_mul(1 << 14));
    }

    /// The default generator with device functions ([`GenConfig::with_funcs`]),
    /// [`LaunchContract::DEFAULT`], the default pipeline, no ptxas, the emulator on.
    pub fn new() -> FuzzConfig {
        FuzzConfig {
            gen: GenConfig::with_funcs(),
            contract: LaunchContract::DEFAULT,
            pipeline: kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE).unwrap_or_default(),
            ptxas: None,
            fuel: 1 << 20,
            emu: true,
        }
    }
}

impl Default for FuzzConfig {
    fn default() -> FuzzConfig {
        FuzzConfig::new()
    }
}

/// The arguments of a case, as `NAME=VALUE` text (what the `; run:` line says): random `%in` and
/// `%fin` from `seed`, zeroed outputs, `%n` = the contract's element count.
pub fn case_args(contract: &LaunchContract, seed: u64) -> Vec<(String, String)> {
    let n = contract.n;
    vec![
        ("in".into(), format!("rand:u32:{n}:{seed}")),
        ("fin".into(), format!("rand:f32:{n}:{}", seed.wrapping_add(1))),
        ("out".into(), format!("zeros:u32:{n}")),
        ("fout".into(), format!("zeros:f32:{n}")),
        ("n".into(), n.to_string()),
    ]
}

/// The `; run:` directive for a case.
pub fn run_line(kernel: &str, contract: &LaunchContract, named: &[(String, String)]) -> String {
    let args: Vec<String> = named.iter().map(|(n, v)| format!("{n}={v}")).collect();
    format!("; run: @{kernel} grid({}) block({}) {}", contract.grid_blocks, contract.block_threads, args.join(" "))
}

/// The launch shape of a contract.
pub fn launch_config(contract: &LaunchContract) -> LaunchConfig {
    LaunchConfig::linear(contract.grid_blocks, contract.block_threads)
}

/// Arguments bound to a kernel, ready for both engines.
pub fn bind_case(k: &Kernel, named: &[(String, String)]) -> Result<args::Bound, String> {
    let mut specs = Vec::with_capacity(named.len());
    for (n, v) in named {
        specs.push((n.clone(), args::parse_arg_spec(v).map_err(|e| format!("argument {n}: {e}"))?));
    }
    args::bind(k, &specs, None)
}

/// The verifier and the barrier verifier, as the CLI runs them before anything else, on a module
/// holding only `k`.
pub fn verifies(k: &Kernel) -> Result<(), Failure> {
    verifies_module(&kernel_module(k.clone())).map(|_| ())
}

/// [`verifies`] for a module ([`kir_ir::verify::check`]): the verifier on every kernel and
/// function (calls typed against their callees, no recursion), and barrier verification across
/// calls. A refusal is a [`FailureKind::Verify`] failure when the verifier refused, else a
/// [`FailureKind::Barrier`] one.
pub fn verifies_module(m: &Module) -> Result<Checked, Failure> {
    kir_ir::verify::check(m.clone()).map_err(|d| {
        let kind = if kir_ir::verify::verify(m.clone()).is_ok() { FailureKind::Barrier } else { FailureKind::Verify };
        Failure::new(kind, first_error(d.list()))
    })
}

fn first_error(d: &[kir_ir::Diagnostic]) -> String {
    d.iter().find(|d| d.is_error()).map(|d| d.message.clone()).unwrap_or_default()
}

/// The interpreter's options for a case: race and uninitialized-read detection, one host thread
/// (so a cross-block race names the same threads every time), `fuel`.
fn interp_options(fuel: u64) -> Options {
    Options { races: true, uninit: true, threads: Some(1), ..Options::default() }.with_fuel(fuel)
}

/// Runs `k` in the interpreter on fresh copies of `bound`'s buffers, with race and
/// uninitialized-read detection; its calls run as written, with a call stack.
pub fn interpret(
    k: VerifiedKernel<'_>,
    cfg: &LaunchConfig,
    bound: &args::Bound,
    fuel: u64,
) -> Result<Vec<Buffer>, Failure> {
    let mut buffers = bound.buffers.clone();
    match kir_interp::launch_verified(k, cfg, &bound.args, &mut buffers, &interp_options(fuel)) {
        Ok(_) => Ok(buffers),
        Err(e) => {
            let kind = match e.kind {
                ErrorKind::KernelFault(f) => f.name().to_string(),
                ErrorKind::InvalidLaunch => "invalid launch".to_string(),
                ErrorKind::Internal => "internal error".to_string(),
            };
            Err(Failure::new(FailureKind::Interp(kind), e.message))
        }
    }
}

/// The first kernel of a checked module, to run.
fn first_kernel(m: &Verified) -> Option<VerifiedKernel<'_>> {
    m.verified_kernels().next()
}

/// Compares buffer lists; the first differing buffer as a message.
pub fn compare_all(k: &Kernel, bound: &args::Bound, a: &[Buffer], b: &[Buffer], s: Strictness) -> Result<(), String> {
    for (pi, p) in k.params.iter().enumerate() {
        let Some(bi) = bound.param_buffer[pi] else { continue };
        let c = compare_buffers(&a[bi], &b[bi], s, 3);
        if !c.is_match() {
            return Err(format!("%{}: {c}", k.value(*p).name));
        }
    }
    Ok(())
}

/// [`compare_all`] for another engine's buffers: by the interpreter's error enclosures when there
/// are some (a difference they cannot decide marks the case `ran.unverified`), else per `s`.
fn compare_engine(
    k: &Kernel,
    bound: &args::Bound,
    reference: &[Buffer],
    got: &[Buffer],
    s: Strictness,
    enclosures: Option<&kir_interp::enclose::Enclosures>,
    ran: &mut Ran,
) -> Result<(), String> {
    let Some(enc) = enclosures else { return compare_all(k, bound, reference, got, s) };
    let sources = kir_ir::diag::SourceMap::default();
    for (pi, p) in k.params.iter().enumerate() {
        let Some(bi) = bound.param_buffer[pi] else { continue };
        let entries = enc.buffers.get(bi).map_or(&[][..], |v| v.as_slice());
        let name = &k.value(*p).name;
        match crate::enclosure::judge_buffer(name, &reference[bi], &got[bi], entries, enc.unusable.as_ref(), &sources) {
            Ok(_) => {}
            Err(d) if d.decidable => return Err(format!("%{name}: {d}")),
            Err(_) => ran.unverified = true,
        }
    }
    Ok(())
}

/// How the comparison of a failure's detail was made.
fn judged_by(s: Strictness, enclosures: &Option<kir_interp::enclose::Enclosures>) -> String {
    match enclosures {
        Some(_) => "per-element error enclosures".into(),
        None => strictness_words(s),
    }
}

/// What [`check_kernel`] ran (checks that were skipped stay false).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ran {
    pub ptxas: bool,
    pub emu: bool,
    pub gpu: bool,
    /// Some element of the emulator or the GPU differed from the interpreter where its error
    /// enclosure could not decide (an approximate op's error reached a comparison, conversion,
    /// branch or address): the case is neither passed nor failed.
    pub unverified: bool,
}

/// Every check of the module docs on kernel `k` (a module holding only `k`) with the case's
/// arguments `named`.
pub fn check_kernel(
    k: &Kernel,
    named: &[(String, String)],
    cfg: &FuzzConfig,
    gpu: Option<(&mut dyn GpuExec, SmVersion)>,
    ran: &mut Ran,
) -> Result<(), Failure> {
    check_module(&kernel_module(k.clone()), named, cfg, gpu, ran)
}

/// A module holding only `k`.
pub fn kernel_module(k: Kernel) -> Module {
    Module { kernels: vec![k], ..Module::default() }
}

/// Whether `p` runs the `inline` pass (as the default pipeline does).
fn pipeline_inlines(p: &Pipeline) -> bool {
    p.steps.iter().any(|s| s.name() == "inline")
}

/// `m` with every call inlined ([`kir_ir::inline::inline_module`]), checked; `m` itself (checked)
/// when it has no calls.
pub fn inlined(m: &Module) -> Result<Checked, Failure> {
    let mut flat = m.clone();
    if m.has_calls() {
        kir_ir::inline::inline_module(&mut flat).map_err(|d| Failure::new(FailureKind::Inline, d.message))?;
    }
    let flat = kir_ir::verify::check(flat).map_err(|d| {
        Failure::new(FailureKind::Inline, format!("the inlined module does not verify: {}", first_error(d.list())))
    })?;
    if flat.has_calls() {
        return Err(Failure::new(FailureKind::Inline, "calls are left after inlining"));
    }
    Ok(flat)
}

/// Every check of the module docs on module `m` (its first kernel) with the case's arguments
/// `named`.
pub fn check_module(
    m: &Module,
    named: &[(String, String)],
    cfg: &FuzzConfig,
    gpu: Option<(&mut dyn GpuExec, SmVersion)>,
    ran: &mut Ran,
) -> Result<(), Failure> {
    let verified = verifies_module(m)?;
    let Some(k) = m.kernels.first() else {
        return Err(Failure::new(FailureKind::Interp("invalid launch".into()), "the module has no kernel"));
    };
    let bound = bind_case(k, named).map_err(|e| Failure::new(FailureKind::Interp("invalid launch".into()), e))?;
    let launch = launch_config(&cfg.contract);
    let Some(vk) = first_kernel(&verified) else {
        return Err(Failure::new(FailureKind::Interp("invalid launch".into()), "the module has no kernel"));
    };
    let reference = interpret(vk, &launch, &bound, cfg.fuel)?;
    // The kernel with its calls inlined: what the PTX paths run.
    let flat = inlined(m)?;
    let (Some(fk), Some(fvk)) = (flat.kernels.first(), first_kernel(&flat)) else {
        return Err(Failure::new(FailureKind::Inline, "the inlined module has no kernel"));
    };
    // Approximate ops: the other engines are judged by the interpreter's error enclosures.
    let enclosures = match engine_strictness(&flat.funcs, fk) {
        Strictness::Bitwise => None,
        _ => {
            let mut buffers = bound.buffers.clone();
            match kir_interp::launch_enclosed(vk, &launch, &bound.args, &mut buffers, &interp_options(cfg.fuel)) {
                Ok((_, enc)) => Some(enc),
                Err(e) => return Err(Failure::new(FailureKind::Interp("enclosures".into()), e.message)),
            }
        }
    };
    if m.has_calls() {
        let got = interpret(fvk, &launch, &bound, cfg.fuel)
            .map_err(|f| Failure::new(FailureKind::InlineChangedResult, format!("the inlined kernel faults: {f}")))?;
        compare_all(k, &bound, &reference, &got, Strictness::Bitwise)
            .map_err(|e| Failure::new(FailureKind::InlineChangedResult, format!("as written vs inlined: {e}")))?;
    }
    let input = if m.has_calls() && !pipeline_inlines(&cfg.pipeline) { flat.clone() } else { verified.clone() };
    let run_cfg = kir_passes::RunConfig { verify_each: true, ..kir_passes::RunConfig::default() };
    let opt = match kir_passes::run_pipeline(input, &cfg.pipeline, &run_cfg, &mut std::io::sink()) {
        Ok((opt, _)) => opt,
        Err(e) => {
            let pass = match &e {
                kir_passes::PassError::Broken { pass, .. } | kir_passes::PassError::Rejected { pass, .. } => {
                    pass.clone()
                }
                _ => "pipeline".to_string(),
            };
            let detail =
                e.diagnostics().first().map(|d| format!("{e}: {}", d.message)).unwrap_or_else(|| e.to_string());
            return Err(Failure::new(FailureKind::Pass(pass), detail));
        }
    };
    let Some(ok) = first_kernel(&opt) else {
        return Err(Failure::new(FailureKind::Pass("pipeline".into()), "the optimized module has no kernel"));
    };
    let optimized = interpret(ok, &launch, &bound, cfg.fuel)
        .map_err(|f| Failure::new(FailureKind::PassChangedResult, format!("the optimized kernel faults: {f}")))?;
    compare_all(k, &bound, &reference, &optimized, Strictness::Bitwise)
        .map_err(|e| Failure::new(FailureKind::PassChangedResult, format!("original vs optimized: {e}")))?;
    let mut ptxas_ptx = None;
    if let Some(sm) = cfg.ptxas {
        let ptx = crate::gpu_exec::ptx_in_module(&flat, fk, sm).map_err(|e| Failure::new(FailureKind::Emit, e))?;
        kir_backend_ptx::tools::run_ptxas_checked(&ptx, sm).map_err(|e| ptxas_failure(e, &ptx, ""))?;
        if m.has_calls() {
            // The functions as `.func`s, called: the backend's calling convention through ptxas.
            let opts = kir_backend_ptx::PtxOptions { sm, source: None, comments: false };
            let with_calls = kir_backend_ptx::emit_kernel_in_module(&verified, &k.name, &opts).map_err(|d| {
                let msgs: Vec<String> = d.iter().map(|d| d.message.clone()).collect();
                Failure::new(FailureKind::Emit, format!("with calls: {}", msgs.join("; ")))
            })?;
            kir_backend_ptx::tools::run_ptxas_checked(&with_calls, sm)
                .map_err(|e| ptxas_failure(e, &with_calls, "with calls"))?;
        }
        ran.ptxas = true;
        ptxas_ptx = Some((sm, ptx));
    }
    if cfg.emu {
        let ptx = match ptxas_ptx {
            Some((sm, ptx)) if sm == crate::emu_exec::EMU_SM => ptx,
            _ => crate::gpu_exec::ptx_in_module(&flat, fk, crate::emu_exec::EMU_SM)
                .map_err(|e| Failure::new(FailureKind::Emit, e))?,
        };
        let got = emulate_in(Some(&flat), fk, ptx, &launch, &bound, cfg.fuel.saturating_mul(EMU_FUEL_FACTOR))?;
        ran.emu = true;
        let s = engine_strictness(&flat.funcs, fk);
        compare_engine(k, &bound, &reference, &got, s, enclosures.as_ref(), ran).map_err(|e| {
            Failure::new(
                FailureKind::EmuMismatch,
                format!("interpreter vs ptx-emu ({}): {e}", judged_by(s, &enclosures)),
            )
        })?;
    }
    if let Some((runner, sm)) = gpu {
        let emulated = runner.is_emulated();
        let names = buffer_names(k, &bound);
        let inputs = Inputs { args: &bound.args, buffers: &bound.buffers, names: &names };
        let got = run_on_gpu(Gpu::with_sm(&mut *runner, &flat, sm), &fk.name, &launch, &inputs, "")?;
        ran.gpu = true;
        let s = engine_strictness(&flat.funcs, fk);
        compare_engine(k, &bound, &reference, &got, s, enclosures.as_ref(), ran).map_err(|e| {
            Failure::new(FailureKind::GpuMismatch, format!("interpreter vs GPU ({}): {e}", judged_by(s, &enclosures)))
        })?;
        if m.has_calls() && !emulated {
            // On hardware, also the functions as `.func`s, really called (the emulated driver's
            // PTX emulator has no `call`).
            let got = run_on_gpu(Gpu::with_sm(runner, &verified, sm), &k.name, &launch, &inputs, "with calls")?;
            compare_engine(k, &bound, &reference, &got, s, enclosures.as_ref(), ran).map_err(|e| {
                Failure::new(
                    FailureKind::GpuMismatch,
                    format!("interpreter vs GPU, with calls ({}): {e}", judged_by(s, &enclosures)),
                )
            })?;
        }
    }
    Ok(())
}

/// PTX instructions the emulator may run per thread-instruction of the interpreter's fuel: kir's
/// backend emits a few PTX instructions per kir instruction (at most a dozen, for an integer
/// division with its guards), so a kernel the interpreter finished within its fuel never runs out
/// in the emulator.
pub const EMU_FUEL_FACTOR: u64 = 64;

/// Runs `k`'s PTX in the emulator on copies of `bound`'s buffers, with `fuel` PTX
/// thread-instructions; the buffers after the run.
pub fn emulate(
    k: &Kernel,
    ptx: &str,
    cfg: &LaunchConfig,
    bound: &args::Bound,
    fuel: u64,
) -> Result<Vec<Buffer>, Failure> {
    emulate_in(None, k, ptx.to_string(), cfg, bound, fuel)
}

/// [`emulate`] through the [`PtxEmulator`] engine, on the checked module the PTX was emitted
/// from when there is one.
fn emulate_in(
    module: Option<&Checked>,
    k: &Kernel,
    ptx: String,
    cfg: &LaunchConfig,
    bound: &args::Bound,
    fuel: u64,
) -> Result<Vec<Buffer>, Failure> {
    use crate::emu_exec::{EmuFailure, FailureClass};
    let as_failure = |e: EmuFailure| {
        let kind = match e.class {
            FailureClass::Fault(f) => f.name().to_string(),
            FailureClass::Load => "the emulator cannot load the PTX".to_string(),
            FailureClass::InvalidLaunch => "invalid launch".to_string(),
            FailureClass::Setup => "setup".to_string(),
        };
        Failure::new(FailureKind::Emu(kind), e.message)
    };
    let program = EmuProgram::from_ptx(ptx);
    let names = buffer_names(k, bound);
    let opts = kir_ptx_emu::Options { threads: Some(1), ..kir_ptx_emu::Options::default() }.with_fuel(fuel);
    let mut engine = match module {
        Some(m) => PtxEmulator::new(&program, m, opts),
        None => PtxEmulator::entries_only(&program, opts),
    };
    let inputs = Inputs { args: &bound.args, buffers: &bound.buffers, names: &names };
    engine.run(&Launch::Kernel { name: &k.name, cfg: *cfg }, &inputs).map_err(|e| match e {
        EngineError::Emu(f) => as_failure(f),
        other => Failure::new(FailureKind::Emu("setup".into()), other.to_string()),
    })
}

/// The parameter name of each of `bound`'s buffers (for fault messages).
fn buffer_names(k: &Kernel, bound: &args::Bound) -> Vec<String> {
    let mut names = vec![String::new(); bound.buffers.len()];
    for (pi, b) in bound.param_buffer.iter().enumerate() {
        if let (Some(b), Some(p)) = (b, k.params.get(pi)) {
            names[*b] = k.value(*p).name.to_string();
        }
    }
    names
}

/// Runs kernel `name` on `gpu` (its PTX emitted first: a failure there is
/// [`FailureKind::Emit`]); the driver's error is a [`gpu_failure`] with that PTX. `what` prefixes
/// the detail (e.g. "with calls").
fn run_on_gpu(
    mut gpu: Gpu<'_>,
    name: &str,
    cfg: &LaunchConfig,
    inputs: &Inputs<'_>,
    what: &str,
) -> Result<Vec<Buffer>, Failure> {
    let prefix = if what.is_empty() { String::new() } else { format!("{what}: ") };
    let ptx = gpu.kernel_ptx(name).map_err(|e| Failure::new(FailureKind::Emit, format!("{prefix}{e}")))?.to_string();
    gpu.run(&Launch::Kernel { name, cfg: *cfg }, inputs).map_err(|e| match e {
        EngineError::Gpu(e) => gpu_failure(e, &ptx, what),
        other => Failure::new(FailureKind::Gpu, format!("{prefix}{other}")),
    })
}

/// A case: the module generated from `seed` (the kernel and its functions) and its arguments.
pub fn generate_case(seed: u64, cfg: &FuzzConfig) -> (Module, Vec<(String, String)>) {
    (kir_ir::generate::random_module(seed, &cfg.gen), case_args(&cfg.contract, seed))
}

/// What [`reduce`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReduceStats {
    /// Candidates that verified and were checked.
    pub checks: usize,
    /// Candidates kept.
    pub kept: usize,
    /// Full rounds over every kind of edit.
    pub rounds: usize,
}

/// Reduces kernel `k` while `check` keeps failing with `kind` (see the module docs); at most
/// `budget` checks. Returns the smallest kernel found and the last failure it gave (`None` only
/// when the input itself does not fail that way, in which case the input is returned unchanged).
pub fn reduce(
    k: &Kernel,
    kind: &FailureKind,
    check: &mut dyn FnMut(&Kernel) -> Option<Failure>,
    budget: usize,
) -> (Kernel, Option<Failure>, ReduceStats) {
    let mut on_module = |m: &Module| match m.kernels.first() {
        Some(k) => check(k),
        None => Some(Failure::new(FailureKind::Custom("no kernel".into()), "")),
    };
    let (m, last, stats) = reduce_module(&kernel_module(k.clone()), kind, &mut on_module, budget);
    (m.kernels.into_iter().next().unwrap_or_else(|| k.clone()), last, stats)
}

/// Reduces module `m` while `check` keeps failing with `kind` (see the module docs); at most
/// `budget` checks. Returns the smallest module found and the last failure it gave (`None` only
/// when the input itself does not fail that way, in which case the input is returned unchanged).
pub fn reduce_module(
    m: &Module,
    kind: &FailureKind,
    check: &mut dyn FnMut(&Module) -> Option<Failure>,
    budget: usize,
) -> (Module, Option<Failure>, ReduceStats) {
    let mut r = Reducer { kind, check, budget, stats: ReduceStats::default(), best: m.clone(), last: None };
    match (r.check)(&r.best) {
        Some(f) if f.kind == *kind => r.last = Some(f),
        _ => return (r.best, None, r.stats),
    }
    loop {
        r.stats.rounds += 1;
        let mut progress = false;
        // Calls inlined: all of them (the functions go with them), else those of one kernel. A
        // failure that does not depend on calls reduces further without them.
        progress |= r.inline_calls();
        // Functions nothing calls any more.
        let mut f = 0;
        while f < r.best.funcs.len() {
            let name = r.best.funcs[f].name.clone();
            if !r.best.bodies().any(|b| calls(b, &name)) {
                let mut c = r.best.clone();
                c.funcs.remove(f);
                if r.try_module(c) {
                    progress = true;
                    continue;
                }
            }
            f += 1;
        }
        // Parameters functions do not use, with their arguments.
        for f in 0..r.best.funcs.len() {
            let mut j = 0;
            while j < r.best.funcs[f].params.len() {
                if remove_func_param(&r.best, f, j).is_some_and(|c| r.try_module(c)) {
                    progress = true;
                } else {
                    j += 1;
                }
            }
        }
        // Every body: the kernel first, then the functions (their count no longer changes).
        for bi in 0..r.best.kernels.len() + r.best.funcs.len() {
            progress |= r.reduce_body(bi);
        }
        if !progress || r.stats.checks >= budget {
            break;
        }
    }
    (r.best, r.last, r.stats)
}

/// `m` without parameter `j` of function `f` and the matching argument of every call of it; `None`
/// when the function uses the parameter.
pub fn remove_func_param(m: &Module, f: usize, j: usize) -> Option<Module> {
    let func = m.funcs.get(f)?;
    let p = *func.params.get(j)?;
    let is_p = |o: &Operand| *o == Operand::Value(p);
    let used = func.placed_insts().any(|(_, i)| func.inst(i).args.iter().any(is_p))
        || func.blocks.iter().any(|b| b.term.operands().any(|o| is_p(&o)));
    if used {
        return None;
    }
    let name = func.name.clone();
    let mut c = m.clone();
    let g = &mut c.funcs[f];
    g.params.remove(j);
    for (n, q) in g.params.clone().into_iter().enumerate() {
        g.values[q.index()].def = kir_ir::ValueDef::Param(n as u32);
    }
    g.compact();
    for b in c.bodies_mut() {
        let Some(ci) = b.callees.iter().position(|c| c.name == name) else { continue };
        let calls: Vec<InstId> =
            b.placed_insts().map(|(_, i)| i).filter(|&i| b.inst(i).op == Op::Call(ci as u32)).collect();
        for i in calls {
            let args = &mut b.inst_mut(i).args;
            if j < args.len() {
                args.remove(j);
            }
        }
    }
    Some(c)
}

/// Whether body `b` calls function `name`.
fn calls(b: &Kernel, name: &str) -> bool {
    b.placed_insts()
        .any(|(_, i)| matches!(b.inst(i).op, Op::Call(c) if b.callees.get(c as usize).is_some_and(|c| c.name == name)))
}

/// The state of [`reduce_module`].
struct Reducer<'a> {
    kind: &'a FailureKind,
    check: &'a mut dyn FnMut(&Module) -> Option<Failure>,
    budget: usize,
    stats: ReduceStats,
    best: Module,
    last: Option<Failure>,
}

impl Reducer<'_> {
    /// Body `bi` of the best module: its kernels, then its functions.
    fn body(&self, bi: usize) -> &Kernel {
        let nk = self.best.kernels.len();
        if bi < nk {
            &self.best.kernels[bi]
        } else {
            &self.best.funcs[bi - nk]
        }
    }

    /// Tries the best module with every call inlined and no functions, then each kernel with its
    /// calls inlined; whether one was kept.
    fn inline_calls(&mut self) -> bool {
        if !self.best.has_calls() {
            return false;
        }
        let mut all = self.best.clone();
        if kir_ir::inline::inline_module(&mut all).is_err() {
            return false;
        }
        // `inline_module` inlines the functions' own calls first: they are call-free now, which
        // is what `inline_body` needs to inline one kernel's calls below.
        let call_free = std::mem::take(&mut all.funcs);
        all.bodies_mut().for_each(Kernel::compact_callees);
        if self.try_module(all) {
            return true;
        }
        let mut progress = false;
        for ki in 0..self.best.kernels.len() {
            let mut k = self.best.kernels[ki].clone();
            if !k.callees.is_empty() && kir_ir::inline::inline_body(&mut k, &call_free).is_ok() {
                progress |= self.try_body(ki, k);
            }
        }
        progress
    }

    /// Checks a candidate; keeps it when it is well formed and fails the same way.
    fn try_module(&mut self, cand: Module) -> bool {
        if self.stats.checks >= self.budget || !well_formed_for(&cand, self.kind) {
            return false;
        }
        self.stats.checks += 1;
        match (self.check)(&cand) {
            Some(f) if f.kind == *self.kind => {
                self.best = cand;
                self.last = Some(f);
                self.stats.kept += 1;
                true
            }
            _ => false,
        }
    }

    /// [`Reducer::try_module`] with body `bi` replaced by `k`.
    fn try_body(&mut self, bi: usize, mut k: Kernel) -> bool {
        k.compact_callees();
        let mut c = self.best.clone();
        let nk = c.kernels.len();
        if bi < nk {
            c.kernels[bi] = k;
        } else {
            c.funcs[bi - nk] = k;
        }
        self.try_module(c)
    }

    /// One round of every edit on body `bi`; whether any was kept.
    fn reduce_body(&mut self, bi: usize) -> bool {
        let mut progress = false;
        // Branches: `br` -> `jmp` to either target, dropping what becomes unreachable.
        let mut b = 0;
        while b < self.body(bi).blocks.len() {
            let mut changed = false;
            if matches!(self.body(bi).blocks[b].term, Terminator::Br { .. }) {
                for side in [0, 1] {
                    if let Some(c) = branch_to_jump(self.body(bi), BlockId(b as u32), side) {
                        if self.try_body(bi, c) {
                            changed = true;
                            progress = true;
                            break;
                        }
                    }
                }
            }
            if !changed {
                b += 1;
            }
        }
        // Blocks that only jump on.
        let mut b = 1;
        while b < self.body(bi).blocks.len() {
            let cand = bypass_block(self.body(bi), BlockId(b as u32));
            if cand.is_some_and(|c| self.try_body(bi, c)) {
                progress = true;
            } else {
                b += 1;
            }
        }
        // Instructions: chunks of halving size.
        let mut chunk = (self.body(bi).inst_count() / 2).max(1);
        loop {
            let mut i = 0;
            while i < self.body(bi).inst_count() {
                let ids: Vec<InstId> = self.body(bi).placed_insts().map(|(_, id)| id).skip(i).take(chunk).collect();
                let cand = remove_insts(self.body(bi), &ids);
                if cand.is_some_and(|c| self.try_body(bi, c)) {
                    progress = true;
                } else {
                    i += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk /= 2;
        }
        // Block parameters.
        for b in 1..self.body(bi).blocks.len() {
            let mut j = 0;
            while b < self.body(bi).blocks.len() && j < self.body(bi).blocks[b].params.len() {
                let cand = remove_block_param(self.body(bi), BlockId(b as u32), j);
                if cand.is_some_and(|c| self.try_body(bi, c)) {
                    progress = true;
                } else {
                    j += 1;
                }
            }
        }
        progress
    }
}

/// Whether a reduction candidate passes the checks that come before a failure of `kind`: both
/// verifiers, except the IR verifier alone for a barrier-verifier failure and none for a verifier
/// failure.
fn well_formed_for(m: &Module, kind: &FailureKind) -> bool {
    match kind {
        FailureKind::Verify => true,
        FailureKind::Barrier => !has_errors(&kir_ir::verify::verify_module(m)),
        _ => verifies_module(m).is_ok(),
    }
}

/// The value an instruction's uses get when it is deleted: zero of a scalar type; for a pointer,
/// the instruction's first operand when it is a pointer of the same type (`offset p, i` -> `p`).
fn replacement(k: &Kernel, i: InstId) -> Option<Operand> {
    let inst = k.inst(i);
    let r = inst.result?;
    match k.value_type(r) {
        Type::Scalar(t) => Some(Operand::Const(Constant::from_bits(t, 0))),
        ty => inst.args.first().copied().filter(|a| k.operand_type(*a) == ty),
    }
}

/// `k` without the instructions `ids`, their uses replaced (see `replacement`); `None` when one
/// of them has a result that cannot be replaced.
pub fn remove_insts(k: &Kernel, ids: &[InstId]) -> Option<Kernel> {
    if ids.is_empty() {
        return None;
    }
    let mut c = k.clone();
    for &i in ids {
        if let Some(r) = c.inst(i).result {
            match replacement(&c, i) {
                Some(rep) => kir_ir::subst::replace_uses(&mut c, r, rep),
                // A result nothing can stand in for may go only if nothing else uses it.
                None if uses_outside(&c, r, ids) => return None,
                None => {}
            }
        }
    }
    for b in &mut c.blocks {
        b.insts.retain(|i| !ids.contains(i));
    }
    c.compact();
    Some(c)
}

/// Whether `v` is used by a terminator or by an instruction not in `ids`.
fn uses_outside(k: &Kernel, v: kir_ir::ValueId, ids: &[InstId]) -> bool {
    let is_v = |o: &Operand| *o == Operand::Value(v);
    k.placed_insts().any(|(_, i)| !ids.contains(&i) && k.inst(i).args.iter().any(is_v))
        || k.blocks.iter().any(|b| b.term.operands().any(|o| is_v(&o)))
}

/// `k` with every edge into block `b` sent straight to `b`'s own target, when `b` is nothing but
/// a `jmp` (no instructions, no parameters); `b` is then unreachable and deleted. The jump's
/// arguments are defined in blocks dominating `b`, which dominate each of its predecessors too.
pub fn bypass_block(k: &Kernel, b: BlockId) -> Option<Kernel> {
    let blk = k.block(b);
    let Terminator::Jmp(target) = &blk.term else { return None };
    if b == Kernel::ENTRY || !blk.insts.is_empty() || !blk.params.is_empty() || target.block == b {
        return None;
    }
    let target = target.clone();
    let mut c = k.clone();
    for (bi, other) in c.blocks.iter_mut().enumerate() {
        if bi == b.index() {
            continue;
        }
        for call in other.term.successors_mut() {
            if call.block == b {
                *call = target.clone();
            }
        }
    }
    Some(without_unreachable(c))
}

/// `k` with block `b`'s `br` replaced by a `jmp` to its `then` (side 0) or `else` (side 1) target,
/// and the blocks no longer reachable from the entry deleted.
pub fn branch_to_jump(k: &Kernel, b: BlockId, side: usize) -> Option<Kernel> {
    let mut c = k.clone();
    let Terminator::Br { then_, else_, .. } = &c.block(b).term else { return None };
    let target = if side == 0 { then_.clone() } else { else_.clone() };
    c.block_mut(b).term = Terminator::Jmp(target);
    Some(without_unreachable(c))
}

/// Deletes blocks unreachable from the entry (their values can only have been used in blocks they
/// dominate, which are unreachable too), with [`edit::remove_unreachable`].
fn without_unreachable(mut k: Kernel) -> Kernel {
    if edit::remove_unreachable(&mut k).0 > 0 {
        k.compact();
    }
    k
}

/// `k` without parameter `j` of block `b` (and the matching argument on every edge into `b`), its
/// uses replaced by zero; `None` for the entry block or a non-scalar parameter.
pub fn remove_block_param(k: &Kernel, b: BlockId, j: usize) -> Option<Kernel> {
    if b == Kernel::ENTRY {
        return None;
    }
    let p = *k.block(b).params.get(j)?;
    let Type::Scalar(t) = k.value_type(p) else { return None };
    let mut c = k.clone();
    kir_ir::subst::replace_uses(&mut c, p, Operand::Const(Constant::from_bits(t, 0)));
    let mut keep: Vec<Vec<bool>> = vec![Vec::new(); c.blocks.len()];
    keep[b.index()] = (0..c.block(b).params.len()).map(|i| i != j).collect();
    edit::retain_block_params(&mut c, &keep);
    c.compact();
    Some(c)
}

/// A ready-to-run `.kir` file for a failing case: module `m`, whose first kernel the `; run:` line
/// launches.
pub fn repro_file(m: &Module, seed: u64, failure: &Failure, cfg: &FuzzConfig, named: &[(String, String)]) -> String {
    let contract = &cfg.contract;
    // The command that regenerates this case: the seed, and every setting that differs from the
    // defaults and changes what is generated or checked.
    let mut cmd = format!("kir fuzz --cases 1 --seed {seed}");
    let defaults = FuzzConfig::new();
    if cfg.gen.insts != defaults.gen.insts {
        cmd.push_str(&format!(" --insts {}", cfg.gen.insts));
    }
    if cfg.gen.max_funcs != defaults.gen.max_funcs {
        cmd.push_str(&format!(" --funcs {}", cfg.gen.max_funcs));
    }
    if cfg.pipeline.spec() != defaults.pipeline.spec() {
        cmd.push_str(&format!(" --pipeline {}", cfg.pipeline.spec()));
    }
    if cfg.gen.allow_approx {
        cmd.push_str(" --approx");
    }
    if cfg.gen.allow_vectors {
        cmd.push_str(" --vectors");
    }
    let mut s = String::new();
    s.push_str(&format!("; kir fuzz: case seed {seed} (reproduce: {cmd})\n"));
    for (i, line) in failure.to_string().lines().enumerate() {
        s.push_str(if i == 0 { "; failure: " } else { ";   " });
        s.push_str(line);
        s.push('\n');
    }
    if failure.kind.is_tool_crash() {
        s.push_str(&format!(
            "; NVIDIA's tool crashed, not kir: `kir fuzz` keeps the PTX it crashed on beside this file (case-{seed}.ptx)\n"
        ));
    }
    let name = m.kernels.first().map(|k| k.name.as_str()).unwrap_or(kir_ir::generate::KERNEL_NAME);
    s.push_str(&run_line(name, contract, named));
    s.push('\n');
    s.push_str(&kir_ir::print_module(m));
    s
}

/// The instructions of every kernel and function of `m`.
pub fn module_insts(m: &Module) -> usize {
    m.bodies().map(Kernel::inst_count).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Kernel {
        kir_ir::parse(src).unwrap_or_else(|d| panic!("{d:?}")).kernels.remove(0)
    }

    #[test]
    fn generated_cases_pass_every_check_without_tools() {
        let cfg = FuzzConfig::new();
        for seed in 0..5 {
            let (m, named) = generate_case(seed, &cfg);
            let mut ran = Ran::default();
            check_module(&m, &named, &cfg, None, &mut ran).unwrap_or_else(|f| panic!("seed {seed}: {f}"));
            assert_eq!(ran, Ran { emu: true, ..Ran::default() });
        }
    }

    /// The engines are compared with the interpreter bit for bit: generated kernels have no
    /// approximate op, so the strictness is `Bitwise` — integers exactly, NaN payloads and signed
    /// zeros included — never a tolerance that lets any NaN match any other.
    #[test]
    fn engine_comparison_is_bit_exact_for_generated_kernels() {
        let cfg = FuzzConfig::new();
        for seed in 0..200 {
            let (m, _) = generate_case(seed, &cfg);
            let flat = inlined(&m).unwrap();
            assert_eq!(engine_strictness(&flat.funcs, &flat.kernels[0]), Strictness::Bitwise, "seed {seed}");
        }
        let k = parse("kernel @k(%f: ptr<global, f32>, %u: ptr<global, u32>) {\nentry:\n  ret\n}\n");
        let bound = bind_case(&k, &[("f".into(), "zeros:f32:2".into()), ("u".into(), "zeros:u32:2".into())]).unwrap();
        let with = |f: [u32; 2], u: [u32; 2]| {
            let mut b = bound.buffers.clone();
            for (i, (x, y)) in f.iter().zip(u).enumerate() {
                b[0].bytes[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
                b[1].bytes[4 * i..4 * i + 4].copy_from_slice(&y.to_le_bytes());
            }
            b
        };
        let s = engine_strictness(&[], &k);
        let a = with([0x7fc0_0000, 0], [1, 2]);
        assert!(compare_all(&k, &bound, &a, &a.clone(), s).is_ok());
        // Another NaN payload, the other zero, another integer: each a difference.
        let e = compare_all(&k, &bound, &a, &with([0x7fc0_0001, 0], [1, 2]), s).unwrap_err();
        assert!(e.contains("NaN(0x7fc00000)") && e.contains("NaN(0x7fc00001)"), "{e}");
        assert!(compare_all(&k, &bound, &a, &with([0xffc0_0000, 0], [1, 2]), s).is_err());
        assert!(compare_all(&k, &bound, &a, &with([0x7fc0_0000, 0x8000_0000], [1, 2]), s).is_err());
        assert!(compare_all(&k, &bound, &a, &with([0x7fc0_0000, 0], [1, 3]), s).is_err());
    }

    #[test]
    fn tool_crashes_are_their_own_kinds() {
        let ptxas =
            PtxasError::Crashed { ptxas: "/x/ptxas".into(), sm: "sm_80", how: "SIGSEGV".into(), log: String::new() };
        let f = ptxas_failure(ptxas, "PTX", "");
        assert_eq!(f.kind, FailureKind::PtxasCrash("SIGSEGV".into()));
        assert!(f.kind.is_tool_crash());
        assert_eq!(f.ptx.as_deref(), Some("PTX"));
        assert_eq!(f.to_string(), "ptxas crashed (SIGSEGV): on the PTX for sm_80 (/x/ptxas)");
        let rejected = PtxasError::Rejected { ptxas: "/x/ptxas".into(), sm: "sm_80", log: "error".into() };
        let f = ptxas_failure(rejected, "PTX", "with calls");
        assert_eq!(f.kind, FailureKind::Ptxas);
        assert!(!f.kind.is_tool_crash() && f.ptx.is_none());
        let f = gpu_failure(GpuError::Crashed { stage: Stage::Loading, how: "SIGSEGV".into() }, "PTX", "");
        assert!(f.kind.is_tool_crash());
        assert!(
            f.to_string()
                .starts_with("driver JIT crashed (SIGSEGV): kir's GPU worker process died while JIT-compiling"),
            "{f}"
        );
        let f = gpu_failure(GpuError::Crashed { stage: Stage::Running, how: "SIGBUS".into() }, "PTX", "");
        assert!(f.to_string().starts_with("CUDA driver crashed (SIGBUS) while running the kernel"), "{f}");
        let f = gpu_failure(GpuError::TimedOut { stage: Stage::Running, secs: 3 }, "PTX", "");
        assert_eq!(f.kind, FailureKind::Gpu);
    }

    #[test]
    fn unreachable_blocks_go_with_their_values() {
        let k = parse(
            "kernel @k(%o: ptr<global, u32>, %c: pred) {\nentry:\n  br %c, a(), b()\na:\n  %x = add.u32 1, 2\n  jmp done(%x)\nb:\n  jmp done(7)\ndone(%v: u32):\n  store %o[0], %v\n  ret\n}\n",
        );
        let c = branch_to_jump(&k, BlockId(0), 1).unwrap();
        assert!(verifies(&c).is_ok(), "{}", kir_ir::print_kernel(&c));
        assert_eq!(c.blocks.len(), 3);
        assert!(c.block_by_name("a").is_none());
        let d = remove_block_param(&c, c.block_by_name("done").unwrap(), 0).unwrap();
        assert!(verifies(&d).is_ok(), "{}", kir_ir::print_kernel(&d));
        assert!(kir_ir::print_kernel(&d).contains("store %o[0], 0"), "{}", kir_ir::print_kernel(&d));
    }

    #[test]
    fn removing_an_instruction_replaces_its_uses() {
        let k = parse("kernel @k(%o: ptr<global, u32>, %i: u32) {\nentry:\n  %x = mul.u32 %i, 3\n  %p = offset %o, %i\n  store %p[0], %x\n  ret\n}\n");
        let ids: Vec<InstId> = k.placed_insts().map(|(_, i)| i).take(2).collect();
        let c = remove_insts(&k, &ids).unwrap();
        assert!(verifies(&c).is_ok());
        assert_eq!(c.inst_count(), 1);
        assert!(kir_ir::print_kernel(&c).contains("store %o[0], 0"), "{}", kir_ir::print_kernel(&c));
    }
}
