//! The `sparsec` command line: a thin dispatcher over the library's module per subcommand.

use clap::{Parser, Subcommand};
use sparsec_cli::{convert, emit, formats, info, run, specialise, spf, taco, tune};

/// Large blocks on cache lines, so that kernels load rows of dense operands in whole
/// vectors (see `sparsec::memory::LineAligned`).
#[global_allocator]
static ALLOCATOR: sparsec::memory::LineAligned = sparsec::memory::LineAligned;

/// sparsec: a sparse tensor algebra compiler.
#[derive(Parser)]
#[command(
    name = "sparsec",
    version,
    about = "sparsec: a sparse tensor algebra compiler",
    long_about = "sparsec: a sparse tensor algebra compiler.\n\n\
                  Reads MatrixMarket (.mtx), FROSTT (.tns) and sparsec binary (.spt) tensor \
                  files, stores tensors in any per-level format, and compiles index-notation \
                  kernels over them. Run `sparsec help SUBCOMMAND` for the options of each \
                  subcommand.",
    after_long_help = formats::FORMAT_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the shape and sparsity statistics of a tensor file.
    Info(info::InfoArgs),
    /// Convert a tensor file to another file type and/or storage format.
    Convert(convert::ConvertArgs),
    /// Compile and run a tensor index notation statement.
    Run(run::RunArgs),
    /// Print the C code generated for a tensor index notation statement.
    Emit(emit::EmitArgs),
    /// Sparse polyhedral computations (`.spf` files): print their code or run them.
    #[command(subcommand, after_help = spf::SPF_HELP)]
    Spf(spf::SpfCommand),
    /// Specialise a dense affine program (C loop nests) to the sparse structure of its
    /// inputs: print the regions of interest, the generated code, or run it.
    Specialise(specialise::SpecialiseArgs),
    /// Run a TACO command line unchanged: `sparsec taco "y(i) = A(i,j) * x(j)" -f=A:ds ...`.
    Taco(taco::TacoArgs),
    /// Choose the sparse operands' formats and the schedule together for given inputs.
    Tune(tune::TuneArgs),
}

fn main() -> miette::Result<()> {
    sparsec::memory::retain_freed_memory();
    let cli = Cli::parse();
    match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Emit(args) => emit::emit(&args),
        Command::Taco(args) => taco::taco(&args),
        Command::Tune(args) => tune::tune(&args),
        Command::Spf(cmd) => spf::spf(&cmd),
        Command::Specialise(args) => specialise::specialise(&args),
    }
}
