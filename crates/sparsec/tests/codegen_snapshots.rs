//! Snapshot tests of the generated C kernels (`Kernel::kernel_source`, without the runtime
//! prelude) for the classic sparse kernels. A change in code generation shows up here as
//! a readable diff; review it and update with `INSTA_UPDATE=always cargo test -p sparsec
//! --test codegen_snapshots` (or `cargo insta review`).

use sparsec::format::Format;
use sparsec::kernel::Kernel;
use sparsec::notation::TensorDecl;

/// A tensor declaration: name, dimensions (empty: from the expression), format.
type Decl<'a> = (&'a str, &'a [usize], &'a str);

fn source(expr: &str, decls: &[Decl]) -> String {
    let decls = decls_of(expr, decls);
    let kernel = Kernel::compile(expr, &decls, &[]).unwrap_or_else(|e| panic!("{expr}: {e}"));
    kernel.kernel_source().to_string()
}

fn decls_of(expr: &str, decls: &[Decl]) -> Vec<TensorDecl> {
    let assignment = sparsec::notation::parse(expr).unwrap();
    decls
        .iter()
        .map(|(name, dims, format)| {
            let order = if dims.is_empty() {
                assignment.lhs.indices.len()
            } else {
                dims.len()
            };
            let mut d = TensorDecl::new(*name).with_format(Format::parse(format, order).unwrap());
            if !dims.is_empty() {
                d = d.with_dims(dims);
            }
            d
        })
        .collect()
}

#[test]
fn spmv_csr() {
    insta::assert_snapshot!(source(
        "y(i) = A(i,j) * x(j)",
        &[("y", &[], "d"), ("A", &[8, 6], "csr"), ("x", &[6], "d")],
    ));
}

#[test]
fn spmm_csr_dense() {
    insta::assert_snapshot!(source(
        "C(i,k) = A(i,j) * B(j,k)",
        &[
            ("C", &[], "dd"),
            ("A", &[8, 6], "csr"),
            ("B", &[6, 4], "dd")
        ],
    ));
}

#[test]
fn spgemm_csr_csr_csr() {
    insta::assert_snapshot!(source(
        "C(i,k) = A(i,j) * B(j,k)",
        &[
            ("C", &[], "csr"),
            ("A", &[8, 6], "csr"),
            ("B", &[6, 5], "csr")
        ],
    ));
}

#[test]
fn add_csr_csr_csr() {
    insta::assert_snapshot!(source(
        "C(i,j) = A(i,j) + B(i,j)",
        &[
            ("C", &[], "csr"),
            ("A", &[8, 6], "csr"),
            ("B", &[8, 6], "csr")
        ],
    ));
}

/// Kernels print the runtime helpers they call, and only those (the snapshots above leave
/// the runtime out).
#[test]
fn kernels_print_only_the_runtime_helpers_they_call() {
    let kernels: [(&str, &[Decl]); 5] = [
        (
            "y(i) = A(i,j) * x(j)",
            &[("y", &[], "d"), ("A", &[8, 6], "csr"), ("x", &[6], "d")],
        ),
        (
            "C(i,k) = A(i,j) * B(j,k)",
            &[
                ("C", &[], "csr"),
                ("A", &[8, 6], "csr"),
                ("B", &[6, 5], "csr"),
            ],
        ),
        (
            "C(i,j) = A(i,j) + B(i,j)",
            &[
                ("C", &[], "csr"),
                ("A", &[8, 6], "csr"),
                ("B", &[8, 6], "csr"),
            ],
        ),
        (
            "y(i) = A(i,j) * B(i,j)",
            &[("y", &[], "d"), ("A", &[8, 6], "csr"), ("B", &[8, 6], "dh")],
        ),
        // A COO output is emitted into growing entry buffers (CSR outputs are placed).
        (
            "C(i,j) = A(i,j) * B(i,j)",
            &[
                ("C", &[], "coo"),
                ("A", &[8, 6], "csr"),
                ("B", &[8, 6], "csr"),
            ],
        ),
    ];
    let helpers = [
        "sparsec_grow",
        "sparsec_order_touched",
        "sparsec_min",
        "sparsec_max",
        "sparsec_hash_locate",
    ];
    let mut called = std::collections::BTreeSet::new();
    for (expr, decls) in kernels {
        let kernel = Kernel::compile(expr, &decls_of(expr, decls), &[]).unwrap();
        let body = kernel.kernel_source();
        let prelude = kernel.source().strip_suffix(body).unwrap();
        // Buffers are freed by the runtime compiled into the library, never by a kernel.
        assert!(prelude.contains("} sparsec_buffer;"), "{expr}");
        assert!(!prelude.contains("sparsec_buffer_free("), "{expr}");
        for helper in helpers {
            let calls = body.contains(&format!("{helper}("));
            let defines = prelude.contains(&format!(" {helper}("));
            assert_eq!(defines, calls, "{expr}: {helper} is defined iff called");
            if calls {
                called.insert(helper);
            }
        }
    }
    // All but `sparsec_max`, which lowering does not generate today.
    assert_eq!(
        called.len(),
        helpers.len() - 1,
        "helpers exercised: {called:?}"
    );
}
