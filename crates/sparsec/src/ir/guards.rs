//! A guard tested twice in a row, tested once: `a = e; if (c(a)) { X }` followed by
//! `b = e; if (c(b)) { Y }` becomes `a = e; if (c(a)) { X Y }`, `Y` reading `a` for `b`.
//!
//! The sparse polyhedral front end scans each statement of a loop body on its own, so a
//! forward substitution's row loads its bounds and tests that the row is not empty once
//! for the sum and once more for the diagonal. Under one guard, the two loops over the row
//! share what they find in it (`ir::segments` searches the row once).
//!
//! The second test may also be all that a further condition `c0` holds; `Y` then runs
//! under `if (c0)` inside the first (the wavefront executor tests that a row is in the
//! range of the diagonal's statement first).
//!
//! The pair is merged where `e` calls nothing, `b` is declared and never assigned and the
//! statements after the second `if` do not read it, both `if`s have no `else`, and `X`
//! assigns no variable and stores to no array that `e`, `c` or `c0` reads: `c` then has the same
//! value after `X` as before it, so `Y` runs exactly when it ran before.

use super::visit;
use super::{ArrayRef, Expr, Function, Stmt, Var};

/// Merge every guard of `function` tested twice in a row (see the module's documentation),
/// outer ones first, so that the statements merged under one are merged in turn.
pub fn merge_repeated_guards(function: &mut Function) {
    merge_in(&mut function.body);
}

fn merge_in(stmts: &mut Vec<Stmt>) {
    let mut at = 0;
    while at + 2 < stmts.len() {
        if !merge_at(stmts, at) {
            at += 1;
        }
    }
    for s in stmts.iter_mut() {
        for body in bodies_mut(s) {
            merge_in(body);
        }
    }
}

/// The statement lists nested directly in `s`.
pub(super) fn bodies_mut(s: &mut Stmt) -> Vec<&mut Vec<Stmt>> {
    match s {
        Stmt::For(l) => vec![&mut l.body],
        Stmt::While(_, body) | Stmt::Block(body) => vec![body],
        Stmt::If(_, then, otherwise) => vec![then, otherwise],
        _ => Vec::new(),
    }
}

/// Merge the guard pair starting at `stmts[at]`, if it is one; says whether it was. The
/// repeated test may also be all that a further condition holds (`if (c0) { b = e; if
/// (c(b)) { Y } }`): it then joins the first as `if (c0) { Y }`.
fn merge_at(stmts: &mut Vec<Stmt>, at: usize) -> bool {
    let (Some(Stmt::Decl(a, first)), Some(Stmt::If(guard, then, no_else))) =
        (stmts.get(at), stmts.get(at + 1))
    else {
        return false;
    };
    let (outer, repeat, taken) = match stmts.get(at + 2) {
        Some(Stmt::Decl(..)) => (None, stmts.get(at + 2..at + 4), 2),
        Some(Stmt::If(outer, inner, no_else)) if no_else.is_empty() => {
            (Some(outer), Some(&inner[..]), 1)
        }
        _ => return false,
    };
    let Some([Stmt::Decl(b, second), Stmt::If(repeated, later, no_else_2)]) = repeat else {
        return false;
    };
    let (a, b) = (*a, *b);
    if first != second || !no_else.is_empty() || !no_else_2.is_empty() {
        return false;
    }
    let mut renamed = repeated.clone();
    rename(&mut renamed, b, a);
    if renamed != *guard || calls(first) || outer.is_some_and(calls) {
        return false;
    }
    let (assigned, stored) = effects(then);
    let unchanged = |e: &Expr| {
        let mut ok = true;
        visit::walk_expr(e, &mut |e| match e {
            Expr::Var(v) => ok &= !assigned.contains(v),
            Expr::Load(array, _) => ok &= !stored.contains(array),
            _ => {}
        });
        ok
    };
    if !unchanged(first) || !unchanged(guard) || !outer.is_none_or(unchanged) {
        return false;
    }
    let mut b_assigned_or_read_after = false;
    visit::walk_stmts(later, &mut |s| {
        b_assigned_or_read_after |= matches!(s, Stmt::Assign(v, _) if *v == b);
    });
    visit::walk_stmts(&stmts[at + 2 + taken..], &mut |s| {
        b_assigned_or_read_after |= matches!(s, Stmt::Assign(v, _) if *v == b);
    });
    visit::walk_stmt_exprs(&stmts[at + 2 + taken..], &mut |e| {
        b_assigned_or_read_after |= *e == Expr::Var(b);
    });
    if b_assigned_or_read_after {
        return false;
    }
    let mut later = later.clone();
    for s in &mut later {
        rename_in_stmt(s, b, a);
    }
    if let Some(outer) = outer {
        later = vec![Stmt::If(outer.clone(), later, Vec::new())];
    }
    stmts.drain(at + 2..at + 2 + taken);
    let Stmt::If(_, then, _) = &mut stmts[at + 1] else {
        unreachable!("matched above")
    };
    then.extend(later);
    true
}

/// Whether `e` calls a helper.
fn calls(e: &Expr) -> bool {
    let mut found = false;
    visit::walk_expr(e, &mut |e| found |= matches!(e, Expr::Call(..)));
    found
}

/// The variables `stmts` assign and the arrays they store to (or reorder).
fn effects(stmts: &[Stmt]) -> (Vec<Var>, Vec<ArrayRef>) {
    let (mut assigned, mut stored) = (Vec::new(), Vec::new());
    visit::walk_stmts(stmts, &mut |s| match s {
        Stmt::Assign(v, _) => assigned.push(*v),
        Stmt::Store(store) => stored.push(store.array),
        Stmt::OrderTouched { list, flags, .. } => {
            stored.push(ArrayRef::Scratch(*list));
            stored.push(ArrayRef::Scratch(*flags));
        }
        _ => {}
    });
    (assigned, stored)
}

fn rename(e: &mut Expr, from: Var, to: Var) {
    visit::walk_expr_mut(e, &mut |e| {
        if *e == Expr::Var(from) {
            *e = Expr::Var(to);
        }
    });
}

fn rename_in_stmt(s: &mut Stmt, from: Var, to: Var) {
    visit::walk_stmt_exprs_mut(std::slice::from_mut(s), &mut |e| {
        if *e == Expr::Var(from) {
            *e = Expr::Var(to);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::function_of_y_and_a;
    use crate::ir::{ArrayKind, BinOp, OperandId, Store, Type};

    const BOUNDS: ArrayRef = ArrayRef::Level {
        operand: OperandId(1),
        level: 2,
        kind: ArrayKind::Pos,
    };

    fn store(array: ArrayRef, value: Expr) -> Stmt {
        Stmt::Store(Store {
            array,
            index: Expr::Int(0),
            value,
            accumulate: false,
        })
    }

    /// `a = bounds[0]; if (a < 5) { first } b = bounds[0]; if (b < 5) { y[0] = b }`, and
    /// its variables `a`, `b` and a spare `t`.
    fn guarded_twice(first: impl FnOnce(Var) -> Vec<Stmt>) -> (Function, [Var; 3]) {
        let mut f = function_of_y_and_a(0);
        let [a, b, t] = ["a", "b", "t"].map(|hint| f.fresh_var(hint, Type::Index));
        let guard = |v| Expr::lt(Expr::Var(v), Expr::Int(5));
        let load = Expr::load(BOUNDS, Expr::Int(0));
        f.body = vec![
            Stmt::Decl(t, Expr::Int(0)),
            Stmt::Decl(a, load.clone()),
            Stmt::If(guard(a), first(t), Vec::new()),
            Stmt::Decl(b, load),
            Stmt::If(
                guard(b),
                vec![store(ArrayRef::Values(OperandId(0)), Expr::Var(b))],
                Vec::new(),
            ),
        ];
        (f, [a, b, t])
    }

    #[test]
    fn a_guard_whose_inputs_the_first_branch_keeps_is_tested_once() {
        let (mut f, [a, _, t]) = guarded_twice(|t| vec![Stmt::Assign(t, Expr::Int(1))]);
        merge_repeated_guards(&mut f);
        let output = ArrayRef::Values(OperandId(0));
        let Stmt::If(_, then, _) = &f.body[2] else {
            panic!("{:?}", f.body)
        };
        assert_eq!(f.body.len(), 3, "{:?}", f.body);
        assert_eq!(
            then,
            &vec![Stmt::Assign(t, Expr::Int(1)), store(output, Expr::Var(a))]
        );
    }

    /// [`guarded_twice`] with the repeated test under `if (t > 0)`, the first branch
    /// `first`.
    fn under_further_condition(first: impl FnOnce(Var) -> Vec<Stmt>) -> (Function, Expr) {
        let (mut f, [_, _, t]) = guarded_twice(first);
        let repeated: Vec<Stmt> = f.body.drain(3..).collect();
        let further = Expr::bin(BinOp::Gt, Expr::Var(t), Expr::Int(0));
        f.body.push(Stmt::If(further.clone(), repeated, Vec::new()));
        (f, further)
    }

    #[test]
    fn a_repeated_guard_under_a_further_condition_joins_the_first_under_it() {
        let (mut f, further) = under_further_condition(|_| Vec::new());
        merge_repeated_guards(&mut f);
        let Stmt::Decl(a, _) = f.body[1] else {
            panic!("{:?}", f.body)
        };
        let output = ArrayRef::Values(OperandId(0));
        let joined = vec![Stmt::If(
            further,
            vec![store(output, Expr::Var(a))],
            Vec::new(),
        )];
        assert!(
            matches!(&f.body[..], [_, _, Stmt::If(_, then, _)] if *then == joined),
            "{:?}",
            f.body
        );
        // Not where the first branch changes the further condition's variable.
        let (mut f, _) = under_further_condition(|t| vec![Stmt::Assign(t, Expr::Int(1))]);
        let before = f.body.clone();
        merge_repeated_guards(&mut f);
        assert_eq!(f.body, before);
    }

    #[test]
    fn a_guard_whose_inputs_the_first_branch_changes_is_tested_again() {
        // The first branch writes the array the guard's value is loaded from.
        let (mut f, _) = guarded_twice(|_| vec![store(BOUNDS, Expr::Int(9))]);
        let before = f.body.clone();
        merge_repeated_guards(&mut f);
        assert_eq!(f.body, before);
        // The first branch assigns a variable the guard reads.
        let (mut f, [a, ..]) = guarded_twice(|_| Vec::new());
        let Stmt::If(_, then, _) = &mut f.body[2] else {
            unreachable!()
        };
        then.push(Stmt::Assign(a, Expr::Int(7)));
        let guard = Expr::bin(BinOp::Lt, Expr::Var(a), Expr::Int(5));
        assert!(matches!(&f.body[2], Stmt::If(g, ..) if *g == guard));
        let before = f.body.clone();
        merge_repeated_guards(&mut f);
        assert_eq!(f.body, before);
    }
}
