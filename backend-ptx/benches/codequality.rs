//! Code-quality and compile-time comparison of kir's PTX with NVRTC's for the seed kernels.
//!
//! `cargo bench -p kir-backend-ptx --bench codequality [-- sm_80|sm_90]`
//!
//! For every kernel that has a CUDA C twin in `bench/*.cu`: kir's PTX (parse → verify → default
//! passes → emit) and NVRTC's PTX (CUDA C → PTX, `--fmad=false`: kir never contracts, and the CUDA
//! C spells every exact op with `__f*_rn` intrinsics anyway) are both assembled by the same
//! `ptxas -v`; the table shows registers and the number of SASS instructions (`nvdisasm -c`, NOPs
//! excluded). It also times kir's whole pipeline over every file of `kernels/` against NVRTC
//! compiling all of `bench/*.cu` (wall clock, best of several runs, one process).
//!
//! Needs `scripts/setup-tools.sh` (ptxas, nvdisasm, libnvrtc under `.tools/py`). NVRTC is loaded by
//! cudarc by library name, so the benchmark re-executes itself once with `LD_LIBRARY_PATH` pointing
//! at the wheel's `lib/` directory.

// The allocator the `kir` binary uses (src/main.rs), so timings match the command line.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use kir_backend_ptx::{emit, tools, PtxOptions, SmVersion};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("codequality: {msg}");
    std::process::exit(1)
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// A `.kir` file's text loaded with its imports.
fn load(path: &Path, src: &str) -> Result<kir_ir::Module, String> {
    kir_ir::text::load::load_source(path, src.to_string()).map(|l| l.module).map_err(|e| e.render(false))
}

/// kir: text → parse → verify → default passes → PTX, for one source file.
/// Text → parse → verify → default passes → PTX. The module is verified once, after parsing; the
/// passes keep it valid, so neither the pass manager nor the emitter verifies it again.
fn kir_compile(path: &Path, src: &str, sm: SmVersion) -> Result<String, String> {
    let mut m = load(path, src)?;
    let errors: Vec<_> = kir_ir::verify::verify_module(&m).into_iter().filter(|d| d.is_error()).collect();
    if !errors.is_empty() {
        return Err(format!("{errors:?}"));
    }
    let p = kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE)?;
    let cfg = kir_passes::RunConfig { verify_input: false, ..kir_passes::RunConfig::default() };
    kir_passes::run_pipeline_in_place(&mut m, &p, &cfg, &mut std::io::sink()).map_err(|e| format!("{e:?}"))?;
    kir_backend_ptx::emit_module(
        &kir_ir::verify::check(m.clone()).map_err(|d| d.to_string())?,
        &PtxOptions { sm, source: None, comments: false },
    )
    .map_err(|d| format!("{d:?}"))
}

fn nvrtc_compile(src: &str, name: &str, sm: SmVersion) -> Result<String, String> {
    let arch: &'static str = if sm == SmVersion::Sm90 { "compute_90" } else { "compute_80" };
    let opts = cudarc::nvrtc::CompileOptions {
        arch: Some(arch),
        fmad: Some(false),
        name: Some(name.to_string()),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(src, opts).map(|p| p.to_src()).map_err(|e| format!("{e:?}"))
}

/// SASS instruction counts per kernel (NOPs excluded) of a cubin.
fn sass_counts(cubin: &[u8]) -> BTreeMap<String, usize> {
    tools::sass_instruction_counts(cubin).unwrap_or_else(|e| fail(e))
}

/// Writes a PTX file under `target/codequality/` for inspection.
fn dump(name: &str, ptx: &str) {
    let dir = root().join("target/codequality");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(name), ptx);
    }
}

struct Stats {
    regs: BTreeMap<String, u32>,
    sass: BTreeMap<String, usize>,
}

fn stats(ptx: &str, sm: SmVersion) -> Stats {
    let r = tools::assemble(ptx, sm, true).unwrap_or_else(|e| fail(e));
    Stats {
        regs: r.kernels.iter().map(|k| (k.name.clone(), k.registers)).collect(),
        sass: sass_counts(r.cubin.as_deref().unwrap_or(&[])),
    }
}

fn best_of(n: usize, mut f: impl FnMut()) -> Duration {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    // NVRTC is dlopen'ed by name: make the PyPI wheel's lib/ visible, then re-execute.
    let nvrtc = tools::find_nvrtc().unwrap_or_else(|| fail("libnvrtc not found (run scripts/setup-tools.sh)"));
    let libdir = nvrtc.parent().unwrap_or(Path::new(".")).to_path_buf();
    if std::env::var_os("KIR_CODEQUALITY_CHILD").is_none() {
        let ld = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        let status = Command::new(std::env::current_exe().unwrap_or_else(|e| fail(e)))
            .args(std::env::args().skip(1))
            .env("LD_LIBRARY_PATH", format!("{}:{ld}", libdir.display()))
            .env("KIR_CODEQUALITY_CHILD", "1")
            .status()
            .unwrap_or_else(|e| fail(e));
        std::process::exit(status.code().unwrap_or(1));
    }
    let sm = std::env::args().nth(1).and_then(|s| SmVersion::from_name(&s)).unwrap_or(SmVersion::Sm80);
    let root = root();

    // kir side: every kernel file.
    let kir_sources: Vec<(PathBuf, String)> = files(&root.join("kernels"), "kir")
        .into_iter()
        .map(|p| (p.clone(), std::fs::read_to_string(&p).unwrap_or_else(|e| fail(e))))
        .collect();
    let mut kir_ptx = String::new();
    let mut kir_kernels = 0;
    for (p, src) in &kir_sources {
        let ptx = kir_compile(p, src, sm).unwrap_or_else(|e| fail(format!("{}: {e}", p.display())));
        kir_kernels += load(p, src).map(|m| m.kernels.len()).unwrap_or(0);
        let s = stats(&ptx, sm);
        dump(&format!("kir_{}.ptx", p.file_stem().unwrap_or_default().to_string_lossy()), &ptx);
        kir_ptx.push_str(&ptx);
        KIR.with(|k| k.borrow_mut().push(s));
    }
    // NVRTC side: every bench/*.cu.
    let cu: Vec<(String, String)> = files(&root.join("bench"), "cu")
        .into_iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap_or_else(|e| fail(e)),
            )
        })
        .collect();
    let mut nv = Vec::new();
    let mut cu_kernels = 0;
    for (name, src) in &cu {
        let ptx = nvrtc_compile(src, name, sm).unwrap_or_else(|e| fail(format!("NVRTC on {name}: {e}")));
        cu_kernels += ptx.matches(".entry").count();
        dump(&format!("nvrtc_{name}.ptx"), &ptx);
        nv.push(stats(&ptx, sm));
    }

    // Table.
    let mut kir_regs = BTreeMap::new();
    let mut kir_sass = BTreeMap::new();
    KIR.with(|k| {
        for s in k.borrow().iter() {
            kir_regs.extend(s.regs.clone());
            kir_sass.extend(s.sass.clone());
        }
    });
    let mut nv_regs = BTreeMap::new();
    let mut nv_sass = BTreeMap::new();
    for s in &nv {
        nv_regs.extend(s.regs.clone());
        nv_sass.extend(s.sass.clone());
    }
    println!("target {}; ptxas 12.9 -O3 (default); NVRTC 12.9 --fmad=false\n", sm.name());
    println!("| kernel | kir regs | NVRTC regs | kir SASS | NVRTC SASS |");
    println!("|---|---:|---:|---:|---:|");
    for (k, r) in &nv_regs {
        let kr = kir_regs.get(k).map(|r| r.to_string()).unwrap_or_else(|| "—".into());
        let ks = kir_sass.get(k).map(|r| r.to_string()).unwrap_or_else(|| "—".into());
        println!("| {k} | {kr} | {r} | {ks} | {} |", nv_sass.get(k).copied().unwrap_or(0));
    }
    let _ = emit::ptx_ident;

    // Compile time: kir's whole pipeline over kernels/ vs NVRTC over bench/*.cu.
    let kir_t = best_of(20, || {
        for (p, src) in &kir_sources {
            std::hint::black_box(kir_compile(p, src, sm).ok());
        }
    });
    let nv_t = best_of(5, || {
        for (name, src) in &cu {
            std::hint::black_box(nvrtc_compile(src, name, sm).ok());
        }
    });
    let parse_t = best_of(20, || {
        for (p, src) in &kir_sources {
            std::hint::black_box(load(p, src).ok());
        }
    });
    let parsed: Vec<kir_ir::Module> = kir_sources.iter().filter_map(|(p, s)| load(p, s).ok()).collect();
    let verify_t = best_of(20, || {
        for m in &parsed {
            std::hint::black_box(kir_ir::verify::verify_module(m));
        }
    });
    let pipeline = kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE).unwrap_or_else(|e| fail(e));
    let passes_t = best_of(20, || {
        for m in &parsed {
            let mut m = m.clone();
            std::hint::black_box(
                kir_passes::run_pipeline_in_place(
                    &mut m,
                    &pipeline,
                    &kir_passes::RunConfig { verify_input: false, ..kir_passes::RunConfig::default() },
                    &mut std::io::sink(),
                )
                .ok(),
            );
        }
    });
    let verified: Vec<kir_ir::verify::Checked> =
        parsed.iter().filter_map(|m| kir_ir::verify::check(m.clone()).ok()).collect();
    let emit_t = best_of(20, || {
        for m in &verified {
            std::hint::black_box(
                kir_backend_ptx::emit_module(m, &PtxOptions { sm, source: None, comments: false }).ok(),
            );
        }
    });
    println!(
        "kir stages over kernels/ (best of 20): parse {:.3} ms, verify {:.3} ms, passes {:.3} ms, emit {:.3} ms",
        parse_t.as_secs_f64() * 1e3,
        verify_t.as_secs_f64() * 1e3,
        passes_t.as_secs_f64() * 1e3,
        emit_t.as_secs_f64() * 1e3
    );
    println!(
        "\ncompile time (best of runs): kir {} files / {kir_kernels} kernels (parse+verify+passes+PTX) {:.3} ms; NVRTC {} files / {cu_kernels} kernels {:.3} ms; NVRTC/kir = {:.0}x",
        kir_sources.len(),
        kir_t.as_secs_f64() * 1e3,
        cu.len(),
        nv_t.as_secs_f64() * 1e3,
        nv_t.as_secs_f64() / kir_t.as_secs_f64().max(1e-12)
    );
}

thread_local! {
    static KIR: std::cell::RefCell<Vec<Stats>> = const { std::cell::RefCell::new(Vec::new()) };
}
