//! `sparsec specialise`: a dense affine program (docs/affine.md) specialised to the
//! non-zero structure of its inputs. It prints the regions found and whether they are
//! exact, the generated code, or runs it with the input, output and timing conventions
//! of `sparsec run`, beside the dense program when asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use miette::{miette, IntoDiagnostic, Report, Result, WrapErr};
use sparsec::affine::dense::Arrays;
use sparsec::affine::kernel::AffineKernel;
use sparsec::affine::solution_map::SolutionMap;
use sparsec::affine::{self, inputs, parse_program, Specialised};
use sparsec::format::Format;
use sparsec::io;
use sparsec::jit::Toolchain;
use sparsec::kernel::Backend;
use sparsec::tensor::{Coo, Tensor, ValueType};

use crate::run::{check_output_kind, report_phase, write_output};
use crate::spec::{self, split_pair};

/// What `--emit` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The boxes covering each input's non-zeros, and what they cost.
    Boxes,
    /// Each statement's executed iterations, in isl's syntax.
    Regions,
    /// The generated C.
    C,
}

/// The backends a specialised program compiles with.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffineBackend {
    /// C compiled by the system compiler, with OpenMP.
    C,
    /// Cranelift, in process.
    Jit,
}

/// `sparsec specialise PROG -i NAME:FILE ... [--threshold D] [--emit regions|c] [--run]`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "EXAMPLES:\n  sparsec specialise examples/affine/mm.c -i A:a.mtx -i B:b.mtx\n  \
                        sparsec specialise examples/affine/gemm.c \
                        -i A:a.mtx -i B:b.mtx --scalar alpha=1 --scalar beta=0 \
                        --run --dense --time 5\n\n\
                        LANGUAGE:\n  Dense programs as PolyBench writes them: docs/affine.md; \
                        programs to start from: examples/affine/"
)]
pub struct SpecialiseArgs {
    /// The affine program (C loop nests with declarations; see docs/affine.md).
    pub program: PathBuf,
    /// An array's initial contents from a file (.mtx, .tns, .spt); an array not given
    /// starts as zeros.
    #[arg(short = 'i', long = "input", value_name = "NAME:FILE")]
    pub inputs: Vec<String>,
    /// A scalar's value.
    #[arg(long = "scalar", value_name = "NAME=X")]
    pub scalars: Vec<String>,
    /// A parameter's value, where no input's dimensions fix it.
    #[arg(short = 'p', long = "param", value_name = "NAME=N")]
    pub params: Vec<String>,
    /// The least density of a box of an input's pattern, in (0, 1]: lower merges more
    /// non-zeros into fewer boxes, with explicit zeros among them.
    #[arg(long, default_value_t = 1.0, value_name = "D")]
    pub threshold: f64,
    /// Analyse through the solution map: the regions solved once for boxes whose bounds
    /// are parameters (one per array an input gives; the others start as zeros), then
    /// applied to these inputs' boxes (both times reported).
    #[arg(long)]
    pub map: bool,
    /// Print the executed regions or the generated C instead of the report.
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// Run the specialised program.
    #[arg(long)]
    pub run: bool,
    /// Also compile and run the program as written, and check that both agree.
    #[arg(long)]
    pub dense: bool,
    /// Write an array's final contents to a file (.mtx, .tns or .spt).
    #[arg(short = 'o', long = "output", value_name = "NAME:FILE")]
    pub outputs: Vec<String>,
    /// The backend: `c` (C with OpenMP, the default) or `jit` (Cranelift).
    #[arg(long, value_enum, default_value = "c")]
    pub backend: AffineBackend,
    /// Threads of parallel loops (default: OMP_NUM_THREADS, else all cores).
    #[arg(long, value_name = "N", value_parser = spec::thread_count)]
    pub threads: Option<usize>,
    /// Run N times after one warm-up and report the median, min and max times.
    #[arg(long, value_name = "N", value_parser = spec::positive)]
    pub time: Option<usize>,
}

/// The most points counted when the report sizes a set.
const COUNT_LIMIT: usize = 5_000_000;

fn named_values(flag: &str, texts: &[String]) -> Result<Vec<(String, String)>> {
    texts
        .iter()
        .map(|text| {
            let (name, value) = text
                .split_once('=')
                .filter(|(n, v)| !n.trim().is_empty() && !v.trim().is_empty())
                .ok_or_else(|| miette!("{flag} {text}: expected NAME=VALUE"))?;
            Ok((name.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

/// Run `sparsec specialise`.
pub fn specialise(args: &SpecialiseArgs) -> Result<()> {
    let name = args.program.display().to_string();
    let text = std::fs::read_to_string(&args.program)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read {name}"))?;
    let with_source = |e: affine::AffineError| Report::new(e.in_source(&name, &text));
    let program = parse_program(&text).map_err(with_source)?;

    let mut given = BTreeMap::new();
    for (p, value) in named_values("--param", &args.params)? {
        let v: i64 = value
            .parse()
            .map_err(|_| miette!("--param {p}={value}: `{value}` is not an integer"))?;
        given.insert(p, v);
    }
    let mut files: Vec<(String, Coo)> = Vec::new();
    for text in &args.inputs {
        let (array, file) = split_pair("-i", text, "FILE")?;
        let mut coo = io::read_any(file).map_err(Report::new)?.into_coo();
        // An `n x 1` MatrixMarket file serves a vector.
        if let Some(decl) = program.array(array) {
            if decl.extents.len() == 1 && coo.dims.len() == 2 && coo.dims[1] == 1 {
                coo = Coo {
                    dims: vec![coo.dims[0]],
                    coords: coo.coords.chunks(2).map(|c| c[0]).collect(),
                    values: coo.values,
                };
            }
        }
        files.push((array.to_string(), coo));
    }
    let shapes: Vec<(String, Vec<usize>)> = files
        .iter()
        .map(|(n, c)| (n.clone(), c.dims.clone()))
        .collect();
    let params = inputs::bind_params(&program, &given, &shapes).map_err(Report::new)?;

    // Every array's pattern: from its file, its scalar value, or empty (it starts as
    // zeros).
    let mut scalars = BTreeMap::new();
    for (scalar, value) in named_values("--scalar", &args.scalars)? {
        if !program.array(&scalar).is_some_and(|a| a.extents.is_empty()) {
            return Err(miette!(
                "--scalar {scalar}: the program declares no scalar `{scalar}`"
            ));
        }
        let x: f64 = value
            .parse()
            .map_err(|_| miette!("--scalar {scalar}={value}: `{value}` is not a number"))?;
        scalars.insert(scalar, x);
    }
    let mut given: BTreeMap<String, inputs::Given> = BTreeMap::new();
    for (name, coo) in &files {
        given.insert(name.clone(), inputs::Given::Tensor(coo));
    }
    for (name, x) in &scalars {
        given.insert(name.clone(), inputs::Given::Scalar(*x));
    }
    let structure = inputs::structure(&program, &given, args.threshold).map_err(Report::new)?;
    let report: Vec<String> = structure
        .covers
        .iter()
        .map(|(name, cover)| match cover {
            Ok(c) => format!(
                "  {name}: {} box(es) cover {} non-zeros with {} explicit zeros",
                c.boxes.len(),
                c.nonzeros,
                c.padding
            ),
            Err(order) => format!("  {name}: taken as dense (order {order})"),
        })
        .collect();
    if args.emit == Some(Emit::Boxes) {
        for line in &report {
            crate::outln!("{line}");
        }
        return Ok(());
    }
    let start = Instant::now();
    let (specialised, map_time) = if args.map {
        let map = SolutionMap::with_fixed(program, Some(&params), &structure.zeros)
            .map_err(with_source)?;
        let built = start.elapsed();
        (
            map.apply(&structure.boxes).map_err(with_source)?,
            Some(built),
        )
    } else {
        let specialised =
            affine::specialise(program, &structure.patterns, Some(&params)).map_err(with_source)?;
        (specialised, None)
    };
    let analysis = start.elapsed();

    match args.emit {
        Some(Emit::Regions) => {
            for (s, set) in specialised.regions.executed.iter().enumerate() {
                crate::outln!("{}: {}", specialised.model.statements[s].name, set);
            }
            return Ok(());
        }
        Some(Emit::C) => {
            let kernel = compile(&specialised, args, false)?;
            crate::out!("{}", kernel.source());
            return Ok(());
        }
        Some(Emit::Boxes) | None => {}
    }

    crate::outln!("inputs:");
    for line in &report {
        crate::outln!("{line}");
    }
    let how = match map_time {
        Some(built) => format!(
            " through the solution map: computed in {}, applied in {}",
            spec::ms(built),
            spec::ms(analysis - built)
        ),
        None => String::new(),
    };
    crate::outln!(
        "analysis: {}{how} ({})",
        spec::ms(analysis),
        if specialised.regions.exact {
            "exact".to_string()
        } else {
            format!(
                "over-approximated: {}",
                specialised.regions.reasons.join("; ")
            )
        }
    );
    let fixed = affine::params_context(&params);
    let dense = affine::dense::iterations(&specialised.model.program, &params, COUNT_LIMIT as u64);
    for (s, st) in specialised.model.statements.iter().enumerate() {
        specialised.isl.reset_operations();
        let executed = match specialised.regions.executed[s]
            .with_params(&fixed)
            .and_then(|s| s.points(COUNT_LIMIT))
        {
            Ok(points) => points.len().to_string(),
            Err(_) => format!("over {COUNT_LIMIT}"),
        };
        let all = dense.as_ref().map_or("?".to_string(), |d| d[s].to_string());
        crate::outln!(
            "  {}: {executed} of {all} iterations run   {}",
            st.name,
            text[st.span.0..st.span.1].trim()
        );
    }

    if !(args.run || args.dense || !args.outputs.is_empty()) {
        return Ok(());
    }
    let outputs = output_paths(&specialised, &args.outputs)?;
    let extents =
        affine::dense::extents(&specialised.model.program, &params).map_err(Report::new)?;
    let mut arrays = Arrays::new();
    for (array, coo) in &files {
        arrays.insert(
            array.clone(),
            inputs::dense_values(coo).map_err(Report::new)?,
        );
    }
    for (scalar, x) in &scalars {
        arrays.insert(scalar.clone(), vec![*x]);
    }
    let kernel = compile(&specialised, args, false)?;
    let mut result = arrays.clone();
    let times = timed(&kernel, &params, &arrays, &mut result, args.time)?;
    if let Some(times) = times {
        crate::outln!("{} runs (after one warm-up):", args.time.unwrap_or(1));
        report_phase("special", times);
    }
    if args.dense {
        let dense = compile(&specialised, args, true)?;
        let mut reference = arrays.clone();
        if let Some(times) = timed(&dense, &params, &arrays, &mut reference, args.time)? {
            report_phase("dense", times);
        }
        for (array, want) in &reference {
            let got = &result[array];
            let worst = got
                .iter()
                .zip(want)
                .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
                .fold(0.0, f64::max);
            if worst > 1e-9 {
                return Err(miette!(
                    "the specialised program's `{array}` differs from the dense program's \
                     (relative difference {worst:e}): please report this"
                ));
            }
        }
        crate::outln!("the specialised and dense programs agree on every array");
    }
    for (array, path) in outputs {
        write_output(&path, &as_tensor(&extents[&array], &result[&array])?)?;
    }
    if args.outputs.is_empty() {
        for (array, values) in &result {
            let nonzero = values.iter().filter(|v| **v != 0.0).count();
            crate::outln!("{array}: {} values, {nonzero} non-zero", values.len());
        }
    }
    Ok(())
}

fn compile(specialised: &Specialised, args: &SpecialiseArgs, dense: bool) -> Result<AffineKernel> {
    let backend = match args.backend {
        AffineBackend::Jit => Backend::Jit,
        AffineBackend::C => Backend::C,
    };
    let targets = backend.targets(&Toolchain::default());
    let mut kernel = if dense {
        AffineKernel::compile_dense(specialised, targets)
    } else {
        AffineKernel::compile(specialised, targets)
    }
    .map_err(Report::new)?;
    if let Some(n) = args.threads {
        kernel.set_threads(n);
    }
    Ok(kernel)
}

/// Run once into `result`, then `time` more times from the initial contents, timing the
/// kernel's call alone (the arrays are laid into its buffer before the clock starts).
fn timed(
    kernel: &AffineKernel,
    params: &BTreeMap<String, i64>,
    initial: &Arrays,
    result: &mut Arrays,
    time: Option<usize>,
) -> Result<Option<Vec<Duration>>> {
    *result = initial.clone();
    kernel.run(params, result).map_err(Report::new)?;
    let Some(n) = time else {
        return Ok(None);
    };
    let packed = kernel.pack(params, initial).map_err(Report::new)?;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let mut state = packed.clone();
        let start = Instant::now();
        kernel.call(params, &mut state).map_err(Report::new)?;
        times.push(start.elapsed());
    }
    Ok(Some(times))
}

fn output_paths(specialised: &Specialised, texts: &[String]) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for text in texts {
        let (array, file) = split_pair("-o", text, "FILE")?;
        let Some(decl) = specialised.model.program.array(array) else {
            return Err(miette!(
                "-o {text}: the program declares no array `{array}`"
            ));
        };
        if decl.extents.is_empty() {
            return Err(miette!(
                "-o {text}: `{array}` is a scalar; its value is printed"
            ));
        }
        check_output_kind(Path::new(file), decl.extents.len())?;
        out.push((array.to_string(), PathBuf::from(file)));
    }
    Ok(out)
}

/// The non-zeros of a dense array as a tensor stored densely.
fn as_tensor(dims: &[usize], values: &[f64]) -> Result<Tensor> {
    let coo = inputs::coordinates(dims, values);
    let format = Format::parse(&"d".repeat(dims.len()), dims.len()).map_err(|e| miette!("{e}"))?;
    Tensor::from_coo_owned(coo, &format, ValueType::F64).map_err(|e| miette!("{e}"))
}
