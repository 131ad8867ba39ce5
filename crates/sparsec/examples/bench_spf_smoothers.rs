//! Benchmark (not a test) of two SPF programs of `examples/spf/` on one thread: a
//! Gauss-Seidel sweep (`gauss_seidel.spf`, from `x0 = 1`, `b = 1`) and the ILU(0)
//! factorization (`ilu0.spf`), on each square shared matrix made strictly diagonally
//! dominant (`generate::dominant`). Prints one line per matrix, `name n nnz gs_ms ilu0_ms`
//! (medians of the given number of runs after a warm-up), and writes each result to
//! OUT_DIR: `NAME.gs` (the sweep's `x`) and `NAME.ilu` (the factors' values in CSR order),
//! one value a line, which `bench/spf_smoothers.py` checks against SciPy and MKL.
//!
//! `cargo run --release -p sparsec --example bench_spf_smoothers -- ../shared/data/matrices 20 /tmp/out`

use std::fmt::Write as _;
use std::path::Path;
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

fn write_values(path: &Path, t: &Tensor) {
    let values = t.values();
    let mut text = String::new();
    for p in 0..values.len() {
        let _ = writeln!(text, "{:e}", values.get(p));
    }
    std::fs::write(path, text).expect("writes the result");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "../shared/data/matrices".into());
    let runs: usize = args.next().map_or(20, |r| r.parse().expect("a run count"));
    let out_dir = args
        .next()
        .unwrap_or_else(|| "target/bench_spf_smoothers".into());
    std::fs::create_dir_all(&out_dir).expect("the output directory");
    let root = env!("CARGO_MANIFEST_DIR");
    let compile = |f: &str| {
        let text = std::fs::read_to_string(format!("{root}/../../examples/spf/{f}")).unwrap();
        let mut kernel = SpfKernel::compile(f, &text, &Toolchain::default()).expect("compiles");
        kernel.set_threads(1);
        kernel
    };
    let (sweep, ilu0) = (compile("gauss_seidel.spf"), compile("ilu0.spf"));
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("the matrix directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    paths.sort();
    println!("name n nnz gs_ms ilu0_ms");
    for path in paths {
        let coo = io::read_matrix_market(&path).expect("reads").coo;
        if coo.dims[0] != coo.dims[1] {
            continue;
        }
        let a = generate::dominant(&coo).expect("a dominant matrix");
        let a =
            Tensor::from_coo(&a, &Format::parse("csr", 2).unwrap(), ValueType::F64).expect("csr");
        let n = coo.dims[0];
        let ones = Coo::new(vec![n], (0..n as i64).collect(), vec![1.0; n]).unwrap();
        let ones = Tensor::from_coo(&ones, &Format::dense(1), ValueType::F64).unwrap();
        let (gs, x) = median_ms(&sweep, &[("A", &a), ("b", &ones), ("x0", &ones)], runs);
        let (ilu, lu) = median_ms(&ilu0, &[("A", &a)], runs);
        let name = path.file_stem().unwrap().to_string_lossy();
        write_values(&Path::new(&out_dir).join(format!("{name}.gs")), &x);
        write_values(&Path::new(&out_dir).join(format!("{name}.ilu")), &lu);
        println!("{name} {n} {} {gs:.4} {ilu:.4}", a.values().len());
    }
}
