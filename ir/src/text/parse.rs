//! Parsing `.kir` text into a [`Module`]: lexing, the LALR grammar, then lowering names, mnemonics
//! and literals to IR entities.
//!
//! Guarantees:
//! - No input panics: every failure is a [`Diagnostic`] with a span into the input. A byte order
//!   mark, a NUL byte or another control character is named in the message; nesting past
//!   [`crate::text::ast::MAX_NESTING`] is an error naming the limit. Lowering walks flat lists (blocks,
//!   statements) iteratively, so no input depth can overflow the stack.
//! - Lowering reports every error it finds (not just the first): unknown ops, bad literals,
//!   undefined or duplicate names, wrong operand counts, instructions after a terminator, blocks
//!   without a terminator. Deeper checks (types of values, dominance) are the verifier's.
//! - Mnemonics are read by the table [`crate::mnemonic`] that also prints them: for every op `o`,
//!   `parse_mnemonic(o.mnemonic()) == o` (tested).
//! - Literal operands take their type from their position (the op's operand type, the pointee type
//!   of a store, `u64` for an index, the target block's parameter type for a block argument).

use crate::diag::Diagnostic;
use crate::ir::*;
use crate::op::*;
use crate::span::Span;
use crate::text::ast::*;
use crate::text::lexer::{self, LexError, LexErrorKind, Token};
use crate::text::literal::{literal_constant, lower_type};
use crate::types::{AddrSpace, Constant, ScalarType, Type};
use rustc_hash::FxHashMap as HashMap;

#[allow(clippy::all)]
mod grammar {
    include!(concat!(env!("OUT_DIR"), "/text/grammar.rs"));
}

/// Parses source text into a module. On failure, returns every error found. A file with
/// `import` lines needs its location to resolve them: load it with [`crate::text::load`] instead (here
/// an `import` is an error that says so).
pub fn parse(src: &str) -> Result<Module, Vec<Diagnostic>> {
    let ast = parse_ast(src).map_err(|d| vec![d])?;
    let mut errs = Vec::new();
    for item in &ast.items {
        if let AstItem::Import(i) = item {
            errs.push(
                Diagnostic::error(format!("cannot resolve `import \"{}\"` without the file's location", i.path.node))
                    .at(i.span, "import here")
                    .with_note(
                        "imports are resolved relative to the importing file: load it from a file (`kir` commands do)",
                    ),
            );
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    lower_module(&ast, &FuncSigs::default())
}

/// What a call needs to know of a function: its parameter types and result type.
#[derive(Clone, Debug, PartialEq)]
pub struct FuncSig {
    pub params: Vec<Type>,
    pub ret: Option<Type>,
}

impl FuncSig {
    /// The signature of a function body.
    pub fn of(f: &Kernel) -> FuncSig {
        FuncSig { params: f.params.iter().map(|p| f.value_type(*p)).collect(), ret: f.ret_type() }
    }
}

/// Functions defined outside the text being lowered (imported), by name without `@`.
pub type FuncSigs = HashMap<String, FuncSig>;

/// Parses source text into the syntax tree only.
pub fn parse_ast(src: &str) -> Result<AstModule, Diagnostic> {
    if src.len() >= u32::MAX as usize {
        return Err(Diagnostic::error("input is larger than 4 GiB"));
    }
    // A bare CR would end a line for some readers and not for others (comments run to LF): reject
    // it rather than read the rest of the file as a comment.
    let bytes = src.as_bytes();
    if let Some(i) = (0..bytes.len()).find(|&i| bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
        return Err(Diagnostic::error("carriage return (CR) without a line feed")
            .at(Span::new(i, i + 1), "a bare CR line break")
            .with_note("kir reads LF or CRLF line endings; convert the file (e.g. `tr '\\r' '\\n'`)"));
    }
    grammar::ModuleParser::new().parse(lexer::tokens(src)).map_err(|e| syntax_error(src, e))
}

fn syntax_error(src: &str, e: lalrpop_util::ParseError<usize, Token<'_>, LexError>) -> Diagnostic {
    use lalrpop_util::ParseError::*;
    match e {
        InvalidToken { location } => {
            Diagnostic::error("invalid token").at(Span::new(location, (location + 1).min(src.len())), "not a token")
        }
        UnrecognizedEof { location, expected } => {
            let mut d =
                Diagnostic::error("unexpected end of file").at(Span::new(location, location), "input ends here");
            if !expected.is_empty() {
                d = d.with_note(format!("expected one of {}", describe_expected(&expected)));
            }
            if expected.iter().any(|e| e == "\"}\"") {
                d = d.with_note("a kernel body must end with `}`");
            }
            d
        }
        UnrecognizedToken { token: (l, tok, r), expected } => {
            let mut d = Diagnostic::error(format!("unexpected {tok}")).at(Span::new(l, r), "unexpected here");
            if !expected.is_empty() {
                d = d.with_note(format!("expected one of {}", describe_expected(&expected)));
            }
            d
        }
        ExtraToken { token: (l, tok, r) } => Diagnostic::error(format!("unexpected {tok} after the end of the module"))
            .at(Span::new(l, r), "extra token"),
        User { error } => {
            let text = src.get(error.start..error.end).unwrap_or("");
            let span = Span::new(error.start, error.end);
            match error.kind {
                LexErrorKind::Invalid => {}
                LexErrorKind::ByteOrderMark => {
                    let d = Diagnostic::error("unexpected byte order mark (U+FEFF)").at(span, "byte order mark here");
                    return if error.start == 0 {
                        d.with_note("save the file as UTF-8 without a BOM (e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`)")
                    } else {
                        d.with_note("U+FEFF (zero-width no-break space) is not whitespace in .kir files")
                    };
                }
                LexErrorKind::Control(b) => {
                    let name = lexer::control_name(b);
                    return Diagnostic::error(format!("unexpected {name}"))
                        .at(span, format!("{name} here"))
                        .with_note("control characters other than tab, line feed, CR before a line feed and form feed are not allowed outside comments");
                }
                LexErrorKind::TooDeep { what, limit } => {
                    return Diagnostic::error(format!("{what} nested more than {limit} levels deep"))
                        .at(span, format!("nesting exceeds the limit of {limit} here"));
                }
            }
            if error.start == error.end || text.is_empty() {
                Diagnostic::error("invalid token").at(Span::new(error.start, error.end), "here")
            } else {
                Diagnostic::error(format!("invalid token `{}`", text.escape_debug()))
                    .at(Span::new(error.start, error.end), "not a token")
            }
        }
    }
}

fn describe_expected(expected: &[String]) -> String {
    let nice: Vec<String> = expected
        .iter()
        .map(|e| match e.as_str() {
            "VALUE" => "a value (`%name`)".to_string(),
            "DEF" => "an instruction (`%name = op ...`)".to_string(),
            "GLOBAL" => "a name (`@name`)".to_string(),
            "IDENT" => "an identifier".to_string(),
            "LABEL" => "a block label (`name:`)".to_string(),
            "CALLOPEN" => "a block label with parameters (`name(`)".to_string(),
            "INT" => "an integer".to_string(),
            "FLOAT" => "a float".to_string(),
            "HEXFLOAT" => "a hex float".to_string(),
            other => format!("`{}`", other.trim_matches('"')),
        })
        .collect();
    nice.join(", ")
}

/// Maps a mnemonic to an op by the table of [`crate::mnemonic`]. Memory-op and pointer-op mnemonics
/// whose types come from operands are resolved here too; `ptrcast` needs the annotation, `addr` the
/// shared declaration (set by the caller).
pub fn parse_mnemonic(m: &str, annot: Option<Type>) -> Result<Op, String> {
    crate::mnemonic::parse(m, annot)
}

/// Span of a name token with its sigil but without the trailing `=` or `:` the lexer attached.
fn name_span(s: &Spanned<AstStr>, sigil: bool) -> Span {
    Span { start: s.span.start, end: s.span.start + s.node.len() as u32 + sigil as u32 }
}

/// Lowers a syntax tree whose calls may also name the functions of `external` (imports). The
/// imported functions themselves are not added to the module (the loader does that).
pub(crate) fn lower_module(ast: &AstModule, external: &FuncSigs) -> Result<Module, Vec<Diagnostic>> {
    let mut errs = Vec::new();
    let mut module = Module::default();
    // Function signatures first: a call may precede the function it calls.
    let mut sigs = external.clone();
    for item in &ast.items {
        if let AstItem::Func(f) = item {
            let mut scratch = Vec::new();
            let params = f.params.iter().map(|p| lower_type(&p.ty, &mut scratch).unwrap_or(Type::U32)).collect();
            let ret = f.func.as_ref().and_then(|s| s.ret.as_ref()).and_then(|t| lower_type(t, &mut scratch));
            sigs.entry(f.name.node.to_string()).or_insert(FuncSig { params, ret });
        }
    }
    let kernel_names: rustc_hash::FxHashSet<&str> = ast
        .items
        .iter()
        .filter_map(|i| match i {
            AstItem::Kernel(k) => Some(k.name.node.as_str()),
            _ => None,
        })
        .collect();
    let mut seen: HashMap<&str, (Span, &str)> = HashMap::default();
    for item in &ast.items {
        let (k, what) = match item {
            AstItem::Kernel(k) => (k, "kernel"),
            AstItem::Func(k) => (k, "function"),
            AstItem::Graph(_) | AstItem::Import(_) => continue,
        };
        if let Some((prev, prev_what)) = seen.get(k.name.node.as_str()) {
            let msg = if *prev_what == what {
                format!("duplicate {what} name `@{}`", k.name.node)
            } else {
                format!("`@{}` names both a {prev_what} and a {what}", k.name.node)
            };
            errs.push(
                Diagnostic::error(msg).at(k.name.span, "defined again here").with_label(*prev, "first defined here"),
            );
        } else {
            seen.insert(&k.name.node, (k.name.span, what));
        }
        if let Some(body) = KernelLowering::new(k, &sigs, &kernel_names, &mut errs).run() {
            if body.is_func() {
                module.funcs.push(body);
            } else {
                module.kernels.push(body);
            }
        }
    }
    crate::text::graph_parse::lower_graphs(ast, &mut module, &mut errs);
    if errs.iter().any(|d| d.is_error()) {
        errs.sort_by_key(|d| d.span().map(|s| s.start).unwrap_or(0));
        Err(errs)
    } else {
        Ok(module)
    }
}

struct KernelLowering<'a, 'e> {
    ast: &'a AstKernel,
    /// Every function a call may name (this file's and imported ones).
    sigs: &'a FuncSigs,
    /// The kernels of the file (named in an error when a call names one).
    kernel_names: &'a rustc_hash::FxHashSet<&'a str>,
    errs: &'e mut Vec<Diagnostic>,
    kernel: Kernel,
    names: HashMap<AstStr, ValueId>,
    /// Results of instructions that failed to lower: uses of them are not reported again.
    poisoned: rustc_hash::FxHashSet<AstStr>,
    blocks: HashMap<AstStr, BlockId>,
}

/// An instruction whose result type is not yet known (it depends on a pointer operand).
struct Pending<'a> {
    block: BlockId,
    stmt: &'a AstStmt,
    op: Op,
    /// Index of the statement's entry in the list of placed instructions.
    slot: usize,
}

impl<'a, 'e> KernelLowering<'a, 'e> {
    fn new(
        ast: &'a AstKernel,
        sigs: &'a FuncSigs,
        kernel_names: &'a rustc_hash::FxHashSet<&'a str>,
        errs: &'e mut Vec<Diagnostic>,
    ) -> Self {
        let mut kernel = Kernel::new(ast.name.node.clone());
        kernel.span = ast.name.span;
        if let Some(f) = &ast.func {
            let ret = f.ret.as_ref().and_then(|t| lower_type(t, errs));
            let ret_span = f.ret.as_ref().map(|t| t.span()).unwrap_or(f.params_end);
            kernel.func = Some(FuncInfo { ret, ret_span });
        }
        KernelLowering {
            ast,
            sigs,
            kernel_names,
            errs,
            kernel,
            names: HashMap::default(),
            poisoned: Default::default(),
            blocks: HashMap::default(),
        }
    }

    fn define(&mut self, name: &Spanned<AstStr>, span: Span, ty: Type, def: ValueDef) -> ValueId {
        let v = self.kernel.add_value(name.node.clone(), ty, def, span);
        if let Some(prev) = self.names.get(&name.node) {
            let prev_span = self.kernel.value(*prev).span;
            self.errs.push(
                Diagnostic::error(format!("duplicate value name `%{}`", name.node))
                    .at(span, "defined again here")
                    .with_label(prev_span, "first defined here")
                    .with_note("every SSA value of a kernel needs a unique name"),
            );
        } else {
            self.names.insert(name.node.clone(), v);
        }
        v
    }

    fn run(mut self) -> Option<Kernel> {
        let ast = self.ast;
        let errs_before = self.errs.len();
        // Parameters.
        for (n, p) in ast.params.iter().enumerate() {
            let ty = lower_type(&p.ty, self.errs).unwrap_or(Type::U32);
            let span = name_span(&p.name, true);
            let v = self.define(&p.name, span, ty, ValueDef::Param(n as u32));
            self.kernel.params.push(v);
        }
        // Attributes: `reqntid(x[, y[, z]])`. Ranges are the verifier's.
        for a in &ast.attrs {
            if &*a.name.node == "assume_masks" {
                if let Some(prev) = self.kernel.assume_masks {
                    self.errs.push(
                        Diagnostic::error("duplicate `assume_masks()`")
                            .at(a.span, "declared again here")
                            .with_label(prev, "first declared here"),
                    );
                } else if let Some(arg) = a.args.first() {
                    self.errs.push(
                        Diagnostic::error("`assume_masks()` takes no arguments").at(arg.span, "unexpected argument"),
                    );
                } else {
                    self.kernel.assume_masks = Some(a.span);
                }
                continue;
            }
            if &*a.name.node != "reqntid" {
                self.errs.push(
                    Diagnostic::error(format!("unknown kernel attribute `{}`", a.name.node))
                        .at(a.name.span, "not a kernel attribute")
                        .with_note(
                            "the kernel attributes are `reqntid(x[, y[, z]])`, the required block shape, and \
                             `assume_masks()`, which trusts the member masks of its collectives",
                        ),
                );
                continue;
            }
            if let Some(prev) = self.kernel.reqntid {
                self.errs.push(
                    Diagnostic::error("duplicate `reqntid`")
                        .at(a.span, "declared again here")
                        .with_label(prev.span, "first declared here"),
                );
                continue;
            }
            if a.args.is_empty() || a.args.len() > 3 {
                self.errs.push(
                    Diagnostic::error(format!("`reqntid` takes 1 to 3 dimensions, found {}", a.args.len()))
                        .at(a.span, "expected `reqntid(x)`, `reqntid(x, y)` or `reqntid(x, y, z)`"),
                );
                continue;
            }
            let mut dims = [1u32; 3];
            let mut ok = true;
            for (d, arg) in dims.iter_mut().zip(&a.args) {
                let text: &str = &arg.node;
                let parsed = match text.strip_prefix("0x") {
                    Some(h) => u32::from_str_radix(h, 16).ok(),
                    None => text.parse::<u32>().ok(),
                };
                match parsed {
                    Some(n) => *d = n,
                    None => {
                        self.errs.push(
                            Diagnostic::error(format!("bad block dimension `{text}`"))
                                .at(arg.span, "expected a number of threads (a u32)"),
                        );
                        ok = false;
                    }
                }
            }
            if ok {
                self.kernel.reqntid = Some(ReqNtid { dims, span: a.span });
            }
        }
        // Shared declarations.
        let mut dynamic_seen: Option<Span> = None;
        for s in &ast.shared {
            let elem = match ScalarType::from_name(&s.elem.node) {
                Some(ScalarType::Pred) | None => {
                    self.errs.push(
                        Diagnostic::error(format!("bad shared element type `{}`", s.elem.node))
                            .at(s.elem.span, "expected a numeric type"),
                    );
                    ScalarType::U32
                }
                Some(t) => t,
            };
            let len = match &s.len {
                None => {
                    if let Some(prev) = dynamic_seen {
                        self.errs.push(
                            Diagnostic::error("a kernel may declare dynamic shared memory (`[]`) only once")
                                .at(s.span, "second dynamic declaration")
                                .with_label(prev, "first one"),
                        );
                    }
                    dynamic_seen = Some(s.span);
                    None
                }
                Some(l) => match l.node.parse::<u64>() {
                    Ok(n) if n > 0 && n <= (1 << 24) => Some(n),
                    _ => {
                        self.errs.push(
                            Diagnostic::error(format!("bad shared array length `{}`", l.node))
                                .at(l.span, "expected 1 to 16777216 elements"),
                        );
                        Some(1)
                    }
                },
            };
            let align = match &s.align {
                None => elem.bytes(),
                Some(a) => match a.node.parse::<u32>() {
                    Ok(n) if n.is_power_of_two() && n >= elem.bytes() && n <= 256 => n,
                    _ => {
                        self.errs.push(
                            Diagnostic::error(format!("bad alignment `{}`", a.node))
                                .at(a.span, format!("expected a power of two from {} to 256", elem.bytes())),
                        );
                        elem.bytes()
                    }
                },
            };
            if let Some(prev) = self.kernel.shared.iter().find(|d| d.name == s.name.node) {
                self.errs.push(
                    Diagnostic::error(format!("duplicate shared declaration `@{}`", s.name.node))
                        .at(s.name.span, "declared again here")
                        .with_label(prev.span, "first declared here"),
                );
            }
            self.kernel.shared.push(SharedDecl { name: s.name.node.to_string(), elem, len, align, span: s.name.span });
        }
        // Blocks and their parameters.
        if ast.blocks.is_empty() {
            let what = if ast.func.is_some() { "function" } else { "kernel" };
            self.errs.push(
                Diagnostic::error(format!("{what} `@{}` has no blocks", ast.name.node))
                    .at(ast.name.span, format!("empty {what}"))
                    .with_note(format!("a {what} body needs at least an entry block, e.g. `entry:` followed by `ret`")),
            );
            return None;
        }
        for b in &ast.blocks {
            let id = self.kernel.add_block(b.name.node.clone());
            let label_span = name_span(&b.name, false);
            self.kernel.block_mut(id).span = label_span;
            if let Some(prev) = self.blocks.get(&b.name.node) {
                let prev_span = self.kernel.block(*prev).span;
                self.errs.push(
                    Diagnostic::error(format!("duplicate block label `{}`", b.name.node))
                        .at(label_span, "defined again here")
                        .with_label(prev_span, "first defined here"),
                );
            } else {
                self.blocks.insert(b.name.node.clone(), id);
            }
            for (n, p) in b.params.iter().enumerate() {
                let ty = lower_type(&p.ty, self.errs).unwrap_or(Type::U32);
                let span = name_span(&p.name, true);
                let v = self.define(&p.name, span, ty, ValueDef::BlockParam(id, n as u32));
                self.kernel.block_mut(id).params.push(v);
            }
        }
        // Instructions: resolve mnemonics and result types, then operands.
        let mut pending = Vec::new();
        let mut placed: Vec<(BlockId, &AstStmt, Op, Option<InstId>)> = Vec::new();
        // Spellings already read in this kernel (a kernel repeats few distinct mnemonics many
        // times): the table's answer, looked up again by the exact spelling and annotation.
        let mut spelled: rustc_hash::FxHashMap<(&str, Option<Type>), Op> = rustc_hash::FxHashMap::default();
        for (bi, b) in ast.blocks.iter().enumerate() {
            let bid = BlockId(bi as u32);
            let mut term_seen: Option<Span> = None;
            for stmt in &b.stmts {
                if let Some(t) = term_seen {
                    self.errs.push(
                        Diagnostic::error(format!("instruction after the terminator of block `{}`", b.name.node))
                            .at(stmt.span, "unreachable: the block already ended")
                            .with_label(t, "block ends here")
                            .with_note("start a new block with a label, or remove the instruction"),
                    );
                    continue;
                }
                match &*stmt.kind {
                    AstStmtKind::Inst { result, op, args: _, annot } => {
                        let annot_ty = annot.as_ref().and_then(|a| lower_type(a, self.errs));
                        let parsed = match spelled.get(&(op.node.as_str(), annot_ty)) {
                            Some(known) => Ok(*known),
                            None => parse_mnemonic(&op.node, annot_ty).inspect(|o| {
                                spelled.insert((op.node.as_str(), annot_ty), *o);
                            }),
                        };
                        let mut op_val = match parsed {
                            Ok(o) => o,
                            Err(msg) => {
                                self.errs.push(
                                    Diagnostic::error(msg)
                                        .at(op.span, "here")
                                        .with_note("see docs/language.md for the op set"),
                                );
                                if let Some(r) = result {
                                    self.poisoned.insert(r.node.clone());
                                }
                                continue;
                            }
                        };
                        if let Op::SharedAddr(_) = op_val {
                            op_val = Op::SharedAddr(self.shared_operand(stmt).unwrap_or(0));
                        }
                        if let Op::Call(_) = op_val {
                            let Some((index, sig)) = self.callee(stmt) else {
                                if let Some(r) = result {
                                    self.poisoned.insert(r.node.clone());
                                }
                                continue;
                            };
                            op_val = Op::Call(index);
                            let inst = match (result, sig.ret) {
                                (Some(r), Some(t)) => {
                                    let id = self.new_inst(bid, op_val, r, t, stmt);
                                    self.check_annot(annot.as_ref(), annot_ty, t);
                                    id
                                }
                                (Some(r), None) => {
                                    let callee = &self.kernel.callees[index as usize].name;
                                    self.errs.push(
                                        Diagnostic::error(format!("`@{callee}` returns no value"))
                                            .at(stmt.span, "remove the `%name =`"),
                                    );
                                    self.poisoned.insert(r.node.clone());
                                    continue;
                                }
                                (None, _) => self.kernel.create_inst(op_val, vec![], None, stmt.span),
                            };
                            placed.push((bid, stmt, op_val, Some(inst)));
                            continue;
                        }
                        let sig = op_val.signature();
                        if result.is_some() && !sig.has_result {
                            self.errs.push(
                                Diagnostic::error(format!("`{}` produces no value", op.node))
                                    .at(stmt.span, "remove the `%name =`"),
                            );
                            continue;
                        }
                        let ty = match (&op_val, sig.result) {
                            (_, Some(t)) => Some(t),
                            (Op::SharedAddr(i), None) => {
                                self.kernel.shared.get(*i as usize).map(|d| Type::Ptr(AddrSpace::Shared, d.elem))
                            }
                            _ => None,
                        };
                        let inst = if let Some(r) = result {
                            match ty {
                                Some(t) => {
                                    let id = self.new_inst(bid, op_val, r, t, stmt);
                                    self.check_annot(annot.as_ref(), annot_ty, t);
                                    Some(id)
                                }
                                None => {
                                    pending.push(Pending { block: bid, stmt, op: op_val, slot: placed.len() });
                                    None
                                }
                            }
                        } else {
                            let id = self.kernel.create_inst(op_val, vec![], None, stmt.span);
                            Some(id)
                        };
                        placed.push((bid, stmt, op_val, inst));
                    }
                    _ => term_seen = Some(stmt.span),
                }
            }
            if term_seen.is_none() {
                let end = b.stmts.last().map(|s| s.span).unwrap_or(name_span(&b.name, false));
                self.errs.push(
                    Diagnostic::error(format!("block `{}` has no terminator", b.name.node))
                        .at(end, "the block ends here without `br`, `jmp` or `ret`")
                        .with_note("every block must end with exactly one terminator"),
                );
            }
        }
        // Results whose type depends on a pointer operand: iterate to a fixed point.
        let mut progress = true;
        while progress && !pending.is_empty() {
            progress = false;
            let mut rest = Vec::new();
            for p in pending {
                match self.infer_from_pointer(&p) {
                    Some(t) => {
                        let AstStmtKind::Inst { result: Some(r), annot, .. } = &*p.stmt.kind else { unreachable!() };
                        let id = self.new_inst(p.block, p.op, r, t, p.stmt);
                        let annot_ty = annot.as_ref().and_then(|a| lower_type(a, &mut Vec::new()));
                        self.check_annot(annot.as_ref(), annot_ty, t);
                        placed[p.slot].3 = Some(id);
                        progress = true;
                    }
                    None => rest.push(p),
                }
            }
            pending = rest;
        }
        for p in &pending {
            let AstStmtKind::Inst { args, op, .. } = &*p.stmt.kind else { unreachable!() };
            let at = args.first().map(|a| a.span).unwrap_or(op.span);
            let named = args.first().and_then(|a| match &a.node {
                AstOperand::Value(n) | AstOperand::Indexed(n, _) => Some(n.clone()),
                _ => None,
            });
            let known = named.as_ref().and_then(|n| self.names.get(n).map(|v| (n.clone(), *v)));
            let mut d = match known {
                Some((n, v)) => {
                    let ty = self.kernel.value_type(v);
                    Diagnostic::error(format!("`{}` needs a pointer, but `%{n}` has type `{ty}`", op.node))
                        .at(at, format!("`%{n}` is a `{ty}`, not a pointer"))
                        .with_label(self.kernel.value(v).span, format!("`%{n}` defined here"))
                }
                None if named.as_ref().is_some_and(|n| self.poisoned.contains(n)) => continue,
                None => Diagnostic::error(format!("`{}` needs a pointer operand", op.node))
                    .at(at, "expected a pointer value (`%p` or `%p[%i]`) whose type is known"),
            };
            d = d.with_note(
                "memory ops take a pointer: a `ptr<global|shared, T>` parameter or a value derived from one",
            );
            self.errs.push(d);
        }
        // Operands.
        for (bid, stmt, op, inst) in &placed {
            let Some(inst) = inst else { continue };
            let AstStmtKind::Inst { args, op: op_name, .. } = &*stmt.kind else { unreachable!() };
            let operands = self.lower_inst_operands(op, &op_name.node, args, stmt.span);
            self.kernel.inst_mut(*inst).args = operands;
            self.kernel.block_mut(*bid).insts.push(*inst);
        }
        // Terminators.
        for (bi, b) in ast.blocks.iter().enumerate() {
            let bid = BlockId(bi as u32);
            let Some(stmt) = b.stmts.iter().find(|s| s.is_terminator()) else { continue };
            let term = match &*stmt.kind {
                AstStmtKind::Ret(None) => Terminator::Ret(None),
                AstStmtKind::Ret(Some(v)) => {
                    let expected = self.kernel.ret_type().and_then(|t| t.scalar());
                    match self.lower_operand(v, expected) {
                        Some(o) => Terminator::Ret(Some(o)),
                        None => continue,
                    }
                }
                AstStmtKind::Jmp(c) => match self.lower_call(c) {
                    Some(c) => Terminator::Jmp(c),
                    None => continue,
                },
                AstStmtKind::Br { cond, then_, else_ } => {
                    let cond = self.lower_operand(cond, Some(ScalarType::Pred));
                    let (t, e) = (self.lower_call(then_), self.lower_call(else_));
                    match (cond, t, e) {
                        (Some(cond), Some(then_), Some(else_)) => Terminator::Br { cond, then_, else_ },
                        _ => continue,
                    }
                }
                AstStmtKind::Inst { .. } => unreachable!(),
            };
            let blk = self.kernel.block_mut(bid);
            blk.term = term;
            blk.term_span = stmt.span;
        }
        if self.errs[errs_before..].iter().any(|d| d.is_error()) {
            None
        } else {
            // Number values and instructions in layout order (results typed late by the
            // fixed-point above were created out of order).
            self.kernel.compact();
            Some(self.kernel)
        }
    }

    fn new_inst(&mut self, _b: BlockId, op: Op, r: &Spanned<AstStr>, ty: Type, stmt: &AstStmt) -> InstId {
        let id = self.kernel.create_inst(op, vec![], None, stmt.span);
        let span = name_span(r, true);
        let v = self.define(r, span, ty, ValueDef::Inst(id));
        self.kernel.inst_mut(id).result = Some(v);
        id
    }

    fn check_annot(&mut self, annot: Option<&AstType>, annot_ty: Option<Type>, actual: Type) {
        if let (Some(a), Some(t)) = (annot, annot_ty) {
            if t != actual {
                self.errs.push(
                    Diagnostic::error(format!("type annotation `{t}` does not match the result type `{actual}`"))
                        .at(a.span(), "annotated here"),
                );
            }
        }
    }

    /// Resolves the callee of a `call` statement: its index in the body's callee table and its
    /// signature. Reports a malformed call or an unknown function.
    fn callee(&mut self, stmt: &AstStmt) -> Option<(u32, FuncSig)> {
        let AstStmtKind::Inst { args, op, .. } = &*stmt.kind else { return None };
        let [Spanned { node: AstOperand::Call(name, _), .. }] = args.as_slice() else {
            self.errs.push(
                Diagnostic::error("`call` takes a function and its arguments: `call @f(%a, %b)`")
                    .at(op.span.to(stmt.span), "here"),
            );
            return None;
        };
        if self.kernel_names.contains(name.node.as_str()) && !self.sigs.contains_key(name.node.as_str()) {
            self.errs.push(
                Diagnostic::error(format!("`@{}` is a kernel: kernels are launched, not called", name.node))
                    .at(name_span(name, true), "a kernel")
                    .with_note("move the shared code into a `func` that both call"),
            );
            return None;
        }
        let Some(sig) = self.sigs.get(name.node.as_str()) else {
            let mut known: Vec<&str> = self.sigs.keys().map(|k| k.as_str()).collect();
            known.sort_unstable();
            let mut d = Diagnostic::error(format!("unknown function `@{}`", name.node))
                .at(name_span(name, true), "no function with this name");
            d = if known.is_empty() {
                d.with_note("define it with `func @name(...) -> T { ... }` or import a file that does")
            } else {
                let list: Vec<String> = known.iter().map(|k| format!("`@{k}`")).collect();
                d.with_note(format!("functions here: {}", list.join(", ")))
            };
            self.errs.push(d);
            return None;
        };
        let sig = sig.clone();
        Some((self.kernel.callee_index(&name.node, name_span(name, true)), sig))
    }

    fn shared_operand(&mut self, stmt: &AstStmt) -> Option<u32> {
        let AstStmtKind::Inst { args, op, .. } = &*stmt.kind else { return None };
        match args.as_slice() {
            [Spanned { node: AstOperand::Global(g), span }] => match self.kernel.shared_by_name(g) {
                Some(i) => Some(i),
                None => {
                    self.errs.push(
                        Diagnostic::error(format!("undefined shared declaration `@{g}`"))
                            .at(*span, "not declared in this kernel")
                            .with_note("declare it at the top of the kernel: `shared @name: f32[256]`"),
                    );
                    None
                }
            },
            _ => {
                self.errs.push(
                    Diagnostic::error("`addr` takes one operand, a shared declaration (`addr @tile`)")
                        .at(op.span.to(stmt.span), "here"),
                );
                None
            }
        }
    }

    fn pointer_type_of(&self, o: &AstOperand) -> Option<Type> {
        let name = match o {
            AstOperand::Value(n) | AstOperand::Indexed(n, _) => n,
            _ => return None,
        };
        let v = self.names.get(name)?;
        let t = self.kernel.value_type(*v);
        t.is_ptr().then_some(t)
    }

    fn infer_from_pointer(&self, p: &Pending<'_>) -> Option<Type> {
        let AstStmtKind::Inst { args, .. } = &*p.stmt.kind else { return None };
        let ptr = self.pointer_type_of(&args.first()?.node)?;
        let (_, elem) = ptr.pointee()?;
        match p.op {
            Op::Load | Op::Atomic(_) | Op::AtomicCas => Some(Type::Scalar(elem)),
            // A vector type that is not valid (`vec<4, f64>`) is the verifier's to report.
            Op::LoadVec(w) => Some(Type::Vec(w, elem)),
            Op::PtrOffset | Op::PtrOffsetBytes => Some(ptr),
            _ => None,
        }
    }

    fn lower_operand(&mut self, o: &Spanned<AstOperand>, expected: Option<ScalarType>) -> Option<Operand> {
        match &o.node {
            AstOperand::Value(n) => match self.names.get(n) {
                Some(v) => Some(Operand::Value(*v)),
                None if self.poisoned.contains(n) => None,
                None => {
                    self.errs.push(
                        Diagnostic::error(format!("undefined value `%{n}`")).at(o.span, "not defined in this kernel"),
                    );
                    None
                }
            },
            AstOperand::Indexed(..) => {
                self.errs.push(
                    Diagnostic::error("indexed operand `%p[i]` is only allowed as the address of a memory op (load, store, atom, ldmatrix, cp.async)")
                        .at(o.span, "here"),
                );
                None
            }
            AstOperand::Global(g) => {
                self.errs.push(
                    Diagnostic::error(format!("`@{g}` is only allowed as the operand of `addr`")).at(o.span, "here"),
                );
                None
            }
            AstOperand::Call(g, _) => {
                self.errs.push(
                    Diagnostic::error(format!("`@{}(...)` is only allowed as the operand of `call`", g.node))
                        .at(o.span, "here")
                        .with_note(format!("write `%r = call @{}(...)`", g.node)),
                );
                None
            }
            lit => {
                let Some(ty) = expected else {
                    self.errs.push(
                        Diagnostic::error("a literal is not allowed here").at(o.span, "expected a value (`%name`)"),
                    );
                    return None;
                };
                match literal_constant(lit, ty) {
                    Ok(c) => Some(Operand::Const(c)),
                    Err(msg) => {
                        self.errs.push(Diagnostic::error(msg).at(o.span, "bad literal"));
                        None
                    }
                }
            }
        }
    }

    fn lower_inst_operands(&mut self, op: &Op, mnemonic: &str, args: &[Spanned<AstOperand>], span: Span) -> Args {
        // `addr @name` takes its operand through `shared_operand`, which reports a bad operand count.
        if matches!(op, Op::SharedAddr(_)) {
            return Args::new();
        }
        if let Op::Call(_) = op {
            return self.lower_call_args(args);
        }
        let addresses = op.address_operands();
        let is_mem = !addresses.is_empty();
        let expected_count = op.arity() - addresses.len();
        if args.len() != expected_count {
            let what = match op {
                Op::Load => "`load %p[%i]`".to_string(),
                Op::Store => "`store %p[%i], %v`".to_string(),
                Op::Atomic(_) => format!("`{mnemonic} %p[%i], %v`"),
                Op::AtomicCas => "`atom.cas %p[%i], %cmp, %new`".to_string(),
                Op::LoadVec(_) | Op::Ldmatrix(..) => format!("`{mnemonic} %p[%i]`"),
                Op::StoreVec(_) => format!("`{mnemonic} %p[%i], %v`"),
                Op::CpAsync(_) => format!("`{mnemonic} %shared[%i], %global[%j], %src_bytes`"),
                _ => format!("{expected_count} operand{}", if expected_count == 1 { "" } else { "s" }),
            };
            self.errs.push(
                Diagnostic::error(format!(
                    "`{mnemonic}` takes {what}, but {} operand{} given",
                    args.len(),
                    if args.len() == 1 { " is" } else { "s are" }
                ))
                .at(span, "wrong number of operands"),
            );
            return Args::new();
        }
        let sig = op.signature();
        let mut out: smallvec::SmallVec<[Option<Operand>; 4]> = smallvec::SmallVec::new();
        if is_mem {
            let mut elem = None;
            for (n, a) in args.iter().enumerate() {
                if !addresses.contains(&n) {
                    // Literals after the address are typed by its element (a stored value), or by
                    // the op (`cp.async`'s source size).
                    let expected = match op {
                        Op::CpAsync(_) => Some(ScalarType::U32),
                        Op::StoreVec(_) => None,
                        _ => elem,
                    };
                    out.push(self.lower_operand(a, expected));
                    continue;
                }
                let (ptr_name, index) = match &a.node {
                    AstOperand::Indexed(p, i) => (p.clone(), Some(&**i)),
                    AstOperand::Value(p) => (p.clone(), None),
                    _ => {
                        self.errs.push(
                            Diagnostic::error(format!("`{mnemonic}` needs an address `%p[%i]`"))
                                .at(a.span, "not an address"),
                        );
                        return Args::new();
                    }
                };
                let ptr = self.lower_operand(&Spanned { node: AstOperand::Value(ptr_name), span: a.span }, None);
                let idx = match index {
                    Some(i) => self.lower_operand(i, Some(ScalarType::U64)),
                    None => Some(Operand::Const(Constant::u64(0))),
                };
                if n == 0 {
                    elem = ptr.and_then(|p| self.kernel.operand_type(p).pointee()).map(|(_, e)| e);
                }
                out.extend([ptr, idx]);
            }
        } else {
            for (i, a) in args.iter().enumerate() {
                let expected = match op {
                    Op::PtrOffset | Op::PtrOffsetBytes if i == 1 => Some(ScalarType::U64),
                    _ => sig.args.get(i).copied().flatten().and_then(Type::scalar),
                };
                out.push(self.lower_operand(a, expected));
            }
        }
        out.into_iter().collect::<Option<Args>>().unwrap_or_default()
    }

    /// The arguments of `call @f(args)`, literals typed by the callee's parameters.
    fn lower_call_args(&mut self, args: &[Spanned<AstOperand>]) -> Args {
        let [Spanned { node: AstOperand::Call(name, cargs), span }] = args else { return Args::new() };
        let Some(sig) = self.sigs.get(name.node.as_str()) else { return Args::new() };
        let params = sig.params.clone();
        if cargs.len() != params.len() {
            let n = params.len();
            self.errs.push(
                Diagnostic::error(format!(
                    "`@{}` takes {n} argument{}, but {} {} given",
                    name.node,
                    if n == 1 { "" } else { "s" },
                    cargs.len(),
                    if cargs.len() == 1 { "is" } else { "are" }
                ))
                .at(*span, "wrong number of arguments"),
            );
            return Args::new();
        }
        let out: Option<Args> = cargs
            .iter()
            .zip(&params)
            .map(|(a, t)| self.lower_operand(a, t.scalar()))
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        out.unwrap_or_default()
    }

    fn lower_call(&mut self, c: &AstBlockCall) -> Option<BlockCall> {
        let Some(&block) = self.blocks.get(&c.block.node) else {
            self.errs.push(
                Diagnostic::error(format!("undefined block `{}`", c.block.node))
                    .at(name_span(&c.block, false), "no block with this label"),
            );
            return None;
        };
        let param_types: Vec<Type> =
            self.kernel.block(block).params.iter().map(|p| self.kernel.value_type(*p)).collect();
        if c.args.len() != param_types.len() {
            let n = param_types.len();
            self.errs.push(
                Diagnostic::error(format!(
                    "block `{}` takes {n} argument{}, but {} {} given",
                    c.block.node,
                    if n == 1 { "" } else { "s" },
                    c.args.len(),
                    if c.args.len() == 1 { "is" } else { "are" }
                ))
                .at(c.span, "wrong number of block arguments")
                .with_label(self.kernel.block(block).span, "block defined here"),
            );
            return None;
        }
        let mut args = Vec::new();
        let mut ok = true;
        for (i, a) in c.args.iter().enumerate() {
            let expected = param_types.get(i).and_then(|t| t.scalar());
            match self.lower_operand(a, expected) {
                Some(o) => args.push(o),
                None => ok = false,
            }
        }
        ok.then_some(BlockCall { block, args })
    }
}
