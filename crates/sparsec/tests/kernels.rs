//! Differential tests of generated kernels against the reference evaluator.

mod common;
use common::*;
use rand::Rng;
use sparsec::format::Format;
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::tensor::{Coo, Tensor, ValueType};

#[test]
fn spmv_csr() {
    let mut r = rng(1);
    let a = random_coo(&mut r, &[30, 20], 0.1);
    let x = random_coo(&mut r, &[20], 1.0);
    check(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr")],
        &[("A", a), ("x", x)],
    );
}

fn fmt_cases() -> Vec<&'static str> {
    vec![
        "dd", "csr", "csc", "uq", "dcsr", "dcsc", "dh", "hh", "ds:1,0", "ss:1,0", "db", "bs",
    ]
}

#[test]
fn spmv_every_matrix_format() {
    let mut r = rng(2);
    for f in fmt_cases() {
        for (m, n, d) in [
            (30, 20, 0.1),
            (1, 1, 1.0),
            (1, 40, 0.3),
            (40, 1, 0.3),
            (5, 5, 0.0),
        ] {
            let a = random_coo(&mut r, &[m, n], d);
            let x = random_coo(&mut r, &[n], 1.0);
            check("y(i) = A(i,j) * x(j)", &[("A", f)], &[("A", a), ("x", x)]);
            let a = random_coo(&mut r, &[m, n], d);
            let x = random_coo(&mut r, &[n], 0.4);
            check(
                "y(i) = A(i,j) * x(j)",
                &[("A", f), ("x", "s")],
                &[("A", a), ("x", x)],
            );
            let a = random_coo(&mut r, &[m, n], d);
            let x = random_coo(&mut r, &[n], 0.4);
            check(
                "y(i) = A(i,j) * x(j)",
                &[("A", f), ("x", "s"), ("y", "s")],
                &[("A", a), ("x", x)],
            );
        }
    }
}

#[test]
fn add_every_pair_of_formats() {
    let mut r = rng(3);
    for f in fmt_cases() {
        for g in fmt_cases() {
            let b = random_coo(&mut r, &[12, 9], 0.2);
            let c = random_coo(&mut r, &[12, 9], 0.2);
            let out = ["dd", "csr", "dcsr"][(b.len() + c.len()) % 3];
            check(
                "A(i,j) = B(i,j) + C(i,j)",
                &[("B", f), ("C", g), ("A", out)],
                &[("B", b.clone()), ("C", c.clone())],
            );
            check(
                "A(i,j) = B(i,j) - C(i,j)",
                &[("B", f), ("C", g), ("A", out)],
                &[("B", b.clone()), ("C", c.clone())],
            );
            check(
                "A(i,j) = B(i,j) * C(i,j)",
                &[("B", f), ("C", g), ("A", out)],
                &[("B", b.clone()), ("C", c.clone())],
            );
        }
    }
}

#[test]
fn linear_algebra_kernels() {
    let mut r = rng(4);
    let a = random_coo(&mut r, &[25, 18], 0.15);
    let b = random_coo(&mut r, &[18, 22], 0.15);
    let c = random_coo(&mut r, &[22, 7], 0.3);
    let x = random_coo(&mut r, &[18], 1.0);
    let bv = random_coo(&mut r, &[25], 1.0);
    let dense_b = random_coo(&mut r, &[18, 6], 1.0);
    let d1 = random_coo(&mut r, &[25, 5], 1.0);
    let d2 = random_coo(&mut r, &[5, 18], 1.0);
    // Residual, SpMV transposed, SpMM, SDDMM.
    check(
        "y(i) = b(i) - A(i,j) * x(j)",
        &[("A", "csr")],
        &[("A", a.clone()), ("b", bv.clone()), ("x", x.clone())],
    );
    let xt = random_coo(&mut r, &[25], 1.0);
    check(
        "y(j) = A(i,j) * x(i)",
        &[("A", "csr")],
        &[("A", a.clone()), ("x", xt)],
    );
    check(
        "C(i,k) = A(i,j) * B(j,k)",
        &[("A", "csr")],
        &[("A", a.clone()), ("B", dense_b)],
    );
    check(
        "C(i,j) = A(i,j) * D(i,k) * E(k,j)",
        &[("A", "csr"), ("C", "csr")],
        &[("A", a.clone()), ("D", d1), ("E", d2)],
    );
    // SpGEMM into CSR, DCSR and dense; A^T A; A*B*C.
    for out in ["csr", "dcsr", "dd"] {
        check(
            "C(i,k) = A(i,j) * B(j,k)",
            &[("A", "csr"), ("B", "csr"), ("C", out)],
            &[("A", a.clone()), ("B", b.clone())],
        );
    }
    check(
        "C(i,j) = A(k,i) * A(k,j)",
        &[("A", "csr"), ("C", "csr")],
        &[("A", a.clone())],
    );
    check(
        "D(i,l) = A(i,j) * B(j,k) * C(k,l)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr"), ("D", "csr")],
        &[("A", a.clone()), ("B", b.clone()), ("C", c)],
    );
    // Transposes between layouts.
    check(
        "B(j,i) = A(i,j)",
        &[("A", "csr"), ("B", "csr")],
        &[("A", a.clone())],
    );
    check(
        "B(i,j) = A(i,j)",
        &[("A", "csr"), ("B", "csc")],
        &[("A", a.clone())],
    );
    // Inner product into a scalar, scaled sums, broadcast.
    let a2 = random_coo(&mut r, &[25, 18], 0.2);
    check(
        "s = A(i,j) * B(i,j)",
        &[("A", "csr"), ("B", "dcsr")],
        &[("A", a.clone()), ("B", a2.clone())],
    );
    check(
        "B(i,j) = 2 * A(i,j) + -C(i,j) / 4",
        &[("A", "csr"), ("C", "csr"), ("B", "csr")],
        &[("A", a.clone()), ("C", a2.clone())],
    );
    check(
        "y(i) = A(i,j) + b(i)",
        &[("A", "csr")],
        &[("A", a.clone()), ("b", bv.clone())],
    );
    check_with(
        "B(i,j) = b(i)",
        &[("B", "dd")],
        &[("b", bv.clone())],
        &[("j", 4)],
    );
    check_with("B(i,j) = b(i)", &[("B", "csr")], &[("b", bv)], &[("j", 3)]);
    check(
        "y(i) = A(i,j) * x(j) + A(i,k) * x(k)",
        &[("A", "dcsr"), ("x", "s")],
        &[("A", a.clone()), ("x", random_coo(&mut r, &[18], 0.5))],
    );
    check(
        "B(i,j) = A(i,j) + A(j,i)",
        &[("A", "csr"), ("B", "csr")],
        &[("A", random_coo(&mut r, &[15, 15], 0.2))],
    );
}

#[test]
fn tensor_kernels() {
    let mut r = rng(5);
    let b3 = random_coo(&mut r, &[8, 7, 6], 0.08);
    let c = random_coo(&mut r, &[6], 1.0);
    let m = random_coo(&mut r, &[5, 6], 1.0);
    let c2 = random_coo(&mut r, &[7, 4], 1.0);
    let d2 = random_coo(&mut r, &[6, 4], 1.0);
    for f in ["sss", "dss", "ucq", "sss:2,0,1", "ddd", "hhh"] {
        check(
            "A(i,j) = B(i,j,k) * c(k)",
            &[("B", f), ("A", "csr")],
            &[("B", b3.clone()), ("c", c.clone())],
        );
        check(
            "A(i,j,l) = B(i,j,k) * C(l,k)",
            &[("B", f), ("A", "sss")],
            &[("B", b3.clone()), ("C", m.clone())],
        );
        check(
            "A(i,j,l) = B(i,j,k) * C(l,k)",
            &[("B", f)],
            &[("B", b3.clone()), ("C", m.clone())],
        );
        check(
            "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
            &[("B", f)],
            &[("B", b3.clone()), ("C", c2.clone()), ("D", d2.clone())],
        );
        check(
            "s = B(i,j,k) * C(i,j,k)",
            &[("B", f), ("C", "sss")],
            &[
                ("B", b3.clone()),
                ("C", random_coo(&mut r, &[8, 7, 6], 0.1)),
            ],
        );
    }
    let c3 = random_coo(&mut r, &[8, 7, 6], 0.1);
    check(
        "A(i,j,k) = B(i,j,k) + C(i,j,k)",
        &[("B", "sss"), ("C", "sss:2,1,0"), ("A", "sss")],
        &[("B", b3.clone()), ("C", c3)],
    );
    // MTTKRP of order 4 and 5.
    let b4 = random_coo(&mut r, &[5, 4, 6, 3], 0.1);
    let b5 = random_coo(&mut r, &[4, 3, 5, 3, 4], 0.05);
    let f = |r: &mut rand::rngs::StdRng, n| random_coo(r, &[n, 3], 1.0);
    check(
        "A(i,j) = B(i,k,l,m) * C(k,j) * D(l,j) * E(m,j)",
        &[("B", "ssss")],
        &[
            ("B", b4),
            ("C", f(&mut r, 4)),
            ("D", f(&mut r, 6)),
            ("E", f(&mut r, 3)),
        ],
    );
    check(
        "A(i,j) = B(i,k,l,m,n) * C(k,j) * D(l,j) * E(m,j) * F(n,j)",
        &[("B", "sssss")],
        &[
            ("B", b5),
            ("C", f(&mut r, 3)),
            ("D", f(&mut r, 5)),
            ("E", f(&mut r, 3)),
            ("F", f(&mut r, 4)),
        ],
    );
    // All-sparse order-7 expression.
    let dims = [3, 2, 3, 2, 3, 2, 2];
    let x = random_coo(&mut r, &dims, 0.1);
    let y = random_coo(&mut r, &dims, 0.1);
    check(
        "A(a,b,c,d,e,f,g) = X(a,b,c,d,e,f,g) * Y(a,b,c,d,e,f,g) + X(a,b,c,d,e,f,g)",
        &[("X", "sssssss"), ("Y", "sssssss"), ("A", "sssssss")],
        &[("X", x), ("Y", y)],
    );
}

#[test]
fn structured_formats_in_linear_position() {
    let mut r = rng(6);
    for f in ["ell", "dia"] {
        for (m, n, d) in [
            (30, 20, 0.1),
            (1, 1, 1.0),
            (1, 40, 0.3),
            (40, 1, 0.3),
            (5, 5, 0.0),
            (9, 12, 0.2),
        ] {
            let a = random_coo(&mut r, &[m, n], d);
            let x = random_coo(&mut r, &[n], 1.0);
            check(
                "y(i) = A(i,j) * x(j)",
                &[("A", f)],
                &[("A", a.clone()), ("x", x)],
            );
            let xs = random_coo(&mut r, &[n], 0.3);
            check(
                "y(i) = A(i,j) * x(j)",
                &[("A", f), ("x", "s"), ("y", "s")],
                &[("A", a.clone()), ("x", xs)],
            );
            let b = random_coo(&mut r, &[n, 3], 1.0);
            check(
                "C(i,k) = A(i,j) * B(j,k)",
                &[("A", f)],
                &[("A", a.clone()), ("B", b)],
            );
            let xt = random_coo(&mut r, &[m], 1.0);
            check(
                "y(j) = -2 * A(i,j) * x(i)",
                &[("A", f)],
                &[("A", a), ("x", xt)],
            );
        }
    }
}

/// Structured layouts (ELL, DIA, BCSR) where their slots, diagonals or blocks cannot be
/// summed in place (under `+`, `-`, a denominator, a reduction, next to constants) or
/// where other operands impose another loop order: read through a converted copy or
/// lowered with located blocks, and always equal to the reference.
#[test]
fn structured_formats_under_addition_and_in_conflicting_orders() {
    let mut r = rng(62);
    let structured = [
        "ell", "dia", "bcsr:2x2", "bcsr:2x3", "bcsr:1x3", "sell:3", "sell:1",
    ];
    let statements = [
        "y(i) = B(i,l) + 1",
        "C(i,j) = A(i,j) + B(i,j)",
        "C(i,j) = A(i,j) - 2 * B(i,j) + 3",
        "C(i,j) = A(i,j) * B(j,i)",
        "y(i) = A(i,j) - B(j,i)",
        "y(i) = A(i,j) * x(j) + B(i,j) * x(j)",
        "z = A(j,l) - B(i,l)",
        "y(i) = x(i) / (B(i,l) + 1)",
    ];
    for (m, n, d) in [(7, 6, 0.4), (1, 1, 1.0), (5, 5, 0.0), (9, 4, 0.2)] {
        // Each structured format against another one and against CSR.
        for (k, fa) in structured.iter().enumerate() {
            for fb in [structured[(k + 1) % structured.len()], "csr"] {
                for expr in statements {
                    // Square shapes for the statements that transpose an operand.
                    let n = if expr.contains("(j,i)") { m } else { n };
                    let mut inputs = vec![("B", random_coo(&mut r, &[m, n], d))];
                    if expr.contains("A(") {
                        inputs.push(("A", random_coo(&mut r, &[m, n], d)));
                    }
                    if expr.contains("x(") {
                        let len = if expr.contains("x(i)") { m } else { n };
                        inputs.push(("x", random_coo(&mut r, &[len], 1.0)));
                    }
                    check(expr, &[("A", fb), ("B", fa)], &inputs);
                }
            }
        }
    }
}

/// The note that a structured operand is converted comes from its layout being replaced
/// by the plain equivalent, visible through the kernel's operands.
#[test]
fn structured_operand_summed_under_addition_reads_a_plain_copy() {
    let mut r = rng(63);
    let inputs = [("B", random_coo(&mut r, &[6, 6], 0.5))];
    let (stmt, _) = statement("y(i) = B(i,l) + 1", &[("B", "ell")], &inputs, &[]);
    let kernel = Kernel::from_statement(stmt, ValueType::F64, &Default::default()).unwrap();
    let read = &kernel.operand_layouts()[1].format;
    assert_eq!(read.spelling(), "ds");
}

/// Found by the statement fuzzer: an ELL or DIA operand that is a factor of a reduction
/// which is itself a term (`y(j) = Σ_i A(j,i) + c`) summed its slots at the root, adding `c`
/// once per slot. It is read through a CSR copy and agrees with the reference.
#[test]
fn structured_formats_inside_a_summed_term() {
    let mut r = rng(65);
    for f in ["ell", "dia"] {
        for (n, d) in [(3, 0.5), (7, 0.3), (1, 1.0), (4, 0.0)] {
            let a = random_coo(&mut r, &[n, n], d);
            let c = Coo::new(vec![], vec![], vec![2.5]).unwrap();
            check(
                "y(j) = A(j,i) + c",
                &[("A", f)],
                &[("A", a.clone()), ("c", c)],
            );
            let x = random_coo(&mut r, &[n], 1.0);
            let z = random_coo(&mut r, &[n], 0.5);
            check(
                "y(i) = A(i,j) * x(j) + z(i)",
                &[("A", f)],
                &[("A", a), ("x", x), ("z", z)],
            );
        }
    }
}

#[test]
fn blocked_formats() {
    let mut r = rng(7);
    for f in ["bcsr:2x2", "bcsr:3x2", "bcsr:1x4", "bcsr:4x4"] {
        for (m, n, d) in [
            (30, 20, 0.1),
            (1, 1, 1.0),
            (7, 9, 0.3),
            (5, 5, 0.0),
            (9, 12, 0.2),
        ] {
            let a = random_coo(&mut r, &[m, n], d);
            let x = random_coo(&mut r, &[n], 1.0);
            check(
                "y(i) = A(i,j) * x(j)",
                &[("A", f)],
                &[("A", a.clone()), ("x", x.clone())],
            );
            check(
                "y(i) = A(i,j) * x(j)",
                &[("A", f), ("y", "s")],
                &[("A", a.clone()), ("x", x)],
            );
            let b = random_coo(&mut r, &[n, 3], 1.0);
            check(
                "C(i,k) = A(i,j) * B(j,k)",
                &[("A", f)],
                &[("A", a.clone()), ("B", b)],
            );
            let c = random_coo(&mut r, &[m, n], 1.0);
            check(
                "C(i,j) = A(i,j) * B(i,j)",
                &[("A", f), ("C", "csr")],
                &[("A", a), ("B", c)],
            );
        }
    }
}

#[test]
fn reductions_under_additions() {
    let mut r = rng(8);
    // A row of `A` with no entries: the sum over `j` vanishes and `b(i)` is added once.
    let a = random_coo(&mut r, &[12, 9], 0.1);
    let b = random_coo(&mut r, &[12], 1.0);
    check(
        "y(i) = A(i,j) + b(i)",
        &[("A", "dcsr")],
        &[("A", a.clone()), ("b", b.clone())],
    );
    check(
        "y(i) = A(i,j) - b(i)",
        &[("A", "dcsr"), ("y", "s")],
        &[("A", a), ("b", b)],
    );
    // Sums nested in a temporary: `l` is hoisted into the sum over `k` and must enclose
    // the sum over `i` inside it.
    let dims = |d: &[usize]| d.to_vec();
    let e =
        sparsec::tensor::Coo::new(dims(&[4]), vec![0, 1, 2, 3], vec![2.0, -1.0, 0.5, 4.0]).unwrap();
    check(
        "Y(j) = A(i,k,l) - B(l,j,i,k) - C(k,j,l) / E(k) + 1",
        &[
            ("A", "sss"),
            ("B", "uccq:1,2,3,0"),
            ("C", "sss"),
            ("Y", "s"),
        ],
        &[
            ("A", random_coo(&mut r, &[2, 4, 5], 0.2)),
            ("B", random_coo(&mut r, &[5, 3, 2, 4], 0.2)),
            ("C", random_coo(&mut r, &[4, 3, 5], 0.2)),
            ("E", e),
        ],
    );
}

/// Iterating a hashed level visits its empty buckets too; other operands must be located
/// only at stored coordinates. Locating the empty-bucket marker in a full hash block used
/// to loop forever (seen in the property test with `A` in `hdh` and `D` in `hhhh`).
#[test]
fn hashed_iteration_locates_only_stored_coordinates() {
    let mut r = rng(11);
    for n in [1, 2, 5, 9] {
        let sparse = random_coo(&mut r, &[n, n], 0.2);
        let full = random_coo(&mut r, &[n, n], 1.0);
        for (a, b) in [(sparse.clone(), full.clone()), (full, sparse)] {
            check(
                "y(i) = A(i,j) * B(i,j)",
                &[("A", "hh"), ("B", "hh")],
                &[("A", a.clone()), ("B", b.clone())],
            );
            check(
                "y(i) = A(i,j) - B(i,j)",
                &[("A", "hh"), ("B", "hh")],
                &[("A", a), ("B", b)],
            );
        }
    }
    // The case the property test found.
    let dims = |v: &str| match v {
        "i" => 3,
        "j" => 2,
        "k" => 4,
        "l" => 3,
        _ => 2,
    };
    let coo = |r: &mut rand::rngs::StdRng, vars: &[&str], density: f64| {
        let d: Vec<usize> = vars.iter().map(|v| dims(v)).collect();
        random_coo(r, &d, density)
    };
    let mut e = coo(&mut r, &["j", "k"], 1.0);
    e.values.iter_mut().for_each(|x| *x = 1.5 + x.abs());
    check(
        "Y(i,j,l) = ((A(m,j,k) * B(j,l,k)) * (C(l,k,i) - (D(m,i,l,j)) / E(j,k)))",
        &[
            ("A", "hdh"),
            ("B", "ddd:1,0,2"),
            ("C", "ucq"),
            ("D", "hhhh"),
        ],
        &[
            ("A", coo(&mut r, &["m", "j", "k"], 0.3)),
            ("B", coo(&mut r, &["j", "l", "k"], 0.5)),
            ("C", coo(&mut r, &["l", "k", "i"], 0.2)),
            ("D", coo(&mut r, &["m", "i", "l", "j"], 1.0)),
            ("E", e),
        ],
    );
}

/// A dense operand is always present, so lattice points that differ only in it test the
/// same condition: the later ones are unreachable and must not be generated (they divided
/// by the absent divisor, `x / 0.0`, and tripled the code).
#[test]
fn unreachable_lattice_cases_are_not_generated() {
    let mut r = rng(12);
    let (stmt, _) = statement(
        "y(i) = A(i,j) * (B(i,j) - C(i,j) / E(i,j))",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[
            ("A", random_coo(&mut r, &[5, 6], 0.3)),
            ("B", random_coo(&mut r, &[5, 6], 0.3)),
            ("C", random_coo(&mut r, &[5, 6], 0.3)),
            ("E", random_coo(&mut r, &[5, 6], 1.0)),
        ],
        &[],
    );
    let kernel = sparsec::kernel::Kernel::from_statement(
        stmt,
        sparsec::tensor::ValueType::F64,
        &Default::default(),
    )
    .unwrap();
    let source = kernel.kernel_source();
    assert!(!source.contains("/ 0.0"), "{source}");
    let conditions: Vec<&str> = source
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("if (") || l.starts_with("} else if ("))
        .collect();
    for (n, c) in conditions.iter().enumerate() {
        let c = c.trim_start_matches("} else ");
        assert!(
            !conditions[n + 1..].contains(&format!("}} else {c}").as_str()),
            "`{c}` is tested twice in a row:\n{source}"
        );
    }
}

/// Wide, sparse output rows: the workspace's touched list is then sorted (insertion sort,
/// radix sort or introsort by its length) rather than scanned.
#[test]
fn spgemm_with_wide_sparse_rows() {
    let mut r = rng(13);
    for (per_row, rows) in [(0.5, 3), (4.0, 3), (40.0, 2)] {
        let a = random_coo(&mut r, &[rows, 60], 1.0);
        let b = random_coo(&mut r, &[60, 100_000], per_row / 100_000.0);
        check(
            "C(i,j) = A(i,k) * B(k,j)",
            &[("A", "csr"), ("B", "csr"), ("C", "csr")],
            &[("A", a), ("B", b)],
        );
    }
}

/// A bytemap level holds every coordinate's slot; merging it must still produce only the
/// coordinates present in some operand (an earlier lowering stored an explicit zero at
/// every absent one).
#[test]
fn bytemap_merges_store_only_present_coordinates() {
    let mut r = rng(60);
    for (fa, fb) in [("db", "csr"), ("csr", "db"), ("bs", "db"), ("bb", "dcsr")] {
        let a = random_coo(&mut r, &[25, 30], 0.05);
        let b = random_coo(&mut r, &[25, 30], 0.05);
        let mut union: Vec<Vec<i64>> = (0..a.len())
            .map(|e| a.coord(e).to_vec())
            .chain((0..b.len()).map(|e| b.coord(e).to_vec()))
            .collect();
        union.sort();
        union.dedup();
        for expr in ["C(i,j) = A(i,j) + B(i,j)", "C(i,j) = A(i,j) - B(i,j)"] {
            let got = check(
                expr,
                &[("A", fa), ("B", fb), ("C", "csr")],
                &[("A", a.clone()), ("B", b.clone())],
            );
            assert_eq!(got.to_coo().len(), union.len(), "{expr} with {fa}, {fb}");
        }
    }
}

/// A level below a non-unique one that would be located or iterated by value (a dense,
/// bytemap or hashed level under `u`) is read through a CSR/CSF copy: iterated under one
/// duplicate only, it summed part of the entries.
#[test]
fn levels_below_duplicates() {
    let mut r = rng(64);
    for (m, n, d) in [(6, 3, 0.5), (1, 1, 1.0), (5, 4, 0.0), (9, 7, 0.2)] {
        for f in [
            "ub", "ud", "uh", "uq", "us", "ubs", "uhq", "uqd", "uqb", "ucq", "uqq", "ucc",
        ] {
            let order = f.len();
            if order == 2 {
                let a = random_coo(&mut r, &[m, n], d);
                let b = random_coo(&mut r, &[m, n], d);
                let x = random_coo(&mut r, &[n], 1.0);
                check(
                    "y(i) = A(i,j) * x(j)",
                    &[("A", f)],
                    &[("A", a.clone()), ("x", x)],
                );
                check("y(j) = A(i,j) + 1", &[("A", f)], &[("A", a.clone())]);
                check(
                    "C(i,j) = A(i,j) + B(i,j)",
                    &[("A", f), ("B", "csr")],
                    &[("A", a), ("B", b)],
                );
            } else {
                let a = random_coo(&mut r, &[m, n, 3], d);
                check("y(j) = A(j,i,k)", &[("A", f)], &[("A", a.clone())]);
                check("y(k) = A(i,j,k) * 2 - 1", &[("A", f)], &[("A", a)]);
            }
        }
    }
}

/// Stored values follow IEEE arithmetic, explicit zeros included (`0 / 0` is NaN where
/// both are stored); an unstored numerator or factor is a structural zero.
#[test]
fn division_by_stored_and_unstored_zeros() {
    let a = Coo::new(vec![5], vec![0, 2, 3], vec![0.0, 2.0, -1.0]).unwrap();
    let b = Coo::new(vec![5], vec![0, 3, 4], vec![0.0, 0.0, 4.0]).unwrap();
    for (fa, fb) in [
        ("dense", "dense"),
        ("sv", "sv"),
        ("sv", "dense"),
        ("dense", "hash"),
    ] {
        let formats = [("A", fa), ("B", fb)];
        let inputs = [("A", a.clone()), ("B", b.clone())];
        for expr in [
            "y(i) = A(i) / A(i)",
            "y(i) = A(i) / B(i)",
            "y(i) = A(i) * (1 / B(i))",
            // The sum over `j` distributes over the division: a NaN term where B(i) is 0.
            "y(i) = A(j) / B(i)",
            "y(i) = (A(j) + 1) / B(i) - B(j) * 3",
            // An absent operand has no sign: 1 / -A(i) is +inf where A stores nothing.
            "y(i) = 1 / -A(i) * 2",
        ] {
            let got = check(expr, &formats, &inputs);
            let at = |i: usize| {
                let coo = got.to_coo();
                (0..coo.values.len())
                    .find(|&e| coo.coords[e] == i as i64)
                    .map_or(0.0, |e| coo.values[e])
            };
            if expr == "y(i) = A(i) / A(i)" {
                assert!(at(0).is_nan(), "{expr} {formats:?}: stored 0 / 0");
                assert_eq!(at(2), 1.0);
            }
        }
    }
}

/// Diagonal accesses (`A(i,i)`, an index variable repeated in one access): the second level
/// at `i` is located, or binary searched where it cannot locate, in every format. Checked
/// against the reference and, for the trace, against a sum over the coordinate list itself.
#[test]
fn diagonal_accesses_in_every_format() {
    let mut r = rng(67);
    let matrix_formats = [
        "dense", "csr", "csc", "coo", "dcsr", "dcsc", "hash", "ell", "dia", "bcsr:2x2", "sd:1,0",
        "hh", "sell:4",
    ];
    let statements = [
        "t = A(i,i)",
        "y(i) = A(i,i) * x(i)",
        "y(i) = A(i,i) + x(i)",
        "y(i) = A(i,j) * A(j,j)",
        "C(i,j) = A(i,i) * B(i,j)",
        "y(i) = x(i) / (A(i,i) + 2)",
    ];
    for (n, d) in [(7, 0.4), (1, 1.0), (5, 0.0), (9, 0.2), (6, 1.0)] {
        for fa in matrix_formats {
            let a = random_coo(&mut r, &[n, n], d);
            let x = random_coo(&mut r, &[n], 0.7);
            let b = random_coo(&mut r, &[n, n], 0.3);
            for expr in statements {
                let got = check(
                    expr,
                    &[("A", fa), ("B", "csr")],
                    &[("A", a.clone()), ("x", x.clone()), ("B", b.clone())]
                        .into_iter()
                        .filter(|(name, _)| expr.contains(&format!("{name}(")))
                        .collect::<Vec<_>>(),
                );
                if expr == "t = A(i,i)" {
                    let trace: f64 = (0..a.values.len())
                        .filter(|&e| a.coords[2 * e] == a.coords[2 * e + 1])
                        .map(|e| a.values[e])
                        .sum();
                    let mut kernel_trace = 0.0;
                    got.for_each_stored(|_, v| kernel_trace += v);
                    assert!(
                        (kernel_trace - trace).abs() <= 1e-12 * (1.0 + trace.abs()),
                        "trace of {fa}: {kernel_trace} against {trace}"
                    );
                }
            }
        }
    }
    // Order 3: a diagonal in two of three modes, and all three.
    for (n, d) in [(5, 0.3), (1, 1.0), (4, 0.0)] {
        for ft in ["ddd", "sss", "dsd", "csf", "coo", "sss:2,0,1", "hhh"] {
            let t = random_coo(&mut r, &[n, n, n], d);
            for expr in [
                "y(j) = T(i,j,i)",
                "z = T(i,i,i)",
                "Y(i,j) = T(i,i,j) * T(j,i,i)",
            ] {
                check(expr, &[("T", ft)], &[("T", t.clone())]);
            }
        }
    }
}

/// The sign of a zero decides the sign of an infinity in a denominator, so every path
/// must agree with the reference on it: an absent term leaves the other term as it is
/// (`absent - b` is `-b`, `a + absent` is `a`), and a product with an absent factor is
/// an unsigned zero, whether the operand is merged, located or searched (found by the
/// statement fuzzer: kernels disagreed with each other on the sign of infinities).
#[test]
fn signed_zeros_of_absent_operands_in_denominators() {
    let zeros = |values: &[(i64, f64)]| {
        Coo::new(
            vec![6],
            values.iter().map(|&(c, _)| c).collect(),
            values.iter().map(|&(_, v)| v).collect(),
        )
        .unwrap()
    };
    let a = zeros(&[(0, 0.0), (1, -0.0), (2, 0.0), (4, 1.5)]);
    let b = zeros(&[(1, 0.0), (2, -0.0), (3, 0.0), (5, -2.0)]);
    let x = zeros(&[
        (0, -1.0),
        (1, 2.0),
        (2, -3.0),
        (3, 4.0),
        (4, -5.0),
        (5, 6.0),
    ]);
    let m = Coo::new(
        vec![6, 6],
        vec![0, 0, 1, 1, 2, 2, 3, 3],
        vec![0.0, -0.0, 0.0, 1.0],
    )
    .unwrap();
    let statements = [
        "y(i) = 1 / (A(i) - B(i))",
        "y(i) = 1 / (B(i) + A(i))",
        "y(i) = 1 / (x(i) * A(i) - B(i))",
        "y(i) = -1 / (A(i) * x(i) + B(i) * x(i))",
        "y(i) = 1 / (M(i,i) - A(i))",
        "y(i) = 1 / (A(i) - M(i,i) * x(i))",
    ];
    for fa in ["s", "h", "b"] {
        for fb in ["s", "h", "d"] {
            for fm in ["csr", "coo", "hash"] {
                for expr in statements {
                    check(
                        expr,
                        &[("A", fa), ("B", fb), ("M", fm)],
                        &[
                            ("A", a.clone()),
                            ("B", b.clone()),
                            ("x", x.clone()),
                            ("M", m.clone()),
                        ]
                        .into_iter()
                        .filter(|(name, _)| expr.contains(&format!("{name}(")))
                        .collect::<Vec<_>>(),
                    );
                }
            }
        }
    }
}

/// Rows located by a scattered operand's coordinates are prefetched only when the arrays
/// are large (`ir::prefetch::LARGE_ARRAY` entries) and the coordinates scatter, so small
/// random inputs never run the hinted loops: these inputs do, on 1 and 2 threads.
#[test]
fn rows_are_prefetched_on_large_scattered_inputs() {
    let n = 150_000;
    let a = random_coo(&mut rng(11), &[n, n], 2.0 / n as f64);
    let coords = level_array(
        &Tensor::from_coo(&a, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap(),
        2,
        sparsec::ir::ArrayKind::Idx,
    );
    assert!(sparsec::ir::prefetch::scattered(coords.len(), |p| coords[p]));
    assert!(coords.len() as i64 >= sparsec::ir::prefetch::LARGE_ARRAY);
    let b = random_coo(&mut rng(12), &[n, 2], 1.0);
    let expr = "C(i,j) = A(i,k) * B(k,j)";
    let spgemm = [("A", "csr"), ("B", "csr"), ("C", "csr")];
    let spmm = [("A", "csr"), ("B", "dd"), ("C", "dd")];
    for (formats, b) in [(&spgemm, a.clone()), (&spmm, b)] {
        let inputs = [("A", a.clone()), ("B", b)];
        let (stmt, tensors) = statement(expr, formats, &inputs, &[]);
        let mut kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain())
            .unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert!(kernel.kernel_source().contains("__builtin_prefetch"));
        for threads in [1, 2] {
            kernel.set_threads(threads);
            compare_with_reference(&kernel, &stmt, &tensors, &format!("{expr} {formats:?}"));
        }
    }
}

/// Elements read at a segment's scattered coordinates (SpMV's `x[j]`, TTV's `c[k]`) are
/// prefetched only when the array read is large (`ir::prefetch::LARGE_ARRAY` elements) and
/// the coordinates scatter, so small random inputs never run the hinted loops: these do.
/// Their sums are added one after another (`prefetch::prefetch_gathered_elements`): SpMV
/// over rows of one short length and of every length up to 20, and TTV over fibers of
/// every length into a dense and a sparse result, with explicit zeros and duplicates, at
/// 32 and 64 bits, 1 and 2 threads, for each vector target and the JIT.
#[test]
fn gathered_elements_are_prefetched_on_large_scattered_inputs() {
    let mut r = rng(47);
    let cols = sparsec::ir::prefetch::LARGE_ARRAY as usize + 1000;
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for i in 0..1500i64 {
        for _ in 0..5 {
            coords.extend([i, r.gen_range(0..cols as i64)]);
            values.push(if r.gen_bool(0.1) { 0.0 } else { 1.5 });
        }
    }
    let even = spmv_with_random_x(&mut r, Coo::new(vec![1500, cols], coords, values).unwrap());
    let uneven = spmv_over_rows_of_every_length(&mut r, 1500, cols, 21);
    let fibers = rows_of_every_length(&mut r, 1500, cols, 21);
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for (entry, value) in fibers.coords.chunks(2).zip(&fibers.values) {
        coords.extend([entry[0] % 30, entry[0] / 30, entry[1]]);
        values.push(*value);
    }
    let b = Coo::new(vec![30, 50, cols], coords, values).unwrap();
    let c = random_coo(&mut r, &[cols], 1.0);
    let ttv = |y: &str| {
        statement(
            "Y(i,j) = B(i,j,k) * c(k)",
            &[("B", "sss"), ("c", "d"), ("Y", y)],
            &[("B", b.clone()), ("c", c.clone())],
            &[],
        )
    };
    for (stmt, tensors) in [even, uneven, ttv("dd"), ttv("ss")] {
        let last = tensors[0].format().levels().len();
        let idx = level_array(&tensors[0], last, sparsec::ir::ArrayKind::Idx);
        assert!(sparsec::ir::prefetch::scattered(idx.len(), |p| idx[p]));
        let kernel =
            Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain()).unwrap();
        let source = kernel.kernel_source();
        assert!(source.contains("__builtin_prefetch"));
        // Only the version without hints splits its sums.
        let hinted = &source[source.find("if (prefetch_elements) {").unwrap()..];
        let hinted = &hinted[..hinted.find("} else").unwrap()];
        assert!(!hinted.contains("sparsec_acc1"), "{hinted}");
        compare_on_lane_targets(&stmt, &tensors);
    }
}

/// SpMM's rows are summed in registers (`codegen/c/row_sums.rs`): in vectors as wide as
/// the registers where each operand that changes along the row is read at consecutive
/// elements (`B`, also when stored column-major: the kernel reads a row-major copy), in
/// `omp simd` blocks where one is not (a diagonal `D(j,j)`). Widths below, at,
/// between and past multiples of the vectors (one to eight of them, and the columns
/// left), rows long, short and empty, explicit zeros and duplicates, compiled for this
/// processor, AVX2 and baseline x86-64 (64-, 32- and 16-byte vectors), in double and
/// single precision, on 1 and 2 threads, and on the JIT, against the reference. Rows of
/// a fixed width are stored by their sums, the rest added into the zeroed row.
#[test]
fn dense_rows_summed_in_registers_match_the_reference() {
    let mut r = rng(21);
    // Rows of about 45 entries, then an empty row and a short one.
    let mut a = random_coo(&mut r, &[40, 50], 0.9);
    a.coords.extend([38, 3, 38, 7, 38, 7]);
    a.values.extend([1.5, -2.0, 0.25]);
    let a = Coo::new(vec![41, 50], a.coords, a.values).unwrap();
    for width in [1, 3, 7, 8, 13, 32, 70] {
        let b = random_coo(&mut r, &[50, width], 1.0);
        let d = random_coo(&mut r, &[width, width], 1.0);
        for (expr, b_format, vectors) in [
            ("C(i,j) = A(i,k) * B(k,j)", "dd", true),
            ("C(i,j) = A(i,k) * B(k,j)", "dd:1,0", true),
            ("C(i,j) = A(i,k) * B(k,j) * D(j,j)", "dd", false),
        ] {
            let (stmt, tensors) = statement(
                expr,
                &[("A", "csr"), ("B", b_format), ("C", "dd"), ("D", "dd")],
                &[("A", a.clone()), ("B", b.clone()), ("D", d.clone())]
                    [..if vectors { 2 } else { 3 }],
                &[],
            );
            let refs: Vec<&Tensor> = tensors.iter().collect();
            let expected = sparsec::reference::evaluate(&stmt, &refs, None);
            for target in lane_targets() {
                let what = format!(
                    "{expr}, width {width}, B {b_format}, {:?}",
                    target.flags.last()
                );
                let mut kernel =
                    Kernel::from_statement(stmt.clone(), ValueType::F64, &target).unwrap();
                let source = kernel.kernel_source();
                assert_eq!(source.contains("sparsec_vector_double"), vectors, "{what}");
                assert_eq!(source.contains("sparsec_r[8]"), !vectors, "{what}");
                // Rows as long as a constant are written whole by their sum, which stores
                // (`=`) where the plain loop beside it zeroes the row and adds.
                let stored = ["] = sparsec_v0;", "] = sparsec_r[sparsec_c];"]
                    .iter()
                    .any(|s| source.contains(s));
                let fixed = width <= sparsec::lower::MAX_FIXED_EXTENT;
                assert_eq!(stored, fixed, "{what}");
                for threads in [1, 2] {
                    kernel.set_threads(threads);
                    compare_with_reference(&kernel, &stmt, &tensors, &what);
                }
                let single = Kernel::from_statement(stmt.clone(), ValueType::F32, &target).unwrap();
                assert_eq!(
                    single.kernel_source().contains("sparsec_vector_float"),
                    vectors
                );
                let got = single.run(&refs).unwrap();
                let diff = got.max_difference(&expected).unwrap();
                assert!(diff < 1e-4, "{what}, single precision: {diff}");
            }
            let jit = Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain())
                .and_then(|k| k.with_backend(sparsec::kernel::Backend::Jit))
                .unwrap();
            compare_with_reference(
                &jit,
                &stmt,
                &tensors,
                &format!("{expr}, width {width}, JIT"),
            );
        }
    }
}

/// A dense output that SpMM adds into is zeroed by the kernel, each row by the thread that
/// adds into it (`ir::zero_rows`), where the outermost loop visits every row (CSR's rows),
/// and by the caller otherwise: rows a compressed outer level skips (DCSR), and a `+=`
/// statement's output, which starts from its initial value. Debug builds leave an
/// unzeroed output NaN, so a row the kernel missed shows. Empty rows first, between and
/// last; 1 and 2 threads, every thread given rows.
#[test]
fn dense_outputs_zeroed_by_the_kernel_match_the_reference() {
    use sparsec::ir::OutputMode;
    let mut r = rng(23);
    let mut a = random_coo(&mut r, &[30, 20], 0.3);
    // Rows 0, 7 and 29 empty.
    let keep: Vec<usize> = (0..a.values.len())
        .filter(|&e| ![0, 7, 29].contains(&a.coords[2 * e]))
        .collect();
    a = Coo::new(
        vec![30, 20],
        keep.iter()
            .flat_map(|&e| [a.coords[2 * e], a.coords[2 * e + 1]])
            .collect(),
        keep.iter().map(|&e| a.values[e]).collect(),
    )
    .unwrap();
    let b = random_coo(&mut r, &[20, 12], 1.0);
    for (expr, a_format, zeroed) in [
        ("C(i,k) = A(i,j) * B(j,k)", "csr", true),
        ("C(i,k) = A(i,j) * B(j,k)", "dcsr", false),
        ("C(i,k) += A(i,j) * B(j,k)", "csr", false),
    ] {
        let (stmt, tensors) = statement(
            expr,
            &[("A", a_format), ("B", "dd"), ("C", "dd")],
            &[("A", a.clone()), ("B", b.clone())],
            &[],
        );
        let mut kernel =
            Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain()).unwrap();
        assert_eq!(
            kernel.output_mode(),
            OutputMode::Dense {
                accumulate: true,
                zeroed_by_kernel: zeroed
            },
            "{expr}, A {a_format}"
        );
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let initial = sparsec::reference::evaluate(&stmt, &refs, None);
        for threads in [1, 2] {
            kernel.set_threads(threads);
            let what = format!("{expr}, A {a_format}, {threads} threads");
            let (got, _) = kernel.run_timed(&refs, Some(&initial)).unwrap();
            let expected = sparsec::reference::evaluate(&stmt, &refs, Some(&initial));
            let diff = got.max_difference(&expected).unwrap();
            assert!(diff <= 1e-9, "{what}: {diff}\n{}", kernel.kernel_source());
            let jit = Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain())
                .and_then(|k| k.with_backend(sparsec::kernel::Backend::Jit))
                .unwrap();
            let (got, _) = jit.run_timed(&refs, Some(&initial)).unwrap();
            assert!(
                got.max_difference(&expected).unwrap() <= 1e-9,
                "{what}, JIT"
            );
        }
    }
}

/// Sums over uneven rows whose gathered array is large (`ir::gather`) run with masked
/// gathers, or without AVX-512 with AVX2 gathers where the coordinates scatter and with
/// the serial sum where they lie close together: SpMV over rows of every length from 0
/// to 20 (below, at and past one 8-entry iteration), with explicit zeros and duplicates,
/// its coordinates scattered and banded, its indices stored at 32 and 64 bits, on 1 and 2
/// threads, compiled for each form of the vector loop, and on the JIT. Small test inputs
/// never take that path.
#[test]
fn uneven_rows_gathered_match_the_reference() {
    let cols = sparsec::ir::gather::GATHER_MIN_LENGTH as usize + 1000;
    let rows = 2000;
    let mut r = rng(31);
    let scattered = rows_of_every_length(&mut r, rows, cols, 21);
    // The same rows with each one's coordinates within 32 columns of 16 times its number.
    let mut banded = scattered.clone();
    for entry in banded.coords.chunks_mut(2) {
        entry[1] = (entry[0] * 16 + entry[1] % 32) % cols as i64;
    }
    for (a, scatters) in [(banded, false), (scattered, true)] {
        let (stmt, tensors) = spmv_with_random_x(&mut r, a);
        let pos = level_array(&tensors[0], 2, sparsec::ir::ArrayKind::Pos);
        assert!(sparsec::ir::gather::uneven(pos.len() - 1, |q| pos[q]));
        let idx = level_array(&tensors[0], 2, sparsec::ir::ArrayKind::Idx);
        assert_eq!(
            sparsec::ir::prefetch::scattered(idx.len(), |p| idx[p]),
            scatters
        );
        compare_on_lane_targets(&stmt, &tensors);
        // The kernel as compiled for the statement's own (32-bit) inputs; the 64-bit runs
        // compiled their own, with `_mm512_mask_i64gather_pd`.
        let kernel = Kernel::from_statement(stmt, ValueType::F64, &split_toolchain()).unwrap();
        assert!(kernel.kernel_source().contains("_mm512_mask_i32gather_pd"));
        assert!(kernel.kernel_source().contains("_mm256_i32gather_pd"));
    }
}

/// Sums over long segments whose gathered array stays in cache (`ir::gather`) run with
/// lanes filled from scalar loads: SpMV over rows of every length from 0 to 40 (below, at
/// and past one 8-entry iteration, with every remainder), 20 on average, with explicit
/// zeros and duplicates, and TTV over fibers as long into a dense and a sparse result,
/// their indices stored at 32 and 64 bits, on 1 and 2 threads and on the JIT.
#[test]
fn long_segments_in_lanes_match_the_reference() {
    let mut r = rng(37);
    let spmv = spmv_over_rows_of_every_length(&mut r, 400, 700, 41);
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for f in 0..150i64 {
        for _ in 0..(f * 11) % 37 {
            coords.extend([f % 10, f / 10, r.gen_range(0..300)]);
            values.push(r.gen_range(-2.0..2.0));
        }
    }
    let b = Coo::new(vec![10, 15, 300], coords, values).unwrap();
    let c = random_coo(&mut r, &[300], 1.0);
    let ttv = statement(
        "Y(i,j) = B(i,j,k) * c(k)",
        &[("B", "sss"), ("c", "d"), ("Y", "dd")],
        &[("B", b.clone()), ("c", c.clone())],
        &[],
    );
    // Into a sparse output, whose sums also mark that they have terms.
    let ttv_sparse = statement(
        "Y(i,j) = B(i,j,k) * c(k)",
        &[("B", "sss"), ("c", "d"), ("Y", "ss")],
        &[("B", b), ("c", c)],
        &[],
    );
    for (stmt, tensors) in [spmv, ttv, ttv_sparse] {
        let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain());
        assert!(kernel.unwrap().kernel_source().contains("_mm256_set_pd"));
        compare_on_lane_targets(&stmt, &tensors);
    }
}

/// Sums over even but long rows whose coordinates scatter over a large gathered array
/// (`ir::gather::SCATTERED_SEGMENT_MEAN`) run with masked gathers: SpMV over rows of 37
/// entries (four whole iterations and five left) and every twentieth of 42, a tenth of
/// them explicit zeros, at 32 and 64 bits, 1 and 2 threads, each form of the vector loop
/// and the JIT. Its precondition checks that only the new rule can send it there.
#[test]
fn long_scattered_rows_gathered_match_the_reference() {
    let mut r = rng(43);
    let cols = sparsec::ir::gather::GATHER_MIN_LENGTH + 1000;
    let rows = 400;
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for i in 0..rows {
        let length = if i % 20 == 0 { 42 } else { 37 };
        let mut row: Vec<i64> = Vec::new();
        while row.len() < length {
            let j = r.gen_range(0..cols);
            if !row.contains(&j) {
                row.push(j);
            }
        }
        for j in row {
            coords.extend([i as i64, j]);
            values.push(if r.gen_bool(0.1) {
                0.0
            } else {
                r.gen_range(-2.0..2.0)
            });
        }
    }
    let a = Coo::new(vec![rows, cols as usize], coords, values).unwrap();
    let (stmt, tensors) = spmv_with_random_x(&mut r, a);
    let pos = level_array(&tensors[0], 2, sparsec::ir::ArrayKind::Pos);
    let idx = level_array(&tensors[0], 2, sparsec::ir::ArrayKind::Idx);
    assert!(!sparsec::ir::gather::uneven(pos.len() - 1, |q| pos[q]));
    assert!(sparsec::ir::prefetch::scattered(idx.len(), |p| idx[p]));
    assert!(idx.len() as i64 >= sparsec::ir::gather::SCATTERED_SEGMENT_MEAN * pos.len() as i64);
    compare_on_lane_targets(&stmt, &tensors);
}

/// Sums over uneven segments too many for a branch predictor to learn
/// (`GATHER_MIN_SEGMENTS`) run with masked gathers however small the gathered array:
/// SpMV over 70,000 rows of 0 to 8 entries and 40 columns, and TTV into a sparse result
/// over as many fibers, at 32 and 64 bits, 1 and 2 threads, each form of the vector loop
/// and the JIT.
#[test]
fn many_uneven_segments_gathered_match_the_reference() {
    let mut r = rng(41);
    let segments = sparsec::ir::gather::GATHER_MIN_SEGMENTS as usize + 4464;
    let spmv = spmv_over_rows_of_every_length(&mut r, segments, 40, 9);
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for f in 0..segments as i64 {
        for k in 0..(f * 5) % 7 + 1 {
            coords.extend([f / 300, f % 300, (k * 3 + f) % 30]);
            values.push(r.gen_range(-2.0..2.0));
        }
    }
    let b = Coo::new(vec![segments / 300 + 1, 300, 30], coords, values).unwrap();
    let c = random_coo(&mut r, &[30], 1.0);
    let ttv = statement(
        "Y(i,j) = B(i,j,k) * c(k)",
        &[("B", "sss"), ("c", "d"), ("Y", "ss")],
        &[("B", b), ("c", c)],
        &[],
    );
    for (stmt, tensors) in [spmv, ttv] {
        let last = tensors[0].format().levels().len();
        let pos = level_array(&tensors[0], last, sparsec::ir::ArrayKind::Pos);
        assert!(pos.len() > segments, "{}", pos.len());
        assert!(sparsec::ir::gather::uneven(pos.len() - 1, |q| pos[q]));
        compare_on_lane_targets(&stmt, &tensors);
    }
}

/// A kernel told to let the run-time tests choose every call (`SumVersions::Tested`), or
/// to run one version (`SumVersions::Fixed`), measures nothing and repeats its results
/// to the last bit from the first call on; each fixed version matches the reference.
/// SpMV over uneven rows of every length up to 20, at 1 and 2 threads.
#[test]
fn tested_and_fixed_sum_versions_repeat_their_results_exactly() {
    use sparsec::ir::gather::SumVersion;
    use sparsec::kernel::SumVersions;
    let mut r = rng(53);
    let (stmt, tensors) = spmv_over_rows_of_every_length(&mut r, 3000, 5000, 21);
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let expected = sparsec::reference::evaluate(&stmt, &refs, None);
    let mut kernel =
        Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain()).unwrap();
    assert!(kernel.kernel_source().contains("sum_version"));
    let choices = [SumVersions::Tested]
        .into_iter()
        .chain(SumVersion::ALL.map(SumVersions::Fixed));
    for choice in choices {
        kernel.set_sum_versions(choice);
        for threads in [1, 2] {
            kernel.set_threads(threads);
            let first = kernel.run(&refs).unwrap();
            let diff = first.max_difference(&expected).expect("same shape");
            assert!(
                diff <= 1e-9,
                "{choice:?}: differs from the reference by {diff}"
            );
            let first = first.to_coo();
            for run in 1..40 {
                let again = kernel.run(&refs).unwrap().to_coo();
                let differing = (0..first.values.len())
                    .find(|&k| again.values[k].to_bits() != first.values[k].to_bits());
                assert_eq!(differing, None, "{choice:?}, run {run}: entry differs");
                assert_eq!(again.coords, first.coords);
            }
            assert_eq!(kernel.sum_version(), None, "{choice:?} measured");
        }
    }
}

/// Run `stmt` on `tensors` and on them with 64-bit indices, on 1 and 2 threads, compiled
/// for each form of the vector loops of `ir::gather` (see [`lane_targets`]), and on the
/// JIT, each against the reference, in each version of the gathered sums (see
/// [`compare_every_sum_version`]).
fn compare_on_lane_targets(stmt: &sparsec::notation::cin::Statement, tensors: &[Tensor]) {
    let wide: Vec<Tensor> = tensors
        .iter()
        .map(|t| {
            t.clone()
                .with_index_width(sparsec::ir::IndexWidth::I64)
                .unwrap()
        })
        .collect();
    for target in lane_targets() {
        let mut kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &target).unwrap();
        let target = target.flags.last().unwrap();
        for (widths, tensors) in [("32-bit", tensors), ("64-bit", &wide)] {
            for threads in [1, 2] {
                kernel.set_threads(threads);
                compare_every_sum_version(&kernel, stmt, tensors, &format!("{widths} {target}"));
            }
        }
    }
    let jit = Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain())
        .and_then(|k| k.with_backend(sparsec::kernel::Backend::Jit))
        .unwrap();
    for (widths, tensors) in [("32-bit", tensors), ("64-bit", &wide)] {
        compare_every_sum_version(&jit, stmt, tensors, &format!("{widths}, JIT"));
    }
}

/// SpMV on [`rows_of_every_length`] and a random `x`.
fn spmv_over_rows_of_every_length(
    r: &mut rand::rngs::StdRng,
    rows: usize,
    cols: usize,
    lengths: usize,
) -> (sparsec::notation::cin::Statement, Vec<Tensor>) {
    let a = rows_of_every_length(r, rows, cols, lengths);
    spmv_with_random_x(r, a)
}

/// SpMV with `a` in CSR times a random dense `x`.
fn spmv_with_random_x(
    r: &mut rand::rngs::StdRng,
    a: Coo,
) -> (sparsec::notation::cin::Statement, Vec<Tensor>) {
    let x = random_coo(r, &[a.dims[1]], 1.0);
    statement(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr"), ("x", "d"), ("y", "d")],
        &[("A", a), ("x", x)],
        &[],
    )
}

/// A `rows` x `cols` matrix whose row `i` holds `(i * 7) % lengths` random entries (so
/// every length below `lengths` occurs), a tenth of them explicit zeros, and a duplicate
/// in the last row.
fn rows_of_every_length(r: &mut impl Rng, rows: usize, cols: usize, lengths: usize) -> Coo {
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for i in 0..rows {
        for _ in 0..(i * 7) % lengths {
            coords.extend([i as i64, r.gen_range(0..cols as i64)]);
            values.push(if r.gen_bool(0.1) {
                0.0
            } else {
                r.gen_range(-2.0..2.0)
            });
        }
    }
    coords.extend([rows as i64 - 1, 5, rows as i64 - 1, 5]);
    values.extend([0.5, 0.25]);
    Coo::new(vec![rows, cols], coords, values).unwrap()
}

/// The `kind` array of `tensor`'s `level` (1-based, as the IR numbers levels), widened to
/// `i64`.
fn level_array(tensor: &Tensor, level: usize, kind: sparsec::ir::ArrayKind) -> Vec<i64> {
    tensor
        .view()
        .array(level, kind)
        .unwrap()
        .to_array()
        .to_i64()
        .into_owned()
}

/// Toolchains that compile a vector loop of `ir::gather` for each of its printed forms:
/// this processor (AVX-512 gathers where it has them), AVX2 with FMA (AVX2 gathers, the
/// serial sum or lanes filled from scalar loads, as the run-time tests choose), and
/// baseline x86-64 (the `omp simd` loop).
fn lane_targets() -> Vec<Toolchain> {
    ["-march=native", "-march=x86-64-v3", "-march=x86-64"]
        .into_iter()
        .map(|target| {
            let mut toolchain = split_toolchain();
            toolchain.flags.push(target.into());
            toolchain
        })
        .collect()
}

/// Sliced ELL (`sell:C`): where each row of a slice writes its own output element (SpMV,
/// plus a dense vector), the slices run on threads by default, the full slices' rows in
/// SIMD lanes (`#pragma omp simd`) and the last, short slice a loop that stops at the last
/// row; a transposed product (rows scatter into one output) runs serially, and SpMM (a
/// loop over columns in each row) keeps serial row loops. Full slices of whole vectors
/// (8 and 16 rows) sum their rows in vector registers with gathers of `x`, also in single
/// precision. Slices of 1, 3, 8 and 16 rows over rows of every length (empty ones, long
/// ones, explicit zeros, a duplicate), shapes that leave the last slice short, a 1x1 and
/// an empty matrix: each on every vector target, 32- and 64-bit indices, 1 and 2 threads
/// and the JIT, against the reference.
#[test]
fn sliced_ell_runs_rows_in_lanes_and_matches_the_reference() {
    let mut r = rng(71);
    let matrices = [
        rows_of_every_length(&mut r, 29, 40, 23),
        rows_of_every_length(&mut r, 16, 9, 5),
        random_coo(&mut r, &[1, 1], 1.0),
        random_coo(&mut r, &[6, 4], 0.0),
    ];
    for a in &matrices {
        let (m, n) = (a.dims[0], a.dims[1]);
        for slice in [1, 3, 8, 16] {
            let sell = format!("sell:{slice}");
            let x = random_coo(&mut r, &[n], 1.0);
            let z = random_coo(&mut r, &[m], 1.0);
            let (stmt, tensors) = statement(
                "y(i) = A(i,j) * x(j) + z(i)",
                &[("A", &sell)],
                &[("A", a.clone()), ("x", x.clone()), ("z", z)],
                &[],
            );
            let kernel =
                Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain()).unwrap();
            let source = kernel.kernel_source();
            assert!(source.contains("#pragma omp simd"), "{sell}: rows in lanes");
            // The slices are the default parallel loop: they write rows apart.
            assert!(source.contains("omp parallel"), "{sell}: slices on threads");
            compare_on_lane_targets(&stmt, &tensors);
            let (stmt, tensors) = statement(
                "y(i) = A(i,j) * x(j)",
                &[("A", &sell)],
                &[("A", a.clone()), ("x", x)],
                &[],
            );
            compare_on_lane_targets(&stmt, &tensors);
            // Slices as wide as whole vectors sum their rows in vector registers, `x`
            // gathered by the slot's columns; in single precision too.
            let kernel =
                Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain()).unwrap();
            let gathers = kernel
                .kernel_source()
                .contains("sparsec_gather_double_i32(");
            assert!(gathers || slice < 8, "{sell}");
            let refs: Vec<&Tensor> = tensors.iter().collect();
            let expected = sparsec::reference::evaluate(&stmt, &refs, None);
            for target in lane_targets() {
                let single = Kernel::from_statement(stmt.clone(), ValueType::F32, &target).unwrap();
                let diff = single
                    .run(&refs)
                    .unwrap()
                    .max_difference(&expected)
                    .unwrap();
                assert!(
                    diff < 1e-4,
                    "{sell}, single precision, {:?}: {diff}",
                    target.flags
                );
            }
            let xt = random_coo(&mut r, &[m], 1.0);
            let (stmt, tensors) = statement(
                "y(j) = A(i,j) * x(i)",
                &[("A", &sell)],
                &[("A", a.clone()), ("x", xt)],
                &[],
            );
            let kernel =
                Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain()).unwrap();
            // Rows scatter into one output: no lanes, and the slices stay on one thread.
            let source = kernel.kernel_source();
            assert!(!source.contains("omp simd"), "{sell}: rows scatter");
            assert!(!source.contains("omp parallel"), "{sell}: serial slices");
            compare_on_lane_targets(&stmt, &tensors);
            let b = random_coo(&mut r, &[n, 5], 0.7);
            let (stmt, tensors) = statement(
                "C(i,k) = A(i,j) * B(j,k)",
                &[("A", &sell)],
                &[("A", a.clone()), ("B", b)],
                &[],
            );
            compare_on_lane_targets(&stmt, &tensors);
        }
    }
}

/// Math functions in index notation: those with `f(0) = 0` iterate their argument's
/// entries only; `exp`, `cos`, `log` and `pow` have a value everywhere and fill the output.
/// Inputs are empty, sparse and dense, in several formats, with sparse outputs.
#[test]
fn math_functions_keep_or_fill_the_pattern() {
    let mut r = rng(52);
    for density in [0.0, 0.3, 1.0] {
        let a = random_coo(&mut r, &[7, 6], density);
        let b = random_coo(&mut r, &[7, 6], 0.5);
        let x = random_coo(&mut r, &[6], density);
        for f in ["csr", "dcsr", "coo", "dd"] {
            let ab = [("A", a.clone()), ("B", b.clone())];
            check(
                "C(i,j) = sqrt(abs(A(i,j)))",
                &[("A", f), ("C", "csr")],
                &ab[..1],
            );
            check(
                "C(i,j) = floor(A(i,j)) + B(i,j)",
                &[("A", f), ("B", "csr")],
                &ab,
            );
            check(
                "C(i,j) = exp(A(i,j)) * B(i,j)",
                &[("A", f), ("B", "csr")],
                &ab,
            );
            check("C(i,j) = cos(A(i,j))", &[("A", f), ("C", "csr")], &ab[..1]);
            check(
                "C(i,j) = max(A(i,j), 0)",
                &[("A", f), ("C", "csr")],
                &ab[..1],
            );
            check("C(i,j) = A(i,j) > 0", &[("A", f), ("C", "csr")], &ab[..1]);
            check(
                "C(i,j) = where(A(i,j) < B(i,j), A(i,j), B(i,j) * 2) + (A(i,j) <= 0)",
                &[("A", f), ("B", "csr")],
                &ab,
            );
            check(
                "C(i,j) = min(A(i,j), B(i,j)) * 3",
                &[("A", f), ("B", "csr"), ("C", "dcsr")],
                &ab,
            );
            check(
                "y(i) = sqrt(abs(A(i,j) * x(j))) + pow(abs(A(i,k)), 1.5)",
                &[("A", f), ("x", "s")],
                &[("A", a.clone()), ("x", x.clone())],
            );
        }
    }
}

/// Masks (`C<M>(i,j)`, `C<pattern(M)>`, complements): the output is the product where
/// the mask holds, checked against the reference and against a dense product masked
/// here; the mask is a factor, so it joins the iteration and its explicit zeros count
/// for `pattern` only.
#[test]
fn masks_restrict_the_output() {
    let mut r = rng(61);
    let n = 9;
    let a = random_coo(&mut r, &[n, n], 0.3);
    let b = random_coo(&mut r, &[n, n], 0.3);
    let mut m = random_coo(&mut r, &[n, n], 0.4);
    // An explicit zero in the mask: outside a valued mask, inside a structural one.
    m.values[0] = 0.0;
    let dense = |c: &Coo| {
        let mut out = vec![0.0; n * n];
        for e in 0..c.values.len() {
            out[c.coords[2 * e] as usize * n + c.coords[2 * e + 1] as usize] += c.values[e];
        }
        out
    };
    let (da, db) = (dense(&a), dense(&b));
    let mut stored = vec![false; n * n];
    let mut valued = vec![false; n * n];
    for e in 0..m.values.len() {
        let at = m.coords[2 * e] as usize * n + m.coords[2 * e + 1] as usize;
        stored[at] = true;
        valued[at] |= m.values[e] != 0.0;
    }
    let inputs = [("A", a), ("B", b), ("M", m)];
    for (text, holds, complement) in [
        ("C<M>(i,j) = A(i,k) * B(k,j)", &valued, false),
        ("C<pattern(M)>(i,j) = A(i,k) * B(k,j)", &stored, false),
        ("C<!pattern(M)>(i,j) = A(i,k) * B(k,j)", &stored, true),
    ] {
        for formats in [
            &[("A", "csr"), ("B", "csr"), ("M", "csr"), ("C", "csr")][..],
            &[("A", "csr"), ("B", "dense"), ("M", "coo"), ("C", "dense")][..],
        ] {
            let got = check(text, formats, &inputs).to_coo();
            // A structural complement stores nothing where the mask has an entry (with a
            // sparse output: a dense one holds every coordinate).
            if complement && formats.iter().any(|&(t, f)| t == "C" && f == "csr") {
                for e in 0..got.values.len() {
                    let at = got.coords[2 * e] as usize * n + got.coords[2 * e + 1] as usize;
                    assert!(!stored[at], "{text}: an entry at {at}, inside the mask");
                }
            }
            let mut want = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    if holds[i * n + j] != complement {
                        want[i * n + j] = (0..n).map(|k| da[i * n + k] * db[k * n + j]).sum();
                    }
                }
            }
            let got = dense(&got);
            for (k, (x, y)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-12,
                    "{text} {formats:?}: C[{k}] = {x}, want {y}"
                );
            }
        }
    }
    // Masked SpMV, BFS's push step: only the masked rows.
    let v = random_coo(&mut r, &[n], 0.5);
    check(
        "y<!pattern(v)>(i) = A(i,j) * x(j)",
        &[("A", "csr"), ("v", "s"), ("x", "s"), ("y", "s")],
        &[
            ("A", random_coo(&mut r, &[n, n], 0.3)),
            ("v", v),
            ("x", random_coo(&mut r, &[n], 0.5)),
        ],
    );
}
