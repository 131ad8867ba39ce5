//! `sparsec spf emit|run`: print the C code of a sparse polyhedral computation (`.spf`,
//! see docs/spf.md), or run it on tensor files with the input, output and timing
//! conventions of `sparsec run`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use miette::{miette, IntoDiagnostic, Report, Result, WrapErr};
use sparsec::io;
use sparsec::jit::Toolchain;
use sparsec::spf::SpfKernel;
use sparsec::tensor::{Tensor, ValueType};

use crate::run::{check_output_kind, print_summary, report_phase, write_output};
use crate::spec::{self, fit_order, split_pair};

/// The `spf` subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum SpfCommand {
    /// Print the C code generated for a computation.
    #[command(
        after_help = "EXAMPLES:\n  sparsec spf emit examples/spf/lower_solve.spf\n\n\
                            LANGUAGE:\n  The language of .spf files, with examples: docs/spf.md"
    )]
    Emit {
        /// The computation (`.spf`).
        program: PathBuf,
    },
    /// Run a computation on tensor files.
    Run(SpfRunArgs),
}

/// Where `spf --help` and `spf run --help` send a reader for the language.
pub const SPF_HELP: &str = "\
EXAMPLES:
  sparsec spf emit examples/spf/lower_solve.spf
  sparsec spf run examples/spf/lower_solve_wavefront.spf -i L:l.mtx -i b:b.mtx -o x:x.mtx

LANGUAGE:
  The language of .spf files, with examples: docs/spf.md; programs to start from:
  examples/spf/";

/// `sparsec spf run PROG -i NAME:FILE ... [-o NAME:FILE] [--threads N] [--time N]`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "EXAMPLES:\n  sparsec spf run examples/spf/lower_solve_wavefront.spf \
                        -i L:l.mtx -i b:b.mtx -o x:x.mtx --threads 2 --time 10\n\n\
                  LANGUAGE:\n  The language of .spf files, with examples: docs/spf.md"
)]
pub struct SpfRunArgs {
    /// The computation (`.spf`).
    pub program: PathBuf,
    /// Read an input from a file (.mtx, .tns, .spt).
    #[arg(short = 'i', long = "input", value_name = "NAME:FILE")]
    pub inputs: Vec<String>,
    /// Write the output to a file (.mtx, .tns or .spt).
    #[arg(short = 'o', long = "output", value_name = "NAME:FILE")]
    pub output: Option<String>,
    /// The value of a `param` symbol of the computation.
    #[arg(short = 'p', long = "param", value_name = "NAME=N")]
    pub params: Vec<String>,
    /// Threads of parallel loops (default: OMP_NUM_THREADS, else all cores).
    #[arg(long, value_name = "N", value_parser = spec::thread_count)]
    pub threads: Option<usize>,
    /// Run N times after one warm-up and report the median, min and max times.
    #[arg(long, value_name = "N", value_parser = spec::positive)]
    pub time: Option<usize>,
}

/// Run an `spf` subcommand.
pub fn spf(cmd: &SpfCommand) -> Result<()> {
    match cmd {
        SpfCommand::Emit { program } => {
            let kernel = compile(program)?;
            crate::out!("{}", kernel.source());
            Ok(())
        }
        SpfCommand::Run(args) => run(args),
    }
}

fn compile(path: &Path) -> Result<SpfKernel> {
    let text = std::fs::read_to_string(path)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read {}", path.display()))?;
    SpfKernel::compile(&path.display().to_string(), &text, &Toolchain::default())
        .map_err(Report::new)
}

fn run(args: &SpfRunArgs) -> Result<()> {
    let mut kernel = compile(&args.program)?;
    if let Some(n) = args.threads {
        kernel.set_threads(n);
    }
    for text in &args.params {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| miette!("--param {text}: expected NAME=N"))?;
        let value: i64 = value
            .trim()
            .parse()
            .map_err(|_| miette!("--param {text}: `{value}` is not an integer"))?;
        kernel.set_param(name.trim(), value).map_err(Report::new)?;
    }
    let output = match &args.output {
        Some(text) => {
            let (name, file) = split_pair("-o", text, "FILE")?;
            if name != kernel.output_name() {
                return Err(miette!(
                    "-o {text}: the output of this computation is `{}`",
                    kernel.output_name()
                ));
            }
            check_output_kind(Path::new(file), kernel.output_order())?;
            Some(PathBuf::from(file))
        }
        None => None,
    };
    // Every input is named before any file is read.
    let given: Vec<&str> = args
        .inputs
        .iter()
        .filter_map(|text| text.split_once(':').map(|(name, _)| name))
        .collect();
    if let Some(missing) = kernel
        .input_names()
        .into_iter()
        .find(|n| !given.contains(n))
    {
        return Err(miette!(
            help = format!("read it with -i {missing}:FILE (.mtx, .tns, .spt)"),
            "input `{missing}` is missing"
        ));
    }
    let mut tensors: Vec<(String, Tensor)> = Vec::new();
    for text in &args.inputs {
        let (name, file) = split_pair("-i", text, "FILE")?;
        let (Some(order), Some(format)) = (kernel.input_order(name), kernel.input_format(name))
        else {
            return Err(miette!(
                "-i {text}: `{name}` is not an input of this computation (inputs: {})",
                kernel.input_names().join(", ")
            ));
        };
        let data = io::read_any(file).map_err(Report::new)?;
        // Stored once in the declared format, so that every (timed) run reads it in place.
        let tensor = fit_order(data, order)
            .into_tensor(format, ValueType::F64)
            .map_err(|e| miette!("-i {text}: {e}"))?;
        tensors.push((name.to_string(), tensor));
    }
    let inputs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let result = kernel.run(&inputs).map_err(Report::new)?;
    if let Some(n) = args.time {
        let times: Vec<Duration> = (0..n)
            .map(|_| {
                let start = Instant::now();
                kernel.run(&inputs).map(|_| start.elapsed())
            })
            .collect::<Result<_, _>>()
            .map_err(Report::new)?;
        crate::outln!("{n} runs (after one warm-up):");
        report_phase("run", times);
    }
    match output {
        Some(path) => write_output(&path, &result)?,
        None => print_summary(kernel.output_name(), &result),
    }
    Ok(())
}
