//! Executes one thread block: warps of 32 lanes in lockstep, a SIMT reconvergence stack per warp,
//! barriers, shared memory and the runtime checks.
//!
//! Guarantees:
//! - Each instruction runs once per warp for all active lanes; pure ops go through
//!   `kir_ir::eval::eval_lanes`, which writes only the active lanes, so values of inactive lanes are
//!   kept (SSA values defined in a loop stay valid for lanes that left it).
//! - Divergent branches push both sides on the warp's stack with the branch block's immediate
//!   post-dominator as reconvergence point; the `then` side runs first. A side reaching the point is
//!   popped; the lanes continue together. Lanes that `ret` are removed from every stack entry.
//! - Warps of a block run in index order, each until it finishes or reaches a barrier. When no warp
//!   can continue, either every thread of the block waits at the same barrier instruction with no
//!   thread exited (the barrier completes and all warps resume) or the block has a barrier
//!   divergence error that names the barrier, how many threads arrived and where the others are.
//!   When every warp has finished, the block is done. The order is fixed, so results do not depend
//!   on the host.
//! - A load or store whose active lanes all use one pointer is bounds-checked once for the warp
//!   (`mem::locate_warp`: the extreme indices); any other, and any that would fault, is checked
//!   lane by lane in lane order, so which lane faults and the message are those of the per-lane
//!   rules. Race bookkeeping and stores still happen lane by lane in lane order.
//! - An uninitialized shared read is judged at the end of its barrier interval: when another
//!   thread of the block writes the slot before the next barrier (from any warp: every warp runs
//!   until the barrier before the interval ends), that write is a data race (a missing barrier)
//!   naming the reader and the writer, their threads and instructions — unless both are atomics,
//!   which never race; when the interval really ends (a barrier completes, the block ends) with no
//!   such write, the first uninitialized read is reported (a thread that writes what it itself read
//!   leaves its read waiting). A fault that stops the block first is reported as itself, with the
//!   first pending read labelled as a possible cause and no verdict on it. At most 4096 reads wait
//!   per interval; the verdict depends only on the fixed schedule.
//! - Vector loads and stores, `mma`, `ldmatrix` and `cp.async` run apart from the scalar
//!   instructions (`ext`, whose header states their semantics); their memory accesses go element by
//!   element through the same per-lane checks as scalar ones. In a launch with async copies every
//!   shared-memory access takes the per-lane path, which faults on bytes a `cp.async` still has in
//!   flight; a kernel `ret` of a thread with a copy in flight is a fault. Without vectors or copies
//!   the scalar paths do exactly the work they did before them.
//! - Race detection (`Options::races`) judges every load, store and atomic by `crate::race`'s
//!   rule (PTX's: plain vs plain with a write, plain vs atomic); a race report names both threads,
//!   both instructions (the other's from the shadow's site words) and the location.
//! - Every failure is a typed [`InterpError`] with the block and thread coordinates and the span of
//!   the instruction; nothing here panics on any kernel [`Prog::new`] accepted.
//!
//! Calls (device functions run as written, never inlined):
//! - A `call` by the active lanes `m` of a warp pushes a frame: the callee's registers for the
//!   warp (right after the caller's in the warp's register file, whose size, the kernel's slots
//!   plus the deepest chain of frames, is fixed per launch: no allocation per call), with its
//!   constants and its parameters (the argument rows) set, and its own reconvergence entries above
//!   the caller's, starting at its entry block with mask `m`. Divergence inside a function
//!   reconverges at immediate post-dominators of the function's CFG, whose `ret` blocks go to the
//!   virtual exit, exactly as in kernels.
//! - A lane that executes a function's `ret` writes its value into the call's result row and
//!   leaves the frame's entries only (a kernel's `ret` makes lanes exit). When no entry of the
//!   frame is left the frame pops and the caller continues after the call with `m`. Frames nest;
//!   the depth is bounded by the (non-recursive) call graph.
//! - Special registers, shared and global memory, shuffles and votes inside a function are those
//!   of the calling lanes (`shfl`/`vote` use the frame's active mask, as in kernels). Instructions
//!   of functions, `call` and `ret` included, are charged to `fuel` and `warp_fuel`.
//! - A barrier instance is its instruction together with the warp's chain of call sites: a warp
//!   suspended at a barrier inside a function resumes there, and a barrier completes only when
//!   every warp waits at the same instruction through the same calls (so one function's barrier
//!   reached from two call sites is two barriers). A barrier divergence names the barrier inside
//!   the function, and its call sites in a note and labels.
//! - An error raised while a warp is inside functions (out of bounds, race, uninitialized read,
//!   collective, fuel) points at the instruction inside the function and gets a note naming the
//!   chain (in `@g`, called from `@f` (block `b`), called from `@k` (block `entry`)) and a label
//!   at each call site.
//! - A launch without functions runs a copy of the warp loop with the frame bookkeeping compiled
//!   out: call-free kernels pay nothing per instruction for calls.

mod ext;

use crate::enclose::{self, Enc, EncShared, MemEnc, Unusable, Why};
use crate::error::{coords, FaultKind, InterpError};
use crate::mem::{self, AccessFault, GlobalMem};
use crate::prog::{ElSlots, MemAccess, Prog, XEdge, XInst, XOp, XTerm, EXIT, NO_SLOT};
use crate::race::{self, tag, Conflict, Kind};
use crate::{Options, Stats};
use kir_ir::eval;
use kir_ir::op::{AtomicOp, BinOp, FloatFlags, FloatMode, Op, Rounding, ShflMode, SpecialReg, VoteMode};
use kir_ir::types::{AddrSpace, ScalarType};
use kir_ir::Span;
use std::sync::atomic::{AtomicU64, Ordering};

type Row = [u64; 32];

/// Thread-instructions a worker may run before it reports to the launch-wide fuel counter.
const FUEL_CHUNK: u64 = 1 << 16;

/// Iterates the set bits of a lane mask.
#[inline]
fn lanes(mask: u32) -> impl Iterator<Item = usize> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

/// The span of instruction `site` (dummy when there is none).
fn site_span(cx: &LaunchCtx, site: Site) -> Span {
    cx.progs
        .get(site.0 as usize)
        .and_then(|p| p.blocks.get(site.1 as usize))
        .and_then(|b| b.insts.get(site.2 as usize))
        .map_or(Span::DUMMY, |i| i.span)
}

/// Everything a block needs that is the same for the whole launch.
pub(crate) struct LaunchCtx<'a> {
    /// The kernel (`progs[0]`), whose launch-wide facts cover the functions too.
    pub prog: &'a Prog,
    /// The kernel, then the functions it calls ([`crate::prog::Progs`]).
    pub progs: &'a [Prog],
    /// Register slots per warp: the kernel's and its deepest chain of call frames.
    pub stride: usize,
    pub global: &'a GlobalMem,
    /// Enclosure tracking ([`crate::launch_enclosed`]): what the blocks share.
    pub enc: Option<&'a EncShared>,
    pub opts: &'a Options,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub nthreads: u32,
    pub nwarps: usize,
    pub params: Vec<u64>,
    /// Shared declarations: byte start in the block's shared memory, and length.
    pub shared_start: Vec<usize>,
    /// Alignment of each shared declaration (its start is a multiple of it).
    pub shared_align: Vec<u64>,
    pub shared_lens: Vec<u64>,
    pub shared_total: usize,
    pub shared_names: Vec<String>,
    /// Names of the global regions (the parameters bound to each buffer).
    pub global_names: Vec<String>,
    pub fuel_used: &'a AtomicU64,
    pub fuel: u64,
    /// Instructions one warp may execute in one block ([`crate::Options::warp_fuel`]).
    pub warp_fuel: u64,
}

impl LaunchCtx<'_> {
    fn tid_of(&self, linear: u32) -> [u32; 3] {
        let [bx, by, _] = self.block;
        [linear % bx, (linear / bx) % by, linear / (bx * by)]
    }
    fn ctaid_of(&self, linear: u64) -> [u32; 3] {
        let [gx, gy, _] = self.grid;
        let (gx, gy) = (gx as u64, gy as u64);
        [(linear % gx) as u32, ((linear / gx) % gy) as u32, (linear / (gx * gy)) as u32]
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    block: u32,
    ip: u32,
    mask: u32,
    rpc: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WarpState {
    Running,
    /// Suspended at the barrier instruction `(body, block, index)` (body: index in
    /// [`LaunchCtx::progs`]); which instance of it also depends on the warp's call frames.
    AtBarrier(u32, u32, u32),
    Done,
}

/// An instruction: `(body, block, index)`, the body an index in [`LaunchCtx::progs`].
type Site = (u32, u32, u32);

/// A function call in progress for a warp.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// The callee (index in [`LaunchCtx::progs`]).
    prog: u32,
    /// Where the callee's registers start in the warp's register file.
    base: usize,
    /// The warp's stack entries from this index on are the callee's.
    floor: usize,
    /// The lanes that called.
    mask: u32,
    /// The register row (absolute) that receives the result, or `usize::MAX`; and the row of its
    /// high half (a 128-bit result), or `usize::MAX`.
    res: usize,
    res_hi: usize,
    /// The call instruction in the caller.
    call: Site,
}

/// Per-host-thread state, reused across the blocks it runs.
pub(crate) struct Worker {
    /// Register rows per warp ([`LaunchCtx::stride`]): the kernel's slots, then call frames.
    stride: usize,
    regs: Vec<Row>,
    /// `tid.{x,y,z}` of each lane of each warp.
    tids: Vec<[[u32; 32]; 3]>,
    stacks: Vec<Vec<Entry>>,
    /// Call frames of each warp, outermost first (empty while the warp runs the kernel's body).
    frames: Vec<Vec<Frame>>,
    live0: Vec<u32>,
    exited: Vec<u32>,
    exit_block: Vec<[u32; 32]>,
    state: Vec<WarpState>,
    shared: Vec<u8>,
    /// Shared-memory race shadow: [`race::WORDS`] words per granule, each declaration's granules from
    /// `sh_race_start[decl]`.
    sh_race: Vec<u64>,
    sh_race_start: Vec<usize>,
    /// Per byte of shared memory, the generation of the block that last wrote it (initialized),
    /// or that generation with [`PENDING`] set: read uninitialized, the read in `sh_pending`.
    sh_init: Vec<u32>,
    /// Uninitialized shared reads of the current barrier interval not yet judged, in the order
    /// they ran (at most [`MAX_PENDING`]): a race if another thread writes the slot before the
    /// next barrier, an uninitialized read if the interval ends without.
    sh_pending: Vec<PendingRead>,
    /// Shared loads and stores may go straight to memory, a warp at a time: no race detection,
    /// no uninitialized-read tracking, no async copies in the launch.
    sh_direct: bool,
    /// Shared loads and stores may skip the per-lane path when only race detection is on (no
    /// uninitialized-read tracking, no async copies).
    sh_race_direct: bool,
    /// Per byte of shared memory (when the launch has async copies): 0, or the linear thread
    /// index + 1 of the thread whose `cp.async` has the byte in flight.
    sh_flight: Vec<u32>,
    /// Per thread of the block, its copies in flight, in issue order.
    copies: Vec<Vec<AsyncCopy>>,
    /// Per thread of the block, its `cp.async.commit`s so far (the group its next copy joins).
    commits: Vec<u32>,
    /// Copies in flight in the block (0: a `ret` checks nothing).
    copies_in_flight: usize,
    /// With enclosure tracking: the enclosure of every register row's lanes (same rows as
    /// `regs`), and of the block's shared memory.
    enc: Vec<[Enc; 32]>,
    sh_enc: MemEnc,
    /// Where the registers of the body the running warp executes start: `w * stride` in the
    /// kernel, the innermost frame's `base` in a function. Set by `run_warp`, read by `exec`.
    cur_base: usize,
    /// Whether the launch has functions (warps may have call frames).
    calls: bool,
    /// Generation of the current block on this worker (tags shared-memory shadows).
    gen: u32,
    edge_tmp: Vec<Row>,
    pub stats: Stats,
    /// Thread-instructions not yet added to the launch counter, and how many may run before the
    /// next report.
    pending: u64,
    pending_cap: u64,
    /// The instruction, warp and lanes of the last charge: where a fuel fault found at the end of
    /// a block points (the last instruction this worker ran).
    last_charge: Option<(Span, usize, u32)>,
    /// Instructions each warp has executed in the current block (for `warp_fuel`).
    warp_steps: Vec<u64>,
    // Current block.
    linear: u64,
    ctaid: [u32; 3],
    epoch: u64,
}

/// Set in an `sh_init` byte read uninitialized in this barrier interval (above any generation).
const PENDING: u32 = 1 << 31;
/// Set with [`PENDING`] once the thread that read the byte uninitialized has written it itself:
/// the byte reads as initialized, and another thread's write still races with the read.
const OWN_WRITE: u32 = 1 << 30;
/// At most this many uninitialized reads wait for their interval's end (later ones are not
/// remembered: the first is reported anyway when nobody writes its slot).
const MAX_PENDING: usize = 4096;

/// An uninitialized shared read waiting for its barrier interval to end.
struct PendingRead {
    /// Bytes `at..at + size` of the block's shared memory.
    at: usize,
    size: u32,
    /// Linear thread index of the reader.
    tid: u32,
    /// The reading instruction.
    span: Span,
    /// The read was an atomic's (another atomic's later write does not race with it).
    atomic: bool,
    /// The uninitialized-read fault as reported if no other thread writes the slot, and the slot
    /// as messages name it (built for the first pending read only: only that one is ever
    /// reported).
    err: Option<Box<(InterpError, String)>>,
}

/// A `cp.async` in flight: its source already read, its destination not yet written.
#[derive(Clone, Debug)]
struct AsyncCopy {
    /// The commit group (the thread's commits before it was issued).
    group: u32,
    /// The destination: shared declaration `region`, byte `byte` of it, `size` bytes.
    region: usize,
    byte: usize,
    size: u32,
    /// The bytes it writes (the source's first `src_bytes`, then zeros).
    data: [u8; 16],
    /// The destination's element access (race detection writes element by element).
    dst: MemAccess,
    /// The `cp.async` instruction.
    span: Span,
    /// With enclosure tracking: the enclosures of the bytes read, by their offset in the copy
    /// (empty when all are exact).
    enc: MemEnc,
}

/// What a warp does next after running.
enum Stop {
    Barrier(u32, u32, u32),
    Done,
}

impl Worker {
    pub fn new(cx: &LaunchCtx) -> Worker {
        let stride = cx.stride;
        let mut regs = vec![[0u64; 32]; stride * cx.nwarps];
        // The kernel's constants and parameters are the same for every block of the launch and
        // never written (call frames above them set their own at each call).
        for w in 0..cx.nwarps {
            for &(slot, bits) in &cx.prog.consts {
                regs[w * stride + slot as usize] = [bits; 32];
            }
            for (i, &slot) in cx.prog.params.iter().enumerate() {
                regs[w * stride + slot as usize] = [cx.params[i]; 32];
            }
        }
        let tids = (0..cx.nwarps)
            .map(|w| {
                let mut t = [[0u32; 32]; 3];
                for l in 0..32 {
                    let c = cx.tid_of((w * 32 + l) as u32);
                    for d in 0..3 {
                        t[d][l] = c[d];
                    }
                }
                t
            })
            .collect();
        let live0 = (0..cx.nwarps)
            .map(|w| {
                let n = (cx.nthreads as usize - w * 32).min(32);
                if n == 32 {
                    u32::MAX
                } else {
                    (1u32 << n) - 1
                }
            })
            .collect();
        let races = cx.opts.races && cx.prog.uses_shared;
        // Granules are counted from each declaration's start (a declaration may start at an
        // offset that is not a multiple of the granule).
        let shift = cx.prog.race_shift[1];
        let mut sh_race_start = Vec::with_capacity(cx.shared_lens.len());
        let mut granules = 0usize;
        for &len in &cx.shared_lens {
            sh_race_start.push(granules);
            granules += (len as usize).div_ceil(1 << shift);
        }
        let uninit = cx.opts.uninit && cx.prog.uses_shared;
        let copies = cx.prog.async_copies;
        let mut worker = Worker {
            stride,
            regs,
            tids,
            stacks: vec![Vec::with_capacity(16); cx.nwarps],
            frames: vec![Vec::new(); cx.nwarps],
            live0,
            exited: vec![0; cx.nwarps],
            exit_block: vec![[EXIT; 32]; cx.nwarps],
            state: vec![WarpState::Done; cx.nwarps],
            shared: vec![0; cx.shared_total],
            sh_race: if races { vec![0; race::WORDS * granules] } else { vec![] },
            sh_race_start,
            sh_init: if uninit { vec![0; cx.shared_total] } else { vec![] },
            sh_pending: Vec::new(),
            sh_direct: false,
            sh_race_direct: false,
            sh_flight: if copies { vec![0; cx.shared_total] } else { vec![] },
            copies: if copies { vec![Vec::new(); cx.nthreads as usize] } else { vec![] },
            commits: if copies { vec![0; cx.nthreads as usize] } else { vec![] },
            copies_in_flight: 0,
            enc: if cx.enc.is_some() { vec![[Enc::Exact; 32]; stride * cx.nwarps] } else { vec![] },
            sh_enc: MemEnc::default(),
            cur_base: 0,
            calls: cx.progs.len() > 1,
            gen: 0,
            edge_tmp: vec![[0; 32]; 4],
            stats: Stats::default(),
            pending: 0,
            pending_cap: FUEL_CHUNK.min(cx.fuel),
            last_charge: None,
            warp_steps: vec![0; cx.nwarps],
            linear: 0,
            ctaid: [0; 3],
            epoch: 0,
        };
        worker.sh_direct = worker.sh_race.is_empty() && worker.sh_init.is_empty() && !copies;
        worker.sh_race_direct = worker.sh_init.is_empty() && !copies;
        worker
    }

    /// Runs block `linear` (x fastest) to completion.
    pub fn run_block(&mut self, cx: &LaunchCtx, linear: u64) -> Result<(), InterpError> {
        self.linear = linear;
        self.ctaid = cx.ctaid_of(linear);
        self.epoch = 0;
        self.gen = self.gen.wrapping_add(1);
        if self.gen >= 1 << 24 {
            // Shadow tags carry 24 bits of generation: start over with clean shadows.
            self.gen = 1;
            self.sh_race.fill(0);
            self.sh_init.fill(0);
        }
        if cx.prog.uses_shared {
            self.shared.fill(0);
        }
        self.sh_pending.clear();
        if !self.sh_flight.is_empty() {
            self.sh_flight.fill(0);
            self.copies.iter_mut().for_each(Vec::clear);
            self.commits.fill(0);
            self.copies_in_flight = 0;
        }
        if !self.enc.is_empty() {
            self.enc.fill([Enc::Exact; 32]);
            self.sh_enc.clear();
        }
        for w in 0..cx.nwarps {
            self.stacks[w].clear();
            self.frames[w].clear();
            self.stacks[w].push(Entry { block: 0, ip: 0, mask: self.live0[w], rpc: EXIT });
            self.exited[w] = 0;
            self.warp_steps[w] = 0;
            self.exit_block[w] = [EXIT; 32];
            self.state[w] = WarpState::Running;
        }
        loop {
            for w in 0..cx.nwarps {
                if self.state[w] == WarpState::Running {
                    self.state[w] = match self.run_warp(cx, w) {
                        Ok(Stop::Barrier(p, b, i)) => WarpState::AtBarrier(p, b, i),
                        Ok(Stop::Done) => WarpState::Done,
                        Err(e) => {
                            let e = self.with_call_chain(cx, w, e);
                            return Err(self.fault_while_reads_pending(cx, e));
                        }
                    };
                }
            }
            // The first waiting warp's barrier instance: the instruction and the call path.
            let Some(wb) = self.state.iter().position(|s| matches!(s, WarpState::AtBarrier(..))) else { break };
            let bar = self.state[wb];
            let ok = (0..cx.nwarps).all(|w| {
                self.state[w] == bar
                    && self.exited[w] == 0
                    && self.stacks[w].last().map(|e| e.mask) == Some(self.live0[w])
            }) && (!self.calls || (0..cx.nwarps).all(|w| self.same_path(wb, w)));
            if !ok {
                let e = self.barrier_divergence(cx, wb);
                return Err(self.fault_while_reads_pending(cx, e));
            }
            // The interval ends: an uninitialized read nobody wrote is what it looks like.
            if let Some(e) = self.take_pending() {
                return Err(e);
            }
            self.stats.barriers += 1;
            self.epoch += 1;
            for s in &mut self.state {
                *s = WarpState::Running;
            }
        }
        if let Some(e) = self.take_pending() {
            return Err(e);
        }
        self.flush_fuel(cx, None)?;
        Ok(())
    }

    /// Whether warps `a` and `b` wait at the same barrier instance: the same instruction, reached
    /// through the same call sites.
    fn same_barrier(&self, a: usize, b: usize) -> bool {
        self.state[a] == self.state[b] && (!self.calls || self.same_path(a, b))
    }

    /// Whether warps `a` and `b` are in the same chain of calls.
    fn same_path(&self, a: usize, b: usize) -> bool {
        self.frames[a].len() == self.frames[b].len()
            && self.frames[a].iter().zip(&self.frames[b]).all(|(x, y)| x.call == y.call)
    }

    /// Whether lane `l` of warp `w` waits at the barrier where the warp is suspended.
    fn waits_at_barrier(&self, w: usize, l: usize) -> bool {
        matches!(self.state[w], WarpState::AtBarrier(..))
            && self.stacks[w].last().is_some_and(|e| e.mask & (1 << l) != 0)
    }

    /// Where lane `l` of warp `w` is, for messages about diverged threads.
    fn lane_location(&self, cx: &LaunchCtx, w: usize, l: usize) -> (Span, String) {
        let bit = 1u32 << l;
        if self.live0[w] & bit == 0 {
            return (Span::DUMMY, "do not exist".into());
        }
        if self.exited[w] & bit != 0 {
            let b = self.exit_block[w][l];
            return match cx.prog.blocks.get(b as usize) {
                Some(blk) => (blk.term_span, format!("exited at the `ret` of block `{}`", blk.name)),
                None => (Span::DUMMY, "exited".into()),
            };
        }
        if let WarpState::AtBarrier(p, b, i) = self.state[w] {
            if self.waits_at_barrier(w, l) {
                return (site_span(cx, (p, b, i)), "wait at this barrier".into());
            }
        }
        // Below the top entry: the first entry holding the lane says where it resumes. Entries from
        // a frame's floor up are the frame's; a lane of a frame's call that is in none of them has
        // returned and waits for the others.
        let stack = &self.stacks[w];
        let frames = &self.frames[w];
        let returned = |f: &Frame| {
            let name = cx.progs.get(f.prog as usize).map_or("?", |p| p.name.as_str());
            (site_span(cx, f.call), format!("returned from `@{name}` and wait for the warp's other lanes to return"))
        };
        let skip = if matches!(self.state[w], WarpState::AtBarrier(..)) { 1 } else { 0 };
        let mut fi = frames.len();
        for (idx, e) in stack.iter().enumerate().rev().skip(skip) {
            while fi > 0 && idx < frames[fi - 1].floor {
                if frames[fi - 1].mask & bit != 0 {
                    return returned(&frames[fi - 1]);
                }
                fi -= 1;
            }
            if e.mask & bit != 0 {
                let prog = if fi == 0 { Some(cx.prog) } else { cx.progs.get(frames[fi - 1].prog as usize) };
                if let Some(blk) = prog.and_then(|p| p.blocks.get(e.block as usize)) {
                    let of = if fi == 0 { String::new() } else { format!(" of `@{}`", prog.map_or("?", |p| &p.name)) };
                    return (blk.span, format!("diverged and wait to run block `{}`{of}", blk.name));
                }
            }
        }
        while fi > 0 {
            if frames[fi - 1].mask & bit != 0 {
                return returned(&frames[fi - 1]);
            }
            fi -= 1;
        }
        (Span::DUMMY, "are elsewhere".into())
    }

    /// The uninitialized-read fault of the first pending read, if any (and forgets them all).
    fn take_pending(&mut self) -> Option<InterpError> {
        let first = self.sh_pending.first_mut()?.err.take();
        self.sh_pending.clear();
        first.map(|e| e.0)
    }

    /// Fault `e` stopped the block while reads of uninitialized shared memory were pending. A
    /// race is reported as it is; any other fault keeps its own report, with the first pending
    /// read labelled as a possible cause: the interval did not end, so whether another thread
    /// would have written the slot (a missing barrier) or none would (an uninitialized read) is
    /// not known, and neither is claimed.
    fn fault_while_reads_pending(&mut self, cx: &LaunchCtx, e: InterpError) -> InterpError {
        let first = self.sh_pending.first_mut().map(|p| (p.tid, p.span, p.atomic, p.err.take()));
        self.sh_pending.clear();
        let Some((tid, span, atomic, Some(err))) = first else { return e };
        if e.fault_kind() == Some(FaultKind::DataRace) {
            return e;
        }
        let who = format!("thread {}", coords(cx.tid_of(tid)));
        let what = if atomic { "updated atomically" } else { "read" };
        let e = if span.is_dummy() {
            e
        } else {
            e.with_label(span, format!("{who} {what} uninitialized shared memory here"))
        };
        e.with_note(format!(
            "earlier in this barrier interval {who} {what} {} before any thread of the block wrote it; the run stopped here, so \
             whether another thread writes it before the next barrier (a missing barrier) or none does (an uninitialized read) \
             is unknown; the value read may be the cause of this fault",
            err.1
        ))
    }

    /// `e` with the call chain of warp `w` when it is inside a function: a note naming the
    /// functions and their call sites, innermost first, and a label at every call site.
    #[cold]
    #[inline(never)]
    fn with_call_chain(&self, cx: &LaunchCtx, w: usize, mut e: InterpError) -> InterpError {
        let frames = &self.frames[w];
        let Some(last) = frames.last() else { return e };
        let name = |p: u32| cx.progs.get(p as usize).map_or("?", |p| p.name.as_str());
        let mut note = format!("in `@{}`", name(last.prog));
        for f in frames.iter().rev() {
            let (p, b, _) = f.call;
            let block = cx.progs.get(p as usize).and_then(|p| p.blocks.get(b as usize)).map_or("?", |b| &b.name);
            note.push_str(&format!(", called from `@{}` (block `{block}`)", name(p)));
            let span = site_span(cx, f.call);
            if !span.is_dummy() {
                e = e.with_label(span, format!("`@{}` called here", name(f.prog)));
            }
        }
        e.with_note(note)
    }

    fn barrier_divergence(&self, cx: &LaunchCtx, wb: usize) -> InterpError {
        let WarpState::AtBarrier(p, b, i) = self.state[wb] else {
            return InterpError::internal("barrier divergence without a waiting warp").in_block(self.ctaid);
        };
        let bar = (p, b, i);
        let span = site_span(cx, bar);
        // Group every existing thread by where it is.
        let mut groups: Vec<(Span, String, u32)> = Vec::new();
        let mut arrived = 0u32;
        let mut first_missing: Option<(u32, String)> = None;
        for w in 0..cx.nwarps {
            let same = self.same_barrier(wb, w);
            for l in lanes(self.live0[w]) {
                let waits = self.waits_at_barrier(w, l);
                if waits && same {
                    arrived += 1;
                    continue;
                }
                let (s, what) = match self.state[w] {
                    WarpState::AtBarrier(p2, b2, i2) if waits && (p2, b2, i2) == bar => {
                        // The same instruction through other calls: a different barrier. Point at
                        // the first call where the paths part.
                        let k =
                            self.frames[w].iter().zip(&self.frames[wb]).take_while(|(x, y)| x.call == y.call).count();
                        let s = self.frames[w].get(k).map_or(span, |f| site_span(cx, f.call));
                        let name = cx.progs.get(p as usize).map_or("?", |p| p.name.as_str());
                        (s, format!("wait at the same barrier of `@{name}`, reached through this call"))
                    }
                    WarpState::AtBarrier(p2, b2, i2) if waits => {
                        (site_span(cx, (p2, b2, i2)), "wait at another barrier".to_string())
                    }
                    _ => self.lane_location(cx, w, l),
                };
                if first_missing.is_none() {
                    first_missing = Some(((w * 32 + l) as u32, what.clone()));
                }
                match groups.iter_mut().find(|g| g.0 == s && g.1 == what) {
                    Some(g) => g.2 += 1,
                    None => groups.push((s, what, 1)),
                }
            }
        }
        let mut e = InterpError::fault(
            FaultKind::BarrierDivergence,
            format!("only {arrived} of the block's {} threads reached this barrier", cx.nthreads),
        )
        .at(span, format!("{arrived} threads wait here"))
        .in_block(self.ctaid);
        for (s, what, n) in &groups {
            let msg = format!("{n} thread{} {what}", if *n == 1 { "" } else { "s" });
            if s.is_dummy() {
                e = e.with_note(msg);
            } else {
                e = e.with_label(*s, msg);
            }
        }
        if let Some((t, what)) = first_missing {
            e = e.with_note(format!("for example thread {} {what}", coords(cx.tid_of(t))));
        }
        let e = self.with_call_chain(cx, wb, e);
        let e = if self.frames[wb].is_empty() {
            e
        } else {
            e.with_note("a barrier in a function is a different barrier at each call site (and each chain of calls)")
        };
        e.with_note(
            "every thread of a block must reach the same barrier; a thread that exited before it counts as missing \
             (undefined behaviour in CUDA)",
        )
    }

    /// Adds pending thread-instructions to the launch counter; fails once it passes the fuel.
    fn flush_fuel(&mut self, cx: &LaunchCtx, at: Option<(Span, usize, u32)>) -> Result<(), InterpError> {
        let total = cx.fuel_used.fetch_add(self.pending, Ordering::Relaxed) + self.pending;
        self.pending = 0;
        if total > cx.fuel {
            let mut e = InterpError::fault(
                FaultKind::FuelExhausted,
                format!("the launch ran more than its fuel of {} thread-instructions", cx.fuel),
            )
            .with_note("an infinite loop? raise the limit with --fuel N if the kernel is just long");
            match at.or(self.last_charge) {
                Some((span, w, mask)) => {
                    let l = mask.trailing_zeros();
                    e = e.at(span, "still running here").in_thread(self.ctaid, cx.tid_of(w as u32 * 32 + l));
                }
                None => e = e.in_block(self.ctaid),
            }
            return Err(e);
        }
        self.pending_cap = FUEL_CHUNK.min(cx.fuel - total);
        Ok(())
    }

    #[inline]
    fn charge(&mut self, cx: &LaunchCtx, n: u32, span: Span, w: usize, mask: u32) -> Result<(), InterpError> {
        self.stats.thread_instructions += n as u64;
        self.stats.warp_instructions += 1;
        self.pending += n as u64;
        self.last_charge = Some((span, w, mask));
        if self.pending > self.pending_cap {
            self.flush_fuel(cx, Some((span, w, mask)))?;
        }
        self.warp_steps[w] += 1;
        if self.warp_steps[w] > cx.warp_fuel {
            let l = mask.trailing_zeros();
            return Err(InterpError::fault(
                FaultKind::FuelExhausted,
                format!("warp {w} of this block ran more than {} instructions", cx.warp_fuel),
            )
            .with_note("an infinite loop? if the kernel is just long, raise the limit with --fuel N")
            .at(span, "still running here")
            .in_thread(self.ctaid, cx.tid_of(w as u32 * 32 + l)));
        }
        Ok(())
    }

    #[inline]
    fn run_warp(&mut self, cx: &LaunchCtx, w: usize) -> Result<Stop, InterpError> {
        // A kernel without calls runs a copy of the loop with the frame bookkeeping compiled out.
        match (self.calls, !self.enc.is_empty()) {
            (false, false) => self.run_warp_in::<false, false>(cx, w),
            (true, false) => self.run_warp_in::<true, false>(cx, w),
            (false, true) => self.run_warp_in::<false, true>(cx, w),
            (true, true) => self.run_warp_in::<true, true>(cx, w),
        }
    }

    /// Runs warp `w` until it finishes or reaches a barrier. `CALLS` is false only when the launch
    /// has no functions (then the warp never has a frame, and the loop is the call-free one).
    /// `ENC`: enclosures are tracked ([`crate::enclose`]) alongside the values.
    fn run_warp_in<const CALLS: bool, const ENC: bool>(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
    ) -> Result<Stop, InterpError> {
        let mut prog = cx.prog;
        self.cur_base = w * self.stride;
        'warp: loop {
            let mut floor = 0;
            if CALLS {
                // The body the warp runs: the kernel, or the innermost call frame.
                (prog, self.cur_base, floor) = match self.frames[w].last() {
                    None => (cx.prog, w * self.stride, 0),
                    Some(f) => (&cx.progs[f.prog as usize], f.base, f.floor),
                };
            }
            let len = self.stacks[w].len();
            if len == floor {
                // Every lane of the frame has returned (each wrote its result): the caller
                // continues after the call with the lanes that called.
                if !CALLS || self.frames[w].pop().is_none() {
                    return Ok(Stop::Done);
                }
                continue;
            }
            let top = self.stacks[w][len - 1];
            if top.block == top.rpc || top.mask == 0 {
                self.stacks[w].pop();
                continue;
            }
            let mask = top.mask;
            let n = mask.count_ones();
            // The top entry's block and ip are kept here while the warp does not diverge (jumps
            // and uniform branches), and written back when it leaves this loop.
            let (mut cur, mut ip) = (top.block, top.ip as usize);
            loop {
                let Some(blk) = prog.blocks.get(cur as usize) else {
                    return Err(InterpError::internal(format!("warp {w} has lanes {mask:#x} waiting at the exit"))
                        .in_block(self.ctaid));
                };
                while ip < blk.insts.len() {
                    let inst = &blk.insts[ip];
                    self.charge(cx, n, inst.span, w, mask)?;
                    if inst.ctl {
                        // A barrier or a call (calls exist only when `CALLS`: each call's callee
                        // is a body of the launch besides the kernel).
                        let pid = if CALLS { self.frames[w].last().map_or(0, |f| f.prog) } else { 0 };
                        if CALLS {
                            if let XOp::Call(c) = inst.op {
                                self.call(cx, w, (pid, cur, ip as u32), mask, c, inst.res)?;
                                continue 'warp;
                            }
                        }
                        if let Some(e) = self.stacks[w].last_mut() {
                            e.block = cur;
                            e.ip = ip as u32 + 1;
                        }
                        return Ok(Stop::Barrier(pid, cur, ip as u32));
                    }
                    self.exec::<CALLS>(cx, w, mask, inst)?;
                    if ENC {
                        self.enc_inst(cx, mask, inst);
                    }
                    ip += 1;
                }
                self.charge(cx, n, blk.term_span, w, mask)?;
                let base = if CALLS { self.cur_base } else { w * self.stride };
                // The block all of `mask` continues at, if the warp does not diverge or exit.
                let next = match &blk.term {
                    XTerm::Ret => {
                        if self.copies_in_flight != 0 {
                            self.no_copies_left(cx, w, mask, blk.term_span)?;
                        }
                        self.exited[w] |= mask;
                        for l in lanes(mask) {
                            self.exit_block[w][l] = cur;
                        }
                        for e in &mut self.stacks[w] {
                            e.mask &= !mask;
                        }
                        self.stacks[w].pop();
                        None
                    }
                    XTerm::Return(slot, slot_hi) => {
                        // The lanes leave the function: results go to the caller's result row,
                        // and the lanes leave every stack entry of the frame.
                        let Some(f) = self.frames[w].last() else {
                            return Err(InterpError::internal("`ret` of a function outside a call")
                                .at(blk.term_span, "here")
                                .in_block(self.ctaid));
                        };
                        // A 128-bit value returns both halves.
                        let halves = [(*slot, f.res), (*slot_hi, f.res_hi)];
                        for (slot, res) in halves {
                            if slot == NO_SLOT || res == usize::MAX {
                                continue;
                            }
                            let src = base + slot as usize;
                            for l in lanes(mask) {
                                self.regs[res][l] = self.regs[src][l];
                            }
                            if ENC {
                                for l in lanes(mask) {
                                    self.enc[res][l] = self.enc[src][l];
                                }
                            }
                        }
                        let floor = f.floor;
                        // A vector's elements' enclosures (the enclosure program's element slots).
                        let el = if ENC { prog.ret_el.get(cur as usize).filter(|el| el[0] != NO_SLOT) } else { None };
                        let frame = if el.is_some() { Some(*f) } else { None };
                        for e in &mut self.stacks[w][floor..] {
                            e.mask &= !mask;
                        }
                        self.stacks[w].pop();
                        if let (Some(f), Some(el)) = (frame, el) {
                            self.enc_return_elements(cx, base, el, &f, mask);
                        }
                        None
                    }
                    XTerm::Jmp(edge) => {
                        self.edge_moves::<ENC>(base, edge, mask);
                        Some(edge.block)
                    }
                    XTerm::Br { cond, then_, else_ } => {
                        if ENC {
                            if let Some(e) = self.enc_inexact(base + *cond as usize, mask) {
                                self.enc_unusable(cx, blk.term_span, "a branch condition", e);
                            }
                        }
                        let c = &self.regs[base + *cond as usize];
                        let mut taken = 0u32;
                        for (l, v) in c.iter().enumerate() {
                            taken |= ((v & 1) as u32) << l;
                        }
                        taken &= mask;
                        let not_taken = mask & !taken;
                        if not_taken == 0 || taken == 0 {
                            let edge = if not_taken == 0 { then_ } else { else_ };
                            self.edge_moves::<ENC>(base, edge, mask);
                            Some(edge.block)
                        } else {
                            self.edge_moves::<ENC>(base, then_, taken);
                            self.edge_moves::<ENC>(base, else_, not_taken);
                            if then_.block == else_.block {
                                Some(then_.block)
                            } else {
                                let r = blk.ipdom;
                                let stack = &mut self.stacks[w];
                                let e0 = stack.pop().expect("top entry exists");
                                if r != e0.rpc {
                                    stack.push(Entry { block: r, ip: 0, mask: e0.mask, rpc: e0.rpc });
                                }
                                if else_.block != r {
                                    stack.push(Entry { block: else_.block, ip: 0, mask: not_taken, rpc: r });
                                }
                                if then_.block != r {
                                    stack.push(Entry { block: then_.block, ip: 0, mask: taken, rpc: r });
                                }
                                None
                            }
                        }
                    }
                };
                match next {
                    Some(b) if b != top.rpc => {
                        cur = b;
                        ip = 0;
                    }
                    Some(b) => {
                        // Reconvergence point reached: the outer loop pops the entry.
                        let e = self.stacks[w].last_mut().expect("top entry exists");
                        e.block = b;
                        e.ip = 0;
                        break;
                    }
                    None => break,
                }
            }
        }
    }

    /// Enters call `c` of body `site.0` (the call instruction `site`) for the lanes in `mask`: the
    /// caller resumes after the call once the frame pops; the callee's registers follow the
    /// caller's (`base`), with its constants and its parameters (the argument rows) set.
    #[inline(never)]
    fn call(&mut self, cx: &LaunchCtx, w: usize, site: Site, mask: u32, c: u32, res: u32) -> Result<(), InterpError> {
        let base = self.cur_base;
        let caller = &cx.progs[site.0 as usize];
        let span = site_span(cx, site);
        let Some(call) = caller.calls.get(c as usize) else {
            return Err(InterpError::internal("call to an unknown callee").at(span, "here").in_block(self.ctaid));
        };
        let callee = &cx.progs[call.callee as usize];
        let new_base = base + caller.nslots;
        if new_base + callee.nslots > (w + 1) * self.stride || callee.params.len() != call.args.len() {
            return Err(InterpError::internal("a call frame does not fit the warp's registers").at(span, "here"));
        }
        if let Some(e) = self.stacks[w].last_mut() {
            e.block = site.1;
            e.ip = site.2 + 1;
        }
        for &(slot, bits) in &callee.consts {
            self.regs[new_base + slot as usize] = [bits; 32];
        }
        for (&p, &a) in callee.params.iter().zip(&call.args) {
            self.regs[new_base + p as usize] = self.regs[base + a as usize];
        }
        if !self.enc.is_empty() {
            for &(slot, _) in &callee.consts {
                self.enc[new_base + slot as usize] = [Enc::Exact; 32];
            }
            for (&p, &a) in callee.params.iter().zip(&call.args) {
                self.enc[new_base + p as usize] = self.enc[base + a as usize];
            }
        }
        let res = if res == NO_SLOT { usize::MAX } else { base + res as usize };
        let res_hi = if call.res_hi == NO_SLOT || res == usize::MAX { usize::MAX } else { base + call.res_hi as usize };
        let floor = self.stacks[w].len();
        self.frames[w].push(Frame { prog: call.callee, base: new_base, floor, mask, res, res_hi, call: site });
        self.stacks[w].push(Entry { block: 0, ip: 0, mask, rpc: EXIT });
        Ok(())
    }

    /// With enclosures: a function's `ret` of a vector whose element slots are `el` (registers at
    /// `base`) by the lanes in `mask` gives the elements' enclosures to the call `f`'s result.
    #[cold]
    #[inline(never)]
    fn enc_return_elements(&mut self, cx: &LaunchCtx, base: usize, el: &ElSlots, f: &Frame, mask: u32) {
        if f.res == usize::MAX {
            return;
        }
        // The call instruction's result slot and element slots, in the caller's registers.
        let caller = &cx.progs[f.call.0 as usize];
        let Some(inst) = caller.blocks.get(f.call.1 as usize).and_then(|b| b.insts.get(f.call.2 as usize)) else {
            return;
        };
        let XOp::Call(c) = inst.op else { return };
        let Some(call) = caller.calls.get(c as usize) else { return };
        let caller_base = f.res - inst.res as usize;
        for (&s, &d) in el.iter().zip(&call.res_el) {
            if s == NO_SLOT || d == NO_SLOT {
                continue;
            }
            let (src, dst) = (base + s as usize, caller_base + d as usize);
            for l in lanes(mask) {
                self.enc[dst][l] = self.enc[src][l];
            }
        }
    }

    /// [`Self::moves`] for the enclosures.
    fn enc_moves(&mut self, base: usize, edge: &XEdge, mask: u32) {
        if edge.moves.is_empty() {
            return;
        }
        let srcs: Vec<[Enc; 32]> = edge.moves.iter().map(|&(_, s)| self.enc[base + s as usize]).collect();
        for (&(d, _), src) in edge.moves.iter().zip(srcs) {
            let dst = &mut self.enc[base + d as usize];
            for l in lanes(mask) {
                dst[l] = src[l];
            }
        }
    }

    /// [`Self::moves`], and with `ENC` the same for the enclosures.
    #[inline]
    fn edge_moves<const ENC: bool>(&mut self, base: usize, edge: &XEdge, mask: u32) {
        self.moves(base, edge, mask);
        if ENC {
            self.enc_moves(base, edge, mask);
        }
    }

    /// Records that `what` at `at` used a value with enclosure `e` (nothing when `e` is exact).
    fn enc_unusable(&self, cx: &LaunchCtx, at: Span, what: &'static str, e: Enc) {
        let cause = match e {
            Enc::Unknown { at, why } => (at, why),
            Enc::Range { origin, .. } => (origin, Why::Inexact),
            Enc::Exact => return,
        };
        if let Some(shared) = cx.enc {
            shared.unusable(Unusable { at, what, cause });
        }
    }

    /// The first non-exact enclosure of row `row` among the lanes of `mask`.
    fn enc_inexact(&self, row: usize, mask: u32) -> Option<Enc> {
        lanes(mask).map(|l| self.enc[row][l]).find(|e| !e.is_exact())
    }

    /// The enclosures of instruction `inst`'s result, run by the lanes in `mask` of the running warp
    /// (after [`Self::exec`] computed its values): pure ops by [`enclose::pure`], memory through
    /// the memories' enclosures; an address, atomic operand, shuffle lane or vote predicate whose
    /// enclosure is not exact makes the launch's enclosures unusable.
    fn enc_inst(&mut self, cx: &LaunchCtx, mask: u32, inst: &XInst) {
        let base = self.cur_base;
        let [a0, a1, a2, a3] = inst.args.map(|a| base + a as usize);
        let res = (inst.res != NO_SLOT).then(|| base + inst.res as usize);
        let set_exact = |s: &mut Self| {
            if let Some(r) = res {
                for l in lanes(mask) {
                    s.enc[r][l] = Enc::Exact;
                }
            }
        };
        match &inst.op {
            XOp::Pure(op) => {
                let Some(r) = res else { return };
                let n = inst.nargs as usize;
                let rows = [a0, a1, a2];
                let inexact = (0..n).any(|i| self.enc_inexact(rows[i], mask).is_some());
                if !inexact && !op.is_approx() {
                    return set_exact(self);
                }
                for l in lanes(mask) {
                    let args: [u64; 3] = std::array::from_fn(|i| if i < n { self.regs[rows[i]][l] } else { 0 });
                    let encs: [Enc; 3] = std::array::from_fn(|i| if i < n { self.enc[rows[i]][l] } else { Enc::Exact });
                    let e = enclose::pure(op, &args[..n], &encs[..n], self.regs[r][l], inst.span);
                    self.enc[r][l] = e;
                }
            }
            XOp::Special(_) | XOp::SharedAddr(_) => set_exact(self),
            XOp::Copy => {
                if let Some(r) = res {
                    for l in lanes(mask) {
                        self.enc[r][l] = self.enc[a0][l];
                    }
                }
            }
            XOp::Offset { .. } => {
                for row in [a0, a1] {
                    if let Some(e) = self.enc_inexact(row, mask) {
                        self.enc_unusable(cx, inst.span, "an address", e);
                    }
                }
                set_exact(self);
            }
            XOp::Load(acc) | XOp::Store(acc) | XOp::Atomic(_, acc) | XOp::Cas(acc) => {
                for row in [a0, a1] {
                    if let Some(e) = self.enc_inexact(row, mask) {
                        self.enc_unusable(cx, inst.span, "an address", e);
                    }
                }
                for l in lanes(mask) {
                    let Some((region, byte)) = self.locate_lane(cx, acc, self.regs[a0][l], self.regs[a1][l]) else {
                        continue;
                    };
                    let global = acc.space == AddrSpace::Global;
                    let key = if global { byte } else { cx.shared_start[region] + byte };
                    let with_mem = |s: &mut Self, f: &mut dyn FnMut(&mut MemEnc) -> Enc| -> Enc {
                        if global {
                            match cx.enc.and_then(|e| e.global.get(region)) {
                                Some(m) => f(&mut m.lock().unwrap_or_else(|p| p.into_inner())),
                                None => Enc::Exact,
                            }
                        } else {
                            f(&mut s.sh_enc)
                        }
                    };
                    match &inst.op {
                        XOp::Load(_) => {
                            let e = with_mem(self, &mut |m| m.load(key, acc.size, inst.span));
                            if let Some(r) = res {
                                self.enc[r][l] = e;
                            }
                        }
                        XOp::Store(_) => {
                            let v = self.enc[a2][l];
                            with_mem(self, &mut |m| {
                                m.store(key, acc.size, v);
                                Enc::Exact
                            });
                        }
                        _ => {
                            let operands = [
                                self.enc[a2][l],
                                if matches!(inst.op, XOp::Cas(_)) { self.enc[a3][l] } else { Enc::Exact },
                            ];
                            let old = with_mem(self, &mut |m| {
                                let old = m.load(key, acc.size, inst.span);
                                m.store(key, acc.size, Enc::Exact);
                                old
                            });
                            for e in operands.into_iter().chain([old]) {
                                self.enc_unusable(cx, inst.span, "an atomic", e);
                            }
                            if let Some(r) = res {
                                self.enc[r][l] = Enc::Exact;
                            }
                        }
                    }
                }
            }
            XOp::Shfl(mode) => {
                for row in [a1, a2] {
                    if let Some(e) = self.enc_inexact(row, mask) {
                        self.enc_unusable(cx, inst.span, "a shuffle's lane or mask", e);
                    }
                }
                let Some(r) = res else { return };
                let src = self.enc[a0];
                for l in lanes(mask) {
                    self.enc[r][l] = src[shfl_source(*mode, l, self.regs[a1][l])];
                }
            }
            XOp::Vote(_) => {
                // The ballot reads the member lanes' predicates: any of them inexact decides it.
                let members = self.regs[a1][mask.trailing_zeros() as usize & 31] as u32;
                for row in [a0, a1] {
                    if let Some(e) = self.enc_inexact(row, members | mask) {
                        self.enc_unusable(cx, inst.span, "a vote", e);
                    }
                }
                set_exact(self);
            }
            // Computed with their values, by `exec_ext` and the copies' completions.
            XOp::Barrier | XOp::Call(_) | XOp::Ext(_) | XOp::CpCommit | XOp::CpWait(_) => {}
        }
    }

    /// Where lane's access `(ptr, idx)` lands (it ran, so it is in bounds).
    fn locate_lane(&self, cx: &LaunchCtx, acc: &MemAccess, ptr: u64, idx: u64) -> Option<(usize, usize)> {
        let lens: &[u64] = match acc.space {
            AddrSpace::Global => &cx.global.lens,
            AddrSpace::Shared => &cx.shared_lens,
        };
        mem::locate_fast(ptr, idx, acc.idx_shift as u32, acc.size, lens)
            .or_else(|| mem::locate(ptr, mem::index_value(acc.idx_ty, idx), acc.size, lens).ok())
    }

    /// Parallel copy of an edge's arguments onto the target's parameters, for the lanes in `mask`.
    fn moves(&mut self, base: usize, edge: &XEdge, mask: u32) {
        match edge.moves.len() {
            0 => {}
            1 => {
                let (d, s) = (base + edge.moves[0].0 as usize, base + edge.moves[0].1 as usize);
                if d == s {
                    return;
                }
                let (src, dst) = if s < d {
                    let (lo, hi) = self.regs.split_at_mut(d);
                    (&lo[s], &mut hi[0])
                } else {
                    let (lo, hi) = self.regs.split_at_mut(s);
                    (&hi[0], &mut lo[d])
                };
                if mask == u32::MAX {
                    *dst = *src;
                } else {
                    for l in lanes(mask) {
                        dst[l] = src[l];
                    }
                }
            }
            k => {
                if self.edge_tmp.len() < k {
                    self.edge_tmp.resize(k, [0; 32]);
                }
                for (i, &(_, s)) in edge.moves.iter().enumerate() {
                    self.edge_tmp[i] = self.regs[base + s as usize];
                }
                for (i, &(d, _)) in edge.moves.iter().enumerate() {
                    let src = &self.edge_tmp[i];
                    let dst = &mut self.regs[base + d as usize];
                    for l in lanes(mask) {
                        dst[l] = src[l];
                    }
                }
            }
        }
    }

    /// Executes one instruction other than a barrier or call for the lanes in `mask` of warp `w`
    /// (whose current body's registers start at row `self.cur_base`).
    #[inline]
    fn exec<const CALLS: bool>(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        mask: u32,
        inst: &XInst,
    ) -> Result<(), InterpError> {
        let base = if CALLS { self.cur_base } else { w * self.stride };
        let [a0, a1, a2, a3] = inst.args.map(|a| base + a as usize);
        match &inst.op {
            XOp::Pure(op) => {
                if inst.res == NO_SLOT {
                    return Ok(());
                }
                let regs = &mut self.regs[base..];
                let p = regs.as_mut_ptr();
                let (r, [a0, a1, a2, _]) = (inst.res as usize, inst.args.map(|a| a as usize));
                // SAFETY: `Prog::new` guarantees every slot is < the body's nslots, and the body's
                // registers `base..base + nslots` lie in `regs` (the kernel's at `w * stride`, a
                // frame's checked by `call`); the result slot is none of the operand slots, so `out`
                // does not alias the operand rows.
                unsafe {
                    let out = &mut *p.add(r);
                    match inst.nargs {
                        1 => eval::eval_lanes(op, &[&*p.add(a0)], out, mask),
                        2 => eval::eval_lanes(op, &[&*p.add(a0), &*p.add(a1)], out, mask),
                        _ => eval::eval_lanes(op, &[&*p.add(a0), &*p.add(a1), &*p.add(a2)], out, mask),
                    }
                }
            }
            XOp::Special(reg) => {
                let mut vals = [0u64; 32];
                let tids = &self.tids[w];
                let uniform = |v: u32| [v as u64; 32];
                match *reg {
                    SpecialReg::Tid(d) => {
                        for l in 0..32 {
                            vals[l] = tids[d.index()][l] as u64;
                        }
                    }
                    SpecialReg::GlobalId(d) => {
                        let base = self.ctaid[d.index()].wrapping_mul(cx.block[d.index()]);
                        for l in 0..32 {
                            vals[l] = base.wrapping_add(tids[d.index()][l]) as u64;
                        }
                    }
                    SpecialReg::LaneId => {
                        for (l, v) in vals.iter_mut().enumerate() {
                            *v = l as u64;
                        }
                    }
                    SpecialReg::Ctaid(d) => vals = uniform(self.ctaid[d.index()]),
                    SpecialReg::Ntid(d) => vals = uniform(cx.block[d.index()]),
                    SpecialReg::Nctaid(d) => vals = uniform(cx.grid[d.index()]),
                    SpecialReg::WarpId => vals = uniform(w as u32),
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Load(acc) if acc.space == AddrSpace::Global && cx.global.race.is_none() => {
                let (ptrs, idxs) = (&self.regs[a0], &self.regs[a1]);
                if let Some((r, bytes)) =
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.global.lens)
                {
                    let vals = cx.global.load_lanes(r, &bytes, acc.size);
                    self.stats.global_bytes_read += acc.size as u64 * mask.count_ones() as u64;
                    self.write_res(base, inst.res, mask, &vals);
                    return Ok(());
                }
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    match mem::locate_fast(ptrs[l], idxs[l], acc.idx_shift as u32, acc.size, &cx.global.lens) {
                        Some((r, byte)) => vals[l] = cx.global.load(r, byte, acc.size),
                        None => {
                            let (p, i) = (ptrs[l], idxs[l]);
                            self.access(cx, w, l, inst, acc, p, i, Access::Read)?;
                            return Err(InterpError::internal("a refused load was accepted").at(inst.span, "here"));
                        }
                    }
                }
                self.stats.global_bytes_read += acc.size as u64 * mask.count_ones() as u64;
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Store(acc) if acc.space == AddrSpace::Global && cx.global.race.is_none() => {
                let (ptrs, idxs, v) = (&self.regs[a0], &self.regs[a1], &self.regs[a2]);
                if let Some((r, bytes)) =
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.global.lens)
                {
                    cx.global.store_lanes(r, &bytes, acc.size, mask, v);
                    self.stats.global_bytes_written += acc.size as u64 * mask.count_ones() as u64;
                    return Ok(());
                }
                for l in lanes(mask) {
                    match mem::locate_fast(ptrs[l], idxs[l], acc.idx_shift as u32, acc.size, &cx.global.lens) {
                        Some((r, byte)) => cx.global.store(r, byte, acc.size, v[l]),
                        None => {
                            let (p, i, x) = (ptrs[l], idxs[l], v[l]);
                            self.access(cx, w, l, inst, acc, p, i, Access::Write(x))?;
                            return Err(InterpError::internal("a refused store was accepted").at(inst.span, "here"));
                        }
                    }
                }
                self.stats.global_bytes_written += acc.size as u64 * mask.count_ones() as u64;
            }
            XOp::Load(acc) if acc.space == AddrSpace::Shared && self.sh_direct => {
                let (ptrs, idxs) = (&self.regs[a0], &self.regs[a1]);
                if let Some((r, bytes)) =
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.shared_lens)
                {
                    let vals = mem::read_lanes(&self.shared, cx.shared_start[r], &bytes, acc.size);
                    self.write_res(base, inst.res, mask, &vals);
                    return Ok(());
                }
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    match mem::locate_fast(ptrs[l], idxs[l], acc.idx_shift as u32, acc.size, &cx.shared_lens) {
                        Some((r, byte)) => vals[l] = mem::read_le(&self.shared, cx.shared_start[r] + byte, acc.size),
                        None => {
                            let (p, i) = (ptrs[l], idxs[l]);
                            self.access(cx, w, l, inst, acc, p, i, Access::Read)?;
                            return Err(InterpError::internal("a refused load was accepted").at(inst.span, "here"));
                        }
                    }
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Store(acc) if acc.space == AddrSpace::Shared && self.sh_direct => {
                let (ptrs, idxs, v) = (&self.regs[a0], &self.regs[a1], &self.regs[a2]);
                if let Some((r, bytes)) =
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.shared_lens)
                {
                    mem::write_lanes(&mut self.shared, cx.shared_start[r], &bytes, acc.size, mask, v);
                    return Ok(());
                }
                for l in lanes(mask) {
                    match mem::locate_fast(ptrs[l], idxs[l], acc.idx_shift as u32, acc.size, &cx.shared_lens) {
                        Some((r, byte)) => mem::write_le(&mut self.shared, cx.shared_start[r] + byte, acc.size, v[l]),
                        None => {
                            let (p, i, x) = (ptrs[l], idxs[l], v[l]);
                            self.access(cx, w, l, inst, acc, p, i, Access::Write(x))?;
                            return Err(InterpError::internal("a refused store was accepted").at(inst.span, "here"));
                        }
                    }
                }
            }
            // With race detection: one bounds check per warp, then per lane (in lane order, as the
            // per-lane path) the race bookkeeping and the access.
            XOp::Load(acc) if acc.space == AddrSpace::Global => {
                let (ptrs, idxs) = (&self.regs[a0], &self.regs[a1]);
                if let (Some((r, bytes)), Some(race)) = (
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.global.lens),
                    &cx.global.race,
                ) {
                    let tags = &race[r];
                    for l in lanes(mask) {
                        let me = tag::make(cx.global.race_base + self.linear + 1, self.epoch, (w * 32 + l) as u64);
                        if let Some(c) = race::global_access(
                            tags,
                            bytes[l],
                            acc.size,
                            cx.global.race_shift,
                            cx.global.race_base,
                            me,
                            Kind::Read,
                            acc.site,
                            cx.global.race_sites_exact,
                        ) {
                            return Err(self.race_error(cx, w, l, inst.span, acc, r, bytes[l], Kind::Read, c));
                        }
                    }
                    let vals = cx.global.load_lanes(r, &bytes, acc.size);
                    self.stats.global_bytes_read += acc.size as u64 * mask.count_ones() as u64;
                    self.write_res(base, inst.res, mask, &vals);
                    return Ok(());
                }
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    vals[l] = self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Read)?;
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Store(acc) if acc.space == AddrSpace::Global => {
                let (ptrs, idxs) = (&self.regs[a0], &self.regs[a1]);
                if let (Some((r, bytes)), Some(race)) = (
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.global.lens),
                    &cx.global.race,
                ) {
                    let tags = &race[r];
                    for l in lanes(mask) {
                        let me = tag::make(cx.global.race_base + self.linear + 1, self.epoch, (w * 32 + l) as u64);
                        if let Some(c) = race::global_access(
                            tags,
                            bytes[l],
                            acc.size,
                            cx.global.race_shift,
                            cx.global.race_base,
                            me,
                            Kind::Write,
                            acc.site,
                            cx.global.race_sites_exact,
                        ) {
                            return Err(self.race_error(cx, w, l, inst.span, acc, r, bytes[l], Kind::Write, c));
                        }
                        self.stats.global_bytes_written += acc.size as u64;
                        cx.global.store(r, bytes[l], acc.size, self.regs[a2][l]);
                    }
                    return Ok(());
                }
                for l in lanes(mask) {
                    let v = self.regs[a2][l];
                    self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Write(v))?;
                }
            }
            XOp::Load(acc) if acc.space == AddrSpace::Shared && self.sh_race_direct => {
                let (ptrs, idxs) = (&self.regs[a0], &self.regs[a1]);
                if let Some((r, bytes)) =
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.shared_lens)
                {
                    let shift = cx.prog.race_shift[1];
                    for l in lanes(mask) {
                        let me = tag::make(self.gen as u64, self.epoch, (w * 32 + l) as u64);
                        let first = self.sh_race_start[r] + (bytes[l] >> shift);
                        if let Some(c) =
                            race::shared_access(&mut self.sh_race, first, acc.size, shift, me, Kind::Read, acc.site)
                        {
                            return Err(self.race_error(cx, w, l, inst.span, acc, r, bytes[l], Kind::Read, c));
                        }
                    }
                    let vals = mem::read_lanes(&self.shared, cx.shared_start[r], &bytes, acc.size);
                    self.write_res(base, inst.res, mask, &vals);
                    return Ok(());
                }
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    vals[l] = self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Read)?;
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Store(acc) if acc.space == AddrSpace::Shared && self.sh_race_direct => {
                let (ptrs, idxs) = (&self.regs[a0], &self.regs[a1]);
                if let Some((r, bytes)) =
                    mem::locate_warp(ptrs, idxs, mask, acc.idx_shift as u32, acc.size, &cx.shared_lens)
                {
                    let shift = cx.prog.race_shift[1];
                    let start = cx.shared_start[r];
                    for l in lanes(mask) {
                        let me = tag::make(self.gen as u64, self.epoch, (w * 32 + l) as u64);
                        let first = self.sh_race_start[r] + (bytes[l] >> shift);
                        if let Some(c) =
                            race::shared_access(&mut self.sh_race, first, acc.size, shift, me, Kind::Write, acc.site)
                        {
                            return Err(self.race_error(cx, w, l, inst.span, acc, r, bytes[l], Kind::Write, c));
                        }
                        let v = self.regs[a2][l];
                        mem::write_le(&mut self.shared, start + bytes[l], acc.size, v);
                    }
                    return Ok(());
                }
                for l in lanes(mask) {
                    let v = self.regs[a2][l];
                    self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Write(v))?;
                }
            }
            XOp::Load(acc) => {
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    vals[l] = self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Read)?;
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Store(acc) => {
                for l in lanes(mask) {
                    let v = self.regs[a2][l];
                    self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Write(v))?;
                }
            }
            XOp::Atomic(op, acc) => {
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    let v = self.regs[a2][l];
                    vals[l] =
                        self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Rmw(*op, v))?;
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Cas(acc) => {
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    let (c, v) = (self.regs[a2][l], self.regs[a3][l]);
                    vals[l] =
                        self.access(cx, w, l, inst, acc, self.regs[a0][l], self.regs[a1][l], Access::Cas(c, v))?;
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Offset { scale, idx_ty } => {
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    let i = mem::index_value(*idx_ty, self.regs[a1][l]);
                    vals[l] = mem::ptr_add(self.regs[a0][l], i * *scale as i128);
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Copy => {
                let vals = self.regs[a0];
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::SharedAddr(n) => {
                self.write_res(base, inst.res, mask, &[mem::make_ptr(n + 1, 0); 32]);
            }
            XOp::Barrier | XOp::Call(_) => {
                return Err(
                    InterpError::internal("barrier or call reached the instruction executor").at(inst.span, "here")
                )
            }
            XOp::Ext(x) => return self.exec_ext(cx, w, base, mask, inst, x),
            XOp::CpCommit => self.cp_commit(w, mask),
            XOp::CpWait(n) => return self.cp_wait(cx, w, mask, inst, *n),
            XOp::Shfl(mode) => {
                let members = self.collective_mask(cx, w, mask, inst, a2)?;
                let (v, b) = (self.regs[a0], self.regs[a1]);
                let mut vals = [0u64; 32];
                for l in lanes(mask) {
                    let j = shfl_source(*mode, l, b[l]);
                    if members & (1 << j) == 0 {
                        let (_, where_) = self.lane_location(cx, w, j);
                        return Err(InterpError::fault(
                            FaultKind::DivergentCollective,
                            format!("lane {l} reads lane {j}, which is not in the member mask {members:#010x}"),
                        )
                        .at(inst.span, "reads outside the member mask")
                        .in_thread(self.ctaid, cx.tid_of((w * 32 + l) as u32))
                        .with_note(format!("lane {j} {where_}; its value is undefined on the GPU")));
                    }
                    vals[l] = v[j];
                }
                self.write_res(base, inst.res, mask, &vals);
            }
            XOp::Vote(mode) => {
                let members = self.collective_mask(cx, w, mask, inst, a1)?;
                let p = self.regs[a0];
                let mut ballot = 0u32;
                for l in lanes(members) {
                    ballot |= ((p[l] & 1) as u32) << l;
                }
                let r = match mode {
                    VoteMode::All => (ballot == members) as u64,
                    VoteMode::Any => (ballot != 0) as u64,
                    VoteMode::Ballot => ballot as u64,
                };
                self.write_res(base, inst.res, mask, &[r; 32]);
            }
        }
        Ok(())
    }

    #[inline]
    fn write_res(&mut self, base: usize, res: u32, mask: u32, vals: &Row) {
        if res == NO_SLOT {
            return;
        }
        let out = &mut self.regs[base + res as usize];
        if mask == u32::MAX {
            *out = *vals;
        } else {
            for l in lanes(mask) {
                out[l] = vals[l];
            }
        }
    }

    /// Checks a collective's member mask against the executing lanes; returns the mask.
    fn collective_mask(
        &self,
        cx: &LaunchCtx,
        w: usize,
        mask: u32,
        inst: &XInst,
        slot: usize,
    ) -> Result<u32, InterpError> {
        let row = &self.regs[slot];
        let l0 = mask.trailing_zeros() as usize;
        let m = row[l0] as u32;
        let fault = |l: usize, msg: String| {
            InterpError::fault(FaultKind::DivergentCollective, msg)
                .at(inst.span, "warp collective")
                .in_thread(self.ctaid, cx.tid_of((w * 32 + l) as u32))
        };
        for l in lanes(mask) {
            if row[l] as u32 != m {
                return Err(fault(
                    l,
                    format!(
                        "lanes {l0} and {l} of warp {w} give different member masks ({m:#010x} and {:#010x})",
                        row[l] as u32
                    ),
                ));
            }
        }
        if mask & !m != 0 {
            let l = (mask & !m).trailing_zeros() as usize;
            return Err(fault(
                l,
                format!("lane {l} of warp {w} executes this collective but is not in its member mask {m:#010x}"),
            ));
        }
        let missing = m & !mask;
        if missing != 0 {
            let msg = format!(
                "the member mask {m:#010x} names {} lane{} of warp {w} that {} not executing this collective",
                missing.count_ones(),
                if missing.count_ones() == 1 { "" } else { "s" },
                if missing.count_ones() == 1 { "is" } else { "are" }
            );
            return Err(self.missing_lanes_fault(cx, w, mask, m, inst.span, msg));
        }
        Ok(m)
    }

    /// The fault of a collective that needs the lanes `members` of warp `w` but is executed by
    /// `mask` only: `message`, at the first executing lane, with where each missing lane is.
    #[cold]
    fn missing_lanes_fault(
        &self,
        cx: &LaunchCtx,
        w: usize,
        mask: u32,
        members: u32,
        span: Span,
        message: String,
    ) -> InterpError {
        let missing = members & !mask;
        let l0 = mask.trailing_zeros() as usize;
        let mut groups: Vec<(Span, String, Vec<usize>)> = Vec::new();
        for l in lanes(missing) {
            let (s, what) = self.lane_location(cx, w, l);
            match groups.iter_mut().find(|g| g.0 == s && g.1 == what) {
                Some(g) => g.2.push(l),
                None => groups.push((s, what, vec![l])),
            }
        }
        let mut e = InterpError::fault(FaultKind::DivergentCollective, message)
            .at(span, "warp collective")
            .in_thread(self.ctaid, cx.tid_of((w * 32 + l0) as u32))
            .with_note(format!("executing lanes: {}", lane_list(mask)));
        for (s, what, ls) in groups {
            let msg = format!("lanes {} {what}", lane_list(ls.iter().fold(0u32, |a, l| a | 1 << l)));
            if s.is_dummy() {
                e = e.with_note(msg);
            } else {
                e = e.with_label(s, msg);
            }
        }
        e
    }

    /// One lane's memory access: bounds, alignment, races, uninitialized reads, then the access.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn access(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        inst: &XInst,
        acc: &MemAccess,
        ptr: u64,
        idx_bits: u64,
        kind: Access,
    ) -> Result<u64, InterpError> {
        let size = acc.size;
        let lens: &[u64] = match acc.space {
            AddrSpace::Global => &cx.global.lens,
            AddrSpace::Shared => &cx.shared_lens,
        };
        let (region, byte) = match mem::locate_fast(ptr, idx_bits, acc.idx_shift as u32, size, lens) {
            Some(x) => x,
            None => {
                // The fast path declines faults and index arithmetic that wraps modulo 2^64; the
                // exact check decides.
                let idx = mem::index_value(acc.idx_ty, idx_bits);
                match mem::locate(ptr, idx, size, lens) {
                    Ok(x) => x,
                    Err(f) => return Err(self.access_fault(cx, w, l, inst, acc, idx, kind, f)),
                }
            }
        };
        self.access_at(cx, w, l, inst.span, acc, region, byte, kind)
    }

    /// One lane's access of `acc.size` bytes at byte `byte` of region `region` (in bounds and
    /// aligned: located by the caller) by instruction `span`: in-flight async copies, races,
    /// uninitialized reads, then the access. Vector accesses, `ldmatrix` rows and async copies
    /// come here element by element.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn access_at(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        span: Span,
        acc: &MemAccess,
        region: usize,
        byte: usize,
        kind: Access,
    ) -> Result<u64, InterpError> {
        let size = acc.size;
        let tid = (w * 32 + l) as u64;
        match acc.space {
            AddrSpace::Global => {
                if let Some(race) = &cx.global.race {
                    let me = tag::make(cx.global.race_base + self.linear + 1, self.epoch, tid);
                    if let Some(c) = race::global_access(
                        &race[region],
                        byte,
                        size,
                        cx.global.race_shift,
                        cx.global.race_base,
                        me,
                        kind.race_kind(),
                        acc.site,
                        cx.global.race_sites_exact,
                    ) {
                        return Err(self.race_error(cx, w, l, span, acc, region, byte, kind.race_kind(), c));
                    }
                }
                match kind {
                    Access::Read => {
                        self.stats.global_bytes_read += size as u64;
                        Ok(cx.global.load(region, byte, size))
                    }
                    Access::Write(v) => {
                        self.stats.global_bytes_written += size as u64;
                        cx.global.store(region, byte, size, v);
                        Ok(0)
                    }
                    Access::Rmw(..) | Access::Cas(..) => {
                        self.stats.global_bytes_read += size as u64;
                        self.stats.global_bytes_written += size as u64;
                        let old = cx.global.load(region, byte, size);
                        let new = rmw(acc.elem, AddrSpace::Global, kind, old);
                        cx.global.store(region, byte, size, new);
                        Ok(old)
                    }
                }
            }
            AddrSpace::Shared => {
                let at = cx.shared_start[region] + byte;
                if !self.sh_flight.is_empty() {
                    if let Some(k) = (at..at + size as usize).find(|&b| self.sh_flight[b] != 0) {
                        return Err(self.in_flight_error(cx, w, l, span, region, byte, size, kind.verb(), k));
                    }
                }
                let reads = !matches!(kind, Access::Write(_));
                if reads && !self.sh_init.is_empty() {
                    let gen = self.gen;
                    let written = |b: u32| b == gen || b == gen | PENDING | OWN_WRITE;
                    if let Some(k) = (0..size as usize).find(|k| !written(self.sh_init[at + k])) {
                        // Not judged yet: another thread may still write the slot in this
                        // barrier interval, which makes this read a race.
                        let atomic = kind.race_kind() == Kind::Atomic;
                        self.uninit_read(cx, w, span, region, byte, k, tid as u32, size, atomic);
                    }
                }
                // A write to a slot another thread read uninitialized in this interval is the
                // missing barrier, reported as the race between those two (whatever --races says).
                let writes = !matches!(kind, Access::Read);
                let mut self_read = false;
                if writes && !self.sh_pending.is_empty() {
                    let gen = self.gen;
                    if self.sh_init[at..at + size as usize].iter().any(|&b| b & !OWN_WRITE == gen | PENDING) {
                        let atomic = kind.race_kind() == Kind::Atomic;
                        self.write_after_uninit_read(cx, w, l, span, acc, region, byte, at, atomic)?;
                        self_read = true;
                    }
                }
                if !self.sh_race.is_empty() {
                    let me = tag::make(self.gen as u64, self.epoch, tid);
                    let shift = cx.prog.race_shift[1];
                    let first = self.sh_race_start[region] + (byte >> shift);
                    if let Some(c) =
                        race::shared_access(&mut self.sh_race, first, size, shift, me, kind.race_kind(), acc.site)
                    {
                        return Err(self.race_error(cx, w, l, span, acc, region, byte, kind.race_kind(), c));
                    }
                }
                if writes && !self.sh_init.is_empty() {
                    // A slot its own reader writes stays pending (another thread's later write
                    // races with the read), but reads as initialized from now on.
                    let gen = self.gen;
                    for b in &mut self.sh_init[at..at + size as usize] {
                        *b =
                            if self_read && *b & !OWN_WRITE == gen | PENDING { gen | PENDING | OWN_WRITE } else { gen };
                    }
                }
                match kind {
                    Access::Read => Ok(mem::read_le(&self.shared, at, size)),
                    Access::Write(v) => {
                        mem::write_le(&mut self.shared, at, size, v);
                        Ok(0)
                    }
                    Access::Rmw(..) | Access::Cas(..) => {
                        let old = mem::read_le(&self.shared, at, size);
                        mem::write_le(&mut self.shared, at, size, rmw(acc.elem, AddrSpace::Shared, kind, old));
                        Ok(old)
                    }
                }
            }
        }
    }

    /// Remembers an uninitialized read of shared bytes `at..at + size` by thread `tid` (byte `k`
    /// of it first uninitialized) until a write of the slot or the end of the interval.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn uninit_read(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        span: Span,
        region: usize,
        byte: usize,
        k: usize,
        tid: u32,
        size: u32,
        atomic: bool,
    ) {
        if self.sh_pending.len() >= MAX_PENDING {
            return;
        }
        let at = cx.shared_start[region] + byte;
        let err = self.sh_pending.is_empty().then(|| {
            let name = &cx.shared_names[region];
            let elem = byte / size as usize;
            let slot = format!("`@{name}[{elem}]` (byte {})", byte + k);
            let e =
                InterpError::fault(FaultKind::UninitializedRead, format!("read of uninitialized shared memory {slot}"))
                    .at(span, "reads memory no thread of this block has written")
                    .in_thread(self.ctaid, cx.tid_of(tid))
                    .with_note(
                        "no other thread of the block writes it before the next barrier (or the block's end) either",
                    )
                    .with_note("shared memory starts undefined on the GPU; write it before reading it");
            Box::new((self.with_call_chain(cx, w, e), slot))
        });
        let (gen, pend) = (self.gen, self.gen | PENDING);
        for b in &mut self.sh_init[at..at + size as usize] {
            if *b != gen && *b != pend | OWN_WRITE {
                *b = pend;
            }
        }
        self.sh_pending.push(PendingRead { at, size, tid, span, atomic, err });
    }

    /// Lane `l` of warp `w` writes shared bytes of which some were read uninitialized in this
    /// barrier interval: a race with the first such reader that is another thread (the
    /// interpreter ran the read first). `Ok` when every such read is this thread's own: those
    /// reads stay pending (judged at the interval's end, or when another thread writes the slot).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn write_after_uninit_read(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        span: Span,
        acc: &MemAccess,
        region: usize,
        byte: usize,
        at: usize,
        atomic: bool,
    ) -> Result<(), InterpError> {
        let me = (w * 32 + l) as u32;
        let end = at + acc.size as usize;
        let overlapping = |p: &&PendingRead| p.at < end && at < p.at + p.size as usize;
        let racing = |p: &&PendingRead| p.tid != me && !(p.atomic && atomic);
        let Some(r) = self.sh_pending.iter().filter(overlapping).find(racing) else {
            return Ok(());
        };
        let (reader, read_span, read_atomic) = (cx.tid_of(r.tid), r.span, r.atomic);
        let writer = cx.tid_of(me);
        self.sh_pending.clear();
        let elem = byte / acc.size as usize;
        let rd = format!("thread {}", coords(reader));
        let wr = format!("thread {}", coords(writer));
        let mut e = InterpError::fault(
            FaultKind::DataRace,
            format!(
                "data race on {} element {elem} (byte {byte}): {rd} {} it before {wr} of this block {} it, with no barrier between them",
                Self::region_name(cx, acc, region),
                if read_atomic { "updated" } else { "read" },
                if atomic { "updated" } else { "wrote" },
            ),
        )
        .at(span, format!("{wr} {} it here", if atomic { "updates" } else { "writes" }))
        .in_thread(self.ctaid, writer);
        if !read_span.is_dummy() {
            let how = if read_atomic { "updated it atomically" } else { "read it" };
            e = e.with_label(read_span, format!("{rd} {how} here first, uninitialized"));
        }
        if read_atomic || atomic {
            e = e.with_note("a plain access and an atomic to the same location race unless a barrier orders them (PTX memory model)");
        }
        Err(e
            .with_note(format!(
                "the interpreter ran the read first; on a GPU either may come first, so {rd} reads garbage or {wr}'s value"
            ))
            .with_note("add a barrier between the write and the read (all threads write, `barrier`, then read)"))
    }

    fn region_name(cx: &LaunchCtx, acc: &MemAccess, region: usize) -> String {
        match acc.space {
            AddrSpace::Global => {
                format!("global buffer {}", cx.global_names.get(region).map(String::as_str).unwrap_or("?"))
            }
            AddrSpace::Shared => {
                format!("shared `@{}`", cx.shared_names.get(region).map(String::as_str).unwrap_or("?"))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn access_fault(
        &self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        inst: &XInst,
        acc: &MemAccess,
        idx: i128,
        kind: Access,
        f: AccessFault,
    ) -> InterpError {
        let verb = match kind {
            Access::Read => "load from",
            Access::Write(_) => "store to",
            Access::Rmw(..) | Access::Cas(..) => "atomic on",
        };
        let thread = cx.tid_of((w * 32 + l) as u32);
        let e = match f {
            AccessFault::NoRegion(r) => InterpError::fault(
                FaultKind::OutOfBounds,
                format!("{verb} an invalid {} pointer (region {r}) at index {idx}", acc.space),
            )
            .at(inst.span, "invalid pointer"),
            AccessFault::OutOfBounds { region, byte } => {
                let r = region as usize - 1;
                let len = match acc.space {
                    AddrSpace::Global => cx.global.lens[r],
                    AddrSpace::Shared => cx.shared_lens[r],
                };
                InterpError::fault(
                    FaultKind::OutOfBounds,
                    format!("out-of-bounds {verb} {} at byte offset {byte}", Self::region_name(cx, acc, r)),
                )
                .at(inst.span, format!("index {idx} is out of bounds"))
                .with_note(format!(
                    "the region holds {len} bytes ({} elements of {}); the access needs bytes {byte}..{}",
                    len / acc.size as u64,
                    acc.elem,
                    byte + acc.size as i128
                ))
            }
            AccessFault::Misaligned { region, byte } => InterpError::fault(
                FaultKind::Misaligned,
                format!(
                    "misaligned {verb} {}: byte offset {byte} is not a multiple of {} ({})",
                    Self::region_name(cx, acc, region as usize - 1),
                    acc.size,
                    acc.elem
                ),
            )
            .at(inst.span, "misaligned access"),
        };
        e.in_thread(self.ctaid, thread)
    }

    /// The data race between this lane's access of `kind` and the earlier access `c` of another
    /// thread: both threads, both instructions (the other's when its site is known) and the
    /// location.
    #[allow(clippy::too_many_arguments)]
    fn race_error(
        &self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        span: Span,
        acc: &MemAccess,
        region: usize,
        byte: usize,
        kind: Kind,
        c: Conflict,
    ) -> InterpError {
        let elem = byte / acc.size as usize;
        let other_tid = tag::tid(c.other);
        let my_block =
            if acc.space == AddrSpace::Global { cx.global.race_base + self.linear + 1 } else { self.gen as u64 };
        let several_blocks = other_tid == tag::MULTI_BLOCKS;
        let same_block = !several_blocks && tag::block(c.other) == tag::block(tag::make(my_block, 0, 0));
        let who = if several_blocks {
            "threads of several blocks".to_string()
        } else if other_tid == tag::MULTI {
            "several other threads of this block".to_string()
        } else if same_block {
            format!("thread {} of this block", coords(cx.tid_of(other_tid as u32)))
        } else {
            let other_block = tag::block(c.other).wrapping_sub(1 + cx.global.race_base);
            format!("thread {} of block {}", coords(cx.tid_of(other_tid as u32)), coords(cx.ctaid_of(other_block)))
        };
        let other_did = match c.other_kind {
            Kind::Read => "read",
            Kind::Write => "wrote",
            Kind::Atomic => "updated",
        };
        let this_does = match kind {
            Kind::Read => "this thread reads it",
            Kind::Write => "this thread writes it",
            Kind::Atomic => "this thread's atomic updates it",
        };
        let atomically = if c.other_kind == Kind::Atomic { " atomically" } else { "" };
        let since =
            if same_block { "since the last barrier" } else { "in the same launch (blocks cannot synchronize)" };
        let mut e = InterpError::fault(
            FaultKind::DataRace,
            format!(
                "data race on {} element {elem} (byte {byte}): {this_does}, and {who} {other_did} it{atomically} {since}",
                Self::region_name(cx, acc, region),
            ),
        )
        .at(
            span,
            match kind {
                Kind::Read => "racing read",
                Kind::Write => "racing write",
                Kind::Atomic => "racing atomic",
            },
        )
        .in_thread(self.ctaid, cx.tid_of((w * 32 + l) as u32));
        if let Some(&(body, other_span)) = c.site.and_then(|s| cx.prog.race_sites.get(s as usize)) {
            let one = if other_tid == tag::MULTI || several_blocks { " (one of them)" } else { "" };
            let within = match cx.progs.get(body as usize) {
                Some(p) if body != 0 => format!(" in `@{}`", p.name),
                _ => String::new(),
            };
            e = if other_span == span {
                e.with_note(format!("{who} {other_did} it{atomically} with this same instruction{one}"))
            } else {
                e.with_label(other_span, format!("{who} {other_did} it{atomically} here{one}{within}"))
            };
        }
        let involves_atomic = kind == Kind::Atomic || c.other_kind == Kind::Atomic;
        match (involves_atomic, same_block) {
            (false, _) => e.with_note("separate the accesses with a barrier, or use atomics"),
            (true, true) => e
                .with_note("a plain access and an atomic to the same location race unless a barrier orders them (PTX memory model)")
                .with_note("separate them with a barrier, or make both atomic (read with `atom.add` of 0, write with `atom.exch`)"),
            (true, false) => e
                .with_note("a plain access and an atomic to the same location race unless a barrier orders them (PTX memory model), and no barrier orders two blocks")
                .with_note("make both atomic (read with `atom.add` of 0, write with `atom.exch`)"),
        }
    }
}

/// The lane lane `l` of a `shfl` in `mode` with lane/delta operand `b` reads: PTX's arithmetic for
/// width 32 (the operand's low 5 bits; `up`/`down` out of range read the own lane).
fn shfl_source(mode: ShflMode, l: usize, b: u64) -> usize {
    let (lane, b) = (l as i64, (b & 31) as i64);
    let j = match mode {
        ShflMode::Up => lane - b,
        ShflMode::Down => lane + b,
        ShflMode::Bfly => lane ^ b,
        ShflMode::Idx => b,
    };
    if (0..32).contains(&j) {
        j as usize
    } else {
        l
    }
}

/// `lanes 0..15`-style list of a mask.
fn lane_list(mask: u32) -> String {
    let mut parts = Vec::new();
    let mut l = 0;
    while l < 32 {
        if mask & (1 << l) != 0 {
            let s = l;
            while l + 1 < 32 && mask & (1 << (l + 1)) != 0 {
                l += 1;
            }
            parts.push(if s == l { format!("{s}") } else { format!("{s}..{l}") });
        }
        l += 1;
    }
    parts.join(", ")
}

/// `atom.add` of `v` to the value `old` in memory `space`, as the H100 computes it
/// (tests/hardware/h100/collectives, `atom_add_{f32,f64}_{g1,s1}`): round to nearest; integers wrap.
/// - f32 in global memory flushes subnormal operands and results to zero (`atom_add_f32_g1`:
///   `0x00400000 + 0x80000001` is `+0`); in shared memory it keeps them (`atom_add_f32_s1[14]`
///   is `0x003fffff`). A NaN result is the canonical `0x7fffffff` in both.
/// - f64: `inf + -inf` is `0xfff8000000000000`. In global memory a NaN operand is returned as it
///   is, not quieted, `v` before `old` (`atom_add_f64_g1`: `1e-323 + 0x7ff0000000000001` stays
///   `0x7ff0000000000001`); in shared memory it is quieted, `old` before `v` (`atom_add_f64_s1`:
///   `0x7ff00000000002a5 + 0x7ff4000000000000` is `0x7ff80000000002a5`).
fn atom_add(elem: ScalarType, space: AddrSpace, old: u64, v: u64) -> u64 {
    let global = space == AddrSpace::Global;
    if elem == ScalarType::F64 {
        let f = eval::Fmt::F64;
        let order = if global { [v, old] } else { [old, v] };
        if let Some(&n) = order.iter().find(|&&x| f.is_nan(x)) {
            return if global { n } else { n | f.quiet_bit() };
        }
    }
    let flags = FloatFlags { mode: FloatMode::Exact(Rounding::Rn), ftz: elem == ScalarType::F32 && global };
    eval::eval(&Op::Bin(BinOp::Add, elem, flags), &[old, v])
}

#[derive(Clone, Copy, Debug)]
enum Access {
    Read,
    Write(u64),
    Rmw(AtomicOp, u64),
    Cas(u64, u64),
}

impl Access {
    /// The access as messages name it (`read of shared ...`).
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "read of",
            Access::Write(_) => "write to",
            Access::Rmw(..) | Access::Cas(..) => "atomic on",
        }
    }

    /// What race detection sees of the access.
    fn race_kind(self) -> Kind {
        match self {
            Access::Read => Kind::Read,
            Access::Write(_) => Kind::Write,
            Access::Rmw(..) | Access::Cas(..) => Kind::Atomic,
        }
    }
}

/// The new value of an atomic read-modify-write in memory `space`; arithmetic comes from
/// `kir_ir::eval`.
fn rmw(elem: ScalarType, space: AddrSpace, kind: Access, old: u64) -> u64 {
    match kind {
        Access::Rmw(op, v) => match op {
            AtomicOp::Add => atom_add(elem, space, old, v),
            AtomicOp::Min => eval::eval(&Op::Bin(BinOp::Min, elem, FloatFlags::RN), &[old, v]),
            AtomicOp::Max => eval::eval(&Op::Bin(BinOp::Max, elem, FloatFlags::RN), &[old, v]),
            AtomicOp::Exch => v,
        },
        Access::Cas(cmp, new) => {
            if old == cmp {
                new
            } else {
                old
            }
        }
        Access::Read | Access::Write(_) => old,
    }
}

#[cfg(test)]
mod tests {
    use super::atom_add;
    use kir_ir::types::{AddrSpace, ScalarType as T};

    // Bit patterns from tests/hardware/h100/collectives: `a` after one `atom.add` per address,
    // `atom_add_{f32,f64}_{g1,s1}[i]` (g: global memory, s: shared).
    const G: AddrSpace = AddrSpace::Global;
    const S: AddrSpace = AddrSpace::Shared;

    #[test]
    fn f32_atom_add_flushes_subnormals_in_global_memory_only() {
        assert_eq!(atom_add(T::F32, G, 0x0040_0000, 0x8000_0001), 0, "atom_add_f32_g1[14]");
        assert_eq!(atom_add(T::F32, S, 0x0040_0000, 0x8000_0001), 0x003f_ffff, "atom_add_f32_s1[14]");
        assert_eq!(atom_add(T::F32, G, 0x8040_0000, 0x8080_0000), 0x8080_0000, "atom_add_f32_g1[25]");
        assert_eq!(atom_add(T::F32, S, 0x8040_0000, 0x8080_0000), 0x80c0_0000, "atom_add_f32_s1[25]");
        for sp in [G, S] {
            assert_eq!(atom_add(T::F32, sp, 0x7f80_0001, 0x8000_0000), 0x7fff_ffff, "atom_add_f32_*1[7]");
            assert_eq!(atom_add(T::F32, sp, 0xffc1_2345, 0x807f_ffff), 0x7fff_ffff, "atom_add_f32_*1[6]");
        }
    }

    #[test]
    fn f64_atom_add_nan_rules_differ_between_global_and_shared_memory() {
        // Global: the value's NaN before memory's, neither quieted.
        assert_eq!(atom_add(T::F64, G, 1, 0x7ff0_0000_0000_0001), 0x7ff0_0000_0000_0001, "atom_add_f64_g1[0]");
        assert_eq!(atom_add(T::F64, G, 0xfff7_ffff_ffff_ffff, 0xbfef_ffff_ffff_ffff), 0xfff7_ffff_ffff_ffff, "g1[3]");
        assert_eq!(atom_add(T::F64, G, 0xfff8_0000_0001_2345, 0xfff7_ffff_ffff_ffff), 0xfff7_ffff_ffff_ffff, "g1[8]");
        assert_eq!(atom_add(T::F64, G, 0x7ff0_0000_0000_02a5, 0x7ff4_0000_0000_0000), 0x7ff4_0000_0000_0000, "g1[62]");
        // Shared: memory's NaN before the value's, quieted.
        assert_eq!(atom_add(T::F64, S, 1, 0x7ff0_0000_0000_0001), 0x7ff8_0000_0000_0001, "atom_add_f64_s1[0]");
        assert_eq!(atom_add(T::F64, S, 0xfff7_ffff_ffff_ffff, 0xbfef_ffff_ffff_ffff), 0xffff_ffff_ffff_ffff, "s1[3]");
        assert_eq!(atom_add(T::F64, S, 0xfff8_0000_0001_2345, 0xfff7_ffff_ffff_ffff), 0xfff8_0000_0001_2345, "s1[8]");
        assert_eq!(atom_add(T::F64, S, 0x7ff0_0000_0000_02a5, 0x7ff4_0000_0000_0000), 0x7ff8_0000_0000_02a5, "s1[62]");
        // inf + -inf: the default NaN in both.
        for sp in [G, S] {
            assert_eq!(
                atom_add(T::F64, sp, 0xfff0_0000_0000_0000, 0x7ff0_0000_0000_0000),
                0xfff8_0000_0000_0000,
                "[2882]"
            );
            assert_eq!(atom_add(T::F64, sp, 0x3ff0_0000_0000_0000, 0x3ff0_0000_0000_0000), 0x4000_0000_0000_0000);
        }
    }

    #[test]
    fn integer_atom_add_wraps() {
        assert_eq!(atom_add(T::U32, G, 0xffff_ffff, 2), 1);
        assert_eq!(atom_add(T::S64, S, u64::MAX, 1), 0);
    }
}
