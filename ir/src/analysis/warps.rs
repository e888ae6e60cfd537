//! Whole warps: the launch precondition of warp collectives.
//!
//! A `shfl` or `vote` whose member mask is the constant full mask `0xffffffff` names all 32 lanes
//! of its warp; `mma` and `ldmatrix` always do (PTX's `.sync.aligned` on the whole warp). In a block whose thread count is not a multiple of 32 the last warp is partial,
//! and the mask names lanes that do not exist: the collective faults (the interpreter and the PTX
//! emulator) or is undefined (the GPU), whatever the control flow. Barrier verification proves
//! only that the lanes of a warp reach such a collective together; that the warp has 32 lanes is
//! a property of the launch, so it is this module's precondition, checked by every launch path.
//! Collectives with other masks are proven by barrier verification for warps of 32 lanes when
//! the kernel declares no `reqntid` (`kir_passes::collective_masks`), so they need whole warps
//! too; with `reqntid` they are proven for that exact shape, partial last warp included.
//!
//! Guarantees:
//! - [`first_whole_warp_collective`] finds, in layout order, the first collective of a kernel,
//!   else of the functions it reaches (by name, through [`reached_funcs`], in module order), that
//!   needs whole warps: one with the full mask; or any one, when the kernel declares neither
//!   `reqntid` nor `assume_masks()` (whose masks are then the author's responsibility).
//! - [`whole_warps_violation`] is `Some` exactly when such a collective exists and the block's
//!   thread count `x * y * z` is not a multiple of 32 (warps are formed from the linear thread
//!   index, so only the product matters). The interpreter (`kir_interp`), `kir test`'s PTX-emulator
//!   and GPU rows, and `kir run` refuse such a launch before running it, naming the collective.
//! - A kernel that declares `reqntid` with a thread count that is not a multiple of 32 and has a
//!   full-mask collective is rejected statically by barrier verification (`kir check`).

use crate::analysis::callgraph::reached_funcs;
use crate::ir::{InstId, Kernel, Operand};
use crate::op::Op;
use crate::span::Span;

/// A warp collective that needs whole warps: the body it is in (a kernel or a device function),
/// the instruction, its mnemonic, source span and member mask (`None`: not a constant).
#[derive(Clone, Debug)]
pub struct WarpCollective<'a> {
    pub body: &'a Kernel,
    pub inst: InstId,
    pub mnemonic: String,
    pub span: Span,
    pub mask: Option<u32>,
    /// An op that always needs the whole warp (`mma`, `ldmatrix`), whatever any mask.
    pub whole_warp_op: bool,
}

impl WarpCollective<'_> {
    /// `member mask 0xffffffff names all 32 lanes of a warp`, or why another mask needs them.
    pub fn why(&self) -> String {
        if self.whole_warp_op {
            return "needs all 32 lanes of a warp".into();
        }
        match self.mask {
            Some(u32::MAX) => "with member mask 0xffffffff names all 32 lanes of a warp".into(),
            Some(m) => format!("with member mask {m:#010x} is verified for warps of 32 lanes only (no `reqntid`)"),
            None => "with a computed member mask is verified for warps of 32 lanes only (no `reqntid`)".into(),
        }
    }
}

/// A launch that breaks the whole-warps precondition: the collective that needs it, the block's
/// thread count and the lanes of its last (partial) warp.
#[derive(Clone, Debug)]
pub struct WholeWarpsViolation<'a> {
    pub collective: WarpCollective<'a>,
    pub threads: u64,
    pub last_warp: u64,
    pub last_warp_lanes: u64,
}

impl WholeWarpsViolation<'_> {
    /// The message a refused launch carries, e.g. "kernel @k needs whole warps: its `shfl.down.f32`
    /// with member mask 0xffffffff names all 32 lanes of a warp, but block (48, 1, 1) has 48
    /// threads, so warp 1 has only 16 lanes".
    pub fn message(&self, kernel: &Kernel, block: [u32; 3]) -> String {
        let c = &self.collective;
        let wherein =
            if std::ptr::eq(c.body, kernel) { String::new() } else { format!(" (in function @{})", c.body.name) };
        format!(
            "kernel @{} needs whole warps: its `{}`{wherein} {}, but block ({}, {}, {}) has {} threads, so warp {} has \
             only {} lane{}",
            kernel.name,
            c.mnemonic,
            c.why(),
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
    pub const HINT: &'static str = "launch a block whose thread count is a multiple of 32; declaring `reqntid(N)` \
         states the shape (with a member mask other than 0xffffffff, `reqntid` with a partial last warp is verified \
         for that shape)";
}

/// Whether a `shfl` / `vote` instruction's member mask is the constant full mask, or the op always
/// runs on the whole warp (`mma`, `ldmatrix`: [`Op::needs_whole_warp`]).
pub fn is_full_mask_collective(op: Op, args: &[Operand]) -> bool {
    if op.needs_whole_warp() {
        return true;
    }
    let mask = match op {
        Op::Shfl(..) => args.get(2),
        Op::Vote(_) => args.get(1),
        _ => None,
    };
    matches!(mask, Some(Operand::Const(c)) if c.bits & 0xffff_ffff == 0xffff_ffff)
}

fn first_in(body: &Kernel, any_mask: bool) -> Option<WarpCollective<'_>> {
    body.placed_insts().find_map(|(_, i)| {
        let inst = body.insts.get(i.index())?;
        if !inst.op.is_warp_collective() {
            return None;
        }
        let full = is_full_mask_collective(inst.op, &inst.args);
        if !full && !any_mask {
            return None;
        }
        let at = if matches!(inst.op, Op::Shfl(..)) { 2 } else { 1 };
        let whole_warp_op = inst.op.needs_whole_warp();
        let mask = match inst.args.get(at) {
            _ if whole_warp_op => Some(u32::MAX),
            Some(Operand::Const(c)) => Some(c.bits as u32),
            _ => None,
        };
        Some(WarpCollective { body, inst: i, mnemonic: inst.op.mnemonic(), span: inst.span, mask, whole_warp_op })
    })
}

/// The first full-mask collective of `kernel`, else of the functions of `funcs` it reaches.
pub fn first_full_mask_collective<'a>(funcs: &'a [Kernel], kernel: &'a Kernel) -> Option<WarpCollective<'a>> {
    first_in(kernel, false)
        .or_else(|| reached_funcs(funcs, [kernel]).into_iter().find_map(|i| first_in(&funcs[i], false)))
}

/// The first collective of `kernel` (else of the functions of `funcs` it reaches) that needs whole
/// warps: a full-mask one, else, when the kernel declares neither `reqntid` nor `assume_masks()`,
/// any one.
pub fn first_whole_warp_collective<'a>(funcs: &'a [Kernel], kernel: &'a Kernel) -> Option<WarpCollective<'a>> {
    first_full_mask_collective(funcs, kernel).or_else(|| {
        if kernel.reqntid.is_some() || kernel.assume_masks.is_some() {
            return None;
        }
        first_in(kernel, true)
            .or_else(|| reached_funcs(funcs, [kernel]).into_iter().find_map(|i| first_in(&funcs[i], true)))
    })
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
    let collective = first_whole_warp_collective(funcs, kernel)?;
    Some(WholeWarpsViolation { collective, threads, last_warp: threads / 32, last_warp_lanes: threads % 32 })
}
