//! Reading isl's AST back into IR. A loop over a slot is not a loop: its value is the
//! function's (`u = rowptr[i]`), and the loop's bounds become a guard on it (those that
//! only restate the array's range are dropped). A slot isl did not scan as a loop (its
//! value was implied, so isl substituted it) is checked at the statement instead: the
//! instance runs only where the function's value is the one isl assumed. So every
//! instance isl generates satisfies the statement's constraints with the real index
//! arrays, and every instance that does is generated, in the schedule's order.

use super::scan::{Column, Leaf, Prepared};
use super::*;
use crate::polyhedral::isl::{Ast, AstExpr, AstOp};
use crate::spf::presburger::SYMBOL_PREFIX;

/// What the walk of isl's AST knows at a node.
#[derive(Clone, Default)]
struct Scope {
    /// The IR variable of each column's enclosing loop or assigned slot.
    columns: Vec<Option<Var>>,
    /// The slot columns assigned from their functions.
    assigned: Vec<usize>,
}

/// What reading isl's AST back needs: the statements, their columns, and how the loops
/// and leaves are to be emitted.
pub(super) struct ReadBack<'w, 'a> {
    pub(super) all: &'w [Scheduled<'a>],
    pub(super) prepared: &'w [Prepared],
    pub(super) layout: &'w [Column],
    /// The number of leading execution dimensions already bound (the wavefront row).
    pub(super) fixed: usize,
    /// The outermost loop runs on the team.
    pub(super) parallel: bool,
    pub(super) leaf: &'w Leaf,
}

impl ReadBack<'_, '_> {
    /// The IR of isl's tree `ast`; `env` holds the fixed dimensions' variables.
    pub(super) fn ast(
        &self,
        cx: &mut Context,
        ast: &Ast,
        env: &mut [Option<Var>],
    ) -> Result<Vec<Stmt>, SpfError> {
        let scope = Scope {
            columns: vec![None; self.layout.len()],
            assigned: Vec::new(),
        };
        let mut out = Vec::new();
        self.node(cx, ast, &scope, env, &mut out)?;
        Ok(out)
    }

    fn node(
        &self,
        cx: &mut Context,
        ast: &Ast,
        scope: &Scope,
        env: &mut [Option<Var>],
        out: &mut Vec<Stmt>,
    ) -> Result<(), SpfError> {
        match ast {
            Ast::Block(nodes) => {
                for n in nodes {
                    self.node(cx, n, scope, env, out)?;
                }
            }
            Ast::If {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.expr(cx, cond, scope, env)?;
                let mut yes = Vec::new();
                self.node(cx, then, scope, env, &mut yes)?;
                let mut no = Vec::new();
                if let Some(o) = otherwise {
                    self.node(cx, o, scope, env, &mut no)?;
                }
                out.push(Stmt::If(cond, yes, no));
            }
            Ast::For { .. } => self.for_node(cx, ast, scope, env, out)?,
            Ast::User(call) => out.extend(self.instance(cx, call, scope, env)?),
        }
        Ok(())
    }

    fn for_node(
        &self,
        cx: &mut Context,
        ast: &Ast,
        scope: &Scope,
        env: &mut [Option<Var>],
        out: &mut Vec<Stmt>,
    ) -> Result<(), SpfError> {
        let Ast::For {
            iterator,
            init,
            cond,
            inc,
            degenerate,
            body,
        } = ast
        else {
            unreachable!("called on loops")
        };
        let column = column_of(iterator)
            .filter(|&c| c < self.layout.len())
            .ok_or_else(|| internal(format!("isl named a loop `{iterator}`")))?;
        let step = match inc {
            AstExpr::Int(k) if *k >= 1 => *k,
            other => return Err(internal(format!("isl gave a loop step {other:?}"))),
        };
        let mut inner = scope.clone();
        let start = self.expr(cx, init, scope, env)?;
        if let Column::Slot { app, .. } = &self.layout[column] {
            let Term::Uf(name, args) = app else {
                unreachable!("slots are applications")
            };
            if args.iter().all(|a| bound_in(a, env)) {
                // The slot's value is the function's; the loop's bounds guard it.
                let hint = format!("{name}_value");
                let var = cx.function.fresh_var(hint, Type::Index);
                let value = cx.affine(&Affine::term(app.clone()), env);
                inner.columns[column] = Some(var);
                inner.assigned.push(column);
                let n = cx.uf_number(name);
                let mut guards = Vec::new();
                if let Some(lower) = without_operand(init, AstOp::Max, &format!("uf_min_{n}")) {
                    let lower = self.expr(cx, &lower, &inner, env)?;
                    guards.push(Expr::bin(BinOp::Ge, Expr::Var(var), lower));
                }
                guards.extend(self.slot_condition(cx, cond, column, n, &inner, env)?);
                if step > 1 {
                    guards.push(Expr::eq(
                        Expr::bin(BinOp::Rem, Expr::Var(var) - start, Expr::Int(step)),
                        Expr::Int(0),
                    ));
                }
                let mut stmts = Vec::new();
                self.node(cx, body, &inner, env, &mut stmts)?;
                out.push(Stmt::Decl(var, value));
                out.push(match guards.is_empty() {
                    true => Stmt::Block(stmts),
                    false => Stmt::If(conjunction(guards), stmts, Vec::new()),
                });
                return Ok(());
            }
            // A slot whose arguments isl substituted away: scan its range as a loop;
            // the instances check the function's value.
        }
        let dim = match self.layout[column] {
            Column::Dim(d) => Some(d),
            Column::Slot { .. } => None,
        };
        let hint = match (dim, &self.layout[column]) {
            (Some(d), _) => {
                let looping = self.prepared.iter().map(|p| &self.all[p.stmt]);
                let mut looping = looping.filter(|s| s.dims[d].is_none());
                looping
                    .next()
                    .map_or_else(|| format!("t{d}"), |s| s.names[d].clone())
            }
            (
                None,
                Column::Slot {
                    app: Term::Uf(name, _),
                    ..
                },
            ) => format!("{name}_value"),
            _ => "t".into(),
        };
        let var = cx.function.fresh_var(hint, Type::Index);
        inner.columns[column] = Some(var);
        if let Some(d) = dim {
            env[d] = Some(var);
        }
        let mut stmts = Vec::new();
        self.node(cx, body, &inner, env, &mut stmts)?;
        if let Some(d) = dim {
            env[d] = None;
        }
        if *degenerate {
            out.push(Stmt::Decl(var, start));
            out.extend(stmts);
            return Ok(());
        }
        let end = self.loop_end(cx, cond, column, &inner, env)?;
        let kind = match dim {
            Some(0) if self.parallel && self.fixed == 0 => parallel_kind(),
            _ => LoopKind::Serial,
        };
        if step == 1 {
            out.push(Stmt::For(Loop {
                var,
                start,
                end,
                body: stmts,
                kind,
            }));
            return Ok(());
        }
        // A strided loop counts its iterations.
        let count = cx.function.fresh_var("step", Type::Index);
        let trips = ceil_div(end - start.clone(), step);
        let mut counted = vec![Stmt::Decl(var, start + Expr::Var(count) * Expr::Int(step))];
        counted.extend(stmts);
        out.push(Stmt::For(Loop {
            var: count,
            start: Expr::Int(0),
            end: trips,
            body: counted,
            kind,
        }));
        Ok(())
    }

    /// The exclusive end of a loop over `column` from its condition (`c <= e`, `c < e`,
    /// or a conjunction of those).
    fn loop_end(
        &self,
        cx: &mut Context,
        cond: &AstExpr,
        column: usize,
        scope: &Scope,
        env: &[Option<Var>],
    ) -> Result<Expr, SpfError> {
        match cond {
            AstExpr::Op(AstOp::Le | AstOp::Lt, args) if is_column(&args[0], column) => {
                let inclusive = matches!(cond, AstExpr::Op(AstOp::Le, _));
                // `c <= min(a, b)` ends at `min(a + 1, b + 1)`.
                let bounds = match &args[1] {
                    AstExpr::Op(AstOp::Min, bounds) if inclusive => bounds.as_slice(),
                    bound => std::slice::from_ref(bound),
                };
                let mut ends = Vec::new();
                for b in bounds {
                    let e = self.expr(cx, b, scope, env)?;
                    ends.push(match inclusive {
                        true => plus_one(e),
                        false => e,
                    });
                }
                Ok(ends.into_iter().reduce(Expr::min).expect("a bound"))
            }
            AstExpr::Op(AstOp::And | AstOp::AndThen, parts) => {
                let mut ends = Vec::new();
                for p in parts {
                    ends.push(self.loop_end(cx, p, column, scope, env)?);
                }
                Ok(ends.into_iter().reduce(Expr::min).expect("a conjunction"))
            }
            other => Err(internal(format!(
                "isl gave a loop condition sparsec cannot read: {other:?}"
            ))),
        }
    }

    /// A slot loop's condition as guards on its value, without what only says that the
    /// value is at most the array's largest.
    fn slot_condition(
        &self,
        cx: &mut Context,
        cond: &AstExpr,
        column: usize,
        uf: usize,
        scope: &Scope,
        env: &[Option<Var>],
    ) -> Result<Vec<Expr>, SpfError> {
        match cond {
            AstExpr::Op(AstOp::Le, args) if is_column(&args[0], column) => {
                match without_operand(&args[1], AstOp::Min, &format!("uf_max_{uf}")) {
                    None => Ok(Vec::new()),
                    Some(upper) => {
                        let upper = self.expr(cx, &upper, scope, env)?;
                        let value = Expr::Var(scope.columns[column].expect("assigned"));
                        Ok(vec![Expr::bin(BinOp::Le, value, upper)])
                    }
                }
            }
            AstExpr::Op(AstOp::And | AstOp::AndThen, parts) => {
                let mut out = Vec::new();
                for p in parts {
                    out.extend(self.slot_condition(cx, p, column, uf, scope, env)?);
                }
                Ok(out)
            }
            other => Ok(vec![self.expr(cx, other, scope, env)?]),
        }
    }

    /// One statement instance: its execution dimensions bound from isl's arguments, the
    /// slots isl did not assign checked against their functions, then the leaf.
    fn instance(
        &self,
        cx: &mut Context,
        call: &AstExpr,
        scope: &Scope,
        env: &mut [Option<Var>],
    ) -> Result<Vec<Stmt>, SpfError> {
        let AstExpr::Op(AstOp::Call, args) = call else {
            return Err(internal(format!("isl gave a statement instance {call:?}")));
        };
        let stmt = match args.first() {
            Some(AstExpr::Id(name)) => name.strip_prefix('S').and_then(|n| n.parse().ok()),
            _ => None,
        };
        let p = stmt
            .and_then(|n: usize| self.prepared.iter().find(|p| p.stmt == n))
            .ok_or_else(|| internal(format!("isl called an unknown statement {call:?}")))?;
        let s = &self.all[p.stmt];
        let depth = s.dims.len();
        if args.len() != p.space.dims() + 1 {
            return Err(internal(format!(
                "isl called {} with {call:?}",
                s.stmt.name
            )));
        }
        if let Some(a) = scope.assigned.iter().find(|a| !p.columns.contains(a)) {
            return Err(internal(format!(
                "{} runs inside the slot of column {}, which it does not read",
                s.stmt.name, a
            )));
        }
        let mut out = Vec::new();
        let outer = env.to_vec();
        for d in self.fixed..depth {
            if s.dims[d].is_some() {
                continue;
            }
            let value = self.expr(cx, &args[d + 1], scope, env)?;
            let var = match value {
                Expr::Var(v) => v,
                value => {
                    let v = cx.function.fresh_var(s.names[d].clone(), Type::Index);
                    out.push(Stmt::Decl(v, value));
                    v
                }
            };
            env[d] = Some(var);
        }
        let mut checks = Vec::new();
        for k in depth..p.space.dims() {
            let assigned = scope.assigned.contains(&p.columns[k]);
            if assigned {
                continue;
            }
            let assumed = self.expr(cx, &args[k + 1], scope, env)?;
            let real = cx.affine(&p.space.concretize(&Affine::term(Term::Var(k))), env);
            checks.push(Expr::eq(real, assumed));
        }
        let body = cx.leaf(s, env, self.leaf);
        env.copy_from_slice(&outer);
        match checks.is_empty() {
            true => out.extend(body),
            false => out.push(Stmt::If(conjunction(checks), body, Vec::new())),
        }
        Ok(out)
    }

    fn expr(
        &self,
        cx: &mut Context,
        e: &AstExpr,
        scope: &Scope,
        env: &[Option<Var>],
    ) -> Result<Expr, SpfError> {
        let args = |this: &Self, cx: &mut Context, args: &[AstExpr]| {
            args.iter()
                .map(|a| this.expr(cx, a, scope, env))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(match e {
            AstExpr::Int(k) => Expr::Int(*k),
            AstExpr::Id(name) => self.name(cx, name, scope, env)?,
            AstExpr::Op(op, operands) => {
                let a = args(self, cx, operands)?;
                let two = |op: BinOp| -> Result<Expr, SpfError> {
                    match a.as_slice() {
                        [x, y] => Ok(Expr::bin(op, x.clone(), y.clone())),
                        _ => Err(internal(format!("isl gave {e:?}"))),
                    }
                };
                match op {
                    AstOp::And | AstOp::AndThen => two(BinOp::And)?,
                    AstOp::Or | AstOp::OrElse => two(BinOp::Or)?,
                    AstOp::Max => a
                        .into_iter()
                        .reduce(Expr::max)
                        .ok_or_else(|| internal("max".into()))?,
                    AstOp::Min => a
                        .into_iter()
                        .reduce(Expr::min)
                        .ok_or_else(|| internal("min".into()))?,
                    AstOp::Minus => {
                        Expr::Int(0)
                            - a.into_iter()
                                .next()
                                .ok_or_else(|| internal("minus".into()))?
                    }
                    AstOp::Add => two(BinOp::Add)?,
                    AstOp::Sub => two(BinOp::Sub)?,
                    AstOp::Mul => two(BinOp::Mul)?,
                    // Exact, or of a non-negative dividend: C's division is right.
                    AstOp::Div | AstOp::PdivQ => two(BinOp::Div)?,
                    AstOp::PdivR | AstOp::ZdivR => two(BinOp::Rem)?,
                    AstOp::FdivQ => match operands.get(1) {
                        Some(AstExpr::Int(d)) if *d >= 1 => floor_div(a[0].clone(), *d),
                        _ => return Err(internal(format!("isl gave {e:?}"))),
                    },
                    AstOp::Cond | AstOp::Select => match a.as_slice() {
                        [c, x, y] => Expr::Select(
                            Box::new(c.clone()),
                            Box::new(x.clone()),
                            Box::new(y.clone()),
                        ),
                        _ => return Err(internal(format!("isl gave {e:?}"))),
                    },
                    AstOp::Eq => two(BinOp::Eq)?,
                    AstOp::Le => two(BinOp::Le)?,
                    AstOp::Lt => two(BinOp::Lt)?,
                    AstOp::Ge => two(BinOp::Ge)?,
                    AstOp::Gt => two(BinOp::Gt)?,
                    AstOp::Call | AstOp::Access | AstOp::Member | AstOp::AddressOf => {
                        return Err(internal(format!("isl gave {e:?} in an expression")))
                    }
                }
            }
        })
    }

    fn name(
        &self,
        cx: &mut Context,
        name: &str,
        scope: &Scope,
        env: &[Option<Var>],
    ) -> Result<Expr, SpfError> {
        let number = |prefix: &str| name.strip_prefix(prefix)?.parse::<usize>().ok();
        if let Some(c) = column_of(name) {
            return scope
                .columns
                .get(c)
                .copied()
                .flatten()
                .map(Expr::Var)
                .ok_or_else(|| internal(format!("isl used `{name}` outside its loop")));
        }
        if let Some(n) = number("uf_min_") {
            return Ok(cx.extra(Extra::UfMin(n)));
        }
        if let Some(n) = number("uf_max_") {
            return Ok(cx.extra(Extra::UfMax(n)));
        }
        if let Some(d) = number("fixed_") {
            let var = env.get(d).copied().flatten();
            return var
                .map(Expr::Var)
                .ok_or_else(|| internal(format!("`{name}` is not bound")));
        }
        match name.strip_prefix(SYMBOL_PREFIX) {
            Some(symbol) => Ok(cx.symbol(symbol)),
            None => Err(internal(format!("isl used an unknown name `{name}`"))),
        }
    }
}

/// `e + 1`, folded into a constant term of `e`.
fn plus_one(e: Expr) -> Expr {
    match e {
        Expr::Bin(BinOp::Sub, a, b) if *b == Expr::Int(1) => *a,
        Expr::Bin(BinOp::Add, a, b) if matches!(*b, Expr::Int(_)) => {
            let Expr::Int(k) = *b else { unreachable!() };
            ir::simplify(&(*a + Expr::Int(k + 1)))
        }
        e => ir::simplify(&(e + Expr::Int(1))),
    }
}

/// The column a loop iterator (`c3`) scans.
fn column_of(iterator: &str) -> Option<usize> {
    iterator.strip_prefix('c')?.parse().ok()
}

fn is_column(e: &AstExpr, column: usize) -> bool {
    matches!(e, AstExpr::Id(name) if column_of(name) == Some(column))
}

/// `e` without the operand `Id(name)` of its outermost `op` (None when nothing is left).
fn without_operand(e: &AstExpr, op: AstOp, name: &str) -> Option<AstExpr> {
    let is_name = |x: &AstExpr| matches!(x, AstExpr::Id(n) if n == name);
    if is_name(e) {
        return None;
    }
    match e {
        AstExpr::Op(o, args) if *o == op => {
            let mut rest: Vec<AstExpr> = args.iter().filter(|a| !is_name(a)).cloned().collect();
            match rest.len() {
                0 => None,
                1 => rest.pop(),
                _ => Some(AstExpr::Op(op, rest)),
            }
        }
        other => Some(other.clone()),
    }
}

/// Whether every execution dimension `e` uses (inside applications too) is bound.
fn bound_in(e: &Affine, env: &[Option<Var>]) -> bool {
    e.terms.iter().all(|(_, t)| match t {
        Term::Var(v) => env.get(*v).is_some_and(Option::is_some),
        Term::Sym(_) => true,
        Term::Uf(_, args) => args.iter().all(|a| bound_in(a, env)),
    })
}

fn internal(message: String) -> SpfError {
    SpfError::general(format!("internal error generating loops: {message}"))
}

fn conjunction(conds: Vec<Expr>) -> Expr {
    conds
        .into_iter()
        .reduce(Expr::and)
        .unwrap_or(Expr::Bool(true))
}
