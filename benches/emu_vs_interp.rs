//! PTX emulator against the interpreter on the same kernels and inputs (BENCHMARKS.md, "PTX
//! emulator"): relu_backward and the 256-thread shared-memory tree reduction over 2^20 elements.
//! The emulator runs the PTX that kir emits for the kernel after the default pass pipeline (the
//! `ptx-emu` column of `kir test`); each engine runs on both cores (rayon) and on one host thread. Throughput is in elements.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kir_backend_ptx::{emit_module, PtxOptions, SmVersion};
use kir_interp::{launch_verified, Arg, Buffer, LaunchConfig, Options};
use kir_ir::types::{Constant, ScalarType};
use kir_ptx_emu as emu;
use std::time::Duration;

const N: usize = 1 << 20;

fn module(src: &str) -> kir_ir::Module {
    let mut m = kir_ir::parse(src).expect("benchmark kernel parses");
    let p = kir_passes::parse_pipeline(kir_passes::DEFAULT_PIPELINE).expect("default pipeline");
    kir_passes::run_pipeline_in_place(&mut m, &p, &kir_passes::RunConfig::default(), &mut std::io::sink())
        .expect("passes");
    m
}

fn rand(n: usize, seed: u64) -> Buffer {
    kir_interp::args::generate(&kir_interp::args::ArgSpec::Rand { elem: ScalarType::F32, len: n as u64, seed }).unwrap()
}

fn bytes(b: &Buffer) -> Vec<u8> {
    (0..b.len()).flat_map(|i| (b.get_bits(i) as u32).to_le_bytes()).collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("emu_vs_interp");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    let cases: [(&str, &str, usize); 2] = [
        ("relu_backward", include_str!("../kernels/relu_backward.kir"), 3),
        ("reduce256", include_str!("../interp/benches/reduce.kir"), 2),
    ];
    for (name, src, nbufs) in cases {
        let m = kir_ir::verify::check(module(src)).expect("verifies");
        let k = m.verified_kernels().next().expect("a kernel");
        let ptx = emit_module(&m, &PtxOptions { sm: SmVersion::Sm90, source: None, comments: false }).expect("emits");
        let pm = emu::Module::parse(&ptx).expect("the emulator loads kir's PTX");
        let inputs: Vec<Buffer> = if nbufs == 3 {
            vec![rand(N, 1), rand(N, 2), Buffer::zeros(ScalarType::F32, N)]
        } else {
            vec![rand(N, 3), Buffer::zeros(ScalarType::F32, N / 256)]
        };
        let cfg = LaunchConfig::linear((N / 256) as u32, 256);
        let mut args: Vec<Arg> = (0..nbufs).map(Arg::Buffer).collect();
        args.push(Arg::Scalar(Constant::u32(N as u32)));
        g.throughput(Throughput::Elements(N as u64));

        let mut bufs = inputs.clone();
        for (threads, tag) in [(None, ""), (Some(1), "-1thread")] {
            let opts = Options { threads, ..Options::default() };
            g.bench_function(format!("{name}_2^20/interp{tag}"), |b| {
                b.iter(|| launch_verified(k, &cfg, &args, &mut bufs, &opts).unwrap())
            });
        }

        let mut mem = emu::Memory::new();
        let ids: Vec<emu::BufferId> =
            inputs.iter().enumerate().map(|(i, b)| mem.alloc(format!("b{i}"), &bytes(b)).unwrap()).collect();
        let mut eargs: Vec<emu::Arg> = ids.iter().map(|&id| emu::Arg::Buffer(id)).collect();
        eargs.push(emu::Arg::Scalar(N as u64));
        let ecfg = emu::LaunchConfig::linear((N / 256) as u32, 256);
        for (threads, tag) in [(None, ""), (Some(1), "-1thread")] {
            let opts = emu::Options { threads, ..emu::Options::default() };
            g.bench_function(format!("{name}_2^20/ptx-emu{tag}"), |b| {
                b.iter(|| emu::launch(&pm, &k.name, &ecfg, &eargs, &mut mem, &opts).unwrap())
            });
        }
        // The two engines computed the same outputs (one more launch of each, whatever the filter).
        let mut want = inputs.clone();
        launch_verified(k, &cfg, &args, &mut want, &Options::default()).unwrap();
        emu::launch(&pm, &k.name, &ecfg, &eargs, &mut mem, &emu::Options::default()).unwrap();
        for (i, (id, want)) in ids.iter().zip(&want).enumerate() {
            assert_eq!(
                mem.bytes(*id).unwrap(),
                bytes(want).as_slice(),
                "{name}: buffer {i} differs between the engines"
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
