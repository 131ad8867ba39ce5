//! Measuring a candidate: convert the inputs to its formats (timed apart), compile, and
//! take the median of repeated runs under a time cap, checking the result against the
//! reference evaluator's (a wrong candidate is an error, never a choice).

use std::time::{Duration, Instant};

use crate::format::Format;
use crate::ir::gather::SumVersion;
use crate::jit::{JitError, Toolchain};
use crate::kernel::{Backend, Kernel};
use crate::reference;
use crate::tensor::{Tensor, TensorError, ValueType};
use crate::Error;

use super::space::{Candidate, Space};

/// Largest accepted difference from the reference's result, relative to the terms'
/// magnitude (as `sparsec run --check`).
const TOLERANCE: f64 = 1e-9;

/// How a candidate is measured.
#[derive(Clone, Debug)]
pub struct MeasureOptions {
    /// Runs after the warm-up whose median is the runtime, at least.
    pub repeats: usize,
    /// Timed runs go on until they have taken this long (or `cap` is reached): the median
    /// of a few runs of a kernel of tens of microseconds moves by a quarter from one
    /// measurement to the next on a busy machine, and such a kernel's runs are cheap next
    /// to compiling it.
    pub min_timed: Duration,
    /// Time after which no more timed runs of one candidate start.
    pub cap: Duration,
    /// The backend that compiles candidates.
    pub backend: Backend,
    /// The C compiler, flags and cache of the C backend (its `compile_limit` is set per
    /// candidate from [`Patience::compile`]).
    pub toolchain: Toolchain,
}

impl Default for MeasureOptions {
    fn default() -> MeasureOptions {
        MeasureOptions {
            repeats: 7,
            min_timed: Duration::from_millis(10),
            cap: Duration::from_secs(2),
            backend: Backend::C,
            toolchain: Toolchain::default(),
        }
    }
}

/// How long measuring one candidate may take before it is given up; `None` waits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Patience {
    /// A first run longer than this (on one thread, in a child process) is killed
    /// ([`MeasureError::TimedOut`]), and a warm-up run longer than this is the only timed
    /// run: a candidate far slower than the best need not be known precisely.
    pub run: Option<Duration>,
    /// A compilation longer than this is stopped ([`MeasureError::CompileTimedOut`]): what
    /// is left of a search's budget.
    pub compile: Option<Duration>,
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
    /// Comparing its result with the reference's: as long as the runs themselves where the
    /// output is large and the kernel fast (a dense 1,000,000 x 4 SpMM result).
    pub check: Duration,
    /// The version of the gathered sums the kernel chose by measuring before the timed
    /// runs, and how far ahead it prefetches where its loops prefetch ([`Kernel::sum_version`],
    /// [`Kernel::prefetch_distance`]); `None` for a kernel with one version, or one timed
    /// by a single run.
    pub sums: Option<(SumVersion, Option<i64>)>,
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
    /// How long the reference evaluator took to compute `expected` and `magnitude`.
    reference_time: Duration,
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
        let evaluating = Instant::now();
        let (expected, magnitude) =
            reference::try_evaluate_with_magnitude(statement, &refs, None).map_err(Error::Input)?;
        Ok(Measurer {
            inputs,
            expected,
            magnitude,
            options,
            reference_time: evaluating.elapsed(),
        })
    }

    /// How long the reference evaluator took on these inputs: part of what tuning costs,
    /// since every candidate is checked against its result.
    pub fn reference_time(&self) -> Duration {
        self.reference_time
    }

    /// The inputs in their declared formats.
    pub fn inputs(&self) -> &[Tensor] {
        &self.inputs
    }

    /// Measure `candidate`, giving up as `patience` says.
    pub fn measure(
        &self,
        space: &Space,
        candidate: &Candidate,
        patience: Patience,
    ) -> Result<Measurement, MeasureError> {
        let converting = Instant::now();
        let mut converted: Vec<Option<Tensor>> = vec![None; self.inputs.len()];
        for (k, &t) in space.tuned().iter().enumerate() {
            let format = &candidate.point.formats[k];
            if t == 0 {
                // The output is produced in its format, not converted; the reference's
                // result tells how many components it holds.
                if format != &space.statement().tensors[0].format {
                    if let Some(grown) = oversized(format, &self.expected) {
                        return Err(MeasureError::Unfit(grown));
                    }
                }
                continue;
            }
            let input = &self.inputs[t - 1];
            if format != input.format() {
                if let Some(grown) = oversized(format, input) {
                    return Err(MeasureError::Unfit(grown));
                }
                converted[t - 1] = Some(input.convert(format).map_err(MeasureError::Unfit)?);
            }
        }
        let conversion = converting.elapsed();
        let refs: Vec<&Tensor> = converted
            .iter()
            .zip(&self.inputs)
            .map(|(c, i)| c.as_ref().unwrap_or(i))
            .collect();

        let compiling = Instant::now();
        let toolchain = Toolchain {
            compile_limit: patience.compile,
            ..self.options.toolchain.clone()
        };
        let mut kernel = Kernel::from_lowered(
            candidate.statement.clone(),
            candidate.lowered.clone(),
            ValueType::F64,
            &toolchain,
            self.options.backend,
        )
        .map_err(MeasureError::from_compile)?;
        kernel.set_threads(candidate.point.threads);
        let compile = compiling.elapsed();

        // A trial in a forked child is for CPU code: a device's driver has threads of its
        // own, which a forked child does not get.
        let trial = patience.run.filter(|_| !self.options.backend.runs_on_gpu());
        if let Some(limit) = trial {
            // A run can take far longer than the whole budget (a loop order that binary
            // searches a compressed level at every coordinate); a run in a child process
            // that can be killed finds out first. It runs on one thread: OpenMP's thread
            // pool does not survive `fork`.
            let serial_limit = limit * candidate.point.threads.max(1) as u32;
            match run_in_child(serial_limit, || {
                kernel.set_threads(1);
                kernel.run_timed(&refs, None).is_ok()
            }) {
                // An error the run returns is returned again by the run below, where it
                // can be told apart (a format that cannot hold the result is unfit).
                ChildRun::Finished | ChildRun::Returned => {}
                ChildRun::TimedOut => return Err(MeasureError::TimedOut(serial_limit)),
                ChildRun::Crashed(status) => {
                    return Err(MeasureError::Failed(Error::Tune(format!(
                        "the candidate `{}` crashed in a trial run (wait status {status})",
                        candidate.point.key()
                    ))))
                }
            }
            kernel.set_threads(candidate.point.threads);
        }
        let (result, first) = kernel
            .run_timed(&refs, None)
            .map_err(MeasureError::from_run)?;
        let warm_up = first.prepare + first.compute + first.assemble;
        let checking = Instant::now();
        let error = reference::max_error(&result, &self.expected, &self.magnitude);
        let check = checking.elapsed();
        if error > TOLERANCE || error.is_nan() {
            return Err(MeasureError::Failed(Error::Tune(format!(
                "the candidate `{}` computes a result that differs from the reference's by \
                 {error:.3e} of the terms' magnitude",
                candidate.point.key()
            ))));
        }
        // A candidate far slower than the best is known well enough from one run.
        let mut times = vec![warm_up];
        if patience.run.is_none_or(|limit| warm_up < limit) {
            times.clear();
            let settling = Instant::now();
            // The kernel's trials of its sum versions are not its runtime: the version it
            // chooses is what a user's repeated runs get.
            kernel
                .run_version_trials(&refs, None, Some(settling + self.options.cap))
                .map_err(MeasureError::from_run)?;
            let timing = Instant::now();
            loop {
                let (_, t) = kernel
                    .run_timed(&refs, None)
                    .map_err(MeasureError::from_run)?;
                times.push(t.prepare + t.compute + t.assemble);
                let enough = times.len() >= self.options.repeats.max(1)
                    && timing.elapsed() >= self.options.min_timed;
                if enough || settling.elapsed() >= self.options.cap {
                    break;
                }
            }
        }
        Ok(Measurement {
            runtime: median(&mut times),
            runs: times.len(),
            conversion,
            compile,
            check,
            sums: kernel
                .sum_version()
                .map(|version| (version, kernel.prefetch_distance())),
        })
    }
}

/// How many times an input's stored values a candidate's format may store: dense levels
/// over a large hypersparse matrix (`dd` over 20,000 x 20,000 with 240,000 entries), or
/// hash tables as wide as a power-law matrix's longest row under every row (`sh`: 20,000
/// tables of 8,192 slots), take seconds and gigabytes to build, and cannot win.
const MAX_GROWTH: u128 = 64;

/// Below this many positions a format is never too large, however few the entries.
const SMALL_STORAGE: u128 = 1 << 20;

/// Why `format` is unfit for `tensor` (an input, or the reference's result for the output)
/// because of its size alone: it would store more than [`MAX_GROWTH`] times the tensor's
/// stored values (and more than [`SMALL_STORAGE`]).
fn oversized(format: &Format, tensor: &Tensor) -> Option<TensorError> {
    let stored = tensor.stored_values() as u128;
    let too_large =
        |bound: u128| bound > SMALL_STORAGE && bound > stored.saturating_mul(MAX_GROWTH);
    let (dims, entries) = (tensor.dims(), tensor.stored_values());
    // First as if one parent held every entry; only a format that could then be too large
    // needs the widths of the tensor's fibers, which take a sort.
    let anywhere = vec![entries; format.levels().len()];
    if !too_large(format.positions_bound(dims, &anywhere, entries)?) {
        return None;
    }
    let bound = format.positions_bound(dims, &tensor.widest_fibers(format)?, entries)?;
    too_large(bound).then(|| TensorError::Unrepresentable {
        format: format.spelling(),
        reason: format!(
            "it would store up to {bound} values for {stored} stored ones, more than \
             {MAX_GROWTH} times as many"
        ),
    })
}

/// Why a candidate has no measurement.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// Its formats cannot hold these inputs or the result (a singleton level under a
    /// parent with several entries, say): the formats' packing decides, per input.
    #[error("its formats cannot hold these tensors: {0}")]
    Unfit(#[source] TensorError),
    /// One run took longer than this on one thread.
    #[error("one run takes more than {0:?} on one thread")]
    TimedOut(Duration),
    /// Compiling it took longer than this, and was stopped.
    #[error("compiling it takes more than {0:?}")]
    CompileTimedOut(Duration),
    /// It failed to compile, run or compute the reference's result: a bug, since every
    /// point of the space should.
    #[error(transparent)]
    Failed(Error),
}

impl MeasureError {
    /// A compilation's error: one stopped at the time limit is
    /// [`MeasureError::CompileTimedOut`], anything else a failure.
    fn from_compile(e: Error) -> MeasureError {
        match e {
            Error::Jit(JitError::CompileTimedOut { limit, .. }) => {
                MeasureError::CompileTimedOut(limit)
            }
            other => MeasureError::Failed(other),
        }
    }

    /// A run's error: the output format that cannot hold the result is
    /// [`MeasureError::Unfit`]; a run may also compile (a variant for inputs of other
    /// index widths, on first use), and is then judged as a compilation.
    fn from_run(e: Error) -> MeasureError {
        match e {
            Error::Tensor(t) => MeasureError::Unfit(t),
            other => MeasureError::from_compile(other),
        }
    }
}

/// How a run in a child process ended.
enum ChildRun {
    /// `work` returned true.
    Finished,
    /// `work` returned false.
    Returned,
    TimedOut,
    /// It ended otherwise (a signal): the wait status.
    Crashed(i32),
}

/// Run `work` in a forked child process, killing it after `limit`.
fn run_in_child(limit: Duration, work: impl FnOnce() -> bool) -> ChildRun {
    // SAFETY: the child only runs `work` (a kernel run: plain computation and allocation on
    // this thread) and leaves with `_exit`, running no destructors or atexit handlers of
    // the parent's state.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let ok = work();
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    if pid < 0 {
        // No child could be made: run nothing, and let the measurement that follows take
        // its time.
        return ChildRun::Finished;
    }
    let started = Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid out-parameter.
        let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if waited == pid {
            return match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
                (true, 0) => ChildRun::Finished,
                (true, 1) => ChildRun::Returned,
                _ => ChildRun::Crashed(status),
            };
        }
        if started.elapsed() > limit {
            // SAFETY: kill and reap our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return ChildRun::TimedOut;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Coo;

    fn matrix(n: usize, entries: usize) -> Tensor {
        let coords = (0..entries)
            .flat_map(|e| [e as i64, (e * 7 % n) as i64])
            .collect();
        let coo = Coo::new(vec![n, n], coords, vec![1.0; entries]).unwrap();
        Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap()
    }

    /// Dense levels over a large hypersparse matrix make a format unfit before anything is
    /// allocated; compressed levels, blocks (at most one per entry) and small matrices
    /// fit.
    #[test]
    fn formats_far_larger_than_the_input_are_unfit() {
        let large = matrix(50_000, 100);
        let format = |f: &str| Format::parse(f, 2).unwrap();
        let error = oversized(&format("dense"), &large).expect("2.5G slots for 100 entries");
        assert!(error.to_string().contains("2500000000"), "{error}");
        assert!(oversized(&format("sd"), &large).is_some());
        for fits in ["csr", "dcsr", "csc", "coo", "ds:1,0", "bcsr:4x4"] {
            assert!(oversized(&format(fits), &large).is_none(), "{fits}");
        }
        // Below a million slots nothing is too large.
        assert!(oversized(&format("dense"), &matrix(1000, 1)).is_none());
        // Hash tables are as wide as the widest parent needs: one long row makes every
        // row's table wide, short rows keep them narrow.
        assert!(oversized(&format("sh"), &large).is_none());
        let n = 50_000;
        let mut coords: Vec<i64> = (0..20_000).flat_map(|j| [7, j]).collect();
        coords.extend((0..100).flat_map(|e| [100 + e, e]));
        let skewed = Tensor::from_coo(
            &Coo::new(vec![n, n], coords, vec![1.0; 20_100]).unwrap(),
            &format("csr"),
            ValueType::F64,
        )
        .unwrap();
        assert!(oversized(&format("sh"), &skewed).is_some());
        assert!(oversized(&format("dh"), &skewed).is_some());
        assert!(oversized(&format("csr"), &skewed).is_none());
        // The largest level counts, not the last: a compressed level under a dense one has
        // a segment start per dense position (here 100 x 50,000 for 100 entries).
        let coords = (0..100).flat_map(|e| [e * 13, e * 7, e]).collect();
        let hypersparse = Tensor::from_coo(
            &Coo::new(vec![n; 3], coords, vec![1.0; 100]).unwrap(),
            &Format::parse("sss", 3).unwrap(),
            ValueType::F64,
        )
        .unwrap();
        let format3 = |f: &str| Format::parse(f, 3).unwrap();
        assert!(oversized(&format3("sds:2,0,1"), &hypersparse).is_some());
        assert!(oversized(&format3("sss:2,0,1"), &hypersparse).is_none());
    }
}
