//! Polyhedral scanning of scheduled statements into an [`ir::Function`].
//!
//! Each statement is first moved to execution coordinates: its schedule, a map whose
//! outputs are constants or `±var + c`, is inverted, so that its domain's constraints and
//! its accesses speak of execution dimensions. Scanning then walks the dimensions in
//! order: statements whose dimension is a constant are split by it (in increasing order);
//! at a loop dimension, each statement's constraints whose innermost variable is that
//! dimension become an assignment (`j = col(k)`, a UF equality), loop bounds (`max` of the
//! lower, `min` of the upper bounds) or guards (`if`s around the statement).
//!
//! Every index a kernel computes is checked before the body runs: an interval for each
//! execution dimension, from its bounds and the ranges of the UFs' arrays, must lie inside
//! the arrays and data spaces it indexes (entry assumptions over the sizes, so an input
//! that does not fit the program is an error, never an out-of-bounds access).

use super::isl::Isl;
use super::parse::{Access, BodyExpr, Dim, Program, Span, Statement, UfArray};
use super::presburger::Abstraction;
use super::set::{Affine, Constraint, Relation0, Term};
use super::{deps, SpfError};
use crate::format::{Format, Streaming};
use crate::ir::{
    self, ArrayKind, ArrayRef, BinOp, Expr, Function, Local, LocalType, Loop, LoopKind,
    OmpSchedule, OperandId, OperandInfo, OutputMode, ParallelUnit, ParamRef, Scratch, Stmt, Store,
    Type, ValueType, Var,
};

/// A run-time scalar the kernel receives beside the symbols (as an extent parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// The length of an input's value array (a `data` space's size).
    ValuesLen { input: usize },
    /// The length of UF `n`'s array.
    UfLen(usize),
    /// The smallest value in UF `n`'s array (0 when empty).
    UfMin(usize),
    /// The largest value in UF `n`'s array (-1 when empty).
    UfMax(usize),
}

/// A computation lowered to IR, with what binding tensors to it needs.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub function: Function,
    /// Parameters `Extent(0..symbols.len())` are these symbols' values.
    pub symbols: Vec<String>,
    /// Then `Extent(symbols.len() + n)` is `extras[n]`.
    pub extras: Vec<Extra>,
    /// Input formats, in operand order (operand `n + 1` is input `n`).
    pub formats: Vec<Format>,
    /// The output's format when it is sparse: the kernel places its entries in their rows
    /// (`OutputMode::Rows`) or emits them (`OutputMode::Emit`), and the runtime assembles
    /// them, duplicates summed.
    pub assembled: Option<Format>,
}

/// A statement in execution coordinates.
struct Scheduled<'p> {
    stmt: &'p Statement,
    /// Per execution dimension: `Some(c)` for a constant, `None` for a loop.
    dims: Vec<Option<i64>>,
    /// Per execution dimension, the domain variable it scans (for printed names).
    names: Vec<String>,
    constraints: Vec<Constraint>,
    target: Access,
    value: BodyExpr,
}

/// Where a data space lives and its dimensions (row-major).
struct Space {
    array: ArrayRef,
    dims: Vec<Expr>,
    writable: bool,
}

/// Lower a parsed computation.
pub fn lower(prog: &Program) -> Result<Lowered, SpfError> {
    let symbols = prog.symbols();
    let mut formats = Vec::new();
    for input in &prog.inputs {
        let format = Format::parse(&input.format, input.dims.len())
            .map_err(|e| SpfError::new(format!("{e}"), input.span))?;
        formats.push(format);
    }
    let Some(output) = &prog.output else {
        return Err(SpfError::general(
            "a computation needs an `output NAME[dims];`".into(),
        ));
    };
    let mut operands = vec![OperandInfo {
        hint: output.name.clone(),
        values: ValueType::F64,
    }];
    operands.extend(prog.inputs.iter().map(|t| OperandInfo {
        hint: t.name.clone(),
        values: ValueType::F64,
    }));
    let mut extras = Vec::new();
    let output_format = Format::parse(&output.format, output.dims.len())
        .map_err(|e| SpfError::new(format!("{e}"), output.span))?;
    let assembled = output_format
        .levels()
        .iter()
        .any(|l| !l.format.arrays().is_empty())
        .then_some(output_format);
    let mode = match &assembled {
        Some(_) => OutputMode::Emit {
            order: output.dims.len(),
        },
        None => OutputMode::Dense { accumulate: false },
    };
    let mut function = Function::new(operands, 0, mode);
    let mut cx = Context {
        prog,
        symbols: symbols.clone(),
        extras: &mut extras,
        function: &mut function,
        spaces: Vec::new(),
        ufs: Vec::new(),
        formats: &formats,
        assembled: assembled.is_some(),
    };
    cx.bind_ufs()?;
    cx.bind_spaces()?;
    if prog.statements.is_empty() {
        return Err(SpfError::general("a computation needs a statement".into()));
    }
    let statements = transformed(prog)?;
    let scheduled = statements
        .iter()
        .map(schedule_statement)
        .collect::<Result<Vec<_>, _>>()?;
    let depth = scheduled[0].dims.len();
    if let Some(s) = scheduled.iter().find(|s| s.dims.len() != depth) {
        return Err(SpfError::new(
            format!(
                "every schedule must have the same number of outputs ({} has {}, {} has {})",
                scheduled[0].stmt.name,
                depth,
                s.stmt.name,
                s.dims.len()
            ),
            s.stmt.span,
        ));
    }
    for s in &scheduled {
        cx.check_statement(s)?;
    }
    let mut env = vec![None; depth];
    // Constraints on symbols only (`N >= 4`) guard the whole statement.
    let items: Vec<Item> = (0..scheduled.len())
        .map(|n| Item {
            stmt: n,
            pending: scheduled[n]
                .constraints
                .iter()
                .filter(|c| c.expr.max_var().is_none())
                .map(|c| cx.constraint(c, &env))
                .collect(),
        })
        .collect();
    let body = if let Some(span) = prog.wavefront {
        deps::check_outer_loop(&scheduled_views(&scheduled), deps::Mode::Wavefront, span)?;
        cx.wavefront(&scheduled, items, &mut env)?
    } else {
        let parallel = match prog.parallel {
            Some(span) => {
                deps::check_outer_loop(&scheduled_views(&scheduled), deps::Mode::Parallel, span)?;
                true
            }
            None => false,
        };
        cx.scan(&scheduled, 0, items, &mut env, parallel, &Leaf::Body)?
    };
    cx.function.body = body;
    if let Some(layout) = placed_rows(prog, assembled.as_ref(), &cx) {
        ir::rows::place_rows(cx.function, &layout);
    }
    function.extents = symbols.len() + extras.len();
    function.extent_hints = symbols
        .iter()
        .cloned()
        .chain(extras.iter().map(|e| match e {
            Extra::ValuesLen { .. } => "values_len".to_string(),
            Extra::UfLen(_) => "uf_len".to_string(),
            Extra::UfMin(_) => "uf_min".to_string(),
            Extra::UfMax(_) => "uf_max".to_string(),
        }))
        .collect();
    ir::verify(&function)
        .map_err(|e| SpfError::general(format!("internal error: generated IR is invalid: {e}")))?;
    Ok(Lowered {
        function,
        symbols,
        extras,
        formats,
        assembled,
    })
}

/// Where a sparse output's entries are placed in its storage by the kernel itself, in a
/// counting pass and a placing pass over the same loops ([`ir::rows`]): the format
/// conversion synthesised from the relations, with no sort where the loops produce each
/// row in order. Chosen when the loops are serial (no two threads fill one row) and every
/// level above the leaf is dense, so the rows are the output's own (a compressed upper
/// level would need a row array as large as the product of its dimensions, which only
/// run time knows); other sparse outputs are emitted and packed.
fn placed_rows(
    prog: &Program,
    format: Option<&Format>,
    cx: &Context,
) -> Option<ir::rows::RowLayout> {
    let (upper, leaf_mode) = format?.row_levels()?;
    let serial = prog.parallel.is_none() && prog.wavefront.is_none();
    if !serial || upper.iter().any(|&(_, kind)| kind != Streaming::Inserted) {
        return None;
    }
    let sizes = cx.dims(&prog.output.as_ref()?.dims);
    Some(ir::rows::RowLayout {
        leaf_level: upper.len() + 1,
        leaf_mode,
        upper: upper.iter().map(|&(m, _)| (m, sizes[m].clone())).collect(),
    })
}

/// The statements with every `transform` composed after their schedules, each checked
/// against the original schedules' dependences (so the first illegal one is named).
fn transformed(prog: &Program) -> Result<Vec<Statement>, SpfError> {
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

fn scheduled_views<'a>(s: &'a [Scheduled<'a>]) -> Vec<deps::View<'a>> {
    s.iter()
        .map(|s| deps::View {
            name: &s.stmt.name,
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
fn schedule_statement(stmt: &Statement) -> Result<Scheduled<'_>, SpfError> {
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

/// A statement being scanned, with the guards it still has to apply.
#[derive(Clone)]
struct Item {
    stmt: usize,
    pending: Vec<Expr>,
}

/// What the innermost level emits for a statement.
enum Leaf {
    /// The statement's body.
    Body,
    /// The wavefront inspector's update of row `lev[row - first]` from the rows it reads.
    Levels {
        lev: Scratch,
        first: Expr,
        rows: Vec<(String, Affine)>,
    },
}

/// A loop bound: `var >= ceil(expr / div)` (a lower bound) or `var <= floor(expr / div)`
/// (an upper one), from `div * var - expr >= 0` or `expr - div * var >= 0`; `div` is 1
/// except where a loop runs over tiles.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Bound {
    pub(super) expr: Affine,
    pub(super) div: i64,
}

impl Bound {
    /// The bound when it needs no division.
    pub(super) fn unit(&self) -> Option<&Affine> {
        (self.div == 1).then_some(&self.expr)
    }

    /// The constraint it came from, on dimension `d`.
    fn constraint(&self, d: usize, lower: bool) -> Constraint {
        let scaled = Affine::term(Term::Var(d)).scale(self.div);
        Constraint {
            expr: if lower {
                scaled.add_scaled(-1, &self.expr)
            } else {
                self.expr.add_scaled(-1, &scaled)
            },
            kind: Relation0::NonNegative,
        }
    }
}

/// `floor(a / b)` for `b >= 1`, also for negative `a` (C's `/` truncates toward zero).
fn floor_div(a: Expr, b: i64) -> Expr {
    if b == 1 {
        return a;
    }
    let rem = Expr::bin(
        BinOp::Rem,
        Expr::bin(BinOp::Rem, a.clone(), Expr::Int(b)) + Expr::Int(b),
        Expr::Int(b),
    );
    ir::simplify(&Expr::bin(BinOp::Div, a - rem, Expr::Int(b)))
}

/// `ceil(a / b)` for `b >= 1`.
fn ceil_div(a: Expr, b: i64) -> Expr {
    if b == 1 {
        return a;
    }
    ir::simplify(&(Expr::Int(0) - floor_div(Expr::Int(0) - a, b)))
}

/// How a statement's constraints at one dimension are used.
#[derive(Default)]
pub(super) struct AtDim {
    pub(super) definition: Option<Affine>,
    pub(super) lower: Vec<Bound>,
    pub(super) upper: Vec<Bound>,
    guards: Vec<Constraint>,
}

/// Sort the constraints whose innermost variable is dimension `d` into a definition,
/// bounds and guards.
pub(super) fn classify(constraints: &[Constraint], d: usize) -> AtDim {
    let mut at = AtDim::default();
    for c in constraints.iter().filter(|c| c.expr.max_var() == Some(d)) {
        let coef = c.expr.coefficient(d);
        let in_uf = c.expr.var_in_uf(d);
        // rest = expr - coef * d
        let rest = c.expr.add_scaled(-coef, &Affine::term(Term::Var(d)));
        match c.kind {
            Relation0::Zero if coef.abs() == 1 && !in_uf && at.definition.is_none() => {
                at.definition = Some(rest.scale(-coef));
            }
            // coef * d + rest >= 0: d >= ceil(-rest / coef), or d <= floor(rest / -coef).
            Relation0::NonNegative if !in_uf && coef > 0 => at.lower.push(Bound {
                expr: rest.scale(-1),
                div: coef,
            }),
            Relation0::NonNegative if !in_uf => at.upper.push(Bound {
                expr: rest,
                div: -coef,
            }),
            _ => at.guards.push(c.clone()),
        }
    }
    if at.definition.is_some() {
        // The bounds of a defined dimension are checks on its value.
        for b in at.lower.drain(..) {
            at.guards.push(b.constraint(d, true));
        }
        for b in at.upper.drain(..) {
            at.guards.push(b.constraint(d, false));
        }
    }
    at
}

struct Context<'a> {
    prog: &'a Program,
    symbols: Vec<String>,
    extras: &'a mut Vec<Extra>,
    function: &'a mut Function,
    /// Data spaces by name.
    spaces: Vec<(String, Space)>,
    /// UFs by name: the array they read and their number (for [`Extra`]).
    ufs: Vec<(String, ArrayRef)>,
    formats: &'a [Format],
    /// The output is sparse: its writes are emitted entries.
    assembled: bool,
}

impl Context<'_> {
    fn extra(&mut self, e: Extra) -> Expr {
        let n = match self.extras.iter().position(|x| *x == e) {
            Some(n) => n,
            None => {
                self.extras.push(e);
                self.extras.len() - 1
            }
        };
        Expr::Param(ParamRef::Extent(self.symbols.len() + n))
    }

    fn output_name(&self) -> &str {
        &self.prog.output.as_ref().expect("checked by lower").name
    }

    fn symbol(&self, name: &str) -> Expr {
        let n = self
            .symbols
            .iter()
            .position(|s| s == name)
            .expect("the parser admits bound symbols only");
        Expr::Param(ParamRef::Extent(n))
    }

    fn input(&self, name: &str) -> usize {
        self.prog
            .inputs
            .iter()
            .position(|t| t.name == name)
            .expect("the parser admits declared inputs only")
    }

    fn bind_ufs(&mut self) -> Result<(), SpfError> {
        for uf in &self.prog.ufs {
            let input = self.input(&uf.tensor);
            let format = &self.formats[input];
            let kind = match uf.array {
                UfArray::Pos => ArrayKind::Pos,
                UfArray::Crd => ArrayKind::Idx,
            };
            let has = format
                .levels()
                .get(uf.level - 1)
                .is_some_and(|l| l.format.arrays().contains(&kind));
            if !has {
                return Err(SpfError::new(
                    format!(
                        "level {} of `{}` ({}) has no `{}` array",
                        uf.level,
                        uf.tensor,
                        self.prog.inputs[input].format,
                        match uf.array {
                            UfArray::Pos => "pos",
                            UfArray::Crd => "crd",
                        }
                    ),
                    uf.span,
                ));
            }
            self.ufs.push((
                uf.name.clone(),
                ArrayRef::Level {
                    operand: OperandId(input + 1),
                    level: uf.level,
                    kind,
                },
            ));
        }
        Ok(())
    }

    fn dims(&self, dims: &[Dim]) -> Vec<Expr> {
        dims.iter()
            .map(|d| match d {
                Dim::Sym(s) => self.symbol(s),
                Dim::Int(i) => Expr::Int(*i),
            })
            .collect()
    }

    fn bind_spaces(&mut self) -> Result<(), SpfError> {
        let prog = self.prog;
        let output = prog.output.as_ref().expect("checked by lower");
        let dims = match &output.pattern {
            // Values by position: as many as the input's.
            Some(source) => {
                let input = self.input(source);
                vec![self.extra(Extra::ValuesLen { input })]
            }
            None => self.dims(&output.dims),
        };
        let space = Space {
            array: ArrayRef::Values(OperandId(0)),
            dims,
            writable: true,
        };
        self.spaces.push((output.name.clone(), space));
        for (n, input) in prog.inputs.iter().enumerate() {
            if self.formats[n]
                .levels()
                .iter()
                .all(|l| l.format.arrays().is_empty())
            {
                let space = Space {
                    array: ArrayRef::Values(OperandId(n + 1)),
                    dims: self.dims(&input.dims),
                    writable: false,
                };
                self.spaces.push((input.name.clone(), space));
            }
        }
        for data in &prog.data {
            let input = self.input(&data.tensor);
            let len = self.extra(Extra::ValuesLen { input });
            let space = Space {
                array: ArrayRef::Values(OperandId(input + 1)),
                dims: vec![len],
                writable: false,
            };
            self.spaces.push((data.name.clone(), space));
        }
        for temp in &prog.temps {
            let scratch = self.function.fresh_scratch(&temp.name, LocalType::Value);
            let dims = self.dims(&temp.dims);
            let len = dims
                .iter()
                .cloned()
                .reduce(|a, b| a * b)
                .expect("a declaration has a dimension");
            self.function.locals.push(Local {
                array: scratch,
                len: Expr::max(len, Expr::Int(0)),
            });
            let space = Space {
                array: ArrayRef::Scratch(scratch),
                dims,
                writable: true,
            };
            self.spaces.push((temp.name.clone(), space));
        }
        Ok(())
    }

    fn space(&self, access: &Access) -> Result<&Space, SpfError> {
        let space = self
            .spaces
            .iter()
            .find(|(n, _)| *n == access.space)
            .map(|(_, s)| s)
            .ok_or_else(|| {
                SpfError::new(
                    format!(
                        "`{}` is not a data space (the output, a dense input, a `data` or a \
                         `temp`)",
                        access.space
                    ),
                    access.span,
                )
            })?;
        if space.dims.len() != access.index.len() {
            return Err(SpfError::new(
                format!(
                    "`{}` has {} dimensions but is accessed with {} indices",
                    access.space,
                    space.dims.len(),
                    access.index.len()
                ),
                access.span,
            ));
        }
        Ok(space)
    }

    /// Check a statement's accesses and UF applications, and add the entry checks that
    /// keep every index it computes in bounds.
    fn check_statement(&mut self, s: &Scheduled) -> Result<(), SpfError> {
        let target = self.space(&s.target)?;
        if !target.writable {
            return Err(SpfError::new(
                format!(
                    "`{}` is an input: only the output and temps are written",
                    s.target.space
                ),
                s.target.span,
            ));
        }
        let output = &self.prog.output.as_ref().expect("checked by lower").name;
        if self.assembled {
            if s.target.space == *output && s.stmt.update != Some('+') {
                return Err(SpfError::new(
                    format!(
                        "`{output}` is sparse: it is assembled from the entries statements \
                         add to it (`+=`, duplicates summed, in any order)"
                    ),
                    s.target.span,
                ));
            }
            let mut reads = Vec::new();
            collect_accesses(&s.value, &mut reads);
            if let Some(read) = reads.iter().find(|a| a.space == *output) {
                return Err(SpfError::new(
                    format!(
                        "`{output}` is sparse and assembled after the kernel: it cannot be read"
                    ),
                    read.span,
                ));
            }
        }
        let intervals = self.intervals(s);
        let mut accesses = vec![&s.target];
        collect_accesses(&s.value, &mut accesses);
        for access in accesses {
            let dims = self.space(access)?.dims.clone();
            let declared = self.declared_dims(&access.space);
            for (n, (index, size)) in access.index.iter().zip(dims).enumerate() {
                self.check_uf_args(index, &intervals, access.span)?;
                if let Some(extent) = declared.as_ref().map(|d| &d[n]) {
                    if proven_within(&s.constraints, index, extent) {
                        continue;
                    }
                }
                let (lo, hi) = self.interval(index, &intervals).ok_or_else(|| {
                    SpfError::new(
                        format!(
                            "cannot bound an index of this access from the domain of {}: each \
                             loop needs lower and upper bounds",
                            s.stmt.name
                        ),
                        access.span,
                    )
                })?;
                self.assume_within(lo, hi, size, access.span, &s.stmt.name);
            }
        }
        for c in &s.constraints {
            self.check_uf_args(&c.expr, &intervals, s.stmt.span)?;
        }
        Ok(())
    }

    /// The declared dimensions of a data space (the output, a temp or a dense input) as
    /// expressions of symbols; None for a `data` space (its length is the input's).
    fn declared_dims(&self, space: &str) -> Option<Vec<Affine>> {
        let decl = self
            .prog
            .output
            .iter()
            .chain(&self.prog.temps)
            .chain(&self.prog.inputs)
            .find(|t| t.name == space && t.pattern.is_none())?;
        Some(
            decl.dims
                .iter()
                .map(|d| match d {
                    Dim::Sym(s) => Affine::term(Term::Sym(s.clone())),
                    Dim::Int(i) => Affine::constant(*i),
                })
                .collect(),
        )
    }

    fn assume_within(&mut self, lo: Expr, hi: Expr, size: Expr, span: Span, stmt: &str) {
        let empty = Expr::bin(BinOp::Gt, lo.clone(), hi.clone());
        let inside = Expr::and(Expr::bin(BinOp::Ge, lo, Expr::Int(0)), Expr::lt(hi, size));
        let check = ir::simplify(&Expr::bin(BinOp::Or, empty, inside));
        let known = self.function.assumptions.iter().any(|(c, _)| *c == check);
        if check != Expr::Bool(true) && !known {
            self.function.assumptions.push((
                check,
                format!(
                    "the inputs do not fit the program: an index of {stmt} at bytes {}..{} \
                     could leave its array",
                    span.0, span.1
                ),
            ));
        }
    }

    /// Every UF application in `e` has one argument, within its array.
    fn check_uf_args(
        &mut self,
        e: &Affine,
        intervals: &[Option<(Expr, Expr)>],
        span: Span,
    ) -> Result<(), SpfError> {
        for (_, t) in &e.terms {
            if let Term::Uf(name, args) = t {
                let [arg] = args.as_slice() else {
                    return Err(SpfError::new(
                        format!("`{name}` takes one argument, not {}", args.len()),
                        span,
                    ));
                };
                self.check_uf_args(arg, intervals, span)?;
                let n = self.uf_number(name);
                let (lo, hi) = self.interval(arg, intervals).ok_or_else(|| {
                    SpfError::new(
                        format!("cannot bound the argument of `{name}` from the domain"),
                        span,
                    )
                })?;
                let len = self.extra(Extra::UfLen(n));
                self.assume_within(lo, hi, len, span, &format!("`{name}`"));
            }
        }
        Ok(())
    }

    fn uf_number(&self, name: &str) -> usize {
        self.ufs
            .iter()
            .position(|(n, _)| n == name)
            .expect("the parser admits bound functions only")
    }

    /// An interval `[lo, hi]` (inclusive, over the entry parameters) holding every value
    /// each execution dimension takes, where its bounds give one.
    fn intervals(&mut self, s: &Scheduled) -> Vec<Option<(Expr, Expr)>> {
        let mut out: Vec<Option<(Expr, Expr)>> = Vec::new();
        for (d, dim) in s.dims.iter().enumerate() {
            let range = match dim {
                Some(c) => Some((Expr::Int(*c), Expr::Int(*c))),
                None => {
                    let at = classify(&s.constraints, d);
                    match &at.definition {
                        Some(def) => self.interval(def, &out),
                        None => {
                            let lo = at.lower.iter().find_map(|b| {
                                self.interval(&b.expr, &out).map(|i| ceil_div(i.0, b.div))
                            });
                            let hi = at.upper.iter().find_map(|b| {
                                self.interval(&b.expr, &out).map(|i| floor_div(i.1, b.div))
                            });
                            lo.zip(hi)
                        }
                    }
                }
            };
            out.push(range);
        }
        out
    }

    /// `[lo, hi]` of `e` given the dimensions' intervals (None where one is unknown).
    fn interval(&mut self, e: &Affine, dims: &[Option<(Expr, Expr)>]) -> Option<(Expr, Expr)> {
        let mut lo = Expr::Int(e.constant);
        let mut hi = Expr::Int(e.constant);
        for (c, t) in &e.terms {
            let (tlo, thi) = match t {
                Term::Var(d) => dims.get(*d)?.clone()?,
                Term::Sym(s) => (self.symbol(s), self.symbol(s)),
                Term::Uf(name, _) => {
                    let n = self.uf_number(name);
                    (self.extra(Extra::UfMin(n)), self.extra(Extra::UfMax(n)))
                }
            };
            let (a, b) = if *c > 0 { (tlo, thi) } else { (thi, tlo) };
            lo = lo + Expr::Int(*c) * a;
            hi = hi + Expr::Int(*c) * b;
        }
        Some((ir::simplify(&lo), ir::simplify(&hi)))
    }

    /// `e` as an IR expression: positive terms first, then the negative ones subtracted
    /// and the constant, without unit coefficients.
    fn affine(&self, e: &Affine, env: &[Option<Var>]) -> Expr {
        let term = |t: &Term| match t {
            Term::Var(d) => Expr::Var(env[*d].expect("outer dimensions are bound")),
            Term::Sym(s) => self.symbol(s),
            Term::Uf(name, args) => {
                let array = self.ufs[self.uf_number(name)].1;
                Expr::load(array, self.affine(&args[0], env))
            }
        };
        let scaled = |c: i64, t: &Term| match c.abs() {
            1 => term(t),
            k => Expr::Int(k) * term(t),
        };
        let mut out: Option<Expr> = None;
        for (c, t) in e.terms.iter().filter(|(c, _)| *c > 0) {
            let x = scaled(*c, t);
            out = Some(match out {
                Some(o) => o + x,
                None => x,
            });
        }
        for (c, t) in e.terms.iter().filter(|(c, _)| *c < 0) {
            out = Some(out.unwrap_or(Expr::Int(0)) - scaled(*c, t));
        }
        match (out, e.constant) {
            (None, k) => Expr::Int(k),
            (Some(o), 0) => o,
            (Some(o), k) if k < 0 => o - Expr::Int(-k),
            (Some(o), k) => o + Expr::Int(k),
        }
    }

    fn constraint(&self, c: &Constraint, env: &[Option<Var>]) -> Expr {
        let e = self.affine(&c.expr, env);
        match c.kind {
            Relation0::NonNegative => Expr::bin(BinOp::Ge, e, Expr::Int(0)),
            Relation0::Zero => Expr::eq(e, Expr::Int(0)),
        }
    }

    fn linear_index(&self, access: &Access, env: &[Option<Var>]) -> (ArrayRef, Expr) {
        let space = self.space(access).expect("checked before scanning");
        let mut index = Expr::Int(0);
        for (e, size) in access.index.iter().zip(&space.dims) {
            index = index * size.clone() + self.affine(e, env);
        }
        (space.array, ir::simplify(&index))
    }

    fn body_expr(&self, e: &BodyExpr, env: &[Option<Var>]) -> Expr {
        match e {
            BodyExpr::Num(x) => Expr::Float(*x),
            BodyExpr::Access(a) => {
                let (array, index) = self.linear_index(a, env);
                Expr::load(array, index)
            }
            BodyExpr::Neg(a) => Expr::Neg(Box::new(self.body_expr(a, env))),
            BodyExpr::Bin(op, a, b) => {
                Expr::bin(arith(*op), self.body_expr(a, env), self.body_expr(b, env))
            }
        }
    }

    fn leaf(&mut self, s: &Scheduled, env: &[Option<Var>], leaf: &Leaf) -> Vec<Stmt> {
        match leaf {
            Leaf::Body if self.assembled && s.target.space == self.output_name() => {
                vec![Stmt::Emit {
                    coords: s.target.index.iter().map(|e| self.affine(e, env)).collect(),
                    value: self.body_expr(&s.value, env),
                }]
            }
            Leaf::Body => {
                let (array, index) = self.linear_index(&s.target, env);
                let value = self.body_expr(&s.value, env);
                let (value, accumulate) = match s.stmt.update {
                    None => (value, false),
                    Some('+') => (value, true),
                    Some(op) => (
                        Expr::bin(arith(op), Expr::load(array, index.clone()), value),
                        false,
                    ),
                };
                vec![Stmt::Store(Store {
                    array,
                    index,
                    value,
                    accumulate,
                })]
            }
            Leaf::Levels { lev, first, rows } => {
                let row = Expr::Var(env[0].expect("the outer loop is bound"));
                let mut out = Vec::new();
                for source in deps::flow_sources(rows, &s.value, &s.constraints) {
                    let src = self.affine(&source, env);
                    let slot = |r: Expr| ir::simplify(&(r - first.clone()));
                    let updated = Expr::max(
                        Expr::load(ArrayRef::Scratch(*lev), slot(row.clone())),
                        Expr::load(ArrayRef::Scratch(*lev), slot(src.clone())) + Expr::Int(1),
                    );
                    // A row before the first is never written: reading it is no dependence.
                    out.push(Stmt::If(
                        Expr::bin(BinOp::Ge, src, first.clone()),
                        vec![Stmt::Store(Store {
                            array: ArrayRef::Scratch(*lev),
                            index: slot(row.clone()),
                            value: updated,
                            accumulate: false,
                        })],
                        Vec::new(),
                    ));
                }
                out
            }
        }
    }

    /// Scan `items` from dimension `d` on.
    fn scan(
        &mut self,
        all: &[Scheduled],
        d: usize,
        items: Vec<Item>,
        env: &mut Vec<Option<Var>>,
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        if items.len() == 1 && !items[0].pending.is_empty() {
            let guard = conjunction(items[0].pending.clone());
            let item = Item {
                stmt: items[0].stmt,
                pending: Vec::new(),
            };
            let inner = self.scan(all, d, vec![item], env, parallel, leaf)?;
            return Ok(vec![Stmt::If(guard, inner, Vec::new())]);
        }
        if d == env.len() {
            if let [a, b, ..] = items.as_slice() {
                return Err(SpfError::new(
                    format!(
                        "{} and {} are scheduled at the same execution tuples: give them \
                         different constants in some schedule dimension",
                        all[a.stmt].stmt.name, all[b.stmt].stmt.name
                    ),
                    all[b.stmt].stmt.span,
                ));
            }
            return Ok(self.leaf(&all[items[0].stmt], env, leaf));
        }
        let constants: Vec<Option<i64>> = items.iter().map(|i| all[i.stmt].dims[d]).collect();
        if constants.iter().all(Option::is_some) {
            let mut values: Vec<i64> = constants.iter().flatten().copied().collect();
            values.sort_unstable();
            values.dedup();
            let mut out = Vec::new();
            for v in values {
                let group = items
                    .iter()
                    .filter(|i| all[i.stmt].dims[d] == Some(v))
                    .cloned()
                    .collect();
                out.extend(self.scan(all, d + 1, group, env, parallel && d == 0, leaf)?);
            }
            return Ok(out);
        }
        if let Some(k) = constants.iter().position(Option::is_some) {
            return Err(SpfError::new(
                format!(
                    "schedule dimension {d} is a loop for some statements but the constant \
                     {} for {}: align the schedules",
                    constants[k].expect("found"),
                    all[items[k].stmt].stmt.name
                ),
                all[items[k].stmt].stmt.span,
            ));
        }
        self.scan_loop(all, d, items, env, parallel, leaf)
    }

    fn scan_loop(
        &mut self,
        all: &[Scheduled],
        d: usize,
        items: Vec<Item>,
        env: &mut Vec<Option<Var>>,
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        let ats: Vec<AtDim> = items
            .iter()
            .map(|i| classify(&all[i.stmt].constraints, d))
            .collect();
        let hint = all[items[0].stmt].names[d].clone();
        let defined = ats.iter().filter(|a| a.definition.is_some()).count();
        if defined > 0 {
            let first = ats[0].definition.clone();
            if defined < ats.len() || ats.iter().any(|a| a.definition != first) {
                return Err(SpfError::new(
                    format!(
                        "statements share execution dimension {d} but define it differently: \
                         separate them with a constant dimension"
                    ),
                    all[items[0].stmt].stmt.span,
                ));
            }
            let var = self.function.fresh_var(hint, Type::Index);
            let value = self.affine(&first.expect("defined"), env);
            env[d] = Some(var);
            let items = self.with_guards(items, &ats, env);
            let mut out = vec![Stmt::Decl(var, value)];
            out.extend(self.scan(all, d + 1, items, env, false, leaf)?);
            env[d] = None;
            return Ok(out);
        }
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        for (item, at) in items.iter().zip(&ats) {
            let name = &all[item.stmt].stmt.name;
            if at.lower.is_empty() || at.upper.is_empty() {
                return Err(SpfError::new(
                    format!(
                        "execution dimension {d} of {name} has no {} bound: every loop needs \
                         `lo <= var` and `var < hi` constraints with outer variables, symbols \
                         and functions of outer variables",
                        if at.lower.is_empty() {
                            "lower"
                        } else {
                            "upper"
                        }
                    ),
                    all[item.stmt].stmt.span,
                ));
            }
            let lower = dedup(
                at.lower
                    .iter()
                    .map(|b| ceil_div(self.affine(&b.expr, env), b.div)),
            );
            let upper = dedup(at.upper.iter().map(|b| match b.unit() {
                Some(e) => self.affine(&e.add_scaled(1, &Affine::constant(1)), env),
                None => floor_div(self.affine(&b.expr, env), b.div) + Expr::Int(1),
            }));
            starts.push(lower.into_iter().reduce(Expr::max).expect("nonempty"));
            ends.push(upper.into_iter().reduce(Expr::min).expect("nonempty"));
        }
        let same = starts.iter().all(|s| *s == starts[0]) && ends.iter().all(|e| *e == ends[0]);
        if !same {
            if let Some(ranges) = constant_apart(&ats) {
                return self.peeled(all, d, items, &ats, &ranges, env, parallel, leaf);
            }
        }
        if !same
            && ((d + 1)..env.len()).any(|e| items.iter().any(|i| all[i.stmt].dims[e].is_none()))
        {
            return Err(SpfError::new(
                format!(
                    "statements fused at execution dimension {d} have different bounds and \
                     inner loops: not supported yet (fuse only at the innermost loop)"
                ),
                all[items[0].stmt].stmt.span,
            ));
        }
        let var = self.function.fresh_var(hint, Type::Index);
        env[d] = Some(var);
        let mut items = self.with_guards(items, &ats, env);
        if !same {
            for (item, (s, e)) in items.iter_mut().zip(starts.iter().zip(&ends)) {
                item.pending.push(Expr::and(
                    Expr::bin(BinOp::Ge, Expr::Var(var), s.clone()),
                    Expr::lt(Expr::Var(var), e.clone()),
                ));
            }
        }
        let start = dedup(starts)
            .into_iter()
            .reduce(Expr::min)
            .expect("nonempty");
        let end = dedup(ends).into_iter().reduce(Expr::max).expect("nonempty");
        let body = self.scan(all, d + 1, items, env, false, leaf)?;
        env[d] = None;
        Ok(vec![Stmt::For(Loop {
            var,
            start,
            end,
            body,
            kind: if parallel {
                parallel_kind()
            } else {
                LoopKind::Serial
            },
        })])
    }

    /// Fused statements whose bounds are `base + constant`: the loop is cut into pieces
    /// that each run a fixed set of the statements. With the starts `s_0 < ... < s_m` and
    /// the ends `e_0 < ... < e_n` (exclusive), the pieces are `[s_k, s_k+1)` (the
    /// statements started by `s_k`; each keeps its end as a guard, since the start and end
    /// bounds are not known to be ordered), then `[s_m, max(e_0, s_m))` with every
    /// statement and no guard, then `[max(e_k, s_m), max(e_k+1, s_m))` with the
    /// statements not ended (no guard either). The pieces partition the union of the
    /// ranges in increasing order, so each instance runs once and in order. A piece at
    /// most one iteration long is peeled: the variable is set and the body guarded. Each
    /// piece's loop is parallel when the whole loop may be.
    #[allow(clippy::too_many_arguments)]
    fn peeled(
        &mut self,
        all: &[Scheduled],
        d: usize,
        items: Vec<Item>,
        ats: &[AtDim],
        ranges: &[(i64, i64)],
        env: &mut Vec<Option<Var>>,
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        // `constant_apart` found one bound of each kind, without division.
        let base_start = &ats[0].lower[0].expr;
        let base_end = ats[0].upper[0].expr.add_scaled(1, &Affine::constant(1));
        let mut starts: Vec<i64> = ranges.iter().map(|r| r.0).collect();
        let mut ends: Vec<i64> = ranges.iter().map(|r| r.1).collect();
        starts.sort_unstable();
        starts.dedup();
        ends.sort_unstable();
        ends.dedup();
        let at_start = |k: i64| base_start.add_scaled(1, &Affine::constant(k));
        let at_end = |k: i64| base_end.add_scaled(1, &Affine::constant(k));
        let last_start = *starts.last().expect("nonempty");
        let hint = all[items[0].stmt].names[d].clone();
        let mut out = Vec::new();
        // (from, to, whether the piece is at most one iteration, members with guards).
        let mut pieces: Vec<(Expr, Expr, bool, Vec<usize>, bool)> = Vec::new();
        for w in starts.windows(2) {
            let members = (0..items.len()).filter(|&n| ranges[n].0 <= w[0]).collect();
            let (from, to) = (
                self.affine(&at_start(w[0]), env),
                self.affine(&at_start(w[1]), env),
            );
            pieces.push((from, to, w[1] - w[0] == 1, members, true));
        }
        let clamp = |this: &mut Self, k: i64, env: &[Option<Var>]| {
            Expr::max(
                this.affine(&at_end(k), env),
                this.affine(&at_start(last_start), env),
            )
        };
        let first_end = ends[0];
        pieces.push((
            self.affine(&at_start(last_start), env),
            clamp(self, first_end, env),
            false,
            (0..items.len()).collect(),
            false,
        ));
        for w in ends.windows(2) {
            let members = (0..items.len()).filter(|&n| ranges[n].1 >= w[1]).collect();
            let (from, to) = (clamp(self, w[0], env), clamp(self, w[1], env));
            pieces.push((from, to, w[1] - w[0] == 1, members, false));
        }
        for (from, to, single, members, guarded) in pieces {
            let var = self.function.fresh_var(hint.clone(), Type::Index);
            env[d] = Some(var);
            let chosen: Vec<Item> = members.iter().map(|&n| items[n].clone()).collect();
            let chosen_ats: Vec<AtDim> = members
                .iter()
                .map(|&n| classify(&all[items[n].stmt].constraints, d))
                .collect();
            let mut chosen = self.with_guards(chosen, &chosen_ats, env);
            if guarded {
                for (item, &n) in chosen.iter_mut().zip(&members) {
                    let end = self.affine(&at_end(ranges[n].1), env);
                    item.pending.push(Expr::lt(Expr::Var(var), end));
                }
            }
            let body = self.scan(all, d + 1, chosen, env, false, leaf)?;
            env[d] = None;
            if single {
                let mut block = vec![Stmt::Decl(var, from)];
                block.push(Stmt::If(Expr::lt(Expr::Var(var), to), body, Vec::new()));
                out.push(Stmt::Block(block));
            } else {
                out.push(Stmt::For(Loop {
                    var,
                    start: from,
                    end: to,
                    body,
                    kind: if parallel {
                        parallel_kind()
                    } else {
                        LoopKind::Serial
                    },
                }));
            }
        }
        Ok(out)
    }

    fn with_guards(&self, mut items: Vec<Item>, ats: &[AtDim], env: &[Option<Var>]) -> Vec<Item> {
        for (item, at) in items.iter_mut().zip(ats) {
            item.pending
                .extend(at.guards.iter().map(|g| self.constraint(g, env)));
        }
        items
    }

    /// The level-set executor: an inspector computes each row's level (one more than the
    /// highest level of the earlier rows it reads), sorts the rows by level, and each
    /// level's rows run in parallel.
    fn wavefront(
        &mut self,
        all: &[Scheduled],
        items: Vec<Item>,
        env: &mut Vec<Option<Var>>,
    ) -> Result<Vec<Stmt>, SpfError> {
        let (first, end) = deps::outer_range(&scheduled_views(all)).ok_or_else(|| {
            SpfError::new(
                "wavefront: every statement's outer loop must have the same bounds, made of \
                 symbols and constants"
                    .into(),
                self.prog.wavefront.expect("asked for"),
            )
        })?;
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
            f.locals.push(Local { array, len });
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
        let readers: Vec<Item> = items
            .iter()
            .filter(|i| {
                let s = &all[i.stmt];
                !deps::flow_sources(&writers, &s.value, &s.constraints).is_empty()
            })
            .cloned()
            .collect();
        let mut out = Vec::new();
        if !readers.is_empty() {
            let leaf = Leaf::Levels {
                lev,
                first: first.clone(),
                rows: writers,
            };
            out = self.scan(all, 0, readers, env, false, &leaf)?;
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
        let mut inner_items = items;
        let ats: Vec<AtDim> = inner_items
            .iter()
            .map(|i| classify(&all[i.stmt].constraints, 0))
            .collect();
        inner_items = self.with_guards(inner_items, &ats, env);
        let mut row_body = vec![Stmt::Decl(r3, at(order, Expr::Var(p)) + first)];
        row_body.extend(self.scan(all, 1, inner_items, env, false, &Leaf::Body)?);
        env[0] = None;
        out.push(counted(
            l2,
            Expr::Var(levels),
            vec![Stmt::For(Loop {
                var: p,
                start: at(level_start, Expr::Var(l2)),
                end: at(level_start, Expr::Var(l2) + Expr::Int(1)),
                body: row_body,
                kind: parallel_kind(),
            })],
        ));
        Ok(out)
    }
}

fn parallel_kind() -> LoopKind {
    LoopKind::Parallel {
        unit: ParallelUnit::CpuThread,
        schedule: OmpSchedule::Static,
        chunk: 16,
        reductions: Vec::new(),
        locals: Vec::new(),
    }
}

/// Whether isl proves `0 <= index < extent` at every point of `constraints`, for every
/// value of the symbols and index arrays (an index with UF applications is left to the
/// run-time check, which knows the arrays' ranges).
fn proven_within(constraints: &[Constraint], index: &Affine, extent: &Affine) -> bool {
    if index.terms.iter().any(|(_, t)| matches!(t, Term::Uf(..))) {
        return false;
    }
    let outside = [
        // index <= -1
        index.scale(-1).add_scaled(1, &Affine::constant(-1)),
        // index >= extent
        index.add_scaled(-1, extent),
    ];
    let Some(vars) = constraints
        .iter()
        .filter_map(|c| c.expr.max_var())
        .chain(index.max_var())
        .max()
    else {
        return false;
    };
    let isl = Isl::new();
    outside.iter().all(|o| {
        let mut space = Abstraction::new(vars + 1);
        let mut part: Vec<Constraint> = constraints.iter().map(|c| space.constraint(c)).collect();
        part.push(Constraint {
            expr: o.clone(),
            kind: Relation0::NonNegative,
        });
        space
            .to_isl(&isl, &[part], None)
            .and_then(|set| set.is_empty())
            .unwrap_or(false)
    })
}

/// When every statement has one lower and one upper bound at this dimension, the starts
/// differing from the first's by constants and so the ends, each statement's `(start, end)`
/// offsets from the first's.
fn constant_apart(ats: &[AtDim]) -> Option<Vec<(i64, i64)>> {
    let single = |at: &AtDim| match (at.lower.as_slice(), at.upper.as_slice()) {
        ([lo], [hi]) => Some((lo.unit()?.clone(), hi.unit()?.clone())),
        _ => None,
    };
    let (lo0, hi0) = single(&ats[0])?;
    ats.iter()
        .map(|at| {
            let (lo, hi) = single(at)?;
            Some((
                lo.add_scaled(-1, &lo0).as_constant()?,
                hi.add_scaled(-1, &hi0).as_constant()?,
            ))
        })
        .collect()
}

/// The expressions, each once, in order.
fn dedup(exprs: impl IntoIterator<Item = Expr>) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    for e in exprs {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn conjunction(conds: Vec<Expr>) -> Expr {
    conds
        .into_iter()
        .reduce(Expr::and)
        .unwrap_or(Expr::Bool(true))
}

fn arith(op: char) -> BinOp {
    match op {
        '+' => BinOp::Add,
        '-' => BinOp::Sub,
        '*' => BinOp::Mul,
        _ => BinOp::Div,
    }
}

/// Every data-space access in `e`.
pub(super) fn collect_accesses<'e>(e: &'e BodyExpr, out: &mut Vec<&'e Access>) {
    match e {
        BodyExpr::Num(_) => {}
        BodyExpr::Access(a) => out.push(a),
        BodyExpr::Neg(a) => collect_accesses(a, out),
        BodyExpr::Bin(_, a, b) => {
            collect_accesses(a, out);
            collect_accesses(b, out);
        }
    }
}
