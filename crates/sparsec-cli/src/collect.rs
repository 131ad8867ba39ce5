//! `sparsec tune collect`: measure (input, schedule, runtime) tuples for a cost model, on
//! real inputs, their augmented variants and generated families; resumable.
//!
//! The dataset is JSON lines, one object per measured (input, sample):
//!
//! ```text
//! {"input":"bcsstk13","sample":3,"dims":[2003,2003],"nnz":83883,
//!  "point":{"formats":{"A":"ds:1,0"},"splits":{"i":8,"j":1},"order":["i0","i1","j"],
//!           "parallel":{"var":"i0","schedule":"dynamic","chunk":16},"threads":2,
//!           "schedule":"split(i,i0,i1,8),..."},
//!  "status":"ok","runtime_s":0.00021,"runs":7,"conversion_s":0.0013}
//! ```
//!
//! Sample 0 of every input is sparsec's default point. `status` is `ok` (with the median
//! `runtime_s` over `runs` runs), `unfit` (the formats cannot hold the input), `timed_out`
//! (a run took over `--cap` seconds on one thread) or `failed` (with `error`: a bug).
//! Inputs are named after their file's stem; augmented variants add `~x2`, `~x0.5`
//! (resized) or `~blocksN` (N random dense blocks); generated ones are `KIND@SIZE`. A
//! collection that stops is resumed by running the same command again: the pairs already
//! in the file are skipped, and every sample is drawn from a seed of its input and index,
//! so the resumed file is the one an uninterrupted run writes.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use miette::{miette, IntoDiagnostic, Report, Result, WrapErr};
use rand::SeedableRng;
use serde_json::json;
use sparsec::io::TensorFile;
use sparsec::kernel::Backend;
use sparsec::notation::cin::Statement;
use sparsec::tensor::{Coo, Tensor};
use sparsec::tune::{
    self, augment, Draw, MeasureError, MeasureOptions, Measurer, Patience, Point, Space,
};

use crate::run::load_tensors;
use crate::spec::{self, GenKind, Problem, Source, SpecArgs};

/// Collect a dataset of measured candidates.
#[derive(clap::Args, Debug, Clone)]
pub struct CollectArgs {
    #[command(flatten)]
    pub inputs: InputArgs,
    /// Candidates measured per input (after the default).
    #[arg(long, value_name = "K", default_value_t = 20)]
    pub per_input: usize,
    /// The dataset file (JSON lines), appended to.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The most threads a candidate may use.
    #[arg(long, value_name = "N", value_parser = spec::thread_count)]
    pub threads: Option<usize>,
    /// Timed runs per candidate after a warm-up, at least (the median is kept); a fast
    /// kernel is run until its runs have taken 10 ms.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = spec::positive)]
    pub repeats: usize,
    /// Time cap per candidate in seconds: its first run is killed after this on one thread.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub cap: f64,
}

/// The statement and inputs of a collection (and of the training that reads it back).
#[derive(clap::Args, Debug, Clone)]
pub struct InputArgs {
    /// The statement, e.g. "y(i) = A(i,j) * x(j)".
    #[arg(value_name = "EXPR")]
    pub expr: String,
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Generate a tensor other than the collected one (as `sparsec run -g`).
    #[arg(short = 'g', long = "generate", value_name = "NAME:KIND")]
    pub generate: Vec<String>,
    /// The tensor the inputs are (default: the first input given a sparse format).
    #[arg(long, value_name = "NAME")]
    pub tensor: Option<String>,
    /// A real input file (.mtx, .tns, .spt) of the collected tensor; repeat for more.
    #[arg(long = "data", value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// Augmented variants per real input: resized x2, x0.5, then block-densified.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub augment: usize,
    /// A generated family, `KIND@SIZE` (e.g. `powerlaw:8@20000`: every mode of size SIZE;
    /// kinds as `-g`); repeat for more.
    #[arg(long = "family", value_name = "KIND@SIZE")]
    pub families: Vec<String>,
    /// Seed of the generated tensors and of the samples.
    #[arg(long, value_name = "S", default_value_t = 42)]
    pub seed: u64,
}

/// One input of the collection: a name and the collected tensor's entries.
pub struct Input {
    /// Its name in the dataset.
    pub name: String,
    /// The collected tensor's entries.
    pub coo: Coo,
}

/// Run `sparsec tune collect`.
pub fn collect(args: &CollectArgs) -> Result<()> {
    if !(args.cap.is_finite() && args.cap > 0.0) {
        return Err(miette!(
            "--cap {}: not a positive number of seconds",
            args.cap
        ));
    }
    let template = Problem::new(&args.inputs.expr, &args.inputs.spec, &args.inputs.generate)?;
    let tensor = collected_tensor(&args.inputs, &template)?;
    let order = template.tensors[tensor].1;
    let inputs = gather_inputs(&args.inputs, order)?;
    let done = already_collected(args)?;
    let total = inputs.len() * (args.per_input + 1);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} collecting [{elapsed_precise}] {wide_bar} {pos}/{len} ETA {eta} {msg}",
        )
        .expect("a valid template"),
    );
    bar.set_position(done.len().min(total) as u64);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot open {}", args.out.display()))?;
    let threads = args
        .threads
        .unwrap_or_else(sparsec::kernel::default_threads);
    for input in &inputs {
        let todo: Vec<usize> = (0..=args.per_input)
            .filter(|k| !done.contains(&(input.name.clone(), *k)))
            .collect();
        if todo.is_empty() {
            continue;
        }
        bar.set_message(input.name.clone());
        let (statement, tensors) = bind_input(&args.inputs, tensor, input)?;
        let space = tune::space_of(&statement, &tensors, threads);
        let options = MeasureOptions {
            repeats: args.repeats,
            cap: Duration::from_secs_f64(args.cap),
            backend: Backend::C,
            ..MeasureOptions::default()
        };
        let measurer = Measurer::new(&space, tensors, options).map_err(Report::new)?;
        for k in todo {
            let record = measure_sample(args, &space, &measurer, input, k);
            writeln!(file, "{record}")
                .and_then(|()| file.flush())
                .into_diagnostic()
                .wrap_err_with(|| format!("cannot write {}", args.out.display()))?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    crate::outln!(
        "{} inputs, {} samples each (and the default) in {}",
        inputs.len(),
        args.per_input,
        args.out.display()
    );
    Ok(())
}

/// The statement with `input` as its tensor `tensor`, and its tensors.
pub fn bind_input(
    args: &InputArgs,
    tensor: usize,
    input: &Input,
) -> Result<(Statement, Vec<Tensor>)> {
    let mut problem = Problem::new(&args.expr, &args.spec, &args.generate)?;
    problem.decls[tensor].dims = Some(input.coo.dims.clone());
    problem.sources[tensor] = Some(Source::File(
        PathBuf::from(&input.name),
        TensorFile::Frostt(input.coo.clone()),
    ));
    let statement = problem
        .bind()
        .wrap_err_with(|| format!("input {}", input.name))?;
    let (_, tensors) = load_tensors(&problem, &statement, args.seed)?;
    Ok((statement, tensors))
}

/// The index of the tensor the inputs are.
pub fn collected_tensor(inputs: &InputArgs, problem: &Problem) -> Result<usize> {
    let found = match &inputs.tensor {
        Some(name) => problem.tensors.iter().position(|(n, _)| n == name),
        None => (1..problem.tensors.len()).find(|&k| {
            problem.decls[k]
                .format
                .as_ref()
                .is_some_and(|f| !f.is_all_dense())
        }),
    };
    match found {
        Some(0) => Err(miette!("--tensor: the output is computed, not an input")),
        Some(k) => Ok(k),
        None => Err(miette!(
            help = "give the input a sparse format with -f, or name it with --tensor",
            "no input of the statement is sparse"
        )),
    }
}

/// The real inputs, their augmented variants and the generated families.
pub fn gather_inputs(args: &InputArgs, order: usize) -> Result<Vec<Input>> {
    let mut inputs = Vec::new();
    for path in &args.data {
        let coo = sparsec::io::read_any(path)
            .map_err(|e| miette!("cannot read {}: {e}", path.display()))?
            .into_coo();
        if coo.order() != order {
            return Err(miette!(
                "{}: order {}, but the collected tensor has order {order}",
                path.display(),
                coo.order()
            ));
        }
        let stem = path
            .file_stem()
            .map_or("input".into(), |s| s.to_string_lossy().into_owned());
        for a in 0..args.augment {
            let (name, variant) = match a {
                0 => (format!("{stem}~x2"), augment::resize(&coo, 2.0)),
                1 => (format!("{stem}~x0.5"), augment::resize(&coo, 0.5)),
                _ => {
                    let blocks = (coo.len() / 64).max(1) * (a - 1);
                    let side = 1 << (a % 3 + 1);
                    (
                        format!("{stem}~blocks{blocks}x{side}"),
                        augment::densify_blocks(&coo, blocks, side, args.seed + a as u64),
                    )
                }
            };
            inputs.push(Input { name, coo: variant });
        }
        inputs.push(Input { name: stem, coo });
    }
    for (f, family) in args.families.iter().enumerate() {
        let (kind, size) = family.rsplit_once('@').ok_or_else(|| {
            miette!("--family {family}: expected KIND@SIZE, e.g. powerlaw:8@20000")
        })?;
        let size: usize = size
            .parse()
            .map_err(|_| miette!("--family {family}: `{size}` is not a size"))?;
        let kind = GenKind::parse(kind).wrap_err_with(|| format!("--family {family}"))?;
        if let Some(why) = kind.refuses(order) {
            return Err(miette!(
                "--family {family}: {why}, but the tensor has order {order}"
            ));
        }
        let coo = kind
            .generate(&vec![size; order], args.seed + 1000 + f as u64)
            .map_err(|e| miette!("--family {family}: {e}"))?;
        inputs.push(Input {
            name: family.clone(),
            coo,
        });
    }
    if inputs.is_empty() {
        return Err(miette!(
            "nothing to collect: give --data FILE or --family KIND@SIZE"
        ));
    }
    Ok(inputs)
}

/// The (input, sample) pairs the dataset file already holds. A last line cut short by an
/// interruption is removed from the file, and its pair measured again.
fn already_collected(args: &CollectArgs) -> Result<HashSet<(String, usize)>> {
    let mut done = HashSet::new();
    let mut text = match std::fs::read_to_string(&args.out) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(miette!("cannot read {}: {e}", args.out.display())),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        let complete = text.rfind('\n').map_or(0, |n| n + 1);
        text.truncate(complete);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&args.out)
            .and_then(|f| f.set_len(complete as u64))
            .into_diagnostic()
            .wrap_err_with(|| format!("cannot repair {}", args.out.display()))?;
    }
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            miette!(
                "{}:{}: not a dataset record: {e}",
                args.out.display(),
                n + 1
            )
        })?;
        if let (Some(input), Some(sample)) = (record["input"].as_str(), record["sample"].as_u64()) {
            done.insert((input.to_string(), sample as usize));
        }
    }
    Ok(done)
}

/// Draw sample `k` of `input` (0: the default point) and measure it, as one record.
fn measure_sample(
    args: &CollectArgs,
    space: &Space,
    measurer: &Measurer,
    input: &Input,
    k: usize,
) -> serde_json::Value {
    let mut record = json!({
        "input": input.name,
        "sample": k,
        "dims": input.coo.dims,
        "nnz": input.coo.len(),
    });
    let candidate = if k == 0 {
        space.default_point().ok()
    } else {
        let seed = blake3::hash(format!("{}#{k}#{}", input.name, args.inputs.seed).as_bytes());
        let seed = u64::from_le_bytes(seed.as_bytes()[..8].try_into().expect("8 bytes"));
        space.sample(
            &mut rand::rngs::StdRng::seed_from_u64(seed),
            Draw::Everything,
        )
    };
    let Some(candidate) = candidate else {
        record["status"] = "no_point".into();
        return record;
    };
    record["point"] = point_json(space, &candidate.point);
    let limit = Duration::from_secs_f64(args.cap);
    let patience = Patience {
        run: Some(limit),
        compile: None,
    };
    match measurer.measure(space, &candidate, patience) {
        Ok(m) => {
            record["status"] = "ok".into();
            record["runtime_s"] = m.runtime.as_secs_f64().into();
            record["runs"] = m.runs.into();
            record["conversion_s"] = m.conversion.as_secs_f64().into();
        }
        Err(MeasureError::Unfit(_)) => record["status"] = "unfit".into(),
        Err(MeasureError::TimedOut(_) | MeasureError::CompileTimedOut(_)) => {
            record["status"] = "timed_out".into()
        }
        Err(MeasureError::Failed(e)) => {
            record["status"] = "failed".into();
            record["error"] = e.to_string().into();
        }
    }
    record
}

/// A point as the dataset stores it.
fn point_json(space: &Space, point: &Point) -> serde_json::Value {
    let statement = space.statement();
    let formats: serde_json::Map<String, serde_json::Value> = space
        .tuned()
        .iter()
        .zip(&point.formats)
        .map(|(&t, f)| (statement.tensors[t].name.clone(), f.spelling().into()))
        .collect();
    let splits: serde_json::Map<String, serde_json::Value> = statement
        .vars
        .iter()
        .zip(&point.splits)
        .map(|(v, &s)| (v.name.clone(), s.into()))
        .collect();
    let parallel = point.parallel.as_ref().map(|p| {
        json!({
            "var": p.var,
            "schedule": format!("{:?}", p.schedule).to_lowercase(),
            "chunk": p.chunk,
        })
    });
    json!({
        "formats": formats,
        "splits": splits,
        "order": point.order,
        "parallel": parallel,
        "threads": point.threads,
        "schedule": point.schedule,
    })
}
