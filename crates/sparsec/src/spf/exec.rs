//! Compiling a computation with a target (C by default) and running it on tensors: inputs are
//! converted to the declared formats, symbols bound from their dimensions, and the
//! arrays and scalars laid out in the generated function's signature, as
//! [`crate::kernel::Kernel`] does for index notation.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use super::codegen::{self, Extra, Lowered};
use super::parse::{Dim, Program, UfArray};
use super::{parse_program, SpfError};
use crate::codegen::abi::BackendError;
use crate::codegen::clif::CraneliftTarget;
use crate::codegen::runtime::RawBuffer;
use crate::format::Format;
use crate::format::IndexArray;
use crate::ir::threads_to_gpu::threads_to_gpu;
use crate::ir::{ArrayKind, ArrayRef, Function, ParallelUnit};
use crate::jit::Toolchain;
use crate::kernel::bind::{self, cast_values, Arguments};
use crate::kernel::default_threads;
use crate::kernel::native::{self, Compiled, EntryBuffers};
use crate::kernel::output::{produce, stored_sparse_entries, PlacedOutput, Produced};
use crate::kernel::placement::PlacementPace;
use crate::kernel::Backend;
use crate::target::{Artifact, Targets};
use crate::tensor::{Coo, Generation, Tensor, TensorView, ValueType, Values};
use crate::Error;

/// A compiled computation.
pub struct SpfKernel {
    program: Program,
    lowered: Lowered,
    /// The function compiled: its main code reads every index array as `int64_t`, and
    /// code for inputs with some `int32_t` index arrays is compiled the first time such
    /// inputs arrive, so that inputs are read in place rather than widened on every call.
    compiled: Compiled,
    threads: usize,
    /// Values of the `param` symbols, by name.
    params: Vec<(String, i64)>,
    /// Whether long sparse outputs are placed faster on one thread or on threads, learnt
    /// from the runs.
    placement: PlacementPace,
    /// The entry buffers of its calls, kept between them.
    buffers: EntryBuffers,
    /// The ranges of the coordinate arrays UFs read, by the tensor contents scanned.
    coordinate_ranges: Memo<(Generation, usize), (i64, i64)>,
    /// Under `wavefront;`, the level-set inspector compiled (`Lowered::level_sets`), and
    /// the level sets it found, by the inputs' contents and the call's scalars.
    inspector: Option<Compiled>,
    level_sets: Memo<(Vec<Generation>, Vec<i64>), Arc<Tensor>>,
}

impl SpfKernel {
    /// Parse, lower and compile the computation `text` (`name` labels its diagnostics)
    /// with the C backend.
    pub fn compile(name: &str, text: &str, toolchain: &Toolchain) -> Result<SpfKernel, Error> {
        SpfKernel::compile_on(name, text, Backend::C.targets(toolchain))
    }

    /// Parse, lower and compile the computation `text` with `targets`.
    pub fn compile_on(name: &str, text: &str, targets: Targets) -> Result<SpfKernel, Error> {
        let with_source = |e: SpfError| Error::Spf(e.in_source(name, text));
        let program = parse_program(text).map_err(with_source)?;
        let mut lowered = codegen::lower(&program).map_err(with_source)?;
        // A GPU target runs `parallel;` and `wavefront;` loops on blocks and threads.
        let units = targets.main().capabilities().units;
        if units.contains(&ParallelUnit::GpuBlock) && !units.contains(&ParallelUnit::CpuThread) {
            threads_to_gpu(&mut lowered.function).map_err(|reason| BackendError {
                backend: targets.main().name(),
                reason,
            })?;
        }
        targets.prepare(&mut lowered.function)?;
        // The inspector runs on the host: a GPU target's kernel gets its level sets from
        // the in-process JIT.
        let inspector = match &mut lowered.level_sets {
            Some(inspector) => {
                let on_host = match units.contains(&ParallelUnit::CpuThread) {
                    true => targets.clone(),
                    false => Targets::one(Arc::new(CraneliftTarget)),
                };
                on_host.prepare(inspector)?;
                Some(Compiled::new(inspector, on_host)?)
            }
            None => None,
        };
        Ok(SpfKernel {
            program,
            inspector,
            level_sets: Memo::keeping(2),
            compiled: Compiled::new(&lowered.function, targets)?,
            lowered,
            threads: default_threads(),
            params: Vec::new(),
            placement: PlacementPace::default(),
            buffers: EntryBuffers::default(),
            coordinate_ranges: Memo::keeping(16),
        })
    }

    /// The code that reads the `narrow` arrays as `int32_t` and the others as `int64_t`.
    fn code_for(&self, narrow: &BTreeSet<ArrayRef>) -> Result<Arc<dyn Artifact>, Error> {
        self.compiled.code_for(&self.lowered.function, narrow)
    }

    /// The source text of the generated code: the C translation unit (for targets that
    /// print none, the C backend's, for reading).
    pub fn source(&self) -> &str {
        &self.compiled.listing(&self.lowered.function).text
    }

    /// The name of the target whose code runs now.
    pub fn running_target(&self) -> &'static str {
        self.compiled.current().target()
    }

    /// The lowered computation (its IR function and argument bindings).
    pub fn lowered(&self) -> &Lowered {
        &self.lowered
    }

    /// The declared inputs' names, in declaration order.
    pub fn input_names(&self) -> Vec<&str> {
        self.program
            .inputs
            .iter()
            .map(|t| t.name.as_str())
            .collect()
    }

    /// The number of dimensions input `name` is declared with, if it is an input.
    pub fn input_order(&self, name: &str) -> Option<usize> {
        let decl = self.program.inputs.iter().find(|t| t.name == name)?;
        Some(decl.dims.len())
    }

    /// The format input `name` is declared with (and read in, in place), if it is an
    /// input: converting a tensor to it once spares every run the conversion.
    pub fn input_format(&self, name: &str) -> Option<&Format> {
        let n = self.program.inputs.iter().position(|t| t.name == name)?;
        Some(&self.lowered.formats[n])
    }

    /// The number of dimensions the output is declared with.
    pub fn output_order(&self) -> usize {
        self.program
            .output
            .as_ref()
            .expect("lowering checked it")
            .dims
            .len()
    }

    /// The output's name.
    pub fn output_name(&self) -> &str {
        &self
            .program
            .output
            .as_ref()
            .expect("lowering checked it")
            .name
    }

    /// Threads of parallel loops.
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.max(1);
    }

    /// Give the `param` symbol `name` a value for the next runs.
    pub fn set_param(&mut self, name: &str, value: i64) -> Result<(), Error> {
        if !self.program.params.iter().any(|(p, _)| p == name) {
            return Err(Error::Input(format!(
                "`{name}` is not a `param` of this computation"
            )));
        }
        if value < 0 {
            return Err(Error::Input(format!(
                "parameter `{name}` is {value}: sizes and counts are not negative"
            )));
        }
        self.params.retain(|(p, _)| p != name);
        self.params.push((name.to_string(), value));
        Ok(())
    }

    /// Run on `inputs` (by name); returns the output, dense.
    pub fn run(&self, inputs: &[(&str, &Tensor)]) -> Result<Tensor, Error> {
        let prog = &self.program;
        for (name, _) in inputs {
            if !prog.inputs.iter().any(|t| t.name == *name) {
                return Err(Error::Input(format!(
                    "`{name}` is not an input of this computation (inputs: {})",
                    self.input_names().join(", ")
                )));
            }
        }
        let mut symbols: Vec<Option<i64>> = vec![None; self.lowered.symbols.len()];
        for (name, value) in &self.params {
            symbols[self.symbol_index(name)] = Some(*value);
        }
        let mut operands = Vec::with_capacity(prog.inputs.len());
        for (decl, format) in prog.inputs.iter().zip(&self.lowered.formats) {
            let tensor = inputs
                .iter()
                .find(|(n, _)| *n == decl.name)
                .map(|(_, t)| *t)
                .ok_or_else(|| Error::Input(format!("input `{}` is missing", decl.name)))?;
            if tensor.order() != decl.dims.len() {
                return Err(Error::Input(format!(
                    "`{}` is declared with {} dimensions but has {}",
                    decl.name,
                    decl.dims.len(),
                    tensor.order()
                )));
            }
            for (k, (dim, &size)) in decl.dims.iter().zip(tensor.dims()).enumerate() {
                let size = size as i64;
                let (expected, what) = match dim {
                    Dim::Int(n) => (Some(*n), format!("{n}")),
                    Dim::Sym(s) => {
                        let slot = &mut symbols[self.symbol_index(s)];
                        slot.get_or_insert(size);
                        (*slot, s.clone())
                    }
                };
                if expected != Some(size) {
                    return Err(Error::Input(format!(
                        "dimension {} of `{}` is {size} but `{what}` is {}",
                        k + 1,
                        decl.name,
                        expected.map_or("unbound".into(), |e| e.to_string())
                    )));
                }
            }
            // A tensor in the declared layout is read in place, at its index width (the
            // code for those widths is compiled on first use); others are converted.
            let in_layout = tensor.format() == format && tensor.value_type() == ValueType::F64;
            let t = if in_layout {
                Cow::Borrowed(tensor)
            } else {
                let mut t = tensor.convert(format)?;
                cast_values(&mut t, ValueType::F64);
                Cow::Owned(t)
            };
            operands.push(t);
        }
        let symbols: Vec<i64> = symbols
            .into_iter()
            .zip(&self.lowered.symbols)
            .map(|(v, s)| {
                v.ok_or_else(|| match prog.params.iter().any(|(p, _)| p == s) {
                    true => Error::Input(format!("parameter `{s}` has no value (`--param {s}=N`)")),
                    false => Error::Input(format!("symbol `{s}` is not a dimension of any input")),
                })
            })
            .collect::<Result<_, _>>()?;
        let output_decl = prog.output.as_ref().expect("lowering checked it");
        let dims: Vec<usize> = output_decl
            .dims
            .iter()
            .map(|d| match d {
                Dim::Int(n) => *n as usize,
                Dim::Sym(s) => symbols[self.symbol_index(s)] as usize,
            })
            .collect();
        // Fails, rather than aborting, when the output cannot be allocated. A sparse
        // output is assembled after the call; it has no storage during it.
        let dense_dims = match self.lowered.assembled {
            Some(_) => vec![0; dims.len()],
            None => dims.clone(),
        };
        let mut output = match &output_decl.pattern {
            Some(source) => {
                let input = prog.inputs.iter().position(|t| t.name == *source);
                let like = &operands[input.expect("checked when parsing")];
                let values = Values::zeros(ValueType::F64, like.values().len());
                Ok(Tensor::from_parts(
                    like.dims().to_vec(),
                    like.format().clone(),
                    like.levels().to_vec(),
                    values,
                ))
            }
            None => Tensor::try_zeros(&dense_dims, ValueType::F64).map_err(|e| e.to_string()),
        }
        .map_err(|e| {
            Error::Input(format!(
                "cannot store the output `{}`: {e}",
                output_decl.name
            ))
        })?;
        let uf_input = |n: usize| -> &Tensor {
            let input = prog
                .inputs
                .iter()
                .position(|t| t.name == prog.ufs[n].tensor);
            &operands[input.expect("bound at parse time")]
        };
        let uf_array = |n: usize| -> &IndexArray {
            let uf = &prog.ufs[n];
            let kind = match uf.array {
                UfArray::Pos => ArrayKind::Pos,
                UfArray::Crd => ArrayKind::Idx,
            };
            uf_input(n).levels()[uf.level - 1]
                .array(kind)
                .expect("checked when lowering")
        };
        // The range of a UF's values: segment bounds increase (an invariant checked when a
        // tensor is built or read), so they lie between the first and the last; coordinate
        // arrays are scanned (a hashed level marks empty slots with negative values), once
        // per tensor contents. Each UF's range is looked up once per call, for its minimum
        // and its maximum.
        let ranges: Vec<OnceCell<(i64, i64)>> = prog.ufs.iter().map(|_| OnceCell::new()).collect();
        let uf_range = |n: usize| -> (i64, i64) {
            *ranges[n].get_or_init(|| {
                let array = uf_array(n);
                match (prog.ufs[n].array, array.len()) {
                    (_, 0) => (0, -1),
                    (UfArray::Pos, len) => (array.get(0), array.get(len - 1)),
                    (UfArray::Crd, _) => {
                        self.coordinate_ranges
                            .get_or_make((uf_input(n).generation(), n), || match array {
                                IndexArray::I32(a) => range_of(a),
                                IndexArray::I64(a) => range_of(a),
                            })
                    }
                }
            })
        };
        let extents: Vec<i64> = (0..self.lowered.function.extents)
            .map(|n| match n.checked_sub(symbols.len()) {
                None => symbols[n],
                Some(extra) => match self.lowered.extras[extra] {
                    Extra::ValuesLen { input } => operands[input].values().len() as i64,
                    Extra::UfLen(u) => uf_array(u).len() as i64,
                    Extra::UfMin(u) => uf_range(u).0,
                    Extra::UfMax(u) => uf_range(u).1,
                },
            })
            .collect();
        let mut views: Vec<TensorView<'_>> = operands.iter().map(|t| t.view()).collect();
        let level_sets = match &self.inspector {
            Some(inspector) => {
                let contents = operands.iter().map(|t| t.generation()).collect();
                let key = (contents, extents.clone());
                Some(self.level_sets.get_or_try(key, || {
                    self.inspect(inspector, &views, &extents).map(Arc::new)
                })?)
            }
            None => None,
        };
        views.extend(level_sets.as_deref().map(Tensor::view));
        let mut arguments = bind::arguments(
            self.compiled.signature(),
            &self.lowered.function,
            &mut output,
            &views,
            &Bound {
                extents,
                threads: self.threads,
            },
        );
        let code = self.code_for(&arguments.narrow)?;

        let cannot_store = |e: crate::tensor::TensorError| {
            Error::Input(format!(
                "cannot store the output `{}`: {e}",
                output_decl.name
            ))
        };
        let dense_format;
        let format = match &self.lowered.assembled {
            Some(format) => format,
            None => {
                dense_format = output.format().clone();
                &dense_format
            }
        };
        let target = PlacedOutput {
            name: &output_decl.name,
            dims: &dims,
            format,
            value_type: ValueType::F64,
        };
        let expected =
            stored_sparse_entries(operands.iter().map(|t| (t.format(), t.values().len())));
        let order = dims.len();
        let produced = produce(
            self.lowered.function.output,
            output,
            &target,
            self.compiled.signature(),
            &mut arguments,
            expected,
            &self.placement,
            &mut |a| {
                self.call(
                    &self.lowered.function,
                    &self.compiled,
                    code.as_ref(),
                    a,
                    order,
                )
            },
        )?;
        match produced {
            Produced::Dense(output) => Ok(output),
            Produced::Rows(rows) => Tensor::from_rows(rows, dims, format).map_err(cannot_store),
            Produced::Entries(coo) => {
                Tensor::from_coo_owned(Coo { dims, ..coo }, format, ValueType::F64)
                    .map_err(cannot_store)
            }
        }
    }

    /// The level sets of one call's inputs (`views`, with its scalars `extents`): the
    /// inspector's entries `(level, row)` as a CSR matrix of levels by rows.
    fn inspect(
        &self,
        inspector: &Compiled,
        views: &[TensorView<'_>],
        extents: &[i64],
    ) -> Result<Tensor, Error> {
        let function = self.lowered.level_sets.as_ref().expect("compiled from it");
        // The inspector emits its entries: it writes no output storage.
        let mut unwritten = Tensor::zeros(&[0], ValueType::F64);
        let mut arguments = bind::arguments(
            inspector.signature(),
            function,
            &mut unwritten,
            views,
            &Bound {
                extents: extents.to_vec(),
                threads: 1,
            },
        );
        let code = inspector.code_for(function, &arguments.narrow)?;
        let entries = self.call(function, inspector, code.as_ref(), &mut arguments, 2)?;
        // Every row has one entry; the executor runs the levels up to the last one found.
        let rows = entries.values.len();
        let levels = entries.coords.iter().step_by(2).max().map_or(0, |&l| l + 1);
        let entries = Coo {
            dims: vec![levels as usize, rows],
            ..entries
        };
        let csr = Format::parse("csr", 2).expect("a format");
        Tensor::from_coo_owned(entries, &csr, ValueType::F64)
            .map_err(|e| Error::Input(format!("cannot store the level sets: {e}")))
    }

    /// Call `code`, compiled from `function`, once, with one entry buffer per thread;
    /// returns the entries of `order` coordinates the kernel emitted (none for other
    /// outputs). A nonzero status is the failed entry check's message.
    fn call(
        &self,
        function: &Function,
        compiled: &Compiled,
        code: &dyn Artifact,
        arguments: &mut Arguments,
        order: usize,
    ) -> Result<Coo, Error> {
        let mut buffers = self.buffers.take(self.threads);
        // SAFETY: every pointer addresses storage of a tensor the caller holds (an input,
        // the output, or the rows being placed), alive for the call, and `code` reads each
        // array at the width it has; the entry checks keep every index the kernel computes
        // inside the arrays (see `codegen`); only the output is written through its pointers.
        let called = unsafe {
            native::call(
                code,
                function,
                compiled.signature(),
                arguments,
                &mut buffers,
                "for its scratch arrays",
            )
        };
        let (coords, values) = RawBuffer::entries(&buffers, order);
        self.buffers.keep(buffers);
        called.map(|()| Coo {
            dims: Vec::new(),
            coords,
            values,
        })
    }

    fn symbol_index(&self, name: &str) -> usize {
        self.lowered
            .symbols
            .iter()
            .position(|s| s == name)
            .expect("symbols come from the declarations")
    }
}

/// One call's scalars: the symbols' values, then what lowering derives from the inputs
/// (array lengths and ranges), as extents.
struct Bound {
    extents: Vec<i64>,
    threads: usize,
}

impl bind::Binder for Bound {
    fn extent(&self, n: usize) -> i64 {
        self.extents[n]
    }

    fn threads(&self) -> usize {
        self.threads
    }
}

/// Values computed once per tensor contents, by a key that names them (through
/// [`Generation`](crate::tensor::Generation), which a change replaces, so an entry is never
/// stale); the `kept` most recent are kept. A kernel called again on the same tensors (an
/// iterative solver's triangular solves) then neither scans their index arrays nor
/// inspects their structure again.
struct Memo<K, V> {
    entries: Mutex<Vec<(K, V)>>,
    kept: usize,
}

impl<K, V> Memo<K, V> {
    /// Keeping the `kept` most recent values: few where each is as large as an input
    /// (level sets hold an entry per row; inputs converted on every call never hit).
    fn keeping(kept: usize) -> Memo<K, V> {
        Memo {
            entries: Mutex::new(Vec::new()),
            kept,
        }
    }
}

impl<K: PartialEq, V: Clone> Memo<K, V> {
    /// The value kept for `key`, else the one `make` makes (kept unless it fails).
    fn get_or_try<E>(&self, key: K, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let mut kept = self
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, value)) = kept.iter().find(|(k, _)| *k == key) {
            return Ok(value.clone());
        }
        let value = make()?;
        if kept.len() >= self.kept {
            kept.remove(0);
        }
        kept.push((key, value.clone()));
        Ok(value)
    }

    /// The value kept for `key`, else the one `make` makes.
    fn get_or_make(&self, key: K, make: impl FnOnce() -> V) -> V {
        match self.get_or_try(key, || Ok::<V, Infallible>(make())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }
}

/// The smallest and largest of `values`, `(i64::MAX, i64::MIN)` when there are none.
fn range_of<T: Copy + Ord + Into<i64>>(values: &[T]) -> (i64, i64) {
    // Two passes, each of which the compiler vectorises, read faster than one that tracks
    // both.
    let low = values.iter().min().map_or(i64::MAX, |&x| x.into());
    let high = values.iter().max().map_or(i64::MIN, |&x| x.into());
    (low, high)
}
