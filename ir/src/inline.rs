//! Inlining: replaces every `call` by a copy of the callee's body.
//!
//! Guarantees:
//! - [`inline_module`] leaves no call in any kernel or function of a verified module: functions
//!   are processed callees first ([`crate::analysis::callgraph::callee_order`]), so the body copied at a call
//!   is already call-free and each call is replaced exactly once. The functions stay in the
//!   module (call-free), so a module keeps its library; backends emit only what is called.
//! - The result is a valid module when the input was: the block holding a call is split at the
//!   call; it jumps to the copy of the callee's entry block; every `ret` of the copy jumps to the
//!   continuation block, which receives the returned value as its block parameter and becomes the
//!   definition of the call's result (same `ValueId`, same name). The block that held the call
//!   dominates the copy and the continuation, so every use stays dominated by its definition.
//! - Callee parameters are replaced by the call's arguments (a constant argument used as an index
//!   becomes the `u64` the text format uses there, [`crate::subst::const_for_use`]). Copied values
//!   and blocks get names `callee.name`, made unique in the body with a numeric suffix.
//! - Copied instructions and terminators keep the spans of the function's source, so diagnostics
//!   about them point into the function; [`InlineMap`] records for each copied instruction and
//!   block the call (with its span) it was inlined through, so a diagnostic can name the chain of
//!   call sites ([`InlineMap::call_chain`]).
//! - Bounded: a body may grow to at most [`MAX_INLINED_INSTS`] instructions; inlining past that
//!   (a call tree that multiplies, e.g. each level calling the next twice) is an error located at
//!   the call, never unbounded memory. Nothing here recurses on the call depth.

use crate::diag::Diagnostic;
use crate::ir::*;
use crate::op::Op;
use crate::span::Span;
use crate::subst::const_for_use;
use rustc_hash::{FxHashMap, FxHashSet};

/// The most instructions a body may have after inlining.
pub const MAX_INLINED_INSTS: usize = 1 << 18;

/// One inlined call: which function, where the call was, and through which inlined call the call
/// itself was copied (for calls inside functions that were inlined in turn).
#[derive(Clone, Debug, PartialEq)]
pub struct InlinedCall {
    /// The callee's name (without `@`).
    pub callee: String,
    /// The caller's name.
    pub caller: String,
    /// The span of the `call` instruction.
    pub call_span: Span,
    /// The inlined call whose copy contained this call, if any.
    pub parent: Option<u32>,
}

/// Where the copied entities of an inlined body came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InlineMap {
    pub calls: Vec<InlinedCall>,
    /// For each instruction of the body (by `InstId` index): the inlined call it was copied
    /// through, `None` for the body's own instructions.
    pub inst_call: Vec<Option<u32>>,
    /// For each block (by `BlockId` index): the inlined call its copy came from.
    pub block_call: Vec<Option<u32>>,
}

impl InlineMap {
    /// The chain of inlined calls an entity came through, innermost first.
    pub fn call_chain(&self, call: Option<u32>) -> Vec<&InlinedCall> {
        let mut out = Vec::new();
        let mut cur = call;
        while let Some(c) = cur.and_then(|c| self.calls.get(c as usize)) {
            out.push(c);
            cur = c.parent;
            if out.len() > self.calls.len() {
                break;
            }
        }
        out
    }
    /// The inlined call instruction `i` came through.
    pub fn of_inst(&self, i: InstId) -> Option<u32> {
        self.inst_call.get(i.index()).copied().flatten()
    }
    /// The inlined call block `b` came through.
    pub fn of_block(&self, b: BlockId) -> Option<u32> {
        self.block_call.get(b.index()).copied().flatten()
    }
}

/// Inlines every call of every kernel and function of `m`. Returns whether anything changed, or
/// an error (unknown callee, recursion, growth past the limit) located at a call. The module
/// should be verified first; a call that does not match its callee is an error, not a panic.
pub fn inline_module(m: &mut Module) -> Result<bool, Diagnostic> {
    inline_module_limited(m, MAX_INLINED_INSTS)
}

/// [`inline_module`] with another limit on the instructions of a body.
pub fn inline_module_limited(m: &mut Module, max_insts: usize) -> Result<bool, Diagnostic> {
    if !m.has_calls() {
        return Ok(false);
    }
    let order = crate::analysis::callgraph::callee_order(m).map_err(|cycle| {
        let names: Vec<String> = cycle.iter().map(|(f, _)| format!("`@{}`", m.funcs[*f].name)).collect();
        let mut d = Diagnostic::error(format!("cannot inline recursive functions: {}", names.join(" -> ")));
        if let Some(s) = cycle.first().map(|c| c.1).filter(|s| !s.is_dummy()) {
            d = d.at(s, "call in the cycle");
        }
        d
    })?;
    for f in order {
        let mut body = std::mem::replace(&mut m.funcs[f], Kernel::new(""));
        let r = inline_body_limited(&mut body, &m.funcs, max_insts);
        m.funcs[f] = body;
        r?;
    }
    for k in 0..m.kernels.len() {
        inline_body_limited(&mut m.kernels[k], &m.funcs, max_insts)?;
    }
    Ok(true)
}

/// Inlines the calls of one body, whose callees in `funcs` must be call-free. Returns where the
/// copied entities came from.
pub fn inline_body(k: &mut Kernel, funcs: &[Kernel]) -> Result<InlineMap, Diagnostic> {
    inline_body_limited(k, funcs, MAX_INLINED_INSTS)
}

fn inline_body_limited(k: &mut Kernel, funcs: &[Kernel], max_insts: usize) -> Result<InlineMap, Diagnostic> {
    let mut map = InlineMap::default();
    if k.callees.is_empty() {
        return Ok(map);
    }
    let mut names = Names::of(k);
    let mut work: Vec<BlockId> = k.block_ids().collect();
    while let Some(b) = work.pop() {
        let Some(pos) = k.block(b).insts.iter().position(|&i| matches!(k.inst(i).op, Op::Call(_))) else { continue };
        let call = k.block(b).insts[pos];
        if k.insts.len() >= max_insts {
            return Err(Diagnostic::error(format!(
                "inlining into `@{}` would exceed {max_insts} instructions",
                k.name
            ))
            .at(k.inst(call).span, "this call")
            .with_note(
                "the call tree multiplies the code; call fewer functions per function or run without `inline`",
            ));
        }
        let cont = inline_call(k, funcs, b, pos, &mut names, &mut map)?;
        work.push(cont);
    }
    k.callees.clear();
    map.inst_call.resize(k.insts.len(), None);
    map.block_call.resize(k.blocks.len(), None);
    Ok(map)
}

/// Unique value and block names of a body: the names in use, and for each base name the next
/// suffix to try, so that making n copies of one name costs O(n), not O(n^2). Passes that copy
/// code (inlining, unrolling) name the copies with it.
pub struct Names {
    pub values: NameSet,
    pub blocks: NameSet,
}

/// One namespace of [`Names`].
#[derive(Default)]
pub struct NameSet {
    used: FxHashSet<Name>,
    next: FxHashMap<Name, u64>,
}

impl Names {
    /// The names `k` uses.
    pub fn of(k: &Kernel) -> Names {
        Names {
            values: NameSet { used: k.values.iter().map(|v| v.name.clone()).collect(), next: FxHashMap::default() },
            blocks: NameSet { used: k.blocks.iter().map(|b| b.name.clone()).collect(), next: FxHashMap::default() },
        }
    }
    /// `base`, or `base.N` with the first free `N` from 2, marked used.
    pub fn fresh(set: &mut NameSet, base: &str) -> Name {
        let mut name = Name::from(base);
        if set.used.contains(&name) {
            let n = set.next.entry(Name::from(base)).or_insert(2);
            loop {
                name = Name::from(format!("{base}.{n}"));
                *n += 1;
                if !set.used.contains(&name) {
                    break;
                }
            }
        }
        set.used.insert(name.clone());
        name
    }
}

/// Inlines the call at `k.blocks[b].insts[pos]`; returns the continuation block.
fn inline_call(
    k: &mut Kernel,
    funcs: &[Kernel],
    b: BlockId,
    pos: usize,
    names: &mut Names,
    map: &mut InlineMap,
) -> Result<BlockId, Diagnostic> {
    let call = k.block(b).insts[pos];
    let data = k.inst(call).clone();
    let Op::Call(c) = data.op else { unreachable!("inline_call on a non-call") };
    let callee_name = k.callees.get(c as usize).map(|c| c.name.clone()).unwrap_or_default();
    let Some(f) = funcs.iter().find(|f| f.name == callee_name) else {
        return Err(Diagnostic::error(format!("unknown function `@{callee_name}`")).at(data.span, "called here"));
    };
    if !f.callees.is_empty() && f.placed_insts().any(|(_, i)| matches!(f.inst(i).op, Op::Call(_))) {
        return Err(Diagnostic::error(format!("`@{}` still has calls (inline its callees first)", f.name))
            .at(data.span, "called here"));
    }
    if data.args.len() != f.params.len() {
        return Err(Diagnostic::error(format!(
            "`@{}` takes {} arguments, but this call passes {}",
            f.name,
            f.params.len(),
            data.args.len()
        ))
        .at(data.span, "called here"));
    }
    let parent = map.inst_call.get(call.index()).copied().flatten();
    map.calls.push(InlinedCall { callee: f.name.clone(), caller: k.name.clone(), call_span: data.span, parent });
    let site = (map.calls.len() - 1) as u32;

    // The continuation: the instructions after the call and the old terminator.
    let cont_name = Names::fresh(&mut names.blocks, &format!("{}.ret", f.name));
    let cont = k.add_block(cont_name);
    let rest: Vec<InstId> = k.block_mut(b).insts.split_off(pos + 1);
    k.block_mut(b).insts.pop(); // the call
    let old_term = std::mem::replace(&mut k.block_mut(b).term, Terminator::Ret(None));
    let old_term_span = k.block(b).term_span;
    {
        let cb = k.block_mut(cont);
        cb.insts = rest;
        cb.term = old_term;
        cb.term_span = old_term_span;
        cb.span = Span::DUMMY;
    }
    // Block parameters of successors name their predecessor nowhere, but values defined by
    // block parameters of `b` keep `b` as their block; nothing else records the block of a value.
    if let Some(r) = data.result {
        k.values[r.index()].def = ValueDef::BlockParam(cont, 0);
        k.block_mut(cont).params.push(r);
    }
    map.block_call.resize(k.blocks.len(), None);
    map.block_call[cont.index()] = map.block_call.get(b.index()).copied().flatten();

    // Values: callee parameters become the arguments; everything else gets a copy.
    let mut vmap: FxHashMap<ValueId, Operand> = FxHashMap::default();
    for (p, a) in f.params.iter().zip(&data.args) {
        vmap.insert(*p, *a);
    }
    // Blocks first (branches may go forward).
    let mut bmap: Vec<BlockId> = Vec::with_capacity(f.blocks.len());
    for fb in &f.blocks {
        let name = Names::fresh(&mut names.blocks, &format!("{}.{}", f.name, fb.name));
        let nb = k.add_block(name);
        k.block_mut(nb).span = fb.span;
        bmap.push(nb);
    }
    map.block_call.resize(k.blocks.len(), None);
    for nb in &bmap {
        map.block_call[nb.index()] = Some(site);
    }
    for (bi, fb) in f.blocks.iter().enumerate() {
        for &p in &fb.params {
            let v = f.value(p);
            let name = Names::fresh(&mut names.values, &format!("{}.{}", f.name, v.name));
            let nv = k.add_block_param(bmap[bi], name, v.ty);
            k.values[nv.index()].span = v.span;
            vmap.insert(p, Operand::Value(nv));
        }
    }
    let sub = |vmap: &FxHashMap<ValueId, Operand>, op: &Op, pos: usize, o: Operand| -> Operand {
        match o {
            Operand::Value(v) => match vmap.get(&v) {
                Some(Operand::Const(c)) => Operand::Const(const_for_use(op, pos, *c)),
                Some(x) => *x,
                None => o,
            },
            Operand::Const(_) => o,
        }
    };
    // Instructions in layout order; results are defined before their uses in dominance order,
    // but a use may come earlier in the layout (a loop back edge): map all results first.
    let mut copies: Vec<(BlockId, InstId, InstId)> = Vec::new();
    for (bi, fb) in f.blocks.iter().enumerate() {
        for &i in &fb.insts {
            let d = f.inst(i);
            let result = d.result.map(|r| {
                let v = f.value(r);
                (Names::fresh(&mut names.values, &format!("{}.{}", f.name, v.name)), v.ty)
            });
            let ni = k.create_inst(d.op, std::iter::empty(), result, d.span);
            if let (Some(r), Some(nr)) = (d.result, k.inst(ni).result) {
                k.values[nr.index()].span = f.value(r).span;
                vmap.insert(r, Operand::Value(nr));
            }
            copies.push((bmap[bi], i, ni));
        }
    }
    for (nb, i, ni) in &copies {
        let d = f.inst(*i);
        let args: Args = d.args.iter().enumerate().map(|(pos, a)| sub(&vmap, &d.op, pos, *a)).collect();
        k.inst_mut(*ni).args = args;
        k.block_mut(*nb).insts.push(*ni);
    }
    map.inst_call.resize(k.insts.len(), None);
    for (_, _, ni) in &copies {
        map.inst_call[ni.index()] = Some(site);
    }
    for (bi, fb) in f.blocks.iter().enumerate() {
        let call_of = |c: &BlockCall| BlockCall {
            block: bmap.get(c.block.index()).copied().unwrap_or(c.block),
            args: c.args.iter().map(|a| sub(&vmap, &Op::Barrier, usize::MAX, *a)).collect(),
        };
        let term = match &fb.term {
            Terminator::Ret(v) => {
                let args = match (v, data.result) {
                    (Some(v), Some(_)) => vec![sub(&vmap, &Op::Barrier, usize::MAX, *v)],
                    _ => vec![],
                };
                Terminator::Jmp(BlockCall { block: cont, args })
            }
            Terminator::Jmp(c) => Terminator::Jmp(call_of(c)),
            Terminator::Br { cond, then_, else_ } => Terminator::Br {
                cond: sub(&vmap, &Op::Barrier, usize::MAX, *cond),
                then_: call_of(then_),
                else_: call_of(else_),
            },
        };
        let nb = bmap[bi];
        k.block_mut(nb).term = term;
        k.block_mut(nb).term_span = fb.term_span;
    }
    // The call's block now enters the copy.
    let entry = bmap.first().copied().unwrap_or(cont);
    k.block_mut(b).term = Terminator::Jmp(BlockCall { block: entry, args: vec![] });
    k.block_mut(b).term_span = data.span;
    Ok(cont)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse, print_module, verify::verify_module};

    fn inlined(src: &str) -> Module {
        let mut m = parse(src).unwrap_or_else(|d| panic!("{d:?}"));
        assert!(verify_module(&m).iter().all(|d| !d.is_error()));
        inline_module(&mut m).unwrap();
        let diags = verify_module(&m);
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:#?}\n{}", print_module(&m));
        m
    }

    const NESTED: &str = "
func @sq(%x: f32) -> f32 {
entry:
  %y = mul.f32 %x, %x
  ret %y
}
func @sum_sq(%p: ptr<global, f32>, %i: u32) -> f32 {
entry:
  %a = load %p[%i]
  %s = call @sq(%a)
  %t = call @sq(2.0)
  %u = add.f32 %s, %t
  ret %u
}
func @put(%p: ptr<global, f32>, %i: u32, %v: f32) {
entry:
  %c = lt.u32 %i, 4
  br %c, yes, no
yes:
  store %p[%i], %v
  ret
no:
  ret
}
kernel @k(%p: ptr<global, f32>) {
entry:
  %t = tid.x
  %v = call @sum_sq(%p, %t)
  call @put(%p, %t, %v)
  call @put(%p, 7, %v)
  ret
}
";

    #[test]
    fn nested_calls_leave_no_call_and_stay_valid() {
        let m = inlined(NESTED);
        for k in m.bodies() {
            assert!(k.placed_insts().all(|(_, i)| !matches!(k.inst(i).op, Op::Call(_))), "{}", print_module(&m));
            assert!(k.callees.is_empty());
        }
        // The printed module re-parses and verifies (names are unique and spellable).
        let text = print_module(&m);
        let again = parse(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        assert!(verify_module(&again).iter().all(|d| !d.is_error()), "{text}");
        let k = m.kernel("k").unwrap();
        // Two copies of @put, one of @sum_sq (which itself holds two copies of @sq).
        let labels: Vec<&str> = k.blocks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(labels.iter().filter(|l| l.starts_with("put.yes")).count(), 2, "{labels:?}");
        assert_eq!(labels.iter().filter(|l| **l == "sum_sq.entry").count(), 1, "{labels:?}");
        assert!(labels.contains(&"put.ret.2"), "{labels:?}");
    }

    #[test]
    fn constant_arguments_in_index_positions_become_u64() {
        let m = inlined(NESTED);
        let text = print_module(&m);
        assert!(text.contains("store %p[7], "), "{text}");
    }

    #[test]
    fn the_map_names_the_call_chain() {
        let mut m = parse(NESTED).unwrap();
        // Inline @sum_sq's calls first (as inline_module does), then the kernel's.
        let order = crate::analysis::callgraph::callee_order(&m).unwrap();
        for f in order {
            let mut body = std::mem::replace(&mut m.funcs[f], Kernel::new(""));
            inline_body(&mut body, &m.funcs).unwrap();
            m.funcs[f] = body;
        }
        let mut k = m.kernels[0].clone();
        let map = inline_body(&mut k, &m.funcs).unwrap();
        // Every copied multiply came through a call of @sum_sq from @k.
        let muls: Vec<InstId> =
            k.placed_insts().map(|(_, i)| i).filter(|i| k.inst(*i).op.mnemonic() == "mul.f32").collect();
        assert_eq!(muls.len(), 2);
        for i in muls {
            let chain = map.call_chain(map.of_inst(i));
            assert_eq!(chain.len(), 1);
            assert_eq!(chain[0].callee, "sum_sq");
            assert_eq!(chain[0].caller, "k");
        }
    }

    #[test]
    fn a_call_tree_that_multiplies_is_an_error_not_unbounded_memory() {
        // Each level calls the next twice: 2^24 copies of the leaf; a limit stops it.
        let mut src = String::from("func @f0(%x: u32) -> u32 {\nentry:\n  %y = add.u32 %x, 1\n  ret %y\n}\n");
        for i in 1..25 {
            src.push_str(&format!(
                "func @f{i}(%x: u32) -> u32 {{\nentry:\n  %a = call @f{p}(%x)\n  %b = call @f{p}(%a)\n  ret %b\n}}\n",
                p = i - 1
            ));
        }
        src.push_str("kernel @k(%p: ptr<global, u32>) {\nentry:\n  %v = call @f24(1)\n  store %p[0], %v\n  ret\n}\n");
        let mut m = parse(&src).unwrap();
        let e = inline_module_limited(&mut m, 5000).unwrap_err();
        assert!(e.message.contains("would exceed"), "{}", e.message);
    }
}
