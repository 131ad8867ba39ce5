//! Fill values through the merge lattices (issue 56, point 2): over `(+, *)` an input
//! whose missing entries hold `f != 0` is read as `f` wherever it has no entry, in every
//! format and on both backends, and the output's fill value is computed from the
//! statement. Each kernel is checked against the reference evaluator run on the same
//! inputs stored dense (every component written out, so no fill value is involved), and
//! element-wise outputs keep only the coordinates some input has an entry at.

mod common;

use common::{random_coo, rng};
use sparsec::format::Format;
use sparsec::jit::Toolchain;
use sparsec::kernel::{Backend, Kernel};
use sparsec::notation::{self, NotationErrorKind, TensorDecl};
use sparsec::reference;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// An input: name, entries, format spelling (`""`: dense) and fill value.
type Input<'a> = (&'a str, Coo, &'a str, f64);

fn decls(expr: &str, output_format: &str, inputs: &[Input<'_>], dense: bool) -> Vec<TensorDecl> {
    let assignment = notation::parse(expr).unwrap();
    let lhs = &assignment.lhs;
    let format = |spelling: &str, order: usize| {
        (!dense && !spelling.is_empty()).then(|| Format::parse(spelling, order).unwrap())
    };
    let mut decls = vec![TensorDecl::new(&lhs.tensor)];
    decls[0].format = format(output_format, lhs.indices.len());
    for (name, coo, spelling, fill) in inputs {
        let mut decl = TensorDecl::new(*name).with_dims(&coo.dims);
        decl.format = format(spelling, coo.order());
        // Stored dense, every component is written out: the fill value shapes nothing.
        decls.push(if dense { decl } else { decl.with_fill(*fill) });
    }
    decls
}

fn tensors(stmt: &notation::cin::Statement, inputs: &[Input<'_>]) -> Vec<Tensor> {
    stmt.tensors[1..]
        .iter()
        .map(|t| {
            let (_, coo, _, fill) = inputs.iter().find(|i| i.0 == t.name).unwrap();
            Tensor::from_coo_filled(coo.clone(), &t.format, ValueType::F64, *fill).unwrap()
        })
        .collect()
}

/// Every component of `t`, its fill value where it stores none.
fn written_out(t: &Tensor) -> Tensor {
    t.convert(&Format::dense(t.dims().len())).unwrap()
}

/// Run `expr` on both backends with the inputs in their formats and fill values; compare
/// each result, written out, with the reference on the inputs written out. Returns the
/// C backend's result.
fn check(expr: &str, output_format: &str, inputs: &[Input<'_>]) -> Tensor {
    let assignment = notation::parse(expr).unwrap();
    let oracle_stmt = notation::bind(&assignment, &decls(expr, "", inputs, true), &[]).unwrap();
    let written: Vec<Tensor> = tensors(&oracle_stmt, inputs);
    let expected = reference::evaluate(&oracle_stmt, &written.iter().collect::<Vec<_>>(), None);
    let stmt = notation::bind(&assignment, &decls(expr, output_format, inputs, false), &[])
        .unwrap_or_else(|e| panic!("{expr}: {e}"));
    let given = tensors(&stmt, inputs);
    let mut results = Vec::new();
    for backend in [Backend::C, Backend::Jit] {
        let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default())
            .and_then(|k| k.with_backend(backend))
            .unwrap_or_else(|e| panic!("{expr}: {e}"));
        let got = kernel
            .run(&given.iter().collect::<Vec<_>>())
            .unwrap_or_else(|e| panic!("{backend:?} {expr}: {e}"));
        let diff = written_out(&got).max_difference(&expected).unwrap();
        assert!(
            diff <= 1e-9,
            "{backend:?} {expr} into {output_format}: differs from the reference by {diff}\n{}",
            kernel.kernel_source()
        );
        assert_eq!(got.fill().to_bits(), stmt.output_fill().to_bits(), "{expr}");
        results.push(got);
    }
    // The same stored coordinates; values may differ in the last bits where the
    // backends sum in different orders.
    let coordinates = |t: &Tensor| {
        let mut all = Vec::new();
        t.for_each_stored(|c, _| all.push(c.to_vec()));
        all
    };
    assert_eq!(coordinates(&results[0]), coordinates(&results[1]), "{expr}");
    assert!(
        results[0].max_difference(&results[1]).unwrap() <= 1e-12,
        "{expr}"
    );
    results.swap_remove(0)
}

/// Matrices: empty, 1x1, random with explicit zeros, and one with an empty row, a full
/// row and a repeated coordinate (summed).
fn matrices(seed: u64, dims: [usize; 2]) -> Vec<Coo> {
    let mut r = rng(seed);
    let mut with_zeros = random_coo(&mut r, &dims, 0.3);
    for v in with_zeros.values.iter_mut().step_by(3) {
        *v = 0.0;
    }
    let [m, n] = dims;
    let mut coords = vec![];
    let mut values = vec![];
    for j in 0..n {
        coords.extend([m as i64 - 1, j as i64]);
        values.push(j as f64 - 2.5);
    }
    coords.extend([0, 0, 0, 0]);
    values.extend([1.5, -4.0]);
    let skewed = Coo::new(dims.to_vec(), coords, values).unwrap();
    vec![
        Coo::new(dims.to_vec(), vec![], vec![]).unwrap(),
        random_coo(&mut r, &[1, 1], 1.0),
        with_zeros,
        skewed,
    ]
}

fn stored(t: &Tensor) -> usize {
    let mut n = 0;
    t.for_each_stored(|_, _| n += 1);
    n
}

/// The coordinates `a` or `b` stores an entry at.
fn union_size(a: &Coo, b: &Coo) -> usize {
    let keys = |c: &Coo| -> std::collections::BTreeSet<Vec<i64>> {
        c.coords.chunks(c.order()).map(<[i64]>::to_vec).collect()
    };
    keys(a).union(&keys(b)).count()
}

/// SpMV whose matrix's missing entries are 1, 2.5 or -inf, in every format that stores
/// the matrix differently: each row sums its stored products and the fill times the rest
/// of `x`.
#[test]
fn products_read_an_inputs_fill_value_where_it_has_no_entry() {
    let mut r = rng(5);
    for a in matrices(1, [6, 5]) {
        let x = random_coo(&mut r, &[a.dims[1]], 1.0);
        for format in [
            "csr", "dcsr", "csc", "coo", "hash", "dia", "bcsr:2x2", "sd", "dense",
        ] {
            for fill in [1.0, 2.5, f64::NEG_INFINITY] {
                for y in ["dense", "s"] {
                    let inputs = [("A", a.clone(), format, fill), ("x", x.clone(), "", 0.0)];
                    check("y(i) = A(i,j) * x(j)", y, &inputs);
                }
            }
        }
    }
}

/// Element-wise statements store only the coordinates an input has an entry at, and the
/// output's fill value is the right-hand side where every input is absent: `A + B` with
/// fills 2 and 3 has fill 5 and the union of their patterns; `exp(A)` has fill 1 and
/// `A`'s pattern; `A * B` with `B`'s fill 0 has `B`'s pattern and fill 0.
#[test]
fn element_wise_outputs_keep_their_inputs_patterns_and_compute_their_fill() {
    let mut r = rng(9);
    for a in matrices(2, [7, 6]) {
        let b = random_coo(&mut r, &a.dims, 0.4);
        for (fa, fb) in [("csr", "csr"), ("dcsr", "coo"), ("csc", "dcsr")] {
            for c in ["csr", "dcsr", "coo", "csc"] {
                let sum = check(
                    "C(i,j) = A(i,j) + B(i,j)",
                    c,
                    &[("A", a.clone(), fa, 2.0), ("B", b.clone(), fb, 3.0)],
                );
                assert_eq!(sum.fill(), 5.0);
                assert_eq!(stored(&sum), union_size(&a, &b), "A + B into {c}");
                let exp = check("C(i,j) = exp(A(i,j))", c, &[("A", a.clone(), fa, 0.0)]);
                assert_eq!(exp.fill(), 1.0);
                assert_eq!(stored(&exp), union_size(&a, &a), "exp(A) into {c}");
                let product = check(
                    "C(i,j) = A(i,j) * B(i,j)",
                    c,
                    &[("A", a.clone(), fa, 2.0), ("B", b.clone(), fb, 0.0)],
                );
                assert_eq!(product.fill(), 0.0);
                assert_eq!(stored(&product), union_size(&b, &b), "A * B into {c}");
                let shifted = check(
                    "C(i,j) = A(i,j) - B(i,j) / 2 + 1",
                    c,
                    &[("A", a.clone(), fa, -1.0), ("B", b.clone(), fb, 4.0)],
                );
                assert_eq!(shifted.fill(), -2.0);
            }
        }
    }
}

/// Where the value at an absent entry depends on something else (a broadcast vector, a
/// reduction), every coordinate is stored, and the fill value is what a coordinate that
/// no entry reaches would hold.
#[test]
fn broadcasts_and_reductions_of_filled_inputs_store_every_coordinate() {
    let mut r = rng(13);
    for a in matrices(3, [5, 8]) {
        let [m, n] = [a.dims[0], a.dims[1]];
        let c = random_coo(&mut r, &[m], 0.5);
        let x = random_coo(&mut r, &[n], 1.0);
        let rows = [("A", a.clone(), "dcsr", 1.0)];
        let broadcast = check(
            "C(i,j) = A(i,j) + c(i)",
            "csr",
            &[rows[0].clone(), ("c", c.clone(), "s", 0.0)],
        );
        assert_eq!(stored(&broadcast), m * n);
        let sums = check("y(i) = A(i,j)", "s", &rows);
        assert_eq!(sums.fill(), n as f64);
        check(
            "s = A(i,j) * x(j)",
            "",
            &[rows[0].clone(), ("x", x, "", 0.0)],
        );
        check(
            "C(i,k) = A(i,j) * B(j,k)",
            "csr",
            &[
                rows[0].clone(),
                ("B", random_coo(&mut r, &[n, 3], 0.5), "csr", 0.5),
            ],
        );
    }
}

/// The output's fill value is computed, so declaring one is refused; over a semiring other
/// than `(+, *)` an input's fill must stand for absence; a kernel compiled for one fill
/// value refuses an input with another.
#[test]
fn fill_values_that_cannot_hold_are_refused() {
    let a = Coo::new(vec![2, 2], vec![0, 1], vec![3.0]).unwrap();
    let x = Coo::new(vec![2], vec![0, 1], vec![1.0, 2.0]).unwrap();
    let bind = |expr: &str, output_fill: f64, a_fill: f64| {
        let decls = [
            TensorDecl::new("y").with_fill(output_fill),
            TensorDecl::new("A")
                .with_dims(&[2, 2])
                .with_format(Format::parse("csr", 2).unwrap())
                .with_fill(a_fill),
            TensorDecl::new("x").with_dims(&[2]),
        ];
        notation::bind(&notation::parse(expr).unwrap(), &decls, &[])
    };
    let bind_with_format = |format: &str| {
        let decls = [
            TensorDecl::new("y"),
            TensorDecl::new("A")
                .with_dims(&[2, 2])
                .with_format(Format::parse(format, 2).unwrap())
                .with_fill(1.0),
            TensorDecl::new("x").with_dims(&[2]),
        ];
        notation::bind(
            &notation::parse("y(i) = A(i,j) * x(j)").unwrap(),
            &decls,
            &[],
        )
        .unwrap()
    };
    let err = bind("y(i) = A(i,j) * x(j)", 1.0, 0.0).unwrap_err();
    assert!(matches!(err.kind(), NotationErrorKind::BadFill { tensor, .. } if tensor == "y"));
    assert!(err.to_string().contains("computed"), "{err}");
    let err = bind("y(i) = A(i,j) * x(j) over (min, +)", 0.0, 2.0).unwrap_err();
    assert!(matches!(err.kind(), NotationErrorKind::BadFill { tensor, .. } if tensor == "A"));
    assert!(err.to_string().contains("fill value 0 or inf"), "{err}");
    assert!(bind("y(i) = A(i,j) * x(j) over (min, +)", 0.0, f64::INFINITY).is_ok());

    let stmt = bind("y(i) = A(i,j) * x(j)", 0.0, 0.0).unwrap();
    let kernel = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default()).unwrap();
    let csr = Format::parse("csr", 2).unwrap();
    let a2 = Tensor::from_coo_filled(a.clone(), &csr, ValueType::F64, 2.0).unwrap();
    let x = Tensor::from_coo(&x, &Format::dense(1), ValueType::F64).unwrap();
    let err = kernel.run(&[&a2, &x]).unwrap_err().to_string();
    assert!(
        err.contains("`A` has the fill value 2") && err.contains("compiled for 0"),
        "{err}"
    );
    // ELL's unused slots repeat column 0: with a fill value they would read as entries.
    let ell = bind_with_format("ell");
    let Err(err) = Kernel::from_statement(ell, ValueType::F64, &Toolchain::default()) else {
        panic!("ELL with a fill value compiled");
    };
    assert!(err.to_string().contains("repeat column 0"), "{err}");
    // The same matrix stored dense writes every component out: its fill shapes nothing.
    let dense = a2.convert(&Format::dense(2)).unwrap();
    assert_eq!(
        kernel.run(&[&dense, &x]).unwrap().values().get(0),
        2.0 + 3.0 * 2.0
    );
}
