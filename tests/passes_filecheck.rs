//! FileCheck-style tests of `kir opt`: every `tests/filecheck/*.kir` file holds its input, the
//! pipeline (`; passes: P`, the default pipeline when absent), extra arguments (`; args: ...`) and
//! the expected output as `; check:` / `; nextln:` / `; sameln:` / `; not:` lines (the `filecheck`
//! crate's directives). The checks are matched against what `kir opt` prints: stderr (dumps) then
//! stdout (the optimized module). Each test also requires exit code 0 and that the output module
//! parses and verifies.

use std::path::Path;
use std::process::Command;

fn directive<'a>(src: &'a str, key: &str) -> Option<&'a str> {
    src.lines().find_map(|l| l.trim().strip_prefix(';').map(str::trim).and_then(|l| l.strip_prefix(key)).map(str::trim))
}

fn run_file(path: &Path) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kir"));
    cmd.arg("opt").arg(path);
    if let Some(p) = directive(&src, "passes:") {
        cmd.arg("--passes").arg(p);
    }
    if let Some(a) = directive(&src, "args:") {
        cmd.args(a.split_whitespace());
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("kir opt failed ({}):\n{stderr}", out.status));
    }
    let module = kir_ir::parse(&stdout).map_err(|d| format!("output does not parse: {d:?}\n{stdout}"))?;
    let diags = kir_ir::verify::verify_module(&module);
    if kir_ir::diag::has_errors(&diags) {
        return Err(format!("output does not verify: {diags:?}\n{stdout}"));
    }
    let checker = filecheck::CheckerBuilder::new().text(&src).map_err(|e| format!("bad directives: {e}"))?.finish();
    if checker.is_empty() {
        return Err("no check directives".into());
    }
    let text = format!("{stderr}{stdout}");
    let (ok, explain) = checker.explain(&text, filecheck::NO_VARIABLES).map_err(|e| e.to_string())?;
    if ok {
        Ok(())
    } else {
        Err(format!("checks failed on:\n{text}\n--- explanation ---\n{explain}"))
    }
}

#[test]
fn filecheck_tests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filecheck");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/filecheck")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "kir"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "expected the filecheck test files, found {}", files.len());
    let mut failures = Vec::new();
    for f in &files {
        if let Err(e) = run_file(f) {
            failures.push(format!("=== {}\n{e}", f.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} filecheck tests failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
