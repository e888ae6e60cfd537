//! The call graph of a module's device functions, and an order of them in which every function
//! comes after the functions it calls (or the call cycle that prevents one). Iterative: no call
//! chain, however deep, overflows the stack. Used by the verifier (recursion), the inliner, the
//! barrier verification across calls and the interpreter's stack bound.

use crate::ir::Module;
use crate::op::Op;
use crate::span::Span;
use rustc_hash::FxHashMap as HashMap;

/// The call graph of a module's functions: for each function, the functions it calls (index into
/// `m.funcs`) with the span of a call. Calls to unknown names are left out (reported elsewhere).
pub fn call_graph(m: &Module) -> Vec<Vec<(usize, Span)>> {
    let index: HashMap<&str, usize> = m.funcs.iter().enumerate().map(|(i, f)| (f.name.as_str(), i)).collect();
    m.funcs
        .iter()
        .map(|f| {
            let mut out: Vec<(usize, Span)> = Vec::new();
            for (_, i) in f.placed_insts() {
                let Some(d) = f.insts.get(i.index()) else { continue };
                if let Op::Call(c) = d.op {
                    if let Some(&t) = f.callees.get(c as usize).and_then(|c| index.get(c.name.as_str())) {
                        if !out.iter().any(|(x, _)| *x == t) {
                            out.push((t, d.span));
                        }
                    }
                }
            }
            out
        })
        .collect()
}

/// The functions of `m` in an order where every function comes after the functions it calls, or
/// the first call cycle found (as function indices, the cycle's first function repeated at the
/// end is left out). Iterative (no recursion on deep call chains).
pub fn callee_order(m: &Module) -> Result<Vec<usize>, Vec<(usize, Span)>> {
    let graph = call_graph(m);
    let n = graph.len();
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; n];
    let mut order = Vec::with_capacity(n);
    for root in 0..n {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (f, ref mut next)) = stack.last_mut() {
            if let Some(&(g, _)) = graph[f].get(*next) {
                *next += 1;
                match state[g] {
                    0 => {
                        state[g] = 1;
                        stack.push((g, 0));
                    }
                    1 => {
                        // A cycle: the stack from `g` to the top, each with the call it makes.
                        let start = stack.iter().position(|(x, _)| *x == g).unwrap_or(0);
                        return Err(stack[start..]
                            .iter()
                            .map(|&(x, nx)| (x, graph[x].get(nx.saturating_sub(1)).map(|c| c.1).unwrap_or(Span::DUMMY)))
                            .collect());
                    }
                    _ => {}
                }
            } else {
                state[f] = 2;
                order.push(f);
                stack.pop();
            }
        }
    }
    Ok(order)
}
