//! Comparing output buffers of two engines (interpreter before/after passes, interpreter vs GPU).
//!
//! Guarantees:
//! - Integer and pred buffers compare exactly.
//! - Float buffers compare per [`Tolerance`]: `Exact` means the same bits, NaN payloads and the
//!   sign of zero included (the interpreter and the PTX emulator model the NaNs the hardware
//!   makes: docs/language.md, "NaN and signed zero"); `Ulp(n)` counts representable values between
//!   the two across zero (+0 and -0 are 0 apart); `Rel`/`Abs` compare in f64. Under the inexact
//!   tolerances (for approximate ops), both NaN matches, and an infinity matches only the same
//!   infinity.
//! - [`Bitwise`](Strictness::Bitwise) comparison demands identical bits under any element type.
//! - [`compare_sorted`] compares two buffers as multisets: both sorted (floats in IEEE total
//!   order, integers by value), then element by element as above.
//! - A length or element-type mismatch is itself a reported difference, never a panic.
//! - [`expect_tolerance_hint`] words a failed float comparison's largest ulp distance and, up to
//!   [`HINT_MAX_ULPS`], the exact `tol=ulp:N` that accepts it on an `expect:` line.

use crate::directives::Tolerance;
use kir_interp::Buffer;
use kir_ir::ScalarType;
use std::fmt;

/// How strict a comparison is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strictness {
    /// Identical bits, NaN payloads included.
    Bitwise,
    /// Per the tolerance (NaN-aware).
    Within(Tolerance),
}

/// One differing element.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub index: usize,
    /// Rendered value of the reference (first) buffer.
    pub expected: String,
    /// Rendered value of the compared (second) buffer.
    pub actual: String,
    /// ULP distance for float types (None for integers or when a NaN is involved).
    pub ulps: Option<u64>,
}

/// The result of comparing two buffers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Total number of differing elements.
    pub count: usize,
    /// The first differences, in index order (at most the limit given).
    pub first: Vec<Mismatch>,
    /// A structural difference (length or type), if any.
    pub structural: Option<String>,
    /// Largest ULP distance seen among float elements (0 when identical).
    pub max_ulps: u64,
}

impl Comparison {
    pub fn is_match(&self) -> bool {
        self.count == 0 && self.structural.is_none()
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.structural {
            return write!(f, "{s}");
        }
        write!(f, "{} element{} differ", self.count, if self.count == 1 { "" } else { "s" })?;
        for m in &self.first {
            write!(f, "\n    [{}] expected {}, got {}", m.index, m.expected, m.actual)?;
            if let Some(u) = m.ulps {
                write!(f, " ({u} ulp)")?;
            }
        }
        if self.count > self.first.len() {
            write!(f, "\n    ... and {} more", self.count - self.first.len())?;
        }
        Ok(())
    }
}

/// The value of element `i` of a float buffer as f64 (exact for every float type).
fn as_f64(elem: ScalarType, bits: u64) -> f64 {
    kir_ir::Constant::from_bits(elem, bits).as_f64().unwrap_or(f64::NAN)
}

/// Renders an element for humans: floats in shortest round-trip form with their bits when NaN.
pub fn render_element(elem: ScalarType, bits: u64) -> String {
    if elem.is_float() {
        let v = as_f64(elem, bits);
        if v.is_nan() {
            format!("NaN(0x{bits:x})")
        } else {
            kir_ir::text::printer::print_constant(kir_ir::Constant::from_bits(elem, bits))
        }
    } else {
        kir_ir::text::printer::print_constant(kir_ir::Constant::from_bits(elem, bits))
    }
}

/// Maps float bits to a monotonic integer line (for ULP distance), with +0 and -0 both at 0.
fn ordinal(elem: ScalarType, bits: u64) -> i128 {
    let w = elem.bits();
    let sign = (bits >> (w - 1)) & 1 == 1;
    let mag = (bits & (elem.mask() >> 1)) as i128;
    if sign {
        -mag
    } else {
        mag
    }
}

/// ULP distance between two non-NaN floats of type `elem`.
pub fn ulp_distance(elem: ScalarType, a: u64, b: u64) -> u64 {
    (ordinal(elem, a) - ordinal(elem, b)).unsigned_abs() as u64
}

/// Whether two elements match under `strictness`.
pub fn elements_match(elem: ScalarType, a: u64, b: u64, strictness: Strictness) -> bool {
    if a == b {
        return true;
    }
    let tol = match strictness {
        Strictness::Bitwise => return false,
        Strictness::Within(t) => t,
    };
    if !elem.is_float() || tol == Tolerance::Exact {
        return false;
    }
    let (x, y) = (as_f64(elem, a), as_f64(elem, b));
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    if x.is_infinite() || y.is_infinite() {
        return x == y;
    }
    match tol {
        // Same bits was handled above: NaN payloads and +0/-0 differ under `Exact`.
        Tolerance::Exact => false,
        Tolerance::Ulp(n) => ulp_distance(elem, a, b) <= n as u64,
        Tolerance::Rel(r) => (x - y).abs() <= r * x.abs().max(y.abs()),
        Tolerance::Abs(e) => (x - y).abs() <= e,
    }
}

/// Compares two buffers element by element, keeping the first `limit` mismatches.
pub fn compare_buffers(expected: &Buffer, actual: &Buffer, strictness: Strictness, limit: usize) -> Comparison {
    let mut c = Comparison::default();
    if expected.elem != actual.elem {
        c.structural = Some(format!("element types differ: {} vs {}", expected.elem, actual.elem));
        return c;
    }
    if expected.len() != actual.len() {
        c.structural = Some(format!("lengths differ: {} vs {} elements", expected.len(), actual.len()));
        return c;
    }
    let elem = expected.elem;
    for i in 0..expected.len() {
        let (a, b) = (expected.get_bits(i), actual.get_bits(i));
        if elem.is_float() {
            let (x, y) = (as_f64(elem, a), as_f64(elem, b));
            if !x.is_nan() && !y.is_nan() {
                c.max_ulps = c.max_ulps.max(ulp_distance(elem, a, b));
            }
        }
        if !elements_match(elem, a, b, strictness) {
            c.count += 1;
            if c.first.len() < limit {
                let ulps = (elem.is_float() && !as_f64(elem, a).is_nan() && !as_f64(elem, b).is_nan())
                    .then(|| ulp_distance(elem, a, b));
                c.first.push(Mismatch {
                    index: i,
                    expected: render_element(elem, a),
                    actual: render_element(elem, b),
                    ulps,
                });
            }
        }
    }
    c
}

/// For a failed comparison of float elements whose mismatches all have a distance in ulps: the
/// largest distance and how to accept it on an `expect:` line (`tol=ulp:N`, the exact syntax), as
/// a line to append to the report; `None` for integers, NaN-only or structural differences.
pub fn expect_tolerance_hint(elem: ScalarType, c: &Comparison) -> Option<String> {
    if !elem.is_float() || c.is_match() || c.structural.is_some() || c.max_ulps == 0 {
        return None;
    }
    Some(tolerance_hint_line(c.count, c.max_ulps))
}

/// Distances above this many ulps get no `tol=` suggestion: that is a different value, not rounding.
pub const HINT_MAX_ULPS: u64 = 1024;

/// `N elements differ, by at most M ulp; ... add `tol=ulp:M` ...` (no suggestion past
/// [`HINT_MAX_ULPS`]).
pub fn tolerance_hint_line(count: usize, max_ulps: u64) -> String {
    let s = if count == 1 { "" } else { "s" };
    let verb = if count == 1 { "differs" } else { "differ" };
    if max_ulps > HINT_MAX_ULPS {
        return format!("{count} element{s} {verb}, by at most {max_ulps} ulp (too far apart for rounding)");
    }
    format!(
        "{count} element{s} {verb}, by at most {max_ulps} ulp; if that is within the kernel's accuracy, \
         state it on the `expect:` line: `tol=ulp:{max_ulps}` (or `tol=rel:X`, `tol=abs:X`; docs/testing.md, `; expect:`)"
    )
}

/// A key whose integer order is the element type's value order: IEEE total order for floats
/// (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN), two's complement for signed integers.
fn sort_key(elem: ScalarType, bits: u64) -> i128 {
    let w = elem.bits();
    if elem.is_float() {
        ordinal(elem, bits) * 2 - i128::from((bits >> (w - 1)) & 1 == 1)
    } else if elem.is_signed_int() {
        let shift = 64 - w;
        i128::from(((bits << shift) as i64) >> shift)
    } else {
        i128::from(bits)
    }
}

/// Compares two buffers as multisets (an `expect: ... sorted` line): both sorted by value, then
/// compared element by element. Mismatch indices are positions in the sorted order.
pub fn compare_sorted(expected: &Buffer, actual: &Buffer, strictness: Strictness, limit: usize) -> Comparison {
    if expected.elem != actual.elem || expected.len() != actual.len() {
        return compare_buffers(expected, actual, strictness, limit);
    }
    let sorted = |b: &Buffer| {
        let mut v: Vec<u64> = (0..b.len()).map(|i| b.get_bits(i)).collect();
        v.sort_by_key(|&x| sort_key(b.elem, x));
        Buffer::from_bits(b.elem, v)
    };
    compare_buffers(&sorted(expected), &sorted(actual), strictness, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Buffer {
        Buffer::from_f32(v)
    }

    #[test]
    fn ulp_distance_crosses_zero() {
        let e = ScalarType::F32;
        assert_eq!(ulp_distance(e, 0x8000_0000, 0), 0);
        assert_eq!(ulp_distance(e, 1, 0x8000_0001), 2);
        assert_eq!(ulp_distance(e, 1.0f32.to_bits() as u64, 1.0000001f32.to_bits() as u64), 1);
    }

    #[test]
    fn exact_compares_nan_payloads_inexact_tolerances_do_not() {
        let a = f32s(&[f32::from_bits(0x7fc0_0000)]);
        let b = f32s(&[f32::from_bits(0x7fff_ffff)]);
        let c = compare_buffers(&a, &b, Strictness::Within(Tolerance::Exact), 4);
        assert!(!c.is_match());
        assert!(c.to_string().contains("expected NaN(0x7fc00000), got NaN(0x7fffffff)"), "{c}");
        assert!(!compare_buffers(&a, &b, Strictness::Bitwise, 4).is_match());
        assert!(compare_buffers(&a, &b, Strictness::Within(Tolerance::Ulp(1)), 4).is_match());
        let f64nan = Buffer::from_bits(ScalarType::F64, [0xfff8_0000_0000_0000]);
        let f64nan2 = Buffer::from_bits(ScalarType::F64, [0x7fff_ffff_ffff_ffff]);
        assert!(!compare_buffers(&f64nan, &f64nan2, Strictness::Within(Tolerance::Exact), 4).is_match());
    }

    #[test]
    fn sorted_comparison_is_order_free_but_counts_multiplicity() {
        let a = Buffer::from_u32(&[3, 1, 2, 2]);
        assert!(compare_sorted(&a, &Buffer::from_u32(&[2, 2, 1, 3]), Strictness::Bitwise, 4).is_match());
        let c = compare_sorted(&a, &Buffer::from_u32(&[2, 1, 1, 3]), Strictness::Bitwise, 4);
        assert_eq!(c.count, 1, "{c}");
        // Signed integers sort by value, floats in total order (so -0 and +0 pair up exactly).
        let s = |v: &[i32]| Buffer::from_i32(v);
        assert!(compare_sorted(&s(&[-1, 5, i32::MIN]), &s(&[5, i32::MIN, -1]), Strictness::Bitwise, 4).is_match());
        let f = f32s(&[-0.0, 0.0, f32::NEG_INFINITY, 1.5, f32::from_bits(0xffc0_0000)]);
        let g = f32s(&[1.5, f32::from_bits(0xffc0_0000), 0.0, f32::NEG_INFINITY, -0.0]);
        assert!(compare_sorted(&f, &g, Strictness::Within(Tolerance::Exact), 4).is_match());
        assert!(!compare_sorted(&f, &f32s(&[0.0; 4]), Strictness::Bitwise, 4).is_match());
    }

    #[test]
    fn exact_distinguishes_signed_zero() {
        let a = f32s(&[0.0]);
        let b = f32s(&[-0.0]);
        assert!(!compare_buffers(&a, &b, Strictness::Within(Tolerance::Exact), 4).is_match());
        assert!(compare_buffers(&a, &b, Strictness::Within(Tolerance::Ulp(0)), 4).is_match());
    }

    #[test]
    fn tolerances() {
        let a = f32s(&[1.0, 100.0, f32::INFINITY, 2.0]);
        let b = f32s(&[1.0000002, 100.001, f32::INFINITY, 2.0]);
        let ulp = compare_buffers(&a, &b, Strictness::Within(Tolerance::Ulp(2)), 4);
        assert_eq!(ulp.count, 1, "{ulp}");
        assert_eq!(ulp.first[0].index, 1);
        assert!(compare_buffers(&a, &b, Strictness::Within(Tolerance::Rel(1e-5)), 4).is_match());
        assert!(!compare_buffers(&a, &b, Strictness::Within(Tolerance::Abs(1e-4)), 4).is_match());
        let inf = compare_buffers(
            &f32s(&[f32::INFINITY]),
            &f32s(&[f32::NEG_INFINITY]),
            Strictness::Within(Tolerance::Rel(1.0)),
            4,
        );
        assert!(!inf.is_match());
    }

    #[test]
    fn integers_compare_exactly_and_structure_is_checked() {
        let a = Buffer::from_u32(&[1, 2, 3]);
        let b = Buffer::from_u32(&[1, 2, 4]);
        let c = compare_buffers(&a, &b, Strictness::Within(Tolerance::Rel(1.0)), 4);
        assert_eq!(c.count, 1);
        assert_eq!(c.first[0].expected, "3");
        let short = Buffer::from_u32(&[1]);
        assert!(compare_buffers(&a, &short, Strictness::Bitwise, 4).structural.is_some());
        let f = f32s(&[1.0, 2.0, 3.0]);
        assert!(compare_buffers(&a, &f, Strictness::Bitwise, 4).structural.unwrap().contains("element types"));
    }

    #[test]
    fn mismatch_listing_is_limited_and_counted() {
        let a = Buffer::from_u32(&(0..100).collect::<Vec<_>>());
        let b = Buffer::from_u32(&(1..101).collect::<Vec<_>>());
        let c = compare_buffers(&a, &b, Strictness::Bitwise, 3);
        assert_eq!(c.count, 100);
        assert_eq!(c.first.len(), 3);
        assert!(c.to_string().contains("and 97 more"));
    }
}
