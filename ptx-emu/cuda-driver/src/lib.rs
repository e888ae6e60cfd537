//! kir-cuda-emu: an emulated CUDA driver. Built as a shared object (`libkir_cuda_emu.so`, SONAME
//! `libcuda.so`), it exports the CUDA driver API functions that cudarc (and so kir's GPU runner)
//! calls, with the ABI of CUDA 12.8's `cuda.h`, and runs every kernel in the PTX emulator
//! [`kir_ptx_emu`] on the CPU. Device memory is host memory tracked by address range.
//!
//! How a program uses it: load this file by path before the CUDA driver is looked up (kir does
//! that when `KIR_CUDA_DRIVER` is set); its SONAME then answers the later `dlopen("libcuda.so")`.
//!
//! Guarantees:
//! - One device, `kir-ptx-emu (sm_90, CPU)` ([`device`]); the semantics of every implemented
//!   call are those of [`driver`] (synchronous work, real error codes, sticky kernel faults).
//! - Every exported function catches panics (none may cross the C boundary; a caught one returns
//!   `CUDA_ERROR_UNKNOWN`), checks its pointers for NULL (`CUDA_ERROR_INVALID_VALUE`), and never
//!   blocks on anything but the kernel it runs.
//! - Functions of the driver API that the emulator does not implement but cudarc can reach are
//!   exported too and return `CUDA_ERROR_NOT_SUPPORTED`, so cudarc never fails to find a symbol.
//! - Test hook: with `KIR_CUDA_EMU_CRASH_ON_LOAD=TEXT`, loading a module whose image contains TEXT
//!   kills the process with SIGSEGV inside `cuModuleLoadData(Ex)`, as NVIDIA's driver JIT does on
//!   some PTX ([`CRASH_ON_LOAD_VAR`]); it lets tests check that callers survive a driver crash.
//! - Every failure's message is kept: `kirEmuLastError` returns the last one (the emulator's fault
//!   message with the PTX line, block and thread; the JIT log; the range a copy missed), and with
//!   `KIR_CUDA_EMU_LOG=1` each failure is also printed to stderr.
//!
//! # Safety
//! The exported functions have the contracts of the CUDA driver API: pointers must be valid for
//! what `cuda.h` says the call reads or writes. NULL is checked; other invalid pointers are not.

#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod device;
pub mod driver;
pub mod types;

use driver::{Fail, Shape, State};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{LazyLock, Mutex, MutexGuard};
use types::*;

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::new()));
static LAST_ERROR: Mutex<String> = Mutex::new(String::new());

thread_local! {
    /// The calling thread's current context (0: none), and the stack `cuCtxPushCurrent` pushes on.
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    static CTX_STACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn current() -> usize {
    CURRENT.with(|c| c.get())
}

fn record(call: &str, fail: &Fail) {
    let name = describe(fail.code).map_or("?", |d| d.0);
    let mut last = LAST_ERROR.lock().unwrap_or_else(|p| p.into_inner());
    *last = format!("{call}: {name}: {}", fail.message);
    if std::env::var("KIR_CUDA_EMU_LOG").is_ok_and(|v| !v.is_empty() && v != "0") {
        eprintln!("kir-cuda-emu: {last}");
    }
}

/// Runs one call: panics become `CUDA_ERROR_UNKNOWN`, failures are recorded.
fn guard(call: &str, body: impl FnOnce() -> Result<(), Fail>) -> CUresult {
    let fail = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return CUDA_SUCCESS,
        Ok(Err(f)) => f,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Fail::new(CUDA_ERROR_UNKNOWN, format!("internal error in the emulated driver (panic: {what})"))
        }
    };
    record(call, &fail);
    fail.code
}

/// Writes `v` through `p`, which must not be NULL.
unsafe fn out<T>(p: *mut T, v: T) -> Result<(), Fail> {
    if p.is_null() {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "an output pointer is NULL"));
    }
    p.write(v);
    Ok(())
}

/// A host buffer argument of `len` bytes (NULL only when `len` is 0).
unsafe fn host<'a>(p: *const c_void, len: usize) -> Result<&'a [u8], Fail> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the host pointer is NULL"));
    }
    Ok(std::slice::from_raw_parts(p as *const u8, len))
}

unsafe fn host_mut<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8], Fail> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the host pointer is NULL"));
    }
    Ok(std::slice::from_raw_parts_mut(p as *mut u8, len))
}

unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if p.is_null() {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, format!("{what} is NULL")));
    }
    CStr::from_ptr(p).to_str().map_err(|_| Fail::new(CUDA_ERROR_INVALID_VALUE, format!("{what} is not UTF-8")))
}

/// Defines exported driver functions: each body returns `Result<(), Fail>` and runs in [`guard`].
macro_rules! export {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block )*) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
                guard(stringify!($name), move || $body)
            }
        )*
    };
}

/// Exported functions of the driver API the emulator does not implement.
macro_rules! not_supported {
    ($($name:ident),* $(,)?) => {
        $(
            #[no_mangle]
            pub extern "C" fn $name() -> CUresult {
                guard(stringify!($name), || {
                    Err(Fail::new(CUDA_ERROR_NOT_SUPPORTED, "not supported by the emulated driver (kir-ptx-emu)"))
                })
            }
        )*
    };
}

// ---- initialization, version, devices ----------------------------------------------------------

export! {
    fn cuInit(flags: c_uint) {
        state().init(flags)
    }

    fn cuDriverGetVersion(version: *mut c_int) {
        out(version, device::DRIVER_VERSION)
    }

    fn cuDeviceGetCount(count: *mut c_int) {
        let n = state().device_count()?;
        out(count, n)
    }

    fn cuDeviceGet(dev: *mut CUdevice, ordinal: c_int) {
        state().check_device(ordinal)?;
        out(dev, ordinal)
    }

    fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) {
        state().check_device(dev)?;
        if name.is_null() || len <= 0 {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName needs a buffer"));
        }
        let bytes = device::DEVICE_NAME.as_bytes();
        let n = bytes.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), name as *mut u8, n);
        name.add(n).write(0);
        Ok(())
    }

    fn cuDeviceGetAttribute(value: *mut c_int, attr: c_int, dev: CUdevice) {
        let v = state().device_attribute(attr, dev)?;
        out(value, v)
    }

    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) {
        state().check_device(dev)?;
        out(bytes, device::total_mem() as usize)
    }

    fn cuDeviceTotalMem(bytes: *mut usize, dev: CUdevice) {
        state().check_device(dev)?;
        out(bytes, device::total_mem() as usize)
    }

    fn cuDeviceGetUuid(uuid: *mut CUuuid, dev: CUdevice) {
        state().check_device(dev)?;
        out(uuid, CUuuid { bytes: device::UUID })
    }

    fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, dev: CUdevice) {
        state().check_device(dev)?;
        out(uuid, CUuuid { bytes: device::UUID })
    }

    fn cuDeviceComputeCapability(major: *mut c_int, minor: *mut c_int, dev: CUdevice) {
        let s = state();
        let (a, b) = (s.device_attribute(75, dev)?, s.device_attribute(76, dev)?);
        out(major, a)?;
        out(minor, b)
    }
}

// ---- contexts -----------------------------------------------------------------------------------

export! {
    fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, dev: CUdevice) {
        if ctx.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the context pointer is NULL"));
        }
        let h = state().primary_retain(dev)?;
        out(ctx, h as CUcontext)
    }

    fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) {
        state().primary_release(dev)
    }

    fn cuDevicePrimaryCtxRelease(dev: CUdevice) {
        state().primary_release(dev)
    }

    fn cuDevicePrimaryCtxGetState(dev: CUdevice, flags: *mut c_uint, active: *mut c_int) {
        let (f, a) = state().primary_state(dev)?;
        out(flags, f)?;
        out(active, a)
    }

    fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, _flags: c_uint) {
        state().check_device(dev)
    }

    fn cuCtxSetCurrent(ctx: CUcontext) {
        state().check_context(ctx as usize)?;
        CURRENT.with(|c| c.set(ctx as usize));
        Ok(())
    }

    fn cuCtxGetCurrent(ctx: *mut CUcontext) {
        let s = state();
        let cur = current();
        let live = if s.is_live_context(cur) { cur } else { 0 };
        out(ctx, live as CUcontext)
    }

    fn cuCtxPushCurrent_v2(ctx: CUcontext) {
        state().check_context(ctx as usize)?;
        if ctx.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "cannot push a NULL context"));
        }
        CTX_STACK.with(|s| s.borrow_mut().push(current()));
        CURRENT.with(|c| c.set(ctx as usize));
        Ok(())
    }

    fn cuCtxPopCurrent_v2(ctx: *mut CUcontext) {
        let popped = current();
        if popped == 0 {
            return Err(Fail::new(CUDA_ERROR_INVALID_CONTEXT, "no context is current on this thread"));
        }
        let below = CTX_STACK.with(|s| s.borrow_mut().pop()).unwrap_or(0);
        CURRENT.with(|c| c.set(below));
        if !ctx.is_null() {
            ctx.write(popped as CUcontext);
        }
        Ok(())
    }

    fn cuCtxGetDevice(dev: *mut CUdevice) {
        let d = state().ctx_device(current())?;
        out(dev, d)
    }

    fn cuCtxSynchronize() {
        state().synchronize(current())
    }

    fn cuCtxGetCacheConfig(config: *mut c_int) {
        state().ctx_device(current())?;
        out(config, 0) // CU_FUNC_CACHE_PREFER_NONE
    }

    fn cuCtxSetCacheConfig(config: c_int) {
        state().ctx_device(current())?;
        if !(0..=3).contains(&config) {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, format!("cache config {config}")));
        }
        Ok(())
    }

    fn cuCtxGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) {
        state().ctx_device(current())?;
        if !least.is_null() {
            least.write(0);
        }
        if !greatest.is_null() {
            greatest.write(-5);
        }
        Ok(())
    }
}

// ---- streams and events -------------------------------------------------------------------------

export! {
    fn cuStreamCreate(stream: *mut CUstream, flags: c_uint) {
        if stream.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the stream pointer is NULL"));
        }
        let h = state().stream_create(current(), flags)?;
        out(stream, h as CUstream)
    }

    fn cuStreamCreateWithPriority(stream: *mut CUstream, flags: c_uint, _priority: c_int) {
        if stream.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the stream pointer is NULL"));
        }
        let h = state().stream_create(current(), flags)?;
        out(stream, h as CUstream)
    }

    fn cuStreamDestroy_v2(stream: CUstream) {
        state().stream_destroy(current(), stream as usize)
    }

    fn cuStreamDestroy(stream: CUstream) {
        state().stream_destroy(current(), stream as usize)
    }

    fn cuStreamSynchronize(stream: CUstream) {
        state().stream_synchronize(current(), stream as usize)
    }

    fn cuStreamQuery(stream: CUstream) {
        state().stream_synchronize(current(), stream as usize)
    }

    fn cuStreamWaitEvent(stream: CUstream, event: CUevent, _flags: c_uint) {
        state().stream_wait_event(current(), stream as usize, event as usize)
    }

    fn cuStreamIsCapturing(stream: CUstream, status: *mut c_int) {
        state().stream_synchronize(current(), stream as usize)?;
        out(status, 0) // CU_STREAM_CAPTURE_STATUS_NONE
    }

    fn cuLaunchHostFunc(stream: CUstream, func: Option<unsafe extern "C" fn(*mut c_void)>, data: *mut c_void) {
        state().stream_synchronize(current(), stream as usize)?;
        let Some(func) = func else {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the host function is NULL"));
        };
        // Outside the driver's lock: the function may call the driver.
        func(data);
        Ok(())
    }

    fn cuEventCreate(event: *mut CUevent, flags: c_uint) {
        if event.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the event pointer is NULL"));
        }
        let h = state().event_create(current(), flags)?;
        out(event, h as CUevent)
    }

    fn cuEventRecord(event: CUevent, stream: CUstream) {
        state().event_record(current(), event as usize, stream as usize)
    }

    fn cuEventSynchronize(event: CUevent) {
        state().event_synchronize(current(), event as usize)
    }

    fn cuEventQuery(event: CUevent) {
        state().event_synchronize(current(), event as usize)
    }

    fn cuEventElapsedTime(ms: *mut f32, start: CUevent, end: CUevent) {
        let t = state().event_elapsed(current(), start as usize, end as usize)?;
        out(ms, t)
    }

    fn cuEventElapsedTime_v2(ms: *mut f32, start: CUevent, end: CUevent) {
        let t = state().event_elapsed(current(), start as usize, end as usize)?;
        out(ms, t)
    }

    fn cuEventDestroy_v2(event: CUevent) {
        state().event_destroy(current(), event as usize)
    }

    fn cuEventDestroy(event: CUevent) {
        state().event_destroy(current(), event as usize)
    }
}

// ---- memory -------------------------------------------------------------------------------------

export! {
    fn cuMemAlloc_v2(ptr: *mut CUdeviceptr, bytes: usize) {
        if ptr.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the pointer's address is NULL"));
        }
        let p = state().alloc(current(), bytes)?;
        out(ptr, p)
    }

    fn cuMemAllocAsync(ptr: *mut CUdeviceptr, bytes: usize, stream: CUstream) {
        if ptr.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the pointer's address is NULL"));
        }
        let mut s = state();
        s.stream_synchronize(current(), stream as usize)?;
        let p = s.alloc(current(), bytes)?;
        out(ptr, p)
    }

    fn cuMemFree_v2(ptr: CUdeviceptr) {
        state().free(current(), ptr)
    }

    fn cuMemFreeAsync(ptr: CUdeviceptr, stream: CUstream) {
        let mut s = state();
        s.stream_synchronize(current(), stream as usize).or_else(|f| if is_sticky(f.code) { Ok(()) } else { Err(f) })?;
        s.free(current(), ptr)
    }

    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) {
        let (f, t) = state().mem_info(current())?;
        out(free, f as usize)?;
        out(total, t as usize)
    }

    fn cuMemsetD8_v2(dst: CUdeviceptr, value: u8, count: usize) {
        state().memset(current(), dst, value as u32, 1, count, 0)
    }

    fn cuMemsetD16_v2(dst: CUdeviceptr, value: u16, count: usize) {
        state().memset(current(), dst, value as u32, 2, count, 0)
    }

    fn cuMemsetD32_v2(dst: CUdeviceptr, value: u32, count: usize) {
        state().memset(current(), dst, value, 4, count, 0)
    }

    fn cuMemsetD8Async(dst: CUdeviceptr, value: u8, count: usize, stream: CUstream) {
        state().memset(current(), dst, value as u32, 1, count, stream as usize)
    }

    fn cuMemsetD16Async(dst: CUdeviceptr, value: u16, count: usize, stream: CUstream) {
        state().memset(current(), dst, value as u32, 2, count, stream as usize)
    }

    fn cuMemsetD32Async(dst: CUdeviceptr, value: u32, count: usize, stream: CUstream) {
        state().memset(current(), dst, value, 4, count, stream as usize)
    }

    fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize) {
        state().copy_htod(current(), dst, host(src, bytes)?, 0)
    }

    fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize, stream: CUstream) {
        state().copy_htod(current(), dst, host(src, bytes)?, stream as usize)
    }

    fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize) {
        state().copy_dtoh(current(), host_mut(dst, bytes)?, src, 0)
    }

    fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize, stream: CUstream) {
        state().copy_dtoh(current(), host_mut(dst, bytes)?, src, stream as usize)
    }

    fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize) {
        state().copy_dtod(current(), dst, src, bytes, 0)
    }

    fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream) {
        state().copy_dtod(current(), dst, src, bytes, stream as usize)
    }
}

// ---- modules, functions, launches ---------------------------------------------------------------

/// Writes `text` into a JIT log buffer of `size` bytes (NUL-terminated, truncated); returns the
/// bytes written before the NUL.
unsafe fn write_log(buf: *mut c_void, size: usize, text: &str) -> usize {
    if buf.is_null() || size == 0 {
        return 0;
    }
    let n = text.len().min(size - 1);
    std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, n);
    (buf as *mut u8).add(n).write(0);
    n
}

/// The test hook's variable: a module whose image contains its (non-empty) value crashes the
/// process with SIGSEGV in `cuModuleLoad*`, as a real driver's JIT crashes on some PTX.
pub const CRASH_ON_LOAD_VAR: &str = "KIR_CUDA_EMU_CRASH_ON_LOAD";

/// The crash-injection test hook ([`CRASH_ON_LOAD_VAR`]): kills the process with SIGSEGV when the
/// image contains the variable's value. Not a feature: it exists so that programs that must
/// survive a driver crash (`kir fuzz`) can be tested without one.
fn crash_if_asked(image: &[u8]) {
    let Some(pattern) = std::env::var_os(CRASH_ON_LOAD_VAR) else { return };
    let pattern = pattern.as_encoded_bytes();
    if pattern.is_empty() || !image.windows(pattern.len()).any(|w| w == pattern) {
        return;
    }
    #[cfg(unix)]
    {
        extern "C" {
            fn signal(signum: c_int, handler: usize) -> usize;
            fn raise(sig: c_int) -> c_int;
        }
        const SIGSEGV: c_int = 11;
        const SIG_DFL: usize = 0;
        // SAFETY: restores the default disposition (Rust's runtime installs a SIGSEGV handler for
        // stack overflows, which would return from a raised signal) and raises the signal, which
        // ends the process as a segmentation fault does.
        unsafe {
            signal(SIGSEGV, SIG_DFL);
            raise(SIGSEGV);
        }
    }
    std::process::abort();
}

/// `cuModuleLoadDataEx`: loads the image, then fills the log buffers and the wall time the JIT
/// options ask for (sizes are updated to the bytes written, as the real driver does).
unsafe fn load_module(
    module: *mut CUmodule,
    image: *const c_void,
    n: c_uint,
    options: *mut c_int,
    values: *mut *mut c_void,
) -> Result<(), Fail> {
    if module.is_null() || image.is_null() {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the module or image pointer is NULL"));
    }
    if n > 0 && (options.is_null() || values.is_null()) {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "JIT options given without their arrays"));
    }
    let opts: Vec<(c_int, *mut c_void)> = (0..n as usize).map(|i| (*options.add(i), *values.add(i))).collect();
    if let Some((o, _)) = opts.iter().find(|(o, _)| !(0..CU_JIT_NUM_OPTIONS).contains(o)) {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, format!("unknown JIT option {o}")));
    }
    let find = |want: c_int| opts.iter().position(|(o, _)| *o == want);
    let started = std::time::Instant::now();
    // PTX images are NUL-terminated text (a binary image is recognised by its leading magic number,
    // which contains no NUL).
    let text = CStr::from_ptr(image as *const c_char).to_bytes();
    crash_if_asked(text);
    let result = state().module_load(current(), text);
    let (error_log, info_log) = match &result {
        Ok(_) => (String::new(), String::new()),
        Err(f) => (f.message.clone(), String::new()),
    };
    for (buf, size, log) in [
        (CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, &error_log),
        (CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, &info_log),
    ] {
        if let (Some(b), Some(s)) = (find(buf), find(size)) {
            let written = write_log(opts[b].1, opts[s].1 as usize, log);
            values.add(s).write(written as *mut c_void);
        }
    }
    if let Some(w) = find(CU_JIT_WALL_TIME) {
        let ms = started.elapsed().as_secs_f32() * 1e3;
        values.add(w).write(ms.to_bits() as usize as *mut c_void);
    }
    let h = result?;
    out(module, h as CUmodule)
}

/// Reads the launch's parameters: one pointer per parameter in `params`, or the packed buffer of
/// `extra` (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`).
unsafe fn read_params(
    layout: &[driver::ParamLayout],
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<Vec<Vec<u8>>, Fail> {
    if !params.is_null() && !extra.is_null() {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "both kernelParams and extra are given"));
    }
    if layout.is_empty() {
        return Ok(Vec::new());
    }
    if !params.is_null() {
        let mut args = Vec::with_capacity(layout.len());
        for (i, p) in layout.iter().enumerate() {
            let ptr = *params.add(i);
            if ptr.is_null() {
                return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, format!("kernelParams[{i}] (`{}`) is NULL", p.name)));
            }
            args.push(std::slice::from_raw_parts(ptr as *const u8, p.size as usize).to_vec());
        }
        return Ok(args);
    }
    if extra.is_null() {
        return Err(Fail::new(
            CUDA_ERROR_INVALID_VALUE,
            "the kernel takes parameters but kernelParams and extra are NULL",
        ));
    }
    let (mut buf, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
    let mut i = 0;
    loop {
        match *extra.add(i) as usize {
            CU_LAUNCH_PARAM_END => break,
            CU_LAUNCH_PARAM_BUFFER_POINTER => buf = *extra.add(i + 1) as *const u8,
            CU_LAUNCH_PARAM_BUFFER_SIZE => {
                let sp = *extra.add(i + 1) as *const usize;
                if sp.is_null() {
                    return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "CU_LAUNCH_PARAM_BUFFER_SIZE points at NULL"));
                }
                size = Some(*sp);
            }
            other => return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, format!("unknown `extra` key {other}"))),
        }
        i += 2;
        if i > 64 {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "`extra` is not terminated by CU_LAUNCH_PARAM_END"));
        }
    }
    let (Some(size), false) = (size, buf.is_null()) else {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "`extra` needs both the buffer pointer and its size"));
    };
    let bytes = std::slice::from_raw_parts(buf, size);
    layout
        .iter()
        .map(|p| {
            let (o, s) = (p.offset as usize, p.size as usize);
            bytes.get(o..o + s).map(<[u8]>::to_vec).ok_or_else(|| {
                Fail::new(
                    CUDA_ERROR_INVALID_VALUE,
                    format!("the parameter buffer ({size} bytes) does not hold `{}`", p.name),
                )
            })
        })
        .collect()
}

export! {
    fn cuModuleLoadDataEx(
        module: *mut CUmodule,
        image: *const c_void,
        n: c_uint,
        options: *mut c_int,
        values: *mut *mut c_void,
    ) {
        load_module(module, image, n, options, values)
    }

    fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void) {
        load_module(module, image, 0, std::ptr::null_mut(), std::ptr::null_mut())
    }

    fn cuModuleLoad(module: *mut CUmodule, path: *const c_char) {
        let path = c_str(path, "the file name")?;
        let mut bytes = std::fs::read(path)
            .map_err(|e| Fail::new(CUDA_ERROR_FILE_NOT_FOUND, format!("cannot read `{path}`: {e}")))?;
        bytes.push(0);
        load_module(module, bytes.as_ptr() as *const c_void, 0, std::ptr::null_mut(), std::ptr::null_mut())
    }

    fn cuModuleUnload(module: CUmodule) {
        state().module_unload(current(), module as usize)
    }

    fn cuModuleGetFunction(func: *mut CUfunction, module: CUmodule, name: *const c_char) {
        let name = c_str(name, "the function name")?;
        if func.is_null() {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the function pointer is NULL"));
        }
        let h = state().get_function(current(), module as usize, name)?;
        out(func, h as CUfunction)
    }

    fn cuFuncGetAttribute(value: *mut c_int, attr: c_int, func: CUfunction) {
        let v = state().func_attribute(current(), attr, func as usize)?;
        out(value, v)
    }

    fn cuFuncSetAttribute(func: CUfunction, attr: c_int, value: c_int) {
        state().set_func_attribute(current(), func as usize, attr, value)
    }

    fn cuFuncSetCacheConfig(func: CUfunction, config: c_int) {
        state().func_attribute(current(), 0, func as usize)?;
        if !(0..=3).contains(&config) {
            return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, format!("cache config {config}")));
        }
        Ok(())
    }

    fn cuLaunchKernel(
        func: CUfunction,
        gx: c_uint,
        gy: c_uint,
        gz: c_uint,
        bx: c_uint,
        by: c_uint,
        bz: c_uint,
        shared: c_uint,
        stream: CUstream,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) {
        let mut s = state();
        let layout = s.param_layout(current(), func as usize)?;
        let args = read_params(&layout, params, extra)?;
        let shape = Shape { grid: [gx, gy, gz], block: [bx, by, bz], dynamic_shared: shared };
        s.launch(current(), func as usize, shape, stream as usize, args)
    }
}

// ---- errors -------------------------------------------------------------------------------------

/// NUL-terminated names and descriptions of every result code, for `cuGetErrorName`/`String`.
static C_RESULTS: LazyLock<Vec<(CUresult, CString, CString)>> = LazyLock::new(|| {
    RESULTS
        .iter()
        .map(|&(c, n, d)| (c, CString::new(n).unwrap_or_default(), CString::new(d).unwrap_or_default()))
        .collect()
});

unsafe fn error_text(code: CUresult, out_str: *mut *const c_char, name: bool) -> Result<(), Fail> {
    if out_str.is_null() {
        return Err(Fail::new(CUDA_ERROR_INVALID_VALUE, "the string pointer is NULL"));
    }
    match C_RESULTS.iter().find(|r| r.0 == code) {
        Some((_, n, d)) => {
            out_str.write(if name { n.as_ptr() } else { d.as_ptr() });
            Ok(())
        }
        None => {
            out_str.write(std::ptr::null());
            Err(Fail::new(CUDA_ERROR_INVALID_VALUE, format!("{code} is not a CUDA result code")))
        }
    }
}

export! {
    fn cuGetErrorName(code: CUresult, name: *mut *const c_char) {
        error_text(code, name, true)
    }

    fn cuGetErrorString(code: CUresult, text: *mut *const c_char) {
        error_text(code, text, false)
    }

    fn cuProfilerStart() {
        Ok(())
    }

    fn cuProfilerStop() {
        Ok(())
    }
}

/// The last failure's message (`cuXxx: CUDA_ERROR_NAME: what went wrong`), NUL-terminated into
/// `buf` (`len` bytes, truncated); returns the message's full length in bytes (0: no failure yet).
/// A program asks for it after a call failed: the CUDA API has no way to carry the emulator's
/// explanation (the faulting PTX line, block and thread; the buffer; the JIT log).
#[no_mangle]
pub unsafe extern "C" fn kirEmuLastError(buf: *mut c_char, len: usize) -> usize {
    catch_unwind(|| {
        let last = LAST_ERROR.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the caller provides `len` writable bytes at `buf` (or NULL).
        unsafe { write_log(buf as *mut c_void, len, &last) };
        last.len()
    })
    .unwrap_or(0)
}

// Driver API functions cudarc 0.19 can reach that the emulator does not implement.
not_supported!(
    cuCtxCreate_v2,
    cuCtxCreate_v3,
    cuCtxCreate_v4,
    cuCtxDestroy_v2,
    cuCtxGetLimit,
    cuCtxSetLimit,
    cuCtxSetFlags,
    cuDevicePrimaryCtxReset_v2,
    cuDeviceGetDefaultMemPool,
    cuDeviceGetMemPool,
    cuDeviceSetMemPool,
    cuDeviceGetPCIBusId,
    cuDeviceGetLuid,
    cuDestroyExternalMemory,
    cuExternalMemoryGetMappedBuffer,
    cuImportExternalMemory,
    cuGetProcAddress,
    cuGetProcAddress_v2,
    cuGraphDestroy,
    cuGraphExecDestroy,
    cuGraphInstantiateWithFlags,
    cuGraphLaunch,
    cuGraphUpload,
    cuLaunchCooperativeKernel,
    cuLaunchKernelEx,
    cuMemAdvise,
    cuMemAdvise_v2,
    cuMemAllocFromPoolAsync,
    cuMemAllocHost_v2,
    cuMemAllocManaged,
    cuMemAllocPitch_v2,
    cuMemFreeHost,
    cuMemHostAlloc,
    cuMemHostRegister_v2,
    cuMemHostUnregister,
    cuMemPoolCreate,
    cuMemPoolDestroy,
    cuMemPoolGetAttribute,
    cuMemPoolSetAttribute,
    cuMemPoolTrimTo,
    cuMemPrefetchAsync,
    cuMemPrefetchAsync_v2,
    cuMemcpy,
    cuMemcpyAsync,
    cuMemcpyPeer,
    cuMemcpyPeerAsync,
    cuModuleGetGlobal_v2,
    cuModuleLoadFatBinary,
    cuOccupancyAvailableDynamicSMemPerBlock,
    cuOccupancyMaxActiveBlocksPerMultiprocessor,
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
    cuOccupancyMaxActiveClusters,
    cuOccupancyMaxPotentialBlockSize,
    cuOccupancyMaxPotentialBlockSizeWithFlags,
    cuOccupancyMaxPotentialClusterSize,
    cuPointerGetAttribute,
    cuStreamAttachMemAsync,
    cuStreamBeginCapture_v2,
    cuStreamEndCapture,
    cuStreamGetCaptureInfo_v2,
);

#[cfg(test)]
mod tests {
    //! The C layer, called as a C program would. One test: the driver is a process-wide singleton
    //! (its sticky fault would leak into parallel tests).
    use super::*;
    use std::ptr::null_mut;

    const SCALE: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry scale(.param .u64 scale_param_0, .param .u16 scale_param_1, .param .u8 scale_param_2)
{
    .reg .b16 %h<3>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [scale_param_0];
    ld.param.u16 %h1, [scale_param_1];
    ld.param.u8 %h2, [scale_param_2];
    mov.u32 %r1, %tid.x;
    cvt.u32.u16 %r2, %h1;
    cvt.u32.u16 %r3, %h2;
    mad.lo.u32 %r2, %r2, %r1, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
";

    fn last_error() -> String {
        let mut buf = vec![0u8; 4096];
        let n = unsafe { kirEmuLastError(buf.as_mut_ptr() as *mut c_char, buf.len()) };
        String::from_utf8_lossy(&buf[..n.min(buf.len() - 1)]).into_owned()
    }

    #[test]
    fn a_c_program_runs_a_kernel_and_sees_errors() {
        unsafe {
            let mut n = -1;
            assert_eq!(cuDeviceGetCount(&mut n), CUDA_ERROR_NOT_INITIALIZED);
            assert_eq!(cuInit(0), CUDA_SUCCESS);
            assert_eq!(cuDeviceGetCount(&mut n), CUDA_SUCCESS);
            assert_eq!(n, 1);
            let mut name = [0 as c_char; 64];
            assert_eq!(cuDeviceGetName(name.as_mut_ptr(), 64, 0), CUDA_SUCCESS);
            assert_eq!(CStr::from_ptr(name.as_ptr()).to_str().unwrap(), "kir-ptx-emu (sm_90, CPU)");
            let mut short = [0 as c_char; 4];
            assert_eq!(cuDeviceGetName(short.as_mut_ptr(), 4, 0), CUDA_SUCCESS);
            assert_eq!(CStr::from_ptr(short.as_ptr()).to_str().unwrap(), "kir");
            let mut ctx: CUcontext = null_mut();
            assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), CUDA_SUCCESS);
            let mut p = 0u64;
            assert_eq!(cuMemAlloc_v2(&mut p, 16), CUDA_ERROR_INVALID_CONTEXT, "not current yet");
            assert_eq!(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
            assert_eq!(cuMemAllocAsync(&mut p, 16, null_mut()), CUDA_SUCCESS);

            // A rejected module fills the error log and says how long it is.
            let bad = CString::new(SCALE.replace("mad.lo.u32", "madd.lo.u32")).unwrap();
            let mut log = vec![0u8; 512];
            let mut opts = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
            let mut vals = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
            let mut module: CUmodule = null_mut();
            let r = cuModuleLoadDataEx(&mut module, bad.as_ptr() as _, 2, opts.as_mut_ptr(), vals.as_mut_ptr());
            assert_eq!(r, CUDA_ERROR_INVALID_PTX);
            let text = CStr::from_ptr(log.as_ptr() as *const c_char).to_str().unwrap().to_string();
            assert!(text.contains("line 14") && text.contains("madd"), "{text}");
            assert_eq!(vals[1] as usize, text.len());
            assert!(last_error().starts_with("cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: ptxas"), "{}", last_error());

            // u16 and u8 scalars through kernelParams.
            let good = CString::new(SCALE).unwrap();
            assert_eq!(cuModuleLoadData(&mut module, good.as_ptr() as _), CUDA_SUCCESS);
            let mut f: CUfunction = null_mut();
            let fname = CString::new("scale").unwrap();
            assert_eq!(cuModuleGetFunction(&mut f, module, fname.as_ptr()), CUDA_SUCCESS);
            let (mut a0, mut a1, mut a2) = (p, 3u16, 7u8);
            let mut params = [&mut a0 as *mut u64 as *mut c_void, &mut a1 as *mut u16 as _, &mut a2 as *mut u8 as _];
            let r = cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut());
            assert_eq!(r, CUDA_SUCCESS, "{}", last_error());
            let mut host = [0u32; 4];
            assert_eq!(cuMemcpyDtoH_v2(host.as_mut_ptr() as _, p, 16), CUDA_SUCCESS);
            assert_eq!(host, [7, 10, 13, 16]);

            // The same launch through `extra` (a packed parameter buffer).
            let mut packed = [0u8; 11];
            packed[..8].copy_from_slice(&p.to_le_bytes());
            packed[8..10].copy_from_slice(&5u16.to_le_bytes());
            packed[10] = 1;
            let mut size = packed.len();
            let mut extra = [
                CU_LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
                packed.as_mut_ptr() as *mut c_void,
                CU_LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
                &mut size as *mut usize as *mut c_void,
                CU_LAUNCH_PARAM_END as *mut c_void,
            ];
            let r = cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, null_mut(), null_mut(), extra.as_mut_ptr());
            assert_eq!(r, CUDA_SUCCESS, "{}", last_error());
            assert_eq!(cuMemcpyDtoH_v2(host.as_mut_ptr() as _, p, 16), CUDA_SUCCESS);
            assert_eq!(host, [1, 6, 11, 16]);

            // Too many threads: an immediate error; then a fault: sticky, explained.
            let r = cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut());
            assert_eq!(r, CUDA_ERROR_INVALID_VALUE);
            assert!(last_error().contains("at most 1024 per block"), "{}", last_error());
            let r = cuLaunchKernel(f, 1, 1, 1, 8, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut());
            assert_eq!(r, CUDA_SUCCESS, "the fault shows at the next synchronizing call");
            assert_eq!(cuStreamSynchronize(null_mut()), CUDA_ERROR_ILLEGAL_ADDRESS);
            let msg = last_error();
            assert!(msg.contains("`scale_param_0`") && msg.contains("thread (4, 0, 0)"), "{msg}");
            assert_eq!(cuMemcpyDtoH_v2(host.as_mut_ptr() as _, p, 16), CUDA_ERROR_ILLEGAL_ADDRESS);

            let mut s: *const c_char = std::ptr::null();
            assert_eq!(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &mut s), CUDA_SUCCESS);
            assert_eq!(CStr::from_ptr(s).to_str().unwrap(), "CUDA_ERROR_ILLEGAL_ADDRESS");
            assert_eq!(cuGetErrorString(CUDA_ERROR_NOT_SUPPORTED, &mut s), CUDA_SUCCESS);
            assert_eq!(CStr::from_ptr(s).to_str().unwrap(), "operation not supported");
            assert_eq!(cuGetErrorName(4242, &mut s), CUDA_ERROR_INVALID_VALUE);
            assert!(s.is_null());
            assert_eq!(cuGraphLaunch(), CUDA_ERROR_NOT_SUPPORTED);
            assert!(last_error().starts_with("cuGraphLaunch: CUDA_ERROR_NOT_SUPPORTED"), "{}", last_error());
            assert_eq!(cuDeviceGetAttribute(null_mut(), 1, 0), CUDA_ERROR_INVALID_VALUE, "NULL output");
            assert_eq!(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
        }
    }
}
