//! IR editing helpers shared by the passes: value substitution, block-parameter removal and block
//! removal (the traversal order is [`kir_ir::Kernel::reverse_post_order`]).
//!
//! Guarantees:
//! - Every helper runs in time linear in the size of the kernel (plus the substitution chains,
//!   which are path-compressed), so a pipeline over a large kernel stays linear.
//! - [`Subst::apply`] rewrites every operand of every placed instruction and terminator; a constant
//!   put in an index position (load/store/atom index, `offset` amount) is converted to the `u64`
//!   the text format uses there, with the same meaning (signed indices are sign-extended), so the
//!   printed kernel re-parses to the same kernel.
//! - [`retain_block_params`] and [`remove_blocks`] keep arities consistent: the arguments of every
//!   edge into a block follow its parameters, and every [`ValueDef::BlockParam`] names its block's
//!   new position.

use kir_ir::{BlockCall, BlockId, Constant, Kernel, Op, Operand, ScalarType, Terminator, ValueDef, ValueId};

/// A substitution of values by operands, resolved transitively.
///
/// The per-value map holds a `u32` slot (0 = unmapped, otherwise an index + 1 into `targets`), in
/// front of which sits one bit per value: most operands are unmapped, and their lookup reads only
/// the bit array (25 KB for 200k values, which stays in the first-level caches) instead of the
/// 4-byte slot array (which does not).
pub struct Subst {
    mapped: Vec<u64>,
    slot: Vec<u32>,
    targets: Vec<Operand>,
}

impl Subst {
    pub fn new(k: &Kernel) -> Subst {
        let n = k.values.len();
        Subst { mapped: vec![0; n.div_ceil(64)], slot: vec![0; n], targets: Vec::new() }
    }

    /// Number of values mapped.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    #[inline]
    fn get(&self, v: ValueId) -> Option<Operand> {
        let i = v.index();
        let bit = self.mapped.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0);
        if !bit {
            return None;
        }
        match self.slot[i] {
            0 => None,
            t => Some(self.targets[t as usize - 1]),
        }
    }

    fn put(&mut self, v: ValueId, to: Operand) {
        let i = v.index();
        let t = self.slot[i];
        if t == 0 {
            self.targets.push(to);
            self.slot[i] = self.targets.len() as u32;
            self.mapped[i / 64] |= 1 << (i % 64);
        } else {
            self.targets[t as usize - 1] = to;
        }
    }

    /// Maps `v` to `to`. `to` should already be resolved (see [`Subst::resolve`]) and must not
    /// resolve back to `v`; callers guarantee this by resolving first.
    pub fn set(&mut self, v: ValueId, to: Operand) {
        if to == Operand::Value(v) || v.index() >= self.slot.len() {
            return;
        }
        self.put(v, to);
    }

    /// Whether `v` is mapped to something else.
    pub fn is_mapped(&self, v: ValueId) -> bool {
        self.get(v).is_some()
    }

    /// The final replacement of an operand (itself when unmapped), compressing the chain it follows.
    pub fn resolve(&mut self, o: Operand) -> Operand {
        let Operand::Value(start) = o else { return o };
        let mut cur = o;
        let mut steps = 0usize;
        while let Operand::Value(v) = cur {
            match self.get(v) {
                Some(next) => {
                    cur = next;
                    steps += 1;
                    if steps > self.slot.len() {
                        // A cycle cannot be built through `set` on resolved targets; stop rather
                        // than loop if a caller broke that rule.
                        break;
                    }
                }
                None => break,
            }
        }
        // Path compression: point every value on the chain at the final operand.
        if steps > 1 {
            let mut v = start;
            for _ in 0..steps {
                let next = self.get(v);
                self.put(v, cur);
                match next {
                    Some(Operand::Value(n)) => v = n,
                    _ => break,
                }
            }
        }
        cur
    }

    /// Rewrites one instruction's operands in place.
    pub fn apply_to_args(&mut self, op: &Op, args: &mut [Operand]) {
        for (pos, a) in args.iter_mut().enumerate() {
            let r = self.resolve(*a);
            *a = match r {
                Operand::Const(c) => Operand::Const(const_for_use(op, pos, c)),
                v => v,
            };
        }
    }

    /// Rewrites a terminator's operands in place.
    ///
    /// Returns whether any operand changed.
    pub fn apply_to_term(&mut self, t: &mut Terminator) -> bool {
        let mut changed = false;
        for o in t.operands_mut() {
            let r = self.resolve(*o);
            changed |= r != *o;
            *o = r;
        }
        changed
    }

    /// Rewrites every operand of the kernel (placed instructions and terminators).
    pub fn apply(&mut self, k: &mut Kernel) {
        self.apply_where(k, |_| true);
    }

    /// Rewrites the operands of the blocks `which` selects.
    pub fn apply_where(&mut self, k: &mut Kernel, which: impl Fn(BlockId) -> bool) {
        if self.is_empty() {
            return;
        }
        for b in 0..k.blocks.len() {
            if !which(BlockId(b as u32)) {
                continue;
            }
            for idx in 0..k.blocks[b].insts.len() {
                let i = k.blocks[b].insts[idx];
                let inst = &mut k.insts[i.index()];
                let op = inst.op;
                self.apply_to_args(&op, &mut inst.args);
            }
            let _ = self.apply_to_term(&mut k.blocks[b].term);
        }
    }
}

/// Whether operand `pos` of `op` is an element or byte index (whose literal type is `u64`).
pub fn is_index_position(op: &Op, pos: usize) -> bool {
    pos == 1 && matches!(op, Op::Load | Op::Store | Op::Atomic(_) | Op::AtomicCas | Op::PtrOffset | Op::PtrOffsetBytes)
}

/// The constant to write at operand `pos` of `op` for a value `c`: unchanged, except in index
/// positions, where an integer constant becomes the `u64` with the same meaning (sign-extended
/// when signed), as the text format spells it.
pub fn const_for_use(op: &Op, pos: usize, c: Constant) -> Constant {
    if is_index_position(op, pos) && c.ty.is_int() && c.ty != ScalarType::U64 {
        Constant::u64(c.as_i128() as i64 as u64)
    } else {
        c
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
    for (nb, b) in k.blocks.iter_mut().enumerate() {
        for c in b.term.successors_mut() {
            // A kept block never targets a removed one (caller's contract); if it did, the
            // verifier reports the dangling label rather than this code panicking.
            c.block = BlockId(new_index.get(c.block.index()).copied().unwrap_or(u32::MAX));
        }
        for (n, p) in b.params.iter().enumerate() {
            k.values[p.index()].def = ValueDef::BlockParam(BlockId(nb as u32), n as u32);
        }
    }
    Some(new_index)
}
