//! kir-ptx-emu: a standalone PTX emulator. It loads PTX text and runs an entry point on the CPU,
//! over buffers in an emulated global memory, with runtime checks.
//!
//! It depends on no kir crate on purpose: every instruction's semantics are written here from the
//! PTX ISA manual (8.x) and, where it leaves them open, from measured hardware data, so that
//! running kir's PTX in it is an independent second opinion on kir's interpreter and backend. NVIDIA's own PTX (NVRTC output) is input too.
//!
//! # Use
//! ```
//! use kir_ptx_emu::{Module, Memory, Arg, LaunchConfig, Options, launch};
//! let ptx = r#"
//! .version 8.0
//! .target sm_90
//! .address_size 64
//! .visible .entry twice(.param .u64 p, .param .u32 n)
//! {
//!     .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
//!     ld.param.u64 %rd1, [p];
//!     ld.param.u32 %r1, [n];
//!     mov.u32 %r2, %tid.x;
//!     setp.ge.u32 %p1, %r2, %r1;
//!     @%p1 bra DONE;
//!     mul.wide.u32 %rd2, %r2, 4;
//!     add.s64 %rd3, %rd1, %rd2;
//!     ld.global.u32 %r3, [%rd3];
//!     shl.b32 %r3, %r3, 1;
//!     st.global.u32 [%rd3], %r3;
//! DONE:
//!     ret;
//! }
//! "#;
//! let module = Module::parse(ptx).unwrap();
//! let mut mem = Memory::new();
//! let buf = mem.alloc("p", &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]).unwrap();
//! let cfg = LaunchConfig { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared_bytes: 0 };
//! launch(&module, "twice", &cfg, &[Arg::Buffer(buf), Arg::Scalar(3)], &mut mem, &Options::default()).unwrap();
//! assert_eq!(mem.bytes(buf).unwrap(), &[2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0]);
//! ```
//!
//! # Execution model (what a launch guarantees)
//! - Threads are grouped in warps of 32 lanes (linear thread index `x + y*ntid.x + z*ntid.x*ntid.y`)
//!   that execute in lockstep with an active mask. A branch on which the active lanes disagree
//!   splits the warp; the two sides reconverge at the branch's immediate post-dominator in the
//!   control-flow graph of the PTX (the classic SIMT reconvergence stack).
//! - Warps of a block run one at a time, each until it waits at a barrier or exits, in warp order:
//!   results are deterministic, and a missing barrier shows up as a wrong result, never as luck.
//! - `bar.sync`/`barrier.sync` (aligned): every non-exited thread of the block must reach the same
//!   barrier instruction; a warp that reaches it with part of its non-exited lanes, or warps
//!   waiting at different barriers, or warps waiting while the others exited, is a
//!   [`FaultKind::BarrierDivergence`] naming the PTX line and the threads.
//! - Named barriers (`bar.sync N, count`, `bar.arrive N, count`, ids 0..15): a warp counts 32
//!   arrivals; `bar.sync` waits until `count` arrived. A named barrier that can no longer fill
//!   (deadlock), two counts for one barrier, or a count that is not whole warps of the block is a
//!   [`FaultKind::BarrierDivergence`].
//! - `shfl.sync`/`vote.sync`: every lane named in an executing lane's member mask must execute the
//!   instruction with it, and the mask must name the lane itself ([`FaultKind::CollectiveMask`]).
//! - Memory: every global access must fall inside one buffer of the [`Memory`], every shared access
//!   inside the block's shared memory (static declarations, then the dynamic bytes), every access
//!   must be aligned to its size. Shared memory starts filled with `0xff` bytes, so a kernel that
//!   reads shared memory it never wrote sees NaNs and all-ones integers rather than convenient zeros.
//! - Blocks run in parallel on the host (rayon) unless the kernel has a global atomic (then one at
//!   a time in block-index order, so atomics are deterministic too). With several failing blocks
//!   the lowest block index's error is reported.
//! - Fuel: at most [`Options::fuel`] thread-instructions per launch.
//! - f64 instructions see their commutative operands in PTX order, unless
//!   [`Options::f64_operand_order`] asks for the order ptxas may also choose ([`order`]).
//! - `mma.sync` and `wgmma` compute as the tensor cores of one GPU generation do, bit for bit as
//!   measured ([`tensor_core`]): [`Options::tensor_cores`] when set, else the rule of the module's
//!   `.target` ([`Module::tensor_cores`]: the A100's below sm_90, the H100's from sm_90).
//! - An entry with `.reqntid x[, y[, z]]` runs only with exactly that block shape (omitted
//!   dimensions 1); one with `.maxntid x[, y[, z]]` only with at most `x * y * z` threads per block;
//!   any other is an invalid launch, as the CUDA driver refuses it.
//!
//! Semantics of the approximate instructions are listed in [`float`].

mod cfg;
mod decode;
mod error;
mod exec;
pub mod float;
mod int;
mod lex;
mod memory;
pub mod mufu;
pub mod order;
mod parse;
mod prog;
mod scope;
pub mod tensor_core;

pub use error::{EmuError, ErrorKind, FaultKind, ParseError};
pub use memory::{BufferId, Memory, GLOBAL_BASE, GUARD_BYTES, MAX_BUFFER_BYTES};
pub use order::F64OperandOrder;
pub use tensor_core::TensorCores;

/// Default fuel: 2^32 thread-instructions per launch.
pub const DEFAULT_FUEL: u64 = 1 << 32;
/// Default per-warp limit: 2^26 instructions of one warp in one block, so a thread that spins
/// forever is reported within seconds, long before the launch's fuel runs out.
pub const DEFAULT_WARP_FUEL: u64 = 1 << 26;
/// Largest shared memory of a block, static and dynamic together (227 KiB, as on sm_90).
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;

/// An argument for one `.param` of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A scalar parameter's bits, little-endian, truncated to the parameter's size (which must be
    /// at most 8 bytes).
    Scalar(u64),
    /// The device address of a buffer's first byte (for a `.u64`/`.b64` parameter).
    Buffer(BufferId),
    /// Raw bytes of exactly the parameter's size (arrays and structs passed by value).
    Bytes(Vec<u8>),
}

/// The launch shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of the `.extern .shared` array.
    pub dynamic_shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig { grid: [grid, 1, 1], block: [block, 1, 1], dynamic_shared_bytes: 0 }
    }
}

/// Limits of a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Thread-instructions the launch may execute (each instruction counts once per active lane).
    pub fuel: u64,
    /// Instructions one warp may execute in one block (once per warp step, whatever its active
    /// lanes; default [`DEFAULT_WARP_FUEL`]).
    pub warp_fuel: u64,
    /// Host threads for blocks; `None` uses rayon's global pool. Clamped to the cores and the
    /// blocks ([`effective_threads`]).
    pub threads: Option<usize>,
    /// The order of the commutative operands of f64 instructions, which decides which of two NaN
    /// operands wins ([`order`]): PTX order (the default), or swapped as ptxas may swap them.
    pub f64_operand_order: F64OperandOrder,
    /// Whose tensor-core arithmetic `mma.sync` and `wgmma` compute ([`tensor_core`]): `None` (the
    /// default) takes it from the module's `.target` ([`Module::tensor_cores`]); `Some` is the
    /// device the PTX runs on, whatever it was compiled for.
    pub tensor_cores: Option<TensorCores>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            fuel: DEFAULT_FUEL,
            warp_fuel: DEFAULT_WARP_FUEL,
            threads: None,
            f64_operand_order: F64OperandOrder::Ptx,
            tensor_cores: None,
        }
    }
}

impl Options {
    /// These options with the launch's fuel and the per-warp limit both `n`.
    pub fn with_fuel(self, n: u64) -> Options {
        Options { fuel: n, warp_fuel: n, ..self }
    }
}

/// What a launch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions executed, once per active lane (guarded-off lanes included).
    pub thread_instructions: u64,
    /// Instructions executed, once per warp.
    pub warp_instructions: u64,
    /// Bytes read from global memory by `ld` (global or generic) and `cp.async` (its source).
    pub global_bytes_read: u64,
    /// Bytes written to global memory by `st` (global or generic).
    pub global_bytes_written: u64,
    /// Global load instructions executed, once per executing lane: `ld` of any width (global or
    /// generic, as `global_bytes_read` counts them) and `cp.async`. `global_bytes_read` over this
    /// is the bytes one load moved on average: 4 for scalar `f32`, 16 for `.v4.f32` or
    /// `cp.async` of 16 bytes (a zero-filling `cp.async` counts, moving fewer or no bytes).
    pub global_load_instructions: u64,
    /// Global store instructions executed (`st` of any width, global or generic), once per
    /// executing lane; `global_bytes_written` over this is the bytes one store moved on average.
    pub global_store_instructions: u64,
    /// Block-wide barrier completions.
    pub barriers: u64,
    pub blocks: u64,
    pub threads: u64,
}

impl Stats {
    fn add(mut self, o: Stats) -> Stats {
        self.thread_instructions += o.thread_instructions;
        self.warp_instructions += o.warp_instructions;
        self.global_bytes_read += o.global_bytes_read;
        self.global_bytes_written += o.global_bytes_written;
        self.global_load_instructions += o.global_load_instructions;
        self.global_store_instructions += o.global_store_instructions;
        self.barriers += o.barriers;
        self.blocks += o.blocks;
        self.threads += o.threads;
        self
    }
}

/// The type of a `.param` (and of registers and memory operations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    BF16,
    F32,
    F64,
    Pred,
}

impl ScalarType {
    /// Size in bytes (`.pred`: 1).
    pub fn size(self) -> u32 {
        use ScalarType::*;
        match self {
            B8 | U8 | S8 | Pred => 1,
            B16 | U16 | S16 | F16 | BF16 => 2,
            B32 | U32 | S32 | F32 => 4,
            B64 | U64 | S64 | F64 => 8,
        }
    }

    /// The PTX spelling without the dot (`u32`).
    pub fn name(self) -> &'static str {
        use ScalarType::*;
        match self {
            B8 => "b8",
            B16 => "b16",
            B32 => "b32",
            B64 => "b64",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            S8 => "s8",
            S16 => "s16",
            S32 => "s32",
            S64 => "s64",
            F16 => "f16",
            BF16 => "bf16",
            F32 => "f32",
            F64 => "f64",
            Pred => "pred",
        }
    }
}

/// One `.param` of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub ty: ScalarType,
    /// Element count of an array parameter (`.param .align 8 .b8 s[16]`), `None` for a scalar.
    pub array: Option<u32>,
    /// Total size in bytes.
    pub size: u32,
    /// Offset in the parameter space.
    pub offset: u32,
    /// `.ptr.global` / `.ptr.shared` attribute, when written.
    pub ptr_space: Option<String>,
    /// 1-based PTX line of the declaration.
    pub line: u32,
}

/// A `.entry` of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub params: Vec<Param>,
    /// Bytes of static `.shared` memory the entry uses (module- and entry-level declarations).
    pub static_shared_bytes: u32,
    /// 1-based PTX line of `.entry`.
    pub line: u32,
    /// The block shape `.reqntid` requires (omitted dimensions 1), if the entry declares one.
    pub reqntid: Option<[u32; 3]>,
    /// The extents `.maxntid` allows (omitted dimensions 1): a block may have at most their
    /// product of threads.
    pub maxntid: Option<[u32; 3]>,
}

/// A loaded PTX module: every entry parsed, every instruction decoded and checked.
pub struct Module {
    entries: Vec<Entry>,
    program: prog::Program,
}

impl Module {
    /// Parses and decodes PTX text. Syntax errors, undeclared names and instructions the emulator
    /// does not implement are errors with the line and column.
    pub fn parse(text: &str) -> Result<Module, ParseError> {
        let program = parse::parse_program(text)?;
        let entries = program.kernels.iter().map(|k| k.info.clone()).collect();
        Ok(Module { entries, program })
    }

    /// The `XX` of the module's `.target sm_XX` (`sm_90a` gives 90), if it names one.
    pub fn target_sm(&self) -> Option<u32> {
        self.program.sm
    }

    /// The tensor-core rule of the module's `.target` ([`TensorCores::for_sm`]): the A100's for
    /// targets below sm_90, the H100's for sm_90 and up and for a module without an `sm_` target.
    /// [`Options::tensor_cores`] runs it as another device would.
    pub fn tensor_cores(&self) -> TensorCores {
        TensorCores::for_sm(self.program.sm.unwrap_or(90))
    }

    /// The module's entries, in text order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry named `name`.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

fn check_shape(cfg: &LaunchConfig) -> Result<(), EmuError> {
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    if cfg.block.contains(&0) || cfg.grid.contains(&0) {
        return Err(EmuError::invalid(format!(
            "grid ({gx}, {gy}, {gz}) and block ({bx}, {by}, {bz}) must have every dimension at least 1"
        )));
    }
    if bx > 1024 || by > 1024 || bz > 64 || bx as u64 * by as u64 * bz as u64 > 1024 {
        return Err(EmuError::invalid(format!(
            "block ({bx}, {by}, {bz}) is too large: at most 1024 threads, x and y at most 1024, z at most 64"
        )));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return Err(EmuError::invalid(format!(
            "grid ({gx}, {gy}, {gz}) is too large: x at most 2^31-1, y and z at most 65535"
        )));
    }
    Ok(())
}

/// The parameter space of a launch, from the arguments.
fn param_bytes(k: &prog::Kernel, args: &[Arg], mem: &Memory) -> Result<Vec<u8>, EmuError> {
    let params = &k.info.params;
    if args.len() != params.len() {
        return Err(EmuError::invalid(format!(
            "entry `{}` takes {} arguments, given {}",
            k.info.name,
            params.len(),
            args.len()
        )));
    }
    let mut out = vec![0u8; k.param_bytes as usize];
    for (p, a) in params.iter().zip(args) {
        let bytes: Vec<u8> = match a {
            Arg::Scalar(v) => {
                if p.size > 8 {
                    return Err(EmuError::invalid(format!(
                        "parameter `{}` is {} bytes; pass it as Arg::Bytes",
                        p.name, p.size
                    )));
                }
                v.to_le_bytes()[..p.size as usize].to_vec()
            }
            Arg::Buffer(id) => {
                if p.size != 8 {
                    return Err(EmuError::invalid(format!(
                        "parameter `{}` is a {}-byte .{}; a buffer's address needs a 64-bit parameter",
                        p.name,
                        p.size,
                        p.ty.name()
                    )));
                }
                mem.address(*id)
                    .map_err(|e| EmuError::invalid(format!("argument for `{}`: {e}", p.name)))?
                    .to_le_bytes()
                    .to_vec()
            }
            Arg::Bytes(b) => {
                if b.len() != p.size as usize {
                    return Err(EmuError::invalid(format!(
                        "parameter `{}` takes {} bytes, given {}",
                        p.name,
                        p.size,
                        b.len()
                    )));
                }
                b.clone()
            }
        };
        out[p.offset as usize..(p.offset + p.size) as usize].copy_from_slice(&bytes);
    }
    Ok(out)
}

/// Host threads worth starting for `requested` and `nblocks` blocks: at least 1, at most the
/// machine's cores and the number of blocks.
pub fn effective_threads(requested: usize, nblocks: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    requested.clamp(1, cores.max(1)).min(usize::try_from(nblocks).unwrap_or(usize::MAX)).max(1)
}

/// Runs entry `entry` of `module` over the launch shape, with `args` (one per `.param`, in order)
/// against the buffers of `mem`. On a fault, the buffers hold what the kernel wrote before it.
pub fn launch(
    module: &Module,
    entry: &str,
    cfg: &LaunchConfig,
    args: &[Arg],
    mem: &mut Memory,
    opts: &Options,
) -> Result<Stats, EmuError> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    let Some(k) = module.program.kernels.iter().find(|k| k.info.name == entry) else {
        let names: Vec<&str> = module.entries.iter().map(|e| e.name.as_str()).collect();
        return Err(EmuError::invalid(format!("no entry `{entry}` in the module (entries: {})", names.join(", "))));
    };
    check_shape(cfg)?;
    if let Some(r) = k.info.reqntid {
        if r != cfg.block {
            let ([x, y, z], [bx, by, bz]) = (r, cfg.block);
            return Err(EmuError::invalid(format!(
                "entry `{entry}` declares `.reqntid {x}, {y}, {z}` but is launched with block ({bx}, {by}, {bz})"
            )));
        }
    }
    if let Some(m) = k.info.maxntid {
        let max: u64 = m.iter().map(|&d| d as u64).product();
        let threads: u64 = cfg.block.iter().map(|&d| d as u64).product();
        if threads > max {
            let ([x, y, z], [bx, by, bz]) = (m, cfg.block);
            return Err(EmuError::invalid(format!(
                "entry `{entry}` declares `.maxntid {x}, {y}, {z}` (at most {max} threads per block) but is launched with block ({bx}, {by}, {bz}) = {threads} threads"
            )));
        }
    }
    let params = param_bytes(k, args, mem)?;
    let shared_bytes = if cfg.dynamic_shared_bytes > 0 {
        k.dynamic_shared_offset as u64 + cfg.dynamic_shared_bytes as u64
    } else {
        k.static_shared as u64
    };
    if shared_bytes > MAX_SHARED_BYTES as u64 {
        return Err(EmuError::invalid(format!(
            "{shared_bytes} bytes of shared memory per block ({} static + {} dynamic) exceed {MAX_SHARED_BYTES}",
            k.static_shared, cfg.dynamic_shared_bytes
        )));
    }
    let mut regions: Vec<exec::Region> = mem
        .buffers
        .iter_mut()
        .filter(|b| b.live)
        .map(|b| exec::Region { start: b.addr, len: b.len, ptr: b.words.as_mut_ptr() as *mut u8, name: b.name.clone() })
        .collect();
    regions.sort_by_key(|r| r.start);
    let cx = exec::LaunchCtx {
        k,
        cfg: *cfg,
        params,
        global: exec::GlobalView { regions },
        shared_bytes: shared_bytes as u32,
        fuel: opts.fuel,
        warp_fuel: opts.warp_fuel,
        f64_order: opts.f64_operand_order,
        tensor_cores: opts.tensor_cores.unwrap_or_else(|| module.tensor_cores()),
        fuel_used: AtomicU64::new(0),
        first_fail: AtomicU64::new(u64::MAX),
    };
    let nblocks = cfg.grid.iter().map(|&g| g as u64).product::<u64>();
    let sequential = k.global_atomics || nblocks == 1 || opts.threads == Some(1);
    let total;
    if sequential {
        let mut wk = exec::Worker::new(&cx)?;
        for b in 0..nblocks {
            wk.run_block(&cx, b)?;
        }
        wk.settle_fuel(&cx)?;
        total = wk.stats;
    } else {
        // The lowest failing block index wins; blocks above it stop early.
        let first_fail = &cx.first_fail;
        let failure: Mutex<Option<(u64, EmuError)>> = Mutex::new(None);
        let stats: Mutex<Stats> = Mutex::new(Stats::default());
        // Blocks go to host threads in contiguous chunks, one worker (register file, shared
        // memory) per chunk; a few chunks per thread balance uneven blocks.
        let body = || {
            let nchunks = (rayon::current_num_threads() as u64 * 8).clamp(1, nblocks);
            (0..nchunks).into_par_iter().for_each(|c| {
                let (lo, hi) = (c * nblocks / nchunks, (c + 1) * nblocks / nchunks);
                let mut wk = match exec::Worker::new(&cx) {
                    Ok(wk) => wk,
                    Err(e) => {
                        first_fail.fetch_min(lo, Ordering::Relaxed);
                        let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                        *f = Some((lo, e));
                        return;
                    }
                };
                for b in lo..hi {
                    if b > first_fail.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = wk.run_block(&cx, b).and_then(|()| wk.settle_fuel(&cx));
                    if let Err(e) = r {
                        if e.kind == ErrorKind::InvalidLaunch && e.message.starts_with("aborted") {
                            break;
                        }
                        first_fail.fetch_min(b, Ordering::Relaxed);
                        let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                        if f.as_ref().map_or(true, |(fb, _)| b < *fb) {
                            *f = Some((b, e));
                        }
                        break;
                    }
                }
                let mut t = stats.lock().unwrap_or_else(|p| p.into_inner());
                *t = t.add(std::mem::take(&mut wk.stats));
            });
        };
        let pool;
        match opts.threads {
            Some(n) => {
                pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(effective_threads(n, nblocks))
                    .build()
                    .map_err(|e| EmuError::invalid(format!("cannot start {n} host threads: {e}")))?;
                pool.install(body);
            }
            None => body(),
        }
        if let Some((_, e)) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        total = stats.into_inner().unwrap_or_else(|p| p.into_inner());
    }
    Ok(total)
}

#[cfg(test)]
mod thread_count_tests {
    #[test]
    fn requested_threads_are_clamped_to_cores_and_blocks() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(super::effective_threads(100_000, 4), cores.min(4));
        assert_eq!(super::effective_threads(1_000, 1 << 40), cores);
        assert_eq!(super::effective_threads(0, 10), 1);
        assert_eq!(super::effective_threads(3, 1), 1);
    }
}

#[cfg(test)]
mod target_tests {
    use super::{Module, TensorCores};

    fn module(target: &str) -> Module {
        Module::parse(&format!(
            ".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k()\n{{\n    ret;\n}}\n"
        ))
        .unwrap()
    }

    #[test]
    fn the_target_names_the_tensor_core_rule() {
        for (target, sm, rule) in [
            ("sm_80", Some(80), TensorCores::Sm80),
            ("sm_89", Some(89), TensorCores::Sm80),
            ("sm_90a", Some(90), TensorCores::Sm90),
            ("sm_86, debug", Some(86), TensorCores::Sm80),
            ("sm_100a", Some(100), TensorCores::Sm90),
        ] {
            let m = module(target);
            assert_eq!((m.target_sm(), m.tensor_cores()), (sm, rule), ".target {target}");
        }
    }
}
