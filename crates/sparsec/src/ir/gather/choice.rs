//! Which version of a gathered sum a call runs ([`super`]): the run-time tests that choose
//! where the call leaves it to them, and the versions ([`SumVersion`]) a kernel may fix or
//! measure instead.
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

use super::GatheredDot;
use crate::ir::{prefetch, BinOp, Expr, ParamRef};

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
pub(super) fn sum_version_is(version: SumVersion) -> Expr {
    Expr::eq(Expr::Param(ParamRef::SumVersion), Expr::Int(version as i64))
}

/// True where the call lets the run-time tests choose its version.
pub(super) fn by_tests() -> Expr {
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
