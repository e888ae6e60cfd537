//! `textDocument/formatting` through `kir fmt`'s formatter ([`kir::ir::text::format::format_source`]).
//!
//! Guarantees: the edit's text is exactly what `kir fmt` prints for the document's text (comments
//! kept); one edit replaces the whole document; a document already in canonical form gets no
//! edit; a document that does not parse gets `None` (the server answers with no edits), never a
//! partial or guessed format.

use super::document::Document;
use kir::ir::Span;

/// An edit of the document: the text of `span` (`None`: the whole text) replaced by `new_text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub span: Option<Span>,
    pub new_text: String,
}

/// `textDocument/formatting`: one edit replacing the whole text with `kir fmt`'s output; no edit
/// when the text is already canonical; `None` when the text does not parse (nothing to format).
pub fn format_document(doc: &Document) -> Option<Vec<Edit>> {
    let module = doc.analysis.module()?;
    let formatted = kir::ir::text::format::format_source(&doc.text, module);
    if formatted == doc.text {
        return Some(vec![]);
    }
    Some(vec![Edit { span: None, new_text: formatted }])
}
