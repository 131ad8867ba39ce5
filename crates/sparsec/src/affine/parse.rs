//! Reading an affine program: declarations (`int N;` declares a size parameter,
//! `double A[N][N], alpha;` arrays and scalars), then `for` loops with affine bounds and a
//! positive constant step, `if`/`else` on affine conditions, and assignments (`=`, `+=`,
//! `-=`, `*=`, `/=`) whose right sides combine array elements, scalars, numbers and calls.
//! Anything outside that class (a data-dependent condition, an index read from an array,
//! a product of two loop counters) is an error naming the construct.

pub use super::expr::{Affine, Condition, Constraint};
use super::lex::{lex, Tok};
use super::{AffineError, Span};
use crate::ir::MathFn;

/// An element of an array (or a scalar, with no index) in a statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub array: String,
    pub index: Vec<Affine>,
    pub span: Span,
}

/// The arithmetic of a right-hand side.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Number(f64),
    /// A read of an array element or a scalar.
    Read(Access),
    Neg(Box<Value>),
    Binary(BinaryOp, Box<Value>, Box<Value>),
    /// A call of a C math function, by name.
    Call(String, Vec<Value>),
}

/// `+`, `-`, `*`, `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinaryOp {
    /// C's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
        }
    }
}

/// One node of the loop tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `for (counter = lower; counter <= upper; counter += step)`.
    Loop {
        counter: String,
        lower: Affine,
        upper: Affine,
        step: i64,
        body: Vec<Node>,
    },
    If {
        condition: Condition,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    /// `target = value`; compound assignments are expanded (`x += e` is `x = x + e`).
    Assign {
        target: Access,
        value: Value,
        span: Span,
    },
}

/// A declared array (a scalar has no extents).
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDecl {
    pub name: String,
    pub extents: Vec<Affine>,
    pub span: Span,
}

/// A parsed affine program.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The size parameters (`int N;`), in declaration order.
    pub params: Vec<String>,
    pub arrays: Vec<ArrayDecl>,
    pub body: Vec<Node>,
}

impl Program {
    /// The declaration of `name`.
    pub fn array(&self, name: &str) -> Option<&ArrayDecl> {
        self.arrays.iter().find(|a| a.name == name)
    }
}

/// The number of arguments of `name` if a right-hand side may call it: the IR's math
/// functions ([`MathFn`]), by their C names.
pub fn function_arity(name: &str) -> Option<usize> {
    MathFn::from_c_name(name).map(MathFn::arity)
}

/// The functions a right-hand side may call, for messages.
fn known_functions() -> String {
    let names: Vec<&str> = MathFn::ALL
        .iter()
        .filter(|f| !f.is_operator())
        .map(|f| f.c_name())
        .collect();
    names.join(", ")
}

/// Type names a declaration may start with (`int` declares parameters).
const VALUE_TYPES: [&str; 3] = ["double", "float", "DATA_TYPE"];

struct Parser {
    toks: Vec<(Tok, Span)>,
    pos: usize,
    params: Vec<String>,
    arrays: Vec<ArrayDecl>,
    /// Loop counters in scope, innermost last.
    counters: Vec<String>,
}

/// Parse an affine program (grammar in `docs/affine.md`).
pub fn parse_program(src: &str) -> Result<Program, AffineError> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        params: Vec::new(),
        arrays: Vec::new(),
        counters: Vec::new(),
    };
    let mut body = Vec::new();
    while p.peek() != &Tok::End {
        if let Some(node) = p.item()? {
            body.push(node);
        }
    }
    if body.is_empty() {
        return Err(AffineError::general("the program has no statement"));
    }
    Ok(Program {
        params: p.params,
        arrays: p.arrays,
        body,
    })
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }

    fn span(&self) -> Span {
        self.toks[self.pos].1
    }

    fn next(&mut self) -> (Tok, Span) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        let hit = self.is(p);
        if hit {
            self.next();
        }
        hit
    }

    fn expect(&mut self, p: &str) -> Result<Span, AffineError> {
        if self.is(p) {
            Ok(self.next().1)
        } else {
            Err(self.unexpected(&format!("`{p}`")))
        }
    }

    fn unexpected(&self, wanted: &str) -> AffineError {
        let found = match self.peek() {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(n) => format!("`{n}`"),
            Tok::Float(x) => format!("`{x}`"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::End => "the end of the program".to_string(),
        };
        AffineError::new(format!("expected {wanted}, found {found}"), self.span())
    }

    fn ident(&mut self, what: &str) -> Result<(String, Span), AffineError> {
        match self.peek().clone() {
            Tok::Ident(s) => Ok((s, self.next().1)),
            _ => Err(self.unexpected(what)),
        }
    }

    fn declared(&self, name: &str) -> bool {
        self.params.iter().any(|p| p == name)
            || self.arrays.iter().any(|a| a.name == name)
            || self.counters.iter().any(|c| c == name)
    }

    /// A declaration (None), a loop, a condition, a block or an assignment.
    fn item(&mut self) -> Result<Option<Node>, AffineError> {
        match self.peek().clone() {
            Tok::Ident(word) if word == "int" || word == "long" => {
                self.next();
                loop {
                    let (name, span) = self.ident("a parameter's name")?;
                    if self.declared(&name) {
                        return Err(AffineError::new(
                            format!("`{name}` is declared twice"),
                            span,
                        ));
                    }
                    self.params.push(name);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect(";")?;
                Ok(None)
            }
            Tok::Ident(word) if VALUE_TYPES.contains(&word.as_str()) => {
                self.next();
                loop {
                    let (name, span) = self.ident("an array's name")?;
                    if self.declared(&name) {
                        return Err(AffineError::new(
                            format!("`{name}` is declared twice"),
                            span,
                        ));
                    }
                    let mut extents = Vec::new();
                    while self.eat("[") {
                        extents.push(self.affine()?);
                        self.expect("]")?;
                    }
                    self.arrays.push(ArrayDecl {
                        name,
                        extents,
                        span,
                    });
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect(";")?;
                Ok(None)
            }
            Tok::Ident(word) if word == "for" => self.for_loop().map(Some),
            Tok::Ident(word) if word == "if" => self.if_node().map(Some),
            Tok::Ident(word)
                if [
                    "while", "do", "break", "continue", "return", "goto", "switch",
                ]
                .contains(&word.as_str()) =>
            {
                Err(AffineError::new(
                    format!(
                        "`{word}` is outside the affine class: only `for` loops with affine \
                         bounds and `if` on affine conditions control the program"
                    ),
                    self.span(),
                ))
            }
            Tok::Punct("{") => {
                self.next();
                let mut body = Vec::new();
                while !self.eat("}") {
                    if self.peek() == &Tok::End {
                        return Err(self.unexpected("`}`"));
                    }
                    if let Some(node) = self.item()? {
                        body.push(node);
                    }
                }
                // A block is its statements, in order: it has no meaning of its own.
                Ok(Some(Node::If {
                    condition: Condition::always(),
                    then: body,
                    otherwise: Vec::new(),
                }))
            }
            Tok::Punct(";") => {
                self.next();
                Ok(None)
            }
            Tok::Ident(_) => self.assignment().map(Some),
            _ => Err(self.unexpected("a declaration, `for`, `if` or an assignment")),
        }
    }

    /// The body of a loop or a branch: one item or a block.
    fn body(&mut self) -> Result<Vec<Node>, AffineError> {
        Ok(match self.item()? {
            Some(Node::If {
                condition,
                then,
                otherwise,
            }) if condition == Condition::always() && otherwise.is_empty() => then,
            Some(node) => vec![node],
            None => Vec::new(),
        })
    }

    fn for_loop(&mut self) -> Result<Node, AffineError> {
        self.next();
        self.expect("(")?;
        if matches!(self.peek(), Tok::Ident(w) if w == "int" || w == "long") {
            self.next();
        }
        let (counter, span) = self.ident("the loop counter")?;
        if self.declared(&counter) {
            return Err(AffineError::new(
                format!("the loop counter `{counter}` is already declared"),
                span,
            ));
        }
        self.expect("=")?;
        let lower = self.affine()?;
        self.expect(";")?;
        let (name, name_span) = self.ident("the loop's condition on its counter")?;
        if name != counter {
            return Err(AffineError::new(
                format!("the loop's condition must bound its counter `{counter}`"),
                name_span,
            ));
        }
        let strict = if self.eat("<") {
            true
        } else if self.eat("<=") {
            false
        } else {
            return Err(self.unexpected(
                "`<` or `<=` (loops count upwards; a downward loop is outside this front end)",
            ));
        };
        let mut upper = self.affine()?;
        if strict {
            upper = upper
                .add_scaled(&Affine::constant(-1), 1)
                .ok_or_else(|| AffineError::new("the bound overflows", name_span))?;
        }
        self.expect(";")?;
        let step = self.increment(&counter)?;
        self.expect(")")?;
        self.counters.push(counter.clone());
        let body = self.body();
        self.counters.pop();
        Ok(Node::Loop {
            counter,
            lower,
            upper,
            step,
            body: body?,
        })
    }

    /// `i++`, `++i`, `i += c` or `i = i + c` with a positive constant `c`.
    fn increment(&mut self, counter: &str) -> Result<i64, AffineError> {
        let start = self.span();
        let wrong = |s: Span| {
            AffineError::new(
                format!("the loop must step its counter `{counter}` up by a positive constant"),
                s,
            )
        };
        if self.eat("++") {
            let (name, span) = self.ident("the loop counter")?;
            return if name == counter {
                Ok(1)
            } else {
                Err(wrong(span))
            };
        }
        let (name, span) = self.ident("the loop counter")?;
        if name != counter {
            return Err(wrong(span));
        }
        if self.eat("++") {
            return Ok(1);
        }
        let step = if self.eat("+=") {
            self.int()?
        } else if self.eat("=") {
            let (again, s) = self.ident("the loop counter")?;
            if again != counter {
                return Err(wrong(s));
            }
            self.expect("+")?;
            self.int()?
        } else {
            return Err(wrong(start));
        };
        if step <= 0 {
            return Err(wrong(start));
        }
        Ok(step)
    }

    fn int(&mut self) -> Result<i64, AffineError> {
        match self.peek().clone() {
            Tok::Int(n) => {
                self.next();
                Ok(n)
            }
            _ => Err(self.unexpected("an integer")),
        }
    }

    fn if_node(&mut self) -> Result<Node, AffineError> {
        self.next();
        self.expect("(")?;
        let condition = self.condition()?;
        self.expect(")")?;
        let then = self.body()?;
        let otherwise = if matches!(self.peek(), Tok::Ident(w) if w == "else") {
            self.next();
            self.body()?
        } else {
            Vec::new()
        };
        Ok(Node::If {
            condition,
            then,
            otherwise,
        })
    }

    /// `a || b`, `a && b`, `!(a)`, `(a)` and comparisons of affine expressions.
    fn condition(&mut self) -> Result<Condition, AffineError> {
        let mut out = self.conjunction()?;
        while self.eat("||") {
            out = out.or(self.conjunction()?);
        }
        Ok(out)
    }

    fn conjunction(&mut self) -> Result<Condition, AffineError> {
        let mut out = self.condition_atom()?;
        while self.eat("&&") {
            out = out.and(&self.condition_atom()?);
        }
        Ok(out)
    }

    fn condition_atom(&mut self) -> Result<Condition, AffineError> {
        let start = self.span();
        if self.eat("!") {
            self.expect("(")?;
            let inner = self.condition()?;
            let end = self.expect(")")?;
            return inner
                .negated()
                .ok_or_else(|| AffineError::new("the condition overflows", (start.0, end.1)));
        }
        // A parenthesis opens either a condition or an affine expression: try the
        // condition first and fall back.
        if self.is("(") {
            let save = self.pos;
            self.next();
            if let Ok(inner) = self.condition() {
                if self.eat(")") && !self.is_comparison() {
                    return Ok(inner);
                }
            }
            self.pos = save;
        }
        let lhs = self.affine()?;
        let (op, span) = match self.peek().clone() {
            Tok::Punct(op) if ["<", "<=", ">", ">=", "==", "!="].contains(&op) => {
                (op, self.next().1)
            }
            _ => return Err(self.unexpected("a comparison (`<`, `<=`, `>`, `>=`, `==`, `!=`)")),
        };
        let rhs = self.affine()?;
        let overflow = || AffineError::new("the condition overflows", span);
        let diff = |a: &Affine, b: &Affine, bias: i64| {
            a.add_scaled(b, -1)
                .and_then(|d| d.add_scaled(&Affine::constant(bias), 1))
        };
        let ge = |expr: Option<Affine>| -> Result<Condition, AffineError> {
            Ok(Condition(vec![vec![Constraint::at_least_zero(
                expr.ok_or_else(overflow)?,
            )]]))
        };
        match op {
            ">=" => ge(diff(&lhs, &rhs, 0)),
            ">" => ge(diff(&lhs, &rhs, -1)),
            "<=" => ge(diff(&rhs, &lhs, 0)),
            "<" => ge(diff(&rhs, &lhs, -1)),
            "==" => Ok(Condition(vec![vec![Constraint::zero(
                diff(&lhs, &rhs, 0).ok_or_else(overflow)?,
            )]])),
            _ => Ok(ge(diff(&lhs, &rhs, -1))?.or(ge(diff(&rhs, &lhs, -1))?)),
        }
    }

    fn is_comparison(&self) -> bool {
        ["<", "<=", ">", ">=", "==", "!=", "+", "-", "*"]
            .iter()
            .any(|p| self.is(p))
    }

    /// An affine expression over parameters, loop counters and integers.
    fn affine(&mut self) -> Result<Affine, AffineError> {
        let start = self.span();
        let mut out = if self.eat("-") {
            self.affine_term()?
                .scaled(-1)
                .ok_or_else(|| AffineError::new("overflow", start))?
        } else {
            self.affine_term()?
        };
        loop {
            let sign = if self.eat("+") {
                1
            } else if self.eat("-") {
                -1
            } else {
                return Ok(out);
            };
            let term = self.affine_term()?;
            out = out
                .add_scaled(&term, sign)
                .ok_or_else(|| AffineError::new("the expression overflows", start))?;
        }
    }

    fn affine_term(&mut self) -> Result<Affine, AffineError> {
        let start = self.span();
        let mut out = self.affine_factor()?;
        while self.eat("*") {
            let rhs = self.affine_factor()?;
            out = match (out.terms.is_empty(), rhs.terms.is_empty()) {
                (true, _) => rhs.scaled(out.constant),
                (_, true) => out.scaled(rhs.constant),
                _ => {
                    return Err(AffineError::new(
                        "a product of two variables is not affine",
                        (start.0, self.toks[self.pos - 1].1 .1),
                    ))
                }
            }
            .ok_or_else(|| AffineError::new("the expression overflows", start))?;
        }
        if self.is("/") || self.is("%") {
            return Err(AffineError::new(
                "division and remainder are outside the affine class here",
                self.span(),
            ));
        }
        Ok(out)
    }

    fn affine_factor(&mut self) -> Result<Affine, AffineError> {
        match self.peek().clone() {
            Tok::Int(n) => {
                self.next();
                Ok(Affine::constant(n))
            }
            Tok::Punct("(") => {
                self.next();
                let inner = self.affine()?;
                self.expect(")")?;
                Ok(inner)
            }
            Tok::Punct("-") => {
                let span = self.next().1;
                self.affine_factor()?
                    .scaled(-1)
                    .ok_or_else(|| AffineError::new("overflow", span))
            }
            Tok::Ident(name) => {
                let span = self.next().1;
                if self.is("[") || self.is("(") {
                    return Err(AffineError::new(
                        format!(
                            "`{name}[...]` or `{name}(...)` in a bound, index or condition is \
                             data-dependent: only loop counters, parameters and integers \
                             are affine"
                        ),
                        span,
                    ));
                }
                if self.params.contains(&name) || self.counters.contains(&name) {
                    Ok(Affine::var(&name))
                } else if self.arrays.iter().any(|a| a.name == name) {
                    Err(AffineError::new(
                        format!(
                            "the value `{name}` in a bound, index or condition is \
                             data-dependent: only loop counters, parameters and integers \
                             are affine"
                        ),
                        span,
                    ))
                } else {
                    Err(AffineError::new(
                        format!("`{name}` is not declared (declare a size as `int {name};`)"),
                        span,
                    ))
                }
            }
            Tok::Float(_) => Err(AffineError::new(
                "a floating-point number is not an integer bound or index",
                self.span(),
            )),
            _ => Err(self.unexpected("an affine expression")),
        }
    }

    /// An element of a declared array, its indices affine.
    fn access(&mut self) -> Result<Access, AffineError> {
        let (array, span) = self.ident("an array element")?;
        let Some(decl) = self.arrays.iter().find(|a| a.name == array) else {
            let hint = if self.params.contains(&array) || self.counters.contains(&array) {
                "an integer; only arrays and scalars declared `double` hold values"
            } else {
                "not declared"
            };
            return Err(AffineError::new(format!("`{array}` is {hint}"), span));
        };
        let rank = decl.extents.len();
        let mut index = Vec::new();
        while self.eat("[") {
            index.push(self.affine()?);
            self.expect("]")?;
        }
        let end = self.toks[self.pos - 1].1 .1;
        if index.len() != rank {
            return Err(AffineError::new(
                format!(
                    "`{array}` has {rank} dimension(s) and is indexed with {}",
                    index.len()
                ),
                (span.0, end),
            ));
        }
        Ok(Access {
            array,
            index,
            span: (span.0, end),
        })
    }

    fn assignment(&mut self) -> Result<Node, AffineError> {
        let start = self.span();
        let target = self.access()?;
        let op = match self.peek().clone() {
            Tok::Punct(op) if ["=", "+=", "-=", "*=", "/="].contains(&op) => {
                self.next();
                op
            }
            Tok::Punct("++") | Tok::Punct("--") => {
                return Err(AffineError::new(
                    "`++` and `--` on a value: write `+= 1`",
                    self.span(),
                ))
            }
            _ => return Err(self.unexpected("`=`, `+=`, `-=`, `*=` or `/=`")),
        };
        let rhs = self.value()?;
        let end = self.expect(";")?;
        let value = match op {
            "=" => rhs,
            _ => {
                let bin = match op {
                    "+=" => BinaryOp::Add,
                    "-=" => BinaryOp::Sub,
                    "*=" => BinaryOp::Mul,
                    _ => BinaryOp::Div,
                };
                Value::Binary(bin, Box::new(Value::Read(target.clone())), Box::new(rhs))
            }
        };
        Ok(Node::Assign {
            target,
            value,
            span: (start.0, end.1),
        })
    }

    fn value(&mut self) -> Result<Value, AffineError> {
        let mut out = self.value_term()?;
        loop {
            let op = if self.eat("+") {
                BinaryOp::Add
            } else if self.eat("-") {
                BinaryOp::Sub
            } else {
                return Ok(out);
            };
            out = Value::Binary(op, Box::new(out), Box::new(self.value_term()?));
        }
    }

    fn value_term(&mut self) -> Result<Value, AffineError> {
        let mut out = self.value_factor()?;
        loop {
            let op = if self.eat("*") {
                BinaryOp::Mul
            } else if self.eat("/") {
                BinaryOp::Div
            } else {
                return Ok(out);
            };
            out = Value::Binary(op, Box::new(out), Box::new(self.value_factor()?));
        }
    }

    fn value_factor(&mut self) -> Result<Value, AffineError> {
        match self.peek().clone() {
            Tok::Int(n) => {
                self.next();
                Ok(Value::Number(n as f64))
            }
            Tok::Float(x) => {
                self.next();
                Ok(Value::Number(x))
            }
            Tok::Punct("-") => {
                self.next();
                Ok(Value::Neg(Box::new(self.value_factor()?)))
            }
            Tok::Punct("+") => {
                self.next();
                self.value_factor()
            }
            Tok::Punct("(") => {
                self.next();
                let inner = self.value()?;
                self.expect(")")?;
                Ok(inner)
            }
            Tok::Ident(name) if self.toks[self.pos + 1].0 == Tok::Punct("(") => {
                let span = self.next().1;
                let Some(wanted) = function_arity(&name) else {
                    return Err(AffineError::new(
                        format!(
                            "`{name}` is not a known function (known: {})",
                            known_functions()
                        ),
                        span,
                    ));
                };
                self.next();
                let mut args = vec![self.value()?];
                while self.eat(",") {
                    args.push(self.value()?);
                }
                self.expect(")")?;
                if args.len() != wanted {
                    return Err(AffineError::new(
                        format!("`{name}` takes {wanted} argument(s), not {}", args.len()),
                        span,
                    ));
                }
                Ok(Value::Call(name, args))
            }
            Tok::Ident(name) if self.params.contains(&name) || self.counters.contains(&name) => {
                Err(AffineError::new(
                    format!(
                        "the integer `{name}` used as a value: values come from arrays, \
                         scalars and numbers"
                    ),
                    self.span(),
                ))
            }
            Tok::Ident(_) => Ok(Value::Read(self.access()?)),
            _ => Err(self.unexpected("a value")),
        }
    }
}

#[cfg(test)]
mod tests;
