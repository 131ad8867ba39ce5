//! The C99 backend.
//!
//! A kernel is one function `int sparsec_kernel(void **arrays, const int64_t *params,
//! sparsec_buffer *out)`. It passes every array the body reads as a named `restrict`
//! parameter (`A2_pos`) of the body's function, which unpacks the scalars into named
//! locals at its top (`A1_size`, `i_size`), in the order given by the function's
//! [`Signature`], which the runtime follows when it passes storage. Index arrays are
//! `int64_t` or `int32_t`; values are `double` or `float` per tensor. The runtime helpers
//! come from [`super::runtime`], only those the kernel calls.
//!
//! One file per job: statements and loops here, expressions in `expr.rs`, sum reductions
//! in `sums.rs`, gathered dot products in `gathers.rs`, dense rows summed in registers in
//! `row_sums.rs`, OpenMP thread teams in `threads.rs`.

pub(super) mod expr;
mod gathers;
mod row_sums;
mod sums;
mod target;
mod teams;
mod threads;

use std::collections::BTreeSet;
use std::fmt::Write;

use super::abi::{assumption_status, BackendError};
use super::runtime::{self, Section};
use crate::ir::{
    analysis, gather, prefetch, visit, zero_rows, ArrayRef, BinOp, Element, Expr, Function, Helper,
    Local, LocalType, Loop, LoopKind, Names, OperandId, OutputMode, ParallelUnit, ScalarArg,
    Signature, Stmt, Type,
};
use expr::expr;
pub use target::{listing, CTarget, CAPABILITIES, GATHERED_SUMS, NAME, PASSES, RESERVED_WORDS};
use threads::{balanced_work, reduction_clauses, reduction_declaration};

/// Generated C source and its argument layout.
#[derive(Clone, Debug, PartialEq)]
pub struct CKernel {
    /// Complete translation unit.
    pub source: String,
    /// The arguments, in `arrays[]` and `params[]` order.
    pub signature: Signature,
    /// Start of the kernel function in `source` (after the runtime sections it uses).
    pub body_offset: usize,
}

/// Name of the exported kernel function.
pub const ENTRY: &str = "sparsec_kernel";

/// Name of the function that holds the kernel's body, which [`ENTRY`] calls.
const BODY: &str = "sparsec_kernel_body";

/// Print a kernel.
pub fn emit(function: &Function) -> Result<CKernel, BackendError> {
    crate::target::check_capabilities(function, NAME, &CAPABILITIES)?;
    let signature = function.signature();
    let names = Names::new(function, &signature, &[RESERVED_WORDS]);

    let (sections, helpers) = runtime_used(function);
    let mut out = runtime::kernel_prelude(&sections, &helpers);
    let body_offset = out.len();
    let order = match function.output {
        OutputMode::Emit { order } => order,
        OutputMode::Dense { .. } | OutputMode::Rows { .. } => 0,
    };
    // The body is a function of restrict-qualified parameters, which the entry unpacks
    // from `arrays`: gcc 12 trusts `restrict` on parameters but not on locals, and without
    // it cannot vectorise a loop that stores to one array and gathers from another (ELL's
    // rows: y[i] += v[p] * x[idx[p]]).
    let mut parameters = Vec::new();
    let mut unpacked = Vec::new();
    for (n, (a, element)) in signature.arrays.iter().zip(&signature.elements).enumerate() {
        let name = names.array(a);
        // The output's arrays: its values, and the leaf level a two-phase kernel places.
        let writable = matches!(
            a,
            ArrayRef::Values(OperandId(0))
                | ArrayRef::Level {
                    operand: OperandId(0),
                    ..
                }
        );
        let ty = match element {
            Element::Value(ty) => ty.c_name(),
            Element::Index(width) => width.c_name(),
        };
        let constness = if writable { "" } else { "const " };
        parameters.push(format!("{constness}{ty} *restrict {name}"));
        unpacked.push(format!("({constness}{ty} *)arrays[{n}]"));
    }
    parameters.extend(["const int64_t *params".into(), "sparsec_buffer *out".into()]);
    unpacked.extend(["params".into(), "out".into()]);
    out.push_str(&reduction_declaration(&names, function));
    let _ = writeln!(out, "static int {BODY}({}) {{", parameters.join(", "));
    let _ = writeln!(out, "  (void)params; (void)out;");
    for (n, p) in signature.scalars.iter().enumerate() {
        let name = match p {
            ScalarArg::Param(p) => names.param(p),
            ScalarArg::Threads => "sparsec_threads",
        };
        let _ = writeln!(out, "  const int64_t {name} = params[{n}];");
    }
    // `out` holds one entry buffer per thread; serial code appends to the first.
    let _ = writeln!(
        out,
        "  sparsec_buffer *sparsec_out = out; (void)sparsec_out;"
    );
    let _ = writeln!(out, "  int sparsec_oom = 0;");
    for (n, (holds, _)) in function.assumptions.iter().enumerate() {
        let _ = writeln!(
            out,
            "  if (!({})) return {};",
            expr(&names, holds),
            assumption_status(n)
        );
    }
    let mut printer = Printer {
        out: &mut out,
        names: &names,
        function,
        indent: 1,
        emit_order: order,
        parallel_depth: 0,
        simd_depth: 0,
        paces: 0,
        sparse_loops: 0,
        overwritten: None,
        scratch: Vec::new(),
    };
    printer.with_scratch(&function.locals, "", "1", |p| {
        for s in &function.body {
            p.stmt(s);
        }
    });
    out.push_str("  return sparsec_oom ? -1 : 0;\n}\n\n");
    let _ = writeln!(
        out,
        "int {ENTRY}(void **arrays, const int64_t *params, sparsec_buffer *out) {{"
    );
    let _ = writeln!(out, "  (void)arrays;");
    let _ = writeln!(out, "  return {BODY}({});\n}}", unpacked.join(", "));
    Ok(CKernel {
        source: out,
        signature,
        body_offset,
    })
}

/// The parts of the C runtime a kernel calls: the buffer type always, the others where the
/// body uses them; and the level formats' helpers it calls.
fn runtime_used(function: &Function) -> (BTreeSet<Section>, Vec<&'static Helper>) {
    let mut sections = BTreeSet::from([Section::Base]);
    function.walk_exprs(&mut |e| match e {
        Expr::Bin(BinOp::Min, ..) => {
            sections.insert(Section::Min);
        }
        Expr::Bin(BinOp::Max, ..) => {
            sections.insert(Section::Max);
        }
        _ => {}
    });
    visit::walk_stmts(&function.body, &mut |s| match s {
        Stmt::Emit { .. } => {
            sections.insert(Section::Grow);
        }
        Stmt::OrderTouched { .. } => {
            sections.insert(Section::Order);
        }
        Stmt::For(l) if balanced_work(l).is_some() || matches!(l.kind, LoopKind::Team { .. }) => {
            sections.insert(Section::Team);
        }
        Stmt::For(l)
            if analysis::row_sum(l)
                .is_some_and(|row| row_sums::is_vector_value(function, &row)) =>
        {
            sections.insert(Section::Vectors);
        }
        Stmt::For(
            l @ Loop {
                kind:
                    LoopKind::Parallel {
                        unit: ParallelUnit::CpuVector,
                        ..
                    },
                ..
            },
        ) if gather::gathered_dot(function, l).is_some() => {
            sections.insert(Section::Gather);
        }
        _ => {}
    });
    (sections, function.helpers())
}

struct Printer<'a> {
    out: &'a mut String,
    names: &'a Names,
    function: &'a Function,
    indent: usize,
    emit_order: usize,
    /// Number of enclosing OpenMP thread teams.
    parallel_depth: usize,
    /// Number of enclosing `omp simd` loops, which code cannot leave by `return` either.
    simd_depth: usize,
    /// Balanced loops printed so far, each with its own `sparsec_pace`.
    paces: usize,
    /// Serial loops over stored positions (not from 0) around the statement printed.
    sparse_loops: usize,
    /// A row's zeroing loop left out, and the row sum that writes the whole row after it
    /// ([`zero_rows::overwritten_row`]), until that loop is printed.
    overwritten: Option<(Stmt, *const Loop)>,
    /// The `free` statements of the scratch arrays in scope, innermost last: serial code
    /// that runs out of memory frees them and returns at once.
    scratch: Vec<String>,
}

impl Printer<'_> {
    /// True outside every thread team and `omp simd` loop, where code out of memory may
    /// return at once.
    fn may_return(&self) -> bool {
        self.parallel_depth == 0 && self.simd_depth == 0
    }

    /// Serial code out of memory: free every scratch array in scope, innermost first, and
    /// return -1.
    fn out_of_memory(&mut self) {
        let mut stop: Vec<&str> = self.scratch.iter().rev().map(String::as_str).collect();
        stop.push("return -1;");
        let stop = stop.join(" ");
        self.line(&stop);
    }

    /// Print `body` with zeroed scratch arrays, `copies` times each, allocated before it
    /// and freed after it. Where memory runs out the kernel returns -1; inside a thread
    /// team, which it cannot leave, the thread skips `body` and the kernel reports
    /// running out of memory when the team is done.
    fn with_scratch(
        &mut self,
        locals: &[Local],
        suffix: &str,
        copies: &str,
        body: impl FnOnce(&mut Self),
    ) {
        let mut missing = Vec::new();
        let mut frees = Vec::new();
        for Local { array, len, .. } in locals {
            let name = format!("{}{suffix}", self.names.scratch(*array));
            let ty = local_type(self.function.scratch_info(*array).ty);
            self.line(&format!(
                "{ty} *{name} = ({ty} *)sparsec_scratch({}, {copies}, sizeof({ty}));",
                expr(self.names, len)
            ));
            missing.push(format!("!{name}"));
            frees.push(format!("free({name});"));
        }
        if missing.is_empty() {
            body(self);
            return;
        }
        let scope = self.scratch.len();
        self.scratch.extend(frees.iter().cloned());
        self.line(&format!("if ({}) {{", missing.join(" || ")));
        self.indent += 1;
        if self.may_return() {
            self.out_of_memory();
            self.indent -= 1;
            self.line("}");
            body(self);
        } else {
            self.line("__atomic_store_n(&sparsec_oom, 1, __ATOMIC_RELAXED);");
            self.indent -= 1;
            self.line("} else {");
            self.indent += 1;
            body(self);
            self.indent -= 1;
            self.line("}");
        }
        self.scratch.truncate(scope);
        for free in frees {
            self.line(&free);
        }
    }

    fn for_loop(&mut self, l: &Loop) {
        match &l.kind {
            LoopKind::Serial => self.serial_for(l),
            LoopKind::Team { .. } => self.team_loop(l),
            LoopKind::Unrolled(n) => {
                self.line(&format!("#pragma GCC unroll {n}"));
                self.plain_loop(l);
            }
            LoopKind::Parallel {
                unit: ParallelUnit::CpuThread,
                ..
            } => self.thread_loop(l),
            LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                reductions,
                locals,
                ..
            } => match gather::gathered_dot(self.function, l) {
                Some(dot) => self.gathered_dot_loop(l, &dot),
                None => self.with_scratch(locals, "", "1", |p| {
                    p.line(&format!(
                        "#pragma omp simd{}",
                        reduction_clauses(p.names, p.function, reductions)
                    ));
                    // Lanes that emit cannot leave the loop when memory runs out: the
                    // remaining iterations are skipped instead.
                    p.simd_depth += 1;
                    if l.body.iter().any(threads::contains_emit) {
                        p.stopping_loop(l);
                    } else {
                        p.plain_loop(l);
                    }
                    p.simd_depth -= 1;
                }),
            },
            LoopKind::Parallel { .. } => unreachable!("GPU loops are refused before printing"),
        }
    }

    /// A serial loop; where it is a [`analysis::RowSum`], beside its sum in registers.
    /// Where it is the sum of [`Printer::overwritten`], the sum stores its columns, and
    /// the plain loop runs after the zeroing.
    fn serial_for(&mut self, l: &Loop) {
        let zeroing = self
            .overwritten
            .take_if(|(_, sum)| std::ptr::eq(*sum, l))
            .map(|(zeroing, _)| zeroing);
        let zeroing = zeroing.as_ref();
        // Rows summed in registers only where no sparse loop around also adds into the
        // output row (MTTKRP's fibers, a few entries each, are not worth it: with the path
        // beside its loop, gcc compiled the loop 20% slower); columns already in SIMD
        // lanes only as vectors.
        let row = (self.sparse_loops == 0)
            .then(|| analysis::row_sum(l))
            .flatten()
            .and_then(|row| {
                let vector = row_sums::vector_value(self.function, self.names, &row);
                (row.columns.kind == LoopKind::Serial || vector.is_some()).then_some((row, vector))
            });
        let sparse = !matches!(l.start, Expr::Int(_));
        self.sparse_loops += usize::from(sparse);
        let plain = |this: &mut Self| {
            zeroing.iter().for_each(|z| this.stmt(z));
            this.unswitched_loop(l)
        };
        match row {
            Some((row, vector)) => {
                let store = if zeroing.is_some() { "=" } else { "+=" };
                self.if_else(
                    &self.row_sum_condition(l, &row, vector.is_some()),
                    |this| this.row_sum_loop(l, &row, vector.as_deref(), store),
                    plain,
                )
            }
            None => plain(self),
        }
        self.sparse_loops -= usize::from(sparse);
    }

    /// `body` in order; where it zeroes the output's row and then sums all of it in a
    /// row sum ([`zero_rows::overwritten_row`]), the zeroing goes with the sum's loop
    /// ([`Printer::overwritten`]).
    fn stmts(&mut self, body: &[Stmt]) {
        let overwritten = (self.sparse_loops == 0)
            .then(|| zero_rows::overwritten_row(body))
            .flatten();
        let Some(row) = overwritten else {
            body.iter().for_each(|s| self.stmt(s));
            return;
        };
        self.overwritten = Some((body[row.zeroing].clone(), std::ptr::from_ref(row.sum)));
        for (k, s) in body.iter().enumerate() {
            if k != row.zeroing {
                self.stmt(s);
            }
        }
        debug_assert!(self.overwritten.is_none(), "the row sum was printed");
    }

    /// A serial loop, as two copies when it begins with guarded hints (see
    /// `prefetch::split_hints`): the guards are tested once, not in every iteration.
    fn unswitched_loop(&mut self, l: &Loop) {
        match prefetch::split_hints(l) {
            Some(prefetch::SplitHints { any, hinted, plain }) => self.if_else(
                &expr(self.names, &any),
                |this| this.serial_loop(&hinted),
                |this| this.serial_loop(&plain),
            ),
            None => self.serial_loop(l),
        }
    }

    /// Two versions of the code, chosen at run time by `condition` (a C expression).
    fn if_else(
        &mut self,
        condition: &str,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.line(&format!("if ({condition}) {{"));
        self.indent += 1;
        then(self);
        self.indent -= 1;
        self.line("} else {");
        self.indent += 1;
        otherwise(self);
        self.indent -= 1;
        self.line("}");
    }

    /// The loop as it stands, with nothing added.
    fn plain_loop(&mut self, l: &Loop) {
        let names = self.names;
        let var = names.var(l.var);
        self.block(
            &format!(
                "for (int64_t {var} = {}; {var} < {}; {var}++)",
                expr(names, &l.start),
                expr(names, &l.end)
            ),
            &l.body,
        );
        self.line("}");
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
        self.stmts(body);
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        let names = self.names;
        match s {
            Stmt::Decl(v, e) => {
                let name = names.var(*v);
                let ty = match self.function.var(*v).ty {
                    Type::Index => "int64_t",
                    Type::Bool => "int",
                    Type::Value(v) => v.c_name(),
                };
                self.line(&format!("{ty} {name} = {};", expr(names, e)));
            }
            Stmt::Assign(v, e) => match e {
                Expr::Bin(BinOp::Add, a, b) if matches!(&**a, Expr::Var(n) if n == v) => {
                    let name = names.var(*v);
                    match &**b {
                        Expr::Int(1) => self.line(&format!("{name}++;")),
                        b => self.line(&format!("{name} += {};", expr(names, b))),
                    }
                }
                _ => self.line(&format!("{} = {};", names.var(*v), expr(names, e))),
            },
            Stmt::Store(store) => {
                let op = if store.accumulate { "+=" } else { "=" };
                self.line(&format!(
                    "{}[{}] {op} {};",
                    names.array(&store.array),
                    expr(names, &store.index),
                    expr(names, &store.value)
                ));
            }
            Stmt::For(l) => self.for_loop(l),
            Stmt::While(c, body) => {
                self.block(&format!("while ({})", expr(names, c)), body);
                self.line("}");
            }
            Stmt::Atomic(inner) => {
                self.line("#pragma omp atomic");
                self.stmt(inner);
            }
            Stmt::If(c, then, otherwise) => {
                self.block(&format!("if ({})", expr(names, c)), then);
                let mut rest = otherwise.as_slice();
                loop {
                    if rest.is_empty() {
                        self.line("}");
                        break;
                    }
                    if let Some(Stmt::If(c, then, otherwise)) = single_if(rest) {
                        self.block(&format!("}} else if ({})", expr(names, c)), then);
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
                let full = format!(
                    "sparsec_out->len == sparsec_out->cap && !sparsec_grow(sparsec_out, {n})"
                );
                if self.may_return() {
                    // Serial code stops at once: the rest of its loops may be billions of
                    // iterations.
                    self.line(&format!("if ({full}) {{"));
                    self.indent += 1;
                    self.out_of_memory();
                    self.indent -= 1;
                } else {
                    // Once a thread has run out of memory, no thread tries to grow its
                    // buffer again (each try is a system call).
                    self.line(&format!(
                        "if (__atomic_load_n(&sparsec_oom, __ATOMIC_RELAXED) || ({full})) {{"
                    ));
                    self.line("  __atomic_store_n(&sparsec_oom, 1, __ATOMIC_RELAXED);");
                }
                self.line("} else {");
                self.indent += 1;
                for (k, c) in coords.iter().enumerate() {
                    self.line(&format!(
                        "sparsec_out->coords[sparsec_out->len * {n} + {k}] = {};",
                        expr(names, c)
                    ));
                }
                self.line(&format!(
                    "sparsec_out->vals[sparsec_out->len++] = {};",
                    expr(names, value)
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
            Stmt::OrderTouched {
                list,
                len,
                flags,
                marks,
                width,
            } => self.line(&format!(
                "sparsec_order_touched({}, {}, {}, {}, {});",
                names.scratch(*list),
                expr(names, len),
                names.scratch(*flags),
                names.scratch(*marks),
                expr(names, width)
            )),
            Stmt::Prefetch { array, index } => self.line(&format!(
                "__builtin_prefetch(&{}[{}]);",
                names.array(array),
                expr(names, index)
            )),
            Stmt::Barrier | Stmt::Launch(_) => {
                unreachable!("barriers and launches are refused before printing (no GPU blocks)")
            }
        }
    }
}

pub(super) fn local_type(ty: LocalType) -> &'static str {
    match ty {
        LocalType::Value => "double",
        LocalType::Index => "int64_t",
        LocalType::Flag => "char",
    }
}

/// The lone `if` of an `else` branch (through empty nesting), printed as `else if`.
fn single_if(stmts: &[Stmt]) -> Option<&Stmt> {
    match stmts {
        [s @ Stmt::If(..)] => Some(s),
        [Stmt::Block(inner)] => single_if(inner),
        _ => None,
    }
}
