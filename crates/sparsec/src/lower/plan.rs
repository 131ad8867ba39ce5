//! The walk over the loop order: per variable, what the plan asks for (a reduction into a
//! temporary, a precomputed workspace, a recovered variable, a position space) before the
//! variable's loop is emitted by an iteration strategy.

use super::{Dest, LExpr, LowerError, Lowerer, Scope, Step};
use crate::ir::ValueType;
use crate::ir::{Expr, Loop, LoopKind, Stmt, Type};
use crate::notation::cin::VarId;
use crate::schedule::lexpr;

impl Lowerer<'_> {
    pub(super) fn lower(
        &mut self,
        remaining: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let Some((&v, rest)) = remaining.split_first() else {
            return self.store(expr, dest, scope);
        };
        if scope.recovered.contains(&v) {
            return self.lower(rest, expr, dest, scope);
        }
        let precomputed = expr
            .find_precompute(&|p| self.starts_workspace(p, v))
            .cloned();
        if let Some(p) = precomputed {
            return self.precompute(&p, remaining, expr, dest, scope);
        }
        let summed = self
            .plan
            .roots(v)
            .into_iter()
            .find_map(|r| expr.find_sum(r).cloned().map(|sum| (r, sum)));
        if let Some((root, sum)) = summed {
            let LExpr::Sum(_, _, body) = &sum else {
                unreachable!()
            };
            let mut inside = Vec::new();
            lexpr::summed_vars(&sum, &mut inside);
            let sub: Vec<VarId> = remaining
                .iter()
                .copied()
                .filter(|&u| self.derives_from_any(u, &inside))
                .collect();
            let others: Vec<VarId> = remaining
                .iter()
                .copied()
                .filter(|&u| !self.derives_from_any(u, &inside))
                .collect();
            let temp = self.temp();
            let mut stmts = vec![Stmt::Decl(
                self.named(temp.clone(), Type::Value(ValueType::F64)),
                self.reduction_identity(),
            )];
            // A reduction that annihilates where it summed nothing counts what it summed.
            let counted = expr.sum_annihilates(root).then(|| self.temp());
            if let Some(count) = &counted {
                stmts.push(Stmt::Decl(
                    self.named(count.clone(), Type::Value(ValueType::F64)),
                    Expr::Float(0.0),
                ));
                self.touched_temps
                    .insert(self.named_any(&temp), self.named_any(count.clone()));
            }
            let into = Dest::Temp {
                name: temp.clone(),
                touched: None,
                counted,
            };
            stmts.extend(self.lower(&sub, body, &into, scope)?);
            stmts.extend(self.lower(
                &others,
                &expr.replace_sum(root, self.named_any(&temp)),
                dest,
                scope,
            )?);
            return Ok(stmts);
        }
        if matches!(dest, Dest::Output) && remaining.iter().all(|&u| !self.is_free(u)) {
            let temp = self.temp();
            let touched = (!self.dense_output).then(|| format!("{temp}\u{1}_touched"));
            let mut stmts = vec![Stmt::Decl(
                self.named(temp.clone(), Type::Value(ValueType::F64)),
                self.reduction_identity(),
            )];
            if let Some(flag) = &touched {
                stmts.push(Stmt::Decl(
                    self.named(flag.clone(), Type::Bool),
                    Expr::Bool(false),
                ));
            }
            let into = Dest::Temp {
                name: temp.clone(),
                touched: touched.clone(),
                counted: None,
            };
            stmts.extend(self.lower(remaining, expr, &into, scope)?);
            let store = self.store(&LExpr::Temp(self.named_any(&temp)), dest, scope)?;
            match touched {
                Some(flag) => stmts.push(Stmt::If(self.iv(flag), store, vec![])),
                None => stmts.extend(store),
            }
            return Ok(stmts);
        }
        let free_rest: Vec<VarId> = remaining
            .iter()
            .copied()
            .filter(|&u| self.is_free(u))
            .collect();
        if matches!(dest, Dest::Output)
            && !self.dense_output
            && free_rest.len() == 1
            && !self.is_free(v)
        {
            return self.through_workspace(free_rest[0], remaining, expr, scope);
        }
        let step = Step {
            var: v,
            rest,
            expr,
            dest,
            scope,
        };
        if let Some(rel) = self.plan.replaced_by(v).cloned() {
            return self.recover(step, &rel);
        }
        let (setup, scope) = self.enter_position_space(v, scope)?;
        let scope = &scope;
        let tags = self.plan.vars[v].tags.clone();
        if let Some(p) = &tags.parallel {
            self.check_nesting(v, p)?;
            self.parallel.push((v, p.clone(), Vec::new()));
        }
        let loops = match self.lattice(expr, v, scope) {
            None => {
                let (mut body, mut inner) = self.position_trackers(v, scope);
                let end = match self.tail_of_split(v, rest) {
                    Some((parent, left)) => {
                        inner.guarded.insert(parent);
                        Expr::min(self.size(v), left)
                    }
                    None => self.size(v),
                };
                body.extend(self.lower(rest, expr, dest, &inner)?);
                body.extend(self.flush_coalesced(&inner, scope)?);
                Ok(vec![Stmt::For(Loop {
                    var: self.name(v),
                    start: Expr::Int(0),
                    end,
                    body,
                    kind: LoopKind::Serial,
                })])
            }
            Some(points) => self.merge(Step { scope, ..step }, &points),
        };
        let (reductions, locals) = match tags.parallel {
            Some(_) => {
                let locals = self.locals_at(self.parallel.len());
                (self.parallel.pop().map(|p| p.2).unwrap_or_default(), locals)
            }
            None => (Vec::new(), Vec::new()),
        };
        let mut stmts = setup;
        stmts.extend(self.tag_loop(v, loops?, &tags, reductions, locals)?);
        Ok(stmts)
    }
}
