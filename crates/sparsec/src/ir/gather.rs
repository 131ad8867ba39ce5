//! Sums over compressed segments in SIMD lanes: `acc += v[p] * x[idx[p]]` over a segment
//! `pos[q]..pos[q + 1]` (SpMV's row, TTV's fiber) gets a second version, a
//! [`ParallelUnit::CpuVector`] loop, chosen at run time when the segments' lengths vary
//! and either the gathered array is large or the segments many (a backend may then use
//! masked gathers), or when the segments are long (a backend fills the lanes from scalar
//! loads).
//!
//! Why these conditions. A scalar loop over a short segment ends with a branch whose
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
//! The scalar loop over a small `x` wins only while the branch predictor learns the
//! segments' lengths across repeated calls, which it does for a few tens of thousands of
//! segments. Rows of 5 entries on average (Poisson), 1000 columns, ns an entry:
//!
//! | rows | scalar | gathers |
//! |---:|---:|---:|
//! | 2,500 to 32,000 | 0.52 | 1.02 |
//! | 40,000 | 1.63 | 1.02 |
//! | 160,000 | 2.06 | 1.25 |
//! | 600,000 (4000 columns) | 2.18 | 1.57 |
//! | 865,000 of 2.4 entries (TTV's fibers in a uniform 1000^3 tensor) | 3.30 | 1.95 |
//! | 400,000 of 10 entries / 200,000 of 20 | 1.28 / 0.85 | 1.04 / 0.73 |
//!
//! Hence [`GATHER_MIN_LENGTH`], [`GATHER_MIN_SEGMENTS`] and [`uneven`].
//!
//! Even segments need no masked iteration to avoid a branch, but long ones whose
//! coordinates scatter over a large gathered array still run faster with gathers: each
//! entry loads `x` from beyond the first-level cache, and a gather's few instructions let
//! more of those loads be in flight than lanes filled from scalar loads. Where the
//! coordinates lie close together (a band), `x` stays in the first-level cache and filled
//! lanes win. Same harnesses, rows of one length, ms:
//!
//! | matrix | scalar | filled lanes | gathers |
//! |---|---:|---:|---:|
//! | 100k x 100k, random columns, 100 a row | 12.6 | 14.4 | 10.1 |
//! | 100k x 100k, random columns, 49 a row | 8.1 | 8.0 | 5.4 |
//! | 60k x 60k, random columns, 40 a row | 3.0 | 3.3 | 2.8 |
//! | 40k x 40k, random columns, 20 a row | 0.54 | 0.54 | 0.59 |
//! | 100k x 100k, random columns, 12 a row | 1.09 | 1.27 | 1.43 |
//! | banded, 200k rows of 41 / 130k rows of 57 | 4.4 / 3.7 | 4.3 / 3.6 | 5.3 / 4.3 |
//! | 20k x 20k, 500 a row in 1024 random columns | 6.0 | 5.6 | 5.7 |
//!
//! Hence [`SCATTERED_SEGMENT_MEAN`], with [`prefetch::scattered`] telling scattered
//! coordinates from near ones.
//!
//! Long segments whose `x` stays in cache are bound instead by the scalar loop's three
//! loads an entry (coordinate, value, `x`): loading the values four at a time and 32-bit
//! coordinates two at a time leaves one and a quarter. Measured the same way on shared
//! matrices whose `x` fits in the first caches, in ns an entry, scalar loop against lanes
//! filled from scalar loads:
//!
//! | matrix | entries a row | scalar | filled lanes |
//! |---|---:|---:|---:|
//! | sparse-images-1024_subset | 102 | 0.33 | 0.26 |
//! | bcsstk13 | 42 | 0.35 | 0.28 |
//! | cavity24 | 30 | 0.36 | 0.31 |
//! | cage10 | 13 | 0.42 | 0.43 |
//! | bcspwr10 | 4 | 0.56 | 0.60 |
//!
//! Below about 16 entries a segment the lanes gain nothing, and the test of a segment's
//! length that picks them costs short segments 5-8% (measured with the test on every
//! segment), hence [`LONG_SEGMENT_MEAN`], tested once for all segments.
//!
//! These tests are what one machine measured, and another disagrees: on an Intel Xeon
//! with AVX-512, hardware gathers run SpMV over short uneven rows with a small `x`
//! (ca-HepTh, 5 entries a row, 10k rows) in 0.041 ms where the scalar loop takes 0.099,
//! while on AMD Zen 4 the scalar loop was twice as fast there (the table above). So the
//! tests only choose a call's version until the kernel has measured: every call passes
//! [`ParamRef::SumVersion`], [`BY_TESTS`] to let the tests choose, or one
//! [`SumVersion`], which the kernel sets on repeated calls with one input to try each
//! and then run the fastest.

use std::borrow::Cow;

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

/// The fewest entries a segment must hold on average for the vector version to run
/// whatever the gathered array's size: below it, lanes filled from scalar loads are no
/// faster than the scalar loop (see the module documentation).
pub const LONG_SEGMENT_MEAN: i64 = 16;

/// The fewest segments for which the vector version runs with hardware gathers whatever
/// the gathered array's size, when their lengths are uneven: more than a branch predictor
/// learns across repeated calls (see the module documentation).
pub const GATHER_MIN_SEGMENTS: i64 = 1 << 16;

/// The fewest entries a segment must hold on average for scattered coordinates
/// ([`prefetch::scattered`]) into a large gathered array ([`GATHER_MIN_LENGTH`]) to run
/// with hardware gathers however even the segments: each entry then loads `x` from beyond
/// the first-level cache, and the few instructions of a gather keep more of those loads
/// in flight than lanes filled from scalar loads do (see the module documentation).
pub const SCATTERED_SEGMENT_MEAN: i64 = 32;

/// The value of [`ParamRef::SumVersion`] with which a call's version is chosen by the
/// run-time tests ([`hardware_gathers`], [`long_segments`]).
pub const BY_TESTS: i64 = -1;

/// A version of a function's gathered sums, as [`ParamRef::SumVersion`] selects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SumVersion {
    /// The statement as it was, its sums in serial loops.
    Scalar = 0,
    /// Vector loops without hardware gathers: lanes filled from scalar loads.
    Lanes = 1,
    /// Vector loops with hardware gathers (AVX2 gathers where the coordinates scatter,
    /// else the sum in partial sums, see `codegen::c::gathers`).
    Gathers = 2,
}

impl SumVersion {
    /// Every version, in the order of their values.
    pub const ALL: [SumVersion; 3] = [SumVersion::Scalar, SumVersion::Lanes, SumVersion::Gathers];

    /// Its short name: `scalar`, `lanes` or `gathers`, as the CLI's `--sums` and
    /// Python's `sums=` spell it.
    pub fn name(self) -> &'static str {
        match self {
            SumVersion::Scalar => "scalar",
            SumVersion::Lanes => "lanes",
            SumVersion::Gathers => "gathers",
        }
    }

    /// What it is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            SumVersion::Scalar => "serial loops",
            SumVersion::Lanes => "SIMD lanes filled from scalar loads",
            SumVersion::Gathers => "SIMD lanes filled by hardware gathers",
        }
    }
}

/// True where the call chose `version`.
fn sum_version_is(version: SumVersion) -> Expr {
    Expr::eq(Expr::Param(ParamRef::SumVersion), Expr::Int(version as i64))
}

/// True where the call lets the run-time tests choose its version.
fn by_tests() -> Expr {
    Expr::eq(Expr::Param(ParamRef::SumVersion), Expr::Int(BY_TESTS))
}

/// The run-time test that `dot`'s vector loop runs with hardware gathers: the call chose
/// [`SumVersion::Gathers`], or left the choice to the tests and [`hardware_gathers`]
/// holds. Backends print it where they choose between gathers and filled lanes.
pub fn gathers_run(dot: &GatheredDot) -> Expr {
    Expr::bin(
        BinOp::Or,
        sum_version_is(SumVersion::Gathers),
        Expr::and(by_tests(), hardware_gathers(dot)),
    )
}

/// The run-time test that `dot`'s vector loop runs with hardware gathers: its segments
/// are uneven, and its gathered array holds at least [`GATHER_MIN_LENGTH`] elements or
/// its segments number at least [`GATHER_MIN_SEGMENTS`]; or its coordinates scatter over
/// a gathered array as large, in segments of [`SCATTERED_SEGMENT_MEAN`] entries on
/// average. Backends test it again inside the vector version, which also runs where only
/// [`long_segments`] holds.
pub fn hardware_gathers(dot: &GatheredDot) -> Expr {
    let large = Expr::bin(
        BinOp::Ge,
        Expr::Param(ParamRef::Length(dot.gathered)),
        Expr::Int(GATHER_MIN_LENGTH),
    );
    let many = Expr::bin(
        BinOp::Ge,
        Expr::Param(ParamRef::Length(dot.bounds)),
        Expr::Int(GATHER_MIN_SEGMENTS),
    );
    let uneven = Expr::and(
        Expr::bin(
            BinOp::Ne,
            Expr::Param(ParamRef::Uneven(dot.bounds)),
            Expr::Int(0),
        ),
        Expr::bin(BinOp::Or, large, many),
    );
    let scattered = Expr::and(
        prefetch::sampled_and_large(
            ParamRef::Scattered(dot.coords),
            dot.gathered,
            GATHER_MIN_LENGTH,
        ),
        segments_of_mean(dot, SCATTERED_SEGMENT_MEAN),
    );
    Expr::bin(BinOp::Or, uneven, scattered)
}

/// The run-time test that, where [`hardware_gathers`] holds, a backend whose gathers have
/// no masked form (AVX2) runs them in a loop whose elements are not prefetched
/// ([`prefetch::prefetch_gathered_elements`]): its coordinates scatter
/// ([`ParamRef::Scattered`]). Elsewhere the serial sum does better. Without a masked
/// iteration a segment's last entries (up to seven) are summed serially anyway; where the
/// coordinates lie close together (a band) the scalar loads hit the first-level cache;
/// where hints fetch the elements ahead, so do they. Without hints the gathers keep more
/// loads of scattered elements in flight. SpMV on AMD Zen 3 (no AVX-512), one thread,
/// the CLI with AVX2 gathers and with the serial sum alternated, ranges of compute
/// medians in ms:
///
/// | matrix | elements prefetched | gathers | serial sum |
/// |---|---|---:|---:|
/// | uniform 1M x 1M, 10 entries a row | yes | 53-69 | 44-75 |
/// | uniform 200k x 200k, 20 a row | yes | 13.5-15.9 | 11.4-13.0 |
/// | uniform 200k x 200k, 32 a row | yes | 18.1-22.5 | 15.1-19.5 |
/// | uniform 150k x 150k, 64 a row | yes | 23.7-33.9 | 20.0-29.4 |
/// | banded 1M x 1M, 10 a row | no (not scattered) | 21.8-24.4 | 19.1-22.6 |
/// | uniform 100k x 100k, 20 a row | no (`x` too small) | 4.7-5.5 | 4.9-7.8 |
/// | uniform 100k x 100k, 64 a row | no (`x` too small) | 15.0-15.6 | 17.8-22.8 |
/// | uniform 100k x 100k, 100 a row | no (`x` too small) | 22.1-24.8 | 26.5-34.2 |
/// | skewed 100k x 100k, 100 a row | no (`x` too small) | 19.0-25.5 | 23.6-31.8 |
pub fn unmasked_gathers_pay(dot: &GatheredDot) -> Expr {
    Expr::bin(
        BinOp::Ne,
        Expr::Param(ParamRef::Scattered(dot.coords)),
        Expr::Int(0),
    )
}

/// The run-time test that `dot`'s segments hold at least [`LONG_SEGMENT_MEAN`] entries
/// on average.
pub fn long_segments(dot: &GatheredDot) -> Expr {
    segments_of_mean(dot, LONG_SEGMENT_MEAN)
}

/// The run-time test that `dot`'s segments hold at least `mean` entries on average: its
/// values outnumber its segment bounds by that factor.
fn segments_of_mean(dot: &GatheredDot, mean: i64) -> Expr {
    Expr::bin(
        BinOp::Ge,
        Expr::Param(ParamRef::Length(dot.values)),
        Expr::bin(
            BinOp::Mul,
            Expr::Int(mean),
            Expr::Param(ParamRef::Length(dot.bounds)),
        ),
    )
}

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
/// chose a vector version ([`ParamRef::SumVersion`]), or left the choice to the tests and
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
                schedule: OmpSchedule::Static,
                chunk: 0,
                reductions: vec![Reduction::Scalar(dot.accumulator)],
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
