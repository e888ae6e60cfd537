//! kir: the library facade behind the `kir` command line tool.
pub use kir_ir as ir;
pub mod checks;
pub mod directives;
pub mod compare;
pub mod harness;
pub mod tolerance;
pub mod fuzz;
pub mod gpu_exec;
