//! The lexer of the `.kir` text format (logos).
//!
//! Guarantees: every input byte sequence lexes to tokens or to a located [`LexError`]; `;` starts a
//! comment that runs to the end of the line; whitespace is insignificant. Identifiers may contain
//! dots (`add.rn.f32`), so op mnemonics, types and labels are all [`Token::Ident`] and are resolved
//! later, where errors can name what was expected.
//!
//! - A comment is accepted wherever whitespace that may hold a line break is: in particular between
//!   a definition's name and its `=` (`%t ; why` / `= add.u32 ...`), which [`tokens`] joins into one
//!   [`Token::Def`] whatever whitespace and comments separate them. (A label's `:` must follow its
//!   name on the same line, so no comment can come between them.)
//! - A character that is no token is an error spanning exactly that character; a byte order mark,
//!   a NUL byte, a vertical tab and other control characters are named ([`LexErrorKind`]).
//! - Tokens and errors come out in source order, in one pass (linear in the input).

use logos::Logos;
use std::fmt;

#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r";[^\n]*", allow_greedy = true))]
pub enum Token<'a> {
    #[token("kernel")]
    Kernel,
    #[token("func")]
    Func,
    #[token("import")]
    Import,
    #[token("shared")]
    Shared,
    #[token("graph")]
    Graph,
    #[token("launch")]
    Launch,
    #[token("temp")]
    Temp,
    #[token("align")]
    Align,
    #[token("br")]
    Br,
    #[token("jmp")]
    Jmp,
    #[token("ret")]
    Ret,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[token("inf")]
    Inf,
    #[token("-inf")]
    NegInf,
    #[token("nan")]
    Nan,
    /// `%name =`: the start of an instruction that defines a value. Lexing the `=` with the name
    /// keeps the grammar LALR(1) (a zero-operand op followed by a definition is not ambiguous).
    /// Never produced by logos itself: [`tokens`] joins a [`Token::Value`] and the [`Token::Eq`]
    /// after it (with any whitespace and comments between) into one `Def`.
    Def(&'a str),
    #[regex(r"%[A-Za-z0-9_][A-Za-z0-9_.]*", |lex| &lex.slice()[1..])]
    Value(&'a str),
    /// `name:`: a block label without parameters (or, after a definition, a zero-operand op with a
    /// type annotation: `%l = laneid : u32`).
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*[ \t]*:", |lex| lex.slice().trim_end_matches(':').trim_end())]
    Label(&'a str),
    /// `name(`: a block label with parameters, or a jump target with arguments.
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*\(", |lex| lex.slice().trim_end_matches('('))]
    CallOpen(&'a str),
    #[regex(r"@[A-Za-z_][A-Za-z0-9_.]*", |lex| &lex.slice()[1..])]
    Global(&'a str),
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")]
    Ident(&'a str),
    #[regex(r"-?[0-9]+", priority = 3)]
    #[regex(r"0x[0-9a-fA-F]+")]
    Int(&'a str),
    #[regex(r"-?[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?")]
    #[regex(r"-?[0-9]+[eE][+-]?[0-9]+")]
    Float(&'a str),
    /// PTX-style hex float bits: `0f` + 8 digits (f32), `0d` + 16 (f64), `0h` + 4 (f16/bf16).
    #[regex(r"0[fdh][0-9a-fA-F]+")]
    HexFloat(&'a str),
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token("=")]
    Eq,
    #[token("->")]
    Arrow,
    /// `"text"`: a string on one line (import paths), without the quotes. No escapes.
    #[regex(r#""[^"\n]*""#, |lex| { let t = lex.slice(); &t[1..t.len() - 1] })]
    Str(&'a str),
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Value(s) => write!(f, "`%{s}`"),
            Token::Def(s) => write!(f, "`%{s} =`"),
            Token::Label(s) => write!(f, "`{s}:`"),
            Token::CallOpen(s) => write!(f, "`{s}(`"),
            Token::Global(s) => write!(f, "`@{s}`"),
            Token::Ident(s) | Token::Int(s) | Token::Float(s) | Token::HexFloat(s) => write!(f, "`{s}`"),
            Token::Str(s) => write!(f, "`\"{s}\"`"),
            other => write!(f, "`{}`", token_text(other)),
        }
    }
}

/// The fixed spelling of a punctuation or keyword token.
pub fn token_text(t: &Token<'_>) -> &'static str {
    match t {
        Token::Kernel => "kernel",
        Token::Func => "func",
        Token::Import => "import",
        Token::Arrow => "->",
        Token::Shared => "shared",
        Token::Graph => "graph",
        Token::Launch => "launch",
        Token::Temp => "temp",
        Token::Align => "align",
        Token::Br => "br",
        Token::Jmp => "jmp",
        Token::Ret => "ret",
        Token::True => "true",
        Token::False => "false",
        Token::Inf => "inf",
        Token::NegInf => "-inf",
        Token::Nan => "nan",
        Token::LParen => "(",
        Token::RParen => ")",
        Token::LBrace => "{",
        Token::RBrace => "}",
        Token::LBracket => "[",
        Token::RBracket => "]",
        Token::Lt => "<",
        Token::Gt => ">",
        Token::Comma => ",",
        Token::Colon => ":",
        Token::Eq => "=",
        Token::Value(_)
        | Token::Def(_)
        | Token::Label(_)
        | Token::CallOpen(_)
        | Token::Global(_)
        | Token::Ident(_)
        | Token::Int(_)
        | Token::Float(_)
        | Token::HexFloat(_)
        | Token::Str(_) => "",
    }
}

/// A character sequence that is no token (or, from the grammar, text that breaks a limit), at byte
/// offsets `start..end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub start: usize,
    pub end: usize,
    pub kind: LexErrorKind,
}

/// What a [`LexError`] is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexErrorKind {
    /// Characters that start no token.
    Invalid,
    /// U+FEFF (a byte order mark, or a zero-width no-break space).
    ByteOrderMark,
    /// A control character (U+0000..U+001F other than tab, LF, CR and form feed, or U+007F).
    Control(u8),
    /// Nesting deeper than the grammar allows (`what` nested more than `limit` levels deep).
    TooDeep { what: &'static str, limit: usize },
}

impl LexError {
    pub fn invalid(start: usize, end: usize) -> LexError {
        LexError { start, end, kind: LexErrorKind::Invalid }
    }
}

/// The name of a control character, for messages (`NUL byte (0x00)`).
pub fn control_name(b: u8) -> String {
    let name = match b {
        0x00 => "NUL byte",
        0x07 => "bell character",
        0x08 => "backspace character",
        0x0b => "vertical tab",
        0x1b => "escape character",
        0x7f => "delete character",
        _ => "control character",
    };
    format!("{name} (0x{b:02x})")
}

/// Classifies the text of a lexing error by its first character.
fn classify(text: &str) -> LexErrorKind {
    match text.chars().next() {
        Some('\u{feff}') => LexErrorKind::ByteOrderMark,
        Some(c) if (c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c')) => {
            LexErrorKind::Control(c as u8)
        }
        _ => LexErrorKind::Invalid,
    }
}

/// Spanned tokens in the form lalrpop's external-lexer interface wants. A value name followed by
/// `=` (whitespace and comments between allowed) is one [`Token::Def`] spanning both.
pub fn tokens(src: &str) -> impl Iterator<Item = Result<(usize, Token<'_>, usize), LexError>> {
    let mut raw = Token::lexer(src)
        .spanned()
        .map(move |(tok, span)| match tok {
            Ok(t) => Ok((span.start, t, span.end)),
            Err(()) => {
                // An error spans whole characters (logos may stop inside one).
                let mut end = span.end.max(span.start + 1).min(src.len());
                while end < src.len() && !src.is_char_boundary(end) {
                    end += 1;
                }
                let kind = classify(src.get(span.start..end).unwrap_or(""));
                Err(LexError { start: span.start, end, kind })
            }
        })
        .peekable();
    std::iter::from_fn(move || {
        let next = raw.next()?;
        if let Ok((l, Token::Value(name), _)) = next {
            if let Some(Ok((_, Token::Eq, r))) = raw.peek() {
                let r = *r;
                raw.next();
                return Some(Ok((l, Token::Def(name), r)));
            }
        }
        Some(next)
    })
}
