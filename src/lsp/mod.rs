//! `kir lsp`: a Language Server Protocol server for `.kir` files over stdin/stdout.
//!
//! - [`server`]: the lifecycle and dispatch loop (every request answered, no panic escapes).
//! - [`to_proto`] and [`from_proto`]: the one conversion between kir's types (byte spans,
//!   [`document::Place`], positions) and LSP types; the features below know no LSP type, and only
//!   these two modules and the server import `lsp_types`.
//! - [`transport`]: `Content-Length`-framed JSON-RPC on stdio, robust to malformed input.
//! - [`document`]: open documents, UTF-16 position conversion, the analysis of each version
//!   (parse or, for a `file:` URI, load with its imports resolved; `kir check`'s checks; the name
//!   index, in which calls of imported functions resolve to their files).
//! - [`diagnostics`]: kir diagnostics as shown in a document (explanation chains as related
//!   places).
//! - [`hover`]: types, definitions and uniformity verdicts of values; op semantics
//!   ([`op_docs`], from `docs/language.md`); kernel signatures.
//! - [`navigation`]: go to definition (also into imported files), find references and document
//!   highlights; [`symbols`]: the name index; [`outline`]: the document outline.
//! - [`format`](mod@format): whole-document formatting through `kir fmt`'s formatter.
//! - [`semantic_tokens`]: token classes for coloring.
//!
//! Guarantees: the server never panics or hangs on any input (malformed frames, unknown methods,
//! requests before `initialize`, positions past the end, files that do not parse); it exits with
//! code 0 on `shutdown` then `exit`. See `docs/lsp.md` for what each feature shows.

pub mod diagnostics;
pub mod document;
pub mod format;
pub mod from_proto;
pub mod hover;
pub mod navigation;
pub mod op_docs;
pub mod outline;
pub mod semantic_tokens;
pub mod server;
pub mod symbols;
pub mod to_proto;
pub mod transport;

/// Runs the server on stdin/stdout until `exit` (or the end of the input); returns the exit code.
pub fn run_stdio() -> i32 {
    // The analyses run on this thread: give it a generous stack for deep (but bounded) inputs.
    let worker = std::thread::Builder::new().name("kir-lsp".into()).stack_size(64 << 20).spawn(|| {
        let incoming = transport::spawn_reader(std::io::stdin());
        server::Server::new(std::io::stdout()).run(incoming)
    });
    match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => 1,
        Err(e) => {
            eprintln!("kir lsp: cannot start the server thread: {e}");
            1
        }
    }
}
