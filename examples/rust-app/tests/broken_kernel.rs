//! A `.kir` file that does not pass `kir check` fails this crate's build with kir's located
//! diagnostic. Shown with the build script cargo compiled for this crate (`build.rs`, found next
//! to this build's `OUT_DIR`), run as cargo runs it — `OUT_DIR` set, in the package's directory —
//! but in a copy of the layout it reads (`../../kernels/`) whose `relu_backward.kir` is broken.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The build script that wrote this build's `OUT_DIR`: the newest `build-script-build` of this
/// package not newer than what it wrote.
fn build_script() -> PathBuf {
    let out_dir = Path::new(env!("OUT_DIR"));
    let written = std::fs::metadata(out_dir.join("relu_backward.rs")).unwrap().modified().unwrap();
    let build = out_dir.parent().unwrap().parent().unwrap();
    std::fs::read_dir(build)
        .unwrap()
        .map(|e| e.unwrap().path().join("build-script-build"))
        .filter(|p| p.parent().unwrap().file_name().unwrap().to_string_lossy().starts_with("rust-app-"))
        .filter(|p| p.metadata().and_then(|m| m.modified()).is_ok_and(|t| t <= written))
        .max_by_key(|p| p.metadata().unwrap().modified().unwrap())
        .unwrap_or_else(|| panic!("no build script of rust-app in {}", build.display()))
}

#[test]
fn a_kernel_file_that_fails_kir_check_fails_the_build_with_its_diagnostic() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    let scratch = std::env::temp_dir().join(format!("rust-app-broken-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(scratch.join("kernels/lib")).unwrap();
    std::fs::create_dir_all(scratch.join("examples/rust-app")).unwrap();
    for f in ["softmax.kir", "lib/reduce.kir"] {
        std::fs::copy(kernels.join(f), scratch.join("kernels").join(f)).unwrap();
    }
    // A comparison of a u32 with an f32 constant: the verifier rejects it.
    let good = std::fs::read_to_string(kernels.join("relu_backward.kir")).unwrap();
    let broken = good.replace("%inb = lt.u32 %i, %n", "%inb = lt.u32 %i, 1.5");
    assert_ne!(good, broken, "the line to break is in relu_backward.kir");
    std::fs::write(scratch.join("kernels/relu_backward.kir"), &broken).unwrap();
    let out_dir = scratch.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();

    let run = |dir: &Path| Command::new(build_script()).current_dir(dir).env("OUT_DIR", &out_dir).output().unwrap();
    let o = run(&scratch.join("examples/rust-app"));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let line = broken.lines().position(|l| l.contains("lt.u32 %i, 1.5")).unwrap() + 1;
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(&format!("┌─ ../../kernels/relu_backward.kir:{line}:")), "{stderr}");
    assert!(stderr.contains("%inb = lt.u32 %i, 1.5"), "the source line is shown: {stderr}");
    assert!(stderr.ends_with("error: kir::build: does not pass `kir check`; no bindings were generated\n"), "{stderr}");
    assert!(!out_dir.join("relu_backward.rs").exists(), "no bindings for a broken file");

    // Fixed, the same script generates both files and asks cargo to watch all three.
    std::fs::write(scratch.join("kernels/relu_backward.kir"), &good).unwrap();
    let o = run(&scratch.join("examples/rust-app"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for f in ["relu_backward.kir", "softmax.kir", "lib/reduce.kir"] {
        assert!(stdout.contains(&format!("cargo:rerun-if-changed=../../kernels/{f}\n")), "{stdout}");
    }
    assert!(out_dir.join("relu_backward.rs").exists() && out_dir.join("softmax.rs").exists());
    std::fs::remove_dir_all(&scratch).ok();
}
