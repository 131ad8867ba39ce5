//! Prefetches of the rows that a segment loop's coordinates locate (Gustavson's SpGEMM,
//! SpMM, MTTKRP), under a guard per array that a backend tests once per loop.

use super::{coordinate_ahead, sampled_and_large, segment_coordinate, Body};
use super::{LARGE_ARRAY, ROW_DISTANCE};
use crate::ir::visit;
use crate::ir::{simplify, ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, ParamRef, Stmt};

/// The flag and array of the test guarding hints `s`, as this pass builds it with
/// [`sampled_and_large`]; `None` when `s` is not such a guard.
pub fn hint_guard(s: &Stmt) -> Option<(ParamRef, ArrayRef)> {
    let Stmt::If(Expr::Bin(BinOp::And, flag, large), ..) = s else {
        return None;
    };
    match (&**flag, &**large) {
        (Expr::Bin(BinOp::Ne, flag, zero), Expr::Bin(BinOp::Ge, length, _))
            if **zero == Expr::Int(0) =>
        {
            match (&**flag, &**length) {
                (Expr::Param(flag), Expr::Param(ParamRef::Length(array))) => Some((*flag, *array)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Add prefetches of located rows (see the `prefetch` module) at the top of every loop
/// whose body locates them.
pub fn prefetch_located_rows(function: &mut Function) {
    for s in &mut function.body {
        prefetch_in(s);
    }
}

/// A loop whose body begins with guarded hints, split in two (see [`split_hints`]).
pub struct SplitHints {
    /// True when any guard holds.
    pub any: Expr,
    /// The loop with its hints unguarded.
    pub hinted: Loop,
    /// The loop without its hints.
    pub plain: Loop,
}

/// When `l`'s body begins with guarded hints (as this pass adds them), `l` split into a
/// loop that runs them all and one that runs none. The guards are loop-invariant, so a
/// backend may test them once and run one of the two loops ("unswitch"): testing them in
/// every iteration cost 5% on a banded SpMM whose rows are never prefetched.
pub fn split_hints(l: &Loop) -> Option<SplitHints> {
    let guarded = l.body.iter().take_while(|s| is_guarded_hint(s)).count();
    let any = l.body[..guarded]
        .iter()
        .map(|s| match s {
            Stmt::If(guard, ..) => guard.clone(),
            _ => unreachable!("counted as a guarded hint"),
        })
        .reduce(|a, b| Expr::bin(BinOp::Or, a, b))?;
    let plain = Loop {
        body: l.body[guarded..].to_vec(),
        ..l.clone()
    };
    let mut hinted = plain.clone();
    let hints = l.body[..guarded].iter().flat_map(|s| match s {
        Stmt::If(_, hints, _) => hints.clone(),
        _ => unreachable!("counted as a guarded hint"),
    });
    hinted.body.splice(0..0, hints);
    Some(SplitHints { any, hinted, plain })
}

/// True for hints under a guard, as this pass adds them: `if (guard) { prefetch... }`.
pub fn is_guarded_hint(s: &Stmt) -> bool {
    matches!(s, Stmt::If(_, hints, otherwise)
        if otherwise.is_empty() && hints.iter().all(|h| matches!(h, Stmt::Prefetch { .. })))
}

fn prefetch_in(s: &mut Stmt) {
    // A loop's hints are found before its body gets its own.
    let hints = match s {
        Stmt::For(l) => row_prefetches(l),
        _ => Vec::new(),
    };
    for body in visit::children_mut(s) {
        body.iter_mut().for_each(prefetch_in);
    }
    if let Stmt::For(l) = s {
        l.body.splice(0..0, hints);
    }
}

/// The prefetches for the rows that `l`'s coordinates locate, empty when it locates none.
fn row_prefetches(l: &Loop) -> Vec<Stmt> {
    let Some((coord, coords)) = segment_coordinate(l) else {
        return Vec::new();
    };
    let ahead = |distance: i64| coordinate_ahead(l, coords, Expr::Int(distance));
    let body = Body::of(l, coord);
    let mut near = Vec::new();
    let mut far = Vec::new();
    visit::walk_stmts(&l.body, &mut |s| {
        let Stmt::For(row) = s else { return };
        let mut reads = Vec::new();
        visit::walk_stmt_exprs(&row.body, &mut |e| {
            if let Expr::Load(array, index) = e {
                if array.input_operand().is_some() {
                    reads.push((*array, index));
                }
            }
        });
        for (array, index) in reads {
            let at_start = |coord_ahead: &Expr| {
                body.rewrite(index, coord_ahead, Some((row.var, &row.start)))
                    .filter(|r| r.uses_coord)
            };
            let (Some(soon), Some(later)) = (
                at_start(&ahead(ROW_DISTANCE)),
                at_start(&ahead(2 * ROW_DISTANCE)),
            ) else {
                continue;
            };
            near.push(Stmt::Prefetch {
                array,
                index: simplify(&soon.expr),
            });
            visit::walk_expr(&later.expr, &mut |e| {
                if let Expr::Load(
                    bounds @ ArrayRef::Level {
                        kind: ArrayKind::Pos,
                        ..
                    },
                    index,
                ) = e
                {
                    far.push(Stmt::Prefetch {
                        array: *bounds,
                        index: simplify(index),
                    });
                }
            });
        }
    });
    // One test per array, around its distinct hints, far ones first.
    let mut by_array: Vec<(ArrayRef, Vec<Stmt>)> = Vec::new();
    for hint in far.into_iter().chain(near) {
        let Stmt::Prefetch { array, .. } = hint else {
            unreachable!("only hints are collected")
        };
        match by_array.iter_mut().find(|(a, _)| *a == array) {
            Some((_, hints)) if hints.contains(&hint) => {}
            Some((_, hints)) => hints.push(hint),
            None => by_array.push((array, vec![hint])),
        }
    }
    by_array
        .into_iter()
        .map(|(array, hints)| {
            let guard = sampled_and_large(ParamRef::Scattered(coords), array, LARGE_ARRAY);
            Stmt::If(guard, hints, Vec::new())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::checks::{assert_prefetched_in_bounds, hinted_loops, lowered};
    use super::*;
    use crate::ir::testing::Decl;

    #[test]
    fn located_rows_are_prefetched_in_bounds() {
        let cases: [(&str, &[Decl], usize); 4] = [
            // Gustavson's SpGEMM: B's segment bound, coordinates and values.
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "csr", &[9, 8]),
                    ("A", "csr", &[9, 7]),
                    ("B", "csr", &[7, 8]),
                ],
                3,
            ),
            // SpMM: B's dense row.
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "dd", &[9, 5]),
                    ("A", "csr", &[9, 7]),
                    ("B", "dd", &[7, 5]),
                ],
                1,
            ),
            // MTTKRP over CSF: rows of both factors, each from its own level's loop.
            (
                "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
                &[
                    ("A", "dd", &[4, 3]),
                    ("B", "sss", &[4, 5, 6]),
                    ("C", "dd", &[5, 3]),
                    ("D", "dd", &[6, 3]),
                ],
                2,
            ),
            // A^T * A, Gustavson rows over a transposed copy of A.
            (
                "C(i,j) = A(k,i) * A(k,j)",
                &[("C", "csr", &[7, 7]), ("A", "csr", &[9, 7])],
                3,
            ),
        ];
        assert_prefetched_in_bounds(&cases);
    }

    #[test]
    fn split_hints_give_a_loop_with_all_hints_and_one_without() {
        let (f, _) = lowered(
            "C(i,j) = A(i,k) * B(k,j)",
            &[
                ("C", "csr", &[9, 8]),
                ("A", "csr", &[9, 7]),
                ("B", "csr", &[7, 8]),
            ],
            0,
        );
        let mut split = 0;
        for (l, hints) in hinted_loops(&f) {
            let SplitHints { any, hinted, plain } = split_hints(l).expect("guarded hints");
            let unguarded: Vec<&Stmt> = hinted.body.iter().take(hints.len()).collect();
            assert_eq!(unguarded, hints);
            assert_eq!(hinted.body[hints.len()..], plain.body[..]);
            let arrays: std::collections::BTreeSet<String> = hints
                .iter()
                .map(|h| match h {
                    Stmt::Prefetch { array, .. } => format!("{array:?}"),
                    _ => unreachable!(),
                })
                .collect();
            assert_eq!(
                l.body.len(),
                plain.body.len() + arrays.len(),
                "a guard per array"
            );
            assert!(!plain
                .body
                .iter()
                .any(|s| matches!(s, Stmt::Prefetch { .. })));
            assert!(matches!(any, Expr::Bin(BinOp::Or, ..)));
            split += 1;
        }
        assert_eq!(
            split, 4,
            "the counting, bounding, placing and appending phases"
        );
    }
}
