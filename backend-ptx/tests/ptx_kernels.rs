//! The PTX of every kernel file in `kernels/`, loaded with its imports and emitted as written (calls
//! to library functions as `.func`s and `call`s, what `kir ptx` prints): an insta snapshot per file
//! (sm_80, with source-line comments), determinism, and acceptance by the real `ptxas` for sm_80
//! and sm_90 (skips without ptxas locally, fails with CI=true).

use kir_backend_ptx::{emit_module, tools, PtxOptions, SmVersion};
use std::path::PathBuf;

fn kernel_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no kernels in {}", dir.display());
    files
}

/// The module of a kernel file with the functions it imports.
fn load(path: &std::path::Path) -> kir_ir::Module {
    kir_ir::text::load::load_file(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.render(false))).module
}

fn emit(path: &PathBuf, sm: SmVersion) -> String {
    let src = std::fs::read_to_string(path).unwrap();
    let opts = PtxOptions { sm, source: Some(src.clone()), comments: true };
    emit_module(&kir_ir::verify::check(load(path)).unwrap_or_else(|d| panic!("{}: {d}", path.display())), &opts)
        .unwrap_or_else(|d| panic!("{}: {}", path.display(), kir_ir::diag::render(&d, "k", &src, false)))
}

#[test]
fn kernel_ptx_snapshots() {
    for f in kernel_files() {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let ptx = emit(&f, SmVersion::Sm80);
        assert_eq!(ptx, emit(&f, SmVersion::Sm80), "{stem}: emission is not deterministic");
        insta::assert_snapshot!(format!("ptx_{stem}"), ptx);
    }
}

#[test]
fn kernels_assemble_with_ptxas() {
    if tools::require_tool_or_skip("ptxas").is_none() {
        return;
    }
    for f in kernel_files() {
        for sm in [SmVersion::Sm80, SmVersion::Sm90] {
            let ptx = emit(&f, sm);
            let report = tools::run_ptxas(&ptx, sm).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            for k in &load(&f).kernels {
                let name = kir_backend_ptx::emit::ptx_ident(&k.name);
                assert!(
                    report.registers(&name).is_some(),
                    "{}: ptxas -v reported no registers for {name}:\n{}",
                    f.display(),
                    report.log
                );
            }
        }
    }
}
