//! `precompute`: computing a product of accesses into a dense workspace.

use super::super::lexpr::{self, LExpr};
use super::super::Concrete;
use super::ScheduleError;
use crate::notation::cin::VarId;

impl Concrete {
    pub(super) fn precompute_into(
        &self,
        text: &str,
        expr: &str,
        vars: &[String],
        producer_vars: &[String],
        workspace: Option<&str>,
    ) -> Result<Concrete, ScheduleError> {
        let fail = |pre: &str, why: String| Err(ScheduleError::new(text, pre, why));
        // The producer shares the consumer's loops, so TACO's fresh producer variables
        // (`precompute(e,i,iw)`) only name those loops; a name that already means another
        // variable would make the schedule say something sparsec does not do.
        let distinct =
            (0..producer_vars.len()).all(|n| !producer_vars[..n].contains(&producer_vars[n]));
        let renamed = distinct
            && vars.len() == producer_vars.len()
            && vars
                .iter()
                .zip(producer_vars)
                .all(|(v, p)| v == p || self.var_named(p).is_none());
        if !renamed {
            return fail(
                "producer and consumer iterate the same variables",
                "the producer variables are the consumer's or fresh names for them, one each \
                 (a producer with variables of its own is not supported)"
                    .into(),
            );
        }
        let fresh;
        let workspace = match workspace {
            Some(w) => w,
            None => {
                fresh = self.fresh_workspace_name();
                fresh.as_str()
            }
        };
        let source = format!("{workspace}({}) = {expr}", vars.join(","));
        let assignment = match crate::notation::parse(&source) {
            Ok(a) => a,
            Err(e) => return fail("the expression is index notation", e.to_string()),
        };
        let mut wanted = Vec::new();
        if !product_factors(&assignment.rhs, &mut wanted) {
            return fail(
                "the expression is a product of accesses",
                format!("`{expr}` contains other operations"),
            );
        }
        let stmt = &self.statement;
        let clash = stmt.tensors.iter().any(|t| t.name == workspace)
            || self.var_named(workspace).is_some()
            || !workspace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if clash {
            return fail(
                "the workspace has a fresh name",
                format!("`{workspace}` names a tensor or variable, or is not an identifier"),
            );
        }
        let mut w_vars = Vec::new();
        for n in vars {
            match stmt.vars.iter().position(|v| v.name == *n) {
                Some(v) => w_vars.push(v),
                None => {
                    return fail(
                        "the workspace's variables are the statement's",
                        format!("`{n}` is not an index variable of the statement"),
                    )
                }
            }
        }
        let mut matched = Vec::new();
        let Some(body_rhs) = self.extract_product(&self.rhs, &wanted, &mut matched, false) else {
            return fail(
                "the expression is a product in the statement",
                format!(
                    "`{expr}` is not a set of factors of one product of the right-hand side \
                     (outside reductions under `+`, `-` or a denominator)"
                ),
            );
        };
        let vars_of = |occs: &[usize]| -> std::collections::BTreeSet<VarId> {
            occs.iter()
                .flat_map(|&o| self.accesses[o].1.iter().copied())
                .collect()
        };
        let inside = vars_of(&matched);
        let mut all = Vec::new();
        self.rhs.occurrences(&mut all);
        let others: Vec<usize> = all.into_iter().filter(|o| !matched.contains(o)).collect();
        let mut outside = vars_of(&others);
        outside.extend(stmt.lhs.iter().copied());
        // A workspace precomputed around the expression is indexed by its own variables:
        // they are bound where the expression is evaluated, as the left-hand side's are.
        let mut workspaces = Vec::new();
        lexpr::precomputes(&self.rhs, &mut workspaces);
        for w in workspaces {
            let mut occurrences = Vec::new();
            w.body.occurrences(&mut occurrences);
            if occurrences.iter().any(|o| matched.contains(o)) {
                outside.extend(w.vars.iter().copied());
            }
        }
        if let Some(&v) = w_vars.iter().find(|v| !inside.contains(v)) {
            return fail(
                "the workspace's variables index the expression",
                format!("`{}` does not occur in `{expr}`", stmt.vars[v].name),
            );
        }
        let private: Vec<VarId> = inside
            .iter()
            .copied()
            .filter(|v| !outside.contains(v) && !w_vars.contains(v))
            .collect();
        if private.is_empty() {
            return fail(
                "the expression reduces over a variable only it uses",
                format!("every variable of `{expr}` is also used outside it, so nothing is saved"),
            );
        }
        let mut next = self.clone();
        next.rhs = body_rhs(&lexpr::Precompute {
            workspace: workspace.to_string(),
            vars: w_vars.clone(),
            private: private.clone(),
            body: LExpr::Zero,
        });
        // The producer runs where the first private loop starts: every other variable of
        // the expression must be bound outside it.
        for &u in inside
            .iter()
            .filter(|u| !private.contains(u) && !w_vars.contains(u))
        {
            next.sum_edges.extend(private.iter().map(|&p| (u, p)));
        }
        next.with_loops(text, next.loop_sequence())
    }

    /// TACO's default workspace name, numbered past every tensor, variable and workspace
    /// of the statement so that it cannot collide with one.
    fn fresh_workspace_name(&self) -> String {
        let mut taken: Vec<String> = self
            .statement
            .tensors
            .iter()
            .map(|t| t.name.clone())
            .collect();
        taken.extend(self.vars.iter().map(|v| v.name.clone()));
        let mut workspaces = Vec::new();
        lexpr::precomputes(&self.rhs, &mut workspaces);
        taken.extend(workspaces.iter().map(|w| w.workspace.clone()));
        std::iter::once("workspace".to_string())
            .chain((1..).map(|n| format!("workspace{n}")))
            .find(|name| !taken.contains(name))
            .expect("an unbounded sequence of names has one not taken")
    }

    /// Find the factors `wanted` in one product of `expr`; return a function that builds
    /// the expression with them replaced by a precomputed node (whose body it fills in).
    #[allow(clippy::type_complexity)]
    fn extract_product(
        &self,
        expr: &LExpr,
        wanted: &[(String, Vec<String>)],
        matched: &mut Vec<usize>,
        under_sum: bool,
    ) -> Option<Box<dyn Fn(&lexpr::Precompute) -> LExpr>> {
        let names = |o: usize| {
            let (t, idx) = &self.accesses[o];
            (
                self.statement.tensors[*t].name.clone(),
                idx.iter()
                    .map(|&v| self.statement.vars[v].name.clone())
                    .collect::<Vec<_>>(),
            )
        };
        match expr {
            LExpr::Binary(crate::notation::ast::Op::Mul, ..) | LExpr::Access(_) if !under_sum => {
                let mut factors = Vec::new();
                flatten_product(expr, &mut factors);
                let mut used = vec![false; factors.len()];
                let mut picked = Vec::new();
                for w in wanted {
                    let hit = factors.iter().enumerate().position(|(n, f)| {
                        !used[n] && matches!(f, LExpr::Access(o) if names(*o) == *w)
                    });
                    if let Some(hit) = hit {
                        used[hit] = true;
                        picked.push(hit);
                    }
                }
                if picked.len() == wanted.len() {
                    picked.sort_unstable();
                    let body = product(picked.iter().map(|&n| factors[n].clone()));
                    let rest: Vec<LExpr> = factors
                        .iter()
                        .enumerate()
                        .filter(|(n, _)| !used[*n])
                        .map(|(_, f)| f.clone())
                        .collect();
                    matched.extend(picked.iter().filter_map(|&n| match factors[n] {
                        LExpr::Access(o) => Some(o),
                        _ => None,
                    }));
                    return Some(Box::new(move |p: &lexpr::Precompute| {
                        let node = LExpr::Precomputed(Box::new(lexpr::Precompute {
                            body: body.clone(),
                            ..p.clone()
                        }));
                        product(rest.iter().cloned().chain([node]))
                    }));
                }
                // Not all in this product: look inside its other factors.
                for (n, f) in factors.iter().enumerate() {
                    if matches!(f, LExpr::Access(_)) {
                        continue;
                    }
                    if let Some(inner) = self.extract_product(f, wanted, matched, under_sum) {
                        return Some(Box::new(move |p| {
                            product(factors.iter().enumerate().map(|(k, g)| {
                                if k == n {
                                    inner(p)
                                } else {
                                    g.clone()
                                }
                            }))
                        }));
                    }
                }
                None
            }
            LExpr::Neg(a) => {
                let inner = self.extract_product(a, wanted, matched, under_sum)?;
                Some(Box::new(move |p| LExpr::Neg(Box::new(inner(p)))))
            }
            LExpr::Sum(v, hoisted, a) => {
                let inner = self.extract_product(a, wanted, matched, true)?;
                let (v, hoisted) = (*v, hoisted.clone());
                Some(Box::new(move |p| {
                    LExpr::Sum(v, hoisted.clone(), Box::new(inner(p)))
                }))
            }
            LExpr::Precomputed(outer) => {
                let inner = self.extract_product(&outer.body, wanted, matched, under_sum)?;
                let outer = (**outer).clone();
                Some(Box::new(move |p| {
                    LExpr::Precomputed(Box::new(lexpr::Precompute {
                        body: inner(p),
                        ..outer.clone()
                    }))
                }))
            }
            LExpr::Binary(op, a, b) => {
                let op = *op;
                if let Some(left) = self.extract_product(a, wanted, matched, under_sum) {
                    let b = (**b).clone();
                    return Some(Box::new(move |p| {
                        LExpr::Binary(op, Box::new(left(p)), Box::new(b.clone()))
                    }));
                }
                let right = self.extract_product(b, wanted, matched, under_sum)?;
                let a = (**a).clone();
                Some(Box::new(move |p| {
                    LExpr::Binary(op, Box::new(a.clone()), Box::new(right(p)))
                }))
            }
            LExpr::Math(f, args) => {
                let (f, args) = (*f, args.clone());
                for (k, a) in args.iter().enumerate() {
                    if let Some(inner) = self.extract_product(a, wanted, matched, under_sum) {
                        let args = args.clone();
                        return Some(Box::new(move |p| {
                            let mut args = args.clone();
                            args[k] = inner(p);
                            LExpr::Math(f, args)
                        }));
                    }
                }
                None
            }
            _ => None,
        }
    }
}

/// The accesses of a product of accesses; false when it has other operations.
fn product_factors(e: &crate::notation::ast::Expr, out: &mut Vec<(String, Vec<String>)>) -> bool {
    use crate::notation::ast::{ExprKind, Op};
    match &e.kind {
        ExprKind::Access(a) => {
            out.push((a.tensor.clone(), a.indices.clone()));
            true
        }
        ExprKind::Binary(Op::Mul, a, b) => product_factors(a, out) && product_factors(b, out),
        _ => false,
    }
}

fn flatten_product(e: &LExpr, out: &mut Vec<LExpr>) {
    match e {
        LExpr::Binary(crate::notation::ast::Op::Mul, a, b) => {
            flatten_product(a, out);
            flatten_product(b, out);
        }
        other => out.push(other.clone()),
    }
}

fn product(factors: impl IntoIterator<Item = LExpr>) -> LExpr {
    factors
        .into_iter()
        .reduce(|a, b| LExpr::Binary(crate::notation::ast::Op::Mul, Box::new(a), Box::new(b)))
        .unwrap_or(LExpr::Literal(1.0))
}
