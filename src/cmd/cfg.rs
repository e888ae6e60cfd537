//! `kir cfg FILE --kernel K`: print a kernel's control-flow graph as Graphviz DOT.
//!
//! Guarantees: the output is deterministic DOT with one node per block labelled with its
//! instructions; unreachable blocks are drawn dashed.

use super::common;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The .kir file.
    pub file: String,
    /// The kernel (optional when the file has one kernel).
    #[arg(long)]
    pub kernel: Option<String>,
}

pub fn run(args: &Args) -> ExitCode {
    let Ok(loaded) = common::load(&args.file) else { return ExitCode::from(1) };
    let k = match common::select_kernel(&loaded, args.kernel.as_deref()) {
        Ok(k) => k,
        Err(code) => return code,
    };
    print!("{}", kir_ir::cfg::Cfg::new(k).to_dot(k));
    ExitCode::SUCCESS
}
