//! Autotuning: choosing the storage formats of the sparse operands and the schedule
//! together, per input (WACO, `../shared/spec/autotuning-waco.md`).
//!
//! - [`space`]: the SuperSchedule template of a statement and its valid points;
//! - [`measure`]: converting inputs, compiling and timing one candidate;
//! - [`search`]: random search and the format-only baseline under a time budget;
//! - [`augment`]: resized and block-densified variants of real inputs for data collection;
//! - [`cache`]: results keyed by a fingerprint of the statement and the inputs' structure;
//! - `model` (feature `learned`): the learned cost model and the search it guides.
//!
//! ```no_run
//! # use sparsec::{notation::cin::Statement, tensor::Tensor, tune};
//! # fn demo(statement: &Statement, inputs: Vec<Tensor>) -> Result<(), sparsec::Error> {
//! let options = tune::TuneOptions::default();
//! let (tuned, choice) = tune::tune(statement, inputs.clone(), &options, |_| {})?;
//! println!("{:.2}x over the default: {:?}", tuned.speedup(), choice);
//! // Later, on inputs of the same structure, without searching:
//! let again = tune::lookup(statement, &inputs, options.threads)?;
//! assert_eq!(again, Some(choice));
//! # Ok(()) }
//! ```

pub mod augment;
pub mod cache;
pub mod measure;
#[cfg(feature = "learned")]
pub mod model;
pub mod search;
pub mod space;

use std::time::Duration;

use crate::notation::cin::Statement;
use crate::tensor::Tensor;
use crate::Error;

pub use cache::Choice;
pub use measure::{MeasureError, MeasureOptions, Measurement, Measurer, Patience};
pub use search::{Limits, Progress, Strategy, Tuned};
pub use space::{Candidate, Draw, ParallelLoop, Point, Space};

/// How [`tune`] searches.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// The most threads a point may use.
    pub threads: usize,
    /// Wall-clock budget of the tuning: the reference evaluation that checks the
    /// candidates, compilation and measurement included.
    pub budget: Duration,
    /// The most candidates measured after sparsec's default (`None`: as many as the
    /// budget allows); searches compared at one measurement budget set it.
    pub candidates: Option<usize>,
    /// How candidates are drawn.
    pub strategy: Strategy,
    /// Seed of the candidates' random draws.
    pub seed: u64,
    /// How each candidate is measured.
    pub measure: MeasureOptions,
}

impl Default for TuneOptions {
    fn default() -> TuneOptions {
        TuneOptions {
            threads: crate::kernel::default_threads(),
            budget: Duration::from_secs(30),
            candidates: None,
            strategy: Strategy::Random,
            seed: 0,
            measure: MeasureOptions::default(),
        }
    }
}

impl TuneOptions {
    /// When the search stops.
    pub fn limits(&self) -> Limits {
        Limits {
            budget: self.budget,
            candidates: self.candidates,
        }
    }
}

/// The space of `statement` on `inputs` (tensor `k + 1` of the statement at `k`, in their
/// declared formats).
pub fn space_of(statement: &Statement, inputs: &[Tensor], threads: usize) -> Space {
    let input_entries: usize = inputs.iter().map(Tensor::stored_values).sum();
    // The output's entries are not known before a run; the inputs' total bounds the
    // memory its candidate formats may take.
    let nonzeros: Vec<usize> = std::iter::once(input_entries)
        .chain(inputs.iter().map(Tensor::stored_values))
        .collect();
    Space::new(statement, &nonzeros, threads)
}

/// Search for the best formats and schedule of `statement` on `inputs`, store the choice
/// in the cache ([`cache::cache_dir`]) and return it with the search's figures.
pub fn tune(
    statement: &Statement,
    inputs: Vec<Tensor>,
    options: &TuneOptions,
    progress: impl FnMut(&Progress),
) -> Result<(Tuned, Choice), Error> {
    tune_with(statement, inputs, options, |space, measurer| {
        search::search(
            space,
            measurer,
            options.strategy,
            options.limits(),
            options.seed,
            progress,
        )
    })
}

/// [`tune`] with another search: `search` gets the space and a measurer of `inputs`.
pub fn tune_with(
    statement: &Statement,
    inputs: Vec<Tensor>,
    options: &TuneOptions,
    search: impl FnOnce(&Space, &Measurer) -> Result<Tuned, Error>,
) -> Result<(Tuned, Choice), Error> {
    let backend = options.measure.backend;
    let mut space = space_of(statement, &inputs, options.threads);
    if backend.runs_on_gpu() {
        space = space.on_gpu(backend);
    }
    let key = choice_key(statement, &inputs, options.threads, backend);
    let measurer = Measurer::new(&space, inputs, options.measure.clone())?;
    let tuned = search(&space, &measurer)?;
    let choice = choice_of(&space, &tuned);
    cache::store(&cache::cache_dir(), &key, &choice)?;
    Ok((tuned, choice))
}

/// The cached choice for `statement` on inputs of the structure of `inputs` with at most
/// `threads` threads, if [`tune`] stored one.
pub fn lookup(
    statement: &Statement,
    inputs: &[Tensor],
    threads: usize,
) -> Result<Option<Choice>, Error> {
    lookup_on(statement, inputs, threads, crate::kernel::Backend::C)
}

/// [`lookup`] of the choice tuned for `backend`'s device: a GPU backend's choices are
/// kept apart from the CPU's.
pub fn lookup_on(
    statement: &Statement,
    inputs: &[Tensor],
    threads: usize,
    backend: crate::kernel::Backend,
) -> Result<Option<Choice>, Error> {
    let key = choice_key(statement, inputs, threads, backend);
    cache::load(&cache::cache_dir(), &key, |name| {
        statement
            .tensors
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.dims.len())
    })
}

/// The key of the choice for `statement` on inputs of the structure of `inputs`: the
/// fingerprint ([`cache::fingerprint`]), for a GPU device on one thread and prefixed by
/// the backend.
fn choice_key(
    statement: &Statement,
    inputs: &[Tensor],
    threads: usize,
    backend: crate::kernel::Backend,
) -> String {
    if backend.runs_on_gpu() {
        // A device's points run on one host thread, however many the host has.
        let fingerprint = cache::fingerprint(statement, inputs, 1);
        format!("{}-{fingerprint}", backend.option())
    } else {
        cache::fingerprint(statement, inputs, threads)
    }
}

/// The choice a search made, by tensor name.
pub fn choice_of(space: &Space, tuned: &Tuned) -> Choice {
    Choice {
        formats: space
            .tuned()
            .iter()
            .zip(&tuned.best.formats)
            .map(|(&t, f)| (space.statement().tensors[t].name.clone(), f.clone()))
            .collect(),
        schedule: tuned.best.schedule.clone(),
        threads: tuned.best.threads,
        speedup: tuned.speedup(),
    }
}

impl Choice {
    /// `statement` with this choice's formats.
    pub fn apply_formats(&self, statement: &Statement) -> Statement {
        let mut statement = statement.clone();
        for (name, format) in &self.formats {
            if let Some(t) = statement.tensors.iter_mut().find(|t| &t.name == name) {
                t.format = format.clone();
            }
        }
        statement
    }
}
