//! The lexer of the `.kir` text format (logos).
//!
//! Guarantees: every input byte sequence lexes to tokens or to a located [`LexError`]; `;` starts a
//! comment that runs to the end of the line; whitespace is insignificant. Identifiers may contain
//! dots (`add.rn.f32`), so op mnemonics, types and labels are all [`Token::Ident`] and are resolved
//! later, where errors can name what was expected.

use logos::Logos;
use std::fmt;

#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r";[^\n]*", allow_greedy = true))]
pub enum Token<'a> {
    #[token("kernel")]
    Kernel,
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
    #[regex(r"%[A-Za-z0-9_][A-Za-z0-9_.]*[ \t\r\n]*=", |lex| lex.slice()[1..].trim_end_matches('=').trim_end())]
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
            other => write!(f, "`{}`", token_text(other)),
        }
    }
}

/// The fixed spelling of a punctuation or keyword token.
pub fn token_text(t: &Token<'_>) -> &'static str {
    match t {
        Token::Kernel => "kernel",
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
        | Token::HexFloat(_) => "",
    }
}

/// A character sequence that is no token, at byte offsets `start..end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub start: usize,
    pub end: usize,
}

/// Spanned tokens in the form lalrpop's external-lexer interface wants.
pub fn tokens(src: &str) -> impl Iterator<Item = Result<(usize, Token<'_>, usize), LexError>> {
    Token::lexer(src).spanned().map(|(tok, span)| match tok {
        Ok(t) => Ok((span.start, t, span.end)),
        Err(()) => Err(LexError { start: span.start, end: span.end }),
    })
}
