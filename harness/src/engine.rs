//! The executors behind one trait: [`Engine`] runs a [`Launch`] (a kernel with its grid and
//! block, or a launch graph) of a checked module on [`Inputs`] (the bound arguments and the
//! initial buffers) and returns the buffers after the run. Three engines implement it: the
//! interpreter ([`Interpreter`]), the PTX emulator ([`PtxEmulator`], over [`crate::emu_exec`])
//! and a GPU ([`Gpu`], over [`crate::gpu_exec`] and its [`GpuExec`] runner).
//!
//! Guarantees:
//! - Every engine receives the same inputs and returns every buffer of [`Inputs::buffers`] after
//!   the run, in that order and with its element type, so the results of two engines compare
//!   index by index with [`crate::compare::compare_buffers`]. The inputs are never modified.
//! - An engine's setup is its own: the interpreter's options (race and uninitialized-read checks,
//!   fuel, host threads), the emulator's PTX (emitted from the module with kir's `.kir` line
//!   comments, loaded once per module by [`EmuProgram::new`], or PTX text already at hand,
//!   [`EmuProgram::from_ptx`]) and options, the GPU's target (given, or chosen from the device's
//!   compute capability on the first run) and PTX emission (once per kernel,
//!   [`Gpu::kernel_ptx`]).
//! - Every problem is an [`EngineError`], never a panic; it carries what each engine reports:
//!   the interpreter's [`InterpError`] (the fault and where it happened), the emulator's
//!   [`EmuFailure`] (its class, and a message with the PTX line and the `.kir` line it was
//!   emitted for), the GPU driver's [`GpuError`] as it is (so a crash or hang of an isolated
//!   runner's worker stays distinguishable from a failed run) and, apart from it, what kept the
//!   GPU run from being prepared ([`EngineError::GpuSetup`]). Its `Display` is that message,
//!   unchanged.
//! - What a run did ([`Interpreter::last_stats`], [`PtxEmulator::last_stats`]) is kept by the
//!   engine, for the callers that report it.

use crate::emu_exec::{self, EmuFailure, FailureClass};
use crate::gpu_exec::{self, GpuExec};
use kir_backend_ptx::gpu::GpuError;
use kir_backend_ptx::SmVersion;
use kir_interp::{Arg, Buffer, InterpError, LaunchConfig};
use kir_ir::verify::{Checked, Verified};
use std::fmt;

/// What an engine runs: a kernel of the module with its launch shape, or a launch graph.
#[derive(Clone, Debug)]
pub enum Launch<'a> {
    Kernel { name: &'a str, cfg: LaunchConfig },
    Graph { name: &'a str },
}

/// The inputs of a run: the arguments in parameter order (scalars, or indices into `buffers`),
/// the buffers before the run, and their parameter names (for fault messages).
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    pub args: &'a [Arg],
    pub buffers: &'a [Buffer],
    pub names: &'a [String],
}

/// Why an engine's run gave no buffers.
#[derive(Debug)]
pub enum EngineError {
    /// The launch names no kernel or graph of the module.
    Target(String),
    /// The interpreter stopped: a kernel fault (with its location) or an invalid launch.
    Interp(Box<InterpError>),
    /// The PTX emulator failed: unloadable PTX, a fault, an invalid launch or the setup.
    Emu(EmuFailure),
    /// The GPU run failed: the driver's error as it is (a crash or hang of an isolated runner's
    /// worker is [`GpuError::Crashed`] or [`GpuError::TimedOut`]; what could not be prepared for
    /// a graph's launches is [`GpuError::Invalid`]).
    Gpu(GpuError),
    /// The GPU run could not be set up: the device's compute capability or target, or a kernel's
    /// PTX for it (the emitter's messages).
    GpuSetup(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Target(m) | EngineError::GpuSetup(m) => f.write_str(m),
            EngineError::Gpu(e) => write!(f, "{e}"),
            EngineError::Interp(e) => write!(f, "{e}"),
            EngineError::Emu(e) => f.write_str(&e.message),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<InterpError> for EngineError {
    fn from(e: InterpError) -> EngineError {
        EngineError::Interp(Box::new(e))
    }
}

impl From<EmuFailure> for EngineError {
    fn from(e: EmuFailure) -> EngineError {
        EngineError::Emu(e)
    }
}

impl From<GpuError> for EngineError {
    fn from(e: GpuError) -> EngineError {
        EngineError::Gpu(e)
    }
}

/// An executor of kir launches.
pub trait Engine {
    /// The engine's name as rows show it: `interp`, `ptx-emu` or `gpu`.
    fn name(&self) -> &'static str;
    /// Runs `what` on copies of `inputs`' buffers; returns all of them after the run.
    fn run(&mut self, what: &Launch<'_>, inputs: &Inputs<'_>) -> Result<Vec<Buffer>, EngineError>;
}

/// The interpreter on a verified module, with its options.
pub struct Interpreter<'m> {
    module: &'m Verified,
    opts: kir_interp::Options,
    stats: Option<kir_interp::Stats>,
}

impl<'m> Interpreter<'m> {
    pub fn new(module: &'m Verified, opts: kir_interp::Options) -> Interpreter<'m> {
        Interpreter { module, opts, stats: None }
    }

    /// What the last successful run did (a graph's: all its launches together).
    pub fn last_stats(&self) -> Option<&kir_interp::Stats> {
        self.stats.as_ref()
    }
}

impl Engine for Interpreter<'_> {
    fn name(&self) -> &'static str {
        "interp"
    }

    fn run(&mut self, what: &Launch<'_>, inputs: &Inputs<'_>) -> Result<Vec<Buffer>, EngineError> {
        let mut buffers = inputs.buffers.to_vec();
        self.stats = None;
        let stats = match *what {
            Launch::Kernel { name, ref cfg } => {
                let k = self.module.verified_kernel(name).ok_or_else(|| no_target("kernel", name))?;
                kir_interp::launch_verified(k, cfg, inputs.args, &mut buffers, &self.opts)?
            }
            Launch::Graph { name } => {
                let g = self.module.graph(name).ok_or_else(|| no_target("graph", name))?;
                kir_interp::graph::run_graph(self.module, g, inputs.args, &mut buffers, &self.opts)?.total
            }
        };
        self.stats = Some(stats);
        Ok(buffers)
    }
}

fn no_target(what: &str, name: &str) -> EngineError {
    EngineError::Target(format!("no {what} `@{name}`"))
}

/// PTX text loaded into the emulator: what [`PtxEmulator`] runs. Usually a module's PTX for the
/// emulator ([`emu_exec::EMU_SM`], with kir's `.kir` line comments: [`EmuProgram::new`]); any PTX
/// text with [`EmuProgram::from_ptx`].
pub struct EmuProgram {
    ptx: String,
    loaded: kir_ptx_emu::Module,
}

impl EmuProgram {
    /// Emits the PTX of `m` (`source`: the text it was parsed from, for the line comments),
    /// passes it through `hook` when given (tests corrupt it on purpose) and loads it.
    pub fn new(m: &Checked, source: Option<&str>, hook: Option<&dyn Fn(&str) -> String>) -> Result<Self, EmuFailure> {
        let ptx = emu_exec::module_ptx(m, source).map_err(|e| EmuFailure {
            class: FailureClass::Setup,
            message: format!("PTX emission for the emulator failed: {e}"),
            ptx_line: None,
            emu_error: None,
        })?;
        let ptx = match hook {
            Some(hook) => hook(&ptx),
            None => ptx,
        };
        EmuProgram::from_ptx(ptx)
    }

    /// Loads PTX text as it is (e.g. the PTX already emitted for `ptxas`, or a `.ptx` file); a
    /// text the emulator cannot load is a [`FailureClass::Load`] failure naming the PTX line.
    pub fn from_ptx(ptx: String) -> Result<Self, EmuFailure> {
        let loaded = emu_exec::load(&ptx)?;
        Ok(EmuProgram { ptx, loaded })
    }

    /// A program from PTX text and the module the emulator loaded from it
    /// ([`kir_ptx_emu::Module::parse`] of `ptx`: for a caller that reports a load error itself).
    pub fn from_loaded(ptx: String, loaded: kir_ptx_emu::Module) -> Self {
        EmuProgram { ptx, loaded }
    }

    /// The loaded module (its entries and their parameters).
    pub fn module(&self) -> &kir_ptx_emu::Module {
        &self.loaded
    }

    /// The PTX text the program was loaded from.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }
}

/// The PTX emulator running a module's [`EmuProgram`] with its options. A program that could not
/// be made fails every run with the failure that stopped it. A kernel launch runs the entry kir
/// emits for the kernel's name ([`kir::api::ptx_entry_name`]; a PTX entry's own name is that
/// name); a graph needs the module it belongs to.
pub struct PtxEmulator<'a> {
    program: &'a Result<EmuProgram, EmuFailure>,
    module: Option<&'a Checked>,
    opts: kir_ptx_emu::Options,
    stats: Option<kir_ptx_emu::Stats>,
}

impl<'a> PtxEmulator<'a> {
    /// `program` must be the PTX of `module` ([`EmuProgram::new`], or [`EmuProgram::from_ptx`]
    /// of PTX emitted from it).
    pub fn new(
        program: &'a Result<EmuProgram, EmuFailure>,
        module: &'a Checked,
        opts: kir_ptx_emu::Options,
    ) -> PtxEmulator<'a> {
        PtxEmulator { program, module: Some(module), opts, stats: None }
    }

    /// PTX with no `.kir` module at hand: its entries run as kernel launches; a graph launch is
    /// an [`EngineError::Target`] error.
    pub fn entries_only(program: &'a Result<EmuProgram, EmuFailure>, opts: kir_ptx_emu::Options) -> PtxEmulator<'a> {
        PtxEmulator { program, module: None, opts, stats: None }
    }

    /// What the last successful run did (a graph's: all its launches together).
    pub fn last_stats(&self) -> Option<&kir_ptx_emu::Stats> {
        self.stats.as_ref()
    }
}

impl Engine for PtxEmulator<'_> {
    fn name(&self) -> &'static str {
        "ptx-emu"
    }

    fn run(&mut self, what: &Launch<'_>, inputs: &Inputs<'_>) -> Result<Vec<Buffer>, EngineError> {
        let p = self.program.as_ref().map_err(|e| EngineError::Emu(e.clone()))?;
        self.stats = None;
        let run = match *what {
            Launch::Kernel { name, ref cfg } => {
                let entry = kir::api::ptx_entry_name(name);
                emu_exec::run_kernel(
                    &p.loaded,
                    &p.ptx,
                    &entry,
                    cfg,
                    inputs.args,
                    inputs.buffers,
                    inputs.names,
                    &self.opts,
                )?
            }
            Launch::Graph { name } => {
                let module = self.module.ok_or_else(|| no_target("graph", name))?;
                let g = module.graph(name).ok_or_else(|| no_target("graph", name))?;
                emu_exec::run_graph(
                    &p.loaded,
                    &p.ptx,
                    module,
                    g,
                    inputs.args,
                    inputs.buffers,
                    inputs.names,
                    &self.opts,
                )?
            }
        };
        self.stats = Some(run.stats);
        Ok(run.buffers)
    }
}

/// A GPU (through a [`GpuExec`] runner) running a checked module's kernels, emitted for the
/// device's own target (no comments; a kernel with the functions it calls as `.func`s).
pub struct Gpu<'a> {
    runner: &'a mut dyn GpuExec,
    module: &'a Checked,
    sm: Option<SmVersion>,
    /// Each kernel's PTX, emitted once: (kernel name, PTX).
    ptx: Vec<(String, String)>,
}

impl<'a> Gpu<'a> {
    /// The target is asked of the device on the first run.
    pub fn new(runner: &'a mut dyn GpuExec, module: &'a Checked) -> Gpu<'a> {
        Gpu { runner, module, sm: None, ptx: Vec::new() }
    }

    /// With the target already chosen (e.g. [`gpu_exec::sm_for`] the device's compute capability,
    /// asked once for many modules).
    pub fn with_sm(runner: &'a mut dyn GpuExec, module: &'a Checked, sm: SmVersion) -> Gpu<'a> {
        Gpu { runner, module, sm: Some(sm), ptx: Vec::new() }
    }

    /// The PTX target of the device ([`gpu_exec::sm_for`] its compute capability), asked once.
    pub fn sm(&mut self) -> Result<SmVersion, EngineError> {
        if let Some(sm) = self.sm {
            return Ok(sm);
        }
        let cc = self.runner.compute_capability().map_err(|e| EngineError::GpuSetup(format!("GPU: {e}")))?;
        let sm = gpu_exec::sm_for(cc).map_err(EngineError::GpuSetup)?;
        self.sm = Some(sm);
        Ok(sm)
    }

    /// The PTX a launch of kernel `name` runs (emitted on first use, then kept): for a caller
    /// that keeps it (a crash report, timing). An emission failure is [`EngineError::GpuSetup`]
    /// with the emitter's messages.
    pub fn kernel_ptx(&mut self, name: &str) -> Result<&str, EngineError> {
        let sm = self.sm()?;
        let i = match self.ptx.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                let k = self.module.kernel(name).ok_or_else(|| no_target("kernel", name))?;
                let ptx = gpu_exec::ptx_in_module(self.module, k, sm).map_err(EngineError::GpuSetup)?;
                self.ptx.push((name.to_string(), ptx));
                self.ptx.len() - 1
            }
        };
        Ok(&self.ptx[i].1)
    }
}

impl Engine for Gpu<'_> {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn run(&mut self, what: &Launch<'_>, inputs: &Inputs<'_>) -> Result<Vec<Buffer>, EngineError> {
        let sm = self.sm()?;
        match *what {
            Launch::Kernel { name, ref cfg } => {
                let module = self.module;
                let k = module.kernel(name).ok_or_else(|| no_target("kernel", name))?;
                self.kernel_ptx(name)?;
                let ptx = self.ptx.iter().find(|(n, _)| n == name).map(|(_, p)| p.as_str()).unwrap_or_default();
                Ok(gpu_exec::run_kernel(self.runner, k, ptx, cfg, inputs.args, inputs.buffers)?)
            }
            Launch::Graph { name } => {
                let g = self.module.graph(name).ok_or_else(|| no_target("graph", name))?;
                Ok(gpu_exec::run_graph(self.runner, sm, self.module, g, inputs.args, inputs.buffers)?)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kir_ir::types::Constant;

    const SRC: &str = "kernel @k(%out: ptr<global, u32>, %n: u32) {\nentry:\n  %t = tid.x\n  %v = add.u32 %t, %n\n  store %out[%t], %v\n  ret\n}\n";

    fn checked() -> Checked {
        kir_ir::verify::check(kir_ir::parse(SRC).unwrap_or_else(|d| panic!("{d:?}"))).unwrap()
    }

    #[test]
    fn interpreter_and_emulator_agree_through_the_trait() {
        let m = checked();
        let program = EmuProgram::new(&m, Some(SRC), None);
        let buffers = vec![Buffer::from_u32(&[9; 4]), Buffer::from_f32(&[1.5])];
        let args = [Arg::Buffer(0), Arg::Scalar(Constant::u32(10))];
        let names = ["out".to_string()];
        let inputs = Inputs { args: &args, buffers: &buffers, names: &names };
        let launch = Launch::Kernel { name: "k", cfg: LaunchConfig::linear(1, 4) };
        let mut engines: Vec<Box<dyn Engine>> = vec![
            Box::new(Interpreter::new(&m, kir_interp::Options::default())),
            Box::new(PtxEmulator::new(&program, &m, kir_ptx_emu::Options::default())),
        ];
        for e in &mut engines {
            let got = e.run(&launch, &inputs).unwrap_or_else(|err| panic!("{}: {err}", e.name()));
            assert_eq!(got[0], Buffer::from_u32(&[10, 11, 12, 13]), "{}", e.name());
            assert_eq!(got[1], buffers[1], "{}: an unused buffer comes back unchanged", e.name());
        }
        assert_eq!(buffers[0], Buffer::from_u32(&[9; 4]), "the inputs are not modified");
    }

    #[test]
    fn errors_carry_each_engines_report() {
        let m = checked();
        let program = EmuProgram::new(&m, Some(SRC), None);
        let buffers = vec![Buffer::from_u32(&[0; 4])];
        let args = [Arg::Buffer(0), Arg::Scalar(Constant::u32(0))];
        let names = ["out".to_string()];
        let inputs = Inputs { args: &args, buffers: &buffers, names: &names };
        let launch = Launch::Kernel { name: "k", cfg: LaunchConfig::linear(1, 8) };
        match Interpreter::new(&m, kir_interp::Options::default()).run(&launch, &inputs) {
            Err(EngineError::Interp(e)) => {
                assert!(e.to_string().contains("out-of-bounds store to global buffer `%out`"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        match PtxEmulator::new(&program, &m, kir_ptx_emu::Options::default()).run(&launch, &inputs) {
            Err(e @ EngineError::Emu(_)) => {
                assert!(e.to_string().contains("(emitted for .kir line 5: `store %out[%t], %v`)"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        let unloadable = EmuProgram::new(&m, Some(SRC), Some(&|_: &str| "garbage".to_string()));
        match PtxEmulator::new(&unloadable, &m, kir_ptx_emu::Options::default()).run(&launch, &inputs) {
            Err(EngineError::Emu(f)) => assert_eq!(f.class, FailureClass::Load),
            other => panic!("{other:?}"),
        }
        let missing = Launch::Graph { name: "nope" };
        let e = Interpreter::new(&m, kir_interp::Options::default()).run(&missing, &inputs).unwrap_err();
        assert_eq!(e.to_string(), "no graph `@nope`");
    }

    /// A runner whose driver "crashes" on every run, as an isolated worker's does.
    struct Crashing;

    impl GpuExec for Crashing {
        fn run_sequence(
            &mut self,
            _: &[Vec<u8>],
            _: &[kir_backend_ptx::gpu::KernelLaunch],
        ) -> Result<Vec<Vec<u8>>, GpuError> {
            Err(GpuError::Crashed { stage: kir_backend_ptx::gpu::Stage::Loading, how: "SIGSEGV".into() })
        }
        fn device_name(&self) -> Result<String, GpuError> {
            Ok("fake".into())
        }
        fn is_emulated(&self) -> bool {
            false
        }
        fn compute_capability(&self) -> Result<(i32, i32), GpuError> {
            Ok((9, 0))
        }
    }

    #[test]
    fn the_gpu_engine_keeps_the_drivers_error_and_the_ptx_it_ran() {
        let m = checked();
        let mut runner = Crashing;
        let mut gpu = Gpu::new(&mut runner, &m);
        let ptx = gpu.kernel_ptx("k").unwrap().to_string();
        assert!(ptx.contains(".target sm_90") && ptx.contains(".visible .entry k("), "{ptx}");
        let buffers = vec![Buffer::from_u32(&[0; 4])];
        let args = [Arg::Buffer(0), Arg::Scalar(Constant::u32(0))];
        let inputs = Inputs { args: &args, buffers: &buffers, names: &[] };
        let launch = Launch::Kernel { name: "k", cfg: LaunchConfig::linear(1, 4) };
        match gpu.run(&launch, &inputs) {
            Err(EngineError::Gpu(GpuError::Crashed { how, .. })) => assert_eq!(how, "SIGSEGV"),
            other => panic!("{other:?}"),
        }
        assert_eq!(gpu.kernel_ptx("k").unwrap(), ptx, "emitted once, kept");
        assert!(matches!(gpu.kernel_ptx("nope"), Err(EngineError::Target(_))));
    }

    #[test]
    fn ptx_text_runs_without_a_module() {
        let m = checked();
        let program = EmuProgram::from_ptx(emu_exec::module_ptx(&m, None).unwrap());
        let mut emu = PtxEmulator::entries_only(&program, kir_ptx_emu::Options::default());
        let buffers = vec![Buffer::from_u32(&[0; 4])];
        let args = [Arg::Buffer(0), Arg::Scalar(Constant::u32(1))];
        let inputs = Inputs { args: &args, buffers: &buffers, names: &[] };
        let got = emu.run(&Launch::Kernel { name: "k", cfg: LaunchConfig::linear(1, 4) }, &inputs).unwrap();
        assert_eq!(got[0], Buffer::from_u32(&[1, 2, 3, 4]));
        assert_eq!(emu.last_stats().map(|s| s.blocks), Some(1));
        let e = emu.run(&Launch::Graph { name: "g" }, &inputs).unwrap_err();
        assert_eq!(e.to_string(), "no graph `@g`");
        let bad = EmuProgram::from_ptx("garbage".into());
        assert!(matches!(bad, Err(EmuFailure { class: FailureClass::Load, .. })));
    }
}
