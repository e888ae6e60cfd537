//! Generates the typed bindings of two kernel files of the repository's library: each file is
//! parsed and checked (`kir check`: a file that fails fails this build with kir's diagnostic), its
//! PTX emitted, and `OUT_DIR/NAME.rs` written; editing either file (or `lib/reduce.kir`, which
//! softmax.kir imports) reruns this.
fn main() {
    kir::build::bindings("../../kernels/relu_backward.kir");
    kir::build::bindings("../../kernels/softmax.kir");
}
