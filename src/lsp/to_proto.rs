//! kir's answers as LSP types: the one place (with [`super::from_proto`] for what requests carry,
//! and the server loop that speaks the protocol) that knows `lsp_types`. The features
//! ([`super::diagnostics`], [`super::hover`], [`super::navigation`], [`super::outline`],
//! [`super::format`], [`super::semantic_tokens`]) work on kir's spans and [`Place`]s; this module
//! turns them into positions, ranges and locations through the document's line index.
//!
//! Guarantees: every conversion is total except where a place has no location for the editor (a
//! file without a `file:` URI): such a place is left out (`None`), never guessed; positions are in
//! UTF-16 code units, as the server advertises.

use super::diagnostics::Shown;
use super::document::{self as kir, Document, Place};
use super::format::Edit;
use super::hover::HoverText;
use super::navigation::Highlight;
use super::outline::{OutlineEntry, OutlineKind};
use super::semantic_tokens;
use ::kir::ir::diag::Severity;
use ::kir::ir::Span;
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, DocumentHighlight, DocumentHighlightKind, DocumentSymbol, Hover,
    HoverContents, Location, MarkupContent, MarkupKind, Position, Range, SemanticToken, SemanticTokenModifier,
    SemanticTokenType, SemanticTokensLegend, SymbolKind, TextEdit, Uri,
};
use std::path::Path;

pub fn position(p: kir::Position) -> Position {
    Position { line: p.line, character: p.character }
}

pub fn range(r: kir::Range) -> Range {
    Range { start: position(r.start), end: position(r.end) }
}

/// The range of a span of the document.
pub fn span_range(doc: &Document, span: Span) -> Range {
    range(doc.range(span))
}

/// The location of a place; `uri` is the document's. `None` for an imported file without a path
/// that has a URI.
pub fn location(doc: &Document, uri: &Uri, place: &Place) -> Option<Location> {
    match place {
        Place::Span { file: 0, span } => Some(Location { uri: uri.clone(), range: span_range(doc, *span) }),
        Place::Span { file, span } => {
            let f = doc.analysis.imported_file(*file)?;
            let text = doc.analysis.file_text(*file)?;
            Some(Location { uri: path_to_uri(&f.path)?, range: range(f.lines.range(text, *span)) })
        }
        Place::FileStart(path) => {
            let start = Position { line: 0, character: 0 };
            Some(Location { uri: path_to_uri(path)?, range: Range { start, end: start } })
        }
    }
}

pub fn diagnostic(doc: &Document, uri: &Uri, d: &Shown) -> lsp_types::Diagnostic {
    let related: Vec<DiagnosticRelatedInformation> = d
        .related
        .iter()
        .filter_map(|(place, message)| {
            Some(DiagnosticRelatedInformation { location: location(doc, uri, place)?, message: message.clone() })
        })
        .collect();
    lsp_types::Diagnostic {
        range: span_range(doc, d.span),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Note => DiagnosticSeverity::INFORMATION,
        }),
        source: Some("kir".into()),
        message: d.message.clone(),
        related_information: if related.is_empty() { None } else { Some(related) },
        ..Default::default()
    }
}

pub fn hover(doc: &Document, h: HoverText) -> Hover {
    Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: h.markdown }),
        range: Some(span_range(doc, h.span)),
    }
}

pub fn highlight(doc: &Document, h: &Highlight) -> DocumentHighlight {
    DocumentHighlight {
        range: span_range(doc, h.span),
        kind: Some(if h.write { DocumentHighlightKind::WRITE } else { DocumentHighlightKind::READ }),
    }
}

pub fn document_symbol(doc: &Document, e: OutlineEntry) -> DocumentSymbol {
    #[allow(deprecated)]
    DocumentSymbol {
        name: e.name,
        detail: e.detail,
        kind: match e.kind {
            OutlineKind::Function => SymbolKind::FUNCTION,
            OutlineKind::Module => SymbolKind::MODULE,
            OutlineKind::Variable => SymbolKind::VARIABLE,
            OutlineKind::Namespace => SymbolKind::NAMESPACE,
        },
        tags: None,
        deprecated: None,
        range: span_range(doc, e.full),
        selection_range: span_range(doc, e.def),
        children: e.children.map(|c| c.into_iter().map(|e| document_symbol(doc, e)).collect()),
    }
}

pub fn text_edit(doc: &Document, e: Edit) -> TextEdit {
    let range = match e.span {
        Some(s) => span_range(doc, s),
        None => range(doc.lines.full_range(&doc.text)),
    };
    TextEdit { range, new_text: e.new_text }
}

/// Token types, in legend order: [`semantic_tokens::Class`] indexes them.
pub const LEGEND_TYPES: [SemanticTokenType; 10] = [
    SemanticTokenType::KEYWORD,
    SemanticTokenType::TYPE,
    SemanticTokenType::VARIABLE,
    SemanticTokenType::new("label"),
    SemanticTokenType::FUNCTION,
    SemanticTokenType::NUMBER,
    SemanticTokenType::COMMENT,
    SemanticTokenType::NAMESPACE,
    SemanticTokenType::STRING,
    SemanticTokenType::OPERATOR,
];

/// The semantic-token legend: [`LEGEND_TYPES`], and the modifiers in the order of
/// [`semantic_tokens::MOD_DECLARATION`] (bit 0) and [`semantic_tokens::MOD_DEFAULT_LIBRARY`] (bit 1).
pub fn semantic_tokens_legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: LEGEND_TYPES.to_vec(),
        token_modifiers: vec![SemanticTokenModifier::DECLARATION, SemanticTokenModifier::DEFAULT_LIBRARY],
    }
}

/// The encoded tokens of a document ([`semantic_tokens::classify`]: relative positions, UTF-16).
pub fn semantic_tokens(doc: &Document) -> Vec<SemanticToken> {
    let mut data = vec![];
    let (mut line, mut col) = (0u32, 0u32);
    // The previous token's start, for computing columns incrementally along a line (a document
    // that is one long line costs linear time, not quadratic).
    let mut prev_start: Option<usize> = None;
    for c in semantic_tokens::classify(&doc.text) {
        let Some(text) = doc.text.get(c.start..c.end) else { continue };
        let length: usize = text.chars().map(char::len_utf16).sum();
        if length == 0 || text.contains('\n') || text.contains('\r') {
            continue;
        }
        let between = prev_start.and_then(|s| doc.text.get(s..c.start));
        let p = match between {
            Some(b) if !b.contains(['\n', '\r']) => {
                let units: usize = b.chars().map(char::len_utf16).sum();
                kir::Position { line, character: col + units as u32 }
            }
            _ => doc.position(c.start),
        };
        prev_start = Some(c.start);
        let delta_line = p.line - line;
        let delta_start = if delta_line == 0 { p.character - col } else { p.character };
        data.push(SemanticToken {
            delta_line,
            delta_start,
            length: length as u32,
            token_type: c.class as u32,
            token_modifiers_bitset: c.modifiers,
        });
        line = p.line;
        col = p.character;
    }
    data
}

/// The `file:` URI of a path (made absolute against the working directory), percent-encoding
/// every byte but unreserved characters and `/`.
pub fn path_to_uri(path: &Path) -> Option<Uri> {
    let abs = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().ok()?.join(path) };
    let s = abs.to_str()?.replace('\\', "/");
    let mut out = String::from("file://");
    if !s.starts_with('/') {
        out.push('/');
    }
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) || (b == b':' && cfg!(windows)) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::super::from_proto::uri_to_path;
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn file_uris_and_paths_convert_both_ways() {
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        assert_eq!(uri_to_path(&uri("file:///w/a%20b/k.kir")), Some(PathBuf::from("/w/a b/k.kir")));
        assert_eq!(uri_to_path(&uri("file://localhost/w/k.kir")), Some(PathBuf::from("/w/k.kir")));
        assert_eq!(uri_to_path(&uri("untitled:Untitled-1")), None);
        assert_eq!(uri_to_path(&uri("file://elsewhere/w/k.kir")), None);
        if cfg!(unix) {
            let p = Path::new("/tmp/d é/x#1.kir");
            let u = path_to_uri(p).unwrap();
            assert_eq!(u.as_str(), "file:///tmp/d%20%C3%A9/x%231.kir");
            assert_eq!(uri_to_path(&u).as_deref(), Some(p));
        }
    }
}
