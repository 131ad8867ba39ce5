//! The `sparsec._native` Python extension module: sparsec's tensors and kernels for the
//! `sparsec` Python package, whose Python part (`python/sparsec`) converts NumPy, SciPy
//! and pydata/sparse objects and calls in here for all the work.

mod affine;
mod arrays;
mod borrowed;
mod errors;
mod kernel;
mod learned;
mod memo;
mod options;
mod tensor;

use pyo3::prelude::*;

/// Large blocks on cache lines, so that kernels load rows of the dense tensors this module
/// allocates in whole vectors (see `sparsec::memory::LineAligned`).
#[global_allocator]
static ALLOCATOR: sparsec::memory::LineAligned = sparsec::memory::LineAligned;

/// The spelling sparsec gives the format `text` for a tensor of `order` modes (`"csr"` is
/// `"ds"`): two texts name the same format exactly when their spellings are equal.
#[pyfunction]
fn format_spelling(text: &str, order: usize) -> PyResult<String> {
    Ok(tensor::parse_format(text, order)?.spelling())
}

/// The optional features this build has (`binsparse`, `learned`).
#[pyfunction]
fn features() -> Vec<&'static str> {
    let mut features = Vec::new();
    if cfg!(feature = "binsparse") {
        features.push("binsparse");
    }
    if cfg!(feature = "learned") {
        features.push("learned");
    }
    features
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<borrowed::PyBorrowed>()?;
    m.add_class::<kernel::PyKernel>()?;
    m.add_class::<kernel::PyAssembled>()?;
    m.add_function(wrap_pyfunction!(memo::cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(format_spelling, m)?)?;
    m.add_function(wrap_pyfunction!(features, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::read, m)?)?;
    m.add_function(wrap_pyfunction!(affine::specialise, m)?)?;
    Ok(())
}
