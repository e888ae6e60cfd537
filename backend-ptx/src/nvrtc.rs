//! NVIDIA's runtime compiler (NVRTC), loaded with `dlopen` from an absolute path
//! ([`crate::tools::find_nvrtc`]): CUDA C to PTX for the tests and benchmarks that compare kir
//! with NVIDIA's compiler (the `bench/` twins, tensor-core and `cp.async` kernels).
//!
//! cudarc only loads libraries by name, which needs `LD_LIBRARY_PATH` set before the process
//! starts; the PyPI library's `RUNPATH` is `$ORIGIN`, so loaded by path it finds its builtins
//! library itself. Guarantees: a missing library or symbol is an `Err` naming it, a failed
//! compilation an `Err` with NVRTC's log; nothing here panics.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}
const RTLD_NOW: c_int = 2;

type Prog = *mut c_void;
type CreateFn = unsafe extern "C" fn(
    *mut Prog,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(Prog, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(Prog, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Prog) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// The NVRTC entry points this test uses.
pub struct Nvrtc {
    create: CreateFn,
    compile: CompileFn,
    ptx_size: SizeFn,
    ptx: GetFn,
    log_size: SizeFn,
    log: GetFn,
    destroy: DestroyFn,
    version: VersionFn,
}

// The function pointers stay valid for the life of the process (the library is never closed).
unsafe impl Send for Nvrtc {}
unsafe impl Sync for Nvrtc {}

fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a valid C string.
    unsafe {
        let e = dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl Nvrtc {
    /// Loads `libnvrtc.so.12` from `path`.
    pub fn load(path: &Path) -> Result<Nvrtc, String> {
        let c = CString::new(path.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: dlopen with a valid C string; the handle is kept for the process lifetime.
        let h = unsafe { dlopen(c.as_ptr(), RTLD_NOW) };
        if h.is_null() {
            return Err(format!("dlopen {}: {}", path.display(), last_dl_error()));
        }
        let sym = |name: &str| -> Result<*mut c_void, String> {
            let n = CString::new(name).expect("symbol name");
            // SAFETY: a valid handle and C string.
            let p = unsafe { dlsym(h, n.as_ptr()) };
            if p.is_null() {
                Err(format!("{name} not found in {}: {}", path.display(), last_dl_error()))
            } else {
                Ok(p)
            }
        };
        // SAFETY: the symbols have these C signatures (nvrtc.h).
        unsafe {
            Ok(Nvrtc {
                create: std::mem::transmute::<*mut c_void, CreateFn>(sym("nvrtcCreateProgram")?),
                compile: std::mem::transmute::<*mut c_void, CompileFn>(sym("nvrtcCompileProgram")?),
                ptx_size: std::mem::transmute::<*mut c_void, SizeFn>(sym("nvrtcGetPTXSize")?),
                ptx: std::mem::transmute::<*mut c_void, GetFn>(sym("nvrtcGetPTX")?),
                log_size: std::mem::transmute::<*mut c_void, SizeFn>(sym("nvrtcGetProgramLogSize")?),
                log: std::mem::transmute::<*mut c_void, GetFn>(sym("nvrtcGetProgramLog")?),
                destroy: std::mem::transmute::<*mut c_void, DestroyFn>(sym("nvrtcDestroyProgram")?),
                version: std::mem::transmute::<*mut c_void, VersionFn>(sym("nvrtcVersion")?),
            })
        }
    }

    /// Finds NVRTC ([`crate::tools::find_nvrtc`]: `$KIR_NVRTC`, `.tools/py`, `PATH`) and loads it;
    /// returns it with its path, or a message that says where it was looked for and how to
    /// install it.
    pub fn find_and_load() -> Result<(Nvrtc, std::path::PathBuf), String> {
        let path = crate::tools::find_nvrtc().ok_or_else(|| {
            format!("NVRTC (libnvrtc.so.12) not found: set KIR_NVRTC to its path, or {}", crate::tools::INSTALL_HINT)
        })?;
        let nv = Nvrtc::load(&path).map_err(|e| format!("cannot load NVRTC: {e}"))?;
        Ok((nv, path))
    }

    /// `major.minor` of the library.
    pub fn version(&self) -> String {
        let (mut a, mut b) = (0, 0);
        // SAFETY: two valid out-pointers.
        unsafe { (self.version)(&mut a, &mut b) };
        format!("{a}.{b}")
    }

    /// Compiles CUDA C `src` with `options`; returns the PTX or the compile log.
    pub fn compile(&self, src: &str, name: &str, options: &[&str]) -> Result<String, String> {
        let csrc = CString::new(src).map_err(|e| e.to_string())?;
        let cname = CString::new(name).map_err(|e| e.to_string())?;
        let copts: Vec<CString> = options.iter().map(|o| CString::new(*o).expect("option")).collect();
        let optp: Vec<*const c_char> = copts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Prog = std::ptr::null_mut();
        // SAFETY: valid C strings and out-pointers; the program is destroyed below.
        unsafe {
            let r = (self.create)(&mut prog, csrc.as_ptr(), cname.as_ptr(), 0, std::ptr::null(), std::ptr::null());
            if r != 0 {
                return Err(format!("nvrtcCreateProgram failed ({r})"));
            }
            let r = (self.compile)(prog, optp.len() as c_int, optp.as_ptr());
            let result = if r != 0 {
                let mut n = 0usize;
                (self.log_size)(prog, &mut n);
                let mut buf = vec![0u8; n.max(1)];
                (self.log)(prog, buf.as_mut_ptr() as *mut c_char);
                Err(format!("NVRTC error {r}:\n{}", String::from_utf8_lossy(&buf).trim_end_matches('\0')))
            } else {
                let mut n = 0usize;
                (self.ptx_size)(prog, &mut n);
                let mut buf = vec![0u8; n.max(1)];
                (self.ptx)(prog, buf.as_mut_ptr() as *mut c_char);
                Ok(String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string())
            };
            (self.destroy)(&mut prog);
            result
        }
    }
}
