//! Sums over compressed segments in SIMD lanes: `acc += v[p] * x[idx[p]]` over a segment
//! `pos[q]..pos[q + 1]` (SpMV's row, TTV's fiber) gets a second version, a
//! [`ParallelUnit::CpuVector`] loop, chosen at run time when the segments' lengths vary
//! and either the gathered array is large or the segments many (a backend may then use
//! masked gathers), or when the segments are long (a backend fills the lanes from scalar
//! loads).
//!
//! Which version a call runs, and why, is in `gather/choice.rs`: the run-time tests
//! ([`hardware_gathers`], [`long_segments`]), the measurements they come from, and the
//! versions a kernel may fix or measure ([`SumVersion`]).

mod choice;

use choice::{by_tests, sum_version_is};
pub use choice::{
    gathers_run, hardware_gathers, long_segments, uneven, unmasked_gathers_pay, SumVersion,
    BY_TESTS, GATHER_MIN_LENGTH, GATHER_MIN_SEGMENTS, LONG_SEGMENT_MEAN, SCATTERED_SEGMENT_MEAN,
};
use std::borrow::Cow;

use super::analysis::{self, SumReduction};
use super::{prefetch, visit};
use super::{
    ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, LoopKind, Mapping, OmpSchedule, ParallelUnit,
    Reduction, ReductionStrategy, Stmt, Type, ValueType, Var,
};

/// A sum `acc += values[p] * gathered[coords[p]]` over a segment loop, as
/// [`gathered_dot`] finds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GatheredDot {
    pub accumulator: Var,
    /// A flag that every iteration sets (see [`SumReduction::flag`]): a sparse output's
    /// mark that the sum has terms.
    pub flag: Option<Var>,
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
/// whose body declares the coordinate at its position (and copies of it), may prefetch
/// (`prefetch::prefetch_gathered_elements`), and then only adds the product of a `double`
/// value read at the position and one read at the coordinate into an accumulator of
/// `double`s, and may set a flag.
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
        flag,
    }) = serial_or_vector
        .then(|| analysis::summed_body(function, l))
        .flatten()
    else {
        return None;
    };
    let body: Cow<[Stmt]> = match flag {
        Some(flag) => Cow::Owned(analysis::without_flag(&l.body, flag)),
        None => Cow::Borrowed(&l.body),
    };
    let (coord, coords) = prefetch::segment_coordinate(l)?;
    let ArrayRef::Level { operand, level, .. } = coords else {
        return None;
    };
    let bounds = ArrayRef::Level {
        operand,
        level,
        kind: ArrayKind::Pos,
    };
    let (last, copies) = body.split_last()?;
    let mut names_of_coord = vec![coord];
    for s in copies {
        match s {
            Stmt::Decl(v, Expr::Load(a, p))
                if *v == coord && *a == coords && **p == Expr::Var(l.var) => {}
            Stmt::Decl(v, Expr::Var(w)) if names_of_coord.contains(w) => names_of_coord.push(*v),
            Stmt::Prefetch { .. } => {}
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
        flag,
        values,
        coords,
        gathered,
        bounds,
    })
}

/// Give every top-level statement holding gathered dot products (see the module
/// documentation) a second version in which they are vector loops, run when the call
/// chose a vector version ([`crate::ir::ParamRef::SumVersion`]), or left the choice to the tests and
/// every one would use hardware gathers ([`hardware_gathers`]) or every one's segments
/// are long ([`long_segments`]): `flag = tests; if (flag) { vector version } else { the
/// statement }`. The test is made once, outside the loops, and the scalar version is the
/// statement as it was: with the choice made at each segment instead, TTV on 200^3
/// (fibers of 2 entries) took 4-16% more instructions and up to 20% more time where the
/// vector loops never ran.
pub fn vectorise_gathered_sums(function: &mut Function) {
    function.version_statements("vector_sums", |function, scalar| {
        let mut vector = scalar.clone();
        let mut dots = Vec::new();
        vectorise(function, &mut vector, &mut dots);
        let all = |test: fn(&GatheredDot) -> Expr| dots.iter().map(test).reduce(Expr::and);
        let (gathers, long) = (all(hardware_gathers)?, all(long_segments)?);
        let chosen = Expr::bin(
            BinOp::Or,
            sum_version_is(SumVersion::Lanes),
            sum_version_is(SumVersion::Gathers),
        );
        let tested = Expr::and(by_tests(), Expr::bin(BinOp::Or, gathers, long));
        Some((Expr::bin(BinOp::Or, chosen, tested), vector))
    });
}

/// `s` as it stood before [`vectorise_gathered_sums`]: the scalar version of a statement
/// that pass versioned (one whose vector version is the scalar one with vector loops in
/// place of serial ones), else `s` itself.
pub fn scalar_version(s: &Stmt) -> &Stmt {
    let Stmt::If(Expr::Var(_), then, otherwise) = s else {
        return s;
    };
    let ([vector], [scalar]) = (&then[..], &otherwise[..]) else {
        return s;
    };
    let mut serial = vector.clone();
    serialise(&mut serial);
    if serial == *scalar {
        scalar
    } else {
        s
    }
}

/// Make every vector loop in `s` serial.
fn serialise(s: &mut Stmt) {
    if let Stmt::For(l) = s {
        if matches!(
            l.kind,
            LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                ..
            }
        ) {
            l.kind = LoopKind::Serial;
        }
    }
    for body in visit::children_mut(s) {
        body.iter_mut().for_each(serialise);
    }
}

/// Make every gathered dot product in `s` a vector loop, noting each one with another
/// (gathered array, segment bounds, values) in `dots`.
fn vectorise(function: &Function, s: &mut Stmt, dots: &mut Vec<GatheredDot>) {
    if let Stmt::For(l) = s {
        if let Some(dot) = (l.kind == LoopKind::Serial)
            .then(|| gathered_dot(function, l))
            .flatten()
        {
            let same_arrays = |d: &GatheredDot| {
                (d.gathered, d.bounds, d.values) == (dot.gathered, dot.bounds, dot.values)
            };
            if !dots.iter().any(same_arrays) {
                dots.push(dot);
            }
            l.kind = LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                mapping: Mapping::Cpu {
                    schedule: OmpSchedule::Static,
                    chunk: 0,
                },
                reductions: vec![Reduction::Scalar(dot.accumulator)],
                reduce_by: ReductionStrategy::ParallelReduction,
                locals: Vec::new(),
            };
            return;
        }
    }
    for body in visit::children_mut(s) {
        body.iter_mut().for_each(|s| vectorise(function, s, dots));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::Decl;
    use crate::ir::visit;
    use crate::ir::ParamRef;

    /// `expr`'s function, lowered with the default schedule.
    fn lowered(expr: &str, tensors: &[Decl]) -> Function {
        crate::ir::testing::lowered(expr, tensors).function
    }

    /// The distinct gathered dot products of `function`'s vector loops.
    fn gathered(function: &Function) -> Vec<GatheredDot> {
        let mut found: Vec<GatheredDot> = Vec::new();
        visit::walk_stmts(&function.body, &mut |s| {
            if let Stmt::For(l) = s {
                if matches!(
                    l.kind,
                    LoopKind::Parallel {
                        unit: ParallelUnit::CpuVector,
                        ..
                    }
                ) {
                    found.extend(gathered_dot(function, l).filter(|d| !found.contains(d)));
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
        // Prefetching x's elements (`prefetch`) versioned the statement again, and the
        // version without hints is the statement this pass made.
        let [vector_flag, Stmt::Decl(hints, _), Stmt::If(Expr::Var(hinted), with_hints, plain)] =
            &f.body[..]
        else {
            panic!("the statement versioned for hints: {:#?}", f.body)
        };
        assert_eq!(hinted, hints);
        let body = [std::slice::from_ref(vector_flag), plain].concat();
        // The statement holding the vector loop runs only under its guards (hardware
        // gathers, or long segments), computed once into a flag; the statement as lowered
        // runs otherwise.
        let [Stmt::Decl(flag, guard), Stmt::If(Expr::Var(tested), vector, scalar)] = &body[..]
        else {
            panic!("a flag, then the two versions: {:#?}", body)
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
        // The version with hints is made from the scalar one: its sums stay serial.
        assert_eq!(kinds(with_hints), kinds(scalar));
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
            [
                ParamRef::SumVersion,
                ParamRef::SumVersion,
                ParamRef::SumVersion,
                ParamRef::Uneven(dot.bounds),
                ParamRef::Length(dot.gathered),
                ParamRef::Length(dot.bounds),
                ParamRef::Scattered(dot.coords),
                ParamRef::Length(dot.gathered),
                ParamRef::Length(dot.values),
                ParamRef::Length(dot.bounds),
                ParamRef::Length(dot.values),
                ParamRef::Length(dot.bounds),
            ]
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
        // Into a sparse result, each fiber's sum also marks that it has terms.
        let f = lowered(
            "Y(i,j) = B(i,j,k) * c(k)",
            &[
                ("Y", "ss", &[5, 6]),
                ("B", "sss", &[5, 6, 7]),
                ("c", "d", &[7]),
            ],
        );
        let dots = gathered(&f);
        assert!(!dots.is_empty(), "{:#?}", f.body);
        assert!(dots.iter().all(|dot| dot.flag.is_some()));
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

    /// Whether `test` holds where the runtime passes `param`'s value for each parameter.
    fn holds(test: &Expr, param: &impl Fn(&ParamRef) -> i64) -> bool {
        fn value(e: &Expr, param: &impl Fn(&ParamRef) -> i64) -> i64 {
            match e {
                Expr::Int(v) => *v,
                Expr::Param(p) => param(p),
                Expr::Bin(op, a, b) => {
                    let (a, b) = (value(a, param), value(b, param));
                    match op {
                        BinOp::And => (a != 0 && b != 0) as i64,
                        BinOp::Or => (a != 0 || b != 0) as i64,
                        BinOp::Ne => (a != b) as i64,
                        BinOp::Eq => (a == b) as i64,
                        BinOp::Ge => (a >= b) as i64,
                        BinOp::Mul => a * b,
                        _ => panic!("{op:?} in a gathering test"),
                    }
                }
                _ => panic!("{e:?} in a gathering test"),
            }
        }
        value(test, param) != 0
    }

    /// Which SpMV inputs run with hardware gathers: uneven rows over a large `x` or many
    /// of them, and long rows whose coordinates scatter over a large `x` however even
    /// (the skewed 100,000 x 100,000 matrix with 10M entries: 14.5 ms in filled lanes,
    /// 10 ms in gathers); not long rows whose coordinates lie close together (a band) or
    /// scatter over a small `x`, nor short even rows.
    #[test]
    fn hardware_gathers_serve_uneven_rows_and_long_scattered_ones() {
        let f = lowered(
            "y(i) = A(i,j) * x(j)",
            &[("y", "d", &[50]), ("A", "ds", &[50, 60]), ("x", "d", &[60])],
        );
        let dot = gathered(&f)[0];
        let test = hardware_gathers(&dot);
        // (x's length, rows, entries a row on average, uneven, scattered, expected)
        let cases = [
            (100_000, 100_000, 100, false, true, true),
            (100_000, 100_000, 33, false, true, true),
            (100_000, 100_000, 31, false, true, false),
            (100_000, 100_000, 100, false, false, false),
            (4096, 100_000, 100, false, true, false),
            (1_000_000, 1_000_000, 10, true, true, true),
            (1000, 70_000, 3, true, false, true),
            (1000, 1000, 3, true, false, false),
            (1_000_000, 1_000_000, 12, false, true, false),
        ];
        for (x, rows, mean, uneven, scattered, expected) in cases {
            let param = |p: &ParamRef| match *p {
                ParamRef::Length(a) if a == dot.gathered => x,
                ParamRef::Length(a) if a == dot.bounds => rows + 1,
                ParamRef::Length(a) if a == dot.values => rows * mean,
                ParamRef::Uneven(a) if a == dot.bounds => uneven as i64,
                ParamRef::Scattered(a) if a == dot.coords => scattered as i64,
                _ => panic!("{p:?} in the gathering test"),
            };
            assert_eq!(
                holds(&test, &param),
                expected,
                "x {x}, {rows} rows of {mean}, uneven {uneven}, scattered {scattered}"
            );
        }
    }

    /// A call that names a version runs it whatever the tests say; one that leaves the
    /// choice ([`BY_TESTS`]) runs what they choose: the vector version where hardware
    /// gathers or long segments pay, gathers where [`hardware_gathers`] holds.
    #[test]
    fn a_call_runs_the_sum_version_it_names() {
        let f = lowered(
            "y(i) = A(i,j) * x(j)",
            &[("y", "d", &[50]), ("A", "ds", &[50, 60]), ("x", "d", &[60])],
        );
        let dot = gathered(&f)[0];
        let mut guard = None;
        visit::walk_stmts(&f.body, &mut |s| match s {
            Stmt::Decl(flag, test) if f.var(*flag).hint == "vector_sums" => {
                guard = Some(test.clone())
            }
            _ => {}
        });
        let guard = guard.expect("the vector version's flag");
        let gathers = gathers_run(&dot);
        // (uneven rows over a large x: the tests choose gathers; short even rows over a
        // small x: they choose the scalar version)
        for (uneven, x, tests_choose_gathers) in [(true, 1_000_000, true), (false, 100, false)] {
            for version in [BY_TESTS, 0, 1, 2] {
                let param = |p: &ParamRef| match *p {
                    ParamRef::SumVersion => version,
                    ParamRef::Length(a) if a == dot.gathered => x,
                    ParamRef::Length(a) if a == dot.bounds => 1001,
                    ParamRef::Length(a) if a == dot.values => 5000,
                    ParamRef::Uneven(a) if a == dot.bounds => uneven as i64,
                    ParamRef::Scattered(a) if a == dot.coords => 1,
                    _ => panic!("{p:?} in the gathering test"),
                };
                let (vector, gathered) = match version {
                    BY_TESTS => (tests_choose_gathers, tests_choose_gathers),
                    v => (
                        v != SumVersion::Scalar as i64,
                        v == SumVersion::Gathers as i64,
                    ),
                };
                assert_eq!(
                    holds(&guard, &param),
                    vector,
                    "version {version}, uneven {uneven}"
                );
                assert_eq!(
                    holds(&gathers, &param),
                    gathered,
                    "version {version}, uneven {uneven}"
                );
            }
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
