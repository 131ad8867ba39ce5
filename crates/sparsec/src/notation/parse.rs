//! Lexer and recursive-descent parser for index notation.
//!
//! ```text
//! statement  := definition* assignment
//! definition := 'let' IDENT '(' IDENT (',' IDENT)* ')' '=' comparison
//!               ['identity' ['-'] (NUMBER | 'inf')] ';'
//! assignment := output ('=' | '+=') comparison ['over' '(' OP ',' OP ')']
//! expr       := term   (('+' | '-') term)*
//! term       := unary  (('*' | '/') unary)*
//! unary      := '-' unary | primary
//! primary    := NUMBER | access | call | '(' expr ')'
//! call       := IDENT '(' comparison (',' comparison)* ')'
//! access     := IDENT '(' [IDENT (',' IDENT)*] ')' | IDENT
//! ```

use super::ast::{math_function, Access, Assignment, Expr, ExprKind, Mask, MathFn, Op, Over, Span};
use std::sync::Arc;

use super::error::{NotationError, NotationErrorKind};
use super::lex::{lex, span, Tok, Token};
use super::operator::{foreign_part, Operator};
use super::semiring::{Combine, Monoid, Semiring};

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    /// The operators the statement's `let` definitions have defined so far.
    operators: Vec<Arc<Operator>>,
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

    /// The operators' definitions, then the assignment.
    fn statement(&mut self) -> Result<Assignment, NotationError> {
        while matches!(&self.peek().tok, Tok::Ident(word) if word == "let") {
            self.definition()?;
        }
        self.assignment()
    }

    /// `let name(a, b) = body [identity value];`
    fn definition(&mut self) -> Result<(), NotationError> {
        let start = self.bump().span.start;
        let Tok::Ident(name) = self.peek().tok.clone() else {
            return Err(self.unexpected("the operator's name, as in `let name(a, b) = ...`"));
        };
        let name_span = self.bump().span;
        let bad = |p: &Self, problem: String, at: Span| {
            p.error(
                NotationErrorKind::BadOperator {
                    name: name.clone(),
                    problem,
                },
                at,
            )
        };
        let reserved = ["let", "over", "identity", "inf"].contains(&name.as_str());
        if reserved
            || math_function(&name).is_some()
            || Monoid::from_name(&name).is_some()
            || Combine::from_name(&name).is_some()
        {
            return Err(bad(self, format!("`{name}` is a built-in name"), name_span));
        }
        if self.user_operator(&name).is_some() {
            return Err(bad(self, "it is defined twice".into(), name_span));
        }
        if self.peek().tok != Tok::LParen {
            return Err(self.unexpected("`(` opening the operator's parameters"));
        }
        self.bump();
        let mut params: Vec<String> = Vec::new();
        loop {
            let Tok::Ident(param) = self.peek().tok.clone() else {
                return Err(self.unexpected("a parameter's name"));
            };
            let at = self.bump().span;
            if params.contains(&param) {
                return Err(bad(self, format!("parameter `{param}` is named twice"), at));
            }
            params.push(param);
            match self.peek().tok {
                Tok::Comma => {
                    self.bump();
                }
                Tok::RParen => break,
                _ => return Err(self.unexpected("`,` or `)`")),
            }
        }
        self.bump();
        if self.peek().tok != Tok::Assign {
            return Err(self.unexpected("`=` before the operator's body"));
        }
        self.bump();
        let body = self.comparison()?;
        if let Some((at, what)) = foreign_part(&body, &params) {
            return Err(bad(self, format!("its body reads {what}"), at));
        }
        let identity = match &self.peek().tok {
            Tok::Ident(word) if word == "identity" => {
                self.bump();
                Some(self.constant()?)
            }
            _ => None,
        };
        let end = self.tokens[self.pos - 1].span.end;
        if self.peek().tok != Tok::Semicolon {
            return Err(self.unexpected("`;` ending the definition (or `identity` and a value)"));
        }
        self.bump();
        self.operators.push(Arc::new(Operator {
            name,
            params,
            body,
            identity,
            text: self.text[start..end].to_string(),
            span: span(start, end),
        }));
        Ok(())
    }

    /// A signed number or `inf`, as an identity is written.
    fn constant(&mut self) -> Result<f64, NotationError> {
        let negative = self.peek().tok == Tok::Minus;
        if negative {
            self.bump();
        }
        let value = match &self.peek().tok {
            Tok::Number(x) => *x,
            Tok::Ident(word) if word == "inf" => f64::INFINITY,
            _ => return Err(self.unexpected("a number or `inf`")),
        };
        self.bump();
        Ok(if negative { -value } else { value })
    }

    fn user_operator(&self, name: &str) -> Option<Arc<Operator>> {
        self.operators.iter().find(|o| o.name == name).cloned()
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
        let expected =
            "a reduction operator (+, *, min, max, or, and, any, or one defined by `let`)";
        let add = self.operator(expected)?;
        let add = match Monoid::from_name(&add.0) {
            Some(m) => m,
            None => Monoid::User(self.reducing(self.binary_operator(&add, expected)?, add.1)?),
        };
        if self.peek().tok != Tok::Comma {
            return Err(self.unexpected("`,` between the semiring's two operators"));
        }
        self.bump();
        let expected = "a combining operator (*, +, min, max, and, or, first, second, pair, \
                        or one defined by `let`)";
        let mul = self.operator(expected)?;
        let mul = match Combine::from_name(&mul.0) {
            Some(c) => c,
            None => Combine::User(self.binary_operator(&mul, expected)?),
        };
        if self.peek().tok != Tok::RParen {
            return Err(self.unexpected("`)` closing the semiring"));
        }
        let end = self.bump().span.end;
        Ok(Over {
            semiring: Semiring { add, mul },
            span: span(start, end),
        })
    }

    /// The user operator an `over` clause names, which must take two operands; an error
    /// saying what was `expected` when no operator has that name.
    fn binary_operator(
        &self,
        (name, at): &(String, Span),
        expected: &str,
    ) -> Result<Arc<Operator>, NotationError> {
        let Some(op) = self.user_operator(name) else {
            return Err(self.error(
                NotationErrorKind::UnexpectedToken {
                    found: format!("`{name}`"),
                    expected: expected.into(),
                },
                *at,
            ));
        };
        if op.params.len() != 2 {
            return Err(self.error(
                NotationErrorKind::WrongArgumentCount {
                    function: name.clone(),
                    expected: 2,
                    got: op.params.len(),
                },
                *at,
            ));
        }
        Ok(op)
    }

    /// `op` as a reduction: its identity declared and its laws holding.
    fn reducing(&self, op: Arc<Operator>, at: Span) -> Result<Arc<Operator>, NotationError> {
        let not_a_reduction = |problem: String| {
            self.error(
                NotationErrorKind::NotAReduction {
                    operator: op.name.clone(),
                    problem,
                },
                at,
            )
        };
        let Some(identity) = op.identity else {
            return Err(not_a_reduction(
                "it declares no identity to start from".into(),
            ));
        };
        op.check_monoid(identity)
            .map_err(|broken| not_a_reduction(broken.to_string()))?;
        Ok(op)
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
                if self.user_operator(name).is_some()
                    && self.tokens.get(self.pos + 1).map(|t| &t.tok) == Some(&Tok::LParen) =>
            {
                self.user_call()
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

    /// `(x, y, ...)` after a function's name: the arguments and the `)`'s span.
    fn arguments(&mut self) -> Result<(Vec<Expr>, Span), NotationError> {
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
        Ok((args, self.bump().span))
    }

    /// `f(a, b)`: a math function's arguments, as many as it takes.
    fn call(&mut self) -> Result<Expr, NotationError> {
        let name_tok = self.bump();
        let Tok::Ident(name) = name_tok.tok else {
            unreachable!("a call starts at an identifier")
        };
        let f = math_function(&name).expect("checked by the caller");
        let (args, close) = self.arguments()?;
        let s = span(name_tok.span.start, close.end);
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

    /// `f(x, y)` of a user operator `f`: its body, with the arguments for the parameters.
    fn user_call(&mut self) -> Result<Expr, NotationError> {
        let name_tok = self.bump();
        let Tok::Ident(name) = name_tok.tok else {
            unreachable!("a call starts at an identifier")
        };
        let op = self.user_operator(&name).expect("checked by the caller");
        let (args, close) = self.arguments()?;
        let s = span(name_tok.span.start, close.end);
        if args.len() != op.params.len() {
            return Err(self.error(
                NotationErrorKind::WrongArgumentCount {
                    function: name,
                    expected: op.params.len(),
                    got: args.len(),
                },
                s,
            ));
        }
        Ok(op.inline(&args, s))
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
        operators: Vec::new(),
    }
    .statement()
}
