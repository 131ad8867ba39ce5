//! The level-set (wavefront) executor and its inspector, generated as two functions.

use super::*;
use crate::ir::ParamKind;
use crate::polyhedral::read::cpu_parallel;

/// The fewest rows a level needs to run on the team. Sharing a level's rows out and
/// waiting for them at its barrier costs about a microsecond, as much as some hundreds of
/// rows of a sparse solve, and a matrix whose lower triangle is nearly a chain has
/// thousands of levels of one row: a run of narrower levels runs on one thread, with one
/// barrier at its end.
const MIN_PARALLEL_LEVEL: i64 = 1024;

/// The two functions of a level-set computation, as statements of one context (they share
/// its operands, parameters and entry checks).
pub(super) struct LevelSets {
    /// The inspector: each row's level, emitted as the entry `(level, row - first)`.
    pub(super) inspector: Vec<Stmt>,
    /// The scratch array the inspector computes the levels in.
    pub(super) levels: Local,
    /// The executor: the levels in order, on one team of threads for the whole sweep,
    /// each wide level's rows (read from the operand `schedule`, the inspector's entries
    /// as CSR) shared among the team, each run of narrow levels on one thread.
    pub(super) executor: Vec<Stmt>,
}

impl Context<'_> {
    /// The level-set executor and its inspector, separate functions, so that the
    /// inspector runs once per structure: it computes each row's level (one more than the
    /// highest level of the earlier rows it reads) and emits it; the runtime keeps its
    /// entries, sorted by level, as the CSR operand `schedule`, whose rows are the levels;
    /// and the executor runs each level's rows in parallel.
    pub(super) fn wavefront(
        &mut self,
        all: &[Scheduled],
        items: &[usize],
        env: &mut [Option<Var>],
        schedule: OperandId,
    ) -> Result<LevelSets, SpfError> {
        let (first, end) = deps::outer_range(&scheduled_views(all)).ok_or_else(|| {
            SpfError::new(
                "wavefront: every statement's outer loop must have the same bounds, made of \
                 symbols and constants"
                    .into(),
                self.prog.wavefront.expect("asked for"),
            )
        })?;
        let range = (first.clone(), end.clone());
        let (first, end) = (self.affine(&first, env), self.affine(&end, env));
        let rows = ir::simplify(&Expr::max(end.clone() - first.clone(), Expr::Int(0)));
        let f = &mut *self.function;
        let lev = f.fresh_scratch("level", LocalType::Index);
        let r = f.fresh_var("r", Type::Index);
        let r3 = f.fresh_var("r", Type::Index);
        let l2 = f.fresh_var("l", Type::Index);
        let p = f.fresh_var("p", Type::Index);
        let levels = Local {
            array: lev,
            len: rows.clone(),
            space: MemorySpace::Global,
        };
        // Inspector: the loops of the statements that read earlier rows, in their
        // sequential order, computing levels; then one entry per row.
        let writers = deps::row_functions(&scheduled_views(all))?;
        let readers: Vec<usize> = items
            .iter()
            .copied()
            .filter(|&n| {
                let s = &all[n];
                !deps::flow_sources(&writers, &s.value, &s.constraints).is_empty()
            })
            .collect();
        let mut inspector = Vec::new();
        if !readers.is_empty() {
            let leaf = Leaf::Levels {
                lev,
                first: first.clone(),
                rows: writers,
            };
            inspector = self.scan(all, &readers, &[], env, false, &leaf)?;
        }
        inspector.push(Stmt::For(Loop {
            var: r,
            start: Expr::Int(0),
            end: rows,
            body: vec![Stmt::Emit {
                coords: vec![
                    Expr::load(ArrayRef::Scratch(lev), Expr::Var(r)),
                    Expr::Var(r),
                ],
                value: Expr::Float(1.0),
            }],
            kind: LoopKind::Serial,
        }));
        // Executor: levels in order, the rows of one level in parallel.
        let level_array = |level, kind| ArrayRef::Level {
            operand: schedule,
            level,
            kind,
        };
        let order = Expr::load(level_array(2, ArrayKind::Idx), Expr::Var(p));
        env[0] = Some(r3);
        let mut row_body = vec![Stmt::Decl(r3, order + first)];
        row_body.extend(self.scan(all, items, &[range], env, false, &Leaf::Body)?);
        env[0] = None;
        let bound = |at: Expr| Expr::load(level_array(2, ArrayKind::Pos), at);
        let levels_count = Expr::Param(ParamRef::Level {
            operand: schedule,
            level: 1,
            kind: ParamKind::Size,
        });
        let size = |level: Expr| bound(level.clone() + Expr::Int(1)) - bound(level);
        let is_wide =
            |level: Expr| Expr::bin(BinOp::Ge, size(level), Expr::Int(MIN_PARALLEL_LEVEL));
        let rows_of = |start: Expr, end: Expr, kind| {
            Stmt::For(Loop {
                var: p,
                start,
                end,
                body: row_body.clone(),
                kind,
            })
        };
        let f = &mut *self.function;
        let (l1, wide_rows, next) = (
            f.fresh_var("l", Type::Index),
            f.fresh_var("wide_rows", Type::Index),
            f.fresh_var("next", Type::Index),
        );
        let level = Expr::Var(l2);
        // The rows the team shares: those of the wide levels.
        let count_wide = [
            Stmt::Decl(wide_rows, Expr::Int(0)),
            Stmt::For(Loop {
                var: l1,
                start: Expr::Int(0),
                end: levels_count.clone(),
                body: vec![Stmt::If(
                    is_wide(Expr::Var(l1)),
                    vec![Stmt::Assign(
                        wide_rows,
                        Expr::Var(wide_rows) + size(Expr::Var(l1)),
                    )],
                    Vec::new(),
                )],
                kind: LoopKind::Serial,
            }),
        ];
        // A run of narrow levels is one stretch of the schedule, which its first level
        // runs in order on one thread; the later levels of the run then do nothing.
        let first_of_run = Expr::bin(
            BinOp::Or,
            Expr::eq(level.clone(), Expr::Int(0)),
            is_wide(Expr::max(level.clone() - Expr::Int(1), Expr::Int(0))),
        );
        let clamped = |at: Expr| Expr::min(at, levels_count.clone());
        let run_goes_on = Expr::and(
            Expr::lt(Expr::Var(next), levels_count.clone()),
            Expr::lt(
                bound(clamped(Expr::Var(next) + Expr::Int(1))) - bound(clamped(Expr::Var(next))),
                Expr::Int(MIN_PARALLEL_LEVEL),
            ),
        );
        let narrow_run = vec![
            Stmt::Decl(next, level.clone() + Expr::Int(1)),
            Stmt::While(
                run_goes_on,
                vec![Stmt::Assign(next, Expr::Var(next) + Expr::Int(1))],
            ),
            rows_of(
                bound(level.clone()),
                bound(Expr::Var(next)),
                LoopKind::Serial,
            ),
        ];
        let mut executor = count_wide.to_vec();
        executor.push(Stmt::For(Loop {
            var: l2,
            start: Expr::Int(0),
            end: levels_count.clone(),
            body: vec![Stmt::If(
                is_wide(level.clone()),
                vec![rows_of(
                    bound(level.clone()),
                    bound(level + Expr::Int(1)),
                    cpu_parallel(),
                )],
                vec![Stmt::If(first_of_run, narrow_run, Vec::new())],
            )],
            kind: LoopKind::Team {
                work: Expr::Var(wide_rows),
                all: bound(levels_count),
            },
        }));
        Ok(LevelSets {
            inspector,
            levels,
            executor,
        })
    }
}
