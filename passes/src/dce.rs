//! `dce`: dead code elimination.
//!
//! Guarantees:
//! - Removes every instruction without side effects ([`kir_ir::Op::has_side_effects`] is false)
//!   whose result does not, directly or through other instructions and block arguments, reach an
//!   instruction with side effects, a branch condition or, in a device function, a returned value
//!   (`ret %v`: the caller uses it); and every block parameter that is dead in the same sense,
//!   together with the matching argument on every edge into its block. Dead cycles through loop
//!   parameters (`%acc` feeding only `%acc.next`) are removed too.
//! - Keeps every instruction with side effects (stores, atomics, barriers, warp collectives, and
//!   `call`, whose callee may have any of those, even when its result is unused), every terminator
//!   and every block; the kernel's or function's observable behaviour is unchanged (loads may be
//!   removed: a load has no effect besides its result). Function parameters are never removed
//!   (callers pass them).
//! - Runs in time linear in the size of the kernel.

use crate::edit::{incoming_edges, retain_block_params, succ_call};
use crate::pass::{Pass, PassContext};
use kir_ir::{BlockId, Kernel, Operand, Terminator, ValueId};

pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    /// It removes instructions and block parameters (with their arguments), never a block or an edge.
    fn preserves_cfg(&self) -> bool {
        true
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let Liveness { flags, kept_if } = liveness(k);
        let is_live = |v: ValueId| flags.get(v.index()).is_none_or(|f| f & LIVE != 0);
        // Decided from the 4-byte summary the sweep left per instruction, without reading the
        // instruction arena a second time.
        let mut removed_insts = 0u64;
        for b in &mut k.blocks {
            let before = b.insts.len();
            b.insts.retain(|i| match kept_if.get(i.index()).copied() {
                Some(ALWAYS) => true,
                Some(NEVER) | None => false,
                Some(r) => is_live(ValueId(r)),
            });
            removed_insts += (before - b.insts.len()) as u64;
        }
        // Flags only for blocks that lose a parameter (an empty list keeps them all), and none at
        // all when every parameter is live.
        let dead_param = |b: &kir_ir::Block| !b.params.iter().all(|p| is_live(*p));
        let keep: Vec<Vec<bool>> = if k.blocks.iter().any(dead_param) {
            k.blocks
                .iter()
                .map(|b| if dead_param(b) { b.params.iter().map(|p| is_live(*p)).collect() } else { Vec::new() })
                .collect()
        } else {
            Vec::new()
        };
        let removed_params = retain_block_params(k, &keep) as u64;
        cx.stats.add("instructions removed", removed_insts);
        cx.stats.add("block params removed", removed_params);
        removed_insts > 0 || removed_params > 0
    }
}

/// The flag of [`Liveness::flags`] that marks a live value.
const LIVE: u8 = 1;
/// [`Liveness::kept_if`] of an instruction with side effects.
const ALWAYS: u32 = u32::MAX - 1;
/// [`Liveness::kept_if`] of an instruction with neither side effects nor a result, or not placed.
const NEVER: u32 = u32::MAX;

struct Liveness {
    /// One byte of flags per value; [`LIVE`] is set on the live ones.
    flags: Vec<u8>,
    /// Per instruction: [`ALWAYS`], [`NEVER`], or the value whose liveness decides it (its result).
    kept_if: Vec<u32>,
}

/// Which values are live: used by a side-effecting instruction or a branch condition, directly or
/// through live instructions and live block parameters.
///
/// One backward sweep over the layout does almost all the work with sequential memory access: an
/// instruction reached by the sweep whose result is already live (or that has side effects) marks
/// its operands, and a terminator marks the arguments it passes to live parameters of its
/// successors. A value that becomes live after the sweep has passed its definition (a use reached
/// through a back edge, a parameter of a block whose predecessor was already swept) goes on a work
/// list instead. Each instruction's operands are marked once, so this stays linear.
fn liveness(k: &Kernel) -> Liveness {
    // Two flags per value in one byte array (marking reads neither the value nor the instruction
    // arena): LIVE, and PASSED once the sweep has gone past the definition, for a block parameter
    // once it has swept the terminator of one of the block's predecessors. Kernel parameters and
    // results of unplaced instructions are never passed, and have nothing to mark.
    const PASSED: u8 = 2;
    let mut flags = vec![0u8; k.values.len()];
    // For each passed value, where it is defined (the instruction, or `PARAM_OF | block`), written
    // when the sweep passes it, so work items never read the value arena.
    const PARAM_OF: u32 = 1 << 31;
    let mut def_site = vec![u32::MAX; k.values.len()];
    let mut kept_if = vec![NEVER; k.insts.len()];
    let mut work: Vec<ValueId> = Vec::new();
    let mark = |o: Operand, flags: &mut Vec<u8>, work: &mut Vec<ValueId>| {
        let Operand::Value(v) = o else { return };
        let Some(f) = flags.get_mut(v.index()) else { return };
        if *f & LIVE != 0 {
            return;
        }
        *f |= LIVE;
        if *f & PASSED != 0 {
            work.push(v);
        }
    };
    // Built on the first work item that is a block parameter (a loop-carried one, usually).
    let mut incoming = None;
    for b in k.blocks.iter().rev() {
        match &b.term {
            Terminator::Br { cond, .. } => mark(*cond, &mut flags, &mut work),
            // A function's returned value is used by its caller.
            Terminator::Ret(Some(v)) => mark(*v, &mut flags, &mut work),
            _ => {}
        }
        for c in b.term.successors() {
            let Some(target) = k.blocks.get(c.block.index()) else { continue };
            for (&p, &a) in target.params.iter().zip(&c.args) {
                let Some(f) = flags.get_mut(p.index()) else { continue };
                *f |= PASSED;
                def_site[p.index()] = PARAM_OF | c.block.0;
                if *f & LIVE != 0 {
                    mark(a, &mut flags, &mut work);
                }
            }
        }
        for &i in b.insts.iter().rev() {
            let d = k.inst(i);
            let effects = d.op.has_side_effects();
            if let Some(slot) = kept_if.get_mut(i.index()) {
                *slot = match d.result {
                    _ if effects => ALWAYS,
                    Some(r) => r.0,
                    None => NEVER,
                };
            }
            let live = match d.result.filter(|r| r.index() < flags.len()) {
                Some(r) => {
                    flags[r.index()] |= PASSED;
                    def_site[r.index()] = i.0;
                    flags[r.index()] & LIVE != 0
                }
                None => false,
            };
            if live || effects {
                for &a in &d.args {
                    mark(a, &mut flags, &mut work);
                }
            }
        }
        // Work found so far belongs to definitions already passed; finish it now so the list
        // stays short.
        while let Some(v) = work.pop() {
            let site = def_site[v.index()];
            if site & PARAM_OF == 0 {
                if let Some(d) = k.insts.get(site as usize) {
                    for &a in &d.args {
                        mark(a, &mut flags, &mut work);
                    }
                }
                continue;
            }
            // Every edge into the block: those from predecessors not swept yet are marked again
            // when the sweep reaches them, which changes nothing.
            let target = BlockId(site & !PARAM_OF);
            let Some(n) = k.blocks.get(target.index()).and_then(|b| b.params.iter().position(|&p| p == v)) else {
                continue;
            };
            let incoming = incoming.get_or_insert_with(|| incoming_edges(k));
            for &(src, p) in incoming.get(target.index()).unwrap_or(&[]) {
                if let Some(&a) = succ_call(&k.block(src).term, p).and_then(|c| c.args.get(n)) {
                    mark(a, &mut flags, &mut work);
                }
            }
        }
    }
    Liveness { flags, kept_if }
}
