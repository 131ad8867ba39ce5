//! `sparsec.specialise`: a dense affine program specialised to the non-zero structure of
//! NumPy arrays (see `docs/affine.md`), run on them.

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sparsec::affine::{self, inputs, kernel::AffineKernel, parse_program};
use sparsec::jit::Toolchain;
use sparsec::kernel::Backend;
use sparsec::tensor::Values;

use crate::{arrays, errors};

/// Analyse `program` for the arrays given (by name: NumPy arrays of float64, a 0-d
/// array for a scalar; an array not given starts as zeros) with the sizes their shapes
/// and `params` fix, and, with `run`, run the specialised code on them. Returns a dict:
/// `exact`, `reasons`, `regions` (each statement's executed iterations, isl's syntax)
/// and, with `run`, `arrays` (every array's final contents).
#[pyfunction]
#[pyo3(signature = (program, arrays, params=None, threshold=1.0, run=true))]
pub fn specialise<'py>(
    py: Python<'py>,
    program: &str,
    arrays: BTreeMap<String, Bound<'py, PyAny>>,
    params: Option<BTreeMap<String, i64>>,
    threshold: f64,
    run: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let to_py = |e: affine::AffineError| errors::to_py(e.in_source("program", program).into());
    let parsed = parse_program(program).map_err(to_py)?;
    let mut dense = affine::dense::Arrays::new();
    let mut shapes = Vec::new();
    for (name, obj) in &arrays {
        let (dims, values) = arrays::dense(obj, &format!("`{name}`"))?;
        let values = match values {
            Values::F64(v) => v,
            Values::F32(v) => v.into_iter().map(f64::from).collect(),
        };
        if !dims.is_empty() {
            shapes.push((name.clone(), dims.clone()));
        }
        dense.insert(name.clone(), values);
    }
    let given = params.unwrap_or_default();
    let sizes = inputs::bind_params(&parsed, &given, &shapes).map_err(to_py)?;
    let mut patterns = Vec::new();
    for decl in &parsed.arrays {
        let pattern = match (dense.get(&decl.name), decl.extents.len()) {
            (Some(values), 0) => inputs::scalar_pattern(&decl.name, values[0]),
            (Some(values), _) => {
                let dims = &shapes
                    .iter()
                    .find(|(n, _)| n == &decl.name)
                    .expect("shaped")
                    .1;
                inputs::pattern(&decl.name, &inputs::coordinates(dims, values), threshold)
                    .map_err(to_py)?
                    .0
            }
            (None, rank) => inputs::empty_pattern(&decl.name, rank),
        };
        patterns.push((decl.name.clone(), pattern));
    }
    for name in dense.keys() {
        if parsed.array(name).is_none() {
            return Err(errors::input(format!(
                "`{name}` is not an array of the program"
            )));
        }
    }
    let specialised = affine::specialise(parsed, &patterns, Some(&sizes)).map_err(to_py)?;
    let out = PyDict::new(py);
    out.set_item("exact", specialised.regions.exact)?;
    out.set_item("reasons", specialised.regions.reasons.clone())?;
    let regions = PyDict::new(py);
    for (s, set) in specialised.regions.executed.iter().enumerate() {
        regions.set_item(&specialised.model.statements[s].name, set.to_string())?;
    }
    out.set_item("regions", regions)?;
    if run {
        let kernel = AffineKernel::compile(&specialised, Backend::C.targets(&Toolchain::default()))
            .map_err(errors::to_py)?;
        kernel.run(&sizes, &mut dense).map_err(errors::to_py)?;
        let extents = affine::dense::extents(&specialised.model.program, &sizes).map_err(to_py)?;
        let results = PyDict::new(py);
        for (name, values) in dense {
            let array = arrays::shaped_array(py, &extents[&name], Values::F64(values))?;
            results.set_item(name, array)?;
        }
        out.set_item("arrays", results)?;
    }
    Ok(out)
}
