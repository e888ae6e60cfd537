//! Index operands of every integer type address memory as the GPU does: signed indices are
//! sign-extended, a `u64` index wraps modulo 2^64 (so `0xffff_ffff_ffff_ffff` is -1), and a
//! pointer moved by `offset` may be indexed backwards. An index outside the buffer is a kernel
//! fault, never an internal interpreter error.

use kir_interp::{Arg, Buffer, ErrorKind, LaunchConfig, Options};
mod verified_launch;
use verified_launch::launch;

fn run(body: &str) -> Result<Vec<u32>, kir_interp::InterpError> {
    let src = format!(
        "kernel @k(%p: ptr<global, u32>, %out: ptr<global, u32>) {{\nentry:\n  %q = offset %p, 10\n{body}  ret\n}}\n"
    );
    let m = kir_ir::parse(&src).expect("parses");
    assert!(kir_ir::verify::verify_module(&m).is_empty());
    let mut bufs = vec![
        Buffer::from_u32(&(0..16).map(|i| 100 + i).collect::<Vec<u32>>()),
        Buffer::zeros(kir_ir::ScalarType::U32, 4),
    ];
    launch(
        &m.kernels[0],
        &LaunchConfig::linear(1, 1),
        &[Arg::Buffer(0), Arg::Buffer(1)],
        &mut bufs,
        &Options::default(),
    )?;
    Ok(bufs[1].to_u32())
}

#[test]
fn negative_and_wrapping_indices_address_backwards() {
    let out = run("  %m = mov.s16 -1\n  %a = load %q[%m]\n  store %out[0], %a\n  %i = mov.s32 -2\n  %b = load %q[%i]\n  store %out[1], %b\n  %j = mov.s64 -3\n  %c = load %q[%j]\n  store %out[2], %c\n  %w = mov.u64 0xffffffffffffffff\n  %d = load %q[%w]\n  store %out[3], %d\n")
        .expect("in bounds");
    assert_eq!(out, vec![109, 108, 107, 109]);
}

#[test]
fn a_negative_index_past_the_start_is_a_kernel_fault() {
    for idx in ["-11", "0xfffffffffffffff0"] {
        let ty = if idx.starts_with('-') { "s64" } else { "u64" };
        let err = run(&format!("  %i = mov.{ty} {idx}\n  %a = load %q[%i]\n  store %out[0], %a\n")).unwrap_err();
        assert!(matches!(err.kind, ErrorKind::KernelFault(_)), "{idx}: {err}");
        assert!(err.to_string().contains("out of bounds") || err.to_string().contains("out-of-bounds"), "{err}");
    }
}

/// A `u64` index whose product with the element size wraps modulo 2^64 addresses what the GPU
/// addresses (the PTX computes `p + i * 4` in 64 bits): 0x4000_0000_0000_0001 * 4 = 4 (mod 2^64),
/// element 1, the same as through `offset`. It used to fault in the interpreter only.
#[test]
fn u64_index_products_wrap_modulo_2_to_the_64() {
    let out = run("  %w = mov.u64 0x4000000000000001\n  %a = load %p[%w]\n  store %out[0], %a\n  %r = offset %p, %w\n  %b = load %r[0]\n  store %out[1], %b\n  %x = mov.u64 0xc000000000000001\n  %c = load %q[%x]\n  store %out[2], %c\n")
        .expect("no fault");
    assert_eq!(&out[..3], &[101, 101, 111]);
    // Wrapping to an address outside the buffer is still a fault.
    let e = run("  %w = mov.u64 0x4000000000000100\n  %a = load %p[%w]\n  store %out[0], %a\n").unwrap_err();
    assert_eq!(e.fault_kind(), Some(kir_interp::FaultKind::OutOfBounds));
}

/// A pointer moved before its buffer and indexed forward into it is an ordinary access (it was
/// an internal error: the fast bounds check and the exact one disagreed on negative offsets).
#[test]
fn a_pointer_moved_before_the_buffer_may_be_indexed_forward_into_it() {
    let out = run("  %m = mov.s32 -2\n  %r = offset %p, %m\n  %five = mov.u32 5\n  %a = load %r[%five]\n  store %out[0], %a\n  store %r[2], %a\n  %b = load %p[0]\n  store %out[1], %b\n")
        .expect("no fault, no internal error");
    assert_eq!(&out[..2], &[103, 103]);
    let e =
        run("  %m = mov.s32 -2\n  %r = offset %p, %m\n  %one = mov.u32 1\n  %a = load %r[%one]\n  store %out[0], %a\n")
            .unwrap_err();
    assert_eq!(e.fault_kind(), Some(kir_interp::FaultKind::OutOfBounds), "{e:?}");
}
