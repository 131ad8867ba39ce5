//! Kernel benchmark: SpMV, SpMM, SpGEMM, MTTKRP and TTV on the shared matrices and tensors
//! and on generated large inputs, single-threaded.
//!
//! ```text
//! cargo run --release -p sparsec --example bench_kernels -- \
//!     [--runs N] [--quick] [--data DIR] [--gen-dir DIR] [--out results.csv]
//! ```
//!
//! Each kernel is compiled once (the compile is not timed), run once to warm up, then run
//! `N` times (default 7); the medians of `Timings::compute` and `Timings::assemble` are
//! reported. Inputs are packed before timing. Generated inputs are written to `--gen-dir`
//! as raw little-endian arrays (`NAME.dims` text, `NAME.coords.i64`, `NAME.vals.f64`) so
//! that `bench/kernels_vs_scipy.py` times scipy on identical data. Dense operands are
//! filled with `dense_value(p) = ((7 p) mod 11) / 11 - 0.5` in row-major order, which the
//! Python script reproduces; the CSV's `checksum` (sum of the output) lets it check that
//! both computed the same thing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sparsec::format::Format;
use sparsec::io;
use sparsec::kernel::Kernel;
use sparsec::notation::TensorDecl;
use sparsec::tensor::{Coo, Tensor, ValueType};

struct Args {
    runs: usize,
    quick: bool,
    data: PathBuf,
    gen_dir: PathBuf,
    out: PathBuf,
}

fn parse_args() -> Args {
    let mut args = Args {
        runs: 7,
        quick: false,
        data: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")),
        gen_dir: PathBuf::from("/tmp/sparsec-bench"),
        out: PathBuf::from("/tmp/sparsec-bench/sparsec_results.csv"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => args.runs = it.next().unwrap().parse().unwrap(),
            "--quick" => args.quick = true,
            "--data" => args.data = it.next().unwrap().into(),
            "--gen-dir" => args.gen_dir = it.next().unwrap().into(),
            "--out" => args.out = it.next().unwrap().into(),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(args.runs >= 1);
    args
}

fn dense_value(p: usize) -> f64 {
    ((7 * p) % 11) as f64 / 11.0 - 0.5
}

fn dense(dims: &[usize]) -> Tensor {
    let mut t = Tensor::zeros(dims, ValueType::F64);
    let n: usize = dims.iter().product();
    for p in 0..n {
        t.values_mut().set(p, dense_value(p));
    }
    t
}

fn kernel(expr: &str, decls: &[(&str, &[usize], &str)]) -> Kernel {
    let assignment = sparsec::notation::parse(expr).unwrap();
    let decls: Vec<TensorDecl> = decls
        .iter()
        .map(|(n, dims, f)| {
            let order = if dims.is_empty() {
                assignment.lhs.indices.len()
            } else {
                dims.len()
            };
            let d = TensorDecl::new(*n).with_format(Format::parse(f, order).unwrap());
            if dims.is_empty() {
                d
            } else {
                d.with_dims(dims)
            }
        })
        .collect();
    Kernel::compile(expr, &decls, &[]).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

fn pack(coo: &Coo, f: &str) -> Tensor {
    Tensor::from_coo(coo, &Format::parse(f, coo.order()).unwrap(), ValueType::F64).unwrap()
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2].as_secs_f64()
    } else {
        (v[n / 2 - 1].as_secs_f64() + v[n / 2].as_secs_f64()) / 2.0
    }
}

struct Row {
    op: &'static str,
    dataset: String,
    source: String,
    dims: Vec<usize>,
    nnz: usize,
    compute: f64,
    assemble: f64,
    out_nnz: usize,
    checksum: f64,
}

fn time(k: &Kernel, inputs: &[&Tensor], runs: usize) -> (f64, f64, usize, f64) {
    let (out, _) = k.run_timed(inputs, None).unwrap(); // warm-up
    let mut checksum = 0.0;
    out.for_each_stored(|_, v| checksum += v);
    let out_nnz = out.stored_values();
    drop(out);
    let mut compute = Vec::with_capacity(runs);
    let mut assemble = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (out, t) = k.run_timed(inputs, None).unwrap();
        compute.push(t.compute);
        assemble.push(t.assemble);
        drop(out);
    }
    (median(compute), median(assemble), out_nnz, checksum)
}

/// Uniformly random entries (duplicates possible, summed by packing), values in [-1, 1].
fn uniform(dims: &[usize], nnz: usize, seed: u64) -> Coo {
    let mut r = StdRng::seed_from_u64(seed);
    let mut coords = Vec::with_capacity(nnz * dims.len());
    let mut values = Vec::with_capacity(nnz);
    for _ in 0..nnz {
        for &d in dims {
            coords.push(r.gen_range(0..d as i64));
        }
        values.push(r.gen_range(-1.0..1.0));
    }
    Coo::new(dims.to_vec(), coords, values).unwrap()
}

/// Write a generated tensor as raw arrays; returns the path prefix.
fn write_raw(dir: &Path, name: &str, coo: &Coo) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let prefix = dir.join(name);
    let dims: Vec<String> = coo.dims.iter().map(|d| d.to_string()).collect();
    std::fs::write(prefix.with_extension("dims"), dims.join(" ") + "\n").unwrap();
    let mut bytes = Vec::with_capacity(coo.coords.len() * 8);
    for c in &coo.coords {
        bytes.extend_from_slice(&c.to_le_bytes());
    }
    std::fs::write(prefix.with_extension("coords.i64"), &bytes).unwrap();
    bytes.clear();
    for v in &coo.values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(prefix.with_extension("vals.f64"), &bytes).unwrap();
    format!("raw:{}", prefix.display())
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == ext))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

fn main() {
    // Kernels run many times: keep freed memory rather than fault it in again each run.
    sparsec::memory::retain_freed_memory();
    let args = parse_args();
    let runs = args.runs;
    let mut rows: Vec<Row> = Vec::new();
    let mut report = |row: Row| {
        eprintln!(
            "{:8} {:28} nnz {:>9}  compute {:>10.3} ms  assemble {:>9.3} ms",
            row.op,
            row.dataset,
            row.nnz,
            row.compute * 1e3,
            row.assemble * 1e3
        );
        rows.push(row);
    };

    // Matrices: shared files plus generated ones.
    let mut matrices: Vec<(String, String, Coo)> = files(&args.data.join("matrices"), "mtx")
        .into_iter()
        .map(|p| {
            let m = io::read_matrix_market(&p).unwrap();
            (stem(&p), p.display().to_string(), m.coo)
        })
        .collect();
    if matrices.is_empty() {
        eprintln!("no shared matrices under {}", args.data.display());
    }
    let q = if args.quick { 10 } else { 1 };
    let (spmv_n, spmv_nnz) = (1_000_000 / q, 10_000_000 / q);
    let (spmm_n, spmm_nnz) = (200_000 / q, 2_000_000 / q);
    let (gemm_n, gemm_nnz) = (30_000 / q, 300_000 / q);
    let (t_n, t_nnz) = (1_000 / q.min(4), 2_000_000 / q);
    let gen = |name: &str, dims: &[usize], nnz: usize, seed: u64| {
        let coo = uniform(dims, nnz, seed);
        let source = write_raw(&args.gen_dir, name, &coo);
        (name.to_string(), source, coo)
    };
    let gen_spmv = gen(
        &format!("uniform_{spmv_n}_{spmv_nnz}"),
        &[spmv_n, spmv_n],
        spmv_nnz,
        1,
    );
    let gen_spmm = gen(
        &format!("uniform_{spmm_n}_{spmm_nnz}"),
        &[spmm_n, spmm_n],
        spmm_nnz,
        2,
    );
    let gen_gemm = gen(
        &format!("uniform_{gemm_n}_{gemm_nnz}"),
        &[gemm_n, gemm_n],
        gemm_nnz,
        3,
    );

    // SpMV.
    for (name, source, coo) in matrices.iter().chain([&gen_spmv]) {
        let (m, n) = (coo.dims[0], coo.dims[1]);
        let k = kernel(
            "y(i) = A(i,j) * x(j)",
            &[("y", &[], "d"), ("A", &[m, n], "csr"), ("x", &[n], "d")],
        );
        let a = pack(coo, "csr");
        let x = dense(&[n]);
        let (compute, assemble, out_nnz, checksum) = time(&k, &[&a, &x], runs);
        report(Row {
            op: "spmv",
            dataset: name.clone(),
            source: source.clone(),
            dims: coo.dims.clone(),
            nnz: a.stored_values(),
            compute,
            assemble,
            out_nnz,
            checksum,
        });
    }
    drop(gen_spmv);

    // SpMM with 32 dense columns.
    const COLS: usize = 32;
    for (name, source, coo) in matrices.iter().chain([&gen_spmm]) {
        let (m, n) = (coo.dims[0], coo.dims[1]);
        let k = kernel(
            "C(i,k) = A(i,j) * B(j,k)",
            &[
                ("C", &[], "dd"),
                ("A", &[m, n], "csr"),
                ("B", &[n, COLS], "dd"),
            ],
        );
        let a = pack(coo, "csr");
        let b = dense(&[n, COLS]);
        let (compute, assemble, out_nnz, checksum) = time(&k, &[&a, &b], runs);
        report(Row {
            op: "spmm",
            dataset: name.clone(),
            source: source.clone(),
            dims: coo.dims.clone(),
            nnz: a.stored_values(),
            compute,
            assemble,
            out_nnz,
            checksum,
        });
    }
    drop(gen_spmm);

    // SpGEMM A*A on square matrices.
    matrices.push(gen_gemm);
    for (name, source, coo) in matrices.iter().filter(|(_, _, c)| c.dims[0] == c.dims[1]) {
        let n = coo.dims[0];
        let k = kernel(
            "C(i,j) = A(i,k) * B(k,j)",
            &[
                ("C", &[], "csr"),
                ("A", &[n, n], "csr"),
                ("B", &[n, n], "csr"),
            ],
        );
        let a = pack(coo, "csr");
        let (compute, assemble, out_nnz, checksum) = time(&k, &[&a, &a], runs);
        report(Row {
            op: "spgemm",
            dataset: name.clone(),
            source: source.clone(),
            dims: coo.dims.clone(),
            nnz: a.stored_values(),
            compute,
            assemble,
            out_nnz,
            checksum,
        });
    }
    drop(matrices);

    // Order-3 tensors: MTTKRP (rank 16, CSF) and TTV (dense output).
    let mut tensors: Vec<(String, String, Coo)> = files(&args.data.join("tensors"), "tns")
        .into_iter()
        .filter_map(|p| {
            let t = io::read_tns(&p, None).unwrap();
            (t.order() == 3).then(|| (stem(&p), p.display().to_string(), t))
        })
        .collect();
    tensors.push(gen(
        &format!("uniform3_{t_n}_{t_nnz}"),
        &[t_n, t_n, t_n],
        t_nnz,
        4,
    ));
    const RANK: usize = 16;
    for (name, source, coo) in &tensors {
        let d = &coo.dims;
        let t = pack(coo, "csf");
        let k = kernel(
            "A(i,r) = T(i,j,k) * B(j,r) * C(k,r)",
            &[
                ("A", &[], "dd"),
                ("T", d, "sss"),
                ("B", &[d[1], RANK], "dd"),
                ("C", &[d[2], RANK], "dd"),
            ],
        );
        let b = dense(&[d[1], RANK]);
        let c = dense(&[d[2], RANK]);
        let (compute, assemble, out_nnz, checksum) = time(&k, &[&t, &b, &c], runs);
        report(Row {
            op: "mttkrp",
            dataset: name.clone(),
            source: source.clone(),
            dims: d.clone(),
            nnz: t.stored_values(),
            compute,
            assemble,
            out_nnz,
            checksum,
        });
        let k = kernel(
            "Y(i,j) = T(i,j,k) * v(k)",
            &[("Y", &[], "dd"), ("T", d, "sss"), ("v", &[d[2]], "d")],
        );
        let v = dense(&[d[2]]);
        let (compute, assemble, out_nnz, checksum) = time(&k, &[&t, &v], runs);
        report(Row {
            op: "ttv",
            dataset: name.clone(),
            source: source.clone(),
            dims: d.clone(),
            nnz: t.stored_values(),
            compute,
            assemble,
            out_nnz,
            checksum,
        });
    }

    if let Some(dir) = args.out.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(&args.out).unwrap());
    writeln!(
        f,
        "op,dataset,source,dims,nnz,runs,compute_median_s,assemble_median_s,out_nnz,checksum"
    )
    .unwrap();
    for r in &rows {
        let dims: Vec<String> = r.dims.iter().map(|d| d.to_string()).collect();
        writeln!(
            f,
            "{},{},{},{},{},{},{:.9},{:.9},{},{:.17e}",
            r.op,
            r.dataset,
            r.source,
            dims.join("x"),
            r.nnz,
            runs,
            r.compute,
            r.assemble,
            r.out_nnz,
            r.checksum
        )
        .unwrap();
    }
    eprintln!("wrote {}", args.out.display());
}
