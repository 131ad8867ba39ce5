//! `precompute`: computing a subexpression into a dense workspace (TACO's `where`).
//!
//! The rules, each checked here or by the loop order it leaves:
//! - The expression is part of the right-hand side: a whole subexpression, or some of the
//!   factors of one product, or some of the terms of one sum (in any order), outside
//!   reductions that sit under `+`, `-` or a denominator. An access to a workspace an
//!   earlier `precompute` made (`ws(i,j)`) stands for that workspace's expression, so
//!   workspaces chain.
//! - The workspace's variables are variables of the schedule (statement variables, or
//!   variables a transformation made, such as a split's inner loop) that index the
//!   expression; the producer variables are those or fresh names for them.
//! - The workspace is computed where the first loop of its variables or of its *private*
//!   variables starts: the variables only the expression uses, whose loops all come at or
//!   after that point, are reduced into it there. Every other variable of the expression
//!   must be bound outside that loop; the first loop where that holds is chosen, and the
//!   order is kept that way for the transformations that follow.
//! - With no private variable the workspace stages the expression's values (a sum, a
//!   product, a tile of a split loop); with some it holds their reduction.

use std::collections::BTreeSet;

use super::super::lexpr::{self, LExpr};
use super::super::Concrete;
use super::ScheduleError;
use crate::ir::MathFn;
use crate::notation::ast::{Expr, ExprKind, Op};
use crate::notation::cin::VarId;

/// The expression `precompute` names, with accesses by tensor (or workspace) and
/// variable names, to be found in the scheduled right-hand side.
#[derive(Clone, Debug, PartialEq)]
enum Wanted {
    Access(String, Vec<String>),
    Literal(f64),
    Neg(Box<Wanted>),
    Binary(Op, Box<Wanted>, Box<Wanted>),
    Math(MathFn, Vec<Wanted>),
}

impl Wanted {
    fn from_ast(e: &Expr) -> Wanted {
        match &e.kind {
            ExprKind::Access(a) => Wanted::Access(a.tensor.clone(), a.indices.clone()),
            ExprKind::Literal(v) => Wanted::Literal(*v),
            ExprKind::Neg(a) => Wanted::Neg(Box::new(Wanted::from_ast(a))),
            ExprKind::Binary(op, a, b) => Wanted::Binary(
                *op,
                Box::new(Wanted::from_ast(a)),
                Box::new(Wanted::from_ast(b)),
            ),
            ExprKind::Math(f, args) => {
                Wanted::Math(*f, args.iter().map(Wanted::from_ast).collect())
            }
        }
    }

    /// The operands of a chain of `op` (`*` or `+`), which may be matched in any order.
    fn chain(&self, op: Op) -> Vec<&Wanted> {
        match self {
            Wanted::Binary(o, a, b) if *o == op => {
                let mut out = a.chain(op);
                out.extend(b.chain(op));
                out
            }
            other => vec![other],
        }
    }
}

/// Where the workspace is computed: the loops of the schedule and the private variables.
struct Placement {
    private: Vec<VarId>,
    /// The loop where the producer starts.
    at: VarId,
    /// Loops bound outside the producer: those of the expression's other variables and
    /// of the workspace's variables bound before it starts.
    outside: Vec<VarId>,
}

impl Concrete {
    pub(super) fn precompute_into(
        &self,
        text: &str,
        expr: &str,
        vars: &[String],
        producer_vars: &[String],
        workspace: Option<&str>,
    ) -> Result<Concrete, ScheduleError> {
        let fail = |pre: &str, why: String| Err(ScheduleError::new(text, pre, why));
        // The producer shares the consumer's loops, so TACO's fresh producer variables
        // (`precompute(e,i,iw)`) only name those loops; a name that already means another
        // variable would make the schedule say something sparsec does not do.
        let distinct =
            (0..producer_vars.len()).all(|n| !producer_vars[..n].contains(&producer_vars[n]));
        let renamed = distinct
            && vars.len() == producer_vars.len()
            && vars
                .iter()
                .zip(producer_vars)
                .all(|(v, p)| v == p || self.var_named(p).is_none());
        if !renamed {
            return fail(
                "producer and consumer iterate the same variables",
                "the producer variables are the consumer's or fresh names for them, one each \
                 (a producer with variables of its own is not supported)"
                    .into(),
            );
        }
        let fresh;
        let workspace = match workspace {
            Some(w) => w,
            None => {
                fresh = self.fresh_workspace_name();
                fresh.as_str()
            }
        };
        let source = format!("{workspace}({}) = {expr}", vars.join(","));
        let assignment = match crate::notation::parse(&source) {
            Ok(a) => a,
            Err(e) => return fail("the expression is index notation", e.to_string()),
        };
        let wanted = Wanted::from_ast(&assignment.rhs);
        let stmt = &self.statement;
        let mut existing = Vec::new();
        lexpr::precomputes(&self.rhs, &mut existing);
        let clash = stmt.tensors.iter().any(|t| t.name == workspace)
            || existing.iter().any(|w| w.workspace == workspace)
            || self.var_named(workspace).is_some()
            || !workspace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if clash {
            return fail(
                "the workspace has a fresh name",
                format!(
                    "`{workspace}` names a tensor, workspace or variable, or is not an identifier"
                ),
            );
        }
        let mut w_vars = Vec::new();
        for n in vars {
            match self.var_named(n) {
                Some(v) if !w_vars.contains(&v) => w_vars.push(v),
                Some(_) => {
                    return fail(
                        "the workspace's variables are distinct",
                        format!("`{n}` is listed twice"),
                    )
                }
                None => {
                    return fail(
                        "the workspace's variables are the schedule's",
                        format!(
                            "`{n}` is not an index variable of this statement; its loops are {}",
                            self.loops().join(", ")
                        ),
                    )
                }
            }
        }
        let Some((body, with_node)) = self.extract(&self.rhs, &wanted, false) else {
            return fail(
                "the expression is part of the statement",
                format!(
                    "`{expr}` is not a subexpression of the right-hand side (a whole \
                     subexpression, factors of one product or terms of one sum, outside \
                     reductions under `+`, `-` or a denominator)"
                ),
            );
        };
        let mut matched = Vec::new();
        body.occurrences(&mut matched);
        let vars_of = |occs: &[usize]| -> BTreeSet<VarId> {
            occs.iter()
                .flat_map(|&o| self.accesses[o].1.iter().copied())
                .collect()
        };
        let inside = vars_of(&matched);
        let mut all = Vec::new();
        self.rhs.occurrences(&mut all);
        let others: Vec<usize> = all.into_iter().filter(|o| !matched.contains(o)).collect();
        let mut outside = vars_of(&others);
        outside.extend(stmt.lhs.iter().copied());
        // A workspace precomputed around the expression is indexed by its own variables:
        // they are bound where the expression is evaluated, as the left-hand side's are.
        for w in &existing {
            let mut occurrences = Vec::new();
            w.body.occurrences(&mut occurrences);
            if occurrences.iter().any(|o| matched.contains(o)) && !body_contains(&body, w) {
                outside.extend(w.vars.iter().flat_map(|&v| self.roots(v)));
            }
        }
        let mut w_roots = BTreeSet::new();
        for &w in &w_vars {
            let roots = self.roots(w);
            if let Some(&r) = roots.iter().find(|r| !inside.contains(r)) {
                return fail(
                    "the workspace's variables index the expression",
                    format!(
                        "`{}` does not occur in `{expr}`",
                        self.vars[if r == w { w } else { r }].name
                    ),
                );
            }
            w_roots.extend(roots);
        }
        let candidates: Vec<VarId> = inside
            .iter()
            .copied()
            .filter(|v| !outside.contains(v) && !w_roots.contains(v))
            .collect();
        let Some(place) = self.placement(&w_vars, &w_roots, &candidates, &inside) else {
            let shared: Vec<String> = inside
                .iter()
                .filter(|v| !candidates.contains(v) && !w_roots.contains(v))
                .map(|&v| format!("`{}`", self.vars[v].name))
                .collect();
            return fail(
                "the expression's other variables are bound outside the workspace",
                format!(
                    "in the loop order {}, no loop of the workspace's variables or of those \
                     only `{expr}` uses has every other loop of `{expr}` ({}) outside it; \
                     reorder the loops first",
                    self.loops().join(", "),
                    if shared.is_empty() {
                        "those its variables were split from".to_string()
                    } else {
                        shared.join(", ")
                    }
                ),
            );
        };
        let mut next = self.clone();
        for (name, &v) in producer_vars.iter().zip(&w_vars) {
            if self.var_named(name).is_none() {
                next.aliases.push((name.clone(), v));
            }
        }
        next.rhs = with_node(lexpr::Precompute {
            workspace: workspace.to_string(),
            vars: w_vars.clone(),
            private: place.private.clone(),
            at: place.at,
            body,
        });
        // Keep the order that placed the workspace: the loops bound outside its producer
        // stay outside the loop that starts it and the reductions inside it. (A loop of
        // the workspace's own variables may move out: it then fills one slice at a time.)
        let inner: Vec<VarId> = place.private.iter().copied().chain([place.at]).collect();
        for &u in &place.outside {
            next.sum_edges.extend(inner.iter().map(|&p| (u, p)));
        }
        for &p in &place.private {
            if !self.descendants(p).contains(&place.at) {
                next.sum_edges.push((place.at, p));
            }
        }
        next.with_loops(text, next.loop_sequence())
    }

    /// The first loop where the workspace can be computed: one of its variables' loops or
    /// of `candidates` (the variables only the expression uses), with every other loop
    /// that the expression reads before it.
    fn placement(
        &self,
        w_vars: &[VarId],
        w_roots: &BTreeSet<VarId>,
        candidates: &[VarId],
        inside: &BTreeSet<VarId>,
    ) -> Option<Placement> {
        let loops = self.loop_sequence();
        let of_workspace: BTreeSet<VarId> =
            w_vars.iter().flat_map(|&w| self.descendants(w)).collect();
        let roots: Vec<Vec<VarId>> = loops.iter().map(|&l| self.roots(l)).collect();
        (0..loops.len()).find_map(|t| {
            let starts =
                of_workspace.contains(&loops[t]) || roots[t].iter().any(|r| candidates.contains(r));
            if !starts {
                return None;
            }
            let private: Vec<VarId> = candidates
                .iter()
                .copied()
                .filter(|c| (0..t).all(|s| !roots[s].contains(c)))
                .collect();
            let mut outside = Vec::new();
            for (s, &l) in loops.iter().enumerate() {
                let reads = roots[s].iter().any(|r| inside.contains(r));
                // A loop of the producer iterates the workspace's or private variables
                // only (a fuse with another variable of the expression would sum it too).
                let mut read = roots[s].iter().filter(|r| inside.contains(r));
                let produced = if of_workspace.contains(&l) {
                    read.all(|r| private.contains(r) || w_roots.contains(r))
                } else {
                    read.all(|r| private.contains(r))
                };
                if s < t && (reads || of_workspace.contains(&l)) {
                    outside.push(l);
                } else if s >= t && reads && !produced {
                    return None;
                }
            }
            Some(Placement {
                private,
                at: loops[t],
                outside,
            })
        })
    }

    /// TACO's default workspace name, numbered past every tensor, variable and workspace
    /// of the statement so that it cannot collide with one.
    fn fresh_workspace_name(&self) -> String {
        let mut taken: Vec<String> = self
            .statement
            .tensors
            .iter()
            .map(|t| t.name.clone())
            .collect();
        taken.extend(self.vars.iter().map(|v| v.name.clone()));
        let mut workspaces = Vec::new();
        lexpr::precomputes(&self.rhs, &mut workspaces);
        taken.extend(workspaces.iter().map(|w| w.workspace.clone()));
        std::iter::once("workspace".to_string())
            .chain((1..).map(|n| format!("workspace{n}")))
            .find(|name| !taken.contains(name))
            .expect("an unbounded sequence of names has one not taken")
    }

    /// Find `wanted` in `expr`: the matched subexpression, and a function that builds
    /// `expr` with it replaced by a precomputed node. Nothing under a reduction computed
    /// into a temporary (`under_sum`) is taken: its loops are that temporary's.
    fn extract(&self, expr: &LExpr, wanted: &Wanted, under_sum: bool) -> Option<(LExpr, Rebuild)> {
        if !under_sum {
            for op in [Op::Mul, Op::Add] {
                let parts = wanted.chain(op);
                if parts.len() < 2 || !matches!(expr, LExpr::Binary(o, ..) if *o == op) {
                    continue;
                }
                let operands = chain(expr, op);
                if let Some(picked) = self.pick(&parts, &operands) {
                    let body = join(op, picked.iter().map(|&n| operands[n].clone()));
                    return Some((
                        body,
                        Box::new(move |p| {
                            let node = LExpr::Precomputed(Box::new(p));
                            join(
                                op,
                                operands.iter().enumerate().filter_map(|(n, e)| {
                                    if n == picked[0] {
                                        Some(node.clone())
                                    } else {
                                        (!picked.contains(&n)).then(|| e.clone())
                                    }
                                }),
                            )
                        }),
                    ));
                }
            }
            if self.same(wanted, expr) {
                return Some((expr.clone(), Box::new(|p| LExpr::Precomputed(Box::new(p)))));
            }
        }
        match expr {
            LExpr::Neg(a) => {
                let (body, inner) = self.extract(a, wanted, under_sum)?;
                Some((body, Box::new(move |p| LExpr::Neg(Box::new(inner(p))))))
            }
            LExpr::Sum(v, hoisted, a) => {
                let (body, inner) = self.extract(a, wanted, true)?;
                let (v, hoisted) = (*v, hoisted.clone());
                Some((
                    body,
                    Box::new(move |p| LExpr::Sum(v, hoisted.clone(), Box::new(inner(p)))),
                ))
            }
            LExpr::Precomputed(outer) => {
                let (body, inner) = self.extract(&outer.body, wanted, under_sum)?;
                let outer = (**outer).clone();
                Some((
                    body,
                    Box::new(move |p| {
                        LExpr::Precomputed(Box::new(lexpr::Precompute {
                            body: inner(p),
                            ..outer.clone()
                        }))
                    }),
                ))
            }
            LExpr::Binary(op, a, b) => {
                let op = *op;
                if let Some((body, left)) = self.extract(a, wanted, under_sum) {
                    let b = (**b).clone();
                    return Some((
                        body,
                        Box::new(move |p| {
                            LExpr::Binary(op, Box::new(left(p)), Box::new(b.clone()))
                        }),
                    ));
                }
                let (body, right) = self.extract(b, wanted, under_sum)?;
                let a = (**a).clone();
                Some((
                    body,
                    Box::new(move |p| LExpr::Binary(op, Box::new(a.clone()), Box::new(right(p)))),
                ))
            }
            LExpr::Math(f, args) => {
                let f = *f;
                args.iter().enumerate().find_map(|(k, a)| {
                    let (body, inner) = self.extract(a, wanted, under_sum)?;
                    let args = args.clone();
                    let rebuild: Rebuild = Box::new(move |p| {
                        let mut args = args.clone();
                        args[k] = inner(p);
                        LExpr::Math(f, args)
                    });
                    Some((body, rebuild))
                })
            }
            _ => None,
        }
    }

    /// Operands of `operands` matching each of `parts`, one each, in increasing order.
    fn pick(&self, parts: &[&Wanted], operands: &[LExpr]) -> Option<Vec<usize>> {
        let mut picked: Vec<usize> = Vec::new();
        for part in parts {
            let hit = (0..operands.len())
                .find(|n| !picked.contains(n) && self.same(part, &operands[*n]))?;
            picked.push(hit);
        }
        picked.sort_unstable();
        Some(picked)
    }

    /// `wanted` is `expr`, up to the order of the operands of `*` and `+`.
    fn same(&self, wanted: &Wanted, expr: &LExpr) -> bool {
        let names = |vars: &[VarId]| -> Vec<String> {
            vars.iter().map(|&v| self.vars[v].name.clone()).collect()
        };
        match (wanted, expr) {
            (Wanted::Access(t, idx), LExpr::Access(o)) => {
                let (tensor, vars) = &self.accesses[*o];
                self.statement.tensors[*tensor].name == *t && names(vars) == *idx
            }
            (Wanted::Access(t, idx), LExpr::Precomputed(p)) => {
                p.workspace == *t && names(&p.vars) == *idx
            }
            (Wanted::Literal(a), LExpr::Literal(b)) => a == b,
            (Wanted::Neg(a), LExpr::Neg(b)) => self.same(a, b),
            (Wanted::Binary(op, ..), LExpr::Binary(o, ..))
                if op == o && matches!(op, Op::Mul | Op::Add) =>
            {
                let parts = wanted.chain(*op);
                let operands = chain(expr, *op);
                parts.len() == operands.len() && self.pick(&parts, &operands).is_some()
            }
            (Wanted::Binary(op, a, b), LExpr::Binary(o, x, y)) => {
                op == o && self.same(a, x) && self.same(b, y)
            }
            (Wanted::Math(f, args), LExpr::Math(g, xs)) => {
                f == g
                    && args.len() == xs.len()
                    && args.iter().zip(xs).all(|(a, x)| self.same(a, x))
            }
            _ => false,
        }
    }
}

/// Builds the right-hand side with the precomputed node in place of the matched part.
type Rebuild = Box<dyn Fn(lexpr::Precompute) -> LExpr>;

/// True when `body` holds the workspace `w` (an earlier precompute the new one contains).
fn body_contains(body: &LExpr, w: &lexpr::Precompute) -> bool {
    let mut inner = Vec::new();
    lexpr::precomputes(body, &mut inner);
    inner.iter().any(|p| p.workspace == w.workspace)
}

/// The operands of a chain of `op` in `e`, left to right.
fn chain(e: &LExpr, op: Op) -> Vec<LExpr> {
    match e {
        LExpr::Binary(o, a, b) if *o == op => {
            let mut out = chain(a, op);
            out.extend(chain(b, op));
            out
        }
        other => vec![other.clone()],
    }
}

fn join(op: Op, operands: impl IntoIterator<Item = LExpr>) -> LExpr {
    operands
        .into_iter()
        .reduce(|a, b| LExpr::Binary(op, Box::new(a), Box::new(b)))
        .expect("a chain has an operand")
}
