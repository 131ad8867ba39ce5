//! `sparsec._native.Tensor`: a tensor in any sparsec format, built from NumPy arrays.

use std::sync::LazyLock;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use sparsec::format::{Format, IndexArray, LevelStorage};
use sparsec::ir::ArrayKind;
use sparsec::tensor::{Coo, IndexWidth, Tensor, TensorView, ValueType, Values};

use crate::arrays;
use crate::errors;

/// A tensor stored in a sparsec format (levels of index arrays and a value array).
#[pyclass(name = "Tensor", module = "sparsec._native", frozen)]
pub struct PyTensor {
    pub tensor: Tensor,
}

/// Checked dimension sizes.
pub fn dimensions(shape: &[i64]) -> PyResult<Vec<usize>> {
    shape
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&d| d <= i64::MAX as usize)
                .ok_or_else(|| {
                    errors::input(format!("dimension {d} of shape {shape:?} is negative"))
                })
        })
        .collect()
}

/// A format string parsed for a tensor of `order` modes.
pub fn parse_format(text: &str, order: usize) -> PyResult<Format> {
    Format::parse(text, order)
        .map_err(|e| errors::format(format!("format `{text}` for order {order}: {e}")))
}

fn built(result: Result<Tensor, sparsec::tensor::TensorError>) -> PyResult<PyTensor> {
    result
        .map(|tensor| PyTensor { tensor })
        .map_err(|e| errors::to_py(e.into()))
}

/// True when `format` is the plain CSR layout (or CSC with `column_major`): a dense level
/// over the outer mode and a compressed, ordered, unique level over the inner one, whose
/// arrays are exactly SciPy's `indptr` and `indices`.
pub fn is_scipy_compressed(format: &Format, column_major: bool) -> bool {
    format == &SCIPY_COMPRESSED[usize::from(column_major)]
}

/// CSR and CSC, parsed once: outputs are compared with them on every call.
static SCIPY_COMPRESSED: LazyLock<[Format; 2]> = LazyLock::new(|| {
    ["csr", "csc"].map(|name| Format::parse(name, 2).expect("a format of matrices"))
});

#[pymethods]
impl PyTensor {
    /// Build from coordinates `(order, nnz)` and values `(nnz,)`, unsorted or with
    /// duplicates (summed); explicit zeros are kept as stored entries.
    #[staticmethod]
    fn from_coo(
        shape: Vec<i64>,
        coords: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        format: &str,
    ) -> PyResult<PyTensor> {
        let dims = dimensions(&shape)?;
        let (order, coords) = arrays::coordinates(coords, "coords")?;
        let values = arrays::values(values, "values")?;
        if order != dims.len() && !(values.is_empty() && coords.is_empty()) {
            return Err(errors::input(format!(
                "coords has {order} rows, but the shape {shape:?} has {} modes",
                dims.len()
            )));
        }
        let format = parse_format(format, dims.len())?;
        let value_type = values.value_type();
        let coo = widen(values);
        let coo = Coo::new(dims, coords, coo).map_err(|e| errors::to_py(e.into()))?;
        built(Tensor::from_coo_owned(coo, &format, value_type))
    }

    /// Build from a dense NumPy array (any memory layout). In the dense format every
    /// component is stored; in any other format, the nonzero components only.
    #[staticmethod]
    pub(crate) fn from_dense(array: &Bound<'_, PyAny>, format: &str) -> PyResult<PyTensor> {
        let (dims, values) = arrays::dense(array, "array")?;
        let format = parse_format(format, dims.len())?;
        let value_type = values.value_type();
        if format == Format::dense(dims.len()) {
            if let Some(levels) = plain_levels(&format, &dims, |_, _| None) {
                return Ok(PyTensor {
                    tensor: Tensor::from_parts(dims, format, levels, values),
                });
            }
        }
        let mut coo = Coo::empty(dims.clone());
        let mut coord = vec![0i64; dims.len()];
        for p in 0..values.len() {
            let v = values.get(p);
            if v != 0.0 {
                coo.coords.extend_from_slice(&coord);
                coo.values.push(v);
            }
            // Row-major odometer over the coordinates.
            for m in (0..dims.len()).rev() {
                coord[m] += 1;
                if (coord[m] as usize) < dims[m] {
                    break;
                }
                coord[m] = 0;
            }
        }
        built(Tensor::from_coo_owned(coo, &format, value_type))
    }

    /// Build from compressed rows (`column_major=False`, SciPy's CSR) or columns (CSC):
    /// `indptr`, `indices` and `data` as SciPy holds them, int32 or int64 indices. Canonical
    /// input stored in CSR (CSC) becomes the tensor's arrays in one copy; anything else (an
    /// other format, unsorted indices, duplicates, which are summed) is repacked.
    #[staticmethod]
    pub(crate) fn from_compressed(
        shape: Vec<i64>,
        indptr: &Bound<'_, PyAny>,
        indices: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
        format: &str,
        column_major: bool,
    ) -> PyResult<PyTensor> {
        let dims = dimensions(&shape)?;
        if dims.len() != 2 {
            return Err(errors::input(format!(
                "compressed rows or columns describe a matrix, but the shape is {shape:?}"
            )));
        }
        let mut indptr = arrays::indices(indptr, "indptr")?;
        let mut indices = arrays::indices(indices, "indices")?;
        let values = arrays::values(data, "data")?;
        let format = parse_format(format, 2)?;
        // Rows, or columns for CSC.
        let outer = dims[usize::from(column_major)];
        if values.len() != indices.len() {
            return Err(errors::input(format!(
                "data has {} values but indices has {} entries",
                values.len(),
                indices.len()
            )));
        }
        let value_type = values.value_type();
        // SciPy's canonical form, which sparsec's compressed level requires, checked as a
        // lent matrix is.
        let canonical = || {
            let (p, i) = ((&indptr).into(), (&indices).into());
            TensorView::compressed(dims.clone(), column_major, p, i, (&values).into()).is_ok()
        };
        if is_scipy_compressed(&format, column_major) && canonical() {
            // The indices keep the width they came with.
            let levels = plain_levels(&format, &dims, |level, kind| match (level, kind) {
                (1, ArrayKind::Pos) => Some(std::mem::take(&mut indptr)),
                (1, ArrayKind::Idx) => Some(std::mem::take(&mut indices)),
                _ => None,
            });
            if let Some(levels) = levels {
                return Ok(PyTensor {
                    tensor: Tensor::from_parts(dims, format, levels, values),
                });
            }
            return Err(errors::format(format!(
                "format `{}` does not store the arrays of compressed rows or columns",
                format.spelling()
            )));
        }
        let (indptr, indices) = (indptr.to_i64(), indices.to_i64());
        if indptr.len() != outer + 1
            || indptr.first() != Some(&0)
            || indptr[outer] as u64 != indices.len() as u64
            || indptr.windows(2).any(|w| w[0] > w[1])
        {
            return Err(errors::input(format!(
                "indptr must hold {} non-decreasing offsets from 0 to the number of indices ({})",
                outer + 1,
                indices.len()
            )));
        }
        let mut coords = Vec::with_capacity(indices.len() * 2);
        for (o, w) in indptr.windows(2).enumerate() {
            for &i in &indices[w[0] as usize..w[1] as usize] {
                if column_major {
                    coords.extend_from_slice(&[i, o as i64]);
                } else {
                    coords.extend_from_slice(&[o as i64, i]);
                }
            }
        }
        let coo = Coo::new(dims, coords, widen(values)).map_err(|e| errors::to_py(e.into()))?;
        built(Tensor::from_coo_owned(coo, &format, value_type))
    }

    /// Dimension sizes.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.tensor.dims())
    }

    /// Number of modes.
    #[getter]
    fn order(&self) -> usize {
        self.tensor.order()
    }

    /// The format string that describes the storage (`ds` is CSR).
    #[getter]
    fn format(&self) -> String {
        self.tensor.format().spelling()
    }

    /// `"float64"` or `"float32"`.
    #[getter]
    fn dtype(&self) -> &'static str {
        dtype_name(self.tensor.value_type())
    }

    /// The value of every component the tensor does not store (0 unless set).
    #[getter]
    fn fill(&self) -> f64 {
        self.tensor.fill()
    }

    /// The same entries with `fill` as the value of every other component.
    fn with_fill(&self, fill: f64) -> PyResult<PyTensor> {
        built(self.tensor.clone().with_fill(fill))
    }

    /// `"int32"` when every index array is 32-bit, else `"int64"` (tensors are built with
    /// the narrowest width; CSR/CSC arrays keep the width they came with).
    #[getter]
    fn index_dtype(&self) -> &'static str {
        match self.tensor.index_width() {
            IndexWidth::I32 => "int32",
            IndexWidth::I64 => "int64",
        }
    }

    /// Number of stored values, padding of non-compact formats included.
    #[getter]
    fn stored_values(&self) -> usize {
        self.tensor.stored_values()
    }

    /// The stored components: coordinates `(order, nnz)` as int64 and values, sorted
    /// row-major with duplicates summed.
    fn to_coo<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let coo = self.tensor.to_coo();
        let order = coo.order();
        let nnz = coo.len();
        let mut by_mode = vec![0i64; order * nnz];
        for e in 0..nnz {
            for m in 0..order {
                by_mode[m * nnz + e] = coo.coords[e * order + m];
            }
        }
        let coords = numpy::ndarray::Array2::from_shape_vec((order, nnz), by_mode)
            .map_err(|e| errors::input(e.to_string()))?;
        let coords = numpy::IntoPyArray::into_pyarray(coords, py).into_any();
        let values = match self.tensor.value_type() {
            ValueType::F64 => Values::F64(coo.values),
            ValueType::F32 => Values::F32(coo.values.iter().map(|&v| v as f32).collect()),
        };
        Ok((coords, arrays::value_array(py, values)))
    }

    /// Every component as a dense NumPy array (C order).
    fn to_dense<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let dims = self.tensor.dims();
        if self.tensor.format() == &Format::dense(dims.len()) {
            return arrays::shaped_array(py, dims, self.tensor.values().clone());
        }
        arrays::shaped_array(py, dims, densified(&self.tensor)?)
    }

    /// For a tensor stored in CSR (CSC): copies of its `indptr`, `indices` and `data`.
    fn compressed_arrays<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        compressed_parts(self.tensor.clone(), py)
    }

    /// The same tensor in another format.
    fn convert(&self, format: &str) -> PyResult<PyTensor> {
        let format = parse_format(format, self.tensor.order())?;
        built(self.tensor.convert(&format))
    }

    /// Write to `path`: `.mtx` (order 1 or 2), `.tns`, `.spt` (any format, exactly) or
    /// `.h5` (binsparse; formats of dense and compressed levels).
    fn write(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| sparsec::io::write_any(&path, &self.tensor))
            .map_err(errors::file)
    }

    fn __repr__(&self) -> String {
        format!(
            "sparsec.Tensor(shape={:?}, format='{}', dtype={}, stored_values={})",
            self.tensor.dims(),
            self.tensor.format().spelling(),
            dtype_name(self.tensor.value_type()),
            self.tensor.stored_values()
        )
    }
}

/// The level storage of a plain `format` over `dims` holding the arrays `array` gives
/// (see [`Format::plain_levels`]).
fn plain_levels(
    format: &Format,
    dims: &[usize],
    array: impl FnMut(usize, ArrayKind) -> Option<IndexArray>,
) -> Option<Vec<LevelStorage>> {
    let levels = format.plain_levels(dims, array)?;
    Some(
        levels
            .into_iter()
            .map(|(arrays, params)| LevelStorage { arrays, params })
            .collect(),
    )
}

/// Values widened to `f64`, as coordinate lists hold them.
fn widen(values: Values) -> Vec<f64> {
    match values {
        Values::F64(v) => v,
        Values::F32(v) => v.into_iter().map(f64::from).collect(),
    }
}

/// The NumPy name of a value type.
pub fn dtype_name(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::F64 => "float64",
        ValueType::F32 => "float32",
    }
}

/// Every component of `tensor` in row-major order, zeros included.
fn densified(tensor: &Tensor) -> PyResult<Values> {
    let dims = tensor.dims();
    let total = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            errors::input(format!(
                "a dense array of shape {dims:?} has more components than the address space"
            ))
        })?;
    let element = match tensor.value_type() {
        ValueType::F64 => 8,
        ValueType::F32 => 4,
    };
    let too_large = |_| {
        errors::input(format!(
            "a dense array of shape {dims:?} needs {} bytes, which cannot be allocated",
            total as u128 * element
        ))
    };
    let mut values = match tensor.value_type() {
        ValueType::F64 => {
            let mut v = Vec::new();
            v.try_reserve_exact(total).map_err(too_large)?;
            v.resize(total, 0.0);
            Values::F64(v)
        }
        ValueType::F32 => {
            let mut v = Vec::new();
            v.try_reserve_exact(total).map_err(too_large)?;
            v.resize(total, 0.0);
            Values::F32(v)
        }
    };
    // Duplicates add up; components stored nowhere are the fill value.
    let mut stored = match tensor.fill() != 0.0 {
        true => {
            let mut flags = Vec::new();
            flags.try_reserve_exact(total).map_err(too_large)?;
            flags.resize(total, false);
            Some(flags)
        }
        false => None,
    };
    tensor.for_each_stored(|coord, v| {
        let at = coord
            .iter()
            .zip(dims)
            .fold(0usize, |at, (&c, &d)| at * d + c as usize);
        values.set(at, values.get(at) + v);
        if let Some(stored) = &mut stored {
            stored[at] = true;
        }
    });
    if let Some(stored) = stored {
        for (at, _) in stored.iter().enumerate().filter(|(_, s)| !**s) {
            values.set(at, tensor.fill());
        }
    }
    Ok(values)
}

/// The `indptr`, `indices` and `data` arrays of a CSR or CSC tensor, moved into NumPy
/// arrays without copying.
pub fn compressed_parts(
    tensor: Tensor,
    py: Python<'_>,
) -> PyResult<(Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>)> {
    let compressed =
        is_scipy_compressed(tensor.format(), false) || is_scipy_compressed(tensor.format(), true);
    if !compressed {
        return Err(errors::format(format!(
            "a tensor in format `{}` has no CSR or CSC arrays; convert it to `csr` or `csc`",
            tensor.format().spelling()
        )));
    }
    let (_, _, mut levels, values) = tensor.into_parts();
    let mut take = |kind: ArrayKind| {
        levels[1]
            .arrays
            .iter_mut()
            .find(|(k, _)| *k == kind)
            .map(|(_, a)| std::mem::take(a))
            .unwrap_or_default()
    };
    let indptr = take(ArrayKind::Pos);
    let indices = take(ArrayKind::Idx);
    Ok((
        arrays::index_array(py, indptr),
        arrays::index_array(py, indices),
        arrays::value_array(py, values),
    ))
}

/// Read `path` (`.mtx`, `.tns`, `.spt` or binsparse `.h5`) into `format` (default: the
/// stored format of `.spt` and binsparse files, else CSR for matrices and CSF otherwise).
#[pyfunction]
#[pyo3(signature = (path, format=None))]
pub fn read(py: Python<'_>, path: std::path::PathBuf, format: Option<&str>) -> PyResult<PyTensor> {
    let file = py
        .detach(|| sparsec::io::read_any(&path))
        .map_err(errors::file)?;
    let order = file.dims().len();
    let format = match (format, &file) {
        (Some(text), _) => parse_format(text, order)?,
        (None, sparsec::io::TensorFile::Binary(t)) => t.format().clone(),
        (None, _) => parse_format(if order == 2 { "csr" } else { "csf" }, order)?,
    };
    let value_type = match &file {
        sparsec::io::TensorFile::Binary(t) => t.value_type(),
        _ => ValueType::F64,
    };
    built(py.detach(|| file.into_tensor(&format, value_type)))
}
