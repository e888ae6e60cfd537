//! `offsets`: element indices of memory accesses become pointers plus constant offsets, so the
//! PTX addresses them as `[reg+imm]` and accesses through one pointer and index share it.
//!
//! Guarantees:
//! - A `load`/`store`/`atom` whose index is a `u32` value `%x` becomes an access at a constant
//!   index of `%q = offset %p, %y` (inserted just before it): with `%x = add.u32 %y, C` (or
//!   `add.u32 C, %y`) when [`UpperBounds`] proves `%y + C` below 2^32, else with `%y = %x`, `C = 0`.
//!   It is rewritten when that saves something: `C` is not 0, or another access with a `C` other
//!   than 0 uses the same `%p` and `%y` (then `cse` leaves one `offset` for them); other accesses
//!   stay as written (the PTX emitter shares their address arithmetic).
//!   The element addressed is the same: `p + 4 (y + C)` with no wrap-around is `(p + 4 y) + 4 C`
//!   (any element size), and the offset pointer of a `u32` index lies within 2^35 bytes of `%p`,
//!   where the interpreter's pointer arithmetic does not wrap either. An access that faulted still
//!   faults (its address is unchanged); nothing else is touched.
//! - Indices of other types are left alone (a `u64` index scaled past 2^40 bytes would wrap
//!   differently as a pointer than as an address), and so are constant indices.
//! - Equal `offset`s (same pointer, same index) are left for `cse` to merge; the pass does not
//!   change the CFG and runs in linear time (bounds are memoized).

use crate::pass::{Pass, PassContext};
use kir_ir::analysis::ranges::UpperBounds;
use kir_ir::inline::Names;
use kir_ir::{BinOp, Constant, InstId, Kernel, Op, Operand, ScalarType, ValueDef};

pub struct Offsets;

impl Pass for Offsets {
    fn name(&self) -> &'static str {
        "offsets"
    }

    fn preserves_cfg(&self) -> bool {
        true
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        // (block, instruction) → (pointer, base index, constant)
        let mut plan: Vec<(usize, InstId, Operand, Operand, u64)> = Vec::new();
        {
            let mut ub = UpperBounds::new(k);
            for (b, i) in k.placed_insts() {
                let d = k.inst(i);
                if !matches!(d.op, Op::Load | Op::Store | Op::Atomic(_) | Op::AtomicCas) {
                    continue;
                }
                let Some(x) = d.args.get(1).and_then(|a| a.as_value()) else { continue };
                if k.value_type(x).scalar() != Some(ScalarType::U32) {
                    continue;
                }
                let (base, c) = match k.value(x).def {
                    ValueDef::Inst(xi) => match (k.inst(xi).op, k.inst(xi).args.as_slice()) {
                        (Op::Bin(BinOp::Add, ScalarType::U32, _), [y, Operand::Const(c)])
                        | (Op::Bin(BinOp::Add, ScalarType::U32, _), [Operand::Const(c), y])
                            if y.as_value().is_some()
                                && ub.max_u32(*y) + (c.bits & u32::MAX as u64) <= u32::MAX as u64 =>
                        {
                            (*y, c.bits & u32::MAX as u64)
                        }
                        _ => (Operand::Value(x), 0),
                    },
                    _ => (Operand::Value(x), 0),
                };
                plan.push((b.index(), i, d.args[0], base, c));
            }
        }
        // Only where it saves something: a constant offset, and the accesses at offset 0 of a
        // pointer and index that one with a constant offset uses (they then share its `offset`).
        // Accesses without a constant offset stay as written: the PTX emitter shares their
        // address arithmetic itself, and the IR stays as the user wrote it.
        let with_offset: rustc_hash::FxHashSet<(Operand, Operand)> =
            plan.iter().filter(|e| e.4 != 0).map(|e| (e.2, e.3)).collect();
        plan.retain(|&(_, _, p, base, c)| c != 0 || with_offset.contains(&(p, base)));
        if plan.is_empty() {
            cx.stats.add("accesses addressed by offset", 0);
            cx.stats.add("constant offsets folded", 0);
            return false;
        }
        let mut names = Names::of(k);
        let mut folded = 0u64;
        let mut inserted: Vec<(usize, InstId, InstId)> = Vec::with_capacity(plan.len());
        for &(b, i, ptr, base, c) in &plan {
            let ptr_v = ptr.as_value().expect("a memory access's pointer is a value");
            let base_name = match base {
                Operand::Value(v) => k.value(v).name.to_string(),
                Operand::Const(_) => "c".to_string(),
            };
            let name = Names::fresh(&mut names.values, &format!("{}.{base_name}", k.value(ptr_v).name));
            let ty = k.value_type(ptr_v);
            let span = k.inst(i).span;
            let q = k.create_inst(Op::PtrOffset, [ptr, base], Some((name, ty)), span);
            let qv = k.inst(q).result.expect("offset has a result");
            let d = k.inst_mut(i);
            d.args[0] = Operand::Value(qv);
            d.args[1] = Operand::Const(Constant::u64(c));
            folded += (c != 0) as u64;
            inserted.push((b, i, q));
        }
        // Place each new `offset` just before its access, block by block.
        inserted.sort_by_key(|(b, _, _)| *b);
        let mut at = 0;
        while at < inserted.len() {
            let b = inserted[at].0;
            let end = at + inserted[at..].iter().take_while(|(x, _, _)| *x == b).count();
            let before: rustc_hash::FxHashMap<InstId, InstId> =
                inserted[at..end].iter().map(|&(_, i, q)| (i, q)).collect();
            let old = std::mem::take(&mut k.blocks[b].insts);
            let mut new = Vec::with_capacity(old.len() + before.len());
            for i in old {
                if let Some(&q) = before.get(&i) {
                    new.push(q);
                }
                new.push(i);
            }
            k.blocks[b].insts = new;
            at = end;
        }
        cx.stats.add("accesses addressed by offset", plan.len() as u64);
        cx.stats.add("constant offsets folded", folded);
        true
    }
}
