//! `licm`: loop-invariant code motion.
//!
//! Guarantees:
//! - Moves an instruction out of a natural loop ([`kir_ir::analysis::loops`]) into the loop's
//!   preheader only when all of these hold:
//!   - the op is total and free of effects: a pure op ([`kir_ir::Op::is_pure`], evaluated by
//!     [`kir_ir::eval`], which defines every input, integer division by zero included, and never
//!     faults), or one of the address and special-register ops (`ptr.offset`, `ptr.offset_bytes`,
//!     `ptr.cast`, `addr @shared`, `tid`/`ctaid`/... reads), which the interpreter and the PTX both
//!     compute without a check that could fail. Loads, stores, atomics, barriers, warp
//!     collectives and calls never move (a load is not hoisted even when its address is
//!     invariant: a store in the loop or a guard around it could make that wrong);
//!   - every operand is a constant or a value defined outside the loop (a kernel parameter, or
//!     defined in a block that is not one of the loop's), counting instructions already hoisted
//!     as outside, so chains of invariant instructions move together;
//!   - the loop has a unique preheader: exactly one edge enters the header from outside the loop,
//!     and it comes from a block ending in `jmp header(...)` (no other successor). Loops without
//!     one are left alone and counted (`--stats`: "loops without a unique preheader"; a loop
//!     entered from a `br`, e.g. the exit edge of the loop before it after `simplify-cfg`); the
//!     pass creates no blocks and changes no edge (it preserves the CFG).
//! - Hoisted instructions are appended to the preheader, before its `jmp`, in the order they are
//!   met (loop blocks in reverse post-order, instructions in order), so every definition still
//!   dominates its uses: an outside operand's definition dominates the header, hence the
//!   preheader. Inner loops are processed first; what lands in an inner loop's preheader can then
//!   move out of the enclosing loop.
//! - Semantics are preserved bit for bit: the header runs whenever the preheader has, and the
//!   moved ops compute the same value on every iteration, so evaluating them once before the loop
//!   (even when the block they came from would not have run) changes no observable result.
//! - One sweep per loop, over its blocks in reverse post-order (a definition's block before the
//!   blocks it dominates, so a chain of invariant instructions moves in that sweep): time linear in
//!   the kernel's size plus the sizes of its loops (what [`LoopForest`] already lists), times
//!   log of a loop's size for the membership tests.

use crate::pass::{Pass, PassContext};
use kir_ir::analysis::loops::LoopForest;
use kir_ir::{BlockId, Kernel, Op, Operand, ValueDef};

pub struct Licm;

impl Pass for Licm {
    fn name(&self) -> &'static str {
        "licm"
    }

    /// It moves instructions between blocks, never a block or an edge.
    fn preserves_cfg(&self) -> bool {
        true
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let (loops, rpo, preheaders) = {
            let cfg = cx.cfg(k);
            let forest = LoopForest::new(cfg);
            let loops = forest.loops().to_vec();
            if loops.is_empty() {
                cx.stats.add("instructions hoisted", 0);
                cx.stats.add("loops without a unique preheader", 0);
                return false;
            }
            let preheaders: Vec<Option<BlockId>> =
                loops.iter().map(|l| crate::edit::unique_preheader(k, cfg, l)).collect();
            (loops, cfg.rpo().to_vec(), preheaders)
        };
        // Innermost first: a loop nested in another has strictly fewer blocks.
        let mut order: Vec<usize> = (0..loops.len()).collect();
        order.sort_by_key(|&i| (loops[i].blocks.len(), i));
        // The block of every placed instruction, kept up to date as instructions move.
        let mut inst_block: Vec<u32> = vec![u32::MAX; k.insts.len()];
        for (bi, b) in k.blocks.iter().enumerate() {
            for i in &b.insts {
                inst_block[i.index()] = bi as u32;
            }
        }
        // Position of each reachable block in reverse post-order: a definition's block comes
        // before the blocks it dominates, so one sweep in this order sees every operand's
        // (possibly just hoisted) definition before its uses.
        let mut rpo_pos = vec![u32::MAX; k.blocks.len()];
        for (i, b) in rpo.iter().enumerate() {
            rpo_pos[b.index()] = i as u32;
        }
        let (mut hoisted, mut skipped) = (0u64, 0u64);
        for li in order {
            let Some(pre) = preheaders[li] else {
                skipped += 1;
                continue;
            };
            let l = &loops[li];
            let mut body = l.blocks.clone();
            body.sort_by_key(|b| rpo_pos[b.index()]);
            for &b in &body {
                let insts = std::mem::take(&mut k.blocks[b.index()].insts);
                let mut kept = Vec::with_capacity(insts.len());
                for id in insts {
                    let inst = &k.insts[id.index()];
                    let invariant = inst.result.is_some()
                        && Op::is_speculatable(&inst.op)
                        && inst.args.iter().all(|a| match a {
                            Operand::Const(_) => true,
                            Operand::Value(v) => match k.values[v.index()].def {
                                ValueDef::Param(_) => true,
                                ValueDef::BlockParam(db, _) => !l.contains(db),
                                ValueDef::Inst(di) => {
                                    let db = inst_block[di.index()];
                                    db != u32::MAX && !l.contains(BlockId(db))
                                }
                            },
                        });
                    if invariant {
                        k.blocks[pre.index()].insts.push(id);
                        inst_block[id.index()] = pre.0;
                        hoisted += 1;
                    } else {
                        kept.push(id);
                    }
                }
                k.blocks[b.index()].insts = kept;
            }
        }
        cx.stats.add("instructions hoisted", hoisted);
        cx.stats.add("loops without a unique preheader", skipped);
        hoisted > 0
    }
}
