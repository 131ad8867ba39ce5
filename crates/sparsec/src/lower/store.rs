//! Stores: the value of the right-hand side at the current positions, written to its
//! destination (a temporary, a workspace, the dense output in place, or an emitted entry),
//! and the flushes of accumulators gathered in a fused position space.

use std::ops::Add;

use super::iterate::conjunction;
use super::{parallel, Dest, LExpr, LowerError, Lowerer, Scope};
use crate::format::LevelCoord;
use crate::ir::{ArrayRef, BinOp, Expr, LocalType, MathFn, OperandId, Stmt, Store, Type};
use crate::notation::ast::Op;
use crate::notation::cin::VarId;

impl Lowerer<'_> {
    /// The value of the expression at the current positions, stored to the destination.
    pub(super) fn store(
        &mut self,
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let mut prelude = Vec::new();
        // Over a semiring, an entry of a sparse destination (a sparse output, its
        // workspace, or a reduction whose result it stores only where something was
        // reduced) is stored only where the value is present; a dense one holds ⊕'s
        // identity elsewhere.
        let sparse_destination = match dest {
            Dest::Output => !self.dense_output,
            Dest::Workspace { .. } => true,
            Dest::Temp { touched, .. } => touched.is_some(),
            Dest::Local { .. } => false,
        };
        let (value, presence) = if self.over_semiring() && sparse_destination {
            self.semiring_value(expr, scope, &mut prelude)?
        } else {
            (self.value(expr, scope, &mut prelude)?, None)
        };
        let target = match dest {
            Dest::Temp { name, .. } => parallel::Target::Temp(name),
            Dest::Workspace { depth, .. } => parallel::Target::Workspace { depth: *depth },
            Dest::Local { depth, vars, .. } => parallel::Target::Local {
                depth: *depth,
                vars,
            },
            Dest::Output if self.dense_output => parallel::Target::DenseOutput,
            Dest::Output => parallel::Target::Emit,
        };
        let atomic = self.resolve_races(target)?;
        let update = |s: Stmt| if atomic { Stmt::Atomic(Box::new(s)) } else { s };
        let stores = match dest {
            Dest::Temp {
                name,
                touched,
                counted,
            } => {
                let mut s = vec![update(Stmt::Assign(
                    self.named_any(name.clone()),
                    self.reduce(self.iv(name.clone()), value),
                ))];
                if let Some(flag) = touched {
                    s.push(Stmt::Assign(self.named_any(flag.clone()), Expr::Bool(true)));
                }
                if let Some(count) = counted {
                    let atomic = self.resolve_races(parallel::Target::Temp(count))?;
                    let add = Stmt::Assign(
                        self.named_any(count.clone()),
                        Add::add(self.iv(count.clone()), Expr::Float(1.0)),
                    );
                    s.push(if atomic {
                        Stmt::Atomic(Box::new(add))
                    } else {
                        add
                    });
                }
                s
            }
            Dest::Local { .. } if !self.reduces_by_sum() => {
                unreachable!("precompute is refused where reductions are not sums")
            }
            Dest::Local { name, vars, .. } => vec![update(Stmt::Store(Store {
                array: ArrayRef::Scratch(self.scratch(name, LocalType::Value)),
                index: self.linear_index(vars),
                value,
                accumulate: true,
            }))],
            Dest::Workspace { name, vars, .. } => {
                let at = self.linear_index(vars);
                let count = format!("{name}\u{1}_count");
                let seen =
                    ArrayRef::Scratch(self.scratch(&format!("{name}\u{1}_seen"), LocalType::Flag));
                let vals =
                    ArrayRef::Scratch(self.scratch(&format!("{name}\u{1}_vals"), LocalType::Value));
                // Over a semiring the first value of a coordinate is stored as it is (the
                // workspace's zeros are no identity of ⊕), later ones combined with it:
                // stored before `seen` is set.
                let semiring_update = (!self.reduces_by_sum()).then(|| {
                    let combined = self.reduce(Expr::load(vals, at.clone()), value.clone());
                    Stmt::Store(Store {
                        array: vals,
                        index: at.clone(),
                        value: Expr::Select(
                            Box::new(Expr::load(seen, at.clone())),
                            Box::new(combined),
                            Box::new(value.clone()),
                        ),
                        accumulate: false,
                    })
                });
                // Without a branch: whether a coordinate is new is as good as random in
                // SpGEMM, so write it into the list's next slot always and count it only
                // when it was not seen (the list has a spare slot for the last write).
                let mut stmts = vec![
                    Stmt::Store(Store {
                        array: ArrayRef::Scratch(
                            self.scratch(&format!("{name}\u{1}_list"), LocalType::Index),
                        ),
                        index: self.iv(count.clone()),
                        value: at.clone(),
                        accumulate: false,
                    }),
                    Stmt::Assign(
                        self.named_any(count.clone()),
                        self.iv(count)
                            + Expr::Select(
                                Box::new(Expr::load(seen, at.clone())),
                                Box::new(Expr::Int(0)),
                                Box::new(Expr::Int(1)),
                            ),
                    ),
                ];
                let set_seen = Stmt::Store(Store {
                    array: seen,
                    index: at.clone(),
                    value: Expr::Int(1),
                    accumulate: false,
                });
                match semiring_update {
                    Some(update) => stmts.extend([update, set_seen]),
                    None => stmts.extend([
                        set_seen,
                        Stmt::Store(Store {
                            array: vals,
                            index: at,
                            value,
                            accumulate: true,
                        }),
                    ]),
                }
                stmts
            }
            Dest::Output if self.dense_output && scope.coalesce.is_some() => {
                if !self.reduces_by_sum() {
                    return Err(self.not_over_semiring(
                        "an accumulator over a fused position space (`fuse` then `pos`)",
                    ));
                }
                let coalesce = scope.coalesce.clone().expect("checked");
                if coalesce.depth != self.parallel.len() {
                    return Err(LowerError(
                        "a parallel loop inside a fused position space updates the output; \
                         parallelize the position space's outer loop instead"
                            .into(),
                    ));
                }
                let stem = &coalesce.stem;
                let (acc, at) = (format!("{stem}\u{1}_acc"), format!("{stem}\u{1}_at"));
                let flush = self.flush_store(stem, atomic, coalesce.contiguous_runs);
                vec![
                    Stmt::If(
                        Expr::bin(BinOp::Ne, self.output_position(), self.iv(at.clone())),
                        vec![
                            flush,
                            Stmt::Assign(self.named_any(at), self.output_position()),
                            Stmt::Assign(self.named_any(acc.clone()), Expr::Float(0.0)),
                        ],
                        vec![],
                    ),
                    Stmt::Assign(self.named_any(acc.clone()), self.iv(acc) + value),
                ]
            }
            Dest::Output
                if self.dense_output && self.store_accumulates && !self.reduces_by_sum() =>
            {
                let pos = self.output_position();
                let array = ArrayRef::Values(OperandId(0));
                vec![update(Stmt::Store(Store {
                    value: self.reduce(Expr::load(array, pos.clone()), value),
                    array,
                    index: pos,
                    accumulate: false,
                }))]
            }
            Dest::Output if self.dense_output => {
                let pos = self.output_position();
                vec![update(Stmt::Store(Store {
                    array: ArrayRef::Values(OperandId(0)),
                    index: pos,
                    value,
                    accumulate: self.store_accumulates,
                }))]
            }
            Dest::Output => {
                self.note_emit();
                vec![Stmt::Emit {
                    coords: self.stmt.lhs.iter().map(|&v| self.var(v)).collect(),
                    value,
                }]
            }
        };
        match presence {
            Some(present) => prelude.push(Stmt::If(present, stores, vec![])),
            None => prelude.extend(stores),
        }
        Ok(prelude)
    }

    /// Position of the current output coordinates in the dense output's values.
    pub(super) fn output_position(&self) -> Expr {
        let out = &self.operands[0];
        let mut pos = Expr::Int(0);
        for (k, spec) in out.format.levels().iter().enumerate() {
            let LevelCoord::Mode(m) = spec.coord else {
                unreachable!("plain format")
            };
            let site = self.site(0, None, k);
            pos = spec
                .format
                .locate(&site, &pos, &self.var(self.stmt.lhs[m]), &Expr::Int(0))
                .expect("dense levels locate")
                .0;
        }
        pos
    }

    /// `if (at >= 0) out[at] += acc;` for a coalescing accumulator.
    /// Add the accumulator into its output entry, if it has one. With `first_only`, only
    /// the first flush of a loop iteration is atomic (see [`Coalesce::contiguous_runs`]).
    pub(super) fn flush_store(&self, stem: &str, atomic: bool, first_only: bool) -> Stmt {
        let store = Stmt::Store(Store {
            array: ArrayRef::Values(OperandId(0)),
            index: self.iv(format!("{stem}\u{1}_at")),
            value: self.iv(format!("{stem}\u{1}_acc")),
            accumulate: true,
        });
        let flush = match (atomic, first_only) {
            (false, _) => vec![store],
            (true, false) => vec![Stmt::Atomic(Box::new(store))],
            (true, true) => {
                let first = format!("{stem}\u{1}_first");
                vec![Stmt::If(
                    self.iv(first.clone()),
                    vec![
                        Stmt::Atomic(Box::new(store.clone())),
                        Stmt::Assign(self.named_any(first), Expr::Bool(false)),
                    ],
                    vec![store],
                )]
            }
        };
        Stmt::If(
            Expr::bin(BinOp::Ge, self.iv(format!("{stem}\u{1}_at")), Expr::Int(0)),
            flush,
            vec![],
        )
    }

    /// The last flush of the accumulator that `inner` opened (none if it opened none).
    pub(super) fn flush_coalesced(
        &mut self,
        inner: &Scope,
        outer: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        match &inner.coalesce {
            Some(coalesce) if outer.coalesce.is_none() => {
                let atomic = self.resolve_races(parallel::Target::DenseOutput)?;
                Ok(vec![self.flush_store(&coalesce.stem, atomic, false)])
            }
            _ => Ok(vec![]),
        }
    }

    /// Row-major position of the variables' current values in a dense workspace.
    pub(super) fn linear_index(&self, vars: &[VarId]) -> Expr {
        vars.iter()
            .fold(Expr::Int(0), |acc, &v| acc * self.size(v) + self.var(v))
    }

    /// Locate occurrence `o` at the levels its loops did not reach, whose variables outer
    /// loops bound: by `locate`, or by binary search in an ordered level of unique
    /// coordinates (a diagonal access `A(i,i)` reaches its second `i` level this way).
    /// Returns the position and the conditions under which it holds the coordinates.
    ///
    /// A search that does not find its coordinate leaves a position that may lie past its
    /// segment, so every later level that reads memory is located only when the earlier
    /// ones were found (its position and flag start at 0 and false).
    fn locate_unreached(
        &self,
        o: usize,
        scope: &Scope,
        prelude: &mut Vec<Stmt>,
    ) -> Result<(Expr, Vec<Expr>), LowerError> {
        let occ = &self.occurrences[o];
        let mut pos = scope.positions[o].last().cloned().unwrap_or(Expr::Int(0));
        let mut found = Vec::new();
        let mut reached = scope.clone();
        let mut searched = false;
        for k in scope.resolved(o)..occ.levels.len() {
            let site = self.site(occ.operand, Some(o), k);
            let coord = self.var(occ.level_vars[k]);
            let level = &occ.levels[k];
            let located = level.locate(&site, &pos, &coord, &Expr::Int(0));
            let reads = located
                .as_ref()
                .is_none_or(|(at, holds)| reads_memory(at) || reads_memory(holds));
            if let Some((at, _)) = located.clone().filter(|_| !(searched && reads)) {
                // `found` may read the located position: give it the position itself.
                let (_, holds) = level
                    .locate(&site, &pos, &coord, &at)
                    .expect("the level located above");
                found.push(holds);
                pos = at;
                reached = reached.with(o, pos.clone(), None);
                continue;
            }
            let props = level.properties();
            // A non-unique level is searched for the run of its duplicates of `coord`,
            // which the levels below it continue as one segment; a last level has none.
            let searchable = props.ordered
                && level.capabilities().coord_pos_iter
                && (props.unique || k + 1 < occ.levels.len());
            if located.is_none() && !searchable {
                let operand = &self.operands[occ.operand];
                return Err(LowerError(format!(
                    "`{}` (stored as `{}`) would be read where its loops do not reach level \
                     {} ({}), which cannot be located into; store it in a format whose \
                     levels can (e.g. dense or hash) for this statement",
                    self.stmt.tensors[operand.tensor].name,
                    self.stmt.tensors[operand.tensor].format.spelling(),
                    k + 1,
                    level.name()
                )));
            }
            let stem = self.stem(o, &reached);
            let name = format!("p{stem}");
            let run_end = format!("{name}\u{1}_run_end");
            let (mut stmts, (at, holds)) = match located {
                Some(_) => {
                    let (at, holds) = level
                        .locate(&site, &pos, &coord, &self.iv(name.clone()))
                        .expect("the level located above");
                    (vec![], (at, holds))
                }
                None => self.search(o, occ.level_vars[k], &reached, &name),
            };
            let mut declared = vec![(name.clone(), at)];
            if !props.unique {
                let (run, (end, _)) = self.search_for(
                    o,
                    Add::add(coord.clone(), Expr::Int(1)),
                    &reached,
                    &format!("{name}\u{1}_next"),
                );
                stmts.extend(run);
                declared.push((run_end.clone(), end));
            }
            if searched {
                let flag = format!("{stem}\u{1}_found");
                let guard = conjunction(std::mem::take(&mut found));
                for (var, value) in declared {
                    prelude.push(Stmt::Decl(
                        self.named(var.clone(), Type::Index),
                        Expr::Int(0),
                    ));
                    stmts.push(Stmt::Assign(self.named_any(var), value));
                }
                stmts.push(Stmt::Assign(self.named_any(flag.clone()), holds));
                prelude.push(Stmt::Decl(
                    self.named(flag.clone(), Type::Bool),
                    Expr::Bool(false),
                ));
                prelude.push(Stmt::If(guard, stmts, vec![]));
                found.push(self.iv(flag));
            } else {
                prelude.extend(stmts);
                for (var, value) in declared {
                    prelude.push(Stmt::Decl(self.named(var, Type::Index), value));
                }
                found.push(holds);
            }
            searched = true;
            pos = self.iv(name);
            let segment_end = (!props.unique).then(|| self.iv(run_end));
            reached = reached.with(o, pos.clone(), segment_end);
        }
        Ok((pos, found))
    }

    /// The value of `expr` at the current positions. An operand whose levels the loops
    /// did not all reach (one read against its layout, see `order::conflicts`) is located
    /// at the remaining levels' variables, which outer loops bound; it is zero where a
    /// level does not find the coordinate, and a clear error where a level cannot locate.
    pub(super) fn value(
        &self,
        expr: &LExpr,
        scope: &Scope,
        prelude: &mut Vec<Stmt>,
    ) -> Result<Expr, LowerError> {
        let (value, holds) = if self.over_semiring() {
            self.semiring_value(expr, scope, prelude)?
        } else {
            self.guarded_value(expr, scope, prelude)?
        };
        Ok(match holds {
            None => value,
            Some(holds) => Expr::Select(
                Box::new(holds),
                Box::new(value),
                Box::new(self.reduction_identity()),
            ),
        })
    }

    /// The value of `expr` and, when it reads located operands, the condition under which
    /// they were found: elsewhere the value is an unstored entry's structural zero, which
    /// annihilates the products and numerators around it (an unsigned `+0`, whatever
    /// the other factors hold, as where lowering drops an absent operand from a case).
    pub(super) fn guarded_value(
        &self,
        expr: &LExpr,
        scope: &Scope,
        prelude: &mut Vec<Stmt>,
    ) -> Result<(Expr, Option<Expr>), LowerError> {
        Ok(match expr {
            LExpr::Access(o) => {
                let occ = &self.occurrences[*o];
                let (pos, found) = self.locate_unreached(*o, scope, prelude)?;
                let load = Expr::load(ArrayRef::Values(OperandId(occ.operand)), pos);
                match crate::ir::simplify(&conjunction(found)) {
                    Expr::Bool(true) => (load, None),
                    holds => (load, Some(holds)),
                }
            }
            LExpr::Neg(a) => {
                let (a, holds) = self.guarded_value(a, scope, prelude)?;
                (Expr::Neg(Box::new(a)), holds)
            }
            LExpr::Binary(Op::Mul | Op::Add, ..) if self.over_semiring() => {
                self.semiring_value(expr, scope, prelude)?
            }
            LExpr::Binary(Op::Mul, a, b) => {
                let (a, a_holds) = self.guarded_value(a, scope, prelude)?;
                let (b, b_holds) = self.guarded_value(b, scope, prelude)?;
                let holds = match (a_holds, b_holds) {
                    (Some(x), Some(y)) => Some(Expr::and(x, y)),
                    (x, y) => x.or(y),
                };
                (Expr::bin(BinOp::Mul, a, b), holds)
            }
            LExpr::Binary(Op::Div, a, b) => {
                let (a, holds) = self.guarded_value(a, scope, prelude)?;
                let b = self.value(b, scope, prelude)?;
                (Expr::bin(BinOp::Div, a, b), holds)
            }
            LExpr::Binary(op, a, b) => {
                // An absent term leaves the other one as it is (`-b` for `absent - b`),
                // as a lattice case without it computes.
                let (a, a_holds) = self.guarded_value(a, scope, prelude)?;
                let (b, b_holds) = self.guarded_value(b, scope, prelude)?;
                let (op, b_alone) = match op {
                    Op::Add => (BinOp::Add, b.clone()),
                    _ => (BinOp::Sub, Expr::Neg(Box::new(b.clone()))),
                };
                let both = Expr::bin(op, a.clone(), b);
                either_present(both, (a, a_holds), (b_alone, b_holds))
            }
            // 1 where the argument has an entry; its absence is the result's.
            LExpr::Math(MathFn::Pattern, args) => {
                let (_, holds) = self.guarded_value(&args[0], scope, prelude)?;
                (Expr::Float(1.0), holds)
            }
            LExpr::Math(f, args) => {
                // An absent argument is a zero the function is applied to. With
                // f(0, ..., 0) = 0 the result is absent where every argument is.
                let mut values = Vec::with_capacity(args.len());
                let mut found: Vec<Option<Expr>> = Vec::with_capacity(args.len());
                for a in args {
                    let (v, holds) = self.guarded_value(a, scope, prelude)?;
                    values.push(match (&holds, args.len()) {
                        // One argument: its absence is the result's, so its value is
                        // never used there.
                        (Some(_), 1) if f.keeps_zero() => v,
                        (Some(h), _) => Expr::Select(
                            Box::new(h.clone()),
                            Box::new(v),
                            Box::new(Expr::Float(0.0)),
                        ),
                        (None, _) => v,
                    });
                    found.push(holds);
                }
                let present_where = if f.keeps_zero() {
                    found
                        .into_iter()
                        .collect::<Option<Vec<Expr>>>()
                        .and_then(|all| all.into_iter().reduce(|x, y| Expr::bin(BinOp::Or, x, y)))
                } else {
                    None
                };
                (Expr::Math(*f, values), present_where)
            }
            LExpr::Literal(v) => (Expr::Float(*v), None),
            LExpr::Temp(t) => (
                self.iv(*t),
                self.touched_temps
                    .get(t)
                    .map(|&count| Expr::bin(BinOp::Gt, Expr::Var(count), Expr::Float(0.0))),
            ),
            LExpr::WorkspaceRead(name, vars) => (
                Expr::load(ArrayRef::Scratch(*name), self.linear_index(vars)),
                None,
            ),
            // Its loop was replaced: another workspace's touched coordinates stand for it.
            LExpr::Precomputed(p) => {
                return Err(LowerError(format!(
                    "precompute: precondition failed: each workspace has the loop where its \
                     producer starts: workspace `{}` starts at the loop of `{}`, which a sparse \
                     output visits through another workspace's touched coordinates instead; \
                     precompute one of them over other variables",
                    p.workspace, self.plan.vars[p.at].name
                )))
            }
            LExpr::Zero => (Expr::Float(0.0), None),
            LExpr::Sum(..) => unreachable!("every sum is lowered before its variable's loop ends"),
        })
    }
}

/// The value of a sum of two terms, each with where it is present (`None`: everywhere):
/// `both` where both are, the present one alone (`a`, or `b_alone`, which is `-b` for a
/// difference) where only one is; present where either is.
pub(super) fn either_present(
    both: Expr,
    (a, a_holds): (Expr, Option<Expr>),
    (b_alone, b_holds): (Expr, Option<Expr>),
) -> (Expr, Option<Expr>) {
    let select = |holds: Expr, then: Expr, otherwise: Expr| {
        Expr::Select(Box::new(holds), Box::new(then), Box::new(otherwise))
    };
    match (a_holds, b_holds) {
        (None, None) => (both, None),
        (Some(x), None) => (select(x, both, b_alone), None),
        (None, Some(y)) => (select(y, both, a), None),
        (Some(x), Some(y)) => (
            select(x.clone(), select(y.clone(), both, a), b_alone),
            Some(Expr::bin(BinOp::Or, x, y)),
        ),
    }
}

/// True when evaluating `e` loads from an array or calls a helper.
fn reads_memory(e: &Expr) -> bool {
    let mut reads = false;
    crate::ir::visit::walk_expr(e, &mut |x| {
        reads |= matches!(x, Expr::Load(..) | Expr::Call(..));
    });
    reads
}
