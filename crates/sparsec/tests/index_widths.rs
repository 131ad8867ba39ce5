//! Index arrays are `int32_t` when every index of a tensor fits and `int64_t` otherwise or
//! when asked: differential tests of the main kernels with inputs of both widths (and a
//! mix), on both backends, at 1 and 2 threads, on random, skewed and empty inputs; and the
//! storage paths (reading back, `.spt`) for both widths.

mod common;
use common::*;

use sparsec::format::Format;
use sparsec::io;
use sparsec::kernel::{Backend, Kernel};
use sparsec::notation::TensorDecl;
use sparsec::tensor::{Coo, IndexWidth, Tensor, ValueType};

/// How the test stores the inputs' index arrays.
#[derive(Clone, Copy, Debug)]
enum Widths {
    /// As packing chooses: `int32_t`, since every index fits.
    Narrowest,
    /// Every input kept at `int64_t`.
    Wide,
    /// The first input at `int64_t`, the others `int32_t`.
    Mixed,
}

impl Widths {
    fn apply(self, tensors: Vec<Tensor>) -> Vec<Tensor> {
        tensors
            .into_iter()
            .enumerate()
            .map(|(n, t)| match (self, n) {
                (Widths::Narrowest, _) | (Widths::Mixed, 1..) => t,
                (Widths::Wide, _) | (Widths::Mixed, 0) => {
                    t.with_index_width(IndexWidth::I64).unwrap()
                }
            })
            .collect()
    }
}

/// A matrix whose rows hold `lengths[i % lengths.len()]` entries (0 gives empty rows).
fn rows_of_lengths(rows: usize, cols: usize, lengths: &[usize]) -> Coo {
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for i in 0..rows {
        for k in 0..lengths[i % lengths.len()].min(cols) {
            coords.extend([i as i64, ((k * 7 + i) % cols) as i64]);
            values.push(1.0 + (i * 31 + k) as f64 % 5.0);
        }
    }
    Coo::new(vec![rows, cols], coords, values).unwrap()
}

/// Compile `expr` once per backend and compare it with the reference on every input set,
/// with the inputs stored at every [`Widths`], at 1 and 2 threads (the C backend's
/// balanced loops split even small inputs).
fn check_widths(expr: &str, formats: &[(&str, &str)], input_sets: &[Vec<(&str, Coo)>]) {
    let (stmt, _) = statement(expr, formats, &input_sets[0], &[]);
    for backend in [Backend::C, Backend::Jit] {
        let mut kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &split_toolchain())
            .and_then(|k| k.with_backend(backend))
            .unwrap_or_else(|e| panic!("{expr}: {e}"));
        // The main code reads every narrowable index array as `int32_t`.
        assert!(
            kernel
                .index_widths()
                .iter()
                .all(|(_, w)| *w == IndexWidth::I32),
            "{expr}: {:?}",
            kernel.index_widths()
        );
        if !kernel.index_widths().is_empty() && backend == Backend::C {
            assert!(kernel.kernel_source().contains("const int32_t *restrict"));
        }
        for inputs in input_sets {
            let (stmt, tensors) = statement(expr, formats, inputs, &[]);
            for widths in [Widths::Narrowest, Widths::Wide, Widths::Mixed] {
                let tensors = widths.apply(tensors.clone());
                for threads in [1, 2] {
                    kernel.set_threads(threads);
                    let what = format!(
                        "{expr} with {formats:?}, {backend:?}, {widths:?}, {threads} threads"
                    );
                    compare_with_reference(&kernel, &stmt, &tensors, &what);
                }
            }
        }
    }
}

#[test]
fn spmv_and_spmm_read_both_widths() {
    let mut r = rng(11);
    let matrices = [
        random_coo(&mut r, &[40, 30], 0.1),
        rows_of_lengths(50, 40, &[0, 0, 1, 40, 0, 3]),
        Coo::empty(vec![20, 30]),
    ];
    for a in &matrices {
        let (rows, cols) = (a.dims[0], a.dims[1]);
        let x = random_coo(&mut r, &[cols], 1.0);
        let b = random_coo(&mut r, &[cols, 5], 1.0);
        check_widths(
            "y(i) = A(i,j) * x(j)",
            &[("A", "csr")],
            &[vec![("A", a.clone()), ("x", x)]],
        );
        check_widths(
            "C(i,k) = A(i,j) * B(j,k)",
            &[("A", "csr")],
            &[vec![("A", a.clone()), ("B", b)]],
        );
        assert!(rows > 0);
    }
}

#[test]
fn spgemm_and_sparse_add_read_both_widths() {
    let mut r = rng(12);
    let a = random_coo(&mut r, &[30, 25], 0.1);
    let skewed = rows_of_lengths(30, 25, &[0, 25, 0, 0, 2]);
    let b = random_coo(&mut r, &[25, 20], 0.15);
    let a2 = random_coo(&mut r, &[30, 25], 0.12);
    check_widths(
        "C(i,k) = A(i,j) * B(j,k)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[
            vec![("A", a.clone()), ("B", b.clone())],
            vec![("A", skewed.clone()), ("B", b)],
            vec![
                ("A", Coo::empty(vec![30, 25])),
                ("B", Coo::empty(vec![25, 20])),
            ],
        ],
    );
    check_widths(
        "C(i,j) = A(i,j) + B(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[
            vec![("A", a.clone()), ("B", a2)],
            vec![("A", skewed), ("B", a)],
            vec![
                ("A", Coo::empty(vec![30, 25])),
                ("B", Coo::empty(vec![30, 25])),
            ],
        ],
    );
}

#[test]
fn mttkrp_and_ttv_read_both_widths() {
    let mut r = rng(13);
    let b = random_coo(&mut r, &[9, 7, 6], 0.08);
    let c = random_coo(&mut r, &[7, 4], 1.0);
    let d = random_coo(&mut r, &[6, 4], 1.0);
    let v = random_coo(&mut r, &[6], 1.0);
    check_widths(
        "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
        &[("B", "sss")],
        &[
            vec![("B", b.clone()), ("C", c.clone()), ("D", d.clone())],
            vec![("B", Coo::empty(vec![9, 7, 6])), ("C", c), ("D", d)],
        ],
    );
    check_widths(
        "A(i,j) = B(i,j,k) * v(k)",
        &[("B", "sss"), ("A", "csr")],
        &[vec![("B", b), ("v", v)]],
    );
}

/// Coordinates beyond `int32_t` keep a tensor at 64 bits, and kernels read it so.
#[test]
fn coordinates_beyond_32_bits_stay_64_bit() {
    let n = (i32::MAX as usize) * 2;
    let big = n as i64 - 1;
    let sparse_vec = Format::parse("s", 1).unwrap();
    let a = Coo::new(vec![n], vec![3, big, 1 << 31], vec![2.0, 3.0, 5.0]).unwrap();
    let b = Coo::new(vec![n], vec![big, 3, 7], vec![7.0, 11.0, 13.0]).unwrap();
    let a = Tensor::from_coo(&a, &sparse_vec, ValueType::F64).unwrap();
    let b = Tensor::from_coo(&b, &sparse_vec, ValueType::F64).unwrap();
    assert_eq!(a.index_width(), IndexWidth::I64);
    assert_eq!(b.index_width(), IndexWidth::I64);
    assert!(a.clone().with_index_width(IndexWidth::I32).is_err());
    assert_eq!(
        a.to_coo().coords,
        vec![3, 1 << 31, big],
        "read back in order"
    );
    let decls = [
        TensorDecl::new("s"),
        TensorDecl::new("a")
            .with_dims(&[n])
            .with_format(sparse_vec.clone()),
        TensorDecl::new("b").with_dims(&[n]).with_format(sparse_vec),
    ];
    for backend in [Backend::C, Backend::Jit] {
        let kernel = Kernel::compile("s = a(i) * b(i)", &decls, &[])
            .and_then(|k| k.with_backend(backend))
            .unwrap();
        let s = kernel.run(&[&a, &b]).unwrap();
        assert_eq!(s.values().get(0), 2.0 * 11.0 + 3.0 * 7.0, "{backend:?}");
        // A 32-bit operand beside a 64-bit one.
        let small = Coo::new(vec![n], vec![3], vec![1.0]).unwrap();
        let small = Tensor::from_coo(&small, a.format(), ValueType::F64).unwrap();
        assert_eq!(small.index_width(), IndexWidth::I32);
        let s = kernel.run(&[&small, &b]).unwrap();
        assert_eq!(s.values().get(0), 11.0, "{backend:?}");
    }
}

/// Storage reads back the same at both widths, compares equal across them, and survives
/// `.spt` (which stores 64-bit indices and reads back the narrowest width).
#[test]
fn storage_reads_back_the_same_at_both_widths() {
    let mut r = rng(14);
    let coo = random_coo(&mut r, &[12, 9], 0.3);
    for f in [
        "csr", "dcsr", "coo", "bcsr:2x3", "ell", "dia", "db", "sell:4",
    ] {
        let format = Format::parse(f, 2).unwrap();
        let narrow = Tensor::from_coo(&coo, &format, ValueType::F64).unwrap();
        assert_eq!(narrow.index_width(), IndexWidth::I32, "{f}");
        let wide = narrow.clone().with_index_width(IndexWidth::I64).unwrap();
        assert_eq!(wide.index_width(), IndexWidth::I64, "{f}");
        assert_eq!(wide.to_coo(), narrow.to_coo(), "{f}");
        assert_eq!(wide, narrow, "{f}");
        let read = io::decode_spt("t.spt", &io::encode_spt(&wide)).unwrap();
        assert_eq!(read.index_width(), IndexWidth::I32, "{f}");
        assert_eq!(read, narrow, "{f}");
        assert_eq!(io::encode_spt(&narrow), io::encode_spt(&wide), "{f}");
    }
    // Hashed levels stay 64-bit (their probe reads `int64_t`) below a narrowed level.
    let hashed = Tensor::from_coo(&coo, &Format::parse("sh", 2).unwrap(), ValueType::F64);
    let hashed = hashed.unwrap();
    let widths: Vec<IndexWidth> = hashed
        .levels()
        .iter()
        .flat_map(|l| l.arrays.iter().map(|(_, a)| a.width()))
        .collect();
    assert_eq!(
        widths,
        [IndexWidth::I32, IndexWidth::I32, IndexWidth::I64],
        "pos and idx of the compressed level, then the hash table"
    );
    assert_eq!(hashed.index_width(), IndexWidth::I64);
}

/// A hashed level assembled from parts with `int32_t` coordinates is refused with an
/// error, never read as `int64_t`.
#[test]
fn narrow_hashed_storage_from_parts_is_refused() {
    let coo = Coo::new(vec![4], vec![1, 3], vec![2.0, 5.0]).unwrap();
    let hashed = Format::parse("h", 1).unwrap();
    let t = Tensor::from_coo(&coo, &hashed, ValueType::F64).unwrap();
    let (dims, format, mut levels, values) = t.clone().into_parts();
    for (_, array) in &mut levels[0].arrays {
        *array = std::mem::take(array).with_width(IndexWidth::I32).unwrap();
    }
    let narrow = Tensor::from_parts(dims, format, levels, values);
    let decls = [
        TensorDecl::new("s"),
        TensorDecl::new("a").with_dims(&[4]).with_format(hashed),
        TensorDecl::new("x").with_dims(&[4]),
    ];
    let x = Tensor::from_coo(
        &Coo::new(vec![4], vec![0, 1, 2, 3], vec![1.0; 4]).unwrap(),
        &Format::dense(1),
        ValueType::F64,
    )
    .unwrap();
    let kernel = Kernel::compile("s = a(i) * x(i)", &decls, &[]).unwrap();
    assert_eq!(kernel.run(&[&t, &x]).unwrap().values().get(0), 7.0);
    let err = kernel.run(&[&narrow, &x]).unwrap_err().to_string();
    assert!(err.contains("int32_t"), "{err}");
}
