//! Algebraic clean-up of IR expressions: constant folding and the identities that make
//! inlined level functions read like hand-written code (`0 * N + i` becomes `i`).

use super::{BinOp, Expr, Loop, LoopKind, Stmt, Store};

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
        Expr::Call(f, array, args) => Expr::Call(f, *array, args.iter().map(simplify).collect()),
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
        (BinOp::Min, Int(x), Int(y)) => Int(*x.min(y)),
        (BinOp::Max, Int(x), Int(y)) => Int(*x.max(y)),
        (BinOp::Min | BinOp::Max, x, y) if x == y => a,
        (BinOp::And, Bool(true), _) => b,
        (BinOp::And, _, Bool(true)) => a,
        (BinOp::And, Bool(false), _) | (BinOp::And, _, Bool(false)) => Bool(false),
        (BinOp::Or, Bool(false), _) => b,
        (BinOp::Or, _, Bool(false)) => a,
        (BinOp::Or, Bool(true), _) | (BinOp::Or, _, Bool(true)) => Bool(true),
        (BinOp::Eq, x, y) if x == y && is_pure(x) => Bool(true),
        (BinOp::Lt, Int(x), Int(y)) => Bool(x < y),
        (BinOp::Le, Int(x), Int(y)) => Bool(x <= y),
        (BinOp::Gt, Int(x), Int(y)) => Bool(x > y),
        (BinOp::Ge, Int(x), Int(y)) => Bool(x >= y),
        (BinOp::Eq, Int(x), Int(y)) => Bool(x == y),
        (BinOp::Ne, Int(x), Int(y)) => Bool(x != y),
        _ => Expr::Bin(op, Box::new(a), Box::new(b)),
    }
}

fn is_pure(e: &Expr) -> bool {
    !matches!(e, Expr::Call(..))
}

/// Whether `end` is `start + 1` once both are simplified: a loop between them runs once,
/// and two bounds read at them delimit one segment.
pub fn is_successor(start: &Expr, end: &Expr) -> bool {
    simplify(&(start.clone() + Expr::Int(1))) == simplify(end)
}

/// Simplify every expression in a statement list and drop statements that became trivial.
pub fn simplify_stmts(stmts: Vec<Stmt>) -> Vec<Stmt> {
    stmts.into_iter().filter_map(simplify_stmt).collect()
}

fn simplify_stmt(stmt: Stmt) -> Option<Stmt> {
    Some(match stmt {
        Stmt::Decl(n, e) => Stmt::Decl(n, simplify(&e)),
        Stmt::Assign(n, e) => Stmt::Assign(n, simplify(&e)),
        Stmt::Store(store) => Stmt::Store(Store {
            index: simplify(&store.index),
            value: simplify(&store.value),
            ..store
        }),
        Stmt::For(l) => {
            let start = simplify(&l.start);
            let end = simplify(&l.end);
            let body = simplify_stmts(l.body);
            // A serial loop over the one position below a computed one (a singleton
            // level's) is its body: code generators then see no loop to unroll or keep
            // serial, and a loop around it (ELL's rows, under a slot) vectorises. Loops of
            // a constant extent of 1 stay: their code paths (rows summed in registers)
            // expect them.
            let serial = matches!(l.kind, LoopKind::Serial | LoopKind::Unrolled(_));
            let computed = !matches!(start, Expr::Int(_));
            if serial && computed && is_successor(&start, &end) {
                let mut block = vec![Stmt::Decl(l.var, start)];
                block.extend(body);
                Stmt::Block(block)
            } else {
                Stmt::For(Loop {
                    start,
                    end,
                    body,
                    ..l
                })
            }
        }
        Stmt::Atomic(inner) => match simplify_stmt(*inner)? {
            s @ (Stmt::Store(_) | Stmt::Assign(..)) => Stmt::Atomic(Box::new(s)),
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
        Stmt::OrderTouched {
            list,
            len,
            flags,
            marks,
            width,
        } => Stmt::OrderTouched {
            list,
            len: simplify(&len),
            flags,
            marks,
            width: simplify(&width),
        },
        Stmt::Prefetch { array, index } => Stmt::Prefetch {
            array,
            index: simplify(&index),
        },
        Stmt::Barrier | Stmt::Launch(_) => stmt,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn int(v: i64) -> Expr {
        Expr::Int(v)
    }
    /// The variable a short name stands for in these tests (handles are all the IR knows).
    fn handle(n: &str) -> super::super::Var {
        super::super::Var(n.bytes().fold(0u32, |h, b| h * 131 + b as u32))
    }
    fn var(n: &str) -> Expr {
        Expr::Var(handle(n))
    }

    #[test]
    fn inlined_level_functions_read_like_hand_written_code() {
        // A dense level's locate under a root: `0 * N + i`.
        assert_eq!(simplify(&(int(0) * var("N") + var("i"))), var("i"));
        assert_eq!(simplify(&(var("x") + int(0))), var("x"));
        assert_eq!(simplify(&(int(0) + var("x"))), var("x"));
        assert_eq!(simplify(&(var("x") - int(0))), var("x"));
        assert_eq!(simplify(&(int(1) * var("x"))), var("x"));
        assert_eq!(simplify(&(var("x") * int(1))), var("x"));
        assert_eq!(simplify(&(var("x") * int(0))), int(0));
        assert_eq!(simplify(&Expr::bin(BinOp::Div, var("x"), int(1))), var("x"));
        assert_eq!(
            simplify(&Expr::Neg(Box::new(Expr::Neg(Box::new(var("x")))))),
            var("x")
        );
    }

    #[test]
    fn constants_fold_through_nesting() {
        // (2 * 3 + 0 * N) * (1 * i) + (4 - 4) -> 6 * i
        let e = (int(2) * int(3) + int(0) * var("N")) * (int(1) * var("i")) + (int(4) - int(4));
        assert_eq!(simplify(&e), int(6) * var("i"));
        // ((0 * N + 1) * 2 + j) - 0 -> 2 + j
        let e = ((int(0) * var("N") + int(1)) * int(2) + var("j")) - int(0);
        assert_eq!(simplify(&e), int(2) + var("j"));
        assert_eq!(simplify(&Expr::bin(BinOp::Div, int(7), int(2))), int(3));
        // C truncates towards zero; the fold only handles the cases where that agrees
        // with any rounding, and leaves the rest to the compiler.
        let negative = Expr::bin(BinOp::Div, int(-7), int(2));
        assert_eq!(simplify(&negative), negative);
        let by_zero = Expr::bin(BinOp::Div, int(7), int(0));
        assert_eq!(simplify(&by_zero), by_zero);
    }

    #[test]
    fn min_and_max_of_constants_fold() {
        assert_eq!(simplify(&Expr::min(int(3), int(5))), int(3));
        assert_eq!(simplify(&Expr::max(int(3), int(5))), int(5));
        // A split's inner bound `min(f, N - i0*f)` with everything known.
        let e = Expr::min(int(4), int(10) - int(2) * int(4));
        assert_eq!(simplify(&e), int(2));
        assert_eq!(simplify(&Expr::min(var("x"), var("x"))), var("x"));
        let open = Expr::max(var("x"), int(0));
        assert_eq!(simplify(&open), open);
    }

    #[test]
    fn comparisons_of_constants_fold_conditions() {
        for (op, expected) in [
            (BinOp::Lt, true),
            (BinOp::Le, true),
            (BinOp::Gt, false),
            (BinOp::Ge, false),
            (BinOp::Eq, false),
            (BinOp::Ne, true),
        ] {
            assert_eq!(
                simplify(&Expr::bin(op, int(2), int(3))),
                Expr::Bool(expected),
                "{op:?}"
            );
        }
        let c = Expr::and(Expr::lt(int(0), int(1)), Expr::lt(var("p"), var("end")));
        assert_eq!(simplify(&c), Expr::lt(var("p"), var("end")));
        let c = Expr::and(Expr::lt(var("p"), var("end")), Expr::lt(int(1), int(0)));
        assert_eq!(simplify(&c), Expr::Bool(false));
        let c = Expr::bin(
            BinOp::Or,
            Expr::Bool(false),
            Expr::Not(Box::new(Expr::Bool(false))),
        );
        assert_eq!(simplify(&c), Expr::Bool(true));
        let s = Expr::Select(
            Box::new(Expr::eq(int(1), int(1))),
            Box::new(var("a")),
            Box::new(var("b")),
        );
        assert_eq!(simplify(&s), var("a"));
    }

    #[test]
    fn statements_under_constant_conditions_fold() {
        let set = |v: i64| Stmt::Assign(handle("x"), int(v));
        let stmts = vec![
            Stmt::If(Expr::lt(int(0), int(1)), vec![set(1)], vec![set(2)]),
            Stmt::If(Expr::lt(int(1), int(0)), vec![set(3)], vec![set(4)]),
            Stmt::While(Expr::Bool(false), vec![set(5)]),
            Stmt::If(Expr::lt(var("p"), int(1)), vec![set(6)], vec![]),
            Stmt::Atomic(Box::new(Stmt::Assign(handle("x"), int(0) + var("y")))),
        ];
        assert_eq!(
            simplify_stmts(stmts),
            vec![
                Stmt::Block(vec![set(1)]),
                Stmt::Block(vec![set(4)]),
                Stmt::If(Expr::lt(var("p"), int(1)), vec![set(6)], vec![]),
                Stmt::Atomic(Box::new(Stmt::Assign(handle("x"), var("y")))),
            ]
        );
    }

    /// C semantics for well-typed integer and boolean expressions (booleans as 0/1,
    /// `&&`/`||`/`?:` short-circuit); `None` where C is undefined (overflow, x/0).
    fn eval(e: &Expr, env: &[i64; 3]) -> Option<i64> {
        Some(match e {
            Expr::Int(v) => *v,
            Expr::Bool(b) => *b as i64,
            Expr::Var(n) => env[["a", "b", "c"].iter().position(|m| handle(m) == *n)?],
            Expr::Neg(a) => eval(a, env)?.checked_neg()?,
            Expr::Not(a) => (eval(a, env)? == 0) as i64,
            Expr::Select(c, a, b) => {
                if eval(c, env)? != 0 {
                    eval(a, env)?
                } else {
                    eval(b, env)?
                }
            }
            Expr::Bin(BinOp::And, a, b) => (eval(a, env)? != 0 && eval(b, env)? != 0) as i64,
            Expr::Bin(BinOp::Or, a, b) => (eval(a, env)? != 0 || eval(b, env)? != 0) as i64,
            Expr::Bin(op, a, b) => {
                let (x, y) = (eval(a, env)?, eval(b, env)?);
                match op {
                    BinOp::Add => x.checked_add(y)?,
                    BinOp::Sub => x.checked_sub(y)?,
                    BinOp::Mul => x.checked_mul(y)?,
                    BinOp::Div => x.checked_div(y)?,
                    BinOp::Rem => x.checked_rem(y)?,
                    BinOp::Min => x.min(y),
                    BinOp::Max => x.max(y),
                    BinOp::Lt => (x < y) as i64,
                    BinOp::Le => (x <= y) as i64,
                    BinOp::Gt => (x > y) as i64,
                    BinOp::Ge => (x >= y) as i64,
                    BinOp::Eq => (x == y) as i64,
                    BinOp::Ne => (x != y) as i64,
                    BinOp::And | BinOp::Or => unreachable!(),
                }
            }
            _ => return None,
        })
    }

    fn size(e: &Expr) -> usize {
        match e {
            Expr::Neg(a) | Expr::Not(a) => 1 + size(a),
            Expr::Bin(_, a, b) => 1 + size(a) + size(b),
            Expr::Select(c, a, b) => 1 + size(c) + size(a) + size(b),
            _ => 1,
        }
    }

    /// Conditions over integer expressions `int`.
    fn condition(int: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
        let compare = prop::sample::select(vec![
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
            BinOp::Eq,
            BinOp::Ne,
        ]);
        let atom = prop_oneof![
            any::<bool>().prop_map(Expr::Bool),
            (compare, int.clone(), int).prop_map(|(op, a, b)| Expr::bin(op, a, b)),
        ];
        atom.prop_recursive(2, 8, 2, |c| {
            let logic = prop::sample::select(vec![BinOp::And, BinOp::Or]);
            prop_oneof![
                (logic, c.clone(), c.clone()).prop_map(|(op, a, b)| Expr::bin(op, a, b)),
                c.prop_map(|a| Expr::Not(Box::new(a))),
            ]
        })
        .boxed()
    }

    /// Integer expressions over `a`, `b`, `c` rich in the constants the folds look for.
    fn integer() -> BoxedStrategy<Expr> {
        let leaf = prop_oneof![
            (-2i64..=3).prop_map(Expr::Int),
            prop::sample::select(vec!["a", "b", "c"]).prop_map(var),
        ];
        leaf.prop_recursive(5, 48, 3, |e| {
            let arith = prop::sample::select(vec![
                BinOp::Add,
                BinOp::Sub,
                BinOp::Mul,
                BinOp::Div,
                BinOp::Rem,
                BinOp::Min,
                BinOp::Max,
            ]);
            prop_oneof![
                4 => (arith, e.clone(), e.clone()).prop_map(|(op, a, b)| Expr::bin(op, a, b)),
                1 => e.clone().prop_map(|a| Expr::Neg(Box::new(a))),
                1 => (condition(e.clone()), e.clone(), e).prop_map(|(c, a, b)| {
                    Expr::Select(Box::new(c), Box::new(a), Box::new(b))
                }),
            ]
        })
        .boxed()
    }

    proptest! {
        #[test]
        fn simplification_preserves_the_value(
            e in prop_oneof![integer(), condition(integer())],
            env in prop::array::uniform3(-4i64..=4),
        ) {
            let simple = simplify(&e);
            if let Some(v) = eval(&e, &env) {
                prop_assert_eq!(eval(&simple, &env), Some(v), "{:?} became {:?}", e, simple);
            }
            prop_assert!(size(&simple) <= size(&e), "{:?} grew into {:?}", e, simple);
        }
    }
}
