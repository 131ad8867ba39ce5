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
/// `rows`.
pub struct DenseRows {
    pub row: Var,
    pub rows: Expr,
}

/// Zero each row of `function`'s dense output at the top of the outermost loop's
/// iteration that writes it, where the loop is over the rows of `layout`, and mark the
/// output as zeroed by the kernel; leave any other function as it is.
pub fn zero_rows_in_kernel(function: &mut Function, layout: &DenseRows) {
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
                index: row_start(layout.row, &length) + Expr::Var(offset),
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

/// `length` where `index` is `row * length + offset` and `offset` does not read `row`.
fn split_row(index: &Expr, row: Var) -> Option<Expr> {
    let Expr::Bin(BinOp::Add, start, offset) = index else {
        return None;
    };
    let Expr::Bin(BinOp::Mul, r, length) = &**start else {
        return None;
    };
    let reads_row = depends_on(offset, &[row]) || depends_on(length, &[row]);
    (**r == Expr::Var(row) && !reads_row).then(|| (**length).clone())
}
