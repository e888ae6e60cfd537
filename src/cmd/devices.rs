//! `kir devices`: list the CUDA devices the driver reports.
//!
//! Guarantees: one line per device (ordinal, name, compute capability, memory, driver version),
//! exit 0. Without a CUDA driver, or with a driver but no device, it prints why to stderr and
//! exits 1 ("no GPU" is a failure for scripts that need one); it never panics.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    match kir_backend_ptx::gpu::devices() {
        Ok(devs) => {
            for d in devs {
                let (maj, min) = d.compute_capability;
                println!(
                    "{}: {} (sm_{maj}{min}), {:.1} GiB, driver {}.{}",
                    d.ordinal,
                    d.name,
                    d.total_mem_bytes as f64 / (1u64 << 30) as f64,
                    d.driver_version / 1000,
                    (d.driver_version % 1000) / 10
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
