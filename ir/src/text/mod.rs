//! The `.kir` text format, in both directions: [`lexer`] (logos) and the lalrpop grammar build
//! the syntax tree of [`ast`]; [`parse`] lowers it to a [`crate::Module`] (with [`graph_parse`] for
//! launch graphs) and reports every resolution error located; [`load`] reads a file together with
//! the files it imports; [`printer`] writes a module back as text that re-parses to an equal
//! module, and [`format`] is `kir fmt` (the printer's output plus the source's comments).
//!
//! Nothing in this module verifies: types, dominance and every other invariant are the
//! verifier's ([`crate::verify`]); the text format depends on the data model only.

pub mod ast;
pub mod format;
mod graph_parse;
pub mod lexer;
pub mod literal;
pub mod load;
pub mod parse;
pub mod printer;
