//! Syntax tree of index notation, with byte spans into the source text.

pub use crate::ir::MathFn;
pub use crate::notation::semiring::Semiring;

/// The function index notation calls `name` (`abs`, `max` and `min` beside C's `fabs`,
/// `fmax` and `fmin`, `where(c, x, y)`, the C names otherwise), if any: such a name
/// followed by `(` is a call, not an access.
pub fn math_function(name: &str) -> Option<MathFn> {
    match name {
        "abs" => Some(MathFn::Abs),
        "max" => Some(MathFn::Max),
        "min" => Some(MathFn::Min),
        "where" => Some(MathFn::Where),
        "pattern" => Some(MathFn::Pattern),
        "bool" => Some(MathFn::ToBool),
        "i32" => Some(MathFn::ToI32),
        "i64" => Some(MathFn::ToI64),
        "f32" => Some(MathFn::ToF32),
        "f64" => Some(MathFn::ToF64),
        _ => MathFn::from_c_name(name),
    }
}

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

    /// `x op y` in IEEE arithmetic.
    pub fn apply(self, x: f64, y: f64) -> f64 {
        match self {
            Op::Add => x + y,
            Op::Sub => x - y,
            Op::Mul => x * y,
            Op::Div => x / y,
        }
    }

    /// The IR's operator.
    pub fn bin_op(self) -> crate::ir::BinOp {
        use crate::ir::BinOp;
        match self {
            Op::Add => BinOp::Add,
            Op::Sub => BinOp::Sub,
            Op::Mul => BinOp::Mul,
            Op::Div => BinOp::Div,
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
    /// A math function applied element-wise (`sqrt(A(i,j))`, `pow(x(i), 2)`).
    Math(MathFn, Vec<Expr>),
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    /// Every tensor access of the expression, left to right.
    pub fn accesses(&self) -> Vec<&Access> {
        fn walk<'e>(e: &'e Expr, out: &mut Vec<&'e Access>) {
            match &e.kind {
                ExprKind::Access(a) => out.push(a),
                ExprKind::Literal(_) => {}
                ExprKind::Neg(x) => walk(x, out),
                ExprKind::Binary(_, l, r) => {
                    walk(l, out);
                    walk(r, out);
                }
                ExprKind::Math(_, args) => args.iter().for_each(|a| walk(a, out)),
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }
}

/// The mask of `C<M>(i,j) = ...`, as GraphBLAS masks: the output is computed only where
/// the mask holds (a value that is not zero; with `pattern(M)`, any entry; with `!`,
/// where it does not).
#[derive(Clone, Debug, PartialEq)]
pub struct Mask {
    pub tensor: String,
    pub structural: bool,
    pub complement: bool,
    pub span: Span,
}

/// The `over (⊕, ⊗)` clause of a statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Over {
    pub semiring: Semiring,
    pub span: Span,
}

/// `lhs = rhs` or `lhs += rhs`, optionally masked (`C<M>(i,j) = rhs`) and over a semiring
/// (`... over (min, +)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub lhs: Access,
    /// The mask, already applied to `rhs`: the right-hand side is multiplied by
    /// `M(lhs) != 0` (or `pattern(M(lhs))`, or one minus either), so that the mask joins
    /// the iteration as a factor and no product is computed outside it.
    pub mask: Option<Mask>,
    /// True for `+=` (add into the existing output).
    pub accumulate: bool,
    pub rhs: Expr,
    /// The semiring the right-hand side is computed in, when not `(+, *)`.
    pub over: Option<Over>,
    /// The source text the spans point into.
    pub source: String,
}
