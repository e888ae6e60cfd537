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
//! - A quoted source line longer than [`LONG_LINE`] bytes is shown as windows of about
//!   [`CONTEXT`] bytes either side of each label's start and end, joined and ended by `...`
//!   (a line with no label: its first `2 * CONTEXT` bytes), so a diagnostic on a 100k-character
//!   line stays a few hundred bytes; carets stay under the right characters and the
//!   `file:line:col` header is the real source's.

use crate::span::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::{Files, Location};
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

/// Source lines longer than this many bytes are shown as windows around the labels.
pub const LONG_LINE: usize = 200;
/// Bytes shown either side of a label's start and end in a long line.
pub const CONTEXT: usize = 60;

/// Byte offsets where the lines of `text` start (the first is 0).
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

/// One file as a diagnostic shows it: the (possibly windowed) text, its line starts, and for the
/// label offsets of the windowed text their position in the real source.
struct ShownFile<'a> {
    name: &'a str,
    text: std::borrow::Cow<'a, str>,
    starts: std::borrow::Cow<'a, [usize]>,
    /// Windowed offset -> the real source's location (only for windowed files).
    real: std::collections::HashMap<usize, Location>,
}

struct ShownFiles<'a>(Vec<ShownFile<'a>>);

impl<'a> Files<'a> for ShownFiles<'a> {
    type FileId = usize;
    type Name = &'a str;
    type Source = &'a str;
    fn name(&'a self, id: usize) -> Result<&'a str, codespan_reporting::files::Error> {
        self.0.get(id).map(|f| f.name).ok_or(codespan_reporting::files::Error::FileMissing)
    }
    fn source(&'a self, id: usize) -> Result<&'a str, codespan_reporting::files::Error> {
        self.0.get(id).map(|f| f.text.as_ref()).ok_or(codespan_reporting::files::Error::FileMissing)
    }
    fn line_index(&'a self, id: usize, byte: usize) -> Result<usize, codespan_reporting::files::Error> {
        let f = self.0.get(id).ok_or(codespan_reporting::files::Error::FileMissing)?;
        Ok(f.starts.partition_point(|&s| s <= byte).saturating_sub(1))
    }
    fn line_range(
        &'a self,
        id: usize,
        line: usize,
    ) -> Result<std::ops::Range<usize>, codespan_reporting::files::Error> {
        let f = self.0.get(id).ok_or(codespan_reporting::files::Error::FileMissing)?;
        let start = *f
            .starts
            .get(line)
            .ok_or(codespan_reporting::files::Error::LineTooLarge { given: line, max: f.starts.len() - 1 })?;
        let end = f.starts.get(line + 1).copied().unwrap_or(f.text.len());
        Ok(start..end)
    }
    fn location(&'a self, id: usize, byte: usize) -> Result<Location, codespan_reporting::files::Error> {
        if let Some(l) = self.0.get(id).and_then(|f| f.real.get(&byte)) {
            return Ok(*l);
        }
        let line = self.line_index(id, byte)?;
        let range = self.line_range(id, line)?;
        let col = codespan_reporting::files::column_index(self.source(id)?, range, byte);
        Ok(Location { line_number: line + 1, column_number: col + 1 })
    }
}

/// `i` moved down (`up`: up) to a char boundary of `text`.
fn boundary(text: &str, mut i: usize, up: bool) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        if up {
            i += 1
        } else {
            i -= 1
        }
    }
    i
}

/// `text` (lines starting at `starts`) with every line longer than [`LONG_LINE`] cut to windows
/// around the `points` (byte offsets: label starts and ends) it holds: the new text, its line
/// starts, and where each point went (with its real location).
fn window(
    text: &str,
    starts: &[usize],
    points: &[usize],
) -> (String, Vec<usize>, std::collections::HashMap<usize, usize>, std::collections::HashMap<usize, Location>) {
    let mut out = String::new();
    let mut new_starts = Vec::with_capacity(starts.len());
    let (mut moved, mut real) = (std::collections::HashMap::new(), std::collections::HashMap::new());
    let mut sorted: Vec<usize> = points.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    for (li, &ls) in starts.iter().enumerate() {
        let next = starts.get(li + 1).copied().unwrap_or(text.len());
        let le = if next > ls && text.as_bytes().get(next - 1) == Some(&b'\n') { next - 1 } else { next };
        new_starts.push(out.len());
        let here: Vec<usize> =
            sorted[sorted.partition_point(|&p| p < ls)..sorted.partition_point(|&p| p <= le)].to_vec();
        if le - ls <= LONG_LINE {
            for &p in &here {
                moved.insert(p, out.len() + (p - ls));
            }
            out.push_str(&text[ls..next]);
            continue;
        }
        // Windows [p - CONTEXT, p + CONTEXT] around each point, merged when they touch.
        let mut wins: Vec<(usize, usize)> = Vec::new();
        for &p in &here {
            let (a, b) =
                (boundary(text, p.saturating_sub(CONTEXT).max(ls), false), boundary(text, (p + CONTEXT).min(le), true));
            match wins.last_mut() {
                Some(w) if a <= w.1 + 3 => w.1 = w.1.max(b),
                _ => wins.push((a, b)),
            }
        }
        if wins.is_empty() {
            wins.push((ls, boundary(text, ls + 2 * CONTEXT, false)));
        }
        let mut pi = 0;
        for (k, &(a, b)) in wins.iter().enumerate() {
            if a > ls || k > 0 {
                out.push_str("...");
            }
            while pi < here.len() && here[pi] <= b {
                let p = here[pi];
                moved.insert(p, out.len() + (p - a));
                let col = codespan_reporting::files::column_index(text, ls..next, p);
                real.insert(out.len() + (p - a), Location { line_number: li + 1, column_number: col + 1 });
                pi += 1;
            }
            out.push_str(&text[a..b]);
        }
        if wins.last().is_some_and(|w| w.1 < le) {
            out.push_str("...");
        }
        out.push_str(&text[le..next]);
    }
    (out, new_starts, moved, real)
}

/// Renders diagnostics whose spans may lie in any file of `map`.
pub fn render_map(diags: &[Diagnostic], map: &SourceMap, color: bool) -> String {
    let shown: Vec<std::borrow::Cow<'_, str>> = map.files.iter().map(|f| visible_source(&f.text)).collect();
    let starts: Vec<Vec<usize>> = shown.iter().map(|t| line_starts(t)).collect();
    let long: Vec<bool> = starts
        .iter()
        .zip(&shown)
        .map(|(s, t)| s.iter().zip(s.iter().skip(1).chain([&(t.len() + 1)])).any(|(a, b)| b - a > LONG_LINE + 1))
        .collect();
    let config = Config::default();
    let mut out = Vec::new();
    for d in diags {
        let severity = match d.severity {
            Severity::Note => CsSeverity::Note,
            Severity::Warning => CsSeverity::Warning,
            Severity::Error => CsSeverity::Error,
        };
        // The files as this diagnostic shows them: long lines windowed around its labels.
        let spans: Vec<Span> = d.primary.iter().chain(&d.secondary).map(|l| l.span).collect();
        let mut moved: Vec<std::collections::HashMap<usize, usize>> = vec![Default::default(); map.files.len()];
        let files = ShownFiles(
            map.files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let mut file = ShownFile {
                        name: f.name.as_str(),
                        text: std::borrow::Cow::Borrowed(shown[i].as_ref()),
                        starts: std::borrow::Cow::Borrowed(starts[i].as_slice()),
                        real: Default::default(),
                    };
                    let points: Vec<usize> = spans
                        .iter()
                        .filter_map(|s| map.locate(*s).filter(|(fi, _)| *fi == i))
                        .flat_map(|(_, r)| [r.start, r.end])
                        .collect();
                    if long[i] && !points.is_empty() {
                        let (text, st, mv, real) = window(&shown[i], &starts[i], &points);
                        file.text = std::borrow::Cow::Owned(text);
                        file.starts = std::borrow::Cow::Owned(st);
                        file.real = real;
                        moved[i] = mv;
                    }
                    file
                })
                .collect(),
        );
        let at = |s: Span| {
            map.locate(s).map(|(i, r)| {
                let mv = |o: usize| moved[i].get(&o).copied().unwrap_or(o);
                (i, mv(r.start)..mv(r.end))
            })
        };
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
