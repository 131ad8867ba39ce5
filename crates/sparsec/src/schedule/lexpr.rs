//! The expression form used during lowering: accesses become *occurrences* (one per use
//! of a tensor, each with its own iterators), reductions that distribute over the whole
//! right-hand side are dropped in favour of accumulating loops, and the rest stay as
//! explicit sums that lowering computes into scalar temporaries.

use crate::ir::{Scratch, Var};
use crate::notation::ast::Op;
use crate::notation::cin::{CExpr, VarId};

/// Right-hand side during lowering.
#[derive(Clone, Debug, PartialEq)]
pub enum LExpr {
    /// Value of occurrence `n` at its current position.
    Access(usize),
    Literal(f64),
    Neg(Box<LExpr>),
    Binary(Op, Box<LExpr>, Box<LExpr>),
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

/// `workspace(vars) = sum over private of body`, computed where the loop of the first
/// private variable starts and read by the rest of the expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Precompute {
    pub workspace: String,
    /// The workspace's dimensions, outermost first.
    pub vars: Vec<VarId>,
    /// Variables only the subexpression uses: its producer's reductions.
    pub private: Vec<VarId>,
    pub body: LExpr,
}

impl LExpr {
    /// Convert from concrete index notation. Accesses are numbered left to right;
    /// `linear[n]` records whether access `n` sits in linear position (a factor of the
    /// whole right-hand side), where a sum over an extra storage coordinate may be hoisted.
    /// Sums whose path to the root passes only through `*`, unary minus, numerators and
    /// other such sums are *hoistable*: they become plain loops accumulating into the
    /// destination and vanish from the expression.
    pub fn from_cin(
        expr: &CExpr,
        hoistable_position: bool,
        linear: &mut Vec<bool>,
        hoisted: &mut Vec<VarId>,
    ) -> LExpr {
        match expr {
            CExpr::Access(_) => {
                linear.push(hoistable_position);
                LExpr::Access(linear.len() - 1)
            }
            CExpr::Literal(v) => LExpr::Literal(*v),
            CExpr::Neg(a) => LExpr::Neg(Box::new(LExpr::from_cin(
                a,
                hoistable_position,
                linear,
                hoisted,
            ))),
            CExpr::Binary(op, a, b) => {
                let (left_linear, right_linear) = match op {
                    Op::Mul => (hoistable_position, hoistable_position),
                    Op::Div => (hoistable_position, false),
                    Op::Add | Op::Sub => (false, false),
                };
                LExpr::Binary(
                    *op,
                    Box::new(LExpr::from_cin(a, left_linear, linear, hoisted)),
                    Box::new(LExpr::from_cin(b, right_linear, linear, hoisted)),
                )
            }
            CExpr::Sum(v, body) => {
                if hoistable_position {
                    hoisted.push(*v);
                    LExpr::from_cin(body, true, linear, hoisted)
                } else {
                    // Inside a temporary, sums in linear position accumulate into it.
                    let mut inner = Vec::new();
                    let body = LExpr::from_cin(body, true, linear, &mut inner);
                    LExpr::Sum(*v, inner, Box::new(body))
                }
            }
        }
    }

    /// Replace every occurrence in `absent` by `Zero` and fold the zeros away.
    pub fn without(&self, absent: &dyn Fn(usize) -> bool) -> LExpr {
        match self {
            LExpr::Access(o) if absent(*o) => LExpr::Zero,
            LExpr::Neg(a) => match a.without(absent) {
                LExpr::Zero => LExpr::Zero,
                a => LExpr::Neg(Box::new(a)),
            },
            LExpr::Binary(op, a, b) => {
                let (a, b) = (a.without(absent), b.without(absent));
                match (op, &a, &b) {
                    (Op::Mul, LExpr::Zero, _) | (Op::Mul, _, LExpr::Zero) => LExpr::Zero,
                    (Op::Div, LExpr::Zero, _) => LExpr::Zero,
                    // A missing denominator is a real zero: keep IEEE semantics (x/0).
                    (Op::Div, _, LExpr::Zero) => {
                        LExpr::Binary(Op::Div, Box::new(a), Box::new(LExpr::Literal(0.0)))
                    }
                    (Op::Add, LExpr::Zero, _) => b,
                    (Op::Add | Op::Sub, _, LExpr::Zero) => a,
                    (Op::Sub, LExpr::Zero, _) => LExpr::Neg(Box::new(b)),
                    _ => LExpr::Binary(*op, Box::new(a), Box::new(b)),
                }
            }
            LExpr::Sum(v, inner, a) => match a.without(absent) {
                LExpr::Zero => LExpr::Zero,
                a => LExpr::Sum(*v, inner.clone(), Box::new(a)),
            },
            LExpr::Precomputed(p) => match p.body.without(absent) {
                LExpr::Zero => LExpr::Zero,
                body => LExpr::Precomputed(Box::new(Precompute {
                    body,
                    ..(**p).clone()
                })),
            },
            other => other.clone(),
        }
    }

    /// The outermost precomputed subexpression that reduces over `var`.
    pub fn find_precompute(&self, var: VarId) -> Option<&Precompute> {
        match self {
            LExpr::Precomputed(p) if p.private.contains(&var) => Some(p),
            LExpr::Precomputed(p) => p.body.find_precompute(var),
            LExpr::Sum(_, _, a) | LExpr::Neg(a) => a.find_precompute(var),
            LExpr::Binary(_, a, b) => a.find_precompute(var).or_else(|| b.find_precompute(var)),
            _ => None,
        }
    }

    /// Replace the precomputed subexpression of `workspace` by a read of the array
    /// `array` at its variables.
    pub fn read_workspace(&self, workspace: &str, array: Scratch) -> LExpr {
        let read = |e: &LExpr| e.read_workspace(workspace, array);
        match self {
            LExpr::Precomputed(p) if p.workspace == workspace => {
                LExpr::WorkspaceRead(array, p.vars.clone())
            }
            LExpr::Precomputed(p) => LExpr::Precomputed(Box::new(Precompute {
                body: read(&p.body),
                ..(**p).clone()
            })),
            LExpr::Sum(v, inner, a) => LExpr::Sum(*v, inner.clone(), Box::new(read(a))),
            LExpr::Neg(a) => LExpr::Neg(Box::new(read(a))),
            LExpr::Binary(op, a, b) => LExpr::Binary(*op, Box::new(read(a)), Box::new(read(b))),
            other => other.clone(),
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
            _ => {}
        }
    }

    /// Find a non-hoisted sum over `var`.
    pub fn find_sum(&self, var: VarId) -> Option<&LExpr> {
        match self {
            LExpr::Sum(v, _, _) if *v == var => Some(self),
            LExpr::Sum(_, _, a) | LExpr::Neg(a) => a.find_sum(var),
            LExpr::Precomputed(p) => p.body.find_sum(var),
            LExpr::Binary(_, a, b) => a.find_sum(var).or_else(|| b.find_sum(var)),
            _ => None,
        }
    }

    /// Replace the sum over `var` by a temporary.
    pub fn replace_sum(&self, var: VarId, temp: Var) -> LExpr {
        match self {
            LExpr::Sum(v, _, _) if *v == var => LExpr::Temp(temp),
            LExpr::Sum(v, inner, a) => {
                LExpr::Sum(*v, inner.clone(), Box::new(a.replace_sum(var, temp)))
            }
            LExpr::Neg(a) => LExpr::Neg(Box::new(a.replace_sum(var, temp))),
            LExpr::Precomputed(p) => LExpr::Precomputed(Box::new(Precompute {
                body: p.body.replace_sum(var, temp),
                ..(**p).clone()
            })),
            LExpr::Binary(op, a, b) => LExpr::Binary(
                *op,
                Box::new(a.replace_sum(var, temp)),
                Box::new(b.replace_sum(var, temp)),
            ),
            other => other.clone(),
        }
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
        _ => {}
    }
}
