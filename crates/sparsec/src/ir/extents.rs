//! Extents fixed when compiling: `fix_params` replaces the parameters of chosen index
//! variables' extents by their values, so that a backend compiles loops over them with a
//! known trip count, and with them the sizes of the storage levels those variables index.
//!
//! A kernel runs only on tensors of the shapes it was compiled for (the runtime checks
//! them), so any extent could be fixed; lowering fixes only small ones that index dense
//! tensors alone (`lower::fixed_params`): an MTTKRP's or SpMM's rank. gcc then unrolls the
//! loop over such a row into a few vector operations with no remainder, and keeps what it
//! sums in registers. MTTKRP with rank 32, `B` in `sss`, one thread: 26.2 to 19.3 ms on
//! a uniform 1000^3 tensor with 2M entries (C harness, the generated loop nest with and
//! without a constant trip count). Extents that index a sparse operand stay parameters,
//! so that one compiled kernel serves every input of its formats from the disk cache.
//!
//! A level that stores a mode has the mode's size, which is the extent of any variable
//! that indexes the mode: fixed with it, a dense row's length is the same constant as the
//! loop over the row (`ir::zero_rows` compares the two), and a row's start is a multiple
//! of a constant.

use std::collections::BTreeMap;

use super::{simplify, simplify_stmts, visit, Expr, Function, ParamRef};

/// Replace each parameter `p` of `fixed` by `fixed[p]` wherever `function` reads it (its
/// body, its locals' lengths and its assumptions), and fold the constants that leaves.
/// Extents stay in the signature (every extent is passed), unread.
pub fn fix_params(function: &mut Function, fixed: &BTreeMap<ParamRef, i64>) {
    if fixed.is_empty() {
        return;
    }
    let mut replace = |e: &mut Expr| {
        if let Expr::Param(p) = e {
            if let Some(&value) = fixed.get(p) {
                *e = Expr::Int(value);
            }
        }
    };
    visit::walk_stmt_exprs_mut(&mut function.body, &mut replace);
    for local in &mut function.locals {
        visit::walk_expr_mut(&mut local.len, &mut replace);
        local.len = simplify(&local.len);
    }
    for (condition, _) in &mut function.assumptions {
        visit::walk_expr_mut(condition, &mut replace);
        *condition = simplify(condition);
    }
    if let Some(rows) = &mut function.dense_rows {
        visit::walk_expr_mut(&mut rows.rows, &mut replace);
        rows.rows = simplify(&rows.rows);
    }
    function.body = simplify_stmts(std::mem::take(&mut function.body));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{visit, Loop, LoopKind, OutputMode, Stmt, Type};

    fn reads_extent(function: &Function, n: usize) -> bool {
        let mut found = false;
        visit::walk_stmt_exprs(&function.body, &mut |e| {
            found |= matches!(e, Expr::Param(ParamRef::Extent(m)) if *m == n);
        });
        found
    }

    /// A loop over each of two extents, nested.
    fn two_loops() -> Function {
        let mut f = Function::new(
            Vec::new(),
            2,
            OutputMode::Dense {
                accumulate: false,
                zeroed_by_kernel: false,
            },
        );
        let i = f.fresh_var("i", Type::Index);
        let j = f.fresh_var("j", Type::Index);
        let inner = Stmt::For(Loop {
            var: j,
            start: Expr::Int(0),
            end: Expr::bin(
                crate::ir::BinOp::Mul,
                Expr::Param(ParamRef::Extent(1)),
                Expr::Int(2),
            ),
            kind: LoopKind::Serial,
            body: Vec::new(),
        });
        f.body = vec![Stmt::For(Loop {
            var: i,
            start: Expr::Int(0),
            end: Expr::Param(ParamRef::Extent(0)),
            kind: LoopKind::Serial,
            body: vec![inner],
        })];
        f
    }

    #[test]
    fn fixed_extents_become_constants_and_fold() {
        let mut f = two_loops();
        fix_params(&mut f, &BTreeMap::from([(ParamRef::Extent(1), 16)]));
        assert!(
            reads_extent(&f, 0),
            "extent 0 was not fixed and stays a parameter"
        );
        assert!(!reads_extent(&f, 1));
        let Stmt::For(outer) = &f.body[0] else {
            panic!("the outer loop is kept")
        };
        let Stmt::For(inner) = &outer.body[0] else {
            panic!("the inner loop is kept")
        };
        assert_eq!(inner.end, Expr::Int(32), "16 * 2 folds");
    }

    #[test]
    fn no_fixed_extent_leaves_the_function_as_it_was() {
        let mut f = two_loops();
        let before = f.clone();
        fix_params(&mut f, &BTreeMap::new());
        assert_eq!(f, before);
    }
}
