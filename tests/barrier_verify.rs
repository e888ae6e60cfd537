//! Barrier-divergence verification as users meet it through `kir check`.
//!
//! - Every kernel shipped in `kernels/` (the seeds' persistent decoder among them) and every
//!   `tests/barrier_cases/ok_*.kir` passes `check_module` with no diagnostic at all.
//! - Every `tests/barrier_cases/bad_*.kir` gets barrier/collective errors, and their rendered form
//!   is compared with the committed snapshot `tests/snapshots/barrier_verify__<name>.snap`.
//! - The `kir check` binary exits 1 on a rejected case and 0 on an accepted one.
//! - Cases with device functions (`*func*`, `*call*`): a barrier or full-mask collective inside a
//!   function is checked at each call site, and the rendered error runs through the call site
//!   into the function (a label at every call on the way, the call that only some threads make
//!   named as such, a parameter's argument named at its call); a function called uniformly, or
//!   never called, is accepted.

use kir::checks::check_module;
use kir_ir::diag::{render, Severity};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn kir_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "kir"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    files.sort();
    files
}

/// Loads a file with its imports (the library kernels import `kernels/lib/`) and checks it; the
/// diagnostics are also returned rendered against every file they may point into.
fn diagnose(path: &Path) -> (String, Vec<kir_ir::Diagnostic>, String) {
    let src = std::fs::read_to_string(path).unwrap();
    let loaded = kir_ir::text::load::load_file(path)
        .unwrap_or_else(|e| panic!("{}: load failed:\n{}", path.display(), e.render(false)));
    let diags = check_module(&loaded.module);
    let rendered = kir_ir::diag::render_map(&diags, &loaded.sources, false);
    (src, diags, rendered)
}

#[test]
fn shipped_kernels_pass_barrier_verification() {
    let files = kir_files(&root().join("kernels"), "");
    assert!(
        files.iter().any(|p| p.ends_with("rmsnorm.kir")),
        "the persistent decoder (kernels/rmsnorm.kir) is among the accepted kernels"
    );
    for path in files {
        let (src, diags, rendered) = diagnose(&path);
        let barriers = src.lines().filter(|l| l.trim_start().starts_with("barrier")).count();
        assert!(diags.is_empty(), "{} ({barriers} barriers) should be accepted:\n{rendered}", path.display());
    }
}

#[test]
fn accepted_cases_have_no_diagnostics() {
    let files = kir_files(&root().join("tests/barrier_cases"), "ok_");
    assert!(files.len() >= 3);
    for path in files {
        let (_, diags, rendered) = diagnose(&path);
        assert!(diags.is_empty(), "{} should be accepted:\n{rendered}", path.display());
    }
}

#[test]
fn rejected_cases_render_explained_errors() {
    let files = kir_files(&root().join("tests/barrier_cases"), "bad_");
    assert!(files.len() >= 5);
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let (src, diags, _) = diagnose(&path);
        assert!(!diags.is_empty(), "{name} should be rejected");
        for d in &diags {
            assert_eq!(d.severity, Severity::Error, "{name}: {d:?}");
            assert!(d.span().is_some_and(|s| !s.is_dummy()), "{name}: unlocated diagnostic {d:?}");
            assert!(!d.secondary.is_empty(), "{name}: the error must explain itself with labelled steps: {d:?}");
        }
        let rendered = render(&diags, &format!("tests/barrier_cases/{name}.kir"), &src, false);
        insta::assert_snapshot!(name.clone(), rendered);
    }
}

#[test]
fn kir_check_exit_codes() {
    let bin = env!("CARGO_BIN_EXE_kir");
    let bad =
        Command::new(bin).arg("check").arg(root().join("tests/barrier_cases/bad_bounds_exit.kir")).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("barrier must be reached by all threads of the block"), "{stderr}");
    let ok = Command::new(bin)
        .arg("check")
        .arg(root().join("tests/barrier_cases/ok_leader_broadcast.kir"))
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    // Through a call: the error is in the function and names the call site.
    let bad = Command::new(bin)
        .arg("check")
        .arg(root().join("tests/barrier_cases/bad_barrier_in_func_called_under_tid.kir"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("`@sync_store` is called here from `@barrier_in_func` under a thread-dependent branch"),
        "{stderr}"
    );
    let ok = Command::new(bin)
        .arg("check")
        .arg(root().join("tests/barrier_cases/ok_func_called_uniformly_twice.kir"))
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
}

#[test]
fn print_divergence_annotates_every_value_and_block() {
    let bin = env!("CARGO_BIN_EXE_kir");
    let case = "tests/barrier_cases/ok_leader_broadcast.kir";
    let out = Command::new(bin)
        .current_dir(root())
        .args(["opt", "--passes", "verify-barriers", "--print-divergence", case])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // The broadcast value loaded after the barrier is uniform; the thread index is not.
    assert!(stderr.lines().any(|l| l.contains("%f = load %fp[0]") && l.ends_with("; U")), "{stderr}");
    assert!(stderr.lines().any(|l| l.contains("%tid = tid.x") && l.contains("; V")), "{stderr}");
    insta::assert_snapshot!("print_divergence_leader_broadcast", stderr);

    let bad = Command::new(bin)
        .current_dir(root())
        .args([
            "opt",
            "--passes",
            "verify-barriers",
            "--print-divergence",
            "tests/barrier_cases/bad_after_divergent_loop.kir",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr).into_owned();
    assert!(stderr.contains("depends on %i after divergent loop search"), "{stderr}");
    assert!(stderr.contains("barrier must be reached by all threads of the block"), "{stderr}");
}
