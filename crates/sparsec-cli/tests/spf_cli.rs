//! End-to-end tests of `sparsec spf emit|run` on the example programs, running the built
//! binary on small files whose solutions are known.

mod common;
use common::{sparsec, write};

use std::path::Path;

use sparsec::io;

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/spf")
        .join(name);
    path.display().to_string()
}

#[test]
fn spf_run_solves_from_files_and_writes_the_output() {
    let dir = tempfile::tempdir().unwrap();
    // L = [[2, 0, 0], [1, 4, 0], [0, 3, 5]] (unsorted, with an entry above the diagonal
    // that a lower solve ignores), b = [2, 9, 21]: x = [1, 2, 3].
    let l = write(
        dir.path(),
        "l.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 6\n3 3 5\n1 1 2\n2 1 1\n1 3 7\n3 2 3\n2 2 4\n",
    );
    let b = write(
        dir.path(),
        "b.mtx",
        "%%MatrixMarket matrix array real general\n3 1\n2\n9\n21\n",
    );
    let out = dir.path().join("x.mtx");
    for program in ["lower_solve.spf", "lower_solve_wavefront.spf"] {
        let o = sparsec(&[
            "spf",
            "run",
            &example(program),
            "-i",
            &format!("L:{}", l.display()),
            "-i",
            &format!("b:{}", b.display()),
            "-o",
            &format!("x:{}", out.display()),
            "--threads",
            "2",
            "--time",
            "3",
        ]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{program}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(stdout.contains("median"), "{stdout}");
        let x = io::read_matrix_market(&out).unwrap().coo;
        assert_eq!(x.values, vec![1.0, 2.0, 3.0], "{program}");
    }
}

#[test]
fn spf_emit_prints_the_kernel_and_errors_point_at_the_program() {
    let o = sparsec(&["spf", "emit", &example("spmv.spf")]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(text.contains("#pragma omp parallel for"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.spf",
        "input A[N, N] : csr;\noutput y[N];\nstmt S domain {[i] : 0 <= i < N && i*i < 3}\n  \
         schedule {[i] -> [i]} body y(i) = 1;\n",
    );
    let o = sparsec(&["spf", "emit", &bad.display().to_string()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("non-affine") && err.contains("bad.spf:3:36"),
        "{err}"
    );
}

#[test]
fn spf_run_takes_params() {
    let dir = tempfile::tempdir().unwrap();
    // Three points, one sweep: A(1) = (3 + 6 + 9) / 3 = 6, then B(1) = (0 + 6 + 0) / 3 = 2.
    let b0 = write(
        dir.path(),
        "b0.mtx",
        "%%MatrixMarket matrix array real general\n3 1\n3\n6\n9\n",
    );
    let out = dir.path().join("b.mtx");
    let run = |extra: &[&str]| {
        let input = format!("B0:{}", b0.display());
        let output = format!("B:{}", out.display());
        let jacobi = example("jacobi_1d.spf");
        let mut args = vec!["spf", "run", &jacobi, "-i", &input, "-o", &output];
        args.extend(extra);
        sparsec(&args)
    };
    let o = run(&["--param", "T=1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = io::read_matrix_market(&out).unwrap().coo;
    assert_eq!(b.values, vec![3.0, 2.0, 9.0]);
    for (args, says) in [
        (vec![], "parameter `T` has no value"),
        (vec!["--param", "T"], "expected NAME=N"),
        (vec!["--param", "T=x"], "is not an integer"),
        (vec!["--param", "Q=1"], "`Q` is not a `param`"),
    ] {
        let o = run(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn spf_run_converts_coo_files_to_csr_and_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    // Unsorted, with a duplicate (summed) and an explicit zero (kept).
    let a = write(
        dir.path(),
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 4 5\n3 4 1.5\n1 2 2\n3 1 0\n1 2 0.5\n2 3 -1\n",
    );
    let out = dir.path().join("b.mtx");
    for program in ["coo_to_csr.spf", "csr_transpose.spf"] {
        let o = sparsec(&[
            "spf",
            "run",
            &example(program),
            "-i",
            &format!("A:{}", a.display()),
            "-o",
            &format!("B:{}", out.display()),
        ]);
        assert!(
            o.status.success(),
            "{program}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let b = io::read_matrix_market(&out).unwrap().coo;
        let mut entries: Vec<(i64, i64, f64)> = (0..b.values.len())
            .map(|p| (b.coords[2 * p], b.coords[2 * p + 1], b.values[p]))
            .collect();
        entries.sort_by_key(|x| (x.0, x.1));
        let mut want = vec![(0, 1, 2.5), (1, 2, -1.0), (2, 0, 0.0), (2, 3, 1.5)];
        if program == "csr_transpose.spf" {
            assert_eq!(b.dims, vec![4, 3]);
            want = want.iter().map(|&(i, j, v)| (j, i, v)).collect();
            want.sort_by_key(|x| (x.0, x.1));
        } else {
            assert_eq!(b.dims, vec![3, 4]);
        }
        assert_eq!(entries, want, "{program}");
    }
}

#[test]
fn spf_run_refuses_an_order_3_output_in_matrix_market_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let b = write(dir.path(), "b.tns", "1 1 1 2.0\n2 1 2 3.0\n");
    let u = write(
        dir.path(),
        "u.mtx",
        "%%MatrixMarket matrix array real general\n2 1\n1\n2\n",
    );
    let o = sparsec(&[
        "spf",
        "run",
        &example("ttm_coo.spf"),
        "-i",
        &format!("B:{}", b.display()),
        "-i",
        &format!("U:{}", u.display()),
        "-o",
        &format!("Y:{}", dir.path().join("y.mtx").display()),
    ]);
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("cannot write an order-3 tensor"),
        "{stderr}"
    );
    // As .tns it runs: Y(i, j, r) = sum_k B(i, j, k) U(k, r).
    let y = dir.path().join("y.tns");
    let o = sparsec(&[
        "spf",
        "run",
        &example("ttm_coo.spf"),
        "-i",
        &format!("B:{}", b.display()),
        "-i",
        &format!("U:{}", u.display()),
        "-o",
        &format!("Y:{}", y.display()),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let y = io::read_tns(&y, None).unwrap();
    let mut entries: Vec<(Vec<i64>, f64)> = (0..y.values.len())
        .map(|p| (y.coords[3 * p..3 * p + 3].to_vec(), y.values[p]))
        .filter(|(_, v)| *v != 0.0)
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        entries,
        vec![(vec![0, 0, 0], 2.0), (vec![1, 0, 0], 6.0)],
        "{:?}",
        y
    );
}

/// A missing input is named, with the flag that gives it, before any file is read; the
/// help of `spf` and `spf run` points to the language's guide.
#[test]
fn spf_run_names_a_missing_input_and_how_to_give_it() {
    let out = sparsec(&[
        "spf",
        "run",
        &example("lower_solve.spf"),
        "-i",
        "L:/no/such/file.mtx",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("input `b` is missing") && stderr.contains("-i b:FILE"),
        "{stderr}"
    );
    for args in [&["spf", "--help"][..], &["spf", "run", "--help"]] {
        let help = String::from_utf8_lossy(&sparsec(args).stdout).into_owned();
        assert!(help.contains("docs/spf.md"), "{args:?}: {help}");
    }
}
