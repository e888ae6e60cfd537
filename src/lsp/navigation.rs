//! `textDocument/definition`, `textDocument/references` and `textDocument/documentHighlight` for
//! values, blocks, kernels, functions, graphs, shared declarations and graph temps.
//!
//! Guarantees: resolution is the name index's ([`super::symbols::Index`]), so a name goes to the
//! definition the parser would bind it to; `call @f` goes to the function, in this document or in
//! the imported file that defines it (a location in that file); the path of an `import` line goes
//! to the start of the imported file. A position on no name, or in a file without a syntax tree,
//! gives no result (never an error).

use super::document::{Document, Place};
use kir::ir::Span;

/// An occurrence of a name in the document: its definition (`write`) or a use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Highlight {
    pub span: Span,
    pub write: bool,
}

/// The definition of the name (or import path) at `offset`.
pub fn definition(doc: &Document, offset: usize) -> Option<Place> {
    let index = &doc.analysis.index;
    if let Some(occ) = index.at(offset) {
        let sym = index.symbols.get(occ.symbol)?;
        return Some(Place::Span { file: sym.file, span: sym.def });
    }
    let imp = index.import_at(offset)?;
    let line = doc.analysis.imports.iter().find(|l| l.span == imp.span)?;
    let path = match line.file.and_then(|f| doc.analysis.imported_file(f)) {
        Some(f) => f.path.clone(),
        None => line.resolved.clone().filter(|p| p.is_file())?,
    };
    Some(Place::FileStart(path))
}

/// Every occurrence of the name at `offset` (its definition first when `include_declaration`;
/// an imported function's definition is in its own file).
pub fn references(doc: &Document, offset: usize, include_declaration: bool) -> Vec<Place> {
    let index = &doc.analysis.index;
    let Some(occ) = index.at(offset) else { return vec![] };
    let mut occs: Vec<_> = index.occurrences_of(occ.symbol).filter(|o| include_declaration || !o.is_def).collect();
    occs.sort_by_key(|o| (!o.is_def, o.span.start));
    let mut out = vec![];
    if let Some(sym) = index.symbols.get(occ.symbol).filter(|s| s.file != 0 && include_declaration) {
        out.push(Place::Span { file: sym.file, span: sym.def });
    }
    out.extend(occs.iter().map(|o| Place::Span { file: 0, span: o.span }));
    out
}

/// The occurrences in this document of the name at `offset`: its definition (`write`) and uses,
/// in source order.
pub fn highlights(doc: &Document, offset: usize) -> Vec<Highlight> {
    let index = &doc.analysis.index;
    let Some(occ) = index.at(offset) else { return vec![] };
    let mut occs: Vec<_> = index.occurrences_of(occ.symbol).collect();
    occs.sort_by_key(|o| o.span.start);
    occs.iter().map(|o| Highlight { span: o.span, write: o.is_def }).collect()
}
