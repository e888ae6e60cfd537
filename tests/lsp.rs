//! `kir lsp` end to end: the real binary driven over stdio with `Content-Length`-framed JSON-RPC,
//! as an editor drives it. Every read has a timeout, so a hung server fails the test instead of
//! hanging CI.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(20);

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    /// Messages received while waiting for something else.
    pending: VecDeque<Value>,
    next_id: i64,
}

/// Reads framed messages until the end of the stream.
fn read_frames(out: impl Read, tx: mpsc::Sender<Value>) {
    let mut r = BufReader::new(out);
    loop {
        let mut len = None;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                len = v.parse::<usize>().ok();
            }
        }
        let mut body = vec![0; len.expect("a frame without Content-Length")];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let v: Value = serde_json::from_slice(&body).expect("the server sent invalid JSON");
        if tx.send(v).is_err() {
            return;
        }
    }
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kir"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start `kir lsp`");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_frames(out, tx));
        let stdin = child.stdin.take();
        Client { child, stdin, rx, pending: VecDeque::new(), next_id: 1 }
    }

    /// Starts a server and initializes it; returns it with the `initialize` result.
    fn initialized() -> (Client, Value) {
        let mut c = Client::start();
        let r = c.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {}}));
        c.notify("initialized", json!({}));
        (c, r)
    }

    fn send_raw(&mut self, body: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        write!(stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        stdin.write_all(body).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, v: Value) {
        self.send_raw(v.to_string().as_bytes());
    }

    fn recv(&mut self) -> Value {
        if let Some(v) = self.pending.pop_front() {
            return v;
        }
        self.rx.recv_timeout(TIMEOUT).expect("the server did not answer in time (hung or crashed)")
    }

    /// The next message satisfying `f`; others are kept for later.
    fn recv_matching(&mut self, f: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.pending.iter().position(&f) {
            return self.pending.remove(i).unwrap();
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.rx.recv_timeout(left).expect("the server did not answer in time (hung or crashed)");
            if f(&v) {
                return v;
            }
            self.pending.push_back(v);
        }
    }

    /// Sends a request and returns its whole response (`result` or `error`).
    fn request_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.recv_matching(|v| v.get("id") == Some(&json!(id)) && v.get("method").is_none())
    }

    /// Sends a request and returns its result (failing on an error response).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let r = self.request_raw(method, params);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next diagnostics published for `uri`.
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let v = self
            .recv_matching(|v| v["method"] == "textDocument/publishDiagnostics" && v["params"]["uri"] == json!(uri));
        v["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "kir", "version": 1, "text": text}}),
        );
        self.diagnostics(uri)
    }

    fn at(&mut self, method: &str, uri: &str, line: u32, character: u32) -> Value {
        self.request(
            method,
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character},
                   "context": {"includeDeclaration": true}}),
        )
    }

    /// Sends `shutdown` and `exit`; returns the exit code.
    fn shutdown(mut self) -> i32 {
        let r = self.request("shutdown", Value::Null);
        assert_eq!(r, Value::Null);
        self.notify("exit", Value::Null);
        drop(self.stdin.take());
        self.wait()
    }

    fn wait(&mut self) -> i32 {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn range(v: &Value) -> (u64, u64, u64, u64) {
    let g = |k: &str, f: &str| v[k][f].as_u64().unwrap_or_else(|| panic!("no range in {v}"));
    (g("start", "line"), g("start", "character"), g("end", "line"), g("end", "character"))
}

fn hover_text(v: &Value) -> String {
    v["contents"]["value"].as_str().unwrap_or_else(|| panic!("no hover text in {v}")).to_string()
}

const BARRIER: &str = include_str!("filetests/barriers/bad_barrier_under_tid.kir");
const BARRIER_URI: &str = "file:///w/bad_barrier_under_tid.kir";

#[test]
fn initialize_advertises_the_features() {
    let (c, r) = Client::initialized();
    let caps = &r["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-16");
    assert_eq!(caps["textDocumentSync"]["change"], 1, "full sync: {caps}");
    assert_eq!(caps["textDocumentSync"]["openClose"], true);
    for k in [
        "hoverProvider",
        "definitionProvider",
        "referencesProvider",
        "documentSymbolProvider",
        "documentFormattingProvider",
    ] {
        assert_eq!(caps[k], true, "{k}: {caps}");
    }
    let legend = &caps["semanticTokensProvider"]["legend"]["tokenTypes"];
    for t in ["keyword", "type", "variable", "label", "function", "number", "comment", "namespace"] {
        assert!(legend.as_array().unwrap().contains(&json!(t)), "{t} not in {legend}");
    }
    assert_eq!(caps["semanticTokensProvider"]["full"], true);
    assert_eq!(r["serverInfo"]["name"], "kir");
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn diagnostics_follow_the_text() {
    let (mut c, _) = Client::initialized();
    let uri = "file:///w/k.kir";
    // A parse error: an operand is missing before `ret`.
    let d = c.open(uri, "kernel @k(%a: u32) {\nentry:\n  %x = add.u32 %a,\n  ret\n}\n");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(range(&d[0]["range"]), (3, 2, 3, 5));
    assert_eq!(d[0]["severity"], 1);
    assert_eq!(d[0]["source"], "kir");
    let msg = d[0]["message"].as_str().unwrap();
    assert!(msg.starts_with("unexpected `ret`\nunexpected here\nnote: expected one of"), "{msg}");

    // A verifier error, with the definition of the mistyped operand as related information.
    let bad = "kernel @k(%a: u32, %f: f32) {\nentry:\n  %x = add.u32 %a, %f\n  ret\n}\n";
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": bad}]}),
    );
    let d = c.diagnostics(uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(range(&d[0]["range"]), (2, 2, 2, 21));
    let msg = d[0]["message"].as_str().unwrap();
    assert!(msg.starts_with("type mismatch: operand 2 of `add.u32` must be `u32`, but `%f` has type `f32`"), "{msg}");
    assert!(msg.contains("note: in kernel `@k`, block `entry`"), "{msg}");
    let rel = d[0]["relatedInformation"].as_array().unwrap();
    assert_eq!(range(&rel[0]["location"]["range"]), (0, 19, 0, 21));
    assert_eq!(rel[0]["location"]["uri"], uri);
    assert!(rel[0]["message"].as_str().unwrap().contains("`%f` is defined here"));

    // A non-ASCII character outside a comment: its range is counted in UTF-16 code units.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "; é\n  𝄞 kernel"}]}),
    );
    let d = c.diagnostics(uri);
    assert_eq!(range(&d[0]["range"]), (1, 2, 1, 4), "{d:?}");

    // Fixed: the diagnostics are cleared.
    let good = "kernel @k(%a: u32, %f: f32) {\nentry:\n  %x = add.u32 %a, %a\n  ret\n}\n";
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": good}]}),
    );
    assert!(c.diagnostics(uri).is_empty());
    // An incremental change (a client that sends ranges anyway) is applied too: the second `%a`
    // becomes `%f` again.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 5}, "contentChanges": [
            {"range": {"start": {"line": 2, "character": 19}, "end": {"line": 2, "character": 21}}, "text": "%f"}]}),
    );
    let d = c.diagnostics(uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(range(&d[0]["range"]), (2, 2, 2, 21));
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
    assert!(c.diagnostics(uri).is_empty());
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn barrier_divergence_carries_its_explanation_chain() {
    let (mut c, _) = Client::initialized();
    let d = c.open(BARRIER_URI, BARRIER);
    assert_eq!(d.len(), 1, "{d:?}");
    // `barrier` on line 11 (1-based).
    assert_eq!(range(&d[0]["range"]), (10, 2, 10, 9));
    let msg = d[0]["message"].as_str().unwrap();
    assert!(msg.starts_with("barrier must be reached by all threads of the block\nsome threads"), "{msg}");
    assert!(msg.contains("\nnote: every thread of a block must reach each barrier together"), "{msg}");
    let rel = d[0]["relatedInformation"].as_array().unwrap();
    let steps: Vec<(String, (u64, u64, u64, u64))> =
        rel.iter().map(|r| (r["message"].as_str().unwrap().to_string(), range(&r["location"]["range"]))).collect();
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert!(steps[0].0.starts_with("(1) only threads where `%small` is true"), "{steps:?}");
    assert_eq!(steps[0].1, (7, 2, 7, 23));
    assert!(steps[1].0.starts_with("(2) `%small` depends on `%tid`"), "{steps:?}");
    assert_eq!(steps[1].1, (6, 2, 6, 26));
    assert!(steps[2].0.starts_with("(3) `%tid` is the thread index `tid.x`"), "{steps:?}");
    assert_eq!(steps[2].1, (4, 2, 4, 6));
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn hover_shows_types_verdicts_ops_and_signatures() {
    let (mut c, _) = Client::initialized();
    c.open(BARRIER_URI, BARRIER);
    // `%small` where the branch uses it: its type, definition and why it is varying.
    let h = c.at("textDocument/hover", BARRIER_URI, 7, 6);
    assert_eq!(range(&h["range"]), (7, 5, 7, 11));
    let t = hover_text(&h);
    assert!(t.contains("%small: pred"), "{t}");
    assert!(t.contains("result of `lt.u32` in block `entry`"), "{t}");
    assert!(t.contains("line 7"), "{t}");
    assert!(t.contains("**varying**"), "{t}");
    assert!(t.contains("`%small` depends on `%tid`"), "{t}");
    assert!(t.contains("`%tid` is `tid.x`, which differs between threads"), "{t}");
    // A kernel parameter is uniform.
    let t = hover_text(&c.at("textDocument/hover", BARRIER_URI, 6, 25));
    assert!(t.contains("%k: u32") && t.contains("parameter 1 of kernel") && t.contains("**uniform**"), "{t}");
    // An op: its line of docs/language.md.
    let h = c.at("textDocument/hover", BARRIER_URI, 6, 14);
    assert_eq!(range(&h["range"]), (6, 11, 6, 17));
    let t = hover_text(&h);
    assert!(t.contains("`eq ne lt le gt ge`") && t.contains("Comparison and selection"), "{t}");
    assert!(t.contains("`(u32, u32) → pred`"), "{t}");
    let t = hover_text(&c.at("textDocument/hover", BARRIER_URI, 10, 4));
    assert!(t.contains("every thread of the block waits here"), "{t}");
    // The kernel name: its signature.
    let t = hover_text(&c.at("textDocument/hover", BARRIER_URI, 1, 12));
    assert!(t.contains("kernel @barrier_under_tid(%out: ptr<global, u32>, %k: u32)"), "{t}");
    // A block: its control uniformity.
    let t = hover_text(&c.at("textDocument/hover", BARRIER_URI, 8, 1));
    assert!(t.contains("block `sync`") && t.contains("**varying**") && t.contains("`entry`"), "{t}");
    // Nothing there, and past the end of the document: no hover, no error.
    assert_eq!(c.at("textDocument/hover", BARRIER_URI, 2, 0), Value::Null);
    assert_eq!(c.at("textDocument/hover", BARRIER_URI, 999, 999), Value::Null);
    // Past the end of a line: clamped to the line's end, just after `tid.x`.
    assert!(hover_text(&c.at("textDocument/hover", BARRIER_URI, 4, 999)).contains("the thread's index in the block"));
    assert_eq!(c.at("textDocument/hover", "file:///not/open.kir", 0, 0), Value::Null);
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn navigation_and_outline() {
    let (mut c, _) = Client::initialized();
    c.open(BARRIER_URI, BARRIER);
    // `%tid` as an index in `store %tp[%tid], %tid` goes to `%tid = tid.x`.
    let d = c.at("textDocument/definition", BARRIER_URI, 9, 13);
    assert_eq!(d["uri"], BARRIER_URI);
    assert_eq!(range(&d["range"]), (4, 2, 4, 6));
    // `done` in the branch goes to its label; `@tile` in `addr` to its declaration.
    assert_eq!(range(&c.at("textDocument/definition", BARRIER_URI, 7, 20)["range"]), (14, 0, 14, 4));
    assert_eq!(range(&c.at("textDocument/definition", BARRIER_URI, 5, 14)["range"]), (2, 9, 2, 14));
    assert_eq!(c.at("textDocument/definition", BARRIER_URI, 2, 0), Value::Null);
    // Every occurrence of `%tid`, the definition first.
    let refs = c.at("textDocument/references", BARRIER_URI, 4, 3);
    let got: Vec<_> = refs.as_array().unwrap().iter().map(|l| range(&l["range"])).collect();
    assert_eq!(got, vec![(4, 2, 4, 6), (6, 18, 6, 22), (9, 12, 9, 16), (9, 19, 9, 23), (12, 13, 12, 17)]);

    let syms = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": BARRIER_URI}}));
    let syms = syms.as_array().unwrap();
    assert_eq!(syms.len(), 1);
    assert_eq!(syms[0]["name"], "@barrier_under_tid");
    assert_eq!(syms[0]["kind"], 12, "a function");
    assert_eq!(range(&syms[0]["range"]), (1, 0, 16, 1));
    let children: Vec<&str> =
        syms[0]["children"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(children, ["@tile", "entry", "sync", "done"]);
    let sync = &syms[0]["children"][2];
    assert_eq!(range(&sync["selectionRange"]), (8, 0, 8, 4));
    assert_eq!(range(&sync["range"]), (8, 0, 13, 10));

    // A graph: `launch @k` goes to the kernel; temps are symbols too.
    let uri = "file:///w/g.kir";
    let text = "kernel @k(%p: ptr<global, f32>, %n: u32) {\nentry:\n  ret\n}\n\ngraph @g(%n: u32) {\n  temp %t: f32[%n]\n  launch @k grid(%n) block(1) (%t, %n)\n}\n";
    assert!(c.open(uri, text).is_empty());
    assert_eq!(range(&c.at("textDocument/definition", uri, 7, 10)["range"]), (0, 7, 0, 9));
    assert_eq!(range(&c.at("textDocument/definition", uri, 7, 32)["range"]), (6, 7, 6, 9));
    let t = hover_text(&c.at("textDocument/hover", uri, 7, 10));
    assert!(t.contains("kernel @k(%p: ptr<global, f32>, %n: u32)"), "{t}");
    let syms = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    let names: Vec<&str> = syms.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["@k", "@g"]);
    assert_eq!(syms[1]["children"][0]["name"], "%t");
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn formatting_is_kir_fmt() {
    let (mut c, _) = Client::initialized();
    let uri = "file:///w/f.kir";
    let text =
        "; a comment, non-ASCII: é 𝄞\nkernel   @k( %a:u32 ) {\nentry:\n      %x = add.u32 %a,   1 ; why\n  ret\n}\n";
    c.open(uri, text);
    let edits = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    let edits = edits.as_array().unwrap();
    assert_eq!(edits.len(), 1);
    assert_eq!(range(&edits[0]["range"]), (0, 0, 6, 0));
    let dir = std::env::temp_dir().join(format!("kir-lsp-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.kir");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kir")).arg("fmt").arg(&path).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success());
    assert_eq!(edits[0]["newText"].as_str().unwrap(), String::from_utf8(out.stdout).unwrap());
    // Canonical text: no edits. A file that does not parse: no edits, no error.
    let canonical = edits[0]["newText"].as_str().unwrap().to_string();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": canonical}]}),
    );
    c.diagnostics(uri);
    let r = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert_eq!(r, json!([]));
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "kernel @k( {"}]}),
    );
    c.diagnostics(uri);
    let r = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert_eq!(r, Value::Null);
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn semantic_tokens_classify_and_count_utf16() {
    let (mut c, r) = Client::initialized();
    let legend: Vec<String> = r["capabilities"]["semanticTokensProvider"]["legend"]["tokenTypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    let uri = "file:///w/s.kir";
    let text = "; é𝄞\nkernel @k(%a: u32) {\nentry:\n  %x = add.u32 %a, 1\n  ret\n}\n";
    c.open(uri, text);
    let r = c.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": uri}}));
    let data: Vec<u64> = r["data"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(data.len() % 5, 0);
    // Decode to (line, column, length, type).
    let (mut line, mut col) = (0, 0);
    let mut toks = vec![];
    for t in data.chunks(5) {
        if t[0] > 0 {
            col = 0;
        }
        line += t[0];
        col += t[1];
        toks.push((line, col, t[2], legend[t[3] as usize].clone()));
    }
    let tok = |l: u64, ch: u64| toks.iter().find(|t| t.0 == l && t.1 == ch).map(|t| (t.2, t.3.as_str()));
    assert_eq!(tok(0, 0), Some((5, "comment")), "{toks:?}"); // `; é𝄞`: 5 UTF-16 units (8 bytes)
    assert_eq!(tok(1, 0), Some((6, "keyword")));
    assert_eq!(tok(1, 7), Some((2, "namespace")));
    assert_eq!(tok(1, 10), Some((2, "variable")));
    assert_eq!(tok(1, 14), Some((3, "type")));
    assert_eq!(tok(2, 0), Some((5, "label")));
    assert_eq!(tok(3, 2), Some((2, "variable")));
    assert_eq!(tok(3, 7), Some((7, "function")));
    assert_eq!(tok(3, 19), Some((1, "number")));
    assert_eq!(tok(4, 2), Some((3, "keyword")));
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn bad_input_never_crashes_the_server() {
    // Requests before `initialize`.
    let mut c = Client::start();
    let r = c.request_raw("textDocument/hover", json!({}));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    // Malformed frames: not JSON, JSON that is no message; both answered, then business as usual.
    c.send_raw(b"{not json");
    let r = c.recv();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert_eq!(r["id"], Value::Null);
    c.send_raw(b"[1, 2]");
    assert_eq!(c.recv()["error"]["code"], -32600);
    c.send(json!({"jsonrpc": "2.0", "id": 77, "method": 5}));
    let r = c.recv();
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!(77), json!(-32600)), "{r}");
    let r = c.request("initialize", json!({"capabilities": {}}));
    assert!(r["capabilities"].is_object());
    // A second initialize, an unknown method, bad params: errors; unknown notifications: ignored.
    assert_eq!(c.request_raw("initialize", json!({"capabilities": {}}))["error"]["code"], -32600);
    let r = c.request_raw("kir/noSuchMethod", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert_eq!(c.request_raw("textDocument/hover", json!({"nonsense": true}))["error"]["code"], -32602);
    c.notify("kir/noSuchNotification", json!({}));
    c.notify("textDocument/didOpen", json!({"bad": 1}));
    // Text that is not kir at all, positions anywhere.
    let uri = "file:///w/junk.kir";
    let d = c.open(uri, "\u{0}\u{7f} }}}{{ %%% @@ kernel ( ; é\r\n\r");
    assert!(!d.is_empty());
    for (l, ch) in [(0, 0), (0, 5), (0, 100), (1, 0), (2, 0), (100, 100)] {
        for m in ["textDocument/hover", "textDocument/definition", "textDocument/references"] {
            let r = c.request_raw(m, json!({"textDocument": {"uri": uri}, "position": {"line": l, "character": ch}, "context": {"includeDeclaration": true}}));
            assert!(r.get("error").is_none(), "{m} {l}:{ch}: {r}");
        }
    }
    c.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": uri}}));
    c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    // After shutdown, requests are refused; exit then ends the process with 0.
    assert_eq!(c.request("shutdown", Value::Null), Value::Null);
    assert_eq!(c.request_raw("textDocument/hover", json!({}))["error"]["code"], -32600);
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), 0);
}

#[test]
fn exit_without_shutdown_is_code_1() {
    let (mut c, _) = Client::initialized();
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), 1);
    // The end of the input also ends the server.
    let (mut c, _) = Client::initialized();
    drop(c.stdin.take());
    assert_eq!(c.wait(), 1);
}

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn with(files: &[(&str, &str)]) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kir-lsp-imports-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, text) in files {
            let p = dir.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        // The canonical path, as the server reports locations.
        TempDir(std::fs::canonicalize(&dir).unwrap())
    }

    /// The `file:` URI of a file in the directory.
    fn uri(&self, name: &str) -> String {
        let path = self.0.join(name);
        let mut s = String::from("file://");
        for b in path.to_str().unwrap().bytes() {
            if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
                s.push(b as char);
            } else {
                s.push_str(&format!("%{b:02X}"));
            }
        }
        s
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const FUNCS: &str = "\
; The sum of %v and %w.
; Both must be finite.
func @add2(%v: f32, %r: ptr<shared, f32>) -> f32 {
entry:
  %w = load %r[0]
  %s = add.f32 %v, %w
  ret %s
}

kernel @k(%p: ptr<global, f32>) {
  shared @t: f32[32]
entry:
  %tp = addr @t
  %x = load %p[0]
  %y = call @add2(%x, %tp)
  %z = call @add2(%y, %tp)
  store %p[0], %z
  ret
}
";

#[test]
fn functions_in_the_outline_navigation_and_hover() {
    let (mut c, _) = Client::initialized();
    let uri = "file:///w/funcs.kir";
    let d = c.open(uri, FUNCS);
    assert!(d.is_empty(), "{d:?}");
    // The outline: the function, with its signature and parameters, then the kernel.
    let syms = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    let syms = syms.as_array().unwrap();
    let names: Vec<&str> = syms.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["@add2", "@k"]);
    assert_eq!(syms[0]["kind"], 12, "a function");
    assert_eq!(syms[0]["detail"], "func (%v: f32, %r: ptr<shared, f32>) -> f32");
    assert_eq!(range(&syms[0]["selectionRange"]), (2, 5, 2, 10));
    let children: Vec<(&str, &str)> = syms[0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["detail"].as_str().unwrap()))
        .collect();
    assert_eq!(children, [("%v", "parameter: f32"), ("%r", "parameter: ptr<shared, f32>"), ("entry", "block")]);
    assert_eq!(syms[1]["detail"], "kernel");
    let kchildren: Vec<&str> =
        syms[1]["children"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(kchildren, ["@t", "entry"]);

    // `call @add2` goes to the function's name.
    let def = c.at("textDocument/definition", uri, 14, 15);
    assert_eq!(def["uri"], uri);
    assert_eq!(range(&def["range"]), (2, 5, 2, 10));
    // References: the definition and both calls; highlights the same, the definition a write.
    let refs = c.at("textDocument/references", uri, 2, 7);
    let got: Vec<_> = refs.as_array().unwrap().iter().map(|l| range(&l["range"])).collect();
    assert_eq!(got, vec![(2, 5, 2, 10), (14, 12, 14, 17), (15, 12, 15, 17)]);
    let hl = c.at("textDocument/documentHighlight", uri, 15, 14);
    let got: Vec<_> = hl.as_array().unwrap().iter().map(|h| (range(&h["range"]), h["kind"].clone())).collect();
    assert_eq!(got, vec![((2, 5, 2, 10), json!(3)), ((14, 12, 14, 17), json!(2)), ((15, 12, 15, 17), json!(2))]);

    // Hover on the callee: the signature and the comment above the function.
    let h = c.at("textDocument/hover", uri, 14, 14);
    assert_eq!(range(&h["range"]), (14, 12, 14, 17));
    let t = hover_text(&h);
    assert!(t.contains("func @add2(%v: f32, %r: ptr<shared, f32>) -> f32"), "{t}");
    assert!(t.contains("The sum of %v and %w.\nBoth must be finite."), "{t}");
    assert!(t.contains("function (line 3): 1 blocks, 3 statements"), "{t}");
    // Hover on the `call` mnemonic: its row of docs/language.md (no fixed signature).
    let t = hover_text(&c.at("textDocument/hover", uri, 14, 8));
    assert!(t.contains("calls device function `@f`"), "{t}");
    assert!(!t.contains("→"), "{t}");
    // A value inside the function: a parameter of a function, varying.
    let t = hover_text(&c.at("textDocument/hover", uri, 5, 16));
    assert!(t.contains("%v: f32") && t.contains("parameter 0 of function `@add2`"), "{t}");
    assert!(t.contains("**varying**"), "{t}");
    // The result of a call in the kernel.
    let t = hover_text(&c.at("textDocument/hover", uri, 14, 3));
    assert!(t.contains("%y: f32") && t.contains("result of `call @add2` in block `entry`"), "{t}");
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn an_unknown_callee_is_a_located_error() {
    let (mut c, _) = Client::initialized();
    let uri = "file:///w/unknown.kir";
    let text = "kernel @k(%p: ptr<global, f32>) {\nentry:\n  %x = load %p[0]\n  %y = call @nope(%x)\n  store %p[0], %y\n  ret\n}\n";
    let d = c.open(uri, text);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(range(&d[0]["range"]), (3, 12, 3, 17));
    let msg = d[0]["message"].as_str().unwrap();
    assert!(msg.starts_with("unknown function `@nope`"), "{msg}");
    // The name index still works: the kernel is in the outline, the call resolves to nothing.
    assert_eq!(c.at("textDocument/definition", uri, 3, 14), Value::Null);
    // An unsaved buffer (no file path) cannot resolve imports: an error at the import line.
    let untitled = "untitled:Untitled-1";
    let d = c.open(untitled, "import \"lib/reduce.kir\"\n");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(range(&d[0]["range"]), (0, 0, 0, 23));
    assert!(d[0]["message"].as_str().unwrap().contains("cannot resolve `import \"lib/reduce.kir\"`"), "{d:?}");
    let t = hover_text(&c.at("textDocument/hover", untitled, 0, 3));
    assert!(t.contains("no file path"), "{t}");
    assert_eq!(c.shutdown(), 0);
}

const LIB: &str = "\
; Library functions.

; Twice %x.
func @twice(%x: u32) -> u32 {
entry:
  %y = add.u32 %x, %x
  ret %y
}

; Stores %v to %p[0] after a barrier: every thread of the block must call it.
func @sync_put(%p: ptr<global, u32>, %v: u32) {
entry:
  barrier
  store %p[0], %v
  ret
}

kernel @lib_test(%p: ptr<global, u32>) {
entry:
  ret
}
";

const MAIN: &str = "\
import \"lib/util.kir\"

kernel @k(%p: ptr<global, u32>) {
entry:
  %t = tid.x
  %v = call @twice(%t)
  call @sync_put(%p, %v)
  ret
}
";

#[test]
fn calls_of_imported_functions_resolve_across_files() {
    let dir = TempDir::with(&[("lib/util.kir", LIB), ("main.kir", MAIN)]);
    let (mut c, _) = Client::initialized();
    let uri = dir.uri("main.kir");
    let lib_uri = dir.uri("lib/util.kir");
    let d = c.open(&uri, MAIN);
    assert!(d.is_empty(), "{d:?}");
    // Go to definition: into the imported file.
    let def = c.at("textDocument/definition", &uri, 5, 13);
    assert_eq!(def["uri"], json!(lib_uri), "{def}");
    assert_eq!(range(&def["range"]), (3, 5, 3, 11));
    let def = c.at("textDocument/definition", &uri, 6, 10);
    assert_eq!(def["uri"], json!(lib_uri));
    assert_eq!(range(&def["range"]), (10, 5, 10, 14));
    // References of an imported function: its definition (in its file) and the call here.
    let refs = c.at("textDocument/references", &uri, 5, 13);
    let got: Vec<(String, (u64, u64, u64, u64))> =
        refs.as_array().unwrap().iter().map(|l| (l["uri"].as_str().unwrap().to_string(), range(&l["range"]))).collect();
    assert_eq!(got, vec![(lib_uri.clone(), (3, 5, 3, 11)), (uri.clone(), (5, 12, 5, 18))]);
    // Hover on the callee: signature, doc comment, the file it comes from.
    let t = hover_text(&c.at("textDocument/hover", &uri, 5, 14));
    assert!(t.contains("func @twice(%x: u32) -> u32"), "{t}");
    assert!(t.contains("Twice %x."), "{t}");
    assert!(!t.contains("Library functions"), "only the comment directly above: {t}");
    assert!(t.contains("in `lib/util.kir` (line 4, imported)"), "{t}");
    let t = hover_text(&c.at("textDocument/hover", &uri, 6, 10));
    assert!(t.contains("func @sync_put(%p: ptr<global, u32>, %v: u32)\n"), "{t}");
    // Hover on the import: the resolved path and the functions it brings (not its kernels).
    let h = c.at("textDocument/hover", &uri, 0, 10);
    assert_eq!(range(&h["range"]), (0, 0, 0, 21));
    let t = hover_text(&h);
    assert!(t.contains(&dir.0.join("lib/util.kir").display().to_string()), "{t}");
    assert!(t.contains("brings 2 functions"), "{t}");
    assert!(t.contains("- `func @twice(%x: u32) -> u32`"), "{t}");
    assert!(t.contains("- `func @sync_put(%p: ptr<global, u32>, %v: u32)`"), "{t}");
    assert!(!t.contains("lib_test"), "{t}");
    // Definition on the import path: the file.
    let def = c.at("textDocument/definition", &uri, 0, 12);
    assert_eq!(def["uri"], json!(lib_uri));
    assert_eq!(range(&def["range"]), (0, 0, 0, 0));
    // The outline lists this document's items only.
    let syms = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    let names: Vec<&str> = syms.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["@k"]);
    // Formatting keeps the import line and does not copy the imported functions in.
    let edits = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert_eq!(edits, json!([]), "MAIN is canonical");

    // The check runs on the module with the imported functions: `@sync_put` holds a barrier,
    // called here under a thread-dependent branch.
    let diverging = MAIN.replace(
        "  %v = call @twice(%t)\n  call @sync_put(%p, %v)\n  ret\n}",
        "  %v = call @twice(%t)\n  %c = lt.u32 %t, 3\n  br %c, a, b\na:\n  call @sync_put(%p, %v)\n  jmp b\nb:\n  ret\n}",
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": diverging}]}),
    );
    let d = c.diagnostics(&uri);
    assert!(!d.is_empty(), "the call under `tid.x` is rejected");
    let msg = d[0]["message"].as_str().unwrap();
    assert!(msg.contains("barrier"), "{msg}");
    // Shown at the call in this document (0-based line 8: `  call @sync_put(%p, %v)`).
    let line = d[0]["range"]["start"]["line"].as_u64().unwrap() as usize;
    assert!(diverging.lines().nth(line).unwrap().contains("call @sync_put"), "{line}: {:?}", d[0]["range"]);
    let rel = d[0]["relatedInformation"].as_array().unwrap();
    assert!(rel.iter().any(|r| r["location"]["uri"] == json!(lib_uri)), "{rel:?}");
    assert!(rel.iter().any(|r| r["location"]["uri"] == json!(uri)), "{rel:?}");
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn an_error_in_an_imported_file_is_shown_at_its_import_line() {
    let bad_lib = "func @f(%x: u32) -> u32 {\nentry:\n  %y = bogus.u32 %x\n  ret %y\n}\n";
    let main = "; uses lib/bad.kir\nimport \"lib/ok.kir\"\nimport \"lib/bad.kir\"\n\nkernel @k(%p: ptr<global, u32>) {\nentry:\n  %v = call @f(1)\n  store %p[0], %v\n  ret\n}\n";
    let dir = TempDir::with(&[("lib/ok.kir", LIB), ("lib/bad.kir", bad_lib), ("main.kir", main)]);
    let (mut c, _) = Client::initialized();
    let uri = dir.uri("main.kir");
    let d = c.open(&uri, main);
    let inside: Vec<&Value> =
        d.iter().filter(|x| x["message"].as_str().unwrap().starts_with("in lib/bad.kir:3:8: ")).collect();
    assert_eq!(inside.len(), 1, "{d:?}");
    let e = inside[0];
    assert_eq!(range(&e["range"]), (2, 0, 2, 20), "at the second import line: {e}");
    assert!(e["message"].as_str().unwrap().contains("unknown op `bogus.u32`"), "{e}");
    let rel = e["relatedInformation"].as_array().unwrap();
    assert_eq!(rel[0]["location"]["uri"], json!(dir.uri("lib/bad.kir")));
    assert_eq!(range(&rel[0]["location"]["range"]), (2, 7, 2, 16));
    // Every diagnostic is in this document's range, none past its end.
    for x in &d {
        assert!(range(&x["range"]).0 < 10, "{x}");
    }
    // Fixing the library on disk and editing the document clears the error.
    std::fs::write(dir.0.join("lib/bad.kir"), bad_lib.replace("bogus.u32", "add.u32").replace("%x\n", "%x, 1\n"))
        .unwrap();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": main}]}),
    );
    let d = c.diagnostics(&uri);
    assert!(d.is_empty(), "{d:?}");
    // A missing file: the error is at the import's path.
    let missing = main.replace("lib/bad.kir", "lib/nope.kir");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": missing}]}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(range(&d[0]["range"]), (2, 7, 2, 21));
    assert!(d[0]["message"].as_str().unwrap().starts_with("cannot read imported file"), "{d:?}");
    assert_eq!(c.shutdown(), 0);
}

/// An imported file that is open in the editor is read from its unsaved text, and the documents
/// that import it are checked again (and their diagnostics published) when it changes or closes.
#[test]
fn open_imports_are_read_from_the_editor_and_their_importers_follow() {
    let dir = TempDir::with(&[("lib/util.kir", LIB), ("main.kir", MAIN)]);
    let (mut c, _) = Client::initialized();
    let uri = dir.uri("main.kir");
    let lib_uri = dir.uri("lib/util.kir");
    assert!(c.open(&uri, MAIN).is_empty());
    // Opening the library with `@twice` renamed (not saved): main's call no longer resolves,
    // and main's diagnostics are published again without main changing.
    let renamed = LIB.replace("@twice", "@double");
    assert!(c.open(&lib_uri, &renamed).is_empty());
    let d = c.diagnostics(&uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0]["message"].as_str().unwrap().contains("unknown function `@twice`"), "{d:?}");
    // Editing main to call the unsaved name: clean, against the editor's text of the library.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": MAIN.replace("@twice", "@double")}]}),
    );
    assert!(c.diagnostics(&uri).is_empty());
    // Closing the library without saving: main is checked against the file on disk again.
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": lib_uri}}));
    assert!(c.diagnostics(&lib_uri).is_empty(), "a closed document's diagnostics are cleared");
    let d = c.diagnostics(&uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0]["message"].as_str().unwrap().contains("unknown function `@double`"), "{d:?}");
    assert_eq!(c.shutdown(), 0);
}
