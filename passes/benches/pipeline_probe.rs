//! Runs the default pipeline once on one generated kernel of INSTS instructions (default 100k),
//! for profiling with callgrind/cachegrind or `perf record`; generation is outside the measured
//! part. `REPEAT=N` runs it N times on fresh copies (for sampling profilers).
//! `cargo bench -p kir-passes --bench pipeline_probe` builds and runs it (profile the binary it
//! names, with `--bench` as its argument).

// The allocator the `kir` binary uses (src/main.rs), so profiles match the command line.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let insts: usize = std::env::var("INSTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let mut k = kir_ir::generate::random_kernel(42, &kir_ir::generate::GenConfig { insts, ..Default::default() });
    // Numbered in layout order, as the parser returns kernels.
    k.compact();
    eprintln!("blocks {} values {} insts {}", k.blocks.len(), k.values.len(), k.insts.len());
    let repeat: usize = std::env::var("REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let cfg = kir_passes::RunConfig { verify_input: false, ..Default::default() };
    let pipeline = std::env::var("PIPELINE").unwrap_or_else(|_| kir_passes::DEFAULT_PIPELINE.to_string());
    let p = kir_passes::parse_pipeline(&pipeline).unwrap();
    for _ in 0..repeat {
        let mut m = kir_ir::Module { kernels: vec![k.clone()], ..Default::default() };
        let t = std::time::Instant::now();
        kir_passes::run_pipeline_in_place(&mut m, &p, &cfg, &mut std::io::sink()).unwrap();
        println!("{insts}: default pipeline {:?}", t.elapsed());
    }
}
