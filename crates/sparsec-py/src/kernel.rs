//! `sparsec._native.Kernel`: a statement compiled once per combination of shapes, formats,
//! schedule and value type, memoized for the whole process ([`crate::memo`]).
//!
//! A new process finds the C compiler's output in the disk cache (`SPARSEC_CACHE_DIR`), so
//! the C compiler runs once per kernel, ever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use sparsec::format::Format;
use sparsec::ir::gather::SumVersion;
use sparsec::kernel::{Assembled, Backend, Kernel, KernelInput, SumVersions};
use sparsec::notation;
use sparsec::notation::ast::{Access, Expr};
use sparsec::schedule::Schedule;
use sparsec::tensor::{Tensor, ValueType};

use crate::arrays;
use crate::borrowed::{Held, InputArg, Ready};
use crate::errors;
use crate::learned::ModelSearch;
use crate::memo::{compile_memoized, KernelKey};
use crate::options::{backend_name, parse_backend, parse_dtype, parse_sums};
use crate::tensor::{compressed_parts, dtype_name, is_scipy_compressed, parse_format, PyTensor};

/// Tensors named by the assignment, output first, then in order of first appearance,
/// each with its number of indices.
fn accessed_tensors(lhs: &Access, rhs: &Expr) -> Vec<(String, usize)> {
    let mut out = vec![(lhs.tensor.clone(), lhs.indices.len())];
    for a in rhs.accesses() {
        if !out.iter().any(|(n, _)| n == &a.tensor) {
            out.push((a.tensor.clone(), a.indices.len()));
        }
    }
    out
}

/// What the kernel needs to know of an input to be compiled for it.
struct InputInfo {
    dims: Vec<usize>,
    /// The tensor's own format, read when no format is given for it.
    format: Format,
    value_type: ValueType,
    /// The value of its unstored components, which the kernel is compiled for.
    fill: f64,
}

/// The inputs of a call, by name, and the kernel found for them.
type LastInputs = (HashMap<String, InputInfo>, Arc<Kernel>);

/// A statement, compiled for the shapes and value type of the tensors it is run on.
#[pyclass(name = "Kernel", module = "sparsec._native", frozen)]
pub struct PyKernel {
    expr: String,
    /// Output first, then inputs: name and number of indices.
    tensors: Vec<(String, usize)>,
    accumulate: bool,
    /// Format texts given by name.
    formats: HashMap<String, String>,
    schedule: Option<(String, Schedule)>,
    threads: Option<usize>,
    sums: SumVersions,
    backend: Backend,
    dtype: Option<ValueType>,
    /// The kernel of the last call, with the key it was compiled for.
    last: Mutex<Option<(KernelKey, Arc<Kernel>)>>,
    /// The inputs the last call copied rather than read in place.
    copied: Mutex<Vec<String>>,
    /// What the last call's inputs were, with the kernel found for them.
    last_inputs: Mutex<Option<LastInputs>>,
}

impl PyKernel {
    fn output_name(&self) -> &str {
        &self.tensors[0].0
    }

    /// The key of the kernel for `inputs` (by name), with the format of each tensor.
    fn key(&self, inputs: &HashMap<String, InputInfo>) -> PyResult<(KernelKey, Vec<Format>)> {
        let value_type = self.dtype.unwrap_or_else(|| {
            let all_f32 =
                !inputs.is_empty() && inputs.values().all(|t| t.value_type == ValueType::F32);
            if all_f32 {
                ValueType::F32
            } else {
                ValueType::F64
            }
        });
        let mut tensors = Vec::with_capacity(self.tensors.len());
        let mut formats = Vec::with_capacity(self.tensors.len());
        for (k, (name, order)) in self.tensors.iter().enumerate() {
            if k == 0 {
                let text = self.formats.get(name).map_or("dense", String::as_str);
                let format = parse_format(text, *order)?;
                tensors.push((name.clone(), format.spelling(), None, 0));
                formats.push(format);
                continue;
            }
            let tensor = inputs
                .get(name)
                .ok_or_else(|| errors::input(format!("no tensor given for `{name}`")))?;
            if tensor.dims.len() != *order {
                return Err(errors::input(format!(
                    "`{name}` is accessed with {order} indices but has {} modes (shape {:?})",
                    tensor.dims.len(),
                    tensor.dims
                )));
            }
            let format = match self.formats.get(name) {
                Some(text) => parse_format(text, *order)?,
                None => tensor.format.clone(),
            };
            tensors.push((
                name.clone(),
                format.spelling(),
                Some(tensor.dims.clone()),
                tensor.fill.to_bits(),
            ));
            formats.push(format);
        }
        if let Some(extra) = inputs
            .keys()
            .find(|n| !self.tensors[1..].iter().any(|(t, _)| &t == n))
        {
            return Err(errors::input(format!(
                "`{extra}` is not an input of `{}`",
                self.expr
            )));
        }
        let key = KernelKey {
            expr: self.expr.clone(),
            tensors,
            schedule: self.schedule.as_ref().map(|(text, _)| text.clone()),
            threads: self.threads,
            sums: self.sums,
            backend: self.backend,
            value_type,
        };
        Ok((key, formats))
    }

    /// The compiled kernel for `key`: the last one, one from the memo, or a new one.
    /// No lock is held while the GIL is released: another thread holding the GIL may be
    /// waiting for it.
    fn kernel_for(
        &self,
        py: Python<'_>,
        key: KernelKey,
        formats: &[Format],
    ) -> PyResult<Arc<Kernel>> {
        {
            let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((k, kernel)) = last.as_ref() {
                if *k == key {
                    return Ok(kernel.clone());
                }
            }
        }
        let kernel = py
            .detach(|| compile_memoized(&key, formats, self.schedule.as_ref().map(|s| &s.1)))
            .map_err(errors::to_py)?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, kernel.clone()));
        Ok(kernel)
    }

    /// The kernel of the last call when `inputs` have the names, dimensions, formats,
    /// value types and fill values of the last call's: what most calls find, without
    /// building a key.
    fn kernel_of_last_inputs(&self, inputs: &HashMap<String, Ready<'_>>) -> Option<Arc<Kernel>> {
        let last = self.last_inputs.lock().unwrap_or_else(|e| e.into_inner());
        let (infos, kernel) = last.as_ref()?;
        let same = infos.len() == inputs.len()
            && infos.iter().all(|(name, info)| {
                inputs.get(name).is_some_and(|r| {
                    r.describes(&info.dims, &info.format, info.value_type, info.fill)
                })
            });
        same.then(|| kernel.clone())
    }

    /// Resolve `inputs` by name and find the kernel for them; the inputs come back in
    /// statement order.
    fn prepare<'a>(
        &self,
        py: Python<'_>,
        inputs: &'a HashMap<String, Ready<'a>>,
    ) -> PyResult<(Arc<Kernel>, Vec<&'a Ready<'a>>)> {
        let kernel = match self.kernel_of_last_inputs(inputs) {
            Some(kernel) => kernel,
            None => {
                let infos: HashMap<String, InputInfo> = inputs
                    .iter()
                    .map(|(n, t)| {
                        let view = t.input_view();
                        let info = InputInfo {
                            dims: view.dims().to_vec(),
                            format: view.format().clone(),
                            value_type: view.value_type(),
                            fill: view.fill(),
                        };
                        (n.clone(), info)
                    })
                    .collect();
                let (key, formats) = self.key(&infos)?;
                let kernel = self.kernel_for(py, key, &formats)?;
                *self.last_inputs.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((infos, kernel.clone()));
                kernel
            }
        };
        let ordered = kernel.statement().tensors[1..]
            .iter()
            .map(|decl| {
                inputs
                    .get(&decl.name)
                    .ok_or_else(|| errors::input(format!("no tensor given for `{}`", decl.name)))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let in_place = kernel.inputs_read_in_place(&ordered);
        *self.copied.lock().unwrap_or_else(|e| e.into_inner()) = kernel.statement().tensors[1..]
            .iter()
            .zip(ordered.iter().zip(in_place))
            .filter(|(_, (ready, in_place))| matches!(ready, Ready::Copied(_)) || !in_place)
            .map(|(decl, _)| decl.name.clone())
            .collect();
        Ok((kernel, ordered))
    }

    /// The initial value of a `+=` output, checked.
    fn initial<'a>(
        &self,
        initial: Option<&'a PyRef<'a, PyTensor>>,
    ) -> PyResult<Option<&'a Tensor>> {
        match initial {
            Some(_) if !self.accumulate => Err(errors::input(format!(
                "`{}` was given an initial value, which only `+=` statements use",
                self.output_name()
            ))),
            Some(t) => Ok(Some(&t.tensor)),
            None => Ok(None),
        }
    }

    fn current(&self) -> PyResult<Arc<Kernel>> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.as_ref().map(|(_, k)| k.clone()).ok_or_else(|| {
            errors::input(
                "the kernel has not been compiled yet: call it, or compile it with `shapes`",
            )
        })
    }
}

/// NumPy's read-only borrows of every input's arrays, for one call.
fn hold<'a, 'py>(
    inputs: &'a HashMap<String, InputArg<'py>>,
) -> PyResult<HashMap<String, Held<'a, 'py>>> {
    inputs
        .iter()
        .map(|(name, arg)| Ok((name.clone(), arg.hold()?)))
        .collect()
}

/// Every input as the kernel reads it: in place where it can, else a packed copy.
fn ready<'a>(
    py: Python<'_>,
    held: &'a HashMap<String, Held<'_, '_>>,
) -> PyResult<HashMap<String, Ready<'a>>> {
    held.iter()
        .map(|(name, h)| Ok((name.clone(), h.ready(py)?)))
        .collect()
}

/// A kernel's output for Python, moved without copying: a NumPy array for a dense
/// (row-major) output, `(kind, shape, indptr, indices, data)` for a CSR or CSC one whose
/// missing entries are 0 (SciPy's), a tensor for any other format or fill value.
fn output_to_py(py: Python<'_>, tensor: Tensor) -> PyResult<Bound<'_, PyAny>> {
    let row_major = |modes: Vec<usize>| modes.iter().enumerate().all(|(k, &m)| k == m);
    if tensor.format().is_all_dense() && tensor.format().mode_order().is_some_and(row_major) {
        let (dims, _, _, values) = tensor.into_parts();
        return arrays::shaped_array(py, &dims, values);
    }
    let kind = [("csr", false), ("csc", true)]
        .into_iter()
        .find(|&(_, column_major)| is_scipy_compressed(tensor.format(), column_major))
        .map(|(name, _)| name);
    match kind {
        Some(kind) if tensor.fill() == 0.0 => {
            let shape = PyTuple::new(py, tensor.dims())?;
            let (indptr, indices, data) = compressed_parts(tensor, py)?;
            Ok((kind, shape, indptr, indices, data)
                .into_pyobject(py)?
                .into_any())
        }
        _ => Ok(Bound::new(py, PyTensor { tensor })?.into_any()),
    }
}

#[pymethods]
impl PyKernel {
    /// Parse `expr` and remember how to compile it; compiling happens for the shapes of
    /// the tensors it is run on (or those given to `compile_for_shapes`).
    #[new]
    #[pyo3(signature = (expr, formats=None, schedule=None, threads=None, backend="tiered", dtype=None, sums="measured"))]
    fn new(
        expr: &str,
        formats: Option<HashMap<String, String>>,
        schedule: Option<String>,
        threads: Option<usize>,
        backend: &str,
        dtype: Option<&str>,
        sums: &str,
    ) -> PyResult<PyKernel> {
        let assignment = notation::parse(expr).map_err(|e| errors::to_py(e.into()))?;
        let tensors = accessed_tensors(&assignment.lhs, &assignment.rhs);
        let formats = formats.unwrap_or_default();
        if let Some(name) = formats
            .keys()
            .find(|n| !tensors.iter().any(|(t, _)| &t == n))
        {
            return Err(errors::input(format!(
                "a format is given for `{name}`, which `{expr}` does not use"
            )));
        }
        for (name, order) in &tensors {
            if let Some(text) = formats.get(name) {
                parse_format(text, *order)?;
            }
        }
        let schedule = schedule
            .map(|text| {
                Schedule::parse(&text)
                    .map(|s| (text, s))
                    .map_err(|e| errors::to_py(e.into()))
            })
            .transpose()?;
        if threads == Some(0) {
            return Err(errors::input("threads must be at least 1"));
        }
        Ok(PyKernel {
            expr: expr.to_string(),
            tensors,
            accumulate: assignment.accumulate,
            formats,
            schedule,
            threads,
            sums: parse_sums(sums)?,
            backend: parse_backend(backend)?,
            dtype: dtype.map(parse_dtype).transpose()?,
            last: Mutex::new(None),
            copied: Mutex::new(Vec::new()),
            last_inputs: Mutex::new(None),
        })
    }

    /// The expression.
    #[getter]
    fn expr(&self) -> &str {
        &self.expr
    }

    /// Names of the input tensors, in order of appearance.
    #[getter]
    fn inputs(&self) -> Vec<String> {
        self.tensors[1..].iter().map(|(n, _)| n.clone()).collect()
    }

    /// The inputs the last call copied (packed, converted to the kernel's layout or value
    /// type) rather than read in place, in statement order.
    #[getter]
    fn copied_inputs(&self) -> Vec<String> {
        self.copied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Name of the output tensor.
    #[getter]
    fn output(&self) -> String {
        self.output_name().to_string()
    }

    /// The output's format, spelled as sparsec spells it (`d` per level when dense).
    #[getter]
    fn output_format(&self) -> PyResult<String> {
        let (name, order) = &self.tensors[0];
        let text = self.formats.get(name).map_or("dense", String::as_str);
        Ok(parse_format(text, *order)?.spelling())
    }

    /// True for `+=` statements, which add into an initial value of the output.
    #[getter]
    fn accumulate(&self) -> bool {
        self.accumulate
    }

    /// Compile for inputs of these shapes (`{name: shape}`) in the formats given (dense
    /// where none is), without running.
    fn compile_for_shapes(
        &self,
        py: Python<'_>,
        shapes: HashMap<String, Vec<i64>>,
    ) -> PyResult<()> {
        let value_type = self.dtype.unwrap_or(ValueType::F64);
        let infos = shapes
            .into_iter()
            .map(|(name, shape)| {
                let dims = crate::tensor::dimensions(&shape)?;
                let info = InputInfo {
                    format: Format::dense(dims.len()),
                    dims,
                    value_type,
                    fill: 0.0,
                };
                Ok((name, info))
            })
            .collect::<PyResult<HashMap<_, _>>>()?;
        let (key, formats) = self.key(&infos)?;
        self.kernel_for(py, key, &formats).map(|_| ())
    }

    /// Run on `inputs` (`{name: Tensor}`), adding into `initial` for `+=` statements.
    #[pyo3(signature = (inputs, initial=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: HashMap<String, InputArg<'py>>,
        initial: Option<PyRef<'py, PyTensor>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let held = hold(&inputs)?;
        let ready = ready(py, &held)?;
        let (kernel, tensors) = self.prepare(py, &ready)?;
        let initial = self.initial(initial.as_ref())?;
        let result = py
            .detach(|| kernel.run_timed(&tensors, initial))
            .map_err(errors::to_py)?;
        output_to_py(py, result.0)
    }

    /// Search formats and a schedule for `inputs` for about `budget` seconds (see
    /// `sparsec::tune`), store the choice in the tuning cache and return it: the formats
    /// by tensor name, the schedule text, the thread count, the measured speedup over the
    /// default, the candidates measured and the seconds the search took. `search` is
    /// `random`, `format-only` or `model` (the learned cost model's `candidates` best
    /// points, 10 by default; the model is the one shipped for the statement, or the one
    /// stored at the stem `model`).
    #[pyo3(signature = (inputs, budget=10.0, search="random", model=None, candidates=None))]
    fn tune<'py>(
        &self,
        py: Python<'py>,
        inputs: HashMap<String, InputArg<'py>>,
        budget: f64,
        search: &str,
        model: Option<std::path::PathBuf>,
        candidates: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let strategy = match search {
            "random" | "model" => sparsec::tune::Strategy::Random,
            "format-only" => sparsec::tune::Strategy::FormatOnly,
            other => {
                return Err(errors::input(format!(
                    "unknown search `{other}`; use \"random\", \"format-only\" or \"model\""
                )))
            }
        };
        if !(budget.is_finite() && budget > 0.0) {
            return Err(errors::input(format!(
                "the budget is a positive number of seconds, not {budget}"
            )));
        }
        if candidates == Some(0) {
            return Err(errors::input("candidates: measure at least one"));
        }
        if search != "model" && model.is_some() {
            return Err(errors::input(format!(
                "a model is read by search=\"model\", not by search=\"{search}\""
            )));
        }
        let learned = if search == "model" {
            Some(ModelSearch::for_statement(&self.expr, model.as_deref())?)
        } else {
            None
        };
        let held = hold(&inputs)?;
        let ready = ready(py, &held)?;
        let (kernel, tensors) = self.prepare(py, &ready)?;
        let statement = kernel.statement().clone();
        let mut options = sparsec::tune::TuneOptions {
            budget: std::time::Duration::from_secs_f64(budget),
            strategy,
            candidates,
            ..Default::default()
        };
        if let Some(n) = self.threads {
            options.threads = n;
        }
        let (tuned, choice) = py
            .detach(|| {
                // The tuner reads the inputs in the formats the statement declares.
                let declared = statement.tensors[1..]
                    .iter()
                    .zip(&tensors)
                    .map(|(decl, t)| t.input_view().convert(&decl.format))
                    .collect::<Result<Vec<_>, _>>()?;
                match learned {
                    Some(model) => model.tune(&statement, declared, &options),
                    None => sparsec::tune::tune(&statement, declared, &options, |_| {}),
                }
            })
            .map_err(errors::to_py)?;
        let out = PyDict::new(py);
        let formats = PyDict::new(py);
        for (name, format) in &choice.formats {
            formats.set_item(name, format.spelling())?;
        }
        out.set_item("formats", formats)?;
        out.set_item("schedule", &choice.schedule)?;
        out.set_item("threads", choice.threads)?;
        out.set_item("speedup", choice.speedup)?;
        out.set_item("measured", tuned.measured)?;
        out.set_item("seconds", tuned.tuning_time.as_secs_f64())?;
        Ok(out)
    }

    /// Run once and keep the output's structure, so that `compute` recomputes its values
    /// for inputs with new values and the same nonzero structure.
    #[pyo3(signature = (inputs, initial=None))]
    fn assemble(
        &self,
        py: Python<'_>,
        inputs: HashMap<String, InputArg<'_>>,
        initial: Option<PyRef<'_, PyTensor>>,
    ) -> PyResult<PyAssembled> {
        let held = hold(&inputs)?;
        let ready = ready(py, &held)?;
        let (kernel, tensors) = self.prepare(py, &ready)?;
        let initial = self.initial(initial.as_ref())?;
        let assembled = py
            .detach(|| kernel.assemble(&tensors, initial))
            .map_err(errors::to_py)?;
        Ok(PyAssembled {
            kernel,
            value_type: assembled.tensor().value_type(),
            assembled: Mutex::new(assembled),
        })
    }

    /// Recompute the values of `assembled` in place for `inputs` of the structure it was
    /// assembled for.
    #[pyo3(signature = (assembled, inputs, initial=None))]
    fn compute(
        &self,
        py: Python<'_>,
        assembled: PyRef<'_, PyAssembled>,
        inputs: HashMap<String, InputArg<'_>>,
        initial: Option<PyRef<'_, PyTensor>>,
    ) -> PyResult<()> {
        let held = hold(&inputs)?;
        let ready = ready(py, &held)?;
        let (kernel, tensors) = self.prepare(py, &ready)?;
        let initial = self.initial(initial.as_ref())?;
        let assembled: &PyAssembled = &assembled;
        if !Arc::ptr_eq(&kernel, &assembled.kernel) {
            return Err(errors::input(
                "this output was assembled for tensors of other shapes, formats or value \
                 types, or by another kernel; assemble it again",
            ));
        }
        // The lock is taken without the GIL, so that a thread holding the GIL and waiting
        // for it cannot keep this one from finishing.
        py.detach(|| {
            let mut output = assembled
                .assembled
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let output: &mut Assembled = &mut output;
            kernel.compute(&tensors, initial, output)
        })
        .map(|_| ())
        .map_err(errors::to_py)
    }

    /// The C source of the kernel last run (for the JIT backend, the C equivalent of the
    /// code that runs).
    #[getter]
    fn source(&self) -> PyResult<String> {
        Ok(self.current()?.source().to_string())
    }

    /// Loops of the kernel last run, outermost first.
    #[getter]
    fn loop_order(&self) -> PyResult<Vec<String>> {
        Ok(self
            .current()?
            .loop_order()
            .into_iter()
            .map(String::from)
            .collect())
    }

    /// True when the code of the kernel last run was produced for it rather than found in
    /// the kernel cache (always for the JIT's code).
    #[getter]
    fn was_compiled(&self) -> PyResult<bool> {
        Ok(self.current()?.was_compiled())
    }

    /// The backend asked for: `"c"`, `"jit"` or `"tiered"`.
    #[getter]
    fn backend(&self) -> &'static str {
        backend_name(self.backend)
    }

    /// The backend whose code runs now (`"c"` or `"jit"`: its target's name, in lower case).
    #[getter]
    fn running_backend(&self) -> PyResult<String> {
        Ok(self.current()?.running_target().to_ascii_lowercase())
    }

    /// Threads of parallel loops.
    #[getter]
    fn threads(&self) -> PyResult<usize> {
        Ok(self.current()?.threads())
    }

    /// The version of the gathered sums (`"scalar"`, `"lanes"` or `"gathers"`) chosen by
    /// measuring on the last call's inputs; `None` before it is chosen, with other `sums`
    /// options, and for kernels with one version.
    #[getter]
    fn sum_version(&self) -> PyResult<Option<&'static str>> {
        Ok(self.current()?.sum_version().map(SumVersion::name))
    }

    /// Wait until a tiered kernel's C compilation has finished and use its code from now
    /// on.
    fn finish_compiling(&self, py: Python<'_>) -> PyResult<()> {
        let kernel = self.current()?;
        py.detach(|| kernel.finish_compiling())
            .map_err(errors::to_py)
    }

    fn __repr__(&self) -> String {
        format!("sparsec.Kernel('{}')", self.expr)
    }
}

/// An output assembled once, whose values `Kernel.compute` recomputes in place.
#[pyclass(name = "Assembled", module = "sparsec._native", frozen)]
pub struct PyAssembled {
    kernel: Arc<Kernel>,
    assembled: Mutex<Assembled>,
    value_type: ValueType,
}

#[pymethods]
impl PyAssembled {
    /// A copy of the output as it is now (see `Kernel.run` for its form).
    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let tensor = py.detach(|| {
            self.assembled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .tensor()
                .clone()
        });
        output_to_py(py, tensor)
    }

    /// The dtype of the output's values.
    #[getter]
    fn dtype(&self) -> &'static str {
        dtype_name(self.value_type)
    }
}
