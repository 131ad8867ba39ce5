//! The specialised program in sparsec's IR: isl's AST generator scans each statement's
//! executed iterations in the program's order, and every instance becomes a store into
//! the program's arrays. All arrays live in one dense buffer (the kernel's output
//! operand), one after the other in declaration order, each row-major: the program updates
//! them in place, as the dense program does, so the caller fills the buffer with the
//! initial contents and reads the final ones back.

use std::collections::BTreeMap;

use super::model::Model;
use super::parse::{Access, Affine, BinaryOp, Value};
use super::{isl_error, AffineError};
use crate::ir::{
    BinOp, Expr, Function, LoopKind, MathFn, OperandId, OperandInfo, OutputMode, ParamRef, Stmt,
    Store, Type, ValueType, Var,
};
use crate::polyhedral::isl::{AstExpr, Isl, UnionSet};
use crate::polyhedral::read::{self, FrontEnd, LoopNode};

/// The most regions the executed iterations may make up for isl's AST generator to
/// scan them.
const MAX_SCANNED_REGIONS: usize = 2000;

/// Where each array lives in the buffer, as expressions of the parameters.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Per array in declaration order: its name, its first element's offset and its
    /// extents.
    pub arrays: Vec<(String, Expr, Vec<Expr>)>,
    /// The buffer's length.
    pub len: Expr,
}

/// The value of parameter `name` in the generated function: its constant where the code
/// is generated for fixed values, else the function's parameter.
fn param(model: &Model, fixed: Option<&BTreeMap<String, i64>>, name: &str) -> Option<Expr> {
    if let Some(v) = fixed.and_then(|f| f.get(name)) {
        return Some(Expr::Int(*v));
    }
    let n = model.program.params.iter().position(|p| p == name)?;
    Some(Expr::Param(ParamRef::Extent(n)))
}

impl Layout {
    /// The layout of `model`'s arrays, for the parameter values `fixed` when given.
    pub fn new(model: &Model, fixed: Option<&BTreeMap<String, i64>>) -> Layout {
        let value = |a: &Affine| affine_expr(a, &|name| param(model, fixed, name));
        let mut offset = Expr::Int(0);
        let mut arrays = Vec::new();
        for array in &model.program.arrays {
            let dims: Vec<Expr> = array
                .extents
                .iter()
                .map(|e| Expr::max(value(e).expect("extents name parameters"), Expr::Int(0)))
                .collect();
            let size = dims.iter().cloned().fold(Expr::Int(1), |a, b| a * b);
            arrays.push((array.name.clone(), offset.clone(), dims));
            offset = crate::ir::simplify(&(offset + size));
        }
        Layout {
            arrays,
            len: offset,
        }
    }

    fn find(&self, name: &str) -> &(String, Expr, Vec<Expr>) {
        self.arrays
            .iter()
            .find(|(n, _, _)| n == name)
            .expect("the parser checked declarations")
    }
}

/// `a` with each name's value given by `name` (None if a name has none).
fn affine_expr(a: &Affine, name: &dyn Fn(&str) -> Option<Expr>) -> Option<Expr> {
    let mut out = Expr::Int(a.constant);
    for (n, c) in &a.terms {
        let v = name(n)?;
        out = out + if *c == 1 { v } else { Expr::Int(*c) * v };
    }
    Some(crate::ir::simplify(&out))
}

/// The IR function that runs the iterations `executed` (per statement) in the
/// program's order.
pub fn generate(
    isl: &Isl,
    model: &Model,
    executed: &[UnionSet],
    fixed: Option<&BTreeMap<String, i64>>,
) -> Result<(Function, Layout), AffineError> {
    let err = isl_error("generating the specialised loops");
    isl.reset_operations();
    let mut domain: UnionSet = isl.empty_union_set();
    for set in executed {
        domain = domain.union(set).map_err(&err)?;
    }
    let prefix = model.params_prefix();
    let nonneg: Vec<String> = model
        .program
        .arrays
        .iter()
        .flat_map(|a| a.extents.iter().map(|e| format!("{e} >= 0")))
        .collect();
    let context = if nonneg.is_empty() {
        format!("{prefix}{{ : }}")
    } else {
        format!("{prefix}{{ : {} }}", nonneg.join(" and "))
    };
    // isl's AST generator separates pieces pairwise: past a few thousand it runs for
    // minutes before giving up, so the count is checked first.
    let pieces = domain.pieces().map_err(&err)?;
    let too_many = |why: String| {
        AffineError::general(format!(
            "generating the specialised loops over {pieces} region(s) {why}; an input \
             scattered into many small boxes suits sparse formats better (`sparsec run`), \
             and a lower density threshold merges its boxes"
        ))
    };
    if pieces > MAX_SCANNED_REGIONS {
        return Err(too_many(format!(
            "is beyond what isl's AST generator scans in reasonable time (at most \
             {MAX_SCANNED_REGIONS})"
        )));
    }
    let ast = isl
        .ast(&context, &domain.to_string(), &model.schedule_text(), None)
        .map_err(|e| too_many(format!("failed ({e})")))?;
    let parallel = parallel_dims(isl, model).map_err(&err)?;
    let layout = Layout::new(model, fixed);
    let mut function = Function::new(
        vec![OperandInfo {
            hint: "arrays".into(),
            values: ValueType::F64,
        }],
        model.program.params.len(),
        OutputMode::Dense {
            accumulate: false,
            zeroed_by_kernel: false,
        },
    );
    function.extent_hints = model.program.params.clone();
    let mut reading = Reading {
        model,
        layout: &layout,
        function: &mut function,
        iterators: Vec::new(),
        parallel,
        open: Vec::new(),
        pending: false,
        fixed,
    };
    let body = read::read(&mut reading, &ast)?;
    function.body = body;
    Ok((function, layout))
}

struct Reading<'a> {
    model: &'a Model,
    layout: &'a Layout,
    function: &'a mut Function,
    iterators: Vec<(String, Var)>,
    /// Per schedule dimension, whether no dependence is carried by it.
    parallel: Vec<bool>,
    /// Per enclosing loop, whether it runs on the team (only the outermost may).
    open: Vec<bool>,
    /// Whether the loop `loop_var` was last asked about runs on the team.
    pending: bool,
    fixed: Option<&'a BTreeMap<String, i64>>,
}

/// Per dimension of the common schedule, whether it carries no dependence: no two
/// instances that touch one element (one of them writing) and agree on the dimensions
/// before it differ on it. isl's AST names the loop over dimension `d` `c{d}`.
fn parallel_dims(isl: &Isl, model: &Model) -> Result<Vec<bool>, String> {
    let prefix = model.params_prefix();
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    for (s, st) in model.statements.iter().enumerate() {
        writes.push(model.access_piece(s, &st.target, None));
        let mut accesses = Vec::new();
        super::model::reads(&st.value, &mut accesses);
        for a in accesses {
            reads.push(model.access_piece(s, a, None));
        }
    }
    let union = |pieces: &[String]| -> Result<crate::polyhedral::isl::UnionMap, String> {
        if pieces.is_empty() {
            Ok(isl.empty_union_map())
        } else {
            isl.union_map(&format!("{prefix}{{ {} }}", pieces.join("; ")))
        }
    };
    let (writes, reads) = (union(&writes)?, union(&reads)?);
    let conflicts = writes
        .then(&writes.reverse()?)?
        .union(&writes.then(&reads.reverse()?)?)?
        .union(&reads.then(&writes.reverse()?)?)?;
    let schedule = isl.union_map(&model.schedule_text())?;
    let in_time = schedule.reverse()?.then(&conflicts)?.then(&schedule)?;
    let n = model.schedule_len;
    let names = |p: &str| {
        (0..n)
            .map(|d| format!("{p}{d}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::with_capacity(n);
    for d in 0..n {
        let same: Vec<String> = (0..d).map(|k| format!("a{k} = b{k}")).collect();
        let prefix_equal = if same.is_empty() {
            String::new()
        } else {
            format!("{} and ", same.join(" and "))
        };
        let carried = isl.union_map(&format!(
            "{{ [{}] -> [{}] : {prefix_equal}a{d} < b{d}; [{}] -> [{}] : {prefix_equal}a{d} > b{d} }}",
            names("a"),
            names("b"),
            names("a"),
            names("b")
        ))?;
        out.push(in_time.intersect(&carried)?.is_empty()?);
    }
    Ok(out)
}

impl Reading<'_> {
    fn offset(&self, access: &Access, counters: &[(String, Expr)]) -> Result<Expr, AffineError> {
        let (_, base, dims) = self.layout.find(&access.array);
        let name = |n: &str| {
            counters
                .iter()
                .find(|(c, _)| c == n)
                .map(|(_, e)| e.clone())
                .or_else(|| param(self.model, self.fixed, n))
        };
        let mut index = Expr::Int(0);
        for (a, d) in access.index.iter().zip(dims) {
            let i = affine_expr(a, &name).ok_or_else(|| {
                AffineError::new("an index names an unknown variable", access.span)
            })?;
            index = index * d.clone() + i;
        }
        Ok(crate::ir::simplify(&(base.clone() + index)))
    }

    fn value(&self, v: &Value, counters: &[(String, Expr)]) -> Result<Expr, AffineError> {
        let arrays = crate::ir::ArrayRef::Values(OperandId(0));
        Ok(match v {
            Value::Number(x) => Expr::Float(*x),
            Value::Read(a) => Expr::load(arrays, self.offset(a, counters)?),
            Value::Neg(x) => Expr::Neg(Box::new(self.value(x, counters)?)),
            Value::Binary(op, a, b) => {
                let op = match op {
                    BinaryOp::Add => BinOp::Add,
                    BinaryOp::Sub => BinOp::Sub,
                    BinaryOp::Mul => BinOp::Mul,
                    BinaryOp::Div => BinOp::Div,
                };
                Expr::bin(op, self.value(a, counters)?, self.value(b, counters)?)
            }
            Value::Call(name, args) => {
                let f = MathFn::from_c_name(name).ok_or_else(|| {
                    AffineError::general(format!("`{name}` is not a function the IR has"))
                })?;
                let args = args
                    .iter()
                    .map(|a| self.value(a, counters))
                    .collect::<Result<Vec<_>, _>>()?;
                Expr::Math(f, args)
            }
        })
    }
}

impl FrontEnd for Reading<'_> {
    type Error = AffineError;

    fn internal(&self, message: String) -> AffineError {
        AffineError::general(format!("reading isl's loops: {message}"))
    }

    fn fresh_var(&mut self, hint: String, ty: Type) -> Var {
        self.function.fresh_var(hint, ty)
    }

    fn name(&mut self, name: &str) -> Result<Expr, AffineError> {
        if let Some((_, v)) = self.iterators.iter().rev().find(|(n, _)| n == name) {
            return Ok(Expr::Var(*v));
        }
        param(self.model, self.fixed, name)
            .ok_or_else(|| self.internal(format!("isl named `{name}`")))
    }

    fn own_loop(&mut self, _: &LoopNode<'_>, _: &mut Vec<Stmt>) -> Option<Result<(), AffineError>> {
        None
    }

    fn loop_var(&mut self, iterator: &str) -> Result<(String, LoopKind), AffineError> {
        let dim: Option<usize> = iterator.strip_prefix('c').and_then(|d| d.parse().ok());
        let free = dim
            .and_then(|d| self.parallel.get(d).copied())
            .unwrap_or(false);
        self.pending = free && !self.open.iter().any(|p| *p);
        let kind = if self.pending {
            read::cpu_parallel()
        } else {
            LoopKind::Serial
        };
        Ok((iterator.to_string(), kind))
    }

    fn enter(&mut self, iterator: &str, var: Var) {
        self.iterators.push((iterator.to_string(), var));
        self.open.push(self.pending);
        self.pending = false;
    }

    fn leave(&mut self, _: &str) {
        self.iterators.pop();
        self.open.pop();
    }

    fn instance(&mut self, args: &[AstExpr]) -> Result<Vec<Stmt>, AffineError> {
        let Some((AstExpr::Id(name), rest)) = args.split_first() else {
            return Err(self.internal(format!("an instance {args:?}")));
        };
        let Some(st) = self.model.statements.iter().find(|s| &s.name == name) else {
            return Err(self.internal(format!("an instance of `{name}`")));
        };
        let mut counters = Vec::new();
        for (c, e) in st.counters.iter().zip(rest) {
            counters.push((c.clone(), read::expr(self, e)?));
        }
        let index = self.offset(&st.target, &counters)?;
        let value = self.value(&st.value, &counters)?;
        Ok(vec![Stmt::Store(Store {
            array: crate::ir::ArrayRef::Values(OperandId(0)),
            index,
            value,
            accumulate: false,
        })])
    }
}
