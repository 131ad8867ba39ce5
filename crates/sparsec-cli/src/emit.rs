//! `sparsec emit`: print the C code generated for an expression.

use miette::{Report, Result};
use sparsec::codegen::c;
use sparsec::format::LevelCoord;
use sparsec::ir::{OutputMode, ParamRef, ScalarArg};
use sparsec::lower::Lowered;
use sparsec::notation::cin::Statement;
use sparsec::target::Target;

use crate::formats::FORMAT_HELP;
use crate::spec::{Problem, StatementArgs};

const EMIT_HELP: &str = "\
EXAMPLES:
  # The whole C translation unit of CSR SpMV:
  sparsec emit \"y(i) = A(i,j) * x(j)\" -f A:ds

  # The loops of CSR SpMV as the schedule makes them, without the SIMD versions:
  sparsec emit \"y(i) = A(i,j) * x(j)\" -f A:ds --plain --compute

  # Only the kernel function of SpGEMM with a CSR output:
  sparsec emit \"C(i,j) = A(i,k) * B(k,j)\" -f A:csr -f B:csr -f C:csr --compute

  # How a sparse output is assembled:
  sparsec emit \"C(i,j) = A(i,j) + B(i,j)\" -f A:csr -f B:csr -f C:csr --assembly

  # The loops alone, as sparsec's IR, to see what a schedule does:
  sparsec emit \"y(i) = A(i,j) * x(j)\" -f A:csr --target ir -s \"split(i,i0,i1,8)\"

  # The CUDA kernels of a GPU schedule (a row per warp, its entries on the lanes):
  sparsec emit \"y(i) = A(i,j) * x(j)\" -f A:csr --target cuda --compute \\
      -s \"split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUWarp,NoRaces),parallelize(j,GPUThread,ParallelReduction)\"

SIZES:
  Index-variable sizes are read at run time, so the code does not depend on them: sizes
  come from -d VAR:SIZE or -i files when given, and any size otherwise.
";

/// Print the C code generated for a tensor index notation statement.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = format!("{EMIT_HELP}\n{FORMAT_HELP}"))]
pub struct EmitArgs {
    #[command(flatten)]
    pub statement: StatementArgs,
    /// Print how the output is assembled (its levels) and the runtime prelude.
    #[arg(long, conflicts_with = "compute")]
    pub assembly: bool,
    /// Print only the kernel function (which computes and emits the output).
    #[arg(long)]
    pub compute: bool,
    /// Print the loops as the schedule makes them, without the C target's vectorising and
    /// prefetching passes (the kernel `run` compiles has them: versions of gathered sums
    /// for SIMD units, chosen at run time, and prefetches).
    #[arg(long)]
    pub plain: bool,
    /// The language to print: C (the C target's), a GPU schedule's device kernels as
    /// OpenCL C or CUDA C, or sparsec's IR (the loops as the schedule makes them).
    #[arg(long, value_enum, default_value_t = EmitTarget::C)]
    pub target: EmitTarget,
}

/// `emit --target`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitTarget {
    /// C with OpenMP.
    C,
    /// OpenCL C kernels of a GPU schedule.
    Opencl,
    /// CUDA C kernels of a GPU schedule.
    Cuda,
    /// sparsec's IR as the schedule lowers it, before any target's passes: the loops
    /// alone, in C-like pseudocode, each with its parallel unit and reductions.
    Ir,
}

/// Placeholder size of index variables that nothing sizes (the code reads sizes at run
/// time, so any value gives the same code).
const PLACEHOLDER_SIZE: usize = 1000;

/// The whole C translation unit generated for a statement (what `emit` prints by default).
pub fn source(args: &StatementArgs) -> Result<String> {
    Ok(generate(args, false)?.2.source)
}

/// The statement bound to its tensors, with `PLACEHOLDER_SIZE` for unsized variables.
fn bind(args: &StatementArgs) -> Result<Statement> {
    Problem::new(&args.expr, &args.spec, &[])?.bind_with_default_size(PLACEHOLDER_SIZE)
}

/// The bound statement, its lowering and the C code generated for it: what a kernel
/// compiled with the C target runs (the function after the target's passes), or with
/// `plain` after only the pass every CPU target runs (each thread zeroes its rows).
fn generate(args: &StatementArgs, plain: bool) -> Result<(Statement, Lowered, c::CKernel)> {
    let statement = bind(args)?;
    let mut lowered = args.schedule.lower(&statement)?;
    let prepared = if plain {
        (sparsec::target::ZERO_ROWS.run)(&mut lowered.function);
        Ok(())
    } else {
        let c_target = sparsec::kernel::Backend::C.targets(&Default::default());
        c_target.prepare(&mut lowered.function)
    };
    let generated = prepared
        .and_then(|()| c::emit(&lowered.function))
        .map_err(|e| Report::new(sparsec::Error::from(e)))?;
    Ok((statement, lowered, generated))
}

/// Print the device kernels of a GPU schedule as `target` spells them.
fn emit_gpu(args: &EmitArgs, target: &dyn Target) -> Result<()> {
    if args.assembly {
        return Err(miette::miette!(
            "--assembly describes the C target's output assembly; GPU targets write dense \
             outputs in place"
        ));
    }
    let statement = bind(&args.statement)?;
    let lowered = args
        .statement
        .schedule
        .lower_for(&statement, target, None)?;
    let listing = target
        .listing(&lowered.function)
        .map_err(Report::new)?
        .expect("GPU targets print their kernels");
    if args.compute {
        crate::out!("{}", listing.kernel());
    } else {
        crate::out!("{}", listing.text);
    }
    Ok(())
}

/// Print the IR the schedule lowers to (`--target ir`).
fn emit_ir(args: &EmitArgs) -> Result<()> {
    if args.assembly || args.plain {
        return Err(miette::miette!(
            "--target ir prints the loops before any target's passes; --assembly and \
             --plain describe the C target's code"
        ));
    }
    let statement = bind(&args.statement)?;
    let lowered = args.statement.schedule.lower(&statement)?;
    crate::out!("{}", lowered.function);
    Ok(())
}

/// Run the `emit` subcommand.
pub fn emit(args: &EmitArgs) -> Result<()> {
    match args.target {
        EmitTarget::C => {}
        EmitTarget::Opencl => return emit_gpu(args, &sparsec::codegen::opencl::OpenClTarget),
        EmitTarget::Cuda => return emit_gpu(args, &sparsec::codegen::cuda::CudaTarget),
        EmitTarget::Ir => return emit_ir(args),
    }
    let (statement, lowered, generated) = generate(&args.statement, args.plain)?;
    let (prelude, kernel) = generated.source.split_at(generated.body_offset);
    if args.compute {
        crate::out!("{kernel}");
    } else if args.assembly {
        let out = &statement.tensors[0];
        crate::outln!("/* Assembly of `{}` (format {}).", out.name, out.format);
        crate::outln!(" *");
        crate::outln!(" * Levels of the output, outermost first:");
        for (k, level) in out.format.levels().iter().enumerate() {
            let what = match level.coord {
                LevelCoord::Mode(m) => format!("mode {m}"),
                LevelCoord::BlockOuter { mode, block } => format!("mode {mode} / {block}"),
                LevelCoord::BlockInner { mode, block } => format!("mode {mode} % {block}"),
                LevelCoord::EllSlot => "ELL slot".to_string(),
                LevelCoord::Diagonal => "diagonal".to_string(),
            };
            crate::outln!(
                " *   level {}: {} ({}) over {what}",
                k + 1,
                level.format.name(),
                level.format.spelling()
            );
        }
        crate::outln!(" *");
        match lowered.function.output {
            OutputMode::Dense {
                accumulate,
                zeroed_by_kernel,
            } => {
                crate::outln!(" * The output is dense: the kernel stores each value in place");
                crate::outln!(
                    " * ({}), so there is no separate assembly phase.",
                    match (accumulate, zeroed_by_kernel) {
                        (true, true) => "accumulating with += into rows it zeroes first",
                        (true, false) => "accumulating with +=",
                        _ => "one store per component",
                    }
                );
            }
            OutputMode::Emit { .. } => {
                crate::outln!(
                    " * The output is sparse. Kernels compute and assemble in one function:"
                );
                crate::outln!(
                    " * `{}` appends every result entry (its coordinates and value)",
                    c::ENTRY
                );
                crate::outln!(
                    " * to a growable buffer (the struct in the prelude below, released by"
                );
                crate::outln!(
                    " * the runtime's `sparsec_buffer_free`). The runtime then sorts the entries,"
                );
                crate::outln!(" * sums duplicates");
                crate::outln!(
                    " * and packs them into the levels above (sparsec::tensor::Tensor::from_coo);"
                );
                crate::outln!(" * `sparsec run --time` reports that step as `assembly`.");
            }
            OutputMode::Rows { bounds } => {
                crate::outln!(
                    " * The output is sparse and placed row by row, in two calls of `{}`:",
                    c::ENTRY
                );
                crate::outln!(
                    " * with `phase` 0 it counts the entries of each row into the leaf's `pos`;"
                );
                crate::outln!(
                    " * the runtime turns the counts into row starts and allocates the leaf's"
                );
                crate::outln!(
                    " * `idx` and the values once; with `phase` 1 each entry takes its row's next"
                );
                crate::outln!(
                    " * slot. Levels above the leaf are built from the rows that hold entries."
                );
                if bounds {
                    for line in [
                        " * But first, with `phase` 3, it bounds each row's entries by its",
                        " * workspace updates. On one thread, `phase` 2 then appends every entry",
                        " * in one call, in room for the bounds' sum (`capacity`); on threads,",
                        " * `phase` 1 places each row from the start of its bounded room and the",
                        " * runtime packs the rows. Only bounds too large to reserve are counted.",
                    ] {
                        crate::outln!("{line}");
                    }
                } else if lowered
                    .function
                    .signature()
                    .scalars
                    .contains(&ScalarArg::Param(ParamRef::Capacity))
                {
                    crate::outln!(
                        " * On one thread, `phase` 2 instead appends every entry in one call, in"
                    );
                    crate::outln!(
                        " * room for as many entries as the inputs store (`capacity`), when the"
                    );
                    crate::outln!(
                        " * rows come in order and fit; else the runtime counts and places."
                    );
                }
            }
        }
        crate::outln!(" */");
        crate::outln!();
        crate::out!("{prelude}");
    } else {
        crate::out!("{}", generated.source);
    }
    Ok(())
}
