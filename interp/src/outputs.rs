//! Which buffers a kernel writes, and one-line summaries of buffers for people.
//!
//! Guarantees:
//! - [`written_params`] marks every pointer parameter from which a `store` or atomic's pointer may
//!   derive (through `offset`, `offset.bytes`, `ptrcast` and block parameters); it never misses
//!   one (it may over-approximate through block parameters that merge pointers).
//! - [`summary`] never panics; it shows the first elements, min/max/mean over non-NaN values and the
//!   NaN count (floats), in a stable format.

use crate::buffer::Buffer;
use kir_ir::op::Op;
use kir_ir::{Kernel, Operand};
use std::collections::BTreeSet;

/// For each kernel parameter, whether the kernel may write memory through it.
pub fn written_params(k: &Kernel) -> Vec<bool> {
    let n = k.values.len();
    let mut roots: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for (i, p) in k.params.iter().enumerate() {
        if p.index() < n {
            roots[p.index()].insert(i);
        }
    }
    let of = |roots: &Vec<BTreeSet<usize>>, o: &Operand| -> BTreeSet<usize> {
        match o {
            Operand::Value(v) if v.index() < n => roots[v.index()].clone(),
            _ => BTreeSet::new(),
        }
    };
    // Fixed point: each round only grows the sets, bounded by params x values.
    loop {
        let mut changed = false;
        for b in &k.blocks {
            for &i in &b.insts {
                let Some(d) = k.insts.get(i.index()) else { continue };
                if let (Op::PtrOffset | Op::PtrOffsetBytes | Op::PtrCast(_), Some(r), Some(a)) =
                    (&d.op, d.result, d.args.first())
                {
                    let add = of(&roots, a);
                    if r.index() < n && !add.is_subset(&roots[r.index()]) {
                        roots[r.index()].extend(add);
                        changed = true;
                    }
                }
            }
            for call in b.term.successors() {
                let Some(target) = k.blocks.get(call.block.index()) else { continue };
                for (p, a) in target.params.iter().zip(&call.args) {
                    let add = of(&roots, a);
                    if p.index() < n && !add.is_subset(&roots[p.index()]) {
                        roots[p.index()].extend(add);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut written = vec![false; k.params.len()];
    for b in &k.blocks {
        for &i in &b.insts {
            let Some(d) = k.insts.get(i.index()) else { continue };
            if matches!(d.op, Op::Store | Op::Atomic(_) | Op::AtomicCas) {
                if let Some(a) = d.args.first() {
                    for r in of(&roots, a) {
                        written[r] = true;
                    }
                }
            }
        }
    }
    written
}

fn fmt_value(v: f64, float: bool) -> String {
    if float {
        format!("{v}")
    } else {
        format!("{}", v as i128)
    }
}

/// `f32[1000] [0, 1.5, ...] min -1 max 2 mean 0.25 NaN 0`.
pub fn summary(b: &Buffer) -> String {
    let vals = b.to_f64();
    let float = b.elem.is_float();
    let first: Vec<String> = vals.iter().take(8).map(|v| fmt_value(*v, float)).collect();
    let more = if vals.len() > 8 { ", ..." } else { "" };
    let mut s = format!("{}[{}] [{}{more}]", b.elem, vals.len(), first.join(", "));
    let nums: Vec<f64> = vals.iter().copied().filter(|v| !v.is_nan()).collect();
    if !nums.is_empty() {
        let min = nums.iter().copied().fold(f64::INFINITY, f64::min);
        let max = nums.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = nums.iter().sum::<f64>() / nums.len() as f64;
        s.push_str(&format!(" min {} max {} mean {mean:.6}", fmt_value(min, float), fmt_value(max, float)));
    }
    if float {
        s.push_str(&format!(" NaN {}", vals.len() - nums.len()));
    }
    s
}
