//! End-to-end tests of `sparsec specialise` on the affine examples: the report, the
//! regions and the C it prints, runs checked against the dense program and against
//! products computed here, outputs written, and bad input refused with a clear message.

mod common;
use common::{fails, ok, write};

use std::path::Path;

use sparsec::io;

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/affine")
        .join(name)
        .display()
        .to_string()
}

/// A MatrixMarket matrix of `n x n` with the given dense blocks (value `1 + (i + j) % 3`).
fn blocks(dir: &Path, name: &str, n: usize, blocks: &[(usize, usize, usize, usize)]) -> String {
    let mut entries = Vec::new();
    for &(r0, r1, c0, c1) in blocks {
        for i in r0..=r1 {
            for j in c0..=c1 {
                entries.push(format!("{} {} {}", i + 1, j + 1, 1 + (i + j) % 3));
            }
        }
    }
    let text = format!(
        "%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n{}\n",
        entries.len(),
        entries.join("\n")
    );
    write(dir, name, &text).display().to_string()
}

fn dense(path: &str, n: usize) -> Vec<f64> {
    let coo = io::read_any(path).unwrap().into_coo();
    let mut out = vec![0.0; n * n];
    for e in 0..coo.values.len() {
        out[coo.coords[2 * e] as usize * n + coo.coords[2 * e + 1] as usize] += coo.values[e];
    }
    out
}

#[test]
fn matrix_multiply_on_block_inputs_runs_only_the_blocks_products() {
    let dir = tempfile::tempdir().unwrap();
    let n = 40;
    let a = blocks(
        dir.path(),
        "a.mtx",
        n,
        &[(0, 7, 0, 7), (20, 29, 10, 19), (39, 39, 0, 39)],
    );
    let b = blocks(dir.path(), "b.mtx", n, &[(0, 9, 0, 9), (10, 19, 25, 34)]);
    let mm = example("mm.c");
    let report = ok(&[
        "specialise",
        &mm,
        "-i",
        &format!("A:{a}"),
        "-i",
        &format!("B:{b}"),
    ]);
    assert!(
        report.contains("A: 3 box(es) cover 204 non-zeros with 0 explicit zeros"),
        "{report}"
    );
    assert!(report.contains("(exact)"), "{report}");
    // The non-zero products, i x j x k: A's first block with B's first (8 x 10 x 8), A's
    // second with B's second (10 x 10 x 10), and A's last row with each (1 x 10 x 10 twice).
    assert!(
        report.contains("S2: 1840 of 64000 iterations run"),
        "{report}"
    );
    assert!(report.contains("S1: 0 of 1600"), "{report}");

    let c = dir.path().join("c.mtx").display().to_string();
    let run = ok(&[
        "specialise",
        &mm,
        "-i",
        &format!("A:{a}"),
        "-i",
        &format!("B:{b}"),
        "--dense",
        "--time",
        "2",
        "-o",
        &format!("C:{c}"),
    ]);
    assert!(run.contains("agree on every array"), "{run}");
    assert!(run.contains("special") && run.contains("dense"), "{run}");
    let (av, bv, cv) = (dense(&a, n), dense(&b, n), dense(&c, n));
    for i in 0..n {
        for j in 0..n {
            let want: f64 = (0..n).map(|k| av[i * n + k] * bv[k * n + j]).sum();
            assert!(
                (cv[i * n + j] - want).abs() < 1e-9,
                "C[{i}][{j}] = {}, want {want}",
                cv[i * n + j]
            );
        }
    }
    let regions = ok(&[
        "specialise",
        &mm,
        "-i",
        &format!("A:{a}"),
        "-i",
        &format!("B:{b}"),
        "--emit",
        "regions",
    ]);
    assert!(
        regions.starts_with("S1: ") && regions.contains("S2: "),
        "{regions}"
    );
    let code = ok(&[
        "specialise",
        &mm,
        "-i",
        &format!("A:{a}"),
        "-i",
        &format!("B:{b}"),
        "--emit",
        "c",
    ]);
    assert!(code.contains("for ("), "{code}");
    let jit = ok(&[
        "specialise",
        &mm,
        "-i",
        &format!("A:{a}"),
        "-i",
        &format!("B:{b}"),
        "--dense",
        "--backend",
        "jit",
    ]);
    assert!(jit.contains("agree on every array"), "{jit}");
}

#[test]
fn the_solution_map_finds_the_same_regions_and_refuses_lu() {
    let dir = tempfile::tempdir().unwrap();
    let n = 40;
    let a = blocks(dir.path(), "a.mtx", n, &[(0, 7, 0, 7), (39, 39, 0, 39)]);
    let b = blocks(dir.path(), "b.mtx", n, &[(0, 9, 0, 9), (10, 19, 25, 34)]);
    let out = ok(&[
        "specialise",
        &example("gemm.c"),
        "-i",
        &format!("A:{a}"),
        "-i",
        &format!("B:{b}"),
        "--scalar",
        "alpha=2",
        "--scalar",
        "beta=0",
        "--map",
        "--dense",
    ]);
    assert!(
        out.contains("through the solution map: computed in"),
        "{out}"
    );
    assert!(out.contains("agree on every array"), "{out}");
    // A's first block with B's first (8 x 10 x 8), A's last row with both (1 x 10 x 10, twice).
    assert!(out.contains("S2: 840 of 64000 iterations run"), "{out}");
    let err = fails(&[
        "specialise",
        &example("lu.c"),
        "-i",
        &format!("A:{a}"),
        "--map",
    ]);
    assert!(
        err.contains("no solution map") && err.contains("`A` meets itself"),
        "{err}"
    );
}

#[test]
fn stencils_take_their_time_steps_as_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let a = blocks(dir.path(), "a.mtx", 24, &[(5, 7, 5, 6)]);
    let out = ok(&[
        "specialise",
        &example("jacobi-2d.c"),
        "-i",
        &format!("A:{a}"),
        "-p",
        "TSTEPS=3",
        "--dense",
    ]);
    assert!(out.contains("agree on every array"), "{out}");
    let err = fails(&[
        "specialise",
        &example("jacobi-2d.c"),
        "-i",
        &format!("A:{a}"),
    ]);
    assert!(
        err.contains("`TSTEPS` is not fixed") && err.contains("--param TSTEPS=N"),
        "{err}"
    );
}

#[test]
fn bad_programs_and_inputs_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let a = blocks(dir.path(), "a.mtx", 10, &[(0, 1, 0, 1)]);
    let wide = write(
        dir.path(),
        "wide.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 5 1\n1 1 1\n",
    )
    .display()
    .to_string();
    let mm = example("mm.c");
    let indirect = write(
        dir.path(),
        "indirect.c",
        "int N; double A[N], B[N];\nfor (i = 0; i < N; i++)\n  A[B[i]] = 1;\n",
    );
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![indirect.display().to_string(), format!("A:{a}")],
            "data-dependent",
        ),
        (
            vec![mm.clone(), format!("D:{a}")],
            "`D` is not an array of the program",
        ),
        (
            vec![mm.clone(), format!("A:{wide}")],
            "makes `N` = 5, but it is 3",
        ),
        (
            vec![
                mm.clone(),
                format!("A:{a}"),
                "--threshold".into(),
                "0".into(),
            ],
            "density threshold",
        ),
        (
            vec![
                mm.clone(),
                format!("A:{a}"),
                "--scalar".into(),
                "x=1".into(),
            ],
            "no scalar `x`",
        ),
        (
            vec![mm.clone(), format!("A:{a}"), "-p".into(), "M=3".into()],
            "`M` is not a parameter",
        ),
        (
            vec![
                mm.clone(),
                format!("A:{}", dir.path().join("missing.mtx").display()),
            ],
            "missing.mtx",
        ),
    ];
    for (args, expected) in cases {
        let mut full = vec!["specialise".to_string(), args[0].clone()];
        for extra in &args[1..] {
            if extra.contains(':') {
                full.push("-i".into());
            }
            full.push(extra.clone());
        }
        let refs: Vec<&str> = full.iter().map(|s| s.as_str()).collect();
        let err = fails(&refs);
        assert!(err.contains(expected), "{full:?}: {err}");
    }
}
