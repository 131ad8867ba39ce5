//! Searching the space under a measurement budget: random search over formats and
//! schedules, and the format-only baseline (formats drawn, sparsec's default schedule).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::Error;

use super::measure::{median, MeasureError, Measurement, Measurer, Patience};
use super::space::{Candidate, Draw, Point, Space};

/// How a search draws its candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Formats and schedules drawn together at random.
    Random,
    /// Formats drawn at random, each with sparsec's default schedule.
    FormatOnly,
}

impl Strategy {
    /// The name the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Random => "random",
            Strategy::FormatOnly => "format-only",
        }
    }
}

/// What a search is told after each measured candidate.
pub struct Progress<'a> {
    /// Time the tuning has taken so far, the reference evaluation included.
    pub elapsed: Duration,
    /// The budget.
    pub budget: Duration,
    /// Candidates measured so far.
    pub measured: usize,
    /// The best runtime so far.
    pub best: Duration,
    /// The candidate just measured and its measurement, if it could be measured.
    pub last: Option<(&'a Point, &'a Measurement)>,
}

/// A search's outcome.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// The fastest point (the default when nothing beat it in every round), by the median
    /// of the confirmation rounds that measure the search's fastest again beside the
    /// default.
    pub best: Point,
    /// Its measurement: the round of median runtime, counting every round's runs.
    pub best_measurement: Measurement,
    /// The default point (declared formats, default schedule, all threads).
    pub default: Point,
    /// The default's measurement, from the same rounds when there were any.
    pub default_measurement: Measurement,
    /// Candidates measured, the default included.
    pub measured: usize,
    /// The points the search proposed after the default, in its order (the model's
    /// ranking, or the random draws), whether they could be measured or not: what a
    /// search prefers, apart from what the measurements then found.
    pub tried: Vec<Point>,
    /// Candidates whose formats cannot hold these inputs (a singleton level under a
    /// parent with several entries, say): the formats' packing decides, per input.
    pub unfit: usize,
    /// Candidates stopped because one run took over ten times the best's, or their
    /// compilation ran past the budget.
    pub timed_out: usize,
    /// Candidates that failed otherwise, with the reason. Each is a bug: every point of
    /// the space should compile and compute the reference's result.
    pub failures: Vec<String>,
    /// Wall-clock time of the whole search, with the reference evaluation that checks its
    /// candidates ([`Measurer::reference_time`]).
    pub tuning_time: Duration,
    /// The part of `tuning_time` the reference evaluation took.
    pub reference_time: Duration,
}

impl Tuned {
    /// The default's runtime over the chosen point's.
    pub fn speedup(&self) -> f64 {
        self.default_measurement.runtime.as_secs_f64()
            / self.best_measurement.runtime.as_secs_f64().max(1e-12)
    }

    /// Runs of the kernel after which the search and the conversion to the chosen formats
    /// have paid for themselves (`None` when the choice is not faster than the default).
    pub fn break_even_runs(&self) -> Option<f64> {
        let saved = self.default_measurement.runtime.as_secs_f64()
            - self.best_measurement.runtime.as_secs_f64();
        (saved > 0.0).then(|| {
            (self.tuning_time.as_secs_f64() + self.best_measurement.conversion.as_secs_f64())
                / saved
        })
    }
}

/// Search `space` with `strategy` within `limits`, drawing from a generator seeded by
/// `seed`; `progress` is called after each candidate.
pub fn search(
    space: &Space,
    measurer: &Measurer,
    strategy: Strategy,
    limits: Limits,
    seed: u64,
    progress: impl FnMut(&Progress),
) -> Result<Tuned, Error> {
    let mut rng = StdRng::seed_from_u64(seed);
    let draw = match strategy {
        Strategy::Random => Draw::Everything,
        Strategy::FormatOnly => Draw::FormatsOnly,
    };
    measure_candidates(
        space,
        measurer,
        std::iter::from_fn(|| space.sample(&mut rng, draw)),
        limits,
        progress,
    )
}

/// Measure the default and the finalists again, interleaved, for
/// [`CONFIRMATION_ROUNDS`] rounds; returns the point chosen by [`confirmed_winner`], its
/// median measurement over the rounds, and the default's. A finalist that fails to run
/// again (it ran before, so only a changed machine makes it fail) drops out.
fn confirm(
    space: &Space,
    measurer: &Measurer,
    default: &Candidate,
    finalists: Vec<Candidate>,
) -> Result<(Point, Measurement, Measurement), Error> {
    let mut contenders: Vec<(&Candidate, Vec<Measurement>)> = std::iter::once(default)
        .chain(&finalists)
        .map(|c| (c, Vec::with_capacity(CONFIRMATION_ROUNDS)))
        .collect();
    for round in 0..CONFIRMATION_ROUNDS {
        // Each round starts one contender further on, so that none is always the first
        // measured after the search (or the last, before the machine changes state).
        let count = contenders.len();
        for k in (0..count).map(|i| (i + round) % count) {
            let (candidate, rounds) = &mut contenders[k];
            match measurer.measure(space, candidate, Patience::default()) {
                Ok(m) => rounds.push(m),
                Err(e) if k == 0 => {
                    return Err(Error::Tune(format!(
                        "measuring sparsec's default again failed: {e}"
                    )))
                }
                Err(_) => rounds.clear(),
            }
        }
        // A finalist that failed once is out: its rounds would no longer pair with the
        // default's.
        contenders.retain(|(c, rounds)| std::ptr::eq(*c, default) || !rounds.is_empty());
    }
    let runtimes: Vec<Vec<Duration>> = contenders
        .iter()
        .map(|(_, rounds)| rounds.iter().map(|m| m.runtime).collect())
        .collect();
    let winner = confirmed_winner(&runtimes);
    let mut confirmed: Vec<(&Candidate, Measurement)> = contenders
        .into_iter()
        .map(|(c, rounds)| (c, median_measurement(rounds)))
        .collect();
    let default_measurement = confirmed[0].1.clone();
    let (best, best_measurement) = confirmed.swap_remove(winner);
    Ok((best.point.clone(), best_measurement, default_measurement))
}

/// Which of the contenders (the default first) a search keeps, from their runtimes in
/// each confirmation round (`runtimes[c][r]`, every contender measured in every round):
/// the fastest by median among the default and the finalists that were faster than the
/// default in every round. Measurements here move by a quarter from one run to the next,
/// far more than most candidates differ, so the fastest of four medians is a finalist
/// more often than not even when none is faster (three times in four, were all equal):
/// a choice that then runs slower than the default it replaced. A finalist no faster than
/// the default beats it in all five paired rounds once in 32.
fn confirmed_winner(runtimes: &[Vec<Duration>]) -> usize {
    let default = &runtimes[0];
    (0..runtimes.len())
        .filter(|&c| c == 0 || runtimes[c].iter().zip(default).all(|(f, d)| f < d))
        .min_by_key(|&c| median(&mut runtimes[c].clone()))
        .expect("the default is a contender")
}

/// About what measuring a candidate again takes, from its measurement `m`: converting its
/// inputs, a warm-up run checked against the reference, and its timed runs (its kernel is
/// compiled already).
fn remeasuring(m: &Measurement) -> Duration {
    m.conversion + m.check + m.runtime * (m.runs as u32 + 1)
}

/// The measurement of median runtime among `rounds` (not empty), counting every round's
/// runs.
fn median_measurement(mut rounds: Vec<Measurement>) -> Measurement {
    rounds.sort_by_key(|m| m.runtime);
    let runs = rounds.iter().map(|m| m.runs).sum();
    let mut median = rounds.swap_remove(rounds.len() / 2);
    median.runs = runs;
    median
}

/// When a search stops.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Wall-clock budget of the tuning: the reference evaluation that checks the candidates
    /// ([`Measurer::reference_time`], done before the search), compilation and measurement.
    pub budget: Duration,
    /// The most candidates measured after the default (`None`: as many as the budget
    /// allows).
    pub candidates: Option<usize>,
}

/// How many of the fastest candidates a search measures again, beside the default, before
/// it chooses.
const FINALISTS: usize = 3;

/// Rounds of that confirmation: each measures the default and every finalist once, in
/// turn.
const CONFIRMATION_ROUNDS: usize = 5;

/// Measure sparsec's default, then `candidates` in turn (skipping repeats) until one of
/// `limits` is reached or they run out. Then confirm: the default and the three fastest
/// are measured again, interleaved, five times (`FINALISTS`, `CONFIRMATION_ROUNDS`), and
/// the fastest by its median over those rounds among the default and the finalists faster
/// than it in every round is kept (see `confirmed_winner`; finalists over three times the
/// best single measurement are not worth it). The best of many noisy measurements is
/// biased low (a candidate wins by drawing a lucky run), and the default measured first
/// ran in a cold process: choosing and reporting the speedup from the interleaved rounds
/// removes both biases. The rounds count in the tuning time and come out of the budget
/// (the search stops early enough for them, by the finalists' measurements so far), not
/// in `measured`; so does the reference evaluation done before the search (all of the
/// budget, on a large input: then only the default is measured).
pub fn measure_candidates(
    space: &Space,
    measurer: &Measurer,
    candidates: impl Iterator<Item = Candidate>,
    limits: Limits,
    mut progress: impl FnMut(&Progress),
) -> Result<Tuned, Error> {
    let started = Instant::now();
    // The tuning so far: the search, after the reference evaluation.
    let elapsed = || started.elapsed() + measurer.reference_time();
    let default = space.default_point()?;
    let measure_default = || {
        measurer
            .measure(space, &default, Patience::default())
            .map_err(|e| Error::Tune(format!("measuring sparsec's default failed: {e}")))
    };
    let default_measurement = measure_default()?;
    let mut best_runtime = default_measurement.runtime;
    // The fastest candidates so far with their measurements, fastest first.
    let mut finalists: Vec<(Measurement, Candidate)> = Vec::with_capacity(FINALISTS + 1);
    let mut seen: HashSet<String> = HashSet::from([default.point.key()]);
    let mut failures = Vec::new();
    let mut unfit = 0;
    let mut timed_out = 0;
    let mut measured = 1;
    let mut tried = Vec::new();
    let budget = limits.budget;
    // A space with few points runs out of new ones; stop after this many repeats in a row.
    let mut repeats_in_a_row = 0;
    for candidate in candidates {
        let confirming = CONFIRMATION_ROUNDS as u32
            * (remeasuring(&default_measurement)
                + finalists
                    .iter()
                    .map(|(m, _)| remeasuring(m))
                    .sum::<Duration>());
        let left = budget.saturating_sub(elapsed() + confirming);
        if left.is_zero()
            || repeats_in_a_row >= 100
            || limits.candidates.is_some_and(|n| measured > n)
        {
            break;
        }
        if !seen.insert(candidate.point.key()) {
            repeats_in_a_row += 1;
            continue;
        }
        repeats_in_a_row = 0;
        tried.push(candidate.point.clone());
        // Ten times the best is far enough from it to stop timing precisely (and at least
        // a few milliseconds, above the cost of starting a child process).
        // A compilation, unlike a run, is not bounded otherwise: it may use what is left.
        let patience = Patience {
            run: Some((best_runtime * 10).max(Duration::from_millis(20))),
            compile: Some(left),
        };
        let outcome = measurer.measure(space, &candidate, patience);
        measured += 1;
        let last = match &outcome {
            Ok(m) => {
                best_runtime = best_runtime.min(m.runtime);
                Some((&candidate.point, m))
            }
            Err(MeasureError::Unfit(_)) => {
                unfit += 1;
                None
            }
            Err(MeasureError::TimedOut(_) | MeasureError::CompileTimedOut(_)) => {
                timed_out += 1;
                None
            }
            Err(e) => {
                failures.push(format!("{}: {e}", candidate.point.key()));
                None
            }
        };
        progress(&Progress {
            elapsed: elapsed(),
            budget,
            measured,
            best: best_runtime,
            last,
        });
        if let Ok(m) = outcome {
            let slower = finalists.partition_point(|(f, _)| f.runtime <= m.runtime);
            if slower < FINALISTS {
                finalists.insert(slower, (m, candidate));
                finalists.truncate(FINALISTS);
            }
        }
    }
    // Noise moves a measurement by a factor of two at worst here, not three.
    finalists.retain(|(m, _)| m.runtime <= best_runtime * 3);
    let finalists = finalists.into_iter().map(|(_, c)| c).collect();
    // Whenever anything else was measured, the default's measurement comes from the rounds
    // too (alone, when no finalist is left), so that the speedup is never over a cold one.
    let (best, best_measurement, default_measurement) = if measured > 1 {
        confirm(space, measurer, &default, finalists)?
    } else {
        let only = default_measurement.clone();
        (default.point.clone(), only, default_measurement)
    };
    Ok(Tuned {
        best,
        best_measurement,
        default: default.point,
        default_measurement,
        measured,
        tried,
        unfit,
        timed_out,
        failures,
        tuning_time: elapsed(),
        reference_time: measurer.reference_time(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(rounds: &[u64]) -> Vec<Duration> {
        rounds.iter().map(|&t| Duration::from_micros(t)).collect()
    }

    #[test]
    fn a_finalist_replaces_the_default_only_when_faster_in_every_round() {
        let default = us(&[100, 120, 100, 90, 110]);
        // Faster by median (95 against 100) but slower in one round: the default stays.
        let lucky = us(&[95, 95, 95, 95, 115]);
        assert_eq!(confirmed_winner(&[default.clone(), lucky.clone()]), 0);
        // Faster in every round, if by little.
        let steady = us(&[99, 119, 99, 89, 109]);
        assert_eq!(
            confirmed_winner(&[default.clone(), lucky, steady.clone()]),
            2
        );
        // Of two finalists faster in every round, the lower median.
        let faster = us(&[60, 70, 50, 80, 60]);
        assert_eq!(confirmed_winner(&[default.clone(), steady, faster]), 2);
        // A tie is not faster.
        assert_eq!(confirmed_winner(&[default.clone(), default]), 0);
    }
}
