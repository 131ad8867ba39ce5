//! Workspaces: precomputed subexpressions and dense rows with touched lists (Gustavson),
//! and the scratch arrays that hold them, private to the innermost parallel loop.

use super::{Dest, LExpr, LowerError, Lowerer, Scope};
use crate::ir::{
    ArrayRef, BinOp, Expr, Local, LocalType, Loop, LoopKind, MemorySpace, Stmt, Store, Type,
};
use crate::notation::cin::VarId;
use crate::schedule::lexpr;

impl Lowerer<'_> {
    /// Take the workspaces allocated inside `depth` parallel loops.
    pub(super) fn locals_at(&mut self, depth: usize) -> Vec<Local> {
        let (here, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.local_arrays)
            .into_iter()
            .partition(|(d, _)| *d == depth);
        self.local_arrays = rest;
        here.into_iter().map(|(_, local)| local).collect()
    }

    /// Allocate a zeroed workspace private to the innermost enclosing parallel loop.
    pub(super) fn local(&mut self, name: &str, len: Expr, ty: LocalType) {
        let array = self.scratch(name, ty);
        if !self.local_arrays.iter().any(|(_, l)| l.array == array) {
            let space = MemorySpace::inside(self.parallel.iter().map(|(_, p, _)| p.unit));
            let local = Local { array, len, space };
            self.local_arrays.push((self.parallel.len(), local));
        }
    }

    /// `workspace(vars) = sum over private of body`: zero the workspace where the first
    /// private variable's loop starts, run the producer loops (the private variables and
    /// the workspace's) into it, then the rest with the workspace read in its place.
    pub(super) fn precompute(
        &mut self,
        p: &lexpr::Precompute,
        remaining: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        if !self.reduces_by_sum() {
            return Err(self.not_over_semiring(&format!("`precompute` (of `{}`)", p.workspace)));
        }
        // The producer runs the workspace's loops and its private ones, and recovers the
        // variables those loops compute (a split variable, once its inner loop is bound).
        let mut producer: Vec<VarId> = Vec::new();
        for (n, &u) in remaining.iter().enumerate() {
            let recovered_here = !self.plan.is_loop(u)
                && self
                    .plan
                    .descendants(u)
                    .iter()
                    .all(|d| *d == u || producer.contains(d) || !remaining[..n].contains(d));
            if self.derives_from_any(u, &p.private)
                || self.descends_from_any(u, &p.vars)
                || recovered_here
            {
                producer.push(u);
            }
        }
        let consumer: Vec<VarId> = remaining
            .iter()
            .copied()
            .filter(|&u| !self.derives_from_any(u, &p.private))
            .collect();
        // Visiting only the touched entries is right when the rest of the expression is
        // zero where the workspace is. The touched coordinates replace the consumer's first
        // loops: those derived from the workspace's variables, which they must cover, in
        // the workspace's order.
        let lead = consumer
            .iter()
            .take_while(|&&u| self.descends_from_any(u, &p.vars))
            .count();
        let in_lead: Vec<VarId> = consumer[..lead]
            .iter()
            .copied()
            .filter(|u| p.vars.contains(u))
            .collect();
        // The loops after them must not recover a variable from the replaced ones (a fuse
        // of a workspace variable with another).
        let apart = consumer[lead..].iter().all(|&u| {
            self.plan.is_loop(u)
                || !self
                    .plan
                    .descendants(u)
                    .iter()
                    .any(|d| consumer[..lead].contains(d))
        });
        let factor = expr.annihilated_by(&p.workspace);
        let sparse_consumer = matches!(dest, Dest::Output)
            && !self.dense_output
            && !p.vars.is_empty()
            && in_lead == p.vars
            && apart
            && factor;
        if sparse_consumer {
            let rest = &consumer[lead..];
            return self.precompute_touched(p, &producer, rest, expr, dest, scope);
        }
        if !self.dense_output && !factor {
            return Err(LowerError(format!(
                "precompute: precondition failed: a sparse output reads the workspace `{}` \
                 as a factor: the rest of its expression is added to it, so the output would \
                 be dense; store the output densely, or precompute a factor",
                p.workspace
            )));
        }
        if !self.dense_output {
            let names: Vec<&str> = p
                .vars
                .iter()
                .map(|&v| self.plan.vars[v].name.as_str())
                .collect();
            return Err(LowerError(format!(
                "precompute: precondition failed: a sparse output reads the workspace `{}` \
                 only along its variables ({}) as the next loops after the producer, in that \
                 order",
                p.workspace,
                names.join(", ")
            )));
        }
        let name = format!("%\u{1}{}", p.workspace);
        let len = p
            .vars
            .iter()
            .map(|&v| self.size(v))
            .reduce(|a, b| a * b)
            .unwrap_or(Expr::Int(1));
        let depth = self.parallel.len();
        self.local(&name, len.clone(), LocalType::Value);
        let array = ArrayRef::Scratch(self.scratch(&name, LocalType::Value));
        let q = format!("{name}\u{1}_q");
        let mut stmts = vec![Stmt::For(Loop {
            var: self.named(q.clone(), Type::Index),
            start: Expr::Int(0),
            end: len,
            body: vec![Stmt::Store(Store {
                array,
                index: self.iv(q),
                value: Expr::Float(0.0),
                accumulate: false,
            })],
            kind: LoopKind::Serial,
        })];
        let into = Dest::Local {
            name: name.clone(),
            vars: p.vars.clone(),
            depth,
        };
        // Producer and consumer each in a block of its own: both may enter the same
        // position space, whose bounds and trackers each declares.
        stmts.push(Stmt::Block(self.lower(&producer, &p.body, &into, scope)?));
        let read = expr.read_workspace(&p.workspace, self.scratch(&name, LocalType::Value));
        stmts.push(Stmt::Block(self.lower(&consumer, &read, dest, scope)?));
        Ok(stmts)
    }

    /// A precomputed workspace read by a sparse output along its variables: the producer
    /// records the coordinates it touches, and the consumer visits only those, in order,
    /// clearing each after use (the Gustavson pattern, so nothing is zeroed per row), then
    /// runs the `rest` of its loops.
    pub(super) fn precompute_touched(
        &mut self,
        p: &lexpr::Precompute,
        producer: &[VarId],
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let name = format!("%\u{1}{}", p.workspace);
        let vals = self.scratch(&format!("{name}\u{1}_vals"), LocalType::Value);
        let read = expr.read_workspace(&p.workspace, vals);
        self.touched_workspace(
            &name,
            &p.vars,
            |lowerer, into| {
                Ok(vec![Stmt::Block(
                    lowerer.lower(producer, &p.body, into, scope)?,
                )])
            },
            |lowerer| lowerer.resolve_all(&p.vars, rest, &read, dest, scope),
        )
    }

    /// True when the loop of `v` starts the precomputed workspace `p`.
    pub(super) fn starts_workspace(&self, p: &lexpr::Precompute, v: VarId) -> bool {
        self.descends_from_any(v, &[p.at])
    }

    /// True when `u` is one of `vars` or was derived from one (by split, fuse, pos, ...).
    pub(super) fn descends_from_any(&self, u: VarId, vars: &[VarId]) -> bool {
        vars.iter().any(|&w| self.plan.descendants(w).contains(&u))
    }

    /// True when `u` is, or is derived from, one of `vars`.
    pub(super) fn derives_from_any(&self, u: VarId, vars: &[VarId]) -> bool {
        self.plan.roots(u).iter().any(|r| vars.contains(r))
    }

    /// Reductions outside the output's last variable `w` scatter into it: gather them in a
    /// dense workspace row, then emit the touched coordinates in increasing order so the
    /// output needs no sort.
    pub(super) fn through_workspace(
        &mut self,
        w: VarId,
        remaining: &[VarId],
        expr: &LExpr,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let name = self.fresh("w");
        let vals = ArrayRef::Scratch(self.scratch(&format!("{name}\u{1}_vals"), LocalType::Value));
        self.touched_workspace(
            &name,
            &[w],
            |lowerer, into| lowerer.lower(remaining, expr, into, scope),
            |lowerer| {
                lowerer.note_emit();
                Ok(vec![Stmt::Emit {
                    coords: lowerer.stmt.lhs.iter().map(|&v| lowerer.var(v)).collect(),
                    value: Expr::load(vals, lowerer.var(w)),
                }])
            },
        )
    }

    /// A dense workspace `name` over `vars` that records the coordinates it touches
    /// (linearised row-major): `produce` accumulates into it, the touched list is put in
    /// order, then for each touched coordinate `vars` are declared, `consume` runs, and
    /// the entry is cleared.
    pub(super) fn touched_workspace(
        &mut self,
        name: &str,
        vars: &[VarId],
        produce: impl FnOnce(&mut Self, &Dest) -> Result<Vec<Stmt>, LowerError>,
        consume: impl FnOnce(&mut Self) -> Result<Vec<Stmt>, LowerError>,
    ) -> Result<Vec<Stmt>, LowerError> {
        let width = vars
            .iter()
            .map(|&v| self.size(v))
            .reduce(|a, b| a * b)
            .expect("a workspace has variables");
        // The list has a spare slot: each update writes the list's next slot before
        // it knows whether its coordinate is new (see `Dest::Workspace`).
        let marks = crate::ir::touched_marks_len(width.clone());
        for (suffix, len, ty) in [
            ("vals", width.clone(), LocalType::Value),
            ("seen", width.clone(), LocalType::Flag),
            ("list", width.clone() + Expr::Int(1), LocalType::Index),
            ("marks", marks, LocalType::Index),
        ] {
            self.local(&format!("{name}\u{1}_{suffix}"), len, ty);
        }
        let count = format!("{name}\u{1}_count");
        let list = self.scratch(&format!("{name}\u{1}_list"), LocalType::Index);
        let mut stmts = vec![Stmt::Decl(
            self.named(count.clone(), Type::Index),
            Expr::Int(0),
        )];
        let into = Dest::Workspace {
            name: name.to_string(),
            vars: vars.to_vec(),
            depth: self.parallel.len(),
        };
        stmts.extend(produce(self, &into)?);
        stmts.push(Stmt::OrderTouched {
            list,
            len: self.iv(count.clone()),
            flags: self.scratch(&format!("{name}\u{1}_seen"), LocalType::Flag),
            marks: self.scratch(&format!("{name}\u{1}_marks"), LocalType::Index),
            width,
        });
        let at = format!("{name}\u{1}_p");
        let touched = Expr::load(ArrayRef::Scratch(list), self.iv(at.clone()));
        let (mut body, linear) = match vars {
            [v] => (
                vec![Stmt::Decl(self.named(self.name(*v), Type::Index), touched)],
                self.var(*v),
            ),
            _ => {
                // Peel the variables off the linearised coordinate, innermost first.
                let linear = format!("{name}\u{1}_at");
                let mut coords = Vec::new();
                let mut stride = Expr::Int(1);
                for (k, &v) in vars.iter().enumerate().rev() {
                    let above = Expr::bin(BinOp::Div, self.iv(linear.clone()), stride.clone());
                    let coord = if k == 0 {
                        above
                    } else {
                        Expr::bin(BinOp::Rem, above, self.size(v))
                    };
                    coords.push(Stmt::Decl(self.named(self.name(v), Type::Index), coord));
                    stride = stride * self.size(v);
                }
                let mut body = vec![Stmt::Decl(self.named(linear.clone(), Type::Index), touched)];
                body.extend(coords.into_iter().rev());
                (body, self.iv(linear))
            }
        };
        body.extend(consume(self)?);
        for (suffix, zero, ty) in [
            ("vals", Expr::Float(0.0), LocalType::Value),
            ("seen", Expr::Int(0), LocalType::Flag),
        ] {
            body.push(Stmt::Store(Store {
                array: ArrayRef::Scratch(self.scratch(&format!("{name}\u{1}_{suffix}"), ty)),
                index: linear.clone(),
                value: zero,
                accumulate: false,
            }));
        }
        stmts.push(Stmt::For(Loop {
            var: self.named(at, Type::Index),
            start: Expr::Int(0),
            end: self.iv(count),
            body,
            kind: LoopKind::Serial,
        }));
        Ok(stmts)
    }
}
