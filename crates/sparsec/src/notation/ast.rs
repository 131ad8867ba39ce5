//! Syntax tree of index notation, with byte spans into the source text.

/// A byte range `[start, end)` of the source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> miette::SourceSpan {
        (s.start, s.end.saturating_sub(s.start)).into()
    }
}

/// `T(i, j)`, or a bare name `a` / `a()` for an order-0 tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub tensor: String,
    pub tensor_span: Span,
    pub indices: Vec<String>,
    pub index_spans: Vec<Span>,
    /// The whole access.
    pub span: Span,
}

/// Arithmetic operators of index notation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

impl Op {
    /// The operator's symbol.
    pub fn symbol(self) -> char {
        match self {
            Op::Add => '+',
            Op::Sub => '-',
            Op::Mul => '*',
            Op::Div => '/',
        }
    }
}

/// Right-hand-side expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Access(Access),
    /// A scalar constant such as `2` or `0.5e-3`.
    Literal(f64),
    Neg(Box<Expr>),
    Binary(Op, Box<Expr>, Box<Expr>),
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// `lhs = rhs` or `lhs += rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub lhs: Access,
    /// True for `+=` (add into the existing output).
    pub accumulate: bool,
    pub rhs: Expr,
    /// The source text the spans point into.
    pub source: String,
}
