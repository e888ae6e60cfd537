// `n` is a `u32` parameter (`%n: u32` in kernels/relu_backward.kir): a `u64` does not compile.
use rust_app::kernels::relu_backward::relu_backward;
use rust_app::kir::bind::Interpreter;

fn main() {
    let (x, dy, mut dx) = (vec![1.0f32; 8], vec![1.0f32; 8], vec![0.0f32; 8]);
    let n: u64 = 8;
    let _ = relu_backward::launch(&Interpreter::new(), 1, 8, &x[..], &dy[..], &mut dx[..], n);
}
