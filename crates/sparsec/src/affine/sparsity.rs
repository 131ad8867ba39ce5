//! Sparsity equations and their solution (the paper's §3): every statement's set of
//! iterations that may compute a non-zero value, from the non-zero cells of the inputs.
//!
//! The equations follow the value a statement computes: a zero constant gives nothing, a
//! non-zero one the whole domain, a read the image of its source's set through the
//! dataflow relation, `a + b` (and `a - b`) the union, `a * b` the intersection, `a / b`
//! the set of `a`. Statements that read each other form strongly connected components,
//! solved in dependence order: within one, the system `X = C ∪ X.R` is solved by Arden's
//! lemma, `X = C.R*`, with isl's transitive closure. Where a product multiplies two
//! unknowns of the same component (LU's fill-in), Arden does not apply and the product
//! is relaxed to either factor (both bounds are solved and intersected, then sharpened by
//! applying the exact equations again). Each result says whether it is exact.

use std::collections::BTreeMap;

use super::dataflow::{Dataflow, Source};
use super::model::Model;
use super::parse::{Access, BinaryOp, Value};
use super::{isl_error, AffineError};
use crate::polyhedral::isl::{Isl, UnionMap, UnionSet};

/// The most pieces a set is coalesced at (see [`UnionSet::coalesce_below`]).
pub(super) const COALESCE_LIMIT: usize = 500;

/// The most steps a component is iterated to its fixed point.
const MAX_STEPS: usize = 100_000;

/// The regions of interest of a program on given inputs.
#[derive(Debug)]
pub struct Specialisation {
    /// Per statement: the iterations that may compute a non-zero value.
    pub statements: Vec<UnionSet>,
    /// Per statement: the iterations the specialised program runs. Those that may
    /// compute a non-zero, and those that overwrite an element that may hold one (with
    /// the zero they compute): every iteration left out writes a zero over a zero, so
    /// skipping it leaves every element as the dense program leaves it.
    pub executed: Vec<UnionSet>,
    /// Per array some statement writes: the cells that may be non-zero at the end.
    pub outputs: Vec<(String, UnionSet)>,
    /// Whether every set is exact under the paper's rules (no approximate closure, no
    /// relaxed product); `reasons` says what was approximated where not.
    pub exact: bool,
    pub reasons: Vec<String>,
    /// The inputs whose cells may meet each other in a product (`A[i][k] * A[k][j]`,
    /// or LU's fill-in), each with the first statement where they do. Where there are
    /// none, every set is a union over the inputs' cells taken one per input: the
    /// solution splits box by box (see [`super::solution_map`]).
    pub self_products: Vec<(String, String)>,
}

/// Per input, how many of its cells one product may combine (1, or 2 for several).
type Degrees = BTreeMap<String, usize>;

/// A set expression of the equations, over one statement's iterations.
#[derive(Clone, Debug)]
enum SetExpr {
    Empty,
    /// The statement's whole domain (a non-zero constant).
    Domain,
    /// The cells of input `name` read here.
    Input(String, UnionSet),
    /// The image of statement `n`'s set through a relation into this statement.
    Pull(usize, UnionMap),
    Union(Vec<SetExpr>),
    Inter(Vec<SetExpr>),
}

impl SetExpr {
    /// How often each input takes part in one product here, given each statement's
    /// degrees (capped at 2: several).
    fn degrees(&self, statements: &[Degrees]) -> Degrees {
        match self {
            SetExpr::Empty | SetExpr::Domain => Degrees::new(),
            SetExpr::Input(name, _) => Degrees::from([(name.clone(), 1)]),
            SetExpr::Pull(n, _) => statements[*n].clone(),
            SetExpr::Union(v) => {
                let mut out = Degrees::new();
                for d in v.iter().map(|e| e.degrees(statements)) {
                    for (name, k) in d {
                        let at = out.entry(name).or_default();
                        *at = (*at).max(k);
                    }
                }
                out
            }
            SetExpr::Inter(v) => {
                let mut out = Degrees::new();
                for d in v.iter().map(|e| e.degrees(statements)) {
                    for (name, k) in d {
                        let at = out.entry(name).or_default();
                        *at = (*at + k).min(2);
                    }
                }
                out
            }
        }
    }

    fn unknowns(&self, out: &mut Vec<usize>) {
        match self {
            SetExpr::Pull(n, _) => out.push(*n),
            SetExpr::Union(v) | SetExpr::Inter(v) => v.iter().for_each(|e| e.unknowns(out)),
            _ => {}
        }
    }
}

struct Builder<'a> {
    dataflow: &'a Dataflow,
    patterns: &'a BTreeMap<String, UnionSet>,
    statement: usize,
    next_read: usize,
}

impl Builder<'_> {
    fn expr(&mut self, value: &Value) -> Result<SetExpr, String> {
        Ok(match value {
            Value::Number(x) if *x == 0.0 => SetExpr::Empty,
            Value::Number(_) => SetExpr::Domain,
            Value::Read(access) => {
                let flows = &self.dataflow.reads[self.statement][self.next_read];
                self.next_read += 1;
                let mut pieces = Vec::new();
                for flow in flows {
                    pieces.push(match flow.source {
                        Source::Statement(w) => SetExpr::Pull(w, flow.relation.clone()),
                        Source::Input => {
                            let pattern = &self.patterns[&access.array];
                            SetExpr::Input(access.array.clone(), pattern.apply(&flow.relation)?)
                        }
                    });
                }
                SetExpr::Union(pieces)
            }
            Value::Neg(v) => self.expr(v)?,
            Value::Binary(op, a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                match op {
                    BinaryOp::Add | BinaryOp::Sub => SetExpr::Union(vec![a, b]),
                    BinaryOp::Mul => SetExpr::Inter(vec![a, b]),
                    // A zero divisor is outside the rules (the dense program would divide
                    // by zero): the quotient is non-zero where the dividend is.
                    BinaryOp::Div => a,
                }
            }
            Value::Call(name, args) => {
                let mut args = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                match name.as_str() {
                    // f(0) = 0: the pattern of the argument.
                    "sqrt" | "fabs" | "sin" | "tan" | "floor" | "ceil" => args.remove(0),
                    // max and min of two values are non-zero only where one is.
                    "fmax" | "fmin" => SetExpr::Union(args),
                    // exp(0), cos(0), log(0) and pow(0, 0) are not zero.
                    _ => SetExpr::Domain,
                }
            }
        })
    }
}

/// The increment `e` of an accumulation `x = x + e`, `x = e + x` or `x = x - e` (`x` the
/// element written), and the number of reads before it.
fn increment<'v>(value: &'v Value, target: &Access) -> Option<(&'v Value, usize)> {
    let is_target = |v: &Value| matches!(v, Value::Read(a) if a.array == target.array && a.index == target.index);
    match value {
        Value::Binary(BinaryOp::Add | BinaryOp::Sub, x, e) if is_target(x) => Some((e, 1)),
        Value::Binary(BinaryOp::Add, e, x) if is_target(x) => Some((e, 0)),
        _ => None,
    }
}

/// Linear form of an equation's right side: a known set and unknowns' images.
struct Linear {
    known: UnionSet,
    terms: Vec<(usize, UnionMap)>,
}

/// Which factor a product of two unknowns keeps when relaxed.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    First,
    Last,
}

struct Solver<'a> {
    isl: &'a Isl,
    /// Whether every parameter has a value (every set is finite).
    fixed: bool,
    domains: Vec<UnionSet>,
    solved: Vec<Option<UnionSet>>,
    component: Vec<usize>,
}

impl Solver<'_> {
    fn linear(
        &self,
        s: usize,
        e: &SetExpr,
        keep: Keep,
        relaxed: &mut bool,
    ) -> Result<Linear, String> {
        let empty = || self.isl.empty_union_set();
        Ok(match e {
            SetExpr::Empty => Linear {
                known: empty(),
                terms: Vec::new(),
            },
            SetExpr::Domain => Linear {
                known: self.domains[s].clone(),
                terms: Vec::new(),
            },
            SetExpr::Input(_, k) => Linear {
                known: k.clone(),
                terms: Vec::new(),
            },
            SetExpr::Pull(w, m) => match &self.solved[*w] {
                Some(set) => Linear {
                    known: set.apply(m)?,
                    terms: Vec::new(),
                },
                None => {
                    debug_assert!(self.component.contains(w));
                    Linear {
                        known: empty(),
                        terms: vec![(*w, m.clone())],
                    }
                }
            },
            SetExpr::Union(children) => {
                let mut out = Linear {
                    known: empty(),
                    terms: Vec::new(),
                };
                for c in children {
                    let l = self.linear(s, c, keep, relaxed)?;
                    out.known = out.known.union(&l.known)?;
                    out.terms.extend(l.terms);
                }
                out
            }
            SetExpr::Inter(children) => {
                let lins = children
                    .iter()
                    .map(|c| self.linear(s, c, keep, relaxed))
                    .collect::<Result<Vec<_>, _>>()?;
                let with_terms: Vec<usize> = (0..lins.len())
                    .filter(|&i| !lins[i].terms.is_empty())
                    .collect();
                // `(K1 ∪ L1) ∩ (K2 ∪ L2) ⊆ K1 ∪ L1`: keeping one factor over-approximates.
                let kept = match (with_terms.len(), keep) {
                    (0, _) => None,
                    (1, _) => Some(with_terms[0]),
                    (_, Keep::First) => {
                        *relaxed = true;
                        Some(with_terms[0])
                    }
                    (_, Keep::Last) => {
                        *relaxed = true;
                        with_terms.last().copied()
                    }
                };
                let mut knowns: Option<UnionSet> = None;
                for l in &lins {
                    if l.terms.is_empty() {
                        knowns = Some(match knowns {
                            None => l.known.clone(),
                            Some(k) => k.intersect_pieces(&l.known)?,
                        });
                    }
                }
                match kept {
                    None => Linear {
                        known: knowns.unwrap_or_else(empty),
                        terms: Vec::new(),
                    },
                    Some(i) => {
                        let l = &lins[i];
                        match knowns {
                            None => Linear {
                                known: l.known.clone(),
                                terms: l.terms.clone(),
                            },
                            Some(k) => Linear {
                                known: l.known.intersect_pieces(&k)?,
                                terms: l
                                    .terms
                                    .iter()
                                    .map(|(w, m)| Ok((*w, m.restrict_range(&k)?)))
                                    .collect::<Result<_, String>>()?,
                            },
                        }
                    }
                }
            }
        })
    }

    /// The exact right side of an equation, given every unknown's current set.
    fn evaluate(
        &self,
        s: usize,
        e: &SetExpr,
        current: &BTreeMap<usize, UnionSet>,
    ) -> Result<UnionSet, String> {
        Ok(match e {
            SetExpr::Empty => self.isl.empty_union_set(),
            SetExpr::Domain => self.domains[s].clone(),
            SetExpr::Input(_, k) => k.clone(),
            SetExpr::Pull(w, m) => match &self.solved[*w] {
                Some(set) => set.apply(m)?,
                None => current[w].apply(m)?,
            },
            SetExpr::Union(children) => {
                let mut out = self.isl.empty_union_set();
                for c in children {
                    out = out.union(&self.evaluate(s, c, current)?)?;
                }
                out
            }
            SetExpr::Inter(children) => {
                let mut out: Option<UnionSet> = None;
                for c in children {
                    let v = self.evaluate(s, c, current)?;
                    out = Some(match out {
                        None => v,
                        Some(o) => o.intersect_pieces(&v)?,
                    });
                }
                out.unwrap_or_else(|| self.isl.empty_union_set())
            }
        })
    }

    /// The least `X ⊇ known` with `X.step ⊆ X`, by iterating from `known` (only the
    /// newly reached points are stepped from); past [`MAX_STEPS`] steps, the
    /// component's domains (an over-approximation).
    fn iterate(
        &self,
        known: &UnionSet,
        step: &UnionMap,
        equations: &[(usize, SetExpr)],
    ) -> Result<(UnionSet, bool), String> {
        let mut reached = known.clone();
        let mut frontier = known.clone();
        for _ in 0..MAX_STEPS {
            let next = frontier.apply(step)?.subtract(&reached)?;
            if next.is_empty()? {
                return Ok((reached, true));
            }
            reached = reached.union(&next)?.coalesce_below(COALESCE_LIMIT)?;
            frontier = next.coalesce_below(COALESCE_LIMIT)?;
        }
        let mut all = self.isl.empty_union_set();
        for (s, _) in equations {
            all = all.union(&self.domains[*s])?;
        }
        Ok((all, false))
    }

    /// Solve one component with products relaxed as `keep` says: `X = C.R*`. Returns
    /// the sets and whether the closure was exact.
    fn arden(
        &self,
        equations: &[(usize, SetExpr)],
        keep: Keep,
        relaxed: &mut bool,
    ) -> Result<(BTreeMap<usize, UnionSet>, bool), String> {
        let mut known = self.isl.empty_union_set();
        let mut step = self.isl.empty_union_map();
        for (s, e) in equations {
            let l = self.linear(*s, e, keep, relaxed)?;
            known = known.union(&l.known.intersect(&self.domains[*s])?)?;
            for (_, m) in l.terms {
                step = step.union(&m.restrict_range(&self.domains[*s])?)?;
            }
        }
        // isl's closure heuristics are exact and quick on chains (a statement
        // accumulating along one loop) but can run for hours on stencils of several
        // dimensions, and no operation quota stops them there. With the parameters
        // fixed, every set is finite: other components are solved by iterating the
        // equations to their least fixed point, which is exact.
        let chain = equations.len() == 1 && step.wrap()?.pieces()? <= 1;
        let (reached, exact) = if step.is_empty()? {
            (known, true)
        } else if self.fixed && !chain {
            self.iterate(&known, &step, equations)?
        } else {
            let (closure, exact) = step.transitive_closure()?;
            (
                known
                    .union(&known.apply(&closure)?)?
                    .coalesce_below(COALESCE_LIMIT)?,
                exact,
            )
        };
        let mut out = BTreeMap::new();
        for (s, _) in equations {
            out.insert(
                *s,
                reached
                    .intersect(&self.domains[*s])?
                    .coalesce_below(COALESCE_LIMIT)?,
            );
        }
        Ok((out, exact))
    }
}

/// Solve the sparsity equations of `model` for inputs whose non-zero cells are
/// `patterns`, for every value of the parameters or for those `fixed` gives (a set over
/// the parameters alone, e.g. `[N] -> { : N = 100 }`)
/// (per array name, a set in the array's space; an input without one is
/// taken as dense).
pub fn solve(
    isl: &Isl,
    model: &Model,
    dataflow: &Dataflow,
    patterns: &BTreeMap<String, UnionSet>,
    fixed: Option<&str>,
) -> Result<Specialisation, AffineError> {
    let err = isl_error("solving the sparsity equations");
    let mut patterns = patterns.clone();
    for array in &model.program.arrays {
        if !patterns.contains_key(&array.name) {
            let dense = isl.union_set(&model.extents_text(array)).map_err(&err)?;
            patterns.insert(array.name.clone(), dense);
        }
    }
    let n = model.statements.len();
    let in_context = |set: UnionSet| match fixed {
        Some(context) => set.with_params(context),
        None => Ok(set),
    };
    let domains = (0..n)
        .map(|s| {
            isl.union_set(&model.domain_text(s, None))
                .and_then(in_context)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(&err)?;
    for pattern in patterns.values_mut() {
        *pattern = in_context(pattern.clone()).map_err(&err)?;
    }
    let mut equations = Vec::with_capacity(n);
    for (s, st) in model.statements.iter().enumerate() {
        let mut builder = Builder {
            dataflow,
            patterns: &patterns,
            statement: s,
            next_read: 0,
        };
        equations.push(builder.expr(&st.value).map_err(&err)?);
    }
    // Accumulations `x = x + e` leave `x` as it is where `e` is zero: they run only where
    // `e` may not be, whatever `x` holds (the paper's "carry" iterations are skipped).
    let mut increments = Vec::with_capacity(n);
    for (s, st) in model.statements.iter().enumerate() {
        increments.push(match increment(&st.value, &st.target) {
            Some((e, first_read)) => {
                let mut builder = Builder {
                    dataflow,
                    patterns: &patterns,
                    statement: s,
                    next_read: first_read,
                };
                Some(builder.expr(e).map_err(&err)?)
            }
            None => None,
        });
    }
    let self_products = self_products(model, &equations, &increments);
    let mut solver = Solver {
        isl,
        fixed: fixed.is_some(),
        domains,
        solved: vec![None; n],
        component: Vec::new(),
    };
    let mut reasons = Vec::new();
    let name_list = |c: &[usize]| {
        c.iter()
            .map(|&s| model.statements[s].name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for component in components(&equations) {
        solver.component = component.clone();
        let eqs: Vec<(usize, SetExpr)> = component
            .iter()
            .map(|&s| (s, equations[s].clone()))
            .collect();
        let mut relaxed = false;
        let (mut sets, mut exact) = solver
            .arden(&eqs, Keep::First, &mut relaxed)
            .map_err(&err)?;
        if relaxed {
            let (other, other_exact) =
                solver.arden(&eqs, Keep::Last, &mut relaxed).map_err(&err)?;
            exact &= other_exact;
            for (s, set) in &mut sets {
                *set = set.intersect(&other[s]).map_err(&err)?;
            }
            // Every bound above the least solution stays above it under the equations:
            // applying them again can only sharpen the bound.
            for _ in 0..2 {
                let mut next = BTreeMap::new();
                for (s, e) in &eqs {
                    let v = solver
                        .evaluate(*s, e, &sets)
                        .and_then(|v| v.intersect(&sets[s]))
                        .and_then(|v| v.coalesce_below(COALESCE_LIMIT))
                        .map_err(&err)?;
                    next.insert(*s, v);
                }
                sets = next;
            }
            reasons.push(format!(
                "a product of two values computed by {{{}}} was relaxed (the paper's \
                 generalised Arden's lemma)",
                name_list(&component)
            ));
        }
        if !exact {
            reasons.push(format!(
                "isl's transitive closure over {{{}}} is an over-approximation",
                name_list(&component)
            ));
        }
        for (s, set) in sets {
            solver.solved[s] = Some(set);
        }
    }
    let mut increment_sets = Vec::with_capacity(n);
    for (s, e) in increments.iter().enumerate() {
        increment_sets.push(match e {
            Some(e) => Some(
                solver
                    .evaluate(s, e, &BTreeMap::new())
                    .and_then(|v| v.intersect(&solver.domains[s]))
                    .map_err(&err)?,
            ),
            None => None,
        });
    }
    let statements: Vec<UnionSet> = solver
        .solved
        .into_iter()
        .map(|s| s.expect("every component is solved"))
        .collect();
    let mut outputs = Vec::new();
    for (array, flows) in &dataflow.final_values {
        let set = super::dataflow::image(isl, flows, &|source| match source {
            Source::Statement(w) => Some(statements[w].clone()),
            Source::Input => Some(patterns[array].clone()),
        })
        .and_then(|s| s.coalesce_below(COALESCE_LIMIT))
        .map_err(&err)?;
        outputs.push((array.clone(), set));
    }
    let mut executed = Vec::new();
    for (s, flows) in dataflow.overwrites.iter().enumerate() {
        if let Some(set) = increment_sets[s].take() {
            executed.push(set.coalesce_below(COALESCE_LIMIT).map_err(&err)?);
            continue;
        }
        let target = &model.statements[s].target.array;
        let replaced = super::dataflow::image(isl, flows, &|source| match source {
            Source::Statement(w) => Some(statements[w].clone()),
            Source::Input => Some(patterns[target].clone()),
        });
        let set = replaced
            .and_then(|r| r.union(&statements[s]))
            .and_then(|r| r.coalesce_below(COALESCE_LIMIT))
            .map_err(&err)?;
        executed.push(set);
    }
    Ok(Specialisation {
        statements,
        executed,
        outputs,
        exact: reasons.is_empty(),
        reasons,
        self_products,
    })
}

/// The inputs that meet themselves in some product, with the first statement where they
/// do: the degrees of every equation, iterated to their fixed point (they only grow, and
/// are capped).
fn self_products(
    model: &Model,
    equations: &[SetExpr],
    increments: &[Option<SetExpr>],
) -> Vec<(String, String)> {
    let mut degrees = vec![Degrees::new(); equations.len()];
    loop {
        let mut changed = false;
        for (s, e) in equations.iter().enumerate() {
            let d = e.degrees(&degrees);
            if d != degrees[s] {
                degrees[s] = d;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for (s, d) in degrees.iter().enumerate() {
        let own = increments[s].as_ref().map(|e| e.degrees(&degrees));
        for (name, k) in d.iter().chain(own.iter().flatten()) {
            if *k > 1 && !out.iter().any(|(n, _)| n == name) {
                out.push((name.clone(), model.statements[s].name.clone()));
            }
        }
    }
    out
}

/// The strongly connected components of the statements' dependence graph, each after
/// every component it reads from (Tarjan's algorithm emits them in that order).
fn components(equations: &[SetExpr]) -> Vec<Vec<usize>> {
    let n = equations.len();
    let edges: Vec<Vec<usize>> = equations
        .iter()
        .map(|e| {
            let mut out = Vec::new();
            e.unknowns(&mut out);
            out.sort();
            out.dedup();
            out
        })
        .collect();
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, edges: &[Vec<usize>], st: &mut State) {
        st.index[v] = Some(st.next);
        st.low[v] = st.next;
        st.next += 1;
        st.stack.push(v);
        st.on_stack[v] = true;
        for &w in &edges[v] {
            match st.index[w] {
                None => {
                    visit(w, edges, st);
                    st.low[v] = st.low[v].min(st.low[w]);
                }
                Some(iw) if st.on_stack[w] => st.low[v] = st.low[v].min(iw),
                _ => {}
            }
        }
        if Some(st.low[v]) == st.index[v] {
            let mut component = Vec::new();
            while let Some(w) = st.stack.pop() {
                st.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort();
            st.out.push(component);
        }
    }
    let mut st = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if st.index[v].is_none() {
            visit(v, &edges, &mut st);
        }
    }
    st.out
}
