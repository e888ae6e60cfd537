//! Source spans: byte ranges into the text a module was parsed from.
//!
//! Guarantees: a span is a half-open byte range `start..end` of the source file; [`Span::DUMMY`]
//! (0..0) marks entities created by passes rather than parsed, and diagnostics never point a caret
//! at it as if it were real source (they fall back to the enclosing entity).
//! - [`line_col`] and [`LineIndex`] are the one conversion from byte offsets to 1-based lines
//!   (ending at `\n`) and columns (in characters), used by every `file:line:col` the tools print.
//!   (The language server counts lines and UTF-16 columns as its protocol does, in its own index.)

/// A half-open byte range `start..end` in the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const DUMMY: Span = Span { start: 0, end: 0 };

    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }
    pub fn is_dummy(self) -> bool {
        self == Span::DUMMY
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        if self.is_dummy() {
            return other;
        }
        if other.is_dummy() {
            return self;
        }
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
    /// 1-based line number of the span's start in `source`.
    pub fn line(self, source: &str) -> usize {
        line_col(source, self.start as usize).0
    }
}

/// The 1-based line and column of byte `offset` in `source` (clamped to its end). Lines end at
/// `\n`; the column counts the characters that start on the line before `offset`, plus one.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before = &source.as_bytes()[..offset.min(source.len())];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let line_start = before.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
    // Non-continuation bytes are the starts of characters.
    let col = before[line_start..].iter().filter(|&&c| c & 0xc0 != 0x80).count() + 1;
    (line, col)
}

/// Byte offsets of line starts, for many [`line_col`] line look-ups in one text (each a binary
/// search).
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    pub fn new(source: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(source.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i as u32 + 1));
        LineIndex { starts }
    }
    /// The 1-based line of byte `offset` (as [`line_col`] counts it).
    pub fn line(&self, offset: u32) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_characters_after_the_last_newline() {
        let src = "ab\né🙂x\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 2), (1, 3));
        assert_eq!(line_col(src, 3), (2, 1));
        assert_eq!(line_col(src, 3 + 2 + 4), (2, 3));
        assert_eq!(line_col(src, 1000), (3, 1));
        let index = LineIndex::new(src);
        for at in 0..=src.len() {
            assert_eq!(index.line(at as u32), line_col(src, at).0, "offset {at}");
        }
    }
}
