//! Runs the default pipeline once on one generated kernel of INSTS instructions (default 100k),
//! for profiling with callgrind/cachegrind; generation is outside the measured part.
fn main() {
    let insts: usize = std::env::var("INSTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let k = kir_ir::gen::random_kernel(42, &kir_ir::gen::GenConfig { insts, ..Default::default() });
    eprintln!("blocks {} values {} insts {}", k.blocks.len(), k.values.len(), k.insts.len());
    let mut m = kir_ir::Module { kernels: vec![k], ..Default::default() };
    let cfg = kir_passes::RunConfig { verify_input: false, ..Default::default() };
    let p = kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE).unwrap();
    let t = std::time::Instant::now();
    kir_passes::run_pipeline(&mut m, &p, &cfg, &mut std::io::sink()).unwrap();
    println!("{insts}: default pipeline {:?}", t.elapsed());
}
