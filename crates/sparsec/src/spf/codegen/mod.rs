//! Polyhedral scanning of scheduled statements into an [`ir::Function`].
//!
//! Each statement is first moved to execution coordinates: its schedule, a map whose
//! outputs are constants or `±var + c`, is inverted, so that its domain's constraints and
//! its accesses speak of execution dimensions (`schedule.rs`). isl's AST generator then
//! scans all statements together, each UF application a schedule slot of its own
//! (`scan.rs`), and its tree is read back into IR (`walk.rs`).
//!
//! Every index a kernel computes is checked before the body runs: an interval for each
//! execution dimension, from its bounds and the ranges of the UFs' arrays, must lie inside
//! the arrays and data spaces it indexes (entry assumptions over the sizes, so an input
//! that does not fit the program is an error, never an out-of-bounds access).

mod bounds;
mod passes;
mod scan;
mod schedule;
mod walk;
mod wavefront;

use crate::polyhedral::read::{ceil_div, floor_div};
pub(super) use bounds::classify;
use passes::{index_array_passes, placed_rows};
use scan::Leaf;
use schedule::{schedule_statement, scheduled_views, transformed};

use super::parse::{Access, BodyExpr, Dim, Program, Span, Statement, UfArray};
use super::presburger::Abstraction;
use super::set::{Affine, Constraint, Relation0, Term};
use super::{deps, SpfError};
use crate::format::Format;
use crate::ir::{
    self, ArrayKind, ArrayRef, BinOp, Expr, Function, Local, LocalType, Loop, LoopKind,
    MemorySpace, OperandId, OperandInfo, OutputMode, ParamRef, Scratch, Stmt, Store, Type,
    ValueType, Var,
};
use crate::polyhedral::isl::Isl;

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
    /// Under `wavefront;`, the level-set inspector: a function of the same operands and
    /// parameters that emits each row's level as the entry `(level, row - first)`. Its
    /// entries, as a CSR matrix of levels by rows, are `function`'s last operand, so that
    /// it runs once per structure rather than on every call.
    pub level_sets: Option<Function>,
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
        None => OutputMode::Dense {
            accumulate: false,
            zeroed_by_kernel: false,
        },
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
        atomic: Vec::new(),
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
    let items: Vec<usize> = (0..scheduled.len()).collect();
    let mut level_sets = None;
    let body = if let Some(span) = prog.wavefront {
        deps::check_wavefront(&scheduled_views(&scheduled), span)?;
        let schedule = OperandId(cx.function.operands.len());
        cx.function.operands.push(OperandInfo {
            hint: "level_sets".into(),
            values: ValueType::F64,
        });
        let sets = cx.wavefront(&scheduled, &items, &mut env, schedule)?;
        level_sets = Some((sets.inspector, sets.levels));
        sets.executor
    } else {
        let parallel = match prog.parallel {
            Some(span) => {
                let facts = deps::program_facts(prog);
                cx.atomic = deps::check_parallel(&scheduled_views(&scheduled), &facts, span)?;
                true
            }
            None => false,
        };
        cx.scan(&scheduled, &items, &[], &mut env, parallel, &Leaf::Body)?
    };
    cx.function.body = body;
    index_array_passes(cx.function, &formats);
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
    // The inspector shares the executor's operands, parameters and entry checks.
    let inspector = level_sets.map(|(body, levels)| {
        let mut inspector = function.clone();
        inspector.body = body;
        inspector.locals = vec![levels];
        inspector.output = OutputMode::Emit { order: 2 };
        inspector
    });
    let mut inspector = inspector;
    if let Some(inspector) = &mut inspector {
        index_array_passes(inspector, &formats);
    }
    for f in std::iter::once(&function).chain(&inspector) {
        ir::verify(f).map_err(|e| {
            SpfError::general(format!("internal error: generated IR is invalid: {e}"))
        })?;
    }
    Ok(Lowered {
        function,
        level_sets: inspector,
        symbols,
        extras,
        formats,
        assembled,
    })
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
    /// Data spaces that iterations of the parallel outer loop add into at once: their
    /// `+=` updates are atomic (an emitted entry needs none: entries add up).
    atomic: Vec<String>,
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
                space: MemorySpace::Global,
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
                let store = Stmt::Store(Store {
                    array,
                    index,
                    value,
                    accumulate,
                });
                if self.atomic.contains(&s.target.space) {
                    vec![Stmt::Atomic(Box::new(store))]
                } else {
                    vec![store]
                }
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
