//! Interpreter speed (BENCHMARKS.md, "Interpreter"): relu_backward and a 256-thread shared-memory
//! tree reduction (9 barriers per block) over 2^20 elements, with default checks and with
//! `--races`. Throughput is reported in thread-instructions per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kir_interp::{launch_verified as launch, Arg, Buffer, LaunchConfig, Options};
use kir_ir::types::{Constant, ScalarType};
use std::time::Duration;

const N: usize = 1 << 20;

/// The verified module of a one-kernel source (the launches below take its kernel, so what is
/// timed is the interpreter, not the verifier).
fn module(src: &str) -> kir_ir::verify::Verified {
    kir_ir::verify::verify(kir_ir::parse(src).expect("benchmark kernel parses")).expect("benchmark kernel verifies")
}

fn rand(n: usize, seed: u64) -> Buffer {
    kir_interp::args::generate(&kir_interp::args::ArgSpec::Rand { elem: ScalarType::F32, len: n as u64, seed }).unwrap()
}

fn bench(c: &mut Criterion) {
    let relu_module = module(include_str!("../../kernels/relu_backward.kir"));
    let reduce_module = module(include_str!("reduce.kir"));
    let relu = relu_module.verified_kernels().next().expect("one kernel");
    let reduce = reduce_module.verified_kernels().next().expect("one kernel");
    let mut g = c.benchmark_group("interp");
    g.sample_size(20).measurement_time(Duration::from_secs(6));
    for races in [false, true] {
        let opts = Options { races, ..Options::default() };
        let suffix = if races { "/races" } else { "" };

        let mut bufs = vec![rand(N, 1), rand(N, 2), Buffer::zeros(ScalarType::F32, N)];
        let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::Scalar(Constant::u32(N as u32))];
        let cfg = LaunchConfig::linear((N / 256) as u32, 256);
        let stats = launch(relu, &cfg, &args, &mut bufs, &opts).unwrap();
        g.throughput(Throughput::Elements(stats.thread_instructions));
        g.bench_function(format!("relu_backward_2^20{suffix}"), |b| {
            b.iter(|| launch(relu, &cfg, &args, &mut bufs, &opts).unwrap())
        });

        let mut bufs = vec![rand(N, 3), Buffer::zeros(ScalarType::F32, N / 256)];
        let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(N as u32))];
        let stats = launch(reduce, &cfg, &args, &mut bufs, &opts).unwrap();
        assert_eq!(stats.barriers, 9 * (N / 256) as u64);
        g.throughput(Throughput::Elements(stats.thread_instructions));
        g.bench_function(format!("reduce256_2^20{suffix}"), |b| {
            b.iter(|| launch(reduce, &cfg, &args, &mut bufs, &opts).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
