//! The Rust API chapter of the guide (`docs/guide/src/rust-api.md` includes this file):
//! SpMV on a MatrixMarket file stored in CSR, with a schedule, checked against the
//! reference evaluator.
//!
//! ```sh
//! cargo run --release -p sparsec --example guide_api -- ../shared/data/matrices/karate.mtx
//! ```

use sparsec::format::Format;
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::Schedule;
use sparsec::tensor::{Tensor, ValueType};
use sparsec::{generate, io, reference};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("give a .mtx file")?;
    // The matrix in CSR, and a dense vector of matching length.
    let csr = Format::parse("csr", 2)?;
    let a = io::read_any(&path)?.into_tensor(&csr, ValueType::F64)?;
    let n = a.dims()[1];
    let x = Tensor::from_coo(
        &generate::dense(&[n], 1)?,
        &Format::dense(1),
        ValueType::F64,
    )?;

    // Bind the statement to the tensors' dimensions and formats.
    let decls = [
        TensorDecl::new("y"),
        TensorDecl::new("A").with_dims(a.dims()).with_format(csr),
        TensorDecl::new("x").with_dims(&[n]),
    ];
    let statement = notation::bind(&notation::parse("y(i) = A(i,j) * x(j)")?, &decls, &[])?;

    // Chunks of 8 rows on threads; gcc compiles the kernel (cached), else an error says why.
    let schedule = Schedule::parse("split(i,i0,i1,8),parallelize(i0,CPUThread,NoRaces)")?;
    let kernel = Kernel::scheduled(
        statement.clone(),
        &schedule,
        ValueType::F64,
        &Toolchain::default(),
    )?;
    let y = kernel.run(&[&a, &x])?;

    // The independent reference evaluator computes the same.
    let expected = reference::evaluate(&statement, &[&a, &x], None);
    let difference = y.max_difference(&expected).ok_or("shapes differ")?;
    println!(
        "y has {} entries; largest difference from the reference {difference:e}",
        y.to_coo().len()
    );
    Ok(())
}
