//! End-to-end tests of `sparsec run` and `sparsec emit`, running the built binary.

mod common;
use common::{shared_data, sparsec};

use std::path::PathBuf;
use std::process::{Command, Output};

use sparsec::format::Format;
use sparsec::generate;
use sparsec::io;
use sparsec::notation::{self, TensorDecl};
use sparsec::reference;
use sparsec::tensor::{Coo, Tensor, ValueType};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn ok(args: &[&str]) -> String {
    let o = sparsec(args);
    assert!(
        o.status.success(),
        "sparsec {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Run, expect failure with a readable message containing `expected`.
#[track_caller]
fn fails(args: &[&str], expected: &str) -> String {
    let o = sparsec(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "sparsec {args:?} should fail");
    assert!(
        !err.contains("panicked"),
        "sparsec {args:?} panicked:\n{err}"
    );
    assert!(
        err.contains(expected),
        "sparsec {args:?}: expected `{expected}` in stderr:\n{err}"
    );
    err
}

fn shared_matrix(name: &str) -> PathBuf {
    shared_data(&format!("matrices/{name}"))
}

#[test]
fn spmv_on_shared_matrix_with_check_and_timing() {
    let path = shared_matrix("bcsstk13.mtx");
    let input = format!("A:{}", path.display());
    let out = ok(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:ds",
        "-i",
        &input,
        "-g",
        "x:dense",
        "--time",
        "300",
        "--check",
    ]);
    assert!(out.contains("A: 2003x2003 ds, 83883 stored"), "{out}");
    // Enough runs to try each version of the row sums and name the fastest.
    assert!(
        out.contains("kernel: sums in SIMD lanes") || out.contains("kernel: sums in serial"),
        "{out}"
    );
    assert!(out.contains("check: ok"), "{out}");
    for phase in ["compute", "assembly", "compile"] {
        assert!(out.contains(phase), "{phase} missing:\n{out}");
    }
    assert!(out.contains("median"), "{out}");
    assert!(out.contains("y: 2003 d"), "{out}");
}

/// `--sums` fixes the version of the row sums (or leaves it to the run-time tests): each
/// is checked against the reference, and none measures the others.
#[test]
fn spmv_with_each_fixed_sum_version() {
    let path = shared_matrix("bcsstk13.mtx");
    let input = format!("A:{}", path.display());
    let spmv = [
        "run",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-i",
        &input,
        "-g",
        "x:dense",
    ];
    for sums in ["tested", "scalar", "lanes", "gathers"] {
        let out = ok(&[&spmv[..], &["--time", "100", "--sums", sums, "--check"]].concat());
        assert!(out.contains("check: ok"), "--sums {sums}: {out}");
        assert!(
            !out.contains("the fastest of its versions"),
            "--sums {sums}: {out}"
        );
    }
    fails(
        &[&spmv[..], &["--sums", "fastest"]].concat(),
        "possible values: measured, tested, scalar, lanes, gathers",
    );
}

#[test]
fn pattern_matrix_spgemm_with_check() {
    let path = shared_matrix("karate.mtx");
    let a = format!("A:{}", path.display());
    let b = format!("B:{}", path.display());
    let out = ok(&[
        "run",
        "C(i,j) = A(i,k) * B(k,j)",
        "-f",
        "A:csr",
        "-f",
        "B:csr",
        "-f",
        "C:csr",
        "-i",
        &a,
        "-i",
        &b,
        "--check",
    ]);
    assert!(out.contains("check: ok"), "{out}");
    // Pattern entries read as 1.0: the diagonal of A*A holds the degrees (vertex 1: 16).
    assert!(out.contains("C(0,0) = 16"), "{out}");
}

#[test]
fn generated_inputs_with_sizes() {
    let out = ok(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-g",
        "A:uniform:0.05",
        "-g",
        "x:dense",
        "-d",
        "i:200",
        "-d",
        "j:300",
        "--check",
    ]);
    assert!(out.contains("A: 200x300 ds, 3000 stored"), "{out}");
    assert!(out.contains("check: ok"), "{out}");

    // Matrix generators, and sizes inferred through shared variables (k from A).
    for (a, b) in [
        ("A:banded:2", "B:powerlaw:4"),
        ("A:skewed:1,1.05", "B:uniform"),
    ] {
        let out = ok(&[
            "run",
            "C(i,j) = A(i,k) * B(k,j)",
            "-f",
            "A:csr",
            "-f",
            "B:csr",
            "-f",
            "C:csr",
            "-g",
            a,
            "-g",
            b,
            "-d",
            "i:80",
            "-d",
            "k:80",
            "-d",
            "j:60",
            "--check",
            "--seed",
            "7",
        ]);
        assert!(out.contains("check: ok"), "{a} {b}: {out}");
        assert!(out.contains("C: 80x60 ds"), "{a} {b}: {out}");
    }
}

/// The reference result of `expr` on `inputs` (all f64, given formats).
fn reference_result(expr: &str, inputs: &[(&str, Coo, &str)]) -> Tensor {
    let assignment = notation::parse(expr).unwrap();
    let mut decls = vec![TensorDecl::new(assignment.lhs.tensor.clone())];
    let mut tensors = Vec::new();
    for (name, coo, format) in inputs {
        let format = Format::parse(format, coo.order()).unwrap();
        decls.push(
            TensorDecl::new(*name)
                .with_dims(&coo.dims)
                .with_format(format.clone()),
        );
        tensors.push(Tensor::from_coo(coo, &format, ValueType::F64).unwrap());
    }
    let stmt = notation::bind(&assignment, &decls, &[]).unwrap();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    reference::evaluate(&stmt, &refs, None)
}

#[test]
fn output_files_read_back_match_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let a = generate::uniform(&[40, 30], 0.1, 1).unwrap();
    let b = generate::uniform(&[30, 50], 0.1, 2).unwrap();
    let x = generate::dense(&[30], 3).unwrap();
    let a_path = dir.path().join("a.mtx");
    let b_path = dir.path().join("b.tns");
    let x_path = dir.path().join("x.mtx");
    io::write_matrix_market(&a_path, &a, &io::MtxWriteOptions::default()).unwrap();
    io::write_tns(&b_path, &b).unwrap();
    io::write_matrix_market(&x_path, &x, &io::MtxWriteOptions::default()).unwrap();
    let a_arg = format!("A:{}", a_path.display());
    let b_arg = format!("B:{}", b_path.display());
    let x_arg = format!("x:{}", x_path.display());

    // Sparse output to MatrixMarket coordinate.
    let c_path = dir.path().join("c.mtx");
    let c_arg = format!("C:{}", c_path.display());
    ok(&[
        "run",
        "C(i,j) = A(i,k) * B(k,j)",
        "-f",
        "A:csr",
        "-f",
        "B:dcsr",
        "-f",
        "C:csr",
        "-i",
        &a_arg,
        "-i",
        &b_arg,
        "-o",
        &c_arg,
    ]);
    let read = io::read_any(&c_path).unwrap().into_coo();
    let got = Tensor::from_coo(&read, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    let expected = reference_result(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", a.clone(), "csr"), ("B", b.clone(), "dcsr")],
    );
    let diff = got.max_difference(&expected).expect("same dims");
    assert!(diff <= 1e-12, "difference {diff}");

    // Dense vector output to MatrixMarket array (an n x 1 matrix), and to FROSTT.
    for file in ["y.mtx", "y.tns"] {
        let y_path = dir.path().join(file);
        let y_arg = format!("y:{}", y_path.display());
        ok(&[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-f",
            "A:csr",
            "-i",
            &a_arg,
            "-i",
            &x_arg,
            "-o",
            &y_arg,
        ]);
        let mut read = io::read_any(&y_path).unwrap().into_coo();
        if read.order() == 2 {
            assert_eq!(read.dims, vec![40, 1]);
            read = Coo {
                dims: vec![40],
                coords: read.coords.chunks(2).map(|c| c[0]).collect(),
                values: read.values,
            };
        }
        let got = Tensor::from_coo(&read, &Format::dense(1), ValueType::F64).unwrap();
        let expected = reference_result(
            "y(i) = A(i,j) * x(j)",
            &[("A", a.clone(), "csr"), ("x", x.clone(), "d")],
        );
        let diff = got.max_difference(&expected).expect("same dims");
        assert!(diff <= 1e-12, "{file}: difference {diff}");
    }

    // An order-3 output cannot go to MatrixMarket: refused before any work.
    let t_path = dir.path().join("t.mtx");
    let t_arg = format!("T:{}", t_path.display());
    fails(
        &[
            "run",
            "T(i,j,k) = B(i,j) * B(j,k)",
            "-g",
            "B:dense",
            "-d",
            "i:3",
            "-d",
            "j:3",
            "-d",
            "k:3",
            "-o",
            &t_arg,
        ],
        "MatrixMarket",
    );
}

#[test]
fn emit_prints_the_kernel() {
    let whole = ok(&["emit", "y(i) = A(i,j) * x(j)", "-f", "A:ds"]);
    assert!(whole.contains("#include"), "{whole}");
    assert!(whole.contains("sparsec_kernel"), "{whole}");

    let compute = ok(&[
        "emit",
        "C(i,j) = A(i,k) * B(k,j)",
        "-f",
        "A:csr",
        "-f",
        "B:csr",
        "-f",
        "C:csr",
        "--compute",
    ]);
    assert!(compute.contains("int sparsec_kernel("), "{compute}");
    assert!(!compute.contains("#include"), "{compute}");

    let assembly = ok(&[
        "emit",
        "C(i,j) = A(i,j) + B(i,j)",
        "-f",
        "A:csr",
        "-f",
        "B:csr",
        "-f",
        "C:csr",
        "--assembly",
    ]);
    assert!(assembly.contains("compressed"), "{assembly}");
    assert!(assembly.contains("#include"), "{assembly}");

    // Sizes from -d give the same code as the placeholder.
    let sized = ok(&[
        "emit",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:ds",
        "-d",
        "i:5",
        "-d",
        "j:7",
    ]);
    assert_eq!(sized, whole);
}

#[test]
fn help_explains_usage() {
    let run = ok(&["run", "--help"]);
    assert!(run.contains("EXAMPLES"), "{run}");
    assert!(run.contains("uniform"), "{run}");
    assert!(run.contains("compressed"), "{run}");
    let emit = ok(&["emit", "--help"]);
    assert!(emit.contains("--compute"), "{emit}");
    assert!(emit.contains("EXAMPLES"), "{emit}");
}

#[test]
fn errors_are_reported_without_panics() {
    let spmv = "y(i) = A(i,j) * x(j)";
    let sizes = ["-d", "i:4", "-d", "j:4"];
    let with_sizes = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["run", "y(i) = A(i,j) * x(j)"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&sizes);
        v
    };
    // Unknown tensor in -f.
    let err = fails(
        &with_sizes(&["-f", "B:ds", "-g", "A:dense", "-g", "x:dense"]),
        "unknown tensor `B`",
    );
    assert!(err.contains("`A`"), "lists the tensors: {err}");
    // Malformed format string.
    fails(
        &with_sizes(&["-f", "A:dz", "-g", "A:dense", "-g", "x:dense"]),
        "format `dz`",
    );
    fails(
        &with_sizes(&["-f", "A:dss", "-g", "A:dense", "-g", "x:dense"]),
        "-f A:dss",
    );
    // Nonexistent input file.
    let missing = std::env::temp_dir().join("sparsec-no-such-file-4711.mtx");
    let arg = format!("A:{}", missing.display());
    fails(
        &["run", spmv, "-i", &arg, "-g", "x:dense"],
        "cannot read input `A`",
    );
    // Parse error in the expression, shown with the expression.
    let err = fails(
        &["run", "y(i) = A(i,j) * ", "-g", "A:dense"],
        "expected an expression",
    );
    assert!(err.contains("y(i) = A(i,j) *"), "{err}");
    fails(&["emit", "y(i) = A(i,j) ** x(j)"], "y(i) = A(i,j) ** x(j)");
    // Missing input, unknown size, bad generator, unknown extension.
    fails(&with_sizes(&["-g", "A:dense"]), "missing input");
    fails(
        &["run", spmv, "-g", "A:dense", "-g", "x:dense", "-d", "i:3"],
        "size of index variable `j`",
    );
    fails(
        &with_sizes(&["-g", "A:zipf", "-g", "x:dense"]),
        "unknown generator",
    );
    fails(
        &with_sizes(&["-g", "A:dense", "-g", "x:banded"]),
        "makes matrices",
    );
    fails(
        &["run", "a = s * 2", "-g", "s:powerlaw"],
        "slices of a first mode",
    );
    fails(
        &with_sizes(&["-g", "A:dense", "-g", "x:dense", "-o", "y:out.csv"]),
        "unknown extension",
    );
    fails(
        &with_sizes(&["-g", "A:dense", "-g", "x:dense", "-o", "z:out.mtx"]),
        "not the output",
    );
}

#[test]
fn run_with_the_jit_backend() {
    for (expr, formats) in [
        ("y(i) = A(i,j) * x(j)", ["-f", "A:csr", "-g", "x:dense"]),
        ("C(i,j) = A(i,k) * B(k,j)", ["-f", "A:csr", "-f", "C:csr"]),
    ] {
        let mut args = vec![
            "run",
            expr,
            "-g",
            "A:uniform:0.1",
            "--backend",
            "jit",
            "--check",
        ];
        args.extend(formats);
        if expr.starts_with('C') {
            args.extend(["-g", "B:uniform:0.1", "-f", "B:csr"]);
        }
        args.extend(["-d", "i:40", "-d", "j:30", "-d", "k:20"]);
        let out = ok(&args);
        assert!(out.contains("compiled by the JIT target"), "{out}");
        assert!(out.contains("check: ok"), "{out}");
    }
    let refused = sparsec(&["run", "y(i) = A(i,j) * x(j)", "--backend", "llvm"]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("jit"), "{}", stderr(&refused));
}

/// `SPARSEC_CC` may carry flags, and an empty `SPARSEC_CACHE_DIR` means unset: the
/// kernel compiles (with `-O0` after sparsec's flags) and nothing lands in the working
/// directory.
#[test]
fn compiler_flags_and_an_empty_cache_variable() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sparsec"))
        .args([
            "run",
            "y(i) = A(i,j) * x(j)",
            "-f",
            "A:csr",
            "-g",
            "A:uniform",
            "-g",
            "x:dense",
            "-d",
            "i:9",
            "-d",
            "j:7",
            "--backend",
            "c",
            "--check",
        ])
        .current_dir(work.path())
        .env("SPARSEC_CC", "gcc -O0 -g0")
        .env("SPARSEC_CACHE_DIR", "")
        .env("XDG_CACHE_HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("check: ok"), "{}", stdout(&out));
    let stray: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
    assert!(
        stray.is_empty(),
        "files in the working directory: {stray:?}"
    );
    let cached = std::fs::read_dir(home.path().join("sparsec"))
        .unwrap()
        .count();
    assert!(cached > 0, "the kernel is cached under XDG_CACHE_HOME");
}

/// Requests that cannot be met are refused before any work: a thread count no OpenMP
/// team survives, an output file in a directory that does not exist.
#[test]
fn impossible_requests_are_refused_up_front() {
    let spmv = [
        "run",
        "y(i) = A(i,j) * x(j)",
        "-g",
        "A:uniform",
        "-g",
        "x:dense",
        "-d",
        "i:5",
        "-d",
        "j:5",
    ];
    let mut threads = spmv.to_vec();
    threads.extend(["--threads", "100000"]);
    fails(&threads, "at most 1024");
    let mut output = spmv.to_vec();
    output.extend(["-o", "y:/nonexistent-sparsec-dir/y.mtx"]);
    fails(&output, "does not exist");
    let o = sparsec(&output);
    assert!(
        !stdout(&o).contains("kernel:"),
        "nothing ran: {}",
        stdout(&o)
    );
}

/// A scalar result reads as one: no empty format, no count of stored values.
#[test]
fn scalar_results_read_as_scalars() {
    let out = ok(&[
        "run",
        "a = A(i,j) * B(i,j)",
        "-g",
        "A:uniform:0.9",
        "-g",
        "B:uniform:0.9",
        "-d",
        "i:4",
        "-d",
        "j:4",
    ]);
    assert!(out.contains("a: scalar\n"), "{out}");
    assert!(out.contains("  a() = "), "{out}");
}

/// An inner product written to .mtx (a 1 x 1 array) and .tns (one value line) reads back
/// as the reference's value; a scalar input is read from .tns and from that 1 x 1 .mtx,
/// and a scalar file is never widened to a vector.
#[test]
fn scalars_in_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = generate::uniform(&[20, 30], 0.2, 5).unwrap();
    let b = generate::uniform(&[20, 30], 0.2, 6).unwrap();
    let a_path = dir.path().join("a.mtx");
    let b_path = dir.path().join("b.tns");
    io::write_matrix_market(&a_path, &a, &io::MtxWriteOptions::default()).unwrap();
    io::write_tns(&b_path, &b).unwrap();
    let (a_arg, b_arg) = (
        format!("A:{}", a_path.display()),
        format!("B:{}", b_path.display()),
    );
    let expected = reference_result(
        "a = A(i,j) * B(i,j)",
        &[("A", a.clone(), "ds"), ("B", b.clone(), "ds")],
    )
    .to_coo()
    .values;
    assert!(expected[0] != 0.0, "the inputs overlap: {expected:?}");
    for (file, dims) in [("inner.mtx", vec![1, 1]), ("inner.tns", vec![])] {
        let path = dir.path().join(file);
        let out = ok(&[
            "run",
            "a = A(i,j) * B(i,j)",
            "-f",
            "A:csr",
            "-f",
            "B:csr",
            "-i",
            &a_arg,
            "-i",
            &b_arg,
            "-o",
            &format!("a:{}", path.display()),
        ]);
        assert!(out.contains("a: scalar, written to"), "{file}: {out}");
        let read = io::read_any(&path).unwrap().into_coo();
        assert_eq!(read.dims, dims, "{file}");
        assert_eq!(read.values.len(), 1, "{file}");
        let diff = (read.values[0] - expected[0]).abs();
        assert!(
            diff <= 1e-12 * expected[0].abs(),
            "{file}: {read:?} vs {expected:?}"
        );
    }

    let x = generate::dense(&[7], 8).unwrap();
    let x_path = dir.path().join("x.tns");
    io::write_tns(&x_path, &x).unwrap();
    let x_arg = format!("x:{}", x_path.display());
    let alpha_path = dir.path().join("alpha.tns");
    std::fs::write(&alpha_path, "# the factor\n-2.5\n").unwrap();
    let y_path = dir.path().join("y.tns");
    let inner_path = dir.path().join("inner.mtx");
    let inner = io::read_any(&inner_path).unwrap().into_coo().values[0];
    for (alpha, factor) in [(alpha_path.clone(), -2.5), (inner_path, inner)] {
        let out = ok(&[
            "run",
            "y(i) = alpha * x(i)",
            "-i",
            &format!("alpha:{}", alpha.display()),
            "-i",
            &x_arg,
            "--check",
            "-o",
            &format!("y:{}", y_path.display()),
        ]);
        assert!(out.contains("alpha: scalar\n"), "{out}");
        assert!(out.contains("check: ok"), "{out}");
        let y = io::read_tns(&y_path, None).unwrap();
        let scaled: Vec<f64> = x.values.iter().map(|v| factor * v).collect();
        assert_eq!((y.coords, y.values), (x.coords.clone(), scaled));
    }
    fails(
        &[
            "run",
            "y(i) = alpha(i) * x(i)",
            "-i",
            &format!("alpha:{}", alpha_path.display()),
            "-i",
            &x_arg,
        ],
        "wrong number of indices for tensor `alpha`",
    );
}

/// `sparsec taco ARGS`, with ARGS as TACO's command line spells them.
#[track_caller]
fn taco_ok(args: &[&str]) -> String {
    ok(&[&["taco"], args].concat())
}

#[test]
fn taco_readme_spmv_runs_and_times() {
    // TACO's README-style line: generated CSR matrix and dense vector, timed.
    let out = taco_ok(&[
        "y(i) = A(i,j) * x(j)",
        "-f=A:ds",
        "-g=A:u",
        "-g=x:d",
        "-d=i:100",
        "-d=j:100",
        "-time=3",
    ]);
    assert!(out.contains("A: 100x100 ds, 10000 stored"), "{out}");
    assert!(
        out.contains("3 runs") || out.matches("median").count() >= 2,
        "{out}"
    );
    assert!(out.contains("compute"), "{out}");
    // TACO's sparse fill takes 7% of each mode's coordinates: 0.49% of a matrix.
    let out = taco_ok(&[
        "y(i) = A(i,j) * x(j)",
        "-f=A:ds",
        "-g=A:s",
        "-g=x:r",
        "-d=i:100",
        "-d=j:100",
        "-nthreads=2",
        "-s=split(i,i0,i1,16),parallelize(i0,CPUThread,NoRaces)",
    ]);
    assert!(out.contains("A: 100x100 ds, 49 stored"), "{out}");
    assert!(
        out.contains("loops i0, i1, j"),
        "the schedule is applied: {out}"
    );
    assert!(!out.contains("timing:"), "timing only with -time: {out}");
}

#[test]
fn taco_prints_the_kernels_emit_prints() {
    // TACO's usage examples: without inputs the compute kernel is printed.
    for (expr, format) in [
        ("a(i) = B(i,j) * c(j)", "B:ds"),
        ("A(i,l) = B(i,j,k) * C(j,l) * D(k,l)", "B:sss"),
    ] {
        let taco_f = format!("-f={format}");
        let compute = ok(&["emit", expr, "-f", format, "--compute"]);
        assert_eq!(taco_ok(&[expr, &taco_f]), compute);
        assert_eq!(taco_ok(&[expr, &taco_f, "-print-compute"]), compute);
        let assembly = ok(&["emit", expr, "-f", format, "--assembly"]);
        assert_eq!(taco_ok(&[expr, &taco_f, "-print-assembly"]), assembly);
        assert_eq!(
            taco_ok(&[expr, &taco_f, "-print-assembly", "-print-compute"]),
            format!("{assembly}{compute}")
        );
    }
    // -write-source writes the whole translation unit and prints nothing else.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kernel.c");
    let scheduled = [
        "C(i,j) = A(i,k) * B(k,j)",
        "-f=A:ds",
        "-f=B:ds",
        "-f=C:ds",
        "-s=\"precompute(A(i,k)*B(k,j),j,j),assemble(C,Append)\"",
    ];
    let written = format!("-write-source={}", file.display());
    assert_eq!(taco_ok(&[&scheduled[..], &[written.as_str()]].concat()), "");
    let whole = ok(&[
        "emit",
        scheduled[0],
        "-f",
        "A:ds",
        "-f",
        "B:ds",
        "-f",
        "C:ds",
        "-s",
        "precompute(A(i,k)*B(k,j),j,j,workspace)",
    ]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), whole);
}

#[test]
fn taco_files_mode_orderings_and_output() {
    let dir = tempfile::tempdir().unwrap();
    let a = generate::uniform(&[30, 20], 0.2, 11).unwrap();
    let x = generate::dense(&[20], 12).unwrap();
    let a_path = dir.path().join("a.mtx");
    let x_path = dir.path().join("x.tns");
    io::write_matrix_market(&a_path, &a, &io::MtxWriteOptions::default()).unwrap();
    io::write_tns(&x_path, &x).unwrap();
    let y_path = dir.path().join("y.tns");
    let out = taco_ok(&[
        "y(i) = A(i,j) * x(j)",
        "-f=A:ds:1,0",
        &format!("-i=A:{}", a_path.display()),
        &format!("--i=x:{}", x_path.display()),
        &format!("-o=y:{}", y_path.display()),
    ]);
    assert!(out.contains("A: 30x20 ds:1,0, "), "{out}");
    let got = Tensor::from_coo(
        &io::read_any(&y_path).unwrap().into_coo(),
        &Format::dense(1),
        ValueType::F64,
    )
    .unwrap();
    let expected = reference_result("y(i) = A(i,j) * x(j)", &[("A", a, "ds:1,0"), ("x", x, "d")]);
    let diff = got.max_difference(&expected).expect("same dims");
    assert!(diff <= 1e-12, "difference {diff}");
}

#[test]
fn taco_lines_sparsec_cannot_follow_are_refused() {
    let spmv = "y(i) = A(i,j) * x(j)";
    let err = fails(&["taco", spmv, "-cuda"], "unsupported TACO option `-cuda`");
    assert!(
        err.contains("-print-assembly") && err.contains("-nthreads"),
        "{err}"
    );
    fails(&["taco", spmv, "-c"], "unsupported TACO option `-c`");
    fails(
        &["taco", spmv, "-g=A:l", "-g=x:d"],
        "has no sparsec generator",
    );
    fails(&["taco", spmv, "-g=A:z", "-g=x:d"], "unknown TACO fill `z`");
    fails(&["taco", spmv, "-g=A", "-g=x:d"], "-g");
    fails(&["taco", spmv, "-d=A:10,10"], "sizes of a tensor's modes");
    fails(&["taco", spmv, "-time=often"], "-time=often");
    fails(&["taco", spmv, "-nthreads=0"], "-nthreads=0");
    fails(&["taco", spmv, "-f"], "-f needs a value");
    fails(&["taco", "-f=A:ds"], "no index expression");
    fails(&["taco", spmv, "y(i) = x(i)"], "two index expressions");
    fails(&["taco", spmv, "-f=A:dx"], "-f A:dx");
    fails(
        &["taco", spmv, "-f=A:ds", "-s=bound(i,ib,MaxExact)"],
        "`bound` takes",
    );
    fails(&["taco", spmv, "-g=B:d", "-g=x:d"], "unknown tensor `B`");
}

/// The same tensor through index variables of different sizes used to read out of bounds
/// (exit 0 or a crash); it is a notation error pointing at the access.
#[test]
fn same_tensor_through_variables_of_different_sizes_is_refused() {
    let err = fails(
        &[
            "run",
            "y(j) = A(j) * A(i)",
            "-d",
            "i:7",
            "-d",
            "j:2",
            "-g",
            "A:uniform",
        ],
        "mode 0 of tensor `A` has size 2 (from the access `A(j)`), but index",
    );
    assert!(err.contains("A(i)"), "{err}");
    fails(
        &[
            "run",
            "y(i) = A(j,i) - A(i,j)",
            "-d",
            "i:3",
            "-d",
            "j:5",
            "-g",
            "A:uniform",
        ],
        "mode 0 of tensor `A` has size 5",
    );
}

/// `--check` used to fail with "inf" whenever the result held a NaN or an infinity, even
/// where kernel and reference agree.
#[test]
fn check_accepts_matching_nan_and_infinity() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.mtx");
    let z = dir.path().join("z.mtx");
    std::fs::write(
        &x,
        "%%MatrixMarket matrix coordinate real general\n3 1 3\n1 1 nan\n2 1 2\n3 1 -1\n",
    )
    .unwrap();
    std::fs::write(
        &z,
        "%%MatrixMarket matrix coordinate real general\n3 1 2\n1 1 1\n3 1 0\n",
    )
    .unwrap();
    let x_arg = format!("x:{}", x.display());
    let z_arg = format!("z:{}", z.display());
    let out = ok(&["run", "y(i) = x(i) * 2", "-i", &x_arg, "--check"]);
    assert!(out.contains("y(0) = NaN"), "{out}");
    // NaN / 1, 2 / 0 and -1 / 0 (z(1) is not stored, z(2) is a stored zero).
    let out = ok(&[
        "run",
        "y(i) = x(i) / z(i)",
        "-i",
        &x_arg,
        "-i",
        &z_arg,
        "--check",
    ]);
    assert!(
        out.contains("y(1) = inf") && out.contains("y(2) = -inf"),
        "{out}"
    );
}

/// A loop order against an operand's storage transposes a copy of it at every run: the CLI
/// says so once, with the operand, both layouts and the entries copied.
#[test]
fn reorder_that_transposes_an_operand_is_reported() {
    let base = [
        "run",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-g",
        "A:uniform",
        "-g",
        "x:dense",
        "-d",
        "i:50",
        "-d",
        "j:40",
    ];
    let o = sparsec(&[&base[..], &["-s", "reorder(j,i)"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("`A`")
            && notes[0].contains("from ds to ds:1,0")
            && notes[0].contains("20 stored entries copied"),
        "{err}"
    );
    // In storage order nothing is converted.
    let o = sparsec(&base);
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
}

/// A dense output of 2^40 values (8 TiB) used to abort the process ("memory allocation
/// failed"); it is refused at once, naming the output and the bytes it needs.
#[test]
fn output_that_cannot_be_allocated_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.tns");
    std::fs::write(&x, "1099511627776 2.5\n3 1\n").unwrap();
    let x_arg = format!("x:{}", x.display());
    let started = std::time::Instant::now();
    let err = fails(
        &["run", "y(i) = x(i)", "-i", &x_arg, "-f", "x:sv"],
        "cannot store the output `y`",
    );
    assert!(err.contains("8796093022208"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

/// A kernel cached with a compiler still loads after that compiler is gone (its identity
/// is remembered in the cache); one that is not cached says the compiler is missing.
#[test]
fn cached_kernels_load_without_their_compiler() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cc = dir.path().join("sparsec-test-gcc");
    std::fs::write(&cc, "#!/bin/sh\nexec gcc \"$@\"\n").unwrap();
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir.path().join("cache");
    let run = |expr: &str| {
        Command::new(env!("CARGO_BIN_EXE_sparsec"))
            .args([
                "run",
                expr,
                "-f",
                "A:csr",
                "-g",
                "A:uniform:0.3",
                "-g",
                "x:dense",
                "-d",
                "i:9",
                "-d",
                "j:9",
                "--backend",
                "c",
                "--check",
            ])
            .env("SPARSEC_CC", &cc)
            .env("SPARSEC_CACHE_DIR", &cache)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let first = run("y(i) = A(i,j) * x(j)");
    assert!(
        stdout(&first).contains("kernel: compiled"),
        "{}",
        stderr(&first)
    );
    std::fs::remove_file(&cc).unwrap();
    let again = run("y(i) = A(i,j) * x(j)");
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("loaded from cache"),
        "{}",
        stdout(&again)
    );
    assert!(stdout(&again).contains("check: ok"), "{}", stdout(&again));
    let other = run("y(i) = A(i,j) * x(j) * 2");
    assert!(!other.status.success());
    let err = stderr(&other);
    assert!(
        err.contains("sparsec-test-gcc") && !err.contains("panicked"),
        "{err}"
    );
}

/// `--backend opencl` runs a GPU schedule on an OpenCL device (PoCL in CI) where sparsec
/// was built with the `opencl` feature, and says which feature is missing where not.
#[test]
fn run_with_the_opencl_backend() {
    let args = [
        "run",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-g",
        "A:uniform:0.1",
        "-g",
        "x:dense",
        "-d",
        "i:40",
        "-d",
        "j:30",
        "--backend",
        "opencl",
        "--schedule",
        "split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUWarp,NoRaces),\
         parallelize(j,GPUThread,ParallelReduction)",
        "--check",
    ];
    if cfg!(feature = "opencl") {
        let out = ok(&args);
        assert!(out.contains("compiled by the OpenCL target"), "{out}");
        assert!(out.contains("check: ok"), "{out}");
        // Without a schedule: the default GPU mapping.
        let unscheduled: Vec<&str> = args
            .iter()
            .copied()
            .filter(|a| *a != "--schedule" && !a.starts_with("split("))
            .collect();
        let out = ok(&unscheduled);
        assert!(out.contains("loops gpu_block"), "{out}");
        assert!(out.contains("check: ok"), "{out}");
        // `--device opencl` is the same.
        let device: Vec<&str> = unscheduled
            .iter()
            .map(|a| if *a == "--backend" { "--device" } else { a })
            .collect();
        assert!(ok(&device).contains("compiled by the OpenCL target"));
    } else {
        let refused = sparsec(&args);
        assert!(!refused.status.success());
        assert!(
            stderr(&refused).contains("`opencl` feature"),
            "{}",
            stderr(&refused)
        );
    }
}

/// `emit --target opencl|cuda` prints a GPU schedule's device kernels, or the default GPU
/// mapping's without a schedule; a CPU schedule is refused naming the unit.
#[test]
fn emit_prints_gpu_kernels() {
    let schedule = "split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),\
                    parallelize(i1,GPUWarp,NoRaces),parallelize(j,GPUThread,ParallelReduction)";
    for (target, head) in [
        ("opencl", "__kernel void sparsec_kernel_0("),
        ("cuda", "extern \"C\" __global__ void sparsec_kernel_0("),
    ] {
        let emit = |extra: &[&str]| {
            let mut args = vec![
                "emit",
                "y(i) = A(i,j) * x(j)",
                "-f",
                "A:csr",
                "--target",
                target,
            ];
            args.extend(extra);
            sparsec(&args)
        };
        let out = stdout(&emit(&["--compute", "-s", schedule]));
        assert!(out.starts_with(head), "{out}");
        assert!(out.contains("i0"), "{out}");
        let default = stdout(&emit(&["--compute"]));
        assert!(default.starts_with(head), "{default}");
        assert!(default.contains("gpu_block"), "{default}");
        let refused = emit(&["-s", "parallelize(i,CPUThread,NoRaces)"]);
        assert!(!refused.status.success());
        assert!(
            stderr(&refused).contains("CPUThread"),
            "{}",
            stderr(&refused)
        );
    }
}

/// `--device cuda` says what is missing: this build prints CUDA kernels but cannot launch
/// them.
#[test]
fn run_on_cuda_says_what_is_missing() {
    let refused = sparsec(&[
        "run",
        "y(i) = A(i,j) * x(j)",
        "-f",
        "A:csr",
        "-g",
        "A:uniform:0.1",
        "-g",
        "x:dense",
        "-d",
        "i:40",
        "-d",
        "j:30",
        "--device",
        "cuda",
    ]);
    assert!(!refused.status.success());
    let err = stderr(&refused);
    assert!(err.contains("no CUDA runtime"), "{err}");
}

/// A statement over a semiring runs from the command line and checks against the
/// semiring's reference; what the semiring does not define is underlined.
#[test]
fn min_plus_products_run_and_check_from_the_command_line() {
    let path = shared_matrix("ca-HepTh.mtx");
    let input = format!("A:{}", path.display());
    for format in ["csr", "csc"] {
        let out = ok(&[
            "run",
            "y(i) = A(i,j) * x(j) over (min, +)",
            "-f",
            &format!("A:{format}"),
            "-i",
            &input,
            "-g",
            "x:dense",
            "--check",
        ]);
        assert!(out.contains("check: ok"), "{format}: {out}");
    }
    let err = fails(
        &[
            "run",
            "y(i) = A(i,j) * x(j) - x(i) over (min, +)",
            "-i",
            &input,
            "-g",
            "x:dense",
        ],
        "has no meaning over the semiring (min, +)",
    );
    assert!(err.contains("not an operation of the semiring"), "{err}");
}

/// A user operator defined before the statement, as a semiring's reduction, on a shared
/// graph; a non-associative one refused with its counterexample.
#[test]
fn run_with_a_user_operator() {
    let path = shared_matrix("ca-HepTh.mtx");
    let input = format!("A:{}", path.display());
    let out = ok(&[
        "run",
        "let smaller(a, b) = where(a < b, a, b) identity inf; \
         y(i) = A(i,j) * x(j) over (smaller, +)",
        "-i",
        &input,
        "-g",
        "x:dense",
        "--check",
    ]);
    assert!(out.contains("check: ok"), "{out}");
    let err = fails(
        &[
            "run",
            "let avg(a, b) = (a + b) / 2 identity 0; y(i) = A(i,j) * x(j) over (avg, +)",
            "-i",
            &input,
            "-g",
            "x:dense",
        ],
        "`avg` cannot reduce",
    );
    assert!(err.contains("avg(0, -3) = -1.5"), "{err}");
}

/// With nothing cached, the JIT's code runs at once while gcc compiles: the time printed
/// is the JIT's, said so, and the switch to gcc's code says how long it was waited for.
#[test]
fn the_tiered_backend_says_whose_time_it_reports() {
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sparsec"))
        .args([
            "run",
            "y(i) = A(i,j) * x(j) * 3",
            "-g",
            "A:uniform:0.1",
            "-g",
            "x:dense",
        ])
        .args(["-d", "i:50", "-d", "j:40", "--time", "2"])
        .env("SPARSEC_CACHE_DIR", cache.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("kernel: compiled by the JIT target in ")
            && text.contains(
                "ms, which runs until the C target's code, compiling in the background, is ready"
            ),
        "{text}"
    );
    assert!(
        text.contains("kernel: the C target's code replaces the JIT's for the timed runs ("),
        "{text}"
    );
}

/// `emit --plain` prints the loops without the C target's SIMD versions and prefetches:
/// far shorter, and still a translation unit gcc compiles.
#[test]
fn emit_plain_prints_the_loops_without_the_targets_passes() {
    let args = ["emit", "y(i) = A(i,j) * x(j)", "-f", "A:csr"];
    let full = ok(&args);
    let plain = ok(&[&args[..], &["--plain"]].concat());
    assert!(full.contains("sum_version"), "{full}");
    assert!(!plain.contains("sum_version") && !plain.contains("__builtin_prefetch"));
    let kernel = ok(&[&args[..], &["--plain", "--compute"]].concat());
    assert!(kernel.lines().count() < 120, "{kernel}");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("plain.c");
    std::fs::write(&source, &plain).unwrap();
    let gcc = Command::new("gcc")
        .args(["-fopenmp", "-fsyntax-only"])
        .arg(&source)
        .output()
        .expect("gcc runs");
    assert!(
        gcc.status.success(),
        "{}",
        String::from_utf8_lossy(&gcc.stderr)
    );
}

/// `--fill A:v` gives an input's missing entries the value v (a .spt file brings its own):
/// each row of `A x` adds v times the rest of `x`, and an element-wise sparse result keeps
/// `A`'s entries with its computed fill value.
#[test]
fn run_reads_an_inputs_fill_value() {
    let dir = tempfile::tempdir().unwrap();
    let a_path = dir.path().join("a.mtx");
    std::fs::write(
        &a_path,
        "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 2\n2 3 4\n",
    )
    .unwrap();
    let x_path = dir.path().join("x.mtx");
    std::fs::write(
        &x_path,
        "%%MatrixMarket matrix array real general\n3 1\n1\n10\n100\n",
    )
    .unwrap();
    let (a_arg, x_arg) = (
        format!("A:{}", a_path.display()),
        format!("x:{}", x_path.display()),
    );
    let y_path = dir.path().join("y.mtx");
    let y_arg = format!("y:{}", y_path.display());
    let spmv = [
        "run",
        "y(i) = A(i,j) * x(j)",
        "-i",
        &a_arg,
        "-i",
        &x_arg,
        "--fill",
        "A:0.5",
        "--check",
        "-o",
        &y_arg,
    ];
    assert!(ok(&spmv).contains("check: ok"));
    let y = io::read_any(&y_path).unwrap().into_coo();
    // Rows: 2*1 + 0.5*(10 + 100), 0.5*(1 + 10) + 4*100, 0.5*111.
    assert_eq!(y.values, vec![57.0, 405.5, 55.5]);

    let c_path = dir.path().join("c.spt");
    let c_arg = format!("C:{}", c_path.display());
    ok(&[
        "run",
        "C(i,j) = A(i,j) * 2 + 1",
        "-i",
        &a_arg,
        "--fill",
        "A:0.5",
        "-f",
        "C:csr",
        "-o",
        &c_arg,
    ]);
    let c = io::read_spt(&c_path).unwrap();
    assert_eq!(c.fill(), 2.0);
    assert_eq!(c.to_coo().values, vec![5.0, 9.0]);
    // The .spt file brings its fill value: reading it back needs no --fill, and a
    // different one is refused.
    let from_file = [
        "run",
        "y(i) = C(i,j) * x(j)",
        "-i",
        &c_arg,
        "-i",
        &x_arg,
        "--check",
    ];
    assert!(ok(&from_file).contains("check: ok"));
    let mut conflicting = from_file.to_vec();
    conflicting.extend(["--fill", "C:3"]);
    fails(&conflicting, "records the fill value 2");
    fails(
        &[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-i",
            &a_arg,
            "-i",
            &x_arg,
            "--fill",
            "y:1",
        ],
        "whose fill value is computed",
    );
    fails(
        &[
            "run",
            "y(i) = A(i,j) * x(j)",
            "-i",
            &a_arg,
            "-i",
            &x_arg,
            "--fill",
            "A:one",
        ],
        "is not a number",
    );
}
