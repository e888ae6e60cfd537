//! Compile speed: `.kir` text → parse → verify → default passes → PTX.
//!
//! - `kernels_dir`: every file of `kernels/` (the seed kernel library), one after another.
//! - `generated/N`: one generated kernel (`kir_ir::generate`, default config) of about N instructions,
//!   printed to text first, for N = 1k, 10k, 100k (time should grow linearly in N).
//!
//! NVRTC's time for the CUDA C equivalents is measured by `benches/codequality.rs` (it needs the
//! NVRTC library); BENCHMARKS.md puts the two side by side.

// The allocator the `kir` binary uses (src/main.rs), so timings match the command line.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kir_backend_ptx::{PtxOptions, SmVersion};
use std::path::PathBuf;

/// Loads (with imports, relative to `path`), runs the default pipeline, emits PTX.
fn compile(path: &std::path::Path, src: &str) -> String {
    let m = kir_ir::text::load::load_source(path, src.to_string()).map_err(|e| e.render(false)).expect("loads").module;
    let v = kir_ir::verify::check(m).map_err(|d| d.to_string()).expect("verifies");
    let p = kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE).expect("pipeline");
    let (v, _) =
        kir_passes::run_pipeline(v, &p, &kir_passes::RunConfig::default(), &mut std::io::sink()).expect("passes");
    kir_backend_ptx::emit_module(&v, &PtxOptions { sm: SmVersion::Sm80, source: None, comments: false }).expect("emits")
}

fn kernel_sources() -> Vec<(PathBuf, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("kernels/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    files.iter().map(|p| (p.clone(), std::fs::read_to_string(p).expect("readable"))).collect()
}

fn bench(c: &mut Criterion) {
    let sources = kernel_sources();
    c.bench_function("kernels_dir", |b| {
        b.iter(|| {
            for (p, s) in &sources {
                std::hint::black_box(compile(p, s));
            }
        })
    });
    let mut g = c.benchmark_group("generated");
    g.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        let cfg = kir_ir::generate::GenConfig { insts: n, ..Default::default() };
        let k = kir_ir::generate::random_kernel(7, &cfg);
        let insts = k.inst_count();
        let text = kir_ir::print_kernel(&k);
        g.throughput(Throughput::Elements(insts as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, t| {
            b.iter(|| std::hint::black_box(compile(std::path::Path::new("generated.kir"), t)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
