//! Lexer of index notation: tokens with their byte spans.

use super::ast::{MathFn, Span};
use super::error::{NotationError, NotationErrorKind, END};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Number(f64),
    LParen,
    RParen,
    Comma,
    /// `;`, ending an operator's definition.
    Semicolon,
    Plus,
    Minus,
    Star,
    Slash,
    Assign,
    PlusAssign,
    /// `<`, `<=`, `>`, `>=`, `==`, `!=`.
    Compare(MathFn),
    /// `!` or `~`: a mask's complement.
    Not,
    Eof,
}

impl Tok {
    pub(super) fn describe(&self, text: &str) -> String {
        match self {
            Tok::Ident(name) => format!("name `{name}`"),
            Tok::Number(_) => format!("number `{text}`"),
            Tok::Eof => END.into(),
            _ => format!("`{text}`"),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) span: Span,
}

pub(super) fn span(start: usize, end: usize) -> Span {
    Span { start, end }
}

pub(super) fn lex(text: &str) -> Result<Vec<Token>, NotationError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let single = |tok: Tok| Token {
            tok,
            span: span(start, start + 1),
        };
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'(' => {
                tokens.push(single(Tok::LParen));
                i += 1;
            }
            b')' => {
                tokens.push(single(Tok::RParen));
                i += 1;
            }
            b',' => {
                tokens.push(single(Tok::Comma));
                i += 1;
            }
            b';' => {
                tokens.push(single(Tok::Semicolon));
                i += 1;
            }
            b'-' => {
                tokens.push(single(Tok::Minus));
                i += 1;
            }
            b'*' => {
                tokens.push(single(Tok::Star));
                i += 1;
            }
            b'/' => {
                tokens.push(single(Tok::Slash));
                i += 1;
            }
            b'<' | b'>' | b'=' | b'!' => {
                let equals = bytes.get(i + 1) == Some(&b'=');
                let op = match (b, equals) {
                    (b'<', false) => Some(MathFn::Lt),
                    (b'<', true) => Some(MathFn::Le),
                    (b'>', false) => Some(MathFn::Gt),
                    (b'>', true) => Some(MathFn::Ge),
                    (b'=', true) => Some(MathFn::Eq),
                    (b'!', true) => Some(MathFn::Ne),
                    _ => None,
                };
                let len = 1 + usize::from(equals);
                let tok = match (op, b) {
                    (Some(op), _) => Tok::Compare(op),
                    (None, b'!') => Tok::Not,
                    (None, _) => Tok::Assign,
                };
                tokens.push(Token {
                    tok,
                    span: span(i, i + len),
                });
                i += len;
            }
            b'~' => {
                tokens.push(single(Tok::Not));
                i += 1;
            }
            b'+' => {
                if bytes.get(i + 1) == Some(&b'=') {
                    tokens.push(Token {
                        tok: Tok::PlusAssign,
                        span: span(i, i + 2),
                    });
                    i += 2;
                } else {
                    tokens.push(single(Tok::Plus));
                    i += 1;
                }
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                tokens.push(Token {
                    tok: Tok::Ident(text[start..i].to_string()),
                    span: span(start, i),
                });
            }
            b'0'..=b'9' | b'.' => {
                i = lex_number(text, start)?;
                let value = text[start..i].parse::<f64>().map_err(|_| {
                    NotationError::new(
                        NotationErrorKind::InvalidNumber {
                            text: text[start..i].to_string(),
                        },
                        text,
                        span(start, i),
                    )
                })?;
                tokens.push(Token {
                    tok: Tok::Number(value),
                    span: span(start, i),
                });
            }
            _ => {
                let ch = text[i..].chars().next().expect("in bounds");
                return Err(NotationError::new(
                    NotationErrorKind::UnexpectedCharacter { ch },
                    text,
                    span(i, i + ch.len_utf8()),
                ));
            }
        }
    }
    tokens.push(Token {
        tok: Tok::Eof,
        span: span(text.len(), text.len()),
    });
    Ok(tokens)
}

/// The end of the number starting at `start`: digits, an optional fraction and an
/// optional exponent. A lone `.` is an unexpected character; an exponent without digits
/// is a malformed number.
fn lex_number(text: &str, start: usize) -> Result<usize, NotationError> {
    let bytes = text.as_bytes();
    let digits = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = digits(start);
    let mut mantissa_digits = i - start;
    if i < bytes.len() && bytes[i] == b'.' {
        let after = digits(i + 1);
        mantissa_digits += after - (i + 1);
        i = after;
    }
    if mantissa_digits == 0 {
        return Err(NotationError::new(
            NotationErrorKind::UnexpectedCharacter { ch: '.' },
            text,
            span(start, start + 1),
        ));
    }
    if i < bytes.len() && matches!(bytes[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < bytes.len() && matches!(bytes[j], b'+' | b'-') {
            j += 1;
        }
        let end = digits(j);
        if end == j {
            // Include a trailing identifier part in the reported text (`2ex`).
            let mut bad_end = j;
            while bad_end < bytes.len()
                && (bytes[bad_end].is_ascii_alphanumeric() || bytes[bad_end] == b'_')
            {
                bad_end += 1;
            }
            return Err(NotationError::new(
                NotationErrorKind::InvalidNumber {
                    text: text[start..bad_end].to_string(),
                },
                text,
                span(start, bad_end),
            ));
        }
        i = end;
    }
    Ok(i)
}
