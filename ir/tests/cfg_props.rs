//! The CFG's dominance queries agree with their definitions on random control-flow graphs:
//! `a` dominates `b` iff every path from the entry to `b` passes `a`; `a` post-dominates `b` iff
//! every path from `b` to a `ret` passes `a` (and `b` can reach a `ret`).

use kir_ir::analysis::cfg::Cfg;
use kir_ir::*;
use proptest::prelude::*;

/// A kernel whose blocks end in the given terminator shapes: 0 = ret, 1 = jmp t0, 2 = br t0, t1.
fn kernel(shapes: &[(u8, usize, usize)]) -> Kernel {
    let mut k = Kernel::new("k");
    let n = shapes.len();
    let blocks: Vec<BlockId> = (0..n).map(|i| k.add_block(format!("b{i}"))).collect();
    for (i, &(kind, t0, t1)) in shapes.iter().enumerate() {
        let call = |t: usize| BlockCall { block: blocks[t % n], args: vec![] };
        k.block_mut(blocks[i]).term = match kind % 3 {
            0 => Terminator::Ret(None),
            1 => Terminator::Jmp(call(t0)),
            _ => Terminator::Br { cond: Operand::Const(Constant::pred(true)), then_: call(t0), else_: call(t1) },
        };
    }
    k
}

/// Blocks reachable from `from` without passing `removed` (`from` itself is visited unless removed).
fn reach(cfg: &Cfg, from: BlockId, removed: Option<BlockId>) -> Vec<bool> {
    let mut seen = vec![false; cfg.len()];
    if Some(from) == removed {
        return seen;
    }
    let mut stack = vec![from];
    seen[from.index()] = true;
    while let Some(b) = stack.pop() {
        for &s in cfg.succs(b) {
            if Some(s) != removed && !seen[s.index()] {
                seen[s.index()] = true;
                stack.push(s);
            }
        }
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    #[test]
    fn dominance_matches_its_definition(shapes in proptest::collection::vec((0u8..3, 0usize..12, 0usize..12), 1..12)) {
        let k = kernel(&shapes);
        let cfg = Cfg::new(&k);
        let n = k.blocks.len();
        let entry_reach = reach(&cfg, BlockId(0), None);
        let rets: Vec<BlockId> = k.block_ids().filter(|b| matches!(k.block(*b).term, Terminator::Ret(_))).collect();
        let reaches_ret = |from: BlockId, removed: Option<BlockId>| {
            let r = reach(&cfg, from, removed);
            rets.iter().any(|x| r[x.index()])
        };
        for a in 0..n {
            let a = BlockId(a as u32);
            let without_a = reach(&cfg, BlockId(0), Some(a));
            for b in 0..n {
                let b = BlockId(b as u32);
                let dom = a == b || (entry_reach[b.index()] && entry_reach[a.index()] && !without_a[b.index()]);
                prop_assert_eq!(cfg.dominates(a, b), dom, "dominates({:?}, {:?})", a, b);
                let pdom = a == b || (reaches_ret(b, None) && reaches_ret(a, None) && !reaches_ret(b, Some(a)));
                prop_assert_eq!(cfg.post_dominates(a, b), pdom, "post_dominates({:?}, {:?})", a, b);
            }
        }
    }
}
