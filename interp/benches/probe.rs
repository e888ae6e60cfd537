//! Runs one benchmark launch of interp/benches N times on one host thread (all with `par`) and
//! prints the best time, for profiling:
//! `cargo bench -p kir-interp --bench probe -- relu|reduce|(sparse FILE) [races] [par] N`.
use kir_interp::{launch_verified, Arg, Buffer, LaunchConfig, Options};
use kir_ir::types::{Constant, ScalarType};
const N: usize = 1 << 20;
fn rand(n: usize, seed: u64) -> Buffer {
    kir_interp::args::generate(&kir_interp::args::ArgSpec::Rand { elem: ScalarType::F32, len: n as u64, seed }).unwrap()
}
fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let a: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let races = a.iter().any(|x| x == "races");
    let reps: usize = a.last().unwrap().parse().unwrap();
    // `par`: all cores (rayon), else one host thread.
    let threads = if a.iter().any(|x| x == "par") { None } else { Some(1) };
    let opts = Options { races, threads, ..Options::default() };
    let cfg = LaunchConfig::linear((N / 256) as u32, 256);
    let (k, mut bufs, args) = if a[1] == "sparse" {
        // A kernel file given on the command line, taking (%x: ptr<global, f32>, %n: u32).
        let src: &'static str = Box::leak(std::fs::read_to_string(&a[2]).unwrap().into_boxed_str());
        (src, vec![rand(N, 5)], vec![Arg::Buffer(0), Arg::Scalar(Constant::u32(N as u32))])
    } else if a[1] == "relu" {
        (
            include_str!("../../kernels/relu_backward.kir"),
            vec![rand(N, 1), rand(N, 2), Buffer::zeros(ScalarType::F32, N)],
            vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::Scalar(Constant::u32(N as u32))],
        )
    } else {
        (
            include_str!("../benches/reduce.kir"),
            vec![rand(N, 3), Buffer::zeros(ScalarType::F32, N / 256)],
            vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(N as u32))],
        )
    };
    let m = kir_ir::verify::verify(kir_ir::parse(k).unwrap()).unwrap();
    let k = m.verified_kernels().next().unwrap();
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = std::time::Instant::now();
        launch_verified(k, &cfg, &args, &mut bufs, &opts).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("best launch {:.2} ms", best * 1e3);
}
