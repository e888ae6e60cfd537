//! Whole warps: the launch precondition of full-mask warp collectives.
//!
//! A `shfl` or `vote` whose member mask is the constant full mask `0xffffffff` names all 32 lanes
//! of its warp. In a block whose thread count is not a multiple of 32 the last warp is partial,
//! and the mask names lanes that do not exist: the collective faults (the interpreter and the PTX
//! emulator) or is undefined (the GPU), whatever the control flow. Barrier verification proves
//! only that the lanes of a warp reach such a collective together; that the warp has 32 lanes is
//! a property of the launch, so it is this module's precondition, checked by every launch path.
//!
//! Guarantees:
//! - [`first_full_mask_collective`] finds, in layout order, the first full-mask collective of a
//!   kernel, else of the functions it reaches (by name, through [`reached_funcs`], in module
//!   order): the kernel then needs whole warps.
//! - [`whole_warps_violation`] is `Some` exactly when such a collective exists and the block's
//!   thread count `x * y * z` is not a multiple of 32 (warps are formed from the linear thread
//!   index, so only the product matters). The interpreter (`kir_interp`), `kir test`'s PTX-emulator
//!   and GPU rows, and `kir run` refuse such a launch before running it, naming the collective.
//! - A kernel that declares `reqntid` with a thread count that is not a multiple of 32 and has a
//!   full-mask collective is rejected statically by barrier verification (`kir check`).
//! - Collectives with other member masks impose nothing here: barrier verification proves them
//!   for every last-warp size (see `kir_passes::barrier`).

use crate::analysis::callgraph::reached_funcs;
use crate::ir::{InstId, Kernel, Operand};
use crate::op::Op;
use crate::span::Span;

/// A full-mask warp collective: the body it is in (a kernel or a device function), the
/// instruction, its mnemonic and source span.
#[derive(Clone, Debug)]
pub struct FullMaskCollective<'a> {
    pub body: &'a Kernel,
    pub inst: InstId,
    pub mnemonic: String,
    pub span: Span,
}

/// A launch that breaks the whole-warps precondition: the collective that needs it, the block's
/// thread count and the lanes of its last (partial) warp.
#[derive(Clone, Debug)]
pub struct WholeWarpsViolation<'a> {
    pub collective: FullMaskCollective<'a>,
    pub threads: u64,
    pub last_warp: u64,
    pub last_warp_lanes: u64,
}

impl WholeWarpsViolation<'_> {
    /// The message a refused launch carries, e.g. "kernel @k needs whole warps: its `shfl.down`
    /// with member mask 0xffffffff names all 32 lanes of a warp, but block (48, 1, 1) has 48
    /// threads, so warp 1 has only 16 lanes".
    pub fn message(&self, kernel: &Kernel, block: [u32; 3]) -> String {
        let c = &self.collective;
        let wherein =
            if std::ptr::eq(c.body, kernel) { String::new() } else { format!(" (in function @{})", c.body.name) };
        format!(
            "kernel @{} needs whole warps: its `{}`{wherein} with member mask 0xffffffff names all 32 lanes of a warp, \
             but block ({}, {}, {}) has {} threads, so warp {} has only {} lane{}",
            kernel.name,
            c.mnemonic,
            block[0],
            block[1],
            block[2],
            self.threads,
            self.last_warp,
            self.last_warp_lanes,
            if self.last_warp_lanes == 1 { "" } else { "s" }
        )
    }

    /// What to do about it.
    pub const HINT: &'static str = "launch a block whose thread count is a multiple of 32, or use a member mask \
         that names only the lanes that exist; declaring `reqntid(N)` with N a multiple of 32 states the shape";
}

/// Whether a `shfl` / `vote` instruction's member mask is the constant full mask.
pub fn is_full_mask_collective(op: Op, args: &[Operand]) -> bool {
    let mask = match op {
        Op::Shfl(..) => args.get(2),
        Op::Vote(_) => args.get(1),
        _ => None,
    };
    matches!(mask, Some(Operand::Const(c)) if c.bits & 0xffff_ffff == 0xffff_ffff)
}

fn first_in(body: &Kernel) -> Option<FullMaskCollective<'_>> {
    body.placed_insts().find_map(|(_, i)| {
        let inst = body.insts.get(i.index())?;
        if !is_full_mask_collective(inst.op, &inst.args) {
            return None;
        }
        let mnemonic = inst.op.mnemonic();
        Some(FullMaskCollective { body, inst: i, mnemonic, span: inst.span })
    })
}

/// The first full-mask collective of `kernel`, else of the functions of `funcs` it reaches.
pub fn first_full_mask_collective<'a>(funcs: &'a [Kernel], kernel: &'a Kernel) -> Option<FullMaskCollective<'a>> {
    first_in(kernel).or_else(|| reached_funcs(funcs, [kernel]).into_iter().find_map(|i| first_in(&funcs[i])))
}

/// `Some` when launching `kernel` (its calls resolved in `funcs`) with `block` breaks the
/// whole-warps precondition.
pub fn whole_warps_violation<'a>(
    funcs: &'a [Kernel],
    kernel: &'a Kernel,
    block: [u32; 3],
) -> Option<WholeWarpsViolation<'a>> {
    let threads = block.iter().map(|&d| d as u64).product::<u64>();
    if threads % 32 == 0 {
        return None;
    }
    let collective = first_full_mask_collective(funcs, kernel)?;
    Some(WholeWarpsViolation { collective, threads, last_warp: threads / 32, last_warp_lanes: threads % 32 })
}
