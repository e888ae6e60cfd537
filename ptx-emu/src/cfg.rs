//! The control-flow graph of a decoded entry and the reconvergence point of every conditional
//! branch: the first instruction of the branch block's immediate post-dominator, computed on the
//! basic blocks of the PTX (a guarded `bra` ends a block with two successors; `ret`/`exit`/`trap`
//! end one with none; a guarded `ret` falls through). Blocks from which no exit is reachable (an
//! infinite loop) have no post-dominator: their branches get [`NO_PC`] and diverged lanes then
//! only meet again when the others exit.

use crate::prog::{Inst, Op, RegId, Src, NO_PC, NO_REG};

/// Reconvergence instruction per instruction (`NO_PC` for non-branches and where none exists).
pub fn reconvergence(insts: &[Inst]) -> Vec<u32> {
    let n = insts.len();
    let mut out = vec![NO_PC; n];
    if n == 0 {
        return out;
    }
    let Blocks { starts, block_of, succ, exit } = blocks(insts);
    let nb = starts.len();
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

/// The basic blocks of an instruction list, with a virtual exit node numbered `starts.len()`.
struct Blocks {
    starts: Vec<usize>,
    block_of: Vec<u32>,
    succ: Vec<Vec<usize>>,
    exit: usize,
}

fn blocks(insts: &[Inst]) -> Blocks {
    let n = insts.len();
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
    Blocks { starts, block_of, succ, exit }
}

/// ptxas's default floating-point contraction (`--fmad=true`), which the PTX ISA allows for
/// `mul`/`add`/`sub` written without a rounding modifier: an `add`/`sub` of such a `mul`'s result in the same
/// basic block (the `mul`'s operands unchanged in between, same type and `.ftz`) becomes one `fma`
/// rounded once. Code written with `.rn` (as kir writes it) is never contracted, so dropping a
/// `.rn` is visible in the emulator as it would be on the GPU.
pub fn contract(insts: &mut [Inst]) {
    use crate::float::Arith;
    use crate::prog::Op;
    let mut targets = vec![false; insts.len() + 1];
    for i in insts.iter() {
        if let Op::Bra { target, .. } = i.op {
            targets[target as usize] = true;
        }
    }
    // Register → index of the contractible `mul` that last wrote it, in the current block.
    let mut muls: Vec<(RegId, usize)> = Vec::new();
    for k in 0..insts.len() {
        if targets[k] {
            muls.clear();
        }
        let inst = insts[k].clone();
        if let Op::FBin { op: op @ (Arith::Add | Arith::Sub), t, ftz, sat, contractible: true, .. } = inst.op {
            if inst.guard.is_none() {
                let from = |s: Src| match s {
                    Src::Reg(r) => muls.iter().find(|m| m.0 == r).map(|m| m.1),
                    _ => None,
                };
                // add: p + o or o + p; sub: p - o = fma(x, y, -o), o - p = fma(-x, y, o).
                let sides = [(inst.src[0], inst.src[1], false), (inst.src[1], inst.src[0], true)];
                let fused = sides.into_iter().find_map(|(p, other, second)| {
                    let m = &insts[from(p)?];
                    match m.op {
                        Op::FBin { op: Arith::Mul, t: mt, ftz: mf, sat: false, contractible: true, .. }
                            if mt == t && mf == ftz =>
                        {
                            let (neg_product, neg_addend) = match (op, second) {
                                (Arith::Sub, false) => (false, true),
                                (Arith::Sub, true) => (true, false),
                                _ => (false, false),
                            };
                            Some((m.src[0], m.src[1], other, neg_product, neg_addend))
                        }
                        _ => None,
                    }
                });
                if let Some((a, b, c, neg_product, neg_addend)) = fused {
                    let i = &mut insts[k];
                    i.op = Op::Fma { t, rnd: crate::float::Rnd::N, ftz, sat, neg_product, neg_addend };
                    i.src = [a, b, c, Src::None];
                }
            }
        }
        // Writes end the life of mul results they overwrite or whose operands they change.
        let inst = &insts[k];
        for &d in inst.dst.iter().filter(|&&d| d != NO_REG) {
            muls.retain(|&(r, mi)| r != d && !insts[mi].src.contains(&Src::Reg(d)));
        }
        if let Op::FBin { op: Arith::Mul, sat: false, contractible: true, .. } = inst.op {
            if inst.guard.is_none() && inst.dst[0] != NO_REG && !inst.src.contains(&Src::Reg(inst.dst[0])) {
                muls.push((inst.dst[0], k));
            }
        }
        if matches!(inst.op, Op::Bra { .. } | Op::Exit | Op::Trap) {
            muls.clear();
        }
    }
}

/// Registers that some path may read before any write to them (a guarded write does not count).
/// The executor zeroes these before each block, so such reads give 0 whatever ran before; the
/// others need no clearing. `None` when the analysis would be too large (then all are cleared).
pub fn maybe_uninitialized(insts: &[Inst], nregs: u32) -> Option<Vec<RegId>> {
    if insts.is_empty() {
        return Some(Vec::new());
    }
    let Blocks { starts, succ, exit, .. } = blocks(insts);
    let nb = starts.len();
    let words = (nregs as usize).div_ceil(64);
    if (nb as u64) * (words as u64) > 1 << 22 {
        return None;
    }
    let n = insts.len();
    // Definitely-written sets at block entry; all ones (unknown) except the entry block.
    let mut inset = vec![u64::MAX; nb * words];
    inset[..words].fill(0);
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); nb];
    for (b, ss) in succ.iter().enumerate() {
        for &t in ss {
            if t != exit {
                preds[t].push(b);
            }
        }
    }
    let transfer = |b: usize, cur: &mut [u64]| {
        let e = starts.get(b + 1).copied().unwrap_or(n);
        for inst in &insts[starts[b]..e] {
            if inst.guard.is_none() {
                for &d in &inst.dst {
                    if d != NO_REG {
                        cur[d as usize / 64] |= 1 << (d % 64);
                    }
                }
            }
        }
    };
    let mut out = vec![u64::MAX; nb * words];
    let mut changed = true;
    let mut cur = vec![0u64; words];
    while changed {
        changed = false;
        for b in 0..nb {
            if b != 0 {
                let mut meet = vec![u64::MAX; words];
                for &p in &preds[b] {
                    for (m, o) in meet.iter_mut().zip(&out[p * words..(p + 1) * words]) {
                        *m &= o;
                    }
                }
                inset[b * words..(b + 1) * words].copy_from_slice(&meet);
            }
            cur.copy_from_slice(&inset[b * words..(b + 1) * words]);
            transfer(b, &mut cur);
            if out[b * words..(b + 1) * words] != cur[..] {
                out[b * words..(b + 1) * words].copy_from_slice(&cur);
                changed = true;
            }
        }
    }
    // Reads not covered by the definitely-written set.
    let mut need = vec![0u64; words];
    for b in 0..nb {
        cur.copy_from_slice(&inset[b * words..(b + 1) * words]);
        let e = starts.get(b + 1).copied().unwrap_or(n);
        for inst in &insts[starts[b]..e] {
            let mut reads: Vec<RegId> =
                inst.src.iter().filter_map(|s| if let Src::Reg(r) = s { Some(*r) } else { None }).collect();
            reads.extend(inst.guard.map(|g| g.0));
            reads.extend(inst.base);
            for r in reads {
                if cur[r as usize / 64] & (1 << (r % 64)) == 0 {
                    need[r as usize / 64] |= 1 << (r % 64);
                }
            }
            if inst.guard.is_none() {
                for &d in &inst.dst {
                    if d != NO_REG {
                        cur[d as usize / 64] |= 1 << (d % 64);
                    }
                }
            }
        }
    }
    Some((0..nregs).filter(|&r| need[r as usize / 64] & (1 << (r % 64)) != 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_read_before_any_write_are_found() {
        let text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u32 n)\n{\n.reg .pred %p<2>; .reg .b32 %r<6>;\n\
            ld.param.u32 %r1, [n];\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra SKIP;\nmov.u32 %r2, 1;\n@%p1 mov.u32 %r3, 1;\nSKIP:\nadd.u32 %r4, %r2, %r3;\nadd.u32 %r5, %r1, %r4;\nret;\n}\n";
        let p = crate::parse::parse_program(text).unwrap();
        let k = &p.kernels[0];
        let names = |v: &[RegId]| v.to_vec();
        // %r2 is written on one path only, %r3 only under a guard: both may be read unwritten.
        // Registers are numbered in declaration order: %p0 %p1 %r0.. %r5 → %r2 = 4, %r3 = 5.
        assert_eq!(names(k.clear_regs.as_deref().unwrap()), vec![4, 5]);
    }
}
