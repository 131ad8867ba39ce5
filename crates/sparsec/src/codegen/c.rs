//! The C99 backend.
//!
//! A kernel is one function `int sparsec_kernel(void **arrays, const int64_t *params,
//! sparsec_buffer *out)`. Every array and scalar the body reads is unpacked into a named
//! local at the top (`A2_pos`, `A1_size`, `i_size`), in the order given by the function's
//! [`Signature`], which the runtime follows when it passes storage. Index arrays are `int64_t`; values are `double` or `float` per tensor. The
//! runtime helpers come from [`super::runtime`], only those the kernel calls.

use crate::ir::analysis::{self, SumReduction};
use crate::ir::{Loop, Var};
use std::collections::BTreeSet;
use std::fmt::Write;

use super::abi::{assumption_status, check_units, BackendError};
use super::runtime::{self, Section};
use crate::ir::{
    visit, ArrayRef, BinOp, Element, Expr, Function, Helper, Local, LocalType, LoopKind, Names,
    OmpSchedule, OperandId, OutputMode, ParallelUnit, Reduction, ScalarArg, Signature, Stmt, Type,
};

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

/// Print a kernel.
pub fn emit(function: &Function) -> Result<CKernel, BackendError> {
    check_units(function, "C")?;
    let signature = function.signature();
    let names = Names::new(function, &signature);

    let (sections, helpers) = runtime_used(function);
    let mut out = runtime::kernel_prelude(&sections, &helpers);
    let body_offset = out.len();
    let order = match function.output {
        OutputMode::Emit { order } => order,
        OutputMode::Dense { .. } | OutputMode::Rows => 0,
    };
    let _ = writeln!(
        out,
        "int {ENTRY}(void **arrays, const int64_t *params, sparsec_buffer *out) {{"
    );
    let _ = writeln!(out, "  (void)arrays; (void)params; (void)out;");
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
        let _ = writeln!(
            out,
            "  {constness}{ty} *restrict {name} = ({constness}{ty} *)arrays[{n}];"
        );
    }
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
        paces: 0,
    };
    printer.allocate(&function.locals, "", "1");
    for s in &function.body {
        printer.stmt(s);
    }
    printer.release(&function.locals, "");
    out.push_str("  return sparsec_oom ? -1 : 0;\n}\n");
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
        Stmt::For(l) if balanced_work(l).is_some() => {
            sections.insert(Section::Team);
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
    /// Balanced loops printed so far, each with its own `sparsec_pace`.
    paces: usize,
}

impl Printer<'_> {
    /// Allocate zeroed scratch arrays, `copies` times each.
    fn allocate(&mut self, locals: &[Local], suffix: &str, copies: &str) {
        for Local { array, len } in locals {
            let name = self.names.scratch(*array);
            let ty = local_type(self.function.scratch_info(*array).ty);
            self.line(&format!(
                "{ty} *{name}{suffix} = ({ty} *)calloc((size_t)({}) * (size_t)({copies}) + 1, \
                 sizeof({ty}));",
                expr(self.names, len)
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
        for Local { array, .. } in locals {
            let name = self.names.scratch(*array);
            self.line(&format!("free({name}{suffix});"));
        }
    }

    fn for_loop(&mut self, l: &Loop) {
        let names = self.names;
        let var = names.var(l.var);
        let (start, end, body, kind) = (&l.start, &l.end, &l.body, &l.kind);
        let head = format!(
            "for (int64_t {var} = {}; {var} < {}; {var}++)",
            expr(names, start),
            expr(names, end)
        );
        let plain = |p: &mut Self| {
            p.block(&head, body);
            p.line("}");
        };
        match kind {
            LoopKind::Serial => match analysis::sum_reduction(self.function, l) {
                Some(SumReduction {
                    flag: Some(flag), ..
                }) => {
                    // The flag every iteration sets is set once, when the loop runs; the
                    // loop left is a plain sum.
                    self.line(&format!(
                        "if ({} < {}) {} = {};",
                        expr(names, start),
                        expr(names, end),
                        names.var(flag),
                        expr(names, &Expr::Bool(true))
                    ));
                    let sum_only = Loop {
                        body: without_flag(&l.body, flag),
                        ..l.clone()
                    };
                    self.for_loop(&sum_only);
                }
                Some(SumReduction {
                    accumulator,
                    indirect: false,
                    ..
                }) => {
                    // Only this sum is reassociated: the loop's lanes add into private
                    // partial sums, combined when it ends.
                    self.line(&format!(
                        "#pragma omp simd reduction(+:{})",
                        names.var(accumulator)
                    ));
                    plain(self);
                }
                Some(SumReduction { accumulator, .. }) => self.split_sum(l, accumulator),
                None => plain(self),
            },
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
                if let Some(work) = balanced_work(l) {
                    self.parallel_depth += 1;
                    self.balanced_loop(l, &work, reductions, locals, emits);
                    self.parallel_depth -= 1;
                    return;
                }
                let schedule = if emits {
                    "schedule(static)".to_string()
                } else {
                    omp_schedule(*schedule, *chunk)
                };
                let team = team_clauses(names, start, end, *chunk);
                let reductions = reduction_clauses(names, reductions);
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
                    for Local { array, len } in locals {
                        let name = self.names.scratch(*array);
                        let ty = local_type(self.function.scratch_info(*array).ty);
                        self.line(&format!(
                            "{ty} *{name} = {name}_all + (int64_t)omp_get_thread_num() * ({});",
                            expr(names, len)
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
                    reduction_clauses(names, reductions)
                ));
                plain(self);
                self.release(locals, "");
            }
            LoopKind::Parallel { .. } => unreachable!("GPU loops are refused before printing"),
        }
    }

    /// A thread loop in contiguous blocks of about equal `work` (an expression of the
    /// loop's variable: the work before that iteration), one per thread, on as many threads
    /// as the whole work keeps busy. Each thread finds its block's ends by binary search,
    /// so the blocks follow thread order (threads' entry buffers then concatenate in order).
    ///
    /// When the work is only estimated ([`analysis::Work::estimated`]: SpGEMM, whose
    /// products may crowd into a few rows) and neither the order of the blocks (no emits)
    /// nor the order of partial sums (no reductions) matters, the threads instead take
    /// chunks of iterations as they finish, about 32 per thread: the team's size still
    /// follows the estimate, but no thread waits on another's crowded rows.
    fn balanced_loop(
        &mut self,
        l: &Loop,
        work: &analysis::Work,
        reductions: &[Reduction],
        locals: &[Local],
        emits: bool,
    ) {
        let names = self.names;
        let var = names.var(l.var);
        let dynamic = !emits && reductions.is_empty() && work.estimated;
        let work = expr(names, &work.before);
        let (start, end) = (expr(names, &l.start), expr(names, &l.end));
        // The team follows how the loop ran before (`sparsec_pace`), except where threads'
        // partial sums are combined: their rounding must not change from run to run.
        let pace = reductions.is_empty().then(|| {
            self.paces += 1;
            format!("sparsec_pace{}", self.paces - 1)
        });
        self.line("{");
        self.indent += 1;
        if let Some(pace) = &pace {
            self.line(&format!("static sparsec_pace {pace};"));
        }
        self.line("int64_t sparsec_w0, sparsec_w1;");
        self.line(&format!(
            "{{ const int64_t {var} = {start}; sparsec_w0 = {work}; }}"
        ));
        self.line(&format!(
            "{{ const int64_t {var} = {end}; sparsec_w1 = {work}; }}"
        ));
        self.line("const int64_t sparsec_work = sparsec_w1 - sparsec_w0;");
        match &pace {
            Some(pace) => {
                self.line(
                    "const int64_t sparsec_start = sparsec_pace_start(sparsec_threads, \
                     sparsec_work);",
                );
                self.line(&format!(
                    "const int64_t sparsec_nt = sparsec_team(&{pace}, sparsec_threads, \
                     sparsec_work, sparsec_start);"
                ));
                self.line("int64_t sparsec_done = 0;");
            }
            None => self.line(
                "const int64_t sparsec_nt = sparsec_team(0, sparsec_threads, sparsec_work, 0);",
            ),
        }
        if dynamic {
            self.line(&format!(
                "const int64_t sparsec_chunk = ({end} - {start}) / (sparsec_nt * 32) + 1;"
            ));
        }
        self.parallel_depth -= 1;
        self.allocate(locals, "_all", "sparsec_nt");
        self.parallel_depth += 1;
        self.line(&format!(
            "#pragma omp parallel num_threads(sparsec_nt) if(sparsec_nt > 1){}",
            reduction_clauses(names, reductions)
        ));
        self.line("{");
        self.indent += 1;
        self.line("const int64_t sparsec_t = omp_get_thread_num();");
        for Local { array, len } in locals {
            let name = names.scratch(*array);
            let ty = local_type(self.function.scratch_info(*array).ty);
            self.line(&format!(
                "{ty} *{name} = {name}_all + sparsec_t * ({});",
                expr(names, len)
            ));
        }
        if emits {
            self.line("sparsec_buffer *sparsec_out = out + sparsec_t;");
        }
        if dynamic {
            self.line("#pragma omp for schedule(dynamic, sparsec_chunk) nowait");
            self.block(
                &format!("for (int64_t {var} = {start}; {var} < {end}; {var}++)"),
                &l.body,
            );
        } else {
            self.balanced_blocks(l, var, &work, (&start, &end));
        }
        self.line("}");
        if pace.is_some() {
            self.line("if (sparsec_t == 0) sparsec_done = sparsec_pace_clock(sparsec_start);");
        }
        self.indent -= 1;
        self.line("}");
        if let Some(pace) = &pace {
            self.line(&format!(
                "sparsec_pace_record(&{pace}, sparsec_nt, sparsec_work, sparsec_start, \
                 sparsec_done, sparsec_pace_clock(sparsec_start));"
            ));
        }
        self.parallel_depth -= 1;
        self.release(locals, "_all");
        self.parallel_depth += 1;
        self.indent -= 1;
        self.line("}");
    }

    /// Each thread's block of about equal `work`, found by binary search, and the loop
    /// over it.
    fn balanced_blocks(&mut self, l: &Loop, var: &str, work: &str, (start, end): (&str, &str)) {
        self.line("int64_t sparsec_ends[2];");
        self.line("for (int64_t sparsec_k = 0; sparsec_k < 2; sparsec_k++) {");
        self.indent += 1;
        self.line(
            "const int64_t sparsec_goal = sparsec_w0 + sparsec_work * (sparsec_t + sparsec_k) \
             / omp_get_num_threads();",
        );
        self.line(&format!(
            "int64_t sparsec_lo = {start}, sparsec_hi = {end};"
        ));
        self.line("while (sparsec_lo < sparsec_hi) {");
        self.indent += 1;
        self.line(&format!(
            "const int64_t {var} = sparsec_lo + (sparsec_hi - sparsec_lo) / 2;"
        ));
        self.line(&format!(
            "if ({work} < sparsec_goal) sparsec_lo = {var} + 1; else sparsec_hi = {var};"
        ));
        self.indent -= 1;
        self.line("}");
        self.line("sparsec_ends[sparsec_k] = sparsec_lo;");
        self.indent -= 1;
        self.line("}");
        self.block(
            &format!("for (int64_t {var} = sparsec_ends[0]; {var} < sparsec_ends[1]; {var}++)"),
            &l.body,
        );
    }

    /// A sum over an indirect loop (`acc += v[p] * x[idx[p]]`) as four partial sums, four
    /// iterations at a time: the additions into `acc` no longer wait for one another, and
    /// the loads stay scalar (gathers, which gcc would use to vectorise the loop, are slower
    /// than scalar loads on AMD Zen and on Intel cores before Ice Lake).
    fn split_sum(&mut self, l: &Loop, accumulator: Var) {
        let names = self.names;
        let var = names.var(l.var);
        let acc = names.var(accumulator);
        let ty = match self.function.var(accumulator).ty {
            Type::Value(v) => v.c_name(),
            other => unreachable!("a sum into a {other:?} variable"),
        };
        self.line("{");
        self.indent += 1;
        self.line(&format!(
            "const int64_t sparsec_end = {};",
            expr(names, &l.end)
        ));
        self.line(&format!("int64_t sparsec_q = {};", expr(names, &l.start)));
        self.line(&format!(
            "{ty} sparsec_acc1 = 0, sparsec_acc2 = 0, sparsec_acc3 = 0;"
        ));
        self.line("for (; sparsec_q < sparsec_end - 3; sparsec_q += 4) {");
        self.indent += 1;
        for k in 0..4 {
            self.line("{");
            self.indent += 1;
            if k > 0 {
                // This copy adds into its own partial sum, under the accumulator's name.
                self.line(&format!("{ty} {acc} = sparsec_acc{k};"));
            }
            self.iteration(var, &format!("sparsec_q + {k}"), &l.body);
            if k > 0 {
                self.line(&format!("sparsec_acc{k} = {acc};"));
            }
            self.indent -= 1;
            self.line("}");
        }
        self.indent -= 1;
        self.line("}");
        self.line("for (; sparsec_q < sparsec_end; sparsec_q++) {");
        self.indent += 1;
        self.iteration(var, "sparsec_q", &l.body);
        self.indent -= 1;
        self.line("}");
        self.line(&format!(
            "{acc} += (sparsec_acc1 + sparsec_acc2) + sparsec_acc3;"
        ));
        self.indent -= 1;
        self.line("}");
    }

    /// One iteration of a loop's body, with the loop's variable `var` declared as `value`.
    /// The empty `asm` makes the variable opaque to the compiler, so that the iteration's
    /// loads stay scalar (see [`Printer::split_sum`]).
    fn iteration(&mut self, var: &str, value: &str, body: &[Stmt]) {
        self.line(&format!("int64_t {var} = {value};"));
        self.line(&format!("__asm__(\"\" : \"+r\"({var}));"));
        body.iter().for_each(|s| self.stmt(s));
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
                self.line(&format!(
                    "if (sparsec_out->len == sparsec_out->cap && !sparsec_grow(sparsec_out, {n})) {{"
                ));
                self.line("  sparsec_oom = 1;");
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
        }
    }
}

/// The work before each iteration of a thread loop whose blocks are balanced by work.
fn balanced_work(l: &Loop) -> Option<analysis::Work> {
    match l.kind {
        LoopKind::Parallel {
            unit: ParallelUnit::CpuThread,
            schedule: OmpSchedule::Balanced,
            ..
        } => analysis::work_before(l),
        _ => None,
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
        Stmt::For(Loop { body, .. }) | Stmt::While(_, body) | Stmt::Block(body) => {
            body.iter().any(contains_emit)
        }
        Stmt::If(_, a, b) => a.iter().chain(b).any(contains_emit),
        _ => false,
    }
}

fn reduction_clauses(names: &Names, reductions: &[Reduction]) -> String {
    reductions
        .iter()
        .map(|r| match r {
            Reduction::Scalar(v) => format!(" reduction(+:{})", names.var(*v)),
            Reduction::Array(a, len) => {
                format!(" reduction(+:{}[0:{}])", names.array(a), expr(names, len))
            }
        })
        .collect()
}

fn omp_schedule(schedule: OmpSchedule, chunk: usize) -> String {
    let kind = match schedule {
        OmpSchedule::Static => "static",
        OmpSchedule::Dynamic => "dynamic",
        OmpSchedule::Guided => "guided",
        // Without a measure of each iteration's work: blocks of equal length.
        OmpSchedule::Balanced => return "schedule(static)".into(),
    };
    format!("schedule({kind}, {chunk})")
}

/// `num_threads` and `if` clauses of a thread team for a loop from `start` to `end`: a
/// loop of one chunk cannot use a second thread, so it skips the team's start-up.
fn team_clauses(names: &Names, start: &Expr, end: &Expr, chunk: usize) -> String {
    let trips = crate::ir::simplify(&(end.clone() - start.clone()));
    format!(
        "num_threads(sparsec_threads) if(sparsec_threads > 1 && {} > {chunk})",
        atom(names, &trips)
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
fn expr(names: &Names, e: &Expr) -> String {
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
        Expr::Var(v) => names.var(*v).to_string(),
        Expr::Param(p) => names.param(p).to_string(),
        Expr::Symbol(s) => unreachable!("lowering resolves every symbol ({s:?})"),
        // A narrow index widens before any arithmetic, which may exceed `int32_t`.
        Expr::Load(a, i) if names.is_narrow(a) => {
            format!("(int64_t){}[{}]", names.array(a), expr(names, i))
        }
        Expr::Load(a, i) => format!("{}[{}]", names.array(a), expr(names, i)),
        Expr::Neg(a) => format!("-{}", atom(names, a)),
        Expr::Not(a) => format!("!{}", atom(names, a)),
        Expr::Bin(BinOp::Min, a, b) => {
            format!("sparsec_min({}, {})", expr(names, a), expr(names, b))
        }
        Expr::Bin(BinOp::Max, a, b) => {
            format!("sparsec_max({}, {})", expr(names, a), expr(names, b))
        }
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
            format!("{} {sym} {}", atom(names, a), atom(names, b))
        }
        Expr::Select(c, a, b) => format!(
            "({} ? {} : {})",
            expr(names, c),
            expr(names, a),
            expr(names, b)
        ),
        Expr::Call(helper, array, args) => {
            let args: Vec<String> = args.iter().map(|a| expr(names, a)).collect();
            format!(
                "{}({}, {})",
                helper.name,
                names.array(array),
                args.join(", ")
            )
        }
    }
}

fn atom(names: &Names, e: &Expr) -> String {
    match e {
        Expr::Bin(op, ..) if !matches!(op, BinOp::Min | BinOp::Max) => {
            format!("({})", expr(names, e))
        }
        Expr::Neg(_) => format!("({})", expr(names, e)),
        Expr::Float(v) if *v < 0.0 => format!("({})", expr(names, e)),
        Expr::Int(v) if *v < 0 => format!("({v})"),
        _ => expr(names, e),
    }
}

/// `body` without its statements setting `flag` (a sum reduction's body: declarations,
/// assignments and blocks).
fn without_flag(body: &[Stmt], flag: Var) -> Vec<Stmt> {
    body.iter()
        .filter(|s| !matches!(s, Stmt::Assign(v, Expr::Bool(true)) if *v == flag))
        .map(|s| match s {
            Stmt::Block(inner) => Stmt::Block(without_flag(inner, flag)),
            other => other.clone(),
        })
        .collect()
}
