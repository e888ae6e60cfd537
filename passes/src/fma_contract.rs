//! `fma-contract`: contracts a float multiply followed by an add into one fused multiply-add.
//!
//! Opt-in (not in the default pipeline): `fma` rounds once where `mul` then `add` round twice, so
//! results may change in the last bit. That is the only change it makes.
//!
//! Guarantees:
//! - Rewrites `%r = add.T %m, %c` (or `add.T %c, %m`) into `%r = fma.T %a, %b, %c` exactly when
//!   `%m = mul.T %a, %b`, both ops are round-to-nearest with the same flush-to-zero flag, `T` is a
//!   float type, and `%m` has no other use; the `mul` is then removed. The fma keeps the add's
//!   rounding and flush-to-zero flags.
//! - Operand order is preserved (`a*b + c` with `a`, `b` in the mul's order), so NaN propagation
//!   follows the same operands; no other instruction is touched.
//! - The result verifies whenever the input does: the fma's operands are the mul's (which
//!   dominate the mul, hence the add) and the add's.

use crate::pass::{Pass, PassContext};
use kir_ir::op::{BinOp, FloatFlags, FloatMode, Rounding};
use kir_ir::{InstId, Kernel, Op, Operand, ValueDef, ValueId};

pub struct FmaContract;

impl Pass for FmaContract {
    fn name(&self) -> &'static str {
        "fma-contract"
    }

    /// It rewrites instructions only.
    fn preserves_cfg(&self) -> bool {
        true
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let uses = use_counts(k);
        let mut contracted = 0u64;
        let mut dead: Vec<InstId> = Vec::new();
        let placed: Vec<InstId> = k.placed_insts().map(|(_, i)| i).collect();
        for add in placed {
            let d = k.inst(add);
            let Op::Bin(BinOp::Add, ty, flags) = d.op else { continue };
            if !ty.is_float() || flags.mode != FloatMode::Exact(Rounding::Rn) || d.args.len() != 2 {
                continue;
            }
            let (x, y) = (d.args[0], d.args[1]);
            let found = [(x, y), (y, x)].into_iter().find_map(|(m, c)| {
                let mv = m.as_value()?;
                let mul = single_use_mul(k, &uses, &dead, mv, ty, flags)?;
                Some((mul, c))
            });
            let Some((mul, c)) = found else { continue };
            let (a, b) = (k.inst(mul).args[0], k.inst(mul).args[1]);
            let add_inst = k.inst_mut(add);
            add_inst.op = Op::Fma(ty, flags);
            add_inst.args = [a, b, c].into_iter().collect();
            dead.push(mul);
            contracted += 1;
        }
        for b in &mut k.blocks {
            b.insts.retain(|i| !dead.contains(i));
        }
        cx.stats.add("mul+add contracted to fma", contracted);
        contracted > 0
    }
}

/// The instruction defining `v` when it is a `mul.T` with flags `flags`, used once, not yet
/// contracted.
fn single_use_mul(
    k: &Kernel,
    uses: &[u32],
    dead: &[InstId],
    v: ValueId,
    ty: kir_ir::ScalarType,
    flags: FloatFlags,
) -> Option<InstId> {
    let ValueDef::Inst(i) = k.values.get(v.index())?.def else { return None };
    let d = k.insts.get(i.index())?;
    let is_mul = d.op == Op::Bin(BinOp::Mul, ty, flags) && d.args.len() == 2;
    (is_mul && uses.get(v.index()) == Some(&1) && !dead.contains(&i)).then_some(i)
}

/// How many times each value is used by placed instructions and terminators.
fn use_counts(k: &Kernel) -> Vec<u32> {
    let mut n = vec![0u32; k.values.len()];
    let mut count = |o: Operand| {
        if let Operand::Value(v) = o {
            if let Some(c) = n.get_mut(v.index()) {
                *c += 1;
            }
        }
    };
    for (_, i) in k.placed_insts() {
        k.inst(i).args.iter().copied().for_each(&mut count);
    }
    for b in &k.blocks {
        b.term.operands().for_each(&mut count);
    }
    n
}
