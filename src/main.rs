//! The `kir` command line tool.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

// mimalloc: the compiler allocates and frees many small objects (syntax tree, IR, PTX text);
// it is measurably faster than the system allocator here (BENCHMARKS.md, compile speed).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cmd;

#[derive(Parser)]
#[command(name = "kir", version, about = "kir: parse, verify, optimize, run and emit PTX for .kir GPU kernels")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and verify .kir files; exit 1 with located errors if any.
    Check(cmd::check::Args),
    /// Print the canonical form of .kir files (or check it with --check).
    Fmt(cmd::fmt::Args),
    /// Print a kernel's control-flow graph as Graphviz DOT, or as an SVG picture with divergence marks.
    Cfg(cmd::cfg::Args),
    /// Check, optimize, emit PTX for and run (interpreter, PTX emulator, GPU when present) every .kir file.
    Test(cmd::test::Args),
    /// Run a pass pipeline (default: inline,fold,simplify-cfg,licm,dce) and print the optimized module.
    Opt(cmd::opt::Args),
    /// Emit PTX for a .kir file (as written; run `kir opt` first to optimize).
    Ptx(cmd::ptx::Args),
    /// Run a kernel in the SIMT interpreter with runtime checks (a .ptx file: in the PTX emulator).
    Run(cmd::run::Args),
    /// List CUDA devices (exit 1 with a message when there is no driver or no device).
    Devices(cmd::devices::Args),
    /// Run a kernel or graph in the interpreter and on the GPU or in the PTX emulator (the default
    /// without a GPU) with the same inputs; compare every buffer.
    Diff(cmd::diff::Args),
    /// Time a kernel on the GPU (CUDA events; median, GB/s, % of copy rate), optionally beside its
    /// CUDA C twin compiled by NVRTC; on the emulated driver the times are CPU times and say so.
    Bench(cmd::bench::Args),
    /// Generate random kernels and check verifier, passes, ptxas, PTX emulator and GPU against the interpreter.
    Fuzz(cmd::fuzz::Args),
    /// Run the language server on stdin/stdout (for editors).
    Lsp(cmd::lsp::Args),
    /// The GPU worker process kir starts to isolate driver crashes (internal).
    #[command(name = "__gpu-worker", hide = true)]
    GpuWorker(cmd::gpu_worker::Args),
}

/// Restores the default action for SIGPIPE, as Unix command-line tools have it: `kir test | head`
/// ends kir quietly when `head` stops reading. (Rust ignores SIGPIPE, so the first write to the
/// closed pipe would make `println!` panic with a backtrace instead.)
#[cfg(unix)]
fn default_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: installs the default disposition for one signal; no handler code runs in Rust.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    default_sigpipe();
    let cli = Cli::parse();
    match &cli.command {
        Command::Check(a) => cmd::check::run(a),
        Command::Fmt(a) => cmd::fmt::run(a),
        Command::Cfg(a) => cmd::cfg::run(a),
        Command::Test(a) => cmd::test::run(a),
        Command::Opt(a) => cmd::opt::run(a),
        Command::Ptx(a) => cmd::ptx::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Devices(a) => cmd::devices::run(a),
        Command::Diff(a) => cmd::diff::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Fuzz(a) => cmd::fuzz::run(a),
        Command::Lsp(a) => cmd::lsp::run(a),
        Command::GpuWorker(a) => cmd::gpu_worker::run(a),
    }
}
