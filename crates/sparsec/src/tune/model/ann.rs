//! The model-guided search (WACO §4): an HNSW graph over the candidate points' schedule
//! embeddings, built with the L2 distance, then walked toward lower predicted cost for one
//! input; the top K are measured and the fastest kept.
//!
//! `hnsw_rs` takes one distance function for building and querying. Items and queries
//! differ in length (a query is the input's embedding with one padding value), so
//! [`CostDistance`] is L2 between two items and the model's head, made positive by a
//! softplus that keeps its order, between a query and an item: WACO's patched `space_ip`.

use std::time::{Duration, Instant};

use candle_core::Tensor;
use hnsw_rs::prelude::{Distance, Hnsw};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::super::measure::Measurer;
use super::super::search::{self, Limits, Progress, Tuned};
use super::super::space::{Candidate, Draw, Point, Space};
use super::net::{DenseLayer, EMBEDDING};
use super::{CostModel, ModelError};

/// Neighbours per node, construction width and search width (WACO's hnswlib settings).
const CONNECTIONS: usize = 32;
const EF_CONSTRUCTION: usize = 200;
const EF_SEARCH: usize = 200;

/// Random points of the input's own space added to the points seen in training, so that
/// the search is not limited to what training happened to measure.
pub const FRESH_POINTS: usize = 400;

/// L2 between items; the head's predicted cost between a query and an item.
pub struct CostDistance {
    head: Vec<DenseLayer>,
}

impl CostDistance {
    fn cost(&self, input: &[f32], schedule: &[f32]) -> f32 {
        let mut x: Vec<f32> = input.iter().chain(schedule).copied().collect();
        for (l, layer) in self.head.iter().enumerate() {
            let mut y: Vec<f32> = layer.bias.clone();
            for (o, out) in y.iter_mut().enumerate() {
                let row = &layer.weights[o * layer.inputs..(o + 1) * layer.inputs];
                *out += row.iter().zip(&x).map(|(w, v)| w * v).sum::<f32>();
            }
            if l + 1 < self.head.len() {
                y.iter_mut().for_each(|v| *v = v.max(0.0));
            }
            x = y;
        }
        x[0]
    }
}

impl Distance<f32> for CostDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        if a.len() == b.len() {
            return a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f32>()
                .sqrt();
        }
        let (query, item) = if a.len() > b.len() { (a, b) } else { (b, a) };
        let cost = self.cost(&query[..EMBEDDING], item);
        // softplus: positive, as hnsw_rs requires, and increasing, so the order is kept.
        if cost > 20.0 {
            cost
        } else {
            cost.exp().ln_1p()
        }
    }
}

/// Indices of the `k` points (rows of `schedules`, `n × EMBEDDING`) of lowest predicted
/// cost on the input embedded as `input` (`1 × EMBEDDING`), best first.
fn nearest(
    model: &CostModel,
    input: &Tensor,
    schedules: &Tensor,
    k: usize,
) -> Result<Vec<usize>, ModelError> {
    let rows: Vec<Vec<f32>> = schedules.to_vec2::<f32>()?;
    if rows.is_empty() || k == 0 {
        return Ok(Vec::new());
    }
    let distance = CostDistance {
        head: model.net().head_weights()?,
    };
    let layers = 16.min((rows.len() as f32).ln().ceil().max(1.0) as usize);
    let graph: Hnsw<f32, CostDistance> =
        Hnsw::new(CONNECTIONS, rows.len(), layers, EF_CONSTRUCTION, distance);
    for (id, row) in rows.iter().enumerate() {
        graph.insert((row.as_slice(), id));
    }
    let mut query: Vec<f32> = input.flatten_all()?.to_vec1::<f32>()?;
    query.push(0.0);
    let found = graph.search(&query, k.min(rows.len()), EF_SEARCH.max(k));
    Ok(found.into_iter().map(|n| n.d_id).collect())
}

/// The model-guided search: score the points seen in training that are valid here and
/// [`FRESH_POINTS`] random ones, measure the `top` best by the HNSW search within `budget`,
/// and keep the fastest (sparsec's default included). The tuning time counts the model's
/// work (reading the input, drawing and scoring the points) as well as the measurements.
pub fn search(
    space: &Space,
    measurer: &Measurer,
    model: &CostModel,
    top: usize,
    budget: Duration,
    seed: u64,
    progress: impl FnMut(&Progress),
) -> Result<Tuned, crate::Error> {
    let started = Instant::now();
    let failed = |e: ModelError| crate::Error::Tune(e.to_string());
    model.check_space(space).map_err(failed)?;
    let Some(&input_tensor) = space.tuned().iter().find(|&&t| t > 0) else {
        return Err(crate::Error::Tune(
            "the model reads a sparse operand, and this statement has none".into(),
        ));
    };
    let coo = measurer.inputs()[input_tensor - 1].to_coo();
    let prepared = model.prepare(&coo.dims, &coo.coords).map_err(failed)?;
    let mut candidates: Vec<Candidate> = model
        .meta()
        .points
        .iter()
        .filter_map(|p| p.candidate(space))
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    candidates.extend((0..FRESH_POINTS).filter_map(|_| space.sample(&mut rng, Draw::Everything)));
    let mut keys = std::collections::HashSet::new();
    candidates.retain(|c| keys.insert(c.point.key()));
    let points: Vec<&Point> = candidates.iter().map(|c| &c.point).collect();
    let best = self::top(model, &prepared, &points, top).map_err(failed)?;
    let mut slots: Vec<Option<Candidate>> = candidates.into_iter().map(Some).collect();
    let chosen = best.into_iter().filter_map(|k| slots[k].take());
    let limits = Limits {
        budget: budget.saturating_sub(started.elapsed()),
        candidates: Some(top),
    };
    let mut tuned = search::measure_candidates(space, measurer, chosen, limits, progress)?;
    tuned.tuning_time = started.elapsed() + measurer.reference_time();
    Ok(tuned)
}

/// Indices of the `k` of `points` of lowest predicted cost on `input`, best first, by the
/// HNSW search over their schedule embeddings.
pub fn top(
    model: &CostModel,
    input: &super::PreparedInput,
    points: &[&Point],
    k: usize,
) -> Result<Vec<usize>, ModelError> {
    if points.is_empty() {
        return Ok(Vec::new());
    }
    let (embedded, schedules) = model.embeddings(input, points)?;
    nearest(model, &embedded, &schedules, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_apart_by_l2_and_queries_by_a_positive_order_keeping_cost() {
        // A head that scores the schedule's first component: cost = s0.
        let mut first = vec![0.0f32; 2 * EMBEDDING];
        first[EMBEDDING] = 1.0;
        let distance = CostDistance {
            head: vec![DenseLayer {
                weights: first,
                bias: vec![0.0],
                inputs: 2 * EMBEDDING,
            }],
        };
        let a = vec![0.0f32; EMBEDDING];
        let mut b = vec![0.0f32; EMBEDDING];
        b[0] = 3.0;
        b[1] = 4.0;
        assert_eq!(distance.eval(&a, &b), 5.0);
        let query = vec![0.0f32; EMBEDDING + 1];
        let mut c = b.clone();
        c[0] = -3.0;
        let (high, low) = (distance.eval(&query, &b), distance.eval(&c, &query));
        assert!(low > 0.0 && low < high);
    }
}
