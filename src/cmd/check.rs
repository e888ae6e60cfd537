//! `kir check FILE...`: parse, verify and barrier-verify every file; report every problem.
//!
//! Guarantees: exit 0 only when every file parses and verifies without errors (warnings are printed
//! but do not fail); exit 1 otherwise, with every diagnostic of every file rendered to stderr.

use super::common;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The .kir files to check.
    #[arg(required = true)]
    pub files: Vec<String>,
}

pub fn run(args: &Args) -> ExitCode {
    let mut failed = 0usize;
    for path in &args.files {
        let loaded = match common::load(path) {
            Ok(l) => l,
            Err(_) => {
                failed += 1;
                continue;
            }
        };
        let diags = kir::api::check_keeping(loaded.module.clone()).0;
        loaded.emit(&diags);
        if kir::ir::diag::has_errors(&diags) {
            failed += 1;
        }
    }
    if failed > 0 {
        eprintln!("{failed} of {} file{} failed", args.files.len(), if args.files.len() == 1 { "" } else { "s" });
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
