//! Member masks other than the constant full mask: which lanes execute each `shfl` / `vote`, and
//! whether its member mask names exactly them (part of barrier verification, [`super::barrier`]).
//!
//! A collective with member mask `m` is well defined only when, in every warp, the lanes that
//! execute it together are exactly the lanes of `m` (no lane outside `m` executes it, no lane of
//! `m` is missing), every executing lane gives the same `m`, and every lane a shuffle reads (its
//! source lane, `down`/`up`/`bfly`/`idx`) is in `m`. The interpreter checks this at run time; this
//! module proves it before any run, or says what it could not prove.
//!
//! How: a symbolic run of one warp through the kernel, mirroring the interpreter's SIMT stack
//! (reconvergence at the immediate post-dominator, a `ret` removing its lanes from every entry).
//! A lane set is a constant 32-bit set `K` intersected with literals: a `pred` value (`%p` holds /
//! does not hold) or "bit `laneid` of warp-uniform value `%v` is set". Branch conditions split
//! the set: a condition computed from `laneid` and constants is evaluated lane by lane (the
//! kernel's own op semantics, [`crate::eval`]); a warp-uniform condition sends the whole set one
//! way, and both ways are explored; a `pred` defined outside every loop becomes a literal; any
//! other condition makes the set unknown. States already explored are not explored again, so
//! loops terminate; a budget ([`STATE_LIMIT`]) bounds the work.
//!
//! Guarantees (soundness first):
//! - [`check_masks_at`] reports an error at every collective whose member mask is not the constant
//!   full mask unless, on every explored path, the executing set equals the mask exactly: a
//!   constant mask must equal a constant set; a `vote.ballot` result used as a mask must equal
//!   the set of lanes that executed that ballot together and whose predicate held (recorded only
//!   for a ballot outside every loop, executed once per path); a warp-uniform mask `%v` must
//!   equal the set "bit `laneid` of `%v` is set" of a full warp; any other mask is an error
//!   saying it could not be proven.
//! - A shuffle's source lanes are checked lane by lane for a delta (or index) computed from
//!   `laneid` and constants, for every value 0..31 of a warp-uniform one; any other delta is an
//!   error. Diagnostics name lanes: "lane 15 reads lane 16, which is not in the member mask
//!   0x0000ffff".
//! - Partial warps: without `reqntid`, a kernel with a collective needs whole warps (a launch
//!   precondition every launch path enforces, [`crate::analysis::warps`]), so the run starts from
//!   a full warp. With `reqntid(..)` whose thread count leaves a last warp of `n` lanes, the run
//!   starts from both the full warp and the first `n` lanes.
//! - `assume_masks()` on a kernel turns this check off for it: its masks are the author's claim
//!   (the interpreter still checks them at run time). Nothing else does.
//! - Kernels without such collectives cost nothing. Never panics; past the budget, every such
//!   collective not yet proven is reported as not proven, naming the limit.

use crate::analysis::cfg::Cfg;
use crate::analysis::uniformity::{Level, Uniformity};
use crate::diag::Diagnostic;
use crate::{
    BlockId, InstId, Kernel, Op, Operand, ShflMode, Span, SpecialReg, Terminator, ValueDef, ValueId, VoteMode,
};
use std::collections::{HashMap, HashSet};

/// States (stack of lane sets plus ballot values) explored per kernel at most.
pub(crate) const STATE_LIMIT: usize = 20_000;

/// A literal of a lane set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Lit {
    /// The `pred` value holds (`true`) or not on the lane.
    Pred(ValueId, bool),
    /// Bit `laneid` of the warp-uniform value is set (`true`) or clear.
    Bits(ValueId, bool),
}

/// A set of lanes of one warp.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Set {
    /// `lanes` intersected with every literal (sorted, without duplicates, never contradictory).
    Known { lanes: u32, lits: Vec<Lit> },
    /// Not known.
    Unknown,
}

impl Set {
    fn concrete(lanes: u32) -> Set {
        Set::Known { lanes, lits: vec![] }
    }
    fn is_empty(&self) -> bool {
        matches!(self, Set::Known { lanes: 0, .. })
    }
    fn and_lanes(&self, t: u32) -> Set {
        match self {
            Set::Known { lanes, lits } => Set::Known { lanes: lanes & t, lits: lits.clone() }.canonical(),
            Set::Unknown => Set::Unknown,
        }
    }
    fn and_lit(&self, l: Lit) -> Set {
        match self {
            Set::Known { lanes, lits } => {
                let mut lits = lits.clone();
                lits.push(l);
                Set::Known { lanes: *lanes, lits }.canonical()
            }
            Set::Unknown => Set::Unknown,
        }
    }
    /// Lanes leaving (a `ret`): `self` without `gone`, when that is a set of this form.
    fn minus(&self, gone: &Set) -> Set {
        match (self, gone) {
            (_, g) if g.is_empty() => self.clone(),
            (Set::Known { lanes, lits }, Set::Known { lanes: g, lits: gl }) if gl.is_empty() => {
                Set::Known { lanes: lanes & !g, lits: lits.clone() }.canonical()
            }
            // `self` and `gone` disjoint because of opposite literals: nothing leaves `self`.
            (Set::Known { lits, .. }, Set::Known { lits: gl, .. })
                if gl.iter().any(|l| lits.contains(&negate(*l))) || self.and(gone).is_empty() =>
            {
                self.clone()
            }
            _ => Set::Unknown,
        }
    }
    fn and(&self, o: &Set) -> Set {
        match (self, o) {
            (Set::Known { lanes, lits }, Set::Known { lanes: b, lits: bl }) => {
                let mut l = lits.clone();
                l.extend(bl.iter().copied());
                Set::Known { lanes: lanes & b, lits: l }.canonical()
            }
            _ => Set::Unknown,
        }
    }
    fn canonical(self) -> Set {
        match self {
            Set::Known { lanes, mut lits } => {
                lits.sort();
                lits.dedup();
                if lanes == 0 || lits.iter().any(|l| lits.contains(&negate(*l))) {
                    return Set::Known { lanes: 0, lits: vec![] };
                }
                Set::Known { lanes, lits }
            }
            u => u,
        }
    }
}

fn negate(l: Lit) -> Lit {
    match l {
        Lit::Pred(v, h) => Lit::Pred(v, !h),
        Lit::Bits(v, h) => Lit::Bits(v, !h),
    }
}

/// `0..15`, `0, 2, 4..7`.
pub fn lane_list(mask: u32) -> String {
    let mut parts = vec![];
    let mut l = 0;
    while l < 32 {
        if mask & (1 << l) == 0 {
            l += 1;
            continue;
        }
        let start = l;
        while l < 32 && mask & (1 << l) != 0 {
            l += 1;
        }
        parts.push(if l - start == 1 { start.to_string() } else { format!("{start}..{}", l - 1) });
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// One entry of the SIMT stack: lanes running at `block` until `rpc` (`None`: the exit).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Entry {
    block: BlockId,
    set: Set,
    rpc: Option<BlockId>,
}

/// A world: the stack and the lane sets of the ballots executed so far (sorted by value).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    stack: Vec<Entry>,
    ballots: Vec<(ValueId, Option<Set>)>,
}

/// What is known about one collective: not reached yet, proven wherever reached, or an error.
#[derive(Clone)]
enum Verdict {
    Unreached,
    Proven,
    Error(Diagnostic),
}

struct Checker<'a> {
    k: &'a Kernel,
    u: &'a Uniformity,
    cfg: Cfg,
    rows: HashMap<ValueId, Option<Box<[u64; 32]>>>,
    in_cycle: HashMap<BlockId, bool>,
    verdicts: HashMap<InstId, Verdict>,
    /// The live lanes the current run started from, for messages.
    live: u32,
}

/// Every error about member masks that are not the constant full mask in `k` (see the module
/// header), with the collective each is about. `u` is `k`'s uniformity analysis.
pub(crate) fn check_masks_at(k: &Kernel, u: &Uniformity) -> Vec<(InstId, Diagnostic)> {
    let sites: Vec<(BlockId, InstId)> = k
        .placed_insts()
        .filter(|(_, i)| {
            k.insts.get(i.index()).is_some_and(|d| {
                d.op.is_warp_collective() && !crate::analysis::warps::is_full_mask_collective(d.op, &d.args)
            })
        })
        .collect();
    if sites.is_empty() || k.assume_masks.is_some() {
        return vec![];
    }
    if u.is_too_large() || u.is_malformed() {
        return sites
            .iter()
            .map(|&(_, i)| {
                let why = "the kernel is too large for the uniformity analysis, so which lanes execute it is not known";
                (i, not_proven(k, i, why.into()))
            })
            .collect();
    }
    let mut c = Checker {
        k,
        u,
        cfg: Cfg::new(k),
        rows: HashMap::new(),
        in_cycle: HashMap::new(),
        verdicts: sites.iter().map(|&(_, i)| (i, Verdict::Unreached)).collect(),
        live: u32::MAX,
    };
    // The live lanes a warp can start with: whole warps, unless `reqntid` fixes a shape with a
    // partial last warp (without `reqntid` whole warps are a launch precondition,
    // `crate::analysis::warps`).
    let mut starts = vec![u32::MAX];
    if let Some(r) = k.reqntid {
        let t = r.threads() % 32;
        if t != 0 && crate::analysis::warps::first_full_mask_collective(&[], k).is_none() {
            let last = (1u32 << t) - 1;
            starts = if r.threads() < 32 { vec![last] } else { vec![u32::MAX, last] };
        }
    }
    let mut budget = STATE_LIMIT;
    for live in starts {
        c.live = live;
        if !c.run(live, &mut budget) {
            // Past the budget: what is not proven yet is reported so.
            for (&i, v) in c.verdicts.iter_mut() {
                if !matches!(v, Verdict::Error(_)) {
                    *v = Verdict::Error(not_proven(
                        k,
                        i,
                        format!("exploring the kernel's control flow took more than {STATE_LIMIT} states"),
                    ));
                }
            }
            break;
        }
    }
    sites
        .iter()
        .filter_map(|&(_, i)| match c.verdicts.remove(&i) {
            Some(Verdict::Error(d)) => Some((i, d)),
            _ => None,
        })
        .collect()
}

fn inst_span(k: &Kernel, i: InstId) -> Span {
    k.insts.get(i.index()).map(|d| d.span).filter(|s| !s.is_dummy()).unwrap_or(k.span)
}

fn mnemonic(k: &Kernel, i: InstId) -> String {
    k.insts.get(i.index()).map(|d| d.op.mnemonic()).unwrap_or_default()
}

fn not_proven(k: &Kernel, i: InstId, why: String) -> Diagnostic {
    let m = mnemonic(k, i);
    let mut d = Diagnostic::error(format!(
        "cannot prove that the member mask of this `{m}` names exactly the lanes that execute it"
    ));
    let span = inst_span(k, i);
    if !span.is_dummy() {
        d = d.at(span, why);
    } else {
        d = d.with_note(why);
    }
    d.with_note(
        "a `shfl` or `vote` whose mask is not 0xffffffff is accepted only when kir proves, for every warp, that the lanes \
         executing it together are exactly the lanes of its mask (see docs/language.md, \"Barrier verification\")",
    )
}

impl<'a> Checker<'a> {
    /// One symbolic warp from the entry with `live` lanes; false when the budget ran out.
    fn run(&mut self, live: u32, budget: &mut usize) -> bool {
        let start =
            State { stack: vec![Entry { block: Kernel::ENTRY, set: Set::concrete(live), rpc: None }], ballots: vec![] };
        let mut seen: HashSet<State> = HashSet::new();
        let mut todo = vec![start];
        while let Some(s) = todo.pop() {
            if !seen.insert(s.clone()) {
                continue;
            }
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            todo.extend(self.step(s));
        }
        true
    }

    /// Runs the top entry through one block; the states that follow.
    fn step(&mut self, mut s: State) -> Vec<State> {
        loop {
            let Some(top) = s.stack.last() else { return vec![] };
            if Some(top.block) == top.rpc || top.set.is_empty() {
                s.stack.pop();
                continue;
            }
            break;
        }
        let top = s.stack.last().cloned().expect("a top entry");
        let Some(blk) = self.k.blocks.get(top.block.index()) else { return vec![] };
        for &i in &blk.insts {
            let Some(inst) = self.k.insts.get(i.index()) else { continue };
            if !inst.op.is_warp_collective() {
                continue;
            }
            if self.verdicts.contains_key(&i) {
                self.judge(i, &top.set, &s.ballots);
            }
            if let (Op::Vote(VoteMode::Ballot), Some(res)) = (inst.op, inst.result) {
                self.record_ballot(&mut s, i, res, &top.set);
            }
        }
        let goto = |mut s: State, b: BlockId| {
            if let Some(e) = s.stack.last_mut() {
                e.block = b;
            }
            s
        };
        match &blk.term {
            Terminator::Ret(_) => {
                let gone = top.set.clone();
                s.stack.pop();
                for e in &mut s.stack {
                    e.set = e.set.minus(&gone);
                }
                vec![s]
            }
            Terminator::Jmp(t) => vec![goto(s, t.block)],
            Terminator::Br { cond, then_, else_ } => {
                if then_.block == else_.block {
                    return vec![goto(s, then_.block)];
                }
                let (taken, not_taken) = match self.split(top.block, *cond, &top.set) {
                    Split::Fork => return vec![goto(s.clone(), then_.block), goto(s, else_.block)],
                    Split::Sets(t, n) => (t, n),
                };
                if taken.is_empty() {
                    return vec![goto(s, else_.block)];
                }
                if not_taken.is_empty() {
                    return vec![goto(s, then_.block)];
                }
                let r = self.cfg.ipdom(top.block);
                let e0 = s.stack.pop().expect("a top entry");
                if r != e0.rpc {
                    if let Some(r) = r {
                        s.stack.push(Entry { block: r, set: e0.set.clone(), rpc: e0.rpc });
                    }
                }
                if Some(else_.block) != r {
                    s.stack.push(Entry { block: else_.block, set: not_taken, rpc: r });
                }
                if Some(then_.block) != r {
                    s.stack.push(Entry { block: then_.block, set: taken, rpc: r });
                }
                vec![s]
            }
        }
    }

    /// The lanes of `set` that take a branch on `cond` at the end of block `b`, and those that do not.
    fn split(&mut self, b: BlockId, cond: Operand, set: &Set) -> Split {
        if let Some(row) = self.row(cond) {
            let t = (0..32).fold(0u32, |m, l| m | (((row[l] & 1) as u32) << l));
            return Split::Sets(set.and_lanes(t), set.and_lanes(!t));
        }
        if self.u.branch_level(b) <= Level::WarpUniform {
            return Split::Fork;
        }
        if let Operand::Value(v) = cond {
            if let Some((w, holds)) = self.bits_condition(v) {
                return Split::Sets(set.and_lit(Lit::Bits(w, holds)), set.and_lit(Lit::Bits(w, !holds)));
            }
            if self.once_per_thread(v) {
                return Split::Sets(set.and_lit(Lit::Pred(v, true)), set.and_lit(Lit::Pred(v, false)));
            }
        }
        Split::Sets(Set::Unknown, Set::Unknown)
    }

    fn record_ballot(&mut self, s: &mut State, i: InstId, res: ValueId, set: &Set) {
        let _ = i;
        let block_once = match self.k.values.get(res.index()).map(|d| d.def) {
            Some(ValueDef::Inst(_)) => self.once_per_thread(res),
            _ => false,
        };
        let Some(inst) = self.k.insts.get(i.index()) else { return };
        let value = match (block_once, inst.args.first()) {
            (true, Some(&p)) => {
                if let Some(row) = self.row(p) {
                    let t = (0..32).fold(0u32, |m, l| m | (((row[l] & 1) as u32) << l));
                    Some(set.and_lanes(t))
                } else {
                    match p {
                        Operand::Value(v) if self.once_per_thread(v) => Some(set.and_lit(Lit::Pred(v, true))),
                        _ => None,
                    }
                }
            }
            _ => None,
        };
        match s.ballots.binary_search_by_key(&res, |e| e.0) {
            // Executed a second time on this path: other lanes, another value.
            Ok(at) => s.ballots[at].1 = None,
            Err(at) => s.ballots.insert(at, (res, value.filter(|v| *v != Set::Unknown))),
        }
    }

    /// Checks collective `i` executed by `set` (the lanes of one stack entry).
    fn judge(&mut self, i: InstId, set: &Set, ballots: &[(ValueId, Option<Set>)]) {
        if matches!(self.verdicts.get(&i), Some(Verdict::Error(_))) || set.is_empty() {
            return;
        }
        let verdict = match self.judge_inner(i, set, ballots) {
            Ok(()) => Verdict::Proven,
            Err(d) => Verdict::Error(self.explain(d, i)),
        };
        self.verdicts.insert(i, verdict);
    }

    fn judge_inner(&mut self, i: InstId, set: &Set, ballots: &[(ValueId, Option<Set>)]) -> Result<(), Diagnostic> {
        let k = self.k;
        let inst = &k.insts[i.index()];
        let m = inst.op.mnemonic();
        let mask_at = if matches!(inst.op, Op::Shfl(..)) { 2 } else { 1 };
        let mask = inst.args.get(mask_at).copied().ok_or_else(|| not_proven(k, i, "it has no member mask".into()))?;
        let span = inst_span(k, i);
        let warp = self.warp_note();
        let lanes = match set {
            Set::Unknown => {
                return Err(not_proven(
                    k,
                    i,
                    "which lanes execute it depends on a branch condition kir cannot follow (neither computed from \
                     `laneid` and constants, nor warp-uniform, nor a `pred` computed once per thread)"
                        .into(),
                ))
            }
            Set::Known { lanes, lits } if !lits.is_empty() => {
                // Only a mask of the same symbolic set can be proven equal to it.
                let want = match mask {
                    Operand::Value(v) => match ballots.iter().find(|b| b.0 == v) {
                        Some((_, Some(b))) => Some(b.clone()),
                        _ => self.uniform_bits_mask(v),
                    },
                    Operand::Const(_) => None,
                };
                if want.as_ref() == Some(set) {
                    if let Op::Shfl(mode, _) = inst.op {
                        if !self.delta_is_zero(inst.args.get(1).copied(), mode) {
                            return Err(not_proven(
                                k,
                                i,
                                "the lanes executing it are known only symbolically, so kir cannot check that every lane \
                                 it reads is in its mask"
                                    .into(),
                            ));
                        }
                    }
                    return Ok(());
                }
                let names = lits.iter().map(|l| self.lit_text(*l)).collect::<Vec<_>>().join(" and ");
                return Err(not_proven(
                    k,
                    i,
                    format!(
                        "it is executed by lanes {} where {names} (not computable lane by lane before the run); kir \
                         cannot prove that its mask names exactly those lanes",
                        lane_list(*lanes)
                    ),
                ));
            }
            Set::Known { lanes, .. } => *lanes,
        };
        // A concrete set of lanes: the mask must be that set, the same on every lane.
        let mval: u32 = match mask {
            Operand::Const(c) => c.bits as u32,
            Operand::Value(v) => {
                if let Some(row) = self.row(mask) {
                    let l0 = lanes.trailing_zeros() as usize;
                    for l in 0..32 {
                        if lanes & (1 << l) != 0 && row[l] as u32 != row[l0] as u32 {
                            return Err(Diagnostic::error(format!(
                                "lanes {l0} and {l} give this `{m}` different member masks ({:#010x} and {:#010x})",
                                row[l0] as u32, row[l] as u32
                            ))
                            .at(span, "the member mask differs between lanes"));
                        }
                    }
                    row[l0] as u32
                } else if let Some((_, Some(Set::Known { lanes: b, lits }))) = ballots.iter().find(|b| b.0 == v) {
                    if !lits.is_empty() {
                        return Err(not_proven(
                            k,
                            i,
                            format!("its mask `%{}` is a ballot that depends on run-time values", k.value(v).name),
                        ));
                    }
                    *b
                } else {
                    let why = if self.u.value_level(v) <= Level::WarpUniform {
                        format!(
                            "its member mask `%{}` is warp-uniform but not known, while lanes {} execute it; only \
                             lanes selected by bit `laneid` of the mask itself can be proven",
                            k.value(v).name,
                            lane_list(lanes)
                        )
                    } else {
                        format!(
                            "its member mask `%{}` may differ between lanes, and is neither a constant nor a `vote.ballot` \
                             of the lanes that execute it",
                            k.value(v).name
                        )
                    };
                    return Err(not_proven(k, i, why));
                }
            }
        };
        if lanes & !mval != 0 {
            let extra = lanes & !mval;
            return Err(Diagnostic::error(format!(
                "lane{} {} execute{} this `{m}` but {} not in its member mask {mval:#010x}",
                plural(extra),
                lane_list(extra),
                if extra.count_ones() == 1 { "s" } else { "" },
                if extra.count_ones() == 1 { "is" } else { "are" }
            ))
            .at(span, format!("executed by lanes {}{warp}", lane_list(lanes))));
        }
        if mval & !lanes != 0 {
            let missing = mval & !lanes;
            return Err(Diagnostic::error(format!(
                "the member mask {mval:#010x} of this `{m}` names lane{} {} that {} not execute it together with lanes {}",
                plural(missing),
                lane_list(missing),
                if missing.count_ones() == 1 { "does" } else { "do" },
                lane_list(lanes)
            ))
            .at(span, format!("executed by lanes {}{warp}", lane_list(lanes)))
            .with_note(if self.live != u32::MAX && mval & !self.live != 0 {
                format!(
                    "in a warp of {} lanes (a block whose thread count is {} more than a multiple of 32) lanes {} do not exist",
                    self.live.count_ones(),
                    self.live.count_ones(),
                    lane_list(mval & !self.live)
                )
            } else {
                "every lane a mask names must execute the collective at the same time".into()
            }));
        }
        if let Op::Shfl(mode, _) = inst.op {
            let b = inst.args.get(1).copied();
            let deltas: Vec<[u64; 32]> = match b.and_then(|b| self.row(b)) {
                Some(row) => vec![*row],
                None => match b {
                    Some(Operand::Value(v)) if self.u.value_level(v) <= Level::WarpUniform => {
                        (0..32u64).map(|d| [d; 32]).collect()
                    }
                    _ => return Err(not_proven(
                        k,
                        i,
                        "its lane/delta operand differs between lanes in a way kir cannot compute, so the lanes it \
                             reads are not known"
                            .into(),
                    )),
                },
            };
            let uniform_unknown = deltas.len() > 1;
            for row in deltas {
                for l in 0..32usize {
                    if lanes & (1 << l) == 0 {
                        continue;
                    }
                    let j = source_lane(mode, l, row[l]);
                    if mval & (1 << j) == 0 {
                        let how = if uniform_unknown {
                            format!(" (for the warp-uniform {} {})", delta_word(mode), row[l] & 31)
                        } else {
                            String::new()
                        };
                        return Err(Diagnostic::error(format!(
                            "lane {l} reads lane {j}, which is not in the member mask {mval:#010x} of this `{m}`{how}"
                        ))
                        .at(span, format!("reads outside the member mask{warp}"))
                        .with_note(format!(
                            "a shuffle may read only lanes its mask names; lane {j} does not take part, so its value is \
                             undefined on the GPU"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Numbered labels from the collective to what decides which lanes execute it: the branches
    /// whose regions contain it (innermost first), and the definitions of its mask and delta.
    fn explain(&self, mut d: Diagnostic, i: InstId) -> Diagnostic {
        let k = self.k;
        let mut steps: Vec<(Span, String)> = vec![];
        let mut seen = vec![];
        let mut at = self.u.inst_block(i);
        while let Some(b) = at {
            let Some(y) = self.u.block_reason(b) else { break };
            if seen.contains(&y) || steps.len() >= 8 {
                break;
            }
            seen.push(y);
            let blk = k.block(y);
            let cond = match &blk.term {
                Terminator::Br { cond: Operand::Value(c), .. } => format!(" on `%{}`", k.value(*c).name),
                _ => String::new(),
            };
            steps.push((blk.term_span, format!("which lanes get to it depends on this branch{cond}")));
            at = Some(y);
        }
        if let Some(inst) = k.insts.get(i.index()) {
            let mask_at = if matches!(inst.op, Op::Shfl(..)) { 2 } else { 1 };
            let mut operands = vec![(mask_at, "the member mask")];
            if matches!(inst.op, Op::Shfl(..)) {
                operands.push((1, "the lane or delta"));
            }
            for (n, what) in operands {
                if let Some(Operand::Value(v)) = inst.args.get(n) {
                    let vd = k.value(*v);
                    steps.push((vd.span, format!("{what} `%{}` is defined here", vd.name)));
                }
            }
        }
        if steps.is_empty() {
            let entry = k.blocks.first().map(|b| b.span).unwrap_or(k.span);
            steps.push((entry, "no branch chooses lanes before it: every live lane of the warp executes it".into()));
        }
        let mut n = 0;
        for (span, msg) in steps {
            n += 1;
            if span.is_dummy() {
                d = d.with_note(format!("({n}) {msg}"));
            } else {
                d = d.with_label(span, format!("({n}) {msg}"));
            }
        }
        d
    }

    fn warp_note(&self) -> String {
        if self.live == u32::MAX {
            String::new()
        } else {
            format!(" in a partial warp of {} lanes", self.live.count_ones())
        }
    }

    fn delta_is_zero(&mut self, b: Option<Operand>, mode: ShflMode) -> bool {
        match b.and_then(|b| self.row(b)) {
            Some(row) => (0..32).all(|l| source_lane(mode, l, row[l]) == l),
            None => false,
        }
    }

    /// For a warp-uniform mask `%v`: the set "bit `laneid` of `%v` is set" of a full warp.
    fn uniform_bits_mask(&mut self, v: ValueId) -> Option<Set> {
        (self.u.value_level(v) <= Level::WarpUniform && self.once_per_thread(v))
            .then(|| Set::concrete(u32::MAX).and_lit(Lit::Bits(v, true)))
    }

    fn lit_text(&self, l: Lit) -> String {
        let name = |v: ValueId| self.k.values.get(v.index()).map(|d| d.name.to_string()).unwrap_or_default();
        match l {
            Lit::Pred(v, true) => format!("`%{}` holds", name(v)),
            Lit::Pred(v, false) => format!("`%{}` does not hold", name(v)),
            Lit::Bits(v, true) => format!("bit `laneid` of `%{}` is set", name(v)),
            Lit::Bits(v, false) => format!("bit `laneid` of `%{}` is clear", name(v)),
        }
    }

    /// Whether `v` is defined at most once per thread: not in a cycle of the CFG (a kernel
    /// parameter always is).
    fn once_per_thread(&mut self, v: ValueId) -> bool {
        let b = match self.k.values.get(v.index()).map(|d| d.def) {
            Some(ValueDef::Param(_)) => return true,
            Some(ValueDef::BlockParam(b, _)) => b,
            Some(ValueDef::Inst(i)) => match self.u.inst_block(i) {
                Some(b) => b,
                None => return false,
            },
            None => return false,
        };
        if let Some(&c) = self.in_cycle.get(&b) {
            return !c;
        }
        // `b` is in a cycle when it is reachable from one of its successors.
        let mut seen = vec![false; self.k.blocks.len()];
        let mut stack: Vec<BlockId> = self.cfg.succs(b).to_vec();
        let mut cyc = false;
        while let Some(x) = stack.pop() {
            if x == b {
                cyc = true;
                break;
            }
            if std::mem::replace(&mut seen[x.index()], true) {
                continue;
            }
            stack.extend(self.cfg.succs(x).iter().copied());
        }
        self.in_cycle.insert(b, cyc);
        !cyc
    }

    /// `(%w, holds)` when `v` is "bit `laneid` of warp-uniform `%w` is set" (`holds`) or clear:
    /// `ne/eq (and (shr %w, laneid), 1), 0` or `ne/eq (and %w, (shl 1, laneid)), 0`.
    fn bits_condition(&mut self, v: ValueId) -> Option<(ValueId, bool)> {
        let (op, args) = self.def(v)?;
        let Op::Cmp(cmp, _) = op else { return None };
        let holds = match cmp {
            crate::CmpOp::Ne => true,
            crate::CmpOp::Eq => false,
            _ => return None,
        };
        let (x, zero) = match (args.first()?, args.get(1)?) {
            (Operand::Value(x), Operand::Const(c)) | (Operand::Const(c), Operand::Value(x)) if c.bits == 0 => (*x, ()),
            _ => return None,
        };
        let _ = zero;
        let (aop, aargs) = self.def(x)?;
        if !matches!(aop, Op::Bin(crate::BinOp::And, ..)) {
            return None;
        }
        let (a, b) = (aargs.first().copied()?, aargs.get(1).copied()?);
        for (p, q) in [(a, b), (b, a)] {
            // (shr %w, laneid) & 1
            if matches!(q, Operand::Const(c) if c.bits == 1) {
                if let Operand::Value(s) = p {
                    if let Some((Op::Bin(crate::BinOp::Shr, ..), sargs)) = self.def(s) {
                        if let (Some(Operand::Value(w)), Some(&l)) = (sargs.first().copied(), sargs.get(1)) {
                            if self.is_lane_index(l) && self.is_uniform_once(w) {
                                return Some((w, holds));
                            }
                        }
                    }
                }
            }
            // %w & (shl 1, laneid)
            if let (Operand::Value(w), Operand::Value(s)) = (p, q) {
                if let Some((Op::Bin(crate::BinOp::Shl, ..), sargs)) = self.def(s) {
                    if matches!(sargs.first(), Some(Operand::Const(c)) if c.bits == 1)
                        && sargs.get(1).is_some_and(|&l| self.is_lane_index(l))
                        && self.is_uniform_once(w)
                    {
                        return Some((w, holds));
                    }
                }
            }
        }
        None
    }

    fn is_uniform_once(&mut self, w: ValueId) -> bool {
        self.u.value_level(w) <= Level::WarpUniform && self.once_per_thread(w)
    }

    fn is_lane_index(&mut self, o: Operand) -> bool {
        self.row(o).is_some_and(|r| (0..32).all(|l| r[l] == l as u64))
    }

    fn def(&self, v: ValueId) -> Option<(Op, Vec<Operand>)> {
        match self.k.values.get(v.index())?.def {
            ValueDef::Inst(i) => {
                let d = self.k.insts.get(i.index())?;
                Some((d.op, d.args.to_vec()))
            }
            _ => None,
        }
    }

    /// The value of `o` on each lane when it is computed from `laneid` (and `tid.x` under
    /// `reqntid(32, ..)`) and constants by pure ops; `None` otherwise.
    fn row(&mut self, o: Operand) -> Option<Box<[u64; 32]>> {
        match o {
            Operand::Const(c) => Some(Box::new([c.bits; 32])),
            Operand::Value(v) => self.row_of(v, 0),
        }
    }

    fn row_of(&mut self, v: ValueId, depth: usize) -> Option<Box<[u64; 32]>> {
        if let Some(r) = self.rows.get(&v) {
            return r.clone();
        }
        // Deep chains are not followed (unknown is always sound).
        if depth > 64 {
            return None;
        }
        let r = self.compute_row(v, depth);
        self.rows.insert(v, r.clone());
        r
    }

    fn compute_row(&mut self, v: ValueId, depth: usize) -> Option<Box<[u64; 32]>> {
        let (op, args) = self.def(v)?;
        let lanes: [u64; 32] = std::array::from_fn(|l| l as u64);
        match op {
            Op::Special(SpecialReg::LaneId) => return Some(Box::new(lanes)),
            Op::Special(SpecialReg::Tid(crate::Dim::X)) if self.k.reqntid.is_some_and(|r| r.dims[0] == 32) => {
                return Some(Box::new(lanes))
            }
            _ if !op.is_pure() => return None,
            _ => {}
        }
        let mut rows = Vec::with_capacity(args.len());
        for a in &args {
            rows.push(match *a {
                Operand::Const(c) => Box::new([c.bits; 32]),
                Operand::Value(w) => self.row_of(w, depth + 1)?,
            });
        }
        let refs: Vec<&[u64; 32]> = rows.iter().map(|r| &**r).collect();
        let mut out = [0u64; 32];
        crate::eval::eval_lanes(&op, &refs, &mut out, u32::MAX);
        Some(Box::new(out))
    }
}

enum Split {
    /// A warp-uniform condition: every lane of the entry goes the same way, either way.
    Fork,
    /// The lanes that take the `then` edge and those that take `else`.
    Sets(Set, Set),
}

fn plural(m: u32) -> &'static str {
    if m.count_ones() == 1 {
        ""
    } else {
        "s"
    }
}

fn delta_word(mode: ShflMode) -> &'static str {
    match mode {
        ShflMode::Idx => "source lane",
        _ => "delta",
    }
}

/// The lane lane `l` reads, as the interpreter and PTX define it (out of range: itself).
fn source_lane(mode: ShflMode, l: usize, b: u64) -> usize {
    let (lane, d) = (l as i64, (b & 31) as i64);
    let (j, ok) = match mode {
        ShflMode::Up => (lane - d, lane - d >= 0),
        ShflMode::Down => (lane + d, lane + d <= 31),
        ShflMode::Bfly => (lane ^ d, true),
        ShflMode::Idx => (d, true),
    };
    if ok {
        j as usize
    } else {
        l
    }
}
