//! `pos`, `coord` and `bound`: iterating a variable through an operand's position space,
//! back through coordinates, or with a bound known when compiling.

use super::super::{Concrete, Relation};
use super::loops::replace_loop;
use super::{BoundKind, ScheduleError, Transform};
use crate::ir::{Expr, Symbol};
use crate::notation::cin::VarId;

impl Concrete {
    pub(super) fn position_space_of(
        &self,
        text: &str,
        var: &str,
        pos: &str,
        tensor: &str,
        indices: Option<&[String]>,
    ) -> Result<Concrete, ScheduleError> {
        let v = self.loop_named(text, var)?;
        if self.position_space(v).is_some() {
            return Err(ScheduleError::new(
                text,
                "the variable is in coordinate space",
                format!("`{var}` already iterates a position space"),
            ));
        }
        if let Some(made) = self.made_by_other_than_fuse(v) {
            return Err(ScheduleError::new(
                text,
                "the variable is an access's variable or a fuse of them",
                format!(
                    "`{var}` was made by {made}; apply pos to the variable it came from and \
                     split the position variable instead"
                ),
            ));
        }
        let (o, access) = self.access_named(text, tensor, indices)?;
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
        let format = self.access_format(o);
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
        // The extent of a position space is only known at run time: lowering declares its
        // bounds when the space's first loop starts.
        let var = next.vars.len();
        let p = next.fresh_var(text, pos, Expr::Symbol(Symbol::SegmentLength { var }))?;
        next.relations.push(Relation::Pos {
            parent: v,
            pos: p,
            occurrence: o,
        });
        let loops = replace_loop(&self.loop_sequence(), v, &[p]);
        next.with_loops(text, loops)
    }

    /// The transformation that made `v` or one of the variables fused into it, when one
    /// other than `fuse` (or `bound`, which renames) did.
    fn made_by_other_than_fuse(&self, v: VarId) -> Option<&'static str> {
        match self.created_by(v)? {
            Relation::Fuse { outer, inner, .. } => self
                .made_by_other_than_fuse(*outer)
                .or_else(|| self.made_by_other_than_fuse(*inner)),
            Relation::Bound { parent, .. } => self.made_by_other_than_fuse(*parent),
            Relation::Split { .. } => Some("split or divide"),
            Relation::Pos { .. } => Some("pos"),
            Relation::Coord { .. } => Some("coord"),
        }
    }

    /// `coord(pos, coord)`: iterate the coordinates of a position loop's segment instead.
    pub fn coord(&self, pos: &str, coord: &str) -> Result<Concrete, ScheduleError> {
        self.apply(&Transform::Coord {
            pos: pos.into(),
            coord: coord.into(),
        })
    }

    pub(super) fn coordinates_of(
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
        let levels = self.access_format(occurrence).levels();
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
        let var = next.vars.len();
        let c = next.fresh_var(text, coord, Expr::Symbol(Symbol::CoordRange { var }))?;
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

    pub(super) fn bound_var(
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

    /// The occurrence `tensor(indices)` names, and its text; without indices, the
    /// tensor's only access (TACO's `pos(i,ipos,A)`).
    fn access_named(
        &self,
        text: &str,
        tensor: &str,
        indices: Option<&[String]>,
    ) -> Result<(usize, String), ScheduleError> {
        let name_of = |o: usize| {
            let (t, idx) = &self.accesses[o];
            let vars: Vec<&str> = idx
                .iter()
                .map(|&u| self.statement.vars[u].name.as_str())
                .collect();
            (&self.statement.tensors[*t].name, vars)
        };
        let found: Vec<usize> = (0..self.accesses.len())
            .filter(|&o| {
                let (t, vars) = name_of(o);
                t == tensor && indices.is_none_or(|want| vars == want)
            })
            .collect();
        let written = match indices {
            Some(idx) => format!("{tensor}({})", idx.join(",")),
            None => format!("`{tensor}`"),
        };
        match found[..] {
            [o] => Ok((o, format!("{tensor}({})", name_of(o).1.join(",")))),
            [] if indices.is_some() => Err(ScheduleError::new(
                text,
                "the access appears in the statement",
                format!("`{written}` is not an access of the right-hand side"),
            )),
            [] => Err(ScheduleError::new(
                text,
                "the tensor is read once in the statement",
                format!("{written} is not read by the right-hand side"),
            )),
            // Two equal accesses of one tensor: the first (both read the same levels).
            [o, ..] if indices.is_some() => Ok((o, written)),
            _ => Err(ScheduleError::new(
                text,
                "the tensor is read once in the statement",
                format!(
                    "{written} is read {} times; name the access, e.g. pos(..,..,{tensor}({}))",
                    found.len(),
                    name_of(found[0]).1.join(",")
                ),
            )),
        }
    }
}
