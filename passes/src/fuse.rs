//! `fuse`: kernel fusion over the launch graphs of a module (a module pass).
//!
//! For two launches of a graph with the same grid and block, the fused kernel runs, in each
//! thread, the first kernel's code and then the second's (every `ret` of the first becomes a jump
//! to the second). That is equivalent to the two launches exactly when no thread can see another
//! thread's effect through a buffer the two share, which this pass proves before fusing:
//!
//! Guarantees:
//! - Two launches are fused only when: both kernels exist; grid and block are the same
//!   expressions; neither kernel uses barriers, shared memory or warp collectives; and for every
//!   buffer one writes and the other accesses ("shared buffers"), every access in both kernels is
//!   a plain load or store (no atomics) through the parameter itself at one common index, the same
//!   function of the thread (`global_id.x`, or `ctaid.x * ntid.x + tid.x`, possibly widened, with a
//!   1-D grid and block) — so each element is touched only by the thread that owns it. Launches
//!   between them must allow the reordering (the merged launch takes the place of the first when
//!   no launch in between feeds the second, else of the second when the first feeds none of them).
//! - Vertical fusion (the pair depends through a buffer) and horizontal fusion (independent pair)
//!   use the same construction. When both kernels start with the same bounds guard (`br` on the
//!   same comparison of the same index against the same uniform values, to an exit block that
//!   only returns), the guards are merged: threads outside run neither body. Otherwise both guards
//!   stay, in sequence, which is also correct (a thread rejected by the first guard runs the
//!   second kernel's code on memory exactly as the unfused launches would leave it).
//! - Store-to-load forwarding: a load by the second kernel of a shared buffer takes the value of
//!   the first kernel's last store to it when that store dominates the start of the second
//!   kernel's code and the second kernel does not write the buffer. A store is removed when a later
//!   store to the same element post-dominates it and nothing loads the buffer in the fused kernel;
//!   a temporary no launch reads any more loses its stores, its kernel parameter and its
//!   declaration.
//! - Every other candidate pair is left alone, and [`FusionReport`] says why (every reason found,
//!   not only the first). The original kernels stay in the module; fused kernels are added, named
//!   `@first.second` (intermediate ones that a later fusion absorbed are not kept). A fused kernel that fails the verifier is discarded (reported, never
//!   returned).
//! - Kernels that call device functions are seen through: decisions are taken on a copy of the
//!   module with every call inlined (`kir_ir::inline::inline_module`), so a callee's loads,
//!   stores, barriers and collectives count as the kernel's, and a fused kernel is built from the
//!   inlined code (it has no call). The module's kernels and functions themselves are unchanged.
//!   When inlining fails (growth past its limit), no pair of a graph launching a kernel with calls
//!   is fused, and each refusal says why ([`Reason::Calls`]).
//! - Interpreter results of the graph before and after the pass are bit-identical (tests).

use crate::pass::{ModulePass, PassContext};
use kir_ir::analysis::cfg::Cfg;
use kir_ir::analysis::effects::{dependency_graph, Hazard};
use kir_ir::analysis::provenance::pointer_origins;
use kir_ir::graph::{Launch, LaunchArg};
use kir_ir::op::{BinOp, Dim, Op, SpecialReg};
use kir_ir::text::printer::print_constant;
use kir_ir::{BlockCall, BlockId, Constant, InstId, Kernel, Module, Operand, Span, Terminator, ValueDef, ValueId};
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// The `fuse` pass. With `explain` (`fuse{explain}`, or `kir opt --print-fusion`), every decision
/// is also reported as a note located at the launches it is about.
#[derive(Default)]
pub struct Fuse {
    pub explain: bool,
}

impl ModulePass for Fuse {
    fn name(&self) -> &'static str {
        "fuse"
    }

    fn run(&self, m: &mut Module, cx: &mut PassContext) -> bool {
        let report = fuse_module(m);
        report.add_stats(&mut cx.stats);
        if self.explain {
            cx.diagnostics.extend(report.notes());
        }
        report.changed()
    }

    /// Fusion only reports warnings (its `explain` notes): it never rejects a module.
    fn may_reject(&self) -> bool {
        false
    }
}

/// How two launches relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusionKind {
    /// The second depends on the first through a buffer.
    Vertical,
    /// Independent launches.
    Horizontal,
}

impl FusionKind {
    pub fn name(self) -> &'static str {
        match self {
            FusionKind::Vertical => "vertical",
            FusionKind::Horizontal => "horizontal",
        }
    }
}

/// Why a candidate pair was not fused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    UnknownKernel(String),
    /// Different grid or block expressions.
    DifferentShape {
        what: &'static str,
        first: String,
        second: String,
    },
    Barrier(String),
    SharedMemory(String),
    WarpCollective(String),
    /// A vector access or async copy: several elements per thread, which the index proof does not
    /// cover.
    VectorMemory(String),
    Atomic {
        kernel: String,
        buffer: String,
    },
    /// A shared buffer accessed through a derived pointer (`offset`, `ptrcast`, block argument).
    DerivedPointer {
        kernel: String,
        buffer: String,
    },
    /// A shared buffer accessed at an index that is not the accessing thread's own element.
    CrossThread {
        kernel: String,
        buffer: String,
        access: &'static str,
        index: String,
    },
    /// Thread-private accesses at two different indices.
    DifferentIndex {
        buffer: String,
        first: String,
        second: String,
    },
    /// The thread index is only injective on a 1-D launch.
    MultiDimensional,
    /// A launch in between forbids moving either launch next to the other.
    Ordering {
        between: usize,
        kernel: String,
    },
    /// The fused kernel did not verify (a bug in this pass; the pair is left alone).
    Internal(String),
    /// A kernel of the graph calls functions that could not be inlined for the analysis, so what
    /// its launch reads and writes is not known.
    Calls {
        kernel: String,
        callee: String,
        why: String,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::UnknownKernel(k) => write!(f, "unknown kernel @{k}"),
            Reason::DifferentShape { what, first, second } => {
                write!(f, "different shapes: {what}({first}) vs {what}({second})")
            }
            Reason::Barrier(k) => write!(f, "barrier: @{k} synchronizes its block"),
            Reason::SharedMemory(k) => write!(f, "shared memory: @{k} uses shared memory"),
            Reason::WarpCollective(k) => write!(f, "warp collective: @{k} uses shfl, vote, mma or ldmatrix"),
            Reason::VectorMemory(k) => {
                write!(f, "vector memory: @{k} uses load.vN, store.vN or cp.async (several elements per thread)")
            }
            Reason::Atomic { kernel, buffer } => write!(f, "atomic: @{kernel} uses atomics on %{buffer}"),
            Reason::DerivedPointer { kernel, buffer } => {
                write!(
                    f,
                    "derived pointer: @{kernel} accesses %{buffer} through a derived pointer, so its index is unknown"
                )
            }
            Reason::CrossThread { kernel, buffer, access, index } => write!(
                f,
                "cross-thread {access}: @{kernel} {access}s %{buffer} at {index}, not only at its own thread's element"
            ),
            Reason::DifferentIndex { buffer, first, second } => {
                write!(f, "different indices: %{buffer} is accessed at {first} and at {second}")
            }
            Reason::MultiDimensional => {
                write!(f, "multi-dimensional launch: only 1-D thread indices are proven thread-private")
            }
            Reason::Ordering { between, kernel } => {
                write!(
                    f,
                    "ordering: launch {between} (@{kernel}) between them depends on the first and feeds the second"
                )
            }
            Reason::Internal(msg) => write!(f, "internal: the fused kernel does not verify ({msg})"),
            Reason::Calls { kernel, callee, why } => write!(
                f,
                "calls: @{kernel} calls @{callee}, and the calls could not be inlined to see what the launch reads and writes ({why})"
            ),
        }
    }
}

/// What happened to one candidate pair (launch indices at the time of the decision).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub graph: String,
    pub kind: FusionKind,
    pub first: (usize, String),
    pub second: (usize, String),
    pub outcome: Result<Fused, Vec<Reason>>,
    /// Where the graph and the two launches are written (dummy for launches made by the pass).
    pub spans: [Span; 3],
}

/// A fusion that was done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fused {
    pub kernel: String,
    pub loads_forwarded: usize,
    pub stores_removed: usize,
    pub temps_removed: Vec<String>,
}

/// Every decision of a run of the pass, in order: fusions as they were done, then every pair that
/// was still a candidate when nothing more could be fused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FusionReport {
    pub decisions: Vec<Decision>,
}

impl FusionReport {
    /// The decisions about one graph.
    pub fn for_graph(&self, graph: &str) -> FusionReport {
        FusionReport { decisions: self.decisions.iter().filter(|d| d.graph == graph).cloned().collect() }
    }

    pub fn changed(&self) -> bool {
        self.decisions.iter().any(|d| d.outcome.is_ok())
    }

    pub fn add_stats(&self, stats: &mut crate::pass::PassStats) {
        let mut v = 0;
        let mut h = 0;
        let mut fwd = 0;
        let mut st = 0;
        let mut tmp = 0;
        let mut no = 0;
        for d in &self.decisions {
            match &d.outcome {
                Ok(f) => {
                    match d.kind {
                        FusionKind::Vertical => v += 1,
                        FusionKind::Horizontal => h += 1,
                    }
                    fwd += f.loads_forwarded as u64;
                    st += f.stores_removed as u64;
                    tmp += f.temps_removed.len() as u64;
                }
                Err(_) => no += 1,
            }
        }
        stats.add("launch pairs fused vertically", v);
        stats.add("launch pairs fused horizontally", h);
        stats.add("loads forwarded", fwd);
        stats.add("stores removed", st);
        stats.add("temporaries removed", tmp);
        stats.add("candidate pairs not fused", no);
    }

    /// Each decision as a note diagnostic at the second launch (or the graph).
    pub fn notes(&self) -> Vec<kir_ir::Diagnostic> {
        self.decisions
            .iter()
            .map(|d| {
                let pair = format!(
                    "launch {} @{} + launch {} @{} ({})",
                    d.first.0,
                    d.first.1,
                    d.second.0,
                    d.second.1,
                    d.kind.name()
                );
                let mut diag = match &d.outcome {
                    Ok(f) => kir_ir::Diagnostic::warning(format!("fused {pair} into @{}", f.kernel)),
                    Err(reasons) => {
                        reasons.iter().fold(kir_ir::Diagnostic::warning(format!("not fused: {pair}")), |dg, r| {
                            dg.with_note(r.to_string())
                        })
                    }
                };
                diag.severity = kir_ir::Severity::Note;
                let [g, a, b] = d.spans;
                match (a.is_dummy(), b.is_dummy()) {
                    (_, false) => {
                        diag = diag.at(b, "second launch");
                        if !a.is_dummy() {
                            diag = diag.with_label(a, "first launch");
                        }
                    }
                    (false, true) => diag = diag.at(a, "first launch"),
                    (true, true) if !g.is_dummy() => diag = diag.at(g, format!("in graph @{}", d.graph)),
                    _ => {}
                }
                diag
            })
            .collect()
    }

    /// The `--print-fusion` text.
    pub fn text(&self) -> String {
        let mut out = String::from("*** Fusion decisions ***\n");
        let mut graph = None;
        for d in &self.decisions {
            if graph != Some(&d.graph) {
                out.push_str(&format!("graph @{}:\n", d.graph));
                graph = Some(&d.graph);
            }
            let pair = format!("{} @{} + {} @{} ({})", d.first.0, d.first.1, d.second.0, d.second.1, d.kind.name());
            match &d.outcome {
                Ok(f) => {
                    out.push_str(&format!("  fused {pair} into @{}", f.kernel));
                    let mut extra = vec![];
                    if f.loads_forwarded > 0 {
                        extra.push(format!("{} load(s) forwarded", f.loads_forwarded));
                    }
                    if f.stores_removed > 0 {
                        extra.push(format!("{} store(s) removed", f.stores_removed));
                    }
                    if !f.temps_removed.is_empty() {
                        let t: Vec<String> = f.temps_removed.iter().map(|t| format!("%{t}")).collect();
                        extra.push(format!("temporary {} removed", t.join(", ")));
                    }
                    if !extra.is_empty() {
                        out.push_str(&format!(": {}", extra.join(", ")));
                    }
                    out.push('\n');
                }
                Err(reasons) => {
                    out.push_str(&format!("  not fused {pair}:\n"));
                    for r in reasons {
                        out.push_str(&format!("    - {r}\n"));
                    }
                }
            }
        }
        if self.decisions.is_empty() {
            out.push_str("  no candidate pairs\n");
        }
        out
    }
}

/// Fuses every graph of `m` until no candidate pair can be fused.
///
/// Kernels that call functions are seen through: the decisions are taken on a copy of the module
/// with every call inlined (a call's loads and stores are its callee's, which the dependency graph
/// and the thread-privacy proof must see), and the fused kernels, built from the inlined code, are
/// call-free. The module's own kernels and functions are left as they are. When that copy cannot
/// be made, no pair of a graph that launches a kernel with calls is fused ([`Reason::Calls`]).
pub fn fuse_module(m: &mut Module) -> FusionReport {
    let launched: BTreeSet<&str> = m.graphs.iter().flat_map(|g| g.launches.iter().map(|l| l.kernel.as_str())).collect();
    if !m.kernels.iter().any(|k| !k.callees.is_empty() && launched.contains(k.name.as_str())) {
        return fuse_module_with(m, &[]);
    }
    let mut view = m.clone();
    match kir_ir::inline::inline_module(&mut view) {
        Ok(_) => {
            let report = fuse_module_with(&mut view, &[]);
            let original: BTreeSet<String> = m.kernels.iter().map(|k| k.name.clone()).collect();
            m.graphs = view.graphs;
            m.kernels.extend(view.kernels.into_iter().filter(|k| !original.contains(&k.name)));
            report
        }
        Err(e) => {
            // Without the callees' effects, the dependency graph of a graph launching such a
            // kernel is not known: refuse every pair there.
            let blocked: Vec<Option<Reason>> = m
                .graphs
                .iter()
                .map(|g| {
                    g.launches.iter().find_map(|l| {
                        let k = m.kernel(&l.kernel).filter(|k| !k.callees.is_empty())?;
                        Some(Reason::Calls {
                            kernel: k.name.clone(),
                            callee: k.callees[0].name.clone(),
                            why: e.message.clone(),
                        })
                    })
                })
                .collect();
            fuse_module_with(m, &blocked)
        }
    }
}

/// [`fuse_module`] on a module whose launched kernels are call-free, except in the graphs with a
/// `blocked` reason, whose every pair is refused with it.
fn fuse_module_with(m: &mut Module, blocked: &[Option<Reason>]) -> FusionReport {
    let mut report = FusionReport::default();
    let original: BTreeSet<String> = m.kernels.iter().map(|k| k.name.clone()).collect();
    for gi in 0..m.graphs.len() {
        loop {
            let (done, refused) = fuse_step(m, gi, blocked.get(gi).and_then(|b| b.as_ref()));
            match done {
                Some(d) => report.decisions.push(d),
                None => {
                    report.decisions.extend(refused);
                    break;
                }
            }
        }
    }
    // Fused kernels that a later fusion superseded are launched by no graph: drop them.
    let launched: BTreeSet<String> =
        m.graphs.iter().flat_map(|g| g.launches.iter().map(|l| l.kernel.clone())).collect();
    m.kernels.retain(|k| original.contains(&k.name) || launched.contains(&k.name));
    report
}

/// Tries every candidate pair of graph `gi` in order; applies the first fusion that is legal.
/// Returns it, or (when none is) every refusal.
fn fuse_step(m: &mut Module, gi: usize, blocked: Option<&Reason>) -> (Option<Decision>, Vec<Decision>) {
    let g = &m.graphs[gi];
    let dag = dependency_graph(m, g);
    let n = g.launches.len();
    let mut edge = vec![vec![None::<Vec<Hazard>>; n]; n];
    for e in dag.edge_indices() {
        if let Some((a, b)) = dag.edge_endpoints(e) {
            edge[dag[a]][dag[b]] = Some(dag[e].iter().map(|d| d.hazard).collect());
        }
    }
    // Reachability (launch order is a topological order).
    let mut reach = vec![vec![false; n]; n];
    for i in (0..n).rev() {
        for j in i + 1..n {
            if edge[i][j].is_some() {
                reach[i][j] = true;
                let (head, tail) = reach.split_at_mut(j);
                for (r, &via) in head[i].iter_mut().zip(&tail[0]) {
                    *r |= via;
                }
            }
        }
    }
    let mut refused = Vec::new();
    for j in 0..n {
        for i in 0..j {
            let kind = if edge[i][j].is_some() {
                FusionKind::Vertical
            } else if !reach[i][j] {
                FusionKind::Horizontal
            } else {
                // Dependent only through launches in between: never adjacent-able.
                continue;
            };
            let g = &m.graphs[gi];
            let (li, lj) = (&g.launches[i], &g.launches[j]);
            let mut reasons: Vec<Reason> = blocked.into_iter().cloned().collect();
            // Where can the merged launch go?
            let up = (i + 1..j).all(|k| edge[k][j].is_none());
            let down = (i + 1..j).all(|k| edge[i][k].is_none());
            if !up && !down {
                let k = (i + 1..j)
                    .find(|&k| edge[i][k].is_some() && reach[k][j])
                    .or_else(|| (i + 1..j).find(|&k| edge[k][j].is_some()))
                    .unwrap_or(i + 1);
                reasons.push(Reason::Ordering { between: k, kernel: g.launches[k].kernel.clone() });
            }
            match plan(m, li, lj, &mut reasons) {
                Some(fused) if reasons.is_empty() => {
                    let d = apply(m, gi, i, j, up, fused, kind);
                    match d.outcome {
                        Ok(_) => return (Some(d), vec![]),
                        Err(_) => refused.push(d),
                    }
                }
                _ => refused.push(Decision {
                    graph: g.name.clone(),
                    kind,
                    first: (i, li.kernel.clone()),
                    second: (j, lj.kernel.clone()),
                    outcome: Err(reasons),
                    spans: [g.span, li.span, lj.span],
                }),
            }
        }
    }
    (None, refused)
}

/// A canonical, per-thread value: equal terms have equal values in every thread of launches with
/// the same shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Term {
    Special(SpecialReg),
    Arg(LaunchArg),
    Const(Constant),
    Op(Op, Vec<Term>),
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Special(r) => f.write_str(&Op::Special(*r).mnemonic()),
            Term::Arg(a) => f.write_str(&kir_ir::text::printer::print_launch_arg(a)),
            Term::Const(c) => f.write_str(&print_constant(*c)),
            Term::Op(op, args) => {
                let a: Vec<String> = args.iter().map(|t| t.to_string()).collect();
                write!(f, "{}({})", op.mnemonic(), a.join(", "))
            }
        }
    }
}

/// Terms of a kernel's values as launched by `launch`.
struct Terms<'a> {
    k: &'a Kernel,
    launch: &'a Launch,
    memo: HashMap<ValueId, Option<Term>>,
}

impl<'a> Terms<'a> {
    fn new(k: &'a Kernel, launch: &'a Launch) -> Self {
        Terms { k, launch, memo: HashMap::new() }
    }

    fn operand(&mut self, o: Operand) -> Option<Term> {
        match o {
            Operand::Const(c) => Some(Term::Const(c)),
            Operand::Value(v) => self.value(v),
        }
    }

    fn value(&mut self, v: ValueId) -> Option<Term> {
        if let Some(t) = self.memo.get(&v) {
            return t.clone();
        }
        self.memo.insert(v, None);
        let t = self.compute(v);
        self.memo.insert(v, t.clone());
        t
    }

    fn compute(&mut self, v: ValueId) -> Option<Term> {
        let d = self.k.values.get(v.index())?;
        match d.def {
            ValueDef::Param(i) => self.launch.args.get(i as usize).map(|a| Term::Arg(a.clone())),
            ValueDef::BlockParam(..) => None,
            ValueDef::Inst(i) => {
                let inst = self.k.insts.get(i.index())?;
                if let Op::Special(r) = inst.op {
                    return Some(Term::Special(r));
                }
                if !inst.op.is_pure() {
                    return None;
                }
                let args: Option<Vec<Term>> = inst.args.clone().into_iter().map(|a| self.operand(a)).collect();
                Some(normalize(inst.op, args?))
            }
        }
    }
}

fn normalize(op: Op, args: Vec<Term>) -> Term {
    let sp = |t: &Term| match t {
        Term::Special(r) => Some(*r),
        _ => None,
    };
    let global = |c: &Term, n: &Term, t: &Term| -> Option<Term> {
        for d in Dim::ALL {
            let (a, b) = (sp(c)?, sp(n)?);
            let pair = (a == SpecialReg::Ctaid(d) && b == SpecialReg::Ntid(d))
                || (a == SpecialReg::Ntid(d) && b == SpecialReg::Ctaid(d));
            if pair && sp(t)? == SpecialReg::Tid(d) {
                return Some(Term::Special(SpecialReg::GlobalId(d)));
            }
        }
        None
    };
    match (&op, args.as_slice()) {
        // Zero-extension does not change an index.
        (Op::Cvt { to, from, sat: false, .. }, [a])
            if to.is_int() && from.is_unsigned_int() && to.bits() >= from.bits() =>
        {
            a.clone()
        }
        (Op::Mad(kir_ir::ScalarType::U32), [c, n, t]) => global(c, n, t).unwrap_or(Term::Op(op, args)),
        (Op::Bin(BinOp::Add, kir_ir::ScalarType::U32, _), [x, y]) => {
            let try_mul = |m: &Term, t: &Term| match m {
                Term::Op(Op::Bin(BinOp::Mul, kir_ir::ScalarType::U32, _), ma) if ma.len() == 2 => {
                    global(&ma[0], &ma[1], t)
                }
                _ => None,
            };
            try_mul(x, y).or_else(|| try_mul(y, x)).unwrap_or(Term::Op(op, args))
        }
        _ => Term::Op(op, args),
    }
}

/// One memory access of a kernel to a graph buffer.
struct Access {
    kind: &'static str,
    index: Option<Term>,
    direct: bool,
    atomic: bool,
}

/// Every access of kernel `k` (launched as `l`) to graph buffer `buf`.
fn accesses(k: &Kernel, l: &Launch, buf: &str, origins: &[BTreeSet<u32>], terms: &mut Terms<'_>) -> Vec<Access> {
    let bound: Vec<u32> = l.value_args().filter(|(_, n)| *n == buf).map(|(i, _)| i as u32).collect();
    let mut out = Vec::new();
    for (_, i) in k.placed_insts() {
        let d = k.inst(i);
        let (kind, atomic) = match d.op {
            Op::Load => ("read", false),
            Op::Store => ("write", false),
            Op::Atomic(_) | Op::AtomicCas => ("write", true),
            _ => continue,
        };
        let Some(Operand::Value(p)) = d.args.first().copied() else { continue };
        let from: &BTreeSet<u32> = match origins.get(p.index()) {
            Some(o) => o,
            None => continue,
        };
        if !bound.iter().any(|b| from.contains(b)) {
            continue;
        }
        let direct = matches!(k.value(p).def, ValueDef::Param(n) if bound.contains(&n));
        let index = d.args.get(1).and_then(|o| terms.operand(*o));
        out.push(Access { kind, index, direct, atomic });
    }
    out
}

/// What `plan` proved: the buffers the two launches share, each at its thread-private index.
struct Plan {
    shared: Vec<String>,
}

fn plan(m: &Module, li: &Launch, lj: &Launch, reasons: &mut Vec<Reason>) -> Option<Plan> {
    let (Some(kp), Some(kc)) = (m.kernel(&li.kernel), m.kernel(&lj.kernel)) else {
        for l in [li, lj] {
            if m.kernel(&l.kernel).is_none() {
                reasons.push(Reason::UnknownKernel(l.kernel.clone()));
            }
        }
        return None;
    };
    for (what, a, b) in [("grid", &li.grid, &lj.grid), ("block", &li.block, &lj.block)] {
        if a != b {
            reasons.push(Reason::DifferentShape {
                what,
                first: kir_ir::text::printer::print_dims(a),
                second: kir_ir::text::printer::print_dims(b),
            });
        }
    }
    for k in [kp, kc] {
        let ops: Vec<&Op> = k.placed_insts().map(|(_, i)| &k.inst(i).op).collect();
        if ops.iter().any(|o| matches!(o, Op::Barrier)) {
            reasons.push(Reason::Barrier(k.name.clone()));
        }
        if !k.shared.is_empty() || ops.iter().any(|o| matches!(o, Op::SharedAddr(_))) {
            reasons.push(Reason::SharedMemory(k.name.clone()));
        }
        if ops.iter().any(|o| o.is_warp_collective()) {
            reasons.push(Reason::WarpCollective(k.name.clone()));
        }
        if ops.iter().any(|o| matches!(o, Op::LoadVec(_) | Op::StoreVec(_) | Op::CpAsync(_))) {
            reasons.push(Reason::VectorMemory(k.name.clone()));
        }
    }
    let ep = kir_ir::analysis::effects::launch_effects(m, li);
    let ec = kir_ir::analysis::effects::launch_effects(m, lj);
    let mut shared: BTreeSet<String> = BTreeSet::new();
    shared.extend(ep.writes.intersection(&ec.reads).cloned());
    shared.extend(ep.writes.intersection(&ec.writes).cloned());
    shared.extend(ep.reads.intersection(&ec.writes).cloned());
    let one_d = |l: &Launch| l.grid[1..].iter().chain(&l.block[1..]).all(|e| *e == kir_ir::graph::Expr::Int(1));
    if !shared.is_empty() && (!one_d(li) || !one_d(lj)) {
        reasons.push(Reason::MultiDimensional);
    }
    let (op_, oc) = (pointer_origins(kp), pointer_origins(kc));
    let (mut tp, mut tc) = (Terms::new(kp, li), Terms::new(kc, lj));
    for buf in &shared {
        let mut common: Option<Term> = None;
        let sides = [(kp, accesses(kp, li, buf, &op_, &mut tp)), (kc, accesses(kc, lj, buf, &oc, &mut tc))];
        let mut flagged = BTreeSet::new();
        for (k, accs) in &sides {
            for a in accs {
                if a.atomic {
                    if flagged.insert(("atomic", k.name.clone())) {
                        reasons.push(Reason::Atomic { kernel: k.name.clone(), buffer: buf.clone() });
                    }
                    continue;
                }
                if !a.direct {
                    if flagged.insert(("derived", k.name.clone())) {
                        reasons.push(Reason::DerivedPointer { kernel: k.name.clone(), buffer: buf.clone() });
                    }
                    continue;
                }
                let private = matches!(a.index, Some(Term::Special(SpecialReg::GlobalId(Dim::X))));
                if !private {
                    if flagged.insert(("cross", k.name.clone())) {
                        let index = match &a.index {
                            Some(t) => format!("`{t}`"),
                            None => "an index computed in a loop or from memory".to_string(),
                        };
                        reasons.push(Reason::CrossThread {
                            kernel: k.name.clone(),
                            buffer: buf.clone(),
                            access: a.kind,
                            index,
                        });
                    }
                    continue;
                }
                match &common {
                    None => common = a.index.clone(),
                    Some(c) if Some(c) != a.index.as_ref() => {
                        if flagged.insert(("index", String::new())) {
                            reasons.push(Reason::DifferentIndex {
                                buffer: buf.clone(),
                                first: format!("`{c}`"),
                                second: a.index.as_ref().map(|t| format!("`{t}`")).unwrap_or_default(),
                            });
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }
    Some(Plan { shared: shared.into_iter().collect() })
}

/// Builds the fused kernel and rewrites graph `gi`; returns the decision.
fn apply(m: &mut Module, gi: usize, i: usize, j: usize, up: bool, plan: Plan, kind: FusionKind) -> Decision {
    let g = &m.graphs[gi];
    let (li, lj) = (g.launches[i].clone(), g.launches[j].clone());
    let mut decision = Decision {
        graph: g.name.clone(),
        kind,
        first: (i, li.kernel.clone()),
        second: (j, lj.kernel.clone()),
        outcome: Err(vec![]),
        spans: [g.span, li.span, lj.span],
    };
    let (Some(kp), Some(kc)) = (m.kernel(&li.kernel), m.kernel(&lj.kernel)) else {
        decision.outcome = Err(vec![Reason::UnknownKernel(li.kernel.clone())]);
        return decision;
    };
    let name = fresh_kernel_name(m, &format!("{}.{}", li.kernel, lj.kernel));
    let p_writes = kir_ir::analysis::effects::launch_effects(m, &li).writes;
    let mut b = Builder::new(name, kp, kc, &li, &lj);
    b.splice(&p_writes);
    let forwarded = b.forward(&plan.shared);
    let mut removed = b.remove_dead_stores(&plan.shared);
    // Temporaries no other launch of the graph uses.
    let mut dead_temps = vec![];
    for t in &g.temps {
        let used_elsewhere =
            g.launches.iter().enumerate().any(|(x, l)| x != i && x != j && l.value_args().any(|(_, n)| n == t.name));
        if used_elsewhere || !b.args.contains(&LaunchArg::Value(t.name.clone())) {
            continue;
        }
        if let Some(n) = b.drop_unread_buffer(&t.name) {
            removed += n;
            dead_temps.push(t.name.clone());
        }
    }
    let (mut fused, args) = b.finish();
    fused.compact();
    let errs: Vec<String> = kir_ir::verify::verify_body(&fused, None, None)
        .0
        .into_iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect();
    if !errs.is_empty() {
        decision.outcome = Err(vec![Reason::Internal(errs.join("; "))]);
        return decision;
    }
    let launch = Launch {
        kernel: fused.name.clone(),
        grid: li.grid.clone(),
        block: li.block.clone(),
        shared_bytes: None,
        args,
        span: Span::DUMMY,
        arg_spans: vec![],
    };
    decision.outcome = Ok(Fused {
        kernel: fused.name.clone(),
        loads_forwarded: forwarded,
        stores_removed: removed,
        temps_removed: dead_temps.clone(),
    });
    m.kernels.push(fused);
    let g = &mut m.graphs[gi];
    if up {
        g.launches[i] = launch;
        g.launches.remove(j);
    } else {
        g.launches[j] = launch;
        g.launches.remove(i);
    }
    g.temps.retain(|t| !dead_temps.contains(&t.name));
    decision
}

fn fresh_kernel_name(m: &Module, base: &str) -> String {
    // Kernel and function names share one namespace.
    let free = |n: &str| m.kernel(n).is_none() && m.func(n).is_none();
    if free(base) {
        return base.to_string();
    }
    (1..).map(|i| format!("{base}.{i}")).find(|n| free(n)).unwrap_or_else(|| base.to_string())
}

/// Unused names for a kernel under construction: each call returns `base` when it is free, else
/// the first free `base.N` (N = 1, 2, ...), in expected constant time. It keeps the names taken
/// and, per base, the next suffix to try: names are never given back, so no smaller suffix can
/// become free again.
#[derive(Default)]
struct FreshNames {
    taken: std::collections::HashSet<String>,
    next_suffix: HashMap<String, u32>,
}

impl FreshNames {
    fn fresh(&mut self, base: &str) -> String {
        let name = if self.taken.contains(base) {
            let next = self.next_suffix.entry(base.to_string()).or_insert(1);
            loop {
                let candidate = format!("{base}.{next}");
                *next += 1;
                if !self.taken.contains(&candidate) {
                    break candidate;
                }
            }
        } else {
            base.to_string()
        };
        self.taken.insert(name.clone());
        name
    }
}

/// The value and block names of the fused kernel (two namespaces).
#[derive(Default)]
struct Names {
    values: FreshNames,
    blocks: FreshNames,
}

/// Where one source kernel's entities went in the fused kernel.
#[derive(Default)]
struct Side {
    params: Vec<ValueId>,
    values: Vec<Option<ValueId>>,
    blocks: Vec<BlockId>,
    insts: Vec<(InstId, InstId)>,
    /// Blocks created for this side (not the shared entry).
    created: Vec<BlockId>,
}

impl Side {
    fn operand(&self, o: Operand) -> Operand {
        match o {
            Operand::Value(v) => {
                Operand::Value(self.values.get(v.index()).copied().flatten().unwrap_or(ValueId(u32::MAX)))
            }
            c => c,
        }
    }
    fn call(&self, c: &BlockCall) -> BlockCall {
        BlockCall {
            block: self.blocks.get(c.block.index()).copied().unwrap_or(BlockId(u32::MAX)),
            args: c.args.iter().map(|a| self.operand(*a)).collect(),
        }
    }
}

/// Builds a fused kernel from a producer `kp` and a consumer `kc`.
struct Builder<'a> {
    f: Kernel,
    kp: &'a Kernel,
    kc: &'a Kernel,
    lp: &'a Launch,
    lc: &'a Launch,
    /// The launch argument of each parameter of `f`.
    args: Vec<LaunchArg>,
    p: Side,
    c: Side,
    /// The block where the consumer's code starts.
    c_start: BlockId,
    names: Names,
}

impl<'a> Builder<'a> {
    fn new(name: String, kp: &'a Kernel, kc: &'a Kernel, lp: &'a Launch, lc: &'a Launch) -> Self {
        let mut f = Kernel::new(name);
        let mut names = Names::default();
        let mut args: Vec<LaunchArg> = Vec::new();
        let mut sides = [Side::default(), Side::default()];
        for (side, (k, l)) in sides.iter_mut().zip([(kp, lp), (kc, lc)]) {
            for (n, &p) in k.params.iter().enumerate() {
                let arg = l.args.get(n).cloned().unwrap_or(LaunchArg::Const(Constant::u32(0)));
                let fp = match args.iter().position(|a| *a == arg) {
                    Some(x) => f.params[x],
                    None => {
                        let name = names.values.fresh(&k.value(p).name);
                        args.push(arg);
                        f.add_param(name, k.value(p).ty)
                    }
                };
                side.params.push(fp);
            }
        }
        let [p, c] = sides;
        Builder { f, kp, kc, lp, lc, args, p, c, c_start: Kernel::ENTRY, names }
    }

    /// Copies kernel `s` into `f`. With `entry_into`, the entry block's instructions are appended
    /// to that block and its terminator is left to the caller.
    fn copy(f: &mut Kernel, names: &mut Names, s: &Kernel, side: &mut Side, entry_into: Option<BlockId>) {
        side.values = vec![None; s.values.len()];
        for (n, &p) in s.params.iter().enumerate() {
            side.values[p.index()] = side.params.get(n).copied();
        }
        side.blocks = vec![BlockId(u32::MAX); s.blocks.len()];
        for b in s.block_ids() {
            let nb = match entry_into {
                Some(e) if b == Kernel::ENTRY => e,
                _ => {
                    let nb = f.add_block(names.blocks.fresh(&s.block(b).name));
                    side.created.push(nb);
                    for &p in &s.block(b).params {
                        let name = names.values.fresh(&s.value(p).name);
                        let nv = f.add_block_param(nb, name, s.value(p).ty);
                        side.values[p.index()] = Some(nv);
                    }
                    nb
                }
            };
            side.blocks[b.index()] = nb;
        }
        if let Some(e) = entry_into {
            // The shared entry block: operands are already mapped (they are parameters or earlier
            // entry instructions), so identical pure instructions and special registers of the
            // two kernels become one.
            for &i in &s.block(Kernel::ENTRY).insts {
                let d = s.inst(i);
                let args: Vec<Operand> = d.args.iter().map(|a| side.operand(*a)).collect();
                let dedup = d.op.is_pure() || matches!(d.op, Op::Special(_));
                let existing = f.block(e).insts.iter().copied().find(|&x| {
                    let xd = f.inst(x);
                    dedup && xd.op == d.op && xd.args[..] == args[..] && xd.result.is_some() && d.result.is_some()
                });
                if let (Some(x), Some(r)) = (existing, d.result) {
                    side.values[r.index()] = f.inst(x).result;
                    continue;
                }
                let result = d.result.map(|r| (names.values.fresh(&s.value(r).name).into(), s.value(r).ty));
                let ni = f.append_inst(e, d.op, args, result, d.span);
                if let (Some(r), Some(nr)) = (d.result, f.inst(ni).result) {
                    side.values[r.index()] = Some(nr);
                }
            }
        }
        let mut eager = vec![];
        for b in s.block_ids() {
            if entry_into.is_some() && b == Kernel::ENTRY {
                continue;
            }
            for &i in &s.block(b).insts {
                let d = s.inst(i);
                let result = d.result.map(|r| (names.values.fresh(&s.value(r).name).into(), s.value(r).ty));
                let ni = f.append_inst(side.blocks[b.index()], d.op, vec![], result, d.span);
                if let (Some(r), Some(nr)) = (d.result, f.inst(ni).result) {
                    side.values[r.index()] = Some(nr);
                }
                eager.push((i, ni));
            }
        }
        side.insts.extend(eager.iter().copied());
        for &(i, ni) in &eager {
            let args = s.inst(i).args.iter().map(|a| side.operand(*a)).collect();
            f.inst_mut(ni).args = args;
        }
        for b in s.block_ids() {
            if entry_into.is_some() && b == Kernel::ENTRY {
                continue;
            }
            let term = match &s.block(b).term {
                Terminator::Ret(_) => Terminator::Ret(None),
                Terminator::Jmp(c) => Terminator::Jmp(side.call(c)),
                Terminator::Br { cond, then_, else_ } => {
                    Terminator::Br { cond: side.operand(*cond), then_: side.call(then_), else_: side.call(else_) }
                }
            };
            let nb = side.blocks[b.index()];
            f.block_mut(nb).term = term;
            f.block_mut(nb).term_span = s.block(b).term_span;
        }
    }

    /// `br %g, then, exit` where `exit` only returns: the guard value and the `then` block.
    fn guard(k: &Kernel) -> Option<(ValueId, BlockId)> {
        let entry = k.blocks.first()?;
        let Terminator::Br { cond: Operand::Value(g), then_, else_ } = &entry.term else { return None };
        let exit = k.blocks.get(else_.block.index())?;
        let plain_exit = exit.params.is_empty() && exit.insts.is_empty() && exit.term == Terminator::Ret(None);
        let ok = plain_exit
            && then_.args.is_empty()
            && else_.args.is_empty()
            && then_.block != Kernel::ENTRY
            && then_.block != else_.block;
        ok.then_some((*g, then_.block))
    }

    /// Whether the consumer's entry instructions can run before the producer's body: nothing
    /// with side effects, and loads only of buffers the producer does not write.
    fn entry_hoistable(&self, p_writes: &BTreeSet<String>) -> bool {
        let origins = pointer_origins(self.kc);
        self.kc.blocks[0].insts.iter().all(|&i| {
            let d = self.kc.inst(i);
            match d.op {
                Op::Special(_) => true,
                Op::Load => {
                    let Some(Operand::Value(p)) = d.args.first() else { return false };
                    origins.get(p.index()).is_some_and(|o| {
                        o.iter().all(|&n| match self.lc.args.get(n as usize) {
                            Some(LaunchArg::Value(b)) => !p_writes.contains(b),
                            _ => false,
                        })
                    })
                }
                ref op => op.is_pure(),
            }
        })
    }

    /// Lays out the producer's code, then the consumer's, merging equal bounds guards.
    fn splice(&mut self, p_writes: &BTreeSet<String>) {
        let merged = match (Self::guard(self.kp), Self::guard(self.kc)) {
            (Some((gp, tp)), Some((gc, tc))) => {
                let same = Terms::new(self.kp, self.lp)
                    .value(gp)
                    .is_some_and(|t| Terms::new(self.kc, self.lc).value(gc) == Some(t));
                (same && self.entry_hoistable(p_writes)).then_some((gp, tp, tc))
            }
            _ => None,
        };
        let f = &mut self.f;
        let names = &mut self.names;
        match merged {
            Some((gp, tp, tc)) => {
                let entry = f.add_block(names.blocks.fresh("entry"));
                Self::copy(f, names, self.kp, &mut self.p, Some(entry));
                Self::copy(f, names, self.kc, &mut self.c, Some(entry));
                let exit = f.add_block(names.blocks.fresh("exit"));
                let cond = self.p.operand(Operand::Value(gp));
                let then_ = BlockCall { block: self.p.blocks[tp.index()], args: vec![] };
                f.block_mut(entry).term =
                    Terminator::Br { cond, then_, else_: BlockCall { block: exit, args: vec![] } };
                self.c_start = self.c.blocks[tc.index()];
            }
            None => {
                Self::copy(f, names, self.kp, &mut self.p, None);
                Self::copy(f, names, self.kc, &mut self.c, None);
                self.c_start = self.c.blocks[0];
            }
        }
        for &b in &self.p.created {
            if f.block(b).term == Terminator::Ret(None) {
                f.block_mut(b).term = Terminator::Jmp(BlockCall { block: self.c_start, args: vec![] });
            }
        }
    }

    /// The parameters of `f` bound to graph buffer `buf`.
    fn buffer_params(&self, buf: &str) -> Vec<ValueId> {
        self.args
            .iter()
            .zip(&self.f.params)
            .filter(|(a, _)| **a == LaunchArg::Value(buf.to_string()))
            .map(|(_, p)| *p)
            .collect()
    }

    /// Placed instructions of one side that access `params` directly, with their block and
    /// position.
    fn accesses_of(&self, insts: &[(InstId, InstId)], params: &[ValueId], op: fn(&Op) -> bool) -> Vec<InstId> {
        let placed: BTreeSet<InstId> = self.f.placed_insts().map(|(_, i)| i).collect();
        insts
            .iter()
            .map(|&(_, ni)| ni)
            .filter(|ni| placed.contains(ni))
            .filter(|&ni| {
                let d = self.f.inst(ni);
                op(&d.op) && matches!(d.args.first(), Some(Operand::Value(p)) if params.contains(p))
            })
            .collect()
    }

    fn position(&self, i: InstId) -> Option<(BlockId, usize)> {
        self.f.block_ids().find_map(|b| self.f.block(b).insts.iter().position(|x| *x == i).map(|n| (b, n)))
    }

    /// Whether the instruction at `a` may execute before the one at `b` in one thread (`a`
    /// earlier in the same block, or `b`'s block reachable from `a`'s through at least one edge).
    fn may_precede(&self, a: (BlockId, usize), b: (BlockId, usize)) -> bool {
        if a.0 == b.0 && a.1 < b.1 {
            return true;
        }
        let mut seen = vec![false; self.f.blocks.len()];
        let mut stack: Vec<BlockId> = self.f.block(a.0).term.successors().map(|c| c.block).collect();
        while let Some(x) = stack.pop() {
            if x == b.0 {
                return true;
            }
            match seen.get_mut(x.index()) {
                Some(s) if !*s => *s = true,
                _ => continue,
            }
            stack.extend(self.f.block(x).term.successors().map(|c| c.block));
        }
        false
    }

    fn remove_inst(&mut self, i: InstId) {
        for b in &mut self.f.blocks {
            b.insts.retain(|x| *x != i);
        }
    }

    /// Forwards the producer's last store of each shared buffer to the consumer's loads of it.
    fn forward(&mut self, shared: &[String]) -> usize {
        let is_store = |o: &Op| matches!(o, Op::Store);
        let is_load = |o: &Op| matches!(o, Op::Load);
        let writes = |o: &Op| matches!(o, Op::Store | Op::Atomic(_) | Op::AtomicCas);
        let mut forwarded = 0;
        // Forwarding rewrites loads and removes stores, never a terminator: one CFG serves
        // every buffer.
        let cfg = Cfg::new(&self.f);
        for buf in shared {
            let params = self.buffer_params(buf);
            let c_writes = self.accesses_of(&self.c.insts, &params, writes);
            let stores = self.accesses_of(&self.p.insts, &params, is_store);
            let pos: Vec<(InstId, (BlockId, usize))> =
                stores.iter().filter_map(|&s| self.position(s).map(|p| (s, p))).collect();
            let before =
                |a: (BlockId, usize), b: (BlockId, usize)| if a.0 == b.0 { a.1 < b.1 } else { cfg.dominates(a.0, b.0) };
            let last = pos.iter().find(|(s, p)| {
                pos.iter().all(|(s2, p2)| s2 == s || before(*p2, *p)) && cfg.dominates(p.0, self.c_start)
            });
            let Some(&(store, _)) = last else { continue };
            let value = self.f.inst(store).args.get(2).copied();
            let Some(value) = value else { continue };
            let c_write_pos: Vec<(BlockId, usize)> = c_writes.iter().filter_map(|&w| self.position(w)).collect();
            for load in self.accesses_of(&self.c.insts, &params, is_load) {
                // A consumer write that may run before this load would make it read that value.
                let Some(lp) = self.position(load) else { continue };
                if c_write_pos.iter().any(|&wp| self.may_precede(wp, lp)) {
                    continue;
                }
                if let Some(r) = self.f.inst(load).result {
                    kir_ir::subst::replace_uses(&mut self.f, r, value);
                }
                self.remove_inst(load);
                forwarded += 1;
            }
        }
        forwarded
    }

    /// Removes stores to a shared buffer that nothing in `f` loads when a later store to the same
    /// (thread-private) element post-dominates them.
    fn remove_dead_stores(&mut self, shared: &[String]) -> usize {
        let mut removed = 0;
        let all: Vec<(InstId, InstId)> = self.p.insts.iter().chain(&self.c.insts).copied().collect();
        // Removing stores never changes a terminator: one CFG serves every buffer.
        let cfg = Cfg::new(&self.f);
        for buf in shared {
            let params = self.buffer_params(buf);
            let reads = |o: &Op| matches!(o, Op::Load | Op::Atomic(_) | Op::AtomicCas);
            if !self.accesses_of(&all, &params, reads).is_empty() {
                continue;
            }
            let stores = self.accesses_of(&all, &params, |o| matches!(o, Op::Store));
            let pos: Vec<(InstId, (BlockId, usize))> =
                stores.iter().filter_map(|&s| self.position(s).map(|p| (s, p))).collect();
            let after = |a: (BlockId, usize), b: (BlockId, usize)| {
                if a.0 == b.0 {
                    a.1 > b.1
                } else {
                    cfg.post_dominates(a.0, b.0)
                }
            };
            let dead: Vec<InstId> = pos
                .iter()
                .filter(|(s, p)| pos.iter().any(|(s2, p2)| s2 != s && after(*p2, *p)))
                .map(|(s, _)| *s)
                .collect();
            for s in dead {
                self.remove_inst(s);
                removed += 1;
            }
        }
        removed
    }

    /// When `f` never reads buffer `buf` and uses its parameters only as the pointer of stores,
    /// removes those stores and the parameters. Returns the number of stores removed.
    fn drop_unread_buffer(&mut self, buf: &str) -> Option<usize> {
        let params = self.buffer_params(buf);
        let mut stores = vec![];
        for (_, i) in self.f.placed_insts() {
            let d = self.f.inst(i);
            for (n, a) in d.args.iter().enumerate() {
                if let Operand::Value(v) = a {
                    if params.contains(v) {
                        if matches!(d.op, Op::Store) && n == 0 {
                            stores.push(i);
                        } else {
                            return None;
                        }
                    }
                }
            }
        }
        for b in &self.f.blocks {
            if b.term.operands().any(|o| matches!(o, Operand::Value(v) if params.contains(&v))) {
                return None;
            }
        }
        for &s in &stores {
            self.remove_inst(s);
        }
        let keep: Vec<bool> = self.f.params.iter().map(|p| !params.contains(p)).collect();
        let mut it = keep.iter();
        self.args.retain(|_| *it.next().unwrap_or(&true));
        self.f.params.retain(|p| !params.contains(p));
        for (n, p) in self.f.params.clone().into_iter().enumerate() {
            self.f.values[p.index()].def = ValueDef::Param(n as u32);
        }
        Some(stores.len())
    }

    /// The fused kernel without unreachable blocks, and its launch arguments.
    fn finish(mut self) -> (Kernel, Vec<LaunchArg>) {
        let cfg = Cfg::new(&self.f);
        let keep: Vec<bool> = self.f.block_ids().map(|b| cfg.is_reachable(b)).collect();
        crate::edit::remove_blocks(&mut self.f, &keep);
        (self.f, self.args)
    }
}

#[cfg(test)]
mod tests {
    use super::FreshNames;

    /// Each name is `base` when free, else the smallest free `base.N`, checked against a direct
    /// search over everything handed out so far, on bases that collide with earlier suffixed names.
    #[test]
    fn fresh_names_are_the_smallest_free_suffix() {
        let bases = ["x", "x.1", "x", "i", "x.2", "x", "x", "i", "x.1", "i.1", "i"];
        let mut names = FreshNames::default();
        let mut given: Vec<String> = Vec::new();
        for base in bases.iter().cycle().take(60) {
            let expected = if given.iter().any(|g| g == base) {
                (1..).map(|n| format!("{base}.{n}")).find(|c| !given.contains(c)).unwrap()
            } else {
                base.to_string()
            };
            let got = names.fresh(base);
            assert_eq!(got, expected);
            given.push(got);
        }
    }
}
