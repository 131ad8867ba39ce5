//! Algebraic clean-up of IR expressions: constant folding and the identities that make
//! inlined level functions read like hand-written code (`0 * N + i` becomes `i`).

use super::{BinOp, Expr, Stmt};

/// Simplify an expression bottom-up.
pub fn simplify(expr: &Expr) -> Expr {
    match expr {
        Expr::Bin(op, a, b) => fold(*op, simplify(a), simplify(b)),
        Expr::Neg(a) => match simplify(a) {
            Expr::Int(v) => Expr::Int(-v),
            Expr::Neg(inner) => *inner,
            other => Expr::Neg(Box::new(other)),
        },
        Expr::Not(a) => match simplify(a) {
            Expr::Bool(b) => Expr::Bool(!b),
            other => Expr::Not(Box::new(other)),
        },
        Expr::Load(array, index) => Expr::Load(*array, Box::new(simplify(index))),
        Expr::Select(c, a, b) => match simplify(c) {
            Expr::Bool(true) => simplify(a),
            Expr::Bool(false) => simplify(b),
            c => Expr::Select(Box::new(c), Box::new(simplify(a)), Box::new(simplify(b))),
        },
        Expr::Call(f, array, args) => Expr::Call(*f, *array, args.iter().map(simplify).collect()),
        other => other.clone(),
    }
}

fn fold(op: BinOp, a: Expr, b: Expr) -> Expr {
    use Expr::{Bool, Int};
    match (op, &a, &b) {
        (BinOp::Add, Int(x), Int(y)) => Int(x + y),
        (BinOp::Sub, Int(x), Int(y)) => Int(x - y),
        (BinOp::Mul, Int(x), Int(y)) => Int(x * y),
        (BinOp::Div, Int(x), Int(y)) if *y > 0 && *x >= 0 => Int(x / y),
        (BinOp::Div, _, Int(1)) => a,
        (BinOp::Add, Int(0), _) => b,
        (BinOp::Add | BinOp::Sub, _, Int(0)) => a,
        (BinOp::Mul, Int(0), _) | (BinOp::Mul, _, Int(0)) => Int(0),
        (BinOp::Mul, Int(1), _) => b,
        (BinOp::Mul, _, Int(1)) => a,
        (BinOp::Min | BinOp::Max, x, y) if x == y => a,
        (BinOp::And, Bool(true), _) => b,
        (BinOp::And, _, Bool(true)) => a,
        (BinOp::And, Bool(false), _) | (BinOp::And, _, Bool(false)) => Bool(false),
        (BinOp::Or, Bool(false), _) => b,
        (BinOp::Or, _, Bool(false)) => a,
        (BinOp::Or, Bool(true), _) | (BinOp::Or, _, Bool(true)) => Bool(true),
        (BinOp::Eq, x, y) if x == y && is_pure(x) => Bool(true),
        (BinOp::Lt, Int(x), Int(y)) => Bool(x < y),
        _ => Expr::Bin(op, Box::new(a), Box::new(b)),
    }
}

fn is_pure(e: &Expr) -> bool {
    !matches!(e, Expr::Call(..))
}

/// Simplify every expression in a statement list and drop statements that became trivial.
pub fn simplify_stmts(stmts: Vec<Stmt>) -> Vec<Stmt> {
    stmts.into_iter().filter_map(simplify_stmt).collect()
}

fn simplify_stmt(stmt: Stmt) -> Option<Stmt> {
    Some(match stmt {
        Stmt::Decl(n, e) => Stmt::Decl(n, simplify(&e)),
        Stmt::Assign(n, e) => Stmt::Assign(n, simplify(&e)),
        Stmt::Store {
            array,
            index,
            value,
            accumulate,
        } => Stmt::Store {
            array,
            index: simplify(&index),
            value: simplify(&value),
            accumulate,
        },
        Stmt::For {
            var,
            start,
            end,
            body,
            kind,
        } => Stmt::For {
            var,
            start: simplify(&start),
            end: simplify(&end),
            body: simplify_stmts(body),
            kind,
        },
        Stmt::Atomic(inner) => match simplify_stmt(*inner)? {
            s @ (Stmt::Store { .. } | Stmt::Assign(..)) => Stmt::Atomic(Box::new(s)),
            other => other,
        },
        Stmt::While(c, body) => match simplify(&c) {
            Expr::Bool(false) => return None,
            c => Stmt::While(c, simplify_stmts(body)),
        },
        Stmt::If(c, t, e) => match simplify(&c) {
            Expr::Bool(true) => Stmt::Block(simplify_stmts(t)),
            Expr::Bool(false) => Stmt::Block(simplify_stmts(e)),
            c => Stmt::If(c, simplify_stmts(t), simplify_stmts(e)),
        },
        Stmt::Emit { coords, value } => Stmt::Emit {
            coords: coords.iter().map(simplify).collect(),
            value: simplify(&value),
        },
        Stmt::Block(b) => Stmt::Block(simplify_stmts(b)),
        Stmt::OrderTouched { list, len, flags } => Stmt::OrderTouched {
            list,
            len: simplify(&len),
            flags,
        },
    })
}
