//! The sparse reference evaluator: small hand-computed cases, agreement with a dense
//! oracle on random statements, and inputs too large for a dense evaluation.

use sparsec::format::Format;
use sparsec::notation::ast::{MathFn, Op};
use sparsec::notation::cin::{CExpr, Statement};
use sparsec::notation::{bind, parse, TensorDecl};
use sparsec::reference::{evaluate, magnitude};
use sparsec::tensor::{Coo, Tensor, ValueType, Values};

/// A tensor in `format` from a row-major dense array (zeros are not stored).
fn tensor(dims: &[usize], data: &[f64], format: &str) -> Tensor {
    assert_eq!(dims.iter().product::<usize>(), data.len());
    let mut coords = vec![];
    let mut values = vec![];
    for (flat, &x) in data.iter().enumerate() {
        if x == 0.0 {
            continue;
        }
        let mut rest = flat;
        let mut c = vec![0i64; dims.len()];
        for m in (0..dims.len()).rev() {
            c[m] = (rest % dims[m]) as i64;
            rest /= dims[m];
        }
        coords.extend(c);
        values.push(x);
    }
    let coo = Coo::new(dims.to_vec(), coords, values).unwrap();
    let format = Format::parse(format, dims.len()).unwrap();
    Tensor::from_coo(&coo, &format, ValueType::F64).unwrap()
}

fn dense(dims: &[usize], data: &[f64]) -> Tensor {
    tensor(dims, data, "dense")
}

/// Bind `text` with the given inputs' dims (output inferred) and evaluate.
fn run(text: &str, inputs: &[(&str, &Tensor)], init: Option<&Tensor>) -> (Statement, Tensor) {
    let a = parse(text).unwrap();
    let mut decls = vec![TensorDecl::new(a.lhs.tensor.clone())];
    if let Some(init) = init {
        decls[0].dims = Some(init.dims().to_vec());
    }
    for (name, t) in inputs {
        decls.push(
            TensorDecl::new(*name)
                .with_dims(t.dims())
                .with_format(t.format().clone()),
        );
    }
    let stmt = bind(&a, &decls, &[]).unwrap();
    let names: Vec<&str> = stmt.tensors[1..].iter().map(|t| t.name.as_str()).collect();
    let given: Vec<&str> = inputs.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, given, "inputs in order of first appearance");
    let ts: Vec<&Tensor> = inputs.iter().map(|(_, t)| *t).collect();
    let out = evaluate(&stmt, &ts, init);
    (stmt, out)
}

fn values(t: &Tensor) -> Vec<f64> {
    assert!(t.format().is_all_dense());
    assert_eq!(t.format(), &Format::dense(t.order()));
    match t.values() {
        Values::F64(v) => v.clone(),
        Values::F32(_) => panic!("reference output must be f64"),
    }
}

#[test]
fn spmv() {
    #[rustfmt::skip]
    let a = tensor(&[3, 4], &[
        1.0, 0.0, 2.0, 0.0,
        0.0, 0.0, 0.0, 0.0,
        0.0, 3.0, 0.0, 4.0,
    ], "csr");
    let x = dense(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let (_, y) = run("y(i) = A(i,j) * x(j)", &[("A", &a), ("x", &x)], None);
    assert_eq!(y.dims(), &[3]);
    assert_eq!(values(&y), vec![7.0, 0.0, 22.0]);
}

#[test]
fn matrix_product_in_other_formats() {
    let a = tensor(&[2, 3], &[1.0, 2.0, 0.0, 0.0, -1.0, 3.0], "dcsr");
    let b = tensor(&[3, 2], &[1.0, 0.0, 2.0, 1.0, 0.0, 4.0], "csc");
    let (_, c) = run("C(i,j) = A(i,k) * B(k,j)", &[("A", &a), ("B", &b)], None);
    assert_eq!(c.dims(), &[2, 2]);
    // [1 2 0; 0 -1 3] * [1 0; 2 1; 0 4] = [5 2; -2 11]
    assert_eq!(values(&c), vec![5.0, 2.0, -2.0, 11.0]);
    // Transposed access: C = A * A^T.
    let (_, c) = run("C(i,j) = A(i,k) * A(j,k)", &[("A", &a)], None);
    assert_eq!(values(&c), vec![5.0, -2.0, -2.0, 10.0]);
}

#[test]
fn reduction_is_placed_around_its_term_only() {
    let b = dense(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let c = dense(&[2], &[10.0, 20.0]);
    // y(i) = (sum_j B(i,j)) + c(i): c is added once, not once per j.
    let (_, y) = run("y(i) = B(i,j) + c(i)", &[("B", &b), ("c", &c)], None);
    assert_eq!(values(&y), vec![16.0, 35.0]);
    // y(i) = c(i) * sum_j B(i,j) is the same as sum_j c(i) * B(i,j).
    let (_, y) = run("y(i) = c(i) * B(i,j)", &[("c", &c), ("B", &b)], None);
    assert_eq!(values(&y), vec![60.0, 300.0]);
    // The sum wraps only B: y(i) = 1 - sum_j B(i,j).
    let (_, y) = run("y(i) = 1 - B(i,j)", &[("B", &b)], None);
    assert_eq!(values(&y), vec![1.0 - 6.0, 1.0 - 15.0]);
    let (_, y) = run("y(i) = -(2 * c(i)) + 1", &[("c", &c)], None);
    assert_eq!(values(&y), vec![-19.0, -39.0]);
}

#[test]
fn division_by_stored_and_structural_zeros() {
    // `a` stores only its nonzeros; `b` and `d` are dense (every component stored).
    let a = tensor(&[5], &[0.0, 2.0, 0.0, 3.0, -1.0], "sv");
    let b = dense(&[5], &[0.0, 4.0, 5.0, 0.0, 0.0]);
    let d = dense(&[5], &[0.0, 2.0, 0.0, 3.0, -1.0]);
    let (_, y) = run("y(i) = a(i) / b(i)", &[("a", &a), ("b", &b)], None);
    let y = values(&y);
    assert_eq!(
        y[0], 0.0,
        "an unstored numerator is a structural 0, even over 0"
    );
    assert_eq!(y[1], 0.5);
    assert_eq!(y[2], 0.0);
    assert_eq!(y[3], f64::INFINITY);
    assert_eq!(y[4], f64::NEG_INFINITY);
    // Stored zeros follow IEEE: 0 / 0 is NaN.
    let (_, y) = run("y(i) = d(i) / b(i)", &[("d", &d), ("b", &b)], None);
    let y = values(&y);
    assert!(y[0].is_nan(), "a stored 0 / a stored 0 is NaN");
    assert_eq!(y[2], 0.0);
    // A literal numerator is stored everywhere: IEEE throughout.
    let (_, y) = run("y(i) = 1 / b(i)", &[("b", &b)], None);
    assert_eq!(values(&y)[1], 0.25);
    assert_eq!(values(&y)[0], f64::INFINITY);
}

#[test]
fn accumulate_adds_to_the_initial_output() {
    let x = dense(&[3], &[1.0, 0.0, 2.0]);
    let init = tensor(&[3], &[10.0, 20.0, 0.0], "sv");
    let (stmt, y) = run("y(i) += 2 * x(i)", &[("x", &x)], Some(&init));
    assert!(stmt.accumulate);
    assert_eq!(values(&y), vec![12.0, 20.0, 4.0]);
    // Without an initial output, += starts from zeros.
    let y = evaluate(&stmt, &[&x], None);
    assert_eq!(values(&y), vec![2.0, 0.0, 4.0]);
    // `=` ignores the initial contents.
    let (stmt, _) = run("y(i) = 2 * x(i)", &[("x", &x)], Some(&init));
    assert_eq!(
        values(&evaluate(&stmt, &[&x], Some(&init))),
        vec![2.0, 0.0, 4.0]
    );
}

#[test]
fn scalar_output() {
    let b = tensor(&[4], &[1.0, 0.0, 3.0, 2.0], "sv");
    let c = dense(&[4], &[2.0, 5.0, 1.0, -1.0]);
    let (_, a) = run("a = B(i) * C(i)", &[("B", &b), ("C", &c)], None);
    assert_eq!(a.dims(), &[] as &[usize]);
    assert_eq!(values(&a), vec![3.0]);
    assert_eq!(a.to_coo().values, vec![3.0]);
    // Scalar inputs.
    let s = dense(&[], &[1.5]);
    let (_, y) = run("y(i) = alpha * C(i)", &[("alpha", &s), ("C", &c)], None);
    assert_eq!(values(&y), vec![3.0, 7.5, 1.5, -1.5]);
    // Sum of all entries of a matrix.
    let m = dense(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let (stmt, a) = run("a = M(i,j)", &[("M", &m)], None);
    assert_eq!(stmt.lhs.len(), 0);
    assert_eq!(values(&a), vec![10.0]);
}

#[test]
fn broadcast_over_a_left_hand_side_variable() {
    let b = dense(&[2], &[1.0, 2.0]);
    let stmt = bind(
        &parse("A(i,j) = b(i)").unwrap(),
        &[
            TensorDecl::new("A").with_dims(&[2, 3]),
            TensorDecl::new("b").with_dims(&[2]),
        ],
        &[],
    )
    .unwrap();
    let a = evaluate(&stmt, &[&b], None);
    assert_eq!(a.dims(), &[2, 3]);
    assert_eq!(values(&a), vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    let stmt = bind(
        &parse("A(j,i) = b(i)").unwrap(),
        &[TensorDecl::new("A"), TensorDecl::new("b").with_dims(&[2])],
        &[("j".into(), 3)],
    )
    .unwrap();
    let a = evaluate(&stmt, &[&b], None);
    assert_eq!(a.dims(), &[3, 2]);
    assert_eq!(values(&a), vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
}

#[test]
fn inputs_with_padding_duplicates_and_f32() {
    // Duplicates are summed; ELL padding reads as zeros; f32 values are widened.
    let coo = Coo::new(
        vec![2, 3],
        vec![0, 1, 1, 2, 0, 1, 1, 0],
        vec![1.0, 2.0, 0.5, 4.0],
    )
    .unwrap();
    let ell = Tensor::from_coo(&coo, &Format::parse("ell", 2).unwrap(), ValueType::F32).unwrap();
    let x = dense(&[3], &[1.0, 10.0, 100.0]);
    let (_, y) = run("y(i) = A(i,j) * x(j)", &[("A", &ell), ("x", &x)], None);
    assert_eq!(values(&y), vec![15.0, 204.0]);
}

#[test]
fn million_point_iteration_space() {
    // 100 x 100 x 100 matrix product: 1e6 points of (i, j, k).
    let n = 100;
    let a: Vec<f64> = (0..n * n).map(|x| (x % 7) as f64 - 3.0).collect();
    let b: Vec<f64> = (0..n * n).map(|x| (x % 5) as f64).collect();
    let ta = tensor(&[n, n], &a, "csr");
    let tb = dense(&[n, n], &b);
    let start = std::time::Instant::now();
    let (_, c) = run("C(i,j) = A(i,k) * B(k,j)", &[("A", &ta), ("B", &tb)], None);
    let elapsed = start.elapsed();
    let c = values(&c);
    for i in [0, 17, 99] {
        for j in [0, 42, 99] {
            let want: f64 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
            assert_eq!(c[i * n + j], want);
        }
    }
    assert!(elapsed.as_secs_f64() < 5.0, "took {elapsed:?}");
}

/// Equal non-finite components agree in both comparisons (`--check` and `max_difference`);
/// a NaN against a number, or `+inf` against `-inf`, is an infinite difference.
#[test]
fn non_finite_components_compare_by_value() {
    use sparsec::reference::{magnitude, max_error};
    let x = dense(&[4], &[f64::NAN, 1.0, -3.0, 2.0]);
    let z = dense(&[4], &[1.0, 0.0, 0.0, 4.0]);
    // NaN, 1/0 = +inf, -3/0 = -inf, 0.5.
    let (stmt, y) = run("y(i) = x(i) / z(i)", &[("x", &x), ("z", &z)], None);
    let m = magnitude(&stmt, &[&x, &z], None);
    let same = dense(&[4], &[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.5]);
    assert_eq!(max_error(&same, &y, &m), 0.0);
    assert_eq!(y.max_difference(&same), Some(0.0));
    for wrong in [
        [0.0, f64::INFINITY, f64::NEG_INFINITY, 0.5],
        [f64::NAN, f64::NEG_INFINITY, f64::NEG_INFINITY, 0.5],
        [f64::NAN, f64::INFINITY, 1.0, 0.5],
    ] {
        let wrong = dense(&[4], &wrong);
        assert_eq!(
            max_error(&wrong, &y, &m),
            f64::INFINITY,
            "{:?}",
            wrong.values()
        );
        assert_eq!(y.max_difference(&wrong), Some(f64::INFINITY));
    }
}

/// A dense oracle for the sparse evaluator: the right-hand side at every point of the
/// index space (`Sum` loops over its variable's whole range), on dense copies of the
/// inputs that remember which components are stored. `magnitude` evaluates the sum of the
/// terms' absolute values instead. Stored values follow IEEE arithmetic; an unstored
/// component is a structural zero that annihilates products and numerators.
fn dense_oracle(stmt: &Statement, inputs: &[&Tensor], magnitude: bool) -> Vec<f64> {
    fn strides(dims: &[usize]) -> Vec<usize> {
        let mut s = vec![1; dims.len()];
        for m in (0..dims.len().saturating_sub(1)).rev() {
            s[m] = s[m + 1] * dims[m + 1];
        }
        s
    }
    // Per input, each component's value and whether it is stored.
    let data: Vec<Vec<(f64, bool)>> = inputs
        .iter()
        .map(|t| {
            let st = strides(t.dims());
            let mut d = vec![(0.0, false); t.dims().iter().product()];
            t.for_each_stored(|c, v| {
                let at = c
                    .iter()
                    .zip(&st)
                    .map(|(&c, &s)| c as usize * s)
                    .sum::<usize>();
                d[at] = (d[at].0 + v, true);
            });
            d
        })
        .collect();
    /// The value at the current point, and whether it is a structural zero.
    fn eval(
        e: &CExpr,
        s: &Statement,
        d: &[Vec<(f64, bool)>],
        env: &mut [usize],
        mag: bool,
    ) -> (f64, bool) {
        let abs = |x: f64| if mag { x.abs() } else { x };
        match e {
            CExpr::Access(a) => {
                let st = strides(&s.tensors[a.tensor].dims);
                let flat: usize = a.indices.iter().zip(&st).map(|(&v, &s)| env[v] * s).sum();
                let (x, stored) = d[a.tensor - 1][flat];
                (abs(x), !stored)
            }
            CExpr::Literal(x) => (abs(*x), false),
            CExpr::Neg(e) if mag => eval(e, s, d, env, mag),
            CExpr::Neg(e) => {
                let (x, structural) = eval(e, s, d, env, mag);
                (if structural { x } else { -x }, structural)
            }
            CExpr::Binary(op, a, b) => {
                let (x, x_structural) = eval(a, s, d, env, mag);
                let (y, y_structural) = eval(b, s, d, env, mag);
                let structural = match op {
                    Op::Mul => x_structural || y_structural,
                    Op::Div => x_structural,
                    Op::Add | Op::Sub => x_structural && y_structural,
                };
                let value = match op {
                    _ if structural => 0.0,
                    Op::Add => x + y,
                    Op::Sub if mag => x + y,
                    Op::Sub => x - y,
                    Op::Mul => x * y,
                    Op::Div => x / y,
                };
                (value, structural)
            }
            CExpr::Math(f, args) => {
                // f(0) = 0 keeps an absent argument absent; otherwise the function is
                // applied to its zero. Magnitudes: the result's, scaled by its arguments'.
                let values: Vec<(f64, bool)> =
                    args.iter().map(|a| eval(a, s, d, env, false)).collect();
                // `pattern` is 1 where its argument has an entry, absent elsewhere.
                if *f == MathFn::Pattern {
                    return if values[0].1 {
                        (0.0, true)
                    } else {
                        (1.0, false)
                    };
                }
                // Decided here from the function's value at zero, not from its declared
                // algebra: the oracle shares no assumption with the evaluator.
                if f.eval(&vec![0.0; args.len()]) == 0.0 && values.iter().all(|v| v.1) {
                    return (0.0, true);
                }
                let at: Vec<f64> = values
                    .iter()
                    .map(|&(x, structural)| if structural { 0.0 } else { x })
                    .collect();
                let value = f.eval(&at);
                if !mag {
                    return (value, false);
                }
                let spread: f64 = args.iter().map(|a| eval(a, s, d, env, true).0).sum();
                (value.abs() * (1.0 + spread) + spread, false)
            }
            CExpr::Sum(v, body) => (0..s.vars[*v].size)
                .map(|i| {
                    env[*v] = i;
                    eval(body, s, d, env, mag)
                })
                .fold((0.0, true), |(total, all), (x, structural)| {
                    (total + x, all && structural)
                }),
        }
    }
    // The same algebra as the evaluator's: reductions distributed over their factors.
    let rhs = sparsec::reference::distribute_reductions(&stmt.rhs);
    let dims = &stmt.tensors[0].dims;
    let mut out = vec![];
    let mut env = vec![0; stmt.vars.len()];
    for flat in 0..dims.iter().product() {
        let mut rest = flat;
        for (m, &v) in stmt.lhs.iter().enumerate().rev() {
            env[v] = rest % dims[m];
            rest /= dims[m];
        }
        out.push(eval(&rhs, stmt, &data, &mut env, magnitude).0);
    }
    out
}

/// A small xorshift generator: reproducible random tensors without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A random tensor: each component stored with probability `density`, a tenth of the
/// stored ones explicit zeros.
fn random(rng: &mut Rng, dims: &[usize], density: f64, format: &str) -> Tensor {
    let (mut coords, mut values) = (vec![], vec![]);
    let n: usize = dims.iter().product();
    for flat in 0..n {
        if rng.unit() >= density {
            continue;
        }
        let mut rest = flat;
        let mut c = vec![0i64; dims.len()];
        for m in (0..dims.len()).rev() {
            c[m] = (rest % dims[m]) as i64;
            rest /= dims[m];
        }
        coords.extend(c);
        values.push(if rng.unit() < 0.1 {
            0.0
        } else {
            rng.unit() * 4.0 - 2.0
        });
    }
    let coo = Coo::new(dims.to_vec(), coords, values).unwrap();
    let format = Format::parse(format, dims.len()).unwrap();
    Tensor::from_coo(&coo, &format, ValueType::F64).unwrap()
}

#[test]
fn agrees_with_the_dense_oracle_on_random_statements() {
    // Index variables i, j, k, l have sizes 4, 5, 3, 2; inputs are named by their order.
    let size = |v: char| match v {
        'i' => 4,
        'j' => 5,
        'k' => 3,
        _ => 2,
    };
    #[rustfmt::skip]
    let cases: &[(&str, &str, &[&str])] = &[
        ("y(i) = A(i,j) * x(j)", "dense", &["csr", "dense"]),
        ("y(i) = A(i,j) * x(j)", "sv", &["csr", "sv"]),
        ("C(i,j) = A(i,k) * B(k,j)", "dense", &["csr", "dense"]),
        ("C(i,j) = A(i,k) * B(k,j)", "csr", &["csr", "csr"]),
        ("C(i,j) = A(i,k) * B(k,j)", "csc", &["csc", "dcsr"]),
        ("C(i,j) = A(i,j) + B(i,j)", "csr", &["csr", "csr"]),
        ("C(i,j) = A(i,j) - B(i,j)", "dense", &["csr", "coo"]),
        ("C(i,j) = A(i,j) / B(i,j)", "csr", &["csr", "csr"]),
        ("C(i,j) = (A(i,j) + 1) / B(i,j)", "dense", &["csr", "csr"]),
        ("C(i,j) = 2 / (A(i,j) - 1)", "csr", &["csr"]),
        ("y(i) = A(i,j) + 2", "dense", &["csr"]),
        ("y(i) = A(i,j) * x(j) + z(i)", "sv", &["csr", "sv", "sv"]),
        ("y(i) = (A(i,j) + x(j)) * 2", "dense", &["csr", "sv"]),
        ("y(i) = -A(i,j) / (x(j) + 1)", "dense", &["csr", "sv"]),
        ("C(i,j) = A(i,j) * x(i) - B(i,j) / 2", "csr", &["csr", "sv", "csr"]),
        ("Y(i,j) = T(i,j,k) * x(k)", "csr", &["csf", "sv"]),
        ("Y(i,l) = T(i,j,k) * A(j,k) * B(k,l)", "dense", &["csf", "csr", "csr"]),
        // Products of three or more factors under a sum are joined one factor at a time.
        ("C(i,j) = A(i,j) * B(i,k) * D(k,j)", "csr", &["csr", "dense", "dense"]),
        ("C(i,j) = A(i,j) * B(i,k) * D(k,j)", "dense", &["coo", "csr", "csc"]),
        ("Y(i,l) = T(i,j,k) * A(j,l) * B(k,l)", "dense", &["csf", "dense", "csr"]),
        ("y(i) = A(i,j) * x(j) * z(j) * w(i)", "sv", &["csr", "sv", "dense", "sv"]),
        ("y(i) = x(i) * z(i) * A(i,j)", "dense", &["sv", "sv", "csr"]),
        ("y(i) = A(i,i) * B(i,j) * x(j)", "dense", &["csr", "csr", "sv"]),
        ("a = x(i) * y(i) * z(i)", "dense", &["sv", "dense", "sv"]),
        ("y(i) = 2 * A(i,j) * x(j)", "dense", &["csr", "sv"]),
        ("y(i) = A(i,j) * (x(j) * z(j))", "dense", &["csr", "sv", "sv"]),
        ("y(i) = A(i,j) * x(j) * (z(j) + 1)", "dense", &["csr", "sv", "sv"]),
        ("T(i,j,k) = A(i,j) + x(k)", "csf", &["csr", "sv"]),
        ("T(i,j,k) = A(i,j) * x(k)", "csf", &["csr", "sv"]),
        ("a = T(i,j,k) * T(i,j,k)", "dense", &["csf"]),
        ("a = x(i) * y(i)", "dense", &["sv", "sv"]),
        ("a = x(j) + 1", "dense", &["sv"]),
        ("y(i) = s * x(i) + 3", "sv", &["dense", "sv"]),
        // Math functions: f(0) = 0 keeps the pattern, exp(0) = 1 and cos(0) = 1 fill it.
        ("C(i,j) = sqrt(abs(A(i,j)))", "csr", &["csr"]),
        ("C(i,j) = abs(A(i,j)) * B(i,j)", "csr", &["csr", "csr"]),
        ("C(i,j) = exp(A(i,j))", "dense", &["csr"]),
        ("C(i,j) = exp(A(i,j)) * B(i,j)", "csr", &["csr", "csr"]),
        ("y(i) = sqrt(abs(A(i,j) * x(j)))", "dense", &["csr", "sv"]),
        ("y(i) = pow(x(i), 2) + cos(z(i))", "sv", &["sv", "sv"]),
        ("C(i,j) = log(abs(A(i,j)) + 1) * B(i,j)", "csr", &["csr", "csr"]),
        ("y(i) = floor(A(i,j)) * ceil(x(j)) + tan(sin(z(i)))", "dense", &["csr", "sv", "sv"]),
        // max(a, 0) = ReLU keeps the pattern; max of two operands has their union's.
        ("C(i,j) = max(A(i,j), 0)", "csr", &["csr"]),
        ("C(i,j) = min(A(i,j), B(i,j)) * 2", "csr", &["csr", "csr"]),
        ("C(i,j) = max(A(i,j), x(i))", "dense", &["csr", "sv"]),
        ("y(i) = max(A(i,j), B(i,j)) * x(j)", "dense", &["csr", "coo", "sv"]),
        // Comparisons are 1 or 0: `>` keeps the pattern, `>=` fills it; `where` selects.
        ("C(i,j) = A(i,j) > 0", "csr", &["csr"]),
        ("C(i,j) = A(i,j) >= B(i,j)", "dense", &["csr", "csr"]),
        ("C(i,j) = where(A(i,j) > 0, A(i,j), 0) * B(i,j)", "csr", &["csr", "csr"]),
        ("y(i) = where(A(i,j) != x(j), A(i,j), x(j) + 1)", "dense", &["csr", "sv"]),
        ("C(i,j) = (A(i,j) < B(i,j)) + (A(i,j) == B(i,j))", "dense", &["csr", "coo"]),
        // Masks: the mask is a factor of the right-hand side.
        ("C<M>(i,j) = A(i,k) * B(k,j)", "csr", &["csr", "csr", "csr"]),
        ("C<pattern(M)>(i,j) = A(i,k) * B(k,j)", "dense", &["csr", "csr", "csr"]),
        ("C<!M>(i,j) = A(i,j) + B(i,j)", "csr", &["csr", "csr", "coo"]),
        ("y<!pattern(m)>(i) = A(i,j) * x(j)", "sv", &["csr", "sv", "sv"]),
    ];
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for &(text, out_format, formats) in cases {
        let ast = parse(text).unwrap();
        // Each input's dims from its indices, in order of first appearance.
        let mut accesses: Vec<(String, Vec<usize>)> = vec![];
        let mut rest = text.split_once('=').unwrap().1;
        while let Some(open) = rest.find(|c: char| c.is_ascii_alphabetic()) {
            rest = &rest[open..];
            let name_len = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            let name = rest[..name_len].to_string();
            rest = &rest[name_len..];
            if sparsec::notation::ast::math_function(&name).is_some() {
                continue;
            }
            let dims = if rest.starts_with('(') {
                let close = rest.find(')').unwrap();
                let dims = rest[1..close]
                    .split(',')
                    .map(|v| size(v.trim().chars().next().unwrap()))
                    .collect();
                rest = &rest[close..];
                dims
            } else {
                vec![]
            };
            if !accesses.iter().any(|(n, _)| *n == name) {
                accesses.push((name, dims));
            }
        }
        // A mask (`C<!pattern(M)>(i,j)`) has the output's indices; it comes last.
        let lhs = text.split_once('=').unwrap().0;
        if let (Some(open), Some(close)) = (lhs.find('<'), lhs.find('>')) {
            let name = lhs[open + 1..close]
                .trim_start_matches(['!', '~'])
                .trim_start_matches("pattern(")
                .trim_end_matches(')')
                .to_string();
            let indices = &lhs[lhs.rfind('(').unwrap() + 1..lhs.rfind(')').unwrap()];
            let dims = indices
                .split(',')
                .map(|v| size(v.trim().chars().next().unwrap()))
                .collect();
            accesses.push((name, dims));
        }
        assert_eq!(accesses.len(), formats.len(), "{text}");
        for density in [0.0, 0.3, 0.8] {
            let inputs: Vec<Tensor> = accesses
                .iter()
                .zip(formats)
                .map(|((_, dims), f)| random(&mut rng, dims, density, f))
                .collect();
            let mut decls = vec![TensorDecl::new(ast.lhs.tensor.clone())
                .with_format(Format::parse(out_format, ast.lhs.indices.len()).unwrap())];
            for ((name, _), t) in accesses.iter().zip(&inputs) {
                decls.push(
                    TensorDecl::new(name.as_str())
                        .with_dims(t.dims())
                        .with_format(t.format().clone()),
                );
            }
            let sizes: Vec<(String, usize)> =
                "ijkl".chars().map(|v| (v.to_string(), size(v))).collect();
            let stmt = bind(&ast, &decls, &sizes).unwrap();
            // In the statement's order (a mask comes first in its right-hand side).
            let refs: Vec<&Tensor> = stmt.tensors[1..]
                .iter()
                .map(|t| {
                    let k = accesses.iter().position(|(n, _)| *n == t.name).unwrap();
                    &inputs[k]
                })
                .collect();
            for mag in [false, true] {
                let got = if mag {
                    magnitude(&stmt, &refs, None)
                } else {
                    evaluate(&stmt, &refs, None)
                };
                let want = dense(&stmt.tensors[0].dims, &dense_oracle(&stmt, &refs, mag));
                let diff = got.max_difference(&want).unwrap();
                assert!(
                    diff <= 1e-12,
                    "{text} (density {density}, magnitude {mag}): differs by {diff}"
                );
            }
        }
    }
}

#[test]
fn sparse_output_stores_only_the_listed_components() {
    let a = tensor(
        &[3, 3],
        &[1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 3.0, 0.0],
        "csr",
    );
    let stmt = bind(
        &parse("C(i,j) = A(i,k) * A(k,j)").unwrap(),
        &[
            TensorDecl::new("C").with_format(Format::parse("csr", 2).unwrap()),
            TensorDecl::new("A")
                .with_dims(&[3, 3])
                .with_format(a.format().clone()),
        ],
        &[],
    )
    .unwrap();
    let c = evaluate(&stmt, &[&a], None).to_coo();
    assert_eq!(c.coords, vec![0, 0, 1, 1, 2, 2]);
    assert_eq!(c.values, vec![1.0, 6.0, 6.0]);
    // With `+=`, the initial output's components join the listed ones.
    let stmt = Statement {
        accumulate: true,
        ..stmt
    };
    let init = tensor(
        &[3, 3],
        &[0.0, 5.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        "coo",
    );
    let c = evaluate(&stmt, &[&a], Some(&init)).to_coo();
    assert_eq!(c.coords, vec![0, 0, 0, 1, 1, 1, 2, 2]);
    assert_eq!(c.values, vec![1.0, 5.0, 7.0, 6.0]);
}

/// SpMV on a 2,000,000 x 2,000,000 matrix: a dense evaluation would need 32 TB for the
/// matrix alone; the sparse one follows the 2,000,000 stored entries.
#[test]
fn spmv_on_a_matrix_too_large_to_densify() {
    let n = 2_000_000usize;
    // Entry (r, (7r + 3) mod n) = 1 + r mod 5, one per row.
    let coords: Vec<i64> = (0..n as i64)
        .flat_map(|r| [r, (7 * r + 3) % n as i64])
        .collect();
    let a_values: Vec<f64> = (0..n).map(|r| 1.0 + (r % 5) as f64).collect();
    let a = Tensor::from_coo_owned(
        Coo::new(vec![n, n], coords, a_values).unwrap(),
        &Format::parse("csr", 2).unwrap(),
        ValueType::F64,
    )
    .unwrap();
    let x_values: Vec<f64> = (0..n).map(|j| (j % 11) as f64).collect();
    let mut x = Tensor::zeros(&[n], ValueType::F64);
    *x.values_mut() = Values::F64(x_values);
    let start = std::time::Instant::now();
    let (_, y) = run("y(i) = A(i,j) * x(j)", &[("A", &a), ("x", &x)], None);
    let elapsed = start.elapsed();
    let y = values(&y);
    assert_eq!(y.len(), n);
    for r in [0usize, 1, 12_345, n - 1] {
        let j = (7 * r + 3) % n;
        assert_eq!(y[r], (1 + r % 5) as f64 * (j % 11) as f64, "row {r}");
    }
    assert!(elapsed.as_secs_f64() < 60.0, "took {elapsed:?}");
}
