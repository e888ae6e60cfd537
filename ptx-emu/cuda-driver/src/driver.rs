//! The emulated driver's state and operations, in safe Rust: one device, its primary context,
//! device memory (the emulator's [`Memory`]), modules, functions, streams and events. The C ABI
//! layer ([`crate`]) only converts pointers and calls these.
//!
//! Guarantees:
//! - Every operation checks what the real driver checks and fails with the code it uses: calls
//!   before `cuInit` give `CUDA_ERROR_NOT_INITIALIZED`; work without the current thread's context
//!   set to the live primary context gives `CUDA_ERROR_INVALID_CONTEXT`; unknown or destroyed
//!   handles give `CUDA_ERROR_INVALID_HANDLE`; bad sizes, ranges, launch shapes and shared-memory
//!   requests give `CUDA_ERROR_INVALID_VALUE`. Every failure carries a message saying exactly what
//!   was wrong (the C layer keeps the last one for `kirEmuLastError`).
//! - Work is synchronous: a copy, memset or launch is complete when its call returns, on any
//!   stream; events record the host's wall clock, so event timings are CPU wall time.
//! - Device memory is host memory tracked by address range: every allocation is a buffer of the
//!   emulator's [`Memory`] (addresses ≥ 4 GiB, 4 KiB guards between buffers, never reused), so a
//!   kernel's out-of-bounds access faults and names the buffer — by the kernel parameter it was
//!   last passed to. Copies and memsets must lie inside one live allocation.
//! - Modules are PTX text parsed by [`kir_ptx_emu::Module::parse`]; text the emulator rejects is
//!   `CUDA_ERROR_INVALID_PTX` with a ptxas-style log naming the line. The `.version` (at most 8.7,
//!   CUDA 12.8's) and `.target` (at most sm_90) are checked as the real JIT checks them, and so is
//!   static shared memory (at most 48 KiB per entry).
//! - A kernel fault (out-of-bounds or misaligned access, barrier divergence, collective mask
//!   violation, trap, fuel exhausted) is reported as the hardware reports it: the launch call
//!   succeeds, and every later call that does work returns the sticky error
//!   (`CUDA_ERROR_ILLEGAL_ADDRESS`, `CUDA_ERROR_MISALIGNED_ADDRESS`, `CUDA_ERROR_LAUNCH_FAILED` or
//!   `CUDA_ERROR_LAUNCH_TIMEOUT`) with the emulator's message, for the rest of the process — a
//!   program that works against this driver after a fault would not work on a GPU.
//! - Kernels run with the emulator's options, except what the environment sets at `cuInit` (an
//!   unusable value makes `cuInit` fail): each launch's fuel (`KIR_CUDA_EMU_FUEL`) and the order
//!   in which f64 instructions see their commutative operands (`KIR_CUDA_EMU_F64_OPERAND_ORDER`:
//!   `ptx`, the default, or `swapped`, the other order ptxas may choose: `kir_ptx_emu::order`).
//!   Tensor cores (`mma.sync`, `wgmma`) always compute as the device's, an sm_90's
//!   (`kir_ptx_emu::TensorCores::Sm90`), whatever the module's `.target`.

use crate::device;
use crate::types::*;
use kir_ptx_emu::{Arg, BufferId, ErrorKind, F64OperandOrder, FaultKind, LaunchConfig, Memory, Module, Options};
use std::collections::{HashMap, HashSet};
use std::ffi::c_int;
use std::sync::Arc;
use std::time::Instant;

/// A failed call: the code the driver returns and what went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fail {
    pub code: CUresult,
    pub message: String,
}

impl Fail {
    pub fn new(code: CUresult, message: impl Into<String>) -> Fail {
        Fail { code, message: message.into() }
    }
}

pub type R<T> = Result<T, Fail>;

fn invalid<T>(message: impl Into<String>) -> R<T> {
    Err(Fail::new(CUDA_ERROR_INVALID_VALUE, message))
}

/// Highest PTX ISA version the emulated driver accepts (CUDA 12.8's JIT).
const MAX_PTX_VERSION: (u32, u32) = (8, 7);
/// Handles that name the default stream: NULL, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`.
const DEFAULT_STREAMS: [usize; 3] = [0, 1, 2];

struct Ctx {
    handle: usize,
    refs: u32,
}

struct ModuleRec {
    module: Arc<Module>,
    /// `.version` as major*10 + minor (`CU_FUNC_ATTRIBUTE_PTX_VERSION`).
    ptx_version: c_int,
    /// Function handles already handed out, by entry name.
    functions: HashMap<String, usize>,
}

struct FuncRec {
    module: usize,
    entry: String,
    static_shared: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    max_dynamic_shared: u32,
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`.
    carveout: c_int,
}

struct EventRec {
    timing: bool,
    recorded: Option<Instant>,
}

/// Where the parameters of a launch are (the C layer reads them into [`Arg::Bytes`] by this).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    pub name: String,
    pub offset: u32,
    pub size: u32,
}

/// Grid, block and dynamic shared memory of a launch, as `cuLaunchKernel` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared: u32,
}

/// The whole driver: one device with one primary context.
pub struct State {
    initialized: bool,
    next_handle: usize,
    ctx: Option<Ctx>,
    mem: Memory,
    allocations: u64,
    modules: HashMap<usize, ModuleRec>,
    functions: HashMap<usize, FuncRec>,
    streams: HashSet<usize>,
    events: HashMap<usize, EventRec>,
    /// The first kernel fault: every later call that does work fails with it.
    sticky: Option<Fail>,
    /// Fuel of each launch (`KIR_CUDA_EMU_FUEL`, default the emulator's).
    fuel: u64,
    /// The order of f64 instructions' commutative operands (`KIR_CUDA_EMU_F64_OPERAND_ORDER`).
    f64_order: F64OperandOrder,
}

impl Default for State {
    fn default() -> State {
        State::new()
    }
}

/// Each launch's fuel: `KIR_CUDA_EMU_FUEL` (a positive integer) or the emulator's default; a value
/// that is not one makes `cuInit` fail, so a typo is never silently ignored.
fn fuel_from(var: Option<&str>) -> R<u64> {
    match var.map(str::trim) {
        None | Some("") => Ok(kir_ptx_emu::DEFAULT_FUEL),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => invalid(format!("KIR_CUDA_EMU_FUEL={v} is not a positive integer (instructions per launch)")),
        },
    }
}

/// The order in which f64 instructions see their commutative operands:
/// `KIR_CUDA_EMU_F64_OPERAND_ORDER` = `ptx` (the default) or `swapped`, the other order ptxas may
/// choose for them (`kir_ptx_emu::order`); any other value makes `cuInit` fail.
fn f64_order_from(var: Option<&str>) -> R<F64OperandOrder> {
    match var.map(str::trim) {
        None | Some("") => Ok(F64OperandOrder::Ptx),
        Some(v) => match F64OperandOrder::from_name(v) {
            Some(order) => Ok(order),
            None => invalid(format!("KIR_CUDA_EMU_F64_OPERAND_ORDER={v} is neither `ptx` nor `swapped`")),
        },
    }
}

impl State {
    pub fn new() -> State {
        State {
            initialized: false,
            next_handle: 0x1000,
            ctx: None,
            mem: Memory::new(),
            allocations: 0,
            modules: HashMap::new(),
            functions: HashMap::new(),
            streams: HashSet::new(),
            events: HashMap::new(),
            sticky: None,
            fuel: kir_ptx_emu::DEFAULT_FUEL,
            f64_order: F64OperandOrder::Ptx,
        }
    }

    fn handle(&mut self) -> usize {
        self.next_handle += 0x10;
        self.next_handle
    }

    // ---- initialization, device -------------------------------------------------------------

    pub fn init(&mut self, flags: u32) -> R<()> {
        if flags != 0 {
            return invalid(format!("cuInit takes flags 0, given {flags}"));
        }
        self.fuel = fuel_from(std::env::var("KIR_CUDA_EMU_FUEL").ok().as_deref())?;
        self.f64_order = f64_order_from(std::env::var("KIR_CUDA_EMU_F64_OPERAND_ORDER").ok().as_deref())?;
        self.initialized = true;
        Ok(())
    }

    fn require_init(&self) -> R<()> {
        if self.initialized {
            Ok(())
        } else {
            Err(Fail::new(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called"))
        }
    }

    pub fn device_count(&self) -> R<c_int> {
        self.require_init()?;
        Ok(1)
    }

    pub fn check_device(&self, dev: c_int) -> R<()> {
        self.require_init()?;
        if dev == 0 {
            Ok(())
        } else {
            Err(Fail::new(
                CUDA_ERROR_INVALID_DEVICE,
                format!("device {dev} does not exist (the emulator has device 0)"),
            ))
        }
    }

    pub fn device_attribute(&self, attr: c_int, dev: c_int) -> R<c_int> {
        self.check_device(dev)?;
        device::attribute(attr)
            .ok_or_else(|| Fail::new(CUDA_ERROR_INVALID_VALUE, format!("no device attribute {attr}")))
    }

    // ---- contexts ---------------------------------------------------------------------------

    pub fn primary_retain(&mut self, dev: c_int) -> R<usize> {
        self.check_device(dev)?;
        if self.ctx.is_none() {
            let handle = self.handle();
            self.ctx = Some(Ctx { handle, refs: 0 });
        }
        let ctx = self.ctx.as_mut().ok_or_else(|| Fail::new(CUDA_ERROR_UNKNOWN, "no primary context"))?;
        ctx.refs += 1;
        Ok(ctx.handle)
    }

    /// Drops one reference; the last one destroys the context and everything in it.
    pub fn primary_release(&mut self, dev: c_int) -> R<()> {
        self.check_device(dev)?;
        let Some(ctx) = self.ctx.as_mut() else {
            return Err(Fail::new(CUDA_ERROR_INVALID_CONTEXT, "the primary context is not retained"));
        };
        ctx.refs -= 1;
        if ctx.refs == 0 {
            self.ctx = None;
            self.destroy_resources();
        }
        Ok(())
    }

    /// (flags, active) of the primary context.
    pub fn primary_state(&self, dev: c_int) -> R<(u32, c_int)> {
        self.check_device(dev)?;
        Ok((0, self.ctx.is_some() as c_int))
    }

    fn destroy_resources(&mut self) {
        let live: Vec<BufferId> = self.mem.buffers().collect();
        for b in live {
            let _ = self.mem.free(b);
        }
        self.modules.clear();
        self.functions.clear();
        self.streams.clear();
        self.events.clear();
    }

    /// Whether `handle` is the live primary context.
    pub fn is_live_context(&self, handle: usize) -> bool {
        self.ctx.as_ref().is_some_and(|c| c.handle == handle)
    }

    /// Checks a context handle for `cuCtxSetCurrent` (NULL unbinds).
    pub fn check_context(&self, handle: usize) -> R<()> {
        self.require_init()?;
        if handle == 0 || self.is_live_context(handle) {
            Ok(())
        } else {
            Err(Fail::new(CUDA_ERROR_INVALID_CONTEXT, format!("context 0x{handle:x} is not a live context")))
        }
    }

    /// The calling thread's context (`cur`) must be the live primary context.
    fn require_ctx(&self, cur: usize) -> R<()> {
        self.require_init()?;
        if cur != 0 && self.is_live_context(cur) {
            Ok(())
        } else if cur == 0 {
            Err(Fail::new(CUDA_ERROR_INVALID_CONTEXT, "no context is current on this thread"))
        } else {
            Err(Fail::new(CUDA_ERROR_INVALID_CONTEXT, "the thread's current context was destroyed"))
        }
    }

    /// [`Self::require_ctx`], then the sticky error of an earlier kernel fault, if any.
    fn usable(&self, cur: usize) -> R<()> {
        self.require_ctx(cur)?;
        match &self.sticky {
            Some(f) => Err(f.clone()),
            None => Ok(()),
        }
    }

    pub fn ctx_device(&self, cur: usize) -> R<c_int> {
        self.require_ctx(cur)?;
        Ok(0)
    }

    pub fn synchronize(&self, cur: usize) -> R<()> {
        self.usable(cur)
    }

    // ---- memory -----------------------------------------------------------------------------

    pub fn alloc(&mut self, cur: usize, bytes: usize) -> R<u64> {
        self.usable(cur)?;
        if bytes == 0 {
            return invalid("cannot allocate 0 bytes");
        }
        self.allocations += 1;
        let name = format!("allocation #{} ({bytes} bytes)", self.allocations);
        let id = self.mem.alloc_zeroed(name, bytes as u64).map_err(|e| Fail::new(CUDA_ERROR_OUT_OF_MEMORY, e))?;
        self.mem.address(id).map_err(|e| Fail::new(CUDA_ERROR_UNKNOWN, e))
    }

    /// Frees the allocation starting at `ptr` (also after a kernel fault, whose error it then
    /// returns, as the real driver does).
    pub fn free(&mut self, cur: usize, ptr: u64) -> R<()> {
        self.require_ctx(cur)?;
        if ptr != 0 {
            match self.mem.find(ptr) {
                Some((id, 0)) => self.mem.free(id).map_err(|e| Fail::new(CUDA_ERROR_INVALID_VALUE, e))?,
                _ => return invalid(format!("0x{ptr:x} is not the start of a live allocation")),
            }
        }
        self.usable(cur)
    }

    /// (free, total) bytes of device memory.
    pub fn mem_info(&self, cur: usize) -> R<(u64, u64)> {
        self.require_ctx(cur)?;
        let total = device::total_mem();
        let used: u64 = self.mem.buffers().map(|b| self.mem.bytes(b).map(|s| s.len() as u64).unwrap_or(0)).sum();
        Ok((total.saturating_sub(used), total))
    }

    /// The allocation and offset of the `len` bytes at `addr`, which must lie inside it.
    fn range(&self, addr: u64, len: usize, what: &str) -> R<(BufferId, usize)> {
        let Some((id, off)) = self.mem.find(addr) else {
            return invalid(format!("{what} address 0x{addr:x} is in no live allocation"));
        };
        let size = self.mem.bytes(id).map_err(|e| Fail::new(CUDA_ERROR_INVALID_VALUE, e))?.len();
        if off as usize + len > size {
            return invalid(format!(
                "{what} range 0x{addr:x}..+{len} runs past the end of its allocation ({size} bytes, starting {off} bytes before)"
            ));
        }
        Ok((id, off as usize))
    }

    /// Fills `count` elements of `elem` bytes (1, 2 or 4) at `dst` with `value`.
    pub fn memset(&mut self, cur: usize, dst: u64, value: u32, elem: usize, count: usize, stream: usize) -> R<()> {
        self.usable(cur)?;
        self.check_stream(stream)?;
        if dst % elem as u64 != 0 {
            return invalid(format!("memset of {elem}-byte elements at 0x{dst:x}, which is not {elem}-byte aligned"));
        }
        if count == 0 {
            return Ok(());
        }
        let len =
            count.checked_mul(elem).ok_or_else(|| Fail::new(CUDA_ERROR_INVALID_VALUE, "memset size overflows"))?;
        let (id, off) = self.range(dst, len, "memset destination")?;
        let bytes = self.mem.bytes_mut(id).map_err(|e| Fail::new(CUDA_ERROR_INVALID_VALUE, e))?;
        let pattern = &value.to_le_bytes()[..elem];
        for chunk in bytes[off..off + len].chunks_exact_mut(elem) {
            chunk.copy_from_slice(pattern);
        }
        Ok(())
    }

    pub fn copy_htod(&mut self, cur: usize, dst: u64, src: &[u8], stream: usize) -> R<()> {
        self.usable(cur)?;
        self.check_stream(stream)?;
        if src.is_empty() {
            return Ok(());
        }
        let (id, off) = self.range(dst, src.len(), "copy destination")?;
        let bytes = self.mem.bytes_mut(id).map_err(|e| Fail::new(CUDA_ERROR_INVALID_VALUE, e))?;
        bytes[off..off + src.len()].copy_from_slice(src);
        Ok(())
    }

    pub fn copy_dtoh(&self, cur: usize, dst: &mut [u8], src: u64, stream: usize) -> R<()> {
        self.usable(cur)?;
        self.check_stream(stream)?;
        if dst.is_empty() {
            return Ok(());
        }
        let (id, off) = self.range(src, dst.len(), "copy source")?;
        let bytes = self.mem.bytes(id).map_err(|e| Fail::new(CUDA_ERROR_INVALID_VALUE, e))?;
        dst.copy_from_slice(&bytes[off..off + dst.len()]);
        Ok(())
    }

    pub fn copy_dtod(&mut self, cur: usize, dst: u64, src: u64, len: usize, stream: usize) -> R<()> {
        self.usable(cur)?;
        self.check_stream(stream)?;
        if len == 0 {
            return Ok(());
        }
        let (sid, soff) = self.range(src, len, "copy source")?;
        let (did, doff) = self.range(dst, len, "copy destination")?;
        let data = self.mem.bytes(sid).map_err(|e| Fail::new(CUDA_ERROR_INVALID_VALUE, e))?[soff..soff + len].to_vec();
        let bytes = self.mem.bytes_mut(did).map_err(|e| Fail::new(CUDA_ERROR_INVALID_VALUE, e))?;
        bytes[doff..doff + len].copy_from_slice(&data);
        Ok(())
    }

    // ---- streams and events -----------------------------------------------------------------

    pub fn stream_create(&mut self, cur: usize, flags: u32) -> R<usize> {
        self.usable(cur)?;
        if flags > 1 {
            return invalid(format!("stream flags {flags} (CU_STREAM_DEFAULT 0 or CU_STREAM_NON_BLOCKING 1)"));
        }
        let h = self.handle();
        self.streams.insert(h);
        Ok(h)
    }

    fn check_stream(&self, stream: usize) -> R<()> {
        if DEFAULT_STREAMS.contains(&stream) || self.streams.contains(&stream) {
            Ok(())
        } else {
            Err(Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("stream 0x{stream:x} does not exist")))
        }
    }

    pub fn stream_destroy(&mut self, cur: usize, stream: usize) -> R<()> {
        self.require_ctx(cur)?;
        if !self.streams.remove(&stream) {
            return Err(Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("stream 0x{stream:x} does not exist")));
        }
        Ok(())
    }

    /// Synchronize or query a stream: work is already done, so only the sticky error can show.
    pub fn stream_synchronize(&self, cur: usize, stream: usize) -> R<()> {
        self.require_ctx(cur)?;
        self.check_stream(stream)?;
        self.usable(cur)
    }

    pub fn stream_wait_event(&self, cur: usize, stream: usize, event: usize) -> R<()> {
        self.usable(cur)?;
        self.check_stream(stream)?;
        self.event(event).map(|_| ())
    }

    pub fn event_create(&mut self, cur: usize, flags: u32) -> R<usize> {
        self.usable(cur)?;
        if flags & !0x7 != 0 {
            return invalid(format!("event flags 0x{flags:x}"));
        }
        let h = self.handle();
        self.events.insert(h, EventRec { timing: flags & CU_EVENT_DISABLE_TIMING == 0, recorded: None });
        Ok(h)
    }

    fn event(&self, event: usize) -> R<&EventRec> {
        self.events
            .get(&event)
            .ok_or_else(|| Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("event 0x{event:x} does not exist")))
    }

    pub fn event_record(&mut self, cur: usize, event: usize, stream: usize) -> R<()> {
        self.usable(cur)?;
        self.check_stream(stream)?;
        self.event(event)?;
        if let Some(e) = self.events.get_mut(&event) {
            e.recorded = Some(Instant::now());
        }
        Ok(())
    }

    /// Synchronize or query an event: recorded work is already done.
    pub fn event_synchronize(&self, cur: usize, event: usize) -> R<()> {
        self.require_ctx(cur)?;
        self.event(event)?;
        self.usable(cur)
    }

    /// Milliseconds of host wall time from `start`'s record to `end`'s.
    pub fn event_elapsed(&self, cur: usize, start: usize, end: usize) -> R<f32> {
        self.usable(cur)?;
        let (s, e) = (self.event(start)?, self.event(end)?);
        if !s.timing || !e.timing {
            return Err(Fail::new(CUDA_ERROR_INVALID_HANDLE, "an event was created with CU_EVENT_DISABLE_TIMING"));
        }
        match (s.recorded, e.recorded) {
            (Some(a), Some(b)) => Ok(if b >= a {
                b.duration_since(a).as_secs_f64() as f32 * 1e3
            } else {
                -(a.duration_since(b).as_secs_f64() as f32 * 1e3)
            }),
            _ => Err(Fail::new(CUDA_ERROR_INVALID_HANDLE, "an event has not been recorded")),
        }
    }

    pub fn event_destroy(&mut self, cur: usize, event: usize) -> R<()> {
        self.require_ctx(cur)?;
        if self.events.remove(&event).is_none() {
            return Err(Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("event 0x{event:x} does not exist")));
        }
        self.usable(cur)
    }

    // ---- modules and functions --------------------------------------------------------------

    /// Loads a module image. The error's message is the JIT error log.
    pub fn module_load(&mut self, cur: usize, image: &[u8]) -> R<usize> {
        self.usable(cur)?;
        let (module, ptx_version) = load_ptx(image)?;
        let h = self.handle();
        self.modules.insert(h, ModuleRec { module: Arc::new(module), ptx_version, functions: HashMap::new() });
        Ok(h)
    }

    pub fn module_unload(&mut self, cur: usize, module: usize) -> R<()> {
        self.require_ctx(cur)?;
        let Some(m) = self.modules.remove(&module) else {
            return Err(Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("module 0x{module:x} is not loaded")));
        };
        for f in m.functions.values() {
            self.functions.remove(f);
        }
        self.usable(cur)
    }

    pub fn get_function(&mut self, cur: usize, module: usize, name: &str) -> R<usize> {
        self.usable(cur)?;
        let Some(m) = self.modules.get(&module) else {
            return Err(Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("module 0x{module:x} is not loaded")));
        };
        if let Some(&f) = m.functions.get(name) {
            return Ok(f);
        }
        let Some(entry) = m.module.entry(name) else {
            let names: Vec<&str> = m.module.entries().iter().map(|e| e.name.as_str()).collect();
            return Err(Fail::new(
                CUDA_ERROR_NOT_FOUND,
                format!("no entry `{name}` in the module (entries: {})", names.join(", ")),
            ));
        };
        let static_shared = entry.static_shared_bytes;
        let h = self.handle();
        self.functions.insert(
            h,
            FuncRec {
                module,
                entry: name.to_string(),
                static_shared,
                max_dynamic_shared: device::SHARED_PER_BLOCK.saturating_sub(static_shared),
                carveout: -1,
            },
        );
        if let Some(m) = self.modules.get_mut(&module) {
            m.functions.insert(name.to_string(), h);
        }
        Ok(h)
    }

    fn function(&self, f: usize) -> R<(&FuncRec, &ModuleRec)> {
        let bad = || {
            Fail::new(
                CUDA_ERROR_INVALID_HANDLE,
                format!("function 0x{f:x} does not exist (or its module was unloaded)"),
            )
        };
        let func = self.functions.get(&f).ok_or_else(bad)?;
        let module = self.modules.get(&func.module).ok_or_else(bad)?;
        Ok((func, module))
    }

    pub fn func_attribute(&self, cur: usize, attr: c_int, f: usize) -> R<c_int> {
        self.require_ctx(cur)?;
        let (func, module) = self.function(f)?;
        Ok(match attr {
            // The device's limit, lowered by the entry's `.maxntid` / `.reqntid` (as the driver does).
            CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK => {
                let entry = module.module.entry(&func.entry);
                let bound = |d: Option<[u32; 3]>| d.map(|d| d.iter().map(|&x| x as u64).product::<u64>());
                let declared = entry.and_then(|e| bound(e.maxntid).into_iter().chain(bound(e.reqntid)).min());
                declared.map_or(device::MAX_THREADS_PER_BLOCK as u64, |d| d.min(device::MAX_THREADS_PER_BLOCK as u64))
                    as c_int
            }
            CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES => func.static_shared as c_int,
            CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES | CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES => 0,
            // The emulator has no register allocation; a typical count for small kernels.
            CU_FUNC_ATTRIBUTE_NUM_REGS => 32,
            CU_FUNC_ATTRIBUTE_PTX_VERSION => module.ptx_version,
            CU_FUNC_ATTRIBUTE_BINARY_VERSION => 90,
            CU_FUNC_ATTRIBUTE_CACHE_MODE_CA => 0,
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => func.max_dynamic_shared as c_int,
            CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => func.carveout,
            10..=15 => 0,
            _ => return invalid(format!("no function attribute {attr}")),
        })
    }

    pub fn set_func_attribute(&mut self, cur: usize, f: usize, attr: c_int, value: c_int) -> R<()> {
        self.usable(cur)?;
        let (func, _) = self.function(f)?;
        let static_shared = func.static_shared;
        let func = self.functions.get_mut(&f).ok_or_else(|| Fail::new(CUDA_ERROR_INVALID_HANDLE, "function"))?;
        match attr {
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                let limit = device::SHARED_PER_BLOCK_OPTIN - static_shared;
                if value < 0 || value as u32 > limit {
                    return invalid(format!(
                        "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES {value}: at most {limit} bytes ({} per block, {static_shared} static)",
                        device::SHARED_PER_BLOCK_OPTIN
                    ));
                }
                func.max_dynamic_shared = value as u32;
            }
            CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => {
                if !(-1..=100).contains(&value) {
                    return invalid(format!("shared memory carveout {value} (-1 or 0..=100)"));
                }
                func.carveout = value;
            }
            _ => return invalid(format!("function attribute {attr} cannot be set")),
        }
        Ok(())
    }

    /// The parameters of function `f`, for reading `kernelParams`.
    pub fn param_layout(&self, cur: usize, f: usize) -> R<Vec<ParamLayout>> {
        self.require_ctx(cur)?;
        let (func, module) = self.function(f)?;
        let entry = module
            .module
            .entry(&func.entry)
            .ok_or_else(|| Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("entry `{}` vanished", func.entry)))?;
        Ok(entry.params.iter().map(|p| ParamLayout { name: p.name.clone(), offset: p.offset, size: p.size }).collect())
    }

    /// Runs function `f` to completion. Invalid launches fail here; a kernel fault succeeds and
    /// makes the context's later calls fail (see the module documentation).
    pub fn launch(&mut self, cur: usize, f: usize, shape: Shape, stream: usize, args: Vec<Vec<u8>>) -> R<()> {
        self.usable(cur)?;
        self.check_stream(stream)?;
        let (func, module) = self.function(f)?;
        check_shape(&shape)?;
        if shape.dynamic_shared > func.max_dynamic_shared {
            return invalid(format!(
                "{} bytes of dynamic shared memory exceed the function's limit of {} \
                 (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; {} bytes static, raise it with cuFuncSetAttribute, up to {} in all)",
                shape.dynamic_shared,
                func.max_dynamic_shared,
                func.static_shared,
                device::SHARED_PER_BLOCK_OPTIN
            ));
        }
        let entry_name = func.entry.clone();
        let emu_module = Arc::clone(&module.module);
        let entry = emu_module
            .entry(&entry_name)
            .ok_or_else(|| Fail::new(CUDA_ERROR_INVALID_HANDLE, format!("entry `{entry_name}` vanished")))?;
        if args.len() != entry.params.len() {
            return invalid(format!("`{entry_name}` takes {} parameters, given {}", entry.params.len(), args.len()));
        }
        // Name each buffer after the parameter that points at its start, so faults name it.
        for (p, a) in entry.params.iter().zip(&args) {
            if let Ok(bytes) = <[u8; 8]>::try_from(a.as_slice()) {
                if let Some((id, 0)) = self.mem.find(u64::from_le_bytes(bytes)) {
                    let _ = self.mem.rename(id, p.name.clone());
                }
            }
        }
        let cfg = LaunchConfig { grid: shape.grid, block: shape.block, dynamic_shared_bytes: shape.dynamic_shared };
        let args: Vec<Arg> = args.into_iter().map(Arg::Bytes).collect();
        let opts = if self.fuel == kir_ptx_emu::DEFAULT_FUEL {
            Options::default()
        } else {
            Options::default().with_fuel(self.fuel)
        };
        // The emulated device is an sm_90: its tensor cores are the H100's, whatever `.target`
        // the module was compiled for (an sm_80 module runs as an H100 would run it).
        let opts =
            Options { f64_operand_order: self.f64_order, tensor_cores: Some(kir_ptx_emu::TensorCores::Sm90), ..opts };
        match kir_ptx_emu::launch(&emu_module, &entry_name, &cfg, &args, &mut self.mem, &opts) {
            Ok(_) => Ok(()),
            Err(e) => match e.kind {
                ErrorKind::InvalidLaunch => invalid(format!("launch of `{entry_name}`: {e}")),
                ErrorKind::Fault(kind) => {
                    let [gx, gy, gz] = shape.grid;
                    let [bx, by, bz] = shape.block;
                    self.sticky = Some(Fail::new(
                        fault_code(kind),
                        format!("kernel `{entry_name}` grid ({gx}, {gy}, {gz}) block ({bx}, {by}, {bz}): {e}"),
                    ));
                    Ok(())
                }
            },
        }
    }

    /// The sticky fault, if a kernel faulted.
    pub fn sticky(&self) -> Option<&Fail> {
        self.sticky.as_ref()
    }
}

/// The code a GPU reports for a kernel fault.
pub fn fault_code(kind: FaultKind) -> CUresult {
    match kind {
        FaultKind::OutOfBounds => CUDA_ERROR_ILLEGAL_ADDRESS,
        FaultKind::Misaligned => CUDA_ERROR_MISALIGNED_ADDRESS,
        FaultKind::FuelExhausted => CUDA_ERROR_LAUNCH_TIMEOUT,
        FaultKind::BarrierDivergence | FaultKind::CollectiveMask | FaultKind::AsyncCopyInFlight | FaultKind::Trap => {
            CUDA_ERROR_LAUNCH_FAILED
        }
    }
}

/// The device's launch limits, as the real driver checks them before launching.
fn check_shape(s: &Shape) -> R<()> {
    let [bx, by, bz] = s.block;
    let [gx, gy, gz] = s.grid;
    if s.block.contains(&0) || s.grid.contains(&0) {
        return invalid(format!("grid ({gx}, {gy}, {gz}) and block ({bx}, {by}, {bz}) need every dimension ≥ 1"));
    }
    let threads = bx as u64 * by as u64 * bz as u64;
    let [mx, my, mz] = device::MAX_BLOCK_DIM;
    if bx > mx || by > my || bz > mz || threads > device::MAX_THREADS_PER_BLOCK as u64 {
        return invalid(format!(
            "block ({bx}, {by}, {bz}) has {threads} threads: the device allows at most {} per block (x, y ≤ {mx}, z ≤ {mz})",
            device::MAX_THREADS_PER_BLOCK
        ));
    }
    let [gmx, gmy, gmz] = device::MAX_GRID_DIM;
    if gx > gmx || gy > gmy || gz > gmz {
        return invalid(format!("grid ({gx}, {gy}, {gz}) exceeds the device's ({gmx}, {gmy}, {gmz})"));
    }
    Ok(())
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The first `directive` (`.version`, `.target`) at the start of a line: its line and operands.
fn directive<'t>(text: &'t str, directive: &str) -> Option<(usize, &'t str)> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(directive) {
            if rest.starts_with(char::is_whitespace) {
                let rest = rest.split("//").next().unwrap_or("").trim();
                return Some((line_of(text, at), rest));
            }
        }
        at += line.len();
    }
    None
}

fn jit_log(line: usize, severity: &str, message: &str) -> String {
    format!("ptxas application ptx input, line {line}; {severity:<8}: {message}")
}

/// Parses a module image as the JIT would: PTX text (up to its NUL), version and target checks,
/// the emulator's parser, static shared memory per entry. The error's message is the JIT log.
fn load_ptx(image: &[u8]) -> R<(Module, c_int)> {
    if image.starts_with(b"\x7fELF") || image.starts_with(&0xBA55_ED50u32.to_le_bytes()) {
        return Err(Fail::new(
            CUDA_ERROR_NOT_SUPPORTED,
            "kir-ptx-emu runs PTX text only: a cubin or fatbin image cannot be loaded",
        ));
    }
    let end = image.iter().position(|&b| b == 0).unwrap_or(image.len());
    let text = std::str::from_utf8(&image[..end]).map_err(|e| {
        Fail::new(CUDA_ERROR_INVALID_PTX, format!("ptxas fatal   : the PTX text is not valid UTF-8 ({e})"))
    })?;
    let mut ptx_version = 0;
    if let Some((line, v)) = directive(text, ".version") {
        let parsed =
            v.split_once('.').and_then(|(a, b)| Some((a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?)));
        let Some((major, minor)) = parsed else {
            return Err(Fail::new(
                CUDA_ERROR_INVALID_PTX,
                jit_log(line, "error", &format!("malformed .version `{v}`")),
            ));
        };
        if (major, minor) > MAX_PTX_VERSION {
            let (mj, mn) = MAX_PTX_VERSION;
            return Err(Fail::new(
                CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                jit_log(
                    line,
                    "fatal",
                    &format!("Unsupported .version {major}.{minor}; current version is '{mj}.{mn}'"),
                ),
            ));
        }
        ptx_version = (major * 10 + minor.min(9)) as c_int;
    }
    if let Some((line, targets)) = directive(text, ".target") {
        for t in targets.split(',').map(str::trim) {
            if let Some(sm) = t.strip_prefix("sm_") {
                let digits: String = sm.chars().take_while(char::is_ascii_digit).collect();
                if digits.parse::<u32>().is_ok_and(|n| n > 90) {
                    return Err(Fail::new(
                        CUDA_ERROR_INVALID_PTX,
                        jit_log(
                            line,
                            "fatal",
                            &format!("SM version specified by .target ({t}) is higher than the device's (sm_90)"),
                        ),
                    ));
                }
            }
        }
    }
    let module = Module::parse(text).map_err(|e| {
        Fail::new(
            CUDA_ERROR_INVALID_PTX,
            format!(
                "{}\nkir-ptx-emu (the emulated CUDA driver) could not load the module",
                jit_log(e.line as usize, "error", &format!("column {}: {}", e.col, e.message))
            ),
        )
    })?;
    for e in module.entries() {
        if e.static_shared_bytes > device::SHARED_PER_BLOCK {
            return Err(Fail::new(
                CUDA_ERROR_INVALID_PTX,
                format!(
                    "ptxas error   : Entry function '{}' uses too much shared data (0x{:x} bytes, 0x{:x} max)",
                    e.name,
                    e.static_shared_bytes,
                    device::SHARED_PER_BLOCK
                ),
            ));
        }
    }
    Ok((module, ptx_version))
}

#[cfg(test)]
mod tests {
    #[test]
    fn fuel_comes_from_the_environment_and_a_bad_value_is_an_error() {
        assert_eq!(super::fuel_from(None), Ok(kir_ptx_emu::DEFAULT_FUEL));
        assert_eq!(super::fuel_from(Some(" 1000 ")), Ok(1000));
        for bad in ["0", "-5", "lots", "1e9"] {
            let e = super::fuel_from(Some(bad)).unwrap_err();
            assert_eq!(e.code, crate::types::CUDA_ERROR_INVALID_VALUE);
            assert!(e.message.contains("KIR_CUDA_EMU_FUEL") && e.message.contains(bad), "{}", e.message);
        }
    }

    #[test]
    fn the_f64_operand_order_comes_from_the_environment_and_a_bad_value_is_an_error() {
        assert_eq!(super::f64_order_from(None), Ok(F64OperandOrder::Ptx));
        assert_eq!(super::f64_order_from(Some("")), Ok(F64OperandOrder::Ptx));
        assert_eq!(super::f64_order_from(Some("ptx")), Ok(F64OperandOrder::Ptx));
        assert_eq!(super::f64_order_from(Some(" swapped ")), Ok(F64OperandOrder::Swapped));
        for bad in ["Swapped", "1", "reversed"] {
            let e = super::f64_order_from(Some(bad)).unwrap_err();
            assert_eq!(e.code, crate::types::CUDA_ERROR_INVALID_VALUE);
            assert!(e.message.contains("KIR_CUDA_EMU_F64_OPERAND_ORDER") && e.message.contains(bad), "{}", e.message);
        }
    }

    use super::*;

    /// `d[0] = s[0] + s[1]` in f64, as written (no ordering of NaNs by the emitter).
    const ADD_F64: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry add(.param .u64 add_param_0)
{
    .reg .f64 %fd<4>; .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [add_param_0];
    ld.global.f64 %fd1, [%rd1];
    ld.global.f64 %fd2, [%rd1+8];
    add.rn.f64 %fd3, %fd1, %fd2;
    st.global.f64 [%rd1+16], %fd3;
    ret;
}
"#;

    /// Launches use the driver's f64 operand order: of two NaNs, `add a, b` returns b's in PTX
    /// order and a's swapped.
    #[test]
    fn launches_run_in_the_drivers_f64_operand_order() {
        let (a, b) = (0x7ff8_0000_0000_0001u64, 0xfff8_0000_0000_0002u64);
        for (order, want) in [(F64OperandOrder::Ptx, b), (F64OperandOrder::Swapped, a)] {
            let (mut s, c) = ready();
            s.f64_order = order;
            let m = s.module_load(c, ADD_F64.as_bytes()).unwrap();
            let f = s.get_function(c, m, "add").unwrap();
            let buf = s.alloc(c, 24).unwrap();
            let bytes: Vec<u8> = [a, b, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
            s.copy_htod(c, buf, &bytes, 0).unwrap();
            let shape = Shape { grid: [1, 1, 1], block: [1, 1, 1], dynamic_shared: 0 };
            s.launch(c, f, shape, 0, vec![buf.to_le_bytes().to_vec()]).unwrap();
            let mut out = [0u8; 8];
            s.copy_dtoh(c, &mut out, buf + 16, 0).unwrap();
            assert_eq!(u64::from_le_bytes(out), want, "{order:?}");
        }
    }

    const COPY: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry copy(.param .u64 copy_param_0, .param .u64 copy_param_1, .param .u32 copy_param_2)
{
    .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [copy_param_0];
    ld.param.u64 %rd2, [copy_param_1];
    ld.param.u32 %r1, [copy_param_2];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r3, [%rd4];
    st.global.u32 [%rd5], %r3;
DONE:
    ret;
}
"#;

    /// An initialized driver with its context current (the handle is returned as `cur`).
    fn ready() -> (State, usize) {
        let mut s = State::new();
        s.init(0).unwrap();
        let ctx = s.primary_retain(0).unwrap();
        (s, ctx)
    }

    fn launch_copy(s: &mut State, cur: usize, n: u32, block: u32) -> R<(u64, u64)> {
        let m = s.module_load(cur, COPY.as_bytes())?;
        let f = s.get_function(cur, m, "copy")?;
        let src = s.alloc(cur, 16)?;
        let dst = s.alloc(cur, 16)?;
        s.copy_htod(cur, src, &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0], 0)?;
        let args = vec![src.to_le_bytes().to_vec(), dst.to_le_bytes().to_vec(), n.to_le_bytes().to_vec()];
        s.launch(cur, f, Shape { grid: [1, 1, 1], block: [block, 1, 1], dynamic_shared: 0 }, 0, args)?;
        Ok((src, dst))
    }

    #[test]
    fn calls_before_init_or_without_a_context_fail_as_the_driver_does() {
        let mut s = State::new();
        assert_eq!(s.device_count().unwrap_err().code, CUDA_ERROR_NOT_INITIALIZED);
        s.init(0).unwrap();
        assert_eq!(s.device_count(), Ok(1));
        assert_eq!(s.check_device(1).unwrap_err().code, CUDA_ERROR_INVALID_DEVICE);
        assert_eq!(s.alloc(0, 4).unwrap_err().code, CUDA_ERROR_INVALID_CONTEXT);
        let ctx = s.primary_retain(0).unwrap();
        assert_eq!(s.primary_retain(0), Ok(ctx), "the primary context is shared");
        assert!(s.alloc(ctx, 4).is_ok());
        s.primary_release(0).unwrap();
        assert!(s.alloc(ctx, 4).is_ok(), "still retained once");
        s.primary_release(0).unwrap();
        assert_eq!(s.alloc(ctx, 4).unwrap_err().code, CUDA_ERROR_INVALID_CONTEXT);
        assert_eq!(s.primary_release(0).unwrap_err().code, CUDA_ERROR_INVALID_CONTEXT);
        assert_eq!(s.device_attribute(75, 0), Ok(9));
        assert_eq!(s.device_attribute(999, 0).unwrap_err().code, CUDA_ERROR_INVALID_VALUE);
    }

    #[test]
    fn memory_round_trips_and_ranges_are_checked() {
        let (mut s, c) = ready();
        let a = s.alloc(c, 10).unwrap();
        assert_eq!(s.alloc(c, 0).unwrap_err().code, CUDA_ERROR_INVALID_VALUE);
        s.copy_htod(c, a, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0).unwrap();
        s.memset(c, a + 2, 0xab, 1, 3, 0).unwrap();
        s.memset(c, a + 6, 0x0102, 2, 2, 0).unwrap();
        let mut out = [0u8; 10];
        s.copy_dtoh(c, &mut out, a, 0).unwrap();
        assert_eq!(out, [1, 2, 0xab, 0xab, 0xab, 6, 2, 1, 2, 1]);
        assert_eq!(s.memset(c, a + 1, 0, 4, 1, 0).unwrap_err().code, CUDA_ERROR_INVALID_VALUE, "misaligned");
        let err = s.copy_htod(c, a + 8, &[0; 4], 0).unwrap_err();
        assert!(err.code == CUDA_ERROR_INVALID_VALUE && err.message.contains("runs past the end"), "{err:?}");
        let b = s.alloc(c, 4).unwrap();
        s.copy_dtod(c, b, a + 2, 4, 0).unwrap();
        let mut four = [0u8; 4];
        s.copy_dtoh(c, &mut four, b, 0).unwrap();
        assert_eq!(four, [0xab, 0xab, 0xab, 6]);
        assert_eq!(s.copy_dtoh(c, &mut four, b, 0x999).unwrap_err().code, CUDA_ERROR_INVALID_HANDLE, "bad stream");
        assert_eq!(s.free(c, a + 1).unwrap_err().code, CUDA_ERROR_INVALID_VALUE);
        s.free(c, a).unwrap();
        assert_eq!(s.copy_dtoh(c, &mut four, a, 0).unwrap_err().code, CUDA_ERROR_INVALID_VALUE, "freed");
        let (free, total) = s.mem_info(c).unwrap();
        assert!(free <= total && total > 0);
    }

    #[test]
    fn kernels_run_and_launch_limits_are_the_devices() {
        let (mut s, c) = ready();
        let (_, dst) = launch_copy(&mut s, c, 4, 32).unwrap();
        let mut out = [0u8; 16];
        s.copy_dtoh(c, &mut out, dst, 0).unwrap();
        assert_eq!(out, [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]);
        let err = launch_copy(&mut s, c, 4, 1025).unwrap_err();
        assert_eq!(err.code, CUDA_ERROR_INVALID_VALUE);
        assert!(err.message.contains("at most 1024 per block"), "{}", err.message);
        let m = s.module_load(c, COPY.as_bytes()).unwrap();
        let f = s.get_function(c, m, "copy").unwrap();
        assert_eq!(s.func_attribute(c, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f), Ok(48 * 1024));
        let shape = Shape { grid: [1, 1, 1], block: [1, 1, 1], dynamic_shared: 64 * 1024 };
        let err = s.launch(c, f, shape, 0, vec![vec![0; 8], vec![0; 8], vec![0; 4]]).unwrap_err();
        assert!(err.message.contains("cuFuncSetAttribute"), "{}", err.message);
        assert!(s.set_func_attribute(c, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 300 * 1024).is_err());
        s.set_func_attribute(c, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024).unwrap();
        let src = s.alloc(c, 4).unwrap();
        let args = vec![src.to_le_bytes().to_vec(), src.to_le_bytes().to_vec(), 1u32.to_le_bytes().to_vec()];
        s.launch(c, f, shape, 0, args).unwrap();
        assert_eq!(s.get_function(c, m, "nope").unwrap_err().code, CUDA_ERROR_NOT_FOUND);
        s.module_unload(c, m).unwrap();
        assert_eq!(s.func_attribute(c, 0, f).unwrap_err().code, CUDA_ERROR_INVALID_HANDLE);
    }

    #[test]
    fn maxntid_lowers_the_functions_thread_limit_and_bounds_launches() {
        let (mut s, c) = ready();
        let src = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() .maxntid 128\n{\n    ret;\n}\n";
        let m = s.module_load(c, src.as_bytes()).unwrap();
        let f = s.get_function(c, m, "k").unwrap();
        assert_eq!(s.func_attribute(c, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), Ok(128));
        let shape = |x| Shape { grid: [1, 1, 1], block: [x, 1, 1], dynamic_shared: 0 };
        s.launch(c, f, shape(128), 0, vec![]).unwrap();
        let err = s.launch(c, f, shape(256), 0, vec![]).unwrap_err();
        assert_eq!(err.code, CUDA_ERROR_INVALID_VALUE, "{}", err.message);
        assert!(err.message.contains(".maxntid 128, 1, 1"), "{}", err.message);
    }

    #[test]
    fn a_kernel_fault_is_sticky_and_names_the_buffer() {
        let (mut s, c) = ready();
        // n = 8 over 4-element buffers: thread 4 reads past the end of the source.
        launch_copy(&mut s, c, 8, 32).expect("the launch itself succeeds, as on a GPU");
        let err = s.synchronize(c).unwrap_err();
        assert_eq!(err.code, CUDA_ERROR_ILLEGAL_ADDRESS);
        assert!(err.message.contains("out-of-bounds") && err.message.contains("`copy_param_0`"), "{}", err.message);
        assert!(err.message.contains("kernel `copy` grid (1, 1, 1) block (32, 1, 1)"), "{}", err.message);
        assert_eq!(s.alloc(c, 4).unwrap_err().code, CUDA_ERROR_ILLEGAL_ADDRESS, "sticky");
        assert_eq!(s.stream_synchronize(c, 0).unwrap_err().code, CUDA_ERROR_ILLEGAL_ADDRESS);
        assert_eq!(s.ctx_device(c), Ok(0), "queries still work");
    }

    #[test]
    fn rejected_modules_explain_why_in_a_jit_log() {
        let (mut s, c) = ready();
        let bad = COPY.replace("mov.u32 %r2, %tid.x;", "frobnicate.u32 %r2, %tid.x;");
        let err = s.module_load(c, bad.as_bytes()).unwrap_err();
        assert_eq!(err.code, CUDA_ERROR_INVALID_PTX);
        assert!(err.message.starts_with("ptxas application ptx input, line 11; error   : "), "{}", err.message);
        assert!(err.message.contains("frobnicate"), "{}", err.message);
        let newer = COPY.replace(".version 8.0", ".version 9.9");
        assert_eq!(s.module_load(c, newer.as_bytes()).unwrap_err().code, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
        let sm100 = COPY.replace(".target sm_90", ".target sm_100a");
        let err = s.module_load(c, sm100.as_bytes()).unwrap_err();
        assert!(err.code == CUDA_ERROR_INVALID_PTX && err.message.contains("line 3"), "{err:?}");
        assert_eq!(s.module_load(c, b"\x7fELF\x02\x01").unwrap_err().code, CUDA_ERROR_NOT_SUPPORTED);
        let big = COPY.replace("{\n", "{\n    .shared .align 4 .b8 big[50000];\n");
        let err = s.module_load(c, big.as_bytes()).unwrap_err();
        assert!(err.message.contains("too much shared data"), "{}", err.message);
        let m = s.module_load(c, format!("{COPY}\0trailing bytes").as_bytes()).unwrap();
        let f = s.get_function(c, m, "copy").unwrap();
        assert_eq!(s.func_attribute(c, CU_FUNC_ATTRIBUTE_PTX_VERSION, f), Ok(80));
        assert_eq!(s.get_function(c, m, "copy"), Ok(f), "one handle per entry");
    }

    #[test]
    fn events_time_wall_clock_and_check_their_flags() {
        let (mut s, c) = ready();
        let a = s.event_create(c, 0).unwrap();
        let b = s.event_create(c, 0).unwrap();
        assert_eq!(s.event_elapsed(c, a, b).unwrap_err().code, CUDA_ERROR_INVALID_HANDLE, "not recorded");
        s.event_record(c, a, 0).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.event_record(c, b, 0).unwrap();
        let ms = s.event_elapsed(c, a, b).unwrap();
        assert!((4.0..1000.0).contains(&ms), "{ms}");
        let no_timing = s.event_create(c, CU_EVENT_DISABLE_TIMING).unwrap();
        s.event_record(c, no_timing, 0).unwrap();
        assert_eq!(s.event_elapsed(c, a, no_timing).unwrap_err().code, CUDA_ERROR_INVALID_HANDLE);
        let st = s.stream_create(c, 1).unwrap();
        s.event_record(c, a, st).unwrap();
        s.stream_wait_event(c, st, b).unwrap();
        s.stream_destroy(c, st).unwrap();
        assert_eq!(s.event_record(c, a, st).unwrap_err().code, CUDA_ERROR_INVALID_HANDLE);
        s.event_destroy(c, a).unwrap();
        assert_eq!(s.event_synchronize(c, a).unwrap_err().code, CUDA_ERROR_INVALID_HANDLE);
    }
}
