//! Benchmark (not a test) of SPF programs of `examples/spf/` on each square shared matrix,
//! medians of the given number of runs after a warm-up, `SpfKernel::run` whole.
//!
//! By default, the sparse lower triangular solve: serial forward substitution and the
//! level-set (wavefront) kernel on 1 and 2 threads, on the lower triangle (plus a dominant
//! diagonal) of each matrix. Prints one line per matrix, `name n nnz serial_ms
//! wavefront1_ms wavefront2_ms`; `bench/spf_trisolve.py` compares them with SciPy and MKL.
//!
//! With `--smoothers OUT_DIR`, on one thread: a Gauss-Seidel sweep (`gauss_seidel.spf`,
//! from `x0 = 1`, `b = 1`) and the ILU(0) factorization (`ilu0.spf`), on each matrix made
//! strictly diagonally dominant (`generate::dominant`). Prints `name n nnz gs_ms ilu0_ms`
//! and writes each result to OUT_DIR, `NAME.gs` (the sweep's `x`) and `NAME.ilu` (the
//! factors' values in CSR order), one value a line, which `bench/spf_smoothers.py` checks
//! against SciPy and MKL.
//!
//! `cargo run --release -p sparsec --example bench_spf -- ../shared/data/matrices 20 [--smoothers OUT_DIR]`

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use sparsec::format::Format;
use sparsec::generate;
use sparsec::io;
use sparsec::jit::Toolchain;
use sparsec::spf::SpfKernel;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// The median of `runs` calls after one, and the last call's result.
fn median_ms(kernel: &SpfKernel, inputs: &[(&str, &Tensor)], runs: usize) -> (f64, Tensor) {
    let mut out = kernel.run(inputs).expect("runs");
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            out = kernel.run(inputs).expect("runs");
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[runs / 2], out)
}

/// The program `examples/spf/NAME`, compiled.
fn compile(name: &str) -> SpfKernel {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/../../examples/spf/{name}")).unwrap();
    SpfKernel::compile(name, &text, &Toolchain::default()).expect("compiles")
}

/// The square matrices of `dir`, by name, in name order.
fn square_matrices(dir: &str) -> Vec<(String, Coo)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the matrix directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let coo = io::read_matrix_market(&path).expect("reads").coo;
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (coo.dims[0] == coo.dims[1]).then_some((name, coo))
        })
        .collect()
}

fn csr(coo: &Coo) -> Tensor {
    Tensor::from_coo(coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).expect("csr")
}

fn ones(n: usize) -> Tensor {
    let ones = Coo::new(vec![n], (0..n as i64).collect(), vec![1.0; n]).unwrap();
    Tensor::from_coo(&ones, &Format::dense(1), ValueType::F64).unwrap()
}

fn triangular_solves(dir: &str, runs: usize) {
    let mut serial = compile("lower_solve.spf");
    serial.set_threads(1);
    let mut wavefront = compile("lower_solve_wavefront.spf");
    println!("name n nnz serial_ms wavefront1_ms wavefront2_ms");
    for (name, coo) in square_matrices(dir) {
        let l = csr(&generate::dominant_lower_triangle(&coo).expect("a lower triangle"));
        let b = ones(coo.dims[0]);
        let inputs = [("L", &l), ("b", &b)];
        let (s, _) = median_ms(&serial, &inputs, runs);
        wavefront.set_threads(1);
        let (w1, _) = median_ms(&wavefront, &inputs, runs);
        wavefront.set_threads(2);
        let (w2, _) = median_ms(&wavefront, &inputs, runs);
        let (n, nnz) = (coo.dims[0], l.values().len());
        println!("{name} {n} {nnz} {s:.4} {w1:.4} {w2:.4}");
    }
}

fn write_values(path: &Path, t: &Tensor) {
    let values = t.values();
    let mut text = String::new();
    for p in 0..values.len() {
        let _ = writeln!(text, "{:e}", values.get(p));
    }
    std::fs::write(path, text).expect("writes the result");
}

fn smoothers(dir: &str, runs: usize, out_dir: &Path) {
    std::fs::create_dir_all(out_dir).expect("the output directory");
    let (mut sweep, mut ilu0) = (compile("gauss_seidel.spf"), compile("ilu0.spf"));
    sweep.set_threads(1);
    ilu0.set_threads(1);
    println!("name n nnz gs_ms ilu0_ms");
    for (name, coo) in square_matrices(dir) {
        let a = csr(&generate::dominant(&coo).expect("a dominant matrix"));
        let ones = ones(coo.dims[0]);
        let (gs, x) = median_ms(&sweep, &[("A", &a), ("b", &ones), ("x0", &ones)], runs);
        let (ilu, lu) = median_ms(&ilu0, &[("A", &a)], runs);
        write_values(&out_dir.join(format!("{name}.gs")), &x);
        write_values(&out_dir.join(format!("{name}.ilu")), &lu);
        let (n, nnz) = (coo.dims[0], a.values().len());
        println!("{name} {n} {nnz} {gs:.4} {ilu:.4}");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "../shared/data/matrices".into());
    let runs: usize = args.next().map_or(20, |r| r.parse().expect("a run count"));
    match (args.next().as_deref(), args.next()) {
        (None, _) => triangular_solves(&dir, runs),
        (Some("--smoothers"), Some(out)) => smoothers(&dir, runs, Path::new(&out)),
        _ => panic!("usage: bench_spf [MATRIX_DIR] [RUNS] [--smoothers OUT_DIR]"),
    }
}
