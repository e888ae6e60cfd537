//! `fma-contract` (opt-in): `mul` then `add` become one `fma` only when that is the whole change —
//! single-use round-to-nearest products with matching flush-to-zero — and the interpreter then
//! computes the singly rounded result.

use kir_interp::{Arg, Buffer, LaunchConfig, Options};
use kir_passes::{parse_pipeline, run_on_kernel};
mod verified_launch;

const SRC: &str = r#"
kernel @k(%a: ptr<global, f32>, %out: ptr<global, f32>) {
entry:
  %i = global_id.x
  %x = load %a[%i]
  %m = mul.f32 %x, %x
  %r = add.f32 -1.0, %m
  %m2 = mul.f32 %x, 3.0
  %u = add.f32 %m2, %m2
  %m3 = mul.ftz.f32 %x, %x
  %v = add.f32 %m3, %u
  %m4 = mul.rz.f32 %x, %x
  %w = add.f32 %m4, %v
  %sum = add.f32 %r, %w
  store %out[%i], %sum
  ret
}
"#;

fn contract() -> kir_ir::Kernel {
    let mut m = kir_ir::parse(SRC).unwrap();
    let mut k = m.kernels.remove(0);
    let report = run_on_kernel(&mut k, &parse_pipeline("fma-contract").unwrap()).unwrap();
    assert_eq!(report.steps[0].stats.get("mul+add contracted to fma"), 1);
    k
}

#[test]
fn contracts_only_single_use_round_to_nearest_products() {
    // %m: contracted (operand order kept: fma %x, %x, -1.0). %m2 is used twice, %m3 is ftz while the
    // add is not, %m4 rounds toward zero: all left alone.
    insta::assert_snapshot!(kir_ir::print_kernel(&contract()));
}

#[test]
fn the_contracted_kernel_rounds_once() {
    let k = contract();
    // x = 1 + 2^-12: x*x = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 in f32, so mul then add gives
    // 2^-11 while the fma gives the exact 2^-11 + 2^-24.
    let x = 1.0f32 + f32::EPSILON * 2048.0;
    let mut bufs = vec![Buffer::from_f32(&[x]), Buffer::zeros(kir_ir::ScalarType::F32, 1)];
    verified_launch::launch(
        &k,
        &LaunchConfig::linear(1, 1),
        &[Arg::Buffer(0), Arg::Buffer(1)],
        &mut bufs,
        &Options::default(),
    )
    .unwrap();
    let r = x.mul_add(x, -1.0);
    let u = (x * 3.0) + (x * 3.0);
    let v = (x * x) + u;
    let got = bufs[1].to_f32()[0];
    // Recompute the untouched part exactly as the kernel does (mul.rz of x*x rounds toward zero).
    let xx = x as f64 * x as f64;
    let m4 = {
        let rn = xx as f32;
        if (rn as f64) > xx {
            f32::from_bits(rn.to_bits() - 1)
        } else {
            rn
        }
    };
    let expected = r + (m4 + v);
    assert_eq!(got.to_bits(), expected.to_bits(), "got {got}, expected {expected}");
    // And it differs from the doubly rounded value, so the test can tell the two apart.
    assert_ne!(r.to_bits(), ((x * x) - 1.0).to_bits());
}
