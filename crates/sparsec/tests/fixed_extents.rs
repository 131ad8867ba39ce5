//! Ranks compiled as constants (`ir::extents`): SpMM, SDDMM and MTTKRP whose dense rank
//! is fixed when compiling, for the ranks in [`RANKS`], with the default schedule and
//! with a split of the rank, on 1 and 2 threads and with the JIT, against the reference
//! evaluator; and the sizes of sparse operands, which stay parameters.

mod common;
use common::*;

use sparsec::kernel::{Backend, Kernel};
use sparsec::lower::MAX_FIXED_EXTENT;
use sparsec::schedule::Schedule;
use sparsec::tensor::{Coo, ValueType};

/// Ranks around the vector widths, the blocks of 16, 8 and 1 columns that SpMM sums in
/// registers (25 = 16 + 8 + 1), and both sides of the largest fixed extent.
const RANKS: [usize; 10] = [1, 2, 3, 8, 9, 17, 25, 32, 64, 65];

/// A sparse matrix with empty first and last rows and one row much longer than the rest.
fn uneven_matrix(seed: u64, m: usize, n: usize) -> Coo {
    let mut r = rng(seed);
    let base = random_coo(&mut r, &[m, n], 0.2);
    let mut coords = Vec::new();
    let mut values = Vec::new();
    for (e, &v) in base.values.iter().enumerate() {
        let row = base.coords[2 * e];
        if row != 0 && row as usize != m - 1 {
            coords.extend_from_slice(&base.coords[2 * e..2 * e + 2]);
            values.push(v);
        }
    }
    for col in 0..n as i64 {
        coords.extend_from_slice(&[(m / 2) as i64, col]);
        values.push(0.5 + col as f64);
    }
    Coo::new(vec![m, n], coords, values).unwrap()
}

/// Run `expr` with rank variable `rank_var` set to each of [`RANKS`], and check that the
/// kernel reads its rank as a constant exactly when it is at most [`MAX_FIXED_EXTENT`].
fn check_ranks(
    expr: &str,
    formats: &[(&str, &str)],
    rank_var: &str,
    inputs: impl Fn(usize) -> Vec<(&'static str, Coo)>,
) {
    for rank in RANKS {
        assert_eq!(
            rank > 64,
            rank > MAX_FIXED_EXTENT,
            "RANKS straddle the bound"
        );
        let inputs = inputs(rank);
        let sizes = [(rank_var, rank)];
        let (stmt, tensors) = statement(expr, formats, &inputs, &sizes);
        let split = format!("split({rank_var},{rank_var}0,{rank_var}1,4)");
        for schedule in [None, Some(split.as_str())] {
            let kernel = match schedule {
                None => Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain()),
                Some(s) => Kernel::scheduled(
                    stmt.clone(),
                    &Schedule::parse(s).unwrap(),
                    ValueType::F64,
                    &split_toolchain(),
                ),
            };
            let mut kernel = kernel.unwrap_or_else(|e| panic!("{expr}, rank {rank}: {e}"));
            // The extent's parameter is always declared; a fixed one is read nowhere else.
            let reads = kernel
                .kernel_source()
                .matches(&format!("{rank_var}_size"))
                .count();
            assert_eq!(
                reads > 1,
                rank > MAX_FIXED_EXTENT,
                "{expr}, rank {rank}, {schedule:?}: the rank's parameter is read {reads} times\n{}",
                kernel.kernel_source()
            );
            for threads in [1, 2] {
                kernel.set_threads(threads);
                let what = format!("{expr}, rank {rank}, {schedule:?}, {threads} threads");
                compare_with_reference(&kernel, &stmt, &tensors, &what);
            }
            let jit = kernel.with_backend(Backend::Jit).unwrap();
            let what = format!("{expr}, rank {rank}, {schedule:?}, JIT");
            compare_with_reference(&jit, &stmt, &tensors, &what);
        }
    }
}

#[test]
fn spmm_with_a_fixed_rank_matches_the_reference() {
    check_ranks("C(i,k) = A(i,j) * B(j,k)", &[("A", "csr")], "k", |rank| {
        let mut r = rng(rank as u64);
        vec![
            ("A", uneven_matrix(rank as u64, 23, 19)),
            ("B", random_coo(&mut r, &[19, rank], 1.0)),
        ]
    });
}

#[test]
fn sddmm_with_a_fixed_rank_matches_the_reference() {
    check_ranks(
        "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
        &[("A", "csr"), ("B", "csr")],
        "k",
        |rank| {
            let mut r = rng(100 + rank as u64);
            vec![
                ("B", uneven_matrix(rank as u64, 17, 21)),
                ("C", random_coo(&mut r, &[17, rank], 1.0)),
                ("D", random_coo(&mut r, &[rank, 21], 1.0)),
            ]
        },
    );
}

#[test]
fn mttkrp_with_a_fixed_rank_matches_the_reference() {
    check_ranks(
        "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
        &[("B", "sss")],
        "j",
        |rank| {
            let mut r = rng(200 + rank as u64);
            vec![
                ("B", random_coo(&mut r, &[9, 7, 8], 0.3)),
                ("C", random_coo(&mut r, &[7, rank], 1.0)),
                ("D", random_coo(&mut r, &[8, rank], 1.0)),
            ]
        },
    );
}

/// Sizes that index a sparse operand stay parameters in every layout, blocked ones
/// included (sliced ELL's slices, BCSR's block rows, counted by the size of the level that
/// stores them): SpMV compiled for two matrices of other sizes prints the same kernel, so
/// one compiled kernel and its cache entry serve both, and each run matches the reference.
/// The block counts were compiled as constants, so every new size compiled again.
#[test]
fn sparse_sizes_stay_parameters_in_every_layout() {
    for format in ["csr", "ell", "sell:8", "bcsr:2x3", "dia"] {
        let sources: Vec<String> = [(37, 29), (100, 64)]
            .into_iter()
            .map(|(m, n)| {
                let mut r = rng((m * n) as u64);
                let inputs = vec![
                    ("A", uneven_matrix(m as u64, m, n)),
                    ("x", random_coo(&mut r, &[n], 1.0)),
                ];
                let (stmt, tensors) =
                    statement("y(i) = A(i,j) * x(j)", &[("A", format)], &inputs, &[]);
                let kernel =
                    Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain())
                        .unwrap_or_else(|e| panic!("{format}, {m}x{n}: {e}"));
                compare_with_reference(&kernel, &stmt, &tensors, &format!("{format}, {m}x{n}"));
                kernel.kernel_source().to_string()
            })
            .collect();
        assert_eq!(
            sources[0], sources[1],
            "{format}: the kernels for 37x29 and 100x64 differ"
        );
    }
}
