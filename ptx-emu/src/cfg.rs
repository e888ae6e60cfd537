//! The control-flow graph of a decoded entry and the reconvergence point of every conditional
//! branch: the first instruction of the branch block's immediate post-dominator, computed on the
//! basic blocks of the PTX (a guarded `bra` ends a block with two successors; `ret`/`exit`/`trap`
//! end one with none; a guarded `ret` falls through). Blocks from which no exit is reachable (an
//! infinite loop) have no post-dominator: their branches get [`NO_PC`] and diverged lanes then
//! only meet again when the others exit.

use crate::prog::{Inst, Op, NO_PC};

/// Reconvergence instruction per instruction (`NO_PC` for non-branches and where none exists).
pub fn reconvergence(insts: &[Inst]) -> Vec<u32> {
    let n = insts.len();
    let mut out = vec![NO_PC; n];
    if n == 0 {
        return out;
    }
    // Leaders.
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    for (i, inst) in insts.iter().enumerate() {
        match inst.op {
            Op::Bra { target, .. } => {
                leader[target as usize] = true;
                leader[i + 1] = true;
            }
            Op::Exit | Op::Trap => leader[i + 1] = true,
            _ => {}
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&i| leader[i]).collect();
    let mut block_of = vec![0u32; n];
    for (b, &s) in starts.iter().enumerate() {
        let e = starts.get(b + 1).copied().unwrap_or(n);
        for x in block_of.iter_mut().take(e).skip(s) {
            *x = b as u32;
        }
    }
    let nb = starts.len();
    let exit = nb; // virtual exit node
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nb + 1];
    for b in 0..nb {
        let e = starts.get(b + 1).copied().unwrap_or(n);
        let last = &insts[e - 1];
        let fall = if e < n { block_of[e] as usize } else { exit };
        match last.op {
            Op::Bra { target, .. } => {
                succ[b].push(block_of[target as usize] as usize);
                if last.guard.is_some() {
                    succ[b].push(fall);
                }
            }
            Op::Exit | Op::Trap => {
                succ[b].push(exit);
                if last.guard.is_some() {
                    succ[b].push(fall);
                }
            }
            _ => succ[b].push(fall),
        }
    }
    // Post-dominators: dominators of the reverse graph rooted at the virtual exit
    // (Cooper, Harvey & Kennedy's iterative algorithm).
    let mut pred_rev: Vec<Vec<usize>> = vec![Vec::new(); nb + 1]; // predecessors in the reverse graph = successors
    let mut rsucc: Vec<Vec<usize>> = vec![Vec::new(); nb + 1]; // reverse graph edges: s -> b for b -> s
    for b in 0..nb {
        for &s in &succ[b] {
            rsucc[s].push(b);
            pred_rev[b].push(s);
        }
    }
    // Post-order of the reverse graph from exit (iterative DFS).
    let mut order = Vec::with_capacity(nb + 1);
    let mut seen = vec![false; nb + 1];
    let mut stack = vec![(exit, 0usize)];
    seen[exit] = true;
    while let Some(&mut (v, ref mut i)) = stack.last_mut() {
        if *i < rsucc[v].len() {
            let w = rsucc[v][*i];
            *i += 1;
            if !seen[w] {
                seen[w] = true;
                stack.push((w, 0));
            }
        } else {
            order.push(v);
            stack.pop();
        }
    }
    let mut po_num = vec![usize::MAX; nb + 1];
    for (k, &v) in order.iter().enumerate() {
        po_num[v] = k;
    }
    const UNDEF: usize = usize::MAX;
    let mut ipdom = vec![UNDEF; nb + 1];
    ipdom[exit] = exit;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().rev() {
            if b == exit {
                continue;
            }
            let mut new = UNDEF;
            for &p in &pred_rev[b] {
                if ipdom[p] == UNDEF {
                    continue;
                }
                new = if new == UNDEF {
                    p
                } else {
                    let (mut x, mut y) = (p, new);
                    while x != y {
                        while po_num[x] < po_num[y] {
                            x = ipdom[x];
                        }
                        while po_num[y] < po_num[x] {
                            y = ipdom[y];
                        }
                    }
                    x
                };
            }
            if new != UNDEF && ipdom[b] != new {
                ipdom[b] = new;
                changed = true;
            }
        }
    }
    for (i, inst) in insts.iter().enumerate() {
        if matches!(inst.op, Op::Bra { .. }) && inst.guard.is_some() {
            let b = block_of[i] as usize;
            let p = ipdom[b];
            out[i] = if p == UNDEF || p == exit { NO_PC } else { starts[p] as u32 };
        }
    }
    out
}
