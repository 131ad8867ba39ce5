//! Dense outputs zeroed row by row by the kernel itself, by the thread that then adds into
//! the row.
//!
//! A dense output whose stores add (`+=`: SpMM's `C(i,:) += A(i,k) * B(k,:)`, MTTKRP's
//! rows) starts at zero. Zeroed by the calling thread before the kernel runs, its lines
//! sit in that thread's cache, and every other thread of the team pulls the lines of its
//! rows across before it can add into them: SpMM with 32 columns on jagmesh7 took 0.0146
//! ms on two threads against 0.0097 on one (a C harness on the 2-core Xeon; dwt_992 0.0221
//! against 0.0171). Zeroed by the thread that owns each row, at the top of the row's
//! iteration, it took 0.0084 ms (dwt_992 0.0125), the zeroing included. The caller then
//! leaves the output unwritten ([`OutputMode::Dense`]'s `zeroed_by_kernel`).
//!
//! The pass applies where that is safe to say of the whole output: the function's
//! outermost loop visits every row (it runs from 0 to the row count over the output's
//! first stored mode), every store to the output lies inside it and writes the row of its
//! iteration, and the output's values are laid out row after row (`row * row_length +
//! offset`).

use super::analysis::depends_on;
use super::visit;
use super::{ArrayRef, BinOp, Expr, Function, Loop, LoopKind, OperandId, OutputMode, Stmt, Store};
use super::{Type, Var};

/// A dense output's rows: `row`, the variable of its first stored mode, runs from 0 to
/// `rows`. Lowering records them ([`Function::dense_rows`]) for the CPU targets' pass.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseRows {
    pub row: Var,
    pub rows: Expr,
}

/// Zero each row of `function`'s dense output at the top of the outermost loop's
/// iteration that writes it, where the loop is over the rows lowering recorded
/// ([`Function::dense_rows`]), and mark the output as zeroed by the kernel; leave any
/// other function as it is. A CPU target's pass: on a GPU, the caller's zeroing costs no
/// cache traffic between threads.
pub fn zero_rows_in_kernel(function: &mut Function) {
    let Some(layout) = function.dense_rows.clone() else {
        return;
    };
    let OutputMode::Dense {
        accumulate: true,
        zeroed_by_kernel: false,
    } = function.output
    else {
        return;
    };
    let loops: Vec<usize> = (0..function.body.len())
        .filter(|&k| matches!(function.body[k], Stmt::For(_)))
        .collect();
    let [outer] = loops[..] else {
        return;
    };
    let stores_outside = function
        .body
        .iter()
        .enumerate()
        .any(|(k, s)| k != outer && writes_output(std::slice::from_ref(s)));
    let Stmt::For(l) = &function.body[outer] else {
        unreachable!("found as a loop")
    };
    let over_rows = l.var == layout.row
        && l.start == Expr::Int(0)
        && l.end == layout.rows
        && matches!(
            l.kind,
            LoopKind::Serial
                | LoopKind::Parallel {
                    unit: super::ParallelUnit::CpuThread,
                    ..
                }
        );
    if stores_outside || !over_rows {
        return;
    }
    let Some(length) = row_length(&l.body, layout.row) else {
        return;
    };
    let offset = function.fresh_var("zeroed", Type::Index);
    let Stmt::For(l) = &mut function.body[outer] else {
        unreachable!("found as a loop")
    };
    l.body.insert(
        0,
        Stmt::For(Loop {
            var: offset,
            start: Expr::Int(0),
            end: length.clone(),
            kind: LoopKind::Serial,
            body: vec![Stmt::Store(Store {
                array: ArrayRef::Values(OperandId(0)),
                index: row_element(layout.row, &length, offset),
                value: Expr::Float(0.0),
                accumulate: false,
            })],
        }),
    );
    function.output = OutputMode::Dense {
        accumulate: true,
        zeroed_by_kernel: true,
    };
}

/// Where the row of the loop's iteration starts in the output's values.
fn row_start(row: Var, length: &Expr) -> Expr {
    Expr::bin(BinOp::Mul, Expr::Var(row), length.clone())
}

/// Whether any statement of `stmts` stores to the output (or emits an entry).
fn writes_output(stmts: &[Stmt]) -> bool {
    let mut writes = false;
    visit::walk_stmts(stmts, &mut |s| {
        writes |= matches!(s, Stmt::Store(st) if st.array == ArrayRef::Values(OperandId(0)))
            || matches!(s, Stmt::Emit { .. });
    });
    writes
}

/// The length of the output's rows, where every store to the output in `body` writes the
/// row of the iteration: its index is `row * length + offset` (as the lowering prints the
/// positions of a row-major dense output; any other form is refused), with one `length`
/// for all, an `offset` that does not read `row`, and `row` never assigned.
fn row_length(body: &[Stmt], row: Var) -> Option<Expr> {
    let mut length: Option<Expr> = None;
    let mut stay = true;
    visit::walk_stmts(body, &mut |s| match s {
        Stmt::Store(st) if st.array == ArrayRef::Values(OperandId(0)) => {
            match split_row(&st.index, row) {
                Some(l) if length.as_ref().is_none_or(|known| *known == l) => length = Some(l),
                _ => stay = false,
            }
        }
        Stmt::Assign(v, _) if *v == row => stay = false,
        Stmt::Emit { .. } => stay = false,
        _ => {}
    });
    length.filter(|_| stay)
}

/// `length` where `index` is `row * length + offset` (or `row + offset`, rows of one
/// element once their length is a constant folded away) and `offset` does not read `row`.
fn split_row(index: &Expr, row: Var) -> Option<Expr> {
    let Expr::Bin(BinOp::Add, start, offset) = index else {
        return None;
    };
    let (r, length) = match &**start {
        Expr::Bin(BinOp::Mul, r, length) => (&**r, (**length).clone()),
        r => (r, Expr::Int(1)),
    };
    let reads_row = depends_on(offset, &[row]) || depends_on(&length, &[row]);
    (*r == Expr::Var(row) && !reads_row).then_some(length)
}

/// Where a row's iteration zeroes the output's row and then writes every element of it
/// once in a row sum (see [`overwritten_row`]): statement `zeroing` is the zeroing loop,
/// `sum` the loop of the [`RowSum`](super::analysis::RowSum), a later statement or inside
/// one's nested blocks.
#[derive(Clone, Copy, Debug)]
pub struct OverwrittenRow<'a> {
    pub zeroing: usize,
    pub sum: &'a Loop,
}

/// In `stmts`, the body of an iteration over rows: the zeroing loop that
/// [`zero_rows_in_kernel`] put there, and after it a loop that is a
/// [`RowSum`](super::analysis::RowSum) whose columns run over the whole zeroed row (from 0
/// to its length) and whose store writes the column of its iteration, where no statement
/// between the two reads the output and no other statement writes it. A backend that sums
/// such a row in registers writes every element once, so it may store its sums (`=`)
/// and zero the row only on the path that adds into it otherwise: SpMM with 32 columns on
/// an AVX-512 Xeon, one thread, 0.0121 to 0.0102 ms on jagmesh7, 0.0216 to 0.0195 on
/// dwt_992, 0.0240 to 0.0214 on cryg2500, and no change on cage10 (0.376 ms, 8.6
/// entries a row).
pub fn overwritten_row(stmts: &[Stmt]) -> Option<OverwrittenRow<'_>> {
    let (zeroing, row, length) = stmts.iter().enumerate().find_map(|(k, s)| {
        let (row, length) = zeroed_row(s)?;
        Some((k, row, length))
    })?;
    // Blocks only scope their declarations: in order, the statements after the zeroing
    // are those of the blocks opened.
    let after = super::analysis::unblocked(&stmts[zeroing + 1..]);
    let (writer, rest) = after.split_at(
        after
            .iter()
            .position(|s| writes_output(std::slice::from_ref(*s)))?,
    );
    let Stmt::For(sum) = rest[0] else {
        return None;
    };
    let summed = super::analysis::row_sum(sum)?;
    let whole_row = summed.columns.start == Expr::Int(0)
        && summed.columns.end == length
        && summed.index == row_element(row, &length, summed.columns.var);
    let read_before = writer.iter().any(|s| {
        super::analysis::reads_array(std::slice::from_ref(*s), ArrayRef::Values(OperandId(0)))
    });
    let written_after = rest[1..]
        .iter()
        .any(|s| writes_output(std::slice::from_ref(*s)))
        || writes_output(&stmts[..zeroing]);
    (whole_row && !read_before && !written_after).then_some(OverwrittenRow { zeroing, sum })
}

/// The row and the row length of `s` where it is a zeroing loop as [`zero_rows_in_kernel`]
/// prints it: `for (z = 0; z < length; z++) out[row * length + z] = 0` (`row + z` where
/// the length is 1).
fn zeroed_row(s: &Stmt) -> Option<(Var, Expr)> {
    let Stmt::For(l) = s else {
        return None;
    };
    let [Stmt::Store(store)] = &l.body[..] else {
        return None;
    };
    let Expr::Bin(BinOp::Add, start, _) = &store.index else {
        return None;
    };
    let row = match &**start {
        Expr::Var(row) => *row,
        Expr::Bin(BinOp::Mul, row, _) => match **row {
            Expr::Var(row) => row,
            _ => return None,
        },
        _ => return None,
    };
    let zeroes = store.array == ArrayRef::Values(OperandId(0))
        && store.index == row_element(row, &l.end, l.var)
        && store.value == Expr::Float(0.0)
        && !store.accumulate
        && l.kind == LoopKind::Serial
        && l.start == Expr::Int(0);
    zeroes.then(|| (row, l.end.clone()))
}

/// The index of element `column` of `row` in rows of `length`, as simplified.
fn row_element(row: Var, length: &Expr, column: Var) -> Expr {
    super::simplify(&(row_start(row, length) + Expr::Var(column)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::lowered;
    use crate::ir::{ParamKind, ParamRef};

    /// SpMM's function, `C` of `columns` columns, and the body of its loop over rows.
    fn spmm(columns: usize) -> (Function, Vec<Stmt>) {
        let function = lowered(
            "C(i,k) = A(i,j) * B(j,k)",
            &[
                ("A", "csr", &[30, 20]),
                ("B", "dd", &[20, columns]),
                ("C", "dd", &[30, columns]),
            ],
        )
        .function;
        let body = match &function.body[..] {
            [Stmt::For(rows)] => rows.body.clone(),
            other => panic!("one loop over rows: {other:?}"),
        };
        (function, body)
    }

    fn reads_level_size(function: &Function, operand: usize) -> bool {
        let mut reads = false;
        visit::walk_stmt_exprs(&function.body, &mut |e| {
            reads |= matches!(
                e,
                Expr::Param(ParamRef::Level { operand: o, kind: ParamKind::Size, .. })
                    if o.0 == operand
            );
        });
        reads
    }

    #[test]
    fn a_row_summed_whole_after_its_zeroing_is_overwritten() {
        let (function, body) = spmm(32);
        assert_eq!(
            function.output,
            OutputMode::Dense {
                accumulate: true,
                zeroed_by_kernel: true
            }
        );
        // The rows' length is the rank, fixed with it (`lower::fixed_params`), for `C`
        // and `B` alike.
        assert!(!reads_level_size(&function, 0));
        assert!(!reads_level_size(&function, 2));
        let row = overwritten_row(&body).expect("the row sum writes the whole row");
        assert_eq!(row.zeroing, 0);
        let sum = crate::ir::analysis::row_sum(row.sum).expect("a row sum");
        assert_eq!(sum.columns.end, Expr::Int(32));
    }

    #[test]
    fn rows_of_a_length_not_fixed_are_not_assumed_whole() {
        // 100 columns stay a parameter: the zeroing runs to `C`'s row length, the sum to
        // the extent of `k`, equal at run time but not to the pass.
        let (function, body) = spmm(100);
        assert!(reads_level_size(&function, 0));
        assert!(zeroed_row(&body[0]).is_some());
        assert!(overwritten_row(&body).is_none());
    }

    #[test]
    fn another_write_or_a_read_of_the_output_keeps_the_zeroing() {
        let (mut function, body) = spmm(32);
        let row = overwritten_row(&body).unwrap();
        // The zeroing again after the sum: a second writer.
        let mut written_again = body.clone();
        written_again.push(body[row.zeroing].clone());
        assert!(overwritten_row(&written_again).is_none());
        // A read of the row between the zeroing and the sum.
        let read = function.fresh_var("read", crate::ir::Type::Value(crate::ir::ValueType::F64));
        let mut read_between = body.clone();
        read_between.insert(
            row.zeroing + 1,
            Stmt::Decl(
                read,
                Expr::Load(ArrayRef::Values(OperandId(0)), Box::new(Expr::Int(0))),
            ),
        );
        assert!(overwritten_row(&read_between).is_none());
        // No zeroing at all.
        assert!(overwritten_row(&body[row.zeroing + 1..]).is_none());
    }

    #[test]
    fn fibers_adding_into_the_row_are_no_row_sum() {
        // MTTKRP: the row's writer is a loop over `k` whose fibers over `l` add into it.
        let function = lowered(
            "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
            &[
                ("A", "dd", &[6, 8]),
                ("B", "dss", &[6, 5, 4]),
                ("C", "dd", &[5, 8]),
                ("D", "dd", &[4, 8]),
            ],
        )
        .function;
        let mut checked = false;
        visit::walk_stmts(&function.body, &mut |s| {
            if let Stmt::For(l) = s {
                if l.body.iter().any(|s| zeroed_row(s).is_some()) {
                    assert!(overwritten_row(&l.body).is_none());
                    checked = true;
                }
            }
        });
        assert!(checked, "MTTKRP's rows are zeroed by the kernel");
    }
}
