//! `cargo run -p rust-app`: one kernel of kernels/ called as a Rust function, in the kir
//! interpreter and, where there is a CUDA driver (or with `KIR_CUDA_DRIVER=emu`, kir's emulated
//! one), on the GPU; the two results are compared bit for bit.

use std::process::ExitCode;

fn main() -> ExitCode {
    let n = 10_000usize;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let dy: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
    let cpu = match rust_app::relu_backward_cpu(&x, &dy) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("interpreter: relu_backward over {n} elements");
    #[cfg(feature = "gpu")]
    {
        // SAFETY: the launch is the one just run in the interpreter, which checked that it stays
        // within its buffers.
        let gpu = match unsafe { rust_app::kir::bind::Gpu::new(0) } {
            Ok(g) => g,
            Err(e) => {
                println!("no GPU run: {e} (KIR_CUDA_DRIVER=emu selects kir's emulated driver)");
                return ExitCode::SUCCESS;
            }
        };
        let on_gpu = match rust_app::relu_backward_gpu(&gpu, &x, &dy) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let same = cpu.iter().zip(&on_gpu).all(|(a, b)| a.to_bits() == b.to_bits());
        println!("{}: {}", gpu.device_name().unwrap_or_default(), if same { "the same bits" } else { "DIFFERENT" });
        if !same {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
