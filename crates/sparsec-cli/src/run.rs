//! `sparsec run`: compile an expression, run it on tensors read from files or generated,
//! optionally time it, check it against the reference evaluator and write the result.

use std::path::Path;
use std::time::{Duration, Instant};

use miette::{miette, Report, Result, WrapErr};
use sparsec::io::{self, MtxLayout, MtxWriteOptions};
use sparsec::kernel::{Backend, Kernel, Timings};
use sparsec::reference;
use sparsec::tensor::{Tensor, ValueType, Values};

use sparsec::notation::ast::Op;
use sparsec::notation::cin::{CExpr, Statement};

use crate::spec::{
    self, BackendArg, DeviceArg, Problem, ScheduleArgs, Source, StatementArgs, SumsArg,
};

const RUN_HELP: &str = "\
EXAMPLES:
  # SpMV on a MatrixMarket matrix (CSR), x generated, checked against the reference:
  sparsec run \"y(i) = A(i,j) * x(j)\" -f A:ds -i A:bcsstk13.mtx -g x:dense --check

  # Time 10 runs of SpMV on a generated 100000 x 100000 matrix with 0.01% nonzeros:
  sparsec run \"y(i) = A(i,j) * x(j)\" -f A:csr -g A:uniform:0.0001 -g x:dense \\
      -d i:100000 -d j:100000 --time 10

  # SpGEMM with sparse output, written to a file:
  sparsec run \"C(i,j) = A(i,k) * B(k,j)\" -f A:csr -f B:csr -f C:csr \\
      -i A:a.mtx -i B:b.mtx -o C:c.mtx

  # SpMV with the row-chunked parallel schedule on 2 threads:
  sparsec run \"y(i) = A(i,j) * x(j)\" -f A:csr -i A:a.mtx -g x:dense --threads 2 \\
      -s \"split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)\"

  # SpMV compiled in process by the JIT backend (no C compiler):
  sparsec run \"y(i) = A(i,j) * x(j)\" -f A:csr -g A:uniform -g x:dense -d i:1000 -d j:1000 \\
      --backend jit

  # MTTKRP on a FROSTT tensor:
  sparsec run \"A(i,j) = B(i,k,l) * C(k,j) * D(l,j)\" -f B:sss -i B:t.tns \\
      -g C:dense -g D:dense -d j:16

GENERATORS (-g NAME:KIND):
  Dimensions come from -d VAR:SIZE or from the other inputs.
  dense                 every component
  uniform[:DENSITY]     uniformly random, default density 0.01
  banded[:BW]           matrix with |i-j| <= BW, default 1
  powerlaw[:NNZ_ROW]    rows' (first-mode slices') nonzero counts follow a power law (Zipf,
                        exponent 1), NNZ_ROW nonzeros per row on average (default 8)
  skewed[:K,C]          matrix, row i holds about K*C^i nonzeros (default 1,1.01)

SCHEDULES (-s):
  Transformations separated by `,` or `.`, applied left to right:
  reorder(a,b)  order(a,b,...)  split(i,i0,i1,F)  divide(i,i0,i1,PARTS)  fuse(i,j,f)
  pos(j,jp,A(i,j))  coord(jp,jc)  bound(i,ib,MinExact|MinConstraint|MaxExact|MaxConstraint,N)
  unroll(i,F)  parallelize(i,CPUThread|CPUVector|GPU*|NotParallel,NoRaces|IgnoreRaces|
  Atomics|Temporary|ParallelReduction[,static|dynamic|guided[,CHUNK]])
  precompute(EXPR,i|(i,j),i|(i,j)[,WORKSPACE])  mergeby(i,TwoFinger|Gallop)
  assemble(T,Append|Insert)
  TACO's spellings work too: pos(j,jp,A), bound(i,ib,N,MaxExact), {i,j} lists.

OUTPUTS (-o NAME:FILE):
  .mtx for order <= 2 (scalars, dense vectors and matrices as MatrixMarket `array`), .tns
  and .spt any order. A scalar's .tns file is one line holding its value; a 1x1 matrix or
  length-1 vector read with -i for a tensor the statement uses without indices becomes
  that scalar. Pattern entries of .mtx inputs read as 1.0.
";

/// Compile and run a tensor index notation statement.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = format!(
    "{RUN_HELP}\n{}\n\n{}",
    crate::formats::FILE_TYPES_HELP,
    crate::formats::FORMAT_HELP
))]
pub struct RunArgs {
    #[command(flatten)]
    pub statement: StatementArgs,
    /// Threads of parallel loops (default: OMP_NUM_THREADS, else all cores).
    #[arg(long, value_name = "N", value_parser = spec::thread_count)]
    pub threads: Option<usize>,
    /// Generate an input instead of reading it: dense, uniform[:DENSITY], banded[:BW],
    /// powerlaw[:NNZ_PER_ROW], skewed[:K,C].
    #[arg(short = 'g', long = "generate", value_name = "NAME:KIND")]
    pub generate: Vec<String>,
    /// Write the result to a file (.mtx, .tns or .spt).
    #[arg(short = 'o', long = "output", value_name = "NAME:FILE")]
    pub output: Option<String>,
    /// Run N times after one warm-up and report median, min and max phase times.
    #[arg(long, value_name = "N", value_parser = spec::positive)]
    pub time: Option<usize>,
    /// Also evaluate with the sparse reference evaluator and compare (fails above 1e-9).
    #[arg(long)]
    pub check: bool,
    /// Print nothing on standard output (errors and warnings still go to standard error).
    #[arg(long, short = 'q', conflicts_with = "json")]
    pub quiet: bool,
    /// Print one JSON object instead of the report: the kernel (target, loops, threads,
    /// compile seconds), the timings of `--time` per phase (median, min and max seconds),
    /// the check's difference and the result's shape, for scripts.
    #[arg(long)]
    pub json: bool,
    /// Backend: `tiered` (the cached C kernel, else the JIT's at once while gcc compiles in
    /// the background), `c` (gcc, cached, OpenMP threads), `jit` (Cranelift, serial),
    /// `opencl` (GPU schedules on an OpenCL device) or `cuda`.
    #[arg(long, value_enum, default_value_t = BackendArg::Tiered)]
    pub backend: BackendArg,
    /// Where kernels run: `cpu` (with `--backend`), `opencl` or `cuda`; a statement without
    /// a schedule gets a default GPU mapping on a GPU device.
    #[arg(long, value_enum, conflicts_with = "backend")]
    pub device: Option<DeviceArg>,
    /// Seed of the generated inputs (tensor k uses SEED + k).
    #[arg(long, value_name = "S", default_value_t = 42)]
    pub seed: u64,
    /// Use the formats, schedule and threads `sparsec tune` chose for this statement and
    /// inputs of this structure (an error when none is cached).
    #[arg(long)]
    pub tuned: bool,
    /// How the version of gathered sums (SpMV's rows, TTV's fibers) is chosen: measured
    /// over the first runs, by the run-time tests (results identical to the last bit), or
    /// one fixed version.
    #[arg(long, value_enum, default_value_t = SumsArg::Measured)]
    pub sums: SumsArg,
    /// Run under `mpirun`, the matrix read from a file split among the ranks by rows
    /// (balanced by nonzeros), each rank's rows computed by its own kernel, the result
    /// gathered on rank 0 (needs a build with the `mpi` feature).
    #[arg(long)]
    pub distributed: bool,
}

#[cfg(feature = "mpi")]
fn distributed(args: &RunArgs) -> Result<()> {
    crate::distributed::run(args)
}

#[cfg(not(feature = "mpi"))]
fn distributed(_: &RunArgs) -> Result<()> {
    Err(miette!(
        help = "build it with `cargo build -p sparsec-cli --features mpi` (needs an MPI \
                library: Debian's openmpi-bin and libopenmpi-dev, and libclang-dev)",
        "--distributed needs a sparsec built with MPI, and this one was built without"
    ))
}

/// Largest accepted scaled difference between kernel and reference.
const TOLERANCE: f64 = 1e-9;

/// Run the `run` subcommand.
pub fn run(args: &RunArgs) -> Result<()> {
    if args.distributed {
        return distributed(args);
    }
    if args.quiet || args.json {
        spec::quiet();
    }
    // What `--json` prints, filled as the run goes.
    let mut record = serde_json::Map::new();
    args.statement.schedule.parse()?;
    let problem = Problem::new(&args.statement.expr, &args.statement.spec, &args.generate)?;
    let out_name = problem.tensors[0].0.clone();
    let output_file = match &args.output {
        Some(text) => {
            let (name, file) = spec::split_pair("-o", text, "FILE")?;
            if name != out_name {
                return Err(miette!(
                    "-o {text}: `{name}` is not the output of the statement; the output is `{out_name}`"
                ));
            }
            Some(file.to_string())
        }
        None => None,
    };
    let statement = problem.bind()?;
    if let Some(file) = &output_file {
        check_output_kind(Path::new(file), statement.tensors[0].dims.len())?;
    }
    for (k, (name, _)) in problem.tensors.iter().enumerate().skip(1) {
        if problem.sources[k].is_none() {
            return Err(miette!(
                help = format!(
                    "read it with -i {name}:FILE (.mtx, .tns, .spt) or generate it with -g {name}:uniform"
                ),
                "missing input: no data for tensor `{name}`"
            ));
        }
    }
    if problem.sources[0].is_some() && !statement.accumulate {
        return Err(miette!(
            "the output `{out_name}` was given an initial value, which only `+=` statements use"
        ));
    }

    // A schedule that does not apply is refused before any input is read in full.
    if !args.tuned {
        args.statement.schedule.concrete(&statement)?;
    }
    let (initial, inputs) = load_tensors(&problem, &statement, args.seed)?;
    let backend = match args.device {
        Some(device) => device.backend(args.backend),
        None => args.backend.into(),
    };
    let (statement, inputs, schedule, threads) = if args.tuned {
        use_tuned_choice(
            &args.statement.schedule,
            statement,
            inputs,
            args.threads,
            backend,
        )?
    } else {
        (
            statement,
            inputs,
            args.statement.schedule.clone(),
            args.threads,
        )
    };
    for (decl, t) in statement.tensors[1..].iter().zip(&inputs) {
        crate::outln!("{}: {}", decl.name, shape_text(t));
    }
    if let Some(warning) = padding_meets_non_finite(&statement, &inputs) {
        eprintln!("warning: {warning}");
    }

    let started = Instant::now();
    // The entries per row of the first sparse input of order 2 or more, which a GPU
    // target's default mapping is chosen by.
    let average_fiber = inputs
        .iter()
        .find(|t| t.dims().len() >= 2 && !t.format().is_all_dense())
        .map(|t| t.values().len() as f64 / t.dims()[0].max(1) as f64);
    let mut kernel = schedule.kernel(&statement, backend, average_fiber)?;
    if let Some(n) = threads {
        kernel.set_threads(n);
    }
    kernel.set_sum_versions(args.sums.into());
    let compile_time = started.elapsed();
    record.insert("kernel".into(), report_kernel(&kernel, compile_time));
    report_conversions(&kernel, &inputs);

    let refs: Vec<&Tensor> = inputs.iter().collect();
    let run_once = || {
        kernel
            .run_timed(&refs, initial.as_ref())
            .map_err(Report::new)
            .wrap_err("running the kernel failed")
    };
    let (result, _) = run_once()?;
    let main_target = kernel.targets().main().name();
    if args.time.is_some() && kernel.running_target() != main_target {
        // Time the code that will keep running: wait for the main target's.
        let (quick, waiting) = (kernel.running_target(), Instant::now());
        finish_compiling(&kernel);
        if kernel.running_target() == main_target {
            let waited = waiting.elapsed();
            let when = if waited < Duration::from_millis(1) {
                "it was ready when the first run ended".to_string()
            } else {
                format!("waited for {} after the first run", spec::ms(waited))
            };
            crate::outln!(
                "kernel: the {main_target} target's code replaces the {quick}'s for the \
                 timed runs ({when})"
            );
        }
        run_once()?;
    }
    if let Some(n) = args.time {
        let trials = kernel
            .run_version_trials(&refs, initial.as_ref(), None)
            .map_err(Report::new)
            .wrap_err("running the kernel failed")?;
        let mut timings: Vec<Timings> = Vec::with_capacity(n);
        for _ in 0..n {
            timings.push(run_once()?.1);
        }
        let runs = if n == 1 { "run" } else { "runs" };
        let trial_runs = match trials {
            0 => String::new(),
            1 => " and 1 trial of its sum versions".to_string(),
            _ => format!(" and {trials} trials of its sum versions"),
        };
        crate::outln!("timing: {n} {runs} after 1 warm-up{trial_runs}");
        let mut timing = serde_json::Map::new();
        timing.insert("runs".into(), n.into());
        for (phase, times) in [
            ("prepare", timings.iter().map(|t| t.prepare).collect()),
            ("compute", timings.iter().map(|t| t.compute).collect()),
            ("assembly", timings.iter().map(|t| t.assemble).collect()),
        ] {
            timing.insert(phase.into(), report_phase(phase, times));
        }
        if kernel.assembles_output() {
            // New values of the same structure: the assembled output is kept and only its
            // values are recomputed (`Kernel::assemble`, then `Kernel::compute`).
            let mut kept = kernel
                .assemble(&refs, initial.as_ref())
                .map_err(Report::new)
                .wrap_err("assembling the output failed")?;
            let mut updates: Vec<Timings> = Vec::with_capacity(n);
            for _ in 0..n {
                updates.push(
                    kernel
                        .compute(&refs, initial.as_ref(), &mut kept)
                        .map_err(Report::new)
                        .wrap_err("recomputing the output's values failed")?,
                );
            }
            crate::outln!("values only, assembled structure kept:");
            let kept = serde_json::json!({
                "compute": report_phase("compute", updates.iter().map(|t| t.compute).collect()),
                "update": report_phase("update", updates.iter().map(|t| t.assemble).collect()),
            });
            timing.insert("values_only".into(), kept);
        }
        record.insert("timing".into(), timing.into());
        crate::outln!("  compile   {}", spec::ms(compile_time));
        if let Some(version) = kernel.sum_version() {
            let hints = kernel
                .prefetch_distance()
                .map(|d| format!(" (where it prefetches, {d} entries ahead)"))
                .unwrap_or_default();
            crate::outln!(
                "kernel: sums in {}{hints}, the fastest of its versions in the first runs",
                version.describe()
            );
        }
    }

    if args.check {
        // The magnitude of the summed terms comes with the result, so that cancellation in
        // a long sum does not read as an error.
        let (expected, magnitude) =
            reference::try_evaluate_with_magnitude(&statement, &refs, initial.as_ref())
                .map_err(|e| miette!("--check: {e}"))?;
        if result.dims() != expected.dims() {
            return Err(miette!(
                "the result's dimensions differ from the reference's"
            ));
        }
        let diff = reference::max_error(&result, &expected, &magnitude);
        if diff > TOLERANCE {
            return Err(miette!(
                "check FAILED: max difference from the reference is {diff:.3e} of the terms' \
                 magnitude (tolerance {TOLERANCE:e})"
            ));
        }
        crate::outln!(
            "check: ok, max difference from the reference {diff:.3e} (relative to the terms' magnitude)"
        );
        record.insert(
            "check".into(),
            serde_json::json!({ "max_difference": diff }),
        );
    }

    let mut output = serde_json::json!({
        "name": out_name,
        "dims": result.dims(),
        "format": result.format().spelling(),
        "stored": result.stored_values(),
    });
    match output_file {
        Some(file) => {
            write_output(Path::new(&file), &result)?;
            crate::outln!("{out_name}: {}, written to {file}", shape_text(&result));
            output["file"] = file.into();
        }
        None => print_summary(&out_name, &result),
    }
    record.insert("output".into(), output);
    if args.json {
        println!("{}", serde_json::Value::Object(record));
    }
    // The result is out; let the background compilation finish so that the next run of
    // this kernel finds the C compiler's code in the cache.
    finish_compiling(&kernel);
    Ok(())
}

/// The statement's tensors in their declared formats, read or generated (generated tensor
/// `k` with seed `seed + k`): the output's initial value, if given, and the inputs.
pub fn load_tensors(
    problem: &Problem,
    statement: &Statement,
    seed: u64,
) -> Result<(Option<Tensor>, Vec<Tensor>)> {
    let load = |k: usize| -> Result<Option<Tensor>> {
        let decl = &statement.tensors[k];
        // An input's declared fill value (`--fill`, or its file's) is what its missing
        // entries hold; the output's initial value keeps its own.
        let declared_fill = (k > 0).then_some(decl.fill);
        let tensor = match problem.sources[k].as_ref() {
            None => return Ok(None),
            Some(Source::File(path, data)) => {
                let data = data.clone();
                match declared_fill.filter(|f| f.to_bits() != data.fill().to_bits()) {
                    Some(fill) => {
                        Tensor::from_coo_filled(data.into_coo(), &decl.format, ValueType::F64, fill)
                    }
                    None => data.into_tensor(&decl.format, ValueType::F64),
                }
                .map_err(|e| {
                    miette!(
                        "cannot store `{}` from {} in format {}: {e}",
                        decl.name,
                        path.display(),
                        decl.format
                    )
                })?
            }
            Some(Source::Generated(kind)) => {
                let coo = kind
                    .generate(&decl.dims, seed.wrapping_add(k as u64))
                    .map_err(|e| miette!("cannot generate `{}`: {e}", decl.name))?;
                let fill = declared_fill.unwrap_or(0.0);
                Tensor::from_coo_filled(coo, &decl.format, ValueType::F64, fill).map_err(|e| {
                    miette!(
                        "cannot store generated `{}` in format {}: {e}",
                        decl.name,
                        decl.format
                    )
                })?
            }
        };
        Ok(Some(tensor))
    };
    let initial = load(0)?;
    let mut inputs = Vec::with_capacity(statement.tensors.len() - 1);
    for k in 1..statement.tensors.len() {
        inputs.push(load(k)?.ok_or_else(|| {
            miette!(
                "missing input: no data for tensor `{}`",
                statement.tensors[k].name
            )
        })?);
    }
    Ok((initial, inputs))
}

/// `--tuned`: the choice `sparsec tune` cached for this statement and inputs' structure
/// (the statement with its formats, the inputs converted to them, its schedule and threads).
fn use_tuned_choice(
    given: &ScheduleArgs,
    statement: Statement,
    inputs: Vec<Tensor>,
    threads: Option<usize>,
    backend: Backend,
) -> Result<(Statement, Vec<Tensor>, ScheduleArgs, Option<usize>)> {
    if given.schedule.is_some() {
        return Err(miette!(
            "--tuned and -s both give a schedule; --tuned uses the one `sparsec tune` chose"
        ));
    }
    let max_threads = threads.unwrap_or_else(sparsec::kernel::default_threads);
    let choice = sparsec::tune::lookup_on(&statement, &inputs, max_threads, backend)
        .map_err(Report::new)?
        .ok_or_else(|| {
            miette!(
                help = "run `sparsec tune` with the same expression, formats, inputs and \
                        --threads first",
                "--tuned: no tuned choice is cached for this statement and inputs on {max_threads} \
                 threads"
            )
        })?;
    let tuned = choice.apply_formats(&statement);
    // A tuned format that pads (a candidate's result was checked on the inputs tuned with,
    // whose values may all have been finite) must not turn the entries' results into NaN.
    let padded = tuned.tensors[1..]
        .iter()
        .zip(&statement.tensors[1..])
        .any(|(chosen, given)| chosen.format.pads_with_zeros() && !given.format.pads_with_zeros());
    if padded {
        if let Some(why) = padding_meets_non_finite(&tuned, &inputs) {
            crate::outln!("tuned: not used, the formats given run instead: {why}");
            return Ok((statement, inputs, given.clone(), threads));
        }
    }
    let mut converted = Vec::with_capacity(inputs.len());
    for (decl, input) in tuned.tensors[1..].iter().zip(inputs) {
        converted.push(if input.format() == &decl.format {
            input
        } else {
            input.convert(&decl.format).map_err(|e| {
                miette!(
                    "--tuned: cannot convert `{}` to {}: {e}",
                    decl.name,
                    decl.format
                )
            })?
        });
    }
    let formats: Vec<String> = choice
        .formats
        .iter()
        .map(|(n, f)| format!("{n}:{f}"))
        .collect();
    let schedule = (!choice.schedule.is_empty()).then(|| choice.schedule.clone());
    crate::outln!(
        "tuned: {} with {} on {} threads ({:.2}x over the default when tuned)",
        formats.join(" "),
        schedule.as_deref().unwrap_or("the default schedule"),
        choice.threads,
        choice.speedup
    );
    Ok((
        tuned,
        converted,
        ScheduleArgs { schedule },
        Some(choice.threads),
    ))
}

/// Where an input of `statement` is stored in a format that pads (ELL's and sliced ELL's
/// slots, BCSR's blocks, DIA's diagonals, a dense level below a sparse one hold zeros its
/// entries did not have) and infinite or NaN values can meet those zeros, what that does:
/// each padding zero multiplied by such a value is NaN, where the entries alone give a
/// number. Such values are another input's, or a quotient by a tensor, which is infinite
/// where the denominator stores nothing.
fn padding_meets_non_finite(statement: &Statement, inputs: &[Tensor]) -> Option<String> {
    let decls = &statement.tensors[1..];
    let padded = decls.iter().position(|d| d.format.pads_with_zeros())?;
    let non_finite = inputs.iter().enumerate().position(|(k, t)| {
        k != padded
            && match t.values() {
                Values::F64(v) => v.iter().any(|x| !x.is_finite()),
                Values::F32(v) => v.iter().any(|x| !x.is_finite()),
            }
    });
    let source = match (non_finite, denominator_tensor(&statement.rhs)) {
        (Some(k), _) => format!("the infinite or NaN values of `{}`", decls[k].name),
        (None, Some(t)) => format!(
            "the infinite quotients by `{}` where it stores nothing",
            statement.tensors[t].name
        ),
        (None, None) => return None,
    };
    Some(format!(
        "`{}` is stored as {}, whose padding zeros multiply {source}: components of the \
         result can be NaN where `{}`'s entries give numbers (a format without padding, \
         such as csr, dcsr or coo, keeps them)",
        decls[padded].name, decls[padded].format, decls[padded].name
    ))
}

/// A tensor read in a denominator of `expr`, if any.
fn denominator_tensor(expr: &CExpr) -> Option<usize> {
    match expr {
        CExpr::Binary(Op::Div, a, b) => first_tensor(b).or_else(|| denominator_tensor(a)),
        CExpr::Binary(_, a, b) => denominator_tensor(a).or_else(|| denominator_tensor(b)),
        CExpr::Neg(a) | CExpr::Sum(_, a) => denominator_tensor(a),
        CExpr::Math(_, args) => args.iter().find_map(denominator_tensor),
        CExpr::Access(_) | CExpr::Literal(_) => None,
    }
}

fn first_tensor(expr: &CExpr) -> Option<usize> {
    match expr {
        CExpr::Access(a) => Some(a.tensor),
        CExpr::Binary(_, a, b) => first_tensor(a).or_else(|| first_tensor(b)),
        CExpr::Neg(a) | CExpr::Sum(_, a) => first_tensor(a),
        CExpr::Math(_, args) => args.iter().find_map(first_tensor),
        CExpr::Literal(_) => None,
    }
}

/// Refuse an output file that cannot be written, before anything is computed: a kind that
/// cannot hold a tensor of `order`, or a path [`unwritable`] refuses.
pub(crate) fn check_output_kind(path: &Path, order: usize) -> Result<()> {
    let kind = io::FileKind::from_path(path).map_err(Report::new)?;
    if let Some(why) = unwritable(path) {
        return Err(miette!("-o {}: {why}", path.display()));
    }
    if kind == io::FileKind::MatrixMarket && order > 2 {
        return Err(miette!(
            "-o {}: cannot write an order-{order} tensor there: MatrixMarket holds only \
             scalars, vectors and matrices; use .tns or .spt",
            path.display()
        ));
    }
    Ok(())
}

/// Why this process cannot write the file `path`, if it cannot: its directory does not
/// exist, it is a directory, or writing is refused. Permission bits do not say (root
/// ignores them; `/proc` refuses new files whatever they say): an existing file is opened
/// for appending, which changes nothing, and otherwise a probe file is created and removed
/// beside it.
pub(crate) fn unwritable(path: &Path) -> Option<String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Some(format!("the directory `{}` does not exist", dir.display()));
    }
    let refused = |e: std::io::Error| Some(format!("cannot write there: {e}"));
    if path.is_dir() {
        return Some("it is a directory, not a file".into());
    }
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .err()
            .and_then(refused);
    }
    let probe = dir.join(format!(".sparsec-output-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            // The probe is empty and named for this process; failing to remove it harms
            // nothing.
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) => refused(e),
    }
}

/// Write a result to `path` (dense vectors and matrices as MatrixMarket arrays).
pub(crate) fn write_output(path: &Path, result: &Tensor) -> Result<()> {
    let dense_matrix_market = io::FileKind::from_path(path).ok()
        == Some(io::FileKind::MatrixMarket)
        && result.format().is_all_dense()
        && (1..=2).contains(&result.order());
    let written = if dense_matrix_market {
        io::write_matrix_market_tensor(
            path,
            result,
            &MtxWriteOptions {
                layout: MtxLayout::Array,
                ..MtxWriteOptions::default()
            },
        )
    } else {
        io::write_any(path, result)
    };
    written
        .map_err(Report::new)
        .wrap_err("cannot write the output")
}

/// How the kernel was obtained and which code runs (also as `--json` records it).
fn report_kernel(kernel: &Kernel, compile_time: Duration) -> serde_json::Value {
    let (running, main) = (kernel.running_target(), kernel.targets().main().name());
    let took = spec::ms(compile_time);
    // The time is the running target's: the other one's compilation is still going on.
    let how = match (running == main, kernel.was_compiled()) {
        (false, _) => format!(
            "compiled by the {running} target in {took}, which runs until the {main} \
             target's code, compiling in the background, is ready"
        ),
        (true, true) => format!("compiled by the {running} target in {took}"),
        (true, false) => format!("loaded from cache ({running} target) in {took}"),
    };
    let threads = kernel.threads_used();
    let plural = if threads == 1 { "thread" } else { "threads" };
    crate::outln!(
        "kernel: {how} (loops {}; {threads} {plural})",
        kernel.loop_order().join(", "),
    );
    serde_json::json!({
        "target": running,
        "compiled": kernel.was_compiled(),
        "compile_seconds": compile_time.as_secs_f64(),
        "loops": kernel.loop_order(),
        "threads": threads,
    })
}

/// Say on stderr which operands the loop order forces to be converted at every run, and
/// what that copies, so that the cost of a reorder against the storage order is visible.
fn report_conversions(kernel: &Kernel, inputs: &[Tensor]) {
    let tensors = &kernel.statement().tensors;
    for operand in kernel.operand_layouts() {
        let declared = &tensors[operand.tensor];
        if operand.format == declared.format {
            continue;
        }
        // Tensor 0 is the output: its converted copy is written, then converted back.
        let what = match operand.tensor.checked_sub(1) {
            Some(k) => format!("{} stored entries copied", inputs[k].stored_values()),
            None => "the result is converted back after every run".to_string(),
        };
        let transposed = matches!(
            (declared.format.mode_order(), operand.format.mode_order()),
            (Some(stored), Some(read)) if stored != read
        );
        let why = if !transposed {
            format!(
                "this statement cannot read the layout of `{}` in place (blocks, slots or \
                 diagonals summed under `+`, `-` or a reduction, levels below a non-unique \
                 level, a level the schedule's computed variables cannot locate into, or \
                 an order other operands impose)",
                declared.name
            )
        } else {
            format!(
                "the loop order ({}) does not follow the storage of `{}`",
                kernel.loop_order().join(", "),
                declared.name
            )
        };
        eprintln!(
            "note: {why}: it is converted from {} to {} at every run ({what})",
            declared.format, operand.format,
        );
    }
}

/// Wait for a tiered kernel's C compilation; if it failed, say so (the JIT's code keeps
/// running, so the run itself succeeded).
fn finish_compiling(kernel: &Kernel) {
    if let Err(e) = kernel.finish_compiling() {
        eprintln!("warning: {e}");
    }
}

/// Print the median, min and max of one phase's times.
pub(crate) fn report_phase(name: &str, mut times: Vec<Duration>) -> serde_json::Value {
    times.sort_unstable();
    let n = times.len();
    let median = if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2
    };
    crate::outln!(
        "  {name:<9} median {}, min {}, max {}",
        spec::ms(median),
        spec::ms(times[0]),
        spec::ms(times[n - 1])
    );
    serde_json::json!({
        "median_seconds": median.as_secs_f64(),
        "min_seconds": times[0].as_secs_f64(),
        "max_seconds": times[n - 1].as_secs_f64(),
    })
}

fn dims_text(dims: &[usize]) -> String {
    if dims.is_empty() {
        "scalar".to_string()
    } else {
        dims.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("x")
    }
}

/// `4x4 csr, 16 stored`, or `scalar` (a scalar has no format and one value).
fn shape_text(t: &Tensor) -> String {
    if t.dims().is_empty() {
        "scalar".to_string()
    } else {
        format!(
            "{} {}, {} stored",
            dims_text(t.dims()),
            t.format(),
            t.stored_values()
        )
    }
}

/// A short description of the result and its first entries.
pub(crate) fn print_summary(name: &str, result: &Tensor) {
    const SHOWN: usize = 8;
    let coo = result.to_coo();
    crate::outln!("{name}: {}", shape_text(result));
    let nonzero: Vec<usize> = (0..coo.len()).filter(|&e| coo.values[e] != 0.0).collect();
    if nonzero.len() != coo.len() {
        crate::outln!("  {} nonzero", nonzero.len());
    }
    for &e in nonzero.iter().take(SHOWN) {
        let c: Vec<String> = coo.coord(e).iter().map(|x| x.to_string()).collect();
        crate::outln!("  {name}({}) = {}", c.join(","), coo.values[e]);
    }
    if nonzero.len() > SHOWN {
        crate::outln!("  ... {} more", nonzero.len() - SHOWN);
    }
}
