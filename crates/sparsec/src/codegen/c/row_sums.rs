//! Rows of a dense output summed in registers (see `analysis::row_sum`): SpMM's
//! `C(i,:) += A(i,k) * B(k,:)` for every `k` of row `i` loads and stores the whole row of
//! `C` once per `k`. Instead, `ROW_BLOCK` columns at a time are summed over all of row
//! `i`'s `k` in a local array, updated by one `omp simd` loop over the block's columns (a
//! vector operation), and added to `C` once; the columns left over go eight and then one
//! at a time. In sparsec's SpMM with 32 columns, one thread, against the plain loop:
//! bcsstk16 (59 entries a row) 2.86 to 1.2 ms, EX5 (45) 2.84 to 1.37 ms,
//! sparse-images-1024_subset (102) 1.0 to 0.57 ms, with blocks of eight columns (from the
//! plain loop and from eight scalar sums, which gcc left scalar: 2.24 and 2.37 ms for the
//! first two). Blocks of 16 walk each row half as often: with the 32 columns known when
//! compiling (`ir::extents`), bcsstk16 1.08 to 0.82 ms, sparse-images-1024_subset 0.45 to
//! 0.30, stokes64s 0.58 to 0.50, and with 100 columns (a parameter) bcsstk16 4.9 to 4.1;
//! a block of all 32 columns at once was twice as slow (gcc keeps that array in memory).
//! Each block walks the row again, which short rows do not repay: with rows of 2 entries
//! and more summed so, ct2010 (5 a row) took 6.0-6.9 ms against 5.2 in blocks of eight,
//! and ca-HepTh (power-law rows) 0.43 against 0.30 in blocks of 16. In blocks of 16, rows
//! from 6 entries on pay: fe_4elt2 (6 a row) 0.69 to 0.40 ms, bcspwr10 0.213 to 0.20,
//! ca-HepTh 0.300 to 0.313 (from 4 entries on: 0.38, 0.20 and 0.34), hence
//! [`MIN_ROW_LENGTH`]. Loops inside another sparse loop that adds into the same output
//! row (MTTKRP's fibers) keep the plain form: their rows are short, and with the path
//! printed beside their loop gcc compiled that loop 20% slower (18.9 to 22.9 ms on a
//! uniform 1000^3 tensor, rank 32).

use super::expr::expr;
use super::Printer;
use crate::ir::analysis::RowSum;
use crate::ir::{prefetch, BinOp, Expr, Loop};

/// The fewest entries a row needs to be summed in registers.
pub(super) const MIN_ROW_LENGTH: usize = 6;

/// Columns summed together: sixteen `double`s, two AVX-512 registers or four AVX2 ones.
const ROW_BLOCK: usize = 16;

/// The fewest elements of an array of rows read through scattered coordinates for the
/// plain loop to run instead: 16 MiB of `double`s, about where the rows stop staying in
/// the last-level cache beside the streamed matrix. Beyond it the plain loop, which reads
/// all of a row's cache lines together where the blocks read them one pass at a time, is
/// faster. SpMM with 32 columns, one thread, random matrices with 10 entries a row, plain
/// against summed by blocks: 15k rows (3.8 MB of rows) 1.45-1.49 against 1.19-1.42 ms,
/// 30k (7.7 MB) 3.07-3.14 against 2.80-3.03, 60k (15 MB) 9.3-9.8 against 8.6-10.6, 100k
/// (26 MB) 28.5 against 43.0, 1M 388-404 against 499-539; stokes64s (3.2 MB) 1.3 against
/// 0.68.
const ROWS_IN_MEMORY: i64 = 1 << 21;

impl Printer<'_> {
    /// When `l`, a [`RowSum`], runs as one: its row holds at least [`MIN_ROW_LENGTH`]
    /// entries (on shorter ones, walking the row once per block of columns costs more than
    /// the loads and stores it saves), and the rows it reads are not both scattered and
    /// too many to stay cached ([`ROWS_IN_MEMORY`]).
    pub(super) fn row_sum_condition(&self, l: &Loop, row: &RowSum) -> String {
        let long = format!(
            "{} - {} >= {MIN_ROW_LENGTH}",
            expr(self.names, &l.end),
            expr(self.names, &l.start)
        );
        // The hints' guards name the coordinates and the arrays of rows they read: the
        // same test, with a larger size.
        let in_memory = row.hints.iter().map(|hint| {
            let (scattered, rows) =
                prefetch::hint_guard(hint).expect("row sums' hints are guarded");
            prefetch::sampled_and_large(scattered, rows, ROWS_IN_MEMORY)
        });
        match in_memory.reduce(|a, b| Expr::bin(BinOp::Or, a, b)) {
            Some(any) => format!("({long}) && !({})", expr(self.names, &any)),
            None => long,
        }
    }

    /// Print `l`, a [`RowSum`], one block of columns at a time ([`ROW_BLOCK`] columns,
    /// then eight, then one). Its hints are left out: the loop runs only when none of
    /// their guards holds.
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
        for width in [ROW_BLOCK, ROW_BLOCK / 2, 1] {
            self.line(&format!(
                "for (; sparsec_jb + {width} <= {end}; sparsec_jb += {width}) {{"
            ));
            self.indent += 1;
            self.line(&format!("{ty} sparsec_r[{width}] = {{0}};"));
            let var = names.var(l.var);
            self.line(&format!(
                "for (int64_t {var} = {}; {var} < {}; {var}++) {{",
                expr(names, &l.start),
                expr(names, &l.end)
            ));
            self.indent += 1;
            row.decls.iter().for_each(|s| self.stmt(s));
            // One vector operation over the block's columns: the sums stay in registers.
            self.line("#pragma omp simd");
            self.column_loop(row, width, true, |p| {
                p.line(&format!(
                    "sparsec_r[sparsec_c] += {};",
                    expr(names, &row.store.value)
                ))
            });
            self.indent -= 1;
            self.line("}");
            // The store's index reads nothing the loop declares.
            self.column_loop(row, width, false, |p| {
                p.line(&format!(
                    "{}[{}] += sparsec_r[sparsec_c];",
                    names.array(&row.store.array),
                    expr(names, &row.store.index)
                ))
            });
            self.indent -= 1;
            self.line("}");
        }
        self.indent -= 1;
        self.line("}");
    }

    /// A loop over the block's columns, `sparsec_c` from 0 to `width`, where the column
    /// variable is `sparsec_jb + sparsec_c` (and, with `declared`, the column loop's
    /// declarations hold), around what `inner` prints.
    fn column_loop(
        &mut self,
        row: &RowSum,
        width: usize,
        declared: bool,
        inner: impl FnOnce(&mut Self),
    ) {
        self.line(&format!(
            "for (int64_t sparsec_c = 0; sparsec_c < {width}; sparsec_c++) {{"
        ));
        self.indent += 1;
        self.line(&format!(
            "const int64_t {} = sparsec_jb + sparsec_c;",
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
