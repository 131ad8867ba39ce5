//! User names can be anything the front end accepts: tensors and index variables named
//! like generated code (`t0`, `A_vals`, `A2_pos`, `w0_count`), like C keywords or like the
//! runtime (`int`, `sparsec_out`) still compile and compute the right values, because
//! every printed identifier comes from one allocator.

mod common;
use common::*;
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::schedule::Schedule;
use sparsec::tensor::ValueType;

#[test]
fn index_variables_named_like_generated_code() {
    let mut r = rng(40);
    for (i, j) in [
        ("t0", "t1"),
        ("A_vals", "A2_pos"),
        ("pA2", "qA2"),
        ("int", "double"),
        ("sparsec_out", "sparsec_threads"),
        ("i_size", "j_size"),
    ] {
        let expr = format!("y({i}) = A({i},{j}) * x({j})");
        for f in ["csr", "dcsr", "coo", "hash"] {
            let a = random_coo(&mut r, &[12, 9], 0.3);
            let x = random_coo(&mut r, &[9], 1.0);
            check(&expr, &[("A", f)], &[("A", a), ("x", x)]);
        }
        let expr = format!("C({i},k) = A({i},{j}) * B({j},k)");
        let a = random_coo(&mut r, &[7, 8], 0.3);
        let b = random_coo(&mut r, &[8, 6], 0.3);
        check(
            &expr,
            &[("A", "csr"), ("B", "csr"), ("C", "csr")],
            &[("A", a), ("B", b)],
        );
    }
}

#[test]
fn tensors_named_like_generated_code() {
    let mut r = rng(41);
    // `A_vals` and `A` side by side: the values of `A` would print as `A_vals` too.
    let a = random_coo(&mut r, &[10, 10], 0.3);
    let b = random_coo(&mut r, &[10, 10], 0.3);
    check(
        "t0(i,j) = A(i,j) + A_vals(i,j)",
        &[("A", "csr"), ("A_vals", "csr"), ("t0", "csr")],
        &[("A", a), ("A_vals", b)],
    );
    let a = random_coo(&mut r, &[10, 10], 0.3);
    let x = random_coo(&mut r, &[10], 1.0);
    check(
        "A2(i) = A(i,j) * A2_pos(j)",
        &[("A", "csr")],
        &[("A", a), ("A2_pos", x)],
    );
}

#[test]
fn schedule_variables_named_like_generated_code() {
    let mut r = rng(42);
    let a = random_coo(&mut r, &[20, 16], 0.3);
    let x = random_coo(&mut r, &[16], 1.0);
    for schedule in [
        "split(j,A_vals,j1,2)",
        "split(i,t0,sparsec_oom,4)",
        "fuse(i,j,pA2),pos(pA2,A2_pos,A(i,j)),split(A2_pos,int,w0_count,8)",
    ] {
        let (stmt, tensors) = statement(
            "y(i) = A(i,j) * x(j)",
            &[("A", "csr")],
            &[("A", a.clone()), ("x", x.clone())],
            &[],
        );
        let parsed = Schedule::parse(schedule).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        let kernel =
            Kernel::scheduled(stmt.clone(), &parsed, ValueType::F64, &Toolchain::default())
                .unwrap_or_else(|e| panic!("{schedule}: {e}"));
        compare_with_reference(&kernel, &stmt, &tensors, schedule);
    }
}

/// Index variables and tensors named like words other targets' languages reserve (CUDA's
/// `threadIdx` and `blockIdx`, C++'s `class` and `template`, OpenCL C's `kernel`,
/// `global`, `local`, `half`) compile and compute on every target.
#[test]
fn names_reserved_by_other_targets_languages() {
    use sparsec::kernel::Backend;
    let mut r = rng(42);
    // Output, matrix, vector, row and column variables.
    for (y, a, x, i, j) in [
        ("threadIdx", "blockIdx", "kernel", "global", "local"),
        ("half", "class", "template", "kernel", "threadIdx"),
    ] {
        let expr = format!("{y}({i}) = {a}({i},{j}) * {x}({j})");
        let matrix = random_coo(&mut r, &[9, 7], 0.4);
        let vector = random_coo(&mut r, &[7], 1.0);
        let (stmt, tensors) = statement(&expr, &[(a, "csr")], &[(a, matrix), (x, vector)], &[]);
        for backend in [Backend::C, Backend::Jit] {
            let kernel =
                Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default())
                    .and_then(|k| k.with_backend(backend))
                    .unwrap_or_else(|e| panic!("{expr} on {backend:?}: {e}"));
            compare_with_reference(&kernel, &stmt, &tensors, &format!("{expr}, {backend:?}"));
        }
    }
}
