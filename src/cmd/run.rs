//! `kir run FILE --kernel K --grid X[,Y[,Z]] --block X[,Y[,Z]] [--arg NAME=VALUE]... [--out NAME=PATH.npy]
//! [--print NAME[:N]] [--shared BYTES] [--races] [--uninit] [--fuel N] [--threads N] [--stats] [--time]`: run a kernel in
//! the interpreter. A `.ptx` FILE runs in the PTX emulator instead ([`super::run_ptx`]), and
//! `--graph` runs a launch graph ([`super::run_graph`]).
//!
//! Guarantees:
//! - The file is parsed and verified first; arguments are checked against the kernel signature
//!   (every parameter exactly once, by name; scalar type; buffer element type) with clear errors.
//! - A kernel fault prints a located diagnostic (instruction span, block/thread coordinates) and
//!   exits 1; bad arguments or launch shapes exit 2; nothing panics.
//! - Without `--out` or `--print`, every buffer the kernel may write is summarized on stdout (first
//!   elements, min/max/mean, NaN count); with `--out NAME=PATH.npy` that buffer is written as
//!   `.npy`; with `--print NAME[:N]` its values (all or the first N) are printed exactly, in rows
//!   (`kir::interp::outputs::listing`). `--out` and `--print` work the same for graphs and `.ptx`.
//! - `--stats` prints instructions, global bytes read/written and barriers; `--time` the launch's
//!   wall time (both on stdout, after the outputs).

use super::common::{self, usage};
use kir::interp::args;
use kir::interp::LaunchConfig;
use std::process::ExitCode;
use std::time::Instant;

pub use super::run_options::RunArgs as Args;

pub fn run(a: &Args) -> ExitCode {
    if let Err(code) = a.launch.apply_max_memory() {
        return code;
    }
    if super::run_ptx::is_ptx(&a.file) {
        return super::run_ptx::run(a);
    }
    if let Some(g) = &a.launch.graph {
        return super::run_graph::run(a, g);
    }
    let loaded = match common::load_checked(&a.file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let kernel = match common::select_kernel(&loaded, a.launch.target.kernel.as_deref()) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let (grid, block) = match a.launch.dims() {
        Ok(d) => d,
        Err(e) => return usage(e),
    };
    let named = match common::named_args(&a.launch.target.args) {
        Ok(n) => n,
        Err(e) => return usage(e),
    };
    let mut bound = match args::bind(kernel, &named, None) {
        Ok(b) => b,
        Err(e) => return usage(e),
    };
    let resolved = common::resolve_outputs(&a.outs, &a.prints, &a.file, &named, |n| {
        let (i, _) =
            kernel.param_by_name(n).ok_or_else(|| format!("kernel @{} has no parameter `{n}`", kernel.name))?;
        bound.param_buffer[i].ok_or_else(|| format!("parameter `{n}` is a scalar, not a buffer"))
    });
    let common::Outputs { outs, prints } = match resolved {
        Ok(r) => r,
        Err(code) => return code,
    };
    let cfg = LaunchConfig { grid, block, dynamic_shared_bytes: a.launch.target.shared };
    let opts = a.launch.interp_options(a.races, a.uninit);
    let start = Instant::now();
    let Some(verified) = loaded.module.verified_kernel(&kernel.name) else {
        return common::file_error(&loaded.path, format!("no kernel `@{}`", kernel.name));
    };
    let result = kir::api::launch_verified(verified, &cfg, &bound.args, &mut bound.buffers, &opts);
    let elapsed = start.elapsed();
    let stats = match result {
        Ok(s) => s,
        Err(e) => return common::interp_failure(&e, &loaded),
    };
    if let Err(code) = common::write_outputs(&outs, &bound.buffers) {
        return code;
    }
    common::print_buffers(&prints, &bound.buffers);
    if outs.is_empty() && prints.is_empty() {
        let written = kir::interp::outputs::written_params(kernel);
        for (i, p) in kernel.params.iter().enumerate() {
            if let (true, Some(buf)) = (written[i], bound.param_buffer[i]) {
                println!("%{}: {}", kernel.value(*p).name, kir::interp::outputs::summary(&bound.buffers[buf]));
            }
        }
    }
    if a.stats {
        super::common::print_launch_stats(&stats);
    }
    if a.time {
        println!("time: {:.3} ms", elapsed.as_secs_f64() * 1e3);
    }
    ExitCode::SUCCESS
}
