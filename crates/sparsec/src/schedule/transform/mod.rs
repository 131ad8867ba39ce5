//! The scheduling transformations: each checks its preconditions and returns a new
//! [`Concrete`], so they chain (`c.split("i","i0","i1",32)?.parallelize(...)?`).
//!
//! Every failure is a [`ScheduleError`] naming the transformation, the precondition and why
//! it does not hold here. Preconditions that depend on how loops are lowered (a loop that
//! co-iterates several sparse operands cannot be parallel; races against the strategy) are
//! checked by [`crate::lower`] and reported the same way.

use std::fmt;

// The submodules' moved bodies call `super::sparse_accesses`.
use super::sparse_accesses;
use super::{Concrete, MergeStrategy, OmpSchedule, Parallel, ParallelUnit, RaceStrategy};
mod loops;
mod pos;
mod precompute;
mod reorder;
mod split;

pub(crate) use loops::ceil_div;
use loops::positive;
pub use split::SplitBy;

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

/// How a sparse output's entries are written (TACO's `assemble` directive).
///
/// sparsec's kernels append every result entry to a buffer that the runtime sorts and
/// packs (in order, so appending is what happens wherever it can), so both strategies
/// give the same code today; the directive is accepted so TACO schedules run unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssembleStrategy {
    /// Append entries in order.
    Append,
    /// Insert entries into a preassembled structure.
    Insert,
}

/// One scheduling transformation, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Transform {
    Reorder(String, String),
    Order(Vec<String>),
    /// `split` (`by` a factor: the inner loop's iterations) or `divide` (`by` parts: the
    /// outer loop's iterations).
    Split {
        var: String,
        outer: String,
        inner: String,
        by: SplitBy,
    },
    Fuse {
        outer: String,
        inner: String,
        fused: String,
    },
    /// `indices: None` (TACO's `pos(i,ip,A)`) names the tensor's only access.
    Pos {
        var: String,
        pos: String,
        tensor: String,
        indices: Option<Vec<String>>,
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
    /// Compute the product `expr` into a dense workspace over `vars`; without a
    /// `workspace` name a fresh one is chosen when it is applied.
    Precompute {
        expr: String,
        vars: Vec<String>,
        producer_vars: Vec<String>,
        workspace: Option<String>,
    },
    /// `parallelize(var, NotParallel, ..)`: `var` stays serial (a tag that changes nothing).
    Serial {
        var: String,
    },
    /// `mergeby(var, strategy)`: how the loop of `var` intersects its sparse operands,
    /// recorded on its [`super::LoopTags`]: `Gallop` searches ahead (lowering refuses it
    /// where no loop of `var` intersects operands iterated by position), `TwoFinger` is
    /// the default.
    MergeBy {
        var: String,
        strategy: MergeStrategy,
    },
    /// `assemble(tensor, strategy)` on the output; see [`AssembleStrategy`] (no effect).
    Assemble {
        tensor: String,
        strategy: AssembleStrategy,
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
                by,
            } => {
                let (name, n) = match by {
                    SplitBy::Factor(n) => ("split", n),
                    SplitBy::Parts(n) => ("divide", n),
                };
                write!(f, "{name}({var},{outer},{inner},{n})")
            }
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
            } => match indices {
                Some(indices) => write!(f, "pos({var},{pos},{tensor}({}))", indices.join(",")),
                None => write!(f, "pos({var},{pos},{tensor})"),
            },
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
                "parallelize({var},{},{races:?},{},{chunk})",
                unit.spelling(),
                // The language's keywords are the lower-case names of the variants.
                format!("{schedule:?}").to_ascii_lowercase()
            ),
            Transform::Precompute {
                expr,
                vars,
                producer_vars,
                workspace,
            } => {
                write!(
                    f,
                    "precompute({expr},({}),({})",
                    vars.join(","),
                    producer_vars.join(",")
                )?;
                match workspace {
                    Some(w) => write!(f, ",{w})"),
                    None => write!(f, ")"),
                }
            }
            Transform::Serial { var } => write!(f, "parallelize({var},NotParallel,NoRaces)"),
            Transform::MergeBy { var, strategy } => write!(f, "mergeby({var},{strategy:?})"),
            Transform::Assemble { tensor, strategy } => {
                write!(f, "assemble({tensor},{strategy:?})")
            }
        }
    }
}

impl Concrete {
    /// Apply one transformation.
    pub fn apply(&self, t: &Transform) -> Result<Concrete, ScheduleError> {
        let text = t.to_string();
        // Tags that do not restructure loops may follow `parallelize`, as in TACO.
        let tag_only = matches!(
            t,
            Transform::Parallelize { .. }
                | Transform::Serial { .. }
                | Transform::MergeBy { .. }
                | Transform::Assemble { .. }
        );
        if self.parallelized && !tag_only {
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
                by,
            } => self.strip_mine(&text, var, outer, inner, *by),
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
            } => self.position_space_of(&text, var, pos, tensor, indices.as_deref()),
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
            } => self.precompute_into(&text, expr, vars, producer_vars, workspace.as_deref()),
            Transform::Serial { var } => {
                let v = self.loop_named(&text, var)?;
                if let Some(p) = &self.vars[v].tags.parallel {
                    return Err(ScheduleError::new(
                        &text,
                        "the loop is not parallel",
                        format!("`{var}` is already parallel on {}", p.unit.spelling()),
                    ));
                }
                Ok(self.clone())
            }
            Transform::MergeBy { var, strategy } => {
                let v = self.loop_named(&text, var)?;
                let mut next = self.clone();
                next.vars[v].tags.merge = *strategy;
                Ok(next)
            }
            Transform::Assemble { tensor, .. } => {
                let out = &self.statement.tensors[0].name;
                if tensor != out {
                    return Err(ScheduleError::new(
                        &text,
                        "the tensor is the statement's output",
                        format!("`{tensor}` is not the output; the output is `{out}`"),
                    ));
                }
                Ok(self.clone())
            }
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
                let v = self.taggable_loop_named(&text, var)?;
                positive(&text, "the chunk size is positive", *chunk)?;
                if let Some(p) = &self.vars[v].tags.parallel {
                    return Err(ScheduleError::new(
                        &text,
                        "a loop is parallelized once",
                        format!("`{var}` is already parallel on {}", p.unit.spelling()),
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
            by: SplitBy::Factor(factor),
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
        self.apply(&Transform::Split {
            var: var.into(),
            outer: outer.into(),
            inner: inner.into(),
            by: SplitBy::Parts(parts),
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
            indices: Some(indices.iter().map(|s| s.to_string()).collect()),
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

    /// `parallelize(var, unit, races)`, in contiguous blocks of equal work, one per thread
    /// ([`OmpSchedule::Balanced`]).
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
            schedule: OmpSchedule::Balanced,
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
            workspace: Some(workspace.into()),
        })
    }
}
