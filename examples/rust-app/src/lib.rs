//! Kernels of the repository's `kernels/` as Rust functions. `build.rs` generates one module per
//! `.kir` file with a `launch` per kernel whose arguments are typed from the kernel's signature;
//! the same `launch` runs on the kir interpreter (anywhere, with race and out-of-bounds checks)
//! or on a GPU (`kir::bind::Gpu`, feature `gpu`).

/// The generated bindings: `relu_backward::relu_backward`, `softmax::softmax_rows`,
/// `softmax::softmax_naive`.
pub mod kernels {
    kir::include_bindings!("relu_backward");
    kir::include_bindings!("softmax");
}

/// The kir this crate's functions take and return the types of (`kir::bind::Interpreter`,
/// `kir::api::Error`, ...), for its users.
pub use kir;
use kir::bind::Engine;

/// Threads per block of the launches below.
pub const BLOCK: u32 = 256;

/// `dx[i] = x[i] > 0 ? dy[i] : 0` on `engine`, for buffers of that engine (host slices for the
/// interpreter, device slices on a GPU) of `n` elements each.
pub fn relu_backward<E: Engine>(
    engine: &E,
    x: &E::Slice<f32>,
    dy: &E::Slice<f32>,
    dx: &mut E::Slice<f32>,
    n: u32,
) -> Result<(), kir::api::Error> {
    kernels::relu_backward::relu_backward::launch(engine, n.div_ceil(BLOCK), BLOCK, x, dy, dx, n)
}

/// The softmax of each of the `rows` rows of `cols` elements of `x` into `y`, one block per row.
pub fn softmax_rows<E: Engine>(
    engine: &E,
    x: &E::Slice<f32>,
    y: &mut E::Slice<f32>,
    rows: u32,
    cols: u32,
) -> Result<(), kir::api::Error> {
    kernels::softmax::softmax_rows::launch(engine, rows, 64, x, y, rows, cols)
}

/// [`relu_backward`] in the kir interpreter, on host vectors.
pub fn relu_backward_cpu(x: &[f32], dy: &[f32]) -> Result<Vec<f32>, kir::api::Error> {
    let mut dx = vec![0.0; x.len()];
    relu_backward(&kir::bind::Interpreter::new(), x, dy, &mut dx, x.len() as u32)?;
    Ok(dx)
}

/// [`relu_backward`] on a GPU: copies the inputs to the device, launches, copies `dx` back.
#[cfg(feature = "gpu")]
pub fn relu_backward_gpu(gpu: &kir::bind::Gpu, x: &[f32], dy: &[f32]) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(x)?;
    let dy_dev = stream.clone_htod(dy)?;
    let mut dx_dev = stream.alloc_zeros::<f32>(x.len())?;
    relu_backward(gpu, &x_dev, &dy_dev, &mut dx_dev, x.len() as u32)?;
    Ok(stream.clone_dtoh(&dx_dev)?)
}
