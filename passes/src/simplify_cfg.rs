//! `simplify-cfg`: control-flow graph clean-up.
//!
//! Guarantees, applied repeatedly until none applies:
//! - `br` on a constant becomes `jmp` to the taken target (with its arguments); `br` whose two
//!   targets are the same block with the same arguments becomes `jmp`.
//! - Blocks unreachable from the entry are removed.
//! - A block whose parameter receives the same operand on every incoming edge (ignoring edges
//!   that pass the parameter to itself) loses that parameter; its uses read the operand instead.
//!   This is done only when the operand is available in the block (a constant, a kernel parameter,
//!   or a value defined in a block that strictly dominates it).
//! - A block with exactly one incoming edge, from a block that ends in `jmp` to it, is merged into
//!   that predecessor (its parameters replaced by the jump's arguments).
//! - The entry block is never removed or merged away; instructions keep their order and spans; the
//!   kernel's behaviour is unchanged.
//! - Each round is linear in the number of blocks and edges (plus the dominator computation, only
//!   when a parameter is a candidate for removal); instructions are rewritten once, at the end.

use crate::edit::{
    def_block, incoming_edges, inst_blocks, remove_blocks, retain_block_params, succ_call, IncomingEdges, Subst,
};
use crate::pass::{Pass, PassContext};
use kir_ir::{BlockId, Kernel, Operand, Terminator, ValueDef};

pub struct SimplifyCfg;

impl Pass for SimplifyCfg {
    fn name(&self) -> &'static str {
        "simplify-cfg"
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let mut changed = false;
        let mut counts = [0u64; 4];
        // Every rewrite records replaced values in one substitution; decisions read operands through
        // it, and instructions are rewritten once, after the last round (one sweep over the kernel).
        let mut subst = Subst::new(k);
        let mut first = true;
        loop {
            let a = fold_branches(k, &mut subst);
            // Only the input or a folded branch can leave a block unreachable (dropping parameters
            // and merging blocks keep every block's reachability).
            let (b, rpo) = if first || a > 0 { remove_unreachable(k) } else { (0, k.reverse_post_order()) };
            first = false;
            // Neither step below adds or removes an edge, so the order and the edges stay valid
            // for both.
            let incoming = incoming_edges(k);
            let c = drop_uniform_params(k, &rpo, &incoming, &mut subst);
            let d = merge_blocks(k, &rpo, &incoming, &mut subst);
            counts[0] += a as u64;
            counts[1] += b as u64;
            counts[2] += c as u64;
            counts[3] += d as u64;
            changed |= a + b + c + d > 0;
            // Another round can only find work through a value replaced after this round's branch
            // folding (by a dropped parameter or a merged block's parameters): without one, every
            // branch it could fold is folded, no edge goes away, and the last two steps would see
            // the kernel exactly as they just left it.
            if c + d == 0 {
                break;
            }
        }
        subst.apply(k);
        cx.stats.add("branches folded", counts[0]);
        cx.stats.add("blocks removed", counts[1] + counts[3]);
        cx.stats.add("blocks merged", counts[3]);
        cx.stats.add("block params removed", counts[2]);
        changed
    }
}

/// `br` on a constant, or to the same target twice with the same arguments, becomes `jmp`.
fn fold_branches(k: &mut Kernel, subst: &mut Subst) -> usize {
    let mut n = 0;
    for b in &mut k.blocks {
        // Terminators read their operands through the substitution (a condition may have become a
        // constant, two edges may now pass the same arguments).
        subst.apply_to_term(&mut b.term);
        let folds = match &b.term {
            Terminator::Br { cond: Operand::Const(_), .. } => true,
            Terminator::Br { then_, else_, .. } => then_ == else_,
            _ => false,
        };
        if !folds {
            continue;
        }
        // Moved, not cloned: the taken edge keeps its argument list.
        let Terminator::Br { cond, then_, else_ } = std::mem::replace(&mut b.term, Terminator::Ret) else {
            continue;
        };
        let taken = match cond {
            Operand::Const(c) if c.bits == 0 => else_,
            _ => then_,
        };
        b.term = Terminator::Jmp(taken);
        n += 1;
    }
    n
}

/// Removes blocks not reachable from the entry. Returns how many, and the reverse post-order of
/// the remaining blocks (in their new numbering).
fn remove_unreachable(k: &mut Kernel) -> (usize, Vec<BlockId>) {
    let mut rpo = k.reverse_post_order();
    if rpo.len() == k.blocks.len() {
        return (0, rpo);
    }
    let mut keep = vec![false; k.blocks.len()];
    for b in &rpo {
        keep[b.index()] = true;
    }
    let removed = remove_blocks(k, &keep);
    // Kept blocks keep their relative order: a block's new index is the number kept before it.
    let mut new_index = vec![0u32; keep.len()];
    let mut next = 0;
    for (slot, &kept) in new_index.iter_mut().zip(&keep) {
        *slot = next;
        next += kept as u32;
    }
    rpo.iter_mut().for_each(|b| *b = BlockId(new_index[b.index()]));
    (removed, rpo)
}

/// Dominance queries in O(1) from the dominator tree's DFS intervals. The dominator tree is
/// computed with the Cooper-Harvey-Kennedy iteration over the reverse post-order (near-linear on
/// the structured CFGs kir kernels have).
struct DomTree {
    tin: Vec<u32>,
    tout: Vec<u32>,
}

impl DomTree {
    /// `rpo` is the kernel's current reverse post-order, `incoming` its current incoming edges.
    fn new(k: &Kernel, rpo: &[BlockId], incoming: &IncomingEdges) -> DomTree {
        let n = k.blocks.len();
        const NONE: u32 = u32::MAX;
        let mut order = vec![NONE; n];
        for (i, b) in rpo.iter().enumerate() {
            order[b.index()] = i as u32;
        }
        // idom by RPO index; the entry (index 0) is its own.
        let mut idom = vec![NONE; rpo.len()];
        if !rpo.is_empty() {
            idom[0] = 0;
        }
        let mut changed = true;
        while changed {
            changed = false;
            for (i, b) in rpo.iter().enumerate().skip(1) {
                let mut new = NONE;
                for &(p, _) in &incoming[b.index()] {
                    let pi = order[p.index()];
                    if pi == NONE || idom[pi as usize] == NONE {
                        continue;
                    }
                    new = if new == NONE {
                        pi
                    } else {
                        let (mut a, mut c) = (new, pi);
                        while a != c {
                            while a > c {
                                a = idom[a as usize];
                            }
                            while c > a {
                                c = idom[c as usize];
                            }
                        }
                        a
                    };
                }
                if new != NONE && idom[i] != new {
                    idom[i] = new;
                    changed = true;
                }
            }
        }
        // Pre-order intervals of the dominator tree without child lists: a node's idom comes before
        // it in the reverse post-order, so subtree sizes accumulate in one backward sweep and each
        // node's interval is carved out of its parent's in one forward sweep.
        let mut size = vec![1u32; rpo.len()];
        for i in (1..rpo.len()).rev() {
            if idom[i] != NONE {
                size[idom[i] as usize] += size[i];
            }
        }
        let (mut tin, mut tout) = (vec![NONE; n], vec![0; n]);
        // next_free[i]: the first pre-order number not yet given to a child of node i.
        let mut next_free = vec![0u32; rpo.len()];
        for i in 0..rpo.len() {
            let start = if i == 0 {
                0
            } else if idom[i] != NONE {
                let p = idom[i] as usize;
                let s = next_free[p];
                next_free[p] += size[i];
                s
            } else {
                continue;
            };
            next_free[i] = start + 1;
            tin[rpo[i].index()] = start;
            tout[rpo[i].index()] = start + size[i];
        }
        DomTree { tin, tout }
    }

    /// Whether `a` strictly dominates `b` (both reachable): `b`'s pre-order number lies inside
    /// `a`'s subtree interval `[tin, tout)` and is not `a`'s own.
    fn strictly_dominates(&self, a: BlockId, b: BlockId) -> bool {
        let (ai, bi) = (a.index(), b.index());
        self.tin[ai] != u32::MAX
            && self.tin[bi] != u32::MAX
            && self.tin[ai] < self.tin[bi]
            && self.tin[bi] < self.tout[ai]
    }
}

/// Drops block parameters that receive the same operand on every incoming edge. The replacements
/// are recorded in `subst`; the caller rewrites the uses.
fn drop_uniform_params(k: &mut Kernel, rpo: &[BlockId], incoming: &IncomingEdges, subst: &mut Subst) -> usize {
    // Per block, one flag per parameter; left empty (no allocation) for blocks that keep them all.
    let mut keep: Vec<Vec<bool>> = vec![Vec::new(); k.blocks.len()];
    let mut dom: Option<DomTree> = None;
    let mut blocks_of: Option<Vec<u32>> = None;
    let mut dropped = 0;
    for b in k.block_ids().skip(1) {
        if incoming[b.index()].is_empty() {
            continue;
        }
        for (n, &p) in k.block(b).params.iter().enumerate() {
            let mut unique: Option<Operand> = None;
            let mut ok = true;
            for &(src, pos) in &incoming[b.index()] {
                let Some(a) = succ_call(&k.block(src).term, pos).and_then(|c| c.args.get(n).copied()) else {
                    ok = false;
                    break;
                };
                let a = subst.resolve(a);
                if a == Operand::Value(p) {
                    continue;
                }
                match unique {
                    None => unique = Some(a),
                    Some(u) if u == a => {}
                    Some(_) => {
                        ok = false;
                        break;
                    }
                }
            }
            let (true, Some(x)) = (ok, unique) else { continue };
            let available = match x {
                Operand::Const(_) => true,
                Operand::Value(v) => match k.value(v).def {
                    ValueDef::Param(_) => true,
                    _ => {
                        let blocks = blocks_of.get_or_insert_with(|| inst_blocks(k));
                        let dt = dom.get_or_insert_with(|| DomTree::new(k, rpo, incoming));
                        def_block(k, blocks, v).is_some_and(|d| dt.strictly_dominates(d, b))
                    }
                },
            };
            if available {
                subst.set(p, x);
                let flags = &mut keep[b.index()];
                if flags.is_empty() {
                    flags.resize(k.block(b).params.len(), true);
                }
                flags[n] = false;
                dropped += 1;
            }
        }
    }
    if dropped > 0 {
        retain_block_params(k, &keep);
    }
    dropped
}

/// Merges each block with a single incoming edge from a `jmp` into that predecessor. Its parameters
/// are recorded in `subst` as the jump's arguments; the caller rewrites the uses.
fn merge_blocks(k: &mut Kernel, rpo: &[BlockId], incoming: &IncomingEdges, subst: &mut Subst) -> usize {
    let n = k.blocks.len();
    // owner[b]: the block that now holds b's instructions and terminator.
    let mut owner: Vec<u32> = (0..n as u32).collect();
    fn find(owner: &mut [u32], b: u32) -> u32 {
        let mut r = b;
        while owner[r as usize] != r {
            r = owner[r as usize];
        }
        let mut c = b;
        while owner[c as usize] != r {
            let next = owner[c as usize];
            owner[c as usize] = r;
            c = next;
        }
        r
    }
    let mut keep = vec![true; n];
    let mut merged = 0;
    for &b in rpo {
        if b == Kernel::ENTRY {
            continue;
        }
        let [(pred, _)] = &incoming[b.index()] else { continue };
        let host = BlockId(find(&mut owner, pred.0));
        if host == b {
            continue;
        }
        let Terminator::Jmp(call) = &k.block(host).term else { continue };
        if call.block != b || call.args.len() != k.block(b).params.len() {
            continue;
        }
        let args = call.args.clone();
        for (p, a) in k.block(b).params.clone().into_iter().zip(args) {
            let a = subst.resolve(a);
            subst.set(p, a);
        }
        let moved = std::mem::take(&mut k.blocks[b.index()].insts);
        let term = std::mem::replace(&mut k.blocks[b.index()].term, Terminator::Ret);
        let term_span = k.blocks[b.index()].term_span;
        let h = &mut k.blocks[host.index()];
        h.insts.extend(moved);
        h.term = term;
        h.term_span = term_span;
        owner[b.index()] = host.0;
        keep[b.index()] = false;
        merged += 1;
    }
    if merged > 0 {
        remove_blocks(k, &keep);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use kir_ir::gen::{random_kernel, GenConfig};

    /// The interval dominator tree answers exactly as the petgraph dominators of `kir_ir::cfg`
    /// (the verifier's), on every pair of blocks of generated kernels, unreachable blocks included.
    #[test]
    fn dominance_intervals_agree_with_the_cfg_dominators() {
        let mut unreachable = 0;
        for seed in 0..40 {
            let mut k = random_kernel(seed, &GenConfig { insts: 300, ..GenConfig::default() });
            // Fold some branches so that some blocks become unreachable.
            let mut subst = Subst::new(&k);
            fold_branches(&mut k, &mut subst);
            let cfg = kir_ir::cfg::Cfg::new(&k);
            unreachable += k.block_ids().filter(|&b| !cfg.is_reachable(b)).count();
            let dt = DomTree::new(&k, &k.reverse_post_order(), &incoming_edges(&k));
            let mut strict = 0;
            for a in k.block_ids() {
                for b in k.block_ids() {
                    let expected = a != b && cfg.is_reachable(a) && cfg.is_reachable(b) && cfg.dominates(a, b);
                    assert_eq!(dt.strictly_dominates(a, b), expected, "seed {seed}: {a:?} sdom {b:?}");
                    strict += expected as usize;
                }
            }
            assert!(strict > k.blocks.len() / 2, "seed {seed}: too few dominance pairs to mean anything");
        }
        assert!(unreachable > 0, "no generated kernel had an unreachable block");
    }

    /// The order `remove_unreachable` returns is the reverse post-order of the kernel it leaves.
    #[test]
    fn remove_unreachable_returns_the_new_reverse_post_order() {
        let mut removed = 0;
        for seed in 0..40 {
            let mut k = random_kernel(seed, &GenConfig { insts: 300, ..GenConfig::default() });
            let mut subst = Subst::new(&k);
            fold_branches(&mut k, &mut subst);
            let (n, rpo) = remove_unreachable(&mut k);
            removed += n;
            assert_eq!(rpo, k.reverse_post_order(), "seed {seed}");
        }
        assert!(removed > 0);
    }
}
