//! Source formatting: the canonical printed form of a parsed file, with its comments kept.
//!
//! Guarantees:
//! - The code is exactly the printer's output ([`crate::text::printer::kernel_lines`]); only comments and
//!   blank lines are added, so the result parses to the same module as the printer's output.
//! - Every `;` comment of the source appears in the output, in source order relative to the code:
//!   a comment on its own line is placed before the first entity that follows it in the source
//!   (indented like that entity), and a comment after code on the same line stays at the end of
//!   the printed line of that code. A comment after code that is only the start of the next
//!   printed entity (`kernel ; c` with `@k(...)` on the next line) goes on its own line before
//!   that entity. Only comments after the last entity end the output.
//! - Linear in the size of the source and the output (comments are matched to printed lines by
//!   position, not by a scan of all comments per line).
//! - One or more blank lines between entities in the source become exactly one; kernels,
//!   functions and graphs are separated by one blank line; the `import` lines are one group
//!   (where the first one is), separated from the rest by a blank line. Functions imported into the module
//!   are not printed (their import line is).
//! - Formatting is idempotent: formatting formatted text gives the same text.
//!
//! Precondition: `module` was parsed from `src` (spans point into it).

use crate::ir::Module;
use crate::span::Span;
use crate::text::printer::{kernel_lines, LineKind};

struct Comment {
    offset: usize,
    line: usize,
    text: String,
    /// Code precedes the comment on its line.
    trailing: bool,
    used: bool,
}

fn collect_comments(src: &str) -> Vec<Comment> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (n, line) in src.split_inclusive('\n').enumerate() {
        if let Some(pos) = line.find(';') {
            let before = &line[..pos];
            out.push(Comment {
                offset: offset + pos,
                line: n,
                text: line[pos..].trim_end().to_string(),
                trailing: !before.trim().is_empty(),
                used: false,
            });
        }
        offset += line.len();
    }
    out
}

/// Line number (0-based) of each byte offset, via a table of line starts.
struct Lines {
    starts: Vec<usize>,
    blank: Vec<bool>,
}

impl Lines {
    fn new(src: &str) -> Lines {
        let mut starts = vec![0];
        let mut blank = Vec::new();
        for line in src.split_inclusive('\n') {
            blank.push(line.trim().is_empty());
            starts.push(starts.last().unwrap() + line.len());
        }
        Lines { starts, blank }
    }
    fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }
    /// Whether a blank line lies strictly between lines `a` and `b`.
    fn blank_between(&self, a: usize, b: usize) -> bool {
        (a + 1..b).any(|l| self.blank.get(l).copied().unwrap_or(false))
    }
}

/// A printed line with the source offset of the entity it prints.
struct Item {
    text: String,
    offset: usize,
    indent: &'static str,
    /// Indentation of own-line comments placed before this item.
    comment_indent: &'static str,
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// Formats a parsed source file, keeping its comments.
pub fn format_source(src: &str, module: &Module) -> String {
    let lines = Lines::new(src);
    let mut comments = collect_comments(src);
    let mut items: Vec<Vec<Item>> = Vec::new();
    // `import` lines, as written (the module holds what they import, not the lines).
    if let Ok(ast) = crate::text::parse::parse_ast(src) {
        let imports: Vec<Item> = crate::text::load::imports_of(&ast)
            .into_iter()
            .map(|(path, span)| Item {
                text: format!("import \"{path}\""),
                offset: span.start as usize,
                indent: "",
                comment_indent: "",
            })
            .collect();
        if !imports.is_empty() {
            items.push(imports);
        }
    }
    // Kernels and this file's functions (imported functions have spans past the end of `src`).
    for k in module.kernels.iter().chain(module.funcs.iter().filter(|f| (f.span.start as usize) < src.len())) {
        let mut group = Vec::new();
        let mut max_end = k.span.end as usize;
        let start_of = |s: Span| s.start as usize;
        for pl in kernel_lines(k) {
            let (offset, indent, comment_indent) = match pl.kind {
                LineKind::Header => (start_of(k.span), "", ""),
                LineKind::Shared(i) => (start_of(k.shared[i].span), "  ", "  "),
                LineKind::Label(b) => (start_of(k.block(b).span), "", ""),
                LineKind::Inst(i) => (start_of(k.inst(i).span), "  ", "  "),
                LineKind::Term(b) => (start_of(k.block(b).term_span), "  ", "  "),
                LineKind::Close => {
                    let close =
                        src.get(max_end..).and_then(|rest| rest.find('}')).map(|p| max_end + p).unwrap_or(src.len());
                    (close, "", "  ")
                }
            };
            if let LineKind::Inst(i) = pl.kind {
                max_end = max_end.max(k.inst(i).span.end as usize);
            }
            if let LineKind::Term(b) = pl.kind {
                max_end = max_end.max(k.block(b).term_span.end as usize);
            }
            if let LineKind::Label(b) = pl.kind {
                max_end = max_end.max(k.block(b).span.end as usize);
            }
            if let LineKind::Shared(i) = pl.kind {
                max_end = max_end.max(k.shared[i].span.end as usize);
            }
            group.push(Item { text: pl.text.trim_start().to_string(), offset, indent, comment_indent });
        }
        items.push(group);
    }
    for g in &module.graphs {
        let mut group = Vec::new();
        let mut max_end = g.span.start as usize;
        group.push(Item {
            text: first_line(&crate::text::printer::print_graph(g)),
            offset: g.span.start as usize,
            indent: "",
            comment_indent: "",
        });
        for t in &g.temps {
            max_end = max_end.max(t.span.end as usize);
            let text = format!("temp %{}: {}[{}]", t.name, t.elem, t.len);
            group.push(Item { text, offset: t.span.start as usize, indent: "  ", comment_indent: "  " });
        }
        for l in &g.launches {
            max_end = max_end.max(l.span.end as usize);
            group.push(Item {
                text: crate::text::printer::print_launch(l),
                offset: l.span.start as usize,
                indent: "  ",
                comment_indent: "  ",
            });
        }
        // The header's span may cover the whole graph; the closing brace is the last `}` in it.
        let close =
            src.get(..(g.span.end as usize).min(src.len())).and_then(|head| head.rfind('}')).filter(|&p| p >= max_end);
        let close = close
            .or_else(|| src.get(max_end..).and_then(|rest| rest.find('}')).map(|p| max_end + p))
            .unwrap_or(src.len());
        group.push(Item { text: "}".into(), offset: close, indent: "", comment_indent: "  " });
        items.push(group);
    }
    // Kernels and graphs in source order.
    items.sort_by_key(|g| g.first().map(|i| i.offset).unwrap_or(0));

    let mut out = String::new();
    let mut prev_line: Option<usize> = None;
    let emit_own_line = |out: &mut String, c: &Comment, indent: &str, prev_line: &mut Option<usize>| {
        if let Some(p) = *prev_line {
            if lines.blank_between(p, c.line) {
                out.push('\n');
            }
        }
        out.push_str(indent);
        out.push_str(&c.text);
        out.push('\n');
        *prev_line = Some(c.line);
    };
    // Comments before `first_unused` are all placed.
    let mut first_unused = 0;
    for (gi, group) in items.iter().enumerate() {
        if gi > 0 {
            out.push('\n');
            prev_line = None;
        }
        for (ii, item) in group.iter().enumerate() {
            let item_line = lines.line_of(item.offset);
            // Comments before this item not placed yet, in source order, on their own lines: the
            // own-line ones, and trailing ones whose code belongs to this item (`kernel ; c` above
            // `@k(...)`: the header's item starts at the name).
            while first_unused < comments.len() && comments[first_unused].offset < item.offset {
                let c = &mut comments[first_unused];
                if !c.used {
                    emit_own_line(&mut out, c, item.comment_indent, &mut prev_line);
                    c.used = true;
                }
                first_unused += 1;
            }
            // `prev_line` is reset at each kernel, so this keeps blank lines inside a kernel and
            // between a kernel's leading comments and its header.
            if let Some(p) = prev_line {
                if lines.blank_between(p, item_line) {
                    out.push('\n');
                }
            }
            out.push_str(item.indent);
            out.push_str(&item.text);
            // Trailing comments on the lines this item occupies (up to the next item's line).
            let next_line = group.get(ii + 1).map(|n| lines.line_of(n.offset)).unwrap_or(item_line);
            // When the next item starts on the same line, the comment belongs to that later item.
            let shares_line = ii + 1 < group.len() && next_line == item_line;
            let own_end = next_line.saturating_sub(1).max(item_line);
            // Comments are in source order, so those on lines `item_line..=own_end` are a range.
            let from = comments.partition_point(|c| c.line < item_line);
            let to = comments.partition_point(|c| c.line <= own_end);
            for c in comments[from..to.max(from)]
                .iter_mut()
                .filter(|c| !shares_line && !c.used && c.trailing && c.offset > item.offset)
            {
                out.push_str("  ");
                out.push_str(&c.text);
                c.used = true;
            }
            out.push('\n');
            prev_line = Some(item_line);
        }
    }
    // Whatever is left: comments after the last item, and (defensively) any not placed.
    let rest: Vec<&Comment> = comments.iter().filter(|c| !c.used).collect();
    if !rest.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        for c in rest {
            out.push_str(&c.text);
            out.push('\n');
        }
    }
    out
}
