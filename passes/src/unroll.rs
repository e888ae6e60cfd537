//! `unroll`: full unrolling of loops with a constant trip count, partial unrolling of counted
//! loops.
//!
//! Which loops (both kinds): an innermost natural loop ([`kir_ir::analysis::loops`]) with
//! - one latch, ending in `jmp header(...)`, and one edge entering the header from outside;
//! - a header that ends in `br %c, A, B` with exactly one of `A`, `B` in the loop: the header is the
//!   loop's only exit (no other loop block leaves the loop or returns), so the values defined in
//!   the loop that are used after it are the header's.
//!
//! Guarantees:
//! - **Full unrolling** (`max-trip`, `max-insts`): a header parameter whose entry argument is a
//!   constant and whose latch argument is computed from it and constants by pure ops (the
//!   induction variable), and a header condition computed from it and constants, are evaluated
//!   iteration by iteration with [`kir_ir::eval`] (the interpreter's evaluator), so the trip
//!   count is exactly the one the interpreter would run, wrap-around included. When the loop runs
//!   at most `max-trip` times and the copies hold at most `max-insts` instructions, it becomes
//!   straight-line code: one copy of the loop's blocks per iteration, in which the induction
//!   variable is the constant of that iteration, and a last copy of the header, which jumps to the
//!   exit. Uses after the loop read that last copy. Barriers and collectives are copied like any
//!   instruction: every thread runs the same copies in the same order as it ran the iterations.
//! - **Partial unrolling** (`factor`, `max-body`): a loop whose header condition is
//!   `lt.u32 %i, %n` (or `gt.u32 %n, %i`), `%n` defined outside the loop, and whose latch passes
//!   `add.u32 %i, 1`, with at most `max-body` instructions and no barrier, warp collective or
//!   call, gets a main loop in front of it that runs `factor` iterations per trip while
//!   `%i < max(%n, factor - 1) - (factor - 1)`, i.e. while all `factor` iterations would run, without
//!   the compare and branch between them; the original loop, unchanged, runs what is left (fewer
//!   than `factor` iterations). No arithmetic can wrap: `%i + factor - 1 < %n`.
//! - Semantics are preserved bit for bit: every thread executes the same operations on the same
//!   values in the same order; only compares and branches whose outcome is known are dropped.
//!   The copied compares of the induction variable are left for `fold` and `dce`.
//! - The blocks it adds are laid out where the loop's header was, so they fall through into each
//!   other as the loop did.
//! - With `explain` (`unroll{explain}`, `kir opt --print-unroll`) every loop it looks at gets a note
//!   at its header: how it was unrolled, or each reason it was not.
//! - Copies are named after the originals with the iteration number (`%x.3`, `body.3`), made
//!   unique. The number of loops examined is bounded by the loops present and the ones the pass
//!   creates (each main loop and each remainder is examined once); nothing recurses.

use crate::edit::{place_blocks, remove_unreachable};
use crate::pass::{Pass, PassContext};
use kir_ir::analysis::cfg::Cfg;
use kir_ir::analysis::loops::LoopForest;
use kir_ir::eval::eval_const;
use kir_ir::inline::Names;
use kir_ir::subst::{const_for_use, Subst};
use kir_ir::{
    BinOp, BlockCall, BlockId, CmpOp, Constant, Diagnostic, FloatFlags, Kernel, Name, Op, Operand, ScalarType,
    Terminator, Type, ValueDef, ValueId,
};
use rustc_hash::{FxHashMap, FxHashSet};

/// The pass and its size limits.
pub struct Unroll {
    /// Fully unroll loops that run at most this many iterations (0: never).
    pub max_trip: u64,
    /// ... and whose copies hold at most this many instructions.
    pub max_insts: usize,
    /// Iterations per trip of a partially unrolled loop's main loop (below 2: no partial unrolling).
    pub factor: u32,
    /// Partially unroll only loops of at most this many instructions.
    pub max_body: usize,
    /// Report every decision (and why a loop was left alone) as a note (`unroll{explain}`,
    /// `kir opt --print-unroll`).
    pub explain: bool,
}

impl Default for Unroll {
    fn default() -> Unroll {
        Unroll { max_trip: 64, max_insts: 512, factor: 4, max_body: 32, explain: false }
    }
}

/// A loop in the shape both kinds of unrolling need.
struct Shape {
    header: BlockId,
    /// The loop's blocks in reverse post-order (the header first): definitions before uses.
    order: Vec<BlockId>,
    latch: BlockId,
    /// The block whose terminator enters the loop, and which of its successors that is.
    entry: (BlockId, usize),
    /// The header's edge into the loop and out of it.
    body: BlockCall,
    exit: BlockCall,
    /// The header's condition, and whether the loop goes on when it holds.
    cond: ValueId,
    continue_on: bool,
    /// Instructions in the loop.
    size: usize,
    has_sync: bool,
}

/// `rpo_pos`: each block's position in the reverse post-order (reachable blocks).
fn shape(
    k: &Kernel,
    cfg: &Cfg,
    rpo_pos: &[usize],
    blocks: &[BlockId],
    header: BlockId,
    latches: &[BlockId],
) -> Result<Shape, String> {
    let inside = |b: BlockId| blocks.binary_search(&b).is_ok();
    let name = |b: BlockId| k.block(b).name.to_string();
    let [latch] = latches else { return Err(format!("it has {} back edges (one is needed)", latches.len())) };
    match &k.block(*latch).term {
        Terminator::Jmp(c) if c.block == header => {}
        _ => return Err(format!("its latch `{}` does not end in `jmp {}(...)`", name(*latch), name(header))),
    }
    let not_a_test = || format!("its header `{}` does not end in a branch on a value it computes", name(header));
    let Terminator::Br { cond: Operand::Value(cond), then_, else_ } = &k.block(header).term else {
        return Err(not_a_test());
    };
    let (body, exit, continue_on) = match (inside(then_.block), inside(else_.block)) {
        (true, false) => (then_.clone(), else_.clone(), true),
        (false, true) => (else_.clone(), then_.clone(), false),
        _ => return Err(format!("its header `{}` does not branch into the loop and out of it", name(header))),
    };
    if body.block == header {
        return Err(not_a_test());
    }
    match k.value(*cond).def {
        ValueDef::Inst(i) if k.block(header).insts.contains(&i) => {}
        _ => return Err(not_a_test()),
    }
    let mut size = 0;
    let mut has_sync = false;
    for &b in blocks {
        let blk = k.block(b);
        if b != header {
            if matches!(blk.term, Terminator::Ret(_)) {
                return Err(format!("block `{}` returns from inside the loop", name(b)));
            }
            if let Some(c) = blk.term.successors().find(|c| !inside(c.block)) {
                return Err(format!(
                    "block `{}` leaves the loop (to `{}`), not only its header",
                    name(b),
                    name(c.block)
                ));
            }
        }
        size += blk.insts.len();
        has_sync |= blk.insts.iter().any(|&i| {
            let op = k.inst(i).op;
            matches!(op, Op::Barrier | Op::Call(_)) || op.is_warp_collective()
        });
    }
    let mut entry = None;
    for &p in cfg.preds(header) {
        if inside(p) {
            continue;
        }
        for (n, c) in k.block(p).term.successors().enumerate() {
            if c.block == header {
                if entry.is_some() {
                    return Err(format!("more than one edge enters its header `{}`", name(header)));
                }
                entry = Some((p, n));
            }
        }
    }
    let Some(entry) = entry else { return Err(format!("no edge enters its header `{}`", name(header))) };
    let mut order: Vec<BlockId> = blocks.to_vec();
    order.sort_by_key(|b| rpo_pos[b.index()]);
    if order.first() != Some(&header) {
        return Err(format!("its header `{}` is not its first block", name(header)));
    }
    Ok(Shape { header, order, latch: *latch, entry, body, exit, cond: *cond, continue_on, size, has_sync })
}

fn succ_mut(t: &mut Terminator, n: usize) -> &mut BlockCall {
    t.successors_mut().nth(n).expect("successor index from successors()")
}

/// The pure instructions of the loop evaluated with `env` (values known to be constants), in
/// order; what could be evaluated is added to `env`.
fn evaluate(k: &Kernel, s: &Shape, env: &mut FxHashMap<ValueId, Constant>) {
    for &b in &s.order {
        for &i in &k.block(b).insts {
            let d = k.inst(i);
            let Some(r) = d.result else { continue };
            if !d.op.is_pure() || d.op.is_approx() {
                continue;
            }
            let args: Option<Vec<Constant>> = d
                .args
                .iter()
                .map(|a| match a {
                    Operand::Const(c) => Some(*c),
                    Operand::Value(v) => env.get(v).copied(),
                })
                .collect();
            if let Some(c) = args.and_then(|a: Vec<Constant>| eval_const(&d.op, &a)) {
                env.insert(r, c);
            }
        }
    }
}

/// The values the induction variable takes at each header visit of a loop that runs a constant
/// number of times (`trip + 1` values: the last visit exits), and which header parameter it is.
fn constant_trip(k: &Kernel, s: &Shape, max_trip: u64) -> Option<(usize, Vec<Constant>)> {
    let entry_args = &k.block(s.entry.0).term.successors().nth(s.entry.1)?.args;
    let Terminator::Jmp(back) = &k.block(s.latch).term else { return None };
    let params = &k.block(s.header).params;
    'param: for (pi, &p) in params.iter().enumerate() {
        let Some(Operand::Const(init)) = entry_args.get(pi).copied() else { continue };
        let mut iv = init;
        let mut values = vec![iv];
        loop {
            let mut env = FxHashMap::default();
            env.insert(p, iv);
            evaluate(k, s, &mut env);
            let Some(c) = env.get(&s.cond) else { continue 'param };
            if (c.bits != 0) != s.continue_on {
                return Some((pi, values));
            }
            if values.len() as u64 > max_trip {
                continue 'param;
            }
            iv = match back.args.get(pi)? {
                Operand::Const(c) => *c,
                Operand::Value(v) => match env.get(v) {
                    Some(c) => *c,
                    None => continue 'param,
                },
            };
            values.push(iv);
        }
    }
    None
}

/// The operand `o` of a copy: its copy when the loop defines it, else itself.
fn mapped(vmap: &FxHashMap<ValueId, Operand>, o: Operand) -> Operand {
    match o {
        Operand::Value(v) => vmap.get(&v).copied().unwrap_or(o),
        c => c,
    }
}

fn mapped_call(vmap: &FxHashMap<ValueId, Operand>, bmap: &FxHashMap<BlockId, BlockId>, c: &BlockCall) -> BlockCall {
    BlockCall {
        block: bmap.get(&c.block).copied().unwrap_or(c.block),
        args: c.args.iter().map(|a| mapped(vmap, *a)).collect(),
    }
}

/// What happens at the end of one copied iteration.
enum Next {
    /// The latch jumps here: to the next copy's header (no arguments), or to a block taking the
    /// loop's values (its arguments, mapped).
    Latch(BlockId),
    /// Only the header is copied; it leaves the loop.
    Exit,
}

/// Copies one iteration into fresh blocks: the header into `hdr`, whose parameters read `params`
/// (no block parameters: `hdr` has one predecessor), and, unless `next` is [`Next::Exit`], every
/// other loop block, the header's branch becoming a jump into the copied body. Returns the
/// value map of the copy and the latch's arguments in the copy.
fn copy_iteration(
    k: &mut Kernel,
    s: &Shape,
    names: &mut Names,
    tag: usize,
    hdr: BlockId,
    params: &[Operand],
    next: Next,
) -> (FxHashMap<ValueId, Operand>, Vec<Operand>) {
    let mut vmap: FxHashMap<ValueId, Operand> = FxHashMap::default();
    let mut bmap: FxHashMap<BlockId, BlockId> = FxHashMap::default();
    for (&p, &a) in k.block(s.header).params.clone().iter().zip(params) {
        vmap.insert(p, a);
    }
    bmap.insert(s.header, hdr);
    let copied: Vec<BlockId> = match next {
        Next::Exit => vec![s.header],
        Next::Latch(_) => s.order.clone(),
    };
    for &b in &copied[1..] {
        let name = Names::fresh(&mut names.blocks, &format!("{}.{tag}", k.block(b).name));
        let nb = k.add_block(name);
        k.block_mut(nb).span = k.block(b).span;
        for p in k.block(b).params.clone() {
            let v = k.value(p).clone();
            let name = Names::fresh(&mut names.values, &format!("{}.{tag}", v.name));
            let np = k.add_block_param(nb, name, v.ty);
            vmap.insert(p, Operand::Value(np));
        }
        bmap.insert(b, nb);
    }
    for &b in &copied {
        let nb = bmap[&b];
        for i in k.block(b).insts.clone() {
            let d = k.inst(i).clone();
            let args: Vec<Operand> = d
                .args
                .iter()
                .enumerate()
                .map(|(pos, a)| match mapped(&vmap, *a) {
                    Operand::Const(c) => Operand::Const(const_for_use(&d.op, pos, c)),
                    o => o,
                })
                .collect();
            let result = d.result.map(|r| {
                let v = k.value(r);
                (Names::fresh(&mut names.values, &format!("{}.{tag}", v.name)), v.ty)
            });
            let ni = k.append_inst(nb, d.op, args, result, d.span);
            if let (Some(r), Some(nr)) = (d.result, k.inst(ni).result) {
                vmap.insert(r, Operand::Value(nr));
            }
        }
        k.block_mut(nb).term_span = k.block(b).term_span;
    }
    let mut latch_args = Vec::new();
    for &b in &copied {
        let nb = bmap[&b];
        let term = if b == s.header {
            match next {
                Next::Exit => Terminator::Jmp(mapped_call(&vmap, &bmap, &s.exit)),
                Next::Latch(_) => Terminator::Jmp(mapped_call(&vmap, &bmap, &s.body)),
            }
        } else if b == s.latch {
            let Terminator::Jmp(back) = &k.block(b).term else { unreachable!("the latch ends in jmp") };
            latch_args = back.args.iter().map(|a| mapped(&vmap, *a)).collect();
            let Next::Latch(target) = next else { unreachable!("only the header is copied for an exit") };
            // A copy's header takes no parameters; a main loop's header takes the loop's values.
            let args = if k.block(target).params.is_empty() { vec![] } else { latch_args.clone() };
            Terminator::Jmp(BlockCall { block: target, args })
        } else {
            let mut t = k.block(b).term.clone();
            for o in t.operands_mut() {
                *o = mapped(&vmap, *o);
            }
            for c in t.successors_mut() {
                if let Some(&nbk) = bmap.get(&c.block) {
                    c.block = nbk;
                }
            }
            t
        };
        k.block_mut(nb).term = term;
    }
    (vmap, latch_args)
}

impl Unroll {
    /// Replaces the loop by one copy per iteration. `ivs` are the induction variable's values
    /// at each header visit (the last one exits).
    /// The header's values read after the loop are to be replaced as `after_loop` says.
    fn unroll_fully(
        &self,
        k: &mut Kernel,
        s: &Shape,
        pi: usize,
        ivs: &[Constant],
        names: &mut Names,
        after_loop: &mut Vec<(ValueId, Operand)>,
    ) {
        let trip = ivs.len() - 1;
        let hdr_name = k.block(s.header).name.clone();
        let hdrs: Vec<BlockId> = (0..=trip)
            .map(|j| {
                let name = Names::fresh(&mut names.blocks, &format!("{hdr_name}.{j}"));
                let b = k.add_block(name);
                k.block_mut(b).span = k.block(s.header).span;
                b
            })
            .collect();
        let entry_call = succ_mut(&mut k.block_mut(s.entry.0).term, s.entry.1);
        let mut params = std::mem::take(&mut entry_call.args);
        entry_call.block = hdrs[0];
        let mut last_map = FxHashMap::default();
        for j in 0..=trip {
            params[pi] = Operand::Const(ivs[j]);
            let next = if j == trip { Next::Exit } else { Next::Latch(hdrs[j + 1]) };
            let (vmap, latch_args) = copy_iteration(k, s, names, j, hdrs[j], &params, next);
            if j == trip {
                last_map = vmap;
            } else {
                params = latch_args;
            }
        }
        // The header's values, read after the loop, are the last copy's (substituted by the caller,
        // once per round, for every loop of the round).
        let h = k.block(s.header);
        for v in h.params.iter().copied().chain(h.insts.iter().filter_map(|&i| k.inst(i).result)) {
            if let Some(&o) = last_map.get(&v) {
                after_loop.push((v, o));
            }
        }
    }

    /// Puts a main loop running `factor` iterations per trip in front of the loop; returns its
    /// header. `pi` is the induction variable's parameter, `bound` the `%n` of `lt.u32 %i, %n`.
    fn unroll_partially(&self, k: &mut Kernel, s: &Shape, pi: usize, bound: Operand, names: &mut Names) -> BlockId {
        let hdr_name = k.block(s.header).name.clone();
        let span = k.block(s.header).span;
        let param_types: Vec<(Name, Type)> =
            k.block(s.header).params.iter().map(|&p| (k.value(p).name.clone(), k.value(p).ty)).collect();
        let u32c = |v: u32| Operand::Const(Constant::u32(v));
        let less = self.factor - 1;
        // pre(params): %mb = max(%n, factor - 1) - (factor - 1); jmp main(params)
        let pre = k.add_block(Names::fresh(&mut names.blocks, &format!("{hdr_name}.unroll")));
        let main = k.add_block(Names::fresh(&mut names.blocks, &format!("{hdr_name}.by{}", self.factor)));
        for b in [pre, main] {
            k.block_mut(b).span = span;
        }
        let pre_params: Vec<Operand> = param_types
            .iter()
            .map(|(n, t)| Operand::Value(k.add_block_param(pre, Names::fresh(&mut names.values, n), *t)))
            .collect();
        let main_params: Vec<Operand> = param_types
            .iter()
            .map(|(n, t)| Operand::Value(k.add_block_param(main, Names::fresh(&mut names.values, n), *t)))
            .collect();
        let fresh = |names: &mut Names, base: &str| Names::fresh(&mut names.values, &format!("{hdr_name}.{base}"));
        let u32t = Type::Scalar(ScalarType::U32);
        let mx = k.append_inst(
            pre,
            Op::Bin(BinOp::Max, ScalarType::U32, FloatFlags::RN),
            [bound, u32c(less)],
            Some((fresh(names, "max"), u32t)),
            span,
        );
        let mx = Operand::Value(k.inst(mx).result.expect("max has a result"));
        let mb = k.append_inst(
            pre,
            Op::Bin(BinOp::Sub, ScalarType::U32, FloatFlags::RN),
            [mx, u32c(less)],
            Some((fresh(names, "main_end"), u32t)),
            span,
        );
        let mb = Operand::Value(k.inst(mb).result.expect("sub has a result"));
        k.block_mut(pre).term = Terminator::Jmp(BlockCall { block: main, args: pre_params });
        let hdrs: Vec<BlockId> = (0..self.factor)
            .map(|j| {
                let b = k.add_block(Names::fresh(&mut names.blocks, &format!("{hdr_name}.{j}")));
                k.block_mut(b).span = span;
                b
            })
            .collect();
        let go = k.append_inst(
            main,
            Op::Cmp(CmpOp::Lt, ScalarType::U32),
            [main_params[pi], mb],
            Some((fresh(names, "main_more"), Type::Scalar(ScalarType::Pred))),
            span,
        );
        let go = Operand::Value(k.inst(go).result.expect("compare has a result"));
        k.block_mut(main).term = Terminator::Br {
            cond: go,
            then_: BlockCall { block: hdrs[0], args: vec![] },
            else_: BlockCall { block: s.header, args: main_params.clone() },
        };
        let mut params = main_params;
        for j in 0..self.factor as usize {
            let target = if j + 1 == self.factor as usize { main } else { hdrs[j + 1] };
            params = copy_iteration(k, s, names, j, hdrs[j], &params, Next::Latch(target)).1;
        }
        let entry_call = succ_mut(&mut k.block_mut(s.entry.0).term, s.entry.1);
        entry_call.block = pre;
        main
    }

    /// `(parameter index, bound)` when the loop counts `%i` up by 1 while `%i < %n` (u32).
    fn counted(&self, k: &Kernel, s: &Shape) -> Option<(usize, Operand)> {
        if !s.continue_on {
            return None;
        }
        let params = &k.block(s.header).params;
        let ValueDef::Inst(ci) = k.value(s.cond).def else { return None };
        let c = k.inst(ci);
        let inside_def = |o: Operand| match o {
            Operand::Const(_) => false,
            Operand::Value(v) => match k.value(v).def {
                ValueDef::Param(_) => false,
                ValueDef::BlockParam(b, _) => s.order.contains(&b),
                ValueDef::Inst(i) => s.order.iter().any(|b| k.block(*b).insts.contains(&i)),
            },
        };
        let (iv, bound) = match (c.op, c.args.as_slice()) {
            (Op::Cmp(CmpOp::Lt, ScalarType::U32), [Operand::Value(i), n]) => (*i, *n),
            (Op::Cmp(CmpOp::Gt, ScalarType::U32), [n, Operand::Value(i)]) => (*i, *n),
            _ => return None,
        };
        let pi = params.iter().position(|&p| p == iv)?;
        if inside_def(bound) {
            return None;
        }
        let Terminator::Jmp(back) = &k.block(s.latch).term else { return None };
        let Some(Operand::Value(next)) = back.args.get(pi).copied() else { return None };
        let ValueDef::Inst(ni) = k.value(next).def else { return None };
        let one = Operand::Const(Constant::u32(1));
        match (k.inst(ni).op, k.inst(ni).args.as_slice()) {
            (Op::Bin(BinOp::Add, ScalarType::U32, _), [a, b])
                if (*a == Operand::Value(iv) && *b == one) || (*b == Operand::Value(iv) && *a == one) =>
            {
                Some((pi, bound))
            }
            _ => None,
        }
    }
}

impl Pass for Unroll {
    fn name(&self) -> &'static str {
        "unroll"
    }

    /// Rounds: each unrolls every innermost loop it can that an earlier change of the round did
    /// not touch (full unrolling of an inner loop makes its outer loop innermost for the next
    /// round), then lays the new blocks out and drops the unreachable ones. The analyses are
    /// computed once per round, so a kernel of many loops takes a few rounds, not one per loop.
    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let (mut full, mut partial) = (0u64, 0u64);
        // Loops examined (left alone, or main loops and remainders made here), by header name.
        let mut seen: FxHashSet<Name> = FxHashSet::default();
        let mut names = Names::of(k);
        let mut notes: Vec<Diagnostic> = Vec::new();
        for _round in 0..MAX_ROUNDS {
            let cfg = Cfg::new(k);
            let forest = LoopForest::new(&cfg);
            if forest.is_irreducible() {
                break;
            }
            let mut rpo_pos = vec![usize::MAX; k.blocks.len()];
            for (n, b) in cfg.rpo().iter().enumerate() {
                rpo_pos[b.index()] = n;
            }
            let headers: FxHashSet<BlockId> = forest.loops().iter().map(|l| l.header).collect();
            // Blocks an earlier change of this round rewrote or left unreachable: a loop entered
            // from one of them waits for the next round (its CFG facts are stale).
            let mut dirty: FxHashSet<BlockId> = FxHashSet::default();
            // New blocks (from index, to index) to lay out before a block.
            let mut placements: Vec<(usize, usize, BlockId)> = Vec::new();
            let mut after_loop: Vec<(ValueId, Operand)> = Vec::new();
            for l in forest.loops() {
                let innermost = l.blocks.iter().all(|b| *b == l.header || !headers.contains(b));
                let hname = k.block(l.header).name.clone();
                if !innermost || seen.contains(&hname) {
                    continue;
                }
                let span = k.block(l.header).span;
                let s = match shape(k, &cfg, &rpo_pos, &l.blocks, l.header, &l.latches) {
                    Ok(s) => s,
                    Err(why) => {
                        seen.insert(hname.clone());
                        notes.push(note(span, format!("loop `{hname}` of @{} not unrolled", k.name), vec![why]));
                        continue;
                    }
                };
                if dirty.contains(&s.entry.0) {
                    continue;
                }
                seen.insert(hname.clone());
                let first_new = k.blocks.len();
                let mut done = false;
                let mut why_not: Vec<String> = Vec::new();
                match (self.max_trip > 0).then(|| constant_trip(k, &s, self.max_trip)).flatten() {
                    Some((pi, ivs)) if (ivs.len()) * s.size <= self.max_insts => {
                        let trips = ivs.len() - 1;
                        self.unroll_fully(k, &s, pi, &ivs, &mut names, &mut after_loop);
                        dirty.extend(s.order.iter().copied());
                        full += 1;
                        done = true;
                        notes.push(note(
                            span,
                            format!("loop `{hname}` of @{} fully unrolled: {trips} trips, {} instructions copied", k.name, ivs.len() * s.size),
                            vec![],
                        ));
                    }
                    Some((_, ivs)) => why_not.push(format!(
                        "full unrolling: {} trips of {} instructions is over max-insts={}",
                        ivs.len() - 1,
                        s.size,
                        self.max_insts
                    )),
                    None if self.max_trip > 0 => why_not.push(format!(
                        "full unrolling: no header parameter starts at a constant and steps to a constant trip count of at most max-trip={}",
                        self.max_trip
                    )),
                    None => {}
                }
                if !done && self.factor >= 2 {
                    if s.has_sync {
                        why_not.push("partial unrolling: it holds a barrier, a warp collective or a call".to_string());
                    } else if s.size > self.max_body {
                        why_not.push(format!(
                            "partial unrolling: {} instructions is over max-body={}",
                            s.size, self.max_body
                        ));
                    } else if let Some((pi, bound)) = self.counted(k, &s) {
                        let main = self.unroll_partially(k, &s, pi, bound, &mut names);
                        seen.insert(k.block(main).name.clone());
                        partial += 1;
                        done = true;
                        notes.push(note(
                            span,
                            format!(
                                "loop `{hname}` of @{} unrolled by {}: main loop `{}` in front of it",
                                k.name,
                                self.factor,
                                k.block(main).name
                            ),
                            vec![],
                        ));
                    } else {
                        why_not.push(
                            "partial unrolling: it is not counted (`lt.u32 %i, %n` with %n defined before the loop, %i stepped by `add.u32 %i, 1`)"
                                .to_string(),
                        );
                    }
                }
                if done {
                    dirty.insert(s.entry.0);
                    placements.push((first_new, k.blocks.len(), s.header));
                } else {
                    notes.push(note(span, format!("loop `{hname}` of @{} not unrolled", k.name), why_not));
                }
            }
            if placements.is_empty() {
                break;
            }
            if !after_loop.is_empty() {
                let mut subst = Subst::new(k);
                for (v, o) in after_loop {
                    let o = subst.resolve(o);
                    subst.set(v, o);
                }
                // Also rewrites the unrolled loops' old blocks, which are about to go.
                subst.apply(k);
            }
            place_blocks(k, &placements);
            remove_unreachable(k);
        }
        if self.explain {
            cx.diagnostics.extend(notes);
        }
        cx.stats.add("loops fully unrolled", full);
        cx.stats.add("loops partially unrolled", partial);
        full + partial > 0
    }
}

/// A note at the loop's header with the reasons as notes of their own.
fn note(span: kir_ir::Span, message: String, reasons: Vec<String>) -> Diagnostic {
    let mut d = reasons.into_iter().fold(Diagnostic::warning(message), |d, r| d.with_note(r));
    d.severity = kir_ir::Severity::Note;
    if span.is_dummy() {
        d
    } else {
        d.at(span, "loop header")
    }
}

/// At most this many rounds (loop nesting levels unrolled one after another).
const MAX_ROUNDS: usize = 16;
