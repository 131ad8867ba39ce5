//! Statements in execution coordinates: `transform`s composed after the schedules and
//! checked against the dependences, schedules inverted, and loops without bounds of their
//! own given those isl's projection implies.

use super::*;

/// The statements with every `transform` composed after their schedules, each checked
/// against the original schedules' dependences (so the first illegal one is named).
pub(super) fn transformed(prog: &Program) -> Result<Vec<Statement>, SpfError> {
    let mut statements = prog.statements.clone();
    let facts = deps::program_facts(prog);
    for t in &prog.transforms {
        // Its only constraints define its output variables (strip-mining, tiling).
        t.map
            .strip_mined()
            .map_err(|e| SpfError::new(format!("a transform is a function: {e}"), t.span))?;
        for s in statements
            .iter_mut()
            .filter(|s| t.statements.is_empty() || t.statements.contains(&s.name))
        {
            s.schedule = t
                .map
                .compose(&s.schedule)
                .map_err(|e| SpfError::new(format!("{}: {e}", s.name), t.span))?;
            if s.schedule.input_from_outputs().is_none() {
                return Err(SpfError::new(
                    format!(
                        "the transform leaves the schedule of {} not invertible (it must \
                         run each instance once): {}",
                        s.name, s.schedule
                    ),
                    t.span,
                ));
            }
        }
        let depth = statements[0].schedule.outputs.len();
        if let Some(s) = statements
            .iter()
            .find(|s| s.schedule.outputs.len() != depth)
        {
            return Err(SpfError::new(
                format!(
                    "after this transform the schedules have different numbers of outputs \
                     ({} has {depth}, {} has {}): transform every statement to the same depth",
                    statements[0].name,
                    s.name,
                    s.schedule.outputs.len()
                ),
                t.span,
            ));
        }
        deps::check_transformation(&prog.statements, &statements, &facts, t.span)?;
    }
    Ok(statements)
}

pub(super) fn scheduled_views<'a>(s: &'a [Scheduled<'a>]) -> Vec<deps::View<'a>> {
    s.iter()
        .map(|s| deps::View {
            name: &s.stmt.name,
            update: s.stmt.update,
            dims: &s.dims,
            constraints: &s.constraints,
            target: &s.target,
            value: &s.value,
        })
        .collect()
}

/// Move a statement to execution coordinates by inverting its schedule, and give each
/// loop the bounds that the inner dimensions' constraints imply (isl's projection), where
/// its own constraints have none (a skewed or interchanged loop).
pub(super) fn schedule_statement(stmt: &Statement) -> Result<Scheduled<'_>, SpfError> {
    let schedule = &stmt.schedule;
    if !schedule.fresh.is_empty() {
        schedule
            .strip_mined()
            .map_err(|e| SpfError::new(format!("the schedule of {}: {e}", stmt.name), stmt.span))?;
    }
    let inverse = schedule.input_from_outputs().ok_or_else(|| {
        SpfError::new(
            format!(
                "the schedule of {} must be invertible: its outputs with variables, as many \
                 as the domain's variables and the output variables (tiles), must be a \
                 unimodular affine function of them (interchange, shift, reversal, skew), \
                 and the other outputs constants: {}",
                stmt.name, schedule
            ),
            stmt.span,
        )
    })?;
    let to_exec = |v: usize| inverse[v].clone();
    let mut dims = Vec::new();
    for out in &schedule.outputs {
        match (out.max_var(), out.as_constant()) {
            (Some(_), _) => dims.push(None),
            (None, Some(c)) => dims.push(Some(c)),
            (None, None) => {
                return Err(SpfError::new(
                    format!(
                        "an output of the schedule of {} is a symbol, not a constant or a \
                         function of the domain's variables: {}",
                        stmt.name, schedule
                    ),
                    stmt.span,
                ))
            }
        }
    }
    let vars: Vec<&String> = stmt.domain.vars.iter().chain(&schedule.fresh).collect();
    let names = schedule
        .outputs
        .iter()
        .enumerate()
        .map(|(d, out)| match out.terms.first() {
            Some((_, Term::Var(v))) => vars[*v].clone(),
            _ => format!("t{d}"),
        })
        .collect();
    let mut constraints: Vec<Constraint> = stmt
        .domain
        .constraints
        .iter()
        .chain(&schedule.constraints)
        .map(|c| c.substitute(&to_exec))
        .collect();
    implied_bounds(&mut constraints, &dims).map_err(|e| {
        SpfError::new(
            format!("cannot bound the loops of {}: {e}", stmt.name),
            stmt.span,
        )
    })?;
    let access = |a: &Access| Access {
        space: a.space.clone(),
        index: a.index.iter().map(|e| e.substitute(&to_exec)).collect(),
        span: a.span,
    };
    fn body(e: &BodyExpr, access: &dyn Fn(&Access) -> Access) -> BodyExpr {
        match e {
            BodyExpr::Num(x) => BodyExpr::Num(*x),
            BodyExpr::Access(a) => BodyExpr::Access(access(a)),
            BodyExpr::Neg(a) => BodyExpr::Neg(Box::new(body(a, access))),
            BodyExpr::Bin(op, a, b) => {
                BodyExpr::Bin(*op, Box::new(body(a, access)), Box::new(body(b, access)))
            }
        }
    }
    Ok(Scheduled {
        stmt,
        dims,
        names,
        constraints,
        target: access(&stmt.target),
        value: body(&stmt.value, &access),
    })
}

/// Add, for each loop dimension without a lower or an upper bound of its own, the bounds
/// that the constraints on inner dimensions imply: the projection (isl, exact over the
/// integers) of the constraints onto the dimensions up to it, where UF applications of
/// inner dimensions are projected too. Projecting those is sound (the bounds then hold
/// for every value the application could take), and the statement's own constraints still
/// select exactly its iterations inside the loop.
fn implied_bounds(constraints: &mut Vec<Constraint>, dims: &[Option<i64>]) -> Result<(), String> {
    let loops: Vec<usize> = (0..dims.len()).filter(|&d| dims[d].is_none()).collect();
    let unbounded = |cs: &[Constraint], d: usize| {
        let at = classify(cs, d);
        at.definition.is_none() && (at.lower.is_empty() || at.upper.is_empty())
    };
    if !loops.iter().any(|&d| unbounded(constraints, d)) {
        return Ok(());
    }
    let mut space = Abstraction::new(dims.len());
    let part: Vec<Constraint> = constraints.iter().map(|c| space.constraint(c)).collect();
    let set = space.to_isl(&Isl::new(), &[part], None)?;
    for &d in &loops {
        if !unbounded(constraints, d) {
            continue;
        }
        let inner = |e: usize| (d + 1..dims.len()).any(|v| space.depends_on(e, v));
        let dropped: Vec<usize> = (0..space.dims()).filter(|&e| inner(e)).collect();
        let mut projected = set.clone();
        for &e in dropped.iter().rev() {
            projected = projected.project_out(e, 1)?;
        }
        let kept: Vec<usize> = (0..space.dims()).filter(|e| !dropped.contains(e)).collect();
        let pieces = projected.simplify()?.basic_sets()?;
        // A union's pieces would each bound the loop differently; use the first's bounds
        // only when there is one piece (the statement's constraints still guard exactly).
        let [piece] = pieces.as_slice() else {
            continue;
        };
        for c in space.read_back(piece, &kept)? {
            // Any coefficient: a loop over tiles divides (`Bound`).
            let bound = c.kind == Relation0::NonNegative
                && c.expr.max_var() == Some(d)
                && !c.expr.var_in_uf(d);
            if bound && !constraints.contains(&c) {
                constraints.push(c);
            }
        }
    }
    Ok(())
}
