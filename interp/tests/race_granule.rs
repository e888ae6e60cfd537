//! Race detection tracks memory per granule (the kernel's smallest load/store size in that space)
//! and reuses shadows between launches; these tests pin that it still sees exactly what per-byte
//! tracking saw: neighbouring bytes written by different threads are no race, a wide access racing
//! with a narrow one inside it is, and a shadow reused from an earlier launch starts clean.

use kir_interp::{launch_verified, Arg, Buffer, FaultKind, LaunchConfig, Options};
use kir_ir::types::ScalarType;

fn run(src: &str, block: u32, bufs: &mut [Buffer], shared_only: bool) -> Result<(), kir_interp::InterpError> {
    let m = kir_ir::verify::verify(kir_ir::parse(src).expect("test kernel parses")).expect("test kernel verifies");
    let k = m.verified_kernels().next().expect("a kernel");
    let args: Vec<Arg> = if shared_only { vec![] } else { (0..bufs.len()).map(Arg::Buffer).collect() };
    let opts = Options { races: true, threads: Some(1), ..Options::default() };
    launch_verified(k, &LaunchConfig::linear(1, block), &args, bufs, &opts).map(|_| ())
}

/// Each thread writes its own byte of global memory: byte granules, no race.
const OWN_BYTE: &str = "kernel @k(%b: ptr<global, u8>) {
entry:
  %t = tid.x : u32
  %v = cvt.u8.u32 %t
  store %b[%t], %v
  ret
}";

/// Thread 0 writes a u32 at element 0; thread 1 reads byte 1 of it (through a u8 view): a race.
const WIDE_AND_NARROW: &str = "kernel @k(%b: ptr<global, u32>) {
entry:
  %t = tid.x : u32
  %first = eq.u32 %t, 0
  br %first, w, r
w:
  store %b[0], 7
  ret
r:
  %p = ptrcast %b : ptr<global, u8>
  %x = load %p[1]
  ret
}";

#[test]
fn neighbouring_bytes_of_different_threads_are_no_race() {
    let mut bufs = vec![Buffer::zeros(ScalarType::U8, 64)];
    run(OWN_BYTE, 64, &mut bufs, false).unwrap();
    assert_eq!(bufs[0].bytes, (0..64u8).collect::<Vec<_>>());
}

#[test]
fn a_narrow_access_inside_a_wide_one_races() {
    for _ in 0..2 {
        // Twice: the second launch gets the first one's shadow back and must see the same.
        let mut bufs = vec![Buffer::zeros(ScalarType::U32, 4)];
        let e = run(WIDE_AND_NARROW, 64, &mut bufs, false).unwrap_err();
        assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "{e:?}");
    }
}

/// The same in shared memory: bytes of a u8 array per thread, then a u32 view read by thread 0.
const SHARED_BYTES: &str = "kernel @k() {
  shared @s: u8[64]
entry:
  %t = tid.x : u32
  %a = addr @s
  %v = cvt.u8.u32 %t
  store %a[%t], %v
  %z = eq.u32 %t, 0
  br %z, rd, done
rd:
  %w = ptrcast %a : ptr<shared, u32>
  %x = load %w[1]
  jmp done
done:
  ret
}";

#[test]
fn shared_bytes_race_with_a_wide_read_but_not_with_each_other() {
    let e = run(SHARED_BYTES, 64, &mut [], true).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "{e:?}");
    // The racing read is thread 0's u32 load of bytes 4..8, written by threads 4..7.
    assert!(e.message.contains("element 1 (byte 4)"), "{}", e.message);
}

#[test]
fn a_reused_shadow_starts_clean() {
    // Launch 1 writes every element; launch 2 (same buffer sizes, so the same pooled shadow)
    // reads them from other threads. Tags of launch 1 must not count as races in launch 2.
    let write = "kernel @k(%b: ptr<global, f32>) {
entry:
  %t = tid.x : u32
  store %b[%t], 1.0
  ret
}";
    let read = "kernel @k(%b: ptr<global, f32>) {
entry:
  %t = tid.x : u32
  %u = sub.u32 63, %t
  %x = load %b[%u]
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::F32, 64)];
    run(write, 64, &mut bufs, false).unwrap();
    run(read, 64, &mut bufs, false).unwrap();
}

#[test]
fn a_cross_block_race_is_reported_the_same_on_a_reused_shadow() {
    // Every block writes out[0]. Launches after the first reuse the pooled shadow (with its block
    // numbers shifted past the earlier launches'); the report must not change.
    let src = "kernel @k(%out: ptr<global, u32>) {
entry:
  %b = ctaid.x : u32
  %t = tid.x : u32
  %z = eq.u32 %t, 0
  br %z, write, exit
write:
  store %out[0], %b
  jmp exit
exit:
  ret
}";
    let m = kir_ir::verify::verify(kir_ir::parse(src).unwrap()).unwrap();
    let k = m.verified_kernels().next().unwrap();
    let opts = Options { races: true, threads: Some(1), ..Options::default() };
    let mut msgs = vec![];
    for _ in 0..3 {
        // 7 elements: a buffer length no other test uses, so these launches share one shadow.
        let mut bufs = vec![Buffer::zeros(ScalarType::U32, 7)];
        let e = launch_verified(k, &LaunchConfig::linear(3, 32), &[Arg::Buffer(0)], &mut bufs, &opts).unwrap_err();
        assert_eq!(e.block, Some([1, 0, 0]));
        msgs.push(e.message);
    }
    assert!(msgs[0].contains("thread (0, 0, 0) of block (0, 0, 0) wrote it"), "{}", msgs[0]);
    assert!(msgs.windows(2).all(|w| w[0] == w[1]), "{msgs:?}");
}
