//! Triangulation with NVIDIA's compiler: the check that keeps the PTX emulator honest.
//!
//! What it guarantees: every kernel of `kernels/*.kir` that has a CUDA C twin in `bench/*.cu`
//! (same kernel name and parameters, see bench/README.md) is compiled from its twin by NVRTC
//! (`--fmad=false`, for `compute_90` and `compute_80`); NVRTC's PTX runs in the emulator
//! (`kir-ptx-emu`) and the `.kir` kernel, as written, runs in kir's interpreter, on identical
//! inputs: those of every `; run:` directive of the file, bound by `kir_interp::args` (the same
//! bytes reach both: buffer contents, and each scalar's little-endian bits at its parameter's
//! width). Graph directives are run launch by launch in the interpreter, and every launch of a
//! kernel with a twin is checked against the twin on the interpreter's buffers at that point.
//! Every buffer must agree within the kernel's tolerance: the directive's `tol=`, else the one
//! `harness/src/tolerance.rs` derives from the approximate ops the kernel uses, compared by
//! `kir_harness::compare`. Two engines written independently of each other (the emulator from the PTX ISA,
//! the interpreter from kir's semantics), fed one program by two independent compilers (NVRTC and
//! kir's own front end), must agree.
//!
//! Each directive prints one line (`ok`, or `FAIL` with the differing elements). Kernels without a
//! twin are listed. Without NVRTC (`scripts/setup-tools.sh` installs it under `.tools/py`) the test
//! prints `skip:` and passes, except with `CI=true`, where it fails
//! (`kir_backend_ptx::tools::require_tool_or_skip`).
//!
//! NVRTC is loaded with `dlopen` from its absolute path (`kir_backend_ptx::nvrtc`).

use kir_backend_ptx::{nvrtc, tools};
use kir_harness::compare::{compare_buffers, Strictness};
use kir_harness::directives::{parse_directives, RunDirective, Tolerance};
use kir_interp::args::{parse_arg_spec, ArgSpec};
use kir_interp::{Arg, Buffer, LaunchConfig};
use kir_ir::{Kernel, Module, Type};
use kir_ptx_emu as emu;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

thread_local! {
    /// Set while this thread runs the emulator: its panics become row failures, not hook output.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic (an emulator bug) into an error.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                prev(info)
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "?".into());
        Err(format!("the emulator panicked: {msg}"))
    })
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// One NVRTC target.
#[derive(Clone, Copy)]
struct Arch {
    name: &'static str,
}

const ARCHS: [Arch; 2] = [Arch { name: "compute_90" }, Arch { name: "compute_80" }];

/// NVRTC's PTX of every `bench/*.cu` for `arch`, parsed by the emulator: entry name → (file, PTX,
/// module).
struct Twins {
    by_entry: BTreeMap<String, (String, usize)>,
    modules: Vec<(String, String, Result<emu::Module, String>)>,
}

fn compile_twins(nv: &nvrtc::Nvrtc, arch: Arch) -> Twins {
    let mut t = Twins { by_entry: BTreeMap::new(), modules: vec![] };
    for p in files(&root().join("bench"), "cu") {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let opt = format!("--gpu-architecture={}", arch.name);
        let ptx = nv
            .compile(&src, &name, &["--fmad=false", &opt])
            .unwrap_or_else(|e| panic!("NVRTC {} on bench/{name}: {e}", arch.name));
        if let Ok(dir) = std::env::var("KIR_PTX_EMU_REPORT_DIR") {
            let _ = std::fs::write(format!("{dir}/nvrtc_{}_{name}.ptx", arch.name), &ptx);
        }
        let module = guarded(|| {
            emu::Module::parse(&ptx).map_err(|e| {
                let line = ptx.lines().nth(e.line.saturating_sub(1) as usize).unwrap_or("").trim();
                format!(
                    "the emulator cannot load NVRTC's PTX of bench/{name}: {e}\n      PTX line {}: `{line}`",
                    e.line
                )
            })
        });
        for l in ptx.lines() {
            if let Some(rest) = l.split(".entry ").nth(1) {
                let entry = rest.split(['(', ' ']).next().unwrap_or("").to_string();
                t.by_entry.insert(entry, (name.clone(), t.modules.len()));
            }
        }
        t.modules.push((name, ptx, module));
    }
    t
}

// ---------------------------------------------------------------------------------------------
// Running one launch in both engines
// ---------------------------------------------------------------------------------------------

/// Runs NVRTC's `entry` in the emulator on copies of `buffers` with the kir arguments `args`;
/// returns the buffers after the run.
fn run_twin(
    module: &emu::Module,
    ptx: &str,
    entry: &str,
    k: &Kernel,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &[Buffer],
) -> Result<Vec<Buffer>, String> {
    let e = module.entry(entry).ok_or_else(|| format!("NVRTC's PTX has no entry `{entry}`"))?;
    if e.params.len() != args.len() {
        return Err(format!("the twin takes {} parameters, the .kir kernel {}", e.params.len(), args.len()));
    }
    let mut mem = emu::Memory::new();
    let mut ids = Vec::new();
    for (i, b) in buffers.iter().enumerate() {
        ids.push(mem.alloc(format!("buffer{i}"), &b.bytes).map_err(|e| format!("emulator alloc: {e}"))?);
    }
    let mut eargs = Vec::new();
    for (i, (a, p)) in args.iter().zip(&e.params).enumerate() {
        let kty = k.value(k.params[i]).ty;
        match (a, kty) {
            (Arg::Buffer(b), Type::Ptr(..)) => {
                if p.size != 8 {
                    return Err(format!(
                        "parameter {i} (`{}`) is a pointer in kir but {} bytes in the twin",
                        p.name, p.size
                    ));
                }
                eargs.push(emu::Arg::Buffer(ids[*b]));
                // Rename the buffer after the kir parameter for fault messages.
            }
            (Arg::Scalar(c), _) => {
                let size = if c.ty.is_pred() { 1 } else { c.ty.bytes() };
                if p.size != size {
                    return Err(format!(
                        "parameter {i} (`{}`) is a {} ({size} bytes) in kir but {} bytes in the twin",
                        p.name, c.ty, p.size
                    ));
                }
                eargs.push(emu::Arg::Scalar(c.bits & c.ty.mask()));
            }
            (Arg::Buffer(_), t) => return Err(format!("parameter {i}: a buffer for a {t}")),
        }
    }
    let ecfg = emu::LaunchConfig { grid: cfg.grid, block: cfg.block, dynamic_shared_bytes: cfg.dynamic_shared_bytes };
    // The interpreter predicts the sm_90 tensor cores (its default); so does the emulator here,
    // whatever `.target` NVRTC's PTX names.
    let rule = kir_harness::tensor_cores::emulator_rule(kir_interp::Options::default().tensor_cores);
    let opts = emu::Options { tensor_cores: Some(rule), ..emu::Options::default() };
    emu::launch(module, entry, &ecfg, &eargs, &mut mem, &opts).map_err(|e| {
        let text = e
            .line
            .and_then(|l| ptx.lines().nth(l.saturating_sub(1) as usize))
            .map(|l| format!("\n      PTX line {}: `{}`", e.line.unwrap_or(0), l.trim()))
            .unwrap_or_default();
        format!("emulator: {e}{text}")
    })?;
    let mut out = buffers.to_vec();
    for (b, id) in out.iter_mut().zip(&ids) {
        b.bytes = mem.bytes(*id).map_err(|e| format!("emulator read-back: {e}"))?.to_vec();
    }
    Ok(out)
}

/// Compares every buffer; `names[i]` names buffer i. Returns the differences.
fn compare_all(want: &[Buffer], got: &[Buffer], names: &[String], tol: Tolerance) -> Result<u64, String> {
    let mut msgs = Vec::new();
    let mut max_ulps = 0;
    for (i, (a, b)) in want.iter().zip(got).enumerate() {
        let c = compare_buffers(a, b, Strictness::Within(tol), 5);
        max_ulps = max_ulps.max(c.max_ulps);
        if !c.is_match() {
            msgs.push(format!("buffer `{}`: {c}", names.get(i).map(String::as_str).unwrap_or("?")));
        }
    }
    if msgs.is_empty() {
        Ok(max_ulps)
    } else {
        Err(msgs.join("\n    "))
    }
}

/// The outcome of one directive (or one launch of a graph directive) on one target.
struct Row {
    label: String,
    result: Result<String, String>,
}

#[allow(clippy::too_many_arguments)]
fn check_launch(
    twins: &Twins,
    arch: Arch,
    k: &Kernel,
    cfg: &LaunchConfig,
    args: &[Arg],
    before: &[Buffer],
    after: &[Buffer],
    names: &[String],
    tol: Tolerance,
) -> Result<String, String> {
    let (file, mi) = twins.by_entry.get(&k.name).ok_or_else(|| format!("no twin for @{}", k.name))?;
    let (_, ptx, module) = &twins.modules[*mi];
    let module = module.as_ref().map_err(|e| e.clone())?;
    let got = guarded(|| run_twin(module, ptx, &k.name, k, cfg, args, before))?;
    let max = compare_all(after, &got, names, tol)
        .map_err(|e| format!("bench/{file} vs interpreter (tol {tol}):\n    {e}"))?;
    Ok(format!("bench/{file} {} agrees (tol {tol}, max {max} ulp)", arch.name))
}

fn named_specs(d: &RunDirective) -> Result<Vec<(String, ArgSpec)>, String> {
    d.args
        .iter()
        .map(|(k, v)| parse_arg_spec(v).map(|s| (k.clone(), s)).map_err(|e| format!("argument `{k}`: {e}")))
        .collect()
}

fn kernel_names(k: &Kernel, bound_param_buffer: &[Option<usize>], nbuf: usize) -> Vec<String> {
    let mut names = vec![String::new(); nbuf];
    for (p, b) in bound_param_buffer.iter().enumerate() {
        if let Some(b) = b {
            names[*b] = k.value(k.params[p]).name.to_string();
        }
    }
    names
}

/// Every row of one `.kir` file on one target.
fn check_file(path: &Path, twins: &Twins, arch: Arch, rows: &mut Vec<Row>, untwinned: &mut Vec<String>) {
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rel = path.strip_prefix(root()).unwrap_or(path).display().to_string();
    let module: Module = kir_ir::text::load::load_source(path, src.clone())
        .unwrap_or_else(|e| panic!("{rel}: {}", e.render(false)))
        .module;
    let verified = kir_ir::verify::verify(module.clone()).unwrap_or_else(|d| panic!("{rel}: {d}"));
    let dirs = parse_directives(&src).unwrap_or_else(|e| panic!("{rel}: bad directives {e:?}"));
    let base = path.parent();
    let opts = kir_interp::Options::default();
    for k in &module.kernels {
        if !twins.by_entry.contains_key(&k.name) {
            untwinned.push(format!("{rel} @{}", k.name));
        }
    }
    for d in &dirs.runs {
        let label = format!("{rel}:{} @{} {}", d.line, d.target, arch.name);
        let specs = match named_specs(d) {
            Ok(s) => s,
            Err(e) => {
                rows.push(Row { label, result: Err(e) });
                continue;
            }
        };
        if let Some(g) = module.graph(&d.target) {
            // Launch by launch, on the interpreter's buffers at each point.
            let bound = match kir_interp::graph::bind_graph(g, &specs, base) {
                Ok(b) => b,
                Err(e) => {
                    rows.push(Row { label, result: Err(e) });
                    continue;
                }
            };
            let plan = match kir_interp::graph::plan_graph(&module, g, &bound.args, bound.buffers.len()) {
                Ok(p) => p,
                Err(e) => {
                    rows.push(Row { label, result: Err(e.to_string()) });
                    continue;
                }
            };
            let mut all = bound.buffers.clone();
            all.extend(plan.temps);
            let mut names: Vec<String> = vec![String::new(); all.len()];
            for (p, a) in bound.args.iter().enumerate() {
                if let Arg::Buffer(b) = a {
                    names[*b] = g.params[p].name.clone();
                }
            }
            for (ti, t) in g.temps.iter().enumerate() {
                names[bound.buffers.len() + ti] = t.name.clone();
            }
            for pl in &plan.launches {
                let before = all.clone();
                let llabel = format!("{label} launch {} @{}", pl.index, pl.kernel.name);
                if let Err(e) = kir_interp::launch_verified(
                    verified.verified_kernel(&pl.kernel.name).unwrap(),
                    &pl.cfg,
                    &pl.args,
                    &mut all,
                    &opts,
                ) {
                    rows.push(Row { label: llabel, result: Err(format!("interpreter: {e}")) });
                    break;
                }
                if !twins.by_entry.contains_key(&pl.kernel.name) {
                    continue;
                }
                let tol = d.tol.unwrap_or_else(|| kir_harness::tolerance::derived_tolerance(&module.funcs, pl.kernel));
                let r = check_launch(twins, arch, pl.kernel, &pl.cfg, &pl.args, &before, &all, &names, tol);
                rows.push(Row { label: llabel, result: r });
            }
            continue;
        }
        let Some(k) = module.kernel(&d.target) else {
            rows.push(Row { label, result: Err(format!("no kernel or graph @{}", d.target)) });
            continue;
        };
        if !twins.by_entry.contains_key(&k.name) {
            continue;
        }
        let cfg = LaunchConfig {
            grid: d.grid.unwrap_or([1; 3]),
            block: d.block.unwrap_or([1; 3]),
            dynamic_shared_bytes: d.shared_bytes,
        };
        let bound = match kir_interp::args::bind(k, &specs, base) {
            Ok(b) => b,
            Err(e) => {
                rows.push(Row { label, result: Err(e) });
                continue;
            }
        };
        let mut after = bound.buffers.clone();
        if let Err(e) = kir_interp::launch_verified(
            verified.verified_kernel(&k.name).unwrap(),
            &cfg,
            &bound.args,
            &mut after,
            &opts,
        ) {
            rows.push(Row { label, result: Err(format!("interpreter: {e}")) });
            continue;
        }
        let names = kernel_names(k, &bound.param_buffer, after.len());
        let tol = d.tol.unwrap_or_else(|| kir_harness::tolerance::derived_tolerance(&module.funcs, k));
        let r = check_launch(twins, arch, k, &cfg, &bound.args, &bound.buffers, &after, &names, tol);
        rows.push(Row { label, result: r });
    }
}

#[test]
fn nvrtc_twins_agree_with_the_interpreter_in_the_emulator() {
    let Some(lib) = tools::require_tool_or_skip("nvrtc") else { return };
    let nv = nvrtc::Nvrtc::load(&lib).unwrap_or_else(|e| panic!("cannot load NVRTC: {e}"));
    eprintln!("NVRTC {} from {}", nv.version(), lib.display());
    let kir_files = files(&root().join("kernels"), "kir");
    let mut rows = Vec::new();
    let mut untwinned = Vec::new();
    let mut twinned = std::collections::BTreeSet::new();
    for arch in ARCHS {
        let twins = compile_twins(&nv, arch);
        for (name, _, m) in &twins.modules {
            if let Err(e) = m {
                rows.push(Row { label: format!("bench/{name} {}", arch.name), result: Err(e.clone()) });
            }
        }
        twinned.extend(twins.by_entry.keys().cloned());
        untwinned.clear();
        for f in &kir_files {
            check_file(f, &twins, arch, &mut rows, &mut untwinned);
        }
    }
    let mut failed = 0;
    for r in &rows {
        match &r.result {
            Ok(note) => eprintln!("ok    {}  ({note})", r.label),
            Err(e) => {
                failed += 1;
                eprintln!("FAIL  {}\n    {e}", r.label);
            }
        }
    }
    if !untwinned.is_empty() {
        eprintln!("kernels without a CUDA C twin: {}", untwinned.join(", "));
    }
    eprintln!("{} rows: {} ok, {failed} failed ({} twin entries)", rows.len(), rows.len() - failed, twinned.len());
    assert!(rows.len() >= 2 * 40, "only {} rows: directives or twins went missing", rows.len());
    assert_eq!(failed, 0, "{failed} of {} rows disagree (see above)", rows.len());
}

// ---------------------------------------------------------------------------------------------
// Tensor cores and cp.async from NVRTC (issue 30, item 2)
// ---------------------------------------------------------------------------------------------

/// CUDA C that NVIDIA's compiler turns into the PTX Triton-style kernels use: one warp's
/// `mma.sync.m16n8k16` on fragments loaded from global memory, and a double-buffered `cp.async`
/// pipeline (commit/wait groups around `__syncthreads`).
const TENSOR_CORE_CU: &str = r#"
extern "C" __global__ void mma16816(const unsigned* a, const unsigned* b, const float* c, float* d) {
    unsigned t = threadIdx.x;
    unsigned a0 = a[4 * t], a1 = a[4 * t + 1], a2 = a[4 * t + 2], a3 = a[4 * t + 3];
    unsigned b0 = b[2 * t], b1 = b[2 * t + 1];
    float c0 = c[4 * t], c1 = c[4 * t + 1], c2 = c[4 * t + 2], c3 = c[4 * t + 3];
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
    d[4 * t] = d0; d[4 * t + 1] = d1; d[4 * t + 2] = d2; d[4 * t + 3] = d3;
}

extern "C" __global__ void staged_sum(const float* x, float* out, int ntiles) {
    __shared__ __align__(16) float buf[2][512];
    int t = threadIdx.x;
    float acc = 0.0f;
    unsigned s0 = (unsigned)__cvta_generic_to_shared(&buf[0][4 * t]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s0), "l"(x + 4 * t));
    asm volatile("cp.async.commit_group;");
    for (int i = 0; i < ntiles; ++i) {
        if (i + 1 < ntiles) {
            unsigned s = (unsigned)__cvta_generic_to_shared(&buf[(i + 1) & 1][4 * t]);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(x + 512 * (i + 1) + 4 * t));
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;");
        __syncthreads();
        // A neighbour's slot: only correct after every thread's wait and the barrier.
        int u = (4 * t + 4) & 511;
        acc = acc + buf[i & 1][u];
        __syncthreads();
    }
    out[t] = acc;
}
"#;

fn emu_run(ptx: &str, entry: &str, threads: u32, bufs: &[Vec<u8>], scalars: &[u64]) -> Result<Vec<Vec<u8>>, String> {
    let m = emu::Module::parse(ptx).map_err(|e| format!("{e}"))?;
    let mut mem = emu::Memory::new();
    let mut args = vec![];
    let mut ids = vec![];
    for (i, b) in bufs.iter().enumerate() {
        let id = mem.alloc(&format!("b{i}"), b).map_err(|e| format!("{e}"))?;
        ids.push(id);
        args.push(emu::Arg::Buffer(id));
    }
    args.extend(scalars.iter().map(|&s| emu::Arg::Scalar(s)));
    emu::launch(&m, entry, &emu::LaunchConfig::linear(1, threads), &args, &mut mem, &emu::Options::default())
        .map_err(|e| format!("{e}"))?;
    Ok(ids.iter().map(|&id| mem.bytes(id).expect("buffer").to_vec()).collect())
}

#[test]
fn nvrtc_tensor_core_and_cp_async_kernels_run_in_the_emulator() {
    let Some(lib) = tools::require_tool_or_skip("nvrtc") else { return };
    let nv = nvrtc::Nvrtc::load(&lib).unwrap_or_else(|e| panic!("cannot load NVRTC: {e}"));
    let ptx = nv
        .compile(TENSOR_CORE_CU, "tensor_core.cu", &["--gpu-architecture=compute_80", "--fmad=false"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(ptx.contains("mma.sync.aligned.m16n8k16") && ptx.contains("cp.async.wait_group"), "{ptx}");

    // mma: random f16 A (16x16) and B (16x8), packed into each lane's fragments as the PTX ISA lays
    // them out; D must be the emulator's tensor-core model for the PTX's target (compute_80 gives
    // `.target sm_80`: the A100's rule) on the unpacked tiles, bit for bit.
    let rule = emu::Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}")).tensor_cores();
    assert_eq!(rule, emu::TensorCores::Sm80, "NVRTC's compute_80 PTX runs with the sm_80 rule");
    let mut rng = kir_ir::generate::Rng::new(30);
    let mut h = || half::f16::from_f32((rng.below(2001) as f32 - 1000.0) / 256.0);
    let a: Vec<Vec<half::f16>> = (0..16).map(|_| (0..16).map(|_| h()).collect()).collect();
    let b: Vec<Vec<half::f16>> = (0..16).map(|_| (0..8).map(|_| h()).collect()).collect();
    let c: Vec<Vec<f32>> = (0..16).map(|r| (0..8).map(|n| r as f32 * 0.5 - n as f32).collect()).collect();
    let pack = |lo: half::f16, hi: half::f16| lo.to_bits() as u32 | (hi.to_bits() as u32) << 16;
    let (mut fa, mut fb, mut fc) = (vec![], vec![], vec![]);
    for t in 0..32usize {
        let (g, q) = (t / 4, t % 4);
        for j in 0..4 {
            let (r, k) = (g + 8 * (j % 2), 2 * q + 8 * (j / 2));
            fa.push(pack(a[r][k], a[r][k + 1]));
        }
        for j in 0..2 {
            let k = 2 * q + 8 * j;
            fb.push(pack(b[k][g], b[k + 1][g]));
        }
        for i in 0..4 {
            fc.push(c[g + 8 * (i / 2)][2 * q + i % 2]);
        }
    }
    let bytes = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let cbytes: Vec<u8> = fc.iter().flat_map(|x| x.to_le_bytes()).collect();
    let out = emu_run(&ptx, "mma16816", 32, &[bytes(&fa), bytes(&fb), cbytes, vec![0; 512]], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let d: Vec<f32> = out[3].chunks(4).map(|x| f32::from_le_bytes(x.try_into().unwrap())).collect();
    for t in 0..32usize {
        let (g, q) = (t / 4, t % 4);
        for i in 0..4 {
            let (r, n) = (g + 8 * (i / 2), 2 * q + i % 2);
            let row: Vec<u32> = (0..16).map(|k| a[r][k].to_bits() as u32).collect();
            let col: Vec<u32> = (0..16).map(|k| b[k][n].to_bits() as u32).collect();
            let want = rule.dot(emu::tensor_core::Format::F16, &row, &col, c[r][n].to_bits());
            let got = d[4 * t + i];
            assert_eq!(got.to_bits(), want, "D({r}, {n}) = {got}, the model {}", f32::from_bits(want));
        }
    }

    // cp.async: 4 tiles of 512 floats; thread t sums x[512 i + (4t + 4) mod 512] in order, in f32.
    let ntiles = 4usize;
    let x: Vec<f32> = (0..512 * ntiles).map(|i| ((i * 37) % 101) as f32 * 0.25 - 12.0).collect();
    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let out = emu_run(&ptx, "staged_sum", 128, &[xb, vec![0; 512]], &[ntiles as u64]).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<f32> = out[1].chunks(4).map(|v| f32::from_le_bytes(v.try_into().unwrap())).collect();
    for t in 0..128usize {
        let want = (0..ntiles).fold(0.0f32, |acc, i| acc + x[512 * i + (4 * t + 4) % 512]);
        assert_eq!(got[t].to_bits(), want.to_bits(), "thread {t}: {} vs {want}", got[t]);
    }
}
