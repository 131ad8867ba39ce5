//! Recovering variables that scheduling transformations (and blocked storage levels)
//! replaced: coordinate recovery, iteration guards and position-space iteration
//! (Senanayake §5.2-5.4).
//!
//! - `split`/`divide`: `i = i0 * factor + i1`, guarded by `i < extent(i)`;
//! - `bound`: `i = ib`, with the asserted bound checked when the kernel starts;
//! - `fuse`: `i = f / extent(j)`, `j = f % extent(j)`;
//! - `pos`: the loops iterate positions of one operand's levels. When the first loop of a
//!   position space starts, the segment of positions below the resolved parent is
//!   declared; at the pos variable, the coordinates are read from the storage. A fused
//!   position space (several levels) tracks the positions of its upper levels: a binary
//!   search when a tracker is unset or the position moved backwards, then a forward scan
//!   (`while (end(q) <= p) q++`, which also skips empty segments).
//!
//! A recovered statement variable is then resolved like any other: every operand that
//! stores it is located, which requires a product of locatable levels.

use super::iterate::conjunction;
use super::{lattice, Coalesce, Dest, LExpr, LowerError, Lowerer, Scope, Step};
use crate::format::{Level, LevelSite};
use crate::ir::{Expr, ParallelUnit, Stmt, Type};
use crate::notation::cin::VarId;
use crate::schedule::{BoundKind, Relation, SplitBy};

/// A position space entered by the loops of one pos variable.
#[derive(Clone, Debug)]
pub(super) struct Segment {
    /// Storage levels (0-based) it covers, outermost first.
    levels: Vec<usize>,
    /// Key stem of the pos variable's state.
    stem: String,
    /// The loop whose body declares the trackers and the accumulator, private to each of
    /// its iterations: the innermost loop running in parallel (on threads or GPU units,
    /// whose iterations hold their own) from the loop that entered the space to its
    /// innermost loop, else the loop that entered it.
    state_at: VarId,
}

impl Segment {
    fn begin(&self, idx: usize) -> String {
        format!("{}\u{1}_b{idx}", self.stem)
    }
    fn end(&self, idx: usize) -> String {
        format!("{}\u{1}_e{idx}", self.stem)
    }
    fn tracker(&self, idx: usize) -> String {
        format!("{}\u{1}_q{idx}", self.stem)
    }
    fn position(&self, idx: usize) -> String {
        format!("{}\u{1}_p{idx}", self.stem)
    }
}

impl Lowerer<'_> {
    /// Lower the variable `v` that `rel` replaced, from the variables it created.
    pub(super) fn recover(&mut self, step: Step, rel: &Relation) -> Result<Vec<Stmt>, LowerError> {
        let (v, rest, expr, dest, scope) = step.parts();
        let value = match *rel {
            Relation::Split {
                outer, inner, by, ..
            } => self.var(outer) * self.split_factor(v, by) + self.var(inner),
            Relation::Bound {
                bounded,
                kind,
                value,
                ..
            } => {
                self.assume_bound(v, kind, value);
                self.var(bounded)
            }
            Relation::Fuse {
                outer,
                inner,
                fused,
            } => {
                let op = if v == outer {
                    crate::ir::BinOp::Div
                } else {
                    crate::ir::BinOp::Rem
                };
                Expr::bin(op, self.var(fused), self.size(inner))
            }
            Relation::Pos {
                pos, occurrence, ..
            } => return self.recover_position(step, pos, occurrence),
            Relation::Coord { coord, .. } => {
                return self.search_position(v, coord, rest, expr, dest, scope)
            }
        };
        let body = self.resolve(v, rest, expr, dest, scope)?;
        let mut stmts = vec![Stmt::Decl(self.named(self.name(v), Type::Index), value)];
        if scope.guarded.contains(&v) {
            stmts.extend(body);
        } else {
            stmts.push(Stmt::If(Expr::lt(self.var(v), self.size(v)), body, vec![]));
        }
        Ok(stmts)
    }

    fn split_factor(&self, parent: VarId, by: SplitBy) -> Expr {
        match by {
            SplitBy::Factor(f) => Expr::Int(f as i64),
            SplitBy::Parts(n) => crate::schedule::ceil_div(self.size(parent), Expr::Int(n as i64)),
        }
    }

    /// When `v` is the inner loop of a split whose parent is recovered inside it (its
    /// outer loop enclosing it), the loop can stop at the parent's extent instead of
    /// guarding every iteration, since the guard would skip everything the later
    /// iterations do (loops between `v` and the parent, such as a singleton level's
    /// under a blocked one, only read): the parent and how many of `v`'s iterations are
    /// left before the parent's extent (the loop runs the fewer of those and `v`'s extent).
    pub(super) fn tail_of_split(&self, v: VarId, rest: &[VarId]) -> Option<(VarId, Expr)> {
        let &Relation::Split {
            parent,
            outer,
            inner,
            by,
        } = self.plan.created_by(v)?
        else {
            return None;
        };
        let position = |u: VarId| self.plan.order.iter().position(|&w| w == u);
        if inner != v || !rest.contains(&parent) || position(outer)? > position(v)? {
            return None;
        }
        let factor = self.split_factor(parent, by);
        Some((parent, self.size(parent) - self.var(outer) * factor))
    }

    fn assume_bound(&mut self, v: VarId, kind: BoundKind, value: usize) {
        let extent = self.plan.vars[v].extent.clone();
        let name = &self.plan.vars[v].name;
        let (holds, claim) = match kind {
            BoundKind::MaxExact => (
                Expr::eq(extent, Expr::Int(value as i64)),
                format!("exactly {value}"),
            ),
            BoundKind::MaxConstraint => (
                Expr::bin(crate::ir::BinOp::Le, extent, Expr::Int(value as i64)),
                format!("at most {value}"),
            ),
            BoundKind::MinExact | BoundKind::MinConstraint => return,
        };
        let message = format!(
            "bound({name},...,{kind:?},{value}): the schedule asserts that `{name}` has {claim} \
             iterations, but the inputs give it a different extent"
        );
        if !self.assumptions.iter().any(|(_, m)| *m == message) {
            self.assumptions.push((holds, message));
        }
    }

    /// Locate every operand that stores the just-computed variable `v`, then continue.
    pub(super) fn resolve(
        &mut self,
        v: VarId,
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        self.resolve_all(&[v], rest, expr, dest, scope)
    }

    /// [`Self::resolve`] for several variables whose values are all set, in order.
    pub(super) fn resolve_all(
        &mut self,
        vars: &[VarId],
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let Some((&v, then)) = vars.split_first() else {
            return self.lower(rest, expr, dest, scope);
        };
        let Some(points) = self.lattice(expr, v, scope) else {
            return self.resolve_all(then, rest, expr, dest, scope);
        };
        if points.len() > 1 || points[0].universe {
            return self.resolve_union(vars, rest, expr, dest, scope, &points);
        }
        let located: Vec<usize> = points[0].iterators.iter().copied().collect();
        self.check_reachable(v, &located, scope)?;
        let (mut body, flags, inner) = self.locate_all(&located, v, scope);
        let cond = conjunction(flags.into_iter().map(|f| f.1));
        body.push(Stmt::If(
            cond,
            self.resolve_all(then, rest, expr, dest, &inner)?,
            vec![],
        ));
        Ok(body)
    }

    /// A computed variable where operands are added (or a constant is): the loops that
    /// computed it visit every coordinate, so each operand that stores it is located, and
    /// the lattice's cases test which were found (as a dense loop over the dimension does).
    fn resolve_union(
        &mut self,
        vars: &[VarId],
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
        points: &[lattice::Point],
    ) -> Result<Vec<Stmt>, LowerError> {
        let (&v, then) = vars.split_first().expect("a variable to resolve");
        let located: Vec<usize> = points
            .iter()
            .flat_map(|p| p.iterators.iter().copied())
            .collect::<std::collections::BTreeSet<usize>>()
            .into_iter()
            .collect();
        self.check_reachable(v, &located, scope)?;
        let (mut body, flags, inner) = self.locate_all(&located, v, scope);
        let cases = super::iterate::lattice_cases(points, &flags);
        let step = Step {
            var: v,
            rest,
            expr,
            dest,
            scope,
        };
        body.push(self.case_chain(step, then, &cases, &inner)?);
        Ok(body)
    }

    /// Every operand in `located` can be reached at the computed coordinate `v`.
    fn check_reachable(
        &self,
        v: VarId,
        located: &[usize],
        scope: &Scope,
    ) -> Result<(), LowerError> {
        let name = &self.plan.vars[v].name;
        if let Some(&o) = located.iter().find(|&&o| !self.reachable(o, scope)) {
            return Err(LowerError(format!(
                "`{name}` is computed from other loops (a schedule or a blocked format), so every \
                 operand that stores it must be reached by locate or by search in ordered unique \
                 coordinates, but level {} of `{}` ({}) allows neither; iterate that level's \
                 positions instead (pos), or store it dense or hashed",
                scope.resolved(o) + 1,
                self.operands[self.occurrences[o].operand].name,
                self.level(o, scope).name()
            )));
        }
        for &o in located {
            self.check_locatable(o, scope)?;
        }
        Ok(())
    }

    /// The position of the next level of each position space in the order a level is
    /// reached: `start(q)` is where the segment of parent position `q` begins.
    fn segment_start(level: &Level, site: &LevelSite, parent: &Expr) -> Option<Expr> {
        if let Some((begin, _)) = level.pos_iter(site, parent) {
            return Some(begin);
        }
        let (first, _) = level.coord_iter(site)?;
        level.coord_access(site, parent, &first).map(|p| p.0)
    }

    /// When `u` is the first loop of a position space, declare the space's segment.
    pub(super) fn enter_position_space(
        &mut self,
        u: VarId,
        scope: &Scope,
    ) -> Result<(Vec<Stmt>, Scope), LowerError> {
        let Some(&Relation::Pos {
            parent,
            pos,
            occurrence: o,
        }) = self.plan.pos_ancestor(u)
        else {
            return Ok((vec![], scope.clone()));
        };
        if scope.segments.contains_key(&pos) {
            return Ok((vec![], scope.clone()));
        }
        let roots = self.plan.roots(parent);
        let occ = &self.occurrences[o];
        let levels: Vec<usize> = (0..occ.levels.len())
            .filter(|&k| roots.contains(&occ.level_vars[k]))
            .collect();
        let pos_name = self.plan.vars[pos].name.clone();
        if levels.first() != Some(&scope.resolved(o)) {
            return Err(LowerError(format!(
                "the position space `{pos_name}` starts below levels of `{}` that are not \
                 iterated yet; order their loops outside `{pos_name}`",
                self.operands[occ.operand].name
            )));
        }
        let in_space = |w: VarId| matches!(self.plan.pos_ancestor(w), Some(Relation::Pos { pos: p, .. }) if *p == pos);
        // The loops from this one to the space's innermost, where positions are recovered.
        let from_here: Vec<VarId> = self
            .plan
            .order
            .iter()
            .copied()
            .skip_while(|&w| w != u)
            .collect();
        let through_space = from_here.iter().rposition(|&w| in_space(w)).unwrap_or(0);
        let state_at = from_here[..=through_space]
            .iter()
            .rfind(|&&w| {
                self.plan.vars[w]
                    .tags
                    .parallel
                    .as_ref()
                    .is_some_and(|p| p.unit != ParallelUnit::CpuVector)
            })
            .copied()
            .unwrap_or(u);
        let seg = Segment {
            levels: levels.clone(),
            stem: format!("#\u{1}{}", self.plan.vars[pos].name),
            state_at,
        };
        let first = &occ.levels[levels[0]];
        let site = self.occ_site(o, scope);
        let (begin, end) = if first.pos_iter(&site, &Expr::Int(0)).is_some() {
            self.pos_range(o, scope)
        } else {
            let parent_pos = self.parent_pos(o, scope);
            let (lo, hi) = first.coord_iter(&site).ok_or_else(|| {
                LowerError(format!(
                    "level {} of `{}` ({}) has no position space",
                    levels[0] + 1,
                    self.operands[occ.operand].name,
                    first.name()
                ))
            })?;
            let at = |c: &Expr| first.coord_access(&site, &parent_pos, c).map(|p| p.0);
            match (at(&lo), at(&hi)) {
                (Some(b), Some(e)) => (b, e),
                _ => {
                    return Err(LowerError(format!(
                        "level {} of `{}` has no position space",
                        levels[0] + 1,
                        self.operands[occ.operand].name
                    )))
                }
            }
        };
        let mut stmts = vec![
            Stmt::Decl(
                self.named(format!("{}\u{1}_b0", seg.stem), Type::Index),
                begin,
            ),
            Stmt::Decl(
                self.named(format!("{}\u{1}_e0", seg.stem), Type::Index),
                end,
            ),
        ];
        for (idx, &k) in levels.iter().enumerate().skip(1) {
            let level = &occ.levels[k];
            let site = self.site(occ.operand, Some(o), k);
            let start = |q: Expr| Self::segment_start(level, &site, &q);
            let (Some(b), Some(e)) = (
                start(self.iv(seg.begin(idx - 1))),
                start(self.iv(seg.end(idx - 1))),
            ) else {
                return Err(LowerError(format!(
                    "level {} of `{}` ({}) cannot be fused into a position space",
                    k + 1,
                    self.operands[occ.operand].name,
                    level.name()
                )));
            };
            stmts.push(Stmt::Decl(
                self.named(format!("{}\u{1}_b{idx}", seg.stem), Type::Index),
                b,
            ));
            stmts.push(Stmt::Decl(
                self.named(format!("{}\u{1}_e{idx}", seg.stem), Type::Index),
                e,
            ));
        }
        let last = levels.len() - 1;
        stmts.push(Stmt::Decl(
            self.named(format!("{}\u{1}_begin", seg.stem), Type::Index),
            self.iv(seg.begin(last)),
        ));
        stmts.push(Stmt::Decl(
            self.named(format!("{}\u{1}_end", seg.stem), Type::Index),
            self.iv(seg.end(last)),
        ));
        // A `coord` of this space iterates the coordinates its segment spans.
        let coord = self.plan.relations.iter().find_map(|r| match *r {
            Relation::Coord { parent, coord } if parent == pos => Some(coord),
            _ => None,
        });
        if let Some(c) = coord {
            let level = &occ.levels[levels[last]];
            let site = self.site(occ.operand, Some(o), levels[last]);
            let crd = |q: Expr| level.pos_access(&site, &q).expect("checked by coord").0;
            let (b, e) = (self.iv(seg.begin(last)), self.iv(seg.end(last)));
            let nonempty = Expr::lt(b.clone(), e.clone());
            let stem = &format!("@\u{1}{}", self.plan.vars[c].name);
            stmts.push(Stmt::Decl(
                self.named(format!("{stem}\u{1}_cbegin"), Type::Index),
                Expr::Select(
                    Box::new(nonempty.clone()),
                    Box::new(crd(b)),
                    Box::new(Expr::Int(0)),
                ),
            ));
            stmts.push(Stmt::Decl(
                self.named(format!("{stem}\u{1}_cend"), Type::Index),
                Expr::Select(
                    Box::new(nonempty),
                    Box::new(crd(e - Expr::Int(1)) + Expr::Int(1)),
                    Box::new(Expr::Int(0)),
                ),
            ));
        }
        let mut inner = scope.clone();
        inner.segments.insert(pos, seg);
        Ok((stmts, inner))
    }

    /// `coord`: the position of coordinate `cbegin + c` in the segment, by binary search;
    /// coordinates the segment does not store are skipped.
    fn search_position(
        &mut self,
        p: VarId,
        c: VarId,
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let seg = scope
            .segments
            .get(&p)
            .cloned()
            .expect("a position space is entered before its variable is recovered");
        let Some(&Relation::Pos { occurrence: o, .. }) = self.plan.created_by(p) else {
            unreachable!("coord applies to a pos variable")
        };
        let level = self.occurrences[o].levels[seg.levels[0]].clone();
        let site = self.site(self.occurrences[o].operand, Some(o), seg.levels[0]);
        let crd = |q: Expr| level.pos_access(&site, &q).expect("checked by coord").0;
        let stem = format!("@\u{1}{}", self.plan.vars[c].name);
        let target = format!("{stem}\u{1}_at");
        let mut stmts = vec![Stmt::Decl(
            self.named(target.clone(), Type::Index),
            self.iv(format!("{stem}\u{1}_cbegin")) + self.var(c),
        )];
        let (search, at, found) = self.lower_bound(
            &stem,
            self.iv(seg.begin(0)),
            self.iv(seg.end(0)),
            &crd,
            self.iv(target),
        );
        stmts.extend(search);
        stmts.push(Stmt::Decl(
            self.named(self.name(p), Type::Index),
            at - self.iv(seg.begin(0)),
        ));
        let body = self.resolve(p, rest, expr, dest, scope)?;
        stmts.push(Stmt::If(found, body, vec![]));
        Ok(stmts)
    }

    /// Declarations, private to each iteration of the loop that holds a fused position
    /// space's state (`Segment::state_at`), of its upper levels' trackers (unset until first used), and of an
    /// accumulator that gathers consecutive updates of one dense output entry (in a fused
    /// space most consecutive positions share their upper coordinates).
    pub(super) fn position_trackers(&self, u: VarId, scope: &Scope) -> (Vec<Stmt>, Scope) {
        let mut stmts = Vec::new();
        let mut inner = scope.clone();
        for (&pos, seg) in scope.segments.iter().filter(|(_, seg)| seg.state_at == u) {
            let fused = seg.levels.len() > 1;
            for idx in 0..seg.levels.len() - 1 {
                let q = seg.tracker(idx);
                stmts.push(Stmt::Decl(
                    self.named(q.clone(), Type::Index),
                    Expr::Int(-1),
                ));
                // The tracked segment's bounds, kept in registers between positions.
                stmts.push(Stmt::Decl(
                    self.named(format!("{q}\u{1}_start"), Type::Index),
                    Expr::Int(0),
                ));
                stmts.push(Stmt::Decl(
                    self.named(format!("{q}\u{1}_next"), Type::Index),
                    Expr::Int(0),
                ));
            }
            if fused && self.dense_output && self.store_accumulates && inner.coalesce.is_none() {
                stmts.push(Stmt::Decl(
                    self.named(
                        format!("{}\u{1}_acc", seg.stem),
                        Type::Value(crate::ir::ValueType::F64),
                    ),
                    Expr::Float(0.0),
                ));
                stmts.push(Stmt::Decl(
                    self.named(format!("{}\u{1}_at", seg.stem), Type::Index),
                    Expr::Int(-1),
                ));
                let contiguous_runs = self.output_in_upper_levels(pos, seg);
                if contiguous_runs {
                    stmts.push(Stmt::Decl(
                        self.named(format!("{}\u{1}_first", seg.stem), Type::Bool),
                        Expr::Bool(true),
                    ));
                }
                inner.coalesce = Some(Coalesce {
                    stem: seg.stem.clone(),
                    depth: self.parallel.len(),
                    contiguous_runs,
                });
            }
        }
        (stmts, inner)
    }

    /// True when the output's coordinates are those of the position space's outermost
    /// levels, which start at the tensor's root and are each unique or ordered: the
    /// positions that update one output entry are then consecutive, so no entry is
    /// updated by two separate runs.
    fn output_in_upper_levels(&self, pos: VarId, seg: &Segment) -> bool {
        let Some(&Relation::Pos { occurrence: o, .. }) = self.plan.created_by(pos) else {
            return false;
        };
        let m = self.stmt.lhs.len();
        if seg.levels[0] != 0 || m >= seg.levels.len() {
            return false;
        }
        let outermost = &seg.levels[..m];
        let grouped = outermost.iter().all(|&k| {
            let properties = self.occurrences[o].levels[k].properties();
            properties.unique || properties.ordered
        });
        grouped
            && outermost
                .iter()
                .all(|&k| self.stmt.lhs.contains(&self.occurrences[o].level_vars[k]))
    }

    fn recover_position(
        &mut self,
        step: Step,
        pos: VarId,
        o: usize,
    ) -> Result<Vec<Stmt>, LowerError> {
        let (v, rest, expr, dest, scope) = step.parts();
        let seg = scope
            .segments
            .get(&pos)
            .cloned()
            .expect("a position space is entered before its variable is recovered");
        let occ_operand = self.occurrences[o].operand;
        // A workspace over coordinates the operand does not read in this part (the consumer
        // of `precompute(e, i, iw)` after `pos(i, ...)`) holds values off its positions,
        // which the position space would skip; one over the space's own positions (A.2's
        // registers) is read where it was written.
        let mut read = Vec::new();
        expr.occurrences(&mut read);
        if !read.contains(&o)
            && expr
                .workspace_vars()
                .iter()
                .any(|w| !self.plan.descendants(pos).contains(w))
        {
            return Err(self.position_error(pos, v));
        }
        let last = seg.levels.len() - 1;
        let mut stmts = vec![Stmt::Decl(
            self.named(seg.position(last), Type::Index),
            self.iv(format!("{}\u{1}_begin", seg.stem)) + self.var(pos),
        )];
        for idx in (0..last).rev() {
            let level = self.occurrences[o].levels[seg.levels[idx + 1]].clone();
            let site = self.site(occ_operand, Some(o), seg.levels[idx + 1]);
            let start = |q: Expr| Self::segment_start(&level, &site, &q).expect("checked on entry");
            let q = seg.tracker(idx);
            let (q_start, q_next) = (format!("{q}\u{1}_start"), format!("{q}\u{1}_next"));
            let target = self.iv(seg.position(idx + 1));
            let (lo, hi, mid) = (
                format!("{q}\u{1}_lo"),
                format!("{q}\u{1}_hi"),
                format!("{q}\u{1}_mid"),
            );
            let search = vec![
                Stmt::Decl(self.named(lo.clone(), Type::Index), self.iv(seg.begin(idx))),
                Stmt::Decl(self.named(hi.clone(), Type::Index), self.iv(seg.end(idx))),
                Stmt::While(
                    Expr::bin(
                        crate::ir::BinOp::Gt,
                        self.iv(hi.clone()) - self.iv(lo.clone()),
                        Expr::Int(1),
                    ),
                    vec![
                        Stmt::Decl(
                            self.named(mid.clone(), Type::Index),
                            Expr::bin(
                                crate::ir::BinOp::Div,
                                self.iv(lo.clone()) + self.iv(hi.clone()),
                                Expr::Int(2),
                            ),
                        ),
                        Stmt::If(
                            Expr::bin(
                                crate::ir::BinOp::Le,
                                start(self.iv(mid.clone())),
                                target.clone(),
                            ),
                            vec![Stmt::Assign(
                                self.named_any(lo.clone()),
                                self.iv(mid.clone()),
                            )],
                            vec![Stmt::Assign(self.named_any(hi.clone()), self.iv(mid))],
                        ),
                    ],
                ),
                Stmt::Assign(self.named_any(q.clone()), self.iv(lo)),
                Stmt::Assign(self.named_any(q_start.clone()), start(self.iv(q.clone()))),
                Stmt::Assign(
                    self.named_any(q_next.clone()),
                    start(self.iv(q.clone()) + Expr::Int(1)),
                ),
            ];
            let lost = Expr::bin(
                crate::ir::BinOp::Or,
                Expr::lt(self.iv(q.clone()), Expr::Int(0)),
                Expr::lt(target.clone(), self.iv(q_start.clone())),
            );
            stmts.push(Stmt::If(lost, search, vec![]));
            stmts.push(Stmt::While(
                Expr::bin(crate::ir::BinOp::Le, self.iv(q_next.clone()), target),
                vec![
                    Stmt::Assign(self.named_any(q.clone()), self.iv(q.clone()) + Expr::Int(1)),
                    Stmt::Assign(self.named_any(q_start.clone()), self.iv(q_next.clone())),
                    Stmt::Assign(
                        self.named_any(q_next.clone()),
                        start(self.iv(q.clone()) + Expr::Int(1)),
                    ),
                ],
            ));
            stmts.push(Stmt::Decl(
                self.named(seg.position(idx), Type::Index),
                self.iv(q),
            ));
        }
        // Coordinates of each level, outermost first; then locate the other operands.
        let mut inner = scope.clone();
        let mut flags = Vec::new();
        for (idx, &k) in seg.levels.iter().enumerate() {
            let level = self.occurrences[o].levels[k].clone();
            let site = self.occ_site(o, &inner);
            let q = self.iv(seg.position(idx));
            let (coord, found) = match level.pos_access(&site, &q) {
                Some(pair) => pair,
                None => {
                    let parent = self.parent_pos(o, &inner);
                    let start =
                        Self::segment_start(&level, &site, &parent).expect("checked on entry");
                    (q.clone() - start, Expr::Bool(true))
                }
            };
            let r = self.occurrences[o].level_vars[k];
            // Other operands must meet this operand in a product where it iterates `r`.
            let others = |x: usize| x == o || self.indexes(x, r, &inner);
            if let Some(points) = lattice::build(expr, &others) {
                let located: Vec<usize> = points[0]
                    .iterators
                    .iter()
                    .copied()
                    .filter(|&x| x != o)
                    .collect();
                if points.len() > 1 || points[0].universe || !points[0].iterators.contains(&o) {
                    return Err(self.position_error(pos, r));
                }
                self.check_reachable(r, &located, &inner)
                    .map_err(|_| self.position_error(pos, r))?;
            }
            stmts.push(Stmt::Decl(self.named(self.name(r), Type::Index), coord));
            flags.push(found);
            inner = inner.with(o, q, None);
            let locate_here: Vec<usize> = (0..self.occurrences.len())
                .filter(|&x| x != o && self.indexes(x, r, &inner))
                .collect();
            let (locates, located_flags, after) = self.locate_all(&locate_here, r, &inner);
            stmts.extend(locates);
            flags.extend(located_flags.into_iter().map(|f| f.1));
            inner = after;
            inner.recovered.insert(r);
        }
        self.mark_fused(v, &mut inner);
        let cond = conjunction(flags);
        stmts.push(Stmt::If(
            cond,
            self.lower(rest, expr, dest, &inner)?,
            vec![],
        ));
        Ok(stmts)
    }

    /// `v` and the fused variables it stands for are recovered.
    fn mark_fused(&self, v: VarId, scope: &mut Scope) {
        scope.recovered.insert(v);
        if let Some(Relation::Fuse { outer, inner, .. }) = self.plan.created_by(v) {
            let (outer, inner) = (*outer, *inner);
            self.mark_fused(outer, scope);
            self.mark_fused(inner, scope);
        }
    }

    fn position_error(&self, pos: VarId, r: VarId) -> LowerError {
        let pos_name = &self.plan.vars[pos].name;
        LowerError(format!(
            "pos: precondition failed: the position space `{pos_name}` covers every point of the \
             iteration: at `{}` its operand must be multiplied with the others (not added), and \
             every other operand that stores `{}` must support locate",
            self.plan.vars[r].name, self.plan.vars[r].name
        ))
    }
}
