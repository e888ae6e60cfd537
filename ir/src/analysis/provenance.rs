//! Pointer provenance: for each value, the kernel parameters and shared declarations it may point
//! into. The one such analysis: launch-graph effects ([`crate::analysis::effects::param_access`]), fusion and
//! the interpreter's written-buffer list (`kir_interp::outputs::written_params`) read it.
//!
//! Guarantees:
//! - [`pointer_roots`] is flow-insensitive and over-approximates: a kernel parameter roots at
//!   itself, `addr @x` at its shared declaration, and the result of `offset`, `offset.bytes` and
//!   `ptrcast` and every block parameter get the roots of their pointer operand / of every argument
//!   passed to them (a least fixed point). A pointer made any other way has no roots.
//! - Only placed instructions count; dangling handles (an instruction, value or block outside its
//!   arena) are skipped, never a panic, so it may run on kernels that were not verified.
//! - [`pointer_origins`] is the kernel-parameter part, as parameter indices.

use crate::ir::{Kernel, Operand, ValueId};
use crate::op::Op;
use std::collections::BTreeSet;

/// What a pointer may point into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Root {
    /// The kernel parameter with this index.
    Param(u32),
    /// The shared declaration with this index (`addr @x`).
    Shared(u32),
}

/// For each value of `k` (indexed by [`ValueId`]), the roots its pointer may be derived from.
pub fn pointer_roots(k: &Kernel) -> Vec<BTreeSet<Root>> {
    let mut roots: Vec<BTreeSet<Root>> = vec![BTreeSet::new(); k.values.len()];
    for (i, p) in k.params.iter().enumerate() {
        if let Some(r) = roots.get_mut(p.index()) {
            r.insert(Root::Param(i as u32));
        }
    }
    for b in &k.blocks {
        for i in &b.insts {
            let Some(d) = k.insts.get(i.index()) else { continue };
            if let (Op::SharedAddr(n), Some(r)) = (&d.op, d.result) {
                if let Some(r) = roots.get_mut(r.index()) {
                    r.insert(Root::Shared(*n));
                }
            }
        }
    }
    let add = |roots: &mut Vec<BTreeSet<Root>>, to: ValueId, from: Operand| -> bool {
        let Operand::Value(f) = from else { return false };
        let src = match roots.get(f.index()) {
            Some(s) if !s.is_empty() => s.clone(),
            _ => return false,
        };
        match roots.get_mut(to.index()) {
            Some(dst) => {
                let before = dst.len();
                dst.extend(src);
                dst.len() != before
            }
            None => false,
        }
    };
    loop {
        let mut changed = false;
        for b in &k.blocks {
            for i in &b.insts {
                let Some(d) = k.insts.get(i.index()) else { continue };
                if let (Op::PtrOffset | Op::PtrOffsetBytes | Op::PtrCast(_), Some(r), Some(&a)) =
                    (&d.op, d.result, d.args.first())
                {
                    changed |= add(&mut roots, r, a);
                }
            }
        }
        for b in &k.blocks {
            for call in b.term.successors() {
                let Some(target) = k.blocks.get(call.block.index()) else { continue };
                for (&p, &a) in target.params.iter().zip(&call.args) {
                    changed |= add(&mut roots, p, a);
                }
            }
        }
        if !changed {
            return roots;
        }
    }
}

/// For each value of `k`, the kernel parameters (indices) its pointer may be derived from (the
/// [`Root::Param`] part of [`pointer_roots`]).
pub fn pointer_origins(k: &Kernel) -> Vec<BTreeSet<u32>> {
    pointer_roots(k)
        .into_iter()
        .map(|s| s.into_iter().filter_map(|r| if let Root::Param(i) = r { Some(i) } else { None }).collect())
        .collect()
}
