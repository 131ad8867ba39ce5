//! One fuzz case: a random well-formed statement with formats, inputs, a schedule, a thread
//! count and a backend, drawn from a seed so that `(seed, index)` always gives the same case.

use std::fmt::Write as _;
use std::path::Path;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::schedule_gen;

/// The names index variables are drawn from, in order: statements of four or more
/// variables name some of them with words other targets' languages reserve (CUDA's
/// `threadIdx`, OpenCL C's `kernel`) or a C preprocessor macro (`__LINE__`), which every
/// target must print as it prints any name (THREAT_MODEL.md: names reach generated code
/// only through the name allocator).
const VAR_NAMES: [&str; 6] = ["i", "j", "k", "threadIdx", "kernel", "__LINE__"];
/// The names input tensors are drawn from, in order of first use: the fourth and sixth
/// are a C type and a C macro.
const TENSOR_NAMES: [&str; 6] = ["A", "B", "C", "double", "E", "NULL"];
/// The output tensor's name.
const OUTPUT: &str = "Y";
/// Most components a generated input tensor's index space may have; larger spaces are
/// shrunk by lowering variable sizes, so that dense formats stay cheap.
const MAX_SPACE: usize = 4096;
/// Most entries written to an input file.
const MAX_ENTRIES: usize = 300;
/// Sizes past 32-bit indices and past memory given to one variable of some cases, whose
/// inputs hold a few entries: sparsec must run them or refuse them with an error, never
/// abort (`HUGE_CASES` in a thousand cases).
const HUGE_SIZES: [usize; 3] = [1 << 31, 1 << 32, 3_000_000_000];
/// Cases in a thousand with one variable of a size from [`HUGE_SIZES`].
const HUGE_CASES: u32 = 40;

/// Which code generator runs the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// gcc, with OpenMP threads.
    C,
    /// Cranelift, in process, serial.
    Jit,
    /// OpenCL (the cases with GPU schedules, with `--opencl`).
    OpenCl,
}

impl BackendChoice {
    fn as_str(self) -> &'static str {
        match self {
            BackendChoice::C => "c",
            BackendChoice::Jit => "jit",
            BackendChoice::OpenCl => "opencl",
        }
    }
}

/// An index variable of the statement.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub size: usize,
}

/// The right-hand side as generated: accesses name a tensor and its index variables.
#[derive(Clone, Debug)]
pub enum Expr {
    Access { tensor: usize, vars: Vec<usize> },
    Literal(f64),
    Neg(Box<Expr>),
    Binary(char, Box<Expr>, Box<Expr>),
}

/// How an input's entries are drawn.
#[derive(Clone, Copy, Debug)]
enum Fill {
    /// No entries at all.
    Empty,
    /// Every component, some of them explicit zeros.
    Full,
    /// Each component with this probability.
    Random(f64),
    /// The first mode's low coordinates hold almost all entries.
    Skewed,
}

/// An input tensor: its name, dimensions, declared format and the file holding its data.
#[derive(Clone, Debug)]
pub struct Input {
    pub name: String,
    pub dims: Vec<usize>,
    pub format: Option<String>,
    /// Entries as (coordinates, value), in file order: possibly unsorted, with duplicates
    /// and explicit zeros.
    pub entries: Vec<(Vec<usize>, f64)>,
    /// The file name, whose extension picks the file type.
    pub file: String,
}

/// One generated case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The case's index in its run: with the run's seed, it regenerates the case.
    pub index: u64,
    pub expr: String,
    pub vars: Vec<Var>,
    pub output_format: Option<String>,
    /// Input tensors; index 0 of the generated accesses is `inputs[0]`.
    pub inputs: Vec<Input>,
    /// The output's initial value for a `+=` statement.
    pub initial: Option<Input>,
    pub schedule: Option<String>,
    pub threads: usize,
    pub backend: BackendChoice,
    /// Whether a denominator is not a constant: where it is zero, kernels and the
    /// reference must agree on `0 / 0` and `x / 0`.
    pub divides_by_tensor: bool,
    /// Whether a variable has a size from [`HUGE_SIZES`]: the harness then runs the case
    /// with its address space limited, so that large allocations fail for real.
    pub huge: bool,
}

/// The seed of case `index` of a run with `seed`: cases do not depend on each other, so any
/// one of them can be replayed alone.
fn case_seed(seed: u64, index: u64) -> u64 {
    // SplitMix64's finaliser spreads consecutive indices over the whole seed space.
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Case {
    /// Case `index` of the run with `seed`.
    pub fn generate(seed: u64, index: u64) -> Case {
        let case_seed = case_seed(seed, index);
        let mut rng = StdRng::seed_from_u64(case_seed);
        // A stream of its own picks the huge variable, so that the other cases stay as
        // they were before huge sizes were drawn.
        let mut huge = StdRng::seed_from_u64(case_seed ^ 0x4855_4745);
        let huge = huge.gen_ratio(HUGE_CASES, 1000).then(|| {
            (
                huge.gen::<usize>(),
                *HUGE_SIZES.choose(&mut huge).expect("non-empty"),
            )
        });
        Generator::new(&mut rng).case(index, huge)
    }

    /// Write the input files into `dir`.
    pub fn write_inputs(&self, dir: &Path) -> std::io::Result<()> {
        for input in self.inputs.iter().chain(&self.initial) {
            input.write(dir)?;
        }
        Ok(())
    }

    /// The `sparsec run` arguments of this case with its files in `dir`.
    pub fn run_args(&self, dir: &Path) -> Vec<String> {
        let mut args = vec!["run".to_string(), self.expr.clone()];
        let mut pair = |flag: &str, value: String| {
            args.push(flag.to_string());
            args.push(value);
        };
        if let Some(f) = &self.output_format {
            pair("-f", format!("{OUTPUT}:{f}"));
        }
        for input in &self.inputs {
            if let Some(f) = &input.format {
                pair("-f", format!("{}:{f}", input.name));
            }
        }
        for input in self.inputs.iter().chain(&self.initial) {
            pair(
                "-i",
                format!("{}:{}", input.name, dir.join(&input.file).display()),
            );
        }
        for var in &self.used_vars() {
            pair("-d", format!("{}:{}", var.name, var.size));
        }
        if let Some(s) = &self.schedule {
            pair("-s", s.clone());
        }
        pair("--threads", self.threads.to_string());
        pair("--backend", self.backend.as_str().to_string());
        args.push("--check".to_string());
        args
    }

    /// Whether the case asks for a schedule (so that a refused precondition is the
    /// schedule's fault, not sparsec's).
    pub fn has_schedule(&self) -> bool {
        self.schedule.is_some()
    }

    /// The index variables the statement names.
    fn used_vars(&self) -> Vec<Var> {
        self.vars
            .iter()
            .filter(|v| {
                self.expr
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == v.name)
            })
            .cloned()
            .collect()
    }

    /// A one-line summary of the case's features, for reports: the statement, threads,
    /// backend and schedule, and the features behind the known families of wrong results.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} threads={} backend={} schedule={}",
            self.expr,
            self.threads,
            self.backend.as_str(),
            self.schedule.as_deref().unwrap_or("-"),
        );
        if self
            .inputs
            .iter()
            .filter_map(|i| i.format.as_deref())
            .any(nonunique_over_stored)
        {
            text.push_str(" (non-unique level over a non-singleton level)");
        }
        if self.divides_by_tensor {
            text.push_str(" (divides by a tensor)");
        }
        if self.huge {
            text.push_str(" (a huge dimension)");
        }
        text
    }
}

impl Input {
    fn write(&self, dir: &Path) -> std::io::Result<()> {
        let mut text = String::new();
        let path = dir.join(&self.file);
        if self.file.ends_with(".mtx") {
            let (rows, cols) = match self.dims[..] {
                [n] => (n, 1),
                [r, c] => (r, c),
                _ => unreachable!("MatrixMarket files are chosen for orders 1 and 2 only"),
            };
            let _ = writeln!(text, "%%MatrixMarket matrix coordinate real general");
            let _ = writeln!(text, "{rows} {cols} {}", self.entries.len());
            for (coords, value) in &self.entries {
                let col = coords.get(1).copied().unwrap_or(0);
                let _ = writeln!(text, "{} {} {value}", coords[0] + 1, col + 1);
            }
        } else if self.file.ends_with(".tns") {
            for (coords, value) in &self.entries {
                for c in coords {
                    let _ = write!(text, "{} ", c + 1);
                }
                let _ = writeln!(text, "{value}");
            }
        } else {
            // `.spt` holds an empty tensor of any order: the text formats cannot give the
            // dimensions of a tensor without entries.
            let coo = sparsec::tensor::Coo::new(self.dims.clone(), vec![], vec![])
                .map_err(std::io::Error::other)?;
            let format = sparsec::format::Format::parse("csf", self.dims.len())
                .map_err(std::io::Error::other)?;
            let tensor =
                sparsec::tensor::Tensor::from_coo(&coo, &format, sparsec::tensor::ValueType::F64)
                    .map_err(std::io::Error::other)?;
            return sparsec::io::write_spt(&path, &tensor).map_err(std::io::Error::other);
        }
        std::fs::write(path, text)
    }
}

struct Generator<'r> {
    rng: &'r mut StdRng,
    vars: Vec<Var>,
    /// Input tensors so far: their index variables at first use.
    tensors: Vec<Vec<usize>>,
    /// Whether a denominator so far is not a constant.
    divides_by_tensor: bool,
}

impl<'r> Generator<'r> {
    fn new(rng: &'r mut StdRng) -> Self {
        Generator {
            rng,
            vars: Vec::new(),
            tensors: Vec::new(),
            divides_by_tensor: false,
        }
    }

    /// Case `index`; `huge` picks a variable (modulo their number) and its size from
    /// [`HUGE_SIZES`].
    fn case(mut self, index: u64, huge: Option<(usize, usize)>) -> Case {
        let var_count = *[0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 5]
            .choose(self.rng)
            .expect("non-empty");
        let square = self.rng.gen_bool(0.35);
        let common = self.size();
        for name in &VAR_NAMES[..var_count] {
            let size = if square { common } else { self.size() };
            self.vars.push(Var {
                name: name.to_string(),
                size,
            });
        }
        self.limit_space();
        let huge = huge.filter(|_| var_count > 0).map(|(var, size)| {
            self.vars[var % var_count].size = size;
        });

        let output_order = self.rng.gen_range(0..=var_count);
        let mut output_vars: Vec<usize> = (0..var_count).collect();
        output_vars.shuffle(self.rng);
        output_vars.truncate(output_order);

        let rhs = self.expr(0);
        let accumulate = self.rng.gen_bool(0.08);
        let mut expr = format!("{OUTPUT}{}", access_text(&self.vars, &output_vars, false));
        expr.push_str(if accumulate { " += " } else { " = " });
        print_expr(&rhs, &self.vars, &mut expr, 0);

        let output_format = self.format(output_order, true);
        let mut inputs = Vec::new();
        for (t, vars) in self.tensors.clone().iter().enumerate() {
            let dims: Vec<usize> = vars.iter().map(|&v| self.vars[v].size).collect();
            let format = self.format(dims.len(), false);
            inputs.push(self.input(TENSOR_NAMES[t], dims, format));
        }
        let initial = (accumulate && self.rng.gen_bool(0.5)).then(|| {
            let dims: Vec<usize> = output_vars.iter().map(|&v| self.vars[v].size).collect();
            self.input(OUTPUT, dims, None)
        });
        let threads = if self.rng.gen_bool(0.5) { 1 } else { 2 };
        let backend = if self.rng.gen_bool(0.4) {
            BackendChoice::C
        } else {
            BackendChoice::Jit
        };
        // Races a schedule only claims are absent are real races on two C threads.
        let racy_ok = threads == 1 || backend == BackendChoice::Jit;
        let schedule = self
            .rng
            .gen_bool(0.45)
            .then(|| schedule_gen::schedule(self.rng, &self.vars, &rhs, &expr, racy_ok))
            .filter(|s| !s.is_empty());
        Case {
            index,
            expr,
            vars: self.vars,
            output_format,
            inputs,
            initial,
            schedule,
            threads,
            backend,
            divides_by_tensor: self.divides_by_tensor,
            huge: huge.is_some(),
        }
    }

    fn size(&mut self) -> usize {
        *[1, 2, 3, 3, 4, 5, 6, 8, 11]
            .choose(self.rng)
            .expect("non-empty")
    }

    /// Shrink the largest variables until every variable together spans at most
    /// `MAX_SPACE` points.
    fn limit_space(&mut self) {
        while self.vars.iter().map(|v| v.size).product::<usize>() > MAX_SPACE {
            let largest = self
                .vars
                .iter_mut()
                .max_by_key(|v| v.size)
                .expect("a space above the limit has variables");
            largest.size = largest.size.div_ceil(2);
        }
    }

    fn expr(&mut self, depth: usize) -> Expr {
        let leaf = depth >= 3 || self.rng.gen_bool(if depth == 0 { 0.2 } else { 0.45 });
        if leaf {
            if self.rng.gen_bool(0.1) {
                return Expr::Literal(self.literal());
            }
            return self.access();
        }
        if self.rng.gen_bool(0.07) {
            return Expr::Neg(Box::new(self.expr(depth + 1)));
        }
        let op = *['*', '*', '*', '*', '+', '+', '+', '-', '/']
            .choose(self.rng)
            .expect("non-empty");
        let left = self.expr(depth + 1);
        let right = if op == '/' && self.rng.gen_bool(0.7) {
            // Mostly divide by a non-zero constant: a tensor's implicit zeros make
            // infinities that say little about the compiler.
            Expr::Literal(*[2.0, 4.0, 0.5, -3.0].choose(self.rng).expect("non-empty"))
        } else {
            let denominator = self.expr(depth + 1);
            self.divides_by_tensor |= op == '/' && !matches!(denominator, Expr::Literal(_));
            denominator
        };
        Expr::Binary(op, Box::new(left), Box::new(right))
    }

    fn literal(&mut self) -> f64 {
        *[0.0, 1.0, 2.0, 0.5, 3.25, 10.0]
            .choose(self.rng)
            .expect("non-empty")
    }

    /// An access: a new tensor, or an earlier one again with the same variables
    /// (repeated), permuted ones (transposed) or other variables of the same sizes.
    fn access(&mut self) -> Expr {
        let reuse = !self.tensors.is_empty()
            && (self.tensors.len() == TENSOR_NAMES.len() || self.rng.gen_bool(0.25));
        if reuse {
            let tensor = self.rng.gen_range(0..self.tensors.len());
            let first = self.tensors[tensor].clone();
            let mut vars = first.clone();
            if self.rng.gen_bool(0.6) {
                vars.shuffle(self.rng);
            }
            // Any variable list whose sizes match the tensor's dimensions is well formed.
            for slot in vars.iter_mut() {
                if self.rng.gen_bool(0.2) {
                    let size = self.vars[*slot].size;
                    let same: Vec<usize> = (0..self.vars.len())
                        .filter(|&v| self.vars[v].size == size)
                        .collect();
                    *slot = *same.choose(self.rng).expect("the variable itself");
                }
            }
            let sizes = |vs: &[usize]| vs.iter().map(|&v| self.vars[v].size).collect::<Vec<_>>();
            if sizes(&vars) != sizes(&first) {
                vars = first;
            }
            return Expr::Access { tensor, vars };
        }
        let order = self.rng.gen_range(0..=self.vars.len().min(5));
        let mut vars: Vec<usize> = (0..self.vars.len()).collect();
        vars.shuffle(self.rng);
        vars.truncate(order);
        // Rarely a diagonal access `B(i,i)`.
        if order >= 2 && self.rng.gen_bool(0.02) {
            vars[1] = vars[0];
        }
        self.tensors.push(vars.clone());
        Expr::Access {
            tensor: self.tensors.len() - 1,
            vars,
        }
    }

    /// A format string for a tensor of `order`, or `None` for the default (dense).
    fn format(&mut self, order: usize, output: bool) -> Option<String> {
        if self.rng.gen_bool(0.15) {
            return None;
        }
        let mut named: Vec<String> = vec!["dense".into(), "csf".into(), "coo".into()];
        if !output {
            named.push("hash".into());
        }
        match order {
            1 => named.push("sv".into()),
            2 => {
                for n in ["csr", "csc", "dcsr", "dcsc", "ell", "dia"] {
                    named.push(n.into());
                }
                let r = self.rng.gen_range(1..=3);
                let c = self.rng.gen_range(1..=3);
                named.push(format!("bcsr:{r}x{c}"));
            }
            _ => {}
        }
        if order == 0 {
            return self.rng.gen_bool(0.3).then(|| "dense".to_string());
        }
        if self.rng.gen_bool(0.35) {
            let mut name = named.choose(self.rng).expect("non-empty").clone();
            if (name == "csf" || name == "coo") && self.rng.gen_bool(0.3) {
                name.push(':');
                name.push_str(&self.mode_order(order));
            }
            return Some(name);
        }
        // Letters: mostly the usual shapes, sometimes any letter anywhere.
        let mut letters = String::new();
        for level in 0..order {
            let letter = if self.rng.gen_bool(0.2) {
                *['d', 's', 'u', 'q', 'c', 'h', 'b']
                    .choose(self.rng)
                    .expect("non-empty")
            } else if level == 0 {
                *['d', 's', 'u', 'h', 'b']
                    .choose(self.rng)
                    .expect("non-empty")
            } else {
                *['d', 's', 'q', 'h', 'b']
                    .choose(self.rng)
                    .expect("non-empty")
            };
            letters.push(letter);
        }
        if order >= 2 && self.rng.gen_bool(0.3) {
            letters.push(':');
            letters.push_str(&self.mode_order(order));
        }
        Some(letters)
    }

    fn mode_order(&mut self, order: usize) -> String {
        let mut modes: Vec<usize> = (0..order).collect();
        modes.shuffle(self.rng);
        modes
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// An input tensor of `dims` with a random fill, in a file type that can hold it.
    fn input(&mut self, name: &str, dims: Vec<usize>, format: Option<String>) -> Input {
        let fill = match self.rng.gen_range(0..10) {
            0 => Fill::Empty,
            1 | 2 => Fill::Full,
            3 => Fill::Skewed,
            _ => Fill::Random(*[0.05, 0.2, 0.5].choose(self.rng).expect("non-empty")),
        };
        let order = dims.len();
        let fill = match fill {
            // A scalar file holds at least one value line.
            Fill::Empty if order == 0 => Fill::Full,
            f => f,
        };
        let mut entries = self.entries(&dims, fill);
        let file = match (order, fill) {
            (0, _) => format!("{name}.tns"),
            (1 | 2, _) if self.rng.gen_bool(0.8) => format!("{name}.mtx"),
            (_, Fill::Empty) => format!("{name}.spt"),
            _ => {
                // A FROSTT file's dimensions are its largest coordinates: an explicit zero
                // in the last corner fixes them.
                let corner: Vec<usize> = dims.iter().map(|d| d - 1).collect();
                let reaches = (0..order).all(|m| entries.iter().any(|(c, _)| c[m] == dims[m] - 1));
                if !reaches {
                    let at = self.rng.gen_range(0..=entries.len());
                    entries.insert(at, (corner, 0.0));
                }
                format!("{name}.tns")
            }
        };
        Input {
            name: name.to_string(),
            dims,
            format,
            entries,
            file,
        }
    }

    fn entries(&mut self, dims: &[usize], fill: Fill) -> Vec<(Vec<usize>, f64)> {
        if dims.iter().any(|&d| d > MAX_SPACE) {
            return self.few_entries(dims, fill);
        }
        let total: usize = dims.iter().product();
        let mut entries = Vec::new();
        let point = |mut p: usize| {
            let mut c = vec![0; dims.len()];
            for m in (0..dims.len()).rev() {
                c[m] = p % dims[m];
                p /= dims[m];
            }
            c
        };
        match fill {
            Fill::Empty => {}
            Fill::Full => {
                for p in 0..total.min(MAX_ENTRIES) {
                    let v = self.value();
                    entries.push((point(p), v));
                }
            }
            Fill::Random(density) => {
                let n = ((total as f64 * density).ceil() as usize).min(MAX_ENTRIES);
                for _ in 0..n {
                    let p = self.rng.gen_range(0..total);
                    let v = self.value();
                    entries.push((point(p), v));
                }
            }
            Fill::Skewed => {
                // Mode 0's coordinate is small with high probability (about 2^-c for c).
                let n = (total / 3).clamp(1, MAX_ENTRIES);
                for _ in 0..n {
                    let mut c = point(self.rng.gen_range(0..total));
                    if let Some(first) = c.first_mut() {
                        let mut row = 0;
                        while row + 1 < dims[0] && self.rng.gen_bool(0.5) {
                            row += 1;
                        }
                        *first = row;
                    }
                    let v = self.value();
                    entries.push((c, v));
                }
            }
        }
        // Duplicates, sometimes.
        if !entries.is_empty() && self.rng.gen_bool(0.3) {
            for _ in 0..self.rng.gen_range(1..=3) {
                let k = self.rng.gen_range(0..entries.len());
                let (c, _) = entries[k].clone();
                let v = self.value();
                entries.push((c, v));
            }
        }
        entries.shuffle(self.rng);
        entries
    }

    /// A few entries of a tensor with a huge dimension, each coordinate the first, the
    /// last or a random one of its mode (a full fill gives the most, 8).
    fn few_entries(&mut self, dims: &[usize], fill: Fill) -> Vec<(Vec<usize>, f64)> {
        let count = match fill {
            Fill::Empty => 0,
            Fill::Full => 8,
            _ => self.rng.gen_range(1..=4),
        };
        (0..count)
            .map(|_| {
                let coords = dims
                    .iter()
                    .map(|&d| match self.rng.gen_range(0..3) {
                        0 => 0,
                        1 => d - 1,
                        _ => self.rng.gen_range(0..d),
                    })
                    .collect();
                (coords, self.value())
            })
            .collect()
    }

    /// A value: mostly small numbers with few digits, one in eight an explicit zero.
    fn value(&mut self) -> f64 {
        if self.rng.gen_bool(0.125) {
            0.0
        } else {
            f64::from(self.rng.gen_range(-40i32..=40)) / 8.0
        }
    }
}

/// Whether the format letters put a non-unique compressed level (`u`) above a level other
/// than a singleton, directly or not (COO's `uqq` is the usual use of `u`; `ub`, `usd`,
/// `uqbs` are not).
fn nonunique_over_stored(format: &str) -> bool {
    let letters = format.split(':').next().unwrap_or("");
    letters
        .char_indices()
        .any(|(k, c)| c == 'u' && letters[k + 1..].contains(['b', 'd', 'h', 's', 'u']))
}

/// `(i,j)` for the variables `vars`; an order-0 access prints as the bare name, or as `()`
/// when `empty_parens`.
pub fn access_text(all: &[Var], vars: &[usize], empty_parens: bool) -> String {
    if vars.is_empty() && !empty_parens {
        return String::new();
    }
    let names: Vec<&str> = vars.iter().map(|&v| all[v].name.as_str()).collect();
    format!("({})", names.join(","))
}

fn precedence(op: char) -> u8 {
    match op {
        '+' | '-' => 1,
        _ => 2,
    }
}

/// Print `e` into `out`; `parent` is the precedence binding it (0 at the top).
pub fn print_expr(e: &Expr, vars: &[Var], out: &mut String, parent: u8) {
    match e {
        Expr::Access { tensor, vars: vs } => {
            out.push_str(TENSOR_NAMES[*tensor]);
            out.push_str(&access_text(vars, vs, false));
        }
        Expr::Literal(x) => {
            let _ = write!(out, "{x}");
        }
        Expr::Neg(x) => {
            out.push('-');
            print_expr(x, vars, out, 3);
        }
        Expr::Binary(op, l, r) => {
            let p = precedence(*op);
            let paren = p < parent;
            if paren {
                out.push('(');
            }
            print_expr(l, vars, out, p);
            let _ = write!(out, " {op} ");
            // The right operand of `-` and `/` binds tighter: `a - (b + c)`.
            print_expr(r, vars, out, p + 1);
            if paren {
                out.push(')');
            }
        }
    }
}

/// The name of input tensor `tensor` as printed.
pub fn tensor_name(tensor: usize) -> &'static str {
    TENSOR_NAMES[tensor]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_is_the_same_every_time() {
        let dir = Path::new("/d");
        for index in 0..200 {
            let (a, b) = (Case::generate(9, index), Case::generate(9, index));
            assert_eq!(a.run_args(dir), b.run_args(dir));
            assert_eq!(a.inputs.len(), b.inputs.len());
            for (x, y) in a.inputs.iter().zip(&b.inputs) {
                assert_eq!(x.entries, y.entries);
            }
        }
        assert_ne!(
            Case::generate(9, 0).run_args(dir),
            Case::generate(10, 0).run_args(dir)
        );
    }

    #[test]
    fn inputs_fit_their_dimensions() {
        for index in 0..500 {
            let case = Case::generate(3, index);
            for input in &case.inputs {
                for (coords, _) in &input.entries {
                    assert_eq!(coords.len(), input.dims.len());
                    assert!(coords.iter().zip(&input.dims).all(|(c, d)| c < d));
                }
            }
        }
    }

    #[test]
    fn nonunique_levels_over_stored_ones() {
        for yes in ["ub", "usd:2,0,1", "sub", "uu", "uqbs"] {
            assert!(nonunique_over_stored(yes), "{yes}");
        }
        for no in ["uqq", "duqq", "coo", "su", "u", "csr", "bcsr:2x2"] {
            assert!(!nonunique_over_stored(no), "{no}");
        }
    }
}
