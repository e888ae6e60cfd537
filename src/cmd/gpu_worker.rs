//! `kir __gpu-worker --device N` (hidden): the worker process of [`kir_harness::isolate`]. It is started by
//! kir itself (`kir fuzz`), never by hand: it speaks a binary protocol on stdin/stdout.
//!
//! Guarantees: those of [`kir_harness::isolate::worker_main`].

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

pub fn run(a: &Args) -> ExitCode {
    kir_harness::isolate::worker_main(a.device)
}
