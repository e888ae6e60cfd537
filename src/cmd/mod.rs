//! The `kir` subcommands, one module each.
pub mod bench;
pub mod cfg;
pub mod check;
pub mod common;
pub mod devices;
pub mod diff;
pub mod fmt;
pub mod fuzz;
pub mod gpu_worker;
pub mod lsp;
pub mod opt;
pub mod ptx;
pub mod run;
pub mod run_graph;
pub mod run_options;
pub mod run_ptx;
pub mod test;
