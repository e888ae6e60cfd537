//! Converting kir diagnostics (parse errors, verifier errors, barrier verification) to LSP
//! diagnostics.
//!
//! Guarantees:
//! - One LSP diagnostic per kir diagnostic, in the same order, with its severity, at the range of
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

use super::document::Document;
use kir_ir::diag::{Diagnostic, Severity};
use lsp_types::{DiagnosticRelatedInformation, DiagnosticSeverity, Uri};

/// The LSP form of one diagnostic of `doc`.
pub fn to_lsp(d: &Diagnostic, doc: &Document, uri: &Uri) -> lsp_types::Diagnostic {
    let a = &doc.analysis;
    let mut related: Vec<DiagnosticRelatedInformation> = vec![];
    let mut message = String::new();
    let range = match d.span().and_then(|s| a.locate(s)) {
        Some((0, s)) => doc.range(s),
        None => doc.range(kir_ir::Span::DUMMY),
        Some((file, local)) => {
            let text = a.file_text(file).unwrap_or("");
            let (line, col) = kir_ir::span::line_col(text, local.start as usize);
            let shown = a.imported_file(file).map(|f| f.shown.as_str()).unwrap_or("an imported file");
            message = format!("in {shown}:{line}:{col}: ");
            if let Some(loc) = doc.location(uri, file, local) {
                let label = d.primary.as_ref().map(|p| p.message.as_str()).filter(|m| !m.is_empty());
                related.push(DiagnosticRelatedInformation {
                    location: loc,
                    message: label.unwrap_or(d.message.as_str()).to_string(),
                });
            }
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
            let is_call = |s: &kir_ir::Span| {
                main_text.get(s.start as usize..s.end as usize).is_some_and(|t| t.contains("call @"))
            };
            match in_doc.iter().find(|s| is_call(s)).or(in_doc.first()).map(|s| (0, *s)) {
                Some((_, s)) => doc.range(s),
                None => {
                    let at = a.import_line_for(file).or(a.imports.first()).map(|i| i.span);
                    doc.range(at.unwrap_or(kir_ir::Span::DUMMY))
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
    related.extend(d.secondary.iter().filter(|l| !l.span.is_dummy()).filter_map(|l| {
        Some(DiagnosticRelatedInformation { location: doc.source_location(uri, l.span)?, message: l.message.clone() })
    }));
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Note => DiagnosticSeverity::INFORMATION,
        }),
        source: Some("kir".into()),
        message,
        related_information: if related.is_empty() { None } else { Some(related) },
        ..Default::default()
    }
}

/// Every diagnostic of the document's current text.
pub fn for_document(doc: &Document, uri: &Uri) -> Vec<lsp_types::Diagnostic> {
    doc.analysis.diagnostics.iter().map(|d| to_lsp(d, doc, uri)).collect()
}
