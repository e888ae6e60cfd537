//! Deep and wide inputs (issue 19 item 1, and the lexer/format items 3): the real `kir` binary on
//! generated files that used to overflow the stack (exit by SIGABRT) or were mishandled.
//!
//! Guarantees checked: a 100,000-block `jmp` chain is checked, emitted and analysed; a size
//! expression or an indexed operand nested past `kir_ir::text::ast::MAX_NESTING` is a located error that
//! names the limit; `kir fuzz --insts` above its maximum is a usage error naming it; a comment may
//! sit between a definition's name and its `=`; `kir fmt` keeps a comment written between
//! `kernel` and the kernel's name before that kernel. Sizes are chosen to overflow the 8 MiB main
//! stack before the fix while taking well under a second each in the test profile after it.

mod cli;
use cli::kir;
use std::path::PathBuf;

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kir-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `entry: jmp b1`, `b1: jmp b2`, ..., `bN: ret`.
fn chain(n: usize) -> String {
    let mut s = String::from("kernel @k(%p: ptr<global, u32>) {\nentry:\n  jmp b1\n");
    for i in 1..n {
        s.push_str(&format!("b{i}:\n  jmp b{}\n", i + 1));
    }
    s.push_str(&format!("b{n}:\n  ret\n}}\n"));
    s
}

#[test]
fn a_100000_block_chain_is_checked_emitted_and_analysed() {
    let path = temp_file("chain.kir", &chain(100_000));
    let p = path.to_str().unwrap();
    for args in [vec!["check", p], vec!["opt", "--passes", "verify-barriers", p], vec!["opt", "--print-divergence", p]]
    {
        let (code, _, stderr) = kir(&args);
        assert_eq!(code, 0, "kir {args:?} failed:\n{stderr}");
    }
    let (code, stdout, stderr) = kir(&["ptx", p]);
    assert_eq!(code, 0, "kir ptx failed:\n{stderr}");
    assert!(stdout.contains(".entry k("), "{}", &stdout[..stdout.len().min(400)]);
}

#[test]
fn size_expressions_nested_too_deep_are_a_located_error_naming_the_limit() {
    let depth = 100_000;
    let expr = format!("{}%n{}", "add(".repeat(depth), ", 1)".repeat(depth));
    let src = format!(
        "kernel @k(%x: ptr<global, f32>) {{\nentry:\n  ret\n}}\n\ngraph @g(%n: u64, %x: ptr<global, f32>) {{\n  temp %d: f32[{expr}]\n  launch @k grid(1) block(1) (%d)\n}}\n"
    );
    let path = temp_file("expr.kir", &src);
    let p = path.to_str().unwrap();
    for cmd in ["check", "fmt", "opt"] {
        let (code, _, stderr) = kir(&[cmd, p]);
        assert_eq!(code, 1, "kir {cmd}: {stderr}");
        assert!(stderr.contains("error: size expressions nested more than 256 levels deep"), "kir {cmd}: {stderr}");
        assert!(stderr.contains("expr.kir:7:"), "kir {cmd}: not located: {stderr}");
    }
    // 256 levels are fine.
    let ok = format!("{}%n{}", "add(".repeat(255), ", 1)".repeat(255));
    let path = temp_file("expr_ok.kir", &src.replace(&expr, &ok));
    let (code, _, stderr) = kir(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn indexed_operands_nested_too_deep_are_a_located_error() {
    let depth = 200_000;
    let operand = format!("{}%i{}", "%p[".repeat(depth), "]".repeat(depth));
    let src =
        format!("kernel @k(%p: ptr<global, u32>) {{\nentry:\n  %i = global_id.x\n  %v = load {operand}\n  ret\n}}\n");
    let path = temp_file("index.kir", &src);
    let (code, _, stderr) = kir(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("indexed operands nested more than 256 levels deep"), "{stderr}");
}

#[test]
fn fuzz_insts_above_the_maximum_is_a_usage_error_naming_it() {
    let (code, stdout, stderr) = kir(&["fuzz", "--cases", "1", "--insts", "1000000", "--no-ptxas", "--no-emu"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("--insts 1000000: at most 20000 instructions per kernel"), "{stderr}");
}

#[test]
fn a_comment_may_separate_a_definition_from_its_equals_sign() {
    let src = "kernel @k(%p: ptr<global, u32>) {\nentry:\n  %i = global_id.x\n  %t ; why\n  ; and more\n  = add.u32 %i, 1\n  %u\n  = add.u32 %t, 1\n  store %p[%i], %u\n  ret\n}\n";
    let path = temp_file("comment.kir", src);
    let p = path.to_str().unwrap();
    let (code, _, stderr) = kir(&["check", p]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = kir(&["fmt", p]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  %t = add.u32 %i, 1  ; why\n  ; and more\n"), "{stdout}");
}

#[test]
fn fmt_keeps_a_comment_between_kernel_and_its_name_before_that_kernel() {
    let src = "kernel ; about k\n  @k() {\nentry:\n  ret\n}\n\nkernel\n; about k2\n@k2() {\nentry:\n  ret\n}\n";
    let path = temp_file("kernel_comment.kir", src);
    let (code, stdout, stderr) = kir(&["fmt", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout, "; about k\nkernel @k() {\nentry:\n  ret\n}\n\n; about k2\nkernel @k2() {\nentry:\n  ret\n}\n",
        "{stdout}"
    );
}

/// `n` nested thread-dependent ifs: `l_i` branches on `tid.x > i` into `l_(i+1)` or its join
/// `j_i`; the innermost holds a barrier-free store; the joins unwind to `ret`.
fn nested_ifs(n: usize, barrier_at_end: bool) -> String {
    let mut s = String::from("kernel @k(%out: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  jmp l0\n");
    for i in 0..n {
        s.push_str(&format!("l{i}:\n  %c{i} = gt.u32 %t, {i}\n  br %c{i}, l{}, j{i}\n", i + 1));
    }
    s.push_str(&format!("l{n}:\n  store %out[0], %t\n  jmp j{}\n", n - 1));
    for i in (1..n).rev() {
        s.push_str(&format!("j{i}:\n  jmp j{}\n", i - 1));
    }
    s.push_str(if barrier_at_end { "j0:\n  barrier\n  ret\n}\n" } else { "j0:\n  ret\n}\n" });
    s
}

/// 30,000 nested thread-dependent branches: `kir check` used to run for minutes (quadratic) and
/// abort; it now ends quickly — accepting the kernel, whose barrier after the outermost join
/// every thread reaches, or, past the analysis' work budget, rejecting it with a note that says
/// the kernel was too large to analyse (never accepting a wrong one).
#[test]
fn thirty_thousand_nested_branches_end() {
    let path = temp_file("nested.kir", &nested_ifs(30_000, true));
    let (code, _, stderr) = kir(&["check", path.to_str().unwrap()]);
    assert!(
        code == 0 || (code == 1 && stderr.contains("too large")),
        "kir check: exit {code}\n{}",
        &stderr[..stderr.len().min(2000)]
    );
    let small = temp_file("nested_small.kir", &nested_ifs(200, true));
    let (code, _, stderr) = kir(&["check", small.to_str().unwrap()]);
    assert_eq!(code, 0, "200 nested ifs with a barrier after the outermost join are fine:\n{stderr}");
}
