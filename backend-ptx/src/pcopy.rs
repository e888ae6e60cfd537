//! Sequentialization of parallel copies: how block arguments become register moves on an edge.
//!
//! Guarantees: [`sequentialize`] turns a set of simultaneous copies `dst_i <- src_i` (all sources
//! read before any destination is written) into an ordered list of ordinary moves with the same
//! effect on every destination. Self-copies are dropped; a cycle (a swap, a rotation) is broken with
//! one fresh temporary per cycle, obtained from the caller. Only destinations and temporaries are
//! written. Destinations must be distinct (each block parameter is bound once per edge); a repeated
//! destination keeps the last copy.

use std::collections::HashMap;
use std::hash::Hash;

/// The source of a copy: a register or an immediate (kept as the text the emitter prints).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Src<R> {
    Reg(R),
    Imm(String),
}

/// Orders the parallel copies `copies` (destination, source) into sequential moves.
/// `temp(r)` must return a fresh register of the same class as `r`, used by no copy.
pub fn sequentialize<R: Copy + Eq + Hash>(copies: &[(R, Src<R>)], mut temp: impl FnMut(R) -> R) -> Vec<(R, Src<R>)> {
    // pending: destination -> source, in first-seen order for determinism.
    let mut order: Vec<R> = Vec::new();
    let mut pending: HashMap<R, Src<R>> = HashMap::new();
    for (d, s) in copies {
        if *s == Src::Reg(*d) {
            continue;
        }
        if pending.insert(*d, s.clone()).is_none() {
            order.push(*d);
        }
    }
    let mut out = Vec::with_capacity(order.len() + 1);
    // How many pending copies still read each register.
    let mut readers: HashMap<R, usize> = HashMap::new();
    for d in &order {
        if let Some(Src::Reg(s)) = pending.get(d) {
            *readers.entry(*s).or_default() += 1;
        }
    }
    while !order.is_empty() {
        // Emit every copy whose destination no pending copy still reads.
        let mut progressed = false;
        let mut i = 0;
        while i < order.len() {
            let d = order[i];
            if readers.get(&d).copied().unwrap_or(0) == 0 {
                let s = pending.remove(&d).expect("pending copy");
                if let Src::Reg(r) = &s {
                    if let Some(n) = readers.get_mut(r) {
                        *n -= 1;
                    }
                }
                out.push((d, s));
                order.remove(i);
                progressed = true;
            } else {
                i += 1;
            }
        }
        if progressed || order.is_empty() {
            continue;
        }
        // Only cycles remain: every pending destination is read by another pending copy. Save the
        // first destination to a temporary and redirect its readers to the temporary.
        let d = order[0];
        let t = temp(d);
        out.push((t, Src::Reg(d)));
        let n = readers.remove(&d).unwrap_or(0);
        for dd in &order {
            if let Some(src) = pending.get_mut(dd) {
                if *src == Src::Reg(d) {
                    *src = Src::Reg(t);
                }
            }
        }
        readers.insert(t, n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the sequential moves on a register file and returns it.
    fn run(moves: &[(u32, Src<u32>)], regs: &mut HashMap<u32, i64>) {
        for (d, s) in moves {
            let v = match s {
                Src::Reg(r) => regs[r],
                Src::Imm(t) => t.parse().unwrap(),
            };
            regs.insert(*d, v);
        }
    }

    /// Checks that the moves have the parallel-copy effect on registers 0..n (value = 100 + r).
    fn check(copies: &[(u32, Src<u32>)], n: u32) -> Vec<(u32, Src<u32>)> {
        let mut next = 1000;
        let moves = sequentialize(copies, |_| {
            next += 1;
            next
        });
        let mut regs: HashMap<u32, i64> = (0..n).map(|r| (r, 100 + r as i64)).collect();
        let before = regs.clone();
        run(&moves, &mut regs);
        for r in 0..n {
            let expect = match copies.iter().find(|(d, _)| *d == r) {
                Some((_, Src::Reg(s))) => before[s],
                Some((_, Src::Imm(t))) => t.parse().unwrap(),
                None => before[&r],
            };
            assert_eq!(regs[&r], expect, "register {r} after {moves:?}");
        }
        // Only destinations and temporaries are written.
        for (d, _) in &moves {
            assert!(*d >= 1000 || copies.iter().any(|(cd, _)| cd == d), "wrote {d}");
        }
        moves
    }

    #[test]
    fn swap_uses_one_temporary() {
        let moves = check(&[(0, Src::Reg(1)), (1, Src::Reg(0))], 2);
        assert_eq!(moves.len(), 3);
        assert_eq!(moves.iter().filter(|(d, _)| *d >= 1000).count(), 1);
    }

    #[test]
    fn rotate_three() {
        let moves = check(&[(0, Src::Reg(1)), (1, Src::Reg(2)), (2, Src::Reg(0))], 3);
        assert_eq!(moves.len(), 4);
    }

    #[test]
    fn self_copy_is_dropped() {
        let moves = check(&[(0, Src::Reg(0)), (1, Src::Reg(1))], 2);
        assert!(moves.is_empty());
    }

    #[test]
    fn chain_needs_no_temporary() {
        let moves = check(&[(0, Src::Reg(1)), (1, Src::Reg(2)), (2, Src::Reg(3))], 4);
        assert_eq!(moves.len(), 3);
        assert!(moves.iter().all(|(d, _)| *d < 1000));
    }

    #[test]
    fn fan_out_and_immediates_with_cycle() {
        check(&[(0, Src::Reg(1)), (1, Src::Reg(0)), (2, Src::Reg(0)), (3, Src::Imm("7".into())), (4, Src::Reg(4))], 5);
    }

    #[test]
    fn two_independent_cycles() {
        let moves = check(&[(0, Src::Reg(1)), (1, Src::Reg(0)), (2, Src::Reg(3)), (3, Src::Reg(2))], 4);
        assert_eq!(moves.iter().filter(|(d, _)| *d >= 1000).count(), 2);
    }

    #[test]
    fn cycle_with_tail() {
        // 0 <- 1, 1 <- 0, 2 <- 1: the tail reads a cycle member before it is overwritten.
        check(&[(0, Src::Reg(1)), (1, Src::Reg(0)), (2, Src::Reg(1))], 3);
    }
}
