//! The C99 backend.
//!
//! A kernel is one function `int sparsec_kernel(void **arrays, const int64_t *params,
//! sparsec_buffer *out)`. Every array and scalar the body reads is unpacked into a named
//! local at the top (`A2_pos`, `A1_size`, `i_size`), in the order given by
//! [`CKernel::arrays`] and [`CKernel::params`], which the runtime follows when it passes
//! storage. Index arrays are `int64_t`; values are `double` or `float` per tensor. The
//! runtime helpers come from [`super::runtime`], only those the kernel calls.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::runtime::{self, Section};
use crate::ir::{
    ArrayKind, ArrayRef, BinOp, Expr, Intrinsic, Local, LocalType, LoopKind, OmpSchedule,
    ParallelUnit, ParamRef, Reduction, Stmt, Type,
};
use crate::lower::{Lowered, OutputMode};
use crate::tensor::ValueType;

/// What the runtime must pass for each kernel argument slot.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Binding {
    /// `arrays[n]`: a level array or a value array of an operand.
    Array(ArrayRef),
    /// `params[n]`: a level parameter of an operand.
    Param(ParamRef),
    /// `params[n]`: the extent of an index variable.
    VarSize(usize),
    /// `params[n]`: the number of threads of parallel loops.
    Threads,
}

/// A lowered kernel that this backend cannot print.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the C backend cannot generate this kernel: {0}")]
pub struct BackendError(pub String);

/// Generated C source and its argument layout.
#[derive(Clone, Debug, PartialEq)]
pub struct CKernel {
    /// Complete translation unit.
    pub source: String,
    /// Array arguments, in `arrays[]` order.
    pub arrays: Vec<ArrayRef>,
    /// Scalar arguments, in `params[]` order.
    pub params: Vec<Binding>,
    /// Start of the kernel function in `source` (after the runtime sections it uses).
    pub body_offset: usize,
}

/// Name of the exported kernel function.
pub const ENTRY: &str = "sparsec_kernel";
/// Name of the exported function that frees an output buffer.
pub const FREE_BUFFER: &str = "sparsec_buffer_free";

/// Status a kernel returns when assumption `n` of [`Lowered::assumptions`] fails.
pub fn assumption_status(n: usize) -> i32 {
    2 + n as i32
}

/// Print a lowered kernel. `value_types[n]` is the value type of operand `n`.
pub fn emit(lowered: &Lowered, value_types: &[ValueType]) -> Result<CKernel, BackendError> {
    let mut used = Used {
        runtime: BTreeSet::from([Section::Base, Section::Free]),
        ..Used::default()
    };
    for local in &lowered.locals {
        used.expr(&local.len);
    }
    for s in &lowered.body {
        used.stmt(s);
    }
    for (e, _) in &lowered.assumptions {
        used.expr(e);
    }
    if let Some(unit) = used.gpu {
        return Err(BackendError(format!(
            "a loop is parallelized on {unit:?}, which needs a GPU backend; this build of \
             sparsec generates CPU code only (use CPUThread or CPUVector)"
        )));
    }
    let arrays: Vec<ArrayRef> = used.arrays.into_iter().collect();
    let mut params: Vec<Binding> = used.params.into_iter().map(Binding::Param).collect();
    params.extend((0..lowered.statement_vars).map(Binding::VarSize));
    if used.threads {
        params.push(Binding::Threads);
    }

    let mut out = runtime::kernel_prelude(&used.runtime);
    let body_offset = out.len();
    let order = match lowered.output {
        OutputMode::Emit => lowered.operands[0].format.order(),
        OutputMode::Dense { .. } => 0,
    };
    let _ = writeln!(
        out,
        "int {ENTRY}(void **arrays, const int64_t *params, sparsec_buffer *out) {{"
    );
    let _ = writeln!(out, "  (void)arrays; (void)params; (void)out;");
    for (n, a) in arrays.iter().enumerate() {
        let name = array_name(a);
        let writable = a.tensor == lowered.operands[0].name && a.kind == ArrayKind::Vals;
        let ty = match a.kind {
            ArrayKind::Vals => {
                let operand = lowered
                    .operands
                    .iter()
                    .position(|o| o.name == a.tensor)
                    .expect("operand");
                value_types[operand].c_name()
            }
            _ => "int64_t",
        };
        let constness = if writable { "" } else { "const " };
        let _ = writeln!(
            out,
            "  {constness}{ty} *restrict {name} = ({constness}{ty} *)arrays[{n}];"
        );
    }
    for (n, p) in params.iter().enumerate() {
        let name = match p {
            Binding::Param(p) => param_name(p),
            Binding::VarSize(v) => format!("{}_size", lowered.var_names[*v]),
            Binding::Threads => "sparsec_threads".to_string(),
            Binding::Array(_) => unreachable!(),
        };
        let _ = writeln!(out, "  const int64_t {name} = params[{n}];");
    }
    // `out` holds one entry buffer per thread; serial code appends to the first.
    let _ = writeln!(
        out,
        "  sparsec_buffer *sparsec_out = out; (void)sparsec_out;"
    );
    let _ = writeln!(out, "  int sparsec_oom = 0;");
    for (n, (holds, _)) in lowered.assumptions.iter().enumerate() {
        let _ = writeln!(
            out,
            "  if (!({})) return {};",
            expr(holds),
            assumption_status(n)
        );
    }
    let mut printer = Printer {
        out: &mut out,
        indent: 1,
        emit_order: order,
        parallel_depth: 0,
    };
    printer.allocate(&lowered.locals, "", "1");
    for s in &lowered.body {
        printer.stmt(s);
    }
    printer.release(&lowered.locals, "");
    out.push_str("  return sparsec_oom ? -1 : 0;\n}\n");
    Ok(CKernel {
        source: out,
        arrays,
        params,
        body_offset,
    })
}

fn array_name(a: &ArrayRef) -> String {
    if a.kind == ArrayKind::Local {
        return a.tensor.clone();
    }
    match a.level {
        Some(l) => format!("{}{}_{}", a.tensor, l, a.kind.suffix()),
        None => format!("{}_{}", a.tensor, a.kind.suffix()),
    }
}

fn param_name(p: &ParamRef) -> String {
    format!("{}{}_{}", p.tensor, p.level, p.kind.suffix())
}

#[derive(Default)]
struct Used {
    arrays: BTreeSet<ArrayRef>,
    params: BTreeSet<ParamRef>,
    /// Some loop runs on CPU threads.
    threads: bool,
    /// Some loop needs a GPU.
    gpu: Option<ParallelUnit>,
    /// The parts of the C runtime the kernel calls.
    runtime: BTreeSet<Section>,
}

impl Used {
    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Param(p) => {
                self.params.insert(p.clone());
            }
            Expr::Load(a, i) => {
                if a.kind != ArrayKind::Local {
                    self.arrays.insert(a.clone());
                }
                self.expr(i);
            }
            Expr::Neg(a) | Expr::Not(a) => self.expr(a),
            Expr::Bin(op, a, b) => {
                match op {
                    BinOp::Min => self.runtime.insert(Section::Min),
                    BinOp::Max => self.runtime.insert(Section::Max),
                    _ => false,
                };
                self.expr(a);
                self.expr(b);
            }
            Expr::Select(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
            Expr::Call(Intrinsic::HashLocate, a, args) => {
                self.runtime.insert(Section::Hash);
                self.arrays.insert(a.clone());
                args.iter().for_each(|x| self.expr(x));
            }
            Expr::Int(_) | Expr::Float(_) | Expr::Bool(_) | Expr::Var(_) => {}
        }
    }
    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Decl(_, _, e) | Stmt::Assign(_, e) => self.expr(e),
            Stmt::Store {
                array,
                index,
                value,
                ..
            } => {
                if array.kind != ArrayKind::Local {
                    self.arrays.insert(array.clone());
                }
                self.expr(index);
                self.expr(value);
            }
            Stmt::For {
                start,
                end,
                body,
                kind,
                ..
            } => {
                if let LoopKind::Parallel {
                    unit,
                    reductions,
                    locals,
                    ..
                } = kind
                {
                    for local in locals {
                        self.expr(&local.len);
                    }
                    match unit {
                        ParallelUnit::CpuThread => self.threads = true,
                        ParallelUnit::CpuVector => {}
                        gpu => self.gpu = Some(*gpu),
                    }
                    for r in reductions {
                        if let Reduction::Array(a, len) = r {
                            self.arrays.insert(a.clone());
                            self.expr(len);
                        }
                    }
                }
                self.expr(start);
                self.expr(end);
                body.iter().for_each(|x| self.stmt(x));
            }
            Stmt::Atomic(inner) => self.stmt(inner),
            Stmt::While(c, body) => {
                self.expr(c);
                body.iter().for_each(|x| self.stmt(x));
            }
            Stmt::If(c, a, b) => {
                self.expr(c);
                a.iter().chain(b).for_each(|x| self.stmt(x));
            }
            Stmt::Emit { coords, value } => {
                self.runtime.insert(Section::Grow);
                coords.iter().for_each(|x| self.expr(x));
                self.expr(value);
            }
            Stmt::Block(b) => b.iter().for_each(|x| self.stmt(x)),
            Stmt::OrderTouched { len, .. } => {
                self.runtime.insert(Section::Order);
                self.expr(len);
            }
        }
    }
}

struct Printer<'a> {
    out: &'a mut String,
    indent: usize,
    emit_order: usize,
    /// Number of enclosing OpenMP thread teams.
    parallel_depth: usize,
}

impl Printer<'_> {
    /// Allocate zeroed scratch arrays, `copies` times each.
    fn allocate(&mut self, locals: &[Local], suffix: &str, copies: &str) {
        for Local { name, len, ty } in locals {
            let ty = local_type(*ty);
            self.line(&format!(
                "{ty} *{name}{suffix} = ({ty} *)calloc((size_t)({}) * (size_t)({copies}) + 1, \
                 sizeof({ty}));",
                expr(len)
            ));
            // No early return from inside a parallel region.
            let fail = if self.parallel_depth > 0 {
                "abort();"
            } else {
                "return -1;"
            };
            self.line(&format!("if (!{name}{suffix}) {fail}"));
        }
    }

    fn release(&mut self, locals: &[Local], suffix: &str) {
        for Local { name, .. } in locals {
            self.line(&format!("free({name}{suffix});"));
        }
    }

    fn for_loop(&mut self, var: &str, start: &Expr, end: &Expr, body: &[Stmt], kind: &LoopKind) {
        let head = format!(
            "for (int64_t {var} = {}; {var} < {}; {var}++)",
            expr(start),
            expr(end)
        );
        let plain = |p: &mut Self| {
            p.block(&head, body);
            p.line("}");
        };
        match kind {
            LoopKind::Serial => plain(self),
            LoopKind::Unrolled(n) => {
                self.line(&format!("#pragma GCC unroll {n}"));
                plain(self);
            }
            LoopKind::Parallel {
                unit: ParallelUnit::CpuThread,
                schedule,
                chunk,
                reductions,
                locals,
            } => {
                // Threads append to their own entry buffers, which the runtime concatenates
                // in thread order: contiguous blocks keep the entries sorted.
                let emits = body.iter().any(contains_emit);
                let schedule = if emits {
                    "schedule(static)".to_string()
                } else {
                    omp_schedule(*schedule, *chunk)
                };
                let team = team_clauses(start, end, *chunk);
                let reductions = reduction_clauses(reductions);
                self.parallel_depth += 1;
                if locals.is_empty() && !emits {
                    self.line(&format!(
                        "#pragma omp parallel for {schedule} {team}{reductions}"
                    ));
                    plain(self);
                } else {
                    // Each thread gets its own copy of the scratch arrays.
                    self.parallel_depth -= 1;
                    self.allocate(locals, "_all", "sparsec_threads");
                    self.parallel_depth += 1;
                    self.line(&format!("#pragma omp parallel {team}"));
                    self.line("{");
                    self.indent += 1;
                    for Local { name, len, ty } in locals {
                        let ty = local_type(*ty);
                        self.line(&format!(
                            "{ty} *{name} = {name}_all + (int64_t)omp_get_thread_num() * ({});",
                            expr(len)
                        ));
                    }
                    if emits {
                        self.line("sparsec_buffer *sparsec_out = out + omp_get_thread_num();");
                    }
                    self.line(&format!("#pragma omp for {schedule}{reductions}"));
                    plain(self);
                    self.indent -= 1;
                    self.line("}");
                    self.parallel_depth -= 1;
                    self.release(locals, "_all");
                    self.parallel_depth += 1;
                }
                self.parallel_depth -= 1;
            }
            LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                reductions,
                locals,
                ..
            } => {
                self.allocate(locals, "", "1");
                self.line(&format!(
                    "#pragma omp simd{}",
                    reduction_clauses(reductions)
                ));
                plain(self);
                self.release(locals, "");
            }
            LoopKind::Parallel { .. } => unreachable!("GPU loops are refused before printing"),
        }
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn block(&mut self, head: &str, body: &[Stmt]) {
        self.line(&format!("{head} {{"));
        self.indent += 1;
        body.iter().for_each(|s| self.stmt(s));
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Decl(name, ty, e) => {
                let ty = match ty {
                    Type::Index => "int64_t",
                    Type::Bool => "int",
                    Type::Value(v) => v.c_name(),
                };
                self.line(&format!("{ty} {name} = {};", expr(e)));
            }
            Stmt::Assign(name, e) => match e {
                Expr::Bin(BinOp::Add, a, b) if matches!(&**a, Expr::Var(n) if n == name) => {
                    match &**b {
                        Expr::Int(1) => self.line(&format!("{name}++;")),
                        b => self.line(&format!("{name} += {};", expr(b))),
                    }
                }
                _ => self.line(&format!("{name} = {};", expr(e))),
            },
            Stmt::Store {
                array,
                index,
                value,
                accumulate,
            } => {
                let op = if *accumulate { "+=" } else { "=" };
                self.line(&format!(
                    "{}[{}] {op} {};",
                    array_name(array),
                    expr(index),
                    expr(value)
                ));
            }
            Stmt::For {
                var,
                start,
                end,
                body,
                kind,
            } => self.for_loop(var, start, end, body, kind),
            Stmt::While(c, body) => {
                self.block(&format!("while ({})", expr(c)), body);
                self.line("}");
            }
            Stmt::Atomic(inner) => {
                self.line("#pragma omp atomic");
                self.stmt(inner);
            }
            Stmt::If(c, then, otherwise) => {
                self.block(&format!("if ({})", expr(c)), then);
                let mut rest = otherwise.as_slice();
                loop {
                    if rest.is_empty() {
                        self.line("}");
                        break;
                    }
                    if let Some(Stmt::If(c, then, otherwise)) = single_if(rest) {
                        self.block(&format!("}} else if ({})", expr(c)), then);
                        rest = otherwise;
                    } else {
                        self.block("} else", rest);
                        self.line("}");
                        break;
                    }
                }
            }
            Stmt::Emit { coords, value } => {
                let n = self.emit_order;
                self.line(&format!(
                    "if (sparsec_out->len == sparsec_out->cap && !sparsec_grow(sparsec_out, {n})) {{"
                ));
                self.line("  sparsec_oom = 1;");
                self.line("} else {");
                self.indent += 1;
                for (k, c) in coords.iter().enumerate() {
                    self.line(&format!(
                        "sparsec_out->coords[sparsec_out->len * {n} + {k}] = {};",
                        expr(c)
                    ));
                }
                self.line(&format!(
                    "sparsec_out->vals[sparsec_out->len++] = {};",
                    expr(value)
                ));
                self.indent -= 1;
                self.line("}");
            }
            Stmt::Block(b) if !b.iter().any(|s| matches!(s, Stmt::Decl(..))) => {
                b.iter().for_each(|s| self.stmt(s));
            }
            Stmt::Block(b) => {
                self.line("{");
                self.indent += 1;
                b.iter().for_each(|s| self.stmt(s));
                self.indent -= 1;
                self.line("}");
            }
            Stmt::OrderTouched { list, len, flags } => self.line(&format!(
                "sparsec_order_touched({}, {}, {});",
                array_name(list),
                expr(len),
                array_name(flags)
            )),
        }
    }
}

fn local_type(ty: LocalType) -> &'static str {
    match ty {
        LocalType::Value => "double",
        LocalType::Index => "int64_t",
        LocalType::Flag => "char",
    }
}

fn contains_emit(s: &Stmt) -> bool {
    match s {
        Stmt::Emit { .. } => true,
        Stmt::For { body, .. } | Stmt::While(_, body) | Stmt::Block(body) => {
            body.iter().any(contains_emit)
        }
        Stmt::If(_, a, b) => a.iter().chain(b).any(contains_emit),
        _ => false,
    }
}

fn reduction_clauses(reductions: &[Reduction]) -> String {
    reductions
        .iter()
        .map(|r| match r {
            Reduction::Scalar(name) => format!(" reduction(+:{name})"),
            Reduction::Array(a, len) => {
                format!(" reduction(+:{}[0:{}])", array_name(a), expr(len))
            }
        })
        .collect()
}

fn omp_schedule(schedule: OmpSchedule, chunk: usize) -> String {
    let kind = match schedule {
        OmpSchedule::Static => "static",
        OmpSchedule::Dynamic => "dynamic",
        OmpSchedule::Guided => "guided",
    };
    format!("schedule({kind}, {chunk})")
}

/// `num_threads` and `if` clauses of a thread team for a loop from `start` to `end`: a
/// loop of one chunk cannot use a second thread, so it skips the team's start-up.
fn team_clauses(start: &Expr, end: &Expr, chunk: usize) -> String {
    let trips = crate::ir::simplify(&(end.clone() - start.clone()));
    format!(
        "num_threads(sparsec_threads) if(sparsec_threads > 1 && {} > {chunk})",
        atom(&trips)
    )
}

/// The lone `if` of an `else` branch (through empty nesting), printed as `else if`.
fn single_if(stmts: &[Stmt]) -> Option<&Stmt> {
    match stmts {
        [s @ Stmt::If(..)] => Some(s),
        [Stmt::Block(inner)] => single_if(inner),
        _ => None,
    }
}

/// Print an expression, fully parenthesised where precedence could be misread.
pub fn expr(e: &Expr) -> String {
    match e {
        Expr::Int(v) => v.to_string(),
        Expr::Float(v) => {
            if v.is_finite() {
                let s = format!("{v:?}");
                if s.contains(['.', 'e', 'E']) {
                    s
                } else {
                    format!("{s}.0")
                }
            } else if v.is_nan() {
                "NAN".into()
            } else if *v > 0.0 {
                "INFINITY".into()
            } else {
                "(-INFINITY)".into()
            }
        }
        Expr::Bool(b) => (*b as i32).to_string(),
        Expr::Var(n) => n.clone(),
        Expr::Param(p) => param_name(p),
        Expr::Load(a, i) => format!("{}[{}]", array_name(a), expr(i)),
        Expr::Neg(a) => format!("-{}", atom(a)),
        Expr::Not(a) => format!("!{}", atom(a)),
        Expr::Bin(BinOp::Min, a, b) => format!("sparsec_min({}, {})", expr(a), expr(b)),
        Expr::Bin(BinOp::Max, a, b) => format!("sparsec_max({}, {})", expr(a), expr(b)),
        Expr::Bin(op, a, b) => {
            let sym = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::Div => "/",
                BinOp::Rem => "%",
                BinOp::Lt => "<",
                BinOp::Le => "<=",
                BinOp::Gt => ">",
                BinOp::Ge => ">=",
                BinOp::Eq => "==",
                BinOp::Ne => "!=",
                BinOp::And => "&&",
                BinOp::Or => "||",
                BinOp::Min | BinOp::Max => unreachable!(),
            };
            format!("{} {sym} {}", atom(a), atom(b))
        }
        Expr::Select(c, a, b) => format!("({} ? {} : {})", expr(c), expr(a), expr(b)),
        Expr::Call(Intrinsic::HashLocate, array, args) => {
            let args: Vec<String> = args.iter().map(expr).collect();
            format!(
                "sparsec_hash_locate({}, {})",
                array_name(array),
                args.join(", ")
            )
        }
    }
}

fn atom(e: &Expr) -> String {
    match e {
        Expr::Bin(op, ..) if !matches!(op, BinOp::Min | BinOp::Max) => format!("({})", expr(e)),
        Expr::Neg(_) => format!("({})", expr(e)),
        Expr::Float(v) if *v < 0.0 => format!("({})", expr(e)),
        Expr::Int(v) if *v < 0 => format!("({v})"),
        _ => expr(e),
    }
}
