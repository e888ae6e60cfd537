//! Source spans: byte ranges into the text a module was parsed from.
//!
//! Guarantees: a span is a half-open byte range `start..end` of the source file; [`Span::DUMMY`]
//! (0..0) marks entities created by passes rather than parsed, and diagnostics never point a caret
//! at it as if it were real source (they fall back to the enclosing entity).

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
        let end = (self.start as usize).min(source.len());
        source.as_bytes()[..end].iter().filter(|&&c| c == b'\n').count() + 1
    }
}
