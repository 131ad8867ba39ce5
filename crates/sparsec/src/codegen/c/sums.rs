//! Sum reductions in serial loops: the only arithmetic the C backend reassociates.

use super::expr::expr;
use super::gathers::leading_hints;
use super::Printer;
use crate::ir::analysis::{self, SumReduction};
use crate::ir::{Expr, Loop, Stmt, Type, Var};

impl Printer<'_> {
    /// A serial loop, its sum reduction (if it is one) printed for speed.
    pub(super) fn serial_loop(&mut self, l: &Loop) {
        let names = self.names;
        match analysis::sum_reduction(self.function, l) {
            Some(SumReduction {
                flag: Some(flag), ..
            }) => {
                let sum_only = self.flag_set_ahead(l, flag);
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
                self.plain_loop(l);
            }
            // A loop that prefetches what it gathers waits on its loads, not on its
            // additions (see `prefetch::prefetch_gathered_elements`).
            Some(SumReduction { accumulator, .. }) if leading_hints(l).is_empty() => {
                self.split_sum(l, accumulator)
            }
            _ => self.plain_loop(l),
        }
    }

    /// A sum over an indirect loop (`acc += v[p] * x[idx[p]]`) as four partial sums, four
    /// iterations at a time: the additions into `acc` no longer wait for one another, and
    /// the loads stay scalar (gathers, which gcc would use to vectorise the loop, are slower
    /// than scalar loads on AMD Zen and on Intel cores before Ice Lake).
    pub(super) fn split_sum(&mut self, l: &Loop, accumulator: Var) {
        self.open_cursor(l);
        self.split_sum_from_cursor(l, accumulator);
        self.indent -= 1;
        self.line("}");
    }

    /// The loops of [`Printer::split_sum`], from where the cursor of [`Printer::open_cursor`]
    /// stands to its end, adding into `accumulator`.
    pub(super) fn split_sum_from_cursor(&mut self, l: &Loop, accumulator: Var) {
        let names = self.names;
        let var = names.var(l.var);
        let acc = names.var(accumulator);
        let ty = match self.function.var(accumulator).ty {
            Type::Value(v) => v.c_name(),
            other => unreachable!("a sum into a {other:?} variable"),
        };
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
        // The partial sums join before the last iterations, not after them: a triangular
        // solve's last terms read the rows just solved (x[i - 1]), and its next row waits
        // on this one's sum, so joining after them would put two more additions on the
        // chain from one row to the next.
        self.line(&format!(
            "{acc} += (sparsec_acc1 + sparsec_acc2) + sparsec_acc3;"
        ));
        self.line("for (; sparsec_q < sparsec_end; sparsec_q++) {");
        self.indent += 1;
        self.iteration(var, "sparsec_q", &l.body);
        self.indent -= 1;
        self.line("}");
    }

    /// Print the setting of `flag`, which every iteration of `l` sets, once, when `l`
    /// runs at all, and return `l` without it: a plain sum.
    pub(super) fn flag_set_ahead(&mut self, l: &Loop, flag: Var) -> Loop {
        let names = self.names;
        self.line(&format!(
            "if ({} < {}) {} = {};",
            expr(names, &l.start),
            expr(names, &l.end),
            names.var(flag),
            expr(names, &Expr::Bool(true))
        ));
        Loop {
            body: analysis::without_flag(&l.body, flag),
            ..l.clone()
        }
    }

    /// Open a block walking `l`'s range by hand: `sparsec_q` from its start to
    /// `sparsec_end`, its end read once.
    pub(super) fn open_cursor(&mut self, l: &Loop) {
        self.line("{");
        self.indent += 1;
        self.line(&format!(
            "const int64_t sparsec_end = {};",
            expr(self.names, &l.end)
        ));
        self.line(&format!(
            "int64_t sparsec_q = {};",
            expr(self.names, &l.start)
        ));
    }

    /// One iteration of a loop's body, with the loop's variable `var` declared as `value`.
    /// The empty `asm` makes the variable opaque to the compiler, so that the iteration's
    /// loads stay scalar (see [`Printer::split_sum`]).
    fn iteration(&mut self, var: &str, value: &str, body: &[Stmt]) {
        self.line(&format!("int64_t {var} = {value};"));
        self.line(&format!("__asm__(\"\" : \"+r\"({var}));"));
        body.iter().for_each(|s| self.stmt(s));
    }
}
