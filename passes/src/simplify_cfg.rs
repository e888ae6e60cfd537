//! `simplify-cfg`: control-flow graph clean-up.
//!
//! Guarantees, applied repeatedly until none applies:
//! - `br` on a constant becomes `jmp` to the taken target (with its arguments); `br` whose two
//!   targets are the same block with the same arguments becomes `jmp`.
//! - Blocks unreachable from the entry are removed.
//! - A block whose parameter receives the same operand on every incoming edge (ignoring edges
//!   that pass the parameter to itself) loses that parameter; its uses read the operand instead.
//!   The operand is always available in the block, so no dominance check is needed: every block is
//!   reachable when parameters are dropped (unreachable ones were removed first, and nothing after
//!   that removes an edge), and a path from the entry first enters the block over an edge from a
//!   block it does not dominate; that edge cannot pass the parameter itself, so it passes the
//!   operand, whose definition therefore dominates that predecessor (the verified input guarantees
//!   it, and every replacement made here is by an operand that dominates what it replaces). Hence
//!   the definition lies on every path into the block, and is not in the block itself.
//! - A block with exactly one incoming edge, from a block that ends in `jmp` to it, is merged into
//!   that predecessor (its parameters replaced by the jump's arguments).
//! - The entry block is never removed or merged away; instructions keep their order and spans; the
//!   kernel's behaviour is unchanged.
//! - In a device function `ret` returns to the caller (with its value for `ret %v`): a merged block
//!   keeps its terminator, returned value included, and that value is rewritten like any other use
//!   when the parameter it names is dropped or merged away. Nothing here treats `ret` as the end of
//!   the thread, and calls stay where they are (they are instructions like any other).
//! - Each round is linear in the number of blocks and edges; instructions are rewritten once, at
//!   the end.

use crate::edit::{
    incoming_edges, remove_blocks, remove_unreachable, retain_block_params, succ_call, IncomingEdges, Subst,
};
use crate::pass::{Pass, PassContext};
use kir_ir::{BlockId, Kernel, Operand, Terminator};

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
            let (a, rewritten) = fold_branches(k, &mut subst);
            // After the first round, the rest of a round can only find work through a terminator:
            // a folded branch (edges go away) or an operand replaced since the last round (which
            // the uniform-parameter check reads). Without either, no edge changed and every
            // incoming argument is what the last round's steps saw, so they would find nothing.
            if !first && a == 0 && rewritten.is_empty() {
                break;
            }
            let (b, c, d) = if first || a > 0 {
                // Only the input or a folded branch can leave a block unreachable (dropping
                // parameters and merging blocks keep every block's reachability).
                let (b, rpo) = remove_unreachable(k);
                // Neither step below adds or removes an edge, so the order and the edges stay
                // valid for both.
                let incoming = incoming_edges(k);
                let c = drop_uniform_params(k, &incoming, None, &mut subst);
                let d = merge_blocks(k, &rpo, &incoming, &mut subst);
                (b, c, d)
            } else {
                // Only operands changed: no block became unreachable or mergeable (both depend on
                // edges alone), and only parameters of blocks that a rewritten terminator jumps to
                // can have become uniform.
                let mut candidate = vec![false; k.blocks.len()];
                for &r in &rewritten {
                    for s in k.block(r).term.successors() {
                        if let Some(f) = candidate.get_mut(s.block.index()) {
                            *f = true;
                        }
                    }
                }
                let incoming = incoming_edges(k);
                (0, drop_uniform_params(k, &incoming, Some(&candidate), &mut subst), 0)
            };
            first = false;
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
/// Returns how many branches folded, and the blocks whose terminator operands the substitution
/// rewrote.
fn fold_branches(k: &mut Kernel, subst: &mut Subst) -> (usize, Vec<BlockId>) {
    let mut n = 0;
    let mut rewritten = Vec::new();
    for (bi, b) in k.blocks.iter_mut().enumerate() {
        // Terminators read their operands through the substitution (a condition may have become a
        // constant, two edges may now pass the same arguments).
        if subst.apply_to_term(&mut b.term) {
            rewritten.push(BlockId(bi as u32));
        }
        let folds = match &b.term {
            Terminator::Br { cond: Operand::Const(_), .. } => true,
            Terminator::Br { then_, else_, .. } => then_ == else_,
            _ => false,
        };
        if !folds {
            continue;
        }
        // Moved, not cloned: the taken edge keeps its argument list.
        let Terminator::Br { cond, then_, else_ } = std::mem::replace(&mut b.term, Terminator::Ret(None)) else {
            continue;
        };
        let taken = match cond {
            Operand::Const(c) if c.bits == 0 => else_,
            _ => then_,
        };
        b.term = Terminator::Jmp(taken);
        n += 1;
    }
    (n, rewritten)
}

/// Drops block parameters that receive the same operand on every incoming edge. The replacements
/// are recorded in `subst`; the caller rewrites the uses. With `only`, just the blocks it flags are
/// considered.
fn drop_uniform_params(k: &mut Kernel, incoming: &IncomingEdges, only: Option<&[bool]>, subst: &mut Subst) -> usize {
    // Per block, one flag per parameter; left empty (no allocation) for blocks that keep them all.
    let mut keep: Vec<Vec<bool>> = vec![Vec::new(); k.blocks.len()];
    let mut dropped = 0;
    for b in k.block_ids().skip(1) {
        if incoming[b.index()].is_empty() || only.is_some_and(|f| !f[b.index()]) {
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
            // Available in `b` (see the module header): no dominance check.
            let (true, Some(x)) = (ok, unique) else { continue };
            subst.set(p, x);
            let flags = &mut keep[b.index()];
            if flags.is_empty() {
                flags.resize(k.block(b).params.len(), true);
            }
            flags[n] = false;
            dropped += 1;
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
        let term = std::mem::replace(&mut k.blocks[b.index()].term, Terminator::Ret(None));
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
    use kir_ir::generate::{random_kernel, GenConfig};

    /// The order `remove_unreachable` returns is the reverse post-order of the kernel it leaves.
    #[test]
    fn remove_unreachable_returns_the_new_reverse_post_order() {
        let mut removed = 0;
        for seed in 0..40 {
            let mut k = random_kernel(seed, &GenConfig { insts: 300, ..GenConfig::default() });
            let mut subst = Subst::new(&k);
            let _ = fold_branches(&mut k, &mut subst);
            let (n, rpo) = remove_unreachable(&mut k);
            removed += n;
            assert_eq!(rpo, k.reverse_post_order(), "seed {seed}");
        }
        assert!(removed > 0);
    }
}
