//! `textDocument/hover`: what the name or op under the cursor is.
//!
//! Guarantees:
//! - A value (`%x`) of a kernel shows its type, where it is defined (kernel parameter, block
//!   parameter, or the op and block of the instruction that defines it, with the line) and its
//!   uniformity verdict from [`kir::passes::uniformity`]: uniform, warp-uniform or varying, and for
//!   a non-uniform value the chain of reasons down to its source of divergence (`tid.x`, an
//!   atomic, a racy load...). The verdict is shown only when the module parses and verifies (the
//!   analysis is defined on verified kernels); otherwise the hover says so.
//! - An op mnemonic shows the op's one-line semantics from `docs/language.md` ([`super::op_docs`]),
//!   also in a file that does not parse (the op is then found by the lexer).
//! - A kernel or graph name (at its definition or at a `launch`) shows its signature; a block, its
//!   control-flow uniformity; a shared declaration, graph parameter or temp, its declaration.
//! - A function name (at `func @f` or at `call @f`, also of an imported function) shows its
//!   signature, `func @f(%a: f32, %r: ptr<shared, f32>) -> f32`, the `;` comment lines directly
//!   above its definition, and where it is defined. The `call` mnemonic shows the op's row of
//!   `docs/language.md`. Values inside a function are described as in a kernel (a function's
//!   parameters are varying: any caller may pass a thread-dependent value).
//! - An `import "path"` line shows the file it resolves to and the functions it brings in (with
//!   those of the files that file imports).
//! - Never panics: anything not found gives no hover.

use super::document::Document;
use super::op_docs;
use super::symbols::{func_params_and_result, type_text, ImportUse, Symbol, SymbolKind};
use kir::ir::text::ast::{AstItem, AstKernel, AstModule};
use kir::ir::{BlockId, Kernel, Op, Operand, Span, Terminator, ValueDef, ValueId};
use kir::passes::uniformity::{Level, MemObject, Uniformity, ValueReason};

/// A hover: Markdown text about the name or op at `span` of the document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoverText {
    pub span: Span,
    pub markdown: String,
}

/// The hover at a byte offset of a document.
pub fn hover(doc: &Document, offset: usize) -> Option<HoverText> {
    let index = &doc.analysis.index;
    let (span, text) = if let Some(occ) = index.at(offset) {
        let sym = index.symbols.get(occ.symbol)?;
        (occ.span, symbol_hover(doc, sym)?)
    } else if let Some(op) = index.op_at(offset) {
        let annot = op.annot.as_deref().and_then(parse_type);
        (op.span, op_hover(&op.mnemonic, annot)?)
    } else if let Some(imp) = index.import_at(offset) {
        (imp.span, import_hover(doc, imp))
    } else {
        // No syntax tree (or nothing indexed here): an op found by the lexer.
        let c = super::semantic_tokens::classify(&doc.text)
            .into_iter()
            .find(|c| c.start <= offset && offset <= c.end && c.class == super::semantic_tokens::Class::Op)?;
        let m = doc.text.get(c.start..c.end)?;
        (Span::new(c.start, c.end), op_hover(m, None)?)
    };
    Some(HoverText { span, markdown: text })
}

/// A type as written (`ptr<global, u8>`), for `ptrcast` annotations.
fn parse_type(s: &str) -> Option<kir::ir::Type> {
    use kir::ir::{AddrSpace, ScalarType, Type};
    if let Some(inner) = s.strip_prefix("ptr<").and_then(|r| r.strip_suffix('>')) {
        let (space, elem) = inner.split_once(',')?;
        let space = match space.trim() {
            "global" => AddrSpace::Global,
            "shared" => AddrSpace::Shared,
            _ => return None,
        };
        return Some(Type::Ptr(space, ScalarType::from_name(elem.trim())?));
    }
    ScalarType::from_name(s.trim()).map(Type::Scalar)
}

fn op_hover(mnemonic: &str, annot: Option<kir::ir::Type>) -> Option<String> {
    let (op, d) = op_docs::doc_for_mnemonic(mnemonic, annot)?;
    let mut s = format!("```kir\n{mnemonic}\n```\n");
    let sig = op.signature();
    // (A call's operands and result are its callee's: no fixed signature to show.)
    let fixed = !matches!(op, Op::Call(_));
    if fixed && sig.args.iter().all(Option::is_some) && (sig.result.is_some() || !sig.has_result) {
        let args: Vec<String> = sig.args.iter().flatten().map(|t| t.to_string()).collect();
        let res = sig.result.map(|t| t.to_string()).unwrap_or_else(|| "—".into());
        s.push_str(&format!("`({}) → {res}`\n\n", args.join(", ")));
    }
    if d.pattern.is_empty() {
        s.push_str(&format!("{}\n\n*{}* (docs/language.md)", d.text, d.section));
    } else {
        s.push_str(&format!("{} — {}\n\n*{}* (docs/language.md)", d.pattern, d.text, d.section));
    }
    Some(s)
}

fn line_of(doc: &Document, span: Span) -> Option<usize> {
    if span.is_dummy() {
        None
    } else {
        Some(span.line(&doc.text))
    }
}

/// The source text of a span with runs of whitespace collapsed.
fn source_of(doc: &Document, span: Span) -> String {
    let t = doc.text.get(span.range()).unwrap_or("");
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn symbol_hover(doc: &Document, sym: &Symbol) -> Option<String> {
    let ast = doc.analysis.ast.as_ref()?;
    match sym.kind {
        SymbolKind::Kernel | SymbolKind::Graph => Some(signature(ast, &sym.name, sym.kind == SymbolKind::Kernel)?),
        SymbolKind::Func => func_hover(doc, sym),
        SymbolKind::Shared | SymbolKind::GraphParam | SymbolKind::Temp => {
            let what = match sym.kind {
                SymbolKind::Shared => "shared-memory declaration",
                SymbolKind::GraphParam => "graph parameter",
                _ => "graph temporary buffer",
            };
            Some(format!("```kir\n{}\n```\n{what}", source_of(doc, sym.full)))
        }
        SymbolKind::Param | SymbolKind::BlockParam | SymbolKind::Result | SymbolKind::Block => {
            let (kname, _) = doc.analysis.index.items.get(sym.scope?)?;
            let Some(k) = doc.analysis.module().and_then(|m| m.kernel(kname).or_else(|| m.func(kname))) else {
                return Some(format!(
                    "`{}{}` in `@{kname}`\n\n(the module does not parse: fix its errors for types and uniformity)",
                    if sym.kind == SymbolKind::Block { "" } else { "%" },
                    sym.name
                ));
            };
            // The analysis the verified module computes once per document version.
            let u = doc.analysis.verified().and_then(|v| {
                let body = v.bodies().position(|b| &b.name == kname && b.is_func() == k.is_func())?;
                Some(v.uniformity(body))
            });
            if sym.kind == SymbolKind::Block {
                let b = k.block_by_name(&sym.name)?;
                Some(block_hover(doc, k, b, u))
            } else {
                let v = k.values.iter().position(|d| d.name == sym.name).map(|i| ValueId(i as u32))?;
                Some(value_hover(doc, k, v, u))
            }
        }
    }
}

/// `kernel @k(%a: T, ...) attrs` (or `graph @g(...)`) from the syntax tree.
fn signature(ast: &AstModule, name: &str, kernel: bool) -> Option<String> {
    let params = |ps: &[kir::ir::text::ast::AstParam]| {
        ps.iter().map(|p| format!("%{}: {}", p.name.node, type_text(&p.ty))).collect::<Vec<_>>().join(", ")
    };
    for item in &ast.items {
        match item {
            AstItem::Kernel(k) if kernel && k.name.node == name => {
                let mut s = format!("```kir\nkernel @{name}({})", params(&k.params));
                for a in &k.attrs {
                    let args: Vec<&str> = a.args.iter().map(|x| x.node.as_str()).collect();
                    s.push_str(&format!(" {}({})", a.name.node, args.join(", ")));
                }
                s.push_str("\n```\n");
                for sh in &k.shared {
                    let len = sh.len.as_ref().map(|l| l.node.as_str()).unwrap_or("");
                    s.push_str(&format!("- shared `@{}: {}[{len}]`\n", sh.name.node, sh.elem.node));
                }
                let nstmts: usize = k.blocks.iter().map(|b| b.stmts.len()).sum();
                s.push_str(&format!("\nkernel: {} blocks, {nstmts} statements", k.blocks.len()));
                return Some(s);
            }
            AstItem::Graph(g) if !kernel && g.name.node == name => {
                let mut s = format!("```kir\ngraph @{name}({})\n```\n", params(&g.params));
                let launches: Vec<String> = g.launches.iter().map(|l| format!("`@{}`", l.kernel.node)).collect();
                s.push_str(&format!("launch graph: {} temps; launches {}", g.temps.len(), launches.join(", ")));
                return Some(s);
            }
            _ => {}
        }
    }
    None
}

/// The syntax tree and text of file `file` of the analysis (0: this document).
fn file_ast(doc: &Document, file: usize) -> Option<(&AstModule, &str)> {
    if file == 0 {
        return Some((doc.analysis.ast.as_ref()?, doc.text.as_str()));
    }
    let f = doc.analysis.imported_file(file)?;
    Some((f.ast.as_ref()?, doc.analysis.file_text(file)?))
}

fn find_func<'a>(ast: &'a AstModule, name: &str) -> Option<&'a AstKernel> {
    ast.items.iter().find_map(|i| match i {
        AstItem::Func(f) if f.name.node == name => Some(&**f),
        _ => None,
    })
}

/// The `;` comment lines directly above byte `start` of `text` (no blank line between), without
/// their `;`, top first.
fn doc_comment(text: &str, start: usize) -> Vec<String> {
    let before = text.get(..start).unwrap_or("");
    // Everything from the start of the definition's line back.
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    if !before[line_start..].trim().is_empty() {
        return vec![];
    }
    let mut out = vec![];
    for line in before[..line_start].lines().rev() {
        let t = line.trim();
        let Some(c) = t.strip_prefix(';') else { break };
        out.push(c.strip_prefix(' ').unwrap_or(c).trim_end().to_string());
    }
    out.reverse();
    out
}

/// `func @f(%a: T, ...) -> T`, its doc comment, and where it is defined.
fn func_hover(doc: &Document, sym: &Symbol) -> Option<String> {
    let (ast, text) = file_ast(doc, sym.file)?;
    let f = find_func(ast, &sym.name)?;
    let mut s = format!("```kir\nfunc @{}{}\n```\n", sym.name, func_params_and_result(f));
    let comment = doc_comment(text, f.span.start as usize);
    if !comment.is_empty() {
        s.push_str(&comment.join("\n"));
        s.push_str("\n\n");
    }
    let nstmts: usize = f.blocks.iter().map(|b| b.stmts.len()).sum();
    let line = kir::ir::span::line_col(text, f.name.span.start as usize).0;
    let place = match doc.analysis.imported_file(sym.file) {
        Some(file) => format!(" in `{}` (line {line}, imported)", file.shown),
        None => format!(" (line {line})"),
    };
    s.push_str(&format!("function{place}: {} blocks, {nstmts} statements", f.blocks.len()));
    Some(s)
}

/// The file an `import` line resolves to and the functions it brings in.
fn import_hover(doc: &Document, imp: &ImportUse) -> String {
    let mut s = format!("```kir\nimport \"{}\"\n```\n", imp.path);
    let a = &doc.analysis;
    let Some(line) = a.imports.iter().find(|l| l.span == imp.span) else {
        return s;
    };
    let Some(resolved) = &line.resolved else {
        s.push_str("not resolved: imports are resolved relative to the importing file, and this document has no file path (save it)");
        return s;
    };
    s.push_str(&format!("`{}`\n\n", resolved.display()));
    if line.file.is_none() {
        s.push_str("not loaded (see the diagnostics at this line)");
        return s;
    }
    let mut funcs = vec![];
    for &j in &line.brings {
        let Some(f) = a.imported_file(j) else { continue };
        for item in f.ast.iter().flat_map(|ast| &ast.items) {
            if let AstItem::Func(k) = item {
                let via = if Some(j) == line.file { String::new() } else { format!(" (from `{}`)", f.shown) };
                funcs.push(format!("- `func @{}{}`{via}", k.name.node, func_params_and_result(k)));
            }
        }
    }
    if funcs.is_empty() {
        s.push_str("brings no functions");
    } else {
        let n = funcs.len();
        s.push_str(&format!("brings {n} function{}:\n", if n == 1 { "" } else { "s" }));
        s.push_str(&funcs.join("\n"));
    }
    s
}

fn vname(k: &Kernel, v: ValueId) -> String {
    k.values.get(v.index()).map(|d| format!("`%{}`", d.name)).unwrap_or_else(|| "?".into())
}

fn bname(k: &Kernel, b: BlockId) -> String {
    k.blocks.get(b.index()).map(|d| format!("`{}`", d.name)).unwrap_or_else(|| "?".into())
}

/// The block holding an instruction.
fn block_of_inst(k: &Kernel, i: kir::ir::InstId) -> Option<BlockId> {
    k.placed_insts().find(|(_, j)| *j == i).map(|(b, _)| b)
}

fn level_words(l: Level) -> &'static str {
    match l {
        Level::Uniform => "**uniform**: the same in every thread of the block",
        Level::WarpUniform => "**warp-uniform**: the same in every lane of a warp, may differ between warps",
        Level::Varying => "**varying**: may differ between the lanes of a warp",
    }
}

fn value_hover(doc: &Document, k: &Kernel, v: ValueId, u: Option<&Uniformity>) -> String {
    let d = k.value(v);
    let mut s = format!("```kir\n%{}: {}\n```\n", d.name, d.ty);
    let at = line_of(doc, d.span).map(|l| format!(" (line {l})")).unwrap_or_default();
    let kn = &k.name;
    s.push_str(&match d.def {
        ValueDef::Param(n) => {
            let what = if k.is_func() { "function" } else { "kernel" };
            format!("parameter {n} of {what} `@{kn}`{at}\n\n")
        }
        ValueDef::BlockParam(b, n) => format!("parameter {n} of block {} in `@{kn}`{at}\n\n", bname(k, b)),
        ValueDef::Inst(i) => {
            let op = match k.insts.get(i.index()).map(|x| &x.op) {
                Some(Op::Call(n)) => match k.callees.get(*n as usize) {
                    Some(c) => format!("call @{}", c.name),
                    None => "call".into(),
                },
                Some(op) => op.mnemonic(),
                None => String::new(),
            };
            let blk = block_of_inst(k, i).map(|b| format!(" in block {}", bname(k, b))).unwrap_or_default();
            format!("result of `{op}`{blk} of `@{kn}`{at}\n\n")
        }
    });
    let Some(u) = u else {
        s.push_str("uniformity: not computed (the module has verifier errors)");
        return s;
    };
    s.push_str(&format!("uniformity: {}", level_words(u.value_level(v))));
    let chain = explain_value(doc, k, u, v);
    if !chain.is_empty() {
        s.push_str("\n\nwhy:\n");
        for (i, step) in chain.iter().enumerate() {
            s.push_str(&format!("{}. {step}\n", i + 1));
        }
    }
    s
}

fn block_hover(doc: &Document, k: &Kernel, b: BlockId, u: Option<&Uniformity>) -> String {
    let blk = k.block(b);
    let at = line_of(doc, blk.span).map(|l| format!(" (line {l})")).unwrap_or_default();
    let mut s = format!("block `{}` of `@{}`{at}", blk.name, k.name);
    if b == Kernel::ENTRY {
        s.push_str(", the entry block");
    }
    s.push_str(&format!(", {} instructions\n\n", blk.insts.len()));
    let Some(u) = u else {
        s.push_str("control uniformity: not computed (the module has verifier errors)");
        return s;
    };
    if !u.is_reachable(b) {
        s.push_str("unreachable");
        return s;
    }
    s.push_str(match u.block_level(b) {
        Level::Uniform => "control: **uniform**: all threads of the block execute it together, or none does",
        Level::WarpUniform => "control: **warp-uniform**: all lanes of a warp execute it together (warps may differ)",
        Level::Varying => "control: **varying**: some lanes of a warp may execute it while others do not",
    });
    if let Some(y) = u.block_reason(b) {
        s.push_str(&format!("\n\nin the region of the non-uniform branch ending block {}", bname(k, y)));
        if let Terminator::Br { cond: Operand::Value(c), .. } = &k.block(y).term {
            s.push_str(&format!(" (condition {})", vname(k, *c)));
            let chain = explain_value(doc, k, u, *c);
            if !chain.is_empty() {
                s.push_str("\n\nwhy:\n");
                for (i, step) in chain.iter().enumerate() {
                    s.push_str(&format!("{}. {step}\n", i + 1));
                }
            }
        }
    }
    s
}

/// The steps from a non-uniform value to its source of divergence, one line each (empty for a
/// uniform value). Follows [`Uniformity::value_reason`]; stops at a source, a repeat, or 16 steps.
pub fn explain_value(doc: &Document, k: &Kernel, u: &Uniformity, v: ValueId) -> Vec<String> {
    let mut out = vec![];
    let mut seen = std::collections::HashSet::new();
    let mut cur = Some(v);
    while let Some(v) = cur.take() {
        if out.len() >= 16 || !seen.insert(v) || v.index() >= k.values.len() {
            break;
        }
        let level = u.value_level(v);
        if level == Level::Uniform {
            break;
        }
        let Some(r) = u.value_reason(v) else { break };
        let after = |h: Option<BlockId>| {
            h.map(|h| format!(", used after loop {} which threads leave after different iterations", bname(k, h)))
                .unwrap_or_default()
        };
        let (why, next) = match r {
            ValueReason::Special(sr) => {
                let m = Op::Special(sr).mnemonic();
                let between = if level == Level::WarpUniform { "warps" } else { "threads" };
                (format!("is `{m}`, which differs between {between}"), None)
            }
            ValueReason::Atomic => ("is the result of an atomic".to_string(), None),
            ValueReason::RacyLoad(MemObject::Global) => {
                ("is loaded from global memory that the kernel writes".to_string(), None)
            }
            ValueReason::RacyLoad(MemObject::Shared(n)) => {
                let name = k.shared.get(n as usize).map(|s| s.name.as_str()).unwrap_or("?");
                (format!("is loaded from `@{name}`, which threads store to without a barrier in between"), None)
            }
            ValueReason::RacyLoad(MemObject::SharedAny) => {
                ("is loaded from shared memory stored to without a barrier in between".to_string(), None)
            }
            ValueReason::Collective => ("is the result of a shuffle or vote".to_string(), None),
            ValueReason::WarpBits { value } => {
                (format!("keeps only the bits of {} that differ between warps", vname(k, value)), Some(value))
            }
            ValueReason::Operand { value, after_loop } => {
                (format!("depends on {}{}", vname(k, value), after(after_loop)), Some(value))
            }
            ValueReason::Incoming { value, from, after_loop } => (
                format!("receives {} from block {}{}", vname(k, value), bname(k, from), after(after_loop)),
                Some(value),
            ),
            ValueReason::Join { branch } => {
                let cond = match &k.blocks.get(branch.index()).map(|b| &b.term) {
                    Some(Terminator::Br { cond: Operand::Value(c), .. }) => Some(*c),
                    _ => None,
                };
                let c = cond.map(|c| format!(" on {}", vname(k, c))).unwrap_or_default();
                (format!("joins the paths of the non-uniform branch{c} ending block {}", bname(k, branch)), cond)
            }
            ValueReason::Irreducible => ("is in irreducible control flow with a non-uniform branch".to_string(), None),
            ValueReason::Call => {
                let callee = match k.value(v).def {
                    ValueDef::Inst(i) => match k.insts.get(i.index()).map(|x| &x.op) {
                        Some(Op::Call(n)) => k.callees.get(*n as usize).map(|c| format!(" to `@{}`", c.name)),
                        _ => None,
                    },
                    _ => None,
                };
                let callee = callee.unwrap_or_default();
                (format!("is the result of a call{callee} (the callee is not analysed here)"), None)
            }
            ValueReason::FuncParam => {
                ("is a parameter of a function: any caller may pass a thread-dependent value".to_string(), None)
            }
            // Reasons added to the analysis later: its level without a phrase.
            #[allow(unreachable_patterns)]
            _ => ("has no finer explanation".to_string(), None),
        };
        let line = line_of(doc, k.value(v).span).map(|l| format!(" (line {l})")).unwrap_or_default();
        out.push(format!("{} {why} — {}{line}", vname(k, v), level.name()));
        cur = next;
    }
    out
}
