//! Polyhedral scanning through isl's AST generator.
//!
//! isl scans affine sets; SPF sets also apply index arrays. Each distinct UF application
//! of a statement (`rowptr(i)`, `col(k)`) becomes a dimension of its own, a *slot*, placed
//! in the common schedule after the dimensions its arguments use and before the first
//! loop it bounds (or defines, as in `j = col(k)`); the slot's value lies in the range of
//! its array (`uf_min <= u <= uf_max`, run-time parameters), and the facts known about
//! index arrays (a `pos` array does not decrease) hold between slots. isl then generates
//! the loops of the whole program: bounds, guards, peeled and separated pieces.
//!
//! Reading the AST back, a loop over a slot is not a loop: its value is the function's
//! (`u = rowptr[i]`), and the loop's bounds become a guard on it (those that only restate
//! the array's range are dropped). A slot isl did not scan as a loop (its value was
//! implied, so isl substituted it) is checked at the statement instead: the instance runs
//! only where the function's value is the one isl assumed. So every instance isl
//! generates satisfies the statement's constraints with the real index arrays, and every
//! instance that does is generated, in the schedule's order.

use super::*;
use crate::spf::isl::{Ast, AstExpr, AstOp};
use crate::spf::presburger::{isl_affine, SYMBOL_PREFIX};

/// isl's work bound for one program's loops: separating the pieces of many fused
/// statements can grow exponentially, and a program that needs more is refused rather than
/// left to run for minutes. The examples need less than a million (ILU(0) and
/// Gauss-Seidel need more than 100,000).
const AST_OPERATION_LIMIT: u64 = 20_000_000;

/// What the innermost level emits for a statement.
pub(super) enum Leaf {
    /// The statement's body.
    Body,
    /// The wavefront inspector's update of row `lev[row - first]` from the rows it reads.
    Levels {
        lev: Scratch,
        first: Expr,
        rows: Vec<(String, Affine)>,
    },
}

/// A column of the common schedule.
#[derive(Clone, Debug, PartialEq)]
enum Column {
    /// An execution dimension.
    Dim(usize),
    /// A slot: a UF application (its arguments over execution dimensions), evaluated
    /// before execution dimension `before` (the number of dimensions for after them all).
    Slot { before: usize, app: Term },
}

/// A statement abstracted for isl: its dimensions are its execution dimensions, then one
/// per UF application; `columns[d]` is where dimension `d` goes in the schedule.
struct Prepared {
    stmt: usize,
    space: Abstraction,
    constraints: Vec<Constraint>,
    columns: Vec<usize>,
}

/// What the walk of isl's AST knows at a node.
#[derive(Clone, Default)]
struct Scope {
    /// The IR variable of each column's enclosing loop or assigned slot.
    columns: Vec<Option<Var>>,
    /// The slot columns assigned from their functions.
    assigned: Vec<usize>,
}

impl Context<'_> {
    /// Scan statements `items` of `all` into IR. The first execution dimensions are
    /// already bound in `env`, one per range in `fixed` (`first <= value < end`: the
    /// wavefront executor's row); the outermost loop is parallel when `parallel` is set
    /// (the caller checked the dependences).
    pub(super) fn scan(
        &mut self,
        all: &[Scheduled],
        items: &[usize],
        fixed_ranges: &[(Affine, Affine)],
        env: &mut [Option<Var>],
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        let fixed = fixed_ranges.len();
        check_distinct(all, items)?;
        check_bounded(all, items)?;
        let depth = env.len();
        let mut prepared: Vec<Prepared> = items.iter().map(|&n| prepare(&all[n], n)).collect();
        let layout = layout(all, &mut prepared)?;
        let columns = layout.len();
        let facts = deps::program_facts(self.prog);
        let mut params: Vec<String> = self
            .symbols
            .iter()
            .map(|s| format!("{SYMBOL_PREFIX}{s}"))
            .collect();
        for n in 0..self.ufs.len() {
            params.push(format!("uf_min_{n}"));
            params.push(format!("uf_max_{n}"));
        }
        params.extend((0..fixed).map(|d| format!("fixed_{d}")));
        let mut domain = Vec::new();
        let mut schedule = Vec::new();
        for p in &prepared {
            let tuple: Vec<String> = (0..p.space.dims()).map(|d| format!("x{d}")).collect();
            let mut conj = p.space.conjunction_text(&p.constraints, Some(&facts));
            for (d, c) in all[p.stmt].dims.iter().enumerate() {
                if let Some(c) = c {
                    conj.push(format!("x{d} = {c}"));
                }
            }
            conj.extend((0..fixed).map(|d| format!("x{d} = fixed_{d}")));
            for d in depth..p.space.dims() {
                let (name, _) = p.space.application(d).expect("a slot");
                let n = self.uf_number(name);
                conj.push(format!("uf_min_{n} <= x{d} <= uf_max_{n}"));
            }
            let name = format!("S{}", p.stmt);
            domain.push(format!(
                "{name}[{}] : {}",
                tuple.join(", "),
                if conj.is_empty() {
                    "1 = 1".to_string()
                } else {
                    conj.join(" and ")
                }
            ));
            let mut image = vec!["0".to_string(); columns];
            for (d, &col) in p.columns.iter().enumerate() {
                image[col] = format!("x{d}");
            }
            schedule.push(format!(
                "{name}[{}] -> [{}]",
                tuple.join(", "),
                image.join(", ")
            ));
        }
        let params = params.join(", ");
        // What holds for every array is also known of its smallest value.
        let mut context: Vec<String> = facts
            .0
            .iter()
            .filter_map(|f| {
                let n = self.ufs.iter().position(|(name, _)| *name == f.name)?;
                Some(format!("uf_min_{n} >= {}", isl_affine(f.lower.as_ref()?)))
            })
            .collect();
        for (d, (first, end)) in fixed_ranges.iter().enumerate() {
            context.push(format!(
                "{} <= fixed_{d} < {}",
                isl_affine(first),
                isl_affine(end)
            ));
        }
        let all_columns: Vec<String> = (0..columns).map(|c| format!("t{c}")).collect();
        let generated = Isl::new()
            .with_operation_limit(AST_OPERATION_LIMIT)
            .ast(
                &format!("[{params}] -> {{ : {} }}", context.join(" and ")),
                &format!("[{params}] -> {{ {} }}", domain.join("; ")),
                &format!("{{ {} }}", schedule.join("; ")),
                // Separate pieces where different statements run (the peeled iterations
                // of a shifted fusion) rather than guarding each instance.
                Some(&format!(
                    "{{ [{}] -> separate[x] }}",
                    all_columns.join(", ")
                )),
            )
            .map_err(|e| {
                let why = match e.contains("maximal number of operations") {
                    true => format!(
                        "isl gave up after {AST_OPERATION_LIMIT} operations (fuse fewer \
                         statements with different bounds, or separate them with constant \
                         schedule dimensions)"
                    ),
                    false => e,
                };
                SpfError::general(format!("generating the loops with isl: {why}"))
            })?;
        let mut walk = Walk {
            all,
            prepared: &prepared,
            layout: &layout,
            fixed,
            parallel,
            leaf,
        };
        let scope = Scope {
            columns: vec![None; columns],
            assigned: Vec::new(),
        };
        let mut out = Vec::new();
        walk.node(self, &generated.ast, &scope, env, &mut out)?;
        Ok(out)
    }
}

/// The common schedule's columns: for each execution dimension, the slots evaluated
/// before it (ordered so that an application comes after those in its arguments), then
/// the dimension; each statement's `columns` are filled in.
fn layout(all: &[Scheduled], prepared: &mut [Prepared]) -> Result<Vec<Column>, SpfError> {
    let depth = all[prepared[0].stmt].dims.len();
    // (before, nesting, application) of every slot of every statement.
    let mut slots: Vec<(usize, usize, Term)> = Vec::new();
    let mut placed: Vec<Vec<(usize, usize, Term)>> = Vec::new();
    for p in prepared.iter() {
        let mine = placement(p, &all[p.stmt].dims);
        for s in &mine {
            if !slots.contains(s) {
                slots.push(s.clone());
            }
        }
        placed.push(mine);
    }
    let mut layout = Vec::new();
    for d in 0..=depth {
        let mut here: Vec<&(usize, usize, Term)> = slots.iter().filter(|s| s.0 == d).collect();
        here.sort_by_key(|s| s.1);
        layout.extend(here.into_iter().map(|s| Column::Slot {
            before: d,
            app: s.2.clone(),
        }));
        if d < depth {
            layout.push(Column::Dim(d));
        }
    }
    for (p, mine) in prepared.iter_mut().zip(&placed) {
        p.columns = (0..p.space.dims())
            .map(|d| {
                let column = if d < depth {
                    Column::Dim(d)
                } else {
                    let (before, _, app) = mine[d - depth].clone();
                    Column::Slot { before, app }
                };
                layout
                    .iter()
                    .position(|c| *c == column)
                    .expect("every column is laid out")
            })
            .collect();
    }
    check_slots_apart(all, prepared, &layout)?;
    Ok(layout)
}

/// A statement abstracted for isl. Arguments of UF applications are first rewritten
/// without the dimensions that other constraints define (`rowptr(k)` with `k = col(kk)`
/// becomes `rowptr(col(kk))`), so that a slot needs only loops to be evaluated.
fn prepare(s: &Scheduled, stmt: usize) -> Prepared {
    let depth = s.dims.len();
    let mut defs: Vec<Option<Affine>> = Vec::new();
    for d in 0..depth {
        let def = match s.dims[d] {
            Some(_) => None,
            None => classify(&s.constraints, d)
                .definition
                .map(|e| without_defined(&e, &defs, false)),
        };
        defs.push(def);
    }
    let mut space = Abstraction::new(depth);
    let constraints = s
        .constraints
        .iter()
        .map(|c| {
            space.constraint(&Constraint {
                expr: without_defined(&c.expr, &defs, false),
                kind: c.kind,
            })
        })
        .collect();
    Prepared {
        stmt,
        space,
        constraints,
        columns: Vec::new(),
    }
}

/// `e` with the defined dimensions (`defs`, already rewritten) replaced by their
/// definitions inside UF arguments, and also at the top level when `everywhere`.
fn without_defined(e: &Affine, defs: &[Option<Affine>], everywhere: bool) -> Affine {
    let mut out = Affine::constant(e.constant);
    for (c, t) in &e.terms {
        let replaced = match t {
            Term::Var(v) if everywhere => match defs.get(*v).and_then(Option::as_ref) {
                Some(def) => def.clone(),
                None => Affine::term(t.clone()),
            },
            Term::Uf(name, args) => Affine::term(Term::Uf(
                name.clone(),
                args.iter()
                    .map(|a| without_defined(a, defs, true))
                    .collect(),
            )),
            _ => Affine::term(t.clone()),
        };
        out = out.add_scaled(*c, &replaced);
    }
    out
}

/// Where each of a statement's slots goes: `(before, nesting, application)`. A slot comes
/// after the dimensions its arguments use and before the first dimension one of its
/// constraints bounds or defines; a slot only compared with outer dimensions (a guard)
/// goes before the next loop. An application in another's arguments comes no later.
fn placement(p: &Prepared, dims: &[Option<i64>]) -> Vec<(usize, usize, Term)> {
    let depth = dims.len();
    let apps = p.space.dims() - depth;
    let mut earliest = vec![0usize; apps];
    let mut nesting = vec![0usize; apps];
    for m in 0..apps {
        let (_, args) = p.space.application(depth + m).expect("a slot");
        for (_, t) in args.iter().flat_map(|a| &a.terms) {
            if let Term::Var(v) = t {
                if *v < depth {
                    earliest[m] = earliest[m].max(v + 1);
                } else {
                    // Inner applications were abstracted first.
                    earliest[m] = earliest[m].max(earliest[v - depth]);
                    nesting[m] = nesting[m].max(nesting[v - depth] + 1);
                }
            }
        }
    }
    let next_loop = |from: usize| (from..depth).find(|&d| dims[d].is_none()).unwrap_or(depth);
    let mut before: Vec<usize> = (0..apps)
        .map(|m| {
            let slot = Term::Var(depth + m);
            p.constraints
                .iter()
                .filter(|c| c.expr.terms.iter().any(|(_, t)| *t == slot))
                .filter_map(|c| {
                    c.expr
                        .terms
                        .iter()
                        .filter_map(|(_, t)| match t {
                            Term::Var(v) if *v < depth => Some(*v),
                            _ => None,
                        })
                        .max()
                })
                .filter(|&d| d >= earliest[m])
                .min()
                .unwrap_or_else(|| next_loop(earliest[m]))
        })
        .collect();
    for m in (0..apps).rev() {
        for n in m + 1..apps {
            let (_, args) = p.space.application(depth + n).expect("a slot");
            let uses = args
                .iter()
                .flat_map(|a| &a.terms)
                .any(|(_, t)| *t == Term::Var(depth + m));
            if uses {
                before[m] = before[m].min(before[n]);
            }
        }
    }
    (0..apps)
        .map(|m| {
            let concrete = p.space.concretize(&Affine::term(Term::Var(depth + m)));
            let app = concrete.terms[0].1.clone();
            (before[m], nesting[m], app)
        })
        .collect()
}

/// Whether two statements can never share the values of execution dimensions
/// `0..upto`: some dimension among them is a different constant in each.
fn apart(a: &Scheduled, b: &Scheduled, upto: usize) -> bool {
    (0..upto).any(|d| matches!((a.dims[d], b.dims[d]), (Some(x), Some(y)) if x != y))
}

/// No two statements may run at the same execution tuple (isl would order them
/// arbitrarily).
fn check_distinct(all: &[Scheduled], items: &[usize]) -> Result<(), SpfError> {
    for (k, &a) in items.iter().enumerate() {
        for &b in &items[k + 1..] {
            let depth = all[a].dims.len();
            if !apart(&all[a], &all[b], depth) {
                return Err(SpfError::new(
                    format!(
                        "{} and {} may be scheduled at the same execution tuples: give them \
                         different constants in some schedule dimension",
                        all[a].stmt.name, all[b].stmt.name
                    ),
                    all[b].stmt.span,
                ));
            }
        }
    }
    Ok(())
}

/// Every loop has a lower and an upper bound of its own (isl would fail on a loop
/// without a lower bound and never end one without an upper bound).
fn check_bounded(all: &[Scheduled], items: &[usize]) -> Result<(), SpfError> {
    for s in items.iter().map(|&n| &all[n]) {
        for d in (0..s.dims.len()).filter(|&d| s.dims[d].is_none()) {
            let at = classify(&s.constraints, d);
            if at.definition.is_some() || (!at.lower.is_empty() && !at.upper.is_empty()) {
                continue;
            }
            return Err(SpfError::new(
                format!(
                    "execution dimension {d} of {} has no {} bound: every loop needs \
                     `lo <= var` and `var < hi` constraints with outer variables, symbols \
                     and functions of outer variables",
                    s.stmt.name,
                    if at.lower.is_empty() {
                        "lower"
                    } else {
                        "upper"
                    }
                ),
                s.stmt.span,
            ));
        }
    }
    Ok(())
}

/// A slot is evaluated in place of a loop: a statement that does not read it must never
/// share the loops around it with one that does (it would run once per value isl
/// assumes for the slot, not once).
fn check_slots_apart(
    all: &[Scheduled],
    prepared: &[Prepared],
    layout: &[Column],
) -> Result<(), SpfError> {
    for (column, c) in layout.iter().enumerate() {
        let Column::Slot { before, app } = c else {
            continue;
        };
        for a in prepared.iter().filter(|p| p.columns.contains(&column)) {
            for b in prepared.iter().filter(|p| !p.columns.contains(&column)) {
                let (sa, sb) = (&all[a.stmt], &all[b.stmt]);
                if !apart(sa, sb, *before) {
                    let names = sa.names.clone();
                    return Err(SpfError::new(
                        format!(
                            "{} and {} share the loops before execution dimension {before}, \
                             where only {} reads `{}` to bound or define a loop: separate \
                             them with a constant schedule dimension before it",
                            sa.stmt.name,
                            sb.stmt.name,
                            sa.stmt.name,
                            Affine::term(app.clone()).display(&names)
                        ),
                        sb.stmt.span,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The walk of isl's AST into IR.
struct Walk<'w, 'a> {
    all: &'w [Scheduled<'a>],
    prepared: &'w [Prepared],
    layout: &'w [Column],
    fixed: usize,
    parallel: bool,
    leaf: &'w Leaf,
}

impl Walk<'_, '_> {
    fn node(
        &mut self,
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
        &mut self,
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
        &mut self,
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
        &mut self,
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
        &mut self,
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
        &mut self,
        cx: &mut Context,
        e: &AstExpr,
        scope: &Scope,
        env: &[Option<Var>],
    ) -> Result<Expr, SpfError> {
        let args = |this: &mut Self, cx: &mut Context, args: &[AstExpr]| {
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
        &mut self,
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

pub(super) fn conjunction(conds: Vec<Expr>) -> Expr {
    conds
        .into_iter()
        .reduce(Expr::and)
        .unwrap_or(Expr::Bool(true))
}
