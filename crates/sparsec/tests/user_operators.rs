//! User-defined operators (`let name(a, b) = body [identity v];`): as a semiring's ⊕ and
//! ⊗ on both backends, against the built-in operator they restate and the reference;
//! element-wise, against values computed here, with the sparsity their bodies imply; and
//! every definition or use that cannot work, refused with its place.

mod common;

use common::{compare_with_reference, random_coo, rng, statement};
use sparsec::jit::Toolchain;
use sparsec::kernel::{Backend, Kernel};
use sparsec::notation;
use sparsec::notation::NotationErrorKind;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// Inputs for `A(i,j)` and `x(j)`: empty, 1x1, random, and a dense row among sparse ones
/// with explicit zeros and negative values.
fn spmv_sets(seed: u64) -> Vec<Vec<(&'static str, Coo)>> {
    let mut r = rng(seed);
    let skewed = {
        let mut coords = vec![];
        let mut values = vec![];
        for j in 0..7 {
            coords.extend([2, j]);
            values.push(j as f64 - 3.0);
        }
        coords.extend([5, 1, 5, 1]);
        values.extend([2.0, -4.0]);
        Coo::new(vec![8, 7], coords, values).unwrap()
    };
    [
        Coo::new(vec![4, 3], vec![], vec![]).unwrap(),
        random_coo(&mut r, &[1, 1], 1.0),
        random_coo(&mut r, &[9, 7], 0.3),
        skewed,
    ]
    .into_iter()
    .map(|a| {
        let x = random_coo(&mut r, &[a.dims[1]], 0.7);
        vec![("A", a), ("x", x)]
    })
    .collect()
}

fn run(expr: &str, formats: &[(&str, &str)], inputs: &[(&str, Coo)], backend: Backend) -> Tensor {
    let (stmt, tensors) = statement(expr, formats, inputs, &[]);
    let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default())
        .and_then(|k| k.with_backend(backend))
        .unwrap_or_else(|e| panic!("{expr} {formats:?}: {e}"));
    compare_with_reference(&kernel, &stmt, &tensors, &format!("{backend:?} {expr}"))
}

fn dense_values(t: &Tensor) -> Vec<f64> {
    let n: usize = t.dims().iter().product();
    let mut out = vec![t.fill(); n];
    t.for_each_stored(|c, v| {
        let flat = c
            .iter()
            .zip(t.dims())
            .fold(0, |acc, (&k, &d)| acc * d + k as usize);
        out[flat] = v;
    });
    out
}

/// A user operator restating a built-in one computes exactly what the built-in does, as
/// ⊕ and as ⊗, in sparse and dense outputs, on both backends.
#[test]
fn user_operators_restating_built_ins_compute_the_same() {
    let definitions = "let smaller(a, b) = where(a < b, a, b) identity inf; \
                       let add2(p, q) = p + q;";
    for (user, builtin) in [
        ("(smaller, +)", "(min, +)"),
        ("(min, add2)", "(min, +)"),
        ("(smaller, add2)", "(min, +)"),
        ("(+, add2)", "(+, +)"),
    ] {
        for y in ["dense", "s"] {
            for backend in [Backend::C, Backend::Jit] {
                for inputs in spmv_sets(1) {
                    let formats = [("A", "csr"), ("y", y)];
                    let mine = run(
                        &format!("{definitions} y(i) = A(i,j) * x(j) over {user}"),
                        &formats,
                        &inputs,
                        backend,
                    );
                    let theirs = run(
                        &format!("y(i) = A(i,j) * x(j) over {builtin}"),
                        &formats,
                        &inputs,
                        backend,
                    );
                    assert_eq!(dense_values(&mine), dense_values(&theirs), "{user} {y}");
                    assert_eq!(mine.fill().to_bits(), theirs.fill().to_bits());
                }
            }
        }
    }
}

/// An operator no built-in has: the larger absolute value, keeping its sign (the positive
/// one of a tie), as ⊕, over a matrix product stored sparse (the reference checks it, and
/// loops written here).
#[test]
fn an_operator_of_its_own_reduces_a_matrix_product() {
    let expr =
        "let absmax(a, b) = where(abs(a) > abs(b), a, where(abs(b) > abs(a), b, max(a, b))) \
                identity 0; \
                C(i,j) = A(i,k) * B(k,j) over (absmax, *)";
    let mut r = rng(7);
    for (m, k, n, density) in [(5, 4, 6, 0.4), (1, 1, 1, 1.0), (0, 3, 2, 0.5)] {
        let a = random_coo(&mut r, &[m, k], density);
        let b = random_coo(&mut r, &[k, n], density);
        let inputs = [("A", a), ("B", b)];
        for c in ["csr", "dense"] {
            let got = run(
                expr,
                &[("A", "csr"), ("B", "csr"), ("C", c)],
                &inputs,
                Backend::C,
            );
            let (_, tensors) = statement(expr, &[("A", "csr"), ("B", "csr")], &inputs, &[]);
            let (a, b) = (dense_values(&tensors[0]), dense_values(&tensors[1]));
            let mut want = vec![0.0f64; m * n];
            for i in 0..m {
                for j in 0..n {
                    for l in 0..k {
                        let x: f64 = a[i * k + l] * b[l * n + j];
                        let w = want[i * n + j];
                        if x.abs() > w.abs() || (x.abs() == w.abs() && x > w) {
                            want[i * n + j] = x;
                        }
                    }
                }
            }
            assert_eq!(dense_values(&got), want, "{c} {m}x{k}x{n}");
        }
    }
}

/// Called element-wise, an operator is its body: `relu` keeps the input's pattern, `bump`
/// (1 at zero) fills every component; values against those computed here.
#[test]
fn element_wise_calls_keep_the_sparsity_their_body_implies() {
    let mut r = rng(11);
    let a = random_coo(&mut r, &[6, 5], 0.4);
    let inputs = [("A", a)];
    let relu = "let relu(x) = max(x, 0); B(i,j) = relu(A(i,j))";
    let got = run(relu, &[("A", "csr"), ("B", "csr")], &inputs, Backend::C);
    let (_, tensors) = statement(relu, &[("A", "csr")], &inputs, &[]);
    let a_values = dense_values(&tensors[0]);
    let want: Vec<f64> = a_values.iter().map(|&v| v.max(0.0)).collect();
    assert_eq!(dense_values(&got), want);
    assert!(
        got.stored_values() <= tensors[0].stored_values(),
        "relu stores nothing A does not"
    );

    let bump = "let bump(x, s) = s * x + 1; B(i,j) = bump(A(i,j), 3)";
    for backend in [Backend::C, Backend::Jit] {
        let got = run(bump, &[("A", "csr"), ("B", "dense")], &inputs, backend);
        let want: Vec<f64> = a_values.iter().map(|&v| 3.0 * v + 1.0).collect();
        assert_eq!(dense_values(&got), want, "{backend:?}");
    }

    // Operators calling operators, with a tensor expression as an argument.
    let nested = "let sq(x) = x * x; let hyp(a, b) = sqrt(sq(a) + sq(b)); \
                  C(i,j) = hyp(A(i,j), 2 * A(i,j))";
    let got = run(nested, &[("A", "csr"), ("C", "csr")], &inputs, Backend::C);
    let want: Vec<f64> = a_values
        .iter()
        .map(|&v| (v * v + 4.0 * v * v).sqrt())
        .collect();
    let diff = dense_values(&got)
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    assert!(diff < 1e-12, "{diff}");
}

/// Every definition or use that cannot work is refused at its place, with why.
#[test]
fn bad_operators_are_refused_with_their_place() {
    for (text, kind, at, says) in [
        (
            "let g(a, b) = a + b + a * a * b * b identity 0; y(i) = A(i,j) * x(j) over (g, *)",
            "reduction",
            "g",
            "not associative",
        ),
        (
            "let avg(a, b) = (a + b) / 2 identity 0; y(i) = A(i,j) * x(j) over (avg, *)",
            "reduction",
            "avg",
            "not neutral",
        ),
        (
            "let lhs(a, b) = a identity 0; y(i) = A(i,j) * x(j) over (lhs, *)",
            "reduction",
            "lhs",
            "",
        ),
        (
            "let m(a, b) = min(a, b); y(i) = A(i,j) * x(j) over (m, +)",
            "reduction",
            "m",
            "declares no identity",
        ),
        (
            "let m(a, b) = min(a, b) identity 0; y(i) = A(i,j) * x(j) over (m, +)",
            "reduction",
            "m",
            "not neutral",
        ),
        (
            "let f(a) = a * x(i); y(i) = f(A(i,j))",
            "operator",
            "x(i)",
            "not a parameter",
        ),
        (
            "let f(a) = a(i); y(i) = f(A(i,j))",
            "operator",
            "a(i)",
            "with indices",
        ),
        (
            "let max(a, b) = a; y(i) = A(i,j)",
            "operator",
            "max",
            "built-in",
        ),
        (
            "let f(a) = a; let f(b) = b; y(i) = A(i,j)",
            "operator",
            "f",
            "defined twice",
        ),
        (
            "let f(a, a) = a; y(i) = A(i,j)",
            "operator",
            "a",
            "named twice",
        ),
        (
            "let f(a) = a; y(i) = f(A(i,j), x(j))",
            "arguments",
            "f(A(i,j), x(j))",
            "",
        ),
        (
            "let f(a) = a; y(i) = A(i,j) * x(j) over (min, f)",
            "arguments",
            "f",
            "",
        ),
        (
            "let f(a) = pattern(a); y(i) = f(A(i,j))",
            "operator",
            "pattern(a)",
            "pattern",
        ),
    ] {
        let err = notation::parse(text).unwrap_err();
        let matches = match err.kind() {
            NotationErrorKind::NotAReduction { .. } => kind == "reduction",
            NotationErrorKind::BadOperator { .. } => kind == "operator",
            NotationErrorKind::WrongArgumentCount { .. } => kind == "arguments",
            _ => false,
        };
        assert!(matches, "{text}: {:?}", err.kind());
        let span = err.span();
        assert_eq!(&text[span.start..span.end], at, "{text}");
        assert!(err.to_string().contains(says), "{text}: {err}");
    }
    for (text, expected) in [
        ("let f a = a; y = b", "`(`"),
        ("let f(a) a; y = b", "`=`"),
        ("let f(a) = a y = b", "`;`"),
        ("let f(a) = a identity x; y = b", "a number or `inf`"),
    ] {
        let message = notation::parse(text).unwrap_err().to_string();
        assert!(message.contains(expected), "{text}: {message}");
    }
}

/// Conversions between value types, element-wise on both backends: toward zero and
/// saturating for integers, rounded to the nearest `float` for `f32`, 1 or 0 for `bool`;
/// each keeps the input's pattern. Values against Rust's own `as` conversions.
#[test]
fn conversions_between_value_types() {
    let mut r = rng(5);
    let a = random_coo(&mut r, &[7, 6], 0.5);
    let inputs = [("A", a)];
    let scale = 3.0e9;
    type Conversion = fn(f64) -> f64;
    let cases: [(&str, Conversion); 6] = [
        ("i32", |x| (x * 3.0e9) as i32 as f64),
        ("i64", |x| (x * 3.0e9 * 1e10) as i64 as f64),
        ("f32", |x| (x * 3.0e9) as f32 as f64),
        ("bool", |x| f64::from(u8::from(x * 3.0e9 != 0.0))),
        ("f64", |x| x * 3.0e9),
        ("i32", |x| (-x * 3.0e9) as i32 as f64),
    ];
    for (k, (conversion, want_of)) in cases.into_iter().enumerate() {
        let argument = match k {
            1 => format!("A(i,j) * {scale} * 1e10"),
            5 => format!("-A(i,j) * {scale}"),
            _ => format!("A(i,j) * {scale}"),
        };
        let expr = format!("B(i,j) = {conversion}({argument})");
        for backend in [Backend::C, Backend::Jit] {
            let got = run(&expr, &[("A", "csr"), ("B", "csr")], &inputs, backend);
            let (_, tensors) = statement(&expr, &[("A", "csr")], &inputs, &[]);
            let want: Vec<f64> = dense_values(&tensors[0])
                .iter()
                .map(|&x| if x == 0.0 { 0.0 } else { want_of(x) })
                .collect();
            assert_eq!(dense_values(&got), want, "{expr} {backend:?}");
            assert!(got.stored_values() <= tensors[0].stored_values(), "{expr}");
        }
    }
}

/// Operators traced from Rust closures compute exactly what the same operators written as
/// `let` definitions do, as ⊕ and element-wise, on both backends.
#[test]
fn operators_traced_from_closures_match_their_written_definitions() {
    use sparsec::notation::traced::{Scalar, UserOperator};
    let absmax = UserOperator::binary("absmax", |a, b| {
        Scalar::where_(
            a.abs().gt(b.abs()),
            a.clone(),
            Scalar::where_(b.abs().gt(a.abs()), b.clone(), a.max(b)),
        )
    })
    .with_identity(0.0);
    let written = "let absmax(a, b) = where(abs(a) > abs(b), a, where(abs(b) > abs(a), b, \
                   max(a, b))) identity 0;";
    let shifted = UserOperator::unary("shifted", |x| 1.0 - 2.0 * x.clone() * x / 4.0);
    let capped = UserOperator::unary("capped", |x| x.min(f64::INFINITY) + x.max(-1e300));
    for backend in [Backend::C, Backend::Jit] {
        for inputs in spmv_sets(4) {
            let formats = [("A", "csr"), ("y", "s")];
            let statement = "y(i) = A(i,j) * x(j) over (absmax, *)";
            let traced = run(
                &format!("{} {statement}", absmax.definition()),
                &formats,
                &inputs,
                backend,
            );
            let theirs = run(
                &format!("{written} {statement}"),
                &formats,
                &inputs,
                backend,
            );
            assert_eq!(dense_values(&traced), dense_values(&theirs));
            let element_wise = run(
                &format!(
                    "{} {} B(i,j) = shifted(A(i,j)) + capped(A(i,j))",
                    shifted.definition(),
                    capped.definition()
                ),
                &[("A", "csr")],
                &inputs[..1],
                backend,
            );
            let a = &inputs[0].1;
            // Duplicates are summed; where A has no entry both operators see 0.
            let mut summed = vec![0.0; a.dims.iter().product()];
            for (k, &v) in a.values.iter().enumerate() {
                let (i, j) = (a.coords[2 * k] as usize, a.coords[2 * k + 1] as usize);
                summed[i * a.dims[1] + j] += v;
            }
            let want: Vec<f64> = summed
                .iter()
                .map(|&v| 1.0 - 2.0 * v * v / 4.0 + 2.0 * v)
                .collect();
            common::assert_close("traced element-wise", &dense_values(&element_wise), &want);
        }
    }
}
