//! kir as a library: parse and check `.kir` modules, run passes, emit PTX and launch kernels in the
//! SIMT interpreter. This is all a crate that uses kir depends on: no command line parsing, no
//! language server, no test harness (those are the `kir-cli` and `kir-harness` crates of the
//! workspace), and no CUDA driver bindings unless the `gpu` feature is on.
//!
//! - [`api`]: the facade for users: parse and check a module, launch kernels in the interpreter
//!   with Rust values bound by parameter name, read results, emit PTX, run passes
//!   (see `docs/api.md`).
//! - Checking a module below the facade: [`ir::verify::check`], the one way to a checked module
//!   (the verifier, then barrier verification: what `kir check` runs), and
//!   [`ir::verify::check_keeping`] (the same diagnostics, the module kept).
//! - [`ir`], [`passes`], [`ptx`], [`interp`]: the crates below the facade (`kir-ir`, `kir-passes`,
//!   `kir-backend-ptx`, `kir-interp`), for everything the facade does not cover.
//! - `gpu` (feature `gpu`, off by default): the GPU runner of `kir-backend-ptx` (cudarc, with the
//!   CUDA driver loaded at run time), to run the emitted PTX on a GPU.
pub use kir_backend_ptx as ptx;
pub use kir_interp as interp;
pub use kir_ir as ir;
pub use kir_passes as passes;
pub mod api;

#[cfg(feature = "gpu")]
pub use kir_backend_ptx::{driver_lib, gpu};
