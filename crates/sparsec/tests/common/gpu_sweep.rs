//! A sweep of GPU schedules over statements, formats and race strategies, which the GPU
//! lowering tests and the GPU targets' tests share.

use sparsec::lower::{self, Lowered};
use sparsec::notation::cin::Statement;
use sparsec::schedule::{Concrete, Schedule};
use sparsec::tensor::{Coo, Tensor};

use super::{random_coo, rng, statement};

type Swept<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a [usize])]);

/// One schedule of the sweep: what it is, in words; the statement and its inputs; and
/// its lowering, or why the schedule (`None`) or lowering refused it.
pub struct SweptSchedule {
    pub what: String,
    pub statement: Statement,
    pub tensors: Vec<Tensor>,
    pub lowered: Option<Result<Lowered, String>>,
}

/// Call `visit` on every schedule of the sweep: SpMV, SpMM, SDDMM, a tensor-times-vector
/// and a dot product, in every format of their sparse operand's order, with a block and
/// thread split of the outermost loop, blocks and threads on the two outer loops, and
/// blocks, warps and threads, each under every race strategy.
pub fn gpu_schedule_sweep(mut visit: impl FnMut(SweptSchedule)) {
    let statements: [Swept; 5] = [
        (
            "y(i) = A(i,j) * x(j)",
            &["A"],
            &[("A", &[30, 20]), ("x", &[20])],
        ),
        (
            "C(i,k) = A(i,j) * B(j,k)",
            &["A"],
            &[("A", &[30, 20]), ("B", &[20, 8])],
        ),
        (
            "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
            &["B"],
            &[("B", &[12, 10]), ("C", &[12, 6]), ("D", &[6, 10])],
        ),
        (
            "y(i) = B(i,j,k) * c(k)",
            &["B"],
            &[("B", &[6, 5, 4]), ("c", &[4])],
        ),
        ("a = x(i) * y(i)", &["x"], &[("x", &[40]), ("y", &[40])]),
    ];
    let formats = [
        "csr", "csc", "coo", "dcsr", "ell", "sell:4", "dia", "bcsr:2x2", "hash", "csf", "sss", "s",
    ];
    for (expr, sparse, dims) in statements {
        for format in formats {
            let mut r = rng(11);
            let inputs: Vec<(&str, Coo)> = dims
                .iter()
                .map(|(name, d)| (*name, random_coo(&mut r, d, 0.3)))
                .collect();
            // Formats of another order than the sparse tensor's are not for it.
            if sparsec::format::Format::parse(format, dims[0].1.len()).is_err() {
                continue;
            }
            let formats: Vec<(&str, &str)> = sparse.iter().map(|t| (*t, format)).collect();
            let (stmt, tensors) = statement(expr, &formats, &inputs, &[]);
            let concrete = Concrete::new(&stmt).unwrap();
            let loops: Vec<String> = concrete.loops().iter().map(|l| l.to_string()).collect();
            let mut schedules = Vec::new();
            for race in [
                "NoRaces",
                "Atomics",
                "Temporary",
                "ParallelReduction",
                "IgnoreRaces",
            ] {
                schedules.push(format!(
                    "split({0},gb,gt,8),parallelize(gb,GPUBlock,{race}),\
                     parallelize(gt,GPUThread,{race})",
                    loops[0]
                ));
                if let Some(inner) = loops.get(1) {
                    schedules.push(format!(
                        "parallelize({},GPUBlock,{race}),parallelize({inner},GPUThread,{race})",
                        loops[0]
                    ));
                    schedules.push(format!(
                        "split({},gb,gw,4),parallelize(gb,GPUBlock,{race}),\
                         parallelize(gw,GPUWarp,{race}),parallelize({inner},GPUThread,{race})",
                        loops[0]
                    ));
                }
            }
            for text in schedules {
                let what = format!("{expr} with {format}: {text}");
                let lowered = Schedule::parse(&text)
                    .unwrap()
                    .apply(&concrete)
                    .ok()
                    .map(|applied| lower::lower(&applied).map_err(|e| e.to_string()));
                visit(SweptSchedule {
                    what,
                    statement: stmt.clone(),
                    tensors: tensors.clone(),
                    lowered,
                });
            }
        }
    }
}

/// GPU schedules of SpMV and SpMM that lower, which the outlining tests and the GPU
/// targets' tests check: a row per thread, a row per warp with its lanes summing the
/// row, a row per block, SpMM's rows with their columns on threads, SpMM's workspace in a
/// block's shared memory, and a host loop launching a kernel per column.
pub const GPU_SCHEDULES: [(&str, &str); 6] = [
    (
        "y(i) = A(i,j) * x(j)",
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces)",
    ),
    (
        "y(i) = A(i,j) * x(j)",
        "split(i,i0,i1,32),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUWarp,NoRaces),\
         parallelize(j,GPUThread,ParallelReduction)",
    ),
    (
        "y(i) = A(i,j) * x(j)",
        "parallelize(i,GPUBlock,NoRaces),parallelize(j,GPUThread,ParallelReduction)",
    ),
    (
        "C(i,k) = A(i,j) * B(j,k)",
        "split(i,i0,i1,4),split(k,k0,k1,32),reorder(i0,i1,k0,k1,j),\
         parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces),\
         parallelize(k1,GPUThread,NoRaces)",
    ),
    (
        "C(i,k) = A(i,j) * B(j,k)",
        "split(i,i0,i1,4),precompute(A(i,j)*B(j,k),k,k,w),\
         parallelize(i0,GPUBlock,NoRaces),parallelize(k,GPUThread,NoRaces)",
    ),
    (
        "C(i,k) = A(i,j) * B(j,k)",
        "split(i,i0,i1,32),reorder(k,i0,i1,j),parallelize(i0,GPUBlock,NoRaces),\
         parallelize(i1,GPUThread,NoRaces)",
    ),
];
