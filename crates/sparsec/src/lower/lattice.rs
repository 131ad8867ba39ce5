//! Merge lattices (Kjolstad et al. 2017; Chou 2018 §4.2): for one index variable, the
//! sets of iterators that a loop must merge, and the cases inside it.
//!
//! A point is a set of iterators (occurrences whose current level stores the variable)
//! plus `universe`, a pseudo-iterator over the whole dimension that stands for operands
//! that do not depend on the variable inside a union (`B(i,j) + c(i)` has an entry at every
//! `j` where `c(i)` is non-zero). Conjunction (`*`) unions the iterator sets point by point;
//! disjunction (`+`, `-`) adds both operands' points to the conjunction.

use std::collections::BTreeSet;

use crate::notation::ast::Op;
use crate::schedule::lexpr::LExpr;

/// One lattice point.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Point {
    /// Occurrences merged by this point.
    pub iterators: BTreeSet<usize>,
    /// Whether the whole dimension is part of the merge.
    pub universe: bool,
}

impl Point {
    /// True when `self` is reachable below `top` (a subset of it).
    pub fn within(&self, top: &Point) -> bool {
        self.iterators.is_subset(&top.iterators) && (!self.universe || top.universe)
    }
}

/// The lattice of `expr` for the variable stored at the current level of the occurrences
/// for which `indexes` is true; `None` when the expression does not depend on it.
pub fn build(expr: &LExpr, indexes: &dyn Fn(usize) -> bool) -> Option<Vec<Point>> {
    let lattice = match expr {
        LExpr::Access(o) if indexes(*o) => Some(vec![Point {
            iterators: BTreeSet::from([*o]),
            universe: false,
        }]),
        LExpr::Access(_)
        | LExpr::Literal(_)
        | LExpr::Temp(_)
        | LExpr::Zero
        | LExpr::WorkspaceRead(..) => None,
        LExpr::Neg(a) | LExpr::Sum(_, _, a) => build(a, indexes),
        LExpr::Precomputed(p) => build(&p.body, indexes),
        LExpr::Binary(Op::Mul, a, b) => match (build(a, indexes), build(b, indexes)) {
            (Some(x), Some(y)) => Some(conjunction(&x, &y)),
            (x, y) => x.or(y),
        },
        LExpr::Binary(Op::Div, a, b) => match (build(a, indexes), build(b, indexes)) {
            // The denominator is needed wherever the numerator has entries, present or not.
            (Some(x), Some(y)) => Some(conjunction(&x, &disjunction(&y, &[universe()]))),
            // An invariant numerator still needs the denominator at every coordinate.
            (None, Some(y)) => Some(disjunction(&y, &[universe()])),
            (x, None) => x,
        },
        LExpr::Binary(Op::Add | Op::Sub, a, b) => match (build(a, indexes), build(b, indexes)) {
            (None, None) => None,
            (Some(x), None) => Some(disjunction(&x, &[universe()])),
            (None, Some(y)) => Some(disjunction(&[universe()], &y)),
            (Some(x), Some(y)) => Some(disjunction(&x, &y)),
        },
    };
    lattice.map(order_points)
}

fn universe() -> Point {
    Point {
        iterators: BTreeSet::new(),
        universe: true,
    }
}

fn conjunction(a: &[Point], b: &[Point]) -> Vec<Point> {
    let mut points = Vec::new();
    for x in a {
        for y in b {
            points.push(Point {
                iterators: x.iterators.union(&y.iterators).copied().collect(),
                universe: x.universe || y.universe,
            });
        }
    }
    points
}

fn disjunction(a: &[Point], b: &[Point]) -> Vec<Point> {
    let mut points = conjunction(a, b);
    points.extend_from_slice(a);
    points.extend_from_slice(b);
    points
}

/// Largest points first (the top merges everything), duplicates removed.
fn order_points(mut points: Vec<Point>) -> Vec<Point> {
    points.sort_by(|x, y| {
        (y.iterators.len() + y.universe as usize)
            .cmp(&(x.iterators.len() + x.universe as usize))
            .then_with(|| x.cmp(y))
    });
    points.dedup();
    points
}
