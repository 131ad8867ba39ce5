//! Polyhedral scanning proper: walking the execution dimensions, splitting statements
//! at constant dimensions, turning each loop dimension's constraints into assignments,
//! bounds (dividing ones for tile loops) and guards, and peeling fused statements whose
//! bounds are a constant apart.

use super::*;

/// A statement being scanned, with the guards it still has to apply.
#[derive(Clone)]
pub(super) struct Item {
    pub(super) stmt: usize,
    pub(super) pending: Vec<Expr>,
}

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

/// A loop bound: `var >= ceil(expr / div)` (a lower bound) or `var <= floor(expr / div)`
/// (an upper one), from `div * var - expr >= 0` or `expr - div * var >= 0`; `div` is 1
/// except where a loop runs over tiles.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::spf) struct Bound {
    pub(in crate::spf) expr: Affine,
    pub(in crate::spf) div: i64,
}

impl Bound {
    /// The bound when it needs no division.
    pub(in crate::spf) fn unit(&self) -> Option<&Affine> {
        (self.div == 1).then_some(&self.expr)
    }

    /// The constraint it came from, on dimension `d`.
    fn constraint(&self, d: usize, lower: bool) -> Constraint {
        let scaled = Affine::term(Term::Var(d)).scale(self.div);
        Constraint {
            expr: if lower {
                scaled.add_scaled(-1, &self.expr)
            } else {
                self.expr.add_scaled(-1, &scaled)
            },
            kind: Relation0::NonNegative,
        }
    }
}

/// `floor(a / b)` for `b >= 1`, also for negative `a` (C's `/` truncates toward zero).
pub(super) fn floor_div(a: Expr, b: i64) -> Expr {
    if b == 1 {
        return a;
    }
    let rem = Expr::bin(
        BinOp::Rem,
        Expr::bin(BinOp::Rem, a.clone(), Expr::Int(b)) + Expr::Int(b),
        Expr::Int(b),
    );
    ir::simplify(&Expr::bin(BinOp::Div, a - rem, Expr::Int(b)))
}

/// `ceil(a / b)` for `b >= 1`.
pub(super) fn ceil_div(a: Expr, b: i64) -> Expr {
    if b == 1 {
        return a;
    }
    ir::simplify(&(Expr::Int(0) - floor_div(Expr::Int(0) - a, b)))
}

/// How a statement's constraints at one dimension are used.
#[derive(Default)]
pub(in crate::spf) struct AtDim {
    pub(in crate::spf) definition: Option<Affine>,
    pub(in crate::spf) lower: Vec<Bound>,
    pub(in crate::spf) upper: Vec<Bound>,
    guards: Vec<Constraint>,
}

/// Sort the constraints whose innermost variable is dimension `d` into a definition,
/// bounds and guards.
pub(in crate::spf) fn classify(constraints: &[Constraint], d: usize) -> AtDim {
    let mut at = AtDim::default();
    for c in constraints.iter().filter(|c| c.expr.max_var() == Some(d)) {
        let coef = c.expr.coefficient(d);
        let in_uf = c.expr.var_in_uf(d);
        // rest = expr - coef * d
        let rest = c.expr.add_scaled(-coef, &Affine::term(Term::Var(d)));
        match c.kind {
            Relation0::Zero if coef.abs() == 1 && !in_uf && at.definition.is_none() => {
                at.definition = Some(rest.scale(-coef));
            }
            // coef * d + rest >= 0: d >= ceil(-rest / coef), or d <= floor(rest / -coef).
            Relation0::NonNegative if !in_uf && coef > 0 => at.lower.push(Bound {
                expr: rest.scale(-1),
                div: coef,
            }),
            Relation0::NonNegative if !in_uf => at.upper.push(Bound {
                expr: rest,
                div: -coef,
            }),
            _ => at.guards.push(c.clone()),
        }
    }
    if at.definition.is_some() {
        // The bounds of a defined dimension are checks on its value.
        for b in at.lower.drain(..) {
            at.guards.push(b.constraint(d, true));
        }
        for b in at.upper.drain(..) {
            at.guards.push(b.constraint(d, false));
        }
    }
    at
}

impl Context<'_> {
    /// Scan `items` from dimension `d` on.
    pub(super) fn scan(
        &mut self,
        all: &[Scheduled],
        d: usize,
        items: Vec<Item>,
        env: &mut Vec<Option<Var>>,
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        if items.len() == 1 && !items[0].pending.is_empty() {
            let guard = conjunction(items[0].pending.clone());
            let item = Item {
                stmt: items[0].stmt,
                pending: Vec::new(),
            };
            let inner = self.scan(all, d, vec![item], env, parallel, leaf)?;
            return Ok(vec![Stmt::If(guard, inner, Vec::new())]);
        }
        if d == env.len() {
            if let [a, b, ..] = items.as_slice() {
                return Err(SpfError::new(
                    format!(
                        "{} and {} are scheduled at the same execution tuples: give them \
                         different constants in some schedule dimension",
                        all[a.stmt].stmt.name, all[b.stmt].stmt.name
                    ),
                    all[b.stmt].stmt.span,
                ));
            }
            return Ok(self.leaf(&all[items[0].stmt], env, leaf));
        }
        let constants: Vec<Option<i64>> = items.iter().map(|i| all[i.stmt].dims[d]).collect();
        if constants.iter().all(Option::is_some) {
            let mut values: Vec<i64> = constants.iter().flatten().copied().collect();
            values.sort_unstable();
            values.dedup();
            let mut out = Vec::new();
            for v in values {
                let group = items
                    .iter()
                    .filter(|i| all[i.stmt].dims[d] == Some(v))
                    .cloned()
                    .collect();
                out.extend(self.scan(all, d + 1, group, env, parallel && d == 0, leaf)?);
            }
            return Ok(out);
        }
        if let Some(k) = constants.iter().position(Option::is_some) {
            return Err(SpfError::new(
                format!(
                    "schedule dimension {d} is a loop for some statements but the constant \
                     {} for {}: align the schedules",
                    constants[k].expect("found"),
                    all[items[k].stmt].stmt.name
                ),
                all[items[k].stmt].stmt.span,
            ));
        }
        self.scan_loop(all, d, items, env, parallel, leaf)
    }

    fn scan_loop(
        &mut self,
        all: &[Scheduled],
        d: usize,
        items: Vec<Item>,
        env: &mut Vec<Option<Var>>,
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        let ats: Vec<AtDim> = items
            .iter()
            .map(|i| classify(&all[i.stmt].constraints, d))
            .collect();
        let hint = all[items[0].stmt].names[d].clone();
        let defined = ats.iter().filter(|a| a.definition.is_some()).count();
        if defined > 0 {
            let first = ats[0].definition.clone();
            if defined < ats.len() || ats.iter().any(|a| a.definition != first) {
                return Err(SpfError::new(
                    format!(
                        "statements share execution dimension {d} but define it differently: \
                         separate them with a constant dimension"
                    ),
                    all[items[0].stmt].stmt.span,
                ));
            }
            let var = self.function.fresh_var(hint, Type::Index);
            let value = self.affine(&first.expect("defined"), env);
            env[d] = Some(var);
            let items = self.with_guards(items, &ats, env);
            let mut out = vec![Stmt::Decl(var, value)];
            out.extend(self.scan(all, d + 1, items, env, false, leaf)?);
            env[d] = None;
            return Ok(out);
        }
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        for (item, at) in items.iter().zip(&ats) {
            let name = &all[item.stmt].stmt.name;
            if at.lower.is_empty() || at.upper.is_empty() {
                return Err(SpfError::new(
                    format!(
                        "execution dimension {d} of {name} has no {} bound: every loop needs \
                         `lo <= var` and `var < hi` constraints with outer variables, symbols \
                         and functions of outer variables",
                        if at.lower.is_empty() {
                            "lower"
                        } else {
                            "upper"
                        }
                    ),
                    all[item.stmt].stmt.span,
                ));
            }
            let lower = dedup(
                at.lower
                    .iter()
                    .map(|b| ceil_div(self.affine(&b.expr, env), b.div)),
            );
            let upper = dedup(at.upper.iter().map(|b| match b.unit() {
                Some(e) => self.affine(&e.add_scaled(1, &Affine::constant(1)), env),
                None => floor_div(self.affine(&b.expr, env), b.div) + Expr::Int(1),
            }));
            starts.push(lower.into_iter().reduce(Expr::max).expect("nonempty"));
            ends.push(upper.into_iter().reduce(Expr::min).expect("nonempty"));
        }
        let same = starts.iter().all(|s| *s == starts[0]) && ends.iter().all(|e| *e == ends[0]);
        if !same {
            if let Some(ranges) = constant_apart(&ats) {
                return self.peeled(all, d, items, &ats, &ranges, env, parallel, leaf);
            }
        }
        if !same
            && ((d + 1)..env.len()).any(|e| items.iter().any(|i| all[i.stmt].dims[e].is_none()))
        {
            return Err(SpfError::new(
                format!(
                    "statements fused at execution dimension {d} have different bounds and \
                     inner loops: not supported yet (fuse only at the innermost loop)"
                ),
                all[items[0].stmt].stmt.span,
            ));
        }
        let var = self.function.fresh_var(hint, Type::Index);
        env[d] = Some(var);
        let mut items = self.with_guards(items, &ats, env);
        if !same {
            for (item, (s, e)) in items.iter_mut().zip(starts.iter().zip(&ends)) {
                item.pending.push(Expr::and(
                    Expr::bin(BinOp::Ge, Expr::Var(var), s.clone()),
                    Expr::lt(Expr::Var(var), e.clone()),
                ));
            }
        }
        let start = dedup(starts)
            .into_iter()
            .reduce(Expr::min)
            .expect("nonempty");
        let end = dedup(ends).into_iter().reduce(Expr::max).expect("nonempty");
        let body = self.scan(all, d + 1, items, env, false, leaf)?;
        env[d] = None;
        Ok(vec![Stmt::For(Loop {
            var,
            start,
            end,
            body,
            kind: if parallel {
                parallel_kind()
            } else {
                LoopKind::Serial
            },
        })])
    }

    /// Fused statements whose bounds are `base + constant`: the loop is cut into pieces
    /// that each run a fixed set of the statements. With the starts `s_0 < ... < s_m` and
    /// the ends `e_0 < ... < e_n` (exclusive), the pieces are `[s_k, s_k+1)` (the
    /// statements started by `s_k`; each keeps its end as a guard, since the start and end
    /// bounds are not known to be ordered), then `[s_m, max(e_0, s_m))` with every
    /// statement and no guard, then `[max(e_k, s_m), max(e_k+1, s_m))` with the
    /// statements not ended (no guard either). The pieces partition the union of the
    /// ranges in increasing order, so each instance runs once and in order. A piece at
    /// most one iteration long is peeled: the variable is set and the body guarded. Each
    /// piece's loop is parallel when the whole loop may be.
    #[allow(clippy::too_many_arguments)]
    fn peeled(
        &mut self,
        all: &[Scheduled],
        d: usize,
        items: Vec<Item>,
        ats: &[AtDim],
        ranges: &[(i64, i64)],
        env: &mut Vec<Option<Var>>,
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        // `constant_apart` found one bound of each kind, without division.
        let base_start = &ats[0].lower[0].expr;
        let base_end = ats[0].upper[0].expr.add_scaled(1, &Affine::constant(1));
        let mut starts: Vec<i64> = ranges.iter().map(|r| r.0).collect();
        let mut ends: Vec<i64> = ranges.iter().map(|r| r.1).collect();
        starts.sort_unstable();
        starts.dedup();
        ends.sort_unstable();
        ends.dedup();
        let at_start = |k: i64| base_start.add_scaled(1, &Affine::constant(k));
        let at_end = |k: i64| base_end.add_scaled(1, &Affine::constant(k));
        let last_start = *starts.last().expect("nonempty");
        let hint = all[items[0].stmt].names[d].clone();
        let mut out = Vec::new();
        // (from, to, whether the piece is at most one iteration, members with guards).
        let mut pieces: Vec<(Expr, Expr, bool, Vec<usize>, bool)> = Vec::new();
        for w in starts.windows(2) {
            let members = (0..items.len()).filter(|&n| ranges[n].0 <= w[0]).collect();
            let (from, to) = (
                self.affine(&at_start(w[0]), env),
                self.affine(&at_start(w[1]), env),
            );
            pieces.push((from, to, w[1] - w[0] == 1, members, true));
        }
        let clamp = |this: &mut Self, k: i64, env: &[Option<Var>]| {
            Expr::max(
                this.affine(&at_end(k), env),
                this.affine(&at_start(last_start), env),
            )
        };
        let first_end = ends[0];
        pieces.push((
            self.affine(&at_start(last_start), env),
            clamp(self, first_end, env),
            false,
            (0..items.len()).collect(),
            false,
        ));
        for w in ends.windows(2) {
            let members = (0..items.len()).filter(|&n| ranges[n].1 >= w[1]).collect();
            let (from, to) = (clamp(self, w[0], env), clamp(self, w[1], env));
            pieces.push((from, to, w[1] - w[0] == 1, members, false));
        }
        for (from, to, single, members, guarded) in pieces {
            let var = self.function.fresh_var(hint.clone(), Type::Index);
            env[d] = Some(var);
            let chosen: Vec<Item> = members.iter().map(|&n| items[n].clone()).collect();
            let chosen_ats: Vec<AtDim> = members
                .iter()
                .map(|&n| classify(&all[items[n].stmt].constraints, d))
                .collect();
            let mut chosen = self.with_guards(chosen, &chosen_ats, env);
            if guarded {
                for (item, &n) in chosen.iter_mut().zip(&members) {
                    let end = self.affine(&at_end(ranges[n].1), env);
                    item.pending.push(Expr::lt(Expr::Var(var), end));
                }
            }
            let body = self.scan(all, d + 1, chosen, env, false, leaf)?;
            env[d] = None;
            if single {
                let mut block = vec![Stmt::Decl(var, from)];
                block.push(Stmt::If(Expr::lt(Expr::Var(var), to), body, Vec::new()));
                out.push(Stmt::Block(block));
            } else {
                out.push(Stmt::For(Loop {
                    var,
                    start: from,
                    end: to,
                    body,
                    kind: if parallel {
                        parallel_kind()
                    } else {
                        LoopKind::Serial
                    },
                }));
            }
        }
        Ok(out)
    }

    pub(super) fn with_guards(
        &self,
        mut items: Vec<Item>,
        ats: &[AtDim],
        env: &[Option<Var>],
    ) -> Vec<Item> {
        for (item, at) in items.iter_mut().zip(ats) {
            item.pending
                .extend(at.guards.iter().map(|g| self.constraint(g, env)));
        }
        items
    }
}

/// When every statement has one lower and one upper bound at this dimension, the starts
/// differing from the first's by constants and so the ends, each statement's `(start, end)`
/// offsets from the first's.
fn constant_apart(ats: &[AtDim]) -> Option<Vec<(i64, i64)>> {
    let single = |at: &AtDim| match (at.lower.as_slice(), at.upper.as_slice()) {
        ([lo], [hi]) => Some((lo.unit()?.clone(), hi.unit()?.clone())),
        _ => None,
    };
    let (lo0, hi0) = single(&ats[0])?;
    ats.iter()
        .map(|at| {
            let (lo, hi) = single(at)?;
            Some((
                lo.add_scaled(-1, &lo0).as_constant()?,
                hi.add_scaled(-1, &hi0).as_constant()?,
            ))
        })
        .collect()
}

/// The expressions, each once, in order.
fn dedup(exprs: impl IntoIterator<Item = Expr>) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    for e in exprs {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

pub(super) fn conjunction(conds: Vec<Expr>) -> Expr {
    conds
        .into_iter()
        .reduce(Expr::and)
        .unwrap_or(Expr::Bool(true))
}
