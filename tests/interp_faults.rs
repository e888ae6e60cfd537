//! Every runtime check of the interpreter on a small faulty kernel (tests/interp_faults/*.kir):
//! the error kind, the coordinates, and the rendered message users see (insta snapshots).

use kir_interp::{launch, Arg, Buffer, ErrorKind, FaultKind, InterpError, LaunchConfig, Options};
use kir_ir::types::{Constant, ScalarType};

struct Case {
    file: &'static str,
    cfg: LaunchConfig,
    opts: Options,
    args: Vec<Arg>,
    bufs: Vec<Buffer>,
}

fn fail(case: Case) -> (InterpError, String) {
    let path = format!("tests/interp_faults/{}.kir", case.file);
    let src = std::fs::read_to_string(&path).unwrap();
    let m = kir_ir::parse(&src).unwrap_or_else(|d| panic!("{path}: {d:?}"));
    let diags = kir_ir::verify::verify_module(&m);
    assert!(!kir_ir::diag::has_errors(&diags), "{path} must verify: {diags:?}");
    let mut bufs = case.bufs;
    let e = launch(&m.kernels[0], &case.cfg, &case.args, &mut bufs, &case.opts).expect_err("the kernel must fault");
    let rendered = kir_ir::diag::render(&[e.to_diagnostic()], &path, &src, false);
    (e, rendered)
}

fn f32s(n: usize) -> Buffer {
    Buffer::zeros(ScalarType::F32, n)
}

fn u32s(n: usize) -> Buffer {
    Buffer::zeros(ScalarType::U32, n)
}

#[test]
fn missing_barrier_is_a_shared_memory_race() {
    let (e, r) = fail(Case {
        file: "missing_barrier_race",
        cfg: LaunchConfig::linear(1, 64),
        opts: Options { races: true, ..Options::default() },
        args: vec![Arg::Buffer(0)],
        bufs: vec![f32s(64)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace));
    insta::assert_snapshot!("missing_barrier_race", r);
}

#[test]
fn missing_barrier_runs_without_races_flag() {
    // Without --races the kernel runs (the race is the kernel's bug, reported only on request).
    let src = std::fs::read_to_string("tests/interp_faults/missing_barrier_race.kir").unwrap();
    let m = kir_ir::parse(&src).unwrap();
    let mut bufs = vec![f32s(64)];
    launch(&m.kernels[0], &LaunchConfig::linear(1, 64), &[Arg::Buffer(0)], &mut bufs, &Options::default()).unwrap();
}

#[test]
fn barrier_under_if_is_barrier_divergence() {
    let (e, r) = fail(Case {
        file: "barrier_under_if",
        cfg: LaunchConfig::linear(1, 64),
        opts: Options::default(),
        args: vec![Arg::Buffer(0)],
        bufs: vec![u32s(64)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::BarrierDivergence));
    assert_eq!(e.block, Some([0, 0, 0]));
    insta::assert_snapshot!("barrier_under_if", r);
}

#[test]
fn early_exit_before_barrier_is_barrier_divergence() {
    let (e, r) = fail(Case {
        file: "early_exit_before_barrier",
        cfg: LaunchConfig::linear(2, 64),
        opts: Options::default(),
        args: vec![Arg::Buffer(0), Arg::Scalar(Constant::u32(100))],
        bufs: vec![f32s(128)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::BarrierDivergence));
    // Block 0 is full; block 1 has 36 threads in range.
    assert_eq!(e.block, Some([1, 0, 0]));
    insta::assert_snapshot!("early_exit_before_barrier", r);
}

#[test]
fn off_by_one_load_is_out_of_bounds() {
    let (e, r) = fail(Case {
        file: "oob_by_one",
        cfg: LaunchConfig::linear(1, 1),
        opts: Options::default(),
        args: vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(10))],
        bufs: vec![f32s(10), f32s(1)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::OutOfBounds));
    assert_eq!(e.thread, Some([0, 0, 0]));
    insta::assert_snapshot!("oob_by_one", r);
}

#[test]
fn uninitialized_shared_read() {
    let (e, r) = fail(Case {
        file: "uninit_shared",
        cfg: LaunchConfig::linear(1, 64),
        opts: Options { uninit: true, ..Options::default() },
        args: vec![Arg::Buffer(0)],
        bufs: vec![u32s(64)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::UninitializedRead));
    // Thread 0 reads slot 63, which nobody wrote.
    assert_eq!(e.thread, Some([0, 0, 0]));
    insta::assert_snapshot!("uninit_shared", r);
}

#[test]
fn shuffle_in_divergent_code() {
    let (e, r) = fail(Case {
        file: "shfl_divergent",
        cfg: LaunchConfig::linear(1, 32),
        opts: Options::default(),
        args: vec![Arg::Buffer(0)],
        bufs: vec![f32s(32)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::DivergentCollective));
    insta::assert_snapshot!("shfl_divergent", r);
}

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let (e, r) = fail(Case {
        file: "infinite_loop",
        cfg: LaunchConfig::linear(1, 1),
        opts: Options { fuel: 10_000, ..Options::default() },
        args: vec![Arg::Buffer(0), Arg::Scalar(Constant::u32(5))],
        bufs: vec![u32s(1)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::FuelExhausted));
    insta::assert_snapshot!("infinite_loop", r);
}

#[test]
fn infinite_loop_with_default_fuel_in_many_blocks_stops() {
    // Many blocks on all host threads: the launch still stops, with the same error kind.
    let src = std::fs::read_to_string("tests/interp_faults/infinite_loop.kir").unwrap();
    let m = kir_ir::parse(&src).unwrap();
    let mut bufs = vec![u32s(1)];
    let opts = Options { fuel: 20_000_000, ..Options::default() };
    let e = launch(
        &m.kernels[0],
        &LaunchConfig::linear(64, 256),
        &[Arg::Buffer(0), Arg::Scalar(Constant::u32(5))],
        &mut bufs,
        &opts,
    )
    .unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::FuelExhausted));
    // Whichever worker notices, the error points at an instruction and a thread.
    assert!(e.span.is_some() && e.thread.is_some(), "{e:?}");
}

/// One spinning warp stops at the per-warp limit long before the launch's fuel runs out (the
/// default limits stop a single spinning thread within about a second instead of a minute).
#[test]
fn a_spinning_warp_is_stopped_by_the_warp_limit() {
    let src = std::fs::read_to_string("tests/interp_faults/infinite_loop.kir").unwrap();
    let m = kir_ir::parse(&src).unwrap();
    let mut bufs = vec![u32s(1)];
    let opts = Options { warp_fuel: 5_000, ..Options::default() };
    let e = launch(
        &m.kernels[0],
        &LaunchConfig::linear(2, 64),
        &[Arg::Buffer(0), Arg::Scalar(Constant::u32(5))],
        &mut bufs,
        &opts,
    )
    .unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::FuelExhausted));
    assert_eq!(e.message, "warp 0 of this block ran more than 5000 instructions");
    assert!(e.span.is_some() && e.thread.is_some(), "{e:?}");
    assert!(e.notes.iter().any(|n| n.contains("--fuel N")), "{e:?}");
    assert_eq!(kir_interp::DEFAULT_WARP_FUEL, 1 << 26);
    // `--fuel N` raises (or lowers) both limits.
    let o = Options::default().with_fuel(1 << 30);
    assert_eq!((o.fuel, o.warp_fuel), (1 << 30, 1 << 30));
}

/// A fault in block 0 of a 2^31-block grid ends the launch at once on every host thread (it ran
/// for a minute before: every other block index was still visited).
#[test]
fn a_fault_stops_a_huge_grid_promptly() {
    let src = "kernel @k(%out: ptr<global, u32>) {\nentry:\n  %b = ctaid.x\n  %t = tid.x\n  %z = eq.u32 %b, 0\n  \
               br %z, bad, exit\nbad:\n  %i = add.u32 %t, 100\n  store %out[%i], %t\n  jmp exit\nexit:\n  ret\n}\n";
    let m = kir_ir::parse(src).unwrap();
    for threads in [None, Some(2)] {
        let mut bufs = vec![u32s(4)];
        let opts = Options { threads, ..Options::default() };
        let e = launch(&m.kernels[0], &LaunchConfig::linear(i32::MAX as u32, 1), &[Arg::Buffer(0)], &mut bufs, &opts)
            .unwrap_err();
        assert_eq!(e.fault_kind(), Some(FaultKind::OutOfBounds));
        assert_eq!(e.block, Some([0, 0, 0]), "the lowest failing block is reported");
    }
}

#[test]
fn misaligned_load() {
    let (e, r) = fail(Case {
        file: "misaligned",
        cfg: LaunchConfig::linear(1, 4),
        opts: Options::default(),
        args: vec![Arg::Buffer(0), Arg::Buffer(1)],
        bufs: vec![f32s(8), f32s(4)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::Misaligned));
    insta::assert_snapshot!("misaligned", r);
}

#[test]
fn cross_block_write_race() {
    let (e, r) = fail(Case {
        file: "cross_block_race",
        cfg: LaunchConfig::linear(3, 32),
        opts: Options { races: true, threads: Some(1), ..Options::default() },
        args: vec![Arg::Buffer(0)],
        bufs: vec![u32s(1)],
    });
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace));
    insta::assert_snapshot!("cross_block_race", r);
}

#[test]
fn faults_are_reported_identically_whatever_the_host_threads() {
    // An intra-block fault in a multi-block launch: the lowest failing block is reported.
    let src = std::fs::read_to_string("tests/interp_faults/early_exit_before_barrier.kir").unwrap();
    let m = kir_ir::parse(&src).unwrap();
    let mut errs = vec![];
    for threads in [Some(1), Some(2), None] {
        let mut bufs = vec![f32s(64 * 40)];
        let opts = Options { threads, ..Options::default() };
        // n = 1000: blocks 15.. fault (block 15 partially in range, blocks 16.. fully out).
        let e = launch(
            &m.kernels[0],
            &LaunchConfig::linear(40, 64),
            &[Arg::Buffer(0), Arg::Scalar(Constant::u32(1000))],
            &mut bufs,
            &opts,
        )
        .unwrap_err();
        errs.push(e);
    }
    assert!(errs.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(errs[0].block, Some([15, 0, 0]));
    assert!(matches!(errs[0].kind, ErrorKind::KernelFault(FaultKind::BarrierDivergence)));
}
