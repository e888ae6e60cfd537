//! Pointer provenance: for each value, the kernel parameters and shared declarations it may point
//! into. The one such analysis: launch-graph effects ([`crate::analysis::effects::param_access`]),
//! fusion, the interpreter's written-buffer list (`kir_interp::outputs::written_params`) and the
//! uniformity analysis's memory objects (`kir_passes::uniformity::MemObject`) read it.
//!
//! Guarantees:
//! - [`pointer_roots`] is flow-insensitive and over-approximates, as the least fixed point of: a
//!   kernel parameter roots at itself, `addr @x` at its shared declaration, the pointer result of
//!   a `call` at [`Root::Unknown`] (a function returns some pointer it was passed, which a
//!   body-local analysis does not follow), and the result of `offset`, `offset.bytes` and
//!   `ptrcast` and every block parameter get the roots of their pointer operand / of every argument
//!   passed to them. A pointer made any other way has no roots.
//! - [`reachable_pointer_roots`] is the same over the blocks reachable from the entry only:
//!   instructions of unreachable blocks and the arguments their terminators pass are ignored (a
//!   block parameter joins only what its reachable predecessors pass).
//! - Only placed instructions count; dangling handles (an instruction, value or block outside its
//!   arena) are skipped, never a panic, so it may run on kernels that were not verified.
//! - Worklist with difference propagation, no recursion: each root crosses each flow edge (an
//!   operand to a result, an argument to a block parameter) at most once, so the cost is at most
//!   the flow edges times the distinct roots (a log factor aside), however the blocks are ordered.
//! - [`pointer_origins`] is the kernel-parameter part, as parameter indices.

use crate::analysis::cfg::Cfg;
use crate::ir::{BlockId, Kernel, Operand, ValueId};
use crate::op::Op;
use std::collections::BTreeSet;

/// What a pointer may point into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Root {
    /// The kernel parameter with this index.
    Param(u32),
    /// The shared declaration with this index (`addr @x`).
    Shared(u32),
    /// No known origin (the pointer result of a `call`): anywhere in the pointer's address space.
    Unknown,
}

/// For each value of `k` (indexed by [`ValueId`]), the roots its pointer may be derived from.
pub fn pointer_roots(k: &Kernel) -> Vec<BTreeSet<Root>> {
    roots(k, |_| true)
}

/// [`pointer_roots`] over the blocks reachable from the entry (`cfg` is `Cfg::new(k)`): values
/// defined in unreachable blocks get no roots, and no argument an unreachable block passes counts.
pub fn reachable_pointer_roots(k: &Kernel, cfg: &Cfg) -> Vec<BTreeSet<Root>> {
    roots(k, |b| b.index() < cfg.len() && cfg.is_reachable(b))
}

/// The least fixed point over the blocks `include` selects.
fn roots(k: &Kernel, include: impl Fn(BlockId) -> bool) -> Vec<BTreeSet<Root>> {
    let nv = k.values.len();
    let mut roots: Vec<BTreeSet<Root>> = vec![BTreeSet::new(); nv];
    // `flows[v]`: the values that get every root of `v`.
    let mut flows: Vec<Vec<ValueId>> = vec![Vec::new(); nv];
    let mut flow = |from: Operand, to: ValueId| {
        if let Operand::Value(f) = from {
            if f.index() < nv && to.index() < nv {
                flows[f.index()].push(to);
            }
        }
    };
    for (i, p) in k.params.iter().enumerate() {
        if let Some(r) = roots.get_mut(p.index()) {
            r.insert(Root::Param(i as u32));
        }
    }
    for (bi, b) in k.blocks.iter().enumerate() {
        if !include(BlockId(bi as u32)) {
            continue;
        }
        for i in &b.insts {
            let Some(d) = k.insts.get(i.index()) else { continue };
            let Some(r) = d.result else { continue };
            match &d.op {
                Op::SharedAddr(n) => {
                    if let Some(set) = roots.get_mut(r.index()) {
                        set.insert(Root::Shared(*n));
                    }
                }
                Op::Call(_) if k.values.get(r.index()).is_some_and(|v| v.ty.is_ptr()) => {
                    roots[r.index()].insert(Root::Unknown);
                }
                Op::PtrOffset | Op::PtrOffsetBytes | Op::PtrCast(_) => {
                    if let Some(&a) = d.args.first() {
                        flow(a, r);
                    }
                }
                _ => {}
            }
        }
        for call in b.term.successors() {
            let Some(target) = k.blocks.get(call.block.index()) else { continue };
            for (&p, &a) in target.params.iter().zip(&call.args) {
                flow(a, p);
            }
        }
    }
    // Difference propagation: `pending[v]` holds the roots of `v` not yet passed on, so each
    // root crosses each flow edge once.
    let mut pending: Vec<Vec<Root>> = roots.iter().map(|r| r.iter().copied().collect()).collect();
    let mut work: Vec<usize> = (0..nv).filter(|&v| !pending[v].is_empty()).collect();
    while let Some(v) = work.pop() {
        let delta = std::mem::take(&mut pending[v]);
        for &t in &flows[v] {
            let t = t.index();
            let was_idle = pending[t].is_empty();
            for &r in &delta {
                if roots[t].insert(r) {
                    pending[t].push(r);
                }
            }
            if was_idle && !pending[t].is_empty() {
                work.push(t);
            }
        }
    }
    roots
}

/// For each value of `k`, the kernel parameters (indices) its pointer may be derived from (the
/// [`Root::Param`] part of [`pointer_roots`]).
pub fn pointer_origins(k: &Kernel) -> Vec<BTreeSet<u32>> {
    pointer_roots(k)
        .into_iter()
        .map(|s| s.into_iter().filter_map(|r| if let Root::Param(i) = r { Some(i) } else { None }).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "func @id(%p: ptr<shared, u32>) -> ptr<shared, u32> {
entry:
  ret %p
}
kernel @k(%g: ptr<global, u32>, %sp: ptr<shared, u32>, %n: u32) {
  shared @s: u32[64]
  shared @t: u32[64]
entry:
  %a = addr @s
  %b = addr @t
  %c = lt.u32 %n, 3
  br %c, l, r
l:
  %a1 = offset %a, 1
  jmp j(%a1, %a)
r:
  jmp j(%sp, %a)
j(%q: ptr<shared, u32>, %same: ptr<shared, u32>):
  %r = call @id(%b)
  %g1 = ptrcast %g : ptr<global, f32>
  %g2 = offset.bytes %g1, 4
  ret
dead:
  %d = addr @t
  jmp j(%d, %d)
}
";

    fn value(k: &Kernel, name: &str) -> usize {
        k.values.iter().position(|d| d.name == name).unwrap_or_else(|| panic!("no %{name}"))
    }

    #[test]
    fn roots_of_parameters_shared_arrays_joins_and_calls() {
        let m = crate::parse(SRC).unwrap_or_else(|d| panic!("{d:?}"));
        let k = &m.kernels[0];
        let all = pointer_roots(k);
        let reach = reachable_pointer_roots(k, &Cfg::new(k));
        let set = |r: &[Root]| r.iter().copied().collect::<BTreeSet<Root>>();
        for roots in [&all, &reach] {
            assert_eq!(roots[value(k, "g")], set(&[Root::Param(0)]));
            assert_eq!(roots[value(k, "g2")], set(&[Root::Param(0)]), "through ptrcast and offset.bytes");
            assert_eq!(roots[value(k, "sp")], set(&[Root::Param(1)]));
            assert_eq!(roots[value(k, "n")], set(&[Root::Param(2)]), "every parameter roots at itself");
            assert_eq!(roots[value(k, "c")], set(&[]), "a comparison has no roots");
            assert_eq!(roots[value(k, "a1")], set(&[Root::Shared(0)]));
            assert_eq!(roots[value(k, "r")], set(&[Root::Unknown]), "a call's pointer result");
        }
        // The unreachable block passes @t's address to both parameters of `j`.
        assert_eq!(all[value(k, "q")], set(&[Root::Param(1), Root::Shared(0), Root::Shared(1)]));
        assert_eq!(all[value(k, "same")], set(&[Root::Shared(0), Root::Shared(1)]));
        assert_eq!(reach[value(k, "q")], set(&[Root::Param(1), Root::Shared(0)]));
        assert_eq!(reach[value(k, "same")], set(&[Root::Shared(0)]));
        assert_eq!(reach[value(k, "d")], set(&[]), "defined in an unreachable block");
        let origins = pointer_origins(k);
        assert_eq!(origins[value(k, "q")], [1].into_iter().collect());
        assert_eq!(origins[value(k, "r")], BTreeSet::new());
    }

    #[test]
    fn a_pointer_carried_around_a_loop_keeps_its_one_root() {
        // The least fixed point: the back edge passes a pointer derived from the parameter itself.
        let m = crate::parse(
            "kernel @k(%n: u32) {
  shared @s: u32[64]
entry:
  %a = addr @s
  jmp head(%a, 0)
head(%p: ptr<shared, u32>, %i: u32):
  %c = lt.u32 %i, %n
  br %c, body, out
body:
  %p2 = offset %p, 1
  %i2 = add.u32 %i, 1
  jmp head(%p2, %i2)
out:
  ret
}",
        )
        .unwrap_or_else(|d| panic!("{d:?}"));
        let k = &m.kernels[0];
        let roots = pointer_roots(k);
        for v in ["p", "p2"] {
            assert_eq!(roots[value(k, v)], [Root::Shared(0)].into_iter().collect(), "%{v}");
        }
    }

    #[test]
    fn dangling_handles_are_skipped() {
        let m = crate::parse(SRC).unwrap();
        let mut k = m.kernels[0].clone();
        let entry = crate::ir::Kernel::ENTRY;
        k.block_mut(entry).insts.push(crate::ir::InstId(9999));
        k.params.push(ValueId(9999));
        let roots = pointer_roots(&k);
        assert_eq!(roots.len(), k.values.len());
    }
}
