//! Running generated kernels on tensors: the public execution API.
//!
//! ```no_run
//! use sparsec::format::Format;
//! use sparsec::kernel::Kernel;
//! use sparsec::notation::TensorDecl;
//! use sparsec::tensor::{Coo, Tensor, ValueType};
//!
//! let csr = Format::parse("csr", 2).unwrap();
//! let decls = [
//!     TensorDecl::new("y"),
//!     TensorDecl::new("A").with_dims(&[3, 3]).with_format(csr.clone()),
//!     TensorDecl::new("x").with_dims(&[3]),
//! ];
//! let kernel = Kernel::compile("y(i) = A(i,j) * x(j)", &decls, &[]).unwrap();
//! let a = Coo::new(vec![3, 3], vec![0, 0, 1, 2, 2, 1], vec![1.0, 2.0, 3.0]).unwrap();
//! let a = Tensor::from_coo(&a, &csr, ValueType::F64).unwrap();
//! let x = Tensor::from_coo(&Coo::new(vec![3], vec![0, 1, 2], vec![1.0, 1.0, 1.0]).unwrap(),
//!                          &Format::dense(1), ValueType::F64).unwrap();
//! let y = kernel.run(&[&a, &x]).unwrap();
//! println!("{:?}", y.to_coo());
//! ```

pub(crate) mod bind;
pub(crate) mod native;
pub(crate) mod output;
pub(crate) mod placement;
mod run;
mod team;
pub use output::Assembled;
pub use run::KernelInput;
mod variants;
mod versions;
pub use versions::{SumVersions, MAX_TRIAL_RUNS};

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::codegen::c::CTarget;
use crate::codegen::clif::CraneliftTarget;
use crate::codegen::cuda::CudaTarget;
use crate::codegen::opencl::OpenClTarget;
use crate::ir::gather::SumVersion;
use crate::ir::{ArrayKind, ArrayRef, Function, IndexWidth, OutputMode, ScalarArg};
use crate::jit::Toolchain;
use crate::lower::{self, LowerError, Lowered};
use crate::notation::cin::Statement;
use crate::notation::{self, TensorDecl};
use crate::schedule::{Concrete, OmpSchedule, ParallelUnit, RaceStrategy, Schedule, Transform};
use crate::target::{Artifact, Listing, Targets};
use crate::tensor::{Tensor, ValueType};
use crate::Error;
use native::Compiled;

/// Time spent in each phase of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    /// Reordering inputs whose layout conflicts with the loop order, preparing the output.
    pub prepare: Duration,
    /// The generated kernel.
    pub compute: Duration,
    /// Collecting the kernel's emitted entries and assembling them into the output format
    /// (for [`Kernel::compute`]: checking them and scattering their values).
    pub assemble: Duration,
}

/// The built-in choices of the targets that turn a lowered kernel into native code, by
/// the names the CLI and the Python module give them; [`Kernel::with_targets`] takes any
/// [`crate::target::Target`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// C printed and compiled by the system C compiler (cached on disk), with OpenMP.
    #[default]
    C,
    /// Cranelift, in process: no compiler, no cache, far lower latency; runs serially.
    Jit,
    /// The C compiler's code when the cache holds it; else the JIT's code at once while
    /// the C compiler works in the background, and its code from the first run after it
    /// finishes (see [`Kernel::finish_compiling`]).
    Tiered,
    /// OpenCL C for a GPU schedule's kernels, built by an OpenCL device's driver (a GPU,
    /// or PoCL on the CPU); needs the `opencl` feature.
    OpenCl,
    /// CUDA C for a GPU schedule's kernels: printed and checked, not yet launched (this
    /// build has no CUDA runtime, which compiling says).
    Cuda,
}

impl Backend {
    /// Every choice, in the order the CLI and the Python module list them.
    pub const ALL: [Backend; 5] = [
        Backend::Tiered,
        Backend::C,
        Backend::Jit,
        Backend::OpenCl,
        Backend::Cuda,
    ];

    /// The name errors give it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::C => "C",
            Backend::Jit => "JIT",
            Backend::Tiered => "tiered",
            Backend::OpenCl => crate::codegen::opencl::NAME,
            Backend::Cuda => crate::codegen::cuda::NAME,
        }
    }

    /// How options spell it (`--backend`, `backend=`): `c`, `jit`, `tiered`, `opencl`.
    pub fn option(self) -> &'static str {
        match self {
            Backend::C => "c",
            Backend::Jit => "jit",
            Backend::Tiered => "tiered",
            Backend::OpenCl => "opencl",
            Backend::Cuda => "cuda",
        }
    }

    /// Whether its kernels run on a GPU device (GPU schedules only).
    pub fn runs_on_gpu(self) -> bool {
        matches!(self, Backend::OpenCl | Backend::Cuda)
    }

    /// The choice an option spells, if any.
    pub fn from_option(option: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.option() == option)
    }

    /// The targets this choice compiles with (`toolchain` is the C target's).
    pub fn targets(self, toolchain: &Toolchain) -> Targets {
        let c = || Arc::new(CTarget::new(toolchain.clone()));
        match self {
            Backend::C => Targets::one(c()),
            Backend::Jit => Targets::one(Arc::new(CraneliftTarget)),
            Backend::Tiered => Targets::tiered(Arc::new(CraneliftTarget), c()),
            Backend::OpenCl => Targets::one(Arc::new(OpenClTarget)),
            Backend::Cuda => Targets::one(Arc::new(CudaTarget)),
        }
    }
}

/// A compiled statement, ready to run on tensors of the declared shapes and formats.
pub struct Kernel {
    statement: Statement,
    threads: usize,
    /// The statement lowered, after the main target's passes.
    lowered: Lowered,
    /// The function as lowering left it, before any target's passes, for
    /// [`Kernel::with_targets`].
    neutral: Function,
    value_type: ValueType,
    /// The C compiler, for [`Kernel::with_backend`] and the conversions' thread team.
    toolchain: Toolchain,
    /// The function compiled by the targets asked for: its main code runs when the
    /// inputs' index arrays are as the kernel was compiled for (every narrowable one
    /// `int32_t`, see [`Kernel::index_widths`]), variants for other widths.
    compiled: Compiled,
    /// Entry buffers of the last run, kept so that later runs do not grow them again.
    spare_buffers: native::EntryBuffers,
    /// Whether long sparse outputs are placed faster on one thread or on threads, learnt
    /// from the runs.
    placement: placement::PlacementPace,
    /// The library that lends the OpenMP team to conversions, loaded on first use.
    team: OnceLock<Option<team::TeamLibrary>>,
    /// How each call's version of the gathered sums is chosen, and what was measured.
    sum_versions: versions::SumVersionControl,
}

impl Kernel {
    /// Parse, check, lower and compile `expr` with every tensor in `f64`.
    pub fn compile(
        expr: &str,
        decls: &[TensorDecl],
        var_sizes: &[(String, usize)],
    ) -> Result<Kernel, Error> {
        let assignment = notation::parse(expr)?;
        let statement = notation::bind(&assignment, decls, var_sizes)?;
        Kernel::from_statement(statement, ValueType::F64, &Toolchain::default())
    }

    /// Lower and compile a checked statement with the default schedule: its outermost
    /// loop runs on all threads when that is race-free, the rest is serial.
    pub fn from_statement(
        statement: Statement,
        value_type: ValueType,
        toolchain: &Toolchain,
    ) -> Result<Kernel, Error> {
        let concrete = Concrete::new(&statement)?;
        let lowered = lower_with_default_parallelism(&concrete)?;
        Kernel::from_lowered(statement, lowered, value_type, toolchain, Backend::C)
    }

    /// Lower and compile a statement with a schedule (see [`crate::schedule`]).
    pub fn scheduled(
        statement: Statement,
        schedule: &Schedule,
        value_type: ValueType,
        toolchain: &Toolchain,
    ) -> Result<Kernel, Error> {
        let concrete = schedule.apply(&Concrete::new(&statement)?)?;
        Kernel::from_concrete(&concrete, value_type, toolchain)
    }

    /// Lower and compile a scheduled concrete statement (with the default parallel loop
    /// when its schedule parallelizes none, see [`lower_with_default_parallelism`]).
    pub fn from_concrete(
        concrete: &Concrete,
        value_type: ValueType,
        toolchain: &Toolchain,
    ) -> Result<Kernel, Error> {
        let lowered = lower_with_default_parallelism(concrete)?;
        Kernel::from_lowered(
            concrete.statement().clone(),
            lowered,
            value_type,
            toolchain,
            Backend::C,
        )
    }

    /// Compile a statement lowered by [`lower::lower`] or [`lower_with_default_parallelism`]
    /// with `backend` (`toolchain` is the C compiler's, which [`Backend::Jit`] does not run).
    pub fn from_lowered(
        statement: Statement,
        lowered: Lowered,
        value_type: ValueType,
        toolchain: &Toolchain,
        backend: Backend,
    ) -> Result<Kernel, Error> {
        let targets = backend.targets(toolchain);
        Kernel::from_lowered_on(statement, lowered, value_type, toolchain, targets)
    }

    /// Compile a lowered statement with `targets`, after the main target's passes
    /// ([`Targets::prepare`]); `toolchain` compiles the library that lends conversions an
    /// OpenMP team, whatever the targets.
    pub fn from_lowered_on(
        statement: Statement,
        mut lowered: Lowered,
        value_type: ValueType,
        toolchain: &Toolchain,
        targets: Targets,
    ) -> Result<Kernel, Error> {
        let neutral = lowered.function.clone();
        targets.prepare(&mut lowered.function)?;
        lowered.function.set_value_type(value_type);
        lowered.function.narrow_arrays = narrow_arrays(&lowered, &statement);
        let compiled = Compiled::new(&lowered.function, targets)?;
        let sum_versions = versions::SumVersionControl::new(
            &lowered.function,
            compiled.signature(),
            compiled.targets().main().capabilities().tunable,
        );
        Ok(Kernel {
            statement,
            threads: default_threads(),
            lowered,
            neutral,
            value_type,
            toolchain: toolchain.clone(),
            compiled,
            spare_buffers: native::EntryBuffers::default(),
            placement: placement::PlacementPace::default(),
            team: OnceLock::new(),
            sum_versions,
        })
    }

    /// The width of each index array of the inputs, as the kernel's main code reads them
    /// (inputs with other widths run code compiled for them on first use).
    pub fn index_widths(&self) -> Vec<(ArrayRef, IndexWidth)> {
        let function = &self.lowered.function;
        self.compiled
            .signature()
            .arrays
            .iter()
            .filter(|a| matches!(a, ArrayRef::Level { operand, .. } if operand.0 > 0))
            .map(|a| (*a, function.index_width(a)))
            .collect()
    }

    /// The code that reads the `narrow` arrays as `int32_t` and the others as `int64_t`:
    /// the main code, or a variant compiled (with the same targets) the first time inputs
    /// of these widths arrive.
    fn code_for(&self, narrow: &BTreeSet<ArrayRef>) -> Result<Arc<dyn Artifact>, Error> {
        self.compiled.code_for(&self.lowered.function, narrow)
    }

    /// The same kernel compiled with `backend` (its threads and sum versions kept).
    pub fn with_backend(self, backend: Backend) -> Result<Kernel, Error> {
        let targets = backend.targets(&self.toolchain);
        self.with_targets(targets)
    }

    /// The same kernel compiled with `targets` (its threads and sum versions kept).
    pub fn with_targets(self, targets: Targets) -> Result<Kernel, Error> {
        let threads = self.threads;
        let lowered = Lowered {
            function: self.neutral.clone(),
            ..self.lowered.clone()
        };
        let mut kernel = Kernel::from_lowered_on(
            self.statement.clone(),
            lowered,
            self.value_type,
            &self.toolchain,
            targets,
        )?;
        kernel.threads = threads;
        kernel.set_sum_versions(self.sum_versions.policy());
        Ok(kernel)
    }

    /// The targets asked for.
    pub fn targets(&self) -> &Targets {
        self.compiled.targets()
    }

    /// The name of the target whose code runs now (for a tiered kernel, the quick
    /// target's until the main target's code is ready).
    pub fn running_target(&self) -> &'static str {
        self.compiled.current().target()
    }

    /// Wait until a tiered kernel's background compilation has finished and run its code
    /// from now on. An error says why it failed (the quick code then keeps running); for
    /// one target there is nothing to wait for.
    pub fn finish_compiling(&self) -> Result<(), Error> {
        self.compiled.finish_compiling()
    }

    /// The checked statement.
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// The source text of the main target's code, or the quick one's, where they print
    /// one; for targets that print none (the JIT), the C translation unit of the same
    /// function, for reading. Printed on first use.
    pub fn source(&self) -> &str {
        &self.listing().text
    }

    /// Only the kernel function of [`Kernel::source`], without the runtime prelude.
    pub fn kernel_source(&self) -> &str {
        self.listing().kernel()
    }

    fn listing(&self) -> &Listing {
        self.compiled.listing(&self.lowered.function)
    }

    /// The loops, outermost first, by name.
    pub fn loop_order(&self) -> Vec<&str> {
        self.lowered.loops.iter().map(String::as_str).collect()
    }

    /// What each of the kernel's operands is: an operand whose format differs from its
    /// tensor's is a copy converted at every run (a reorder that transposes it).
    pub fn operand_layouts(&self) -> &[lower::Operand] {
        &self.lowered.operands
    }

    /// Number of threads parallel loops use (default: `OMP_NUM_THREADS`, else all cores).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The most threads a run of the code that runs now uses: [`Kernel::threads`] when it
    /// has a loop on threads and its target runs such loops on threads, else 1 (serial
    /// loops, or the JIT's code).
    /// Balanced loops may use fewer on small inputs.
    pub fn threads_used(&self) -> usize {
        // The signature computed once, not the function's walked again on every run.
        let on_threads = self
            .compiled
            .signature()
            .scalars
            .contains(&ScalarArg::Threads);
        if on_threads && self.compiled.current().capabilities().threads {
            self.threads
        } else {
            1
        }
    }

    /// Use `n` threads in parallel loops, at least 1 and at most [`MAX_THREADS`] (a team
    /// of a hundred thousand threads exhausts memory inside the OpenMP runtime).
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.clamp(1, MAX_THREADS);
    }

    /// The version of the gathered sums (SpMV's rows, TTV's fibers) that runs on the input
    /// of the last run, once the kernel has measured each on repeated runs with that input
    /// (see [`crate::ir::gather`]); `None` before, and for kernels with one version.
    pub fn sum_version(&self) -> Option<SumVersion> {
        self.sum_versions.chosen()
    }

    /// How many positions ahead the version chosen on the input of the last run prefetches
    /// the elements its loops gather (`x[j]` of SpMV over a large, scattered `x`), for a
    /// kernel whose loops prefetch them: the distance is measured with the versions of the
    /// sums (see [`Kernel::sum_version`]). `None` before the choice, and for other kernels.
    pub fn prefetch_distance(&self) -> Option<i64> {
        self.sum_versions.chosen_distance()
    }

    /// Whether the next run with the last run's input may still be one of the trials that
    /// measure the versions of the gathered sums (see [`Kernel::sum_version`]): a timing
    /// that should see only the chosen version runs the trials first
    /// ([`Kernel::run_version_trials`]).
    pub fn measuring_versions(&self) -> bool {
        self.sum_versions.measuring() && self.compiled.current().capabilities().tunable.is_some()
    }

    /// Run on `inputs` (adding into `initial` as [`Kernel::run_timed`] does) until the
    /// kernel has chosen the version of its gathered sums, at most [`MAX_TRIAL_RUNS`] times
    /// and not past `deadline`; returns the runs made. Timings of repeated runs call it
    /// first: the trials run the other versions, which repeated runs do not get.
    pub fn run_version_trials<I: KernelInput>(
        &self,
        inputs: &[I],
        initial: Option<&Tensor>,
        deadline: Option<Instant>,
    ) -> Result<usize, Error> {
        let mut runs = 0;
        while runs < MAX_TRIAL_RUNS
            && self.measuring_versions()
            && deadline.is_none_or(|d| Instant::now() < d)
        {
            self.run_timed(inputs, initial)?;
            runs += 1;
        }
        Ok(runs)
    }

    /// Choose the version of the gathered sums as `choice` says from the next run on
    /// (by default [`SumVersions::Measured`]).
    pub fn set_sum_versions(&mut self, choice: SumVersions) {
        self.sum_versions.set_policy(choice);
    }

    /// True when the code that runs now was compiled for this kernel rather than found in
    /// the cache (always, for the JIT's code).
    pub fn was_compiled(&self) -> bool {
        self.compiled.current().was_compiled()
    }

    /// How the kernel delivers its output: in place (dense), as emitted entries that are
    /// sorted and packed afterwards, or placed row by row in two phases.
    pub fn output_mode(&self) -> OutputMode {
        self.lowered.function.output
    }

    /// True when the output is sparse: the kernel emits its entries and they are
    /// assembled into the output format afterwards.
    pub fn assembles_output(&self) -> bool {
        !matches!(self.lowered.function.output, OutputMode::Dense { .. })
    }
}

/// The index arrays the kernel's main code reads or writes as `int32_t`:
/// - the inputs' arrays that tensors store as `int32_t` when their indices fit (those of
///   narrowable levels), since tensors are built with the narrowest width;
/// - a two-phase kernel's output coordinates (its leaf's `idx`) when the leaf's dimension
///   fits, which is known before any entry is placed. Its offsets (`pos`) count entries,
///   which are only known after counting, so they stay `int64_t`.
fn narrow_arrays(lowered: &Lowered, statement: &Statement) -> BTreeSet<ArrayRef> {
    let output = &statement.tensors[0];
    let narrow_leaf = output.format.row_levels().is_some_and(|(_, leaf_mode)| {
        i32::try_from(output.dims[leaf_mode]).is_ok()
            && output
                .format
                .levels()
                .last()
                .is_some_and(|l| l.format.narrowable())
    });
    lowered
        .function
        .signature()
        .arrays
        .into_iter()
        .filter(|a| match *a {
            ArrayRef::Level {
                operand,
                level,
                kind,
            } if operand.0 == 0 => {
                matches!(lowered.function.output, OutputMode::Rows { .. })
                    && narrow_leaf
                    && level == output.format.levels().len()
                    && kind == ArrayKind::Idx
            }
            ArrayRef::Level { operand, level, .. } => lowered.operands[operand.0].format.levels()
                [level - 1]
                .format
                .narrowable(),
            _ => false,
        })
        .collect()
}

/// `OMP_NUM_THREADS` when set, else the number of cores.
pub fn default_threads() -> usize {
    std::env::var("OMP_NUM_THREADS")
        .ok()
        .and_then(|v| v.split(',').next()?.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// The most threads a kernel's parallel loops use.
pub const MAX_THREADS: usize = 1024;

/// Lower for `target` as the schedule says; where the schedule parallelizes no loop, with
/// the target's default parallelism: the outermost loop on CPU threads
/// ([`lower_with_default_parallelism`]) for a target that runs them, a GPU mapping
/// ([`lower_with_default_gpu_parallelism`]) for one that runs GPU blocks only.
pub fn lower_for_target(
    concrete: &Concrete,
    target: &dyn crate::target::Target,
    average_fiber: Option<f64>,
) -> Result<Lowered, Error> {
    let units = target.capabilities().units;
    if concrete.parallelized
        || units.contains(&ParallelUnit::CpuThread)
        || !units.contains(&ParallelUnit::GpuBlock)
    {
        return Ok(lower_with_default_parallelism(concrete)?);
    }
    lower_with_default_gpu_parallelism(concrete, target, average_fiber)
}

/// Rows shorter than this on average run a thread each in the default GPU schedule; longer
/// ones a warp each, its lanes over the row.
pub const WARP_PER_ROW_FROM: f64 = 8.0;

/// Lower with the first default GPU mapping that lowers and `target` accepts, where the
/// schedule parallelizes no loop: a warp per outer coordinate with its lanes summing the
/// next loop (rows of `average_fiber` entries or more, or when it is unknown), a thread per
/// outer coordinate, then mappings for sums into one value (blocks' partial sums) and for
/// outer iterations that collide (atomics).
pub fn lower_with_default_gpu_parallelism(
    concrete: &Concrete,
    target: &dyn crate::target::Target,
    average_fiber: Option<f64>,
) -> Result<Lowered, Error> {
    if concrete.parallelized {
        return Ok(lower::lower(concrete)?);
    }
    let loops: Vec<String> = concrete.loops().iter().map(|l| l.to_string()).collect();
    let Some(outer) = loops.first() else {
        return Err(Error::Input(
            "the statement has no loop to run on a GPU (a scalar expression); use a CPU target"
                .into(),
        ));
    };
    let warp = loops.get(1).map(|inner| {
        format!(
            "split({outer},gpu_block,gpu_warp,8),parallelize(gpu_block,GPUBlock,NoRaces),\
             parallelize(gpu_warp,GPUWarp,NoRaces),parallelize({inner},GPUThread,ParallelReduction)"
        )
    });
    let thread = format!(
        "split({outer},gpu_block,gpu_thread,128),parallelize(gpu_block,GPUBlock,NoRaces),\
         parallelize(gpu_thread,GPUThread,NoRaces)"
    );
    let mut candidates: Vec<String> = match average_fiber {
        Some(f) if f < WARP_PER_ROW_FROM => [Some(thread), warp].into_iter().flatten().collect(),
        _ => [warp, Some(thread)].into_iter().flatten().collect(),
    };
    candidates.push(format!(
        "split({outer},gpu_block,gpu_thread,256),parallelize(gpu_block,GPUBlock,Temporary),\
         parallelize(gpu_thread,GPUThread,ParallelReduction)"
    ));
    candidates.push(format!(
        "split({outer},gpu_block,gpu_thread,128),parallelize(gpu_block,GPUBlock,Atomics),\
         parallelize(gpu_thread,GPUThread,Atomics)"
    ));
    let mut reasons = Vec::new();
    for text in &candidates {
        let lowered = Schedule::parse(text)
            .map_err(Error::from)
            .and_then(|s| Ok(s.apply(concrete)?))
            .and_then(|c| Ok(lower::lower(&c)?));
        let accepted = lowered.and_then(|l| target.listing(&l.function).map(|_| l));
        match accepted {
            Ok(l) => return Ok(l),
            Err(e) => reasons.push(format!("{text}: {e}")),
        }
    }
    Err(Error::Input(format!(
        "no default GPU schedule applies to this statement; give one with a schedule. Tried:\n{}",
        reasons.join("\n")
    )))
}

/// Lower with the outermost loop parallel on CPU threads when that is valid without races
/// (its iterations write disjoint parts of a dense output) and the schedule parallelizes
/// no loop itself, else as scheduled.
pub fn lower_with_default_parallelism(concrete: &Concrete) -> Result<Lowered, LowerError> {
    if concrete.parallelized {
        return lower::lower(concrete);
    }
    let outermost = concrete.loops().first().map(|s| s.to_string());
    let parallel = outermost.and_then(|var| {
        concrete
            .apply(&Transform::Parallelize {
                var,
                unit: ParallelUnit::CpuThread,
                races: RaceStrategy::NoRaces,
                schedule: OmpSchedule::Balanced,
                chunk: 1,
            })
            .ok()
    });
    match parallel.map(|c| lower::lower(&c)) {
        Some(Ok(lowered)) => Ok(lowered),
        _ => lower::lower(concrete),
    }
}
