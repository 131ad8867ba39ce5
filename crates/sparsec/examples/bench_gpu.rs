//! Benchmark (not a test) of GPU schedules on the OpenCL target against the C target on
//! the CPU, for the GPU machine's one prepared run (`bench/gpu.sh`) and, as a check that
//! the script works, on PoCL here (whose figures say nothing of a GPU's speed).
//!
//! For each matrix: SpMV with a warp per row, with a thread per row and with the
//! scheduling paper's load-balanced position split (A.11: 7 entries a thread), SpMM with 32
//! dense columns (a warp per row, its lanes over the row's entries) and with 128 columns
//! by the paper's A.4 (16 entries a warp, a lane per column), each checked against
//! the C target's result first; then the median time of a call (after a warm-up, inputs
//! kept on the device between calls, so a call copies only the output back), and the C
//! target's median (default CPU schedule, all threads). Prints one line per kernel:
//! `matrix kernel rows nnz opencl_ms c_ms`.
//!
//! `cargo run --release -p sparsec --features opencl --example bench_gpu -- ../shared/data/matrices 20`

use std::sync::Arc;
use std::time::Instant;

use sparsec::codegen::opencl::{self, OpenClTarget};
use sparsec::format::Format;
use sparsec::io;
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::{Concrete, Schedule};
use sparsec::target::Targets;
use sparsec::tensor::{Coo, Tensor, ValueType};

const SPMV_WARP: &str = "split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),\
                         parallelize(i1,GPUWarp,NoRaces),parallelize(j,GPUThread,ParallelReduction)";
const SPMV_THREAD: &str =
    "split(i,i0,i1,128),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces)";
const SPMM_WARP: &str = "split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),\
                         parallelize(i1,GPUWarp,NoRaces),parallelize(j,GPUThread,ParallelReduction)";
/// The paper's A.11 (A.2 without its register precompute).
const SPMV_POSITIONS: &str = "fuse(i,j,f),pos(f,fpos,A(i,j)),split(fpos,block,fpos1,3584),\
                              split(fpos1,warp,fpos2,224),split(fpos2,thread,thread_nz,7),\
                              reorder(block,warp,thread,thread_nz),\
                              parallelize(block,GPUBlock,IgnoreRaces),\
                              parallelize(warp,GPUWarp,IgnoreRaces),\
                              parallelize(thread,GPUThread,Atomics)";
/// The paper's A.4, for 128 columns.
const SPMM_POSITIONS: &str = "reorder(i,j,k),fuse(i,j,f),pos(f,fpos,A(i,j)),\
                              split(fpos,block,fpos1,256),split(fpos1,warp,nnz,16),\
                              split(k,dense_val_unbounded,thread,32),\
                              bound(dense_val_unbounded,dense_val,4,MaxExact),\
                              reorder(block,warp,dense_val,thread,nnz),\
                              parallelize(block,GPUBlock,IgnoreRaces),\
                              parallelize(warp,GPUWarp,IgnoreRaces),\
                              parallelize(thread,GPUThread,Atomics)";

fn median_ms(kernel: &Kernel, inputs: &[&Tensor], runs: usize) -> f64 {
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

fn dense(dims: Vec<usize>, seed: u64) -> Tensor {
    let n: usize = dims.iter().product();
    let mut coords = Vec::with_capacity(n * dims.len());
    let mut values = Vec::with_capacity(n);
    for p in 0..n {
        let mut rest = p;
        let mut point = vec![0i64; dims.len()];
        for (k, d) in dims.iter().enumerate().rev() {
            point[k] = (rest % d) as i64;
            rest /= d;
        }
        coords.extend(point);
        values.push(((p as u64 * 2654435761 + seed) % 1000) as f64 / 500.0 - 1.0);
    }
    let coo = Coo::new(dims.clone(), coords, values).expect("valid");
    Tensor::from_coo(&coo, &Format::dense(dims.len()), ValueType::F64).expect("packs")
}

/// The kernel of `expr` over `a` (CSR) and `b`, with `schedule` on OpenCL, or the default
/// CPU schedule on C.
fn kernel(expr: &str, a: &Tensor, b: &Tensor, schedule: Option<&str>) -> Kernel {
    let assignment = notation::parse(expr).expect("parses");
    let decls = vec![
        TensorDecl::new(&assignment.lhs.tensor),
        TensorDecl::new("A")
            .with_dims(a.dims())
            .with_format(a.format().clone()),
        TensorDecl::new(if expr.contains("x(") { "x" } else { "B" })
            .with_dims(b.dims())
            .with_format(b.format().clone()),
    ];
    let statement = notation::bind(&assignment, &decls, &[]).expect("binds");
    let toolchain = Toolchain::default();
    match schedule {
        Some(text) => {
            let concrete = Schedule::parse(text)
                .expect("parses")
                .apply(&Concrete::new(&statement).expect("concrete"))
                .expect("applies");
            let lowered = sparsec::lower::lower(&concrete).expect("lowers");
            Kernel::from_lowered_on(
                statement,
                lowered,
                ValueType::F64,
                &toolchain,
                Targets::one(Arc::new(OpenClTarget)),
            )
            .expect("compiles")
        }
        // The C target, with the default CPU schedule.
        None => Kernel::from_statement(statement, ValueType::F64, &toolchain).expect("compiles"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "../shared/data/matrices".into());
    let runs: usize = args.next().map_or(20, |r| r.parse().expect("a run count"));
    let device = opencl::device_name().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("OpenCL device: {device}; {runs} runs each");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("a directory of .mtx files")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    paths.sort();
    println!("matrix kernel rows nnz opencl_ms c_ms");
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let coo = io::read_matrix_market(&path).expect("reads").coo;
        let a = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64)
            .expect("packs");
        let x = dense(vec![coo.dims[1]], 1);
        let b = dense(vec![coo.dims[1], 32], 2);
        let b128 = dense(vec![coo.dims[1], 128], 3);
        let cases = [
            ("spmv_warp", "y(i) = A(i,j) * x(j)", &x, SPMV_WARP),
            ("spmv_thread", "y(i) = A(i,j) * x(j)", &x, SPMV_THREAD),
            ("spmv_positions", "y(i) = A(i,j) * x(j)", &x, SPMV_POSITIONS),
            ("spmm32_warp", "C(i,k) = A(i,j) * B(j,k)", &b, SPMM_WARP),
            (
                "spmm128_positions",
                "C(i,k) = A(i,j) * B(j,k)",
                &b128,
                SPMM_POSITIONS,
            ),
        ];
        for (what, expr, other, schedule) in cases {
            let gpu = kernel(expr, &a, other, Some(schedule));
            let cpu = kernel(expr, &a, other, None);
            let (got, want) = (
                gpu.run(&[&a, other]).expect("runs"),
                cpu.run(&[&a, other]).expect("runs"),
            );
            let diff = got.max_difference(&want).expect("same shape");
            assert!(
                diff <= 1e-6,
                "{name} {what}: OpenCL differs from C by {diff}"
            );
            println!(
                "{name} {what} {} {} {:.4} {:.4}",
                coo.dims[0],
                a.values().len(),
                median_ms(&gpu, &[&a, other], runs),
                median_ms(&cpu, &[&a, other], runs)
            );
        }
    }
}
