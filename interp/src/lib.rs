//! kir-interp: a SIMT interpreter that runs `.kir` kernels on the CPU, with runtime checks. It is
//! the oracle the GPU is compared against.
//!
//! # Launch model
//! A launch ([`launch_verified`]) runs a kernel over a grid of blocks, each of `block.x * block.y *
//! block.z` threads grouped in warps of 32 (linear thread index `x + y*bx + z*bx*by`; the last warp
//! may be partial). A kernel that declares `reqntid(x, y, z)` is launched only with exactly that
//! block; any other block is an invalid launch. A kernel with a full-mask warp collective (in its
//! own code or a function it reaches) runs only in blocks whose thread count is a multiple of 32
//! ([`kir_ir::analysis::warps`]): any other block is an invalid launch naming the collective. Every block has its own zero-initialized shared memory (static declarations in
//! order, each at its alignment, then the dynamic one sized by
//! [`LaunchConfig::dynamic_shared_bytes`]); global buffers are shared by all blocks.
//!
//! # Only verified IR runs
//! [`launch_verified`] takes a kernel of a [`kir_ir::verify::Verified`] module and
//! [`graph::run_graph`] a `Verified` module: validity is in their types, and there is no entry
//! point for a plain `Kernel`. A [`kir_ir::verify::Checked`] module (what
//! [`kir_ir::verify::check`] returns: also barrier-verified) derefs to its `Verified` one. The
//! interpreter asks for the verifier's proof only, not for barrier verification: it is the oracle
//! that checks barriers and collectives at run time (a block whose threads wait at different
//! barriers, a collective whose lanes differ from its mask, are faults), which is how the static
//! checks' soundness is tested and how `; test: fault` files show those faults.
//!
//! # Functions
//! A kernel's calls resolve by name among its module's functions ([`kir_ir::Module::funcs`]),
//! once per launch, for the functions the kernel reaches. Calls run as written, not inlined: each
//! warp keeps a stack of call frames (registers and reconvergence entries per call; see
//! [`exec`]), so running a module as written and after inlining is a real differential test.
//! Graphs ([`graph::run_graph`]) launch with their module's functions.
//!
//! # Semantics guaranteed
//! - Warps run in lockstep with a per-lane active mask; divergent branches reconverge at the
//!   immediate post-dominator of the branch block (the classic SIMT stack, see [`exec`]), in
//!   kernels and functions alike. Pure ops are evaluated by `kir_ir::eval`, the single definition
//!   shared with constant folding.
//! - A barrier is identified by its instruction and the chain of call sites that reached it: every
//!   thread of the block must wait at the same one.
//! - Vectors (`vec<N, T>`) are the bits of their elements, element 0 lowest; `load.vN`/`store.vN`
//!   are single accesses that must be aligned to their size (else a [`FaultKind::Misaligned`]
//!   fault naming the offset, the address and the alignment). `mma` computes what the tensor
//!   cores of [`Options::tensor_cores`] compute (`kir_ir::eval::tensor_core`), with the PTX ISA's
//!   fragment layouts; `mma` and `ldmatrix` need the whole warp converged (else a divergent
//!   collective fault). A `cp.async` reads global memory when issued and writes shared memory at
//!   the covering `cp.async.wait` of its thread; accesses to its destination before then, and a
//!   thread that ends without waiting, are [`FaultKind::AsyncCopyInFlight`] faults (`exec::ext`
//!   states all of it).
//! - Atomics are sequentially consistent: within a block warps run one at a time; across blocks,
//!   a kernel with any atomic on global memory runs its blocks one at a time in block-index order.
//!   `atom.add` on floats rounds to nearest with the H100's subnormal and NaN rules, which differ
//!   between global and shared memory (see `exec::atom_add`).
//! - [`launch_enclosed`] also computes, per value (per element of a vector), an enclosure of every
//!   result the hardware may give within the approximate ops' measured error bounds ([`enclose`]);
//!   plain launches run a separate copy of the warp loop, on programs without the enclosure run's
//!   element slots, and pay nothing for it.
//! - Data races (`--races`) follow the PTX memory model: a plain write races with any unordered
//!   access of another thread, and a plain access with an unordered atomic; atomics never race
//!   with each other ([`race`] states the rule and what the shadow keeps).
//! - Faults ([`FaultKind`]) are typed errors with block/thread coordinates and the instruction's
//!   span (inside a function: the function's instruction, with a note and labels naming the call
//!   sites); invalid launches and interpreter bugs are other [`ErrorKind`]s. Nothing panics.
//!
//! # Determinism contract
//! For a given kernel, launch shape, arguments and options, outputs, statistics and the reported
//! error are the same whatever the number of host threads, provided the kernel has no cross-block
//! data race. Blocks run in parallel (rayon) against the one global memory, but:
//! - within a block, warps are scheduled in a fixed order, so even intra-block races (a kernel bug,
//!   reported with `--races`) give reproducible results;
//! - kernels with global atomics run block by block in index order, so the values atomics return
//!   (and float atomic sums, which depend on order) are reproducible too;
//! - when several blocks fail, the error of the lowest block index is reported.
//!
//! What is NOT deterministic: a cross-block data race (a plain write in one block and any access
//! in another, or a plain access and an atomic in different blocks: the rule is in [`race`]) is
//! the kernel's bug: its outcome may depend on host scheduling, and
//! `--races` reports it (which pair of threads is named may vary). When a multi-block launch runs out
//! of fuel, whether it fails is deterministic (the total count of thread-instructions is), but the
//! instruction named may vary with more than one host thread.
//!
//! # Limits (so an untrusted `.kir` file cannot exhaust the machine)
//! [`Options::fuel`] caps thread-instructions per launch (default [`DEFAULT_FUEL`]) and
//! [`Options::warp_fuel`] the instructions of one warp in one block (default [`DEFAULT_WARP_FUEL`]),
//! so a spinning thread is reported in about a second; buffers are
//! capped at [`MAX_BUFFER_BYTES`] each (and [`MAX_RACE_BYTES`] in total with `--races`, whose
//! shadow takes 48 bytes per granule of 1 to 8 bytes), shared memory at [`MAX_SHARED_BYTES`] per
//! block, a block's register file (with the call frames of the deepest call chain) at
//! [`MAX_REGISTER_BYTES`]. One memory budget per run
//! ([`max_memory`], default [`DEFAULT_MAX_MEMORY`], `--max-memory`) bounds the arguments' buffers
//! together (checked before any is made: [`args::check_buffer_budget`]), a graph's buffers with
//! its temporaries, and a launch's buffers with its race shadow — an error, never an abort.

pub mod args;
pub mod buffer;
pub mod enclose;
pub mod error;
pub mod exec;
mod fragments;
pub mod graph;
mod mem;
pub mod npy;
pub mod outputs;
mod prog;
pub(crate) mod race;

pub use buffer::Buffer;
pub use error::{ErrorKind, FaultKind, InterpError};

use exec::{LaunchCtx, Worker};
pub use kir_ir::eval::tensor_core::TensorCoreRule;
use kir_ir::types::{AddrSpace, Constant, Type};
use kir_ir::Kernel;
use prog::Progs;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Default fuel: 2^32 thread-instructions per launch (about a minute of interpretation).
pub const DEFAULT_FUEL: u64 = 1 << 32;
/// Default per-warp limit: 2^26 instructions of one warp in one block (about a second when a
/// single thread spins; far more than any kernel of `kernels/` needs per warp).
pub const DEFAULT_WARP_FUEL: u64 = 1 << 26;
/// Largest buffer a launch accepts (4 GiB).
pub const MAX_BUFFER_BYTES: u64 = 1 << 32;
/// Default memory budget of one run: every buffer of its arguments (and a graph's temporaries)
/// together, and a launch's buffers plus its race-detection shadow, at most 8 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 8 << 30;

static MAX_MEMORY: AtomicU64 = AtomicU64::new(DEFAULT_MAX_MEMORY);

/// Sets the memory budget of every later run in this process (`--max-memory BYTES`).
pub fn set_max_memory(bytes: u64) {
    MAX_MEMORY.store(bytes, Ordering::Relaxed);
}

/// The memory budget of a run ([`DEFAULT_MAX_MEMORY`] unless [`set_max_memory`] changed it).
pub fn max_memory() -> u64 {
    MAX_MEMORY.load(Ordering::Relaxed)
}

/// `Err` naming `what` when `bytes` is over the memory budget.
pub fn check_memory(bytes: u64, what: &str) -> Result<(), String> {
    let limit = max_memory();
    if bytes > limit {
        return Err(format!(
            "{what} need {bytes} bytes, more than the memory budget of {limit} bytes (raise it with --max-memory BYTES)"
        ));
    }
    Ok(())
}
/// Largest total of global buffers with race detection on (256 MiB; the shadow is up to 48x that:
/// 48 bytes per granule, the smallest global access size of the kernel; the memory budget,
/// [`max_memory`], bounds buffers and shadow together).
pub const MAX_RACE_BYTES: u64 = 1 << 28;
/// Largest shared memory per block (227 KiB, as on sm_90).
pub const MAX_SHARED_BYTES: u64 = 227 * 1024;
/// Largest register file of one block (64 MiB: values x warps x 32 lanes x 8 bytes).
pub const MAX_REGISTER_BYTES: u64 = 64 << 20;

/// A kernel argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A scalar of exactly the parameter's type.
    Scalar(Constant),
    /// A global pointer to the start of `buffers[index]`.
    Buffer(usize),
}

/// The launch shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig { grid: [grid, 1, 1], block: [block, 1, 1], dynamic_shared_bytes: 0 }
    }
}

/// Checks and limits of a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Report shared- and global-memory data races between barriers.
    pub races: bool,
    /// Report reads of shared memory no thread of the block has written.
    pub uninit: bool,
    /// Thread-instructions the launch may execute (instructions and terminators, counted per
    /// active lane).
    pub fuel: u64,
    /// Instructions one warp may execute in one block (counted once per warp step, whatever its
    /// active lanes): a thread that spins forever is reported within about a second, long before
    /// the launch's `fuel` runs out. Default [`DEFAULT_WARP_FUEL`]; [`Options::with_fuel`] sets
    /// both limits (what `--fuel N` does).
    pub warp_fuel: u64,
    /// Host threads for blocks; `None` uses rayon's global pool (all cores). Clamped to the cores
    /// and the blocks ([`effective_threads`]).
    pub threads: Option<usize>,
    /// The tensor-core arithmetic `mma` computes (`kir_ir::eval::tensor_core`): the device
    /// generation whose block size and alignment bits the results reproduce. Default
    /// [`TensorCoreRule::Sm90`] (H100/H200); [`TensorCoreRule::Sm80`] for an A100.
    pub tensor_cores: TensorCoreRule,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            races: false,
            uninit: false,
            fuel: DEFAULT_FUEL,
            warp_fuel: DEFAULT_WARP_FUEL,
            threads: None,
            tensor_cores: TensorCoreRule::default(),
        }
    }
}

impl Options {
    /// These options with the launch's fuel and the per-warp limit both `n` (`--fuel N`: a user
    /// who raises the fuel for a long kernel means it for its longest warp too).
    pub fn with_fuel(self, n: u64) -> Options {
        Options { fuel: n, warp_fuel: n, ..self }
    }
}

/// What a launch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions and terminators executed, counted once per active lane.
    pub thread_instructions: u64,
    /// Instructions and terminators executed, counted once per warp.
    pub warp_instructions: u64,
    pub global_bytes_read: u64,
    pub global_bytes_written: u64,
    /// Block-wide barrier completions.
    pub barriers: u64,
    pub blocks: u64,
    pub threads: u64,
}

impl Stats {
    /// The sum of two launches' statistics.
    pub(crate) fn add(mut self, o: Stats) -> Stats {
        self.thread_instructions += o.thread_instructions;
        self.warp_instructions += o.warp_instructions;
        self.global_bytes_read += o.global_bytes_read;
        self.global_bytes_written += o.global_bytes_written;
        self.barriers += o.barriers;
        self.blocks += o.blocks;
        self.threads += o.threads;
        self
    }
}

fn check_shape(cfg: &LaunchConfig) -> Result<(), InterpError> {
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    if cfg.block.contains(&0) || cfg.grid.contains(&0) {
        return Err(InterpError::invalid(format!(
            "grid ({gx}, {gy}, {gz}) and block ({bx}, {by}, {bz}) must have every dimension at least 1"
        )));
    }
    if bx > 1024 || by > 1024 || bz > 64 || bx as u64 * by as u64 * bz as u64 > 1024 {
        return Err(InterpError::invalid(format!(
            "block ({bx}, {by}, {bz}) is too large: at most 1024 threads, x and y at most 1024, z at most 64"
        )));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return Err(InterpError::invalid(format!(
            "grid ({gx}, {gy}, {gz}) is too large: x at most 2^31-1, y and z at most 65535"
        )));
    }
    Ok(())
}

/// A kernel that declares `reqntid(x, y, z)` runs only with exactly that block.
fn check_reqntid(kernel: &Kernel, cfg: &LaunchConfig) -> Result<(), InterpError> {
    let Some(r) = kernel.reqntid else { return Ok(()) };
    if r.dims == cfg.block {
        return Ok(());
    }
    let [bx, by, bz] = cfg.block;
    let [x, y, z] = r.dims;
    let e = InterpError::invalid(format!(
        "kernel @{} declares `{}` (block ({x}, {y}, {z})) but is launched with block ({bx}, {by}, {bz})",
        kernel.name,
        r.to_text()
    ))
    .with_note("a kernel with `reqntid` must be launched with exactly that block shape (as PTX `.reqntid` requires)");
    Err(if r.span.is_dummy() { e } else { e.at(r.span, "the required block shape") })
}

/// A kernel with a full-mask collective runs only in blocks of whole warps
/// ([`kir_ir::analysis::warps`]): `Err` is the [`ErrorKind::InvalidLaunch`] error every launch of
/// `kernel` (its calls resolved in `funcs`) with `cfg`'s block gets, naming the collective. Public
/// so that other launch paths (`kir test`'s PTX-emulator and GPU rows) refuse the same launches.
pub fn check_whole_warps(funcs: &[Kernel], kernel: &Kernel, cfg: &LaunchConfig) -> Result<(), InterpError> {
    let Some(v) = kir_ir::analysis::warps::whole_warps_violation(funcs, kernel, cfg.block) else { return Ok(()) };
    let e = InterpError::invalid(v.message(kernel, cfg.block))
        .with_note(kir_ir::analysis::warps::WholeWarpsViolation::HINT);
    Err(if v.collective.span.is_dummy() { e } else { e.at(v.collective.span, "needs all 32 lanes of its warp") })
}

/// Parameter bits for the launch and, per buffer, the names of the parameters bound to it.
fn check_args(kernel: &Kernel, args: &[Arg], buffers: &[Buffer]) -> Result<(Vec<u64>, Vec<String>), InterpError> {
    if args.len() != kernel.params.len() {
        return Err(InterpError::invalid(format!(
            "kernel @{} takes {} arguments, given {}",
            kernel.name,
            kernel.params.len(),
            args.len()
        )));
    }
    let mut names: Vec<Vec<String>> = vec![vec![]; buffers.len()];
    let mut bits = Vec::with_capacity(args.len());
    for (p, a) in kernel.params.iter().zip(args) {
        let Some(v) = kernel.values.get(p.index()) else {
            return Err(InterpError::invalid("malformed kernel: undefined parameter (run `kir check`)"));
        };
        let name = &v.name;
        match (v.ty, a) {
            (Type::Scalar(t), Arg::Scalar(c)) if c.ty == t => bits.push(c.bits & t.mask()),
            (Type::Scalar(t), Arg::Scalar(c)) => {
                return Err(InterpError::invalid(format!("argument %{name} must be a {t}, given a {}", c.ty)))
            }
            (Type::Scalar(t), Arg::Buffer(_)) => {
                return Err(InterpError::invalid(format!("argument %{name} must be a {t} scalar, given a buffer")))
            }
            (Type::Ptr(AddrSpace::Shared, _), _) => {
                return Err(InterpError::invalid(format!(
                    "parameter %{name} is a shared-memory pointer; a launch cannot pass one"
                )))
            }
            (Type::Ptr(AddrSpace::Global, elem), Arg::Buffer(i)) => {
                let Some(b) = buffers.get(*i) else {
                    return Err(InterpError::invalid(format!(
                        "argument %{name} names buffer {i}, but only {} buffers were given",
                        buffers.len()
                    )));
                };
                if b.elem != elem {
                    return Err(InterpError::invalid(format!(
                        "argument %{name} must be a buffer of {elem}, given a buffer of {}",
                        b.elem
                    )));
                }
                names[*i].push(format!("%{name}"));
                bits.push(mem::make_ptr(*i as u32 + 1, 0));
            }
            (Type::Vec(..), _) => {
                return Err(InterpError::invalid(format!(
                    "parameter %{name} is a {}; vectors cannot be kernel parameters (run `kir check`)",
                    v.ty
                )))
            }
            (Type::Ptr(..), Arg::Scalar(c)) => {
                return Err(InterpError::invalid(format!(
                    "argument %{name} must be a buffer ({}), given a {} scalar",
                    v.ty, c.ty
                )))
            }
        }
    }
    let names = names
        .into_iter()
        .enumerate()
        .map(|(i, n)| if n.is_empty() { format!("#{i}") } else { format!("`{}`", n.join("`/`")) })
        .collect();
    Ok((bits, names))
}

/// Runs a kernel of a [`Verified`](kir_ir::verify::Verified) module over the launch shape with the
/// given arguments, reading and writing `buffers`: the one entry point for a kernel (what `kir
/// run`, `kir test` and `kir::api` use). The kernel's calls resolve against its module's
/// functions and run as written; the bodies' execution forms are built on the CFGs the verifier
/// built. Validity is in the type, so nothing is left unchecked; a
/// [`Checked`](kir_ir::verify::Checked) module derefs to its `Verified` one.
///
/// On success the buffers hold the kernel's results. On a kernel fault the buffers hold whatever
/// the blocks wrote before stopping.
pub fn launch_verified(
    kernel: kir_ir::verify::VerifiedKernel<'_>,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &mut [Buffer],
    opts: &Options,
) -> Result<Stats, InterpError> {
    launch_impl(kernel.module(), kernel.kernel(), cfg, args, buffers, opts, None)
}

/// [`launch_verified`] that also computes, for every value, an enclosure of every result the
/// hardware may produce given its approximate ops' measured error bounds ([`enclose`]): the
/// enclosures of the buffers' elements that are not exact, and whether the enclosures hold at all
/// ([`enclose::Enclosures::unusable`]). Blocks run one at a time; slower than a plain launch, which
/// pays nothing for this.
pub fn launch_enclosed(
    kernel: kir_ir::verify::VerifiedKernel<'_>,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &mut [Buffer],
    opts: &Options,
) -> Result<(Stats, enclose::Enclosures), InterpError> {
    let shared = enclose::EncShared::new(buffers.len());
    let stats = launch_impl(kernel.module(), kernel.kernel(), cfg, args, buffers, opts, Some(&shared))?;
    Ok((stats, shared.into_enclosures()))
}

/// Launches `kernel`, a kernel of `m`.
fn launch_impl(
    m: &kir_ir::verify::Verified,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &mut [Buffer],
    opts: &Options,
    enc: Option<&enclose::EncShared>,
) -> Result<Stats, InterpError> {
    check_shape(cfg)?;
    check_reqntid(kernel, cfg)?;
    check_whole_warps(&m.funcs, kernel, cfg)?;
    let (params, global_names) = check_args(kernel, args, buffers)?;
    let progs = Progs::build(m, kernel, enc.is_some())?;
    let prog = &progs.progs[0];

    // Shared memory layout.
    let mut shared_start = Vec::new();
    let mut shared_align = Vec::new();
    let mut shared_lens = Vec::new();
    let mut shared_names = Vec::new();
    let mut total: u64 = 0;
    for d in &kernel.shared {
        let align = (d.align.max(d.elem.bytes()).max(1)) as u64;
        let len = match d.len {
            Some(n) => n.saturating_mul(d.elem.bytes() as u64),
            None => cfg.dynamic_shared_bytes as u64,
        };
        total = total.div_ceil(align).saturating_mul(align);
        shared_start.push(total as usize);
        shared_align.push(align);
        shared_lens.push(len);
        shared_names.push(d.name.clone());
        total = total.saturating_add(len);
        if total > MAX_SHARED_BYTES {
            return Err(InterpError::invalid(format!(
                "shared memory of @{} needs more than {MAX_SHARED_BYTES} bytes per block (at `@{}`)",
                kernel.name, d.name
            ))
            .at(d.span, "too large"));
        }
    }

    let nthreads = cfg.block.iter().product::<u32>();
    let nwarps = nthreads.div_ceil(32) as usize;
    if (progs.stride as u64).saturating_mul(nwarps as u64 * 256) > MAX_REGISTER_BYTES {
        let what = if progs.stride > prog.nslots {
            format!(
                "kernel @{} has {} values, {} with the call frames of its deepest chain of calls",
                kernel.name, prog.nslots, progs.stride
            )
        } else {
            format!("kernel @{} has {} values", kernel.name, prog.nslots)
        };
        return Err(InterpError::invalid(format!(
            "{what}; with {nwarps} warps per block its register file exceeds {MAX_REGISTER_BYTES} bytes"
        )));
    }
    let mut total_global = 0u64;
    for (i, b) in buffers.iter().enumerate() {
        if b.bytes.len() as u64 > MAX_BUFFER_BYTES {
            return Err(InterpError::invalid(format!(
                "buffer {i} has {} bytes; at most {MAX_BUFFER_BYTES} are allowed",
                b.bytes.len()
            )));
        }
        total_global += b.bytes.len() as u64;
    }
    if opts.races && total_global > MAX_RACE_BYTES {
        return Err(InterpError::invalid(format!(
            "--races supports at most {MAX_RACE_BYTES} bytes of buffers per launch, given {total_global}"
        )));
    }
    // The shadow of race detection: `race::WORDS` words per granule (the smallest global access
    // size).
    let shadow =
        if opts.races { (total_global >> prog.race_shift[0]).saturating_mul(8 * race::WORDS as u64) } else { 0 };
    check_memory(total_global.saturating_add(shadow), "the launch's buffers and race-detection shadow")
        .map_err(InterpError::invalid)?;

    // Global memory must be 8-byte aligned for atomic element access: copy misaligned buffers.
    let mut aligned: Vec<Option<Vec<u64>>> = buffers
        .iter()
        .map(|b| {
            (!b.bytes.is_empty() && b.bytes.as_ptr() as usize % 8 != 0).then(|| {
                let mut v = vec![0u64; b.bytes.len().div_ceil(8)];
                bytemuck_copy_in(&mut v, &b.bytes);
                v
            })
        })
        .collect();
    let result = {
        let mut views: Vec<&mut [u8]> = buffers
            .iter_mut()
            .zip(aligned.iter_mut())
            .map(|(b, a)| match a {
                Some(v) => {
                    let n = b.bytes.len();
                    // SAFETY: a Vec<u64> of ceil(n/8) elements holds at least n initialized bytes.
                    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, n) }
                }
                None => &mut b.bytes[..],
            })
            .collect();
        let mut global = mem::GlobalMem::new(
            &mut views,
            opts.races,
            prog.race_shift[0],
            cfg.grid.iter().map(|&g| g as u64).product(),
        )
        .map_err(InterpError::invalid)?;
        global.race_sites_exact = runs_sequentially(prog, cfg, opts, enc.is_some());
        let fuel_used = AtomicU64::new(0);
        let cx = LaunchCtx {
            prog,
            progs: &progs.progs,
            stride: progs.stride,
            global: &global,
            enc,
            opts,
            grid: cfg.grid,
            block: cfg.block,
            nthreads,
            nwarps,
            params,
            shared_start,
            shared_align,
            shared_lens,
            shared_total: total as usize,
            shared_names,
            global_names,
            fuel_used: &fuel_used,
            fuel: opts.fuel,
            warp_fuel: opts.warp_fuel,
        };
        run_blocks(&cx, cfg)
    };
    for (b, a) in buffers.iter_mut().zip(aligned) {
        if let Some(v) = a {
            let n = b.bytes.len();
            // SAFETY: as above.
            b.bytes.copy_from_slice(unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, n) });
        }
    }
    result
}

fn bytemuck_copy_in(dst: &mut [u64], src: &[u8]) {
    for (i, chunk) in src.chunks(8).enumerate() {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        dst[i] = u64::from_ne_bytes(b);
    }
}

/// Host threads worth starting for `requested` and `nblocks` blocks: at least 1, at most the
/// machine's cores and the number of blocks (more cannot run anything in parallel, and each costs
/// a stack and a worker's buffers).
pub fn effective_threads(requested: usize, nblocks: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    requested.clamp(1, cores.max(1)).min(usize::try_from(nblocks).unwrap_or(usize::MAX)).max(1)
}

/// Whether a launch runs its blocks one at a time, in index order: kernels with global atomics
/// (whose results depend on the order), one block, one host thread, enclosure tracking.
fn runs_sequentially(prog: &prog::Prog, cfg: &LaunchConfig, opts: &Options, enclosures: bool) -> bool {
    let nblocks = cfg.grid.iter().map(|&g| g as u64).product::<u64>();
    prog.global_atomics || nblocks == 1 || opts.threads == Some(1) || enclosures
}

fn run_blocks(cx: &LaunchCtx, cfg: &LaunchConfig) -> Result<Stats, InterpError> {
    let nblocks = cfg.grid.iter().map(|&g| g as u64).product::<u64>();
    let sequential = runs_sequentially(cx.prog, cfg, cx.opts, cx.enc.is_some());
    let mut stats = if sequential {
        let mut w = Worker::new(cx);
        for b in 0..nblocks {
            w.run_block(cx, b)?;
        }
        w.stats
    } else {
        let first_err: Mutex<Option<(u64, InterpError)>> = Mutex::new(None);
        let stop_at = AtomicU64::new(u64::MAX);
        // Blocks go to host threads in contiguous chunks (a few per thread, to balance uneven
        // blocks), each run in order by one worker. A failing block lowers `stop_at`; every chunk
        // stops at its first block above it, so a fault ends the launch promptly however large the
        // grid, and blocks below the lowest failure so far still run (the lowest one is reported,
        // whatever the scheduling).
        let run = || {
            let nchunks = (rayon::current_num_threads() as u64 * 8).clamp(1, nblocks);
            (0..nchunks)
                .into_par_iter()
                .map(|c| {
                    let (lo, hi) = (c * nblocks / nchunks, (c + 1) * nblocks / nchunks);
                    if lo > stop_at.load(Ordering::Relaxed) {
                        return Stats::default();
                    }
                    let mut w = Worker::new(cx);
                    for b in lo..hi {
                        if b > stop_at.load(Ordering::Relaxed) {
                            break;
                        }
                        if let Err(e) = w.run_block(cx, b) {
                            stop_at.fetch_min(b, Ordering::Relaxed);
                            let mut slot = first_err.lock().unwrap_or_else(|p| p.into_inner());
                            if slot.as_ref().map_or(true, |(eb, _)| b < *eb) {
                                *slot = Some((b, e));
                            }
                            break;
                        }
                    }
                    w.stats
                })
                .reduce(Stats::default, Stats::add)
        };
        let stats = match cx
            .opts
            .threads
            .map(|n| effective_threads(n, nblocks))
            .and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().ok())
        {
            Some(pool) => pool.install(run),
            None => run(),
        };
        if let Some((_, e)) = first_err.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        stats
    };
    stats.blocks = nblocks;
    stats.threads = nblocks * cx.nthreads as u64;
    Ok(stats)
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
