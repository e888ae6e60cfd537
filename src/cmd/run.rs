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
//!   (`kir_interp::outputs::listing`). `--out` and `--print` work the same for graphs and `.ptx`.
//! - `--stats` prints instructions, global bytes read/written and barriers; `--time` the launch's
//!   wall time (both on stdout, after the outputs).

use super::common::{self, parse_dims, usage};
use kir_interp::args;
use kir_interp::{LaunchConfig, Options};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The .kir file, or a .ptx file to run in the PTX emulator.
    pub file: String,
    /// The kernel (for a .ptx file: the entry) to run (optional when the file has one).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Run this launch graph of the file instead of one kernel (grid and block come from it).
    #[arg(long, conflicts_with_all = ["kernel", "grid", "block", "shared"])]
    pub graph: Option<String>,
    /// Grid size in blocks: X[,Y[,Z]] [required unless --graph].
    #[arg(long, required_unless_present = "graph")]
    pub grid: Option<String>,
    /// Block size in threads: X[,Y[,Z]] [required unless --graph].
    #[arg(long, required_unless_present = "graph")]
    pub block: Option<String>,
    /// NAME=VALUE, one per parameter (for a .ptx file: by PTX parameter name). VALUE: a number,
    /// @path.npy, rand:TYPE:LEN[:SEED], zeros:TYPE:LEN, ones:TYPE:LEN or range:TYPE:LEN.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// NAME=PATH.npy: write the buffer of pointer parameter NAME after the launch.
    #[arg(long = "out", value_name = "NAME=PATH")]
    pub outs: Vec<String>,
    /// NAME or NAME:N: print the values of the buffer of pointer parameter NAME after the launch
    /// (all, or the first N), exactly (f16/bf16 as decimals), in rows with their indices.
    #[arg(long = "print", value_name = "NAME[:N]")]
    pub prints: Vec<String>,
    /// Dynamic shared memory per block, in bytes.
    #[arg(long, default_value_t = 0)]
    pub shared: u32,
    /// Report data races between barriers (shared and global memory).
    #[arg(long)]
    pub races: bool,
    /// Report reads of uninitialized shared memory.
    #[arg(long)]
    pub uninit: bool,
    /// Instructions the launch may run: N thread-instructions in all, and N instructions of any
    /// one warp (default 2^32 in all and 2^26 per warp, so a spinning thread stops within about a
    /// second); raise it for a long kernel.
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,
    /// Host threads (default: all cores; more than the cores or the blocks cannot help and are
    /// not started).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Memory budget of the run: all buffers of the arguments together, and a launch's buffers
    /// with its race-detection shadow (default 8G; accepts 4096, 512M, 8G).
    #[arg(long, value_name = "BYTES")]
    pub max_memory: Option<String>,
    /// Print instructions executed, global bytes read/written, barriers.
    #[arg(long)]
    pub stats: bool,
    /// Print the launch's wall time.
    #[arg(long)]
    pub time: bool,
}

/// The interpreter options of `kir run`/`kir diff`: `--fuel N` sets the launch's and each warp's
/// limit; without it both are the defaults.
pub fn cli_options(races: bool, uninit: bool, fuel: Option<u64>, threads: Option<usize>) -> Options {
    let o = Options { races, uninit, threads, ..Options::default() };
    match fuel {
        Some(n) => o.with_fuel(n),
        None => o,
    }
}

pub fn run(a: &Args) -> ExitCode {
    if let Err(code) = super::common::apply_max_memory(a.max_memory.as_deref()) {
        return code;
    }
    if super::run_ptx::is_ptx(&a.file) {
        return super::run_ptx::run(a);
    }
    if let Some(g) = &a.graph {
        return super::run_graph::run(a, g);
    }
    let loaded = match common::load_checked(&a.file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let kernel = match common::select_kernel(&loaded, a.kernel.as_deref()) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let (grid, block) = match (
        parse_dims(a.grid.as_deref().unwrap_or(""), "grid"),
        parse_dims(a.block.as_deref().unwrap_or(""), "block"),
    ) {
        (Ok(g), Ok(b)) => (g, b),
        (Err(e), _) | (_, Err(e)) => return usage(e),
    };
    let named = match common::named_args(&a.args) {
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
    let cfg = LaunchConfig { grid, block, dynamic_shared_bytes: a.shared };
    let opts = cli_options(a.races, a.uninit, a.fuel, a.threads);
    let start = Instant::now();
    let Some(verified) = loaded.module.verified_kernel(&kernel.name) else {
        return common::file_error(&loaded.path, format!("no kernel `@{}`", kernel.name));
    };
    let result = kir_interp::launch_verified(verified, &cfg, &bound.args, &mut bound.buffers, &opts);
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
        let written = kir_interp::outputs::written_params(kernel);
        for (i, p) in kernel.params.iter().enumerate() {
            if let (true, Some(buf)) = (written[i], bound.param_buffer[i]) {
                println!("%{}: {}", kernel.value(*p).name, kir_interp::outputs::summary(&bound.buffers[buf]));
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
