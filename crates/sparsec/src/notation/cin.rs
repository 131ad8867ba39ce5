//! Concrete index notation: the checked, resolved form that lowering consumes.
//!
//! Invariants (established by `bind`, relied on by `lower` and `reference`):
//! - `tensors[0]` is the output; inputs follow in order of first appearance. A tensor used
//!   twice on the right-hand side appears once in `tensors` and twice as an access.
//! - Every index variable has a known size, and all accesses agree with it.
//! - The output's indices are distinct variables.
//! - Every variable that is not on the left-hand side occurs under exactly one `Sum` of it,
//!   which encloses all of its uses; variables on the left-hand side are never summed.

use crate::format::Format;
use crate::notation::ast::{MathFn, Op};
use crate::notation::semiring::Semiring;

/// Id of a tensor: index into [`Statement::tensors`].
pub type TensorId = usize;
/// Id of an index variable: index into [`Statement::vars`].
pub type VarId = usize;

/// A tensor operand or result as the statement sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorVar {
    pub name: String,
    pub dims: Vec<usize>,
    pub format: Format,
    /// The value of its unstored components: an input's as declared, the output's 0 (the
    /// value it gets is [`Statement::output_fill`]).
    pub fill: f64,
}

/// An index variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexVar {
    pub name: String,
    pub size: usize,
}

/// `tensor(indices...)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    pub tensor: TensorId,
    pub indices: Vec<VarId>,
}

/// Right-hand side in concrete index notation.
#[derive(Clone, Debug, PartialEq)]
pub enum CExpr {
    Access(Access),
    Literal(f64),
    Neg(Box<CExpr>),
    Binary(Op, Box<CExpr>, Box<CExpr>),
    /// A math function applied element-wise.
    Math(MathFn, Vec<CExpr>),
    /// Sum over all values of a variable.
    Sum(VarId, Box<CExpr>),
}

/// A checked assignment `tensors[0](lhs) (=|+=) rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub tensors: Vec<TensorVar>,
    pub vars: Vec<IndexVar>,
    pub lhs: Vec<VarId>,
    pub accumulate: bool,
    pub rhs: CExpr,
    /// What `+`, `*` and the reductions of `rhs` mean (`(+, *)` unless an `over` clause
    /// says otherwise): see [`crate::notation::semiring`].
    pub semiring: Semiring,
}
