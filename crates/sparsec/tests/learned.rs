//! The learned cost model (feature `learned`): it learns a ranking that depends on the
//! input's nonzero pattern, which the global sizes alone cannot tell; its files round-trip
//! and bad ones are refused with the reason; the HNSW search finds the points of lowest
//! predicted cost; the shipped models load; and the search it guides computes correctly.
#![cfg(feature = "learned")]

mod common;

use std::time::Duration;

use rand::SeedableRng;
use sparsec::kernel::Backend;
use sparsec::tensor::Coo;
use sparsec::tune::model::train::{self, Sample, TrainInput, TrainOptions};
use sparsec::tune::model::{
    ann, statement_key, CostModel, Extractor, ModelError, ModelMeta, ScheduleEncoder, StoredPoint,
};
use sparsec::tune::{self, Draw, MeasureOptions, Measurer, Point, Space};

use common::{random_coo, rng, statement};

const SPMV: &str = "y(i) = A(i,j) * x(j)";
const SIDE: usize = 64;

/// Nonzeros of every test matrix: 26 blocks of 4x4.
const NONZEROS: usize = 26 * 16;

/// A matrix of dense 4x4 blocks, or one with as many nonzeros scattered at random: the
/// same sizes, so only the pattern tells them apart.
fn matrix(blocky: bool, seed: u64) -> Coo {
    use rand::Rng;
    let mut r = rng(seed);
    let mut coo = Coo::empty(vec![SIDE, SIDE]);
    let mut taken = std::collections::HashSet::new();
    while coo.values.len() < NONZEROS {
        if blocky {
            let (bi, bj) = (r.gen_range(0..SIDE / 4), r.gen_range(0..SIDE / 4));
            if !taken.insert((bi, bj)) {
                continue;
            }
            for e in 0..16 {
                coo.coords
                    .extend([(bi * 4 + e / 4) as i64, (bj * 4 + e % 4) as i64]);
                coo.values.push(1.0);
            }
        } else {
            let (i, j) = (r.gen_range(0..SIDE), r.gen_range(0..SIDE));
            if taken.insert((i, j)) {
                coo.coords.extend([i as i64, j as i64]);
                coo.values.push(1.0);
            }
        }
    }
    coo
}

fn space_of(coo: &Coo) -> (Space, Vec<sparsec::tensor::Tensor>) {
    let x = random_coo(&mut rng(1), &[SIDE], 1.0);
    let (stmt, tensors) = statement(SPMV, &[("A", "csr")], &[("A", coo.clone()), ("x", x)], &[]);
    (tune::space_of(&stmt, &tensors, 2), tensors)
}

fn is_blocked(point: &Point) -> bool {
    point.formats[0].spelling().starts_with("bcsr")
}

/// An input whose planted runtimes make blocked formats fast on blocks and slow on
/// scattered nonzeros, every other point in between.
fn planted(blocky: bool, seed: u64) -> TrainInput {
    let coo = matrix(blocky, seed);
    let (space, _) = space_of(&coo);
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let mut samples: Vec<Sample> = Vec::new();
    while samples.len() < 24 {
        let point = space.sample(&mut r, Draw::Everything).unwrap().point;
        // Half of the points blocked, so that every batch has both kinds.
        if is_blocked(&point) != samples.len().is_multiple_of(2) {
            continue;
        }
        let runtime = match (is_blocked(&point), blocky) {
            (true, true) => 0.5,
            (true, false) => 3.0,
            (false, _) => 1.0,
        };
        samples.push(Sample { point, runtime });
    }
    TrainInput {
        name: format!("{}{seed}", if blocky { "blocky" } else { "scattered" }),
        dims: coo.dims.clone(),
        coords: coo.coords.clone(),
        samples,
    }
}

fn meta(extractor: Extractor) -> ModelMeta {
    let coo = matrix(false, 0);
    let (space, _) = space_of(&coo);
    ModelMeta {
        statement: statement_key(SPMV),
        extractor,
        encoder: ScheduleEncoder::new(space.statement(), vec![2]),
        input_order: 2,
        global_mean: Vec::new(),
        global_std: Vec::new(),
        points: Vec::new(),
        report: serde_json::Value::Null,
    }
}

fn mean_spearman(model: &CostModel, inputs: &[TrainInput]) -> f64 {
    let scores = train::evaluate(model, inputs).unwrap();
    assert_eq!(scores.len(), inputs.len());
    scores.iter().map(|s| s.spearman).sum::<f64>() / scores.len() as f64
}

/// Which formats win depends on the pattern, not on the sizes: WACONet reads the
/// coordinates and ranks held-out inputs of both kinds; the hand-made features (the
/// sizes, equal for both kinds) cannot.
#[test]
fn waconet_learns_a_ranking_that_only_the_pattern_tells() {
    let training: Vec<TrainInput> = (0..12)
        .map(|k: u64| planted(k.is_multiple_of(2), 100 + k))
        .collect();
    let held: Vec<TrainInput> = (0..4)
        .map(|k: u64| planted(k.is_multiple_of(2), 200 + k))
        .collect();
    let options = TrainOptions {
        epochs: 40,
        ..Default::default()
    };
    let mut losses = Vec::new();
    let waconet = train::train(meta(Extractor::WacoNet), &training, &options, |e| {
        losses.push(e.loss)
    })
    .unwrap();
    assert!(losses.last().unwrap() < &(losses[0] * 0.5), "{losses:?}");
    let handmade = train::train(meta(Extractor::Handmade), &training, &options, |_| {}).unwrap();
    let (learned, sizes_only) = (
        mean_spearman(&waconet, &held),
        mean_spearman(&handmade, &held),
    );
    assert!(learned > 0.8, "WACONet's held-out Spearman {learned}");
    assert!(
        sizes_only < learned - 0.3,
        "sizes only {sizes_only}, WACONet {learned}"
    );
    // Every training point is kept for the search's graph.
    assert!(waconet.meta().points.len() > 100);
}

/// A saved model loads with the same scores; a file that is not a model, or whose weights
/// do not fit its network, is refused with the reason.
#[test]
fn model_files_round_trip_and_bad_ones_are_refused() {
    let training = vec![planted(true, 1), planted(false, 2)];
    let options = TrainOptions {
        epochs: 2,
        ..Default::default()
    };
    let mut trained = Vec::new();
    for extractor in [Extractor::WacoNet, Extractor::Handmade, Extractor::DenseCnn] {
        let model = train::train(meta(extractor), &training, &options, |_| {}).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("m");
        model.save(&stem).unwrap();
        let loaded = CostModel::load(&stem).unwrap();
        let points: Vec<Point> = training[0]
            .samples
            .iter()
            .map(|s| s.point.clone())
            .collect();
        let input = &training[0];
        let a = model
            .scores(&model.prepare(&input.dims, &input.coords).unwrap(), &points)
            .unwrap();
        let b = loaded
            .scores(
                &loaded.prepare(&input.dims, &input.coords).unwrap(),
                &points,
            )
            .unwrap();
        assert_eq!(a, b, "{extractor:?}");
        assert_eq!(loaded.meta().points, model.meta().points);

        std::fs::write(stem.with_extension("json"), "{\"format\": 3}").unwrap();
        let err = CostModel::load(&stem).err().unwrap();
        assert!(matches!(err, ModelError::File { .. }), "{err}");
        assert!(
            err.to_string().contains("not a sparsec-cost-model/1"),
            "{err}"
        );
        trained.push(model);
    }
    let (model, other) = (&trained[0], &trained[1]);
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("m");
    model.save(&stem).unwrap();
    let other_stem = dir.path().join("other");
    other.save(&other_stem).unwrap();
    // WACONet's description with the hand-made model's weights.
    std::fs::copy(
        other_stem.with_extension("safetensors"),
        stem.with_extension("safetensors"),
    )
    .unwrap();
    let err = CostModel::load(&stem).err().unwrap();
    assert!(err.to_string().contains("no weights for"), "{err}");
    // An input of another order, and a statement of other variables.
    assert!(model.prepare(&[4, 4, 4], &[0, 0, 0]).is_err());
    let (stmt, tensors) = statement(
        "y(i) = A(i,j,k) * x(k)",
        &[("A", "sss")],
        &[
            ("A", random_coo(&mut rng(3), &[4, 4, 4], 0.3)),
            ("x", random_coo(&mut rng(4), &[4], 1.0)),
        ],
        &[],
    );
    let err = model
        .check_space(&tune::space_of(&stmt, &tensors, 2))
        .err()
        .unwrap();
    assert!(matches!(err, ModelError::Mismatch { .. }), "{err}");
}

/// The HNSW walk with the predicted cost as its distance finds most of the points an
/// exhaustive scoring ranks best.
#[test]
fn the_graph_search_finds_the_lowest_predicted_costs() {
    let training = vec![planted(true, 5), planted(false, 6)];
    let options = TrainOptions {
        epochs: 3,
        ..Default::default()
    };
    let model = train::train(meta(Extractor::WacoNet), &training, &options, |_| {}).unwrap();
    let coo = matrix(true, 7);
    let (space, _) = space_of(&coo);
    let mut r = rand::rngs::StdRng::seed_from_u64(9);
    let mut points: Vec<Point> = Vec::new();
    let mut keys = std::collections::HashSet::new();
    while points.len() < 400 {
        let p = space.sample(&mut r, Draw::Everything).unwrap().point;
        if keys.insert(p.key()) {
            points.push(p);
        }
    }
    let input = model.prepare(&coo.dims, &coo.coords).unwrap();
    let scores = model.scores(&input, &points).unwrap();
    let mut exhaustive: Vec<usize> = (0..points.len()).collect();
    exhaustive.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let refs: Vec<&Point> = points.iter().collect();
    let found = ann::top(&model, &input, &refs, 10).unwrap();
    assert_eq!(found.len(), 10);
    let hits = found
        .iter()
        .filter(|k| exhaustive[..10].contains(k))
        .count();
    assert!(hits >= 8, "{hits} of the exhaustive top 10");
    // The best found is the best there is, or within the top 10.
    assert!(exhaustive[..10].contains(&found[0]));
}

/// The shipped models load, answer to their statements under any names, and recorded how
/// they did on held-out inputs; the model-guided search measures few candidates, each
/// checked against the reference.
#[test]
fn shipped_models_guide_a_correct_search() {
    let spmv = CostModel::builtin("out(r) = M(r,c) * v(c)").expect("SpMV ships");
    assert!(spmv.meta().points.len() > 100);
    assert!(spmv.meta().report["held_out"]["inputs"].as_u64().unwrap() > 0);
    let spmm = CostModel::builtin("C(i,j) = A(i,k) * B(k,j)").expect("SpMM ships");
    assert!(spmm.meta().report["held_out"]["inputs"].as_u64().unwrap() > 0);
    let sddmm = CostModel::builtin("S(r,c) = P(r,c) * U(r,f) * V(f,c)").expect("SDDMM ships");
    assert!(sddmm.meta().report["held_out"]["inputs"].as_u64().unwrap() > 0);
    let mttkrp = CostModel::builtin("Y(u,r) = T(u,v,w) * P(v,r) * Q(w,r)").expect("MTTKRP ships");
    assert!(mttkrp.meta().report["held_out"]["inputs"].as_u64().unwrap() > 0);
    assert!(CostModel::builtin("y(i) = A(i,j) * A(i,j)").is_none());
    // A point measured in training on a small input is not a candidate where its formats
    // would store far more than this input: dense rows and columns over a hypersparse
    // 200,000 x 200,000 matrix.
    let stored = StoredPoint {
        formats: vec!["dense".into()],
        schedule: String::new(),
        threads: 1,
    };
    let hypersparse = Coo::new(vec![200_000, 200_000], vec![5, 7, 9, 11], vec![1.0, 2.0]).unwrap();
    let x = random_coo(&mut rng(2), &[200_000], 1.0);
    let (stmt, tensors) = statement(SPMV, &[("A", "csr")], &[("A", hypersparse), ("x", x)], &[]);
    assert!(stored
        .candidate(&tune::space_of(&stmt, &tensors, 1))
        .is_none());
    let (small, _) = space_of(&matrix(false, 3));
    let fitting = StoredPoint {
        threads: 2,
        ..stored
    };
    assert!(fitting.candidate(&small).is_some());

    for blocky in [true, false] {
        let coo = matrix(blocky, 11);
        let (space, tensors) = space_of(&coo);
        let options = MeasureOptions {
            repeats: 1,
            min_timed: Duration::ZERO,
            cap: Duration::from_millis(50),
            backend: Backend::Jit,
            ..MeasureOptions::default()
        };
        let measurer = Measurer::new(&space, tensors, options).unwrap();
        let tuned = ann::search(
            &space,
            &measurer,
            &spmv,
            5,
            Duration::from_secs(60),
            0,
            |_| {},
        )
        .unwrap();
        assert!(tuned.failures.is_empty(), "{:?}", tuned.failures);
        assert!(tuned.measured <= 6);
        assert!(tuned.best_measurement.runtime <= tuned.default_measurement.runtime);
    }
}
