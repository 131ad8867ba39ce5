//! Prefetches of the elements that an innermost segment loop reads at its coordinates
//! (SpMV's `x[j]`, TTV's `c[k]`), in a version of the top-level statement chosen once per
//! call.

use super::LARGE_ARRAY;
use super::{coordinate_ahead, sampled_and_large, segment_coordinate, Body};
use crate::ir::{gather, visit};
use crate::ir::{simplify, ArrayRef, BinOp, Expr, Function, Loop, ParamRef, Stmt};

/// Give every top-level statement holding innermost segment loops that read elements at
/// their coordinates (see the `prefetch` module) a second version in which those
/// loops prefetch them: `flag = tests; if (flag) { hinted version } else { the statement
/// }`, where the tests are, for any hinted array, that its coordinates scatter and it is
/// large ([`sampled_and_large`]). The test is made once, outside the loops: tested at
/// each segment, as rows' hints are, TTV on a 1000^3 tensor with 2.4M entries (fibers of
/// 2.4 entries, hints off) took 10.0-10.9 ms before hints and 11.8-12.2 ms after.
///
/// The hinted version is made from the statement's scalar version
/// ([`gather::scalar_version`]), and the C backend prints its sums as they are, one
/// addition after another: where the elements are far enough apart to be worth
/// prefetching, the loads' latency bounds the loop, not the chain of additions, and lanes
/// or partial sums only add the branches of their remainders, whose mispredictions drop
/// the loads in flight. SpMV on uniform random matrices, one thread: 1M x 1M with 10 a row
/// 37-46 ms against 52-60 with partial sums; 300k x 300k with 40 a row 25-30 ms against
/// 29-44 with gathers.
pub fn prefetch_gathered_elements(function: &mut Function) {
    function.version_statements("prefetch_elements", |_, plain| {
        let mut hinted = gather::scalar_version(plain).clone();
        let mut guards = Vec::new();
        hint_elements_in(&mut hinted, &mut guards);
        let any = guards
            .into_iter()
            .reduce(|a, b| Expr::bin(BinOp::Or, a, b))?;
        Some((any, hinted))
    });
}

/// Add the prefetches of [`element_prefetches`] at the top of every loop in `s` that has
/// some, noting each hinted array's guard in `guards` once.
fn hint_elements_in(s: &mut Stmt, guards: &mut Vec<Expr>) {
    for body in visit::children_mut(s) {
        body.iter_mut().for_each(|s| hint_elements_in(s, guards));
    }
    let Stmt::For(l) = s else { return };
    let Some((coords, hints)) = element_prefetches(l) else {
        return;
    };
    for hint in &hints {
        let Stmt::Prefetch { array, .. } = hint else {
            unreachable!("only hints are made")
        };
        let guard = sampled_and_large(ParamRef::Scattered(coords), *array, LARGE_ARRAY);
        if !guards.contains(&guard) {
            guards.push(guard);
        }
    }
    l.body.splice(0..0, hints);
}

/// The coordinates of `l` and the prefetches of the elements they locate, when `l` is an
/// innermost segment loop (no loop nested in its body) whose coordinates locate some.
fn element_prefetches(l: &Loop) -> Option<(ArrayRef, Vec<Stmt>)> {
    let (coord, coords) = segment_coordinate(l)?;
    let mut innermost = true;
    visit::walk_stmts(&l.body, &mut |s| innermost &= !matches!(s, Stmt::For(_)));
    if !innermost {
        return None;
    }
    let body = Body::of(l, coord);
    let ahead = coordinate_ahead(l, coords, Expr::Param(ParamRef::PrefetchDistance));
    let mut hints = Vec::new();
    visit::walk_stmt_exprs(&l.body, &mut |e| {
        let Expr::Load(array, index) = e else { return };
        let element = array
            .input_operand()
            .and_then(|_| body.rewrite(index, &ahead, None))
            .filter(|r| r.uses_coord && !r.loads);
        if let Some(element) = element {
            let hint = Stmt::Prefetch {
                array: *array,
                index: simplify(&element.expr),
            };
            if !hints.contains(&hint) {
                hints.push(hint);
            }
        }
    });
    (!hints.is_empty()).then_some((coords, hints))
}

#[cfg(test)]
mod tests {
    use super::super::checks::assert_prefetched_in_bounds;
    use crate::ir::testing::Decl;

    #[test]
    fn gathered_elements_are_prefetched_in_bounds() {
        let cases: [(&str, &[Decl], usize); 2] = [
            // SpMV: x's element at each coordinate (in the scalar and the vector loop).
            (
                "y(i) = A(i,j) * x(j)",
                &[("y", "d", &[6]), ("A", "csr", &[6, 5]), ("x", "d", &[5])],
                1,
            ),
            // TTV: c's element at each coordinate of a fiber.
            (
                "Y(i,j) = B(i,j,k) * c(k)",
                &[
                    ("Y", "dd", &[4, 3]),
                    ("B", "sss", &[4, 3, 5]),
                    ("c", "d", &[5]),
                ],
                1,
            ),
        ];
        assert_prefetched_in_bounds(&cases);
    }
}
