//! The stdio transport: `Content-Length`-framed JSON-RPC messages read on a thread of their own,
//! written by the caller.
//!
//! Guarantees:
//! - Reading never panics and never allocates more than [`MAX_MESSAGE`] bytes for one message,
//!   whatever the input: a header block without a valid `Content-Length`, an oversized body, a body
//!   that is not JSON, or JSON that is not a JSON-RPC message each yield one [`Incoming::Malformed`]
//!   (so the server can answer it) and reading goes on with the next frame.
//! - The end of the input (or a read error) ends the stream: the receiver sees the channel close.
//! - Messages are delivered in input order.

use lsp_server::{Message, Notification, Request};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver};

/// The largest message body accepted (a larger one is skipped and reported).
pub const MAX_MESSAGE: usize = 256 << 20;
/// The longest header line kept (longer ones are malformed).
const MAX_HEADER_LINE: u64 = 8 << 10;

/// One frame read from the client.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// A frame that is no valid message: `code` is the JSON-RPC error code to answer with, `id`
    /// the request id when one could be read.
    Malformed {
        id: Option<serde_json::Value>,
        code: i32,
        message: String,
    },
}

/// Reads frames from `input` on a new thread.
pub fn spawn_reader(input: impl Read + Send + 'static) -> Receiver<Incoming> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("kir-lsp-reader".into()).spawn(move || {
        let mut r = BufReader::new(input);
        while let Some(frame) = read_frame(&mut r) {
            let incoming = match frame {
                Ok(body) => decode(&body),
                Err(message) => Incoming::Malformed { id: None, code: -32700, message },
            };
            if tx.send(incoming).is_err() {
                break;
            }
        }
    });
    if let Err(e) = spawned {
        eprintln!("kir lsp: cannot start the reader thread: {e}");
    }
    rx
}

/// Reads one frame's body; `None` at the end of the input.
fn read_frame(r: &mut impl BufRead) -> Option<Result<Vec<u8>, String>> {
    let mut length: Option<Result<usize, String>> = None;
    let mut seen_header = false;
    loop {
        let mut line = Vec::new();
        let n = r.by_ref().take(MAX_HEADER_LINE).read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if seen_header {
                break;
            }
            continue;
        }
        seen_header = true;
        if let Some((name, value)) = text.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = Some(
                    value.trim().parse::<usize>().map_err(|_| format!("invalid Content-Length `{}`", value.trim())),
                );
            }
        }
    }
    let length = match length {
        None => return Some(Err("a message header without Content-Length".into())),
        Some(Err(e)) => return Some(Err(e)),
        Some(Ok(n)) => n,
    };
    if length > MAX_MESSAGE {
        let skipped = std::io::copy(&mut r.by_ref().take(length as u64), &mut std::io::sink()).ok()?;
        if skipped < length as u64 {
            return None;
        }
        return Some(Err(format!("a message of {length} bytes (the limit is {MAX_MESSAGE})")));
    }
    let mut body = Vec::new();
    r.by_ref().take(length as u64).read_to_end(&mut body).ok()?;
    if body.len() < length {
        return None;
    }
    Some(Ok(body))
}

/// Decodes a frame body into a message.
fn decode(body: &[u8]) -> Incoming {
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Incoming::Malformed { id: None, code: -32700, message: format!("invalid JSON: {e}") },
    };
    let id = value.get("id").cloned();
    let invalid = |message: String| Incoming::Malformed { id: id.clone(), code: -32600, message };
    if !value.is_object() {
        return invalid("a JSON-RPC message must be an object".into());
    }
    if value.get("method").is_some() {
        if id.is_some() {
            match serde_json::from_value::<Request>(value) {
                Ok(r) => Incoming::Message(Message::Request(r)),
                Err(e) => invalid(format!("invalid request: {e}")),
            }
        } else {
            match serde_json::from_value::<Notification>(value) {
                Ok(n) => Incoming::Message(Message::Notification(n)),
                Err(e) => invalid(format!("invalid notification: {e}")),
            }
        }
    } else {
        match serde_json::from_value::<lsp_server::Response>(value) {
            Ok(r) => Incoming::Message(Message::Response(r)),
            Err(e) => invalid(format!("invalid message: {e}")),
        }
    }
}

/// Writes one message; an error means the client is gone.
pub fn write(out: &mut impl Write, msg: &Message) -> std::io::Result<()> {
    msg.write(out)
}

/// Writes an error response for a frame that is no valid message (`id` null when unknown).
pub fn write_error(
    out: &mut impl Write,
    id: Option<serde_json::Value>,
    code: i32,
    message: &str,
) -> std::io::Result<()> {
    let id = match id {
        Some(v @ (serde_json::Value::Number(_) | serde_json::Value::String(_))) => v,
        _ => serde_json::Value::Null,
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string();
    write!(out, "Content-Length: {}\r\n\r\n{body}", body.len())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &str) -> Vec<Incoming> {
        let mut r = std::io::Cursor::new(input.as_bytes().to_vec());
        let mut out = vec![];
        while let Some(f) = read_frame(&mut r) {
            out.push(match f {
                Ok(b) => decode(&b),
                Err(message) => Incoming::Malformed { id: None, code: -32700, message },
            });
        }
        out
    }

    #[test]
    fn malformed_frames_are_reported_and_skipped() {
        let ok = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let input = format!(
            "Content-Length: 5\r\n\r\n{{oops\r\nX-Junk\r\n\r\nContent-Length: 3\r\n\r\n[1]Content-Length: {}\r\n\r\n{ok}Content-Length: 99999999999999999999\r\n\r\n",
            ok.len()
        );
        let got = frames(&input);
        assert_eq!(got.len(), 5, "{got:?}");
        assert!(matches!(&got[0], Incoming::Malformed { code: -32700, .. }));
        assert!(
            matches!(&got[1], Incoming::Malformed { code: -32700, message, .. } if message.contains("Content-Length"))
        );
        assert!(matches!(&got[2], Incoming::Malformed { code: -32600, .. }));
        assert!(matches!(&got[3], Incoming::Message(Message::Notification(n)) if n.method == "initialized"));
        assert!(matches!(&got[4], Incoming::Malformed { .. }));
    }
}
