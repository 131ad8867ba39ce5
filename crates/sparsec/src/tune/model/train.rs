//! Training with the pairwise hinge ranking loss, and evaluation on held-out inputs.
//!
//! Each step takes one training input and up to [`TrainOptions::batch`] of its measured
//! points, scores them, and penalises every pair ranked against its measured order by less
//! than a margin of one: `max(0, 1 - (score(slower) - score(faster)))` (WACO §3.7). Pairs
//! whose runtimes differ by less than [`NOISE`] are left out: on a shared machine such a
//! difference is noise, not an order to learn.

use candle_core::{Device, Tensor};
use candle_nn::Optimizer;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::super::space::Point;
use super::{CostModel, ModelError, ModelMeta, PreparedInput, StoredPoint};

/// Relative runtime difference below which two measurements are not ordered.
pub const NOISE: f64 = 0.03;

/// One measured point of a training input.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The point.
    pub point: Point,
    /// Its median runtime in seconds; infinite when it ran past the time cap.
    pub runtime: f64,
}

/// A training (or evaluation) input: its entries and its measured points.
#[derive(Clone, Debug)]
pub struct TrainInput {
    /// Its name in the dataset.
    pub name: String,
    /// Dimensions.
    pub dims: Vec<usize>,
    /// Entries' coordinates, flattened.
    pub coords: Vec<i64>,
    /// Measured points.
    pub samples: Vec<Sample>,
}

/// How a model trains.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Passes over the training inputs.
    pub epochs: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// Points per step (WACO's 32).
    pub batch: usize,
    /// Seed of the initial weights and of the batches.
    pub seed: u64,
}

impl Default for TrainOptions {
    fn default() -> TrainOptions {
        TrainOptions {
            epochs: 60,
            learning_rate: 1e-3,
            batch: 32,
            seed: 0,
        }
    }
}

/// Whether the input named `name` is held out of training: decided by a hash of the name
/// of the input it was derived from (before `~`), so that an augmented variant of a
/// held-out input is held out too, and about one input in five is.
pub fn held_out(name: &str) -> bool {
    let base = name.split('~').next().unwrap_or(name);
    blake3::hash(base.as_bytes()).as_bytes()[0].is_multiple_of(5)
}

/// The standardization of the global sizes over `inputs`: each size's mean and standard
/// deviation.
fn standardization(inputs: &[TrainInput]) -> (Vec<f32>, Vec<f32>) {
    let all: Vec<Vec<f32>> = inputs
        .iter()
        .map(|i| super::pattern::globals(&i.dims, i.coords.len() / i.dims.len().max(1)))
        .collect();
    let n = all.len().max(1) as f32;
    let mean: Vec<f32> = (0..super::pattern::GLOBALS)
        .map(|k| all.iter().map(|g| g[k]).sum::<f32>() / n)
        .collect();
    let std: Vec<f32> = (0..super::pattern::GLOBALS)
        .map(|k| {
            let var = all.iter().map(|g| (g[k] - mean[k]).powi(2)).sum::<f32>() / n;
            var.sqrt().max(1e-3)
        })
        .collect();
    (mean, std)
}

/// Pairs `(faster, slower)` of `runtimes` that differ by more than [`NOISE`].
fn ordered_pairs(runtimes: &[f64]) -> Vec<(u32, u32)> {
    let mut pairs = Vec::new();
    for a in 0..runtimes.len() {
        for b in 0..runtimes.len() {
            let (ta, tb) = (runtimes[a], runtimes[b]);
            if ta.is_finite() && tb > ta * (1.0 + NOISE) {
                pairs.push((a as u32, b as u32));
            }
        }
    }
    pairs
}

/// What one epoch reports.
pub struct Epoch {
    /// Its number, from 1.
    pub epoch: usize,
    /// Mean hinge loss over its steps.
    pub loss: f64,
}

/// Train a model of `meta` (whose standardization and points this fills in) on `inputs`.
pub fn train(
    mut meta: ModelMeta,
    inputs: &[TrainInput],
    options: &TrainOptions,
    mut progress: impl FnMut(&Epoch),
) -> Result<CostModel, ModelError> {
    let (mean, std) = standardization(inputs);
    meta.global_mean = mean;
    meta.global_std = std;
    let mut seen = std::collections::HashSet::new();
    meta.points = inputs
        .iter()
        .flat_map(|i| &i.samples)
        .map(|s| StoredPoint::of(&s.point))
        .filter(|p| seen.insert(p.clone()))
        .collect();
    let model = CostModel::new(meta, options.seed)?;
    let prepared: Vec<PreparedInput> = inputs
        .iter()
        .map(|i| model.prepare(&i.dims, &i.coords))
        .collect::<Result<_, _>>()?;
    // Each input's points encoded once, one row of `width` per sample.
    let width = model.meta.encoder.width();
    let encoded: Vec<Vec<f32>> = inputs
        .iter()
        .map(|i| {
            i.samples
                .iter()
                .flat_map(|s| model.meta.encoder.encode(&s.point))
                .collect()
        })
        .collect();
    let mut optimizer = candle_nn::AdamW::new(
        model.vars().all_vars(),
        candle_nn::ParamsAdamW {
            lr: options.learning_rate,
            weight_decay: 0.0,
            ..Default::default()
        },
    )?;
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    for epoch in 1..=options.epochs {
        order.shuffle(&mut rng);
        let (mut total, mut steps) = (0.0, 0usize);
        for &k in &order {
            let mut chosen: Vec<usize> = (0..inputs[k].samples.len()).collect();
            chosen.shuffle(&mut rng);
            chosen.truncate(options.batch);
            let runtimes: Vec<f64> = chosen
                .iter()
                .map(|&s| inputs[k].samples[s].runtime)
                .collect();
            let pairs = ordered_pairs(&runtimes);
            if pairs.is_empty() {
                continue;
            }
            let flat: Vec<f32> = chosen
                .iter()
                .flat_map(|&s| encoded[k][s * width..(s + 1) * width].iter().copied())
                .collect();
            let batch = Tensor::from_vec(flat, (chosen.len(), width), &Device::Cpu)?;
            let net = model.net();
            let scores = net.score(
                &net.embed_input(&prepared[k])?,
                &net.embed_schedules(&batch)?,
            )?;
            let faster: Vec<u32> = pairs.iter().map(|p| p.0).collect();
            let slower: Vec<u32> = pairs.iter().map(|p| p.1).collect();
            let n = pairs.len();
            let faster = scores.index_select(&Tensor::from_vec(faster, n, &Device::Cpu)?, 0)?;
            let slower = scores.index_select(&Tensor::from_vec(slower, n, &Device::Cpu)?, 0)?;
            // max(0, 1 - (slower - faster))
            let loss = (faster - slower)?.affine(1.0, 1.0)?.relu()?.mean_all()?;
            optimizer.backward_step(&loss)?;
            total += loss.to_scalar::<f32>()? as f64;
            steps += 1;
        }
        progress(&Epoch {
            epoch,
            loss: total / steps.max(1) as f64,
        });
    }
    Ok(model)
}

/// How well a model ranks one input's measured points.
#[derive(Clone, Debug)]
pub struct InputScore {
    /// The input.
    pub name: String,
    /// Points measured (that ran within the cap).
    pub points: usize,
    /// Spearman's rank correlation of the scores and the runtimes.
    pub spearman: f64,
    /// Runtime of the best-scored point over the fastest measured, minus one.
    pub top1_regret: f64,
    /// Runtime of the fastest of the ten best-scored points over the fastest, minus one.
    pub top10_regret: f64,
}

/// Ranks of `values` (0 = smallest), ties sharing their mean rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut out = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let mean = (start + end - 1) as f64 / 2.0;
        for &k in &order[start..end] {
            out[k] = mean;
        }
        start = end;
    }
    out
}

/// Spearman's rank correlation of `a` and `b` (0 when either is constant).
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    if va == 0.0 || vb == 0.0 {
        0.0
    } else {
        cov / (va * vb).sqrt()
    }
}

/// Score `model` on each of `inputs` with at least three points that ran within the cap.
pub fn evaluate(model: &CostModel, inputs: &[TrainInput]) -> Result<Vec<InputScore>, ModelError> {
    let mut out = Vec::new();
    for input in inputs {
        let ran: Vec<&Sample> = input
            .samples
            .iter()
            .filter(|s| s.runtime.is_finite())
            .collect();
        if ran.len() < 3 {
            continue;
        }
        let prepared = model.prepare(&input.dims, &input.coords)?;
        let points: Vec<Point> = ran.iter().map(|s| s.point.clone()).collect();
        let scores: Vec<f64> = model
            .scores(&prepared, &points)?
            .into_iter()
            .map(f64::from)
            .collect();
        let runtimes: Vec<f64> = ran.iter().map(|s| s.runtime).collect();
        let best = runtimes.iter().copied().fold(f64::INFINITY, f64::min);
        let mut by_score: Vec<usize> = (0..ran.len()).collect();
        by_score.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
        let best_of = |k: usize| {
            by_score[..k.min(by_score.len())]
                .iter()
                .map(|&i| runtimes[i])
                .fold(f64::INFINITY, f64::min)
        };
        out.push(InputScore {
            name: input.name.clone(),
            points: ran.len(),
            spearman: spearman(&scores, &runtimes),
            top1_regret: best_of(1) / best - 1.0,
            top10_regret: best_of(10) / best - 1.0,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_orders_and_ties() {
        assert!((spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), 0.0);
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), vec![1.5, 0.0, 1.5]);
    }

    #[test]
    fn pairs_skip_noise_and_order_timeouts_last() {
        let pairs = ordered_pairs(&[1.0, 1.01, 2.0, f64::INFINITY]);
        assert!(pairs.contains(&(0, 2)) && pairs.contains(&(1, 2)));
        assert!(pairs.contains(&(2, 3)) && pairs.contains(&(0, 3)));
        assert!(!pairs.contains(&(0, 1)) && !pairs.contains(&(1, 0)));
        assert!(!pairs.iter().any(|&(a, _)| a == 3));
    }

    #[test]
    fn held_out_follows_the_base_input() {
        for name in ["cage10", "bcsstk13", "powerlaw:8@20000"] {
            assert_eq!(held_out(name), held_out(&format!("{name}~x2")));
        }
    }
}
