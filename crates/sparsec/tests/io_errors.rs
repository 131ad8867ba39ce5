//! Malformed input: every error names the file and, for content errors, the line; no input
//! panics.

use std::path::PathBuf;

use sparsec::format::Format;
use sparsec::io::{self, IoError};
use sparsec::tensor::{Coo, Tensor, ValueType};

/// Write `text` to a temporary file called `name` and return its path.
fn file(dir: &tempfile::TempDir, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Read `text` as `name` and check the error names the file, gives `line` and mentions `needle`.
fn expect_line_error(name: &str, text: &str, line: usize, needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, name, text.as_bytes());
    let err = io::read_any(&path).expect_err(name);
    let message = err.to_string();
    assert!(
        message.contains(name),
        "{name}: message does not name the file: {message}"
    );
    assert!(
        message.contains(&format!("{name}:{line}:")),
        "{name}: message does not give line {line}: {message}"
    );
    assert_eq!(err.line(), Some(line), "{message}");
    assert!(
        message.contains(needle),
        "{name}: message lacks `{needle}`: {message}"
    );
    assert_eq!(err.path(), path);
}

const HEAD: &str = "%%MatrixMarket matrix coordinate real general\n";

#[test]
fn mtx_empty_file() {
    expect_line_error("empty.mtx", "", 1, "header");
}

#[test]
fn mtx_missing_header() {
    expect_line_error("nohead.mtx", "3 3 1\n1 1 1.0\n", 1, "%%MatrixMarket");
}

#[test]
fn mtx_bad_header_word_count() {
    expect_line_error(
        "short.mtx",
        "%%MatrixMarket matrix coordinate real\n1 1 0\n",
        1,
        "4 words",
    );
}

#[test]
fn mtx_unknown_object() {
    expect_line_error(
        "object.mtx",
        "%%MatrixMarket vector coordinate real general\n1 1 0\n",
        1,
        "unknown object `vector`",
    );
}

#[test]
fn mtx_unknown_format() {
    expect_line_error(
        "format.mtx",
        "%%MatrixMarket matrix sparse real general\n1 1 0\n",
        1,
        "unknown format `sparse`",
    );
}

#[test]
fn mtx_unknown_field() {
    expect_line_error(
        "field.mtx",
        "%%MatrixMarket matrix coordinate quaternion general\n1 1 0\n",
        1,
        "unknown field `quaternion`",
    );
}

#[test]
fn mtx_complex_is_rejected() {
    expect_line_error(
        "complex.mtx",
        "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1.0 2.0\n",
        1,
        "complex values are not supported",
    );
}

#[test]
fn mtx_unknown_symmetry() {
    expect_line_error(
        "symmetry.mtx",
        "%%MatrixMarket matrix coordinate real upper\n1 1 0\n",
        1,
        "unknown symmetry `upper`",
    );
}

#[test]
fn mtx_missing_size_line() {
    expect_line_error(
        "nosize.mtx",
        &format!("{HEAD}% only a comment\n"),
        2,
        "size line",
    );
}

#[test]
fn mtx_bad_size_line() {
    expect_line_error("size.mtx", &format!("{HEAD}%c\n3 x 2\n"), 3, "size line");
    expect_line_error("size2.mtx", &format!("{HEAD}3 3\n"), 2, "size line");
}

#[test]
fn mtx_symmetric_must_be_square() {
    expect_line_error(
        "rect.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n",
        2,
        "square",
    );
}

#[test]
fn mtx_too_many_entries() {
    expect_line_error(
        "many.mtx",
        &format!("{HEAD}3 3 2\n1 1 1\n2 2 2\n\n3 3 3\n"),
        6,
        "more entries than the 2 declared",
    );
}

#[test]
fn mtx_too_few_entries_truncated() {
    expect_line_error(
        "few.mtx",
        &format!("{HEAD}% comment\n3 3 3\n1 1 1\n2 2 2\n"),
        5,
        "ends after 2",
    );
    // A size line may declare more entries than any file could hold.
    expect_line_error(
        "huge.mtx",
        &format!("{HEAD}2 2 18446744073709551615\n1 1 1\n"),
        3,
        "declares 18446744073709551615 entries, but the file ends after 1",
    );
    // Truncated in the middle of a line: the partial line lacks its value.
    expect_line_error(
        "cut.mtx",
        &format!("{HEAD}3 3 3\n1 1 1\n2 2 2\n3 3"),
        5,
        "expected 3 fields",
    );
}

#[test]
fn mtx_index_out_of_range_or_zero() {
    expect_line_error(
        "range.mtx",
        &format!("{HEAD}3 3 2\n1 1 1\n4 1 1\n"),
        4,
        "row index 4 is out of range 1..=3",
    );
    expect_line_error(
        "zero.mtx",
        &format!("{HEAD}3 3 2\n1 1 1\n1 0 1\n"),
        4,
        "column index 0 is out of range",
    );
}

#[test]
fn mtx_non_numeric_fields() {
    expect_line_error(
        "value.mtx",
        &format!("{HEAD}3 3 2\n1 1 1\n2 2 abc\n"),
        4,
        "value `abc` is not a number",
    );
    expect_line_error(
        "index.mtx",
        &format!("{HEAD}3 3 1\n1.5 1 1\n"),
        3,
        "row index `1.5`",
    );
    expect_line_error(
        "int.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 2.5\n",
        3,
        "not an integer",
    );
}

#[test]
fn mtx_wrong_number_of_columns() {
    expect_line_error(
        "cols.mtx",
        &format!("{HEAD}3 3 2\n1 1 1\n2 2 2 7\n"),
        4,
        "expected 3 fields (row, column, value), found 4",
    );
    expect_line_error(
        "pattern.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n",
        3,
        "expected 2 fields (row, column), found 3",
    );
    expect_line_error(
        "array.mtx",
        "%%MatrixMarket matrix array real general\n2 1\n1\n2 3\n",
        4,
        "expected 1 field",
    );
}

#[test]
fn mtx_array_wrong_count() {
    expect_line_error(
        "arrfew.mtx",
        "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n",
        5,
        "holds 4 values, but the file ends after 3",
    );
    expect_line_error(
        "arrmany.mtx",
        "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n4\n",
        6,
        "more values than the 3",
    );
}

#[test]
fn errors_in_large_files_give_the_right_line() {
    // Large enough to be parsed in several pieces in parallel.
    let n = 200_000;
    let mut text = format!("{HEAD}% big\n{n} {n} {n}\n");
    for k in 1..=n {
        if k == 150_000 {
            text.push_str(&format!("{k} {k} oops\n"));
        } else {
            text.push_str(&format!("{k} {k} {k}.5\n"));
        }
    }
    expect_line_error("big.mtx", &text, 150_000 + 3, "value `oops`");

    let mut text = String::new();
    for k in 1..=n {
        if k == 170_001 {
            text.push_str("# a comment line\n");
            text.push_str(&format!("{k} 1 2 3\n"));
        } else {
            text.push_str(&format!("{k} 1 2.0\n"));
        }
    }
    expect_line_error("big.tns", &text, 170_002, "expected 3 fields");

    let mut text = format!("{HEAD}{n} {n} {}\n", n - 1);
    for k in 1..=n {
        text.push_str(&format!("{k} {k} 1\n"));
    }
    expect_line_error("over.mtx", &text, n + 2, "more entries than");
}

#[test]
fn errors_in_files_large_enough_to_stream_give_the_right_line() {
    // Above the 8 MiB from which a file's lines are streamed in shares: an error anywhere
    // sends the reader back to the whole file, which says where.
    let n = 800_000;
    let entries = |text: &mut String, bad: usize| {
        for k in 1..=n {
            if k == bad {
                text.push_str(&format!("{k} 1 oops\n"));
            } else {
                text.push_str(&format!("{k} 1 {k}.25\n"));
            }
        }
    };
    let mut text = format!("{HEAD}% big\n{n} 1 {n}\n");
    entries(&mut text, 650_000);
    assert!(text.len() > 8 << 20);
    expect_line_error("big.mtx", &text, 650_000 + 3, "value `oops`");

    let mut text = format!("{HEAD}{n} 1 {}\n", n - 1);
    entries(&mut text, 0);
    expect_line_error("over.mtx", &text, n + 2, "more entries than");
    let mut text = format!("{HEAD}{n} 1 {}\n", n + 5);
    entries(&mut text, 0);
    expect_line_error("short.mtx", &text, n + 2, "truncated");
    let mut text = format!("{HEAD}{n} 1 {}\n", u64::MAX);
    entries(&mut text, 0);
    expect_line_error("huge.mtx", &text, n + 2, "truncated");

    let mut text = String::from("# tensor\n");
    for k in 1..=n {
        let extra = if k == 700_001 { " 9" } else { "" };
        text.push_str(&format!("{k} 2 3 4.5{extra}\n"));
    }
    expect_line_error("big.tns", &text, 700_002, "expected 4 fields");
}

#[test]
fn large_files_with_a_long_preamble_are_read_whole() {
    // The comments before the size line are longer than the bytes first read for them.
    let n = 700_000;
    let comment = "% ".to_string() + &"c".repeat(997) + "\n";
    let mut text = format!("{HEAD}{}{n} {n} {n}\n", comment.repeat(100));
    for k in 1..=n {
        text.push_str(&format!("{k} {k} {k}.5\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "long.mtx", text.as_bytes());
    let read = io::read_matrix_market(&path).unwrap();
    assert_eq!(read.header.comments.len(), 100);
    assert_eq!(read.coo.values.len(), n);
    assert_eq!(read.coo.coords[2 * (n - 1)..], [n as i64 - 1, n as i64 - 1]);
    assert_eq!(read.coo.values[n - 1], n as f64 + 0.5);
}

#[test]
fn tns_index_zero_or_out_of_range() {
    expect_line_error(
        "zero.tns",
        "1 1 1 1.0\n2 0 1 2.0\n",
        2,
        "index 0 in column 2",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "dims.tns", b"1 1 1.0\n# c\n3 2 2.0\n");
    let err = io::read_tns(&path, Some(&[2, 2])).unwrap_err().to_string();
    assert!(
        err.contains("dims.tns:3:") && err.contains("exceeds the dimension 2"),
        "{err}"
    );
    let err = io::read_tns(&path, Some(&[3, 2, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dims.tns:1:") && err.contains("3 dimensions were given"),
        "{err}"
    );
}

#[test]
fn tns_non_numeric_fields() {
    expect_line_error(
        "value.tns",
        "1 1 1.0\n2 2 x\n",
        2,
        "value `x` is not a number",
    );
    expect_line_error(
        "index.tns",
        "1 1 1.0\n2 b 3.0\n",
        2,
        "index `b` in column 2",
    );
    expect_line_error(
        "neg.tns",
        "1 1 1.0\n-2 1 3.0\n",
        2,
        "index `-2` in column 1",
    );
}

#[test]
fn tns_inconsistent_column_counts() {
    expect_line_error(
        "cols.tns",
        "# header comment\n1 1 1 1.0\n\n2 2 2.0\n",
        4,
        "expected 4 fields (3 indices and a value, like line 2), found 3",
    );
    expect_line_error("more.tns", "1 1 1.0\n2 2 2 2.0\n", 2, "found 4");
}

#[test]
fn tns_scalar_files_mixing_lines_with_and_without_indices() {
    // The first entry has no index, so the file holds a scalar; the first line with an
    // index is named.
    expect_line_error(
        "scalar.tns",
        "# a scalar
2.5

1 3.0
2 4.0
",
        4,
        "expected 1 field (a value and no indices, like line 2: the file holds a scalar), found 2",
    );
    expect_line_error(
        "values.tns",
        "2.5
1.0 2.0 3.0
",
        2,
        "found 3",
    );
    // And the other way round: a value alone after entries with indices.
    expect_line_error(
        "vector.tns",
        "1 3.0

5
",
        3,
        "expected 2 fields (1 indices and a value, like line 1), found 1",
    );
    expect_line_error(
        "nan.tns",
        "x
",
        1,
        "value `x` is not a number",
    );
}

#[test]
fn tns_trailing_comments_and_blank_lines_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(
        &dir,
        "c.tns",
        b"# leading\n\n1 2 3 1.5 # trailing comment\r\n  2 1 1 -2e3\n\n",
    );
    let coo = io::read_tns(&path, None).unwrap();
    assert_eq!(coo.dims, [2, 2, 3]);
    assert_eq!(coo.coords, [0, 1, 2, 1, 0, 0]);
    assert_eq!(coo.values, [1.5, -2000.0]);
}

#[test]
fn empty_tns_needs_dims() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "empty.tns", b"# nothing\n\n");
    let err = io::read_tns(&path, None).unwrap_err();
    assert!(err.to_string().contains("empty.tns"), "{err}");
    let coo = io::read_tns(&path, Some(&[4, 5])).unwrap();
    assert_eq!(coo.dims, [4, 5]);
    assert!(coo.is_empty());
}

#[test]
fn missing_file_and_unknown_extension_name_the_file() {
    let err = io::read_any("/nonexistent/dir/none.mtx").unwrap_err();
    assert!(matches!(err, IoError::Io { .. }));
    assert!(err.to_string().contains("none.mtx"), "{err}");
    let err = io::read_any("matrix.csv").unwrap_err();
    assert!(err.to_string().contains("matrix.csv") && err.to_string().contains(".csv"));
}

#[test]
fn binary_files_reject_truncation_and_corruption() {
    let coo = Coo::new(
        vec![5, 7],
        vec![0, 1, 2, 3, 4, 6, 4, 0],
        vec![1.0, 2.0, 0.0, 4.0],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for spelling in [
        "csr", "dcsc", "uq", "ell", "dia", "bcsr:2x3", "dh", "dense", "db", "bs", "sell:2",
    ] {
        let t =
            Tensor::from_coo(&coo, &Format::parse(spelling, 2).unwrap(), ValueType::F64).unwrap();
        let bytes = io::encode_spt(&t);
        assert!(io::decode_spt("ok.spt", &bytes).unwrap() == t);
        // Every truncation and every single-byte change is an error naming the file.
        for len in 0..bytes.len() {
            let err = io::decode_spt("cut.spt", &bytes[..len]).unwrap_err();
            assert!(err.to_string().starts_with("cut.spt: "), "{err}");
        }
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x5a;
            let err = io::decode_spt("flip.spt", &bad).unwrap_err();
            assert!(err.to_string().starts_with("flip.spt: "), "{err}");
        }
        let path = file(&dir, "t.spt", &bytes[..bytes.len() / 2]);
        let err = io::read_any(&path).unwrap_err().to_string();
        assert!(err.contains("t.spt") && err.contains("truncated"), "{err}");
    }
    let err = io::decode_spt(
        "text.spt",
        b"%%MatrixMarket matrix coordinate real general\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("bad magic number"), "{err}");
}

/// Corrupt content behind a valid checksum (a hand-made file) is still caught by the
/// structural checks.
#[test]
fn binary_structure_is_validated_behind_a_valid_checksum() {
    let coo = Coo::new(vec![3, 3], vec![0, 0, 1, 2, 2, 1], vec![1.0, 2.0, 3.0]).unwrap();
    let t = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    let bytes = io::encode_spt(&t);
    let body = &bytes[..bytes.len() - 32];
    // Find the idx array (values 0, 2, 1 as i64) and point one coordinate out of range.
    let needle: Vec<u8> = [0i64, 2, 1].iter().flat_map(|x| x.to_le_bytes()).collect();
    let at = body
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    let mut bad = body.to_vec();
    bad[at + 8..at + 16].copy_from_slice(&9i64.to_le_bytes());
    let hash = blake3::hash(&bad);
    bad.extend_from_slice(hash.as_bytes());
    let err = io::decode_spt("idx.spt", &bad).unwrap_err().to_string();
    assert!(err.contains("idx.spt") && err.contains("outside"), "{err}");
}

/// DIA's column level computes `row + offset[d]`, which stays inside the matrix only for
/// the offsets its row level bounded the rows with.
#[test]
fn binary_dia_column_offsets_must_be_the_row_offsets() {
    let coo = Coo::new(vec![3, 3], vec![0, 0, 1, 2], vec![1.0, 2.0]).unwrap();
    let t = Tensor::from_coo(&coo, &Format::parse("dia", 2).unwrap(), ValueType::F64).unwrap();
    let mut levels = t.levels().to_vec();
    levels[2].arrays = vec![(sparsec::ir::ArrayKind::Offset, vec![0i64, 2].into())];
    let bad = Tensor::from_parts(
        t.dims().to_vec(),
        t.format().clone(),
        levels,
        t.values().clone(),
    );
    let err = io::decode_spt("dia.spt", &io::encode_spt(&bad))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dia.spt") && err.contains("offsets differ"),
        "{err}"
    );
    assert!(io::decode_spt("ok.spt", &io::encode_spt(&t)).unwrap() == t);
}

/// A bytemap flag is 0 or 1, and there is one per position.
#[test]
fn binary_bytemap_flags_are_checked() {
    let coo = Coo::new(vec![2, 3], vec![0, 1, 1, 2], vec![1.0, 2.0]).unwrap();
    let t = Tensor::from_coo(&coo, &Format::parse("db", 2).unwrap(), ValueType::F64).unwrap();
    for (flags, needle) in [
        (vec![0, 1, 0, 0, 0, 2], "flags other than 0 and 1"),
        (vec![0, 1, 0, 0, 0], "present has 5 entries, expected 6"),
    ] {
        let mut levels = t.levels().to_vec();
        levels[1].arrays = vec![(
            sparsec::ir::ArrayKind::Present,
            sparsec::format::IndexArray::I32(flags),
        )];
        let bad = Tensor::from_parts(
            t.dims().to_vec(),
            t.format().clone(),
            levels,
            t.values().clone(),
        );
        let err = io::decode_spt("b.spt", &io::encode_spt(&bad))
            .unwrap_err()
            .to_string();
        assert!(err.contains("b.spt") && err.contains(needle), "{err}");
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let alphabet = b"0123456789 .-+eE%\n\t#xMatrix";
    for round in 0..3000 {
        let len = rng.gen_range(0..200);
        let mut text: Vec<u8> = (0..len)
            .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
            .collect();
        if round % 2 == 0 {
            let header: &[u8] = match round % 6 {
                0 => b"%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n",
                2 => b"%%MatrixMarket matrix array integer skew-symmetric\n3 3\n",
                _ => b"%%MatrixMarket matrix coordinate pattern general\n4 2 3\n",
            };
            text.splice(0..0, header.iter().copied());
        }
        let _ = io::parse_matrix_market("fuzz.mtx", &text);
        let _ = io::parse_tns("fuzz.tns", &text, None);
        let _ = io::parse_tns("fuzz.tns", &text, Some(&[3, 3, 3]));
        let _ = io::decode_spt("fuzz.spt", &text);
    }
}
