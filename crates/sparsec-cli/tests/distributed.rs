//! `sparsec run --distributed` under `mpirun` at 1, 2 and 4 ranks (oversubscribed on a
//! small machine), each result checked by rank 0 against the single-process reference:
//! SpMV and SpMM on shared matrices (symmetric, unsymmetric, rectangular), a matrix with
//! fewer rows than ranks, and the failures that must end every rank with one message.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn shared_matrix(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/matrices")
        .join(name);
    assert!(path.exists(), "shared matrix {} is missing", path.display());
    path
}

/// `program` with `args` on `ranks` ranks.
fn mpirun_program(ranks: usize, program: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("mpirun");
    command
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &ranks.to_string(),
        ])
        .arg(program)
        .args(args)
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    command
}

/// `sparsec` with `args` on `ranks` ranks.
fn mpirun(ranks: usize, args: &[&str]) -> Command {
    mpirun_program(ranks, Path::new(env!("CARGO_BIN_EXE_sparsec")), args)
}

fn run(ranks: usize, args: &[&str]) -> Output {
    mpirun(ranks, args)
        .output()
        .expect("mpirun runs (openmpi-bin)")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn checked(ranks: usize, args: &[&str]) -> String {
    let output = run(ranks, args);
    let all = text(&output);
    assert!(output.status.success(), "{ranks} ranks {args:?}: {all}");
    assert!(all.contains("check: ok"), "{ranks} ranks {args:?}: {all}");
    all
}

#[test]
fn matrix_vector_products_at_every_rank_count_match_one_process() {
    for name in ["bcsstk13.mtx", "west0479.mtx", "lp_e226.mtx"] {
        let input = format!("A:{}", shared_matrix(name).display());
        for ranks in [1, 2, 4] {
            for format in ["csr", "dcsr"] {
                let out = checked(
                    ranks,
                    &[
                        "run",
                        "y(i) = A(i,j) * x(j)",
                        "-i",
                        &input,
                        "-f",
                        &format!("A:{format}"),
                        "-g",
                        "x:dense",
                        "--distributed",
                        "--check",
                    ],
                );
                assert!(
                    out.contains(&format!("distributed: {ranks} ranks")),
                    "{out}"
                );
            }
        }
    }
}

#[test]
fn matrix_products_and_schedules_inside_each_rank() {
    let input = format!("A:{}", shared_matrix("bcsstk13.mtx").display());
    for ranks in [2, 4] {
        checked(
            ranks,
            &[
                "run",
                "Y(i,k) = A(i,j) * X(j,k)",
                "-i",
                &input,
                "-g",
                "X:dense",
                "-d",
                "k:5",
                "--distributed",
                "--check",
            ],
        );
        checked(
            ranks,
            &[
                "run",
                "y(i) = A(i,j) * x(j)",
                "-i",
                &input,
                "-g",
                "x:dense",
                "-s",
                "split(i,i0,i1,16),parallelize(i0,CPUThread,NoRaces)",
                "--threads",
                "2",
                "--time",
                "3",
                "--distributed",
                "--check",
            ],
        );
    }
}

/// A 3x3 matrix over 4 ranks: one owns no rows (and reads no entries), yet takes part.
#[test]
fn ranks_that_own_no_rows_take_part() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.mtx");
    std::fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 2.0\n2 3 -1.5\n3 1 4.0\n3 3 1.0\n",
    )
    .unwrap();
    let input = format!("A:{}", path.display());
    let out = checked(
        4,
        &[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-i",
            &input,
            "-g",
            "x:dense",
            "--distributed",
            "--check",
        ],
    );
    assert!(out.contains("y: 3 d"), "{out}");
}

/// A malformed line read by one rank only: every rank ends, with that rank's message (the
/// line), within seconds.
#[test]
fn a_failure_on_one_rank_ends_every_rank_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.mtx");
    let mut body = String::from("%%MatrixMarket matrix coordinate real general\n400 400 400\n");
    for i in 1..=400 {
        if i == 350 {
            body.push_str("350 oops 1.0\n");
        } else {
            body.push_str(&format!("{i} {i} 1.0\n"));
        }
    }
    std::fs::write(&path, body).unwrap();
    let input = format!("A:{}", path.display());
    let started = Instant::now();
    let output = run(
        4,
        &[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-i",
            &input,
            "-g",
            "x:dense",
            "--distributed",
        ],
    );
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(all.contains("bad.mtx:352:"), "{all}");
    assert!(started.elapsed() < Duration::from_secs(60), "{all}");
    // A statement --distributed cannot split is refused on every rank alike.
    let output = run(
        2,
        &[
            "run",
            "y(j) = A(i,j) * x(i)",
            "-i",
            &input,
            "-g",
            "x:dense",
            "--distributed",
        ],
    );
    assert!(!output.status.success());
    assert!(
        text(&output).contains("splits `A`'s rows"),
        "{}",
        text(&output)
    );
}

/// One rank killed mid-run: `mpirun` ends the others and returns within seconds.
#[test]
fn a_killed_rank_ends_the_run() {
    let input = format!("A:{}", shared_matrix("bcsstk13.mtx").display());
    let mut child = mpirun(
        2,
        &[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-i",
            &input,
            "-g",
            "x:dense",
            "--time",
            "1000000",
            "--distributed",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let ranks = Command::new("pgrep")
        .args(["-P", &child.id().to_string()])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&ranks.stdout).to_string();
    let victim = pids
        .split_whitespace()
        .next()
        .expect("mpirun started its ranks");
    Command::new("kill").args(["-9", victim]).status().unwrap();
    let killed = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(!status.success());
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "mpirun still runs"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The conjugate-gradient example (`examples/distributed_cg.rs`), which CI builds before
/// these tests, at 1, 2 and 4 ranks: on a 2-D Laplacian (well conditioned) the residual
/// histories agree to rounding at every iteration; on a shared SPD matrix every run
/// converges, within a few percent of one process's iterations.
#[test]
fn conjugate_gradients_follow_the_single_process_residuals() {
    let example = PathBuf::from(env!("CARGO_BIN_EXE_sparsec"))
        .with_file_name("examples")
        .join("distributed_cg");
    assert!(
        example.exists(),
        "build the example first: cargo build -p sparsec-cli --features mpi --example \
         distributed_cg"
    );
    let dir = tempfile::tempdir().unwrap();
    let laplacian = dir.path().join("laplacian.mtx");
    let side = 30usize;
    let mut entries = Vec::new();
    for x in 0..side {
        for y in 0..side {
            let i = x * side + y + 1;
            entries.push(format!("{i} {i} 4"));
            if x + 1 < side {
                entries.push(format!("{} {i} -1", i + side));
            }
            if y + 1 < side {
                entries.push(format!("{} {i} -1", i + 1));
            }
        }
    }
    let n = side * side;
    std::fs::write(
        &laplacian,
        format!(
            "%%MatrixMarket matrix coordinate real symmetric\n{n} {n} {}\n{}\n",
            entries.len(),
            entries.join("\n")
        ),
    )
    .unwrap();
    let history = |ranks: usize, matrix: &Path| -> Vec<f64> {
        let output = mpirun_program(
            ranks,
            &example,
            &[matrix.to_str().unwrap(), "5000", "1e-10"],
        )
        .output()
        .unwrap();
        assert!(output.status.success(), "{}", text(&output));
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
            .collect()
    };
    let one = history(1, &laplacian);
    assert!(*one.last().unwrap() < 1e-10 && one.len() < 200, "{one:?}");
    for ranks in [2, 4] {
        let many = history(ranks, &laplacian);
        assert_eq!(many.len(), one.len(), "{ranks} ranks");
        for (k, (a, b)) in one.iter().zip(&many).enumerate() {
            assert!(
                (a - b).abs() <= 1e-6 * a.abs(),
                "{ranks} ranks, iteration {}: {a} {b}",
                k + 1
            );
        }
    }
    let shared = shared_matrix("494_bus.mtx");
    let one = history(1, &shared).len();
    for ranks in [2, 4] {
        let many = history(ranks, &shared);
        assert!(
            *many.last().unwrap() < 1e-10,
            "{ranks} ranks did not converge"
        );
        assert!(
            many.len().abs_diff(one) * 20 <= one,
            "{ranks} ranks: {} vs {one}",
            many.len()
        );
    }
}

/// The MPI chapter of the guide (`docs/distributed.md`): its `$ mpirun ... sparsec ...`
/// commands run as printed, with this build's `sparsec` first on the `PATH`, and print what
/// the page shows.
#[test]
fn the_guides_mpi_commands_print_what_the_guide_shows() {
    let mpirun = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("mpirun"))
                .find(|candidate| candidate.is_file())
        })
        .expect("mpirun is on the PATH (openmpi-bin)");
    let sparsec_dir = Path::new(env!("CARGO_BIN_EXE_sparsec"))
        .parent()
        .expect("the binary's directory");
    let path = std::env::join_paths(std::iter::once(sparsec_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let cache = std::env::temp_dir().join("sparsec-guide-mpi-test-cache");
    trycmd::TestCases::new()
        .register_bin("mpirun", mpirun)
        .env("PATH", path.to_string_lossy().into_owned())
        .env("NO_COLOR", "1")
        .env("SPARSEC_CACHE_DIR", cache.display().to_string())
        // As root in CI, and with more ranks than cores on a small machine.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .case("../../docs/distributed.md");
}
