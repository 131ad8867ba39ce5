//! Targets: what turns the one IR into code that runs, behind one interface.
//!
//! A [`Target`] names itself, says what its code can do ([`Capabilities`]), and compiles a
//! lowered [`Function`] to an [`Artifact`]: code with the kernel ABI of
//! [`crate::codegen::abi`] that [`crate::kernel`] and [`crate::spf`] call without knowing
//! which target made it. The C backend ([`crate::codegen::c::CTarget`]) and the Cranelift
//! JIT ([`crate::codegen::clif::CraneliftTarget`]) implement both traits in their own
//! folders; [`Targets`] pairs a quick target with the one whose code replaces it (tiered
//! compilation). Adding a target touches no `match` outside its folder: it implements the
//! two traits and, to be chosen by name, joins [`crate::kernel::Backend`]'s list.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use crate::codegen::abi::{BackendError, EntryFn};
use crate::codegen::runtime::RawBuffer;
use crate::ir::{visit, ArrayKind, Function, Loop, LoopKind, ParallelUnit, ParamRef, Stmt};
use crate::Error;

/// What a target's code can do; [`check`] refuses a function that needs more, before the
/// target sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The units whose parallel loops it runs.
    pub units: &'static [ParallelUnit],
    /// Whether loops on [`ParallelUnit::CpuThread`] run on a team of threads (else in
    /// turn, on the calling thread).
    pub threads: bool,
    /// Whether it appends entries to the output buffers ([`Stmt::Emit`]).
    pub emitting: bool,
    /// Whether it performs atomic updates ([`Stmt::Atomic`]).
    pub atomics: bool,
    /// Whether it allocates scratch arrays ([`Function::locals`]).
    pub scratch: bool,
    /// Whether it calls level formats' helper functions (hashed levels' lookups).
    pub helpers: bool,
    /// The run-time choice its code honours and a kernel measures on repeated calls
    /// with one input (the C target's versions of the gathered sums); `None` where every
    /// candidate would run the same code, so that a kernel measures nothing.
    pub tunable: Option<&'static Tunable>,
    /// Whether its code checks the function's assumptions itself and returns the failed
    /// one's status (the CPU targets' do, at entry); where not (a device's kernels), the
    /// kernel core checks them on the host, from the call's scalars, before the call.
    pub checks_assumptions: bool,
}

/// The most candidates a [`Tunable`] has.
pub const MAX_CANDIDATES: usize = 8;

/// A choice a target's code leaves to run time because its best value depends on the
/// machine (a CPU's version of the gathered sums and prefetch distance; a GPU's block
/// size): the parameters it sets, and the candidates a kernel measures on repeated calls
/// with one input (see `kernel::SumVersions`), running the fastest from then on.
#[derive(Debug, PartialEq, Eq)]
pub struct Tunable {
    /// What is chosen, in words.
    pub name: &'static str,
    /// The function parameters a candidate sets, in order; a function's lowering and
    /// passes decide which of them it reads.
    pub params: &'static [ParamRef],
    /// The candidates, at most [`MAX_CANDIDATES`]: a value for each of `params`. For a
    /// function that reads only some of `params`, candidates that set them alike are one.
    pub candidates: &'static [&'static [i64]],
    /// The values a call runs with when it measures nothing: the code then chooses at
    /// run time as it can (the C target's run-time tests).
    pub untuned: &'static [i64],
}

impl Tunable {
    /// The candidates a function whose arguments hold `present` of [`Tunable::params`]
    /// (by position) tries: those that differ there, each with its index in
    /// [`Tunable::candidates`].
    pub fn distinct_candidates(&self, present: &[bool]) -> Vec<usize> {
        let mut seen: Vec<Vec<i64>> = Vec::new();
        let mut kept = Vec::new();
        for (k, values) in self.candidates.iter().enumerate() {
            let projected: Vec<i64> = values
                .iter()
                .zip(present)
                .filter(|(_, &p)| p)
                .map(|(v, _)| *v)
                .collect();
            if !seen.contains(&projected) {
                seen.push(projected);
                kept.push(k);
            }
        }
        kept
    }
}

/// Each thread zeroes the rows of a dense output it adds into
/// ([`crate::ir::zero_rows`]): a pass of the CPU targets (C and the JIT), not of a GPU's,
/// where the caller's zeroing costs no cache traffic between threads.
pub const ZERO_ROWS: Pass = Pass {
    name: "zero rows in the kernel",
    run: crate::ir::zero_rows::zero_rows_in_kernel,
};

/// A rewrite of a lowered function that a target runs before compiling it: shared
/// lowering ends with the target-neutral passes, and what pays only on some hardware
/// (the CPU's gathered-sum versions and prefetch hints) is the target's.
#[derive(Clone, Copy)]
pub struct Pass {
    /// The name an invalid result is reported with.
    pub name: &'static str,
    /// The rewrite.
    pub run: fn(&mut Function),
}

impl fmt::Debug for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A backend: compiles a lowered function to code with the kernel ABI.
pub trait Target: Send + Sync + fmt::Debug {
    /// The name errors and reports give it (`C`, `JIT`).
    fn name(&self) -> &'static str;

    /// What its code can do.
    fn capabilities(&self) -> Capabilities;

    /// The passes it runs, in order, over a lowered function before compiling it (see
    /// [`Targets::prepare`]); none by default.
    fn passes(&self) -> &'static [Pass] {
        &[]
    }

    /// Compile `function`, which [`check`] has accepted for this target.
    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error>;

    /// The source text this target prints for `function`, where it prints one; compiles
    /// nothing.
    fn listing(&self, function: &Function) -> Result<Option<Listing>, Error> {
        let _ = function;
        Ok(None)
    }

    /// The code for `function` if a cache already holds it, without compiling; `Ok(None)`
    /// where it does not (and for targets without a cache).
    fn cached(&self, function: &Function) -> Result<Option<Arc<dyn Artifact>>, Error> {
        let _ = function;
        Ok(None)
    }
}

/// Code a target produced: the kernel's entry point and what keeps it alive.
pub trait Artifact: Send + Sync {
    /// The name of the target that produced it.
    fn target(&self) -> &'static str;

    /// True when it was produced for this request rather than found in a cache.
    fn was_compiled(&self) -> bool;

    /// What the code can do (the capabilities of the target that produced it).
    fn capabilities(&self) -> Capabilities;

    /// Run the kernel on `call`'s arguments; the status is 0, an assumption's status, or
    /// -1 (out of memory). An error is a failure of the target's runtime (a device's
    /// driver), in its words.
    ///
    /// # Safety
    /// `call`'s arrays and params hold the function's [`crate::ir::Signature`], every
    /// pointer addressing live host storage of the width the code reads and of the size
    /// `call.bytes` gives; `call.out` holds one entry buffer per thread the code may use,
    /// each empty or grown with the C allocator.
    unsafe fn call(&self, call: Call<'_>) -> Result<i32, Error>;
}

/// The arguments of one call of a kernel: the kernel ABI's `arrays`, `params` and `out`
/// (`int sparsec_kernel(void **arrays, const int64_t *params, sparsec_buffer *out)`),
/// and what a target that moves arrays to a device needs beside them.
pub struct Call<'a> {
    /// The arrays, in the signature's order: host storage, which the output's arrays
    /// receive the results in.
    pub arrays: &'a mut [*mut c_void],
    /// The size of each of `arrays` in bytes.
    pub bytes: &'a [usize],
    /// What each of `arrays` holds on entry (see [`Contents`]).
    pub contents: &'a [Contents],
    /// The scalars, in the signature's order.
    pub params: &'a [i64],
    /// One entry buffer per thread, for emitting kernels.
    pub out: *mut RawBuffer,
}

/// A target's source text for one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The whole text.
    pub text: String,
    /// Where the kernel itself starts in `text`, after the runtime text printed before it.
    pub body_offset: usize,
}

impl Listing {
    /// The kernel itself, without the runtime text printed before it.
    pub fn kernel(&self) -> &str {
        &self.text[self.body_offset..]
    }
}

/// What an array of a [`Call`] holds on entry, which tells a target that moves arrays to a
/// device what it must copy there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    /// Bytes named across calls (an input tensor's arrays): they stay the same from call
    /// to call while the name does, so a target may keep a copy on its device under it and
    /// copy nothing next time.
    Named(ContentKey),
    /// Bytes without a name: the output's arrays as the runtime set them, and storage
    /// sparsec does not own. Copied on every call.
    Unnamed,
    /// Room the kernel only writes (where a two-phase kernel places its entries): the
    /// host's bytes are not initialised and need not be copied to the device, only back.
    Unwritten,
}

/// The contents of one array of an input tensor: the tensor's [`crate::tensor::Generation`]
/// number and which of its arrays (a level's index array, or the values where `kind` is
/// `None`). One key always names the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContentKey {
    pub tensor: u64,
    pub level: usize,
    pub kind: Option<ArrayKind>,
}

/// Code in this process's memory: an entry point with the kernel ABI and what keeps it
/// there (a loaded library, JIT-compiled memory): the artifact of every CPU target.
pub struct NativeCode {
    target: &'static str,
    capabilities: Capabilities,
    entry: EntryFn,
    compiled: bool,
    /// Keeps the memory `entry` points into.
    _owner: Box<dyn Send + Sync>,
}

impl NativeCode {
    /// The code at `entry`, which `target` produced (`compiled` now, or found in a cache).
    ///
    /// # Safety
    /// `entry` has the kernel ABI for the function it was compiled from and stays valid
    /// while `owner` lives.
    pub unsafe fn new(
        target: &'static str,
        capabilities: Capabilities,
        entry: EntryFn,
        compiled: bool,
        owner: impl Send + Sync + 'static,
    ) -> NativeCode {
        NativeCode {
            target,
            capabilities,
            entry,
            compiled,
            _owner: Box::new(owner),
        }
    }
}

impl Artifact for NativeCode {
    fn target(&self) -> &'static str {
        self.target
    }

    fn was_compiled(&self) -> bool {
        self.compiled
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    unsafe fn call(&self, call: Call<'_>) -> Result<i32, Error> {
        // SAFETY: the caller keeps the ABI's contract; `_owner` keeps `entry` valid.
        Ok(unsafe { (self.entry)(call.arrays.as_mut_ptr(), call.params.as_ptr(), call.out) })
    }
}

/// The targets a kernel compiles with: one, or a quick one whose code runs at once while
/// the main one compiles in the background and then replaces it.
#[derive(Clone, Debug)]
pub struct Targets {
    main: Arc<dyn Target>,
    quick: Option<Arc<dyn Target>>,
}

impl Targets {
    /// Compile with `target` alone.
    pub fn one(target: Arc<dyn Target>) -> Targets {
        Targets {
            main: target,
            quick: None,
        }
    }

    /// Run `quick`'s code until `main`'s is ready (at once where `main`'s cache holds it).
    pub fn tiered(quick: Arc<dyn Target>, main: Arc<dyn Target>) -> Targets {
        Targets {
            main,
            quick: Some(quick),
        }
    }

    /// The target whose code runs once compiled.
    pub fn main(&self) -> &Arc<dyn Target> {
        &self.main
    }

    /// The target whose code runs until the main one's is ready, if tiered.
    pub fn quick(&self) -> Option<&Arc<dyn Target>> {
        self.quick.as_ref()
    }

    /// Run the main target's passes over a lowered `function`: the code of both tiers is
    /// compiled from the result, so that they share one argument layout. In debug builds
    /// each pass's result is verified, and an invalid one names the pass. A function the
    /// main target cannot take is refused first: its passes assume what it can do (a
    /// CPU target's SIMD loops inside a GPU block would be invalid IR, not a refusal).
    pub fn prepare(&self, function: &mut Function) -> Result<(), BackendError> {
        check(function, self.main.as_ref())?;
        for pass in self.main.passes() {
            (pass.run)(function);
            if cfg!(debug_assertions) {
                crate::ir::verify(function).map_err(|e| BackendError {
                    backend: self.main.name(),
                    reason: format!("its pass `{}` produced invalid IR: {e}", pass.name),
                })?;
            }
        }
        Ok(())
    }
}

/// Refuse `function` where it needs something `target` cannot do: a parallel loop on a
/// unit it does not run, emitted entries, atomics, scratch arrays or helper calls it does
/// not have.
pub fn check(function: &Function, target: &dyn Target) -> Result<(), BackendError> {
    check_capabilities(function, target.name(), &target.capabilities())
}

/// [`check`] for the target named `target` with capabilities `can`.
pub fn check_capabilities(
    function: &Function,
    target: &'static str,
    can: &Capabilities,
) -> Result<(), BackendError> {
    let refuse = |reason: String| BackendError {
        backend: target,
        reason,
    };
    let mut needs: Option<String> = None;
    visit::walk_stmts(&function.body, &mut |s| {
        if needs.is_some() {
            return;
        }
        needs = match s {
            Stmt::For(Loop {
                kind: LoopKind::Parallel { unit, .. },
                ..
            }) if !can.units.contains(unit) => Some(unit_refusal(*unit, can.units)),
            Stmt::For(Loop {
                kind: LoopKind::Parallel { locals, .. },
                ..
            }) if !can.scratch && !locals.is_empty() => Some(SCRATCH.into()),
            Stmt::Emit { .. } if !can.emitting => {
                Some("the kernel emits output entries, which this target cannot append".into())
            }
            Stmt::Barrier | Stmt::Launch(_) if !can.units.contains(&ParallelUnit::GpuBlock) => {
                Some(
                    "the kernel synchronises or launches GPU blocks, which this target runs \
                     none of"
                        .into(),
                )
            }
            Stmt::Atomic(_) if !can.atomics => {
                Some("the kernel updates its output atomically, which this target cannot".into())
            }
            _ => None,
        };
    });
    if let Some(reason) = needs {
        return Err(refuse(reason));
    }
    if !can.scratch && !function.locals.is_empty() {
        return Err(refuse(SCRATCH.into()));
    }
    if !can.helpers {
        if let Some(helper) = function.helpers().first() {
            return Err(refuse(format!(
                "the kernel calls the level helper `{}`, which this target cannot call",
                helper.name
            )));
        }
    }
    Ok(())
}

const SCRATCH: &str = "the kernel needs scratch arrays, which this target cannot allocate";

fn unit_refusal(unit: ParallelUnit, runs: &[ParallelUnit]) -> String {
    let runs: Vec<&str> = runs.iter().map(|u| u.spelling()).collect();
    let gpu = !matches!(unit, ParallelUnit::CpuThread | ParallelUnit::CpuVector);
    let why = if gpu {
        "which needs a GPU target (--backend opencl)"
    } else {
        "which this target does not run"
    };
    format!(
        "a loop is parallelized on {}, {why}; this target runs {}",
        unit.spelling(),
        if runs.is_empty() {
            "no parallel loops (use a serial schedule)".to_string()
        } else {
            runs.join(" and ")
        }
    )
}
