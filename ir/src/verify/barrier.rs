//! Barrier and collective verification: the checks after the verifier that [`super::check`] runs
//! (so a [`super::Checked`] module passed them), also [`check_barriers`] alone for the
//! `verify-barriers` pass of `kir opt`. Inside kir-ir: [`verify_barriers`] looks at one body alone,
//! [`verify_kernel_barriers`] at one kernel with its calls.
//!
//! Guarantees:
//! - Calls are followed. A barrier or full-mask collective inside a device function is checked at
//!   every call site, directly or through other functions: [`verify_kernel_barriers`] analyses a
//!   copy of the kernel with every call inlined ([`super::inlined`], the code `inline` produces),
//!   so the call's control dependence and the uniformity of its arguments (a function branching
//!   on a parameter) are judged exactly as if the function's code were written at the call, and
//!   the guarantees below (soundness included) hold for the kernel with its calls. Each error is
//!   located in the function's source; its chain of labels runs through the caller into the
//!   function (a parameter's step names the call that passes the argument, a returned value's the
//!   `ret` that returns it), and every call site on the way to the rejected instruction gets a
//!   label ("`@f` is called here from `@k`"; the call that only some threads make says it is
//!   "under a thread-dependent branch"), with a note stating the chain `@k → @g → @f`. The same
//!   function reached divergently through two call sites under different branches gives two
//!   errors; through two call sites under the same branch, one error with an "also rejected"
//!   label at the second call.
//! - A function that no kernel calls is not checked for barrier divergence (there is no call site
//!   to judge it by; a function alone would have to assume any argument), nor is a function's own
//!   body apart from its call sites. If a kernel's calls cannot be inlined (growth past
//!   [`crate::inline::MAX_INLINED_INSTS`]), that kernel gets an error saying its calls cannot be
//!   verified, never an unsound acceptance. [`verify_barriers`] alone on a body with calls treats a
//!   call as opaque (result varying, callee's barriers not seen); on a function alone it treats
//!   the parameters as varying.
//! - [`verify_barriers`] reports an error at every `barrier` that some threads of a block may not
//!   reach together (its block is in the region of a branch whose condition is not block-uniform,
//!   per [`crate::analysis::uniformity`]: such a barrier fails to post-dominate a divergent branch, a divergent
//!   `ret` included, or sits in a loop that threads leave after different numbers of iterations),
//!   and at every shuffle or vote with the constant full member mask `0xffffffff` that some lanes
//!   of a warp may not reach together.
//! - Soundness: when it reports nothing, no execution of the kernel (any launch shape, any
//!   inputs) makes the threads of a block disagree on which barrier they wait at; the property test
//!   `tests/barrier_soundness.rs` checks this against the interpreter on random kernels.
//! - One root cause, one error: every barrier and collective rejected because of the same
//!   divergent branch (the same [`Uniformity::block_reason`]) is reported in ONE error, at the
//!   first of them in layout order, with an "also rejected for the same cause" label at each other
//!   one (a note naming its block when it has no source span) and a note counting them.
//! - Each error explains itself: numbered secondary labels walk from the barrier to the source of
//!   divergence (the branch, then each value the condition depends on, down to `tid.x`, an atomic,
//!   a racy load...), each at the span of the entity it names; notes state the rule. A racy
//!   shared load names the write that races with it (printed, with its block, and a label at its
//!   line) and the barrier-free path from one to the other, or the branch where threads split
//!   between them ([`crate::analysis::uniformity::LoadConflict`]).
//! - A rejected collective whose cause is a value that would be warp-uniform if the block's x
//!   size were a multiple of 32 (`tid.x >> 5`, `tid.y`, without `reqntid` or with an x that is not
//!   such a multiple) gets a note saying so: declare `reqntid(N)` with N a multiple of 32, or use
//!   `warpid`.
//! - Never panics, whatever the kernel (an unverified kernel gets the all-varying verdict).
//! - A kernel too large for the uniformity analysis ([`crate::analysis::uniformity::WORK_LIMIT`]) gets the
//!   all-varying verdict too: a barrier or collective in it that is not in the entry's uniform
//!   straight line is rejected with a note naming the limit. The explanation chain is at most
//!   `MAX_STEPS` steps long, so its (mutually recursive) construction needs a bounded stack.
//!
//! - Whole warps: a full-mask collective names 32 lanes, so a kernel with one needs blocks of
//!   whole warps. That is a launch precondition ([`crate::analysis::warps`]), refused by every
//!   launch path; a kernel whose `reqntid` makes a partial warp is rejected here.
//!
//! Not checked: collectives whose member mask is not the constant full mask (which lanes must
//! take part is then a run-time property).

use super::inlined::{CallSite, InlinedModule, Provenance};
use crate::analysis::cfg::Cfg;
use crate::analysis::uniformity::{region_from, ConflictKind, Level, LoadConflict, MemObject, Uniformity, ValueReason};
use crate::diag::Diagnostic;
use crate::{BlockId, InstId, Kernel, Module, Op, Operand, Span, SpecialReg, Terminator, ValueDef, ValueId};

/// Barrier verification of a whole module: a `reqntid` that makes a partial warp for a kernel
/// with a full-mask collective, then `verify_kernel_barriers` for every kernel, in module order.
/// `m` should verify (an unverified body gets the all-varying verdict, never a panic);
/// `uniformity_of(i)` may supply kernel `i`'s analysis (computed on its CFG), for a kernel without
/// calls (one with calls is analysed as an inlined copy, which gets its own). What
/// [`super::check`] runs on the uniformity a [`super::Verified`] module carries, and the
/// `verify-barriers` pass on the pass manager's cached CFGs.
pub fn check_barriers<'u>(m: &Module, uniformity_of: impl Fn(usize) -> Option<&'u Uniformity>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = m.kernels.iter().filter_map(|k| partial_warp_reqntid(m, k)).collect();
    out.extend(module_divergence(m, uniformity_of));
    out
}

/// A kernel whose `reqntid` makes its last warp partial while it has a full-mask collective
/// ([`crate::analysis::warps`]): no launch of it can run.
fn partial_warp_reqntid(m: &Module, k: &Kernel) -> Option<Diagnostic> {
    let r = k.reqntid?;
    let v = crate::analysis::warps::whole_warps_violation(&m.funcs, k, r.dims)?;
    let c = &v.collective;
    let mut d = Diagnostic::error(format!(
        "`{}` gives kernel `@{}` a partial warp ({} threads: warp {} has {} lane{}), but its `{}` with member mask \
         0xffffffff needs all 32 lanes of every warp",
        r.to_text(),
        k.name,
        v.threads,
        v.last_warp,
        v.last_warp_lanes,
        if v.last_warp_lanes == 1 { "" } else { "s" },
        c.mnemonic
    ));
    if !r.span.is_dummy() {
        d = d.at(r.span, "the block shape every launch must use");
    } else if !k.span.is_dummy() {
        d = d.at(k.span, "in this kernel");
    }
    if !c.span.is_dummy() {
        let what = if std::ptr::eq(c.body, k) { String::new() } else { format!(" (in function `@{}`)", c.body.name) };
        d = d.with_label(c.span, format!("needs all 32 lanes of its warp{what}"));
    }
    Some(d.with_note("declare a block shape whose thread count is a multiple of 32, or use a member mask that names only the lanes that exist"))
}

/// Barrier and collective divergence in every kernel of `m`.
fn module_divergence<'u>(m: &Module, uniformity_of: impl Fn(usize) -> Option<&'u Uniformity>) -> Vec<Diagnostic> {
    let own = |i: usize, k: &Kernel| match uniformity_of(i) {
        Some(u) => verify_with(k, u),
        None => verify_barriers(k),
    };
    let with_calls: Vec<&Kernel> = m.kernels.iter().filter(|k| !k.callees.is_empty()).collect();
    if with_calls.is_empty() {
        return m.kernels.iter().enumerate().flat_map(|(i, k)| own(i, k)).collect();
    }
    let im = InlinedModule::new(m, &with_calls);
    let mut n = 0;
    let mut out = vec![];
    for (i, k) in m.kernels.iter().enumerate() {
        if k.callees.is_empty() {
            out.extend(own(i, k));
        } else {
            out.extend(verify_inlined(&im, n, k));
            n += 1;
        }
    }
    out
}

/// Every barrier and full-mask collective that kernel `k` may reach divergently, its own and those
/// of the functions of `m` it calls (directly or not), one error per cause. `k` need not be in `m`.
/// A kernel without calls gets exactly [`verify_barriers`]'s answer; otherwise the analysis runs on
/// a copy with every call inlined ([`super::inlined`]) and each error also names the chain of call
/// sites (see the module header).
#[cfg(test)]
pub(crate) fn verify_kernel_barriers(m: &Module, k: &Kernel) -> Vec<Diagnostic> {
    if k.callees.is_empty() {
        return verify_barriers(k);
    }
    let im = InlinedModule::new(m, &[k]);
    verify_inlined(&im, 0, k)
}

fn verify_inlined(im: &InlinedModule<'_>, n: usize, k: &Kernel) -> Vec<Diagnostic> {
    let Some(r) = im.kernel(n) else { return verify_barriers(k) };
    match r {
        Ok(inl) => {
            let p = Provenance { im, k: inl };
            let u = Uniformity::compute(&inl.body);
            verify_impl(&inl.body, &u, Some(&p))
        }
        Err(e) => {
            let mut d = Diagnostic::error(format!(
                "cannot verify the barriers of `@{}` across its calls: {}",
                k.name, e.message
            ));
            d.primary = e.primary.clone();
            d.secondary = e.secondary.clone();
            if d.primary.is_none() && !k.span.is_dummy() {
                d = d.at(k.span, "in this kernel");
            }
            d.notes = e.notes.clone();
            vec![d.with_note(
                "barrier verification analyses each kernel with its calls inlined, so that a barrier or full-mask \
                 collective in a function is checked at every call site; without that copy nothing in the functions is proved",
            )]
        }
    }
}

/// Every barrier and full-mask warp collective of `k` that may be reached divergently, one error
/// per cause, in layout order. Only `k`'s own instructions: a `call` is opaque (its result is
/// varying, see [`crate::analysis::uniformity`]) and the barriers of its callee are not looked at; use
/// [`verify_kernel_barriers`] / [`check_barriers`] to follow calls. On a device function
/// alone, its parameters count as varying.
pub(crate) fn verify_barriers(k: &Kernel) -> Vec<Diagnostic> {
    let u = Uniformity::compute(k);
    verify_with(k, &u)
}

/// [`verify_barriers`] with an analysis already computed.
pub(crate) fn verify_with(k: &Kernel, u: &Uniformity) -> Vec<Diagnostic> {
    verify_impl(k, u, None)
}

/// The errors, for `k` itself or (with `prov`) for the inlined copy of a kernel.
fn verify_impl(k: &Kernel, u: &Uniformity, prov: Option<&Provenance<'_, '_>>) -> Vec<Diagnostic> {
    let sites = divergent_sites(k, u);
    // One root cause, one error: sites under the same divergent branch are reported together.
    let mut groups: Vec<(Option<BlockId>, Vec<Site>)> = vec![];
    for site in sites {
        let key = u.block_reason(site.0);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(site),
            None => groups.push((key, vec![site])),
        }
    }
    let mut out: Vec<Diagnostic> = groups
        .into_iter()
        .map(|(_, sites)| {
            let (b, i, what) = sites[0];
            let mut d = explain(k, u, b, i, what, prov);
            let others = &sites[1..];
            if others.is_empty() {
                return d;
            }
            let mut used: Vec<Span> = d.span().into_iter().collect();
            for &(ob, oi, ow) in others {
                let inst = &k.insts[oi.index()];
                let m = inst.op.mnemonic();
                let reach = if ow == What::Barrier { "threads of the block" } else { "lanes of the warp" };
                let span = site_span(k, ob, oi);
                if let (Some(p), true) = (prov, used.contains(&span)) {
                    // The same source instruction, reached through another call: point at the
                    // first call where the two paths differ.
                    let (mine, theirs) = (p.inst_chain(i), p.inst_chain(oi));
                    let differ = theirs.iter().enumerate().find(|(n, c)| mine.get(*n) != Some(*c)).map(|(_, c)| c);
                    if let Some(c) = differ.filter(|c| !c.span.is_dummy() && !used.contains(&c.span)) {
                        used.push(c.span);
                        d = d.with_label(
                            c.span,
                            format!(
                                "also rejected for the same cause: through this call of `@{}`, some {reach} may not reach the same `{m}`",
                                c.callee
                            ),
                        );
                        continue;
                    }
                }
                used.push(span);
                if inst.span.is_dummy() {
                    d = d.with_note(format!(
                        "also rejected for the same cause: `{m}` in block `{}`: some {reach} may not reach it",
                        k.block(ob).name
                    ));
                } else {
                    d = d.with_label(
                        site_span(k, ob, oi),
                        format!("also rejected for the same cause: some {reach} may not reach this `{m}`"),
                    );
                }
            }
            let (nb, nc) = others.iter().fold((0, 0), |(b, c), s| if s.2 == What::Barrier { (b + 1, c) } else { (b, c + 1) });
            let mut what = vec![];
            if nb > 0 {
                what.push(format!("{nb} more barrier{}", if nb == 1 { "" } else { "s" }));
            }
            if nc > 0 {
                let s = if nc == 1 { "" } else { "s" };
                // Shuffles and votes are named as before; `mma`/`ldmatrix` make it "warp collectives".
                let whole_warp = others.iter().any(|o| o.2 == What::Collective && k.insts[o.1.index()].op.needs_whole_warp());
                what.push(if whole_warp {
                    format!("{nc} more warp collective{s}")
                } else {
                    format!("{nc} more shuffle{s} or vote{s}")
                });
            }
            d.with_note(format!(
                "the same cause makes {} divergent (labelled \"also rejected\"); they are reported once, here: one fix covers them all",
                what.join(" and ")
            ))
        })
        .collect();
    // Member masks other than the full one: the lanes executing each such collective must be
    // exactly its mask (a collective already rejected above is not reported twice).
    let rejected: Vec<Span> = out.iter().filter_map(|d| d.span()).collect();
    for (i, mut d) in super::collective_masks::check_masks_at(k, u) {
        if d.span().is_some_and(|s| rejected.contains(&s)) {
            continue;
        }
        // In a function inlined into the kernel: every call on the way, labelled, as above.
        let calls = prov.map(|p| p.inst_chain(i)).unwrap_or_default();
        for c in &calls {
            let msg = format!("`@{}` is called here from `@{}`", c.callee, c.caller);
            d = if c.span.is_dummy() { d.with_note(msg) } else { d.with_label(c.span, msg) };
        }
        if let Some(f) = calls.last() {
            let path: Vec<String> = std::iter::once(format!("`@{}`", k.name))
                .chain(calls.iter().map(|c| format!("`@{}`", c.callee)))
                .collect();
            d = d.with_note(format!(
                "the collective is in function `@{}`, reached from kernel `@{}` through the calls {}: its mask is checked \
                 at each call site, with the lanes that make that call",
                f.callee,
                k.name,
                path.join(" → ")
            ));
        }
        out.push(d);
    }
    out
}

/// The span of a rejected instruction: an operand-less statement's span runs on to the next token,
/// so it is cut to the mnemonic.
fn site_span(k: &Kernel, b: BlockId, i: InstId) -> Span {
    let inst = &k.insts[i.index()];
    let mnemonic = inst.op.mnemonic();
    let own = if inst.args.is_empty() && inst.result.is_none() && !inst.span.is_dummy() {
        Span { start: inst.span.start, end: (inst.span.start + mnemonic.len() as u32).min(inst.span.end) }
    } else {
        inst.span
    };
    [own, k.block(b).span, k.span].into_iter().find(|s| !s.is_dummy()).unwrap_or(Span::DUMMY)
}

/// A rejected barrier or collective: its block, the instruction, which kind.
type Site = (BlockId, InstId, What);

/// Every barrier and full-mask collective that may be reached divergently, in layout order.
fn divergent_sites(k: &Kernel, u: &Uniformity) -> Vec<Site> {
    let mut out = vec![];
    for b in k.block_ids() {
        if !u.is_reachable(b) {
            continue;
        }
        let level = u.block_level(b);
        for &i in &k.block(b).insts {
            let Some(inst) = k.insts.get(i.index()) else {
                continue;
            };
            let what = match &inst.op {
                Op::Barrier if level >= Level::WarpUniform => What::Barrier,
                Op::Shfl(..) | Op::Vote(_) | Op::Mma(_) | Op::Ldmatrix(..)
                    if level == Level::Varying
                        && crate::analysis::warps::is_full_mask_collective(inst.op, &inst.args) =>
                {
                    What::Collective
                }
                _ => continue,
            };
            out.push((b, i, what));
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    Barrier,
    Collective,
}

/// Builds the numbered chain of labels from a divergent barrier or collective to its causes.
struct Chain<'a> {
    k: &'a Kernel,
    u: &'a Uniformity,
    /// For the inlined copy of a kernel: where its entities come from.
    prov: Option<&'a Provenance<'a, 'a>>,
    labels: Vec<(Span, String)>,
    /// Steps whose entity has no source span (made by a pass), told in notes instead.
    unlocated: Vec<String>,
    seen_values: Vec<ValueId>,
    seen_branches: Vec<BlockId>,
    irreducible: bool,
    /// What would make a warp-level rejection go away (at most one).
    hints: Vec<String>,
}

const MAX_STEPS: usize = 12;

impl<'a> Chain<'a> {
    fn step(&mut self, span: Span, msg: String) {
        let n = self.labels.len() + self.unlocated.len() + 1;
        if span.is_dummy() {
            self.unlocated.push(format!("({n}) {msg}"));
        } else {
            self.labels.push((span, format!("({n}) {msg}")));
        }
    }
    fn full(&self) -> bool {
        self.labels.len() + self.unlocated.len() >= MAX_STEPS
    }
    fn vname(&self, v: ValueId) -> String {
        self.k.values.get(v.index()).map(|d| format!("`%{}`", d.name)).unwrap_or_else(|| "a value".into())
    }
    fn bname(&self, b: BlockId) -> String {
        self.k.blocks.get(b.index()).map(|d| format!("`{}`", d.name)).unwrap_or_else(|| "a block".into())
    }
    /// The whole defining instruction for an instruction with operands; the value's name otherwise
    /// (the span the parser gives an operand-less statement runs on to the next token).
    fn value_span(&self, v: ValueId) -> Span {
        let Some(d) = self.k.values.get(v.index()) else {
            return Span::DUMMY;
        };
        match d.def {
            ValueDef::Inst(i) => self
                .k
                .insts
                .get(i.index())
                .filter(|x| !x.args.is_empty())
                .map(|x| x.span)
                .filter(|s| !s.is_dummy())
                .unwrap_or(d.span),
            _ => d.span,
        }
    }
    fn is_load(&self, v: ValueId) -> bool {
        match self.k.values.get(v.index()).map(|d| d.def) {
            Some(ValueDef::Inst(i)) => self.k.insts.get(i.index()).is_some_and(|x| x.op == Op::Load),
            _ => false,
        }
    }

    /// Why threads split at the branch ending `y`: its condition, followed down.
    fn branch_cause(&mut self, y: BlockId, intro: String) {
        if self.full() || self.seen_branches.contains(&y) {
            return;
        }
        self.seen_branches.push(y);
        let span = self.k.blocks.get(y.index()).map(|b| b.term_span).unwrap_or(Span::DUMMY);
        self.step(span, intro);
        match self.u.branch_reason(y) {
            Some(ValueReason::Operand { value, after_loop: Some(h) }) => self.after_loop(value, h, None),
            Some(ValueReason::Operand { value, after_loop: None }) => {
                if let Some(path) = self.block_param_path(y, value) {
                    self.passed_down(&path, value);
                }
                self.value_cause(value)
            }
            _ => {}
        }
    }

    fn cond_name(&self, y: BlockId) -> String {
        match self.k.blocks.get(y.index()).map(|b| &b.term) {
            Some(Terminator::Br { cond: Operand::Value(c), .. }) => match self.block_param_path(y, *c) {
                Some(path) => format!("`%{}`", path.last().map(|p| p.1.as_str()).unwrap_or("?")),
                None => self.vname(*c),
            },
            _ => "its condition".into(),
        }
    }

    /// In an inlined copy: when block `y` (in a function) uses `w`, a value of a caller, through
    /// parameters: each call below `w`'s instance with the parameter receiving it.
    fn block_param_path(&self, y: BlockId, w: ValueId) -> Option<Vec<(CallSite, String)>> {
        let p = self.prov?;
        p.param_path(w, p.block_instance(y)?)
    }

    /// In an inlined copy: when `v` (in a function) uses `w`, a value of a caller.
    fn value_param_path(&self, v: ValueId, w: ValueId) -> Option<Vec<(CallSite, String)>> {
        let p = self.prov?;
        p.param_path(w, p.value_instance(v)?)
    }

    /// One step per call through which `w` was passed down as an argument, innermost first (the
    /// direction the explanation walks in).
    fn passed_down(&mut self, path: &[(CallSite, String)], w: ValueId) {
        for j in (0..path.len()).rev() {
            if self.full() {
                return;
            }
            let (site, param) = &path[j];
            let arg = if j == 0 { self.vname(w) } else { format!("`%{}`", path[j - 1].1) };
            self.step(
                site.span,
                format!(
                    "`@{}` is called here from `@{}` with {arg} for its parameter `%{param}`",
                    site.callee, site.caller
                ),
            );
        }
    }

    /// In an inlined copy: when `v` (in a caller) receives `w` from block `from` of the function it
    /// called (the returned value), that call.
    fn returned_by(&self, v: ValueId, from: BlockId) -> Option<CallSite> {
        let p = self.prov?;
        let below = p.calls_below(p.value_instance(v)?, p.block_instance(from)?)?;
        (below.len() == 1).then(|| below.into_iter().next()).flatten()
    }

    /// `user` (or the branch) uses `value` after the loop at `header`, whose exit is divergent.
    fn after_loop(&mut self, value: ValueId, header: BlockId, user: Option<ValueId>) {
        let who = match user {
            Some(u) => format!("{} uses {}", self.vname(u), self.vname(value)),
            None => format!("the condition {}", self.vname(value)),
        };
        let span = user.map(|u| self.value_span(u)).unwrap_or_else(|| self.value_span(value));
        let msg = format!(
            "{who} after the loop at {}: threads leave that loop after different numbers of iterations, so {} differs between them",
            self.bname(header),
            self.vname(value)
        );
        if user.is_some() {
            self.step(span, msg);
        } else {
            // The branch step already points at the use; locate this step at the definition.
            self.step(self.value_span(value), msg);
        }
        if let Some(y) = self.u.loop_at(header).and_then(|l| l.exit_branch) {
            let c = self.cond_name(y);
            self.branch_cause(y, format!("the loop's exit depends on {c}"));
        }
    }

    fn value_cause(&mut self, v: ValueId) {
        if self.full() || self.seen_values.contains(&v) {
            return;
        }
        self.seen_values.push(v);
        let name = self.vname(v);
        let span = self.value_span(v);
        let level = self.u.value_level(v);
        if level == Level::Varying && self.u.warp_uniform_if_aligned(v) {
            self.warp_hint(v);
        }
        let differs = if level == Level::WarpUniform {
            "differs between the warps of a block"
        } else {
            "differs between threads"
        };
        match self.u.value_reason(v) {
            None => {}
            Some(ValueReason::Special(r)) => {
                let what = match r {
                    SpecialReg::Tid(d) => format!("the thread index `tid.{}`", d.name()),
                    SpecialReg::GlobalId(d) => {
                        format!("the global thread index `global_id.{}` (ctaid * ntid + tid)", d.name())
                    }
                    SpecialReg::LaneId => "the lane index `laneid`".into(),
                    SpecialReg::WarpId => "the warp index `warpid`".into(),
                    _ => "a special register".into(),
                };
                self.step(span, format!("{name} is {what}, which {differs}"));
            }
            Some(ValueReason::Atomic) => {
                self.step(span, format!("{name} is the old value returned by an atomic, which differs between threads"))
            }
            Some(ValueReason::RacyLoad(obj)) => self.racy_load(v, obj),
            Some(ValueReason::WarpBits { value }) => {
                // Warp-uniform by construction: the chain ends here (the value differs between warps).
                self.step(
                    span,
                    format!(
                        "{name} keeps only the bits of {} that are the same in all lanes of a warp, so it {differs}",
                        self.vname(value)
                    ),
                );
            }
            Some(ValueReason::Collective) => {
                self.step(span, format!("{name} is the result of a warp shuffle or vote, which {differs}"))
            }
            Some(ValueReason::Operand { value, after_loop: None }) => {
                let how = if self.is_load(v) { "is loaded from an address that depends on" } else { "depends on" };
                match self.value_param_path(v, value) {
                    Some(path) => {
                        let param = path.last().map(|p| p.1.clone()).unwrap_or_default();
                        self.step(span, format!("{name} {how} `%{param}`"));
                        self.passed_down(&path, value);
                    }
                    None => self.step(span, format!("{name} {how} {}", self.vname(value))),
                }
                self.value_cause(value);
            }
            Some(ValueReason::Operand { value, after_loop: Some(h) })
            | Some(ValueReason::Incoming { value, after_loop: Some(h), .. }) => {
                self.after_loop(value, h, Some(v));
            }
            Some(ValueReason::Incoming { value, from, after_loop: None }) => {
                if let Some(site) = self.returned_by(v, from) {
                    self.step(span, format!("{name} is the value `@{}` returns", site.callee));
                    let ret = self.k.blocks.get(from.index()).map(|b| b.term_span).unwrap_or(Span::DUMMY);
                    self.step(ret, format!("`@{}` returns {} here", site.callee, self.vname(value)));
                } else if let Some(path) = self.value_param_path(v, value) {
                    let param = path.last().map(|p| p.1.clone()).unwrap_or_default();
                    self.step(span, format!("{name} receives `%{param}` from block {}", self.bname(from)));
                    self.passed_down(&path, value);
                } else {
                    self.step(span, format!("{name} receives {} from block {}", self.vname(value), self.bname(from)));
                }
                self.value_cause(value);
            }
            Some(ValueReason::Join { branch }) => {
                let c = self.cond_name(branch);
                self.step(
                    span,
                    format!(
                        "{name} takes different values depending on the path threads took from the branch in {}",
                        self.bname(branch)
                    ),
                );
                self.branch_cause(branch, format!("threads take different paths here, depending on {c}"));
            }
            Some(ValueReason::Irreducible) => self.irreducible = true,
            Some(ValueReason::Call) => self.step(
                span,
                format!(
                    "{name} is the result of a call, and the callee is not analysed here, so it may differ between threads \
                     (verify the module, or inline the call, to follow it)"
                ),
            ),
            Some(ValueReason::FuncParam) => self.step(
                span,
                format!(
                    "{name} is a parameter of function `@{}`, analysed here on its own: a caller may pass a value that differs between threads",
                    self.k.name
                ),
            ),
        }
    }
}

impl<'a> Chain<'a> {
    fn store_text(&self, i: InstId) -> String {
        let text = crate::text::printer::print_inst(self.k, i);
        let block = self.u.inst_block(i).map(|b| self.bname(b)).unwrap_or_else(|| "a block".into());
        format!("`{}` (in block {block})", text.trim())
    }
    fn inst_span(&self, i: InstId) -> Span {
        self.k.insts.get(i.index()).map(|x| x.span).unwrap_or(Span::DUMMY)
    }
    /// `a` → `b` → `c`; a long path keeps its first and last three blocks.
    fn path_text(&self, path: &[BlockId]) -> String {
        let names: Vec<String> = path.iter().map(|b| self.bname(*b)).collect();
        if names.len() <= 8 {
            return names.join(" → ");
        }
        format!(
            "{} → … ({} more blocks) … → {}",
            names[..3].join(" → "),
            names.len() - 6,
            names[names.len() - 3..].join(" → ")
        )
    }

    /// A load that may see a concurrent write: names the write and the barrier-free path between
    /// them (or the branch that splits the threads between them).
    fn racy_load(&mut self, v: ValueId, obj: MemObject) {
        let name = self.vname(v);
        let span = self.value_span(v);
        let mem = match obj {
            MemObject::Global => "global memory".to_string(),
            MemObject::Shared(n) => self
                .k
                .shared
                .get(n as usize)
                .map(|s| format!("`@{}`", s.name))
                .unwrap_or_else(|| "shared memory".into()),
            MemObject::SharedAny => "shared memory".to_string(),
        };
        let conflict = match self.k.values.get(v.index()).map(|d| d.def) {
            Some(ValueDef::Inst(i)) => self.u.load_conflict(i).cloned(),
            _ => None,
        };
        if let (MemObject::Global, Some(LoadConflict { store: Some(st), kind: ConflictKind::GlobalWritten })) =
            (obj, &conflict)
        {
            let st = *st;
            let store = self.store_text(st);
            let store_span = self.inst_span(st);
            self.step(
                span,
                format!("{name} is loaded from global memory, which this kernel also writes ({store} may write the loaded element): other threads and blocks may change it at any time"),
            );
            self.step(store_span, format!("this write may change the element {name} is loaded from (pointer parameters may alias each other; only a write through the same parameter at provably other indices is excluded)"));
            return;
        }
        let Some(LoadConflict { store: Some(st), kind }) = conflict.filter(|c| c.kind != ConflictKind::GlobalWritten)
        else {
            let msg = match obj {
                MemObject::Global => format!("{name} is loaded from global memory, which this kernel also writes: other threads and blocks may change it at any time"),
                _ => format!("{name} is loaded from {mem}, which threads store to with no barrier between those stores and this load"),
            };
            self.step(span, msg);
            return;
        };
        let store = self.store_text(st);
        let store_span = self.inst_span(st);
        match kind {
            ConflictKind::StoreThenLoad(path) => {
                self.step(
                    span,
                    format!(
                        "{name} is loaded from {mem}, which {store} writes with no barrier on the way from that store to this load: {}",
                        self.path_text(&path)
                    ),
                );
                self.step(store_span, format!("this store reaches the load of {name} without passing a barrier, so other threads may load before or after it"));
            }
            ConflictKind::LoadThenStore(path) => {
                self.step(
                    span,
                    format!(
                        "{name} is loaded from {mem}, which {store} writes later with no barrier in between ({}): a thread that runs ahead may store before another thread loads",
                        self.path_text(&path)
                    ),
                );
                self.step(store_span, format!("this store may run before other threads' load of {name}"));
            }
            ConflictKind::Split(y) => {
                self.step(
                    span,
                    format!(
                        "{name} is loaded from {mem}, which {store} writes on another path from the branch in {}, with no barrier between the store and this load",
                        self.bname(y)
                    ),
                );
                self.step(store_span, format!("this store may run while other threads load {name}"));
                let c = self.cond_name(y);
                self.branch_cause(
                    y,
                    format!("threads split here depending on {c}: some reach the store, some the load"),
                );
            }
            ConflictKind::GlobalWritten => {}
        }
    }

    /// `v` is varying only because the block's x size is not known to be a multiple of 32.
    fn warp_hint(&mut self, v: ValueId) {
        if !self.hints.is_empty() {
            return;
        }
        let name = self.vname(v);
        let shape = match self.u.reqntid() {
            Some([x, y, z]) => format!(
                "this kernel's `reqntid({x}, {y}, {z})` has an x size that is not a multiple of 32, so a warp spans two rows of `tid.x`"
            ),
            None => "the kernel does not declare its block shape, and with an x size that is not a multiple of 32 a warp spans two rows of `tid.x`".to_string(),
        };
        self.hints.push(format!(
            "{name} would be the same in all lanes of each warp if the block's x size were a multiple of 32, but {shape}: \
             declare `reqntid(N)` with N a multiple of 32 (e.g. `kernel @{}(...) reqntid(256)`; launches with another block shape are then \
             invalid), or compute the warp index with `warpid`, which is warp-uniform in every block shape",
            self.k.name
        ));
    }
}

/// Which successors of `y` can reach `x` before the post-dominator `p` (`x` is in the branch's
/// divergent region, so it is not `p`).
fn sides_reaching(cfg: &Cfg, y: BlockId, p: Option<BlockId>, x: BlockId) -> Vec<bool> {
    cfg.succs(y).iter().map(|&s| region_from(cfg, &[s], p)[x.index()]).collect()
}

fn explain(
    k: &Kernel,
    u: &Uniformity,
    b: BlockId,
    i: InstId,
    what: What,
    prov: Option<&Provenance<'_, '_>>,
) -> Diagnostic {
    let inst = &k.insts[i.index()];
    let mnemonic = inst.op.mnemonic();
    let level = u.block_level(b);
    let span = site_span(k, b, i);
    let (message, label) = match what {
        What::Barrier => (
            "barrier must be reached by all threads of the block".to_string(),
            if level == Level::WarpUniform {
                "the warps of a block may not all reach this barrier".to_string()
            } else {
                "some threads of the block may not reach this barrier".to_string()
            },
        ),
        What::Collective if inst.op.needs_whole_warp() => (
            format!("`{mnemonic}` must be executed by all 32 lanes of the warp together"),
            "some lanes of the warp may not reach this collective".to_string(),
        ),
        What::Collective => (
            format!("`{mnemonic}` with member mask 0xffffffff must be executed by all 32 lanes of the warp together"),
            "some lanes of the warp may not reach this collective".to_string(),
        ),
    };
    let calls = prov.map(|p| p.inst_chain(i)).unwrap_or_default();
    let mut d = if span.is_dummy() {
        // IR made by a pass, without source: say where in words instead of pointing at 0..0.
        let body = match calls.last() {
            Some(c) => format!("function `@{}` (inlined into kernel `@{}`)", c.callee, k.name),
            None => format!("kernel `@{}`", k.name),
        };
        Diagnostic::error(message)
            .with_note(format!("at `{mnemonic}` in block `{}` of {body}: {label}", k.block(b).name))
    } else {
        Diagnostic::error(message).at(span, label)
    };
    let mut chain = Chain {
        k,
        u,
        prov,
        labels: vec![],
        unlocated: vec![],
        seen_values: vec![],
        seen_branches: vec![],
        irreducible: u.is_irreducible(),
        hints: vec![],
    };
    if let Some(y) = u.block_reason(b) {
        let cfg = Cfg::new(k);
        let c = chain.cond_name(y);
        let min = if what == What::Barrier { Level::WarpUniform } else { Level::Varying };
        let intro = if let Some(l) = u.divergent_loop_containing(b, y, min) {
            let target = if what == What::Barrier { "barrier" } else { "collective" };
            format!(
                "the {target} is inside the loop at {}, which threads leave after different numbers of iterations: this exit depends on {c}",
                chain.bname(l.header)
            )
        } else {
            let sides = sides_reaching(&cfg, y, u.ipdom(y), b);
            let target = if what == What::Barrier { "the barrier" } else { "the collective" };
            match (k.block(y).term.clone(), sides.as_slice()) {
                (Terminator::Br { .. }, [true, false]) => format!("only threads where {c} is true go on to {target}"),
                (Terminator::Br { .. }, [false, true]) => format!("only threads where {c} is false go on to {target}"),
                _ => {
                    format!("threads take different paths here, depending on {c}, and not every path reaches {target}")
                }
            }
        };
        chain.branch_cause(y, intro);
    } else if u.is_malformed() {
        d = d.with_note("the kernel is not well-formed (run the verifier): nothing can be proved uniform in it");
    } else if u.is_too_large() {
        d = d.with_note(format!(
            "the kernel is too large for the uniformity analysis (it would take more than {} steps: \
             non-uniform branches times the blocks they control, memory accesses times blocks, loads times stores), \
             so nothing is proved uniform in it: split the kernel, or make fewer branches depend on the thread index",
            crate::analysis::uniformity::WORK_LIMIT
        ));
    } else {
        chain.irreducible = true;
    }
    for (s, m) in &chain.labels {
        d = d.with_label(*s, m.clone());
    }
    for n in &chain.unlocated {
        d = d.with_note(n.clone());
    }
    if let (Some(p), false) = (prov, calls.is_empty()) {
        d = call_sites(d, k, u, p, (b, i, what), &calls, &chain.labels);
    }
    if what == What::Collective {
        for h in &chain.hints {
            d = d.with_note(h.clone());
        }
    }
    if chain.irreducible {
        d = d.with_note(
            "the control-flow graph is irreducible (a cycle can be entered at more than one block) and has a branch that is not uniform; \
             kir cannot prove any value uniform in it: give every loop a single entry block",
        );
    }
    d = match what {
        What::Barrier => d.with_note(
            "every thread of a block must reach each barrier together: a barrier must post-dominate every branch whose \
             condition may differ between threads (a `ret` taken by only some threads included), and must not be inside \
             a loop that threads leave after different numbers of iterations",
        ),
        What::Collective => d.with_note(
            "a shuffle or vote with the full member mask (and every `mma` and `ldmatrix`) needs all 32 lanes of the warp: it must post-dominate every \
             branch whose condition may differ between lanes of a warp; a condition is the same in all lanes of a warp \
             when it is computed only from uniform values, `warpid`, full-mask votes and `shfl.idx` from a warp-uniform \
             lane, or, in a kernel declaring `reqntid` with an x size that is a multiple of 32, from `tid.x >> 5` and `tid.y`",
        ),
    };
    d.with_note(
        "uniform: kernel parameters, constants, `ctaid`, `ntid`, `nctaid`, and values computed only from them; \
         `kir opt --print-divergence` shows the verdict for every value and block",
    )
}

/// Labels the call sites through which a rejected barrier or collective inside a function is
/// reached (`calls`, outermost first), naming the call that only some threads make, and notes the
/// rule for functions.
fn call_sites(
    mut d: Diagnostic,
    k: &Kernel,
    u: &Uniformity,
    p: &Provenance<'_, '_>,
    (b, i, what): Site,
    calls: &[CallSite],
    taken: &[(Span, String)],
) -> Diagnostic {
    // The call made in the body that holds the divergent branch is the one only some threads
    // make; the calls below it are made by whoever enters it.
    let y = u.block_reason(b);
    let under = y.and_then(|y| {
        let below = p.calls_below(p.block_instance(y)?, p.inst_instance(i)?)?;
        Some(calls.len() - below.len())
    });
    let in_loop = y.and_then(|y| {
        let min = if what == What::Barrier { Level::WarpUniform } else { Level::Varying };
        u.divergent_loop_containing(b, y, min).map(|l| l.header)
    });
    let who = match (what, u.block_level(b)) {
        (What::Barrier, Level::WarpUniform) => "some warps of the block",
        (What::Barrier, _) => "some threads of the block",
        (What::Collective, _) => "some lanes of the warp",
    };
    for (n, c) in calls.iter().enumerate() {
        let msg = if Some(n) == under {
            match in_loop {
                Some(_) => format!(
                    "`@{}` is called here from `@{}`, inside a loop that threads leave after different numbers of iterations: {who} make this call more often than others",
                    c.callee, c.caller
                ),
                None => format!(
                    "`@{}` is called here from `@{}` under a thread-dependent branch: {who} do not make this call",
                    c.callee, c.caller
                ),
            }
        } else {
            format!("`@{}` is called here from `@{}`", c.callee, c.caller)
        };
        if taken.iter().any(|(s, _)| *s == c.span) {
            // A step of the chain already points at this call (it passes the argument).
            continue;
        }
        if c.span.is_dummy() {
            d = d.with_note(msg);
        } else {
            d = d.with_label(c.span, msg);
        }
    }
    let path: Vec<String> =
        std::iter::once(format!("`@{}`", k.name)).chain(calls.iter().map(|c| format!("`@{}`", c.callee))).collect();
    let (thing, reach) = match what {
        What::Barrier => ("barrier", "the threads of the block"),
        What::Collective => ("collective", "the lanes of the warp"),
    };
    let func = calls.last().map(|c| c.callee.as_str()).unwrap_or("");
    d.with_note(format!(
        "the {thing} is in function `@{func}`, reached from kernel `@{}` through the calls {} (each labelled \"called here\"); \
         a barrier or full-mask collective in a function is checked at each of its call sites, as if the function's code were written there: \
         {reach} must make the call together, and the function's own branches are judged with that call's arguments",
        k.name,
        path.join(" → ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS_EXIT: &str = "kernel @k(%x: ptr<global, f32>, %n: u32) {
entry:
  %i = global_id.x
  %inb = lt.u32 %i, %n
  br %inb, body, out
out:
  ret
body:
  barrier
  ret
}";

    #[test]
    fn ir_without_spans_is_explained_in_notes_never_at_0_0() {
        let m = crate::parse(BOUNDS_EXIT).unwrap().without_spans();
        let d = verify_barriers(&m.kernels[0]);
        assert_eq!(d.len(), 1);
        assert!(d[0].primary.is_none() && d[0].secondary.is_empty(), "{:?}", d[0]);
        let notes = d[0].notes.join("\n");
        assert!(notes.contains("at `barrier` in block `body` of kernel `@k`"), "{notes}");
        assert!(notes.contains("(1) only threads where `%inb` is true go on to the barrier"), "{notes}");
        assert!(notes.contains("`%i` is the global thread index"), "{notes}");
    }

    #[test]
    fn a_kernel_with_dangling_handles_gets_diagnostics_not_a_panic() {
        let mut k = crate::parse(BOUNDS_EXIT).unwrap().kernels.remove(0);
        k.blocks[0].term = Terminator::Br {
            cond: Operand::Value(ValueId(9999)),
            then_: crate::BlockCall { block: BlockId(77), args: vec![] },
            else_: crate::BlockCall { block: BlockId(2), args: vec![] },
        };
        // The all-varying verdict: the barrier is reported, nothing panics.
        let d = verify_barriers(&k);
        assert_eq!(d.len(), 1);
        assert!(d[0].notes.iter().any(|n| n.contains("not well-formed")), "{:?}", d[0]);
    }

    const UNDER_BRANCH_TWICE: &str = "
    func @sync() {
    entry:
      barrier
      ret
    }
    func @maybe(%c: u32) {
    entry:
      %go = ne.u32 %c, 0
      br %go, wait, out
    wait:
      barrier
      ret
    out:
      ret
    }
    func @never_called(%c: u32) {
    entry:
      %go = ne.u32 %c, 0
      br %go, wait, out
    wait:
      barrier
      ret
    out:
      ret
    }
    kernel @k(%n: u32) {
    entry:
      call @sync()
      call @maybe(%n)
      %t = tid.x
      %small = lt.u32 %t, %n
      br %small, a, done
    a:
      call @sync()
      call @sync()
      jmp done
    done:
      ret
    }
    ";

    #[test]
    fn barriers_in_functions_are_checked_at_each_call_site() {
        let m = crate::parse(UNDER_BRANCH_TWICE).unwrap();
        let d = check_barriers(&m, |_| None);
        // The first two calls are made by every thread (`@maybe` branches on a kernel parameter); the
        // two calls under `%small` share one cause: one error, the second call labelled "also".
        assert_eq!(d.len(), 1, "{d:#?}");
        let labels: Vec<&str> = d[0].secondary.iter().map(|l| l.message.as_str()).collect();
        assert!(
            labels.iter().any(|l| l.starts_with("`@sync` is called here from `@k` under a thread-dependent branch")),
            "{labels:#?}"
        );
        assert!(
            labels.iter().any(|l| l.starts_with("also rejected for the same cause: through this call of `@sync`")),
            "{labels:#?}"
        );
        assert!(d[0].notes.iter().any(|n| n.contains("`@k` → `@sync`")), "{:#?}", d[0].notes);
        // The primary label is the barrier in @sync's source.
        let src = UNDER_BRANCH_TWICE;
        let s = d[0].span().unwrap();
        assert_eq!(&src[s.range()], "barrier");
        assert!((s.start as usize) < src.find("func @maybe").unwrap());
        // The same through verify_kernel_barriers, and the kernel alone (calls opaque) sees nothing.
        assert_eq!(verify_kernel_barriers(&m, m.kernel("k").unwrap()), d);
        assert!(verify_barriers(m.kernel("k").unwrap()).is_empty());
        // A function alone assumes any argument: @never_called's barrier is divergent by itself, but
        // no kernel calls it, so the module is not rejected for it.
        let alone = verify_barriers(m.func("never_called").unwrap());
        assert_eq!(alone.len(), 1);
        assert!(alone[0].secondary.iter().any(|l| l.message.contains("is a parameter of function `@never_called`")));
    }

    #[test]
    fn a_kernel_with_calls_verified_alone_treats_the_call_result_as_varying() {
        let src = "
    func @zero() -> u32 {
    entry:
      ret 0
    }
    kernel @k() {
    entry:
      %z = call @zero()
      %c = eq.u32 %z, 0
      br %c, a, b
    a:
      barrier
      jmp b
    b:
      ret
    }
    ";
        let m = crate::parse(src).unwrap();
        let alone = verify_barriers(m.kernel("k").unwrap());
        assert_eq!(alone.len(), 1);
        assert!(alone[0].secondary.iter().any(|l| l.message.contains("is the result of a call")), "{alone:#?}");
        // Followed into @zero, the value is a constant: accepted.
        assert!(check_barriers(&m, |_| None).is_empty());
    }
}
