//! Compilation latency: the first call of a kernel (gcc runs, the library is written to the
//! on-disk cache) versus cached calls (no compiler).
//!
//! ```text
//! cargo run --release -p sparsec --example bench_jit -- --runs 5
//! ```
//!
//! What one measurement times is `Kernel::from_statement` (lowering, C emission, the cache
//! key, cache lookup or gcc, `dlopen`, symbol lookup), with a `Toolchain` whose
//! `cache_dir` is a fresh temporary directory. Parsing and binding are done before. Each
//! run of each kernel, with a new cache directory:
//!
//! 1. **empty**: a fresh process (this program re-executed with `--child cold`), empty
//!    cache: gcc compiles the kernel, and first precompiles the intrinsics header if the
//!    kernel includes it (`jit`'s `headers`); `was_compiled()` must be true;
//! 2. **cold**: the kernel's library and checksum are deleted from that cache, and another
//!    fresh process compiles it again, with the header precompiled already, as every
//!    later new kernel is; `was_compiled()` must be true;
//! 3. **disk**: another fresh process (`--child cached`), same cache directory: the library
//!    is found on disk and loaded; `was_compiled()` must be false;
//! 4. **repeat**: the same kernel constructed again in that second process: the library is
//!    found in the process's table of loaded libraries; `was_compiled()` must be false.
//!
//! Then, per backend (`c`, `jit`), the **cold compile-and-first-run** latency of SpMV, SpMM,
//! SpGEMM and MTTKRP: in a fresh process (`--child first BACKEND`), on random inputs made
//! before timing, lowering and compiling the kernel (gcc into a cache that holds the
//! precompiled header but not the kernel, or Cranelift in process) and its first run; with
//! the steady time of a later run beside it. The JIT runs serially, so the C kernels run on
//! one thread here too.
//!
//! Every process runs `gcc --version` once (the compiler's identity is part of the cache
//! key), so phases 1 to 3 include it and phase 4 does not; its cost is printed apart.
//! Besides `was_compiled()`, the parent checks that the cache directory's libraries are
//! untouched (same names, sizes and modification times) by the cached phases. The program
//! exits with status 1 if a cached call compiled, or a cold one did not.

use std::path::Path;
use std::process::Command;
use std::time::{Instant, SystemTime};

use sparsec::format::Format;
use sparsec::generate;
use sparsec::jit::Toolchain;
use sparsec::kernel::{lower_with_default_parallelism, Backend, Kernel};
use sparsec::notation::cin::Statement;
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::Concrete;
use sparsec::tensor::{Tensor, ValueType};

/// Name, statement, and per tensor its dimensions and format.
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static [usize], &'static str)],
);

const CASES: &[Case] = &[
    (
        "spmv",
        "y(i) = A(i,j) * x(j)",
        &[
            ("y", &[1000], "dense"),
            ("A", &[1000, 1000], "csr"),
            ("x", &[1000], "dense"),
        ],
    ),
    (
        "spmm",
        "C(i,k) = A(i,j) * B(j,k)",
        &[
            ("C", &[1000, 32], "dense"),
            ("A", &[1000, 1000], "csr"),
            ("B", &[1000, 32], "dense"),
        ],
    ),
    (
        "spgemm",
        "C(i,j) = A(i,k) * B(k,j)",
        &[
            ("C", &[1000, 1000], "csr"),
            ("A", &[1000, 1000], "csr"),
            ("B", &[1000, 1000], "csr"),
        ],
    ),
    (
        "mttkrp",
        "A(i,r) = T(i,j,k) * B(j,r) * C(k,r)",
        &[
            ("A", &[100, 16], "dense"),
            ("T", &[100, 100, 100], "csf"),
            ("B", &[100, 16], "dense"),
            ("C", &[100, 16], "dense"),
        ],
    ),
    (
        "add",
        "C(i,j) = A(i,j) + B(i,j)",
        &[
            ("C", &[1000, 1000], "csr"),
            ("A", &[1000, 1000], "csr"),
            ("B", &[1000, 1000], "csc"),
        ],
    ),
];

const PHASES: [&str; 4] = ["empty", "cold", "disk", "repeat"];

/// Kernels whose cold compile-and-first-run latency is compared across backends.
const FIRST_RUN: [&str; 4] = ["spmv", "spmm", "spgemm", "mttkrp"];

/// `case`'s checked statement.
fn bind(case: &Case) -> Statement {
    let (_, expr, tensors) = case;
    let decls: Vec<TensorDecl> = tensors
        .iter()
        .map(|(t, dims, f)| {
            let format = Format::parse(f, dims.len()).expect("format");
            TensorDecl::new(*t).with_dims(dims).with_format(format)
        })
        .collect();
    let assignment = notation::parse(expr).expect("statement");
    notation::bind(&assignment, &decls, &[]).expect("declarations")
}

/// Construct `case`'s kernel with its cache in `dir`: seconds taken and `was_compiled()`.
fn construct(case: &Case, dir: &Path) -> (f64, bool) {
    let name = case.0;
    let statement = bind(case);
    let toolchain = Toolchain {
        cache_dir: dir.to_path_buf(),
        ..Toolchain::default()
    };
    let started = Instant::now();
    let kernel = Kernel::from_statement(statement, ValueType::F64, &toolchain)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (started.elapsed().as_secs_f64(), kernel.was_compiled())
}

/// Child process: lower and compile `case` with `backend` (C into the empty cache `dir`)
/// and run it once on random inputs; print `COMPILE_SECONDS FIRST_RUN_SECONDS
/// STEADY_RUN_SECONDS`.
fn first_run(case: &Case, backend: Backend, dir: &Path) {
    let statement = bind(case);
    let inputs: Vec<Tensor> = statement.tensors[1..]
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let coo = if t.format.is_all_dense() {
                generate::dense(&t.dims, k as u64).unwrap()
            } else {
                generate::uniform(&t.dims, 0.01, k as u64).unwrap()
            };
            Tensor::from_coo(&coo, &t.format, ValueType::F64).expect("input")
        })
        .collect();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let toolchain = Toolchain {
        cache_dir: dir.to_path_buf(),
        ..Toolchain::default()
    };
    let started = Instant::now();
    let lowered = Concrete::new(&statement)
        .and_then(|c| lower_with_default_parallelism(&c))
        .expect("lowering");
    let mut kernel = Kernel::from_lowered(statement, lowered, ValueType::F64, &toolchain, backend)
        .unwrap_or_else(|e| panic!("{}: {e}", case.0));
    kernel.set_threads(1);
    let compiled = started.elapsed().as_secs_f64();
    kernel.run(&refs).expect("first run");
    let first = started.elapsed().as_secs_f64() - compiled;
    let again = Instant::now();
    kernel.run(&refs).expect("second run");
    println!("{compiled} {first} {}", again.elapsed().as_secs_f64());
}

/// Child process: time the phases asked for, one `PHASE SECONDS COMPILED` line each.
fn child(mode: &str, name: &str, dir: &Path) {
    let case = CASES.iter().find(|c| c.0 == name).expect("known kernel");
    let backend = match mode {
        "first-c" => Some(Backend::C),
        "first-jit" => Some(Backend::Jit),
        _ => None,
    };
    if let Some(backend) = backend {
        return first_run(case, backend, dir);
    }
    let phases: &[&str] = match mode {
        "cold" => &["cold"],
        "cached" => &["disk", "repeat"],
        other => panic!("unknown child mode {other}"),
    };
    for phase in phases {
        let (secs, compiled) = construct(case, dir);
        println!("{phase} {secs} {compiled}");
    }
}

/// Re-execute this program as a child; returns its output.
fn spawn_text(mode: &str, name: &str, dir: &Path) -> String {
    let exe = std::env::current_exe().expect("own executable");
    let out = Command::new(exe)
        .args(["--child", mode, name])
        .arg(dir)
        .output()
        .expect("spawn child");
    assert!(
        out.status.success(),
        "child {mode} {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Re-execute this program as a child; returns its `(phase, seconds, compiled)` lines.
fn spawn(mode: &str, name: &str, dir: &Path) -> Vec<(String, f64, bool)> {
    spawn_text(mode, name, dir)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

/// The cache's libraries: name, size and modification time, sorted.
fn libraries(dir: &Path) -> Vec<(String, u64, SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("cache dir")
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_string_lossy().into_owned();
            let meta = e.metadata().ok()?;
            let modified = meta.modified().ok()?;
            name.ends_with(".so")
                .then_some((name, meta.len(), modified))
        })
        .collect();
    v.sort();
    v
}

/// Delete the cache's libraries and their checksums, keeping what else it holds (the
/// precompiled header), as a kernel never compiled before finds it.
fn forget_kernels(dir: &Path) {
    for (library, _, _) in libraries(dir) {
        let library = dir.join(library);
        std::fs::remove_file(library.with_extension("sum")).expect("checksum");
        std::fs::remove_file(library).expect("library");
    }
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1], &args[2], Path::new(&args[3]));
    }
    let runs = match args.as_slice() {
        [] => 5,
        [flag, n] if flag == "--runs" => n.parse().expect("--runs N"),
        _ => panic!("usage: bench_jit [--runs N]"),
    };
    assert!(runs >= 1, "--runs must be at least 1");

    let compiler = Toolchain::default().compiler;
    let version_ms: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            Command::new(&compiler)
                .arg("--version")
                .output()
                .expect("compiler");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();

    let mut failures = Vec::new();
    println!("compiler `{compiler}`; {runs} runs per kernel; times in ms");
    println!(
        "{:8} {:7} {:>9} {:>9} {:>9} {:>11} {:>9}",
        "kernel", "phase", "median", "min", "max", "cold/phase", "compiled"
    );
    for case in CASES {
        let name = case.0;
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); PHASES.len()];
        let mut flags = [0usize; PHASES.len()];
        for _ in 0..runs {
            let dir = tempfile::Builder::new()
                .prefix("sparsec-bench-jit-")
                .tempdir()
                .expect("temporary directory");
            let mut results = spawn("cold", name, dir.path());
            results[0].0 = "empty".into();
            forget_kernels(dir.path());
            results.extend(spawn("cold", name, dir.path()));
            let before = libraries(dir.path());
            results.extend(spawn("cached", name, dir.path()));
            if libraries(dir.path()) != before {
                failures.push(format!("{name}: the cached phases rewrote a library"));
            }
            for (phase, secs, compiled) in results {
                let p = PHASES.iter().position(|&q| q == phase).expect("phase");
                times[p].push(secs * 1e3);
                flags[p] += compiled as usize;
                if compiled != (phase == "empty" || phase == "cold") {
                    failures.push(format!(
                        "{name}: {phase} call reports compiled = {compiled}"
                    ));
                }
            }
        }
        let cold = stats(times[1].clone()).0;
        for (p, phase) in PHASES.iter().enumerate() {
            let (median, min, max) = stats(times[p].clone());
            let ratio = if p <= 1 {
                String::new()
            } else {
                format!("{:.0}x", cold / median)
            };
            println!(
                "{name:8} {phase:7} {median:>9.3} {min:>9.3} {max:>9.3} {ratio:>11} {:>9}",
                format!("{}/{runs}", flags[p])
            );
        }
    }
    println!(
        "`{compiler} --version` (run once per process, inside cold and disk): median {:.3} ms",
        stats(version_ms).0
    );

    println!();
    println!(
        "cold compile + first run, fresh process (C: kernel not cached, header precompiled), \
         1 thread; ms, medians"
    );
    println!(
        "{:8} {:7} {:>9} {:>9} {:>9} {:>11}",
        "kernel", "backend", "compile", "1st run", "total", "steady run"
    );
    for name in FIRST_RUN {
        for backend in ["c", "jit"] {
            let mut columns: [Vec<f64>; 4] = Default::default();
            for _ in 0..runs {
                let dir = tempfile::Builder::new()
                    .prefix("sparsec-bench-jit-")
                    .tempdir()
                    .expect("temporary directory");
                let mode = format!("first-{backend}");
                // A first compile in this cache precompiles the header; time the second.
                spawn_text(&mode, name, dir.path());
                forget_kernels(dir.path());
                let text = spawn_text(&mode, name, dir.path());
                let secs: Vec<f64> = text
                    .split_whitespace()
                    .map(|f| f.parse::<f64>().expect("seconds") * 1e3)
                    .collect();
                columns[0].push(secs[0]);
                columns[1].push(secs[1]);
                columns[2].push(secs[0] + secs[1]);
                columns[3].push(secs[2]);
            }
            let [compile, first, total, steady] = columns.map(|c| stats(c).0);
            println!(
                "{name:8} {backend:7} {compile:>9.3} {first:>9.3} {total:>9.3} {steady:>11.3}"
            );
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("FAIL: {f}");
        }
        std::process::exit(1);
    }
}
