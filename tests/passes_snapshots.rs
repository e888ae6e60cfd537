//! Snapshots of `kir opt FILE --print-ir-after-all` (default pipeline, `--verify-each`) for every
//! kernel file in `kernels/`: each pass's effect on the library, as a user sees it. Each dump must
//! also re-parse, and the final module must verify.

use std::path::Path;
use std::process::Command;

#[test]
fn print_ir_after_all_for_every_library_kernel() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("kernels/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "kir"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no kernels in kernels/");
    for f in files {
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_kir"))
            .args(["opt", "--verify-each", "--print-ir-after-all"])
            .arg(&f)
            .output()
            .expect("run kir");
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{stem}: kir opt failed\n{stderr}");
        let module = kir_ir::parse(&stdout).unwrap_or_else(|d| panic!("{stem}: output does not parse: {d:?}"));
        assert!(!kir_ir::diag::has_errors(&kir_ir::verify::verify_module(&module)), "{stem}: output does not verify");
        // Every dump is a kernel that parses on its own.
        for dump in stderr.split("*** IR Dump").skip(1) {
            let body = dump.split_once('\n').map(|(_, b)| b).unwrap_or("");
            kir_ir::parse(body).unwrap_or_else(|d| panic!("{stem}: a dump does not parse: {d:?}\n{body}"));
        }
        insta::assert_snapshot!(format!("opt_after_all_{stem}"), stderr);
    }
}
