//! Which CUDA driver library the GPU runner talks to, chosen by the `KIR_CUDA_DRIVER` variable.
//!
//! - Unset or empty: nothing happens here; cudarc looks up NVIDIA's `libcuda` by its usual names.
//! - `emu`: kir's emulated CUDA driver (`libkir_cuda_emu.so`, package `kir-cuda-emu`, built with
//!   kir), found next to the running executable (`deps/` below its directory, where cargo builds
//!   it with kir; its directory; or, when the executable itself sits in `deps/` or `examples/` as
//!   test binaries and examples do, the same two one level up). Its device is
//!   `kir-ptx-emu (sm_90, CPU)`: every kernel runs in the PTX emulator.
//! - Anything else: the path of a driver library to use instead of the system's.
//!
//! Guarantees:
//! - The choice is made once per process, before any driver call ([`select`] is called by every
//!   entry point of [`crate::gpu`]), and the chosen library stays loaded for the rest of the process.
//! - It works with cudarc's own lookup without touching it: the chosen library is loaded by path
//!   first, and because its SONAME is `libcuda.so` (the first name cudarc asks `dlopen` for), the
//!   dynamic loader answers cudarc's lookup with the library already loaded.
//! - The choice is checked, never assumed: after loading, the library cudarc's lookup will find
//!   must be the chosen one (same `cuInit`). A variable that names a missing file, a library that
//!   does not load, exports no `cuInit`, or is shadowed by another `libcuda` is a
//!   [`crate::gpu::GpuError::DriverSelection`] whose message names the variable, the path and the
//!   reason — never a silent fallback to another driver.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable that selects the driver library.
pub const ENV_VAR: &str = "KIR_CUDA_DRIVER";
/// The value of [`ENV_VAR`] that selects kir's emulated driver.
pub const EMU: &str = "emu";
/// The file name of the emulated driver library on this platform.
pub fn emu_file_name() -> String {
    format!("{}kir_cuda_emu{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// What [`select`] chose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// cudarc's lookup of the system's driver (the variable is unset).
    System,
    /// The library at this path, loaded; `emulated` when it was chosen by `KIR_CUDA_DRIVER=emu`.
    Library { path: PathBuf, emulated: bool },
}

/// Makes the choice the environment asks for (once per process) and says what it was, or why the
/// named driver cannot be used.
pub fn select() -> Result<&'static Selection, String> {
    static CHOICE: OnceLock<Result<Selection, String>> = OnceLock::new();
    CHOICE
        .get_or_init(|| choose(std::env::var_os(ENV_VAR).as_deref().and_then(|v| v.to_str().map(str::to_owned))))
        .as_ref()
        .map_err(Clone::clone)
}

fn choose(var: Option<String>) -> Result<Selection, String> {
    let value = match var {
        None => return Ok(Selection::System),
        Some(v) if v.trim().is_empty() => return Ok(Selection::System),
        Some(v) => v,
    };
    let (path, emulated) = if value == EMU {
        (find_emulated_driver()?, true)
    } else {
        let p = PathBuf::from(&value);
        if !p.is_file() {
            return Err(format!(
                "{ENV_VAR}={value}: no such file (set it to `{EMU}` for kir's emulated driver, or to the path of a CUDA driver library)"
            ));
        }
        (p, false)
    };
    load(&path).map_err(|why| format!("{ENV_VAR}={value}: {}: {why}", path.display()))?;
    Ok(Selection::Library { path, emulated })
}

/// The directories searched for the emulated driver, in order.
fn emu_search_dirs() -> Vec<PathBuf> {
    let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) else {
        return Vec::new();
    };
    // `deps/` first: cargo rebuilds the library there whenever kir is built; a copy next to the
    // executable may be left over from an earlier build.
    let mut dirs = vec![dir.join("deps"), dir.clone()];
    // Test binaries sit in `deps/`, examples in `examples/`: cargo's build of kir is one level up.
    if dir.file_name().is_some_and(|n| n == "deps" || n == "examples") {
        if let Some(up) = dir.parent() {
            dirs.push(up.join("deps"));
            dirs.push(up.to_path_buf());
        }
    }
    dirs
}

fn find_emulated_driver() -> Result<PathBuf, String> {
    let name = emu_file_name();
    let dirs = emu_search_dirs();
    dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()).ok_or_else(|| {
        let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        format!(
            "{ENV_VAR}={EMU}: the emulated CUDA driver `{name}` is not next to this executable (looked in {}); \
             build it with `cargo build --release -p kir-cuda-emu`, or set {ENV_VAR} to its path",
            if looked.is_empty() {
                "no directory: the executable's path is unknown".to_string()
            } else {
                looked.join(", ")
            }
        )
    })
}

/// Loads `path` for the rest of the process and checks that cudarc's lookup will find it.
fn load(path: &Path) -> Result<(), String> {
    // SAFETY: loading a library runs its initialisers; the user named this library as their CUDA
    // driver, which is what cudarc would load and initialise anyway.
    let chosen = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot load it: {e}"))?;
    let chosen_init = cu_init_address(&chosen).ok_or("it exports no `cuInit`: not a CUDA driver library")?;
    // The same walk over candidate names cudarc makes (`culib()`): the first that loads is used.
    let found = cudarc::get_lib_name_candidates("cuda").into_iter().find_map(|name| {
        // SAFETY: as above; a name that resolves to the chosen library only adds a reference to it.
        unsafe { libloading::Library::new(&name) }.ok().map(|lib| (name, lib))
    });
    match found {
        Some((_, lib)) if cu_init_address(&lib) == Some(chosen_init) => {}
        Some((name, _)) => {
            return Err(format!(
                "cudarc's lookup of `{name}` finds another CUDA driver; the library's SONAME must be `{}` so that it answers that lookup",
                cudarc::get_lib_name_candidates("cuda").first().map(String::as_str).unwrap_or("libcuda.so")
            ))
        }
        None => return Err("loaded, but cudarc's lookup of `libcuda` does not find it (its SONAME must be `libcuda.so`)".into()),
    }
    // Kept loaded for the process: cudarc holds its own reference, but the loader must never be
    // allowed to unload the chosen library between here and cudarc's first call.
    let _ = LOADED.set(chosen);
    Ok(())
}

/// The library [`select`] loaded (none when the system's driver is used).
static LOADED: OnceLock<libloading::Library> = OnceLock::new();

/// The emulated driver's explanation of its last failed call (`kirEmuLastError`: the faulting PTX
/// line, block and thread; the JIT log; the range a copy missed), when the selected driver is kir's
/// emulated one and a call has failed; `None` otherwise. The CUDA API itself carries only a code.
pub fn emulated_driver_last_error() -> Option<String> {
    let lib = LOADED.get()?;
    // SAFETY: `kirEmuLastError(buf, len)` writes at most `len` bytes (NUL-terminated) into `buf`
    // and returns the message's full length; it is exported by kir's emulated driver only.
    let f =
        unsafe { lib.get::<unsafe extern "C" fn(*mut std::ffi::c_char, usize) -> usize>(b"kirEmuLastError\0") }.ok()?;
    let mut buf = vec![0u8; 8192];
    let n = unsafe { f(buf.as_mut_ptr() as *mut std::ffi::c_char, buf.len()) };
    if n == 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

fn cu_init_address(lib: &libloading::Library) -> Option<usize> {
    // SAFETY: only the symbol's address is read; it is never called here.
    unsafe { lib.get::<unsafe extern "C" fn(u32) -> i32>(b"cuInit\0") }.ok().map(|s| *s as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_empty_leaves_the_system_lookup_alone() {
        assert_eq!(choose(None), Ok(Selection::System));
        assert_eq!(choose(Some("  ".into())), Ok(Selection::System));
    }

    #[test]
    fn a_missing_path_is_an_error_naming_the_variable() {
        let e = choose(Some("/nonexistent/libcuda.so".into())).unwrap_err();
        assert!(e.starts_with("KIR_CUDA_DRIVER=/nonexistent/libcuda.so: no such file"), "{e}");
    }

    #[test]
    fn a_library_without_cu_init_is_refused() {
        // The C library loads but is no CUDA driver.
        let libc = ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"]
            .into_iter()
            .find(|p| Path::new(p).is_file());
        if let Some(libc) = libc {
            let e = choose(Some(libc.into())).unwrap_err();
            assert!(e.contains("exports no `cuInit`"), "{e}");
        }
    }

    #[test]
    fn a_file_that_is_no_library_is_refused() {
        let dir = std::env::temp_dir().join(format!("kir-driver-lib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("libcuda.so");
        std::fs::write(&f, b"not an ELF file").unwrap();
        let e = choose(Some(f.display().to_string())).unwrap_err();
        assert!(e.contains("cannot load it"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
