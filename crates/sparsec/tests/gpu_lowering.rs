//! GPU schedules lowered to the IR's neutral parallelism: block, warp and thread loops
//! with their grid and block dimensions, workspaces placed in the memory the scheduling
//! paper gives them (global outside blocks, shared between blocks and threads, registers
//! inside threads), and the GPU nesting rules refused at lowering, naming the
//! precondition; then outlined into a host part and device kernels, with what crosses
//! between them and their launch sizes. No target here runs GPU loops: these are the IR
//! the GPU targets take.

mod common;
use common::*;

use sparsec::ir::outline::{outline, LaunchDefaults, Outlined, WARP_SIZE};
use sparsec::ir::{
    ArrayRef, Expr, Function, GpuDim, Loop, LoopKind, Mapping, MemorySpace, OperandId, OutputMode,
    ParallelUnit, ParamRef, ReductionStrategy, ScalarArg, Stmt,
};
use sparsec::lower::{self, LowerError};
use sparsec::schedule::{Concrete, Schedule};

const SPMV: &str = "y(i) = A(i,j) * x(j)";
const SPMM: &str = "C(i,k) = A(i,j) * B(j,k)";

/// `expr` over a random CSR `A` (50 x 40), lowered under `schedule`.
fn lowered(expr: &str, schedule: &str) -> Result<Function, String> {
    let mut r = rng(7);
    let a = ("A", random_coo(&mut r, &[50, 40], 0.1));
    let inputs = if expr == SPMV {
        vec![a, ("x", random_coo(&mut r, &[40], 1.0))]
    } else {
        vec![a, ("B", random_coo(&mut r, &[40, 64], 1.0))]
    };
    let (stmt, _) = statement(expr, &[("A", "csr")], &inputs, &[]);
    let schedule = Schedule::parse(schedule).map_err(|e| e.to_string())?;
    let concrete = schedule
        .apply(&Concrete::new(&stmt).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let lowered = lower::lower(&concrete).map_err(|e: LowerError| e.to_string())?;
    sparsec::ir::verify(&lowered.function).map_err(|e| e.to_string())?;
    Ok(lowered.function)
}

/// The parallel loops of `f`, outermost first: their variable's hint, unit and mapping.
fn parallel_loops(f: &Function) -> Vec<(String, ParallelUnit, Mapping)> {
    let mut out = Vec::new();
    sparsec::ir::visit::walk_stmts(&f.body, &mut |s| {
        if let Stmt::For(Loop {
            var,
            kind: LoopKind::Parallel { unit, mapping, .. },
            ..
        }) = s
        {
            out.push((f.var(*var).hint.clone(), *unit, *mapping));
        }
    });
    out
}

fn gpu(dim: GpuDim) -> Mapping {
    Mapping::Gpu { dim }
}

#[test]
fn a_row_per_gpu_thread_maps_blocks_and_threads_along_x() {
    let f = lowered(
        SPMV,
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces)",
    )
    .unwrap();
    assert_eq!(
        parallel_loops(&f),
        vec![
            ("i0".into(), ParallelUnit::GpuBlock, gpu(GpuDim::X)),
            ("i1".into(), ParallelUnit::GpuThread, gpu(GpuDim::X)),
        ]
    );
    let listing = f.to_string();
    assert!(listing.contains("on GpuBlock along X"), "{listing}");
    assert!(listing.contains("on GpuThread along X"), "{listing}");
}

#[test]
fn nested_thread_loops_take_the_block_dimensions_innermost_first() {
    let f = lowered(
        SPMM,
        "split(i,i0,i1,4),split(k,k0,k1,32),reorder(i0,i1,k0,k1,j),\
         parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces),\
         parallelize(k1,GPUThread,NoRaces)",
    )
    .unwrap();
    assert_eq!(
        parallel_loops(&f),
        vec![
            ("i0".into(), ParallelUnit::GpuBlock, gpu(GpuDim::X)),
            ("i1".into(), ParallelUnit::GpuThread, gpu(GpuDim::Y)),
            ("k1".into(), ParallelUnit::GpuThread, gpu(GpuDim::X)),
        ]
    );
}

/// The space of every scratch array the function allocates.
fn spaces(f: &Function) -> Vec<MemorySpace> {
    let mut out: Vec<MemorySpace> = f.locals.iter().map(|l| l.space).collect();
    sparsec::ir::visit::walk_stmts(&f.body, &mut |s| {
        if let Stmt::For(Loop {
            kind: LoopKind::Parallel { locals, .. },
            ..
        }) = s
        {
            out.extend(locals.iter().map(|l| l.space));
        }
    });
    out
}

#[test]
fn workspaces_live_where_the_paper_places_them() {
    // Inside a thread: registers (or the thread's local memory).
    let f = lowered(
        SPMM,
        "precompute(A(i,j)*B(j,k),k,k,w),split(i,i0,i1,4),\
         parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces)",
    )
    .unwrap();
    assert_eq!(spaces(&f), vec![MemorySpace::Private]);
    // Between the block and its threads: the block's shared memory.
    let f = lowered(
        SPMM,
        "split(i,i0,i1,4),precompute(A(i,j)*B(j,k),k,k,w),\
         parallelize(i0,GPUBlock,NoRaces),parallelize(k,GPUThread,NoRaces)",
    )
    .unwrap();
    assert_eq!(spaces(&f), vec![MemorySpace::Shared]);
    // On the CPU: one copy per thread, shared by its SIMD lanes.
    let f = lowered(
        SPMM,
        "precompute(A(i,j)*B(j,k),k,k,w),parallelize(i,CPUThread,NoRaces)",
    )
    .unwrap();
    assert_eq!(spaces(&f), vec![MemorySpace::Thread]);
    // Outside every parallel loop: global memory.
    let f = lowered(SPMM, "precompute(A(i,j)*B(j,k),k,k,w)").unwrap();
    assert_eq!(spaces(&f), vec![MemorySpace::Global]);
}

#[test]
fn a_warp_reduction_is_a_parallel_reduction_of_the_threads_partial_sums() {
    let f = lowered(
        SPMV,
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUWarp,NoRaces),\
         parallelize(j,GPUThread,ParallelReduction)",
    )
    .unwrap();
    let mut strategies = Vec::new();
    sparsec::ir::visit::walk_stmts(&f.body, &mut |s| {
        if let Stmt::For(Loop {
            kind:
                LoopKind::Parallel {
                    unit: ParallelUnit::GpuThread,
                    reductions,
                    reduce_by,
                    ..
                },
            ..
        }) = s
        {
            strategies.push((reductions.len(), *reduce_by));
        }
    });
    assert_eq!(strategies, vec![(1, ReductionStrategy::ParallelReduction)]);
    assert!(f.to_string().contains("by ParallelReduction"), "{f}");
}

fn refused(expr: &str, schedule: &str, needles: &[&str]) {
    let message = lowered(expr, schedule).expect_err(schedule);
    for needle in needles {
        assert!(
            message.contains(needle),
            "`{schedule}`: expected `{needle}` in:\n{message}"
        );
    }
}

#[test]
fn gpu_nesting_rules_are_preconditions_named_when_they_fail() {
    refused(
        SPMV,
        "parallelize(i,GPUBlock,NoRaces)",
        &[
            "parallelize(i,GPUBlock,NoRaces)",
            "a GPUBlock loop holds GPUThread loops",
        ],
    );
    refused(
        SPMV,
        "parallelize(i,GPUWarp,NoRaces)",
        &["a GPUWarp loop is nested in a GPUBlock loop"],
    );
    refused(
        SPMV,
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces),\
         parallelize(j,GPUWarp,NoRaces)",
        &[
            "GPU loops nest as blocks, warps, threads",
            "`j` is nested in `i1`",
        ],
    );
    refused(
        SPMV,
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,CPUThread,NoRaces)",
        &["no CPU loop inside a GPU loop"],
    );
    refused(
        SPMM,
        "split(i,i0,i1,2),split(i1,i2,i3,2),split(k,k0,k1,4),split(k1,k2,k3,2),\
         reorder(i0,i2,i3,k0,k2,k3,j),parallelize(i0,GPUBlock,NoRaces),\
         parallelize(i2,GPUThread,NoRaces),parallelize(i3,GPUThread,NoRaces),\
         parallelize(k2,GPUThread,NoRaces),parallelize(k3,GPUThread,NoRaces)",
        &[
            "at most three nested loops on one GPU unit",
            "`i2` holds 3 GPUThread loops",
        ],
    );
}

#[test]
fn sums_in_gpu_registers_are_refused_and_sparse_outputs_lower_on_gpu_loops() {
    refused(
        SPMV,
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUWarp,NoRaces),\
         parallelize(j,GPUThread,Atomics)",
        &[
            "atomics can protect the update",
            "use ParallelReduction or Temporary",
        ],
    );
    let mut r = rng(3);
    let inputs = [
        ("A", random_coo(&mut r, &[20, 20], 0.2)),
        ("B", random_coo(&mut r, &[20, 20], 0.2)),
    ];
    let lower_into = |format: &str| {
        let (stmt, _) = statement(
            "C(i,k) = A(i,j) * B(j,k)",
            &[("A", "csr"), ("B", "csr"), ("C", format)],
            &inputs,
            &[],
        );
        let schedule = Schedule::parse(
            "split(i,i0,i1,4),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces)",
        )
        .unwrap();
        let concrete = schedule.apply(&Concrete::new(&stmt).unwrap()).unwrap();
        lower::lower(&concrete).unwrap().function
    };
    // A thread owns each row of a CSR result: its rows are counted (or bounded) and
    // placed, never appended through the one slot counter of phase 2.
    let csr = lower_into("csr");
    assert_eq!(csr.output, OutputMode::Rows { bounds: true });
    assert!(!csr
        .signature()
        .scalars
        .contains(&ScalarArg::Param(ParamRef::Capacity)));
    // Rows of a CSC result are not a thread's: its entries are emitted, each taking a slot
    // of the launcher's room.
    assert_eq!(lower_into("csc").output, OutputMode::Emit { order: 2 });
}

fn outlined(expr: &str, schedule: &str) -> (Function, Outlined) {
    let f = lowered(expr, schedule).unwrap_or_else(|e| panic!("{schedule}: {e}"));
    let o = outline(&f, LaunchDefaults::default()).unwrap_or_else(|e| panic!("{schedule}: {e}"));
    (f, o)
}

#[test]
fn outlining_loses_nothing_and_leaves_no_gpu_loop_on_the_host() {
    for (expr, schedule) in GPU_SCHEDULES {
        let (f, o) = outlined(expr, schedule);
        assert_eq!(o.inline(), f, "{schedule}");
        assert!(!o.kernels.is_empty(), "{schedule}");
        let mut gpu_on_host = false;
        sparsec::ir::visit::walk_stmts(&o.host.body, &mut |s| {
            gpu_on_host |= matches!(
                s,
                Stmt::For(Loop { kind: LoopKind::Parallel { unit, .. }, .. }) if unit.is_gpu()
            );
        });
        assert!(!gpu_on_host, "{schedule}:\n{}", o.host);
        sparsec::ir::verify(&o.host).unwrap();
    }
}

#[test]
fn a_kernel_takes_the_arrays_it_touches_and_returns_those_it_writes() {
    let (f, o) = outlined(SPMV, GPU_SCHEDULES[0].1);
    assert_eq!(o.host.body, vec![Stmt::Launch(0)]);
    let k = &o.kernels[0];
    let sig = f.signature();
    assert_eq!(k.arrays, sig.arrays, "every operand array is the kernel's");
    assert_eq!(k.written, vec![ArrayRef::Values(OperandId(0))]);
    assert!(k.captured.is_empty() && k.results.is_empty());
    assert!(k.params.contains(&ParamRef::Extent(0)));
    // One block per 32 rows, 32 threads each (the split's bound on its inner loop).
    assert_eq!(k.geometry.grid[0], k.nest.end);
    assert_eq!(k.geometry.grid[1], Expr::Int(1));
    assert_eq!(
        k.geometry.threads,
        [Expr::Int(32), Expr::Int(1), Expr::Int(1)]
    );
    assert_eq!(k.geometry.warps, [Expr::Int(1), Expr::Int(1), Expr::Int(1)]);
}

#[test]
fn warps_run_thread_loops_on_their_lanes_and_unbounded_loops_take_the_defaults() {
    let (_, o) = outlined(SPMV, GPU_SCHEDULES[1].1);
    let g = &o.kernels[0].geometry;
    assert_eq!(g.warps[0], Expr::Int(32));
    assert_eq!(g.threads[0], Expr::Int(WARP_SIZE));
    // A row's entries on a block's threads: their count is the data's, so the launch
    // takes the default and the threads take the entries in turns.
    let (_, o) = outlined(SPMV, GPU_SCHEDULES[2].1);
    let g = &o.kernels[0].geometry;
    assert_eq!(g.threads[0], Expr::Int(LaunchDefaults::default().threads));
    assert_eq!(g.grid[0], Expr::Param(ParamRef::Extent(0)));
}

#[test]
fn host_loops_around_a_kernel_launch_it_with_their_variables() {
    let (f, o) = outlined(SPMM, GPU_SCHEDULES[5].1);
    let [Stmt::For(host_loop)] = o.host.body.as_slice() else {
        panic!("one host loop:\n{}", o.host)
    };
    assert_eq!(f.var(host_loop.var).hint, "k");
    assert!(host_loop.body.contains(&Stmt::Launch(0)), "{}", o.host);
    assert_eq!(o.kernels[0].captured, vec![host_loop.var]);
    assert!(o.host.to_string().contains("launch kernel 0;"));
}

#[test]
fn workspaces_inside_a_kernel_stay_on_the_device() {
    let (_, o) = outlined(SPMM, GPU_SCHEDULES[4].1);
    let k = &o.kernels[0];
    assert!(
        k.arrays.iter().all(|a| !matches!(a, ArrayRef::Scratch(_))),
        "{:?}",
        k.arrays
    );
    assert_eq!(k.written, vec![ArrayRef::Values(OperandId(0))]);
    // The block's threads run over k, 64 of them.
    assert_eq!(k.geometry.threads[0], Expr::Int(64));
}

#[test]
fn a_gpu_dot_product_sums_into_a_host_scalar_by_reference() {
    let mut r = rng(5);
    let inputs = [
        ("x", random_coo(&mut r, &[100], 1.0)),
        ("y", random_coo(&mut r, &[100], 1.0)),
    ];
    let (stmt, _) = statement("a = x(i) * y(i)", &[], &inputs, &[]);
    let schedule = Schedule::parse(
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,Temporary),\
         parallelize(i1,GPUThread,ParallelReduction)",
    )
    .unwrap();
    let concrete = schedule.apply(&Concrete::new(&stmt).unwrap()).unwrap();
    let f = lower::lower(&concrete).unwrap().function;
    let o = outline(&f, LaunchDefaults::default()).unwrap();
    assert_eq!(o.inline(), f);
    let k = &o.kernels[0];
    assert_eq!(k.results.len(), 1, "{f}");
    assert!(!k.captured.contains(&k.results[0]));
}

#[test]
fn a_blocks_threads_wait_for_each_other_around_its_shared_workspace() {
    let (f, _) = outlined(SPMM, GPU_SCHEDULES[4].1);
    // In the block's code: zero the shared workspace, sum into it over the row's
    // entries on the threads, add it into the output on the threads; a barrier after each
    // step, so that no thread reads or overwrites what another has not finished with.
    let Stmt::For(block) = &f.body[0] else {
        panic!("a block loop:\n{f}")
    };
    let mut shapes = Vec::new();
    sparsec::ir::visit::walk_stmts(&block.body, &mut |s| {
        if matches!(s, Stmt::Barrier) {
            shapes.push("barrier");
        }
    });
    assert!(shapes.len() >= 3, "{f}");
    let listing = f.to_string();
    let zeroing = listing.find("= 0.0;").expect("the workspace is zeroed");
    let first_barrier = listing.find("barrier;").unwrap();
    let summing = listing.find("w[k] +=").unwrap();
    assert!(
        zeroing < first_barrier && first_barrier < summing,
        "{listing}"
    );
    // Without shared memory there is nothing to wait for.
    let (f, _) = outlined(SPMM, GPU_SCHEDULES[3].1);
    assert!(!f.to_string().contains("barrier;"), "{f}");
}

/// Sliced ELL's blocks of rows run in SIMD lanes on the CPU (the C target's pass); under
/// GPU loops they stay serial loops of each thread (found by a GPU schedule that failed
/// the verifier).
#[test]
fn blocked_rows_under_gpu_loops_are_not_simd_lanes() {
    let mut r = rng(1);
    let inputs = [
        ("A", random_coo(&mut r, &[41, 50], 0.1)),
        ("x", random_coo(&mut r, &[50], 1.0)),
    ];
    let (stmt, _) = statement(SPMV, &[("A", "sell:4")], &inputs, &[]);
    let lower_with = |schedule: &str| {
        let schedule = Schedule::parse(schedule).unwrap();
        let concrete = schedule.apply(&Concrete::new(&stmt).unwrap()).unwrap();
        let f = lower::lower(&concrete).unwrap().function;
        sparsec::ir::verify(&f).unwrap();
        f
    };
    let units = |f: &Function| -> Vec<ParallelUnit> {
        parallel_loops(f)
            .into_iter()
            .map(|(_, unit, _)| unit)
            .collect()
    };
    // On the CPU, lowering notes the lane loops and the C target's pass runs them in lanes.
    let mut cpu = lower_with("parallelize(i_blk,CPUThread,NoRaces)");
    assert!(!cpu.lane_loops.is_empty());
    assert_eq!(units(&cpu), vec![ParallelUnit::CpuThread]);
    sparsec::kernel::Backend::C
        .targets(&sparsec::jit::Toolchain::default())
        .prepare(&mut cpu)
        .unwrap();
    assert_eq!(
        units(&cpu),
        vec![ParallelUnit::CpuThread, ParallelUnit::CpuVector]
    );
    let gpu =
        lower_with("parallelize(i_blk,GPUBlock,NoRaces),parallelize(A_o0_slot,GPUThread,Atomics)");
    assert!(gpu.lane_loops.is_empty());
    let gpu = units(&gpu);
    assert!(
        gpu.contains(&ParallelUnit::GpuThread) && !gpu.contains(&ParallelUnit::CpuVector),
        "{gpu:?}"
    );
}

/// A statement of the sweep: its text, its sparse tensors, every tensor's dimensions.
/// Every GPU schedule of a sweep over statements, formats and race strategies either
/// lowers to IR the verifier accepts, which outlines into kernels that inline back to it,
/// or is refused naming a precondition; none fails inside sparsec.
#[test]
fn gpu_schedules_lower_verify_and_outline_or_name_a_precondition() {
    let mut lowered_count = 0;
    let mut refused = 0;
    gpu_schedule_sweep(|swept| {
        let what = &swept.what;
        match swept.lowered {
            None => refused += 1,
            Some(Ok(l)) => {
                sparsec::ir::verify(&l.function).unwrap_or_else(|e| panic!("{what}: {e}"));
                let o = outline(&l.function, LaunchDefaults::default())
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(o.inline(), l.function, "{what}");
                sparsec::ir::verify(&o.host).unwrap_or_else(|e| panic!("{what}: {e}"));
                lowered_count += 1;
            }
            Some(Err(message)) => {
                assert!(
                    message.contains("precondition failed") || message.contains("cannot compile"),
                    "{what}: {message}"
                );
                assert!(!message.contains("invalid IR"), "{what}: {message}");
                refused += 1;
            }
        }
    });
    assert!(
        lowered_count >= 40,
        "only {lowered_count} lowered ({refused} refused)"
    );
}
