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
use codespan_reporting::files::SimpleFiles;
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
    render_map(diags, &SourceMap::single(file_name, source), color)
}

/// One source file of a [`SourceMap`]: its spans are `base..base + text.len()`.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceFile {
    /// The name shown in diagnostics (the path as the user gave it, or relative to them).
    pub name: String,
    pub text: String,
    pub base: u32,
}

/// The files of a loaded program (a file and what it imports), each at its own range of offsets,
/// so a [`Span`] identifies its file: the first file starts at 0, each later one after the end of
/// the one before (plus one, so an empty file has a range of its own).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceMap {
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    /// A map of one file at base 0.
    pub fn single(name: &str, text: &str) -> SourceMap {
        SourceMap { files: vec![SourceFile { name: name.to_string(), text: text.to_string(), base: 0 }] }
    }
    /// The base offset the next file added gets.
    pub fn next_base(&self) -> u64 {
        self.files.last().map(|f| f.base as u64 + f.text.len() as u64 + 1).unwrap_or(0)
    }
    /// Adds a file at [`SourceMap::next_base`]; `None` when the offsets would pass 4 GiB.
    pub fn add(&mut self, name: String, text: String) -> Option<u32> {
        let base = self.next_base();
        if base + text.len() as u64 >= u32::MAX as u64 {
            return None;
        }
        self.files.push(SourceFile { name, text, base: base as u32 });
        Some(base as u32)
    }
    /// The file a span lies in (the last file starting at or before it) and the span's range
    /// within that file, clamped to the file's text.
    pub fn locate(&self, s: Span) -> Option<(usize, std::ops::Range<usize>)> {
        let i = self.files.partition_point(|f| f.base <= s.start).checked_sub(1)?;
        let f = &self.files[i];
        let len = f.text.len();
        let end = ((s.end.saturating_sub(f.base)) as usize).min(len);
        let start = ((s.start - f.base) as usize).min(end);
        Some((i, start..end))
    }
    /// `name:line:col` of a span's start.
    pub fn position(&self, s: Span) -> Option<String> {
        let (i, r) = self.locate(s)?;
        let f = &self.files[i];
        let (line, col) = crate::span::line_col(&f.text, r.start);
        Some(format!("{}:{line}:{col}", f.name))
    }
}

/// Renders diagnostics whose spans may lie in any file of `map`.
pub fn render_map(diags: &[Diagnostic], map: &SourceMap, color: bool) -> String {
    let mut files = SimpleFiles::new();
    let shown: Vec<String> = map.files.iter().map(|f| visible_source(&f.text).into_owned()).collect();
    let ids: Vec<usize> =
        map.files.iter().zip(&shown).map(|(f, text)| files.add(f.name.as_str(), text.as_str())).collect();
    let config = Config::default();
    let mut out = Vec::new();
    for d in diags {
        let severity = match d.severity {
            Severity::Note => CsSeverity::Note,
            Severity::Warning => CsSeverity::Warning,
            Severity::Error => CsSeverity::Error,
        };
        let at = |s: Span| map.locate(s).map(|(i, r)| (ids[i], r));
        let mut labels = Vec::new();
        if let Some((f, r)) = d.primary.as_ref().and_then(|p| at(p.span)) {
            labels
                .push(Label::primary(f, r).with_message(d.primary.as_ref().map(|p| p.message.as_str()).unwrap_or("")));
        }
        for s in &d.secondary {
            if let Some((f, r)) = at(s.span) {
                labels.push(Label::secondary(f, r).with_message(&s.message));
            }
        }
        let cs = CsDiagnostic::new(severity).with_message(&d.message).with_labels(labels).with_notes(d.notes.clone());
        let mut buf = if color { term::termcolor::Buffer::ansi() } else { term::termcolor::Buffer::no_color() };
        let _ = term::emit(&mut buf, &config, &files, &cs);
        out.extend_from_slice(buf.as_slice());
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
