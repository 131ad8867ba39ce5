//! Differential tests of generated kernels on the shared real matrices and tensors
//! (`/work/shared/data`, see its SOURCES.md): SpMV and `y = b - A x` on every matrix (CSR,
//! and CSC / COO / DCSR on a few), SpMM with four dense columns and SpGEMM (`A A^T`, and
//! `A A` for square matrices) on the smaller ones, the trace and diagonal scaling
//! (`A(i,i)`) on every square matrix, and TTV / MTTKRP on every tensor.
//!
//! Every result is compared with a simple independent Rust loop over the file's
//! coordinates (duplicates summed, explicit zeros kept); where the dense iteration space
//! is small (below 5e7 points) it is also compared with the reference evaluator. The
//! tests fail, naming the missing path, when the data directory is absent.

mod common;
use common::shared_data;

use std::collections::HashMap;
use std::path::PathBuf;

use sparsec::format::Format;
use sparsec::io;
use sparsec::kernel::Kernel;
use sparsec::notation::TensorDecl;
use sparsec::reference;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// The `.ext` files of `shared/data/sub`, sorted; panics when there are none (an empty
/// list would make every test below pass without checking anything).
fn files(sub: &str, ext: &str) -> Vec<PathBuf> {
    let dir = shared_data(sub);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no .{ext} files in {}", dir.display());
    out
}

fn name(p: &std::path::Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Matrices with their entries (symmetry expanded), sorted by name.
fn matrices() -> Vec<(String, Coo)> {
    files("matrices", "mtx")
        .iter()
        .map(|p| {
            let m = io::read_matrix_market(p).unwrap_or_else(|e| panic!("{e}"));
            (name(p), m.coo)
        })
        .collect()
}

fn tensors() -> Vec<(String, Coo)> {
    files("tensors", "tns")
        .iter()
        .map(|p| {
            (
                name(p),
                io::read_tns(p, None).unwrap_or_else(|e| panic!("{e}")),
            )
        })
        .collect()
}

/// A deterministic value in [-1, 1] for position `p` of stream `s`.
fn val(s: u64, p: usize) -> f64 {
    let mut x =
        (p as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ s.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    (x % 2001) as f64 / 1000.0 - 1.0
}

/// A dense tensor filled with `val(seed, p)` in row-major order.
fn dense(dims: &[usize], seed: u64) -> Tensor {
    let mut t = Tensor::zeros(dims, ValueType::F64);
    let n: usize = dims.iter().product();
    for p in 0..n {
        t.values_mut().set(p, val(seed, p));
    }
    t
}

fn dense_get(t: &Tensor, p: usize) -> f64 {
    t.values().get(p)
}

/// Compile `expr`; `decls` are `(name, dims, format)` with empty dims for the output.
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

/// Expected values with, per entry, the sum of the absolute values of its terms (the
/// scale of its rounding error).
type Expected = HashMap<Vec<i64>, (f64, f64)>;

fn add(e: &mut Expected, key: Vec<i64>, term: f64) {
    let x = e.entry(key).or_insert((0.0, 0.0));
    x.0 += term;
    x.1 += term.abs();
}

/// Compare a kernel output (any format) with expected entries; absent entries are zero.
fn compare(what: &str, got: &Tensor, expected: &Expected) {
    let mut seen: HashMap<Vec<i64>, f64> = HashMap::new();
    got.for_each_stored(|c, v| *seen.entry(c.to_vec()).or_insert(0.0) += v);
    let mut worst = (0.0f64, Vec::new());
    for (k, &(e, scale)) in expected {
        let g = seen.get(k).copied().unwrap_or(0.0);
        let err = (g - e).abs() / (1.0 + scale);
        if err > worst.0 || err.is_nan() {
            worst = (err, k.clone());
        }
    }
    for (k, &g) in &seen {
        if !expected.contains_key(k) && (g.abs() > worst.0 || g.is_nan()) {
            worst = (g.abs(), k.clone());
        }
    }
    assert!(
        worst.0 <= 1e-9,
        "{what}: relative error {} at {:?} (got {:?}, expected {:?})",
        worst.0,
        worst.1,
        seen.get(&worst.1),
        expected.get(&worst.1)
    );
}

fn check_reference(what: &str, k: &Kernel, inputs: &[&Tensor], got: &Tensor) {
    let expected = reference::evaluate(k.statement(), inputs, None);
    let diff = got.max_difference(&expected).expect("same shape");
    let scale = expected
        .to_coo()
        .values
        .iter()
        .fold(1.0f64, |m, v| m.max(v.abs()));
    assert!(
        diff <= 1e-9 * scale,
        "{what}: differs from the reference by {diff}"
    );
}

fn points(dims: &[usize]) -> f64 {
    dims.iter().map(|&d| d as f64).product()
}

#[test]
fn spmv_and_residual_every_matrix() {
    for (name, a) in matrices() {
        let (m, n) = (a.dims[0], a.dims[1]);
        let x = dense(&[n], 1);
        let b = dense(&[m], 2);
        let mut y_exp = Expected::new();
        let mut r_exp = Expected::new();
        for i in 0..m {
            add(&mut r_exp, vec![i as i64], dense_get(&b, i));
        }
        for e in 0..a.len() {
            let c = a.coord(e);
            let t = a.values[e] * dense_get(&x, c[1] as usize);
            add(&mut y_exp, vec![c[0]], t);
            add(&mut r_exp, vec![c[0]], -t);
        }
        let formats: &[&str] =
            if ["zenios", "bayer10", "karate", "cage10", "west0479"].contains(&name.as_str()) {
                &["csr", "csc", "coo", "dcsr"]
            } else {
                &["csr"]
            };
        for f in formats {
            let at = pack(&a, f);
            let k = kernel(
                "y(i) = A(i,j) * x(j)",
                &[("y", &[], "d"), ("A", &[m, n], f), ("x", &[n], "d")],
            );
            let y = k.run(&[&at, &x]).unwrap();
            compare(&format!("{name} spmv {f}"), &y, &y_exp);
            let k = kernel(
                "y(i) = b(i) - A(i,j) * x(j)",
                &[
                    ("y", &[], "d"),
                    ("b", &[m], "d"),
                    ("A", &[m, n], f),
                    ("x", &[n], "d"),
                ],
            );
            let r = k.run(&[&b, &at, &x]).unwrap();
            compare(&format!("{name} residual {f}"), &r, &r_exp);
            if points(&[m, n]) < 5e7 {
                check_reference(&format!("{name} residual {f}"), &k, &[&b, &at, &x], &r);
            }
        }
    }
}

#[test]
fn spmm_four_columns_small_matrices() {
    for (name, a) in matrices().into_iter().filter(|(_, a)| a.len() < 50_000) {
        let (m, n) = (a.dims[0], a.dims[1]);
        let bd = dense(&[n, 4], 3);
        let at = pack(&a, "csr");
        let k = kernel(
            "C(i,k) = A(i,j) * B(j,k)",
            &[
                ("C", &[], "dd"),
                ("A", &[m, n], "csr"),
                ("B", &[n, 4], "dd"),
            ],
        );
        let c = k.run(&[&at, &bd]).unwrap();
        let mut exp = Expected::new();
        for e in 0..a.len() {
            let co = a.coord(e);
            for r in 0..4 {
                let t = a.values[e] * dense_get(&bd, co[1] as usize * 4 + r);
                add(&mut exp, vec![co[0], r as i64], t);
            }
        }
        compare(&format!("{name} spmm"), &c, &exp);
        if points(&[m, n, 4]) < 5e7 {
            check_reference(&format!("{name} spmm"), &k, &[&at, &bd], &c);
        }
    }
}

/// Independent SpGEMM `C(i,j) = sum_k A(i,k) * B(k,j)` over coordinate lists.
fn spgemm_expected(a: &Coo, b: &Coo) -> Expected {
    let mut rows_b: HashMap<i64, Vec<(i64, f64)>> = HashMap::new();
    for e in 0..b.len() {
        let c = b.coord(e);
        rows_b.entry(c[0]).or_default().push((c[1], b.values[e]));
    }
    let mut exp = Expected::new();
    for e in 0..a.len() {
        let c = a.coord(e);
        if let Some(row) = rows_b.get(&c[1]) {
            for &(j, v) in row {
                add(&mut exp, vec![c[0], j], a.values[e] * v);
            }
        }
    }
    exp
}

fn transpose(a: &Coo) -> Coo {
    let mut coords = Vec::with_capacity(a.coords.len());
    for e in 0..a.len() {
        let c = a.coord(e);
        coords.extend([c[1], c[0]]);
    }
    Coo::new(vec![a.dims[1], a.dims[0]], coords, a.values.clone()).unwrap()
}

#[test]
fn spgemm_small_matrices() {
    for (name, a) in matrices().into_iter().filter(|(_, a)| a.len() < 50_000) {
        let (m, n) = (a.dims[0], a.dims[1]);
        // Keep the run short: the A A^T kernel visits every (i, j) pair (an inner-product
        // formulation), and the independent check hashes every product.
        let mut col_count = vec![0f64; n];
        for e in 0..a.len() {
            col_count[a.coord(e)[1] as usize] += 1.0;
        }
        let products: f64 = col_count.iter().map(|c| c * c).sum();
        if products > 1.5e6 || points(&[m, m]) > 5e7 {
            eprintln!("{name}: skipping SpGEMM ({products} products, {m} x {m} output)");
            continue;
        }
        let at = pack(&a, "csr");
        // A A^T with both operands read from the same CSR matrix.
        let k = kernel(
            "C(i,j) = A(i,k) * A(j,k)",
            &[("C", &[], "csr"), ("A", &[m, n], "csr")],
        );
        let c = k.run(&[&at]).unwrap();
        compare(
            &format!("{name} A*A^T"),
            &c,
            &spgemm_expected(&a, &transpose(&a)),
        );
        if points(&[m, m, n]) < 5e7 {
            check_reference(&format!("{name} A*A^T"), &k, &[&at], &c);
        }
        if m == n {
            let k = kernel(
                "C(i,j) = A(i,k) * B(k,j)",
                &[
                    ("C", &[], "csr"),
                    ("A", &[m, n], "csr"),
                    ("B", &[n, n], "csr"),
                ],
            );
            let c = k.run(&[&at, &at]).unwrap();
            compare(&format!("{name} A*A"), &c, &spgemm_expected(&a, &a));
            if points(&[m, m, n]) < 5e7 {
                check_reference(&format!("{name} A*A"), &k, &[&at, &at], &c);
            }
        }
    }
}

const VARS: [&str; 5] = ["i", "j", "k", "l", "m"];

#[test]
fn ttv_every_tensor() {
    for (name, t) in tensors() {
        let order = t.order();
        let last = t.dims[order - 1];
        let v = dense(&[last], 4);
        let vars = &VARS[..order];
        let out = vars[..order - 1].join(",");
        let expr = format!("Y({out}) = T({}) * v({})", vars.join(","), vars[order - 1]);
        let tf = "s".repeat(order);
        let yf = "s".repeat(order - 1);
        let k = kernel(
            &expr,
            &[("Y", &[], &yf), ("T", &t.dims, &tf), ("v", &[last], "d")],
        );
        let tt = pack(&t, &tf);
        let y = k.run(&[&tt, &v]).unwrap();
        let mut exp = Expected::new();
        for e in 0..t.len() {
            let c = t.coord(e);
            add(
                &mut exp,
                c[..order - 1].to_vec(),
                t.values[e] * dense_get(&v, c[order - 1] as usize),
            );
        }
        compare(&format!("{name} ttv"), &y, &exp);
    }
}

#[test]
fn mttkrp_every_tensor() {
    const RANK: usize = 8;
    for (name, t) in tensors() {
        let order = t.order();
        let vars = &VARS[..order];
        let factors: Vec<Tensor> = (1..order)
            .map(|m| dense(&[t.dims[m], RANK], 10 + m as u64))
            .collect();
        let names = ["B", "C", "D", "E"];
        let rhs: Vec<String> = (1..order)
            .map(|m| format!("{}({},r)", names[m - 1], vars[m]))
            .collect();
        let expr = format!(
            "A({},r) = T({}) * {}",
            vars[0],
            vars.join(","),
            rhs.join(" * ")
        );
        let tf = "s".repeat(order);
        let mut decls: Vec<(&str, Vec<usize>, String)> = vec![
            ("A", vec![], "dd".into()),
            ("T", t.dims.clone(), tf.clone()),
        ];
        for m in 1..order {
            decls.push((names[m - 1], vec![t.dims[m], RANK], "dd".into()));
        }
        let decls: Vec<(&str, &[usize], &str)> = decls
            .iter()
            .map(|(n, d, f)| (*n, d.as_slice(), f.as_str()))
            .collect();
        let k = kernel(&expr, &decls);
        let tt = pack(&t, &tf);
        let mut inputs = vec![&tt];
        inputs.extend(factors.iter());
        let a = k.run(&inputs).unwrap();
        let mut exp = Expected::new();
        for e in 0..t.len() {
            let c = t.coord(e);
            for r in 0..RANK {
                let mut term = t.values[e];
                for m in 1..order {
                    term *= dense_get(&factors[m - 1], c[m] as usize * RANK + r);
                }
                add(&mut exp, vec![c[0], r as i64], term);
            }
        }
        compare(&format!("{name} mttkrp"), &a, &exp);
    }
}

/// Diagonal accesses on every square matrix: the trace and the diagonal times a vector,
/// in formats whose second level is located, binary searched or searched for a run of
/// duplicates, against a loop over the file's coordinates.
#[test]
fn diagonal_every_square_matrix() {
    for (name, a) in matrices() {
        let (m, n) = (a.dims[0], a.dims[1]);
        if m != n {
            continue;
        }
        let x = dense(&[n], 3);
        let mut trace = Expected::new();
        let mut scaled = Expected::new();
        for e in 0..a.len() {
            let c = a.coord(e);
            if c[0] == c[1] {
                add(&mut trace, vec![], a.values[e]);
                add(
                    &mut scaled,
                    vec![c[0]],
                    a.values[e] * dense_get(&x, c[0] as usize),
                );
            }
        }
        for f in ["csr", "csc", "coo", "hash"] {
            let at = pack(&a, f);
            let k = kernel("t = A(i,i)", &[("t", &[], ""), ("A", &[m, n], f)]);
            let t = k.run(&[&at]).unwrap();
            compare(&format!("{name} trace {f}"), &t, &trace);
            let k = kernel(
                "y(i) = A(i,i) * x(i)",
                &[("y", &[], "d"), ("A", &[m, n], f), ("x", &[n], "d")],
            );
            let y = k.run(&[&at, &x]).unwrap();
            compare(&format!("{name} diagonal scaling {f}"), &y, &scaled);
        }
    }
}
