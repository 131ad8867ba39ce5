//! Scheduled kernels against the reference evaluator: every transformation alone and in the
//! paper's chains, on inputs that stress guards and position tracking (empty first/last
//! rows, skewed rows, one row, one column, fewer nonzeros than a tile, no nonzeros), with
//! 1 and 2 threads; random legal chains; and the message of every precondition failure.

mod common;
use common::*;

use sparsec::generate;
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::schedule::{Concrete, MergeStrategy, Schedule, Transform};
use sparsec::tensor::{Coo, ValueType};

/// Matrices of shape `m x n` (and some of other shapes when `any_shape`) that exercise
/// the edge cases of tiling.
fn matrices(seed: u64, m: usize, n: usize) -> Vec<Coo> {
    let mut r = rng(seed);
    let mut out = vec![
        random_coo(&mut r, &[m, n], 0.15),
        random_coo(&mut r, &[m, n], 0.0),
        random_coo(&mut r, &[m, n], 0.01),
    ];
    // Empty first and last rows, and a run of empty rows in the middle.
    let mut holes = random_coo(&mut r, &[m, n], 0.3);
    let keep: Vec<usize> = (0..holes.values.len())
        .filter(|&e| {
            let row = holes.coords[2 * e] as usize;
            row != 0 && row + 1 != m && !(m / 3..m / 2).contains(&row)
        })
        .collect();
    holes.coords = keep
        .iter()
        .flat_map(|&e| [holes.coords[2 * e], holes.coords[2 * e + 1]])
        .collect();
    holes.values = keep.iter().map(|&e| holes.values[e]).collect();
    out.push(holes);
    // Very skewed rows: row i holds about 1.25^i nonzeros (capped by n).
    out.push(generate::skewed_rows(m, n, 1.0, 1.25, seed).unwrap());
    out
}

fn spmv_sets(seed: u64, m: usize, n: usize) -> Vec<Vec<(&'static str, Coo)>> {
    let mut r = rng(seed + 100);
    let mut sets: Vec<Vec<(&str, Coo)>> = matrices(seed, m, n)
        .into_iter()
        .map(|a| vec![("A", a), ("x", random_coo(&mut r, &[n], 1.0))])
        .collect();
    sets.truncate(5);
    sets
}

const SPMV: &str = "y(i) = A(i,j) * x(j)";

#[test]
fn split_factors_that_do_and_do_not_divide() {
    let sets = spmv_sets(1, 37, 23);
    for f in [1, 2, 3, 8, 32, 37, 64] {
        check_schedule(
            SPMV,
            &[("A", "csr")],
            &sets,
            &[],
            &format!("split(i,i0,i1,{f}),parallelize(i0,CPUThread,NoRaces)"),
        );
    }
}

#[test]
fn divide_into_parts() {
    let sets = spmv_sets(2, 29, 17);
    for parts in [1, 2, 5, 40] {
        check_schedule(
            SPMV,
            &[("A", "csr")],
            &sets,
            &[],
            &format!("divide(i,i0,i1,{parts}),parallelize(i0,CPUThread,NoRaces,static,1)"),
        );
    }
}

/// Variables computed by `fuse` and `split` where operands are added or a constant is:
/// every coordinate is visited and each operand is located (sparse levels by search).
#[test]
fn derived_variables_under_addition() {
    let mut r = rng(71);
    let (i, j, k) = (4, 5, 3);
    let cubes = |r: &mut rand::rngs::StdRng, d: f64| {
        vec![
            ("A", random_coo(r, &[i, j, k], d)),
            ("B", random_coo(r, &[i, j, k], d)),
        ]
    };
    let sets = vec![cubes(&mut r, 0.3), cubes(&mut r, 0.0), cubes(&mut r, 1.0)];
    let add3 = "C(i,j,k) = A(i,j,k) + B(i,j,k)";
    for formats in [
        [("A", "ddd"), ("B", "ddd"), ("C", "ddd")],
        [("A", "sss"), ("B", "sss"), ("C", "ddd")],
        [("A", "dsd"), ("B", "sss"), ("C", "sss")],
        [("A", "hhh"), ("B", "dss"), ("C", "dsd")],
    ] {
        for schedule in [
            "fuse(i,j,f),fuse(f,k,g)",
            "fuse(i,j,f),split(f,f0,f1,4)",
            "split(j,j0,j1,2),split(k,k0,k1,2)",
            "fuse(i,j,f),fuse(f,k,g),split(g,g0,g1,8),parallelize(g0,CPUThread,NoRaces)",
        ] {
            check_schedule(add3, &formats, &sets, &[], schedule);
        }
    }
    check_schedule(
        "C(i,j,k) = A(i,j,k) - 2 * B(i,j,k) + 1",
        &[("A", "sss"), ("B", "dsd")],
        &sets,
        &[],
        "fuse(i,j,f),fuse(f,k,g)",
    );
    let matrices: Vec<Vec<(&str, Coo)>> = matrices(72, 9, 7)
        .into_iter()
        .map(|a| vec![("A", a.clone()), ("B", a)])
        .collect();
    check_schedule(
        "y(i) = A(i,j) + B(i,j) + 1",
        &[("A", "csr"), ("B", "dcsr")],
        &matrices,
        &[],
        "split(i,i0,i1,4)",
    );
}

#[test]
fn paper_a1_spmv_row_chunks() {
    for (m, n) in [(41, 19), (1, 30), (30, 1), (1, 1)] {
        check_schedule(
            SPMV,
            &[("A", "csr")],
            &spmv_sets(3, m, n),
            &[],
            "split(i,i0,i1,32),order(i0,i1,j),parallelize(i0,CPUThread,NoRaces)",
        );
    }
}

#[test]
fn coordinate_split_of_a_compressed_level_searches_it() {
    check_schedule(
        SPMV,
        &[("A", "csr")],
        &spmv_sets(25, 17, 29),
        &[],
        "split(j,j0,j1,4)",
    );
    check_schedule(
        SPMV,
        &[("A", "dcsr")],
        &spmv_sets(26, 17, 29),
        &[],
        "split(i,i0,i1,3)",
    );
}

#[test]
fn position_space_split_of_a_row() {
    for tile in [1, 3, 8, 64] {
        check_schedule(
            SPMV,
            &[("A", "csr")],
            &spmv_sets(4, 33, 27),
            &[],
            &format!("pos(j,jp,A(i,j)),split(jp,jp0,jp1,{tile}),parallelize(i,CPUThread,NoRaces)"),
        );
    }
}

/// `coord`: a row's positions selected, then tiled in coordinate space (coordinates the
/// row does not store are skipped by the search).
#[test]
fn coord_after_pos() {
    for schedule in [
        "pos(j,jp,A(i,j)),coord(jp,jc)",
        "pos(j,jp,A(i,j)),coord(jp,jc),split(jc,jc0,jc1,4),parallelize(i,CPUThread,NoRaces)",
    ] {
        check_schedule(SPMV, &[("A", "csr")], &spmv_sets(24, 21, 40), &[], schedule);
    }
}

#[test]
fn load_balanced_spmv_fused_position_space() {
    // Chunks smaller and larger than rows, the whole matrix, and nnz < one tile.
    for (format, chunk) in [
        ("csr", 1),
        ("csr", 5),
        ("csr", 16),
        ("csr", 4096),
        ("dcsr", 7),
        ("coo", 3),
    ] {
        check_schedule(
            SPMV,
            &[("A", format)],
            &spmv_sets(5, 45, 31),
            &[],
            &format!(
                "fuse(i,j,f),pos(f,p,A(i,j)),split(p,p0,p1,{chunk}),parallelize(p0,CPUThread,Atomics)"
            ),
        );
    }
}

#[test]
fn fused_position_space_with_temporary_and_unsplit() {
    let sets = spmv_sets(6, 25, 18);
    check_schedule(
        SPMV,
        &[("A", "csr")],
        &sets,
        &[],
        "fuse(i,j,f),pos(f,p,A(i,j))",
    );
    check_schedule(
        SPMV,
        &[("A", "csr")],
        &sets,
        &[],
        "fuse(i,j,f),pos(f,p,A(i,j)),divide(p,p0,p1,3),parallelize(p0,CPUThread,Temporary)",
    );
}

fn spmm_sets(seed: u64) -> Vec<Vec<(&'static str, Coo)>> {
    let mut r = rng(seed + 200);
    matrices(seed, 26, 21)
        .into_iter()
        .take(4)
        .map(|a| vec![("A", a), ("B", random_coo(&mut r, &[21, 9], 1.0))])
        .collect()
}

const SPMM: &str = "C(i,k) = A(i,j) * B(j,k)";

#[test]
fn paper_a3_spmm() {
    check_schedule(
        SPMM,
        &[("A", "csr")],
        &spmm_sets(7),
        &[],
        "split(i,i0,i1,8),pos(j,jpos,A(i,j)),split(jpos,jpos0,jpos1,8),order(i0,i1,jpos0,k,jpos1),\
         parallelize(i0,CPUThread,NoRaces),parallelize(k,CPUVector,IgnoreRaces)",
    );
}

#[test]
fn paper_a12_spmm_tiled() {
    check_schedule(
        SPMM,
        &[("A", "csr")],
        &spmm_sets(8),
        &[],
        "pos(j,jpos,A(i,j)),split(jpos,jpos0,jpos1,4),order(i,jpos0,k,jpos1)",
    );
}

#[test]
fn bound_unroll_and_vector_lanes() {
    let sets = spmm_sets(9);
    check_schedule(
        SPMM,
        &[("A", "csr")],
        &sets,
        &[],
        "bound(k,kb,MaxExact,9),unroll(kb,9),parallelize(i,CPUThread,NoRaces,static,4)",
    );
    check_schedule(
        SPMM,
        &[("A", "csr")],
        &sets,
        &[],
        "split(k,k0,k1,4),parallelize(k1,CPUVector,NoRaces)",
    );
    check_schedule(
        SPMM,
        &[("A", "csr")],
        &sets,
        &[],
        "bound(k,kb,MaxConstraint,16),parallelize(kb,CPUVector,NoRaces)",
    );
}

#[test]
fn reductions_in_parallel() {
    let sets = spmv_sets(10, 20, 33);
    for races in ["Atomics", "Temporary", "IgnoreRaces"] {
        let schedule = format!("parallelize(j,CPUThread,{races})");
        if races == "IgnoreRaces" {
            // Races really happen here; only check that it compiles.
            let (stmt, _) = statement(SPMV, &[("A", "csr")], &sets[0], &[]);
            Kernel::scheduled(
                stmt,
                &Schedule::parse(&schedule).unwrap(),
                ValueType::F64,
                &Toolchain::default(),
            )
            .unwrap();
            continue;
        }
        check_schedule(SPMV, &[("A", "csr")], &sets, &[], &schedule);
    }
    check_schedule(
        SPMV,
        &[("A", "csr")],
        &sets,
        &[],
        "parallelize(j,CPUVector,ParallelReduction)",
    );
    // A reduction into a dense output shared by the parallel loop: A^T x by rows of A.
    let mut r = rng(11);
    let at = vec![vec![
        ("A", random_coo(&mut r, &[30, 12], 0.2)),
        ("x", random_coo(&mut r, &[30], 1.0)),
    ]];
    for races in ["Atomics", "Temporary"] {
        check_schedule(
            "y(j) = A(i,j) * x(i)",
            &[("A", "csr")],
            &at,
            &[],
            &format!("parallelize(i,CPUThread,{races})"),
        );
    }
}

/// Sparse outputs in parallel: each thread appends to its own entry buffer (and has its
/// own workspace row for SpGEMM); the runtime concatenates them in order.
#[test]
fn parallel_sparse_outputs() {
    let mut r = rng(23);
    let m = |r: &mut _, dims: &[usize], d| random_coo(r, dims, d);
    let spgemm = vec![
        vec![
            ("A", m(&mut r, &[70, 30], 0.1)),
            ("B", m(&mut r, &[30, 40], 0.1)),
        ],
        vec![
            ("A", m(&mut r, &[70, 30], 0.0)),
            ("B", m(&mut r, &[30, 40], 0.3)),
        ],
    ];
    for schedule in [
        "parallelize(i,CPUThread,NoRaces)",
        "split(i,i0,i1,8),parallelize(i0,CPUThread,NoRaces,dynamic,2)",
    ] {
        for out in ["csr", "dcsr"] {
            check_schedule(
                "C(i,j) = A(i,k) * B(k,j)",
                &[("A", "csr"), ("B", "csr"), ("C", out)],
                &spgemm,
                &[],
                schedule,
            );
        }
    }
    let sddmm = vec![vec![
        ("B", m(&mut r, &[50, 40], 0.1)),
        ("C", m(&mut r, &[50, 6], 1.0)),
        ("D", m(&mut r, &[6, 40], 1.0)),
    ]];
    check_schedule(
        "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
        &[("A", "csr"), ("B", "csr")],
        &sddmm,
        &[],
        "split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)",
    );
    let add = vec![vec![
        ("A", m(&mut r, &[60, 20], 0.2)),
        ("B", m(&mut r, &[60, 20], 0.2)),
    ]];
    check_schedule(
        "C(i,j) = A(i,j) + B(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &add,
        &[],
        "parallelize(i,CPUThread,NoRaces,static,4)",
    );
}

#[test]
fn mttkrp_orders_3_to_5_split_and_parallel() {
    let mut r = rng(12);
    for (expr, order) in [
        ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", 3),
        ("A(i,j) = B(i,k,l,m) * C(k,j) * D(l,j) * E(m,j)", 4),
        (
            "A(i,j) = B(i,k,l,m,n) * C(k,j) * D(l,j) * E(m,j) * F(n,j)",
            5,
        ),
    ] {
        let dims = vec![6; order];
        let b = random_coo(&mut r, &dims, 0.05);
        let mut inputs = vec![("B", b)];
        for name in ["C", "D", "E", "F"].iter().take(order - 1) {
            inputs.push((name, random_coo(&mut r, &[6, 5], 1.0)));
        }
        // A dense first level is split by coordinates (the paper's CPU format); a
        // compressed one in its position space.
        let access = format!("B(i,{})", ["k", "l", "m", "n"][..order - 1].join(","));
        let by_positions =
            format!("pos(i,ip,{access}),split(ip,i1,i2,4),parallelize(i1,CPUThread,NoRaces)");
        for (format, schedule) in [
            (
                "d".to_string() + &"s".repeat(order - 1),
                "split(i,i1,i2,4),parallelize(i1,CPUThread,NoRaces)",
            ),
            ("s".repeat(order), by_positions.as_str()),
            // A compressed first level reached by binary search from coordinate tiles.
            (
                "s".repeat(order),
                "split(i,i1,i2,4),parallelize(i1,CPUThread,NoRaces)",
            ),
        ] {
            check_schedule(
                expr,
                &[("B", &format)],
                std::slice::from_ref(&inputs),
                &[],
                schedule,
            );
        }
    }
}

/// The paper's MTTKRP CPU schedules A.5-A.7: j-sized workspaces computed per fiber,
/// nested for orders 4 and 5, with row chunks on threads.
#[test]
fn paper_a5_to_a7_mttkrp_with_workspaces() {
    let mut r = rng(20);
    let cases = [
        (
            "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
            "order(i,k,l,j),precompute(B(i,k,l)*D(l,j),j,j,w),split(i,i1,i2,4),\
             parallelize(i1,CPUThread,NoRaces)",
            3,
        ),
        (
            "A(i,j) = B(i,k,l,m) * C(k,j) * D(l,j) * E(m,j)",
            "order(i,k,l,m,j),precompute(B(i,k,l,m)*E(m,j)*D(l,j),j,j,bde),\
             precompute(B(i,k,l,m)*E(m,j),j,j,be),split(i,i1,i2,4),\
             parallelize(i1,CPUThread,NoRaces)",
            4,
        ),
        (
            "A(i,j) = B(i,k,l,m,n) * C(k,j) * D(l,j) * E(m,j) * F(n,j)",
            "order(i,k,l,m,n,j),precompute(B(i,k,l,m,n)*F(n,j)*E(m,j)*D(l,j),j,j,bdef),\
             precompute(B(i,k,l,m,n)*F(n,j)*E(m,j),j,j,bef),precompute(B(i,k,l,m,n)*F(n,j),j,j,bf),\
             split(i,i1,i2,4),parallelize(i1,CPUThread,NoRaces)",
            5,
        ),
    ];
    for (expr, schedule, order) in cases {
        let sets: Vec<Vec<(&str, Coo)>> = [0.08, 0.0]
            .iter()
            .map(|&d| {
                let mut inputs = vec![("B", random_coo(&mut r, &vec![5; order], d))];
                for name in ["C", "D", "E", "F"].iter().take(order - 1) {
                    inputs.push((name, random_coo(&mut r, &[5, 6], 1.0)));
                }
                inputs
            })
            .collect();
        let format = "d".to_string() + &"s".repeat(order - 1);
        check_schedule(expr, &[("B", &format)], &sets, &[], schedule);
    }
}

/// `precompute` read by a sparse output: only the touched workspace entries are emitted.
#[test]
fn precompute_for_sparse_outputs() {
    let mut r = rng(27);
    let sets: Vec<Vec<(&str, Coo)>> = [0.15, 0.0]
        .iter()
        .map(|&d| {
            vec![
                ("A", random_coo(&mut r, &[40, 30], d)),
                ("B", random_coo(&mut r, &[30, 35], 0.1)),
            ]
        })
        .collect();
    for out in ["csr", "dcsr"] {
        check_schedule(
            "C(i,j) = A(i,k) * B(k,j)",
            &[("A", "csr"), ("B", "csr"), ("C", out)],
            &sets,
            &[],
            "precompute(A(i,k)*B(k,j),j,j,w),parallelize(i,CPUThread,NoRaces)",
        );
    }
    let with_mask: Vec<Vec<(&str, Coo)>> = sets
        .iter()
        .map(|set| {
            let mut set = set.clone();
            set.push(("D", random_coo(&mut r, &[40, 35], 1.0)));
            set
        })
        .collect();
    check_schedule(
        "C(i,j) = A(i,k) * B(k,j) * D(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &with_mask,
        &[],
        "precompute(A(i,k)*B(k,j),j,j,w)",
    );
}

#[test]
fn precompute_into_a_two_dimensional_workspace() {
    let mut r = rng(21);
    let sets = vec![vec![
        ("B", random_coo(&mut r, &[4, 5, 6], 0.2)),
        ("C", random_coo(&mut r, &[5, 3], 1.0)),
        ("D", random_coo(&mut r, &[6, 3, 2], 1.0)),
    ]];
    check_schedule(
        "Y(i,j,m) = B(i,k,l) * D(l,j,m) * C(k,j)",
        &[("B", "sss")],
        &sets,
        &[],
        "order(i,k,l,j,m),precompute(B(i,k,l)*D(l,j,m),(j,m),(j,m),w),parallelize(i,CPUThread,NoRaces)",
    );
    // A sparse output reads the two-dimensional workspace through its touched list.
    let sparse_sets: Vec<Vec<(&str, Coo)>> = [0.2, 0.03, 0.0]
        .iter()
        .map(|&d| {
            vec![
                ("B", random_coo(&mut r, &[4, 5, 6], d)),
                ("C", random_coo(&mut r, &[5, 3], 1.0)),
                ("D", random_coo(&mut r, &[6, 3, 2], 0.3)),
            ]
        })
        .collect();
    for out in ["sss", "dss", "dsd"] {
        check_schedule(
            "Y(i,j,m) = B(i,k,l) * D(l,j,m) * C(k,j)",
            &[("B", "sss"), ("D", "sss"), ("Y", out)],
            &sparse_sets,
            &[],
            "order(i,k,l,j,m),precompute(B(i,k,l)*D(l,j,m),(j,m),(j,m),w),\
             parallelize(i,CPUThread,NoRaces)",
        );
    }
    let (stmt, _) = statement(
        "Y(i,j,m) = B(i,k,l) * D(l,j,m) * C(k,j)",
        &[("B", "sss"), ("Y", "sss")],
        &sparse_sets[0],
        &[],
    );
    let refused = Schedule::parse("order(i,k,l,j,m),precompute(B(i,k,l)*D(l,j,m),(m,j),(m,j),w)")
        .map_err(sparsec::Error::from)
        .and_then(|s| Kernel::scheduled(stmt, &s, ValueType::F64, &Toolchain::default()))
        .err()
        .expect("the consumer loops j, m do not read the workspace (m, j) in order");
    assert!(
        refused
            .to_string()
            .contains("only along its variables (m, j)"),
        "{refused}"
    );
}

/// A product precomputed inside another workspace's producer: the outer workspace's
/// variables are bound where the inner one is consumed, so they are not its reductions
/// (found by the statement fuzzer: a panic in lowering, and C reading an unbound `i`).
#[test]
fn precompute_inside_a_precomputed_workspace() {
    let mut r = rng(31);
    let sets: Vec<Vec<(&str, Coo)>> = [0.3, 0.0]
        .iter()
        .map(|&d| {
            vec![
                ("A", random_coo(&mut r, &[], 1.0)),
                ("B", random_coo(&mut r, &[8, 2, 4], d)),
            ]
        })
        .collect();
    for format in ["hbs:1,0,2", "sss:1,0,2", "dds:1,0,2"] {
        check_schedule(
            "Y = A * B(j,i,k)",
            &[("B", format)],
            &sets,
            &[],
            "precompute(A*B(j,i,k),(j,k),(jw1,kw2)),reorder(i,j),precompute(A*B(j,i,k),k,kw3)",
        );
    }
    // The inner workspace is indexed by every variable of the product but `i`: it stages
    // the product (no reduction) for each `i`, whose loops stay outside its producer.
    let sets: Vec<Vec<(&str, Coo)>> = [0.5, 0.0]
        .iter()
        .map(|&d| {
            vec![
                ("A", random_coo(&mut r, &[5, 4], d)),
                ("B", random_coo(&mut r, &[4, 6], 1.0)),
            ]
        })
        .collect();
    for format in ["uu", "ds"] {
        check_schedule(
            "Y = A(k,i) * B(i,j) / 2",
            &[("A", format)],
            &sets,
            &[],
            "split(i,io,ii,3),precompute(A(k,i)*B(i,j),i,iw),\
             precompute(A(k,i)*B(i,j),(j,k),(jw,kw),w)",
        );
    }
}

#[test]
fn fused_position_space_of_a_third_order_tensor() {
    let mut r = rng(13);
    let sets: Vec<Vec<(&str, Coo)>> = (0..3)
        .map(|n| {
            vec![
                ("B", random_coo(&mut r, &[7, 6, 5], [0.1, 0.02, 0.0][n])),
                ("C", random_coo(&mut r, &[6, 4], 1.0)),
                ("D", random_coo(&mut r, &[5, 4], 1.0)),
            ]
        })
        .collect();
    check_schedule(
        "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
        &[("B", "sss")],
        &sets,
        &[],
        "order(i,k,l,j),fuse(k,l,kl),fuse(i,kl,f),pos(f,fpos,B(i,k,l)),split(fpos,f0,f1,3),\
         parallelize(f0,CPUThread,Atomics)",
    );
}

#[test]
fn reorder_and_coordinate_fuse_on_dense_operands() {
    let mut r = rng(14);
    let sets = vec![vec![
        ("B", random_coo(&mut r, &[9, 7], 1.0)),
        ("c", random_coo(&mut r, &[7], 1.0)),
    ]];
    let expr = "y(i) = B(i,j) * c(j)";
    check_schedule(expr, &[], &sets, &[], "fuse(i,j,f),split(f,f0,f1,5)");
    check_schedule(expr, &[], &sets, &[], "reorder(i,j)");
    check_schedule(
        "C(i,j) = A(i,j) + B(j,i)",
        &[("A", "csr"), ("B", "csr")],
        &[vec![
            ("A", random_coo(&mut r, &[8, 8], 0.3)),
            ("B", random_coo(&mut r, &[8, 8], 0.3)),
        ]],
        &[],
        "order(j,i)",
    );
}

/// Random chains of transformations on SpMV and SpMM: each either is refused with a
/// schedule or lowering error, or computes the reference result.
#[test]
fn random_legal_chains() {
    use rand::Rng;
    let mut r = rng(15);
    let mut accepted = 0;
    let sets = spmm_sets(16);
    for _ in 0..40 {
        let mut loops = vec!["i".to_string(), "j".to_string(), "k".to_string()];
        let mut steps = Vec::new();
        let mut fresh = 0;
        for _ in 0..r.gen_range(1..4) {
            let v = loops[r.gen_range(0..loops.len())].clone();
            fresh += 1;
            let (a, b) = (format!("{v}o{fresh}"), format!("{v}n{fresh}"));
            match r.gen_range(0..5) {
                0 | 1 => {
                    steps.push(format!("split({v},{a},{b},{})", r.gen_range(1..9)));
                    let at = loops.iter().position(|l| *l == v).unwrap();
                    loops.splice(at..=at, [a, b]);
                }
                2 => {
                    steps.push(format!("divide({v},{a},{b},{})", r.gen_range(1..5)));
                    let at = loops.iter().position(|l| *l == v).unwrap();
                    loops.splice(at..=at, [a, b]);
                }
                3 if v == "j" => {
                    steps.push(format!("pos(j,{a},A(i,j))"));
                    let at = loops.iter().position(|l| *l == v).unwrap();
                    loops[at] = a;
                }
                _ => {
                    let w = loops[r.gen_range(0..loops.len())].clone();
                    if w != v {
                        steps.push(format!("reorder({v},{w})"));
                    }
                }
            }
        }
        let target = loops[r.gen_range(0..loops.len())].clone();
        let races = ["NoRaces", "Atomics", "Temporary"][r.gen_range(0..3)];
        steps.push(format!("parallelize({target},CPUThread,{races})"));
        let schedule = steps.join(",");
        let (stmt, _) = statement(SPMM, &[("A", "csr")], &sets[0], &[]);
        let applied = Schedule::parse(&schedule)
            .unwrap()
            .apply(&Concrete::new(&stmt).unwrap());
        let Ok(concrete) = applied else {
            continue;
        };
        let Ok(mut kernel) = Kernel::from_concrete(&concrete, ValueType::F64, &split_toolchain())
        else {
            continue;
        };
        accepted += 1;
        for inputs in &sets {
            let (stmt, tensors) = statement(SPMM, &[("A", "csr")], inputs, &[]);
            for threads in [1, 2] {
                kernel.set_threads(threads);
                compare_with_reference(&kernel, &stmt, &tensors, &format!("`{schedule}`"));
            }
        }
    }
    assert!(
        accepted >= 10,
        "only {accepted} random schedules were legal"
    );
}

fn spmv_inputs() -> Vec<(&'static str, Coo)> {
    spmv_sets(17, 6, 5).remove(0)
}

#[track_caller]
fn assert_refused(schedule: &str, needles: &[&str]) {
    let message = schedule_error(SPMV, &[("A", "csr")], &spmv_inputs(), schedule);
    for needle in needles {
        assert!(
            message.contains(needle),
            "`{schedule}`: expected `{needle}` in the error:\n{message}"
        );
    }
}

#[test]
fn every_precondition_failure_says_which_and_why() {
    assert_refused(
        "split(q,q0,q1,4)",
        &[
            "split(q,q0,q1,4)",
            "the variable exists",
            "its loops are i, j",
        ],
    );
    assert_refused(
        "split(i,i0,i1,0)",
        &["the split factor is positive", "it is 0"],
    );
    assert_refused("divide(i,i0,i1,0)", &["the number of parts is positive"]);
    assert_refused("split(i,j,i1,4)", &["fresh names", "`j` already names"]);
    assert_refused(
        "split(i,i0,i1,4),split(i,a,b,2)",
        &["the variable is a loop", "already replaced by i0, i1"],
    );
    assert_refused("split(i,i0,i1,4),reorder(i0,j)", &["directly nested"]);
    assert_refused("order(i,i)", &["listed twice"]);
    assert_refused(
        "parallelize(i,CPUThread,NoRaces),split(i,a,b,2)",
        &["nothing but parallelize follows parallelize"],
    );
    assert_refused(
        "parallelize(i,CPUThread,NoRaces),parallelize(i,CPUVector,NoRaces)",
        &["parallelized once"],
    );
    assert_refused(
        "parallelize(j,CPUThread,NoRaces)",
        &["no output races", "add into one partial sum"],
    );
    assert_refused(
        "fuse(i,j,f),pos(f,p,A(i,j)),parallelize(p,CPUThread,NoRaces)",
        &["no output races", "same entries of `y`"],
    );
    assert_refused(
        "parallelize(j,CPUVector,Atomics)",
        &["SIMD lanes have no atomic updates"],
    );
    // A COO operand at a split row variable is read through a CSR copy instead of being
    // refused (its non-unique rows cannot be located into).
    check_schedule(
        SPMV,
        &[("A", "coo")],
        &[spmv_inputs()],
        &[],
        "split(i,i0,i1,4)",
    );
    assert_refused("pos(j,jp,B(i,j))", &["is not an access", "B(i,j)"]);
    assert_refused(
        "pos(j,jp,x(j))",
        &["level 1 of `x(j)` (dense) is not iterated by position"],
    );
    assert_refused(
        "pos(i,ip,A(i,j))",
        &["level 1 of `A(i,j)` (dense) is not iterated by position"],
    );
    assert_refused("pos(j,jp,A(i,j)),pos(jp,q,A(i,j))", &["coordinate space"]);
    assert_refused("coord(j,jc)", &["was not created by pos"]);
    assert_refused(
        "fuse(i,j,f),pos(f,p,A(i,j)),coord(p,c)",
        &["cannot be searched by coordinate"],
    );
    assert_refused(
        "pos(j,jp,A(i,j)),fuse(i,jp,f)",
        &["both loops are in coordinate space"],
    );
    assert_refused("fuse(j,i,f)", &["directly nested in the outer one"]);
    assert_refused("bound(i,ib,MinExact,3)", &["starts at 0"]);
    assert_refused(
        "unroll(i,4),parallelize(i,CPUThread,NoRaces)",
        &["same loop"],
    );
    assert_refused(
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces)",
        &["needs a GPU target"],
    );
    assert_refused(
        "parallelize(i,GPUBlock,NoRaces)",
        &["a GPUBlock loop holds GPUThread loops", "split it"],
    );
    assert_refused(
        "parallelize(i,GPUThread,NoRaces)",
        &["a GPUThread loop is nested in a GPUBlock loop"],
    );
    assert_refused(
        "split(i,i0,i1,32),split(i1,i2,i3,4),parallelize(i0,GPUBlock,NoRaces),\
         parallelize(i2,GPUThread,NoRaces),parallelize(i3,GPUWarp,NoRaces)",
        &[
            "GPU loops nest as blocks, warps, threads",
            "`i3` is nested in `i2`",
        ],
    );
    assert_refused(
        "split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces),parallelize(i1,GPUThread,NoRaces)",
        &["no GPU loop inside a CPU loop", "`i1` is nested in `i0`"],
    );
    assert_refused(
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces),\
         parallelize(j,CPUVector,ParallelReduction)",
        &["no CPU loop inside a GPU loop"],
    );
    // Found by the statement fuzzer: gcc rejected the OpenMP.
    assert_refused(
        "parallelize(j,CPUThread,Atomics),parallelize(i,CPUVector,IgnoreRaces)",
        &[
            "no thread loop inside a vector loop",
            "`j` is nested in `i`",
        ],
    );
    assert_refused(
        "split(i,i0,i1)",
        &["`split` takes (var, outer, inner, factor)"],
    );
    assert_refused(
        "parallelize(i,CPUCore,NoRaces)",
        &["unknown parallel unit `CPUCore`", "CPUThread"],
    );
    assert_refused(
        "precompute(A(i,j)+x(j),j,j,w)",
        &[
            "the expression is part of the statement",
            "not a subexpression",
        ],
    );
    assert_refused(
        "precompute(A(i,j)*x(j),j,i,w)",
        &["the consumer's or fresh names for them"],
    );
    assert_refused("precompute(A(i,j)*x(j),i,i,A)", &["fresh name"]);
    assert_refused("precompute(A(i,j)*z(j),i,i,w)", &["not a subexpression"]);
    // A workspace's producer sums its private variables alone: fusing one with a loop
    // outside the producer (in either order of the two transformations) is refused.
    for schedule in [
        "fuse(i,j,f),pos(f,fp,A),precompute(A(i,j)*x(j),i,iw)",
        "precompute(A(i,j)*x(j),i,iw),fuse(i,j,f)",
    ] {
        assert_refused(
            schedule,
            &[
                "fused variables belong to the same reduction",
                "producer of workspace `workspace` sums over `j` alone",
            ],
        );
    }
    assert_refused("frobnicate(i)", &["unknown transformation `frobnicate`"]);
}

#[test]
fn reduction_placement_and_storage_order_are_preconditions_of_reorder() {
    let mut r = rng(18);
    let inputs = vec![
        ("A", random_coo(&mut r, &[5, 4], 0.5)),
        ("x", random_coo(&mut r, &[4], 1.0)),
        ("b", random_coo(&mut r, &[5], 1.0)),
    ];
    let message = schedule_error(
        "y(i) = A(i,j) * x(j) + b(i)",
        &[("A", "csr")],
        &inputs,
        "reorder(i,j)",
    );
    assert!(message.contains("does not distribute over"), "{message}");
    let inputs = vec![
        ("A", random_coo(&mut r, &[5, 4], 0.5)),
        ("x", random_coo(&mut r, &[4], 1.0)),
    ];
    let message = schedule_error(SPMV, &[("A", "ell")], &inputs, "reorder(i,j)");
    assert!(
        message.contains("storage order") || message.contains("structured storage"),
        "{message}"
    );
    // A structured level's loop stays in place but may run on threads, where its
    // iterations write apart: BCSR's block rows under SpMV, not ELL's slots (each slot
    // adds to every row).
    let message = schedule_error(SPMV, &[("A", "bcsr:2x2")], &inputs, "reorder(i_blk,j_blk)");
    assert!(message.contains("structured storage"), "{message}");
    let message = schedule_error(
        SPMV,
        &[("A", "ell")],
        &inputs,
        "parallelize(A_o0_slot,CPUThread,NoRaces)",
    );
    assert!(message.contains("race"), "{message}");
    for (format, blocks) in [("bcsr:2x3", "i_blk"), ("sell:4", "i_blk")] {
        for schedule in ["dynamic", "static", "balanced"] {
            check_schedule(
                SPMV,
                &[("A", format)],
                &spmv_sets(31, 13, 7),
                &[],
                &format!("parallelize({blocks},CPUThread,NoRaces,{schedule},2)"),
            );
        }
    }
}

#[test]
fn asserted_bounds_are_checked_when_the_kernel_runs() {
    let (stmt, tensors) = statement(SPMM, &[("A", "csr")], &spmm_sets(19)[0], &[]);
    let kernel = Kernel::scheduled(
        stmt,
        &Schedule::parse("bound(k,kb,MaxExact,32)").unwrap(),
        ValueType::F64,
        &Toolchain::default(),
    )
    .unwrap();
    let refs: Vec<_> = tensors.iter().collect();
    let message = kernel.run(&refs).unwrap_err().to_string();
    assert!(message.contains("exactly 32 iterations"), "{message}");
}

/// `taco` applied as TACO spells it and `sparsec` as sparsec does: both give the same
/// concrete statement (and, when `same_parse`, the same transformations), and the TACO
/// spelling computes the reference.
#[track_caller]
fn taco_spelling(
    expr: &str,
    formats: &[(&str, &str)],
    sets: &[Vec<(&str, Coo)>],
    taco: &str,
    sparsec: &str,
    same_parse: bool,
) {
    let parse = |text: &str| Schedule::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let (taco_parsed, sparsec_parsed) = (parse(taco), parse(sparsec));
    if same_parse {
        assert_eq!(taco_parsed, sparsec_parsed, "`{taco}` and `{sparsec}`");
    }
    let (stmt, _) = statement(expr, formats, &sets[0], &[]);
    let concrete = Concrete::new(&stmt).unwrap();
    // The same kernel (a fresh producer name is only an alias of the consumer's loop).
    let lowered = |s: &Schedule, text: &str| {
        let scheduled = s
            .apply(&concrete)
            .unwrap_or_else(|e| panic!("{expr} with {text}: {e}"));
        sparsec::lower::lower(&scheduled).unwrap_or_else(|e| panic!("{expr} with {text}: {e}"))
    };
    assert_eq!(
        lowered(&taco_parsed, taco),
        lowered(&sparsec_parsed, sparsec),
        "`{taco}` and `{sparsec}` schedule {expr} differently"
    );
    check_schedule(expr, formats, sets, &[], taco);
}

#[test]
fn taco_spellings_of_pos_bound_and_precompute() {
    let sets = spmv_sets(30, 13, 11);
    // `pos` by tensor name: the tensor's only access.
    taco_spelling(
        SPMV,
        &[("A", "csr")],
        &sets,
        "pos(j,jp,A),split(jp,jp0,jp1,4)",
        "pos(j,jp,A(i,j)),split(jp,jp0,jp1,4)",
        false,
    );
    // TACO writes bound's value before its kind.
    taco_spelling(
        SPMV,
        &[("A", "csr")],
        &sets,
        "bound(i,ib,13,MaxExact)",
        "bound(i,ib,MaxExact,13)",
        true,
    );
    taco_spelling(
        SPMV,
        &[("A", "csr")],
        &sets,
        "bound(i, ib, 16, MaxConstraint).parallelize(ib, CPUThread, NoRaces)",
        "bound(i,ib,MaxConstraint,16),parallelize(ib,CPUThread,NoRaces)",
        true,
    );
    // TACO's `-s` help example: no workspace name, a fresh one is made up.
    taco_spelling(
        SPMV,
        &[("A", "csr")],
        &sets,
        "precompute(A(i,j)*x(j),i,i)",
        "precompute(A(i,j)*x(j),i,i,workspace)",
        false,
    );
    // A fresh producer variable names the consumer's loop.
    taco_spelling(
        SPMV,
        &[("A", "csr")],
        &sets,
        "precompute(A(i,j)*x(j),i,iw,w)",
        "precompute(A(i,j)*x(j),i,i,w)",
        false,
    );
    let mut r = rng(31);
    let mttkrp = vec![vec![
        ("B", random_coo(&mut r, &[4, 5, 6], 0.2)),
        ("C", random_coo(&mut r, &[5, 3], 1.0)),
        ("D", random_coo(&mut r, &[6, 3, 2], 1.0)),
    ]];
    taco_spelling(
        "Y(i,j,m) = B(i,k,l) * D(l,j,m) * C(k,j)",
        &[("B", "sss")],
        &mttkrp,
        "order(i,k,l,j,m),precompute(B(i,k,l)*D(l,j,m),{j,m},{j,m},w)",
        "order(i,k,l,j,m),precompute(B(i,k,l)*D(l,j,m),(j,m),(j,m),w)",
        true,
    );
}

#[test]
fn unnamed_workspaces_do_not_collide() {
    // A tensor already called `workspace`, and two unnamed precomputes.
    let mut r = rng(32);
    let sets = vec![vec![
        ("B", random_coo(&mut r, &[4, 5, 6, 3], 0.2)),
        ("workspace", random_coo(&mut r, &[5, 2], 1.0)),
        ("D", random_coo(&mut r, &[6, 2], 1.0)),
        ("E", random_coo(&mut r, &[3, 2], 1.0)),
    ]];
    let expr = "A(i,j) = B(i,k,l,m) * workspace(k,j) * D(l,j) * E(m,j)";
    taco_spelling(
        expr,
        &[("B", "ssss")],
        &sets,
        "order(i,k,l,m,j),precompute(B(i,k,l,m)*E(m,j)*D(l,j),j,j),\
         precompute(B(i,k,l,m)*E(m,j),j,j)",
        "order(i,k,l,m,j),precompute(B(i,k,l,m)*E(m,j)*D(l,j),j,j,workspace1),\
         precompute(B(i,k,l,m)*E(m,j),j,j,workspace2)",
        false,
    );
}

#[test]
fn taco_directives_not_parallel_mergeby_and_assemble() {
    let sets = spmv_sets(33, 9, 7);
    let parsed = Schedule::parse(
        "parallelize(i,NotParallel,NoRaces),mergeby(j,Gallop),mergeby(i,TwoFinger),assemble(y,Insert)",
    )
    .unwrap();
    assert_eq!(parsed.transforms[0], Transform::Serial { var: "i".into() });
    assert_eq!(
        parsed.transforms[1],
        Transform::MergeBy {
            var: "j".into(),
            strategy: MergeStrategy::Gallop
        }
    );
    let (stmt, _) = statement(SPMV, &[("A", "csr")], &sets[0], &[]);
    let concrete = parsed.apply(&Concrete::new(&stmt).unwrap()).unwrap();
    let merge_of = |name: &str| {
        concrete
            .vars()
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.tags.merge)
    };
    assert_eq!(merge_of("j"), Some(MergeStrategy::Gallop));
    assert_eq!(merge_of("i"), Some(MergeStrategy::TwoFinger));
    assert!(concrete.vars().iter().all(|v| v.tags.parallel.is_none()));
    check_schedule(
        SPMV,
        &[("A", "csr")],
        &sets,
        &[],
        "split(i,i0,i1,4),parallelize(i1,NotParallel,IgnoreRaces),mergeby(j,TwoFinger),\
         parallelize(i0,CPUThread,NoRaces),assemble(y,Append)",
    );
    // SpMV's `j` loop iterates one operand: there is nothing to gallop over.
    let message = schedule_error(SPMV, &[("A", "csr")], &sets[0], "mergeby(j,Gallop)");
    assert!(
        message.contains("mergeby(j,Gallop): precondition failed"),
        "{message}"
    );
    // Sparse output, intersection: both merge strategies compute the same result.
    let mut r = rng(34);
    let add_sets: Vec<Vec<(&str, Coo)>> = (0..3)
        .map(|_| {
            vec![
                ("A", random_coo(&mut r, &[8, 9], 0.3)),
                ("B", random_coo(&mut r, &[8, 9], 0.3)),
            ]
        })
        .collect();
    for strategy in ["TwoFinger", "Gallop"] {
        check_schedule(
            "C(i,j) = A(i,j) * B(i,j)",
            &[("A", "csr"), ("B", "csr"), ("C", "csr")],
            &add_sets,
            &[],
            &format!("mergeby(j,{strategy}),assemble(C,Append)"),
        );
    }
}

/// `mergeby(j,Gallop)` intersects by exponential and binary search: the same results as
/// two fingers on short-against-long segments, empty and one-entry segments, duplicates
/// (non-unique levels), three operands, sparse and dense outputs, 1 and 2 threads; and
/// different code.
#[test]
fn galloping_intersections() {
    let mut r = rng(36);
    let skewed = generate::skewed_rows(40, 60, 1.0, 1.2, 5).unwrap();
    let sets: Vec<Vec<(&str, Coo)>> = vec![
        vec![
            ("A", random_coo(&mut r, &[40, 60], 0.5)),
            ("B", random_coo(&mut r, &[40, 60], 0.05)),
            ("D", random_coo(&mut r, &[40, 60], 0.3)),
        ],
        vec![
            ("A", skewed.clone()),
            ("B", random_coo(&mut r, &[40, 60], 0.02)),
            ("D", skewed),
        ],
        vec![
            ("A", random_coo(&mut r, &[40, 60], 0.0)),
            ("B", random_coo(&mut r, &[40, 60], 0.9)),
            ("D", random_coo(&mut r, &[40, 60], 1.0)),
        ],
    ];
    for (expr, formats) in [
        (
            "C(i,j) = A(i,j) * B(i,j)",
            vec![("A", "csr"), ("B", "csr"), ("C", "csr")],
        ),
        (
            "C(i,j) = A(i,j) * B(i,j)",
            vec![("A", "dcsr"), ("B", "csr"), ("C", "dense")],
        ),
        ("y(i) = A(i,j) * B(i,j)", vec![("A", "du"), ("B", "ds")]),
        (
            "C(i,j) = A(i,j) * B(i,j) * D(i,j)",
            vec![("A", "csr"), ("B", "csr"), ("D", "csr"), ("C", "csr")],
        ),
        ("z = A(i,j) * B(i,j)", vec![("A", "ss"), ("B", "ss")]),
    ] {
        let sets: Vec<Vec<(&str, Coo)>> = sets
            .iter()
            .map(|set| {
                set.iter()
                    .filter(|(name, _)| expr.contains(&format!("{name}(")))
                    .cloned()
                    .collect()
            })
            .collect();
        check_schedule(expr, &formats, &sets, &[], "mergeby(j,Gallop)");
        if !expr.starts_with('z') {
            check_schedule(
                expr,
                &formats,
                &sets,
                &[],
                "mergeby(j,Gallop),parallelize(i,CPUThread,NoRaces)",
            );
        }
        let source = |schedule: &str| {
            let (stmt, _) = statement(expr, &formats, &sets[0], &[]);
            let parsed = Schedule::parse(schedule).unwrap();
            let kernel = Kernel::scheduled(stmt, &parsed, ValueType::F64, &Toolchain::default());
            kernel.unwrap().kernel_source().to_string()
        };
        assert_ne!(
            source("mergeby(j,Gallop)"),
            source("mergeby(j,TwoFinger)"),
            "{expr}"
        );
    }
}

/// A variable a schedule computes is located in every operand that stores it; layouts
/// that cannot be located into (a non-unique level, a level below one, coordinates
/// another operand's blocks compute) are read through their general equivalent.
#[test]
fn computed_variables_read_unlocatable_layouts_through_copies() {
    let mut r = rng(38);
    let vectors: Vec<Vec<(&str, Coo)>> = (0..3)
        .map(|k| {
            let d = [0.5, 0.0, 1.0][k];
            vec![
                ("A", random_coo(&mut r, &[9], d)),
                ("B", random_coo(&mut r, &[9], d)),
            ]
        })
        .collect();
    for fb in ["u", "s", "h"] {
        check_schedule(
            "y(i) = A(i) * B(i)",
            &[("A", "h"), ("B", fb), ("y", "sv")],
            &vectors,
            &[],
            "split(i,i0,i1,4)",
        );
    }
    let pairs: Vec<Vec<(&str, Coo)>> = matrices(39, 7, 6)
        .into_iter()
        .map(|a| vec![("A", a.clone()), ("D", a)])
        .collect();
    for fa in ["coo", "uq", "csr"] {
        check_schedule(
            "z = A(i,j) * D(i,j)",
            &[("A", fa), ("D", "bcsr:3x1")],
            &pairs,
            &[],
            "",
        );
        check_schedule(
            "C(i,j) = A(i,j) * D(i,j)",
            &[("A", fa), ("D", "dense")],
            &pairs,
            &[],
            "fuse(i,j,f),split(f,f0,f1,5)",
        );
    }
}

/// Found by the statement fuzzer: fusing a free variable with a variable summed into a
/// temporary per value of it summed across values (and used the free one before its
/// recovery); it is a precondition failure.
#[test]
fn fusing_into_a_reduction_evaluated_per_value_is_refused() {
    let mut r = rng(37);
    let inputs = vec![
        ("A", random_coo(&mut r, &[6], 0.5)),
        ("B", random_coo(&mut r, &[], 1.0)),
        ("C", random_coo(&mut r, &[11, 6], 0.5)),
    ];
    let message = schedule_error(
        "Y = (A(i) + B) * A(i) - (C(j,i) - 3.25) * A(i)",
        &[("C", "hb:0,1")],
        &inputs,
        "fuse(i,j,f1)",
    );
    assert!(
        message.contains("fuse(i,j,f1): precondition failed")
            && message.contains("`j` must stay inside `i`"),
        "{message}"
    );
    // Two sums in different terms cannot share one loop either (this generated C that
    // did not compile).
    let inputs = vec![
        ("A", random_coo(&mut r, &[4], 0.5)),
        ("B", random_coo(&mut r, &[5], 0.5)),
    ];
    let message = schedule_error("Y = -(A(j) * A(j) - B(k))", &[], &inputs, "fuse(j,k,f1)");
    assert!(
        message.contains("fused variables belong to the same reduction"),
        "{message}"
    );
    // A position space over an operand the loop order transposes (this panicked).
    let inputs = vec![
        ("A", random_coo(&mut r, &[2, 4, 1, 6, 4], 0.3)),
        ("B", random_coo(&mut r, &[], 1.0)),
        ("C", random_coo(&mut r, &[], 1.0)),
    ];
    let message = schedule_error(
        "Y(j,l,k) = (A(i,k,j,m,l) + B) * C",
        &[("A", "dssss")],
        &inputs,
        "pos(j,jp1,A(i,k,j,m,l)),coord(jp1,jp1c2)",
    );
    assert!(
        message.contains("the operand of a position space is read in its storage order"),
        "{message}"
    );
}

#[test]
fn malformed_taco_directives_name_the_problem() {
    let mut r = rng(35);
    let twice = vec![("A", random_coo(&mut r, &[5, 5], 0.4))];
    let message = schedule_error(
        "y(i) = A(i,j) * A(j,i)",
        &[("A", "csr")],
        &twice,
        "pos(j,jp,A)",
    );
    assert!(
        message.contains("read 2 times") && message.contains("A(i,j)"),
        "{message}"
    );
    assert_refused("pos(j,jp,B)", &["`B` is not read by the right-hand side"]);
    assert_refused("pos(j,jp,7)", &["argument 3 of `pos`", "tensor name"]);
    assert_refused(
        "bound(i,ib,10,Exactly)",
        &["unknown bound kind `Exactly`", "MaxExact"],
    );
    assert_refused("bound(i,ib,MaxExact,Big)", &["must be a number"]);
    assert_refused("precompute(A(i,j)*x(j),{i,j)", &["expected `,` or `}`"]);
    assert_refused(
        "precompute(A(i,j)*x(j),i)",
        &["`precompute` takes", "got 2 arguments"],
    );
    assert_refused(
        "precompute(A(i,j)*x(j),i,{iw,iv},w)",
        &["the consumer's or fresh names for them"],
    );
    assert_refused(
        "parallelize(i,NotParallel,Sometimes)",
        &["unknown race strategy `Sometimes`"],
    );
    assert_refused("parallelize(i,Sequential,NoRaces)", &["NotParallel"]);
    assert_refused(
        "parallelize(q,NotParallel,NoRaces)",
        &["the variable exists"],
    );
    assert_refused(
        "parallelize(i,CPUThread,NoRaces),parallelize(i,NotParallel,NoRaces)",
        &["already parallel"],
    );
    assert_refused(
        "mergeby(j,Leapfrog)",
        &["unknown merge strategy `Leapfrog`", "Gallop"],
    );
    assert_refused("mergeby(q,Gallop)", &["the variable exists"]);
    assert_refused("assemble(A,Append)", &["`A` is not the output", "`y`"]);
    assert_refused(
        "assemble(y,Overwrite)",
        &["unknown assemble strategy", "Insert"],
    );
}

/// Found by the schedule fuzz target: U+0085 (NEXT LINE) is whitespace two bytes long, and
/// skipping it one byte at a time sliced the text inside it (a panic).
#[test]
fn multibyte_whitespace_and_characters_in_schedules() {
    assert!(Schedule::parse("G\u{85}").is_err());
    for text in ["é", "split(é", "split(i,\u{2028}", "précompute(i)"] {
        let err = Schedule::parse(text).expect_err(text);
        let span = err.span;
        let end = span.offset() + span.len();
        assert!(
            text.is_char_boundary(span.offset())
                && (end > text.len() || text.is_char_boundary(end)),
            "{text:?}: span {span:?} cuts a character"
        );
    }
    // Whitespace alone is the empty schedule, whatever its encoding.
    assert!(Schedule::parse("\u{85}\u{3000} ")
        .unwrap()
        .transforms
        .is_empty());
    let spaced = Schedule::parse("split(i,\u{a0}i0,\u{85}i1,4)\u{3000}").unwrap();
    assert_eq!(spaced, Schedule::parse("split(i,i0,i1,4)").unwrap());
}

/// A reduction over no stored entries is a structural zero where it is a factor of a
/// product or a numerator: it annihilates infinities and NaN, and its sign is +0, on one
/// and two threads and with the reduction loop itself on threads (found by the statement
/// fuzzer: `0 * inf` made NaN, and an empty sum divided by 0 made NaN).
#[test]
fn empty_reductions_annihilate_the_products_they_are_factors_of() {
    let mut r = rng(33);
    let mut q = random_coo(&mut r, &[7, 5], 0.4);
    for (e, v) in q.values.iter_mut().enumerate() {
        *v = [f64::INFINITY, f64::NEG_INFINITY, -0.0, 1.5][e % 4];
    }
    let x = random_coo(&mut r, &[7], 1.0);
    let sets: Vec<Vec<(&str, Coo)>> = [0.3, 0.0, 1.0]
        .iter()
        .map(|&d| {
            let mut p = random_coo(&mut r, &[7, 6], d);
            // Rows 2 and 5 of P stay empty.
            let keep: Vec<usize> = (0..p.values.len())
                .filter(|&e| p.coords[2 * e] % 3 != 2)
                .collect();
            p.coords = keep
                .iter()
                .flat_map(|&e| [p.coords[2 * e], p.coords[2 * e + 1]])
                .collect();
            p.values = keep.iter().map(|&e| p.values[e]).collect();
            vec![("P", p), ("Q", q.clone()), ("x", x.clone())]
        })
        .collect();
    for schedule in [
        "parallelize(i,CPUThread,NoRaces)",
        "parallelize(j,CPUThread,Temporary)",
        "parallelize(j,CPUThread,Atomics)",
    ] {
        for expr in [
            "y(i) = P(i,j) * Q(i,k) + x(i)",
            "y(i) = -(P(i,j) * Q(i,k)) / x(i) - x(i)",
            "y(i) = P(i,j) / 0 + x(i)",
        ] {
            check_schedule(expr, &[("P", "csr"), ("Q", "csr")], &sets, &[], schedule);
        }
    }
}

/// `pos` over fused variables of every compressed format, fused in either nesting
/// (`fuse(i,j,f),fuse(f,k,g)` is the paper's TTV schedule; `fuse(j,k,f),fuse(i,f,g)` the
/// same loops), with a split on threads, and `coord` back from a position space; `pos`
/// of a variable a split or `coord` made is refused by name.
#[test]
fn position_spaces_of_fused_levels_of_every_compressed_format() {
    let mut r = rng(41);
    let sets: Vec<Vec<(&str, Coo)>> = [0.1, 0.01, 0.0]
        .iter()
        .map(|&d| {
            vec![
                ("B", random_coo(&mut r, &[7, 6, 5], d)),
                ("c", random_coo(&mut r, &[5], 1.0)),
            ]
        })
        .collect();
    let ttv = "A(i,j) = B(i,j,k) * c(k)";
    for format in ["sss", "dss", "csf", "coo"] {
        for schedule in [
            "fuse(i,j,f),fuse(f,k,g),pos(g,gp,B),split(gp,g0,g1,8),\
             parallelize(g0,CPUThread,Atomics)",
            "fuse(j,k,f),fuse(i,f,g),pos(g,gp,B(i,j,k)),split(gp,g0,g1,4)",
            "fuse(j,k,f),pos(f,fp,B),split(fp,f0,f1,3),parallelize(i,CPUThread,NoRaces)",
            "fuse(i,j,f),pos(f,fp,B),split(fp,f0,f1,5)",
            "pos(k,kp,B),coord(kp,kc),split(kc,k0,k1,2)",
        ] {
            check_schedule(ttv, &[("B", format)], &sets, &[], schedule);
        }
    }
    let sets: Vec<Vec<(&str, Coo)>> = [0.2, 0.0]
        .iter()
        .map(|&d| {
            vec![
                ("B", random_coo(&mut r, &[5, 4, 3, 4], d)),
                ("c", random_coo(&mut r, &[4], 1.0)),
            ]
        })
        .collect();
    check_schedule(
        "A(i,j,k) = B(i,j,k,l) * c(l)",
        &[("B", "ssss")],
        &sets,
        &[],
        "fuse(i,j,f),fuse(f,k,g),fuse(g,l,h),pos(h,hp,B),split(hp,h0,h1,4),\
         parallelize(h0,CPUThread,Atomics)",
    );
    for format in ["csr", "dcsr", "coo"] {
        check_schedule(
            SPMV,
            &[("A", format)],
            &spmv_sets(42, 23, 17),
            &[],
            "fuse(i,j,f),pos(f,fp,A),split(fp,f0,f1,4),parallelize(f0,CPUThread,Atomics)",
        );
    }
    for (schedule, made) in [
        (
            "split(i,i0,i1,4),pos(i1,ip,B)",
            "`i1` was made by split or divide",
        ),
        (
            "pos(i,ip,B),coord(ip,ic),pos(ic,icp,B)",
            "`ic` was made by coord",
        ),
    ] {
        let message = schedule_error(ttv, &[("B", "sss")], &sets_of_ttv(&mut r), schedule);
        assert!(
            message.contains("the variable is an access's variable or a fuse of them")
                && message.contains(made),
            "{message}"
        );
    }
}

fn sets_of_ttv(r: &mut rand::rngs::StdRng) -> Vec<(&'static str, Coo)> {
    vec![
        ("B", random_coo(r, &[7, 6, 5], 0.1)),
        ("c", random_coo(r, &[5], 1.0)),
    ]
}

/// A `CPUVector` loop whose iterations emit a sparse output's entries: lanes cannot return
/// when the entry buffer cannot grow, so they skip the rest (found by the statement fuzzer:
/// gcc refused a `return` inside the `omp simd` loop).
#[test]
fn vector_loops_that_emit_entries() {
    let mut r = rng(43);
    let sets: Vec<Vec<(&str, Coo)>> = [0.4, 0.0]
        .iter()
        .map(|&d| vec![("A", random_coo(&mut r, &[6, 5], d))])
        .collect();
    check_schedule(
        "Y(k,j) = A(k,i)",
        &[("A", "csr"), ("Y", "coo:1,0")],
        &sets,
        &[("j", 3)],
        "parallelize(k,CPUVector,NoRaces)",
    );
}
