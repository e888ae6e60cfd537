//! The name index of a document: every definition and use of a kernel, device function, graph,
//! shared declaration, value (`%x`) and block, with its scope, built from the syntax tree (the
//! document outline, [`super::outline`], is built from it).
//!
//! Guarantees:
//! - `call @f(...)` is a use of `@f`: of the function of that name in this document, else of the
//!   imported function of that name ([`External`], defined in another file: such a symbol has no
//!   occurrence here, only its uses).
//! - Every occurrence's span covers exactly the name as written, with its sigil (`%x`, `@k`) for
//!   values and globals and without the `:` or `(` that follows a block label.
//! - Names resolve as the parser resolves them: values, blocks and shared declarations within
//!   their kernel or function (values and temps of a graph within the graph), kernels,
//!   functions and graphs module-wide.
//!   A name defined twice resolves to its first definition; a use of an undefined name is not
//!   an occurrence of any symbol.
//! - Occurrences are sorted by position and never overlap, so [`Index::at`] finds at most one.
//! - Building walks the syntax tree without recursion (nested indexes and size expressions use an
//!   explicit stack), so no input can overflow the stack here.

use kir::ir::text::ast::{
    AstExpr, AstGraphArg, AstItem, AstModule, AstOperand, AstParam, AstStmtKind, AstType, Spanned,
};
use kir::ir::Span;
use std::collections::HashMap;

/// What a name names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Kernel,
    /// A device function (`func @f`), of this document or imported.
    Func,
    Graph,
    /// A `shared @name` declaration of a kernel.
    Shared,
    /// A kernel or function parameter.
    Param,
    /// A block parameter.
    BlockParam,
    /// An instruction result.
    Result,
    Block,
    /// A graph parameter.
    GraphParam,
    /// A graph's `temp %name`.
    Temp,
}

/// A defined name.
#[derive(Clone, Debug)]
pub struct Symbol {
    pub kind: SymbolKind,
    /// The name without its sigil.
    pub name: String,
    /// The item (index in the module's items) whose scope holds the name; `None` for kernels,
    /// functions and graphs.
    pub scope: Option<usize>,
    /// For a kernel, function or graph of this document: its item (index in the module's items).
    pub item: Option<usize>,
    /// The file the definition is in: 0 for this document, else its index in the analysis'
    /// [`kir::ir::diag::SourceMap`] (an imported function); `def` and `full` are local to it.
    pub file: usize,
    /// The span of the name at its definition.
    pub def: Span,
    /// The span of the whole definition (a kernel, a block from its label to its last statement,
    /// a declaration, an instruction).
    pub full: Span,
}

/// A function defined in an imported file, callable from this document.
#[derive(Clone, Debug)]
pub struct External {
    pub name: String,
    /// Its file's index in the analysis' [`kir::ir::diag::SourceMap`].
    pub file: usize,
    /// The name (`@f`) and the whole function, local to that file.
    pub def: Span,
    pub full: Span,
}

/// What an item of the module is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Kernel,
    Func,
    Graph,
    Import,
}

/// An `import "path"` line.
#[derive(Clone, Debug)]
pub struct ImportUse {
    /// The whole line.
    pub span: Span,
    /// The string, with its quotes.
    pub path_span: Span,
    pub path: String,
}

/// One written name.
#[derive(Clone, Copy, Debug)]
pub struct Occurrence {
    pub span: Span,
    /// Index into [`Index::symbols`].
    pub symbol: usize,
    pub is_def: bool,
}

/// An op mnemonic as written in an instruction.
#[derive(Clone, Debug)]
pub struct OpUse {
    pub span: Span,
    pub mnemonic: String,
    /// The type annotation after `:` (e.g. `ptrcast %p : ptr<global, u8>`), as written.
    pub annot: Option<String>,
}

/// The names of a document.
#[derive(Clone, Debug, Default)]
pub struct Index {
    pub symbols: Vec<Symbol>,
    /// Sorted by span start.
    pub occurrences: Vec<Occurrence>,
    pub ops: Vec<OpUse>,
    /// Per item of the module: its name (empty for an import) and kind (for the outline and
    /// scope names).
    pub items: Vec<(String, ItemKind)>,
    /// The `import` lines.
    pub imports: Vec<ImportUse>,
}

/// The span of a name at the start of `s`: `len` bytes (the sigil included by the caller).
fn name_at(s: Span, len: usize) -> Span {
    Span::new(s.start as usize, (s.start as usize + len).min(s.end.max(s.start) as usize))
}

/// The text of a type as written.
pub fn type_text(t: &AstType) -> String {
    match t {
        AstType::Named(n) => n.node.to_string(),
        AstType::Ptr { space, elem } => format!("ptr<{}, {}>", space.node, elem.node),
        AstType::Vec { len, elem, .. } => format!("vec<{}, {}>", len.node, elem.node),
    }
}

/// Per-scope name tables while building.
#[derive(Default)]
struct Scope {
    values: HashMap<String, usize>,
    blocks: HashMap<String, usize>,
    shared: HashMap<String, usize>,
}

struct Builder {
    index: Index,
    /// Unresolved uses: (span, scope item, namespace, name).
    uses: Vec<(Span, Option<usize>, Ns, String)>,
    scopes: Vec<Scope>,
    globals: HashMap<String, usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ns {
    Value,
    Block,
    /// `@name` inside a kernel: a shared declaration.
    Shared,
    /// `@name` naming a kernel, function or graph.
    Global,
}

impl Builder {
    fn define(&mut self, kind: SymbolKind, name: &str, scope: Option<usize>, def: Span, full: Span) {
        let id = self.index.symbols.len();
        self.index.symbols.push(Symbol { kind, name: name.to_string(), scope, item: None, file: 0, def, full });
        self.index.occurrences.push(Occurrence { span: def, symbol: id, is_def: true });
        let table = match (kind, scope) {
            (SymbolKind::Kernel | SymbolKind::Func | SymbolKind::Graph, _) | (_, None) => &mut self.globals,
            (SymbolKind::Block, Some(s)) => &mut self.scopes[s].blocks,
            (SymbolKind::Shared, Some(s)) => &mut self.scopes[s].shared,
            (_, Some(s)) => &mut self.scopes[s].values,
        };
        table.entry(name.to_string()).or_insert(id);
    }

    fn use_name(&mut self, span: Span, scope: Option<usize>, ns: Ns, name: &str) {
        self.uses.push((span, scope, ns, name.to_string()));
    }

    fn param(&mut self, p: &AstParam, kind: SymbolKind, scope: usize) {
        let def = name_at(p.name.span, 1 + p.name.node.len());
        let full = p.name.span.to(p.ty.span());
        self.define(kind, &p.name.node, Some(scope), def, full);
    }

    fn operand(&mut self, o: &Spanned<AstOperand>, scope: usize) {
        let mut cur = o;
        loop {
            match &cur.node {
                AstOperand::Value(n) => {
                    self.use_name(name_at(cur.span, 1 + n.len()), Some(scope), Ns::Value, n);
                    return;
                }
                AstOperand::Indexed(n, inner) => {
                    self.use_name(name_at(cur.span, 1 + n.len()), Some(scope), Ns::Value, n);
                    cur = inner;
                }
                AstOperand::Global(n) => {
                    self.use_name(name_at(cur.span, 1 + n.len()), Some(scope), Ns::Shared, n);
                    return;
                }
                AstOperand::Call(f, args) => {
                    self.use_name(name_at(f.span, 1 + f.node.len()), None, Ns::Global, &f.node);
                    for a in args {
                        self.operand(a, scope);
                    }
                    return;
                }
                _ => return,
            }
        }
    }

    fn expr(&mut self, e: &AstExpr, span: Span, scope: usize) {
        let mut stack = vec![(e, span)];
        while let Some((e, span)) = stack.pop() {
            match e {
                AstExpr::Value(n) => self.use_name(name_at(span, 1 + n.len()), Some(scope), Ns::Value, n),
                AstExpr::Call(_, args, ..) => stack.extend(args.iter().map(|a| (&a.node, a.span))),
                _ => {}
            }
        }
    }
}

impl Index {
    /// Builds the index of a syntax tree.
    pub fn build(ast: &AstModule) -> Index {
        Index::build_with(ast, &[])
    }

    /// Builds the index of a syntax tree whose calls may also name the functions of other files
    /// (a function of this document wins over an imported one of the same name).
    pub fn build_with(ast: &AstModule, externals: &[External]) -> Index {
        let mut b = Builder { index: Index::default(), uses: vec![], scopes: vec![], globals: HashMap::new() };
        for (item_no, item) in ast.items.iter().enumerate() {
            b.scopes.push(Scope::default());
            match item {
                AstItem::Import(imp) => {
                    b.index.items.push((String::new(), ItemKind::Import));
                    b.index.imports.push(ImportUse {
                        span: imp.span,
                        path_span: imp.path.span,
                        path: imp.path.node.to_string(),
                    });
                }
                AstItem::Kernel(k) | AstItem::Func(k) => {
                    let (kind, item_kind) = match item {
                        AstItem::Func(_) => (SymbolKind::Func, ItemKind::Func),
                        _ => (SymbolKind::Kernel, ItemKind::Kernel),
                    };
                    b.index.items.push((k.name.node.to_string(), item_kind));
                    b.define(kind, &k.name.node, None, k.name.span, k.span);
                    if let Some(s) = b.index.symbols.last_mut() {
                        s.item = Some(item_no);
                    }
                    for p in &k.params {
                        b.param(p, SymbolKind::Param, item_no);
                    }
                    for s in &k.shared {
                        b.define(SymbolKind::Shared, &s.name.node, Some(item_no), s.name.span, s.span);
                    }
                    // Definitions first: a value or block may be used above its definition.
                    for blk in &k.blocks {
                        let label = name_at(blk.name.span, blk.name.node.len());
                        let end = blk.stmts.last().map(|s| s.span).unwrap_or(blk.name.span);
                        b.define(SymbolKind::Block, &blk.name.node, Some(item_no), label, blk.name.span.to(end));
                        for p in &blk.params {
                            b.param(p, SymbolKind::BlockParam, item_no);
                        }
                        for st in &blk.stmts {
                            if let AstStmtKind::Inst { result: Some(r), .. } = &*st.kind {
                                let def = name_at(r.span, 1 + r.node.len());
                                b.define(SymbolKind::Result, &r.node, Some(item_no), def, st.span);
                            }
                        }
                    }
                    for blk in &k.blocks {
                        for st in &blk.stmts {
                            match &*st.kind {
                                AstStmtKind::Inst { op, args, annot, .. } => {
                                    b.index.ops.push(OpUse {
                                        span: name_at(op.span, op.node.len()),
                                        mnemonic: op.node.to_string(),
                                        annot: annot.as_ref().map(type_text),
                                    });
                                    for a in args {
                                        b.operand(a, item_no);
                                    }
                                }
                                AstStmtKind::Br { cond, then_, else_ } => {
                                    b.operand(cond, item_no);
                                    for call in [then_, else_] {
                                        let span = name_at(call.block.span, call.block.node.len());
                                        b.use_name(span, Some(item_no), Ns::Block, &call.block.node);
                                        for a in &call.args {
                                            b.operand(a, item_no);
                                        }
                                    }
                                }
                                AstStmtKind::Jmp(call) => {
                                    let span = name_at(call.block.span, call.block.node.len());
                                    b.use_name(span, Some(item_no), Ns::Block, &call.block.node);
                                    for a in &call.args {
                                        b.operand(a, item_no);
                                    }
                                }
                                AstStmtKind::Ret(v) => {
                                    if let Some(v) = v {
                                        b.operand(v, item_no);
                                    }
                                }
                            }
                        }
                    }
                }
                AstItem::Graph(g) => {
                    b.index.items.push((g.name.node.to_string(), ItemKind::Graph));
                    b.define(SymbolKind::Graph, &g.name.node, None, g.name.span, g.span);
                    if let Some(s) = b.index.symbols.last_mut() {
                        s.item = Some(item_no);
                    }
                    for p in &g.params {
                        b.param(p, SymbolKind::GraphParam, item_no);
                    }
                    for t in &g.temps {
                        let def = name_at(t.name.span, 1 + t.name.node.len());
                        b.define(SymbolKind::Temp, &t.name.node, Some(item_no), def, t.span);
                    }
                    for t in &g.temps {
                        b.expr(&t.len.node, t.len.span, item_no);
                    }
                    for l in &g.launches {
                        b.use_name(l.kernel.span, None, Ns::Global, &l.kernel.node);
                        for c in &l.clauses {
                            for a in &c.args {
                                b.expr(&a.node, a.span, item_no);
                            }
                        }
                        for a in &l.args {
                            if let AstGraphArg::Expr(e) = &a.node {
                                b.expr(e, a.span, item_no);
                            }
                        }
                    }
                }
            }
        }
        for e in externals {
            if b.globals.contains_key(&e.name) {
                continue;
            }
            let id = b.index.symbols.len();
            b.index.symbols.push(Symbol {
                kind: SymbolKind::Func,
                name: e.name.trim_start_matches('@').to_string(),
                scope: None,
                item: None,
                file: e.file,
                def: e.def,
                full: e.full,
            });
            b.globals.insert(e.name.trim_start_matches('@').to_string(), id);
        }
        let uses = std::mem::take(&mut b.uses);
        for (span, scope, ns, name) in uses {
            let found = match (ns, scope) {
                (Ns::Global, _) | (_, None) => b.globals.get(&name),
                (Ns::Value, Some(s)) => b.scopes[s].values.get(&name),
                (Ns::Block, Some(s)) => b.scopes[s].blocks.get(&name),
                (Ns::Shared, Some(s)) => b.scopes[s].shared.get(&name),
            };
            if let Some(&symbol) = found {
                b.index.occurrences.push(Occurrence { span, symbol, is_def: false });
            }
        }
        let mut index = b.index;
        index.occurrences.sort_by_key(|o| (o.span.start, o.span.end));
        index.occurrences.dedup_by_key(|o| o.span.start);
        index.ops.sort_by_key(|o| o.span.start);
        index
    }

    /// The occurrence under a byte offset (a cursor just after a name counts as on it).
    pub fn at(&self, offset: usize) -> Option<&Occurrence> {
        let hit = |s: Span| (s.start as usize) <= offset && offset <= s.end as usize;
        let i = self.occurrences.partition_point(|o| (o.span.start as usize) <= offset);
        // The last occurrence starting at or before `offset`, or the one before it when the cursor
        // sits between two adjacent names.
        let cands = [i.checked_sub(1), i.checked_sub(2)];
        cands.into_iter().flatten().map(|j| &self.occurrences[j]).find(|o| hit(o.span))
    }

    /// The op mnemonic under a byte offset.
    pub fn op_at(&self, offset: usize) -> Option<&OpUse> {
        let i = self.ops.partition_point(|o| (o.span.start as usize) <= offset);
        i.checked_sub(1).map(|j| &self.ops[j]).filter(|o| offset <= o.span.end as usize)
    }

    /// Every occurrence of a symbol, in source order.
    pub fn occurrences_of(&self, symbol: usize) -> impl Iterator<Item = &Occurrence> + '_ {
        self.occurrences.iter().filter(move |o| o.symbol == symbol)
    }

    /// The symbol defined at item level (kernel, function or graph) with this name.
    pub fn global(&self, name: &str) -> Option<(usize, &Symbol)> {
        self.symbols.iter().enumerate().find(|(_, s)| {
            s.scope.is_none()
                && s.name == name
                && matches!(s.kind, SymbolKind::Kernel | SymbolKind::Func | SymbolKind::Graph)
        })
    }

    /// The `import` line under a byte offset.
    pub fn import_at(&self, offset: usize) -> Option<&ImportUse> {
        self.imports.iter().find(|i| (i.span.start as usize) <= offset && offset <= i.span.end as usize)
    }
}

/// `(%a: f32, %r: ptr<shared, f32>) -> f32` (without ` -> T` for a function without a result).
pub fn func_params_and_result(f: &kir::ir::text::ast::AstKernel) -> String {
    let params: Vec<String> = f.params.iter().map(|p| format!("%{}: {}", p.name.node, type_text(&p.ty))).collect();
    let ret = f.func.as_ref().and_then(|s| s.ret.as_ref()).map(|t| format!(" -> {}", type_text(t))).unwrap_or_default();
    format!("({}){ret}", params.join(", "))
}
