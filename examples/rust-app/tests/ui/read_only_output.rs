// `dx` is written by the kernel: it takes `&mut`, and a shared borrow does not compile.
use rust_app::kernels::relu_backward::relu_backward;
use rust_app::kir::bind::Interpreter;

fn main() {
    let (x, dy, dx) = (vec![1.0f32; 8], vec![1.0f32; 8], vec![0.0f32; 8]);
    let _ = relu_backward::launch(&Interpreter::new(), 1, 8, &x[..], &dy[..], &dx[..], 8);
}
