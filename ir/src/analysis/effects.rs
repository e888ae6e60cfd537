//! What kernels and launches do to their buffers, and the dependency DAG of a launch graph.
//!
//! - [`param_access`] over-approximates: a parameter is "read" if any load may use a pointer
//!   derived from it ([`crate::analysis::provenance`]'s flow-insensitive analysis); a pointer passed
//!   to a call counts as read, written and accessed atomically.
//! - [`dependency_graph`] is a DAG over launch indices with an edge `i -> j` (`i < j`) exactly when
//!   launch `j` reads a buffer `i` writes, writes a buffer `i` reads, or writes a buffer `i` writes.
//!   Distinct buffer names are assumed not to alias: a graph's buffer parameters must be distinct
//!   allocations.

use crate::analysis::provenance::pointer_origins;
use crate::graph::{Graph, Launch};
use crate::ir::{Kernel, Module, Operand};
use crate::op::Op;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::BTreeSet;

/// How a kernel uses one of its pointer parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParamAccess {
    /// Some load or atomic may read through a pointer derived from the parameter.
    pub read: bool,
    /// Some store or atomic may write through a pointer derived from the parameter.
    pub write: bool,
    /// Some atomic may access it.
    pub atomic: bool,
}

/// How `k` accesses each of its parameters (all-false for scalars). A pointer passed to a call
/// counts as read, written and accessed atomically (the callee is not looked into).
pub fn param_access(k: &Kernel) -> Vec<ParamAccess> {
    let origin = pointer_origins(k);
    let mut acc = vec![ParamAccess::default(); k.params.len()];
    for i in k.blocks.iter().flat_map(|b| &b.insts) {
        let Some(d) = k.insts.get(i.index()) else { continue };
        let (read, write, atomic) = match d.op {
            Op::Load | Op::LoadVec(_) | Op::Ldmatrix(..) => (true, false, false),
            Op::Store | Op::StoreVec(_) => (false, true, false),
            Op::Atomic(_) | Op::AtomicCas => (true, true, true),
            // A function may do anything through the pointers it is passed.
            Op::Call(_) => (true, true, true),
            // `cp.async` writes its first (shared) address and reads its second (global) one.
            Op::CpAsync(_) => {
                for (at, read, write) in [(0, false, true), (2, true, false)] {
                    let Some(p) = d.args.get(at).and_then(|a| a.as_value()) else { continue };
                    for &o in origin.get(p.index()).into_iter().flatten() {
                        if let Some(a) = acc.get_mut(o as usize) {
                            a.read |= read;
                            a.write |= write;
                        }
                    }
                }
                continue;
            }
            _ => continue,
        };
        let pointers: &[Operand] = if matches!(d.op, Op::Call(_)) { &d.args } else { &d.args[..d.args.len().min(1)] };
        for p in pointers.iter().filter_map(|a| a.as_value()) {
            for &o in origin.get(p.index()).into_iter().flatten() {
                if let Some(a) = acc.get_mut(o as usize) {
                    a.read |= read;
                    a.write |= write;
                    a.atomic |= atomic;
                }
            }
        }
    }
    acc
}

/// The buffers a launch reads and writes (by graph name). An unknown kernel is taken to read and
/// write every buffer it is passed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchEffects {
    pub reads: BTreeSet<String>,
    pub writes: BTreeSet<String>,
}

pub fn launch_effects(m: &Module, l: &Launch) -> LaunchEffects {
    let mut e = LaunchEffects::default();
    let kernel = m.kernel(&l.kernel);
    let access = kernel.map(param_access);
    for (i, name) in l.value_args() {
        let a = match &access {
            Some(acc) => acc.get(i).copied().unwrap_or_default(),
            None => ParamAccess { read: true, write: true, atomic: true },
        };
        if a.read {
            e.reads.insert(name.to_string());
        }
        if a.write {
            e.writes.insert(name.to_string());
        }
    }
    e
}

/// Why one launch must run after another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hazard {
    /// The later launch reads what the earlier one wrote.
    ReadAfterWrite,
    /// The later launch overwrites what the earlier one read.
    WriteAfterRead,
    /// Both write the buffer; the later write must win.
    WriteAfterWrite,
}

impl Hazard {
    pub fn name(self) -> &'static str {
        match self {
            Hazard::ReadAfterWrite => "reads what it wrote",
            Hazard::WriteAfterRead => "overwrites what it read",
            Hazard::WriteAfterWrite => "overwrites what it wrote",
        }
    }
}

/// One reason for an edge of the dependency graph.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dependency {
    pub buffer: String,
    pub hazard: Hazard,
}

/// The dependency DAG of a graph: node `n` has weight `n` (the launch index, nodes are added in
/// launch order) and an edge `i -> j` lists every hazard between launches `i < j`.
pub fn dependency_graph(m: &Module, g: &Graph) -> DiGraph<usize, Vec<Dependency>> {
    let effects: Vec<LaunchEffects> = g.launches.iter().map(|l| launch_effects(m, l)).collect();
    let mut dag = DiGraph::new();
    let nodes: Vec<NodeIndex> = (0..g.launches.len()).map(|i| dag.add_node(i)).collect();
    for j in 0..effects.len() {
        for i in 0..j {
            let (a, b) = (&effects[i], &effects[j]);
            let mut deps = BTreeSet::new();
            for buf in a.writes.intersection(&b.reads) {
                deps.insert(Dependency { buffer: buf.clone(), hazard: Hazard::ReadAfterWrite });
            }
            for buf in a.reads.intersection(&b.writes) {
                deps.insert(Dependency { buffer: buf.clone(), hazard: Hazard::WriteAfterRead });
            }
            for buf in a.writes.intersection(&b.writes) {
                deps.insert(Dependency { buffer: buf.clone(), hazard: Hazard::WriteAfterWrite });
            }
            if !deps.is_empty() {
                dag.add_edge(nodes[i], nodes[j], deps.into_iter().collect());
            }
        }
    }
    dag
}
