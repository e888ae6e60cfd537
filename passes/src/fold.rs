//! `fold`: constant folding and exact algebraic identities.
//!
//! Guarantees:
//! - An instruction whose operands are all constants is evaluated with [`kir_ir::eval::eval_const`],
//!   the evaluator the interpreter uses, so the folded constant is bit-identical to what the
//!   interpreter computes (f32 rounding, f16/bf16, integer wrap-around, NaN, -0.0). Its uses read
//!   the constant and the instruction is removed.
//! - Approximate ops ([`kir_ir::Op::is_approx`]) are not folded unless the pass is built with
//!   `approx` (`fold{approx}`): the GPU's result may differ from the exact one.
//! - Identities are applied only where they hold for every input, bit for bit: for integers
//!   `x+0`, `0+x`, `x-0`, `x-x → 0`, `x*1`, `1*x`, `x*0 → 0`, `x/1`; for integers and pred
//!   `x&0 → 0`, `x&~0 → x`, `x&x → x`, `x|0 → x`, `x|~0 → ~0`, `x|x → x`, `x^0 → x`, `x^x → 0`;
//!   integer `min`/`max` of `x, x`; shifts by 0; integer `mad` with a zero factor → the addend; `mov x → x`; `select` with a constant condition or
//!   two equal operands. No float identity is applied (`x+0.0` is wrong for `-0.0`, `x*1.0` changes
//!   NaN payloads and flushes subnormals under `.ftz`).
//! - Vector element moves: `extract` of lane i of a `vec` is its i-th operand; of an `insert`
//!   into lane i, the inserted value; of an `insert` into another lane, `extract` of lane i of the
//!   vector inserted into (which may fold in turn). Bits only move, so this holds for every input.
//! - An integer `mad` with both factors constant becomes `add` of the addend and their (wrapped)
//!   product, and one with a factor 1 becomes `add` of the other factor and the addend: the same
//!   value modulo 2^bits for every input, one multiply less.
//! - Kernels and device functions alike: every use of a folded value is rewritten, terminator
//!   operands included (a branch condition, block arguments, and a function's `ret %v`, which may
//!   become `ret 3`). A `call` is never folded (it is not pure), but its arguments are rewritten;
//!   function parameters are not constants (each call passes its own).
//! - Only pure ops are touched; instructions in unreachable blocks are not folded, but their uses
//!   of folded values are rewritten. One pass visits reachable blocks in reverse post-order, so
//!   chains of constants fold completely; the pass runs in linear time.

use crate::edit::Subst;
use crate::pass::{Pass, PassContext};
use kir_ir::eval::eval_const;
use kir_ir::{BinOp, Constant, Kernel, Op, Operand, ScalarType};

pub struct Fold {
    /// Fold approximate ops too (with the exact result).
    pub approx: bool,
}

impl Pass for Fold {
    fn name(&self) -> &'static str {
        "fold"
    }

    /// It folding rewrites instructions and terminator operands, never an edge.
    fn preserves_cfg(&self) -> bool {
        true
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let mut subst = Subst::new(k);
        let (mut folded, mut simplified) = (0u64, 0u64);
        let rpo = k.reverse_post_order();
        // How each vector value seen so far was made (`vec` or `insert`), for `extract`.
        let mut vectors: rustc_hash::FxHashMap<kir_ir::ValueId, (Op, kir_ir::Args)> = Default::default();
        let Kernel { blocks, insts, .. } = &mut *k;
        for &b in &rpo {
            let block = &mut blocks[b.index()];
            // In place: a folded instruction leaves the block's list, the others slide down.
            block.insts.retain(|i| {
                let d = &mut insts[i.index()];
                let op = d.op;
                subst.apply_to_args(&op, &mut d.args);
                if let (Op::VecBuild(..) | Op::VecInsert(..), Some(r)) = (op, d.result) {
                    vectors.insert(r, (op, d.args.clone()));
                }
                if let Op::VecExtract(..) = op {
                    match extract_of(&vectors, &d.args) {
                        Some(Extracted::Value(x)) => {
                            if let Some(r) = d.result {
                                subst.set(r, x);
                                simplified += 1;
                                return false;
                            }
                        }
                        Some(Extracted::From(earlier)) => {
                            d.args[0] = Operand::Value(earlier);
                            simplified += 1;
                        }
                        None => {}
                    }
                }
                let replacement = match d.result {
                    Some(r) if op.is_pure() => self.try_fold(&op, &d.args).map(|(rep, is_const)| (r, rep, is_const)),
                    _ => None,
                };
                if replacement.is_none() && d.result.is_some() {
                    if let Some((op, args)) = rewrite(&op, &d.args) {
                        d.op = op;
                        d.args = args.into_iter().collect();
                        simplified += 1;
                    }
                }
                match replacement {
                    Some((r, rep, is_const)) => {
                        subst.set(r, rep);
                        if is_const {
                            folded += 1;
                        } else {
                            simplified += 1;
                        }
                        false
                    }
                    None => true,
                }
            });
            let _ = subst.apply_to_term(&mut block.term);
        }
        // In a reachable block every use is dominated by its definition, and the reverse post-order
        // visits a dominator first, so those uses were rewritten above. Only blocks the traversal did
        // not reach may still use a replaced value.
        if !subst.is_empty() && rpo.len() < k.blocks.len() {
            let mut reached = vec![false; k.blocks.len()];
            rpo.iter().for_each(|b| reached[b.index()] = true);
            subst.apply_where(k, |b| !reached[b.index()]);
        }
        cx.stats.add("instructions folded", folded);
        cx.stats.add("identities simplified", simplified);
        folded + simplified > 0
    }
}

impl Fold {
    /// What the result of a pure op can be replaced by, and whether it is a constant.
    fn try_fold(&self, op: &Op, args: &[Operand]) -> Option<(Operand, bool)> {
        if op.is_approx() && !self.approx {
            return None;
        }
        // Every op has at most 4 operands; no allocation per instruction.
        let mut cs = [Constant::u32(0); 4];
        if args.len() <= cs.len() && args.iter().zip(cs.iter_mut()).all(|(a, c)| a.as_const().map(|k| *c = k).is_some())
        {
            return eval_const(op, &cs[..args.len()]).map(|c| (Operand::Const(c), true));
        }
        identity(op, args).map(|o| (o, o.as_const().is_some()))
    }
}

/// What an `extract` reads, found through the `vec`/`insert` chain that made its vector.
enum Extracted {
    /// An operand of a `vec`, or the value of an `insert` into the lane.
    Value(Operand),
    /// The same lane of an earlier vector (inserts into other lanes skipped).
    From(kir_ir::ValueId),
}

/// `extract v, lane` through the chain that made `v`; `None` when nothing is known.
fn extract_of(
    vectors: &rustc_hash::FxHashMap<kir_ir::ValueId, (Op, kir_ir::Args)>,
    args: &[Operand],
) -> Option<Extracted> {
    let (Some(mut v), Some(lane)) = (args.first().and_then(|a| a.as_value()), args.get(1).and_then(|a| a.as_const()))
    else {
        return None;
    };
    let lane = lane.bits as usize;
    let mut moved = false;
    // Each step goes to an earlier definition: the chain ends.
    while let Some((op, vargs)) = vectors.get(&v) {
        match op {
            Op::VecBuild(..) => return vargs.get(lane).map(|x| Extracted::Value(*x)),
            Op::VecInsert(..) => {
                let ilane = vargs.get(1).and_then(|a| a.as_const())?.bits as usize;
                if ilane == lane {
                    return vargs.get(2).map(|x| Extracted::Value(*x));
                }
                match vargs.first().and_then(|a| a.as_value()) {
                    Some(earlier) => {
                        v = earlier;
                        moved = true;
                    }
                    None => break,
                }
            }
            _ => break,
        }
    }
    moved.then_some(Extracted::From(v))
}

fn is_zero(o: Operand) -> bool {
    o.as_const().is_some_and(|c| c.bits == 0)
}

fn is_all_ones(o: Operand, ty: ScalarType) -> bool {
    o.as_const().is_some_and(|c| c.ty == ty && c.bits == ty.mask())
}

fn is_one(o: Operand) -> bool {
    o.as_const().is_some_and(|c| c.bits == 1)
}

/// A cheaper instruction computing the same value for every input: `mad.T a, b, c` with both
/// factors constant is `add.T c, a*b` (both wrap modulo 2^bits; a zero product is left to
/// [`identity`]), and with one factor 1 it is `add.T` of the other factor and `c`.
fn rewrite(op: &Op, args: &[Operand]) -> Option<(Op, [Operand; 2])> {
    let (Op::Mad(ty), [a, b, c]) = (op, args) else { return None };
    if !ty.is_int() {
        return None;
    }
    let add = Op::Bin(BinOp::Add, *ty, kir_ir::FloatFlags::RN);
    match (a.as_const(), b.as_const()) {
        (Some(x), Some(y)) => {
            let p = eval_const(&Op::Bin(BinOp::Mul, *ty, kir_ir::FloatFlags::RN), &[x, y])?;
            (p.bits != 0).then_some((add, [*c, Operand::Const(p)]))
        }
        (Some(x), None) if x.bits == 1 => Some((add, [*b, *c])),
        (None, Some(y)) if y.bits == 1 => Some((add, [*a, *c])),
        _ => None,
    }
}

/// An exact identity for `op` on `args` (not all constant), if one applies.
fn identity(op: &Op, args: &[Operand]) -> Option<Operand> {
    let zero = |ty: ScalarType| Operand::Const(Constant::from_bits(ty, 0));
    match (op, args) {
        (Op::Mov(_), [a]) => Some(*a),
        // mad with a zero factor: the addend (integers wrap; nothing else contributes)
        (Op::Mad(ty), [a, b, c]) if ty.is_int() && (is_zero(*a) || is_zero(*b)) => Some(*c),
        (Op::Select(_), [c, a, b]) => match c.as_const() {
            Some(c) => Some(if c.bits != 0 { *a } else { *b }),
            None if a == b => Some(*a),
            None => None,
        },
        (Op::Bin(bin, ty, _), [a, b])
            if ty.is_int() || (ty.is_pred() && matches!(bin, BinOp::And | BinOp::Or | BinOp::Xor)) =>
        {
            let ty = *ty;
            match bin {
                BinOp::Add if is_zero(*b) => Some(*a),
                BinOp::Add if is_zero(*a) => Some(*b),
                BinOp::Sub if is_zero(*b) => Some(*a),
                BinOp::Sub if a == b => Some(zero(ty)),
                BinOp::Mul if is_one(*b) => Some(*a),
                BinOp::Mul if is_one(*a) => Some(*b),
                BinOp::Mul if is_zero(*a) || is_zero(*b) => Some(zero(ty)),
                BinOp::Div if is_one(*b) => Some(*a),
                BinOp::And if is_zero(*a) || is_zero(*b) => Some(zero(ty)),
                BinOp::And if is_all_ones(*b, ty) || a == b => Some(*a),
                BinOp::And if is_all_ones(*a, ty) => Some(*b),
                BinOp::Or if is_all_ones(*a, ty) || is_all_ones(*b, ty) => {
                    Some(Operand::Const(Constant::from_bits(ty, ty.mask())))
                }
                BinOp::Or if is_zero(*b) || a == b => Some(*a),
                BinOp::Or if is_zero(*a) => Some(*b),
                BinOp::Xor if is_zero(*b) => Some(*a),
                BinOp::Xor if is_zero(*a) => Some(*b),
                BinOp::Xor if a == b => Some(zero(ty)),
                BinOp::Min | BinOp::Max if a == b => Some(*a),
                BinOp::Shl | BinOp::Shr if is_zero(*b) => Some(*a),
                _ => None,
            }
        }
        _ => None,
    }
}
