//! The document outline (`textDocument/documentSymbol`), built from the name index
//! ([`super::symbols::Index`]).
//!
//! Guarantees: kernels, functions and graphs of this document (not imported ones), in source
//! order; a function's parameters first (with their types), then, in source order, the blocks,
//! shared declarations and graph temps of the item.

use super::document::Document;
use super::symbols::{func_params_and_result, type_text, Symbol, SymbolKind};
use kir::ir::text::ast::AstItem;
use kir::ir::Span;

/// What an outline entry is, as editors draw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutlineKind {
    /// A kernel or function.
    Function,
    /// A graph.
    Module,
    /// A parameter, shared declaration or graph temp.
    Variable,
    /// A block.
    Namespace,
}

/// One entry of the outline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutlineEntry {
    /// The name with its sigil (`@k`, `%x`; a block's without).
    pub name: String,
    pub detail: Option<String>,
    pub kind: OutlineKind,
    /// The whole definition.
    pub full: Span,
    /// The name at the definition.
    pub def: Span,
    pub children: Option<Vec<OutlineEntry>>,
}

/// The outline of a document: kernels and functions (with their shared declarations, a
/// function's parameters, and blocks) and graphs (with their temps), in source order.
pub fn document_symbols(doc: &Document) -> Vec<OutlineEntry> {
    use OutlineKind as K;
    let index = &doc.analysis.index;
    let make = |s: &Symbol, kind: K, detail: Option<String>, children: Option<Vec<OutlineEntry>>| OutlineEntry {
        name: match s.kind {
            SymbolKind::Kernel | SymbolKind::Func | SymbolKind::Graph | SymbolKind::Shared => {
                format!("@{}", s.name)
            }
            SymbolKind::Block => s.name.clone(),
            _ => format!("%{}", s.name),
        },
        detail,
        kind,
        full: s.full.to(s.def),
        def: s.def,
        children,
    };
    let ast_item = |n: usize| doc.analysis.ast.as_ref().and_then(|a| a.items.get(n));
    let mut out = vec![];
    for s in index.symbols.iter().filter(|s| s.scope.is_none() && s.file == 0) {
        let Some(item_no) = s.item else { continue };
        // A function's parameters come first, with their types.
        let mut children: Vec<_> = match ast_item(item_no) {
            Some(AstItem::Func(f)) => f
                .params
                .iter()
                .filter_map(|p| {
                    let c = index.symbols.iter().find(|c| {
                        c.scope == Some(item_no) && c.kind == SymbolKind::Param && c.name == p.name.node.as_str()
                    })?;
                    Some(make(c, K::Variable, Some(format!("parameter: {}", type_text(&p.ty))), None))
                })
                .collect(),
            _ => vec![],
        };
        children.extend(index.symbols.iter().filter(|c| c.scope == Some(item_no)).filter_map(|c| match c.kind {
            SymbolKind::Block => Some(make(c, K::Namespace, Some("block".into()), None)),
            SymbolKind::Shared => Some(make(c, K::Variable, Some("shared".into()), None)),
            SymbolKind::Temp => Some(make(c, K::Variable, Some("temp".into()), None)),
            _ => None,
        }));
        let (kind, detail) = match (s.kind, ast_item(item_no)) {
            (SymbolKind::Kernel, _) => (K::Function, "kernel".to_string()),
            (SymbolKind::Func, Some(AstItem::Func(f))) => (K::Function, func_detail(f)),
            (SymbolKind::Func, _) => (K::Function, "func".to_string()),
            _ => (K::Module, "graph".to_string()),
        };
        out.push(make(s, kind, Some(detail), Some(children)));
    }
    out
}

/// `func (%a: f32, %r: ptr<shared, f32>) -> f32`: the outline's detail of a function.
fn func_detail(f: &kir::ir::text::ast::AstKernel) -> String {
    format!("func {}", func_params_and_result(f))
}
