//! The expression form used during lowering: accesses become *occurrences* (one per use
//! of a tensor, each with its own iterators), reductions that distribute over the whole
//! right-hand side are dropped in favour of accumulating loops, and the rest stay as
//! explicit sums that lowering computes into scalar temporaries. The scheduler builds and
//! transforms it (`precompute`); the rewrites only lowering performs live with lowering
//! (`lower/rewrite.rs`).

use crate::ir::{Scratch, Var};
use crate::notation::ast::{MathFn, Op};
use crate::notation::cin::{CExpr, VarId};

/// Right-hand side during lowering.
#[derive(Clone, Debug, PartialEq)]
pub enum LExpr {
    /// Value of occurrence `n` at its current position.
    Access(usize),
    Literal(f64),
    Neg(Box<LExpr>),
    Binary(Op, Box<LExpr>, Box<LExpr>),
    /// A math function applied element-wise.
    Math(MathFn, Vec<LExpr>),
    /// A reduction that cannot be hoisted to the output (it sits under `+`, `-` or a
    /// denominator): lowered into a scalar temporary. The second field lists the sums
    /// nested in linear position inside it, which accumulate into the same temporary.
    Sum(VarId, Vec<VarId>, Box<LExpr>),
    /// A scalar temporary that already holds a reduced subexpression.
    Temp(Var),
    /// A subexpression computed into a dense workspace (`precompute`).
    Precomputed(Box<Precompute>),
    /// The workspace entry at the current values of its variables.
    WorkspaceRead(Scratch, Vec<VarId>),
    /// Structurally zero (an operand that has no entry in the current case).
    Zero,
}

/// `workspace(vars) = sum over private of body`, computed where the first loop derived
/// from `at` starts and read by the rest of the expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Precompute {
    pub workspace: String,
    /// The workspace's dimensions, outermost first (statement variables or derived ones).
    pub vars: Vec<VarId>,
    /// Variables only the subexpression uses: its producer's reductions.
    pub private: Vec<VarId>,
    /// The loop where the producer starts: one of the workspace's or a private one.
    pub at: VarId,
    pub body: LExpr,
}

impl LExpr {
    /// Convert from concrete index notation. Accesses are numbered left to right
    /// (`next_access` counts them). Sums whose path to the root passes only through `*`, unary minus, numerators and
    /// other such sums are *hoistable*: they become plain loops accumulating into the
    /// destination and vanish from the expression.
    pub fn from_cin(
        expr: &CExpr,
        hoistable_position: bool,
        next_access: &mut usize,
        hoisted: &mut Vec<VarId>,
    ) -> LExpr {
        match expr {
            CExpr::Access(_) => {
                *next_access += 1;
                LExpr::Access(*next_access - 1)
            }
            CExpr::Literal(v) => LExpr::Literal(*v),
            CExpr::Neg(a) => LExpr::Neg(Box::new(LExpr::from_cin(
                a,
                hoistable_position,
                next_access,
                hoisted,
            ))),
            // A sum inside a function is no factor of the result: it becomes a temporary.
            CExpr::Math(f, args) => LExpr::Math(
                *f,
                args.iter()
                    .map(|a| LExpr::from_cin(a, false, next_access, hoisted))
                    .collect(),
            ),
            CExpr::Binary(op, a, b) => {
                let (left_linear, right_linear) = match op {
                    Op::Mul => (hoistable_position, hoistable_position),
                    Op::Div => (hoistable_position, false),
                    Op::Add | Op::Sub => (false, false),
                };
                LExpr::Binary(
                    *op,
                    Box::new(LExpr::from_cin(a, left_linear, next_access, hoisted)),
                    Box::new(LExpr::from_cin(b, right_linear, next_access, hoisted)),
                )
            }
            CExpr::Sum(v, body) => {
                if hoistable_position {
                    hoisted.push(*v);
                    LExpr::from_cin(body, true, next_access, hoisted)
                } else {
                    // Inside a temporary, sums in linear position accumulate into it.
                    let mut inner = Vec::new();
                    let body = LExpr::from_cin(body, true, next_access, &mut inner);
                    LExpr::Sum(*v, inner, Box::new(body))
                }
            }
        }
    }

    /// Occurrences in the expression, left to right.
    pub fn occurrences(&self, out: &mut Vec<usize>) {
        match self {
            LExpr::Access(o) => out.push(*o),
            LExpr::Precomputed(p) => p.body.occurrences(out),
            LExpr::Sum(_, _, a) | LExpr::Neg(a) => a.occurrences(out),
            LExpr::Binary(_, a, b) => {
                a.occurrences(out);
                b.occurrences(out);
            }
            LExpr::Math(_, args) => args.iter().for_each(|a| a.occurrences(out)),
            _ => {}
        }
    }
}

/// The precomputed workspaces in `expr`, each before the ones nested in its body.
pub fn precomputes<'e>(expr: &'e LExpr, out: &mut Vec<&'e Precompute>) {
    match expr {
        LExpr::Precomputed(p) => {
            out.push(p);
            precomputes(&p.body, out);
        }
        LExpr::Neg(a) | LExpr::Sum(_, _, a) => precomputes(a, out),
        LExpr::Binary(_, a, b) => {
            precomputes(a, out);
            precomputes(b, out);
        }
        LExpr::Math(_, args) => args.iter().for_each(|a| precomputes(a, out)),
        _ => {}
    }
}

/// Variables bound by the non-hoisted sums in `expr` (a sum's own variable and the
/// sums nested in linear position inside it).
pub fn summed_vars(sum: &LExpr, out: &mut Vec<VarId>) {
    match sum {
        LExpr::Sum(v, inner, body) => {
            out.push(*v);
            out.extend_from_slice(inner);
            summed_vars(body, out);
        }
        LExpr::Neg(a) => summed_vars(a, out),
        LExpr::Precomputed(p) => summed_vars(&p.body, out),
        LExpr::Binary(_, a, b) => {
            summed_vars(a, out);
            summed_vars(b, out);
        }
        LExpr::Math(_, args) => args.iter().for_each(|a| summed_vars(a, out)),
        _ => {}
    }
}

/// Every non-hoisted sum node, outermost first.
pub fn sums(expr: &LExpr, out: &mut Vec<LExpr>) {
    match expr {
        LExpr::Sum(_, _, body) => {
            out.push(expr.clone());
            sums(body, out);
        }
        LExpr::Neg(a) => sums(a, out),
        LExpr::Precomputed(p) => sums(&p.body, out),
        LExpr::Binary(_, a, b) => {
            sums(a, out);
            sums(b, out);
        }
        LExpr::Math(_, args) => args.iter().for_each(|a| sums(a, out)),
        _ => {}
    }
}
