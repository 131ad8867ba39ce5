//! Reading a statement's constraints at one execution dimension: a definition (a UF
//! equality such as `j = col(k)`), lower and upper bounds (dividing ones for tile loops)
//! (the other constraints are guards, which isl's scan applies). The entry checks bound
//! every dimension this way, and the dependence tests read definitions and bounds through
//! it.

use super::*;

/// A loop bound: `var >= ceil(expr / div)` (a lower bound) or `var <= floor(expr / div)`
/// (an upper one), from `div * var - expr >= 0` or `expr - div * var >= 0`; `div` is 1
/// except where a loop runs over tiles.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::spf) struct Bound {
    pub(in crate::spf) expr: Affine,
    pub(in crate::spf) div: i64,
}

impl Bound {
    /// The bound when it needs no division.
    pub(in crate::spf) fn unit(&self) -> Option<&Affine> {
        (self.div == 1).then_some(&self.expr)
    }
}

/// How a statement's constraints at one dimension are used.
#[derive(Default)]
pub(in crate::spf) struct AtDim {
    pub(in crate::spf) definition: Option<Affine>,
    pub(in crate::spf) lower: Vec<Bound>,
    pub(in crate::spf) upper: Vec<Bound>,
}

/// Read the constraints whose innermost variable is dimension `d` as a definition and
/// bounds.
pub(in crate::spf) fn classify(constraints: &[Constraint], d: usize) -> AtDim {
    let mut at = AtDim::default();
    for c in constraints.iter().filter(|c| c.expr.max_var() == Some(d)) {
        let coef = c.expr.coefficient(d);
        let in_uf = c.expr.var_in_uf(d);
        // rest = expr - coef * d
        let rest = c.expr.add_scaled(-coef, &Affine::term(Term::Var(d)));
        match c.kind {
            Relation0::Zero if coef.abs() == 1 && !in_uf && at.definition.is_none() => {
                at.definition = Some(rest.scale(-coef));
            }
            // coef * d + rest >= 0: d >= ceil(-rest / coef), or d <= floor(rest / -coef).
            Relation0::NonNegative if !in_uf && coef > 0 => at.lower.push(Bound {
                expr: rest.scale(-1),
                div: coef,
            }),
            Relation0::NonNegative if !in_uf => at.upper.push(Bound {
                expr: rest,
                div: -coef,
            }),
            _ => {}
        }
    }
    if at.definition.is_some() {
        // The bounds of a defined dimension are checks on its value, not bounds.
        at.lower.clear();
        at.upper.clear();
    }
    at
}
