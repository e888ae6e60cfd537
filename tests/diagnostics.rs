//! Snapshot tests of the diagnostics users read for malformed `.kir` files.
//!
//! Every file in `tests/malformed/` holds one problem (a few hold several, on purpose). Each is
//! parsed and checked like `kir check` does, and the rendered diagnostics are compared with the
//! committed snapshot `tests/snapshots/diagnostics__<name>.snap`. Every file must produce at least
//! one error, except `unreachable_block.kir`, which must produce exactly one warning and no error.

use kir::checks::check_module;
use kir_ir::diag::{render, Diagnostic, Severity};
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

/// Parse, then check: the diagnostics `kir check` would print.
fn diagnose(src: &str) -> Vec<Diagnostic> {
    match kir_ir::parse(src) {
        Ok(m) => check_module(&m),
        Err(diags) => diags,
    }
}

#[test]
fn malformed_inputs_render_located_diagnostics() {
    let files = malformed_files();
    assert!(files.len() >= 19, "expected the malformed corpus, found {} files", files.len());
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(&path).unwrap();
        let diags = diagnose(&src);
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
            assert!((span.end as usize) <= src.len(), "{name}: span past the end of the file: {d:?}");
        }
        let rel = format!("tests/malformed/{name}.kir");
        let rendered = render(&diags, &rel, &src, false);
        insta::assert_snapshot!(name.clone(), rendered);
    }
}

/// The well-formed kernels shipped in `kernels/` verify without errors or warnings.
#[test]
fn shipped_kernels_verify_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("kernels/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "kir"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let diags = diagnose(&src);
        let shown = render(&diags, &path.display().to_string(), &src, false);
        assert!(diags.is_empty(), "{} does not verify cleanly:\n{shown}", path.display());
    }
}
