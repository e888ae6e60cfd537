//! Which NaN an f64 op returns, made independent of the operand order ptxas picks.
//!
//! kir's rule (docs/language.md, "NaN and signed zero"; `ir/src/eval/float.rs`): an f64 op returns
//! a NaN operand quieted, and with several NaN operands the first in the op's order wins —
//! `add`/`sub`/`mul`: `b`, then `a`; `fma a, b, c`: `b`, `c`, then `a`; `min`/`max`: one NaN gives
//! the other operand, two give `b` quieted. The H100 returns the *later machine operand's* NaN,
//! and ptxas keeps PTX order only where it wants to: it sorts the operands of `add`, `mul`, `min`,
//! `max` and the two multiplicands of `fma`, and turns `sub a, b` into `(-b) + a` (the negation
//! leaves a NaN as it is). Emitted as written, an op with two NaN operands of different payloads
//! returns the one ptxas's order makes win.
//!
//! So the emitter replaces `a` by an `a'` that makes the order irrelevant ([`Plan::ReplaceA`]):
//! - `add`/`sub`/`mul`: `a' = isnan(b) ? b : a`, then `op a', b`. If `b` is NaN both machine
//!   operands hold `b`'s NaN and any order returns it quieted; otherwise only `a` can be NaN.
//! - `min`/`max`: `a' = isnan(a) ? b : a`, then `op a', b`. If `a` is NaN the op is `op b, b`:
//!   `b` quieted when `b` is NaN, `b` otherwise — the rule's result for a NaN `a`; otherwise only
//!   `b` can be NaN (and `min`/`max` of two numbers, signed zeros included, is symmetric).
//! - `fma`: `a' = isnan(b) ? b : isnan(c) ? c : a`, then `fma a', b, c`. If `b` is NaN, `a'` and
//!   `b` hold its NaN and `b` wins in either multiplicand order; else if `c` is NaN, `a'` and `c`
//!   hold its NaN, the only NaN left; otherwise only `a` can be NaN.
//!
//! Guarantees:
//! - Every plan, emitted as lower.rs does (the steps of `a'` as `testp.notanumber.f64` and
//!   `selp.f64`, the op with `a'` in `a`'s place), computes kir's rule in PTX order and in the
//!   order with the commutative operands swapped (`sub` as `(-b) + a`): the tests below check
//!   every combination of NaN, non-NaN, constant and repeated operands in both orders.
//! - Steps are left out only where they cannot change the result: an operand that is a non-NaN
//!   constant ([`NanKnown::Never`]) is never the NaN to choose, operands that are one value hold
//!   one NaN, and a NaN constant ([`NanKnown::Always`]) is taken without a test. An op with at
//!   most one operand that can be NaN is emitted as written ([`Plan::AsWritten`]).
//! - An op whose first operand is a NaN constant is [`Plan::LeadingNanConst`], lower.rs's explicit
//!   computation (`leading_nan_bin`, `leading_nan_fma`), as before.
//! - Only f64 needs this: the NaN results of f16, bf16 and f32 arithmetic are canonical, and
//!   their `min`/`max` of two NaNs too, so their operand order cannot show. `div` is not
//!   commutative and keeps its order.

use crate::imm::is_float_nan;
use kir_ir::{BinOp, Operand};

/// What emission knows of whether an operand is NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanKnown {
    /// A constant that is not NaN.
    Never,
    /// A NaN constant.
    Always,
    /// A value: any bits.
    Maybe,
}

/// What is known of `o`.
pub fn known(o: Operand) -> NanKnown {
    match o {
        Operand::Const(c) if is_float_nan(c) => NanKnown::Always,
        Operand::Const(_) => NanKnown::Never,
        Operand::Value(_) => NanKnown::Maybe,
    }
}

/// When a [`Step`] applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// When operand `i` (0 = `a`, 1 = `b`, 2 = `c`) is NaN.
    NaN(usize),
    /// Always (the operand taken is a NaN constant).
    Always,
}

/// One way `a'` is chosen: operand `take` when `when` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub when: When,
    pub take: usize,
}

/// How an f64 op is emitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// As written: at most one operand can hold a NaN, so the order cannot show.
    AsWritten,
    /// The first operand is a NaN constant: lower.rs computes the result explicitly.
    LeadingNanConst,
    /// `a` replaced by `a'`: the operand of the first step that applies, else `a`.
    ReplaceA(Vec<Step>),
}

/// The plan for f64 `op a, b` (every op but `add`, `sub`, `mul`, `min`, `max` is as written).
pub fn bin_plan(op: BinOp, a: Operand, b: Operand) -> Plan {
    let min_max = match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul => false,
        BinOp::Min | BinOp::Max => true,
        _ => return Plan::AsWritten,
    };
    if known(a) == NanKnown::Always {
        return Plan::LeadingNanConst;
    }
    if a == b || known(a) == NanKnown::Never || known(b) == NanKnown::Never {
        return Plan::AsWritten;
    }
    let step = match (min_max, known(b)) {
        (true, _) => Step { when: When::NaN(0), take: 1 },
        (false, NanKnown::Always) => Step { when: When::Always, take: 1 },
        (false, _) => Step { when: When::NaN(1), take: 1 },
    };
    Plan::ReplaceA(vec![step])
}

/// The plan for f64 `fma a, b, c`.
pub fn fma_plan(a: Operand, b: Operand, c: Operand) -> Plan {
    let (ka, kb, kc) = (known(a), known(b), known(c));
    if ka == NanKnown::Always {
        return Plan::LeadingNanConst;
    }
    if a == b {
        // Swapping the multiplicands changes nothing.
        return Plan::AsWritten;
    }
    let may = |k: NanKnown| k != NanKnown::Never;
    // `b` must be chosen when it can be NaN together with another operand holding another NaN.
    let step_b = match kb {
        NanKnown::Always => Some(Step { when: When::Always, take: 1 }),
        NanKnown::Maybe if may(ka) || (may(kc) && c != b) => Some(Step { when: When::NaN(1), take: 1 }),
        _ => None,
    };
    // Then `c`, when `a` can hold another NaN (and `b`'s step does not already cover it).
    let covered = step_b.is_some_and(|s| s.when == When::Always || c == b);
    let step_c = match kc {
        _ if covered || !may(ka) || a == c => None,
        NanKnown::Always => Some(Step { when: When::Always, take: 2 }),
        NanKnown::Maybe => Some(Step { when: When::NaN(2), take: 2 }),
        NanKnown::Never => None,
    };
    let steps: Vec<Step> = step_b.into_iter().chain(step_c).collect();
    if steps.is_empty() {
        Plan::AsWritten
    } else {
        Plan::ReplaceA(steps)
    }
}

#[cfg(test)]
mod tests {
    //! A model of the machine: operands are numbers or NaNs with payloads, a result is a NaN (which
    //! operand's, quieted) or a number (which operands made it). Every plan is run in PTX order and
    //! swapped order and must give kir's rule on the original operands.

    use super::*;
    use kir_ir::{Constant, ScalarType, ValueId};

    /// A runtime value: a number with an identity, or a NaN with a payload.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum V {
        Num(u8),
        NaN(u8),
    }

    /// A result: NaN with a payload, a number chosen from one operand (`min`/`max`), or a number
    /// computed from operands (their identities in machine order, sorted where the op commutes).
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum R {
        NaN(u8),
        Num(Vec<u8>),
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Kind {
        Arith,
        Sub,
        MinMax,
        Fma,
    }

    /// The first NaN of `order`, if any.
    fn first_nan(order: &[V]) -> Option<R> {
        order.iter().find_map(|v| match v {
            V::NaN(p) => Some(R::NaN(*p)),
            V::Num(_) => None,
        })
    }

    fn id(v: V) -> u8 {
        match v {
            V::Num(i) => i,
            V::NaN(p) => 100 + p,
        }
    }

    /// The machine's result of `kind` on operands in machine order (`x` first). NaN: the later
    /// machine operand's for `add`/`mul`/`min`/`max` (and for `fma`: `y`, `z`, then `x`).
    fn machine(kind: Kind, x: V, y: V, z: V) -> R {
        match kind {
            Kind::Arith | Kind::Sub => first_nan(&[y, x]).unwrap_or_else(|| {
                let mut ids = vec![id(x), id(y)];
                if kind == Kind::Arith {
                    ids.sort();
                }
                R::Num(ids)
            }),
            Kind::MinMax => match (x, y) {
                (V::NaN(_), V::NaN(p)) => R::NaN(p),
                (V::NaN(_), V::Num(i)) | (V::Num(i), V::NaN(_)) => R::Num(vec![i]),
                _ => {
                    // The smaller or the larger of the two: `op x, x` is x.
                    let mut ids = vec![id(x), id(y)];
                    ids.sort();
                    ids.dedup();
                    R::Num(ids)
                }
            },
            Kind::Fma => first_nan(&[y, z, x]).unwrap_or_else(|| {
                let mut ids = vec![id(x), id(y)];
                ids.sort();
                ids.push(id(z));
                R::Num(ids)
            }),
        }
    }

    /// The plan's result in PTX order (`swapped` false) or with the commutative operands swapped
    /// (`sub a, b` as `(-b) + a`: b's NaN is not negated and its number keeps its place).
    fn run(kind: Kind, plan: &Plan, v: &[V; 3], swapped: bool) -> R {
        let rule = || machine(kind, v[0], v[1], v[2]);
        let a2 = match plan {
            Plan::AsWritten => v[0],
            // lower.rs computes the rule explicitly there, with order-free instructions.
            Plan::LeadingNanConst => return rule(),
            Plan::ReplaceA(steps) => steps
                .iter()
                .find(|s| match s.when {
                    When::Always => true,
                    When::NaN(i) => matches!(v[i], V::NaN(_)),
                })
                .map_or(v[0], |s| v[s.take]),
        };
        if !swapped {
            return machine(kind, a2, v[1], v[2]);
        }
        match kind {
            Kind::Sub => match (v[1], a2) {
                (V::NaN(_), _) | (_, V::NaN(_)) => first_nan(&[a2, v[1]]).unwrap(),
                _ => machine(kind, a2, v[1], v[2]),
            },
            _ => machine(kind, v[1], a2, v[2]),
        }
    }

    /// Operand forms: values 0..3 (each a number or a NaN per the assignment), a number constant,
    /// two NaN constants.
    #[derive(Clone, Copy, Debug)]
    enum Form {
        Val(u32),
        NumConst,
        NaNConst(u8),
    }

    fn operand(f: Form) -> Operand {
        match f {
            Form::Val(i) => Operand::Value(ValueId(i)),
            Form::NumConst => Operand::Const(Constant { ty: ScalarType::F64, bits: 1.5f64.to_bits() }),
            Form::NaNConst(p) => {
                Operand::Const(Constant { ty: ScalarType::F64, bits: 0x7ff8_0000_0000_0000 | p as u64 })
            }
        }
    }

    fn value(f: Form, nan_values: u32) -> V {
        match f {
            Form::Val(i) if nan_values & (1 << i) != 0 => V::NaN(i as u8 + 1),
            Form::Val(i) => V::Num(i as u8 + 1),
            Form::NumConst => V::Num(50),
            Form::NaNConst(p) => V::NaN(p),
        }
    }

    const FORMS: [Form; 6] =
        [Form::Val(0), Form::Val(1), Form::Val(2), Form::NumConst, Form::NaNConst(10), Form::NaNConst(11)];

    fn check(kind: Kind, plan: &Plan, forms: &[Form; 3]) -> usize {
        let mut checked = 0;
        for nan_values in 0..8 {
            let v = forms.map(|f| value(f, nan_values));
            let want = machine(kind, v[0], v[1], v[2]);
            for swapped in [false, true] {
                let got = run(kind, plan, &v, swapped);
                assert_eq!(got, want, "{kind:?} {forms:?} = {v:?}, plan {plan:?}, swapped {swapped}");
                checked += 1;
            }
        }
        checked
    }

    #[test]
    fn every_binary_plan_gives_the_rule_in_both_orders() {
        let c0 = Form::Val(2);
        for (op, kind) in [
            (BinOp::Add, Kind::Arith),
            (BinOp::Mul, Kind::Arith),
            (BinOp::Sub, Kind::Sub),
            (BinOp::Min, Kind::MinMax),
            (BinOp::Max, Kind::MinMax),
        ] {
            for a in FORMS {
                for b in FORMS {
                    let plan = bin_plan(op, operand(a), operand(b));
                    check(kind, &plan, &[a, b, c0]);
                }
            }
        }
    }

    #[test]
    fn every_fma_plan_gives_the_rule_in_both_multiplicand_orders() {
        for a in FORMS {
            for b in FORMS {
                for c in FORMS {
                    let plan = fma_plan(operand(a), operand(b), operand(c));
                    check(Kind::Fma, &plan, &[a, b, c]);
                }
            }
        }
    }

    /// The model can fail: emitted as written, two NaNs of different payloads differ between the
    /// orders for every op.
    #[test]
    fn as_written_two_nans_depend_on_the_order() {
        let v = [V::NaN(1), V::NaN(2), V::NaN(3)];
        for kind in [Kind::Arith, Kind::Sub, Kind::MinMax, Kind::Fma] {
            assert_ne!(run(kind, &Plan::AsWritten, &v, false), run(kind, &Plan::AsWritten, &v, true), "{kind:?}");
        }
        // fma: each pair of NaN operands too.
        for v in
            [[V::NaN(1), V::NaN(2), V::Num(3)], [V::Num(1), V::NaN(2), V::NaN(3)], [V::NaN(1), V::Num(2), V::NaN(3)]]
        {
            assert_ne!(
                run(Kind::Fma, &Plan::AsWritten, &v, false),
                run(Kind::Fma, &Plan::AsWritten, &v, true),
                "{v:?}"
            );
        }
    }

    /// Steps are left out where they cannot matter.
    #[test]
    fn steps_only_where_two_operands_can_hold_different_nans() {
        let (x, y, z) = (operand(Form::Val(0)), operand(Form::Val(1)), operand(Form::Val(2)));
        let (one, nan) = (operand(Form::NumConst), operand(Form::NaNConst(10)));
        let step = |when, take| Step { when, take };
        assert_eq!(bin_plan(BinOp::Add, x, y), Plan::ReplaceA(vec![step(When::NaN(1), 1)]));
        assert_eq!(bin_plan(BinOp::Min, x, y), Plan::ReplaceA(vec![step(When::NaN(0), 1)]));
        assert_eq!(bin_plan(BinOp::Sub, x, nan), Plan::ReplaceA(vec![step(When::Always, 1)]));
        assert_eq!(bin_plan(BinOp::Max, x, nan), Plan::ReplaceA(vec![step(When::NaN(0), 1)]));
        for (a, b) in [(x, one), (one, x), (x, x)] {
            for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Min, BinOp::Max] {
                assert_eq!(bin_plan(op, a, b), Plan::AsWritten, "{op:?} {a:?} {b:?}");
            }
        }
        assert_eq!(bin_plan(BinOp::Div, x, y), Plan::AsWritten);
        assert_eq!(bin_plan(BinOp::Add, nan, x), Plan::LeadingNanConst);
        assert_eq!(fma_plan(x, y, z), Plan::ReplaceA(vec![step(When::NaN(1), 1), step(When::NaN(2), 2)]));
        assert_eq!(fma_plan(x, y, one), Plan::ReplaceA(vec![step(When::NaN(1), 1)]));
        assert_eq!(fma_plan(one, y, z), Plan::ReplaceA(vec![step(When::NaN(1), 1)]));
        assert_eq!(fma_plan(x, one, z), Plan::ReplaceA(vec![step(When::NaN(2), 2)]));
        assert_eq!(fma_plan(x, nan, z), Plan::ReplaceA(vec![step(When::Always, 1)]));
        assert_eq!(fma_plan(x, y, nan), Plan::ReplaceA(vec![step(When::NaN(1), 1), step(When::Always, 2)]));
        assert_eq!(fma_plan(x, y, x), Plan::ReplaceA(vec![step(When::NaN(1), 1)]));
        assert_eq!(fma_plan(x, y, y), Plan::ReplaceA(vec![step(When::NaN(1), 1)]));
        for (a, b, c) in [(x, x, z), (one, one, z), (one, y, one), (x, one, one), (one, one, one)] {
            assert_eq!(fma_plan(a, b, c), Plan::AsWritten, "{a:?} {b:?} {c:?}");
        }
        assert_eq!(fma_plan(nan, y, z), Plan::LeadingNanConst);
    }
}
