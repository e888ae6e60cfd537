//! Loading a `.kir` file with its imports: `import "lib/reduce.kir"` makes the functions of that
//! file (and of the files it imports) callable.
//!
//! Guarantees:
//! - An import path is relative to the directory of the importing file. Each file is read and
//!   lowered once per load, however many files import it (a diamond is fine); its functions join
//!   the module once. Only functions are imported: an imported file's kernels and graphs (its own
//!   tests, say) are not part of the importing module.
//! - Every file of the load has its own range of span offsets in the returned [`SourceMap`] (the
//!   loaded file first, at 0), so every span of the module — including those inside imported
//!   functions — and every diagnostic renders against the right file ([`crate::diag::render_map`]).
//! - Errors are located diagnostics, never panics: a missing or unreadable file, a directory, a
//!   device or FIFO (`import "/dev/zero"` is refused before reading), a file that is not UTF-8 or fails to parse (the errors in it, in that file), an import cycle (named file by
//!   file, at the import that closes it), a function name defined by two files (at the second
//!   definition, with the first), and imports nested deeper than [`MAX_IMPORT_DEPTH`].
//! - [`load_source_with`] takes the text of some files from its caller instead of the disk (an
//!   editor's open, unsaved documents); everything else is as [`load_source`], which is it with no
//!   such file.
//! - The depth of nested imports is bounded ([`MAX_IMPORT_DEPTH`]) and the total text is bounded
//!   by the 4 GiB span space; nothing recurses on input size.

use crate::diag::{Diagnostic, SourceMap};
use crate::ir::Module;
use crate::span::Span;
use crate::text::ast::{AstItem, AstModule};
use crate::text::parse::{lower_module, parse_ast, FuncSig, FuncSigs};
use std::path::{Path, PathBuf};

/// The note of a name clash between files.
const SHARED_NAMES: &str = "function names are shared by a file and everything it imports; rename one";

/// The deepest chain of nested imports accepted.
pub const MAX_IMPORT_DEPTH: usize = 64;

/// A loaded program: the module and the files its spans point into.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub module: Module,
    pub sources: SourceMap,
}

/// A failed load: the diagnostics and the files they point into.
#[derive(Clone, Debug)]
pub struct LoadError {
    pub diagnostics: Vec<Diagnostic>,
    pub sources: SourceMap,
}

impl LoadError {
    /// The diagnostics rendered against their files.
    pub fn render(&self, color: bool) -> String {
        crate::diag::render_map(&self.diagnostics, &self.sources, color)
    }
}

/// Reads and loads the file at `path` (named `path` as given in diagnostics).
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let text = read_regular_file(path, 0).map_err(|e| LoadError {
        diagnostics: vec![Diagnostic::error(match e {
            ReadError::Io(e) => format!("cannot read `{}`: {e}", path.display()),
            ReadError::Not(what) => format!("cannot read `{}`: {what}", path.display()),
        })],
        sources: SourceMap::default(),
    })?;
    let text = String::from_utf8(text).map_err(|e| LoadError {
        diagnostics: vec![Diagnostic::error(format!(
            "`{}` is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))],
        sources: SourceMap::default(),
    })?;
    load_source(path, text)
}

/// Loads source `text` as if it were the file at `path` (an editor's unsaved buffer): imports are
/// resolved relative to `path`'s directory.
pub fn load_source(path: &Path, text: String) -> Result<Loaded, LoadError> {
    load_source_with(path, text, &|_| None)
}

/// [`load_source`] where some files have text that is not (yet) on disk: an imported file whose
/// identity ([`file_key`]: the canonical path, or the path as written when the file does not
/// exist) `open` gives text for is loaded from that text instead of being read (what an editor
/// holds open and unsaved).
pub fn load_source_with(
    path: &Path,
    text: String,
    open: &dyn Fn(&Path) -> Option<String>,
) -> Result<Loaded, LoadError> {
    let mut l =
        Loader { sources: SourceMap::default(), files: Vec::new(), stack: Vec::new(), errors: Vec::new(), open };
    let name = path.display().to_string();
    let key = file_key(path);
    let main = l.load(key, name, text);
    if !l.errors.is_empty() {
        l.errors.sort_by_key(|d| d.span().map(|s| s.start).unwrap_or(0));
        return Err(LoadError { diagnostics: l.errors, sources: l.sources });
    }
    let Some(main) = main else {
        return Err(LoadError { diagnostics: vec![Diagnostic::error("load failed")], sources: l.sources });
    };
    let mut module = l.files[main].module.take().unwrap_or_default();
    // The imported functions, each file once, in load order (callees' files first).
    let imported = l.closure(main);
    for f in imported {
        if let Some(m) = &l.files[f].module {
            module.funcs.extend(m.funcs.iter().cloned());
        }
    }
    Ok(Loaded { module, sources: l.sources })
}

/// The identity of a file: its canonical path when it exists (so `a/../b.kir` and `b.kir` are one
/// file), else the path as given.
pub fn file_key(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

struct FileEntry {
    key: PathBuf,
    /// The lowered module (with spans at this file's base); `None` while loading or on failure.
    module: Option<Module>,
    /// Files this one imports directly (indices).
    imports: Vec<usize>,
}

struct Loader<'o> {
    /// Text for files that is not read from disk (see [`load_source_with`]).
    open: &'o dyn Fn(&Path) -> Option<String>,
    sources: SourceMap,
    files: Vec<FileEntry>,
    /// Files being loaded, outermost first, with the import span that led to the next one.
    stack: Vec<(usize, Span)>,
    errors: Vec<Diagnostic>,
}

impl Loader<'_> {
    /// Loads one file (already read) and, first, its imports. Returns its index.
    fn load(&mut self, key: PathBuf, name: String, text: String) -> Option<usize> {
        let Some(base) = self.sources.add(name, text) else {
            self.errors.push(Diagnostic::error("the program's files total more than 4 GiB"));
            return None;
        };
        let file_no = self.sources.files.len() - 1;
        let index = self.files.len();
        self.files.push(FileEntry { key: key.clone(), module: None, imports: Vec::new() });
        let text = self.sources.files[file_no].text.clone();
        let shift = |s: Span| if s.is_dummy() { s } else { Span { start: s.start + base, end: s.end + base } };
        let ast = match parse_ast(&text) {
            Ok(a) => a,
            Err(d) => {
                self.errors.push(shift_diag(d, &shift));
                return None;
            }
        };
        // Imports first: their functions' signatures are needed to type calls.
        let dir = key.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut ok = true;
        for item in &ast.items {
            let AstItem::Import(imp) = item else { continue };
            let span = shift(imp.span);
            let path_span = shift(imp.path.span);
            match self.import(&dir, &imp.path.node, index, span, path_span) {
                Some(i) => {
                    if !self.files[index].imports.contains(&i) {
                        self.files[index].imports.push(i);
                    }
                }
                None => ok = false,
            }
        }
        if !ok {
            return None;
        }
        let closure = self.closure(index);
        let mut sigs = FuncSigs::default();
        let mut defined_in: std::collections::HashMap<String, Span> = std::collections::HashMap::new();
        for f in &closure {
            let Some(m) = &self.files[*f].module else { continue };
            for func in &m.funcs {
                if let Some(prev) = defined_in.get(&func.name) {
                    self.errors.push(
                        Diagnostic::error(format!("function `@{}` is defined by two imported files", func.name))
                            .at(func.span, "defined again here")
                            .with_label(*prev, "first defined here")
                            .with_note(SHARED_NAMES),
                    );
                    ok = false;
                    continue;
                }
                defined_in.insert(func.name.clone(), func.span);
                sigs.insert(func.name.clone(), FuncSig::of(func));
            }
        }
        if !ok {
            return None;
        }
        match lower_module(&ast, &sigs) {
            Ok(mut m) => {
                for k in m.kernels.iter_mut().chain(&mut m.funcs) {
                    k.map_spans(shift);
                }
                // (Graphs stay at the spans of their file: only the loaded file's graphs, at base
                // 0, are part of the module.)
                for f in &m.funcs {
                    if let Some(prev) = defined_in.get(&f.name) {
                        self.errors.push(
                            Diagnostic::error(format!("function `@{}` is also defined by an import", f.name))
                                .at(f.span, "defined here")
                                .with_label(*prev, "imported definition")
                                .with_note(SHARED_NAMES),
                        );
                    }
                }
                self.files[index].module = Some(m);
                Some(index)
            }
            Err(ds) => {
                self.errors.extend(ds.into_iter().map(|d| shift_diag(d, &shift)));
                None
            }
        }
    }

    /// Reads an imported file from disk as UTF-8 text; on failure the located error is recorded.
    fn read_import(&mut self, full: &Path, shown: &str, path_span: Span) -> Option<String> {
        let bytes = match read_regular_file(full, self.sources.next_base()) {
            Ok(b) => b,
            Err(ReadError::Io(e)) => {
                let mut d = Diagnostic::error(format!("cannot read imported file `{shown}`: {e}"))
                    .at(path_span, "imported here");
                if e.kind() == std::io::ErrorKind::NotFound {
                    d = d.with_note("import paths are relative to the directory of the importing file");
                }
                self.errors.push(d);
                return None;
            }
            Err(ReadError::Not(what)) => {
                self.errors
                    .push(Diagnostic::error(format!("cannot import `{shown}`: {what}")).at(path_span, "imported here"));
                return None;
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                self.errors.push(
                    Diagnostic::error(format!(
                        "imported file `{shown}` is not UTF-8 text (invalid byte at offset {})",
                        e.utf8_error().valid_up_to()
                    ))
                    .at(path_span, "imported here"),
                );
                return None;
            }
        };
        Some(text)
    }

    /// Resolves and loads one import of file `from`; `span` is the import line.
    fn import(&mut self, dir: &Path, path: &str, from: usize, span: Span, path_span: Span) -> Option<usize> {
        if path.is_empty() {
            self.errors
                .push(Diagnostic::error("empty import path").at(path_span, "expected a file, e.g. \"lib/reduce.kir\""));
            return None;
        }
        let full = dir.join(path);
        let key = file_key(&full);
        let shown = display_name(&self.sources.files[from].name, path);
        // A file on the stack of files being loaded: a cycle.
        let on_stack = self.stack.iter().position(|(f, _)| self.files[*f].key == key);
        if on_stack.is_some() || self.files[from].key == key {
            let start = on_stack.unwrap_or(self.stack.len());
            let mut chain: Vec<String> =
                self.stack[start..].iter().map(|(f, _)| self.sources.files[*f].name.clone()).collect();
            chain.push(self.sources.files[from].name.clone());
            chain.push(shown.clone());
            let mut d = Diagnostic::error(format!("import cycle: {}", chain.join(" -> ")))
                .at(span, "this import closes the cycle")
                .with_note("files may not import each other in a circle; move the shared functions into a third file");
            for (_, s) in &self.stack[start..] {
                d = d.with_label(*s, "imported here");
            }
            self.errors.push(d);
            return None;
        }
        if let Some(i) = self.files.iter().position(|f| f.key == key) {
            return self.files[i].module.is_some().then_some(i);
        }
        if self.stack.len() >= MAX_IMPORT_DEPTH {
            self.errors.push(
                Diagnostic::error(format!("imports nested more than {MAX_IMPORT_DEPTH} files deep"))
                    .at(span, "one import too many"),
            );
            return None;
        }
        let text = match (self.open)(&key) {
            Some(text) => text,
            None => self.read_import(&full, &shown, path_span)?,
        };
        self.stack.push((from, span));
        let r = self.load(key, shown, text);
        self.stack.pop();
        // Said once, at the loaded file's own import line (not at every level of a chain).
        if r.is_none() && self.stack.is_empty() && !self.errors.iter().any(|d| d.span() == Some(path_span)) {
            self.errors.push(
                Diagnostic::error(format!("imported file `{path}` has errors"))
                    .at(path_span, "imported here")
                    .with_note("the errors in it are listed with this one"),
            );
        }
        r
    }

    /// The files `f` imports, directly or not, each once, dependencies first (not `f` itself).
    fn closure(&self, f: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = vec![false; self.files.len()];
        seen[f] = true;
        // Iterative post-order over the import graph (which has no cycles by now).
        let mut stack: Vec<(usize, usize)> = vec![(f, 0)];
        while let Some(&mut (x, ref mut next)) = stack.last_mut() {
            match self.files[x].imports.get(*next) {
                Some(&y) => {
                    *next += 1;
                    if !seen[y] {
                        seen[y] = true;
                        stack.push((y, 0));
                    }
                }
                None => {
                    if x != f {
                        out.push(x);
                    }
                    stack.pop();
                }
            }
        }
        out
    }
}

enum ReadError {
    Io(std::io::Error),
    /// Not a file kir reads: a directory, a device, a FIFO, or too large.
    Not(String),
}

/// Reads a regular file whose text still fits the span space after `base` (so `import
/// "/dev/zero"` or a FIFO is an error, not an endless read). The size is checked before reading,
/// and the read itself stops past the limit (a file that grows meanwhile).
fn read_regular_file(path: &Path, base: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(ReadError::Io)?;
    if meta.is_dir() {
        return Err(ReadError::Not("it is a directory".into()));
    }
    if !meta.is_file() {
        return Err(ReadError::Not("not a regular file (a FIFO, socket or device)".into()));
    }
    let room = (u32::MAX as u64 - 1).saturating_sub(base);
    if meta.len() > room {
        return Err(ReadError::Not(format!("the program's files would total more than 4 GiB ({} bytes)", meta.len())));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(ReadError::Io)?.take(room + 1).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > room {
        return Err(ReadError::Not("the program's files would total more than 4 GiB".into()));
    }
    Ok(bytes)
}

/// The name an imported file gets in diagnostics: its path next to the importing file's name.
fn display_name(importer: &str, path: &str) -> String {
    let dir = Path::new(importer).parent().unwrap_or(Path::new(""));
    dir.join(path).display().to_string()
}

fn shift_diag(mut d: Diagnostic, shift: &impl Fn(Span) -> Span) -> Diagnostic {
    if let Some(p) = &mut d.primary {
        p.span = shift(p.span);
    }
    for s in &mut d.secondary {
        s.span = shift(s.span);
    }
    d
}

/// The import lines of a syntax tree, as written.
pub fn imports_of(ast: &AstModule) -> Vec<(String, Span)> {
    ast.items
        .iter()
        .filter_map(|i| match i {
            AstItem::Import(imp) => Some((imp.path.node.to_string(), imp.span)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TempDir(PathBuf);
    impl TempDir {
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir_with(files: &[(&str, &str)]) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = TempDir(std::env::temp_dir().join(format!(
            "kir-load-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )));
        for (name, text) in files {
            let p = d.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    const LIB: &str = "func @twice(%x: u32) -> u32 {\nentry:\n  %y = add.u32 %x, %x\n  ret %y\n}\n";

    #[test]
    fn imported_functions_are_callable_and_spans_find_their_file() {
        let d = dir_with(&[
            ("lib/a.kir", LIB),
            (
                "main.kir",
                "import \"lib/a.kir\"\nkernel @k(%p: ptr<global, u32>) {\nentry:\n  %v = call @twice(3)\n  store %p[0], %v\n  ret\n}\n",
            ),
        ]);
        let l = load_file(&d.path().join("main.kir")).unwrap_or_else(|e| panic!("{}", e.render(false)));
        assert_eq!(l.module.funcs.len(), 1);
        assert!(crate::verify::verify_module(&l.module).iter().all(|d| !d.is_error()));
        let f = &l.module.funcs[0];
        let (file, _) = l.sources.locate(f.span).unwrap();
        assert!(l.sources.files[file].name.ends_with("lib/a.kir"), "{}", l.sources.files[file].name);
        assert!(l.sources.position(f.span).unwrap().ends_with("lib/a.kir:1:6"), "{:?}", l.sources.position(f.span));
    }

    #[test]
    fn a_cycle_is_named_at_the_import_that_closes_it() {
        let d = dir_with(&[("a.kir", "import \"b.kir\"\n"), ("b.kir", "import \"a.kir\"\n")]);
        let e = load_file(&d.path().join("a.kir")).unwrap_err();
        let text = e.render(false);
        assert!(text.contains("import cycle"), "{text}");
        assert!(text.contains("b.kir:1:1"), "{text}");
    }

    #[test]
    fn errors_inside_an_imported_file_are_shown_in_that_file() {
        let d = dir_with(&[
            ("lib.kir", "func @f(%x: u32) -> u32 {\nentry:\n  %y = bogus.u32 %x\n  ret %y\n}\n"),
            ("main.kir", "import \"lib.kir\"\n"),
        ]);
        let e = load_file(&d.path().join("main.kir")).unwrap_err();
        let text = e.render(false);
        assert!(text.contains("lib.kir:3:8"), "{text}");
        assert!(text.contains("unknown op `bogus.u32`"), "{text}");
    }

    #[test]
    fn a_missing_file_and_a_name_clash_are_located() {
        let d = dir_with(&[("main.kir", "import \"nope.kir\"\n")]);
        let text = load_file(&d.path().join("main.kir")).unwrap_err().render(false);
        assert!(text.contains("cannot read imported file") && text.contains("main.kir:1:8"), "{text}");

        let d = dir_with(&[("lib.kir", LIB), ("main.kir", &format!("import \"lib.kir\"\n{LIB}"))]);
        let text = load_file(&d.path().join("main.kir")).unwrap_err().render(false);
        assert!(text.contains("also defined by an import"), "{text}");
        assert!(text.contains("main.kir:2:6"), "{text}");
    }

    #[test]
    fn a_diamond_loads_each_file_once() {
        let d = dir_with(&[
            ("base.kir", LIB),
            ("l.kir", "import \"base.kir\"\nfunc @l(%x: u32) -> u32 {\nentry:\n  %y = call @twice(%x)\n  ret %y\n}\n"),
            ("r.kir", "import \"base.kir\"\nfunc @r(%x: u32) -> u32 {\nentry:\n  %y = call @twice(%x)\n  ret %y\n}\n"),
            ("main.kir", "import \"l.kir\"\nimport \"r.kir\"\n"),
        ]);
        let l = load_file(&d.path().join("main.kir")).unwrap_or_else(|e| panic!("{}", e.render(false)));
        let mut names: Vec<&str> = l.module.funcs.iter().map(|f| f.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["l", "r", "twice"]);
    }

    #[test]
    fn a_chain_of_imports_deeper_than_the_limit_is_an_error_not_a_stack_overflow() {
        let n = MAX_IMPORT_DEPTH + 5;
        let files: Vec<(String, String)> = (0..n)
            .map(|i| {
                let next = if i + 1 < n { format!("import \"f{}.kir\"\n", i + 1) } else { String::new() };
                (format!("f{i}.kir"), next)
            })
            .collect();
        let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let d = dir_with(&refs);
        let e = load_file(&d.path().join("f0.kir")).unwrap_err();
        let text = e.render(false);
        assert!(text.contains(&format!("imports nested more than {MAX_IMPORT_DEPTH} files deep")), "{text}");
        assert_eq!(e.diagnostics.len(), 2, "the limit, and one note at the first import: {text}");
        // A chain within the limit loads.
        let ok: Vec<(String, String)> = (0..10)
            .map(|i| {
                let next = if i + 1 < 10 { format!("import \"g{}.kir\"\n", i + 1) } else { LIB.to_string() };
                (format!("g{i}.kir"), next)
            })
            .collect();
        let refs: Vec<(&str, &str)> = ok.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let d = dir_with(&refs);
        let l = load_file(&d.path().join("g0.kir")).unwrap_or_else(|e| panic!("{}", e.render(false)));
        assert_eq!(l.module.funcs.len(), 1);
        assert_eq!(l.sources.files.len(), 10);
    }

    #[test]
    fn devices_and_directories_are_refused_before_reading() {
        let d = dir_with(&[("main.kir", "import \"/dev/zero\"\nimport \"sub\"\n"), ("sub/x.kir", "")]);
        let text = load_file(&d.path().join("main.kir")).unwrap_err().render(false);
        assert!(text.contains("cannot import `/dev/zero`: not a regular file"), "{text}");
        assert!(text.contains("it is a directory"), "{text}");
    }

    #[test]
    fn the_loaded_file_itself_must_be_a_regular_file() {
        let text = load_file(Path::new("/dev/zero")).unwrap_err().render(false);
        assert!(text.contains("cannot read `/dev/zero`: not a regular file"), "{text}");
    }
}
