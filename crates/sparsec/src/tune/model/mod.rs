//! The learned cost model (WACO, `../shared/spec/autotuning-waco.md` §3-4): it scores
//! (input, point) pairs so that a lower score predicts a faster kernel, and the search
//! measures only the points it ranks best.
//!
//! - [`pattern`]: the input as the net reads it (nonzero coordinates as sparse sites);
//! - [`encode`]: a point as a fixed-length vector;
//! - [`net`]: the network (candle): WACONet or an ablation, a schedule embedder, a head;
//! - [`train`]: the pairwise hinge ranking loss, training and held-out evaluation;
//! - [`ann`]: nearest-neighbour search over schedule embeddings (HNSW) with the predicted
//!   cost as the distance.
//!
//! A model is two files, `NAME.json` (what it was trained for, the standardization of the
//! global sizes, the points seen in training, the training report) and
//! `NAME.safetensors` (the weights). Models for SpMV, SpMM, SDDMM and MTTKRP ship inside the
//! library ([`CostModel::builtin`]).
//!
//! ```no_run
//! # use sparsec::tune::model::CostModel;
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let model = CostModel::builtin("y(i) = A(i,j) * x(j)").expect("shipped");
//! let input = model.prepare(&[4, 4], &[0, 0, 1, 1, 2, 2, 3, 3])?;
//! // Scores of points of the statement's space (lower: predicted faster).
//! # let points = Vec::new();
//! let scores = model.scores(&input, &points)?;
//! # let _ = scores; Ok(()) }
//! ```

pub mod ann;
pub mod encode;
pub mod net;
pub mod pattern;
pub mod train;

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use serde_json::{json, Value};

pub use encode::ScheduleEncoder;
pub use net::{Extractor, Net, PreparedInput};

use super::space::{Candidate, Point, Space};

/// Version tag of the model files.
const FILE_FORMAT: &str = "sparsec-cost-model/1";

/// Why a model cannot be made, read, written or used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The tensor library failed.
    #[error("cost model: {0}")]
    Tensor(#[from] candle_core::Error),
    /// An input the model cannot read.
    #[error("cost model: {0}")]
    Pattern(#[from] pattern::PatternError),
    /// A model file cannot be read or written.
    #[error("cost model file {path}: {why}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// The model was trained for another statement.
    #[error("this cost model was trained for `{trained}`, not for this statement ({why})")]
    Mismatch {
        /// The statement it was trained for.
        trained: String,
        /// What differs.
        why: String,
    },
}

/// A point as a model file keeps it: enough to rebuild it in any space of the statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoredPoint {
    /// Format spellings of the tuned tensors, in the space's order.
    pub formats: Vec<String>,
    /// The schedule text.
    pub schedule: String,
    /// Threads.
    pub threads: usize,
}

impl StoredPoint {
    /// The stored form of `point`.
    pub fn of(point: &Point) -> StoredPoint {
        StoredPoint {
            formats: point.formats.iter().map(|f| f.spelling()).collect(),
            schedule: point.schedule.clone(),
            threads: point.threads,
        }
    }

    /// The candidate of this point in `space`, if it is one there (its formats parse for
    /// the tensors and fit their sizes, its schedule applies, its threads are allowed).
    pub fn candidate(&self, space: &Space) -> Option<Candidate> {
        let statement = space.statement();
        if self.formats.len() != space.tuned().len()
            || !space.thread_counts().contains(&self.threads)
        {
            return None;
        }
        let formats = space
            .tuned()
            .iter()
            .zip(&self.formats)
            .map(|(&t, f)| crate::format::Format::parse(f, statement.tensors[t].dims.len()).ok())
            .collect::<Option<Vec<_>>>()?;
        // A point measured on a smaller input may store far too much on this one.
        if !space.fits(&formats) {
            return None;
        }
        space.candidate(formats, &self.schedule, self.threads).ok()
    }
}

/// What a model was trained for, and how it reads its inputs.
#[derive(Clone, Debug)]
pub struct ModelMeta {
    /// The statement, canonically spelled ([`statement_key`]).
    pub statement: String,
    /// The input feature extractor.
    pub extractor: Extractor,
    /// The points' encoder.
    pub encoder: ScheduleEncoder,
    /// Modes of the input the model reads (the statement's first sparse operand).
    pub input_order: usize,
    /// Mean of each global size over the training inputs.
    pub global_mean: Vec<f32>,
    /// Standard deviation of each global size over the training inputs.
    pub global_std: Vec<f32>,
    /// Every distinct point measured in training: the nearest-neighbour search's graph.
    pub points: Vec<StoredPoint>,
    /// The training report (inputs, epochs, losses, held-out figures).
    pub report: Value,
}

impl ModelMeta {
    fn to_json(&self) -> Value {
        let (vars, orders) = self.encoder.shape();
        json!({
            "format": FILE_FORMAT,
            "statement": self.statement,
            "extractor": self.extractor.name(),
            "vars": vars,
            "tuned_orders": orders,
            "input_order": self.input_order,
            "global_mean": self.global_mean,
            "global_std": self.global_std,
            "points": self.points.iter().map(|p| json!([p.formats, p.schedule, p.threads])).collect::<Vec<_>>(),
            "report": self.report,
        })
    }

    fn from_json(value: &Value) -> Option<ModelMeta> {
        if value.get("format")?.as_str()? != FILE_FORMAT {
            return None;
        }
        let strings = |v: &Value| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        let numbers = |v: &Value| -> Option<Vec<f32>> {
            v.as_array()?
                .iter()
                .map(|x| x.as_f64().map(|x| x as f32))
                .collect()
        };
        let orders = value
            .get("tuned_orders")?
            .as_array()?
            .iter()
            .map(|x| x.as_u64().map(|x| x as usize))
            .collect::<Option<Vec<_>>>()?;
        let points = value
            .get("points")?
            .as_array()?
            .iter()
            .map(|p| {
                Some(StoredPoint {
                    formats: strings(p.get(0)?)?,
                    schedule: p.get(1)?.as_str()?.to_string(),
                    threads: p.get(2)?.as_u64()? as usize,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ModelMeta {
            statement: value.get("statement")?.as_str()?.to_string(),
            extractor: Extractor::parse(value.get("extractor")?.as_str()?)?,
            encoder: ScheduleEncoder::from_shape(strings(value.get("vars")?)?, orders),
            input_order: value.get("input_order")?.as_u64()? as usize,
            global_mean: numbers(value.get("global_mean")?)?,
            global_std: numbers(value.get("global_std")?)?,
            points,
            report: value.get("report").cloned().unwrap_or(Value::Null),
        })
    }
}

/// A cost model: its description and its network.
pub struct CostModel {
    meta: ModelMeta,
    net: Net,
    vars: VarMap,
}

/// The models shipped with sparsec: (statement, description, weights).
const BUILTIN: [(&str, &[u8], &[u8]); 4] = [
    (
        "spmv",
        include_bytes!("../../../models/spmv.json"),
        include_bytes!("../../../models/spmv.safetensors"),
    ),
    (
        "spmm",
        include_bytes!("../../../models/spmm.json"),
        include_bytes!("../../../models/spmm.safetensors"),
    ),
    (
        "sddmm",
        include_bytes!("../../../models/sddmm.json"),
        include_bytes!("../../../models/sddmm.safetensors"),
    ),
    (
        "mttkrp",
        include_bytes!("../../../models/mttkrp.json"),
        include_bytes!("../../../models/mttkrp.safetensors"),
    ),
];

impl CostModel {
    /// A model with fresh random weights (drawn from `seed`).
    pub fn new(meta: ModelMeta, seed: u64) -> Result<CostModel, ModelError> {
        let device = Device::Cpu;
        let vars = VarMap::new();
        let vb = VarBuilder::from_varmap(&vars, DType::F32, &device);
        let net = Net::new(meta.extractor, meta.input_order, meta.encoder.width(), vb)?;
        initialize(&vars, seed)?;
        Ok(CostModel { meta, net, vars })
    }

    /// The model in `description` (a model's JSON) with the weights in `weights` (its
    /// safetensors bytes); `origin` names them in errors.
    pub fn from_bytes(
        description: &[u8],
        weights: &[u8],
        origin: &str,
    ) -> Result<CostModel, ModelError> {
        let bad = |why: String| ModelError::File {
            path: origin.to_string(),
            why,
        };
        let value: Value =
            serde_json::from_slice(description).map_err(|e| bad(format!("not JSON: {e}")))?;
        let meta = ModelMeta::from_json(&value)
            .ok_or_else(|| bad(format!("not a {FILE_FORMAT} description")))?;
        let model = CostModel::new(meta, 0)?;
        let stored = candle_core::safetensors::load_buffer(weights, &Device::Cpu)
            .map_err(|e| bad(format!("unreadable weights: {e}")))?;
        let vars = model.vars.data().lock().expect("not poisoned");
        // In name order, so that a file missing several weights always names the same one.
        let mut names: Vec<&String> = vars.keys().collect();
        names.sort();
        for name in names {
            let var = &vars[name];
            let tensor = stored
                .get(name)
                .ok_or_else(|| bad(format!("no weights for `{name}`")))?;
            if tensor.shape() != var.shape() {
                return Err(bad(format!(
                    "`{name}` has shape {:?}, the network needs {:?}",
                    tensor.shape(),
                    var.shape()
                )));
            }
            var.set(tensor)?;
        }
        drop(vars);
        Ok(model)
    }

    /// The model stored at `stem.json` and `stem.safetensors`.
    pub fn load(stem: &Path) -> Result<CostModel, ModelError> {
        // A model steers the schedules chosen: only files no one else may write.
        let read = |ext: &str| {
            let path = stem.with_extension(ext);
            let file = |why: String| ModelError::File {
                path: path.display().to_string(),
                why,
            };
            let meta = std::fs::metadata(&path).map_err(|e| file(e.to_string()))?;
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            let dir = dir.unwrap_or(Path::new("."));
            crate::trust::existing_private_dir(dir).map_err(|e| file(e.to_string()))?;
            let mut opened = crate::trust::open_private(&path).ok_or_else(|| {
                file(format!(
                    "it is a symbolic link, or others may write it (owner {}, mode {:03o})",
                    std::os::unix::fs::MetadataExt::uid(&meta),
                    std::os::unix::fs::MetadataExt::mode(&meta) & 0o777
                ))
            })?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut opened, &mut bytes).map_err(|e| file(e.to_string()))?;
            Ok::<Vec<u8>, ModelError>(bytes)
        };
        CostModel::from_bytes(
            &read("json")?,
            &read("safetensors")?,
            &stem.display().to_string(),
        )
    }

    /// Write the model to `stem.json` and `stem.safetensors`.
    pub fn save(&self, stem: &Path) -> Result<(), ModelError> {
        let json_path = stem.with_extension("json");
        let text = serde_json::to_string_pretty(&self.meta.to_json()).expect("serializable");
        std::fs::write(&json_path, text + "\n").map_err(|e| ModelError::File {
            path: json_path.display().to_string(),
            why: e.to_string(),
        })?;
        let weights = stem.with_extension("safetensors");
        self.vars.save(&weights).map_err(|e| ModelError::File {
            path: weights.display().to_string(),
            why: e.to_string(),
        })
    }

    /// The shipped model of the statement `expr` (any tensor and variable names), if one
    /// ships.
    pub fn builtin(expr: &str) -> Option<CostModel> {
        let key = statement_key(expr);
        BUILTIN.iter().find_map(|(name, description, weights)| {
            let model = CostModel::from_bytes(description, weights, name).ok()?;
            (model.meta.statement == key).then_some(model)
        })
    }

    /// What the model was trained for.
    pub fn meta(&self) -> &ModelMeta {
        &self.meta
    }

    /// Record `report` (what training and evaluation found) in the model's description.
    pub fn set_report(&mut self, report: Value) {
        self.meta.report = report;
    }

    pub(crate) fn net(&self) -> &Net {
        &self.net
    }

    pub(crate) fn vars(&self) -> &VarMap {
        &self.vars
    }

    /// Check that the model reads `space`'s points: the same variables and tuned tensors.
    pub fn check_space(&self, space: &Space) -> Result<(), ModelError> {
        let orders: Vec<usize> = space
            .tuned()
            .iter()
            .map(|&t| space.statement().tensors[t].dims.len())
            .collect();
        let here = ScheduleEncoder::new(space.statement(), orders);
        if here.shape() != self.meta.encoder.shape() {
            return Err(ModelError::Mismatch {
                trained: self.meta.statement.clone(),
                why: format!(
                    "variables and tuned tensors' orders {:?}, the model's {:?}",
                    here.shape(),
                    self.meta.encoder.shape()
                ),
            });
        }
        Ok(())
    }

    /// The input with entries at `coords` (flattened, `dims.len()` per entry) as the
    /// model reads it.
    pub fn prepare(&self, dims: &[usize], coords: &[i64]) -> Result<PreparedInput, ModelError> {
        if dims.len() != self.meta.input_order {
            return Err(ModelError::Mismatch {
                trained: self.meta.statement.clone(),
                why: format!(
                    "its input has {} modes, this one {}",
                    self.meta.input_order,
                    dims.len()
                ),
            });
        }
        PreparedInput::new(
            self.meta.extractor,
            dims,
            coords,
            &self.meta.global_mean,
            &self.meta.global_std,
        )
    }

    /// The encodings of `points`, `n × width`.
    fn encoded(&self, points: &[&Point]) -> Result<Tensor, ModelError> {
        let width = self.meta.encoder.width();
        let flat: Vec<f32> = points
            .iter()
            .flat_map(|p| self.meta.encoder.encode(p))
            .collect();
        Ok(Tensor::from_vec(flat, (points.len(), width), &Device::Cpu)?)
    }

    /// Scores of `points` on `input` (lower: predicted faster).
    pub fn scores(&self, input: &PreparedInput, points: &[Point]) -> Result<Vec<f32>, ModelError> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        let refs: Vec<&Point> = points.iter().collect();
        let (embedded, schedules) = self.embeddings(input, &refs)?;
        Ok(self.net.score(&embedded, &schedules)?.to_vec1::<f32>()?)
    }

    /// The input's embedding and the points' schedule embeddings, what scoring and the
    /// graph search both start from.
    fn embeddings(
        &self,
        input: &PreparedInput,
        points: &[&Point],
    ) -> Result<(Tensor, Tensor), ModelError> {
        let embedded = self.net.embed_input(input)?;
        let schedules = self.net.embed_schedules(&self.encoded(points)?)?;
        Ok((embedded, schedules))
    }
}

/// Draw every weight from `seed` (candle's CPU generator cannot be seeded): biases zero,
/// other parameters Kaiming-normal over their fan-in (a sparse kernel's rows, a linear
/// layer's columns, a dense kernel's input channels times its taps).
fn initialize(vars: &VarMap, seed: u64) -> Result<(), ModelError> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let data = vars.data().lock().expect("not poisoned");
    let mut names: Vec<&String> = data.keys().collect();
    names.sort();
    for name in names {
        let var = &data[name];
        let dims = var.dims().to_vec();
        let count: usize = dims.iter().product();
        let values: Vec<f32> = if name.ends_with("bias") {
            vec![0.0; count]
        } else {
            let fan_in = if name.ends_with("kernel") {
                dims[0]
            } else {
                dims[1..].iter().product()
            };
            let stdev = (2.0 / fan_in.max(1) as f64).sqrt();
            (0..count)
                .map(|_| {
                    // Box-Muller.
                    let (u, v): (f64, f64) = (rng.gen_range(1e-12..1.0), rng.gen());
                    (stdev * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
                })
                .collect()
        };
        var.set(&Tensor::from_vec(values, dims, &Device::Cpu)?)?;
    }
    Ok(())
}

/// `expr` spelled canonically: blanks dropped, tensors renamed `T0, T1, …` and index
/// variables `i0, i1, …` in order of appearance, so that statements that differ only in
/// names share a model.
pub fn statement_key(expr: &str) -> String {
    let chars: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut tensors: Vec<String> = Vec::new();
    let mut vars: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut k = 0;
    while k < chars.len() {
        if chars[k].is_alphabetic() || chars[k] == '_' {
            let start = k;
            while k < chars.len() && (chars[k].is_alphanumeric() || chars[k] == '_') {
                k += 1;
            }
            let name: String = chars[start..k].iter().collect();
            let (names, prefix) = if chars.get(k) == Some(&'(') {
                (&mut tensors, 'T')
            } else {
                (&mut vars, 'i')
            };
            let n = names.iter().position(|x| *x == name).unwrap_or_else(|| {
                names.push(name);
                names.len() - 1
            });
            out.push_str(&format!("{prefix}{n}"));
        } else {
            out.push(chars[k]);
            k += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_differing_only_in_names_share_a_key() {
        assert_eq!(
            statement_key("y(i) = A(i,j) * x(j)"),
            statement_key("out(r)=M(r, c)*v(c)")
        );
        assert_ne!(
            statement_key("y(i) = A(i,j) * x(j)"),
            statement_key("y(j) = A(i,j) * x(i)")
        );
    }
}
