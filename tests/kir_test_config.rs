//! `kir-test.toml`, the per-directory settings of `kir test` (docs/testing.md, "Settings"): the
//! nearest one at or above a file's directory applies, `strict = true` makes its files strict as
//! `--strict` does, files elsewhere are not affected, and a malformed one is a located error.

mod cli;
use cli::{kir, kir_in_dir};
use kir_harness::directives::{find_test_config, parse_test_config, TEST_CONFIG_NAME};
use std::path::{Path, PathBuf};

/// One `; run:` and no `; expect:`: `unverified`, unless strict.
const UNCHECKED: &str = "; run: @ids grid(1) block(32) out=zeros:u32:32\n\
                         kernel @ids(%out: ptr<global, u32>) {\nentry:\n  %i = tid.x\n  store %out[%i], %i\n  ret\n}\n";

const NOT_CHECKED: &str = "no `; expect:` line: the outputs were not checked (--strict)";

/// A fresh directory tree for one test:
/// `ROOT/strict/kir-test.toml` (`strict = true`) with `strict/a.kir` and `strict/deep/b.kir`,
/// `ROOT/strict/lenient/kir-test.toml` (`strict = false`) with `lenient/c.kir`, and
/// `ROOT/outside/d.kir` under no config. Returns ROOT.
fn tree(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("kir-test-config-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&root).ok();
    for d in ["strict/deep", "strict/lenient", "outside"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("strict").join(TEST_CONFIG_NAME), "# the library\nstrict = true\n").unwrap();
    std::fs::write(root.join("strict/lenient").join(TEST_CONFIG_NAME), "strict = false  # drafts\n").unwrap();
    for f in ["strict/a.kir", "strict/deep/b.kir", "strict/lenient/c.kir", "outside/d.kir"] {
        std::fs::write(root.join(f), UNCHECKED).unwrap();
    }
    root
}

/// The tree must not sit below some other kir-test.toml (a stray /tmp/kir-test.toml would change
/// what "outside" means): checked rather than assumed.
fn assert_nothing_above(root: &Path) {
    assert_eq!(find_test_config(&root.join("outside/d.kir")), None, "a {TEST_CONFIG_NAME} above {}", root.display());
}

#[test]
fn strict_by_config_fails_an_unchecked_row_with_the_strict_message() {
    let root = tree("strict");
    assert_nothing_above(&root);
    let (code, out, err) = kir_in_dir(&root, &["test", "strict/a.kir"], &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "FAIL  strict/a.kir:1 @ids grid(1) block(32) interp\n    {NOT_CHECKED}\n    (strict by `strict = true` at strict/kir-test.toml:2)\n"
        )),
        "{out}"
    );
    let last = out.lines().last().unwrap_or_default();
    assert!(last.contains(" passed, 1 failed, ") && !last.contains("without expectation"), "{out}");
    // Found from a subdirectory too, walking up.
    let (code, out, _) = kir_in_dir(&root, &["test", "strict/deep/b.kir"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("FAIL  strict/deep/b.kir:1 @ids grid(1) block(32) interp\n    {NOT_CHECKED}")),
        "{out}"
    );
    // With --strict as well, the row says only what --strict says.
    let (code, out, _) = kir_in_dir(&root, &["test", "--strict", "strict/a.kir"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("    {NOT_CHECKED}\n")) && !out.contains("strict by"), "{out}");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn files_outside_or_under_a_nearer_lenient_config_are_not_affected() {
    let root = tree("outside");
    assert_nothing_above(&root);
    // Outside every config: unverified, exit 0.
    let (code, out, _) = kir_in_dir(&root, &["test", "outside/d.kir"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("] unverified outside/d.kir:1 @ids grid(1) block(32) interp\n"), "{out}");
    assert!(out.contains("(1 without expectation), 0 failed"), "{out}");
    // The nearest config wins: strict/lenient/ says `strict = false`.
    let (code, out, _) = kir_in_dir(&root, &["test", "strict/lenient/c.kir"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("] unverified strict/lenient/c.kir:1 @ids"), "{out}");
    // One run over the whole tree: only the two files under the strict config fail.
    let (code, out, _) = kir_in_dir(&root, &["test", "."], &[]);
    assert_eq!(code, 1, "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.contains("FAIL")).collect();
    assert_eq!(failed.len(), 2, "{out}");
    assert!(failed.iter().all(|l| l.contains("strict/a.kir:1") || l.contains("strict/deep/b.kir:1")), "{out}");
    assert!(out.contains("(2 without expectation), 2 failed"), "{out}");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn a_malformed_config_is_a_located_error() {
    let root = tree("malformed");
    let cases = [
        ("strict = yes\n", "strict/kir-test.toml:1:10: `strict` must be `true` or `false`, not `yes`"),
        ("# ok\n  strickt = true\n", "strict/kir-test.toml:2:3: unknown key `strickt` (the one key is `strict`)"),
        ("strict = true\nstrict = true\n", "strict/kir-test.toml:2:1: `strict` is set twice (first on line 1)"),
        ("[test]\nstrict = true\n", "strict/kir-test.toml:1:1: tables are not supported"),
        ("strict\n", "strict/kir-test.toml:1:1: expected `KEY = VALUE` (e.g. `strict = true`), found `strict`"),
    ];
    for (text, want) in cases {
        std::fs::write(root.join("strict").join(TEST_CONFIG_NAME), text).unwrap();
        // Any file under it: the error comes before any test runs, with exit 2.
        for file in ["strict/a.kir", "strict/deep/b.kir", "."] {
            let (code, out, err) = kir_in_dir(&root, &["test", file], &[]);
            assert_eq!(code, 2, "{text:?} {file}: {out}\n{err}");
            assert!(err.starts_with(&format!("error: {want}")), "{text:?} {file}: {err}");
            assert!(!out.contains("passed"), "nothing runs: {out}");
        }
        // A file that the malformed config does not cover still runs.
        let (code, out, _) = kir_in_dir(&root, &["test", "outside/d.kir"], &[]);
        assert_eq!(code, 0, "{out}");
    }
    // Not UTF-8: an error too, naming the file.
    std::fs::write(root.join("strict").join(TEST_CONFIG_NAME), b"strict = \xff\n").unwrap();
    let (code, _, err) = kir_in_dir(&root, &["test", "strict/a.kir"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: strict/kir-test.toml: cannot read: "), "{err}");
    std::fs::remove_dir_all(&root).ok();
}

/// The library is strict by its own kir-test.toml (kernels/lib/ included), so the README's
/// `kir test kernels/` fails a directive that expects nothing, without `--strict`; every directive
/// of the library has an expectation, so it passes.
#[test]
fn the_kernel_library_is_strict_by_config() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let cfg = find_test_config(&lib.join("relu_backward.kir")).expect("kernels/kir-test.toml");
    assert_eq!(cfg, lib.join(TEST_CONFIG_NAME));
    assert!(parse_test_config(&std::fs::read_to_string(&cfg).unwrap()).unwrap().strict);
    assert_eq!(find_test_config(&lib.join("lib/reduce.kir")), Some(cfg), "kernels/lib/ too");
    let (code, out, _) = kir(&["test", "kernels/relu_backward.kir"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("unverified") && !out.contains("without expectation"), "{out}");
}
