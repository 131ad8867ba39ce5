//! Choosing the version of a kernel's gathered sums by measuring them (see
//! [`crate::ir::gather`]).
//!
//! The run-time tests that pick serial loops, filled lanes or hardware gathers were
//! measured on one machine and are wrong on another (SpMV over short uneven rows: 2.4x
//! faster with gathers on an Intel Xeon, 2x slower on AMD Zen 4). A kernel called again
//! and again with one input (an iterative solver, a benchmark, the tuner) can afford to
//! find out: its first call runs as the tests choose (and warms the caches), the next
//! calls run each version in turn, [`ROUNDS`] times over (once where the first call took
//! [`LONG_CALL`] or more: a slow moment of the machine is then small beside the call, and
//! a run of ten calls is mostly its chosen version), and from then on it runs the
//! version whose fastest trial was fastest, until the input changes. An input is told by the call's
//! scalar arguments (lengths, extents, samples of its structure, threads) and the code
//! that runs, so a new matrix of other sizes starts over, and a tiered kernel whose C
//! code replaced the JIT's measures again.

use std::time::Duration;

use crate::ir::gather::{SumVersion, BY_TESTS};

/// How many times each version runs on trial, the versions taken in turn so that a slow
/// moment of the machine does not fall on one version only.
pub(crate) const ROUNDS: usize = 3;

/// The time of a first call from which each version runs on trial once.
pub(crate) const LONG_CALL: Duration = Duration::from_millis(1);

/// What a kernel learnt of its versions' speed on the input it last ran.
#[derive(Debug, Default)]
pub(crate) struct VersionChoice {
    /// The call's scalar arguments and code the measurements belong to.
    input: Vec<i64>,
    /// Calls with `input` so far.
    calls: usize,
    /// The calls on trial, set by the first call's time.
    trials: usize,
    /// Each version's fastest trial.
    fastest: [Option<Duration>; SumVersion::ALL.len()],
    /// The version chosen once every trial has run.
    chosen: Option<SumVersion>,
}

impl VersionChoice {
    /// The value of `ParamRef::SumVersion` for the next call, on the input `input`.
    pub(crate) fn next(&mut self, input: &[i64]) -> i64 {
        if self.input != input {
            *self = VersionChoice {
                input: input.to_vec(),
                ..VersionChoice::default()
            };
        }
        match (self.chosen, self.calls) {
            (Some(version), _) => version as i64,
            (None, 0) => BY_TESTS,
            (None, n) => SumVersion::ALL[(n - 1) % SumVersion::ALL.len()] as i64,
        }
    }

    /// Note that a call on `input` that ran with `version` (what [`VersionChoice::next`]
    /// gave) took `took`; the last trial chooses.
    pub(crate) fn record(&mut self, input: &[i64], version: i64, took: Duration) {
        if self.input != input || self.chosen.is_some() {
            return;
        }
        self.calls += 1;
        if self.calls == 1 {
            let rounds = if took >= LONG_CALL { 1 } else { ROUNDS };
            self.trials = rounds * SumVersion::ALL.len();
        }
        if let Some(k) = SumVersion::ALL.iter().position(|v| *v as i64 == version) {
            let fastest = &mut self.fastest[k];
            *fastest = Some(fastest.map_or(took, |f| f.min(took)));
        }
        if self.calls > self.trials {
            self.chosen = SumVersion::ALL
                .iter()
                .zip(self.fastest)
                .filter_map(|(v, t)| Some((*v, t?)))
                .min_by_key(|(_, t)| *t)
                .map(|(v, _)| v);
        }
    }

    /// The version chosen for the input of the last call, once measured.
    pub(crate) fn chosen(&self) -> Option<SumVersion> {
        self.chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Run `calls` calls on `input` whose version `v` takes `time(v)`; the versions run.
    fn run(
        choice: &mut VersionChoice,
        input: &[i64],
        calls: usize,
        mut time: impl FnMut(i64) -> Duration,
    ) -> Vec<i64> {
        (0..calls)
            .map(|_| {
                let v = choice.next(input);
                choice.record(input, v, time(v));
                v
            })
            .collect()
    }

    const TRIALS: usize = ROUNDS * SumVersion::ALL.len();

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn the_tests_choose_first_then_each_version_runs_in_turn() {
        let mut choice = VersionChoice::default();
        let versions = run(&mut choice, &[7, 8], 1 + TRIALS, |_| us(100));
        assert_eq!(versions[0], BY_TESTS);
        assert_eq!(&versions[1..4], &[0, 1, 2]);
        for v in SumVersion::ALL {
            let runs = versions.iter().filter(|&&x| x == v as i64).count();
            assert_eq!(runs, ROUNDS, "{v:?}");
        }
        assert!(choice.chosen().is_some());
    }

    /// Where the first call took a millisecond or more, each version runs once on trial.
    #[test]
    fn long_calls_try_each_version_once() {
        let mut choice = VersionChoice::default();
        let versions = run(&mut choice, &[3], 6, |v| if v == 0 { ms(3) } else { ms(5) });
        assert_eq!(versions, [BY_TESTS, 0, 1, 2, 0, 0]);
        assert_eq!(choice.chosen(), Some(SumVersion::Scalar));
        // Just below a millisecond, three rounds.
        let mut choice = VersionChoice::default();
        run(&mut choice, &[3], 4, |_| LONG_CALL - us(1));
        assert_eq!(choice.chosen(), None);
    }

    #[test]
    fn the_fastest_trial_chooses_and_a_slow_moment_does_not() {
        let mut choice = VersionChoice::default();
        let mut trial = 0;
        let versions = run(&mut choice, &[1], 1 + TRIALS + 5, |v| {
            trial += 1;
            // Lanes are fastest, but their first trial fell on a slow moment; the
            // warm-up call (the tests' choice) is slowest of all and not counted.
            match (v, trial) {
                (BY_TESTS, _) => us(900),
                (1, 3) => us(800),
                (0, _) => us(200),
                (1, _) => us(120),
                _ => us(160),
            }
        });
        assert_eq!(choice.chosen(), Some(SumVersion::Lanes));
        assert!(versions[1 + TRIALS..].iter().all(|&v| v == 1));
    }

    #[test]
    fn another_input_is_measured_again() {
        let mut choice = VersionChoice::default();
        run(&mut choice, &[1], 1 + TRIALS, |v| {
            if v == 2 {
                ms(1)
            } else {
                ms(3)
            }
        });
        assert_eq!(choice.chosen(), Some(SumVersion::Gathers));
        assert_eq!(choice.next(&[1]), 2);
        assert_eq!(choice.next(&[2]), BY_TESTS);
        assert_eq!(choice.chosen(), None);
        run(&mut choice, &[2], 1 + TRIALS, |v| {
            if v == 0 {
                ms(1)
            } else {
                ms(3)
            }
        });
        assert_eq!(choice.chosen(), Some(SumVersion::Scalar));
    }

    /// A call whose input changed between `next` and `record` (another thread's run on
    /// another input) is not counted for either input.
    #[test]
    fn a_record_for_another_input_is_ignored() {
        let mut choice = VersionChoice::default();
        assert_eq!(choice.next(&[1]), BY_TESTS);
        choice.record(&[1], BY_TESTS, us(1));
        assert_eq!(choice.next(&[1]), 0);
        choice.record(&[9], 0, us(1));
        assert_eq!(
            choice.next(&[1]),
            0,
            "the trial of version 0 is still to run"
        );
    }
}
