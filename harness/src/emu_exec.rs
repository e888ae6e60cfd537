//! Running a kernel (or a launch graph) in the PTX emulator ([`kir_ptx_emu`]) with exactly the
//! arguments and buffers the interpreter got, for `kir test`, `kir diff --against ptx-emu` and
//! `kir fuzz` — the emulator's counterpart of [`crate::gpu_exec`].
//!
//! Guarantees:
//! - The emulator receives the same bytes the interpreter does: every buffer's initial contents
//!   (each buffer its own allocation in one emulated global memory) and every scalar's
//!   little-endian bits (`pred` as one byte 0/1), in parameter order. Passing one buffer to two
//!   parameters is allowed (both get its address), as in the interpreter.
//! - [`run_kernel`] and [`run_graph`] return every buffer after the run in the order of the
//!   interpreter's buffer list, with its element type, so the two engines' results compare index
//!   by index with [`crate::compare::compare_buffers`]. Buffers no argument refers to come back
//!   unchanged.
//! - [`run_graph`] runs a graph's launches in order, planned by [`kir_interp::graph::plan_graph`]
//!   exactly as the interpreter runs them, over the caller's buffers and the graph's zero-filled
//!   temporaries, all in one memory that lives for the whole graph.
//! - Every problem is an [`EmuFailure`], never a panic: PTX the emulator cannot load (with the PTX
//!   line and column), a kernel fault (with the PTX line, the instruction, the block and the
//!   thread, and — when the PTX carries kir's `// LINE: ...` comments — the `.kir` line it came
//!   from), or an invalid launch.

use kir_backend_ptx::{emit_module, PtxOptions, SmVersion};
use kir_interp::{Arg, Buffer, LaunchConfig};
use kir_ir::graph::Graph;
use kir_ir::Module;
use kir_ptx_emu as emu;
use std::fmt;

/// The target kir's PTX is emitted for when it runs in the emulator (the one `kir ptx` defaults to).
pub const EMU_SM: SmVersion = SmVersion::Sm80;

/// What kind of problem an emulator run had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureClass {
    /// The emulator cannot load the PTX (syntax, or an instruction it does not implement).
    Load,
    /// The kernel faulted in the emulator.
    Fault(emu::FaultKind),
    /// The launch was refused (argument count or size, launch shape, shared memory).
    InvalidLaunch,
    /// The buffers could not be set up (e.g. too large).
    Setup,
}

/// A failed emulator run, with a message that locates it.
#[derive(Clone, Debug, PartialEq)]
pub struct EmuFailure {
    pub class: FailureClass,
    /// What went wrong, for humans; for faults it names the PTX line, instruction, block and thread.
    pub message: String,
    /// The PTX line of the faulting instruction, or of the load error.
    pub ptx_line: Option<u32>,
    /// The emulator's own error, for launch failures (fault kind, coordinates, instruction).
    pub emu_error: Option<Box<emu::EmuError>>,
}

impl EmuFailure {
    fn setup(message: impl Into<String>) -> EmuFailure {
        EmuFailure { class: FailureClass::Setup, message: message.into(), ptx_line: None, emu_error: None }
    }

    /// A short name of the kind of failure (`out-of-bounds access`, `PTX not loaded`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self.class {
            FailureClass::Load => "PTX not loaded",
            FailureClass::Fault(k) => k.name(),
            FailureClass::InvalidLaunch => "invalid launch",
            FailureClass::Setup => "setup",
        }
    }
}

impl fmt::Display for EmuFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

/// The PTX of every kernel of `m` for the emulator: [`EMU_SM`], with kir's instruction comments
/// (carrying `.kir` line numbers when `source` is the text `m` was parsed from).
pub fn module_ptx(m: &kir_ir::verify::Checked, source: Option<&str>) -> Result<String, String> {
    let opts = PtxOptions { sm: EMU_SM, source: source.map(str::to_string), comments: true };
    emit_module(m, &opts).map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "))
}

/// The text of 1-based line `line` of `text`, trimmed (empty when there is no such line).
pub fn line_text(text: &str, line: u32) -> &str {
    text.lines().nth((line as usize).saturating_sub(1)).map(str::trim).unwrap_or("")
}

/// The `.kir` line an instruction at PTX line `ptx_line` was emitted for: the nearest kir comment
/// (`// LINE: text`) above it within the same entry, as `(LINE, text)`.
pub fn kir_line_of(ptx: &str, ptx_line: u32) -> Option<(u32, String)> {
    let lines: Vec<&str> = ptx.lines().take(ptx_line as usize).collect();
    for l in lines.iter().rev().skip(1) {
        let t = l.trim();
        if t.starts_with(".visible") || t.starts_with(".entry") || t == "{" {
            return None;
        }
        if let Some(c) = t.strip_prefix("// ") {
            if let Some((n, rest)) = c.split_once(": ") {
                if let Ok(n) = n.parse::<u32>() {
                    return Some((n, rest.to_string()));
                }
            }
        }
    }
    None
}

/// Loads PTX text into the emulator; an error names the PTX line and column and quotes the line.
pub fn load(ptx: &str) -> Result<emu::Module, EmuFailure> {
    emu::Module::parse(ptx).map_err(|e| EmuFailure {
        class: FailureClass::Load,
        message: format!(
            "the emulator cannot load the PTX: PTX line {}:{}: {} (`{}`)",
            e.line,
            e.col,
            e.message,
            line_text(ptx, e.line)
        ),
        ptx_line: Some(e.line),
        emu_error: None,
    })
}

/// An [`emu::EmuError`] as a failure; `ptx` (the text the module was loaded from) adds the `.kir`
/// line of a faulting instruction when the PTX has kir's comments.
pub fn launch_failure(e: &emu::EmuError, ptx: Option<&str>) -> EmuFailure {
    let class = match e.kind {
        emu::ErrorKind::Fault(k) => FailureClass::Fault(k),
        emu::ErrorKind::InvalidLaunch => FailureClass::InvalidLaunch,
    };
    let mut message = format!("ptx-emu: {e}");
    if let (Some(line), Some(text)) = (e.line, ptx) {
        if let Some((kl, kt)) = kir_line_of(text, line) {
            message.push_str(&format!(" (emitted for .kir line {kl}: `{kt}`)"));
        }
    }
    EmuFailure { class, message, ptx_line: e.line, emu_error: Some(Box::new(e.clone())) }
}

/// An emulator run's results: the buffers after it and what it did.
#[derive(Clone, Debug)]
pub struct EmuRun {
    /// The caller's buffers after the run, in their order and element types.
    pub buffers: Vec<Buffer>,
    pub stats: emu::Stats,
}

/// One emulated memory holding `buffers` (named by `names`, else `buffer N`).
fn memory_of(buffers: &[Buffer], names: &[String]) -> Result<(emu::Memory, Vec<emu::BufferId>), EmuFailure> {
    let mut mem = emu::Memory::new();
    let mut ids = Vec::with_capacity(buffers.len());
    for (i, b) in buffers.iter().enumerate() {
        let name = names.get(i).cloned().unwrap_or_else(|| format!("buffer {i}"));
        ids.push(mem.alloc(name, &b.bytes).map_err(EmuFailure::setup)?);
    }
    Ok((mem, ids))
}

/// The emulator's arguments for interpreter arguments over buffers `ids`.
fn emu_args(args: &[Arg], ids: &[emu::BufferId]) -> Result<Vec<emu::Arg>, EmuFailure> {
    args.iter()
        .map(|a| match *a {
            Arg::Scalar(c) => {
                let bits = if c.ty.is_pred() { (c.bits != 0) as u64 } else { c.bits };
                Ok(emu::Arg::Scalar(bits))
            }
            Arg::Buffer(i) => ids
                .get(i)
                .map(|id| emu::Arg::Buffer(*id))
                .ok_or_else(|| EmuFailure::setup(format!("argument names buffer {i}, but there are {}", ids.len()))),
        })
        .collect()
}

/// The buffers of `mem` (`ids`), typed like `like`.
fn read_back(mem: &emu::Memory, ids: &[emu::BufferId], like: &[Buffer]) -> Result<Vec<Buffer>, EmuFailure> {
    ids.iter()
        .zip(like)
        .map(|(id, b)| {
            let bytes = mem.bytes(*id).map_err(EmuFailure::setup)?;
            Ok(Buffer { elem: b.elem, bytes: bytes.to_vec() })
        })
        .collect()
}

fn emu_cfg(cfg: &LaunchConfig) -> emu::LaunchConfig {
    emu::LaunchConfig { grid: cfg.grid, block: cfg.block, dynamic_shared_bytes: cfg.dynamic_shared_bytes }
}

fn add_stats(a: emu::Stats, b: emu::Stats) -> emu::Stats {
    emu::Stats {
        thread_instructions: a.thread_instructions + b.thread_instructions,
        warp_instructions: a.warp_instructions + b.warp_instructions,
        global_bytes_read: a.global_bytes_read + b.global_bytes_read,
        global_bytes_written: a.global_bytes_written + b.global_bytes_written,
        global_load_instructions: a.global_load_instructions + b.global_load_instructions,
        global_store_instructions: a.global_store_instructions + b.global_store_instructions,
        barriers: a.barriers + b.barriers,
        blocks: a.blocks + b.blocks,
        threads: a.threads + b.threads,
    }
}

/// Runs entry `entry` of `module` (loaded from `ptx`) once with the interpreter's arguments over
/// copies of `buffers` (named `names` in fault messages); returns all of them after the run.
#[allow(clippy::too_many_arguments)]
pub fn run_kernel(
    module: &emu::Module,
    ptx: &str,
    entry: &str,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &[Buffer],
    names: &[String],
    opts: &emu::Options,
) -> Result<EmuRun, EmuFailure> {
    let (mut mem, ids) = memory_of(buffers, names)?;
    let eargs = emu_args(args, &ids)?;
    let stats =
        emu::launch(module, entry, &emu_cfg(cfg), &eargs, &mut mem, opts).map_err(|e| launch_failure(&e, Some(ptx)))?;
    Ok(EmuRun { buffers: read_back(&mem, &ids, buffers)?, stats })
}

/// Runs graph `g` of `m` in the emulator, every launch an entry of `module` (the PTX of `m`,
/// loaded from `ptx`), over `buffers` (one per buffer parameter, as
/// [`kir_interp::graph::bind_graph`] made them, named `names`) and the graph's temporaries;
/// returns the caller's buffers after the graph. A failure names the launch.
#[allow(clippy::too_many_arguments)]
pub fn run_graph(
    module: &emu::Module,
    ptx: &str,
    m: &Module,
    g: &Graph,
    args: &[Arg],
    buffers: &[Buffer],
    names: &[String],
    opts: &emu::Options,
) -> Result<EmuRun, EmuFailure> {
    let user = buffers.len();
    let plan = kir_interp::graph::plan_graph(m, g, args, user).map_err(|e| EmuFailure {
        class: FailureClass::InvalidLaunch,
        message: e.to_string(),
        ptx_line: None,
        emu_error: None,
    })?;
    let mut all: Vec<Buffer> = buffers.to_vec();
    all.extend(plan.temps);
    let mut all_names: Vec<String> =
        (0..user).map(|i| names.get(i).cloned().unwrap_or(format!("buffer {i}"))).collect();
    all_names.extend(g.temps.iter().map(|t| t.name.clone()));
    let (mut mem, ids) = memory_of(&all, &all_names)?;
    let mut stats = emu::Stats::default();
    for pl in &plan.launches {
        let at = |mut f: EmuFailure| {
            f.message = format!("{} ({})", f.message, pl.where_(g));
            f
        };
        let eargs = emu_args(&pl.args, &ids).map_err(at)?;
        let entry = kir::api::ptx_entry_name(&pl.kernel.name);
        let s = emu::launch(module, &entry, &emu_cfg(&pl.cfg), &eargs, &mut mem, opts)
            .map_err(|e| at(launch_failure(&e, Some(ptx))))?;
        stats = add_stats(stats, s);
    }
    Ok(EmuRun { buffers: read_back(&mem, &ids[..user], buffers)?, stats })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kir_ir::types::Constant;

    const OOB: &str = "kernel @k(%out: ptr<global, u32>, %n: u32) {\nentry:\n  %t = tid.x\n  %v = add.u32 %t, %n\n  store %out[%t], %v\n  ret\n}\n";

    fn setup(src: &str) -> (kir_ir::verify::Checked, String, emu::Module) {
        let m = kir_ir::verify::check(kir_ir::parse(src).unwrap_or_else(|d| panic!("{d:?}"))).unwrap();
        let ptx = module_ptx(&m, Some(src)).unwrap();
        let module = load(&ptx).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
        (m, ptx, module)
    }

    #[test]
    fn runs_with_the_interpreters_arguments_and_returns_typed_buffers() {
        let (m, ptx, module) = setup(OOB);
        let bufs = vec![Buffer::from_u32(&[9; 4]), Buffer::from_f32(&[1.5])];
        let args = [Arg::Buffer(0), Arg::Scalar(Constant::u32(10))];
        let cfg = LaunchConfig::linear(1, 4);
        let run = run_kernel(&module, &ptx, "k", &cfg, &args, &bufs, &[], &emu::Options::default()).unwrap();
        assert_eq!(run.buffers[0], Buffer::from_u32(&[10, 11, 12, 13]));
        assert_eq!(run.buffers[1], bufs[1], "an unused buffer comes back unchanged");
        assert_eq!(run.stats.blocks, 1);
        // The interpreter agrees.
        let mut ib = bufs.clone();
        let k = m.verified_kernel("k").unwrap();
        kir_interp::launch_verified(k, &cfg, &args, &mut ib, &kir_interp::Options::default()).unwrap();
        assert_eq!(ib, run.buffers);
    }

    #[test]
    fn faults_name_the_ptx_line_instruction_block_thread_and_kir_line() {
        let (_, ptx, module) = setup(OOB);
        let bufs = vec![Buffer::from_u32(&[0; 4])];
        let args = [Arg::Buffer(0), Arg::Scalar(Constant::u32(0))];
        let cfg = LaunchConfig::linear(1, 8);
        let names = ["out".to_string()];
        let e = run_kernel(&module, &ptx, "k", &cfg, &args, &bufs, &names, &emu::Options::default()).unwrap_err();
        assert_eq!(e.class, FailureClass::Fault(emu::FaultKind::OutOfBounds), "{e}");
        let line = e.ptx_line.expect("a PTX line");
        assert!(line_text(&ptx, line).starts_with("st.global.u32"), "{e}");
        assert!(e.message.contains(&format!("at PTX line {line} `st.global.u32")), "{e}");
        assert!(e.message.contains("in block (0, 0, 0) thread (4, 0, 0)"), "{e}");
        assert!(e.message.contains("(emitted for .kir line 5: `store %out[%t], %v`)"), "{e}");
        assert_eq!(e.kind_name(), "out-of-bounds access");
    }

    #[test]
    fn load_errors_and_bad_arguments_are_failures() {
        let e =
            load(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n  frobnicate.u32 %r1;\n}\n")
                .err()
                .expect("not loadable");
        assert_eq!(e.class, FailureClass::Load);
        assert_eq!(e.ptx_line, Some(6));
        assert!(e.message.contains("PTX line 6:") && e.message.contains("`frobnicate.u32 %r1;`"), "{e}");
        let (_, ptx, module) = setup(OOB);
        let cfg = LaunchConfig::linear(1, 1);
        let e =
            run_kernel(&module, &ptx, "k", &cfg, &[Arg::Buffer(3)], &[], &[], &emu::Options::default()).unwrap_err();
        assert_eq!(e.class, FailureClass::Setup);
        let e = run_kernel(&module, &ptx, "nope", &cfg, &[], &[], &[], &emu::Options::default()).unwrap_err();
        assert_eq!(e.class, FailureClass::InvalidLaunch, "{e}");
    }

    #[test]
    fn kir_lines_are_found_above_the_instruction_within_its_entry() {
        let ptx = ".visible .entry k(\n)\n{\n\t// 4: %t = tid.x\n\tmov.u32 %r0, %tid.x;\n\tadd.u32 %r1, %r0, 1;\n}\n";
        assert_eq!(kir_line_of(ptx, 6), Some((4, "%t = tid.x".to_string())));
        assert_eq!(kir_line_of(ptx, 4), None);
        assert_eq!(line_text(ptx, 5), "mov.u32 %r0, %tid.x;");
        assert_eq!(line_text(ptx, 99), "");
    }
}
