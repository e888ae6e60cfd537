//! The server loop: the LSP lifecycle (initialize, shutdown, exit), document synchronization and
//! dispatch of requests to the feature modules.
//!
//! Guarantees:
//! - Every request gets exactly one response: its result, or an error with the JSON-RPC code the
//!   protocol prescribes: `ServerNotInitialized` before `initialize`, `InvalidRequest` after
//!   `shutdown` (and for a second `initialize` or a frame that is no message), `MethodNotFound`
//!   for an unknown method, `InvalidParams` for parameters that do not decode, `ParseError` for a
//!   body that is not JSON, `InternalError` if a handler panicked (the server goes on).
//! - Notifications before `initialize` are dropped (except `exit`); unknown notifications are
//!   ignored.
//! - After every `didOpen` and `didChange`, the document's diagnostics are published (an empty
//!   list clears them), with the document's version; `didClose` clears them.
//! - `exit` ends the loop: exit code 0 after `shutdown`, 1 otherwise (also when the input ends
//!   without `exit`), as the protocol says.
//! - Positions past the end of a line or of the document are clamped, never an error.
//! - A document with a `file:` URI is analyzed as that file (its imports resolved relative to its
//!   directory, [`super::document::Analysis::at_with`]); any other URI as a buffer without a path.
//! - The features answer in kir's types; every answer is converted to LSP types by
//!   [`super::to_proto`] (and positions and ranges of requests by [`super::from_proto`]).
//!   An imported file that is open is read from its current (unsaved) text, not from disk; when a
//!   document is opened, changed or closed, every open document that imports it (directly or not)
//!   is analyzed again and its diagnostics published.

use super::document::Document;
use super::from_proto::{self, uri_to_path};
use super::transport::{self, Incoming};
use super::{diagnostics, format, hover, navigation, outline, to_proto};
use kir::ir::text::load::file_key;
use lsp_server::{Message, Notification, Request, Response};
use lsp_types::*;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const METHOD_NOT_FOUND: i32 = -32601;
const INVALID_PARAMS: i32 = -32602;
const INTERNAL_ERROR: i32 = -32603;
const SERVER_NOT_INITIALIZED: i32 = -32002;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Uninitialized,
    Running,
    ShutDown,
}

/// What the server advertises in its `initialize` response.
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::UTF16),
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::FULL),
            ..Default::default()
        })),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_highlight_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                legend: to_proto::semantic_tokens_legend(),
                full: Some(SemanticTokensFullOptions::Bool(true)),
                range: None,
                ..Default::default()
            },
        )),
        ..Default::default()
    }
}

/// The server's state over one session.
pub struct Server<W: Write> {
    out: W,
    state: State,
    docs: HashMap<Uri, Document>,
}

/// A handler's failure: an error response.
struct Failure(i32, String);

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Failure {
        Failure(INVALID_PARAMS, format!("invalid params: {e}"))
    }
}

impl<W: Write> Server<W> {
    pub fn new(out: W) -> Server<W> {
        Server { out, state: State::Uninitialized, docs: HashMap::new() }
    }

    /// Serves messages until `exit` or the end of the input; returns the process exit code.
    pub fn run(mut self, incoming: std::sync::mpsc::Receiver<Incoming>) -> i32 {
        for msg in incoming {
            let sent = match msg {
                Incoming::Malformed { id, code, message } => {
                    eprintln!("kir lsp: {message}");
                    let code = if code == PARSE_ERROR { PARSE_ERROR } else { INVALID_REQUEST };
                    transport::write_error(&mut self.out, id, code, &message)
                }
                Incoming::Message(Message::Request(req)) => {
                    let resp = self.request(req);
                    self.send(resp.into())
                }
                Incoming::Message(Message::Notification(n)) => {
                    if n.method == "exit" {
                        return if self.state == State::ShutDown { 0 } else { 1 };
                    }
                    self.notification(n)
                }
                // The server sends no requests, so responses are unexpected: ignored.
                Incoming::Message(Message::Response(_)) => Ok(()),
            };
            if let Err(e) = sent {
                eprintln!("kir lsp: cannot write to the client: {e}");
                return 1;
            }
        }
        if self.state == State::ShutDown {
            0
        } else {
            1
        }
    }

    fn send(&mut self, msg: Message) -> std::io::Result<()> {
        transport::write(&mut self.out, &msg)
    }

    fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        match (self.state, req.method.as_str()) {
            (State::Uninitialized, "initialize") => {
                self.state = State::Running;
                let result = InitializeResult {
                    capabilities: capabilities(),
                    server_info: Some(ServerInfo {
                        name: "kir".into(),
                        version: Some(env!("CARGO_PKG_VERSION").into()),
                    }),
                };
                return Response::new_ok(id, result);
            }
            (State::Uninitialized, _) => {
                return Response::new_err(id, SERVER_NOT_INITIALIZED, "the server has not been initialized".into())
            }
            (State::ShutDown, _) => {
                return Response::new_err(id, INVALID_REQUEST, "the server is shut down (send `exit`)".into())
            }
            (State::Running, "initialize") => {
                return Response::new_err(id, INVALID_REQUEST, "the server is already initialized".into())
            }
            (State::Running, "shutdown") => {
                self.state = State::ShutDown;
                return Response::new_ok(id, Value::Null);
            }
            _ => {}
        }
        let method = req.method.clone();
        match catch_unwind(AssertUnwindSafe(|| self.handle(&req.method, req.params))) {
            Ok(Ok(v)) => Response::new_ok(id, v),
            Ok(Err(Failure(code, msg))) => Response::new_err(id, code, msg),
            Err(_) => Response::new_err(id, INTERNAL_ERROR, format!("internal error while handling `{method}`")),
        }
    }

    fn doc(&self, uri: &Uri) -> Option<&Document> {
        self.docs.get(uri)
    }

    /// Runs a request handler; the result as JSON.
    fn handle(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        let v = match method {
            "textDocument/hover" => {
                let p: HoverParams = serde_json::from_value(params)?;
                let tp = p.text_document_position_params;
                let r = self.doc(&tp.text_document.uri).and_then(|d| {
                    hover::hover(d, d.offset(from_proto::position(tp.position))).map(|h| to_proto::hover(d, h))
                });
                serde_json::to_value(r)?
            }
            "textDocument/definition" => {
                let p: GotoDefinitionParams = serde_json::from_value(params)?;
                let tp = p.text_document_position_params;
                let uri = &tp.text_document.uri;
                let r = self.doc(uri).and_then(|d| {
                    let place = navigation::definition(d, d.offset(from_proto::position(tp.position)))?;
                    to_proto::location(d, uri, &place).map(GotoDefinitionResponse::Scalar)
                });
                serde_json::to_value(r)?
            }
            "textDocument/references" => {
                let p: ReferenceParams = serde_json::from_value(params)?;
                let tp = p.text_document_position;
                let uri = &tp.text_document.uri;
                let incl = p.context.include_declaration;
                let r: Option<Vec<Location>> = self.doc(uri).map(|d| {
                    let places = navigation::references(d, d.offset(from_proto::position(tp.position)), incl);
                    places.iter().filter_map(|p| to_proto::location(d, uri, p)).collect()
                });
                serde_json::to_value(r)?
            }
            "textDocument/documentHighlight" => {
                let p: DocumentHighlightParams = serde_json::from_value(params)?;
                let tp = p.text_document_position_params;
                let r: Option<Vec<DocumentHighlight>> = self.doc(&tp.text_document.uri).map(|d| {
                    let hs = navigation::highlights(d, d.offset(from_proto::position(tp.position)));
                    hs.iter().map(|h| to_proto::highlight(d, h)).collect()
                });
                serde_json::to_value(r)?
            }
            "textDocument/documentSymbol" => {
                let p: DocumentSymbolParams = serde_json::from_value(params)?;
                let r = self.doc(&p.text_document.uri).map(|d| {
                    let entries = outline::document_symbols(d);
                    DocumentSymbolResponse::Nested(
                        entries.into_iter().map(|e| to_proto::document_symbol(d, e)).collect(),
                    )
                });
                serde_json::to_value(r)?
            }
            "textDocument/formatting" => {
                let p: DocumentFormattingParams = serde_json::from_value(params)?;
                let r: Option<Vec<TextEdit>> = self.doc(&p.text_document.uri).and_then(|d| {
                    Some(format::format_document(d)?.into_iter().map(|e| to_proto::text_edit(d, e)).collect())
                });
                serde_json::to_value(r)?
            }
            "textDocument/semanticTokens/full" => {
                let p: SemanticTokensParams = serde_json::from_value(params)?;
                let r = self.doc(&p.text_document.uri).map(|d| {
                    SemanticTokensResult::Tokens(SemanticTokens { result_id: None, data: to_proto::semantic_tokens(d) })
                });
                serde_json::to_value(r)?
            }
            _ => return Err(Failure(METHOD_NOT_FOUND, format!("unknown method `{method}`"))),
        };
        Ok(v)
    }

    fn notification(&mut self, n: Notification) -> std::io::Result<()> {
        if self.state == State::Uninitialized {
            return Ok(());
        }
        let method = n.method.clone();
        let changed = catch_unwind(AssertUnwindSafe(|| self.sync(n)));
        match changed {
            Ok(Ok(Some(uri))) => {
                self.publish(uri.clone())?;
                for dependent in self.reanalyze_importers_of(&uri) {
                    self.publish(dependent)?;
                }
                Ok(())
            }
            Ok(Ok(None)) => Ok(()),
            Ok(Err(e)) => {
                eprintln!("kir lsp: `{method}`: {e}");
                Ok(())
            }
            Err(_) => {
                eprintln!("kir lsp: internal error while handling `{method}`");
                Ok(())
            }
        }
    }

    /// Applies a document notification; the document whose diagnostics to publish.
    fn sync(&mut self, n: Notification) -> Result<Option<Uri>, serde_json::Error> {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let p: DidOpenTextDocumentParams = serde_json::from_value(n.params)?;
                let td = p.text_document;
                let doc = self.analyzed(td.text, td.version, &td.uri);
                self.docs.insert(td.uri.clone(), doc);
                Ok(Some(td.uri))
            }
            "textDocument/didChange" => {
                let p: DidChangeTextDocumentParams = serde_json::from_value(n.params)?;
                let uri = p.text_document.uri;
                let Some(doc) = self.docs.get_mut(&uri) else { return Ok(None) };
                for c in &p.content_changes {
                    doc.splice(c.range.map(from_proto::range), &c.text);
                }
                let text = std::mem::take(&mut doc.text);
                let doc = self.analyzed(text, p.text_document.version, &uri);
                self.docs.insert(uri.clone(), doc);
                Ok(Some(uri))
            }
            "textDocument/didClose" => {
                let p: DidCloseTextDocumentParams = serde_json::from_value(n.params)?;
                self.docs.remove(&p.text_document.uri);
                Ok(Some(p.text_document.uri))
            }
            _ => Ok(None),
        }
    }

    fn publish(&mut self, uri: Uri) -> std::io::Result<()> {
        let (diagnostics, version) = match self.docs.get(&uri) {
            Some(d) => {
                let shown = diagnostics::for_document(d);
                (shown.iter().map(|s| to_proto::diagnostic(d, &uri, s)).collect(), Some(d.version))
            }
            None => (vec![], None),
        };
        let params = PublishDiagnosticsParams { uri, diagnostics, version };
        self.send(Notification::new("textDocument/publishDiagnostics".into(), params).into())
    }
}

impl<W: Write> Server<W> {
    /// A document analyzed (as the file its URI names, if any; its imports that are open here are
    /// read from their current text), or, if the analysis panicked, with one diagnostic saying so.
    fn analyzed(&self, text: String, version: i32, uri: &Uri) -> Document {
        let path = uri_to_path(uri);
        let open = |key: &Path| {
            self.docs
                .iter()
                .find(|(u, _)| *u != uri && uri_to_path(u).is_some_and(|p| file_key(&p) == key))
                .map(|(_, d)| d.text.clone())
        };
        match catch_unwind(AssertUnwindSafe(|| Document::at_with(text.clone(), version, path.as_deref(), &open))) {
            Ok(d) => d,
            Err(_) => Document::failed(text, version),
        }
    }

    /// After document `uri` was opened, changed or closed: analyzes again every other open
    /// document whose last analysis loaded it as an import (directly or not), so their diagnostics
    /// follow its current text. Returns them (to publish).
    fn reanalyze_importers_of(&mut self, uri: &Uri) -> Vec<Uri> {
        let Some(key) = uri_to_path(uri).map(|p| file_key(&p)) else { return vec![] };
        let mut importers: Vec<Uri> =
            self.docs.iter().filter(|(u, d)| *u != uri && d.imports_file(&key)).map(|(u, _)| u.clone()).collect();
        importers.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        for u in &importers {
            let Some(d) = self.docs.get_mut(u) else { continue };
            let (text, version) = (std::mem::take(&mut d.text), d.version);
            let doc = self.analyzed(text, version, u);
            self.docs.insert(u.clone(), doc);
        }
        importers
    }
}
