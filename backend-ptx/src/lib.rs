//! kir-backend-ptx: emits NVIDIA PTX for verified kir kernels, runs `ptxas` on it, and (on a
//! machine with a CUDA driver) loads and launches it.
//!
//! Guarantees:
//! - [`emit_module`] and [`emit_kernel_in_module`] take a [`Checked`] module (validity is in the
//!   type: [`kir_ir::verify::check`] ran the verifier and barrier verification; nothing is
//!   re-checked, and there is no entry point for an unchecked body). Neither panics.
//! - The output is one PTX module: `.version 8.0`, `.target sm_XX`, `.address_size 64`, then one
//!   `.func` per device function that an emitted kernel calls, directly or not (the functions of a
//!   module stay in it after inlining, and an imported library brings functions nothing calls:
//!   those are left out), each after every function it calls (so each is defined before any call
//!   names it), then one `.visible .entry` per kernel with the kernel's name (`.` in kir
//!   names becomes `$`). It is a pure function of the module and the options: byte-for-byte
//!   deterministic. A kernel declaring `reqntid(x, y, z)` gets `.reqntid x, y, z` after its
//!   parameter list (the driver then refuses launches with another block shape, as the
//!   interpreter does). Functions use the PTX calling convention NVRTC uses for non-inlined
//!   `__device__` functions ([`emit`] has the details); the default pass pipeline inlines every
//!   call, so they appear only when the module is emitted as written.
//! - The emitted code computes what `kir_ir::eval` and the interpreter compute (see
//!   [`lower`] for the per-op rules, e.g. explicit rounding on every exact float op so ptxas cannot
//!   contract `mul`+`add` into an `fma`).
//!
//! Representation choices:
//! - One PTX virtual register per SSA value or vector element ([`regs`]), assigned before emission
//!   ([`assign`]: a latch argument shares its parameter's registers, an element `vec`/`extract`/
//!   `insert` passes on names its source's register); ptxas allocates physical registers. Block
//!   parameters are assigned by parallel copies on incoming edges ([`pcopy`], [`emit`]).
//! - Global pointers arrive as `.param .u64`, converted once with `cvta.to.global`, and are used
//!   with `ld.global`/`st.global`/`atom.global`.
//! - Shared memory: each `shared @s: T[N]` is a function-scope `.shared .align A .b8
//!   <kernel>$smem$<s>[bytes]`; dynamic shared memory (`T[]`) is a module-scope `.extern .shared`
//!   array. A kir `ptr<shared, T>` is the 64-bit address in the shared window (`mov.u64 %rd, sym`),
//!   no `cvta`: it is used only with `.shared` instructions (`ld`/`st`/`atom.shared`, and as is by
//!   `ldmatrix...shared.b16` and as the destination of `cp.async...shared.global`, which take a
//!   `.shared` address in a 64-bit register; ptxas accepts that for sm_80 and sm_90).
//! - A vector `vec<N, T>` is N PTX registers of `T`'s class, one per element ([`regs`]); vector
//!   block parameters move element by element on edges; `vec`/`extract`/`insert` are `mov`s only
//!   where an element cannot name its source's register ([`assign`]), usually none;
//!   `load.vN`/`store.vN` are one `ld`/`st` `.vN`; `mma`, `ldmatrix` and `cp.async` are one PTX
//!   instruction each, `mma.sync` (sm_80) and `cp.async` (sm_80, PTX ISA 7.0) being available on
//!   every target kir emits for (sm_80 and later, PTX ISA 8.0).
//!
//! - NaN float constants are never immediates: each body declares a module-scope `.const`
//!   variable per NaN it uses (`BODY$nan$TYPE$BITS`) and loads it with `ld.const`. ptxas folds NaN
//!   immediates as if their sign and payload did not matter (on an H100, `x - 0d7FF8000000000001`
//!   gave `0xFFF8000000000001`; with the NaN in a register, the GPU returns it unchanged, as the
//!   interpreter does). An f64 `add`/`sub`/`mul`/`min`/`max`/`fma` whose first operand is a NaN
//!   constant is computed explicitly (`testp`, `selp`): ptxas encodes a constant as the machine
//!   instruction's later operand, which the H100 lets win over a NaN value (see [`lower`]).
//!   `tests/hardware/h100/nan_constants/` holds what the GPU computes.
//! - An f64 `add`/`sub`/`mul`/`min`/`max`/`fma` with two operands that may hold different NaNs
//!   first replaces `a` by the NaN kir's order makes win (`testp`, `selp`: [`nan_order`]), so the
//!   result does not depend on the order in which ptxas puts commutative operands.
//!
//! Tools: [`tools`] finds and runs `ptxas` (installed by `scripts/setup-tools.sh`); [`gpu`] lists
//! CUDA devices and runs kernels through the driver API (cudarc, loaded dynamically: without a
//! driver it reports "no CUDA driver found" instead of failing to start); [`driver_lib`] selects
//! the driver library (`KIR_CUDA_DRIVER`: the system's, kir's emulated one, or a path). Those two
//! modules are the `gpu` feature (on by default); `--no-default-features` builds the emitter and
//! `tools` alone, without cudarc.

pub mod assign;
#[cfg(feature = "gpu")]
pub mod driver_lib;
pub mod emit;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod imm;
pub mod lower;
pub mod nan_order;
pub mod nvrtc;
pub mod pcopy;
pub mod regs;
pub mod tools;

use kir_ir::analysis::callgraph::reached_funcs;
use kir_ir::verify::Checked;
use kir_ir::{Diagnostic, Kernel, Module};

/// The GPU architecture the PTX targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum SmVersion {
    #[default]
    Sm80,
    Sm86,
    Sm89,
    Sm90,
}

impl SmVersion {
    pub const ALL: [SmVersion; 4] = [SmVersion::Sm80, SmVersion::Sm86, SmVersion::Sm89, SmVersion::Sm90];

    /// `sm_80`, ...
    pub fn name(self) -> &'static str {
        match self {
            SmVersion::Sm80 => "sm_80",
            SmVersion::Sm86 => "sm_86",
            SmVersion::Sm89 => "sm_89",
            SmVersion::Sm90 => "sm_90",
        }
    }

    /// Parses `sm_80`, `80`, `sm80`.
    pub fn from_name(s: &str) -> Option<SmVersion> {
        let digits = s.trim_start_matches("sm_").trim_start_matches("sm");
        SmVersion::ALL.iter().copied().find(|v| &v.name()[3..] == digits)
    }

    /// The compute capability, e.g. (8, 0).
    pub fn compute_capability(self) -> (u32, u32) {
        match self {
            SmVersion::Sm80 => (8, 0),
            SmVersion::Sm86 => (8, 6),
            SmVersion::Sm89 => (8, 9),
            SmVersion::Sm90 => (9, 0),
        }
    }
}

/// Options for PTX emission.
#[derive(Clone, Debug)]
pub struct PtxOptions {
    pub sm: SmVersion,
    /// The `.kir` source the module was parsed from; when given, instruction comments carry its
    /// line numbers.
    pub source: Option<String>,
    /// Emit a comment with the kir instruction before each instruction group (default: true).
    pub comments: bool,
}

impl Default for PtxOptions {
    fn default() -> Self {
        PtxOptions { sm: SmVersion::Sm80, source: None, comments: true }
    }
}

impl PtxOptions {
    pub fn new(sm: SmVersion) -> PtxOptions {
        PtxOptions { sm, ..PtxOptions::default() }
    }
}

/// The PTX version the module declares (every feature used exists in PTX ISA 8.0: `mma.sync`
/// m16n8k16/m16n8k8 and `cp.async` since 7.0, `ldmatrix` since 6.5).
pub const PTX_VERSION: &str = "8.0";

fn header(opts: &PtxOptions) -> String {
    format!(
        "//\n// Generated by kir (kir-backend-ptx)\n//\n\n.version {PTX_VERSION}\n.target {}\n.address_size 64\n",
        opts.sm.name()
    )
}

/// Emits the PTX module for every kernel of `m` and every device function they call (directly or
/// not; a function no kernel calls, such as the rest of an imported library, is left out).
pub fn emit_module(m: &Checked, opts: &PtxOptions) -> Result<String, Vec<Diagnostic>> {
    let order = func_order(m, reached_funcs(&m.funcs, &m.kernels))?;
    emit_verified(m, &order, m.kernels.iter(), opts)
}

/// Emits a PTX module holding kernel `kernel` of `m` (the name without `@`) and the functions it
/// calls, directly or not.
pub fn emit_kernel_in_module(m: &Checked, kernel: &str, opts: &PtxOptions) -> Result<String, Vec<Diagnostic>> {
    let Some(k) = m.kernel(kernel) else {
        return Err(vec![Diagnostic::error(format!("no kernel `@{kernel}` in the module"))]);
    };
    let order = func_order(m, reached_funcs(&m.funcs, [k]))?;
    emit_verified(m, &order, std::iter::once(k), opts)
}

/// `wanted` (indices into `m.funcs`) in an order where each function comes after the functions it
/// calls (PTX wants a `.func` declared before a call names it); an error on a call cycle.
fn func_order(m: &Module, wanted: Vec<usize>) -> Result<Vec<usize>, Vec<Diagnostic>> {
    if wanted.is_empty() {
        return Ok(wanted);
    }
    match kir_ir::analysis::callgraph::callee_order(m) {
        Ok(order) => {
            let mut want = vec![false; m.funcs.len()];
            wanted.iter().for_each(|&i| want[i] = true);
            Ok(order.into_iter().filter(|&i| want[i]).collect())
        }
        Err(cycle) => {
            let names: Vec<String> = cycle.iter().map(|(f, _)| format!("`@{}`", m.funcs[*f].name)).collect();
            Err(vec![Diagnostic::error(format!("recursive functions cannot be emitted: {}", names.join(" -> ")))])
        }
    }
}

/// Emits the functions `funcs` (indices into `m.funcs`, callees first), then `kernels`.
fn emit_verified<'k>(
    m: &'k Module,
    funcs: &[usize],
    kernels: impl Iterator<Item = &'k Kernel>,
    opts: &PtxOptions,
) -> Result<String, Vec<Diagnostic>> {
    let lines = opts.source.as_deref().map(emit::LineIndex::new);
    let table = emit::FuncTable::new(m);
    let mut out = header(opts);
    let mut diags = Vec::new();
    for k in funcs.iter().filter_map(|&i| m.funcs.get(i)).chain(kernels) {
        match emit::KernelEmitter::new(k, opts, lines.as_ref(), &table).emit() {
            Ok(s) => out.push_str(&s),
            Err(d) => diags.extend(d),
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}
