//! The `sparsec` command line: a thin dispatcher over the library's module per subcommand.

use clap::{CommandFactory, Parser, Subcommand};
use sparsec_cli::{convert, emit, formats, info, run, specialise, spf, taco, tune};

/// Large blocks on cache lines, so that kernels load rows of dense operands in whole
/// vectors (see `sparsec::memory::LineAligned`).
#[global_allocator]
static ALLOCATOR: sparsec::memory::LineAligned = sparsec::memory::LineAligned;

/// The version and the commit it was built from (`unknown` outside a git checkout).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SPARSEC_COMMIT"),
    ")"
);

/// What scripts may rely on.
const EXIT_STATUS: &str = "\
EXIT STATUS:
  0 on success; 1 when the inputs, the statement, the schedule or the environment (a
  compiler, a device, memory) do not allow the command, with a message that says which and
  why; 2 for a command line that does not parse; 101 for an internal error, which is a bug
  in sparsec. Color follows the terminal and NO_COLOR.";

/// sparsec: a sparse tensor algebra compiler.
#[derive(Parser)]
#[command(
    name = "sparsec",
    version = VERSION,
    about = "sparsec: a sparse tensor algebra compiler",
    long_about = "sparsec: a sparse tensor algebra compiler.\n\n\
                  Reads MatrixMarket (.mtx), FROSTT (.tns) and sparsec binary (.spt) tensor \
                  files, stores tensors in any per-level format, and compiles index-notation \
                  kernels over them. Run `sparsec help SUBCOMMAND` for the options of each \
                  subcommand.",
    after_long_help = format!(
        "{}\n\n{}\n\n{EXIT_STATUS}",
        formats::FILE_TYPES_HELP,
        formats::FORMAT_HELP
    ),
    after_help = EXIT_STATUS
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
    /// Print a shell completion script.
    #[command(after_help = "EXAMPLES:\n  \
        sparsec completions bash > ~/.local/share/bash-completion/completions/sparsec\n  \
        sparsec completions zsh > ~/.zfunc/_sparsec\n  \
        sparsec completions fish > ~/.config/fish/completions/sparsec.fish")]
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff).
    #[command(after_help = "EXAMPLES:\n  sparsec man > sparsec.1 && man ./sparsec.1")]
    Man,
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
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "sparsec", &mut script);
            print_all(&script)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(|e| miette::miette!("cannot render the manual page: {e}"))?;
            print_all(&page)
        }
    }
}

/// Write `bytes` to standard output; a reader that stops early (`| head`) is no error.
fn print_all(bytes: &[u8]) -> miette::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(miette::miette!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}
