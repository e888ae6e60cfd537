//! PTX tokens. Every token carries its 1-based line and column; anything that is not PTX's
//! lexical syntax (ISA "Syntax" chapter) is a located error, never skipped.

use crate::ParseError;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier, register (`%r1`) or label (`$L__BB0_1`); special registers keep their
    /// component as a separate `Dot` (`%tid` `.x`).
    Ident(String),
    /// `.name`: a directive, a type or a modifier.
    Dot(String),
    /// An integer literal (its value wrapped to 64 bits; negation is a separate `Minus`).
    Int(u64),
    /// `0fXXXXXXXX`: f32 bits.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal float literal: f64 bits.
    F64(u64),
    Str(String),
    Punct(char),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
    pub col: u32,
}

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '%')
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$')
}

pub fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let err = |line, col, message: String| ParseError { line, col, message };
    macro_rules! advance {
        ($n:expr) => {
            for _ in 0..$n {
                if chars[i] == '\n' {
                    line += 1;
                    col = 1;
                } else {
                    col += 1;
                }
                i += 1;
            }
        };
    }
    while i < chars.len() {
        let c = chars[i];
        let (tl, tc) = (line, col);
        if c.is_whitespace() {
            advance!(1);
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                advance!(1);
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            advance!(2);
            loop {
                if i + 1 >= chars.len() {
                    return Err(err(tl, tc, "unterminated `/*` comment".into()));
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    advance!(2);
                    break;
                }
                advance!(1);
            }
            continue;
        }
        let start = i;
        let tok = if ident_start(c) {
            advance!(1);
            while i < chars.len() && ident_char(chars[i]) {
                advance!(1);
            }
            let s: String = chars[start..i].iter().collect();
            if s == "%" {
                return Err(err(tl, tc, "`%` must be followed by a register name".into()));
            }
            Tok::Ident(s)
        } else if c == '.' && chars.get(i + 1).is_some_and(|&d| d.is_ascii_alphabetic() || d == '_') {
            advance!(1);
            while i < chars.len() && ident_char(chars[i]) {
                advance!(1);
            }
            Tok::Dot(chars[start + 1..i].iter().collect())
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                // A '.' continues a number only when a digit follows (1.5, not `1.x`).
                if chars[i] == '.' && !chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                    break;
                }
                // Exponent sign: 1e-6.
                advance!(1);
                if matches!(chars.get(i), Some('-' | '+'))
                    && matches!(chars[i - 1], 'e' | 'E')
                    && !chars[start..i].iter().any(|&c| c == 'x' || c == 'X')
                    && chars[start..i].iter().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E'))
                {
                    advance!(1);
                }
            }
            let s: String = chars[start..i].iter().collect();
            number(&s).ok_or_else(|| err(tl, tc, format!("malformed number `{s}`")))?
        } else if c == '"' {
            advance!(1);
            while i < chars.len() && chars[i] != '"' && chars[i] != '\n' {
                advance!(1);
            }
            if i >= chars.len() || chars[i] != '"' {
                return Err(err(tl, tc, "unterminated string".into()));
            }
            advance!(1);
            Tok::Str(chars[start + 1..i - 1].iter().collect())
        } else if "{}()[],;:+-@!|<>=_".contains(c) {
            advance!(1);
            Tok::Punct(c)
        } else {
            return Err(err(tl, tc, format!("unexpected character `{}`", c.escape_debug())));
        };
        toks.push(Token { tok, line: tl, col: tc });
    }
    Ok(toks)
}

/// A numeric literal: decimal/hex/octal/binary integers (optional `U` suffix), `0f`/`0d` hex
/// floats, decimal floats.
fn number(s: &str) -> Option<Tok> {
    let lower = s.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0f") {
        return (h.len() == 8).then(|| u32::from_str_radix(h, 16).ok().map(Tok::F32)).flatten();
    }
    if let Some(h) = lower.strip_prefix("0d") {
        return (h.len() == 16).then(|| u64::from_str_radix(h, 16).ok().map(Tok::F64)).flatten();
    }
    if lower.contains('.') || (lower.contains('e') && !lower.starts_with("0x")) {
        return lower.parse::<f64>().ok().map(|f| Tok::F64(f.to_bits()));
    }
    let body = lower.strip_suffix('u').unwrap_or(&lower);
    let v = if let Some(h) = body.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = body.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        u64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse::<u64>().ok()?
    };
    Some(Tok::Int(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn instruction_tokens() {
        assert_eq!(
            toks("@!%p1 ld.global.v2.f32 {%f1, _}, [%rd2+-8]; // c"),
            vec![
                Tok::Punct('@'),
                Tok::Punct('!'),
                Tok::Ident("%p1".into()),
                Tok::Ident("ld".into()),
                Tok::Dot("global".into()),
                Tok::Dot("v2".into()),
                Tok::Dot("f32".into()),
                Tok::Punct('{'),
                Tok::Ident("%f1".into()),
                Tok::Punct(','),
                Tok::Ident("_".into()),
                Tok::Punct('}'),
                Tok::Punct(','),
                Tok::Punct('['),
                Tok::Ident("%rd2".into()),
                Tok::Punct('+'),
                Tok::Punct('-'),
                Tok::Int(8),
                Tok::Punct(']'),
                Tok::Punct(';'),
            ]
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("0f3F800000 0d3FF0000000000000 0x10 010 0b11 7U 1.5 1e-6"),
            vec![
                Tok::F32(0x3F80_0000),
                Tok::F64(1f64.to_bits()),
                Tok::Int(16),
                Tok::Int(8),
                Tok::Int(3),
                Tok::Int(7),
                Tok::F64(1.5f64.to_bits()),
                Tok::F64(1e-6f64.to_bits()),
            ]
        );
        assert_eq!(toks("%tid.x"), vec![Tok::Ident("%tid".into()), Tok::Dot("x".into())]);
    }

    #[test]
    fn errors_are_located() {
        let e = lex("mov.u32 %r1,\n  #").unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        assert!(lex("0fXYZ").unwrap_err().message.contains("malformed number"));
        assert!(lex("/* open").unwrap_err().message.contains("unterminated"));
    }
}
