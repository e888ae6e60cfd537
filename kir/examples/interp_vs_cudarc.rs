//! Runs one kernel in the kir interpreter and, when a CUDA driver is present, the same kernel's PTX
//! on the GPU through `kir::gpu::GpuRunner` (cudarc), and compares the outputs bit for
//! bit.
//!
//! ```text
//! cargo run -p kir --features gpu --example interp_vs_cudarc                       # the system's CUDA driver, if any
//! KIR_CUDA_DRIVER=emu cargo run -p kir --features gpu --example interp_vs_cudarc   # kir's emulated driver (PTX emulator)
//! ```
//!
//! Without a driver (or a device) it says so and exits 0: the interpreter half still runs.

use kir::api::{Module, SmVersion};
use kir::gpu::{GpuError, GpuRunner, Launch, Param};
use std::process::ExitCode;

const KERNEL: &str = include_str!("../../kernels/relu_backward.kir");

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let m = Module::parse_named("kernels/relu_backward.kir", KERNEL)?;
    let k = m.kernel("relu_backward")?;
    let n: u32 = 5000;
    let (grid, block) = (n.div_ceil(128), 128);
    let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let dy: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();

    // 1. The interpreter.
    let out =
        k.launch(grid, block).arg("x", &x).arg("dy", &dy).arg("dx", vec![0.0f32; n as usize]).arg("n", n).run()?;
    let interp: Vec<f32> = out.read("dx")?;
    println!("interpreter: {} thread-instructions", out.stats().thread_instructions);

    // 2. The same kernel's PTX through the CUDA driver.
    let mut runner = match GpuRunner::new(0) {
        Ok(r) => r,
        Err(e @ (GpuError::NoDriver | GpuError::NoDevice)) => {
            println!("no GPU run: {e} (set KIR_CUDA_DRIVER=emu to use kir's emulated driver)");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("device: {}", runner.device_name()?);
    let ptx = k.ptx(SmVersion::Sm80)?;
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let buffers = [bytes(&x), bytes(&dy), bytes(&vec![0.0; n as usize])];
    // Parameters in the kernel's order: the three buffers, then `n` as its little-endian bytes.
    let params = [Param::Buffer(0), Param::Buffer(1), Param::Buffer(2), Param::Scalar(n.to_le_bytes().to_vec())];
    let launch = Launch { grid: (grid, 1, 1), block: (block, 1, 1), dynamic_shared_bytes: 0 };
    let results = runner.run(&ptx, &k.ptx_entry_name(), launch, &buffers, &params)?;
    let gpu: Vec<f32> = results[2].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();

    // 3. Compare.
    let mismatches = interp.iter().zip(&gpu).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    if mismatches > 0 || interp.len() != gpu.len() {
        return Err(format!("{mismatches} of {n} outputs differ between the interpreter and the GPU").into());
    }
    println!("interpreter and GPU agree on all {n} outputs, bit for bit");
    Ok(())
}
