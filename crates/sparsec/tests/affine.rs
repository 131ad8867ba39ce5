//! The affine front end's analysis against the paper's worked example (with the digest's
//! errata) and against brute force: the dense program run on random values over the
//! same structure, counting the statement instances that really compute a non-zero.

use std::collections::BTreeMap;

use sparsec::affine::{self, dense, parse_program, Specialised};
use sparsec::polyhedral::isl::UnionSet;

const MM: &str = "int N;
    double A[N + 1][N + 1], B[N + 1][N + 1], C[N + 1][N + 1];
    for (i = 1; i <= N; i++)
      for (j = 1; j <= N; j++) {
        C[i][j] = 0;
        for (k = 1; k <= N; k++)
          C[i][j] += A[i][k] * B[k][j];
      }";

fn fixed(set: &UnionSet, n: i64) -> UnionSet {
    set.with_params(&format!("[N] -> {{ : N = {n} }}")).unwrap()
}

fn same(a: &UnionSet, b: &UnionSet) -> bool {
    a.is_equal(b).unwrap()
}

#[test]
fn the_papers_matrix_multiply_example_with_its_errata() {
    let patterns = [
        (
            "A".to_string(),
            "{ A[i, j] : 1 <= i <= 2 and 1 <= j <= 2; A[3, j] : 3 <= j <= 4 }".to_string(),
        ),
        (
            "B".to_string(),
            "{ B[i, j] : 1 <= i <= 2 and 2 <= j <= 3; B[4, j] : 1 <= j <= 2 }".to_string(),
        ),
        // C's row and column 0 lie outside the loops: the initial C is all zeros.
        ("C".to_string(), "{ C[i, j] : false }".to_string()),
    ];
    let s = affine::specialise(parse_program(MM).unwrap(), &patterns, None).unwrap();
    let isl = &s.isl;
    assert!(s.regions.exact, "{:?}", s.regions.reasons);
    // R (`C[i][j] = 0`) computes only zeros.
    assert!(fixed(&s.regions.statements[0], 4).is_empty().unwrap());
    let expected_s = isl
        .union_set("{ S2[i, j, k] : 1 <= i <= 2 and 2 <= j <= 3 and 1 <= k <= 4; S2[3, j, 4] : 1 <= j <= 2 }")
        .unwrap();
    assert!(
        same(&fixed(&s.regions.statements[1], 4), &fixed(&expected_s, 4)),
        "{}",
        s.regions.statements[1]
    );
    let expected_c = isl
        .union_set("{ C[i, j] : 1 <= i <= 2 and 2 <= j <= 3; C[3, j] : 1 <= j <= 2 }")
        .unwrap();
    let (name, c) = &s.regions.outputs[0];
    assert_eq!(name, "C");
    assert!(same(&fixed(c, 4), &fixed(&expected_c, 4)), "{c}");
}

/// Deterministic values in (0.5, 1.5): products and sums of them never cancel.
fn values(len: usize, seed: u64) -> Vec<f64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            0.5 + (x % 1000) as f64 / 1000.0
        })
        .collect()
}

/// Inputs whose non-zeros are exactly the given pattern's cells, at the given size.
fn inputs(
    s: &Specialised,
    patterns: &[(String, String)],
    params: &BTreeMap<String, i64>,
) -> dense::Arrays {
    let shapes = dense::extents(&s.model.program, params).unwrap();
    let fix: Vec<String> = params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    let names: Vec<&String> = params.keys().collect();
    let context = format!(
        "[{}] -> {{ : {} }}",
        names
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        fix.join(" and ")
    );
    let mut out = dense::Arrays::new();
    for (seed, (name, text)) in patterns.iter().enumerate() {
        let dims = &shapes[name];
        let size: usize = dims.iter().product();
        let vals = values(size, seed as u64 + 1);
        let mut data = vec![0.0; size];
        let decl = s.model.program.array(name).unwrap();
        let extents = s.isl.union_set(&s.model.extents_text(decl)).unwrap();
        let set = s
            .isl
            .union_set(text)
            .unwrap()
            .intersect(&extents)
            .unwrap()
            .with_params(&context)
            .unwrap();
        if dims.is_empty() {
            if !set.is_empty().unwrap() {
                data[0] = vals[0];
            }
            out.insert(name.clone(), data);
            continue;
        }
        for p in set.points(1 << 22).unwrap() {
            let mut at = 0usize;
            let mut inside = true;
            for (c, &d) in p.coordinates.iter().zip(dims) {
                inside &= *c >= 0 && (*c as usize) < d;
                at = at * d + (*c).max(0) as usize;
            }
            if inside {
                data[at] = vals[at];
            }
        }
        out.insert(name.clone(), data);
    }
    out
}

/// Σ |analysis| / Σ |true non-zero instances|, checking the analysis contains the truth.
/// With `symbolic`, the analysis holds for every value of the parameters (as the paper
/// computes it); without, for the values given.
fn accuracy(
    src: &str,
    patterns: &[(String, String)],
    params: &[(&str, i64)],
    symbolic: bool,
) -> (f64, bool) {
    let params: BTreeMap<String, i64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let s = affine::specialise(
        parse_program(src).unwrap(),
        patterns,
        (!symbolic).then_some(&params),
    )
    .unwrap();
    let run = dense::run(&s.model, &params, &inputs(&s, patterns, &params)).unwrap();
    let fix: Vec<String> = params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    let context = format!(
        "[{}] -> {{ : {} }}",
        params.keys().cloned().collect::<Vec<_>>().join(", "),
        fix.join(" and ")
    );
    let (mut computed, mut truth) = (0usize, 0usize);
    for (st, set) in s.regions.statements.iter().enumerate() {
        let points = set.with_params(&context).unwrap().points(1 << 24).unwrap();
        let found: std::collections::BTreeSet<Vec<i64>> =
            points.into_iter().map(|p| p.coordinates).collect();
        for instance in &run.nonzero[st] {
            assert!(
                found.contains(instance),
                "{} at {instance:?} is non-zero but outside the analysis",
                s.model.statements[st].name
            );
        }
        computed += found.len();
        truth += run.nonzero[st].len();
    }
    assert!(truth > 0);
    let ratio = computed as f64 / truth as f64;
    eprintln!(
        "accuracy {ratio:.4} ({computed} / {truth}), exact: {}",
        s.regions.exact
    );
    (ratio, s.regions.exact)
}

/// Inclusive row and column ranges.
type Block = ((i64, i64), (i64, i64));

fn pattern(name: &str, boxes: &[Block]) -> (String, String) {
    let pieces: Vec<String> = boxes
        .iter()
        .map(|((r0, r1), (c0, c1))| {
            format!("{name}[i, j] : {r0} <= i <= {r1} and {c0} <= j <= {c1}")
        })
        .collect();
    (name.to_string(), format!("{{ {} }}", pieces.join("; ")))
}

#[test]
fn matrix_multiply_is_exact_by_brute_force() {
    let patterns = [
        pattern(
            "A",
            &[((1, 3), (2, 5)), ((7, 9), (7, 12)), ((11, 11), (1, 1))],
        ),
        pattern(
            "B",
            &[((2, 4), (1, 2)), ((6, 8), (3, 12)), ((1, 1), (10, 11))],
        ),
    ];
    let (ratio, exact) = accuracy(MM, &patterns, &[("N", 12)], true);
    assert!(exact);
    assert_eq!(ratio, 1.0);
}

#[test]
fn gemm_needs_the_same_closure_and_is_exact() {
    let src = "int NI, NJ, NK; double C[NI][NJ], A[NI][NK], B[NK][NJ], alpha, beta;
        for (i = 0; i < NI; i++)
          for (j = 0; j < NJ; j++) {
            C[i][j] *= beta;
            for (k = 0; k < NK; k++)
              C[i][j] += alpha * A[i][k] * B[k][j];
          }";
    let patterns = [
        pattern("A", &[((0, 2), (1, 4)), ((6, 9), (6, 7))]),
        pattern("B", &[((1, 2), (0, 3)), ((7, 7), (5, 9))]),
        pattern("C", &[((8, 9), (0, 1))]),
        ("alpha".into(), "{ alpha[] }".into()),
        ("beta".into(), "{ beta[] }".into()),
    ];
    let (ratio, exact) = accuracy(src, &patterns, &[("NI", 10), ("NJ", 10), ("NK", 9)], true);
    assert!(exact);
    assert_eq!(ratio, 1.0);
}

#[test]
fn jacobi_1d_is_close_to_exact() {
    let src = example("jacobi-1d.c");
    // B's borders are read but never written: B starts as zeros.
    let patterns = [
        (
            "A".to_string(),
            "{ A[i] : 20 <= i <= 22; A[i] : 50 <= i <= 51 }".to_string(),
        ),
        ("B".to_string(), "{ B[i] : false }".to_string()),
    ];
    let (ratio, _) = accuracy(&src, &patterns, &[("TSTEPS", 6), ("N", 80)], true);
    assert!((1.0..1.05).contains(&ratio), "{ratio}");
}

#[test]
fn lu_is_over_approximated_but_smaller_than_dense() {
    let src = example("lu.c");
    // Block diagonal with a bordering row: fill-in stays inside the blocks and the border.
    let patterns = [pattern(
        "A",
        &[
            ((0, 3), (0, 3)),
            ((4, 7), (4, 7)),
            ((8, 11), (8, 11)),
            ((11, 11), (0, 11)),
        ],
    )];
    let (ratio, exact) = accuracy(&src, &patterns, &[("N", 12)], true);
    assert!(!exact);
    assert!(ratio >= 1.0, "{ratio}");
}

#[test]
fn patterns_of_the_wrong_array_or_shape_are_errors() {
    let program = || parse_program(MM).unwrap();
    let err = |p: &[(&str, &str)]| {
        let p: Vec<(String, String)> = p
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        affine::specialise(program(), &p, None)
            .err()
            .expect("an error")
            .message
    };
    assert!(err(&[("D", "{ D[i, j] }")]).contains("does not declare"));
    assert!(err(&[("A", "{ A[i] : 0 <= i < 3 }")]).contains("not a set of `A`'s cells"));
    assert!(err(&[("A", "{ A[i, j] : i <= }")]).contains("pattern of `A`"));
}

/// The specialised kernel (C and Cranelift) against the dense program run as written,
/// on inputs whose non-zeros are exactly the patterns' cells.
fn check_generated(src: &str, patterns: &[(String, String)], params: &[(&str, i64)]) -> String {
    use sparsec::affine::kernel::AffineKernel;
    use sparsec::jit::Toolchain;
    use sparsec::kernel::Backend;
    let params: BTreeMap<String, i64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let s = affine::specialise(parse_program(src).unwrap(), patterns, Some(&params)).unwrap();
    let initial = inputs(&s, patterns, &params);
    let expected = dense::run(&s.model, &params, &initial).unwrap().arrays;
    let mut listing = String::new();
    for backend in [Backend::C, Backend::Jit] {
        let kernel = AffineKernel::compile(&s, backend.targets(&Toolchain::default())).unwrap();
        // Code for fixed sizes refuses others.
        let mut other = params.clone();
        for v in other.values_mut() {
            *v += 1;
        }
        assert!(kernel.run(&other, &mut initial.clone()).is_err());
        let mut arrays = initial.clone();
        kernel.run(&params, &mut arrays).unwrap();
        for (name, want) in &expected {
            let got = &arrays[name];
            for (k, (a, b)) in got.iter().zip(want).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{backend:?}: {name}[{k}] = {a}, dense {b}"
                );
            }
        }
        if backend == Backend::C {
            listing = kernel.source().to_string();
        }
    }
    listing
}

#[test]
fn specialised_code_matches_the_dense_program() {
    let mm = [
        pattern(
            "A",
            &[((1, 3), (2, 5)), ((7, 9), (7, 12)), ((11, 11), (1, 1))],
        ),
        pattern(
            "B",
            &[((2, 4), (1, 2)), ((6, 8), (3, 12)), ((1, 1), (10, 11))],
        ),
        ("C".into(), "{ C[i, j] : false }".into()),
    ];
    let listing = check_generated(MM, &mm, &[("N", 12)]);
    // The rows of C carry no dependence: their loops run on the team.
    assert!(listing.contains("omp parallel for"), "{listing}");

    let jacobi = example("jacobi-1d.c");
    let jp = [
        (
            "A".to_string(),
            "{ A[i] : 20 <= i <= 22; A[i] : 50 <= i <= 51 }".to_string(),
        ),
        ("B".to_string(), "{ B[i] : false }".to_string()),
    ];
    check_generated(&jacobi, &jp, &[("TSTEPS", 5), ("N", 70)]);

    let lu = example("lu.c");
    // Diagonal blocks plus a dense last row and column: a valid LU without pivoting.
    let lp = [pattern(
        "A",
        &[
            ((0, 3), (0, 3)),
            ((4, 7), (4, 7)),
            ((8, 11), (0, 11)),
            ((0, 11), (11, 11)),
        ],
    )];
    check_generated(&lu, &lp, &[("N", 12)]);
}

#[test]
fn an_iteration_that_overwrites_a_non_zero_with_zero_still_runs() {
    // B starts non-zero where A is zero: the copy computes zeros there, and skipping it
    // would leave B's old values.
    let src = "int N; double A[N], B[N];
        for (i = 0; i < N; i++) B[i] = 2 * A[i];";
    let p = [
        ("A".to_string(), "{ A[i] : 0 <= i <= 3 }".to_string()),
        ("B".to_string(), "{ B[i] : 5 <= i <= 8 }".to_string()),
    ];
    check_generated(src, &p, &[("N", 12)]);
}

fn example(name: &str) -> String {
    let path = format!(
        "{}/../../examples/affine/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn set(name: &str, text: &str) -> (String, String) {
    (name.to_string(), text.to_string())
}

/// An example file, its patterns and its parameters.
type Case<'a> = (&'a str, Vec<(String, String)>, Vec<(&'a str, i64)>);

#[test]
fn every_example_is_sound_and_its_specialised_code_matches_the_dense_program() {
    let block = |name: &str| {
        pattern(
            name,
            &[((0, 3), (0, 3)), ((5, 9), (6, 8)), ((11, 11), (2, 13))],
        )
    };
    let cases: Vec<Case> = vec![
        (
            "mm.c",
            vec![block("A"), block("B"), set("C", "{ C[i, j] : false }")],
            vec![("N", 14)],
        ),
        (
            "gemm.c",
            vec![
                block("A"),
                block("B"),
                set("C", "{ C[i, j] : 12 <= i <= 13 }"),
                set("alpha", "{ alpha[] }"),
                set("beta", "{ beta[] }"),
            ],
            vec![("NI", 14), ("NJ", 14), ("NK", 14)],
        ),
        (
            "lu.c",
            vec![pattern(
                "A",
                &[
                    ((0, 3), (0, 3)),
                    ((4, 9), (4, 9)),
                    ((10, 13), (0, 13)),
                    ((0, 13), (12, 13)),
                ],
            )],
            vec![("N", 14)],
        ),
        (
            "jacobi-1d.c",
            vec![
                set("A", "{ A[i] : 10 <= i <= 12 or 30 <= i <= 31 }"),
                set("B", "{ B[i] : false }"),
            ],
            vec![("TSTEPS", 4), ("N", 48)],
        ),
        (
            "jacobi-2d.c",
            vec![
                set("A", "{ A[i, j] : 4 <= i <= 5 and 4 <= j <= 6 }"),
                set("B", "{ B[i, j] : false }"),
            ],
            vec![("TSTEPS", 3), ("N", 20)],
        ),
        (
            "heat-3d.c",
            vec![
                set(
                    "A",
                    "{ A[i, j, k] : 4 <= i <= 5 and 4 <= j <= 5 and k = 4 }",
                ),
                set("B", "{ B[i, j, k] : false }"),
            ],
            vec![("TSTEPS", 2), ("N", 12)],
        ),
    ];
    let only = std::env::var("AFFINE_EXAMPLE").ok();
    for (file, patterns, params) in cases {
        if only.as_deref().is_some_and(|o| o != file) {
            continue;
        }
        let src = example(file);
        let (ratio, exact) = accuracy(&src, &patterns, &params, false);
        eprintln!("{file}: accuracy {ratio:.4}, exact {exact}");
        check_generated(&src, &patterns, &params);
    }
}

#[test]
fn math_calls_are_generated_and_agree_with_the_dense_program() {
    // `fabs` before `sqrt` and inside `log`: the arguments stay in their domains.
    let src = "int N; double A[N], B[N], C[N];
        for (i = 0; i < N; i++) {
          B[i] = sqrt(fabs(A[i])) + tan(A[i]) + floor(A[i]) * ceil(A[i]) + sin(A[i]);
          C[i] = exp(A[i]) + log(fabs(A[i]) + 2) * cos(A[i]) + pow(fabs(A[i]), 1.5)
                 + fmax(A[i], 0.25) * fmin(A[i], 1.2);
        }";
    let patterns = vec![
        set("A", "{ A[i] : 3 <= i <= 7 or i = 12 }"),
        set("B", "{ B[i] : false }"),
        set("C", "{ C[i] : false }"),
    ];
    let listing = check_generated(src, &patterns, &[("N", 16)]);
    for call in [
        "sqrt(", "fabs(", "tan(", "floor(", "ceil(", "exp(", "log(", "pow(", "fmax(", "fmin(",
    ] {
        assert!(listing.contains(call), "{call} missing from:\n{listing}");
    }
    // Functions with f(0) = 0 keep the argument's pattern; exp(0) = 1 fills the domain.
    let params: BTreeMap<String, i64> = [("N".to_string(), 16)].into();
    let s = affine::specialise(parse_program(src).unwrap(), &patterns, Some(&params)).unwrap();
    let b = fixed(&s.regions.statements[0], 16);
    let expected = s
        .isl
        .union_set("[N] -> { S1[i] : N = 16 and (3 <= i <= 7 or i = 12) }")
        .unwrap();
    assert!(same(&b, &expected), "{b}");
}
