//! Measuring a candidate: convert the inputs to its formats (timed apart), compile, and
//! take the median of repeated runs under a time cap, checking the result against the
//! reference evaluator's (a wrong candidate is an error, never a choice).

use std::time::{Duration, Instant};

use crate::jit::Toolchain;
use crate::kernel::{Backend, Kernel};
use crate::reference;
use crate::tensor::{Tensor, ValueType};
use crate::Error;

use super::space::{Candidate, Space};

/// Largest accepted difference from the reference's result, relative to the terms'
/// magnitude (as `sparsec run --check`).
const TOLERANCE: f64 = 1e-9;

/// How a candidate is measured.
#[derive(Clone, Debug)]
pub struct MeasureOptions {
    /// Runs after the warm-up whose median is the runtime.
    pub repeats: usize,
    /// Time after which no more runs of one candidate start.
    pub cap: Duration,
    /// The backend that compiles candidates.
    pub backend: Backend,
}

impl Default for MeasureOptions {
    fn default() -> MeasureOptions {
        MeasureOptions {
            repeats: 7,
            cap: Duration::from_secs(2),
            backend: Backend::C,
        }
    }
}

/// What measuring one candidate found.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Median time of one run (preparation, compute and assembly of the output).
    pub runtime: Duration,
    /// Runs the median is taken over.
    pub runs: usize,
    /// Converting the inputs from their declared formats to the candidate's.
    pub conversion: Duration,
    /// Compiling (or loading from the cache) the candidate's kernel.
    pub compile: Duration,
}

/// Measures candidates of one space on one set of inputs.
pub struct Measurer {
    /// Inputs in their declared formats (tensor `k + 1` of the statement at `k`).
    inputs: Vec<Tensor>,
    /// The reference evaluator's result, which every candidate must reproduce.
    expected: Tensor,
    /// The reference's magnitude of the terms of each output component.
    magnitude: Tensor,
    options: MeasureOptions,
}

impl Measurer {
    /// A measurer of `space`'s candidates on `inputs` (in the declared formats); runs the
    /// reference evaluator once to learn the scale of the result.
    pub fn new(
        space: &Space,
        inputs: Vec<Tensor>,
        options: MeasureOptions,
    ) -> Result<Measurer, Error> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let statement = space.statement();
        let expected = reference::evaluate(statement, &refs, None);
        let magnitude = reference::magnitude(statement, &refs, None);
        Ok(Measurer {
            inputs,
            expected,
            magnitude,
            options,
        })
    }

    /// The inputs in their declared formats.
    pub fn inputs(&self) -> &[Tensor] {
        &self.inputs
    }

    /// Measure `candidate`. An [`Error::Tensor`] says that the candidate's formats cannot
    /// hold these inputs or the result (the formats' packing decides), any other error
    /// that the candidate failed. Runs stop early once they have taken `give_up_after` in all
    /// (a candidate already far slower than the best need not be known precisely).
    pub fn measure(
        &self,
        space: &Space,
        candidate: &Candidate,
        give_up_after: Option<Duration>,
    ) -> Result<Measurement, Error> {
        let converting = Instant::now();
        let mut converted: Vec<Option<Tensor>> = vec![None; self.inputs.len()];
        for (k, &t) in space.tuned().iter().enumerate() {
            if t == 0 {
                continue; // the output is produced in its format, not converted
            }
            let format = &candidate.point.formats[k];
            if format != self.inputs[t - 1].format() {
                converted[t - 1] = Some(self.inputs[t - 1].convert(format)?);
            }
        }
        let conversion = converting.elapsed();
        let refs: Vec<&Tensor> = converted
            .iter()
            .zip(&self.inputs)
            .map(|(c, i)| c.as_ref().unwrap_or(i))
            .collect();

        let compiling = Instant::now();
        let mut kernel = Kernel::from_lowered(
            candidate.statement.clone(),
            candidate.lowered.clone(),
            ValueType::F64,
            &Toolchain::default(),
            self.options.backend,
        )?;
        kernel.set_threads(candidate.point.threads);
        let compile = compiling.elapsed();

        let started = Instant::now();
        let (result, _) = kernel.run_timed(&refs, None)?;
        let error = reference::max_error(&result, &self.expected, &self.magnitude);
        if error > TOLERANCE || error.is_nan() {
            return Err(Error::Tune(format!(
                "the candidate `{}` computes a result that differs from the reference's by \
                 {error:.3e} of the terms' magnitude",
                candidate.point.key()
            )));
        }
        let warm_up = started.elapsed();
        let cap = give_up_after.map_or(self.options.cap, |g| g.min(self.options.cap));
        let mut times = Vec::with_capacity(self.options.repeats);
        if warm_up < cap {
            let timing = Instant::now();
            while times.len() < self.options.repeats.max(1) {
                let (_, t) = kernel.run_timed(&refs, None)?;
                times.push(t.prepare + t.compute + t.assemble);
                if timing.elapsed() + warm_up >= cap {
                    break;
                }
            }
        } else {
            times.push(warm_up);
        }
        Ok(Measurement {
            runtime: median(&mut times),
            runs: times.len(),
            conversion,
            compile,
        })
    }
}

/// The median of `times` (the mean of the middle two for an even count).
pub fn median(times: &mut [Duration]) -> Duration {
    assert!(!times.is_empty(), "the median of no times");
    times.sort_unstable();
    let n = times.len();
    if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2
    }
}
