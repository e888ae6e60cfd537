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
    for name in ["fold", "dce", "simplify-cfg"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(name)), "{name} missing:\n{text}");
    }
    assert!(text.contains("{approx}"), "{text}");
    assert!(text.contains("Default pipeline: fold,simplify-cfg,dce"), "{text}");
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
    assert!(err.contains(" 1. fold (changed 1 kernel)\n             1  instructions folded\n"), "{err}");
    assert!(err.contains("*** Pass execution timing ***"), "{err}");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["00-input.kir", "01-fold.kir", "02-simplify-cfg.kir", "03-dce.kir"]);
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
