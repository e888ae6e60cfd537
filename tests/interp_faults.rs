//! The interpreter's fault handling that is not one file, one run and one fault (those are
//! `test: fault` filetests, tests/filetests/fault/*.kir, run by tests/filetests.rs): a fault under
//! options no `; run:` directive expresses (the per-warp limit alone, the checks off), and
//! properties of many launches (every host thread count reports the same fault, a huge grid
//! stops promptly, a spinning multi-block launch stops). The kernels are those of the filetests.

use kir_interp::{launch, Arg, Buffer, ErrorKind, FaultKind, LaunchConfig, Options};
use kir_ir::types::{Constant, ScalarType};

/// The kernel of `tests/filetests/fault/NAME.kir` (its directives are comments to the parser).
fn fault_kernel(name: &str) -> kir_ir::Module {
    let path = format!("tests/filetests/fault/{name}.kir");
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    kir_ir::parse(&src).unwrap_or_else(|d| panic!("{path}: {d:?}"))
}

fn f32s(n: usize) -> Buffer {
    Buffer::zeros(ScalarType::F32, n)
}

fn u32s(n: usize) -> Buffer {
    Buffer::zeros(ScalarType::U32, n)
}

#[test]
fn missing_barrier_runs_without_races_flag() {
    // Without --races the kernel runs (the race is the kernel's bug, reported only on request).
    let m = fault_kernel("missing_barrier_race");
    let mut bufs = vec![f32s(64)];
    launch(&m.kernels[0], &LaunchConfig::linear(1, 64), &[Arg::Buffer(0)], &mut bufs, &Options::default()).unwrap();
}

#[test]
fn infinite_loop_with_default_fuel_in_many_blocks_stops() {
    // Many blocks on all host threads: the launch still stops, with the same error kind.
    let m = fault_kernel("infinite_loop");
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
    let m = fault_kernel("infinite_loop");
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
fn faults_are_reported_identically_whatever_the_host_threads() {
    // An intra-block fault in a multi-block launch: the lowest failing block is reported.
    let m = fault_kernel("early_exit_before_barrier");
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
