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
        // f(0, ..., 0) = 0: entries where any argument has one (an argument that does not
        // depend on the variable is everywhere, unless it is a zero); any other function
        // has a value at every coordinate.
        LExpr::Math(f, args) => {
            let mut everywhere = !f.keeps_zero();
            let mut lattice: Option<Vec<Point>> = None;
            for a in args {
                match build(a, indexes) {
                    Some(x) => {
                        lattice = Some(match lattice {
                            Some(l) => disjunction(&l, &x),
                            None => x,
                        })
                    }
                    None => everywhere |= !matches!(a, LExpr::Zero | LExpr::Literal(0.0)),
                }
            }
            lattice.map(|l| {
                if everywhere {
                    disjunction(&l, &[universe()])
                } else {
                    l
                }
            })
        }
        LExpr::Binary(Op::Add | Op::Sub, a, b) => match (build(a, indexes), build(b, indexes)) {
            (None, None) => None,
            (Some(x), None) => Some(disjunction(&x, &[universe()])),
            (None, Some(y)) => Some(disjunction(&[universe()], &y)),
            (Some(x), Some(y)) => Some(disjunction(&x, &y)),
        },
    };
    lattice.map(order_points)
}

/// `points` where only the coordinates some iterator has an entry at are visited: the
/// universe dropped from every point and points left empty removed. For outputs whose
/// other components all hold the fill value ([`crate::notation::cin::Statement::fills_unreached_components`]).
pub fn without_universe(points: Vec<Point>) -> Option<Vec<Point>> {
    let kept: Vec<Point> = points
        .into_iter()
        .filter(|p| !p.iterators.is_empty())
        .map(|p| Point {
            universe: false,
            ..p
        })
        .collect();
    (!kept.is_empty()).then(|| order_points(kept))
}

fn universe() -> Point {
    Point {
        iterators: BTreeSet::new(),
        universe: true,
    }
}

/// Where both operands have entries: every pair of points merged, over the whole
/// dimension only where both are (the whole dimension is no restriction on the other).
fn conjunction(a: &[Point], b: &[Point]) -> Vec<Point> {
    pairs(a, b, |x, y| x && y)
}

/// Where either operand has entries: both operands' points, below the pairs of them merged
/// (over the whole dimension where either point is).
fn disjunction(a: &[Point], b: &[Point]) -> Vec<Point> {
    let mut points = pairs(a, b, |x, y| x || y);
    points.extend_from_slice(a);
    points.extend_from_slice(b);
    points
}

fn pairs(a: &[Point], b: &[Point], universe: impl Fn(bool, bool) -> bool) -> Vec<Point> {
    let mut points = Vec::new();
    for x in a {
        for y in b {
            points.push(Point {
                iterators: x.iterators.union(&y.iterators).copied().collect(),
                universe: universe(x.universe, y.universe),
            });
        }
    }
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

#[cfg(test)]
mod tests {
    //! Lattices as Chou (2018, §4.2) defines them: `a * b` has the single point `{a, b}`;
    //! `a + b` the points `{a, b}`, `{a}`, `{b}`; a point's sub-lattice is every point
    //! whose iterators it contains. Occurrences are numbered left to right.

    use super::*;
    use crate::ir::MathFn;

    fn acc(o: usize) -> LExpr {
        LExpr::Access(o)
    }
    fn bin(op: Op, a: LExpr, b: LExpr) -> LExpr {
        LExpr::Binary(op, Box::new(a), Box::new(b))
    }
    fn mul(a: LExpr, b: LExpr) -> LExpr {
        bin(Op::Mul, a, b)
    }
    fn add(a: LExpr, b: LExpr) -> LExpr {
        bin(Op::Add, a, b)
    }

    /// A point as (iterators, universe).
    fn p(iterators: &[usize], universe: bool) -> Point {
        Point {
            iterators: iterators.iter().copied().collect(),
            universe,
        }
    }

    /// The lattice when every occurrence stores the variable at its current level.
    fn all(expr: &LExpr) -> Vec<Point> {
        build(expr, &|_| true).expect("the expression depends on the variable")
    }

    /// The points of `lattice` below `top` (its sub-lattice), in lattice order.
    fn sub_lattice(lattice: &[Point], top: &Point) -> Vec<Point> {
        lattice.iter().filter(|q| q.within(top)).cloned().collect()
    }

    #[test]
    fn intersection_is_one_point_merging_both() {
        assert_eq!(all(&mul(acc(0), acc(1))), [p(&[0, 1], false)]);
        // Three factors still co-iterate all at once.
        let abc = mul(mul(acc(0), acc(1)), acc(2));
        assert_eq!(all(&abc), [p(&[0, 1, 2], false)]);
    }

    #[test]
    fn union_has_both_and_each_alone() {
        let lattice = all(&add(acc(0), acc(1)));
        assert_eq!(lattice, [p(&[0, 1], false), p(&[0], false), p(&[1], false)]);
        // While both are present every case can still happen; once one is exhausted only
        // the other's.
        assert_eq!(sub_lattice(&lattice, &lattice[0]), lattice);
        assert_eq!(sub_lattice(&lattice, &lattice[1]), [p(&[0], false)]);
        assert_eq!(sub_lattice(&lattice, &lattice[2]), [p(&[1], false)]);
    }

    #[test]
    fn subtraction_and_negation_merge_like_addition() {
        let sub = all(&bin(Op::Sub, acc(0), acc(1)));
        assert_eq!(sub, all(&add(acc(0), acc(1))));
        let neg = all(&add(LExpr::Neg(Box::new(acc(0))), acc(1)));
        assert_eq!(neg, sub);
    }

    #[test]
    fn product_of_a_union_distributes() {
        // a * (b + c): {a,b,c}, {a,b}, {a,c}; `a` alone is never a case.
        let lattice = all(&mul(acc(0), add(acc(1), acc(2))));
        assert_eq!(
            lattice,
            [p(&[0, 1, 2], false), p(&[0, 1], false), p(&[0, 2], false)]
        );
        assert_eq!(
            sub_lattice(&lattice, &lattice[1]),
            [p(&[0, 1], false)],
            "once c is exhausted only a*b remains"
        );
        // (a + b) * (c + d): the product of two unions has all nine combinations minus
        // the duplicates: every pair with at least one iterator from each side.
        let lattice = all(&mul(add(acc(0), acc(1)), add(acc(2), acc(3))));
        assert_eq!(lattice.len(), 9);
        assert_eq!(lattice[0], p(&[0, 1, 2, 3], false));
        for q in &lattice {
            let left = q.iterators.iter().any(|&o| o < 2);
            let right = q.iterators.iter().any(|&o| o >= 2);
            assert!(left && right && !q.universe, "{q:?}");
        }
    }

    #[test]
    fn duplicate_points_are_merged() {
        // (a + b) + a: {a,b} and {a} arise twice.
        let lattice = all(&add(add(acc(0), acc(1)), acc(0)));
        assert_eq!(lattice, [p(&[0, 1], false), p(&[0], false), p(&[1], false)]);
    }

    #[test]
    fn a_dense_operand_in_a_union_is_an_ordinary_iterator() {
        // `x(i) + d(i)` with d dense: the lattice does not look at level properties, so d
        // is an iterator like any other; lowering sees the full level in the union and
        // loops over the whole dimension with cursors instead of merging.
        let lattice = all(&add(acc(0), acc(1)));
        assert_eq!(lattice, [p(&[0, 1], false), p(&[0], false), p(&[1], false)]);
    }

    #[test]
    fn operands_without_the_variable_in_a_union_are_the_universe() {
        // B(i,j) + c(i) for `j`: c has an entry at every j where it is non-zero.
        let only_b = |o: usize| o == 0;
        let lattice = build(&add(acc(0), acc(1)), &only_b).unwrap();
        assert_eq!(lattice, [p(&[0], true), p(&[], true), p(&[0], false)]);
        assert_eq!(sub_lattice(&lattice, &lattice[2]), [p(&[0], false)]);
        assert!(lattice[2].within(&lattice[0]) && !lattice[1].within(&lattice[2]));
        // The same on the left, and for literals.
        let only_c = |o: usize| o == 1;
        let lattice = build(&add(acc(0), acc(1)), &only_c).unwrap();
        assert_eq!(lattice, [p(&[1], true), p(&[], true), p(&[1], false)]);
        let lattice = build(&add(acc(0), LExpr::Literal(2.0)), &only_b).unwrap();
        assert_eq!(lattice, [p(&[0], true), p(&[], true), p(&[0], false)]);
    }

    #[test]
    fn a_product_with_an_everywhere_factor_iterates_the_other_factor() {
        // A(i,j) * (1 - pattern(M(i,j))), a complemented mask: A's entries, M merged to
        // see where it is, never the whole dimension.
        let complement = bin(
            Op::Sub,
            LExpr::Literal(1.0),
            LExpr::Math(MathFn::Pattern, vec![acc(1)]),
        );
        let lattice = all(&mul(acc(0), complement));
        assert_eq!(lattice, [p(&[0, 1], false), p(&[0], false)]);
    }

    #[test]
    fn operands_without_the_variable_in_a_product_are_ignored() {
        // B(i,j) * c(i) for `j`: only B's entries matter.
        let only_b = |o: usize| o == 0;
        assert_eq!(
            build(&mul(acc(0), acc(1)), &only_b).unwrap(),
            [p(&[0], false)]
        );
        assert_eq!(build(&mul(acc(0), acc(1)), &|_| false), None);
        assert_eq!(build(&add(acc(0), LExpr::Literal(1.0)), &|_| false), None);
    }

    #[test]
    fn a_denominator_is_needed_at_every_coordinate_of_the_numerator() {
        // a / b: where a has an entry, b is read whether present or not (x/0 is inf),
        // and nowhere else (0/b is 0).
        let lattice = all(&bin(Op::Div, acc(0), acc(1)));
        assert_eq!(lattice, [p(&[0, 1], false), p(&[0], false)]);
        assert!(lattice.iter().all(|q| q.iterators.contains(&0)));
        // 1 / b: every coordinate.
        let only_b = |o: usize| o == 1;
        let lattice = build(&bin(Op::Div, LExpr::Literal(1.0), acc(1)), &only_b).unwrap();
        assert_eq!(lattice, [p(&[1], true), p(&[], true), p(&[1], false)]);
    }

    #[test]
    fn points_are_ordered_largest_first() {
        let exprs = [
            add(acc(0), mul(acc(1), acc(2))),
            mul(add(acc(0), acc(1)), add(acc(2), acc(3))),
            add(add(acc(0), acc(1)), acc(2)),
        ];
        for e in &exprs {
            let lattice = all(e);
            let size = |q: &Point| q.iterators.len() + q.universe as usize;
            assert!(
                lattice.windows(2).all(|w| size(&w[0]) >= size(&w[1])),
                "{lattice:?}"
            );
            // The top point merges every iterator of the expression.
            let mut occurrences = Vec::new();
            e.occurrences(&mut occurrences);
            assert!(occurrences.iter().all(|o| lattice[0].iterators.contains(o)));
            assert!(lattice.iter().all(|q| q.within(&lattice[0])));
        }
        // a + b*c: {a,b,c}, {b,c}, {a} — b or c alone contribute nothing.
        assert_eq!(
            all(&exprs[0]),
            [p(&[0, 1, 2], false), p(&[1, 2], false), p(&[0], false)]
        );
    }
}
