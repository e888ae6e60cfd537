//! IR editing helpers shared by the passes: value substitution, block-parameter removal and block
//! removal (the traversal order is [`kir_ir::Kernel::reverse_post_order`]).
//!
//! Guarantees:
//! - Every helper runs in time linear in the size of the kernel (plus the substitution chains,
//!   which are path-compressed), so a pipeline over a large kernel stays linear.
//! - [`Subst`] (value substitution, with the `u64` index rule) lives in [`kir_ir::subst`] and is
//!   re-exported here.
//! - [`remove_unreachable`] is the one unreachable-block removal (simplify-cfg and the fuzz
//!   reducer); it leaves the removed blocks' values in the arenas ([`Kernel::compact`] drops them).
//! - [`unique_preheader`] is the one test for a loop's unique preheader (`licm`, `ivsr`).
//! - [`retain_block_params`] and [`remove_blocks`] keep arities consistent: the arguments of every
//!   edge into a block follow its parameters, and every [`ValueDef::BlockParam`] names its block's
//!   new position.

pub use kir_ir::subst::{const_for_use, is_index_position, Subst};
use kir_ir::{BlockCall, BlockId, Kernel, Terminator, ValueDef};

/// A loop's unique preheader: the one block outside the loop with an edge into its header, when
/// that block ends in `jmp header(...)` (no other successor). `None` when the header is entered
/// from outside by more than one edge, or by a `br`.
pub fn unique_preheader(
    k: &Kernel,
    cfg: &kir_ir::analysis::cfg::Cfg,
    l: &kir_ir::analysis::loops::NaturalLoop,
) -> Option<BlockId> {
    let mut outside = cfg.preds(l.header).iter().filter(|p| !l.contains(**p));
    let p = *outside.next()?;
    if outside.next().is_some() {
        return None;
    }
    match &k.block(p).term {
        Terminator::Jmp(c) if c.block == l.header => Some(p),
        _ => None,
    }
}

/// The `i`-th successor call of a terminator.
pub fn succ_call(t: &Terminator, i: usize) -> Option<&BlockCall> {
    match (t, i) {
        (Terminator::Jmp(c), 0) => Some(c),
        (Terminator::Br { then_, .. }, 0) => Some(then_),
        (Terminator::Br { else_, .. }, 1) => Some(else_),
        _ => None,
    }
}

/// For every block, its incoming edges as `(predecessor, successor position)`, one per edge, in
/// predecessor order. Stored as one flat array with per-block offsets (two allocations for the
/// whole kernel); `incoming[b.index()]` is block `b`'s slice.
pub struct IncomingEdges {
    start: Vec<u32>,
    edges: Vec<(BlockId, usize)>,
}

impl IncomingEdges {
    /// Block `b`'s incoming edges, `None` when `b` is not a block of the kernel.
    pub fn get(&self, b: usize) -> Option<&[(BlockId, usize)]> {
        (b + 1 < self.start.len()).then(|| &self[b])
    }
}

impl std::ops::Index<usize> for IncomingEdges {
    type Output = [(BlockId, usize)];
    fn index(&self, b: usize) -> &[(BlockId, usize)] {
        &self.edges[self.start[b] as usize..self.start[b + 1] as usize]
    }
}

/// The incoming edges of every block (see [`IncomingEdges`]).
pub fn incoming_edges(k: &Kernel) -> IncomingEdges {
    let n = k.blocks.len();
    // Counting pass, prefix sums, then a filling pass.
    let mut start = vec![0u32; n + 1];
    for b in &k.blocks {
        for c in b.term.successors() {
            if c.block.index() < n {
                start[c.block.index() + 1] += 1;
            }
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill: Vec<u32> = start[..n].to_vec();
    let mut edges = vec![(BlockId(0), 0usize); start[n] as usize];
    for b in k.block_ids() {
        for (pos, c) in k.block(b).term.successors().enumerate() {
            if let Some(slot) = fill.get_mut(c.block.index()) {
                edges[*slot as usize] = (b, pos);
                *slot += 1;
            }
        }
    }
    IncomingEdges { start, edges }
}

/// Removes the block parameters whose `keep` flag is false, and the matching argument of every
/// edge into their block. `keep[b]` must have one flag per parameter of block `b`. Returns the
/// number of parameters removed.
pub fn retain_block_params(k: &mut Kernel, keep: &[Vec<bool>]) -> usize {
    let drops = |b: BlockId| keep.get(b.index()).is_some_and(|f| f.iter().any(|x| !x));
    if !k.block_ids().any(drops) {
        return 0;
    }
    for b in 0..k.blocks.len() {
        for c in k.blocks[b].term.successors_mut() {
            if let Some(flags) = keep.get(c.block.index()) {
                if flags.len() == c.args.len() && flags.iter().any(|x| !x) {
                    let mut it = flags.iter();
                    c.args.retain(|_| *it.next().unwrap_or(&true));
                }
            }
        }
    }
    let mut removed = 0;
    for b in 0..k.blocks.len() {
        let Some(flags) = keep.get(b) else { continue };
        if flags.len() != k.blocks[b].params.len() || flags.iter().all(|x| *x) {
            continue;
        }
        let old = std::mem::take(&mut k.blocks[b].params);
        let mut kept = Vec::with_capacity(old.len());
        for (p, &f) in old.iter().zip(flags) {
            if f {
                k.values[p.index()].def = ValueDef::BlockParam(BlockId(b as u32), kept.len() as u32);
                kept.push(*p);
            } else {
                removed += 1;
            }
        }
        k.blocks[b].params = kept;
    }
    removed
}

/// Removes the blocks whose `keep` flag is false (the entry block is always kept), renumbering
/// the others in their order. No kept block may branch to a removed one. Returns each old block's
/// new index (`u32::MAX` for a removed block), or nothing when no block was removed.
pub fn remove_blocks(k: &mut Kernel, keep: &[bool]) -> Option<Vec<u32>> {
    let n = k.blocks.len();
    let keep_b = |i: usize| i == 0 || keep.get(i).copied().unwrap_or(true);
    if (0..n).all(keep_b) {
        return None;
    }
    let mut new_index = vec![u32::MAX; n];
    let mut next = 0u32;
    for (i, slot) in new_index.iter_mut().enumerate() {
        if keep_b(i) {
            *slot = next;
            next += 1;
        }
    }
    // In place: kept blocks slide down over removed ones (no new block arena).
    let mut i = 0;
    k.blocks.retain_mut(|_| {
        let kept = keep_b(i);
        i += 1;
        kept
    });
    // A kept block never targets a removed one (caller's contract); if it did, the verifier
    // reports the dangling label rather than this code panicking.
    renumber(k, &new_index);
    Some(new_index)
}

/// Removes blocks not reachable from the entry. Returns how many, and the reverse post-order of
/// the remaining blocks (in their new numbering).
pub fn remove_unreachable(k: &mut Kernel) -> (usize, Vec<BlockId>) {
    let mut rpo = k.reverse_post_order();
    if rpo.len() == k.blocks.len() {
        return (0, rpo);
    }
    let mut keep = vec![false; k.blocks.len()];
    for b in &rpo {
        keep[b.index()] = true;
    }
    let old_len = k.blocks.len();
    if let Some(new_index) = remove_blocks(k, &keep) {
        rpo.iter_mut().for_each(|b| *b = BlockId(new_index[b.index()]));
    }
    (old_len - k.blocks.len(), rpo)
}

/// Lays out blocks a pass just appended: each `(from, to, before)` moves blocks `from..to` (in
/// their order) to just before block `before` (an older block, not the entry), and renumbers every
/// block reference (edges, block parameter definitions). Layout order is the order the PTX
/// emitter writes blocks in, so code a pass adds for a loop lands where the loop is and falls
/// through as the loop did. One pass over the blocks.
pub fn place_blocks(k: &mut Kernel, groups: &[(usize, usize, BlockId)]) {
    let n = k.blocks.len();
    let first_new = groups.iter().map(|g| g.0).min().unwrap_or(n);
    let mut before: Vec<Vec<(usize, usize)>> = vec![Vec::new(); first_new];
    let mut placed = vec![false; n];
    for &(from, to, at) in groups {
        if at.index() == 0 || at.index() >= first_new || from > to || to > n {
            continue;
        }
        before[at.index()].push((from, to));
        (from..to).for_each(|b| placed[b] = true);
    }
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for (old, ranges) in before.iter().enumerate() {
        for &(from, to) in ranges {
            order.extend(from..to);
        }
        order.push(old);
    }
    order.extend((first_new..n).filter(|b| !placed[*b]));
    permute_blocks(k, &order);
}

/// Puts the blocks in the order `order` (old indices; a permutation of all blocks with the entry
/// first) and renumbers every block reference (edges, block parameter definitions).
pub fn permute_blocks(k: &mut Kernel, order: &[usize]) {
    let n = k.blocks.len();
    debug_assert_eq!(order.len(), n);
    let mut new_index = vec![0u32; n];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new as u32;
    }
    let mut old_blocks: Vec<Option<kir_ir::Block>> = std::mem::take(&mut k.blocks).into_iter().map(Some).collect();
    k.blocks = order.iter().map(|&o| old_blocks[o].take().expect("each block placed once")).collect();
    renumber(k, &new_index);
}

/// After blocks moved (`new_index[old]` is each old block's new index; `u32::MAX` or out of range:
/// removed), points every edge at its target's new index and every block parameter's definition
/// at its block's.
fn renumber(k: &mut Kernel, new_index: &[u32]) {
    for (nb, b) in k.blocks.iter_mut().enumerate() {
        for c in b.term.successors_mut() {
            c.block = BlockId(new_index.get(c.block.index()).copied().unwrap_or(u32::MAX));
        }
        for (i, p) in b.params.iter().enumerate() {
            k.values[p.index()].def = ValueDef::BlockParam(BlockId(nb as u32), i as u32);
        }
    }
}
