//! kir-passes: the pass manager and the optimization passes.
//!
//! Guarantees:
//! - Passes are registered by name in [`registry::registry`]; a pipeline is a string such as
//!   `fold,simplify-cfg,dce` or `fold{approx},dce` ([`pipeline::parse_pipeline`]);
//!   [`pipeline::DEFAULT_PIPELINE`] is what `kir opt` runs without `--passes`.
//! - [`manager::run_pipeline`] takes and returns a checked module ([`kir_ir::verify::Checked`]), runs every kernel pass on every kernel and
//!   function and every module pass once on the module, optionally verifies after each pass (keeping the IR
//!   from before a pass that breaks it), and produces the `--print-ir-*` dumps, per-step dump
//!   files, statistics and timings.
//! - Every pass preserves the behaviour of a verified kernel, as defined by the interpreter, bit
//!   for bit (the property tests in `tests/` check this on random kernels) — except `fma-contract`,
//!   which exists to change rounding (fusing `mul` + `add` into `fma`) and says so in its header.
//!
//! - Device functions: kernel passes run on every body, kernels and functions alike; `inline`
//!   (first in the default pipeline) removes every call.
//!
//! Modules: [`pass`] (the two kinds of pass, `Pass` and `ModulePass`, held as a `PassKind`; stats;
//! options), [`pipeline`], [`registry`], [`manager`], [`edit`] (IR editing helpers), the passes
//! [`inline`], [`fold`], [`dce`], [`simplify_cfg`], [`fuse`], [`fma_contract`], and
//! [`verify_barriers`] (barrier verification, which lives in `kir_ir::verify`, as a pass).

pub mod cse;
pub mod dce;
pub mod edit;
pub mod fma_contract;
pub mod fold;
pub mod fuse;
pub mod inline;
pub mod ivsr;
pub mod layout;
pub mod licm;
pub mod manager;
pub mod offsets;
pub mod pass;
pub mod pipeline;
pub mod registry;
pub mod simplify_cfg;
pub mod unroll;
pub mod verify_barriers;
/// The uniformity (divergence) analysis lives with the other analyses in `kir-ir`.
pub use kir_ir::analysis::uniformity;

pub use manager::{
    check_input, run_on_kernel, run_pipeline, run_pipeline_in_place, PassError, Report, RunConfig, StepReport,
};
pub use pass::{ModulePass, Pass, PassContext, PassKind, PassOptions, PassStats};
pub use pipeline::{parse_pipeline, Pipeline, Step, DEFAULT_PIPELINE};
pub use registry::{registry, PassInfo};
