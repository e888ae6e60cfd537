//! Value substitution: the one way to replace the uses of values by operands.
//!
//! Guarantees:
//! - [`Subst::apply`] rewrites every operand of every placed instruction and terminator (never an
//!   unplaced instruction); chains of replacements resolve transitively, path-compressed, so a
//!   pass that maps many values stays linear.
//! - A constant put in an index position (load/store/atom index, `offset` amount, see
//!   [`is_index_position`]) is converted to the `u64` the text format uses there, with the same
//!   meaning (signed indices are sign-extended), so the printed kernel re-parses to the same kernel.
//! - [`Kernel::replace_uses`] is this substitution for one value.

use crate::ir::{Kernel, Operand, Terminator, ValueId};
use crate::op::Op;
use crate::types::{Constant, ScalarType};
use crate::BlockId;

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

/// Replaces every use of `from` in `k` (operands of placed instructions and block arguments) by
/// `to`: a one-value [`Subst`], so a constant put in an index position becomes the `u64` the text
/// format uses there.
pub fn replace_uses(k: &mut Kernel, from: ValueId, to: Operand) {
    let mut s = Subst::new(k);
    s.set(from, to);
    s.apply(k);
}
