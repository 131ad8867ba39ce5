//! Options shared by `run` and `emit`: tensor formats (`-f`), input files (`-i`), generated
//! inputs (`-g`) and index-variable sizes (`-d`), and turning them plus an expression into a
//! checked statement.

use std::path::PathBuf;

use miette::{miette, Report, Result, WrapErr};
use sparsec::format::Format;
use sparsec::io::{self, TensorFile};
use sparsec::ir::gather::SumVersion;
use sparsec::jit::Toolchain;
use sparsec::kernel::{Backend, Kernel, SumVersions};
use sparsec::lower::Lowered;
use sparsec::notation::ast::{Assignment, Expr};
use sparsec::notation::cin::Statement;
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::{Concrete, Schedule};
use sparsec::tensor::{Coo, ValueType};

/// The statement and how to compile it: what `run` and `emit` share.
#[derive(clap::Args, Debug, Clone)]
pub struct StatementArgs {
    /// The statement in index notation, e.g. "y(i) = A(i,j) * x(j)".
    #[arg(value_name = "EXPR")]
    pub expr: String,
    #[command(flatten)]
    pub spec: SpecArgs,
    #[command(flatten)]
    pub schedule: ScheduleArgs,
}

/// `-f`, `-i`, `-g`, `-d`: how the tensors of an expression are stored, where they come from
/// and how large the index variables are.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SpecArgs {
    /// Storage format of a tensor, e.g. `-f A:ds` (CSR), `-f B:csc`, `-f T:sss`.
    #[arg(short = 'f', long = "format", value_name = "NAME:FORMAT")]
    pub formats: Vec<String>,
    /// Read a tensor from a file (.mtx MatrixMarket, .tns FROSTT, .spt sparsec binary).
    #[arg(short = 'i', long = "input", value_name = "NAME:FILE")]
    pub inputs: Vec<String>,
    /// Size of an index variable, e.g. `-d i:1000`; dimensions follow from the variables.
    #[arg(short = 'd', long = "dim", value_name = "VAR:SIZE")]
    pub dims: Vec<String>,
    /// The value of an input's missing entries, e.g. `--fill A:1` or `--fill D:inf` (0
    /// unless given; a .spt or binsparse file records its own).
    #[arg(long = "fill", value_name = "NAME:VALUE")]
    pub fills: Vec<String>,
}

/// How to schedule the kernel (`run` and `emit`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ScheduleArgs {
    /// Scheduling transformations, e.g. "split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)".
    /// Unless they parallelize a loop, the outermost loop runs on all threads when that is
    /// race-free.
    #[arg(short = 's', long = "schedule", value_name = "TRANSFORMS")]
    pub schedule: Option<String>,
}

impl ScheduleArgs {
    /// The schedule's syntax, checked before any input is read (its preconditions need
    /// the statement's tensors).
    pub fn parse(&self) -> Result<Option<Schedule>> {
        self.schedule
            .as_deref()
            .map(|text| Schedule::parse(text).map_err(|e| Report::new(sparsec::Error::from(e))))
            .transpose()
    }

    /// The statement made concrete with this schedule (`None`: the default schedule).
    pub fn concrete(&self, statement: &Statement) -> Result<Option<Concrete>> {
        let Some(schedule) = self.parse()? else {
            return Ok(None);
        };
        let concrete = Concrete::new(statement).map_err(cannot_compile)?;
        let scheduled = schedule
            .apply(&concrete)
            .map_err(|e| Report::new(sparsec::Error::from(e)))
            .wrap_err("the schedule does not apply")?;
        Ok(Some(scheduled))
    }

    /// Lower the statement with this schedule.
    pub fn lower(&self, statement: &Statement) -> Result<Lowered> {
        let lowered = match self.concrete(statement)? {
            Some(c) => Ok(c),
            None => Concrete::new(statement),
        }
        .and_then(|c| sparsec::kernel::lower_with_default_parallelism(&c));
        lowered.map_err(cannot_compile)
    }

    /// Lower the statement with this schedule for `target`: without one, with the
    /// target's default parallelism (a GPU mapping for a GPU target, chosen by the inputs'
    /// `average_fiber` where known).
    pub fn lower_for(
        &self,
        statement: &Statement,
        target: &dyn sparsec::target::Target,
        average_fiber: Option<f64>,
    ) -> Result<Lowered> {
        let concrete = match self.concrete(statement)? {
            Some(c) => c,
            None => Concrete::new(statement).map_err(cannot_compile)?,
        };
        sparsec::kernel::lower_for_target(&concrete, target, average_fiber).map_err(cannot_compile)
    }

    /// Compile the statement with this schedule and backend (see [`Self::lower_for`]).
    pub fn kernel(
        &self,
        statement: &Statement,
        backend: Backend,
        average_fiber: Option<f64>,
    ) -> Result<Kernel> {
        let targets = backend.targets(&Toolchain::default());
        let lowered = self.lower_for(statement, targets.main().as_ref(), average_fiber)?;
        Kernel::from_lowered(
            statement.clone(),
            lowered,
            ValueType::F64,
            &Toolchain::default(),
            backend,
        )
        .map_err(cannot_compile)
    }
}

/// The error, under "cannot compile the statement" unless it already says so (a
/// lowering error reads "cannot compile this statement: ...").
fn cannot_compile(e: impl Into<sparsec::Error>) -> Report {
    match e.into() {
        e @ sparsec::Error::Lower(_) => Report::new(e),
        e => Report::new(e).wrap_err("cannot compile the statement"),
    }
}

/// `--backend`: which backend compiles kernels.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendArg {
    /// The C compiler's code if cached, else the JIT's at once and the C compiler's code
    /// from the first run after its background compilation finishes.
    #[default]
    Tiered,
    /// C compiled by the system C compiler (cached), with OpenMP threads.
    C,
    /// Cranelift in process: no C compiler, low latency, serial.
    Jit,
    /// OpenCL kernels on a GPU or PoCL, for a schedule with GPUBlock loops (a sparsec
    /// built with the `opencl` feature).
    Opencl,
    /// CUDA kernels (printed by `emit --target cuda`; this build cannot launch them).
    Cuda,
}

/// `--device`: where kernels run, the GPU ones by the backend that reaches them.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceArg {
    /// The CPU, with `--backend`'s choice (tiered by default).
    Cpu,
    /// An OpenCL device (`--backend opencl`).
    Opencl,
    /// An NVIDIA GPU through CUDA (`--backend cuda`).
    Cuda,
}

impl DeviceArg {
    /// The backend that runs kernels on this device; `cpu` keeps `backend`.
    pub fn backend(self, backend: BackendArg) -> Backend {
        match self {
            DeviceArg::Cpu => backend.into(),
            DeviceArg::Opencl => Backend::OpenCl,
            DeviceArg::Cuda => Backend::Cuda,
        }
    }
}

/// `--sums`: how a kernel chooses the version of its gathered sums (SpMV's rows, TTV's
/// fibers) on each run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SumsArg {
    /// The run-time tests choose the first run; the next runs measure each version, then
    /// the fastest runs (results may change in their last bits until it is chosen).
    #[default]
    Measured,
    /// The run-time tests choose every run: results identical to the last bit.
    Tested,
    /// Serial loops.
    Scalar,
    /// SIMD lanes filled from scalar loads.
    Lanes,
    /// SIMD lanes filled by hardware gathers.
    Gathers,
}

impl From<SumsArg> for SumVersions {
    fn from(s: SumsArg) -> SumVersions {
        match s {
            SumsArg::Measured => SumVersions::Measured,
            SumsArg::Tested => SumVersions::Tested,
            SumsArg::Scalar => SumVersions::Fixed(SumVersion::Scalar),
            SumsArg::Lanes => SumVersions::Fixed(SumVersion::Lanes),
            SumsArg::Gathers => SumVersions::Fixed(SumVersion::Gathers),
        }
    }
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Tiered => Backend::Tiered,
            BackendArg::C => Backend::C,
            BackendArg::Jit => Backend::Jit,
            BackendArg::Opencl => Backend::OpenCl,
            BackendArg::Cuda => Backend::Cuda,
        }
    }
}

/// A `-g` generator kind.
#[derive(Clone, Debug, PartialEq)]
pub enum GenKind {
    /// Every component stored.
    Dense,
    /// Uniformly random with this density.
    Uniform(f64),
    /// Banded matrix with this half-bandwidth.
    Banded(usize),
    /// Power-law rows (slices of the first mode) with this mean number of nonzeros each.
    PowerLaw(f64),
    /// Row `i` holds about `k * c^i` nonzeros.
    Skewed(f64, f64),
}

impl GenKind {
    /// Parse `dense`, `uniform[:DENSITY]`, `banded[:BW]`, `powerlaw[:NNZ_PER_ROW]`,
    /// `skewed[:K,C]`.
    pub fn parse(text: &str) -> Result<GenKind> {
        let (kind, arg) = match text.split_once(':') {
            Some((k, a)) => (k.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        let number = |what: &str, default: f64| -> Result<f64> {
            match arg {
                None | Some("") => Ok(default),
                Some(a) => a
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| {
                        miette!("generator `{text}`: {what} `{a}` is not a non-negative number")
                    }),
            }
        };
        match kind.to_ascii_lowercase().as_str() {
            "dense" => match arg {
                None => Ok(GenKind::Dense),
                Some(_) => Err(miette!("generator `dense` takes no parameter")),
            },
            "uniform" | "random" => {
                let d = number("density", 0.01)?;
                if d > 1.0 {
                    return Err(miette!(
                        "generator `{text}`: density {d} is above 1 (use e.g. uniform:0.05)"
                    ));
                }
                Ok(GenKind::Uniform(d))
            }
            "banded" | "band" => {
                let bw = number("bandwidth", 1.0)?;
                if bw.fract() != 0.0 {
                    return Err(miette!("generator `{text}`: bandwidth must be an integer"));
                }
                Ok(GenKind::Banded(bw as usize))
            }
            "powerlaw" | "power-law" | "power_law" => {
                Ok(GenKind::PowerLaw(number("nonzeros per row", 8.0)?))
            }
            "skewed" => {
                let (k, c) = match arg {
                    None | Some("") => (1.0, 1.01),
                    Some(a) => {
                        let parts: Vec<&str> = a.split(',').map(str::trim).collect();
                        let parse = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
                        match parts[..] {
                            [k, c] => match (parse(k), parse(c)) {
                                (Some(k), Some(c)) if k >= 0.0 && c > 0.0 => (k, c),
                                _ => {
                                    return Err(miette!(
                                        "generator `{text}`: expected skewed:K,C with K >= 0 and C > 0"
                                    ))
                                }
                            },
                            _ => {
                                return Err(miette!(
                                    "generator `{text}`: expected skewed:K,C (row i gets about K*C^i nonzeros)"
                                ))
                            }
                        }
                    }
                };
                Ok(GenKind::Skewed(k, c))
            }
            other => Err(miette!(
                help = "kinds: dense, uniform[:DENSITY], banded[:BW], powerlaw[:NNZ_PER_ROW], skewed[:K,C]",
                "unknown generator kind `{other}`"
            )),
        }
    }

    /// Why this kind cannot make a tensor of `order` modes, if it cannot: bands and
    /// skewed rows are matrices, and power-law slices need a first mode to slice.
    pub fn refuses(&self, order: usize) -> Option<&'static str> {
        match self {
            GenKind::Banded(_) | GenKind::Skewed(..) if order != 2 => {
                Some("this generator makes matrices")
            }
            GenKind::PowerLaw(_) if order == 0 => {
                Some("this generator draws slices of a first mode")
            }
            _ => None,
        }
    }

    /// Generate a tensor of `dims`, or say which of its arrays cannot be allocated.
    pub fn generate(&self, dims: &[usize], seed: u64) -> Result<Coo, sparsec::tensor::TensorError> {
        use sparsec::generate;
        // `refuses` has ruled out the orders a kind cannot make.
        let matrix = || [dims[0], dims[1]];
        match *self {
            GenKind::Dense => generate::dense(dims, seed),
            GenKind::Uniform(d) => generate::uniform(dims, d, seed),
            GenKind::Banded(bw) => generate::banded(matrix(), bw, seed),
            GenKind::PowerLaw(per_row) => {
                let nnz = (per_row * dims[0] as f64).round() as usize;
                generate::power_law(dims, nnz, 1.0, seed)
            }
            GenKind::Skewed(k, c) => generate::skewed_rows(dims[0], dims[1], k, c, seed),
        }
    }
}

/// Split `NAME:VALUE` at the first colon.
pub fn split_pair<'a>(flag: &str, text: &'a str, what: &str) -> Result<(&'a str, &'a str)> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() && !value.trim().is_empty() => {
            Ok((name.trim(), value.trim()))
        }
        _ => Err(miette!(
            "{flag} `{text}`: expected NAME:{what}, e.g. {flag} {}",
            match flag {
                "-f" => "A:ds",
                "-i" => "A:matrix.mtx",
                "-g" => "A:uniform:0.01",
                "-o" => "y:out.mtx",
                "--fill" => "A:1",
                _ => "i:1000",
            }
        )),
    }
}

/// Where an input's data comes from.
pub enum Source {
    /// Read from a file.
    File(PathBuf, TensorFile),
    /// Generated after binding (its dimensions come from the index variables).
    Generated(GenKind),
}

/// An expression with its tensors' declarations and sources.
pub struct Problem {
    /// The parsed expression.
    pub assignment: Assignment,
    /// Tensors with their number of indices, output first, then in order of appearance.
    pub tensors: Vec<(String, usize)>,
    /// Declarations passed to `bind`.
    pub decls: Vec<TensorDecl>,
    /// Sizes from `-d`.
    pub var_sizes: Vec<(String, usize)>,
    /// Per tensor (same order as `tensors`), where its data comes from, if given.
    pub sources: Vec<Option<Source>>,
}

fn collect_accesses(e: &Expr, out: &mut Vec<(String, usize)>) {
    for a in e.accesses() {
        if !out.iter().any(|(n, _)| n == &a.tensor) {
            out.push((a.tensor.clone(), a.indices.len()));
        }
    }
}

impl Problem {
    /// Parse `expr` and apply `-f`, `-i`, `-d` and (for `run`) `-g`.
    pub fn new(expr: &str, args: &SpecArgs, generators: &[String]) -> Result<Problem> {
        let assignment = notation::parse(expr).map_err(Report::new)?;
        let mut tensors = vec![(assignment.lhs.tensor.clone(), assignment.lhs.indices.len())];
        collect_accesses(&assignment.rhs, &mut tensors);
        let mut problem = Problem {
            decls: tensors.iter().map(|(n, _)| TensorDecl::new(n)).collect(),
            sources: tensors.iter().map(|_| None).collect(),
            assignment,
            tensors,
            var_sizes: Vec::new(),
        };
        for text in &args.formats {
            let (name, spelling) = split_pair("-f", text, "FORMAT")?;
            let k = problem.tensor_index("-f", text, name)?;
            let order = problem.tensors[k].1;
            let format = Format::parse(spelling, order).map_err(|e| {
                miette!(
                    help = "`--help` lists the format letters and named formats",
                    "-f {text}: {e} (tensor `{name}` has order {order})"
                )
            })?;
            problem.decls[k].format = Some(format);
        }
        for text in &args.dims {
            let (var, size) = split_pair("-d", text, "SIZE")?;
            let size: usize = size
                .parse()
                .map_err(|_| miette!("-d {text}: size `{size}` is not a non-negative integer"))?;
            problem.var_sizes.retain(|(v, _)| v != var);
            problem.var_sizes.push((var.to_string(), size));
        }
        for text in &args.inputs {
            let (name, file) = split_pair("-i", text, "FILE")?;
            let k = problem.tensor_index("-i", text, name)?;
            let path = PathBuf::from(file);
            let data = io::read_any(&path)
                .map_err(|e| miette!("cannot read input `{name}` (-i {text}): {e}"))?;
            let data = fit_order(data, problem.tensors[k].1);
            problem.decls[k].dims = Some(data.dims().to_vec());
            // An input's fill value shapes the kernel; the output's initial value (`+=`)
            // is checked against the computed one when the kernel runs.
            if k > 0 {
                problem.decls[k].fill = data.fill();
            }
            if problem.decls[k].format.is_none() && data.dims().len() == problem.tensors[k].1 {
                problem.decls[k].format = Some(data.natural_format());
            }
            problem.sources[k] = Some(Source::File(path, data));
        }
        for text in &args.fills {
            let (name, value) = split_pair("--fill", text, "VALUE")?;
            let k = problem.tensor_index("--fill", text, name)?;
            let fill: f64 = value
                .parse()
                .map_err(|_| miette!("--fill {text}: `{value}` is not a number (or inf, nan)"))?;
            if k == 0 {
                return Err(miette!(
                    "--fill {text}: `{name}` is the output, whose fill value is computed from \
                     the statement"
                ));
            }
            if let Some(Source::File(path, data)) = &problem.sources[k] {
                if data.fill() != 0.0 && data.fill().to_bits() != fill.to_bits() {
                    return Err(miette!(
                        "--fill {text}: {} records the fill value {} for `{name}`",
                        path.display(),
                        data.fill()
                    ));
                }
            }
            problem.decls[k].fill = fill;
        }
        for text in generators {
            let (name, kind) = split_pair("-g", text, "KIND")?;
            let k = problem.tensor_index("-g", text, name)?;
            if problem.sources[k].is_some() {
                return Err(miette!(
                    "-g {text}: tensor `{name}` is already read from a file with -i"
                ));
            }
            let kind = GenKind::parse(kind).wrap_err_with(|| format!("-g {text}"))?;
            if let Some(why) = kind.refuses(problem.tensors[k].1) {
                return Err(miette!(
                    "-g {text}: {why}, but `{name}` has order {}; use dense or uniform",
                    problem.tensors[k].1
                ));
            }
            problem.sources[k] = Some(Source::Generated(kind));
        }
        Ok(problem)
    }

    fn tensor_index(&self, flag: &str, text: &str, name: &str) -> Result<usize> {
        self.tensors
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| {
                let names: Vec<String> =
                    self.tensors.iter().map(|(n, _)| format!("`{n}`")).collect();
                miette!(
                    help = format!("the expression uses {}", names.join(", ")),
                    "{flag} {text}: unknown tensor `{name}`: it does not occur in `{}`",
                    self.assignment.source
                )
            })
    }

    /// Check the expression against the declarations: a concrete statement with all sizes.
    pub fn bind(&self) -> Result<Statement> {
        notation::bind(&self.assignment, &self.decls, &self.var_sizes).map_err(Report::new)
    }

    /// Bind, giving every index variable without a known size the placeholder `size`
    /// (for emitting code, whose loops read sizes at run time).
    pub fn bind_with_default_size(&self, size: usize) -> Result<Statement> {
        let mut known: Vec<String> = self.var_sizes.iter().map(|(v, _)| v.clone()).collect();
        let mut visit = |a: &sparsec::notation::ast::Access| {
            if self
                .decls
                .iter()
                .any(|d| d.name == a.tensor && d.dims.is_some())
            {
                known.extend(a.indices.iter().cloned());
            }
        };
        visit(&self.assignment.lhs);
        self.assignment
            .rhs
            .accesses()
            .into_iter()
            .for_each(&mut visit);
        let mut all_vars: Vec<String> = self.assignment.lhs.indices.clone();
        for a in self.assignment.rhs.accesses() {
            all_vars.extend(a.indices.iter().cloned());
        }
        let mut sizes = self.var_sizes.clone();
        for v in all_vars {
            if !known.contains(&v) {
                known.push(v.clone());
                sizes.push((v, size));
            }
        }
        notation::bind(&self.assignment, &self.decls, &sizes).map_err(Report::new)
    }
}

/// Fit a file to the order the statement uses its tensor with: a MatrixMarket `n x 1` or
/// `1 x n` file read for a vector becomes an order-1 tensor, and a file holding one
/// component (a `1 x 1` matrix or a length-1 vector) read for a scalar becomes an order-0
/// tensor. Only these; a scalar file is never widened, so other mismatches reach `bind`.
pub(crate) fn fit_order(data: TensorFile, order: usize) -> TensorFile {
    let dims = data.dims().to_vec();
    let keep: Vec<usize> = match (order, &dims[..]) {
        (1, &[rows, cols]) if rows == 1 || cols == 1 => vec![if cols == 1 { 0 } else { 1 }],
        (0, &[1] | &[1, 1]) => vec![],
        _ => return data,
    };
    let coo = data.into_coo();
    let coords = coo
        .coords
        .chunks(dims.len())
        .flat_map(|c| keep.iter().map(|&m| c[m]))
        .collect();
    TensorFile::Frostt(Coo {
        dims: keep.iter().map(|&m| dims[m]).collect(),
        coords,
        values: coo.values,
    })
}

/// Parse a count for `--time`.
pub fn positive(text: &str) -> std::result::Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{text}` is not a positive integer")),
    }
}

/// `--threads`: a positive count no larger than the kernels accept.
pub fn thread_count(text: &str) -> std::result::Result<usize, String> {
    let n = positive(text)?;
    if n > sparsec::kernel::MAX_THREADS {
        return Err(format!(
            "{n} threads: at most {} (this machine has {} cores)",
            sparsec::kernel::MAX_THREADS,
            std::thread::available_parallelism().map_or(1, |c| c.get())
        ));
    }
    Ok(n)
}

/// Format a duration in milliseconds, with three significant digits below one
/// millisecond (a kernel of 1.2 us is `0.00120 ms`, not `0.001 ms`): benchmarks read these
/// figures and compare kernels of a few microseconds.
pub fn ms(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    let decimals = match ms {
        m if m >= 0.1 || m == 0.0 => 3,
        m if m >= 0.01 => 4,
        _ => 5,
    };
    format!("{ms:.decimals$} ms")
}

/// Write to standard output; a closed pipe (`sparsec emit ... | head`) ends the process
/// quietly instead of panicking like `println!`.
/// Set by `--quiet` and `--json`: the report on standard output is left out (errors and
/// warnings still go to standard error).
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Leave out the report [`outln!`] and [`out!`] print.
pub fn quiet() {
    QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
}

pub fn write_out(text: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write;
    if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(text).and_then(|()| {
        if newline {
            stdout.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// `println!` that tolerates a closed pipe.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::spec::write_out(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::spec::write_out(format_args!($($arg)*), true)
    };
}

/// `print!` that tolerates a closed pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::spec::write_out(format_args!($($arg)*), false)
    };
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn short_durations_keep_three_significant_digits() {
        assert_eq!(super::ms(Duration::from_nanos(1_234)), "0.00123 ms");
        assert_eq!(super::ms(Duration::from_nanos(12_345)), "0.0123 ms");
        assert_eq!(super::ms(Duration::from_micros(123)), "0.123 ms");
        assert_eq!(super::ms(Duration::from_micros(45_678)), "45.678 ms");
        assert_eq!(super::ms(Duration::ZERO), "0.000 ms");
    }
}
