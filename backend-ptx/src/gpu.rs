//! The GPU runner: lists CUDA devices and runs emitted PTX through the CUDA driver API (cudarc,
//! with the driver library loaded at run time).
//!
//! Guarantees:
//! - The driver library is the one `KIR_CUDA_DRIVER` selects ([`crate::driver_lib`]: unset, the
//!   system's; `emu`, kir's emulated driver; a path); a selection that cannot be honoured is
//!   [`GpuError::DriverSelection`], never a silent fallback.
//! - Nothing here panics when there is no CUDA driver or no device: [`devices`] and
//!   [`GpuRunner::new`] check `is_culib_present()` before any driver call and return
//!   [`GpuError::NoDriver`] / [`GpuError::NoDevice`].
//! - A device is [`emulated`](DeviceInfo::emulated) when its name starts with
//!   [`EMULATED_DEVICE_PREFIX`] (kir's emulated driver): its event timings are CPU wall time.
//! - Modules are loaded with `cuModuleLoadDataEx` and a JIT error-log buffer, so a module the
//!   driver rejects yields [`GpuError::ModuleRejected`] carrying the driver's own message.
//! - A runner caches loaded modules by PTX text for its context; they are unloaded when the runner
//!   is dropped (or by [`GpuRunner::unload_all`]).
//! - A driver that crashes takes this process with it: callers that load PTX they did not write in
//!   a loop (fuzzing) run it in a worker process (`kir_harness::isolate`), which reports the crash as
//!   [`GpuError::Crashed`] (or a hang as [`GpuError::TimedOut`]) with the [`Stage`] it happened in.
//! - [`GpuRunner::run_sequence`] (and [`GpuRunner::run`], one launch) copies every buffer to the
//!   device once, runs the launches in order with parameters that may name any buffer (the same one
//!   several times), synchronizes after each, and returns every buffer's final contents, in order.
//! - [`GpuRunner::time_launches`] and [`GpuRunner::time_device_copy`] time by CUDA events on the
//!   runner's stream, one event pair around each timed launch or copy, after untimed warm-ups and
//!   a synchronization (a fault during the warm-ups is an error before any time is taken).

use cudarc::driver::{result, sys, CudaContext, CudaSlice, CudaStream, DevicePtr};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::Arc;

/// A CUDA device.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// (major, minor)
    pub compute_capability: (i32, i32),
    pub total_mem_bytes: usize,
    /// As the driver reports it, e.g. 12080 for CUDA 12.8.
    pub driver_version: i32,
    /// kir's emulated driver (the PTX emulator on the CPU), not hardware.
    pub emulated: bool,
}

/// How the emulated driver's device names begin (`kir-ptx-emu (sm_90, CPU)`).
pub const EMULATED_DEVICE_PREFIX: &str = "kir-ptx-emu";

/// Whether a device of this name is kir's emulated one.
pub fn is_emulated_device(name: &str) -> bool {
    name.starts_with(EMULATED_DEVICE_PREFIX)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// No CUDA driver library (libcuda) could be loaded.
    NoDriver,
    /// `KIR_CUDA_DRIVER` names a driver that cannot be used (the message says which and why).
    DriverSelection(String),
    /// The driver is present but reports no device.
    NoDevice,
    /// A driver call failed.
    Driver(String),
    /// The driver's JIT rejected a PTX module; `log` is its error log.
    ModuleRejected { error: String, log: String },
    /// Bad launch request (unknown kernel, argument problems).
    Invalid(String),
    /// The process that made the driver calls died (an isolated runner's worker: `kir_harness::isolate`):
    /// `how` is the signal (`SIGSEGV`) or exit status, `stage` what the driver was doing.
    Crashed { stage: Stage, how: String },
    /// The process that made the driver calls gave no answer within `secs` seconds (a kernel that
    /// never ends, a driver that hangs) and was killed.
    TimedOut { stage: Stage, secs: u64 },
}

/// What a run was doing when its driver process crashed or hung.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Starting: loading the driver, creating the context.
    Starting,
    /// Loading a PTX module: the driver's JIT compiler (`cuModuleLoadDataEx`).
    Loading,
    /// Copying buffers, launching kernels, synchronizing.
    Running,
}

impl Stage {
    /// The stage in words, as in "crashed while ...".
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Starting => "starting (loading the driver, creating the context)",
            Stage::Loading => "JIT-compiling the PTX module (cuModuleLoadDataEx)",
            Stage::Running => "running the kernel (copies, launch, synchronization)",
        }
    }
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::NoDriver => write!(f, "no CUDA driver found (libcuda could not be loaded)"),
            GpuError::DriverSelection(e) => write!(f, "{e}"),
            GpuError::NoDevice => write!(f, "the CUDA driver reports no device"),
            GpuError::Driver(e) => write!(f, "CUDA driver error: {e}"),
            GpuError::ModuleRejected { error, log } => {
                write!(f, "the driver rejected the PTX module ({error}):\n{log}")
            }
            GpuError::Invalid(e) => write!(f, "{e}"),
            GpuError::Crashed { stage: Stage::Loading, how } => {
                write!(f, "the driver's PTX JIT crashed ({how}) while {}", Stage::Loading.describe())
            }
            GpuError::Crashed { stage, how } => write!(f, "the CUDA driver crashed ({how}) while {}", stage.describe()),
            GpuError::TimedOut { stage, secs } => {
                write!(f, "the CUDA driver gave no answer in {secs} s while {} (killed)", stage.describe())
            }
        }
    }
}

impl std::error::Error for GpuError {}

/// A driver result code as `CUDA_ERROR_NAME (description)`.
fn describe(e: &result::DriverError) -> String {
    match (e.error_name(), e.error_string()) {
        (Ok(name), Ok(text)) => format!("{} ({})", name.to_string_lossy(), text.to_string_lossy()),
        _ => e.to_string(),
    }
}

impl From<result::DriverError> for GpuError {
    /// The driver's code and description; with kir's emulated driver also its explanation of the
    /// failure (which PTX line, block and thread faulted; what a copy missed).
    fn from(e: result::DriverError) -> GpuError {
        let mut msg = describe(&e);
        if let Some(why) = crate::driver_lib::emulated_driver_last_error() {
            msg.push_str("\n  emulated driver: ");
            msg.push_str(&why);
        }
        GpuError::Driver(msg)
    }
}

/// Selects the driver library (`KIR_CUDA_DRIVER`) and checks that it can be loaded: the first
/// call every entry point makes before any driver call.
pub fn driver() -> Result<(), GpuError> {
    crate::driver_lib::select().map_err(GpuError::DriverSelection)?;
    // SAFETY: only tries to dlopen the library.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(GpuError::NoDriver)
    }
}

/// Whether a usable CUDA driver library can be loaded.
pub fn driver_present() -> bool {
    driver().is_ok()
}

fn driver_version() -> Result<i32, GpuError> {
    let mut v = 0;
    // SAFETY: the driver library is present (checked by callers); `v` is a valid out pointer.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}

/// Every CUDA device, or why there is none.
pub fn devices() -> Result<Vec<DeviceInfo>, GpuError> {
    driver()?;
    let n = CudaContext::device_count()?;
    if n <= 0 {
        return Err(GpuError::NoDevice);
    }
    let driver_version = driver_version()?;
    (0..n as usize)
        .map(|ordinal| {
            let ctx = CudaContext::new(ordinal)?;
            let name = ctx.name()?;
            Ok(DeviceInfo {
                ordinal,
                emulated: is_emulated_device(&name),
                name,
                compute_capability: ctx.compute_capability()?,
                total_mem_bytes: ctx.total_mem()?,
                driver_version,
            })
        })
        .collect()
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param {
    /// The device address of buffer `i` of the run's buffer list; several parameters (of one launch
    /// or of several) may name the same buffer, and then receive the same address.
    Buffer(usize),
    /// A by-value parameter: its little-endian bytes (1, 2, 4 or 8).
    Scalar(Vec<u8>),
}

/// One launch of a run: kernel `kernel` of the PTX module `ptx`, its shape and its parameters.
#[derive(Clone, Debug)]
pub struct KernelLaunch<'a> {
    pub ptx: &'a str,
    pub kernel: &'a str,
    pub launch: Launch,
    pub params: Vec<Param>,
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_shared_bytes: u32,
}

/// Loads and runs PTX on one device.
pub struct GpuRunner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    modules: HashMap<String, sys::CUmodule>,
}

impl GpuRunner {
    pub fn new(ordinal: usize) -> Result<GpuRunner, GpuError> {
        driver()?;
        if CudaContext::device_count()? <= ordinal as i32 {
            return Err(GpuError::NoDevice);
        }
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.default_stream();
        Ok(GpuRunner { ctx, stream, modules: HashMap::new() })
    }

    /// The device's name, as the driver reports it.
    pub fn device_name(&self) -> Result<String, GpuError> {
        Ok(self.ctx.name()?)
    }

    /// Whether the device is kir's emulated one (its timings are CPU wall time).
    pub fn is_emulated(&self) -> bool {
        self.ctx.name().is_ok_and(|n| is_emulated_device(&n))
    }

    /// The device's compute capability.
    pub fn compute_capability(&self) -> Result<(i32, i32), GpuError> {
        Ok(self.ctx.compute_capability()?)
    }

    /// How many modules the runner holds loaded.
    pub fn loaded_modules(&self) -> usize {
        self.modules.len()
    }

    /// Unloads every module the runner loaded (a long-lived runner's cache stays bounded).
    pub fn unload_all(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            for (_, m) in self.modules.drain() {
                // SAFETY: each module was loaded by this runner in this context and is unloaded once.
                unsafe {
                    let _ = sys::cuModuleUnload(m);
                }
            }
        }
        self.modules.clear();
    }

    /// Loads (or finds in the cache) the module for `ptx`.
    pub fn load(&mut self, ptx: &str) -> Result<sys::CUmodule, GpuError> {
        if let Some(m) = self.modules.get(ptx) {
            return Ok(*m);
        }
        self.ctx.bind_to_thread()?;
        let image = CString::new(ptx).map_err(|_| GpuError::Invalid("PTX text contains a NUL byte".into()))?;
        let mut log = vec![0u8; 16 * 1024];
        let mut options =
            [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `image` is NUL-terminated PTX; the option arrays have matching lengths and the log
        // buffer outlives the call.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image.as_ptr() as *const c_void,
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Err(e) = r.result() {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(GpuError::ModuleRejected {
                error: describe(&e),
                log: String::from_utf8_lossy(&log[..end]).into_owned(),
            });
        }
        self.modules.insert(ptx.to_string(), module);
        Ok(module)
    }

    /// The entry `kernel` of `ptx` (loading and caching the module).
    fn function(&mut self, ptx: &str, kernel: &str) -> Result<sys::CUfunction, GpuError> {
        let module = self.load(ptx)?;
        let name = CString::new(kernel).map_err(|_| GpuError::Invalid("kernel name contains a NUL byte".into()))?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` is a live module of this context; `func` is a valid out pointer.
        unsafe { sys::cuModuleGetFunction(&mut func, module, name.as_ptr()) }
            .result()
            .map_err(|e| GpuError::Invalid(format!("kernel `{kernel}` not found in the module: {e}")))?;
        Ok(func)
    }

    /// Copies `buffers` to the device (an empty buffer gets one byte, so it has an address).
    fn upload(&self, buffers: &[Vec<u8>]) -> Result<Vec<CudaSlice<u8>>, GpuError> {
        buffers
            .iter()
            .map(|bytes| {
                let init: &[u8] = if bytes.is_empty() { &[0] } else { bytes };
                Ok(self.stream.clone_htod(init)?)
            })
            .collect()
    }

    /// The parameter storage of one launch: each parameter's bytes (a buffer's device address, or
    /// the scalar's bytes), in order.
    fn param_storage(&self, params: &[Param], device: &[CudaSlice<u8>]) -> Result<Vec<Vec<u8>>, GpuError> {
        params
            .iter()
            .map(|p| match p {
                Param::Buffer(i) => {
                    let slice = device.get(*i).ok_or_else(|| {
                        GpuError::Invalid(format!("a parameter names buffer {i}, but the run has {}", device.len()))
                    })?;
                    let (ptr, _sync) = slice.device_ptr(&self.stream);
                    Ok(ptr.to_le_bytes().to_vec())
                }
                Param::Scalar(bytes) if [1, 2, 4, 8].contains(&bytes.len()) => Ok(bytes.clone()),
                Param::Scalar(bytes) => Err(GpuError::Invalid(format!("a scalar argument has {} bytes", bytes.len()))),
            })
            .collect()
    }

    /// Enqueues one launch of `func` on the runner's stream.
    fn enqueue(&self, func: sys::CUfunction, launch: Launch, params: &mut [*mut c_void]) -> Result<(), GpuError> {
        let Launch { grid, block, dynamic_shared_bytes } = launch;
        // SAFETY: `func` belongs to this context; `params` points at one live value per kernel
        // parameter, laid out as the PTX `.param` declarations expect, and the caller keeps the
        // buffers alive until the stream is synchronized.
        unsafe {
            sys::cuLaunchKernel(
                func,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                dynamic_shared_bytes,
                self.stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()?;
        Ok(())
    }

    /// Runs one launch over `buffers`; returns every buffer's final contents, in order.
    pub fn run(
        &mut self,
        ptx: &str,
        kernel: &str,
        launch: Launch,
        buffers: &[Vec<u8>],
        params: &[Param],
    ) -> Result<Vec<Vec<u8>>, GpuError> {
        self.run_sequence(buffers, &[KernelLaunch { ptx, kernel, launch, params: params.to_vec() }])
    }

    /// Copies `buffers` to the device once, runs `launches` in order on the runner's stream (the
    /// buffers stay on the device, so each launch sees the results of the ones before, as in a CUDA
    /// graph), synchronizes, and returns every buffer's final contents, in order.
    pub fn run_sequence(&mut self, buffers: &[Vec<u8>], launches: &[KernelLaunch]) -> Result<Vec<Vec<u8>>, GpuError> {
        let funcs = launches.iter().map(|l| self.function(l.ptx, l.kernel)).collect::<Result<Vec<_>, _>>()?;
        let device = self.upload(buffers)?;
        self.ctx.bind_to_thread()?;
        for (l, func) in launches.iter().zip(funcs) {
            let mut storage = self.param_storage(&l.params, &device)?;
            let mut params: Vec<*mut c_void> = storage.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
            self.enqueue(func, l.launch, &mut params)?;
            // The parameter values are copied by the launch call; synchronizing here also makes a
            // fault name the launch that caused it.
            self.stream.synchronize()?;
        }
        let mut out = Vec::with_capacity(device.len());
        for (slice, bytes) in device.iter().zip(buffers) {
            let mut v = self.stream.clone_dtoh(slice)?;
            v.truncate(bytes.len());
            out.push(v);
        }
        Ok(out)
    }
}

impl Drop for GpuRunner {
    fn drop(&mut self) {
        self.unload_all();
    }
}

impl GpuRunner {
    /// Times `kernel` of `ptx` by CUDA events: one warm-up launch, then `reps` launches, each
    /// between a start and an end event on the runner's stream; returns each launch's time in
    /// milliseconds. Buffers are copied to the device once, so later launches see the results of
    /// earlier ones (fine for timing; use [`GpuRunner::run`] for results).
    pub fn time_kernel(
        &mut self,
        ptx: &str,
        kernel: &str,
        launch: Launch,
        buffers: &[Vec<u8>],
        params: &[Param],
        reps: usize,
    ) -> Result<Vec<f32>, GpuError> {
        self.time_launches(ptx, kernel, launch, buffers, params, 1, reps)
    }

    /// [`GpuRunner::time_kernel`] with `warmup` untimed launches (followed by a synchronization,
    /// so that a fault is reported before any timing) instead of one.
    #[allow(clippy::too_many_arguments)]
    pub fn time_launches(
        &mut self,
        ptx: &str,
        kernel: &str,
        launch: Launch,
        buffers: &[Vec<u8>],
        params: &[Param],
        warmup: usize,
        reps: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let func = self.function(ptx, kernel)?;
        let device = self.upload(buffers)?;
        let mut storage = self.param_storage(params, &device)?;
        let mut params: Vec<*mut c_void> = storage.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
        self.ctx.bind_to_thread()?;
        let times = time_on(&self.stream, warmup, reps, || self.enqueue(func, launch, &mut params))?;
        drop(device);
        Ok(times)
    }

    /// Times device-to-device copies of `bytes` bytes (`cuMemcpyDtoDAsync` between two buffers of
    /// that size, each copy between two CUDA events, after `warmup` untimed copies); returns each
    /// copy's time in milliseconds. A copy reads `bytes` and writes `bytes`: the device's copy
    /// rate, the reference of `kir bench`'s "% of copy rate", is `2 * bytes` over its time.
    pub fn time_device_copy(&mut self, bytes: usize, warmup: usize, reps: usize) -> Result<Vec<f32>, GpuError> {
        let n = bytes.max(1);
        self.ctx.bind_to_thread()?;
        let src = self.stream.alloc_zeros::<u8>(n)?;
        let dst = self.stream.alloc_zeros::<u8>(n)?;
        // Raw addresses, taken once: the copies below are enqueued on the runner's stream, which
        // is the stream the buffers were allocated on.
        let (src_ptr, dst_ptr) = {
            let (s, _s) = src.device_ptr(&self.stream);
            let (d, _d) = dst.device_ptr(&self.stream);
            (s, d)
        };
        self.stream.synchronize()?;
        let stream = &self.stream;
        let times = time_on(stream, warmup, reps, || {
            // SAFETY: both buffers are live allocations of `n` bytes in this context, and the
            // stream is synchronized (by `time_on`) before they are freed.
            unsafe { result::memcpy_dtod_async(dst_ptr, src_ptr, n, stream.cu_stream()) }?;
            Ok(())
        })?;
        drop((src, dst));
        Ok(times)
    }
}

/// Enqueues `op` `warmup` times untimed, synchronizes (so a fault is reported before any timing),
/// then `reps` times, each between a start and an end CUDA event on `stream`; synchronizes and
/// returns each timed run's milliseconds.
fn time_on(
    stream: &CudaStream,
    warmup: usize,
    reps: usize,
    mut op: impl FnMut() -> Result<(), GpuError>,
) -> Result<Vec<f32>, GpuError> {
    for _ in 0..warmup {
        op()?;
    }
    stream.synchronize()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        op()?;
        let end = stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        times.push(start.elapsed_ms(&end)?);
    }
    stream.synchronize()?;
    Ok(times)
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        // On machines without a CUDA driver this must report NoDriver; with one, devices or NoDevice.
        match super::devices() {
            Err(super::GpuError::NoDriver) => assert!(!super::driver_present()),
            Ok(d) => assert!(!d.is_empty()),
            Err(e) => assert!(super::driver_present(), "{e}"),
        }
    }
}
