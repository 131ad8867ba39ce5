//! Choosing the version of a kernel's gathered sums by measuring them (see
//! [`crate::ir::gather`]).
//!
//! The run-time tests that pick serial loops, filled lanes or hardware gathers were
//! measured on one machine and are wrong on another (SpMV over short uneven rows: 2.4x
//! faster with gathers on an Intel Xeon, 2x slower on AMD Zen 4). A kernel called again
//! and again with one input (an iterative solver, a benchmark, the tuner) can afford to
//! find out: its first [`WARM_UP_CALLS`] calls run as the tests choose (they warm the
//! caches and, on threads, let the team form), the next calls run each version in blocks
//! of consecutive calls, and from then on it runs the version whose fastest trial was
//! fastest, until the input changes. A block's first call
//! is not counted where the block has more: it runs with what the other version left in
//! the caches and the branch predictor, which favours versions without branches on the
//! data (SpMV on bcsstk13, calls of 22 us: hardware gathers won trials that alternated
//! the versions call by call in three processes of four, and filled lanes are 15% faster
//! when they run on). The blocks fill about [`TRIAL_TIME`] per version (as many calls as
//! the last warm-up call fits in it, from 1 to [`MAX_BLOCK`]), in two passes over the
//! versions so that a slow moment of the machine does not decide, even where a block is
//! one call. An input is told by the call's scalar arguments (lengths, extents,
//! samples of its structure, threads) and the code that runs, so a new matrix of other
//! sizes starts over, and a tiered kernel whose C code replaced the JIT's measures again.
//!
//! A kernel whose loops prefetch the elements they gather (`ParamRef::PrefetchDistance`)
//! tries a fourth version, serial sums with hints [`FAR_ELEMENT_DISTANCE`] ahead, where
//! the others hint [`ELEMENT_DISTANCE`] ahead: the distance that covers a miss depends on
//! the machine's caches as much as the sum versions do.

use std::sync::Mutex;
use std::time::Duration;

use crate::ir::gather::{SumVersion, BY_TESTS};
use crate::ir::prefetch::{ELEMENT_DISTANCE, FAR_ELEMENT_DISTANCE};
use crate::ir::{Function, OutputMode, ParamRef, ScalarArg, Signature};

/// About how long each version runs on trial.
pub(crate) const TRIAL_TIME: Duration = Duration::from_millis(1);

/// The most consecutive calls of one version in a block of trials.
pub(crate) const MAX_BLOCK: usize = 32;

/// Calls of a new input that the run-time tests choose before the trials; the last one
/// sizes the blocks. The first call is cold (its data not yet in cache, its pages not yet
/// mapped) and runs alone while the loop learns its pace, and the first calls on a team
/// take milliseconds while the threads settle (see the runtime's `sparsec_team`). Sized
/// by the first call, SpMV on ct2010 (0.3 ms a call warm) got blocks of one call and one
/// pass, so each version ran once, the first ones alone or on a settling team: in 3 of
/// 10 processes at 2 threads the last version tried, serial sums at 0.35 ms a call, beat
/// hardware gathers at 0.15.
pub(crate) const WARM_UP_CALLS: usize = 2;

/// The versions a call may run, by index (a [`Trial`]'s version): each version of the
/// gathered sums with hints [`ELEMENT_DISTANCE`] ahead (index = the sum version's value),
/// then serial sums with hints [`FAR_ELEMENT_DISTANCE`] ahead. Only kernels whose loops
/// prefetch elements (`ParamRef::PrefetchDistance`) try the last; where their hints run,
/// the loop that prefetches is the same for every sum version.
const VERSIONS: [(SumVersion, i64); 4] = [
    (SumVersion::Scalar, ELEMENT_DISTANCE),
    (SumVersion::Lanes, ELEMENT_DISTANCE),
    (SumVersion::Gathers, ELEMENT_DISTANCE),
    (SumVersion::Scalar, FAR_ELEMENT_DISTANCE),
];

/// How a kernel chooses the version of its gathered sums (SpMV's rows, TTV's fibers:
/// serial loops, SIMD lanes filled from scalar loads, or hardware gathers; see
/// [`crate::ir::gather`]) for each call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SumVersions {
    /// The run-time tests choose a new input's first call; the next calls measure each
    /// version, then the fastest runs ([`Kernel::sum_version`](super::Kernel::sum_version) names it). The versions
    /// add a row's terms in different orders, so results may change in their last bits
    /// between the measured calls and the later ones.
    #[default]
    Measured,
    /// The run-time tests choose every call: one input always runs one version, so its
    /// results are the same to the last bit from the first call on.
    Tested,
    /// Every call runs this version.
    Fixed(SumVersion),
}

/// Where a call's version of the gathered sums and its prefetch distance go among its
/// scalar arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParamSlots {
    /// `ParamRef::SumVersion`'s position.
    pub(crate) version: usize,
    /// `ParamRef::PrefetchDistance`'s, where the function's loops prefetch elements.
    pub(crate) distance: Option<usize>,
}

impl ParamSlots {
    /// Whether argument `k` is one of these slots, set per call rather than part of the
    /// input.
    fn holds(self, k: usize) -> bool {
        k == self.version || Some(k) == self.distance
    }

    /// How many of [`VERSIONS`] a kernel with these slots tries: all four where it
    /// prefetches elements, else the three sum versions.
    fn versions(self) -> usize {
        if self.distance.is_some() {
            VERSIONS.len()
        } else {
            SumVersion::ALL.len()
        }
    }
}

/// How a kernel sets each call's version of the gathered sums: the slots they go in, the
/// policy, and what the policy measured.
#[derive(Debug)]
pub(crate) struct SumVersionControl {
    /// `None` where the function has one version, and for two-phase kernels, whose calls
    /// are phases of one run and keep the tests' choice.
    slots: Option<ParamSlots>,
    policy: SumVersions,
    /// The versions measured on the last input, and the one chosen.
    measured: Mutex<VersionChoice>,
}

impl SumVersionControl {
    /// The control of `function`'s calls, whose scalar arguments `signature` lays out;
    /// versions are measured until told otherwise.
    pub(crate) fn new(function: &Function, signature: &Signature) -> SumVersionControl {
        let position = |p: ParamRef| {
            signature
                .scalars
                .iter()
                .position(|s| *s == ScalarArg::Param(p))
        };
        let slots = match function.output {
            OutputMode::Rows { .. } => None,
            _ => position(ParamRef::SumVersion).map(|version| ParamSlots {
                version,
                distance: position(ParamRef::PrefetchDistance),
            }),
        };
        let versions = slots.map_or(0, ParamSlots::versions);
        SumVersionControl {
            slots,
            policy: SumVersions::default(),
            measured: Mutex::new(VersionChoice::new(versions)),
        }
    }

    pub(crate) fn policy(&self) -> SumVersions {
        self.policy
    }

    pub(crate) fn set_policy(&mut self, policy: SumVersions) {
        self.policy = policy;
    }

    /// Set the version a call with scalar arguments `params` running the code at `code`
    /// runs, and return it for [`SumVersionControl::finish`]. Code without versions
    /// (`versions` false: every version runs the same loops) is not measured: its calls
    /// run as the run-time tests choose.
    pub(crate) fn begin(&self, params: &mut [i64], code: usize, versions: bool) -> Option<Trial> {
        let slots = self.slots?;
        let trial = match self.policy {
            SumVersions::Measured if versions => {
                self.measured.lock().ok()?.next(params, slots, code)
            }
            SumVersions::Measured | SumVersions::Tested => Trial {
                version: BY_TESTS,
                record: None,
            },
            SumVersions::Fixed(version) => Trial {
                version: version as i64,
                record: None,
            },
        };
        let (sums, distance) = match usize::try_from(trial.version) {
            Ok(k) => (VERSIONS[k].0 as i64, VERSIONS[k].1),
            Err(_) => (BY_TESTS, ELEMENT_DISTANCE),
        };
        params[slots.version] = sums;
        if let Some(d) = slots.distance {
            params[d] = distance;
        }
        Some(trial)
    }

    /// Note that the call that `trial` began succeeded in `took`.
    pub(crate) fn finish(&self, trial: Option<Trial>, took: Duration) {
        if let Some(Trial {
            version,
            record: Some(generation),
        }) = trial
        {
            if let Ok(mut measured) = self.measured.lock() {
                measured.record(generation, version, took);
            }
        }
    }

    /// The version chosen for the last input, once measured.
    pub(crate) fn chosen(&self) -> Option<SumVersion> {
        self.measured.lock().ok()?.chosen()
    }

    /// How far ahead the chosen version prefetches elements, for a kernel that measures
    /// it, once chosen.
    pub(crate) fn chosen_distance(&self) -> Option<i64> {
        self.slots?.distance?;
        Some(VERSIONS[self.measured.lock().ok()?.chosen?].1)
    }

    /// Whether the next call with the last call's input may still be a trial of a version:
    /// the policy measures and has not chosen yet.
    pub(crate) fn measuring(&self) -> bool {
        self.slots.is_some()
            && self.policy == SumVersions::Measured
            && self
                .measured
                .lock()
                .is_ok_and(|measured| measured.chosen.is_none())
    }
}

/// The most calls of one input before its version is chosen: the warm-up calls, then two
/// passes of full blocks over every version.
pub const MAX_TRIAL_RUNS: usize = WARM_UP_CALLS + 2 * MAX_BLOCK * VERSIONS.len();

/// What a kernel learnt of its versions' speed on the input it last ran.
#[derive(Debug, Default)]
pub(crate) struct VersionChoice {
    /// How many of [`VERSIONS`] are tried (the first ones).
    versions: usize,
    /// The call's scalar arguments (the version's and distance's slots zero) and then its
    /// code's address: the input the measurements belong to.
    input: Vec<i64>,
    /// Incremented at each new input, so that a call is recorded only for its own.
    generation: u64,
    /// Calls recorded for `input` so far.
    calls: usize,
    /// Consecutive calls of one version on trial, set by the last warm-up call's time.
    block: usize,
    /// Each version's fastest trial.
    fastest: [Option<Duration>; VERSIONS.len()],
    /// The version chosen once every trial has run (an index of [`VERSIONS`]).
    chosen: Option<usize>,
}

/// The version a call runs, and whether its time is to be recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Trial {
    /// An index of [`VERSIONS`], or [`BY_TESTS`] for the run-time tests' choice.
    pub(crate) version: i64,
    /// The generation to record the call's time for, while the versions are measured.
    pub(crate) record: Option<u64>,
}

impl VersionChoice {
    /// Measurements of no input yet, for a kernel that tries the first `versions` of
    /// [`VERSIONS`].
    fn new(versions: usize) -> VersionChoice {
        VersionChoice {
            versions,
            ..VersionChoice::default()
        }
    }

    /// The version a call with scalar arguments `params` (whose version and distance go
    /// in `slots`) running the code at `code` runs.
    pub(crate) fn next(&mut self, params: &[i64], slots: ParamSlots, code: usize) -> Trial {
        if !self.holds_input(params, slots, code) {
            let mut input: Vec<i64> = params
                .iter()
                .enumerate()
                .map(|(k, &p)| if slots.holds(k) { 0 } else { p })
                .collect();
            input.push(code as i64);
            *self = VersionChoice {
                input,
                generation: self.generation + 1,
                ..VersionChoice::new(self.versions)
            };
        }
        let version = match (self.chosen, self.calls) {
            (Some(version), _) => {
                return Trial {
                    version: version as i64,
                    record: None,
                }
            }
            (None, n) if n < WARM_UP_CALLS => BY_TESTS,
            (None, n) => self.trial_version(n - WARM_UP_CALLS) as i64,
        };
        Trial {
            version,
            record: Some(self.generation),
        }
    }

    /// Whether `params` and `code` are those of the input measured.
    fn holds_input(&self, params: &[i64], slots: ParamSlots, code: usize) -> bool {
        self.input.len() == params.len() + 1
            && self.input[params.len()] == code as i64
            && params
                .iter()
                .enumerate()
                .all(|(k, p)| slots.holds(k) || self.input[k] == *p)
    }

    /// The version of trial `t` (counted from 0 after the warm-up calls): blocks of
    /// `self.block` calls of each version in turn.
    fn trial_version(&self, t: usize) -> usize {
        t % (self.block * self.versions) / self.block
    }

    /// The number of trials: two passes over the versions.
    fn trials(&self) -> usize {
        2 * self.block * self.versions
    }

    /// Note that a call of `generation` that ran with `version` (what
    /// [`VersionChoice::next`] gave) took `took`; the last trial chooses.
    pub(crate) fn record(&mut self, generation: u64, version: i64, took: Duration) {
        if generation != self.generation || self.chosen.is_some() {
            return;
        }
        if self.calls + 1 == WARM_UP_CALLS {
            let calls = TRIAL_TIME.as_nanos() / took.as_nanos().max(1);
            self.block = (calls as usize).clamp(1, MAX_BLOCK);
        } else if self.calls >= WARM_UP_CALLS {
            let t = self.calls - WARM_UP_CALLS;
            let counted = self.block == 1 || !t.is_multiple_of(self.block);
            let k = usize::try_from(version).ok().filter(|&k| k < self.versions);
            if let (true, Some(k)) = (counted, k) {
                let fastest = &mut self.fastest[k];
                *fastest = Some(fastest.map_or(took, |f| f.min(took)));
            }
        }
        self.calls += 1;
        if self.calls >= WARM_UP_CALLS + self.trials() {
            self.chosen = (0..self.versions)
                .filter_map(|k| Some((k, self.fastest[k]?)))
                .min_by_key(|(_, t)| *t)
                .map(|(k, _)| k);
        }
    }

    /// The version of the gathered sums chosen for the input of the last call, once
    /// measured.
    pub(crate) fn chosen(&self) -> Option<SumVersion> {
        Some(VERSIONS[self.chosen?].0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version in argument 0, no distance.
    const SUMS_FIRST: ParamSlots = ParamSlots {
        version: 0,
        distance: None,
    };

    /// The version in argument 0, the distance in 2.
    const SUMS_FIRST_DISTANCE_LAST: ParamSlots = ParamSlots {
        version: 0,
        distance: Some(2),
    };

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// Run `calls` calls on the input `params` (version in slot 0, the distance in 2 where
    /// `choice` tries the far distance, code at 1) whose version `v` takes `time(v)`; the
    /// versions run.
    fn run(
        choice: &mut VersionChoice,
        params: &[i64],
        calls: usize,
        mut time: impl FnMut(i64) -> Duration,
    ) -> Vec<i64> {
        (0..calls)
            .map(|_| {
                let slots = if choice.versions == VERSIONS.len() {
                    SUMS_FIRST_DISTANCE_LAST
                } else {
                    SUMS_FIRST
                };
                let trial = choice.next(params, slots, 1);
                if let Some(generation) = trial.record {
                    choice.record(generation, trial.version, time(trial.version));
                }
                trial.version
            })
            .collect()
    }

    #[test]
    fn the_tests_choose_first_then_each_version_runs_in_blocks() {
        let mut choice = VersionChoice::new(3);
        // Warm-up calls of 250 us: blocks of four calls fill the millisecond.
        let versions = run(&mut choice, &[-1, 8], WARM_UP_CALLS + 2 * 4 * 3, |_| {
            us(250)
        });
        assert_eq!(&versions[..WARM_UP_CALLS], &[BY_TESTS; WARM_UP_CALLS]);
        let trials = &versions[WARM_UP_CALLS..];
        assert_eq!(
            &trials[..12],
            &[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2],
            "{versions:?}"
        );
        assert_eq!(&trials[..12], &trials[12..]);
        assert!(choice.chosen().is_some());
        // Once chosen, calls are no longer timed.
        assert_eq!(choice.next(&[-1, 8], SUMS_FIRST, 1).record, None);
    }

    /// The last warm-up call sizes the blocks, whatever the cold first call took: long
    /// calls try each version once a pass, short ones in blocks of up to `MAX_BLOCK`
    /// calls; always in two passes.
    #[test]
    fn the_last_warm_up_call_sets_the_blocks() {
        for (warm, trials) in [
            (us(5000), 2 * 3),
            (us(1000), 2 * 3),
            (us(300), 2 * 3 * 3),
            (us(1), 2 * 3 * MAX_BLOCK),
        ] {
            let mut choice = VersionChoice::new(3);
            let mut calls = 0;
            while choice.chosen().is_none() {
                let took = match calls {
                    0 => us(20_000),
                    c if c + 1 == WARM_UP_CALLS => warm,
                    _ => us(1),
                };
                run(&mut choice, &[0], 1, |_| took);
                calls += 1;
            }
            assert_eq!(calls, WARM_UP_CALLS + trials, "warm call {warm:?}");
        }
    }

    /// Calls of a millisecond try each version once a pass. Every version's first trial is
    /// slow (a team of threads settling, then the machine busy) and the scalar sums', the
    /// first, slowest: the second pass decides, for the version that is fastest there.
    #[test]
    fn a_second_pass_decides_between_single_calls() {
        let mut choice = VersionChoice::new(3);
        let mut call = 0;
        run(&mut choice, &[0], WARM_UP_CALLS + 2 * 3, |v| {
            call += 1;
            let first_pass = call <= WARM_UP_CALLS + 3;
            match (v, first_pass) {
                (BY_TESTS, _) => us(1000),
                (0, true) => us(4000),
                (_, true) => us(2500),
                (2, false) => us(400),
                _ => us(900),
            }
        });
        assert_eq!(choice.chosen(), Some(SumVersion::Gathers));
    }

    /// A block's first call runs after another version's and is not counted: here every
    /// version is slow on its block's first call, lanes most, and fastest after it.
    #[test]
    fn the_fastest_counted_trial_chooses() {
        let mut choice = VersionChoice::new(3);
        let mut last = None;
        let versions = run(&mut choice, &[0], WARM_UP_CALLS + 2 * 3 * 3 + 5, |v| {
            let first_of_block = last != Some(v);
            last = Some(v);
            match (v, first_of_block) {
                (BY_TESTS, _) => us(300),
                (1, true) => us(900),
                (_, true) => us(500),
                (0, false) => us(200),
                (1, false) => us(120),
                _ => us(160),
            }
        });
        assert_eq!(choice.chosen(), Some(SumVersion::Lanes), "{versions:?}");
        let after = WARM_UP_CALLS + 2 * 3 * 3;
        assert!(versions[after..].iter().all(|&v| v == 1), "{versions:?}");
    }

    /// A slow moment of the machine on one block does not decide: the other pass counts.
    #[test]
    fn a_slow_moment_does_not_decide() {
        let mut choice = VersionChoice::new(3);
        let mut call = 0;
        run(&mut choice, &[0], WARM_UP_CALLS + 2 * 3 * 3, |v| {
            call += 1;
            match (v, call) {
                (BY_TESTS, _) => us(300),
                // Lanes' first block (calls 6 to 8) fell on a busy machine.
                (1, 6..=8) => us(900),
                (1, _) => us(120),
                _ => us(200),
            }
        });
        assert_eq!(choice.chosen(), Some(SumVersion::Lanes));
    }

    #[test]
    fn another_input_is_measured_again() {
        let mut choice = VersionChoice::new(3);
        let time = |fast: i64| move |v: i64| if v == fast { us(1000) } else { us(3000) };
        let calls = WARM_UP_CALLS + 2 * 3;
        run(&mut choice, &[0, 1], calls, time(2));
        assert_eq!(choice.chosen(), Some(SumVersion::Gathers));
        // The version's own slot is not part of the input.
        assert_eq!(choice.next(&[2, 1], SUMS_FIRST, 1).version, 2);
        assert_eq!(choice.next(&[2, 2], SUMS_FIRST, 1).version, BY_TESTS);
        assert_eq!(choice.chosen(), None);
        run(&mut choice, &[0, 2], calls, time(0));
        assert_eq!(choice.chosen(), Some(SumVersion::Scalar));
        // Other code (a tiered kernel's C code after the JIT's) is another input too.
        assert_eq!(choice.next(&[0, 2], SUMS_FIRST, 7).version, BY_TESTS);
    }

    /// A kernel whose loops prefetch elements also tries serial sums with far hints (a
    /// fourth version), and keeps its distance's slot out of the input.
    #[test]
    fn a_prefetching_kernel_tries_the_far_distance() {
        let mut choice = VersionChoice::new(4);
        // Version 3 (far hints) is fastest; calls of 400 us make blocks of two.
        let versions = run(&mut choice, &[-1, 8, 64], WARM_UP_CALLS + 2 * 2 * 4, |v| {
            if v == 3 {
                us(300)
            } else {
                us(400)
            }
        });
        assert_eq!(
            &versions[WARM_UP_CALLS..WARM_UP_CALLS + 8],
            &[0, 0, 1, 1, 2, 2, 3, 3],
            "{versions:?}"
        );
        assert_eq!(choice.chosen(), Some(SumVersion::Scalar));
        assert_eq!(choice.chosen, Some(3));
        // The distance set for the call is not part of the input.
        assert_eq!(
            choice
                .next(&[0, 8, 512], SUMS_FIRST_DISTANCE_LAST, 1)
                .version,
            3
        );
    }

    /// A call recorded after another input's call began (another thread's run on another
    /// input) is not counted for either input.
    #[test]
    fn a_record_for_another_input_is_ignored() {
        let mut choice = VersionChoice::new(3);
        let first = choice.next(&[0, 1], SUMS_FIRST, 1);
        let other = choice.next(&[0, 9], SUMS_FIRST, 1);
        choice.record(first.record.unwrap(), first.version, us(1));
        assert_eq!(
            choice.next(&[0, 9], SUMS_FIRST, 1).version,
            BY_TESTS,
            "nothing recorded yet"
        );
        choice.record(other.record.unwrap(), other.version, us(1));
        for _ in 1..WARM_UP_CALLS {
            let warm = choice.next(&[0, 9], SUMS_FIRST, 1);
            choice.record(warm.record.unwrap(), warm.version, us(1));
        }
        assert_eq!(choice.next(&[0, 9], SUMS_FIRST, 1).version, 0);
    }
}
