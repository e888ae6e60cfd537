//! `kir ptx FILE [--kernel K] [--sm sm_80|sm_86|sm_89|sm_90] [-o OUT]`: emit PTX.
//!
//! Guarantees: the file is parsed, verified and barrier-verified first (`kir check`'s checks;
//! located errors, exit 1: no PTX is emitted for a kernel whose barriers may diverge); the PTX module
//! (every kernel, or only `--kernel K`) goes to stdout or `-o OUT`, byte-for-byte deterministic,
//! with comments carrying the `.kir` source line of each instruction. An unknown `--sm` is a
//! usage error (exit 2).

use super::common;
use kir::api::{PtxOptions, SmVersion};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The .kir file.
    pub file: String,
    /// Emit only this kernel (default: every kernel of the file).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Target architecture: sm_80, sm_86, sm_89 or sm_90.
    #[arg(long, default_value = "sm_80")]
    pub sm: String,
    /// Write the PTX here instead of stdout.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
}

pub fn run(args: &Args) -> ExitCode {
    let Some(sm) = SmVersion::from_name(&args.sm) else {
        eprintln!("error: unknown --sm `{}` (expected one of sm_80, sm_86, sm_89, sm_90)", args.sm);
        return ExitCode::from(2);
    };
    // Verified and barrier-verified: barrier divergence is undefined behaviour on the GPU, so no
    // code is emitted for it.
    let loaded = match common::load_checked(&args.file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let opts = PtxOptions { sm, source: Some(loaded.source.clone()), comments: true };
    let result = match &args.kernel {
        Some(_) => match common::select_kernel(&loaded, args.kernel.as_deref()) {
            Ok(k) => kir::api::emit_kernel_in_module(&loaded.module, &k.name, &opts),
            Err(code) => return code,
        },
        None => kir::api::emit_module(&loaded.module, &opts),
    };
    let ptx = match result {
        Ok(p) => p,
        Err(diags) => {
            loaded.emit(&diags);
            return ExitCode::from(1);
        }
    };
    match &args.output {
        Some(out) => match std::fs::write(out, ptx) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => common::file_error(out, e),
        },
        None => {
            print!("{ptx}");
            ExitCode::SUCCESS
        }
    }
}
