//! `dce`: dead code elimination.
//!
//! Guarantees:
//! - Removes every instruction without side effects ([`kir_ir::Op::has_side_effects`] is false)
//!   whose result does not, directly or through other instructions and block arguments, reach an
//!   instruction with side effects or a branch condition; and every block parameter that is dead
//!   in the same sense, together with the matching argument on every edge into its block. Dead
//!   cycles through loop parameters (`%acc` feeding only `%acc.next`) are removed too.
//! - Keeps every instruction with side effects (stores, atomics, barriers, warp collectives), every
//!   terminator and every block; the kernel's observable behaviour is unchanged (loads may be
//!   removed: a load has no effect besides its result).
//! - Runs in time linear in the size of the kernel.

use crate::edit::{incoming_edges, retain_block_params, succ_call};
use crate::pass::{Pass, PassContext};
use kir_ir::{Kernel, Operand, Terminator, ValueDef, ValueId};

pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let live = liveness(k);
        let is_live = |v: ValueId| live.get(v.index()).copied().unwrap_or(true);
        let mut removed_insts = 0u64;
        for b in 0..k.blocks.len() {
            let insts = &k.insts;
            let before = k.blocks[b].insts.len();
            k.blocks[b].insts.retain(|i| {
                let d = &insts[i.index()];
                d.op.has_side_effects() || d.result.is_some_and(is_live)
            });
            removed_insts += (before - k.blocks[b].insts.len()) as u64;
        }
        let keep: Vec<Vec<bool>> = k.blocks.iter().map(|b| b.params.iter().map(|p| is_live(*p)).collect()).collect();
        let removed_params = retain_block_params(k, &keep) as u64;
        cx.stats.add("instructions removed", removed_insts);
        cx.stats.add("block params removed", removed_params);
        removed_insts > 0 || removed_params > 0
    }
}

/// Which values are live: used by a side-effecting instruction or a branch condition, directly or
/// through live instructions and live block parameters.
///
/// One backward sweep over the layout does almost all the work with sequential memory access: an
/// instruction reached by the sweep whose result is already live (or that has side effects) marks
/// its operands. A value that becomes live after the sweep has passed its definition (a use
/// reached through a back edge, or a block parameter whose incoming arguments must be marked) goes
/// on a work list instead. Each instruction's operands are marked once, so this stays linear.
fn liveness(k: &Kernel) -> Vec<bool> {
    const NOT_PLACED: u32 = u32::MAX;
    // Layout position of every placed instruction; the sweep visits positions downwards.
    let mut pos = vec![NOT_PLACED; k.insts.len()];
    let mut n = 0u32;
    for b in &k.blocks {
        for &i in &b.insts {
            if let Some(p) = pos.get_mut(i.index()) {
                *p = n;
                n += 1;
            }
        }
    }
    let mut live = vec![false; k.values.len()];
    let mut work: Vec<ValueId> = Vec::new();
    // `cur`: the position the sweep is at; a definition at or after it has been passed.
    let mark = |o: Operand, cur: u32, live: &mut Vec<bool>, work: &mut Vec<ValueId>| {
        let Operand::Value(v) = o else { return };
        let Some(slot) = live.get_mut(v.index()) else { return };
        if *slot {
            return;
        }
        *slot = true;
        match k.value(v).def {
            ValueDef::Param(_) => {}
            ValueDef::BlockParam(..) => work.push(v),
            ValueDef::Inst(i) => {
                if pos.get(i.index()).is_some_and(|&p| p != NOT_PLACED && p >= cur) {
                    work.push(v);
                }
            }
        }
    };
    let incoming = incoming_edges(k);
    let mut cur = n;
    for b in k.blocks.iter().rev() {
        if let Terminator::Br { cond, .. } = &b.term {
            mark(*cond, cur, &mut live, &mut work);
        }
        for &i in b.insts.iter().rev() {
            cur -= 1;
            let d = k.inst(i);
            if d.op.has_side_effects() || d.result.is_some_and(|r| live[r.index()]) {
                for &a in &d.args {
                    mark(a, cur, &mut live, &mut work);
                }
            }
        }
        // Work found so far belongs to positions already passed; finish it now so the list stays
        // short. Marks made here use the current position too.
        while let Some(v) = work.pop() {
            match k.value(v).def {
                ValueDef::Param(_) => {}
                ValueDef::Inst(i) => {
                    if let Some(d) = k.insts.get(i.index()) {
                        for &a in &d.args {
                            mark(a, cur, &mut live, &mut work);
                        }
                    }
                }
                ValueDef::BlockParam(b, n) => {
                    for &(src, p) in incoming.get(b.index()).unwrap_or(&[]) {
                        if let Some(c) = succ_call(&k.block(src).term, p) {
                            if let Some(&a) = c.args.get(n as usize) {
                                mark(a, cur, &mut live, &mut work);
                            }
                        }
                    }
                }
            }
        }
    }
    live
}
