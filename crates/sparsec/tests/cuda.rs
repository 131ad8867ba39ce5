//! The CUDA target's text: GPU schedules printed as CUDA C (always checked for what they
//! must contain), and every kernel of the GPU schedule sweep compiled by `nvcc` to PTX and
//! a cubin for sm_90 with warnings as errors. The compile test needs nvcc (no GPU): it is
//! marked ignored so that a machine without the CUDA toolkit reports it as not run, and
//! CI runs it with the `nvidia-cuda-nvcc` wheel (`SPARSEC_NVCC`).

mod common;
use common::*;

use std::path::PathBuf;
use std::process::Command;

use sparsec::codegen::cuda::CudaTarget;
use sparsec::lower;
use sparsec::schedule::{Concrete, Schedule};
use sparsec::target::Target;

fn cuda_listing(
    expr: &str,
    formats: &[(&str, &str)],
    dims: &[(&str, &[usize])],
    schedule: &str,
) -> String {
    let mut r = rng(4);
    let inputs: Vec<(&str, sparsec::tensor::Coo)> = dims
        .iter()
        .map(|(name, d)| (*name, random_coo(&mut r, d, 0.3)))
        .collect();
    let (stmt, _) = statement(expr, formats, &inputs, &[]);
    let concrete = Schedule::parse(schedule)
        .unwrap()
        .apply(&Concrete::new(&stmt).unwrap())
        .unwrap();
    let lowered = lower::lower(&concrete).unwrap();
    CudaTarget
        .listing(&lowered.function)
        .unwrap_or_else(|e| panic!("{schedule}: {e}"))
        .expect("the target prints its kernels")
        .text
}

#[test]
fn warps_sum_with_shuffles_and_blocks_through_shared_memory() {
    let spmv = [("A", &[40usize, 30][..]), ("x", &[30][..])];
    let text = cuda_listing(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr")],
        &spmv,
        "split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUWarp,NoRaces),\
         parallelize(j,GPUThread,ParallelReduction)",
    );
    assert!(
        text.contains("extern \"C\" __global__ void sparsec_kernel_0("),
        "{text}"
    );
    assert!(text.contains("__shfl_down_sync(0xffffffffu"), "{text}");
    assert!(text.contains("(int64_t)threadIdx.x"), "{text}");
    let text = cuda_listing(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr")],
        &spmv,
        "parallelize(i,GPUBlock,NoRaces),parallelize(j,GPUThread,ParallelReduction)",
    );
    assert!(text.contains("__syncthreads();"), "{text}");
    assert!(
        text.contains("sparsec_shared + sparsec_combine_offset"),
        "{text}"
    );
    assert!(!text.contains("__shfl"), "{text}");
    // A row's entries on threads adding into the output: atomics.
    let text = cuda_listing(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr")],
        &spmv,
        "split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,Atomics)",
    );
    assert!(text.contains("__global__"), "{text}");
}

/// The GPU schedules of a reduction other than a sum: a warp's shuffles, a group's tree
/// and each copy's start combine and start by ⊕ (here `min`, identity `inf`).
const SEMIRING_SCHEDULES: [(&str, &str); 3] = [
    ("y(i) = A(i,j) * x(j) over (min, +)", GPU_ROW_REDUCTIONS[0]),
    ("y(i) = A(i,j) * x(j) over (min, +)", GPU_ROW_REDUCTIONS[1]),
    ("a = x(i) * y(i) over (max, *)", DOT_SCHEDULE),
];

fn semiring_listing(expr: &str, schedule: &str) -> String {
    if expr.starts_with('a') {
        cuda_listing(expr, &[], &[("x", &[100]), ("y", &[100])], schedule)
    } else {
        cuda_listing(
            expr,
            &[("A", "csr")],
            &[("A", &[40, 30]), ("x", &[30])],
            schedule,
        )
    }
}

#[test]
fn reductions_other_than_sums_combine_by_their_operator() {
    let [warps, group, blocks] = SEMIRING_SCHEDULES.map(|(e, s)| semiring_listing(e, s));
    for text in [&warps, &group, &blocks] {
        assert!(
            text.contains("static __device__ inline double sparsec_reduce_op("),
            "{text}"
        );
    }
    assert!(
        warps.contains("= sparsec_reduce_op(") && warps.contains("__shfl_down_sync"),
        "{warps}"
    );
    assert!(warps.contains("= INFINITY;"), "{warps}");
    assert!(group.contains("] = sparsec_reduce_op("), "{group}");
    assert!(blocks.contains("= (-INFINITY);"), "{blocks}");
    // Atomics protect sums only.
    let spmv = [("A", &[40usize, 30][..]), ("x", &[30][..])];
    let mut r = rng(4);
    let inputs: Vec<(&str, sparsec::tensor::Coo)> = spmv
        .iter()
        .map(|(name, d)| (*name, random_coo(&mut r, d, 0.3)))
        .collect();
    let (stmt, _) = statement(
        "y(i) = A(i,j) * x(j) over (min, +)",
        &[("A", "csc")],
        &inputs,
        &[],
    );
    let err = Schedule::parse("parallelize(j,GPUBlock,Atomics)")
        .unwrap()
        .apply(&Concrete::new(&stmt).unwrap())
        .map_err(|e| e.to_string())
        .and_then(|c| lower::lower(&c).map(|_| ()).map_err(|e| e.to_string()))
        .unwrap_err();
    assert!(err.contains("not by atomics"), "{err}");
}

/// The semiring schedules' CUDA C compiles with nvcc, each alone (each has its own
/// `sparsec_reduce_op`), warnings as errors.
#[test]
#[ignore = "needs nvcc: CI runs it with SPARSEC_NVCC set (--include-ignored)"]
fn reductions_other_than_sums_compile_with_nvcc() {
    let nvcc = nvcc();
    let dir = tempfile::tempdir().unwrap();
    for (n, (expr, schedule)) in SEMIRING_SCHEDULES.into_iter().enumerate() {
        let text = semiring_listing(expr, schedule);
        let cu = dir.path().join(format!("s{n}.cu"));
        std::fs::write(&cu, &text).unwrap();
        let out = Command::new(&nvcc)
            .args(["-arch=sm_90", "-cubin", "-Werror", "all-warnings", "-o"])
            .arg(dir.path().join(format!("s{n}.cubin")))
            .arg(&cu)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{expr} with {schedule}: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The nvcc to run: `SPARSEC_NVCC`, else `nvcc` on the path.
fn nvcc() -> PathBuf {
    let nvcc = std::env::var_os("SPARSEC_NVCC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nvcc"));
    let found = Command::new(&nvcc).arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "nvcc not found ({}): install the CUDA toolkit or `pip install nvidia-cuda-nvcc` and \
         set SPARSEC_NVCC",
        nvcc.display()
    );
    nvcc
}

/// Every schedule of the GPU sweep and of the sparse-output sweep that lowers, and the
/// paper's GPU schedules, print CUDA C that nvcc compiles for
/// sm_90, to PTX and to a cubin, with every warning an error; or is refused by the target
/// naming why.
#[test]
#[ignore = "needs nvcc: CI runs it with SPARSEC_NVCC set (--include-ignored)"]
fn every_cuda_kernel_of_the_sweep_compiles_with_nvcc() {
    let nvcc = nvcc();
    let dir = tempfile::tempdir().unwrap();
    let mut sources = Vec::new();
    let mut refused = Vec::new();
    let mut print = |swept: SweptSchedule| {
        let Some(Ok(lowered)) = swept.lowered else {
            return;
        };
        match CudaTarget.listing(&lowered.function) {
            Ok(listing) => sources.push((swept.what, listing.expect("printed"))),
            Err(e) => refused.push(e.to_string()),
        }
    };
    gpu_schedule_sweep(&mut print);
    sparse_output_sweep(1, 0.3, &mut print);
    for (name, expr, (sparse, format), output, schedule) in PAPER_GPU_SCHEDULES {
        let dims: &[(&str, &[usize])] = match format {
            "csf" => &[("B", &[9, 8, 7]), ("C", &[8, 32]), ("D", &[7, 32])],
            _ if expr.starts_with('y') => &[("A", &[40, 30]), ("x", &[30])],
            _ => &[("A", &[40, 30]), ("B", &[30, 128])],
        };
        let mut r = rng(5);
        let inputs: Vec<(&str, sparsec::tensor::Coo)> = dims
            .iter()
            .map(|(n, d)| (*n, random_coo(&mut r, d, 0.3)))
            .collect();
        let (stmt, _) = statement(expr, &[(sparse, format), output], &inputs, &[]);
        let concrete = Schedule::parse(schedule)
            .unwrap()
            .apply(&Concrete::new(&stmt).unwrap())
            .unwrap();
        print(SweptSchedule {
            what: name.to_string(),
            schedule: schedule.to_string(),
            statement: stmt,
            tensors: Vec::new(),
            lowered: Some(lower::lower(&concrete).map_err(|e| e.to_string())),
        });
    }
    assert!(
        sources.len() >= 385,
        "only {} printed: {refused:#?}",
        sources.len()
    );
    assert!(
        refused.iter().all(|r| r.contains("without summing it")),
        "{refused:#?}"
    );
    // One translation unit for all (nvcc's start dominates a run): the distinct texts
    // before the kernels (the prelude, with a level helper or without), then every
    // source's kernels renamed apart. Where it fails, each source alone names the culprit.
    let mut heads: Vec<&str> = Vec::new();
    let mut unit = String::new();
    for (_, listing) in &sources {
        let head = &listing.text[..listing.body_offset];
        if !heads.contains(&head) {
            heads.push(head);
        }
    }
    heads.iter().for_each(|h| unit.push_str(h));
    for (n, (_, listing)) in sources.iter().enumerate() {
        unit.push_str(
            &listing
                .kernel()
                .replace("sparsec_kernel_", &format!("k{n}_kernel_")),
        );
    }
    let compile = |text: &str, name: &str| {
        let cu = dir.path().join(format!("{name}.cu"));
        std::fs::write(&cu, text).unwrap();
        [("-ptx", "ptx"), ("-cubin", "cubin")]
            .into_iter()
            .find_map(|(kind, ext)| {
                let out = Command::new(&nvcc)
                    .args(["-arch=sm_90", kind, "-Werror", "all-warnings", "-o"])
                    .arg(dir.path().join(format!("{name}.{ext}")))
                    .arg(&cu)
                    .output()
                    .unwrap();
                (!out.status.success()).then(|| {
                    format!(
                        "nvcc {kind} failed:\n{}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                })
            })
    };
    let Some(failure) = compile(&unit, "all") else {
        return;
    };
    for (n, (what, listing)) in sources.iter().enumerate() {
        if let Some(why) = compile(&listing.text, &format!("k{n}")) {
            panic!("{what}: {why}\n{}", listing.text);
        }
    }
    panic!("the kernels compile one by one but not together: {failure}");
}
