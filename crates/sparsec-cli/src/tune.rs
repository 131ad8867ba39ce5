//! `sparsec tune`: choose the storage formats of the sparse operands and the schedule
//! together for these inputs, measure the choice against sparsec's default, cache it for
//! `sparsec run --tuned`, and print a `sparsec run` command that reproduces it.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use miette::{miette, Report, Result};
use sparsec::tune::{self, MeasureOptions, Strategy, TuneOptions, Tuned};

use crate::run::load_tensors;
use crate::spec::{self, DeviceArg, Problem, SpecArgs};

const TUNE_HELP: &str = "\
EXAMPLES:
  # Tune SpMV on a matrix for 30 seconds on 2 threads:
  sparsec tune \"y(i) = A(i,j) * x(j)\" -f A:csr -i A:bcsstk13.mtx -g x:dense --threads 2

  # The same, as JSON, with the format-only baseline instead of the full search:
  sparsec tune \"y(i) = A(i,j) * x(j)\" -f A:csr -i A:m.mtx -g x:dense --search format-only --json

  # Later runs on inputs of the same structure reuse the choice without searching:
  sparsec run \"y(i) = A(i,j) * x(j)\" -f A:csr -i A:bcsstk13.mtx -g x:dense --threads 2 --tuned

WHAT IS TUNED:
  The tensors declared sparse with -f (and a sparse output) are the ones whose formats are
  tuned; dense tensors keep their layout. Every candidate's result is checked against the
  reference evaluator. Choices are cached under SPARSEC_TUNE_DIR (default: tune/ in the
  kernel cache), keyed by the statement, the inputs' structure and --threads.";

/// Choose formats and schedule together for these inputs.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = TUNE_HELP,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct TuneArgs {
    #[command(subcommand)]
    pub command: Option<TuneCommand>,
    /// The statement in index notation, e.g. "y(i) = A(i,j) * x(j)".
    #[arg(value_name = "EXPR", required = true)]
    pub expr: Option<String>,
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Generate an input instead of reading it (as `sparsec run -g`).
    #[arg(short = 'g', long = "generate", value_name = "NAME:KIND")]
    pub generate: Vec<String>,
    /// The most threads a candidate may use (default: OMP_NUM_THREADS, else all cores).
    #[arg(long, value_name = "N", value_parser = spec::thread_count)]
    pub threads: Option<usize>,
    /// Wall-clock budget of the tuning in seconds: the reference evaluation that checks the
    /// candidates, compilation and measurement included.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = seconds)]
    pub budget: f64,
    /// How candidates are drawn: `random` (formats and schedules together),
    /// `format-only` (formats with sparsec's default schedule) or `model` (the points the
    /// learned cost model ranks best; needs the `learned` feature).
    #[arg(long, value_enum, default_value_t = SearchArg::Random)]
    pub search: SearchArg,
    /// The cost model of `--search model`: the stem of its `.json` and `.safetensors`
    /// files (default: the model shipped for the statement, if one is).
    #[arg(long, value_name = "STEM")]
    pub model: Option<std::path::PathBuf>,
    /// The most candidates measured after sparsec's default, a measurement budget for
    /// comparing searches (default: as many as --budget allows; 10 for `--search model`).
    #[arg(long, value_name = "N", value_parser = spec::positive)]
    pub candidates: Option<usize>,
    /// Timed runs per candidate after a warm-up, at least (the median is kept); a fast
    /// kernel is run until its runs have taken 10 ms.
    #[arg(long, value_name = "N", default_value_t = 7, value_parser = spec::positive)]
    pub repeats: usize,
    /// No more runs of one candidate start after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0, value_parser = seconds)]
    pub cap: f64,
    /// Seed of the generated inputs (as `sparsec run --seed`) and of the search.
    #[arg(long, value_name = "S", default_value_t = 42)]
    pub seed: u64,
    /// Print the result as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Where the candidates run: `cpu` (formats, loop orders, splits and threads), or a
    /// GPU device (`opencl`, `cuda`): formats and GPU mappings (a thread, a warp or a block
    /// per outer coordinate, and the block's size). The choice is cached per device.
    #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
    pub device: DeviceArg,
    /// Draw the first sparse matrix input's nonzero pattern with the chosen blocks (red)
    /// and tiles (blue) into this PNG file (needs the `plot` feature).
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<std::path::PathBuf>,
}

/// `sparsec tune`'s subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum TuneCommand {
    /// Measure (input, schedule, runtime) tuples into a JSON-lines dataset (resumable).
    #[command(after_help = "EXAMPLES:\n  \
        sparsec tune collect \"y(i) = A(i,j) * x(j)\" -f A:csr -g x:dense --data a.mtx \
        --augment 3 --family powerlaw:8@20000 --per-input 50 --out spmv.jsonl --threads 2")]
    Collect(Box<crate::collect::CollectArgs>),
    /// Train a cost model on a collected dataset and report its ranking on held-out
    /// inputs (needs the `learned` feature).
    #[command(after_help = "EXAMPLES:\n  \
        sparsec tune train \"y(i) = A(i,j) * x(j)\" -f A:csr -g x:dense --data a.mtx \
        --augment 3 --family powerlaw:8@20000 --dataset spmv.jsonl --out models/spmv")]
    Train(Box<crate::train::TrainArgs>),
    /// Draw the autotuning benchmark's sorted per-input speedups over each baseline, one
    /// panel per kernel and thread count (needs the `plot` feature).
    #[command(after_help = "EXAMPLES:\n  \
        sparsec tune figure --csv speedups.csv --out speedups.png")]
    Figure(FigureArgs),
}

/// `sparsec tune figure`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct FigureArgs {
    /// The speedups: a CSV file whose header names the columns `kernel`, `input`,
    /// `threads`, `baseline` and `speedup` (the baseline's time over the tuned time), one
    /// row per input and baseline, as `bench/tune_search.py` writes it.
    #[arg(long, value_name = "FILE.csv")]
    pub csv: std::path::PathBuf,
    /// Where to draw the figure (PNG).
    #[arg(long, value_name = "FILE.png")]
    pub out: std::path::PathBuf,
}

/// `--search`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchArg {
    /// Formats and schedules drawn together at random.
    Random,
    /// Formats drawn at random with sparsec's default schedule.
    FormatOnly,
    /// The points a learned cost model ranks best, found by nearest-neighbour search.
    Model,
}

impl SearchArg {
    fn name(self) -> &'static str {
        match self {
            SearchArg::Random => "random",
            SearchArg::FormatOnly => "format-only",
            SearchArg::Model => "model",
        }
    }
}

/// A positive, finite number of seconds.
fn seconds(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// Run the `tune` subcommand.
pub fn tune(args: &TuneArgs) -> Result<()> {
    let expr = match (&args.command, &args.expr) {
        (Some(TuneCommand::Collect(collect)), _) => return crate::collect::collect(collect),
        (Some(TuneCommand::Train(train)), _) => return crate::train::train(train),
        #[cfg(feature = "plot")]
        (Some(TuneCommand::Figure(figure)), _) => return crate::figure::figure(figure),
        #[cfg(not(feature = "plot"))]
        (Some(TuneCommand::Figure(_)), _) => {
            return Err(miette!(
                help = "build sparsec with `cargo build --features plot`",
                "sparsec tune figure: built without the `plot` feature"
            ))
        }
        (None, Some(expr)) => expr,
        (None, None) => return Err(miette!("sparsec tune: give the statement to tune")),
    };
    let problem = Problem::new(expr, &args.spec, &args.generate)?;
    let statement = problem.bind()?;
    if statement.accumulate {
        return Err(miette!(
            "sparsec tune takes `=` statements; `+=` adds into an output it does not measure"
        ));
    }
    if args.search == SearchArg::Model && !cfg!(feature = "learned") {
        return Err(miette!(
            help = "build sparsec with `cargo build --features learned`",
            "--search model: built without the `learned` feature"
        ));
    }
    if args.plot.is_some() && !cfg!(feature = "plot") {
        return Err(miette!(
            help = "build sparsec with `cargo build --features plot`",
            "--plot: built without the `plot` feature"
        ));
    }
    let (_, inputs) = load_tensors(&problem, &statement, args.seed)?;
    // The plot draws an input as it was given, so keep it when one is asked for.
    let plotted = args.plot.as_ref().map(|_| inputs.clone());
    let options = TuneOptions {
        threads: args
            .threads
            .unwrap_or_else(sparsec::kernel::default_threads),
        budget: Duration::from_secs_f64(args.budget),
        candidates: args.candidates,
        strategy: match args.search {
            SearchArg::FormatOnly => Strategy::FormatOnly,
            SearchArg::Random | SearchArg::Model => Strategy::Random,
        },
        seed: args.seed,
        measure: MeasureOptions {
            repeats: args.repeats,
            cap: Duration::from_secs_f64(args.cap),
            backend: args.device.backend(spec::BackendArg::C),
            ..MeasureOptions::default()
        },
    };
    let bar = ProgressBar::new(options.budget.as_millis() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} tuning [{elapsed_precise}] {wide_bar} ETA {eta} {msg}",
        )
        .expect("a valid template"),
    );
    // The reference evaluation comes first, with no progress to report: the clock runs.
    bar.set_message("evaluating the reference that checks the candidates");
    bar.enable_steady_tick(Duration::from_millis(250));
    let progress = |p: &tune::Progress| {
        bar.set_position(p.elapsed.as_millis() as u64);
        bar.set_message(format!(
            "{} measured, best {}",
            p.measured,
            spec::ms(p.best)
        ));
    };
    let (tuned, choice) = match args.search {
        #[cfg(feature = "learned")]
        SearchArg::Model => {
            let model = crate::train::model_for(expr, args.model.as_deref())?;
            let top = args.candidates.unwrap_or(10);
            tune::tune_with(&statement, inputs, &options, |space, measurer| {
                tune::model::ann::search(
                    space,
                    measurer,
                    &model,
                    top,
                    options.budget,
                    options.seed,
                    progress,
                )
            })
        }
        _ => tune::tune(&statement, inputs, &options, progress),
    }
    .map_err(Report::new)?;
    bar.finish_and_clear();
    for failure in &tuned.failures {
        eprintln!("warning: a candidate failed (a bug in sparsec): {failure}");
    }
    #[cfg(feature = "plot")]
    if let (Some(path), Some(inputs)) = (&args.plot, &plotted) {
        draw(path, &statement, inputs, &tuned)?;
    }
    #[cfg(not(feature = "plot"))]
    let _ = plotted;
    let command = reproduce(expr, args, &choice);
    if args.json {
        crate::outln!("{}", json(expr, args, &tuned, &choice, &command));
    } else {
        report(args, &tuned, &choice);
        crate::outln!("{command}");
    }
    Ok(())
}

/// The spy plot of the first sparse matrix input, with the choice's blocks and tiles.
#[cfg(feature = "plot")]
fn draw(
    path: &std::path::Path,
    statement: &sparsec::notation::cin::Statement,
    inputs: &[sparsec::tensor::Tensor],
    tuned: &Tuned,
) -> Result<()> {
    let space = tune::space_of(statement, inputs, tuned.default.threads);
    let found = space
        .tuned()
        .iter()
        .enumerate()
        .find(|&(_, &t)| t > 0 && statement.tensors[t].dims.len() == 2);
    let Some((k, &t)) = found else {
        return Err(miette!("--plot: the statement has no sparse matrix input"));
    };
    crate::plot::spy(
        path,
        statement,
        t,
        &inputs[t - 1],
        &tuned.best.formats[k],
        &tuned.best,
    )
}

fn report(args: &TuneArgs, tuned: &Tuned, choice: &tune::Choice) {
    let formats: Vec<String> = choice
        .formats
        .iter()
        .map(|(n, f)| format!("{n}:{f}"))
        .collect();
    let search = format!("{} search", args.search.name());
    crate::outln!(
        "searched {} candidates in {:.1} s, {:.1} s of it the reference evaluation that \
         checks them ({search}; {} could not hold the inputs, {} stopped at ten times the best)",
        tuned.measured,
        tuned.tuning_time.as_secs_f64(),
        tuned.reference_time.as_secs_f64(),
        tuned.unfit,
        tuned.timed_out
    );
    crate::outln!(
        "default:  {} on {} threads",
        spec::ms(tuned.default_measurement.runtime),
        tuned.default.threads
    );
    crate::outln!("formats:  {}", formats.join(" "));
    crate::outln!(
        "schedule: {}",
        if choice.schedule.is_empty() {
            "sparsec's default"
        } else {
            &choice.schedule
        }
    );
    crate::outln!("loops:    {}", tuned.best.order.join(", "));
    crate::outln!("threads:  {}", choice.threads);
    if let Some((version, distance)) = tuned.best_measurement.sums {
        let hints = distance
            .map(|d| format!(", prefetching {d} entries ahead"))
            .unwrap_or_default();
        crate::outln!(
            "sums:     {}{hints} (the kernel's own choice, measured on its first runs)",
            version.describe()
        );
    }
    crate::outln!(
        "runtime:  {} (median of {} runs), {:.2}x over sparsec's default",
        spec::ms(tuned.best_measurement.runtime),
        tuned.best_measurement.runs,
        tuned.speedup()
    );
    let pays = match tuned.break_even_runs() {
        Some(runs) => format!("pays for itself after {} runs", runs.ceil()),
        None => "never pays for itself (the default is the fastest measured)".to_string(),
    };
    crate::outln!(
        "cost:     tuning {:.1} s, conversion {}; {pays}",
        tuned.tuning_time.as_secs_f64(),
        spec::ms(tuned.best_measurement.conversion)
    );
}

fn json(
    expr: &str,
    args: &TuneArgs,
    tuned: &Tuned,
    choice: &tune::Choice,
    command: &str,
) -> String {
    let formats: serde_json::Map<String, serde_json::Value> = choice
        .formats
        .iter()
        .map(|(n, f)| (n.clone(), f.spelling().into()))
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // The formats of a point, by name: `choice.formats` names the tuned tensors in the
    // order every point lists their formats.
    let tried: Vec<serde_json::Value> = tuned
        .tried
        .iter()
        .map(|point| {
            let formats: serde_json::Map<String, serde_json::Value> = choice
                .formats
                .iter()
                .zip(&point.formats)
                .map(|((name, _), f)| (name.clone(), f.spelling().into()))
                .collect();
            serde_json::json!({
                "formats": formats,
                "schedule": point.schedule,
                "threads": point.threads,
            })
        })
        .collect();
    serde_json::json!({
        "expr": expr,
        "search": args.search.name(),
        "formats": formats,
        "schedule": choice.schedule,
        "loops": tuned.best.order,
        "threads": choice.threads,
        "sum_version": tuned.best_measurement.sums.map(|(v, _)| v.name()),
        "prefetch_distance": tuned.best_measurement.sums.and_then(|(_, d)| d),
        "default_ms": ms(tuned.default_measurement.runtime),
        "tuned_ms": ms(tuned.best_measurement.runtime),
        "speedup": tuned.speedup(),
        "tuning_s": tuned.tuning_time.as_secs_f64(),
        "reference_s": tuned.reference_time.as_secs_f64(),
        "conversion_ms": ms(tuned.best_measurement.conversion),
        "break_even_runs": tuned.break_even_runs(),
        "measured": tuned.measured,
        "tried": tried,
        "unfit": tuned.unfit,
        "timed_out": tuned.timed_out,
        "failures": tuned.failures,
        "command": command,
    })
    .to_string()
}

/// The `sparsec run` command that reproduces the choice: the same statement, inputs,
/// generators, sizes and seed, with the chosen formats, schedule and threads.
fn reproduce(expr: &str, args: &TuneArgs, choice: &tune::Choice) -> String {
    let mut words: Vec<String> = vec!["sparsec".into(), "run".into(), expr.to_string()];
    let tuned_name = |text: &str| {
        let name = text.split_once(':').map_or(text, |(n, _)| n.trim());
        choice.formats.iter().any(|(n, _)| n == name)
    };
    for f in args.spec.formats.iter().filter(|f| !tuned_name(f)) {
        words.extend(["-f".into(), f.clone()]);
    }
    for (name, format) in &choice.formats {
        words.extend(["-f".into(), format!("{name}:{format}")]);
    }
    for (flag, values) in [
        ("-i", &args.spec.inputs),
        ("-g", &args.generate),
        ("-d", &args.spec.dims),
    ] {
        for v in values {
            words.extend([flag.into(), v.clone()]);
        }
    }
    if !args.generate.is_empty() {
        words.extend(["--seed".into(), args.seed.to_string()]);
    }
    words.extend(["--threads".into(), choice.threads.to_string()]);
    match args.device {
        DeviceArg::Cpu => {}
        DeviceArg::Opencl => words.extend(["--device".into(), "opencl".into()]),
        DeviceArg::Cuda => words.extend(["--device".into(), "cuda".into()]),
    }
    if !choice.schedule.is_empty() {
        words.extend(["-s".into(), choice.schedule.clone()]);
    }
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `word` as a POSIX shell reads it back: bare when it holds only safe characters, else
/// in single quotes.
fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:,=+@%".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
