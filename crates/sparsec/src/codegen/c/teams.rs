//! Team loops ([`LoopKind::Team`]): one OpenMP parallel region around a serial loop,
//! whose thread loops share their iterations as orphaned `omp for`s and whose other
//! statements run in `omp single`s, on a team sized by how the loop ran before.

use super::expr::expr;
use super::Printer;
use crate::ir::{Loop, LoopKind, ParallelUnit, Stmt};

impl Printer<'_> {
    /// A serial loop run by one team: the team starts once, not once per thread loop
    /// inside. Its size comes from `sparsec_team` over the `work` the team shares, and
    /// the run is recorded as taking one thread's share of that work plus all of the
    /// rest (`all - work`, which runs on one thread), so that serial stretches do not
    /// count as the team's lag.
    pub(super) fn team_loop(&mut self, l: &Loop) {
        let LoopKind::Team { work, all } = &l.kind else {
            unreachable!("a team loop")
        };
        let names = self.names;
        self.paces += 1;
        let pace = format!("sparsec_pace{}", self.paces - 1);
        self.line("{");
        self.indent += 1;
        self.line(&format!("static sparsec_pace {pace};"));
        self.line(&format!(
            "const int64_t sparsec_work = {};",
            expr(names, work)
        ));
        self.line(&format!(
            "const int64_t sparsec_all = {};",
            expr(names, all)
        ));
        self.line(&format!(
            "sparsec_pace_renew(&{pace}, sparsec_work, sparsec_all);"
        ));
        self.line(
            "const int64_t sparsec_start = sparsec_pace_start(sparsec_threads, sparsec_work);",
        );
        self.line(&format!(
            "const int64_t sparsec_nt = sparsec_team(&{pace}, sparsec_threads, sparsec_work, \
             sparsec_start);"
        ));
        self.line("int64_t sparsec_done = 0;");
        let var = names.var(l.var);
        let head = format!(
            "for (int64_t {var} = {}; {var} < {}; {var}++) {{",
            expr(names, &l.start),
            expr(names, &l.end)
        );
        self.line("if (sparsec_nt > 1) {");
        self.indent += 1;
        self.parallel_depth += 1;
        self.line("#pragma omp parallel num_threads(sparsec_nt)");
        self.line("{");
        self.indent += 1;
        self.line(&head);
        self.indent += 1;
        self.team_stmts(&l.body);
        self.indent -= 1;
        self.line("}");
        self.line(
            "if (omp_get_thread_num() == 0) sparsec_done = sparsec_pace_clock(sparsec_start);",
        );
        self.indent -= 1;
        self.line("}");
        self.parallel_depth -= 1;
        // One thread needs no region (starting one costs a microsecond, as much as a
        // whole sweep of a small matrix): the loop as serial code.
        self.indent -= 1;
        self.line("} else {");
        self.indent += 1;
        self.line(&head);
        self.indent += 1;
        self.stmts(&serial_copy(&l.body));
        self.indent -= 1;
        self.line("}");
        self.line("sparsec_done = sparsec_pace_clock(sparsec_start);");
        self.indent -= 1;
        self.line("}");
        self.line(&format!(
            "sparsec_pace_record(&{pace}, sparsec_nt, sparsec_nt > 1 ? sparsec_work + \
             (sparsec_all - sparsec_work) * sparsec_nt : sparsec_all, sparsec_start, \
             sparsec_done, sparsec_pace_clock(sparsec_start));"
        ));
        self.indent -= 1;
        self.line("}");
    }

    /// Statements inside a team: thread loops share their iterations; declarations and
    /// the conditions of `if`s run on every thread (a branch that does nothing then costs
    /// no barrier: a level inside a run of narrow ones); each run of other statements
    /// runs on one thread.
    fn team_stmts(&mut self, body: &[Stmt]) {
        let mut alone: Vec<Stmt> = Vec::new();
        for s in body {
            match s {
                Stmt::Decl(..) => {
                    // What runs alone before may be what the declaration reads.
                    self.single(&std::mem::take(&mut alone));
                    self.stmt(s);
                }
                Stmt::For(l) if is_thread_loop(l) => {
                    self.single(&std::mem::take(&mut alone));
                    self.line("#pragma omp for schedule(static)");
                    self.plain_loop(l);
                }
                Stmt::If(c, then, otherwise) => {
                    self.single(&std::mem::take(&mut alone));
                    self.line(&format!("if ({}) {{", expr(self.names, c)));
                    self.indent += 1;
                    self.team_stmts(then);
                    self.indent -= 1;
                    if !otherwise.is_empty() {
                        self.line("} else {");
                        self.indent += 1;
                        self.team_stmts(otherwise);
                        self.indent -= 1;
                    }
                    self.line("}");
                }
                Stmt::Block(inner) if has_thread_loop(s) => {
                    self.single(&std::mem::take(&mut alone));
                    self.line("{");
                    self.indent += 1;
                    self.team_stmts(inner);
                    self.indent -= 1;
                    self.line("}");
                }
                _ => alone.push(s.clone()),
            }
        }
        self.single(&alone);
    }

    /// `body` on one thread of the team, the others waiting at its end.
    fn single(&mut self, body: &[Stmt]) {
        if body.is_empty() {
            return;
        }
        self.line("#pragma omp single");
        self.line("{");
        self.indent += 1;
        self.stmts(body);
        self.indent -= 1;
        self.line("}");
    }
}

/// `body` with its thread loops serial.
fn serial_copy(body: &[Stmt]) -> Vec<Stmt> {
    let mut body = body.to_vec();
    fn unthread(stmts: &mut [Stmt]) {
        for s in stmts {
            if let Stmt::For(l) = s {
                if is_thread_loop(l) {
                    l.kind = LoopKind::Serial;
                }
            }
            for inner in crate::ir::visit::children_mut(s) {
                unthread(inner);
            }
        }
    }
    unthread(&mut body);
    body
}

/// A loop over CPU threads.
fn is_thread_loop(l: &Loop) -> bool {
    matches!(
        l.kind,
        LoopKind::Parallel {
            unit: ParallelUnit::CpuThread,
            ..
        }
    )
}

/// True where `s` holds a loop over CPU threads (inside a team, the verifier allows them
/// only directly in its body, `if`s and blocks).
fn has_thread_loop(s: &Stmt) -> bool {
    let mut found = false;
    crate::ir::visit::walk_stmts(std::slice::from_ref(s), &mut |s| {
        found |= matches!(s, Stmt::For(l) if is_thread_loop(l));
    });
    found
}
