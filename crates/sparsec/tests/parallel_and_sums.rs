//! Differential tests of the C backend's faster forms: sums split into partial sums or
//! printed as SIMD reductions, and parallel loops in contiguous blocks of equal work on a
//! team sized by the work. Each test checks that the form it exercises was generated, then
//! compares the kernel's results with the reference at 1, 2 and 3 threads.

mod common;
use common::*;

use sparsec::generate;
use sparsec::jit::Toolchain;
use sparsec::kernel::{Backend, Kernel};
use sparsec::schedule::Schedule;
use sparsec::tensor::{Coo, ValueType};

/// Compile `expr` (the default schedule, or `schedule`) with `toolchain`, check that its
/// kernel contains every piece of `expected`, and compare its results with the reference
/// on every input set at 1, 2 and 3 threads.
fn check_threads(
    expr: &str,
    formats: &[(&str, &str)],
    input_sets: &[Vec<(&str, Coo)>],
    schedule: Option<&str>,
    toolchain: &Toolchain,
    expected: &[&str],
) {
    let (stmt, _) = statement(expr, formats, &input_sets[0], &[]);
    let mut kernel = match schedule {
        None => Kernel::from_statement(stmt, ValueType::F64, toolchain),
        Some(text) => Kernel::scheduled(
            stmt,
            &Schedule::parse(text).unwrap(),
            ValueType::F64,
            toolchain,
        ),
    }
    .unwrap_or_else(|e| panic!("{expr}: {e}"));
    for piece in expected {
        assert!(
            kernel.kernel_source().contains(piece),
            "{expr} with {formats:?}: `{piece}` not in\n{}",
            kernel.kernel_source()
        );
    }
    for inputs in input_sets {
        let (stmt, tensors) = statement(expr, formats, inputs, &[]);
        for threads in [1, 2, 3] {
            kernel.set_threads(threads);
            let what = format!("{expr} with {formats:?}, {threads} threads");
            compare_with_reference(&kernel, &stmt, &tensors, &what);
        }
    }
}

/// [`check_threads`] for SpMV with `A` in CSR and in DCSR.
fn check_spmv_in_csr_and_dcsr(
    input_sets: &[Vec<(&str, Coo)>],
    toolchain: &Toolchain,
    expected: &[&str],
) {
    for format in ["csr", "dcsr"] {
        check_threads(
            "y(i) = A(i,j) * x(j)",
            &[("A", format)],
            input_sets,
            None,
            toolchain,
            expected,
        );
    }
}

/// A matrix whose row `i` holds `lengths[i % lengths.len()]` entries.
fn rows_of_lengths(rows: usize, cols: usize, lengths: &[usize]) -> Coo {
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for i in 0..rows {
        let n = lengths[i % lengths.len()].min(cols);
        for k in 0..n {
            coords.extend([i as i64, ((k * 7 + i) % cols) as i64]);
            values.push(1.0 + (i * 31 + k) as f64 % 5.0);
        }
    }
    Coo::new(vec![rows, cols], coords, values).unwrap()
}

/// Every entry in the last row: all but one of the balanced blocks are empty.
fn last_row_only(rows: usize, cols: usize) -> Coo {
    let coords = (0..cols)
        .flat_map(|j| [rows as i64 - 1, j as i64])
        .collect();
    Coo::new(vec![rows, cols], coords, vec![0.5; cols]).unwrap()
}

fn vector(n: usize) -> Coo {
    generate::dense(&[n], 99).unwrap()
}

#[test]
fn indirect_sums_split_into_partial_sums_for_every_row_length() {
    // Rows of 0 to 10 entries: the four-way loop's remainders 0 to 3, rows shorter than
    // one round, and empty rows.
    let lengths: Vec<usize> = (0..=10).collect();
    let sets = vec![
        vec![("A", rows_of_lengths(97, 40, &lengths)), ("x", vector(40))],
        vec![("A", Coo::empty(vec![97, 40])), ("x", vector(40))],
    ];
    check_spmv_in_csr_and_dcsr(&sets, &Toolchain::default(), &["sparsec_acc3", "__asm__"]);
    // TTV: the sum over a tensor's last level.
    let t = generate::uniform(&[12, 10, 30], 0.2, 5).unwrap();
    check_threads(
        "Y(i,j) = T(i,j,k) * v(k)",
        &[("T", "sss")],
        &[vec![("T", t), ("v", vector(30))]],
        None,
        &Toolchain::default(),
        &["sparsec_acc1"],
    );
}

#[test]
fn direct_sums_are_simd_reductions() {
    // A dense row times a vector: contiguous loads, no gathers.
    let a = generate::dense(&[9, 37], 3).unwrap();
    check_threads(
        "y(i) = A(i,j) * x(j)",
        &[("A", "dd")],
        &[vec![("A", a), ("x", vector(37))]],
        None,
        &Toolchain::default(),
        &["#pragma omp simd reduction(+:"],
    );
}

#[test]
fn the_jit_runs_split_sums_serially() {
    let lengths: Vec<usize> = (0..=9).collect();
    let inputs = vec![("A", rows_of_lengths(50, 20, &lengths)), ("x", vector(20))];
    let (stmt, tensors) = statement("y(i) = A(i,j) * x(j)", &[("A", "csr")], &inputs, &[]);
    let c = Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default()).unwrap();
    assert!(c.kernel_source().contains("sparsec_acc1"));
    let jit = c.with_backend(Backend::Jit).unwrap();
    compare_with_reference(&jit, &stmt, &tensors, "SpMV through the JIT");
}

#[test]
fn balanced_blocks_cover_every_row_once() {
    let skewed = generate::skewed_rows(300, 200, 1.0, 1.015, 7).unwrap();
    let power = generate::power_law(&[400, 300], 3000, 1.0, 8).unwrap();
    let sets = vec![
        vec![("A", skewed), ("x", vector(200))],
        vec![("A", last_row_only(200, 200)), ("x", vector(200))],
        vec![
            ("A", rows_of_lengths(200, 200, &[0, 0, 0, 5])),
            ("x", vector(200)),
        ],
        vec![("A", Coo::empty(vec![200, 200])), ("x", vector(200))],
        vec![("A", rows_of_lengths(1, 200, &[3])), ("x", vector(200))],
    ];
    let sets: Vec<_> = sets
        .into_iter()
        .map(|set| {
            // Every input set has one shape: pad the smaller ones' dimensions.
            set.into_iter()
                .map(|(name, coo)| {
                    let dims = if coo.order() == 2 {
                        vec![400, 300]
                    } else {
                        vec![300]
                    };
                    (name, Coo::new(dims, coo.coords, coo.values).unwrap())
                })
                .collect::<Vec<_>>()
        })
        .chain([vec![("A", power), ("x", vector(300))]])
        .collect();
    // Dense B: the blocks follow A's rows, weighted by their entries.
    let b = generate::dense(&[300, 5], 9).unwrap();
    let spmm: Vec<_> = sets
        .iter()
        .map(|set| vec![set[0].clone(), ("B", b.clone())])
        .collect();
    // One block a thread, then eight a thread claimed as the threads finish.
    for toolchain in [split_toolchain(), claiming_toolchain()] {
        check_spmv_in_csr_and_dcsr(
            &sets,
            &toolchain,
            &["sparsec_team(", "sparsec_goal", "sparsec_claimed"],
        );
        check_threads(
            "C(i,k) = A(i,j) * B(j,k)",
            &[("A", "csr")],
            &spmm,
            None,
            &toolchain,
            &["sparsec_team(", "sparsec_claimed"],
        );
    }
}

#[test]
fn balanced_blocks_weigh_the_entries_of_deeper_levels() {
    // MTTKRP over a CSF tensor: each `i` weighs its entries at the last level.
    let t = generate::uniform(&[40, 30, 20], 0.05, 11).unwrap();
    let empty = Coo::empty(vec![40, 30, 20]);
    let sets: Vec<_> = [t, empty]
        .into_iter()
        .map(|t| {
            vec![
                ("T", t),
                ("B", generate::dense(&[30, 4], 12).unwrap()),
                ("C", generate::dense(&[20, 4], 13).unwrap()),
            ]
        })
        .collect();
    for toolchain in [split_toolchain(), claiming_toolchain()] {
        check_threads(
            "A(i,r) = T(i,j,k) * B(j,r) * C(k,r)",
            &[("T", "sss")],
            &sets,
            None,
            &toolchain,
            &[
                "sparsec_w0 = ((int64_t)T3_pos[(int64_t)T2_pos[",
                "sparsec_claimed",
            ],
        );
    }
}

#[test]
fn balanced_blocks_keep_emitted_outputs_in_order() {
    // A COO output is emitted into one entry buffer per thread, concatenated in thread
    // order: the blocks must follow it. (CSR outputs are placed row by row instead.)
    let a = generate::power_law(&[120, 80], 900, 1.0, 14).unwrap();
    let b = generate::uniform(&[80, 90], 0.05, 15).unwrap();
    check_threads(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "coo")],
        &[vec![("A", a.clone()), ("B", b.clone())]],
        None,
        &split_toolchain(),
        &["sparsec_out = out + sparsec_t", "sparsec_goal"],
    );
    // A CSR output is placed row by row, in any order, and A's entries do not tell where
    // B's long rows put the products: the threads take chunks of rows as they finish.
    let crowded = rows_of_lengths(80, 90, &[1, 0, 1, 60]);
    check_threads(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[
            vec![("A", a.clone()), ("B", b)],
            vec![("A", a.clone()), ("B", crowded)],
        ],
        None,
        &split_toolchain(),
        &[
            "sparsec_team(",
            "if (phase == 0)",
            "#pragma omp for schedule(dynamic, sparsec_chunk) nowait",
        ],
    );
    // A masked product intersects each masked pair's rows, as long as the rows it meets:
    // its entries do not tell the work either, so the threads take chunks of rows, and a
    // position counts for a typical row (a team forms for the intersections' work).
    let symmetric = generate::power_law(&[120, 120], 1500, 1.0, 16).unwrap();
    check_threads(
        "C<pattern(L)>(i,j) = L(i,k) * L(j,k) over (+, pair)",
        &[("L", "csr"), ("C", "csr")],
        &[vec![("L", symmetric)]],
        Some("mergeby(k,Gallop)"),
        &split_toolchain(),
        &[
            "* 16) + i",
            "#pragma omp for schedule(dynamic, sparsec_chunk) nowait",
        ],
    );
    // Element-wise into a sparse output, with rows that are empty in one operand: the
    // rows merge two operands, so they have no one measure of work and get equal blocks.
    let c = rows_of_lengths(120, 80, &[0, 3, 0, 7]);
    check_threads(
        "C(i,j) = A(i,j) + B(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "coo")],
        &[vec![("A", a), ("B", c)]],
        None,
        &split_toolchain(),
        &["#pragma omp for schedule(static)"],
    );
}

#[test]
fn parallelize_without_a_schedule_is_balanced_and_with_one_is_kept() {
    let inputs = vec![vec![
        ("A", generate::skewed_rows(200, 100, 1.0, 1.02, 16).unwrap()),
        ("x", vector(100)),
    ]];
    let spmv = "y(i) = A(i,j) * x(j)";
    check_threads(
        spmv,
        &[("A", "csr")],
        &inputs,
        Some("parallelize(i,CPUThread,NoRaces)"),
        &split_toolchain(),
        &["sparsec_team("],
    );
    check_threads(
        spmv,
        &[("A", "csr")],
        &inputs,
        Some("parallelize(i,CPUThread,NoRaces,dynamic,4)"),
        &split_toolchain(),
        &["schedule(dynamic, 4)"],
    );
    // A reduction across the balanced blocks: each thread's partial sums are combined.
    check_threads(
        "y(j) = A(i,j) * x(i)",
        &[("A", "csr")],
        &[vec![
            ("A", generate::skewed_rows(200, 100, 1.0, 1.02, 17).unwrap()),
            ("x", vector(200)),
        ]],
        Some("parallelize(i,CPUThread,Atomics)"),
        &split_toolchain(),
        &["sparsec_team(", "omp atomic"],
    );
}

#[test]
fn schedules_without_parallelize_keep_the_default_parallel_loop() {
    let inputs = vec![vec![
        ("A", generate::uniform(&[130, 60], 0.1, 18).unwrap()),
        ("x", vector(60)),
    ]];
    check_threads(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr")],
        &inputs,
        Some("split(i,i0,i1,16)"),
        &split_toolchain(),
        &["#pragma omp parallel"],
    );
    let (stmt, _) = statement("y(i) = A(i,j) * x(j)", &[("A", "csr")], &inputs[0], &[]);
    let mut kernel = Kernel::scheduled(
        stmt.clone(),
        &Schedule::parse("split(i,i0,i1,16)").unwrap(),
        ValueType::F64,
        &Toolchain::default(),
    )
    .unwrap();
    kernel.set_threads(2);
    assert_eq!(kernel.threads_used(), 2);
    // A kernel without a thread loop reports one thread whatever it was given.
    let serial = "a = A(i,j) * x(j)";
    let (stmt, _) = statement(serial, &[("A", "csr")], &inputs[0], &[]);
    let mut kernel = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default()).unwrap();
    kernel.set_threads(2);
    assert_eq!(kernel.threads_used(), 1, "{}", kernel.kernel_source());
}

/// A dense input stored in another mode order than the loops read it is converted at every
/// run; past 65,536 values a thread, the kernel's OpenMP team shares the copy. SDDMM reads
/// `D` (32 x 7,000, stored by rows) by columns: one part at 1 thread, 2 and 3 parts at 2
/// and 3 threads, then the JIT's code (serial, so one part). Every run matches the
/// reference.
#[test]
fn dense_inputs_are_converted_on_the_kernels_threads() {
    let mut r = rng(21);
    let inputs = vec![
        ("A", random_coo(&mut r, &[60, 7000], 0.01)),
        ("B", generate::dense(&[60, 32], 4).unwrap()),
        ("D", generate::dense(&[32, 7000], 5).unwrap()),
    ];
    let formats = [("A", "csr"), ("B", "dd"), ("D", "dd"), ("C", "csr")];
    let (stmt, tensors) = statement("C(i,j) = A(i,j) * B(i,k) * D(k,j)", &formats, &inputs, &[]);
    let mut kernel =
        Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default()).unwrap();
    assert_eq!(kernel.inputs_read_in_place(&tensors), [true, true, false]);
    for threads in [1, 2, 3] {
        kernel.set_threads(threads);
        assert_eq!(kernel.threads_used(), threads);
        compare_with_reference(
            &kernel,
            &stmt,
            &tensors,
            &format!("SDDMM on {threads} threads"),
        );
    }
    let jit = kernel.with_backend(Backend::Jit).unwrap();
    compare_with_reference(&jit, &stmt, &tensors, "SDDMM through the JIT");
}
