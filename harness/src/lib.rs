//! kir-harness: kir's test machinery, shared by `kir test`, `kir diff`, `kir bench`, `kir fuzz` and
//! the workspace's tests. It builds on the `kir` library (with its `gpu` feature) and the crates
//! below it.
//!
//! - [`directives`]: `; run:` / `; expect:` / `; check-ptx:` test directives in `.kir` files, and the
//!   filetest header `; test:` and `; error:` / `; warning:` annotations.
//! - [`kir_test`]: the engine of `kir test`, the main job.
//! - [`filetest`]: the runner of `tests/filetests/`: one `.kir` file per test, its kind named by a `; test:` header.
//! - [`compare`]: comparing output buffers (bitwise, or within ULP/relative/absolute tolerances).
//! - [`tolerance`]: tolerances derived from the approximate ops a kernel uses.
//! - [`engine`]: the interpreter, the PTX emulator and a GPU behind one trait, `Engine` (run a
//!   kernel launch or a launch graph on the bound inputs, get the buffers back): how `kir test`,
//!   `kir fuzz`, `kir diff` and `kir run FILE.ptx` run them.
//! - The executors that run a kernel with the interpreter's exact inputs: [`emu_exec`] (the PTX
//!   emulator), [`gpu_exec`] (a GPU, through the CUDA driver) and [`isolate`] (GPU runs in a worker
//!   process, `kir __gpu-worker`, so a driver crash is an error); [`ptx_args`] binds `kir run
//!   FILE.ptx` arguments to a PTX entry's parameters.
//! - [`enclosure`]: judging other engines by the interpreter's per-element error enclosures (runs
//!   without `tol=`).
//! - [`fuzz`]: random-kernel differential fuzzing and test-case reduction (`kir fuzz`).
//! - [`walk`] (finding `.kir` files) and [`files`] (atomic writes, safe reads).
//! - [`shard`]: splitting a run over machines (`kir test --partition K/N`, `kir fuzz --shard K/N`).
pub mod compare;
pub mod directives;
pub mod emu_exec;
pub mod enclosure;
pub mod engine;
pub mod files;
pub mod filetest;
pub mod fuzz;
pub mod gpu_exec;
pub mod isolate;
pub mod kir_test;
pub mod ptx_args;
pub mod shard;
pub mod tensor_cores;
pub mod tolerance;
pub mod walk;
