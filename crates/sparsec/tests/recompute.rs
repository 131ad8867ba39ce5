//! Assemble once, compute many times: new input values of the same structure recompute the
//! output's values in place, checked against a fresh run and the reference evaluator.

mod common;
use common::*;
use rand::Rng;
use sparsec::kernel::Kernel;
use sparsec::reference;
use sparsec::tensor::{Tensor, ValueType};

/// The same tensors with fresh random values (some of them zero) in the same storage.
fn new_values(r: &mut rand::rngs::StdRng, tensors: &[Tensor]) -> Vec<Tensor> {
    tensors
        .iter()
        .map(|t| {
            let mut t = t.clone();
            for p in 0..t.values().len() {
                let x = if r.gen_bool(0.2) {
                    0.0
                } else {
                    r.gen_range(-3.0..3.0)
                };
                t.values_mut().set(p, x);
            }
            t
        })
        .collect()
}

/// Assemble on the first values, recompute on three more sets, and compare every result
/// with the reference and with a fresh run, structure included.
fn assemble_then_compute(
    expr: &str,
    formats: &[(&str, &str)],
    dims: &[(&str, &[usize])],
    threads: usize,
) {
    let mut r = rng(expr.len() as u64 + threads as u64);
    let inputs: Vec<_> = dims
        .iter()
        .map(|(name, d)| (*name, random_coo(&mut r, d, 0.2)))
        .collect();
    let (stmt, tensors) = statement(expr, formats, &inputs, &[]);
    let mut kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default())
        .unwrap_or_else(|e| panic!("{expr}: {e}"));
    kernel.set_threads(threads);
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let mut output = kernel.assemble(&refs, None).unwrap();
    let stored = output.tensor().stored_values();
    for round in 0..3 {
        let changed = new_values(&mut r, &tensors);
        let refs: Vec<&Tensor> = changed.iter().collect();
        kernel.compute(&refs, None, &mut output).unwrap();
        let fresh = kernel.run(&refs).unwrap();
        let expected = reference::evaluate(&stmt, &refs, None);
        let what = format!("{expr} {formats:?}, {threads} threads, round {round}");
        assert_eq!(output.tensor().format(), fresh.format(), "{what}");
        assert_eq!(
            output.tensor().levels(),
            fresh.levels(),
            "{what}: structure"
        );
        assert_eq!(output.tensor().stored_values(), stored, "{what}");
        let diff = output.tensor().max_difference(&expected).unwrap();
        assert!(diff <= 1e-9, "{what}: differs from the reference by {diff}");
        let diff = output.tensor().max_difference(&fresh).unwrap();
        assert!(diff <= 1e-12, "{what}: differs from a fresh run by {diff}");
    }
}

#[test]
fn sparse_outputs_recompute_in_place() {
    for threads in [1, 2] {
        assemble_then_compute(
            "A(i,j) = B(i,k) * C(k,j)",
            &[("A", "csr"), ("B", "csr"), ("C", "csr")],
            &[("B", &[17, 13]), ("C", &[13, 19])],
            threads,
        );
        assemble_then_compute(
            "A(i,j) = B(i,k) * C(k,j)",
            &[("A", "dcsr"), ("B", "dcsr"), ("C", "csr")],
            &[("B", &[17, 13]), ("C", &[13, 19])],
            threads,
        );
        assemble_then_compute(
            "A(i,j) = B(i,j) + C(i,j)",
            &[("A", "coo"), ("B", "csr"), ("C", "csc")],
            &[("B", &[9, 11]), ("C", &[9, 11])],
            threads,
        );
        assemble_then_compute(
            "A(j,i) = B(i,j)",
            &[("A", "csr"), ("B", "csr")],
            &[("B", &[9, 14])],
            threads,
        );
        assemble_then_compute(
            "A(i,j,l) = B(i,j,k) * C(k,l)",
            &[("A", "csf"), ("B", "csf")],
            &[("B", &[5, 6, 7]), ("C", &[7, 4])],
            threads,
        );
        // Rows placed out of order (a hashed level's iteration): kept as entries.
        assemble_then_compute(
            "A(i,j) = B(i,j) * 2",
            &[("A", "csr"), ("B", "dh")],
            &[("B", &[9, 30])],
            threads,
        );
        assemble_then_compute(
            "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
            &[("A", "csr"), ("B", "csr")],
            &[("B", &[12, 10]), ("C", &[12, 3]), ("D", &[3, 10])],
            threads,
        );
    }
}

#[test]
fn dense_outputs_recompute() {
    for threads in [1, 2] {
        assemble_then_compute(
            "y(i) = A(i,j) * x(j)",
            &[("A", "csr")],
            &[("A", &[20, 15]), ("x", &[15])],
            threads,
        );
    }
}

#[test]
fn accumulating_into_an_initial_sparse_output() {
    let mut r = rng(5);
    let b = random_coo(&mut r, &[8, 9], 0.3);
    let c = random_coo(&mut r, &[8, 9], 0.3);
    let (stmt, tensors) = statement(
        "A(i,j) += B(i,j) * C(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[("B", b), ("C", c)],
        &[],
    );
    let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default()).unwrap();
    let initial = Tensor::from_coo(
        &random_coo(&mut r, &[8, 9], 0.3),
        &stmt.tensors[0].format,
        ValueType::F64,
    )
    .unwrap();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let mut output = kernel.assemble(&refs, Some(&initial)).unwrap();
    let changed = new_values(&mut r, &tensors);
    let refs: Vec<&Tensor> = changed.iter().collect();
    kernel.compute(&refs, Some(&initial), &mut output).unwrap();
    let expected = reference::evaluate(&stmt, &refs, Some(&initial));
    let diff = output.tensor().max_difference(&expected).unwrap();
    assert!(diff <= 1e-9, "differs from the reference by {diff}");
}

#[test]
fn another_structure_is_refused_and_the_output_kept() {
    let mut r = rng(6);
    let formats = [("A", "csr"), ("B", "csr"), ("C", "csr")];
    let b = random_coo(&mut r, &[10, 10], 0.2);
    let c = random_coo(&mut r, &[10, 10], 0.2);
    let (stmt, tensors) = statement(
        "A(i,j) = B(i,k) * C(k,j)",
        &formats,
        &[("B", b.clone()), ("C", c)],
        &[],
    );
    let kernel = Kernel::from_statement(stmt, ValueType::F64, &Default::default()).unwrap();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let mut output = kernel.assemble(&refs, None).unwrap();
    let before = output.tensor().clone();
    let other_c = random_coo(&mut r, &[10, 10], 0.5);
    let (_, other) = statement(
        "A(i,j) = B(i,k) * C(k,j)",
        &formats,
        &[("B", b), ("C", other_c)],
        &[],
    );
    let refs: Vec<&Tensor> = other.iter().collect();
    let err = kernel.compute(&refs, None, &mut output).unwrap_err();
    assert!(
        err.to_string().contains("another nonzero structure"),
        "unexpected message: {err}"
    );
    assert_eq!(output.tensor(), &before);
}
