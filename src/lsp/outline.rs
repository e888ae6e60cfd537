//! The document outline (`textDocument/documentSymbol`), built from the name index
//! ([`super::symbols::Index`]).
//!
//! Guarantees: kernels, functions and graphs of this document (not imported ones), in source
//! order; a function's parameters first (with their types), then, in source order, the blocks,
//! shared declarations and graph temps of the item.

use super::document::Document;
use super::symbols::{func_params_and_result, type_text, Symbol, SymbolKind};
use kir_ir::text::ast::AstItem;

/// The outline of a document: kernels and functions (with their shared declarations, a
/// function's parameters, and blocks) and graphs (with their temps), in source order.
pub fn document_symbols(doc: &Document) -> Vec<lsp_types::DocumentSymbol> {
    use lsp_types::SymbolKind as K;
    let index = &doc.analysis.index;
    #[allow(deprecated)]
    let make = |s: &Symbol, kind: K, detail: Option<String>, children: Option<Vec<lsp_types::DocumentSymbol>>| {
        let range = doc.range(s.full.to(s.def));
        let selection_range = doc.range(s.def);
        lsp_types::DocumentSymbol {
            name: match s.kind {
                SymbolKind::Kernel | SymbolKind::Func | SymbolKind::Graph | SymbolKind::Shared => {
                    format!("@{}", s.name)
                }
                SymbolKind::Block => s.name.clone(),
                _ => format!("%{}", s.name),
            },
            detail,
            kind,
            tags: None,
            deprecated: None,
            range,
            selection_range,
            children,
        }
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
                    Some(make(c, K::VARIABLE, Some(format!("parameter: {}", type_text(&p.ty))), None))
                })
                .collect(),
            _ => vec![],
        };
        children.extend(index.symbols.iter().filter(|c| c.scope == Some(item_no)).filter_map(|c| match c.kind {
            SymbolKind::Block => Some(make(c, K::NAMESPACE, Some("block".into()), None)),
            SymbolKind::Shared => Some(make(c, K::VARIABLE, Some("shared".into()), None)),
            SymbolKind::Temp => Some(make(c, K::VARIABLE, Some("temp".into()), None)),
            _ => None,
        }));
        let (kind, detail) = match (s.kind, ast_item(item_no)) {
            (SymbolKind::Kernel, _) => (K::FUNCTION, "kernel".to_string()),
            (SymbolKind::Func, Some(AstItem::Func(f))) => (K::FUNCTION, func_detail(f)),
            (SymbolKind::Func, _) => (K::FUNCTION, "func".to_string()),
            _ => (K::MODULE, "graph".to_string()),
        };
        out.push(make(s, kind, Some(detail), Some(children)));
    }
    out
}

/// `func (%a: f32, %r: ptr<shared, f32>) -> f32`: the outline's detail of a function.
fn func_detail(f: &kir_ir::text::ast::AstKernel) -> String {
    format!("func {}", func_params_and_result(f))
}
