//! One-line semantics of every op, taken from `docs/language.md` (embedded at build time): the
//! rows of the op tables of its "Ops" section, and for ops described in prose there (comparisons,
//! `select`, `cvt`, `bitcast`) the sentence that introduces them.
//!
//! Guarantees:
//! - The text shown for an op is the reference's own, never a copy kept in code: editing
//!   `docs/language.md` changes the hover on the next build.
//! - Every op the text format can spell ([`kir::ir::all_ops`]) has an entry; a unit test fails
//!   when the reference loses the row or sentence of an op (so the two cannot drift apart).
//! - Where an op appears in two tables (integer and float `add`), the entry of the table matching
//!   the op's type is used.

use kir::ir::Op;
use std::sync::OnceLock;

const LANGUAGE_MD: &str = include_str!("../../docs/language.md");

/// The documentation of one op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpDoc {
    /// The `###` heading the entry is under ("Integer and logic").
    pub section: String,
    /// The op column as written (`add.T sub.T mul.T`), or empty for a sentence.
    pub pattern: String,
    /// The rest of the row as `header: cell` pairs joined by " · ", or the sentence.
    pub text: String,
}

struct Entry {
    doc: OpDoc,
    /// Op keys of the entry (`add`, `mul.hi`, `atom.cas`, `tid`).
    keys: Vec<String>,
    /// Keys of the first code span only (prose: the sentence's subject).
    first_keys: Vec<String>,
    table: bool,
}

/// The code spans (text between backticks) of a piece of markdown.
fn code_spans(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

/// The op keys a code span names: `mul.hi.T` -> `mul.hi`; `tid.{x,y,z}` -> `tid`;
/// `atom.add/min/max/exch` -> `atom.add`, `atom.min`, ...; `cvt[.rnd]...` -> `cvt`;
/// `load.v2/v4` -> `load.v2`, `load.v4`; `mma.m16n8k16.f16/bf16` -> `mma.m16n8k16.f16`, ...
fn keys_of_span(span: &str) -> Vec<String> {
    let mut out = vec![];
    for word in span.split_whitespace() {
        let word = word.trim_end_matches(',');
        if !word.starts_with(|c: char| c.is_ascii_lowercase()) {
            continue;
        }
        let word = word.split(['[', '{', '(']).next().unwrap_or("");
        let mut parts = word.split('.');
        let first = parts.next().unwrap_or("");
        if first.is_empty() || !first.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut keys = vec![first.to_string()];
        for p in parts {
            if p.is_empty() || !p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '/') {
                break;
            }
            keys = keys.iter().flat_map(|k| p.split('/').map(move |alt| format!("{k}.{alt}"))).collect();
        }
        out.extend(keys);
    }
    out
}

fn split_cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    row.split('|').map(|c| c.trim().to_string()).collect()
}

/// Sentences of a paragraph: split after `.` followed by a space and an uppercase letter or a
/// backtick.
fn sentences(p: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let chars: Vec<char> = p.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        cur.push(c);
        if c == '.' && chars.get(i + 1) == Some(&' ') && chars.get(i + 2).is_some_and(|n| n.is_uppercase() || *n == '`')
        {
            out.push(cur.trim().to_string());
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| parse_reference(LANGUAGE_MD))
}

/// Parses the "## Ops" section of the language reference.
fn parse_reference(md: &str) -> Vec<Entry> {
    let mut out = vec![];
    let mut in_ops = false;
    let mut section = String::new();
    let mut header: Option<Vec<String>> = None;
    let mut paragraph = String::new();
    let flush = |paragraph: &mut String, section: &str, out: &mut Vec<Entry>| {
        for s in sentences(paragraph) {
            let spans = code_spans(&s);
            let keys: Vec<String> = spans.iter().flat_map(|c| keys_of_span(c)).collect();
            let first_keys = spans.first().map(|c| keys_of_span(c)).unwrap_or_default();
            if !keys.is_empty() {
                let doc = OpDoc { section: section.to_string(), pattern: String::new(), text: s.clone() };
                out.push(Entry { doc, keys, first_keys, table: false });
            }
        }
        paragraph.clear();
    };
    for line in md.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            flush(&mut paragraph, &section, &mut out);
            in_ops = h.trim() == "Ops";
            section.clear();
            continue;
        }
        if !in_ops {
            continue;
        }
        if let Some(h) = line.strip_prefix("### ") {
            flush(&mut paragraph, &section, &mut out);
            section = h.trim().to_string();
            header = None;
            continue;
        }
        let t = line.trim();
        if t.starts_with('|') {
            flush(&mut paragraph, &section, &mut out);
            let cells = split_cells(t);
            if cells.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')) {
                continue;
            }
            match &header {
                None => header = Some(cells),
                Some(h) => {
                    let Some(first) = cells.first() else { continue };
                    let keys: Vec<String> = code_spans(first).iter().flat_map(|c| keys_of_span(c)).collect();
                    let text: Vec<String> = cells
                        .iter()
                        .enumerate()
                        .skip(1)
                        .filter(|(_, c)| !c.is_empty() && c.as_str() != "—")
                        .map(|(i, c)| match h.get(i) {
                            Some(name) if !name.is_empty() => format!("{name}: {c}"),
                            _ => c.clone(),
                        })
                        .collect();
                    let doc = OpDoc { section: section.clone(), pattern: first.clone(), text: text.join(" · ") };
                    out.push(Entry { doc, first_keys: keys.clone(), keys, table: true });
                }
            }
        } else {
            header = None;
            if t.is_empty() {
                flush(&mut paragraph, &section, &mut out);
            } else {
                if !paragraph.is_empty() {
                    paragraph.push(' ');
                }
                paragraph.push_str(t);
            }
        }
    }
    flush(&mut paragraph, &section, &mut out);
    out
}

/// The reference's key for an op and whether it is a float op (to pick between the integer and
/// the float table).
fn key_of(op: &Op) -> (String, Option<bool>) {
    match op {
        Op::Special(_) => (op.mnemonic().split('.').next().unwrap_or("").to_string(), None),
        Op::Mov(_) => ("mov".into(), None),
        Op::Bin(b, ty, _) => (b.name().into(), Some(ty.is_float())),
        Op::MulWide(_) => ("mul.wide".into(), Some(false)),
        Op::Mad(_) => ("mad".into(), Some(false)),
        Op::Fma(..) => ("fma".into(), Some(true)),
        Op::Unary(u, ty, _) => (u.name().into(), Some(ty.is_float())),
        Op::Cmp(c, _) => (c.name().into(), None),
        Op::Select(_) => ("select".into(), None),
        Op::Cvt { .. } => ("cvt".into(), None),
        Op::Bitcast { .. } => ("bitcast".into(), None),
        Op::Load => ("load".into(), None),
        Op::Store => ("store".into(), None),
        Op::Atomic(a) => (format!("atom.{}", a.name()), None),
        Op::AtomicCas => ("atom.cas".into(), None),
        Op::PtrOffset => ("offset".into(), None),
        Op::PtrOffsetBytes => ("offset.bytes".into(), None),
        Op::PtrCast(_) => ("ptrcast".into(), None),
        Op::SharedAddr(_) => ("addr".into(), None),
        Op::Barrier => ("barrier".into(), None),
        Op::Call(_) => ("call".into(), None),
        Op::Shfl(..) => ("shfl".into(), None),
        Op::Vote(m) => (format!("vote.{}", m.name()), None),
        Op::VecBuild(..) => ("vec".into(), None),
        Op::VecExtract(..) => ("extract".into(), None),
        Op::VecInsert(..) => ("insert".into(), None),
        Op::LoadVec(w) => (format!("load.{}", w.name()), None),
        Op::StoreVec(w) => (format!("store.{}", w.name()), None),
        Op::Mma(k) => (format!("mma.{}.{}", k.shape(), k.name()), None),
        Op::Ldmatrix(n, _) => (format!("ldmatrix.{}", n.name()), None),
        Op::CpAsync(s) => (format!("cp.async.{}", s.name()), None),
        Op::CpAsyncCommit => ("cp.async.commit".into(), None),
        Op::CpAsyncWait => ("cp.async.wait".into(), None),
    }
}

/// The reference's entry for an op.
pub fn doc_for(op: &Op) -> Option<OpDoc> {
    let (key, float) = key_of(op);
    let all = entries();
    let tables: Vec<&Entry> = all.iter().filter(|e| e.table && e.keys.contains(&key)).collect();
    let in_section = |e: &&&Entry, word: &str| e.doc.section.to_lowercase().contains(word);
    let table = match float {
        Some(true) => tables.iter().find(|e| in_section(e, "float")).or(tables.first()),
        Some(false) => tables.iter().find(|e| !in_section(e, "float")).or(tables.first()),
        None => tables.first(),
    };
    if let Some(e) = table {
        return Some(e.doc.clone());
    }
    let prose = |first: bool| {
        all.iter().find(|e| !e.table && if first { e.first_keys.contains(&key) } else { e.keys.contains(&key) })
    };
    prose(true).or_else(|| prose(false)).map(|e| e.doc.clone())
}

/// The documentation of a mnemonic as written (`add.rn.f32`), with the op it spells.
pub fn doc_for_mnemonic(mnemonic: &str, annot: Option<kir::ir::Type>) -> Option<(Op, OpDoc)> {
    let annot = annot.or(Some(kir::ir::Type::Ptr(kir::ir::AddrSpace::Global, kir::ir::ScalarType::U8)));
    let op = kir::ir::text::parse::parse_mnemonic(mnemonic, annot)
        .or_else(|_| kir::ir::text::parse::parse_mnemonic(mnemonic, None))
        .ok()?;
    doc_for(&op).map(|d| (op, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_a_line_in_the_language_reference() {
        let missing: Vec<String> =
            kir::ir::all_ops().iter().filter(|o| doc_for(o).is_none()).map(|o| o.mnemonic()).collect();
        assert!(missing.is_empty(), "ops without an entry in docs/language.md: {missing:?}");
    }

    #[test]
    fn entries_come_from_the_right_rows() {
        let d = |m: &str| doc_for_mnemonic(m, None).unwrap_or_else(|| panic!("{m}")).1;
        assert_eq!(d("add.u32").section, "Integer and logic");
        assert_eq!(d("add.rn.f32").section, "Float arithmetic");
        assert!(d("add.f32").text.contains("f16 bf16 f32 f64"), "{:?}", d("add.f32"));
        assert!(d("mul.hi.u32").pattern.contains("mul.hi"));
        assert!(d("atom.cas").text.contains("stores `%new`"));
        assert!(d("atom.min").pattern.contains("atom.add/min/max/exch"));
        assert!(d("tid.y").text.contains("the thread's index in the block"));
        assert!(d("select.f32").text.starts_with("`select.T c, a, b`"), "{:?}", d("select.f32"));
        assert!(d("cvt.rn.f32.s32").text.starts_with("`cvt"));
        assert!(d("lt.s32").text.contains("`eq ne lt le gt ge`"));
        assert!(d("shfl.down.f32").text.contains("MODE"));
        assert!(d("mma.m16n8k16.f16").text.contains("tensor-core product"), "{:?}", d("mma.m16n8k16.f16"));
        assert!(d("ldmatrix.x4.trans").pattern.contains("ldmatrix"));
        assert!(d("cp.async.16").text.contains("from global"), "{:?}", d("cp.async.16"));
        assert!(d("cp.async.wait").pattern.contains("cp.async.wait"));
        assert!(d("load.v2").pattern.contains("load.v2/v4"));
        assert!(d("extract.v4.f32").text.contains("element 2"));
        assert!(d("barrier").text.contains("bar.sync 0"));
    }
}
