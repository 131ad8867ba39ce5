//! Choosing the candidate of a target's [`Tunable`] by measuring them: the C target's
//! versions of the gathered sums (see [`crate::ir::gather`]) and prefetch distances, and
//! any target's choice registered the same way (a GPU target's block size).
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
//! The candidates are the target's (`codegen::c::GATHERED_SUMS`): a kernel tries those
//! that differ in the parameters its function reads, so one whose loops prefetch the
//! elements they gather (`ParamRef::PrefetchDistance`) tries a fourth version, serial
//! sums with hints `FAR_ELEMENT_DISTANCE` ahead, where the others hint
//! `ELEMENT_DISTANCE` ahead: the distance that covers a miss depends on the machine's
//! caches as much as the sum versions do.

use std::sync::Mutex;
use std::time::Duration;

use crate::ir::gather::{SumVersion, BY_TESTS};
use crate::ir::{Function, OutputMode, ParamRef, ScalarArg, Signature};
use crate::target::{Tunable, MAX_CANDIDATES};

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

/// The position among a call's scalar arguments of each of a tunable's parameters, where
/// the function reads it: set per call rather than part of the input.
type Slots<'a> = &'a [Option<usize>];

fn holds(slots: Slots<'_>, k: usize) -> bool {
    slots.contains(&Some(k))
}

/// What a function tunes: the main target's [`Tunable`], where its parameters go, and the
/// candidates that differ for it.
#[derive(Debug)]
struct Tuning {
    tunable: &'static Tunable,
    slots: Vec<Option<usize>>,
}

/// How a kernel sets each call's candidate of its target's tunable (the C target's
/// versions of the gathered sums): where they go, the policy, and what it measured.
#[derive(Debug)]
pub(crate) struct SumVersionControl {
    /// `None` where the function reads none of the tunable's parameters, and for
    /// two-phase kernels, whose calls are phases of one run and keep the tests' choice.
    tuning: Option<Tuning>,
    policy: SumVersions,
    /// The candidates measured on the last input, and the one chosen.
    measured: Mutex<VersionChoice>,
}

impl SumVersionControl {
    /// The control of `function`'s calls, whose scalar arguments `signature` lays out,
    /// for its main target's `tunable`; candidates are measured until told otherwise.
    pub(crate) fn new(
        function: &Function,
        signature: &Signature,
        tunable: Option<&'static Tunable>,
    ) -> SumVersionControl {
        let position = |p: &ParamRef| {
            signature
                .scalars
                .iter()
                .position(|s| *s == ScalarArg::Param(*p))
        };
        let tuning = match function.output {
            OutputMode::Rows { .. } => None,
            _ => tunable
                .map(|tunable| Tuning {
                    tunable,
                    slots: tunable.params.iter().map(position).collect(),
                })
                .filter(|t| t.slots.iter().any(Option::is_some)),
        };
        let tried = tuning.as_ref().map_or_else(Vec::new, |t| {
            let present: Vec<bool> = t.slots.iter().map(Option::is_some).collect();
            t.tunable.distinct_candidates(&present)
        });
        SumVersionControl {
            tuning,
            policy: SumVersions::default(),
            measured: Mutex::new(VersionChoice::new(tried)),
        }
    }

    pub(crate) fn policy(&self) -> SumVersions {
        self.policy
    }

    pub(crate) fn set_policy(&mut self, policy: SumVersions) {
        self.policy = policy;
    }

    /// Set the candidate a call with scalar arguments `params` running the code at `code`
    /// runs, and return it for [`SumVersionControl::finish`]. Code that does not honour
    /// the tunable (`tuned` false: every candidate runs the same loops) is not measured:
    /// its calls run with the untuned values.
    pub(crate) fn begin(&self, params: &mut [i64], code: usize, tuned: bool) -> Option<Trial> {
        let tuning = self.tuning.as_ref()?;
        let trial = match self.policy {
            SumVersions::Measured if tuned => {
                self.measured.lock().ok()?.next(params, &tuning.slots, code)
            }
            SumVersions::Measured | SumVersions::Tested => Trial {
                version: BY_TESTS,
                record: None,
            },
            // The C target's candidate `n` is sum version `n`, at the near distance.
            SumVersions::Fixed(version) => Trial {
                version: version as i64,
                record: None,
            },
        };
        let values = usize::try_from(trial.version)
            .ok()
            .and_then(|k| tuning.tunable.candidates.get(k))
            .copied()
            .unwrap_or(tuning.tunable.untuned);
        for (slot, value) in tuning.slots.iter().zip(values) {
            if let Some(slot) = slot {
                params[*slot] = *value;
            }
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

    /// The value of the chosen candidate for `param`, where the function reads it, once
    /// chosen for the last input.
    fn chosen_value(&self, param: ParamRef) -> Option<i64> {
        let tuning = self.tuning.as_ref()?;
        let at = tuning.tunable.params.iter().position(|p| *p == param)?;
        tuning.slots[at]?;
        let chosen = self.measured.lock().ok()?.chosen()?;
        Some(tuning.tunable.candidates[chosen][at])
    }

    /// The version of the gathered sums chosen for the last input, once measured.
    pub(crate) fn chosen(&self) -> Option<SumVersion> {
        let value = self.chosen_value(ParamRef::SumVersion)?;
        SumVersion::ALL.get(usize::try_from(value).ok()?).copied()
    }

    /// How far ahead the chosen candidate prefetches elements, for a kernel that measures
    /// it, once chosen.
    pub(crate) fn chosen_distance(&self) -> Option<i64> {
        self.chosen_value(ParamRef::PrefetchDistance)
    }

    /// Whether the next call with the last call's input may still be a trial of a
    /// candidate: the policy measures and has not chosen yet.
    pub(crate) fn measuring(&self) -> bool {
        self.tuning.is_some()
            && self.policy == SumVersions::Measured
            && self
                .measured
                .lock()
                .is_ok_and(|measured| measured.chosen.is_none())
    }
}

/// The most calls of one input before its version is chosen: the warm-up calls, then two
/// passes of full blocks over every version.
pub const MAX_TRIAL_RUNS: usize = WARM_UP_CALLS + 2 * MAX_BLOCK * MAX_CANDIDATES;

/// What a kernel learnt of its candidates' speed on the input it last ran.
#[derive(Debug, Default)]
pub(crate) struct VersionChoice {
    /// The candidates tried, by index of [`Tunable::candidates`].
    tried: Vec<usize>,
    /// The call's scalar arguments (the version's and distance's slots zero) and then its
    /// code's address: the input the measurements belong to.
    input: Vec<i64>,
    /// Incremented at each new input, so that a call is recorded only for its own.
    generation: u64,
    /// Calls recorded for `input` so far.
    calls: usize,
    /// Consecutive calls of one version on trial, set by the last warm-up call's time.
    block: usize,
    /// Each tried candidate's fastest trial, in the order of `tried`.
    fastest: Vec<Option<Duration>>,
    /// The candidate chosen once every trial has run (an index of
    /// [`Tunable::candidates`]).
    chosen: Option<usize>,
}

/// The version a call runs, and whether its time is to be recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Trial {
    /// An index of [`Tunable::candidates`], or [`BY_TESTS`] for the untuned values.
    pub(crate) version: i64,
    /// The generation to record the call's time for, while the versions are measured.
    pub(crate) record: Option<u64>,
}

impl VersionChoice {
    /// Measurements of no input yet, for a kernel that tries the candidates `tried`.
    fn new(tried: Vec<usize>) -> VersionChoice {
        VersionChoice {
            fastest: vec![None; tried.len()],
            tried,
            ..VersionChoice::default()
        }
    }

    /// The candidate a call with scalar arguments `params` (whose tuned values go in
    /// `slots`) running the code at `code` runs.
    pub(crate) fn next(&mut self, params: &[i64], slots: Slots<'_>, code: usize) -> Trial {
        if !self.holds_input(params, slots, code) {
            let mut input: Vec<i64> = params
                .iter()
                .enumerate()
                .map(|(k, &p)| if holds(slots, k) { 0 } else { p })
                .collect();
            input.push(code as i64);
            *self = VersionChoice {
                input,
                generation: self.generation + 1,
                ..VersionChoice::new(std::mem::take(&mut self.tried))
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
            (None, n) => self.tried[self.trial_version(n - WARM_UP_CALLS)] as i64,
        };
        Trial {
            version,
            record: Some(self.generation),
        }
    }

    /// Whether `params` and `code` are those of the input measured.
    fn holds_input(&self, params: &[i64], slots: Slots<'_>, code: usize) -> bool {
        self.input.len() == params.len() + 1
            && self.input[params.len()] == code as i64
            && params
                .iter()
                .enumerate()
                .all(|(k, p)| holds(slots, k) || self.input[k] == *p)
    }

    /// The version of trial `t` (counted from 0 after the warm-up calls): blocks of
    /// `self.block` calls of each version in turn.
    fn trial_version(&self, t: usize) -> usize {
        t % (self.block * self.tried.len()) / self.block
    }

    /// The number of trials: two passes over the candidates.
    fn trials(&self) -> usize {
        2 * self.block * self.tried.len()
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
            let k = usize::try_from(version)
                .ok()
                .and_then(|c| self.tried.iter().position(|&t| t == c));
            if let (true, Some(k)) = (counted, k) {
                let fastest = &mut self.fastest[k];
                *fastest = Some(fastest.map_or(took, |f| f.min(took)));
            }
        }
        self.calls += 1;
        if self.calls >= WARM_UP_CALLS + self.trials() {
            self.chosen = (0..self.tried.len())
                .filter_map(|k| Some((self.tried[k], self.fastest[k]?)))
                .min_by_key(|(_, t)| *t)
                .map(|(c, _)| c);
        }
    }

    /// The candidate chosen for the input of the last call, once measured.
    pub(crate) fn chosen(&self) -> Option<usize> {
        self.chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version in argument 0, no distance.
    const SUMS_FIRST: Slots<'static> = &[Some(0), None];

    /// The version in argument 0, the distance in 2.
    const SUMS_FIRST_DISTANCE_LAST: Slots<'static> = &[Some(0), Some(2)];

    /// A kernel trying the first `n` of the C target's candidates.
    fn tried(n: usize) -> VersionChoice {
        VersionChoice::new((0..n).collect())
    }

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
                let slots = if choice.tried.len() == 4 {
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
        let mut choice = tried(3);
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
            let mut choice = tried(3);
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
        let mut choice = tried(3);
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
        assert_eq!(choice.chosen(), Some(2));
    }

    /// A block's first call runs after another version's and is not counted: here every
    /// version is slow on its block's first call, lanes most, and fastest after it.
    #[test]
    fn the_fastest_counted_trial_chooses() {
        let mut choice = tried(3);
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
        assert_eq!(choice.chosen(), Some(1), "{versions:?}");
        let after = WARM_UP_CALLS + 2 * 3 * 3;
        assert!(versions[after..].iter().all(|&v| v == 1), "{versions:?}");
    }

    /// A slow moment of the machine on one block does not decide: the other pass counts.
    #[test]
    fn a_slow_moment_does_not_decide() {
        let mut choice = tried(3);
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
        assert_eq!(choice.chosen(), Some(1));
    }

    #[test]
    fn another_input_is_measured_again() {
        let mut choice = tried(3);
        let time = |fast: i64| move |v: i64| if v == fast { us(1000) } else { us(3000) };
        let calls = WARM_UP_CALLS + 2 * 3;
        run(&mut choice, &[0, 1], calls, time(2));
        assert_eq!(choice.chosen(), Some(2));
        // The version's own slot is not part of the input.
        assert_eq!(choice.next(&[2, 1], SUMS_FIRST, 1).version, 2);
        assert_eq!(choice.next(&[2, 2], SUMS_FIRST, 1).version, BY_TESTS);
        assert_eq!(choice.chosen(), None);
        run(&mut choice, &[0, 2], calls, time(0));
        assert_eq!(choice.chosen(), Some(0));
        // Other code (a tiered kernel's C code after the JIT's) is another input too.
        assert_eq!(choice.next(&[0, 2], SUMS_FIRST, 7).version, BY_TESTS);
    }

    /// A kernel whose loops prefetch elements also tries serial sums with far hints (a
    /// fourth version), and keeps its distance's slot out of the input.
    #[test]
    fn a_prefetching_kernel_tries_the_far_distance() {
        let mut choice = tried(4);
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
        assert_eq!(choice.chosen(), Some(3));
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
        let mut choice = tried(3);
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

    /// The C target's candidates differ in the sum version and the distance: a function
    /// that reads only the version tries the three versions once each.
    #[test]
    fn candidates_alike_in_what_a_function_reads_are_tried_once() {
        let sums = &crate::codegen::c::GATHERED_SUMS;
        assert_eq!(sums.distinct_candidates(&[true, true]), vec![0, 1, 2, 3]);
        assert_eq!(sums.distinct_candidates(&[true, false]), vec![0, 1, 2]);
        assert_eq!(sums.distinct_candidates(&[false, true]), vec![0, 3]);
        // Candidate `n` is sum version `n`, as `SumVersions::Fixed` assumes.
        for version in SumVersion::ALL {
            assert_eq!(sums.candidates[version as usize][0], version as i64);
        }
    }
}
