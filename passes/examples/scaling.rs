//! Prints the best-of-N wall time of the default pipeline on generated kernels of growing size and
//! the ratio between consecutive sizes (2x instructions should cost at most 2.2x time). Best-of-N
//! is robust to other load on the machine, which inflates means. Usage:
//! `cargo run --release -p kir-passes --example scaling [RUNS]`.

use kir_ir::gen::{random_kernel, GenConfig};
use kir_ir::Module;
use kir_passes::{parse_pipeline, run_pipeline, RunConfig, DEFAULT_PIPELINE};
use std::time::{Duration, Instant};

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(15);
    let pipeline = parse_pipeline(DEFAULT_PIPELINE).expect("default pipeline");
    let cfg = RunConfig { verify_input: false, ..RunConfig::default() };
    let mut prev: Option<Duration> = None;
    println!("{:>10} {:>12} {:>12} {:>8}", "target", "insts", "best (ms)", "ratio");
    for insts in [25_000usize, 50_000, 100_000, 200_000, 400_000] {
        let k = random_kernel(42, &GenConfig { insts, ..GenConfig::default() });
        let n = k.inst_count();
        let mut best = Duration::MAX;
        let mut best_steps = vec![Duration::MAX; pipeline.steps.len()];
        for _ in 0..runs {
            let mut m = Module { kernels: vec![k.clone()], ..Module::default() };
            let t = Instant::now();
            let r = run_pipeline(&mut m, &pipeline, &cfg, &mut std::io::sink()).expect("pipeline");
            best = best.min(t.elapsed());
            for (b, s) in best_steps.iter_mut().zip(&r.steps) {
                *b = (*b).min(s.time);
            }
        }
        let ratio = prev.map(|p| format!("{:.2}", best.as_secs_f64() / p.as_secs_f64())).unwrap_or_else(|| "-".into());
        let steps: Vec<String> = pipeline
            .steps
            .iter()
            .zip(&best_steps)
            .map(|(s, t)| format!("{} {:.2}", s.spec, t.as_secs_f64() * 1e3))
            .collect();
        println!("{insts:>10} {n:>12} {:>12.2} {ratio:>8}   ({})", best.as_secs_f64() * 1e3, steps.join(", "));
        prev = Some(best);
    }
}
