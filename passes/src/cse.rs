//! `cse`: common subexpression elimination over the dominator tree.
//!
//! Guarantees:
//! - An instruction whose op is pure ([`kir_ir::Op::is_pure`]) or an address or special-register
//!   read (`offset`, `offset.bytes`, `ptrcast`, `addr @shared`, `tid`/`ctaid`/...) is removed when
//!   an instruction with the same op and the same operands dominates it (earlier in the same
//!   block, or in a dominating block); its uses read the earlier result. These ops compute the
//!   same value from the same operands in the same thread (approximate ops too: the hardware
//!   instruction is deterministic), so every result is unchanged, bit for bit.
//! - Loads, stores, atomics, barriers, collectives and calls are never merged.
//! - The CFG is unchanged. One walk over reachable blocks in reverse post-order with a hash table:
//!   linear time (each instruction is checked against at most the most recent equal ones that
//!   [`Available`] looks at).

use crate::edit::Subst;
use crate::pass::{Pass, PassContext};
use kir_ir::analysis::available::Available;
use kir_ir::{Kernel, Op, Operand, ValueId};

pub struct Cse;

impl Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }

    fn preserves_cfg(&self) -> bool {
        true
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let cfg = cx.cfg(k);
        let rpo = cfg.rpo().to_vec();
        let mut table: Available<(Op, Vec<Operand>), ValueId> = Available::default();
        let mut subst = Subst::new(k);
        let mut removed = vec![false; k.insts.len()];
        let mut count = 0u64;
        for &b in &rpo {
            for idx in 0..k.blocks[b.index()].insts.len() {
                let i = k.blocks[b.index()].insts[idx];
                let d = &mut k.insts[i.index()];
                let op = d.op;
                subst.apply_to_args(&op, &mut d.args);
                let Some(r) = d.result else { continue };
                if !op.is_speculatable() {
                    continue;
                }
                let key = (op, d.args.to_vec());
                match table.find(&key, cfg, b) {
                    Some(earlier) => {
                        subst.set(r, Operand::Value(earlier));
                        removed[i.index()] = true;
                        count += 1;
                    }
                    None => table.record(key, b, r),
                }
            }
            let _ = subst.apply_to_term(&mut k.blocks[b.index()].term);
        }
        if count == 0 {
            cx.stats.add("instructions merged", 0);
            return false;
        }
        for blk in &mut k.blocks {
            blk.insts.retain(|i| !removed[i.index()]);
        }
        // Unreachable blocks may still read a merged value.
        subst.apply(k);
        cx.stats.add("instructions merged", count);
        true
    }
}
