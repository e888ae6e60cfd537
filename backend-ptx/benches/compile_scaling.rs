//! Per-stage compile time of generated kernels of growing size (1k, 10k, 100k instructions):
//! parse, verify, default passes, PTX emission. Shows which stage grows faster than linearly.
//! `cargo bench -p kir-backend-ptx --bench compile_scaling`

// The allocator the `kir` binary uses (src/main.rs), so timings match the command line.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::Instant;

fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    for n in [1_000usize, 10_000, 100_000] {
        let k = kir_ir::generate::random_kernel(7, &kir_ir::generate::GenConfig { insts: n, ..Default::default() });
        let text = kir_ir::print_kernel(&k);
        let t = Instant::now();
        let mut m = kir_ir::parse(&text).expect("parses");
        let parse = t.elapsed();
        let t = Instant::now();
        let _ = kir_ir::verify::verify_module(&m);
        let verify = t.elapsed();
        let p = kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE).expect("pipeline");
        let t = Instant::now();
        kir_passes::run_pipeline_in_place(&mut m, &p, &kir_passes::RunConfig::default(), &mut std::io::sink())
            .expect("passes");
        let passes = t.elapsed();
        let t = Instant::now();
        let _ = kir_ir::verify::verify_module(&m);
        let reverify = t.elapsed();
        let t = Instant::now();
        let ptx = kir_backend_ptx::emit_module(
            &kir_ir::verify::check(m.clone()).expect("verifies"),
            &kir_backend_ptx::PtxOptions { comments: false, ..Default::default() },
        )
        .expect("emits");
        let emit = t.elapsed();
        println!(
            "{:>7} insts: parse {:>9.2?} verify {:>9.2?} passes {:>9.2?} emit(+verify) {:>9.2?} of which verify {:>9.2?} ({} PTX lines)",
            k.inst_count(),
            parse,
            verify,
            passes,
            emit,
            reverify,
            ptx.lines().count()
        );
    }
}
