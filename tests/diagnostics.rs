//! Snapshot tests of the diagnostics users read for malformed `.kir` files.
//!
//! Every file in `tests/malformed/` holds one problem (a few hold several, on purpose). Each is
//! parsed and checked like `kir check` does, and the rendered diagnostics are compared with the
//! committed snapshot `tests/snapshots/diagnostics__<name>.snap`. Every file must produce at least
//! one error, except `unreachable_block.kir`, which must produce exactly one warning and no error.

use kir::checks::check_module;
use kir_ir::diag::{render_map, Diagnostic, Severity, SourceMap};
use std::path::{Path, PathBuf};

fn malformed_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/malformed exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "kir"))
        .collect();
    files.sort();
    files
}

/// Load (with imports, relative to `path`), then check: the diagnostics `kir check` would print,
/// and the files they point into.
fn diagnose(path: &str, src: &str) -> (Vec<Diagnostic>, SourceMap) {
    match kir_ir::text::load::load_source(Path::new(path), src.to_string()) {
        Ok(l) => (check_module(&l.module), l.sources),
        Err(e) => (e.diagnostics, e.sources),
    }
}

#[test]
fn malformed_inputs_render_located_diagnostics() {
    let files = malformed_files();
    assert!(files.len() >= 19, "expected the malformed corpus, found {} files", files.len());
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(&path).unwrap();
        let rel = format!("tests/malformed/{name}.kir");
        let (diags, sources) = diagnose(&rel, &src);
        let errors = diags.iter().filter(|d| d.severity == Severity::Error).count();
        let warnings = diags.iter().filter(|d| d.severity == Severity::Warning).count();
        if name == "unreachable_block" {
            assert_eq!((errors, warnings), (0, 1), "{name}: expected exactly one warning and no error");
        } else {
            assert!(errors >= 1, "{name}: expected at least one error, got {diags:?}");
        }
        for d in &diags {
            let span = d.span().unwrap_or_else(|| panic!("{name}: diagnostic without a location: {d:?}"));
            assert!(!span.is_dummy(), "{name}: diagnostic points at 0..0: {d:?}");
            let (file, range) = sources.locate(span).unwrap_or_else(|| panic!("{name}: span in no file: {d:?}"));
            let text = &sources.files[file].text;
            assert!(range.end <= text.len(), "{name}: span past the end of its file: {d:?}");
        }
        let rendered = render_map(&diags, &sources, false);
        insta::assert_snapshot!(name.clone(), rendered);
    }
}

/// The well-formed kernels shipped in `kernels/` verify without errors or warnings.
#[test]
fn shipped_kernels_verify_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut files: Vec<PathBuf> = Vec::new();
    for d in [dir.clone(), dir.join("lib")] {
        files.extend(
            std::fs::read_dir(&d)
                .expect("kernels/ and kernels/lib/ exist")
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "kir")),
        );
    }
    files.sort();
    assert!(files.iter().any(|p| p.ends_with("lib/reduce.kir")));
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let (diags, sources) = diagnose(&path.display().to_string(), &src);
        let shown = render_map(&diags, &sources, false);
        assert!(diags.is_empty(), "{} does not verify cleanly:\n{shown}", path.display());
    }
}
