// `dx` is a `ptr<global, f32>` the kernel writes: a buffer of `u32` does not compile.
use rust_app::kernels::relu_backward::relu_backward;
use rust_app::kir::bind::Interpreter;

fn main() {
    let (x, dy, mut dx) = (vec![1.0f32; 8], vec![1.0f32; 8], vec![0u32; 8]);
    let _ = relu_backward::launch(&Interpreter::new(), 1, 8, &x[..], &dy[..], &mut dx[..], 8);
}
