//! Generic traversals of the IR, so that passes name only the nodes they care about.

use super::{Expr, Loop, LoopKind, Reduction, Stmt, Store};

/// The direct subexpressions of an expression, shared or mutable: one definition of the
/// IR's expression shapes for both traversals.
macro_rules! subexpressions {
    ($e:expr, $each:expr) => {
        match $e {
            Expr::Int(_)
            | Expr::Float(_)
            | Expr::Bool(_)
            | Expr::Var(_)
            | Expr::Param(_)
            | Expr::Symbol(_) => {}
            Expr::Load(_, i) => $each(i),
            Expr::Neg(a) | Expr::Not(a) => $each(a),
            Expr::Bin(_, a, b) => {
                $each(a);
                $each(b);
            }
            Expr::Select(c, a, b) => {
                $each(c);
                $each(a);
                $each(b);
            }
            Expr::Call(_, _, args) | Expr::Math(_, args) => args.into_iter().for_each(|a| $each(a)),
        }
    };
}

/// Call `f` on `e` and every subexpression, parents before children.
pub fn walk_expr<'a>(e: &'a Expr, f: &mut impl FnMut(&'a Expr)) {
    f(e);
    subexpressions!(e, |sub: &'a Expr| walk_expr(sub, f));
}

/// Call `f` on every subexpression of `e` and then on `e` itself, children first, so
/// that `f` may replace a node after its children were rewritten.
pub fn walk_expr_mut(e: &mut Expr, f: &mut impl FnMut(&mut Expr)) {
    subexpressions!(&mut *e, |sub: &mut Expr| walk_expr_mut(sub, f));
    f(e);
}

/// The bodies nested directly inside a statement, shared or mutable: one definition of
/// the IR's statement nesting for both.
macro_rules! nested_bodies {
    ($s:expr, $one:path $(, $mutable:tt)?) => {
        match $s {
            Stmt::For(Loop { body, .. }) | Stmt::While(_, body) | Stmt::Block(body) => vec![body],
            Stmt::If(_, then, otherwise) => vec![then, otherwise],
            Stmt::Atomic(inner) => vec![$one(&$($mutable)? **inner)],
            Stmt::Decl(..)
            | Stmt::Assign(..)
            | Stmt::Store(Store { .. })
            | Stmt::Emit { .. }
            | Stmt::OrderTouched { .. }
            | Stmt::Prefetch { .. }
            | Stmt::Barrier
            | Stmt::Launch(_) => Vec::new(),
        }
    };
}

/// The statements nested directly inside `s` (bodies and branches), in order.
pub fn children(s: &Stmt) -> Vec<&[Stmt]> {
    nested_bodies!(s, std::slice::from_ref)
}

/// The statements nested directly inside `s`, mutable, for passes that rewrite bodies.
pub fn children_mut(s: &mut Stmt) -> Vec<&mut [Stmt]> {
    nested_bodies!(s, std::slice::from_mut, mut)
}

/// The expressions a statement evaluates itself, shared or mutable: one definition of
/// where statements hold expressions for both.
macro_rules! own_expressions {
    ($s:expr $(, $mutable:tt)?) => {
        match $s {
            Stmt::Decl(_, e) | Stmt::Assign(_, e) | Stmt::While(e, _) | Stmt::If(e, _, _) => {
                vec![e]
            }
            Stmt::Store(Store { index, value, .. }) => vec![index, value],
            Stmt::For(Loop {
                start, end, kind, ..
            }) => {
                let mut out = vec![start, end];
                match kind {
                    LoopKind::Parallel {
                        reductions, locals, ..
                    } => {
                        out.extend(locals.into_iter().map(|l| &$($mutable)? l.len));
                        out.extend(reductions.into_iter().filter_map(|r| match r {
                            Reduction::Array(_, len) => Some(len),
                            Reduction::Scalar(_) => None,
                        }));
                    }
                    LoopKind::Team { work, all } => out.extend([work, all]),
                    LoopKind::Serial | LoopKind::Unrolled(_) => {}
                }
                out
            }
            Stmt::Emit { coords, value } => {
                coords.into_iter().chain(std::iter::once(value)).collect()
            }
            Stmt::OrderTouched { len, width, .. } => vec![len, width],
            Stmt::Prefetch { index, .. } => vec![index],
            Stmt::Atomic(_) | Stmt::Block(_) | Stmt::Barrier | Stmt::Launch(_) => Vec::new(),
        }
    };
}

/// The expressions `s` evaluates itself (not those of nested statements), including the
/// lengths of scratch arrays a parallel loop allocates and the sizes of array reductions.
pub fn own_exprs(s: &Stmt) -> Vec<&Expr> {
    own_expressions!(s)
}

/// The expressions `s` evaluates itself, mutable, for passes that rewrite them.
pub fn own_exprs_mut(s: &mut Stmt) -> Vec<&mut Expr> {
    own_expressions!(s, mut)
}

/// Call `f` on every statement of `stmts` and of their nested bodies, parents first.
pub fn walk_stmts<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a Stmt)) {
    for s in stmts {
        f(s);
        for body in children(s) {
            walk_stmts(body, f);
        }
    }
}

/// Call `f` on every expression and subexpression of `stmts`, nested bodies included.
pub fn walk_stmt_exprs<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a Expr)) {
    walk_stmts(stmts, &mut |s| {
        for e in own_exprs(s) {
            walk_expr(e, f);
        }
    });
}

/// Call `f` on every expression and subexpression of `stmts`, nested bodies included,
/// children before parents (see [`walk_expr_mut`]).
pub fn walk_stmt_exprs_mut(stmts: &mut [Stmt], f: &mut impl FnMut(&mut Expr)) {
    for s in stmts {
        for e in own_exprs_mut(s) {
            walk_expr_mut(e, f);
        }
        for body in children_mut(s) {
            walk_stmt_exprs_mut(body, f);
        }
    }
}
