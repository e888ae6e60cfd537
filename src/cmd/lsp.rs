//! `kir lsp`: run the language server on stdin/stdout (editors start it; see `docs/lsp.md`).
//!
//! Guarantees: speaks LSP (JSON-RPC with `Content-Length` framing) on stdin/stdout and logs only
//! to stderr; exits 0 after a `shutdown` request and the `exit` notification, 1 when the input
//! ends or `exit` comes without `shutdown` (as the protocol prescribes).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    ExitCode::from(kir_cli::lsp::run_stdio().clamp(0, 255) as u8)
}
