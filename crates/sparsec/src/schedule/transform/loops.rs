//! Helpers the transformations share: looking up loops, creating variables, and
//! installing a new loop sequence after checking it against every ordering constraint.

use super::super::{order, Concrete, LoopTags, LoopVar, Relation, VarOrigin};
use super::ScheduleError;
use crate::ir::Expr;
use crate::notation::cin::VarId;

impl Concrete {
    /// A loop variable named `name` that the statement's loops can be rescheduled around.
    pub(super) fn loop_named(&self, text: &str, name: &str) -> Result<VarId, ScheduleError> {
        let v = self.taggable_loop_named(text, name)?;
        if self.vars[v].origin == VarOrigin::Storage {
            return Err(ScheduleError::new(
                text,
                "the variable is a loop of the statement",
                format!("`{name}` iterates a structured storage level and cannot be scheduled"),
            ));
        }
        Ok(v)
    }

    /// A loop variable named `name`, possibly one that iterates a structured storage level
    /// (BCSR's or sliced ELL's block rows, ELL's slots): such a loop stays where the layout
    /// puts it, but may run on threads where lowering finds its iterations write apart.
    pub(super) fn taggable_loop_named(
        &self,
        text: &str,
        name: &str,
    ) -> Result<VarId, ScheduleError> {
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
        Ok(v)
    }

    pub(super) fn fresh_var(
        &mut self,
        text: &str,
        name: &str,
        extent: Expr,
    ) -> Result<VarId, ScheduleError> {
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

    pub(super) fn loop_sequence(&self) -> Vec<VarId> {
        self.order
            .iter()
            .copied()
            .filter(|&v| self.is_loop(v))
            .collect()
    }

    /// Rebuild `order` from a loop sequence: each replaced variable right after the last
    /// of the variables that recover it; then check the order and pick reordered operands.
    pub(super) fn with_loops(
        &self,
        text: &str,
        loops: Vec<VarId>,
    ) -> Result<Concrete, ScheduleError> {
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

    /// `a` is recovered before any loop derived from `b` starts, or (for storage levels)
    /// `a` and `b` are fused in that order and recovered together.
    fn resolved_before(&self, a: VarId, b: VarId) -> bool {
        self.recovered_before_loops_of(a, b) || matches!(self.created_by_fuse_of(a, b), Some(true))
    }

    /// `a` is recovered before any loop derived from `b` starts.
    fn recovered_before_loops_of(&self, a: VarId, b: VarId) -> bool {
        let first_of_b = self
            .descendants(b)
            .iter()
            .map(|&d| self.position_of(d))
            .min()
            .unwrap_or(usize::MAX);
        self.position_of(a) < first_of_b
    }

    /// `Some(true)` when `a` and `b` are fused with `a` outer, directly or through a chain
    /// of fuses (`fuse(i,j,f), fuse(f,k,g)` fuses `j` outside `k`).
    fn created_by_fuse_of(&self, a: VarId, b: VarId) -> Option<bool> {
        self.relations.iter().find_map(|r| match *r {
            Relation::Fuse { outer, inner, .. } => {
                let (outer, inner) = (self.fused_parts(outer), self.fused_parts(inner));
                if outer.contains(&a) && inner.contains(&b) {
                    Some(true)
                } else if outer.contains(&b) && inner.contains(&a) {
                    Some(false)
                } else {
                    None
                }
            }
            _ => None,
        })
    }

    /// `v` and, when a fuse created it, the variables fused into it, transitively.
    fn fused_parts(&self, v: VarId) -> Vec<VarId> {
        let mut parts = vec![v];
        if let Some(Relation::Fuse { outer, inner, .. }) = self.created_by(v) {
            parts.extend(self.fused_parts(*outer));
            parts.extend(self.fused_parts(*inner));
        }
        parts
    }

    /// Operands that store a variable the schedule computes (by `split`, `divide`, `fuse`
    /// or `bound`) are located at it; a plain layout that cannot be (a level that neither
    /// locates nor is ordered with unique coordinates, or one below a non-unique level) is
    /// read through its general equivalent instead, which keeps the mode order and so the
    /// level variables. Operands iterated by a position space keep their layout.
    fn read_computed_through_copies(&mut self) {
        let computed = |c: &Concrete, v: VarId| {
            matches!(
                c.replaced_by(v),
                Some(Relation::Split { .. } | Relation::Fuse { .. } | Relation::Bound { .. })
            )
        };
        for o in 0..self.accesses.len() {
            let in_position_space = self
                .relations
                .iter()
                .any(|r| matches!(r, Relation::Pos { occurrence, .. } if *occurrence == o));
            let format = &self.formats[o];
            if in_position_space || !format.is_plain() {
                continue;
            }
            let levels = format.levels();
            let unreachable = self.level_vars[o].iter().enumerate().any(|(k, &v)| {
                let level = &levels[k].format;
                let (caps, props) = (level.capabilities(), level.properties());
                let searchable = props.ordered && props.unique && caps.coord_pos_iter;
                let below_duplicates = levels[..k].iter().any(|l| !l.format.properties().unique);
                computed(self, v) && (below_duplicates || !(caps.locate || searchable))
            });
            if unreachable {
                self.formats[o] = format.general_equivalent();
            }
        }
    }

    /// The non-hoisted reduction that sums `v` (its own variable or one hoisted into its
    /// temporary), or `None` for the output's variables and the reductions hoisted to it.
    fn reduction_of(&self, v: VarId) -> Option<usize> {
        let mut sums = Vec::new();
        super::super::lexpr::sums(&self.rhs, &mut sums);
        sums.iter().rposition(|sum| match sum {
            super::super::lexpr::LExpr::Sum(own, inner, _) => *own == v || inner.contains(&v),
            _ => false,
        })
    }

    fn check_order(&mut self, text: &str) -> Result<(), ScheduleError> {
        self.read_computed_through_copies();
        // A reduction computed into a temporary per value of `u` cannot share a loop with
        // `u` (a fused loop would sum across values of `u`).
        let mut workspaces = Vec::new();
        super::super::lexpr::precomputes(&self.rhs, &mut workspaces);
        for &(u, v) in &self.sum_edges {
            if !self.recovered_before_loops_of(u, v) {
                let placed = workspaces
                    .iter()
                    .find(|w| w.vars.contains(&v) || w.private.contains(&v));
                if let Some(w) = placed {
                    let (outer, inner) = (&self.vars[u].name, &self.vars[v].name);
                    if self.created_by_fuse_of(u, v).is_some() {
                        // A private variable fused with another is refused below, with
                        // the reduction it belongs to.
                        if w.private.contains(&v) {
                            continue;
                        }
                        return Err(ScheduleError::new(
                            text,
                            "fused variables belong to the same reduction",
                            format!(
                                "`{outer}` and `{inner}` cannot share a loop: workspace `{}` \
                                 is computed inside the loops of the other variables its \
                                 expression reads, such as `{outer}`",
                                w.workspace
                            ),
                        ));
                    }
                    let why = if u == w.at {
                        format!(
                            "workspace `{}`'s producer starts at `{outer}` and reduces \
                             `{inner}` inside it: `{inner}` must stay inside `{outer}`",
                            w.workspace
                        )
                    } else {
                        format!(
                            "workspace `{}` is computed where its loops start, with the \
                             other variables its expression reads bound outside: `{outer}` \
                             must stay outside `{inner}`",
                            w.workspace
                        )
                    };
                    return Err(ScheduleError::new(
                        text,
                        "a precomputed workspace's other variables stay outside it",
                        why,
                    ));
                }
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
        // One loop cannot run over variables that different temporaries sum (or one that a
        // temporary sums and one outside it): each temporary's loops are its own. A
        // precomputed workspace's producer reduces its private variables the same way.
        for rel in &self.relations {
            if let Relation::Fuse { outer, inner, .. } = *rel {
                let contexts = |v: VarId| -> Vec<(Option<usize>, Option<usize>)> {
                    self.roots(v)
                        .into_iter()
                        .map(|r| {
                            let producer = workspaces.iter().rposition(|w| w.private.contains(&r));
                            (self.reduction_of(r), producer)
                        })
                        .collect()
                };
                let (a, b) = (contexts(outer), contexts(inner));
                if let Some(&(_, producer)) = a.iter().chain(&b).find(|c| c.1 != a[0].1) {
                    let w = &workspaces[producer.or(a[0].1).expect("one side is private")];
                    return Err(ScheduleError::new(
                        text,
                        "fused variables belong to the same reduction",
                        format!(
                            "`{}` and `{}` cannot share a loop: the producer of workspace `{}` \
                             sums over {} alone, and its result is read outside that loop",
                            self.vars[outer].name,
                            self.vars[inner].name,
                            w.workspace,
                            w.private
                                .iter()
                                .map(|&v| format!("`{}`", self.vars[v].name))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
                if a.iter().chain(&b).any(|c| c.0 != a[0].0) {
                    return Err(ScheduleError::new(
                        text,
                        "fused variables belong to the same reduction",
                        format!(
                            "`{}` and `{}` belong to different reductions (a term under `+`, \
                             `-` or a denominator is reduced into its own temporary, with the \
                             output's variables outside it)",
                            self.vars[outer].name, self.vars[inner].name
                        ),
                    ));
                }
            }
        }
        let before = |a: VarId, b: VarId| self.resolved_before(a, b);
        let sparse = super::sparse_accesses(&self.statement, &self.accesses);
        let place = |v: VarId| self.position_of(v);
        match order::conflicts(&self.level_vars, &self.fixed, &sparse, &before, &place) {
            Ok(reordered) => {
                // A position space iterates the stored levels; a transposed copy has others.
                let transposed = |o: usize| {
                    let stored = self.access_format(o);
                    let indices = &self.accesses[o].1;
                    super::super::reordered_format(stored, &self.order, indices)
                        .map_or(true, |read| read != *stored)
                };
                let transposed_space = self.relations.iter().find_map(|r| match *r {
                    Relation::Pos { occurrence, .. }
                        if reordered.contains(&occurrence) && transposed(occurrence) =>
                    {
                        Some(occurrence)
                    }
                    _ => None,
                });
                if let Some(o) = transposed_space {
                    let (t, _) = &self.accesses[o];
                    return Err(ScheduleError::new(
                        text,
                        "the operand of a position space is read in its storage order",
                        format!(
                            "the loop order reads `{}` against its layout, so it would be \
                             transposed and its positions would not be the stored ones; order \
                             the loops as `{}` stores its levels",
                            self.statement.tensors[*t].name, self.statement.tensors[*t].name
                        ),
                    ));
                }
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
}

pub(super) fn positive(text: &str, precondition: &str, value: usize) -> Result<(), ScheduleError> {
    if value == 0 {
        return Err(ScheduleError::new(text, precondition, "it is 0"));
    }
    Ok(())
}

pub(crate) fn ceil_div(a: Expr, b: Expr) -> Expr {
    Expr::bin(crate::ir::BinOp::Div, a + b.clone() - Expr::Int(1), b)
}

pub(super) fn replace_loop(loops: &[VarId], v: VarId, with: &[VarId]) -> Vec<VarId> {
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
