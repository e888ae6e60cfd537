//! The filetests: every `.kir` file under `tests/filetests/` (except helper files in `imports/`
//! directories, which tests import) is run by `kir_harness::filetest` according to its `; test:` header
//! (docs/testing.md, "Filetests"), and every failure of every file is reported at once (file,
//! line, why).
//!
//! - `verify/`: the malformed-input corpus (one problem per file, a few with several) and verifier
//!   cases; `barriers/`: barrier and collective verification, `ok_*` (no diagnostic at all) and
//!   `bad_*` (whose every error must explain itself with labelled steps down to the source of
//!   divergence); `optimize/`: `kir opt` with FileCheck directives; `run/`: `kir test` launches with
//!   expectations; `fault/`: every runtime check of the interpreter on a small faulty kernel, each
//!   run stopping with the fault its `; fault:` line names, at the annotated line.
//! - The rendered diagnostics of each `verify` or `fault` file that has any are the text users read
//!   (for `fault/`, the interpreter's fault messages): they are compared with the committed
//!   snapshot `tests/snapshots/filetests__<dir>__<name>.snap`.
//! - The library kernels (`kernels/`, `kernels/lib/`) check cleanly, as `verify` files without
//!   annotations.
//! - The runner itself fails where it must: a wrong FileCheck line, a wrong or missing `; expect:`
//!   (the `verify` cases of this are unit tests in harness/src/filetest.rs).
//! - `kir check` exits 1 on a rejected barrier case and 0 on an accepted one; `kir opt
//!   --print-divergence` annotates every value and block.

use kir_harness::filetest::{Kind, Report, Runner};
use kir_ir::diag::Severity;
use std::path::{Path, PathBuf};
use std::process::Command;

const KIR: &str = env!("CARGO_BIN_EXE_kir");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.kir` file under `dir` (relative to the crate root), sorted, skipping `imports/`.
fn kir_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(root().join(&d)).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let e = e.unwrap();
            let rel = d.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                if e.file_name() != "imports" {
                    stack.push(rel);
                }
            } else if rel.extension().is_some_and(|x| x == "kir") {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// `verify/use_not_dominated.kir` → `verify__use_not_dominated`.
fn snapshot_name(rel: &Path) -> String {
    let inner = rel.strip_prefix("tests/filetests").unwrap().with_extension("");
    inner.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("__")
}

fn runner() -> Runner {
    Runner::new().with_kir_binary(KIR)
}

#[test]
fn every_filetest_passes() {
    // Relative paths (tests run in the crate root): they are what the diagnostics, and so the
    // snapshots, show.
    let files = kir_files(Path::new("tests/filetests"));
    let mut runner = runner();
    let mut failed: Vec<String> = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    let mut snapshot_failures = Vec::new();
    for rel in &files {
        let report = runner.run_file(rel);
        if let Some(k) = report.kind {
            *counts.entry(k.name()).or_insert(0usize) += 1;
        }
        let mut extra = barrier_explanations(rel, &report);
        if !report.passed() || !extra.is_empty() {
            let mut text = report.to_string();
            text.extend(extra.drain(..).map(|e| format!("{}: {e}\n", rel.display())));
            failed.push(text);
        }
        if let Some(v) = report.verified.as_ref().filter(|v| !v.rendered.is_empty()) {
            let name = snapshot_name(rel);
            let rendered = v.rendered.clone();
            // Every snapshot is compared (and every difference shown), not only the first.
            let check = std::panic::AssertUnwindSafe(|| insta::assert_snapshot!(name.clone(), rendered));
            if std::panic::catch_unwind(check).is_err() {
                snapshot_failures.push(format!("{}: rendered diagnostics differ from snapshot {name}", rel.display()));
            }
        }
    }
    failed.extend(snapshot_failures);
    // An emptied or misplaced directory must not pass silently.
    for (kind, at_least) in [("verify", 45), ("optimize", 15), ("run", 2), ("fault", 9)] {
        let n = counts.get(kind).copied().unwrap_or(0);
        if n < at_least {
            failed.push(format!("only {n} `test: {kind}` files, expected at least {at_least}"));
        }
    }
    assert!(failed.is_empty(), "{} of {} filetests failed:\n{}", failed.len(), files.len(), failed.join("\n"));
}

/// A rejected barrier case's errors explain themselves: each is an error with labelled steps.
fn barrier_explanations(rel: &Path, report: &Report) -> Vec<String> {
    let is_bad = rel.starts_with("tests/filetests/barriers")
        && rel.file_name().is_some_and(|n| n.to_string_lossy().starts_with("bad_"));
    let Some(v) = report.verified.as_ref().filter(|_| is_bad) else { return vec![] };
    let mut out = Vec::new();
    if v.diagnostics.is_empty() {
        out.push("a `bad_` barrier case must be rejected".to_string());
    }
    for d in &v.diagnostics {
        if d.severity != Severity::Error || d.secondary.is_empty() {
            out.push(format!("`{}` must be an error explaining itself with labelled steps", d.message));
        }
    }
    out
}

#[test]
fn library_kernels_check_cleanly() {
    let files = kir_files(Path::new("kernels"));
    assert!(files.iter().any(|p| p.ends_with("lib/reduce.kir")), "{files:?}");
    assert!(files.iter().any(|p| p.ends_with("rmsnorm.kir")), "the persistent decoder is among them");
    let mut runner = runner();
    let failed: Vec<String> = files
        .iter()
        .map(|f| runner.run_as(Kind::Verify, f, &std::fs::read_to_string(f).unwrap()))
        .filter(|r| !r.passed())
        .map(|r| r.to_string())
        .collect();
    assert!(failed.is_empty(), "library kernels that do not check cleanly:\n{}", failed.join("\n"));
}

/// Writes `text` to a fresh file `name` in a temporary directory.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kir-filetests-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const FOLDS: &str = "; test: optimize\n; passes: fold\nkernel @k(%out: ptr<global, u32>) {\nentry:\n  %a = add.u32 2, 3\n  store %out[0], %a\n  ret\n}\n";

#[test]
fn optimize_files_fail_on_a_wrong_check() {
    let good = temp_file("good.kir", &format!("{FOLDS}; check: store %out[0], 5\n"));
    let r = runner().run_file(&good);
    assert!(r.passed(), "{r}");
    let bad = temp_file("bad.kir", &format!("{FOLDS}; check: store %out[0], 6\n"));
    let r = runner().run_file(&bad);
    assert_eq!(r.failures.len(), 1, "{r}");
    assert!(r.failures[0].message.starts_with("FileCheck directives do not match"), "{r}");
    assert!(r.to_string().contains("store %out[0], 5"), "shows what kir opt printed: {r}");
    let none = temp_file("none.kir", FOLDS);
    assert!(runner().run_file(&none).to_string().contains("no FileCheck directives"));
    let failing = temp_file("failing.kir", &FOLDS.replace("; passes: fold", "; passes: nosuchpass"));
    assert!(runner().run_file(&failing).to_string().contains("kir opt failed"));
    let twice = temp_file("twice.kir", &format!("{FOLDS}; passes: dce\n; check: ret\n"));
    let r = runner().run_file(&twice);
    assert_eq!(r.failures[0].line, Some(9), "{r}");
}

const COPY: &str = "; test: run\nkernel @copy(%x: ptr<global, u32>, %y: ptr<global, u32>) {\nentry:\n  %i = tid.x\n  %v = load %x[%i]\n  store %y[%i], %v\n  ret\n}\n; run: @copy grid(1) block(4) x=range:u32:4 y=zeros:u32:4\n";

#[test]
fn run_files_fail_on_a_wrong_or_missing_expectation() {
    let good = temp_file("good_run.kir", &format!("{COPY}; expect: @copy y[0..4] == [0, 1, 2, 3]\n"));
    let r = runner().run_file(&good);
    assert!(r.passed(), "{r}");
    let wrong = temp_file("wrong_run.kir", &format!("{COPY}; expect: @copy y[0..4] == [0, 1, 2, 4]\n"));
    let r = runner().run_file(&wrong);
    assert_eq!(r.failures.len(), 1, "{r}");
    assert_eq!(r.failures[0].line, Some(9), "{r}");
    assert!(r.failures[0].message.contains("FAIL"), "{r}");
    let missing = temp_file("missing_run.kir", COPY);
    let r = runner().run_file(&missing);
    assert_eq!(r.failures.len(), 1, "{r}");
    assert_eq!(r.failures[0].line, Some(9));
    assert!(r.failures[0].message.contains("carries an `; expect:` line"), "{r}");
}

#[test]
fn kir_check_exit_codes() {
    let case = |name: &str| root().join("tests/filetests/barriers").join(name);
    let bad = Command::new(KIR).arg("check").arg(case("bad_bounds_exit.kir")).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("barrier must be reached by all threads of the block"), "{stderr}");
    let ok = Command::new(KIR).arg("check").arg(case("ok_leader_broadcast.kir")).output().unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    // Through a call: the error is in the function and names the call site.
    let bad = Command::new(KIR).arg("check").arg(case("bad_barrier_in_func_called_under_tid.kir")).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("`@sync_store` is called here from `@barrier_in_func` under a thread-dependent branch"),
        "{stderr}"
    );
    let ok = Command::new(KIR).arg("check").arg(case("ok_func_called_uniformly_twice.kir")).output().unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
}

#[test]
fn print_divergence_annotates_every_value_and_block() {
    let case = "tests/filetests/barriers/ok_leader_broadcast.kir";
    let out = Command::new(KIR)
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

    let bad = Command::new(KIR)
        .current_dir(root())
        .args([
            "opt",
            "--passes",
            "verify-barriers",
            "--print-divergence",
            "tests/filetests/barriers/bad_after_divergent_loop.kir",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr).into_owned();
    assert!(stderr.contains("depends on %i after divergent loop search"), "{stderr}");
    assert!(stderr.contains("barrier must be reached by all threads of the block"), "{stderr}");
}
