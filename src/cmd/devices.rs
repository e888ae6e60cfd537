//! `kir devices`: list the CUDA devices the driver reports.
//!
//! Guarantees: one line per device (ordinal, name, compute capability, memory, driver version),
//! exit 0; a device of kir's emulated driver is marked as such. Without a CUDA driver, or with a
//! driver but no device, it prints why to stderr (and how to select the emulated driver) and exits
//! 1 ("no GPU" is a failure for scripts that need one); a `KIR_CUDA_DRIVER` that cannot be honoured
//! is an error naming it, exit 1. It never panics.

use std::process::ExitCode;

/// How the driver is chosen (shown by `kir devices --help`).
pub const DRIVER_HELP: &str = "\
Which CUDA driver kir uses (for `kir devices`, `kir diff`, the GPU rows of `kir test`, `kir fuzz`):
  KIR_CUDA_DRIVER unset   the system's NVIDIA driver (libcuda), looked up by cudarc as usual
  KIR_CUDA_DRIVER=emu     kir's emulated CUDA driver (libkir_cuda_emu.so, built with kir): one
                          device, `kir-ptx-emu (sm_90, CPU)`, that runs every kernel in the PTX
                          emulator; its timings are CPU wall time
  KIR_CUDA_DRIVER=PATH    the CUDA driver library at PATH (its SONAME must be libcuda.so)
With the emulated driver, `kir test --require-gpu` and `kir diff --against gpu` run the whole GPU
path (module loading, argument marshalling, launches, copies, events) on any machine.
Set KIR_CUDA_EMU_LOG=1 to have the emulated driver print every failing call's reason.";

#[derive(clap::Args)]
#[command(after_help = DRIVER_HELP)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    match kir::ptx::gpu::devices() {
        Ok(devs) => {
            for d in devs {
                let (maj, min) = d.compute_capability;
                println!(
                    "{}: {} (sm_{maj}{min}), {:.1} GiB, driver {}.{}{}",
                    d.ordinal,
                    d.name,
                    d.total_mem_bytes as f64 / (1u64 << 30) as f64,
                    d.driver_version / 1000,
                    (d.driver_version % 1000) / 10,
                    if d.emulated { " — emulated by kir's PTX emulator, not hardware" } else { "" }
                );
            }
            ExitCode::SUCCESS
        }
        Err(e @ kir::ptx::gpu::GpuError::NoDriver) => {
            eprintln!(
                "error: {e}\nnote: KIR_CUDA_DRIVER=emu selects kir's emulated CUDA driver (see `kir devices --help`)"
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
