//! The affine front end's tokens: C's identifiers, integers, floating-point numbers and
//! punctuation, with comments and `#pragma` lines skipped.

use super::{AffineError, Span};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Punct(&'static str),
    End,
}

const PUNCTS: [&str; 29] = [
    "++", "--", "+=", "-=", "*=", "/=", "<=", ">=", "==", "!=", "&&", "||", "{", "}", "[", "]",
    "(", ")", ",", ";", "<", ">", "=", "+", "-", "*", "/", "!", "%",
];

pub(super) fn lex(src: &str) -> Result<Vec<(Tok, Span)>, AffineError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let rest = &src[i..];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' || rest.starts_with("//") {
            // Preprocessor lines (`#pragma scop`) and line comments.
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if let Some(comment) = rest.strip_prefix("/*") {
            let end = comment
                .find("*/")
                .ok_or_else(|| AffineError::new("unterminated comment", (i, i + 2)))?;
            i += end + 4;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), (start, i)));
        } else if c.is_ascii_digit()
            || (c == b'.' && rest.len() > 1 && rest.as_bytes()[1].is_ascii_digit())
        {
            let start = i;
            let mut float = false;
            while i < bytes.len() {
                let b = bytes[i];
                if b.is_ascii_digit() {
                    i += 1;
                } else if b == b'.' {
                    float = true;
                    i += 1;
                } else if (b == b'e' || b == b'E') && i + 1 < bytes.len() {
                    float = true;
                    i += 1;
                    if bytes[i] == b'+' || bytes[i] == b'-' {
                        i += 1;
                    }
                } else {
                    break;
                }
            }
            let text = &src[start..i];
            // C's suffixes on literals (`1.0f`, `2L`) carry no meaning here.
            while i < bytes.len() && matches!(bytes[i], b'f' | b'F' | b'l' | b'L') {
                i += 1;
            }
            let tok = if float {
                Tok::Float(text.parse().map_err(|_| {
                    AffineError::new(format!("`{text}` is not a number"), (start, i))
                })?)
            } else {
                Tok::Int(
                    text.parse()
                        .ok()
                        .filter(|n: &i64| *n <= 1 << 40)
                        .ok_or_else(|| {
                            AffineError::new(format!("integer `{text}` is too large"), (start, i))
                        })?,
                )
            };
            out.push((tok, (start, i)));
        } else if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            out.push((Tok::Punct(p), (i, i + p.len())));
            i += p.len();
        } else {
            let ch = rest.chars().next().unwrap_or('?');
            return Err(AffineError::new(
                format!("unexpected character `{ch}`"),
                (i, i + ch.len_utf8()),
            ));
        }
    }
    out.push((Tok::End, (src.len(), src.len())));
    Ok(out)
}
