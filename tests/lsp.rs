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

const BARRIER: &str = include_str!("barrier_cases/bad_barrier_under_tid.kir");
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
