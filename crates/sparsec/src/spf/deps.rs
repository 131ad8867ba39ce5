//! Dependences carried by the outermost loop, from the statements' access relations.
//!
//! The analysis is conservative and says so: the outer loop (execution dimension 0, the
//! "row") may run in parallel only when every written data space is written at an index
//! whose first component is an invertible function of the row (`±row + c`) and every
//! other access to it uses that same index, so no two rows touch the same element. The
//! level-set executor also admits reads of rows that the statement's own constraints
//! prove earlier (`j < i` in forward substitution): those flow dependences, through
//! uninterpreted functions, are what its inspector resolves at run time. Anything else
//! (a read of a later or unknown row, an anti- or output dependence across rows) is
//! refused, naming the accesses.

use super::codegen::{classify, collect_accesses};
use super::parse::{Access, BodyExpr, Span};
use super::set::{Affine, Constraint, Relation0, Term};
use super::SpfError;

/// What the analysis needs of a statement in execution coordinates.
pub struct View<'a> {
    pub name: &'a str,
    pub dims: &'a [Option<i64>],
    pub constraints: &'a [Constraint],
    pub target: &'a Access,
    pub value: &'a BodyExpr,
}

/// How the outer loop is to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// All rows at once.
    Parallel,
    /// By level sets: rows of one level at once, levels in order.
    Wavefront,
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

/// Check that the outer loop can run as `mode` says.
pub fn check_outer_loop(views: &[View], mode: Mode, span: Span) -> Result<(), SpfError> {
    if let Some(v) = views.iter().find(|v| v.dims[0].is_some()) {
        return Err(SpfError::new(
            format!(
                "the outer schedule dimension of {} is a constant: a parallel or wavefront \
                 outer loop needs every statement in it",
                v.name
            ),
            span,
        ));
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
            let earlier = is_read && proven_earlier(v.constraints, &row_of(row_fn, &a.index[0]));
            if mode == Mode::Wavefront && earlier {
                continue;
            }
            let why = match mode {
                Mode::Parallel if earlier => "a flow dependence between rows (try `wavefront;`)",
                _ => "a dependence between rows that the constraints do not order earlier",
            };
            return Err(SpfError::new(
                format!(
                    "{} accesses `{}` at another row than the one that writes it: {why}",
                    v.name, a.space
                ),
                a.span,
            ));
        }
    }
    if mode == Mode::Wavefront && outer_range(views).is_none() {
        return Err(SpfError::new(
            "wavefront: every statement's outer loop must have the same bounds, made of \
             symbols and constants"
                .into(),
            span,
        ));
    }
    Ok(())
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
