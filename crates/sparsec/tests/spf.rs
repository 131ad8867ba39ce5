//! The sparse polyhedral front end: the example programs (`examples/spf`) run on random
//! and real matrices against plain Rust references (forward and backward substitution,
//! one Gauss-Seidel sweep, SpMV over the summed entries), and program errors point at
//! their span. Real matrices come from the shared data and the tests fail when it is
//! missing.

mod common;
use common::{
    assert_close, assert_close_to_terms, compile_spf, compile_spf_on, compile_spf_with, random_coo,
    rng, shared_data, spf_error, split_toolchain, spmv, spmv_magnitudes,
};

use std::collections::BTreeMap;

use sparsec::format::Format;
use sparsec::io;
use sparsec::kernel::Backend;
use sparsec::spf::{self, SpfKernel};
use sparsec::tensor::{Coo, IndexWidth, Tensor, ValueType};

const SPMV: &str = include_str!("../../../examples/spf/spmv.spf");
const LOWER: &str = include_str!("../../../examples/spf/lower_solve.spf");
const LOWER_WAVEFRONT: &str = include_str!("../../../examples/spf/lower_solve_wavefront.spf");
const UPPER: &str = include_str!("../../../examples/spf/upper_solve.spf");
const UPPER_WAVEFRONT: &str = include_str!("../../../examples/spf/upper_solve_wavefront.spf");
const GAUSS_SEIDEL: &str = include_str!("../../../examples/spf/gauss_seidel.spf");

/// Rows of a square matrix's summed entries: `rows[i]` maps column to value.
fn rows(coo: &Coo) -> Vec<BTreeMap<usize, f64>> {
    let mut rows = vec![BTreeMap::new(); coo.dims[0]];
    for (e, v) in coo.values.iter().enumerate() {
        let (i, j) = (coo.coords[2 * e] as usize, coo.coords[2 * e + 1] as usize);
        *rows[i].entry(j).or_insert(0.0) += v;
    }
    rows
}

/// The strictly lower (or upper) triangle of a square matrix's entries, unsorted and with
/// its duplicates, plus a diagonal that dominates each row (so that the solves are well
/// conditioned), stored as one explicit entry per row.
fn triangle(coo: &Coo, lower: bool) -> Coo {
    let n = coo.dims[0];
    let mut coords = Vec::new();
    let mut values = Vec::new();
    let mut diag = vec![1.0; n];
    for (e, v) in coo.values.iter().enumerate() {
        let (i, j) = (coo.coords[2 * e], coo.coords[2 * e + 1]);
        if (lower && j < i) || (!lower && j > i) {
            coords.extend([i, j]);
            values.push(*v);
            diag[i as usize] += v.abs();
        }
    }
    for (i, d) in diag.iter().enumerate() {
        coords.extend([i as i64, i as i64]);
        values.push(*d);
    }
    Coo::new(vec![n, n], coords, values).unwrap()
}

fn vector(values: Vec<f64>) -> Tensor {
    let n = values.len();
    let coords = (0..n as i64).collect();
    Tensor::from_coo(
        &Coo::new(vec![n], coords, values).unwrap(),
        &Format::dense(1),
        ValueType::F64,
    )
    .unwrap()
}

fn matrix(coo: &Coo) -> Tensor {
    Tensor::from_coo(coo, &Format::parse("coo", 2).unwrap(), ValueType::F64).unwrap()
}

fn dense_values(t: &Tensor) -> Vec<f64> {
    (0..t.values().len()).map(|p| t.values().get(p)).collect()
}

fn rhs(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + (i % 7) as f64 * 0.5).collect()
}

/// Forward (lower) or backward (upper) substitution over the summed entries.
fn substitute(coo: &Coo, b: &[f64], lower: bool) -> Vec<f64> {
    let rows = rows(coo);
    let n = b.len();
    let mut x = vec![0.0; n];
    let order: Vec<usize> = if lower {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    };
    for i in order {
        let mut s = b[i];
        for (&j, v) in &rows[i] {
            if (lower && j < i) || (!lower && j > i) {
                s -= v * x[j];
            }
        }
        // A row that stores no diagonal is not divided, as the programs say.
        x[i] = rows[i].get(&i).map_or(s, |d| s / d);
    }
    x
}

fn gauss_seidel(coo: &Coo, b: &[f64], x0: &[f64]) -> Vec<f64> {
    let rows = rows(coo);
    let mut x = x0.to_vec();
    for i in 0..b.len() {
        let mut s = b[i];
        for (&j, v) in &rows[i] {
            if j != i {
                s -= v * x[j];
            }
        }
        x[i] = s / rows[i][&i];
    }
    x
}

/// Every solver on one square matrix's triangles, serial and level-set on 1 and 2 threads.
fn check_solvers(what: &str, coo: &Coo, kernels: &mut Kernels) {
    let n = coo.dims[0];
    let b = rhs(n);
    let bt = vector(b.clone());
    let lower = triangle(coo, true);
    let want = substitute(&lower, &b, true);
    let l = matrix(&lower);
    let x = kernels.lower.run(&[("L", &l), ("b", &bt)]).unwrap();
    assert_close(&format!("{what}: lower solve"), &dense_values(&x), &want);
    // In the declared layout (CSR) the input is read in place, at either index width.
    let csr = l.convert(&Format::parse("csr", 2).unwrap()).unwrap();
    for width in [IndexWidth::I32, IndexWidth::I64] {
        let l = csr.clone().with_index_width(width).unwrap();
        let x = kernels.lower.run(&[("L", &l), ("b", &bt)]).unwrap();
        assert_close(
            &format!("{what}: lower solve, CSR read in place with {width:?} indices"),
            &dense_values(&x),
            &want,
        );
    }
    for threads in [1, 2] {
        kernels.wavefront.set_threads(threads);
        let x = kernels.wavefront.run(&[("L", &l), ("b", &bt)]).unwrap();
        assert_close(
            &format!("{what}: level-set lower solve, {threads} threads"),
            &dense_values(&x),
            &want,
        );
    }
    let upper = triangle(coo, false);
    let u = matrix(&upper);
    let want = substitute(&upper, &b, false);
    let x = kernels.upper.run(&[("U", &u), ("b", &bt)]).unwrap();
    assert_close(&format!("{what}: upper solve"), &dense_values(&x), &want);
    // Rows run backwards (execution row -i): the level sets follow that order.
    kernels.upper_wavefront.set_threads(2);
    let x = kernels
        .upper_wavefront
        .run(&[("U", &u), ("b", &bt)])
        .unwrap();
    assert_close(
        &format!("{what}: level-set upper solve"),
        &dense_values(&x),
        &want,
    );
    // Gauss-Seidel on the whole matrix with a dominant diagonal.
    let mut full = triangle(coo, true);
    let up = triangle(coo, false);
    full.coords.extend_from_slice(&up.coords);
    full.values.extend_from_slice(&up.values);
    let x0: Vec<f64> = (0..n).map(|i| (i % 3) as f64 - 1.0).collect();
    let a = matrix(&full);
    let x = kernels
        .gauss_seidel
        .run(&[("A", &a), ("b", &bt), ("x0", &vector(x0.clone()))])
        .unwrap();
    assert_close(
        &format!("{what}: Gauss-Seidel sweep"),
        &dense_values(&x),
        &gauss_seidel(&full, &b, &x0),
    );
}

struct Kernels {
    lower: SpfKernel,
    wavefront: SpfKernel,
    upper: SpfKernel,
    upper_wavefront: SpfKernel,
    gauss_seidel: SpfKernel,
    spmv: SpfKernel,
}

fn kernels() -> Kernels {
    kernels_with(Backend::C)
}

fn kernels_with(backend: Backend) -> Kernels {
    let compile = |name, text| compile_spf_with(name, text, backend);
    // The level sets' team forms for any work, not only after runs alone have shown it
    // pays, so that small inputs run on both threads.
    let split = |name, text| compile_spf_on(name, text, backend, &split_toolchain());
    Kernels {
        lower: compile("lower_solve.spf", LOWER),
        wavefront: split("lower_solve_wavefront.spf", LOWER_WAVEFRONT),
        upper: compile("upper_solve.spf", UPPER),
        upper_wavefront: split("upper_solve_wavefront.spf", UPPER_WAVEFRONT),
        gauss_seidel: compile("gauss_seidel.spf", GAUSS_SEIDEL),
        spmv: compile("spmv.spf", SPMV),
    }
}

fn check_spmv(what: &str, coo: &Coo, kernels: &mut Kernels) {
    let x: Vec<f64> = (0..coo.dims[1]).map(|j| 0.5 + (j % 5) as f64).collect();
    let a = matrix(coo);
    for threads in [1, 2] {
        kernels.spmv.set_threads(threads);
        let y = kernels
            .spmv
            .run(&[("A", &a), ("x", &vector(x.clone()))])
            .unwrap();
        assert_close_to_terms(
            &format!("{what}: SpMV"),
            &dense_values(&y),
            &spmv(coo, &x),
            &spmv_magnitudes(coo, &x),
        );
    }
}

#[test]
fn kernels_match_references_on_random_matrices() {
    check_random_matrices(Backend::C);
}

/// The same programs compiled in process by Cranelift, whose code runs the level sets'
/// parallel loops in turn.
#[test]
fn jit_kernels_match_references_on_random_matrices() {
    check_random_matrices(Backend::Jit);
    let kernels = kernels_with(Backend::Jit);
    assert_eq!(kernels.lower.running_target(), "JIT");
}

fn check_random_matrices(backend: Backend) {
    let mut kernels = kernels_with(backend);
    let mut rng = rng(7);
    // Empty, 1x1, then random sizes and densities (duplicates, explicit zeros, unsorted).
    for (n, density) in [
        (0, 0.5),
        (1, 1.0),
        (1, 0.0),
        (5, 0.6),
        (40, 0.1),
        (300, 0.02),
    ] {
        let coo = random_coo(&mut rng, &[n, n], density);
        check_solvers(&format!("random {n}x{n}"), &coo, &mut kernels);
        check_spmv(&format!("random {n}x{n}"), &coo, &mut kernels);
    }
    for (n, m) in [(3, 8), (9, 2), (0, 4)] {
        let coo = random_coo(&mut rng, &[n, m], 0.4);
        check_spmv(&format!("random {n}x{m}"), &coo, &mut kernels);
    }
    // Two levels of 1500 rows each (row i + 1500 reads row i): levels wide enough to run
    // on the team, beside the narrow ones above, which run serially.
    let wide = kernels.wavefront.source();
    assert!(wide.contains(">= 1024"), "{wide}");
    // One team for the sweep: wide levels shared by `omp for`, narrow runs `omp single`.
    for part in ["sparsec_team(", "#pragma omp for", "#pragma omp single"] {
        assert!(wide.contains(part), "{part}: {wide}");
    }
    let n = 3000;
    let mut coords = Vec::new();
    for i in 1500..n as i64 {
        coords.extend([i, i - 1500]);
    }
    let coo = Coo::new(vec![n, n], coords, vec![0.5; n - 1500]).unwrap();
    check_solvers("two wide levels", &coo, &mut kernels);
    // A wide level, a chain of 50 narrow ones (one stretch on one thread), a wide one
    // again, then a chain to the end: rows 0..1500 read nothing; row 1500 + k reads the
    // row before it (row 1500 reads row 0); rows 1550..3050 read row 1549; the last 20
    // rows each read the one before.
    let n = 3070i64;
    let mut coords = Vec::new();
    for i in 1500..1550 {
        coords.extend([i, if i == 1500 { 0 } else { i - 1 }]);
    }
    for i in 1550..3050 {
        coords.extend([i, 1549]);
    }
    for i in 3050..n {
        coords.extend([i, i - 1]);
    }
    let entries = coords.len() / 2;
    let coo = Coo::new(vec![n as usize; 2], coords, vec![0.25; entries]).unwrap();
    check_solvers("wide and narrow levels", &coo, &mut kernels);
}

#[test]
fn kernels_match_references_on_real_matrices() {
    let mut kernels = kernels();
    let dir = shared_data("matrices");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no matrices in {}", dir.display());
    let mut square = 0;
    for path in paths {
        let coo = io::read_matrix_market(&path).unwrap().coo;
        if coo.values.len() > 400_000 {
            continue;
        }
        let what = path.file_name().unwrap().to_string_lossy().into_owned();
        check_spmv(&what, &coo, &mut kernels);
        if coo.dims[0] == coo.dims[1] {
            check_solvers(&what, &coo, &mut kernels);
            square += 1;
        }
    }
    assert!(square >= 5, "only {square} square matrices were checked");
}

#[test]
fn program_errors_point_at_their_span() {
    let base = "input A[N, N] : csr;\noutput y[N];\nuf rowptr = A.pos(2);\ndata Av = A.vals;\n";
    let stmt = |domain: &str, body: &str| {
        format!("{base}stmt S domain {domain} schedule {{[i, k] -> [i, k]}} body {body};\n")
    };
    let (msg, at) = spf_error(&stmt(
        "{[i, k] : 0 <= i < N && rowptr(i) <= k < colptr(i)}",
        "y(i) += Av(k)",
    ));
    assert!(msg.contains("not a bound uninterpreted function"), "{msg}");
    assert_eq!(at, "colptr");
    let (msg, at) = spf_error(&stmt(
        "{[i, k] : 0 <= i < N && i * k <= 3}",
        "y(i) += Av(k)",
    ));
    assert!(msg.contains("non-affine"), "{msg}");
    assert_eq!(at, "i * k");
    let (msg, at) = spf_error(&stmt(
        "{[i, k] : 0 <= i < M && 0 <= k < N}",
        "y(i) += Av(k)",
    ));
    assert!(msg.contains("`M` is neither"), "{msg}");
    assert_eq!(at, "M");
    let (msg, at) = spf_error(&stmt("{[i, k] : 0 <= i < N && 0 <= k}", "y(i) += Av(k)"));
    assert!(msg.contains("cannot bound an index"), "{msg}");
    assert_eq!(at, "Av(k)");
    // A loop whose variable no access reads still needs both bounds.
    let (msg, _) = spf_error(&stmt("{[i, k] : 0 <= i < N && k <= 3}", "y(i) += 1"));
    assert!(msg.contains("has no lower bound"), "{msg}");
    let (msg, _) = spf_error(&stmt("{[i, k] : 0 <= i < N && 0 <= k}", "y(i) += 1"));
    assert!(msg.contains("has no upper bound"), "{msg}");
    let (msg, at) = spf_error(&stmt(
        "{[i, k] : 0 <= i < N && 0 <= k < N}",
        "z(i) += Av(k)",
    ));
    assert!(msg.contains("not a data space"), "{msg}");
    assert_eq!(at, "z(i)");
    let (msg, at) = spf_error(&stmt("{[i, k] : 0 <= i < N && 0 <= k < N}", "Av(k) = 1"));
    assert!(msg.contains("is an input"), "{msg}");
    assert_eq!(at, "Av(k)");
    let (msg, at) = spf_error(&format!("{base}stmt S domain {{[i] : 0 <= i < N}} $"));
    assert!(msg.contains("unexpected character"), "{msg}");
    assert_eq!(at, "$");
    let (msg, at) = spf_error("input A[N] : csr;");
    assert!(msg.contains("csr"), "{msg}");
    assert_eq!(at, "input A[N] : csr;");
    let (msg, at) = spf_error(&format!("{base}uf col = A.crd(1);\n"));
    assert!(msg.contains("has no `crd` array"), "{msg}");
    assert_eq!(at, "uf col = A.crd(1);");
}

#[test]
fn illegal_parallel_outer_loops_are_refused_with_the_dependence() {
    // Forward substitution reads earlier rows of x: not parallel, but a wavefront.
    let parallel = LOWER.replace("data Lv = L.vals;", "data Lv = L.vals;\nparallel;");
    let (msg, at) = spf_error(&parallel);
    assert!(msg.contains("flow dependence"), "{msg}");
    assert_eq!(at, "x(j)");
    // Gauss-Seidel reads later rows of x0 only, but earlier rows of x: with `j > i` reads
    // of x the wavefront is refused (an anti-dependence).
    let anti = GAUSS_SEIDEL
        .replace("Av(k) * x0(j)", "Av(k) * x(j)")
        .replace("data Av = A.vals;", "data Av = A.vals;\nwavefront;");
    let (msg, at) = spf_error(&anti);
    assert!(msg.contains("do not order earlier"), "{msg}");
    assert_eq!(at, "x(j)");
}

#[test]
fn inputs_that_do_not_fit_are_errors() {
    let mut k = compile_spf("spmv.spf", SPMV);
    k.set_threads(1);
    let a = matrix(&Coo::new(vec![2, 3], vec![0, 2, 1, 0], vec![1.0, 2.0]).unwrap());
    let e = k
        .run(&[("A", &a), ("x", &vector(vec![1.0; 2]))])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("dimension 1 of `x` is 2 but `M` is 3"),
        "{e}"
    );
    let e = k.run(&[("A", &a)]).unwrap_err();
    assert!(e.to_string().contains("input `x` is missing"), "{e}");
}

#[test]
fn sets_and_maps_parse_print_and_invert() {
    let set =
        spf::parse_set("{[i,k,j] : 0 <= i < N && rowptr(i) <= k < rowptr(i+1) && j = col(k)}")
            .unwrap();
    assert_eq!(
        set.to_string(),
        "{[i, k, j] : i >= 0 && -i + N - 1 >= 0 && k - rowptr(i) >= 0 && \
         -k + rowptr(i + 1) - 1 >= 0 && j - col(k) = 0}"
    );
    let again = spf::parse_set(&set.to_string()).unwrap();
    assert_eq!(again, set);
    let both = set
        .intersect(&spf::parse_set("{[a,b,c] : a >= 0 && c < 4}").unwrap())
        .unwrap();
    assert_eq!(both.constraints.len(), set.constraints.len() + 1);
    assert!(spf::parse_set("{[i] : 0 <= i && 1 <= 0}")
        .unwrap()
        .simplify()
        .is_obviously_empty());
    let map = spf::parse_map("{[i,j] -> [j, 0, -i + 2]}").unwrap();
    let inverse = map.inverse().unwrap();
    assert_eq!(
        inverse.to_string(),
        "{[o0, o1, o2] -> [-o2 + 2, o0] : o1 = 0}"
    );
    assert!(spf::parse_map("{[i,j] -> [i + j, 0]}")
        .unwrap()
        .inverse()
        .is_none());
}

#[test]
fn constraints_on_symbols_only_guard_the_statement() {
    let k = compile_spf(
        "guard.spf",
        "input b[N] : dense;\noutput y[N];\n\
         stmt S domain {[i] : 0 <= i < N && N >= 4} schedule {[i] -> [i]} body y(i) = b(i) + 1;\n",
    );
    let y = k.run(&[("b", &vector(vec![1.0; 3]))]).unwrap();
    assert_eq!(dense_values(&y), vec![0.0; 3]);
    let y = k.run(&[("b", &vector(vec![1.0; 4]))]).unwrap();
    assert_eq!(dense_values(&y), vec![2.0; 4]);
}

#[test]
fn huge_constants_are_errors() {
    let base = "input b[N] : dense;\noutput y[N];\n";
    let (msg, at) = spf_error(&format!(
        "{base}stmt S domain {{[i] : 0 <= i < 99999999999}} schedule {{[i] -> [i]}} body y(i) = 1;"
    ));
    assert!(msg.contains("beyond"), "{msg}");
    assert_eq!(at, "99999999999");
    let (msg, at) = spf_error(&format!(
        "{base}stmt S domain {{[i] : 0 <= 65536 * 65536 * i < N}} schedule {{[i] -> [i]}} \
         body y(i) = 1;"
    ));
    assert!(msg.contains("beyond"), "{msg}");
    assert_eq!(at, "65536 * 65536");
}

/// The solves read only their triangle of a whole matrix, and each row's diagonal wherever
/// the row stores it (first, last or between, or not at all: the row is then not divided).
/// Their loops keep the row's unknown in a register and find the triangle's part of each
/// row by searching its ordered coordinates, instead of testing each: the rows here put
/// the split anywhere, and hold one entry, none, or many on either side.
#[test]
fn solves_read_their_triangle_of_a_whole_matrix_wherever_the_diagonal_is() {
    let mut rng = rng(11);
    for backend in [Backend::C, Backend::Jit] {
        let mut kernels = kernels_with(backend);
        if backend == Backend::C {
            let source = kernels.lower.source();
            assert!(
                source.contains("galloping") && source.contains("double element"),
                "{source}"
            );
        }
        for (n, density) in [(1, 1.0), (2, 1.0), (7, 0.5), (60, 0.15), (250, 0.03)] {
            let mut coo = random_coo(&mut rng, &[n, n], density);
            let mut weight = vec![1.0; n];
            for (e, v) in coo.values.iter().enumerate() {
                weight[coo.coords[2 * e] as usize] += v.abs();
            }
            // Every third row stores no diagonal; the others a dominant one.
            for (i, w) in weight.iter().enumerate().filter(|(i, _)| i % 3 != 1) {
                coo.coords.extend([i as i64, i as i64]);
                coo.values.push(*w);
            }
            let summed = matrix(&coo).to_coo();
            let diagonal_free: Coo = {
                let keep: Vec<usize> = (0..summed.len())
                    .filter(|&e| {
                        summed.coords[2 * e] != summed.coords[2 * e + 1]
                            || summed.coords[2 * e] % 3 != 1
                    })
                    .collect();
                Coo::new(
                    vec![n, n],
                    keep.iter()
                        .flat_map(|&e| [summed.coords[2 * e], summed.coords[2 * e + 1]])
                        .collect(),
                    keep.iter().map(|&e| summed.values[e]).collect(),
                )
                .unwrap()
            };
            let b = rhs(n);
            let bt = vector(b.clone());
            let csr = matrix(&diagonal_free)
                .convert(&Format::parse("csr", 2).unwrap())
                .unwrap();
            for width in [IndexWidth::I32, IndexWidth::I64] {
                let a = csr.clone().with_index_width(width).unwrap();
                let what = format!("{backend:?}, {n}x{n}, {width:?} indices");
                let lower = substitute(&diagonal_free, &b, true);
                let upper = substitute(&diagonal_free, &b, false);
                for threads in [1, 2] {
                    kernels.wavefront.set_threads(threads);
                    kernels.upper_wavefront.set_threads(threads);
                    for (solve, name, input, want) in [
                        (&kernels.lower, "lower", "L", &lower),
                        (&kernels.wavefront, "level-set lower", "L", &lower),
                        (&kernels.upper, "upper", "U", &upper),
                        (&kernels.upper_wavefront, "level-set upper", "U", &upper),
                    ] {
                        let x = solve.run(&[(input, &a), ("b", &bt)]).unwrap();
                        let what = format!("{what}: {name} solve, {threads} threads");
                        assert_close(&what, &dense_values(&x), want);
                    }
                }
            }
        }
    }
}

/// A row's unknown stays in memory where a read of another element may be the same one:
/// this sweep reads `x(j)` for `j <= i`, so its last term reads the row's own running
/// value, which a copy kept in a register would miss.
#[test]
fn an_element_that_another_read_may_alias_stays_in_memory() {
    const SWEEP: &str = "input A[N, N] : csr;
input b[N] : dense;
output x[N];
uf rowptr = A.pos(2);
uf col = A.crd(2);
data Av = A.vals;
stmt init
  domain {[i] : 0 <= i < N}
  schedule {[i] -> [i, 0, 0, 0]}
  body x(i) = b(i);
stmt sweep
  domain {[i, k, j] : 0 <= i < N && rowptr(i) <= k < rowptr(i+1) && j = col(k) && j <= i}
  schedule {[i, k, j] -> [i, 1, k, j]}
  body x(i) += Av(k) * x(j);
";
    let mut rng = rng(12);
    for backend in [Backend::C, Backend::Jit] {
        let kernel = compile_spf_with("sweep.spf", SWEEP, backend);
        for n in [1, 9, 80] {
            let mut coo = random_coo(&mut rng, &[n, n], 0.2);
            for i in 0..n as i64 {
                coo.coords.extend([i, i]);
                coo.values.push(0.5);
            }
            let rows = rows(&coo);
            let b = rhs(n);
            let mut want = vec![0.0; n];
            for i in 0..n {
                want[i] = b[i];
                for (&j, v) in rows[i].range(..=i) {
                    want[i] += v * want[j];
                }
            }
            let x = kernel
                .run(&[("A", &matrix(&coo)), ("b", &vector(b))])
                .unwrap();
            assert_close(&format!("{backend:?}, {n}x{n}"), &dense_values(&x), &want);
        }
    }
}

/// The level sets a wavefront kernel keeps belong to the tensor contents they were
/// inspected from: calls that alternate two structures, change the right-hand side, or
/// change the matrix's values in place each solve their own system.
#[test]
fn kept_level_sets_are_never_another_structures() {
    let mut rng = rng(13);
    let mut kernels = kernels();
    let n = 1500;
    let (first, second) = (
        triangle(&random_coo(&mut rng, &[n, n], 0.004), true),
        triangle(&random_coo(&mut rng, &[n, n], 0.002), true),
    );
    let (a, b) = (
        matrix(&first)
            .convert(&Format::parse("csr", 2).unwrap())
            .unwrap(),
        matrix(&second)
            .convert(&Format::parse("csr", 2).unwrap())
            .unwrap(),
    );
    let (r1, r2) = (
        rhs(n),
        (0..n).map(|i| (i % 5) as f64 - 2.0).collect::<Vec<_>>(),
    );
    for threads in [1, 2] {
        kernels.wavefront.set_threads(threads);
        for (what, coo, m, r) in [
            ("first", &first, &a, &r1),
            ("second", &second, &b, &r1),
            ("first again", &first, &a, &r1),
            ("first, another right-hand side", &first, &a, &r2),
            ("second again", &second, &b, &r2),
        ] {
            let x = kernels
                .wavefront
                .run(&[("L", m), ("b", &vector(r.clone()))])
                .unwrap();
            let what = format!("{threads} threads, {what}");
            assert_close(&what, &dense_values(&x), &substitute(coo, r, true));
        }
    }
    // Two structures with the same sizes, lengths and coordinate ranges, whose level
    // orders differ: row 1 reads row 0 in one (order 0, 2, 1), row 2 reads row 1 in the
    // other (order 0, 1, 2), which the first's order would solve before row 1.
    let diagonal = [0, 0, 1, 1, 2, 2];
    let reads = |i: i64, j: i64| {
        let mut coords = diagonal.to_vec();
        coords.extend([i, j]);
        Coo::new(vec![3, 3], coords, vec![2.0, 2.0, 2.0, 0.5]).unwrap()
    };
    let (row_1_reads_0, row_2_reads_1) = (reads(1, 0), reads(2, 1));
    let r = vec![1.0, 2.0, 3.0];
    for coo in [&row_1_reads_0, &row_2_reads_1] {
        let m = matrix(coo)
            .convert(&Format::parse("csr", 2).unwrap())
            .unwrap();
        let x = kernels
            .wavefront
            .run(&[("L", &m), ("b", &vector(r.clone()))])
            .unwrap();
        assert_close("same sizes", &dense_values(&x), &substitute(coo, &r, true));
    }
    // New values in place: the same structure, another system.
    let mut changed = a.clone();
    let mut scaled = first.clone();
    match changed.values_mut() {
        sparsec::tensor::Values::F64(v) => v.iter_mut().for_each(|v| *v *= 2.0),
        other => panic!("{other:?}"),
    }
    scaled.values.iter_mut().for_each(|v| *v *= 2.0);
    let x = kernels
        .wavefront
        .run(&[("L", &changed), ("b", &vector(r1.clone()))])
        .unwrap();
    assert_close(
        "values changed",
        &dense_values(&x),
        &substitute(&scaled, &r1, true),
    );
}
