//! Executed PTX instructions of kir's kernels against NVRTC's PTX of their CUDA C twins, in the
//! PTX emulator, on the same launches; the bytes each executed global memory instruction moved;
//! plus static register and SASS counts (issue 28, the measure; issue 40, the CPU proxies).
//!
//! `cargo run --release --example loop_instructions [-- --passes PIPELINE] [--dump DIR]`
//!
//! For every `; run:` directive of `kernels/*.kir` that launches one kernel (graph directives are
//! skipped): kir's PTX (load → verify → the pipeline, `DEFAULT_PIPELINE` unless `--passes` →
//! emit, sm_80) and, when the kernel's name is an entry of NVRTC's PTX of some `bench/*.cu`,
//! NVRTC's PTX of that twin (`--fmad=false`, `compute_80`) run in `kir-ptx-emu` on identical
//! inputs (the directive's arguments bound by `kir_interp::args`, its `fuel=` if any). One row
//! per directive:
//! - thread-instructions executed (every active lane of every executed PTX instruction, as
//!   `kir run FILE.ptx --stats` counts them) of each, and kir / NVRTC;
//! - global memory instructions executed, loads / stores, once per executing lane
//!   (`Stats::global_load_instructions`: `ld` of any width and `cp.async`; `..._store_...`: `st`),
//!   and the bytes one of them moved on average (`global_bytes_read` / loads, `global_bytes_written`
//!   / stores): the vector width achieved, 4.0 for scalar `f32`, 16.0 for `.v4.f32` or a 16-byte
//!   `cp.async`; between the two when a kernel mixes widths (a scalar tail), `-` without any.
//!
//! A kernel without a twin gets its kir columns and `-` for NVRTC's (not in the mean). Then one row
//! per kernel: registers (`ptxas -v` sm_80) and SASS instructions of each (`ptxas` sm_80 +
//! `nvdisasm -c`, NOPs excluded), and the SASS global memory instructions by access width
//! (`LDG`, `STG`, `LDGSTS` (cp.async), `ATOMG`/`RED`; static counts: `LDG 32x2 128x2` is two
//! 32-bit and two 128-bit loads in the code, whether or not they run). The last lines give the
//! geometric mean of the executed ratios and the worst one.
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

/// What ptxas and nvdisasm say about one kernel.
#[derive(Default)]
struct Sass {
    /// SASS instructions, NOPs excluded.
    instructions: usize,
    registers: Option<u32>,
    /// Global memory instructions in the code: (kind, width in bits) → count.
    memory: BTreeMap<(&'static str, u32), usize>,
}

impl Sass {
    /// `LDG 32x78 128x2; STG 32x39 128x1` (or `-`).
    fn memory(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        for kind in ["LDG", "STG", "LDGSTS", "ATOMG", "RED"] {
            let w: Vec<String> =
                self.memory.iter().filter(|((k, _), _)| *k == kind).map(|((_, b), n)| format!("{b}x{n}")).collect();
            if !w.is_empty() {
                out.push(format!("{kind} {}", w.join(" ")));
            }
        }
        if out.is_empty() {
            "-".into()
        } else {
            out.join("; ")
        }
    }
}

/// The global memory instruction of a SASS line (`LDG.E.128`, `@P0 STG.E`, `LDGSTS.E.BYPASS.128`):
/// its kind and access width in bits (32 without a width suffix).
fn sass_memory_op(ins: &str) -> Option<(&'static str, u32)> {
    let mut words = ins.split_whitespace();
    let mut op = words.next()?;
    if op.starts_with('@') {
        op = words.next()?;
    }
    let mut parts = op.trim_end_matches(';').split('.');
    let kind = match parts.next()? {
        "LDG" => "LDG",
        "STG" => "STG",
        "LDGSTS" => "LDGSTS",
        "ATOMG" => "ATOMG",
        "RED" => "RED",
        _ => return None,
    };
    let mut bits = 32;
    for p in parts {
        bits = match p {
            "U8" | "S8" | "8" => 8,
            "U16" | "S16" | "16" => 16,
            "64" | "U64" | "S64" | "F64" => 64,
            "128" => 128,
            _ => continue,
        };
    }
    Some((kind, bits))
}

/// Registers, SASS instruction counts and SASS global memory instructions per kernel.
fn sass(ptx: &str) -> Result<BTreeMap<String, Sass>, String> {
    let r = tools::assemble(ptx, SmVersion::Sm80, true)?;
    let cubin = r.cubin.as_deref().unwrap_or(&[]);
    let mut out: BTreeMap<String, Sass> = BTreeMap::new();
    // One disassembly: the instruction count and the memory instructions by width.
    for (k, ins) in tools::sass_instructions(cubin)? {
        let s = out.entry(k).or_default();
        s.instructions = ins.len();
        for m in ins.iter().filter_map(|i| sass_memory_op(i)) {
            *s.memory.entry(m).or_insert(0) += 1;
        }
    }
    for k in &r.kernels {
        out.entry(k.name.clone()).or_default().registers = Some(k.registers);
    }
    Ok(out)
}

/// Runs `entry` of `module` in the emulator on copies of `buffers`; returns its statistics.
fn run(
    module: &emu::Module,
    entry: &str,
    k: &kir_ir::Kernel,
    cfg: &emu::LaunchConfig,
    args: &[Arg],
    buffers: &[kir_interp::Buffer],
    opts: &emu::Options,
) -> Result<emu::Stats, String> {
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
    emu::launch(module, entry, cfg, &eargs, &mut mem, opts).map_err(|e| format!("emulator: {e}"))
}

/// `1024 / 512`: global loads / stores executed (per lane).
fn mem_counts(s: &emu::Stats) -> String {
    format!("{} / {}", s.global_load_instructions, s.global_store_instructions)
}

/// `16.0 / 16.0`: bytes per executed global load / store (`-` where there is none).
fn mem_widths(s: &emu::Stats) -> String {
    let per = |bytes: u64, n: u64| if n == 0 { "-".to_string() } else { format!("{:.1}", bytes as f64 / n as f64) };
    format!(
        "{} / {}",
        per(s.global_bytes_read, s.global_load_instructions),
        per(s.global_bytes_written, s.global_store_instructions)
    )
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
    println!(
        "| directive | kernel | kir executed | NVRTC executed | kir / NVRTC | kir global ld / st | kir bytes per ld / st | NVRTC global ld / st | NVRTC bytes per ld / st |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut ratios: Vec<(String, f64)> = Vec::new();
    let mut kir_sass: BTreeMap<String, Sass> = BTreeMap::new();
    let mut nv_sass: BTreeMap<String, Sass> = BTreeMap::new();
    // What could not run (a kernel file being written, a missing input): reported after the
    // tables, and the exit status is 1; the other rows are still printed.
    let mut errors: Vec<String> = Vec::new();
    for path in files(&root().join("kernels"), "kir") {
        let rel = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(e));
        let module = match kir_ir::text::load::load_source(&path, src.clone()) {
            Ok(l) => l.module,
            Err(e) => {
                errors.push(format!("{rel}: {}", e.render(false)));
                continue;
            }
        };
        let dirs = match parse_directives(&src) {
            Ok(d) => d,
            Err(e) => {
                errors.push(format!("{rel}: {e:?}"));
                continue;
            }
        };
        if !dirs.runs.iter().any(|d| module.kernel(&d.target).is_some()) {
            continue; // graph directives only
        }
        let ptx = match kir_ptx(&module, &pipeline) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("{rel}: {e}"));
                continue;
            }
        };
        if let Some(d) = &dump {
            let stem = path.file_stem().unwrap().to_string_lossy();
            std::fs::write(d.join(format!("{stem}.kir.ptx")), &ptx).unwrap_or_else(|e| fail(e));
        }
        let kir_mod = emu::Module::parse(&ptx).unwrap_or_else(|e| fail(format!("{rel}: kir's PTX: {e}")));
        match sass(&ptx) {
            Ok(x) => kir_sass.extend(x),
            Err(e) => errors.push(format!("{rel}: ptxas/nvdisasm on kir's PTX: {e}")),
        }
        for d in &dirs.runs {
            let Some(k) = module.kernel(&d.target) else { continue };
            let label = format!("{rel}:{}", d.line);
            let specs =
                d.args.iter().map(|(n, v)| parse_arg_spec(v).map(|s| (n.clone(), s))).collect::<Result<Vec<_>, _>>();
            let bound = match specs.and_then(|specs| kir_interp::args::bind(k, &specs, path.parent())) {
                Ok(b) => b,
                Err(e) => {
                    errors.push(format!("{label} @{}: {e}", k.name));
                    continue;
                }
            };
            let cfg = emu::LaunchConfig {
                grid: d.grid.unwrap_or([1; 3]),
                block: d.block.unwrap_or([1; 3]),
                dynamic_shared_bytes: d.shared_bytes,
            };
            let opts = match d.fuel {
                Some(n) => emu::Options::default().with_fuel(n),
                None => emu::Options::default(),
            };
            let ks = match run(&kir_mod, &k.name, k, &cfg, &bound.args, &bound.buffers, &opts) {
                Ok(s) => s,
                Err(e) => {
                    errors.push(format!("{label} @{} kir: {e}", k.name));
                    continue;
                }
            };
            let ki = ks.thread_instructions;
            let Some(&ti) = by_entry.get(&k.name) else {
                println!("| {label} | {} | {ki} | - | - | {} | {} | - | - |", k.name, mem_counts(&ks), mem_widths(&ks));
                continue;
            };
            let ns = match run(&nv_mods[ti].1, &k.name, k, &cfg, &bound.args, &bound.buffers, &opts) {
                Ok(s) => s,
                Err(e) => {
                    errors.push(format!("{label} @{} NVRTC: {e}", k.name));
                    continue;
                }
            };
            let ni = ns.thread_instructions;
            let r = ki as f64 / ni.max(1) as f64;
            println!(
                "| {label} | {} | {ki} | {ni} | {r:.3} | {} | {} | {} | {} |",
                k.name,
                mem_counts(&ks),
                mem_widths(&ks),
                mem_counts(&ns),
                mem_widths(&ns)
            );
            ratios.push((format!("{label} @{}", k.name), r));
        }
    }
    for (ptx, _) in &nv_mods {
        nv_sass.extend(sass(ptx).unwrap_or_else(|e| fail(format!("ptxas/nvdisasm on NVRTC's PTX: {e}"))));
    }
    println!();
    println!("| kernel | kir registers | NVRTC registers | kir SASS | NVRTC SASS | kir SASS global memory | NVRTC SASS global memory |");
    println!("|---|---:|---:|---:|---:|---|---|");
    let regs = |s: &Sass| s.registers.map_or("-".to_string(), |r| r.to_string());
    for (k, a) in &kir_sass {
        match nv_sass.get(k) {
            Some(b) => println!(
                "| {k} | {} | {} | {} | {} | {} | {} |",
                regs(a),
                regs(b),
                a.instructions,
                b.instructions,
                a.memory(),
                b.memory()
            ),
            None => println!("| {k} | {} | - | {} | - | {} | - |", regs(a), a.instructions, a.memory()),
        }
    }
    println!();
    if !ratios.is_empty() {
        let g = (ratios.iter().map(|(_, r)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let worst = ratios.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        println!(
            "executed kir / NVRTC: geometric mean {g:.3} over {} launches with a twin; worst {:.3} ({})",
            ratios.len(),
            worst.1,
            worst.0
        );
    }
    if !errors.is_empty() {
        eprintln!();
        eprintln!("loop_instructions: {} could not be measured (no row above):", errors.len());
        for e in &errors {
            eprintln!("  {e}");
        }
        std::process::exit(1);
    }
}
