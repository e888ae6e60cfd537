//! `kir fmt FILE... [--check | --write]`: print the canonical form of a module.
//!
//! Guarantees: the output is the printer's text with the source's comments kept
//! ([`kir::api::format_source`]), which re-parses to the same module. With `--check`, nothing
//! is printed on success; a file whose text differs from its canonical form is reported (with the
//! first differing line) and the exit code is 1. With `--write`, files not in canonical form are
//! rewritten atomically (a temporary file and a rename: an interrupted write never loses the file).

use super::common;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The .kir files to format.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Do not print; exit 1 if a file is not in canonical form.
    #[arg(long)]
    pub check: bool,
    /// Rewrite the files in place.
    #[arg(long, conflicts_with = "check")]
    pub write: bool,
}

/// The canonical text of a source file: the printed module with the source's comments kept.
pub fn canonical_text(source: &str, module: &kir::ir::Module) -> String {
    kir::api::format_source(source, module)
}

pub fn run(args: &Args) -> ExitCode {
    let mut bad = 0;
    for path in &args.files {
        let Ok(loaded) = common::load(path) else {
            bad += 1;
            continue;
        };
        let text = canonical_text(&loaded.source, &loaded.module);
        if args.check {
            if text != loaded.source {
                let line = text
                    .lines()
                    .zip(loaded.source.lines())
                    .position(|(a, b)| a != b)
                    .map(|i| i + 1)
                    .unwrap_or_else(|| text.lines().count().min(loaded.source.lines().count()) + 1);
                eprintln!("{path}:{line}: not in canonical form (run `kir fmt --write {path}`)");
                bad += 1;
            }
        } else if args.write {
            if text != loaded.source {
                if let Err(e) = kir_harness::files::write_atomically(std::path::Path::new(path), text.as_bytes()) {
                    return common::file_error(path, e);
                }
            }
        } else {
            print!("{text}");
        }
    }
    if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
