//! Snapshot tests of the generated C kernels (`Kernel::kernel_source`, without the runtime
//! prelude) for the classic sparse kernels. A change in code generation shows up here as
//! a readable diff; review it and update with `INSTA_UPDATE=always cargo test -p sparsec
//! --test codegen_snapshots` (or `cargo insta review`).

use sparsec::format::Format;
use sparsec::kernel::Kernel;
use sparsec::notation::TensorDecl;

fn source(expr: &str, decls: &[(&str, &[usize], &str)]) -> String {
    let assignment = sparsec::notation::parse(expr).unwrap();
    let decls: Vec<TensorDecl> = decls
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
        .collect();
    let kernel = Kernel::compile(expr, &decls, &[]).unwrap_or_else(|e| panic!("{expr}: {e}"));
    kernel.kernel_source().to_string()
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
