//! Uniformity (divergence) analysis: which values and which blocks may differ between the threads
//! of one block, and why.
//!
//! Guarantees (for a kernel that passes `crate::verify`; on a kernel with dangling handles the
//! result is the all-varying answer, never a panic):
//! - SOUNDNESS. A value reported [`Level::Uniform`] holds the same bits in every thread of a block
//!   that executes its definition in the same "instance" (same iteration of every enclosing loop);
//!   [`Level::WarpUniform`] means the same within every warp. A block whose control level is
//!   `Uniform` is executed by all threads of the block or by none, the same number of times;
//!   `WarpUniform` means the same for all lanes of each warp. The analysis may over-approximate
//!   (call something varying that is not), never the reverse. This relies on every barrier being
//!   reached uniformly, which barrier verification (`crate::verify::barrier`) checks with this same analysis (the argument is an
//!   induction over the barriers executed).
//! - Every non-uniform value and block carries a reason ([`ValueReason`], [`Uniformity::block_reason`])
//!   that leads, step by step, to a source of divergence: the chain diagnostics are built from. (Not
//!   when the analysis gave up, see COST below: then no value has a reason.)
//!
//! The rules, lattice `Uniform < WarpUniform < Varying`, an op's level the maximum of its inputs':
//! - Sources. `tid.*`, `global_id.*`, `laneid`: varying. `warpid`: warp-uniform. Kernel parameters,
//!   `ctaid.*`, `ntid.*`, `nctaid.*`, constants and `addr @x`: uniform. Atomic results: varying.
//! - Functions and calls. The analysis looks at one body and never into a callee. In a device
//!   function analysed on its own, the parameters are varying ([`ValueReason::FuncParam`]: some
//!   caller may pass `tid.x`). The result of a `call` is varying ([`ValueReason::Call`]), and a
//!   call counts as a write to the memory each of its pointer arguments may point into (a function
//!   reaches memory only through the pointers it is passed); barriers inside the callee are not
//!   seen, which only makes more loads racy. So a body with calls gets a sound, conservative
//!   verdict. Barrier verification follows calls by analysing an inlined copy of each kernel
//!   instead (`crate::verify::check_barriers`), where every argument and result is
//!   judged with the caller's values.
//! - Block shape. With `reqntid(x, y, z)` (every launch has exactly that block): `ntid.*` are known
//!   constants; `tid.d` and `global_id.d` along a dimension of size 1 are uniform (0, and
//!   `ctaid.d`); when `x` is a multiple of 32 a warp is 32 consecutive `tid.x` of one row, so
//!   `tid.y`, `global_id.y` are warp-uniform, and so are `tid.z`, `global_id.z` when `x * y` is a
//!   multiple of 32. Warp bits: `laneid` (always), `tid.x` and `global_id.x` (x a multiple of 32)
//!   have their bits from bit 5 up the same in all lanes of a warp (`ctaid.x * ntid.x` is then a
//!   multiple of 32, also modulo 2^32); `mov` keeps that, `shr` by a constant `c` lowers the bit
//!   by `c`; `shr` by at least that bit, `div` by a constant multiple of 2^bit and `and` with a
//!   constant clearing the bits below it give a warp-uniform result. These are pure functions of
//!   the thread's identity, so they hold whatever the instance (temporal divergence aside).
//! - Collectives. A shuffle of a (warp-)uniform value has that value's level. `shfl.idx` with a
//!   warp-uniform source lane (every lane reads lane `idx & 31`) and the constant full mask
//!   `0xffffffff` is warp-uniform. `vote.all`
//!   / `vote.any` of a uniform predicate are uniform; with the full constant mask any vote is
//!   warp-uniform. Everything else a collective returns is varying.
//! - Loads. A load's level is its address's (pointer and index), provided no thread can write the
//!   loaded memory concurrently, i.e. in the same barrier interval; otherwise it is varying
//!   ([`LoadConflict`] names the write and how it meets the load). Every barrier is reached by all
//!   threads together (the induction below), so all threads run the same sequence of barrier
//!   intervals, and within one interval two threads follow the same path until a branch whose
//!   level is above `Uniform`. Hence a write `S` and a load `L` to memory that may alias can run
//!   in the same interval only if (a) `S` reaches `L` along the CFG without crossing a barrier
//!   (a store before the load, loops included: a loop whose trips end their stores with a barrier
//!   does not reach a load after it), or (b) `L` reaches `S` without crossing a barrier (a thread
//!   running ahead stores before another loads), or (c) from a branch of level above `Uniform`
//!   both `S` and `L` are reached without crossing a barrier (threads split there). The load is
//!   stable when none holds for any aliasing write. Shared memory: a pointer derived from
//!   `addr @x` only aliases `@x` (the interpreter faults on an access outside its declaration); a
//!   shared pointer of other origin aliases all shared memory. What a pointer derives from is
//!   `crate::analysis::provenance::reachable_pointer_roots` (a least fixed point over the
//!   reachable blocks; a call's pointer result may be any object of its address space). Global
//!   memory is written by other blocks with no ordering at all, so a global load is stable only
//!   when the kernel contains no store or atomic to global memory whatsoever. Rule (c) depends on branch levels, which depend
//!   on loads: the analysis iterates to a fixpoint, starting from no conflict and only adding.
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
//!   branch is non-uniform, every value and block is reported varying. Loops and irreducibility are
//!   `crate::analysis::loops::LoopForest`'s (one natural loop per header).
//! - COST. No recursion (loops and irreducibility from `LoopForest`, regions and reachability
//!   explicit stacks). Each region costs its own size, temporal divergence asks only loops with a
//!   divergent exit, and reachability from non-uniform branches is computed only when a
//!   shared-memory load and a write exist. What stays superlinear (nested non-uniform branches:
//!   the sum of their regions; memory accesses times blocks; loads times writes) is charged to a
//!   budget of [`WORK_LIMIT`] steps: past it the analysis stops and gives the conservative answer
//!   (every value, branch and reachable block varying, no reasons, [`Uniformity::is_too_large`]),
//!   which is sound by the rule above.

use crate::analysis::cfg::{Cfg, ExitPolicy};
use crate::analysis::loops::LoopForest;
use crate::analysis::provenance::{reachable_pointer_roots, Root};
use crate::{
    AddrSpace, BinOp, BlockId, InstId, Kernel, Op, Operand, ShflMode, SpecialReg, Terminator, Type, ValueDef, ValueId,
    VoteMode,
};
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
    /// Warp-uniform: only the bits of `value` that are the same in all lanes of a warp survive
    /// (`shr %tid, 5` when `reqntid`'s x size is a multiple of 32).
    WarpBits { value: ValueId },
    /// Data dependence on an operand. `after_loop` is the header of a loop with a divergent exit
    /// when the operand is defined in that loop and used after it (temporal divergence).
    Operand { value: ValueId, after_loop: Option<BlockId> },
    /// A block parameter receiving `value` on the edge from block `from`.
    Incoming { value: ValueId, from: BlockId, after_loop: Option<BlockId> },
    /// A block parameter at a join of the non-uniform branch ending block `branch`.
    Join { branch: BlockId },
    /// The control flow graph is irreducible and has a non-uniform branch.
    Irreducible,
    /// The result of a `call`, in a body analysed without its callees: whatever the function
    /// computes may differ between threads.
    Call,
    /// A parameter of a device function analysed on its own: its callers may pass any value.
    FuncParam,
}

/// The most elementary steps (block and instruction visits, roughly) the analysis spends on one
/// kernel before it gives up with the conservative all-varying answer ([`Uniformity::is_too_large`]).
/// Its cost grows with non-uniform branches times the blocks they control, memory accesses times
/// blocks, and loads times stores; 1e8 steps take about half a second on a 2-core x86-64.
pub const WORK_LIMIT: u64 = 100_000_000;

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
    /// Indices of the loops whose exit level is above `Uniform` (the only ones temporal
    /// divergence asks about).
    divergent_loops: Vec<usize>,
    /// Block of each placed instruction.
    inst_block: HashMap<InstId, BlockId>,
    /// Block defining each value (`None` for kernel parameters).
    def_blocks: Vec<Option<BlockId>>,
    /// Memory a pointer value may point into.
    ptr_obj: Vec<Option<MemObject>>,
    /// For each placed load whose memory another thread may write concurrently: how (absent:
    /// stable).
    load_conflicts: HashMap<InstId, LoadConflict>,
    /// Barrier-free reachability used by the load rule (computed once).
    reach: Option<Reach>,
    /// `Some(k)`: the value is `>= 0` and its bits above bit `k` are the same in all lanes of a
    /// warp (with the kernel's `reqntid`), e.g. `tid.x` when the block's x size is a multiple of 32.
    warp_bits: Vec<Option<u32>>,
    /// Values that some rule would make warp-uniform if the block's x size were a multiple of 32
    /// (`tid.x >> 5` without `reqntid`, `tid.y`): what a rejection's hint suggests.
    warp_uniform_if_aligned: Vec<bool>,
    /// The declared block shape.
    reqntid: Option<[u32; 3]>,
    irreducible: bool,
    /// The kernel has dangling handles: every verdict is the conservative one.
    malformed: bool,
    /// Steps left before the analysis gives up ([`WORK_LIMIT`]).
    budget: u64,
    /// The analysis ran out of `budget`: every verdict is the conservative one.
    too_large: bool,
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
            for l in self.divergent_loops.iter().filter_map(|&i| self.loops.get(i)) {
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
        !self.malformed && !self.too_large && self.inst_block.contains_key(&i) && !self.load_conflicts.contains_key(&i)
    }
    /// Why the load `i` may see another thread's concurrent write (`None` when it is stable).
    pub fn load_conflict(&self, i: InstId) -> Option<&LoadConflict> {
        self.load_conflicts.get(&i)
    }
    /// Whether `v` would be warp-uniform if the block's x size were a multiple of 32 (declared with
    /// `reqntid`), while it is not now: `tid.x >> 5` in a kernel without `reqntid`.
    pub fn warp_uniform_if_aligned(&self, v: ValueId) -> bool {
        self.warp_uniform_if_aligned.get(v.index()).copied().unwrap_or(false)
    }
    /// The declared block shape the analysis used.
    pub fn reqntid(&self) -> Option<[u32; 3]> {
        self.reqntid
    }
    pub fn is_irreducible(&self) -> bool {
        self.irreducible
    }
    /// Whether the analysis gave up on this kernel ([`WORK_LIMIT`]), so every verdict is "varying".
    pub fn is_too_large(&self) -> bool {
        self.too_large
    }
    /// Spends `n` steps of the budget; false (and `too_large`) when it does not suffice.
    fn spend(&mut self, n: u64) -> bool {
        if self.too_large || n > self.budget {
            self.too_large = true;
            return false;
        }
        self.budget -= n;
        true
    }
    /// Whether the kernel has dangling handles (not verified), so every verdict is "varying".
    pub fn is_malformed(&self) -> bool {
        self.malformed
    }

    /// Runs the analysis on a kernel.
    pub fn compute(k: &Kernel) -> Uniformity {
        let ok = !k.blocks.is_empty() && handles_ok(k);
        Uniformity::from_cfg(k, ok.then(|| Cfg::new(k)).as_ref(), None)
    }

    /// [`Uniformity::compute`] on a CFG computed already (the one a
    /// [`Verified`](crate::verify::Verified) module carries, or an analysis cache's). `cfg` must
    /// be `k`'s; `None` only for a body whose handles do not check, which gets the all-varying
    /// answer either way.
    pub fn compute_with(k: &Kernel, cfg: Option<&Cfg>) -> Uniformity {
        let nb = k.blocks.len();
        Uniformity::from_cfg(k, cfg.filter(|c| nb != 0 && c.len() == nb && handles_ok(k)), None)
    }

    /// [`Uniformity::compute_with`] on a CFG and its natural loops computed already: what a
    /// [`Verified`](crate::verify::Verified) module carries (`loops` must be `cfg`'s), so the
    /// loop forest is built once per body.
    pub(crate) fn compute_with_loops(k: &Kernel, cfg: &Cfg, loops: &LoopForest) -> Uniformity {
        let nb = k.blocks.len();
        let fits = nb != 0 && cfg.len() == nb && handles_ok(k);
        Uniformity::from_cfg(k, fits.then_some(cfg), Some(loops))
    }

    /// The analysis on `k`'s CFG, which the callers built or checked against `k` (non-empty,
    /// handles in range), with its natural loops when they are known; `None`: the all-varying
    /// answer of a malformed body.
    fn from_cfg(k: &Kernel, cfg: Option<&Cfg>, loops: Option<&LoopForest>) -> Uniformity {
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
            divergent_loops: vec![],
            inst_block: HashMap::new(),
            def_blocks: vec![None; nv],
            ptr_obj: vec![None; nv],
            load_conflicts: HashMap::new(),
            reach: None,
            warp_bits: vec![None; nv],
            warp_uniform_if_aligned: vec![false; nv],
            reqntid: k.reqntid.map(|r| r.dims),
            irreducible: false,
            malformed: false,
            budget: WORK_LIMIT,
            too_large: false,
        };
        let cfg = match cfg {
            Some(c) => c,
            None => {
                u.value_level = vec![Level::Varying; nv];
                u.block_level = vec![Level::Varying; nb];
                u.branch_level = vec![Level::Varying; nb];
                u.reachable = vec![true; nb];
                u.malformed = true;
                return u;
            }
        };
        if k.is_func() {
            // A function analysed on its own: a caller may pass a thread-dependent argument.
            for &p in &k.params {
                u.value_level[p.index()] = Level::Varying;
                u.value_reason[p.index()] = Some(ValueReason::FuncParam);
            }
        }
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
        u.ipdom = cfg.post_dominators(ExitPolicy::RetOrStuck);
        let built;
        let forest = match loops {
            Some(f) => f,
            None => {
                built = LoopForest::new(cfg);
                &built
            }
        };
        u.loops = loops_of(forest, nb);
        u.irreducible = forest.is_irreducible();
        u.ptr_obj = pointer_objects(k, cfg, &u.inst_block);
        // Reach walks the CFG once per memory access.
        let accesses = k.insts.iter().filter(|i| !i.op.address_operands().is_empty()).count();
        if !u.spend((accesses as u64 + 1) * nb as u64) {
            return u.give_up(cfg);
        }
        u.reach = Some(Reach::new(k, cfg, &u.ptr_obj));
        u.update_load_conflicts(k);
        u.warp_bits = warp_bits(k, cfg, u.reqntid);
        let aligned = Some(u.reqntid.map_or([32, 2, 2], |[x, y, z]| [x.div_ceil(32).max(1) * 32, y, z]));
        let hyp = warp_bits(k, cfg, aligned);
        for &b in cfg.rpo() {
            for &i in &k.block(b).insts {
                let Some(r) = k.inst(i).result else { continue };
                let now = u.warp_pattern(k, i, &u.warp_bits, u.reqntid);
                let then = u.warp_pattern(k, i, &hyp, aligned);
                u.warp_uniform_if_aligned[r.index()] = then.is_some() && now.is_none();
            }
        }

        loop {
            u.propagate_values(k, cfg);
            u.compute_branches(k, cfg);
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
            let loads_changed = u.update_load_conflicts(k);
            let regions_changed = u.compute_regions(cfg);
            if u.too_large {
                return u.give_up(cfg);
            }
            if !loads_changed && !regions_changed {
                break;
            }
        }
        if u.too_large {
            return u.give_up(cfg);
        }
        u
    }

    /// The conservative answer when the work limit is reached: every value, branch and reachable
    /// block varying.
    fn give_up(mut self, cfg: &Cfg) -> Uniformity {
        self.too_large = true;
        for l in self.value_level.iter_mut() {
            *l = Level::Varying;
        }
        for r in self.value_reason.iter_mut() {
            *r = None;
        }
        for &b in cfg.rpo() {
            self.block_level[b.index()] = Level::Varying;
            self.block_reason[b.index()] = None;
            self.branch_level[b.index()] = Level::Varying;
            self.branch_reason[b.index()] = None;
        }
        for l in self.loops.iter_mut() {
            l.exit_level = Level::Varying;
        }
        self.divergent_loops = (0..self.loops.len()).collect();
        self
    }

    /// Recomputes which loads may see a concurrent write, for the current branch levels (more
    /// non-uniform branches can only add conflicts). Returns whether any load became unstable.
    fn update_load_conflicts(&mut self, k: &Kernel) -> bool {
        let split_branches: Vec<BlockId> = k
            .block_ids()
            .filter(|b| self.reachable[b.index()] && self.branch_level[b.index()] > Level::Uniform)
            .collect();
        let cost = match &self.reach {
            Some(r) => {
                // The walks from the non-uniform branches are only made for a shared-memory load
                // with a write that may alias it.
                let shared_pairs = r.loads.iter().any(|l| l.obj != MemObject::Global) && !r.writes.is_empty();
                let splits = if shared_pairs { split_branches.len() as u64 * r.succs.len() as u64 } else { 0 };
                (r.loads.len() as u64 + 1) * (r.writes.len() as u64 + 1) + splits
            }
            None => 0,
        };
        if !self.spend(cost) {
            return false;
        }
        let Some(reach) = &self.reach else { return false };
        let mut changed = false;
        for (l, conflict) in reach.conflicts(k, &split_branches) {
            if let std::collections::hash_map::Entry::Vacant(e) = self.load_conflicts.entry(l) {
                e.insert(conflict);
                changed = true;
            }
        }
        changed
    }

    /// The level `reqntid` and the warp-bits rules give the result of instruction `i` when they
    /// apply (`None` otherwise): `tid.y` is warp-uniform when the block's x size is a multiple of
    /// 32; `shr v, c` / `div v, c` / `and v, c` with a constant `c` that drops every bit of `v`
    /// that may differ within a warp is warp-uniform; a thread index along a dimension of size 1
    /// is uniform (it is 0).
    fn warp_pattern(
        &self,
        k: &Kernel,
        i: InstId,
        bits: &[Option<u32>],
        shape: Option<[u32; 3]>,
    ) -> Option<(Level, Option<ValueReason>)> {
        let inst = k.inst(i);
        let rows_aligned = |upto: usize| shape.is_some_and(|d| d[..upto].iter().product::<u32>() % 32 == 0);
        match &inst.op {
            Op::Special(r @ (SpecialReg::Tid(d) | SpecialReg::GlobalId(d))) => {
                let n = d.index();
                if shape.is_some_and(|s| s[n] == 1) {
                    // tid is 0; global_id is ctaid (wrapping `ctaid * 1 + 0`).
                    Some((Level::Uniform, None))
                } else if n > 0 && rows_aligned(n) {
                    Some((Level::WarpUniform, Some(ValueReason::Special(*r))))
                } else {
                    None
                }
            }
            Op::Bin(op @ (BinOp::Shr | BinOp::Div | BinOp::And), ty, _) if ty.is_unsigned_int() => {
                let v = inst.args.first()?.as_value()?;
                let c = self.known_const(k, inst.args.get(1)?, shape)?;
                let kbits = bits.get(v.index()).copied().flatten()?;
                let low = if kbits >= 64 { u64::MAX } else { (1u64 << kbits) - 1 };
                let drops = match op {
                    BinOp::Shr => c >= kbits as u64,
                    BinOp::Div => c != 0 && kbits < 64 && c % (1u64 << kbits) == 0,
                    _ => c & low == 0,
                };
                drops.then_some((Level::WarpUniform, Some(ValueReason::WarpBits { value: v })))
            }
            _ => None,
        }
    }

    /// The value of a constant operand, or of `ntid.*` under `reqntid`, or of a `mov` of one.
    fn known_const(&self, k: &Kernel, o: &Operand, shape: Option<[u32; 3]>) -> Option<u64> {
        match o {
            Operand::Const(c) => Some(c.bits),
            Operand::Value(v) => match k.values.get(v.index())?.def {
                ValueDef::Inst(i) => match &k.insts.get(i.index())?.op {
                    Op::Special(SpecialReg::Ntid(d)) => shape.map(|s| s[d.index()] as u64),
                    Op::Mov(_) => self.known_const(k, k.inst(i).args.first()?, shape),
                    _ => None,
                },
                _ => None,
            },
        }
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
        // One pass visits every instruction and edge, asking each use about every loop.
        let pass = (k.insts.len() as u64 + 2 * k.blocks.len() as u64) * (1 + self.divergent_loops.len() as u64);
        let mut changed = true;
        while changed {
            if !self.spend(pass) {
                return;
            }
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
        if let Some(p) = self.warp_pattern(k, i, &self.warp_bits, self.reqntid) {
            // A pure function of the thread's identity (and uniform constants): the same in every
            // instance, so temporal divergence of its operands does not matter.
            return p;
        }
        match &inst.op {
            Op::Special(r) => match r {
                SpecialReg::Tid(_) | SpecialReg::GlobalId(_) | SpecialReg::LaneId => {
                    (Level::Varying, Some(ValueReason::Special(*r)))
                }
                SpecialReg::WarpId => (Level::WarpUniform, Some(ValueReason::Special(*r))),
                SpecialReg::Ctaid(_) | SpecialReg::Ntid(_) | SpecialReg::Nctaid(_) => (Level::Uniform, None),
            },
            Op::Atomic(_) | Op::AtomicCas => (Level::Varying, Some(ValueReason::Atomic)),
            // What the callee computes is not analysed here (barrier verification analyses an
            // inlined copy instead): conservatively varying.
            Op::Call(_) => (Level::Varying, Some(ValueReason::Call)),
            // Each lane holds its own part of the warp's matrices.
            Op::Mma(_) | Op::Ldmatrix(..) => (Level::Varying, Some(ValueReason::Collective)),
            Op::Load | Op::LoadVec(_) => {
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
        // `mark[x] == tag` when `x` is in the region of the branch being processed (tag = its
        // position in the RPO), so each region costs its own size, not the kernel's.
        let mut mark = vec![usize::MAX; nb];
        for (tag, &y) in cfg.rpo().iter().enumerate() {
            let level = self.branch_level[y.index()];
            if level == Level::Uniform {
                continue;
            }
            let p = self.ipdom[y.index()];
            let region = region_list(cfg, y, p, &mut mark, tag);
            let loops_here = self.loops.iter().filter(|l| l.blocks[y.index()]).count() as u64;
            if !self.spend((region.len() as u64 + 1) * (1 + loops_here) + self.loops.len() as u64) {
                return false;
            }
            for &x in &region {
                if level >= block_level[x.index()] {
                    block_level[x.index()] = level;
                    block_reason[x.index()] = Some(y);
                }
            }
            // Joins: blocks of the region, or P, entered by two edges from Y or the region.
            let from_split = |q: BlockId| q == y || mark[q.index()] == tag;
            for j in region.iter().copied().chain(p) {
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
                if !l.blocks[y.index()] || level <= l.exit_level {
                    continue;
                }
                let leaves = |a: BlockId| l.blocks[a.index()] && cfg.succs(a).iter().any(|s| !l.blocks[s.index()]);
                if std::iter::once(y).chain(region.iter().copied()).any(leaves) {
                    l.exit_level = level;
                    l.exit_branch = Some(y);
                    changed = true;
                }
            }
        }
        self.block_level = block_level;
        self.block_reason = block_reason;
        self.divergent_loops = (0..self.loops.len()).filter(|&i| self.loops[i].exit_level > Level::Uniform).collect();
        changed
    }
}

/// The blocks reachable from the successors of `y` without passing `p`, as a list, marking each
/// with `tag` in `mark` (which must hold no `tag` yet).
fn region_list(cfg: &Cfg, y: BlockId, p: Option<BlockId>, mark: &mut [usize], tag: usize) -> Vec<BlockId> {
    let mut region = Vec::new();
    walk_region(cfg, cfg.succs(y), p, |b| {
        if mark[b.index()] == tag {
            return false;
        }
        mark[b.index()] = tag;
        region.push(b);
        true
    });
    region
}

/// The blocks reachable from `starts` without passing `p` (`None`: the virtual exit): the region
/// a branch with successors `starts` and immediate post-dominator `p` makes divergent, or, from
/// one successor, the blocks that side of it reaches (barrier verification's explanations).
pub fn region_from(cfg: &Cfg, starts: &[BlockId], p: Option<BlockId>) -> Vec<bool> {
    let mut region = vec![false; cfg.len()];
    walk_region(cfg, starts, p, |b| !std::mem::replace(&mut region[b.index()], true));
    region
}

/// The one walk of a region: depth first from `starts`, never entering `p`; `first(b)` marks
/// `b` and says whether this is its first visit (only then are its successors walked).
fn walk_region(cfg: &Cfg, starts: &[BlockId], p: Option<BlockId>, mut first: impl FnMut(BlockId) -> bool) {
    let mut stack: Vec<BlockId> = starts.to_vec();
    while let Some(b) = stack.pop() {
        if Some(b) == p || !first(b) {
            continue;
        }
        stack.extend(cfg.succs(b).iter().copied());
    }
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
    let ok_op = |o: &Operand| o.as_value().is_none_or(|v| v.index() < nv);
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
            // A call takes as many operands as its callee has parameters.
            if inst.args.len() != inst.op.arity() && !matches!(inst.op, Op::Call(_)) {
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

/// Uniformity's view of the shared natural loops ([`LoopForest`]), with uniform exits to start.
fn loops_of(forest: &LoopForest, nb: usize) -> Vec<Loop> {
    forest
        .loops()
        .iter()
        .map(|l| {
            let mut blocks = vec![false; nb];
            for b in &l.blocks {
                blocks[b.index()] = true;
            }
            Loop { header: l.header, blocks, exit_level: Level::Uniform, exit_branch: None }
        })
        .collect()
}

/// What memory each pointer value defined in a reachable block (or a parameter) may point into,
/// from the shared provenance analysis over reachable blocks: a global pointer parameter is
/// [`MemObject::Global`], a shared one [`MemObject::SharedAny`], `addr @x` [`MemObject::Shared`],
/// a call's pointer result ([`Root::Unknown`]) any object of its address space; a value with
/// several roots gets their join.
/// `inst_block` is the block of each placed instruction.
fn pointer_objects(k: &Kernel, cfg: &Cfg, inst_block: &HashMap<InstId, BlockId>) -> Vec<Option<MemObject>> {
    let by_type = |t: Type| match t {
        Type::Ptr(AddrSpace::Global, _) => Some(MemObject::Global),
        Type::Ptr(AddrSpace::Shared, _) => Some(MemObject::SharedAny),
        Type::Scalar(_) | Type::Vec(..) => None,
    };
    let reachable = |b: BlockId| b.index() < cfg.len() && cfg.is_reachable(b);
    let roots = reachable_pointer_roots(k, cfg);
    k.values
        .iter()
        .zip(&roots)
        .map(|(v, roots)| {
            let space = by_type(v.ty)?;
            let defined = match v.def {
                ValueDef::Param(_) => true,
                ValueDef::BlockParam(b, _) => reachable(b),
                ValueDef::Inst(i) => inst_block.get(&i).is_some_and(|&b| reachable(b)),
            };
            if !defined {
                return None;
            }
            let objects = roots.iter().filter_map(|r| match *r {
                Root::Param(i) => k.params.get(i as usize).and_then(|&p| by_type(k.value_type(p))),
                Root::Shared(n) => Some(MemObject::Shared(n)),
                Root::Unknown => Some(space),
            });
            // No roots cannot happen in a verified kernel (every pointer comes from a parameter,
            // an `addr` or a call): stay sound with the whole address space.
            Some(objects.reduce(MemObject::join).unwrap_or(space))
        })
        .collect()
}

/// `Some(k)` for values whose bits above bit `k` are the same in all lanes of a warp, given the
/// block shape `shape`: `laneid` (k = 5: it is below 32), `tid.x` and `global_id.x` when the x size
/// is a multiple of 32 (a warp is 32 consecutive `tid.x` of one row; `global_id.x` adds the
/// multiple of 32 `ctaid.x * ntid.x`, wrapping at 2^32, itself a multiple of 32), copies, and
/// `shr` by a smaller constant (k - c).
fn warp_bits(k: &Kernel, cfg: &Cfg, shape: Option<[u32; 3]>) -> Vec<Option<u32>> {
    let mut out: Vec<Option<u32>> = vec![None; k.values.len()];
    let x_aligned = shape.is_some_and(|s| s[0] % 32 == 0);
    for &b in cfg.rpo() {
        for &i in &k.block(b).insts {
            let inst = k.inst(i);
            let Some(r) = inst.result else { continue };
            let arg = |n: usize| inst.args.get(n).and_then(|a| a.as_value()).and_then(|v| out[v.index()]);
            let fact = match &inst.op {
                Op::Special(SpecialReg::LaneId) => Some(5),
                Op::Special(SpecialReg::Tid(crate::Dim::X) | SpecialReg::GlobalId(crate::Dim::X)) if x_aligned => {
                    Some(5)
                }
                Op::Mov(ty) if ty.is_unsigned_int() => arg(0),
                Op::Bin(BinOp::Shr, ty, _) if ty.is_unsigned_int() => match (arg(0), inst.args.get(1)) {
                    (Some(kb), Some(Operand::Const(c))) if c.bits < kb as u64 => Some(kb - c.bits as u32),
                    _ => None,
                },
                _ => None,
            };
            out[r.index()] = fact;
        }
    }
    out
}

/// Why a load may observe a write another thread makes concurrently (in the same barrier
/// interval), with the write that does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadConflict {
    /// The store or atomic (`None` for the global-memory rule: any write to global memory).
    pub store: Option<InstId>,
    pub kind: ConflictKind,
}

/// How a write and a load meet without a barrier between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConflictKind {
    /// Global memory, which the kernel writes somewhere (pointer parameters may alias, and other
    /// blocks are never ordered).
    GlobalWritten,
    /// The store reaches the load through these blocks (the store's first, the load's last) with
    /// no barrier: a thread may store just before another thread loads.
    StoreThenLoad(Vec<BlockId>),
    /// The load reaches the store through these blocks with no barrier: a thread ahead of another
    /// may already have stored when the other loads.
    LoadThenStore(Vec<BlockId>),
    /// Threads split at the non-uniform branch ending this block; from it, one side reaches the
    /// store and one the load, neither through a barrier.
    Split(BlockId),
}

/// A store, atomic or load in the layout.
#[derive(Clone, Copy)]
struct Access {
    inst: InstId,
    block: BlockId,
    pos: usize,
    obj: MemObject,
    /// For a load or store/atomic of global memory: the elements it may touch, when they are
    /// known (see [`elem_range`]); `None` for calls and other pointers.
    elems: Option<ElemRange>,
}

/// The elements `lo..=hi` (of `size` bytes each) past the pointer parameter `base`, with
/// `(hi + 1) * size <= 2^64`: the accessed byte offsets `lo * size .. (hi + 1) * size` do not wrap.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ElemRange {
    base: ValueId,
    size: u64,
    lo: u64,
    hi: u64,
}

impl ElemRange {
    /// Whether two ranges provably touch no common byte: the same parameter value, the same
    /// element size (each access is one element), disjoint index ranges, none wrapping.
    fn disjoint(&self, o: &ElemRange) -> bool {
        self.base == o.base && self.size == o.size && (self.hi < o.lo || o.hi < self.lo)
    }
}

/// An interval `lo..=hi` (every bound below 2^62) that an element index provably lies in, as the
/// load/store extends it to 64 bits: constants with the sign bit of their type clear, any value of
/// an unsigned type of 32 bits or fewer (zero-extended), a `cvt` of such to 64 bits, and `add`
/// at u64/s64 of such that provably does not overflow.
fn index_range(k: &Kernel, a: &Operand, depth: u32) -> Option<(u64, u64)> {
    use crate::ScalarType as S;
    const LIMIT: u64 = 1 << 62;
    let narrow = |t: S| matches!(t, S::U8 | S::U16 | S::U32).then(|| (0, (1u64 << t.bits()) - 1));
    match a {
        Operand::Const(c) => {
            let w = c.ty.bits();
            (c.ty.is_int() && w >= 2 && w <= 64 && c.bits < (1u64 << (w - 1)) && c.bits < LIMIT)
                .then_some((c.bits, c.bits))
        }
        Operand::Value(v) => {
            let vd = k.values.get(v.index())?;
            if let Type::Scalar(t) = vd.ty {
                if let Some(r) = narrow(t) {
                    return Some(r);
                }
            }
            if depth > 8 {
                return None;
            }
            let ValueDef::Inst(i) = vd.def else { return None };
            let inst = k.insts.get(i.index())?;
            match inst.op {
                Op::Cvt { to: S::U64 | S::S64, from, .. } => narrow(from),
                Op::Bin(BinOp::Add, S::U64 | S::S64, _) => {
                    let (a0, a1) = index_range(k, inst.args.first()?, depth + 1)?;
                    let (b0, b1) = index_range(k, inst.args.get(1)?, depth + 1)?;
                    let hi = a1.checked_add(b1)?;
                    (hi < LIMIT).then_some((a0 + b0, hi))
                }
                _ => None,
            }
        }
    }
}

/// The elements a global access `p[index]` touches: `p` a pointer parameter, or `offset` of one
/// (same pointer type) by an index [`index_range`] bounds, plus `index`, bounded the same way.
fn elem_range(k: &Kernel, p: ValueId, index: &Operand) -> Option<ElemRange> {
    let ty = k.values.get(p.index())?.ty;
    let Type::Ptr(AddrSpace::Global, elem) = ty else { return None };
    let size = elem.bytes() as u64;
    let (base, lo, hi) = match k.values[p.index()].def {
        ValueDef::Param(_) => (p, 0, 0),
        ValueDef::Inst(i) => {
            let inst = k.insts.get(i.index())?;
            if inst.op != Op::PtrOffset {
                return None;
            }
            let base = inst.args.first()?.as_value()?;
            if !matches!(k.values.get(base.index())?.def, ValueDef::Param(_)) || k.values[base.index()].ty != ty {
                return None;
            }
            let (lo, hi) = index_range(k, inst.args.get(1)?, 0)?;
            (base, lo, hi)
        }
        ValueDef::BlockParam(..) => return None,
    };
    let (ilo, ihi) = index_range(k, index, 0)?;
    let (lo, hi) = (lo + ilo, hi + ihi);
    let end = (hi as u128 + 1) * size as u128;
    (end <= 1u128 << 64).then_some(ElemRange { base, size, lo, hi })
}

/// Barrier-free reachability between the kernel's memory accesses: the data the load rule needs.
struct Reach {
    writes: Vec<Access>,
    loads: Vec<Access>,
    /// Per block: index of its first barrier (`None`: none).
    first_barrier: Vec<Option<usize>>,
    /// Per block: index of its last barrier.
    last_barrier: Vec<Option<usize>>,
    succs: Vec<Vec<BlockId>>,
    /// Whether the kernel writes global memory anywhere.
    writes_global: bool,
    /// Per write and per load: the blocks whose start is reached from just after it without a
    /// barrier.
    from_write: Vec<Vec<bool>>,
    from_load: Vec<Vec<bool>>,
}

impl Reach {
    fn new(k: &Kernel, cfg: &Cfg, obj: &[Option<MemObject>]) -> Reach {
        let nb = k.blocks.len();
        let mut r = Reach {
            writes: vec![],
            loads: vec![],
            first_barrier: vec![None; nb],
            last_barrier: vec![None; nb],
            succs: (0..nb).map(|b| cfg.succs(BlockId(b as u32)).to_vec()).collect(),
            writes_global: false,
            from_write: vec![],
            from_load: vec![],
        };
        for &b in cfg.rpo() {
            for (pos, &i) in k.block(b).insts.iter().enumerate() {
                let inst = k.inst(i);
                let target = || {
                    inst.args
                        .first()
                        .and_then(|a| a.as_value())
                        .and_then(|p| obj[p.index()])
                        .unwrap_or(MemObject::Global)
                };
                let elems = || elem_range(k, inst.args.first()?.as_value()?, inst.args.get(1)?);
                match inst.op {
                    Op::Barrier => {
                        r.first_barrier[b.index()].get_or_insert(pos);
                        r.last_barrier[b.index()] = Some(pos);
                    }
                    Op::Store | Op::Atomic(_) | Op::AtomicCas => {
                        let o = target();
                        r.writes_global |= o == MemObject::Global;
                        r.writes.push(Access { inst: i, block: b, pos, obj: o, elems: elems() });
                    }
                    // Several elements (`elems` knows one): the whole object. An async copy writes
                    // its destination later, at a wait: counting it from the copy on covers that.
                    Op::StoreVec(_) | Op::CpAsync(_) => {
                        let o = target();
                        r.writes_global |= o == MemObject::Global;
                        r.writes.push(Access { inst: i, block: b, pos, obj: o, elems: None });
                    }
                    Op::Load => r.loads.push(Access { inst: i, block: b, pos, obj: target(), elems: elems() }),
                    Op::LoadVec(_) => r.loads.push(Access { inst: i, block: b, pos, obj: target(), elems: None }),
                    Op::Call(_) => {
                        // A function reaches memory only through the pointers it is passed (it
                        // declares no shared memory and no op makes a pointer from an integer):
                        // a call may write what each pointer argument points into.
                        for a in &inst.args {
                            let Some(p) = a.as_value() else { continue };
                            let o = match obj.get(p.index()).copied().flatten() {
                                Some(o) => o,
                                None => match k.value_type(p) {
                                    Type::Ptr(AddrSpace::Global, _) => MemObject::Global,
                                    Type::Ptr(AddrSpace::Shared, _) => MemObject::SharedAny,
                                    Type::Scalar(_) | Type::Vec(..) => continue,
                                },
                            };
                            r.writes_global |= o == MemObject::Global;
                            r.writes.push(Access { inst: i, block: b, pos, obj: o, elems: None });
                        }
                    }
                    _ => {}
                }
            }
        }
        r.from_write = r.writes.iter().map(|a| r.starts_after(a.block, a.pos + 1, k)).collect();
        r.from_load = r.loads.iter().map(|a| r.starts_after(a.block, a.pos + 1, k)).collect();
        r
    }

    /// Whether a barrier sits in `block` at an index in `from..to`.
    fn barrier_between(&self, k: &Kernel, block: BlockId, from: usize, to: usize) -> bool {
        match (self.first_barrier[block.index()], self.last_barrier[block.index()]) {
            (Some(f), Some(l)) if f < to && l >= from => {
                k.block(block).insts[from..to].iter().any(|&i| k.inst(i).op == Op::Barrier)
            }
            _ => false,
        }
    }

    /// The blocks whose start is reached from position `from` of `block` without a barrier.
    fn starts_after(&self, block: BlockId, from: usize, k: &Kernel) -> Vec<bool> {
        let mut seen = vec![false; self.succs.len()];
        let len = k.block(block).insts.len();
        if self.barrier_between(k, block, from.min(len), len) {
            return seen;
        }
        let mut stack: Vec<BlockId> = self.succs[block.index()].clone();
        while let Some(b) = stack.pop() {
            if seen[b.index()] {
                continue;
            }
            seen[b.index()] = true;
            if self.first_barrier[b.index()].is_none() {
                stack.extend(self.succs[b.index()].iter().copied());
            }
        }
        seen
    }

    /// Whether the access `to` is reached without a barrier from just after `from`, whose
    /// barrier-free block starts are `starts`.
    fn reaches(&self, k: &Kernel, from: &Access, starts: &[bool], to: &Access) -> bool {
        (from.block == to.block && from.pos < to.pos && !self.barrier_between(k, to.block, from.pos + 1, to.pos))
            || (starts[to.block.index()] && !self.barrier_between(k, to.block, 0, to.pos))
    }

    /// A barrier-free path of blocks from `from` to `to` (both included), when [`Reach::reaches`].
    fn path(&self, k: &Kernel, from: &Access, to: &Access) -> Vec<BlockId> {
        if from.block == to.block && from.pos < to.pos && !self.barrier_between(k, to.block, from.pos + 1, to.pos) {
            return vec![from.block];
        }
        // Breadth-first over barrier-free blocks, from the successors of `from`'s block.
        let nb = self.succs.len();
        let mut parent: Vec<Option<BlockId>> = vec![None; nb];
        let mut seen = vec![false; nb];
        let mut queue = std::collections::VecDeque::new();
        for &s in &self.succs[from.block.index()] {
            if !seen[s.index()] {
                seen[s.index()] = true;
                parent[s.index()] = Some(from.block);
                queue.push_back(s);
            }
        }
        while let Some(b) = queue.pop_front() {
            if b == to.block {
                let mut path = vec![b];
                let mut cur = b;
                while let Some(p) = parent[cur.index()] {
                    path.push(p);
                    if p == from.block && path.len() > 1 {
                        break;
                    }
                    cur = p;
                }
                path.reverse();
                return path;
            }
            if self.first_barrier[b.index()].is_some() {
                continue;
            }
            for &s in &self.succs[b.index()] {
                if !seen[s.index()] {
                    seen[s.index()] = true;
                    parent[s.index()] = Some(b);
                    queue.push_back(s);
                }
            }
        }
        vec![from.block, to.block]
    }

    /// The loads that may observe a concurrent aliasing write, given the blocks ending in a
    /// non-uniform branch, each with the first such write found.
    fn conflicts(&self, k: &Kernel, split_branches: &[BlockId]) -> HashMap<InstId, LoadConflict> {
        let mut out = HashMap::new();
        // Computed on first use: a kernel without a load of shared memory that some write may
        // alias never needs it (it costs a walk of the CFG per non-uniform branch).
        let splits: std::cell::OnceCell<Vec<(BlockId, Vec<bool>)>> = std::cell::OnceCell::new();
        let splits = || {
            splits.get_or_init(|| {
                split_branches.iter().map(|&y| (y, self.starts_after(y, k.block(y).insts.len(), k))).collect()
            })
        };
        for (li, l) in self.loads.iter().enumerate() {
            if l.obj == MemObject::Global {
                // Any write to global memory may hit the load (pointer parameters may alias, and
                // other blocks run unordered), except a store or atomic through the same pointer
                // parameter value at element indices provably other than the loaded one.
                let hits = |w: &&Access| {
                    w.obj == MemObject::Global
                        && !matches!((&l.elems, &w.elems), (Some(le), Some(we)) if le.disjoint(we))
                };
                if let Some(w) = self.writes.iter().find(hits) {
                    out.insert(l.inst, LoadConflict { store: Some(w.inst), kind: ConflictKind::GlobalWritten });
                }
                continue;
            }
            let found = self.writes.iter().enumerate().filter(|(_, w)| w.obj.may_alias(l.obj)).find_map(|(wi, w)| {
                let kind = if self.reaches(k, w, &self.from_write[wi], l) {
                    ConflictKind::StoreThenLoad(self.path(k, w, l))
                } else if self.reaches(k, l, &self.from_load[li], w) {
                    ConflictKind::LoadThenStore(self.path(k, l, w))
                } else {
                    let at_end =
                        |y: BlockId| Access { inst: w.inst, block: y, pos: usize::MAX, obj: w.obj, elems: None };
                    let (y, _) = splits().iter().find(|(y, starts)| {
                        self.reaches(k, &at_end(*y), starts, w) && self.reaches(k, &at_end(*y), starts, l)
                    })?;
                    ConflictKind::Split(*y)
                };
                Some(LoadConflict { store: Some(w.inst), kind })
            });
            if let Some(c) = found {
                out.insert(l.inst, c);
            }
        }
        out
    }
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
        Some(ValueReason::WarpBits { value }) => format!("bits of {} that differ only between warps", vn(value)),
        Some(ValueReason::Operand { value, after_loop }) => format!("depends on {}{}", vn(value), after(after_loop)),
        Some(ValueReason::Incoming { value, from, after_loop }) => {
            format!("gets {} from {}{}", vn(value), bn(from), after(after_loop))
        }
        Some(ValueReason::Join { branch }) => format!("join of the branch in {}", bn(branch)),
        Some(ValueReason::Irreducible) => "irreducible control flow".into(),
        Some(ValueReason::Call) => "result of a call (the callee is not analysed here)".into(),
        Some(ValueReason::FuncParam) => "function parameter (any caller's argument)".into(),
    }
}

/// The kernel as text with every block, block parameter, instruction result and branch annotated
/// `U` (block-uniform), `W` (warp-uniform) or `V` (varying), with the reason, for debugging a
/// verdict of `crate::verify::barrier`'s check of one body.
pub fn annotate(k: &Kernel, u: &Uniformity) -> String {
    use crate::text::printer::{kernel_lines, LineKind};
    let mut rows: Vec<(String, String)> = vec![];
    if u.is_too_large() {
        rows.push((
            format!(
                "; the kernel is too large for the analysis (more than {WORK_LIMIT} steps): everything is reported varying"
            ),
            String::new(),
        ));
    }
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
                    let mut why = reason_text(k, u.value_reason(r));
                    if let (Some(ValueReason::RacyLoad(_)), Some(c)) = (u.value_reason(r), u.load_conflict(i)) {
                        if let Some(w) = c.store.and_then(|w| u.inst_block(w)) {
                            let b = &k.block(w).name;
                            why.push_str(&match c.kind {
                                ConflictKind::StoreThenLoad(_) => format!(" (the write in {b} reaches this load)"),
                                ConflictKind::LoadThenStore(_) => format!(" (the write in {b} follows this load)"),
                                ConflictKind::Split(_) => format!(" (the write in {b} may run concurrently)"),
                                ConflictKind::GlobalWritten => format!(" (e.g. in {b})"),
                            });
                        }
                    }
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
        let m = crate::parse(src).unwrap_or_else(|d| panic!("{}", crate::diag::render(&d, "t.kir", src, false)));
        let v = crate::verify::verify_module(&m);
        assert!(!crate::diag::has_errors(&v), "{}", crate::diag::render(&v, "t.kir", src, false));
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
        // Writes through the same parameter at provably other elements leave `x[0]` uniform.
        let ok = [
            "%i = cvt.u64.u32 %t\n  %j = add.u64 %i, 1\n  store %x[%j], 1",
            "%i = cvt.u64.u32 %t\n  %j = add.u64 1, %i\n  %o = atom.add %x[%j], 1",
            "%p = offset %x, 2\n  store %p[%t], 1",
            "store %x[1], 1",
        ];
        for st in ok {
            let (k, u) = analyze(&src(st));
            assert_eq!(level(&k, &u, "v"), Level::Uniform, "{st}");
        }
        let bad = [
            "store %x[%t], 1",
            "%j = add.u32 %t, 1\n  store %x[%j], 1",
            "%i = cvt.u64.u32 %t\n  %j = add.u64 %i, 0xffffffffffffffff\n  store %x[%j], 1",
            "%i = cvt.s64.u32 %t\n  %j = add.s64 %i, -1\n  store %x[%j], 1",
            "%j = load %x[%t]\n  store %x[%j], 1",
            "%p = ptrcast %x : ptr<global, u8>\n  store %p[1], 1",
            "store %x[0], 1",
        ];
        for st in bad {
            let (k, u) = analyze(&src(st));
            assert_eq!(level(&k, &u, "v"), Level::Varying, "{st}");
        }
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
    fn load_of(k: &Kernel, name: &str) -> InstId {
        let v = k.values.iter().position(|d| d.name == name).unwrap();
        match k.values[v].def {
            ValueDef::Inst(i) => i,
            _ => panic!("%{name} is not an instruction result"),
        }
    }

    /// A loop whose trips store and then reach a barrier: the load after it is ordered.
    fn store_loop(body_end: &str, before_store: &str) -> String {
        format!(
            "kernel @k(%n: u32) {{
  shared @a: u32[64]
entry:
  %t = tid.x
  %ap = addr @a
  jmp head(0)
head(%i: u32):
  %more = lt.u32 %i, %n
  br %more, body, after
body:
  {before_store}
  store %ap[%t], %i
  {body_end}
  %i2 = add.u32 %i, 1
  jmp head(%i2)
after:
  %v = load %ap[0]
  ret
}}"
        )
    }

    #[test]
    fn stores_in_a_loop_followed_by_a_barrier_do_not_race_with_a_load_after_it() {
        let (k, u) = analyze(&store_loop("barrier", ""));
        assert_eq!(level(&k, &u, "v"), Level::Uniform);
        assert!(u.load_is_stable(load_of(&k, "v")));
    }

    #[test]
    fn a_store_that_reaches_the_load_without_a_barrier_is_named_with_its_path() {
        // No barrier in the loop, or only before the store: the last trip's store reaches the load.
        for (end, before) in [("", ""), ("", "barrier")] {
            let (k, u) = analyze(&store_loop(end, before));
            assert_eq!(level(&k, &u, "v"), Level::Varying);
            let c = u.load_conflict(load_of(&k, "v")).expect("a conflict");
            let names = |p: &[BlockId]| p.iter().map(|b| k.block(*b).name.clone()).collect::<Vec<_>>();
            match &c.kind {
                ConflictKind::StoreThenLoad(path) => assert_eq!(names(path), ["body", "head", "after"]),
                other => panic!("{other:?}"),
            }
            assert_eq!(k.inst(c.store.unwrap()).op, Op::Store);
        }
    }

    #[test]
    fn a_load_followed_by_a_store_in_the_same_barrier_interval_races() {
        let (k, u) = analyze(
            "kernel @k(%n: u32) {
  shared @a: u32[64]
entry:
  %t = tid.x
  %ap = addr @a
  %v = load %ap[0]
  store %ap[%t], 1
  barrier
  ret
}",
        );
        assert_eq!(level(&k, &u, "v"), Level::Varying);
        assert!(matches!(u.load_conflict(load_of(&k, "v")).unwrap().kind, ConflictKind::LoadThenStore(_)));
    }

    #[test]
    fn threads_split_between_a_store_and_a_load_race_only_at_a_non_uniform_branch() {
        let src = |cond: &str| {
            format!(
                "kernel @k(%n: u32) {{
  shared @a: u32[64]
entry:
  %t = tid.x
  %ap = addr @a
  %c = lt.u32 {cond}, 3
  br %c, st, ld
st:
  store %ap[0], 1
  ret
ld:
  %v = load %ap[0]
  ret
}}"
            )
        };
        let (k, u) = analyze(&src("%t"));
        assert_eq!(level(&k, &u, "v"), Level::Varying);
        let c = u.load_conflict(load_of(&k, "v")).unwrap();
        assert_eq!(c.kind, ConflictKind::Split(Kernel::ENTRY));
        // All threads take the same side: the store and the load never run in one launch.
        let (k, u) = analyze(&src("%n"));
        assert_eq!(level(&k, &u, "v"), Level::Uniform);
    }

    #[test]
    fn reqntid_makes_warp_indices_warp_uniform() {
        let src = |attr: &str| {
            format!(
                "kernel @k(%n: u32){attr} {{
entry:
  %t = tid.x
  %ty = tid.y
  %tz = tid.z
  %g = global_id.x
  %w = shr.u32 %t, 5
  %w6 = shr.u32 %t, 6
  %half = shr.u32 %t, 4
  %gw = shr.u32 %g, 5
  %d = div.u32 %t, 64
  %m = and.u32 %t, 0xffffffe0
  %nt = ntid.x
  %dn = div.u32 %t, %nt
  %l = laneid
  %lw = shr.u32 %l, 5
  ret
}}"
            )
        };
        let (k, u) = analyze(&src(" reqntid(64, 2)"));
        for v in ["w", "w6", "gw", "d", "m", "ty", "lw", "dn"] {
            assert_eq!(level(&k, &u, v), Level::WarpUniform, "%{v}");
        }
        assert_eq!(level(&k, &u, "tz"), Level::Uniform, "tid.z is 0 in a block of depth 1");
        assert_eq!(level(&k, &u, "half"), Level::Varying);
        assert_eq!(level(&k, &u, "t"), Level::Varying);
        // Without the declaration (or with an x size that is not a multiple of 32) a warp may span
        // two rows: nothing but `laneid >> 5` is warp-uniform, and the hint knows what would help.
        for attr in ["", " reqntid(48, 2)"] {
            let (k, u) = analyze(&src(attr));
            for v in ["w", "gw", "d", "m", "ty"] {
                assert_eq!(level(&k, &u, v), Level::Varying, "%{v} with `{attr}`");
                let id = ValueId(k.values.iter().position(|d| d.name == v).unwrap() as u32);
                assert!(u.warp_uniform_if_aligned(id), "%{v} with `{attr}`");
            }
            assert_eq!(level(&k, &u, "lw"), Level::WarpUniform);
        }
    }

    #[test]
    fn memory_objects_come_from_the_shared_provenance_analysis() {
        let src = "func @id(%p: ptr<shared, u32>) -> ptr<shared, u32> {
entry:
  ret %p
}
kernel @k(%g: ptr<global, u32>, %n: u32, %sp: ptr<shared, u32>) {
  shared @s: u32[64]
  shared @t: u32[64]
entry:
  %a = addr @s
  %b = addr @t
  %c = lt.u32 %n, 3
  br %c, l, r
l:
  %a1 = offset %a, 1
  jmp j(%a1, %a1, %a)
r:
  %r = call @id(%b)
  jmp j(%r, %a, %sp)
j(%q: ptr<shared, u32>, %same: ptr<shared, u32>, %w: ptr<shared, u32>):
  %g1 = offset %g, %n
  ret
dead:
  jmp j(%b, %b, %b)
}";
        let m = crate::parse(src).unwrap_or_else(|d| panic!("{}", crate::diag::render(&d, "t.kir", src, false)));
        let v = crate::verify::verify_module(&m);
        assert!(!crate::diag::has_errors(&v), "{}", crate::diag::render(&v, "t.kir", src, false));
        let k = &m.kernels[0];
        let u = Uniformity::compute(k);
        let obj = |name: &str| u.mem_object(ValueId(k.values.iter().position(|d| d.name == name).unwrap() as u32));
        assert_eq!(obj("g"), Some(MemObject::Global), "a global pointer parameter");
        assert_eq!(obj("g1"), Some(MemObject::Global));
        assert_eq!(obj("sp"), Some(MemObject::SharedAny), "a shared pointer parameter");
        assert_eq!(obj("w"), Some(MemObject::SharedAny), "@s joined with a parameter");
        assert_eq!(obj("n"), None, "not a pointer");
        assert_eq!(obj("a1"), Some(MemObject::Shared(0)), "derived from `addr @s`");
        assert_eq!(obj("r"), Some(MemObject::SharedAny), "a call's result: any shared memory");
        assert_eq!(obj("q"), Some(MemObject::SharedAny), "@s joined with a call result");
        // The unreachable block's `@t` does not count.
        assert_eq!(obj("same"), Some(MemObject::Shared(0)), "@s on both reachable edges");
        assert_eq!(obj("b"), Some(MemObject::Shared(1)));
    }
}
