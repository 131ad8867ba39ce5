//! Kernel inputs read in place: a SciPy matrix's `indptr`, `indices` and `data`, and
//! C-contiguous NumPy arrays, borrowed for the length of one call instead of copied.
//!
//! A [`PyBorrowed`] only keeps references to the arrays. Each call takes NumPy's read-only
//! borrows of them ([`Held`]) and checks the structure again (offsets, index ranges,
//! order), since Python code may have changed the arrays since the last call; the kernel
//! then reads them through a [`TensorView`]. What the kernel cannot read as it is (a
//! matrix with unsorted or duplicate indices, a non-contiguous array) is copied and packed
//! as [`PyTensor`] would, so the result never depends on which path was taken.

use numpy::{
    PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArray1, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use sparsec::format::Format;
use sparsec::kernel::KernelInput;
use sparsec::tensor::{IndexSlice, Tensor, TensorView, ValueSlice, ValueType};

use crate::errors;
use crate::tensor::{dimensions, PyTensor};

/// A matrix or NumPy array lent to kernel calls without a copy. The arrays must not be
/// written while a call reads them (as for any extension that reads NumPy memory with the
/// GIL released).
#[pyclass(name = "Borrowed", module = "sparsec._native", frozen)]
pub struct PyBorrowed {
    dims: Vec<usize>,
    arrays: Lent,
}

enum Lent {
    /// A row-major array of `float64` or `float32` values.
    Dense(Py<PyAny>),
    /// SciPy's compressed rows (or columns, with `column_major`).
    Compressed {
        column_major: bool,
        indptr: Py<PyAny>,
        indices: Py<PyAny>,
        data: Py<PyAny>,
    },
}

#[pymethods]
impl PyBorrowed {
    /// Lend a NumPy array of `float64` or `float32` values.
    #[staticmethod]
    fn dense(array: &Bound<'_, PyAny>) -> PyResult<PyBorrowed> {
        let shape = array.getattr("shape")?.extract::<Vec<i64>>()?;
        Ok(PyBorrowed {
            dims: dimensions(&shape)?,
            arrays: Lent::Dense(array.clone().unbind()),
        })
    }

    /// Lend a matrix in compressed rows (`column_major=False`, SciPy's CSR) or columns
    /// (CSC), as SciPy holds it: `int32` or `int64` indices, `float64` or `float32` data.
    #[staticmethod]
    fn compressed(
        shape: Vec<i64>,
        indptr: &Bound<'_, PyAny>,
        indices: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
        column_major: bool,
    ) -> PyResult<PyBorrowed> {
        let dims = dimensions(&shape)?;
        if dims.len() != 2 {
            return Err(errors::input(format!(
                "compressed rows or columns describe a matrix, but the shape is {shape:?}"
            )));
        }
        Ok(PyBorrowed {
            dims,
            arrays: Lent::Compressed {
                column_major,
                indptr: indptr.clone().unbind(),
                indices: indices.clone().unbind(),
                data: data.clone().unbind(),
            },
        })
    }

    /// Dimension sizes.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.dims)
    }
}

/// A kernel input as Python passes it.
pub enum InputArg<'py> {
    /// A tensor sparsec owns.
    Tensor(PyRef<'py, PyTensor>),
    /// Arrays another owner keeps.
    Borrowed(PyRef<'py, PyBorrowed>),
}

/// Written out rather than derived: a derived extraction tries each variant and builds a
/// Python exception for each failure, which costs more than a small kernel call.
impl<'py> FromPyObject<'_, 'py> for InputArg<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(t) = obj.cast::<PyTensor>() {
            return Ok(InputArg::Tensor(t.borrow()));
        }
        if let Ok(b) = obj.cast::<PyBorrowed>() {
            return Ok(InputArg::Borrowed(b.borrow()));
        }
        Err(errors::input(format!(
            "kernel inputs are sparsec.Tensor or lent arrays, not {}",
            obj.get_type().name()?
        )))
    }
}

impl<'py> InputArg<'py> {
    /// Take NumPy's read-only borrows of the input's arrays for one call.
    pub fn hold(&self) -> PyResult<Held<'_, 'py>> {
        let lent = match self {
            InputArg::Tensor(t) => return Ok(Held::Tensor(&t.tensor)),
            InputArg::Borrowed(b) => b,
        };
        let py = lent.py();
        Ok(match &lent.arrays {
            Lent::Dense(array) => Held::Dense {
                lent,
                values: values(array.bind(py))?,
            },
            Lent::Compressed {
                indptr,
                indices,
                data,
                ..
            } => Held::Compressed {
                lent,
                indptr: index_guard(indptr.bind(py), "indptr")?,
                indices: index_guard(indices.bind(py), "indices")?,
                data: values(data.bind(py))?,
            },
        })
    }
}

/// NumPy's read-only borrow of an index array.
pub enum IndexGuard<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

/// NumPy's read-only borrow of an array of values.
pub enum ValueGuard<'py> {
    F64(PyReadonlyArrayDyn<'py, f64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
}

fn index_guard<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<IndexGuard<'py>> {
    if let Ok(a) = obj.cast::<PyArray1<i32>>() {
        return Ok(IndexGuard::I32(a.try_readonly()?));
    }
    if let Ok(a) = obj.cast::<PyArray1<i64>>() {
        return Ok(IndexGuard::I64(a.try_readonly()?));
    }
    Err(errors::input(format!(
        "{what} must be a 1-dimensional NumPy array of int32 or int64 indices"
    )))
}

fn values<'py>(obj: &Bound<'py, PyAny>) -> PyResult<ValueGuard<'py>> {
    if let Ok(a) = obj.cast::<PyArrayDyn<f64>>() {
        return Ok(ValueGuard::F64(a.try_readonly()?));
    }
    if let Ok(a) = obj.cast::<PyArrayDyn<f32>>() {
        return Ok(ValueGuard::F32(a.try_readonly()?));
    }
    Err(errors::input(
        "values must be a NumPy array of float64 or float32 values",
    ))
}

impl IndexGuard<'_> {
    /// The indices in place, when they are contiguous.
    fn slice(&self) -> Option<IndexSlice<'_>> {
        match self {
            IndexGuard::I32(a) => a.as_slice().ok().map(IndexSlice::I32),
            IndexGuard::I64(a) => a.as_slice().ok().map(IndexSlice::I64),
        }
    }
}

impl ValueGuard<'_> {
    /// The values in place, when they are in row-major order without gaps. (`as_slice`
    /// alone would also accept a Fortran-ordered array, whose memory is column by column.)
    fn slice(&self) -> Option<ValueSlice<'_>> {
        match self {
            ValueGuard::F64(a) if a.is_c_contiguous() => a.as_slice().ok().map(ValueSlice::F64),
            ValueGuard::F32(a) if a.is_c_contiguous() => a.as_slice().ok().map(ValueSlice::F32),
            _ => None,
        }
    }
}

/// An input's arrays, borrowed from NumPy for one call.
pub enum Held<'a, 'py> {
    Tensor(&'a Tensor),
    Dense {
        lent: &'a PyBorrowed,
        values: ValueGuard<'py>,
    },
    Compressed {
        lent: &'a PyBorrowed,
        indptr: IndexGuard<'py>,
        indices: IndexGuard<'py>,
        data: ValueGuard<'py>,
    },
}

impl Held<'_, '_> {
    /// What the kernel reads: the arrays in place when they are laid out as sparsec's
    /// storage and the structure checks out, else a packed copy.
    pub fn ready(&self, py: Python<'_>) -> PyResult<Ready<'_>> {
        match self {
            Held::Tensor(t) => Ok(Ready::InPlace(t.view())),
            Held::Dense { lent, values } => {
                if let Some(view) = values
                    .slice()
                    .and_then(|v| TensorView::dense(lent.dims.clone(), v).ok())
                {
                    return Ok(Ready::InPlace(view));
                }
                let Lent::Dense(array) = &lent.arrays else {
                    unreachable!("held as it was lent")
                };
                Ok(Ready::Copied(
                    PyTensor::from_dense(array.bind(py), "dense")?.tensor,
                ))
            }
            Held::Compressed {
                lent,
                indptr,
                indices,
                data,
            } => {
                let Lent::Compressed {
                    column_major,
                    indptr: indptr_array,
                    indices: indices_array,
                    data: data_array,
                } = &lent.arrays
                else {
                    unreachable!("held as it was lent")
                };
                let in_place = match (indptr.slice(), indices.slice(), data.slice()) {
                    (Some(p), Some(i), Some(d)) => {
                        TensorView::compressed(lent.dims.clone(), *column_major, p, i, d).ok()
                    }
                    _ => None,
                };
                if let Some(view) = in_place {
                    return Ok(Ready::InPlace(view));
                }
                // Unsorted or duplicate indices, or arrays with gaps: pack a copy, which
                // also says precisely what is malformed.
                let shape = lent.dims.iter().map(|&d| d as i64).collect();
                let format = if *column_major { "csc" } else { "csr" };
                Ok(Ready::Copied(
                    PyTensor::from_compressed(
                        shape,
                        indptr_array.bind(py),
                        indices_array.bind(py),
                        data_array.bind(py),
                        format,
                        *column_major,
                    )?
                    .tensor,
                ))
            }
        }
    }
}

/// An input ready for a kernel call.
pub enum Ready<'a> {
    /// Storage read in place.
    InPlace(TensorView<'a>),
    /// A packed copy.
    Copied(Tensor),
}

impl Ready<'_> {
    /// What a kernel is compiled for: the input's dimensions, format, value type and fill
    /// value (the loops depend on it).
    pub fn describes(
        &self,
        dims: &[usize],
        format: &Format,
        value_type: ValueType,
        fill: f64,
    ) -> bool {
        let view = match self {
            Ready::InPlace(v) => v.clone(),
            Ready::Copied(t) => t.view(),
        };
        view.dims() == dims
            && view.format() == format
            && view.value_type() == value_type
            && view.fill().to_bits() == fill.to_bits()
    }
}

impl KernelInput for Ready<'_> {
    fn input_view(&self) -> TensorView<'_> {
        match self {
            Ready::InPlace(v) => v.clone(),
            Ready::Copied(t) => t.view(),
        }
    }
}
