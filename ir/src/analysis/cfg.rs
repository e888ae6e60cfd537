//! The control-flow graph of a kernel (petgraph), with dominators and post-dominators.
//!
//! Guarantees:
//! - One graph node per block (node index == block index), one edge per terminator successor, in
//!   terminator order (`br %c, a, a` gives two edges to `a`).
//! - Dominators are computed from the entry block over reachable blocks only; an unreachable block
//!   has no immediate dominator and is dominated by nothing but itself.
//! - Post-dominators are computed (on first use) on the reversed graph with a virtual exit node that every `ret`
//!   block flows to. [`Cfg::ipdom`] returns `None` when the immediate post-dominator is the virtual
//!   exit, or when the block cannot reach any `ret` (an infinite loop).
//! - [`Cfg::post_dominators`] gives every block's immediate post-dominator under an explicit
//!   [`ExitPolicy`]: [`ExitPolicy::Ret`] is [`Cfg::ipdom`]'s; [`ExitPolicy::RetOrStuck`] also lets
//!   every block that cannot reach a `ret` flow to the virtual exit (a thread stuck in an infinite
//!   loop counts as having left), as the uniformity analysis needs.
//! - [`Cfg::dominates`] and [`Cfg::post_dominates`] answer in O(1) (intervals of a DFS over the
//!   dominator trees), so analyses that ask per use stay linear.
//! - [`Cfg::to_dot`] output is deterministic.
//! - Nothing recurses (petgraph's DFS and dominator algorithms are iterative): a 100,000-block chain
//!   needs no stack. [`Cfg::back_edges`] is linear in the edges and [`Cfg::natural_loop`] in the
//!   size of the loop.

use crate::ir::{BlockId, Kernel, Terminator};
use crate::text::printer::{print_inst, print_terminator};
use petgraph::algo::dominators::{simple_fast, Dominators};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{DfsPostOrder, Walker};
use std::fmt::Write;

/// Which blocks flow to the virtual exit when post-dominators are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitPolicy {
    /// Only `ret` blocks; a block that cannot reach a `ret` has no post-dominator.
    Ret,
    /// `ret` blocks and every block that cannot reach a `ret` (infinite loops exit).
    RetOrStuck,
}

/// The CFG of one kernel.
pub struct Cfg {
    /// Node `i` is block `i`; edge weights are the successor's position in the terminator (0 = then/jmp, 1 = else).
    pub graph: DiGraph<BlockId, u8>,
    succs: Vec<Vec<BlockId>>,
    preds: Vec<Vec<BlockId>>,
    rpo: Vec<BlockId>,
    reachable: Vec<bool>,
    doms: Dominators<NodeIndex>,
    /// Pre/post DFS numbers of each block in the dominator tree (for O(1) `dominates`).
    dom_interval: Vec<(u32, u32)>,
    /// Post-dominance, computed on first use (the verifier and the emitter never ask for it).
    post: std::sync::OnceLock<PostDominance>,
    /// Blocks ending in `ret` (the virtual exit's predecessors).
    returns: Vec<bool>,
}

/// Post-dominance over the reversed graph plus a virtual exit (its last node).
struct PostDominance {
    pdoms: Dominators<NodeIndex>,
    exit: NodeIndex,
    reaches_exit: Vec<bool>,
    /// Pre/post DFS numbers of each block in the post-dominator tree (rooted at the virtual exit).
    pdom_interval: Vec<(u32, u32)>,
}

/// DFS entry/exit numbers of every node of a tree given by parent links (`None` = a root).
/// Nodes not in any tree keep `(u32::MAX, 0)`, an empty interval.
fn tree_intervals(n: usize, parent: impl Fn(usize) -> Option<usize>, roots: &[usize]) -> Vec<(u32, u32)> {
    let mut children = vec![Vec::new(); n];
    for v in 0..n {
        if let Some(p) = parent(v) {
            if p < n && p != v {
                children[p].push(v);
            }
        }
    }
    let mut out = vec![(u32::MAX, 0u32); n];
    let mut clock = 0u32;
    for &r in roots {
        let mut stack = vec![(r, 0usize)];
        out[r].0 = clock;
        clock += 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&c) = children[v].get(*next) {
                *next += 1;
                out[c].0 = clock;
                clock += 1;
                stack.push((c, 0));
            } else {
                out[v].1 = clock;
                clock += 1;
                stack.pop();
            }
        }
    }
    out
}

fn within(inner: (u32, u32), outer: (u32, u32)) -> bool {
    outer.0 <= inner.0 && inner.1 <= outer.1
}

impl Cfg {
    pub fn new(k: &Kernel) -> Cfg {
        let n = k.blocks.len();
        let mut graph = DiGraph::with_capacity(n, n * 2);
        for b in k.block_ids() {
            graph.add_node(b);
        }
        let mut succs = vec![vec![]; n];
        let mut preds = vec![vec![]; n];
        for b in k.block_ids() {
            for (pos, call) in k.block(b).term.successors().enumerate() {
                if call.block.index() < n {
                    graph.add_edge(NodeIndex::new(b.index()), NodeIndex::new(call.block.index()), pos as u8);
                    succs[b.index()].push(call.block);
                    preds[call.block.index()].push(b);
                }
            }
        }
        let entry = NodeIndex::new(0);
        // The one reverse post-order of the crate (a depth-first search taking a block's last
        // successor first; see `Kernel::reverse_post_order`): passes, the emitter and the
        // analyses all walk blocks in this order.
        let post = k.reverse_post_order();
        let mut reachable = vec![false; n];
        for b in &post {
            reachable[b.index()] = true;
        }
        let doms = simple_fast(&graph, entry);

        let dom_interval = if n > 0 {
            tree_intervals(
                n,
                |v| if reachable[v] { doms.immediate_dominator(NodeIndex::new(v)).map(|d| d.index()) } else { None },
                &[0],
            )
        } else {
            vec![]
        };
        let returns = k.blocks.iter().map(|b| matches!(b.term, Terminator::Ret(_))).collect();
        Cfg { graph, succs, preds, rpo: post, reachable, doms, dom_interval, post: std::sync::OnceLock::new(), returns }
    }

    /// The reversed graph plus a virtual exit (its last node), with edges from the exit to the
    /// blocks `to_exit` selects.
    fn reversed_with_exit(&self, to_exit: impl Fn(usize) -> bool) -> (DiGraph<(), ()>, NodeIndex) {
        let n = self.succs.len();
        let mut rev = DiGraph::<(), ()>::with_capacity(n + 1, n * 2 + 1);
        for _ in 0..=n {
            rev.add_node(());
        }
        let exit = NodeIndex::new(n);
        for b in 0..n {
            if to_exit(b) {
                rev.add_edge(exit, NodeIndex::new(b), ());
            }
            for s in &self.succs[b] {
                rev.add_edge(NodeIndex::new(s.index()), NodeIndex::new(b), ());
            }
        }
        (rev, exit)
    }

    fn post(&self) -> &PostDominance {
        self.post.get_or_init(|| {
            let n = self.succs.len();
            let (rev, exit) = self.reversed_with_exit(|b| self.returns[b]);
            let pdoms = simple_fast(&rev, exit);
            let mut reaches_exit = vec![false; n];
            for node in DfsPostOrder::new(&rev, exit).iter(&rev) {
                if node != exit {
                    reaches_exit[node.index()] = true;
                }
            }
            // Post-dominator tree over blocks plus the virtual exit (index n).
            let pdom_all = tree_intervals(
                n + 1,
                |v| {
                    if v == n || !reaches_exit[v] {
                        None
                    } else {
                        pdoms.immediate_dominator(NodeIndex::new(v)).map(|d| d.index())
                    }
                },
                &[n],
            );
            let pdom_interval = pdom_all[..n].to_vec();
            PostDominance { pdoms, exit, reaches_exit, pdom_interval }
        })
    }

    /// Every block's immediate post-dominator under `policy` (`None` when it is the virtual exit or
    /// the block does not reach it). With [`ExitPolicy::Ret`] entry `b` is [`Cfg::ipdom`]`(b)`.
    pub fn post_dominators(&self, policy: ExitPolicy) -> Vec<Option<BlockId>> {
        let n = self.succs.len();
        let ids = (0..n).map(|b| BlockId(b as u32));
        match policy {
            ExitPolicy::Ret => ids.map(|b| self.ipdom(b)).collect(),
            ExitPolicy::RetOrStuck => {
                let (rev, exit) = self.reversed_with_exit(|b| self.returns[b] || !self.reaches_exit(BlockId(b as u32)));
                let doms = simple_fast(&rev, exit);
                (0..n)
                    .map(|b| match doms.immediate_dominator(NodeIndex::new(b)) {
                        Some(d) if d != exit => Some(BlockId(d.index() as u32)),
                        _ => None,
                    })
                    .collect()
            }
        }
    }

    pub fn len(&self) -> usize {
        self.succs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.succs.is_empty()
    }
    /// Successors in terminator order (duplicates kept).
    pub fn succs(&self, b: BlockId) -> &[BlockId] {
        &self.succs[b.index()]
    }
    /// Predecessors, one entry per edge, in block order.
    pub fn preds(&self, b: BlockId) -> &[BlockId] {
        &self.preds[b.index()]
    }
    /// Reachable blocks in reverse post-order from the entry (the entry first).
    pub fn rpo(&self) -> &[BlockId] {
        &self.rpo
    }
    pub fn is_reachable(&self, b: BlockId) -> bool {
        self.reachable[b.index()]
    }
    /// Whether a `ret` is reachable from `b`.
    pub fn reaches_exit(&self, b: BlockId) -> bool {
        self.post().reaches_exit[b.index()]
    }
    /// The immediate dominator (None for the entry and unreachable blocks).
    pub fn idom(&self, b: BlockId) -> Option<BlockId> {
        if !self.is_reachable(b) {
            return None;
        }
        self.doms.immediate_dominator(NodeIndex::new(b.index())).map(|n| BlockId(n.index() as u32))
    }
    /// Whether `a` dominates `b` (every block dominates itself).
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        if a == b {
            return true;
        }
        if !self.is_reachable(b) || !self.is_reachable(a) {
            return false;
        }
        within(self.dom_interval[b.index()], self.dom_interval[a.index()])
    }
    /// The immediate post-dominator; `None` when it is the virtual exit or `b` cannot reach a `ret`.
    pub fn ipdom(&self, b: BlockId) -> Option<BlockId> {
        if !self.reaches_exit(b) {
            return None;
        }
        let post = self.post();
        match post.pdoms.immediate_dominator(NodeIndex::new(b.index())) {
            Some(n) if n != post.exit => Some(BlockId(n.index() as u32)),
            _ => None,
        }
    }
    /// Whether `a` post-dominates `b` (every path from `b` to a `ret` passes through `a`; every block
    /// post-dominates itself). False when `b` cannot reach a `ret`.
    pub fn post_dominates(&self, a: BlockId, b: BlockId) -> bool {
        if a == b {
            return true;
        }
        if !self.reaches_exit(b) || !self.reaches_exit(a) {
            return false;
        }
        let post = self.post();
        within(post.pdom_interval[b.index()], post.pdom_interval[a.index()])
    }
    /// Edges `from → to` where `to` dominates `from` (loop back edges), in RPO of `from`.
    pub fn back_edges(&self) -> Vec<(BlockId, BlockId)> {
        let mut out = Vec::new();
        for &b in &self.rpo {
            let ss = self.succs(b);
            for (i, &s) in ss.iter().enumerate() {
                // Duplicate edges (`br %c, a, a`) are reported once; a block has at most two successors.
                if self.dominates(s, b) && !ss[..i].contains(&s) {
                    out.push((b, s));
                }
            }
        }
        out
    }
    /// The blocks of the natural loop with header `header` formed by the back edge `latch → header`.
    pub fn natural_loop(&self, header: BlockId, latch: BlockId) -> Vec<BlockId> {
        // A set rather than a per-block table: the cost is the loop's size, not the kernel's.
        let mut in_body = rustc_hash::FxHashSet::default();
        in_body.insert(header);
        let mut body = vec![header];
        let mut stack = vec![latch];
        while let Some(b) = stack.pop() {
            if in_body.insert(b) {
                body.push(b);
                stack.extend(self.preds(b).iter().copied().filter(|p| self.is_reachable(*p)));
            }
        }
        body.sort();
        body
    }

    /// Graphviz DOT: one node per block, labelled with its parameters and instructions.
    pub fn to_dot(&self, k: &Kernel) -> String {
        let esc = |s: &str| {
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('{', "\\{")
                .replace('}', "\\}")
                .replace('<', "\\<")
                .replace('>', "\\>")
                .replace('|', "\\|")
        };
        let mut out = String::new();
        let _ = writeln!(out, "digraph \"{}\" {{", esc(&k.name));
        let _ = writeln!(out, "  node [shape=record, fontname=\"monospace\"];");
        for b in k.block_ids() {
            let blk = k.block(b);
            let mut label = blk.name.to_string();
            if !blk.params.is_empty() {
                let ps: Vec<String> =
                    blk.params.iter().map(|p| format!("%{}: {}", k.value(*p).name, k.value(*p).ty)).collect();
                label = format!("{label}({})", ps.join(", "));
            }
            let mut lines = vec![esc(&format!("{label}:"))];
            for &i in &blk.insts {
                lines.push(esc(&print_inst(k, i)));
            }
            lines.push(esc(&print_terminator(k, &blk.term)));
            let style = if self.is_reachable(b) { "" } else { ", style=dashed" };
            let _ = writeln!(out, "  b{} [label=\"{{{}\\l}}\"{style}];", b.0, lines.join("\\l"));
        }
        for b in k.block_ids() {
            let term = &k.block(b).term;
            for (pos, s) in self.succs(b).iter().enumerate() {
                let label = match (term, pos) {
                    (Terminator::Br { .. }, 0) => " [label=\"T\"]",
                    (Terminator::Br { .. }, _) => " [label=\"F\"]",
                    _ => "",
                };
                let _ = writeln!(out, "  b{} -> b{}{label};", b.0, s.0);
            }
        }
        out.push_str("}\n");
        out
    }
}
