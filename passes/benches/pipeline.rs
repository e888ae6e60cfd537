//! Throughput of the default pipeline (`fold,simplify-cfg,dce`) on generated kernels of 25k to
//! 200k instructions (`kir_ir::generate`, default config: all types, branches, loops, shared memory,
//! shuffles). The input is verified once outside the timed region; the timed region is what the
//! passes do (`verify_input: false`). Time should grow linearly: 2x instructions, at most 2.2x
//! time. Numbers are recorded in BENCHMARKS.md ("Passes").

// The allocator the `kir` binary uses (src/main.rs), so timings match the command line.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use kir_ir::generate::{random_kernel, GenConfig};
use kir_ir::Module;
use kir_passes::{parse_pipeline, run_pipeline_in_place, RunConfig, DEFAULT_PIPELINE};

fn bench(c: &mut Criterion) {
    let pipeline = parse_pipeline(DEFAULT_PIPELINE).expect("default pipeline");
    let cfg = RunConfig { verify_input: false, ..RunConfig::default() };
    let mut group = c.benchmark_group("default_pipeline");
    group.sample_size(10);
    for insts in [25_000usize, 50_000, 100_000, 200_000] {
        let mut k = random_kernel(42, &GenConfig { insts, ..GenConfig::default() });
        // Numbered in layout order, as the parser returns kernels (what `kir opt` runs passes on).
        k.compact();
        assert!(
            !kir_ir::diag::has_errors(&kir_ir::verify::verify_body(&k, None, None).0),
            "generated kernel must verify"
        );
        let n = k.inst_count();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(insts), &k, |b, k| {
            // `_ref`: the module is dropped outside the measurement (the pipeline's time only, as
            // `kir opt` reports it and the `scaling` example measures it).
            b.iter_batched_ref(
                || Module { kernels: vec![k.clone()], ..Module::default() },
                |m| run_pipeline_in_place(m, &pipeline, &cfg, &mut std::io::sink()).expect("pipeline"),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
