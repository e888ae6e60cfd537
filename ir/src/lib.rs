//! kir-ir: the kir intermediate representation.
//!
//! - [`types`]: value types and typed constants.
//! - [`op`]: the op set and each op's signature and mnemonic.
//! - [`ir`]: modules, kernels, blocks with block parameters, instructions, SSA values (arena handles).
//! - [`parse`] and [`printer`]: the `.kir` text format (logos lexer, lalrpop grammar); the printer's
//!   output re-parses to a structurally equal module.
//! - [`graph`]: launch graphs (ordered kernel launches over buffers), their dependency DAG and
//!   verification.
//! - [`diag`]: located diagnostics rendered as `file:line:col` with carets.

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
