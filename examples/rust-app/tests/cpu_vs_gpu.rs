//! The example's tests, as an application would write them: the generated bindings run in the kir
//! interpreter against plain-Rust references (any machine), a wrong launch is a fault located in
//! the `.kir` file, and the same calls on a GPU give the interpreter's results — on NVIDIA's
//! driver when there is one, else on kir's emulated driver (`KIR_CUDA_DRIVER=emu`: the test runs
//! itself again with it set). `KIR_REQUIRE_GPU=1` makes a missing real GPU a failure.

use rust_app::kir::api::{ErrorKind, FaultKind};
use rust_app::kir::bind::Interpreter;

/// `n` values in [-1, 1) with exact zeros, from a fixed seed.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if i % 17 == 0 {
                0.0
            } else {
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            }
        })
        .collect()
}

#[test]
fn relu_backward_matches_a_rust_reference() {
    for n in [1, 255, 256, 1000, 4099] {
        let (x, dy) = (values(n, 1), values(n, 2));
        let dx = rust_app::relu_backward_cpu(&x, &dy).unwrap();
        let expected: Vec<f32> = x.iter().zip(&dy).map(|(x, dy)| if *x > 0.0 { *dy } else { 0.0 }).collect();
        assert_eq!(dx, expected, "n = {n}");
    }
}

/// softmax.kir imports lib/reduce.kir: the bindings embed both files.
#[test]
fn softmax_rows_match_a_rust_reference() {
    let (rows, cols) = (5u32, 300u32);
    let x = values((rows * cols) as usize, 3);
    let mut y = vec![0.0f32; x.len()];
    rust_app::softmax_rows(&Interpreter::new(), &x, &mut y, rows, cols).unwrap();
    for r in 0..rows as usize {
        let row = &x[r * cols as usize..][..cols as usize];
        let max = row.iter().fold(f64::NEG_INFINITY, |m, v| m.max(*v as f64));
        let sum: f64 = row.iter().map(|v| (*v as f64 - max).exp()).sum();
        for (c, v) in row.iter().enumerate() {
            let want = (*v as f64 - max).exp() / sum;
            let got = y[r * cols as usize + c] as f64;
            // ex2.approx (2 ulp) and the reductions' roundings: a few ulp of f32.
            assert!((got - want).abs() <= 1e-6 * want.max(1e-30) + 1e-9, "row {r} col {c}: {got} vs {want}");
        }
    }
}

/// `n` larger than the buffers: the interpreter stops at the first out-of-bounds access and the
/// error points at the `.kir` line, as `kir run` prints it.
#[test]
fn an_out_of_bounds_launch_is_a_located_fault() {
    let (x, dy) = (values(100, 4), values(100, 5));
    let mut dx = vec![0.0f32; 100];
    let engine = Interpreter::new();
    let err = rust_app::relu_backward(&engine, &x, &dy, &mut dx, 200).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::KernelFault(FaultKind::OutOfBounds));
    let text = err.to_string();
    assert!(text.contains("┌─ ../../kernels/relu_backward.kir:"), "{text}");
    assert!(text.contains("out-of-bounds"), "{text}");
    assert_eq!(dx, vec![0.0; 100], "a failed launch writes nothing back");
}

#[cfg(feature = "gpu")]
mod gpu {
    use super::values;
    use rust_app::kir::bind::{Gpu, Interpreter};
    use std::process::Command;

    /// Runs `body` on a GPU: NVIDIA's driver, or the one `KIR_CUDA_DRIVER` names; without
    /// either, this test again in a child process with `KIR_CUDA_DRIVER=emu`.
    fn on_a_gpu(test: &str, body: impl FnOnce(&Gpu)) {
        let chosen = std::env::var("KIR_CUDA_DRIVER").is_ok_and(|v| !v.is_empty());
        if !chosen && !rust_app::kir::gpu::driver_present() {
            assert!(
                std::env::var("KIR_REQUIRE_GPU").map_or(true, |v| v != "1"),
                "no CUDA driver, and KIR_REQUIRE_GPU=1 asks for a GPU"
            );
            let out = Command::new(std::env::current_exe().unwrap())
                .args([test, "--exact", "--nocapture", "--test-threads=1"])
                .env("KIR_CUDA_DRIVER", "emu")
                .output()
                .unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success() && text.contains("1 passed"), "on kir's emulated driver:\n{text}");
            assert!(text.contains("device: kir-ptx-emu"), "{text}");
            return;
        }
        // SAFETY: every launch below is first run in the interpreter with the same shapes, which
        // checks that it stays within its buffers.
        let gpu = unsafe { Gpu::new(0) }.unwrap();
        println!("device: {}", gpu.device_name().unwrap());
        body(&gpu);
    }

    #[test]
    fn relu_backward_on_the_gpu_gives_the_interpreters_bits() {
        on_a_gpu("gpu::relu_backward_on_the_gpu_gives_the_interpreters_bits", |gpu| {
            for n in [1, 1000, 4099] {
                let (x, dy) = (values(n, 6), values(n, 7));
                let cpu = rust_app::relu_backward_cpu(&x, &dy).unwrap();
                let on_gpu = rust_app::relu_backward_gpu(gpu, &x, &dy).unwrap();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&on_gpu), bits(&cpu), "n = {n}");
            }
        });
    }

    /// The same generic function on both engines: device buffers are cudarc's `CudaSlice`.
    /// softmax uses `ex2.approx`: the GPU is within the kernel file's `tol=rel:3e-6`.
    #[test]
    fn softmax_on_the_gpu_is_within_the_kernels_tolerance() {
        on_a_gpu("gpu::softmax_on_the_gpu_is_within_the_kernels_tolerance", |gpu| {
            let (rows, cols) = (13u32, 300u32);
            let x = values((rows * cols) as usize, 8);
            let mut cpu = vec![0.0f32; x.len()];
            rust_app::softmax_rows(&Interpreter::new(), &x, &mut cpu, rows, cols).unwrap();
            let stream = gpu.stream();
            let x_dev = stream.clone_htod(&x).unwrap();
            let mut y_dev = stream.alloc_zeros::<f32>(x.len()).unwrap();
            rust_app::softmax_rows(gpu, &x_dev, &mut y_dev, rows, cols).unwrap();
            let on_gpu = stream.clone_dtoh(&y_dev).unwrap();
            for (i, (a, b)) in cpu.iter().zip(&on_gpu).enumerate() {
                assert!((a - b).abs() <= 3e-6 * a.abs().max(b.abs()), "[{i}] interpreter {a}, GPU {b}");
            }
        });
    }
}
