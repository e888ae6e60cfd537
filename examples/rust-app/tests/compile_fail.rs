//! Wrong arguments to a generated `launch` do not compile, and the compiler says why — checked the
//! way trybuild checks it, without building the dependencies again: each `tests/ui/NAME.rs` is
//! compiled by `rustc` against this crate's library as cargo built it for this test (the newest
//! `librust_app-*.rlib` next to the test binary, not newer than it), must fail, and its error
//! output (paths made relative) must be `tests/ui/NAME.stderr`. `TRYBUILD=overwrite` writes the
//! `.stderr` files instead, as with trybuild.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The library this test binary was linked with: the newest `librust_app-*.rlib` in its
/// directory that is not newer than the binary.
fn library() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    let built = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).unwrap();
    let exe_time = built(&exe);
    let rlib = std::fs::read_dir(&deps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("librust_app-") && name.ends_with(".rlib")
        })
        .filter(|p| built(p) <= exe_time)
        .max_by_key(|p| built(p))
        .unwrap_or_else(|| panic!("no librust_app-*.rlib in {} (build the crate with cargo)", deps.display()));
    (rlib, deps)
}

/// `rustc`'s errors for `file`, with the machine's paths replaced: `$OUT_DIR` for the generated
/// bindings' directory.
fn compile(file: &Path, rlib: &Path, deps: &Path, out: &Path) -> (bool, String) {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let o = Command::new(rustc)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--edition", "2021", "--crate-type", "bin", "--color", "never", "-o"])
        .arg(out)
        .arg("--extern")
        .arg(format!("rust_app={}", rlib.display()))
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg(file)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run rustc");
    let text = String::from_utf8_lossy(&o.stderr).replace(env!("OUT_DIR"), "$OUT_DIR");
    (o.status.success(), text)
}

#[test]
fn wrong_arguments_are_compile_errors_with_these_messages() {
    let (rlib, deps) = library();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = std::env::temp_dir().join(format!("rust-app-ui-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root.join("tests/ui"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 3, "{cases:?}");
    let overwrite = std::env::var("TRYBUILD").is_ok_and(|v| v == "overwrite");
    let mut failures = Vec::new();
    for case in &cases {
        let rel = case.strip_prefix(root).unwrap();
        let (ok, stderr) = compile(rel, &rlib, &deps, &scratch.join("out"));
        let expected_path = case.with_extension("stderr");
        if ok {
            failures.push(format!("{}: compiled, but must not", rel.display()));
            continue;
        }
        if overwrite {
            std::fs::write(&expected_path, &stderr).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != stderr {
            failures.push(format!(
                "{}: the compiler's message is not {}:\n--- expected\n{expected}\n--- got\n{stderr}",
                rel.display(),
                expected_path.strip_prefix(root).unwrap().display()
            ));
        }
    }
    std::fs::remove_dir_all(&scratch).ok();
    assert!(failures.is_empty(), "{}\n(TRYBUILD=overwrite writes the .stderr files)", failures.join("\n\n"));
}
