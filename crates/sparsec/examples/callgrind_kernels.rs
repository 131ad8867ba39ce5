//! One generated kernel on fixed inputs, run once, for counting its instructions under
//! callgrind (`bench/callgrind_guard.py` runs it and compares the counts with the
//! baseline kept in `bench/callgrind_baseline.json`).
//!
//! ```text
//! cargo build --release -p sparsec --example callgrind_kernels
//! valgrind --tool=callgrind --toggle-collect=sparsec_kernel \
//!     target/release/examples/callgrind_kernels spmv
//! callgrind_kernels --list     # the kernels' names
//! ```
//!
//! Inputs come from `sparsec::generate` with fixed seeds, so every run counts the same
//! work. Besides index notation's kernels, four `.spf` programs run: the serial and the
//! level-set forward substitution, a Gauss-Seidel sweep and ILU(0). The kernel is compiled (or loaded from the kernel cache) and its inputs packed
//! before it runs, on one thread, with the default schedule; only `sparsec_kernel` (and
//! what it calls) is counted, not the assembly of a sparse output in Rust.

use sparsec::format::Format;
use sparsec::generate;
use sparsec::kernel::Kernel;
use sparsec::notation::TensorDecl;
use sparsec::spf::SpfKernel;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// Name, statement, formats by tensor (output first), and the inputs' coordinates.
struct Case {
    name: &'static str,
    expr: &'static str,
    formats: &'static [(&'static str, &'static str)],
    inputs: fn() -> Vec<Coo>,
}

const CASES: &[Case] = &[
    Case {
        name: "spmv",
        expr: "y(i) = A(i,j) * x(j)",
        formats: &[("y", "d"), ("A", "csr"), ("x", "d")],
        inputs: || {
            vec![
                generate::uniform(&[20_000, 20_000], 5e-4, 1).unwrap(),
                vector(20_000),
            ]
        },
    },
    Case {
        name: "spmv_powerlaw",
        expr: "y(i) = A(i,j) * x(j)",
        formats: &[("y", "d"), ("A", "csr"), ("x", "d")],
        inputs: || {
            vec![
                generate::power_law(&[20_000, 20_000], 200_000, 1.0, 2).unwrap(),
                vector(20_000),
            ]
        },
    },
    Case {
        // 40 entries a row and `x` in cache: the lanes filled from scalar loads.
        name: "spmv_long_rows",
        expr: "y(i) = A(i,j) * x(j)",
        formats: &[("y", "d"), ("A", "csr"), ("x", "d")],
        inputs: || {
            vec![
                generate::uniform(&[5_000, 5_000], 8e-3, 12).unwrap(),
                vector(5_000),
            ]
        },
    },
    Case {
        name: "spmm",
        expr: "C(i,k) = A(i,j) * B(j,k)",
        formats: &[("C", "dd"), ("A", "csr"), ("B", "dd")],
        inputs: || {
            vec![
                generate::uniform(&[5_000, 5_000], 2e-3, 3).unwrap(),
                generate::dense(&[5_000, 32], 4).unwrap(),
            ]
        },
    },
    Case {
        name: "spgemm",
        expr: "C(i,j) = A(i,k) * B(k,j)",
        formats: &[("C", "csr"), ("A", "csr"), ("B", "csr")],
        inputs: || {
            vec![
                generate::uniform(&[5_000, 5_000], 1e-3, 5).unwrap(),
                generate::uniform(&[5_000, 5_000], 1e-3, 6).unwrap(),
            ]
        },
    },
    Case {
        // Small (5,000 entries): the fixed costs of a sparse output (issue 59: 2.5x MKL's
        // time on a 5.4k-entry matrix).
        name: "spgemm_small",
        expr: "C(i,j) = A(i,k) * B(k,j)",
        formats: &[("C", "csr"), ("A", "csr"), ("B", "csr")],
        inputs: || {
            vec![
                generate::uniform(&[1_000, 1_000], 5e-3, 14).unwrap(),
                generate::uniform(&[1_000, 1_000], 5e-3, 15).unwrap(),
            ]
        },
    },
    Case {
        name: "mttkrp",
        expr: "A(i,r) = T(i,j,k) * B(j,r) * C(k,r)",
        formats: &[("A", "dd"), ("T", "sss"), ("B", "dd"), ("C", "dd")],
        inputs: || {
            vec![
                generate::uniform(&[200, 200, 200], 1e-2, 7).unwrap(),
                generate::dense(&[200, 16], 8).unwrap(),
                generate::dense(&[200, 16], 9).unwrap(),
            ]
        },
    },
    Case {
        // A short outer mode (7 coordinates) over 43k entries, as the `sss` tensor whose
        // MTTKRP took 1.8x its earlier time (issue 59): the outer loop's work estimate and
        // the sum versions' choice on few, long fibers.
        name: "mttkrp_short_mode",
        expr: "A(i,r) = T(i,j,k) * B(j,r) * C(k,r)",
        formats: &[("A", "dd"), ("T", "sss"), ("B", "dd"), ("C", "dd")],
        inputs: || {
            vec![
                generate::uniform(&[7, 8_000, 8_000], 9.6e-5, 16).unwrap(),
                generate::dense(&[8_000, 16], 17).unwrap(),
                generate::dense(&[8_000, 16], 18).unwrap(),
            ]
        },
    },
    Case {
        name: "ttv",
        expr: "Y(i,j) = T(i,j,k) * v(k)",
        formats: &[("Y", "dd"), ("T", "sss"), ("v", "d")],
        inputs: || {
            vec![
                generate::uniform(&[200, 200, 200], 1e-2, 10).unwrap(),
                vector(200),
            ]
        },
    },
];

fn vector(n: usize) -> Coo {
    generate::dense(&[n], 11).unwrap()
}

/// Programs of the sparse polyhedral front end (`examples/spf`), on one generated matrix
/// (20k x 20k, 10 entries a row): name, file, and the inputs it reads, of `L` (the
/// matrix's lower triangle with a dominant diagonal), `A` (the matrix with a dominant
/// diagonal), `b` and `x0`. The level-set kernel's run counts its inspector too (a first
/// call inspects).
const SPF_CASES: &[(&str, &str, &[&str])] = &[
    ("spf_lower_solve", "lower_solve.spf", &["L", "b"]),
    ("spf_level_sets", "lower_solve_wavefront.spf", &["L", "b"]),
    ("spf_gauss_seidel", "gauss_seidel.spf", &["A", "b", "x0"]),
    ("spf_ilu0", "ilu0.spf", &["A"]),
];

/// Run the SPF program `file` once on one thread on the inputs named `reads`; prints a
/// checksum of its result.
fn run_spf(name: &str, file: &str, reads: &[&str]) {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/../../examples/spf/{file}");
    let text = std::fs::read_to_string(&path).expect("the example program");
    let toolchain = sparsec::jit::Toolchain::default();
    let mut kernel = SpfKernel::compile(file, &text, &toolchain).expect("compile");
    kernel.set_threads(1);
    let uniform = generate::uniform(&[20_000, 20_000], 5e-4, 13).expect("a matrix");
    let csr = Format::parse("csr", 2).expect("format");
    let pack =
        |coo: &Coo, format: &Format| Tensor::from_coo(coo, format, ValueType::F64).expect("pack");
    let lower = generate::dominant_lower_triangle(&uniform).expect("a lower triangle");
    let whole = generate::dominant(&uniform).expect("a dominant matrix");
    let vector = pack(&vector(uniform.dims[0]), &Format::dense(1));
    let tensors = [
        ("L", pack(&lower, &csr)),
        ("A", pack(&whole, &csr)),
        ("b", vector.clone()),
        ("x0", vector),
    ];
    let inputs: Vec<(&str, &Tensor)> = tensors
        .iter()
        .filter(|(n, _)| reads.contains(n))
        .map(|(n, t)| (*n, t))
        .collect();
    let x = kernel.run(&inputs).expect("run");
    let mut checksum = 0.0;
    x.for_each_stored(|_, v| checksum += v);
    println!("{name} checksum {checksum:.9e}");
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    if name == "--list" {
        CASES.iter().for_each(|c| println!("{}", c.name));
        SPF_CASES.iter().for_each(|(name, ..)| println!("{name}"));
        return;
    }
    if let Some(&(name, file, reads)) = SPF_CASES.iter().find(|(n, ..)| *n == name) {
        return run_spf(name, file, reads);
    }
    let Some(case) = CASES.iter().find(|c| c.name == name) else {
        eprintln!("usage: callgrind_kernels NAME|--list");
        std::process::exit(2);
    };
    let coos = (case.inputs)();
    let assignment = sparsec::notation::parse(case.expr).expect("statement");
    let mut decls = vec![TensorDecl::new(case.formats[0].0).with_format(
        Format::parse(case.formats[0].1, assignment.lhs.indices.len()).expect("format"),
    )];
    let mut inputs = Vec::new();
    for ((tensor, format), coo) in case.formats[1..].iter().zip(&coos) {
        let format = Format::parse(format, coo.order()).expect("format");
        decls.push(
            TensorDecl::new(*tensor)
                .with_format(format.clone())
                .with_dims(&coo.dims),
        );
        inputs.push(Tensor::from_coo(coo, &format, ValueType::F64).expect("pack"));
    }
    let mut kernel = Kernel::compile(case.expr, &decls, &[]).expect("compile");
    kernel.set_threads(1);
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let out = kernel.run(&refs).expect("run");
    let mut checksum = 0.0;
    out.for_each_stored(|_, v| checksum += v);
    println!(
        "{} stored {} checksum {checksum:.9e}",
        case.name,
        out.stored_values()
    );
}
