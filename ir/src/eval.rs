//! The semantics of every pure op of kir: the single definition used by constant folding and by
//! the SIMT interpreter. The rules are written out in docs/language.md, "Semantics".
//!
//! Guarantees:
//! - [`eval`] computes a pure op (`Op::is_pure`) on raw operand bits, each zero-extended from its
//!   type's width (`pred` is 0 or 1), and returns the result the same way (never a bit above the
//!   result type's width). On a precondition violation (impure op, wrong operand count, an op/type
//!   combination the verifier rejects) it returns 0 and never panics.
//! - [`eval_lanes`] and [`eval`] agree bit-for-bit for every op and input (tested): both call one
//!   dispatch ([`dispatch`]) that picks, once per op, the closure computing one element, and
//!   [`eval_lanes`] runs that same closure over the lanes of a warp mask.
//! - [`eval_const`] is [`eval`] on typed constants, checking the operand types first.
//! - Float ops are correctly rounded in every rounding mode (`rn rz rm rp`) for f16, bf16, f32 and
//!   f64 (module `float`); `.ftz` applies to f32 only, as in PTX, and flushes a result whose exact
//!   value is subnormal (before rounding). NaN results are the H100's, bit for bit (measured:
//!   tests/hardware/h100, docs/language.md "Semantics"): the canonical NaN (`0x7fff`,
//!   `0x7fffffff`) for f16, bf16 and f32; for f64 the priority NaN operand quieted, or
//!   `0xfff8000000000000` for an invalid operation (module `float`); `cvt` per module `cvt`.
//!   Approximate ops are defined as the correctly rounded exact function (module `approx`);
//!   [`max_ulp_error`] and [`error_bound`] give how far the GPU may be from that.
//! - Integer division by zero gives all ones (what NVIDIA GPUs compute; PTX leaves it unspecified).
//! - Tensor-core dot products ([`dot`], module `tensor_core`) follow the block-FMA model measured
//!   on A100, H100, H200 and B200 (truncating, not correctly rounded), per [`TensorCoreRule`].

mod approx;
mod cvt;
pub mod float;
mod int;
pub mod tensor_core;

pub use approx::{ulp_of, ErrorBound};
pub use float::{Fmt, Mode};
pub use tensor_core::{dot, TensorCoreInput, TensorCoreRule};

use crate::op::{BinOp, CmpOp, FloatFlags, FloatMode, Op, Rounding, UnOp};
use crate::types::{Constant, ScalarType, Type};

/// Evaluates a pure op on raw operand bits (each zero-extended from its type's width, pred = 0/1).
/// The result likewise. Precondition: `op.is_pure()` and `args.len() == op.arity()` (the verifier
/// guarantees it); on violation returns 0 rather than panicking.
pub fn eval(op: &Op, args: &[u64]) -> u64 {
    dispatch(op, Scalar(args))
}

/// The same semantics for a warp: for each lane `l` with bit `l` of `mask` set,
/// `out[l] = eval(op, &[args[0][l], args[1][l], ...])`. Lanes not in `mask` are left untouched.
/// (On a precondition violation the lanes in `mask` are set to 0, as [`eval`] would return.)
pub fn eval_lanes(op: &Op, args: &[&[u64; 32]], out: &mut [u64; 32], mask: u32) {
    dispatch(op, Lanes { args, out, mask })
}

/// Constant folding entry: `None` if the op is not pure, the operand count is wrong, or a
/// constant's type does not match the op's operand type.
pub fn eval_const(op: &Op, args: &[Constant]) -> Option<Constant> {
    if !op.is_pure() || args.len() != op.arity() {
        return None;
    }
    let sig = op.signature();
    for (c, want) in args.iter().zip(&sig.args) {
        if *want != Some(Type::Scalar(c.ty)) {
            return None;
        }
    }
    let ty = sig.result?.scalar()?;
    let bits: Vec<u64> = args.iter().map(|c| c.bits & c.ty.mask()).collect();
    Some(Constant::from_bits(ty, eval(op, &bits)))
}

/// The GPU's maximum error in ulp for an approximate op (`None` for ops kir evaluates exactly and
/// the GPU computes exactly). For ops whose PTX bound is absolute or relative rather than in ulp,
/// the figure is the ulp equivalent where one exists (`rsqrt` 3, `sqrt.approx` 2, `tanh` 8192);
/// `sin`/`cos` have no ulp bound (their error is absolute, unbounded in ulp near zeros) and report
/// `u32::MAX`: compare them with [`within_error_bound`]. Approximate f64 ops report `u32::MAX`
/// (PTX documents no bound).
pub fn max_ulp_error(op: &Op) -> Option<u32> {
    approx::bound(op).map(|b| if b.ulp == 0 { u32::MAX } else { b.ulp })
}

/// The full documented error bound of an approximate op (see [`ErrorBound`]); `None` for exact ops.
pub fn error_bound(op: &Op) -> Option<ErrorBound> {
    approx::bound(op)
}

/// Whether `gpu` (raw result bits from the GPU) is an acceptable result of `op` on `args`: equal to
/// [`eval`]'s bits for exact ops; for approximate ops, NaN where kir gives NaN, the same infinity
/// where kir gives an infinity, and otherwise within [`error_bound`] of kir's result (always true
/// outside the bound's documented input domain). NaN payloads are not compared.
pub fn within_error_bound(op: &Op, args: &[u64], gpu: u64) -> bool {
    let want = eval(op, args);
    let Some(b) = approx::bound(op) else {
        return want == gpu;
    };
    let ty = op.signature().result.and_then(|t| t.scalar());
    let Some(fmt) = ty.and_then(Fmt::of) else {
        return want == gpu;
    };
    let (w, g) = (fmt.to_f64(want), fmt.to_f64(gpu));
    if w.is_nan() || g.is_nan() {
        return w.is_nan() && g.is_nan();
    }
    if w.is_infinite() || g.is_infinite() {
        return w == g;
    }
    if b.ulp == u32::MAX {
        return true;
    }
    let x = args.first().map(|&a| fmt.to_f64(a)).unwrap_or(0.0);
    let x = if matches!(op, Op::Bin(BinOp::Div, ..)) {
        args.get(1).map(|&a| fmt.to_f64(a).abs()).unwrap_or(0.0)
    } else {
        x
    };
    if x < b.domain.0 || x > b.domain.1 {
        return true;
    }
    let err = (w - g).abs();
    let in_abs = b.abs_domain.is_some_and(|(lo, hi)| x >= lo && x <= hi);
    let tol_ulp = b.ulp as f64 * ulp_of(fmt, w);
    let tol = tol_ulp.max(b.rel * w.abs()).max(if in_abs { b.abs } else { 0.0 });
    err <= tol
}

/// What [`dispatch`] hands the per-element closure to: one set of operands, or a warp.
pub trait Sink {
    type Out;
    fn un<F: Fn(u64) -> u64>(self, f: F) -> Self::Out;
    fn bin<F: Fn(u64, u64) -> u64>(self, f: F) -> Self::Out;
    fn ter<F: Fn(u64, u64, u64) -> u64>(self, f: F) -> Self::Out;
    /// A precondition violation: the result is 0.
    fn invalid(self) -> Self::Out;
}

struct Scalar<'a>(&'a [u64]);

impl Sink for Scalar<'_> {
    type Out = u64;
    #[inline(always)]
    fn un<F: Fn(u64) -> u64>(self, f: F) -> u64 {
        match self.0 {
            [a] => f(*a),
            _ => 0,
        }
    }
    #[inline(always)]
    fn bin<F: Fn(u64, u64) -> u64>(self, f: F) -> u64 {
        match self.0 {
            [a, b] => f(*a, *b),
            _ => 0,
        }
    }
    #[inline(always)]
    fn ter<F: Fn(u64, u64, u64) -> u64>(self, f: F) -> u64 {
        match self.0 {
            [a, b, c] => f(*a, *b, *c),
            _ => 0,
        }
    }
    fn invalid(self) -> u64 {
        0
    }
}

struct Lanes<'a, 'b> {
    args: &'a [&'a [u64; 32]],
    out: &'b mut [u64; 32],
    mask: u32,
}

impl Lanes<'_, '_> {
    /// Sets `out[l] = f(l)` for the lanes in the mask. With more than [`SPARSE_LANES`] lanes, `f`
    /// is computed for all 32 lanes (the per-element functions are pure, total and never panic, so
    /// the extra lanes are harmless) and the result is blended into `out` by the mask: the closure
    /// has one direct call site, in a loop with no branch on the mask, so it is inlined and simple
    /// ops vectorize (a per-lane mask test, or one loop for full and one for partial masks, left a
    /// call per lane or an unpredictable branch per lane). A sparse mask runs only its lanes,
    /// through a call per lane, so an expensive op on one lane does not cost 32.
    #[inline(always)]
    fn each(self, f: impl Fn(usize) -> u64) {
        let mask = self.mask;
        if mask.count_ones() <= SPARSE_LANES {
            sparse(&f, mask, self.out);
            return;
        }
        let mut tmp = [0u64; 32];
        for (l, t) in tmp.iter_mut().enumerate() {
            *t = f(l);
        }
        if mask == u32::MAX {
            *self.out = tmp;
        } else {
            for (l, (o, t)) in self.out.iter_mut().zip(tmp).enumerate() {
                if mask >> l & 1 != 0 {
                    *o = t;
                }
            }
        }
    }
}

/// Masks with at most this many lanes compute only their lanes.
const SPARSE_LANES: u32 = 4;

#[inline(never)]
fn sparse(f: &dyn Fn(usize) -> u64, mask: u32, out: &mut [u64; 32]) {
    let mut m = mask;
    while m != 0 {
        let l = m.trailing_zeros() as usize;
        out[l] = f(l);
        m &= m - 1;
    }
}

impl Sink for Lanes<'_, '_> {
    type Out = ();
    #[inline(always)]
    fn un<F: Fn(u64) -> u64>(self, f: F) {
        match self.args {
            [a] => {
                let a = *a;
                self.each(|l| f(a[l]))
            }
            _ => self.invalid(),
        }
    }
    #[inline(always)]
    fn bin<F: Fn(u64, u64) -> u64>(self, f: F) {
        match self.args {
            [a, b] => {
                let (a, b) = (*a, *b);
                self.each(|l| f(a[l], b[l]))
            }
            _ => self.invalid(),
        }
    }
    #[inline(always)]
    fn ter<F: Fn(u64, u64, u64) -> u64>(self, f: F) {
        match self.args {
            [a, b, c] => {
                let (a, b, c) = (*a, *b, *c);
                self.each(|l| f(a[l], b[l], c[l]))
            }
            _ => self.invalid(),
        }
    }
    fn invalid(self) {
        self.each(|_| 0)
    }
}

/// The rounding direction and ftz of a float arithmetic op. `.approx`/`.full` compute the
/// correctly rounded result (`rn`).
#[inline]
fn mode_of(f: &FloatFlags) -> (Mode, bool) {
    let mode = match f.mode {
        FloatMode::Exact(r) => Mode::of(r),
        FloatMode::Approx | FloatMode::Full => Mode::Rn,
    };
    (mode, f.ftz)
}

/// Picks, once, the closure that computes one element of `op`, and hands it to `sink`.
pub fn dispatch<S: Sink>(op: &Op, sink: S) -> S::Out {
    match op {
        Op::Mov(ty) => {
            let m = ty.mask();
            sink.un(move |a| a & m)
        }
        Op::Bin(b, ty, f) => bin(*b, *ty, f, sink),
        Op::MulWide(ty) => {
            if !ty.is_int() || ty.bits() > 32 {
                return sink.invalid();
            }
            let (w, s) = (ty.bits(), ty.is_signed_int());
            sink.bin(move |a, b| int::mul_wide(a, b, w, s))
        }
        Op::Mad(ty) => {
            if !ty.is_int() {
                return sink.invalid();
            }
            let m = ty.mask();
            sink.ter(move |a, b, c| a.wrapping_mul(b).wrapping_add(c) & m)
        }
        Op::Fma(ty, f) => {
            let Some(fmt) = Fmt::of(*ty) else {
                return sink.invalid();
            };
            let (mode, ftz) = mode_of(f);
            match (fmt, mode, ftz) {
                (Fmt::F32, Mode::Rn, false) => sink.ter(|a, b, c| float::fma(Fmt::F32, Mode::Rn, false, a, b, c)),
                (Fmt::F64, Mode::Rn, false) => sink.ter(|a, b, c| float::fma(Fmt::F64, Mode::Rn, false, a, b, c)),
                _ => sink.ter(move |a, b, c| float::fma(fmt, mode, ftz, a, b, c)),
            }
        }
        Op::Unary(u, ty, f) => unary(*u, *ty, f, sink),
        Op::Cmp(c, ty) => cmp(*c, *ty, sink),
        Op::Select(ty) => {
            let m = ty.mask();
            sink.ter(move |c, a, b| if c & 1 != 0 { a & m } else { b & m })
        }
        Op::Cvt { to, from, rounding, sat, ftz } => {
            let (to, from, rounding, sat, ftz) = (*to, *from, *rounding, *sat, *ftz);
            if to.is_pred() || from.is_pred() {
                return sink.invalid();
            }
            sink.un(move |a| cvt::cvt(to, from, rounding, sat, ftz, a & from.mask()))
        }
        Op::Bitcast { to, from } => {
            if to.bits() != from.bits() {
                return sink.invalid();
            }
            let m = to.mask();
            sink.un(move |a| a & m)
        }
        _ => sink.invalid(),
    }
}

fn bin<S: Sink>(op: BinOp, ty: ScalarType, f: &FloatFlags, sink: S) -> S::Out {
    if !op.accepts(ty) {
        return sink.invalid();
    }
    if let Some(fmt) = Fmt::of(ty) {
        let (mode, ftz) = mode_of(f);
        // The common case gets closures with constant format and mode.
        macro_rules! arith {
            ($func:path) => {
                match (fmt, mode, ftz) {
                    (Fmt::F32, Mode::Rn, false) => sink.bin(|a, b| $func(Fmt::F32, Mode::Rn, false, a, b)),
                    (Fmt::F64, Mode::Rn, false) => sink.bin(|a, b| $func(Fmt::F64, Mode::Rn, false, a, b)),
                    _ => sink.bin(move |a, b| $func(fmt, mode, ftz, a, b)),
                }
            };
        }
        return match op {
            BinOp::Add => arith!(float::add),
            BinOp::Sub => arith!(float::sub),
            BinOp::Mul => arith!(float::mul),
            BinOp::Div if fmt == Fmt::F32 && f.mode == FloatMode::Approx => {
                sink.bin(move |a, b| approx::div_approx(ftz, a, b))
            }
            BinOp::Div => arith!(float::div),
            BinOp::Min => sink.bin(move |a, b| float::min(fmt, ftz, a, b)),
            BinOp::Max => sink.bin(move |a, b| float::max(fmt, ftz, a, b)),
            _ => sink.invalid(),
        };
    }
    let (w, s, m) = (ty.bits(), ty.is_signed_int(), ty.mask());
    match op {
        BinOp::Add => sink.bin(move |a, b| a.wrapping_add(b) & m),
        BinOp::Sub => sink.bin(move |a, b| a.wrapping_sub(b) & m),
        BinOp::Mul => sink.bin(move |a, b| a.wrapping_mul(b) & m),
        BinOp::MulHi => sink.bin(move |a, b| int::mul_hi(a, b, w, s)),
        BinOp::Div => sink.bin(move |a, b| int::div(a, b, w, s)),
        BinOp::Rem => sink.bin(move |a, b| int::rem(a, b, w, s)),
        BinOp::Min => sink.bin(move |a, b| int::min(a, b, w, s) & m),
        BinOp::Max => sink.bin(move |a, b| int::max(a, b, w, s) & m),
        BinOp::And => sink.bin(move |a, b| a & b & m),
        BinOp::Or => sink.bin(move |a, b| (a | b) & m),
        BinOp::Xor => sink.bin(move |a, b| (a ^ b) & m),
        BinOp::Shl => sink.bin(move |a, b| int::shl(a, b, w)),
        BinOp::Shr => sink.bin(move |a, b| int::shr(a, b, w, s)),
    }
}

fn unary<S: Sink>(op: UnOp, ty: ScalarType, f: &FloatFlags, sink: S) -> S::Out {
    // Float ops are defined on every float type (`sqrt`, `rcp` and the transcendentals too,
    // although PTX and the verifier take fewer); integer ops per the guards below.
    let m = ty.mask();
    if let Some(fmt) = Fmt::of(ty) {
        let (mode, ftz) = mode_of(f);
        let sign = fmt.sign_bit();
        let flush = move |a: u64| {
            if ftz && fmt == Fmt::F32 {
                fmt.flush(a)
            } else {
                a
            }
        };
        let tf = |func: approx::Func| sink_un_approx(func, fmt, ftz);
        return match op {
            UnOp::Neg => sink.un(move |a| flush(a) ^ sign),
            UnOp::Abs => sink.un(move |a| flush(a) & !sign & m),
            UnOp::Not => sink.invalid(),
            UnOp::Sqrt => sink.un(move |a| float::sqrt(fmt, mode, ftz, a)),
            UnOp::Rcp => sink.un(move |a| float::rcp(fmt, mode, ftz, a)),
            UnOp::Rsqrt => sink.un(tf(approx::Func::Rsqrt)),
            UnOp::Ex2 => sink.un(tf(approx::Func::Ex2)),
            UnOp::Lg2 => sink.un(tf(approx::Func::Lg2)),
            UnOp::Sin => sink.un(tf(approx::Func::Sin)),
            UnOp::Cos => sink.un(tf(approx::Func::Cos)),
            UnOp::Tanh => sink.un(tf(approx::Func::Tanh)),
        };
    }
    let w = ty.bits();
    match op {
        UnOp::Not if ty.is_pred() => sink.un(|a| (a ^ 1) & 1),
        UnOp::Not => sink.un(move |a| !a & m),
        UnOp::Neg if ty.is_signed_int() => sink.un(move |a| a.wrapping_neg() & m),
        UnOp::Abs if ty.is_signed_int() => sink.un(move |a| (int::sext(a, w).wrapping_abs() as u64) & m),
        _ => sink.invalid(),
    }
}

#[inline(always)]
fn sink_un_approx(func: approx::Func, fmt: Fmt, ftz: bool) -> impl Fn(u64) -> u64 {
    move |a| approx::eval(func, fmt, ftz, a)
}

fn cmp<S: Sink>(op: CmpOp, ty: ScalarType, sink: S) -> S::Out {
    use std::cmp::Ordering::*;
    if !op.accepts(ty) {
        return sink.invalid();
    }
    let m = ty.mask();
    if let Some(fmt) = Fmt::of(ty) {
        // One closure per comparison (picked once, not per element), and f32 with a constant
        // format.
        macro_rules! fcmp {
            ($fmt:expr, |$x:ident, $y:ident, $nan:ident| $e:expr) => {
                sink.bin(move |a, b| {
                    let ($x, $y) = ($fmt.to_f64(a & m), $fmt.to_f64(b & m));
                    #[allow(unused_variables)]
                    let $nan = $x.is_nan() || $y.is_nan();
                    ($e) as u64
                })
            };
        }
        macro_rules! by_op {
            ($fmt:expr) => {
                match op {
                    CmpOp::Eq => fcmp!($fmt, |x, y, nan| x == y),
                    CmpOp::Ne => fcmp!($fmt, |x, y, nan| !nan && x != y),
                    CmpOp::Lt => fcmp!($fmt, |x, y, nan| x < y),
                    CmpOp::Le => fcmp!($fmt, |x, y, nan| x <= y),
                    CmpOp::Gt => fcmp!($fmt, |x, y, nan| x > y),
                    CmpOp::Ge => fcmp!($fmt, |x, y, nan| x >= y),
                    CmpOp::Equ => fcmp!($fmt, |x, y, nan| nan || x == y),
                    CmpOp::Neu => fcmp!($fmt, |x, y, nan| x != y),
                    CmpOp::Ltu => fcmp!($fmt, |x, y, nan| nan || x < y),
                    CmpOp::Leu => fcmp!($fmt, |x, y, nan| nan || x <= y),
                    CmpOp::Gtu => fcmp!($fmt, |x, y, nan| nan || x > y),
                    CmpOp::Geu => fcmp!($fmt, |x, y, nan| nan || x >= y),
                    CmpOp::Num => fcmp!($fmt, |x, y, nan| !nan),
                    CmpOp::Nan => fcmp!($fmt, |x, y, nan| nan),
                }
            };
        }
        return match fmt {
            Fmt::F32 => by_op!(Fmt::F32),
            _ => by_op!(fmt),
        };
    }
    let (w, s) = (ty.bits(), ty.is_signed_int());
    let pred = ty.is_pred();
    // One closure per comparison, picked once; 32- and 64-bit integers with constant width and
    // signedness.
    macro_rules! icmp {
        ($pred:expr, $w:expr, $s:expr, |$o:ident| $e:expr) => {
            sink.bin(move |a, b| {
                let $o = if $pred { (a & 1).cmp(&(b & 1)) } else { int::cmp(a, b, $w, $s) };
                ($e) as u64
            })
        };
    }
    macro_rules! by_op {
        ($pred:expr, $w:expr, $s:expr) => {
            match op {
                CmpOp::Eq => icmp!($pred, $w, $s, |o| o == Equal),
                CmpOp::Ne => icmp!($pred, $w, $s, |o| o != Equal),
                CmpOp::Lt => icmp!($pred, $w, $s, |o| o == Less),
                CmpOp::Le => icmp!($pred, $w, $s, |o| o != Greater),
                CmpOp::Gt => icmp!($pred, $w, $s, |o| o == Greater),
                CmpOp::Ge => icmp!($pred, $w, $s, |o| o != Less),
                _ => sink.bin(|_, _| 0),
            }
        };
    }
    match (pred, w, s) {
        (false, 32, false) => by_op!(false, 32, false),
        (false, 32, true) => by_op!(false, 32, true),
        (false, 64, false) => by_op!(false, 64, false),
        (false, 64, true) => by_op!(false, 64, true),
        _ => by_op!(pred, w, s),
    }
}

/// The rounding a `cvt` uses when none is written: `rzi` for float → int, `rn` otherwise.
pub fn cvt_default_rounding(to: ScalarType, from: ScalarType) -> Rounding {
    if from.is_float() && to.is_int() {
        Rounding::Rzi
    } else {
        Rounding::Rn
    }
}
