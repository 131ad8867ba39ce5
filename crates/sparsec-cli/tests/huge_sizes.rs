//! Dimensions past 32-bit indices and past memory (2^31, 2^32, 3e9, and 2^62 for the
//! kernels' workspaces), in every command that reads, builds, converts or computes: each
//! runs or ends with an error, never by a signal or a panic. The commands run with their
//! address space limited, so that large allocations fail here as they would on a machine
//! with less memory, whatever this one has.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{flat, text};

const SIZES: [u64; 3] = [1 << 31, 1 << 32, 3_000_000_000];
/// The address space each command may map: the C compiler fits, a dense array of any
/// of [`SIZES`] does not.
const ADDRESS_SPACE: u64 = 6 << 30;

/// Run sparsec under [`ADDRESS_SPACE`]; require an exit with a status, not a signal or a
/// panic; return whether it succeeded and its stderr.
fn run(args: &[&str]) -> (bool, String) {
    let cache = std::env::temp_dir().join("sparsec-cli-test-cache");
    let mut command = Command::new(env!("CARGO_BIN_EXE_sparsec"));
    command
        .args(args)
        .env("SPARSEC_CACHE_DIR", cache)
        .env("NO_COLOR", "1");
    let limit = libc::rlimit {
        rlim_cur: ADDRESS_SPACE,
        rlim_max: ADDRESS_SPACE,
    };
    // SAFETY: between fork and exec the closure only calls setrlimit, which is
    // async-signal-safe, on a value it owns.
    unsafe {
        command.pre_exec(move || match libc::setrlimit(libc::RLIMIT_AS, &limit) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
    let out = command.output().expect("the sparsec binary runs");
    let stderr = text(&out.stderr);
    assert!(
        out.status.code().is_some(),
        "sparsec {args:?} was killed by a signal: {stderr}"
    );
    assert!(
        out.status.code() != Some(101) && !stderr.contains("panicked"),
        "sparsec {args:?} panicked: {stderr}"
    );
    (out.status.success(), stderr)
}

fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn huge_dimensions_run_or_fail_cleanly_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = |ext: &str| dir.path().join(format!("out{ext}"));
    let spt = out(".spt");
    let spt = s(&spt);
    for n in SIZES {
        let matrix = write(
            dir.path(),
            &format!("m{n}.mtx"),
            &format!(
                "%%MatrixMarket matrix coordinate real general\n{n} {n} 2\n1 1 1.0\n{n} {n} 2.0\n"
            ),
        );
        let symmetric = write(
            dir.path(),
            &format!("sym{n}.mtx"),
            &format!(
                "%%MatrixMarket matrix coordinate real symmetric\n{n} {n} 2\n1 1 1.0\n{n} 1 2.0\n"
            ),
        );
        let tensor = write(
            dir.path(),
            &format!("t{n}.tns"),
            &format!("1 1 1 1.0\n{n} 2 3 2.0\n2 {n} 1 3.0\n"),
        );
        let vector = write(
            dir.path(),
            &format!("v{n}.tns"),
            &format!("1 1.0\n{n} 2.0\n"),
        );
        let (matrix, symmetric, tensor, vector) =
            (s(&matrix), s(&symmetric), s(&tensor), s(&vector));
        let a = format!("A:{matrix}");
        let x = format!("x:{vector}");
        let t = format!("T:{tensor}");
        let d = format!("i:{n}");
        let commands: Vec<Vec<&str>> = vec![
            vec!["info", matrix],
            vec!["convert", matrix, spt, "--format", "csr"],
            vec!["convert", matrix, spt, "--format", "sell:8"],
            vec!["convert", matrix, spt, "--format", "dense"],
            vec!["convert", matrix, spt, "--format", "dia"],
            vec!["convert", symmetric, spt, "--format", "dcsr"],
            vec!["convert", tensor, spt, "--format", "csf"],
            vec!["convert", tensor, spt, "--format", "dense"],
            vec![
                "run",
                "y(i) = A(i,j) * x(j)",
                "-i",
                &a,
                "-f",
                "A:csr",
                "-g",
                "x:dense",
            ],
            vec![
                "run",
                "y(i) = A(i,j) * x(j)",
                "-i",
                &a,
                "-f",
                "A:dcsr",
                "-g",
                "x:dense",
                "--check",
            ],
            vec![
                "run",
                "C(i,j) = A(i,k) * A(k,j)",
                "-i",
                &a,
                "-f",
                "A:dcsr",
                "-f",
                "C:dcsr",
                "--check",
            ],
            vec![
                "run",
                "C(i,j) = A(i,k) * A(k,j)",
                "-i",
                &a,
                "-f",
                "A:dcsr",
                "-f",
                "C:dcsr",
                "--backend",
                "jit",
            ],
            vec!["run", "a = x(i) * x(i)", "-i", &x, "-f", "x:sv", "--check"],
            vec![
                "run",
                "y(i) = T(i,j,k) * c(k)",
                "-i",
                &t,
                "-g",
                "c:dense",
                "--check",
            ],
            vec!["run", "a = x(i) * x(i)", "-g", "x:dense", "-d", &d],
            vec![
                "run",
                "a = x(i) * x(i)",
                "-f",
                "x:sv",
                "-g",
                "x:uniform:1e-12",
                "-d",
                &d,
                "--check",
            ],
            vec![
                "run",
                "y(i) = A(i,j) * x(j)",
                "-f",
                "A:dcsr",
                "-g",
                "A:powerlaw:1",
                "-g",
                "x:dense",
                "-d",
                &d,
                "-d",
                "j:4",
            ],
            vec![
                "spf",
                "run",
                concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/spf/spmv.spf"),
                "-i",
                &a,
                "-i",
                &x,
            ],
        ];
        for args in &commands {
            run(args);
        }
        // The kernel visits x's two entries; the reference would list `x(i) + c` at every
        // i, and says so instead of filling memory.
        let (ran, stderr) = run(&[
            "run",
            "Y(i) = x(i) * (x(i) + c)",
            "-f",
            "x:sv",
            "-f",
            "Y:sv",
            "-i",
            &x,
            "-g",
            "c:dense",
            "--check",
        ]);
        assert!(
            !ran && flat(&stderr).contains("reference evaluator would list"),
            "{stderr}"
        );
        // An output of 6n entries, more than memory holds: the kernel stops when its
        // entries no longer fit, on every backend and in a thread team.
        for backend in ["c", "jit"] {
            let args = [
                "run",
                "Y(i,j) = a * 2",
                "-f",
                "Y:db",
                "-g",
                "a:dense",
                "-d",
                &d,
                "-d",
                "j:6",
                "--threads",
                "2",
                "--backend",
                backend,
            ];
            let (ran, stderr) = run(&args);
            assert!(
                !ran && flat(&stderr).contains("ran out of memory"),
                "{args:?}: {stderr}"
            );
        }
        // What needs a dense array of `n` values says how many bytes it needs.
        for args in [
            vec!["convert", matrix, spt, "--format", "csr"],
            vec!["run", "a = x(i) * x(i)", "-g", "x:dense", "-d", &d],
        ] {
            let (ran, stderr) = run(&args);
            assert!(
                !ran && flat(&stderr).contains("bytes"),
                "{args:?}: {stderr}"
            );
        }
    }
}

/// A workspace of 2^62 values, one per thread inside a thread team, cannot be allocated:
/// the kernel cannot return from inside the team, so each thread skips its work and the
/// run ends with an error naming the workspace's bytes.
#[test]
fn a_workspace_that_cannot_be_allocated_inside_a_thread_team_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let n = 1u64 << 62;
    let a = write(
        dir.path(),
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n8 8 2\n1 1 1.0\n8 8 2.0\n",
    );
    let b = write(
        dir.path(),
        "b.mtx",
        &format!("%%MatrixMarket matrix coordinate real general\n8 {n} 2\n1 1 1.0\n8 {n} 2.0\n"),
    );
    for backend in ["c", "jit"] {
        let (ran, stderr) = run(&[
            "run",
            "C(i,j) = A(i,k) * B(k,j)",
            "-i",
            &format!("A:{}", s(&a)),
            "-i",
            &format!("B:{}", s(&b)),
            "-f",
            "A:dcsr",
            "-f",
            "B:dcsr",
            "-f",
            "C:dcsr",
            "--threads",
            "2",
            "--backend",
            backend,
            "-s",
            "split(i,i0,i1,4),parallelize(i0,CPUThread,NoRaces),parallelize(i1,CPUVector,NoRaces)",
        ]);
        let stderr = flat(&stderr);
        assert!(
            !ran && stderr.contains("ran out of memory") && stderr.contains("workspaces"),
            "{backend}: {stderr}"
        );
    }
}
