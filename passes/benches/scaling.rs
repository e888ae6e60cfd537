//! Prints the best-of-N wall time of the default pipeline on generated kernels of growing size and
//! the ratio between consecutive sizes (2x instructions should cost at most 2.2x time). Runs are
//! interleaved across sizes and the best is kept, so a burst of other load on the machine does not
//! land on one size only. Kernels are compacted first, as the parser returns them. Usage:
//! `cargo bench -p kir-passes --bench scaling [-- RUNS [cold]]`; with `cold`, the caches
//! are evicted before every run, so no size starts with its kernel in cache.

// The allocator the `kir` binary uses (src/main.rs), so timings match the command line.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use kir_ir::generate::{random_kernel, GenConfig};
use kir_ir::Module;
use kir_passes::{parse_pipeline, run_pipeline_in_place, RunConfig, DEFAULT_PIPELINE};
use std::time::{Duration, Instant};

fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(15);
    // `cold`: evict the caches before each run (write 64 MiB), so every size starts from memory
    // and the kernel's own copy does not sit in cache for the small sizes only.
    let cold = std::env::args().any(|a| a == "cold");
    let mut evict = vec![0u8; 64 << 20];
    let pipeline = parse_pipeline(DEFAULT_PIPELINE).expect("default pipeline");
    let cfg = RunConfig { verify_input: false, ..RunConfig::default() };
    let sizes = [25_000usize, 50_000, 100_000, 200_000, 400_000];
    let kernels: Vec<_> =
        sizes.iter().map(|&insts| random_kernel(42, &GenConfig { insts, ..GenConfig::default() })).collect();
    // Numbered in layout order, as the parser returns kernels (what `kir opt` runs the passes on).
    let kernels: Vec<_> = kernels
        .into_iter()
        .map(|mut k| {
            k.compact();
            k
        })
        .collect();
    let mut best = vec![Duration::MAX; sizes.len()];
    let mut best_steps = vec![vec![Duration::MAX; pipeline.steps.len()]; sizes.len()];
    for _ in 0..runs {
        for (i, k) in kernels.iter().enumerate() {
            let mut m = Module { kernels: vec![k.clone()], ..Module::default() };
            if cold {
                evict.iter_mut().for_each(|b| *b = b.wrapping_add(1));
                std::hint::black_box(&evict);
            }
            let t = Instant::now();
            let r = run_pipeline_in_place(&mut m, &pipeline, &cfg, &mut std::io::sink()).expect("pipeline");
            best[i] = best[i].min(t.elapsed());
            for (b, s) in best_steps[i].iter_mut().zip(&r.steps) {
                *b = (*b).min(s.time);
            }
        }
    }
    println!("{:>10} {:>10} {:>10} {:>6}   per pass (ms)", "target", "insts", "best (ms)", "ratio");
    for (i, k) in kernels.iter().enumerate() {
        let ratio =
            if i == 0 { "-".to_string() } else { format!("{:.2}", best[i].as_secs_f64() / best[i - 1].as_secs_f64()) };
        let steps: Vec<String> = pipeline
            .steps
            .iter()
            .zip(&best_steps[i])
            .map(|(s, t)| format!("{} {:.2}", s.spec, t.as_secs_f64() * 1e3))
            .collect();
        println!(
            "{:>10} {:>10} {:>10.2} {ratio:>6}   {}",
            sizes[i],
            k.inst_count(),
            best[i].as_secs_f64() * 1e3,
            steps.join(", ")
        );
    }
}
