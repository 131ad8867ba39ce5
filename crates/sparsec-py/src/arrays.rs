//! Reading NumPy arrays into sparsec's storage and handing storage back to NumPy.
//!
//! sparsec stores `int32`/`int64` index arrays and `f64`/`f32` values in vectors it owns, so
//! every input array is copied once, at its own width; reading goes
//! through NumPy's strides, so non-contiguous and Fortran-ordered arrays are read as they
//! are meant, never misread. Arrays of any other dtype are refused with an error naming
//! it. Storage going out (kernel outputs) is moved into NumPy arrays without a copy.

use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use sparsec::format::IndexArray;
use sparsec::tensor::Values;

use crate::errors;

/// The dtype of `obj` when it is a NumPy array, else its Python type name.
fn describe(obj: &Bound<'_, PyAny>) -> String {
    match obj.cast::<PyUntypedArray>() {
        Ok(a) => format!("a {}-dimensional array of dtype {}", a.ndim(), a.dtype()),
        Err(_) => format!(
            "an object of type {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        ),
    }
}

/// The elements of `array` in row-major order: one copy of its memory when it is
/// C-contiguous, else a walk through its strides. (`as_slice` alone would also accept a
/// Fortran-ordered array and read it column by column.)
fn row_major<T: numpy::Element + Copy, D: numpy::ndarray::Dimension>(
    array: &numpy::PyReadonlyArray<'_, T, D>,
) -> Vec<T> {
    match array.as_slice() {
        Ok(s) if array.is_c_contiguous() => s.to_vec(),
        _ => array.as_array().iter().copied().collect(),
    }
}

/// A 1-D array of `int64` or `int32` indices, at its own width.
pub fn indices(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<IndexArray> {
    if let Ok(a) = obj.cast::<PyArray1<i64>>() {
        return Ok(IndexArray::I64(row_major(&a.readonly())));
    }
    if let Ok(a) = obj.cast::<PyArray1<i32>>() {
        return Ok(IndexArray::I32(row_major(&a.readonly())));
    }
    Err(errors::input(format!(
        "{what} must be a 1-dimensional NumPy array of int32 or int64 indices, not {}",
        describe(obj)
    )))
}

/// A 2-D `(order, nnz)` array of `int64` or `int32` coordinates, flattened entry by entry
/// (`order` coordinates per entry), as [`sparsec::tensor::Coo`] keeps them.
pub fn coordinates(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(usize, Vec<i64>)> {
    let flatten = |rows: usize, cols: usize, at: &dyn Fn(usize, usize) -> i64| {
        let mut flat = Vec::with_capacity(rows * cols);
        for e in 0..cols {
            for m in 0..rows {
                flat.push(at(m, e));
            }
        }
        (rows, flat)
    };
    if let Ok(a) = obj.cast::<PyArray2<i64>>() {
        let a = a.readonly();
        let v = a.as_array();
        let (rows, cols) = v.dim();
        return Ok(flatten(rows, cols, &|m, e| v[[m, e]]));
    }
    if let Ok(a) = obj.cast::<PyArray2<i32>>() {
        let a = a.readonly();
        let v = a.as_array();
        let (rows, cols) = v.dim();
        return Ok(flatten(rows, cols, &|m, e| v[[m, e]] as i64));
    }
    Err(errors::input(format!(
        "{what} must be a 2-dimensional NumPy array (one row per mode) of int32 or int64 \
         coordinates, not {}",
        describe(obj)
    )))
}

/// A 1-D array of `float64` or `float32` values.
pub fn values(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Values> {
    if let Ok(a) = obj.cast::<PyArray1<f64>>() {
        return Ok(Values::F64(
            a.readonly().as_array().iter().copied().collect(),
        ));
    }
    if let Ok(a) = obj.cast::<PyArray1<f32>>() {
        return Ok(Values::F32(
            a.readonly().as_array().iter().copied().collect(),
        ));
    }
    Err(errors::input(format!(
        "{what} must be a 1-dimensional NumPy array of float64 or float32 values, not {}",
        describe(obj)
    )))
}

/// An array of any dimension and `float64` or `float32` values: its shape and its values
/// in row-major (C) order, whatever its memory layout.
pub fn dense(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(Vec<usize>, Values)> {
    if let Ok(a) = obj.cast::<PyArrayDyn<f64>>() {
        let a = a.readonly();
        return Ok((a.shape().to_vec(), Values::F64(row_major(&a))));
    }
    if let Ok(a) = obj.cast::<PyArrayDyn<f32>>() {
        let a = a.readonly();
        return Ok((a.shape().to_vec(), Values::F32(row_major(&a))));
    }
    Err(errors::input(format!(
        "{what} must be a NumPy array of float64 or float32 values, not {}",
        describe(obj)
    )))
}

/// Indices as a NumPy array of their width (`int32` or `int64`), without copying.
pub fn index_array(py: Python<'_>, indices: IndexArray) -> Bound<'_, PyAny> {
    match indices {
        IndexArray::I32(v) => PyArray1::from_vec(py, v).into_any(),
        IndexArray::I64(v) => PyArray1::from_vec(py, v).into_any(),
    }
}

/// Values as a 1-D NumPy array of their own dtype, without copying.
pub fn value_array(py: Python<'_>, values: Values) -> Bound<'_, PyAny> {
    match values {
        Values::F64(v) => PyArray1::from_vec(py, v).into_any(),
        Values::F32(v) => PyArray1::from_vec(py, v).into_any(),
    }
}

/// Row-major values as a NumPy array of shape `dims`, without copying.
pub fn shaped_array<'py>(
    py: Python<'py>,
    dims: &[usize],
    values: Values,
) -> PyResult<Bound<'py, PyAny>> {
    let shape_error = |e: numpy::ndarray::ShapeError| {
        errors::input(format!("values do not fill the shape {dims:?}: {e}"))
    };
    Ok(match values {
        Values::F64(v) => ArrayD::from_shape_vec(IxDyn(dims), v)
            .map_err(shape_error)?
            .into_pyarray(py)
            .into_any(),
        Values::F32(v) => ArrayD::from_shape_vec(IxDyn(dims), v)
            .map_err(shape_error)?
            .into_pyarray(py)
            .into_any(),
    })
}
