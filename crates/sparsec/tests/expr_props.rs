//! Property test: random well-formed index-notation statements, compiled and run, agree
//! with the reference evaluator.
//!
//! Each case draws (from one seed, so a failing seed reproduces exactly): up to four
//! operands of order 0..4 over a pool of five index variables with sizes 1..6; the
//! operators `+ - *`, occasionally a negation, a scalar literal, or a division by a dense
//! tensor whose values are all nonzero (over the term's variables, others of the right
//! side, or one of its own); an output over a random subset of the right-hand
//! side's variables (none: a scalar output), occasionally with a broadcast variable that
//! only the left side uses (its size given through `var_sizes`); and a random format per
//! tensor (dense, all compressed, mixed `d`/`s`, COO `u c.. q`, hashed, with a random mode
//! ordering), dense or sparse for the output. Inputs come from `random_coo`: empty
//! tensors, empty rows, explicit zeros, duplicates, unsorted.
//!
//! Lowering may refuse a statement with `LowerError` only for the documented unsupported
//! situations (a level located under a non-unique parent, an unordered level that would
//! have to be merged); any other error, a panic, or a wrong value fails the test.
//! `SPARSEC_PROP_CASES=N` runs more cases; `SPARSEC_PROP_RNG=random` (or a number) draws
//! other cases than the fixed default. `SPARSEC_PROP_TRACE=1` prints each case before it
//! runs (to find one that does not finish).

mod common;
use common::*;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sparsec::format::Format;
use sparsec::kernel::{lower_with_default_parallelism, Backend, Kernel};
use sparsec::notation::{self, TensorDecl};
use sparsec::reference;
use sparsec::schedule::Concrete;
use sparsec::tensor::{Coo, Tensor, ValueType};
use sparsec::Error;

/// One generated statement with its inputs.
#[derive(Debug)]
struct Case {
    expr: String,
    /// Format strings by tensor name (absent: dense).
    formats: Vec<(String, String)>,
    inputs: Vec<(String, Coo)>,
    sizes: Vec<(String, usize)>,
}

const POOL: [&str; 5] = ["i", "j", "k", "l", "m"];

fn random_format(r: &mut StdRng, order: usize) -> Option<String> {
    if order == 0 {
        return None;
    }
    let letters: String = match r.gen_range(0..6) {
        0 => "d".repeat(order),
        1 => "s".repeat(order),
        2 => (0..order)
            .map(|_| if r.gen_bool(0.5) { 'd' } else { 's' })
            .collect(),
        3 if order >= 2 => format!("u{}q", "c".repeat(order - 2)),
        3 => "s".into(),
        4 => "h".repeat(order),
        _ => (0..order)
            .map(|_| ['d', 's', 'h'][r.gen_range(0..3)])
            .collect(),
    };
    if order >= 2 && r.gen_bool(0.35) {
        let mut perm: Vec<usize> = (0..order).collect();
        perm.shuffle(r);
        let perm: Vec<String> = perm.iter().map(|p| p.to_string()).collect();
        Some(format!("{letters}:{}", perm.join(",")))
    } else {
        Some(letters)
    }
}

fn random_output_format(r: &mut StdRng, order: usize) -> Option<String> {
    if order == 0 || r.gen_bool(0.4) {
        return None;
    }
    let letters: String = (0..order)
        .map(|_| if r.gen_bool(0.6) { 's' } else { 'd' })
        .collect();
    if order >= 2 && r.gen_bool(0.3) {
        let mut perm: Vec<usize> = (0..order).collect();
        perm.shuffle(r);
        let perm: Vec<String> = perm.iter().map(|p| p.to_string()).collect();
        Some(format!("{letters}:{}", perm.join(",")))
    } else {
        Some(letters)
    }
}

fn access(name: &str, vars: &[&str]) -> String {
    if vars.is_empty() {
        name.to_string()
    } else {
        format!("{name}({})", vars.join(","))
    }
}

/// A dense tensor with every value in [0.5, 2] or [-2, -0.5]: a safe denominator.
fn nonzero_dense(r: &mut StdRng, dims: &[usize]) -> Coo {
    let total: usize = dims.iter().product();
    let mut coords = Vec::with_capacity(total * dims.len());
    let mut values = Vec::with_capacity(total);
    for p in 0..total {
        let mut rest = p;
        let mut c = vec![0i64; dims.len()];
        for m in (0..dims.len()).rev() {
            c[m] = (rest % dims[m]) as i64;
            rest /= dims[m];
        }
        coords.extend(c);
        let v: f64 = r.gen_range(0.5..2.0);
        values.push(if r.gen_bool(0.5) { v } else { -v });
    }
    Coo::new(dims.to_vec(), coords, values).unwrap()
}

fn gen_case(seed: u64) -> Case {
    let mut r = StdRng::seed_from_u64(seed);
    let sizes: Vec<usize> = (0..POOL.len()).map(|_| r.gen_range(1..=6)).collect();
    let size_of = |v: &str| sizes[POOL.iter().position(|p| *p == v).unwrap()];
    let n_ops = r.gen_range(1..=4);
    let mut terms: Vec<String> = Vec::new();
    let mut term_vars: Vec<Vec<&str>> = Vec::new();
    let mut formats = Vec::new();
    let mut inputs: Vec<(String, Coo)> = Vec::new();
    let mut rhs_vars: Vec<&str> = Vec::new();
    let mut accesses: Vec<(String, Vec<&str>)> = Vec::new();
    for t in 0..n_ops {
        if !accesses.is_empty() && r.gen_bool(0.1) {
            // The same tensor read again with the same indices.
            let e = r.gen_range(0..accesses.len());
            terms.push(accesses[e].0.clone());
            term_vars.push(accesses[e].1.clone());
            continue;
        }
        let name = ["A", "B", "C", "D"][t];
        let order = r.gen_range(0..=4);
        let mut pool = POOL.to_vec();
        pool.shuffle(&mut r);
        let vars: Vec<&str> = pool[..order].to_vec();
        for v in &vars {
            if !rhs_vars.contains(v) {
                rhs_vars.push(v);
            }
        }
        let dims: Vec<usize> = vars.iter().map(|v| size_of(v)).collect();
        let density = [0.0, 0.05, 0.2, 0.5, 1.0][r.gen_range(0..5)];
        inputs.push((name.to_string(), random_coo(&mut r, &dims, density)));
        if let Some(f) = random_format(&mut r, order) {
            formats.push((name.to_string(), f));
        }
        let a = access(name, &vars);
        accesses.push((a.clone(), vars.clone()));
        terms.push(a);
        term_vars.push(vars);
    }
    // Occasional decorations of single terms.
    for term in terms.iter_mut() {
        match r.gen_range(0..12) {
            0 => *term = format!("-{term}"),
            1 => *term = format!("{} * {term}", [2.0, 0.5, -1.5][r.gen_range(0..3)]),
            _ => {}
        }
    }
    if r.gen_bool(0.15) {
        // Division of one term by a dense, nonzero-valued tensor over some of that term's
        // variables, other variables of the right side, or a variable of its own (summed).
        let k = r.gen_range(0..terms.len());
        let mut candidates = term_vars[k].clone();
        candidates.extend(rhs_vars.iter().filter(|v| !term_vars[k].contains(v)));
        candidates.truncate(term_vars[k].len() + 1);
        if let Some(own) = POOL.iter().find(|v| !rhs_vars.contains(v)) {
            if r.gen_bool(0.2) {
                candidates.push(own);
            }
        }
        candidates.shuffle(&mut r);
        candidates.truncate(r.gen_range(0..=candidates.len().min(2)));
        for v in &candidates {
            if !rhs_vars.contains(v) {
                rhs_vars.push(v);
            }
        }
        let dims: Vec<usize> = candidates.iter().map(|v| size_of(v)).collect();
        inputs.push(("E".to_string(), nonzero_dense(&mut r, &dims)));
        terms[k] = format!("({}) / {}", terms[k], access("E", &candidates));
    }
    if r.gen_bool(0.08) {
        terms.push(format!("{}", [1.0, 0.25][r.gen_range(0..2)]));
    }
    // Combine the terms in a random binary tree.
    while terms.len() > 1 {
        let k = r.gen_range(0..terms.len() - 1);
        let op = ["+", "-", "*"][r.gen_range(0..3)];
        let right = terms.remove(k + 1);
        let left = terms.remove(k);
        terms.insert(k, format!("({left} {op} {right})"));
    }
    let rhs = terms.pop().unwrap();
    // Output variables: a random subset of the right side's, maybe plus a broadcast one.
    let mut out_vars: Vec<&str> = rhs_vars
        .iter()
        .copied()
        .filter(|_| r.gen_bool(0.6))
        .collect();
    out_vars.shuffle(&mut r);
    let mut var_sizes = Vec::new();
    let unused: Vec<&str> = POOL
        .iter()
        .copied()
        .filter(|v| !rhs_vars.contains(v))
        .collect();
    if !unused.is_empty() && out_vars.len() < 4 && r.gen_bool(0.1) {
        let v = unused[r.gen_range(0..unused.len())];
        out_vars.insert(r.gen_range(0..=out_vars.len()), v);
        var_sizes.push((v.to_string(), size_of(v)));
    }
    if let Some(f) = random_output_format(&mut r, out_vars.len()) {
        formats.push(("Y".to_string(), f));
    }
    Case {
        expr: format!("{} = {rhs}", access("Y", &out_vars)),
        formats,
        inputs,
        sizes: var_sizes,
    }
}

/// How a case ended, when it did not fail.
#[derive(Debug, PartialEq)]
enum Outcome {
    Agreed,
    /// A documented `LowerError`.
    Unsupported(String),
}

fn run_case(case: &Case, backend: Backend) -> Result<Outcome, String> {
    let assignment = notation::parse(&case.expr).map_err(|e| format!("parse: {e}"))?;
    let format_of = |name: &str, order: usize| {
        case.formats
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| Format::parse(f, order).unwrap())
    };
    let mut decls = vec![TensorDecl {
        name: assignment.lhs.tensor.clone(),
        dims: None,
        format: format_of(&assignment.lhs.tensor, assignment.lhs.indices.len()),
        fill: 0.0,
    }];
    for (name, coo) in &case.inputs {
        decls.push(TensorDecl {
            name: name.clone(),
            dims: Some(coo.dims.clone()),
            format: format_of(name, coo.order()),
            fill: 0.0,
        });
    }
    let stmt =
        notation::bind(&assignment, &decls, &case.sizes).map_err(|e| format!("bind: {e}"))?;
    let tensors: Vec<Tensor> = stmt.tensors[1..]
        .iter()
        .map(|t| {
            let coo = &case.inputs.iter().find(|(n, _)| *n == t.name).unwrap().1;
            Tensor::from_coo(coo, &t.format, ValueType::F64).unwrap()
        })
        .collect();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let kernel = Concrete::new(&stmt)
        .and_then(|c| lower_with_default_parallelism(&c))
        .map_err(Error::from)
        .and_then(|lowered| {
            let toolchain = Default::default();
            Kernel::from_lowered(stmt.clone(), lowered, ValueType::F64, &toolchain, backend)
        });
    let kernel = match kernel {
        Ok(k) => k,
        Err(Error::Lower(e)) => {
            let msg = e.to_string();
            return if msg.contains("non-unique parent") || msg.contains("is unordered") {
                Ok(Outcome::Unsupported(msg))
            } else {
                Err(format!("undocumented lowering error: {msg}"))
            };
        }
        Err(e) => return Err(format!("compile: {e}")),
    };
    let got = kernel.run(&refs).map_err(|e| format!("run: {e}"))?;
    let expected = reference::evaluate(&stmt, &refs, None);
    let scale = expected
        .to_coo()
        .values
        .iter()
        .fold(1.0f64, |m, v| m.max(v.abs()));
    let diff = got
        .max_difference(&expected)
        .ok_or_else(|| "output shape differs from the reference".to_string())?;
    let non_finite = got.to_coo().values.iter().any(|v| !v.is_finite());
    if diff > 1e-9 * scale || diff.is_nan() || non_finite {
        return Err(format!(
            "kernel differs from reference by {diff} (scale {scale}); loop order {:?}\n{}",
            kernel.loop_order(),
            kernel.kernel_source()
        ));
    }
    if got.format() != &stmt.tensors[0].format {
        return Err(format!(
            "output format {} but declared {}",
            got.format().spelling(),
            stmt.tensors[0].format.spelling()
        ));
    }
    Ok(Outcome::Agreed)
}

/// The cases drawn are fixed (CI must be reproducible) unless `SPARSEC_PROP_RNG` gives
/// another generator seed, or `random` for a fresh one each run.
fn rng_seed() -> proptest::test_runner::RngSeed {
    use proptest::test_runner::RngSeed;
    match std::env::var("SPARSEC_PROP_RNG").ok().as_deref() {
        Some("random") => RngSeed::Random,
        Some(n) => RngSeed::Fixed(n.parse().expect("SPARSEC_PROP_RNG is a number or `random`")),
        None => RngSeed::Fixed(0x5eed_2026),
    }
}

fn cases() -> u32 {
    std::env::var("SPARSEC_PROP_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        rng_seed: rng_seed(),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_statements_match_reference(seed in any::<u64>()) {
        check_seed(seed, Backend::C)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases() * 2 / 3,
        failure_persistence: None,
        rng_seed: rng_seed(),
        ..ProptestConfig::default()
    })]

    /// The same cases (the first two thirds) through the Cranelift JIT backend.
    #[test]
    fn random_statements_match_reference_on_the_jit(seed in any::<u64>()) {
        check_seed(seed, Backend::Jit)?;
    }
}

/// Run the case of `seed` with `backend`: agreeing with the reference or refused as
/// documented passes.
fn check_seed(seed: u64, backend: Backend) -> Result<(), TestCaseError> {
    let case = gen_case(seed);
    if std::env::var_os("SPARSEC_PROP_TRACE").is_some() {
        eprintln!(
            "seed {seed}: running {} {:?} on {backend:?}",
            case.expr, case.formats
        );
    }
    let outcome = std::panic::catch_unwind(|| run_case(&case, backend));
    match outcome {
        Ok(Ok(Outcome::Agreed)) => {}
        Ok(Ok(Outcome::Unsupported(msg))) => {
            eprintln!(
                "seed {seed}: {} {:?}: unsupported: {msg}",
                case.expr, case.formats
            );
        }
        Ok(Err(msg)) => {
            prop_assert!(
                false,
                "seed {seed} on {backend:?}: {} formats {:?} sizes {:?}: {msg}",
                case.expr,
                case.formats,
                case.sizes
            );
        }
        Err(_) => {
            prop_assert!(
                false,
                "seed {seed} on {backend:?}: {} formats {:?} sizes {:?}: panicked",
                case.expr,
                case.formats,
                case.sizes
            );
        }
    }
    Ok(())
}

/// The generator covers what it should: scalar outputs, sparse outputs, divisions.
#[test]
fn generator_covers_the_space() {
    let cases: Vec<Case> = (0..400).map(gen_case).collect();
    assert!(cases.iter().any(|c| c.expr.starts_with("Y =")));
    assert!(cases.iter().any(|c| c.expr.contains('/')));
    // Some divisor has a variable that its numerator lacks.
    assert!(cases.iter().any(|c| {
        let Some(at) = c.expr.find(") / E(") else {
            return false;
        };
        let mut depth = 0;
        let open = (0..=at)
            .rev()
            .find(|&p| {
                match &c.expr[p..=p] {
                    ")" => depth += 1,
                    "(" => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .unwrap();
        let numerator = &c.expr[open..=at];
        let rest = &c.expr[at + 6..];
        let divisor = &rest[..rest.find(')').unwrap()];
        divisor
            .split(',')
            .any(|v| !v.is_empty() && !numerator.contains(v))
    }));
    assert!(cases.iter().any(|c| !c.sizes.is_empty()));
    assert!(cases
        .iter()
        .any(|c| c.formats.iter().any(|(_, f)| f.contains('h'))));
    assert!(cases
        .iter()
        .any(|c| c.formats.iter().any(|(_, f)| f.starts_with('u'))));
    assert!(cases
        .iter()
        .any(|c| c.formats.iter().any(|(n, _)| n == "Y")));
    assert!(cases
        .iter()
        .any(|c| c.inputs.iter().any(|(_, x)| x.is_empty())));
}

/// Replay one case without catching panics: `SPARSEC_PROP_SEED=N cargo test -p sparsec
/// --test expr_props replay -- --ignored --nocapture`.
#[test]
#[ignore = "replays the seed in SPARSEC_PROP_SEED"]
fn replay() {
    let seed: u64 = std::env::var("SPARSEC_PROP_SEED")
        .expect("SPARSEC_PROP_SEED")
        .parse()
        .unwrap();
    let case = gen_case(seed);
    eprintln!("{case:#?}");
    assert_eq!(run_case(&case, Backend::C), Ok(Outcome::Agreed));
    assert_eq!(run_case(&case, Backend::Jit), Ok(Outcome::Agreed));
}

/// Compile and run `expr` on dense-valued inputs, returning the kernel's and the
/// reference's outputs (panics where compiling or running does).
fn run_simple(
    expr: &str,
    formats: &[(&str, &str)],
    inputs: &[(&str, Vec<usize>, f64)],
) -> (Tensor, Tensor) {
    let case = Case {
        expr: expr.to_string(),
        formats: formats
            .iter()
            .map(|(n, f)| (n.to_string(), f.to_string()))
            .collect(),
        inputs: inputs
            .iter()
            .map(|(n, dims, v)| {
                let mut c = nonzero_dense(&mut rng(5), dims);
                c.values.iter_mut().for_each(|x| *x = *v);
                (n.to_string(), c)
            })
            .collect(),
        sizes: vec![],
    };
    let assignment = notation::parse(&case.expr).unwrap();
    let mut decls = vec![TensorDecl::new(assignment.lhs.tensor.clone())];
    if let Some((_, f)) = case
        .formats
        .iter()
        .find(|(n, _)| *n == assignment.lhs.tensor)
    {
        decls[0].format = Some(Format::parse(f, assignment.lhs.indices.len()).unwrap());
    }
    for (n, c) in &case.inputs {
        let mut d = TensorDecl::new(n.clone()).with_dims(&c.dims);
        if let Some((_, f)) = case.formats.iter().find(|(m, _)| m == n) {
            d = d.with_format(Format::parse(f, c.order()).unwrap());
        }
        decls.push(d);
    }
    let stmt = notation::bind(&assignment, &decls, &[]).unwrap();
    let tensors: Vec<Tensor> = stmt.tensors[1..]
        .iter()
        .map(|t| {
            let coo = &case.inputs.iter().find(|(n, _)| *n == t.name).unwrap().1;
            Tensor::from_coo(coo, &t.format, ValueType::F64).unwrap()
        })
        .collect();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default()).unwrap();
    (
        kernel.run(&refs).unwrap(),
        reference::evaluate(&stmt, &refs, None),
    )
}

/// All dense, every value 2: y(i) = sum_j 2 * (1 / 2) = 2. The generated kernel drops the
/// divisor `E` (it is not even an operand) and computes `A_vals[pA2] * (1.0 / 0.0)`, so
/// every y(i) is inf.
#[test]
fn bug_division_numerator_without_divisor_variable() {
    let (got, expected) = run_simple(
        "y(i) = A(i,j) * (1 / E(j))",
        &[],
        &[("A", vec![2, 2], 2.0), ("E", vec![2], 2.0)],
    );
    assert_eq!(got.to_coo().values, expected.to_coo().values);
}

/// The same with a sparse multiplicand: lowering panics (debug assertion in
/// `Lowerer::value`: the access `E(j)` has 0 of its 1 levels resolved).
#[test]
fn bug_division_numerator_without_divisor_variable_sparse() {
    let (got, expected) = run_simple(
        "y(j) = a(j) * (2 / E(j))",
        &[("a", "s")],
        &[("a", vec![3], 1.0), ("E", vec![3], 2.0)],
    );
    assert_eq!(got.max_difference(&expected), Some(0.0));
}

/// `Y(m) = sum_l (sum_i A(i,l) + B(m,l))` with `A` doubly compressed and everything else
/// dense. A has the single entry A(0,0) = 1 and B is all ones, so Y = [3, 3]; the kernel
/// gets a different value (dense `A`, `ds` or `sd` are right). Seen in the property test as
/// `Y(m,j,k) = A(j,k,i,l) + B(j,m,k,l)` with `A` in `ssss`.
#[test]
fn bug_reduction_inside_addition() {
    let a = Coo::new(vec![2, 2], vec![0, 0], vec![1.0]).unwrap();
    let b = Coo::new(vec![2, 2], vec![0, 0, 0, 1, 1, 0, 1, 1], vec![1.0; 4]).unwrap();
    let y = check(
        "Y(m) = A(i,l) + B(m,l)",
        &[("A", "ss")],
        &[("A", a), ("B", b)],
    );
    assert_eq!(y.to_coo().values, vec![3.0, 3.0]);
}

/// `Coo::max_difference` (used by `Tensor::max_difference`, `approx_eq` and the shared
/// `check` helper) reports 0 when one side is infinite and the other finite: the scaled
/// difference is inf / inf = NaN, which `f64::max` drops. A kernel producing inf where the
/// reference has 2 therefore passes every differential test that relies on it.
#[test]
fn bug_max_difference_ignores_infinity() {
    let x = Coo::new(vec![1], vec![0], vec![f64::INFINITY]).unwrap();
    let y = Coo::new(vec![1], vec![0], vec![2.0]).unwrap();
    assert!(x.max_difference(&y) > 1.0);
}
