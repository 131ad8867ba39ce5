//! Thread loops as OpenMP teams: plain `parallel for`, a parallel region with per-thread
//! scratch and entry buffers, or contiguous blocks of equal work on a team sized by how
//! the loop ran before (`sparsec_pace`, in the runtime's `team` section).

use super::expr::{atom, expr};
use super::{local_type, Printer};
use crate::ir::analysis;
use crate::ir::{
    Expr, Function, Local, Loop, LoopKind, Mapping, Names, OmpSchedule, ParallelUnit, Reduction,
    Stmt,
};

impl Printer<'_> {
    /// A loop over CPU threads.
    pub(super) fn thread_loop(&mut self, l: &Loop) {
        let LoopKind::Parallel {
            mapping: Mapping::Cpu { schedule, chunk },
            reductions,
            locals,
            ..
        } = &l.kind
        else {
            unreachable!("a thread loop is parallel on the CPU")
        };
        let names = self.names;
        let (start, end, body) = (&l.start, &l.end, &l.body);
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
        let reductions = reduction_clauses(names, self.function, reductions);
        self.parallel_depth += 1;
        if locals.is_empty() && !emits {
            self.line(&format!(
                "#pragma omp parallel for {schedule} {team}{reductions}"
            ));
            self.plain_loop(l);
        } else {
            // Each thread gets its own copy of the scratch arrays.
            self.parallel_depth -= 1;
            self.with_scratch(locals, "_all", "sparsec_threads", |p| {
                p.parallel_depth += 1;
                p.line(&format!("#pragma omp parallel {team}"));
                p.line("{");
                p.indent += 1;
                p.thread_shares(locals, emits, "(int64_t)omp_get_thread_num()");
                p.line(&format!("#pragma omp for {schedule}{reductions}"));
                if emits {
                    p.stopping_loop(l);
                } else {
                    p.plain_loop(l);
                }
                p.indent -= 1;
                p.line("}");
                p.parallel_depth -= 1;
            });
            self.parallel_depth += 1;
        }
        self.parallel_depth -= 1;
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
        // Blocks may be claimed in any order only where neither their order (emits) nor
        // the order of partial sums (reductions) matters.
        let claimed = !dynamic && !emits && reductions.is_empty();
        if dynamic {
            self.line(&format!(
                "const int64_t sparsec_chunk = ({end} - {start}) / (sparsec_nt * 32) + 1;"
            ));
        } else if claimed {
            self.line(
                "const int sparsec_claimed = sparsec_nt > 1 && sparsec_work >= SPARSEC_CLAIMED_WORK;",
            );
            self.line("int64_t sparsec_next = 0;");
        }
        self.parallel_depth -= 1;
        self.with_scratch(locals, "_all", "sparsec_nt", |p| {
            p.parallel_depth += 1;
            p.line(&format!(
                "#pragma omp parallel num_threads(sparsec_nt) if(sparsec_nt > 1){}",
                reduction_clauses(names, p.function, reductions)
            ));
            p.line("{");
            p.indent += 1;
            p.line("const int64_t sparsec_t = omp_get_thread_num();");
            p.thread_shares(locals, emits, "sparsec_t");
            if dynamic {
                p.line("#pragma omp for schedule(dynamic, sparsec_chunk) nowait");
                p.block(
                    &format!("for (int64_t {var} = {start}; {var} < {end}; {var}++)"),
                    &l.body,
                );
            } else {
                p.balanced_blocks(l, var, &work, (&start, &end), claimed);
            }
            p.line("}");
            if pace.is_some() {
                p.line("if (sparsec_t == 0) sparsec_done = sparsec_pace_clock(sparsec_start);");
            }
            p.indent -= 1;
            p.line("}");
            if let Some(pace) = &pace {
                p.line(&format!(
                    "sparsec_pace_record(&{pace}, sparsec_nt, sparsec_work, sparsec_start, \
                     sparsec_done, sparsec_pace_clock(sparsec_start));"
                ));
            }
            p.parallel_depth -= 1;
        });
        self.parallel_depth += 1;
        self.indent -= 1;
        self.line("}");
    }

    /// A team's (or an `omp simd`) loop whose iterations emit entries: once a thread has
    /// run out of memory for them, every thread skips its remaining iterations (the loop
    /// cannot stop early).
    pub(super) fn stopping_loop(&mut self, l: &Loop) {
        let var = self.names.var(l.var);
        self.line(&format!(
            "for (int64_t {var} = {}; {var} < {}; {var}++) {{",
            expr(self.names, &l.start),
            expr(self.names, &l.end)
        ));
        self.indent += 1;
        self.line("if (__atomic_load_n(&sparsec_oom, __ATOMIC_RELAXED)) continue;");
        self.stmts(&l.body);
        self.indent -= 1;
        self.line("}");
    }

    /// Inside a team: this thread's share of the scratch arrays allocated for the whole
    /// team (`NAME_all`), and its own entry buffer when the loop emits; `thread` is the C
    /// expression of its number.
    fn thread_shares(&mut self, locals: &[Local], emits: bool, thread: &str) {
        for Local { array, len, .. } in locals {
            let name = self.names.scratch(*array);
            let ty = local_type(self.function.scratch_info(*array).ty);
            self.line(&format!(
                "{ty} *{name} = {name}_all + {thread} * ({});",
                expr(self.names, len)
            ));
        }
        if emits {
            self.line(&format!("sparsec_buffer *sparsec_out = out + {thread};"));
        }
    }

    /// Each thread's block of about equal `work`, found by binary search, and the loop
    /// over it. Where `claimed`, the kernel tests `sparsec_claimed` (large loops, see
    /// `SPARSEC_CLAIMED_WORK`): the work is then cut into `SPARSEC_CLAIMS` blocks a thread,
    /// which threads claim from the shared `sparsec_next` as they finish.
    fn balanced_blocks(
        &mut self,
        l: &Loop,
        var: &str,
        work: &str,
        (start, end): (&str, &str),
        claimed: bool,
    ) {
        if claimed {
            self.line(
                "const int64_t sparsec_blocks = omp_get_num_threads() * \
                 (sparsec_claimed ? SPARSEC_CLAIMS : 1);",
            );
            let next = "sparsec_claimed ? __atomic_fetch_add(&sparsec_next, 1, __ATOMIC_RELAXED)";
            self.line(&format!(
                "for (int64_t sparsec_b = {next} : sparsec_t; sparsec_b < sparsec_blocks; \
                 sparsec_b = {next} : sparsec_blocks) {{"
            ));
            self.indent += 1;
        } else {
            self.line(
                "const int64_t sparsec_blocks = omp_get_num_threads(), sparsec_b = sparsec_t;",
            );
        }
        self.line("int64_t sparsec_ends[2];");
        self.line("for (int64_t sparsec_k = 0; sparsec_k < 2; sparsec_k++) {");
        self.indent += 1;
        self.line(
            "const int64_t sparsec_goal = sparsec_w0 + sparsec_work * (sparsec_b + sparsec_k) \
             / sparsec_blocks;",
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
        if claimed {
            self.indent -= 1;
            self.line("}");
        }
    }
}

/// The work before each iteration of a thread loop whose blocks are balanced by work.
pub(super) fn balanced_work(l: &Loop) -> Option<analysis::Work> {
    match l.kind {
        LoopKind::Parallel {
            unit: ParallelUnit::CpuThread,
            mapping:
                Mapping::Cpu {
                    schedule: OmpSchedule::Balanced,
                    ..
                },
            ..
        } => analysis::work_before(l),
        _ => None,
    }
}

pub(super) fn contains_emit(s: &Stmt) -> bool {
    match s {
        Stmt::Emit { .. } => true,
        Stmt::For(Loop { body, .. }) | Stmt::While(_, body) | Stmt::Block(body) => {
            body.iter().any(contains_emit)
        }
        Stmt::If(_, a, b) => a.iter().chain(b).any(contains_emit),
        _ => false,
    }
}

pub(super) fn reduction_clauses(
    names: &Names,
    function: &Function,
    reductions: &[Reduction],
) -> String {
    let op = match function.reduction_operator {
        Some(_) => REDUCE,
        None => "+",
    };
    reductions
        .iter()
        .map(|r| match r {
            Reduction::Scalar(v) => format!(" reduction({op}:{})", names.var(*v)),
            Reduction::Array(a, len) => {
                format!(
                    " reduction({op}:{}[0:{}])",
                    names.array(a),
                    expr(names, len)
                )
            }
        })
        .collect()
}

/// The OpenMP reduction a kernel declares for its [`crate::ir::ReductionOperator`].
const REDUCE: &str = "sparsec_reduce";

/// The declaration of the kernel's OpenMP reduction, if it has a
/// [`crate::ir::ReductionOperator`]:
/// a function computing `acc ⊕ term`, and the reduction whose private copies start at the
/// identity and combine through it, for both value types.
pub(super) fn reduction_declaration(names: &Names, function: &Function) -> String {
    let Some(op) = &function.reduction_operator else {
        return String::new();
    };
    format!(
        "static inline double {REDUCE}_op(double {acc}, double {term}) {{\n  return {combined};\n}}\n\
         #pragma omp declare reduction({REDUCE} : double, float : \
         omp_out = {REDUCE}_op(omp_out, omp_in)) initializer(omp_priv = {identity})\n\n",
        acc = names.var(op.acc),
        term = names.var(op.term),
        combined = expr(names, &op.combined),
        identity = expr(names, &Expr::Float(op.identity)),
    )
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
