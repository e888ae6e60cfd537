//! Open documents: their text, the line index that converts positions, and the analysis of the
//! current text.
//!
//! Guarantees:
//! - Positions are LSP positions in UTF-16 code units (the protocol's default encoding, the only
//!   one the server advertises). [`LineIndex::position`] and [`LineIndex::offset`] convert byte
//!   offsets and positions both ways, exactly for every offset on a character boundary; lines end
//!   at LF, CRLF or a bare CR, as the protocol counts them.
//! - Nothing here panics on out-of-range input: an offset past the end (or inside a character) is
//!   clamped to the end (or to the character's start); a position past the end of its line is the
//!   line's end, and a line past the last is the end of the text.
//! - [`Analysis::new`] never panics on any text: it parses, runs `kir check`'s checks
//!   ([`crate::checks::check_module`]) when the module parses, and builds the name index from the
//!   syntax tree when the text is syntactically valid (also when lowering reports errors).

use super::symbols::Index;
use kir_ir::diag::Diagnostic;
use kir_ir::Span;
use lsp_types::{Position, Range};

/// Byte offsets of line starts, for converting offsets to positions and back.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// The byte offset where each line starts; `line_starts[0] == 0`.
    line_starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => line_starts.push(i + 1),
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => line_starts.push(i + 1),
                _ => {}
            }
            i += 1;
        }
        LineIndex { line_starts }
    }

    /// The byte range of line `line`'s content (without its line terminator).
    fn line_content(&self, text: &str, line: usize) -> (usize, usize) {
        let start = self.line_starts[line].min(text.len());
        let mut end = self.line_starts.get(line + 1).copied().unwrap_or(text.len()).min(text.len());
        let bytes = text.as_bytes();
        if end > start && bytes[end - 1] == b'\n' {
            end -= 1;
        }
        if end > start && bytes[end - 1] == b'\r' {
            end -= 1;
        }
        (start, end)
    }

    /// The position of a byte offset (clamped to the text, snapped back to a character boundary).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let (start, end) = self.line_content(text, line);
        let upto = offset.min(end).max(start);
        let character: usize = text[start..upto].chars().map(char::len_utf16).sum();
        Position { line: line as u32, character: character as u32 }
    }

    /// The byte offset of a position (clamped as the module doc says).
    pub fn offset(&self, text: &str, pos: Position) -> usize {
        let line = pos.line as usize;
        if line >= self.line_starts.len() {
            return text.len();
        }
        let (start, end) = self.line_content(text, line);
        let mut units = 0usize;
        for (i, c) in text[start..end].char_indices() {
            if units >= pos.character as usize {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }

    /// The range of a span.
    pub fn range(&self, text: &str, span: Span) -> Range {
        let start = span.start as usize;
        let end = (span.end as usize).max(start);
        Range { start: self.position(text, start), end: self.position(text, end) }
    }

    /// The range of the whole text.
    pub fn full_range(&self, text: &str) -> Range {
        Range { start: Position { line: 0, character: 0 }, end: self.position(text, text.len()) }
    }
}

/// What the server knows about one version of a document.
pub struct Analysis {
    /// The lowered module, when the text parses.
    pub module: Option<kir_ir::Module>,
    /// The syntax tree, when the text is syntactically valid.
    pub ast: Option<kir_ir::ast::AstModule>,
    /// Parse errors, or every diagnostic of `kir check`.
    pub diagnostics: Vec<Diagnostic>,
    /// Names: definitions and uses (empty without a syntax tree).
    pub index: Index,
}

impl Analysis {
    pub fn new(text: &str) -> Analysis {
        let ast = kir_ir::parse::parse_ast(text).ok();
        let (module, diagnostics) = match kir_ir::parse(text) {
            Ok(m) => {
                let d = crate::checks::check_module(&m);
                (Some(m), d)
            }
            Err(d) => (None, d),
        };
        let index = ast.as_ref().map(Index::build).unwrap_or_default();
        Analysis { module, ast, diagnostics, index }
    }

    /// The analysis of a text whose analysis failed (panicked): one error saying so.
    pub fn failed() -> Analysis {
        let d = Diagnostic::error("internal error: kir could not analyze this file (please report it)");
        Analysis { module: None, ast: None, diagnostics: vec![d], index: Index::default() }
    }
}

/// An open document.
pub struct Document {
    pub version: i32,
    pub text: String,
    pub lines: LineIndex,
    pub analysis: Analysis,
}

impl Document {
    pub fn new(text: String, version: i32) -> Document {
        let lines = LineIndex::new(&text);
        let analysis = Analysis::new(&text);
        Document { version, text, lines, analysis }
    }

    /// A document whose analysis failed ([`Analysis::failed`]).
    pub fn failed(text: String, version: i32) -> Document {
        Document { version, lines: LineIndex::new(&text), text, analysis: Analysis::failed() }
    }

    /// Applies an edit of `range` (or the whole text when `None`) without re-analyzing.
    pub fn splice(&mut self, range: Option<Range>, new_text: &str) {
        match range {
            None => self.text = new_text.to_string(),
            Some(r) => {
                let a = self.lines.offset(&self.text, r.start);
                let b = self.lines.offset(&self.text, r.end).max(a);
                self.text.replace_range(a..b, new_text);
            }
        }
        self.lines = LineIndex::new(&self.text);
    }

    pub fn position(&self, offset: usize) -> Position {
        self.lines.position(&self.text, offset)
    }
    pub fn offset(&self, pos: Position) -> usize {
        self.lines.offset(&self.text, pos)
    }
    pub fn range(&self, span: Span) -> Range {
        self.lines.range(&self.text, span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn utf16_columns_round_trip() {
        // `é` is 2 bytes / 1 UTF-16 unit; `𝄞` is 4 bytes / 2 units.
        let text = "; é 𝄞 x\r\nab\rcd\nlast";
        let li = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(li.position(text, x), pos(0, 7));
        assert_eq!(li.offset(text, pos(0, 7)), x);
        assert_eq!(li.offset(text, pos(0, 4)), text.find('𝄞').unwrap());
        assert_eq!(li.position(text, text.find("ab").unwrap()), pos(1, 0));
        assert_eq!(li.position(text, text.find("cd").unwrap()), pos(2, 0));
        assert_eq!(li.position(text, text.find("last").unwrap() + 2), pos(3, 2));
        for off in 0..=text.len() {
            if text.is_char_boundary(off) && !matches!(text.as_bytes().get(off), Some(b'\n')) {
                let p = li.position(text, off);
                let back = li.offset(text, p);
                // The `\n` of a CRLF maps to the line's end (the `\r`).
                assert!(back == off || (text.as_bytes()[back] == b'\r'), "{off} -> {p:?} -> {back}");
            }
        }
        // Clamping: inside a character, past a line's end, past the last line.
        assert_eq!(li.position(text, text.find('é').unwrap() + 1), pos(0, 2));
        assert_eq!(li.offset(text, pos(1, 99)), text.find("ab").unwrap() + 2);
        assert_eq!(li.offset(text, pos(99, 0)), text.len());
        assert_eq!(li.position(text, usize::MAX), pos(3, 4));
    }
}
