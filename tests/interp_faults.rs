//! The interpreter's fault handling that is not one file, one run and one fault (those are
//! `test: fault` filetests, tests/filetests/fault/*.kir, run by tests/filetests.rs): a fault under
//! options no `; run:` directive expresses (the per-warp limit alone, the checks off), and
//! properties of many launches (every host thread count reports the same fault, a huge grid
//! stops promptly, a spinning multi-block launch stops). The kernels are those of the filetests.

use kir_interp::{Arg, Buffer, ErrorKind, FaultKind, LaunchConfig, Options};
use kir_ir::types::{Constant, ScalarType};
mod verified_launch;
use verified_launch::launch;

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

/// `tests/kir_test_cases/transpose.kir`'s tiled transpose, its barrier removed or not.
fn transpose(with_barrier: bool) -> kir_ir::Module {
    let src = std::fs::read_to_string("tests/kir_test_cases/transpose.kir").unwrap();
    let src = if with_barrier { src } else { src.replacen("  barrier\n", "", 1) };
    kir_ir::parse(&src).unwrap_or_else(|d| panic!("{d:?}"))
}

fn run_transpose(m: &kir_ir::Module, opts: &Options) -> Result<(), kir_interp::InterpError> {
    let mut bufs = vec![f32s(1200), f32s(1200)];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(40)), Arg::Scalar(Constant::u32(30))];
    let cfg = LaunchConfig { grid: [2, 3, 1], block: [16, 16, 1], ..LaunchConfig::linear(1, 1) };
    launch(&m.kernels[0], &cfg, &args, &mut bufs, opts).map(|_| ())
}

/// Issue 27, item 4: a missing barrier shows up, with only the uninitialized-read check on, as a
/// read of a slot another thread writes later in the same barrier interval. That is reported as a
/// race between the two threads and their instructions, with the barrier as the fix, not as an
/// uninitialized read; the same kernel with its barrier runs clean; whatever the host threads.
#[test]
fn a_missing_barrier_is_a_race_between_the_reader_and_the_later_writer() {
    let opts = Options { uninit: true, ..Options::default() };
    run_transpose(&transpose(true), &opts).unwrap();
    let racy = transpose(false);
    let e = run_transpose(&racy, &opts).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "{e}");
    // Thread (2, 0) reads tile[32] (= tile[tx * 16 + ty]) before thread (0, 2), of the next
    // warp, stores it.
    assert!(
        e.message.contains(
            "data race on shared `@tile` element 32 (byte 128): thread (2, 0, 0) read it before thread (0, 2, 0) of this block wrote it, with no barrier between them"
        ),
        "{e}"
    );
    assert_eq!((e.block, e.thread), (Some([0, 0, 0]), Some([0, 2, 0])));
    assert_eq!(e.label, "thread (0, 2, 0) writes it here");
    let src = std::fs::read_to_string("tests/kir_test_cases/transpose.kir").unwrap().replacen("  barrier\n", "", 1);
    let text = |s: kir_ir::Span| &src[s.start as usize..s.end as usize];
    assert_eq!(text(e.span.unwrap()), "store %t[%slot], %val");
    assert_eq!(e.labels.len(), 1, "{e:?}");
    assert_eq!(e.labels[0].1, "thread (2, 0, 0) read it here first, uninitialized");
    assert_eq!(text(e.labels[0].0), "%w = load %t[%from]");
    assert!(e.notes.iter().any(|n| n.contains("add a barrier between the write and the read")), "{e:?}");
    for threads in [1, 2, 5] {
        let again = run_transpose(&racy, &Options { threads: Some(threads), ..opts.clone() }).unwrap_err();
        assert_eq!(again, e, "{threads} host threads");
    }
    // With --races too, the race detector's own report (a read after another thread's write)
    // comes first here: lane 1 reads tile[16], which lane 16 of its warp wrote.
    let e = run_transpose(&racy, &Options { races: true, ..opts }).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "{e}");
}

/// A read of shared memory that no thread writes before the next barrier (or the block's end)
/// stays an uninitialized read; so does a thread's read of a slot only it writes afterwards.
#[test]
fn a_read_nobody_writes_in_its_interval_stays_uninitialized() {
    let opts = Options { uninit: true, ..Options::default() };
    // The filetest: threads 0..32 fill tile[0..32], barrier, then thread t reads tile[63 - t].
    let m = fault_kernel("uninit_shared");
    let mut bufs = vec![u32s(64)];
    let e = launch(&m.kernels[0], &LaunchConfig::linear(1, 64), &[Arg::Buffer(0)], &mut bufs, &opts).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::UninitializedRead), "{e}");
    assert!(e.message.contains("`@tile[63]`"), "{e}");
    assert_eq!(e.thread, Some([0, 0, 0]));

    // Written after a barrier that follows the read: not the same interval, still uninitialized.
    // And a thread that reads its own slot before writing it reads it uninitialized.
    for body in ["  %v = load %sh[%t]\n  barrier\n  store %sh[%t], %t\n", "  %v = load %sh[%t]\n  store %sh[%t], %t\n"]
    {
        let src = format!(
            "kernel @k(%out: ptr<global, u32>) {{\n  shared @tile: u32[64]\nentry:\n  %t = tid.x : u32\n  %sh = addr @tile\n{body}  store %out[%t], %v\n  ret\n}}\n"
        );
        let m = kir_ir::parse(&src).unwrap_or_else(|d| panic!("{d:?}"));
        let mut bufs = vec![u32s(64)];
        let e = launch(&m.kernels[0], &LaunchConfig::linear(1, 64), &[Arg::Buffer(0)], &mut bufs, &opts).unwrap_err();
        assert_eq!(e.fault_kind(), Some(FaultKind::UninitializedRead), "{body}: {e}");
        assert!(e.message.contains("`@tile[0]`"), "{e}");
        assert_eq!(e.thread, Some([0, 0, 0]));
    }
}

/// Runs one-block kernel `src` (parameter `%out: ptr<global, u32>` of 64 elements) with 64 threads.
fn run_src(src: &str, opts: &Options) -> Result<(), kir_interp::InterpError> {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("{d:?}"));
    let mut bufs = vec![u32s(64)];
    launch(&m.kernels[0], &LaunchConfig::linear(1, 64), &[Arg::Buffer(0)], &mut bufs, opts).map(|_| ())
}

/// Issue 38, item 2: GPUVerify's 32 x 8 transpose without its barrier, with both checks on (as
/// `kir test` runs it), is a race naming both threads, whatever the host threads: never the
/// uninitialized read it used to be (whose note claimed no thread writes the slot, while a thread
/// of warp 1 does).
#[test]
fn a_cross_warp_missing_barrier_is_never_an_uninitialized_read() {
    let m = fault_kernel("cross_warp_missing_barrier");
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [32, 8, 1], ..LaunchConfig::linear(1, 1) };
    let mut errs = vec![];
    for (races, uninit) in [(true, true), (false, true), (true, false)] {
        for threads in [Some(1), Some(3)] {
            let opts = Options { races, uninit, threads, ..Options::default() };
            let mut bufs = vec![f32s(1024), f32s(1024)];
            let e = launch(&m.kernels[0], &cfg, &[Arg::Buffer(0), Arg::Buffer(1)], &mut bufs, &opts).unwrap_err();
            assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "races {races}, uninit {uninit}: {e}");
            // Both threads are named: the faulting one in the coordinates, the other in the message
            // and a label at its instruction.
            assert!(e.message.contains("thread ("), "{e}");
            assert_eq!(e.labels.len(), 1, "{e:?}");
            errs.push((races, uninit, e));
        }
    }
    for w in errs.windows(2) {
        if (w[0].0, w[0].1) == (w[1].0, w[1].1) {
            assert_eq!(w[0].2, w[1].2, "host threads changed the report");
        }
    }
    // Only the uninitialized-read check: the race across warps, reader (1, 0) of warp 0, writer
    // (0, 1) of warp 1.
    let e = &errs[2].2;
    assert_eq!(e.thread, Some([0, 1, 0]), "{e}");
    assert!(e.message.contains("thread (1, 0, 0) read it before thread (0, 1, 0) of this block wrote it"), "{e}");
}

/// A fault that stops the block while an uninitialized read is pending keeps its own report: the
/// interval did not end, so the read is labelled as a possible cause, with no claim that no thread
/// writes the slot.
#[test]
fn a_fault_before_the_interval_ends_does_not_claim_an_uninitialized_read() {
    // Thread 0 reads tile[40] (written later by thread 40, of warp 1) and stores to out[v + 100]:
    // out of bounds (64 elements) whatever it read.
    let src = "kernel @k(%out: ptr<global, u32>) {\n  shared @tile: u32[64]\nentry:\n  %t = tid.x : u32\n  %sh = addr @tile\n  %z = eq.u32 %t, 0\n  br %z, peek, fill\npeek:\n  %v = load %sh[40]\n  %i = add.u32 %v, 100\n  store %out[%i], %v\n  jmp fill\nfill:\n  store %sh[%t], %t\n  ret\n}\n";
    let opts = Options { uninit: true, ..Options::default() };
    let e = run_src(src, &opts).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::OutOfBounds), "{e}");
    assert_eq!(e.labels.len(), 1, "{e:?}");
    assert_eq!(e.labels[0].1, "thread (0, 0, 0) read uninitialized shared memory here");
    let note = e.notes.iter().find(|n| n.contains("earlier in this barrier interval")).expect("a note on the read");
    assert!(note.contains("`@tile[40]`") && note.contains("is unknown"), "{note}");
    assert!(!e.notes.iter().any(|n| n.contains("writes it before the next barrier (or the block's end) either")));
}

/// Atomics on shared memory nobody initialized do not race with each other: the report is the
/// uninitialized read (at the interval's end), not a race between two atomics. A plain write by
/// another thread in the same interval is a race with the first atomic.
#[test]
fn atomics_on_uninitialized_shared_memory_are_uninitialized_reads_not_races() {
    let body = |extra: &str| {
        format!(
            "kernel @k(%out: ptr<global, u32>) {{\n  shared @bins: u32[2]\nentry:\n  %t = tid.x : u32\n  %sh = addr @bins\n  %b = and.u32 %t, 1\n  %o = atom.add %sh[%b], 1\n{extra}  barrier\n  %v = load %sh[%b]\n  store %out[%t], %v\n  ret\n}}\n"
        )
    };
    for races in [false, true] {
        let opts = Options { uninit: true, races, ..Options::default() };
        let e = run_src(&body(""), &opts).unwrap_err();
        assert_eq!(e.fault_kind(), Some(FaultKind::UninitializedRead), "races {races}: {e}");
        assert!(e.message.contains("`@bins[0]`"), "{e}");
        assert_eq!(e.thread, Some([0, 0, 0]));
        let e =
            run_src(&body("  %z = eq.u32 %t, 33\n  br %z, put, go\nput:\n  store %sh[1], 0\n  jmp go\ngo:\n"), &opts)
                .unwrap_err();
        assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "races {races}: {e}");
        assert_eq!(e.thread, Some([33, 0, 0]), "{e}");
    }
}

/// A thread that reads a slot uninitialized and then writes it itself leaves the read pending: a
/// later write by another thread in the same interval is the race with that read.
#[test]
fn a_readers_own_write_keeps_its_read_pending() {
    let src = "kernel @k(%out: ptr<global, u32>) {\n  shared @tile: u32[64]\nentry:\n  %t = tid.x : u32\n  %sh = addr @tile\n  %z = eq.u32 %t, 0\n  br %z, own, next\nown:\n  %v = load %sh[5]\n  store %sh[5], 1\n  store %out[0], %v\n  jmp next\nnext:\n  %f = eq.u32 %t, 37\n  br %f, other, done\nother:\n  store %sh[5], 2\n  jmp done\ndone:\n  ret\n}\n";
    let e = run_src(src, &Options { uninit: true, ..Options::default() }).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "{e}");
    assert!(e.message.contains("thread (0, 0, 0) read it before thread (37, 0, 0) of this block wrote it"), "{e}");
}
