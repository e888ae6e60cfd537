//! Converting kir diagnostics (parse errors, verifier errors, barrier verification) to LSP
//! diagnostics.
//!
//! Guarantees:
//! - One LSP diagnostic per kir diagnostic, in the same order, with its severity, at the range of
//!   its primary span (the start of the document when it has none), `source` "kir".
//! - The message is the diagnostic's message, then its primary label on a second line (when it has
//!   one), then each note on a line of its own as `note: ...`.
//! - Every secondary label with a real span (the numbered steps of an explanation chain, "also
//!   rejected" sites) becomes a `relatedInformation` entry at its range in the same document, with
//!   the label as its message, in the diagnostic's order; labels without a source span are dropped.

use super::document::Document;
use kir_ir::diag::{Diagnostic, Severity};
use lsp_types::{DiagnosticRelatedInformation, DiagnosticSeverity, Location, Uri};

/// The LSP form of one diagnostic of `doc`.
pub fn to_lsp(d: &Diagnostic, doc: &Document, uri: &Uri) -> lsp_types::Diagnostic {
    let range = match d.span() {
        Some(s) => doc.range(s),
        None => doc.range(kir_ir::Span::DUMMY),
    };
    let mut message = d.message.clone();
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
    let related: Vec<DiagnosticRelatedInformation> = d
        .secondary
        .iter()
        .filter(|l| !l.span.is_dummy())
        .map(|l| DiagnosticRelatedInformation {
            location: Location { uri: uri.clone(), range: doc.range(l.span) },
            message: l.message.clone(),
        })
        .collect();
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
