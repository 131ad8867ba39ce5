//! The Cranelift JIT backend against the reference evaluator: every operand format, merges,
//! sparse outputs (emits and ordered touched lists), structured formats, scheduled kernels
//! (whose thread and vector loops it runs serially), `f32` values, empty and tiny tensors,
//! explicit zeros; and its agreement with the C backend, statuses and refusals.

mod common;
use common::*;

use sparsec::jit::Toolchain;
use sparsec::kernel::{lower_with_default_parallelism, Backend, Kernel};
use sparsec::lower;
use sparsec::reference;
use sparsec::schedule::{Concrete, Schedule};
use sparsec::tensor::{Coo, Tensor, ValueType};

/// Compile `expr` (with `schedule`, else the default one) with the JIT backend in
/// `value_type`.
fn jit_kernel(
    expr: &str,
    formats: &[(&str, &str)],
    inputs: &[(&str, Coo)],
    sizes: &[(&str, usize)],
    schedule: Option<&str>,
    value_type: ValueType,
) -> Result<(Kernel, Vec<Tensor>), sparsec::Error> {
    let (stmt, tensors) = statement(expr, formats, inputs, sizes);
    let concrete = Concrete::new(&stmt)?;
    let lowered = match schedule {
        Some(s) => lower::lower(&Schedule::parse(s)?.apply(&concrete)?)?,
        None => lower_with_default_parallelism(&concrete)?,
    };
    let kernel = Kernel::from_lowered(
        stmt,
        lowered,
        value_type,
        &Toolchain::default(),
        Backend::Jit,
    )?;
    assert_eq!(kernel.targets().main().name(), "JIT");
    Ok((kernel, tensors))
}

/// Run `expr` through the JIT (at 1 and 2 threads, which it runs serially alike) and
/// compare with the reference.
fn jit_check(
    expr: &str,
    formats: &[(&str, &str)],
    inputs: &[(&str, Coo)],
    sizes: &[(&str, usize)],
    schedule: Option<&str>,
) -> Tensor {
    let what = format!("{expr} with {formats:?}, schedule {schedule:?}");
    let (mut kernel, tensors) = jit_kernel(expr, formats, inputs, sizes, schedule, ValueType::F64)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    kernel.set_threads(2);
    compare_with_reference(&kernel, kernel.statement(), &tensors, &what);
    kernel.set_threads(1);
    compare_with_reference(&kernel, kernel.statement(), &tensors, &what)
}

fn check(expr: &str, formats: &[(&str, &str)], inputs: &[(&str, Coo)]) -> Tensor {
    jit_check(expr, formats, inputs, &[], None)
}

const SPMV: &str = "y(i) = A(i,j) * x(j)";

#[test]
fn spmv_in_every_matrix_format() {
    let mut r = rng(1);
    let a = random_coo(&mut r, &[13, 11], 0.25);
    let x = random_coo(&mut r, &[11], 1.0);
    let xs = random_coo(&mut r, &[11], 0.5);
    for f in [
        "dd", "csr", "csc", "uq", "dcsr", "dcsc", "dh", "hh", "ds:1,0", "ss:1,0", "db", "bs",
    ] {
        check(SPMV, &[("A", f)], &[("A", a.clone()), ("x", x.clone())]);
        // Sparse vector: a merge (intersection) per row; sparse output: emits.
        check(
            SPMV,
            &[("A", f), ("x", "s"), ("y", "s")],
            &[("A", a.clone()), ("x", xs.clone())],
        );
    }
}

#[test]
fn structured_formats_ell_dia_bcsr() {
    let mut r = rng(2);
    let a = random_coo(&mut r, &[12, 12], 0.2);
    let x = random_coo(&mut r, &[12], 1.0);
    let b = random_coo(&mut r, &[12, 5], 1.0);
    for f in ["ell", "dia", "bcsr:2x2", "bcsr:3x2", "sell:4", "sell:5"] {
        check(SPMV, &[("A", f)], &[("A", a.clone()), ("x", x.clone())]);
        check(
            "C(i,k) = A(i,j) * B(j,k)",
            &[("A", f)],
            &[("A", a.clone()), ("B", b.clone())],
        );
    }
    check(
        "y(j) = -2 * A(i,j) * x(i)",
        &[("A", "dia")],
        &[("A", a), ("x", x)],
    );
}

#[test]
fn spmm_spgemm_and_sparse_outputs() {
    let mut r = rng(3);
    let a = random_coo(&mut r, &[20, 18], 0.15);
    let b = random_coo(&mut r, &[18, 22], 0.15);
    let dense_b = random_coo(&mut r, &[18, 7], 1.0);
    check(
        "C(i,k) = A(i,j) * B(j,k)",
        &[("A", "csr")],
        &[("A", a.clone()), ("B", dense_b)],
    );
    for out in ["csr", "dcsr", "dd"] {
        check(
            "C(i,k) = A(i,j) * B(j,k)",
            &[("A", "csr"), ("B", "csr"), ("C", out)],
            &[("A", a.clone()), ("B", b.clone())],
        );
    }
    // Rows wide enough that the touched lists are sorted rather than scanned.
    let wide_a = random_coo(&mut r, &[6, 40], 0.3);
    let wide_b = random_coo(&mut r, &[40, 3000], 0.01);
    check(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[("A", wide_a), ("B", wide_b)],
    );
    check(
        "B(j,i) = A(i,j)",
        &[("A", "csr"), ("B", "csr")],
        &[("A", a.clone())],
    );
    check(
        "s = A(i,j) * B(i,j)",
        &[("A", "csr"), ("B", "dcsr")],
        &[("A", a.clone()), ("B", random_coo(&mut r, &[20, 18], 0.3))],
    );
}

#[test]
fn merges_add_sub_and_elementwise_with_constants() {
    let mut r = rng(4);
    let b = random_coo(&mut r, &[9, 8], 0.3);
    let c = random_coo(&mut r, &[9, 8], 0.3);
    let formats = ["dd", "csr", "dcsr", "csc", "hh"];
    for (n, f) in formats.iter().enumerate() {
        let g = formats[(n + 2) % formats.len()];
        let out = ["dd", "csr", "dcsr"][n % 3];
        for op in ["+", "-", "*"] {
            check(
                &format!("A(i,j) = B(i,j) {op} C(i,j)"),
                &[("B", f), ("C", g), ("A", out)],
                &[("B", b.clone()), ("C", c.clone())],
            );
        }
    }
    check(
        "B(i,j) = 2 * A(i,j) + -C(i,j) / 4",
        &[("A", "csr"), ("C", "csr"), ("B", "csr")],
        &[("A", b.clone()), ("C", c.clone())],
    );
    let nonzero = Coo::new(
        vec![8],
        (0..8).collect(),
        (1..=8).map(|v| v as f64).collect(),
    );
    check(
        "Y(i,j) = A(i,j) / e(j) + 1",
        &[("A", "csr")],
        &[("A", b.clone()), ("e", nonzero.unwrap())],
    );
    check(
        "y(i) = A(i,j) - b(i)",
        &[("A", "dcsr"), ("y", "s")],
        &[("A", b), ("b", random_coo(&mut r, &[9], 0.5))],
    );
}

#[test]
fn tensor_kernels_mttkrp_ttv_sddmm() {
    let mut r = rng(5);
    let t = random_coo(&mut r, &[6, 5, 7], 0.15);
    let c = random_coo(&mut r, &[5, 4], 1.0);
    let d = random_coo(&mut r, &[7, 4], 1.0);
    for f in ["sss", "dss", "ucq", "hhh"] {
        check(
            "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
            &[("B", f)],
            &[("B", t.clone()), ("C", c.clone()), ("D", d.clone())],
        );
        check(
            "A(i,j) = B(i,j,k) * c(k)",
            &[("B", f), ("A", "csr")],
            &[("B", t.clone()), ("c", random_coo(&mut r, &[7], 1.0))],
        );
    }
    check(
        "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
        &[("A", "csr"), ("B", "csr")],
        &[
            ("B", random_coo(&mut r, &[15, 12], 0.2)),
            ("C", random_coo(&mut r, &[15, 4], 1.0)),
            ("D", random_coo(&mut r, &[4, 12], 1.0)),
        ],
    );
}

#[test]
fn scheduled_kernels_run_serially() {
    let mut r = rng(6);
    let a = random_coo(&mut r, &[70, 33], 0.1);
    let x = random_coo(&mut r, &[33], 1.0);
    let spmv = [("A", a.clone()), ("x", x)];
    for schedule in [
        "split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)",
        "split(i,i0,i1,7)",
        "split(j,j0,j1,4)",
        "divide(i,i0,i1,3),parallelize(i0,CPUThread,NoRaces,static,1)",
        "pos(j,jp,A(i,j)),split(jp,jp0,jp1,4),parallelize(i,CPUThread,NoRaces)",
        "fuse(i,j,f),pos(f,p,A(i,j)),split(p,p0,p1,16),parallelize(p0,CPUThread,Atomics)",
        "fuse(i,j,f),pos(f,p,A(i,j)),divide(p,p0,p1,3),parallelize(p0,CPUThread,Temporary)",
    ] {
        jit_check(SPMV, &[("A", "csr")], &spmv, &[], Some(schedule));
    }
    let spmm = [("A", a.clone()), ("B", random_coo(&mut r, &[33, 9], 1.0))];
    for schedule in [
        "split(i,i0,i1,8),pos(j,jpos,A(i,j)),split(jpos,jpos0,jpos1,8),\
         order(i0,i1,jpos0,k,jpos1),parallelize(i0,CPUThread,NoRaces),\
         parallelize(k,CPUVector,IgnoreRaces)",
        "bound(k,kb,MaxExact,9),unroll(kb,9),parallelize(i,CPUThread,NoRaces,static,4)",
        "split(k,k0,k1,4),parallelize(k1,CPUVector,NoRaces)",
    ] {
        jit_check(
            "C(i,k) = A(i,j) * B(j,k)",
            &[("A", "csr")],
            &spmm,
            &[],
            Some(schedule),
        );
    }
    jit_check(
        "y(j) = A(i,j) * x(i)",
        &[("A", "csr")],
        &[("A", a), ("x", random_coo(&mut r, &[70], 1.0))],
        &[],
        Some("parallelize(i,CPUThread,Atomics)"),
    );
    let mttkrp = [
        ("B", random_coo(&mut r, &[5, 5, 5], 0.08)),
        ("C", random_coo(&mut r, &[5, 6], 1.0)),
        ("D", random_coo(&mut r, &[5, 6], 1.0)),
    ];
    jit_check(
        "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
        &[("B", "dss")],
        &mttkrp,
        &[],
        Some(
            "order(i,k,l,j),precompute(B(i,k,l)*D(l,j),j,j,w),split(i,i1,i2,4),\
             parallelize(i1,CPUThread,NoRaces)",
        ),
    );
    let spgemm = [
        ("A", random_coo(&mut r, &[40, 30], 0.15)),
        ("B", random_coo(&mut r, &[30, 35], 0.1)),
    ];
    for out in ["csr", "dcsr"] {
        jit_check(
            "C(i,j) = A(i,k) * B(k,j)",
            &[("A", "csr"), ("B", "csr"), ("C", out)],
            &spgemm,
            &[],
            Some("precompute(A(i,k)*B(k,j),j,j,w),parallelize(i,CPUThread,NoRaces)"),
        );
    }
}

/// A statement, its formats and its inputs.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Vec<(&'a str, Coo)>);

#[test]
fn f32_values() {
    let mut r = rng(7);
    let a = random_coo(&mut r, &[16, 14], 0.2);
    let b = random_coo(&mut r, &[14, 12], 0.2);
    let x = random_coo(&mut r, &[14], 1.0);
    let cases: [Case; 3] = [
        (SPMV, &[("A", "csr")], vec![("A", a.clone()), ("x", x)]),
        (
            "C(i,j) = A(i,k) * B(k,j)",
            &[("A", "csr"), ("B", "csr"), ("C", "csr")],
            vec![("A", a.clone()), ("B", b)],
        ),
        (
            "B(i,j) = 2 * A(i,j) + A(i,j) / 4",
            &[("A", "csr"), ("B", "csr")],
            vec![("A", a)],
        ),
    ];
    for (expr, formats, inputs) in cases {
        let (kernel, tensors) = jit_kernel(expr, formats, &inputs, &[], None, ValueType::F32)
            .unwrap_or_else(|e| panic!("{expr}: {e}"));
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let got = kernel.run(&refs).unwrap();
        assert_eq!(got.value_type(), ValueType::F32, "{expr}");
        let expected = reference::evaluate(kernel.statement(), &refs, None);
        let diff = got.max_difference(&expected).expect("same shape");
        assert!(
            diff <= 1e-4,
            "{expr} in f32 differs from reference by {diff}"
        );
    }
}

#[test]
fn empty_tiny_and_explicit_zeros() {
    let mut r = rng(8);
    for f in ["csr", "dcsr", "uq", "hh", "ell", "dia", "bcsr:2x2"] {
        check(
            SPMV,
            &[("A", f)],
            &[
                ("A", Coo::empty(vec![6, 4])),
                ("x", random_coo(&mut r, &[4], 1.0)),
            ],
        );
        let one = Coo::new(vec![1, 1], vec![0, 0], vec![3.5]).unwrap();
        check(
            SPMV,
            &[("A", f)],
            &[
                ("A", one),
                ("x", Coo::new(vec![1], vec![0], vec![2.0]).unwrap()),
            ],
        );
    }
    check(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[("A", Coo::empty(vec![5, 5])), ("B", Coo::empty(vec![5, 5]))],
    );
    // Explicit zeros are stored and emitted: the output keeps them.
    let zeros = Coo::new(vec![3, 3], vec![0, 1, 2, 2], vec![0.0, 0.0]).unwrap();
    let got = check(
        "B(i,j) = A(i,j) * 2",
        &[("A", "csr"), ("B", "csr")],
        &[("A", zeros)],
    );
    assert_eq!(got.stored_values(), 2);
}

#[test]
fn agrees_with_the_c_backend_and_switches_backends() {
    let mut r = rng(9);
    let inputs = [
        ("A", random_coo(&mut r, &[30, 25], 0.1)),
        ("B", random_coo(&mut r, &[25, 28], 0.1)),
    ];
    let (stmt, tensors) = statement(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &inputs,
        &[],
    );
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let c = Kernel::from_statement(stmt, ValueType::F64, &Toolchain::default()).unwrap();
    assert_eq!(c.targets().main().name(), "C");
    let from_c = c.run(&refs).unwrap().to_coo();
    let jit = c.with_backend(Backend::Jit).unwrap();
    assert_eq!(jit.targets().main().name(), "JIT");
    let from_jit = jit.run(&refs).unwrap().to_coo();
    assert_eq!(from_c.coords, from_jit.coords);
    // The same operations in the same order; gcc may fuse multiply-adds (one rounding).
    let close = |a: &[f64], b: &[f64]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-12 * x.abs().max(1.0))
    };
    assert!(close(&from_c.values, &from_jit.values));
    let back = jit.with_backend(Backend::C).unwrap();
    assert_eq!(back.targets().main().name(), "C");
    assert_eq!(back.run(&refs).unwrap().to_coo().values, from_c.values);
}

#[test]
fn assumptions_recompute_and_refusals() {
    let mut r = rng(10);
    let spmm = [
        ("A", random_coo(&mut r, &[10, 8], 0.3)),
        ("B", random_coo(&mut r, &[8, 5], 1.0)),
    ];
    let (kernel, tensors) = jit_kernel(
        "C(i,k) = A(i,j) * B(j,k)",
        &[("A", "csr")],
        &spmm,
        &[],
        Some("bound(k,kb,MaxExact,32)"),
        ValueType::F64,
    )
    .unwrap();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let message = kernel.run(&refs).unwrap_err().to_string();
    assert!(message.contains("exactly 32 iterations"), "{message}");

    let refused = jit_kernel(
        SPMV,
        &[("A", "csr")],
        &[
            ("A", spmm[0].1.clone()),
            ("x", random_coo(&mut r, &[8], 1.0)),
        ],
        &[],
        Some("split(i,i0,i1,4),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUThread,NoRaces)"),
        ValueType::F64,
    )
    .err()
    .expect("GPU loops are refused")
    .to_string();
    assert!(
        refused.contains("JIT backend") && refused.contains("needs a GPU target"),
        "{refused}"
    );

    // Assemble once, recompute the values of the same structure.
    let add = [
        ("A", random_coo(&mut r, &[12, 9], 0.3)),
        ("B", random_coo(&mut r, &[12, 9], 0.3)),
    ];
    let formats = [("A", "csr"), ("B", "csr"), ("C", "csr")];
    let (kernel, mut tensors) = jit_kernel(
        "C(i,j) = A(i,j) + B(i,j)",
        &formats,
        &add,
        &[],
        None,
        ValueType::F64,
    )
    .unwrap();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let mut out = kernel.assemble(&refs, None).unwrap();
    tensors[1].values_mut().set(0, 100.0);
    let refs: Vec<&Tensor> = tensors.iter().collect();
    kernel.compute(&refs, None, &mut out).unwrap();
    let expected = reference::evaluate(kernel.statement(), &refs, None);
    assert!(out.tensor().max_difference(&expected).unwrap() <= 1e-9);
}

/// A tiered kernel with an empty cache runs the JIT's code at once, then the C compiler's
/// once its background compilation finishes; both give the reference's values, and a
/// second tiered kernel of the same statement starts on the cached C code.
#[test]
fn tiered_kernels_start_on_the_jit_and_switch_to_c() {
    let mut r = rng(70);
    let a = random_coo(&mut r, &[40, 30], 0.2);
    let x = random_coo(&mut r, &[30], 1.0);
    let (stmt, tensors) = statement(SPMV, &[("A", "dcsr")], &[("A", a), ("x", x)], &[]);
    let cache = tempfile::tempdir().unwrap();
    let toolchain = Toolchain {
        cache_dir: cache.path().to_path_buf(),
        ..Toolchain::default()
    };
    let lowered = || lower_with_default_parallelism(&Concrete::new(&stmt).unwrap()).unwrap();
    let tiered = |toolchain: &Toolchain| {
        Kernel::from_lowered(
            stmt.clone(),
            lowered(),
            ValueType::F64,
            toolchain,
            Backend::Tiered,
        )
        .unwrap()
    };
    let kernel = tiered(&toolchain);
    assert_eq!(kernel.targets().quick().map(|t| t.name()), Some("JIT"));
    // The compilation takes far longer than building the JIT's code: it cannot be done.
    assert_eq!(kernel.running_target(), "JIT");
    compare_with_reference(&kernel, &stmt, &tensors, "tiered, JIT tier");
    kernel.finish_compiling().unwrap();
    assert_eq!(kernel.running_target(), "C");
    assert!(kernel.was_compiled());
    compare_with_reference(&kernel, &stmt, &tensors, "tiered, C tier");
    let again = tiered(&toolchain);
    assert_eq!(again.running_target(), "C");
    assert!(!again.was_compiled());
    compare_with_reference(&again, &stmt, &tensors, "tiered, cached");
}

/// Without a working C compiler a tiered kernel keeps running the JIT's code, and says why
/// the C compiler's could not replace it.
#[test]
fn tiered_kernels_survive_a_missing_compiler() {
    let mut r = rng(71);
    let a = random_coo(&mut r, &[20, 20], 0.2);
    let x = random_coo(&mut r, &[20], 1.0);
    let (stmt, tensors) = statement(SPMV, &[("A", "csr")], &[("A", a), ("x", x)], &[]);
    let cache = tempfile::tempdir().unwrap();
    let toolchain = Toolchain {
        compiler: "/nonexistent/sparsec-test-cc".into(),
        cache_dir: cache.path().to_path_buf(),
        ..Toolchain::default()
    };
    let lowered = lower_with_default_parallelism(&Concrete::new(&stmt).unwrap()).unwrap();
    let kernel = Kernel::from_lowered(
        stmt.clone(),
        lowered,
        ValueType::F64,
        &toolchain,
        Backend::Tiered,
    )
    .unwrap();
    compare_with_reference(&kernel, &stmt, &tensors, "tiered without cc");
    let err = kernel.finish_compiling().unwrap_err().to_string();
    assert!(err.contains("sparsec-test-cc"), "{err}");
    assert_eq!(kernel.running_target(), "JIT");
    compare_with_reference(&kernel, &stmt, &tensors, "tiered without cc, after");
}

/// Diagonal accesses through the JIT: searched levels, their guards and the guarded load.
#[test]
fn diagonal_accesses() {
    let mut r = rng(41);
    for (n, d) in [(6, 0.4), (1, 1.0), (4, 0.0)] {
        let a = random_coo(&mut r, &[n, n], d);
        let x = random_coo(&mut r, &[n], 0.6);
        let t = random_coo(&mut r, &[n, n, n], d);
        for f in ["csr", "coo", "dcsc", "hash", "ell"] {
            check(
                "y(i) = A(i,i) * x(i) + x(i)",
                &[("A", f)],
                &[("A", a.clone()), ("x", x.clone())],
            );
        }
        for f in ["sss", "coo", "dsd"] {
            check("z = T(i,i,i)", &[("T", f)], &[("T", t.clone())]);
        }
    }
}

/// Math functions through the JIT: instructions (sqrt, fabs, floor, ceil) and calls into
/// the C library (exp, log, sin, cos, tan, pow), on sparse and dense operands.
#[test]
fn math_functions() {
    let mut r = rng(43);
    let a = random_coo(&mut r, &[6, 5], 0.4);
    let b = random_coo(&mut r, &[6, 5], 0.6);
    for f in ["csr", "dd"] {
        check(
            "C(i,j) = sqrt(abs(A(i,j))) + floor(A(i,j)) * ceil(B(i,j))",
            &[("A", f), ("B", "csr")],
            &[("A", a.clone()), ("B", b.clone())],
        );
        check(
            "C(i,j) = exp(A(i,j)) - log(abs(B(i,j)) + 2) + sin(A(i,j)) * cos(B(i,j))",
            &[("A", f), ("B", "csr")],
            &[("A", a.clone()), ("B", b.clone())],
        );
        check(
            "C(i,j) = where(A(i,j) >= B(i,j), A(i,j), -B(i,j)) + (A(i,j) != 0) - (B(i,j) == 0)",
            &[("A", f), ("B", "csr")],
            &[("A", a.clone()), ("B", b.clone())],
        );
        check(
            "C(i,j) = (A(i,j) > B(i,j)) * 2 + (A(i,j) < 0)",
            &[("A", f), ("B", "csr"), ("C", "csr")],
            &[("A", a.clone()), ("B", b.clone())],
        );
        check(
            "C(i,j) = max(A(i,j), 0) + min(A(i,j), B(i,j))",
            &[("A", f), ("B", "csr"), ("C", "csr")],
            &[("A", a.clone()), ("B", b.clone())],
        );
        check(
            "C(i,j) = tan(A(i,j)) * pow(abs(B(i,j)), 2.5)",
            &[("A", f), ("B", "csr"), ("C", "csr")],
            &[("A", a.clone()), ("B", b.clone())],
        );
    }
}

/// Masked products through the JIT.
#[test]
fn masks() {
    let mut r = rng(44);
    let inputs = [
        ("A", random_coo(&mut r, &[7, 7], 0.3)),
        ("B", random_coo(&mut r, &[7, 7], 0.3)),
        ("M", random_coo(&mut r, &[7, 7], 0.4)),
    ];
    for text in [
        "C<M>(i,j) = A(i,k) * B(k,j)",
        "C<pattern(M)>(i,j) = A(i,k) * B(k,j)",
        "C<!M>(i,j) = A(i,j) + B(i,j)",
    ] {
        check(
            text,
            &[("A", "csr"), ("B", "csr"), ("M", "csr"), ("C", "csr")],
            &inputs,
        );
    }
}
