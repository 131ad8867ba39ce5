//! `sparsec run ... --distributed` under `mpirun`: a statement over a row-distributed
//! sparse matrix (`y(i) = A(i,j) * x(j)`, `Y(i,k) = A(i,j) * X(j,k)`, ...), each rank
//! reading its share of the matrix's file, its rows computed by a kernel compiled as
//! `run` compiles one, and the result gathered on rank 0, which prints it as `run` does.

use std::path::PathBuf;
use std::time::Instant;

use miette::{miette, Result};
use sparsec::distributed::comm::{self, Ranks};
use sparsec::distributed::kernel::{local_statement, DenseOperand, DistributedKernel};
use sparsec::distributed::product::RowDistributed;
use sparsec::format::Format;
use sparsec::io;
use sparsec::kernel::Backend;
use sparsec::notation::ast::Assignment;
use sparsec::notation::{self, TensorDecl};
use sparsec::reference;
use sparsec::tensor::{Tensor, ValueType, Values};

use crate::run::{print_summary, report_phase, RunArgs};
use crate::spec::{self, GenKind};

/// Largest accepted scaled difference from the single-process reference.
const TOLERANCE: f64 = 1e-9;

/// Run `args` distributed over the ranks `mpirun` started. Rank 0 reports the result, or
/// the error every rank agreed on, which the others wait for before they exit with it:
/// `mpirun` ends the job at the first rank that exits with a failure.
pub fn run(args: &RunArgs) -> Result<()> {
    let (_universe, ranks) = comm::initialize().map_err(|e| miette!("{e}"))?;
    let Err(error) = run_on(args, &ranks) else {
        return Ok(());
    };
    if ranks.rank == 0 {
        eprintln!("{:?}", miette!("{error}"));
    }
    ranks.barrier();
    std::process::exit(1)
}

/// What a distributable statement reads: the matrix from a file, and the other operands,
/// generated, each indexed by the matrix's column variable first.
struct Shape {
    matrix: String,
    path: PathBuf,
    dense: Vec<(String, GenKind)>,
    /// Every index variable's size: the matrix's rows and columns, `-d` for the others.
    sizes: Vec<(String, usize)>,
}

impl Shape {
    fn dims(&self, indices: &[String]) -> Result<Vec<usize>, String> {
        indices
            .iter()
            .map(|v| {
                self.sizes
                    .iter()
                    .find(|(name, _)| name == v)
                    .map(|(_, s)| *s)
                    .ok_or_else(|| format!("give the size of `{v}` with -d {v}:SIZE"))
            })
            .collect()
    }
}

fn shape(args: &RunArgs, assignment: &Assignment) -> Result<Shape, String> {
    let spec = &args.statement.spec;
    let [input] = &spec.inputs[..] else {
        return Err(
            "--distributed reads one matrix from a file (-i A:FILE.mtx) and generates \
                    the other inputs (-g)"
                .into(),
        );
    };
    let (matrix, file) = spec::split_pair("-i", input, "FILE").map_err(|e| e.to_string())?;
    let rhs = assignment.rhs.accesses();
    let Some(a) = rhs.iter().find(|a| a.tensor == matrix) else {
        return Err(format!(
            "-i {input}: `{matrix}` does not occur in the statement"
        ));
    };
    let out = &assignment.lhs;
    let (row, column) = match &a.indices[..] {
        [i, j] if out.indices.first() == Some(i) && !out.indices.contains(j) => (i, j),
        _ => {
            return Err(format!(
                "--distributed splits `{matrix}`'s rows among the ranks: read it as \
                 `{matrix}(i,j)` with `i` the output's first index and `j` summed over"
            ))
        }
    };
    if assignment.over.is_some() || assignment.accumulate || assignment.mask.is_some() {
        return Err("--distributed computes `=` statements over (+, *), unmasked".into());
    }
    let mut dense: Vec<(String, GenKind)> = Vec::new();
    for access in &rhs {
        if access.tensor == matrix || dense.iter().any(|(n, _)| *n == access.tensor) {
            continue;
        }
        if access.indices.first() != Some(column) || access.indices[1..].contains(row) {
            return Err(format!(
                "`{}` must be indexed by `{column}` first: its rows are exchanged by the \
                 columns `{matrix}`'s rows read",
                access.tensor
            ));
        }
        let generated = args.generate.iter().find_map(|g| {
            let (name, kind) = g.split_once(':')?;
            (name == access.tensor).then(|| GenKind::parse(kind))
        });
        let Some(kind) = generated else {
            return Err(format!("generate `{0}` with -g {0}:dense", access.tensor));
        };
        dense.push((access.tensor.clone(), kind.map_err(|e| e.to_string())?));
    }
    let mut sizes = Vec::new();
    for d in &spec.dims {
        let (var, size) = d
            .split_once(':')
            .ok_or_else(|| format!("-d {d}: expected VAR:SIZE"))?;
        let size = size
            .parse()
            .map_err(|_| format!("-d {d}: `{size}` is not a size"))?;
        sizes.push((var.to_string(), size));
    }
    sizes.retain(|(v, _)| v != row && v != column);
    sizes.extend([(row.clone(), 0), (column.clone(), 0)]);
    Ok(Shape {
        matrix: matrix.to_string(),
        path: PathBuf::from(file),
        dense,
        sizes,
    })
}

/// A dense operand: its shape, its values, and its rows on this rank.
struct Operand {
    shape: DenseOperand,
    own: Vec<f64>,
    whole: Tensor,
}

fn run_on(args: &RunArgs, ranks: &Ranks) -> Result<(), String> {
    let parsed = notation::parse(&args.statement.expr).map_err(|e| e.to_string());
    let (assignment, mut shape) =
        ranks.agree(parsed.and_then(|a| shape(args, &a).map(|s| (a, s))))?;
    let share = io::read_matrix_market_share(&shape.path, ranks.rank, ranks.size)
        .map_err(|e| e.to_string());
    let share = ranks.agree(share)?;
    let declared = share.matrix.header.stored_entries as u64;
    let read = ranks.sum(&[share.entry_lines as u64])[0];
    if read != declared {
        return Err(format!(
            "{}: the size line declares {declared} entries, and the file holds {read}",
            shape.path.display()
        ));
    }
    let started = Instant::now();
    let layout = ranks.agree(RowDistributed::new(ranks, &share.matrix.coo))?;
    let distribute_time = started.elapsed();
    let (m, n) = (share.matrix.coo.dims[0], share.matrix.coo.dims[1]);
    drop(share);
    let k = shape.sizes.len();
    shape.sizes[k - 2].1 = m;
    shape.sizes[k - 1].1 = n;

    // The other operands, generated whole on every rank from the same seeds, then cut to
    // this rank's rows.
    let own = layout.columns.range(ranks.rank);
    let mut operands = Vec::new();
    for (k, (name, kind)) in shape.dense.iter().enumerate() {
        let access = assignment
            .rhs
            .accesses()
            .into_iter()
            .find(|a| a.tensor == *name);
        let dims = ranks.agree(shape.dims(&access.expect("an operand").indices))?;
        let width: usize = dims[1..].iter().product();
        let whole = kind
            .generate(&dims, args.seed.wrapping_add(k as u64 + 2))
            .and_then(|generated| {
                Tensor::from_coo(&generated, &Format::dense(dims.len()), ValueType::F64)
            })
            .map_err(|e| format!("cannot generate `{name}`: {e}"));
        let whole = ranks.agree(whole)?;
        operands.push(Operand {
            own: values_of(&whole)[own.start * width..own.end * width].to_vec(),
            whole,
            shape: DenseOperand {
                name: name.clone(),
                dims,
            },
        });
    }

    // This rank's kernel: the statement over its rows and the columns they read.
    let matrix_format =
        format_of(args, &shape.matrix, 2)?.unwrap_or_else(|| Format::dense(2).general_equivalent());
    let out = &assignment.lhs;
    let shapes: Vec<DenseOperand> = operands.iter().map(|o| o.shape.clone()).collect();
    let output_format = format_of(args, &out.tensor, out.indices.len())?;
    let statement = ranks.agree(local_statement(
        &layout,
        &assignment,
        (&shape.matrix, &matrix_format),
        &shapes,
        output_format,
    ))?;
    let compiled = args
        .statement
        .schedule
        .kernel(&statement, Backend::C, None)
        .map_err(|e| format!("{e:?}"));
    let mut kernel = ranks.agree(compiled)?;
    if let Some(threads) = args.threads {
        kernel.set_threads(threads);
    }
    let distributed = ranks.agree(DistributedKernel::new(
        layout,
        kernel,
        &matrix_format,
        shapes,
    ))?;
    let own: Vec<&[f64]> = operands.iter().map(|o| &o.own[..]).collect();
    let result = ranks.agree(distributed.apply(ranks, &own))?;
    let mut times = Vec::new();
    for _ in 0..args.time.unwrap_or(0) {
        ranks.barrier();
        let start = Instant::now();
        ranks.agree(distributed.apply(ranks, &own))?;
        times.push(ranks.slowest(start.elapsed()));
    }

    let gathered = ranks.gather(&values_of(&result), 0)?;
    let (sent, bound) = distributed.volume();
    let volumes = ranks.gather(&[sent as f64, bound as f64], 0)?;
    if ranks.rank != 0 {
        return Ok(());
    }
    crate::outln!(
        "distributed: {} ranks, {m}x{n} `{}` in row blocks balanced by nonzeros, distributed \
         in {}",
        ranks.size,
        shape.matrix,
        spec::ms(distribute_time)
    );
    let per_rank: Vec<String> = volumes
        .chunks(2)
        .map(|v| format!("{}/{}", v[0], v[1]))
        .collect();
    crate::outln!(
        "ghost values per product, sent/received by rank: {}",
        per_rank.join(" ")
    );
    let whole = Tensor::from_dense_values(&shape.dims(&out.indices)?, Values::F64(gathered))
        .map_err(|e| format!("the gathered output: {e}"))?;
    if !times.is_empty() {
        crate::outln!(
            "timing: {} runs after 1 warm-up, of the slowest rank",
            times.len()
        );
        report_phase("product", times);
    }
    if args.check {
        check(&assignment, &shape, &operands, &whole)?;
    }
    print_summary(&out.tensor, &whole);
    Ok(())
}

fn format_of(args: &RunArgs, name: &str, order: usize) -> Result<Option<Format>, String> {
    args.statement
        .spec
        .formats
        .iter()
        .filter_map(|f| f.split_once(':'))
        .find(|(n, _)| *n == name)
        .map(|(_, f)| Format::parse(f, order).map_err(|e| format!("-f {name}:{f}: {e}")))
        .transpose()
}

fn values_of(t: &Tensor) -> Vec<f64> {
    (0..t.values().len()).map(|p| t.values().get(p)).collect()
}

/// The gathered result against the reference on one process (rank 0 reads the whole
/// matrix for it).
fn check(
    assignment: &Assignment,
    shape: &Shape,
    operands: &[Operand],
    got: &Tensor,
) -> Result<(), String> {
    let whole = io::read_matrix_market(&shape.path).map_err(|e| e.to_string())?;
    let csr = Format::dense(2).general_equivalent();
    let mut decls = vec![
        TensorDecl::new(&assignment.lhs.tensor),
        TensorDecl {
            name: shape.matrix.clone(),
            dims: Some(whole.coo.dims.clone()),
            format: Some(csr.clone()),
            fill: 0.0,
        },
    ];
    let matrix = Tensor::from_coo(&whole.coo, &csr, ValueType::F64).map_err(|e| e.to_string())?;
    let mut refs = vec![&matrix];
    for o in operands {
        decls.push(TensorDecl {
            name: o.shape.name.clone(),
            dims: Some(o.shape.dims.clone()),
            format: Some(Format::dense(o.shape.dims.len())),
            fill: 0.0,
        });
        refs.push(&o.whole);
    }
    let statement = notation::bind(assignment, &decls, &[]).map_err(|e| e.to_string())?;
    let (expected, magnitude) = reference::try_evaluate_with_magnitude(&statement, &refs, None)?;
    let expected = expected.convert(got.format()).map_err(|e| e.to_string())?;
    let diff = reference::max_error(got, &expected, &magnitude);
    if diff > TOLERANCE {
        return Err(format!(
            "check FAILED: the distributed result differs from the single-process reference by \
             {diff:.3e} of the terms' magnitude"
        ));
    }
    crate::outln!("check: ok, max difference from the single-process reference {diff:.3e}");
    Ok(())
}
