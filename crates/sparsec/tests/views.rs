//! Kernels reading borrowed storage ([`TensorView`]): the same results as from owned
//! tensors, malformed arrays refused with what is wrong, and views converted where the
//! kernel reads another layout or value type.

mod common;

use common::{random_coo, rng, statement};
use sparsec::format::{Format, IndexArray};
use sparsec::ir::ArrayKind;
use sparsec::kernel::Kernel;
use sparsec::reference;
use sparsec::tensor::{IndexSlice, Tensor, TensorView, ValueSlice, ValueType, Values};

/// The `indptr`, `indices` and values of a CSR or CSC tensor.
fn compressed_arrays(t: &Tensor) -> (IndexArray, IndexArray, Vec<f64>) {
    let level = &t.levels()[1];
    let values = match t.values() {
        Values::F64(v) => v.clone(),
        Values::F32(_) => unreachable!("built as f64"),
    };
    (
        level.array(ArrayKind::Pos).unwrap().clone(),
        level.array(ArrayKind::Idx).unwrap().clone(),
        values,
    )
}

#[test]
fn kernels_read_views_as_they_read_tensors() {
    let mut rng = rng(7);
    for (rows, cols, density) in [
        (0, 0, 0.0),
        (1, 1, 1.0),
        (5, 0, 0.0),
        (37, 23, 0.2),
        (64, 200, 0.05),
    ] {
        for (layout, column_major) in [("csr", false), ("csc", true)] {
            let a = random_coo(&mut rng, &[rows, cols], density);
            let x = random_coo(&mut rng, &[cols], 1.0);
            let expr = "y(i) = A(i,j) * x(j)";
            let (stmt, tensors) = statement(expr, &[("A", layout)], &[("A", a), ("x", x)], &[]);
            let kernel =
                Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default()).unwrap();
            let expected = reference::evaluate(&stmt, &[&tensors[0], &tensors[1]], None);
            let (indptr, indices, data) = compressed_arrays(&tensors[0]);
            // Both index widths, mixed as SciPy may hold them.
            let wide = (
                indptr
                    .clone()
                    .with_width(sparsec::ir::IndexWidth::I64)
                    .unwrap(),
                indices
                    .clone()
                    .with_width(sparsec::ir::IndexWidth::I32)
                    .unwrap(),
            );
            for (p, i) in [(&indptr, &indices), (&wide.0, &wide.1)] {
                let a_view = TensorView::compressed(
                    vec![rows, cols],
                    column_major,
                    p.into(),
                    i.into(),
                    ValueSlice::F64(&data),
                )
                .unwrap();
                assert_eq!(a_view.format(), tensors[0].format());
                let x_values = match tensors[1].values() {
                    Values::F64(v) => v.clone(),
                    Values::F32(_) => unreachable!(),
                };
                let x_view = TensorView::dense(vec![cols], ValueSlice::F64(&x_values)).unwrap();
                let views = [a_view, x_view];
                assert_eq!(kernel.inputs_read_in_place(&views), vec![true, true]);
                let got = kernel.run(&views).unwrap();
                let diff = got.max_difference(&expected).unwrap();
                assert!(diff <= 1e-12, "{layout} {rows}x{cols}: {diff}");
            }
        }
    }
}

#[test]
fn views_in_another_layout_or_value_type_are_converted() {
    let mut rng = rng(8);
    let a = random_coo(&mut rng, &[30, 20], 0.2);
    let x = random_coo(&mut rng, &[20], 1.0);
    let (stmt, tensors) = statement(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csc")],
        &[("A", a.clone()), ("x", x)],
        &[],
    );
    let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default()).unwrap();
    let expected = reference::evaluate(&stmt, &[&tensors[0], &tensors[1]], None);
    let csr = Tensor::from_coo(&a, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    let (indptr, indices, data) = compressed_arrays(&csr);
    let narrow: Vec<f32> = match tensors[1].values() {
        Values::F64(v) => v.iter().map(|&x| x as f32).collect(),
        Values::F32(_) => unreachable!(),
    };
    let views = [
        TensorView::compressed(
            vec![30, 20],
            false,
            (&indptr).into(),
            (&indices).into(),
            ValueSlice::F64(&data),
        )
        .unwrap(),
        TensorView::dense(vec![20], ValueSlice::F32(&narrow)).unwrap(),
    ];
    assert_eq!(kernel.inputs_read_in_place(&views), vec![false, false]);
    let got = kernel.run(&views).unwrap();
    assert!(got.max_difference(&expected).unwrap() <= 1e-5);
}

/// A kernel of another value type than its inputs' reads their index arrays where they
/// are and a copy of their values: the same results, in sizes down to empty and 1 x 1,
/// from `double` to `float` and back.
#[test]
fn kernels_of_another_value_type_read_views_recast() {
    let mut rng = rng(9);
    for (rows, cols, density) in [(0, 0, 0.0), (1, 1, 1.0), (4, 0, 0.0), (41, 17, 0.25)] {
        let a = random_coo(&mut rng, &[rows, cols], density);
        let x = random_coo(&mut rng, &[cols], 1.0);
        let (stmt, tensors) = statement(
            "y(i) = A(i,j) * x(j)",
            &[("A", "csr")],
            &[("A", a), ("x", x)],
            &[],
        );
        let expected = reference::evaluate(&stmt, &[&tensors[0], &tensors[1]], None);
        let (indptr, indices, data) = compressed_arrays(&tensors[0]);
        let x_values = match tensors[1].values() {
            Values::F64(v) => v.clone(),
            Values::F32(_) => unreachable!("built as f64"),
        };
        let narrow_data: Vec<f32> = data.iter().map(|&v| v as f32).collect();
        let narrow_x: Vec<f32> = x_values.iter().map(|&v| v as f32).collect();
        let (wide_values, narrow_values) = (
            (ValueSlice::F64(&data), ValueSlice::F64(&x_values)),
            (ValueSlice::F32(&narrow_data), ValueSlice::F32(&narrow_x)),
        );
        for (kernel_type, (a_values, x_values)) in [
            (ValueType::F32, wide_values),
            (ValueType::F64, narrow_values),
        ] {
            let kernel =
                Kernel::from_statement(stmt.clone(), kernel_type, &Default::default()).unwrap();
            let views = [
                TensorView::compressed(
                    vec![rows, cols],
                    false,
                    (&indptr).into(),
                    (&indices).into(),
                    a_values,
                )
                .unwrap(),
                TensorView::dense(vec![cols], x_values).unwrap(),
            ];
            assert_eq!(kernel.inputs_read_in_place(&views), vec![false, false]);
            let got = kernel.run(&views).unwrap();
            assert_eq!(got.value_type(), kernel_type);
            let diff = got.max_difference(&expected).unwrap();
            assert!(diff <= 1e-4, "{kernel_type:?} {rows}x{cols}: {diff}");
        }
    }
}

#[test]
fn malformed_arrays_are_refused_with_what_is_wrong() {
    let data = [1.0, 2.0];
    let cases: [(&[i64], &[i64], &str); 9] = [
        (
            &[0, 1],
            &[0, 1],
            "indptr has 2 offsets, but 2 rows or columns need 3",
        ),
        (&[1, 1, 2], &[0, 1], "from 0 to the number of indices"),
        (&[0, 1, 3], &[0, 1], "from 0 to the number of indices"),
        (&[0, 3, 2], &[0, 1], "indptr decreases after offset 1"),
        (
            &[0, 2, 1, 2][..3],
            &[0, 1],
            "from 0 to the number of indices",
        ),
        (&[0, 1, 0, 2], &[0, 1], "indptr has 4 offsets"),
        (&[0, 2, 2], &[1, 0], "not strictly increasing"),
        (&[0, 2, 2], &[1, 1], "not strictly increasing"),
        (
            &[0, 1, 2],
            &[0, 3],
            "index 3 of row or column 1 is out of range",
        ),
    ];
    for (indptr, indices, message) in cases {
        let err = TensorView::compressed(
            vec![2, 3],
            false,
            IndexSlice::I64(indptr),
            IndexSlice::I64(indices),
            ValueSlice::F64(&data),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains(message),
            "{indptr:?} {indices:?}: {err}"
        );
    }
    let decreasing = TensorView::compressed(
        vec![3, 3],
        false,
        IndexSlice::I32(&[0, 2, 1, 2]),
        IndexSlice::I32(&[0, 1]),
        ValueSlice::F64(&data),
    )
    .unwrap_err();
    assert!(
        decreasing.to_string().contains("decreases after offset 1"),
        "{decreasing}"
    );
    let negative = TensorView::compressed(
        vec![2, 3],
        false,
        IndexSlice::I32(&[0, 1, 2]),
        IndexSlice::I32(&[0, -1]),
        ValueSlice::F64(&data),
    )
    .unwrap_err();
    assert!(negative.to_string().contains("index -1"), "{negative}");
    let lengths = TensorView::compressed(
        vec![2, 3],
        false,
        IndexSlice::I32(&[0, 1, 2]),
        IndexSlice::I32(&[0, 1]),
        ValueSlice::F64(&[1.0]),
    )
    .unwrap_err();
    assert!(
        lengths.to_string().contains("1 values but 2 indices"),
        "{lengths}"
    );
    let dense = TensorView::dense(vec![2, 3], ValueSlice::F64(&data)).unwrap_err();
    assert!(dense.to_string().contains("6 components"), "{dense}");
    let huge = TensorView::dense(vec![usize::MAX, 3], ValueSlice::F64(&data)).unwrap_err();
    assert!(huge.to_string().contains("too many"), "{huge}");
    let order3 = TensorView::compressed(
        vec![2, 3, 4],
        false,
        IndexSlice::I32(&[0]),
        IndexSlice::I32(&[]),
        ValueSlice::F64(&[]),
    )
    .unwrap_err();
    assert!(order3.to_string().contains("matrix"), "{order3}");
}

proptest::proptest! {
    /// Arbitrary arrays, mostly malformed: a view is made only of those a kernel can read
    /// without leaving them, and then SpMV over it is the plain loop over the arrays.
    #[test]
    fn arbitrary_arrays_are_refused_or_read_correctly(
        cols in 0usize..4,
        counts in proptest::collection::vec(0i64..3, 0..5),
        extra_row in proptest::bool::weighted(0.1),
        corrupt_offset in proptest::option::weighted(0.2, (0usize..6, -1i64..6)),
        raw_indices in proptest::collection::vec(0i64..100, 8..12),
        sorted in proptest::bool::weighted(0.8),
    ) {
        let rows = counts.len() + usize::from(extra_row);
        // Offsets from row counts (often well formed), sometimes with one corrupted.
        let mut indptr: Vec<i64> = std::iter::once(0)
            .chain(counts.iter().scan(0, |sum, c| { *sum += c; Some(*sum) }))
            .collect();
        if let Some((at, value)) = corrupt_offset {
            if let Some(slot) = indptr.get_mut(at) {
                *slot = value;
            }
        }
        // Indices from -1 to `cols`: mostly in range.
        let indices: Vec<i64> = raw_indices.iter().map(|v| v % (cols as i64 + 2) - 1).collect();
        let mut indices = indices;
        indices.truncate(*indptr.last().unwrap_or(&0) as usize);
        if sorted {
            // Distinct and increasing within each row where the offsets and columns allow.
            for w in indptr.windows(2) {
                if 0 <= w[0] && w[0] <= w[1] && (w[1] as usize) <= indices.len() {
                    let row = &mut indices[w[0] as usize..w[1] as usize];
                    let mut distinct: Vec<i64> = row.iter().map(|i| i.rem_euclid(cols.max(1) as i64)).collect();
                    distinct.sort();
                    distinct.dedup();
                    if distinct.len() == row.len() {
                        row.copy_from_slice(&distinct);
                    }
                }
            }
        }
        let data: Vec<f64> = (0..indices.len()).map(|k| k as f64 + 1.0).collect();
        let Ok(view) = TensorView::compressed(
            vec![rows, cols],
            false,
            IndexSlice::I64(&indptr),
            IndexSlice::I64(&indices),
            ValueSlice::F64(&data),
        ) else {
            return Ok(());
        };
        let mut expected = vec![0.0; rows];
        for (r, y) in expected.iter_mut().enumerate() {
            for k in indptr[r] as usize..indptr[r + 1] as usize {
                *y += data[k] * (indices[k] as f64 + 0.5);
            }
        }
        let x: Vec<f64> = (0..cols).map(|c| c as f64 + 0.5).collect();
        let x = TensorView::dense(vec![cols], ValueSlice::F64(&x)).unwrap();
        let decls = [
            sparsec::notation::TensorDecl::new("y"),
            sparsec::notation::TensorDecl::new("A")
                .with_dims(&[rows, cols])
                .with_format(Format::parse("csr", 2).unwrap()),
            sparsec::notation::TensorDecl::new("x").with_dims(&[cols]),
        ];
        let kernel = Kernel::compile("y(i) = A(i,j) * x(j)", &decls, &[]).unwrap();
        let got = kernel.run(&[view, x]).unwrap();
        proptest::prop_assert_eq!(got.values(), &Values::F64(expected));
    }
}

/// The check runs in chunks of pairs: a fault on either side of a chunk's edge, in one
/// long row or at a row boundary, is found; a clean long matrix passes.
#[test]
fn long_rows_are_checked_across_chunk_edges() {
    let n = 10_000i64;
    let clean: Vec<i64> = (0..n).collect();
    let data = vec![1.0; n as usize];
    let view = |indptr: &[i64], indices: &[i64]| {
        TensorView::compressed(
            vec![indptr.len() - 1, n as usize],
            false,
            IndexSlice::I64(indptr),
            IndexSlice::I64(indices),
            ValueSlice::F64(&data),
        )
        .map(|_| ())
    };
    assert!(view(&[0, n], &clean).is_ok());
    // Two rows, the second starting at 4096: its first index may be smaller.
    let mut two_rows = clean.clone();
    two_rows[4096..].iter_mut().for_each(|i| *i -= 4096);
    assert!(view(&[0, 4096, n], &two_rows).is_ok());
    assert!(view(&[0, n], &two_rows).is_err());
    for at in [4094usize, 4095, 4096, 4097, 8191, 8192, 9999] {
        let mut swapped = clean.clone();
        swapped.swap(at - 1, at);
        let err = view(&[0, n], &swapped).unwrap_err();
        assert!(
            err.to_string().contains("not strictly increasing"),
            "{at}: {err}"
        );
        let mut wide = clean.clone();
        wide[at] = n;
        let err = view(&[0, n], &wide).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{at}: {err}");
    }
}
