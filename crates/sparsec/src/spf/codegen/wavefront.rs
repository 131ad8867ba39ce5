//! The level-set (wavefront) executor and its inspector, generated in the same kernel.

use super::*;
use crate::polyhedral::read::cpu_parallel;

/// The fewest rows a level needs to run on the team. Starting the team's work and
/// joining it costs microseconds, as much as some hundreds of rows of a sparse solve, and
/// a matrix whose lower triangle is nearly a chain has thousands of levels of one row.
const MIN_PARALLEL_LEVEL: i64 = 1024;

impl Context<'_> {
    /// The level-set executor: an inspector computes each row's level (one more than the
    /// highest level of the earlier rows it reads), sorts the rows by level, and each
    /// level's rows run in parallel.
    pub(super) fn wavefront(
        &mut self,
        all: &[Scheduled],
        items: &[usize],
        env: &mut [Option<Var>],
    ) -> Result<Vec<Stmt>, SpfError> {
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
        let level_start = f.fresh_scratch("level_start", LocalType::Index);
        let cursor = f.fresh_scratch("cursor", LocalType::Index);
        let order = f.fresh_scratch("order", LocalType::Index);
        let levels = f.fresh_var("levels", Type::Index);
        let r = f.fresh_var("r", Type::Index);
        let r2 = f.fresh_var("r", Type::Index);
        let r3 = f.fresh_var("r", Type::Index);
        let l = f.fresh_var("l", Type::Index);
        let l2 = f.fresh_var("l", Type::Index);
        let p = f.fresh_var("p", Type::Index);
        let row_len = rows.clone() + Expr::Int(1);
        for (array, len) in [
            (lev, rows.clone()),
            (level_start, row_len.clone()),
            (cursor, row_len),
            (order, rows.clone()),
        ] {
            f.locals.push(Local {
                array,
                len,
                space: MemorySpace::Global,
            });
        }
        let at = |a: Scratch, i: Expr| Expr::load(ArrayRef::Scratch(a), i);
        let store = |a: Scratch, i: Expr, v: Expr| {
            Stmt::Store(Store {
                array: ArrayRef::Scratch(a),
                index: i,
                value: v,
                accumulate: false,
            })
        };
        let counted = |var: Var, end: Expr, body: Vec<Stmt>| {
            Stmt::For(Loop {
                var,
                start: Expr::Int(0),
                end,
                body,
                kind: LoopKind::Serial,
            })
        };
        // Inspector: the loops of the statements that read earlier rows, in their
        // sequential order, computing levels.
        let writers = deps::row_functions(&scheduled_views(all))?;
        let readers: Vec<usize> = items
            .iter()
            .copied()
            .filter(|&n| {
                let s = &all[n];
                !deps::flow_sources(&writers, &s.value, &s.constraints).is_empty()
            })
            .collect();
        let mut out = Vec::new();
        if !readers.is_empty() {
            let leaf = Leaf::Levels {
                lev,
                first: first.clone(),
                rows: writers,
            };
            out = self.scan(all, &readers, &[], env, false, &leaf)?;
        }
        // Count the rows of each level, then place the rows in level order.
        out.push(Stmt::Decl(levels, Expr::Int(0)));
        out.push(counted(
            r,
            rows.clone(),
            vec![
                Stmt::Assign(
                    levels,
                    Expr::max(Expr::Var(levels), at(lev, Expr::Var(r)) + Expr::Int(1)),
                ),
                Stmt::Store(Store {
                    array: ArrayRef::Scratch(level_start),
                    index: at(lev, Expr::Var(r)) + Expr::Int(1),
                    value: Expr::Int(1),
                    accumulate: true,
                }),
            ],
        ));
        out.push(counted(
            l,
            Expr::Var(levels),
            vec![
                Stmt::Store(Store {
                    array: ArrayRef::Scratch(level_start),
                    index: Expr::Var(l) + Expr::Int(1),
                    value: at(level_start, Expr::Var(l)),
                    accumulate: true,
                }),
                store(cursor, Expr::Var(l), at(level_start, Expr::Var(l))),
            ],
        ));
        let slot = at(cursor, at(lev, Expr::Var(r2)));
        out.push(counted(
            r2,
            rows,
            vec![
                store(order, slot.clone(), Expr::Var(r2)),
                Stmt::Store(Store {
                    array: ArrayRef::Scratch(cursor),
                    index: at(lev, Expr::Var(r2)),
                    value: Expr::Int(1),
                    accumulate: true,
                }),
            ],
        ));
        // Executor: levels in order, the rows of one level in parallel.
        env[0] = Some(r3);
        let mut row_body = vec![Stmt::Decl(r3, at(order, Expr::Var(p)) + first)];
        row_body.extend(self.scan(all, items, &[range], env, false, &Leaf::Body)?);
        env[0] = None;
        let (start, end) = (
            at(level_start, Expr::Var(l2)),
            at(level_start, Expr::Var(l2) + Expr::Int(1)),
        );
        let level = |kind| {
            vec![Stmt::For(Loop {
                var: p,
                start: start.clone(),
                end: end.clone(),
                body: row_body.clone(),
                kind,
            })]
        };
        // Waking the team costs more than a level of few rows: those run serially.
        let wide = Expr::bin(
            BinOp::Ge,
            end.clone() - start.clone(),
            Expr::Int(MIN_PARALLEL_LEVEL),
        );
        out.push(counted(
            l2,
            Expr::Var(levels),
            vec![Stmt::If(
                wide,
                level(cpu_parallel()),
                level(LoopKind::Serial),
            )],
        ));
        Ok(out)
    }
}
