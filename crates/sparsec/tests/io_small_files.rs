//! Small hand-written MatrixMarket and FROSTT files: symmetry expansion, fields, layouts,
//! explicit zeros, writing.

use sparsec::format::Format;
use sparsec::io::{self, MtxField, MtxLayout, MtxSymmetry, MtxWriteOptions};
use sparsec::tensor::{Coo, Tensor, ValueType};

fn mtx(text: &str) -> io::MatrixMarket {
    io::parse_matrix_market("test.mtx", text.as_bytes()).unwrap()
}

/// Entries as `(row, col, value)` triples, sorted.
fn triples(coo: &Coo) -> Vec<(i64, i64, f64)> {
    let mut c = coo.clone();
    c.sort_and_sum();
    (0..c.len())
        .map(|e| (c.coord(e)[0], c.coord(e)[1], c.values[e]))
        .collect()
}

#[test]
fn symmetric_files_are_expanded() {
    let m = mtx("%%MatrixMarket matrix coordinate real symmetric\n\
                 % lower triangle\n\
                 3 3 4\n\
                 1 1 4.0\n\
                 2 1 -1.5\n\
                 3 2 2\n\
                 3 3 0\n");
    assert_eq!(m.header.symmetry, MtxSymmetry::Symmetric);
    assert_eq!(m.header.stored_entries, 4);
    assert_eq!(m.header.comments, [" lower triangle"]);
    assert_eq!(m.coo.len(), 6);
    assert_eq!(
        triples(&m.coo),
        [
            (0, 0, 4.0),
            (0, 1, -1.5),
            (1, 0, -1.5),
            (1, 2, 2.0),
            (2, 1, 2.0),
            (2, 2, 0.0), // explicit zero kept
        ]
    );
    // Each mirror follows its entry.
    assert_eq!(m.coo.coords[2..6], [1, 0, 0, 1]);
}

#[test]
fn skew_symmetric_files_negate_the_mirror() {
    let m = mtx("%%MatrixMarket matrix coordinate real skew-symmetric\n\
                 3 3 2\n\
                 2 1 5\n\
                 3 1 -7.25\n");
    assert_eq!(
        triples(&m.coo),
        [(0, 1, -5.0), (0, 2, 7.25), (1, 0, 5.0), (2, 0, -7.25)]
    );
}

#[test]
fn hermitian_real_and_pattern_symmetric() {
    let m = mtx("%%MatrixMarket matrix coordinate real hermitian\n2 2 2\n1 1 1\n2 1 3\n");
    assert_eq!(m.header.symmetry, MtxSymmetry::Hermitian);
    assert_eq!(triples(&m.coo), [(0, 0, 1.0), (0, 1, 3.0), (1, 0, 3.0)]);
    let m = mtx("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n");
    assert_eq!(m.header.field, MtxField::Pattern);
    assert_eq!(triples(&m.coo), [(0, 1, 1.0), (1, 0, 1.0), (2, 2, 1.0)]);
}

#[test]
fn integer_fields_and_number_spellings() {
    let m =
        mtx("%%MatrixMarket matrix coordinate integer general\n2 3 3\n1 1 -4\n2 3 +12\n1 2 0\n");
    assert_eq!(m.header.field, MtxField::Integer);
    assert_eq!(triples(&m.coo), [(0, 0, -4.0), (0, 1, 0.0), (1, 2, 12.0)]);
    let m = mtx("%%matrixmarket MATRIX Coordinate DOUBLE General\r\n\r\n2 2 3\r\n1 1 1.5D+02\r\n  2\t2   -.5e-1  \r\n1 2 1e300\r\n");
    assert_eq!(
        triples(&m.coo),
        [(0, 0, 150.0), (0, 1, 1e300), (1, 1, -0.05)]
    );
}

#[test]
fn array_layout_is_column_major() {
    let m = mtx("%%MatrixMarket matrix array real general\n% c\n2 3\n1\n2\n3\n4\n5\n0\n");
    assert_eq!(m.header.layout, MtxLayout::Array);
    assert_eq!(m.header.stored_entries, 6);
    assert_eq!(
        triples(&m.coo),
        [
            (0, 0, 1.0),
            (0, 1, 3.0),
            (0, 2, 5.0),
            (1, 0, 2.0),
            (1, 1, 4.0),
            (1, 2, 0.0)
        ]
    );
    // Symmetric arrays store the lower triangle column by column.
    let m = mtx("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n");
    assert_eq!(m.coo.len(), 9);
    let dense: Vec<f64> = triples(&m.coo).iter().map(|t| t.2).collect();
    assert_eq!(dense, [1.0, 2.0, 3.0, 2.0, 4.0, 5.0, 3.0, 5.0, 6.0]);
    // Skew-symmetric arrays store the strict lower triangle.
    let m = mtx("%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n");
    assert_eq!(
        triples(&m.coo),
        [
            (0, 1, -1.0),
            (0, 2, -2.0),
            (1, 0, 1.0),
            (1, 2, -3.0),
            (2, 0, 2.0),
            (2, 1, 3.0)
        ]
    );
}

#[test]
fn empty_and_degenerate_matrices() {
    let m = mtx("%%MatrixMarket matrix coordinate real general\n0 0 0\n");
    assert_eq!(m.coo.dims, [0, 0]);
    assert!(m.coo.is_empty());
    let m = mtx("%%MatrixMarket matrix coordinate real general\n5 4 0");
    assert_eq!(m.coo.dims, [5, 4]);
}

#[test]
fn writing_matrices_vectors_and_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let coo = Coo::new(
        vec![3, 4],
        vec![2, 3, 0, 0, 1, 1, 0, 0],
        vec![0.1, -2.0, 0.0, 1e-300],
    )
    .unwrap();
    let path = dir.path().join("m.mtx");
    io::write_matrix_market(&path, &coo, &MtxWriteOptions::default()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("%%MatrixMarket matrix coordinate real general\n3 4 4\n3 4 0.1\n"));
    let back = io::read_matrix_market(&path).unwrap();
    assert_eq!(
        back.coo, coo,
        "values round trip exactly, duplicates and zeros kept"
    );

    let options = MtxWriteOptions {
        layout: MtxLayout::Array,
        comments: vec!["dense\ncopy".into()],
    };
    io::write_matrix_market(&path, &coo, &options).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("%%MatrixMarket matrix array real general\n%dense\n%copy\n3 4\n-2\n0\n")
    );
    let back = io::read_matrix_market(&path).unwrap();
    assert_eq!(back.coo.len(), 12);
    assert_eq!(triples(&back.coo), {
        let mut all: Vec<(i64, i64, f64)> = (0..3)
            .flat_map(|i| (0..4).map(move |j| (i, j, 0.0)))
            .collect();
        all[0].2 = -2.0 + 1e-300; // duplicates summed
        all[11].2 = 0.1;
        all
    });

    // A vector is written as one column; a dense tensor as an array.
    let v = Tensor::from_coo(
        &Coo::new(vec![3], vec![2, 0], vec![5.0, 6.0]).unwrap(),
        &Format::parse("dense", 1).unwrap(),
        ValueType::F64,
    )
    .unwrap();
    let options = MtxWriteOptions {
        layout: MtxLayout::Array,
        ..Default::default()
    };
    io::write_matrix_market_tensor(&path, &v, &options).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "%%MatrixMarket matrix array real general\n3 1\n6\n0\n5\n"
    );

    let cube = Coo::new(vec![2, 2, 2], vec![1, 1, 1], vec![1.0]).unwrap();
    let err = io::write_matrix_market(&path, &cube, &MtxWriteOptions::default()).unwrap_err();
    assert!(err.to_string().contains("m.mtx") && err.to_string().contains(".tns"));
}

#[test]
fn tns_writing_and_reading_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let coo = Coo::new(
        vec![2, 3, 4, 5],
        vec![1, 2, 3, 4, 0, 0, 0, 0, 1, 0, 3, 2],
        vec![1.25, 0.0, -3.0],
    )
    .unwrap();
    let path = dir.path().join("t.tns");
    io::write_tns(&path, &coo).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "2 3 4 5 1.25\n1 1 1 1 0\n2 1 4 3 -3\n"
    );
    assert_eq!(io::read_tns(&path, Some(&coo.dims)).unwrap(), coo);
    assert_eq!(io::read_tns(&path, None).unwrap().dims, [2, 3, 4, 5]);
    let vector = Coo::new(vec![4], vec![3, 0], vec![1.0, 2.0]).unwrap();
    io::write_tns(&path, &vector).unwrap();
    assert_eq!(io::read_tns(&path, None).unwrap(), vector);
}

#[test]
fn read_any_and_write_any_dispatch_on_extension() {
    let dir = tempfile::tempdir().unwrap();
    let coo = Coo::new(vec![4, 4], vec![0, 1, 3, 3, 2, 0], vec![1.0, 2.0, 3.0]).unwrap();
    let t = Tensor::from_coo(&coo, &Format::parse("dcsc", 2).unwrap(), ValueType::F64).unwrap();
    for ext in ["mtx", "tns", "spt", "MTX"] {
        let path = dir.path().join(format!("a.{ext}"));
        io::write_any(&path, &t).unwrap();
        let back = io::read_any(&path).unwrap();
        assert_eq!(back.dims(), [4, 4], "{ext}");
        assert_eq!(back.coo().max_difference(&t.to_coo()), 0.0, "{ext}");
        let csr = back
            .into_tensor(&Format::parse("csr", 2).unwrap(), ValueType::F64)
            .unwrap();
        assert!(csr.approx_eq(&t, 0.0));
    }
    let err = io::write_any(dir.path().join("a.txt"), &t).unwrap_err();
    assert!(err.to_string().contains("a.txt"));
}

/// A scalar holding `value`.
fn scalar(value: f64) -> Tensor {
    let coo = Coo::new(vec![], vec![], vec![value]).unwrap();
    Tensor::from_coo(&coo, &Format::dense(0), ValueType::F64).unwrap()
}

#[test]
fn scalars_round_trip_through_tns_mtx_and_spt() {
    let dir = tempfile::tempdir().unwrap();
    // Not exactly representable in few digits: the text is written at full precision.
    let value = -1.0 / 3.0;
    let t = scalar(value);
    let tns = dir.path().join("s.tns");
    io::write_any(&tns, &t).unwrap();
    assert_eq!(
        std::fs::read_to_string(&tns).unwrap(),
        format!("{value:?}\n")
    );
    let mtx = dir.path().join("s.mtx");
    io::write_any(&mtx, &t).unwrap();
    assert_eq!(
        std::fs::read_to_string(&mtx).unwrap(),
        format!("%%MatrixMarket matrix array real general\n1 1\n{value:?}\n")
    );
    let back = io::read_matrix_market(&mtx).unwrap();
    assert_eq!((back.coo.dims, back.coo.values), (vec![1, 1], vec![value]));
    for path in [&tns, &dir.path().join("s.spt")] {
        io::write_any(path, &t).unwrap();
        let back = io::read_any(path).unwrap();
        assert!(back.dims().is_empty(), "{}", path.display());
        let back = back.into_tensor(&Format::dense(0), ValueType::F64).unwrap();
        assert_eq!(back.to_coo().values, [value], "{}", path.display());
    }
}

#[test]
fn tns_scalar_reading_skips_comments_and_sums_repeated_values() {
    let coo = io::parse_tns("s.tns", b"# a scalar\n\n  2.5 # the value\n", None).unwrap();
    assert_eq!(coo, Coo::new(vec![], vec![], vec![2.5]).unwrap());
    // Every line of a scalar file is at the same (empty) coordinates: duplicates, summed
    // when stored, as for any order.
    let coo = io::parse_tns("s.tns", b"2.5\n-1\n", None).unwrap();
    assert_eq!(coo.values, [2.5, -1.0]);
    let t = Tensor::from_coo(&coo, &Format::dense(0), ValueType::F64).unwrap();
    assert_eq!(t.to_coo().values, [1.5]);
    // The order of a scalar can also be given.
    assert_eq!(
        io::parse_tns("s.tns", b"7\n", Some(&[])).unwrap().values,
        [7.0]
    );
}

#[test]
fn mtx_scalar_is_written_as_an_array_whatever_the_layout_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.mtx");
    let coo = Coo::new(vec![], vec![], vec![4.0]).unwrap();
    io::write_matrix_market(&path, &coo, &MtxWriteOptions::default()).unwrap();
    let back = io::read_matrix_market(&path).unwrap();
    assert_eq!(back.header.layout, MtxLayout::Array);
    assert_eq!((back.coo.dims, back.coo.values), (vec![1, 1], vec![4.0]));
}
