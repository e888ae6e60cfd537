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

/// The library is small (issue 29): its own dependencies are the core crates and `half`, and
/// kir-backend-ptx comes without its default `gpu` feature (cudarc) unless `kir`'s `gpu` asks for
/// it, which also brings cudarc for `kir::bind::Gpu` (issue 41). (`cargo tree -p kir -e normal` shows the whole tree.)
#[test]
fn the_library_depends_on_the_core_crates_only() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("kir/Cargo.toml")).unwrap();
    let section = |name: &str| -> Vec<String> {
        let Some(start) = manifest.find(&format!("\n[{name}]\n")) else { return Vec::new() };
        let body = &manifest[start + name.len() + 4..];
        let body = &body[..body.find("\n[").unwrap_or(body.len())];
        body.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| l.split(['=', '.', ' ']).next().unwrap().to_string())
            .collect()
    };
    let mut deps = section("dependencies");
    deps.sort();
    assert_eq!(deps, ["cudarc", "half", "kir-backend-ptx", "kir-interp", "kir-ir", "kir-passes"], "kir/Cargo.toml");
    // cudarc only with `gpu` (kir::bind::Gpu's device buffers), which also turns on the runner.
    assert!(manifest.contains("\ncudarc = { workspace = true, optional = true }\n"), "{manifest}");
    assert!(
        manifest.contains("gpu = [\"kir-backend-ptx/gpu\", \"dep:cudarc\"]"),
        "kir's `gpu` feature forwards to kir-backend-ptx and brings cudarc"
    );
    assert!(!manifest.contains("default = "), "kir has no default features");
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line =
        workspace.lines().find(|l| l.starts_with("kir-backend-ptx = ")).expect("the workspace names kir-backend-ptx");
    assert!(line.contains("default-features = false"), "{line}");
}
