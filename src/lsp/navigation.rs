//! `textDocument/definition` and `textDocument/references` for values, blocks, kernels, graphs,
//! shared declarations and graph temps.
//!
//! Guarantees: resolution is the name index's ([`super::symbols::Index`]), so a name goes to the
//! definition the parser would bind it to; a position on no name, or in a file without a syntax
//! tree, gives no result (never an error).

use super::document::Document;
use lsp_types::{Location, Uri};

/// The definition of the name at `offset`.
pub fn definition(doc: &Document, uri: &Uri, offset: usize) -> Option<Location> {
    let index = &doc.analysis.index;
    let occ = index.at(offset)?;
    let sym = index.symbols.get(occ.symbol)?;
    Some(Location { uri: uri.clone(), range: doc.range(sym.def) })
}

/// Every occurrence of the name at `offset` (its definition first when `include_declaration`).
pub fn references(doc: &Document, uri: &Uri, offset: usize, include_declaration: bool) -> Vec<Location> {
    let index = &doc.analysis.index;
    let Some(occ) = index.at(offset) else { return vec![] };
    let mut occs: Vec<_> = index.occurrences_of(occ.symbol).filter(|o| include_declaration || !o.is_def).collect();
    occs.sort_by_key(|o| (!o.is_def, o.span.start));
    occs.iter().map(|o| Location { uri: uri.clone(), range: doc.range(o.span) }).collect()
}
