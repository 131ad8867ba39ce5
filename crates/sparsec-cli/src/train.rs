//! `sparsec tune train`: train a cost model on a dataset that `sparsec tune collect` wrote,
//! and report how it ranks the measured points of held-out inputs.
//!
//! The inputs are rebuilt from the same arguments the collection was given (files,
//! augmentation, families, seed), so the dataset need not hold their coordinates. Inputs
//! derived from one original are held out together (`tune::model::train::held_out`).

use std::path::PathBuf;

#[cfg(not(feature = "learned"))]
use miette::{miette, Result};

use crate::collect::InputArgs;

/// Train a cost model.
#[derive(clap::Args, Debug, Clone)]
pub struct TrainArgs {
    /// The statement and inputs, as given to `collect`.
    #[command(flatten)]
    pub inputs: InputArgs,
    /// A dataset (JSON lines) that `sparsec tune collect` wrote; repeat for more (a
    /// point of an input measured in two files counts once, as first read).
    #[arg(long, value_name = "FILE", required = true)]
    pub dataset: Vec<PathBuf>,
    /// Where to write the model: STEM.json and STEM.safetensors.
    #[arg(long, value_name = "STEM")]
    pub out: PathBuf,
    /// The input feature extractor: `waconet`, or the ablations `handmade` (global sizes
    /// only) and `dense-cnn` (a CNN over a 256x256 image).
    #[arg(long, default_value = "waconet")]
    pub extractor: String,
    /// Passes over the training inputs.
    #[arg(long, default_value_t = 60)]
    pub epochs: usize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub learning_rate: f64,
    /// Seed of the initial weights and of the batches.
    #[arg(long, default_value_t = 0)]
    pub train_seed: u64,
}

/// Run `sparsec tune train`.
#[cfg(not(feature = "learned"))]
pub fn train(_: &TrainArgs) -> Result<()> {
    Err(miette!(
        help = "build sparsec with `cargo build --features learned`",
        "sparsec tune train: built without the `learned` feature"
    ))
}

#[cfg(feature = "learned")]
pub use learned::{model_for, train};

#[cfg(feature = "learned")]
mod learned {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    use miette::{miette, IntoDiagnostic, Result, WrapErr};

    use super::TrainArgs;

    /// The model at `stem`, or the one shipped for `expr`.
    pub fn model_for(expr: &str, stem: Option<&Path>) -> Result<sparsec::tune::model::CostModel> {
        use sparsec::tune::model::CostModel;
        match stem {
            Some(stem) => CostModel::load(stem).map_err(|e| miette!("{e}")),
            None => CostModel::builtin(expr).ok_or_else(|| {
                miette!(
                    help = "train one with `sparsec tune collect` and `sparsec tune train`, \
                            and pass it with --model",
                    "no cost model ships for `{expr}`"
                )
            }),
        }
    }

    /// One dataset record: the point's formats by tensor, schedule, threads, and runtime
    /// (infinite past the cap).
    struct Record {
        formats: HashMap<String, String>,
        schedule: String,
        threads: usize,
        runtime: f64,
    }

    /// The measured records of the datasets by input; records of points that could not run
    /// (unfit formats, failures) are left out, and a point of an input already read (from
    /// an earlier file or line) is not read again.
    fn read_datasets(paths: &[PathBuf]) -> Result<HashMap<String, Vec<Record>>> {
        let mut out: HashMap<String, Vec<Record>> = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for path in paths {
            read_dataset(path, &mut seen, &mut out)?;
        }
        Ok(out)
    }

    fn read_dataset(
        path: &Path,
        seen: &mut std::collections::HashSet<(String, String)>,
        out: &mut HashMap<String, Vec<Record>>,
    ) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .into_diagnostic()
            .wrap_err_with(|| format!("cannot read {}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |why: &str| miette!("{}:{}: {why}", path.display(), n + 1);
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(&format!("not JSON: {e}")))?;
            let field = |name: &str| value.get(name).ok_or_else(|| bad(&format!("no `{name}`")));
            let input = field("input")?
                .as_str()
                .ok_or_else(|| bad("`input` is not a string"))?;
            let runtime = match field("status")?.as_str() {
                Some("ok") => field("runtime_s")?
                    .as_f64()
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .ok_or_else(|| bad("`runtime_s` is not a positive number"))?,
                Some("timed_out") => f64::INFINITY,
                Some(_) => continue,
                None => return Err(bad("`status` is not a string")),
            };
            let point = field("point")?;
            if !seen.insert((input.to_string(), point.to_string())) {
                continue;
            }
            let formats = point
                .get("formats")
                .and_then(|f| f.as_object())
                .ok_or_else(|| bad("`point.formats` is not an object"))?
                .iter()
                .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect::<Option<HashMap<_, _>>>()
                .ok_or_else(|| bad("a format is not a string"))?;
            let record = Record {
                formats,
                schedule: point
                    .get("schedule")
                    .and_then(|s| s.as_str())
                    .ok_or_else(|| bad("`point.schedule` is not a string"))?
                    .to_string(),
                threads: point
                    .get("threads")
                    .and_then(|t| t.as_u64())
                    .filter(|&t| t > 0)
                    .ok_or_else(|| bad("`point.threads` is not a positive integer"))?
                    as usize,
                runtime,
            };
            out.entry(input.to_string()).or_default().push(record);
        }
        Ok(())
    }

    /// Run `sparsec tune train`.
    pub fn train(args: &TrainArgs) -> Result<()> {
        use indicatif::{ProgressBar, ProgressStyle};
        use serde_json::json;
        use sparsec::tune::model::train::{self as learn, Sample, TrainInput, TrainOptions};
        use sparsec::tune::model::{
            statement_key, Extractor, ModelMeta, ScheduleEncoder, StoredPoint,
        };

        let extractor = Extractor::parse(&args.extractor).ok_or_else(|| {
            miette!(
                "--extractor {}: expected waconet, handmade or dense-cnn",
                args.extractor
            )
        })?;
        let template =
            crate::spec::Problem::new(&args.inputs.expr, &args.inputs.spec, &args.inputs.generate)?;
        let tensor = crate::collect::collected_tensor(&args.inputs, &template)?;
        let order = template.tensors[tensor].1;
        let dataset = read_datasets(&args.dataset)?;
        let inputs = crate::collect::gather_inputs(&args.inputs, order)?;
        let mut training = Vec::new();
        let mut held = Vec::new();
        let mut encoder = None;
        for input in &inputs {
            let Some(records) = dataset.get(&input.name) else {
                continue;
            };
            let (statement, tensors) = crate::collect::bind_input(&args.inputs, tensor, input)?;
            let threads = records.iter().map(|r| r.threads).max().unwrap_or(1);
            let space = sparsec::tune::space_of(&statement, &tensors, threads);
            let names: Vec<(String, usize)> = space
                .tuned()
                .iter()
                .map(|&t| {
                    let decl = &statement.tensors[t];
                    (decl.name.clone(), decl.dims.len())
                })
                .collect();
            encoder.get_or_insert_with(|| {
                ScheduleEncoder::new(&statement, names.iter().map(|n| n.1).collect())
            });
            let samples: Vec<Sample> = records
                .iter()
                .filter_map(|r| {
                    let stored = StoredPoint {
                        formats: names
                            .iter()
                            .map(|(name, _)| r.formats.get(name).cloned())
                            .collect::<Option<Vec<_>>>()?,
                        schedule: r.schedule.clone(),
                        threads: r.threads,
                    };
                    Some(Sample {
                        point: stored.candidate(&space)?.point,
                        runtime: r.runtime,
                    })
                })
                .collect();
            let entry = TrainInput {
                name: input.name.clone(),
                dims: input.coo.dims.clone(),
                coords: input.coo.coords.clone(),
                samples,
            };
            if learn::held_out(&input.name) {
                held.push(entry);
            } else {
                training.push(entry);
            }
        }
        let Some(encoder) = encoder else {
            return Err(miette!(
                "the datasets hold no record of these inputs; give the arguments the collection had"
            ));
        };
        let meta = ModelMeta {
            statement: statement_key(&args.inputs.expr),
            extractor,
            encoder,
            input_order: order,
            global_mean: Vec::new(),
            global_std: Vec::new(),
            points: Vec::new(),
            report: serde_json::Value::Null,
        };
        let options = TrainOptions {
            epochs: args.epochs,
            learning_rate: args.learning_rate,
            seed: args.train_seed,
            ..Default::default()
        };
        let bar = ProgressBar::new(args.epochs as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} training [{elapsed_precise}] {wide_bar} {pos}/{len} ETA {eta} {msg}",
            )
            .expect("a valid template"),
        );
        let mut losses = Vec::new();
        let started = std::time::Instant::now();
        let mut model = learn::train(meta, &training, &options, |e| {
            bar.set_position(e.epoch as u64);
            bar.set_message(format!("loss {:.4}", e.loss));
            losses.push(e.loss);
        })
        .map_err(|e| miette!("{e}"))?;
        bar.finish_and_clear();
        let training_time = started.elapsed().as_secs_f64();
        let scored = learn::evaluate(&model, &held).map_err(|e| miette!("{e}"))?;
        let fitted = learn::evaluate(&model, &training).map_err(|e| miette!("{e}"))?;
        let summary = |scores: &[learn::InputScore]| {
            let n = scores.len().max(1) as f64;
            let mut rho: Vec<f64> = scores.iter().map(|s| s.spearman).collect();
            rho.sort_by(f64::total_cmp);
            json!({
                "inputs": scores.len(),
                "mean_spearman": rho.iter().sum::<f64>() / n,
                "median_spearman": rho.get(rho.len() / 2).copied().unwrap_or(0.0),
                "mean_top1_regret": scores.iter().map(|s| s.top1_regret).sum::<f64>() / n,
                "mean_top10_regret": scores.iter().map(|s| s.top10_regret).sum::<f64>() / n,
            })
        };
        crate::outln!(
            "{} training inputs, {} held out; {} epochs in {:.0} s, final loss {:.4}",
            training.len(),
            held.len(),
            args.epochs,
            training_time,
            losses.last().copied().unwrap_or(0.0)
        );
        crate::outln!(
            "{:<34} {:>6} {:>9} {:>8} {:>8}",
            "held-out input",
            "points",
            "spearman",
            "top-1",
            "top-10"
        );
        for s in &scored {
            crate::outln!(
                "{:<34} {:>6} {:>9.3} {:>7.1}% {:>7.1}%",
                s.name,
                s.points,
                s.spearman,
                100.0 * s.top1_regret,
                100.0 * s.top10_regret
            );
        }
        let held_summary = summary(&scored);
        crate::outln!("held out: {held_summary}");
        crate::outln!("training: {}", summary(&fitted));
        model.set_report(json!({
            "extractor": extractor.name(),
            "epochs": args.epochs,
            "learning_rate": args.learning_rate,
            "training_inputs": training.len(),
            "training_seconds": training_time,
            "losses": losses,
            "held_out": held_summary,
            "held_out_inputs": scored.iter().map(|s| json!({
                "input": s.name, "points": s.points, "spearman": s.spearman,
                "top1_regret": s.top1_regret, "top10_regret": s.top10_regret,
            })).collect::<Vec<_>>(),
            "training_fit": summary(&fitted),
        }));
        if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .into_diagnostic()
                .wrap_err_with(|| format!("cannot create {}", dir.display()))?;
        }
        model.save(&args.out).map_err(|e| miette!("{e}"))?;
        crate::outln!(
            "model written to {} and {}",
            args.out.with_extension("json").display(),
            args.out.with_extension("safetensors").display()
        );
        Ok(())
    }
}
