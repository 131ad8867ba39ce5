//! Conjugate gradients over MPI: `A x = b` for a symmetric positive definite matrix read
//! from a MatrixMarket file, `b` all ones, `x` from zero. Each product `A p` is a
//! distributed sparsec kernel (`y(i) = A(i,j) * p(j)`, CSR rows on each rank, its ghosts
//! exchanged); each dot product sums the ranks' partial sums with `MPI_Allreduce`.
//! Rank 0 prints the relative residual `|r| / |b|` of every iteration, so that runs on
//! different numbers of ranks can be compared line by line.
//!
//! ```sh
//! cargo build -p sparsec-cli --features mpi --example distributed_cg
//! mpirun -np 4 target/debug/examples/distributed_cg bcsstk13.mtx [ITERATIONS] [TOLERANCE]
//! ```

use std::process::ExitCode;

use sparsec::distributed::comm::{self, Ranks};
use sparsec::distributed::kernel::{local_statement, DenseOperand, DistributedKernel};
use sparsec::distributed::product::RowDistributed;
use sparsec::format::Format;
use sparsec::io;
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::notation;
use sparsec::tensor::ValueType;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: distributed_cg MATRIX.mtx [ITERATIONS] [TOLERANCE]");
        return ExitCode::FAILURE;
    };
    let iterations = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200);
    let tolerance = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1e-8);
    let (_universe, ranks) = match comm::initialize() {
        Ok(started) => started,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match solve(&ranks, path, iterations, tolerance) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if ranks.rank == 0 {
                eprintln!("error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

fn solve(ranks: &Ranks, path: &str, iterations: usize, tolerance: f64) -> Result<(), String> {
    let share = ranks.agree(
        io::read_matrix_market_share(path, ranks.rank, ranks.size).map_err(|e| e.to_string()),
    )?;
    let (m, n) = (share.matrix.coo.dims[0], share.matrix.coo.dims[1]);
    if m != n {
        return Err(format!(
            "conjugate gradients need a square matrix, not {m}x{n}"
        ));
    }
    let layout = ranks.agree(RowDistributed::new(ranks, &share.matrix.coo))?;
    drop(share);
    let csr = Format::dense(2).general_equivalent();
    let assignment = notation::parse("y(i) = A(i,j) * p(j)").map_err(|e| e.to_string())?;
    let p_shape = DenseOperand {
        name: "p".into(),
        dims: vec![n],
    };
    let statement = ranks.agree(local_statement(
        &layout,
        &assignment,
        ("A", &csr),
        std::slice::from_ref(&p_shape),
        None,
    ))?;
    let kernel = Kernel::from_statement(statement, ValueType::F64, &Toolchain::default())
        .map_err(|e| e.to_string());
    let kernel = ranks.agree(kernel)?;
    let rows = layout.rows.range(ranks.rank).len();
    let product = ranks.agree(DistributedKernel::new(layout, kernel, &csr, vec![p_shape]))?;
    let dot = |a: &[f64], b: &[f64]| -> f64 {
        let mine: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        ranks.sum_f64(&[mine])[0]
    };

    let b = vec![1.0; rows];
    let mut x = vec![0.0; rows];
    let mut r = b.clone();
    let mut p = r.clone();
    let norm_b = dot(&b, &b).sqrt();
    let mut rr = dot(&r, &r);
    for k in 1..=iterations {
        let q = ranks.agree(product.apply(ranks, &[&p]))?;
        let q: Vec<f64> = (0..rows).map(|i| q.values().get(i)).collect();
        let alpha = rr / dot(&p, &q);
        for i in 0..rows {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        let next = dot(&r, &r);
        let residual = next.sqrt() / norm_b;
        if ranks.rank == 0 {
            println!("{k} {residual:.12e}");
        }
        if residual < tolerance {
            break;
        }
        let beta = next / rr;
        rr = next;
        for i in 0..rows {
            p[i] = r[i] + beta * p[i];
        }
    }
    Ok(())
}
