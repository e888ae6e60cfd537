//! `ivsr`: induction-variable strength reduction in loops with several copies of their body (what
//! `unroll` leaves: a main loop doing `factor` iterations per trip).
//!
//! Terms: a *basic induction variable* is a loop header parameter `%j` of type u32, s32, u64 or
//! s64 whose argument on the loop's single back edge is `%j + s` for a constant `s != 0`, written
//! as any chain of `add`/`sub` of constants starting at `%j` (an unrolled body's `%j.1 = add %j,
//! 1`, `%j.2 = add %j.1, 1`, ...). Every value of such a chain is `%j + c` for a constant `c`.
//!
//! Guarantees:
//! - **Rebasing:** every chain value `%j + c` (`c != 0`) whose instruction is not already
//!   `add %j, c` becomes `add %j, c`: the same value, one instruction, no longer waiting on the
//!   previous copy (the middle of a chain is then dead, for `dce`).
//! - **Strength reduction:** instructions of the loop of the forms `mul (%j + c), %n`,
//!   `mad (%j + c), %n, %y` (either factor order) and `add (%j + c), %y`, with `%n` and `%y`
//!   loop-invariant (constants or values defined outside the loop) and of `%j`'s type, are grouped
//!   into families by (`%j`, `%n`, `%y`). A family with members at two or more different `c`
//!   gets a new header parameter `%q = %j * %n + %y` (`%n = 1` for `add`): its value on entry is
//!   computed in the loop's preheader from `%j`'s entry argument, and the back edge passes
//!   `%q + s * %n`. Each member becomes `%q` itself (`c = 0`) or `add %q, c * %n`, where `c * %n`
//!   is a constant or a `mul` in the preheader. A family whose members all sit at one `c` is left
//!   alone: there the rewrite trades a `mul`/`mad`/`add` per iteration for an `add` per iteration
//!   and costs instructions before the loop.
//! - **Exactness:** integer `add`, `sub`, `mul` (low half) and `mad` wrap modulo 2^width, and
//!   `(j + s) * n + y = (j * n + y) + s * n` holds in that ring, so every rewritten value equals
//!   the original bit for bit on every iteration, whatever wraps (tests compare the interpreter's
//!   outputs before and after).
//! - Only loops with one latch and a unique preheader (one edge enters the header from outside,
//!   from a block ending in `jmp`) are changed; the CFG is unchanged (the pass adds header
//!   parameters and instructions, never blocks or edges). Inserted instructions are appended to
//!   the preheader (before its `jmp`) and to the latch (before its terminator), so every definition
//!   dominates its uses.
//! - `--stats`: "induction families reduced", "instructions strength-reduced" (members rewritten)
//!   and "chain values rebased".

use crate::pass::{Pass, PassContext};
use kir_ir::analysis::loops::LoopForest;
use kir_ir::inline::Names;
use kir_ir::subst::Subst;
use kir_ir::{BinOp, BlockId, Constant, FloatFlags, Kernel, Name, Op, Operand, ScalarType, Type, ValueDef, ValueId};
use rustc_hash::FxHashMap;

pub struct Ivsr;

/// A value of the loop as `base + offset` for a header parameter `base` (offset modulo 2^width).
#[derive(Clone, Copy)]
struct Affine {
    base: ValueId,
    offset: u64,
}

/// A strength-reduction family: `base * factor + addend`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct FamilyKey {
    base: ValueId,
    factor: Operand,
    addend: Option<Operand>,
}

/// One member: the instruction and its `c`.
struct Member {
    inst: kir_ir::InstId,
    offset: u64,
}

fn reducible_type(t: ScalarType) -> bool {
    matches!(t, ScalarType::U32 | ScalarType::S32 | ScalarType::U64 | ScalarType::S64)
}

fn konst(t: ScalarType, bits: u64) -> Operand {
    Operand::Const(Constant::from_bits(t, bits & t.mask()))
}

impl Pass for Ivsr {
    fn name(&self) -> &'static str {
        "ivsr"
    }

    fn preserves_cfg(&self) -> bool {
        true
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let loops = {
            let cfg = cx.cfg(k);
            let forest = LoopForest::new(cfg);
            let mut found = Vec::new();
            for l in forest.loops() {
                if l.latches.len() != 1 {
                    continue;
                }
                let Some(pre) = crate::edit::unique_preheader(k, cfg, l) else { continue };
                // The latch's edge to the header must be its only one (a `br` to the header on
                // both sides has no single back-edge argument list).
                if k.block(l.latches[0]).term.successors().filter(|c| c.block == l.header).count() != 1 {
                    continue;
                }
                let rpo_blocks: Vec<BlockId> = cfg.rpo().iter().copied().filter(|b| l.contains(*b)).collect();
                found.push((l.header, l.latches[0], pre, rpo_blocks));
            }
            found
        };
        let (mut families, mut members, mut rebased) = (0u64, 0u64, 0u64);
        let mut names: Option<Names> = None;
        for (header, latch, pre, blocks) in loops {
            let (f, m, r) = reduce_loop(k, header, latch, pre, &blocks, &mut names);
            families += f;
            members += m;
            rebased += r;
        }
        cx.stats.add("induction families reduced", families);
        cx.stats.add("instructions strength-reduced", members);
        cx.stats.add("chain values rebased", rebased);
        families + rebased > 0
    }
}

/// Rewrites one loop; returns (families reduced, members rewritten, chain values rebased).
fn reduce_loop(
    k: &mut Kernel,
    header: BlockId,
    latch: BlockId,
    pre: BlockId,
    blocks: &[BlockId],
    names: &mut Option<Names>,
) -> (u64, u64, u64) {
    let in_loop = |b: BlockId| blocks.contains(&b);
    let mut inst_block: FxHashMap<kir_ir::InstId, BlockId> = FxHashMap::default();
    for &b in blocks {
        for &i in &k.block(b).insts {
            inst_block.insert(i, b);
        }
    }
    let invariant = |k: &Kernel, o: Operand| match o {
        Operand::Const(_) => true,
        Operand::Value(v) => match k.value(v).def {
            ValueDef::Param(_) => true,
            ValueDef::BlockParam(b, _) => !in_loop(b),
            ValueDef::Inst(i) => !inst_block.contains_key(&i),
        },
    };
    let ty_of = |k: &Kernel, v: ValueId| k.value_type(v).scalar();

    // Affine forms of the header parameters' add/sub chains.
    let mut aff: FxHashMap<ValueId, Affine> = FxHashMap::default();
    for &p in &k.block(header).params {
        if ty_of(k, p).is_some_and(reducible_type) {
            aff.insert(p, Affine { base: p, offset: 0 });
        }
    }
    if aff.is_empty() {
        return (0, 0, 0);
    }
    for &b in blocks {
        for &i in &k.block(b).insts {
            let d = k.inst(i);
            let Some(r) = d.result else { continue };
            let (x, c, negate) = match (d.op, d.args.as_slice()) {
                (Op::Bin(BinOp::Add, _, _), [Operand::Value(x), Operand::Const(c)])
                | (Op::Bin(BinOp::Add, _, _), [Operand::Const(c), Operand::Value(x)]) => (*x, *c, false),
                (Op::Bin(BinOp::Sub, _, _), [Operand::Value(x), Operand::Const(c)]) => (*x, *c, true),
                _ => continue,
            };
            let Some(a) = aff.get(&x).copied() else { continue };
            let t = match d.op {
                Op::Bin(_, t, _) => t,
                _ => continue,
            };
            if ty_of(k, a.base) != Some(t) {
                continue;
            }
            let offset = if negate { a.offset.wrapping_sub(c.bits) } else { a.offset.wrapping_add(c.bits) } & t.mask();
            aff.insert(r, Affine { base: a.base, offset });
        }
    }

    // Basic induction variables: header parameters stepped by a constant on the back edge.
    let back_args: Vec<Operand> = match k.block(latch).term.successors().find(|c| c.block == header) {
        Some(c) => c.args.to_vec(),
        None => return (0, 0, 0),
    };
    let params = k.block(header).params.clone();
    let mut step: FxHashMap<ValueId, u64> = FxHashMap::default();
    for (n, &p) in params.iter().enumerate() {
        let Some(Operand::Value(a)) = back_args.get(n).copied() else { continue };
        if let Some(f) = aff.get(&a).filter(|f| f.base == p && f.offset != 0) {
            step.insert(p, f.offset);
        }
    }
    if step.is_empty() {
        return (0, 0, 0);
    }

    // Rebase chain values of the basic induction variables on their parameter.
    let mut rebased = 0;
    for &b in blocks {
        for idx in 0..k.block(b).insts.len() {
            let i = k.block(b).insts[idx];
            let Some(r) = k.inst(i).result else { continue };
            let Some(a) = aff.get(&r).copied() else { continue };
            if a.base == r || a.offset == 0 || !step.contains_key(&a.base) {
                continue;
            }
            let Some(t) = ty_of(k, r) else { continue };
            let want = [Operand::Value(a.base), konst(t, a.offset)];
            let d = k.inst_mut(i);
            if d.op == Op::Bin(BinOp::Add, t, FloatFlags::RN) && d.args.as_slice() == want {
                continue;
            }
            d.op = Op::Bin(BinOp::Add, t, FloatFlags::RN);
            d.args = want.into_iter().collect();
            rebased += 1;
        }
    }

    // Families of strength-reducible instructions.
    let mut fams: Vec<(FamilyKey, Vec<Member>)> = Vec::new();
    let mut index: FxHashMap<FamilyKey, usize> = FxHashMap::default();
    for &b in blocks {
        for &i in &k.block(b).insts {
            let d = k.inst(i);
            let Some(r) = d.result else { continue };
            let Some(t) = ty_of(k, r) else { continue };
            if !reducible_type(t) {
                continue;
            }
            let iv = |o: Operand| {
                o.as_value()
                    .and_then(|v| aff.get(&v).copied())
                    .filter(|a| step.contains_key(&a.base) && ty_of(k, a.base) == Some(t))
            };
            let inv = |o: Operand| invariant(k, o);
            let found = match (d.op, d.args.as_slice()) {
                (Op::Bin(BinOp::Mul, _, _), &[x, n]) | (Op::Bin(BinOp::Mul, _, _), &[n, x])
                    if iv(x).is_some() && inv(n) =>
                {
                    iv(x).map(|a| (a, n, None))
                }
                (Op::Mad(_), &[x, n, y]) | (Op::Mad(_), &[n, x, y]) if iv(x).is_some() && inv(n) && inv(y) => {
                    iv(x).map(|a| (a, n, Some(y)))
                }
                (Op::Bin(BinOp::Add, _, _), &[x, y]) | (Op::Bin(BinOp::Add, _, _), &[y, x])
                    if iv(x).is_some() && y.as_value().is_some() && inv(y) =>
                {
                    iv(x).map(|a| (a, konst(t, 1), Some(y)))
                }
                _ => None,
            };
            let Some((a, factor, addend)) = found else { continue };
            let key = FamilyKey { base: a.base, factor, addend };
            let slot = *index.entry(key).or_insert_with(|| {
                fams.push((key, Vec::new()));
                fams.len() - 1
            });
            // Offset `c` of the member in units of the family: c * factor is added later.
            fams[slot].1.push(Member { inst: i, offset: a.offset });
        }
    }

    let mut families = 0;
    let mut rewritten = 0;
    let mut subst: Option<Subst> = None;
    let mut removed: Vec<kir_ir::InstId> = Vec::new();
    for (key, mems) in fams {
        let mut offsets: Vec<u64> = mems.iter().map(|m| m.offset).collect();
        offsets.sort_unstable();
        offsets.dedup();
        if offsets.len() < 2 {
            continue;
        }
        let names = names.get_or_insert_with(|| Names::of(k));
        let Some(t) = ty_of(k, key.base) else { continue };
        let base_name = k.value(key.base).name.to_string();
        let fresh =
            |names: &mut Names, what: &str| -> Name { Names::fresh(&mut names.values, &format!("{base_name}.{what}")) };
        let pos = params.iter().position(|&p| p == key.base).expect("a header parameter");
        let init = match k.block(pre).term.successors().find(|c| c.block == header) {
            Some(c) => c.args[pos],
            None => continue,
        };
        // `init * factor + addend` and `s * factor` before the loop.
        let one = konst(t, 1);
        let (op, args) = match key.addend {
            Some(y) if key.factor == one => (Op::Bin(BinOp::Add, t, FloatFlags::RN), vec![y, init]),
            Some(y) => (Op::Mad(t), vec![key.factor, init, y]),
            None => (Op::Bin(BinOp::Mul, t, FloatFlags::RN), vec![key.factor, init]),
        };
        let q_init = emit(k, pre, op, args, t, fresh(names, "sr.init"));
        let s = step[&key.base];
        let stride = times(k, pre, t, s, key.factor, fresh(names, "sr.step"));
        let q = k.add_block_param(header, fresh(names, "sr"), Type::Scalar(t));
        let q_next = emit(
            k,
            latch,
            Op::Bin(BinOp::Add, t, FloatFlags::RN),
            vec![Operand::Value(q), stride],
            t,
            fresh(names, "sr.next"),
        );
        for c in k.block_mut(pre).term.successors_mut().filter(|c| c.block == header) {
            c.args.push(q_init);
        }
        for c in k.block_mut(latch).term.successors_mut().filter(|c| c.block == header) {
            c.args.push(q_next);
        }
        // `c * factor` per offset, made in the preheader when needed.
        let mut by_offset: FxHashMap<u64, Operand> = FxHashMap::default();
        // The members rewritten so far in each block, by offset (members come in block order).
        let mut seen: FxHashMap<(BlockId, u64), ValueId> = FxHashMap::default();
        for m in mems {
            let r = k.inst(m.inst).result.expect("members have results");
            let b = inst_block[&m.inst];
            if m.offset == 0 {
                subst.get_or_insert_with(|| Subst::new(k)).set(r, Operand::Value(q));
                removed.push(m.inst);
                seen.insert((b, 0), q);
            } else {
                // `(j + c) * n + y` is the previous copy's `(j + c - 1) * n + y` plus `n`, when
                // that one was computed earlier in the same block: no constant multiple needed.
                let prev = m.offset.wrapping_sub(1) & t.mask();
                let args = match seen.get(&(b, prev)) {
                    Some(&p) => [Operand::Value(p), key.factor],
                    None => {
                        let add = match by_offset.get(&m.offset) {
                            Some(&o) => o,
                            None => {
                                let o = times(k, pre, t, m.offset, key.factor, fresh(names, "sr.off"));
                                by_offset.insert(m.offset, o);
                                o
                            }
                        };
                        [Operand::Value(q), add]
                    }
                };
                let d = k.inst_mut(m.inst);
                d.op = Op::Bin(BinOp::Add, t, FloatFlags::RN);
                d.args = args.into_iter().collect();
                seen.entry((b, m.offset)).or_insert(r);
            }
            rewritten += 1;
        }
        families += 1;
    }
    if !removed.is_empty() {
        for &b in blocks {
            k.block_mut(b).insts.retain(|i| !removed.contains(i));
        }
    }
    if let Some(mut s) = subst {
        s.apply(k);
    }
    (families, rewritten, rebased)
}

/// `c * factor` in type `t`: a constant when `factor` is one, `factor` itself for `c = 1`, else a
/// `mul` appended to `at`.
fn times(k: &mut Kernel, at: BlockId, t: ScalarType, c: u64, factor: Operand, name: Name) -> Operand {
    match factor {
        Operand::Const(f) => konst(t, c.wrapping_mul(f.bits)),
        _ if c & t.mask() == 1 => factor,
        _ => emit(k, at, Op::Bin(BinOp::Mul, t, FloatFlags::RN), vec![factor, konst(t, c)], t, name),
    }
}

/// Appends `op args` to block `b` (its value), or, without an instruction, its constant when
/// every operand is one, or the operand it equals by an exact identity (`0 * n + y = y`,
/// `x + 0 = x`, `x * 1 = x`; `pass.fold` does not run after this pass in the default pipeline).
fn emit(k: &mut Kernel, b: BlockId, op: Op, args: Vec<Operand>, t: ScalarType, name: Name) -> Operand {
    let consts: Option<Vec<Constant>> = args.iter().map(|a| a.as_const()).collect();
    if let Some(c) = consts.and_then(|c| kir_ir::eval::eval_const(&op, &c)) {
        return Operand::Const(c);
    }
    let is = |o: Operand, v: u64| o.as_const().is_some_and(|c| c.bits & t.mask() == v);
    match (op, args.as_slice()) {
        (Op::Mad(_), &[x, n, y]) if is(x, 0) || is(n, 0) => return y,
        (Op::Mad(_), &[x, n, y]) if is(y, 0) && is(n, 1) => return x,
        (Op::Bin(BinOp::Add, ..), &[x, y]) if is(x, 0) => return y,
        (Op::Bin(BinOp::Add, ..), &[x, y]) if is(y, 0) => return x,
        (Op::Bin(BinOp::Mul, ..), &[x, n]) if is(n, 1) => return x,
        (Op::Bin(BinOp::Mul, ..), &[x, n]) if is(x, 1) => return n,
        (Op::Bin(BinOp::Mul, ..), &[x, n]) if is(x, 0) || is(n, 0) => return konst(t, 0),
        _ => {}
    }
    let i = k.append_inst(b, op, args, Some((name, Type::Scalar(t))), kir_ir::Span::DUMMY);
    Operand::Value(k.inst(i).result.expect("a result"))
}
