//! Runs the check of `kir/examples/check_in_cargo_test.rs` as a real `#[test]`, the way a user's crate
//! would.

#[path = "../kir/examples/check_in_cargo_test.rs"]
mod example;

#[test]
fn relu_backward_matches_reference() -> Result<(), kir::api::Error> {
    example::relu_backward_matches_reference()
}

/// The library's examples are a downstream crate's code: they name no crate but `kir` and `std`
/// (the crates below the facade are `kir::ir`, `kir::passes`, `kir::ptx`, `kir::interp`), as
/// docs/api.md says.
#[test]
fn the_library_examples_use_only_kir() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kir/examples");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for krate in [
                "kir_ir",
                "kir_passes",
                "kir_backend_ptx",
                "kir_interp",
                "kir_ptx_emu",
                "kir_harness",
                "kir_cli",
                "half::",
                "cudarc",
            ] {
                assert!(
                    !code.contains(krate),
                    "{}:{}: names `{krate}`, not through `kir`: {line}",
                    path.display(),
                    i + 1
                );
            }
        }
        seen += 1;
    }
    assert!(seen >= 3, "found the examples of {}", dir.display());
}
