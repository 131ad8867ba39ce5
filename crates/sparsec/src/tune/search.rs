//! Searching the space under a measurement budget: random search over formats and
//! schedules, and the format-only baseline (formats drawn, sparsec's default schedule).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::Error;

use super::measure::{MeasureError, Measurement, Measurer};
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
    /// Time spent so far.
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
    /// The fastest point measured (the default when nothing beat it).
    pub best: Point,
    /// Its measurement.
    pub best_measurement: Measurement,
    /// The default point (declared formats, default schedule, all threads).
    pub default: Point,
    /// The default's measurement.
    pub default_measurement: Measurement,
    /// Candidates measured, the default included.
    pub measured: usize,
    /// Candidates whose formats cannot hold these inputs (a singleton level under a
    /// parent with several entries, say): the formats' packing decides, per input.
    pub unfit: usize,
    /// Candidates stopped because one run took over ten times the best's.
    pub timed_out: usize,
    /// Candidates that failed otherwise, with the reason. Each is a bug: every point of
    /// the space should compile and compute the reference's result.
    pub failures: Vec<String>,
    /// Wall-clock time of the whole search.
    pub tuning_time: Duration,
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

/// When a search stops.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Wall-clock budget, compilation and measurement included.
    pub budget: Duration,
    /// The most candidates measured after the default (`None`: as many as the budget
    /// allows).
    pub candidates: Option<usize>,
}

/// Measure sparsec's default, then `candidates` in turn (skipping repeats) until one of
/// `limits` is reached or they run out; keep the fastest.
pub fn measure_candidates(
    space: &Space,
    measurer: &Measurer,
    candidates: impl Iterator<Item = Candidate>,
    limits: Limits,
    mut progress: impl FnMut(&Progress),
) -> Result<Tuned, Error> {
    let started = Instant::now();
    let default = space.default_point()?;
    let measure_default = || {
        measurer
            .measure(space, &default, None)
            .map_err(|e| Error::Tune(format!("measuring sparsec's default failed: {e}")))
    };
    let mut default_measurement = measure_default()?;
    let mut best = (default.point.clone(), default_measurement.clone());
    let mut seen: HashSet<String> = HashSet::from([default.point.key()]);
    let mut failures = Vec::new();
    let mut unfit = 0;
    let mut timed_out = 0;
    let mut measured = 1;
    let budget = limits.budget;
    // A space with few points runs out of new ones; stop after this many repeats in a row.
    let mut repeats_in_a_row = 0;
    for candidate in candidates {
        if started.elapsed() >= budget
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
        // Ten times the best is far enough from it to stop timing precisely (and at least
        // a few milliseconds, above the cost of starting a child process).
        let give_up = (best.1.runtime * 10).max(Duration::from_millis(20));
        let outcome = measurer.measure(space, &candidate, Some(give_up));
        measured += 1;
        let last = match &outcome {
            Ok(m) => {
                if m.runtime < best.1.runtime {
                    best = (candidate.point.clone(), m.clone());
                }
                Some((&candidate.point, m))
            }
            Err(MeasureError::Unfit(_)) => {
                unfit += 1;
                None
            }
            Err(MeasureError::TimedOut(_)) => {
                timed_out += 1;
                None
            }
            Err(e) => {
                failures.push(format!("{}: {e}", candidate.point.key()));
                None
            }
        };
        progress(&Progress {
            elapsed: started.elapsed(),
            budget,
            measured,
            best: best.1.runtime,
            last,
        });
    }
    // The default was measured first, while the process's memory was cold (page faults,
    // a cold kernel cache): measure it again now and keep the faster, so that the speedup
    // over it is not inflated by warming up.
    if measured > 1 {
        let again = measure_default()?;
        if again.runtime < default_measurement.runtime {
            default_measurement = again;
        }
        if default_measurement.runtime < best.1.runtime {
            best = (default.point.clone(), default_measurement.clone());
        }
    }
    Ok(Tuned {
        best: best.0,
        best_measurement: best.1,
        default: default.point,
        default_measurement,
        measured,
        unfit,
        timed_out,
        failures,
        tuning_time: started.elapsed(),
    })
}
