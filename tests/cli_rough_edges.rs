//! Issue 27, item 6: rough edges a newcomer meets on the command line. Required options show as
//! required in `--help` (never `[default: ""]`); a diagnostic on a very long source line shows a
//! window around the span, not the whole line; an allocation the system refuses is an error naming
//! the buffer and its size, never an abort.

mod cli;
use cli::{kir, kir_in_dir};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kir-rough-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn help_shows_required_options_as_required() {
    let (code, out, err) = kir(&["run", "--help"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Grid size in blocks: X[,Y[,Z]] [required unless --graph]"), "{out}");
    assert!(out.contains("Block size in threads: X[,Y[,Z]] [required unless --graph]"), "{out}");
    // `kir diff` has the same launch options (one struct, cmd/run_options.rs).
    let (_, out, _) = kir(&["diff", "--help"]);
    assert!(out.contains("Grid size in blocks: X[,Y[,Z]] [required unless --graph]"), "{out}");
    // No command shows an empty default.
    for c in ["check", "fmt", "cfg", "test", "opt", "ptx", "run", "devices", "diff", "fuzz", "lsp"] {
        let (code, out, err) = kir(&[c, "--help"]);
        assert_eq!(code, 0, "kir {c} --help: {err}");
        assert!(!out.contains("[default: \"\"]"), "kir {c} --help:\n{out}");
    }
    // And leaving them out says so.
    let (code, _, err) = kir(&["run", "kernels/relu_backward.kir"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the following required arguments were not provided") && err.contains("--grid <GRID>"),
        "{err}"
    );
}

#[test]
fn a_diagnostic_on_a_very_long_line_shows_a_window_around_the_span() {
    let dir = scratch("long");
    // A 600-parameter signature with a bad type at its end.
    let params: Vec<String> = (0..600).map(|i| format!("%p{i}: u32")).collect();
    let sig = format!("kernel @k({}, %bad: u33) {{\nentry:\n  ret\n}}\n", params.join(", "));
    std::fs::write(dir.join("sig.kir"), &sig).unwrap();
    let (code, out, err) = kir_in_dir(&dir, &["check", "sig.kir"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    let all = out + &err;
    assert!(all.len() < 1024, "{} bytes:\n{all}", all.len());
    let col = sig.find("u33").unwrap() + 1;
    assert!(all.contains(&format!("sig.kir:1:{col}")), "the real column: {all}");
    assert!(all.contains("... u32, %p596: u32,") && all.contains("%bad: u33) {"), "{all}");
    // The caret is under `u33` in the shown window.
    let lines: Vec<&str> = all.lines().collect();
    let src = lines.iter().position(|l| l.starts_with("1 │ ...")).expect("the windowed line");
    let caret = lines[src + 1].find('^').unwrap();
    assert_eq!(&lines[src][caret..caret + 3], "u33", "{all}");

    // 100,000 nested parentheses on one line.
    let deep = format!(
        "kernel @k(%a: u32) {{\nentry:\n  %x = add.u32 {}{}\n  ret\n}}\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    std::fs::write(dir.join("deep.kir"), &deep).unwrap();
    let (code, out, err) = kir_in_dir(&dir, &["check", "deep.kir"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    let all = out + &err;
    assert!(all.len() < 1024, "{} bytes", all.len());
    assert!(all.contains("deep.kir:3:16") && all.contains("((((...\n"), "{all}");

    // Short lines are shown whole, as before.
    std::fs::write(dir.join("short.kir"), "kernel @k(%bad: u33) {\nentry:\n  ret\n}\n").unwrap();
    let (_, out, err) = kir_in_dir(&dir, &["check", "short.kir"], &[]);
    assert!((out + &err).contains("1 │ kernel @k(%bad: u33) {\n"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Three 2 GiB buffers under a 6 GB address-space limit: the third is refused, which must be an
/// error naming the argument and its size, promptly, not an abort.
#[test]
#[cfg(target_os = "linux")]
fn a_buffer_the_system_refuses_is_an_error_naming_it() {
    let dir = scratch("alloc");
    std::fs::write(
        dir.join("big.kir"),
        "kernel @k(%a: ptr<global, u8>, %b: ptr<global, u8>, %c: ptr<global, u8>) {\nentry:\n  ret\n}\n",
    )
    .unwrap();
    let g = 2u64 << 30;
    let script = format!(
        "ulimit -v 6000000 && exec '{}' run big.kir --grid 1 --block 1 --arg a=zeros:u8:{g} --arg b=zeros:u8:{g} --arg c=range:u8:{g}",
        env!("CARGO_BIN_EXE_kir")
    );
    let start = std::time::Instant::now();
    let out = std::process::Command::new("sh").arg("-c").arg(&script).current_dir(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert_ne!(out.status.code(), None, "killed by a signal (an abort): {err}");
    assert_ne!(out.status.code(), Some(134), "{err}");
    assert!(!err.contains("memory allocation of"), "{err}");
    assert!(err.contains("argument `"), "{err}");
    assert!(err.contains("cannot allocate 2147483648 bytes (2.0 GiB): the system refused the memory"), "{err}");
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
    std::fs::remove_dir_all(&dir).ok();
}
