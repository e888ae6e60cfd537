//! Open documents: their text, the line index that converts positions, and the analysis of the
//! current text.
//!
//! Guarantees:
//! - Positions ([`Position`], [`Range`]: kir's, converted to and from the protocol's only in
//!   [`super::to_proto`] and [`super::from_proto`]) count lines and UTF-16 code units, as LSP
//!   positions do (the protocol's default encoding, the only one the server advertises). [`LineIndex::position`] and [`LineIndex::offset`] convert byte
//!   offsets and positions both ways, exactly for every offset on a character boundary; lines end
//!   at LF, CRLF or a bare CR, as the protocol counts them.
//! - Nothing here panics on out-of-range input: an offset past the end (or inside a character) is
//!   clamped to the end (or to the character's start); a position past the end of its line is the
//!   line's end, and a line past the last is the end of the text.
//! - [`Analysis::new`] never panics on any text: it parses, runs `kir check`'s checks
//!   ([`kir::ir::verify::check_keeping`]) when the module parses, and builds the name index from the
//!   syntax tree when the text is syntactically valid (also when lowering reports errors).
//! - A document with a file path ([`Analysis::at`], from a `file:` URI) is loaded as `kir` loads
//!   a file ([`kir::ir::text::load::load_source`]): its `import` lines are resolved relative to its
//!   directory (an imported file open in the editor is read from its unsaved text, others from
//!   disk: [`Analysis::at_with`]), the module holds the imported functions, and
//!   `kir check` runs on that module. The [`SourceMap`] puts the document at offset 0 and every
//!   imported file past it, so a diagnostic's span says which file it lies in
//!   ([`Analysis::locate`]); calls of imported functions resolve in the name index. Without a
//!   path (an unsaved buffer) an `import` is an error at its line, as `kir::ir::text::parse` reports it.
//! - What features point at is a [`Place`]: a span of a file of the analysis, or the start of a
//!   file on disk.

use super::symbols::{External, Index};
use kir::ir::diag::{Diagnostic, SourceMap};
use kir::ir::text::ast::{AstItem, AstModule};
use kir::ir::text::load::file_key;
use kir::ir::verify::Verified;
use kir::ir::Span;
use std::path::{Path, PathBuf};

/// A position in a text: a line (from 0) and a column in UTF-16 code units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

/// A range of positions, `end` not included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

/// What a feature points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// A span of file `file` of the analysis (0: the document, else an imported file), local to
    /// that file's text.
    Span { file: usize, span: Span },
    /// The start of a file on disk (an `import` line's file that was not loaded).
    FileStart(PathBuf),
}

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

/// A file the document imports, directly or through other files, as the loader read it.
pub struct ImportedFile {
    /// Its index in [`Analysis::sources`] (at least 1: the document is file 0).
    pub file: usize,
    /// Where it is on disk (canonical when it exists).
    pub path: PathBuf,
    /// Its name relative to the document's directory (`lib/reduce.kir`), for messages.
    pub shown: String,
    pub lines: LineIndex,
    /// Its syntax tree (spans local to its own text), when it parses.
    pub ast: Option<AstModule>,
    /// The files it imports directly (indices into [`Analysis::sources`]).
    pub imports: Vec<usize>,
}

/// An `import` line of the document.
pub struct ImportLine {
    /// The whole line (`import "lib/reduce.kir"`).
    pub span: Span,
    /// The path as written, without the quotes.
    pub written: String,
    /// The file it names (relative to the document's directory; canonical when it exists);
    /// `None` without a document path.
    pub resolved: Option<PathBuf>,
    /// The index in [`Analysis::sources`] of the file, when it was loaded.
    pub file: Option<usize>,
    /// Every file the line brings in: its file and those it imports, directly or not.
    pub brings: Vec<usize>,
}

/// What the server knows about one version of a document.
pub struct Analysis {
    /// The lowered module, when the text parses (and its imports load): with the imported
    /// functions in [`kir::ir::Module::funcs`]; [`Verified`] when the verifier accepts it (then
    /// hovers read the uniformity it computes once), else as lowered. See [`Analysis::module`].
    pub module: Option<Result<Verified, kir::ir::Module>>,
    /// The syntax tree, when the text is syntactically valid.
    pub ast: Option<kir::ir::text::ast::AstModule>,
    /// Parse and load errors, or every diagnostic of `kir check`. Spans are in
    /// [`Analysis::sources`]' offsets: those of an imported file lie past the document's text.
    pub diagnostics: Vec<Diagnostic>,
    /// Names: definitions and uses (empty without a syntax tree).
    pub index: Index,
    /// The document's path, for a `file:` URI.
    pub path: Option<PathBuf>,
    /// The document (file 0) and the files it imports, as loaded.
    pub sources: SourceMap,
    /// The imported files, in the order of [`Analysis::sources`] (`imported[i].file == i + 1`).
    pub imported: Vec<ImportedFile>,
    /// The document's `import` lines, in order.
    pub imports: Vec<ImportLine>,
}

impl Analysis {
    /// The lowered module (verified or not), when the text parses.
    pub fn module(&self) -> Option<&kir::ir::Module> {
        match self.module.as_ref()? {
            Ok(v) => Some(v.module()),
            Err(m) => Some(m),
        }
    }

    /// The module, when the verifier accepts it.
    pub fn verified(&self) -> Option<&Verified> {
        self.module.as_ref()?.as_ref().ok()
    }
}

impl Analysis {
    /// The analysis of a text without a file path (imports cannot be resolved).
    pub fn new(text: &str) -> Analysis {
        Analysis::at(text, None)
    }

    /// The analysis of a text that is (the unsaved content of) the file at `path`, when given:
    /// imports are resolved relative to its directory and read from disk.
    pub fn at(text: &str, path: Option<&Path>) -> Analysis {
        Analysis::at_with(text, path, &|_| None)
    }

    /// [`Analysis::at`] where imported files that `open` has text for (by [`file_key`]: the
    /// editor's open documents) are loaded from that text, not from disk.
    pub fn at_with(text: &str, path: Option<&Path>, open: &dyn Fn(&Path) -> Option<String>) -> Analysis {
        let ast = kir::ir::text::parse::parse_ast(text).ok();
        let Some(path) = path else {
            let (module, diagnostics) = match kir::ir::parse(text) {
                Ok(m) => {
                    let (d, m) = kir::ir::verify::check_keeping(m);
                    (Some(m), d)
                }
                Err(d) => (None, d),
            };
            let index = ast.as_ref().map(Index::build).unwrap_or_default();
            let imports = ast.as_ref().map(|a| import_lines(a, None, &[])).unwrap_or_default();
            return Analysis {
                module,
                ast,
                diagnostics,
                index,
                path: None,
                sources: SourceMap::single("", text),
                imported: vec![],
                imports,
            };
        };
        let (module, diagnostics, mut sources) =
            match kir::ir::text::load::load_source_with(path, text.to_string(), open) {
                Ok(l) => {
                    let (d, m) = kir::ir::verify::check_keeping(l.module);
                    (Some(m), d, l.sources)
                }
                Err(e) => (None, e.diagnostics, e.sources),
            };
        if sources.files.is_empty() {
            sources = SourceMap::single(&path.display().to_string(), text);
        }
        let imported = imported_files(&sources);
        let imports = ast.as_ref().map(|a| import_lines(a, Some(path), &imported)).unwrap_or_default();
        let externals: Vec<External> = imported
            .iter()
            .flat_map(|f| {
                let items = f.ast.as_ref().map(|a| a.items.as_slice()).unwrap_or(&[]);
                items.iter().filter_map(move |i| match i {
                    AstItem::Func(k) => {
                        Some(External { name: k.name.node.to_string(), file: f.file, def: k.name.span, full: k.span })
                    }
                    _ => None,
                })
            })
            .collect();
        let index = ast.as_ref().map(|a| Index::build_with(a, &externals)).unwrap_or_default();
        Analysis { module, ast, diagnostics, index, path: Some(path.to_path_buf()), sources, imported, imports }
    }

    /// The analysis of a text whose analysis failed (panicked): one error saying so.
    pub fn failed() -> Analysis {
        let d = Diagnostic::error("internal error: kir could not analyze this file (please report it)");
        Analysis {
            module: None,
            ast: None,
            diagnostics: vec![d],
            index: Index::default(),
            path: None,
            sources: SourceMap::default(),
            imported: vec![],
            imports: vec![],
        }
    }

    /// The file a span of [`Analysis::sources`] lies in (0: the document) and its range there;
    /// `None` for a span without a place. A span outside every file is the document's.
    pub fn locate(&self, span: Span) -> Option<(usize, Span)> {
        if span.is_dummy() {
            return None;
        }
        match self.sources.locate(span) {
            Some((0, _)) | None => Some((0, span)),
            Some((j, r)) => Some((j, Span::new(r.start, r.end))),
        }
    }

    /// The place of a span in [`Analysis::sources`]' offsets (a diagnostic's): in the document
    /// or in the imported file it lies in; `None` for a span without a place.
    pub fn place(&self, span: Span) -> Option<Place> {
        self.locate(span).map(|(file, span)| Place::Span { file, span })
    }

    /// An imported file by its index in [`Analysis::sources`].
    pub fn imported_file(&self, file: usize) -> Option<&ImportedFile> {
        file.checked_sub(1).and_then(|i| self.imported.get(i)).filter(|f| f.file == file)
    }

    /// The text of file `file` of [`Analysis::sources`] (0: the document as analyzed).
    pub fn file_text(&self, file: usize) -> Option<&str> {
        self.sources.files.get(file).map(|f| f.text.as_str())
    }

    /// The document's `import` line through which file `file` came in (the first one).
    pub fn import_line_for(&self, file: usize) -> Option<&ImportLine> {
        self.imports.iter().find(|i| i.brings.contains(&file))
    }
}

/// The imported files of a load (every file of `sources` after the first), with their import
/// edges resolved as the loader resolves them (relative to the importing file's directory).
fn imported_files(sources: &SourceMap) -> Vec<ImportedFile> {
    let Some(main) = sources.files.first() else { return vec![] };
    let main_path = file_key(Path::new(&main.name));
    let main_dir = Path::new(&main.name).parent().map(Path::to_path_buf).unwrap_or_default();
    let mut out: Vec<ImportedFile> = sources
        .files
        .iter()
        .enumerate()
        .skip(1)
        .map(|(j, f)| {
            let shown = Path::new(&f.name)
                .strip_prefix(&main_dir)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| f.name.clone());
            ImportedFile {
                file: j,
                path: file_key(Path::new(&f.name)),
                shown,
                lines: LineIndex::new(&f.text),
                ast: kir::ir::text::parse::parse_ast(&f.text).ok(),
                imports: vec![],
            }
        })
        .collect();
    let paths: Vec<PathBuf> = std::iter::once(main_path).chain(out.iter().map(|f| f.path.clone())).collect();
    for f in &mut out {
        let dir = f.path.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(ast) = &f.ast {
            for (written, _) in kir::ir::text::load::imports_of(ast) {
                let target = file_key(&dir.join(&written));
                if let Some(j) = paths.iter().position(|p| *p == target) {
                    if !f.imports.contains(&j) {
                        f.imports.push(j);
                    }
                }
            }
        }
    }
    out
}

/// The `import` lines of the document, each with the files it brings in.
fn import_lines(ast: &AstModule, path: Option<&Path>, imported: &[ImportedFile]) -> Vec<ImportLine> {
    let dir = path.map(|p| file_key(p).parent().map(Path::to_path_buf).unwrap_or_default());
    let mut out = vec![];
    for item in &ast.items {
        let AstItem::Import(imp) = item else { continue };
        let resolved = dir.as_ref().map(|d| file_key(&d.join(imp.path.node.as_str())));
        let file = resolved.as_ref().and_then(|r| imported.iter().find(|f| f.path == *r)).map(|f| f.file);
        let mut brings = vec![];
        let mut stack: Vec<usize> = file.into_iter().collect();
        while let Some(j) = stack.pop() {
            if j == 0 || brings.contains(&j) {
                continue;
            }
            brings.push(j);
            if let Some(f) = j.checked_sub(1).and_then(|i| imported.get(i)) {
                stack.extend(f.imports.iter().rev());
            }
        }
        out.push(ImportLine { span: imp.span, written: imp.path.node.to_string(), resolved, file, brings });
    }
    out
}

/// An open document.
pub struct Document {
    pub version: i32,
    pub text: String,
    pub lines: LineIndex,
    pub analysis: Analysis,
}

impl Document {
    /// A document without a file path (imports cannot be resolved).
    pub fn new(text: String, version: i32) -> Document {
        Document::at(text, version, None)
    }

    /// A document that is (the unsaved content of) the file at `path`, when given.
    pub fn at(text: String, version: i32, path: Option<&Path>) -> Document {
        Document::at_with(text, version, path, &|_| None)
    }

    /// [`Document::at`] with the text of other open documents ([`Analysis::at_with`]).
    pub fn at_with(
        text: String,
        version: i32,
        path: Option<&Path>,
        open: &dyn Fn(&Path) -> Option<String>,
    ) -> Document {
        let lines = LineIndex::new(&text);
        let analysis = Analysis::at_with(&text, path, open);
        Document { version, text, lines, analysis }
    }

    /// Whether this document's analysis loaded the file whose [`file_key`] is `key` as an import.
    pub fn imports_file(&self, key: &Path) -> bool {
        self.analysis.imported.iter().any(|f| f.path == key)
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

    #[test]
    fn an_unsaved_buffer_reports_its_imports_and_keeps_its_names() {
        let text = "import \"lib/r.kir\"\nkernel @k() {\nentry:\n  ret\n}\n";
        let a = Analysis::new(text);
        assert!(a.module.is_none());
        assert_eq!(a.diagnostics.len(), 1);
        assert_eq!(a.locate(a.diagnostics[0].span().unwrap()).map(|(f, _)| f), Some(0));
        assert_eq!(a.imports.len(), 1);
        assert!(a.imports[0].resolved.is_none());
        // The kernel after the import is item 1: its names resolve in its own scope.
        assert_eq!(a.index.items.len(), 2);
        assert!(a.index.global("k").is_some());
    }
}
