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
}
