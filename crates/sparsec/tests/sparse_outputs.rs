//! Sparse outputs placed straight into their storage by two-phase kernels (`ir::rows`):
//! which formats and schedules get them, and differential tests of their results against
//! the reference at 1, 2 and 3 threads, on empty, 1x1, skewed and explicit-zero inputs,
//! in loop orders that emit rows out of order, and with rows that come out unsorted.

mod common;
use common::*;

use sparsec::format::{Format, IndexArray};
use sparsec::generate;
use sparsec::ir::OutputMode;
use sparsec::jit::Toolchain;
use sparsec::kernel::{Backend, Kernel};
use sparsec::lower;
use sparsec::schedule::{Concrete, Schedule};
use sparsec::tensor::{Coo, Rows, Tensor, ValueType, Values};

/// The schedule `check_mode` lowers without parallel loops.
const SERIAL: &str = "serial";

/// Compile `expr` (the default schedule, `schedule`, or no parallel loop for [`SERIAL`]) with `toolchain`, check its output
/// mode, and compare its results with the reference on every input set at 1, 2 and 3
/// threads, on the C backend and on the JIT.
fn check_mode(
    expr: &str,
    formats: &[(&str, &str)],
    input_sets: &[Vec<(&str, Coo)>],
    schedule: Option<&str>,
    rows: bool,
) {
    let toolchain: Toolchain = split_toolchain();
    let (stmt, _) = statement(expr, formats, &input_sets[0], &[]);
    let mut kernel = match schedule {
        None => Kernel::from_statement(stmt, ValueType::F64, &toolchain),
        // Without the default thread loop.
        Some(SERIAL) => {
            let lowered = lower::lower(&Concrete::new(&stmt).unwrap()).unwrap();
            Kernel::from_lowered(stmt, lowered, ValueType::F64, &toolchain, Backend::C)
        }
        Some(text) => Kernel::scheduled(
            stmt,
            &Schedule::parse(text).unwrap(),
            ValueType::F64,
            &toolchain,
        ),
    }
    .unwrap_or_else(|e| panic!("{expr}: {e}"));
    let what = format!("{expr} with {formats:?}, schedule {schedule:?}");
    assert_eq!(
        matches!(kernel.output_mode(), OutputMode::Rows { .. }),
        rows,
        "{what}: output mode {:?}\n{}",
        kernel.output_mode(),
        kernel.kernel_source()
    );
    for inputs in input_sets {
        let (stmt, tensors) = statement(expr, formats, inputs, &[]);
        for threads in [1, 2, 3] {
            kernel.set_threads(threads);
            compare_with_reference(
                &kernel,
                &stmt,
                &tensors,
                &format!("{what}, {threads} threads"),
            );
        }
    }
    let jit = kernel.with_backend(Backend::Jit).unwrap();
    for inputs in input_sets {
        let (stmt, tensors) = statement(expr, formats, inputs, &[]);
        compare_with_reference(&jit, &stmt, &tensors, &format!("{what}, JIT"));
    }
}

/// Matrices of `dims`: random with explicit zeros, duplicates and unsorted input, empty,
/// skewed (power-law rows), and one dense row.
fn matrices(seed: u64, dims: [usize; 2]) -> Vec<Coo> {
    let mut r = rng(seed);
    let [m, n] = dims;
    let mut dense_row = Vec::new();
    for j in 0..n {
        dense_row.extend([(m / 2) as i64, j as i64]);
    }
    let mut sets = vec![random_coo(&mut r, &dims, 0.15), Coo::empty(dims.to_vec())];
    if m > 0 && n > 0 {
        sets.push(generate::power_law(&dims, (m * n / 8).max(1), 1.2, seed).unwrap());
        sets.push(Coo::new(dims.to_vec(), dense_row, vec![1.5; n]).unwrap());
    }
    sets
}

#[test]
fn spgemm_places_rows_in_compressed_output_formats() {
    // Rows of the output are placed when the thread loop runs over them (loops i, k, j;
    // an `A` in CSC is read transposed so that they can); a column-major output has
    // threads that share the output's rows (its columns), and emits.
    for (out, a_fmt, b_fmt, rows) in [
        ("csr", "csr", "csr", true),
        ("dcsr", "csr", "csr", true),
        ("csr", "dcsr", "csc", true),
        ("dcsr", "dcsr", "dcsr", true),
        ("csc", "csr", "csr", false),
        ("dcsc", "csr", "csr", false),
        ("csr", "csc", "csr", true),
    ] {
        {
            let sets: Vec<Vec<(&str, Coo)>> = matrices(1, [23, 17])
                .into_iter()
                .zip(matrices(2, [17, 29]))
                .map(|(a, b)| vec![("A", a), ("B", b)])
                .collect();
            check_mode(
                "C(i,j) = A(i,k) * B(k,j)",
                &[("A", a_fmt), ("B", b_fmt), ("C", out)],
                &sets,
                None,
                rows,
            );
        }
    }
}

#[test]
fn tiny_and_degenerate_shapes() {
    for dims in [[1, 1], [1, 9], [9, 1], [0, 4], [4, 0]] {
        let sets: Vec<Vec<(&str, Coo)>> = matrices(3, dims)
            .into_iter()
            .zip(matrices(4, dims))
            .map(|(a, b)| vec![("A", a), ("B", b)])
            .collect();
        for out in ["csr", "dcsr"] {
            check_mode(
                "C(i,j) = A(i,j) * B(i,j)",
                &[("A", "csr"), ("B", "csr"), ("C", out)],
                &sets,
                None,
                true,
            );
            check_mode(
                "C(i,j) = A(i,j) + B(i,j)",
                &[("A", "csr"), ("B", "dcsr"), ("C", out)],
                &sets,
                None,
                true,
            );
        }
    }
}

#[test]
fn transposed_products_and_sddmm() {
    let sets: Vec<Vec<(&str, Coo)>> = matrices(5, [31, 13])
        .into_iter()
        .map(|a| vec![("A", a)])
        .collect();
    // A^T A: `A` is read transposed so that the output's rows are the outer loop (i, k,
    // j), on threads or not. The storage's loop order (k, i, j) on threads shares rows
    // between threads and emits.
    for (schedule, rows) in [
        (Some(SERIAL), true),
        (None, true),
        (Some("reorder(i,k)"), false),
    ] {
        check_mode(
            "C(i,j) = A(k,i) * A(k,j)",
            &[("A", "csr"), ("C", "csr")],
            &sets,
            schedule,
            rows,
        );
    }
    let mut r = rng(6);
    let sddmm: Vec<Vec<(&str, Coo)>> = matrices(7, [20, 24])
        .into_iter()
        .map(|s| {
            vec![
                ("S", s),
                ("D", random_coo(&mut r, &[20, 5], 1.0)),
                ("E", random_coo(&mut r, &[5, 24], 1.0)),
            ]
        })
        .collect();
    check_mode(
        "C(i,j) = S(i,j) * D(i,k) * E(k,j)",
        &[("S", "csr"), ("C", "csr")],
        &sddmm,
        None,
        true,
    );
}

/// On one thread, kernels without workspaces append their entries in one pass (`ir::rows`,
/// phase 2); these inputs take its other exits: rows that come out of order (the loops
/// follow CSC storage into a CSR output), more entries than the inputs store (an outer
/// product of sparse vectors), and inputs that store none sparsely (dense).
#[test]
fn appended_rows_fall_back_when_out_of_order_or_out_of_room() {
    let sets: Vec<Vec<(&str, Coo)>> = matrices(13, [14, 9])
        .into_iter()
        .map(|a| vec![("A", a)])
        .collect();
    for (input, schedule) in [("ds:1,0", Some(SERIAL)), ("dd", None), ("csr", None)] {
        check_mode(
            "C(i,j) = A(i,j) * 2",
            &[("A", input), ("C", "csr")],
            &sets,
            schedule,
            true,
        );
    }
    let mut r = rng(14);
    let vectors: Vec<Vec<(&str, Coo)>> = [0.0, 0.3, 1.0]
        .iter()
        .map(|&density| {
            vec![
                ("x", random_coo(&mut r, &[17], density)),
                ("y", random_coo(&mut r, &[23], 0.5)),
            ]
        })
        .collect();
    for out in ["csr", "dcsr"] {
        check_mode(
            "C(i,j) = x(i) * y(j)",
            &[("x", "s"), ("y", "s"), ("C", out)],
            &vectors,
            None,
            true,
        );
    }
}

/// Inputs with work for two threads (more stored entries than a balanced loop gives one
/// thread) are counted and placed on the threads; on one thread they are appended.
#[test]
fn outputs_with_work_for_threads_are_placed_on_them() {
    let mut r = rng(15);
    let sets = vec![vec![
        ("A", random_coo(&mut r, &[1000, 1000], 0.5)),
        ("B", random_coo(&mut r, &[1000, 1000], 0.5)),
    ]];
    check_mode(
        "C(i,j) = A(i,j) + B(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &sets,
        None,
        true,
    );
}

/// Outputs that a kernel can append (at least 8,192 entries of room) are placed on threads
/// as the kernel's earlier runs found faster (`kernel::placement::PlacementPace`): after a
/// first run on the threads, runs alternate between the threads and one thread twice, then
/// take the faster and retry the other every eighth run. Every run must match the
/// reference, whichever placement it took: an element-wise sum with 800,000 entries of
/// room (counted and placed on threads), SDDMM with 13,500 (an inner product per entry,
/// for which the threads pay long before the sum's do) and SpGEMM (bounded rows).
#[test]
fn appendable_outputs_match_the_reference_in_every_placement() {
    let mut r = rng(16);
    let sum_inputs = [
        ("A", random_coo(&mut r, &[1000, 1000], 0.4)),
        ("B", random_coo(&mut r, &[1000, 1000], 0.4)),
    ];
    let sampled_inputs = [
        ("A", random_coo(&mut r, &[300, 300], 0.15)),
        ("B", random_coo(&mut r, &[300, 16], 1.0)),
        ("D", random_coo(&mut r, &[16, 300], 1.0)),
    ];
    let product_inputs = [
        ("A", random_coo(&mut r, &[800, 800], 0.04)),
        ("B", random_coo(&mut r, &[800, 800], 0.04)),
    ];
    let sparse = [("A", "csr"), ("B", "csr"), ("C", "csr")];
    let sampled = [("A", "csr"), ("B", "dd"), ("D", "dd"), ("C", "csr")];
    for (expr, inputs, formats) in [
        ("C(i,j) = A(i,j) + B(i,j)", &sum_inputs[..], &sparse[..]),
        (
            "C(i,j) = A(i,j) * B(i,k) * D(k,j)",
            &sampled_inputs[..],
            &sampled[..],
        ),
        ("C(i,j) = A(i,k) * B(k,j)", &product_inputs[..], &sparse[..]),
    ] {
        let (stmt, tensors) = statement(expr, formats, inputs, &[]);
        let mut kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain())
            .unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert!(matches!(kernel.output_mode(), OutputMode::Rows { .. }));
        kernel.set_threads(2);
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let expected = sparsec::reference::evaluate(&stmt, &refs, None);
        // Five first runs, then eight choices, the last of them a retry.
        for run in 0..13 {
            let got = kernel
                .run(&refs)
                .unwrap_or_else(|e| panic!("{expr}, run {run}: {e}"));
            let diff = got.max_difference(&expected).expect("same shape");
            assert!(diff <= 1e-9, "{expr}, run {run}: differs by {diff}");
            assert_eq!(got.format(), &stmt.tensors[0].format);
        }
    }
}

/// The output mode of `expr`'s default kernel.
fn output_mode(expr: &str, formats: &[(&str, &str)], inputs: &[(&str, Coo)]) -> OutputMode {
    let (stmt, _) = statement(expr, formats, inputs, &[]);
    Kernel::from_statement(stmt, ValueType::F64, &split_toolchain())
        .unwrap()
        .output_mode()
}

/// Workspace kernels (Gustavson rows: SpGEMM, A^T A) also bound each row's entries
/// (`ir::rows`, phase 3); with few products they append into the summed bounds on one
/// thread, with work for threads they place each row in its bounded room on them. Products that cancel keep
/// their entry (an explicit zero), as the reference does. Kernels without a workspace
/// have no bounds.
#[test]
fn workspace_kernels_bound_their_rows() {
    let mut r = rng(16);
    // About 900,000 products: placed on the threads.
    let busy = vec![
        ("A", random_coo(&mut r, &[1000, 1000], 0.03)),
        ("B", random_coo(&mut r, &[1000, 1000], 0.03)),
    ];
    // Row 0 of A times B's rows 0 and 1, which cancel: C(0, 0) is an explicit zero.
    let cancelling = vec![
        (
            "A",
            Coo::new(vec![3, 2], vec![0, 0, 0, 1], vec![1.0, 1.0]).unwrap(),
        ),
        (
            "B",
            Coo::new(vec![2, 2], vec![0, 0, 1, 0, 1, 1], vec![2.0, -2.0, 5.0]).unwrap(),
        ),
    ];
    let product = "C(i,j) = A(i,k) * B(k,j)";
    for out in ["csr", "dcsr"] {
        let formats = [("A", "csr"), ("B", "csr"), ("C", out)];
        assert_eq!(
            output_mode(product, &formats, &busy),
            OutputMode::Rows { bounds: true }
        );
        check_mode(product, &formats, std::slice::from_ref(&busy), None, true);
        check_mode(
            product,
            &formats,
            std::slice::from_ref(&cancelling),
            None,
            true,
        );
    }
    let square = vec![("A", random_coo(&mut r, &[40, 30], 0.2))];
    let gram = [("A", "csr"), ("C", "csr")];
    assert_eq!(
        output_mode("C(i,j) = A(k,i) * A(k,j)", &gram, &square),
        OutputMode::Rows { bounds: true }
    );
    assert_eq!(
        output_mode(
            "C(i,j) = A(i,j) + B(i,j)",
            &[("A", "csr"), ("B", "csr"), ("C", "csr")],
            &busy
        ),
        OutputMode::Rows { bounds: false }
    );
}

/// A loop that emits at most one entry an iteration into one row, and does nothing else,
/// bounds that row by its trips without running (`ir::rows`, phase 3): a masked product
/// over the mask's row, each iteration an intersection, and SDDMM over the sampled row are
/// placed in one numeric pass (on threads, each row in its bounded room), where counting
/// would run every intersection twice. Each is checked on 1 to 3 threads, with work for
/// threads, nothing stored, and products that leave masked coordinates without entries.
#[test]
fn loops_that_emit_once_an_iteration_bound_their_rows_by_their_trips() {
    let mut r = rng(18);
    let sets = |r: &mut rand::rngs::StdRng, n: usize, density: f64| {
        vec![
            ("M", random_coo(r, &[n, n], density)),
            ("A", random_coo(r, &[n, n], density)),
            ("B", random_coo(r, &[n, n], density)),
        ]
    };
    let busy = sets(&mut r, 700, 0.05);
    let empty = sets(&mut r, 700, 0.0);
    let sparse = sets(&mut r, 700, 0.002);
    let masked = "C<pattern(M)>(i,j) = A(i,k) * B(j,k)";
    let sddmm = "C(i,j) = M(i,j) * A(i,k) * B(j,k)";
    for expr in [masked, sddmm] {
        let formats = [("M", "csr"), ("A", "csr"), ("B", "csr"), ("C", "csr")];
        assert_eq!(
            output_mode(expr, &formats, &busy),
            OutputMode::Rows { bounds: true },
            "{expr}"
        );
        check_mode(
            expr,
            &formats,
            &[busy.clone(), empty.clone(), sparse.clone()],
            None,
            true,
        );
    }
    // The triangle count's statement over a semiring, galloping.
    let over = "C<pattern(M)>(i,j) = A(i,k) * B(j,k) over (+, pair)";
    let formats = [("M", "csr"), ("A", "csr"), ("B", "csr"), ("C", "csr")];
    check_mode(
        over,
        &formats,
        &[busy, empty, sparse],
        Some("mergeby(k,Gallop)"),
        true,
    );
}

/// SDDMM's inner sum runs over a dense `k`, and the flag that says whether it had terms is
/// set once ahead of the vectorized loop: with no `k` at all the output has no entries.
#[test]
fn sddmm_sums_over_empty_single_and_long_dense_ranges() {
    let mut r = rng(16);
    for k in [0, 1, 37] {
        let sets: Vec<Vec<(&str, Coo)>> = matrices(17, [9, 11])
            .into_iter()
            .map(|s| {
                vec![
                    ("S", s),
                    ("D", random_coo(&mut r, &[9, k], 1.0)),
                    ("E", random_coo(&mut r, &[k, 11], 1.0)),
                ]
            })
            .collect();
        let formats = [("S", "csr"), ("E", "dd:1,0"), ("C", "csr")];
        let expr = "C(i,j) = S(i,j) * D(i,k) * E(k,j)";
        check_mode(expr, &formats, &sets, None, true);
        // A sum without terms stores no entry (the reference comparison would take an
        // explicit zero for an absent one).
        let (stmt, tensors) = statement(expr, &formats, &sets[0], &[]);
        let kernel = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default()).unwrap();
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let stored = kernel.run(&refs).unwrap().values().len();
        assert_eq!(stored == 0, k == 0, "k = {k}: {stored} entries stored");
    }
}

#[test]
fn tensor_outputs_compact_their_upper_levels() {
    let mut r = rng(8);
    let sets: Vec<Vec<(&str, Coo)>> = (0..3)
        .map(|k| {
            vec![
                ("B", random_coo(&mut r, &[9, 7, 11], [0.1, 0.0, 0.5][k])),
                ("c", random_coo(&mut r, &[11], 0.6)),
            ]
        })
        .collect();
    // `sd` has a dense leaf, and `ss:1,0` rows that threads over i share: both emit.
    for (out, rows) in [("ss", true), ("ds", true), ("ss:1,0", false), ("sd", false)] {
        check_mode(
            "Y(i,j) = B(i,j,k) * c(k)",
            &[("B", "sss"), ("c", "s"), ("Y", out)],
            &sets,
            None,
            rows,
        );
    }
    let sets: Vec<Vec<(&str, Coo)>> = (0..3)
        .map(|k| {
            vec![
                ("B", random_coo(&mut r, &[6, 5, 8], [0.2, 0.0, 0.6][k])),
                ("C", random_coo(&mut r, &[6, 5, 8], 0.3)),
            ]
        })
        .collect();
    for out in ["sss", "dss", "sds", "dds", "sss:2,0,1"] {
        check_mode(
            "Y(i,j,k) = B(i,j,k) * C(i,j,k)",
            &[("B", "sss"), ("C", "sss"), ("Y", out)],
            &sets,
            None,
            true,
        );
    }
}

#[test]
fn schedules_that_share_rows_between_threads_emit_instead() {
    let sets: Vec<Vec<(&str, Coo)>> = matrices(9, [40, 40])
        .into_iter()
        .zip(matrices(10, [40, 40]))
        .map(|(a, b)| vec![("A", a), ("B", b)])
        .collect();
    let spgemm = "C(i,j) = A(i,k) * B(k,j)";
    let formats = [("A", "csr"), ("B", "csr"), ("C", "csr")];
    // Rows split into blocks stay on one thread each.
    check_mode(
        spgemm,
        &formats,
        &sets,
        Some("split(i,i0,i1,4),parallelize(i0,CPUThread,NoRaces,dynamic,1)"),
        true,
    );
    // A loop order whose outer loop is not the output's rows: serial, entries reach each
    // row from many iterations, in order, and are placed by each row's cursor; on threads
    // (the default), the threads share rows and emit.
    for (schedule, rows) in [(Some(SERIAL), true), (None, false)] {
        check_mode(
            "C(i,j) = A(i,j) + B(i,j)",
            &[("A", "csc"), ("B", "csc"), ("C", "csr")],
            &sets,
            schedule,
            rows,
        );
    }
    // A fused loop over rows and columns may put one row on two threads.
    check_mode(
        "C(i,j) = A(i,j) * B(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &sets,
        Some("fuse(i,j,f),pos(f,p,A(i,j)),split(p,p0,p1,16),parallelize(p0,CPUThread,IgnoreRaces)"),
        false,
    );
}

#[test]
fn rows_emitted_out_of_order_are_sorted() {
    // A hashed level is iterated in its table's order, so each row of the output is
    // placed unsorted and the runtime sorts it.
    let mut r = rng(11);
    let sets: Vec<Vec<(&str, Coo)>> = (0..3)
        .map(|_| vec![("A", random_coo(&mut r, &[12, 40], 0.3))])
        .collect();
    check_mode(
        "C(i,j) = A(i,j) * 2",
        &[("A", "dh"), ("C", "csr")],
        &sets,
        None,
        true,
    );
}

#[test]
fn accumulating_statements_and_other_formats_emit() {
    let sets: Vec<Vec<(&str, Coo)>> = matrices(12, [15, 15])
        .into_iter()
        .map(|a| vec![("A", a)])
        .collect();
    for out in ["coo", "hash", "bcsr:2x2", "ell", "sell:4"] {
        check_mode(
            "C(i,j) = A(i,j) * 3",
            &[("A", "csr"), ("C", out)],
            &sets,
            None,
            false,
        );
    }
}

#[test]
fn single_precision_outputs_are_placed_too() {
    let a = generate::uniform(&[40, 30], 0.1, 13).unwrap();
    let b = generate::uniform(&[30, 20], 0.1, 14).unwrap();
    let (stmt, tensors) = statement(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[("A", a), ("B", b)],
        &[],
    );
    let kernel = Kernel::from_statement(stmt.clone(), ValueType::F32, &Default::default()).unwrap();
    assert!(matches!(kernel.output_mode(), OutputMode::Rows { .. }));
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let got = kernel.run(&refs).unwrap();
    assert!(matches!(got.values(), Values::F32(_)));
    let expected = sparsec::reference::evaluate(&stmt, &refs, None);
    assert!(got.max_difference(&expected).unwrap() < 1e-4);
}

/// `from_rows` against packing the same entries from a coordinate list, for formats with
/// compacted upper levels and for unsorted and duplicated rows.
#[test]
fn tensors_from_rows_equal_tensors_from_coordinates() {
    let dims = vec![3, 4, 5];
    // Rows are (i, j) pairs, 12 of them: entries in rows 1, 2, 7 and 11.
    let mut pos = vec![0i64; 13];
    let rows_entries: [(usize, &[i64]); 4] = [(1, &[0, 3]), (2, &[4]), (7, &[1, 2, 4]), (11, &[0])];
    let mut idx = Vec::new();
    for (row, entries) in rows_entries {
        idx.extend_from_slice(entries);
        pos[row + 1] = entries.len() as i64;
    }
    for r in 0..12 {
        pos[r + 1] += pos[r];
    }
    let values: Vec<f64> = (0..idx.len()).map(|v| v as f64 + 0.5).collect();
    // The rows with their coordinates as a kernel writes them, in `int64_t` and in
    // `int32_t`, built into `spelling`, each against packing their entries.
    let from_rows = |idx: &[i64], spelling: &str| {
        let format = Format::parse(spelling, 3).unwrap();
        let narrow = IndexArray::I32(idx.iter().map(|&x| x as i32).collect());
        [IndexArray::I64(idx.to_vec()), narrow].map(|idx| {
            let rows = Rows {
                pos: pos.clone(),
                idx,
                values: Values::F64(values.clone()),
            };
            let coo = rows.to_coo(&dims, &format);
            let expected = Tensor::from_coo(&coo, &format, ValueType::F64).unwrap();
            let got = Tensor::from_rows(rows, dims.clone(), &format).unwrap();
            assert_eq!(
                got,
                expected,
                "{spelling}, {:?} coordinates",
                got.index_width()
            );
            got
        })
    };
    for spelling in ["dds", "sss", "dss", "sds"] {
        from_rows(&idx, spelling);
    }
    // Row 7 unsorted, with a duplicate: sorted and summed.
    let mut unsorted = idx.clone();
    unsorted[3] = 4;
    unsorted[5] = 1;
    unsorted[4] = 4;
    for got in from_rows(&unsorted, "csf") {
        assert_eq!(got.values().len(), 6);
    }
}

/// `from_rows` against packing, for rows of `dims` that hold `filled[row % len]` entries
/// (at most the leaf's size), in every format of `spellings`.
fn check_compacted_rows(dims: &[usize], filled: &[usize], spellings: &[&str]) {
    let (leaf, upper) = dims.split_last().unwrap();
    let rows_count: usize = upper.iter().product();
    let mut pos = vec![0i64; rows_count + 1];
    let mut idx = Vec::new();
    for row in 0..rows_count {
        let count = filled[row % filled.len()].min(*leaf);
        let start = idx.len();
        idx.extend((0..count as i64).map(|c| c * 7 % *leaf as i64));
        idx[start..].sort_unstable();
        pos[row + 1] = pos[row] + count as i64;
    }
    let values = Values::F64((0..idx.len()).map(|v| v as f64 - 2.5).collect());
    for spelling in spellings {
        let format = Format::parse(spelling, dims.len()).unwrap();
        let rows = Rows {
            pos: pos.clone(),
            idx: IndexArray::I64(idx.clone()),
            values: values.clone(),
        };
        let expected =
            Tensor::from_coo(&rows.to_coo(dims, &format), &format, ValueType::F64).unwrap();
        let got = Tensor::from_rows(rows, dims.to_vec(), &format).unwrap();
        assert_eq!(got, expected, "{spelling} {dims:?}");
    }
}

proptest::proptest! {
    /// Compacted rows over shapes whose upper levels carry often (sizes 1 and 0 among
    /// them) and random rows holding entries, in every row format of orders 2 and 3.
    #[test]
    fn compacted_rows_equal_packed_entries(
        dims in proptest::collection::vec(0usize..4, 3),
        filled in proptest::collection::vec(0usize..3, 64),
    ) {
        check_compacted_rows(&dims, &filled, &["sss", "dss", "sds", "dds"]);
        check_compacted_rows(&dims[1..], &filled, &["ss", "ds"]);
    }
}

/// A hypersparse matrix of 2^40 rows: a DCSR output has too many rows to count them all
/// and is emitted; a CSR output would need an offset per row, and says so.
#[test]
fn hypersparse_outputs_are_emitted_or_refused_with_the_bytes() {
    let rows = 1usize << 40;
    let a = Coo::new(
        vec![rows, 4],
        vec![0, 0, rows as i64 - 1, 3],
        vec![1.5, 2.5],
    )
    .unwrap();
    let (stmt, tensors) = statement(
        "C(i,j) = A(i,j) * 2",
        &[("A", "dcsr"), ("C", "dcsr")],
        &[("A", a.clone())],
        &[],
    );
    let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default()).unwrap();
    assert!(matches!(kernel.output_mode(), OutputMode::Emit { .. }));
    compare_with_reference(&kernel, &stmt, &tensors, "hypersparse DCSR output");

    let (stmt, tensors) = statement(
        "C(i,j) = A(i,j) * 2",
        &[("A", "dcsr"), ("C", "csr")],
        &[("A", a)],
        &[],
    );
    let kernel = Kernel::from_statement(stmt, ValueType::F64, &Default::default()).unwrap();
    assert!(matches!(kernel.output_mode(), OutputMode::Rows { .. }));
    let err = kernel.run(&tensors.iter().collect::<Vec<_>>()).unwrap_err();
    assert!(
        err.to_string().contains("cannot store the output `C`")
            && err.to_string().contains("bytes"),
        "{err}"
    );
}

/// A placed output's coordinates are written as `int32_t` when its leaf's dimension fits
/// (nothing to narrow afterwards), and as `int64_t` when it does not: a CSR matrix of
/// 2^33 columns keeps its wide coordinates, checked against the reference.
#[test]
fn placed_coordinates_take_the_width_of_the_leaf_dimension() {
    use sparsec::ir::{ArrayKind, IndexWidth};
    for (columns, width) in [(5usize, IndexWidth::I32), (1 << 33, IndexWidth::I64)] {
        let last = columns as i64 - 1;
        let a = Coo::new(
            vec![3, columns],
            vec![0, last, 0, 1, 2, last, 2, 0],
            vec![1.5, 2.5, -1.0, 4.0],
        )
        .unwrap();
        let (stmt, tensors) = statement(
            "C(i,j) = A(i,j) * 2",
            &[("A", "csr"), ("C", "csr")],
            &[("A", a)],
            &[],
        );
        let kernel =
            Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default()).unwrap();
        assert!(matches!(kernel.output_mode(), OutputMode::Rows { .. }));
        let jit = Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default())
            .and_then(|k| k.with_backend(Backend::Jit))
            .unwrap();
        for (kernel, backend) in [(&kernel, "C"), (&jit, "JIT")] {
            let what = format!("{columns} columns, {backend}");
            let out = compare_with_reference(kernel, &stmt, &tensors, &what);
            let idx = out.view().array(2, ArrayKind::Idx).unwrap();
            assert_eq!(idx.width(), width, "{what}");
        }
    }
}
