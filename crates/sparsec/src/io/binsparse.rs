//! binsparse, the sparse tensor interchange format, in its HDF5 form: a group whose
//! `binsparse` attribute holds the JSON descriptor and whose datasets hold the arrays
//! (`pointers_to_K`, `indices_K`, `values`).
//!
//! The descriptor's levels (`dense`, `sparse` of some rank, `element`) are sparsec levels:
//! a dense level of rank r is r dense levels, a sparse level of rank 1 a compressed level,
//! one of rank r > 1 a compressed level with duplicates followed by r - 1 singleton levels
//! (COO); `transpose` is the mode ordering. Every sparsec format made of those levels is
//! written, under its binsparse name when it has one (DVEC, DMAT, DMATC, CVEC, CSR, CSC,
//! DCSR, DCSC, COO, COOC) and as a `custom` descriptor otherwise (CSF, `sd`, `dss:2,0,1`,
//! ...). Hashed, bytemap, blocked, ELL and DIA levels have no binsparse descriptor: writing
//! them is an error that says so.
//!
//! Reading accepts every named format and custom descriptor, index arrays of any integer
//! type, values of any real type (`iso[...]` included; stored as `f64`, or `f32` for
//! `float32` files), and entries in any order with duplicates (summed, as when reading
//! any coordinate list). Files are written with `"version": "0.1.0"`; `0.1` is read too.

use std::path::Path;

use hdf5::types::{FloatSize, IntSize, TypeDescriptor, VarLenAscii, VarLenUnicode};
use serde_json::{json, Map, Value};

use super::IoError;
use crate::format::{Compressed, Dense, Format, IndexArray, Level, Singleton};
use crate::ir::ArrayKind;
use crate::tensor::{Coo, Tensor, ValueType, Values};

/// The version written in descriptors.
pub const BINSPARSE_VERSION: &str = "0.1.0";

/// One level of a binsparse descriptor (the `element` level that ends every descriptor is
/// implicit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BinsparseLevel {
    Dense { rank: usize },
    Sparse { rank: usize },
}

/// A binsparse layout: levels, outermost first, and the mode stored at each storage
/// position (`None`: the identity).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Layout {
    levels: Vec<BinsparseLevel>,
    transpose: Option<Vec<usize>>,
}

const D: BinsparseLevel = BinsparseLevel::Dense { rank: 1 };
const S: BinsparseLevel = BinsparseLevel::Sparse { rank: 1 };

/// The formats binsparse names, with their layouts.
fn named_layouts() -> [(&'static str, Layout); 12] {
    let layout = |levels: &[BinsparseLevel], transposed: bool| Layout {
        levels: levels.to_vec(),
        transpose: transposed.then(|| vec![1, 0]),
    };
    let coo = BinsparseLevel::Sparse { rank: 2 };
    [
        ("DVEC", layout(&[D], false)),
        ("DMAT", layout(&[D, D], false)),
        ("DMATR", layout(&[D, D], false)),
        ("DMATC", layout(&[D, D], true)),
        ("CVEC", layout(&[S], false)),
        ("CSR", layout(&[D, S], false)),
        ("CSC", layout(&[D, S], true)),
        ("DCSR", layout(&[S, S], false)),
        ("DCSC", layout(&[S, S], true)),
        ("COO", layout(&[coo], false)),
        ("COOR", layout(&[coo], false)),
        ("COOC", layout(&[coo], true)),
    ]
}

/// The binsparse layout of `format`, or why it has none.
fn layout_of(format: &Format) -> Result<Layout, String> {
    let unsupported = |what: &str| {
        format!(
            "binsparse has no layout for {what} (format `{}`); write a format of dense and \
             compressed levels (csr, csc, coo, dcsr, dcsc, csf, dense, ...)",
            format.spelling()
        )
    };
    let mode_order = format
        .mode_order()
        .ok_or_else(|| unsupported("blocked, ELL or DIA levels"))?;
    let mut levels = Vec::new();
    let specs = format.levels();
    let mut k = 0;
    while k < specs.len() {
        let level = &specs[k].format;
        match level.name() {
            "dense" => levels.push(D),
            "compressed" => {
                // A compressed level and the singleton levels under it store one tuple of
                // coordinates per entry: a sparse level of that rank.
                let singletons = specs[k + 1..]
                    .iter()
                    .take_while(|s| s.format.name() == "singleton")
                    .count();
                levels.push(BinsparseLevel::Sparse {
                    rank: 1 + singletons,
                });
                k += singletons;
            }
            name => return Err(unsupported(&format!("{name} levels"))),
        }
        k += 1;
    }
    let identity = (0..mode_order.len()).collect::<Vec<_>>();
    Ok(Layout {
        levels,
        transpose: (mode_order != identity).then_some(mode_order),
    })
}

/// The sparsec format of a binsparse layout: dense levels, compressed levels for sparse
/// levels of rank 1, COO-like levels for higher ranks.
fn format_of(layout: &Layout, order: usize) -> Result<Format, String> {
    let mut levels: Vec<Level> = Vec::new();
    for level in &layout.levels {
        match *level {
            BinsparseLevel::Dense { rank } => levels.extend((0..rank).map(|_| Dense::level())),
            BinsparseLevel::Sparse { rank: 1 } => levels.push(Compressed::level(true, true)),
            BinsparseLevel::Sparse { rank } => {
                levels.push(Compressed::level(true, false));
                levels.extend((2..rank).map(|_| Singleton::level(true, false)));
                levels.push(Singleton::level(true, true));
            }
        }
    }
    if levels.len() != order {
        return Err(format!(
            "the descriptor's levels store {} dimensions, but the shape has {order}",
            levels.len()
        ));
    }
    let mode_order = layout
        .transpose
        .clone()
        .unwrap_or_else(|| (0..order).collect());
    Format::with_mode_order(levels, &mode_order).map_err(|e| format!("transpose: {e}"))
}

fn level_json(levels: &[BinsparseLevel]) -> Value {
    match levels.split_first() {
        None => json!({ "level_desc": "element" }),
        Some((BinsparseLevel::Dense { rank }, rest)) => {
            json!({ "level_desc": "dense", "rank": rank, "level": level_json(rest) })
        }
        Some((BinsparseLevel::Sparse { rank }, rest)) => {
            json!({ "level_desc": "sparse", "rank": rank, "level": level_json(rest) })
        }
    }
}

fn parse_levels(mut desc: &Value) -> Result<Vec<BinsparseLevel>, String> {
    let mut levels = Vec::new();
    loop {
        let kind = desc
            .get("level_desc")
            .and_then(Value::as_str)
            .ok_or("every custom level needs a `level_desc` string")?;
        if kind == "element" {
            return Ok(levels);
        }
        let rank = desc
            .get("rank")
            .and_then(Value::as_u64)
            .filter(|r| (1..=64).contains(r))
            .ok_or_else(|| format!("the {kind} level needs a `rank` from 1 to 64"))?
            as usize;
        levels.push(match kind {
            "dense" => BinsparseLevel::Dense { rank },
            "sparse" => BinsparseLevel::Sparse { rank },
            other => return Err(format!("unknown level_desc `{other}`")),
        });
        desc = desc
            .get("level")
            .ok_or_else(|| format!("the {kind} level needs a `level`"))?;
    }
}

/// The layout a descriptor describes.
fn parse_layout(desc: &Map<String, Value>) -> Result<Layout, String> {
    let name = desc
        .get("format")
        .and_then(Value::as_str)
        .ok_or("the descriptor has no `format` string")?;
    if name != "custom" {
        return named_layouts()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, layout)| layout)
            .ok_or_else(|| format!("unknown binsparse format `{name}`"));
    }
    let custom = desc
        .get("custom")
        .ok_or("a custom format needs a `custom` object")?;
    let levels = parse_levels(custom.get("level").ok_or("`custom` needs a `level`")?)?;
    let transpose = match custom.get("transpose") {
        None | Some(Value::Null) => None,
        Some(Value::Array(modes)) => Some(
            modes
                .iter()
                .map(|m| m.as_u64().map(|m| m as usize))
                .collect::<Option<Vec<_>>>()
                .ok_or("`transpose` must list dimensions")?,
        ),
        Some(_) => return Err("`transpose` must be an array".into()),
    };
    Ok(Layout { levels, transpose })
}

/// Write `tensor` to the binsparse HDF5 file `path` (replacing it).
pub fn write_binsparse(path: impl AsRef<Path>, tensor: &Tensor) -> Result<(), IoError> {
    let path = path.as_ref();
    let layout = layout_of(tensor.format()).map_err(|m| IoError::invalid(path, m))?;
    let h5 = |e: hdf5::Error| IoError::invalid(path, format!("HDF5: {e}"));
    let file = hdf5::File::create(path).map_err(h5)?;
    let mut data_types = Map::new();
    // Each index array is written at the width it is stored with.
    let mut write_indices = |name: String, array: &IndexArray| -> Result<(), IoError> {
        let builder = file.new_dataset_builder();
        let (created, data_type) = match array {
            IndexArray::I32(a) => (builder.with_data(a).create(name.as_str()), "int32"),
            IndexArray::I64(a) => (builder.with_data(a).create(name.as_str()), "int64"),
        };
        created.map_err(h5)?;
        data_types.insert(name, json!(data_type));
        Ok(())
    };
    let no_array = IndexArray::default();
    for (k, (spec, storage)) in tensor
        .format()
        .levels()
        .iter()
        .zip(tensor.levels())
        .enumerate()
    {
        let array = |kind| storage.array(kind).unwrap_or(&no_array);
        match spec.format.name() {
            "compressed" if k > 0 => {
                write_indices(format!("pointers_to_{k}"), array(ArrayKind::Pos))?;
                write_indices(format!("indices_{k}"), array(ArrayKind::Idx))?;
            }
            "compressed" | "singleton" => {
                write_indices(format!("indices_{k}"), array(ArrayKind::Idx))?
            }
            _ => {}
        }
    }
    let values = file.new_dataset_builder();
    let values = match tensor.values() {
        Values::F64(v) => {
            data_types.insert("values".into(), json!("float64"));
            values.with_data(v.as_slice()).create("values")
        }
        Values::F32(v) => {
            data_types.insert("values".into(), json!("float32"));
            values.with_data(v.as_slice()).create("values")
        }
    };
    values.map_err(h5)?;
    let mut desc = Map::new();
    desc.insert("version".into(), json!(BINSPARSE_VERSION));
    // binsparse's fill value: one value of the values' type, flagged by `"fill": true`.
    if tensor.fill().to_bits() != 0f64.to_bits() {
        let fill = file.new_dataset_builder();
        match tensor.values() {
            Values::F64(_) => fill.with_data(&[tensor.fill()]).create("fill_value"),
            Values::F32(_) => fill.with_data(&[tensor.fill() as f32]).create("fill_value"),
        }
        .map_err(h5)?;
        desc.insert("fill".into(), json!(true));
        data_types.insert("fill_value".into(), data_types["values"].clone());
    }
    match named_layouts().iter().find(|(_, l)| *l == layout) {
        Some((name, _)) => {
            desc.insert("format".into(), json!(name));
        }
        None => {
            let mut custom = Map::new();
            custom.insert("level".into(), level_json(&layout.levels));
            if let Some(t) = &layout.transpose {
                custom.insert("transpose".into(), json!(t));
            }
            desc.insert("format".into(), json!("custom"));
            desc.insert("custom".into(), Value::Object(custom));
        }
    }
    desc.insert("shape".into(), json!(tensor.dims()));
    desc.insert(
        "number_of_stored_values".into(),
        json!(tensor.stored_values()),
    );
    desc.insert("data_types".into(), Value::Object(data_types));
    let text = json!({ "binsparse": Value::Object(desc) }).to_string();
    let text: VarLenUnicode = text
        .parse()
        .map_err(|e| IoError::invalid(path, format!("descriptor: {e}")))?;
    file.new_attr::<VarLenUnicode>()
        .create("binsparse")
        .and_then(|a| a.write_scalar(&text))
        .map_err(h5)
}

/// Read the binsparse HDF5 file `path` into a tensor in the format its descriptor names.
pub fn read_binsparse(path: impl AsRef<Path>) -> Result<Tensor, IoError> {
    let path = path.as_ref();
    let file = hdf5::File::open(path).map_err(|e| IoError::invalid(path, format!("HDF5: {e}")))?;
    Reader { file: &file }
        .read()
        .map_err(|m| IoError::invalid(path, m))
}

struct Reader<'a> {
    file: &'a hdf5::File,
}

/// A dataset's contents: indices widened to `i64`, values to `f64` (or kept `f32`).
enum Data {
    Int(Vec<i64>),
    F64(Vec<f64>),
    F32(Vec<f32>),
}

impl Reader<'_> {
    fn descriptor(&self) -> Result<Map<String, Value>, String> {
        let attr = self
            .file
            .attr("binsparse")
            .map_err(|_| "not a binsparse file: no `binsparse` attribute".to_string())?;
        let text = match attr.dtype().and_then(|t| t.to_descriptor()) {
            Ok(TypeDescriptor::VarLenUnicode) => attr
                .read_scalar::<VarLenUnicode>()
                .map(|s| s.as_str().to_string()),
            Ok(TypeDescriptor::VarLenAscii) => attr
                .read_scalar::<VarLenAscii>()
                .map(|s| s.as_str().to_string()),
            Ok(other) => {
                return Err(format!(
                    "the `binsparse` attribute is a {other:?}, not a string"
                ))
            }
            Err(e) => return Err(format!("HDF5: {e}")),
        }
        .map_err(|e| format!("HDF5: {e}"))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| format!("the binsparse descriptor is not JSON: {e}"))?;
        match json.get("binsparse") {
            Some(Value::Object(desc)) => Ok(desc.clone()),
            _ => Err("the descriptor has no `binsparse` object".into()),
        }
    }

    fn dataset(&self, name: &str) -> Result<Data, String> {
        let ds = self
            .file
            .dataset(name)
            .map_err(|_| format!("the dataset `{name}` is missing"))?;
        if ds.ndim() > 1 {
            return Err(format!("the dataset `{name}` is not one-dimensional"));
        }
        let err = |e: hdf5::Error| format!("dataset `{name}`: {e}");
        let ty = ds.dtype().and_then(|t| t.to_descriptor()).map_err(err)?;
        let ints = |v: Vec<i64>| Data::Int(v);
        Ok(match ty {
            TypeDescriptor::Integer(IntSize::U1) => ints(
                ds.read_raw::<i8>()
                    .map_err(err)?
                    .into_iter()
                    .map(i64::from)
                    .collect(),
            ),
            TypeDescriptor::Integer(IntSize::U2) => ints(
                ds.read_raw::<i16>()
                    .map_err(err)?
                    .into_iter()
                    .map(i64::from)
                    .collect(),
            ),
            TypeDescriptor::Integer(IntSize::U4) => ints(
                ds.read_raw::<i32>()
                    .map_err(err)?
                    .into_iter()
                    .map(i64::from)
                    .collect(),
            ),
            TypeDescriptor::Integer(IntSize::U8) => ints(ds.read_raw::<i64>().map_err(err)?),
            TypeDescriptor::Unsigned(IntSize::U1) | TypeDescriptor::Boolean => ints(
                ds.read_raw::<u8>()
                    .map_err(err)?
                    .into_iter()
                    .map(i64::from)
                    .collect(),
            ),
            TypeDescriptor::Unsigned(IntSize::U2) => ints(
                ds.read_raw::<u16>()
                    .map_err(err)?
                    .into_iter()
                    .map(i64::from)
                    .collect(),
            ),
            TypeDescriptor::Unsigned(IntSize::U4) => ints(
                ds.read_raw::<u32>()
                    .map_err(err)?
                    .into_iter()
                    .map(i64::from)
                    .collect(),
            ),
            TypeDescriptor::Unsigned(IntSize::U8) => ints(
                ds.read_raw::<u64>()
                    .map_err(err)?
                    .into_iter()
                    .map(|v| {
                        i64::try_from(v).map_err(|_| format!("`{name}` holds {v}, beyond int64"))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            TypeDescriptor::Float(FloatSize::U8) => Data::F64(ds.read_raw::<f64>().map_err(err)?),
            TypeDescriptor::Float(FloatSize::U4) => Data::F32(ds.read_raw::<f32>().map_err(err)?),
            other => {
                return Err(format!(
                    "the dataset `{name}` has unsupported type {other:?}"
                ))
            }
        })
    }

    fn indices(&self, name: &str) -> Result<Vec<i64>, String> {
        match self.dataset(name)? {
            Data::Int(v) => Ok(v),
            _ => Err(format!(
                "`{name}` holds floating-point numbers, not indices"
            )),
        }
    }

    fn read(&self) -> Result<Tensor, String> {
        let desc = self.descriptor()?;
        let version = desc
            .get("version")
            .and_then(Value::as_str)
            .ok_or("the descriptor has no `version` string")?;
        if !(version == "0.1" || version.starts_with("0.1.")) {
            return Err(format!(
                "binsparse version {version} is not supported (this build reads 0.1)"
            ));
        }
        let layout = parse_layout(&desc)?;
        let dims = desc
            .get("shape")
            .and_then(Value::as_array)
            .and_then(|s| {
                s.iter()
                    .map(|d| {
                        d.as_u64()
                            .filter(|&d| d <= i64::MAX as u64)
                            .map(|d| d as usize)
                    })
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or("the descriptor needs a `shape` of non-negative integers")?;
        let stored = desc
            .get("number_of_stored_values")
            .and_then(Value::as_u64)
            .ok_or("the descriptor needs `number_of_stored_values`")?;
        let types = desc
            .get("data_types")
            .and_then(Value::as_object)
            .ok_or("the descriptor needs a `data_types` object")?;
        let fill = if desc.get("fill") == Some(&Value::Bool(true)) {
            let fill: Vec<f64> = match self.dataset("fill_value")? {
                Data::Int(v) => v.into_iter().map(|x| x as f64).collect(),
                Data::F64(v) => v,
                Data::F32(v) => v.into_iter().map(f64::from).collect(),
            };
            match fill[..] {
                [x] => x,
                _ => {
                    return Err(format!(
                        "`fill_value` must hold exactly one value, not {}",
                        fill.len()
                    ))
                }
            }
        } else {
            0.0
        };
        let format = format_of(&layout, dims.len())?;
        let value_type = match types.get("values").and_then(Value::as_str) {
            Some(t) if t.starts_with("complex") => {
                return Err("complex values are not supported".into())
            }
            Some("float32") | Some("iso[float32]") => ValueType::F32,
            Some(_) => ValueType::F64,
            None => return Err("`data_types` has no entry for `values`".into()),
        };
        let iso = types
            .get("values")
            .and_then(Value::as_str)
            .is_some_and(|t| t.starts_with("iso["));
        let values: Vec<f64> = match self.dataset("values")? {
            Data::Int(v) => v.into_iter().map(|x| x as f64).collect(),
            Data::F64(v) => v,
            Data::F32(v) => v.into_iter().map(f64::from).collect(),
        };
        let values = if iso {
            match values.as_slice() {
                [x] => vec![*x; usize::try_from(stored).map_err(|_| "too many values")?],
                _ => return Err("an iso value array must hold exactly one value".into()),
            }
        } else {
            values
        };
        if values.len() as u64 != stored {
            return Err(format!(
                "`values` holds {} values, but number_of_stored_values is {stored}",
                values.len()
            ));
        }
        let coo = self.entries(&layout, &dims, values)?;
        Tensor::from_coo_filled(coo, &format, value_type, fill).map_err(|e| e.to_string())
    }

    /// The entries the levels store, in storage order, as a coordinate list.
    fn entries(&self, layout: &Layout, dims: &[usize], values: Vec<f64>) -> Result<Coo, String> {
        let order = dims.len();
        let mode_of = |depth: usize| {
            layout
                .transpose
                .as_ref()
                .map_or(Some(depth), |t| t.get(depth).copied())
                .filter(|&m| m < order)
                .ok_or_else(|| format!("`transpose` does not name a dimension for level {depth}"))
        };
        if dims.contains(&0) {
            // No component exists; the arrays are empty or describe nothing.
            if values.is_empty() {
                return Ok(Coo::empty(dims.to_vec()));
            }
            return Err(format!(
                "the shape {dims:?} has no components, but {} values are stored",
                values.len()
            ));
        }
        // Positions of the current level, each with the storage coordinates above it.
        let mut count: usize = 1;
        let mut prefix: Vec<i64> = Vec::new();
        let mut depth = 0;
        // Dense levels multiply the positions; they cannot exceed what the file stores: the
        // values, or the pointers of a sparse level below them.
        let limit = (0..dims.len())
            .filter_map(|d| self.file.dataset(&format!("pointers_to_{d}")).ok())
            .map(|ds| ds.size())
            .fold(values.len(), usize::max);
        for level in &layout.levels {
            match *level {
                BinsparseLevel::Dense { rank } => {
                    let sizes = (depth..depth + rank)
                        .map(|d| mode_of(d).map(|m| dims[m]))
                        .collect::<Result<Vec<_>, _>>()?;
                    let block = sizes.iter().try_fold(1usize, |n, &s| n.checked_mul(s));
                    let next = block
                        .and_then(|b| b.checked_mul(count))
                        .filter(|&n| n <= limit);
                    let (Some(block), Some(next)) = (block, next) else {
                        return Err(
                            "the dense levels address more positions than values are stored".into(),
                        );
                    };
                    let mut expanded = Vec::with_capacity(next * (depth + rank));
                    for p in 0..count {
                        for q in 0..block {
                            expanded.extend_from_slice(&prefix[p * depth..(p + 1) * depth]);
                            let mut rest = q;
                            let mut coords = vec![0i64; rank];
                            for (c, &s) in coords.iter_mut().zip(&sizes).rev() {
                                *c = (rest % s) as i64;
                                rest /= s;
                            }
                            expanded.extend_from_slice(&coords);
                        }
                    }
                    prefix = expanded;
                    count = next;
                }
                BinsparseLevel::Sparse { rank } => {
                    let indices = (depth..depth + rank)
                        .map(|d| self.indices(&format!("indices_{d}")))
                        .collect::<Result<Vec<_>, _>>()?;
                    let nnz = indices[0].len();
                    if indices.iter().any(|a| a.len() != nnz) {
                        return Err(format!(
                            "the indices arrays of the sparse level at dimension {depth} differ in length"
                        ));
                    }
                    let pointers = if depth == 0 {
                        vec![0, nnz as i64]
                    } else {
                        self.indices(&format!("pointers_to_{depth}"))?
                    };
                    if pointers.len() != count + 1
                        || pointers[0] != 0
                        || pointers[count] as u64 != nnz as u64
                        || pointers.windows(2).any(|w| w[0] > w[1])
                    {
                        return Err(format!(
                            "pointers_to_{depth} must hold {} non-decreasing offsets from 0 to {nnz}",
                            count + 1
                        ));
                    }
                    let mut expanded = Vec::with_capacity(nnz * (depth + rank));
                    for p in 0..count {
                        for e in pointers[p] as usize..pointers[p + 1] as usize {
                            expanded.extend_from_slice(&prefix[p * depth..(p + 1) * depth]);
                            expanded.extend(indices.iter().map(|a| a[e]));
                        }
                    }
                    prefix = expanded;
                    count = nnz;
                }
            }
            depth += match *level {
                BinsparseLevel::Dense { rank } | BinsparseLevel::Sparse { rank } => rank,
            };
        }
        if count != values.len() {
            return Err(format!(
                "the levels address {count} values, but {} are stored",
                values.len()
            ));
        }
        // Storage coordinates to logical ones.
        let modes = (0..order).map(mode_of).collect::<Result<Vec<_>, _>>()?;
        let mut coords = vec![0i64; count * order];
        for e in 0..count {
            for (d, &m) in modes.iter().enumerate() {
                coords[e * order + m] = prefix[e * order + d];
            }
        }
        Coo::new(dims.to_vec(), coords, values).map_err(|e| e.to_string())
    }
}
