//! Uniformity (divergence) analysis: which values and which blocks may differ between the threads
//! of one block, and why.
//!
//! Guarantees (for a kernel that passes `kir_ir::verify`; on a kernel with dangling handles the
//! result is the all-varying answer, never a panic):
//! - SOUNDNESS. A value reported [`Level::Uniform`] holds the same bits in every thread of a block
//!   that executes its definition in the same "instance" (same iteration of every enclosing loop);
//!   [`Level::WarpUniform`] means the same within every warp. A block whose control level is
//!   `Uniform` is executed by all threads of the block or by none, the same number of times;
//!   `WarpUniform` means the same for all lanes of each warp. The analysis may over-approximate
//!   (call something varying that is not), never the reverse. This relies on every barrier being
//!   reached uniformly, which [`crate::barrier`] checks with this same analysis (the argument is an
//!   induction over the barriers executed).
//! - Every non-uniform value and block carries a reason ([`ValueReason`], [`Uniformity::block_reason`])
//!   that leads, step by step, to a source of divergence: the chain diagnostics are built from.
//!
//! The rules, lattice `Uniform < WarpUniform < Varying`, an op's level the maximum of its inputs':
//! - Sources. `tid.*`, `global_id.*`, `laneid`: varying. `warpid`: warp-uniform. Kernel parameters,
//!   `ctaid.*`, `ntid.*`, `nctaid.*`, constants and `addr @x`: uniform. Atomic results: varying.
//! - Collectives. A shuffle of a (warp-)uniform value has that value's level. `shfl.idx` with a
//!   warp-uniform source lane (every lane reads lane `idx & 31`) and the constant full mask
//!   `0xffffffff` is warp-uniform. `vote.all`
//!   / `vote.any` of a uniform predicate are uniform; with the full constant mask any vote is
//!   warp-uniform. Everything else a collective returns is varying.
//! - Loads. A load's level is its address's (pointer and index), provided no thread can write the
//!   loaded memory concurrently; otherwise it is varying. "Concurrently" is decided by barrier
//!   epochs: walking backwards from the load, every path reaches a `barrier` (or the kernel entry)
//!   that starts the load's epoch; the memory is stable when, for each such start, no store or
//!   atomic to memory that may alias is reachable forwards from it without crossing another
//!   barrier. Shared memory: a pointer derived from `addr @x` only aliases `@x` (the interpreter
//!   faults on an access outside its declaration); a shared pointer of other origin aliases all
//!   shared memory. Global memory is written by other blocks with no ordering at all, so a global
//!   load is stable only when the kernel contains no store or atomic to global memory whatsoever.
//! - Sync dependence. For a branch `Y` whose condition has level `l > Uniform`, let `P` be its
//!   immediate post-dominator (blocks that cannot reach a `ret` are treated as exiting, so an
//!   infinite loop counts as an exit). The region of `Y` is every block reachable from `Y`'s
//!   successors without passing `P`; its blocks have control level `>= l`. A block of the region or
//!   `P` itself with two or more incoming edges from `Y` or the region is a join: its parameters get
//!   level `>= l` (unless every edge passes the same operand).
//! - Temporal divergence. A natural loop has a divergent exit of level `l` when a branch of level
//!   `l` inside it has a region that leaves the loop. A value defined in that loop and used outside
//!   it (operands, and block arguments whose target is outside) is used at level `>= l`.
//! - Irreducible control flow is outside what loops describe: when the CFG is irreducible and any
//!   branch is non-uniform, every value and block is reported varying.

use kir_ir::cfg::Cfg;
use kir_ir::{
    AddrSpace, BlockId, InstId, Kernel, Op, Operand, ShflMode, SpecialReg, Terminator, Type, ValueDef, ValueId,
    VoteMode,
};
use petgraph::algo::dominators::simple_fast;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

/// How much a value or a block's execution may differ between threads of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The same in every thread of the block.
    Uniform,
    /// The same in every lane of a warp; may differ between warps.
    WarpUniform,
    /// May differ between lanes of one warp.
    Varying,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Uniform => "uniform",
            Level::WarpUniform => "warp-uniform",
            Level::Varying => "varying",
        }
    }
}

/// Memory a pointer may point into, for the load-stability rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemObject {
    Global,
    /// The shared declaration with this index.
    Shared(u32),
    /// Some shared memory of unknown declaration.
    SharedAny,
}

impl MemObject {
    fn may_alias(self, other: MemObject) -> bool {
        use MemObject::*;
        match (self, other) {
            (Global, Global) => true,
            (Global, _) | (_, Global) => false,
            (Shared(a), Shared(b)) => a == b,
            _ => true,
        }
    }
    fn join(self, other: MemObject) -> MemObject {
        if self == other {
            self
        } else if self == MemObject::Global || other == MemObject::Global {
            MemObject::Global
        } else {
            MemObject::SharedAny
        }
    }
}

/// Why a value is not uniform: one step of the explanation chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueReason {
    /// A thread-identity register (`tid.x`, `laneid`, `warpid`...).
    Special(SpecialReg),
    /// The result of an atomic.
    Atomic,
    /// A load from memory that other threads may write concurrently (`object`), or that they wrote
    /// without a barrier ordering the write before this load.
    RacyLoad(MemObject),
    /// The result of a shuffle or vote.
    Collective,
    /// Data dependence on an operand. `after_loop` is the header of a loop with a divergent exit
    /// when the operand is defined in that loop and used after it (temporal divergence).
    Operand { value: ValueId, after_loop: Option<BlockId> },
    /// A block parameter receiving `value` on the edge from block `from`.
    Incoming { value: ValueId, from: BlockId, after_loop: Option<BlockId> },
    /// A block parameter at a join of the non-uniform branch ending block `branch`.
    Join { branch: BlockId },
    /// The control flow graph is irreducible and has a non-uniform branch.
    Irreducible,
}

/// A natural loop (all back edges to one header).
#[derive(Clone, Debug)]
pub struct Loop {
    pub header: BlockId,
    /// Membership by block index.
    pub blocks: Vec<bool>,
    /// Level of its exit: above `Uniform` when threads may leave it after different iterations.
    pub exit_level: Level,
    /// The branch responsible for `exit_level`.
    pub exit_branch: Option<BlockId>,
}

/// The result of the analysis for one kernel.
pub struct Uniformity {
    value_level: Vec<Level>,
    value_reason: Vec<Option<ValueReason>>,
    /// Level of each block's terminator condition (`Uniform` for `jmp` and `ret`).
    branch_level: Vec<Level>,
    branch_reason: Vec<Option<ValueReason>>,
    /// Control level of each block and the branch whose region makes it so.
    block_level: Vec<Level>,
    block_reason: Vec<Option<BlockId>>,
    /// Level forced on a block's parameters by sync dependence, and the branch responsible.
    join_level: Vec<Level>,
    join_reason: Vec<Option<BlockId>>,
    reachable: Vec<bool>,
    /// Immediate post-dominator with non-exiting blocks treated as exits (`None` = virtual exit).
    ipdom: Vec<Option<BlockId>>,
    loops: Vec<Loop>,
    /// Block of each placed instruction.
    inst_block: HashMap<InstId, BlockId>,
    /// Block defining each value (`None` for kernel parameters).
    def_blocks: Vec<Option<BlockId>>,
    /// Memory a pointer value may point into.
    ptr_obj: Vec<Option<MemObject>>,
    /// For each placed load: whether no concurrent write may alias it.
    stable_loads: HashMap<InstId, bool>,
    irreducible: bool,
    /// The kernel has dangling handles: every verdict is the conservative one.
    malformed: bool,
}

impl Uniformity {
    /// The level of a value at its definition.
    pub fn value_level(&self, v: ValueId) -> Level {
        self.value_level.get(v.index()).copied().unwrap_or(Level::Varying)
    }
    /// Why a value is not uniform (`None` when it is uniform).
    pub fn value_reason(&self, v: ValueId) -> Option<ValueReason> {
        self.value_reason.get(v.index()).copied().flatten()
    }
    /// The level of an operand used in block `at` (temporal divergence included).
    pub fn use_level(&self, o: Operand, at: BlockId) -> Level {
        match o {
            Operand::Const(_) => Level::Uniform,
            Operand::Value(v) => self.use_level_of(v, at).0,
        }
    }
    /// Level of `v` used in block `at`, and the header of the loop with a divergent exit that
    /// raises it when the use is after that loop (temporal divergence).
    pub fn use_level_of(&self, v: ValueId, at: BlockId) -> (Level, Option<BlockId>) {
        let mut best = (self.value_level(v), None);
        if let Some(def) = self.def_blocks.get(v.index()).copied().flatten() {
            for l in &self.loops {
                let inside_def = l.blocks.get(def.index()).copied().unwrap_or(false);
                let inside_use = l.blocks.get(at.index()).copied().unwrap_or(false);
                if l.exit_level > best.0 && inside_def && !inside_use {
                    best = (l.exit_level, Some(l.header));
                }
            }
        }
        best
    }
    /// The level of the condition of the branch ending block `b` (`Uniform` for `jmp`/`ret`).
    pub fn branch_level(&self, b: BlockId) -> Level {
        self.branch_level.get(b.index()).copied().unwrap_or(Level::Varying)
    }
    /// Why the branch ending `b` is not uniform: its condition (and the loop, if the condition is
    /// used after a loop with a divergent exit).
    pub fn branch_reason(&self, b: BlockId) -> Option<ValueReason> {
        self.branch_reason.get(b.index()).copied().flatten()
    }
    /// The control level of block `b`: whether all threads (of the block, of each warp) execute it
    /// together.
    pub fn block_level(&self, b: BlockId) -> Level {
        self.block_level.get(b.index()).copied().unwrap_or(Level::Varying)
    }
    /// The non-uniform branch whose region contains `b` (the innermost one of highest level).
    pub fn block_reason(&self, b: BlockId) -> Option<BlockId> {
        self.block_reason.get(b.index()).copied().flatten()
    }
    pub fn is_reachable(&self, b: BlockId) -> bool {
        self.reachable.get(b.index()).copied().unwrap_or(false)
    }
    /// Immediate post-dominator used by the analysis (`None` = the virtual exit).
    pub fn ipdom(&self, b: BlockId) -> Option<BlockId> {
        self.ipdom.get(b.index()).copied().flatten()
    }
    pub fn loops(&self) -> &[Loop] {
        &self.loops
    }
    /// The loop with this header.
    pub fn loop_at(&self, header: BlockId) -> Option<&Loop> {
        self.loops.iter().find(|l| l.header == header)
    }
    /// The innermost loop with a divergent exit (at least `min`) that contains both blocks.
    pub fn divergent_loop_containing(&self, a: BlockId, b: BlockId, min: Level) -> Option<&Loop> {
        self.loops
            .iter()
            .filter(|l| l.exit_level >= min && l.blocks[a.index()] && l.blocks[b.index()])
            .min_by_key(|l| l.blocks.iter().filter(|x| **x).count())
    }
    /// The block holding a placed instruction.
    pub fn inst_block(&self, i: InstId) -> Option<BlockId> {
        self.inst_block.get(&i).copied()
    }
    /// Memory a pointer value may point into (`None` for non-pointers).
    pub fn mem_object(&self, v: ValueId) -> Option<MemObject> {
        self.ptr_obj.get(v.index()).copied().flatten()
    }
    /// Whether the load `i` is ordered after every write that may alias it (see the module doc).
    pub fn load_is_stable(&self, i: InstId) -> bool {
        self.stable_loads.get(&i).copied().unwrap_or(false)
    }
    pub fn is_irreducible(&self) -> bool {
        self.irreducible
    }
    /// Whether the kernel has dangling handles (not verified), so every verdict is "varying".
    pub fn is_malformed(&self) -> bool {
        self.malformed
    }

    /// Runs the analysis on a kernel.
    pub fn compute(k: &Kernel) -> Uniformity {
        let nv = k.values.len();
        let nb = k.blocks.len();
        let mut u = Uniformity {
            value_level: vec![Level::Uniform; nv],
            value_reason: vec![None; nv],
            branch_level: vec![Level::Uniform; nb],
            branch_reason: vec![None; nb],
            block_level: vec![Level::Uniform; nb],
            block_reason: vec![None; nb],
            join_level: vec![Level::Uniform; nb],
            join_reason: vec![None; nb],
            reachable: vec![false; nb],
            ipdom: vec![None; nb],
            loops: vec![],
            inst_block: HashMap::new(),
            def_blocks: vec![None; nv],
            ptr_obj: vec![None; nv],
            stable_loads: HashMap::new(),
            irreducible: false,
            malformed: false,
        };
        if nb == 0 || !handles_ok(k) {
            u.value_level = vec![Level::Varying; nv];
            u.block_level = vec![Level::Varying; nb];
            u.branch_level = vec![Level::Varying; nb];
            u.reachable = vec![true; nb];
            u.malformed = true;
            return u;
        }
        let cfg = Cfg::new(k);
        for b in k.block_ids() {
            u.reachable[b.index()] = cfg.is_reachable(b);
            for &i in &k.block(b).insts {
                u.inst_block.insert(i, b);
            }
        }
        for (vi, v) in k.values.iter().enumerate() {
            u.def_blocks[vi] = match v.def {
                ValueDef::Param(_) => None,
                ValueDef::BlockParam(b, _) => Some(b),
                ValueDef::Inst(i) => u.inst_block.get(&i).copied(),
            };
        }
        u.ipdom = exiting_post_dominators(k, &cfg);
        u.loops = natural_loops(&cfg, nb);
        u.irreducible = is_irreducible(&cfg, nb);
        u.ptr_obj = pointer_objects(k, &cfg);
        u.stable_loads = stable_loads(k, &cfg, &u.ptr_obj);

        loop {
            u.propagate_values(k, &cfg);
            u.compute_branches(k, &cfg);
            if u.irreducible && cfg.rpo().iter().any(|b| u.branch_level[b.index()] > Level::Uniform) {
                for l in u.value_level.iter_mut() {
                    *l = Level::Varying;
                }
                for r in u.value_reason.iter_mut() {
                    *r = Some(ValueReason::Irreducible);
                }
                for &b in cfg.rpo() {
                    u.block_level[b.index()] = Level::Varying;
                    u.block_reason[b.index()] = None;
                }
                break;
            }
            if !u.compute_regions(&cfg) {
                break;
            }
        }
        u
    }

    fn raise(&mut self, v: ValueId, level: Level, reason: Option<ValueReason>) -> bool {
        if level > self.value_level[v.index()] {
            self.value_level[v.index()] = level;
            self.value_reason[v.index()] = reason;
            true
        } else {
            false
        }
    }

    /// The highest use level among operands used in block `at`, with the reason.
    fn max_operands(&self, args: &[Operand], at: BlockId) -> (Level, Option<ValueReason>) {
        let mut best = (Level::Uniform, None);
        for a in args {
            if let Operand::Value(v) = a {
                let (l, after_loop) = self.use_level_of(*v, at);
                if l > best.0 {
                    best = (l, Some(ValueReason::Operand { value: *v, after_loop }));
                }
            }
        }
        best
    }

    /// Data and sync dependence to a fixpoint, for the current joins and loop exits.
    fn propagate_values(&mut self, k: &Kernel, cfg: &Cfg) {
        let mut changed = true;
        while changed {
            changed = false;
            for &b in cfg.rpo() {
                let blk = k.block(b);
                for (n, &p) in blk.params.iter().enumerate() {
                    let mut best: (Level, Option<ValueReason>) = (Level::Uniform, None);
                    let mut seen_preds: Vec<BlockId> = vec![];
                    for &q in cfg.preds(b) {
                        if !cfg.is_reachable(q) || seen_preds.contains(&q) {
                            continue;
                        }
                        seen_preds.push(q);
                        for call in k.block(q).term.successors() {
                            if call.block != b {
                                continue;
                            }
                            if let Some(Operand::Value(v)) = call.args.get(n) {
                                let (l, after_loop) = self.use_level_of(*v, b);
                                if l > best.0 {
                                    best = (l, Some(ValueReason::Incoming { value: *v, from: q, after_loop }));
                                }
                            }
                        }
                    }
                    let jl = self.join_level[b.index()];
                    if jl > best.0 && incoming_args_differ(k, cfg, b, n) {
                        best = (jl, self.join_reason[b.index()].map(|branch| ValueReason::Join { branch }));
                    }
                    changed |= self.raise(p, best.0, best.1);
                }
                for &i in &blk.insts {
                    let inst = k.inst(i);
                    let Some(r) = inst.result else { continue };
                    let (level, reason) = self.inst_level(k, i, b);
                    changed |= self.raise(r, level, reason);
                }
            }
        }
    }

    fn inst_level(&self, k: &Kernel, i: InstId, b: BlockId) -> (Level, Option<ValueReason>) {
        let inst = k.inst(i);
        match &inst.op {
            Op::Special(r) => match r {
                SpecialReg::Tid(_) | SpecialReg::GlobalId(_) | SpecialReg::LaneId => {
                    (Level::Varying, Some(ValueReason::Special(*r)))
                }
                SpecialReg::WarpId => (Level::WarpUniform, Some(ValueReason::Special(*r))),
                SpecialReg::Ctaid(_) | SpecialReg::Ntid(_) | SpecialReg::Nctaid(_) => (Level::Uniform, None),
            },
            Op::Atomic(_) | Op::AtomicCas => (Level::Varying, Some(ValueReason::Atomic)),
            Op::Load => {
                let addr = self.max_operands(&inst.args, b);
                if addr.0 == Level::Varying || self.load_is_stable(i) {
                    addr
                } else {
                    let obj = inst
                        .args
                        .first()
                        .and_then(|a| a.as_value())
                        .and_then(|p| self.mem_object(p))
                        .unwrap_or(MemObject::SharedAny);
                    (Level::Varying, Some(ValueReason::RacyLoad(obj)))
                }
            }
            Op::Shfl(mode, _) => {
                let val = self.max_operands(&inst.args[..1.min(inst.args.len())], b);
                if val.0 < Level::Varying {
                    return val;
                }
                // Every lane reads lane `idx & 31`: the same one when `idx` is warp-uniform.
                let lane_ok =
                    inst.args.get(1).is_some_and(|l| self.max_operands(std::slice::from_ref(l), b).0 < Level::Varying);
                if *mode == ShflMode::Idx && lane_ok && is_full_mask(inst.args.get(2)) {
                    (Level::WarpUniform, Some(ValueReason::Collective))
                } else {
                    (Level::Varying, Some(ValueReason::Collective))
                }
            }
            Op::Vote(mode) => {
                let full = is_full_mask(inst.args.get(1));
                let pred = self.max_operands(&inst.args[..1.min(inst.args.len())], b);
                match mode {
                    VoteMode::All | VoteMode::Any if pred.0 < Level::Varying => pred,
                    _ if full => (Level::WarpUniform, Some(ValueReason::Collective)),
                    _ => (Level::Varying, Some(ValueReason::Collective)),
                }
            }
            _ => self.max_operands(&inst.args, b),
        }
    }

    fn compute_branches(&mut self, k: &Kernel, cfg: &Cfg) {
        for &b in cfg.rpo() {
            if let Terminator::Br { cond: Operand::Value(c), .. } = &k.block(b).term {
                let (l, after_loop) = self.use_level_of(*c, b);
                if l > self.branch_level[b.index()] {
                    self.branch_level[b.index()] = l;
                    self.branch_reason[b.index()] = Some(ValueReason::Operand { value: *c, after_loop });
                }
            }
        }
    }

    /// Regions of the non-uniform branches: block control levels, joins and divergent loop exits.
    /// Returns whether joins or loop exits changed (so values must be propagated again).
    fn compute_regions(&mut self, cfg: &Cfg) -> bool {
        let nb = cfg.len();
        let mut block_level = vec![Level::Uniform; nb];
        let mut block_reason = vec![None; nb];
        let mut changed = false;
        for &y in cfg.rpo() {
            let level = self.branch_level[y.index()];
            if level == Level::Uniform {
                continue;
            }
            let p = self.ipdom[y.index()];
            let region = region_of(cfg, y, p);
            for (x, &inside) in region.iter().enumerate() {
                if inside && level >= block_level[x] {
                    block_level[x] = level;
                    block_reason[x] = Some(y);
                }
            }
            // Joins: blocks of the region, or P, entered by two edges from Y or the region.
            let from_split = |q: BlockId| q == y || region[q.index()];
            let candidates = (0..nb).filter(|&x| region[x]).map(|x| BlockId(x as u32)).chain(p);
            for j in candidates {
                let edges = cfg.preds(j).iter().filter(|q| from_split(**q)).count();
                if edges >= 2 && level > self.join_level[j.index()] {
                    self.join_level[j.index()] = level;
                    self.join_reason[j.index()] = Some(y);
                    changed = true;
                }
            }
            // A loop containing Y has a divergent exit when threads split at Y can leave it: some
            // edge from Y or the region, inside the loop, goes outside it.
            for l in self.loops.iter_mut() {
                let leaves = |a: usize| {
                    (a == y.index() || region[a])
                        && l.blocks[a]
                        && cfg.succs(BlockId(a as u32)).iter().any(|s| !l.blocks[s.index()])
                };
                if l.blocks[y.index()] && level > l.exit_level && (0..nb).any(leaves) {
                    l.exit_level = level;
                    l.exit_branch = Some(y);
                    changed = true;
                }
            }
        }
        self.block_level = block_level;
        self.block_reason = block_reason;
        changed
    }
}

/// The blocks reachable from the successors of `y` without passing `p` (`None`: the virtual exit).
pub fn region_of(cfg: &Cfg, y: BlockId, p: Option<BlockId>) -> Vec<bool> {
    let mut region = vec![false; cfg.len()];
    let mut stack: Vec<BlockId> = cfg.succs(y).to_vec();
    while let Some(b) = stack.pop() {
        if Some(b) == p || region[b.index()] {
            continue;
        }
        region[b.index()] = true;
        stack.extend(cfg.succs(b).iter().copied());
    }
    region
}

fn is_full_mask(o: Option<&Operand>) -> bool {
    matches!(o, Some(Operand::Const(c)) if c.bits & 0xffff_ffff == 0xffff_ffff)
}

/// Whether the n-th arguments passed to `b` on its reachable incoming edges are not all the same
/// operand.
fn incoming_args_differ(k: &Kernel, cfg: &Cfg, b: BlockId, n: usize) -> bool {
    let mut first: Option<Operand> = None;
    let mut seen = vec![];
    for &q in cfg.preds(b) {
        if !cfg.is_reachable(q) || seen.contains(&q) {
            continue;
        }
        seen.push(q);
        for call in k.block(q).term.successors() {
            if call.block != b {
                continue;
            }
            let Some(a) = call.args.get(n).copied() else {
                return true;
            };
            match first {
                None => first = Some(a),
                Some(f) if f != a => return true,
                _ => {}
            }
        }
    }
    false
}

/// Every handle the analysis follows is in range (a verified kernel always passes).
fn handles_ok(k: &Kernel) -> bool {
    let nv = k.values.len();
    let nb = k.blocks.len();
    let ok_op = |o: &Operand| o.as_value().map_or(true, |v| v.index() < nv);
    for b in &k.blocks {
        if b.params.iter().any(|p| p.index() >= nv) {
            return false;
        }
        for &i in &b.insts {
            let Some(inst) = k.insts.get(i.index()) else {
                return false;
            };
            if !inst.args.iter().all(ok_op) || inst.result.is_some_and(|r| r.index() >= nv) {
                return false;
            }
            if inst.args.len() != inst.op.arity() {
                return false;
            }
            if let Op::SharedAddr(n) = inst.op {
                if n as usize >= k.shared.len() {
                    return false;
                }
            }
        }
        if !b.term.operands().all(|o| ok_op(&o)) || b.term.successors().any(|c| c.block.index() >= nb) {
            return false;
        }
    }
    k.params.iter().all(|p| p.index() < nv)
}

/// Immediate post-dominators where `ret` blocks and blocks that cannot reach a `ret` flow to a
/// virtual exit (so a thread stuck in an infinite loop counts as having left).
fn exiting_post_dominators(k: &Kernel, cfg: &Cfg) -> Vec<Option<BlockId>> {
    let n = k.blocks.len();
    let mut rev = DiGraph::<(), ()>::with_capacity(n + 1, n * 3);
    for _ in 0..=n {
        rev.add_node(());
    }
    let exit = NodeIndex::new(n);
    for b in k.block_ids() {
        if matches!(k.block(b).term, Terminator::Ret) || !cfg.reaches_exit(b) {
            rev.add_edge(exit, NodeIndex::new(b.index()), ());
        }
        for s in cfg.succs(b) {
            rev.add_edge(NodeIndex::new(s.index()), NodeIndex::new(b.index()), ());
        }
    }
    let doms = simple_fast(&rev, exit);
    (0..n)
        .map(|b| match doms.immediate_dominator(NodeIndex::new(b)) {
            Some(d) if d != exit => Some(BlockId(d.index() as u32)),
            _ => None,
        })
        .collect()
}

/// Natural loops, one per header (the union over its back edges), with uniform exits to start.
fn natural_loops(cfg: &Cfg, nb: usize) -> Vec<Loop> {
    let mut loops: Vec<Loop> = vec![];
    for (latch, header) in cfg.back_edges() {
        let body = cfg.natural_loop(header, latch);
        let idx = match loops.iter().position(|l| l.header == header) {
            Some(i) => i,
            None => {
                loops.push(Loop { header, blocks: vec![false; nb], exit_level: Level::Uniform, exit_branch: None });
                loops.len() - 1
            }
        };
        for b in body {
            loops[idx].blocks[b.index()] = true;
        }
    }
    loops
}

/// Whether the reachable CFG has a cycle that is not a natural loop (a cycle left after removing
/// every back edge).
fn is_irreducible(cfg: &Cfg, nb: usize) -> bool {
    let back = cfg.back_edges();
    let mut g = DiGraph::<(), ()>::with_capacity(nb, nb * 2);
    for _ in 0..nb {
        g.add_node(());
    }
    for &b in cfg.rpo() {
        for &s in cfg.succs(b) {
            if !back.contains(&(b, s)) {
                g.add_edge(NodeIndex::new(b.index()), NodeIndex::new(s.index()), ());
            }
        }
    }
    petgraph::algo::is_cyclic_directed(&g)
}

/// What memory each pointer value may point into (a fixpoint over block arguments).
fn pointer_objects(k: &Kernel, cfg: &Cfg) -> Vec<Option<MemObject>> {
    let by_type = |t: Type| match t {
        Type::Ptr(AddrSpace::Global, _) => Some(MemObject::Global),
        Type::Ptr(AddrSpace::Shared, _) => Some(MemObject::SharedAny),
        Type::Scalar(_) => None,
    };
    let mut obj: Vec<Option<MemObject>> = vec![None; k.values.len()];
    for &p in &k.params {
        obj[p.index()] = by_type(k.value_type(p));
    }
    let get = |obj: &Vec<Option<MemObject>>, o: Option<&Operand>| -> Option<MemObject> {
        match o {
            Some(Operand::Value(v)) => obj[v.index()].or_else(|| by_type(k.value_type(*v))),
            _ => None,
        }
    };
    let mut changed = true;
    let mut rounds = 0;
    while changed && rounds < 64 {
        changed = false;
        rounds += 1;
        for &b in cfg.rpo() {
            for (n, &p) in k.block(b).params.iter().enumerate() {
                if !k.value_type(p).is_ptr() {
                    continue;
                }
                let mut acc: Option<MemObject> = None;
                for &q in cfg.preds(b) {
                    if !cfg.is_reachable(q) {
                        continue;
                    }
                    for call in k.block(q).term.successors() {
                        if call.block == b {
                            if let Some(o) = get(&obj, call.args.get(n)) {
                                acc = Some(acc.map_or(o, |a| a.join(o)));
                            }
                        }
                    }
                }
                if acc.is_some() && acc != obj[p.index()] {
                    let joined = match (obj[p.index()], acc) {
                        (Some(a), Some(b)) => Some(a.join(b)),
                        (_, b) => b,
                    };
                    if joined != obj[p.index()] {
                        obj[p.index()] = joined;
                        changed = true;
                    }
                }
            }
            for &i in &k.block(b).insts {
                let inst = k.inst(i);
                let Some(r) = inst.result else { continue };
                let new = match &inst.op {
                    Op::SharedAddr(n) => Some(MemObject::Shared(*n)),
                    Op::PtrOffset | Op::PtrOffsetBytes | Op::PtrCast(_) => get(&obj, inst.args.first()),
                    _ => None,
                };
                if new.is_some() && new != obj[r.index()] {
                    obj[r.index()] = new;
                    changed = true;
                }
            }
        }
    }
    if changed {
        // Did not settle (cannot happen on a finite lattice of height 3, but stay sound): every
        // shared pointer may point anywhere in shared memory.
        for (vi, v) in k.values.iter().enumerate() {
            if v.ty.is_ptr() {
                obj[vi] = by_type(v.ty);
            }
        }
    }
    obj
}

/// The memory written by stores and atomics reachable from `(block, start)` without crossing a
/// barrier.
fn writes_until_barrier(
    k: &Kernel,
    cfg: &Cfg,
    obj: &[Option<MemObject>],
    block: BlockId,
    start: usize,
) -> Vec<MemObject> {
    let mut out = vec![];
    let mut visited = vec![false; k.blocks.len()];
    let mut stack = vec![(block, start)];
    'walk: while let Some((b, from)) = stack.pop() {
        for &i in k.block(b).insts.iter().skip(from) {
            let inst = k.inst(i);
            match inst.op {
                Op::Barrier => continue 'walk,
                Op::Store | Op::Atomic(_) | Op::AtomicCas => {
                    let o = inst
                        .args
                        .first()
                        .and_then(|a| a.as_value())
                        .and_then(|p| obj[p.index()])
                        .unwrap_or(MemObject::Global);
                    if !out.contains(&o) {
                        out.push(o);
                    }
                }
                _ => {}
            }
        }
        for &s in cfg.succs(b) {
            if !visited[s.index()] {
                visited[s.index()] = true;
                stack.push((s, 0));
            }
        }
    }
    out
}

/// Where a barrier epoch starts: the kernel entry or just after a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum EpochStart {
    Entry,
    Barrier(BlockId, usize),
}

/// For each placed load: whether every epoch it can execute in is free of writes that may alias
/// it (and, for global memory, whether the kernel writes global memory at all).
fn stable_loads(k: &Kernel, cfg: &Cfg, obj: &[Option<MemObject>]) -> HashMap<InstId, bool> {
    let mut out = HashMap::new();
    let writes_global = cfg.rpo().iter().any(|&b| {
        k.block(b).insts.iter().any(|&i| {
            let inst = k.inst(i);
            matches!(inst.op, Op::Store | Op::Atomic(_) | Op::AtomicCas)
                && inst
                    .args
                    .first()
                    .and_then(|a| a.as_value())
                    .and_then(|p| obj[p.index()])
                    .unwrap_or(MemObject::Global)
                    == MemObject::Global
        })
    });
    let mut memo: HashMap<EpochStart, Vec<MemObject>> = HashMap::new();
    for &b in cfg.rpo() {
        for (pos, &i) in k.block(b).insts.iter().enumerate() {
            let inst = k.inst(i);
            if inst.op != Op::Load {
                continue;
            }
            let o =
                inst.args.first().and_then(|a| a.as_value()).and_then(|p| obj[p.index()]).unwrap_or(MemObject::Global);
            if o == MemObject::Global {
                out.insert(i, !writes_global);
                continue;
            }
            let starts = epoch_starts(k, cfg, b, pos);
            let mut stable = true;
            for s in starts {
                let w = memo.entry(s).or_insert_with(|| match s {
                    EpochStart::Entry => writes_until_barrier(k, cfg, obj, Kernel::ENTRY, 0),
                    EpochStart::Barrier(bb, p) => writes_until_barrier(k, cfg, obj, bb, p + 1),
                });
                if w.iter().any(|w| w.may_alias(o)) {
                    stable = false;
                    break;
                }
            }
            out.insert(i, stable);
        }
    }
    out
}

/// The epoch starts that reach position `pos` of block `b` without crossing another barrier.
fn epoch_starts(k: &Kernel, cfg: &Cfg, b: BlockId, pos: usize) -> Vec<EpochStart> {
    let mut starts = vec![];
    let mut visited = vec![false; k.blocks.len()];
    let mut stack = vec![(b, pos)];
    'walk: while let Some((b, upto)) = stack.pop() {
        let insts = &k.block(b).insts;
        for p in (0..upto.min(insts.len())).rev() {
            if k.inst(insts[p]).op == Op::Barrier {
                let s = EpochStart::Barrier(b, p);
                if !starts.contains(&s) {
                    starts.push(s);
                }
                continue 'walk;
            }
        }
        if b == Kernel::ENTRY && !starts.contains(&EpochStart::Entry) {
            starts.push(EpochStart::Entry);
        }
        for &q in cfg.preds(b) {
            if cfg.is_reachable(q) && !visited[q.index()] {
                visited[q.index()] = true;
                stack.push((q, k.block(q).insts.len()));
            }
        }
    }
    starts
}

/// One letter per level, as `--print-divergence` shows it.
fn level_letter(l: Level) -> &'static str {
    match l {
        Level::Uniform => "U",
        Level::WarpUniform => "W",
        Level::Varying => "V",
    }
}

/// A short phrase for why a value has its level (empty for uniform values).
fn reason_text(k: &Kernel, r: Option<ValueReason>) -> String {
    let vn = |v: ValueId| k.values.get(v.index()).map(|d| format!("%{}", d.name)).unwrap_or_default();
    let bn = |b: BlockId| k.blocks.get(b.index()).map(|d| d.name.clone()).unwrap_or_default();
    let after = |h: Option<BlockId>| h.map(|h| format!(" after divergent loop {}", bn(h))).unwrap_or_default();
    match r {
        None => String::new(),
        Some(ValueReason::Special(s)) => Op::Special(s).mnemonic(),
        Some(ValueReason::Atomic) => "atomic result".into(),
        Some(ValueReason::RacyLoad(MemObject::Global)) => "load from global memory the kernel writes".into(),
        Some(ValueReason::RacyLoad(MemObject::Shared(n))) => {
            let name = k.shared.get(n as usize).map(|s| s.name.as_str()).unwrap_or("?");
            format!("load from @{name}, stored to without a barrier in between")
        }
        Some(ValueReason::RacyLoad(MemObject::SharedAny)) => {
            "load from shared memory stored to without a barrier in between".into()
        }
        Some(ValueReason::Collective) => "shuffle/vote result".into(),
        Some(ValueReason::Operand { value, after_loop }) => format!("depends on {}{}", vn(value), after(after_loop)),
        Some(ValueReason::Incoming { value, from, after_loop }) => {
            format!("gets {} from {}{}", vn(value), bn(from), after(after_loop))
        }
        Some(ValueReason::Join { branch }) => format!("join of the branch in {}", bn(branch)),
        Some(ValueReason::Irreducible) => "irreducible control flow".into(),
    }
}

/// The kernel as text with every block, block parameter, instruction result and branch annotated
/// `U` (block-uniform), `W` (warp-uniform) or `V` (varying), with the reason, for debugging a
/// verdict of [`crate::barrier::verify_barriers`].
pub fn annotate(k: &Kernel, u: &Uniformity) -> String {
    use kir_ir::printer::{kernel_lines, LineKind};
    let mut rows: Vec<(String, String)> = vec![];
    for line in kernel_lines(k) {
        let note = match line.kind {
            LineKind::Header => {
                rows.push((
                    format!("; divergence of @{}: U = same in every thread of the block, W = same in every lane of a warp, V = may differ", k.name),
                    String::new(),
                ));
                String::new()
            }
            LineKind::Label(b) if !u.is_reachable(b) => "unreachable".into(),
            LineKind::Label(b) => {
                let mut s = format!("control {}", level_letter(u.block_level(b)));
                if let Some(y) = u.block_reason(b) {
                    s.push_str(&format!(" (branch in {})", k.block(y).name));
                }
                for &p in &k.block(b).params {
                    let l = u.value_level(p);
                    s.push_str(&format!("; %{} {}", k.value(p).name, level_letter(l)));
                    if l > Level::Uniform {
                        s.push_str(&format!(" ({})", reason_text(k, u.value_reason(p))));
                    }
                }
                if let Some(l) = u.loop_at(b) {
                    if l.exit_level > Level::Uniform {
                        s.push_str(&format!("; loop exit {}", level_letter(l.exit_level)));
                    }
                }
                s
            }
            LineKind::Inst(i) => match k.inst(i).result {
                Some(r) if u.inst_block(i).is_some_and(|b| u.is_reachable(b)) => {
                    let l = u.value_level(r);
                    let why = reason_text(k, u.value_reason(r));
                    if why.is_empty() {
                        level_letter(l).to_string()
                    } else {
                        format!("{}  {why}", level_letter(l))
                    }
                }
                _ => String::new(),
            },
            LineKind::Term(b) if u.is_reachable(b) && matches!(k.block(b).term, Terminator::Br { .. }) => {
                let l = u.branch_level(b);
                let why = reason_text(k, u.branch_reason(b));
                if why.is_empty() {
                    format!("branch {}", level_letter(l))
                } else {
                    format!("branch {}  {why}", level_letter(l))
                }
            }
            _ => String::new(),
        };
        rows.push((line.text, note));
    }
    let width = rows.iter().filter(|(_, n)| !n.is_empty()).map(|(t, _)| t.chars().count()).max().unwrap_or(0).min(60);
    let mut out = String::new();
    for (text, note) in rows {
        if note.is_empty() {
            out.push_str(&text);
        } else {
            let pad = width.saturating_sub(text.chars().count()) + 2;
            out.push_str(&format!("{text}{}; {note}", " ".repeat(pad)));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyze(src: &str) -> (Kernel, Uniformity) {
        let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("{}", kir_ir::diag::render(&d, "t.kir", src, false)));
        let v = kir_ir::verify::verify_module(&m);
        assert!(!kir_ir::diag::has_errors(&v), "{}", kir_ir::diag::render(&v, "t.kir", src, false));
        let k = m.kernels.into_iter().next().unwrap();
        let u = Uniformity::compute(&k);
        (k, u)
    }
    fn level(k: &Kernel, u: &Uniformity, name: &str) -> Level {
        let v = k.values.iter().position(|d| d.name == name).unwrap_or_else(|| panic!("no %{name}"));
        u.value_level(ValueId(v as u32))
    }
    fn block(k: &Kernel, u: &Uniformity, name: &str) -> Level {
        u.block_level(k.block_by_name(name).unwrap())
    }

    #[test]
    fn sources_and_data_dependence() {
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
entry:
  %t = tid.x
  %c = ctaid.x
  %w = warpid
  %a = add.u32 %c, %n
  %b = add.u32 %a, %t
  %d = mul.u32 %w, 2
  ret
}",
        );
        assert_eq!(level(&k, &u, "t"), Level::Varying);
        assert_eq!(level(&k, &u, "a"), Level::Uniform);
        assert_eq!(level(&k, &u, "b"), Level::Varying);
        assert_eq!(level(&k, &u, "d"), Level::WarpUniform);
    }

    #[test]
    fn joins_of_divergent_branches_are_varying_unless_every_edge_agrees() {
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
entry:
  %t = tid.x
  %c = lt.u32 %t, %n
  br %c, a, b
a:
  jmp j(1, %n)
b:
  jmp j(2, %n)
j(%p: u32, %q: u32):
  ret
}",
        );
        assert_eq!(level(&k, &u, "p"), Level::Varying);
        assert_eq!(level(&k, &u, "q"), Level::Uniform);
        assert_eq!(block(&k, &u, "a"), Level::Varying);
        assert_eq!(block(&k, &u, "j"), Level::Uniform);
    }

    #[test]
    fn divergent_loop_exit_makes_live_outs_varying_but_not_the_counter_inside() {
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
entry:
  %t = tid.x
  jmp h(0)
h(%i: u32):
  %more = lt.u32 %i, %t
  br %more, body, out
body:
  %i2 = add.u32 %i, 1
  jmp h(%i2)
out:
  %after = add.u32 %i, 0
  ret
}",
        );
        assert_eq!(level(&k, &u, "i"), Level::Uniform, "threads still looping agree on %i");
        assert_eq!(level(&k, &u, "i2"), Level::Uniform);
        assert_eq!(level(&k, &u, "after"), Level::Varying, "temporal divergence");
        assert_eq!(block(&k, &u, "body"), Level::Varying);
        assert_eq!(block(&k, &u, "out"), Level::Uniform);
    }

    #[test]
    fn uniform_loop_with_leader_store_and_broadcast() {
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
  shared @tok: u32[1]
  shared @other: u32[32]
entry:
  %t = tid.x
  %c = ctaid.x
  %nc = nctaid.x
  %tp = addr @tok
  %op = addr @other
  %lead = eq.u32 %t, 0
  jmp work(%c)
work(%row: u32):
  %done = ge.u32 %row, %n
  br %done, exit, pub
pub:
  br %lead, st, sync
st:
  store %tp[0], %row
  jmp sync
sync:
  barrier
  %cur = load %tp[0]
  %lane = and.u32 %t, 31
  store %op[%lane], %cur
  %next = add.u32 %row, %nc
  barrier
  jmp work(%next)
exit:
  ret
}",
        );
        assert_eq!(level(&k, &u, "row"), Level::Uniform);
        assert_eq!(level(&k, &u, "cur"), Level::Uniform, "stores to @other do not alias @tok");
        assert_eq!(block(&k, &u, "sync"), Level::Uniform);
        assert_eq!(block(&k, &u, "st"), Level::Varying);
    }

    #[test]
    fn loads_racing_with_stores_in_the_same_epoch_are_varying() {
        // Without the second barrier, the next iteration's leader store races with this load.
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
  shared @tok: u32[1]
entry:
  %t = tid.x
  %tp = addr @tok
  %lead = eq.u32 %t, 0
  jmp work(0)
work(%row: u32):
  %done = ge.u32 %row, %n
  br %done, exit, pub
pub:
  br %lead, st, sync
st:
  store %tp[0], %row
  jmp sync
sync:
  barrier
  %cur = load %tp[0]
  %next = add.u32 %row, 1
  jmp work(%next)
exit:
  ret
}",
        );
        assert_eq!(level(&k, &u, "cur"), Level::Varying);
        assert_eq!(
            u.value_reason(k.values.iter().position(|d| d.name == "cur").map(|i| ValueId(i as u32)).unwrap()),
            Some(ValueReason::RacyLoad(MemObject::Shared(0)))
        );
    }

    #[test]
    fn global_loads_are_uniform_only_in_kernels_that_never_write_global_memory() {
        let src = |store: &str| {
            format!(
                "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {{
entry:
  %v = load %x[0]
  %t = tid.x
  {store}
  ret
}}"
            )
        };
        let (k, u) = analyze(&src(""));
        assert_eq!(level(&k, &u, "v"), Level::Uniform);
        let (k, u) = analyze(&src("store %y[%t], 1"));
        assert_eq!(level(&k, &u, "v"), Level::Varying, "%y may alias %x");
    }

    #[test]
    fn collectives() {
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
entry:
  %t = tid.x
  %w = warpid
  %p = lt.u32 %t, %n
  %u = lt.u32 %n, 7
  %all = vote.all %u, 0xffffffff
  %any = vote.any %p, 0xffffffff
  %bal = vote.ballot %u, 0xffffffff
  %partial = vote.any %p, 0xffff
  %bc = shfl.idx.u32 %t, %w, 0xffffffff
  %same = shfl.down.u32 %n, 1, 0xffffffff
  %mine = shfl.down.u32 %t, 1, 0xffffffff
  ret
}",
        );
        assert_eq!(level(&k, &u, "all"), Level::Uniform);
        assert_eq!(level(&k, &u, "any"), Level::WarpUniform);
        assert_eq!(level(&k, &u, "bal"), Level::WarpUniform, "a partial last warp gets another ballot");
        assert_eq!(level(&k, &u, "partial"), Level::Varying);
        assert_eq!(level(&k, &u, "bc"), Level::WarpUniform);
        assert_eq!(level(&k, &u, "same"), Level::Uniform);
        assert_eq!(level(&k, &u, "mine"), Level::Varying);
    }

    #[test]
    fn threads_stuck_in_an_infinite_loop_count_as_gone() {
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
entry:
  %t = tid.x
  %c = lt.u32 %t, %n
  br %c, spin, go
spin:
  jmp spin
go:
  barrier
  ret
}",
        );
        assert_eq!(block(&k, &u, "go"), Level::Varying);
    }

    #[test]
    fn irreducible_control_flow_is_all_varying_only_with_a_divergent_branch() {
        let src = |cond: &str| {
            format!(
                "kernel @k(%n: u32) {{
entry:
  %t = tid.x
  %c = lt.u32 {cond}, %n
  br %c, a, b
a:
  %d = eq.u32 %n, 3
  br %d, b, out
b:
  %e = eq.u32 %n, 4
  br %e, a, out
out:
  %z = add.u32 %n, 1
  ret
}}"
            )
        };
        let (k, u) = analyze(&src("%n"));
        assert!(u.is_irreducible());
        assert_eq!(level(&k, &u, "z"), Level::Uniform);
        let (k, u) = analyze(&src("%t"));
        assert_eq!(level(&k, &u, "z"), Level::Varying);
        assert_eq!(block(&k, &u, "out"), Level::Varying);
    }
}
