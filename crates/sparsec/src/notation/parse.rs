//! Lexer and recursive-descent parser for index notation.
//!
//! ```text
//! assignment := output ('=' | '+=') comparison ['over' '(' OP ',' OP ')']
//! expr       := term   (('+' | '-') term)*
//! term       := unary  (('*' | '/') unary)*
//! unary      := '-' unary | primary
//! primary    := NUMBER | access | '(' expr ')'
//! access     := IDENT '(' [IDENT (',' IDENT)*] ')' | IDENT
//! ```

use super::ast::{math_function, Access, Assignment, Expr, ExprKind, Mask, MathFn, Op, Over, Span};
use super::error::{NotationError, NotationErrorKind, END};
use super::semiring::{Combine, Monoid, Semiring};

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Number(f64),
    LParen,
    RParen,
    Comma,
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
    fn describe(&self, text: &str) -> String {
        match self {
            Tok::Ident(name) => format!("name `{name}`"),
            Tok::Number(_) => format!("number `{text}`"),
            Tok::Eof => END.into(),
            _ => format!("`{text}`"),
        }
    }
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    span: Span,
}

fn span(start: usize, end: usize) -> Span {
    Span { start, end }
}

fn lex(text: &str) -> Result<Vec<Token>, NotationError> {
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

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos]
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn error(&self, kind: NotationErrorKind, at: Span) -> NotationError {
        NotationError::new(kind, self.text, at)
    }

    fn unexpected(&self, expected: &str) -> NotationError {
        let t = self.peek();
        let found = t.tok.describe(&self.text[t.span.start..t.span.end]);
        // At the end there is nothing to underline: point at the last token instead.
        let at = match (&t.tok, self.pos) {
            (Tok::Eof, p) if p > 0 => self.tokens[p - 1].span,
            _ => t.span,
        };
        self.error(
            NotationErrorKind::UnexpectedToken {
                found,
                expected: expected.to_string(),
            },
            at,
        )
    }

    fn assignment(&mut self) -> Result<Assignment, NotationError> {
        if self.peek().tok == Tok::Eof {
            return Err(self.error(
                NotationErrorKind::EmptyExpression {
                    what: "the expression".into(),
                },
                span(0, self.text.len()),
            ));
        }
        let (lhs, mask) = match &self.peek().tok {
            Tok::Ident(_) => self.output()?,
            _ => return Err(self.unexpected("the output tensor (such as `y(i)`)")),
        };
        let accumulate = match self.peek().tok {
            Tok::Assign => false,
            Tok::PlusAssign => true,
            _ => return Err(self.unexpected("`=` or `+=`")),
        };
        let assign = self.bump();
        if self.peek().tok == Tok::Eof {
            return Err(self.error(
                NotationErrorKind::EmptyExpression {
                    what: "the right-hand side".into(),
                },
                assign.span,
            ));
        }
        let mut rhs = self.comparison()?;
        if let Some(mask) = &mask {
            rhs = masked(mask, &lhs, rhs);
        }
        let over = match &self.peek().tok {
            Tok::Ident(word) if word == "over" => Some(self.over()?),
            _ => None,
        };
        if self.peek().tok != Tok::Eof {
            let expected = if self.peek().tok == Tok::RParen {
                "an operator or the end of the expression (this `)` has no matching `(`)"
            } else {
                "an operator or the end of the expression"
            };
            return Err(self.unexpected(expected));
        }
        Ok(Assignment {
            lhs,
            mask,
            accumulate,
            rhs,
            over,
            source: self.text.to_string(),
        })
    }

    /// `over (⊕, ⊗)`, after the right-hand side.
    fn over(&mut self) -> Result<Over, NotationError> {
        let start = self.bump().span.start;
        if self.peek().tok != Tok::LParen {
            return Err(self.unexpected("`(` opening the semiring, as in `over (min, +)`"));
        }
        self.bump();
        let add = self.operator("a reduction operator (+, *, min, max, or, and, any)")?;
        let add = Monoid::from_name(&add.0).ok_or_else(|| {
            self.error(
                NotationErrorKind::UnexpectedToken {
                    found: format!("`{}`", add.0),
                    expected: "a reduction operator (+, *, min, max, or, and, any)".into(),
                },
                add.1,
            )
        })?;
        if self.peek().tok != Tok::Comma {
            return Err(self.unexpected("`,` between the semiring's two operators"));
        }
        self.bump();
        let expected = "a combining operator (*, +, min, max, and, or, first, second, pair)";
        let mul = self.operator(expected)?;
        let mul = Combine::from_name(&mul.0).ok_or_else(|| {
            self.error(
                NotationErrorKind::UnexpectedToken {
                    found: format!("`{}`", mul.0),
                    expected: expected.into(),
                },
                mul.1,
            )
        })?;
        if self.peek().tok != Tok::RParen {
            return Err(self.unexpected("`)` closing the semiring"));
        }
        let end = self.bump().span.end;
        Ok(Over {
            semiring: Semiring { add, mul },
            span: span(start, end),
        })
    }

    /// An operator of an `over` clause: `+`, `*` or a name, with its span.
    fn operator(&mut self, expected: &str) -> Result<(String, Span), NotationError> {
        let name = match &self.peek().tok {
            Tok::Plus => "+".to_string(),
            Tok::Star => "*".to_string(),
            Tok::Ident(name) => name.clone(),
            _ => return Err(self.unexpected(expected)),
        };
        Ok((name, self.bump().span))
    }

    /// `a < b` and the other comparisons, below `+` and `-` and not chained: 1 where it
    /// holds, else 0.
    fn comparison(&mut self) -> Result<Expr, NotationError> {
        let left = self.expr()?;
        let Tok::Compare(op) = self.peek().tok else {
            return Ok(left);
        };
        self.bump();
        let right = self.expr()?;
        if let Tok::Compare(_) = self.peek().tok {
            return Err(self.unexpected("an operator other than a second comparison"));
        }
        let s = span(left.span.start, right.span.end);
        Ok(Expr {
            kind: ExprKind::Math(op, vec![left, right]),
            span: s,
        })
    }

    fn expr(&mut self) -> Result<Expr, NotationError> {
        let mut left = self.term()?;
        loop {
            let op = match self.peek().tok {
                Tok::Plus => Op::Add,
                Tok::Minus => Op::Sub,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.term()?;
            left = binary(op, left, right);
        }
    }

    fn term(&mut self) -> Result<Expr, NotationError> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek().tok {
                Tok::Star => Op::Mul,
                Tok::Slash => Op::Div,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.unary()?;
            left = binary(op, left, right);
        }
    }

    fn unary(&mut self) -> Result<Expr, NotationError> {
        if self.peek().tok == Tok::Minus {
            let minus = self.bump();
            let operand = self.unary()?;
            let s = span(minus.span.start, operand.span.end);
            return Ok(Expr {
                kind: ExprKind::Neg(Box::new(operand)),
                span: s,
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, NotationError> {
        match self.peek().tok {
            Tok::Number(value) => {
                let t = self.bump();
                Ok(Expr {
                    kind: ExprKind::Literal(value),
                    span: t.span,
                })
            }
            Tok::Ident(ref name)
                if math_function(name).is_some()
                    && self.tokens.get(self.pos + 1).map(|t| &t.tok) == Some(&Tok::LParen) =>
            {
                self.call()
            }
            Tok::Ident(_) => {
                let access = self.access()?;
                let s = access.span;
                Ok(Expr {
                    kind: ExprKind::Access(access),
                    span: s,
                })
            }
            Tok::LParen => {
                let open = self.bump();
                let mut inner = self.comparison()?;
                match self.peek().tok {
                    Tok::RParen => {
                        let close = self.bump();
                        inner.span = span(open.span.start, close.span.end);
                        Ok(inner)
                    }
                    Tok::Eof => {
                        Err(self.error(NotationErrorKind::UnterminatedParenthesis, open.span))
                    }
                    _ => Err(self.unexpected("`)` or an operator")),
                }
            }
            _ => Err(self.unexpected("an expression (a tensor, a number or `(`)")),
        }
    }

    /// `f(a, b)`: a math function's arguments, as many as it takes.
    fn call(&mut self) -> Result<Expr, NotationError> {
        let name_tok = self.bump();
        let Tok::Ident(name) = name_tok.tok else {
            unreachable!("a call starts at an identifier")
        };
        let f = math_function(&name).expect("checked by the caller");
        let open = self.bump();
        let mut args = vec![self.comparison()?];
        loop {
            match self.peek().tok {
                Tok::Comma => {
                    self.bump();
                    args.push(self.comparison()?);
                }
                Tok::RParen => break,
                Tok::Eof => {
                    return Err(self.error(NotationErrorKind::UnterminatedParenthesis, open.span))
                }
                _ => return Err(self.unexpected("`,`, `)` or an operator")),
            }
        }
        let close = self.bump();
        let s = span(name_tok.span.start, close.span.end);
        if args.len() != f.arity() {
            return Err(self.error(
                NotationErrorKind::WrongArgumentCount {
                    function: name,
                    expected: f.arity(),
                    got: args.len(),
                },
                s,
            ));
        }
        Ok(Expr {
            kind: ExprKind::Math(f, args),
            span: s,
        })
    }

    /// The output, with its mask if it has one: `C(i,j)`, `C<M>(i,j)`, `C<!M>(i,j)`,
    /// `C<pattern(M)>(i,j)`.
    fn output(&mut self) -> Result<(Access, Option<Mask>), NotationError> {
        let masked =
            self.tokens.get(self.pos + 1).map(|t| &t.tok) == Some(&Tok::Compare(MathFn::Lt));
        if !masked {
            return Ok((self.access()?, None));
        }
        let name_tok = self.bump();
        let open = self.bump();
        let complement = self.peek().tok == Tok::Not;
        if complement {
            self.bump();
        }
        let structural = matches!(&self.peek().tok, Tok::Ident(n) if n == "pattern")
            && self.tokens.get(self.pos + 1).map(|t| &t.tok) == Some(&Tok::LParen);
        if structural {
            self.bump();
            self.bump();
        }
        let Tok::Ident(tensor) = self.peek().tok.clone() else {
            return Err(self.unexpected("the mask's tensor (`C<M>(i,j)`)"));
        };
        self.bump();
        if structural {
            if self.peek().tok != Tok::RParen {
                return Err(self.unexpected("`)` after the mask's tensor"));
            }
            self.bump();
        }
        if self.peek().tok != Tok::Compare(MathFn::Gt) {
            return Err(self.unexpected("`>` closing the mask"));
        }
        let close = self.bump();
        let mask = Mask {
            tensor,
            structural,
            complement,
            span: span(open.span.start, close.span.end),
        };
        Ok((self.access_named(name_tok)?, Some(mask)))
    }

    fn access(&mut self) -> Result<Access, NotationError> {
        let name_tok = self.bump();
        self.access_named(name_tok)
    }

    /// The access whose name `name_tok` was just read.
    fn access_named(&mut self, name_tok: Token) -> Result<Access, NotationError> {
        let Tok::Ident(tensor) = name_tok.tok else {
            unreachable!("access starts at an identifier")
        };
        let mut access = Access {
            tensor,
            tensor_span: name_tok.span,
            indices: vec![],
            index_spans: vec![],
            span: name_tok.span,
        };
        if self.peek().tok != Tok::LParen {
            return Ok(access);
        }
        let open = self.bump();
        let unterminated =
            |p: &Self| p.error(NotationErrorKind::UnterminatedParenthesis, open.span);
        if self.peek().tok == Tok::RParen {
            access.span.end = self.bump().span.end;
            return Ok(access);
        }
        loop {
            match self.peek().tok.clone() {
                Tok::Ident(index) => {
                    let t = self.bump();
                    access.indices.push(index);
                    access.index_spans.push(t.span);
                }
                Tok::Eof => return Err(unterminated(self)),
                _ => return Err(self.unexpected("an index variable")),
            }
            match self.peek().tok {
                Tok::Comma => {
                    self.bump();
                }
                Tok::RParen => {
                    access.span.end = self.bump().span.end;
                    return Ok(access);
                }
                Tok::Eof => return Err(unterminated(self)),
                _ => return Err(self.unexpected("`,` or `)`")),
            }
        }
    }
}

/// `rhs` under `mask`: multiplied by `M(lhs) != 0`, or `pattern(M(lhs))`, or one minus
/// either for a complement, every node spanning the mask's text.
fn masked(mask: &Mask, lhs: &Access, rhs: Expr) -> Expr {
    let at = |kind: ExprKind| Expr {
        kind,
        span: mask.span,
    };
    let access = at(ExprKind::Access(Access {
        tensor: mask.tensor.clone(),
        tensor_span: mask.span,
        indices: lhs.indices.clone(),
        index_spans: vec![mask.span; lhs.indices.len()],
        span: mask.span,
    }));
    let holds = if mask.structural {
        at(ExprKind::Math(MathFn::Pattern, vec![access]))
    } else {
        at(ExprKind::Math(
            MathFn::Ne,
            vec![access, at(ExprKind::Literal(0.0))],
        ))
    };
    let factor = if mask.complement {
        binary(Op::Sub, at(ExprKind::Literal(1.0)), holds)
    } else {
        holds
    };
    binary(Op::Mul, factor, rhs)
}

fn binary(op: Op, left: Expr, right: Expr) -> Expr {
    let s = span(left.span.start, right.span.end);
    Expr {
        kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
        span: s,
    }
}

/// Parse an assignment such as `y(i) = A(i,j) * x(j)` or `a += 2 * b`.
///
/// ```
/// use sparsec::notation::{parse, ast::ExprKind};
/// let a = parse("y(i) = A(i,j) * x(j)").unwrap();
/// assert_eq!(a.lhs.indices, vec!["i"]);
/// assert!(matches!(a.rhs.kind, ExprKind::Binary(..)));
/// ```
pub fn parse(text: &str) -> Result<Assignment, NotationError> {
    let tokens = lex(text)?;
    Parser {
        text,
        tokens,
        pos: 0,
    }
    .assignment()
}
