//! A sweep of GPU schedules over statements, formats and race strategies, which the GPU
//! lowering tests and the GPU targets' tests share.

use sparsec::lower::{self, Lowered};
use sparsec::notation::cin::Statement;
use sparsec::schedule::{Concrete, Schedule};
use sparsec::tensor::{Coo, Tensor};

use super::{random_coo, rng, statement};

type Swept<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a [usize])]);

/// A paper schedule: name, statement, the sparse operand and the output with their
/// formats, the schedule.
pub type PaperSchedule = (
    &'static str,
    &'static str,
    (&'static str, &'static str),
    (&'static str, &'static str),
    &'static str,
);

/// A statement of the sparse-output sweep, its inputs' formats and their dimensions.
type SparseOutputCase = (
    &'static str,
    &'static [(&'static str, &'static str)],
    Vec<(&'static str, Vec<usize>)>,
);

/// One schedule of the sweep: what it is, in words; the statement and its inputs; and
/// its lowering, or why the schedule (`None`) or lowering refused it.
pub struct SweptSchedule {
    pub what: String,
    /// The schedule's text.
    pub schedule: String,
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
            let what = format!("{expr} with {format}");
            visit_each(&what, &stmt, &tensors, &concrete, schedules, &mut visit);
        }
    }
}

/// Call `visit` on each of `schedules` of `stmt` (described as `what`): applied to
/// `concrete` and lowered.
fn visit_each(
    what: &str,
    stmt: &Statement,
    tensors: &[Tensor],
    concrete: &Concrete,
    schedules: Vec<String>,
    visit: &mut impl FnMut(SweptSchedule),
) {
    for text in schedules {
        let lowered = Schedule::parse(&text)
            .unwrap()
            .apply(concrete)
            .ok()
            .map(|applied| lower::lower(&applied).map_err(|e| e.to_string()));
        visit(SweptSchedule {
            what: format!("{what}: {text}"),
            schedule: text,
            statement: stmt.clone(),
            tensors: tensors.to_vec(),
            lowered,
        });
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

/// A dot product reduced by threads and then by blocks, whose partial results the host
/// combines.
pub const DOT_SCHEDULE: &str = "split(i,i0,i1,32),parallelize(i0,GPUBlock,Temporary),\
                                parallelize(i1,GPUThread,ParallelReduction)";

/// The SpMV schedules of [`GPU_SCHEDULES`] that reduce a row on GPU threads: a warp's
/// lanes, and a block's threads.
pub const GPU_ROW_REDUCTIONS: [&str; 2] = [GPU_SCHEDULES[1].1, GPU_SCHEDULES[2].1];

/// Call `visit` on every schedule of the sparse-output sweep: element-wise products and
/// sums, SDDMM, SpGEMM, a tensor-times-vector and a matrix-vector product into a sparse
/// result, each output in every format of its order that sparsec assembles (rows placed
/// in two phases where a thread owns each row, else entries appended through an atomic
/// counter), under a block and thread split of the outermost loop, blocks and threads on
/// the two outer loops, and blocks, warps and threads, with and without atomics. The
/// inputs are `scale` times the sweep's usual dimensions, at `density`.
pub fn sparse_output_sweep(scale: usize, density: f64, mut visit: impl FnMut(SweptSchedule)) {
    let s = scale;
    let statements: [SparseOutputCase; 6] = [
        (
            "A(i,j) = B(i,j) * C(i,j)",
            &[("B", "csr"), ("C", "csr")],
            vec![("B", vec![12 * s, 10 * s]), ("C", vec![12 * s, 10 * s])],
        ),
        (
            "A(i,j) = B(i,j) + C(i,j)",
            &[("B", "csr"), ("C", "dcsr")],
            vec![("B", vec![12 * s, 10 * s]), ("C", vec![12 * s, 10 * s])],
        ),
        (
            "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
            &[("B", "csr")],
            vec![
                ("B", vec![12 * s, 10 * s]),
                ("C", vec![12 * s, 6]),
                ("D", vec![6, 10 * s]),
            ],
        ),
        (
            "A(i,k) = B(i,j) * C(j,k)",
            &[("B", "csr"), ("C", "csr")],
            vec![("B", vec![12 * s, 8 * s]), ("C", vec![8 * s, 10 * s])],
        ),
        (
            "A(i,j) = B(i,j,k) * c(k)",
            &[("B", "csf")],
            vec![("B", vec![6 * s, 5 * s, 4]), ("c", vec![4])],
        ),
        (
            "y(i) = B(i,j) * x(j)",
            &[("B", "csr")],
            vec![("B", vec![30 * s, 20 * s]), ("x", vec![20 * s])],
        ),
    ];
    for (expr, input_formats, dims) in statements {
        let order = if expr.starts_with('y') { 1 } else { 2 };
        let outputs: &[&str] = if order == 1 {
            &["s", "h"]
        } else {
            &["csr", "dcsr", "coo", "csc"]
        };
        let mut r = rng(13);
        let inputs: Vec<(&str, Coo)> = dims
            .iter()
            .map(|(name, d)| {
                let dense = ["c", "x", "C", "D"].contains(name) && !expr.contains("C(j,k)");
                (
                    *name,
                    random_coo(&mut r, d, if dense { 1.0 } else { density }),
                )
            })
            .collect();
        for output in outputs {
            let out = if order == 1 { "y" } else { "A" };
            let mut formats = input_formats.to_vec();
            formats.push((out, output));
            let (stmt, tensors) = statement(expr, &formats, &inputs, &[]);
            let concrete = Concrete::new(&stmt).unwrap();
            let loops: Vec<String> = concrete.loops().iter().map(|l| l.to_string()).collect();
            let mut schedules = Vec::new();
            for race in ["NoRaces", "Atomics"] {
                schedules.push(format!(
                    "split({0},gb,gt,8),parallelize(gb,GPUBlock,{race}),\
                     parallelize(gt,GPUThread,{race})",
                    loops[0]
                ));
                schedules.push(format!(
                    "parallelize({},GPUBlock,{race}),parallelize({},GPUThread,{race})",
                    loops[0], loops[1]
                ));
                schedules.push(format!(
                    "split({},gb,gw,4),parallelize(gb,GPUBlock,{race}),\
                     parallelize(gw,GPUWarp,{race}),parallelize({},GPUThread,{race})",
                    loops[0], loops[1]
                ));
            }
            let what = format!("{expr} into {output}");
            visit_each(&what, &stmt, &tensors, &concrete, schedules, &mut visit);
        }
    }
}

impl SweptSchedule {
    /// True when the schedule ignores races that are there: with `NoRaces` in place of
    /// `IgnoreRaces` it does not lower. Such a kernel's results may differ from run to run.
    pub fn ignores_real_races(&self) -> bool {
        self.schedule.contains("IgnoreRaces")
            && Schedule::parse(&self.schedule.replace("IgnoreRaces", "NoRaces"))
                .unwrap()
                .apply(&Concrete::new(&self.statement).unwrap())
                .map_or(true, |strict| lower::lower(&strict).is_err())
    }
}

/// The GPU schedules of the scheduling paper's appendix that sparsec runs, as the paper
/// gives them (`reorder` for TACO's `order`): a name, the statement, the sparse operand's
/// format, the output's format and the schedule.
pub const PAPER_GPU_SCHEDULES: [PaperSchedule; 6] = [
    (
        "A.9 SpMV, a thread per row",
        "y(i) = A(i,j) * x(j)",
        ("A", "csr"),
        ("y", "d"),
        "split(i,block,thread,512),parallelize(block,GPUBlock,NoRaces),\
         parallelize(thread,GPUThread,NoRaces)",
    ),
    (
        "A.10 SpMV, a warp per row",
        "y(i) = A(i,j) * x(j)",
        ("A", "csr"),
        ("y", "d"),
        "split(i,block,block_row,512),split(block_row,warp_row,warp,16),pos(j,jpos,A(i,j)),\
         split(jpos,thread_nz,thread,32),reorder(block,warp,warp_row,thread,thread_nz),\
         parallelize(block,GPUBlock,IgnoreRaces),parallelize(warp,GPUWarp,IgnoreRaces),\
         parallelize(thread,GPUThread,Temporary)",
    ),
    (
        "A.11 SpMV, 7 nonzeros a thread in a fused position space",
        "y(i) = A(i,j) * x(j)",
        ("A", "csr"),
        ("y", "d"),
        "fuse(i,j,f),pos(f,fpos,A(i,j)),split(fpos,block,fpos1,3584),\
         split(fpos1,warp,fpos2,224),split(fpos2,thread,thread_nz,7),\
         reorder(block,warp,thread,thread_nz),parallelize(block,GPUBlock,IgnoreRaces),\
         parallelize(warp,GPUWarp,IgnoreRaces),parallelize(thread,GPUThread,Atomics)",
    ),
    (
        "A.2 SpMV, A.11 with each thread's 7 products gathered in registers first",
        "y(i) = A(i,j) * x(j)",
        ("A", "csr"),
        ("y", "d"),
        "fuse(i,j,f),pos(f,fpos,A(i,j)),split(fpos,block,fpos1,3584),\
         split(fpos1,warp,fpos2,224),split(fpos2,thread,thread_nz,7),\
         reorder(block,warp,thread,thread_nz),\
         precompute(A(i,j)*x(j),thread_nz,thread_nz_pre,precomputed),\
         unroll(thread_nz_pre,7),parallelize(block,GPUBlock,IgnoreRaces),\
         parallelize(warp,GPUWarp,IgnoreRaces),parallelize(thread,GPUThread,Atomics)",
    ),
    (
        "A.4 SpMM, 16 nonzeros a warp, a lane per column, column-major output",
        "C(i,k) = A(i,j) * B(j,k)",
        ("A", "csr"),
        ("C", "dd:1,0"),
        "reorder(i,j,k),fuse(i,j,f),pos(f,fpos,A(i,j)),split(fpos,block,fpos1,256),\
         split(fpos1,warp,nnz,16),split(k,dense_val_unbounded,thread,32),\
         bound(dense_val_unbounded,dense_val,4,MaxExact),\
         reorder(block,warp,dense_val,thread,nnz),parallelize(block,GPUBlock,IgnoreRaces),\
         parallelize(warp,GPUWarp,IgnoreRaces),parallelize(thread,GPUThread,Atomics)",
    ),
    (
        "A.8 MTTKRP, 4 nonzeros a warp, a lane per column",
        "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
        ("B", "csf"),
        ("A", "dd"),
        "reorder(i,k,l,j),fuse(k,l,kl),fuse(i,kl,f),pos(f,fpos,B(i,k,l)),\
         split(fpos,block,fpos1,64),split(fpos1,warp,nnz,4),\
         split(j,dense_val_unbounded,thread,32),\
         bound(dense_val_unbounded,dense_val,1,MaxExact),\
         reorder(block,warp,dense_val,thread,nnz),parallelize(block,GPUBlock,IgnoreRaces),\
         parallelize(warp,GPUWarp,IgnoreRaces),parallelize(thread,GPUThread,Atomics)",
    ),
];
