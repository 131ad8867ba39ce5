//! The process-wide memo of compiled kernels: a second `compile` or `evaluate` of the
//! same statement, formats, shapes and options finds its kernel here without lowering or
//! compiling again.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sparsec::format::Format;
use sparsec::jit::Toolchain;
use sparsec::kernel::{lower_for_target, Backend, Kernel, SumVersions};
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::{Concrete, Schedule};
use sparsec::tensor::ValueType;

/// What makes two compiled kernels the same.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    pub(crate) expr: String,
    /// Output first, then the inputs in the order they appear: name, format spelling,
    /// shape (inputs only; the output's follows from them), and the bits of the fill value
    /// (0 for the output, whose fill is computed).
    pub(crate) tensors: Vec<(String, String, Option<Vec<usize>>, u64)>,
    pub(crate) schedule: Option<String>,
    pub(crate) threads: Option<usize>,
    pub(crate) sums: SumVersions,
    pub(crate) backend: Backend,
    pub(crate) value_type: ValueType,
}

#[derive(Default)]
struct Memo {
    kernels: HashMap<KernelKey, Arc<Kernel>>,
    hits: u64,
    misses: u64,
}

static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(Mutex::default);

fn memo() -> MutexGuard<'static, Memo> {
    // A panic while the lock was held cannot leave the map half-updated: use it as it is.
    MEMO.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kernels compiled in this process, and how often compiling found one already there.
#[pyfunction]
pub fn cache_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let m = memo();
    let info = PyDict::new(py);
    info.set_item("kernels", m.kernels.len())?;
    info.set_item("hits", m.hits)?;
    info.set_item("misses", m.misses)?;
    Ok(info)
}

/// Bind, lower and compile the kernel of `key`, or take it from the memo.
pub(crate) fn compile_memoized(
    key: &KernelKey,
    formats: &[Format],
    schedule: Option<&Schedule>,
) -> Result<Arc<Kernel>, sparsec::Error> {
    let mut memo = memo();
    if let Some(kernel) = memo.kernels.get(key) {
        let kernel = kernel.clone();
        memo.hits += 1;
        return Ok(kernel);
    }
    let decls: Vec<TensorDecl> = key
        .tensors
        .iter()
        .zip(formats)
        .map(|((name, _, dims, fill), format)| {
            let decl = TensorDecl::new(name)
                .with_format(format.clone())
                .with_fill(f64::from_bits(*fill));
            match dims {
                Some(d) => decl.with_dims(d),
                None => decl,
            }
        })
        .collect();
    let statement = notation::bind(&notation::parse(&key.expr)?, &decls, &[])?;
    let concrete = Concrete::new(&statement)?;
    // Without a schedule, the backend's default parallelism (a GPU mapping on OpenCL).
    let targets = key.backend.targets(&Toolchain::default());
    // A schedule that parallelizes no loop gets the default parallel loop, as the CLI and
    // `Kernel::scheduled` give it (a galloping triangle count ran on one thread).
    let concrete = match schedule {
        Some(s) => s.apply(&concrete)?,
        None => concrete,
    };
    let lowered = lower_for_target(&concrete, targets.main().as_ref(), None)?;
    let mut kernel = Kernel::from_lowered(
        statement,
        lowered,
        key.value_type,
        &Toolchain::default(),
        key.backend,
    )?;
    if let Some(n) = key.threads {
        kernel.set_threads(n);
    }
    kernel.set_sum_versions(key.sums);
    let kernel = Arc::new(kernel);
    memo.misses += 1;
    memo.kernels.insert(key.clone(), kernel.clone());
    Ok(kernel)
}
