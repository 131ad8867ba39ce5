//! `sparsec taco`: TACO's command line (`taco "EXPR" -f=A:ds -g=x:d -time=3 ...`) taken
//! unchanged and mapped onto `sparsec emit` and `sparsec run`.
//!
//! The options are read the way TACO's `tools/taco.cpp` reads them: each is `-NAME` or
//! `-NAME=VALUE` (a leading `--` counts as `-`), and the one argument that is no option is
//! the expression. They become the [`EmitArgs`] and [`RunArgs`] of the other subcommands,
//! so formats, schedules, generators and files mean exactly what they mean there.
//!
//! As in TACO, the compute kernel is printed when nothing else is asked for and no input
//! is read or generated; the statement runs when an input is read (`-i`) or generated
//! (`-g`).

use std::path::PathBuf;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

use crate::emit::{self, EmitArgs};
use crate::run::{self, RunArgs};
use crate::spec::{self, BackendArg, Problem, ScheduleArgs, SpecArgs, StatementArgs, SumsArg};

const TACO_HELP: &str = "\
EXAMPLES (TACO command lines, unchanged):
  sparsec taco \"y(i) = A(i,j) * x(j)\" -f=A:ds
  sparsec taco \"y(i) = A(i,j) * x(j)\" -f=A:ds -g=A:s -g=x:d -d=i:100 -d=j:100 -time=3
  sparsec taco \"y(i) = A(i,j) * x(j)\" -f=A:ds:1,0 -i=A:a.mtx -g=x:r -o=y:y.mtx
  sparsec taco \"y(i) = A(i,j) * x(j)\" -f=A:ds -s=\"split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)\"

SUPPORTED TACO OPTIONS:
  -f=T:FORMAT[:M,M,..]  format letters and mode ordering (as sparsec's -f)
  -i=T:FILE             read a tensor        -o=T:FILE   write the result
  -g=T:FILL             generate a tensor: d, u, r (dense), s (sparse: 7% of each mode's
                        coordinates), h (hypersparse: 0.5% of the components)
  -d=VAR:SIZE           an index variable's size
  -s=SCHEDULE           scheduling commands (several -s are applied in turn)
  -time[=N]             time N runs (default 1)     -nthreads=N   threads
  -print-compute        print the kernel            -print-assembly  print the assembly
  -write-source=FILE    write the whole C source to FILE";

/// The flags this subcommand understands, for the error about the others.
const SUPPORTED: &str = "-f, -i, -o, -g, -d, -s, -time, -nthreads, -print-compute, \
                         -print-assembly, -write-source";

/// Compile and run a statement given as a TACO command line.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = TACO_HELP)]
pub struct TacoArgs {
    /// The TACO arguments: the expression and `-NAME=VALUE` options, e.g.
    /// "y(i) = A(i,j) * x(j)" -f=A:ds -g=A:s -g=x:d -time=3.
    #[arg(
        value_name = "TACO_ARGS",
        allow_hyphen_values = true,
        trailing_var_arg = true,
        required = true
    )]
    pub args: Vec<String>,
}

/// What a TACO command line asks for, in sparsec's terms.
#[derive(Debug, Default)]
struct Request {
    expr: Option<String>,
    spec: SpecArgs,
    schedules: Vec<String>,
    /// `(tensor, TACO fill)` of each `-g`, turned into sparsec generators once the
    /// tensors' orders are known.
    fills: Vec<(String, String)>,
    output: Option<String>,
    time: Option<usize>,
    threads: Option<usize>,
    print_compute: bool,
    print_assembly: bool,
    write_source: Option<PathBuf>,
}

/// A TACO command line in sparsec's terms: what [`taco`] prints and runs.
#[derive(Debug)]
pub struct Translation {
    /// The expression with its formats, inputs, sizes and schedule.
    pub statement: StatementArgs,
    /// sparsec generators (`-g NAME:KIND`) for TACO's fills.
    pub generate: Vec<String>,
    /// `-o NAME:FILE`.
    pub output: Option<String>,
    /// Timed runs (`-time`).
    pub time: Option<usize>,
    /// Threads (`-nthreads`).
    pub threads: Option<usize>,
    /// Whether the compute kernel is printed (asked for, or nothing else to do).
    pub print_compute: bool,
    /// Whether the assembly kernel is printed.
    pub print_assembly: bool,
    /// Where the whole C source is written (`-write-source`).
    pub write_source: Option<PathBuf>,
    /// Whether the statement runs: an input is read or generated.
    pub evaluate: bool,
}

/// Translate TACO's arguments (the expression and `-NAME=VALUE` options) without reading
/// any file or compiling anything.
pub fn translate(args: &[String]) -> Result<Translation> {
    let request = Request::parse(args)?;
    let Some(expr) = request.expr.clone() else {
        return Err(miette!(
            help = "e.g. sparsec taco \"y(i) = A(i,j) * x(j)\" -f=A:ds",
            "no index expression among the TACO arguments"
        ));
    };
    let statement = StatementArgs {
        expr,
        spec: request.spec.clone(),
        schedule: ScheduleArgs {
            schedule: (!request.schedules.is_empty()).then(|| request.schedules.join(",")),
        },
    };
    // Only the expression: the tensors' orders, without reading any input file yet.
    let orders = Problem::new(&statement.expr, &SpecArgs::default(), &[])?.tensors;
    let generate = request
        .fills
        .iter()
        .map(|(tensor, fill)| {
            // An unknown tensor is reported by `run`, which names the statement's tensors.
            let order = orders.iter().find(|(t, _)| t == tensor).map_or(1, |t| t.1);
            Ok(format!("{tensor}:{}", generator(fill, order)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let evaluate = !request.spec.inputs.is_empty() || !generate.is_empty();
    // TACO prints the compute kernel when it is asked for nothing else.
    let print_compute = request.print_compute
        || !(request.print_assembly || evaluate || request.write_source.is_some());
    Ok(Translation {
        statement,
        generate,
        output: request.output,
        time: request.time,
        threads: request.threads,
        print_compute,
        print_assembly: request.print_assembly,
        write_source: request.write_source,
        evaluate,
    })
}

/// Run the `taco` subcommand.
pub fn taco(args: &TacoArgs) -> Result<()> {
    let t = translate(&args.args)?;
    if t.print_assembly {
        emit_with(&t.statement, true, false)?;
    }
    if t.print_compute {
        emit_with(&t.statement, false, true)?;
    }
    if let Some(file) = &t.write_source {
        let source = emit::source(&t.statement)?;
        std::fs::write(file, source)
            .into_diagnostic()
            .wrap_err_with(|| format!("-write-source={}", file.display()))?;
    }
    if t.evaluate {
        run::run(&RunArgs {
            statement: t.statement,
            threads: t.threads,
            generate: t.generate,
            output: t.output,
            time: t.time,
            check: false,
            quiet: false,
            json: false,
            backend: BackendArg::Tiered,
            device: None,
            seed: 42,
            tuned: false,
            sums: SumsArg::Measured,
            distributed: false,
        })?;
    }
    Ok(())
}

fn emit_with(statement: &StatementArgs, assembly: bool, compute: bool) -> Result<()> {
    emit::emit(&EmitArgs {
        statement: statement.clone(),
        assembly,
        compute,
        plain: false,
        target: emit::EmitTarget::C,
    })
}

impl Request {
    fn parse(args: &[String]) -> Result<Request> {
        let mut r = Request::default();
        for arg in args {
            // TACO treats a leading `--` as `-`.
            let option = if arg.starts_with("--") {
                &arg[1..]
            } else {
                arg.as_str()
            };
            let Some(option) = option.strip_prefix('-') else {
                if let Some(first) = &r.expr {
                    return Err(miette!(
                        "two index expressions, `{first}` and `{arg}`; TACO takes one"
                    ));
                }
                r.expr = Some(arg.clone());
                continue;
            };
            let (name, value) = match option.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (option, None),
            };
            let need = || {
                value
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| miette!("-{name} needs a value: -{name}=..."))
            };
            let pair = |what: &str| -> Result<String> {
                let text = need()?;
                spec::split_pair(&format!("-{name}"), text, what)?;
                Ok(text.to_string())
            };
            let count = |text: &str| -> Result<usize> {
                spec::positive(text).map_err(|e| miette!("-{name}={text}: {e}"))
            };
            match name {
                "f" => r.spec.formats.push(pair("FORMAT")?),
                "i" => r.spec.inputs.push(pair("FILE")?),
                "o" => r.output = Some(pair("FILE")?),
                "d" => {
                    let text = pair("SIZE")?;
                    if text.contains(',') {
                        return Err(miette!(
                            help = "give each index variable's size, e.g. -d=i:10 -d=j:10",
                            "-d={text}: sizes of a tensor's modes are not supported"
                        ));
                    }
                    r.spec.dims.push(text);
                }
                "g" => {
                    let text = pair("FILL")?;
                    let (tensor, fill) = text.split_once(':').unwrap_or_default();
                    r.fills.push((tensor.to_string(), fill.to_string()));
                }
                "s" => r.schedules.push(need()?.trim_matches('"').to_string()),
                "time" => r.time = Some(value.map_or(Ok(1), count)?),
                "nthreads" => {
                    let text = need()?;
                    let n =
                        spec::thread_count(text).map_err(|e| miette!("-nthreads={text}: {e}"))?;
                    r.threads = Some(n);
                }
                "print-compute" if value.is_none() => r.print_compute = true,
                "print-assembly" if value.is_none() => r.print_assembly = true,
                "write-source" => r.write_source = Some(PathBuf::from(need()?)),
                _ => {
                    return Err(miette!(
                        help = format!("supported TACO options: {SUPPORTED}"),
                        "unsupported TACO option `{arg}`"
                    ))
                }
            }
        }
        Ok(r)
    }
}

/// sparsec's `-g` kind for TACO's fill letter (`taco -g=T:FILL`, `taco/util/fill.h`) for a
/// tensor of order `order`. TACO fills `d`, `u` and `r` tensors completely (sequence, ones
/// or random values: sparsec's dense generator draws random ones); `s` picks 7% of the
/// coordinates of each mode in turn, so 0.07^order of the components; `h` picks 0.5% of
/// all components. Only the first letter counts, as in TACO. The slicing (`l`, `v`), FEM
/// (`f`) and blocked (`b`) fills have no sparsec generator.
fn generator(fill: &str, order: usize) -> Result<String> {
    match fill.chars().next() {
        Some('d' | 'u' | 'r') => Ok("dense".into()),
        Some('s') => Ok(format!("uniform:{}", 0.07f64.powi(order as i32))),
        Some('h') => Ok("uniform:0.005".into()),
        Some('l' | 'v' | 'f' | 'b') => Err(miette!(
            help = "use d, u, r, s or h, or read the tensor with -i=T:FILE",
            "TACO fill `{fill}` (slicing, FEM or blocked) has no sparsec generator"
        )),
        _ => Err(miette!(
            help = "TACO fills: d (dense), u (uniform), r (random), s (sparse), h (hypersparse)",
            "unknown TACO fill `{fill}`"
        )),
    }
}
