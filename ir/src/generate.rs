//! Random valid kernels, for property tests, differential (GPU vs interpreter) tests, fuzzing and
//! benchmarks.
//!
//! Guarantees:
//! - [`random_kernel`] is deterministic: the same seed and [`GenConfig`] give the same kernel (its
//!   own PRNG, no dependency). The kernel passes the verifier ([`crate::verify::verify_body`]
//!   reports no error) and has about [`GenConfig::insts`] instructions.
//! - Every kernel has the signature of [`SIGNATURE`] and, launched as [`LaunchContract`] says, has
//!   a fully determined result: no out-of-bounds access, no data race, no integer division by zero
//!   or `MIN / -1`, barriers only where every thread of the block reaches them the same number of
//!   times (unless [`GenConfig::allow_divergent_barriers`] asks otherwise), and warp collectives
//!   with the full mask only in control flow that is uniform over the block.
//! - No approximate op is generated unless [`GenConfig::allow_approx`] is set.
//! - Float arithmetic includes `mul` + `add` pairs whose `mul` has no other use (the shape a
//!   contraction into `fma` rewrites), so a pass that changes rounding changes some outputs.
//! - [`random_module`] / [`generate_module`] make a module: 0 to [`GenConfig::max_funcs`] device
//!   functions and the kernel, which passes [`crate::verify::verify_module`], prints and parses
//!   back structurally equal (callees are numbered in layout order, as parsing numbers them), and
//!   obeys the same contract. A module without functions holds exactly
//!   [`random_kernel`]`(seed, cfg)`; [`random_kernel`] ignores `max_funcs`, so its output for a
//!   seed never depends on the function settings.
//!
//! # Device functions
//!
//! Function `@fi` may call `@f0 .. @f(i-1)` (never itself: no recursion); the kernel may call any.
//! Each takes `%out`, `%n` and the caller's `%slot`, some of `%in`, `%fin`, `%fout` and the shared
//! array's pointer `%sm`, and 0 to 3 scalars, in a random order; it has a result of a random type
//! or none. Callers pass their own pointers, `%n` and `%slot`, so a function keeps the contract:
//! it reads the inputs at `x rem %n` and writes only `%out[%slot]` / `%fout[%slot]`. A scalar
//! parameter marked uniform gets a block-uniform argument at every call (a constant or a value the
//! generator knows is uniform), so the function may branch on it around barriers. Bodies are made
//! like the kernel's (loops, branches, loads, stores, atomics, shared exchanges through `%sm` or
//! plain barriers, full-mask shuffles and votes, calls), and may return early from an `if` arm;
//! after an early return under thread-dependent control flow the rest of the function places no
//! barrier or collective. A function that contains barriers or full-mask collectives, directly or
//! through its calls, is called only in block-uniform control flow, unless
//! [`GenConfig::allow_divergent_barriers`] is set: then its calls are also placed (and preferred)
//! in thread-dependent control flow, and counted in [`GeneratedModule::divergent_calls`]. Calls
//! land wherever statements do: in loops, under uniform and thread-dependent branches; their
//! results (when kept) join the scope as thread-dependent values.
//!
//! # Signature and launch contract
//!
//! ```text
//! kernel @fuzz(%in: ptr<global, u32>, %fin: ptr<global, f32>,
//!              %out: ptr<global, u32>, %fout: ptr<global, f32>, %n: u32)
//! ```
//!
//! - `%n` ≥ 1 is the element count of each of the four buffers. `%in` and `%fin` are only read,
//!   at indices `x rem %n`. `%out` and `%fout` are written (store, and `atom.*` on `%out`) only at
//!   index `%slot = global_id.x rem %n`, so the result is deterministic when `%n` ≥ the number of
//!   threads (each thread owns its slot), e.g. `%n = grid × block`.
//! - The block is one-dimensional, its size a multiple of 32 (full warps, for the full-mask
//!   collectives) and at most [`SHARED_LEN`]; the grid is one-dimensional. [`BLOCK_THREADS`] and
//!   [`GRID_BLOCKS`] are the shape the tests use.
//! - With shared memory, the kernel declares `shared @sm: u32[SHARED_LEN]`; each thread writes
//!   `@sm[tid.x]`, then after a `barrier` reads `@sm[(tid.x + k) rem ntid.x]`, then `barrier` again.

use crate::ir::{BlockCall, BlockId, FuncInfo, Kernel, Module, Operand, SharedDecl, Terminator, ValueId};
use crate::op::*;
use crate::span::Span;
use crate::types::{AddrSpace, Constant, ScalarType, Type, VecWidth};

/// The kernel name of every generated kernel.
pub const KERNEL_NAME: &str = "fuzz";
/// The signature every generated kernel has.
pub const SIGNATURE: &str = "kernel @fuzz(%in: ptr<global, u32>, %fin: ptr<global, f32>, %out: ptr<global, u32>, %fout: ptr<global, f32>, %n: u32)";
/// Threads per block the tests launch with.
pub const BLOCK_THREADS: u32 = 64;
/// Blocks the tests launch.
pub const GRID_BLOCKS: u32 = 2;
/// Length of the shared array `@sm` (u32 elements); the block size must not exceed it.
pub const SHARED_LEN: u64 = 1024;

/// How to launch a generated kernel so that its result is determined (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchContract {
    pub block_threads: u32,
    pub grid_blocks: u32,
    /// The value of `%n` and the element count of each buffer.
    pub n: u32,
}

impl LaunchContract {
    /// The shape the tests use: [`GRID_BLOCKS`] blocks of [`BLOCK_THREADS`], one slot per thread.
    pub const DEFAULT: LaunchContract =
        LaunchContract { block_threads: BLOCK_THREADS, grid_blocks: GRID_BLOCKS, n: BLOCK_THREADS * GRID_BLOCKS };
}

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Target number of instructions (terminators excluded); the result is within a few dozen.
    pub insts: usize,
    /// Counted loops (`head(%i, ...)` with block parameters, trip counts at most 4).
    pub allow_loops: bool,
    /// Loop trip counts that depend on the thread (otherwise uniform over the block).
    pub divergent_loops: bool,
    /// Maximum nesting of loops inside loops.
    pub max_loop_depth: u32,
    /// Maximum nesting of if/else and loops.
    pub max_depth: u32,
    /// Branch conditions that depend on the thread (otherwise only uniform ones).
    pub divergent_branches: bool,
    /// Shared memory (`@sm`) with barriers, placed in block-uniform control flow only.
    pub allow_shared_barriers: bool,
    /// `shfl` and `vote` with the full mask, placed in block-uniform control flow only.
    pub allow_shuffles: bool,
    /// Atomics (`atom.add/min/max/exch` on the thread's own `%out` slot).
    pub allow_atomics: bool,
    /// Approximate ops (`.approx`, `.full`); their GPU results differ from the exact ones.
    pub allow_approx: bool,
    /// For negative tests: also place `barrier` in thread-dependent control flow (needs
    /// `divergent_branches` or `divergent_loops` to have any effect). Such kernels deadlock or
    /// misbehave on a GPU.
    pub allow_divergent_barriers: bool,
    /// The scalar types arithmetic is generated in (u32, f32 and pred are always used for
    /// indices, buffers and conditions).
    pub types: Vec<ScalarType>,
    /// Percentage of operands that are constants (more gives more to fold).
    pub const_percent: u32,
    /// Vector values: `vec` of scalars in scope, `insert`s into it, an `extract` back to a scalar.
    /// Off by default, so that a seed makes the same kernel as before vectors existed.
    pub allow_vectors: bool,
    /// Device functions per module ([`random_module`]): each module has 0 to `max_funcs` of them
    /// (so some modules have none). [`random_kernel`] ignores it.
    pub max_funcs: usize,
    /// About how many instructions a generated function has (each gets between half and one and
    /// a half times this).
    pub func_insts: usize,
    /// Percentage of statement slots that become a call, when a function can be called there.
    pub call_percent: u32,
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig {
            insts: 80,
            allow_loops: true,
            divergent_loops: true,
            max_loop_depth: 2,
            max_depth: 3,
            divergent_branches: true,
            allow_shared_barriers: true,
            allow_shuffles: true,
            allow_atomics: true,
            allow_approx: false,
            allow_divergent_barriers: false,
            types: ScalarType::ALL.iter().copied().filter(|t| !t.is_pred()).collect(),
            const_percent: 25,
            allow_vectors: false,
            max_funcs: 0,
            func_insts: 20,
            call_percent: 8,
        }
    }
}

impl GenConfig {
    /// The default configuration with device functions: modules with 0 to 3 functions
    /// ([`random_module`]).
    pub fn with_funcs() -> GenConfig {
        GenConfig { max_funcs: 3, ..GenConfig::default() }
    }
}

/// A generated kernel (or function) and what it contains.
#[derive(Clone, Debug)]
pub struct Generated {
    pub kernel: Kernel,
    /// Barriers placed in thread-dependent control flow (0 unless `allow_divergent_barriers`),
    /// counting calls of functions with barriers or collectives placed there.
    pub divergent_barriers: usize,
    pub barriers: usize,
    pub collectives: usize,
    pub loops: usize,
    pub branches: usize,
    /// `call` instructions.
    pub calls: usize,
    /// Calls of functions that contain barriers or full-mask collectives (directly or through
    /// their own calls) placed in thread-dependent control flow (0 unless
    /// `allow_divergent_barriers`).
    pub divergent_calls: usize,
    /// Calls of functions that contain barriers or full-mask collectives.
    pub sync_calls: usize,
    /// Calls inside loops.
    pub calls_in_loops: usize,
    /// Calls in thread-dependent control flow (of any function).
    pub calls_in_divergent_flow: usize,
    /// `ret` terminators inside a function other than its last block (early returns).
    pub early_returns: usize,
}

impl Generated {
    fn empty(name: &str) -> Generated {
        Generated {
            kernel: Kernel::new(name),
            divergent_barriers: 0,
            barriers: 0,
            collectives: 0,
            loops: 0,
            branches: 0,
            calls: 0,
            divergent_calls: 0,
            sync_calls: 0,
            calls_in_loops: 0,
            calls_in_divergent_flow: 0,
            early_returns: 0,
        }
    }
}

/// A generated module (one kernel, [`KERNEL_NAME`], and its device functions) and what it
/// contains, summed over all bodies.
#[derive(Clone, Debug)]
pub struct GeneratedModule {
    pub module: Module,
    /// Barriers in thread-dependent control flow, in the kernel or in a function, plus calls of
    /// functions with barriers or collectives from thread-dependent control flow (a conservative
    /// label, as for kernels: see [`Generated::divergent_barriers`]).
    pub divergent_barriers: usize,
    pub barriers: usize,
    pub collectives: usize,
    pub loops: usize,
    pub branches: usize,
    pub calls: usize,
    pub divergent_calls: usize,
    /// Calls of functions with barriers or collectives.
    pub sync_calls: usize,
    pub calls_in_loops: usize,
    pub calls_in_divergent_flow: usize,
    pub early_returns: usize,
}

/// A random valid kernel (see the module docs).
pub fn random_kernel(seed: u64, cfg: &GenConfig) -> Kernel {
    generate(seed, cfg).kernel
}

/// A random valid kernel, with counts of what it contains.
pub fn generate(seed: u64, cfg: &GenConfig) -> Generated {
    Gen::new(seed, cfg, vec![]).run()
}

/// A random valid module: 0 to [`GenConfig::max_funcs`] device functions `@f0`, `@f1`, ... and
/// the kernel `@fuzz` (see the module docs).
pub fn random_module(seed: u64, cfg: &GenConfig) -> Module {
    generate_module(seed, cfg).module
}

/// Salt of the random stream that makes a module's functions (the kernel's own stream is the
/// one [`random_kernel`] uses).
const FUNC_SALT: u64 = 0xF0CC_A11E_D0DE_5EED;

/// A random valid module, with counts of what it contains (see [`random_module`]).
pub fn generate_module(seed: u64, cfg: &GenConfig) -> GeneratedModule {
    let mut rng = Rng::new(seed ^ FUNC_SALT);
    let nf = rng.below(cfg.max_funcs as u64 + 1) as usize;
    let mut sigs: Vec<FuncSig> = Vec::with_capacity(nf);
    let mut bodies: Vec<Generated> = Vec::with_capacity(nf + 1);
    for i in 0..nf {
        let mut sig = FuncSig::random(&mut rng, cfg, i);
        let fseed = rng.next_u64();
        let g = Gen::new_func(fseed, cfg, &sig, sigs.clone()).run_func(&sig, &mut rng);
        sig.sync = g.barriers > 0 || g.collectives > 0 || g.sync_calls > 0;
        sigs.push(sig);
        bodies.push(g);
    }
    let kernel = Gen::new(seed, cfg, sigs).run();
    let mut out = GeneratedModule {
        module: Module::default(),
        divergent_barriers: 0,
        barriers: 0,
        collectives: 0,
        loops: 0,
        branches: 0,
        calls: 0,
        divergent_calls: 0,
        sync_calls: 0,
        calls_in_loops: 0,
        calls_in_divergent_flow: 0,
        early_returns: 0,
    };
    bodies.push(kernel);
    for g in bodies {
        out.divergent_barriers += g.divergent_barriers;
        out.barriers += g.barriers;
        out.collectives += g.collectives;
        out.loops += g.loops;
        out.branches += g.branches;
        out.calls += g.calls;
        out.divergent_calls += g.divergent_calls;
        out.sync_calls += g.sync_calls;
        out.calls_in_loops += g.calls_in_loops;
        out.calls_in_divergent_flow += g.calls_in_divergent_flow;
        out.early_returns += g.early_returns;
        let mut g = g;
        g.kernel.compact_callees();
        if g.kernel.is_func() {
            out.module.funcs.push(g.kernel);
        } else {
            out.module.kernels.push(g.kernel);
        }
    }
    out
}

/// What a parameter of a generated function stands for. Every function takes `%out`, `%n` and
/// `%slot` (the caller's thread slot), and some of the others; a caller passes its own.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    In,
    Fin,
    Out,
    Fout,
    N,
    Slot,
    Sm,
    /// A scalar; `true` when every call passes a block-uniform value (so the function may branch
    /// on it around barriers).
    Scalar(ScalarType, bool),
}

/// The signature of a generated function, and what it contains (for its callers).
#[derive(Clone, Debug)]
struct FuncSig {
    name: String,
    params: Vec<Role>,
    ret: Option<ScalarType>,
    /// Contains barriers or full-mask collectives, directly or through its calls: callers place
    /// its calls in block-uniform control flow only (unless asked for divergent barriers).
    sync: bool,
}

impl FuncSig {
    fn random(rng: &mut Rng, cfg: &GenConfig, i: usize) -> FuncSig {
        let mut fixed = vec![];
        if rng.chance(70) {
            fixed.push(Role::In);
        }
        if rng.chance(60) {
            fixed.push(Role::Fin);
        }
        fixed.push(Role::Out);
        if rng.chance(50) {
            fixed.push(Role::Fout);
        }
        fixed.push(Role::N);
        fixed.push(Role::Slot);
        if cfg.allow_shared_barriers && rng.chance(50) {
            fixed.push(Role::Sm);
        }
        let scalars: Vec<Role> = (0..rng.below(4)).map(|_| Role::Scalar(pick_type(rng, cfg), rng.chance(40))).collect();
        let params = if rng.chance(50) { [fixed, scalars].concat() } else { [scalars, fixed].concat() };
        let ret = rng.chance(65).then(|| pick_type(rng, cfg));
        FuncSig { name: format!("f{i}"), params, ret, sync: false }
    }
}

/// A random scalar type: `u32`, `f32` and `pred` often, else one of [`GenConfig::types`].
fn pick_type(rng: &mut Rng, cfg: &GenConfig) -> ScalarType {
    use ScalarType::*;
    match rng.below(10) {
        0..=2 => U32,
        3 => F32,
        4 => Pred,
        _ if cfg.types.is_empty() => U32,
        _ => rng.pick(&cfg.types),
    }
}

pub use crate::rng::splitmix64;

#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }
    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((self.next_u64() as u128 * n as u128) >> 64) as u64
        }
    }
    /// True with probability `pct`%.
    pub fn chance(&mut self, pct: u32) -> bool {
        self.below(100) < pct as u64
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// An interesting constant of type `ty`: edge values more often than uniform random bits.
pub fn random_constant(rng: &mut Rng, ty: ScalarType) -> Constant {
    use ScalarType::*;
    if ty == Pred {
        return Constant::pred(rng.chance(50));
    }
    if ty.is_int() {
        let bits = ty.bits();
        let min = if ty.is_signed_int() { 1u64 << (bits - 1) } else { 0 };
        let v = match rng.below(8) {
            0 => 0,
            1 => 1,
            2 => ty.mask(),
            3 => min,
            4 => min.wrapping_sub(1),
            5 => rng.below(17),
            6 => rng.below(256),
            _ => rng.next_u64(),
        };
        return Constant::from_bits(ty, v);
    }
    let v: f64 = match rng.below(14) {
        0 => 0.0,
        1 => -0.0,
        2 => 1.0,
        3 => -1.0,
        4 => 0.5,
        5 => 3.0,
        6 => f64::INFINITY,
        7 => f64::NEG_INFINITY,
        8 => f64::NAN,
        9 => (rng.below(64) as f64 - 32.0) / 8.0,
        10 => 1e-40,
        11 => 65504.0,
        12 => 1e30,
        _ => return Constant::from_bits(ty, rng.next_u64()),
    };
    match ty {
        F64 => Constant::f64(v),
        F32 => Constant::f32(v as f32),
        F16 => Constant::from_bits(F16, half::f16::from_f64(v).to_bits() as u64),
        _ => Constant::from_bits(BF16, half::bf16::from_f64(v).to_bits() as u64),
    }
}

#[derive(Clone, Copy)]
struct Val {
    v: ValueId,
    uniform: bool,
}

const NTYPES: usize = 13;

fn tidx(t: ScalarType) -> usize {
    ScalarType::ALL.iter().position(|x| *x == t).unwrap_or(0)
}

struct Gen<'c> {
    k: Kernel,
    rng: Rng,
    cfg: &'c GenConfig,
    cur: BlockId,
    /// Values in scope, per type (index of `ScalarType::ALL`).
    scope: [Vec<Val>; NTYPES],
    count: usize,
    names: u32,
    blocks: u32,
    in_: Option<ValueId>,
    fin: Option<ValueId>,
    out: ValueId,
    fout: Option<ValueId>,
    n: ValueId,
    gid: ValueId,
    tid: ValueId,
    ntid: ValueId,
    slot: ValueId,
    sm: Option<ValueId>,
    /// Whether every thread of the block executes the current point the same number of times.
    uniform_ctx: bool,
    /// In a function: some threads may have returned early under a thread-dependent branch, so
    /// the rest of the function is not block-uniform.
    exited: bool,
    loop_depth: u32,
    stats: Generated,
    /// Functions this body may call (all defined before it: no recursion).
    callable: Vec<FuncSig>,
    /// The most calls this body makes.
    max_calls: usize,
    /// In a function: its result type (`Some(None)` for a function without one).
    func_ret: Option<Option<ScalarType>>,
}

type Mark = [usize; NTYPES];

impl<'c> Gen<'c> {
    fn new(seed: u64, cfg: &'c GenConfig, callable: Vec<FuncSig>) -> Gen<'c> {
        let mut k = Kernel::new(KERNEL_NAME);
        let in_ = k.add_param("in", Type::Ptr(AddrSpace::Global, ScalarType::U32));
        let fin = k.add_param("fin", Type::Ptr(AddrSpace::Global, ScalarType::F32));
        let out = k.add_param("out", Type::Ptr(AddrSpace::Global, ScalarType::U32));
        let fout = k.add_param("fout", Type::Ptr(AddrSpace::Global, ScalarType::F32));
        let n = k.add_param("n", Type::U32);
        let entry = k.add_block("entry");
        let stats = Generated::empty(KERNEL_NAME);
        Gen {
            k,
            rng: Rng::new(seed),
            cfg,
            cur: entry,
            scope: Default::default(),
            count: 0,
            names: 0,
            blocks: 0,
            in_: Some(in_),
            fin: Some(fin),
            out,
            fout: Some(fout),
            n,
            gid: n,
            tid: n,
            ntid: n,
            slot: n,
            sm: None,
            uniform_ctx: true,
            exited: false,
            loop_depth: 0,
            stats,
            callable,
            max_calls: 6,
            func_ret: None,
        }
    }

    /// The generator of function `sig`'s body (parameters declared, nothing emitted yet).
    fn new_func(seed: u64, cfg: &'c GenConfig, sig: &FuncSig, callable: Vec<FuncSig>) -> Gen<'c> {
        let mut g = Gen::new(seed, cfg, callable);
        let mut k = Kernel::new(sig.name.clone());
        k.func = Some(FuncInfo { ret: sig.ret.map(Type::Scalar), ret_span: Span::DUMMY });
        g.in_ = None;
        g.fin = None;
        g.fout = None;
        g.max_calls = 2;
        g.func_ret = Some(sig.ret);
        let mut scalars = vec![];
        let mut scalar_no = 0;
        for r in &sig.params {
            let ptr = |t| Type::Ptr(AddrSpace::Global, t);
            match *r {
                Role::In => g.in_ = Some(k.add_param("in", ptr(ScalarType::U32))),
                Role::Fin => g.fin = Some(k.add_param("fin", ptr(ScalarType::F32))),
                Role::Out => g.out = k.add_param("out", ptr(ScalarType::U32)),
                Role::Fout => g.fout = Some(k.add_param("fout", ptr(ScalarType::F32))),
                Role::N => g.n = k.add_param("n", Type::U32),
                Role::Slot => g.slot = k.add_param("slot", Type::U32),
                Role::Sm => g.sm = Some(k.add_param("sm", Type::Ptr(AddrSpace::Shared, ScalarType::U32))),
                Role::Scalar(t, uniform) => {
                    scalar_no += 1;
                    let v = k.add_param(format!("a{scalar_no}"), Type::Scalar(t));
                    scalars.push((t, Val { v, uniform }));
                }
            }
        }
        g.cur = k.add_block("entry");
        g.k = k;
        g.stats = Generated::empty(&sig.name);
        for (t, v) in scalars {
            g.scope[tidx(t)].push(v);
        }
        g
    }

    /// Whether barriers and full-mask collectives may be placed here: every thread of the block
    /// reaches this point the same number of times.
    fn sync_ok(&self) -> bool {
        self.uniform_ctx && !self.exited
    }

    /// Generates a function's body: the thread's identity, a random region (calls of earlier
    /// functions included), stores of what it computed to `%out[%slot]`, and `ret` with a value of
    /// the result type. `rng` is the module's stream (it sizes the body).
    fn run_func(mut self, sig: &FuncSig, rng: &mut Rng) -> Generated {
        use ScalarType::U32;
        self.scope[tidx(U32)].push(Val { v: self.n, uniform: true });
        self.scope[tidx(U32)].push(Val { v: self.slot, uniform: false });
        self.gid = self.emit(Op::Special(SpecialReg::GlobalId(Dim::X)), vec![], Some(U32), false).v;
        self.tid = self.emit(Op::Special(SpecialReg::Tid(Dim::X)), vec![], Some(U32), false).v;
        self.ntid = self.emit(Op::Special(SpecialReg::Ntid(Dim::X)), vec![], Some(U32), true).v;
        if self.rng.chance(40) {
            self.emit(Op::Special(SpecialReg::LaneId), vec![], Some(U32), false);
        }
        if self.rng.chance(30) {
            self.emit(Op::Special(SpecialReg::Ctaid(Dim::X)), vec![], Some(U32), true);
        }
        let target = (self.cfg.func_insts / 2).max(4) + rng.below(self.cfg.func_insts.max(1) as u64) as usize;
        let end = self.count + target;
        self.region(end, 1);
        let zero: Mark = [0; NTYPES];
        self.sink_since(&zero, 3);
        if self.fout.is_some() && self.rng.chance(50) {
            self.sink_f32();
        }
        let v = sig.ret.map(|t| self.operand(t).0);
        self.k.block_mut(self.cur).term = Terminator::Ret(v);
        let mut stats = self.stats;
        stats.kernel = self.k;
        stats
    }

    fn run(mut self) -> Generated {
        self.scope[tidx(ScalarType::U32)].push(Val { v: self.n, uniform: true });
        self.gid = self.emit(Op::Special(SpecialReg::GlobalId(Dim::X)), vec![], Some(ScalarType::U32), false).v;
        self.tid = self.emit(Op::Special(SpecialReg::Tid(Dim::X)), vec![], Some(ScalarType::U32), false).v;
        self.ntid = self.emit(Op::Special(SpecialReg::Ntid(Dim::X)), vec![], Some(ScalarType::U32), true).v;
        self.emit(Op::Special(SpecialReg::Ctaid(Dim::X)), vec![], Some(ScalarType::U32), true);
        self.emit(Op::Special(SpecialReg::LaneId), vec![], Some(ScalarType::U32), false);
        let slot = self.emit(
            Op::Bin(BinOp::Rem, ScalarType::U32, FloatFlags::RN),
            vec![self.gid.into(), self.n.into()],
            Some(ScalarType::U32),
            false,
        );
        self.slot = slot.v;
        let (in_, fin) = (self.in_.unwrap_or(self.out), self.fin.unwrap_or(self.out));
        self.emit(Op::Load, vec![in_.into(), self.slot.into()], Some(ScalarType::U32), false);
        self.emit(Op::Load, vec![fin.into(), self.slot.into()], Some(ScalarType::F32), false);
        if self.cfg.allow_shared_barriers {
            self.k.shared.push(SharedDecl {
                name: "sm".into(),
                elem: ScalarType::U32,
                len: Some(SHARED_LEN),
                align: 4,
                span: Span::DUMMY,
            });
            let r = self.fresh("sm");
            let i = self.k.append_inst(
                self.cur,
                Op::SharedAddr(0),
                vec![],
                Some((r.into(), Type::Ptr(AddrSpace::Shared, ScalarType::U32))),
                Span::DUMMY,
            );
            self.count += 1;
            self.sm = self.k.inst(i).result;
        }
        let end = self.cfg.insts.saturating_sub(12).max(self.count + 1);
        self.region(end, 0);
        self.sink_all();
        self.k.block_mut(self.cur).term = Terminator::Ret(None);
        let mut stats = self.stats;
        stats.kernel = self.k;
        stats
    }

    fn fresh(&mut self, base: &str) -> String {
        self.names += 1;
        format!("{base}{}", self.names)
    }

    fn new_block(&mut self, base: &str) -> BlockId {
        self.blocks += 1;
        let name = format!("{base}{}", self.blocks);
        self.k.add_block(name)
    }

    fn mark(&self) -> Mark {
        std::array::from_fn(|i| self.scope[i].len())
    }

    fn restore(&mut self, m: &Mark) {
        for (s, &len) in self.scope.iter_mut().zip(m) {
            s.truncate(len);
        }
    }

    /// Appends an instruction; a result goes into scope.
    fn emit(&mut self, op: Op, args: Vec<Operand>, ty: Option<ScalarType>, uniform: bool) -> Val {
        let result = ty.map(|t| (self.fresh("v").into(), Type::Scalar(t)));
        let i = self.k.append_inst(self.cur, op, args, result, Span::DUMMY);
        self.count += 1;
        match (self.k.inst(i).result, ty) {
            (Some(v), Some(t)) => {
                let val = Val { v, uniform };
                self.scope[tidx(t)].push(val);
                val
            }
            _ => Val { v: self.n, uniform: true },
        }
    }

    /// A value of type `ty` from scope (recent ones more often), or a constant.
    fn operand(&mut self, ty: ScalarType) -> (Operand, bool) {
        let pool = &self.scope[tidx(ty)];
        if pool.is_empty() || self.rng.chance(self.cfg.const_percent) {
            return (Operand::Const(random_constant(&mut self.rng, ty)), true);
        }
        // Mostly recent values (short live ranges, as in real kernels), sometimes any value in scope.
        let len = pool.len() as u64;
        let i = match self.rng.below(10) {
            0..=5 => len - 1 - self.rng.below(len.min(8)),
            6..=8 => len - 1 - self.rng.below(len.min(256)),
            _ => self.rng.below(len),
        };
        let v = pool[i as usize];
        (Operand::Value(v.v), v.uniform)
    }

    /// A value (never a constant) of type `ty`, if one is in scope.
    fn value_of(&mut self, ty: ScalarType, want_uniform: bool) -> Option<Val> {
        let pool = &self.scope[tidx(ty)];
        if pool.is_empty() {
            return None;
        }
        for _ in 0..8 {
            let v = pool[self.rng.below(pool.len() as u64) as usize];
            if !want_uniform || v.uniform {
                return Some(v);
            }
        }
        None
    }

    fn pick_type(&mut self) -> ScalarType {
        pick_type(&mut self.rng, self.cfg)
    }

    fn region(&mut self, end: usize, depth: u32) {
        let mut guard = 0;
        while self.count < end && guard < 4 * end + 16 {
            guard += 1;
            let before = self.count;
            // Calls draw from the stream only where there is something to call, so that a kernel
            // without functions is the one `random_kernel` makes.
            if self.stats.calls < self.max_calls && !self.callable.is_empty() && self.rng.chance(self.cfg.call_percent)
            {
                self.call();
                if self.count > before {
                    continue;
                }
            }
            let r = self.rng.below(100);
            let nested = depth < self.cfg.max_depth && end - self.count > 4;
            match r {
                0..=5 if self.cfg.allow_vectors => self.vector_moves(),
                0..=59 => self.arith(),
                60..=65 => self.load(),
                66..=70 => self.store(),
                71..=79 if nested => self.if_else(end, depth),
                80..=86 if nested && self.cfg.allow_loops && self.loop_depth < self.cfg.max_loop_depth => {
                    self.counted_loop(end, depth)
                }
                87..=90 if self.cfg.allow_shared_barriers && self.sync_ok() => self.shared_exchange(),
                91..=94 if self.cfg.allow_shuffles && self.sync_ok() => self.collective(),
                95..=97 if self.cfg.allow_divergent_barriers && !self.sync_ok() => {
                    self.emit(Op::Barrier, vec![], None, true);
                    self.stats.barriers += 1;
                    self.stats.divergent_barriers += 1;
                }
                _ => self.arith(),
            }
            if self.count == before {
                self.arith();
            }
        }
    }

    /// `%v = vec.vN.T ...`, up to two `insert`s into it, then `extract` of one lane: the scalar
    /// goes into scope (uniform when every element that went in was).
    fn vector_moves(&mut self) {
        let t = self.pick_type();
        let w = if self.rng.chance(50) { VecWidth::V2 } else { VecWidth::V4 };
        let Ok(vt) = Type::vec(w.len() as u64, t) else {
            return self.arith();
        };
        let mut uniform = true;
        let mut elems = Vec::with_capacity(w.len());
        for _ in 0..w.len() {
            let (o, u) = self.operand(t);
            uniform &= u;
            elems.push(o);
        }
        let mut v = self.emit_vector(Op::VecBuild(w, t), elems, vt);
        for _ in 0..self.rng.below(3) {
            let lane = Constant::u32(self.rng.below(w.len() as u64) as u32);
            let (x, u) = self.operand(t);
            uniform &= u;
            v = self.emit_vector(Op::VecInsert(w, t), vec![v.into(), lane.into(), x], vt);
        }
        let lane = Constant::u32(self.rng.below(w.len() as u64) as u32);
        self.emit(Op::VecExtract(w, t), vec![v.into(), lane.into()], Some(t), uniform);
    }

    /// Appends an instruction with a vector result (never in scope: only `vector_moves` uses it).
    fn emit_vector(&mut self, op: Op, args: Vec<Operand>, ty: Type) -> ValueId {
        let name = self.fresh("vv");
        let i = self.k.append_inst(self.cur, op, args, Some((name.into(), ty)), Span::DUMMY);
        self.count += 1;
        self.k.inst(i).result.expect("a vector result")
    }

    fn arith(&mut self) {
        let ty = self.pick_type();
        if ty.is_pred() {
            self.pred_op();
        } else if ty.is_int() {
            self.int_op(ty);
        } else {
            self.float_op(ty);
        }
    }

    fn binary(&mut self, op: Op, a_ty: ScalarType, b_ty: ScalarType, res: ScalarType) -> Val {
        let (mut a, ua) = self.operand(a_ty);
        let (mut b, ub) = self.operand(b_ty);
        // Sometimes an identity-prone constant (0, 1, all ones) on one side and a value on the
        // other, or the same value twice: what algebraic simplification looks for.
        if a_ty == b_ty && !a_ty.is_float() && self.rng.chance(15) {
            let special = Constant::from_bits(a_ty, self.rng.pick(&[0, 1, u64::MAX]));
            match self.rng.below(3) {
                0 => a = special.into(),
                1 => b = special.into(),
                _ => b = a,
            }
        }
        self.emit(op, vec![a, b], Some(res), ua && ub)
    }

    fn pred_op(&mut self) {
        use ScalarType::*;
        match self.rng.below(6) {
            0 => {
                let (a, u) = self.operand(Pred);
                self.emit(Op::Unary(UnOp::Not, Pred, FloatFlags::RN), vec![a], Some(Pred), u);
            }
            1 => {
                let op = self.rng.pick(&[BinOp::And, BinOp::Or, BinOp::Xor]);
                self.binary(Op::Bin(op, Pred, FloatFlags::RN), Pred, Pred, Pred);
            }
            _ => {
                let t = self.pick_type();
                let t = if t.is_pred() { U32 } else { t };
                self.compare(t);
            }
        }
    }

    fn compare(&mut self, t: ScalarType) -> Val {
        let ops: Vec<CmpOp> = CmpOp::ALL.iter().copied().filter(|c| c.accepts(t)).collect();
        let c = self.rng.pick(&ops);
        self.binary(Op::Cmp(c, t), t, t, ScalarType::Pred)
    }

    fn select(&mut self, t: ScalarType) {
        let (c, uc) = self.operand(ScalarType::Pred);
        let (a, ua) = self.operand(t);
        let (b, ub) = self.operand(t);
        self.emit(Op::Select(t), vec![c, a, b], Some(t), uc && ua && ub);
    }

    /// A conversion to `to` from a random other numeric type.
    fn convert_to(&mut self, to: ScalarType) {
        let from = loop {
            let f = self.pick_type();
            if !f.is_pred() {
                break f;
            }
        };
        let rounding = cvt_rounding(&mut self.rng, to, from);
        let sat = self.rng.chance(15);
        let ftz = (to == ScalarType::F32 || from == ScalarType::F32)
            && (to.is_float() || from.is_float())
            && self.rng.chance(10);
        let (a, u) = self.operand(from);
        self.emit(Op::Cvt { to, from, rounding, sat, ftz }, vec![a], Some(to), u);
    }

    fn bitcast_to(&mut self, to: ScalarType) {
        let same: Vec<ScalarType> =
            ScalarType::ALL.iter().copied().filter(|t| !t.is_pred() && *t != to && t.bits() == to.bits()).collect();
        if same.is_empty() {
            return self.convert_to(to);
        }
        let from = self.rng.pick(&same);
        let (a, u) = self.operand(from);
        self.emit(Op::Bitcast { to, from }, vec![a], Some(to), u);
    }

    fn int_op(&mut self, t: ScalarType) {
        let rn = FloatFlags::RN;
        match self.rng.below(20) {
            0..=7 => {
                let op = self.rng.pick(&[
                    BinOp::Add,
                    BinOp::Sub,
                    BinOp::Mul,
                    BinOp::MulHi,
                    BinOp::Min,
                    BinOp::Max,
                    BinOp::And,
                    BinOp::Or,
                    BinOp::Xor,
                ]);
                self.binary(Op::Bin(op, t, rn), t, t, t);
            }
            8 => {
                let op = self.rng.pick(&[BinOp::Shl, BinOp::Shr]);
                self.binary(Op::Bin(op, t, rn), t, ScalarType::U32, t);
            }
            9 => {
                // Division with a divisor forced odd (and positive when signed): never 0 or -1.
                let (d, ud) = self.operand(t);
                let d = if t.is_signed_int() {
                    let pos = Constant::from_bits(t, t.mask() >> 1);
                    self.emit(Op::Bin(BinOp::And, t, rn), vec![d, pos.into()], Some(t), ud).v.into()
                } else {
                    d
                };
                let odd = self.emit(Op::Bin(BinOp::Or, t, rn), vec![d, Constant::from_bits(t, 1).into()], Some(t), ud);
                let (a, ua) = self.operand(t);
                let op = self.rng.pick(&[BinOp::Div, BinOp::Rem]);
                self.emit(Op::Bin(op, t, rn), vec![a, odd.v.into()], Some(t), ua && odd.uniform);
            }
            10 => {
                let (a, ua) = self.operand(t);
                let (b, ub) = self.operand(t);
                let (c, uc) = self.operand(t);
                self.emit(Op::Mad(t), vec![a, b, c], Some(t), ua && ub && uc);
            }
            11 => match t.widened() {
                Some(w) => {
                    self.binary(Op::MulWide(t), t, t, w);
                }
                None => {
                    self.binary(Op::Bin(BinOp::Mul, t, rn), t, t, t);
                }
            },
            12 => {
                let ops: &[UnOp] = if t.is_signed_int() { &[UnOp::Not, UnOp::Neg, UnOp::Abs] } else { &[UnOp::Not] };
                let op = self.rng.pick(ops);
                let (a, u) = self.operand(t);
                self.emit(Op::Unary(op, t, rn), vec![a], Some(t), u);
            }
            13 | 14 => self.select(t),
            15 | 16 => self.convert_to(t),
            17 => self.bitcast_to(t),
            _ => {
                self.compare(t);
            }
        }
    }

    /// `%m = mul %a, %b` then `%r = add %m, %c` (or `%c, %m`), both rounding to nearest with one
    /// flush-to-zero flag, and `%m` used by nothing else: the shape `fma-contract` fuses and a GPU
    /// compiler may contract, so that a pass changing its rounding changes the kernel's output
    /// (the mul's value never enters the scope, so no later op or sink gives it a second use).
    fn mul_add(&mut self, t: ScalarType) {
        let ftz = matches!(t, ScalarType::F16 | ScalarType::F32) && self.rng.chance(15);
        let f = FloatFlags { mode: FloatMode::RN, ftz };
        let (a, ua) = self.operand(t);
        let (b, ub) = self.operand(t);
        let m = self.emit(Op::Bin(BinOp::Mul, t, f), vec![a, b], Some(t), ua && ub);
        self.scope[tidx(t)].pop();
        let (c, uc) = self.operand(t);
        let args = if self.rng.chance(50) { vec![m.v.into(), c] } else { vec![c, m.v.into()] };
        self.emit(Op::Bin(BinOp::Add, t, f), args, Some(t), m.uniform && uc);
    }

    fn float_flags(&mut self, t: ScalarType, approx_ok: bool) -> FloatFlags {
        use ScalarType::*;
        let mode = if approx_ok && self.cfg.allow_approx && self.rng.chance(30) {
            FloatMode::Approx
        } else if matches!(t, F32 | F64) && self.rng.chance(30) {
            FloatMode::Exact(self.rng.pick(&[Rounding::Rz, Rounding::Rm, Rounding::Rp]))
        } else {
            FloatMode::RN
        };
        let ftz = matches!(t, F16 | F32) && self.rng.chance(15);
        FloatFlags { mode, ftz }
    }

    fn float_op(&mut self, t: ScalarType) {
        use ScalarType::*;
        let wide = matches!(t, F32 | F64);
        match self.rng.below(20) {
            0..=5 => {
                let op = self.rng.pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul]);
                let f = self.float_flags(t, false);
                self.binary(Op::Bin(op, t, f), t, t, t);
            }
            6 => self.mul_add(t),
            7 if wide => {
                let mut f = self.float_flags(t, t == F32);
                if t == F32 && self.cfg.allow_approx && self.rng.chance(20) {
                    f.mode = FloatMode::Full;
                }
                self.binary(Op::Bin(BinOp::Div, t, f), t, t, t);
            }
            8 => {
                let f = self.float_flags(t, false);
                let (a, ua) = self.operand(t);
                let (b, ub) = self.operand(t);
                let (c, uc) = self.operand(t);
                self.emit(Op::Fma(t, f), vec![a, b, c], Some(t), ua && ub && uc);
            }
            9 => {
                let op = self.rng.pick(&[BinOp::Min, BinOp::Max]);
                self.binary(Op::Bin(op, t, FloatFlags::RN), t, t, t);
            }
            10 => {
                let op = self.rng.pick(&[UnOp::Neg, UnOp::Abs]);
                let (a, u) = self.operand(t);
                self.emit(Op::Unary(op, t, FloatFlags::RN), vec![a], Some(t), u);
            }
            11 if wide => {
                let op = self.rng.pick(&[UnOp::Sqrt, UnOp::Rcp]);
                let f = self.float_flags(t, t == F32);
                let (a, u) = self.operand(t);
                self.emit(Op::Unary(op, t, f), vec![a], Some(t), u);
            }
            12 if t == F32 && self.cfg.allow_approx => {
                let op = self.rng.pick(&[UnOp::Rsqrt, UnOp::Ex2, UnOp::Lg2, UnOp::Sin, UnOp::Cos, UnOp::Tanh]);
                let f = FloatFlags { mode: FloatMode::Approx, ftz: self.rng.chance(20) };
                let (a, u) = self.operand(t);
                self.emit(Op::Unary(op, t, f), vec![a], Some(t), u);
            }
            13 | 14 => self.select(t),
            15 | 16 => self.convert_to(t),
            17 => self.bitcast_to(t),
            _ => {
                self.compare(t);
            }
        }
    }

    /// `rem.u32 x, %n`: an in-bounds index into the input buffers.
    fn in_index(&mut self) -> Val {
        let (x, u) = self.operand(ScalarType::U32);
        self.emit(
            Op::Bin(BinOp::Rem, ScalarType::U32, FloatFlags::RN),
            vec![x, self.n.into()],
            Some(ScalarType::U32),
            u,
        )
    }

    /// A load from `%in` or `%fin`. Its result is never treated as uniform, even at a uniform
    /// index: every generated kernel writes global memory, and pointer parameters may alias, so the
    /// barrier verifier (soundly) counts such loads as divergent — barriers and full-mask
    /// collectives must not be placed under control flow that depends on them.
    fn load(&mut self) {
        if self.in_.is_none() && self.fin.is_none() {
            return;
        }
        let idx = self.in_index();
        match (self.rng.chance(50), self.in_, self.fin) {
            (true, Some(p), _) | (false, Some(p), None) => {
                self.emit(Op::Load, vec![p.into(), idx.v.into()], Some(ScalarType::U32), false);
            }
            (_, _, Some(p)) => {
                self.emit(Op::Load, vec![p.into(), idx.v.into()], Some(ScalarType::F32), false);
            }
            (_, None, None) => {}
        }
    }

    /// Any value in scope, folded into a `u32` (bit pattern, mixed for 64-bit types).
    fn to_u32(&mut self, t: ScalarType, v: Operand, u: bool) -> Operand {
        use ScalarType::*;
        let rn = FloatFlags::RN;
        match t {
            U32 => v,
            Pred => self
                .emit(Op::Select(U32), vec![v, Constant::u32(0x9e37).into(), Constant::u32(7).into()], Some(U32), u)
                .v
                .into(),
            _ => {
                let int_t = if t.is_float() { ScalarType::int_of_width(t.bits(), false).unwrap_or(U32) } else { t };
                let x: Operand = if t.is_float() {
                    self.emit(Op::Bitcast { to: int_t, from: t }, vec![v], Some(int_t), u).v.into()
                } else {
                    v
                };
                let x = if int_t.bits() == 64 {
                    let h =
                        self.emit(Op::Bin(BinOp::Shr, int_t, rn), vec![x, Constant::u32(32).into()], Some(int_t), u);
                    self.emit(Op::Bin(BinOp::Xor, int_t, rn), vec![x, h.v.into()], Some(int_t), u).v.into()
                } else {
                    x
                };
                self.emit(
                    Op::Cvt { to: U32, from: int_t, rounding: None, sat: false, ftz: false },
                    vec![x],
                    Some(U32),
                    u,
                )
                .v
                .into()
            }
        }
    }

    /// Stores a value (of any type) into this thread's `%out` or `%fout` slot.
    fn store(&mut self) {
        let t = self.pick_type();
        if t == ScalarType::F32 && self.rng.chance(50) {
            if let Some(fout) = self.fout {
                let (v, _) = self.operand(ScalarType::F32);
                self.emit(Op::Store, vec![fout.into(), self.slot.into(), v], None, true);
                return;
            }
        }
        let (v, u) = self.operand(t);
        let x = self.to_u32(t, v, u);
        if self.cfg.allow_atomics && self.rng.chance(30) {
            let op = self.rng.pick(&[AtomicOp::Add, AtomicOp::Min, AtomicOp::Max, AtomicOp::Exch]);
            let keep = self.rng.chance(50);
            self.emit(
                Op::Atomic(op),
                vec![self.out.into(), self.slot.into(), x],
                keep.then_some(ScalarType::U32),
                false,
            );
        } else {
            self.emit(Op::Store, vec![self.out.into(), self.slot.into(), x], None, true);
        }
    }

    /// Stores a mix of the values defined since `m` (at most `max` of them) into `%out[%slot]`.
    fn sink_since(&mut self, m: &Mark, max: usize) {
        let mut picked: Vec<(ScalarType, Val)> = Vec::new();
        for (i, t) in ScalarType::ALL.iter().enumerate() {
            for v in self.scope[i][m[i]..].iter().rev().take(max) {
                picked.push((*t, *v));
            }
        }
        if picked.is_empty() {
            return;
        }
        // Newest first, bounded.
        picked.sort_by_key(|(_, v)| std::cmp::Reverse(v.v));
        picked.truncate(max);
        let mut acc: Operand = Constant::u32(0x811c_9dc5).into();
        for (t, v) in picked {
            let x = self.to_u32(t, v.v.into(), v.uniform);
            acc = self
                .emit(
                    Op::Mad(ScalarType::U32),
                    vec![acc, Constant::u32(16_777_619).into(), x],
                    Some(ScalarType::U32),
                    false,
                )
                .v
                .into();
        }
        if self.cfg.allow_atomics && self.rng.chance(30) {
            self.emit(Op::Atomic(AtomicOp::Add), vec![self.out.into(), self.slot.into(), acc], None, true);
        } else {
            self.emit(Op::Store, vec![self.out.into(), self.slot.into(), acc], None, true);
        }
    }

    /// At the end of the kernel: store the most recent values of every type, and the newest f32.
    fn sink_all(&mut self) {
        let zero: Mark = [0; NTYPES];
        self.sink_since(&zero, 10);
        self.sink_f32();
    }

    /// Stores the newest f32 value into this thread's `%fout` slot.
    fn sink_f32(&mut self) {
        if let (Some(f), Some(fout)) = (self.scope[tidx(ScalarType::F32)].last().copied(), self.fout) {
            self.emit(Op::Store, vec![fout.into(), self.slot.into(), f.v.into()], None, true);
        }
    }

    /// A call of a function defined earlier whose pointers this body has, with this body's
    /// pointers, `%n` and slot, and scalars from scope (block-uniform ones where the function
    /// relies on it). A function with barriers or collectives only where they are allowed, except
    /// that with `allow_divergent_barriers` it may be called anywhere (and, in thread-dependent
    /// control flow, is then preferred).
    fn call(&mut self) {
        let sync_ok = self.sync_ok();
        let divergent_ok = self.cfg.allow_divergent_barriers;
        let have = |r: &Role| match r {
            Role::In => self.in_.is_some(),
            Role::Fin => self.fin.is_some(),
            Role::Fout => self.fout.is_some(),
            Role::Sm => self.sm.is_some(),
            _ => true,
        };
        let cands: Vec<usize> = (0..self.callable.len())
            .filter(|&i| {
                let f = &self.callable[i];
                f.params.iter().all(have) && (sync_ok || divergent_ok || !f.sync)
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let syncs: Vec<usize> = cands.iter().copied().filter(|&i| self.callable[i].sync).collect();
        let fi = if !sync_ok && !syncs.is_empty() && self.rng.chance(60) {
            self.rng.pick(&syncs)
        } else {
            self.rng.pick(&cands)
        };
        let f = self.callable[fi].clone();
        let mut args = Vec::with_capacity(f.params.len());
        for r in &f.params {
            let a: Operand = match *r {
                Role::In => self.in_.unwrap_or(self.out).into(),
                Role::Fin => self.fin.unwrap_or(self.out).into(),
                Role::Out => self.out.into(),
                Role::Fout => self.fout.unwrap_or(self.out).into(),
                Role::N => self.n.into(),
                Role::Slot => self.slot.into(),
                Role::Sm => self.sm.unwrap_or(self.out).into(),
                Role::Scalar(t, true) => match self.value_of(t, true) {
                    Some(v) if self.rng.chance(70) => v.v.into(),
                    _ => Operand::Const(random_constant(&mut self.rng, t)),
                },
                Role::Scalar(t, false) => self.operand(t).0,
            };
            args.push(a);
        }
        let idx = self.k.callee_index(&f.name, Span::DUMMY);
        let result = f.ret.filter(|_| self.rng.chance(85));
        self.emit(Op::Call(idx), args, result, false);
        self.stats.calls += 1;
        self.stats.calls_in_loops += (self.loop_depth > 0) as usize;
        self.stats.calls_in_divergent_flow += !sync_ok as usize;
        if f.sync {
            self.stats.sync_calls += 1;
            if !sync_ok {
                self.stats.divergent_calls += 1;
                self.stats.divergent_barriers += 1;
            }
        }
    }

    /// A branch condition: uniform unless divergence is allowed.
    fn condition(&mut self) -> (Operand, bool) {
        let want_uniform = !self.cfg.divergent_branches;
        if self.rng.chance(15) {
            return (Constant::pred(self.rng.chance(50)).into(), true);
        }
        if let Some(p) = self.value_of(ScalarType::Pred, want_uniform) {
            if self.rng.chance(50) {
                return (p.v.into(), p.uniform);
            }
        }
        // A fresh comparison: thread-dependent (on tid) or on a uniform value.
        if !want_uniform && self.rng.chance(50) {
            let x = self.rng.pick(&[self.tid, self.gid]);
            let k = Constant::u32(self.rng.below(BLOCK_THREADS as u64 + 1) as u32);
            let c =
                self.emit(Op::Cmp(CmpOp::Lt, ScalarType::U32), vec![x.into(), k.into()], Some(ScalarType::Pred), false);
            return (c.v.into(), false);
        }
        let x = self
            .value_of(ScalarType::U32, want_uniform)
            .map(|v| (Operand::from(v.v), v.uniform))
            .unwrap_or((self.n.into(), true));
        let k = Constant::u32(self.rng.below(8) as u32);
        let c = self.emit(Op::Cmp(CmpOp::Gt, ScalarType::U32), vec![x.0, k.into()], Some(ScalarType::Pred), x.1);
        (c.v.into(), x.1)
    }

    /// 0 to 2 random types for block parameters.
    fn param_types(&mut self) -> Vec<ScalarType> {
        (0..self.rng.below(3)).map(|_| self.pick_type()).collect()
    }

    fn args_for(&mut self, tys: &[ScalarType]) -> (Vec<Operand>, bool) {
        let mut uniform = true;
        let args = tys
            .iter()
            .map(|t| {
                let (o, u) = self.operand(*t);
                uniform &= u;
                o
            })
            .collect();
        (args, uniform)
    }

    fn add_params(&mut self, b: BlockId, tys: &[ScalarType], uniform: bool) {
        for &t in tys {
            let name = self.fresh("p");
            let v = self.k.add_block_param(b, name, Type::Scalar(t));
            self.scope[tidx(t)].push(Val { v, uniform });
        }
    }

    fn sub_budget(&mut self, end: usize) -> usize {
        let remaining = end.saturating_sub(self.count).max(1);
        self.count + 1 + self.rng.below(remaining.min(20) as u64) as usize
    }

    /// `if`/`else` diamond (or a triangle without `else`), with block parameters at the join and
    /// sometimes on the `then` block.
    /// One arm of an if/else from the current block: a nested region, then a jump to `join` with
    /// arguments for `join_tys`; the scope goes back to `m`. Returns whether the arguments are
    /// uniform.
    fn arm(&mut self, end: usize, depth: u32, join: BlockId, join_tys: &[ScalarType], m: &Mark) -> bool {
        self.arm_or_return(end, depth, join, join_tys, m, false).0
    }

    /// [`Gen::arm`]; in a function, when `may_return`, the arm sometimes ends with `ret` (an early
    /// return) instead: the second result says so.
    fn arm_or_return(
        &mut self,
        end: usize,
        depth: u32,
        join: BlockId,
        join_tys: &[ScalarType],
        m: &Mark,
        may_return: bool,
    ) -> (bool, bool) {
        let sub = self.sub_budget(end);
        self.region(sub, depth + 1);
        if self.rng.chance(60) {
            self.sink_since(m, 2);
        }
        // Not from a thread-dependent arm inside a loop: the threads that stay would run the
        // loop's next trips (and whatever barrier or collective the body already holds) without
        // the others.
        let may_return = may_return && (self.loop_depth == 0 || self.sync_ok());
        if let Some(ret) = self.func_ret.filter(|_| may_return) {
            if self.rng.chance(20) {
                let v = ret.map(|t| self.operand(t).0);
                self.k.block_mut(self.cur).term = Terminator::Ret(v);
                self.stats.early_returns += 1;
                self.restore(m);
                return (true, true);
            }
        }
        let (a, u) = self.args_for(join_tys);
        self.k.block_mut(self.cur).term = Terminator::Jmp(BlockCall { block: join, args: a });
        self.restore(m);
        (u, false)
    }

    fn if_else(&mut self, end: usize, depth: u32) {
        self.stats.branches += 1;
        let (cond, cu) = self.condition();
        let saved_ctx = self.uniform_ctx;
        let arm_ctx = saved_ctx && cu;
        let join_tys = self.param_types();
        let then_tys = if self.rng.chance(30) { self.param_types() } else { vec![] };
        let triangle = self.rng.chance(30);
        let then_b = self.new_block("then");
        let else_b = if triangle { None } else { Some(self.new_block("else")) };
        let join = self.new_block("join");
        let (then_args, then_args_u) = self.args_for(&then_tys);
        let else_call = match else_b {
            Some(e) => (BlockCall { block: e, args: vec![] }, true),
            None => {
                let (a, u) = self.args_for(&join_tys);
                (BlockCall { block: join, args: a }, u)
            }
        };
        let mut join_uniform = cu && else_call.1;
        self.k.block_mut(self.cur).term =
            Terminator::Br { cond, then_: BlockCall { block: then_b, args: then_args }, else_: else_call.0 };
        let m = self.mark();
        // then
        self.cur = then_b;
        self.uniform_ctx = arm_ctx;
        self.add_params(then_b, &then_tys, cu && then_args_u);
        let (u, returned) = self.arm_or_return(end, depth, join, &join_tys, &m, true);
        join_uniform &= u;
        // Threads that returned under a thread-dependent branch are missing from the rest of the
        // function.
        self.exited |= returned && !arm_ctx;
        // else
        if let Some(e) = else_b {
            self.cur = e;
            join_uniform &= self.arm(end, depth, join, &join_tys, &m);
        }
        self.uniform_ctx = saved_ctx;
        self.cur = join;
        self.add_params(join, &join_tys, join_uniform);
    }

    /// A counted loop: `head(%i, %acc...)` with trip count at most 4.
    fn counted_loop(&mut self, end: usize, depth: u32) {
        use ScalarType::U32;
        self.stats.loops += 1;
        let rn = FloatFlags::RN;
        let divergent = self.cfg.divergent_loops && self.rng.chance(40);
        let (trip, trip_u): (Operand, bool) = if divergent {
            let x = self.rng.pick(&[self.tid, self.gid]);
            (
                self.emit(Op::Bin(BinOp::And, U32, rn), vec![x.into(), Constant::u32(3).into()], Some(U32), false)
                    .v
                    .into(),
                false,
            )
        } else if self.rng.chance(50) {
            (Constant::u32(self.rng.below(5) as u32).into(), true)
        } else {
            let x = self.value_of(U32, true).map(|v| v.v).unwrap_or(self.n);
            (
                self.emit(Op::Bin(BinOp::Rem, U32, rn), vec![x.into(), Constant::u32(5).into()], Some(U32), true)
                    .v
                    .into(),
                true,
            )
        };
        let acc_tys = self.param_types();
        let (inits, _) = self.args_for(&acc_tys);
        let head = self.new_block("head");
        let body = self.new_block("body");
        let exit = self.new_block("exit");
        let mut init_args = vec![Operand::Const(Constant::u32(0))];
        init_args.extend(inits);
        self.k.block_mut(self.cur).term = Terminator::Jmp(BlockCall { block: head, args: init_args });
        // head(%i: u32, %acc...)
        self.cur = head;
        let saved_ctx = self.uniform_ctx;
        let body_ctx = saved_ctx && trip_u;
        let i_name = self.fresh("i");
        let i = self.k.add_block_param(head, i_name, Type::U32);
        self.scope[tidx(U32)].push(Val { v: i, uniform: trip_u });
        self.add_params(head, &acc_tys, false);
        let c = self.emit(Op::Cmp(CmpOp::Lt, U32), vec![i.into(), trip], Some(ScalarType::Pred), trip_u);
        self.k.block_mut(head).term = Terminator::Br {
            cond: c.v.into(),
            then_: BlockCall { block: body, args: vec![] },
            else_: BlockCall { block: exit, args: vec![] },
        };
        let m = self.mark();
        // body
        self.cur = body;
        self.uniform_ctx = body_ctx;
        self.loop_depth += 1;
        let sub = self.sub_budget(end);
        self.region(sub, depth + 1);
        if self.rng.chance(50) {
            self.sink_since(&m, 2);
        }
        let next = self.emit(Op::Bin(BinOp::Add, U32, rn), vec![i.into(), Constant::u32(1).into()], Some(U32), trip_u);
        let (nexts, _) = self.args_for(&acc_tys);
        let mut back = vec![Operand::Value(next.v)];
        back.extend(nexts);
        self.k.block_mut(self.cur).term = Terminator::Jmp(BlockCall { block: head, args: back });
        self.loop_depth -= 1;
        self.restore(&m);
        self.uniform_ctx = saved_ctx;
        // exit: the head's values stay in scope (the head dominates the exit).
        self.cur = exit;
    }

    /// `store @sm[tid]; barrier; load @sm[(tid + k) rem ntid]; barrier` (block-uniform context).
    fn shared_exchange(&mut self) {
        use ScalarType::U32;
        let Some(sm) = self.sm else {
            if self.func_ret.is_some() {
                // A function without the shared array: a plain barrier.
                self.emit(Op::Barrier, vec![], None, true);
                self.stats.barriers += 1;
            }
            return;
        };
        let rn = FloatFlags::RN;
        let (v, _) = self.operand(U32);
        self.emit(Op::Store, vec![sm.into(), self.tid.into(), v], None, true);
        self.emit(Op::Barrier, vec![], None, true);
        let k = Constant::u32(1 + self.rng.below(BLOCK_THREADS as u64 - 1) as u32);
        let j = self.emit(Op::Bin(BinOp::Add, U32, rn), vec![self.tid.into(), k.into()], Some(U32), false);
        let j = self.emit(Op::Bin(BinOp::Rem, U32, rn), vec![j.v.into(), self.ntid.into()], Some(U32), false);
        self.emit(Op::Load, vec![sm.into(), j.v.into()], Some(U32), false);
        self.emit(Op::Barrier, vec![], None, true);
        self.stats.barriers += 2;
    }

    /// A full-mask shuffle or vote (block-uniform context).
    fn collective(&mut self) {
        use ScalarType::*;
        self.stats.collectives += 1;
        let full: Operand = Constant::u32(u32::MAX).into();
        if self.rng.chance(30) {
            let mode = self.rng.pick(&[VoteMode::All, VoteMode::Any, VoteMode::Ballot]);
            let (p, _) = self.operand(Pred);
            let ty = if mode == VoteMode::Ballot { U32 } else { Pred };
            self.emit(Op::Vote(mode), vec![p, full], Some(ty), false);
            return;
        }
        let t = self.rng.pick(&[U32, S32, F32]);
        let mode = self.rng.pick(&[ShflMode::Down, ShflMode::Up, ShflMode::Bfly, ShflMode::Idx]);
        let (v, _) = self.operand(t);
        let lane: Operand = if self.rng.chance(60) {
            Constant::u32(self.rng.below(32) as u32).into()
        } else {
            let (x, u) = self.operand(U32);
            self.emit(Op::Bin(BinOp::And, U32, FloatFlags::RN), vec![x, Constant::u32(31).into()], Some(U32), u)
                .v
                .into()
        };
        self.emit(Op::Shfl(mode, t), vec![v, lane, full], Some(t), false);
    }
}

/// A rounding for `cvt.to.from` that the verifier accepts (and PTX needs).
fn cvt_rounding(rng: &mut Rng, to: ScalarType, from: ScalarType) -> Option<Rounding> {
    use Rounding::*;
    let integral = [Rni, Rzi, Rmi, Rpi];
    let plain = [Rn, Rz, Rm, Rp];
    if rng.chance(25) {
        return None;
    }
    match (from.is_float(), to.is_float()) {
        (false, false) => None,
        (true, false) => Some(rng.pick(&integral)),
        (false, true) => Some(rng.pick(&plain)),
        (true, true) if to == from => Some(rng.pick(&integral)),
        (true, true) if to.bits() > from.bits() => None,
        (true, true) => Some(rng.pick(&plain)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::has_errors;
    use crate::verify::verify_kernel;

    fn configs() -> Vec<GenConfig> {
        let d = GenConfig::default();
        vec![
            d.clone(),
            GenConfig { allow_approx: true, insts: 150, ..d.clone() },
            GenConfig {
                allow_loops: false,
                allow_shuffles: false,
                allow_shared_barriers: false,
                allow_atomics: false,
                ..d.clone()
            },
            GenConfig { divergent_branches: false, divergent_loops: false, const_percent: 60, ..d.clone() },
            GenConfig { allow_divergent_barriers: true, insts: 200, ..d.clone() },
            GenConfig { types: vec![ScalarType::F16, ScalarType::BF16, ScalarType::S8], insts: 40, ..d.clone() },
            GenConfig { allow_vectors: true, insts: 120, ..d },
        ]
    }

    #[test]
    fn vectors_only_when_allowed() {
        let count = |cfg: &GenConfig| {
            (0..40u64)
                .map(|seed| {
                    let k = random_kernel(seed, cfg);
                    k.placed_insts().filter(|(_, i)| k.inst(*i).op.is_vector_move()).count()
                })
                .sum::<usize>()
        };
        assert_eq!(count(&GenConfig::default()), 0);
        assert!(count(&GenConfig { allow_vectors: true, ..GenConfig::default() }) > 40);
    }

    #[test]
    fn generated_kernels_verify_and_round_trip() {
        for (ci, cfg) in configs().iter().enumerate() {
            for seed in 0..150u64 {
                let k = random_kernel(seed, cfg);
                let diags = verify_kernel(&k);
                let text = crate::print_kernel(&k);
                assert!(!has_errors(&diags), "config {ci} seed {seed}: {diags:?}\n{text}");
                let m = crate::parse(&text).unwrap_or_else(|e| panic!("config {ci} seed {seed}: {e:?}\n{text}"));
                let mut k2 = k.clone();
                k2.compact();
                assert_eq!(crate::print_kernel(&m.kernels[0]), crate::print_kernel(&k2), "config {ci} seed {seed}");
            }
        }
    }

    #[test]
    fn deterministic_per_seed_and_different_across_seeds() {
        let cfg = GenConfig::default();
        assert_eq!(random_kernel(7, &cfg), random_kernel(7, &cfg));
        assert_ne!(crate::print_kernel(&random_kernel(7, &cfg)), crate::print_kernel(&random_kernel(8, &cfg)));
    }

    #[test]
    fn instruction_count_tracks_the_target() {
        for target in [100usize, 1000, 10_000] {
            let k = random_kernel(3, &GenConfig { insts: target, ..GenConfig::default() });
            let n = k.inst_count();
            assert!(n >= target * 9 / 10 && n <= target + target / 5 + 60, "target {target}: {n} instructions");
        }
    }

    #[test]
    fn approx_ops_only_when_allowed() {
        let count = |cfg: &GenConfig| {
            (0..100u64)
                .map(|s| {
                    let k = random_kernel(s, cfg);
                    k.placed_insts().filter(|(_, i)| k.inst(*i).op.is_approx()).count()
                })
                .sum::<usize>()
        };
        assert_eq!(count(&GenConfig::default()), 0);
        assert!(count(&GenConfig { allow_approx: true, insts: 200, ..GenConfig::default() }) > 0);
    }

    fn module_configs() -> Vec<GenConfig> {
        let d = GenConfig::with_funcs();
        vec![
            d.clone(),
            GenConfig { allow_divergent_barriers: true, insts: 120, ..d.clone() },
            GenConfig { max_funcs: 5, func_insts: 40, call_percent: 20, ..d.clone() },
            GenConfig { allow_shared_barriers: false, allow_shuffles: false, allow_loops: false, ..d.clone() },
            GenConfig { types: vec![ScalarType::F16, ScalarType::S64], insts: 40, ..d },
        ]
    }

    #[test]
    fn generated_modules_verify_round_trip_and_inline() {
        for (ci, cfg) in module_configs().iter().enumerate() {
            for seed in 0..60u64 {
                let m = random_module(seed, cfg);
                let text = crate::print_module(&m);
                let diags = crate::verify::verify_module(&m);
                assert!(!has_errors(&diags), "config {ci} seed {seed}: {diags:?}\n{text}");
                let back = crate::parse(&text).unwrap_or_else(|e| panic!("config {ci} seed {seed}: {e:?}\n{text}"));
                let mut compacted = m.clone();
                compacted.bodies_mut().for_each(Kernel::compact);
                assert!(back.structurally_eq(&compacted), "config {ci} seed {seed}:\n{text}");
                let mut inlined = m.clone();
                crate::inline::inline_module(&mut inlined).unwrap_or_else(|e| panic!("config {ci} seed {seed}: {e:?}"));
                let diags = crate::verify::verify_module(&inlined);
                assert!(!has_errors(&diags), "config {ci} seed {seed}: {diags:?}\n{}", crate::print_module(&inlined));
                assert!(!inlined.has_calls());
            }
        }
    }

    #[test]
    fn modules_have_functions_of_every_kind_and_calls_everywhere() {
        let cfg = GenConfig::with_funcs();
        let (mut with_ret, mut without_ret, mut sync_funcs, mut calls_in_funcs) = (0, 0, 0, 0);
        let (mut kernel_only, mut early, mut sync_calls, mut ptr_loads) = (0, 0, 0, 0);
        let (mut in_loops, mut in_divergent_flow) = (0, 0);
        for seed in 0..100u64 {
            let g = generate_module(seed, &cfg);
            let m = &g.module;
            if m.funcs.is_empty() {
                kernel_only += 1;
                assert_eq!(m.kernels[0], random_kernel(seed, &cfg), "seed {seed}");
            }
            for f in &m.funcs {
                if f.ret_type().is_some() {
                    with_ret += 1;
                } else {
                    without_ret += 1;
                }
                let ops: Vec<&Op> = f.placed_insts().map(|(_, i)| &f.inst(i).op).collect();
                if ops.iter().any(|o| matches!(o, Op::Barrier | Op::Shfl(..) | Op::Vote(_))) {
                    sync_funcs += 1;
                }
                calls_in_funcs += ops.iter().filter(|o| matches!(o, Op::Call(_))).count();
                ptr_loads += ops.iter().filter(|o| matches!(o, Op::Load)).count();
            }
            early += g.early_returns;
            sync_calls += g.sync_calls;
            in_loops += g.calls_in_loops;
            in_divergent_flow += g.calls_in_divergent_flow;
            assert_eq!(g.divergent_calls, 0, "seed {seed}");
        }
        assert!(kernel_only > 5 && kernel_only < 50, "{kernel_only} modules without functions");
        for (what, n) in [
            ("functions with a result", with_ret),
            ("functions without one", without_ret),
            ("functions with barriers or collectives", sync_funcs),
            ("calls in functions", calls_in_funcs),
            ("early returns", early),
            ("calls of functions with barriers", sync_calls),
            ("loads in functions", ptr_loads),
            ("calls in loops", in_loops),
            ("calls in thread-dependent control flow", in_divergent_flow),
        ] {
            assert!(n >= 10, "{what}: {n}");
        }
    }

    #[test]
    fn random_kernel_ignores_the_function_settings() {
        for seed in 0..20u64 {
            assert_eq!(random_kernel(seed, &GenConfig::default()), random_kernel(seed, &GenConfig::with_funcs()));
        }
    }

    #[test]
    fn divergent_calls_only_when_asked() {
        let neg = GenConfig { allow_divergent_barriers: true, insts: 120, ..GenConfig::with_funcs() };
        let n: usize = (0..100u64).map(|s| generate_module(s, &neg).divergent_calls).sum();
        assert!(n >= 10, "{n} divergent calls");
    }

    #[test]
    fn divergent_barriers_only_when_asked() {
        let d = GenConfig::default();
        assert!((0..100u64).all(|s| generate(s, &d).divergent_barriers == 0));
        let neg = GenConfig { allow_divergent_barriers: true, insts: 200, ..d };
        assert!((0..100u64).any(|s| generate(s, &neg).divergent_barriers > 0));
    }
}
