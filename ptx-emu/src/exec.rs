//! The executor: blocks of warps of 32 lanes running decoded instructions in lockstep.
//!
//! Per warp, a reconvergence stack of frames `(pc, mask, rpc)`: the top frame runs; a branch on
//! which its lanes disagree turns the top frame into the reconvergence frame (pc = the branch's
//! immediate post-dominator) and pushes one frame per side; a frame that reaches its rpc is popped,
//! so its lanes continue in the frame below. Lanes that exit leave every frame.
//!
//! Within a block, warps run in index order, each until it waits at `bar.sync` or exits; when
//! every warp that has not exited waits, the barrier is checked (same instruction, every
//! non-exited lane) and released. A named barrier (`bar.sync N, count`, `bar.arrive`) counts 32
//! arrivals per warp and releases its waiting warps when the count is reached; a warp waiting at
//! one when no warp can run any more is a deadlock fault. Nothing here panics on any input: faults are `EmuError`s with
//! the PTX line, the instruction text, the block and the thread.

use crate::float::{self, Arith, FTy, Rnd};
use crate::int;
use crate::order::{self, F64OperandOrder};
use crate::prog::*;
use crate::tensor_core::{Format, TensorCores};
use crate::{EmuError, FaultKind, LaunchConfig, Stats};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};

/// Generic addresses of shared memory: `SHARED_WINDOW + offset`.
pub const SHARED_WINDOW: u64 = 0x7000_0000_0000;
/// Generic addresses of local memory: `LOCAL_WINDOW + offset` (of the executing thread).
pub const LOCAL_WINDOW: u64 = 0x7800_0000_0000;
/// Generic addresses of constant memory: `CONST_WINDOW + offset` (`cvta.const`).
pub const CONST_WINDOW: u64 = 0x7400_0000_0000;
const WINDOW_SIZE: u64 = 1 << 32;

/// One global buffer as the executor sees it.
pub struct Region {
    pub start: u64,
    pub len: u64,
    pub ptr: *mut u8,
    pub name: String,
}

/// Global memory during a launch: raw views of the buffers, accessed with atomics of the access
/// size (every access is naturally aligned, and host storage is 8-byte aligned).
pub struct GlobalView {
    pub regions: Vec<Region>,
}

// SAFETY: the regions point into buffers that outlive the launch (borrowed mutably by `launch`);
// all accesses through them are atomic.
unsafe impl Send for GlobalView {}
unsafe impl Sync for GlobalView {}

impl GlobalView {
    fn find(&self, addr: u64) -> Option<&Region> {
        let i = self.regions.partition_point(|r| r.start <= addr);
        let r = self.regions.get(i.checked_sub(1)?)?;
        (addr - r.start < r.len).then_some(r)
    }

    fn describe_miss(&self, addr: u64, size: u32) -> String {
        let i = self.regions.partition_point(|r| r.start <= addr);
        if let Some(r) = i.checked_sub(1).and_then(|j| self.regions.get(j)) {
            if addr < r.start + r.len {
                return format!(
                    "global address 0x{addr:x}: {size} bytes at byte offset {} run past the end of buffer `{}` ({} bytes)",
                    addr - r.start,
                    r.name,
                    r.len
                );
            }
            return format!(
                "global address 0x{addr:x} is {} bytes past the end of buffer `{}` ({} bytes)",
                addr - (r.start + r.len),
                r.name,
                r.len
            );
        }
        if let Some(r) = self.regions.first() {
            if addr < r.start {
                return format!(
                    "global address 0x{addr:x} is below every buffer (the lowest, `{}`, starts at 0x{:x})",
                    r.name, r.start
                );
            }
        }
        format!("global address 0x{addr:x} is in no buffer")
    }
}

pub struct LaunchCtx<'a> {
    pub k: &'a Kernel,
    pub cfg: LaunchConfig,
    pub params: Vec<u8>,
    pub global: GlobalView,
    /// Bytes of shared memory per block (static + dynamic).
    pub shared_bytes: u32,
    pub fuel: u64,
    /// Instructions one warp may execute in one block.
    pub warp_fuel: u64,
    /// The order of f64 instructions' commutative operands ([`crate::order`]).
    pub f64_order: F64OperandOrder,
    /// Whose arithmetic `mma.sync` and `wgmma` compute ([`crate::tensor_core`]).
    pub tensor_cores: TensorCores,
    pub fuel_used: AtomicU64,
    /// Lowest index of a block that failed so far: blocks above it stop early.
    pub first_fail: AtomicU64,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    pc: u32,
    mask: u32,
    rpc: u32,
}

#[derive(Clone, Debug, Default)]
struct Warp {
    stack: Vec<Frame>,
    /// Lanes that exist in this warp (the last warp of a block may be partial).
    live: u32,
    exited: u32,
    /// The barrier instruction this warp waits at (`bar.sync 0` without a thread count).
    waiting: Option<u32>,
    /// The named barrier (with its instruction) this warp waits at (`bar.sync N, count`, or any
    /// `bar.sync` with a thread count).
    named_wait: Option<(u8, u32)>,
    /// Instructions this warp has executed in the current block (for `warp_fuel`).
    steps: u64,
    /// A `wgmma.fence` was executed since the last `wgmma.wait_group`.
    wgmma_fenced: bool,
}

enum Stop {
    Done,
    Barrier,
}

/// One of a block's 16 named barriers: threads arrived so far (counted per warp, 32 each, as
/// PTX counts them), the thread count they arrive for, and the instruction of the first arrival.
#[derive(Clone, Copy, Debug, Default)]
struct NamedBar {
    arrived: u32,
    expected: u32,
    first_pc: u32,
}

/// A `cp.async` whose bytes are in flight until its thread waits for its group: the copy is done
/// when issued, and any read of its destination before the wait is a fault.
#[derive(Clone, Copy, Debug)]
struct AsyncCopy {
    /// Linear thread index in the block.
    thread: u32,
    /// The thread's group it was committed in (`None`: not committed yet).
    group: Option<u32>,
    dst: u32,
    len: u32,
    pc: u32,
}

/// Per host thread state, reused across blocks.
pub struct Worker {
    named: [NamedBar; 16],
    /// `cp.async` copies in flight, and per thread the number of groups it committed.
    copies: Vec<AsyncCopy>,
    groups: Vec<u32>,
    regs: Vec<u64>,
    shared: Vec<u64>,
    local: Vec<u64>,
    warps: Vec<Warp>,
    nregs: usize,
    block: [u32; 3],
    linear: u64,
    fuel_local: u64,
    /// The global buffer of the last access (most accesses of an instruction hit the same one).
    last_region: std::cell::Cell<usize>,
    pub stats: Stats,
}

enum Access {
    Global(*mut u8),
    Shared(usize),
    Local(usize),
    Param(usize),
    /// An offset of the module's constant memory (read-only).
    Const(usize),
}

impl Worker {
    pub fn new(cx: &LaunchCtx) -> Result<Worker, EmuError> {
        let nthreads = cx.cfg.block.iter().map(|&d| d as usize).product::<usize>();
        let nwarps = nthreads.div_ceil(32);
        let nregs = cx.k.nregs as usize;
        let reg_words = nwarps * nregs * 32;
        if reg_words > (64 << 20) / 8 {
            return Err(EmuError::invalid(format!(
                "the register file of one block ({nregs} registers x {nthreads} threads) exceeds 64 MiB"
            )));
        }
        let local_bytes = cx.k.local_bytes as usize * nthreads;
        if local_bytes > 256 << 20 {
            return Err(EmuError::invalid("local memory of one block exceeds 256 MiB"));
        }
        Ok(Worker {
            named: [NamedBar::default(); 16],
            copies: Vec::new(),
            groups: vec![0; nwarps * 32],
            regs: vec![0; reg_words],
            shared: vec![0; (cx.shared_bytes as usize).div_ceil(8)],
            local: vec![0; local_bytes.div_ceil(8)],
            warps: vec![Warp::default(); nwarps],
            nregs,
            block: [0; 3],
            linear: 0,
            fuel_local: 0,
            last_region: std::cell::Cell::new(0),
            stats: Stats::default(),
        })
    }

    #[inline]
    fn ri(&self, w: usize, r: RegId, lane: u32) -> usize {
        (w * self.nregs + r as usize) * 32 + lane as usize
    }

    fn tid(&self, cx: &LaunchCtx, w: usize, lane: u32) -> [u32; 3] {
        let t = (w as u32) * 32 + lane;
        let [bx, by, _] = cx.cfg.block;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }

    #[inline(never)]
    fn sreg(&self, cx: &LaunchCtx, s: Sreg, w: usize, lane: u32) -> u64 {
        let d = |i: u8| i as usize;
        (match s {
            Sreg::Tid(i) => self.tid(cx, w, lane)[d(i)],
            Sreg::Ntid(i) => cx.cfg.block[d(i)],
            Sreg::Ctaid(i) => self.block[d(i)],
            Sreg::Nctaid(i) => cx.cfg.grid[d(i)],
            Sreg::Laneid => lane,
            Sreg::Warpid => w as u32,
            Sreg::Nwarpid => self.warps.len() as u32,
            Sreg::LanemaskEq => 1 << lane,
            Sreg::LanemaskLt => (1u32 << lane) - 1,
            Sreg::LanemaskLe => ((1u64 << (lane + 1)) - 1) as u32,
            Sreg::LanemaskGt => !(((1u64 << (lane + 1)) - 1) as u32),
            Sreg::LanemaskGe => !((1u32 << lane) - 1),
            Sreg::Clock | Sreg::Smid | Sreg::Gridid => 0,
            Sreg::Clock64 => return self.stats.warp_instructions,
            Sreg::Nsmid => 1,
            Sreg::DynamicSmemSize => cx.cfg.dynamic_shared_bytes,
            Sreg::TotalSmemSize => cx.shared_bytes,
        }) as u64
    }

    #[inline(always)]
    fn rd(&self, cx: &LaunchCtx, s: Src, w: usize, lane: u32) -> u64 {
        match s {
            Src::Reg(r) => self.regs[self.ri(w, r, lane)],
            Src::Imm(v) => v,
            Src::Sreg(sr) => self.sreg(cx, sr, w, lane),
            Src::None => 0,
        }
    }

    /// A source for the whole warp, one value per lane.
    #[inline(always)]
    fn fetch(&self, cx: &LaunchCtx, s: Src, w: usize) -> [u64; 32] {
        match s {
            Src::Reg(r) => {
                let i = self.ri(w, r, 0);
                let mut out = [0u64; 32];
                out.copy_from_slice(&self.regs[i..i + 32]);
                out
            }
            Src::Imm(v) => [v; 32],
            Src::Sreg(sr) => self.sreg_row(cx, sr, w),
            Src::None => [0; 32],
        }
    }

    /// A special register for the whole warp: uniform ones once, `%tid` without a division per
    /// lane.
    #[inline(never)]
    fn sreg_row(&self, cx: &LaunchCtx, sr: Sreg, w: usize) -> [u64; 32] {
        match sr {
            Sreg::Tid(d) => {
                let [bx, by, _] = cx.cfg.block;
                let mut t = self.tid(cx, w, 0);
                let mut out = [0u64; 32];
                for o in out.iter_mut() {
                    *o = t[d as usize] as u64;
                    t[0] += 1;
                    if t[0] == bx {
                        t[0] = 0;
                        t[1] += 1;
                        if t[1] == by {
                            t[1] = 0;
                            t[2] += 1;
                        }
                    }
                }
                out
            }
            Sreg::Laneid
            | Sreg::LanemaskEq
            | Sreg::LanemaskLt
            | Sreg::LanemaskLe
            | Sreg::LanemaskGt
            | Sreg::LanemaskGe => std::array::from_fn(|l| self.sreg(cx, sr, w, l as u32)),
            _ => [self.sreg(cx, sr, w, 0); 32],
        }
    }

    /// Writes the executing lanes of a whole-warp result.
    #[inline(always)]
    fn put(&mut self, w: usize, d: RegId, exec: u32, v: &[u64; 32]) {
        if d == NO_REG {
            return;
        }
        let i = self.ri(w, d, 0);
        let row = &mut self.regs[i..i + 32];
        if exec == u32::MAX {
            row.copy_from_slice(v);
        } else {
            let mut m = exec;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                row[l] = v[l];
            }
        }
    }

    #[inline]
    fn wr(&mut self, w: usize, d: RegId, lane: u32, v: u64) {
        if d != NO_REG {
            let i = self.ri(w, d, lane);
            self.regs[i] = v;
        }
    }

    fn fault(&self, cx: &LaunchCtx, kind: FaultKind, pc: u32, w: usize, lane: u32, msg: impl Into<String>) -> EmuError {
        let mut e = EmuError::fault(kind, msg);
        if let Some(i) = cx.k.insts.get(pc as usize) {
            e.line = Some(i.line);
            e.instruction = cx.k.texts.get(pc as usize).cloned();
        }
        e.block = Some(self.block);
        e.thread = Some(self.tid(cx, w, lane));
        e
    }

    /// Runs block `linear` to completion.
    pub fn run_block(&mut self, cx: &LaunchCtx, linear: u64) -> Result<(), EmuError> {
        let [gx, gy, _] = cx.cfg.grid;
        let (gx, gy) = (gx as u64, gy as u64);
        self.linear = linear;
        self.block = [(linear % gx) as u32, ((linear / gx) % gy) as u32, (linear / (gx * gy)) as u32];
        let nthreads: u32 = cx.cfg.block.iter().product();
        // Registers start at zero (PTX leaves them undefined): only those some path may read
        // before writing need clearing; the others are always written first.
        match &cx.k.clear_regs {
            None => self.regs.fill(0),
            Some(regs) => {
                for w in 0..self.warps.len() {
                    for &r in regs {
                        let i = self.ri(w, r, 0);
                        self.regs[i..i + 32].fill(0);
                    }
                }
            }
        }
        // Shared memory starts as all-ones bytes: never-written data reads as NaN / -1.
        self.shared.fill(u64::MAX);
        self.local.fill(0);
        let nw = self.warps.len();
        for (w, warp) in self.warps.iter_mut().enumerate() {
            let lanes = (nthreads - w as u32 * 32).min(32);
            let live = if lanes == 32 { u32::MAX } else { (1u32 << lanes) - 1 };
            warp.stack.clear();
            warp.stack.push(Frame { pc: 0, mask: live, rpc: NO_PC });
            warp.live = live;
            warp.exited = 0;
            warp.waiting = None;
            warp.named_wait = None;
            warp.steps = 0;
            warp.wgmma_fenced = false;
        }
        self.named = [NamedBar::default(); 16];
        self.copies.clear();
        self.groups.fill(0);
        self.stats.blocks += 1;
        self.stats.threads += nthreads as u64;
        loop {
            let mut progressed = false;
            for w in 0..nw {
                let warp = &self.warps[w];
                if warp.waiting.is_some() || warp.named_wait.is_some() || warp.stack.is_empty() {
                    continue;
                }
                progressed = true;
                match self.run_warp(cx, w)? {
                    Stop::Done => self.warps[w].stack.clear(),
                    Stop::Barrier => {}
                }
            }
            // A warp waiting at a named barrier that no running warp can fill any more: deadlock.
            let stuck = (0..nw).find(|&w| self.warps[w].named_wait.is_some());
            let Some(w0) = (0..nw).find(|&w| self.warps[w].waiting.is_some()) else {
                if let (Some(ws), false) = (stuck, progressed) {
                    return Err(self.named_deadlock(cx, ws, "every other warp has exited or waits elsewhere"));
                }
                if !progressed || self.warps.iter().all(|w| w.stack.is_empty()) {
                    return Ok(());
                }
                continue;
            };
            if let Some(ws) = stuck {
                let l0 = cx.k.insts.get(self.warps[w0].waiting.unwrap_or(0) as usize).map_or(0, |i| i.line);
                return Err(self.named_deadlock(
                    cx,
                    ws,
                    &format!("warp {w0} waits at the block-wide `bar.sync 0` (PTX line {l0}) instead"),
                ));
            }
            // Every warp that has not exited waits at a barrier: release it, if it is one barrier.
            let pc0 = self.warps[w0].waiting.expect("waiting");
            if let Some(w2) = (w0..nw).find(|&w| self.warps[w].waiting.is_some_and(|p| p != pc0)) {
                let pc2 = self.warps[w2].waiting.expect("waiting");
                let l2 = cx.k.insts[pc2 as usize].line;
                let lane = self.warps[w2].live.trailing_zeros();
                return Err(self.fault(
                    cx,
                    FaultKind::BarrierDivergence,
                    pc0,
                    w0,
                    self.warps[w0].live.trailing_zeros(),
                    format!(
                        "warps wait at different barriers: warp {w0} here, warp {w2} (thread {:?}) at PTX line {l2}",
                        self.tid(cx, w2, lane)
                    ),
                ));
            }
            for warp in self.warps.iter_mut().filter(|w| w.waiting.is_some()) {
                warp.waiting = None;
                if let Some(top) = warp.stack.last_mut() {
                    top.pc = pc0 + 1;
                }
            }
            self.stats.barriers += 1;
        }
    }

    /// A warp arrives at named barrier `id` (`bar.sync`/`bar.arrive` with an id other than 0 or a
    /// thread count). Every lane of the barrier must read the same id and count; the count is a
    /// multiple of 32 (default: the block's threads, rounded up to whole warps); a warp counts 32
    /// arrivals. When the count is reached every waiting warp is released. True when this warp
    /// must wait (a `bar.sync` that did not complete the barrier).
    #[allow(clippy::too_many_arguments)]
    fn named_barrier(
        &mut self,
        cx: &LaunchCtx,
        inst: &Inst,
        pc: u32,
        w: usize,
        exec: u32,
        id: u64,
        counted: bool,
        arrive: bool,
    ) -> Result<bool, EmuError> {
        let lane = exec.trailing_zeros().min(31);
        let what = if arrive { "bar.arrive" } else { "bar.sync" };
        let nthreads: u32 = cx.cfg.block.iter().product();
        let all = nthreads.div_ceil(32) * 32;
        let count = if counted { self.rd(cx, inst.src[1], w, lane) } else { all as u64 };
        let mut l = exec;
        while l != 0 {
            let x = l.trailing_zeros();
            l &= l - 1;
            let (i2, c2) =
                (self.rd(cx, inst.src[0], w, x), if counted { self.rd(cx, inst.src[1], w, x) } else { count });
            if (i2 & 0xffff_ffff) != (id & 0xffff_ffff) || (c2 & 0xffff_ffff) != (count & 0xffff_ffff) {
                return Err(self.fault(
                    cx,
                    FaultKind::BarrierDivergence,
                    pc,
                    w,
                    x,
                    format!("lanes {lane} and {x} of warp {w} give `{what}` different barriers or thread counts"),
                ));
            }
        }
        let (id, count) = ((id & 0xffff_ffff) as u32, (count & 0xffff_ffff) as u32);
        if id > 15 {
            return Err(self.fault(
                cx,
                FaultKind::BarrierDivergence,
                pc,
                w,
                lane,
                format!("`{what}` names barrier {id}; a block has barriers 0..15"),
            ));
        }
        if count == 0 || count % 32 != 0 || count > all {
            return Err(self.fault(
                cx,
                FaultKind::BarrierDivergence,
                pc,
                w,
                lane,
                format!(
                    "`{what}` {id} with thread count {count}: the count must be a positive multiple of 32 and at most \
                     the block's {all} threads (whole warps)"
                ),
            ));
        }
        let b = &mut self.named[id as usize];
        if b.arrived > 0 && b.expected != count {
            let l1 = cx.k.insts.get(b.first_pc as usize).map_or(0, |i| i.line);
            let expected = b.expected;
            return Err(self.fault(
                cx,
                FaultKind::BarrierDivergence,
                pc,
                w,
                lane,
                format!(
                    "`{what}` {id} with thread count {count} while barrier {id} is filling for {expected} threads (first \
                     arrival at PTX line {l1})"
                ),
            ));
        }
        if b.arrived == 0 {
            b.expected = count;
            b.first_pc = pc;
        }
        b.arrived += 32;
        if b.arrived >= b.expected {
            *b = NamedBar::default();
            self.stats.barriers += 1;
            for warp in self.warps.iter_mut() {
                if warp.named_wait.is_some_and(|(i, _)| i as u32 == id) {
                    let (_, at) = warp.named_wait.take().expect("waiting");
                    if let Some(top) = warp.stack.last_mut() {
                        top.pc = at + 1;
                    }
                }
            }
            return Ok(false);
        }
        if arrive {
            return Ok(false);
        }
        self.warps[w].named_wait = Some((id as u8, pc));
        Ok(true)
    }

    /// The fault for warp `w` waiting at a named barrier that can no longer fill.
    fn named_deadlock(&self, cx: &LaunchCtx, w: usize, why: &str) -> EmuError {
        let (id, pc) = self.warps[w].named_wait.unwrap_or((0, 0));
        let b = self.named[id as usize];
        let lane = self.warps[w].live.trailing_zeros().min(31);
        self.fault(
            cx,
            FaultKind::BarrierDivergence,
            pc,
            w,
            lane,
            format!(
                "deadlock: warp {w} waits at named barrier {id}, which has {} of its {} threads and can get no more: {why}",
                b.arrived, b.expected
            ),
        )
    }

    fn charge(&mut self, cx: &LaunchCtx, n: u32, pc: u32, w: usize, lane: u32) -> Result<(), EmuError> {
        self.fuel_local += n as u64;
        self.stats.thread_instructions += n as u64;
        self.stats.warp_instructions += 1;
        self.warps[w].steps += 1;
        if self.warps[w].steps > cx.warp_fuel {
            return Err(self.fault(
                cx,
                FaultKind::FuelExhausted,
                pc,
                w,
                lane,
                format!("warp {w} of the block executed more than {} instructions (an endless loop?)", cx.warp_fuel),
            ));
        }
        if self.fuel_local >= 1 << 16 {
            let used = cx.fuel_used.fetch_add(self.fuel_local, Relaxed) + self.fuel_local;
            self.fuel_local = 0;
            if used > cx.fuel {
                return Err(self.fault(
                    cx,
                    FaultKind::FuelExhausted,
                    pc,
                    w,
                    lane,
                    format!("the launch executed more than {} thread-instructions (an endless loop?)", cx.fuel),
                ));
            }
            if cx.first_fail.load(Relaxed) < self.linear {
                return Err(EmuError::invalid("aborted: a lower block faulted"));
            }
        }
        Ok(())
    }

    /// Flushes the local fuel count (at the end of a block) and checks the limit.
    pub fn settle_fuel(&mut self, cx: &LaunchCtx) -> Result<(), EmuError> {
        let used = cx.fuel_used.fetch_add(self.fuel_local, Relaxed) + self.fuel_local;
        self.fuel_local = 0;
        if used > cx.fuel {
            let mut e = EmuError::fault(
                FaultKind::FuelExhausted,
                format!("the launch executed more than {} thread-instructions", cx.fuel),
            );
            e.block = Some(self.block);
            return Err(e);
        }
        Ok(())
    }

    fn run_warp(&mut self, cx: &LaunchCtx, w: usize) -> Result<Stop, EmuError> {
        let k = cx.k;
        // The top frame lives in `cached` while straight-line instructions run; it is written
        // back to the stack before anything that reads or changes the stack.
        let mut cached: Option<Frame> = None;
        loop {
            let top = match cached {
                Some(f) if f.pc != f.rpc => f,
                _ => {
                    if let Some(f) = cached.take() {
                        if let Some(t) = self.warps[w].stack.last_mut() {
                            t.pc = f.pc;
                        }
                    }
                    let Some(top) = self.warps[w].stack.last().copied() else { return Ok(Stop::Done) };
                    if top.mask == 0 || top.pc == top.rpc {
                        self.warps[w].stack.pop();
                        continue;
                    }
                    top
                }
            };
            let pc = top.pc;
            let Some(inst) = k.insts.get(pc as usize) else {
                return Err(self.fault(
                    cx,
                    FaultKind::Trap,
                    pc.saturating_sub(1),
                    w,
                    top.mask.trailing_zeros(),
                    "execution ran past the last instruction",
                ));
            };
            let active = top.mask;
            let exec = match inst.guard {
                None => active,
                Some((g, neg)) => {
                    let mut m = 0u32;
                    let mut a = active;
                    while a != 0 {
                        let l = a.trailing_zeros();
                        a &= a - 1;
                        if (self.regs[self.ri(w, g, l)] & 1 == 1) != neg {
                            m |= 1 << l;
                        }
                    }
                    m
                }
            };
            self.charge(cx, active.count_ones(), pc, w, active.trailing_zeros())?;
            if !matches!(inst.op, Op::Bra { .. } | Op::Exit | Op::Bar { .. } | Op::Trap) {
                if exec != 0 {
                    self.exec(cx, inst, pc, w, exec)?;
                }
                cached = Some(Frame { pc: pc + 1, ..top });
                continue;
            }
            // Control flow: the stack is authoritative again.
            cached = None;
            if let Some(t) = self.warps[w].stack.last_mut() {
                t.pc = pc;
            }
            match inst.op {
                Op::Bra { target, .. } => {
                    let not = active & !exec;
                    let st = &mut self.warps[w].stack;
                    let topm = st.last_mut().expect("top");
                    if exec == 0 {
                        topm.pc = pc + 1;
                    } else if not == 0 {
                        topm.pc = target;
                    } else {
                        let r = k.reconverge[pc as usize];
                        if r == NO_PC || r == topm.rpc {
                            let rpc = topm.rpc;
                            *topm = Frame { pc: pc + 1, mask: not, rpc };
                            st.push(Frame { pc: target, mask: exec, rpc });
                        } else {
                            topm.pc = r;
                            st.push(Frame { pc: pc + 1, mask: not, rpc: r });
                            st.push(Frame { pc: target, mask: exec, rpc: r });
                        }
                    }
                    continue;
                }
                Op::Exit => {
                    let warp = &mut self.warps[w];
                    warp.exited |= exec;
                    for f in warp.stack.iter_mut() {
                        f.mask &= !exec;
                    }
                    if let Some(t) = warp.stack.last_mut() {
                        t.pc = pc + 1;
                    }
                    if warp.exited & warp.live == warp.live {
                        return Ok(Stop::Done);
                    }
                    continue;
                }
                Op::Bar { arrive, counted } => {
                    let warp = &self.warps[w];
                    let need = warp.live & !warp.exited;
                    if exec != need {
                        let missing = need & !exec;
                        let lane = missing.trailing_zeros();
                        return Err(self.fault(
                            cx,
                            FaultKind::BarrierDivergence,
                            pc,
                            w,
                            exec.trailing_zeros().min(31),
                            format!(
                                "`bar.sync` reached by lanes {} of warp {w} while lane {lane} (thread {:?}), which has not exited, does not execute it (a barrier must be reached by every non-exited thread of the block)",
                                lanes_text(exec),
                                self.tid(cx, w, lane)
                            ),
                        ));
                    }
                    let lane = exec.trailing_zeros().min(31);
                    let id = self.rd(cx, inst.src[0], w, lane);
                    if id == 0 && !counted && !arrive {
                        self.warps[w].waiting = Some(pc);
                        return Ok(Stop::Barrier);
                    }
                    if self.named_barrier(cx, inst, pc, w, exec, id, counted, arrive)? {
                        return Ok(Stop::Barrier);
                    }
                    if let Some(t) = self.warps[w].stack.last_mut() {
                        t.pc = pc + 1;
                    }
                    continue;
                }
                Op::Trap => {
                    if exec != 0 {
                        return Err(self.fault(cx, FaultKind::Trap, pc, w, exec.trailing_zeros(), "`trap` executed"));
                    }
                }
                _ => {
                    if exec != 0 {
                        self.exec(cx, inst, pc, w, exec)?;
                    }
                }
            }
            if let Some(t) = self.warps[w].stack.last_mut() {
                t.pc = pc + 1;
            }
        }
    }

    /// For a global (or generic) access of `size` bytes by every executing lane: when all of
    /// them are aligned and fall in one buffer, the host pointer of that buffer's first byte and
    /// each lane's offset in it.
    #[inline(always)]
    fn warp_region(&self, cx: &LaunchCtx, inst: &Inst, w: usize, exec: u32, size: u32) -> Option<(*mut u8, [u64; 32])> {
        let mut addrs = [0u64; 32];
        match inst.base {
            Some(r) => {
                let i = self.ri(w, r, 0);
                for (a, &b) in addrs.iter_mut().zip(&self.regs[i..i + 32]) {
                    *a = b.wrapping_add(inst.offset as u64);
                }
            }
            None => addrs = [inst.offset as u64; 32],
        }
        let (mut lo, mut hi, mut or) = (u64::MAX, 0u64, 0u64);
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            lo = lo.min(addrs[l]);
            hi = hi.max(addrs[l]);
            or |= addrs[l];
        }
        if or & (size as u64 - 1) != 0 || hi >= SHARED_WINDOW {
            return None;
        }
        let inside = |r: &&Region| lo >= r.start && hi.saturating_add(size as u64) <= r.start + r.len;
        let r = cx.global.regions.get(self.last_region.get()).filter(inside).or_else(|| {
            let i = cx.global.regions.partition_point(|r| r.start <= lo).checked_sub(1)?;
            self.last_region.set(i);
            cx.global.regions.get(i).filter(inside)
        })?;
        for a in addrs.iter_mut() {
            *a = a.wrapping_sub(r.start);
        }
        Some((r.ptr, addrs))
    }

    /// For a shared access of `size` bytes by every executing lane: when all are aligned and in
    /// bounds, each lane's offset.
    #[inline(always)]
    fn warp_shared(&self, cx: &LaunchCtx, inst: &Inst, w: usize, exec: u32, size: u32) -> Option<[u64; 32]> {
        if !self.copies.is_empty() {
            // Bytes of a `cp.async` in flight: every read takes the checked path.
            return None;
        }
        let mut addrs = [inst.offset as u64; 32];
        if let Some(r) = inst.base {
            let i = self.ri(w, r, 0);
            for (a, &b) in addrs.iter_mut().zip(&self.regs[i..i + 32]) {
                *a = b.wrapping_add(inst.offset as u64);
            }
        }
        let (mut hi, mut or) = (0u64, 0u64);
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            hi = hi.max(addrs[l]);
            or |= addrs[l];
        }
        (or & (size as u64 - 1) == 0 && hi.checked_add(size as u64)? <= cx.shared_bytes as u64).then_some(addrs)
    }

    /// The common case of [`Worker::access`] without building any message: an aligned access
    /// inside the last global buffer hit, or inside shared memory. `None`: take the full path.
    #[inline(always)]
    fn access_fast(&self, cx: &LaunchCtx, space: Space, addr: u64, size: u32, align: u32) -> Option<Access> {
        if addr & (align as u64 - 1) != 0 {
            return None;
        }
        match space {
            Space::Global | Space::Generic if addr < SHARED_WINDOW => {
                let r = cx.global.regions.get(self.last_region.get())?;
                let off = addr.wrapping_sub(r.start);
                if off < r.len && off + size as u64 <= r.len {
                    // SAFETY: inside the region, which stays valid for the launch.
                    return Some(Access::Global(unsafe { r.ptr.add(off as usize) }));
                }
                let i = cx.global.regions.partition_point(|r| r.start <= addr).checked_sub(1)?;
                let r = &cx.global.regions[i];
                let off = addr - r.start;
                if off + size as u64 <= r.len {
                    self.last_region.set(i);
                    // SAFETY: as above.
                    return Some(Access::Global(unsafe { r.ptr.add(off as usize) }));
                }
                None
            }
            Space::Shared if addr.saturating_add(size as u64) <= cx.shared_bytes as u64 => {
                Some(Access::Shared(addr as usize))
            }
            Space::Param if addr.saturating_add(size as u64) <= cx.params.len() as u64 => {
                Some(Access::Param(addr as usize))
            }
            Space::Const if addr.saturating_add(size as u64) <= cx.k.consts.bytes.len() as u64 => {
                Some(Access::Const(addr as usize))
            }
            _ => None,
        }
    }

    /// Resolves an address for `lane`: the state space, bounds and alignment checks.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn access(
        &self,
        cx: &LaunchCtx,
        space: Space,
        addr: u64,
        size: u32,
        align: u32,
        store: bool,
        pc: u32,
        w: usize,
        lane: u32,
    ) -> Result<Access, EmuError> {
        let acc = match self.access_fast(cx, space, addr, size, align) {
            Some(a) => a,
            None => self.access_slow(cx, space, addr, size, align, store, pc, w, lane)?,
        };
        if let (Access::Shared(off), false) = (&acc, self.copies.is_empty()) {
            self.check_in_flight(cx, *off as u32, size, store, pc, w, lane)?;
        }
        Ok(acc)
    }

    /// A shared access overlapping the destination of a `cp.async` whose group has not been
    /// waited for is a fault: the copy may still be writing those bytes.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn check_in_flight(
        &self,
        cx: &LaunchCtx,
        off: u32,
        size: u32,
        store: bool,
        pc: u32,
        w: usize,
        lane: u32,
    ) -> Result<(), EmuError> {
        let Some(c) = self.copies.iter().find(|c| off < c.dst + c.len && c.dst < off + size) else { return Ok(()) };
        let line = cx.k.insts.get(c.pc as usize).map_or(0, |i| i.line);
        let writer = self.tid(cx, (c.thread / 32) as usize, c.thread % 32);
        Err(self.fault(
            cx,
            FaultKind::AsyncCopyInFlight,
            pc,
            w,
            lane,
            format!(
                "{} of shared bytes {}..{} while the `cp.async` of thread {writer:?} (PTX line {line}) may still be writing them: \
                 that thread must wait for the copy's group (`cp.async.wait_group`) and the block synchronise before they are used",
                if store { "store" } else { "load" },
                off,
                off + size
            ),
        ))
    }

    /// [`Worker::access`] with every check and the fault messages.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn access_slow(
        &self,
        cx: &LaunchCtx,
        space: Space,
        addr: u64,
        size: u32,
        align: u32,
        store: bool,
        pc: u32,
        w: usize,
        lane: u32,
    ) -> Result<Access, EmuError> {
        let what = if store { "store" } else { "load" };
        if addr % align as u64 != 0 {
            return Err(self.fault(
                cx,
                FaultKind::Misaligned,
                pc,
                w,
                lane,
                format!(
                    "misaligned {what} of {size} bytes at {} address 0x{addr:x} (needs {align}-byte alignment)",
                    space.name()
                ),
            ));
        }
        let (space, a) = match space {
            Space::Generic if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_SIZE).contains(&addr) => {
                (Space::Shared, addr - SHARED_WINDOW)
            }
            Space::Generic if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_SIZE).contains(&addr) => {
                (Space::Local, addr - LOCAL_WINDOW)
            }
            Space::Generic if (CONST_WINDOW..CONST_WINDOW + WINDOW_SIZE).contains(&addr) => {
                (Space::Const, addr - CONST_WINDOW)
            }
            Space::Generic => (Space::Global, addr),
            s => (s, addr),
        };
        let oob =
            |m: String| Err(self.fault(cx, FaultKind::OutOfBounds, pc, w, lane, format!("out-of-bounds {what}: {m}")));
        match space {
            Space::Global => match cx.global.find(a) {
                Some(r) if a + size as u64 <= r.start + r.len => {
                    // SAFETY: inside the region, which stays valid for the launch.
                    Ok(Access::Global(unsafe { r.ptr.add((a - r.start) as usize) }))
                }
                _ => oob(cx.global.describe_miss(a, size)),
            },
            Space::Shared => {
                if a.saturating_add(size as u64) <= cx.shared_bytes as u64 {
                    Ok(Access::Shared(a as usize))
                } else {
                    oob(format!(
                        "shared offset {a} + {size} bytes is outside the block's {} bytes of shared memory ({} static, {} dynamic)",
                        cx.shared_bytes, cx.k.static_shared, cx.cfg.dynamic_shared_bytes
                    ))
                }
            }
            Space::Local => {
                let lb = cx.k.local_bytes as u64;
                if a.saturating_add(size as u64) <= lb {
                    let t = w as u64 * 32 + lane as u64;
                    Ok(Access::Local((t * lb + a) as usize))
                } else {
                    oob(format!("local offset {a} + {size} bytes is outside the thread's {lb} bytes of local memory"))
                }
            }
            Space::Param => {
                if a.saturating_add(size as u64) <= cx.params.len() as u64 {
                    if store {
                        return oob("kernel parameters are read-only".into());
                    }
                    Ok(Access::Param(a as usize))
                } else {
                    oob(format!(
                        "parameter offset {a} + {size} bytes is outside the {} bytes of parameters",
                        cx.params.len()
                    ))
                }
            }
            Space::Const => {
                let c = &cx.k.consts;
                if store {
                    oob(format!("constant memory is read-only (a store to const offset {a}, {})", c.describe(a)))
                } else if a.checked_add(size as u64).is_some_and(|e| e <= c.bytes.len() as u64) {
                    Ok(Access::Const(a as usize))
                } else {
                    oob(format!(
                        "const offset {a} + {size} bytes ({}) is outside the module's {} bytes of constant memory",
                        c.describe(a),
                        c.bytes.len()
                    ))
                }
            }
            Space::Generic => oob("unsupported state space".into()),
        }
    }

    #[inline(always)]
    fn load(&self, cx: &LaunchCtx, acc: Access, size: u32) -> u64 {
        match acc {
            // SAFETY: in bounds and aligned to `size` (checked by `access`).
            Access::Global(p) => unsafe { load_global(p, size) },
            Access::Shared(o) => read_le(bytes(&self.shared), o, size),
            Access::Local(o) => read_le(bytes(&self.local), o, size),
            Access::Param(o) => read_le(&cx.params, o, size),
            Access::Const(o) => read_le(&cx.k.consts.bytes, o, size),
        }
    }

    #[inline(always)]
    fn store(&mut self, acc: Access, size: u32, v: u64) {
        match acc {
            // SAFETY: as in `load`.
            Access::Global(p) => unsafe { store_global(p, size, v) },
            Access::Shared(o) => write_le(bytes_mut(&mut self.shared), o, size, v),
            Access::Local(o) => write_le(bytes_mut(&mut self.local), o, size, v),
            Access::Param(_) | Access::Const(_) => {}
        }
    }

    /// Atomic read-modify-write: returns the old value.
    fn rmw(&mut self, acc: Access, size: u32, f: impl Fn(u64) -> u64) -> u64 {
        match acc {
            // SAFETY: as in `load`.
            Access::Global(p) => unsafe {
                if size == 4 {
                    let a = &*(p as *const AtomicU32);
                    let mut old = a.load(Relaxed);
                    loop {
                        match a.compare_exchange_weak(old, f(old as u64) as u32, Relaxed, Relaxed) {
                            Ok(o) => return o as u64,
                            Err(o) => old = o,
                        }
                    }
                } else if size == 8 {
                    let a = &*(p as *const AtomicU64);
                    let mut old = a.load(Relaxed);
                    loop {
                        match a.compare_exchange_weak(old, f(old), Relaxed, Relaxed) {
                            Ok(o) => return o,
                            Err(o) => old = o,
                        }
                    }
                } else {
                    let a = &*(p as *const AtomicU16);
                    let mut old = a.load(Relaxed);
                    loop {
                        match a.compare_exchange_weak(old, f(old as u64) as u16, Relaxed, Relaxed) {
                            Ok(o) => return o as u64,
                            Err(o) => old = o,
                        }
                    }
                }
            },
            Access::Shared(o) => {
                let old = read_le(bytes(&self.shared), o, size);
                write_le(bytes_mut(&mut self.shared), o, size, f(old));
                old
            }
            Access::Local(o) => {
                let old = read_le(bytes(&self.local), o, size);
                write_le(bytes_mut(&mut self.local), o, size, f(old));
                old
            }
            Access::Param(o) | Access::Const(o) => read_le(&[], o, 0),
        }
    }

    /// The check of the warp-wide `.sync.aligned` tensor instructions: every non-exited lane of
    /// warp `w` executes `what` (and, with `all_lanes`, the warp has all 32 lanes), else a
    /// [`FaultKind::CollectiveMask`] naming a missing lane and `rule`.
    #[allow(clippy::too_many_arguments)]
    fn whole_warp(
        &self,
        cx: &LaunchCtx,
        pc: u32,
        w: usize,
        exec: u32,
        what: &str,
        all_lanes: bool,
        rule: &str,
    ) -> Result<(), EmuError> {
        let warp = &self.warps[w];
        let want = if all_lanes { u32::MAX } else { warp.live & !warp.exited };
        if exec == want {
            return Ok(());
        }
        let l = (want & !exec).trailing_zeros();
        let why = if warp.live & (1 << l) == 0 {
            "does not exist (the block's last warp is partial)"
        } else if warp.exited & (1 << l) != 0 {
            "has exited"
        } else {
            "does not execute it"
        };
        Err(self.fault(
            cx,
            FaultKind::CollectiveMask,
            pc,
            w,
            exec.trailing_zeros().min(31),
            format!("`{what}` is executed by lanes {} of warp {w} while lane {l} {why} ({rule})", lanes_text(exec)),
        ))
    }

    /// `ldmatrix.m8n8.xN[.trans].shared.b16` (PTX ISA, "Warp-level matrix load instruction:
    /// ldmatrix"): a warp-wide instruction (`.sync.aligned`: every non-exited lane of the warp
    /// executes it). Lane `8i + r` gives the 16-byte-aligned shared address of row `r` of matrix
    /// `i`; lane `t` receives in `dst[i]` the elements `(t / 4, 2 (t % 4))` (low half) and
    /// `(t / 4, 2 (t % 4) + 1)` (high half) of matrix `i`, or with `.trans` the elements
    /// `(2 (t % 4), t / 4)` and `(2 (t % 4) + 1, t / 4)`.
    #[allow(clippy::too_many_arguments)]
    fn ldmatrix(
        &mut self,
        cx: &LaunchCtx,
        inst: &Inst,
        pc: u32,
        w: usize,
        exec: u32,
        num: u8,
        trans: bool,
    ) -> Result<(), EmuError> {
        self.whole_warp(cx, pc, w, exec, "ldmatrix", false, "`.sync.aligned`: the whole warp must")?;
        let need = self.warps[w].live & !self.warps[w].exited;
        // Row r of matrix i: 8 b16 elements at the address lane 8i + r gives.
        let mut rows = [[0u16; 8]; 32];
        for row_lane in 0..(8 * num as u32) {
            if need & (1 << row_lane) == 0 {
                return Err(self.fault(
                    cx,
                    FaultKind::CollectiveMask,
                    pc,
                    w,
                    0,
                    format!("`ldmatrix .x{num}` needs the row address of lane {row_lane}, which does not exist or has exited"),
                ));
            }
            let base = inst.base.map_or(0, |r| self.regs[self.ri(w, r, row_lane)]);
            let addr = base.wrapping_add(inst.offset as u64);
            for word in 0..4u32 {
                let acc = self.access(
                    cx,
                    Space::Shared,
                    addr.wrapping_add(4 * word as u64),
                    4,
                    if word == 0 { 16 } else { 4 },
                    false,
                    pc,
                    w,
                    row_lane,
                )?;
                let v = self.load(cx, acc, 4) as u32;
                rows[row_lane as usize][2 * word as usize] = v as u16;
                rows[row_lane as usize][2 * word as usize + 1] = (v >> 16) as u16;
            }
        }
        for i in 0..num as usize {
            let mut out = [0u64; 32];
            for t in 0..32usize {
                let (lo, hi) = if trans {
                    (rows[8 * i + 2 * (t % 4)][t / 4], rows[8 * i + 2 * (t % 4) + 1][t / 4])
                } else {
                    (rows[8 * i + t / 4][2 * (t % 4)], rows[8 * i + t / 4][2 * (t % 4) + 1])
                };
                out[t] = lo as u64 | (hi as u64) << 16;
            }
            self.put(w, inst.dst[i], exec, &out);
        }
        Ok(())
    }

    /// `mma.sync.aligned.m16n8k{8,16}.row.col.f32.{f16,bf16}.{f16,bf16}.f32` and
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` (PTX ISA, "Matrix fragments for
    /// mma.m16n8k8" and "... mma.m16n8k16 with floating point type"): lane `t`, with `g = t / 4`
    /// and `q = t % 4`, holds C's / D's elements `(g | g + 8, 2q + j)`; with f16/bf16, A's
    /// `(g | g + 8, 2q + j [+ 8])` and B's `(2q + j [+ 8], g)`, two to a register, the lower
    /// element in the low half; with tf32, A register `j` holds `(g + 8 (j % 2), q + 4 (j / 2))`
    /// and B register `j` holds `(q + 4j, g)`. Each D element is [`TensorCores::dot`] of its row of
    /// A, its column of B and its C, with the launch's tensor-core rule. Every non-exited lane of
    /// the warp must execute it.
    #[allow(clippy::too_many_arguments)]
    fn mma(
        &mut self,
        cx: &LaunchCtx,
        inst: &Inst,
        pc: u32,
        w: usize,
        exec: u32,
        k: u8,
        fmt: Format,
    ) -> Result<(), EmuError> {
        self.whole_warp(cx, pc, w, exec, "mma.sync", true, "`.sync.aligned`: all 32 lanes must")?;
        let Some(regs) = inst.wide.as_deref() else { return Ok(()) };
        let k = k as usize;
        let tf32 = fmt == Format::TF32;
        let (na, nb) = if tf32 { (k / 2, k / 4) } else { (k / 4, k / 8) };
        // A row-major (16 x k), B column-major (8 columns of k), C 16 x 8; elements as bits.
        let mut a = [[0u32; 16]; 16];
        let mut b = [[0u32; 16]; 8];
        let mut c = [[0u32; 8]; 16];
        for t in 0..32u32 {
            let (g, q) = ((t / 4) as usize, (t % 4) as usize);
            for j in 0..na {
                let v = self.regs[self.ri(w, regs[j], t)];
                if tf32 {
                    a[g + 8 * (j % 2)][q + 4 * (j / 2)] = v as u32;
                } else {
                    for h in 0..2 {
                        a[g + 8 * (j % 2)][2 * q + h + 8 * (j / 2)] = (v >> (16 * h)) as u32 & 0xffff;
                    }
                }
            }
            for j in 0..nb {
                let v = self.regs[self.ri(w, regs[na + j], t)];
                if tf32 {
                    b[g][q + 4 * j] = v as u32;
                } else {
                    for h in 0..2 {
                        b[g][2 * q + h + 8 * j] = (v >> (16 * h)) as u32 & 0xffff;
                    }
                }
            }
            for i in 0..4 {
                c[g + 8 * (i / 2)][2 * q + (i % 2)] = self.regs[self.ri(w, regs[na + nb + i], t)] as u32;
            }
        }
        let mut out = [[0u64; 32]; 4];
        for t in 0..32usize {
            let (g, q) = (t / 4, t % 4);
            for (i, o) in out.iter_mut().enumerate() {
                let (row, col) = (g + 8 * (i / 2), 2 * q + (i % 2));
                o[t] = cx.tensor_cores.dot(fmt, &a[row][..k], &b[col][..k], c[row][col]) as u64;
            }
        }
        for (i, o) in out.iter().enumerate() {
            self.put(w, inst.dst[i], exec, o);
        }
        Ok(())
    }

    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}` with both operands in shared memory
    /// (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"). Warp `w % 4` of its
    /// warpgroup computes rows `16 (w % 4) ..` of D = (scale-d ? D : 0) + A B, so each warp's part
    /// is done when that warp issues the instruction (the operation is asynchronous on the GPU;
    /// a correct program reads D only after `wgmma.wait_group`, so computing it at issue gives the
    /// same values). Operands are located by their matrix descriptors (start address, leading and
    /// stride byte offsets, swizzle mode): K-major ("row" A, "col" B; `imm-trans` 0) and MN-major
    /// (`imm-trans` 1) canonical layouts with 32/64/128-byte swizzling, and K-major without
    /// swizzling. Each D element is [`TensorCores::dot`] of its 16 products and C (0 when scale-d
    /// is false), like `mma`; scale-a/scale-b of -1 negate A's/B's elements. Faults: part of
    /// a warp, descriptors that differ between lanes, no `wgmma.fence` since the last wait, an
    /// unsupported layout.
    #[allow(clippy::too_many_arguments)]
    fn wgmma(
        &mut self,
        cx: &LaunchCtx,
        inst: &Inst,
        pc: u32,
        w: usize,
        exec: u32,
        n: usize,
        bf16: bool,
        neg: [bool; 2],
        trans: [bool; 2],
    ) -> Result<(), EmuError> {
        let fail = |s: &Self, l: u32, msg: String| Err(s.fault(cx, FaultKind::CollectiveMask, pc, w, l, msg));
        self.whole_warp(
            cx,
            pc,
            w,
            exec,
            "wgmma.mma_async",
            true,
            "`.sync.aligned`: every lane of the warpgroup must execute it",
        )?;
        if !self.warps[w].wgmma_fenced {
            return fail(self, 0, "`wgmma.mma_async` without a `wgmma.fence` since the last `wgmma.wait_group`: the accumulator registers are not ordered".into());
        }
        let desc = [self.rd(cx, inst.src[0], w, 0), self.rd(cx, inst.src[1], w, 0)];
        for l in 1..32 {
            if self.rd(cx, inst.src[0], w, l) != desc[0] || self.rd(cx, inst.src[1], w, l) != desc[1] {
                return fail(self, l, format!("lanes 0 and {l} give `wgmma.mma_async` different matrix descriptors"));
            }
        }
        let scale_d = {
            let v = self.rd(cx, inst.src[2], w, 0) & 1 == 1;
            v != (inst.neg & 4 != 0)
        };
        let fmt = if bf16 { Format::BF16 } else { Format::F16 };
        let wq = w % 4;
        // Byte address of element (mn, k) of an operand with descriptor `d`.
        let locate = |d: u64, mn: usize, k: usize, mn_major: bool| -> Result<u64, String> {
            let start = (d & 0x3fff) << 4;
            let lbo = ((d >> 16) & 0x3fff) << 4;
            let sbo = ((d >> 32) & 0x3fff) << 4;
            let mode = d >> 62;
            let width: u64 = match mode {
                1 => 128,
                2 => 64,
                3 => 32,
                _ => 0,
            };
            let (mn, k) = (mn as u64, k as u64);
            let off = match (width, mn_major) {
                (0, false) => (mn % 8) * 16 + (k % 8) * 2 + (k / 8) * lbo + (mn / 8) * sbo,
                (0, true) => return Err("MN-major operands without swizzling are not supported".into()),
                (wd, false) => {
                    let t = wd / 2;
                    (mn % 8) * wd + (mn / 8) * sbo + (k % t) * 2 + (k / t) * lbo
                }
                (wd, true) => {
                    let t = wd / 2;
                    (mn % t) * 2 + (k % 8) * wd + (k / 8) * sbo + (mn / t) * lbo
                }
            };
            let a = start + off;
            let sw = match mode {
                1 => ((a >> 7) & 7) << 4,
                2 => ((a >> 7) & 3) << 4,
                3 => ((a >> 7) & 1) << 4,
                _ => 0,
            };
            Ok(a ^ sw)
        };
        // Elements as bits; a scale of -1 flips the sign bit (NaNs stay NaNs).
        let sign = |neg: bool| if neg { 0x8000u32 } else { 0 };
        let mut a = [[0u32; 16]; 16];
        for (r, row) in a.iter_mut().enumerate() {
            for (k, x) in row.iter_mut().enumerate() {
                let addr = match locate(desc[0], 16 * wq + r, k, trans[0]) {
                    Ok(v) => v,
                    Err(m) => return fail(self, 0, format!("`wgmma.mma_async` A: {m}")),
                };
                let acc = self.access(cx, Space::Shared, addr, 2, 2, false, pc, w, 0)?;
                *x = self.load(cx, acc, 2) as u32 ^ sign(neg[0]);
            }
        }
        let mut b = vec![[0u32; 16]; n];
        for (c, col) in b.iter_mut().enumerate() {
            for (k, x) in col.iter_mut().enumerate() {
                let addr = match locate(desc[1], c, k, trans[1]) {
                    Ok(v) => v,
                    Err(m) => return fail(self, 0, format!("`wgmma.mma_async` B: {m}")),
                };
                let acc = self.access(cx, Space::Shared, addr, 2, 2, false, pc, w, 0)?;
                *x = self.load(cx, acc, 2) as u32 ^ sign(neg[1]);
            }
        }
        let Some(regs) = inst.wide.as_deref() else { return Ok(()) };
        let mut outs = vec![[0u64; 32]; regs.len()];
        for t in 0..32usize {
            let (g, q) = (t / 4, t % 4);
            for (j, o) in outs.iter_mut().enumerate() {
                let (c, i) = (j / 4, j % 4);
                let (row, col) = (g + 8 * (i / 2), 8 * c + 2 * q + (i % 2));
                let old = self.regs[self.ri(w, regs[j], t as u32)] as u32;
                let c = if scale_d { old } else { 0 };
                o[t] = cx.tensor_cores.dot(fmt, &a[row], &b[col], c) as u64;
            }
        }
        for (j, o) in outs.iter().enumerate() {
            self.put(w, regs[j], exec, o);
        }
        Ok(())
    }

    fn collective_check(
        &self,
        cx: &LaunchCtx,
        inst: &Inst,
        pc: u32,
        w: usize,
        exec: u32,
        mask_src: Src,
    ) -> Result<(), EmuError> {
        let mut a = exec;
        while a != 0 {
            let l = a.trailing_zeros();
            a &= a - 1;
            let m = self.rd(cx, mask_src, w, l) as u32;
            if m & (1 << l) == 0 {
                return Err(self.fault(
                    cx,
                    FaultKind::CollectiveMask,
                    pc,
                    w,
                    l,
                    format!("lane {l} executes it with member mask 0x{m:08x}, which does not name the lane itself"),
                ));
            }
            let missing = m & !exec;
            if missing != 0 {
                let ml = missing.trailing_zeros();
                let why = if self.warps[w].live & (1 << ml) == 0 {
                    "does not exist (the block's last warp is partial)"
                } else if self.warps[w].exited & (1 << ml) != 0 {
                    "has exited"
                } else {
                    "does not execute it with this lane (divergence)"
                };
                let _ = inst;
                return Err(self.fault(
                    cx,
                    FaultKind::CollectiveMask,
                    pc,
                    w,
                    l,
                    format!(
                        "lane {l}'s member mask 0x{m:08x} names lane {ml}, which {why}; executing lanes: {}",
                        lanes_text(exec)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A source row in place (a register) or materialized into `tmp`.
    #[inline(always)]
    fn row<'s>(&'s self, cx: &LaunchCtx, s: Src, w: usize, tmp: &'s mut [u64; 32]) -> &'s [u64; 32] {
        match s {
            Src::Reg(r) => {
                let i = self.ri(w, r, 0);
                <&[u64; 32]>::try_from(&self.regs[i..i + 32]).expect("32 lanes")
            }
            other => {
                *tmp = self.fetch(cx, other, w);
                tmp
            }
        }
    }

    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn map1(&mut self, cx: &LaunchCtx, w: usize, exec: u32, s0: Src, d: RegId, f: impl Fn(u64) -> u64) {
        let mut ta = [0u64; 32];
        let ra = self.row(cx, s0, w, &mut ta);
        let out: [u64; 32] = std::array::from_fn(|l| f(ra[l]));
        self.put(w, d, exec, &out);
    }

    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn map2(&mut self, cx: &LaunchCtx, w: usize, exec: u32, s0: Src, s1: Src, d: RegId, f: impl Fn(u64, u64) -> u64) {
        let (mut ta, mut tb) = ([0u64; 32], [0u64; 32]);
        let ra = self.row(cx, s0, w, &mut ta);
        let rb = self.row(cx, s1, w, &mut tb);
        let out: [u64; 32] = std::array::from_fn(|l| f(ra[l], rb[l]));
        self.put(w, d, exec, &out);
    }

    #[inline(never)]
    fn map3(&mut self, cx: &LaunchCtx, w: usize, exec: u32, s: [Src; 3], d: RegId, f: impl Fn(u64, u64, u64) -> u64) {
        let (mut ta, mut tb, mut tc) = ([0u64; 32], [0u64; 32], [0u64; 32]);
        let ra = self.row(cx, s[0], w, &mut ta);
        let rb = self.row(cx, s[1], w, &mut tb);
        let rc = self.row(cx, s[2], w, &mut tc);
        let out: [u64; 32] = std::array::from_fn(|l| f(ra[l], rb[l], rc[l]));
        self.put(w, d, exec, &out);
    }

    fn exec(&mut self, cx: &LaunchCtx, inst: &Inst, pc: u32, w: usize, exec: u32) -> Result<(), EmuError> {
        let [s0, s1, s2, s3] = inst.src;
        let d0 = inst.dst[0];
        macro_rules! each {
            (|$l:ident| $body:expr) => {{
                let mut m = exec;
                while m != 0 {
                    let $l = m.trailing_zeros();
                    m &= m - 1;
                    $body
                }
            }};
        }
        // Pure operations compute all 32 lanes from whole-warp operand rows (vectorizable) and
        // write back only the executing lanes.
        // A source row: a register's 32 lanes in place, or a materialized immediate/special row.
        macro_rules! row {
            ($src:expr, $tmp:ident) => {
                match $src {
                    Src::Reg(r) => {
                        let i = self.ri(w, r, 0);
                        <&[u64; 32]>::try_from(&self.regs[i..i + 32]).expect("32 lanes")
                    }
                    other => {
                        $tmp = self.fetch(cx, other, w);
                        &$tmp
                    }
                }
            };
        }
        // Pure operations: one monomorphized, non-inlined loop per operation (small stack frames).
        macro_rules! map1 {
            (|$a:ident| $e:expr) => {
                self.map1(cx, w, exec, s0, d0, |$a| $e)
            };
        }
        macro_rules! map2 {
            (|$a:ident, $b:ident| $e:expr) => {
                self.map2(cx, w, exec, s0, s1, d0, |$a, $b| $e)
            };
        }
        macro_rules! map3 {
            (|$a:ident, $b:ident, $c:ident| $e:expr) => {
                self.map3(cx, w, exec, [s0, s1, s2], d0, |$a, $b, $c| $e)
            };
        }
        let negs = inst.neg;
        match inst.op {
            Op::Mov { bits } => {
                let m = mask(bits);
                map1!(|a| a & m)
            }
            Op::Pack { n, part } => {
                let m = mask(part);
                each!(|l| {
                    let mut v = 0u64;
                    for i in 0..n as usize {
                        v |= (self.rd(cx, inst.src[i], w, l) & m) << (part * i as u32);
                    }
                    self.wr(w, d0, l, v);
                })
            }
            Op::Unpack { n, part } => {
                let m = mask(part);
                each!(|l| {
                    let v = self.rd(cx, s0, w, l);
                    for i in 0..n as usize {
                        self.wr(w, inst.dst[i], l, (v >> (part * i as u32)) & m);
                    }
                })
            }
            Op::IBin { op, t } => {
                if t.bits == 1 {
                    let (na, nb) = ((negs & 1) as u64, ((negs >> 1) & 1) as u64);
                    map2!(|a, b| int::ibin(op, t, (a & 1) ^ na, (b & 1) ^ nb))
                } else {
                    // Fast paths for the commonest 32/64-bit forms.
                    match (op, t.bits) {
                        (IBin::Add, 32) => map2!(|a, b| (a as u32).wrapping_add(b as u32) as u64),
                        (IBin::Add, 64) => map2!(|a, b| a.wrapping_add(b)),
                        (IBin::MulWide, 32) if !t.signed => map2!(|a, b| (a as u32 as u64) * (b as u32 as u64)),
                        (IBin::MulLo, 32) => map2!(|a, b| (a as u32).wrapping_mul(b as u32) as u64),
                        _ => map2!(|a, b| int::ibin(op, t, a, b)),
                    }
                }
            }
            Op::IUn { op, t } => {
                let na = (negs & 1) as u64;
                if t.bits == 1 {
                    map1!(|a| int::iun(op, t, (a & 1) ^ na))
                } else {
                    map1!(|a| int::iun(op, t, a))
                }
            }
            Op::Mad { mode, t, sat } => {
                if mode == MadMode::Lo && t.bits == 32 {
                    map3!(|a, b, c| (a as u32).wrapping_mul(b as u32).wrapping_add(c as u32) as u64)
                } else {
                    map3!(|a, b, c| int::mad(mode, t, sat, a, b, c))
                }
            }
            Op::Bfe { t } => map3!(|a, b, c| int::bfe(t, a, b, c)),
            Op::Bfi { t } => each!(|l| {
                let v = int::bfi(
                    t,
                    self.rd(cx, s0, w, l),
                    self.rd(cx, s1, w, l),
                    self.rd(cx, s2, w, l),
                    self.rd(cx, s3, w, l),
                );
                self.wr(w, d0, l, v);
            }),
            Op::Prmt => map3!(|a, b, c| int::prmt(a, b, c)),
            Op::FBin { op, t, rnd, ftz, sat, .. } => {
                if t == FTy::F32 && rnd == Rnd::N && !ftz && !sat {
                    match op {
                        Arith::Add => map2!(|a, b| canon32(f32::from_bits(a as u32) + f32::from_bits(b as u32))),
                        Arith::Mul => map2!(|a, b| canon32(f32::from_bits(a as u32) * f32::from_bits(b as u32))),
                        Arith::Sub => map2!(|a, b| canon32(f32::from_bits(a as u32) - f32::from_bits(b as u32))),
                        Arith::Div => map2!(|a, b| canon32(f32::from_bits(a as u32) / f32::from_bits(b as u32))),
                    }
                } else {
                    let f64_order = cx.f64_order;
                    map2!(|a, b| {
                        let (a, b) = (pre(t, ftz, a), pre(t, ftz, b));
                        let v = order::arith(f64_order, t, op, rnd, a, b);
                        post_exact(t, ftz, sat, rnd, v, || order::arith(f64_order, t, op, Rnd::Z, a, b))
                    })
                }
            }
            Op::Fma { t, rnd, ftz, sat, neg_product, neg_addend } => {
                let (np, nc) = (if neg_product { t.sign_bit() } else { 0 }, if neg_addend { t.sign_bit() } else { 0 });
                let f64_order = cx.f64_order;
                map3!(|a, b, c| {
                    let (a, b, c) = (pre(t, ftz, a) ^ np, pre(t, ftz, b), pre(t, ftz, c) ^ nc);
                    let v = order::fma(f64_order, t, rnd, a, b, c);
                    post_exact(t, ftz, sat, rnd, v, || order::fma(f64_order, t, Rnd::Z, a, b, c))
                })
            }
            Op::FMinMax { t, max, ftz } => {
                let f64_order = cx.f64_order;
                map2!(|a, b| post(t, ftz, false, order::minmax(f64_order, t, max, pre(t, ftz, a), pre(t, ftz, b))))
            }
            Op::FAbs { t, ftz } => map1!(|a| post(t, ftz, false, pre(t, ftz, a) & !t.sign_bit())),
            Op::FNeg { t, ftz } => map1!(|a| post(t, ftz, false, pre(t, ftz, a) ^ t.sign_bit())),
            Op::FSqrt { t, rnd, ftz } => map1!(|a| post(t, ftz, false, float::sqrt(t, rnd, pre(t, ftz, a)))),
            Op::FRcp { t, rnd, ftz } => {
                let one = t.from_f64(1.0, Rnd::N);
                map1!(|a| {
                    let a = pre(t, ftz, a);
                    let v = float::arith(t, Arith::Div, rnd, one, a);
                    post_exact(t, ftz, false, rnd, v, || float::arith(t, Arith::Div, Rnd::Z, one, a))
                })
            }
            Op::FApprox { t, f, ftz } => map1!(|a| float::approx(t, f, ftz, a)),
            Op::DivApprox { ftz } => map2!(|a, b| div_approx(ftz, a, b)),
            Op::DivFull { ftz } => map2!(|a, b| div_full(ftz, a, b)),
            Op::Copysign { t } => map2!(|a, b| (b & !t.sign_bit()) | (a & t.sign_bit())),
            Op::Testp { t, kind } => map1!(|a| {
                let x = t.to_f64(a);
                (match kind {
                    TestpKind::Finite => x.is_finite(),
                    TestpKind::Infinite => x.is_infinite(),
                    TestpKind::Number => !x.is_nan(),
                    TestpKind::NotANumber => x.is_nan(),
                    TestpKind::Normal => x.is_finite() && (x == 0.0 || !t.is_subnormal(a)),
                    TestpKind::Subnormal => t.is_subnormal(a),
                }) as u64
            }),
            Op::Setp { cmp, bop } => {
                let d1 = inst.dst[1];
                let nc = ((negs >> 2) & 1) as u64;
                let (ra, rb) = (self.fetch(cx, s0, w), self.fetch(cx, s1, w));
                let mut r = [0u64; 32];
                match cmp {
                    Cmp::Int(c, t) => {
                        for l in 0..32 {
                            r[l] = int::icmp(c, t, ra[l], rb[l]) as u64;
                        }
                    }
                    Cmp::Float(c, FTy::F32, false) => {
                        for l in 0..32 {
                            r[l] = float::compare(
                                c,
                                f32::from_bits(ra[l] as u32) as f64,
                                f32::from_bits(rb[l] as u32) as f64,
                            ) as u64;
                        }
                    }
                    Cmp::Float(c, t, ftz) => {
                        for l in 0..32 {
                            r[l] = float::compare(c, t.to_f64(pre(t, ftz, ra[l])), t.to_f64(pre(t, ftz, rb[l]))) as u64;
                        }
                    }
                }
                if let Some(bop) = bop {
                    let rc = self.fetch(cx, s2, w);
                    let combine = |x: u64, c: u64| match bop {
                        BoolOp::And => x & c,
                        BoolOp::Or => x | c,
                        BoolOp::Xor => x ^ c,
                    };
                    let mut q = [0u64; 32];
                    for l in 0..32 {
                        let c = (rc[l] & 1) ^ nc;
                        q[l] = combine(r[l] ^ 1, c);
                        r[l] = combine(r[l], c);
                    }
                    self.put(w, d0, exec, &r);
                    self.put(w, d1, exec, &q);
                } else {
                    self.put(w, d0, exec, &r);
                    if d1 != NO_REG {
                        for x in r.iter_mut() {
                            *x ^= 1;
                        }
                        self.put(w, d1, exec, &r);
                    }
                }
            }
            Op::Selp { bits } => {
                let m = mask(bits);
                let nc = ((negs >> 2) & 1) as u64;
                map3!(|a, b, c| if (c & 1) ^ nc == 1 { a & m } else { b & m })
            }
            Op::CvtPack { bf16, relu } => {
                let t = if bf16 { crate::float::FTy::BF16 } else { crate::float::FTy::F16 };
                let one = |x: u64| {
                    let v = f32::from_bits(x as u32) as f64;
                    // `.relu`: negative results (and NaN) become +0 (PTX: NaN gives canonical NaN).
                    let v = if relu && v < 0.0 { 0.0 } else { v };
                    t.from_f64(v, Rnd::N)
                };
                map2!(|a, b| one(a) << 16 | one(b))
            }
            Op::Cvt { from, to, rnd, integral, ftz, sat } => map1!(|a| cvt(from, to, rnd, integral, ftz, sat, a)),
            Op::Cvta { to_generic, space, .. } => {
                let base = match space {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
                    Space::Const => CONST_WINDOW,
                    _ => 0,
                };
                if to_generic {
                    map1!(|a| a.wrapping_add(base))
                } else {
                    map1!(|a| a.wrapping_sub(base))
                }
            }
            Op::Ld { space: Space::Param, size, signed, n } if inst.base.is_none() => {
                // A kernel parameter is the same for every lane: read it once.
                let lane = exec.trailing_zeros();
                for i in 0..n {
                    let addr = (inst.offset as u64).wrapping_add((i * size) as u64);
                    let acc = self.access(
                        cx,
                        Space::Param,
                        addr,
                        size,
                        if i == 0 { size * n } else { size },
                        false,
                        pc,
                        w,
                        lane,
                    )?;
                    let mut v = self.load(cx, acc, size);
                    if signed {
                        v = sext(v, size);
                    }
                    self.put(w, inst.dst[i as usize], exec, &[v; 32]);
                }
            }
            Op::Ld { space, size, signed, n } => {
                if n == 1 && matches!(space, Space::Global | Space::Generic) {
                    if let Some((ptr0, addrs)) = self.warp_region(cx, inst, w, exec, size) {
                        // Every executing lane's address is aligned and inside one buffer: load
                        // the warp in one loop.
                        let mut out = [0u64; 32];
                        let mut m = exec;
                        while m != 0 {
                            let l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            // SAFETY: `warp_region` checked bounds and alignment of every lane.
                            let v = unsafe { load_global(ptr0.add(addrs[l] as usize), size) };
                            out[l] = if signed { sext(v, size) } else { v };
                        }
                        self.put(w, d0, exec, &out);
                        self.stats.global_bytes_read += (size * exec.count_ones()) as u64;
                        self.stats.global_load_instructions += exec.count_ones() as u64;
                        return Ok(());
                    }
                }
                if n == 1 && space == Space::Shared {
                    if let Some(addrs) = self.warp_shared(cx, inst, w, exec, size) {
                        let sh = bytes(&self.shared);
                        let mut out = [0u64; 32];
                        let mut m = exec;
                        while m != 0 {
                            let l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            let v = read_le(sh, addrs[l] as usize, size);
                            out[l] = if signed { sext(v, size) } else { v };
                        }
                        self.put(w, d0, exec, &out);
                        return Ok(());
                    }
                }
                let align = size * n;
                each!(|l| {
                    let base = inst.base.map_or(0, |r| self.regs[self.ri(w, r, l)]);
                    let addr = base.wrapping_add(inst.offset as u64);
                    for i in 0..n {
                        let acc = self.access(
                            cx,
                            space,
                            addr.wrapping_add((i * size) as u64),
                            size,
                            if i == 0 { align } else { size },
                            false,
                            pc,
                            w,
                            l,
                        )?;
                        let mut v = self.load(cx, acc, size);
                        if signed {
                            v = sext(v, size);
                        }
                        self.wr(w, inst.dst[i as usize], l, v);
                    }
                    if matches!(space, Space::Global | Space::Generic) {
                        self.stats.global_bytes_read += (size * n) as u64;
                        self.stats.global_load_instructions += 1;
                    }
                })
            }
            Op::St { space, size, n } => {
                if n == 1 && matches!(space, Space::Global | Space::Generic) {
                    if let Some((ptr0, addrs)) = self.warp_region(cx, inst, w, exec, size) {
                        let tv;
                        let vals = row!(s0, tv);
                        let mut m = exec;
                        while m != 0 {
                            let l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            // SAFETY: as for loads.
                            unsafe { store_global(ptr0.add(addrs[l] as usize), size, vals[l]) };
                        }
                        self.stats.global_bytes_written += (size * exec.count_ones()) as u64;
                        self.stats.global_store_instructions += exec.count_ones() as u64;
                        return Ok(());
                    }
                }
                if n == 1 && space == Space::Shared {
                    if let Some(addrs) = self.warp_shared(cx, inst, w, exec, size) {
                        let mut tv = [0u64; 32];
                        let vals = match s0 {
                            Src::Reg(r) => {
                                let i = self.ri(w, r, 0);
                                tv.copy_from_slice(&self.regs[i..i + 32]);
                                tv
                            }
                            other => self.fetch(cx, other, w),
                        };
                        let sh = bytes_mut(&mut self.shared);
                        let mut m = exec;
                        while m != 0 {
                            let l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            write_le(sh, addrs[l] as usize, size, vals[l]);
                        }
                        return Ok(());
                    }
                }
                let align = size * n;
                each!(|l| {
                    let base = inst.base.map_or(0, |r| self.regs[self.ri(w, r, l)]);
                    let addr = base.wrapping_add(inst.offset as u64);
                    for i in 0..n {
                        let acc = self.access(
                            cx,
                            space,
                            addr.wrapping_add((i * size) as u64),
                            size,
                            if i == 0 { align } else { size },
                            true,
                            pc,
                            w,
                            l,
                        )?;
                        let v = self.rd(cx, inst.src[i as usize], w, l);
                        self.store(acc, size, v);
                    }
                    if matches!(space, Space::Global | Space::Generic) {
                        self.stats.global_bytes_written += (size * n) as u64;
                        self.stats.global_store_instructions += 1;
                    }
                })
            }
            Op::Atom { space, op, t, .. } => {
                let size = match t {
                    AtomTy::Int(i) => i.bits / 8,
                    AtomTy::Float(f) => f.bits() / 8,
                };
                each!(|l| {
                    let base = inst.base.map_or(0, |r| self.regs[self.ri(w, r, l)]);
                    let addr = base.wrapping_add(inst.offset as u64);
                    let acc = self.access(cx, space, addr, size, size, true, pc, w, l)?;
                    let b = self.rd(cx, s0, w, l);
                    let c = self.rd(cx, s1, w, l);
                    let shared = matches!(acc, Access::Shared(_));
                    let old = self.rmw(acc, size, |old| atom_apply(op, t, shared, old, b, c));
                    self.wr(w, d0, l, old);
                })
            }
            Op::Shfl { mode } => {
                self.collective_check(cx, inst, pc, w, exec, s3)?;
                let mut vals = [0u64; 32];
                each!(|l| vals[l as usize] = self.rd(cx, s0, w, l));
                let d1 = inst.dst[1];
                each!(|l| {
                    let b = self.rd(cx, s1, w, l) as u32 & 0x1f;
                    let c = self.rd(cx, s2, w, l) as u32;
                    let clamp = c & 0x1f;
                    let seg = (c >> 8) & 0x1f;
                    let max_lane = (l & seg) | (clamp & !seg);
                    let min_lane = l & seg;
                    let (j, p) = match mode {
                        ShflMode::Up => {
                            let j = l as i32 - b as i32;
                            (j, j >= max_lane as i32)
                        }
                        ShflMode::Down => {
                            let j = (l + b) as i32;
                            (j, j <= max_lane as i32)
                        }
                        ShflMode::Bfly => {
                            let j = (l ^ b) as i32;
                            (j, j <= max_lane as i32)
                        }
                        ShflMode::Idx => {
                            let j = (min_lane | (b & !seg)) as i32;
                            (j, j <= max_lane as i32)
                        }
                    };
                    let src = if p { j as u32 } else { l };
                    if exec & (1 << src) == 0 {
                        return Err(self.fault(
                            cx,
                            FaultKind::CollectiveMask,
                            pc,
                            w,
                            l,
                            format!("lane {l} reads lane {src}, which does not execute this `shfl.sync` (its value is undefined)"),
                        ));
                    }
                    self.wr(w, d0, l, vals[src as usize] & 0xffff_ffff);
                    if d1 != NO_REG {
                        self.wr(w, d1, l, p as u64);
                    }
                })
            }
            Op::Vote { mode } => {
                self.collective_check(cx, inst, pc, w, exec, s1)?;
                let na = (negs & 1) as u64;
                let mut ballot = 0u32;
                each!(|l| {
                    if (self.rd(cx, s0, w, l) & 1) ^ na == 1 {
                        ballot |= 1 << l;
                    }
                });
                each!(|l| {
                    let m = self.rd(cx, s1, w, l) as u32;
                    let bl = ballot & m;
                    let v = match mode {
                        VoteMode::Ballot => bl as u64,
                        VoteMode::All => (bl == m) as u64,
                        VoteMode::Any => (bl != 0) as u64,
                        VoteMode::Uni => (bl == 0 || bl == m) as u64,
                    };
                    self.wr(w, d0, l, v);
                })
            }
            Op::Activemask => each!(|l| self.wr(w, d0, l, exec as u64)),
            Op::BarWarp => self.collective_check(cx, inst, pc, w, exec, s0)?,
            Op::Ldmatrix { num, trans } => self.ldmatrix(cx, inst, pc, w, exec, num, trans)?,
            Op::CpAsync => each!(|l| {
                let t = w as u32 * 32 + l;
                let dst = inst.base.map_or(0, |r| self.regs[self.ri(w, r, l)]).wrapping_add(inst.offset as u64);
                let src = self.rd(cx, inst.src[0], w, l).wrapping_add(self.rd(cx, inst.src[1], w, l));
                let size = self.rd(cx, inst.src[2], w, l) as u32;
                let from = (self.rd(cx, inst.src[3], w, l) as u32).min(size);
                // Destination checked (bounds, alignment to the copy size) before anything moves.
                let d0 = self.access(cx, Space::Shared, dst, 4, size, true, pc, w, l)?;
                let _ = d0;
                let mut bytes = [0u8; 16];
                for (i, b) in bytes.iter_mut().enumerate().take(from as usize) {
                    let acc = self.access(cx, Space::Global, src.wrapping_add(i as u64), 1, 1, false, pc, w, l)?;
                    *b = self.load(cx, acc, 1) as u8;
                }
                if from > 0 {
                    self.stats.global_bytes_read += from as u64;
                }
                self.stats.global_load_instructions += 1;
                for word in 0..size / 4 {
                    let v = u32::from_le_bytes(bytes[4 * word as usize..4 * word as usize + 4].try_into().expect("4"));
                    let acc = self.access(cx, Space::Shared, dst + 4 * word as u64, 4, 4, true, pc, w, l)?;
                    self.store(acc, 4, v as u64);
                }
                self.copies.push(AsyncCopy { thread: t, group: None, dst: dst as u32, len: size, pc });
            }),
            Op::WgmmaFence => self.warps[w].wgmma_fenced = true,
            Op::WgmmaGroup { wait } => {
                if wait {
                    self.warps[w].wgmma_fenced = false;
                }
            }
            Op::Wgmma { n, bf16, neg_a, neg_b, trans_a, trans_b } => {
                self.wgmma(cx, inst, pc, w, exec, n as usize, bf16, [neg_a, neg_b], [trans_a, trans_b])?
            }
            Op::CpAsyncCommit => each!(|l| {
                let t = w as u32 * 32 + l;
                let g = self.groups[t as usize];
                for c in self.copies.iter_mut().filter(|c| c.thread == t && c.group.is_none()) {
                    c.group = Some(g);
                }
                self.groups[t as usize] = g + 1;
            }),
            Op::CpAsyncWait { n, all } => each!(|l| {
                let t = w as u32 * 32 + l;
                let done = self.groups[t as usize].saturating_sub(n);
                self.copies.retain(|c| {
                    c.thread != t
                        || match c.group {
                            Some(g) => g >= done,
                            None => !all,
                        }
                });
                if all {
                    self.groups[t as usize] += 1;
                }
            }),
            Op::Mma { k, fmt } => self.mma(cx, inst, pc, w, exec, k, fmt)?,
            Op::Nop => {}
            Op::Bra { .. } | Op::Exit | Op::Trap | Op::Bar { .. } => unreachable!("handled by run_warp"),
        }
        Ok(())
    }
}

/// An atomic load of `size` bytes.
///
/// # Safety
/// `p` must be valid and aligned to `size` for the launch.
#[inline(always)]
unsafe fn load_global(p: *mut u8, size: u32) -> u64 {
    match size {
        1 => (*(p as *const AtomicU8)).load(Relaxed) as u64,
        2 => (*(p as *const AtomicU16)).load(Relaxed) as u64,
        4 => (*(p as *const AtomicU32)).load(Relaxed) as u64,
        _ => (*(p as *const AtomicU64)).load(Relaxed),
    }
}

/// An atomic store of `size` bytes.
///
/// # Safety
/// As for [`load_global`].
#[inline(always)]
unsafe fn store_global(p: *mut u8, size: u32, v: u64) {
    match size {
        1 => (*(p as *const AtomicU8)).store(v as u8, Relaxed),
        2 => (*(p as *const AtomicU16)).store(v as u16, Relaxed),
        4 => (*(p as *const AtomicU32)).store(v as u32, Relaxed),
        _ => (*(p as *const AtomicU64)).store(v, Relaxed),
    }
}

/// A loaded value of `size` bytes sign-extended to 64 bits (`ld.s8` ...).
#[inline(always)]
fn sext(v: u64, size: u32) -> u64 {
    let sh = 64 - size * 8;
    (((v << sh) as i64) >> sh) as u64
}

fn lanes_text(m: u32) -> String {
    let v: Vec<String> = (0..32).filter(|l| m & (1 << l) != 0).map(|l| l.to_string()).collect();
    if v.len() > 8 {
        format!("0x{m:08x}")
    } else {
        format!("{{{}}}", v.join(", "))
    }
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn bytes(v: &[u64]) -> &[u8] {
    // SAFETY: a u64 slice viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8) }
}

fn bytes_mut(v: &mut [u64]) -> &mut [u8] {
    // SAFETY: as above, unique.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 8) }
}

#[inline(always)]
fn read_le(b: &[u8], o: usize, size: u32) -> u64 {
    let get = |n: usize| b.get(o..o + n);
    match size {
        1 => get(1).map_or(0, |x| x[0] as u64),
        2 => get(2).map_or(0, |x| u16::from_le_bytes([x[0], x[1]]) as u64),
        4 => get(4).map_or(0, |x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as u64),
        _ => get(8).map_or(0, |x| u64::from_le_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]])),
    }
}

#[inline(always)]
fn write_le(b: &mut [u8], o: usize, size: u32, v: u64) {
    if let Some(x) = b.get_mut(o..o + size as usize) {
        x.copy_from_slice(&v.to_le_bytes()[..size as usize]);
    }
}

#[inline]
fn canon32(x: f32) -> u64 {
    if x.is_nan() {
        0x7fff_ffff
    } else {
        x.to_bits() as u64
    }
}

/// `.ftz` on an input (f32 only).
#[inline]
fn pre(t: FTy, ftz: bool, v: u64) -> u64 {
    if ftz && t == FTy::F32 {
        float::ftz32(v as u32) as u64
    } else {
        v
    }
}

/// `.ftz` and `.sat` on a result.
#[inline]
fn post(t: FTy, ftz: bool, sat: bool, v: u64) -> u64 {
    let v = if ftz && t == FTy::F32 { float::ftz32(v as u32) as u64 } else { v };
    if sat {
        float::sat(t, v)
    } else {
        v
    }
}

/// `.ftz` and `.sat` on the result `v` of an exact instruction rounded in direction `rnd`; `.ftz`
/// judges by the exact value ([`float::ftz32_result`]), which `toward_zero` recomputes rounded
/// toward zero when needed.
#[inline]
fn post_exact(t: FTy, ftz: bool, sat: bool, rnd: Rnd, v: u64, toward_zero: impl FnOnce() -> u64) -> u64 {
    let v = if ftz && t == FTy::F32 { float::ftz32_result(v as u32, rnd, || toward_zero() as u32) as u64 } else { v };
    if sat {
        float::sat(t, v)
    } else {
        v
    }
}

/// `div.approx.f32`: `a * rcp.approx.ftz(b)`, the product rounded to nearest (`.ftz`: the
/// rounded product flushed), as the H100 computes it: the reciprocal is the MUFU model
/// (crate::mufu). For |b| in (2^126, 2^128) the reciprocal is below the smallest normal and the
/// unit flushes it to a zero of b's sign (ISA: "returns zero"; measured: `2 / -2^127 = -0`,
/// `inf / 2^127 = NaN`). A subnormal divisor without `.ftz` is scaled by 2^24 first and the
/// product by 2^24 after (measured: `0.99999994 / 0x007fffff = 0x7e800000`, not the correctly
/// rounded `0x7e800001`).
fn div_approx(ftz: bool, a: u64, b: u64) -> u64 {
    let t = FTy::F32;
    let (a, b) = (pre(t, ftz, a), pre(t, ftz, b));
    let mb = b as u32 & 0x7fff_ffff;
    let two24 = 2f32.powi(24).to_bits() as u64;
    if mb != 0 && mb < 0x0080_0000 {
        let r = float::approx(t, float::Approx::Rcp, true, float::arith(t, Arith::Mul, Rnd::N, b, two24));
        let q = float::arith(t, Arith::Mul, Rnd::N, a, r);
        return float::arith(t, Arith::Mul, Rnd::N, q, two24);
    }
    let r = if mb > 0x7e80_0000 && mb < 0x7f80_0000 {
        b & 0x8000_0000
    } else {
        float::approx(t, float::Approx::Rcp, true, b)
    };
    post(t, ftz, false, float::arith(t, Arith::Mul, Rnd::N, a, r))
}

/// `div.full.f32`: on the H100, `div.approx`'s `a * rcp(b)` for |b| <= 2^126, and for
/// 2^126 < |b| < 2^128 (where `div.approx` gives zero) both operands scaled by 1/4 first:
/// `(a/4) * rcp(b/4)` (ISA: "a relatively fast, full-range approximation that scales operands to
/// achieve better accuracy"). With the rcp model this reproduces all but 36 of the 8192 elements
/// of the recorded `div_full_f32.all` run (`tests/hardware/h100/ops`), 78 of `.dom`'s — the same
/// residue as `div.approx`'s, left by the rcp model.
fn div_full(ftz: bool, a: u64, b: u64) -> u64 {
    let t = FTy::F32;
    let mb = pre(t, ftz, b) as u32 & 0x7fff_ffff;
    if mb > 0x7e80_0000 && mb < 0x7f80_0000 {
        let quarter = 0.25f32.to_bits() as u64;
        let (a, b) = (pre(t, ftz, a), pre(t, ftz, b));
        let r = float::approx(t, float::Approx::Rcp, true, float::arith(t, Arith::Mul, Rnd::N, b, quarter));
        let q = float::arith(t, Arith::Mul, Rnd::N, float::arith(t, Arith::Mul, Rnd::N, a, quarter), r);
        return post(t, ftz, false, q);
    }
    div_approx(ftz, a, b)
}

/// `cvt` (ISA "cvt"): integer widening/narrowing, float ↔ float, int ↔ float. An integer result
/// is extended to the register by the destination type's signedness (ISA: "chopped, then sign- or
/// zero-extended according to the destination format"), so `cvt.s8.s32` leaves -85 as
/// `0xffffffab` in a 32-bit register.
fn cvt(from: CvtTy, to: CvtTy, rnd: Option<Rnd>, integral: bool, ftz: bool, sat: bool, a: u64) -> u64 {
    let v = cvt_value(from, to, rnd, integral, ftz, sat, a);
    match to {
        CvtTy::Int(t) => t.ext64(v),
        CvtTy::Float(_) => v,
    }
}

fn cvt_value(from: CvtTy, to: CvtTy, rnd: Option<Rnd>, integral: bool, ftz: bool, sat: bool, a: u64) -> u64 {
    match (from, to) {
        (CvtTy::Int(f), CvtTy::Int(t)) => {
            let v = f.ext(a);
            if sat {
                let (lo, hi) = if t.signed {
                    (-(1i128 << (t.bits - 1)), (1i128 << (t.bits - 1)) - 1)
                } else {
                    (0, (1i128 << t.bits) - 1)
                };
                (v.clamp(lo, hi) as u64) & t.mask()
            } else {
                (v as u64) & t.mask()
            }
        }
        (CvtTy::Float(f), CvtTy::Float(t)) => {
            let a = pre(f, ftz, a);
            let v = if f == t {
                if integral {
                    float::round_integral(f, rnd.unwrap_or(Rnd::N), a)
                } else if f.is_nan(a) {
                    // `cvt.ftz.f32.f32` of NaN is the canonical NaN (`cvt_ftz_f32_f32[52]`).
                    float::nan_result(f, &[a])
                } else {
                    a
                }
            } else if integral {
                let r = float::round_integral(f, rnd.unwrap_or(Rnd::N), a);
                float::convert(f, t, Rnd::N, r)
            } else {
                float::convert(f, t, rnd.unwrap_or(Rnd::N), a)
            };
            post(t, ftz, sat, v)
        }
        (CvtTy::Float(f), CvtTy::Int(t)) => {
            let a = pre(f, ftz, a);
            float::to_int(f, rnd.unwrap_or(Rnd::Z), a, t.bits, t.signed)
        }
        (CvtTy::Int(f), CvtTy::Float(t)) => {
            let v = float::from_int(t, rnd.unwrap_or(Rnd::N), f.ext64(a), f.signed);
            post(t, ftz, sat, v)
        }
    }
}

/// The new value of an atomic's memory (`old` is the current value, `b`/`c` the operands;
/// `shared`: the address is in shared memory, directly or through a generic address).
///
/// `atom.add` on floats rounds to nearest; the rest was measured on an H100 (`collectives/`):
/// - f32: NaN gives the canonical NaN `0x7fffffff`; in global memory subnormal operands and
///   results are flushed to zero (`atom_add_f32_g1[14]`: `0x00400000 + 0x80000001` = `0`), in
///   shared memory they are kept (`atom_add_f32_s1[14]`: = `0x003fffff`).
/// - f64 in global memory: a NaN operand is stored as it is, signaling NaNs not quieted, the
///   operand's before memory's (`atom_add_f64_g1[8]`: memory `0xfff8000000012345` + `0xfff7ffffffffffff`
///   = `0xfff7ffffffffffff`; `[3]`: a signaling NaN in memory stays); inf + -inf gives
///   `0xfff8000000000000` (`atom_add_f64_gh.special2`).
/// - f64 in shared memory: memory's NaN before the operand's, quieted (`atom_add_f64_s1`), inf +
///   -inf gives `0xfff8000000000000`.
fn atom_apply(op: AtomOp, t: AtomTy, shared: bool, old: u64, b: u64, c: u64) -> u64 {
    match t {
        AtomTy::Float(f) => match op {
            AtomOp::Add => match f {
                FTy::F32 if !shared => float::ftz32(float::arith(
                    f,
                    Arith::Add,
                    Rnd::N,
                    float::ftz32(old as u32) as u64,
                    float::ftz32(b as u32) as u64,
                ) as u32) as u64,
                FTy::F64 => {
                    let v = f64::from_bits(old) + f64::from_bits(b);
                    if !v.is_nan() {
                        v.to_bits()
                    } else if shared {
                        float::nan_result(f, &[old, b])
                    } else if f.is_nan(b) {
                        b
                    } else if f.is_nan(old) {
                        old
                    } else {
                        f.default_nan()
                    }
                }
                _ => float::arith(f, Arith::Add, Rnd::N, old, b),
            },
            AtomOp::Exch => b,
            AtomOp::Cas => {
                if old == b {
                    c
                } else {
                    old
                }
            }
            _ => old,
        },
        AtomTy::Int(t) => {
            let m = t.mask();
            match op {
                AtomOp::Add => old.wrapping_add(b) & m,
                AtomOp::Min => int::ibin(IBin::Min, t, old, b),
                AtomOp::Max => int::ibin(IBin::Max, t, old, b),
                AtomOp::Inc => {
                    if (old & m) >= (b & m) {
                        0
                    } else {
                        (old + 1) & m
                    }
                }
                AtomOp::Dec => {
                    if (old & m) == 0 || (old & m) > (b & m) {
                        b & m
                    } else {
                        (old - 1) & m
                    }
                }
                AtomOp::And => old & b & m,
                AtomOp::Or => (old | b) & m,
                AtomOp::Xor => (old ^ b) & m,
                AtomOp::Exch => b & m,
                AtomOp::Cas => {
                    if old & m == b & m {
                        c & m
                    } else {
                        old
                    }
                }
            }
        }
    }
}
