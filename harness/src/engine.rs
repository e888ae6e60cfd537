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
//!   comments, loaded once per module by [`EmuProgram::new`]) and options, the GPU's target
//!   (chosen from the device's compute capability on the first run) and PTX emission.
//! - Every problem is an [`EngineError`], never a panic; it carries what each engine reports
//!   today: the interpreter's [`InterpError`] (the fault and where it happened), the emulator's
//!   [`EmuFailure`] (its class, and a message with the PTX line and the `.kir` line it was
//!   emitted for) and the GPU's message. Its `Display` is that message, unchanged.

use crate::emu_exec::{self, EmuFailure, FailureClass};
use crate::gpu_exec::{self, GpuExec};
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
    /// The GPU run failed (the driver's message, or the PTX could not be emitted for it).
    Gpu(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Target(m) | EngineError::Gpu(m) => f.write_str(m),
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

impl From<kir_backend_ptx::gpu::GpuError> for EngineError {
    fn from(e: kir_backend_ptx::gpu::GpuError) -> EngineError {
        EngineError::Gpu(e.to_string())
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
}

impl<'m> Interpreter<'m> {
    pub fn new(module: &'m Verified, opts: kir_interp::Options) -> Interpreter<'m> {
        Interpreter { module, opts }
    }
}

impl Engine for Interpreter<'_> {
    fn name(&self) -> &'static str {
        "interp"
    }

    fn run(&mut self, what: &Launch<'_>, inputs: &Inputs<'_>) -> Result<Vec<Buffer>, EngineError> {
        let mut buffers = inputs.buffers.to_vec();
        match *what {
            Launch::Kernel { name, ref cfg } => {
                let k = self.module.verified_kernel(name).ok_or_else(|| no_target("kernel", name))?;
                kir_interp::launch_verified(k, cfg, inputs.args, &mut buffers, &self.opts)?;
            }
            Launch::Graph { name } => {
                let g = self.module.graph(name).ok_or_else(|| no_target("graph", name))?;
                kir_interp::graph::run_graph(self.module, g, inputs.args, &mut buffers, &self.opts)?;
            }
        }
        Ok(buffers)
    }
}

fn no_target(what: &str, name: &str) -> EngineError {
    EngineError::Target(format!("no {what} `@{name}`"))
}

/// A module's PTX for the emulator ([`emu_exec::EMU_SM`], with kir's `.kir` line comments),
/// loaded: what [`PtxEmulator`] runs.
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
        let loaded = emu_exec::load(&ptx)?;
        Ok(EmuProgram { ptx, loaded })
    }

    /// The PTX text the program was loaded from.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }
}

/// The PTX emulator running a module's [`EmuProgram`] with its options. A program that could not
/// be made fails every run with the failure that stopped it.
pub struct PtxEmulator<'a> {
    program: &'a Result<EmuProgram, EmuFailure>,
    module: &'a Checked,
    opts: kir_ptx_emu::Options,
}

impl<'a> PtxEmulator<'a> {
    /// `program` must be [`EmuProgram::new`] of `module`.
    pub fn new(
        program: &'a Result<EmuProgram, EmuFailure>,
        module: &'a Checked,
        opts: kir_ptx_emu::Options,
    ) -> PtxEmulator<'a> {
        PtxEmulator { program, module, opts }
    }
}

impl Engine for PtxEmulator<'_> {
    fn name(&self) -> &'static str {
        "ptx-emu"
    }

    fn run(&mut self, what: &Launch<'_>, inputs: &Inputs<'_>) -> Result<Vec<Buffer>, EngineError> {
        let p = self.program.as_ref().map_err(|e| EngineError::Emu(e.clone()))?;
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
                let g = self.module.graph(name).ok_or_else(|| no_target("graph", name))?;
                emu_exec::run_graph(
                    &p.loaded,
                    &p.ptx,
                    self.module,
                    g,
                    inputs.args,
                    inputs.buffers,
                    inputs.names,
                    &self.opts,
                )?
            }
        };
        Ok(run.buffers)
    }
}

/// A GPU (through a [`GpuExec`] runner) running a checked module's kernels, emitted for the
/// device's own target.
pub struct Gpu<'a> {
    runner: &'a mut dyn GpuExec,
    module: &'a Checked,
    sm: Option<SmVersion>,
}

impl<'a> Gpu<'a> {
    pub fn new(runner: &'a mut dyn GpuExec, module: &'a Checked) -> Gpu<'a> {
        Gpu { runner, module, sm: None }
    }

    /// The PTX target of the device ([`gpu_exec::sm_for`] its compute capability), asked once.
    fn sm(&mut self) -> Result<SmVersion, EngineError> {
        if let Some(sm) = self.sm {
            return Ok(sm);
        }
        let cc = self.runner.compute_capability().map_err(|e| EngineError::Gpu(format!("GPU: {e}")))?;
        let sm = gpu_exec::sm_for(cc).map_err(EngineError::Gpu)?;
        self.sm = Some(sm);
        Ok(sm)
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
                let k = self.module.kernel(name).ok_or_else(|| no_target("kernel", name))?;
                let ptx = gpu_exec::ptx_in_module(self.module, k, sm).map_err(EngineError::Gpu)?;
                gpu_exec::run_kernel(self.runner, k, &ptx, cfg, inputs.args, inputs.buffers).map_err(EngineError::Gpu)
            }
            Launch::Graph { name } => {
                let g = self.module.graph(name).ok_or_else(|| no_target("graph", name))?;
                gpu_exec::run_graph(self.runner, sm, self.module, g, inputs.args, inputs.buffers)
                    .map_err(EngineError::Gpu)
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
}
