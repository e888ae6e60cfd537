//! Kir diagnostics (parse errors, verifier errors, barrier verification) as the editor shows them
//! for one document ([`Shown`]; [`super::to_proto::diagnostic`] writes them as LSP diagnostics).
//!
//! Guarantees:
//! - One shown diagnostic per kir diagnostic, in the same order, with its severity, at the range of
//!   its primary span (the start of the document when it has none), `source` "kir".
//! - The message is the diagnostic's message, then its primary label on a second line (when it has
//!   one), then each note on a line of its own as `note: ...`.
//! - Every secondary label with a real span (the numbered steps of an explanation chain, "also
//!   rejected" sites) becomes a `relatedInformation` entry at its range, in this document or in
//!   the imported file it lies in, with the label as its message, in the diagnostic's order;
//!   labels without a source span are dropped.
//! - A diagnostic whose primary span lies in an imported file (an error in `lib/reduce.kir`, a
//!   barrier inside an imported function) is shown at the call in this document it is reached
//!   through (a secondary label on a `call`; else the first secondary label here), or, without one, at the document's
//!   `import` line that brings that file in; its message is prefixed with the file, line and
//!   column (`in lib/reduce.kir:12:3: ...`); its first related entry is its own location there.

use super::document::{Document, Place};
use kir::ir::diag::{Diagnostic, Severity};
use kir::ir::Span;

/// A diagnostic as shown in one document.
#[derive(Clone, Debug)]
pub struct Shown {
    /// Where it is shown, in the document.
    pub span: Span,
    pub severity: Severity,
    pub message: String,
    /// Related places with their messages, in order (a place that has no location for the
    /// editor, an imported file without a path, is left out when converted).
    pub related: Vec<(Place, String)>,
}

/// How one diagnostic of `doc` is shown.
pub fn shown(d: &Diagnostic, doc: &Document) -> Shown {
    let a = &doc.analysis;
    let mut related: Vec<(Place, String)> = vec![];
    let mut message = String::new();
    let span = match d.span().and_then(|s| a.locate(s)) {
        Some((0, s)) => s,
        None => Span::DUMMY,
        Some((file, local)) => {
            let text = a.file_text(file).unwrap_or("");
            let (line, col) = kir::ir::span::line_col(text, local.start as usize);
            let shown = a.imported_file(file).map(|f| f.shown.as_str()).unwrap_or("an imported file");
            message = format!("in {shown}:{line}:{col}: ");
            let label = d.primary.as_ref().map(|p| p.message.as_str()).filter(|m| !m.is_empty());
            related.push((Place::Span { file, span: local }, label.unwrap_or(d.message.as_str()).to_string()));
            // A secondary label in this document (the call through which a barrier inside an
            // imported function is reached) is where the user can act: show it there; else at
            // the import line.
            let in_doc: Vec<_> = d
                .secondary
                .iter()
                .filter(|l| !l.span.is_dummy())
                .filter_map(|l| match a.locate(l.span) {
                    Some((0, s)) => Some(s),
                    _ => None,
                })
                .collect();
            let main_text = a.file_text(0).unwrap_or("");
            let is_call =
                |s: &Span| main_text.get(s.start as usize..s.end as usize).is_some_and(|t| t.contains("call @"));
            match in_doc.iter().find(|s| is_call(s)).or(in_doc.first()) {
                Some(s) => *s,
                None => {
                    let at = a.import_line_for(file).or(a.imports.first()).map(|i| i.span);
                    at.unwrap_or(Span::DUMMY)
                }
            }
        }
    };
    message.push_str(&d.message);
    if let Some(p) = &d.primary {
        if !p.message.is_empty() {
            message.push('\n');
            message.push_str(&p.message);
        }
    }
    for n in &d.notes {
        message.push_str("\nnote: ");
        message.push_str(n);
    }
    related.extend(
        d.secondary.iter().filter(|l| !l.span.is_dummy()).filter_map(|l| Some((a.place(l.span)?, l.message.clone()))),
    );
    Shown { span, severity: d.severity, message, related }
}

/// Every diagnostic of the document's current text.
pub fn for_document(doc: &Document) -> Vec<Shown> {
    doc.analysis.diagnostics.iter().map(|d| shown(d, doc)).collect()
}
