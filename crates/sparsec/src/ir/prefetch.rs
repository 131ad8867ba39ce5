//! Software prefetch of the rows that a loop's coordinates locate.
//!
//! In Gustavson's SpGEMM (`C(i,j) = A(i,k) * B(k,j)`), in SpMM and in MTTKRP, each stored
//! coordinate `k` of one operand locates a row of another: `B`'s segment `pos[k]..pos[k+1]`
//! or a dense row `k * n..`. Those rows lie anywhere in memory, and where the operands do
//! not fit in cache each costs a miss that the processor cannot overlap with work: the
//! next row's address depends on a coordinate not loaded yet, behind the mispredicted end
//! of the current row's loop. [`prefetch_located_rows`] reads the coordinate
//! [`ROW_DISTANCE`] positions ahead and prefetches the start of the row it locates, and
//! twice as far ahead the segment bound that locates it, so that both arrive before they
//! are needed. (A*A on a uniform 1M x 1M matrix with 10M entries, one thread: half the
//! time; see `bench/README.md`.)
//!
//! An innermost segment loop that reads an element at each coordinate (SpMV's `x[j]`,
//! TTV's `c[k]`) misses the same way once that array outgrows the cache, though the
//! misses of consecutive entries overlap: [`prefetch_gathered_elements`] prefetches its
//! element [`ELEMENT_DISTANCE`] positions ahead.
//!
//! The hints must be safe to compute, so a row is prefetched only when all of this holds:
//! - a loop iterates a segment `pos[q]..pos[q + 1]` of an input's level and its body
//!   declares `k = idx[p]` for its position `p`: every stored coordinate of such a level
//!   is valid (storage is validated), and `idx` holds exactly the positions the segments
//!   cover, so `idx[min(p + d, len - 1)]` is a valid coordinate like `k` (`len` is
//!   [`ParamRef::Length`]);
//! - a loop nested in that body reads an input array at an index that, with the nested
//!   loop's variable at its start, is computed from `k` by the body's own declarations,
//!   from variables the body neither declares nor assigns, and from integer arithmetic,
//!   with no load but segment bounds at such an index; or, where no loop is nested in the
//!   body, the body itself reads an input array at an index so computed with no load.
//!
//! Replacing `k` by the coordinate ahead then gives an address the kernel itself could
//! compute for that coordinate: every load in it stays in bounds.
//!
//! Hints only pay where the rows miss the cache, and cost instructions elsewhere, so each
//! array's hints are guarded by two loop-invariant tests: the array is large
//! ([`LARGE_ARRAY`]) and the coordinates scatter ([`scattered`], sampled when the kernel
//! is called). [`split_hints`] lets a backend test them once per loop.

use std::collections::{HashMap, HashSet};

use super::visit;
use super::{ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, ParamRef, Stmt};

/// How many positions ahead a row is prefetched: a row's loop takes long enough that a
/// few rows cover a miss's latency, and a short distance wastes little at segment ends.
pub const ROW_DISTANCE: i64 = 4;

/// How many positions ahead an element is prefetched, in an innermost loop whose body
/// reads one element at its coordinate (SpMV's `x[j]`, TTV's `c[k]`): an entry's work is a
/// few instructions, so covering a miss takes dozens of entries, and a hint's line stays
/// in the first-level cache that long. SpMV over random 1M x 1M matrices, one thread, AMD
/// Zen 3 (x beyond the last-level cache), a C harness of the scalar loop, median ms with
/// no hints / hints 32 ahead / 64 ahead: 3 entries a row 56 / 27 / 21, 10 a row
/// 115 / 74 / 45, 40 a row 296 / 216 / 200.
pub const ELEMENT_DISTANCE: i64 = 64;

/// The fewest elements an array must hold to be prefetched. A smaller one (1 MiB of
/// `double`s, less of indices) mostly stays in a core's cache, where a hint only costs
/// instructions: MTTKRP with 1000 x 32 factors took 3-5% longer with them. The test is
/// loop-invariant, so the compiler can hoist it out of the loop.
pub const LARGE_ARRAY: i64 = 1 << 17;

/// How far apart two coordinates [`ROW_DISTANCE`] positions apart must be for the rows
/// they locate to count as scattered: nearer rows (a banded matrix's) come in order, and
/// the hardware's own prefetcher or the cache already holds them. SpMM on a banded 1M x 1M
/// matrix took 56 ms with hints against 49 ms without.
pub const SCATTER_GAP: i64 = 1024;

/// Whether `len` coordinates (`coord(p)` is the one at position `p`) locate scattered rows:
/// of at most 256 evenly spaced positions, more than a quarter are over [`SCATTER_GAP`]
/// from the coordinate [`ROW_DISTANCE`] positions later. A kernel's hints run only then
/// ([`ParamRef::Scattered`]); sampling costs a few hundred loads per call.
pub fn scattered(len: usize, coord: impl Fn(usize) -> i64) -> bool {
    let distance = ROW_DISTANCE as usize;
    if len <= distance {
        return false;
    }
    let samples = (len - distance).min(256);
    let step = (len - distance) / samples;
    let far = (0..samples)
        .filter(|s| {
            let p = s * step;
            (coord(p + distance) - coord(p)).abs() > SCATTER_GAP
        })
        .count();
    far * 4 > samples
}

/// `flag != 0 && Length(array) >= min_length`: the run-time test that a property the
/// runtime samples from an input holds ([`ParamRef::Scattered`], [`ParamRef::Uneven`])
/// and that `array` is large. Hints run under one (see [`hint_guard`]), and so do the
/// versions of loops chosen for large inputs (`gather`, the C backend's row sums).
pub fn sampled_and_large(flag: ParamRef, array: ArrayRef, min_length: i64) -> Expr {
    Expr::and(
        Expr::bin(BinOp::Ne, Expr::Param(flag), Expr::Int(0)),
        Expr::bin(
            BinOp::Ge,
            Expr::Param(ParamRef::Length(array)),
            Expr::Int(min_length),
        ),
    )
}

/// The flag and array of the test guarding hints `s`, as this pass builds it with
/// [`sampled_and_large`]; `None` when `s` is not such a guard.
pub fn hint_guard(s: &Stmt) -> Option<(ParamRef, ArrayRef)> {
    let Stmt::If(Expr::Bin(BinOp::And, flag, large), ..) = s else {
        return None;
    };
    match (&**flag, &**large) {
        (Expr::Bin(BinOp::Ne, flag, zero), Expr::Bin(BinOp::Ge, length, _))
            if **zero == Expr::Int(0) =>
        {
            match (&**flag, &**length) {
                (Expr::Param(flag), Expr::Param(ParamRef::Length(array))) => Some((*flag, *array)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Add prefetches of located rows (see the module documentation) at the top of every loop
/// whose body locates them.
pub fn prefetch_located_rows(function: &mut Function) {
    for s in &mut function.body {
        prefetch_in(s);
    }
}

/// A loop whose body begins with guarded hints, split in two (see [`split_hints`]).
pub struct SplitHints {
    /// True when any guard holds.
    pub any: Expr,
    /// The loop with its hints unguarded.
    pub hinted: Loop,
    /// The loop without its hints.
    pub plain: Loop,
}

/// When `l`'s body begins with guarded hints (as this pass adds them), `l` split into a
/// loop that runs them all and one that runs none. The guards are loop-invariant, so a
/// backend may test them once and run one of the two loops ("unswitch"): testing them in
/// every iteration cost 5% on a banded SpMM whose rows are never prefetched.
pub fn split_hints(l: &Loop) -> Option<SplitHints> {
    let guarded = l.body.iter().take_while(|s| is_guarded_hint(s)).count();
    let any = l.body[..guarded]
        .iter()
        .map(|s| match s {
            Stmt::If(guard, ..) => guard.clone(),
            _ => unreachable!("counted as a guarded hint"),
        })
        .reduce(|a, b| Expr::bin(BinOp::Or, a, b))?;
    let plain = Loop {
        body: l.body[guarded..].to_vec(),
        ..l.clone()
    };
    let mut hinted = plain.clone();
    let hints = l.body[..guarded].iter().flat_map(|s| match s {
        Stmt::If(_, hints, _) => hints.clone(),
        _ => unreachable!("counted as a guarded hint"),
    });
    hinted.body.splice(0..0, hints);
    Some(SplitHints { any, hinted, plain })
}

/// True for hints under a guard, as this pass adds them: `if (guard) { prefetch... }`.
pub fn is_guarded_hint(s: &Stmt) -> bool {
    matches!(s, Stmt::If(_, hints, otherwise)
        if otherwise.is_empty() && hints.iter().all(|h| matches!(h, Stmt::Prefetch { .. })))
}

fn prefetch_in(s: &mut Stmt) {
    // A loop's hints are found before its body gets its own.
    let hints = match s {
        Stmt::For(l) => row_prefetches(l),
        _ => Vec::new(),
    };
    for body in visit::children_mut(s) {
        body.iter_mut().for_each(prefetch_in);
    }
    if let Stmt::For(l) = s {
        l.body.splice(0..0, hints);
    }
}

/// The prefetches for the rows that `l`'s coordinates locate, empty when it locates none.
fn row_prefetches(l: &Loop) -> Vec<Stmt> {
    let Some((coord, coords)) = segment_coordinate(l) else {
        return Vec::new();
    };
    let ahead = |distance: i64| coordinate_ahead(l, coords, distance);
    let body = Body::of(l, coord);
    let mut near = Vec::new();
    let mut far = Vec::new();
    visit::walk_stmts(&l.body, &mut |s| {
        let Stmt::For(row) = s else { return };
        let mut reads = Vec::new();
        visit::walk_stmt_exprs(&row.body, &mut |e| {
            if let Expr::Load(array, index) = e {
                if array.input_operand().is_some() {
                    reads.push((*array, index));
                }
            }
        });
        for (array, index) in reads {
            let at_start = |coord_ahead: &Expr| {
                body.rewrite(index, coord_ahead, Some((row.var, &row.start)))
                    .filter(|r| r.uses_coord)
            };
            let (Some(soon), Some(later)) = (
                at_start(&ahead(ROW_DISTANCE)),
                at_start(&ahead(2 * ROW_DISTANCE)),
            ) else {
                continue;
            };
            near.push(Stmt::Prefetch {
                array,
                index: super::simplify(&soon.expr),
            });
            visit::walk_expr(&later.expr, &mut |e| {
                if let Expr::Load(
                    bounds @ ArrayRef::Level {
                        kind: ArrayKind::Pos,
                        ..
                    },
                    index,
                ) = e
                {
                    far.push(Stmt::Prefetch {
                        array: *bounds,
                        index: super::simplify(index),
                    });
                }
            });
        }
    });
    // One test per array, around its distinct hints, far ones first.
    let mut by_array: Vec<(ArrayRef, Vec<Stmt>)> = Vec::new();
    for hint in far.into_iter().chain(near) {
        let Stmt::Prefetch { array, .. } = hint else {
            unreachable!("only hints are collected")
        };
        match by_array.iter_mut().find(|(a, _)| *a == array) {
            Some((_, hints)) if hints.contains(&hint) => {}
            Some((_, hints)) => hints.push(hint),
            None => by_array.push((array, vec![hint])),
        }
    }
    by_array
        .into_iter()
        .map(|(array, hints)| {
            let guard = sampled_and_large(ParamRef::Scattered(coords), array, LARGE_ARRAY);
            Stmt::If(guard, hints, Vec::new())
        })
        .collect()
}

/// The coordinate `distance` positions after `l`'s, or the last one: `coords[min(p +
/// distance, len - 1)]`.
fn coordinate_ahead(l: &Loop, coords: ArrayRef, distance: i64) -> Expr {
    let last = Expr::Param(ParamRef::Length(coords)) - Expr::Int(1);
    Expr::load(
        coords,
        Expr::min(Expr::Var(l.var) + Expr::Int(distance), last),
    )
}

/// Give every top-level statement holding innermost segment loops that read elements at
/// their coordinates (see the module documentation) a second version in which those
/// loops prefetch them: `flag = tests; if (flag) { hinted version } else { the statement
/// }`, where the tests are, for any hinted array, that its coordinates scatter and it is
/// large ([`sampled_and_large`]). The test is made once, outside the loops: tested at
/// each segment, as rows' hints are, TTV on a 1000^3 tensor with 2.4M entries (fibers of
/// 2.4 entries, hints off) took 10.0-10.9 ms before hints and 11.8-12.2 ms after.
pub fn prefetch_gathered_elements(function: &mut Function) {
    function.version_statements("prefetch_elements", |_, plain| {
        let mut hinted = plain.clone();
        let mut guards = Vec::new();
        hint_elements_in(&mut hinted, &mut guards);
        let any = guards
            .into_iter()
            .reduce(|a, b| Expr::bin(BinOp::Or, a, b))?;
        Some((any, hinted))
    });
}

/// Add the prefetches of [`element_prefetches`] at the top of every loop in `s` that has
/// some, noting each hinted array's guard in `guards` once.
fn hint_elements_in(s: &mut Stmt, guards: &mut Vec<Expr>) {
    for body in visit::children_mut(s) {
        body.iter_mut().for_each(|s| hint_elements_in(s, guards));
    }
    let Stmt::For(l) = s else { return };
    let Some((coords, hints)) = element_prefetches(l) else {
        return;
    };
    for hint in &hints {
        let Stmt::Prefetch { array, .. } = hint else {
            unreachable!("only hints are made")
        };
        let guard = sampled_and_large(ParamRef::Scattered(coords), *array, LARGE_ARRAY);
        if !guards.contains(&guard) {
            guards.push(guard);
        }
    }
    l.body.splice(0..0, hints);
}

/// The coordinates of `l` and the prefetches of the elements they locate, when `l` is an
/// innermost segment loop (no loop nested in its body) whose coordinates locate some.
fn element_prefetches(l: &Loop) -> Option<(ArrayRef, Vec<Stmt>)> {
    let (coord, coords) = segment_coordinate(l)?;
    let mut innermost = true;
    visit::walk_stmts(&l.body, &mut |s| innermost &= !matches!(s, Stmt::For(_)));
    if !innermost {
        return None;
    }
    let body = Body::of(l, coord);
    let ahead = coordinate_ahead(l, coords, ELEMENT_DISTANCE);
    let mut hints = Vec::new();
    visit::walk_stmt_exprs(&l.body, &mut |e| {
        let Expr::Load(array, index) = e else { return };
        let element = array
            .input_operand()
            .and_then(|_| body.rewrite(index, &ahead, None))
            .filter(|r| r.uses_coord && !r.loads);
        if let Some(element) = element {
            let hint = Stmt::Prefetch {
                array: *array,
                index: super::simplify(&element.expr),
            };
            if !hints.contains(&hint) {
                hints.push(hint);
            }
        }
    });
    (!hints.is_empty()).then_some((coords, hints))
}

/// When `l` iterates a segment `pos[q]..pos[q + 1]` of an input's level and its body
/// first declares a variable as the coordinate at `l`'s position: that variable and the
/// level's coordinate array.
pub(super) fn segment_coordinate(l: &Loop) -> Option<(super::Var, ArrayRef)> {
    let (
        Expr::Load(
            ArrayRef::Level {
                operand,
                level,
                kind: ArrayKind::Pos,
            },
            q,
        ),
        Expr::Load(bounds, q_next),
    ) = (&l.start, &l.end)
    else {
        return None;
    };
    let pos = ArrayRef::Level {
        operand: *operand,
        level: *level,
        kind: ArrayKind::Pos,
    };
    let next = Expr::Bin(BinOp::Add, q.clone(), Box::new(Expr::Int(1)));
    if operand.0 == 0 || *bounds != pos || **q_next != next {
        return None;
    }
    let coords = ArrayRef::Level {
        operand: *operand,
        level: *level,
        kind: ArrayKind::Idx,
    };
    l.body.iter().find_map(|s| match s {
        Stmt::Decl(v, Expr::Load(a, p)) if *a == coords && **p == Expr::Var(l.var) => {
            Some((*v, coords))
        }
        _ => None,
    })
}

/// What a segment loop's body declares, to rewrite an index for another coordinate.
struct Body<'a> {
    /// The loop's position variable.
    position: super::Var,
    /// The variable holding the coordinate at that position.
    coord: super::Var,
    /// Variables declared once in the body with their initial values.
    defs: HashMap<super::Var, &'a Expr>,
    /// Variables the body declares (as variables or loop variables) or assigns.
    varying: HashSet<super::Var>,
}

/// An index rewritten for another coordinate.
struct Rewritten {
    expr: Expr,
    /// The index depends on the coordinate (else it locates nothing).
    uses_coord: bool,
    /// It loads a segment bound.
    loads: bool,
}

impl<'a> Body<'a> {
    fn of(l: &'a Loop, coord: super::Var) -> Body<'a> {
        let mut defs = HashMap::new();
        let mut varying = HashSet::new();
        let mut assigned = HashSet::new();
        visit::walk_stmts(&l.body, &mut |s| match s {
            Stmt::Decl(v, e) => {
                defs.insert(*v, e);
                varying.insert(*v);
            }
            Stmt::For(inner) => {
                varying.insert(inner.var);
            }
            Stmt::Assign(v, _) => {
                assigned.insert(*v);
            }
            _ => {}
        });
        defs.retain(|v, _| !assigned.contains(v));
        varying.extend(assigned);
        Body {
            position: l.var,
            coord,
            defs,
            varying,
        }
    }

    /// `e` with the coordinate replaced by `coord_ahead`, declarations inlined and the
    /// variable of `row` (a nested loop) at its start; `None` when `e` is not an index
    /// that the coordinate locates in the module's sense.
    fn rewrite(
        &self,
        e: &Expr,
        coord_ahead: &Expr,
        row: Option<(super::Var, &Expr)>,
    ) -> Option<Rewritten> {
        let plain = |expr: Expr| {
            Some(Rewritten {
                expr,
                uses_coord: false,
                loads: false,
            })
        };
        match e {
            Expr::Int(_) | Expr::Param(_) => plain(e.clone()),
            Expr::Var(v) if *v == self.coord => Some(Rewritten {
                expr: coord_ahead.clone(),
                uses_coord: true,
                loads: false,
            }),
            Expr::Var(v) => match row {
                Some((var, start)) if var == *v => self.rewrite(start, coord_ahead, None),
                _ if *v == self.position => None,
                _ => match self.defs.get(v) {
                    Some(def) => self.rewrite(def, coord_ahead, row),
                    None if self.varying.contains(v) => None,
                    None => plain(e.clone()),
                },
            },
            Expr::Load(
                array @ ArrayRef::Level {
                    kind: ArrayKind::Pos,
                    ..
                },
                index,
            ) if array.input_operand().is_some() => {
                let index = self.rewrite(index, coord_ahead, row)?;
                (index.uses_coord && !index.loads).then(|| Rewritten {
                    expr: Expr::load(*array, index.expr),
                    uses_coord: true,
                    loads: true,
                })
            }
            Expr::Neg(a) => {
                let a = self.rewrite(a, coord_ahead, row)?;
                Some(Rewritten {
                    expr: Expr::Neg(Box::new(a.expr)),
                    ..a
                })
            }
            Expr::Bin(op, a, b) => {
                let divides = matches!(op, BinOp::Div | BinOp::Rem);
                let arithmetic = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul)
                    || matches!(op, BinOp::Min | BinOp::Max)
                    || (divides && matches!(**b, Expr::Int(d) if d != 0));
                if !arithmetic {
                    return None;
                }
                let (a, b) = (
                    self.rewrite(a, coord_ahead, row)?,
                    self.rewrite(b, coord_ahead, row)?,
                );
                Some(Rewritten {
                    expr: Expr::bin(*op, a.expr, b.expr),
                    uses_coord: a.uses_coord || b.uses_coord,
                    loads: a.loads || b.loads,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{self, Decl};
    use crate::ir::{ParamKind, Var};
    use crate::tensor::{Coo, Tensor, ValueType};

    /// `expr` lowered with the default schedule, its tensors `(name, format, dims)`, and
    /// a random tensor of each format (the output's too), built with `seed`.
    fn lowered(expr: &str, tensors: &[Decl], seed: u64) -> (Function, Vec<Tensor>) {
        let lowered = testing::lowered(expr, tensors);
        let mut state = seed;
        let mut next = |bound: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % bound as u64) as i64
        };
        let operands = lowered
            .operands
            .iter()
            .map(|op| {
                let (_, _, dims) = tensors[op.tensor];
                let mut coo = Coo::new(dims.to_vec(), Vec::new(), Vec::new()).unwrap();
                // About a third of the coordinates, so that some rows are empty.
                let cells: usize = dims.iter().product();
                for _ in 0..cells / 3 {
                    coo.coords.extend(dims.iter().map(|&d| next(d)));
                    coo.values.push(1.0);
                }
                Tensor::from_coo(&coo, &op.format, ValueType::F64).unwrap()
            })
            .collect();
        (lowered.function, operands)
    }

    /// Every segment loop with prefetches, and its hints, guarded (rows') or not
    /// (elements').
    fn hinted_loops(f: &Function) -> Vec<(&Loop, Vec<&Stmt>)> {
        let mut out = Vec::new();
        visit::walk_stmts(&f.body, &mut |s| {
            if let Stmt::For(l) = s {
                let hints: Vec<&Stmt> = l
                    .body
                    .iter()
                    .flat_map(|s| match s {
                        Stmt::If(_, hints, _) => hints.iter().collect(),
                        hint => vec![hint],
                    })
                    .filter(|s| matches!(s, Stmt::Prefetch { .. }))
                    .collect();
                if !hints.is_empty() {
                    out.push((l, hints));
                }
            }
        });
        out
    }

    /// The value of a hint's index with the loop's position at `p`, every load checked
    /// against its array's bounds (a panic names the first one out of bounds).
    fn eval(e: &Expr, position: Var, p: i64, operands: &[Tensor]) -> i64 {
        let array = |a: &ArrayRef| -> Vec<i64> {
            match *a {
                ArrayRef::Level {
                    operand,
                    level,
                    kind,
                } => operands[operand.0]
                    .view()
                    .array(level, kind)
                    .expect("a stored array")
                    .to_array()
                    .to_i64()
                    .into_owned(),
                _ => panic!("a hint loads {a:?}"),
            }
        };
        match e {
            Expr::Int(v) => *v,
            Expr::Var(v) if *v == position => p,
            Expr::Param(ParamRef::Length(a)) => array(a).len() as i64,
            Expr::Param(ParamRef::Level {
                operand,
                level,
                kind: ParamKind::Size,
            }) => operands[operand.0].view().param(*level, ParamKind::Size),
            Expr::Load(a, index) => {
                let i = eval(index, position, p, operands);
                let values = array(a);
                assert!(
                    (0..values.len() as i64).contains(&i),
                    "load {i} of {a:?}, which has {} entries",
                    values.len()
                );
                values[i as usize]
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (
                    eval(a, position, p, operands),
                    eval(b, position, p, operands),
                );
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Min => a.min(b),
                    BinOp::Max => a.max(b),
                    BinOp::Div => a / b,
                    BinOp::Rem => a % b,
                    _ => panic!("a hint computes {op:?}"),
                }
            }
            _ => panic!("a hint holds {e:?}"),
        }
    }

    /// Check that every hint of `f`, at every position of every operand's coordinate
    /// array, loads in bounds and addresses at most one past its array's end.
    fn check_in_bounds(f: &Function, operands: &[Tensor]) -> usize {
        let mut checked = 0;
        for (l, hints) in hinted_loops(f) {
            let (_, coords) = segment_coordinate(l).expect("hints only in segment loops");
            let ArrayRef::Level { operand, level, .. } = coords else {
                unreachable!()
            };
            let len = operands[operand.0]
                .view()
                .array(level, ArrayKind::Idx)
                .unwrap()
                .len();
            for hint in hints {
                let Stmt::Prefetch { array, index } = hint else {
                    unreachable!()
                };
                let end = match *array {
                    ArrayRef::Level {
                        operand,
                        level,
                        kind,
                    } => operands[operand.0].view().array(level, kind).unwrap().len(),
                    ArrayRef::Values(operand) => operands[operand.0].values().len(),
                    ArrayRef::Scratch(_) => panic!("a hint of a scratch array"),
                };
                for p in 0..len as i64 {
                    let at = eval(index, l.var, p, operands);
                    assert!(
                        (0..=end as i64).contains(&at),
                        "{hint:?} at {p}: {at} of {end}"
                    );
                    checked += 1;
                }
            }
        }
        checked
    }

    fn hinted_arrays(f: &Function) -> Vec<String> {
        let mut names: Vec<String> = hinted_loops(f)
            .into_iter()
            .flat_map(|(_, hints)| hints)
            .map(|hint| match hint {
                Stmt::Prefetch { array, .. } => format!("{array:?}"),
                _ => unreachable!(),
            })
            .collect();
        names.sort();
        names
    }

    #[test]
    fn located_rows_and_elements_are_prefetched_in_bounds() {
        let cases: [(&str, &[Decl], usize); 6] = [
            // SpMV: x's element at each coordinate (in the scalar and the vector loop).
            (
                "y(i) = A(i,j) * x(j)",
                &[("y", "d", &[6]), ("A", "csr", &[6, 5]), ("x", "d", &[5])],
                1,
            ),
            // TTV: c's element at each coordinate of a fiber.
            (
                "Y(i,j) = B(i,j,k) * c(k)",
                &[
                    ("Y", "dd", &[4, 3]),
                    ("B", "sss", &[4, 3, 5]),
                    ("c", "d", &[5]),
                ],
                1,
            ),
            // Gustavson's SpGEMM: B's segment bound, coordinates and values.
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "csr", &[9, 8]),
                    ("A", "csr", &[9, 7]),
                    ("B", "csr", &[7, 8]),
                ],
                3,
            ),
            // SpMM: B's dense row.
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "dd", &[9, 5]),
                    ("A", "csr", &[9, 7]),
                    ("B", "dd", &[7, 5]),
                ],
                1,
            ),
            // MTTKRP over CSF: rows of both factors, each from its own level's loop.
            (
                "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
                &[
                    ("A", "dd", &[4, 3]),
                    ("B", "sss", &[4, 5, 6]),
                    ("C", "dd", &[5, 3]),
                    ("D", "dd", &[6, 3]),
                ],
                2,
            ),
            // A^T * A, Gustavson rows over a transposed copy of A.
            (
                "C(i,j) = A(k,i) * A(k,j)",
                &[("C", "csr", &[7, 7]), ("A", "csr", &[9, 7])],
                3,
            ),
        ];
        for (expr, tensors, expected) in cases {
            for seed in 0..20 {
                let (f, operands) = lowered(expr, tensors, seed);
                let arrays = hinted_arrays(&f);
                let distinct: std::collections::BTreeSet<_> = arrays.iter().collect();
                assert_eq!(distinct.len(), expected, "{expr}: {arrays:?}");
                assert!(
                    check_in_bounds(&f, &operands) > 0,
                    "{expr}: no hint evaluated"
                );
            }
        }
    }

    #[test]
    fn nothing_is_prefetched_where_no_coordinate_locates_a_row_or_element() {
        let cases: [(&str, &[Decl]); 4] = [
            // SpMV over CSC: the element read (`x[j]`) is at the outer loop's coordinate,
            // not the segment's.
            (
                "y(i) = A(i,j) * x(j)",
                &[("y", "d", &[6]), ("A", "csc", &[6, 5]), ("x", "d", &[5])],
            ),
            // A hashed level is iterated slot by slot, not as a segment.
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "dd", &[6, 4]),
                    ("A", "dh", &[6, 5]),
                    ("B", "dd", &[5, 4]),
                ],
            ),
            // B's rows are found by a search of its compressed outer level.
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "csr", &[6, 4]),
                    ("A", "csr", &[6, 5]),
                    ("B", "dcsr", &[5, 4]),
                ],
            ),
            // Dense A: no stored coordinates.
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "dd", &[6, 4]),
                    ("A", "dd", &[6, 5]),
                    ("B", "csr", &[5, 4]),
                ],
            ),
        ];
        for (expr, tensors) in cases {
            let (f, _) = lowered(expr, tensors, 1);
            assert_eq!(
                hinted_arrays(&f),
                Vec::<String>::new(),
                "{expr} with {tensors:?}"
            );
        }
    }

    #[test]
    fn scattered_coordinates_are_told_from_near_ones() {
        // CSR rows of a uniform random 100k x 100k matrix, 8 entries each: far apart.
        let mut state = 7u64;
        let mut uniform = Vec::new();
        for _ in 0..1000 {
            let mut row: Vec<i64> = (0..8)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    ((state >> 33) % 100_000) as i64
                })
                .collect();
            row.sort_unstable();
            uniform.extend(row);
        }
        assert!(scattered(uniform.len(), |p| uniform[p]));
        // A banded matrix's rows: each within a few columns of the last.
        let banded: Vec<i64> = (0..1000i64)
            .flat_map(|i| (i.saturating_sub(3)..(i + 4).min(1000)).collect::<Vec<_>>())
            .collect();
        assert!(!scattered(banded.len(), |p| banded[p]));
        // Too short to look ahead.
        assert!(!scattered(ROW_DISTANCE as usize, |_| 0));
    }

    #[test]
    fn split_hints_give_a_loop_with_all_hints_and_one_without() {
        let (f, _) = lowered(
            "C(i,j) = A(i,k) * B(k,j)",
            &[
                ("C", "csr", &[9, 8]),
                ("A", "csr", &[9, 7]),
                ("B", "csr", &[7, 8]),
            ],
            0,
        );
        let mut split = 0;
        for (l, hints) in hinted_loops(&f) {
            let SplitHints { any, hinted, plain } = split_hints(l).expect("guarded hints");
            let unguarded: Vec<&Stmt> = hinted.body.iter().take(hints.len()).collect();
            assert_eq!(unguarded, hints);
            assert_eq!(hinted.body[hints.len()..], plain.body[..]);
            let arrays: std::collections::BTreeSet<String> = hints
                .iter()
                .map(|h| match h {
                    Stmt::Prefetch { array, .. } => format!("{array:?}"),
                    _ => unreachable!(),
                })
                .collect();
            assert_eq!(
                l.body.len(),
                plain.body.len() + arrays.len(),
                "a guard per array"
            );
            assert!(!plain
                .body
                .iter()
                .any(|s| matches!(s, Stmt::Prefetch { .. })));
            assert!(matches!(any, Expr::Bin(BinOp::Or, ..)));
            split += 1;
        }
        assert_eq!(
            split, 4,
            "the counting, bounding, placing and appending phases"
        );
    }
}
