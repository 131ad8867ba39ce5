//! The built `sparsec` binary: info, convert, help texts and error reporting.

mod common;
use common::{fails, flat, ok, shared_data, sparsec, text, write};

use std::path::Path;

use sparsec::format::Format;
use sparsec::io;
use sparsec::tensor::{Coo, Tensor, ValueType};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const SYMMETRIC: &str = "%%MatrixMarket matrix coordinate real symmetric\n\
                         % a comment\n\
                         4 4 4\n\
                         1 1 2.5\n\
                         3 1 -1\n\
                         4 2 7\n\
                         4 4 0\n";

#[test]
fn help_explains_subcommands_options_and_formats() {
    let top = ok(&["--help"]);
    for needle in [
        "info",
        "convert",
        "FORMATS (",
        "FILE TYPES",
        "bcsr:RxC",
        ".spt",
    ] {
        assert!(top.contains(needle), "--help lacks {needle}:\n{top}");
    }
    let convert = ok(&["convert", "--help"]);
    for needle in [
        "--format",
        "--value-type",
        "--array",
        "--dims",
        "bcsr:4x4",
        "sss:2,0,1",
        "ds:1,0",
        "EXAMPLES",
    ] {
        assert!(convert.contains(needle), "convert --help lacks {needle}");
    }
    let info = ok(&["info", "--help"]);
    assert!(info.contains("bandwidth") && info.contains("EXAMPLES"));
    assert!(info.contains("--repeat"), "long help documents --repeat");
    let short = ok(&["info", "-h"]);
    assert!(!short.contains("--repeat"), "short help hides --repeat");
}

/// Every subcommand's help has one layout, short (`-h`) and long (`--help`): clap's usage,
/// arguments and options, then the sections sparsec adds, `EXAMPLES` first, each an
/// upper-case heading at the margin that ends in `:`, its text indented below it.
#[test]
fn every_subcommands_help_has_one_layout() {
    let commands: [&[&str]; 15] = [
        &["info"],
        &["convert"],
        &["run"],
        &["emit"],
        &["tune"],
        &["tune", "collect"],
        &["tune", "train"],
        &["tune", "figure"],
        &["taco"],
        &["spf"],
        &["spf", "run"],
        &["spf", "emit"],
        &["specialise"],
        &["completions"],
        &["man"],
    ];
    for command in commands {
        for flag in ["-h", "--help"] {
            let help = ok(&[command, &[flag]].concat());
            let lines: Vec<&str> = help.lines().collect();
            let options = lines
                .iter()
                .position(|line| *line == "Options:")
                .unwrap_or_else(|| panic!("{command:?} {flag}: no options section:\n{help}"));
            let headings: Vec<&str> = lines[options + 1..]
                .iter()
                .filter(|line| !line.is_empty() && !line.starts_with(' '))
                .copied()
                .collect();
            assert!(
                headings.first().is_some_and(|h| h.starts_with("EXAMPLES")),
                "{command:?} {flag}: the first section is not EXAMPLES: {headings:?}"
            );
            for heading in headings {
                let name = heading.split(['(', ':']).next().unwrap_or(heading);
                assert!(
                    heading.ends_with(':') && name == name.to_uppercase(),
                    "{command:?} {flag}: `{heading}` is not a section heading"
                );
            }
        }
    }
}

#[test]
fn info_reports_matrix_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "sym.mtx", SYMMETRIC);
    let out = ok(&["info", s(&path)]);
    for needle in [
        "shape:            4 x 4",
        "symmetry:         symmetric",
        "field:            real",
        "stored entries:   4",
        "entries:          6 (after symmetric expansion)",
        "explicit zeros:   1",
        "entries per row:  min 1, mean 1.50, max 2",
        "empty rows:       0",
        "bandwidth:        2",
        "diagonals:        3",
    ] {
        assert!(out.contains(needle), "info lacks `{needle}`:\n{out}");
    }
}

#[test]
fn info_reports_per_mode_statistics_for_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.tns", "1 1 1 1.0\n2 1 3 2.0\n2 2 3 0\n");
    let out = ok(&["info", s(&path)]);
    assert!(out.contains("shape:            2 x 2 x 3"), "{out}");
    assert!(out.contains("per mode:"), "{out}");
    // mode 2: size 3, index 2 unused, slices hold 1 and 2 entries.
    let mode2 = out
        .lines()
        .find(|l| l.trim_start().starts_with("2 "))
        .unwrap();
    let fields: Vec<&str> = mode2.split_whitespace().collect();
    assert_eq!(fields, ["2", "3", "1", "0", "1.00", "2"], "{out}");
}

#[test]
fn info_repeat_reports_a_median_read_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "sym.mtx", SYMMETRIC);
    let out = ok(&["info", "--repeat", "3", s(&path)]);
    let line = out
        .lines()
        .find(|l| l.starts_with("read_median_seconds: "))
        .unwrap();
    let secs: f64 = line["read_median_seconds: ".len()..].parse().unwrap();
    assert!(secs > 0.0 && secs < 1.0);
}

/// Without the `mpi` feature, `--distributed` says how to get it.
#[cfg(not(feature = "mpi"))]
#[test]
fn distributed_runs_need_the_mpi_feature() {
    let matrix = shared_data("matrices/494_bus.mtx");
    let input = format!("A:{}", s(&matrix));
    let err = fails(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-i",
        &input,
        "-g",
        "x:dense",
        "--distributed",
    ]);
    assert!(err.contains("needs a sparsec built with MPI"), "{err}");
    assert!(err.contains("--features mpi"), "{err}");
}

#[test]
fn info_on_shared_data() {
    let dir = shared_data("");
    let out = ok(&["info", s(&dir.join("matrices/494_bus.mtx"))]);
    assert!(out.contains("stored entries:   1080"), "{out}");
    assert!(out.contains("entries:          1666"), "{out}");
    let out = ok(&["info", s(&dir.join("tensors/kg_jf17k_4ary.tns"))]);
    assert!(out.contains("order:            5"), "{out}");
}

#[test]
fn convert_through_every_format_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "sym.mtx", SYMMETRIC);
    let expected = {
        let mut c = io::read_matrix_market(&input).unwrap().coo;
        c.sort_and_sum();
        c
    };
    for format in [
        "csr", "csc", "coo", "dcsr", "dcsc", "csf", "ell", "dia", "bcsr:4x4", "bcsr:2x3", "ds:1,0",
        "dh", "dense", "uq",
    ] {
        let spt = dir.path().join("a.spt");
        let out = ok(&["convert", s(&input), s(&spt), "--format", format]);
        assert!(out.contains("wrote"), "{out}");
        let t = io::read_spt(&spt).unwrap();
        assert_eq!(
            t.format(),
            &Format::parse(format, 2).unwrap(),
            "{format}: .spt keeps the format"
        );
        assert_eq!(t.to_coo().max_difference(&expected), 0.0, "{format}");
        // Back to text without a format: the stored components.
        for ext in ["mtx", "tns"] {
            let back = dir.path().join(format!("back.{ext}"));
            ok(&["convert", s(&spt), s(&back)]);
            let coo = match io::read_any(&back).unwrap() {
                io::TensorFile::MatrixMarket(m) => m.coo,
                io::TensorFile::Frostt(c) => c,
                other => panic!("{other:?}"),
            };
            let mut coo = coo;
            coo.sort_and_sum();
            assert_eq!(coo.max_difference(&expected), 0.0, "{format} -> .{ext}");
        }
        // .spt input without --format keeps its format.
        let again = dir.path().join("again.spt");
        ok(&["convert", s(&spt), s(&again)]);
        assert!(io::read_spt(&again).unwrap() == t, "{format}");
    }
    // f32 values and the dense array layout.
    let spt = dir.path().join("f32.spt");
    ok(&["convert", s(&input), s(&spt), "--value-type", "f32"]);
    assert_eq!(io::read_spt(&spt).unwrap().value_type(), ValueType::F32);
    let dense = dir.path().join("dense.mtx");
    ok(&["convert", s(&input), s(&dense), "--array"]);
    let m = io::read_matrix_market(&dense).unwrap();
    assert_eq!(m.coo.len(), 16);
}

#[test]
fn convert_tensors_with_mode_orderings_and_dims() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "t.tns", "1 2 3 1.5\n2 1 1 -2\n2 2 3 4\n");
    for format in ["sss:2,0,1", "csf", "coo", "csf:1,0,2", "ucq", "sss"] {
        let spt = dir.path().join("t.spt");
        ok(&["convert", s(&input), s(&spt), "-f", format]);
        let t = io::read_spt(&spt).unwrap();
        let coo = io::read_tns(&input, None).unwrap();
        let reference =
            Tensor::from_coo(&coo, &Format::parse("csf", 3).unwrap(), ValueType::F64).unwrap();
        assert!(t.approx_eq(&reference, 0.0), "{format}");
    }
    let out = dir.path().join("big.tns");
    ok(&["convert", s(&input), s(&out), "--dims", "4,5,6"]);
    let spt = dir.path().join("big.spt");
    ok(&["convert", s(&out), s(&spt), "--dims", "4,5,6"]);
    assert_eq!(io::read_spt(&spt).unwrap().dims(), [4, 5, 6]);
    let coo = Coo::new(vec![2, 2, 3], vec![0, 1, 2], vec![1.0]).unwrap();
    assert_eq!(coo.order(), 3);
}

#[test]
fn bad_input_fails_with_a_readable_message() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 x 2\n",
    );
    for args in [
        vec!["info", s(&bad)],
        vec!["convert", s(&bad), "/tmp/never.spt"],
    ] {
        let err = fails(&args);
        assert!(err.contains("bad.mtx:4:"), "{err}");
        assert!(err.contains("column index `x`"), "{err}");
    }
    let good = write(dir.path(), "good.mtx", SYMMETRIC);
    let err = fails(&["convert", s(&good), "/tmp/x.spt", "--format", "bcsr:0x4"]);
    assert!(
        err.contains("bcsr:0x4") && err.contains("block sizes"),
        "{err}"
    );
    let err = fails(&["convert", s(&good), "/tmp/x.spt", "--format", "csf:0,0"]);
    assert!(err.contains("permutation"), "{err}");
    let err = fails(&["convert", s(&good), "/tmp/x.csv"]);
    assert!(err.contains("x.csv") && err.contains(".csv"), "{err}");
    let err = fails(&["info", "/nonexistent/missing.tns"]);
    assert!(err.contains("missing.tns"), "{err}");
    let tns = write(dir.path(), "t.tns", "1 1 1 1.0\n");
    let err = fails(&["convert", s(&tns), s(&dir.path().join("t.mtx"))]);
    assert!(err.contains("order 3"), "{err}");
    let err = fails(&[
        "convert",
        s(&good),
        s(&dir.path().join("x.spt")),
        "--dims",
        "4,4",
    ]);
    assert!(err.contains("--dims"), "{err}");
    let spt = write(dir.path(), "junk.spt", "not a tensor");
    let err = fails(&["info", s(&spt)]);
    assert!(err.contains("junk.spt") && err.contains("magic"), "{err}");
}

/// A matrix whose compressed format needs more memory than any machine has (a trillion
/// rows of offsets for two entries), or more than an address space, is a clear error naming
/// the bytes, not an aborted process; formats that store only the entries still convert.
#[test]
fn formats_too_large_for_memory_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (rows, what) in [
        ("1000000000000", "bytes of memory available"),
        ("4611686018427387904", "beyond the address space"),
    ] {
        let huge = write(
            dir.path(),
            "huge.mtx",
            &format!(
                "%%MatrixMarket matrix coordinate real general\n{rows} 3 2\n1 1 1.0\n{rows} 3 2.0\n"
            ),
        );
        let out = s(&dir.path().join("out.spt")).to_string();
        for format in ["csr", "bcsr:2x1"] {
            let err = fails(&["convert", s(&huge), &out, "--format", format]);
            // The report wraps its lines in a frame.
            let flat = flat(&err);
            assert!(
                flat.contains("cannot store") && flat.contains(what),
                "{format}: {err}"
            );
        }
        for format in ["coo", "dcsr"] {
            ok(&["convert", s(&huge), &out, "--format", format]);
        }
    }
}

/// Schedules with multibyte whitespace or characters fail with a diagnostic pointing into the
/// text, never a panic (the schedule fuzz target found one on U+0085).
#[test]
fn schedules_with_multibyte_characters_are_refused_cleanly() {
    for schedule in ["G\u{85}", "split(é", "split(i,\u{2028}", "\u{85}x"] {
        let stderr = fails(&[
            "emit",
            "y(i) = A(i,j) * x(j)",
            "-f",
            "A:csr",
            "-s",
            schedule,
        ]);
        assert!(
            stderr.contains("invalid schedule"),
            "{schedule:?}: {stderr}"
        );
    }
}

/// A format that pads (sliced ELL, ELL, BCSR, DIA) stores zeros that multiply an
/// infinite `x(0)` into NaN where the entries alone give numbers: `run` says so on
/// stderr, and stays quiet for formats without padding or finite inputs.
#[test]
fn run_warns_where_padding_zeros_meet_infinite_values() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.0\n1 2 2.0\n2 2 3.0\n3 3 4.0\n",
    );
    let with_inf = write(
        dir.path(),
        "x.mtx",
        "%%MatrixMarket matrix array real general\n3 1\ninf\n1.0\n2.0\n",
    );
    let finite = write(
        dir.path(),
        "f.mtx",
        "%%MatrixMarket matrix array real general\n3 1\n5.0\n1.0\n2.0\n",
    );
    let input = format!("A:{}", s(&a));
    let run = |format: &str, x: &Path| {
        let x = format!("x:{}", s(x));
        let a_format = format!("A:{format}");
        let out = sparsec(&[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-f",
            &a_format,
            "-i",
            &input,
            "-i",
            &x,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (text(&out.stdout), text(&out.stderr))
    };
    let (stdout, stderr) = run("csr", &with_inf);
    assert!(stdout.contains("y(1) = 3"), "{stdout}");
    assert!(!stderr.contains("padding"), "{stderr}");
    for format in ["sell:8", "ell", "bcsr:2x2", "dia"] {
        let (_, stderr) = run(format, &with_inf);
        assert!(
            stderr.contains("padding zeros multiply the infinite or NaN values of `x`"),
            "{format}: {stderr}"
        );
        let (stdout, stderr) = run(format, &finite);
        assert!(!stderr.contains("padding"), "{format}: {stderr}");
        assert!(stdout.contains("y(1) = 3"), "{format}: {stdout}");
    }
    // A quotient by a tensor is infinite where it stores nothing: dense columns below
    // sparse rows pad, CSR's do not (found by the statement fuzzer: NaN in the kernel
    // where the reference, which reads the entries alone, has a number).
    let quotient = |format: &str| {
        let a_format = format!("A:{format}");
        let out = sparsec(&[
            "run",
            "y(i) = A(i,j) / x(j)",
            "-f",
            &a_format,
            "-f",
            "x:s",
            "-i",
            &input,
            "-i",
            &format!("x:{}", s(&finite)),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let stderr = quotient("sd");
    assert!(
        stderr.contains("padding zeros multiply the infinite quotients by `x`"),
        "{stderr}"
    );
    assert!(!quotient("csr").contains("padding"));
}

/// An output that cannot be written is refused before anything is read or computed, and
/// the message says that it is the output: a directory that refuses new files (`/proc`,
/// whatever the permission bits say, even to root), or a directory given as the file.
#[test]
fn unwritable_outputs_are_refused_before_the_kernel_runs() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\n",
    );
    let spmv = |output: &str| {
        fails(&[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-i",
            &format!("A:{}", s(&a)),
            "-g",
            "x:dense",
            "-o",
            &format!("y:{output}"),
        ])
    };
    let stderr = spmv("/proc/y.mtx");
    assert!(
        stderr.contains("cannot write there") && !stderr.contains("kernel:"),
        "{stderr}"
    );
    let looks_like_a_file = dir.path().join("d.mtx");
    std::fs::create_dir(&looks_like_a_file).unwrap();
    let stderr = spmv(s(&looks_like_a_file));
    assert!(stderr.contains("is a directory"), "{stderr}");
    std::fs::remove_dir(&looks_like_a_file).unwrap();
    let stderr = fails(&["convert", s(&a), "/proc/a.spt"]);
    assert!(stderr.contains("the output /proc/a.spt"), "{stderr}");
    // A writable output is written, and nothing is left beside it.
    let out = dir.path().join("y.mtx");
    ok(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-i",
        &format!("A:{}", s(&a)),
        "-g",
        "x:dense",
        "-o",
        &format!("y:{}", s(&out)),
    ]);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.mtx", "y.mtx"]);
}

/// Schedule errors echo the transformation as the scheduling language spells it
/// (`CPUThread`, `GPUWarp`, `balanced`), not as Rust names its variants.
#[test]
fn schedule_errors_spell_units_as_the_schedule_does() {
    let stderr = fails(&[
        "emit",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-s",
        "parallelize(i,GPUWarp,NoRaces),parallelize(i,CPUThread,NoRaces)",
    ]);
    assert!(
        stderr.contains("parallelize(i,CPUThread,NoRaces,balanced,1)")
            && stderr.contains("already parallel on GPUWarp"),
        "{stderr}"
    );
    let stderr = fails(&[
        "emit",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-s",
        "parallelize(j,CPUThread,NoRaces)",
    ]);
    assert!(
        stderr.contains("parallelize(j,CPUThread,NoRaces)") && !stderr.contains("CpuThread"),
        "{stderr}"
    );
}

/// A statement lowering refuses says so once: the library's "cannot compile this
/// statement" is not wrapped in the command's own "cannot compile the statement".
#[test]
fn a_refused_statement_says_it_cannot_compile_once() {
    let stderr = fails(&[
        "emit",
        "A(i,j) = B(i,j) + C(i,j) + D(i,j)",
        "-f",
        "A:csr",
        "-f",
        "B:csr",
        "-f",
        "C:csr",
        "-f",
        "D:csr",
        "-s",
        "precompute(B(i,j)+C(i,j),j,j,ws)",
    ]);
    assert_eq!(stderr.matches("cannot compile").count(), 1, "{stderr}");
    let flat = flat(&stderr);
    assert!(
        flat.contains("a sparse output reads the workspace `ws` as a factor"),
        "{stderr}"
    );
}

/// Shell completions and the manual page come from the command's own definitions, and the
/// version names the commit.
#[test]
fn completions_manual_page_and_version() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = ok(&["completions", shell]);
        for word in ["sparsec", "convert", "tune", "schedule"] {
            assert!(script.contains(word), "{shell} completions lack `{word}`");
        }
    }
    let message = fails(&["completions", "tcsh"]);
    assert!(message.contains("invalid value 'tcsh'"), "{message}");
    let page = ok(&["man"]);
    assert!(page.contains(".TH sparsec 1"), "{page}");
    for word in ["completions", "specialise", "EXIT STATUS"] {
        assert!(page.contains(word), "the manual page lacks `{word}`");
    }
    let version = ok(&["--version"]);
    let version = version.trim();
    let commit = version
        .strip_prefix(&format!("sparsec {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{version}"));
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{version}"
    );
}

/// The documented exit statuses: 1 for what the command cannot do, 2 for a command line
/// that does not parse.
#[test]
fn exit_statuses_tell_usage_from_other_errors() {
    let status = |args: &[&str]| sparsec(args).status.code();
    assert_eq!(status(&["info", "/nonexistent/a.mtx"]), Some(1));
    assert_eq!(status(&["run", "y(i) = A(i,j) *"]), Some(1));
    assert_eq!(status(&["info", "--no-such-flag", "a.mtx"]), Some(2));
    assert_eq!(status(&["frobnicate"]), Some(2));
    assert_eq!(status(&["--help"]), Some(0));
    let help = ok(&["--help"]);
    assert!(help.contains("EXIT STATUS:\n  0 on success; 1"), "{help}");
}

/// A schedule is checked before the inputs are read or generated: its syntax before any
/// file is opened, its preconditions before a generator fills memory.
#[test]
fn schedules_are_checked_before_the_inputs_are_read() {
    let message = fails(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-i",
        "A:/nonexistent/a.mtx",
        "-g",
        "x:dense",
        "-s",
        "split(i,i0",
    ]);
    assert!(!message.contains("nonexistent"), "{message}");
    assert!(message.contains("split(i,i0"), "{message}");
    // Generating these inputs would need terabytes.
    let message = fails(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-d",
        "i:3000000000",
        "-d",
        "j:3000000000",
        "-g",
        "A:uniform:0.5",
        "-g",
        "x:dense",
        "-s",
        "split(q,q0,q1,4)",
    ]);
    assert!(
        message.contains("the variable exists") && !message.contains("bytes"),
        "{message}"
    );
}

/// Every level letter an unknown letter's message offers is explained in `--help`.
#[test]
fn the_level_letters_errors_offer_are_in_the_help() {
    let message = fails(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:zz",
        "-g",
        "A:dense",
        "-g",
        "x:dense",
    ]);
    let flat = flat(&message);
    let offered = flat
        .split_once("expected ")
        .and_then(|(_, rest)| rest.split_once(", or a named format"))
        .map(|(letters, _)| letters.to_string())
        .unwrap_or_else(|| panic!("{message}"));
    for help in [
        ok(&["--help"]),
        ok(&["run", "--help"]),
        ok(&["emit", "--help"]),
    ] {
        let section = help
            .split_once("Level letters")
            .and_then(|(_, rest)| rest.split_once("Examples"))
            .map(|(section, _)| section.to_string())
            .expect("the help has a level letter section");
        let mut letters = 0;
        for item in offered.split("), ") {
            let letter = item.chars().next().expect("a letter");
            assert!(
                section.contains(&format!(" {letter} ")),
                "`{letter}` is offered but not explained:\n{section}"
            );
            letters += 1;
        }
        assert!(letters >= 9, "{offered}");
    }
}

/// Each error class prints its code and points to its troubleshooting section.
#[test]
fn errors_carry_their_class_code_and_point_to_the_troubleshooting_page() {
    let spmv = [
        "run",
        "y(i) = A(i,j) * x(j)",
        "-g",
        "A:dense",
        "-g",
        "x:dense",
        "-d",
        "i:3",
        "-d",
        "j:3",
    ];
    for (args, class) in [
        (vec!["run", "y(i) = A(i,j) *"], "sparsec::notation"),
        (
            [&spmv[..], &["-s", "split(i"]].concat(),
            "sparsec::schedule::syntax",
        ),
        (
            [&spmv[..], &["-s", "split(q,a,b,2)"]].concat(),
            "sparsec::schedule",
        ),
        (
            [&spmv[..], &["-s", "parallelize(j,CPUThread,NoRaces)"]].concat(),
            "sparsec::lower",
        ),
        (vec!["info", "/nonexistent/a.mtx"], "sparsec::io"),
    ] {
        let message = fails(&args);
        let flat = flat(&message);
        assert!(
            flat.contains(&format!("Error: {class} "))
                && flat.contains(&format!("docs/troubleshooting.md, section `{class}`")),
            "{args:?}: {message}"
        );
    }
}

/// `--json` prints one object a script can read (`info`, `run --time --check`), and
/// `--quiet` prints nothing; the text report is unchanged without them.
#[test]
fn json_and_quiet_reports_for_scripts() {
    let karate = shared_data("matrices/karate.mtx");
    let info: serde_json::Value =
        serde_json::from_str(&ok(&["info", s(&karate), "--json"])).expect("one JSON object");
    assert_eq!(info["shape"], serde_json::json!([34, 34]));
    assert_eq!(info["entries"], 156);
    assert_eq!(info["entries_per_row"]["max"], 17);
    let text = ok(&["info", s(&karate)]);
    assert!(
        text.contains("entries per row:  min 1, mean 4.59, max 17"),
        "{text}"
    );
    let tensor = shared_data("tensors/london_transport.tns");
    let info: serde_json::Value =
        serde_json::from_str(&ok(&["info", s(&tensor), "--json"])).unwrap();
    assert_eq!(info["per_mode"][1]["empty"], 105);

    let spmv = [
        "run",
        "y(i) = A(i,j) * x(j)",
        "-g",
        "A:uniform:0.1",
        "-g",
        "x:dense",
        "-d",
        "i:60",
        "-d",
        "j:50",
    ];
    let run: serde_json::Value =
        serde_json::from_str(&ok(
            &[&spmv[..], &["--time", "3", "--check", "--json"]].concat()
        ))
        .expect("one JSON object");
    assert_eq!(run["timing"]["runs"], 3);
    let compute = &run["timing"]["compute"];
    assert!(
        compute["min_seconds"].as_f64().unwrap() <= compute["median_seconds"].as_f64().unwrap()
    );
    assert!(run["check"]["max_difference"].as_f64().unwrap() <= 1e-9);
    assert_eq!(run["output"]["dims"], serde_json::json!([60]));
    assert_eq!(run["kernel"]["loops"], serde_json::json!(["i", "j"]));
    assert_eq!(ok(&[&spmv[..], &["--quiet"]].concat()), "");
}
