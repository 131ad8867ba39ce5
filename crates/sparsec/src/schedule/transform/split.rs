//! `split`, `divide` and `fuse`: strip-mining a loop and collapsing two nested loops.

use super::super::{Concrete, Relation};
use super::loops::{ceil_div, positive, replace_loop};
use super::ScheduleError;
use crate::ir::Expr;

impl Concrete {
    pub(super) fn strip_mine(
        &self,
        text: &str,
        var: &str,
        outer: &str,
        inner: &str,
        by: SplitBy,
    ) -> Result<Concrete, ScheduleError> {
        let v = self.loop_named(text, var)?;
        let (precondition, amount) = match by {
            SplitBy::Factor(n) => ("the split factor is positive", n),
            SplitBy::Parts(n) => ("the number of parts is positive", n),
        };
        positive(text, precondition, amount)?;
        let mut next = self.clone();
        let extent = self.vars[v].extent.clone();
        let n = Expr::Int(amount as i64);
        let (outer_extent, inner_extent) = match by {
            SplitBy::Factor(_) => (crate::ir::simplify(&ceil_div(extent, n.clone())), n.clone()),
            SplitBy::Parts(_) => (n.clone(), crate::ir::simplify(&ceil_div(extent, n))),
        };
        let o = next.fresh_var(text, outer, outer_extent)?;
        let i = next.fresh_var(text, inner, inner_extent)?;
        next.relations.push(Relation::Split {
            parent: v,
            outer: o,
            inner: i,
            by,
        });
        let loops = replace_loop(&self.loop_sequence(), v, &[o, i]);
        next.with_loops(text, loops)
    }

    pub(super) fn fuse_vars(
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
}

/// How a split relation sizes its inner loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitBy {
    /// The inner loop has this many iterations.
    Factor(usize),
    /// The outer loop has this many iterations (`divide`).
    Parts(usize),
}
