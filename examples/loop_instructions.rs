//! Executed PTX instructions of kir's kernels against NVRTC's PTX of their CUDA C twins, in the
//! PTX emulator, on the same launches; plus static SASS instruction counts (issue 28, the measure).
//!
//! `cargo run --release --example loop_instructions [-- --passes PIPELINE] [--dump DIR]`
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
//! `dlopen` from its absolute path (`kir_backend_ptx::nvrtc`). Deterministic: the inputs come
//! from the directives' seeds, and the counts do not depend on the host.

use kir_backend_ptx::{nvrtc, tools, PtxOptions, SmVersion};
use kir_harness::directives::parse_directives;
use kir_interp::args::parse_arg_spec;
use kir_interp::Arg;
use kir_ir::Type;
use kir_ptx_emu as emu;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    let v = kir_ir::verify::check(m).map_err(|d| d.to_string())?;
    kir_backend_ptx::emit_module(&v, &PtxOptions { sm: SmVersion::Sm80, source: None, comments: false })
        .map_err(|d| format!("{d:?}"))
}

/// SASS instruction counts per kernel (NOPs excluded).
fn sass_counts(ptx: &str) -> BTreeMap<String, usize> {
    let r = tools::assemble(ptx, SmVersion::Sm80, true).unwrap_or_else(|e| fail(e));
    tools::sass_instruction_counts(r.cubin.as_deref().unwrap_or(&[])).unwrap_or_else(|e| fail(e))
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
    // `--dump DIR`: also write both PTX files of every kernel file (DIR/NAME.kir.ptx, DIR/NAME.nvrtc.ptx).
    let dump: Option<PathBuf> = argv
        .iter()
        .position(|a| a == "--dump")
        .map(|i| PathBuf::from(argv.get(i + 1).cloned().unwrap_or_else(|| fail("--dump needs a directory"))));
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
        if let Some(d) = &dump {
            std::fs::write(d.join(name.replace(".cu", ".nvrtc.ptx")), &ptx).unwrap_or_else(|e| fail(e));
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
        if let Some(d) = &dump {
            let stem = path.file_stem().unwrap().to_string_lossy();
            std::fs::write(d.join(format!("{stem}.kir.ptx")), &ptx).unwrap_or_else(|e| fail(e));
        }
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
