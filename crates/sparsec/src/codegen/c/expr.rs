//! C expressions.

use crate::ir::{BinOp, Expr, Names};

/// Print an expression, fully parenthesised where precedence could be misread.
pub(in crate::codegen) fn expr(names: &Names, e: &Expr) -> String {
    match e {
        Expr::Int(v) => v.to_string(),
        Expr::Float(v) => {
            if v.is_finite() {
                let s = format!("{v:?}");
                if s.contains(['.', 'e', 'E']) {
                    s
                } else {
                    format!("{s}.0")
                }
            } else if v.is_nan() {
                "NAN".into()
            } else if *v > 0.0 {
                "INFINITY".into()
            } else {
                "(-INFINITY)".into()
            }
        }
        Expr::Bool(b) => (*b as i32).to_string(),
        Expr::Var(v) => names.var(*v).to_string(),
        Expr::Param(p) => names.param(p).to_string(),
        Expr::Symbol(s) => unreachable!("lowering resolves every symbol ({s:?})"),
        // A narrow index widens before any arithmetic, which may exceed `int32_t`.
        Expr::Load(a, i) if names.is_narrow(a) => {
            format!("(int64_t){}[{}]", names.array(a), expr(names, i))
        }
        Expr::Load(a, i) => format!("{}[{}]", names.array(a), expr(names, i)),
        Expr::Neg(a) => format!("-{}", atom(names, a)),
        Expr::Not(a) => format!("!{}", atom(names, a)),
        Expr::Bin(BinOp::Min, a, b) => {
            format!("sparsec_min({}, {})", expr(names, a), expr(names, b))
        }
        Expr::Bin(BinOp::Max, a, b) => {
            format!("sparsec_max({}, {})", expr(names, a), expr(names, b))
        }
        Expr::Bin(op, a, b) => {
            let sym = op.c_operator().expect("min and max are printed as calls");
            format!("{} {sym} {}", atom(names, a), atom(names, b))
        }
        Expr::Select(c, a, b) => format!(
            "({} ? {} : {})",
            expr(names, c),
            expr(names, a),
            expr(names, b)
        ),
        Expr::Math(f, args) => {
            let args: Vec<String> = args.iter().map(|a| expr(names, a)).collect();
            f.c_expr(&args)
        }
        Expr::Call(helper, array, args) => {
            let args: Vec<String> = args.iter().map(|a| expr(names, a)).collect();
            format!(
                "{}({}, {})",
                helper.name,
                names.array(array),
                args.join(", ")
            )
        }
    }
}

/// An operand of a binary operator: parenthesised unless it binds tighter than any.
pub(super) fn atom(names: &Names, e: &Expr) -> String {
    match e {
        Expr::Bin(op, ..) if !matches!(op, BinOp::Min | BinOp::Max) => {
            format!("({})", expr(names, e))
        }
        Expr::Neg(_) => format!("({})", expr(names, e)),
        Expr::Float(v) if *v < 0.0 => format!("({})", expr(names, e)),
        Expr::Int(v) if *v < 0 => format!("({v})"),
        _ => expr(names, e),
    }
}
