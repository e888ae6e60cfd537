//! What LSP requests carry, as kir's types: positions, ranges and `file:` URIs (the other half of
//! [`super::to_proto`]).
//!
//! Guarantees: [`uri_to_path`] and [`super::to_proto::path_to_uri`] convert `file:` URIs
//! (percent-encoded) and paths both ways; any other URI has no path.

use super::document as kir;
use lsp_types::{Position, Range, Uri};
use std::path::PathBuf;

pub fn position(p: Position) -> kir::Position {
    kir::Position { line: p.line, character: p.character }
}

pub fn range(r: Range) -> kir::Range {
    kir::Range { start: position(r.start), end: position(r.end) }
}

/// The path of a `file:` URI (percent-decoded); `None` for any other URI.
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    let s = uri.as_str();
    let (scheme, rest) = s.split_once(':')?;
    if !scheme.eq_ignore_ascii_case("file") {
        return None;
    }
    let rest = rest.strip_prefix("//")?;
    // The authority: empty or `localhost`.
    let slash = rest.find('/')?;
    let (host, path) = rest.split_at(slash);
    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
        return None;
    }
    let path = path.split(['?', '#']).next()?;
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let path = String::from_utf8(out).ok()?;
    // `file:///C:/x` names `C:/x` on Windows.
    if cfg!(windows) {
        let b = path.as_bytes();
        if b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':' {
            return Some(PathBuf::from(&path[1..]));
        }
    }
    Some(PathBuf::from(path))
}
