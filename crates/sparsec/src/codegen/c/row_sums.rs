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
//!
//! Where the value is a vector expression over consecutive columns (`A(i,k) * B(k,:)`
//! with `B`'s rows contiguous, [`is_vector_value`]), the sums are vector variables of GCC's
//! vector extensions as wide as the registers (the runtime's `vectors` section): blocks of
//! eight, four, two and one vectors, so that 32 columns are four AVX-512 registers or
//! eight AVX2 ones, summed in one walk of the row, then any columns left one at a time.
//! gcc keeps `omp simd` arrays of more than 16 columns in memory, and compiled for AVX-512
//! it prefers 256-bit vectors for them. SpMM with 32 columns on an AVX-512 Xeon, one
//! thread, blocks of 16 in `omp simd` against vectors, ms (with `B` on a cache line, see
//! `memory::LineAligned`): cryg2500 (5 entries a row) 0.053 to 0.021, cage10 0.56 to
//! 0.37, bcsstk16 0.67 to 0.33, EX5 0.89 to 0.55; Intel MKL's inspector-executor 0.026,
//! 0.37, 0.37 and 0.56. Columns that fill whole vectors, at most a block, are summed so
//! from rows of one entry on, since the row is walked once per block size.
//!
//! Loads at consecutive positions of a level's coordinates gather a vector
//! (`sparsec_gather_*` in the runtime): sliced ELL's full slices, whose rows run in SIMD
//! lanes, sum `A(slot, :) * x(A_idx(slot, :))` over their slots in registers and add to
//! `y` once, where the plain `omp simd` loop loads and stores the slice's 8 outputs every
//! slot. SpMV with `A` in `sell:8`, one thread: cryg2500 0.00313 to 0.00294 ms, cage10
//! 0.042 to 0.041 (C harness of the same loop with one `_mm512_i32gather_pd` a slot:
//! 0.00339 to 0.00298 on cryg2500). Rows already in lanes take the sum only where their
//! columns fill whole vectors of at most a block (8 `double` rows; not 8 `float` rows
//! under AVX-512, whose 16 lanes would leave the columns to one walk each).

use super::expr::expr;
use super::Printer;
use crate::ir::analysis::{depends_on, RowSum};
use crate::ir::{
    prefetch, ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, LoopKind, Names, Stmt, Var,
};

/// The fewest entries a row needs to be summed in registers.
pub(super) const MIN_ROW_LENGTH: usize = 6;

/// Columns summed together where the value is no vector expression: sixteen `double`s,
/// two AVX-512 registers or four AVX2 ones.
const ROW_BLOCK: usize = 16;

/// Vectors summed together where the value is a vector expression, largest first: eight
/// registers hold 64 `double`s under AVX-512 and 32 under AVX2, half the registers of
/// either, leaving the rest for the loads.
const VECTOR_BLOCKS: [usize; 4] = [8, 4, 2, 1];

/// The fewest elements of an array of rows read through scattered coordinates for the
/// plain loop to run instead: 16 MiB of `double`s, about where the rows stop staying in
/// the last-level cache beside the streamed matrix. Beyond it the plain loop, which reads
/// all of a row's cache lines together where the blocks read them one pass at a time, is
/// faster. SpMM with 32 columns, one thread, random matrices with 10 entries a row, plain
/// against summed by blocks: 15k rows (3.8 MB of rows) 1.45-1.49 against 1.19-1.42 ms,
/// 30k (7.7 MB) 3.07-3.14 against 2.80-3.03, 60k (15 MB) 9.3-9.8 against 8.6-10.6, 100k
/// (26 MB) 28.5 against 43.0, 1M 388-404 against 499-539; stokes64s (3.2 MB) 1.3 against
/// 0.68. Those were blocks of 16 columns in `omp simd` arrays, two walks of the row for 32
/// columns. Sums in vectors walk it once for up to a block of 8 vectors, and beat the
/// plain (prefetched) loop at every size measured, so the test applies to the `omp simd`
/// blocks only. SpMM on the AVX-512 Xeon, uniform random, one thread, plain against
/// vectors, ms: 32 columns, 100k rows of 5 entries (`B` 26 MB) 5.80 against 5.54, 200k of
/// 5 (51 MB) 15.3 against 13.5, 400k of 20 (102 MB) 219 against 145, 1M of 10 (256 MB)
/// 358 against 293 (two threads 187 against 150); 64 columns, 200k of 10, 82.9 against
/// 71.1.
const ROWS_IN_MEMORY: i64 = 1 << 21;

impl Printer<'_> {
    /// When `l`, a [`RowSum`], runs as one: its row holds at least [`MIN_ROW_LENGTH`]
    /// entries (on shorter ones, walking the row once per block of columns costs more than
    /// the loads and stores it saves) or, summed in vectors (`vector`: its value is a vector
    /// expression, [`vector_value`]), its columns fill at most one block of whole vectors;
    /// and, summed in `omp simd` blocks, the rows it reads are not both scattered and too
    /// many to stay cached ([`ROWS_IN_MEMORY`]).
    pub(super) fn row_sum_condition(&self, l: &Loop, row: &RowSum, vector: bool) -> String {
        let mut long = format!(
            "{} - {} >= {MIN_ROW_LENGTH}",
            expr(self.names, &l.end),
            expr(self.names, &l.start)
        );
        if vector {
            // Columns that fill whole vectors, at most a block of them, are summed in one
            // to three walks of the row (one block of each size), which pays from one
            // entry on; columns left over would each walk it once more.
            let columns = format!(
                "({} - {})",
                expr(self.names, &row.columns.end),
                expr(self.names, &row.columns.start)
            );
            let lanes = lanes(self.value_type());
            let fits = format!(
                "{columns} % {lanes} == 0 && {columns} <= {} * {lanes}",
                VECTOR_BLOCKS[0]
            );
            // Columns in SIMD lanes already (sliced ELL's rows) gain from no other sum: a
            // row's columns left over would each walk the row.
            long = if row.columns.kind == LoopKind::Serial {
                format!("({long}) || ({fits})")
            } else {
                fits
            };
        }
        if vector {
            return long;
        }
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

    /// Print `l`, a [`RowSum`], one block of columns at a time: where its value is the
    /// vector expression `vector` ([`vector_value`]), blocks of 8, 4, 2 and 1 vectors as wide as the
    /// registers, else of [`ROW_BLOCK`] and then eight columns in `omp simd` loops; then
    /// the columns left, one at a time. Its hints are left out: the loop runs only when
    /// none of their guards holds.
    pub(super) fn row_sum_loop(
        &mut self,
        l: &Loop,
        row: &RowSum,
        vector: Option<&str>,
        store: &str,
    ) {
        let names = self.names;
        self.line("{");
        self.indent += 1;
        self.line(&format!(
            "int64_t sparsec_jb = {};",
            expr(names, &row.columns.start)
        ));
        match vector {
            Some(value) => {
                for vectors in VECTOR_BLOCKS {
                    self.vector_block(l, row, vectors, value, store);
                }
            }
            None => {
                for width in [ROW_BLOCK, ROW_BLOCK / 2] {
                    self.scalar_block(l, row, width, store);
                }
            }
        }
        self.scalar_block(l, row, 1, store);
        self.indent -= 1;
        self.line("}");
    }

    /// Columns `vectors` registers wide at a time, each summed in its own vector variable
    /// over the row, then added to the output with one vector store.
    fn vector_block(&mut self, l: &Loop, row: &RowSum, vectors: usize, value: &str, op: &str) {
        let names = self.names;
        let ty = self.value_type();
        let (vector, lanes) = (vector_type(ty), lanes(ty));
        let sums: Vec<String> = (0..vectors)
            .map(|q| format!("sparsec_v{q} = {{0}}"))
            .collect();
        let add = |p: &mut Self| {
            for q in 0..vectors {
                p.lane_block(row, q, &lanes, true, |p| {
                    p.line(&format!("sparsec_v{q} += {value};"))
                });
            }
        };
        // The store's index reads nothing the loop declares.
        let store = |p: &mut Self| {
            for q in 0..vectors {
                p.lane_block(row, q, &lanes, false, |p| {
                    p.line(&format!(
                        "*({vector} *)&{}[{}] {op} sparsec_v{q};",
                        names.array(&row.store.array),
                        expr(names, &row.index)
                    ))
                });
            }
        };
        let width = format!("{vectors} * {lanes}");
        let declared = format!("{vector} {};", sums.join(", "));
        self.column_block(l, row, &width, &declared, add, store);
    }

    /// A block in which the column variable is the first lane of vector `q` of the
    /// columns from `sparsec_jb` (and, with `declared`, the column loop's declarations
    /// hold), around what `inner` prints.
    fn lane_block(
        &mut self,
        row: &RowSum,
        q: usize,
        lanes: &str,
        declared: bool,
        inner: impl FnOnce(&mut Self),
    ) {
        let first = format!("sparsec_jb + {q} * {lanes}");
        self.column_scope(row, "{", &first, declared, inner);
    }

    /// A scope opened by `opening` in which the column variable is `column` (and, with
    /// `declared`, the column loop's declarations hold), around what `inner` prints.
    fn column_scope(
        &mut self,
        row: &RowSum,
        opening: &str,
        column: &str,
        declared: bool,
        inner: impl FnOnce(&mut Self),
    ) {
        self.line(opening);
        self.indent += 1;
        self.line(&format!(
            "const int64_t {} = {column};",
            self.names.var(row.columns.var)
        ));
        if declared {
            row.column_decls.iter().for_each(|s| self.stmt(s));
        }
        inner(self);
        self.indent -= 1;
        self.line("}");
    }

    /// Columns `width` at a time, summed in a local array by an `omp simd` loop.
    fn scalar_block(&mut self, l: &Loop, row: &RowSum, width: usize, op: &str) {
        let names = self.names;
        let add = |p: &mut Self| {
            // One vector operation over the block's columns: the sums stay in registers.
            p.line("#pragma omp simd");
            p.column_loop(row, width, true, |p| {
                p.line(&format!(
                    "sparsec_r[sparsec_c] += {};",
                    expr(names, &row.store.value)
                ))
            });
        };
        // The store's index reads nothing the loop declares.
        let store = |p: &mut Self| {
            p.column_loop(row, width, false, |p| {
                p.line(&format!(
                    "{}[{}] {op} sparsec_r[sparsec_c];",
                    names.array(&row.store.array),
                    expr(names, &row.index)
                ))
            });
        };
        let declared = format!("{} sparsec_r[{width}] = {{0}};", self.value_type());
        self.column_block(l, row, &width.to_string(), &declared, add, store);
    }

    /// A loop over the row's columns `width` (a C expression) at a time from `sparsec_jb`:
    /// it declares the block's sums (`sums`), walks the row, where `add` prints their
    /// update for one entry after the row loop's declarations, and `store` then adds them
    /// to the output.
    fn column_block(
        &mut self,
        l: &Loop,
        row: &RowSum,
        width: &str,
        sums: &str,
        add: impl FnOnce(&mut Self),
        store: impl FnOnce(&mut Self),
    ) {
        let names = self.names;
        let end = expr(names, &row.columns.end);
        self.line(&format!(
            "for (; sparsec_jb + {width} <= {end}; sparsec_jb += {width}) {{"
        ));
        self.indent += 1;
        self.line(sums);
        let var = names.var(l.var);
        self.line(&format!(
            "for (int64_t {var} = {}; {var} < {}; {var}++) {{",
            expr(names, &l.start),
            expr(names, &l.end)
        ));
        self.indent += 1;
        row.decls.iter().for_each(|s| self.stmt(s));
        add(self);
        self.indent -= 1;
        self.line("}");
        store(self);
        self.indent -= 1;
        self.line("}");
    }

    /// The C type of the function's values.
    fn value_type(&self) -> &'static str {
        self.function.operands[0].values.c_name()
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
        let opening = format!("for (int64_t sparsec_c = 0; sparsec_c < {width}; sparsec_c++) {{");
        self.column_scope(row, &opening, "sparsec_jb + sparsec_c", declared, inner);
    }
}

/// The C vector type of values of C type `ty` (the runtime's `vectors` section).
fn vector_type(ty: &str) -> String {
    format!("sparsec_vector_{ty}")
}

/// The C constant for the lanes of [`vector_type`]`(ty)`.
fn lanes(ty: &str) -> String {
    format!("SPARSEC_LANES_{ty}")
}

/// The variables that change from one column of `row` to the next: the column variable
/// and the column loop's declarations that read one.
fn column_varying(row: &RowSum) -> Vec<Var> {
    let mut varying = vec![row.columns.var];
    for s in &row.column_decls {
        if let Stmt::Decl(v, e) = s {
            if depends_on(e, &varying) {
                varying.push(*v);
            }
        }
    }
    varying
}

/// How much the integer expression `e` grows from one column of `row` to the next, where
/// it is an affine function of the column with a constant step (`pB1 * n + j` through
/// the column loop's declarations: 1).
fn column_step(e: &Expr, row: &RowSum, varying: &[Var]) -> Option<i64> {
    if !depends_on(e, varying) {
        return Some(0);
    }
    match e {
        Expr::Var(v) if *v == row.columns.var => Some(1),
        Expr::Var(v) => row.column_decls.iter().find_map(|s| match s {
            Stmt::Decl(d, value) if d == v => column_step(value, row, varying),
            _ => None,
        }),
        Expr::Bin(BinOp::Add, a, b) => {
            Some(column_step(a, row, varying)? + column_step(b, row, varying)?)
        }
        Expr::Bin(BinOp::Sub, a, b) => {
            Some(column_step(a, row, varying)? - column_step(b, row, varying)?)
        }
        Expr::Bin(BinOp::Mul, a, b) => match (&**a, &**b) {
            (Expr::Int(c), x) | (x, Expr::Int(c)) => column_step(x, row, varying)?.checked_mul(*c),
            _ => None,
        },
        _ => None,
    }
}

/// Where the index `e` of a load is read, one column after the next, from consecutive
/// positions of a level's coordinate array (sliced ELL's `x[A4_idx[slot * 8 + j]]`,
/// through the column loop's declarations): the array and the position read for the
/// column. The load then gathers a vector ([`gather_helper`]).
fn gathered_at<'e>(e: &'e Expr, row: &'e RowSum, varying: &[Var]) -> Option<(ArrayRef, &'e Expr)> {
    match e {
        Expr::Load(
            array @ ArrayRef::Level {
                kind: ArrayKind::Idx,
                ..
            },
            position,
        ) if column_step(position, row, varying) == Some(1) => Some((*array, position)),
        Expr::Var(v) => row.column_decls.iter().find_map(|s| match s {
            Stmt::Decl(d, value) if d == v => gathered_at(value, row, varying),
            _ => None,
        }),
        _ => None,
    }
}

/// The runtime's function that gathers a vector of `ty` values by the coordinates of
/// `array` (32- or 64-bit, as the function reads it).
fn gather_helper(function: &Function, ty: &str, array: &ArrayRef) -> String {
    let bits = if function.narrow_arrays.contains(array) {
        32
    } else {
        64
    };
    format!("sparsec_gather_{ty}_i{bits}")
}

/// Whether `e`, a value of `row`'s sum, is a vector expression over consecutive columns:
/// sums, differences, products, quotients and negations of values that do not change
/// from column to column (each lane gets the same) and of loads from value arrays of the
/// function's value type at consecutive elements, one per column.
fn is_vector(function: &Function, row: &RowSum, varying: &[Var], e: &Expr) -> bool {
    if !depends_on(e, varying) {
        return true;
    }
    match e {
        Expr::Load(ArrayRef::Values(op), index) => {
            function.operands[op.0].values == function.operands[0].values
                && (column_step(index, row, varying) == Some(1)
                    || gathered_at(index, row, varying).is_some())
        }
        Expr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div, a, b) => {
            is_vector(function, row, varying, a) && is_vector(function, row, varying, b)
        }
        Expr::Neg(a) => is_vector(function, row, varying, a),
        _ => false,
    }
}

/// Whether `row`'s value is a vector expression (see [`is_vector`]): its sums then run
/// in vectors as wide as the registers, declared by the runtime's `vectors` section.
pub(super) fn is_vector_value(function: &Function, row: &RowSum) -> bool {
    is_vector(function, row, &column_varying(row), &row.store.value)
}

/// `row`'s value as a C vector expression for the columns whose first is the column
/// variable, where it is one (see [`is_vector`]): what does not change from column to
/// column is converted to the value type and goes to every lane, loads at consecutive
/// elements read a vector.
pub(super) fn vector_value(function: &Function, names: &Names, row: &RowSum) -> Option<String> {
    let ty = function.operands[0].values.c_name();
    let varying = column_varying(row);
    fn print(
        function: &Function,
        names: &Names,
        row: &RowSum,
        ty: &str,
        varying: &[Var],
        e: &Expr,
    ) -> String {
        let print_at = |e: &Expr| print(function, names, row, ty, varying, e);
        if !depends_on(e, varying) {
            return format!("({ty})({})", expr(names, e));
        }
        match e {
            Expr::Load(array, index) => match gathered_at(index, row, varying) {
                Some((coordinates, position)) => format!(
                    "{}({}, &{}[{}])",
                    gather_helper(function, ty, &coordinates),
                    names.array(array),
                    names.array(&coordinates),
                    expr(names, position)
                ),
                None => format!(
                    "(*(const {} *)&{}[{}])",
                    vector_type(ty),
                    names.array(array),
                    expr(names, index)
                ),
            },
            Expr::Bin(op, a, b) => {
                let sym = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    _ => "/",
                };
                format!("({} {sym} {})", print_at(a), print_at(b))
            }
            Expr::Neg(a) => format!("(-{})", print_at(a)),
            _ => unreachable!("is_vector accepts no other expression"),
        }
    }
    is_vector_value(function, row)
        .then(|| print(function, names, row, ty, &varying, &row.store.value))
}
