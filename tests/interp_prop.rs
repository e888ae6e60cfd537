//! Property: random straight-line u32/f32 programs, run by the interpreter over a warp and a
//! half (so lanes, warps and masks all matter), give what a plain-Rust model of the same program
//! computes, lane by lane. Some integer steps are calls of device functions (`@iop_add(%a, %b)`
//! and so on, one per op, executed with the interpreter's call stack through `kir_interp::launch_verified`), which
//! the model computes like the op itself.

use kir_interp::{Arg, Buffer, LaunchConfig, Options};
use kir_ir::types::ScalarType;
use proptest::prelude::*;
mod verified_launch;
use verified_launch::launch_in;

#[derive(Clone, Debug)]
enum IOp {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Min,
    Max,
    Shl(u32),
    Shr(u32),
}

#[derive(Clone, Debug)]
enum FOp {
    Add,
    Sub,
    Mul,
    Fma,
}

#[derive(Clone, Debug)]
enum Step {
    /// op, operand indices into the int values so far.
    Int(IOp, usize, usize),
    /// The same through a call of the device function computing the op.
    Call(IOp, usize, usize),
    /// op, operand indices into the float values so far.
    Float(FOp, usize, usize, usize),
    /// f32 from an int value (cvt.rn.f32.u32).
    ToFloat(usize),
}

fn iop() -> impl Strategy<Value = IOp> {
    prop_oneof![
        Just(IOp::Add),
        Just(IOp::Sub),
        Just(IOp::Mul),
        Just(IOp::And),
        Just(IOp::Or),
        Just(IOp::Xor),
        Just(IOp::Min),
        Just(IOp::Max),
        (0u32..32).prop_map(IOp::Shl),
        (0u32..32).prop_map(IOp::Shr),
    ]
}

fn fop() -> impl Strategy<Value = FOp> {
    prop_oneof![Just(FOp::Add), Just(FOp::Sub), Just(FOp::Mul), Just(FOp::Fma)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (iop(), any::<usize>(), any::<usize>()).prop_map(|(o, a, b)| Step::Int(o, a, b)),
        1 => (iop(), any::<usize>(), any::<usize>()).prop_map(|(o, a, b)| Step::Call(o, a, b)),
        3 => (fop(), any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(o, a, b, c)| Step::Float(o, a, b, c)),
        1 => any::<usize>().prop_map(Step::ToFloat),
    ]
}

/// The device functions the `Call` steps use: `@iop_NAME(%a: u32, %b: u32) -> u32` computes
/// `NAME.u32 %a, %b` (the shifts take their amount in `%b`).
const FUNCS: &str = "
func @iop_add(%a: u32, %b: u32) -> u32 {
entry:
  %r = add.u32 %a, %b
  ret %r
}
func @iop_sub(%a: u32, %b: u32) -> u32 {
entry:
  %r = sub.u32 %a, %b
  ret %r
}
func @iop_mul(%a: u32, %b: u32) -> u32 {
entry:
  %r = mul.u32 %a, %b
  ret %r
}
func @iop_and(%a: u32, %b: u32) -> u32 {
entry:
  %r = and.u32 %a, %b
  ret %r
}
func @iop_or(%a: u32, %b: u32) -> u32 {
entry:
  %r = or.u32 %a, %b
  ret %r
}
func @iop_xor(%a: u32, %b: u32) -> u32 {
entry:
  %r = xor.u32 %a, %b
  ret %r
}
func @iop_min(%a: u32, %b: u32) -> u32 {
entry:
  %r = min.u32 %a, %b
  ret %r
}
func @iop_max(%a: u32, %b: u32) -> u32 {
entry:
  %r = max.u32 %a, %b
  ret %r
}
func @iop_shl(%a: u32, %b: u32) -> u32 {
entry:
  %r = shl.u32 %a, %b
  ret %r
}
func @iop_shr(%a: u32, %b: u32) -> u32 {
entry:
  %r = shr.u32 %a, %b
  ret %r
}
";

/// The kir text of a program: int values start as [x, y, tid], floats as [f, g].
fn program(steps: &[Step]) -> String {
    let mut s = String::from(FUNCS);
    s.push_str(
        "kernel @p(%x: ptr<global, u32>, %y: ptr<global, u32>, %f: ptr<global, f32>, %g: ptr<global, f32>, %oi: ptr<global, u32>, %of: ptr<global, f32>) {\nentry:\n  %t = tid.x : u32\n  %i0 = load %x[%t]\n  %i1 = load %y[%t]\n  %i2 = mov.u32 %t\n  %f0 = load %f[%t]\n  %f1 = load %g[%t]\n",
    );
    let (mut ni, mut nf) = (3usize, 2usize);
    for st in steps {
        match st {
            Step::Int(op, a, b) => {
                let (a, b) = (a % ni, b % ni);
                let text = match op {
                    IOp::Add => format!("add.u32 %i{a}, %i{b}"),
                    IOp::Sub => format!("sub.u32 %i{a}, %i{b}"),
                    IOp::Mul => format!("mul.u32 %i{a}, %i{b}"),
                    IOp::And => format!("and.u32 %i{a}, %i{b}"),
                    IOp::Or => format!("or.u32 %i{a}, %i{b}"),
                    IOp::Xor => format!("xor.u32 %i{a}, %i{b}"),
                    IOp::Min => format!("min.u32 %i{a}, %i{b}"),
                    IOp::Max => format!("max.u32 %i{a}, %i{b}"),
                    IOp::Shl(k) => format!("shl.u32 %i{a}, {k}"),
                    IOp::Shr(k) => format!("shr.u32 %i{a}, {k}"),
                };
                s.push_str(&format!("  %i{ni} = {text}\n"));
                ni += 1;
            }
            Step::Call(op, a, b) => {
                let (a, b) = (a % ni, b % ni);
                let text = match op {
                    IOp::Add => format!("@iop_add(%i{a}, %i{b})"),
                    IOp::Sub => format!("@iop_sub(%i{a}, %i{b})"),
                    IOp::Mul => format!("@iop_mul(%i{a}, %i{b})"),
                    IOp::And => format!("@iop_and(%i{a}, %i{b})"),
                    IOp::Or => format!("@iop_or(%i{a}, %i{b})"),
                    IOp::Xor => format!("@iop_xor(%i{a}, %i{b})"),
                    IOp::Min => format!("@iop_min(%i{a}, %i{b})"),
                    IOp::Max => format!("@iop_max(%i{a}, %i{b})"),
                    IOp::Shl(k) => format!("@iop_shl(%i{a}, {k})"),
                    IOp::Shr(k) => format!("@iop_shr(%i{a}, {k})"),
                };
                s.push_str(&format!("  %i{ni} = call {text}\n"));
                ni += 1;
            }
            Step::Float(op, a, b, c) => {
                let (a, b, c) = (a % nf, b % nf, c % nf);
                let text = match op {
                    FOp::Add => format!("add.f32 %f{a}, %f{b}"),
                    FOp::Sub => format!("sub.f32 %f{a}, %f{b}"),
                    FOp::Mul => format!("mul.f32 %f{a}, %f{b}"),
                    FOp::Fma => format!("fma.f32 %f{a}, %f{b}, %f{c}"),
                };
                s.push_str(&format!("  %f{nf} = {text}\n"));
                nf += 1;
            }
            Step::ToFloat(a) => {
                s.push_str(&format!("  %f{nf} = cvt.rn.f32.u32 %i{}\n", a % ni));
                nf += 1;
            }
        }
    }
    s.push_str(&format!("  store %oi[%t], %i{}\n  store %of[%t], %f{}\n  ret\n}}\n", ni - 1, nf - 1));
    s
}

/// The plain-Rust model of one lane.
fn model(steps: &[Step], x: u32, y: u32, t: u32, f: f32, g: f32) -> (u32, f32) {
    let mut iv = vec![x, y, t];
    let mut fv = vec![f, g];
    for st in steps {
        match st {
            Step::Int(op, a, b) | Step::Call(op, a, b) => {
                let (a, b) = (iv[a % iv.len()], iv[b % iv.len()]);
                iv.push(match op {
                    IOp::Add => a.wrapping_add(b),
                    IOp::Sub => a.wrapping_sub(b),
                    IOp::Mul => a.wrapping_mul(b),
                    IOp::And => a & b,
                    IOp::Or => a | b,
                    IOp::Xor => a ^ b,
                    IOp::Min => a.min(b),
                    IOp::Max => a.max(b),
                    IOp::Shl(k) => a << k,
                    IOp::Shr(k) => a >> k,
                });
            }
            Step::Float(op, a, b, c) => {
                let n = fv.len();
                let (a, b, c) = (fv[a % n], fv[b % n], fv[c % n]);
                fv.push(match op {
                    FOp::Add => a + b,
                    FOp::Sub => a - b,
                    FOp::Mul => a * b,
                    FOp::Fma => a.mul_add(b, c),
                });
            }
            Step::ToFloat(a) => {
                let v = iv[a % iv.len()];
                fv.push(v as f32);
            }
        }
    }
    (*iv.last().unwrap(), *fv.last().unwrap())
}

const LANES: usize = 48;

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn straight_line_programs_match_the_model(
        steps in prop::collection::vec(step(), 1..24),
        xs in prop::collection::vec(any::<u32>(), LANES),
        ys in prop::collection::vec(any::<u32>(), LANES),
        fs in prop::collection::vec(prop_oneof![any::<f32>(), -4.0f32..4.0, Just(-0.0f32), Just(f32::INFINITY)], LANES),
        gs in prop::collection::vec(prop_oneof![any::<f32>(), -4.0f32..4.0, Just(0.0f32), Just(f32::NAN)], LANES),
    ) {
        let src = program(&steps);
        let m = kir_ir::parse(&src).map_err(|d| TestCaseError::fail(format!("{d:?}\n{src}")))?;
        let diags = kir_ir::verify::verify_module(&m);
        prop_assert!(!kir_ir::diag::has_errors(&diags), "{diags:?}\n{src}");
        let mut bufs = vec![
            Buffer::from_u32(&xs),
            Buffer::from_u32(&ys),
            Buffer::from_f32(&fs),
            Buffer::from_f32(&gs),
            Buffer::zeros(ScalarType::U32, LANES),
            Buffer::zeros(ScalarType::F32, LANES),
        ];
        let args: Vec<Arg> = (0..6).map(Arg::Buffer).collect();
        launch_in(&m.funcs, &m.kernels[0], &LaunchConfig::linear(1, LANES as u32), &args, &mut bufs, &Options::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
        let (oi, of) = (bufs[4].to_u32(), bufs[5].to_f32());
        for t in 0..LANES {
            let (wi, wf) = model(&steps, xs[t], ys[t], t as u32, fs[t], gs[t]);
            prop_assert_eq!(oi[t], wi, "lane {} int\n{}", t, src);
            // NaN payloads may differ (the GPU's NaN is canonical); everything else bit for bit.
            prop_assert!(
                (of[t].is_nan() && wf.is_nan()) || of[t].to_bits() == wf.to_bits(),
                "lane {} float: got {:?} want {:?}\n{}", t, of[t], wf, src
            );
        }
    }
}
