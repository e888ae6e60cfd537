//! Executed PTX instructions of kir's kernels against NVRTC's PTX of their CUDA C twins, in the
//! PTX emulator, on the same launches; plus static SASS instruction counts (issue 28, the measure).
//!
//! `cargo run --release --example loop_instructions [-- --passes PIPELINE]`
//!
//! For every `; run:` directive of `kernels/*.kir` that launches one kernel (graph directives are
//! skipped) whose name is an entry of NVRTC's PTX of some `bench/*.cu`: kir's PTX (load → verify →
//! the pipeline, `DEFAULT_PIPELINE` unless `--passes` → emit, sm_80) and NVRTC's PTX
//! (`--fmad=false`, `compute_80`) run in `kir-ptx-emu` on identical inputs (the directive's
//! arguments bound by `kir_interp::args`). One row per directive: thread-instructions executed
//! (every active lane of every executed PTX instruction, as `kir run FILE.ptx --stats` counts
//! them), kir / NVRTC. Then one row per kernel: SASS instructions of each (`ptxas` sm_80 +
//! `nvdisasm -c`, NOPs excluded), static counts. The last lines give the geometric mean of the
//! executed ratios and the worst one.
//!
//! Needs `scripts/setup-tools.sh` (ptxas, nvdisasm, libnvrtc under `.tools/`); NVRTC is loaded with
//! `dlopen` from its absolute path, as in tests/ptx_emu_nvrtc.rs. Deterministic: the inputs come
//! from the directives' seeds, and the counts do not depend on the host.

use kir::directives::parse_directives;
use kir_backend_ptx::{tools, PtxOptions, SmVersion};
use kir_interp::args::parse_arg_spec;
use kir_interp::Arg;
use kir_ir::Type;
use kir_ptx_emu as emu;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod nvrtc {
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
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("loop_instructions: {msg}");
    std::process::exit(1)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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

/// kir's PTX of one module after `pipeline`.
fn kir_ptx(m: &kir_ir::Module, pipeline: &str) -> Result<String, String> {
    let mut m = m.clone();
    let p = kir_passes::parse_pipeline(pipeline)?;
    let cfg = kir_passes::RunConfig::default();
    kir_passes::run_pipeline_in_place(&mut m, &p, &cfg, &mut std::io::sink()).map_err(|e| format!("{e:?}"))?;
    let v = kir_ir::verify::verify(m).map_err(|d| d.to_string())?;
    kir_backend_ptx::emit_module(&v, &PtxOptions { sm: SmVersion::Sm80, source: None, comments: false })
        .map_err(|d| format!("{d:?}"))
}

/// SASS instruction counts per kernel (NOPs excluded).
fn sass_counts(ptx: &str) -> BTreeMap<String, usize> {
    let r = tools::assemble(ptx, SmVersion::Sm80, true).unwrap_or_else(|e| fail(e));
    let nvdisasm = tools::find_nvdisasm().unwrap_or_else(|| fail("nvdisasm not found (run scripts/setup-tools.sh)"));
    let dir = std::env::temp_dir().join(format!("kir-loop-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(e));
    let f = dir.join("k.cubin");
    std::fs::write(&f, r.cubin.as_deref().unwrap_or(&[])).unwrap_or_else(|e| fail(e));
    let out = Command::new(&nvdisasm).arg("-c").arg(&f).output().unwrap_or_else(|e| fail(e));
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut counts = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(".section\t").or_else(|| t.strip_prefix(".section ")) {
            cur = rest.trim().strip_prefix(".text.").map(|s| s.split(',').next().unwrap_or(s).to_string());
        } else if let (Some(k), true) = (&cur, t.starts_with("/*")) {
            let ins = t.split("*/").nth(1).unwrap_or("").trim();
            if !ins.is_empty() && !ins.starts_with("NOP") {
                *counts.entry(k.clone()).or_insert(0) += 1;
            }
        }
    }
    counts
}

/// Runs `entry` of `module` in the emulator on copies of `buffers`; returns the thread-instructions.
fn run(
    module: &emu::Module,
    entry: &str,
    k: &kir_ir::Kernel,
    cfg: &emu::LaunchConfig,
    args: &[Arg],
    buffers: &[kir_interp::Buffer],
) -> Result<u64, String> {
    let e = module.entry(entry).ok_or_else(|| format!("no entry `{entry}`"))?;
    if e.params.len() != args.len() {
        return Err(format!("{} parameters, the .kir kernel {}", e.params.len(), args.len()));
    }
    let mut mem = emu::Memory::new();
    let mut ids = Vec::new();
    for (i, b) in buffers.iter().enumerate() {
        ids.push(mem.alloc(format!("buffer{i}"), &b.bytes).map_err(|e| format!("emulator alloc: {e}"))?);
    }
    let mut eargs = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match (a, k.value(k.params[i]).ty) {
            (Arg::Buffer(b), Type::Ptr(..)) => eargs.push(emu::Arg::Buffer(ids[*b])),
            (Arg::Scalar(c), _) => eargs.push(emu::Arg::Scalar(c.bits & c.ty.mask())),
            (Arg::Buffer(_), t) => return Err(format!("parameter {i}: a buffer for a {t}")),
        }
    }
    let s = emu::launch(module, entry, cfg, &eargs, &mut mem, &emu::Options::default())
        .map_err(|e| format!("emulator: {e}"))?;
    Ok(s.thread_instructions)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let pipeline = match argv.iter().position(|a| a == "--passes") {
        Some(i) => argv.get(i + 1).cloned().unwrap_or_else(|| fail("--passes needs a pipeline")),
        None => kir_passes::DEFAULT_PIPELINE.to_string(),
    };
    let lib = tools::find_nvrtc().unwrap_or_else(|| fail("NVRTC not found (run scripts/setup-tools.sh)"));
    let nv = nvrtc::Nvrtc::load(&lib).unwrap_or_else(|e| fail(format!("cannot load NVRTC: {e}")));
    // NVRTC's PTX of every twin: entry → module index.
    let mut by_entry: BTreeMap<String, usize> = BTreeMap::new();
    let mut nv_mods: Vec<(String, emu::Module)> = Vec::new();
    for p in files(&root().join("bench"), "cu") {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(&p).unwrap_or_else(|e| fail(e));
        let ptx = nv
            .compile(&src, &name, &["--fmad=false", "--gpu-architecture=compute_80"])
            .unwrap_or_else(|e| fail(format!("NVRTC on bench/{name}: {e}")));
        let m = emu::Module::parse(&ptx).unwrap_or_else(|e| fail(format!("emulator cannot load bench/{name}: {e}")));
        for l in ptx.lines() {
            if let Some(rest) = l.split(".entry ").nth(1) {
                by_entry.insert(rest.split(['(', ' ']).next().unwrap_or("").to_string(), nv_mods.len());
            }
        }
        nv_mods.push((ptx, m));
    }
    println!("pipeline: {pipeline}; NVRTC {} (compute_80, --fmad=false); kir sm_80", nv.version());
    println!();
    println!("| directive | kernel | kir executed | NVRTC executed | kir / NVRTC |");
    println!("|---|---|---:|---:|---:|");
    let mut ratios: Vec<(String, f64)> = Vec::new();
    let mut kir_sass: BTreeMap<String, usize> = BTreeMap::new();
    let mut nv_sass: BTreeMap<String, usize> = BTreeMap::new();
    for path in files(&root().join("kernels"), "kir") {
        let rel = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(e));
        let module = kir_ir::text::load::load_source(&path, src.clone())
            .unwrap_or_else(|e| fail(format!("{rel}: {}", e.render(false))))
            .module;
        if !module.kernels.iter().any(|k| by_entry.contains_key(&k.name)) {
            continue;
        }
        let ptx = kir_ptx(&module, &pipeline).unwrap_or_else(|e| fail(format!("{rel}: {e}")));
        let kir_mod = emu::Module::parse(&ptx).unwrap_or_else(|e| fail(format!("{rel}: kir's PTX: {e}")));
        for (k, n) in sass_counts(&ptx) {
            kir_sass.insert(k, n);
        }
        let dirs = parse_directives(&src).unwrap_or_else(|e| fail(format!("{rel}: {e:?}")));
        for d in &dirs.runs {
            let Some(k) = module.kernel(&d.target) else { continue };
            let Some(&ti) = by_entry.get(&k.name) else { continue };
            let specs: Vec<_> = d
                .args
                .iter()
                .map(|(n, v)| parse_arg_spec(v).map(|s| (n.clone(), s)))
                .collect::<Result<_, _>>()
                .unwrap_or_else(|e| fail(format!("{rel}:{}: {e}", d.line)));
            let bound = kir_interp::args::bind(k, &specs, path.parent()).unwrap_or_else(|e| fail(e));
            let cfg = emu::LaunchConfig {
                grid: d.grid.unwrap_or([1; 3]),
                block: d.block.unwrap_or([1; 3]),
                dynamic_shared_bytes: d.shared_bytes,
            };
            let label = format!("{rel}:{}", d.line);
            let ki = run(&kir_mod, &k.name, k, &cfg, &bound.args, &bound.buffers)
                .unwrap_or_else(|e| fail(format!("{label} kir: {e}")));
            let ni = run(&nv_mods[ti].1, &k.name, k, &cfg, &bound.args, &bound.buffers)
                .unwrap_or_else(|e| fail(format!("{label} NVRTC: {e}")));
            let r = ki as f64 / ni.max(1) as f64;
            println!("| {label} | {} | {ki} | {ni} | {r:.3} |", k.name);
            ratios.push((format!("{label} @{}", k.name), r));
        }
    }
    for (ptx, _) in &nv_mods {
        for (k, n) in sass_counts(ptx) {
            nv_sass.insert(k, n);
        }
    }
    println!();
    println!("| kernel | kir SASS | NVRTC SASS |");
    println!("|---|---:|---:|");
    for (k, n) in &kir_sass {
        if let Some(m) = nv_sass.get(k) {
            println!("| {k} | {n} | {m} |");
        }
    }
    println!();
    if !ratios.is_empty() {
        let g = (ratios.iter().map(|(_, r)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let worst = ratios.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        println!(
            "executed kir / NVRTC: geometric mean {g:.3} over {} launches; worst {:.3} ({})",
            ratios.len(),
            worst.1,
            worst.0
        );
    }
}
