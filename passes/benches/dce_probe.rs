//! Runs `fold,simplify-cfg` then `dce` on one generated kernel of INSTS instructions (for counting
//! dce's instructions with callgrind: `--toggle-collect='*Dce*'` on the binary that
//! `cargo bench -p kir-passes --bench dce_probe` builds and runs).
fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let insts: usize = std::env::var("INSTS").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000);
    let mut k = kir_ir::generate::random_kernel(42, &kir_ir::generate::GenConfig { insts, ..Default::default() });
    // Numbered in layout order, as the parser returns kernels.
    k.compact();
    let mut m = kir_ir::Module { kernels: vec![k], ..Default::default() };
    let cfg = kir_passes::RunConfig { verify_input: false, ..Default::default() };
    let pre = kir_passes::parse_pipeline("fold,simplify-cfg").unwrap();
    kir_passes::run_pipeline_in_place(&mut m, &pre, &cfg, &mut std::io::sink()).unwrap();
    let dce = kir_passes::parse_pipeline("dce").unwrap();
    let t = std::time::Instant::now();
    kir_passes::run_pipeline_in_place(&mut m, &dce, &cfg, &mut std::io::sink()).unwrap();
    println!("{insts}: dce pipeline {:?}", t.elapsed());
}
