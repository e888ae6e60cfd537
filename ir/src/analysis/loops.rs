//! Natural loops and irreducibility, from a [`Cfg`].
//!
//! Guarantees:
//! - [`LoopForest::new`] makes one [`NaturalLoop`] per loop header (a block that some back edge
//!   `latch → header` enters, `header` dominating `latch`): its blocks are the union of the natural
//!   loops of all its back edges ([`Cfg::natural_loop`]), sorted by block index, the header
//!   included. Loops come in the order of [`Cfg::back_edges`] (the first back edge to each
//!   header), so the order is deterministic.
//! - Only blocks reachable from the entry take part: a cycle of unreachable blocks is no loop and
//!   makes nothing irreducible.
//! - [`LoopForest::is_irreducible`] says whether the reachable CFG has a cycle that is not a
//!   natural loop, i.e. a cycle left once every back edge is removed.
//! - Nothing recurses (Kahn's algorithm for irreducibility, explicit stacks in [`Cfg`]); the cost
//!   is linear in the edges plus the sizes of the loops of each back edge.

use crate::analysis::cfg::Cfg;
use crate::ir::BlockId;

/// A natural loop: a header and every block that reaches one of its back edges without passing
/// the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NaturalLoop {
    pub header: BlockId,
    /// The loop's blocks in index order, the header included.
    pub blocks: Vec<BlockId>,
    /// The sources of its back edges, in the order of [`Cfg::back_edges`].
    pub latches: Vec<BlockId>,
}

impl NaturalLoop {
    /// Whether `b` is one of the loop's blocks.
    pub fn contains(&self, b: BlockId) -> bool {
        self.blocks.binary_search(&b).is_ok()
    }
}

/// The natural loops of a kernel's reachable CFG, and whether that CFG is irreducible.
#[derive(Clone, Debug)]
pub struct LoopForest {
    loops: Vec<NaturalLoop>,
    irreducible: bool,
}

impl LoopForest {
    pub fn new(cfg: &Cfg) -> LoopForest {
        let back = cfg.back_edges();
        let mut loops: Vec<NaturalLoop> = Vec::new();
        let mut by_header: rustc_hash::FxHashMap<BlockId, usize> = rustc_hash::FxHashMap::default();
        for &(latch, header) in &back {
            let idx = *by_header.entry(header).or_insert_with(|| {
                loops.push(NaturalLoop { header, blocks: Vec::new(), latches: Vec::new() });
                loops.len() - 1
            });
            let l = &mut loops[idx];
            l.latches.push(latch);
            l.blocks.extend(cfg.natural_loop(header, latch));
        }
        for l in &mut loops {
            l.blocks.sort();
            l.blocks.dedup();
        }
        let irreducible = has_forward_cycle(cfg, &back);
        LoopForest { loops, irreducible }
    }

    /// The loops, one per header, in the order of their first back edge.
    pub fn loops(&self) -> &[NaturalLoop] {
        &self.loops
    }

    /// The loop whose header is `header`.
    pub fn loop_at(&self, header: BlockId) -> Option<&NaturalLoop> {
        self.loops.iter().find(|l| l.header == header)
    }

    /// Whether the reachable CFG has a cycle that is not a natural loop.
    pub fn is_irreducible(&self) -> bool {
        self.irreducible
    }
}

/// Whether the reachable CFG minus the back edges `back` still has a cycle (Kahn's algorithm).
fn has_forward_cycle(cfg: &Cfg, back: &[(BlockId, BlockId)]) -> bool {
    let back: rustc_hash::FxHashSet<(BlockId, BlockId)> = back.iter().copied().collect();
    let back = &back;
    let forward = |b: BlockId| cfg.succs(b).iter().copied().filter(move |&s| !back.contains(&(b, s)));
    let mut indegree = vec![0usize; cfg.len()];
    for &b in cfg.rpo() {
        for s in forward(b) {
            indegree[s.index()] += 1;
        }
    }
    let mut ready: Vec<BlockId> = cfg.rpo().iter().copied().filter(|b| indegree[b.index()] == 0).collect();
    let mut removed = 0;
    while let Some(b) = ready.pop() {
        removed += 1;
        for s in forward(b) {
            indegree[s.index()] -= 1;
            if indegree[s.index()] == 0 {
                ready.push(s);
            }
        }
    }
    removed < cfg.rpo().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Kernel;

    fn forest(src: &str) -> (Kernel, LoopForest) {
        let m = crate::parse(src).unwrap_or_else(|d| panic!("{d:?}"));
        let k = m.kernels.into_iter().next().unwrap();
        let f = LoopForest::new(&Cfg::new(&k));
        (k, f)
    }
    fn names(k: &Kernel, bs: &[BlockId]) -> Vec<String> {
        bs.iter().map(|b| k.block(*b).name.to_string()).collect()
    }
    fn loop_named<'f>(k: &Kernel, f: &'f LoopForest, header: &str) -> &'f NaturalLoop {
        f.loop_at(k.block_by_name(header).unwrap()).unwrap_or_else(|| panic!("no loop at {header}"))
    }

    #[test]
    fn nested_loops() {
        let (k, f) = forest(
            "kernel @k(%n: u32) {
entry:
  jmp outer(0)
outer(%i: u32):
  %c = lt.u32 %i, %n
  br %c, inner(0), done
inner(%j: u32):
  %d = lt.u32 %j, %n
  br %d, body, next
body:
  %j2 = add.u32 %j, 1
  jmp inner(%j2)
next:
  %i2 = add.u32 %i, 1
  jmp outer(%i2)
done:
  ret
}",
        );
        assert!(!f.is_irreducible());
        assert_eq!(f.loops().len(), 2);
        let outer = loop_named(&k, &f, "outer");
        let inner = loop_named(&k, &f, "inner");
        assert_eq!(names(&k, &outer.blocks), ["outer", "inner", "body", "next"]);
        assert_eq!(names(&k, &outer.latches), ["next"]);
        assert_eq!(names(&k, &inner.blocks), ["inner", "body"]);
        assert_eq!(names(&k, &inner.latches), ["body"]);
        assert!(outer.contains(inner.header) && !inner.contains(outer.header));
        assert!(!outer.contains(k.block_by_name("done").unwrap()));
        // The order of the first back edges (in RPO of their latch): the inner loop's comes first.
        assert_eq!(f.loops()[0].header, inner.header);
    }

    #[test]
    fn two_back_edges_to_one_header_make_one_loop() {
        let (k, f) = forest(
            "kernel @k(%n: u32) {
entry:
  jmp head(0)
head(%i: u32):
  %c = lt.u32 %i, %n
  br %c, split, out
split:
  %i2 = add.u32 %i, 1
  %odd = eq.u32 %i, 3
  br %odd, a, b
a:
  jmp head(%i2)
b:
  jmp head(%i2)
out:
  ret
}",
        );
        assert!(!f.is_irreducible());
        assert_eq!(f.loops().len(), 1);
        let l = loop_named(&k, &f, "head");
        assert_eq!(names(&k, &l.blocks), ["head", "split", "a", "b"]);
        let mut latches = names(&k, &l.latches);
        latches.sort();
        assert_eq!(latches, ["a", "b"]);
    }

    #[test]
    fn a_cycle_with_two_entries_is_irreducible_and_no_loop() {
        let (_, f) = forest(
            "kernel @k(%n: u32) {
entry:
  %c = lt.u32 %n, 5
  br %c, a, b
a:
  %d = eq.u32 %n, 3
  br %d, b, out
b:
  %e = eq.u32 %n, 4
  br %e, a, out
out:
  ret
}",
        );
        assert!(f.is_irreducible());
        assert!(f.loops().is_empty(), "neither a nor b dominates the other");
    }

    #[test]
    fn an_unreachable_cycle_is_neither_a_loop_nor_irreducible() {
        let (_, f) = forest(
            "kernel @k(%n: u32) {
entry:
  ret
x:
  %c = lt.u32 %n, 5
  br %c, y, x
y:
  jmp x
}",
        );
        assert!(!f.is_irreducible());
        assert!(f.loops().is_empty());
    }

    #[test]
    fn a_self_loop_is_a_loop_of_one_block() {
        let (k, f) = forest(
            "kernel @k(%n: u32) {
entry:
  jmp spin
spin:
  %c = lt.u32 %n, 5
  br %c, spin, out
out:
  ret
}",
        );
        let l = loop_named(&k, &f, "spin");
        assert_eq!(names(&k, &l.blocks), ["spin"]);
        assert_eq!(names(&k, &l.latches), ["spin"]);
        assert!(!f.is_irreducible());
    }
}
