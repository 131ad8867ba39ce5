//! Benchmark (not a test) of the SPF sparse lower triangular solve: serial forward
//! substitution and the level-set (wavefront) kernel on 1 and 2 threads, on the lower
//! triangle (plus a dominant diagonal) of each square shared matrix. Prints one line per
//! matrix: `name n nnz serial_ms wavefront1_ms wavefront2_ms` (medians of the given number
//! of runs after a warm-up); `bench/spf_trisolve.py` compares them with SciPy.
//!
//! `cargo run --release -p sparsec --example bench_spf -- ../shared/data/matrices 20`

use std::time::Instant;

use sparsec::format::Format;
use sparsec::generate;
use sparsec::io;
use sparsec::jit::Toolchain;
use sparsec::spf::SpfKernel;
use sparsec::tensor::{Coo, Tensor, ValueType};

fn median_ms(kernel: &SpfKernel, inputs: &[(&str, &Tensor)], runs: usize) -> f64 {
    kernel.run(inputs).expect("runs");
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            kernel.run(inputs).expect("runs");
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "../shared/data/matrices".into());
    let runs: usize = args.next().map_or(20, |r| r.parse().expect("a run count"));
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |f: &str| std::fs::read_to_string(format!("{root}/../../examples/spf/{f}")).unwrap();
    let toolchain = Toolchain::default();
    let serial = SpfKernel::compile("lower_solve.spf", &read("lower_solve.spf"), &toolchain)
        .expect("compiles");
    let mut wavefront = SpfKernel::compile(
        "lower_solve_wavefront.spf",
        &read("lower_solve_wavefront.spf"),
        &toolchain,
    )
    .expect("compiles");
    let mut serial = serial;
    serial.set_threads(1);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("the matrix directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    paths.sort();
    println!("name n nnz serial_ms wavefront1_ms wavefront2_ms");
    for path in paths {
        let coo = io::read_matrix_market(&path).expect("reads").coo;
        if coo.dims[0] != coo.dims[1] {
            continue;
        }
        let lower = generate::dominant_lower_triangle(&coo).expect("a lower triangle");
        let l = Tensor::from_coo(&lower, &Format::parse("csr", 2).unwrap(), ValueType::F64)
            .expect("csr");
        let n = coo.dims[0];
        let b = Coo::new(vec![n], (0..n as i64).collect(), vec![1.0; n]).unwrap();
        let b = Tensor::from_coo(&b, &Format::dense(1), ValueType::F64).unwrap();
        let inputs = [("L", &l), ("b", &b)];
        let s = median_ms(&serial, &inputs, runs);
        wavefront.set_threads(1);
        let w1 = median_ms(&wavefront, &inputs, runs);
        wavefront.set_threads(2);
        let w2 = median_ms(&wavefront, &inputs, runs);
        let name = path.file_stem().unwrap().to_string_lossy();
        println!("{name} {n} {} {s:.4} {w1:.4} {w2:.4}", l.values().len());
    }
}
