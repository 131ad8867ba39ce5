//! Rows of a dense output summed in registers (see `analysis::row_sum`): SpMM's
//! `C(i,:) += A(i,k) * B(k,:)` for every `k` of row `i` loads and stores the whole row of
//! `C` once per `k`. Summing `ROW_BLOCK` columns at a time over all of row `i`'s `k` in
//! local accumulators, which the compiler keeps in registers, and adding them to `C`
//! once, ran 2-2.5x faster in a C loop of this shape (5000 rows of 60 entries, 32
//! columns: 2.66 ms against 1.05 ms). In sparsec's SpMM with 32 columns, one thread:
//! bcsstk16 (59 entries a row) 2.67 to 2.23 ms, EX5 (45) 2.80 to 2.34 ms, bcsstk13 (32)
//! 0.77 to 0.58 ms. Each block of columns walks the row again, which short rows do not
//! repay: with rows of 16 entries and more summed so, cage10 (13 a row) took 1.05 ms
//! against 0.89 ms, hence [`MIN_ROW_LENGTH`]. Loops inside another sparse loop that
//! adds into the same output row (MTTKRP's fibers) keep the plain form: their rows are
//! short, and with the path printed beside their loop gcc compiled that loop 20% slower
//! (18.9 to 22.9 ms on a uniform 1000^3 tensor, rank 32).

use super::expr::expr;
use super::Printer;
use crate::ir::analysis::RowSum;
use crate::ir::Loop;

/// The fewest entries a row needs to be summed in registers.
pub(super) const MIN_ROW_LENGTH: usize = 32;

/// Columns summed together: eight `double`s are two AVX2 registers, and more
/// accumulators than this spilled in the same experiment (16: 1.56 ms).
const ROW_BLOCK: usize = 8;

impl Printer<'_> {
    /// Print `l`, a [`RowSum`], one block of columns at a time.
    pub(super) fn row_sum_loop(&mut self, l: &Loop, row: &RowSum) {
        let names = self.names;
        let ty = self.function.operands[0].values.c_name();
        let end = expr(names, &row.columns.end);
        self.line("{");
        self.indent += 1;
        self.line(&format!(
            "int64_t sparsec_jb = {};",
            expr(names, &row.columns.start)
        ));
        for (width, step) in [(ROW_BLOCK, ROW_BLOCK), (1, 1)] {
            self.line(&format!(
                "for (; sparsec_jb + {width} <= {end}; sparsec_jb += {step}) {{"
            ));
            self.indent += 1;
            let sums: Vec<String> = (0..width).map(|c| format!("sparsec_r{c}")).collect();
            let zeros: Vec<String> = sums.iter().map(|s| format!("{s} = 0")).collect();
            self.line(&format!("{ty} {};", zeros.join(", ")));
            let var = names.var(l.var);
            self.line(&format!(
                "for (int64_t {var} = {}; {var} < {}; {var}++) {{",
                expr(names, &l.start),
                expr(names, &l.end)
            ));
            self.indent += 1;
            row.hints
                .iter()
                .chain(&row.decls)
                .for_each(|s| self.stmt(s));
            for (c, sum) in sums.iter().enumerate() {
                self.column_block(row, c, true, |p| {
                    p.line(&format!("{sum} += {};", expr(names, &row.store.value)))
                });
            }
            self.indent -= 1;
            self.line("}");
            for (c, sum) in sums.iter().enumerate() {
                // The store's index reads nothing the loop declares.
                self.column_block(row, c, false, |p| {
                    p.line(&format!(
                        "{}[{}] += {sum};",
                        names.array(&row.store.array),
                        expr(names, &row.store.index)
                    ))
                });
            }
            self.indent -= 1;
            self.line("}");
        }
        self.indent -= 1;
        self.line("}");
    }

    /// A scope where the column variable is `sparsec_jb + c` (and, with `declared`, the
    /// column loop's declarations hold), around what `inner` prints.
    fn column_block(
        &mut self,
        row: &RowSum,
        c: usize,
        declared: bool,
        inner: impl FnOnce(&mut Self),
    ) {
        self.line("{");
        self.indent += 1;
        self.line(&format!(
            "const int64_t {} = sparsec_jb + {c};",
            self.names.var(row.columns.var)
        ));
        if declared {
            row.column_decls.iter().for_each(|s| self.stmt(s));
        }
        inner(self);
        self.indent -= 1;
        self.line("}");
    }
}
