//! The run options of the commands that launch: [`KernelArgs`] (the kernel, its shape and its
//! arguments), flattened into `kir bench`'s arguments and into [`LaunchArgs`], which adds
//! `--graph` and the engines' limits and is flattened into the arguments of `kir run` and
//! `kir diff`, with what it turns into (the interpreter's and the PTX emulator's options, the
//! memory budget); [`RunArgs`], `kir run`'s arguments, which its three forms share (a kernel in the interpreter: `run`; a `.ptx` file's entry in the PTX emulator:
//! `run_ptx`; a launch graph: `run_graph`); [`GpuArgs`] (`--device`, `--require-gpu`), flattened
//! into the arguments of `kir diff`, `kir bench` and `kir fuzz`; and [`gpu_required_by_env`].
//!
//! Guarantees: the same flag means the same thing in every command that has it (spelling, value
//! syntax, defaults); a command only sharpens its help (`kir run`: a `.ptx` file's entry and
//! parameters; `kir bench`: timing the file's directives without a shape) with `mut_arg`. With
//! [`LaunchArgs`], `--grid` and `--block` are required unless `--graph`, which excludes `--kernel`,
//! `--grid`, `--block` and `--shared` (clap's rules and messages).

use kir::interp::Options;
use std::process::ExitCode;

/// `kir run FILE ...`.
#[derive(clap::Args)]
#[command(
    mut_arg("kernel", |a| a.help("The kernel (for a .ptx file: the entry) to run (optional when the file has one)")),
    mut_arg("args", |a| a.help("NAME=VALUE, one per parameter (for a .ptx file: by PTX parameter name). VALUE: a number, @path.npy, rand:TYPE:LEN[:SEED], zeros:TYPE:LEN, ones:TYPE:LEN or range:TYPE:LEN"))
)]
pub struct RunArgs {
    /// The .kir file, or a .ptx file to run in the PTX emulator.
    pub file: String,
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// NAME=PATH.npy: write the buffer of pointer parameter NAME after the launch.
    #[arg(long = "out", value_name = "NAME=PATH")]
    pub outs: Vec<String>,
    /// NAME or NAME:N: print the values of the buffer of pointer parameter NAME after the launch
    /// (all, or the first N), exactly (f16/bf16 as decimals), in rows with their indices.
    #[arg(long = "print", value_name = "NAME[:N]")]
    pub prints: Vec<String>,
    /// Report data races between barriers (shared and global memory).
    #[arg(long)]
    pub races: bool,
    /// Report reads of uninitialized shared memory.
    #[arg(long)]
    pub uninit: bool,
    /// Print instructions executed, global bytes read/written, barriers.
    #[arg(long)]
    pub stats: bool,
    /// Print the launch's wall time.
    #[arg(long)]
    pub time: bool,
}

/// Which kernel runs, its launch shape and its arguments: in [`LaunchArgs`] (`kir run`, `kir diff`)
/// and in `kir bench`.
#[derive(clap::Args)]
pub struct KernelArgs {
    /// The kernel to run (optional when the file has one).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Grid size in blocks: X[,Y[,Z]].
    #[arg(long)]
    pub grid: Option<String>,
    /// Block size in threads: X[,Y[,Z]].
    #[arg(long)]
    pub block: Option<String>,
    /// NAME=VALUE, one per parameter. VALUE: a number, @path.npy, rand:TYPE:LEN[:SEED],
    /// zeros:TYPE:LEN, ones:TYPE:LEN or range:TYPE:LEN.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// Dynamic shared memory per block, in bytes.
    #[arg(long, default_value_t = 0)]
    pub shared: u32,
}

/// Which kernel or graph runs, its launch shape and arguments, and the engines' limits.
#[derive(clap::Args)]
#[command(
    mut_arg("grid", |a| a.required_unless_present("graph").help("Grid size in blocks: X[,Y[,Z]] [required unless --graph]")),
    mut_arg("block", |a| a.required_unless_present("graph").help("Block size in threads: X[,Y[,Z]] [required unless --graph]"))
)]
pub struct LaunchArgs {
    #[command(flatten)]
    pub target: KernelArgs,
    /// Run this launch graph of the file instead of one kernel (grid and block come from it).
    #[arg(long, conflicts_with_all = ["kernel", "grid", "block", "shared"])]
    pub graph: Option<String>,
    /// Instructions the launch may run: N thread-instructions in all, and N instructions of any
    /// one warp (default 2^32 in all and 2^26 per warp, so a spinning thread stops within about a
    /// second); raise it for a long kernel.
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,
    /// Host threads of the interpreter and the PTX emulator (default: all cores; more than the
    /// cores or the blocks cannot help and are not started).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Memory budget of the run: all buffers of the arguments together, and a launch's buffers
    /// with its race-detection shadow (default 8G; accepts 4096, 512M, 8G).
    #[arg(long, value_name = "BYTES")]
    pub max_memory: Option<String>,
    /// Whose tensor-core arithmetic `mma` computes: sm_80 (A100), sm_90 (H100, H200; the
    /// interpreter's default) or sm_100 (B200). The PTX emulator takes the same rule; without the
    /// flag, it takes the rule of a `.ptx` file's `.target`.
    #[arg(long, value_name = "sm_80|sm_90|sm_100", value_parser = kir_harness::tensor_cores::parse_rule)]
    pub tensor_cores: Option<kir::ir::eval::tensor_core::TensorCoreRule>,
}

impl LaunchArgs {
    /// Sets the process's memory budget from `--max-memory`; a bad value is a usage error.
    pub fn apply_max_memory(&self) -> Result<(), ExitCode> {
        super::common::apply_max_memory(self.max_memory.as_deref())
    }

    /// The grid and block of a kernel launch (`--grid`, `--block`: clap requires both unless
    /// `--graph`); a malformed one is the message of a usage error.
    pub fn dims(&self) -> Result<([u32; 3], [u32; 3]), String> {
        let grid = super::common::parse_dims(self.target.grid.as_deref().unwrap_or(""), "grid")?;
        let block = super::common::parse_dims(self.target.block.as_deref().unwrap_or(""), "block")?;
        Ok((grid, block))
    }

    /// The interpreter's options: `--fuel N` sets the launch's and each warp's limit; without it
    /// both are the defaults.
    pub fn interp_options(&self, races: bool, uninit: bool) -> Options {
        let o = Options {
            races,
            uninit,
            threads: self.threads,
            tensor_cores: self.tensor_cores.unwrap_or_default(),
            ..Options::default()
        };
        match self.fuel {
            Some(n) => o.with_fuel(n),
            None => o,
        }
    }

    /// The PTX emulator's options: `--fuel N` (both its limits), `--threads N` and
    /// `--tensor-cores` (else the rule of the PTX's `.target`).
    pub fn emu_options(&self) -> kir_ptx_emu::Options {
        let o = kir_ptx_emu::Options {
            threads: self.threads,
            tensor_cores: self.tensor_cores.map(kir_harness::tensor_cores::emulator_rule),
            ..kir_ptx_emu::Options::default()
        };
        match self.fuel {
            Some(n) => o.with_fuel(n),
            None => o,
        }
    }
}

/// Which GPU a command uses and whether it must have one: `kir diff`, `kir bench`, `kir fuzz`.
/// Each command sharpens the help of `--require-gpu` (what it does without a GPU) with `mut_arg`.
#[derive(clap::Args)]
pub struct GpuArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Fail (exit 1) when there is no GPU (also: KIR_REQUIRE_GPU=1).
    #[arg(long)]
    pub require_gpu: bool,
}

impl GpuArgs {
    /// Whether a GPU is required: `--require-gpu`, or `KIR_REQUIRE_GPU=1`.
    pub fn required(&self) -> bool {
        self.require_gpu || gpu_required_by_env()
    }
}

/// Whether the environment demands a GPU (`KIR_REQUIRE_GPU=1`).
pub fn gpu_required_by_env() -> bool {
    std::env::var("KIR_REQUIRE_GPU").is_ok_and(|v| v == "1")
}
