//! ptxas's freedom to order the commutative operands of f64 instructions, as an emulator option.
//!
//! With several NaN operands, an f64 instruction on the H100 returns one of them quieted, chosen
//! by its place among the *machine* operands ([`crate::float`]: `add`/`sub`/`mul` `b` then `a`,
//! `fma a, b, c` `b`, `c`, then `a`, `min`/`max` of two NaNs `b`, in PTX order as ptxas usually
//! keeps it). But ptxas may put commutative operands in either order: those of `add`, `mul`,
//! `min`, `max` and the two multiplicands of `fma`; `sub a, b` becomes an `add` of `a` and `-b`,
//! in either order, and the negation leaves a NaN as it is (on an H100, `sub.f64 0,
//! 0xfff8000000000000` gave `0xfff8000000000000`). [`F64OperandOrder::Swapped`] executes every such
//! instruction in the other order, so that PTX whose result depends on ptxas's choice can be seen
//! to depend on it.
//!
//! Guarantees:
//! - [`F64OperandOrder::Ptx`] (the default) is PTX order: exactly [`float::arith`],
//!   [`float::fma`] and [`float::minmax`].
//! - [`F64OperandOrder::Swapped`], for f64 only: `add a, b` runs as `add b, a`, `mul` and
//!   `min`/`max` likewise, `fma a, b, c` as `fma b, a, c`, and `sub a, b` as `(-b) + a` with `-b`
//!   flipping the sign of a number and leaving a NaN unchanged. Numbers come out the same in both
//!   orders (these are commutative in IEEE 754 arithmetic, in every rounding direction and with
//!   signed zeros: `min(-0, +0)` is `-0` either way); only which NaN operand wins can differ.
//! - Every other type (whose NaN results are canonical), `div`, and every other instruction are
//!   the same in both orders.

use crate::float::{self, Arith, FTy, Rnd};

/// The order in which f64 instructions see their commutative operands (module header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum F64OperandOrder {
    /// As written in the PTX.
    #[default]
    Ptx,
    /// The commutative operands swapped, `sub a, b` as `(-b) + a`.
    Swapped,
}

impl F64OperandOrder {
    /// The order named `ptx` or `swapped`.
    pub fn from_name(name: &str) -> Option<F64OperandOrder> {
        match name {
            "ptx" => Some(F64OperandOrder::Ptx),
            "swapped" => Some(F64OperandOrder::Swapped),
            _ => None,
        }
    }

    fn swaps(self, t: FTy) -> bool {
        self == F64OperandOrder::Swapped && t == FTy::F64
    }
}

/// `op.rnd.T a, b` in `order` ([`float::arith`]).
pub fn arith(order: F64OperandOrder, t: FTy, op: Arith, r: Rnd, a: u64, b: u64) -> u64 {
    if !order.swaps(t) {
        return float::arith(t, op, r, a, b);
    }
    match op {
        Arith::Add | Arith::Mul => float::arith(t, op, r, b, a),
        Arith::Sub => {
            let neg_b = if t.is_nan(b) { b } else { b ^ t.sign_bit() };
            float::arith(t, Arith::Add, r, neg_b, a)
        }
        Arith::Div => float::arith(t, op, r, a, b),
    }
}

/// `fma.rnd.T a, b, c` in `order` ([`float::fma`]).
pub fn fma(order: F64OperandOrder, t: FTy, r: Rnd, a: u64, b: u64, c: u64) -> u64 {
    if order.swaps(t) {
        float::fma(t, r, b, a, c)
    } else {
        float::fma(t, r, a, b, c)
    }
}

/// `min`/`max` in `order` ([`float::minmax`]).
pub fn minmax(order: F64OperandOrder, t: FTy, max: bool, a: u64, b: u64) -> u64 {
    if order.swaps(t) {
        float::minmax(t, max, b, a)
    } else {
        float::minmax(t, max, a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use F64OperandOrder::{Ptx, Swapped};

    const QA: u64 = 0x7ff8_0000_0000_0001;
    const QB: u64 = 0xfff8_0000_0000_0002;
    const SA: u64 = 0x7ff0_0000_0000_0003;
    const QUIET: u64 = 1 << 51;

    #[test]
    fn swapped_order_lets_the_other_nan_win() {
        for op in [Arith::Add, Arith::Sub, Arith::Mul] {
            assert_eq!(arith(Ptx, FTy::F64, op, Rnd::N, QA, QB), QB, "{op:?}");
            assert_eq!(arith(Swapped, FTy::F64, op, Rnd::N, QA, QB), QA, "{op:?}");
            assert_eq!(arith(Swapped, FTy::F64, op, Rnd::N, SA, QB), SA | QUIET, "{op:?}");
        }
        for max in [false, true] {
            assert_eq!(minmax(Ptx, FTy::F64, max, QA, QB), QB);
            assert_eq!(minmax(Swapped, FTy::F64, max, QA, QB), QA);
        }
        let one = 1f64.to_bits();
        assert_eq!(fma(Ptx, FTy::F64, Rnd::N, QA, QB, one), QB);
        assert_eq!(fma(Swapped, FTy::F64, Rnd::N, QA, QB, one), QA);
        assert_eq!(fma(Swapped, FTy::F64, Rnd::N, QA, one, QB), QA);
        assert_eq!(fma(Swapped, FTy::F64, Rnd::N, one, QA, QB), QB);
        // div keeps its order; f32 NaN results are canonical in both.
        assert_eq!(arith(Swapped, FTy::F64, Arith::Div, Rnd::N, QA, QB), QA);
        assert_eq!(arith(Swapped, FTy::F32, Arith::Add, Rnd::N, 0x7fc0_0001, 0xffc0_0002), 0x7fff_ffff);
    }

    /// `sub` as `(-b) + a`: b's NaN is not negated, b's number is.
    #[test]
    fn swapped_sub_negates_numbers_only() {
        let (two, three) = (2f64.to_bits(), 3f64.to_bits());
        assert_eq!(arith(Swapped, FTy::F64, Arith::Sub, Rnd::N, 0, QB), QB);
        assert_eq!(arith(Swapped, FTy::F64, Arith::Sub, Rnd::N, QA, three), QA);
        assert_eq!(f64::from_bits(arith(Swapped, FTy::F64, Arith::Sub, Rnd::N, two, three)), -1.0);
    }

    /// Numbers, signed zeros and every rounding: the same in both orders.
    #[test]
    fn numbers_do_not_depend_on_the_order() {
        let vals: Vec<u64> = [0.0, -0.0, 1.0, -1.5, 1e-310, 3.0e300, f64::INFINITY, f64::NEG_INFINITY, 0.1, -7.25]
            .iter()
            .map(|v: &f64| v.to_bits())
            .collect();
        for r in [Rnd::N, Rnd::Z, Rnd::M, Rnd::P] {
            for &a in &vals {
                for &b in &vals {
                    for op in [Arith::Add, Arith::Sub, Arith::Mul, Arith::Div] {
                        assert_eq!(arith(Ptx, FTy::F64, op, r, a, b), arith(Swapped, FTy::F64, op, r, a, b));
                    }
                    for max in [false, true] {
                        assert_eq!(minmax(Ptx, FTy::F64, max, a, b), minmax(Swapped, FTy::F64, max, a, b));
                    }
                    for &c in &vals {
                        assert_eq!(fma(Ptx, FTy::F64, r, a, b, c), fma(Swapped, FTy::F64, r, a, b, c));
                    }
                }
            }
        }
    }
}
