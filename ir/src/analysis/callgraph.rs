//! The call graph of a module's device functions, and an order of them in which every function
//! comes after the functions it calls (or the call cycle that prevents one).
//!
//! Guarantees:
//! - [`call_graph`] lists each function's callees once, in the order of their first call, with
//!   that call's span; calls of unknown names are left out.
//! - [`successors_first`] is the one depth-first callees-first order (and cycle finder): over
//!   [`call_graph`] it is [`callee_order`], used by the verifier (recursion), the inliner, the
//!   barrier verification across calls and the PTX backend; the interpreter runs it over the
//!   functions a launch reaches for its stack bound. Deterministic: roots and successors are taken
//!   in list order.
//! - [`reached_funcs`] is the one walk from bodies to the functions they reach (the PTX backend's
//!   `.func`s, the interpreter's pre-launch verification).
//! - Iterative: no call chain, however deep, overflows the stack.

use crate::ir::{Kernel, Module};
use crate::op::Op;
use crate::span::Span;
use rustc_hash::FxHashMap as HashMap;

/// The call graph of a module's functions: for each function, the functions it calls (index into
/// `m.funcs`) with the span of a call. Calls to unknown names are left out (reported elsewhere).
pub fn call_graph(m: &Module) -> Vec<Vec<(usize, Span)>> {
    let index = name_index(&m.funcs);
    m.funcs
        .iter()
        .map(|f| placed_callees(f).into_iter().filter_map(|(name, span)| Some((*index.get(name)?, span))).collect())
        .collect()
}

/// The functions of `funcs` that `roots` call, directly or through other functions, following
/// placed calls by name as [`call_graph`] does: indices into `funcs`, increasing. Names missing
/// from `funcs` are left out. What the PTX backend emits for a kernel and what the interpreter
/// verifies before a launch.
pub fn reached_funcs<'a>(funcs: &'a [Kernel], roots: impl IntoIterator<Item = &'a Kernel>) -> Vec<usize> {
    let index = name_index(funcs);
    let mut seen = vec![false; funcs.len()];
    let mut stack: Vec<&Kernel> = roots.into_iter().collect();
    while let Some(body) = stack.pop() {
        for (name, _) in placed_callees(body) {
            if let Some(&i) = index.get(name) {
                if !std::mem::replace(&mut seen[i], true) {
                    stack.push(&funcs[i]);
                }
            }
        }
    }
    (0..funcs.len()).filter(|&i| seen[i]).collect()
}

/// Each function's index by name (the last of a duplicated name; the verifier reports those).
fn name_index(funcs: &[Kernel]) -> HashMap<&str, usize> {
    funcs.iter().enumerate().map(|(i, f)| (f.name.as_str(), i)).collect()
}

/// The names `body`'s placed calls name, each once, in the order of its first call, with that
/// call's span (a call whose callee index is out of range is left out).
fn placed_callees(body: &Kernel) -> Vec<(&str, Span)> {
    let mut out: Vec<(&str, Span)> = Vec::new();
    for (_, i) in body.placed_insts() {
        let Some(d) = body.insts.get(i.index()) else { continue };
        if let Op::Call(c) = d.op {
            if let Some(callee) = body.callees.get(c as usize) {
                if !out.iter().any(|(n, _)| *n == callee.name) {
                    out.push((&callee.name, d.span));
                }
            }
        }
    }
    out
}

/// The functions of `m` in an order where every function comes after the functions it calls, or
/// the first call cycle found (as function indices, the cycle's first function repeated at the
/// end is left out). Iterative (no recursion on deep call chains).
pub fn callee_order(m: &Module) -> Result<Vec<usize>, Vec<(usize, Span)>> {
    let graph = call_graph(m);
    let succs: Vec<Vec<usize>> = graph.iter().map(|calls| calls.iter().map(|c| c.0).collect()).collect();
    successors_first(&succs, 0..succs.len()).map_err(|cycle| {
        cycle.into_iter().map(|(f, e)| (f, graph[f].get(e).map(|c| c.1).unwrap_or(Span::DUMMY))).collect()
    })
}

/// The nodes of a graph given by successor lists (`succs[v]`, indices into `succs`) that are
/// reachable from `roots`, in an order where every node comes after its successors (a depth-first
/// post-order, roots and successors taken in list order), or the first cycle found: the nodes
/// from the one entered twice to the last, each with the position in its successor list of the
/// edge it takes to the next (the last one's edge closes the cycle). A successor out of range is
/// skipped. Iterative: any depth is fine. [`callee_order`] is this over [`call_graph`]; the
/// interpreter runs it over the functions a launch reaches.
pub fn successors_first(
    succs: &[Vec<usize>],
    roots: impl IntoIterator<Item = usize>,
) -> Result<Vec<usize>, Vec<(usize, usize)>> {
    let n = succs.len();
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; n];
    let mut order = Vec::with_capacity(n);
    for root in roots {
        if root >= n || state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&w) = succs[v].get(*next) {
                *next += 1;
                match state.get(w) {
                    Some(0) => {
                        state[w] = 1;
                        stack.push((w, 0));
                    }
                    Some(1) => {
                        // A cycle: the stack from `w` to the top, each with the edge it took.
                        let start = stack.iter().position(|(x, _)| *x == w).unwrap_or(0);
                        return Err(stack[start..].iter().map(|&(x, nx)| (x, nx.saturating_sub(1))).collect());
                    }
                    _ => {}
                }
            } else {
                state[v] = 2;
                order.push(v);
                stack.pop();
            }
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successors_come_first_from_the_roots_only() {
        // 0 -> 1 -> 2, 0 -> 2, 3 -> 0 (3 is not a root), 1 -> 9 (out of range).
        let g = vec![vec![1, 2], vec![2, 9], vec![], vec![0]];
        assert_eq!(successors_first(&g, [0]), Ok(vec![2, 1, 0]));
        assert_eq!(successors_first(&g, 0..4), Ok(vec![2, 1, 0, 3]));
    }

    #[test]
    fn the_first_cycle_is_named_with_its_edges() {
        // 0 -> 1 -> 2 -> 1: the cycle is 1 (edge 0) then 2 (edge 1, back to 1).
        let g = vec![vec![1], vec![2], vec![3, 1], vec![]];
        assert_eq!(successors_first(&g, [0]), Err(vec![(1, 0), (2, 1)]));
        // A self-call.
        assert_eq!(successors_first(&[vec![0]], [0]), Err(vec![(0, 0)]));
    }

    #[test]
    fn reached_funcs_follows_placed_calls_from_the_roots() {
        let src = "func @leaf(%x: u32) -> u32 {\nentry:\n  ret %x\n}\n\
                   func @mid(%x: u32) -> u32 {\nentry:\n  %y = call @leaf(%x)\n  ret %y\n}\n\
                   func @lonely(%x: u32) -> u32 {\nentry:\n  ret %x\n}\n\
                   kernel @k(%p: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  %v = call @mid(%t)\n  store %p[%t], %v\n  ret\n}\n\
                   kernel @plain(%p: ptr<global, u32>) {\nentry:\n  ret\n}\n";
        let mut m = crate::parse(src).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(reached_funcs(&m.funcs, &m.kernels), vec![0, 1]);
        assert_eq!(reached_funcs(&m.funcs, [&m.kernels[1]]), Vec::<usize>::new());
        assert_eq!(reached_funcs(&m.funcs, [&m.funcs[1]]), vec![0]);
        // A callee listed but no longer called is not followed.
        let k = &mut m.kernels[0];
        let insts = &k.insts;
        k.blocks[0].insts.retain(|i| !matches!(insts[i.index()].op, Op::Call(_)));
        assert_eq!(m.kernels[0].callees.len(), 1);
        assert_eq!(reached_funcs(&m.funcs, &m.kernels), Vec::<usize>::new());
    }

    #[test]
    fn callee_order_and_its_cycle_spans() {
        let m = crate::parse(
            "func @a(%x: u32) -> u32 {
entry:
  %y = call @b(%x)
  ret %y
}
func @b(%x: u32) -> u32 {
entry:
  ret %x
}
",
        )
        .unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(callee_order(&m), Ok(vec![1, 0]));
        let mut m = m;
        // Make @b call @a: a cycle a -> b -> a, each entry with the span of its call.
        let call = m.funcs[0].clone();
        m.funcs[1] = crate::ir::Kernel { name: "b".into(), ..call.clone() };
        m.funcs[1].callees[0].name = "a".into();
        let cycle = callee_order(&m).unwrap_err();
        assert_eq!(cycle.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1]);
        assert!(cycle.iter().all(|c| !c.1.is_dummy()));
    }
}
