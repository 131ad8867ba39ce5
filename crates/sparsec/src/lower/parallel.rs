//! Scheduling tags on loops: parallel units, race strategies and unrolling.
//!
//! A store inside a parallel loop *races* when two iterations of that loop can update the
//! same place: a scalar temporary declared outside the loop, a dense output entry that the
//! loop's variable does not select alone (it is, or derives from, a summed variable), or
//! the shared workspace and entry buffer of a sparse output. Each racing loop's strategy
//! decides: `NoRaces` refuses, `IgnoreRaces` trusts the user (unless another loop around
//! the update asks for `Atomics`: then the update is atomic), `Atomics` makes the update
//! atomic, `Temporary`/`ParallelReduction` give each thread a private copy combined at the
//! end (OpenMP `reduction` clauses).

use super::{LowerError, Lowerer};
use crate::format::LevelCoord;
use crate::ir::{
    ArrayRef, Expr, GpuDim, Local, Loop, LoopKind, Mapping, OperandId, ParallelUnit, Reduction,
    ReductionStrategy, Stmt,
};
use crate::notation::cin::VarId;
use crate::schedule::{LoopTags, Parallel, RaceStrategy, Relation};

/// What a store updates.
#[derive(Clone, Copy)]
pub(super) enum Target<'a> {
    /// A scalar temporary.
    Temp(&'a str),
    /// An entry of the dense output.
    DenseOutput,
    /// The dense workspace row of a scattered sparse output, inside `depth` parallel loops.
    Workspace { depth: usize },
    /// A precomputed workspace allocated inside `depth` parallel loops, indexed by `vars`.
    Local { depth: usize, vars: &'a [VarId] },
    /// The entry buffer of a sparse output.
    Emit,
}

fn tag_text(name: &str, p: &Parallel) -> String {
    format!("parallelize({name},{},{:?})", p.unit.spelling(), p.races)
}

impl Lowerer<'_> {
    /// A loop on threads cannot run inside a vectorised one: OpenMP allows no parallel
    /// region inside a `simd` loop (gcc rejects the C). GPU loops nest as a kernel runs:
    /// blocks hold warps, which hold threads, and neither holds CPU loops nor sits in one.
    pub(super) fn check_nesting(&self, v: VarId, p: &Parallel) -> Result<(), LowerError> {
        self.check_gpu_nesting(v, p)?;
        let vector = self
            .parallel
            .iter()
            .find(|outer| outer.1.unit == ParallelUnit::CpuVector);
        match vector {
            Some((outer, q, _)) if p.unit == ParallelUnit::CpuThread => Err(LowerError(format!(
                "{}: precondition failed: no thread loop inside a vector loop: `{}` is nested \
                 in `{}`, which {} vectorises, and OpenMP runs no threads inside a `simd` \
                 loop; parallelize the outer loop on threads and the inner one as a vector",
                tag_text(&self.plan.vars[v].name, p),
                self.plan.vars[v].name,
                self.plan.vars[*outer].name,
                tag_text(&self.plan.vars[*outer].name, q),
            ))),
            _ => Ok(()),
        }
    }

    fn check_gpu_nesting(&self, v: VarId, p: &Parallel) -> Result<(), LowerError> {
        let name = &self.plan.vars[v].name;
        let text = tag_text(name, p);
        let other_kind = self
            .parallel
            .iter()
            .find(|outer| outer.1.unit.is_gpu() != p.unit.is_gpu());
        if let Some((outer, q, _)) = other_kind {
            let (what, why) = if p.unit.is_gpu() {
                (
                    "no GPU loop inside a CPU loop",
                    "a GPU kernel is launched from the host, outside any CPU thread or SIMD loop",
                )
            } else {
                (
                    "no CPU loop inside a GPU loop",
                    "the iterations of a GPU loop run on GPU threads, which start no CPU \
                     threads or SIMD lanes",
                )
            };
            return Err(LowerError(format!(
                "{text}: precondition failed: {what}: `{name}` is nested in `{}`, which {} \
                 parallelizes; {why}",
                self.plan.vars[*outer].name,
                tag_text(&self.plan.vars[*outer].name, q),
            )));
        }
        let Some(rank) = p.unit.gpu_rank() else {
            return Ok(());
        };
        let inner_unit = self
            .parallel
            .iter()
            .rfind(|outer| outer.1.unit.gpu_rank() > Some(rank));
        if let Some((outer, q, _)) = inner_unit {
            return Err(LowerError(format!(
                "{text}: precondition failed: GPU loops nest as blocks, warps, threads: \
                 `{name}` is nested in `{}`, which {} parallelizes on a finer unit; order the \
                 loops block, warp, thread",
                self.plan.vars[*outer].name,
                tag_text(&self.plan.vars[*outer].name, q),
            )));
        }
        let in_block = self
            .parallel
            .iter()
            .any(|outer| outer.1.unit == ParallelUnit::GpuBlock);
        if rank > 0 && !in_block {
            return Err(LowerError(format!(
                "{text}: precondition failed: a {} loop is nested in a GPUBlock loop: the \
                 threads of a GPU kernel run in blocks; split the loop and parallelize the \
                 outer part on GPUBlock",
                p.unit.spelling()
            )));
        }
        Ok(())
    }

    /// Decide how a store to `target` handles races with the enclosing parallel loops;
    /// true when it must be atomic.
    pub(super) fn resolve_races(&mut self, target: Target<'_>) -> Result<bool, LowerError> {
        let mut atomic = false;
        for d in 0..self.parallel.len() {
            let (v, p) = (self.parallel[d].0, self.parallel[d].1.clone());
            let races = match target {
                Target::Temp(name) => self.temp_depth.get(name).is_some_and(|&t| t <= d),
                Target::DenseOutput => !self.writes_distinct(v),
                Target::Local { depth, vars } => {
                    d >= depth && !self.plan.roots(v).iter().all(|r| vars.contains(r))
                }
                // Per-thread buffers and workspaces serve the outermost thread team.
                Target::Workspace { depth } => d >= depth,
                // A GPU kernel reserves each emitted entry's slot atomically, or places
                // entries in rows that one thread owns (`note_emit`).
                Target::Emit if p.unit.is_gpu() => false,
                Target::Emit => {
                    p.unit != ParallelUnit::CpuThread
                        || self.parallel[..d]
                            .iter()
                            .any(|outer| outer.1.unit == ParallelUnit::CpuThread)
                }
            };
            if !races {
                continue;
            }
            let text = tag_text(&self.plan.vars[v].name, &p);
            let what = match target {
                Target::Temp(_) => format!(
                    "iterations of `{}` add into one partial sum (the loop is a reduction)",
                    self.plan.vars[v].name
                ),
                Target::DenseOutput => format!(
                    "iterations of `{}` add into the same entries of `{}`",
                    self.plan.vars[v].name, self.stmt.tensors[0].name
                ),
                Target::Local { .. } => format!(
                    "iterations of `{}` add into the same entries of a precomputed workspace",
                    self.plan.vars[v].name
                ),
                Target::Workspace { .. } | Target::Emit => format!(
                    "iterations of `{}` append to the sparse output `{}` through state they \
                     share (each thread of the outermost thread loop has its own)",
                    self.plan.vars[v].name, self.stmt.tensors[0].name
                ),
            };
            // A schedule that ignores a loop's races but asks for atomics on another loop
            // around the update (the scheduling paper's GPU schedules: blocks and warps
            // `IgnoreRaces`, threads `Atomics`) means the update to be atomic, as TACO
            // makes every output update under an `Atomics` loop.
            let atomics_asked = || {
                matches!(target, Target::DenseOutput | Target::Local { .. })
                    && self.parallel.iter().any(|(_, q, _)| {
                        q.races == RaceStrategy::Atomics && q.unit != ParallelUnit::CpuVector
                    })
            };
            let sparse = matches!(target, Target::Workspace { .. } | Target::Emit);
            // Atomics are generated for sums; another reduction (`min`) races safely through
            // copies that start from its identity and combine by it
            // (`Function::reduction_operator`): of anything on CPU threads and lanes, of a
            // scalar on GPU threads, warps and blocks (arrays there are summed atomically).
            let copies = matches!(
                p.races,
                RaceStrategy::Temporary | RaceStrategy::ParallelReduction
            ) && (!p.unit.is_gpu() || matches!(target, Target::Temp(_)));
            let protected = copies || (p.races == RaceStrategy::IgnoreRaces && !atomics_asked());
            if !self.reduces_by_sum() && !protected {
                return Err(LowerError(format!(
                    "{text}: precondition failed: the update is race-free: {what}, and sparsec \
                     protects the racing updates of this statement's reduction (over the \
                     semiring {}) by copies that combine by it (Temporary or \
                     ParallelReduction): of the output on CPU threads and lanes, of a scalar \
                     on the GPU; not by atomics; use one of those, or parallelize a loop over \
                     the output's variables",
                    self.stmt.semiring
                )));
            }
            match p.races {
                RaceStrategy::IgnoreRaces if atomics_asked() => atomic = true,
                RaceStrategy::IgnoreRaces => {}
                RaceStrategy::NoRaces => {
                    return Err(LowerError(format!(
                        "{text}: precondition failed: no output races: {what}; use Atomics, \
                         Temporary or IgnoreRaces{}",
                        if sparse {
                            ", or parallelize a loop of a dense output"
                        } else {
                            ""
                        }
                    )))
                }
                _ if sparse => {
                    return Err(LowerError(format!(
                        "{text}: precondition failed: the race strategy can protect the output: \
                         {what}; parallelize an outer loop of the output's rows instead"
                    )))
                }
                RaceStrategy::Atomics if p.unit == ParallelUnit::CpuVector => {
                    return Err(LowerError(format!(
                        "{text}: precondition failed: atomics are available on this unit: \
                         {what}, and SIMD lanes have no atomic updates; use Temporary or \
                         ParallelReduction"
                    )))
                }
                RaceStrategy::Atomics if p.unit.is_gpu() && matches!(target, Target::Temp(_)) => {
                    return Err(LowerError(format!(
                        "{text}: precondition failed: atomics can protect the update: {what}, \
                         and that sum lives in the registers of each GPU thread, which share \
                         no copy to update atomically; use ParallelReduction or Temporary"
                    )))
                }
                RaceStrategy::Atomics => atomic = true,
                RaceStrategy::Temporary | RaceStrategy::ParallelReduction => {
                    let reduction = match target {
                        Target::Temp(name) => Reduction::Scalar(self.named_any(name)),
                        Target::Local { .. } => {
                            return Err(LowerError(format!(
                                "{text}: precondition failed: the race strategy can protect the \
                                 output: {what}; use Atomics"
                            )))
                        }
                        _ => Reduction::Array(
                            ArrayRef::Values(OperandId(0)),
                            Expr::Int(self.stmt.tensors[0].dims.iter().product::<usize>() as i64),
                        ),
                    };
                    let list = &mut self.parallel[d].2;
                    if !list.contains(&reduction) {
                        list.push(reduction);
                    }
                }
            }
        }
        Ok(atomic)
    }

    /// True when different values of `v` select different entries of the output: every
    /// variable it derives from is an output variable, and no position space it goes
    /// through can repeat a coordinate.
    fn writes_distinct(&self, v: VarId) -> bool {
        let all_free = self.plan.roots(v).iter().all(|r| self.stmt.lhs.contains(r));
        all_free && self.unique_positions(v)
    }

    fn unique_positions(&self, v: VarId) -> bool {
        match self.plan.created_by(v) {
            None => true,
            Some(Relation::Pos {
                parent, occurrence, ..
            }) => {
                let occ = &self.occurrences[*occurrence];
                let roots = self.plan.roots(*parent);
                occ.level_vars
                    .iter()
                    .zip(&occ.levels)
                    .filter(|(u, _)| roots.contains(u))
                    .all(|(_, level)| level.properties().unique)
                    && self.unique_positions(*parent)
            }
            Some(rel) => rel
                .parents()
                .iter()
                .all(|&parent| self.unique_positions(parent)),
        }
    }

    /// An entry of a sparse output is emitted here: note whether every enclosing parallel
    /// loop keeps each row of the output (its coordinates above the leaf level) on one
    /// iteration, as placing entries straight into their rows requires (`ir::rows`): its
    /// variable derives from the output's outermost level alone, without repeating a
    /// coordinate.
    pub(super) fn note_emit(&mut self) {
        let levels = self.stmt.tensors[0].format.levels();
        let row_var = match levels.first().map(|l| l.coord) {
            Some(LevelCoord::Mode(m)) if levels.len() > 1 => Some(self.stmt.lhs[m]),
            _ => None,
        };
        let keeps_rows = |v: VarId| {
            row_var.is_some_and(|r| self.plan.roots(v).iter().all(|&u| u == r))
                && self.unique_positions(v)
        };
        if self.parallel.iter().any(|(v, ..)| !keeps_rows(*v)) {
            self.rows_shared = true;
        }
    }

    /// Put `v`'s scheduling tags on the loop lowered for it.
    pub(super) fn tag_loop(
        &self,
        v: VarId,
        mut stmts: Vec<Stmt>,
        tags: &LoopTags,
        reductions: Vec<Reduction>,
        locals: Vec<Local>,
    ) -> Result<Vec<Stmt>, LowerError> {
        let name = &self.plan.vars[v].name;
        let (kind, text) = match (&tags.parallel, tags.unroll) {
            (None, None) => return Ok(stmts),
            (Some(_), Some(_)) => {
                return Err(LowerError(format!(
                    "unroll({name}) and parallelize({name}) cannot apply to the same loop"
                )))
            }
            (Some(p), None) => (
                LoopKind::Parallel {
                    unit: p.unit,
                    mapping: mapping(name, p, &stmts)?,
                    reductions,
                    reduce_by: match p.races {
                        RaceStrategy::ParallelReduction => ReductionStrategy::ParallelReduction,
                        _ => ReductionStrategy::Temporary,
                    },
                    locals,
                },
                tag_text(name, p),
            ),
            (None, Some(n)) => (LoopKind::Unrolled(n), format!("unroll({name},{n})")),
        };
        let parallel = tags.parallel.is_some();
        let loops: Vec<usize> = stmts
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Stmt::For(Loop { .. }) | Stmt::While(..)))
            .map(|(n, _)| n)
            .collect();
        let carried = parallel && stmts.iter().any(|s| matches!(s, Stmt::Decl(..)));
        match loops.as_slice() {
            [n] if matches!(stmts[*n], Stmt::For(Loop { .. })) && !carried => {
                if let Stmt::For(Loop { kind: k, .. }) = &mut stmts[*n] {
                    *k = kind;
                }
                Ok(stmts)
            }
            [n] if matches!(stmts[*n], Stmt::For(Loop { .. })) => Err(LowerError(format!(
                "{text}: precondition failed: iterations are independent: the loop over `{name}` \
                 advances iterators over sparse operands from one iteration to the next; split \
                 it (split/divide) and parallelize the outer loop"
            ))),
            _ => Err(LowerError(format!(
                "{text}: precondition failed: the loop is a `for` loop: `{name}` co-iterates \
                 several sparse operands (or a level with duplicates) in a `while` loop; split it \
                 (split/divide, or pos then split) and tag the outer loop"
            ))),
        }
    }
}

/// How a loop tagged `p` spreads its iterations: a CPU loop as its tag says; a GPU loop
/// along the next grid or block dimension after the loops of its unit inside `body` (the
/// innermost takes `x`); a block loop must hold thread loops.
fn mapping(name: &str, p: &Parallel, body: &[Stmt]) -> Result<Mapping, LowerError> {
    if !p.unit.is_gpu() {
        return Ok(Mapping::Cpu {
            schedule: p.schedule,
            chunk: p.chunk,
        });
    }
    let text = tag_text(name, p);
    if p.unit == ParallelUnit::GpuBlock && gpu_depth(body, ParallelUnit::GpuThread) == 0 {
        return Err(LowerError(format!(
            "{text}: precondition failed: a GPUBlock loop holds GPUThread loops: the blocks \
             of a GPU kernel are made of threads, and `{name}`'s body runs on none; split it \
             and parallelize the inner part on GPUThread"
        )));
    }
    let inside = gpu_depth(body, p.unit);
    match GpuDim::ALL.get(inside) {
        Some(&dim) => Ok(Mapping::Gpu { dim }),
        None => Err(LowerError(format!(
            "{text}: precondition failed: at most three nested loops on one GPU unit: `{name}` \
             holds {inside} {} loops, and a GPU grid or block has three dimensions",
            p.unit.spelling()
        ))),
    }
}

/// The most loops on `unit` nested in one another within `stmts`.
fn gpu_depth(stmts: &[Stmt], unit: ParallelUnit) -> usize {
    stmts
        .iter()
        .map(|s| {
            let own = match s {
                Stmt::For(Loop {
                    kind: LoopKind::Parallel { unit: u, .. },
                    ..
                }) if *u == unit => 1,
                _ => 0,
            };
            let inner = crate::ir::visit::children(s)
                .into_iter()
                .map(|body| gpu_depth(body, unit))
                .max()
                .unwrap_or(0);
            own + inner
        })
        .max()
        .unwrap_or(0)
}
