//! `kir opt` as users run it: listing passes, output to a file, dump directories, statistics, and
//! the errors users see for bad pipelines, unknown passes and invalid input.

use std::process::{Command, Output};

fn kir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kir")).args(args).output().expect("run kir")
}

fn write_tmp(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("kir-opt-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const K: &str = "kernel @k(%out: ptr<global, u32>) {
entry:
  %a = add.u32 2, 3
  store %out[0], %a
  ret
}
";

#[test]
fn list_passes() {
    let o = kir(&["opt", "--list-passes"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for name in ["inline", "fold", "dce", "simplify-cfg", "licm", "unroll", "offsets", "cse", "layout"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(name)), "{name} missing:\n{text}");
    }
    assert!(text.contains("{approx}"), "{text}");
    assert!(
        text.contains(
            "Default pipeline: inline,fold,simplify-cfg,licm,unroll,fold,simplify-cfg,ivsr,offsets,cse,licm,dce,layout"
        ),
        "{text}"
    );
}

#[test]
fn output_file_holds_the_optimized_module() {
    let input = write_tmp("in.kir", K);
    let out = write_tmp("out.kir", "");
    let o = kir(&["opt", &input, "-o", &out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text, "kernel @k(%out: ptr<global, u32>) {\nentry:\n  store %out[0], 5\n  ret\n}\n");
}

#[test]
fn dump_dir_and_stats() {
    let input = write_tmp("stats.kir", K);
    let dir = std::env::temp_dir().join(format!("kir-opt-cli-dumps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = kir(&["opt", &input, "--stats", "--time-passes", "--dump-dir", dir.to_str().unwrap()]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    // `inline` comes first; without a call it has nothing to do.
    assert!(err.contains(" 1. inline (changed 0 kernels)\n 2. fold (changed 1 kernel)\n"), "{err}");
    assert!(err.contains(" 2. fold (changed 1 kernel)\n             1  instructions folded\n"), "{err}");
    assert!(err.contains("*** Pass execution timing ***"), "{err}");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "00-input.kir",
            "01-inline.kir",
            "02-fold.kir",
            "03-simplify-cfg.kir",
            "04-licm.kir",
            "05-unroll.kir",
            "06-fold.kir",
            "07-simplify-cfg.kir",
            "08-ivsr.kir",
            "09-offsets.kir",
            "10-cse.kir",
            "11-licm.kir",
            "12-dce.kir",
            "13-layout.kir"
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const WITH_FUNCS: &str = "func @twice(%x: u32) -> u32 {
entry:
  %y = add.u32 %x, %x
  ret %y
}

kernel @k(%out: ptr<global, u32>) {
entry:
  %v = call @twice(21)
  store %out[0], %v
  ret
}
";

#[test]
fn functions_are_inlined_first_and_dumped() {
    let input = write_tmp("funcs.kir", WITH_FUNCS);
    let dir = std::env::temp_dir().join(format!("kir-opt-cli-func-dumps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = kir(&[
        "opt",
        &input,
        "--verify-each",
        "--stats",
        "--print-ir-after",
        "inline",
        "--dump-dir",
        dir.to_str().unwrap(),
    ]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{err}");
    // The result: the function stays; the kernel has no call and the constant is folded through it.
    assert_eq!(
        out,
        "func @twice(%x: u32) -> u32 {\nentry:\n  %y = add.u32 %x, %x\n  ret %y\n}\n\n\
         kernel @k(%out: ptr<global, u32>) {\nentry:\n  store %out[0], 42\n  ret\n}\n"
    );
    // The dump after `inline` shows the inlined kernel, then the function.
    assert!(err.contains("*** IR Dump After inline (kernel @k) ***\nkernel @k(%out: ptr<global, u32>) {\nentry:\n  jmp twice.entry\n"), "{err}");
    assert!(err.contains("  %twice.y = add.u32 21, 21\n"), "{err}");
    assert!(err.contains("*** IR Dump After inline (function @twice) ***"), "{err}");
    assert!(err.contains(" 1. inline (changed 1 kernel)\n             1  calls inlined\n"), "{err}");
    // Each dump file is the whole module, functions included.
    let inlined = std::fs::read_to_string(dir.join("01-inline.kir")).unwrap();
    assert!(inlined.starts_with("func @twice(") && !inlined.contains("call @"), "{inlined}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_users_see() {
    let input = write_tmp("err.kir", K);
    let bad = write_tmp("bad.kir", "kernel @bad(%out: ptr<global, u32>) {\nentry:\n  store %out[0], %nope\n  ret\n}\n");
    let invalid = write_tmp(
        "invalid.kir",
        "kernel @inv(%out: ptr<global, u32>, %c: pred) {\nentry:\n  br %c, a, b\na:\n  %x = add.u32 1, 2\n  jmp b\nb:\n  store %out[0], %x\n  ret\n}\n",
    );
    let mut report = String::new();
    for (title, args) in [
        ("unknown pass", vec!["opt", input.as_str(), "--passes", "fold,constprop"]),
        ("unknown option", vec!["opt", input.as_str(), "--passes", "fold{fast}"]),
        ("unknown pass to print after", vec!["opt", input.as_str(), "--print-ir-after=folding"]),
        ("syntax error in the input", vec!["opt", bad.as_str()]),
        ("input that does not verify", vec!["opt", invalid.as_str()]),
        ("missing file", vec!["opt", "/nonexistent/x.kir"]),
    ] {
        let o = kir(&args);
        let dir = std::env::temp_dir().join(format!("kir-opt-cli-{}", std::process::id()));
        let stderr = String::from_utf8_lossy(&o.stderr).replace(dir.to_str().unwrap(), "$TMP");
        report.push_str(&format!("== {title}: exit {:?}\n{stderr}\n", o.status.code()));
        assert!(!o.status.success(), "{title}");
        assert!(o.stdout.is_empty(), "{title}: printed output on failure");
    }
    insta::assert_snapshot!("opt_errors", report);
}

#[test]
fn print_unroll_reports_each_loop() {
    let o = kir(&["opt", "kernels/gemm_tiled.kir", "--print-unroll", "-o", "/dev/null"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("note: loop `inner` of @gemm_tiled fully unrolled: 16 trips, 119 instructions copied"),
        "{err}"
    );
    assert!(err.contains("note: loop `step` of @gemm_tiled not unrolled"), "{err}");
    assert!(err.contains("= partial unrolling: it holds a barrier, a warp collective or a call"), "{err}");
    assert!(
        err.contains("note: loop `loop` of @gemm_naive unrolled by 4: main loop `loop.by4` in front of it"),
        "{err}"
    );
    // Without the flag the pipeline says nothing.
    let o = kir(&["opt", "kernels/gemm_tiled.kir", "-o", "/dev/null"]);
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `kir opt` works on a checked module: input that verifies but fails barrier verification (what
/// `kir check`, `kir ptx` and `kir run` refuse) is refused before any pass, with the checks'
/// located diagnostics, and nothing is printed on stdout.
#[test]
fn input_that_fails_kir_check_is_refused() {
    let f = "tests/filetests/barriers/bad_after_divergent_loop.kir";
    let o = Command::new(env!("CARGO_BIN_EXE_kir"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["opt", "--passes", "fold", f])
        .output()
        .expect("run kir");
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: the module fails `kir check`; no pass was run\n"), "{err}");
    assert!(err.contains("error: barrier must be reached by all threads of the block"), "{err}");
    assert!(err.contains("bad_after_divergent_loop.kir:25:3"), "{err}");
}
