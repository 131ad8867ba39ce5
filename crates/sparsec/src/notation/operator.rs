//! User-defined operators: `let name(a, b) = body [identity v];` before a statement.
//!
//! ```text
//! let smax(a, b) = where(a > b, a, b) identity -inf;
//! let clip(x) = max(x, 0);
//! y(i) = A(i,j) * x(j) over (smax, +)
//! ```
//!
//! A body is an expression of index notation over the operator's parameters only: numbers,
//! `+ - * /`, comparisons, the math functions and `where`, and operators defined before
//! it. Called element-wise (`clip(A(i,j))`) an operator is inlined, so its sparsity is
//! derived from its body as for any expression: `clip` keeps `A`'s pattern, an operator
//! whose value at zero is not zero makes its output dense. Named in an `over` clause, a
//! binary operator is the semiring's ⊗, or its ⊕ when it declares the identity a reduction
//! starts from; ⊕ must then be associative and commutative (reductions are reordered,
//! split over threads), which is checked on sample values when the clause is read, so a
//! law that fails is an error with a counterexample rather than a wrong answer. Every
//! backend compiles the body as it compiles any expression.

use std::fmt;
use std::hash::{Hash, Hasher};

use super::ast::{Expr, ExprKind, MathFn, Span};
use crate::ir;

/// A user-defined operator.
#[derive(Clone, Debug)]
pub struct Operator {
    pub name: String,
    pub params: Vec<String>,
    /// Over the parameters, as bare accesses (`a`).
    pub body: Expr,
    /// The value a reduction with it starts from, when declared.
    pub identity: Option<f64>,
    /// The definition as written, from `let` to its end.
    pub text: String,
    pub span: Span,
}

impl PartialEq for Operator {
    fn eq(&self, other: &Operator) -> bool {
        self.text == other.text
    }
}

impl Eq for Operator {}

impl Hash for Operator {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state)
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A law a reduction operator breaks, with the values that show it.
#[derive(Clone, Debug, PartialEq)]
pub struct BrokenLaw {
    /// What it is not: "associative", "commutative", "neutral" (its identity).
    pub law: &'static str,
    pub example: String,
}

impl fmt::Display for BrokenLaw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.law {
            "neutral" => write!(f, "its identity is not neutral: {}", self.example),
            law => write!(f, "it is not {law}: {}", self.example),
        }
    }
}

/// Values the laws are checked at: signs, zero, fractions, magnitudes.
const SAMPLES: [f64; 8] = [-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 5.0, 1e3];

impl Operator {
    /// Its value at `args` (one per parameter), as the generated code computes it.
    pub fn eval(&self, args: &[f64]) -> f64 {
        eval(&self.body, &self.params, args)
    }

    /// Its body with the parameters replaced by `args`, in the IR.
    pub fn instantiate(&self, args: &[ir::Expr]) -> ir::Expr {
        instantiate(&self.body, &self.params, args)
    }

    /// Its body with the parameters replaced by `args`, as index notation spanning `span`
    /// (a call's text): how an element-wise call is inlined.
    pub fn inline(&self, args: &[Expr], span: Span) -> Expr {
        let mut body = substitute(&self.body, &self.params, args);
        body.span = span;
        body
    }

    /// Checks that it can reduce: associative and commutative, with its declared identity
    /// neutral on both sides, at every combination of sample values.
    pub fn check_monoid(&self, identity: f64) -> Result<(), BrokenLaw> {
        let f = |x: f64, y: f64| self.eval(&[x, y]);
        let show = |args: &[f64]| {
            args.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for x in SAMPLES {
            if !same(f(identity, x), x) || !same(f(x, identity), x) {
                return Err(BrokenLaw {
                    law: "neutral",
                    example: format!(
                        "{0}({identity}, {x}) = {1} and {0}({x}, {identity}) = {2}, not {x}",
                        self.name,
                        f(identity, x),
                        f(x, identity)
                    ),
                });
            }
            for y in SAMPLES {
                if !same(f(x, y), f(y, x)) {
                    return Err(BrokenLaw {
                        law: "commutative",
                        example: format!(
                            "{0}({1}) = {2} but {0}({3}) = {4}",
                            self.name,
                            show(&[x, y]),
                            f(x, y),
                            show(&[y, x]),
                            f(y, x)
                        ),
                    });
                }
                for z in SAMPLES {
                    let left = f(f(x, y), z);
                    let right = f(x, f(y, z));
                    if !same(left, right) {
                        return Err(BrokenLaw {
                            law: "associative",
                            example: format!(
                                "{0}({0}({x}, {y}), {z}) = {left} but {0}({x}, {0}({y}, {z})) = \
                                 {right}",
                                self.name
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// Equal, or both NaN, or within rounding of each other (sums of samples are exact; a
/// product's rounding is not a broken law).
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

fn param(e: &Expr, params: &[String]) -> Option<usize> {
    match &e.kind {
        ExprKind::Access(a) if a.indices.is_empty() => params.iter().position(|p| *p == a.tensor),
        _ => None,
    }
}

fn eval(e: &Expr, params: &[String], args: &[f64]) -> f64 {
    match &e.kind {
        ExprKind::Access(_) => args[param(e, params).expect("a body uses only its parameters")],
        ExprKind::Literal(x) => *x,
        ExprKind::Neg(x) => -eval(x, params, args),
        ExprKind::Binary(op, l, r) => op.apply(eval(l, params, args), eval(r, params, args)),
        ExprKind::Math(f, xs) => {
            let xs: Vec<f64> = xs.iter().map(|x| eval(x, params, args)).collect();
            f.eval(&xs)
        }
    }
}

fn instantiate(e: &Expr, params: &[String], args: &[ir::Expr]) -> ir::Expr {
    match &e.kind {
        ExprKind::Access(_) => {
            args[param(e, params).expect("a body uses only its parameters")].clone()
        }
        ExprKind::Literal(x) => ir::Expr::Float(*x),
        ExprKind::Neg(x) => ir::Expr::Neg(Box::new(instantiate(x, params, args))),
        ExprKind::Binary(op, l, r) => ir::Expr::bin(
            op.bin_op(),
            instantiate(l, params, args),
            instantiate(r, params, args),
        ),
        ExprKind::Math(f, xs) => ir::Expr::Math(
            *f,
            xs.iter().map(|x| instantiate(x, params, args)).collect(),
        ),
    }
}

fn substitute(e: &Expr, params: &[String], args: &[Expr]) -> Expr {
    let kind = match &e.kind {
        ExprKind::Access(_) => {
            return args[param(e, params).expect("a body uses only its parameters")].clone()
        }
        ExprKind::Literal(x) => ExprKind::Literal(*x),
        ExprKind::Neg(x) => ExprKind::Neg(Box::new(substitute(x, params, args))),
        ExprKind::Binary(op, l, r) => ExprKind::Binary(
            *op,
            Box::new(substitute(l, params, args)),
            Box::new(substitute(r, params, args)),
        ),
        ExprKind::Math(f, xs) => {
            ExprKind::Math(*f, xs.iter().map(|x| substitute(x, params, args)).collect())
        }
    };
    Expr { kind, span: e.span }
}

/// The first part of `body` an operator may not hold, with what it is: an access that is
/// not a parameter (a tensor, or a parameter given indices), or `pattern(..)`, which asks
/// whether a tensor has an entry and means nothing of a value.
pub(super) fn foreign_part(body: &Expr, params: &[String]) -> Option<(Span, String)> {
    match &body.kind {
        ExprKind::Access(a) => {
            if param(body, params).is_some() {
                None
            } else if params.contains(&a.tensor) {
                Some((a.span, format!("parameter `{}` with indices", a.tensor)))
            } else {
                Some((a.span, format!("`{}`, which is not a parameter", a.tensor)))
            }
        }
        ExprKind::Literal(_) => None,
        ExprKind::Neg(x) => foreign_part(x, params),
        ExprKind::Binary(_, l, r) => foreign_part(l, params).or_else(|| foreign_part(r, params)),
        ExprKind::Math(MathFn::Pattern, _) => Some((body.span, "`pattern(..)`".into())),
        ExprKind::Math(_, xs) => xs.iter().find_map(|x| foreign_part(x, params)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notation::parse;

    fn operator(text: &str) -> Operator {
        let statement = format!("{text}; y = a over ({}, *)", name_of(text));
        let assignment = parse(&statement).expect("parses");
        let over = assignment.over.expect("has a clause");
        match over.semiring.add {
            crate::notation::semiring::Monoid::User(op) => (*op).clone(),
            other => panic!("not a user operator: {other:?}"),
        }
    }

    fn name_of(text: &str) -> &str {
        text["let ".len()..].split('(').next().unwrap().trim()
    }

    #[test]
    fn evaluates_and_checks_laws() {
        let smax = operator("let smax(a, b) = where(a > b, a, b) identity -inf");
        assert_eq!(smax.eval(&[2.0, 5.0]), 5.0);
        assert_eq!(smax.identity, Some(f64::NEG_INFINITY));
        let broken = smax.check_monoid(0.0).unwrap_err();
        assert_eq!(broken.law, "neutral", "0 is not max's identity");
        let err = parse("let minus(a, b) = a - b identity 0; y = a over (minus, *)").unwrap_err();
        assert!(err.to_string().contains("minus"), "{err}");
    }
}
