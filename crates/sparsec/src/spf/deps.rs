//! Dependences, from the statements' access relations, decided by isl with the index
//! arrays abstracted as unknown functions ([`super::presburger`]): exact without index
//! arrays, conservative through them, and every refusal says which.
//!
//! - [`check_parallel`]: the outer loop may run in parallel when no two instances in
//!   different iterations of it touch one element, one of them writing, except where both
//!   add into it with `+=` (MTTKRP and TTM on COO: entries of one row in any iteration),
//!   which the iterations then do atomically.
//! - [`check_wavefront`]: the level-set executor runs rows in an order its inspector
//!   computes; it admits reads of rows that the statement's own constraints prove earlier
//!   (`j < i` in forward substitution), the flow dependences its inspector resolves at run
//!   time, where every written space is written at `±row + c` of the outer loop. Anything
//!   else (a read of a later or unknown row, an anti- or output dependence across rows)
//!   is refused, naming the accesses.
//! - [`check_transformation`]: a transformed program keeps every dependence of the
//!   original schedules.

use super::codegen::{classify, collect_accesses};
use super::parse::{Access, BodyExpr, Program, Span, Statement, UfArray};
use super::presburger::{Abstraction, Facts, UfFact};
use super::set::{Affine, Constraint, Map, Relation0, Term};
use super::SpfError;
use crate::polyhedral::isl::Isl;

/// What the analysis needs of a statement in execution coordinates.
pub struct View<'a> {
    pub name: &'a str,
    /// The operator of the statement's `op=` update (`+` for `+=`), `None` for `=`.
    pub update: Option<char>,
    pub dims: &'a [Option<i64>],
    pub constraints: &'a [Constraint],
    pub target: &'a Access,
    pub value: &'a BodyExpr,
}

/// For each written data space, the first index component every write uses (a function
/// `±row + c` of the outer dimension), or the two writes that disagree.
pub fn row_functions(views: &[View]) -> Result<Vec<(String, Affine)>, SpfError> {
    let mut out: Vec<(String, Affine)> = Vec::new();
    for v in views {
        let first = &v.target.index[0];
        let invertible = matches!(first.terms.as_slice(), [(c, Term::Var(0))] if c.abs() == 1);
        if !invertible {
            return Err(SpfError::new(
                format!(
                    "{} writes `{}` at an index whose first component is not `±row + c` of \
                     the outer loop, so rows may write the same element",
                    v.name, v.target.space
                ),
                v.target.span,
            ));
        }
        match out.iter().find(|(s, _)| *s == v.target.space) {
            Some((_, f)) if f != first => {
                return Err(SpfError::new(
                    format!(
                        "{} writes `{}` at a different row than another statement does, so \
                         rows may write the same element",
                        v.name, v.target.space
                    ),
                    v.target.span,
                ))
            }
            Some(_) => {}
            None => out.push((v.target.space.clone(), first.clone())),
        }
    }
    Ok(out)
}

/// The row whose writes element `index` of a space written at `row_fn` (the inverse of
/// `±row + c`).
fn row_of(row_fn: &Affine, index: &Affine) -> Affine {
    let sign = row_fn.coefficient(0);
    index
        .add_scaled(1, &Affine::constant(-row_fn.constant))
        .scale(sign)
}

/// Whether the constraints contain `row - source >= k` for some `k >= 1`.
fn proven_earlier(constraints: &[Constraint], source: &Affine) -> bool {
    let gap = Affine::term(Term::Var(0)).add_scaled(-1, source);
    constraints.iter().any(|c| {
        c.kind == Relation0::NonNegative
            && c.expr
                .add_scaled(-1, &gap)
                .as_constant()
                .is_some_and(|k| k <= -1)
    })
}

/// Check that the outer loop can run by level sets (see the module's description).
pub fn check_wavefront(views: &[View], span: Span) -> Result<(), SpfError> {
    if let Some(v) = views.iter().find(|v| v.dims[0].is_some()) {
        return Err(outer_constant(v, span));
    }
    let rows = row_functions(views)?;
    for v in views {
        let mut reads = Vec::new();
        collect_accesses(v.value, &mut reads);
        for a in reads.into_iter().chain(std::iter::once(v.target)) {
            let Some((_, row_fn)) = rows.iter().find(|(s, _)| *s == a.space) else {
                continue;
            };
            if a.index[0] == *row_fn {
                continue;
            }
            let is_read = !std::ptr::eq(a, v.target);
            if is_read && proven_earlier(v.constraints, &row_of(row_fn, &a.index[0])) {
                continue;
            }
            return Err(SpfError::new(
                format!(
                    "{} accesses `{}` at another row than the one that writes it: a \
                     dependence between rows that the constraints do not order earlier",
                    v.name, a.space
                ),
                a.span,
            ));
        }
    }
    if outer_range(views).is_none() {
        return Err(SpfError::new(
            "wavefront: every statement's outer loop must have the same bounds, made of \
             symbols and constants"
                .into(),
            span,
        ));
    }
    Ok(())
}

fn outer_constant(v: &View, span: Span) -> SpfError {
    SpfError::new(
        format!(
            "the outer schedule dimension of {} is a constant: a parallel or wavefront outer \
             loop needs every statement in it",
            v.name
        ),
        span,
    )
}

/// Check that no two instances in different iterations of the outer loop touch one
/// element of a data space, one of them writing it: then the iterations may run in any
/// order, at once. Decided by isl over the statements in execution coordinates, exactly
/// without index arrays and conservatively through them (the refusal says so). Where the
/// only such touches of a space are additions by `+=` statements (and nothing reads it),
/// the iterations may still run at once, adding atomically: the spaces returned.
pub fn check_parallel(views: &[View], facts: &Facts, span: Span) -> Result<Vec<String>, SpfError> {
    if let Some(v) = views.iter().find(|v| v.dims[0].is_some()) {
        return Err(outer_constant(v, span));
    }
    let isl = Isl::new();
    let fail = |e: String| SpfError::new(format!("checking `parallel;`: {e}"), span);
    let mut atomic = Vec::new();
    for a in views {
        for b in views {
            let depth = a.dims.len();
            let to_b = |v: usize| Affine::term(Term::Var(v + depth));
            let mut base: Vec<Constraint> = a.constraints.to_vec();
            base.extend(b.constraints.iter().map(|c| c.substitute(&to_b)));
            // `a` runs in a later iteration of the outer loop than `b`.
            base.push(Constraint {
                expr: Affine::term(Term::Var(0))
                    .add_scaled(-1, &to_b(0))
                    .add_scaled(1, &Affine::constant(-1)),
                kind: Relation0::NonNegative,
            });
            // A write covers the read of `op=`: both touch the same element.
            for p in touches(a.target, false, a.value) {
                for q in touches(b.target, false, b.value) {
                    if p.access.space != q.access.space || !(p.write || q.write) {
                        continue;
                    }
                    let adds = |t: &Touch, v: &View| t.target && v.update == Some('+');
                    if adds(&p, a) && adds(&q, b) && !read_by_any(views, &p.access.space) {
                        // Collisions, if any, add atomically.
                        if !atomic.contains(&p.access.space) {
                            atomic.push(p.access.space.clone());
                        }
                        continue;
                    }
                    let index_b: Vec<Affine> =
                        q.access.index.iter().map(|e| e.substitute(&to_b)).collect();
                    let mut space = Abstraction::new(2 * depth);
                    let part: Vec<Constraint> = base
                        .iter()
                        .cloned()
                        .chain(equal(&p.access.index, &index_b))
                        .map(|c| space.constraint(&c))
                        .collect();
                    let set = space.to_isl(&isl, &[part], Some(facts)).map_err(fail)?;
                    if set.is_empty().map_err(fail)? {
                        continue;
                    }
                    let kind = |t: &Touch| if t.write { "write" } else { "read" };
                    let caveat = if space.dims() > 2 * depth {
                        " (through index arrays, which the check treats as unknown \
                         functions: it may not occur for every input, but sparsec cannot \
                         prove that it never does)"
                    } else {
                        ""
                    };
                    let hint = if check_wavefront(views, span).is_ok() {
                        ": a flow dependence between rows (try `wavefront;`)"
                    } else {
                        ""
                    };
                    return Err(SpfError::new(
                        format!(
                            "the outer loop cannot run in parallel: {}'s {} of `{}` touches \
                             an element that {}'s {} touches in another iteration{caveat}{hint}",
                            b.name,
                            kind(&q),
                            q.access.space,
                            a.name,
                            kind(&p),
                        ),
                        // The read, where there is one: the access a user would move.
                        if p.write {
                            q.access.span
                        } else {
                            p.access.span
                        },
                    ));
                }
            }
        }
    }
    Ok(atomic)
}

/// True when a statement of `views` reads `space` (other than by its own `op=`).
fn read_by_any(views: &[View], space: &str) -> bool {
    views.iter().any(|v| {
        touches(v.target, false, v.value)
            .iter()
            .any(|t| !t.write && t.access.space == space)
    })
}

/// The rows each read of a statement depends on: rows of written spaces that its
/// constraints prove earlier than the current one.
pub fn flow_sources(
    rows: &[(String, Affine)],
    value: &BodyExpr,
    constraints: &[Constraint],
) -> Vec<Affine> {
    let mut reads = Vec::new();
    collect_accesses(value, &mut reads);
    let mut out: Vec<Affine> = Vec::new();
    for a in reads {
        if let Some((_, row_fn)) = rows.iter().find(|(s, _)| *s == a.space) {
            let source = row_of(row_fn, &a.index[0]);
            if a.index[0] != *row_fn
                && proven_earlier(constraints, &source)
                && !out.contains(&source)
            {
                out.push(source);
            }
        }
    }
    out
}

/// The outer loop's `[first, end)` when every statement has the single lower bound
/// `first` and upper bound `end - 1`, both of symbols and constants.
pub fn outer_range(views: &[View]) -> Option<(Affine, Affine)> {
    let mut range = None;
    for v in views {
        let at = classify(v.constraints, 0);
        let ([lo], [hi]) = (at.lower.as_slice(), at.upper.as_slice()) else {
            return None;
        };
        let (lo, hi) = (lo.unit()?, hi.unit()?);
        let only_symbols = |a: &Affine| a.terms.iter().all(|(_, t)| matches!(t, Term::Sym(_)));
        if at.definition.is_some() || !only_symbols(lo) || !only_symbols(hi) {
            return None;
        }
        let this = (lo.clone(), hi.add_scaled(1, &Affine::constant(1)));
        match &range {
            Some(r) if *r != this => return None,
            _ => range = Some(this),
        }
    }
    range
}

/// The facts every bound index array satisfies: a compressed level's `pos` array is
/// non-decreasing, and every index array holds non-negative values.
pub fn program_facts(prog: &Program) -> Facts {
    Facts(
        prog.ufs
            .iter()
            .map(|u| UfFact {
                name: u.name.clone(),
                monotone: u.array == UfArray::Pos,
                lower: Some(Affine::constant(0)),
            })
            .collect(),
    )
}

/// One access of a statement, for dependences.
struct Touch<'a> {
    access: &'a Access,
    write: bool,
    /// The statement's own target (written, or read by `op=`).
    target: bool,
}

/// The accesses of a statement that writes `target` (and reads it too when it `updates`
/// it with `op=`) and reads what `value` does.
fn touches<'a>(target: &'a Access, updates: bool, value: &'a BodyExpr) -> Vec<Touch<'a>> {
    let mut out = vec![Touch {
        access: target,
        write: true,
        target: true,
    }];
    if updates {
        out.push(Touch {
            access: target,
            write: false,
            target: true,
        });
    }
    let mut reads = Vec::new();
    collect_accesses(value, &mut reads);
    out.extend(reads.into_iter().map(|access| Touch {
        access,
        write: false,
        target: false,
    }));
    out
}

/// `first <lex second` of two equally long tuples of expressions, as a disjunction: one
/// conjunction per position where the first difference may be.
fn lex_before(first: &[Affine], second: &[Affine]) -> Vec<Vec<Constraint>> {
    (0..first.len())
        .map(|p| {
            let mut conj: Vec<Constraint> = (0..p)
                .map(|q| Constraint {
                    expr: second[q].add_scaled(-1, &first[q]),
                    kind: Relation0::Zero,
                })
                .collect();
            conj.push(Constraint {
                expr: second[p]
                    .add_scaled(-1, &first[p])
                    .add_scaled(1, &Affine::constant(-1)),
                kind: Relation0::NonNegative,
            });
            conj
        })
        .collect()
}

/// `first = second`, component by component.
fn equal(first: &[Affine], second: &[Affine]) -> Vec<Constraint> {
    first
        .iter()
        .zip(second)
        .map(|(a, b)| Constraint {
            expr: a.add_scaled(-1, b),
            kind: Relation0::Zero,
        })
        .collect()
}

/// Check that the transformed schedules keep every data dependence of the original ones:
/// for each pair of accesses to one data space, at least one a write, there must be no
/// instances `x` of `a` and `y` of `b` that touch the same element, that the original
/// schedules run `x` first, and that the transformed ones do not. Each such set is decided
/// by isl with the index arrays abstracted ([`super::presburger`]); with no index array
/// involved the answer is exact, otherwise it is conservative and the refusal says so.
/// Updates of one statement's own target by `+=`/`-=` commute (a reduction whose order
/// only changes rounding) and are not ordered.
pub fn check_transformation(
    original: &[Statement],
    transformed: &[Statement],
    facts: &Facts,
    span: Span,
) -> Result<(), SpfError> {
    let isl = Isl::new();
    let fail = |e: String| SpfError::new(format!("checking the transformation: {e}"), span);
    for (ia, a) in original.iter().enumerate() {
        for (ib, b) in original.iter().enumerate() {
            let depth = a.schedule.outputs.len();
            if b.schedule.outputs.len() != depth {
                return Err(SpfError::new(
                    format!(
                        "every schedule must have the same number of outputs before a \
                         transform ({} has {depth}, {} has {})",
                        a.name,
                        b.name,
                        b.schedule.outputs.len()
                    ),
                    b.span,
                ));
            }
            // The pair's tuple: `a`'s domain, `b`'s, then the output variables (tiles) of
            // `a`'s and `b`'s original schedules, then of their transformed ones.
            let (na, nb) = (a.domain.vars.len(), b.domain.vars.len());
            let (ta, tb) = (&transformed[ia].schedule, &transformed[ib].schedule);
            let mut next = na + nb;
            let mut fresh_at = |m: &Map| {
                let at = next;
                next += m.fresh.len();
                at
            };
            let at = [
                fresh_at(&a.schedule),
                fresh_at(&b.schedule),
                fresh_at(ta),
                fresh_at(tb),
            ];
            let vars = next;
            let place = |e: &Affine, n: usize, dom: usize, fresh: usize| {
                e.substitute(&|v| {
                    Affine::term(Term::Var(if v < n { dom + v } else { fresh + v - n }))
                })
            };
            let a_in = |e: &Affine, fresh: usize| place(e, na, 0, fresh);
            let b_in = |e: &Affine, fresh: usize| place(e, nb, na, fresh);
            let sched_a: Vec<Affine> = a.schedule.outputs.iter().map(|e| a_in(e, at[0])).collect();
            let sched_b: Vec<Affine> = b.schedule.outputs.iter().map(|e| b_in(e, at[1])).collect();
            let new_a: Vec<Affine> = ta.outputs.iter().map(|e| a_in(e, at[2])).collect();
            let new_b: Vec<Affine> = tb.outputs.iter().map(|e| b_in(e, at[3])).collect();
            let constrained = |c: &Constraint, f: &dyn Fn(&Affine) -> Affine| Constraint {
                expr: f(&c.expr),
                kind: c.kind,
            };
            let mut domains: Vec<Constraint> = Vec::new();
            for (cs, fresh) in [
                (&a.domain.constraints, at[0]),
                (&a.schedule.constraints, at[0]),
                (&ta.constraints, at[2]),
            ] {
                domains.extend(cs.iter().map(|c| constrained(c, &|e| a_in(e, fresh))));
            }
            for (cs, fresh) in [
                (&b.domain.constraints, at[1]),
                (&b.schedule.constraints, at[1]),
                (&tb.constraints, at[3]),
            ] {
                domains.extend(cs.iter().map(|c| constrained(c, &|e| b_in(e, fresh))));
            }
            let reduction = ia == ib && matches!(a.update, Some('+' | '-'));
            for p in touches(&a.target, a.update.is_some(), &a.value) {
                for q in touches(&b.target, b.update.is_some(), &b.value) {
                    if p.access.space != q.access.space || !(p.write || q.write) {
                        continue;
                    }
                    if reduction && p.target && q.target {
                        continue;
                    }
                    let index_b: Vec<Affine> =
                        q.access.index.iter().map(|e| b_in(e, at[1])).collect();
                    let mut base = domains.clone();
                    base.extend(equal(&p.access.index, &index_b));
                    let mut violated = lex_before(&new_b, &new_a);
                    violated.push(equal(&new_a, &new_b));
                    let mut space = Abstraction::new(vars);
                    let mut parts = Vec::new();
                    for before in lex_before(&sched_a, &sched_b) {
                        for after in &violated {
                            let conj: Vec<Constraint> = base
                                .iter()
                                .chain(&before)
                                .chain(after)
                                .map(|c| space.constraint(c))
                                .collect();
                            parts.push(conj);
                        }
                    }
                    let mut broken = false;
                    for part in parts {
                        let set = space.to_isl(&isl, &[part], Some(facts)).map_err(fail)?;
                        if !set.is_empty().map_err(fail)? {
                            broken = true;
                            break;
                        }
                    }
                    if !broken {
                        continue;
                    }
                    let kind = |t: &Touch| if t.write { "write" } else { "read" };
                    let caveat = if space.dims() > vars {
                        " (the dependence goes through index arrays, which the check treats \
                         as unknown functions, `pos` arrays non-decreasing: it may not occur \
                         for every input, but sparsec cannot prove that it never does)"
                    } else {
                        ""
                    };
                    // `p` runs first in the original schedules, `q` does not any more.
                    let dependence = match (p.write, q.write) {
                        (true, false) => "a flow dependence: the read needs the value written",
                        (false, true) => {
                            "an anti-dependence: the write would replace the value before it \
                             is read"
                        }
                        _ => "an output dependence: the element must keep the later write's value",
                    };
                    return Err(SpfError::new(
                        format!(
                            "the transformation is illegal: it runs {}'s {} of `{}` before \
                             {}'s {} of the same element, which the original schedules run \
                             first ({dependence}){caveat}",
                            b.name,
                            kind(&q),
                            q.access.space,
                            a.name,
                            kind(&p),
                        ),
                        span,
                    ));
                }
            }
        }
    }
    Ok(())
}
