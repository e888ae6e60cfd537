//! What a `build.rs` calls to compile `.kir` kernels to PTX for a crate that loads them with
//! cudarc: [`kir::api::compile_to_ptx`]. This example compiles `kernels/relu_backward.kir` (or the
//! file given as the first argument) for sm_80 into a temporary directory, as a build script
//! would into `OUT_DIR`.
//!
//! ```text
//! cargo run -p kir --example build_rs_ptx [FILE.kir] [sm_80|sm_86|sm_89|sm_90]
//! ```
//!
//! In your crate, with `kir` in `[build-dependencies]`:
//!
//! ```text
//! // build.rs
//! fn main() {
//!     let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
//!     for name in ["relu_backward"] {
//!         let src = format!("kernels/{name}.kir");
//!         println!("cargo:rerun-if-changed={src}");
//!         // A kernel that does not parse, verify or pass barrier verification fails the build
//!         // with the rendered diagnostic (file:line:col and the source line).
//!         let ptx = kir::api::compile_to_ptx(&src, kir::api::SmVersion::Sm80)
//!             .unwrap_or_else(|e| panic!("\n{e}"));
//!         std::fs::write(out_dir.join(format!("{name}.ptx")), ptx).unwrap();
//!     }
//! }
//!
//! // src/lib.rs: the PTX is embedded in the binary and loaded with cudarc.
//! const RELU_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/relu_backward.ptx"));
//! // let ctx = cudarc::driver::CudaContext::new(0)?;
//! // let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(RELU_PTX))?;
//! // let f = module.load_function("relu_backward")?;   // the kernel's name (`.` becomes `$`)
//! ```

use kir::api::SmVersion;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let src =
        args.next().unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/relu_backward.kir").into());
    let sm_name = args.next().unwrap_or_else(|| "sm_80".into());
    let Some(sm) = SmVersion::from_name(&sm_name) else {
        eprintln!("error: unknown target `{sm_name}` (expected sm_80, sm_86, sm_89 or sm_90)");
        return ExitCode::from(2);
    };
    // What build.rs does: compile, then write the PTX into OUT_DIR (here a temporary directory).
    let ptx = match kir::api::compile_to_ptx(&src, sm) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let out_dir = std::env::temp_dir().join("kir-build-rs-example");
    let stem = std::path::Path::new(&src).file_stem().and_then(|s| s.to_str()).unwrap_or("kernel").to_string();
    let out = out_dir.join(format!("{stem}.ptx"));
    if let Err(e) = std::fs::create_dir_all(&out_dir).and_then(|()| std::fs::write(&out, &ptx)) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let entries: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .map(|l| l.split('(').next().unwrap_or(l))
        .collect();
    println!(
        "{src} -> {} ({} bytes of PTX for {}; entries: {})",
        out.display(),
        ptx.len(),
        sm.name(),
        entries.join(", ")
    );
    ExitCode::SUCCESS
}
