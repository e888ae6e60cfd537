//! `kir cfg`: a kernel's CFG as Graphviz DOT (blocks labelled with their instructions, branch edges
//! marked T/F), and clear errors when the kernel is ambiguous or missing.

use std::process::Command;

fn kir(args: &[&str]) -> (i32, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_kir")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

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
}
