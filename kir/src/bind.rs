//! `kir::bind`: what the typed kernel bindings of [`crate::build`] call — one launch API that runs
//! a `.kir` kernel in the kir interpreter ([`Interpreter`]) or on a GPU through cudarc (`Gpu`,
//! feature `gpu`).
//!
//! A build script generates, for each kernel of a `.kir` file, a module with a `launch` function
//! whose parameters are the kernel's, typed ([`crate::build`] has the table): pointer parameters
//! take `&E::Slice<T>` when the kernel only reads them and `&mut E::Slice<T>` when it may write
//! them, scalars their Rust type. The engine `E` decides what a slice is: `[T]` for the
//! interpreter, cudarc's `CudaSlice<T>` on a GPU, so the same call
//! `relu_backward::launch(&engine, grid, block, &x, &dy, &mut dx, n)` runs on either.
//!
//! Guarantees:
//! - The argument types are checked by the Rust compiler: a `&[u32]` for an `f32` buffer, a
//!   `u64` for a `u32`, a read-only slice for a buffer the kernel writes, a missing or extra
//!   argument are compile errors.
//! - The interpreter runs the module that was checked at build time (its text, and the files it
//!   imports, are embedded in the bindings: [`Source`]), with race and uninitialized-read
//!   detection on unless turned off ([`Interpreter::races`], [`Interpreter::uninit`]); a kernel
//!   fault is an [`Error`] of kind [`ErrorKind::KernelFault`](crate::api::ErrorKind::KernelFault)
//!   rendered against the `.kir` file, as `kir run` prints it. Only `&mut` buffers are written
//!   back, each in place; a read-only buffer is never changed.
//! - On a GPU, the PTX emitted at build time is loaded once per engine and launched on the
//!   engine's stream with the buffers' device addresses; cudarc's stream events order the launch
//!   after the buffers' earlier work and their later use after it. Each launch synchronizes the
//!   stream, so a fault on the device is that launch's error ([`ErrorKind::Gpu`](crate::api::ErrorKind::Gpu)),
//!   with kir's emulated driver's explanation when it runs there. The driver is the one
//!   `KIR_CUDA_DRIVER` selects (`emu`: kir's emulated driver, no GPU needed).
//! - Nothing here panics on user input.

use crate::api::{ArgValue, Dim3, Element, Error, ErrorKind, Module, Output};
use kir_interp::Buffer;
use std::sync::OnceLock;

mod sealed {
    pub trait Sealed {}
}

/// A `.kir` module as the bindings embed it: its file name and text, the files it imports, and
/// the PTX emitted for it at build time. The generated code makes one `static` per file.
#[derive(Debug)]
pub struct Source {
    file: &'static str,
    text: &'static str,
    imports: &'static [(&'static str, &'static str)],
    ptx: &'static str,
    module: OnceLock<Result<Module, Error>>,
}

impl Source {
    /// What the generated code writes; not for hand-written code.
    #[doc(hidden)]
    pub const fn new(
        file: &'static str,
        text: &'static str,
        imports: &'static [(&'static str, &'static str)],
        ptx: &'static str,
    ) -> Source {
        Source { file, text, imports, ptx, module: OnceLock::new() }
    }

    /// The `.kir` file's name, as the build script was given it.
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The PTX the build script emitted for every kernel of the file.
    pub fn ptx(&self) -> &'static str {
        self.ptx
    }

    /// The checked module, parsed from the embedded text on first use.
    pub fn module(&self) -> Result<&Module, Error> {
        self.module
            .get_or_init(|| Module::parse_with_imports(self.file, self.text, self.imports))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// A launch's shape: grid, block and dynamic shared memory in bytes per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    pub dynamic_shared_bytes: u32,
}

impl LaunchConfig {
    /// `grid` blocks of `block` threads (each `u32`, `[x, y, z]` or a tuple), no dynamic shared
    /// memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig { grid: grid.into(), block: block.into(), dynamic_shared_bytes: 0 }
    }

    /// With `bytes` of dynamic shared memory per block.
    pub fn dynamic_shared_bytes(mut self, bytes: u32) -> LaunchConfig {
        self.dynamic_shared_bytes = bytes;
        self
    }
}

/// Where a generated `launch` runs: [`Interpreter`] or `Gpu` (feature `gpu`). Sealed; its
/// hidden methods are the generated code's.
pub trait Engine: sealed::Sealed {
    /// What a pointer parameter `ptr<global, T>` takes (by `&` or `&mut`): `[T]` for the
    /// interpreter, `cudarc::driver::CudaSlice<T>` on a GPU.
    type Slice<T: Element>: ?Sized;
    #[doc(hidden)]
    type Arg<'a>
    where
        Self: 'a;
    #[doc(hidden)]
    fn scalar<T: Element>(&self, value: T) -> Self::Arg<'_>;
    #[doc(hidden)]
    fn input<'a, T: Element>(&'a self, buffer: &'a Self::Slice<T>) -> Self::Arg<'a>;
    #[doc(hidden)]
    fn output<'a, T: Element>(&'a self, buffer: &'a mut Self::Slice<T>) -> Self::Arg<'a>;
    #[doc(hidden)]
    fn launch<'a>(
        &'a self,
        source: &Source,
        kernel: &str,
        config: LaunchConfig,
        args: Vec<Self::Arg<'a>>,
    ) -> Result<(), Error>;
}

/// The kir interpreter as an engine: buffers are host slices; each launch runs the embedded
/// module with its runtime checks (races and uninitialized shared-memory reads on by default).
#[derive(Clone, Debug)]
pub struct Interpreter {
    races: bool,
    uninit: bool,
    fuel: Option<u64>,
    threads: Option<usize>,
}

impl Default for Interpreter {
    fn default() -> Interpreter {
        Interpreter::new()
    }
}

impl Interpreter {
    /// Race and uninitialized-read detection on, the interpreter's default fuel, all cores.
    pub fn new() -> Interpreter {
        Interpreter { races: true, uninit: true, fuel: None, threads: None }
    }

    /// Data-race detection (default on).
    pub fn races(mut self, on: bool) -> Interpreter {
        self.races = on;
        self
    }

    /// Reports of reads of shared memory no thread wrote (default on).
    pub fn uninit(mut self, on: bool) -> Interpreter {
        self.uninit = on;
        self
    }

    /// Each launch's fuel in thread-instructions (as `kir run --fuel`).
    pub fn fuel(mut self, thread_instructions: u64) -> Interpreter {
        self.fuel = Some(thread_instructions);
        self
    }

    /// Host threads for blocks (results do not depend on it).
    pub fn threads(mut self, n: usize) -> Interpreter {
        self.threads = Some(n);
        self
    }
}

type WriteBack<'a> = Box<dyn FnOnce(&Output, &str) -> Result<(), Error> + 'a>;

/// An argument of an interpreter launch (the generated code's).
#[doc(hidden)]
pub struct InterpArg<'a> {
    value: ArgValue,
    write_back: Option<WriteBack<'a>>,
}

fn buffer_of<T: Element>(s: &[T]) -> Buffer {
    Buffer::from_bits(T::TYPE, s.iter().map(|x| x.to_bits()))
}

impl sealed::Sealed for Interpreter {}
impl Engine for Interpreter {
    type Slice<T: Element> = [T];
    type Arg<'a> = InterpArg<'a>;

    fn scalar<T: Element>(&self, value: T) -> InterpArg<'_> {
        let c = kir_ir::types::Constant::from_bits(T::TYPE, value.to_bits());
        InterpArg { value: ArgValue::Scalar(c), write_back: None }
    }

    fn input<'a, T: Element>(&'a self, buffer: &'a [T]) -> InterpArg<'a> {
        InterpArg { value: ArgValue::Buffer(buffer_of(buffer)), write_back: None }
    }

    fn output<'a, T: Element>(&'a self, buffer: &'a mut [T]) -> InterpArg<'a> {
        let value = ArgValue::Buffer(buffer_of(buffer));
        let back = move |out: &Output, name: &str| -> Result<(), Error> {
            let v: Vec<T> = out.read(name)?;
            buffer.copy_from_slice(&v);
            Ok(())
        };
        InterpArg { value, write_back: Some(Box::new(back)) }
    }

    fn launch<'a>(
        &'a self,
        source: &Source,
        kernel: &str,
        config: LaunchConfig,
        args: Vec<InterpArg<'a>>,
    ) -> Result<(), Error> {
        let module = source.module()?;
        let k = module.kernel(kernel)?;
        let params = k.params();
        if params.len() != args.len() {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "bindings of @{kernel} pass {} arguments, the kernel in {} has {} parameters",
                    args.len(),
                    source.file,
                    params.len()
                ),
            ));
        }
        let mut launch = k
            .launch(config.grid, config.block)
            .dynamic_shared_bytes(config.dynamic_shared_bytes)
            .races(self.races)
            .uninit(self.uninit);
        if let Some(f) = self.fuel {
            launch = launch.fuel(f);
        }
        if let Some(n) = self.threads {
            launch = launch.threads(n);
        }
        let mut backs = Vec::new();
        for ((name, _), arg) in params.iter().zip(args) {
            launch = launch.arg(name, arg.value);
            if let Some(back) = arg.write_back {
                backs.push((*name, back));
            }
        }
        let out = launch.run()?;
        for (name, back) in backs {
            back(&out, name)?;
        }
        Ok(())
    }
}

/// The cudarc the `Gpu` engine uses (its `CudaSlice`, `CudaStream`, ...), for a crate that
/// names cudarc's types without depending on it separately.
#[cfg(feature = "gpu")]
pub use cudarc;
#[cfg(feature = "gpu")]
pub use gpu::{Gpu, GpuArg};

#[cfg(feature = "gpu")]
mod gpu {
    use super::{sealed, Engine, LaunchConfig, Source};
    use crate::api::{Element, Error, ErrorKind};
    use cudarc::driver::{sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};
    use std::collections::HashMap;
    use std::ffi::c_void;
    use std::sync::{Arc, Mutex};

    /// A CUDA device as an engine, through cudarc: buffers are `CudaSlice<T>` (allocate and copy
    /// them with [`Gpu::stream`]); each launch loads the bindings' PTX once, launches on the
    /// engine's stream and synchronizes it.
    pub struct Gpu {
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        /// Loaded entries, by the address of the bindings' PTX text and the kernel's name.
        functions: Mutex<HashMap<(usize, String), CudaFunction>>,
    }

    impl std::fmt::Debug for Gpu {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Gpu").field("device", &self.ctx.name().ok()).finish_non_exhaustive()
        }
    }

    fn driver_error(what: &str, e: cudarc::driver::DriverError) -> Error {
        Error::new(ErrorKind::Gpu, format!("{what}: {}", kir_backend_ptx::gpu::GpuError::from(e)))
    }

    impl Gpu {
        /// Device `ordinal` of the driver `KIR_CUDA_DRIVER` selects (unset: NVIDIA's; `emu`: kir's
        /// emulated driver), on its default stream. No driver or no such device is an
        /// [`ErrorKind::Gpu`] error saying so.
        ///
        /// # Safety
        /// A GPU does not check memory accesses: every launch through this engine must stay
        /// within the buffers it is given (on the GPU a launch that does not may corrupt other
        /// device memory or fault). The interpreter checks exactly that for the same launch with
        /// the same shapes: run it there first, as `cargo test` can anywhere.
        pub unsafe fn new(ordinal: usize) -> Result<Gpu, Error> {
            kir_backend_ptx::gpu::driver().map_err(|e| Error::new(ErrorKind::Gpu, e.to_string()))?;
            let count = CudaContext::device_count().map_err(|e| driver_error("counting devices", e))?;
            if count <= ordinal as i32 {
                return Err(Error::new(
                    ErrorKind::Gpu,
                    format!("no CUDA device {ordinal}: the driver reports {count}"),
                ));
            }
            let ctx = CudaContext::new(ordinal).map_err(|e| driver_error("creating the context", e))?;
            let stream = ctx.default_stream();
            Ok(Gpu { ctx, stream, functions: Mutex::new(HashMap::new()) })
        }

        /// An engine launching on `stream`, a stream the caller's cudarc code made (for
        /// `KIR_CUDA_DRIVER` to be honoured, that code's first driver call must come after
        /// `kir::gpu::driver()`).
        ///
        /// # Safety
        /// As for [`Gpu::new`].
        pub unsafe fn from_stream(stream: Arc<CudaStream>) -> Gpu {
            Gpu { ctx: stream.context().clone(), stream, functions: Mutex::new(HashMap::new()) }
        }

        /// The stream launches run on: allocate and copy buffers with it
        /// (`stream().clone_htod(&v)`, `alloc_zeros::<f32>(n)`, `clone_dtoh(&slice)`).
        pub fn stream(&self) -> &Arc<CudaStream> {
            &self.stream
        }

        /// The device's name, as the driver reports it.
        pub fn device_name(&self) -> Result<String, Error> {
            self.ctx.name().map_err(|e| driver_error("the device's name", e))
        }

        /// Whether the device is kir's emulated one (the PTX emulator, on the CPU).
        pub fn is_emulated(&self) -> bool {
            self.ctx.name().is_ok_and(|n| kir_backend_ptx::gpu::is_emulated_device(&n))
        }

        fn function(&self, source: &Source, kernel: &str) -> Result<CudaFunction, Error> {
            let key = (source.ptx().as_ptr() as usize, kernel.to_string());
            let mut functions = self.functions.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(f) = functions.get(&key) {
                return Ok(f.clone());
            }
            let module = self
                .ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(source.ptx()))
                .map_err(|e| driver_error(&format!("loading the PTX of {}", source.file()), e))?;
            let entry = crate::api::ptx_entry_name(kernel);
            let f = module
                .load_function(&entry)
                .map_err(|e| driver_error(&format!("the entry `{entry}` of {}'s PTX", source.file()), e))?;
            functions.insert(key, f.clone());
            Ok(f)
        }
    }

    /// An argument of a GPU launch (the generated code's): a scalar's bytes, or a buffer's device
    /// address with the guard that orders its stream work.
    #[doc(hidden)]
    pub enum GpuArg<'a> {
        Scalar(Vec<u8>),
        Pointer(sys::CUdeviceptr, SyncOnDrop<'a>),
    }

    impl sealed::Sealed for Gpu {}
    impl Engine for Gpu {
        type Slice<T: Element> = CudaSlice<T>;
        type Arg<'a> = GpuArg<'a>;

        fn scalar<T: Element>(&self, value: T) -> GpuArg<'_> {
            // Little-endian, the type's size (`pred` is one byte, as kir's PTX takes it).
            let bytes = T::TYPE.bytes() as usize;
            GpuArg::Scalar(value.to_bits().to_le_bytes()[..bytes].to_vec())
        }

        fn input<'a, T: Element>(&'a self, buffer: &'a CudaSlice<T>) -> GpuArg<'a> {
            let (ptr, guard) = buffer.device_ptr(&self.stream);
            GpuArg::Pointer(ptr, guard)
        }

        fn output<'a, T: Element>(&'a self, buffer: &'a mut CudaSlice<T>) -> GpuArg<'a> {
            let (ptr, guard) = buffer.device_ptr_mut(&self.stream);
            GpuArg::Pointer(ptr, guard)
        }

        fn launch<'a>(
            &'a self,
            source: &Source,
            kernel: &str,
            config: LaunchConfig,
            args: Vec<GpuArg<'a>>,
        ) -> Result<(), Error> {
            let func = self.function(source, kernel)?;
            let mut storage: Vec<Vec<u8>> = args
                .iter()
                .map(|a| match a {
                    GpuArg::Scalar(b) => b.clone(),
                    GpuArg::Pointer(p, _) => p.to_le_bytes().to_vec(),
                })
                .collect();
            let mut params: Vec<*mut c_void> = storage.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
            self.ctx.bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
            let [gx, gy, gz] = config.grid.0;
            let [bx, by, bz] = config.block.0;
            // SAFETY: `func` is an entry of a module loaded in this context, whose parameters are
            // the kernel's (the bindings were generated from the same module as the PTX);
            // `params` points at one live value per parameter, each laid out as its `.param`
            // (device addresses as 8 bytes, scalars at their size), and the buffers behind the
            // addresses stay borrowed by `args` until the launch is enqueued. That the kernel
            // stays within them is the engine's creator's promise (`Gpu::new`).
            unsafe {
                sys::cuLaunchKernel(
                    func.cu_function(),
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    config.dynamic_shared_bytes,
                    self.stream.cu_stream(),
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(|e| driver_error(&format!("launching @{kernel}"), e))?;
            // The guards record the launch on the buffers' events as they drop.
            drop(args);
            self.stream.synchronize().map_err(|e| driver_error(&format!("running @{kernel}"), e))
        }
    }
}
