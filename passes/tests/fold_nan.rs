//! Constant folding produces the H100's bits for NaN results (tests/hardware/h100/ops), since it
//! uses the interpreter's evaluator: a folded `0.0 * inf` in f64 is `0xfff8000000000000`
//! (`mul_f64[50]`), a NaN operand comes out quieted with its payload (`add_f64[3944]`), f32 NaNs
//! are the canonical `0x7fffffff`, and `cvt.s64.f32` of a NaN is `0x8000000000000000`.

use kir_ir::{parse, Constant, Module, Op, Operand, ScalarType};
use kir_passes::{parse_pipeline, run_pipeline_in_place, RunConfig};

fn folded_stores(src: &str) -> Vec<Constant> {
    let mut m: Module = parse(src).unwrap_or_else(|d| panic!("{d:?}"));
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    let mut out = Vec::new();
    run_pipeline_in_place(&mut m, &parse_pipeline("fold").unwrap(), &cfg, &mut out).unwrap();
    let k = m.kernel("k").unwrap();
    let mut vals = Vec::new();
    for (_, i) in k.placed_insts() {
        let inst = k.inst(i);
        if matches!(inst.op, Op::Store) {
            match inst.args.last() {
                Some(Operand::Const(c)) => vals.push(*c),
                other => panic!("store of an unfolded value: {other:?}\n{}", kir_ir::print_kernel(k)),
            }
        }
    }
    vals
}

#[test]
fn folded_nans_are_the_gpus() {
    let src = "
kernel @k(%p: ptr<global, f64>, %q: ptr<global, f32>, %r: ptr<global, s64>) {
entry:
  %inv = mul.f64 0.0, inf
  store %p[0], %inv
  %snan = bitcast.f64.u64 0x7ff0000000000001
  %prop = add.f64 %snan, 0.0
  store %p[1], %prop
  %d = div.rz.f64 0.0, 0.0
  store %p[2], %d
  %pay = bitcast.f32.u32 0x7fc12345
  %c = add.f32 %pay, 1.0
  store %q[0], %c
  %i = cvt.s64.f32 %pay
  store %r[0], %i
  ret
}
";
    let got = folded_stores(src);
    let want = [
        Constant::from_bits(ScalarType::F64, 0xfff8_0000_0000_0000),
        Constant::from_bits(ScalarType::F64, 0x7ff8_0000_0000_0001),
        Constant::from_bits(ScalarType::F64, 0xfff8_0000_0000_0000),
        Constant::from_bits(ScalarType::F32, 0x7fff_ffff),
        Constant::from_bits(ScalarType::S64, 0x8000_0000_0000_0000),
    ];
    assert_eq!(got, want);
}
