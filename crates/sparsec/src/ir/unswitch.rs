//! Conditions that do not change inside a loop tested once, around two copies of it.
//!
//! Lowering tests whether a block of a split index is cut short by its parent's extent
//! inside the loops over the block's stored entries: sliced ELL's slot loop holds
//! `if (rows left < 8) { rows of the last slice } else { 8 rows in SIMD lanes }`, tested
//! once per slot. Tested around the slot loop instead, once per slice, each copy is a
//! plain loop over slots. SpMV with `A` in `sell:8`, one thread, on the AVX-512 Xeon:
//! cryg2500 0.00427 to 0.00313 ms, cage10 0.055 to 0.042 ms (Intel MKL's
//! inspector-executor 0.0027 and 0.039).
//!
//! A loop is unswitched where its body is declarations and then one `if` (in nested
//! blocks or not), whose condition reads no variable the loop declares, loads nothing and
//! divides by nothing: evaluated before the loop, even one that runs no iteration, it
//! reads only what is already defined and cannot fault.

use super::analysis::depends_on;
use super::visit;
use super::{BinOp, Expr, Function, Loop, LoopKind, Stmt, Var};

/// Unswitch every serial loop of `function` whose body ends in an `if` on a condition
/// the loop does not change (see the module's documentation), innermost first.
pub fn unswitch_invariant_conditions(function: &mut Function) {
    function.body = std::mem::take(&mut function.body)
        .into_iter()
        .map(unswitched)
        .collect();
}

/// `s` with its loops unswitched, innermost first.
fn unswitched(mut s: Stmt) -> Stmt {
    for children in visit::children_mut(&mut s) {
        for child in children.iter_mut() {
            *child = unswitched(std::mem::replace(child, Stmt::Block(Vec::new())));
        }
    }
    let Stmt::For(l) = s else {
        return s;
    };
    let mut opened = l.clone();
    open_trailing_blocks(&mut opened.body);
    let Some(condition) = invariant_switch(&opened) else {
        return Stmt::For(l);
    };
    let Some(Stmt::If(_, then, otherwise)) = opened.body.pop() else {
        unreachable!("the body ends in the switch")
    };
    let Loop {
        var,
        start,
        end,
        body: declarations,
        kind,
    } = opened;
    let copy = |branch: Vec<Stmt>| {
        let mut body = declarations.clone();
        body.extend(branch);
        vec![Stmt::For(Loop {
            var,
            start: start.clone(),
            end: end.clone(),
            body,
            kind: kind.clone(),
        })]
    };
    Stmt::If(condition, copy(then), copy(otherwise))
}

/// `body` with the block that ends it opened, and any block that then ends it: the
/// block's declarations would live to the end of `body` anyway.
fn open_trailing_blocks(body: &mut Vec<Stmt>) {
    while let Some(Stmt::Block(_)) = body.last() {
        let Some(Stmt::Block(inner)) = body.pop() else {
            unreachable!("the last statement is a block")
        };
        body.extend(inner);
    }
}

/// The condition of the `if` that ends `l`'s body, where `l` is serial, the rest of its
/// body declares variables only, and the condition may be evaluated before the loop.
fn invariant_switch(l: &Loop) -> Option<Expr> {
    let (Stmt::If(condition, _, _), rest) = l.body.split_last()? else {
        return None;
    };
    let declared: Vec<Var> = rest
        .iter()
        .map(|s| match s {
            Stmt::Decl(v, _) => Some(*v),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let mut safe = true;
    visit::walk_expr(condition, &mut |e| {
        safe &= !matches!(
            e,
            Expr::Load(..) | Expr::Call(..) | Expr::Bin(BinOp::Div | BinOp::Rem, ..)
        );
    });
    let reads_loop = depends_on(condition, &declared) || depends_on(condition, &[l.var]);
    (l.kind == LoopKind::Serial && safe && !reads_loop).then(|| condition.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::lowered;

    /// Whether some serial loop of `stmts` still ends in an `if` on a condition it does
    /// not change.
    fn any_switch(stmts: &[Stmt]) -> bool {
        let mut found = false;
        visit::walk_stmts(stmts, &mut |s| {
            if let Stmt::For(l) = s {
                let mut opened = l.clone();
                open_trailing_blocks(&mut opened.body);
                found |= invariant_switch(&opened).is_some();
            }
        });
        found
    }

    #[test]
    fn sliced_ell_tests_its_last_slice_around_the_slot_loop() {
        let lowered = lowered(
            "y(i) = A(i,j) * x(j)",
            &[
                ("A", "sell:8", &[21, 30]),
                ("x", "d", &[30]),
                ("y", "d", &[21]),
            ],
        );
        let body = &lowered.function.body;
        assert!(!any_switch(body), "lowering unswitched the slot loop");
        // Each copy of the slot loop ends in a loop over the slice's rows: 8 in the
        // full slices, the rows left in the last.
        let mut row_loops = Vec::new();
        visit::walk_stmts(body, &mut |s| {
            if let Stmt::For(slots) = s {
                if let Some(Stmt::For(rows)) = slots.body.last() {
                    if !matches!(slots.start, Expr::Int(_)) {
                        row_loops.push(rows.end.clone());
                    }
                }
            }
        });
        assert_eq!(row_loops.len(), 2, "{body:#?}");
        assert!(row_loops.contains(&Expr::Int(8)), "{row_loops:?}");
    }

    #[test]
    fn conditions_that_load_or_read_the_loop_stay_inside() {
        let mut f = Function::new(
            Vec::new(),
            1,
            crate::ir::OutputMode::Dense {
                accumulate: false,
                zeroed_by_kernel: false,
            },
        );
        let i = f.fresh_var("i", crate::ir::Type::Index);
        let d = f.fresh_var("d", crate::ir::Type::Index);
        let switch_on = |condition: Expr| {
            Stmt::For(Loop {
                var: i,
                start: Expr::Int(0),
                end: Expr::Int(10),
                body: vec![
                    Stmt::Decl(d, Expr::Var(i)),
                    Stmt::Block(vec![Stmt::If(condition, vec![], vec![Stmt::Block(vec![])])]),
                ],
                kind: LoopKind::Serial,
            })
        };
        let extent = Expr::Param(crate::ir::ParamRef::Extent(0));
        let kept = [
            Expr::lt(Expr::Var(i), extent.clone()),
            Expr::lt(Expr::Var(d), extent.clone()),
            Expr::lt(
                Expr::load(
                    crate::ir::ArrayRef::Values(crate::ir::OperandId(0)),
                    Expr::Int(0),
                ),
                Expr::Float(1.0),
            ),
            Expr::lt(
                Expr::bin(BinOp::Div, Expr::Int(8), extent.clone()),
                Expr::Int(1),
            ),
        ];
        for condition in kept {
            let s = switch_on(condition.clone());
            assert_eq!(unswitched(s.clone()), s, "{condition:?}");
        }
        let invariant = Expr::lt(extent, Expr::Int(8));
        let Stmt::If(c, then, otherwise) = unswitched(switch_on(invariant.clone())) else {
            panic!("an invariant condition is tested around the loop")
        };
        assert_eq!(c, invariant);
        for copy in [then, otherwise] {
            let [Stmt::For(l)] = &copy[..] else {
                panic!("a copy of the loop in each branch")
            };
            assert!(matches!(l.body[0], Stmt::Decl(..)));
        }
    }
}
