//! The OpenCL target: GPU schedules printed as OpenCL C (always), and, with the `opencl`
//! feature, built by the device's driver and run (PoCL on the CPU in CI), every result
//! against the reference evaluator on random inputs, empty, 1x1 and skewed ones.

mod common;
use common::*;

use std::sync::Arc;

use sparsec::codegen::opencl::OpenClTarget;
use sparsec::jit::Toolchain;
use sparsec::kernel::{lower_for_target, Backend, Kernel};
use sparsec::lower::{self, Lowered};
use sparsec::notation::cin::Statement;
use sparsec::schedule::{Concrete, Schedule};
use sparsec::target::{Target, Targets};
use sparsec::tensor::{Coo, Tensor, ValueType};

const SPMV: &str = "y(i) = A(i,j) * x(j)";
const SPMM: &str = "C(i,k) = A(i,j) * B(j,k)";
const DOT: &str = "a = x(i) * y(i)";

/// The GPU schedules the tests run: the shared SpMV and SpMM ones ([`GPU_SCHEDULES`]) and a
/// dot product.
fn schedules() -> impl Iterator<Item = (&'static str, &'static str)> {
    GPU_SCHEDULES.into_iter().chain([(DOT, DOT_SCHEDULE)])
}

/// `expr` over inputs of `rows` rows (`A` CSR at `density`), scheduled and lowered.
fn fixture(
    expr: &str,
    schedule: &str,
    rows: usize,
    density: f64,
    seed: u64,
) -> (Statement, Vec<Tensor>, Lowered) {
    let mut r = rng(seed);
    let inputs: Vec<(&str, Coo)> = match expr {
        DOT => vec![
            ("x", random_coo(&mut r, &[rows], 1.0)),
            ("y", random_coo(&mut r, &[rows], 1.0)),
        ],
        SPMV => vec![
            ("A", random_coo(&mut r, &[rows, 40], density)),
            ("x", random_coo(&mut r, &[40], 1.0)),
        ],
        _ => vec![
            ("A", random_coo(&mut r, &[rows, 40], density)),
            ("B", random_coo(&mut r, &[40, 24], 1.0)),
        ],
    };
    let (stmt, tensors) = statement(expr, &[("A", "csr")], &inputs, &[]);
    let schedule = Schedule::parse(schedule).unwrap();
    let concrete = schedule.apply(&Concrete::new(&stmt).unwrap()).unwrap();
    let lowered = lower::lower(&concrete).unwrap_or_else(|e| panic!("{expr}: {e}"));
    (stmt, tensors, lowered)
}

fn opencl_kernel(stmt: &Statement, lowered: Lowered) -> Result<Kernel, sparsec::Error> {
    Kernel::from_lowered_on(
        stmt.clone(),
        lowered,
        ValueType::F64,
        &Toolchain::default(),
        Targets::one(Arc::new(OpenClTarget)),
    )
}

#[test]
fn gpu_schedules_print_as_opencl_kernels() {
    for (expr, schedule) in schedules() {
        let (_, _, lowered) = fixture(expr, schedule, 50, 0.1, 1);
        let listing = OpenClTarget
            .listing(&lowered.function)
            .unwrap_or_else(|e| panic!("{schedule}: {e}"))
            .expect("the target prints its kernels");
        let kernels = listing.kernel();
        assert!(
            kernels.contains("__kernel void sparsec_kernel_0("),
            "{kernels}"
        );
        assert!(
            kernels.contains("get_group_id(0)"),
            "{schedule}:\n{kernels}"
        );
        assert!(!kernels.contains("#pragma omp"), "{kernels}");
    }
    // A warp's lanes sum a row in local memory; a block's shared workspace is local.
    let (_, _, lowered) = fixture(SPMV, GPU_SCHEDULES[1].1, 50, 0.1, 1);
    let text = OpenClTarget
        .listing(&lowered.function)
        .unwrap()
        .unwrap()
        .text;
    assert!(
        text.contains("__local int64_t *restrict sparsec_combine"),
        "{text}"
    );
    assert!(text.contains("% sparsec_warps_0"), "{text}");
    let (_, _, lowered) = fixture(SPMM, GPU_SCHEDULES[4].1, 50, 0.1, 1);
    let text = OpenClTarget
        .listing(&lowered.function)
        .unwrap()
        .unwrap()
        .text;
    assert!(text.contains("__local double *restrict w"), "{text}");
    assert!(text.contains("barrier(CLK_LOCAL_MEM_FENCE"), "{text}");
    // The dot product leaves one partial sum per work-group.
    let (_, _, lowered) = fixture(DOT, DOT_SCHEDULE, 100, 1.0, 1);
    let text = OpenClTarget
        .listing(&lowered.function)
        .unwrap()
        .unwrap()
        .text;
    assert!(text.contains("_partial[sparsec_group]"), "{text}");
}

#[test]
fn what_the_target_cannot_run_is_refused_naming_it() {
    // Serial code: no kernel to launch.
    let (stmt, _, lowered) = fixture(SPMV, "reorder(i,j)", 10, 0.3, 2);
    let err = opencl_kernel(&stmt, lowered)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("maps no loop to the GPU"), "{err}");
    // CPU threads are not this target's.
    let (stmt, _, lowered) = fixture(SPMV, "parallelize(i,CPUThread,NoRaces)", 10, 0.3, 2);
    let err = opencl_kernel(&stmt, lowered)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("OpenCL") && err.contains("CPUThread"), "{err}");
}

/// Indices named like words of the targets' languages (OpenCL C's `kernel`, `local`,
/// `half`; CUDA's `threadIdx`) are renamed in the printed code, and the kernel runs on
/// every target: C and the JIT with the default schedule, OpenCL (with the feature) with a
/// GPU one.
#[test]
fn indices_named_like_target_words_compile_on_every_target() {
    let expr = "y(kernel) = A(kernel,threadIdx) * x(threadIdx) + A(kernel,local) * x(local) * half";
    let mut r = rng(3);
    let inputs = vec![
        ("A", random_coo(&mut r, &[20, 10], 0.3)),
        ("x", random_coo(&mut r, &[10], 1.0)),
        ("half", random_coo(&mut r, &[], 1.0)),
    ];
    let (stmt, tensors) = statement(expr, &[("A", "csr")], &inputs, &[]);
    for backend in [Backend::C, Backend::Jit] {
        let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Toolchain::default())
            .and_then(|k| k.with_targets(backend.targets(&Toolchain::default())))
            .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        compare_with_reference(&kernel, &stmt, &tensors, backend.name());
    }
    let schedule = Schedule::parse(
        "parallelize(kernel,GPUBlock,NoRaces),parallelize(threadIdx,GPUThread,ParallelReduction)",
    )
    .unwrap();
    let concrete = schedule.apply(&Concrete::new(&stmt).unwrap()).unwrap();
    let lowered = lower::lower(&concrete).unwrap();
    let listing = OpenClTarget.listing(&lowered.function).unwrap().unwrap();
    let text = listing.kernel();
    for word in ["kernel", "local", "half"] {
        assert!(!text.contains(&format!("int64_t {word} ")), "{text}");
    }
    assert!(text.contains("int64_t kernel_2"), "{text}");
    if cfg!(feature = "opencl") {
        let kernel = opencl_kernel(&stmt, lowered).unwrap();
        compare_with_reference(&kernel, &stmt, &tensors, "OpenCL");
    }
}

/// A statement, the formats of its sparse operands and the dimensions of its inputs.
type Case<'a> = (
    &'a str,
    &'a [(&'a str, &'a str)],
    &'a [(&'a str, &'a [usize])],
);

/// Statements with no schedule get a default GPU mapping that lowers and the target
/// accepts: a warp per row where rows are long (or their length unknown), a thread per row
/// where short, blocks' partial sums for a sum into one value, atomics where rows collide.
/// With the `opencl` feature each runs against the reference, on random inputs and on
/// shared matrices.
#[test]
fn statements_without_a_schedule_get_a_default_gpu_mapping() {
    let cases: [Case; 6] = [
        (SPMV, &[("A", "csr")], &[("A", &[45, 40]), ("x", &[40])]),
        (SPMM, &[("A", "csr")], &[("A", &[45, 40]), ("B", &[40, 12])]),
        (
            "y(j) = A(i,j) * x(i)",
            &[("A", "csr")],
            &[("A", &[45, 40]), ("x", &[45])],
        ),
        (
            "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
            &[("B", "csr")],
            &[("B", &[20, 18]), ("C", &[20, 6]), ("D", &[6, 18])],
        ),
        (
            "y(i) = B(i,j,k) * c(k)",
            &[("B", "csf")],
            &[("B", &[9, 7, 5]), ("c", &[5])],
        ),
        (DOT, &[], &[("x", &[300]), ("y", &[300])]),
    ];
    for (expr, formats, dims) in cases {
        let mut r = rng(8);
        let inputs: Vec<(&str, Coo)> = dims
            .iter()
            .map(|(name, d)| (*name, random_coo(&mut r, d, 0.3)))
            .collect();
        let (stmt, tensors) = statement(expr, formats, &inputs, &[]);
        let concrete = Concrete::new(&stmt).unwrap();
        let lowered = lower_for_target(&concrete, &OpenClTarget, None)
            .unwrap_or_else(|e| panic!("{expr}: {e}"));
        if cfg!(feature = "opencl") {
            let kernel = opencl_kernel(&stmt, lowered).unwrap();
            compare_with_reference(&kernel, &stmt, &tensors, expr);
        }
    }
    // The rows' length chooses between a warp and a thread per row.
    let (stmt, _, _) = fixture(SPMV, GPU_SCHEDULES[0].1, 40, 0.2, 1);
    let concrete = Concrete::new(&stmt).unwrap();
    let listing = |fiber| {
        let lowered = lower_for_target(&concrete, &OpenClTarget, fiber).unwrap();
        OpenClTarget
            .listing(&lowered.function)
            .unwrap()
            .unwrap()
            .text
    };
    assert!(listing(Some(2.0)).contains("gpu_thread"));
    assert!(listing(Some(30.0)).contains("gpu_warp"));
    assert!(listing(None).contains("gpu_warp"));
    // Shared matrices, square and rectangular, with rows from empty to long.
    for name in ["west0479", "Erdos971"] {
        let path = shared_data(&format!("matrices/{name}.mtx"));
        let a = sparsec::io::read_matrix_market(&path).unwrap().coo;
        let mut r = rng(9);
        let x = random_coo(&mut r, &[a.dims[1]], 1.0);
        let (stmt, tensors) = statement(SPMV, &[("A", "csr")], &[("A", a), ("x", x)], &[]);
        let concrete = Concrete::new(&stmt).unwrap();
        let lowered = lower_for_target(&concrete, &OpenClTarget, None).unwrap();
        if cfg!(feature = "opencl") {
            let kernel = opencl_kernel(&stmt, lowered).unwrap();
            compare_with_reference(&kernel, &stmt, &tensors, name);
        }
    }
}

#[cfg(not(feature = "opencl"))]
#[test]
fn without_the_feature_compiling_names_it() {
    let (stmt, _, lowered) = fixture(SPMV, GPU_SCHEDULES[0].1, 10, 0.3, 2);
    let err = opencl_kernel(&stmt, lowered)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("`opencl` feature"), "{err}");
}

#[cfg(feature = "opencl")]
mod on_a_device {
    use super::*;
    use sparsec::codegen::opencl;
    use sparsec::ir::OutputMode;

    /// The device is required: a CI run with the feature and no OpenCL runtime fails here
    /// instead of skipping.
    #[test]
    fn an_opencl_device_is_present() {
        let name = opencl::device_name().unwrap_or_else(|e| panic!("{e}"));
        assert!(!name.is_empty());
    }

    #[test]
    fn gpu_schedules_match_the_reference() {
        for (expr, schedule) in schedules() {
            // Random, a single row, nothing stored, and rows longer than a work-group.
            for (rows, density, seed) in [(50, 0.1, 1), (1, 1.0, 2), (30, 0.0, 3), (300, 0.9, 4)] {
                let (stmt, tensors, lowered) = fixture(expr, schedule, rows, density, seed);
                let kernel =
                    opencl_kernel(&stmt, lowered).unwrap_or_else(|e| panic!("{schedule}: {e}"));
                assert_eq!(kernel.running_target(), opencl::NAME);
                compare_with_reference(
                    &kernel,
                    &stmt,
                    &tensors,
                    &format!("{schedule} on {rows} rows at {density}"),
                );
            }
        }
    }

    /// The message of `e`, which must be the target's refusal (naming the backend), not
    /// the driver's rejection of printed code.
    fn refused_by_target(what: &str, e: sparsec::Error) -> String {
        let message = e.to_string();
        assert!(
            message.contains("OpenCL backend") && !message.contains("driver"),
            "{what}: {message}"
        );
        message
    }

    /// Every schedule of the GPU sweep that lowers either runs on the device and matches
    /// the reference (runs, where it ignores races that are there), or is refused by the
    /// target naming why; the driver never rejects printed code.
    #[test]
    fn every_lowered_gpu_schedule_of_the_sweep_runs_or_is_refused_by_the_target() {
        let (mut ran, mut refused) = (0, Vec::new());
        gpu_schedule_sweep(|swept| {
            let racy = swept.ignores_real_races();
            let Some(Ok(lowered)) = swept.lowered else {
                return;
            };
            let what = &swept.what;
            match opencl_kernel(&swept.statement, lowered) {
                // Races the schedule ignores make results vary: such a kernel must
                // only run.
                Ok(kernel) if racy => {
                    let inputs: Vec<&Tensor> = swept.tensors.iter().collect();
                    kernel
                        .run(&inputs)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    ran += 1;
                }
                Ok(kernel) => {
                    compare_with_reference(&kernel, &swept.statement, &swept.tensors, what);
                    ran += 1;
                }
                Err(e) => refused.push(refused_by_target(what, e)),
            }
        });
        // 304 of 324 ran when this was written; the others ignore races that are there.
        assert!(ran >= 300, "only {ran} ran; refused: {refused:#?}");
        assert!(
            refused.iter().all(|r| r.contains("without summing it")),
            "{refused:#?}"
        );
    }

    /// Sparse outputs on the device: every lowered schedule of the sparse-output sweep
    /// either runs and matches the reference, or is refused by the target naming why, on
    /// random inputs, on inputs with nothing stored, and on inputs with more entries than
    /// an emitting launch first has room for (1024), whose launch runs again with room
    /// for all of them.
    #[test]
    fn sparse_outputs_are_assembled_on_the_device() {
        for (scale, density) in [(1, 0.3), (1, 0.0), (5, 0.5)] {
            let (mut ran, mut placed, mut appended, mut refused) = (0, 0, 0, Vec::new());
            sparse_output_sweep(scale, density, |swept| {
                let Some(Ok(lowered)) = swept.lowered else {
                    return;
                };
                let what = format!("{} (scale {scale}, density {density})", swept.what);
                let rows = matches!(lowered.function.output, OutputMode::Rows { .. });
                match opencl_kernel(&swept.statement, lowered) {
                    Ok(kernel) => {
                        compare_with_reference(&kernel, &swept.statement, &swept.tensors, &what);
                        ran += 1;
                        if rows {
                            placed += 1;
                        } else {
                            appended += 1;
                        }
                    }
                    Err(e) => refused.push(refused_by_target(&what, e)),
                }
            });
            // 76 ran when this was written (20 placing rows, 56 appending entries).
            assert!(
                ran >= 76 && placed >= 20 && appended >= 50,
                "{ran} ran ({placed} placing rows, {appended} appending); refused: {refused:#?}"
            );
            assert!(
                refused.iter().all(|r| r.contains("without summing it")),
                "{refused:#?}"
            );
        }
    }

    /// The paper's GPU schedules (A.2, A.4, A.8 to A.11) run and match the reference: on
    /// random operands with nothing stored, one row, rows longer than a warp's share of
    /// positions and more positions than a block takes; and on shared matrices and a
    /// FROSTT tensor.
    #[test]
    fn the_papers_gpu_schedules_match_the_reference() {
        let mut r = rng(21);
        for (name, expr, (sparse, format), output, schedule) in PAPER_GPU_SCHEDULES {
            let order = if format == "csf" { 3 } else { 2 };
            let mut cases: Vec<(String, Coo)> = [
                (vec![30, 20, 10], 0.0),
                (vec![1, 1, 1], 1.0),
                (vec![7, 300, 4], 0.9),
                (vec![400, 300, 6], 0.05),
            ]
            .into_iter()
            .map(|(dims, density)| {
                let dims = &dims[..order];
                (
                    format!("{dims:?} at {density}"),
                    random_coo(&mut r, dims, density),
                )
            })
            .collect();
            let real = if order == 3 {
                "tensors/london_transport.tns"
            } else {
                "matrices/bcsstk13.mtx"
            };
            let file = sparsec::io::read_any(shared_data(real)).unwrap();
            cases.push((real.to_string(), file.into_coo()));
            for (what, coo) in cases {
                let mut inputs = vec![(sparse, coo.clone())];
                // The columns the schedules' exact bounds give: 32 and 4 x 32.
                let dense_dims: Vec<(&str, Vec<usize>)> = match order {
                    3 => vec![("C", vec![coo.dims[1], 32]), ("D", vec![coo.dims[2], 32])],
                    _ if expr.starts_with('y') => vec![("x", vec![coo.dims[1]])],
                    _ => vec![("B", vec![coo.dims[1], 128])],
                };
                for (n, d) in dense_dims {
                    inputs.push((n, random_coo(&mut r, &d, 1.0)));
                }
                let formats = [(sparse, format), output];
                let (stmt, tensors) = statement(expr, &formats, &inputs, &[]);
                let concrete = Schedule::parse(schedule)
                    .unwrap()
                    .apply(&Concrete::new(&stmt).unwrap())
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let lowered = lower::lower(&concrete).unwrap_or_else(|e| panic!("{name}: {e}"));
                let kernel =
                    opencl_kernel(&stmt, lowered).unwrap_or_else(|e| panic!("{name}: {e}"));
                // Blocks and warps share rows (their races ignored), the threads' loop asks
                // for atomics: the flushes are atomic, or the results would vary.
                if !name.starts_with("A.9") && !name.starts_with("A.10") {
                    assert!(
                        kernel.kernel_source().contains("sparsec_atomic_add_f64"),
                        "{name}: no atomic update\n{}",
                        kernel.kernel_source()
                    );
                }
                compare_with_reference(&kernel, &stmt, &tensors, &format!("{name} on {what}"));
            }
        }
    }

    /// Reductions other than a sum on GPU threads, warps and blocks: each copy starts
    /// from ⊕'s identity, a warp or group combines its copies by ⊕ (a tree in local
    /// memory), and the host combines the groups' partial results by ⊕. Over (min, +),
    /// (max, *), (any, pair) and a user ⊕, on rows empty, longer than a group, and one row.
    #[test]
    fn reductions_by_any_semiring_run_on_gpu_threads_warps_and_blocks() {
        let user = "let absmax(a, b) = where(abs(a) > abs(b), a, where(abs(b) > abs(a), b, \
                    max(a, b))) identity 0; ";
        let semirings = [
            ("", "(min, +)"),
            ("", "(max, *)"),
            ("", "(any, pair)"),
            (user, "(absmax, *)"),
        ];
        let mut r = rng(31);
        for (definitions, semiring) in semirings {
            let [warps, blocks] = GPU_ROW_REDUCTIONS;
            let cases = [(SPMV, warps), (SPMV, blocks), (DOT, DOT_SCHEDULE)];
            for (expr, schedule) in cases {
                for (rows, density) in [(50, 0.1), (1, 1.0), (30, 0.0), (300, 0.9)] {
                    let inputs: Vec<(&str, Coo)> = if expr == DOT {
                        vec![
                            ("x", random_coo(&mut r, &[rows * 7], 0.6)),
                            ("y", random_coo(&mut r, &[rows * 7], 0.6)),
                        ]
                    } else {
                        vec![
                            ("A", random_coo(&mut r, &[rows, 40], density)),
                            ("x", random_coo(&mut r, &[40], 0.7)),
                        ]
                    };
                    let text = format!("{definitions}{expr} over {semiring}");
                    let formats = [("A", "csr"), ("x", "s"), ("y", "s")];
                    let formats = if expr == DOT {
                        &formats[1..]
                    } else {
                        &formats[..1]
                    };
                    let (stmt, tensors) = statement(&text, formats, &inputs, &[]);
                    let concrete = Schedule::parse(schedule)
                        .unwrap()
                        .apply(&Concrete::new(&stmt).unwrap())
                        .unwrap();
                    let what = format!("{text} with {schedule} on {rows} rows");
                    let lowered = lower::lower(&concrete).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let kernel =
                        opencl_kernel(&stmt, lowered).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        kernel.kernel_source().contains("sparsec_reduce_op("),
                        "{what}\n{}",
                        kernel.kernel_source()
                    );
                    compare_with_reference(&kernel, &stmt, &tensors, &what);
                }
            }
        }
    }

    /// `.spf` programs whose outer loop is `parallel;` or `wavefront;` run on the device
    /// (their parallel loops on blocks and threads, a wavefront's levels as successive
    /// launches) and give the C target's results.
    #[test]
    fn sparse_polyhedral_programs_run_on_the_device() {
        let programs = [
            ("spmv.spf", include_str!("../../../examples/spf/spmv.spf")),
            (
                "lower_solve_wavefront.spf",
                include_str!("../../../examples/spf/lower_solve_wavefront.spf"),
            ),
        ];
        let mut r = rng(12);
        for (n, density) in [(0, 0.5), (1, 1.0), (7, 0.5), (300, 0.02), (1000, 0.004)] {
            let mut coo = random_coo(&mut r, &[n, n], density);
            // A dominant diagonal, one explicit entry per row, for the solve.
            for i in 0..n as i64 {
                coo.coords.extend([i, i]);
                coo.values.push(n as f64 + 1.0);
            }
            let a = Tensor::from_coo(
                &coo,
                &sparsec::format::Format::parse("coo", 2).unwrap(),
                ValueType::F64,
            )
            .unwrap();
            let v = random_coo(&mut r, &[n], 1.0);
            let v =
                Tensor::from_coo(&v, &sparsec::format::Format::dense(1), ValueType::F64).unwrap();
            for (name, text) in programs {
                let on = |backend: Backend| {
                    let kernel = compile_spf_with(name, text, backend);
                    let inputs: Vec<(&str, &Tensor)> = if name.starts_with("spmv") {
                        vec![("A", &a), ("x", &v)]
                    } else {
                        vec![("L", &a), ("b", &v)]
                    };
                    (kernel.running_target(), kernel.run(&inputs))
                };
                let (target, got) = on(Backend::OpenCl);
                assert_eq!(target, opencl::NAME);
                let got = got.unwrap_or_else(|e| panic!("{name} on {n}: {e}"));
                let want = on(Backend::C).1.unwrap();
                let diff = got.max_difference(&want).expect("same shape");
                assert!(diff <= 1e-9, "{name} on {n}x{n}: differs from C by {diff}");
            }
        }
    }

    /// The thesis's MTTKRP and TTM on COO with their loop over entries `parallel;`: the
    /// entries of one row add atomically on the device, as on CPU threads.
    #[test]
    fn parallel_coo_tensor_programs_add_colliding_entries_on_the_device() {
        let programs = [
            (
                "mttkrp_coo.spf",
                include_str!("../../../examples/spf/mttkrp_coo.spf"),
            ),
            (
                "ttm_coo.spf",
                include_str!("../../../examples/spf/ttm_coo.spf"),
            ),
        ];
        let mut r = rng(14);
        let mut tensors: Vec<(String, Coo)> =
            [([0, 0, 0], 0.5), ([1, 1, 1], 1.0), ([20, 9, 13], 0.1)]
                .into_iter()
                .map(|(dims, density)| (format!("{dims:?}"), random_coo(&mut r, &dims, density)))
                .collect();
        let real = shared_data("tensors/london_transport.tns");
        tensors.push((
            "london_transport".into(),
            sparsec::io::read_tns(real, None).unwrap(),
        ));
        let rank = 6;
        for (what, b) in tensors {
            let tensor = Tensor::from_coo(
                &b,
                &sparsec::format::Format::parse("coo", 3).unwrap(),
                ValueType::F64,
            )
            .unwrap();
            let factor = |n: usize, r: &mut rand::rngs::StdRng| {
                let coo = random_coo(r, &[n, rank], 1.0);
                Tensor::from_coo(&coo, &sparsec::format::Format::dense(2), ValueType::F64).unwrap()
            };
            let (c, d) = (factor(b.dims[1], &mut r), factor(b.dims[2], &mut r));
            for (name, text) in programs {
                let text = text.replacen("stmt S0", "parallel;\nstmt S0", 1);
                let inputs: Vec<(&str, &Tensor)> = if name.starts_with("mttkrp") {
                    vec![("B", &tensor), ("C", &c), ("D", &d)]
                } else {
                    vec![("B", &tensor), ("U", &d)]
                };
                let on = |backend: Backend| {
                    let kernel = compile_spf_with(name, &text, backend);
                    (kernel.running_target(), kernel.run(&inputs))
                };
                let (target, got) = on(Backend::OpenCl);
                assert_eq!(target, opencl::NAME);
                let got = got.unwrap_or_else(|e| panic!("{name} on {what}: {e}"));
                let want = on(Backend::C).1.unwrap();
                let diff = got.max_difference(&want).expect("same shape");
                assert!(diff <= 1e-9, "{name} on {what}: differs from C by {diff}");
            }
        }
    }

    #[test]
    fn a_kernel_runs_again_on_other_inputs() {
        let (stmt, _, lowered) = fixture(SPMV, GPU_SCHEDULES[1].1, 64, 0.2, 5);
        let kernel = opencl_kernel(&stmt, lowered).unwrap();
        for seed in 0..3 {
            let (_, tensors, _) = fixture(SPMV, GPU_SCHEDULES[1].1, 64, 0.2, 10 + seed);
            compare_with_reference(&kernel, &stmt, &tensors, "again");
        }
    }
}
