//! kir-cli: the `kir` command line tool's own modules, beside the binary's `main.rs` and `cmd/`
//! (one module per subcommand). The tool is built on the `kir` library and `kir-harness`.
//!
//! - [`cfg_svg`]: a kernel's CFG as an SVG picture with the divergence verdicts (`kir cfg --format svg`).
//! - [`lsp`]: the language server behind `kir lsp` (diagnostics, hover, navigation, formatting, semantic tokens).
pub mod cfg_svg;
pub mod lsp;
