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

use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::codegen::abi;
use crate::codegen::c::{self, CKernel};
use crate::codegen::clif;
#[cfg(doc)]
use crate::codegen::clif::JitKernel;
use crate::codegen::runtime::{sys, RawBuffer as Buffer};
use crate::ir::{ArrayRef, OutputMode, ParamRef, ScalarArg};
use crate::jit::{self, Toolchain};
use crate::lower::{self, LowerError, Lowered};
use crate::notation::cin::Statement;
use crate::notation::{self, TensorDecl};
use crate::schedule::{Concrete, OmpSchedule, ParallelUnit, RaceStrategy, Schedule, Transform};
use crate::tensor::{Coo, Tensor, ValueType, Values};
use crate::Error;

type KernelFn = unsafe extern "C" fn(*mut *mut c_void, *const i64, *mut Buffer) -> i32;
type FreeFn = unsafe extern "C" fn(*mut Buffer);

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

/// Which backend turns a lowered kernel into native code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// C printed and compiled by the system C compiler (cached on disk), with OpenMP.
    #[default]
    C,
    /// Cranelift, in process: no compiler, no cache, far lower latency; runs serially.
    Jit,
}

/// A compiled statement, ready to run on tensors of the declared shapes and formats.
pub struct Kernel {
    statement: Statement,
    threads: usize,
    lowered: Lowered,
    /// The C translation unit; with [`Backend::Jit`], the C equivalent of the code that
    /// runs, for reading (the argument layout is the same).
    generated: CKernel,
    value_type: ValueType,
    backend: Backend,
    /// The C backend's toolchain, kept to recompile with [`Kernel::with_backend`].
    toolchain: Toolchain,
    /// Owns the code `entry` and `free` point into: a loaded library or a [`JitKernel`].
    _code: Box<dyn Send + Sync>,
    compiled: bool,
    entry: KernelFn,
    free: FreeFn,
    /// Entry buffers of the last run, kept so that later runs do not grow them again.
    spare_buffers: Mutex<Vec<Buffer>>,
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let buffers = self
            .spare_buffers
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        for b in buffers.iter_mut() {
            // SAFETY: the buffer's blocks came from this kernel's library and are freed once.
            unsafe { (self.free)(b) };
        }
    }
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

    /// Lower and compile a scheduled concrete statement as it is.
    pub fn from_concrete(
        concrete: &Concrete,
        value_type: ValueType,
        toolchain: &Toolchain,
    ) -> Result<Kernel, Error> {
        let lowered = lower::lower(concrete)?;
        Kernel::from_lowered(
            concrete.statement().clone(),
            lowered,
            value_type,
            toolchain,
            Backend::C,
        )
    }

    /// Compile a statement lowered by [`lower::lower`] or [`lower_with_default_parallelism`]
    /// with `backend` (`toolchain` is used by [`Backend::C`] only).
    pub fn from_lowered(
        statement: Statement,
        mut lowered: Lowered,
        value_type: ValueType,
        toolchain: &Toolchain,
        backend: Backend,
    ) -> Result<Kernel, Error> {
        lowered.function.set_value_type(value_type);
        // The JIT compiles first, so that it reports its own refusals.
        let jit_code = match backend {
            Backend::Jit => Some(clif::compile(&lowered.function)?),
            Backend::C => None,
        };
        let generated = c::emit(&lowered.function)?;
        let (code, compiled, entry, free) = match jit_code {
            None => {
                let jit::Loaded { library, compiled } = jit::load(&generated.source, toolchain)?;
                // SAFETY: the signatures match the C prelude and entry point printed by
                // `codegen::c`.
                let entry = unsafe { library.symbol::<KernelFn>(c::ENTRY)? };
                let free = unsafe { library.symbol::<FreeFn>(c::FREE_BUFFER)? };
                (
                    Box::new(library) as Box<dyn Send + Sync>,
                    compiled,
                    entry,
                    free,
                )
            }
            Some(code) => {
                // SAFETY: `codegen::clif` generates a function of this signature; `code`
                // keeps it alive as long as the kernel.
                let entry = unsafe { std::mem::transmute::<*const u8, KernelFn>(code.entry()) };
                // The JIT's entries grow with the C runtime compiled into this library.
                let free: FreeFn = sys::sparsec_buffer_free;
                (Box::new(code) as Box<dyn Send + Sync>, true, entry, free)
            }
        };
        Ok(Kernel {
            statement,
            threads: default_threads(),
            lowered,
            generated,
            value_type,
            backend,
            toolchain: toolchain.clone(),
            _code: code,
            compiled,
            entry,
            free,
            spare_buffers: Mutex::new(Vec::new()),
        })
    }

    /// The same kernel compiled with `backend` (its threads kept).
    pub fn with_backend(self, backend: Backend) -> Result<Kernel, Error> {
        let threads = self.threads;
        let mut kernel = Kernel::from_lowered(
            self.statement.clone(),
            self.lowered.clone(),
            self.value_type,
            &self.toolchain,
            backend,
        )?;
        kernel.threads = threads;
        Ok(kernel)
    }

    /// The backend that compiled this kernel.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The checked statement.
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// The generated C translation unit (with [`Backend::Jit`]: the C equivalent of the
    /// code that runs, for reading).
    pub fn source(&self) -> &str {
        &self.generated.source
    }

    /// Only the kernel function, without the runtime prelude.
    pub fn kernel_source(&self) -> &str {
        &self.generated.source[self.generated.body_offset..]
    }

    /// The loops, outermost first, by name.
    pub fn loop_order(&self) -> Vec<&str> {
        self.lowered.loops.iter().map(String::as_str).collect()
    }

    /// Number of threads parallel loops use (default: `OMP_NUM_THREADS`, else all cores).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Use `n` threads (at least 1) in parallel loops.
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.max(1);
    }

    /// True when this kernel was compiled now rather than found in the cache (always, for
    /// [`Backend::Jit`]).
    pub fn was_compiled(&self) -> bool {
        self.compiled
    }

    /// True when the output is sparse: the kernel emits its entries and they are
    /// assembled into the output format afterwards.
    pub fn assembles_output(&self) -> bool {
        !matches!(self.lowered.function.output, OutputMode::Dense { .. })
    }

    /// Run on `inputs` (the statement's tensors after the output, in order).
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Tensor, Error> {
        self.run_timed(inputs, None).map(|(t, _)| t)
    }

    /// Run, adding into `initial` for `+=` statements, and report phase times.
    pub fn run_timed(
        &self,
        inputs: &[&Tensor],
        initial: Option<&Tensor>,
    ) -> Result<(Tensor, Timings), Error> {
        let (produced, mut timings) = self.execute(inputs, initial)?;
        let assembling = Instant::now();
        let result = match produced {
            Produced::Dense(t) => t,
            Produced::Entries(coo) => {
                Tensor::from_coo_owned(coo, &self.statement.tensors[0].format, self.value_type)?
            }
        };
        timings.assemble += assembling.elapsed();
        Ok((result, timings))
    }

    /// Run once and keep what the output's structure needs, so that [`Kernel::compute`] can
    /// later recompute its values for new input values of the same structure without
    /// assembling it again.
    ///
    /// ```no_run
    /// # use sparsec::{kernel::Kernel, tensor::Tensor};
    /// # fn demo(kernel: &Kernel, a: &Tensor, b: &mut Tensor) -> Result<(), sparsec::Error> {
    /// let mut c = kernel.assemble(&[a, b], None)?;
    /// for step in 0..10 {
    ///     b.values_mut().set(0, step as f64); // new values, same nonzeros
    ///     kernel.compute(&[a, b], None, &mut c)?;
    ///     println!("{:?}", c.tensor().to_coo());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn assemble(
        &self,
        inputs: &[&Tensor],
        initial: Option<&Tensor>,
    ) -> Result<Assembled, Error> {
        let (produced, _) = self.execute(inputs, initial)?;
        Ok(match produced {
            Produced::Dense(tensor) => Assembled {
                tensor,
                structure: None,
            },
            Produced::Entries(coo) => {
                let coords = coo.coords.clone();
                let format = &self.statement.tensors[0].format;
                let (tensor, slots) = Tensor::from_coo_tracked(coo, format, self.value_type)?;
                Assembled {
                    tensor,
                    structure: Some(OutputStructure { coords, slots }),
                }
            }
        })
    }

    /// Recompute the values of an output from [`Kernel::assemble`] for inputs whose values
    /// changed but whose structure did not. The entries the kernel produces are checked
    /// against those the output was assembled from; a different structure is an error
    /// (assemble again) and leaves `output` as it was.
    pub fn compute(
        &self,
        inputs: &[&Tensor],
        initial: Option<&Tensor>,
        output: &mut Assembled,
    ) -> Result<Timings, Error> {
        let (produced, mut timings) = self.execute(inputs, initial)?;
        let scattering = Instant::now();
        match (produced, &output.structure) {
            (Produced::Dense(tensor), None) => output.tensor = tensor,
            (Produced::Entries(coo), Some(structure)) => {
                if coo.coords != structure.coords {
                    return Err(Error::Input(format!(
                        "the output `{}` was assembled for inputs of another nonzero \
                         structure ({} entries then, {} now); assemble it again",
                        self.statement.tensors[0].name,
                        structure.slots.len(),
                        coo.len()
                    )));
                }
                output
                    .tensor
                    .values_mut()
                    .scatter_sums(&structure.slots, &coo.values);
            }
            _ => {
                return Err(Error::Input(
                    "this output was assembled by another kernel".into(),
                ))
            }
        }
        timings.assemble += scattering.elapsed();
        Ok(timings)
    }

    /// Check and convert the inputs, call the generated kernel, and collect what it
    /// produced (with `initial`'s entries for `+=` statements).
    fn execute(
        &self,
        inputs: &[&Tensor],
        initial: Option<&Tensor>,
    ) -> Result<(Produced, Timings), Error> {
        let started = Instant::now();
        let stmt = &self.statement;
        if inputs.len() + 1 != stmt.tensors.len() {
            return Err(Error::Input(format!(
                "the statement reads {} tensors but {} were given",
                stmt.tensors.len() - 1,
                inputs.len()
            )));
        }
        for (decl, t) in stmt.tensors[1..].iter().zip(inputs) {
            if decl.dims != t.dims() {
                return Err(Error::Input(format!(
                    "tensor `{}` was declared with dimensions {:?} but has {:?}",
                    decl.name,
                    decl.dims,
                    t.dims()
                )));
            }
        }
        let out_decl = &stmt.tensors[0];
        if let Some(init) = initial {
            if init.dims() != out_decl.dims.as_slice() {
                return Err(Error::Input(format!(
                    "initial value of `{}` has dimensions {:?}, expected {:?}",
                    out_decl.name,
                    init.dims(),
                    out_decl.dims
                )));
            }
        }
        // Inputs in the layout and value type the kernel reads.
        let mut operands: Vec<Cow<'_, Tensor>> = Vec::with_capacity(self.lowered.operands.len());
        let dense_output = !self.assembles_output();
        let mut output = match (dense_output, stmt.accumulate, initial) {
            (true, true, Some(init)) => init.convert(&out_decl.format)?,
            (true, _, _) => Tensor::from_coo(
                &Coo::empty(out_decl.dims.clone()),
                &out_decl.format,
                self.value_type,
            )?,
            // Sparse results are assembled from the emitted entries after the call.
            (false, _, _) => Tensor::zeros(&[], self.value_type),
        };
        cast_values(&mut output, self.value_type);
        operands.push(Cow::Owned(output));
        for op in &self.lowered.operands[1..] {
            let source = inputs[op.tensor - 1];
            let mut t = if source.format() == &op.format {
                Cow::Borrowed(source)
            } else {
                Cow::Owned(source.convert(&op.format)?)
            };
            if t.value_type() != self.value_type {
                cast_values(t.to_mut(), self.value_type);
            }
            operands.push(t);
        }
        let signature = &self.generated.signature;
        let mut arrays: Vec<*mut c_void> = signature
            .arrays
            .iter()
            .map(|a| match *a {
                ArrayRef::Values(operand) => match operands[operand.0].values() {
                    Values::F64(v) => v.as_ptr() as *mut c_void,
                    Values::F32(v) => v.as_ptr() as *mut c_void,
                },
                ArrayRef::Level {
                    operand,
                    level,
                    kind,
                } => operands[operand.0].levels()[level - 1]
                    .array(kind)
                    .expect("lowering reads only arrays its level stores")
                    .as_ptr() as *mut c_void,
                ArrayRef::Scratch(_) => unreachable!("scratch arrays are not arguments"),
            })
            .collect();
        let params: Vec<i64> = signature
            .scalars
            .iter()
            .map(|s| match *s {
                ScalarArg::Param(ParamRef::Level {
                    operand,
                    level,
                    kind,
                }) => operands[operand.0].levels()[level - 1].param(kind),
                ScalarArg::Param(ParamRef::Extent(n)) => stmt.vars[n].size as i64,
                ScalarArg::Threads => self.threads as i64,
            })
            .collect();
        // One entry buffer per thread; serial kernels use the first. A concurrent run of
        // the same kernel finds none spare and starts empty ones.
        let mut buffers = std::mem::take(&mut *self.spare_buffers.lock().expect("buffers"));
        let wanted = self.threads.max(1);
        for b in buffers.iter_mut().skip(wanted) {
            // SAFETY: allocated by this kernel's library; the kernel uses fewer threads now.
            unsafe { (self.free)(b) };
        }
        buffers.resize_with(wanted, || Buffer::EMPTY);
        let prepared = Instant::now();
        // SAFETY: every pointer addresses storage of the operand named by the binding and
        // stays alive (owned by `operands`) for the call; the output's values are written
        // through the only mutable pointer, whose tensor is not aliased elsewhere.
        let status =
            unsafe { (self.entry)(arrays.as_mut_ptr(), params.as_ptr(), buffers.as_mut_ptr()) };
        let computed = Instant::now();
        if status != 0 {
            self.keep_buffers(buffers);
            let failed = (0..self.lowered.function.assumptions.len())
                .find(|&n| abi::assumption_status(n) == status)
                .map(|n| self.lowered.function.assumptions[n].1.clone());
            return Err(Error::Input(failed.unwrap_or_else(|| {
                "the kernel ran out of memory while producing its output".into()
            })));
        }
        let produced = if dense_output {
            Produced::Dense(operands.swap_remove(0).into_owned())
        } else {
            let order = out_decl.dims.len();
            let total: usize = buffers.iter().map(|b| b.len as usize).sum();
            let mut coords = Vec::with_capacity(total * order);
            let mut values = Vec::with_capacity(total);
            for b in &mut buffers {
                let len = b.len as usize;
                // SAFETY: the kernel wrote `len` entries of `order` coordinates and one
                // value to each buffer it used.
                unsafe {
                    if len * order > 0 {
                        coords.extend_from_slice(std::slice::from_raw_parts(b.coords, len * order));
                    }
                    if len > 0 {
                        values.extend_from_slice(std::slice::from_raw_parts(b.vals, len));
                    }
                }
            }
            let mut coo = Coo {
                dims: out_decl.dims.clone(),
                coords,
                values,
            };
            if let (true, Some(init)) = (stmt.accumulate, initial) {
                let init = init.to_coo();
                coo.coords.extend_from_slice(&init.coords);
                coo.values.extend_from_slice(&init.values);
            }
            Produced::Entries(coo)
        };
        self.keep_buffers(buffers);
        Ok((
            produced,
            Timings {
                prepare: prepared - started,
                compute: computed - prepared,
                // Collecting the emitted entries is the first step of assembling them.
                assemble: computed.elapsed(),
            },
        ))
    }
}

impl Kernel {
    /// Empty the buffers and keep them for the next run (freeing any that another run
    /// kept meanwhile).
    fn keep_buffers(&self, mut buffers: Vec<Buffer>) {
        for b in &mut buffers {
            b.len = 0;
        }
        let mut spare = self.spare_buffers.lock().expect("buffers");
        for b in spare.iter_mut() {
            // SAFETY: allocated by this kernel's library, no longer referenced.
            unsafe { (self.free)(b) };
        }
        *spare = buffers;
    }
}

/// What one call of the generated kernel produced.
enum Produced {
    /// A dense output, complete.
    Dense(Tensor),
    /// A sparse output's entries in the order the kernel emitted them, to be assembled.
    Entries(Coo),
}

/// A kernel's output kept with what is needed to recompute its values in place
/// (see [`Kernel::assemble`]).
pub struct Assembled {
    tensor: Tensor,
    /// For sparse outputs: the entries the kernel emitted and the value slot of each.
    structure: Option<OutputStructure>,
}

struct OutputStructure {
    coords: Vec<i64>,
    slots: Vec<usize>,
}

impl Assembled {
    /// The output tensor, in the statement's output format.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// Take the output tensor.
    pub fn into_tensor(self) -> Tensor {
        self.tensor
    }
}

/// `OMP_NUM_THREADS` when set, else the number of cores.
fn default_threads() -> usize {
    std::env::var("OMP_NUM_THREADS")
        .ok()
        .and_then(|v| v.split(',').next()?.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// Rows per chunk of the default parallel schedule.
const DEFAULT_CHUNK: usize = 32;

/// Lower with the outermost loop parallel on CPU threads when that is valid without races
/// (its iterations write disjoint parts of a dense output), else serially.
pub fn lower_with_default_parallelism(concrete: &Concrete) -> Result<Lowered, LowerError> {
    let outermost = concrete.loops().first().map(|s| s.to_string());
    let parallel = outermost.and_then(|var| {
        concrete
            .apply(&Transform::Parallelize {
                var,
                unit: ParallelUnit::CpuThread,
                races: RaceStrategy::NoRaces,
                schedule: OmpSchedule::Dynamic,
                chunk: DEFAULT_CHUNK,
            })
            .ok()
    });
    match parallel.map(|c| lower::lower(&c)) {
        Some(Ok(lowered)) => Ok(lowered),
        _ => lower::lower(concrete),
    }
}

fn cast_values(t: &mut Tensor, ty: ValueType) {
    if t.value_type() == ty {
        return;
    }
    let n = t.values().len();
    let mut values = Values::zeros(ty, n);
    for p in 0..n {
        values.set(p, t.values().get(p));
    }
    *t.values_mut() = values;
}
