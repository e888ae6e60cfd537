//! The `kir` subcommands, one module each.
pub mod cfg;
pub mod check;
pub mod common;
pub mod fmt;
pub mod opt;
pub mod run;
