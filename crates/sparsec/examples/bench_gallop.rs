//! Galloping against two-finger intersections (`mergeby(j,Gallop)` / `TwoFinger`) on
//! skewed intersections: the element-wise product `C(i,j) = A(i,j) * B(i,j)` of a matrix
//! with long rows and one with short rows, and the inner product `z = x(i) * y(i)` of a
//! long and a short sparse vector, at several length ratios.
//!
//! ```text
//! cargo run --release -p sparsec --example bench_gallop -- --runs 9
//! ```
//!
//! Each kernel is compiled once with each strategy (gcc, one thread), run `--runs` times
//! on the same inputs, and the median compute time is printed with the ratio
//! two-finger / gallop (above 1: galloping is faster). Both results are compared before
//! timing, so a wrong galloping kernel fails the benchmark.

use std::time::Duration;

use sparsec::format::Format;
use sparsec::generate;
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::Schedule;
use sparsec::tensor::{Coo, Tensor, ValueType};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|k| args.get(k + 1))
        .map_or(9, |n| n.parse().expect("--runs takes a number"));
    println!("case                                   two-finger      gallop   ratio");
    let (rows, cols) = (2_000, 200_000);
    for short in [2, 20, 200] {
        let a = generate::uniform(&[rows, cols], 0.05, 1).unwrap();
        let b = generate::uniform(&[rows, cols], short as f64 / cols as f64, 2).unwrap();
        let name = format!("C=A.*B 2000x200000, 10000 vs {short}/row");
        bench(
            &name,
            "C(i,j) = A(i,j) * B(i,j)",
            &[("C", "csr"), ("A", "csr"), ("B", "csr")],
            &[("A", &a), ("B", &b)],
            "j",
            runs,
        );
    }
    let n = 20_000_000;
    for short in [100, 10_000, 1_000_000] {
        let x = generate::uniform(&[n], 0.1, 3).unwrap();
        let y = generate::uniform(&[n], short as f64 / n as f64, 4).unwrap();
        let name = format!("z=x.y 2e7, 2e6 vs {short}");
        bench(
            &name,
            "z = x(i) * y(i)",
            &[("x", "sv"), ("y", "sv")],
            &[("x", &x), ("y", &y)],
            "i",
            runs,
        );
    }
}

fn bench(
    name: &str,
    expr: &str,
    formats: &[(&str, &str)],
    inputs: &[(&str, &Coo)],
    var: &str,
    runs: usize,
) {
    let assignment = notation::parse(expr).expect("benchmark statement parses");
    let mut decls = vec![];
    let output = &assignment.lhs.tensor;
    let mut tensors = vec![];
    for name in std::iter::once(output.as_str()).chain(inputs.iter().map(|i| i.0)) {
        let mut decl = TensorDecl::new(name);
        let input = inputs.iter().find(|i| i.0 == name);
        let order = input.map_or(assignment.lhs.indices.len(), |i| i.1.dims.len());
        if let Some((_, spelling)) = formats.iter().find(|f| f.0 == name) {
            let format = Format::parse(spelling, order).expect("benchmark format");
            if let Some((_, coo)) = input {
                tensors.push(Tensor::from_coo(coo, &format, ValueType::F64).expect("packs"));
                decl = decl.with_dims(&coo.dims);
            }
            decl = decl.with_format(format);
        }
        decls.push(decl);
    }
    let stmt = notation::bind(&assignment, &decls, &[]).expect("benchmark statement binds");
    let inputs: Vec<&Tensor> = tensors.iter().collect();
    let mut medians = vec![];
    let mut results = vec![];
    for strategy in ["TwoFinger", "Gallop"] {
        let schedule = Schedule::parse(&format!("mergeby({var},{strategy})")).expect("parses");
        let mut kernel = Kernel::scheduled(
            stmt.clone(),
            &schedule,
            ValueType::F64,
            &Toolchain::default(),
        )
        .expect("benchmark kernel compiles");
        kernel.set_threads(1);
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let (result, timings) = kernel.run_timed(&inputs, None).expect("runs");
                results.push(result);
                timings.compute
            })
            .collect();
        times.sort();
        medians.push(times[runs / 2]);
    }
    let (first, last) = (&results[0], results.last().expect("ran"));
    assert!(
        first.approx_eq(last, 1e-12),
        "{name}: galloping and two-finger results differ"
    );
    println!(
        "{name:<38} {:>9.3} ms {:>8.3} ms {:>6.2}",
        medians[0].as_secs_f64() * 1e3,
        medians[1].as_secs_f64() * 1e3,
        medians[0].as_secs_f64() / medians[1].as_secs_f64()
    );
}
