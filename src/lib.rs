//! kir: the library facade behind the `kir` command line tool.
//!
//! - [`api`]: kir as a library for users: parse and check a module, launch kernels in the
//!   interpreter with Rust values bound by parameter name, read results, emit PTX, run passes
//!   (see `docs/api.md`).
//! - [`cfg_svg`]: a kernel's CFG as an SVG picture with the divergence verdicts (`kir cfg --format svg`).
//! - [`checks`]: what `kir check` runs (verifier, then barrier verification).
//! - [`directives`]: `; run:` / `; expect:` / `; check-ptx:` test directives in `.kir` files, and the
//!   filetest header `; test:` and `; error:` / `; warning:` annotations.
//! - [`compare`]: comparing output buffers (bitwise, or within ULP/relative/absolute tolerances).
//! - [`tolerance`]: tolerances derived from the approximate ops a kernel uses.
//! - [`harness`]: the engine of `kir test`, the main job.
//! - [`filetest`]: the runner of `tests/filetests/`: one `.kir` file per test, its kind named by a `; test:` header.
//! - [`gpu_exec`]: running kernels and graphs on a GPU with the interpreter's inputs.
//! - [`isolate`]: GPU runs in a worker process (`kir __gpu-worker`), so a driver crash is an error.
//! - [`emu_exec`]: running kernels and graphs in the PTX emulator with the interpreter's inputs.
//! - [`ptx_args`]: binding `kir run FILE.ptx` arguments to a PTX entry's parameters.
//! - [`fuzz`]: random-kernel differential fuzzing and test-case reduction (`kir fuzz`).
//! - [`lsp`]: the language server behind `kir lsp` (diagnostics, hover, navigation, formatting, semantic tokens).
pub use kir_ir as ir;
pub mod api;
pub mod cfg_svg;
pub mod checks;
pub mod compare;
pub mod directives;
pub mod emu_exec;
pub mod files;
pub mod filetest;
pub mod fuzz;
pub mod gpu_exec;
pub mod harness;
pub mod isolate;
pub mod lsp;
pub mod ptx_args;
pub mod tolerance;
pub mod walk;
