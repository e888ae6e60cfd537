//! The IR verifier: decides whether a module is well-formed, and explains every way it is not;
//! with `barrier.rs` and `collective_masks.rs`, every static check kir runs.
//!
//! Public entry points (everything else here is private to kir-ir):
//! - [`check`] → [`Checked`]: THE way to a checked module — the verifier, then barrier and
//!   collective verification (`kir check`); what the emitter and the pass pipeline take. Its
//!   diagnostics on refusal, and [`Checked::warnings`] on success, are what `kir check` prints.
//! - [`check_keeping`]: the same diagnostics, and the module kept whatever they say ([`Verified`]
//!   when the verifier accepts it): for the editor and for tests that run IR the barrier checks
//!   refuse.
//! - [`verify`] → [`Verified`]: well-formedness alone (what the interpreter needs; it checks
//!   barriers at run time). [`verify_module`]: its diagnostics on a borrowed module.
//! - [`verify_body`]: one body, with or without its module, reusing a cached CFG: for drivers that
//!   verify as they edit (the pass manager's `verify_each`, the fuzz reducer, the CFG pictures).
//! - [`check_barriers`]: barrier and collective verification alone, for the `verify-barriers`
//!   pass (on the pass manager's cached CFGs).
//! - [`Checked::edit`], [`Checked::into_edits`] → [`BodyEdits::finish`], [`Verified::edit`]: the
//!   ways to change a module and keep its proof.
//!
//! Guarantees:
//! - [`verify_module`] / [`verify_body`] never panic, whatever the IR (dangling handles included),
//!   and report EVERY problem at once (not just the first), errors and warnings, sorted by source
//!   position within each kernel. A result without errors means the module is well-formed;
//!   warnings flag valid but suspicious IR.
//! - Every diagnostic names the entity it is about (kernel, block, value, instruction mnemonic) and
//!   points at the span of the offending instruction, terminator, value, block or declaration. When
//!   that span is [`Span::DUMMY`] (an entity created by a pass), the caret falls back to the
//!   enclosing block's label, then to the kernel's name, and the label says so; a diagnostic never
//!   puts a caret at `0..0` as if it were real source (with no real span anywhere, it has no caret
//!   and names the entity in its notes). For such entities a note prints the instruction as text.
//! - [`verify_module`] checks launch graphs too (`graph.rs`), after the kernels.
//! - Only the verifier decides well-formedness: every invariant below holds for any module it
//!   accepts, so passes, the PTX backend and the interpreter may rely on them without re-checking.
//!
//! Invariants checked (E = error, W = warning):
//!
//! Entities and handles
//! - E: a kernel has at least one block.
//! - E: every `ValueId` (kernel params, block params, instruction results, operands, block
//!   arguments, branch conditions), `InstId` (in `Block::insts`) and `BlockId` (branch targets) is
//!   in range of its arena.
//! - E: `ValueData::def` points back at the entity that defines the value: `Param(n)` for the n-th
//!   kernel parameter, `BlockParam(b, n)` for the n-th parameter of block `b`, `Inst(i)` for the
//!   result of instruction `i`.
//! - E: every placed instruction appears in exactly one block, exactly once. (Instructions in the
//!   arena that no block lists are dead and ignored.)
//! - E: every used value is defined by a kernel parameter, a block parameter or a placed
//!   instruction.
//! - E: constants are canonical: no bits set above their type's width, and `pred` is 0 or 1.
//! - E: no value has the type `ptr<_, pred>`.
//!
//! Names (so that the printer's output re-parses to the same module)
//! - E: kernel names are unique in a module; value names, block labels and shared declaration names
//!   are unique in a kernel.
//! - E: names are spellable: values `[A-Za-z0-9_][A-Za-z0-9_.]*`, kernels and shared declarations
//!   `[A-Za-z_][A-Za-z0-9_.]*`, block labels `[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*` and not a
//!   reserved word (`kernel shared align br jmp ret true false inf nan`).
//!
//! Control flow and SSA
//! - E: the entry block (`blocks[0]`) has no parameters. Branching back to the entry block IS
//!   allowed: it has no parameters to bind, and a loop whose header is the entry block is a valid
//!   (reconvergent) CFG.
//! - E: every definition dominates each of its uses: kernel parameters dominate everything; within
//!   a block a use comes after its definition (an instruction cannot use its own result); across
//!   blocks the defining block dominates the using block. Block arguments and the branch condition
//!   are uses at the END of the branching block.
//! - W: a block unreachable from the entry block is reported once ("block `x` is unreachable").
//!   Dominance is not checked inside unreachable blocks (every other rule is).
//! - E: on every edge (`br` then/else, `jmp`), the number of block arguments equals the number of
//!   the target's parameters, and each argument's type equals its parameter's type.
//! - E: the condition of `br` is a `pred`.
//!
//! Instructions
//! - E: the operand count equals [`Op::arity`].
//! - E: every operand whose type the op determines ([`Op::signature`]) has exactly that type; the
//!   result type equals the type the op produces (for memory ops: the pointee type; for `offset`
//!   and `offset.bytes`: the pointer type; `ptrcast`: its annotated type; `addr @s`:
//!   `ptr<shared, T>` with `T` the element type of `@s`).
//! - E: ops without a value (`store`, `barrier`) have no result; ops without side effects (all but
//!   `store`, `atom.*`, `barrier`, `shfl`, `vote`) have one.
//! - E: the op accepts its type: [`BinOp::accepts`], [`UnOp::accepts`], [`CmpOp::accepts`];
//!   `mad` takes integers, `fma` floats; float `div` only `f32` and `f64`; `mul.wide` a type with a
//!   widened type (8/16/32-bit ints).
//! - E: float modifiers only where the op has them:
//!   - integer ops, `min`/`max`, `neg`/`abs`/`not` and every non-float op carry no modifier;
//!   - `.rn .rz .rm .rp` on float `add sub mul div fma sqrt rcp`;
//!   - `.approx` only on `div.f32`, `sqrt.f32`, `rcp.f32`; PTX has no `.approx` form of these for
//!     f64, so it is rejected there;
//!   - `.full` only on `div.f32`;
//!   - the approx-only ops (`rsqrt ex2 lg2 sin cos tanh`) REQUIRE `.approx` (so no rounding mode);
//!   - `.ftz` only on f16 and f32 ops (PTX has no `.ftz` for f64 and bf16 arithmetic).
//! - E: `cvt`: neither type is `pred`; rounding: int→int takes none; float→int takes none (the
//!   default) or an integral one (`.rni .rzi .rmi .rpi`); int→float takes none or `.rn .rz .rm .rp`;
//!   float→float takes none when widening, `.rn .rz .rm .rp` (or none) when narrowing or changing
//!   format at the same width, and an integral one (or none) when the two types are equal;
//!   `.ftz` needs an `f32` source or destination (as in PTX); `.sat` is allowed everywhere.
//! - E: `bitcast`: both types have the same width and neither is `pred`.
//! - E: memory ops (`load`, `store`, `atom.*`): the address operand is a pointer (global or
//!   shared), the index any integer type; the stored / atomic value(s) have the pointee type;
//!   the pointee type is one the atomic supports ([`AtomicOp::accepts`]; `atom.cas`: u32 s32 u64
//!   s64).
//! - E: `offset` / `offset.bytes`: a pointer and any integer. `ptrcast`: a pointer operand, a
//!   pointer target type in the same address space, element type not `pred`.
//! - E: `addr @s`: `s` indexes a shared declaration of the kernel.
//! - E: `shfl` moves 32-bit types only (`u32 s32 f32`: PTX `shfl.sync` is `.b32`; 64-bit values
//!   must be split by the producer); lane/delta and member mask are `u32`. `vote` takes a `pred`
//!   and a `u32` mask. `select`'s condition is a `pred`.
//!
//! Shared memory
//! - E: a declaration's element type is not `pred`, its length (if static) is at least 1, its
//!   alignment a power of two at least the element size.
//! - E: at most one dynamic (`[]`) declaration per kernel.
//! - E: the static declarations, laid out in order with their alignment, total at most 48 KiB
//!   (49152 bytes): PTX limits statically allocated shared memory to 48 KiB; more must be dynamic.
//!
//! Parameters
//! - E: the parameters, laid out in order as the PTX backend declares them (each aligned to its
//!   size: pointers 8 bytes, `pred` as `.u8`), take at most 4352 bytes ([`MAX_PARAM_BYTES`], what
//!   ptxas accepts for a PTX ISA 8.0 entry); the error points at the first parameter past it.
//!
//! Functions and calls
//! - E: names are unique across the kernels and functions of a module.
//! - E: a function declares no shared memory (it reaches shared memory through pointers passed to
//!   it) and no `reqntid`.
//! - E: `ret %v` only in a function with a result, and `%v` has the result type; a function with a
//!   result returns one on every `ret`; a kernel's `ret` carries no value.
//! - E: `call @f(args)`: `@f` is a function of the module (not a kernel); as many arguments as it
//!   has parameters, each of the parameter's type; a result only when `@f` has one, of its type.
//! - E: no function calls itself, directly or through others: the cycle is named, call by call.
//!   ([`verify_body`] without the module checks calls only for a valid callee index.)
//!
//! Block shape
//! - E: `reqntid(x, y, z)`: every dimension at least 1, x and y at most 1024, z at most 64, and
//!   `x * y * z` at most 1024 threads (CUDA's limits, which the interpreter enforces at launch).

use crate::analysis::callgraph::callee_order;
use crate::analysis::cfg::Cfg;
use crate::diag::Diagnostic;
use crate::ir::*;
use crate::op::*;
use crate::span::Span;
use crate::text::printer::{print_constant, print_inst};
use crate::types::{AddrSpace, Constant, ScalarType, Type, VecWidth};
use rustc_hash::FxHashMap as HashMap;

pub(crate) mod barrier;
mod checked;
pub(crate) mod collective_masks;
mod graph;
pub(crate) mod inlined;
mod verified;
pub use barrier::check_barriers;
pub use checked::{check, check_keeping, Checked};
pub(crate) use graph::verify_graph;
pub use verified::{verify, BodyEdits, Diagnostics, Verified, VerifiedKernel};

/// The parameter space of a kernel entry in PTX ISA 8.0 (what the backend emits), in bytes:
/// ptxas rejects more ("uses too much parameter space (0x1108 bytes, 0x1100 max)"), on sm_80 and
/// sm_90 alike.
pub const MAX_PARAM_BYTES: u64 = 0x1100;

/// Bytes a parameter of type `ty` takes in the PTX parameter space, which is also its alignment:
/// pointers are `.u64`, `pred` is passed as `.u8` (see `kir_backend_ptx::lower::param_type`).
pub fn param_bytes(ty: Type) -> u64 {
    match ty {
        Type::Ptr(..) => 8,
        Type::Scalar(ScalarType::Pred) => 1,
        Type::Scalar(s) => s.bytes() as u64,
        // Not a valid parameter type (the verifier says so); its size for the running total.
        Type::Vec(..) => (ty.bits() / 8) as u64,
    }
}

/// Statically allocated shared memory per kernel allowed by PTX, in bytes.
pub const MAX_STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// Verifies every kernel and function of a module; returns all errors and warnings (empty =
/// clean).
pub fn verify_module(m: &Module) -> Vec<Diagnostic> {
    verify_module_parts(m).flatten()
}

/// A module's verification, kept by part so that a driver that changed some bodies can redo only
/// those ([`BodyEdits::finish`]).
pub(crate) struct ModuleParts {
    /// Per body ([`Module::bodies`] order): a duplicate-name error, if any, then the body's own
    /// diagnostics.
    pub(crate) bodies: Vec<Vec<Diagnostic>>,
    /// The CFG the dominance check built for each body (`None` where its checks stopped before).
    pub(crate) cfgs: Vec<Option<Cfg>>,
    /// Recursion, then launch graphs: the checks that read the module as a whole.
    pub(crate) whole: Vec<Diagnostic>,
}

impl ModuleParts {
    /// Every diagnostic in the order [`verify_module`] reports them.
    pub(crate) fn flatten(self) -> Vec<Diagnostic> {
        self.bodies.into_iter().flatten().chain(self.whole).collect()
    }
}

/// [`verify_module`] by part, with the CFG the dominance check built for each body.
pub(crate) fn verify_module_parts(m: &Module) -> ModuleParts {
    let mut bodies = Vec::new();
    let mut cfgs = Vec::new();
    let mut seen: HashMap<&str, &Kernel> = HashMap::default();
    for k in m.kernels.iter().chain(&m.funcs) {
        let mut out = Vec::new();
        if let Some(prev) = seen.get(k.name.as_str()) {
            let what = |k: &Kernel| if k.is_func() { "function" } else { "kernel" };
            let msg = if what(prev) == what(k) {
                format!("duplicate {} name `@{}`", what(k), k.name)
            } else {
                format!("`@{}` names both a {} and a {}", k.name, what(prev), what(k))
            };
            let mut d = Diagnostic::error(msg);
            d = match real(k.span) {
                Some(s) => d.at(s, "defined again here"),
                None => d,
            };
            if let Some(s) = real(prev.span) {
                d = d.with_label(s, "first defined here");
            }
            out.push(d.with_note("kernel and function names must be unique in a module"));
        } else {
            seen.insert(&k.name, k);
        }
        let (diags, cfg) = verify_body_impl(k, Some(m), None);
        out.extend(diags);
        bodies.push(out);
        cfgs.push(cfg);
    }
    ModuleParts { bodies, cfgs, whole: verify_whole_module(m) }
}

/// The checks that read the module as a whole: recursion, then every launch graph.
pub(crate) fn verify_whole_module(m: &Module) -> Vec<Diagnostic> {
    let mut out = check_recursion(m);
    for g in &m.graphs {
        out.extend(verify_graph(m, g));
    }
    out
}

/// Verifies one kernel or function on its own: calls are checked only for a valid callee index
/// (their types need the module: [`verify_module`]).
#[cfg(test)]
pub(crate) fn verify_kernel(k: &Kernel) -> Vec<Diagnostic> {
    verify_body(k, None, None).0
}

/// Verifies one body, for a driver that checks bodies as it changes them (the pass manager's
/// `verify_each`, the fuzz reducer): with the module, calls are checked against their callees;
/// without, only for a valid callee index. `cached` is the body's CFG if one is computed already
/// (an analysis cache's; used when it fits the body); the CFG the dominance check built is
/// handed back (`None` when it used `cached`, or when the body's structural checks stopped before
/// dominance).
pub fn verify_body(k: &Kernel, module: Option<&Module>, cached: Option<&Cfg>) -> (Vec<Diagnostic>, Option<Cfg>) {
    verify_body_impl(k, module, cached)
}

/// What calls are resolved against.
#[derive(Clone, Copy)]
struct CallContext<'a> {
    funcs: &'a [Kernel],
    kernels: &'a [Kernel],
}

pub(crate) fn verify_body_impl(
    k: &Kernel,
    module: Option<&Module>,
    given: Option<&Cfg>,
) -> (Vec<Diagnostic>, Option<Cfg>) {
    verify_body_in(k, module.map(|m| CallContext { funcs: &m.funcs, kernels: &m.kernels }), given)
}

fn verify_body_in(k: &Kernel, callees: Option<CallContext<'_>>, given: Option<&Cfg>) -> (Vec<Diagnostic>, Option<Cfg>) {
    let mut v = Verifier {
        k,
        callees,
        diags: Vec::new(),
        sites: vec![None; k.values.len()],
        placed: vec![None; k.insts.len()],
        given_cfg: given.filter(|c| c.len() == k.blocks.len()),
        cfg: None,
    };
    v.run();
    let mut diags = v.diags;
    diags.sort_by_key(|d| d.span().map(|s| s.start).unwrap_or(u32::MAX));
    (diags, v.cfg)
}

fn real(s: Span) -> Option<Span> {
    (!s.is_dummy()).then_some(s)
}

/// Rejects recursion: one error naming the cycle, with every call of it labelled.
fn check_recursion(m: &Module) -> Vec<Diagnostic> {
    let Err(cycle) = callee_order(m) else { return vec![] };
    let names: Vec<String> = cycle.iter().map(|(f, _)| format!("`@{}`", m.funcs[*f].name)).collect();
    let first = &names[0];
    let msg = if cycle.len() == 1 {
        format!("function {first} calls itself")
    } else {
        format!("recursive functions: {} -> {first}", names.join(" -> "))
    };
    let mut d = Diagnostic::error(msg);
    for (i, (f, call)) in cycle.iter().enumerate() {
        let to = &names[(i + 1) % names.len()];
        if let Some(s) = real(*call) {
            d = if i == 0 { d.at(s, format!("calls {to}")) } else { d.with_label(s, format!("calls {to}")) };
        } else {
            d = d.with_note(format!("`@{}` calls {to}", m.funcs[*f].name));
        }
    }
    vec![d.with_note("kir functions cannot recurse: every call is inlined for the GPU and has a fixed frame")]
}

/// Where a value is defined, as found in the block layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Site {
    Param,
    BlockParam(BlockId),
    /// Block and position in `Block::insts`.
    Inst(BlockId, usize),
}

/// What a diagnostic is about, for the fallback label when its span is a dummy.
#[derive(Clone, Copy)]
enum Entity {
    Inst(BlockId, InstId),
    Term(BlockId),
    Value(ValueId),
    Block(BlockId),
    Kernel,
}

struct Verifier<'a> {
    k: &'a Kernel,
    /// The bodies calls resolve against, when known: calls are checked against their callees.
    callees: Option<CallContext<'a>>,
    diags: Vec<Diagnostic>,
    sites: Vec<Option<Site>>,
    /// The (first) placement of every placed instruction.
    placed: Vec<Option<(BlockId, usize)>>,
    /// A CFG the caller computed already, used by the dominance check instead of a new one.
    given_cfg: Option<&'a Cfg>,
    /// The CFG built by the dominance check (kept for [`Verified`]).
    cfg: Option<Cfg>,
}

const RESERVED: [&str; 12] =
    ["kernel", "func", "import", "shared", "align", "br", "jmp", "ret", "true", "false", "inf", "nan"];

fn is_value_name(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphanumeric() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

fn is_global_name(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

fn is_label(s: &str) -> bool {
    let mut parts = s.split('.');
    let first = parts.next().unwrap_or("");
    let word = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    matches!(first.chars().next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && word(first)
        && parts.all(word)
        && !RESERVED.contains(&s)
}

fn flags_text(f: FloatFlags) -> String {
    let mut s = String::new();
    match f.mode {
        FloatMode::Exact(Rounding::Rn) => {}
        FloatMode::Exact(r) => s.push_str(&format!(".{}", r.name())),
        FloatMode::Approx => s.push_str(".approx"),
        FloatMode::Full => s.push_str(".full"),
    }
    if f.ftz {
        s.push_str(".ftz");
    }
    s
}

/// "a" or "an" before a type name as spoken ("an f32", "an s32", "a u32").
fn article(t: ScalarType) -> &'static str {
    if t.is_float() && t != ScalarType::BF16 || t.is_signed_int() {
        "an"
    } else {
        "a"
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl<'a> Verifier<'a> {
    // ---------------------------------------------------------------- locations and reporting

    fn block_name(&self, b: BlockId) -> String {
        self.k.blocks.get(b.index()).map(|x| x.name.to_string()).unwrap_or_else(|| format!("#{}", b.0))
    }

    fn value_name(&self, v: ValueId) -> String {
        match self.k.values.get(v.index()) {
            Some(d) => format!("%{}", d.name),
            None => format!("%<dangling #{}>", v.0),
        }
    }

    fn value_ty(&self, v: ValueId) -> Option<Type> {
        self.k.values.get(v.index()).map(|d| d.ty)
    }

    /// `%x` or `1.5` (a constant, with its type when that helps).
    fn operand_text(&self, o: Operand) -> String {
        match o {
            Operand::Value(v) => self.value_name(v),
            Operand::Const(c) => format!("the constant `{}`", print_constant(c)),
        }
    }

    fn quoted_operand(&self, o: Operand) -> String {
        match o {
            Operand::Value(_) => format!("`{}`", self.operand_text(o)),
            Operand::Const(_) => self.operand_text(o),
        }
    }

    /// The instruction as text, when its handles allow printing it.
    fn inst_text(&self, i: InstId) -> Option<String> {
        let d = self.k.insts.get(i.index())?;
        if d.result.is_some_and(|r| r.index() >= self.k.values.len()) {
            return Some(d.op.mnemonic());
        }
        Some(print_inst(self.k, i))
    }

    fn mnemonic(&self, i: InstId) -> String {
        self.k.insts.get(i.index()).map(|d| d.op.mnemonic()).unwrap_or_else(|| format!("<inst #{}>", i.0))
    }

    fn entity_span(&self, e: Entity) -> Span {
        match e {
            Entity::Inst(_, i) => self.k.insts.get(i.index()).map(|d| d.span).unwrap_or(Span::DUMMY),
            Entity::Term(b) => self.k.blocks.get(b.index()).map(|x| x.term_span).unwrap_or(Span::DUMMY),
            Entity::Value(v) => self.k.values.get(v.index()).map(|d| d.span).unwrap_or(Span::DUMMY),
            Entity::Block(b) => self.k.blocks.get(b.index()).map(|x| x.span).unwrap_or(Span::DUMMY),
            Entity::Kernel => self.k.span,
        }
    }

    fn entity_block(&self, e: Entity) -> Option<BlockId> {
        match e {
            Entity::Inst(b, _) | Entity::Term(b) | Entity::Block(b) => Some(b),
            Entity::Value(v) => match self.k.values.get(v.index()).map(|d| d.def) {
                Some(ValueDef::BlockParam(b, _)) => Some(b),
                Some(ValueDef::Inst(_)) => match self.sites.get(v.index()).copied().flatten() {
                    Some(Site::Inst(b, _)) => Some(b),
                    _ => None,
                },
                _ => None,
            },
            Entity::Kernel => None,
        }
    }

    /// Reports `d` about entity `e` with `label` under the caret, falling back to the enclosing
    /// block or kernel when the entity has no source location, and adds the context note.
    fn report(&mut self, d: Diagnostic, e: Entity, label: impl Into<String>) {
        let label = label.into();
        let what = match e {
            Entity::Inst(..) => "instruction",
            Entity::Term(_) => "terminator",
            Entity::Value(_) => "value",
            Entity::Block(_) => "block",
            Entity::Kernel => "kernel",
        };
        let block = self.entity_block(e);
        let mut d = if let Some(s) = real(self.entity_span(e)) {
            d.at(s, label)
        } else if let Some(s) = block.and_then(|b| self.k.blocks.get(b.index())).and_then(|b| real(b.span)) {
            d.at(s, format!("{label} (in this block; the {what} has no source location)"))
        } else if let Some(s) = real(self.k.span) {
            d.at(s, format!("{label} (in this kernel; the {what} has no source location)"))
        } else {
            d.with_note(label)
        };
        let mut ctx = format!("in {} `@{}`", if self.k.is_func() { "function" } else { "kernel" }, self.k.name);
        if let Some(b) = block {
            ctx.push_str(&format!(", block `{}`", self.block_name(b)));
        }
        if real(self.entity_span(e)).is_none() {
            match e {
                Entity::Inst(_, i) => {
                    if let Some(t) = self.inst_text(i) {
                        ctx.push_str(&format!(", instruction `{t}`"));
                    }
                }
                Entity::Term(b) => {
                    if let Some(blk) = self.k.blocks.get(b.index()) {
                        ctx.push_str(&format!(
                            ", terminator `{}`",
                            crate::text::printer::print_terminator(self.k, &blk.term)
                        ));
                    }
                }
                _ => {}
            }
        }
        d = d.with_note(ctx);
        self.diags.push(d);
    }

    /// A secondary label at a value's definition, when it has a source location.
    fn def_label(&self, d: Diagnostic, o: Operand) -> Diagnostic {
        match o {
            Operand::Value(v) => match self.k.values.get(v.index()) {
                Some(vd) if !vd.span.is_dummy() => {
                    d.with_label(vd.span, format!("`%{}` is defined here as `{}`", vd.name, vd.ty))
                }
                _ => d,
            },
            Operand::Const(_) => d,
        }
    }

    // ---------------------------------------------------------------- driver

    fn run(&mut self) {
        let k = self.k;
        let what = if k.is_func() { "function" } else { "kernel" };
        if k.blocks.is_empty() {
            let d = Diagnostic::error(format!("{what} `@{}` has no blocks", k.name))
                .with_note(format!("a {what} needs at least an entry block, e.g. `entry:` followed by `ret`"));
            self.report(d, Entity::Kernel, format!("empty {what}"));
            return;
        }
        if k.is_func() {
            if let Some(s) = k.shared.first() {
                let d = Diagnostic::error(format!("function `@{}` declares shared memory `@{}`", k.name, s.name))
                    .with_note(
                        "declare shared memory in the kernel and pass the function a pointer (`ptr<shared, T>`)",
                    );
                self.report_shared(d, 0, "declared in a function");
            }
            if let Some(r) = k.reqntid {
                let d = Diagnostic::error(format!(
                    "function `@{}` has `reqntid`: only kernels declare a block shape",
                    k.name
                ));
                match real(r.span) {
                    Some(s) => self.diags.push(d.at(s, "kernel attribute on a function")),
                    None => self.report(d, Entity::Kernel, "kernel attribute on a function"),
                }
            }
        }
        self.check_entities();
        self.check_names();
        self.check_shared();
        if !k.is_func() {
            self.check_param_space();
        }
        self.check_reqntid();
        self.check_entry();
        for b in k.block_ids() {
            for (pos, &i) in k.block(b).insts.iter().enumerate() {
                if i.index() < k.insts.len() && self.sites_has_first_placement(b, pos, i) {
                    self.check_inst(b, i);
                }
            }
            self.check_terminator(b);
        }
        self.check_dominance();
    }

    /// True when `(b, pos)` is the placement the verifier counts for `i` (the first one).
    fn sites_has_first_placement(&self, b: BlockId, pos: usize, i: InstId) -> bool {
        self.placed.get(i.index()).copied().flatten() == Some((b, pos))
    }

    // ---------------------------------------------------------------- entities and handles

    fn check_entities(&mut self) {
        let k = self.k;
        for (n, &p) in k.params.iter().enumerate() {
            if p.index() >= k.values.len() {
                let d = Diagnostic::error(format!("kernel parameter {} is a dangling value handle (#{})", n + 1, p.0));
                self.report(d, Entity::Kernel, "parameter list of this kernel");
                continue;
            }
            if k.value(p).def != ValueDef::Param(n as u32) {
                let d = Diagnostic::error(format!(
                    "kernel parameter `%{}` records its definition as {:?}, but it is parameter {} of the kernel",
                    k.value(p).name,
                    k.value(p).def,
                    n
                ));
                self.report(d, Entity::Value(p), "this parameter");
            }
            self.set_site(p, Site::Param);
        }
        for b in k.block_ids() {
            for (n, &p) in k.block(b).params.iter().enumerate() {
                if p.index() >= k.values.len() {
                    let d = Diagnostic::error(format!(
                        "parameter {} of block `{}` is a dangling value handle (#{})",
                        n + 1,
                        k.block(b).name,
                        p.0
                    ));
                    self.report(d, Entity::Block(b), "in this block");
                    continue;
                }
                if k.value(p).def != ValueDef::BlockParam(b, n as u32) {
                    let d = Diagnostic::error(format!(
                        "block parameter `%{}` records its definition as {:?}, but it is parameter {} of block `{}` (BlockParam({:?}, {}))",
                        k.value(p).name,
                        k.value(p).def,
                        n,
                        k.block(b).name,
                        b,
                        n
                    ));
                    self.report(d, Entity::Value(p), "this parameter");
                }
                self.set_site(p, Site::BlockParam(b));
            }
        }
        for b in k.block_ids() {
            for (pos, &i) in k.block(b).insts.iter().enumerate() {
                if i.index() >= k.insts.len() {
                    let d = Diagnostic::error(format!(
                        "block `{}` lists instruction #{} (position {}), which does not exist",
                        k.block(b).name,
                        i.0,
                        pos + 1
                    ));
                    self.report(d, Entity::Block(b), "in this block");
                    continue;
                }
                if let Some((prev, _)) = self.placed[i.index()] {
                    let where_ = if prev == b {
                        format!("twice in block `{}`", k.block(b).name)
                    } else {
                        format!("in block `{}` and again in block `{}`", k.block(prev).name, k.block(b).name)
                    };
                    let d = Diagnostic::error(format!("instruction `{}` is placed {where_}", self.mnemonic(i)))
                        .with_note("an instruction must appear in exactly one block, once");
                    self.report(d, Entity::Inst(b, i), "placed again here");
                    continue;
                }
                self.placed[i.index()] = Some((b, pos));
                if let Some(r) = k.inst(i).result {
                    if r.index() >= k.values.len() {
                        let d = Diagnostic::error(format!(
                            "the result of `{}` is a dangling value handle (#{})",
                            self.mnemonic(i),
                            r.0
                        ));
                        self.report(d, Entity::Inst(b, i), "this instruction");
                        continue;
                    }
                    if k.value(r).def != ValueDef::Inst(i) {
                        let d = Diagnostic::error(format!(
                            "the result `%{}` of `{}` records its definition as {:?}, not this instruction ({:?})",
                            k.value(r).name,
                            self.mnemonic(i),
                            k.value(r).def,
                            ValueDef::Inst(i)
                        ));
                        self.report(d, Entity::Inst(b, i), "this instruction");
                    }
                    self.set_site(r, Site::Inst(b, pos));
                }
            }
        }
        // Value types.
        for (vi, s) in self.sites.clone().iter().enumerate() {
            if s.is_none() {
                continue;
            }
            let vd = &k.values[vi];
            if let Type::Vec(w, el) = vd.ty {
                if let Err(msg) = Type::vec(w.len() as u64, el) {
                    let d = Diagnostic::error(format!("`%{}` has type `{}`: {msg}", vd.name, vd.ty));
                    self.report(d, Entity::Value(ValueId(vi as u32)), "defined here");
                }
                let crosses = match vd.def {
                    ValueDef::Param(_) => Some(if k.is_func() { "function parameters" } else { "kernel parameters" }),
                    _ => None,
                };
                if let Some(what) = crosses {
                    let d = Diagnostic::error(format!("`%{}` has type `{}`: {what} cannot be vectors", vd.name, vd.ty))
                        .with_note("pass a pointer and load the vector with `load.v2`/`load.v4`, or pass its elements");
                    self.report(d, Entity::Value(ValueId(vi as u32)), "defined here");
                }
            }
            if let Type::Ptr(_, ScalarType::Pred) = vd.ty {
                let d = Diagnostic::error(format!(
                    "`%{}` has type `{}`: pointers to `pred` are not allowed",
                    vd.name, vd.ty
                ))
                .with_note("store predicates as `u8` or `u32`");
                self.report(d, Entity::Value(ValueId(vi as u32)), "defined here");
            }
        }
    }

    fn set_site(&mut self, v: ValueId, s: Site) {
        if let Some(slot) = self.sites.get_mut(v.index()) {
            if slot.is_none() {
                *slot = Some(s);
            } else {
                let d = Diagnostic::error(format!("value `{}` is defined more than once", self.value_name(v)))
                    .with_note("every SSA value has exactly one definition");
                self.report(d, Entity::Value(v), "defined again");
            }
        }
    }

    // ---------------------------------------------------------------- names

    fn check_names(&mut self) {
        let k = self.k;
        if !is_global_name(&k.name) {
            let d = Diagnostic::error(format!("kernel name `@{}` cannot be written in .kir text", k.name))
                .with_note("kernel names are `[A-Za-z_][A-Za-z0-9_.]*`");
            self.report(d, Entity::Kernel, "this kernel");
        }
        // Values, in definition order.
        let mut order: Vec<ValueId> = k.params.clone();
        for b in k.block_ids() {
            order.extend(k.block(b).params.iter().copied());
            for &i in &k.block(b).insts {
                if let Some(r) = k.insts.get(i.index()).and_then(|d| d.result) {
                    order.push(r);
                }
            }
        }
        let mut seen: HashMap<&str, ValueId> = HashMap::default();
        let mut reported = rustc_hash::FxHashSet::default();
        for v in order {
            let Some(vd) = k.values.get(v.index()) else { continue };
            if !reported.insert(v) {
                continue; // a value listed twice is reported by the entity check
            }
            if !is_value_name(&vd.name) {
                let d = Diagnostic::error(format!("value name `%{}` cannot be written in .kir text", vd.name))
                    .with_note("value names are `[A-Za-z0-9_][A-Za-z0-9_.]*`");
                self.report(d, Entity::Value(v), "this value");
            }
            if let Some(prev) = seen.get(vd.name.as_str()) {
                let mut d = Diagnostic::error(format!("duplicate value name `%{}`", vd.name))
                    .with_note("every SSA value of a kernel needs a unique name");
                if let Some(s) = real(k.value(*prev).span) {
                    d = d.with_label(s, "first defined here");
                }
                self.report(d, Entity::Value(v), "defined again here");
            } else {
                seen.insert(&vd.name, v);
            }
        }
        let mut labels: HashMap<&str, BlockId> = HashMap::default();
        for b in k.block_ids() {
            let name = &k.block(b).name;
            if !is_label(name) {
                let d = Diagnostic::error(format!("block label `{name}` cannot be written in .kir text"))
                    .with_note("labels are `[A-Za-z_][A-Za-z0-9_]*(.[A-Za-z0-9_]+)*` and not a reserved word");
                self.report(d, Entity::Block(b), "this block");
            }
            if let Some(prev) = labels.get(name.as_str()) {
                let mut d = Diagnostic::error(format!("duplicate block label `{name}`"));
                if let Some(s) = real(k.block(*prev).span) {
                    d = d.with_label(s, "first defined here");
                }
                self.report(d, Entity::Block(b), "defined again here");
            } else {
                labels.insert(name, b);
            }
        }
        let mut shared: HashMap<&str, usize> = HashMap::default();
        for (n, s) in k.shared.iter().enumerate() {
            if !is_global_name(&s.name) {
                let d =
                    Diagnostic::error(format!("shared declaration name `@{}` cannot be written in .kir text", s.name));
                self.report_shared(d, n, "this declaration");
            }
            if let Some(prev) = shared.get(s.name.as_str()) {
                let mut d = Diagnostic::error(format!("duplicate shared declaration `@{}`", s.name));
                if let Some(sp) = real(k.shared[*prev].span) {
                    d = d.with_label(sp, "first declared here");
                }
                self.report_shared(d, n, "declared again here");
            } else {
                shared.insert(&s.name, n);
            }
        }
    }

    fn report_shared(&mut self, d: Diagnostic, n: usize, label: &str) {
        match real(self.k.shared[n].span) {
            Some(s) => {
                let d = d.at(s, label).with_note(format!(
                    "in {} `@{}`",
                    if self.k.is_func() { "function" } else { "kernel" },
                    self.k.name
                ));
                self.diags.push(d);
            }
            None => self.report(
                d,
                Entity::Kernel,
                format!("shared declaration `@{}` of this kernel", self.k.shared[n].name),
            ),
        }
    }

    // ---------------------------------------------------------------- block shape

    fn check_reqntid(&mut self) {
        let Some(r) = self.k.reqntid else { return };
        let [x, y, z] = r.dims;
        let problem = if x == 0 || y == 0 || z == 0 {
            Some("every dimension must be at least 1".to_string())
        } else if x > 1024 || y > 1024 || z > 64 {
            Some("x and y may be at most 1024, z at most 64".to_string())
        } else if r.threads() > 1024 {
            Some(format!("{} threads; a block has at most 1024", r.threads()))
        } else {
            None
        };
        let Some(problem) = problem else { return };
        let d = Diagnostic::error(format!("invalid block shape `{}`", r.to_text()));
        match real(r.span) {
            Some(s) => self.diags.push(d.at(s, problem).with_note(format!(
                "in {} `@{}`",
                if self.k.is_func() { "function" } else { "kernel" },
                self.k.name
            ))),
            None => self.report(d, Entity::Kernel, format!("`{}` of this kernel: {problem}", r.to_text())),
        }
    }

    // ---------------------------------------------------------------- shared memory

    fn check_shared(&mut self) {
        let k = self.k;
        let mut dynamic: Option<usize> = None;
        let mut offset: u64 = 0;
        for (n, s) in k.shared.iter().enumerate() {
            if s.elem == ScalarType::Pred {
                let d = Diagnostic::error(format!("shared declaration `@{}` has element type `pred`", s.name))
                    .with_note("store predicates as `u8` or `u32`");
                self.report_shared(d, n, "element type `pred`");
            }
            if !s.align.is_power_of_two() || s.align < s.elem.bytes() {
                let d = Diagnostic::error(format!(
                    "shared declaration `@{}` has alignment {}, which is not a power of two of at least {} (the size of `{}`)",
                    s.name,
                    s.align,
                    s.elem.bytes(),
                    s.elem
                ));
                self.report_shared(d, n, "bad alignment");
            }
            match s.len {
                None => {
                    if let Some(prev) = dynamic {
                        let mut d = Diagnostic::error("a kernel may declare dynamic shared memory (`[]`) only once");
                        if let Some(sp) = real(k.shared[prev].span) {
                            d = d.with_label(sp, "first dynamic declaration");
                        }
                        self.report_shared(d, n, "second dynamic declaration");
                    } else {
                        dynamic = Some(n);
                    }
                }
                Some(0) => {
                    let d = Diagnostic::error(format!("shared declaration `@{}` has length 0", s.name));
                    self.report_shared(d, n, "empty array");
                }
                Some(len) => {
                    let align = if s.align.is_power_of_two() { s.align as u64 } else { 1 };
                    offset = offset.div_ceil(align).saturating_mul(align);
                    offset = offset.saturating_add(len.saturating_mul(s.elem.bytes() as u64));
                }
            }
        }
        if offset > MAX_STATIC_SHARED_BYTES {
            let d = Diagnostic::error(format!(
                "kernel `@{}` declares {offset} bytes of static shared memory, more than the {MAX_STATIC_SHARED_BYTES} bytes (48 KiB) PTX allows",
                k.name
            ))
            .with_note("use dynamic shared memory (`shared @name: T[]`, sized at launch) for larger buffers");
            self.report(d, Entity::Kernel, "too much static shared memory");
        }
    }

    // ---------------------------------------------------------------- parameter space

    fn check_param_space(&mut self) {
        let k = self.k;
        let mut offset: u64 = 0;
        let mut first_over: Option<(ValueId, u64)> = None;
        for &p in &k.params {
            let Some(v) = k.values.get(p.index()) else { continue };
            let size = param_bytes(v.ty);
            offset = offset.div_ceil(size).saturating_mul(size).saturating_add(size);
            if offset > MAX_PARAM_BYTES && first_over.is_none() {
                first_over = Some((p, offset));
            }
        }
        let Some((p, end)) = first_over else { return };
        let d = Diagnostic::error(format!(
            "kernel `@{}` has {offset} bytes of parameters ({} parameters), more than the {MAX_PARAM_BYTES} bytes (0x1100) of a PTX kernel's parameter space",
            k.name,
            k.params.len()
        ))
        .with_note(
            "each parameter takes its size, aligned to its size (pointers 8 bytes, `pred` 1); pass large argument lists through a buffer",
        );
        self.report(d, Entity::Value(p), format!("this parameter ends at byte {end}, past the limit"));
    }

    // ---------------------------------------------------------------- entry block

    fn check_entry(&mut self) {
        let k = self.k;
        let entry = k.block(Kernel::ENTRY);
        if !entry.params.is_empty() {
            let mut d = Diagnostic::error(format!(
                "the entry block `{}` has {}, but the entry block takes none",
                entry.name,
                plural(entry.params.len(), "parameter", "parameters")
            ))
            .with_note("kernel inputs are kernel parameters: `kernel @k(%x: u32) { ... }`; to loop back to the start, add a second block as the loop header");
            for &p in &entry.params {
                if let Some(s) = k.values.get(p.index()).and_then(|v| real(v.span)) {
                    d = d.with_label(s, "parameter");
                }
            }
            self.report(d, Entity::Block(Kernel::ENTRY), "the first block is the entry block");
        }
    }

    // ---------------------------------------------------------------- instructions

    /// Checks one operand handle and constant; returns its type when usable.
    fn check_operand(&mut self, o: Operand, e: Entity, what: &dyn Fn() -> String) -> Option<Type> {
        match o {
            Operand::Value(v) => {
                if v.index() >= self.k.values.len() {
                    let d = Diagnostic::error(format!(
                        "{} uses a value that does not exist (dangling handle #{})",
                        what(),
                        v.0
                    ))
                    .with_note("the value was probably removed by a pass while still in use");
                    self.report(d, e, "uses an undefined value");
                    None
                } else {
                    Some(self.k.value(v).ty)
                }
            }
            Operand::Const(c) => {
                if !constant_is_canonical(c) {
                    let d = Diagnostic::error(format!(
                        "{} has a non-canonical `{}` constant (bits {:#x} exceed the type's width)",
                        what(),
                        c.ty,
                        c.bits
                    ));
                    self.report(d, e, "bad constant");
                }
                Some(Type::Scalar(c.ty))
            }
        }
    }

    fn check_inst(&mut self, b: BlockId, i: InstId) {
        let k = self.k;
        let inst = k.inst(i);
        let e = Entity::Inst(b, i);
        if let Op::Call(c) = inst.op {
            self.check_call(e, c, inst);
            return;
        }
        // Formatted only when a message needs it: valid code allocates no strings.
        let m = &inst.op;
        let sig = inst.op.signature();

        // Result presence.
        if let Some(r) = inst.result.filter(|_| !sig.has_result) {
            let d = Diagnostic::error(format!(
                "`{m}` produces no value, but this instruction defines `{}`",
                self.value_name(r)
            ));
            self.report(d, e, "remove the `%name =`");
        }
        if inst.result.is_none() && sig.has_result && !inst.op.has_side_effects() {
            let d = Diagnostic::error(format!("`{m}` computes a value, but this instruction has no result"))
                .with_note(format!("name its result (`%x = {m} ...`), or remove the instruction"));
            self.report(d, e, "result missing");
        }

        // Operand handles and count.
        let mut tys = Vec::with_capacity(inst.args.len());
        for (n, &a) in inst.args.iter().enumerate() {
            tys.push(self.check_operand(a, e, &|| format!("operand {} of `{m}`", n + 1)));
        }
        if inst.args.len() != inst.op.arity() {
            let d = Diagnostic::error(format!(
                "`{m}` takes {}, but this instruction has {}",
                plural(inst.op.arity(), "operand", "operands"),
                inst.args.len()
            ));
            self.report(d, e, "wrong number of operands");
            return;
        }

        // The op itself: types and modifiers it accepts. When the op is invalid, its operand and
        // result types are meaningless: report only the op.
        if !self.check_op_form(e, &inst.op) {
            return;
        }

        // Operand types the op determines.
        for (n, want) in sig.args.iter().enumerate() {
            let (Some(want), Some(have)) = (want, tys[n]) else { continue };
            if *want != have {
                let a = inst.args[n];
                let what = match (&inst.op, n) {
                    (Op::Select(_), 0) => "the condition".to_string(),
                    (Op::Shfl(ShflMode::Idx, _), 1) => "the source lane".to_string(),
                    (Op::Shfl(ShflMode::Bfly, _), 1) => "the lane mask".to_string(),
                    (Op::Shfl(..), 1) => "the lane delta".to_string(),
                    (Op::Shfl(..), 2) | (Op::Vote(_), 1) => "the member mask".to_string(),
                    (Op::Vote(_), 0) => "the predicate".to_string(),
                    (Op::Bin(BinOp::Shl | BinOp::Shr, ..), 1) => "the shift amount".to_string(),
                    _ => format!("operand {}", n + 1),
                };
                let mut d = Diagnostic::error(format!(
                    "type mismatch: {what} of `{m}` must be `{want}`, but {} has type `{have}`",
                    self.quoted_operand(a)
                ));
                d = self.def_label(d, a);
                if matches!(inst.op, Op::Bin(BinOp::Shl | BinOp::Shr, ..)) && n == 1 {
                    d = d.with_note("shift amounts are always `u32`");
                } else if want.scalar().is_some_and(|w| w.is_float()) && have.scalar().is_some_and(|h| h.is_int()) {
                    d = d.with_note(format!("convert it first: `%f = cvt.{want}.{have} {}`", self.operand_text(a)));
                }
                self.report(d, e, format!("{what} has type `{have}`, expected `{want}`"));
            }
        }

        // Op-specific operand rules and the result type the op produces.
        let produced: Option<Type> = match &inst.op {
            Op::Load | Op::Store | Op::Atomic(_) | Op::AtomicCas => self.check_memory(e, m, &inst.op, &inst.args, &tys),
            Op::VecExtract(w, _) | Op::VecInsert(w, _) => {
                self.expect_lane(e, m, inst.args[1], *w);
                sig.result
            }
            Op::LoadVec(w) | Op::StoreVec(w) => self.check_vector_memory(e, m, *w, &inst.args, &tys),
            Op::Ldmatrix(..) => {
                if let Some((space, elem)) = self.expect_pointer(e, m, inst.args[0], tys[0], "address") {
                    self.expect_int(e, m, inst.args[1], tys[1], "index");
                    if space != AddrSpace::Shared || elem.bits() != 16 {
                        let d = self.def_label_ptr(
                            Diagnostic::error(format!(
                                "`{m}` reads rows of 16-bit elements from shared memory, but its address has type `{}`",
                                Type::Ptr(space, elem)
                            ))
                            .with_note("the address is a `ptr<shared, T>` with T one of f16, bf16, u16, s16"),
                            inst.args[0],
                        );
                        self.report(d, e, "not a 16-bit shared pointer");
                    } else {
                        self.check_static_alignment(e, m, inst.args[0], inst.args[1], elem, 16);
                    }
                }
                sig.result
            }
            Op::CpAsync(size) => {
                let dst = self.expect_pointer(e, m, inst.args[0], tys[0], "destination");
                self.expect_int(e, m, inst.args[1], tys[1], "destination index");
                let src = self.expect_pointer(e, m, inst.args[2], tys[2], "source");
                self.expect_int(e, m, inst.args[3], tys[3], "source index");
                let bytes = size.bytes();
                for (p, idx, want, what) in
                    [(dst, 1, AddrSpace::Shared, "destination"), (src, 3, AddrSpace::Global, "source")]
                {
                    let Some((space, elem)) = p else { continue };
                    if space != want {
                        let d = self.def_label_ptr(
                            Diagnostic::error(format!(
                                "`{m}` copies from global to shared memory, but its {what} points to {space} memory"
                            )),
                            inst.args[idx - 1],
                        );
                        self.report(d, e, format!("the {what} must be a `ptr<{want}, T>`"));
                    } else if elem.bytes() > bytes {
                        let d = Diagnostic::error(format!(
                            "`{m}` copies {bytes} bytes, less than one `{elem}` element of its {what}"
                        ));
                        self.report(d, e, "copy smaller than an element");
                    } else {
                        self.check_static_alignment(e, m, inst.args[idx - 1], inst.args[idx], elem, bytes);
                    }
                }
                if let Operand::Const(c) = inst.args[4] {
                    if c.bits > bytes as u64 {
                        let d = Diagnostic::error(format!(
                            "`{m}` copies {bytes} bytes, but its source size is {}",
                            c.bits
                        ))
                        .with_note("the source size is how many of the bytes come from global memory (the rest are zeros): 0 to the copy size");
                        self.report(d, e, "source size too large");
                    }
                }
                None
            }
            Op::CpAsyncWait => {
                if !matches!(inst.args[0], Operand::Const(_)) {
                    let d = Diagnostic::error(format!(
                        "`{m}` takes a constant number of groups, but {} is not a constant",
                        self.quoted_operand(inst.args[0])
                    ))
                    .with_note("write `cp.async.wait 0` to wait for every committed copy");
                    self.report(d, e, "not a constant");
                }
                None
            }
            Op::PtrOffset | Op::PtrOffsetBytes => {
                let p = self.expect_pointer(e, m, inst.args[0], tys[0], "operand 1");
                self.expect_int(
                    e,
                    m,
                    inst.args[1],
                    tys[1],
                    if inst.op == Op::PtrOffset { "element count" } else { "byte count" },
                );
                p.map(|(s, el)| Type::Ptr(s, el))
            }
            Op::PtrCast(to) => {
                let p = self.expect_pointer(e, m, inst.args[0], tys[0], "operand");
                match (to, p) {
                    (Type::Ptr(_, ScalarType::Pred), _) => {
                        let d =
                            Diagnostic::error("`ptrcast` to a pointer to `pred`: pointers to `pred` are not allowed");
                        self.report(d, e, "bad target type");
                    }
                    (Type::Scalar(s), _) => {
                        let d = Diagnostic::error(format!("`ptrcast` target type `{s}` is not a pointer type"));
                        self.report(d, e, "bad target type");
                    }
                    (Type::Ptr(to_space, _), Some((from_space, _))) if *to_space != from_space => {
                        let d = self.def_label(
                            Diagnostic::error(format!(
                                "`ptrcast` cannot change the address space: {} points to {from_space} memory, the target type `{to}` to {to_space} memory",
                                self.quoted_operand(inst.args[0])
                            )),
                            inst.args[0],
                        );
                        self.report(d, e, "address space changes");
                    }
                    _ => {}
                }
                Some(*to)
            }
            Op::SharedAddr(idx) => match k.shared.get(*idx as usize) {
                Some(s) => Some(Type::Ptr(AddrSpace::Shared, s.elem)),
                None => {
                    let d = Diagnostic::error(format!(
                        "`addr` refers to shared declaration #{idx}, but kernel `@{}` has {}",
                        k.name,
                        plural(k.shared.len(), "shared declaration", "shared declarations")
                    ));
                    self.report(d, e, "no such shared declaration");
                    None
                }
            },
            _ => sig.result,
        };

        // The result's type.
        if let (Some(r), Some(want)) = (inst.result, produced) {
            if let Some(have) = self.value_ty(r) {
                if have != want {
                    let d = Diagnostic::error(format!(
                        "the result `{}` of `{m}` has type `{have}`, but `{m}` produces `{want}`",
                        self.value_name(r)
                    ));
                    self.report(d, e, format!("produces `{want}`"));
                }
            }
        }
    }

    /// `call @f(args)`: a known callee, then (with the module) arity, argument and result types.
    fn check_call(&mut self, e: Entity, c: u32, inst: &InstData) {
        let k = self.k;
        let mut tys = Vec::with_capacity(inst.args.len());
        for (n, &a) in inst.args.iter().enumerate() {
            tys.push(self.check_operand(a, e, &|| format!("argument {} of `call`", n + 1)));
        }
        let Some(callee) = k.callees.get(c as usize) else {
            let d = Diagnostic::error(format!(
                "`call` refers to callee #{c}, but `@{}` has {}",
                k.name,
                plural(k.callees.len(), "callee", "callees")
            ));
            self.report(d, e, "no such callee");
            return;
        };
        let Some(m) = self.callees else { return };
        let Some(f) = m.funcs.iter().find(|f| f.name == callee.name) else {
            let mut d = if m.kernels.iter().any(|k| k.name == callee.name) {
                Diagnostic::error(format!("`@{}` is a kernel: kernels are launched, not called", callee.name))
                    .with_note("move the shared code into a `func` that both call")
            } else {
                Diagnostic::error(format!("unknown function `@{}`", callee.name))
            };
            if m.funcs.is_empty() {
                d = d.with_note("define it with `func @name(...) -> T { ... }` or import a file that does");
            }
            self.report(d, e, "called here");
            return;
        };
        let params: Vec<Type> = f.params.iter().filter_map(|p| f.values.get(p.index()).map(|v| v.ty)).collect();
        if inst.args.len() != params.len() {
            let d = Diagnostic::error(format!(
                "`@{}` takes {}, but this call passes {}",
                f.name,
                plural(params.len(), "argument", "arguments"),
                inst.args.len()
            ));
            let d = match real(f.span) {
                Some(s) => d.with_label(s, "function defined here"),
                None => d,
            };
            self.report(d, e, "wrong number of arguments");
            return;
        }
        for (n, (want, have)) in params.iter().zip(&tys).enumerate() {
            let Some(have) = have else { continue };
            if want != have {
                let a = inst.args[n];
                let pname = f.params.get(n).and_then(|p| f.values.get(p.index())).map(|v| v.name.to_string());
                let mut d = Diagnostic::error(format!(
                    "type mismatch: argument {} of `@{}`{} must be `{want}`, but {} has type `{have}`",
                    n + 1,
                    f.name,
                    pname.map(|p| format!(" (`%{p}`)")).unwrap_or_default(),
                    self.quoted_operand(a)
                ));
                d = self.def_label(d, a);
                if let Some(s) = f.params.get(n).and_then(|p| f.values.get(p.index())).and_then(|v| real(v.span)) {
                    d = d.with_label(s, "parameter declared here");
                }
                self.report(d, e, format!("argument {} has type `{have}`, expected `{want}`", n + 1));
            }
        }
        match (inst.result, f.ret_type()) {
            (Some(r), None) => {
                let d = Diagnostic::error(format!(
                    "`@{}` returns no value, but this call defines `{}`",
                    f.name,
                    self.value_name(r)
                ));
                self.report(d, e, "remove the `%name =`");
            }
            (Some(r), Some(want)) => {
                if let Some(have) = self.value_ty(r) {
                    if have != want {
                        let d = Diagnostic::error(format!(
                            "the result `{}` of `call @{}` has type `{have}`, but `@{}` returns `{want}`",
                            self.value_name(r),
                            f.name,
                            f.name
                        ));
                        self.report(d, e, format!("returns `{want}`"));
                    }
                }
            }
            (None, _) => {}
        }
    }

    fn check_float_flags(
        &mut self,
        e: Entity,
        m: &Op,
        ty: ScalarType,
        flags: FloatFlags,
        approx_ok: bool,
        full_ok: bool,
    ) {
        match flags.mode {
            FloatMode::Exact(r) if r.is_integral() => {
                let d = Diagnostic::error(format!(
                    "`{m}` has the integral rounding `.{}`, which only `cvt` takes",
                    r.name()
                ))
                .with_note("arithmetic rounding modes are `.rn .rz .rm .rp`");
                self.report(d, e, "bad rounding mode");
            }
            FloatMode::Approx if !approx_ok => {
                let d = Diagnostic::error(format!("`{m}`: `.approx` is not available for this op and type"))
                    .with_note("`.approx` exists for `div.f32`, `sqrt.f32`, `rcp.f32` and the approx-only ops `rsqrt ex2 lg2 sin cos tanh` (f32)");
                self.report(d, e, "no approximate form");
            }
            FloatMode::Full if !full_ok => {
                let d = Diagnostic::error(format!("`{m}`: `.full` exists only for `div.f32`"));
                self.report(d, e, "no `.full` form");
            }
            _ => {}
        }
        if flags.ftz && !matches!(ty, ScalarType::F32 | ScalarType::F16) {
            let d = Diagnostic::error(format!("`{m}`: `.ftz` is only available for `f32` and `f16` ops, not `{ty}`"));
            self.report(d, e, "remove `.ftz`");
        }
    }

    fn no_flags(&mut self, e: Entity, m: &Op, flags: FloatFlags) {
        if flags != FloatFlags::RN {
            let d = Diagnostic::error(format!("`{m}` takes no float modifiers, but carries `{}`", flags_text(flags)))
                .with_note("rounding, `.approx`, `.full` and `.ftz` apply to float add, sub, mul, div, fma, sqrt, rcp and the approx-only ops");
            self.report(d, e, "unexpected modifiers");
        }
    }

    /// The op's own constraints: accepted types and modifiers. Returns false when an error was
    /// reported.
    fn check_op_form(&mut self, e: Entity, op: &Op) -> bool {
        let before = self.diags.len();
        self.check_op_form_inner(e, op);
        self.diags.len() == before
    }

    fn check_op_form_inner(&mut self, e: Entity, op: &Op) {
        let m = op;
        let reject = |this: &mut Self, msg: String, note: &str| {
            let mut d = Diagnostic::error(msg);
            if !note.is_empty() {
                d = d.with_note(note.to_string());
            }
            this.report(d, e, "invalid op");
        };
        match op {
            Op::Bin(b, ty, flags) => {
                if !b.accepts(*ty) {
                    let takes = match b {
                        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Min | BinOp::Max => {
                            "integer and float types"
                        }
                        BinOp::MulHi | BinOp::Rem | BinOp::Shl | BinOp::Shr => "integer types",
                        BinOp::And | BinOp::Or | BinOp::Xor => "integer types and `pred`",
                    };
                    reject(
                        self,
                        format!("`{}` does not take `{ty}` operands", b.name()),
                        &format!("`{}` takes {takes}", b.name()),
                    );
                }
                if ty.is_float() && b.has_float_mode() {
                    let f32_div = *b == BinOp::Div && *ty == ScalarType::F32;
                    if *b == BinOp::Div && !matches!(ty, ScalarType::F32 | ScalarType::F64) {
                        reject(
                            self,
                            format!("`div` does not take `{ty}` operands"),
                            "float division is available for `f32` and `f64`",
                        );
                    }
                    self.check_float_flags(e, m, *ty, *flags, f32_div, f32_div);
                } else {
                    self.no_flags(e, m, *flags);
                }
            }
            Op::VecBuild(w, ty) | Op::VecExtract(w, ty) | Op::VecInsert(w, ty) => {
                if let Err(msg) = Type::vec(w.len() as u64, *ty) {
                    reject(
                        self,
                        format!("`{m}`: {msg}"),
                        "vectors have 2 or 4 elements of a scalar type other than `pred`, 16 bytes at most",
                    );
                }
            }
            Op::MulWide(ty) => {
                if ty.widened().is_none() {
                    reject(
                        self,
                        format!("`mul.wide` does not take `{ty}`"),
                        "`mul.wide` takes u8 u16 u32 s8 s16 s32 and gives the double-width product",
                    );
                }
            }
            Op::Mad(ty) => {
                if !ty.is_int() {
                    reject(
                        self,
                        format!("`mad` does not take `{ty}`"),
                        "`mad` takes integer types; use `fma` for floats",
                    );
                }
            }
            Op::Fma(ty, flags) => {
                if !ty.is_float() {
                    reject(
                        self,
                        format!("`fma` does not take `{ty}`"),
                        "`fma` takes float types; use `mad` for integers",
                    );
                }
                self.check_float_flags(e, m, *ty, *flags, false, false);
            }
            Op::Unary(u, ty, flags) => {
                if !u.accepts(*ty) {
                    let takes = match u {
                        UnOp::Neg | UnOp::Abs => "signed integer and float types",
                        UnOp::Not => "integer types and `pred`",
                        UnOp::Sqrt | UnOp::Rcp => "`f32` and `f64`",
                        _ => "`f32` only",
                    };
                    reject(
                        self,
                        format!("`{}` does not take `{ty}`", u.name()),
                        &format!("`{}` takes {takes}", u.name()),
                    );
                }
                if !u.has_float_mode() {
                    self.no_flags(e, m, *flags);
                } else if u.approx_only() {
                    if flags.mode != FloatMode::Approx {
                        let d = Diagnostic::error(format!(
                            "`{}` exists only as an approximation: write `{}.approx{}.{ty}`",
                            u.name(),
                            u.name(),
                            if flags.ftz { ".ftz" } else { "" }
                        ))
                        .with_note(format!(
                            "`{}` has no correctly rounded form on the GPU, so rounding modes and `.full` do not apply",
                            u.name()
                        ));
                        self.report(d, e, "`.approx` required");
                    }
                    if flags.ftz && *ty != ScalarType::F32 {
                        self.check_float_flags(
                            e,
                            m,
                            *ty,
                            FloatFlags { mode: FloatMode::Approx, ftz: true },
                            true,
                            false,
                        );
                    }
                } else {
                    self.check_float_flags(e, m, *ty, *flags, *ty == ScalarType::F32, false);
                }
            }
            Op::Cmp(c, ty) => {
                if !c.accepts(*ty) {
                    let takes = match c {
                        CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge => "integer and float types",
                        _ => "float types",
                    };
                    reject(
                        self,
                        format!("`{}` does not take `{ty}` operands", c.name()),
                        &format!("`{}` takes {takes}", c.name()),
                    );
                }
            }
            Op::Cvt { to, from, rounding, sat: _, ftz } => self.check_cvt(e, m, *to, *from, *rounding, *ftz),
            Op::Bitcast { to, from } => {
                if to.is_pred() || from.is_pred() {
                    reject(
                        self,
                        format!("`{m}`: `bitcast` does not take `pred`"),
                        "use `select` or a comparison to convert a `pred`",
                    );
                } else if to.bits() != from.bits() {
                    reject(
                        self,
                        format!(
                            "`{m}`: `bitcast` needs types of the same width, but `{to}` has {} bits and `{from}` {}",
                            to.bits(),
                            from.bits()
                        ),
                        "use `cvt` to convert between widths",
                    );
                }
            }
            Op::Shfl(_, ty) => {
                if !matches!(ty, ScalarType::U32 | ScalarType::S32 | ScalarType::F32) {
                    reject(
                        self,
                        format!("`{m}`: shuffles move 32-bit values (`u32`, `s32`, `f32`), not `{ty}`"),
                        "PTX `shfl.sync` is `.b32`; split wider values into two 32-bit halves and widen narrower ones",
                    );
                }
            }
            Op::Special(_)
            | Op::Mov(_)
            | Op::Select(_)
            | Op::Load
            | Op::Store
            | Op::Atomic(_)
            | Op::AtomicCas
            | Op::PtrOffset
            | Op::PtrOffsetBytes
            | Op::PtrCast(_)
            | Op::SharedAddr(_)
            | Op::Barrier
            | Op::Call(_)
            | Op::Vote(_)
            | Op::LoadVec(_)
            | Op::StoreVec(_)
            | Op::Mma(_)
            | Op::Ldmatrix(..)
            | Op::CpAsync(_)
            | Op::CpAsyncCommit
            | Op::CpAsyncWait => {}
        }
    }

    fn check_cvt(
        &mut self,
        e: Entity,
        m: &Op,
        to: ScalarType,
        from: ScalarType,
        rounding: Option<Rounding>,
        ftz: bool,
    ) {
        let err = |this: &mut Self, msg: String, note: String| {
            let d = Diagnostic::error(msg).with_note(note);
            this.report(d, e, "invalid conversion");
        };
        if to.is_pred() || from.is_pred() {
            err(
                self,
                format!("`{m}`: `cvt` does not convert to or from `pred`"),
                "to get a `pred`, compare (`ne.u32 %x, 0`); from a `pred`, use `select.u32 %p, 1, 0`".into(),
            );
            return;
        }
        if let Some(r) = rounding {
            let (ok, allowed) = match (from.is_float(), to.is_float()) {
                (false, false) => (false, "integer-to-integer conversions take no rounding modifier"),
                (true, false) => {
                    (r.is_integral(), "float-to-integer conversions take `.rni .rzi .rmi .rpi` (default `.rzi`)")
                }
                (false, true) => {
                    (!r.is_integral(), "integer-to-float conversions take `.rn .rz .rm .rp` (default `.rn`)")
                }
                (true, true) => {
                    if to == from {
                        (
                            r.is_integral(),
                            "a float-to-same-float conversion rounds to an integral value: `.rni .rzi .rmi .rpi`",
                        )
                    } else if to.bits() > from.bits() {
                        (false, "widening float conversions are exact and take no rounding modifier")
                    } else {
                        (!r.is_integral(), "narrowing float conversions take `.rn .rz .rm .rp` (default `.rn`)")
                    }
                }
            };
            if !ok {
                err(self, format!("`{m}`: rounding `.{}` is not valid for this conversion", r.name()), allowed.into());
            }
        }
        if ftz && to != ScalarType::F32 && from != ScalarType::F32 {
            err(
                self,
                format!("`{m}`: `.ftz` needs an `f32` source or destination"),
                "as in PTX, `cvt.ftz` flushes `f32` subnormals only".into(),
            );
        }
    }

    fn expect_pointer(
        &mut self,
        e: Entity,
        m: &Op,
        a: Operand,
        ty: Option<Type>,
        what: &str,
    ) -> Option<(AddrSpace, ScalarType)> {
        let ty = ty?;
        match ty.pointee() {
            Some(p) => Some(p),
            None => {
                let d = self.def_label(
                    Diagnostic::error(format!(
                        "`{m}` needs a pointer, but its {what} {} has type `{ty}`",
                        self.quoted_operand(a)
                    )),
                    a,
                )
                .with_note("pointers are kernel parameters of type `ptr<global, T>`, results of `addr @shared`, or values derived from them with `offset`/`ptrcast`");
                self.report(d, e, "not a pointer");
                None
            }
        }
    }

    fn expect_int(&mut self, e: Entity, m: &Op, a: Operand, ty: Option<Type>, what: &str) {
        let Some(ty) = ty else { return };
        if !ty.scalar().is_some_and(|s| s.is_int()) {
            let d = self.def_label(
                Diagnostic::error(format!(
                    "the {what} of `{m}` must be an integer, but {} has type `{ty}`",
                    self.quoted_operand(a)
                )),
                a,
            );
            self.report(d, e, format!("{what} is `{ty}`"));
        }
    }

    fn check_memory(&mut self, e: Entity, m: &Op, op: &Op, args: &[Operand], tys: &[Option<Type>]) -> Option<Type> {
        let p = self.expect_pointer(e, m, args[0], tys[0], "address");
        self.expect_int(e, m, args[1], tys[1], "index");
        let (space, elem) = p?;
        let ptr_ty = Type::Ptr(space, elem);
        let values: &[Operand] = &args[2..];
        let names: &[&str] = match op {
            Op::AtomicCas => &["compare value", "new value"],
            Op::Store => &["stored value"],
            _ => &["value"],
        };
        for (n, &a) in values.iter().enumerate() {
            let Some(have) = tys[2 + n] else { continue };
            if have != Type::Scalar(elem) {
                let mut d = Diagnostic::error(format!(
                    "type mismatch: `{m}` through a `{ptr_ty}` needs {} `{elem}` {}, but {} has type `{have}`",
                    article(elem),
                    names[n.min(names.len() - 1)],
                    self.quoted_operand(a)
                ));
                d = self.def_label(d, a);
                d = self.def_label_ptr(d, args[0]);
                self.report(d, e, format!("{} has type `{have}`, expected `{elem}`", names[n.min(names.len() - 1)]));
            }
        }
        match op {
            Op::Atomic(a) if !a.accepts(elem) => {
                let list = match a {
                    AtomicOp::Add => "u32 s32 u64 f32 f64",
                    AtomicOp::Min | AtomicOp::Max => "u32 s32 u64 s64",
                    AtomicOp::Exch => "u32 s32 u64 s64 f32 f64",
                };
                let d = Diagnostic::error(format!("`{m}` is not available for `{elem}` elements"))
                    .with_note(format!("`{m}` takes {list}"));
                let d = self.def_label_ptr(d, args[0]);
                self.report(d, e, format!("atomic on `{ptr_ty}`"));
            }
            Op::AtomicCas if !matches!(elem, ScalarType::U32 | ScalarType::S32 | ScalarType::U64 | ScalarType::S64) => {
                let d = Diagnostic::error(format!("`atom.cas` is not available for `{elem}` elements")).with_note(
                    "`atom.cas` takes u32 s32 u64 s64; compare floats through a `ptrcast` to an integer pointer",
                );
                let d = self.def_label_ptr(d, args[0]);
                self.report(d, e, format!("atomic on `{ptr_ty}`"));
            }
            _ => {}
        }
        match op {
            Op::Store => None,
            _ => Some(Type::Scalar(elem)),
        }
    }

    /// The lane of `extract`/`insert`: a constant below the vector's width.
    fn expect_lane(&mut self, e: Entity, m: &Op, a: Operand, w: VecWidth) {
        match a {
            Operand::Const(c) if c.bits < w.len() as u64 => {}
            Operand::Const(c) => {
                let d = Diagnostic::error(format!(
                    "`{m}` has lane {}, but a `{}` vector has lanes 0 to {}",
                    c.bits,
                    w.name(),
                    w.len() - 1
                ));
                self.report(d, e, "lane out of range");
            }
            Operand::Value(_) => {
                let d = self
                    .def_label(
                        Diagnostic::error(format!(
                            "the lane of `{m}` must be a constant, but {} is a value",
                            self.quoted_operand(a)
                        )),
                        a,
                    )
                    .with_note(
                        "a vector's elements live in separate registers: the lane is fixed when the kernel is compiled",
                    );
                self.report(d, e, "lane is not a constant");
            }
        }
    }

    /// `load.vN` / `store.vN`: an address, an integer index, a valid vector of the pointee, the
    /// stored value of that type, and the alignment where it is known statically.
    fn check_vector_memory(
        &mut self,
        e: Entity,
        m: &Op,
        w: VecWidth,
        args: &[Operand],
        tys: &[Option<Type>],
    ) -> Option<Type> {
        let p = self.expect_pointer(e, m, args[0], tys[0], "address");
        self.expect_int(e, m, args[1], tys[1], "index");
        let (space, elem) = p?;
        let vt = match Type::vec(w.len() as u64, elem) {
            Ok(t) => t,
            Err(msg) => {
                let d = self.def_label_ptr(
                    Diagnostic::error(format!("`{m}` through a `{}`: {msg}", Type::Ptr(space, elem))),
                    args[0],
                );
                self.report(d, e, "no such vector access");
                return None;
            }
        };
        if let (Some(&a), Some(Some(have))) = (args.get(2), tys.get(2)) {
            if *have != vt {
                let d = self.def_label(
                    Diagnostic::error(format!(
                        "type mismatch: `{m}` through a `{}` stores a `{vt}`, but {} has type `{have}`",
                        Type::Ptr(space, elem),
                        self.quoted_operand(a)
                    )),
                    a,
                );
                self.report(d, e, format!("stored value has type `{have}`, expected `{vt}`"));
            }
        }
        self.check_static_alignment(e, m, args[0], args[1], elem, vt.bits() / 8);
        (matches!(m, Op::LoadVec(_))).then_some(vt)
    }

    /// A vector access of `bytes` bytes at `ptr[index]`: rejected when its misalignment is known
    /// statically — a constant index that is not a multiple of the access, or a pointer taken
    /// straight from `addr @decl` whose declaration is aligned to less than the access. (Other
    /// misalignment is a fault at run time.)
    fn check_static_alignment(
        &mut self,
        e: Entity,
        m: &Op,
        ptr: Operand,
        index: Operand,
        elem: ScalarType,
        bytes: u32,
    ) {
        let k = self.k;
        if let Operand::Const(c) = index {
            let off = (c.as_i128() * elem.bytes() as i128).rem_euclid(bytes as i128);
            if off != 0 {
                let d = Diagnostic::error(format!(
                    "misaligned `{m}`: index {} is byte offset {} from the pointer, not a multiple of the {bytes}-byte access",
                    c.as_i128(),
                    c.as_i128() * elem.bytes() as i128
                ))
                .with_note(format!("a {bytes}-byte access needs an index that is a multiple of {}", bytes / elem.bytes()));
                self.report(d, e, "misaligned");
                return;
            }
        }
        let Operand::Value(v) = ptr else { return };
        let Some(ValueDef::Inst(def)) = k.values.get(v.index()).map(|vd| vd.def) else { return };
        let Some(Op::SharedAddr(idx)) = k.insts.get(def.index()).map(|d| d.op) else { return };
        let Some(decl) = k.shared.get(idx as usize) else { return };
        if decl.align < bytes {
            let d = Diagnostic::error(format!(
                "misaligned `{m}`: `@{}` is aligned to {} bytes, but the access needs {bytes}",
                decl.name, decl.align
            ))
            .with_label(decl.span, format!("declare it `align {bytes}`"));
            self.report(d, e, format!("{bytes}-byte access"));
        }
    }

    fn def_label_ptr(&self, d: Diagnostic, p: Operand) -> Diagnostic {
        match p {
            Operand::Value(v) => match self.k.values.get(v.index()) {
                Some(vd) if !vd.span.is_dummy() && vd.ty.is_ptr() => {
                    d.with_label(vd.span, format!("`%{}` is a `{}`", vd.name, vd.ty))
                }
                _ => d,
            },
            Operand::Const(_) => d,
        }
    }

    // ---------------------------------------------------------------- terminators

    fn check_terminator(&mut self, b: BlockId) {
        let k = self.k;
        let e = Entity::Term(b);
        let term = &k.block(b).term;
        if let Terminator::Br { cond, .. } = term {
            if let Some(t) = self.check_operand(*cond, e, &|| "the condition of `br`".to_string()) {
                if t != Type::PRED {
                    let mut d = Diagnostic::error(format!(
                        "the condition of `br` must be a `pred`, but {} has type `{t}`",
                        self.quoted_operand(*cond)
                    ));
                    d = self.def_label(d, *cond);
                    if t.scalar().is_some_and(|s| s.is_int()) {
                        d = d.with_note(format!("compare it first: `%c = ne.{t} {}, 0`", self.operand_text(*cond)));
                    }
                    self.report(d, e, format!("condition has type `{t}`"));
                }
            }
        }
        if let Terminator::Ret(v) = term {
            self.check_ret(e, *v);
        }
        let kind = match term {
            Terminator::Br { .. } => "br",
            Terminator::Jmp(_) => "jmp",
            Terminator::Ret(_) => "ret",
        };
        for (pos, call) in term.successors().enumerate() {
            let edge = match (term, pos) {
                (Terminator::Br { .. }, 0) => "the `then` edge of `br`".to_string(),
                (Terminator::Br { .. }, _) => "the `else` edge of `br`".to_string(),
                _ => format!("`{kind}`"),
            };
            let mut tys = Vec::new();
            for (n, &a) in call.args.iter().enumerate() {
                tys.push(self.check_operand(a, e, &|| format!("block argument {} of {edge}", n + 1)));
            }
            let Some(target) = k.blocks.get(call.block.index()) else {
                let d = Diagnostic::error(format!("{edge} targets block #{}, which does not exist", call.block.0));
                self.report(d, e, "dangling branch target");
                continue;
            };
            if call.args.len() != target.params.len() {
                let mut d = Diagnostic::error(format!(
                    "block `{}` takes {}, but {edge} passes {}",
                    target.name,
                    plural(target.params.len(), "argument", "arguments"),
                    call.args.len()
                ));
                if let Some(s) = real(target.span) {
                    d = d.with_label(s, format!("block `{}` is defined here", target.name));
                }
                self.report(d, e, "wrong number of block arguments");
                continue;
            }
            for (n, (&a, &p)) in call.args.iter().zip(&target.params).enumerate() {
                let (Some(have), Some(want)) = (tys[n], self.value_ty(p)) else { continue };
                if have != want {
                    let mut d = Diagnostic::error(format!(
                        "type mismatch: block argument {} of {edge} is {}, of type `{have}`, but parameter `{}` of block `{}` has type `{want}`",
                        n + 1,
                        self.quoted_operand(a),
                        self.value_name(p),
                        target.name
                    ));
                    d = self.def_label(d, a);
                    if let Some(s) = k.values.get(p.index()).and_then(|v| real(v.span)) {
                        d = d.with_label(s, format!("parameter `{}` is declared `{want}` here", self.value_name(p)));
                    }
                    self.report(d, e, format!("argument {} has type `{have}`, expected `{want}`", n + 1));
                }
            }
        }
    }

    // ---------------------------------------------------------------- dominance

    /// `ret` and `ret %v` against the body's result type.
    fn check_ret(&mut self, e: Entity, v: Option<Operand>) {
        let k = self.k;
        match (k.func, v) {
            (None, Some(v)) => {
                let d = Diagnostic::error(format!(
                    "kernel `@{}` returns {}: kernels return no value",
                    k.name,
                    self.quoted_operand(v)
                ))
                .with_note("write results through a pointer parameter, and end the kernel with a bare `ret`");
                self.report(d, e, "a kernel's `ret` takes no value");
            }
            (Some(FuncInfo { ret: None, .. }), Some(v)) => {
                let d = Diagnostic::error(format!(
                    "function `@{}` has no result, but this `ret` returns {}",
                    k.name,
                    self.quoted_operand(v)
                ))
                .with_note("declare the result type after the parameters: `func @f(...) -> T`");
                self.report(d, e, "returns a value");
            }
            (Some(FuncInfo { ret: Some(t), ret_span }), None) => {
                let mut d = Diagnostic::error(format!(
                    "function `@{}` must return a `{t}`, but this `ret` has no value",
                    k.name
                ));
                if let Some(s) = real(ret_span) {
                    d = d.with_label(s, "result type declared here");
                }
                self.report(d, e, format!("expected `ret %v` with a `{t}`"));
            }
            (Some(FuncInfo { ret: Some(t), ret_span }), Some(v)) => {
                if let Some(have) = self.check_operand(v, e, &|| "the value of `ret`".to_string()) {
                    if have != t {
                        let mut d = Diagnostic::error(format!(
                            "type mismatch: function `@{}` returns `{t}`, but {} has type `{have}`",
                            k.name,
                            self.quoted_operand(v)
                        ));
                        d = self.def_label(d, v);
                        if let Some(s) = real(ret_span) {
                            d = d.with_label(s, "result type declared here");
                        }
                        self.report(d, e, format!("returns a `{have}`"));
                    }
                }
            }
            (_, None) => {}
        }
    }

    fn check_dominance(&mut self) {
        if let Some(cfg) = self.given_cfg {
            self.check_dominance_on(cfg);
            return;
        }
        let cfg = Cfg::new(self.k);
        self.check_dominance_on(&cfg);
        self.cfg = Some(cfg);
    }

    fn check_dominance_on(&mut self, cfg: &Cfg) {
        let k = self.k;
        for b in k.block_ids() {
            if !cfg.is_reachable(b) {
                let d = Diagnostic::warning(format!("block `{}` is unreachable", k.block(b).name))
                    .with_note("no path from the entry block leads here, so it never runs; remove it or branch to it");
                self.report(d, Entity::Block(b), "unreachable block");
                continue;
            }
            for (pos, &i) in k.block(b).insts.iter().enumerate() {
                let Some(inst) = k.insts.get(i.index()) else { continue };
                if !self.sites_has_first_placement(b, pos, i) {
                    continue;
                }
                for &a in &inst.args {
                    if let Operand::Value(v) = a {
                        self.check_use(cfg, v, b, pos, Entity::Inst(b, i), &|| format!("`{}`", inst.op.mnemonic()));
                    }
                }
            }
            let end = k.block(b).insts.len();
            for a in k.block(b).term.operands() {
                if let Operand::Value(v) = a {
                    let what = || match &k.block(b).term {
                        Terminator::Br { cond, .. } if *cond == a => "the branch condition".to_string(),
                        Terminator::Ret(_) => "the returned value".to_string(),
                        _ => "a block argument".to_string(),
                    };
                    self.check_use(cfg, v, b, end, Entity::Term(b), &what);
                }
            }
        }
    }

    /// Checks that the definition of `v` dominates its use at position `pos` of block `b`
    /// (`pos == insts.len()` for the terminator).
    fn check_use(&mut self, cfg: &Cfg, v: ValueId, b: BlockId, pos: usize, e: Entity, user_text: &dyn Fn() -> String) {
        let k = self.k;
        if v.index() >= k.values.len() {
            return; // reported as a dangling handle
        }
        // The common case, a valid use, allocates nothing.
        let fine = match self.sites[v.index()] {
            Some(Site::Param) => true,
            Some(Site::BlockParam(db)) => cfg.dominates(db, b),
            Some(Site::Inst(db, dpos)) if db == b => dpos < pos,
            Some(Site::Inst(db, _)) => cfg.dominates(db, b),
            None => false,
        };
        if fine {
            return;
        }
        let user = user_text();
        let name = self.value_name(v);
        let def_span = real(k.value(v).span);
        let ok = match self.sites[v.index()] {
            None => {
                let d = Diagnostic::error(format!(
                    "`{name}` is used by {user}, but no parameter or placed instruction defines it"
                ))
                .with_note(
                    "its defining instruction was probably removed from its block while the value was still in use",
                );
                self.report(d, e, format!("`{name}` used here"));
                return;
            }
            Some(Site::Param) => true,
            Some(Site::BlockParam(db)) => cfg.dominates(db, b),
            Some(Site::Inst(db, dpos)) if db == b => {
                if dpos == pos {
                    let d = Diagnostic::error(format!("{user} uses its own result `{name}`"))
                        .with_note("an instruction's result is defined after the instruction reads its operands; to carry a value around a loop, use a block parameter");
                    self.report(d, e, format!("`{name}` is defined by this instruction"));
                    return;
                }
                if dpos > pos {
                    let mut d = Diagnostic::error(format!(
                        "`{name}` is used before it is defined in block `{}`",
                        k.block(b).name
                    ));
                    if let Some(s) = def_span {
                        d = d.with_label(s, "defined later here");
                    }
                    d = d.with_note("within a block, a value must be defined above its uses");
                    self.report(d, e, format!("`{name}` used here"));
                    return;
                }
                true
            }
            Some(Site::Inst(db, _)) => cfg.dominates(db, b),
        };
        if ok {
            return;
        }
        let db = match self.sites[v.index()] {
            Some(Site::BlockParam(db)) | Some(Site::Inst(db, _)) => db,
            _ => return,
        };
        let (dname, uname) = (k.block(db).name.clone(), k.block(b).name.clone());
        let mut d = Diagnostic::error(format!(
            "`{name}` is used in block `{uname}`, but its definition in block `{dname}` does not dominate this use"
        ));
        if let Some(s) = def_span {
            d = d.with_label(s, format!("`{name}` is defined here, in block `{dname}`"));
        }
        let why = if cfg.is_reachable(db) {
            format!("some path from the entry block reaches `{uname}` without passing through `{dname}`, where `{name}` would be undefined")
        } else {
            format!("block `{dname}` is unreachable, so `{name}` is never defined")
        };
        d = d.with_note(why).with_note(format!(
            "to use a value after control flow merges, pass it as a block argument (e.g. `jmp {uname}({name})`) to a parameter of `{uname}`"
        ));
        self.report(d, e, format!("`{name}` used here by {user}"));
    }
}

/// Whether a constant is canonical: no bits set above its type's width (`pred` is 0 or 1).
pub fn constant_is_canonical(c: Constant) -> bool {
    c.bits & !c.ty.mask() == 0
}
