//! Inlined copies of kernels for analyses that must see through calls (barrier verification), with
//! the origin of every entity of the copy.
//!
//! Guarantees:
//! - [`InlinedModule::new`] inlines the functions of a module callees first, then each kernel it
//!   is given, with [`crate::inline::inline_body`]: the copy of a kernel is the code
//!   `crate::inline::inline_module` produces for it. The module is never changed.
//! - The copy ([`Inlined::body`]) carries the source spans of the original entities and their
//!   original names (values and block labels as written in the function they come from, so not
//!   unique in the copy): diagnostics about it read like the source and point into the function.
//! - For every instruction, value and block of the copy, [`Inlined`] tells the body it comes from
//!   and the chain of calls it was inlined through, outermost first ([`CallSite`]: the call
//!   instruction in its original caller, its span, the caller's and the callee's names), and
//!   whether two entities belong to the same inlined instance of a function.
//! - Errors (recursion, growth past [`crate::inline::MAX_INLINED_INSTS`], a callee that cannot
//!   be inlined) are the inliner's diagnostics, located in the source.
//! - Cost: linear in the size of the inlined code (each entity gets one origin record; chains of
//!   calls are shared).

use crate::inline::{inline_body, InlineMap};
use crate::{BlockId, Diagnostic, InstId, Kernel, Module, Op, Operand, Span, ValueDef, ValueId};
use std::collections::HashMap;

/// What an entity of a copy is, in the body it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ent {
    Inst(InstId),
    Value(ValueId),
    Block(BlockId),
    /// A block's terminator.
    Term(BlockId),
}

/// Where an entity of a copy comes from: a body (index into [`InlinedModule::bodies`]), the
/// entity there, and the chain of calls it was inlined through (0: none).
#[derive(Clone, Copy, Debug)]
struct Origin {
    body: u32,
    ent: Ent,
    chain: u32,
}

/// A call instruction of an original body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Call {
    body: u32,
    inst: InstId,
}

/// One link of a call chain, outermost call first: `next` is the rest (0: none).
#[derive(Clone, Copy, Debug)]
struct ChainNode {
    call: Call,
    next: u32,
}

/// One call of a chain, as written in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The body holding the call (without `@`).
    pub caller: String,
    /// The function called (without `@`).
    pub callee: String,
    /// The span of the `call` instruction.
    pub span: Span,
}

/// The functions of a module and some of its kernels, inlined, with the origin of everything in
/// the copies.
pub struct InlinedModule<'m> {
    /// The original bodies: the module's functions (same indices), then the kernels given.
    bodies: Vec<&'m Kernel>,
    nfuncs: usize,
    origins: Vec<Origin>,
    chains: Vec<ChainNode>,
    chain_ids: HashMap<(Call, u32), u32>,
    kernels: Vec<Result<Inlined, Diagnostic>>,
}

/// An inlined copy of one kernel and where its entities came from.
pub struct Inlined {
    /// The copy, with the original spans and names.
    pub body: Kernel,
    /// Origin (index into `origins`) of each instruction, value and block of `body`;
    /// `u32::MAX` when unknown.
    inst_origin: Vec<u32>,
    value_origin: Vec<u32>,
    block_origin: Vec<u32>,
}

const NONE: u32 = u32::MAX;

/// A span standing for origin `t` while the inliner copies it (never a real span of a copy: the
/// spans of every instruction, value and block are replaced before inlining and restored after).
fn tag(t: usize) -> Span {
    let t = (t as u32).saturating_add(1);
    Span { start: t, end: t }
}

fn untag(s: Span) -> Option<usize> {
    (s.start == s.end && s.start > 0).then(|| s.start as usize - 1)
}

impl<'m> InlinedModule<'m> {
    /// Inlines the functions of `m` and then each of `kernels` (which need not be in `m`; their
    /// calls name functions of `m`).
    pub fn new(m: &'m Module, kernels: &[&'m Kernel]) -> InlinedModule<'m> {
        let nf = m.funcs.len();
        let mut im = InlinedModule {
            bodies: m.funcs.iter().chain(kernels.iter().copied()).collect(),
            nfuncs: nf,
            origins: vec![],
            chains: vec![],
            chain_ids: HashMap::new(),
            kernels: vec![],
        };
        let mut funcs: Vec<Kernel> = (0..nf).map(|f| im.tagged(f as u32)).collect();
        let mut func_errors: Vec<Option<Diagnostic>> = vec![None; nf];
        match crate::analysis::callgraph::callee_order(m) {
            Ok(order) => {
                for f in order {
                    let mut body = std::mem::replace(&mut funcs[f], Kernel::new(""));
                    match inline_body(&mut body, &funcs) {
                        Ok(map) => im.retag(&mut body, &map),
                        Err(d) => func_errors[f] = Some(im.untag_diagnostic(d)),
                    }
                    funcs[f] = body;
                }
            }
            Err(cycle) => {
                let names: Vec<String> = cycle.iter().map(|(f, _)| format!("`@{}`", m.funcs[*f].name)).collect();
                let d = Diagnostic::error(format!("cannot inline recursive functions: {}", names.join(" -> ")));
                let d = match cycle.first().map(|c| c.1).filter(|s| !s.is_dummy()) {
                    Some(s) => d.at(s, "call in the cycle"),
                    None => d,
                };
                func_errors.iter_mut().for_each(|e| *e = Some(d.clone()));
            }
        }
        for ki in 0..kernels.len() {
            let body = (nf + ki) as u32;
            let mut k = im.tagged(body);
            // A call of a function that could not be inlined: that function's error.
            let failed = k.callees.iter().find_map(|c| {
                let f = m.funcs.iter().position(|f| f.name == c.name)?;
                func_errors[f].clone()
            });
            let r = match failed {
                Some(d) => Err(d),
                None => match inline_body(&mut k, &funcs) {
                    Ok(map) => {
                        im.retag(&mut k, &map);
                        Ok(im.restore(k))
                    }
                    Err(d) => Err(im.untag_diagnostic(d)),
                },
            };
            im.kernels.push(r);
        }
        im
    }

    /// The inlined copy of the `i`-th kernel given to [`InlinedModule::new`], or why it could not
    /// be made (`None`: no such kernel was given).
    pub fn kernel(&self, i: usize) -> Option<Result<&Inlined, &Diagnostic>> {
        self.kernels.get(i).map(|r| r.as_ref())
    }

    fn new_origin(&mut self, o: Origin) -> Span {
        self.origins.push(o);
        tag(self.origins.len() - 1)
    }

    /// A copy of body `b` whose instructions, values and blocks carry tags instead of spans.
    fn tagged(&mut self, b: u32) -> Kernel {
        let mut k = self.bodies[b as usize].clone();
        for i in 0..k.insts.len() {
            k.insts[i].span = self.new_origin(Origin { body: b, ent: Ent::Inst(InstId(i as u32)), chain: 0 });
        }
        for v in 0..k.values.len() {
            k.values[v].span = self.new_origin(Origin { body: b, ent: Ent::Value(ValueId(v as u32)), chain: 0 });
        }
        for x in 0..k.blocks.len() {
            let id = BlockId(x as u32);
            k.blocks[x].span = self.new_origin(Origin { body: b, ent: Ent::Block(id), chain: 0 });
            k.blocks[x].term_span = self.new_origin(Origin { body: b, ent: Ent::Term(id), chain: 0 });
        }
        k
    }

    /// The chain `call` followed by `rest`.
    fn chain_cons(&mut self, call: Call, rest: u32) -> u32 {
        if let Some(&id) = self.chain_ids.get(&(call, rest)) {
            return id;
        }
        self.chains.push(ChainNode { call, next: rest });
        let id = self.chains.len() as u32;
        self.chain_ids.insert((call, rest), id);
        id
    }

    /// After `inline_body` on a tagged body: the copied entities get origins whose chain starts
    /// with the call they were inlined through.
    fn retag(&mut self, k: &mut Kernel, map: &InlineMap) {
        let calls: Vec<Option<Call>> = map
            .calls
            .iter()
            .map(|c| {
                let o = self.origins.get(untag(c.call_span)?)?;
                match o.ent {
                    Ent::Inst(inst) => Some(Call { body: o.body, inst }),
                    _ => None,
                }
            })
            .collect();
        let through = |im: &mut Self, span: &mut Span, site: Option<u32>| {
            let (Some(site), Some(t)) = (site, untag(*span)) else { return };
            let (Some(Some(call)), Some(&o)) = (calls.get(site as usize), im.origins.get(t)) else { return };
            let chain = im.chain_cons(*call, o.chain);
            *span = im.new_origin(Origin { chain, ..o });
        };
        for i in 0..k.insts.len() {
            let site = map.of_inst(InstId(i as u32));
            through(self, &mut k.insts[i].span, site);
        }
        for v in 0..k.values.len() {
            let site = match k.values[v].def {
                ValueDef::Inst(i) => map.of_inst(i),
                ValueDef::BlockParam(b, _) => map.of_block(b),
                ValueDef::Param(_) => None,
            };
            through(self, &mut k.values[v].span, site);
        }
        for b in 0..k.blocks.len() {
            let site = map.of_block(BlockId(b as u32));
            through(self, &mut k.blocks[b].span, site);
            through(self, &mut k.blocks[b].term_span, site);
        }
    }

    /// The inlined tagged kernel with its real spans and names back, and its origin tables.
    fn restore(&self, mut k: Kernel) -> Inlined {
        let of = |s: Span| untag(s).filter(|t| *t < self.origins.len()).map_or(NONE, |t| t as u32);
        let inst_origin: Vec<u32> = k.insts.iter().map(|d| of(d.span)).collect();
        let value_origin: Vec<u32> = k.values.iter().map(|d| of(d.span)).collect();
        let block_origin: Vec<u32> =
            k.blocks.iter().map(|b| if of(b.span) != NONE { of(b.span) } else { of(b.term_span) }).collect();
        for d in &mut k.insts {
            d.span = self.real_span(d.span);
        }
        for (v, d) in k.values.iter_mut().enumerate() {
            d.span = self.real_span(d.span);
            if let Some(name) = self.origin(value_origin[v]).and_then(|o| self.value_name(o)) {
                d.name = name;
            }
        }
        for (b, d) in k.blocks.iter_mut().enumerate() {
            d.span = self.real_span(d.span);
            d.term_span = self.real_span(d.term_span);
            if let Some(name) = self.origin(block_origin[b]).and_then(|o| self.block_name(o)) {
                d.name = name;
            }
        }
        Inlined { body: k, inst_origin, value_origin, block_origin }
    }

    fn origin(&self, t: u32) -> Option<Origin> {
        self.origins.get(t as usize).copied()
    }

    /// The source span a tag stands for (a span that is not a tag is returned as it is).
    fn real_span(&self, s: Span) -> Span {
        let Some(o) = untag(s).and_then(|t| self.origins.get(t)) else { return s };
        let k = self.bodies[o.body as usize];
        let got = match o.ent {
            Ent::Inst(i) => k.insts.get(i.index()).map(|d| d.span),
            Ent::Value(v) => k.values.get(v.index()).map(|d| d.span),
            Ent::Block(b) => k.blocks.get(b.index()).map(|d| d.span),
            Ent::Term(b) => k.blocks.get(b.index()).map(|d| d.term_span),
        };
        got.unwrap_or(Span::DUMMY)
    }

    fn value_name(&self, o: Origin) -> Option<crate::Name> {
        let Ent::Value(v) = o.ent else { return None };
        self.bodies[o.body as usize].values.get(v.index()).map(|d| d.name.clone())
    }

    fn block_name(&self, o: Origin) -> Option<crate::Name> {
        let (Ent::Block(b) | Ent::Term(b)) = o.ent else { return None };
        self.bodies[o.body as usize].blocks.get(b.index()).map(|d| d.name.clone())
    }

    /// The inliner's diagnostic with tags turned back into spans.
    fn untag_diagnostic(&self, mut d: Diagnostic) -> Diagnostic {
        if let Some(p) = &mut d.primary {
            p.span = self.real_span(p.span);
        }
        for l in &mut d.secondary {
            l.span = self.real_span(l.span);
        }
        d
    }

    /// The calls of chain `c`, outermost first.
    fn calls(&self, mut c: u32) -> Vec<Call> {
        let mut out = vec![];
        while let Some(n) = c.checked_sub(1).and_then(|i| self.chains.get(i as usize)) {
            out.push(n.call);
            c = n.next;
            if out.len() > self.chains.len() {
                break;
            }
        }
        out
    }

    fn site(&self, c: Call) -> CallSite {
        let k = self.bodies[c.body as usize];
        let d = k.insts.get(c.inst.index());
        let callee = match d.map(|d| d.op) {
            Some(Op::Call(n)) => k.callees.get(n as usize).map(|c| c.name.clone()).unwrap_or_default(),
            _ => String::new(),
        };
        CallSite { caller: k.name.clone(), callee, span: d.map_or(Span::DUMMY, |d| d.span) }
    }

    /// The function called by `c`, as a body index.
    fn callee_body(&self, c: Call) -> Option<usize> {
        let name = self.site(c).callee;
        self.bodies[..self.nfuncs].iter().position(|f| f.name == name)
    }
}

/// Where a value, instruction or block of an inlined copy comes from, as the analyses ask it.
pub(crate) struct Provenance<'a, 'm> {
    pub(crate) im: &'a InlinedModule<'m>,
    pub(crate) k: &'a Inlined,
}

impl<'a, 'm> Provenance<'a, 'm> {
    fn o_inst(&self, i: InstId) -> Option<Origin> {
        self.im.origin(*self.k.inst_origin.get(i.index())?)
    }
    fn o_value(&self, v: ValueId) -> Option<Origin> {
        self.im.origin(*self.k.value_origin.get(v.index())?)
    }
    fn o_block(&self, b: BlockId) -> Option<Origin> {
        self.im.origin(*self.k.block_origin.get(b.index())?)
    }
    /// The calls instruction `i` was inlined through, outermost first (empty: the kernel's own).
    pub(crate) fn inst_chain(&self, i: InstId) -> Vec<CallSite> {
        self.o_inst(i)
            .map(|o| self.im.calls(o.chain).into_iter().map(|c| self.im.site(c)).collect())
            .unwrap_or_default()
    }
    /// The inlined instance (chain id) a value, instruction or block belongs to.
    pub(crate) fn value_instance(&self, v: ValueId) -> Option<u32> {
        let def = self.k.body.values.get(v.index())?.def;
        match def {
            // The kernel's parameters, in the kernel itself.
            ValueDef::Param(_) => Some(0),
            ValueDef::BlockParam(b, _) => self.block_instance(b),
            ValueDef::Inst(_) => self.o_value(v).map(|o| o.chain),
        }
    }
    pub(crate) fn block_instance(&self, b: BlockId) -> Option<u32> {
        self.o_block(b).map(|o| o.chain)
    }
    pub(crate) fn inst_instance(&self, i: InstId) -> Option<u32> {
        self.o_inst(i).map(|o| o.chain)
    }
    /// When `outer` is a strict prefix of `inner`: the calls of `inner` after it.
    pub(crate) fn calls_below(&self, outer: u32, inner: u32) -> Option<Vec<CallSite>> {
        let (a, b) = (self.im.calls(outer), self.im.calls(inner));
        (a.len() < b.len() && b.starts_with(&a)).then(|| b[a.len()..].iter().map(|c| self.im.site(*c)).collect())
    }

    /// How the value `w` of an outer instance reaches the inner instance `inner` as a parameter:
    /// for each call below `w`'s instance, outermost first, the call and the parameter of its
    /// callee that receives `w` (or the parameter bound to it one level up). `None` when `w` is not
    /// passed down that way (or cannot be followed).
    pub(crate) fn param_path(&self, w: ValueId, inner: u32) -> Option<Vec<(CallSite, String)>> {
        let outer = self.value_instance(w)?;
        let (a, b) = (self.im.calls(outer), self.im.calls(inner));
        if a.len() >= b.len() || !b.starts_with(&a) {
            return None;
        }
        let o = self.o_value(w).filter(|o| o.chain == outer)?;
        let Ent::Value(mut cur) = o.ent else { return None };
        let mut cur_body = o.body as usize;
        let mut out = vec![];
        for &c in &b[a.len()..] {
            if c.body as usize != cur_body {
                return None;
            }
            let args = &self.im.bodies[cur_body].insts.get(c.inst.index())?.args;
            let n = args.iter().position(|x| *x == Operand::Value(cur))?;
            let f = self.im.callee_body(c)?;
            let p = *self.im.bodies[f].params.get(n)?;
            out.push((self.im.site(c), self.im.bodies[f].value(p).name.to_string()));
            cur = p;
            cur_body = f;
        }
        Some(out)
    }
}
