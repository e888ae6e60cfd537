//! `kir cfg`: a kernel's CFG as Graphviz DOT (blocks labelled with their instructions, branch edges
//! marked T/F), and clear errors when the kernel is ambiguous or missing.

mod cli;
use cli::kir;

#[test]
fn dot_of_relu_backward() {
    let (code, out, err) = kir(&["cfg", "kernels/relu_backward.kir"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn kernel_choice_is_required_and_checked() {
    let (code, _, err) = kir(&["cfg", "kernels/activations.kir"]);
    assert_eq!(code, 1);
    assert!(err.contains("choose one with --kernel"), "{err}");
    let (code, _, err) = kir(&["cfg", "kernels/activations.kir", "--kernel", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("no kernel `@nope`") && err.contains("@relu_forward"), "{err}");
    let (code, out, _) = kir(&["cfg", "kernels/activations.kir", "--kernel", "@gelu_backward"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("digraph \"gelu_backward\""), "{out}");
    // A file with no kernel at all says so (it used to offer `--kernel ()`).
    let dir = std::env::temp_dir().join(format!("kir-cfg-none-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("none.kir");
    std::fs::write(&f, "; only a comment\n").unwrap();
    let (code, _, err) = kir(&["cfg", f.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 1);
    assert_eq!(err, format!("error: {}: this file has no kernel\n", f.display()));
}

/// A file that is not UTF-8 is an error located at the first bad byte, for every command.
#[test]
fn invalid_utf8_is_located() {
    let dir = std::env::temp_dir().join(format!("kir-cfg-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.kir");
    std::fs::write(&f, b"kernel @k() {\nentry:\n  ret \xff\n}\n").unwrap();
    let path = f.to_str().unwrap();
    for cmd in ["check", "cfg", "fmt", "ptx"] {
        let (code, _, err) = kir(&[cmd, path]);
        assert_eq!(code, 1, "{cmd}");
        assert!(err.contains(&format!("{path}:3:7: not valid UTF-8 (byte 0xff at offset 27)")), "{cmd}: {err}");
    }
    let (code, out, _) = kir(&["test", path]);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("cannot read: {path}:3:7: not valid UTF-8")), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}
