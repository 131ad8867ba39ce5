//! The Python API's option strings (`backend=`, `sums=`, `dtype=`) and the names it
//! gives back.

use pyo3::prelude::*;
use sparsec::ir::gather::SumVersion;
use sparsec::kernel::{Backend, SumVersions};
use sparsec::tensor::ValueType;

use crate::errors;

/// The `backend` option.
pub(crate) fn parse_backend(name: &str) -> PyResult<Backend> {
    Backend::from_option(name).ok_or_else(|| {
        let names: Vec<String> = Backend::ALL
            .iter()
            .map(|b| format!("\"{}\"", b.option()))
            .collect();
        errors::input(format!(
            "unknown backend `{name}`; use one of {}",
            names.join(", ")
        ))
    })
}

/// The `sums` option: how a kernel chooses the version of its gathered sums.
pub(crate) fn parse_sums(name: &str) -> PyResult<SumVersions> {
    match name {
        "measured" => Ok(SumVersions::Measured),
        "tested" => Ok(SumVersions::Tested),
        "scalar" => Ok(SumVersions::Fixed(SumVersion::Scalar)),
        "lanes" => Ok(SumVersions::Fixed(SumVersion::Lanes)),
        "gathers" => Ok(SumVersions::Fixed(SumVersion::Gathers)),
        other => Err(errors::input(format!(
            "unknown sums `{other}`; use \"measured\", \"tested\", \"scalar\", \"lanes\" or \"gathers\""
        ))),
    }
}

/// The `dtype` option.
pub(crate) fn parse_dtype(name: &str) -> PyResult<ValueType> {
    match name {
        "float64" => Ok(ValueType::F64),
        "float32" => Ok(ValueType::F32),
        other => Err(errors::input(format!(
            "unsupported dtype `{other}`; use \"float64\" or \"float32\""
        ))),
    }
}

/// A backend as the `backend` option spells it.
pub(crate) fn backend_name(backend: Backend) -> &'static str {
    backend.option()
}
