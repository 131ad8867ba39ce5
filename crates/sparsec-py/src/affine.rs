//! `sparsec.specialise`: a dense affine program specialised to the non-zero structure of
//! NumPy arrays (see `docs/affine.md`), run on them.

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sparsec::affine::solution_map::SolutionMap;
use sparsec::affine::{self, inputs, kernel::AffineKernel, parse_program};
use sparsec::jit::Toolchain;
use sparsec::kernel::Backend;
use sparsec::tensor::Values;

use crate::{arrays, errors};

/// Analyse `program` for the arrays given (by name: NumPy arrays of float64, a 0-d
/// array for a scalar; an array not given starts as zeros) with the sizes their shapes
/// and `params` fix, and, with `run`, run the specialised code on them. Returns a dict:
/// `exact`, `reasons`, `regions` (each statement's executed iterations, isl's syntax)
/// and, with `run`, `arrays` (every array's final contents). With `map`, the analysis goes
/// through the solution map (`affine::solution_map`), the arrays not given fixed as zeros.
#[pyfunction]
#[pyo3(signature = (program, arrays, params=None, threshold=1.0, run=true, map=false))]
pub fn specialise<'py>(
    py: Python<'py>,
    program: &str,
    arrays: BTreeMap<String, Bound<'py, PyAny>>,
    params: Option<BTreeMap<String, i64>>,
    threshold: f64,
    run: bool,
    map: bool,
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
    let mut coos = BTreeMap::new();
    for (name, dims) in &shapes {
        coos.insert(name.clone(), inputs::coordinates(dims, &dense[name]));
    }
    let mut given: BTreeMap<String, inputs::Given> = BTreeMap::new();
    for (name, values) in &dense {
        given.insert(
            name.clone(),
            match coos.get(name) {
                Some(coo) => inputs::Given::Tensor(coo),
                None => inputs::Given::Scalar(values[0]),
            },
        );
    }
    let structure = inputs::structure(&parsed, &given, threshold).map_err(to_py)?;
    let specialised = if map {
        SolutionMap::with_fixed(parsed, Some(&sizes), &structure.zeros)
            .and_then(|m| m.apply(&structure.boxes))
            .map_err(to_py)?
    } else {
        affine::specialise(parsed, &structure.patterns, Some(&sizes)).map_err(to_py)?
    };
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
