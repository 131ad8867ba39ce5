//! Rewrites of the right-hand side that only lowering performs: dropping the operands a
//! lattice case lacks, finding the sums and precomputed products a loop must compute first,
//! and replacing them by the temporary or workspace that then holds them.

use crate::ir::{MathFn, Scratch, Var};
use crate::notation::ast::Op;
use crate::notation::cin::VarId;
use crate::schedule::lexpr::{LExpr, Precompute};

impl LExpr {
    /// Replace every occurrence in `absent` by `Zero` and fold the zeros away.
    pub(super) fn without(&self, absent: &dyn Fn(usize) -> bool) -> LExpr {
        match self {
            LExpr::Access(o) if absent(*o) => LExpr::Zero,
            LExpr::Neg(a) => match a.without(absent) {
                LExpr::Zero => LExpr::Zero,
                a => LExpr::Neg(Box::new(a)),
            },
            LExpr::Binary(op, a, b) => {
                let (a, b) = (a.without(absent), b.without(absent));
                match (op, &a, &b) {
                    (Op::Mul, LExpr::Zero, _) | (Op::Mul, _, LExpr::Zero) => LExpr::Zero,
                    (Op::Div, LExpr::Zero, _) => LExpr::Zero,
                    // A missing denominator is a real zero: keep IEEE semantics (x/0).
                    (Op::Div, _, LExpr::Zero) => {
                        LExpr::Binary(Op::Div, Box::new(a), Box::new(LExpr::Literal(0.0)))
                    }
                    (Op::Add, LExpr::Zero, _) => b,
                    (Op::Add | Op::Sub, _, LExpr::Zero) => a,
                    (Op::Sub, LExpr::Zero, _) => LExpr::Neg(Box::new(b)),
                    _ => LExpr::Binary(*op, Box::new(a), Box::new(b)),
                }
            }
            LExpr::Math(f, args) => {
                let args: Vec<LExpr> = args.iter().map(|a| a.without(absent)).collect();
                if f.keeps_zero() && args.iter().all(|a| *a == LExpr::Zero) {
                    LExpr::Zero
                } else {
                    LExpr::Math(*f, args)
                }
            }
            LExpr::Sum(v, inner, a) => match a.without(absent) {
                LExpr::Zero => LExpr::Zero,
                a => LExpr::Sum(*v, inner.clone(), Box::new(a)),
            },
            LExpr::Precomputed(p) => match p.body.without(absent) {
                LExpr::Zero => LExpr::Zero,
                body => LExpr::Precomputed(Box::new(Precompute {
                    body,
                    ..(**p).clone()
                })),
            },
            other => other.clone(),
        }
    }
    /// Zero where a complemented structural mask excludes the coordinate: the right-hand
    /// side `(1 - pattern(M)) * rhs` (as `C<!pattern(M)>` is parsed) when `present` says
    /// the mask `M` has an entry here. The case then computes nothing and stores nothing,
    /// as GraphBLAS leaves the entries a mask excludes absent.
    pub(super) fn masked_out(&self, present: &dyn Fn(usize) -> bool) -> bool {
        let LExpr::Binary(Op::Mul, factor, _) = self else {
            return false;
        };
        let LExpr::Binary(Op::Sub, one, pattern) = &**factor else {
            return false;
        };
        matches!(
            (&**one, &**pattern),
            (LExpr::Literal(x), LExpr::Math(MathFn::Pattern, args))
                if *x == 1.0 && matches!(args[0], LExpr::Access(o) if present(o))
        )
    }

    /// The outermost precomputed subexpression for which `starts` holds.
    pub(super) fn find_precompute(
        &self,
        starts: &dyn Fn(&Precompute) -> bool,
    ) -> Option<&Precompute> {
        match self {
            LExpr::Precomputed(p) if starts(p) => Some(p),
            LExpr::Precomputed(p) => p.body.find_precompute(starts),
            LExpr::Sum(_, _, a) | LExpr::Neg(a) => a.find_precompute(starts),
            LExpr::Binary(_, a, b) => a
                .find_precompute(starts)
                .or_else(|| b.find_precompute(starts)),
            LExpr::Math(_, args) => args.iter().find_map(|a| a.find_precompute(starts)),
            _ => None,
        }
    }

    /// The variables of every workspace read in the expression.
    pub(super) fn workspace_vars(&self) -> Vec<VarId> {
        match self {
            LExpr::WorkspaceRead(_, vars) => vars.clone(),
            LExpr::Precomputed(p) => p.body.workspace_vars(),
            LExpr::Sum(_, _, a) | LExpr::Neg(a) => a.workspace_vars(),
            LExpr::Binary(_, a, b) => {
                let mut vars = a.workspace_vars();
                vars.extend(b.workspace_vars());
                vars
            }
            LExpr::Math(_, args) => args.iter().flat_map(|a| a.workspace_vars()).collect(),
            _ => Vec::new(),
        }
    }

    /// True when the workspace read is a factor of the expression (under `*`, unary minus,
    /// numerators and functions that keep zero), so the expression is zero wherever the
    /// workspace is.
    pub(super) fn annihilated_by(&self, workspace: &str) -> bool {
        fn walk(e: &LExpr, workspace: &str, factor: bool) -> Option<bool> {
            match e {
                LExpr::Precomputed(p) if p.workspace == workspace => Some(factor),
                LExpr::Precomputed(p) => walk(&p.body, workspace, factor),
                LExpr::Sum(_, _, a) | LExpr::Neg(a) => walk(a, workspace, factor),
                LExpr::Binary(Op::Mul, a, b) => {
                    walk(a, workspace, factor).or_else(|| walk(b, workspace, factor))
                }
                LExpr::Binary(Op::Div, a, b) => {
                    walk(a, workspace, factor).or_else(|| walk(b, workspace, false))
                }
                LExpr::Binary(_, a, b) => {
                    walk(a, workspace, false).or_else(|| walk(b, workspace, false))
                }
                LExpr::Math(f, args) => {
                    let through = factor && f.keeps_zero() && args.len() == 1;
                    args.iter().find_map(|a| walk(a, workspace, through))
                }
                _ => None,
            }
        }
        walk(self, workspace, true).unwrap_or(false)
    }
    /// Replace the precomputed subexpression of `workspace` by a read of the array
    /// `array` at its variables.
    pub(super) fn read_workspace(&self, workspace: &str, array: Scratch) -> LExpr {
        let read = |e: &LExpr| e.read_workspace(workspace, array);
        match self {
            LExpr::Precomputed(p) if p.workspace == workspace => {
                LExpr::WorkspaceRead(array, p.vars.clone())
            }
            LExpr::Precomputed(p) => LExpr::Precomputed(Box::new(Precompute {
                body: read(&p.body),
                ..(**p).clone()
            })),
            LExpr::Sum(v, inner, a) => LExpr::Sum(*v, inner.clone(), Box::new(read(a))),
            LExpr::Neg(a) => LExpr::Neg(Box::new(read(a))),
            LExpr::Binary(op, a, b) => LExpr::Binary(*op, Box::new(read(a)), Box::new(read(b))),
            LExpr::Math(f, args) => LExpr::Math(*f, args.iter().map(read).collect()),
            other => other.clone(),
        }
    }
    /// Find a non-hoisted sum over `var`.
    pub(super) fn find_sum(&self, var: VarId) -> Option<&LExpr> {
        match self {
            LExpr::Sum(v, _, _) if *v == var => Some(self),
            LExpr::Sum(_, _, a) | LExpr::Neg(a) => a.find_sum(var),
            LExpr::Precomputed(p) => p.body.find_sum(var),
            LExpr::Binary(_, a, b) => a.find_sum(var).or_else(|| b.find_sum(var)),
            LExpr::Math(_, args) => args.iter().find_map(|a| a.find_sum(var)),
            _ => None,
        }
    }
    /// True when the sum over `var` is a factor of a product or in a numerator, where a
    /// reduction over no stored entries is a structural zero that annihilates.
    pub(super) fn sum_annihilates(&self, var: VarId) -> bool {
        fn walk(e: &LExpr, var: VarId, factor: bool) -> Option<bool> {
            match e {
                LExpr::Sum(v, _, _) if *v == var => Some(factor),
                LExpr::Sum(_, _, a) | LExpr::Neg(a) => walk(a, var, factor),
                LExpr::Precomputed(p) => walk(&p.body, var, factor),
                LExpr::Binary(Op::Mul, a, b) => walk(a, var, true).or_else(|| walk(b, var, true)),
                LExpr::Binary(Op::Div, a, b) => walk(a, var, true).or_else(|| walk(b, var, false)),
                LExpr::Binary(_, a, b) => walk(a, var, false).or_else(|| walk(b, var, false)),
                // f(0) = 0 passes an empty reduction's zero on; exp(0) = 1 and
                // max(0, y) = y do not.
                LExpr::Math(f, args) => {
                    let through = factor && f.keeps_zero() && args.len() == 1;
                    args.iter().find_map(|a| walk(a, var, through))
                }
                _ => None,
            }
        }
        walk(self, var, false).unwrap_or(false)
    }
    /// Replace the sum over `var` by a temporary.
    pub(super) fn replace_sum(&self, var: VarId, temp: Var) -> LExpr {
        match self {
            LExpr::Sum(v, _, _) if *v == var => LExpr::Temp(temp),
            LExpr::Sum(v, inner, a) => {
                LExpr::Sum(*v, inner.clone(), Box::new(a.replace_sum(var, temp)))
            }
            LExpr::Neg(a) => LExpr::Neg(Box::new(a.replace_sum(var, temp))),
            LExpr::Precomputed(p) => LExpr::Precomputed(Box::new(Precompute {
                body: p.body.replace_sum(var, temp),
                ..(**p).clone()
            })),
            LExpr::Binary(op, a, b) => LExpr::Binary(
                *op,
                Box::new(a.replace_sum(var, temp)),
                Box::new(b.replace_sum(var, temp)),
            ),
            LExpr::Math(f, args) => {
                LExpr::Math(*f, args.iter().map(|a| a.replace_sum(var, temp)).collect())
            }
            other => other.clone(),
        }
    }
}
