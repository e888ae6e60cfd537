//! Error enclosures: for each value, every result the hardware may produce, given that its
//! approximate ops (`ex2 lg2 rsqrt rcp.approx sqrt.approx div.approx div.full sin cos tanh`) may
//! return anything within their measured error bounds (`kir_ir::eval::error_bound`, docs/language.md
//! "Approximate ops") and every other op is exactly the evaluator's.
//!
//! Guarantees:
//! - An [`Enc`] of a value `v` (bits of its type) is `Exact` (the hardware gives `v`'s bits), a
//!   `Range` `[lo, hi]` of values of a float type (bits; `lo <= v <= hi` numerically, `-0 == +0`;
//!   never NaN) that holds every result the hardware may give, or `Unknown` (the enclosure cannot be
//!   bounded: an integer or predicate that depends on where in a range a value lies, a possible NaN
//!   or pole, an approximate op outside its measured domain or without a bound), with the
//!   instruction that made it so.
//! - [`pure`] is sound for every pure op: ops monotone in each operand on the enclosed box
//!   (`add sub mul div fma min max neg sqrt rcp cvt` and the approximate ops but `sin`/`cos`) are
//!   evaluated by `kir_ir::eval` itself at every corner of the operands' enclosures, so rounding
//!   modes, `.ftz` and formats are the evaluator's, exactly; `abs` splits at zero, `sin`/`cos` add
//!   their extrema; comparisons are certain only when every point of the box gives the same answer;
//!   `select` with an uncertain condition is the hull of both sides. An approximate op then widens
//!   its enclosure by its bound at the enclosure's ends, rounded outward to its format.
//! - Widths never hide a value: the result's enclosure always contains the evaluator's own result.
//! - Vectors keep an enclosure per element (`crate::exec::ext`, in the enclosure program's
//!   element slots of `crate::prog`): built, extracted, inserted, loaded, stored, copied by
//!   `cp.async`, passed along block-parameter edges and returned from functions element by
//!   element, so an approximate value stored with `store.v4` keeps its range and its neighbours
//!   stay exact. An element of an integer type (a bit pattern) is `Exact` or `Unknown`.
//!   Tensor-core fragments are tracked coarsely, by choice: an `mma` result is exact when every
//!   element of its operands in all 32 lanes is, else unknown (its inputs are bit patterns; the
//!   tensor-core arithmetic is exact in the sense above: the interpreter computes the hardware's
//!   bits), and an `ldmatrix` result is exact when every row it read is. Sound, never a range that
//!   misses a value: an unknown enclosure only gives up precision. The plain launch pays nothing
//!   for this: element slots exist only in the enclosure run's programs.
//! - `origin` is the approximate op whose error the range started from (the first on its data
//!   path); `amp` the last exact op that widened a range by 4x or more (in units in the last
//!   place), e.g. a subtraction that cancels or a multiplication by a large factor.

use kir_ir::eval::{self, Fmt};
use kir_ir::op::{BinOp, CmpOp, Op, UnOp};
use kir_ir::types::ScalarType;
use kir_ir::Span;

/// The enclosure of one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Enc {
    /// The hardware computes exactly the interpreter's bits.
    #[default]
    Exact,
    /// Any value of the float type from `lo` to `hi` (bits), the interpreter's included.
    Range { lo: u64, hi: u64, origin: Span, amp: Span },
    /// Not boundable: `why`, decided at instruction `at`.
    Unknown { at: Span, why: Why },
}

/// Why an enclosure cannot be bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// A comparison whose operands' enclosures give both answers.
    Compare,
    /// A float-to-integer conversion whose enclosure spans several integers.
    ToInteger,
    /// An approximate op without a measured bound (types other than f32).
    NoBound,
    /// An approximate op whose operand may lie outside the domain its bound was measured on.
    OutsideDomain,
    /// A result that may be NaN for some values of its operands' enclosures but is not here.
    MayBeNan,
    /// A division, reciprocal or reciprocal square root whose operand's enclosure contains zero.
    Pole,
    /// Bits of an uncertain value used as bits (bitcast, integer or bitwise op).
    Bits,
    /// A float value with an error range, where only an exact value can be used.
    Inexact,
}

impl Why {
    /// What happened, for messages ("... at line 12: {describe}").
    pub fn describe(self) -> &'static str {
        match self {
            Why::Compare => "a comparison whose answer the approximate ops' errors can change",
            Why::ToInteger => "a float-to-integer conversion whose result the approximate ops' errors can change",
            Why::NoBound => "an approximate op with no measured error bound (only f32 ones are measured)",
            Why::OutsideDomain => "an approximate op whose operand may lie outside the domain its bound holds on",
            Why::MayBeNan => "a result that may be NaN within the approximate ops' errors",
            Why::Pole => "a division or reciprocal whose operand may be zero within the approximate ops' errors",
            Why::Bits => "the bits of a value the approximate ops' errors can change, used as bits",
            Why::Inexact => "a value the approximate ops' errors can change",
        }
    }
}

/// Why a launch's enclosures cannot be trusted: the first place where an uncertain value decided
/// something the interpreter cannot follow both ways (a branch, an address, an atomic, a vote, a
/// shuffle's lane or mask). The hardware may have taken the other way, so no enclosure of the
/// launch holds for sure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unusable {
    /// The instruction (or branch) that used the uncertain value.
    pub at: Span,
    /// What it used it for ("a branch condition", ...).
    pub what: &'static str,
    /// Where the value became uncertain, and how.
    pub cause: (Span, Why),
}

/// The enclosures of a launch's results: per buffer, the elements whose enclosure is not exact
/// (byte offset, access size, enclosure), in byte order; and, if any, why none holds for sure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Enclosures {
    pub buffers: Vec<Vec<(usize, u32, Enc)>>,
    pub unusable: Option<Unusable>,
}

/// Non-exact enclosures of one memory (a global buffer, or a block's shared memory): byte offset
/// → (access size, enclosure). Bytes not in it hold exactly the interpreter's values.
#[derive(Clone, Debug, Default)]
pub(crate) struct MemEnc(std::collections::BTreeMap<usize, (u32, Enc)>);

impl MemEnc {
    /// The enclosure of a load of `size` bytes at `byte` by instruction `at` (exact when nothing
    /// overlaps; unknown, at `at`, when a store of another shape overlaps it).
    pub fn load(&self, byte: usize, size: u32, at: Span) -> Enc {
        let mut it = self.0.range(byte.saturating_sub(7)..byte + size as usize);
        let mut found = Enc::Exact;
        for (&b, &(sz, e)) in &mut it {
            if b + sz as usize <= byte {
                continue;
            }
            if b == byte && sz == size {
                found = e;
            } else {
                return Enc::Unknown { at, why: Why::Bits };
            }
        }
        found
    }

    /// A store of `size` bytes at `byte` with enclosure `e`.
    pub fn store(&mut self, byte: usize, size: u32, e: Enc) {
        let stale: Vec<usize> = self
            .0
            .range(byte.saturating_sub(7)..byte + size as usize)
            .filter(|(&b, &(sz, _))| b + sz as usize > byte)
            .map(|(&b, _)| b)
            .collect();
        for b in stale {
            self.0.remove(&b);
        }
        if !e.is_exact() {
            self.0.insert(byte, (size, e));
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn entries(&self) -> Vec<(usize, u32, Enc)> {
        self.0.iter().map(|(&b, &(s, e))| (b, s, e)).collect()
    }
}

/// What the blocks of an enclosure launch share: the global buffers' enclosures and the first
/// reason they cannot be trusted.
#[derive(Debug, Default)]
pub(crate) struct EncShared {
    pub global: Vec<std::sync::Mutex<MemEnc>>,
    pub unusable: std::sync::Mutex<Option<Unusable>>,
}

impl EncShared {
    pub fn new(nbuffers: usize) -> EncShared {
        EncShared { global: (0..nbuffers).map(|_| Default::default()).collect(), unusable: Default::default() }
    }

    /// Records `u` unless an earlier reason is known.
    pub fn unusable(&self, u: Unusable) {
        let mut slot = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(u);
        }
    }

    pub fn into_enclosures(self) -> Enclosures {
        Enclosures {
            buffers: self
                .global
                .into_iter()
                .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()).entries())
                .collect(),
            unusable: self.unusable.into_inner().unwrap_or_else(|p| p.into_inner()),
        }
    }
}

impl Enc {
    pub fn is_exact(&self) -> bool {
        matches!(self, Enc::Exact)
    }

    /// The ends of the enclosure of value `v` (`v, v` when exact).
    pub fn ends(&self, v: u64) -> (u64, u64) {
        match *self {
            Enc::Range { lo, hi, .. } => (lo, hi),
            _ => (v, v),
        }
    }
}

/// The float format of `ty`, if it is a float type.
fn fmt_of(ty: ScalarType) -> Option<Fmt> {
    Fmt::of(ty)
}

/// Numeric value of bits of format `f`.
#[inline]
fn val(f: Fmt, bits: u64) -> f64 {
    match f {
        Fmt::F32 => f32::from_bits(bits as u32) as f64,
        Fmt::F64 => f64::from_bits(bits),
        _ => f.to_f64(bits),
    }
}

/// `kir_ir::eval::ulp_of` without its logarithm: the spacing of format `f` around `|y|`, from the
/// exponent bits of `y` (this runs for every lane of every inexact op).
pub fn ulp_of(f: Fmt, y: f64) -> f64 {
    let (p, emin) = match f {
        Fmt::F16 => (11, -14),
        Fmt::BF16 => (8, -126),
        Fmt::F32 => (24, -126),
        Fmt::F64 => (53, -1022),
    };
    let biased = ((y.abs().to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0x7ff {
        return f64::INFINITY;
    }
    let e = (biased - 1023).max(emin);
    let k = e - (p - 1);
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        2f64.powi(k)
    }
}

/// Width of `[lo, hi]` in units in the last place at its larger end.
fn ulps(f: Fmt, lo: u64, hi: u64) -> f64 {
    let (l, h) = (val(f, lo), val(f, hi));
    let u = ulp_of(f, l.abs().max(h.abs()));
    if u > 0.0 && (h - l).is_finite() {
        (h - l) / u
    } else {
        0.0
    }
}

/// The format's value nearest `x` toward -inf (`down`) or +inf, as bits.
fn outward(f: Fmt, x: f64, down: bool) -> u64 {
    let from = |b: u64| val(f, b);
    let mut b = eval::float::convert(Fmt::F64, f, eval::Mode::Rn, x.to_bits());
    if f.is_nan(b) {
        return b;
    }
    // Step once outward if rounding to nearest went the wrong way (one step suffices).
    let step = |b: u64, up: bool| -> u64 {
        let neg = f.is_neg(b);
        let mag = b & !f.sign_bit();
        if mag == 0 {
            // From a zero: the smallest subnormal of the step's sign.
            return if up { 1 } else { f.sign_bit() | 1 };
        }
        if up != neg {
            b + 1
        } else {
            b - 1
        }
    };
    if down && from(b) > x {
        b = step(b, false);
    } else if !down && from(b) < x {
        b = step(b, true);
    }
    b
}

/// The lesser (`lo`) / greater of two non-NaN values of format `f`, `-0` below `+0`.
fn less(f: Fmt, a: u64, b: u64) -> bool {
    let (x, y) = (val(f, a), val(f, b));
    x < y || (x == y && f.is_neg(a) && !f.is_neg(b))
}

/// The enclosure of `op`'s result `value` for one lane, whose operands `args` have enclosures
/// `encs` (not all exact, or `op` approximate), at instruction `at`.
pub fn pure(op: &Op, args: &[u64], encs: &[Enc], value: u64, at: Span) -> Enc {
    if let Some(u) = encs.iter().find(|e| matches!(e, Enc::Unknown { .. })) {
        // `select` may not need the unknown side; everything else depends on it.
        if !matches!(op, Op::Select(_)) {
            return *u;
        }
    }
    match *op {
        Op::Mov(_) => encs[0],
        Op::Select(ty) => select(ty, args, encs, value),
        Op::Cmp(c, ty) => compare(c, ty, args, encs, at),
        Op::Cvt { to, from, .. } => match (fmt_of(to), fmt_of(from)) {
            (Some(_), Some(_)) => monotone(op, to, args, encs, value, at),
            (None, Some(_)) => {
                if corner_results(op, args, encs).iter().all(|&r| r == value) {
                    Enc::Exact
                } else {
                    Enc::Unknown { at, why: Why::ToInteger }
                }
            }
            _ => Enc::Unknown { at, why: Why::Bits },
        },
        Op::Bin(b, ty, _) if ty.is_float() => match b {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Min | BinOp::Max => monotone(op, ty, args, encs, value, at),
            BinOp::Div => {
                if spans_zero(ty, args[1], &encs[1]) {
                    Enc::Unknown { at, why: Why::Pole }
                } else {
                    monotone(op, ty, args, encs, value, at)
                }
            }
            _ => Enc::Unknown { at, why: Why::Bits },
        },
        Op::Fma(ty, _) => monotone(op, ty, args, encs, value, at),
        Op::Unary(u, ty, _) if ty.is_float() => match u {
            UnOp::Neg | UnOp::Sqrt | UnOp::Ex2 | UnOp::Lg2 | UnOp::Tanh => monotone(op, ty, args, encs, value, at),
            UnOp::Rcp | UnOp::Rsqrt => {
                if spans_zero(ty, args[0], &encs[0]) {
                    Enc::Unknown { at, why: Why::Pole }
                } else {
                    monotone(op, ty, args, encs, value, at)
                }
            }
            UnOp::Abs => abs(op, ty, args, encs, value, at),
            UnOp::Sin | UnOp::Cos => sin_cos(op, u, ty, args, encs, value, at),
            UnOp::Not => Enc::Unknown { at, why: Why::Bits },
        },
        _ => Enc::Unknown { at, why: Why::Bits },
    }
}

/// Whether the enclosure of `v` (type `ty`) contains zero without being the point zero.
fn spans_zero(ty: ScalarType, v: u64, e: &Enc) -> bool {
    let Some(f) = fmt_of(ty) else { return false };
    let (lo, hi) = e.ends(v);
    lo != hi && val(f, lo) <= 0.0 && val(f, hi) >= 0.0
}

/// The results of an op at the corners of its operands' box (at most 8: three operands).
struct Corners {
    vals: [u64; 8],
    len: usize,
}

impl std::ops::Deref for Corners {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.vals[..self.len]
    }
}

/// `op` at every corner of its operands' enclosures (a point operand has one corner).
fn corner_results(op: &Op, args: &[u64], encs: &[Enc]) -> Corners {
    let n = args.len().min(3);
    let mut ends = [(0u64, 0u64); 3];
    for i in 0..n {
        ends[i] = encs[i].ends(args[i]);
    }
    let mut out = Corners { vals: [0; 8], len: 0 };
    let mut x = [0u64; 3];
    for mask in 0..1u32 << n {
        if (0..n).any(|i| mask >> i & 1 == 1 && ends[i].0 == ends[i].1) {
            continue; // A point operand has one corner.
        }
        for i in 0..n {
            x[i] = if mask >> i & 1 == 1 { ends[i].1 } else { ends[i].0 };
        }
        out.vals[out.len] = eval::eval(op, &x[..n]);
        out.len += 1;
    }
    out
}

/// An op monotone in each operand on the box: its result at the corners, hull with `value`, then
/// widened by the op's error bound if it is approximate.
fn monotone(op: &Op, ty: ScalarType, args: &[u64], encs: &[Enc], value: u64, at: Span) -> Enc {
    let Some(f) = fmt_of(ty) else { return Enc::Unknown { at, why: Why::Bits } };
    let rs = corner_results(op, args, encs);
    let nans = rs.iter().filter(|&&r| f.is_nan(r)).count();
    if nans > 0 {
        // NaN for every value of the box (an invalid operation at every corner, so everywhere:
        // the ops are monotone) is as certain as the interpreter's own NaN.
        return if nans == rs.len() && f.is_nan(value) && !op.is_approx() {
            Enc::Exact
        } else {
            Enc::Unknown { at, why: Why::MayBeNan }
        };
    }
    let mut lo = value;
    let mut hi = value;
    for &r in rs.iter() {
        if less(f, r, lo) {
            lo = r;
        }
        if less(f, hi, r) {
            hi = r;
        }
    }
    finish(op, f, args, encs, lo, hi, at)
}

/// `abs`: monotone on each side of zero.
fn abs(op: &Op, ty: ScalarType, args: &[u64], encs: &[Enc], value: u64, at: Span) -> Enc {
    let Some(f) = fmt_of(ty) else { return Enc::Unknown { at, why: Why::Bits } };
    let (lo, hi) = encs[0].ends(args[0]);
    if val(f, lo) < 0.0 && val(f, hi) > 0.0 {
        let top = if val(f, lo).abs() > val(f, hi) { lo & !f.sign_bit() } else { hi };
        return finish(op, f, args, encs, 0, top, at);
    }
    monotone(op, ty, args, encs, value, at)
}

/// `sin`/`cos` (approximate, f32): the ends' values and every extremum inside the enclosure.
fn sin_cos(op: &Op, u: UnOp, ty: ScalarType, args: &[u64], encs: &[Enc], value: u64, at: Span) -> Enc {
    let Some(f) = fmt_of(ty) else { return Enc::Unknown { at, why: Why::Bits } };
    let (lo, hi) = encs[0].ends(args[0]);
    let (xl, xh) = (val(f, lo), val(f, hi));
    // Outside the measured domain (|x| <= 100 pi) the GPU's result means nothing.
    let domain = eval::error_bound(op).map_or((f64::NEG_INFINITY, f64::INFINITY), |b| b.domain);
    if !(xl >= domain.0 && xh <= domain.1 && xl.is_finite() && xh.is_finite()) {
        return Enc::Unknown { at, why: Why::OutsideDomain };
    }
    let g = |x: f64| if u == UnOp::Sin { x.sin() } else { x.cos() };
    let (mut yl, mut yh) = (g(xl).min(g(xh)), g(xl).max(g(xh)));
    for &r in &[eval::eval(op, &[lo]), eval::eval(op, &[hi]), value] {
        yl = yl.min(val(f, r));
        yh = yh.max(val(f, r));
    }
    // Extrema: sin at pi/2 + k pi, cos at k pi.
    let half_pi = std::f64::consts::FRAC_PI_2;
    let shift = if u == UnOp::Sin { half_pi } else { 0.0 };
    let k0 = ((xl - shift) / std::f64::consts::PI).ceil();
    // Two consecutive extrema are +1 and -1: at most two matter.
    for i in 0..2 {
        let x = shift + (k0 + i as f64) * std::f64::consts::PI;
        if x > xh {
            break;
        }
        let y = g(x).round();
        yl = yl.min(y);
        yh = yh.max(y);
    }
    // One ulp more for the host's libm against the correctly rounded value at an extremum.
    let one = ulp_of(f, 1.0);
    let (l, h) = (outward(f, (yl - one).max(-1.0), true), outward(f, (yh + one).min(1.0), false));
    finish(op, f, args, encs, l, h, at)
}

/// `select c, a, b`: the chosen side's enclosure, or, when `c` is uncertain, the hull of both.
fn select(ty: ScalarType, args: &[u64], encs: &[Enc], value: u64) -> Enc {
    let pick = |i: usize| encs[i];
    match encs[0] {
        Enc::Exact => pick(if args[0] & 1 == 1 { 1 } else { 2 }),
        Enc::Range { .. } => Enc::Unknown { at: Span::DUMMY, why: Why::Bits },
        Enc::Unknown { at, why } => {
            let (a, b) = (encs[1], encs[2]);
            if matches!(a, Enc::Unknown { .. }) {
                return a;
            }
            if matches!(b, Enc::Unknown { .. }) {
                return b;
            }
            let Some(f) = fmt_of(ty) else {
                return if a.is_exact() && b.is_exact() && args[1] == args[2] {
                    Enc::Exact
                } else {
                    Enc::Unknown { at, why }
                };
            };
            if f.is_nan(args[1]) || f.is_nan(args[2]) {
                return Enc::Unknown { at, why };
            }
            let ((al, ah), (bl, bh)) = (a.ends(args[1]), b.ends(args[2]));
            let lo = if less(f, bl, al) { bl } else { al };
            let hi = if less(f, ah, bh) { bh } else { ah };
            let (lo, hi) = (if less(f, value, lo) { value } else { lo }, if less(f, hi, value) { value } else { hi });
            if lo == hi {
                return Enc::Exact;
            }
            let (origin, amp) = provenance(&[a, b]);
            Enc::Range { lo, hi, origin: if origin.is_dummy() { at } else { origin }, amp }
        }
    }
}

/// A comparison: certain when every point of the operands' box gives the interpreter's answer.
fn compare(c: CmpOp, ty: ScalarType, args: &[u64], encs: &[Enc], at: Span) -> Enc {
    let Some(f) = fmt_of(ty) else { return Enc::Unknown { at, why: Why::Bits } };
    let ((al, ah), (bl, bh)) = (encs[0].ends(args[0]), encs[1].ends(args[1]));
    let certain = match c {
        // Ranges hold no NaN: NaN-ness is the interpreter's.
        CmpOp::Num | CmpOp::Nan => true,
        // (In)equality is certain only for disjoint ranges (never equal) or equal points.
        CmpOp::Eq | CmpOp::Ne | CmpOp::Equ | CmpOp::Neu => {
            (al == ah && bl == bh) || val(f, ah) < val(f, bl) || val(f, bh) < val(f, al)
        }
        // Orderings are monotone in each operand: the corners decide.
        _ => {
            let op = Op::Cmp(c, ty);
            let rs = corner_results(&op, args, encs);
            rs.windows(2).all(|w| w[0] == w[1])
        }
    };
    if certain {
        Enc::Exact
    } else {
        Enc::Unknown { at, why: Why::Compare }
    }
}

/// The origin and amplification of the widest of `encs`' ranges.
fn provenance(encs: &[Enc]) -> (Span, Span) {
    let mut best: Option<(Span, Span)> = None;
    for e in encs {
        if let Enc::Range { origin, amp, .. } = *e {
            if best.is_none() || (best.is_some_and(|b| b.1.is_dummy()) && !amp.is_dummy()) {
                best = Some((origin, amp));
            }
        }
    }
    best.unwrap_or((Span::DUMMY, Span::DUMMY))
}

/// Finishes the enclosure `[lo, hi]` of `op`'s result: widened by the op's error bound when it is
/// approximate, with its origin and amplification.
fn finish(op: &Op, f: Fmt, args: &[u64], encs: &[Enc], lo: u64, hi: u64, at: Span) -> Enc {
    let (origin, amp) = provenance(encs);
    let (mut lo, mut hi) = (lo, hi);
    let mut origin = origin;
    let mut amp = amp;
    if op.is_approx() {
        match widen(op, f, args, encs, lo, hi) {
            Ok((l, h)) => (lo, hi) = (l, h),
            Err(why) => return Enc::Unknown { at, why },
        }
        if origin.is_dummy() {
            origin = at;
        }
    } else {
        let widest_in = args
            .iter()
            .zip(encs)
            .filter_map(|(&a, e)| match e {
                Enc::Range { lo, hi, .. } => {
                    let ty_f = op_operand_fmt(op).unwrap_or(f);
                    let _ = a;
                    Some(ulps(ty_f, *lo, *hi))
                }
                _ => None,
            })
            .fold(0.0f64, f64::max);
        let out = ulps(f, lo, hi);
        if out >= 4.0 && out >= 4.0 * widest_in {
            amp = at;
        }
    }
    if lo == hi {
        return Enc::Exact;
    }
    if origin.is_dummy() {
        origin = at;
    }
    Enc::Range { lo, hi, origin, amp }
}

/// The float format of `op`'s (first) operand, where it differs from the result's (`cvt`).
fn op_operand_fmt(op: &Op) -> Option<Fmt> {
    match *op {
        Op::Cvt { from, .. } => fmt_of(from),
        _ => None,
    }
}

/// `[lo, hi]` (results of the correctly rounded function at the operands' enclosure) widened by
/// the approximate op's measured bound, rounded outward; `Err` when the op has no bound or an
/// operand may lie outside the domain it was measured on.
fn widen(op: &Op, f: Fmt, args: &[u64], encs: &[Enc], lo: u64, hi: u64) -> Result<(u64, u64), Why> {
    let Some(b) = eval::error_bound(op) else { return Ok((lo, hi)) };
    if b.ulp == u32::MAX || f != Fmt::F32 {
        return Err(Why::NoBound);
    }
    // The operand the bound's domain is about: the divisor's magnitude for `div`, else the first.
    let (x_lo, x_hi) = {
        let i = if matches!(op, Op::Bin(BinOp::Div, ..)) { 1 } else { 0 };
        let (l, h) = encs[i].ends(args[i]);
        let (l, h) = (val(f, l), val(f, h));
        if i == 1 {
            let (a, b2) = (l.abs(), h.abs());
            if l <= 0.0 && h >= 0.0 {
                (0.0, a.max(b2))
            } else {
                (a.min(b2), a.max(b2))
            }
        } else {
            (l, h)
        }
    };
    if x_lo < b.domain.0 || x_hi > b.domain.1 {
        return Err(Why::OutsideDomain);
    }
    let in_abs = b.abs_domain.is_some_and(|(dl, dh)| x_hi >= dl && x_lo <= dh);
    let tol_at = |y: f64| {
        let t = (b.ulp as f64 * ulp_of(f, y)).max(b.rel * y.abs());
        if in_abs {
            t.max(b.abs)
        } else {
            t
        }
    };
    let (yl, yh) = (val(f, lo), val(f, hi));
    let tol = [yl, yh].iter().filter(|y| y.is_finite()).map(|&y| tol_at(y)).fold(0.0f64, f64::max);
    let mut l = if yl.is_finite() { outward(f, yl - tol, true) } else { lo };
    let mut h = if yh.is_finite() { outward(f, yh + tol, false) } else { hi };
    // `.ftz`: the GPU may flush a result the evaluator rounds up to the smallest normal (2^23
    // ulp apart): a range that comes that near zero holds zero too.
    let ftz = matches!(op, Op::Bin(_, _, fl) | Op::Unary(_, _, fl) | Op::Fma(_, fl) if fl.ftz);
    let tiny = 2f64.powi(-125);
    if ftz && val(f, l) < tiny && val(f, h) > -tiny {
        if val(f, l) > 0.0 {
            l = 0;
        }
        if val(f, h) < 0.0 {
            h = f.sign_bit();
        }
    }
    Ok((l, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kir_ir::op::{FloatFlags, FloatMode, Rounding};

    const AT: Span = Span { start: 1, end: 2 };

    fn f32b(x: f32) -> u64 {
        x.to_bits() as u64
    }

    fn range(lo: f32, hi: f32) -> Enc {
        Enc::Range { lo: f32b(lo), hi: f32b(hi), origin: AT, amp: Span::DUMMY }
    }

    fn ends(e: Enc) -> (f32, f32) {
        match e {
            Enc::Range { lo, hi, .. } => (f32::from_bits(lo as u32), f32::from_bits(hi as u32)),
            other => panic!("not a range: {other:?}"),
        }
    }

    const RN: FloatFlags = FloatFlags { mode: FloatMode::Exact(Rounding::Rn), ftz: false };

    /// Soundness on random boxes: the op at random points of the operands' enclosures (what the
    /// hardware could compute exactly there) always lies in the result's enclosure.
    #[test]
    fn exact_ops_enclose_every_point_of_the_box() {
        let ops = [
            Op::Bin(BinOp::Add, ScalarType::F32, RN),
            Op::Bin(BinOp::Sub, ScalarType::F32, RN),
            Op::Bin(BinOp::Mul, ScalarType::F32, RN),
            Op::Bin(BinOp::Div, ScalarType::F32, RN),
            Op::Bin(BinOp::Min, ScalarType::F32, RN),
            Op::Fma(ScalarType::F32, RN),
            Op::Unary(UnOp::Abs, ScalarType::F32, RN),
            Op::Unary(UnOp::Sqrt, ScalarType::F32, RN),
        ];
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut checked = 0;
        for op in &ops {
            for _ in 0..2000 {
                let n = op.arity();
                let mut args = [0u64; 3];
                let mut encs = [Enc::Exact; 3];
                for i in 0..n {
                    let c = (next() % 2000) as f32 / 100.0 - 10.0;
                    let w = (next() % 100) as f32 / 1000.0;
                    args[i] = f32b(c);
                    if next() % 3 != 0 {
                        encs[i] = range(c - w, c + w);
                    }
                }
                let v = eval::eval(op, &args[..n]);
                let e = pure(op, &args[..n], &encs[..n], v, AT);
                for _ in 0..20 {
                    let mut p = [0u64; 3];
                    for i in 0..n {
                        let (lo, hi) = match encs[i] {
                            Enc::Range { lo, hi, .. } => (f32::from_bits(lo as u32), f32::from_bits(hi as u32)),
                            _ => (f32::from_bits(args[i] as u32), f32::from_bits(args[i] as u32)),
                        };
                        let t = (next() % 1001) as f32 / 1000.0;
                        p[i] = f32b(lo + (hi - lo) * t);
                    }
                    let r = f32::from_bits(eval::eval(op, &p[..n]) as u32);
                    match e {
                        Enc::Exact => assert_eq!(r.to_bits() as u64, v, "{op:?} {p:?}"),
                        Enc::Range { .. } => {
                            let (l, h) = ends(e);
                            assert!(l <= r && r <= h, "{op:?}: {r} outside [{l}, {h}]");
                        }
                        Enc::Unknown { .. } => {}
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 100_000);
    }

    /// An approximate op on an exact operand gets its bound: ex2.approx of 0.5 is within 2 ulp.
    #[test]
    fn approximate_ops_widen_by_their_bound() {
        let op = Op::Unary(UnOp::Ex2, ScalarType::F32, FloatFlags::APPROX);
        let x = f32b(0.5);
        let v = eval::eval(&op, &[x]);
        let e = pure(&op, &[x], &[Enc::Exact], v, AT);
        let (l, h) = ends(e);
        let y = f32::from_bits(v as u32);
        let ulp = f32::EPSILON; // ulp of values in [1, 2)
        assert!(l <= y - 2.0 * ulp && h >= y + 2.0 * ulp && h - l <= 6.0 * ulp, "[{l}, {h}] around {y}");
        assert!(matches!(e, Enc::Range { origin, .. } if origin == AT));
    }

    /// Cancellation is shown as amplification; comparisons that the range straddles and divisions
    /// by a range around zero are unknown; a disjoint comparison is certain.
    #[test]
    fn amplification_and_unknowns() {
        let sub = Op::Bin(BinOp::Sub, ScalarType::F32, RN);
        let a = range(1.0 - 1e-7, 1.0 + 1e-7);
        let v = eval::eval(&sub, &[f32b(1.0), f32b(0.999_99)]);
        let e = pure(&sub, &[f32b(1.0), f32b(0.999_99)], &[a, Enc::Exact], v, Span { start: 7, end: 8 });
        assert!(matches!(e, Enc::Range { amp, .. } if amp == Span { start: 7, end: 8 }), "{e:?}");
        let lt = Op::Cmp(CmpOp::Lt, ScalarType::F32);
        let r = pure(&lt, &[f32b(1.0), f32b(1.0)], &[a, Enc::Exact], 0, AT);
        assert_eq!(r, Enc::Unknown { at: AT, why: Why::Compare });
        let r = pure(&lt, &[f32b(1.0), f32b(2.0)], &[a, Enc::Exact], 1, AT);
        assert_eq!(r, Enc::Exact);
        let div = Op::Bin(BinOp::Div, ScalarType::F32, RN);
        let z = range(-1e-3, 1e-3);
        let r = pure(&div, &[f32b(1.0), f32b(0.0)], &[Enc::Exact, z], f32b(f32::INFINITY), AT);
        assert_eq!(r, Enc::Unknown { at: AT, why: Why::Pole });
    }

    /// The fast `ulp_of` is kir_ir's.
    #[test]
    fn ulp_of_agrees_with_the_evaluators() {
        for f in [Fmt::F16, Fmt::BF16, Fmt::F32, Fmt::F64] {
            for y in [0.0, 1e-40, 1e-8, 0.3, 1.0, 1.5, 2.0, 3.9e5, -7.25, 1e30, 6.0e4, 1e300] {
                assert_eq!(ulp_of(f, y), eval::ulp_of(f, y), "{f:?} {y}");
            }
        }
    }

    /// `sin`/`cos` outside the domain their bound was measured on (|x| <= 100 pi) are unknown (and
    /// a huge operand terminates: fuzz seed 1991 met cos of 1.29e30); inside, an enclosure that
    /// spans an extremum reaches it.
    #[test]
    fn sin_cos_domain_and_extrema() {
        let cos = Op::Unary(UnOp::Cos, ScalarType::F32, FloatFlags::APPROX);
        let x = f32b(1.288e30);
        let r = pure(&cos, &[x], &[range(1.287e30, 1.289e30)], eval::eval(&cos, &[x]), AT);
        assert_eq!(r, Enc::Unknown { at: AT, why: Why::OutsideDomain });
        let sin = Op::Unary(UnOp::Sin, ScalarType::F32, FloatFlags::APPROX);
        let x = f32b(1.5);
        let (_, h) = ends(pure(&sin, &[x], &[range(1.5, 1.7)], eval::eval(&sin, &[x]), AT));
        assert!(h >= 1.0, "sin over [1.5, 1.7] reaches 1 at pi/2: {h}");
    }
}
