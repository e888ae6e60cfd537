//! Diagnostics: located errors, warnings and notes, rendered like a compiler's.
//!
//! Guarantees:
//! - Every diagnostic has a severity, a message and (unless the error is about a whole file) a
//!   primary span; secondary labels and notes explain it.
//! - [`render`] prints `file:line:col` headers, the source line and a caret under the span, in
//!   plain text (no colour codes) unless colour is asked for, so snapshot tests are stable.
//! - Characters that display as nothing (control characters other than tab and line breaks, a
//!   byte order mark and other zero-width format characters) are shown as `?` (one-byte ones) or
//!   `\u{FFFD}` in the quoted source line, so a caret under them is visible; line and column
//!   numbers are those of the real source.

use crate::span::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

/// A secondary label: a span with an explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanLabel {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    /// The span the diagnostic is about, with the label under its caret.
    pub primary: Option<SpanLabel>,
    pub secondary: Vec<SpanLabel>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            primary: None,
            secondary: vec![],
            notes: vec![],
        }
    }
    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(message) }
    }
    /// Sets the primary span and the label under it.
    pub fn at(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.primary = Some(SpanLabel { span, message: label.into() });
        self
    }
    /// Adds a secondary span with its label.
    pub fn with_label(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push(SpanLabel { span, message: label.into() });
        self
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
    /// The span of the primary label, if any.
    pub fn span(&self) -> Option<Span> {
        self.primary.as_ref().map(|l| l.span)
    }
}

/// True when any diagnostic is an error.
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

/// Renders diagnostics against the source they refer to.
pub fn render(diags: &[Diagnostic], file_name: &str, source: &str, color: bool) -> String {
    let shown = visible_source(source);
    let file = SimpleFile::new(file_name, shown.as_ref());
    let config = Config::default();
    let mut out = Vec::new();
    for d in diags {
        let severity = match d.severity {
            Severity::Note => CsSeverity::Note,
            Severity::Warning => CsSeverity::Warning,
            Severity::Error => CsSeverity::Error,
        };
        let clamp = |s: Span| {
            let end = (s.end as usize).min(source.len());
            let start = (s.start as usize).min(end);
            start..end
        };
        let mut labels = Vec::new();
        if let Some(p) = &d.primary {
            labels.push(Label::primary((), clamp(p.span)).with_message(&p.message));
        }
        for s in &d.secondary {
            labels.push(Label::secondary((), clamp(s.span)).with_message(&s.message));
        }
        let cs = CsDiagnostic::new(severity).with_message(&d.message).with_labels(labels).with_notes(d.notes.clone());
        if color {
            let mut buf = term::termcolor::Buffer::ansi();
            let _ = term::emit(&mut buf, &config, &file, &cs);
            out.extend_from_slice(buf.as_slice());
        } else {
            let mut buf = term::termcolor::Buffer::no_color();
            let _ = term::emit(&mut buf, &config, &file, &cs);
            out.extend_from_slice(buf.as_slice());
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a character displays as nothing in a terminal (so a caret under it would have width 0).
fn is_invisible(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        || matches!(c, '\u{feff}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}')
}

/// The source with every invisible character replaced by a visible one of the same length in bytes
/// and in characters (`?` for one byte, U+FFFD for three, `\u{00BF}` for two), so byte offsets,
/// lines and columns are unchanged.
fn visible_source(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.chars().any(is_invisible) {
        return std::borrow::Cow::Borrowed(source);
    }
    let out: String = source
        .chars()
        .map(|c| match (is_invisible(c), c.len_utf8()) {
            (false, _) => c,
            (true, 1) => '?',
            (true, 2) => '\u{bf}',
            (true, _) => '\u{fffd}',
        })
        .collect();
    debug_assert_eq!(out.len(), source.len());
    std::borrow::Cow::Owned(out)
}
