//! Where compile time goes for the kernel library: parse, verify, passes, emit per file, summed
//! over many repetitions (`KIR_REPS`). `cargo bench -p kir-backend-ptx --bench compile_profile`

// The allocator the `kir` binary uses (src/main.rs), so timings match the command line.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::{Duration, Instant};

fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    let sources: Vec<(std::path::PathBuf, String)> =
        files.iter().map(|p| (p.clone(), std::fs::read_to_string(p).unwrap())).collect();
    let reps: u32 = std::env::var("KIR_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let (mut parse, mut passes, mut emit) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let p = kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE).unwrap();
    for _ in 0..reps {
        for (path, s) in &sources {
            let t = Instant::now();
            let mut m = kir_ir::text::load::load_source(path, s.clone()).map_err(|e| e.render(false)).unwrap().module;
            parse += t.elapsed();
            let t = Instant::now();
            kir_passes::run_pipeline_in_place(&mut m, &p, &kir_passes::RunConfig::default(), &mut std::io::sink())
                .unwrap();
            passes += t.elapsed();
            let t = Instant::now();
            let opts =
                kir_backend_ptx::PtxOptions { sm: kir_backend_ptx::SmVersion::Sm80, source: None, comments: false };
            std::hint::black_box(
                kir_backend_ptx::emit_module(&kir_ir::verify::check(m.clone()).expect("verifies"), &opts).unwrap(),
            );
            emit += t.elapsed();
        }
    }
    let per = |d: Duration| d / reps;
    println!("all {} files per repetition: parse {:?}, passes (incl. input verify) {:?}, emit (incl. verify) {:?}, total {:?}", sources.len(), per(parse), per(passes), per(emit), per(parse + passes + emit));
}
