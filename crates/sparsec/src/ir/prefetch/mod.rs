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
//! time; see `bench/HISTORY.md`.)
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
//!
//! The rows' hints are made in `rows.rs`, the elements' in `elements.rs`; this module holds
//! what both use: the segment loops they apply to, the rewriting of an index for a
//! coordinate ahead, and the guards.

use std::collections::{HashMap, HashSet};

use super::visit;
use super::{ArrayKind, ArrayRef, BinOp, Expr, Loop, ParamRef, Stmt};

mod elements;
mod rows;

pub use elements::prefetch_gathered_elements;
pub use rows::{hint_guard, is_guarded_hint, prefetch_located_rows, split_hints, SplitHints};

/// How many positions ahead a row is prefetched: a row's loop takes long enough that a
/// few rows cover a miss's latency, and a short distance wastes little at segment ends.
pub const ROW_DISTANCE: i64 = 4;

/// How many positions ahead an element is prefetched, in an innermost loop whose body
/// reads one element at its coordinate (SpMV's `x[j]`, TTV's `c[k]`): an entry's work is a
/// few instructions, so covering a miss takes dozens of entries, and a hint's line stays
/// in the first-level cache that long. SpMV over random 1M x 1M matrices, one thread, AMD
/// Zen 3 (x beyond the last-level cache), a C harness of the scalar loop, median ms with
/// no hints / hints 32 ahead / 64 ahead: 3 entries a row 56 / 27 / 21, 10 a row
/// 115 / 74 / 45, 40 a row 296 / 216 / 200. Kernels read it as a parameter
/// ([`ParamRef::PrefetchDistance`]), and the ones that measure their versions also try
/// [`FAR_ELEMENT_DISTANCE`].
pub const ELEMENT_DISTANCE: i64 = 64;

/// A farther distance, tried as a version of the prefetching loop: on an Intel Xeon
/// (AVX-512, 48 KiB first-level cache) SpMV over a uniform random 1M x 1M matrix with 10M
/// entries took 53.4 ms with hints 64 ahead and 39.6 ms with hints 512 ahead (at 2
/// threads 27.2 and 18.8), where a power-law matrix gained nothing; 512 lines fill a
/// 32 KiB first-level cache, so no fixed choice is safe for every machine.
pub const FAR_ELEMENT_DISTANCE: i64 = 512;

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

/// The coordinate `distance` positions after `l`'s, or the last one: `coords[min(p +
/// distance, len - 1)]`.
fn coordinate_ahead(l: &Loop, coords: ArrayRef, distance: Expr) -> Expr {
    let last = Expr::Param(ParamRef::Length(coords)) - Expr::Int(1);
    Expr::load(coords, Expr::min(Expr::Var(l.var) + distance, last))
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
mod checks;

#[cfg(test)]
mod tests {
    use super::checks::{hinted_arrays, lowered};
    use super::*;
    use crate::ir::testing::Decl;

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
}
