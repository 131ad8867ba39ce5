//! Lowering over a semiring other than `(+, *)` ([`crate::notation::semiring`]): the
//! lattices are the same (`*` intersects, `+` unions, as the semiring's absent entries
//! require), only the values differ. Reductions start from ⊕'s identity and combine with
//! ⊕, products combine with ⊗, a present term of a sum whose other term is absent is
//! taken alone, and a mask's condition selects rather than multiplies.

use super::store::either_present;
use super::{LExpr, LowerError, Lowerer, Scope};
use crate::ir::{BinOp, Expr, MathFn, ReductionOperator, Stmt, Type, ValueType};
use crate::notation::ast::Op;
use crate::notation::semiring::{Combine, Monoid};

impl Lowerer<'_> {
    /// True when the statement computes over a semiring other than `(+, *)`.
    pub(super) fn over_semiring(&self) -> bool {
        !self.stmt.semiring.is_arithmetic()
    }

    /// True when the statement's reductions are sums (`(+, *)`, `(+, pair)`, ...): they
    /// start from 0 and add up, so workspaces, accumulators, atomics and per-thread copies
    /// work as for plain sums.
    pub(super) fn reduces_by_sum(&self) -> bool {
        self.stmt.semiring.add == Monoid::Plus
    }

    /// The value a reduction starts from: ⊕'s identity (0 for sums).
    pub(super) fn reduction_identity(&self) -> Expr {
        Expr::Float(self.stmt.semiring.add.identity())
    }

    /// `acc ⊕ x`.
    pub(super) fn reduce(&self, acc: Expr, x: Expr) -> Expr {
        monoid(&self.stmt.semiring.add, acc, x)
    }

    /// How parallel copies of the statement's reductions combine, unless they are summed.
    pub(super) fn reduction_operator(&self) -> Option<ReductionOperator> {
        if self.reduces_by_sum() {
            return None;
        }
        let mut tables = self.tables.borrow_mut();
        let acc = tables
            .function
            .fresh_var("acc", Type::Value(ValueType::F64));
        let term = tables
            .function
            .fresh_var("term", Type::Value(ValueType::F64));
        let (identity, acc_value, term_value) =
            (self.reduction_identity(), Expr::Var(acc), Expr::Var(term));
        // `any` keeps a copy's term unless it is the identity: a copy that reduced nothing
        // must not replace one that reduced something.
        let combined = if self.stmt.semiring.add == Monoid::Any {
            Expr::Select(
                Box::new(Expr::bin(BinOp::Ne, term_value.clone(), identity.clone())),
                Box::new(term_value),
                Box::new(acc_value),
            )
        } else {
            self.reduce(acc_value, term_value)
        };
        Some(ReductionOperator {
            identity: self.stmt.semiring.add.identity(),
            acc,
            term,
            combined,
        })
    }

    /// An error naming what a construct would need under the statement's semiring.
    pub(super) fn not_over_semiring(&self, what: &str) -> LowerError {
        LowerError(format!(
            "{what} is generated for sums only, and this statement reduces with `{}` \
             (over the semiring {}); choose another schedule",
            self.stmt.semiring.add.spelling(),
            self.stmt.semiring
        ))
    }

    /// [`Self::guarded_value`] over the statement's semiring: the value and where it is
    /// present.
    pub(super) fn semiring_value(
        &self,
        expr: &LExpr,
        scope: &Scope,
        prelude: &mut Vec<Stmt>,
    ) -> Result<(Expr, Option<Expr>), LowerError> {
        let semiring = &self.stmt.semiring;
        Ok(match expr {
            LExpr::Binary(Op::Mul, a, b) => {
                if let Some((condition, x)) = gate(a, b) {
                    let (holds_value, condition_holds) =
                        self.guarded_value(condition, scope, prelude)?;
                    let (x, x_holds) = self.semiring_value(x, scope, prelude)?;
                    let selected = Expr::bin(BinOp::Ne, holds_value, Expr::Float(0.0));
                    let value = Expr::Select(
                        Box::new(selected.clone()),
                        Box::new(x),
                        Box::new(self.reduction_identity()),
                    );
                    // Where the mask does not select, nothing is present: a sparse output
                    // stores no entry there.
                    let present = both(both(condition_holds, Some(selected)), x_holds);
                    (value, present)
                } else {
                    let (a, a_holds) = self.semiring_value(a, scope, prelude)?;
                    let (b, b_holds) = self.semiring_value(b, scope, prelude)?;
                    (combine(&semiring.mul, a, b), both(a_holds, b_holds))
                }
            }
            LExpr::Binary(Op::Add, a, b) => {
                let (a, a_holds) = self.semiring_value(a, scope, prelude)?;
                let (b, b_holds) = self.semiring_value(b, scope, prelude)?;
                let sum = monoid(&semiring.add, a.clone(), b.clone());
                either_present(sum, (a, a_holds), (b, b_holds))
            }
            LExpr::Zero => (self.reduction_identity(), None),
            // Binding refuses the rest (`-`, `/`, functions) over a semiring, except inside
            // a mask's condition, which `gate` evaluates arithmetically.
            other => self.guarded_value(other, scope, prelude)?,
        })
    }
}

fn both(x: Option<Expr>, y: Option<Expr>) -> Option<Expr> {
    match (x, y) {
        (Some(x), Some(y)) => Some(Expr::and(x, y)),
        (x, y) => x.or(y),
    }
}

/// A product one of whose factors is a mask's condition: the condition and the other
/// factor. Binding admits no literal over a semiring but inside a condition, so a literal
/// factor is what is left of one where its operand is absent (`1 - pattern(M)`).
fn gate<'e>(a: &'e LExpr, b: &'e LExpr) -> Option<(&'e LExpr, &'e LExpr)> {
    if is_condition(a) {
        Some((a, b))
    } else if is_condition(b) {
        Some((b, a))
    } else {
        None
    }
}

fn is_condition(e: &LExpr) -> bool {
    match e {
        LExpr::Literal(_) => true,
        LExpr::Math(f, _) => f.is_condition(),
        LExpr::Binary(Op::Sub, one, c) => {
            matches!(**one, LExpr::Literal(x) if x == 1.0) && is_condition(c)
        }
        _ => false,
    }
}

/// 1 or 0 for a truth value `x`: 1 where it is not zero.
fn truth(x: Expr) -> Expr {
    Expr::Math(MathFn::Ne, vec![x, Expr::Float(0.0)])
}

/// `a ⊕ b` in the IR.
pub(super) fn monoid(m: &Monoid, a: Expr, b: Expr) -> Expr {
    match m {
        Monoid::User(op) => op.instantiate(&[a, b]),
        Monoid::Plus => Expr::bin(BinOp::Add, a, b),
        Monoid::Times => Expr::bin(BinOp::Mul, a, b),
        Monoid::Min => Expr::Math(MathFn::Min, vec![a, b]),
        Monoid::Max => Expr::Math(MathFn::Max, vec![a, b]),
        Monoid::Or => Expr::Math(MathFn::Where, vec![a, Expr::Float(1.0), truth(b)]),
        Monoid::And => Expr::Math(MathFn::Where, vec![a, truth(b), Expr::Float(0.0)]),
        Monoid::Any => b,
    }
}

/// `a ⊗ b` in the IR.
fn combine(c: &Combine, a: Expr, b: Expr) -> Expr {
    match c {
        Combine::User(op) => op.instantiate(&[a, b]),
        Combine::Times => Expr::bin(BinOp::Mul, a, b),
        Combine::Plus => Expr::bin(BinOp::Add, a, b),
        Combine::Min => Expr::Math(MathFn::Min, vec![a, b]),
        Combine::Max => Expr::Math(MathFn::Max, vec![a, b]),
        Combine::And => Expr::Math(MathFn::Where, vec![a, truth(b), Expr::Float(0.0)]),
        Combine::Or => Expr::Math(MathFn::Where, vec![a, Expr::Float(1.0), truth(b)]),
        Combine::First => a,
        Combine::Second => b,
        Combine::Pair => Expr::Float(1.0),
    }
}
