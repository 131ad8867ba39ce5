//! `sparsec-fuzz`: the differential statement fuzzer.
//!
//! Each case is a random well-formed statement (orders 0 to 5, repeated and transposed
//! operands, constants, `+=`), random formats for every tensor (every level letter, mode
//! orderings, named formats), random inputs (empty, explicit zeros, duplicates, skewed),
//! a random legal or illegal schedule, 1 or 2 threads and the C or JIT backend. It runs as
//! `sparsec run ... --check` in a child process with a time limit, so that a crash ends
//! the case and not the fuzzer, and is classified as correct, clear error, unsupported,
//! panic, signal, C compile error, timeout or wrong. Case `N` of seed `S` is always the same
//! statement: `sparsec-fuzz --seed S --case N` replays it.

mod case;
mod outcome;
mod report;
mod schedule_gen;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Parser;

use case::Case;
use outcome::{classify, Class, Outcome};
use report::{Keep, Tally};

/// Differential fuzzer of sparsec: random statements checked against the reference
/// evaluator, each run by the `sparsec` binary in a child process.
#[derive(Parser, Debug)]
#[command(name = "sparsec-fuzz", version)]
struct Args {
    /// Seed of the run: case N of a seed is always the same statement.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many statements.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Stop starting statements after this many seconds.
    #[arg(long, value_name = "S")]
    seconds: Option<u64>,
    /// Statements run at the same time.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Directory of the reports (failures.txt, unsupported.txt, clear-errors.txt, and
    /// outcomes.tsv with every case's class and message) and of the files of kept cases
    /// (cases/).
    #[arg(
        long,
        alias = "report",
        value_name = "DIR",
        default_value = "fuzz-reports"
    )]
    report_dir: PathBuf,
    /// Seconds a statement may run before it counts as a timeout.
    #[arg(long, value_name = "S", default_value_t = 60)]
    timeout: u64,
    /// The sparsec binary (default: `sparsec` beside this program).
    #[arg(long, value_name = "PATH")]
    sparsec: Option<PathBuf>,
    /// Run the cases whose schedule maps a loop to the GPU on the OpenCL backend (the
    /// sparsec binary must be built with the `opencl` feature): their results are checked
    /// against the reference instead of being refused by a CPU backend.
    #[arg(long)]
    opencl: bool,
    /// Run only case N, print its command and output, and keep its files.
    #[arg(long, value_name = "N")]
    case: Option<u64>,
    /// Run nothing: print case number and summary of the first `--count` cases, one per
    /// line (for grouping a run's reported cases by their features).
    #[arg(long, requires = "count")]
    describe: bool,
    /// Exit with status 0 even when bugs were found (panic, signal, C compile error,
    /// invalid IR, wrong).
    #[arg(long)]
    no_fail: bool,
    /// Cases of this seed that reproduce known bugs, which do not fail the run: one per line,
    /// `CASE  what bug`; `#` starts a comment.
    #[arg(long, value_name = "FILE")]
    known: Option<PathBuf>,
}

/// A finished case.
struct Finished {
    case: Case,
    outcome: Outcome,
    dir: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sparsec-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, String> {
    let sparsec = match &args.sparsec {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this program: {e}"))?
            .with_file_name("sparsec"),
    };
    let sparsec =
        std::path::absolute(&sparsec).map_err(|e| format!("{}: {e}", sparsec.display()))?;
    if !sparsec.is_file() {
        return Err(format!(
            "no sparsec binary at {} (build it with `cargo build -p sparsec-cli`, or pass --sparsec)",
            sparsec.display()
        ));
    }
    std::fs::create_dir_all(args.report_dir.join("cases"))
        .map_err(|e| format!("{}: {e}", args.report_dir.display()))?;
    let report_dir = std::path::absolute(&args.report_dir)
        .map_err(|e| format!("{}: {e}", args.report_dir.display()))?;
    let runner = Runner {
        sparsec,
        timeout: Duration::from_secs(args.timeout),
    };
    if let Some(index) = args.case {
        return replay(&runner, args, index, &report_dir);
    }
    if args.describe {
        for index in 0..args.count.unwrap_or(0) {
            println!("{index}\t{}", case(args, index).describe());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.count.is_none() && args.seconds.is_none() {
        return Err("give --count N, --seconds S, or both".into());
    }
    let work = std::env::temp_dir().join(format!("sparsec-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;

    let started = Instant::now();
    let deadline = args.seconds.map(|s| started + Duration::from_secs(s));
    let next = AtomicU64::new(0);
    let replay_command = format!(
        "{} --seed {} --report-dir {}",
        this_program(),
        args.seed,
        quote(&report_dir.display().to_string())
    );
    let known = match &args.known {
        Some(path) => read_known(path)?,
        None => BTreeMap::new(),
    };
    let mut tally = Tally::new(args.seed, known);
    let outcomes_path = report_dir.join("outcomes.tsv");
    let mut outcomes = std::fs::File::create(&outcomes_path)
        .map(std::io::BufWriter::new)
        .map_err(|e| format!("{}: {e}", outcomes_path.display()))?;
    let (send, receive) = mpsc::channel::<Finished>();
    std::thread::scope(|scope| -> Result<(), String> {
        for _ in 0..args.jobs.max(1) {
            let send = send.clone();
            let (runner, work, next) = (&runner, &work, &next);
            scope.spawn(move || loop {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if args.count.is_some_and(|n| index >= n) {
                    return;
                }
                let case = case(args, index);
                let dir = work.join(case_dir_name(args.seed, index));
                let outcome = runner.run(&case, &dir);
                if send.send(Finished { case, outcome, dir }).is_err() {
                    return;
                }
            });
        }
        drop(send);
        let mut last_write = Instant::now();
        for finished in receive {
            let kept = report_dir
                .join("cases")
                .join(case_dir_name(args.seed, finished.case.index));
            let command = shell_command(&runner.sparsec, &finished.case.run_args(&kept));
            writeln!(
                outcomes,
                "{}\t{}\t{}",
                finished.case.index,
                finished.outcome.class.name(),
                finished.outcome.message.replace(['\t', '\n'], " ")
            )
            .map_err(|e| format!("{}: {e}", outcomes_path.display()))?;
            let keep = tally.add(
                finished.case.index,
                &finished.outcome,
                &command,
                &finished.case.describe(),
            );
            if keep == Keep::Directory {
                move_dir(&finished.dir, &kept)?;
            } else {
                let _ = std::fs::remove_dir_all(&finished.dir);
            }
            if finished.outcome.class.is_bug() || finished.outcome.class == Class::Timeout {
                eprintln!(
                    "[{}] case {}: {}",
                    finished.outcome.class.name(),
                    finished.case.index,
                    command
                );
            }
            if last_write.elapsed() >= Duration::from_secs(30) {
                tally
                    .write(&report_dir, started.elapsed(), &replay_command)
                    .map_err(|e| format!("writing reports: {e}"))?;
                outcomes
                    .flush()
                    .map_err(|e| format!("{}: {e}", outcomes_path.display()))?;
                eprintln!(
                    "sparsec-fuzz: {} statements, {} bugs",
                    tally.total(),
                    tally.bugs()
                );
                last_write = Instant::now();
            }
        }
        Ok(())
    })?;
    let _ = std::fs::remove_dir_all(&work);
    tally
        .write(&report_dir, started.elapsed(), &replay_command)
        .map_err(|e| format!("writing reports: {e}"))?;
    print!("{}", tally.summary(started.elapsed()));
    println!("reports in {}", report_dir.display());
    Ok(if tally.bugs() > 0 && !args.no_fail {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The address space a case with a huge dimension may map: allocations past it fail as on
/// a machine with less memory, instead of filling this one; the C compiler it starts fits.
const HUGE_CASE_ADDRESS_SPACE: u64 = 6 << 30;

/// Run `command` with its address space limited to `bytes` (`RLIMIT_AS`).
fn limit_address_space(command: &mut Command, bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: between fork and exec the closure only calls setrlimit, which is
    // async-signal-safe, on a value it owns.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            match libc::setrlimit(libc::RLIMIT_AS, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
}

/// Read a `--known` file: `CASE  what bug` per line, `#` comments.
fn read_known(path: &Path) -> Result<BTreeMap<u64, String>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--known {}: {e}", path.display()))?;
    let mut known = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (case, bug) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let case: u64 = case.parse().map_err(|_| {
            format!(
                "--known {}:{}: `{case}` is not a case number",
                path.display(),
                n + 1
            )
        })?;
        known.insert(case, bug.trim().to_string());
    }
    Ok(known)
}

/// Case `index` of the run's seed. With `--opencl`, every third case gets a GPU mapping of
/// one of its variables (blocks and threads under one race strategy, which its drawn
/// schedule would rarely make legal), and every case whose schedule maps a loop to the
/// GPU runs on the OpenCL backend; without it, cases are as the seed draws them.
fn case(args: &Args, index: u64) -> Case {
    let mut case = Case::generate(args.seed, index);
    if !args.opencl {
        return case;
    }
    if index.is_multiple_of(3) && !case.vars.is_empty() {
        let var = &case.vars[(index / 3) as usize % case.vars.len()].name;
        let races = ["NoRaces", "Atomics", "Temporary", "ParallelReduction"];
        let race = races[(index / 3) as usize % races.len()];
        case.schedule = Some(format!(
            "split({var},gpu_b,gpu_t,8),parallelize(gpu_b,GPUBlock,{race}),\
             parallelize(gpu_t,GPUThread,{race})"
        ));
    }
    if case.schedule.as_ref().is_some_and(|s| s.contains("GPU")) {
        case.backend = case::BackendChoice::OpenCl;
        case.threads = 1;
    }
    case
}

/// Run case `index` alone, printing everything about it.
fn replay(runner: &Runner, args: &Args, index: u64, report_dir: &Path) -> Result<ExitCode, String> {
    let seed = args.seed;
    let case = case(args, index);
    let dir = report_dir.join("cases").join(case_dir_name(seed, index));
    let outcome = runner.run(&case, &dir);
    println!("case {index} of seed {seed}: {}", case.describe());
    println!("{}", shell_command(&runner.sparsec, &case.run_args(&dir)));
    for file in ["stdout.txt", "stderr.txt"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        println!("--- {file}\n{}", text.trim_end());
    }
    println!("--- class: {}", outcome.class.name());
    if !outcome.message.is_empty() {
        println!("{}", outcome.message);
    }
    Ok(if outcome.class.is_bug() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs cases with the sparsec binary.
struct Runner {
    sparsec: PathBuf,
    timeout: Duration,
}

impl Runner {
    /// Write the case's inputs into `dir`, run it there and classify the run. Its output
    /// stays in `dir` (`stdout.txt`, `stderr.txt`).
    fn run(&self, case: &Case, dir: &Path) -> Outcome {
        let harness_error = |what: String| Outcome {
            class: Class::ClearError,
            message: format!("sparsec-fuzz could not run the case: {what}"),
        };
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| case.write_inputs(dir)) {
            return harness_error(format!("writing inputs into {}: {e}", dir.display()));
        }
        let open = |name: &str| std::fs::File::create(dir.join(name));
        let (Ok(stdout), Ok(stderr)) = (open("stdout.txt"), open("stderr.txt")) else {
            return harness_error(format!("creating output files in {}", dir.display()));
        };
        let mut command = Command::new(&self.sparsec);
        command
            .args(case.run_args(dir))
            .env("NO_COLOR", "1")
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        // Its own process group, so that a timeout also ends the C compiler it started.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        if case.huge {
            limit_address_space(&mut command, HUGE_CASE_ADDRESS_SPACE);
        }
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => return harness_error(format!("starting {}: {e}", self.sparsec.display())),
        };
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < self.timeout => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(None) => {
                    kill_group(&child);
                    let _ = child.wait();
                    return Outcome {
                        class: Class::Timeout,
                        message: format!("no result after {} s", self.timeout.as_secs()),
                    };
                }
                Err(e) => return harness_error(format!("waiting for sparsec: {e}")),
            }
        };
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        classify(
            status,
            &read("stdout.txt"),
            &read("stderr.txt"),
            case.has_schedule(),
        )
    }
}

/// Send SIGKILL to the process group this fuzzer created for `child` (the case's sparsec
/// and any C compiler it started).
fn kill_group(child: &std::process::Child) {
    let Ok(group) = i32::try_from(child.id()) else {
        return;
    };
    // SAFETY: kill(2) takes no pointers; a negative pid names a process group, here the
    // one `process_group(0)` made for this child.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

fn case_dir_name(seed: u64, index: u64) -> String {
    format!("seed{seed}-case{index}")
}

/// Move a case's directory to where reports point, replacing an older copy.
fn move_dir(from: &Path, to: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(to);
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    // Another file system: copy the (flat, small) directory.
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries.flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name()))
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
    }
    let _ = std::fs::remove_dir_all(from);
    Ok(())
}

/// How this program was started, for replay commands.
fn this_program() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "sparsec-fuzz".into())
}

/// A command line a POSIX shell reads back as `program` and `args`.
fn shell_command(program: &Path, args: &[String]) -> String {
    let mut words = vec![quote(&program.display().to_string())];
    words.extend(args.iter().map(|a| quote(a)));
    words.join(" ")
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:,=+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
