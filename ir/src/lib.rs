//! kir-ir: the kir intermediate representation, laid out by concern (no two modules import each
//! other in a circle: `tests/layering.rs`).
//!
//! - The data model: [`types`] (value types, typed constants), [`op`] (the op set, each op's
//!   signature), [`mnemonic`] (the one table of op spellings, read by the printer and the parser),
//!   [`ir`] (modules, kernels and functions, blocks with block parameters, instructions, SSA
//!   values: arena handles), [`graph`] (launch graphs), [`span`], [`diag`] (located diagnostics
//!   rendered as `file:line:col` with carets).
//! - [`text`]: the `.kir` text format both ways (lexer, grammar, syntax tree, lowering, imports,
//!   printer, formatter); the printer's output re-parses to a structurally equal module.
//! - [`verify`]: the verifier; [`verify::verify`] turns a `Module` into a [`verify::Verified`] one
//!   (validity as a type, with the CFGs it built) or [`verify::Diagnostics`].
//! - [`analysis`]: CFG with dominators and post-dominators, pointer provenance, call graph, launch
//!   effects — each written once.
//! - [`subst`] and [`inline`]: IR transformations the passes build on; [`eval`]: the one
//!   definition of every pure op.

pub mod analysis;
pub mod diag;
pub mod eval;
/// Random valid kernels and modules (property tests, `kir fuzz`, benchmarks): behind the
/// `generate` feature, so a library user of the IR does not compile it.
#[cfg(any(test, feature = "generate"))]
pub mod generate;
pub mod graph;
pub mod inline;
pub mod ir;
pub mod mnemonic;
pub mod op;
pub mod rng;
pub mod span;
pub mod subst;
pub mod text;
pub mod types;
pub mod verify;

pub use diag::{Diagnostic, Severity};
pub use ir::*;
pub use op::*;
pub use span::Span;
pub use text::parse::parse;
pub use text::printer::{print_kernel, print_module};
pub use types::{AddrSpace, Constant, ScalarType, Type};
