//! `sparsec tune`: its last line is a `sparsec run` command that reproduces the choice,
//! `sparsec run --tuned` reuses the cached choice, `--json` is one JSON object, and
//! `sparsec tune collect` writes its dataset and resumes.

use std::path::Path;
use std::process::Command;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Run the binary with the tuning cache in `cache`; require success and return stdout.
fn ok<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(cache: &Path, args: &[S]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sparsec"))
        .args(args)
        .env("SPARSEC_TUNE_DIR", cache)
        .output()
        .expect("run sparsec");
    assert!(
        out.status.success(),
        "sparsec {args:?} failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Run the binary with the tuning cache in `cache`; require a failure whose message
/// contains `expected` (and no panic) and return stderr.
fn fails<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    cache: &Path,
    args: &[S],
    expected: &str,
) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sparsec"))
        .args(args)
        .env("SPARSEC_TUNE_DIR", cache)
        .output()
        .expect("run sparsec");
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "sparsec {args:?} succeeded");
    assert!(stderr.contains(expected), "sparsec {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// The value of the `key:` line of `sparsec tune`'s report.
fn field<'a>(report: &'a str, key: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` line in\n{report}"))
        .trim()
}

/// The loops `sparsec run` reports (`kernel: ... (loops i, j; 2 threads)`).
fn run_loops(output: &str) -> &str {
    let line = output
        .lines()
        .find(|l| l.starts_with("kernel:"))
        .unwrap_or_else(|| panic!("no kernel line in\n{output}"));
    let start = line.find("(loops ").expect("loops") + "(loops ".len();
    let end = start + line[start..].find(';').expect(";");
    &line[start..end]
}

/// A 40 x 40 matrix with a dense 8 x 8 block, a diagonal and a few scattered entries.
fn matrix_market() -> String {
    let mut entries = Vec::new();
    for i in 0..8 {
        for j in 0..8 {
            entries.push((i, j));
        }
    }
    for i in 8..40 {
        entries.push((i, i));
        entries.push((i, (i * 7) % 40));
    }
    entries.sort();
    entries.dedup();
    let mut s = format!(
        "%%MatrixMarket matrix coordinate real general\n40 40 {}\n",
        entries.len()
    );
    for (k, (i, j)) in entries.iter().enumerate() {
        s.push_str(&format!("{} {} {}\n", i + 1, j + 1, 1.0 + k as f64 / 8.0));
    }
    s
}

#[test]
fn last_line_reproduces_the_choice_and_run_tuned_reuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("tune cache");
    // A space in the path: the printed command must quote it.
    let matrix = dir.path().join("my matrix.mtx");
    std::fs::write(&matrix, matrix_market()).unwrap();
    let input = format!("A:{}", matrix.display());
    let expr = "y(i) = A(i,j) * x(j)";
    let args = [
        "tune",
        expr,
        "-f",
        "A:csr",
        "-i",
        &input,
        "-g",
        "x:dense",
        "--threads",
        "2",
        "--budget",
        "3",
        "--cap",
        "0.2",
    ];
    let report = ok(&cache, &args);
    let last = report.lines().last().expect("output");
    assert!(last.starts_with("sparsec run "), "{report}");
    let loops = field(&report, "loops:");

    // The last line, run by a shell, compiles the same loops and computes the right result.
    let binary = env!("CARGO_BIN_EXE_sparsec");
    let command = format!("'{binary}'{} --check", &last["sparsec".len()..]);
    let out = Command::new("sh")
        .args(["-c", &command])
        .output()
        .expect("run sh");
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{command}\n{stdout}{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("check: ok"), "{stdout}");
    assert_eq!(run_loops(&stdout), loops, "{command}\n{stdout}");

    // `--tuned` finds the cached choice for this structure without searching.
    let run = [
        "run",
        expr,
        "-f",
        "A:csr",
        "-i",
        &input,
        "-g",
        "x:dense",
        "--threads",
        "2",
        "--tuned",
        "--check",
    ];
    let stdout = ok(&cache, &run);
    assert!(stdout.contains("tuned: "), "{stdout}");
    assert!(stdout.contains("check: ok"), "{stdout}");
    assert_eq!(run_loops(&stdout), loops, "{stdout}");

    // Another structure (a generated matrix) has no cached choice: a clear error.
    fails(
        &cache,
        &[
            "run",
            expr,
            "-f",
            "A:csr",
            "-g",
            "A:uniform",
            "-g",
            "x:dense",
            "-d",
            "i:40",
            "-d",
            "j:40",
            "--threads",
            "2",
            "--tuned",
        ],
        "no tuned choice is cached",
    );
}

/// `--device opencl` searches formats and GPU mappings on the OpenCL device (PoCL in CI);
/// its choice is cached apart from the CPU's, and its last line runs it there.
#[test]
fn tuning_for_an_opencl_device_searches_gpu_mappings_kept_apart_from_the_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let matrix = dir.path().join("m.mtx");
    std::fs::write(&matrix, matrix_market()).unwrap();
    let input = format!("A:{}", matrix.display());
    let expr = "y(i) = A(i,j) * x(j)";
    let common = ["-f", "A:csr", "-i", &input, "-g", "x:dense"];
    let mut tune = vec!["tune", expr];
    tune.extend(common);
    tune.extend(["--device", "opencl", "--candidates", "6", "--cap", "0.2"]);
    if !cfg!(feature = "opencl") {
        fails(&cache, &tune, "`opencl` feature");
        return;
    }
    let report = ok(&cache, &tune);
    assert_eq!(field(&report, "threads:"), "1", "{report}");
    let last = report.lines().last().expect("output");
    assert!(last.contains("--device opencl"), "{report}");
    let binary = env!("CARGO_BIN_EXE_sparsec");
    let command = format!("'{binary}'{} --check", &last["sparsec".len()..]);
    let out = Command::new("sh").args(["-c", &command]).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("compiled by the OpenCL target"),
        "{command}\n{stdout}"
    );
    assert!(
        stdout.contains("check: ok"),
        "{command}\n{stdout}{}",
        text(&out.stderr)
    );

    let mut run = vec!["run", expr];
    run.extend(common);
    run.extend(["--tuned", "--check", "--threads", "1"]);
    fails(&cache, &run, "no tuned choice is cached");
    run.extend(["--device", "opencl"]);
    let stdout = ok(&cache, &run);
    assert!(
        stdout.contains("tuned: ") && stdout.contains("check: ok"),
        "{stdout}"
    );
}

#[test]
fn json_output_of_a_statement_with_two_sparse_operands_and_a_sparse_output() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = ok(
        dir.path(),
        &[
            "tune",
            "C(i,j) = A(i,k) * B(k,j)",
            "-f",
            "A:csr",
            "-f",
            "B:csr",
            "-f",
            "C:csr",
            "-g",
            "A:uniform:0.1",
            "-g",
            "B:uniform:0.1",
            "-d",
            "i:30",
            "-d",
            "k:20",
            "-d",
            "j:25",
            "--threads",
            "2",
            "--budget",
            "2",
            "--cap",
            "0.2",
            "--json",
        ],
    );
    let value: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let formats = value["formats"].as_object().expect("formats");
    // Every sparse tensor's format is chosen: both operands and the output.
    for name in ["A", "B", "C"] {
        assert!(formats.contains_key(name), "{value}");
    }
    assert!(value["speedup"].as_f64().expect("speedup") >= 1.0);
    let measured = value["measured"].as_u64().expect("measured");
    assert!(measured >= 1);
    // The points the search proposed after the default, each with every tuned format.
    let tried = value["tried"].as_array().expect("tried");
    assert_eq!(tried.len() as u64, measured - 1, "{value}");
    for point in tried {
        let formats = point["formats"].as_object().expect("a point's formats");
        assert_eq!(formats.len(), 3, "{point}");
        assert!(point["schedule"].is_string() && point["threads"].as_u64().is_some());
    }
    // The reference evaluation is part of the tuning time.
    let reference = value["reference_s"].as_f64().expect("reference_s");
    assert!(reference > 0.0 && reference <= value["tuning_s"].as_f64().expect("tuning_s"));
    assert_eq!(
        value["failures"].as_array().expect("failures").len(),
        0,
        "{value}"
    );
    assert!(value["command"]
        .as_str()
        .expect("command")
        .starts_with("sparsec run "));
}

/// `(input, sample, point)` of every record of a dataset file, sorted.
fn records(path: &Path) -> Vec<(String, u64, String)> {
    let mut out: Vec<(String, u64, String)> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            // Measured, or a format that cannot hold the input; never a failure.
            let status = v["status"].as_str().unwrap();
            assert!(["ok", "unfit", "timed_out"].contains(&status), "{v}");
            (
                v["input"].as_str().unwrap().to_string(),
                v["sample"].as_u64().unwrap(),
                v["point"].to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn collect_writes_json_lines_and_resumes_after_an_interruption() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("m.mtx");
    std::fs::write(&matrix, matrix_market()).unwrap();
    let out = dir.path().join("data.jsonl");
    let data = matrix.display().to_string();
    let target = out.display().to_string();
    let args = [
        "tune",
        "collect",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-g",
        "x:dense",
        "--data",
        &data,
        "--augment",
        "3",
        "--family",
        "banded:2@30",
        "--per-input",
        "2",
        "--out",
        &target,
        "--threads",
        "2",
        "--cap",
        "0.5",
        "--repeats",
        "1",
    ];
    ok(dir.path(), &args);
    let full = records(&out);
    // 4 inputs from the file (itself and 3 variants) and one family, 3 records each.
    assert_eq!(full.len(), 5 * 3);
    let inputs: std::collections::HashSet<&str> = full.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(inputs.len(), 5, "{inputs:?}");

    // Interrupted after four records and in the middle of the fifth: resuming measures
    // the rest, the same points, once each.
    let text = std::fs::read_to_string(&out).unwrap();
    let kept: Vec<&str> = text.lines().take(4).collect();
    std::fs::write(
        &out,
        format!("{}\n{{\"input\":\"m\",\"sam", kept.join("\n")),
    )
    .unwrap();
    ok(dir.path(), &args);
    assert_eq!(records(&out), full);
}

/// `--plot` writes a PNG spy plot (with the `plot` feature) or says how to get one.
#[test]
fn plot_writes_a_png_or_says_it_needs_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("spy.png");
    let args = [
        "tune",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-g",
        "A:banded:3",
        "-g",
        "x:dense",
        "-d",
        "i:300",
        "-d",
        "j:200",
        "--threads",
        "1",
        "--budget",
        "1",
        "--cap",
        "0.2",
        "--plot",
        png.to_str().unwrap(),
    ];
    if cfg!(feature = "plot") {
        ok(dir.path(), &args);
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, after the signature and the chunk header;
        // the longer side (300 rows) is drawn at one pixel per row.
        let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!((width, height), (200, 300));
    } else {
        fails(dir.path(), &args, "--features plot");
    }
}

/// `tune figure` draws the sorted speedups of a benchmark CSV (with the `plot` feature; CI
/// installs the font it needs), or says how to get it; a malformed CSV names its line.
#[test]
fn figure_draws_speedups_or_says_it_needs_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("speedups.csv");
    let png = dir.path().join("speedups.png");
    std::fs::write(
        &csv,
        "kernel,input,threads,baseline,speedup\n\
         spmv,a,1,default,1.3\nspmv,b,1,default,0.9\nspmv,a,1,mkl,1.1\nspmm,a,2,default,2\n",
    )
    .unwrap();
    let args = |csv: &'static str| {
        let path = dir.path().join(csv);
        let out = png.to_str().unwrap().to_string();
        ["tune", "figure", "--csv"]
            .map(String::from)
            .into_iter()
            .chain([path.to_str().unwrap().to_string(), "--out".into(), out])
            .collect::<Vec<String>>()
    };
    if cfg!(feature = "plot") {
        ok(dir.path(), &args("speedups.csv"));
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::write(
            dir.path().join("bad.csv"),
            "kernel,input,threads,baseline,speedup\nspmv,a,one,x,1\n",
        )
        .unwrap();
        let bad = args("bad.csv");
        fails(dir.path(), &bad, "line 2: `one` is not a thread count");
    } else {
        fails(dir.path(), &args("speedups.csv"), "--features plot");
    }
}

/// `tune train` trains on a collected dataset, holds inputs out by their original's name,
/// and writes a model that `--search model` uses; a dataset line that is not a record
/// names its line. Without the `learned` feature both say how to get it.
#[test]
fn train_writes_a_model_that_guides_the_search_or_says_it_needs_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("m.mtx");
    std::fs::write(&matrix, matrix_market()).unwrap();
    let dataset = dir.path().join("data.jsonl");
    let stem = dir.path().join("models").join("spmv");
    let (data, target, model) = (
        matrix.display().to_string(),
        dataset.display().to_string(),
        stem.display().to_string(),
    );
    let inputs = [
        "-f",
        "A:csr",
        "-g",
        "x:dense",
        "--data",
        &data,
        "--augment",
        "2",
        "--family",
        "banded:2@60",
        "--family",
        "uniform:0.2@50",
    ];
    let train: Vec<&str> = ["tune", "train", "y(i) = A(i,j) * x(j)"]
        .into_iter()
        .chain(inputs)
        .chain(["--dataset", &target, "--out", &model, "--epochs", "3"])
        .collect();
    let search = [
        "tune",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-i",
        &format!("A:{data}"),
        "-g",
        "x:dense",
        "--threads",
        "1",
        "--search",
        "model",
        "--model",
        &model,
        "--candidates",
        "3",
        "--cap",
        "0.2",
    ];
    if !cfg!(feature = "learned") {
        for args in [&train[..], &search[..]] {
            fails(dir.path(), args, "--features learned");
        }
        return;
    }
    let collect: Vec<&str> = ["tune", "collect", "y(i) = A(i,j) * x(j)"]
        .into_iter()
        .chain(inputs)
        .chain([
            "--per-input",
            "6",
            "--out",
            &target,
            "--threads",
            "1",
            "--cap",
            "0.2",
            "--repeats",
            "1",
        ])
        .collect();
    ok(dir.path(), &collect);
    let report = ok(dir.path(), &train);
    assert!(report.contains("training inputs"), "{report}");
    assert!(report.contains("held out:"), "{report}");
    for ext in ["json", "safetensors"] {
        assert!(stem.with_extension(ext).exists(), "no .{ext}");
    }
    let chosen = ok(dir.path(), &search);
    assert!(chosen.contains("(model search;"), "{chosen}");
    let measured: usize = field(&chosen, "searched ")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(measured <= 4, "{chosen}");
    assert!(chosen.lines().last().unwrap().starts_with("sparsec run"));

    // A malformed record is refused with its line.
    std::fs::write(
        &dataset,
        "{\"input\":\"m\",\"sample\":0,\"status\":\"ok\"}\n",
    )
    .unwrap();
    fails(dir.path(), &train, "data.jsonl:1");
}
