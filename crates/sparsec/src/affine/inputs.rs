//! Binding tensors to an affine program: parameters read off the inputs' dimensions,
//! each input's values laid out densely, and its non-zero structure turned into the
//! pattern the analysis takes (a union of boxes, [`super::boxes`]).

use std::collections::BTreeMap;

use super::boxes::{self, Cover};
use super::parse::{ArrayDecl, Program};
use super::solution_map::Bounds;
use super::AffineError;
use crate::tensor::Coo;

/// The parameters' values: those `given`, and those an input's dimensions fix (an
/// extent `N` or `N + c` of a given array), each checked against every other.
pub fn bind_params(
    program: &Program,
    given: &BTreeMap<String, i64>,
    inputs: &[(String, Vec<usize>)],
) -> Result<BTreeMap<String, i64>, AffineError> {
    for name in given.keys() {
        if !program.params.contains(name) {
            return Err(AffineError::general(format!(
                "`{name}` is not a parameter of the program (parameters: {})",
                program.params.join(", ")
            )));
        }
    }
    let mut values = given.clone();
    for (name, dims) in inputs {
        let array = declared(program, name)?;
        if array.extents.len() != dims.len() {
            return Err(AffineError::general(format!(
                "`{name}` has {} dimension(s) and its input {}",
                array.extents.len(),
                dims.len()
            )));
        }
        for (extent, &dim) in array.extents.iter().zip(dims) {
            if let ([(param, 1)], c) = (
                extent.terms.iter().collect::<Vec<_>>().as_slice(),
                extent.constant,
            ) {
                let value = dim as i64 - c;
                match values.get(*param) {
                    Some(&v) if v != value => {
                        return Err(AffineError::general(format!(
                            "`{name}`'s input makes `{param}` = {value}, but it is {v} \
                             elsewhere"
                        )))
                    }
                    _ => {
                        values.insert((*param).clone(), value);
                    }
                }
            }
        }
    }
    for p in &program.params {
        if !values.contains_key(p) {
            return Err(AffineError::general(format!(
                "the parameter `{p}` is not fixed by any input's dimensions: give it with \
                 `--param {p}=N`"
            )));
        }
    }
    // Every input's dimensions must now match its extents exactly.
    for (name, dims) in inputs {
        let array = declared(program, name)?;
        for (extent, &dim) in array.extents.iter().zip(dims) {
            let want = extent.eval(&|n| values.get(n).copied());
            if want != Some(dim as i64) {
                return Err(AffineError::general(format!(
                    "`{name}` is declared with extent `{extent}` = {}, and its input has {dim}",
                    want.map_or("?".to_string(), |w| w.to_string())
                )));
            }
        }
    }
    Ok(values)
}

fn declared<'p>(program: &'p Program, name: &str) -> Result<&'p ArrayDecl, AffineError> {
    program.array(name).ok_or_else(|| {
        let names: Vec<&str> = program.arrays.iter().map(|a| a.name.as_str()).collect();
        AffineError::general(format!(
            "`{name}` is not an array of the program (arrays: {})",
            names.join(", ")
        ))
    })
}

/// The dense, row-major values of `coo` (duplicates summed).
pub fn dense_values(coo: &Coo) -> Result<Vec<f64>, AffineError> {
    let size = coo
        .dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&s| s <= 1 << 31)
        .ok_or_else(|| {
            AffineError::general(format!(
                "a dense array of dimensions {:?} is too large to hold",
                coo.dims
            ))
        })?;
    let mut out = vec![0.0; size];
    let order = coo.dims.len();
    for (e, v) in coo.values.iter().enumerate() {
        let mut at = 0usize;
        for (k, &d) in coo.dims.iter().enumerate() {
            at = at * d + coo.coords[e * order + k] as usize;
        }
        out[at] += v;
    }
    Ok(out)
}

/// The non-zero entries of dense row-major `values` of dimensions `dims`, as a
/// coordinate list.
pub fn coordinates(dims: &[usize], values: &[f64]) -> Coo {
    let mut coords = Vec::new();
    let mut kept = Vec::new();
    for (at, v) in values.iter().enumerate() {
        if *v != 0.0 {
            let start = coords.len();
            coords.resize(start + dims.len(), 0);
            let mut rest = at;
            for k in (0..dims.len()).rev() {
                coords[start + k] = (rest % dims[k]) as i64;
                rest /= dims[k];
            }
            kept.push(*v);
        }
    }
    Coo {
        dims: dims.to_vec(),
        coords,
        values: kept,
    }
}

/// The pattern of an array of `rank` dimensions that holds no non-zero.
pub fn empty_pattern(name: &str, rank: usize) -> String {
    let vars: Vec<String> = (0..rank).map(|d| format!("a{d}")).collect();
    format!("{{ {name}[{}] : false }}", vars.join(", "))
}

/// The pattern of a scalar holding `value`.
pub fn scalar_pattern(name: &str, value: f64) -> String {
    boxes_pattern(name, 0, &scalar_boxes(value))
}

/// The non-zero structure of the entries of `coo` (those stored with a non-zero value)
/// as boxes of density `threshold` (inclusive bounds per dimension): rectangles for a
/// matrix, intervals for a vector (covered as a one-row matrix), with the cover; None
/// for other orders, taken as dense (sound, with no gain).
pub fn boxes(coo: &Coo, threshold: f64) -> Result<Option<(Vec<Bounds>, Cover)>, AffineError> {
    let order = coo.dims.len();
    let nonzero = (0..coo.values.len()).filter(|&e| coo.values[e] != 0.0);
    let at = |e: usize, k: usize| coo.coords[e * order + k] as usize;
    let entries: Vec<(usize, usize)> = match order {
        1 => nonzero.map(|e| (0, at(e, 0))).collect(),
        2 => nonzero.map(|e| (at(e, 0), at(e, 1))).collect(),
        _ => return Ok(None),
    };
    let cover = boxes::cover(&entries, threshold).map_err(AffineError::general)?;
    let bounds = cover
        .boxes
        .iter()
        .map(|b| {
            let cols = (b.cols.0 as i64, b.cols.1 as i64);
            if order == 1 {
                vec![cols]
            } else {
                vec![(b.rows.0 as i64, b.rows.1 as i64), cols]
            }
        })
        .collect();
    Ok(Some((bounds, cover)))
}

/// The boxes of a scalar holding `value`: one if it is not zero.
pub fn scalar_boxes(value: f64) -> Vec<Bounds> {
    if value != 0.0 {
        vec![vec![(0, 0)]]
    } else {
        Vec::new()
    }
}

/// The union of `boxes` as a pattern of array `name` of `rank` dimensions (a scalar's
/// boxes are its pseudo-dimension: one box if it holds a non-zero).
pub fn boxes_pattern(name: &str, rank: usize, boxes: &[Bounds]) -> String {
    if boxes.is_empty() {
        return empty_pattern(name, rank);
    }
    let vars: Vec<String> = (0..rank).map(|d| format!("a{d}")).collect();
    let pieces: Vec<String> = boxes
        .iter()
        .map(|b| {
            let conditions: Vec<String> = b
                .iter()
                .zip(&vars)
                .map(|((lo, hi), v)| format!("{lo} <= {v} <= {hi}"))
                .collect();
            if conditions.is_empty() {
                format!("{name}[]")
            } else {
                format!("{name}[{}] : {}", vars.join(", "), conditions.join(" and "))
            }
        })
        .collect();
    format!("{{ {} }}", pieces.join("; "))
}

/// The non-zero structure of the entries of `coo` as a pattern of array `name` (see
/// [`boxes`]), with the cover when there is one.
pub fn pattern(
    name: &str,
    coo: &Coo,
    threshold: f64,
) -> Result<(String, Option<Cover>), AffineError> {
    Ok(match boxes(coo, threshold)? {
        Some((bounds, cover)) => (boxes_pattern(name, coo.dims.len(), &bounds), Some(cover)),
        None => (full_pattern(name, coo.dims.len()), None),
    })
}

/// The pattern of an array of `rank` dimensions taken as dense.
pub fn full_pattern(name: &str, rank: usize) -> String {
    let vars: Vec<String> = (0..rank).map(|d| format!("a{d}")).collect();
    format!("{{ {name}[{}] }}", vars.join(", "))
}

/// What the user gives an array: a tensor's entries, or a scalar's value.
pub enum Given<'a> {
    Tensor(&'a Coo),
    Scalar(f64),
}

/// The non-zero structure of a program's inputs, in every form the analysis and the
/// solution map take it.
#[derive(Default)]
pub struct Structure {
    /// Per array, in declaration order: the pattern the direct analysis takes.
    pub patterns: Vec<(String, String)>,
    /// The boxes of every array given (none for one taken as dense).
    pub boxes: BTreeMap<String, Vec<Bounds>>,
    /// The arrays nothing gives, which start as zeros: their (empty) patterns, which a
    /// solution map keeps fixed.
    pub zeros: Vec<(String, String)>,
    /// Per tensor given, its cover (None where taken as dense, with its order).
    pub covers: Vec<(String, Result<Cover, usize>)>,
}

/// The structure of the arrays `given` (by name; the others start as zeros), tensors
/// covered by boxes of density `threshold`.
pub fn structure(
    program: &Program,
    given: &BTreeMap<String, Given>,
    threshold: f64,
) -> Result<Structure, AffineError> {
    if let Some(name) = given.keys().find(|n| program.array(n).is_none()) {
        return Err(AffineError::general(format!(
            "`{name}` is not an array of the program"
        )));
    }
    let mut out = Structure::default();
    for decl in &program.arrays {
        let (name, rank) = (&decl.name, decl.extents.len());
        let found = match given.get(name) {
            Some(Given::Tensor(coo)) => match boxes(coo, threshold)? {
                Some((found, cover)) => {
                    out.covers.push((name.clone(), Ok(cover)));
                    Some(found)
                }
                None => {
                    out.covers.push((name.clone(), Err(coo.dims.len())));
                    None
                }
            },
            Some(Given::Scalar(x)) => Some(scalar_boxes(*x)),
            None => {
                out.zeros.push((name.clone(), empty_pattern(name, rank)));
                None
            }
        };
        let pattern = match &found {
            Some(found) => boxes_pattern(name, rank, found),
            None if !given.contains_key(name) => empty_pattern(name, rank),
            None => full_pattern(name, rank),
        };
        out.patterns.push((name.clone(), pattern));
        if let Some(found) = found {
            out.boxes.insert(name.clone(), found);
        }
    }
    Ok(out)
}
