//! The scheduling transformations: each checks its preconditions and returns a new
//! [`Concrete`], so they chain (`c.split("i","i0","i1",32)?.parallelize(...)?`).
//!
//! Every failure is a [`ScheduleError`] naming the transformation, the precondition and why
//! it does not hold here. Preconditions that depend on how loops are lowered (a loop that
//! co-iterates several sparse operands cannot be parallel; races against the strategy) are
//! checked by [`crate::lower`] and reported the same way.

use std::fmt;

use super::lexpr::{self, LExpr};
use super::{
    order, Concrete, LoopTags, LoopVar, OmpSchedule, Parallel, ParallelUnit, RaceStrategy,
    Relation, VarOrigin,
};
use crate::ir::{Expr, Symbol};
use crate::notation::cin::VarId;

/// Which side of a variable's range `bound` fixes, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoundKind {
    /// The range starts exactly at the value.
    MinExact,
    /// The range starts at or after the value.
    MinConstraint,
    /// The range has exactly `value` iterations (checked when the kernel runs).
    MaxExact,
    /// The range has at most `value` iterations (checked when the kernel runs).
    MaxConstraint,
}

/// One scheduling transformation, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Transform {
    Reorder(String, String),
    Order(Vec<String>),
    Split {
        var: String,
        outer: String,
        inner: String,
        factor: usize,
    },
    Divide {
        var: String,
        outer: String,
        inner: String,
        parts: usize,
    },
    Fuse {
        outer: String,
        inner: String,
        fused: String,
    },
    Pos {
        var: String,
        pos: String,
        tensor: String,
        indices: Vec<String>,
    },
    Coord {
        pos: String,
        coord: String,
    },
    Bound {
        var: String,
        bounded: String,
        kind: BoundKind,
        value: usize,
    },
    Unroll {
        var: String,
        factor: usize,
    },
    Parallelize {
        var: String,
        unit: ParallelUnit,
        races: RaceStrategy,
        schedule: OmpSchedule,
        chunk: usize,
    },
    /// Compute the product `expr` into a dense workspace over `vars`.
    Precompute {
        expr: String,
        vars: Vec<String>,
        producer_vars: Vec<String>,
        workspace: String,
    },
}

/// A transformation whose precondition does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{transform}: precondition failed: {precondition}: {why}")]
pub struct ScheduleError {
    /// The transformation as written.
    pub transform: String,
    /// The precondition, in a few words.
    pub precondition: String,
    /// Why it does not hold for this statement.
    pub why: String,
}

impl ScheduleError {
    pub(crate) fn new(transform: &str, precondition: &str, why: impl Into<String>) -> Self {
        ScheduleError {
            transform: transform.to_string(),
            precondition: precondition.to_string(),
            why: why.into(),
        }
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transform::Reorder(a, b) => write!(f, "reorder({a},{b})"),
            Transform::Order(vars) => write!(f, "order({})", vars.join(",")),
            Transform::Split {
                var,
                outer,
                inner,
                factor,
            } => write!(f, "split({var},{outer},{inner},{factor})"),
            Transform::Divide {
                var,
                outer,
                inner,
                parts,
            } => write!(f, "divide({var},{outer},{inner},{parts})"),
            Transform::Fuse {
                outer,
                inner,
                fused,
            } => write!(f, "fuse({outer},{inner},{fused})"),
            Transform::Pos {
                var,
                pos,
                tensor,
                indices,
            } => write!(f, "pos({var},{pos},{tensor}({}))", indices.join(",")),
            Transform::Coord { pos, coord } => write!(f, "coord({pos},{coord})"),
            Transform::Bound {
                var,
                bounded,
                kind,
                value,
            } => write!(f, "bound({var},{bounded},{kind:?},{value})"),
            Transform::Unroll { var, factor } => write!(f, "unroll({var},{factor})"),
            Transform::Parallelize {
                var,
                unit,
                races,
                schedule,
                chunk,
            } => write!(
                f,
                "parallelize({var},{unit:?},{races:?},{schedule:?},{chunk})"
            ),
            Transform::Precompute {
                expr,
                vars,
                producer_vars,
                workspace,
            } => write!(
                f,
                "precompute({expr},({}),({}),{workspace})",
                vars.join(","),
                producer_vars.join(",")
            ),
        }
    }
}

impl Concrete {
    /// Apply one transformation.
    pub fn apply(&self, t: &Transform) -> Result<Concrete, ScheduleError> {
        let text = t.to_string();
        if self.parallelized && !matches!(t, Transform::Parallelize { .. }) {
            return Err(ScheduleError::new(
                &text,
                "nothing but parallelize follows parallelize",
                "the other transformations' preconditions assume serial loops; move it before \
                 the first parallelize",
            ));
        }
        match t {
            Transform::Reorder(a, b) => self.reorder_vars(&text, a, b),
            Transform::Order(vars) => self.order_vars(&text, vars),
            Transform::Split {
                var,
                outer,
                inner,
                factor,
            } => self.strip_mine(&text, var, outer, inner, *factor, SplitKind::Split),
            Transform::Divide {
                var,
                outer,
                inner,
                parts,
            } => self.strip_mine(&text, var, outer, inner, *parts, SplitKind::Divide),
            Transform::Fuse {
                outer,
                inner,
                fused,
            } => self.fuse_vars(&text, outer, inner, fused),
            Transform::Pos {
                var,
                pos,
                tensor,
                indices,
            } => self.position_space_of(&text, var, pos, tensor, indices),
            Transform::Coord { pos, coord } => self.coordinates_of(&text, pos, coord),
            Transform::Bound {
                var,
                bounded,
                kind,
                value,
            } => self.bound_var(&text, var, bounded, *kind, *value),
            Transform::Precompute {
                expr,
                vars,
                producer_vars,
                workspace,
            } => self.precompute_into(&text, expr, vars, producer_vars, workspace),
            Transform::Unroll { var, factor } => {
                let v = self.loop_named(&text, var)?;
                positive(&text, "the unroll factor is positive", *factor)?;
                let mut next = self.clone();
                next.vars[v].tags.unroll = Some(*factor);
                Ok(next)
            }
            Transform::Parallelize {
                var,
                unit,
                races,
                schedule,
                chunk,
            } => {
                let v = self.loop_named(&text, var)?;
                positive(&text, "the chunk size is positive", *chunk)?;
                if let Some(p) = &self.vars[v].tags.parallel {
                    return Err(ScheduleError::new(
                        &text,
                        "a loop is parallelized once",
                        format!("`{var}` is already parallel on {:?}", p.unit),
                    ));
                }
                let mut next = self.clone();
                next.vars[v].tags.parallel = Some(Parallel {
                    unit: *unit,
                    races: *races,
                    schedule: *schedule,
                    chunk: *chunk,
                });
                next.parallelized = true;
                Ok(next)
            }
        }
    }

    /// `split(var, outer, inner, factor)`: strip-mine `var` into `outer * factor + inner`.
    pub fn split(
        &self,
        var: &str,
        outer: &str,
        inner: &str,
        factor: usize,
    ) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Split {
            var: var.into(),
            outer: outer.into(),
            inner: inner.into(),
            factor,
        })
    }

    /// `divide(var, outer, inner, parts)`: cut `var` into `parts` contiguous chunks.
    pub fn divide(
        &self,
        var: &str,
        outer: &str,
        inner: &str,
        parts: usize,
    ) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Divide {
            var: var.into(),
            outer: outer.into(),
            inner: inner.into(),
            parts,
        })
    }

    /// `reorder(a, b)`: swap two directly nested loops.
    pub fn reorder(&self, a: &str, b: &str) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Reorder(a.into(), b.into()))
    }

    /// `order(vars)`: put the listed loops in this order (the others stay in place).
    pub fn order(&self, vars: &[&str]) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Order(
            vars.iter().map(|s| s.to_string()).collect(),
        ))
    }

    /// `fuse(outer, inner, fused)`: collapse two directly nested loops into one.
    pub fn fuse(&self, outer: &str, inner: &str, fused: &str) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Fuse {
            outer: outer.into(),
            inner: inner.into(),
            fused: fused.into(),
        })
    }

    /// `pos(var, pos, tensor(indices))`: iterate `var` in the position space of that access.
    pub fn pos(
        &self,
        var: &str,
        pos: &str,
        tensor: &str,
        indices: &[&str],
    ) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Pos {
            var: var.into(),
            pos: pos.into(),
            tensor: tensor.into(),
            indices: indices.iter().map(|s| s.to_string()).collect(),
        })
    }

    /// `bound(var, bounded, kind, value)`: a loop with a bound known when compiling.
    pub fn bound(
        &self,
        var: &str,
        bounded: &str,
        kind: BoundKind,
        value: usize,
    ) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Bound {
            var: var.into(),
            bounded: bounded.into(),
            kind,
            value,
        })
    }

    /// `unroll(var, factor)`.
    pub fn unroll(&self, var: &str, factor: usize) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Unroll {
            var: var.into(),
            factor,
        })
    }

    /// `parallelize(var, unit, races)` with OpenMP `schedule(dynamic, 1)`.
    pub fn parallelize(
        &self,
        var: &str,
        unit: ParallelUnit,
        races: RaceStrategy,
    ) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Parallelize {
            var: var.into(),
            unit,
            races,
            schedule: OmpSchedule::Dynamic,
            chunk: 1,
        })
    }

    /// `precompute(expr, vars, vars, workspace)`: compute the product `expr` into a dense
    /// workspace over `vars`, reducing over the variables only `expr` uses.
    pub fn precompute(
        &self,
        expr: &str,
        vars: &[&str],
        workspace: &str,
    ) -> Result<Concrete, ScheduleError> {
        let vars: Vec<String> = vars.iter().map(|s| s.to_string()).collect();
        self.apply(&Transform::Precompute {
            expr: expr.into(),
            vars: vars.clone(),
            producer_vars: vars,
            workspace: workspace.into(),
        })
    }

    fn precompute_into(
        &self,
        text: &str,
        expr: &str,
        vars: &[String],
        producer_vars: &[String],
        workspace: &str,
    ) -> Result<Concrete, ScheduleError> {
        let fail = |pre: &str, why: String| Err(ScheduleError::new(text, pre, why));
        if vars != producer_vars {
            return fail(
                "producer and consumer iterate the same variables",
                "a producer with variables of its own is not supported; pass the same variables \
                 twice"
                    .into(),
            );
        }
        let source = format!("{workspace}({}) = {expr}", vars.join(","));
        let assignment = match crate::notation::parse(&source) {
            Ok(a) => a,
            Err(e) => return fail("the expression is index notation", e.to_string()),
        };
        let mut wanted = Vec::new();
        if !product_factors(&assignment.rhs, &mut wanted) {
            return fail(
                "the expression is a product of accesses",
                format!("`{expr}` contains other operations"),
            );
        }
        let stmt = &self.statement;
        let clash = stmt.tensors.iter().any(|t| t.name == workspace)
            || self.var_named(workspace).is_some()
            || !workspace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if clash {
            return fail(
                "the workspace has a fresh name",
                format!("`{workspace}` names a tensor or variable, or is not an identifier"),
            );
        }
        let mut w_vars = Vec::new();
        for n in vars {
            match stmt.vars.iter().position(|v| v.name == *n) {
                Some(v) => w_vars.push(v),
                None => {
                    return fail(
                        "the workspace's variables are the statement's",
                        format!("`{n}` is not an index variable of the statement"),
                    )
                }
            }
        }
        let mut matched = Vec::new();
        let Some(body_rhs) = self.extract_product(&self.rhs, &wanted, &mut matched, false) else {
            return fail(
                "the expression is a product in the statement",
                format!(
                    "`{expr}` is not a set of factors of one product of the right-hand side \
                     (outside reductions under `+`, `-` or a denominator)"
                ),
            );
        };
        let vars_of = |occs: &[usize]| -> std::collections::BTreeSet<VarId> {
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
        if let Some(&v) = w_vars.iter().find(|v| !inside.contains(v)) {
            return fail(
                "the workspace's variables index the expression",
                format!("`{}` does not occur in `{expr}`", stmt.vars[v].name),
            );
        }
        let private: Vec<VarId> = inside
            .iter()
            .copied()
            .filter(|v| !outside.contains(v) && !w_vars.contains(v))
            .collect();
        if private.is_empty() {
            return fail(
                "the expression reduces over a variable only it uses",
                format!("every variable of `{expr}` is also used outside it, so nothing is saved"),
            );
        }
        let mut next = self.clone();
        next.rhs = body_rhs(&lexpr::Precompute {
            workspace: workspace.to_string(),
            vars: w_vars.clone(),
            private: private.clone(),
            body: LExpr::Zero,
        });
        // The producer runs where the first private loop starts: every other variable of
        // the expression must be bound outside it.
        for &u in inside
            .iter()
            .filter(|u| !private.contains(u) && !w_vars.contains(u))
        {
            next.sum_edges.extend(private.iter().map(|&p| (u, p)));
        }
        next.with_loops(text, next.loop_sequence())
    }

    /// Find the factors `wanted` in one product of `expr`; return a function that builds
    /// the expression with them replaced by a precomputed node (whose body it fills in).
    #[allow(clippy::type_complexity)]
    fn extract_product(
        &self,
        expr: &LExpr,
        wanted: &[(String, Vec<String>)],
        matched: &mut Vec<usize>,
        under_sum: bool,
    ) -> Option<Box<dyn Fn(&lexpr::Precompute) -> LExpr>> {
        let names = |o: usize| {
            let (t, idx) = &self.accesses[o];
            (
                self.statement.tensors[*t].name.clone(),
                idx.iter()
                    .map(|&v| self.statement.vars[v].name.clone())
                    .collect::<Vec<_>>(),
            )
        };
        match expr {
            LExpr::Binary(crate::notation::ast::Op::Mul, ..) | LExpr::Access(_) if !under_sum => {
                let mut factors = Vec::new();
                flatten_product(expr, &mut factors);
                let mut used = vec![false; factors.len()];
                let mut picked = Vec::new();
                for w in wanted {
                    let hit = factors.iter().enumerate().position(|(n, f)| {
                        !used[n] && matches!(f, LExpr::Access(o) if names(*o) == *w)
                    });
                    if let Some(hit) = hit {
                        used[hit] = true;
                        picked.push(hit);
                    }
                }
                if picked.len() == wanted.len() {
                    picked.sort_unstable();
                    let body = product(picked.iter().map(|&n| factors[n].clone()));
                    let rest: Vec<LExpr> = factors
                        .iter()
                        .enumerate()
                        .filter(|(n, _)| !used[*n])
                        .map(|(_, f)| f.clone())
                        .collect();
                    matched.extend(picked.iter().filter_map(|&n| match factors[n] {
                        LExpr::Access(o) => Some(o),
                        _ => None,
                    }));
                    return Some(Box::new(move |p: &lexpr::Precompute| {
                        let node = LExpr::Precomputed(Box::new(lexpr::Precompute {
                            body: body.clone(),
                            ..p.clone()
                        }));
                        product(rest.iter().cloned().chain([node]))
                    }));
                }
                // Not all in this product: look inside its other factors.
                for (n, f) in factors.iter().enumerate() {
                    if matches!(f, LExpr::Access(_)) {
                        continue;
                    }
                    if let Some(inner) = self.extract_product(f, wanted, matched, under_sum) {
                        return Some(Box::new(move |p| {
                            product(factors.iter().enumerate().map(|(k, g)| {
                                if k == n {
                                    inner(p)
                                } else {
                                    g.clone()
                                }
                            }))
                        }));
                    }
                }
                None
            }
            LExpr::Neg(a) => {
                let inner = self.extract_product(a, wanted, matched, under_sum)?;
                Some(Box::new(move |p| LExpr::Neg(Box::new(inner(p)))))
            }
            LExpr::Sum(v, hoisted, a) => {
                let inner = self.extract_product(a, wanted, matched, true)?;
                let (v, hoisted) = (*v, hoisted.clone());
                Some(Box::new(move |p| {
                    LExpr::Sum(v, hoisted.clone(), Box::new(inner(p)))
                }))
            }
            LExpr::Precomputed(outer) => {
                let inner = self.extract_product(&outer.body, wanted, matched, under_sum)?;
                let outer = (**outer).clone();
                Some(Box::new(move |p| {
                    LExpr::Precomputed(Box::new(lexpr::Precompute {
                        body: inner(p),
                        ..outer.clone()
                    }))
                }))
            }
            LExpr::Binary(op, a, b) => {
                let op = *op;
                if let Some(left) = self.extract_product(a, wanted, matched, under_sum) {
                    let b = (**b).clone();
                    return Some(Box::new(move |p| {
                        LExpr::Binary(op, Box::new(left(p)), Box::new(b.clone()))
                    }));
                }
                let right = self.extract_product(b, wanted, matched, under_sum)?;
                let a = (**a).clone();
                Some(Box::new(move |p| {
                    LExpr::Binary(op, Box::new(a.clone()), Box::new(right(p)))
                }))
            }
            _ => None,
        }
    }

    /// A loop variable named `name`.
    fn loop_named(&self, text: &str, name: &str) -> Result<VarId, ScheduleError> {
        let Some(v) = self.var_named(name) else {
            return Err(ScheduleError::new(
                text,
                "the variable exists",
                format!(
                    "`{name}` is not an index variable of this statement; its loops are {}",
                    self.loops().join(", ")
                ),
            ));
        };
        if let Some(rel) = self.replaced_by(v) {
            let by = rel
                .children()
                .iter()
                .map(|&c| self.vars[c].name.clone())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(ScheduleError::new(
                text,
                "the variable is a loop",
                format!("`{name}` was already replaced by {by}"),
            ));
        }
        if self.vars[v].origin == VarOrigin::Storage {
            return Err(ScheduleError::new(
                text,
                "the variable is a loop of the statement",
                format!("`{name}` iterates a structured storage level and cannot be scheduled"),
            ));
        }
        Ok(v)
    }

    fn fresh_var(&mut self, text: &str, name: &str, extent: Expr) -> Result<VarId, ScheduleError> {
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ScheduleError::new(
                text,
                "new variables have identifier names",
                format!("`{name}` is not an identifier"),
            ));
        }
        if self.var_named(name).is_some() {
            return Err(ScheduleError::new(
                text,
                "new variables have fresh names",
                format!("`{name}` already names an index variable"),
            ));
        }
        self.vars.push(LoopVar {
            name: name.to_string(),
            extent,
            origin: VarOrigin::Schedule,
            tags: LoopTags::default(),
        });
        Ok(self.vars.len() - 1)
    }

    fn loop_sequence(&self) -> Vec<VarId> {
        self.order
            .iter()
            .copied()
            .filter(|&v| self.is_loop(v))
            .collect()
    }

    /// Rebuild `order` from a loop sequence: each replaced variable right after the last
    /// of the variables that recover it; then check the order and pick reordered operands.
    fn with_loops(&self, text: &str, loops: Vec<VarId>) -> Result<Concrete, ScheduleError> {
        let mut next = self.clone();
        let mut placed: Vec<VarId> = Vec::new();
        for l in loops {
            placed.push(l);
            loop {
                let ready = next.relations.iter().find(|r| {
                    r.children().iter().all(|c| placed.contains(c))
                        && r.parents().iter().any(|p| !placed.contains(p))
                });
                match ready {
                    Some(r) => placed.extend(r.parents()),
                    None => break,
                }
            }
        }
        next.order = placed;
        next.check_order(text)?;
        Ok(next)
    }

    fn position_of(&self, v: VarId) -> usize {
        self.order
            .iter()
            .position(|&u| u == v)
            .unwrap_or(usize::MAX)
    }

    /// `a` is recovered before any loop derived from `b` starts.
    fn resolved_before(&self, a: VarId, b: VarId) -> bool {
        let first_of_b = self
            .descendants(b)
            .iter()
            .map(|&d| self.position_of(d))
            .min()
            .unwrap_or(usize::MAX);
        if self.position_of(a) < first_of_b {
            return true;
        }
        // Two levels fused in storage order are recovered together.
        matches!(self.created_by_fuse_of(a, b), Some(true))
    }

    /// `Some(true)` when `a` and `b` are fused with `a` outer.
    fn created_by_fuse_of(&self, a: VarId, b: VarId) -> Option<bool> {
        self.relations.iter().find_map(|r| match *r {
            Relation::Fuse { outer, inner, .. } if outer == a && inner == b => Some(true),
            Relation::Fuse { outer, inner, .. } if outer == b && inner == a => Some(false),
            _ => None,
        })
    }

    fn check_order(&mut self, text: &str) -> Result<(), ScheduleError> {
        for &(u, v) in &self.sum_edges {
            if !self.resolved_before(u, v) {
                return Err(ScheduleError::new(
                    text,
                    "no computation moves out of a reduction it does not distribute over",
                    format!(
                        "the sum over `{}` is part of a larger expression (under `+`, `-` or a \
                         denominator) evaluated at each `{}`, so `{}` must stay inside `{}`",
                        self.vars[v].name, self.vars[u].name, self.vars[v].name, self.vars[u].name
                    ),
                ));
            }
        }
        let before = |a: VarId, b: VarId| self.resolved_before(a, b);
        let sparse = super::sparse_accesses(&self.statement, &self.accesses);
        let place = |v: VarId| self.position_of(v);
        match order::conflicts(&self.level_vars, &self.fixed, &sparse, &before, &place) {
            Ok(reordered) => {
                self.reordered = reordered;
                Ok(())
            }
            Err(o) => {
                let (t, _) = &self.accesses[o];
                let tensor = &self.statement.tensors[*t];
                Err(ScheduleError::new(
                    text,
                    "every operand is iterated in its storage order",
                    format!(
                        "`{}` is stored as `{}`, whose levels must be visited in the order {}",
                        tensor.name,
                        tensor.format.spelling(),
                        self.level_vars[o]
                            .iter()
                            .map(|&v| self.vars[v].name.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
        }
    }

    fn reorder_vars(&self, text: &str, a: &str, b: &str) -> Result<Concrete, ScheduleError> {
        let (va, vb) = (self.loop_named(text, a)?, self.loop_named(text, b)?);
        let mut loops = self.loop_sequence();
        let (pa, pb) = (
            loops.iter().position(|&v| v == va).expect("loop"),
            loops.iter().position(|&v| v == vb).expect("loop"),
        );
        if pa.abs_diff(pb) != 1 {
            return Err(ScheduleError::new(
                text,
                "the two loops are directly nested",
                format!(
                    "the loops are {}; use order(...) to move loops further",
                    self.loops().join(", ")
                ),
            ));
        }
        loops.swap(pa, pb);
        self.with_loops(text, loops)
    }

    fn order_vars(&self, text: &str, names: &[String]) -> Result<Concrete, ScheduleError> {
        let mut wanted = Vec::new();
        for n in names {
            let v = self.loop_named(text, n)?;
            if wanted.contains(&v) {
                return Err(ScheduleError::new(
                    text,
                    "each loop is listed once",
                    format!("`{n}` is listed twice"),
                ));
            }
            wanted.push(v);
        }
        let mut loops = self.loop_sequence();
        let mut slots: Vec<usize> = wanted
            .iter()
            .map(|v| loops.iter().position(|u| u == v).expect("loop"))
            .collect();
        slots.sort_unstable();
        for (slot, v) in slots.into_iter().zip(wanted) {
            loops[slot] = v;
        }
        self.with_loops(text, loops)
    }

    fn strip_mine(
        &self,
        text: &str,
        var: &str,
        outer: &str,
        inner: &str,
        amount: usize,
        kind: SplitKind,
    ) -> Result<Concrete, ScheduleError> {
        let v = self.loop_named(text, var)?;
        positive(text, kind.precondition(), amount)?;
        let mut next = self.clone();
        let extent = self.vars[v].extent.clone();
        let n = Expr::Int(amount as i64);
        let (outer_extent, inner_extent) = match kind {
            SplitKind::Split => (crate::ir::simplify(&ceil_div(extent, n.clone())), n.clone()),
            SplitKind::Divide => (n.clone(), crate::ir::simplify(&ceil_div(extent, n))),
        };
        let o = next.fresh_var(text, outer, outer_extent)?;
        let i = next.fresh_var(text, inner, inner_extent)?;
        next.relations.push(Relation::Split {
            parent: v,
            outer: o,
            inner: i,
            by: match kind {
                SplitKind::Split => SplitBy::Factor(amount),
                SplitKind::Divide => SplitBy::Parts(amount),
            },
        });
        let loops = replace_loop(&self.loop_sequence(), v, &[o, i]);
        next.with_loops(text, loops)
    }

    fn fuse_vars(
        &self,
        text: &str,
        outer: &str,
        inner: &str,
        fused: &str,
    ) -> Result<Concrete, ScheduleError> {
        let (vo, vi) = (self.loop_named(text, outer)?, self.loop_named(text, inner)?);
        let loops = self.loop_sequence();
        let po = loops.iter().position(|&v| v == vo).expect("loop");
        if loops.get(po + 1) != Some(&vi) {
            return Err(ScheduleError::new(
                text,
                "the inner loop is directly nested in the outer one",
                format!("the loops are {}", self.loops().join(", ")),
            ));
        }
        if self.position_space(vo).is_some() || self.position_space(vi).is_some() {
            return Err(ScheduleError::new(
                text,
                "both loops are in coordinate space",
                "fuse the coordinate loops first, then take pos of the fused loop",
            ));
        }
        let mut next = self.clone();
        let extent =
            crate::ir::simplify(&(self.vars[vo].extent.clone() * self.vars[vi].extent.clone()));
        let f = next.fresh_var(text, fused, extent)?;
        next.relations.push(Relation::Fuse {
            outer: vo,
            inner: vi,
            fused: f,
        });
        let mut new_loops = loops.clone();
        new_loops.splice(po..po + 2, [f]);
        next.with_loops(text, new_loops)
    }

    fn position_space_of(
        &self,
        text: &str,
        var: &str,
        pos: &str,
        tensor: &str,
        indices: &[String],
    ) -> Result<Concrete, ScheduleError> {
        let v = self.loop_named(text, var)?;
        if self.position_space(v).is_some() {
            return Err(ScheduleError::new(
                text,
                "the variable is in coordinate space",
                format!("`{var}` already iterates a position space"),
            ));
        }
        let access = format!("{tensor}({})", indices.join(","));
        let occurrence = self.accesses.iter().position(|(t, idx)| {
            self.statement.tensors[*t].name == tensor
                && idx.len() == indices.len()
                && idx
                    .iter()
                    .zip(indices)
                    .all(|(&u, n)| self.statement.vars[u].name == *n)
        });
        let Some(o) = occurrence else {
            return Err(ScheduleError::new(
                text,
                "the access appears in the statement",
                format!("`{access}` is not an access of the right-hand side"),
            ));
        };
        let roots = self.roots(v);
        let levels: Vec<usize> = self.level_vars[o]
            .iter()
            .enumerate()
            .filter(|(_, u)| roots.contains(u))
            .map(|(k, _)| k)
            .collect();
        if levels.len() != roots.len() {
            return Err(ScheduleError::new(
                text,
                "the access is indexed by the variable",
                format!("`{access}` has no storage level for every variable `{var}` stands for"),
            ));
        }
        let consecutive = levels.windows(2).all(|w| w[1] == w[0] + 1);
        let in_fuse_order = self.fuse_order(v)
            == levels
                .iter()
                .map(|&k| self.level_vars[o][k])
                .collect::<Vec<_>>();
        if !consecutive || !in_fuse_order {
            return Err(ScheduleError::new(
                text,
                "fused variables are directly nested in the access's storage order",
                format!(
                    "`{}` stores its levels in the order {}",
                    access,
                    self.level_vars[o]
                        .iter()
                        .map(|&u| self.vars[u].name.clone())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let format = &self.statement.tensors[self.accesses[o].0].format;
        let leaf = &format.levels()[*levels.last().expect("a level")].format;
        if !leaf.capabilities().coord_pos_iter {
            return Err(ScheduleError::new(
                text,
                "the access's level has a position space",
                format!(
                    "level {} of `{access}` ({}) is not iterated by position",
                    levels.last().expect("a level") + 1,
                    leaf.name()
                ),
            ));
        }
        let mut next = self.clone();
        // The extent of a position space is only known at run time: lowering computes it
        // when the space's first loop starts.
        let extent = Expr::Symbol(Symbol::SegmentLength {
            var: next.vars.len(),
        });
        let p = next.fresh_var(text, pos, extent)?;
        next.relations.push(Relation::Pos {
            parent: v,
            pos: p,
            occurrence: o,
        });
        let loops = replace_loop(&self.loop_sequence(), v, &[p]);
        next.with_loops(text, loops)
    }

    /// `coord(pos, coord)`: iterate the coordinates of a position loop's segment instead.
    pub fn coord(&self, pos: &str, coord: &str) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Coord {
            pos: pos.into(),
            coord: coord.into(),
        })
    }

    fn coordinates_of(
        &self,
        text: &str,
        pos: &str,
        coord: &str,
    ) -> Result<Concrete, ScheduleError> {
        let p = self.loop_named(text, pos)?;
        let Some(&Relation::Pos {
            parent, occurrence, ..
        }) = self.created_by(p)
        else {
            return Err(ScheduleError::new(
                text,
                "the variable is a position variable",
                format!("`{pos}` was not created by pos (split it after coord instead)"),
            ));
        };
        let (t, _) = &self.accesses[occurrence];
        let levels = self.statement.tensors[*t].format.levels();
        let level = self.level_vars[occurrence]
            .iter()
            .position(|&u| u == parent)
            .map(|k| &levels[k].format);
        let searchable = level.is_some_and(|l| l.properties().ordered && l.properties().unique);
        if !searchable {
            return Err(ScheduleError::new(
                text,
                "the position space is one ordered level with unique coordinates",
                format!(
                    "`{pos}` covers fused levels or an unordered or non-unique level, whose \
                     positions cannot be searched by coordinate"
                ),
            ));
        }
        let mut next = self.clone();
        let extent = Expr::Symbol(Symbol::CoordRange {
            var: next.vars.len(),
        });
        let c = next.fresh_var(text, coord, extent)?;
        next.relations.push(Relation::Coord {
            parent: p,
            coord: c,
        });
        let loops = replace_loop(&self.loop_sequence(), p, &[c]);
        next.with_loops(text, loops)
    }

    /// The statement variables a fused variable stands for, outer first.
    pub(crate) fn fuse_order(&self, v: VarId) -> Vec<VarId> {
        match self.created_by(v) {
            Some(Relation::Fuse { outer, inner, .. }) => {
                let mut out = self.fuse_order(*outer);
                out.extend(self.fuse_order(*inner));
                out
            }
            Some(Relation::Bound { parent, .. }) => self.fuse_order(*parent),
            _ => vec![v],
        }
    }

    fn bound_var(
        &self,
        text: &str,
        var: &str,
        bounded: &str,
        kind: BoundKind,
        value: usize,
    ) -> Result<Concrete, ScheduleError> {
        let v = self.loop_named(text, var)?;
        if self.position_space(v).is_some() {
            return Err(ScheduleError::new(
                text,
                "the variable is in coordinate space",
                format!("`{var}` iterates a position space, whose bounds come from the data"),
            ));
        }
        let extent = self.vars[v].extent.clone();
        let new_extent = match kind {
            BoundKind::MinExact | BoundKind::MinConstraint if value != 0 => {
                return Err(ScheduleError::new(
                    text,
                    "the bound holds for every input",
                    format!(
                        "`{var}` starts at 0, so its minimum cannot be {value}; a larger start \
                         would skip iterations"
                    ),
                ))
            }
            BoundKind::MinExact | BoundKind::MinConstraint => extent,
            BoundKind::MaxExact => Expr::Int(value as i64),
            BoundKind::MaxConstraint => Expr::min(extent, Expr::Int(value as i64)),
        };
        let mut next = self.clone();
        let b = next.fresh_var(text, bounded, crate::ir::simplify(&new_extent))?;
        next.relations.push(Relation::Bound {
            parent: v,
            bounded: b,
            kind,
            value,
        });
        let loops = replace_loop(&self.loop_sequence(), v, &[b]);
        next.with_loops(text, loops)
    }
}

/// The accesses of a product of accesses; false when it has other operations.
fn product_factors(e: &crate::notation::ast::Expr, out: &mut Vec<(String, Vec<String>)>) -> bool {
    use crate::notation::ast::{ExprKind, Op};
    match &e.kind {
        ExprKind::Access(a) => {
            out.push((a.tensor.clone(), a.indices.clone()));
            true
        }
        ExprKind::Binary(Op::Mul, a, b) => product_factors(a, out) && product_factors(b, out),
        _ => false,
    }
}

fn flatten_product(e: &LExpr, out: &mut Vec<LExpr>) {
    match e {
        LExpr::Binary(crate::notation::ast::Op::Mul, a, b) => {
            flatten_product(a, out);
            flatten_product(b, out);
        }
        other => out.push(other.clone()),
    }
}

fn product(factors: impl IntoIterator<Item = LExpr>) -> LExpr {
    factors
        .into_iter()
        .reduce(|a, b| LExpr::Binary(crate::notation::ast::Op::Mul, Box::new(a), Box::new(b)))
        .unwrap_or(LExpr::Literal(1.0))
}

/// How a split relation sizes its inner loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitBy {
    /// The inner loop has this many iterations.
    Factor(usize),
    /// The outer loop has this many iterations (`divide`).
    Parts(usize),
}

#[derive(Clone, Copy)]
enum SplitKind {
    Split,
    Divide,
}

impl SplitKind {
    fn precondition(self) -> &'static str {
        match self {
            SplitKind::Split => "the split factor is positive",
            SplitKind::Divide => "the number of parts is positive",
        }
    }
}

fn positive(text: &str, precondition: &str, value: usize) -> Result<(), ScheduleError> {
    if value == 0 {
        return Err(ScheduleError::new(text, precondition, "it is 0"));
    }
    Ok(())
}

pub(crate) fn ceil_div(a: Expr, b: Expr) -> Expr {
    Expr::bin(crate::ir::BinOp::Div, a + b.clone() - Expr::Int(1), b)
}

fn replace_loop(loops: &[VarId], v: VarId, with: &[VarId]) -> Vec<VarId> {
    let mut out = Vec::with_capacity(loops.len() + with.len());
    for &l in loops {
        if l == v {
            out.extend_from_slice(with);
        } else {
            out.push(l);
        }
    }
    out
}
