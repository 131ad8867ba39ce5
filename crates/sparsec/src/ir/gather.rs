//! Sums over uneven segments gathered in SIMD lanes: `acc += v[p] * x[idx[p]]` over a
//! compressed segment `pos[q]..pos[q + 1]` (SpMV's row, TTV's fiber) gets a second version,
//! a [`ParallelUnit::CpuVector`] loop that a backend may run with masked gathers, chosen
//! at run time when the segments' lengths vary and the gathered array is large.
//!
//! Why both conditions. A scalar loop over a short segment ends with a branch whose
//! outcome depends on the segment's length: when lengths vary from one segment to the
//! next, it mispredicts about once a segment, and the loads of `x` in flight behind it are
//! thrown away. A masked gather covers a segment of up to 8 entries in one iteration, with
//! no branch on its length. Where `x` stays in the first-level cache the scalar loads are
//! cheaper than gathers (AMD Zen 4 issues a gather's 8 loads over several cycles), and
//! where segments all have one length the branch predicts well. Measured with C harnesses
//! of both loops at one thread (`int32` indices, 10 entries a row on average):
//!
//! | matrix | scalar | gathers |
//! |---|---:|---:|
//! | uniform 1M x 1M, rows of varying length | 32.1 ms | 19.0 ms |
//! | banded 1M x 1M (41 diagonals), varying rows | 12.9 ms | 11.1 ms |
//! | uniform 32k x 32k / 16k x 16k | 0.36 / 0.095 ms | 0.29 / 0.145 ms |
//! | banded 100k x 100k, every row 12 entries | 0.58 ms | 1.04 ms |
//! | banded 100k x 100k, varying rows | 1.27 ms | 1.05 ms |
//!
//! Hence [`GATHER_MIN_LENGTH`] and [`uneven`].

use super::analysis::{self, SumReduction};
use super::{prefetch, visit};
use super::{
    ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, LoopKind, OmpSchedule, ParallelUnit,
    ParamRef, Reduction, Stmt, Type, ValueType, Var,
};

/// The fewest elements the gathered array must hold for the gathering version to run:
/// 32768 `double`s (256 KiB), where the measured crossover on uniform random matrices lay
/// (16k columns: scalar 1.5x faster; 32k: gathers 1.2x faster).
pub const GATHER_MIN_LENGTH: i64 = 1 << 15;

/// Whether segments of `segments + 1` bounds (`bound(s)` is the `s`-th) have lengths that
/// vary: of at most 256 evenly spaced segments, more than a quarter differ in length from
/// the segment after them. Sampled by the runtime when the kernel is called
/// ([`ParamRef::Uneven`]).
pub fn uneven(segments: usize, bound: impl Fn(usize) -> i64) -> bool {
    if segments < 2 {
        return false;
    }
    let samples = (segments - 1).min(256);
    let step = (segments - 1) / samples;
    let differing = (0..samples)
        .filter(|s| {
            let q = s * step;
            bound(q + 1) - bound(q) != bound(q + 2) - bound(q + 1)
        })
        .count();
    differing * 4 > samples
}

/// A sum `acc += values[p] * gathered[coords[p]]` over a segment loop, as
/// [`gathered_dot`] finds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GatheredDot {
    pub accumulator: Var,
    /// Read at the loop's position.
    pub values: ArrayRef,
    /// The coordinates, read at the loop's position.
    pub coords: ArrayRef,
    /// Read at the coordinate.
    pub gathered: ArrayRef,
    /// The segment bounds the loop runs between.
    pub bounds: ArrayRef,
}

/// `l` as a gathered dot product: a loop over a segment of an input's compressed level
/// whose body declares the coordinate at its position (and copies of it) and then only
/// adds the product of a `double` value read at the position and one read at the
/// coordinate into an accumulator of `double`s.
pub fn gathered_dot(function: &Function, l: &Loop) -> Option<GatheredDot> {
    // The vector version this pass makes is matched as the serial loop it came from.
    let serial_or_vector = matches!(
        l.kind,
        LoopKind::Serial
            | LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                ..
            }
    );
    let Some(SumReduction {
        accumulator,
        indirect: true,
        flag: None,
    }) = serial_or_vector
        .then(|| analysis::summed_body(function, l))
        .flatten()
    else {
        return None;
    };
    let (coord, coords) = super::prefetch::segment_coordinate(l)?;
    let ArrayRef::Level { operand, level, .. } = coords else {
        return None;
    };
    let bounds = ArrayRef::Level {
        operand,
        level,
        kind: ArrayKind::Pos,
    };
    let (last, copies) = l.body.split_last()?;
    let mut names_of_coord = vec![coord];
    for s in copies {
        match s {
            Stmt::Decl(v, Expr::Load(a, p))
                if *v == coord && *a == coords && **p == Expr::Var(l.var) => {}
            Stmt::Decl(v, Expr::Var(w)) if names_of_coord.contains(w) => names_of_coord.push(*v),
            _ => return None,
        }
    }
    let mut last = last;
    while let Stmt::Block(inner) = last {
        match inner.as_slice() {
            [only] => last = only,
            _ => return None,
        }
    }
    let Stmt::Assign(acc, Expr::Bin(BinOp::Add, sum, term)) = last else {
        return None;
    };
    let Expr::Bin(BinOp::Mul, a, b) = &**term else {
        return None;
    };
    if *acc != accumulator || **sum != Expr::Var(accumulator) {
        return None;
    }
    let at_position = |e: &Expr| match e {
        Expr::Load(values, p) if **p == Expr::Var(l.var) && *values != coords => Some(*values),
        _ => None,
    };
    let at_coordinate = |e: &Expr| match e {
        Expr::Load(gathered, j) if matches!(&**j, Expr::Var(w) if names_of_coord.contains(w)) => {
            Some(*gathered)
        }
        _ => None,
    };
    let (values, gathered) = match (at_position(a), at_coordinate(b)) {
        (Some(v), Some(g)) => (v, g),
        _ => (at_position(b)?, at_coordinate(a)?),
    };
    let double = Type::Value(ValueType::F64);
    let doubles = function.var(accumulator).ty == double
        && function.element_type(&values) == double
        && function.element_type(&gathered) == double
        && gathered.input_operand().is_some();
    doubles.then_some(GatheredDot {
        accumulator,
        values,
        coords,
        gathered,
        bounds,
    })
}

/// Give every top-level statement holding gathered dot products (see the module
/// documentation) a second version in which they are vector loops, run when every one's
/// segments are uneven and its gathered array holds at least [`GATHER_MIN_LENGTH`]
/// elements: `flag = tests; if (flag) { vector version } else { the statement }`. The
/// test is made once, outside the loops, and the scalar version is the statement as it
/// was: with the choice made at each segment instead, TTV on 200^3 (fibers of 2 entries)
/// took 4-16% more instructions and up to 20% more time where the vector loops never ran.
pub fn gather_uneven_sums(function: &mut Function) {
    let body = std::mem::take(&mut function.body);
    let mut versioned = Vec::with_capacity(body.len());
    for scalar in body {
        let mut vector = scalar.clone();
        let mut pairs = Vec::new();
        vectorise(function, &mut vector, &mut pairs);
        let Some(test) = pairs
            .into_iter()
            .map(|(gathered, bounds)| {
                prefetch::sampled_and_large(ParamRef::Uneven(bounds), gathered, GATHER_MIN_LENGTH)
            })
            .reduce(Expr::and)
        else {
            versioned.push(scalar);
            continue;
        };
        let flag = function.fresh_var("gathers", Type::Bool);
        versioned.push(Stmt::Decl(flag, test));
        versioned.push(Stmt::If(Expr::Var(flag), vec![vector], vec![scalar]));
    }
    function.body = versioned;
}

/// Make every gathered dot product in `s` a vector loop, noting its (gathered array,
/// segment bounds) in `pairs` once.
fn vectorise(function: &Function, s: &mut Stmt, pairs: &mut Vec<(ArrayRef, ArrayRef)>) {
    if let Stmt::For(l) = s {
        if let Some(dot) = (l.kind == LoopKind::Serial)
            .then(|| gathered_dot(function, l))
            .flatten()
        {
            if !pairs.contains(&(dot.gathered, dot.bounds)) {
                pairs.push((dot.gathered, dot.bounds));
            }
            l.kind = LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                schedule: OmpSchedule::Static,
                chunk: 0,
                reductions: vec![Reduction::Scalar(dot.accumulator)],
                locals: Vec::new(),
            };
            return;
        }
    }
    for body in visit::children_mut(s) {
        body.iter_mut().for_each(|s| vectorise(function, s, pairs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::Decl;
    use crate::ir::visit;

    /// `expr`'s function, lowered with the default schedule.
    fn lowered(expr: &str, tensors: &[Decl]) -> Function {
        crate::ir::testing::lowered(expr, tensors).function
    }

    /// The gathered dot products of `function`'s vector loops.
    fn gathered(function: &Function) -> Vec<GatheredDot> {
        let mut found = Vec::new();
        visit::walk_stmts(&function.body, &mut |s| {
            if let Stmt::For(l) = s {
                if matches!(
                    l.kind,
                    LoopKind::Parallel {
                        unit: ParallelUnit::CpuVector,
                        ..
                    }
                ) {
                    found.extend(gathered_dot(function, l));
                }
            }
        });
        found
    }

    #[test]
    fn spmv_rows_get_a_gathering_version() {
        let f = lowered(
            "y(i) = A(i,j) * x(j)",
            &[("y", "d", &[50]), ("A", "ds", &[50, 60]), ("x", "d", &[60])],
        );
        let dots = gathered(&f);
        assert_eq!(dots.len(), 1, "{:#?}", f.body);
        let dot = dots[0];
        assert_eq!(dot.gathered, ArrayRef::Values(crate::ir::OperandId(2)));
        assert_eq!(dot.values, ArrayRef::Values(crate::ir::OperandId(1)));
        // The statement holding the vector loop runs only under both guards, computed
        // once into a flag; the statement as lowered runs otherwise.
        let [Stmt::Decl(flag, guard), Stmt::If(Expr::Var(tested), vector, scalar)] = &f.body[..]
        else {
            panic!("a flag, then the two versions: {:#?}", f.body)
        };
        assert_eq!(tested, flag);
        let kinds = |stmts: &[Stmt]| {
            let mut kinds = Vec::new();
            visit::walk_stmts(stmts, &mut |s| {
                if let Stmt::For(l) = s {
                    kinds.push(l.kind.clone());
                }
            });
            kinds
        };
        let (vector, scalar) = (kinds(vector), kinds(scalar));
        assert_eq!(vector.len(), scalar.len());
        assert_eq!(scalar.last(), Some(&LoopKind::Serial));
        assert!(matches!(
            vector.last(),
            Some(LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                ..
            })
        ));
        let mut params = Vec::new();
        visit::walk_expr(guard, &mut |e| {
            if let Expr::Param(p) = e {
                params.push(*p);
            }
        });
        assert_eq!(
            params,
            [ParamRef::Uneven(dot.bounds), ParamRef::Length(dot.gathered)]
        );
    }

    /// TTV's fibers (`B(i,j,:)` against `c`) are gathered dot products too.
    #[test]
    fn ttv_fibers_get_a_gathering_version() {
        let f = lowered(
            "Y(i,j) = B(i,j,k) * c(k)",
            &[
                ("Y", "dd", &[5, 6]),
                ("B", "sss", &[5, 6, 7]),
                ("c", "d", &[7]),
            ],
        );
        assert_eq!(gathered(&f).len(), 1, "{:#?}", f.body);
    }

    /// No gathering version where no segment's sum reads a value at its coordinate: SpMM
    /// (a dense loop inside the segment), element-wise products, a dense matrix, a
    /// hashed level.
    #[test]
    fn other_loops_keep_one_version() {
        let cases: [(&str, &[Decl]); 4] = [
            (
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", "dd", &[4, 3]),
                    ("A", "ds", &[4, 5]),
                    ("B", "dd", &[5, 3]),
                ],
            ),
            (
                "C(i,j) = A(i,j) * B(i,j)",
                &[
                    ("C", "dd", &[4, 5]),
                    ("A", "ds", &[4, 5]),
                    ("B", "ds", &[4, 5]),
                ],
            ),
            (
                "y(i) = A(i,j) * x(j)",
                &[("y", "d", &[4]), ("A", "dd", &[4, 5]), ("x", "d", &[5])],
            ),
            (
                "y(i) = A(i,j) * x(j)",
                &[("y", "d", &[4]), ("A", "dh", &[4, 5]), ("x", "d", &[5])],
            ),
        ];
        for (expr, tensors) in cases {
            let f = lowered(expr, tensors);
            assert!(gathered(&f).is_empty(), "{expr} {tensors:?}");
            visit::walk_stmts(&f.body, &mut |s| {
                assert!(!format!("{s:?}").contains("Uneven"), "{expr}");
            });
        }
    }

    #[test]
    fn uneven_segments_are_told_from_even_ones() {
        let bounds = |lengths: &[i64]| {
            let mut b = vec![0];
            for l in lengths {
                b.push(b.last().unwrap() + l);
            }
            b
        };
        let even = bounds(&[12; 1000]);
        assert!(!uneven(1000, |q| even[q]));
        let varied: Vec<i64> = (0..1000).map(|i| (i * 7) % 13).collect();
        let varied = bounds(&varied);
        assert!(uneven(1000, |q| varied[q]));
        // One long row among even ones is not uneven.
        let mut one_long = vec![5; 1000];
        one_long[500] = 900;
        let one_long = bounds(&one_long);
        assert!(!uneven(1000, |q| one_long[q]));
        for segments in 0..3 {
            let few = bounds(&vec![1; segments]);
            let _ = uneven(segments, |q| few[q]);
        }
        assert!(!uneven(0, |_| 0));
    }
}
