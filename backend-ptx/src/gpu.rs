//! The GPU runner: lists CUDA devices and runs emitted PTX through the CUDA driver API (cudarc,
//! with the driver library loaded at run time).
//!
//! Guarantees:
//! - Nothing here panics when there is no CUDA driver or no device: [`devices`] and
//!   [`GpuRunner::new`] check `is_culib_present()` before any driver call and return
//!   [`GpuError::NoDriver`] / [`GpuError::NoDevice`].
//! - Modules are loaded with `cuModuleLoadDataEx` and a JIT error-log buffer, so a module the
//!   driver rejects yields [`GpuError::ModuleRejected`] carrying the driver's own message.
//! - A runner caches loaded modules by PTX text for its context; they are unloaded when the runner
//!   is dropped.
//! - [`GpuRunner::run`] copies every buffer argument to the device, launches, synchronizes and
//!   returns every buffer's final contents, in argument order.

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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// No CUDA driver library (libcuda) could be loaded.
    NoDriver,
    /// The driver is present but reports no device.
    NoDevice,
    /// A driver call failed.
    Driver(String),
    /// The driver's JIT rejected a PTX module; `log` is its error log.
    ModuleRejected { error: String, log: String },
    /// Bad launch request (unknown kernel, argument problems).
    Invalid(String),
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::NoDriver => write!(f, "no CUDA driver found (libcuda could not be loaded)"),
            GpuError::NoDevice => write!(f, "the CUDA driver reports no device"),
            GpuError::Driver(e) => write!(f, "CUDA driver error: {e}"),
            GpuError::ModuleRejected { error, log } => {
                write!(f, "the driver rejected the PTX module ({error}):\n{log}")
            }
            GpuError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for GpuError {}

impl From<result::DriverError> for GpuError {
    fn from(e: result::DriverError) -> GpuError {
        GpuError::Driver(e.to_string())
    }
}

/// Whether the CUDA driver library can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

fn driver_version() -> Result<i32, GpuError> {
    let mut v = 0;
    // SAFETY: the driver library is present (checked by callers); `v` is a valid out pointer.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}

/// Every CUDA device, or why there is none.
pub fn devices() -> Result<Vec<DeviceInfo>, GpuError> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    let n = CudaContext::device_count()?;
    if n <= 0 {
        return Err(GpuError::NoDevice);
    }
    let driver_version = driver_version()?;
    (0..n as usize)
        .map(|ordinal| {
            let ctx = CudaContext::new(ordinal)?;
            Ok(DeviceInfo {
                ordinal,
                name: ctx.name()?,
                compute_capability: ctx.compute_capability()?,
                total_mem_bytes: ctx.total_mem()?,
                driver_version,
            })
        })
        .collect()
}

/// A kernel argument.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A device buffer initialised with these bytes; the kernel receives its address.
    Buffer(Vec<u8>),
    /// A by-value parameter: its little-endian bytes (1, 2, 4 or 8).
    Scalar(Vec<u8>),
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
        if !driver_present() {
            return Err(GpuError::NoDriver);
        }
        if CudaContext::device_count()? <= ordinal as i32 {
            return Err(GpuError::NoDevice);
        }
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.default_stream();
        Ok(GpuRunner { ctx, stream, modules: HashMap::new() })
    }

    /// The device's compute capability.
    pub fn compute_capability(&self) -> Result<(i32, i32), GpuError> {
        Ok(self.ctx.compute_capability()?)
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
                error: e.to_string(),
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

    /// Copies every [`Arg::Buffer`] to the device; returns the device buffers and the parameter
    /// storage (device addresses and scalar bytes, one entry per argument, in order).
    fn upload(&self, args: &[Arg]) -> Result<(Vec<CudaSlice<u8>>, Vec<Vec<u8>>), GpuError> {
        let mut buffers = Vec::new();
        for a in args {
            if let Arg::Buffer(bytes) = a {
                let init: &[u8] = if bytes.is_empty() { &[0] } else { bytes };
                buffers.push(self.stream.clone_htod(init)?);
            }
        }
        let mut storage: Vec<Vec<u8>> = Vec::with_capacity(args.len());
        let mut b = buffers.iter();
        for a in args {
            match a {
                Arg::Buffer(_) => {
                    let slice = b.next().ok_or_else(|| GpuError::Invalid("buffer bookkeeping".into()))?;
                    let (ptr, _sync) = slice.device_ptr(&self.stream);
                    storage.push(ptr.to_le_bytes().to_vec());
                }
                Arg::Scalar(bytes) => {
                    if ![1, 2, 4, 8].contains(&bytes.len()) {
                        return Err(GpuError::Invalid(format!("a scalar argument has {} bytes", bytes.len())));
                    }
                    storage.push(bytes.clone());
                }
            }
        }
        Ok((buffers, storage))
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

    /// Runs `kernel` of `ptx` and returns the final contents of every [`Arg::Buffer`], in order.
    pub fn run(&mut self, ptx: &str, kernel: &str, launch: Launch, args: &[Arg]) -> Result<Vec<Vec<u8>>, GpuError> {
        let func = self.function(ptx, kernel)?;
        let (buffers, mut storage) = self.upload(args)?;
        let mut params: Vec<*mut c_void> = storage.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
        self.ctx.bind_to_thread()?;
        self.enqueue(func, launch, &mut params)?;
        self.stream.synchronize()?;
        let mut out = Vec::with_capacity(buffers.len());
        for (slice, a) in buffers.iter().zip(args.iter().filter(|a| matches!(a, Arg::Buffer(_)))) {
            let mut v = self.stream.clone_dtoh(slice)?;
            if let Arg::Buffer(bytes) = a {
                v.truncate(bytes.len());
            }
            out.push(v);
        }
        Ok(out)
    }
}

impl Drop for GpuRunner {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            for (_, m) in self.modules.drain() {
                // SAFETY: each module was loaded by this runner in this context and is unloaded once.
                unsafe {
                    let _ = sys::cuModuleUnload(m);
                }
            }
        }
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
        args: &[Arg],
        reps: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let func = self.function(ptx, kernel)?;
        let (buffers, mut storage) = self.upload(args)?;
        let mut params: Vec<*mut c_void> = storage.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
        self.ctx.bind_to_thread()?;
        self.enqueue(func, launch, &mut params)?;
        self.stream.synchronize()?;
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = self.stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            self.enqueue(func, launch, &mut params)?;
            let end = self.stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            times.push(start.elapsed_ms(&end)?);
        }
        self.stream.synchronize()?;
        drop(buffers);
        Ok(times)
    }
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
