//! Semantic tokens (`textDocument/semanticTokens/full`): a color class for every keyword, type,
//! value, block, op, number, comment, global (`@name`), function name and import path of a
//! document.
//!
//! Guarantees:
//! - Works on any text, also one that does not parse: tokens come from the lexer (text it cannot
//!   lex is skipped) and are classified by their neighbours, not by the syntax tree.
//! - Tokens are in document order and never overlap; [`super::to_proto::semantic_tokens`] encodes
//!   them (tokens that span lines are left out; lengths and columns in UTF-16 code units, so
//!   non-ASCII text in comments does not shift later tokens).
//! - The classes are standard LSP token types, in the legend's order
//!   ([`super::to_proto::LEGEND_TYPES`], see `docs/lsp.md`);
//!   definitions carry the `declaration` modifier and ops `defaultLibrary`. A device function's
//!   name (after `func`, and after `call`) is a `function` without `defaultLibrary`.

use kir::ir::text::lexer::{tokens, Token};

/// Indexes into the legend's token types ([`super::to_proto::LEGEND_TYPES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Keyword = 0,
    Type = 1,
    /// A value, `%x`.
    Value = 2,
    /// A block label or jump target.
    Block = 3,
    /// An op mnemonic (or a size function of a graph).
    Op = 4,
    Number = 5,
    Comment = 6,
    /// A kernel, graph or shared declaration, `@x`.
    Global = 7,
    /// An import path, `"lib/reduce.kir"`.
    String = 8,
    /// `->` of a function's result type.
    Operator = 9,
}

pub const MOD_DECLARATION: u32 = 1;
pub const MOD_DEFAULT_LIBRARY: u32 = 2;

/// A classified byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    pub start: usize,
    pub end: usize,
    pub class: Class,
    pub modifiers: u32,
}

/// Classifies the tokens and comments of a text, in order.
pub fn classify(src: &str) -> Vec<Classified> {
    let mut all: Vec<(usize, Option<Token<'_>>, usize)> = vec![];
    for t in tokens(src) {
        match t {
            Ok((s, tok, e)) => all.push((s, Some(tok), e)),
            Err(err) => all.push((err.start, None, err.end)),
        }
    }
    let mut out = vec![];
    let mut gap_start = 0usize;
    let mut prev: Option<Token<'_>> = None;
    let (mut in_header, mut in_graph, mut in_launch, mut in_br) = (false, false, false, false);
    let (mut angle, mut parens) = (0i32, 0i32);
    for (i, &(start, tok, end)) in all.iter().enumerate() {
        // Comments in the gap before this token.
        let gap = src.get(gap_start..start).unwrap_or("");
        comments(gap, gap_start, &mut out);
        let first_on_line = prev.is_none() || gap.contains('\n');
        gap_start = gap_start.max(end);
        let Some(tok) = tok else {
            prev = None;
            continue;
        };
        if first_on_line {
            in_br = false;
        }
        let next = all.get(i + 1).and_then(|t| t.1);
        let name = |len: usize, class: Class, modifiers: u32| Classified {
            start,
            end: (start + len).min(end),
            class,
            modifiers,
        };
        let whole = |class: Class, modifiers: u32| Classified { start, end, class, modifiers };
        let c = match tok {
            Token::Kernel | Token::Func => {
                in_header = true;
                in_graph = false;
                Some(whole(Class::Keyword, 0))
            }
            Token::Import => Some(whole(Class::Keyword, 0)),
            Token::Str(_) => Some(whole(Class::String, 0)),
            Token::Arrow => Some(whole(Class::Operator, 0)),
            Token::Graph => {
                in_graph = true;
                in_header = false;
                Some(whole(Class::Keyword, 0))
            }
            Token::Launch => {
                in_launch = true;
                parens = 0;
                Some(whole(Class::Keyword, 0))
            }
            Token::Temp => {
                in_launch = false;
                Some(whole(Class::Keyword, 0))
            }
            Token::Br => {
                in_br = true;
                Some(whole(Class::Keyword, 0))
            }
            Token::Shared if angle > 0 => Some(whole(Class::Type, 0)),
            Token::Shared | Token::Align | Token::Jmp | Token::Ret | Token::True | Token::False => {
                Some(whole(Class::Keyword, 0))
            }
            Token::Inf | Token::NegInf | Token::Nan | Token::Int(_) | Token::Float(_) | Token::HexFloat(_) => {
                Some(whole(Class::Number, 0))
            }
            Token::Def(n) => Some(name(1 + n.len(), Class::Value, MOD_DECLARATION)),
            Token::Value(_) => {
                let decl = if next == Some(Token::Colon) { MOD_DECLARATION } else { 0 };
                Some(whole(Class::Value, decl))
            }
            Token::Global(_) if prev == Some(Token::Func) => Some(whole(Class::Op, MOD_DECLARATION)),
            Token::Global(_) if prev == Some(Token::Ident("call")) => Some(whole(Class::Op, 0)),
            Token::Global(_) => {
                let decl = matches!(prev, Some(Token::Kernel | Token::Graph | Token::Shared));
                Some(whole(Class::Global, if decl { MOD_DECLARATION } else { 0 }))
            }
            Token::Label(n) => {
                if matches!(prev, Some(Token::Def(_))) {
                    Some(name(n.len(), Class::Op, MOD_DEFAULT_LIBRARY))
                } else {
                    Some(name(n.len(), Class::Block, MOD_DECLARATION))
                }
            }
            Token::CallOpen(n) => {
                let c = if in_header {
                    name(n.len(), Class::Keyword, 0)
                } else if in_graph {
                    let clause = in_launch && parens == 0 && matches!(prev, Some(Token::Global(_) | Token::RParen));
                    if clause {
                        name(n.len(), Class::Keyword, 0)
                    } else {
                        name(n.len(), Class::Op, MOD_DEFAULT_LIBRARY)
                    }
                } else if first_on_line {
                    name(n.len(), Class::Block, MOD_DECLARATION)
                } else {
                    name(n.len(), Class::Block, 0)
                };
                parens += 1;
                Some(c)
            }
            Token::Ident(n) => {
                let c = if matches!(prev, Some(Token::Def(_)))
                    || (first_on_line && !in_graph && !in_header && angle == 0)
                {
                    Class::Op
                } else if angle > 0 || matches!(prev, Some(Token::Colon)) || (n == "ptr" && next == Some(Token::Lt)) {
                    Class::Type
                } else if matches!(prev, Some(Token::Jmp)) || (in_br && matches!(prev, Some(Token::Comma))) {
                    Class::Block
                } else {
                    Class::Type
                };
                let m = if c == Class::Op { MOD_DEFAULT_LIBRARY } else { 0 };
                Some(whole(c, m))
            }
            Token::Lt => {
                angle += 1;
                None
            }
            Token::Gt => {
                angle = (angle - 1).max(0);
                None
            }
            Token::LParen => {
                parens += 1;
                None
            }
            Token::RParen => {
                parens = (parens - 1).max(0);
                None
            }
            Token::LBrace => {
                in_header = false;
                None
            }
            Token::RBrace => {
                in_graph = false;
                in_launch = false;
                None
            }
            _ => None,
        };
        if let Some(c) = c {
            out.push(c);
        }
        prev = Some(tok);
    }
    comments(src.get(gap_start..).unwrap_or(""), gap_start, &mut out);
    out
}

/// Comments (`;` to the end of the line) in a stretch of text between tokens.
fn comments(gap: &str, base: usize, out: &mut Vec<Classified>) {
    let mut rest = 0;
    while let Some(p) = gap[rest..].find(';') {
        let s = rest + p;
        let e = gap[s..].find('\n').map(|q| s + q).unwrap_or(gap.len());
        let e = if gap[s..e].ends_with('\r') { e - 1 } else { e };
        out.push(Classified { start: base + s, end: base + e, class: Class::Comment, modifiers: 0 });
        rest = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_of_a_kernel() {
        let src = "; héllo\nkernel @k(%p: ptr<global, f32>) reqntid(32) {\n  shared @s: f32[4]\nentry:\n  %t = tid.x ; c\n  %c = lt.u32 %t, 4\n  br %c, a, b(%t)\na:\n  jmp b(0)\nb(%x: u32):\n  barrier\n  ret\n}\n";
        let got: Vec<(String, Class)> =
            classify(src).iter().map(|c| (src[c.start..c.end].to_string(), c.class)).collect();
        let want = [
            ("; héllo", Class::Comment),
            ("kernel", Class::Keyword),
            ("@k", Class::Global),
            ("%p", Class::Value),
            ("ptr", Class::Type),
            ("global", Class::Type),
            ("f32", Class::Type),
            ("reqntid", Class::Keyword),
            ("32", Class::Number),
            ("shared", Class::Keyword),
            ("@s", Class::Global),
            ("f32", Class::Type),
            ("4", Class::Number),
            ("entry", Class::Block),
            ("%t", Class::Value),
            ("tid.x", Class::Op),
            ("; c", Class::Comment),
            ("%c", Class::Value),
            ("lt.u32", Class::Op),
            ("%t", Class::Value),
            ("4", Class::Number),
            ("br", Class::Keyword),
            ("%c", Class::Value),
            ("a", Class::Block),
            ("b", Class::Block),
            ("%t", Class::Value),
            ("a", Class::Block),
            ("jmp", Class::Keyword),
            ("b", Class::Block),
            ("0", Class::Number),
            ("b", Class::Block),
            ("%x", Class::Value),
            ("u32", Class::Type),
            ("barrier", Class::Op),
            ("ret", Class::Keyword),
        ];
        let want: Vec<(String, Class)> = want.iter().map(|(s, c)| (s.to_string(), *c)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn device_functions_calls_and_imports() {
        let src =
            "import \"lib/r.kir\"\nfunc @f(%a: f32) -> f32 {\nentry:\n  %r = call @g(%a)\n  call @h(%r)\n  ret %r\n}\n";
        let got: Vec<(String, Class, u32)> =
            classify(src).iter().map(|c| (src[c.start..c.end].to_string(), c.class, c.modifiers)).collect();
        let want = [
            ("import", Class::Keyword, 0),
            ("\"lib/r.kir\"", Class::String, 0),
            ("func", Class::Keyword, 0),
            ("@f", Class::Op, MOD_DECLARATION),
            ("%a", Class::Value, MOD_DECLARATION),
            ("f32", Class::Type, 0),
            ("->", Class::Operator, 0),
            ("f32", Class::Type, 0),
            ("entry", Class::Block, MOD_DECLARATION),
            ("%r", Class::Value, MOD_DECLARATION),
            ("call", Class::Op, MOD_DEFAULT_LIBRARY),
            ("@g", Class::Op, 0),
            ("%a", Class::Value, 0),
            ("call", Class::Op, MOD_DEFAULT_LIBRARY),
            ("@h", Class::Op, 0),
            ("%r", Class::Value, 0),
            ("ret", Class::Keyword, 0),
            ("%r", Class::Value, 0),
        ];
        let want: Vec<(String, Class, u32)> = want.iter().map(|(s, c, m)| (s.to_string(), *c, *m)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn graphs_clauses_and_functions() {
        let src = "graph @g(%n: u32) {\n  temp %t: f32[ceil_div(%n, 2)]\n  launch @k grid(ceil_div(%n, 256)) block(256) (%t, %n)\n}\n";
        let got: Vec<(String, Class)> =
            classify(src).iter().map(|c| (src[c.start..c.end].to_string(), c.class)).collect();
        assert!(got.contains(&("grid".into(), Class::Keyword)), "{got:?}");
        assert!(got.contains(&("block".into(), Class::Keyword)), "{got:?}");
        assert_eq!(got.iter().filter(|(s, c)| s == "ceil_div" && *c == Class::Op).count(), 2, "{got:?}");
        assert!(got.contains(&("@k".into(), Class::Global)));
    }
}
