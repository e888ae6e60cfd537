//! `kir cfg FILE [--kernel K] [--format dot|svg]`: print a kernel's control-flow graph.
//!
//! Guarantees:
//! - `--format dot` (the default) prints deterministic Graphviz DOT with one node per block
//!   labelled with its instructions; unreachable blocks are drawn dashed (`Cfg::to_dot`).
//! - `--format svg` prints a standalone SVG picture, laid out by kir itself (no Graphviz), with
//!   the entry and exit blocks, barriers, divergent branches (uniformity analysis), loop back edges
//!   and unreachable blocks marked, and a legend (see `kir_cli::cfg_svg` for what it guarantees). The
//!   divergence marks need a kernel that verifies; without that the picture says so.
//! - Another `--format` value is a usage error (exit code 2).

use super::common;
use std::process::ExitCode;

/// Output formats of `kir cfg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Graphviz DOT text.
    Dot,
    /// An SVG picture with divergence marks and a legend.
    Svg,
}

#[derive(clap::Args)]
pub struct Args {
    /// The .kir file.
    pub file: String,
    /// The kernel (optional when the file has one kernel).
    #[arg(long)]
    pub kernel: Option<String>,
    /// The output format.
    #[arg(long, value_enum, default_value = "dot")]
    pub format: Format,
}

pub fn run(args: &Args) -> ExitCode {
    let Ok(loaded) = common::load(&args.file) else { return ExitCode::from(1) };
    let k = match common::select_kernel(&loaded, args.kernel.as_deref()) {
        Ok(k) => k,
        Err(code) => return code,
    };
    match args.format {
        Format::Dot => print!("{}", kir::ir::analysis::cfg::Cfg::new(k).to_dot(k)),
        Format::Svg => print!("{}", kir_cli::cfg_svg::render_kernel(k)),
    }
    ExitCode::SUCCESS
}
