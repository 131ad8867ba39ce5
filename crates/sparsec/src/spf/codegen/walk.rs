//! Reading isl's AST back into IR, as the sparse polyhedral front end reads it (the
//! reading itself is `polyhedral::read`'s). A loop over a slot is not a loop: its value is
//! the function's (`u = rowptr[i]`), and the loop's bounds become a guard on it (those
//! that only restate the array's range are dropped). A slot isl did not scan as a loop
//! (its value was implied, so isl substituted it) is checked at the statement instead:
//! the instance runs only where the function's value is the one isl assumed. So every
//! instance isl generates satisfies the statement's constraints with the real index
//! arrays, and every instance that does is generated, in the schedule's order.

use super::scan::{Column, Leaf, Prepared};
use super::*;
use crate::polyhedral::isl::{Ast, AstExpr, AstOp};
use crate::polyhedral::read::{self, conjunction, is_iterator, FrontEnd, LoopNode};
use crate::spf::presburger::SYMBOL_PREFIX;

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
        let mut reading = Reading {
            walk: self,
            cx,
            env,
            columns: vec![None; self.layout.len()],
            assigned: Vec::new(),
            shadowed: Vec::new(),
        };
        read::read(&mut reading, ast)
    }
}

/// The state of one reading: what is bound at the node being read.
struct Reading<'r, 'w, 'a, 'c> {
    walk: &'r ReadBack<'w, 'a>,
    cx: &'r mut Context<'c>,
    /// The IR variable of each execution dimension bound here.
    env: &'r mut [Option<Var>],
    /// The IR variable of each column's enclosing loop or assigned slot.
    columns: Vec<Option<Var>>,
    /// The slot columns assigned from their functions.
    assigned: Vec<usize>,
    /// What each entered loop replaced (its column's and dimension's variables), innermost
    /// last.
    shadowed: Vec<(Option<Var>, Option<Option<Var>>)>,
}
impl Reading<'_, '_, '_, '_> {
    /// The column the loop over `iterator` scans.
    fn column(&self, iterator: &str) -> Result<usize, SpfError> {
        column_of(iterator)
            .filter(|&c| c < self.walk.layout.len())
            .ok_or_else(|| internal(format!("isl named a loop `{iterator}`")))
    }

    /// The execution dimension a column scans (none for a slot).
    fn dim(&self, column: usize) -> Option<usize> {
        match self.walk.layout[column] {
            Column::Dim(d) => Some(d),
            Column::Slot { .. } => None,
        }
    }

    /// A loop over a slot whose arguments are bound: the function's value, guarded by
    /// the loop's bounds.
    fn slot(
        &mut self,
        node: &LoopNode<'_>,
        column: usize,
        app: &Term,
        out: &mut Vec<Stmt>,
    ) -> Result<(), SpfError> {
        let Term::Uf(name, _) = app else {
            unreachable!("slots are applications")
        };
        let start = read::expr(self, node.init)?;
        let var = self
            .cx
            .function
            .fresh_var(format!("{name}_value"), Type::Index);
        let value = self.cx.affine(&Affine::term(app.clone()), self.env);
        let previous = self.columns[column].replace(var);
        self.assigned.push(column);
        let inside = self.slot_inside(node, column, name, var, start);
        self.assigned.pop();
        self.columns[column] = previous;
        let (guards, stmts) = inside?;
        out.push(Stmt::Decl(var, value));
        out.push(match guards.is_empty() {
            true => Stmt::Block(stmts),
            false => Stmt::If(conjunction(guards), stmts, Vec::new()),
        });
        Ok(())
    }

    /// The guards on a slot's value `var` and the statements it runs.
    fn slot_inside(
        &mut self,
        node: &LoopNode<'_>,
        column: usize,
        name: &str,
        var: Var,
        start: Expr,
    ) -> Result<(Vec<Expr>, Vec<Stmt>), SpfError> {
        let n = self.cx.uf_number(name);
        let mut guards = Vec::new();
        if let Some(lower) = without_operand(node.init, AstOp::Max, &format!("uf_min_{n}")) {
            let lower = read::expr(self, &lower)?;
            guards.push(Expr::bin(BinOp::Ge, Expr::Var(var), lower));
        }
        guards.extend(self.slot_condition(node.cond, column, n)?);
        if node.step > 1 {
            guards.push(Expr::eq(
                Expr::bin(BinOp::Rem, Expr::Var(var) - start, Expr::Int(node.step)),
                Expr::Int(0),
            ));
        }
        let mut stmts = Vec::new();
        read::node(self, node.body, &mut stmts)?;
        Ok((guards, stmts))
    }

    /// A slot loop's condition as guards on its value, without what only says that the
    /// value is at most the array's largest.
    fn slot_condition(
        &mut self,
        cond: &AstExpr,
        column: usize,
        uf: usize,
    ) -> Result<Vec<Expr>, SpfError> {
        match cond {
            AstExpr::Op(AstOp::Le, args) if is_column(&args[0], column) => {
                match without_operand(&args[1], AstOp::Min, &format!("uf_max_{uf}")) {
                    None => Ok(Vec::new()),
                    Some(upper) => {
                        let upper = read::expr(self, &upper)?;
                        let value = Expr::Var(self.columns[column].expect("assigned"));
                        Ok(vec![Expr::bin(BinOp::Le, value, upper)])
                    }
                }
            }
            AstExpr::Op(AstOp::And | AstOp::AndThen, parts) => {
                let mut out = Vec::new();
                for p in parts {
                    out.extend(self.slot_condition(p, column, uf)?);
                }
                Ok(out)
            }
            other => Ok(vec![read::expr(self, other)?]),
        }
    }
}

impl FrontEnd for Reading<'_, '_, '_, '_> {
    type Error = SpfError;

    fn internal(&self, message: String) -> SpfError {
        internal(message)
    }

    fn fresh_var(&mut self, hint: String, ty: Type) -> Var {
        self.cx.function.fresh_var(hint, ty)
    }

    fn own_loop(
        &mut self,
        node: &LoopNode<'_>,
        out: &mut Vec<Stmt>,
    ) -> Option<Result<(), SpfError>> {
        let column = match self.column(node.iterator) {
            Ok(column) => column,
            Err(e) => return Some(Err(e)),
        };
        let walk = self.walk;
        let Column::Slot { app, .. } = &walk.layout[column] else {
            return None;
        };
        let Term::Uf(_, args) = app else {
            unreachable!("slots are applications")
        };
        // A slot whose arguments isl substituted away is scanned as a loop; the instances
        // check the function's value.
        if !args.iter().all(|a| bound_in(a, self.env)) {
            return None;
        }
        Some(self.slot(node, column, app, out))
    }

    fn loop_var(&mut self, iterator: &str) -> Result<(String, LoopKind), SpfError> {
        let column = self.column(iterator)?;
        let dim = self.dim(column);
        let hint = match (dim, &self.walk.layout[column]) {
            (Some(d), _) => {
                let looping = self.walk.prepared.iter().map(|p| &self.walk.all[p.stmt]);
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
        let kind = match dim {
            Some(0) if self.walk.parallel && self.walk.fixed == 0 => read::cpu_parallel(),
            _ => LoopKind::Serial,
        };
        Ok((hint, kind))
    }

    fn enter(&mut self, iterator: &str, var: Var) {
        let column = column_of(iterator).expect("checked by loop_var");
        let previous_column = self.columns[column].replace(var);
        let previous_dim = self.dim(column).map(|d| self.env[d].replace(var));
        self.shadowed.push((previous_column, previous_dim));
    }

    fn leave(&mut self, iterator: &str) {
        let column = column_of(iterator).expect("checked by loop_var");
        let (previous_column, previous_dim) = self.shadowed.pop().expect("entered");
        self.columns[column] = previous_column;
        if let (Some(d), Some(previous)) = (self.dim(column), previous_dim) {
            self.env[d] = previous;
        }
    }

    /// One statement instance: its execution dimensions bound from isl's arguments, the
    /// slots isl did not assign checked against their functions, then the leaf.
    fn instance(&mut self, args: &[AstExpr]) -> Result<Vec<Stmt>, SpfError> {
        let walk = self.walk;
        let stmt = match args.first() {
            Some(AstExpr::Id(name)) => name.strip_prefix('S').and_then(|n| n.parse().ok()),
            _ => None,
        };
        let p = stmt
            .and_then(|n: usize| walk.prepared.iter().find(|p| p.stmt == n))
            .ok_or_else(|| internal(format!("isl called an unknown statement {args:?}")))?;
        let s = &walk.all[p.stmt];
        let depth = s.dims.len();
        if args.len() != p.space.dims() + 1 {
            return Err(internal(format!(
                "isl called {} with {args:?}",
                s.stmt.name
            )));
        }
        if let Some(a) = self.assigned.iter().find(|a| !p.columns.contains(a)) {
            return Err(internal(format!(
                "{} runs inside the slot of column {}, which it does not read",
                s.stmt.name, a
            )));
        }
        let mut out = Vec::new();
        let outer = self.env.to_vec();
        for d in walk.fixed..depth {
            if s.dims[d].is_some() {
                continue;
            }
            let value = read::expr(self, &args[d + 1])?;
            let var = match value {
                Expr::Var(v) => v,
                value => {
                    let v = self.cx.function.fresh_var(s.names[d].clone(), Type::Index);
                    out.push(Stmt::Decl(v, value));
                    v
                }
            };
            self.env[d] = Some(var);
        }
        let mut checks = Vec::new();
        for k in depth..p.space.dims() {
            let assigned = self.assigned.contains(&p.columns[k]);
            if assigned {
                continue;
            }
            let assumed = read::expr(self, &args[k + 1])?;
            let real = self
                .cx
                .affine(&p.space.concretize(&Affine::term(Term::Var(k))), self.env);
            checks.push(Expr::eq(real, assumed));
        }
        let body = self.cx.leaf(s, self.env, walk.leaf);
        self.env.copy_from_slice(&outer);
        match checks.is_empty() {
            true => out.extend(body),
            false => out.push(Stmt::If(conjunction(checks), body, Vec::new())),
        }
        Ok(out)
    }

    fn name(&mut self, name: &str) -> Result<Expr, SpfError> {
        let number = |prefix: &str| name.strip_prefix(prefix)?.parse::<usize>().ok();
        if let Some(c) = column_of(name) {
            return self
                .columns
                .get(c)
                .copied()
                .flatten()
                .map(Expr::Var)
                .ok_or_else(|| internal(format!("isl used `{name}` outside its loop")));
        }
        if let Some(n) = number("uf_min_") {
            return Ok(self.cx.extra(Extra::UfMin(n)));
        }
        if let Some(n) = number("uf_max_") {
            return Ok(self.cx.extra(Extra::UfMax(n)));
        }
        if let Some(d) = number("fixed_") {
            let var = self.env.get(d).copied().flatten();
            return var
                .map(Expr::Var)
                .ok_or_else(|| internal(format!("`{name}` is not bound")));
        }
        match name.strip_prefix(SYMBOL_PREFIX) {
            Some(symbol) => Ok(self.cx.symbol(symbol)),
            None => Err(internal(format!("isl used an unknown name `{name}`"))),
        }
    }
}

/// The column a loop iterator (`c3`) scans.
fn column_of(iterator: &str) -> Option<usize> {
    iterator.strip_prefix('c')?.parse().ok()
}

fn is_column(e: &AstExpr, column: usize) -> bool {
    is_iterator(e, &format!("c{column}"))
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
