//! Statements over semirings other than `(+, *)` (`... over (min, +)`): every kernel
//! against the semiring reference on random inputs (empty, 1x1, explicit zeros,
//! duplicates, unsorted, a dense row among sparse ones), the reference itself against
//! loops written here, and the refusals.

mod common;

use common::{compare_with_reference, random_coo, rng, statement};
use sparsec::format::Format;
use sparsec::io;
use sparsec::jit::Toolchain;
use sparsec::kernel::{Backend, Kernel};
use sparsec::notation;
use sparsec::notation::cin::Statement;
use sparsec::reference;
use sparsec::schedule::Schedule;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// Inputs of each shape worth trying: empty, 1x1, small random, and one with a dense row.
fn matrices(seed: u64, rows: usize, cols: usize) -> Vec<Coo> {
    let mut r = rng(seed);
    let mut skewed = random_coo(&mut r, &[rows, cols], 0.05);
    let (mut coords, mut values) = (skewed.coords.clone(), skewed.values.clone());
    for j in 0..cols {
        coords.extend([1, j as i64]);
        values.push(j as f64 - 3.5);
    }
    skewed = Coo::new(vec![rows, cols], coords, values).unwrap();
    vec![
        Coo::new(vec![rows, cols], vec![], vec![]).unwrap(),
        random_coo(&mut r, &[1, 1], 1.0),
        random_coo(&mut r, &[rows, cols], 0.3),
        skewed,
    ]
}

fn vector(seed: u64, n: usize, density: f64) -> Coo {
    random_coo(&mut rng(seed), &[n], density)
}

/// Compile and compare with the reference for each set of inputs; the matrices' shapes
/// follow the first (an empty, a 1x1 and random ones).
fn check_all(expr: &str, formats: &[(&str, &str)], sets: &[Vec<(&str, Coo)>]) -> Vec<Tensor> {
    sets.iter()
        .map(|inputs| {
            let (stmt, tensors) = statement(expr, formats, inputs, &[]);
            let kernel =
                Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default())
                    .unwrap_or_else(|e| panic!("{expr} with {formats:?}: {e}"));
            compare_with_reference(&kernel, &stmt, &tensors, &format!("{expr} {formats:?}"))
        })
        .collect()
}

/// Matrix-vector input sets: `A` of each kind in `matrices`, `x` of matching length.
fn spmv_sets(seed: u64, x_density: f64) -> Vec<Vec<(&'static str, Coo)>> {
    matrices(seed, 9, 7)
        .into_iter()
        .enumerate()
        .map(|(k, a)| {
            let x = vector(seed + k as u64, a.dims[1], x_density);
            vec![("A", a), ("x", x)]
        })
        .collect()
}

#[test]
fn min_plus_matrix_vector_products_in_every_layout() {
    let expr = "y(i) = A(i,j) * x(j) over (min, +)";
    for a in ["csr", "dcsr", "csc", "coo", "dense", "hash"] {
        for y in ["dense", "s"] {
            check_all(expr, &[("A", a), ("y", y)], &spmv_sets(1, 1.0));
            // A sparse `x`: where it has no entry, no path goes through it.
            check_all(expr, &[("A", a), ("x", "s"), ("y", y)], &spmv_sets(2, 0.4));
        }
    }
}

/// The reference against Bellman-Ford's step written out: the tensor's stored entries
/// (duplicates combined as packing combines them), `+inf` where a row has none.
#[test]
fn the_reference_is_the_relaxation_step() {
    for inputs in spmv_sets(3, 1.0) {
        let (stmt, tensors) = statement(
            "y(i) = A(i,j) * x(j) over (min, +)",
            &[("A", "csr")],
            &inputs,
            &[],
        );
        let x: Vec<f64> = (0..tensors[1].dims()[0])
            .map(|j| tensors[1].values().get(j))
            .collect();
        let mut want = vec![f64::INFINITY; tensors[0].dims()[0]];
        tensors[0].for_each_stored(|c, a| {
            let (i, j) = (c[0] as usize, c[1] as usize);
            want[i] = want[i].min(a + x[j]);
        });
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let got = reference::evaluate(&stmt, &refs, None);
        let got: Vec<f64> = (0..want.len()).map(|i| got.values().get(i)).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn every_reduction_and_combination() {
    for over in [
        "(max, *)",
        "(min, max)",
        "(max, min)",
        "(+, min)",
        "(*, +)",
        "(or, and)",
        "(and, or)",
        "(any, pair)",
        "(min, first)",
        "(max, second)",
        "(+, *)",
    ] {
        let expr = format!("y(i) = A(i,j) * x(j) over {over}");
        for a in ["csr", "csc"] {
            check_all(&expr, &[("A", a)], &spmv_sets(4, 0.6));
        }
    }
}

/// A random matrix's shape and density.
type Drawn = ([usize; 2], f64);

/// Input sets of two matrices `A` and `B`, each drawn at its shape and density, from one
/// generator seeded with `seed`.
fn operand_pairs(seed: u64, shapes: &[(Drawn, Drawn)]) -> Vec<Vec<(&'static str, Coo)>> {
    let mut r = rng(seed);
    shapes
        .iter()
        .map(|&((a, da), (b, db))| {
            let a = random_coo(&mut r, &a, da);
            vec![("A", a), ("B", random_coo(&mut r, &b, db))]
        })
        .collect()
}

#[test]
fn matrix_products_and_element_wise_unions() {
    let sets = |seed: u64| {
        operand_pairs(
            seed,
            &[
                (([0, 3], 0.5), ([3, 4], 0.5)),
                (([6, 5], 0.3), ([5, 8], 0.3)),
                (([7, 7], 0.5), ([7, 7], 1.0)),
            ],
        )
    };
    let product = "C(i,j) = A(i,k) * B(k,j) over (min, +)";
    for (a, b, c) in [
        ("csr", "csr", "csr"),
        ("csr", "csr", "dense"),
        ("dense", "dense", "dense"),
        ("csr", "csc", "csr"),
        ("dcsr", "dcsr", "dcsr"),
    ] {
        check_all(product, &[("A", a), ("B", b), ("C", c)], &sets(5));
    }
    let square = |seed: u64| {
        operand_pairs(
            seed,
            &[
                (([6, 6], 0.3), ([6, 6], 0.3)),
                (([1, 1], 1.0), ([1, 1], 0.0)),
            ],
        )
    };
    for over in ["(min, +)", "(max, *)", "(or, and)"] {
        let union = format!("C(i,j) = A(i,j) + B(i,j) over {over}");
        for c in ["csr", "dense"] {
            check_all(&union, &[("A", "csr"), ("B", "csr"), ("C", c)], &square(6));
        }
    }
}

/// Breadth-first search's push step, `frontier' = frontier * A` masked by the unvisited
/// vertices, and the masked product of triangle counting over `(+, pair)`.
#[test]
fn masked_steps_of_graph_algorithms() {
    let push = "y<!pattern(v)>(j) = x(i) * A(i,j) over (any, pair)";
    let sets: Vec<Vec<(&str, Coo)>> = matrices(7, 8, 8)
        .into_iter()
        .map(|a| {
            let n = a.dims[0];
            let mut x = vector(8, n, 0.3);
            x.values.iter_mut().for_each(|x| *x = 1.0);
            vec![("x", x), ("A", a), ("v", vector(9, n, 0.4))]
        })
        .collect();
    for (y, v) in [("dense", "s"), ("s", "s"), ("dense", "dense")] {
        check_all(push, &[("x", "s"), ("A", "csr"), ("v", v), ("y", y)], &sets);
    }
    // A dense mask is located where the frontier's rows have entries: the step's work is
    // the frontier's edges, not the frontier times the vertices.
    let (stmt, _) = statement(
        push,
        &[("x", "s"), ("A", "csr"), ("v", "dense")],
        &sets[2],
        &[],
    );
    let kernel = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default()).unwrap();
    assert!(
        !kernel.kernel_source().contains("j < j_size"),
        "{}",
        kernel.kernel_source()
    );
    let valued = "y<v>(j) = x(i) * A(i,j) over (min, +)";
    check_all(valued, &[("x", "s"), ("A", "csr"), ("v", "s")], &sets);
    let triangles = "C<L>(i,j) = L(i,k) * L(j,k) over (+, pair)";
    let graphs: Vec<Vec<(&str, Coo)>> = matrices(10, 9, 9)
        .into_iter()
        .map(|l| vec![("L", l)])
        .collect();
    check_all(triangles, &[("L", "csr"), ("C", "csr")], &graphs);
}

/// A valued mask selects the entries a sparse output stores: where it holds zero (or,
/// complemented, a value), nothing is stored, not an entry holding ⊕'s identity; the
/// kernel's and the reference's stored coordinates against those computed here.
#[test]
fn valued_masks_select_which_entries_a_sparse_output_stores() {
    let mut r = rng(31);
    let a = random_coo(&mut r, &[12, 10], 0.3);
    let mut x = random_coo(&mut r, &[12], 0.5);
    x.values.iter_mut().for_each(|x| *x = 1.0);
    // Values 0 and 1 at every coordinate: a dense mask with zeros, and a sparse one
    // whose stored entries include explicit zeros.
    let mask_values: Vec<f64> = (0..10).map(|j| f64::from(j % 3 == 0)).collect();
    let dense_mask = Coo::new(vec![10], (0..10).collect(), mask_values.clone()).unwrap();
    let stored: Vec<i64> = (0..10).filter(|j| j % 2 == 0).collect();
    let sparse_values = stored.iter().map(|&j| mask_values[j as usize]).collect();
    let sparse_mask = Coo::new(vec![10], stored.clone(), sparse_values).unwrap();
    let mut reached = [false; 10];
    for (c, _) in a.coords.chunks(2).zip(&a.values) {
        if x.coords.contains(&c[0]) {
            reached[c[1] as usize] = true;
        }
    }
    for (statement_text, mask, holds) in [
        (
            "y<!v>(j) = x(i) * A(i,j) over (any, pair)",
            &dense_mask,
            (0..10).map(|j| mask_values[j] == 0.0).collect::<Vec<_>>(),
        ),
        (
            "y<v>(j) = x(i) * A(i,j) over (min, +)",
            &sparse_mask,
            (0..10)
                .map(|j| stored.contains(&(j as i64)) && mask_values[j] != 0.0)
                .collect(),
        ),
    ] {
        let inputs = vec![("x", x.clone()), ("A", a.clone()), ("v", mask.clone())];
        let v = if std::ptr::eq(mask, &dense_mask) {
            "dense"
        } else {
            "s"
        };
        let got = check_all(
            statement_text,
            &[("x", "s"), ("A", "csr"), ("v", v), ("y", "s")],
            std::slice::from_ref(&inputs),
        );
        let want: Vec<i64> = (0..10)
            .filter(|&j| reached[j] && holds[j])
            .map(|j| j as i64)
            .collect();
        let mut kernel_stored = Vec::new();
        got[0].for_each_stored(|c, _| kernel_stored.push(c[0]));
        assert_eq!(kernel_stored, want, "{statement_text}");
        let (stmt, tensors) = statement(
            statement_text,
            &[("x", "s"), ("A", "csr"), ("v", v), ("y", "s")],
            &inputs,
            &[],
        );
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let mut reference_stored = Vec::new();
        reference::evaluate(&stmt, &refs, None).for_each_stored(|c, _| reference_stored.push(c[0]));
        assert_eq!(reference_stored, want, "reference: {statement_text}");
    }
}

#[test]
fn accumulating_combines_with_the_previous_output_by_the_reduction() {
    let expr = "y(i) += A(i,j) * x(j) over (min, +)";
    for a in ["csr", "csc"] {
        for inputs in spmv_sets(11, 1.0) {
            let (stmt, tensors) = statement(expr, &[("A", a)], &inputs, &[]);
            let kernel =
                Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default())
                    .unwrap();
            let n = stmt.tensors[0].dims[0];
            let initial = Tensor::from_coo(
                &random_coo(&mut rng(12), &[n], 1.0),
                &stmt.tensors[0].format,
                ValueType::F64,
            )
            .unwrap();
            let refs: Vec<&Tensor> = tensors.iter().collect();
            let (got, _) = kernel.run_timed(&refs, Some(&initial)).unwrap();
            let want = reference::evaluate(&stmt, &refs, Some(&initial));
            assert_eq!(got.max_difference(&want), Some(0.0), "{a}");
        }
    }
}

/// Compile `stmt` under `schedule` with balanced loops split however little work they have,
/// and compare with the reference.
fn check_scheduled(stmt: &Statement, tensors: &[Tensor], schedule: &str, what: &str) {
    let kernel = Kernel::scheduled(
        stmt.clone(),
        &Schedule::parse(schedule).unwrap(),
        ValueType::F64,
        &common::split_toolchain(),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    compare_with_reference(&kernel, stmt, tensors, what);
}

#[test]
fn row_parallel_schedules_run_and_racing_ones_are_refused() {
    let expr = "y(i) = A(i,j) * x(j) over (min, +)";
    let inputs = &spmv_sets(13, 1.0)[2];
    let (stmt, tensors) = statement(expr, &[("A", "csr")], inputs, &[]);
    check_scheduled(
        &stmt,
        &tensors,
        "parallelize(i,CPUThread,NoRaces)",
        "row-parallel min-plus",
    );
    let (stmt, _) = statement(expr, &[("A", "csc")], inputs, &[]);
    for races in ["Atomics", "NoRaces"] {
        let schedule = Schedule::parse(&format!("parallelize(j,CPUThread,{races})")).unwrap();
        let err = Kernel::scheduled(
            stmt.clone(),
            &schedule,
            ValueType::F64,
            &Toolchain::default(),
        )
        .err()
        .unwrap_or_else(|| panic!("{races}: racing min-plus updates compiled"))
        .to_string();
        assert!(err.contains("precondition failed"), "{races}: {err}");
        if races != "NoRaces" {
            assert!(err.contains("(min, +)"), "{races}: {err}");
        }
    }
    // Sums of other products race like plain sums: atomics and per-thread copies serve.
    let expr = "y(i) = A(i,j) * x(j) over (+, min)";
    let (stmt, tensors) = statement(expr, &[("A", "csc")], inputs, &[]);
    for races in ["Atomics", "Temporary"] {
        let schedule = format!("parallelize(j,CPUThread,{races})");
        check_scheduled(&stmt, &tensors, &schedule, &format!("(+, min) {races}"));
    }
}

/// Racing updates of any other reduction run on per-thread copies that start from its
/// identity and combine by it: a dense output's rows updated from CSC columns, a scalar
/// reduced by threads, and rows reduced across SIMD lanes; on inputs big enough to split.
#[test]
fn racing_reductions_of_every_kind_run_on_per_thread_copies() {
    let mut r = rng(21);
    let big = vec![
        ("A", random_coo(&mut r, &[300, 200], 0.05)),
        ("x", random_coo(&mut r, &[200], 0.8)),
    ];
    let empty_columns = vec![
        ("A", random_coo(&mut r, &[40, 30], 0.0)),
        ("x", random_coo(&mut r, &[30], 1.0)),
    ];
    let definition = "let absmax(a, b) = where(abs(a) > abs(b), a, where(abs(b) > abs(a), b, \
                      max(a, b))) identity 0; ";
    for over in [
        "(min, +)",
        "(max, *)",
        "(any, pair)",
        "(or, and)",
        "(*, max)",
        "(absmax, *)",
    ] {
        let expr = format!("{definition}y(i) = A(i,j) * x(j) over {over}");
        for inputs in [&big, &empty_columns] {
            for (a, schedule) in [
                ("csc", "parallelize(j,CPUThread,Temporary)"),
                ("csc", "parallelize(j,CPUThread,ParallelReduction)"),
                ("csr", "parallelize(j,CPUVector,ParallelReduction)"),
            ] {
                let (stmt, tensors) = statement(&expr, &[("A", a)], inputs, &[]);
                check_scheduled(&stmt, &tensors, schedule, &format!("{over} {a} {schedule}"));
            }
            let dot = format!("{definition}s = A(i,j) * x(j) over {over}");
            let (stmt, tensors) = statement(&dot, &[("A", "csr")], inputs, &[]);
            for schedule in [
                "parallelize(i,CPUThread,Temporary)",
                "parallelize(j,CPUVector,ParallelReduction)",
            ] {
                check_scheduled(&stmt, &tensors, schedule, &format!("{over} s {schedule}"));
            }
        }
    }
    // Atomics protect sums only (GPU copies of another reduction: tests/opencl.rs).
    let (stmt, _) = statement(
        "y(i) = A(i,j) * x(j) over (min, +)",
        &[("A", "csc")],
        &big,
        &[],
    );
    let schedule = Schedule::parse("parallelize(j,CPUThread,Atomics)").unwrap();
    let err = Kernel::scheduled(stmt, &schedule, ValueType::F64, &Toolchain::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("not by atomics"), "{err}");
}

/// Formats whose storage holds zeros the tensor does not have would give them as entries.
#[test]
fn formats_that_pad_with_zeros_are_refused() {
    let expr = "y(i) = A(i,j) * x(j) over (min, +)";
    let inputs = &spmv_sets(15, 1.0)[2];
    for a in ["ell", "sell:4", "dia", "bcsr:2x2", "sd"] {
        let (stmt, _) = statement(expr, &[("A", a)], inputs, &[]);
        let err = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default())
            .err()
            .unwrap_or_else(|| panic!("{a}: compiled"))
            .to_string();
        assert!(err.contains("pads its storage with zeros"), "{a}: {err}");
    }
    // The same formats add nothing to sums.
    for a in ["ell", "sd"] {
        let plain = "y(i) = A(i,j) * x(j)";
        let (stmt, tensors) = statement(plain, &[("A", a)], inputs, &[]);
        let kernel =
            Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default()).unwrap();
        compare_with_reference(&kernel, &stmt, &tensors, a);
    }
}

#[test]
fn what_a_semiring_does_not_define_is_refused_with_its_place() {
    for (text, what, at) in [
        (
            "y(i) = A(i,j) * x(j) - x(i) over (min, +)",
            "`-`",
            "A(i,j) * x(j) - x(i)",
        ),
        ("y(i) = 2 * A(i,j) * x(j) over (min, +)", "a constant", "2"),
        (
            "y(i) = sqrt(A(i,j)) * x(j) over (max, *)",
            "`sqrt`",
            "sqrt(A(i,j))",
        ),
        (
            "y(i) = -A(i,j) * x(j) over (or, and)",
            "negation",
            "-A(i,j)",
        ),
    ] {
        let assignment = notation::parse(text).unwrap();
        let decls = [
            notation::TensorDecl {
                name: "y".into(),
                dims: Some(vec![3]),
                format: None,
                fill: 0.0,
            },
            notation::TensorDecl {
                name: "A".into(),
                dims: Some(vec![3, 3]),
                format: None,
                fill: 0.0,
            },
            notation::TensorDecl {
                name: "x".into(),
                dims: Some(vec![3]),
                format: None,
                fill: 0.0,
            },
        ];
        let err = notation::bind(&assignment, &decls, &[]).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(what), "{text}: {message}");
        assert!(
            message.contains("has no meaning over the semiring"),
            "{text}: {message}"
        );
        let span = err.span();
        assert_eq!(&text[span.start..span.end], at, "{text}");
    }
    for (text, expected) in [
        (
            "y(i) = A(i,j) * x(j) over (minus, +)",
            "a reduction operator",
        ),
        ("y(i) = A(i,j) * x(j) over (min, -)", "a combining operator"),
        ("y(i) = A(i,j) * x(j) over (min +)", "`,`"),
        ("y(i) = A(i,j) * x(j) over min", "`(`"),
        ("y(i) = A(i,j) * x(j) over (min, +", "`)`"),
    ] {
        let message = notation::parse(text).unwrap_err().to_string();
        assert!(message.contains(expected), "{text}: {message}");
    }
}

/// The Cranelift JIT computes the same as the C backend over every semiring.
#[test]
fn the_jit_backend_computes_semirings() {
    for over in [
        "(min, +)",
        "(max, *)",
        "(or, and)",
        "(any, pair)",
        "(+, min)",
    ] {
        let expr = format!("y(i) = A(i,j) * x(j) over {over}");
        for a in ["csr", "csc"] {
            for inputs in spmv_sets(14, 0.6) {
                let (stmt, tensors) = statement(&expr, &[("A", a)], &inputs, &[]);
                let kernel =
                    Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default())
                        .and_then(|k| k.with_backend(Backend::Jit))
                        .unwrap_or_else(|e| panic!("{expr} {a}: {e}"));
                assert_eq!(kernel.targets().main().name(), "JIT");
                compare_with_reference(&kernel, &stmt, &tensors, &format!("JIT {expr} {a}"));
            }
        }
    }
}

/// A fill value is the value of every component a tensor does not store: conversions keep
/// it (storage that holds no entry holds it), `.spt` files record it, text files refuse it.
#[test]
fn fill_values_survive_conversion_and_spt_files_and_text_files_refuse_them() {
    let coo = Coo::new(vec![3, 4], vec![0, 1, 2, 3, 2, 0], vec![5.0, 0.0, -1.0]).unwrap();
    let csr = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64)
        .unwrap()
        .with_fill(f64::INFINITY)
        .unwrap();
    assert_eq!(csr.fill(), f64::INFINITY);
    let dense = csr.convert(&Format::dense(2)).unwrap();
    let mut want = vec![f64::INFINITY; 12];
    (want[1], want[11], want[8]) = (5.0, 0.0, -1.0);
    let got: Vec<f64> = (0..12).map(|p| dense.values().get(p)).collect();
    assert_eq!(got, want);
    for format in ["csc", "coo", "ell", "dcsr"] {
        let t = csr.convert(&Format::parse(format, 2).unwrap()).unwrap();
        assert_eq!(t.fill(), f64::INFINITY, "{format}");
        let back = t.convert(&Format::dense(2)).unwrap();
        assert_eq!(back.values(), dense.values(), "{format}");
    }
    let dir = tempfile::tempdir().unwrap();
    let spt = dir.path().join("a.spt");
    io::write_any(&spt, &csr).unwrap();
    let read = io::read_spt(&spt).unwrap();
    assert_eq!(read, csr);
    // A tensor without a fill value writes the same bytes as before fill values existed.
    let plain = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    io::write_any(&spt, &plain).unwrap();
    let bytes = std::fs::read(&spt).unwrap();
    assert_eq!(&bytes[12..16], &[0, 0, 0, 0]);
    assert_eq!(io::read_spt(&spt).unwrap().fill(), 0.0);
    let single = plain.convert(plain.format()).unwrap();
    let narrow = Tensor::from_coo(&single.to_coo(), single.format(), ValueType::F32).unwrap();
    let err = narrow.with_fill(1e300).unwrap_err().to_string();
    assert!(
        err.contains("does not fit the tensor's values (float32)"),
        "{err}"
    );
    for text in ["a.mtx", "a.tns"] {
        let err = io::write_any(dir.path().join(text), &csr)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing entries are inf"), "{text}: {err}");
    }
}

/// A kernel over a semiring gives its output the reduction's identity as fill value, takes
/// inputs whose fill value is 0 or that identity, and refuses any other.
#[test]
fn kernels_compute_their_outputs_fill_value_and_check_their_inputs() {
    let inputs = &spmv_sets(16, 1.0)[2];
    let (stmt, tensors) = statement(
        "y(i) = A(i,j) * x(j) over (max, *)",
        &[("A", "csr"), ("y", "s")],
        inputs,
        &[],
    );
    let kernel = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default()).unwrap();
    let y = kernel.run(&[&tensors[0], &tensors[1]]).unwrap();
    assert_eq!(y.fill(), f64::NEG_INFINITY);
    let a_max = tensors[0].clone().with_fill(f64::NEG_INFINITY).unwrap();
    let with_identity = kernel.run(&[&a_max, &tensors[1]]).unwrap();
    assert_eq!(with_identity, y);
    let a_one = tensors[0].clone().with_fill(1.0).unwrap();
    let err = kernel.run(&[&a_one, &tensors[1]]).unwrap_err().to_string();
    assert!(err.contains("`A` has the fill value 1"), "{err}");
    // Over (+, *) a missing entry is 0.
    let (stmt, _) = statement("y(i) = A(i,j) * x(j)", &[("A", "csr")], inputs, &[]);
    let plain = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default()).unwrap();
    let err = plain.run(&[&a_max, &tensors[1]]).unwrap_err().to_string();
    assert!(err.contains("compiled for 0"), "{err}");
    assert_eq!(plain.run(&[&tensors[0], &tensors[1]]).unwrap().fill(), 0.0);
}

/// A dense tensor stores every component, so its fill value needs no place in a text file.
#[test]
fn dense_tensors_with_a_fill_value_write_to_text_files() {
    let coo = Coo::new(vec![2], vec![1], vec![3.0]).unwrap();
    let dense =
        Tensor::from_coo_filled(coo, &Format::dense(1), ValueType::F64, f64::INFINITY).unwrap();
    assert_eq!(dense.values().get(0), f64::INFINITY);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("y.mtx");
    io::write_any(&path, &dense).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("inf"), "{text}");
}

/// A scalar result: every ordered triangle of a symmetric graph counted over `(+, pair)`,
/// on one thread and with per-thread partial counts.
#[test]
fn a_scalar_count_over_plus_pair() {
    let mut r = rng(17);
    let half = random_coo(&mut r, &[12, 12], 0.4);
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for e in 0..half.len() {
        let (i, j) = (half.coords[2 * e], half.coords[2 * e + 1]);
        if i != j {
            coords.extend([i, j, j, i]);
            values.extend([half.values[e], half.values[e]]);
        }
    }
    let graph = Coo::new(vec![12, 12], coords, values).unwrap();
    let expr = "t = L(i,j) * L(i,k) * L(j,k) over (+, pair)";
    let inputs = vec![("L", graph.clone())];
    let got = check_all(expr, &[("L", "csr")], std::slice::from_ref(&inputs));
    // Ordered triples of distinct vertices joined pairwise, counted here.
    let mut adjacent = [[false; 12]; 12];
    for e in 0..graph.len() {
        adjacent[graph.coords[2 * e] as usize][graph.coords[2 * e + 1] as usize] = true;
    }
    let mut want = 0.0;
    for i in 0..12 {
        for j in 0..12 {
            for k in 0..12 {
                if adjacent[i][j] && adjacent[i][k] && adjacent[j][k] {
                    want += 1.0;
                }
            }
        }
    }
    assert!(want > 0.0);
    assert_eq!(got[0].values().get(0), want);
    let (stmt, tensors) = statement(expr, &[("L", "csr")], &inputs, &[]);
    check_scheduled(
        &stmt,
        &tensors,
        "parallelize(i,CPUThread,Temporary)",
        "parallel count",
    );
}
