//! Placing a sparse output's entries straight into its storage, in two phases over the
//! same loops (a symbolic and a numeric pass), or in one that appends, instead of emitting
//! records for the runtime to sort and pack.
//!
//! The output's leaf level is a compressed one (a `pos` and an `idx` array) and every
//! level above it either stores one position per coordinate or is compacted afterwards
//! (see `tensor::Tensor::from_rows`). An entry's *row* is its coordinates above the leaf,
//! linearised in storage order as though every upper level were dense. [`place_rows`]
//! turns each `Emit` into direct writes and runs the body in calls told apart by
//! [`ParamRef::Phase`]:
//! - phase 0 counts: an emit adds one to `pos[row + 1]`. Touched lists are not ordered
//!   and stores into value workspaces are dropped there (no value is needed; the latter
//!   only when no control flow or index reads them);
//! - between the calls, the runtime turns the counts into each row's start and allocates
//!   the leaf's coordinates and the values once, at their exact size;
//! - phase 1 places: an emit takes its row's next slot, `k = pos[row]++`, and writes
//!   `idx[k]` and `vals[k]`. Afterwards `pos[row]` holds the row's end, which is the next
//!   row's start: the runtime shifts the array by one.
//!
//! A row is filled through its own cursor, so its entries may come from any loop
//! iterations, in any order (a transposed loop order included); the runtime checks that
//! each row came out strictly increasing and otherwise sorts and sums it. What the caller
//! guarantees is that no two threads emit into one row.
//!
//! A function without workspaces and without GPU loops also gets phase 2, which appends in
//! one pass when it runs on one thread (a GPU kernel's threads would share its slot): an emit takes the next slot of the whole output, writes `idx` and `vals`
//! there while the slot is below [`ParamRef::Capacity`], and sets `pos[row + 1]` to the
//! slots taken so far. When every row came after the rows before it, `pos` then needs only
//! its gaps (rows without entries) filled from the left to hold each row's start and end;
//! a row that comes after a later one raises `pos[0]` (0 otherwise in this phase), and the
//! runtime places the entries in the two phases instead. Entries past the capacity are
//! counted but not written: `pos` then holds exact row starts for phase 1. The capacity is
//! the runtime's guess (the inputs' stored entries), which outputs tied to input entries
//! (element-wise operations, SDDMM, contractions into a sparse result such as TTV) never
//! exceed.
//!
//! A workspace kernel (SpGEMM: a Gustavson row gathered in a dense workspace, then its
//! touched coordinates emitted in order) can emit more entries than its inputs store, so
//! it also gets phase 3, which bounds each row: the same loops, where each workspace
//! update adds one to its touched count and each emitting loop over the touched list adds
//! that count to `pos[row + 1]`. Updates at most touch each coordinate once, so the sum
//! is at least the row's entries; it costs a pass over the loops above the innermost one
//! (a backend closes a loop that only counts). With the bounds summed as the capacity,
//! appending (phase 2) never runs out of room, and the runtime places the entries in one
//! numeric pass instead of counting them with a symbolic pass first.
//!
//! Phase 3 also bounds a row by the trips of a loop that emits at most one entry an
//! iteration into it and has no other effect, without running the loop's body. A kernel
//! without workspaces gets it where that skips loops counting would run: a masked
//! product's loop over the mask's row, each iteration an intersection, or SDDMM's over the
//! sampled row.

use super::{
    visit, ArrayKind, ArrayRef, BinOp, Expr, Function, LocalType, LoopKind, OperandId, OutputMode,
    ParamRef, Stmt, Store, Type,
};

/// Where an output's entries go: the storage level of its leaf and, outermost first, the
/// emitted coordinate (by mode) and the size of each level above it.
#[derive(Clone, Debug, PartialEq)]
pub struct RowLayout {
    /// 1-based storage level whose `pos` and `idx` arrays the kernel writes.
    pub leaf_level: usize,
    /// The mode the leaf level stores.
    pub leaf_mode: usize,
    /// `(mode, size)` of each level above the leaf, outermost first.
    pub upper: Vec<(usize, Expr)>,
}

impl RowLayout {
    /// The `pos` and `idx` arrays of the output's leaf level.
    fn leaf_arrays(&self) -> (ArrayRef, ArrayRef) {
        let array = |kind| ArrayRef::Level {
            operand: OperandId(0),
            level: self.leaf_level,
            kind,
        };
        (array(ArrayKind::Pos), array(ArrayKind::Idx))
    }

    /// The row of an entry with these (mode-ordered) coordinates.
    fn row(&self, coords: &[Expr]) -> Expr {
        self.upper
            .iter()
            .fold(None, |row: Option<Expr>, (mode, size)| {
                let c = coords[*mode].clone();
                Some(match row {
                    None => c,
                    Some(r) => r * size.clone() + c,
                })
            })
            .unwrap_or(Expr::Int(0))
    }
}

/// Rewrite `function`, an emitting one (`OutputMode::Emit`), to place its entries in the
/// phases the module describes. The caller guarantees that no two threads emit
/// entries of one row.
pub fn place_rows(function: &mut Function, layout: &RowLayout) {
    let output = OperandId(0);
    let (pos, idx) = layout.leaf_arrays();
    let slot = function.fresh_var("slot", Type::Index);
    let body = std::mem::take(&mut function.body);
    let drop_values = !values_steer(function);
    let is_value_workspace = |array: &ArrayRef| matches!(array, ArrayRef::Scratch(s) if function.scratch_info(*s).ty == LocalType::Value);
    let count = rewrite(body.clone(), &mut |s| match s {
        Stmt::Emit { coords, .. } => vec![Stmt::Store(Store {
            array: pos,
            index: layout.row(&coords) + Expr::Int(1),
            value: Expr::Int(1),
            accumulate: true,
        })],
        // Counting needs neither values nor the order of a workspace's touched list.
        Stmt::OrderTouched { .. } => vec![],
        Stmt::Store(Store { array, .. }) if drop_values && is_value_workspace(&array) => vec![],
        Stmt::Atomic(inner)
            if drop_values
                && matches!(inner.as_ref(), Stmt::Store(st) if is_value_workspace(&st.array)) =>
        {
            vec![]
        }
        other => vec![other],
    });
    let workspaces = has_workspaces(&body);
    let on_gpu = runs_on_gpu(&body);
    // Dropping value stores is what keeps a bound's loops from reading values. Without
    // workspaces, a bound pays only where it skips loops that counting would run.
    let bound = if workspaces {
        drop_values
            .then(|| bound_phase(&body, layout, &is_value_workspace))
            .flatten()
    } else if on_gpu {
        None
    } else {
        bound_phase(&body, layout, &is_value_workspace).filter(|b| !same_loops(b, &count))
    };
    let append_body = (!on_gpu && (!workspaces || bound.is_some())).then(|| body.clone());
    let place = rewrite(body, &mut |s| match s {
        Stmt::Emit { coords, value } => {
            let row = layout.row(&coords);
            vec![Stmt::Block(vec![
                Stmt::Decl(slot, Expr::load(pos, row.clone())),
                Stmt::Store(Store {
                    array: pos,
                    index: row,
                    value: Expr::Var(slot) + Expr::Int(1),
                    accumulate: false,
                }),
                Stmt::Store(Store {
                    array: idx,
                    index: Expr::Var(slot),
                    value: coords[layout.leaf_mode].clone(),
                    accumulate: false,
                }),
                Stmt::Store(Store {
                    array: ArrayRef::Values(output),
                    index: Expr::Var(slot),
                    value,
                    accumulate: false,
                }),
            ])]
        }
        other => vec![other],
    });
    let placed = match append_body {
        Some(body) => vec![Stmt::If(
            Expr::eq(Expr::Param(ParamRef::Phase), Expr::Int(1)),
            place,
            append_phase(function, layout, body),
        )],
        None => place,
    };
    let bounds = bound.is_some();
    let placed = match bound {
        Some(bound) => vec![Stmt::If(
            Expr::eq(Expr::Param(ParamRef::Phase), Expr::Int(3)),
            bound,
            placed,
        )],
        None => placed,
    };
    function.body = vec![Stmt::If(
        Expr::eq(Expr::Param(ParamRef::Phase), Expr::Int(0)),
        count,
        placed,
    )];
    function.output = OutputMode::Rows { bounds };
}

/// True when `body` has a GPU loop, whose threads would all take the appending phase's
/// one slot counter.
fn runs_on_gpu(body: &[Stmt]) -> bool {
    let mut gpu = false;
    visit::walk_stmts(body, &mut |s| {
        gpu |= matches!(s, Stmt::For(l) if matches!(l.kind, LoopKind::Parallel { unit, .. } if unit.is_gpu()));
    });
    gpu
}

/// The body of phase 3 (see the module): `pos[row + 1]` gains an upper bound of the row's
/// entries. `None` when the body's shape does not make the bound sure: a touched list
/// ordered but not then emitted by the loop that follows, once per touched coordinate,
/// into a row that the loop does not choose.
fn bound_phase(
    body: &[Stmt],
    layout: &RowLayout,
    is_value_workspace: &impl Fn(&ArrayRef) -> bool,
) -> Option<Vec<Stmt>> {
    let mut touched = Touched::default();
    visit::walk_stmts(body, &mut |s| {
        if let Stmt::OrderTouched {
            list, len, flags, ..
        } = s
        {
            touched.lists.push(*list);
            touched.flags.push(*flags);
            touched.counts.push(len.clone());
        }
    });
    bound_stmts(body.to_vec(), layout, &touched, is_value_workspace)
}

/// The scratch arrays and counts of a function's touched workspaces.
#[derive(Default)]
struct Touched {
    lists: Vec<super::Scratch>,
    flags: Vec<super::Scratch>,
    counts: Vec<Expr>,
}

impl Touched {
    /// True for a store that records a touched coordinate (in a list or a flag).
    fn records(&self, array: &ArrayRef) -> bool {
        matches!(array, ArrayRef::Scratch(s) if self.lists.contains(s) || self.flags.contains(s))
    }
}

/// [`bound_phase`] over one statement list.
fn bound_stmts(
    stmts: Vec<Stmt>,
    layout: &RowLayout,
    touched: &Touched,
    is_value_workspace: &impl Fn(&ArrayRef) -> bool,
) -> Option<Vec<Stmt>> {
    let (pos, _) = layout.leaf_arrays();
    let add_to_row = |coords: &[Expr], n: Expr| {
        Stmt::Store(Store {
            array: pos,
            index: layout.row(coords) + Expr::Int(1),
            value: n,
            accumulate: true,
        })
    };
    let recurse = |stmts| bound_stmts(stmts, layout, touched, is_value_workspace);
    let mut out = Vec::new();
    let mut stmts = stmts.into_iter();
    while let Some(s) = stmts.next() {
        match s {
            Stmt::OrderTouched { len, .. } => {
                // The loop that emits the touched coordinates, one entry each at most.
                let Some(Stmt::For(emitting)) = stmts.next() else {
                    return None;
                };
                if emitting.start != Expr::Int(0) || emitting.end != len {
                    return None;
                }
                let coords = single_emit(&emitting, layout)?;
                out.push(add_to_row(&coords, len));
            }
            // A loop that emits at most one entry an iteration into one row, and has no
            // other effect, bounds it by its trips without running (a masked product's
            // loop over the mask's row, each iteration an intersection).
            Stmt::For(l) if contains_emit(&l.body) && only_emits(&l.body) => {
                match single_emit(&l, layout) {
                    Some(coords) => {
                        let trips = Expr::bin(BinOp::Max, l.end - l.start, Expr::Int(0));
                        out.push(add_to_row(&coords, trips));
                    }
                    None => {
                        let mut l = l;
                        l.body = recurse(l.body)?;
                        out.push(Stmt::For(l));
                    }
                }
            }
            Stmt::For(mut l) => {
                l.body = recurse(l.body)?;
                out.push(Stmt::For(l));
            }
            Stmt::While(c, body) => out.push(Stmt::While(c, recurse(body)?)),
            Stmt::If(c, then, otherwise) => {
                out.push(Stmt::If(c, recurse(then)?, recurse(otherwise)?))
            }
            Stmt::Block(body) => out.push(Stmt::Block(recurse(body)?)),
            Stmt::Store(Store { array, .. })
                if touched.records(&array) || is_value_workspace(&array) => {}
            Stmt::Atomic(inner) if matches!(inner.as_ref(), Stmt::Store(st) if is_value_workspace(&st.array)) =>
                {}
            Stmt::Assign(v, _) if touched.counts.contains(&Expr::Var(v)) => {
                out.push(Stmt::Assign(v, Expr::Var(v) + Expr::Int(1)))
            }
            Stmt::Emit { coords, .. } => out.push(add_to_row(&coords, Expr::Int(1))),
            other => out.push(other),
        }
    }
    Some(out)
}

/// The coordinates of the one emit of `emitting`'s body, when there is exactly one, it
/// runs at most once an iteration (no loop between it and the body) and its row does not
/// depend on the iteration (it reads neither the loop's variable nor one declared inside).
fn single_emit(emitting: &super::Loop, layout: &RowLayout) -> Option<Vec<Expr>> {
    let mut emits = Vec::new();
    let mut inner = vec![emitting.var];
    let mut nested_loop_emits = false;
    visit::walk_stmts(&emitting.body, &mut |s| match s {
        Stmt::Emit { coords, .. } => emits.push(coords.clone()),
        Stmt::Decl(v, _) => inner.push(*v),
        Stmt::For(l) => {
            inner.push(l.var);
            nested_loop_emits |= contains_emit(&l.body);
        }
        Stmt::While(_, body) => nested_loop_emits |= contains_emit(body),
        _ => {}
    });
    let [coords] = <[Vec<Expr>; 1]>::try_from(emits).ok()?;
    let reads_inner = super::analysis::depends_on(&layout.row(&coords), &inner);
    (!nested_loop_emits && !reads_inner).then_some(coords)
}

/// True when `stmts` do nothing but emit entries: they write only variables they declare
/// (and their loops' variables), no array, and no workspace's touched list.
fn only_emits(stmts: &[Stmt]) -> bool {
    let mut own = Vec::new();
    visit::walk_stmts(stmts, &mut |s| match s {
        Stmt::Decl(v, _) => own.push(*v),
        Stmt::For(l) => own.push(l.var),
        _ => {}
    });
    !any_stmt(stmts, |s| match s {
        Stmt::Assign(v, _) => !own.contains(v),
        Stmt::Store(_)
        | Stmt::Atomic(_)
        | Stmt::OrderTouched { .. }
        | Stmt::Barrier
        | Stmt::Launch(_) => true,
        _ => false,
    })
}

/// True when the bounding body `bound` runs the same loops as the counting one (no loop
/// was bounded by its trips): counting costs no more, and is exact.
fn same_loops(bound: &[Stmt], count: &[Stmt]) -> bool {
    let loops = |stmts: &[Stmt]| {
        let mut n = 0usize;
        visit::walk_stmts(stmts, &mut |s| {
            n += usize::from(matches!(s, Stmt::For(_) | Stmt::While(..)))
        });
        n
    };
    loops(bound) == loops(count)
}

/// True when `stmts` emit an entry somewhere.
fn contains_emit(stmts: &[Stmt]) -> bool {
    any_stmt(stmts, |s| matches!(s, Stmt::Emit { .. }))
}

/// True when `stmts` order a workspace's touched list (a Gustavson row, as SpGEMM builds).
fn has_workspaces(stmts: &[Stmt]) -> bool {
    any_stmt(stmts, |s| matches!(s, Stmt::OrderTouched { .. }))
}

/// True when a statement of `stmts`, at any depth, satisfies `holds`.
fn any_stmt(stmts: &[Stmt], holds: impl Fn(&Stmt) -> bool) -> bool {
    let mut found = false;
    visit::walk_stmts(stmts, &mut |s| found |= holds(s));
    found
}

/// The body of phase 2: the loops of `body` with each emit appended at the next slot, as
/// the module describes. The slot counter and the last row are declared at the top of
/// the phase, outside any thread loop: the phase runs on one thread.
fn append_phase(function: &mut Function, layout: &RowLayout, body: Vec<Stmt>) -> Vec<Stmt> {
    let output = OperandId(0);
    let (pos, idx) = layout.leaf_arrays();
    let taken = function.fresh_var("taken", Type::Index);
    let last_row = function.fresh_var("last_row", Type::Index);
    let row_var = function.fresh_var("row", Type::Index);
    let slot = function.fresh_var("slot", Type::Index);
    let store = |array, index, value| {
        Stmt::Store(Store {
            array,
            index,
            value,
            accumulate: false,
        })
    };
    let appended = rewrite(body, &mut |s| match s {
        Stmt::Emit { coords, value } => {
            let row = Expr::Var(row_var);
            vec![Stmt::Block(vec![
                Stmt::Decl(row_var, layout.row(&coords)),
                Stmt::If(
                    Expr::lt(row.clone(), Expr::Var(last_row)),
                    vec![store(pos, Expr::Int(0), Expr::Int(1))],
                    vec![],
                ),
                Stmt::Assign(last_row, row.clone()),
                Stmt::Decl(slot, Expr::Var(taken)),
                Stmt::Assign(taken, Expr::Var(slot) + Expr::Int(1)),
                Stmt::If(
                    Expr::lt(Expr::Var(slot), Expr::Param(ParamRef::Capacity)),
                    vec![
                        store(idx, Expr::Var(slot), coords[layout.leaf_mode].clone()),
                        store(ArrayRef::Values(output), Expr::Var(slot), value),
                    ],
                    vec![],
                ),
                store(pos, row + Expr::Int(1), Expr::Var(taken)),
            ])]
        }
        other => vec![other],
    });
    let mut phase = vec![
        Stmt::Decl(taken, Expr::Int(0)),
        Stmt::Decl(last_row, Expr::Int(0)),
    ];
    phase.extend(appended);
    phase
}

/// Apply `f` to every statement of `stmts`, innermost first, replacing each by what it
/// returns.
fn rewrite(stmts: Vec<Stmt>, f: &mut impl FnMut(Stmt) -> Vec<Stmt>) -> Vec<Stmt> {
    stmts
        .into_iter()
        .flat_map(|s| {
            let s = match s {
                Stmt::For(mut l) => {
                    l.body = rewrite(l.body, f);
                    Stmt::For(l)
                }
                Stmt::While(c, body) => Stmt::While(c, rewrite(body, f)),
                Stmt::If(c, then, otherwise) => {
                    Stmt::If(c, rewrite(then, f), rewrite(otherwise, f))
                }
                Stmt::Block(body) => Stmt::Block(rewrite(body, f)),
                other => other,
            };
            f(s)
        })
        .collect()
}

/// True when a value computed into a scratch array or a value variable can change what
/// the function does besides its values: a condition, a bound, an index, a coordinate or
/// an integer variable reads one. Then the counting phase keeps every store.
fn values_steer(function: &Function) -> bool {
    let reads_value = |e: &Expr| {
        let mut found = false;
        visit::walk_expr(e, &mut |sub| match sub {
            Expr::Var(v) if matches!(function.var(*v).ty, Type::Value(_)) => found = true,
            Expr::Load(ArrayRef::Scratch(s), _)
                if function.scratch_info(*s).ty == LocalType::Value =>
            {
                found = true
            }
            _ => {}
        });
        found
    };
    let mut steers = false;
    visit::walk_stmts(&function.body, &mut |s| {
        let control: Vec<&Expr> = match s {
            Stmt::Decl(v, e) | Stmt::Assign(v, e) => {
                if matches!(function.var(*v).ty, Type::Value(_)) {
                    vec![]
                } else {
                    vec![e]
                }
            }
            Stmt::Store(Store {
                array,
                index,
                value,
                ..
            }) => {
                if matches!(function.element_type(array), Type::Value(_)) {
                    vec![index]
                } else {
                    vec![index, value]
                }
            }
            Stmt::Emit { coords, .. } => coords.iter().collect(),
            other => visit::own_exprs(other),
        };
        steers |= control.into_iter().any(reads_value);
    });
    steers
}
