//! The thesis's 9x12 example matrix (Fig 2-2a) in every format, checked array by array
//! against the thesis where it gives the arrays, and by round trip everywhere.

use sparsec::format::{Format, LevelSite};
use sparsec::ir::interp::Env;
use sparsec::ir::{ArrayKind, Expr, OperandId, ParamKind};
use sparsec::tensor::{Coo, Tensor, ValueType};

const ENTRIES: [(i64, i64); 21] = [
    (0, 0),
    (0, 3),
    (0, 6),
    (1, 0),
    (1, 1),
    (1, 4),
    (2, 1),
    (2, 2),
    (3, 2),
    (3, 3),
    (3, 6),
    (3, 9),
    (5, 4),
    (5, 5),
    (5, 8),
    (5, 11),
    (6, 5),
    (6, 6),
    (6, 9),
    (8, 8),
    (8, 11),
];

/// Values A..V (skipping O) as 1..21.
fn example() -> Coo {
    let coords = ENTRIES.iter().flat_map(|&(i, j)| [i, j]).collect();
    let values = (1..=21).map(f64::from).collect();
    Coo::new(vec![9, 12], coords, values).unwrap()
}

fn build(format: &str) -> Tensor {
    Tensor::from_coo(
        &example(),
        &Format::parse(format, 2).unwrap(),
        ValueType::F64,
    )
    .unwrap()
}

fn array(t: &Tensor, level: usize, kind: ArrayKind) -> Vec<i64> {
    t.levels()[level - 1]
        .array(kind)
        .unwrap()
        .to_i64()
        .into_owned()
}

fn vals(t: &Tensor) -> Vec<f64> {
    (0..t.values().len()).map(|p| t.values().get(p)).collect()
}

#[test]
fn csr_arrays_match_the_thesis() {
    let t = build("csr");
    assert_eq!(t.levels()[0].param(ParamKind::Size), 9);
    assert_eq!(
        array(&t, 2, ArrayKind::Pos),
        [0, 3, 6, 8, 12, 12, 16, 19, 19, 21]
    );
    let idx: Vec<i64> = ENTRIES.iter().map(|e| e.1).collect();
    assert_eq!(array(&t, 2, ArrayKind::Idx), idx);
    assert_eq!(vals(&t), (1..=21).map(f64::from).collect::<Vec<_>>());
}

#[test]
fn csc_arrays_match_the_thesis() {
    let t = build("csc");
    assert_eq!(t.levels()[0].param(ParamKind::Size), 12);
    assert_eq!(
        array(&t, 2, ArrayKind::Pos),
        [0, 2, 4, 6, 8, 10, 12, 15, 15, 17, 19, 19, 21]
    );
    assert_eq!(
        array(&t, 2, ArrayKind::Idx),
        [0, 1, 1, 2, 2, 3, 0, 3, 1, 5, 5, 6, 0, 3, 6, 5, 8, 3, 6, 5, 8]
    );
    // A,D,E,G,H,I,B,J,F,M,N,R,C,K,S,P,U,L,T,Q,V with A=1 .. V=21 (O skipped).
    let letters = "ADEGHIBJFMNRCKSPULTQV";
    let value = |c: char| "ABCDEFGHIJKLMNPQRSTUV".find(c).unwrap() as f64 + 1.0;
    assert_eq!(vals(&t), letters.chars().map(value).collect::<Vec<_>>());
}

#[test]
fn coo_arrays_match_the_thesis() {
    let t = build("uq");
    assert_eq!(array(&t, 1, ArrayKind::Pos), [0, 21]);
    let rows: Vec<i64> = ENTRIES.iter().map(|e| e.0).collect();
    let cols: Vec<i64> = ENTRIES.iter().map(|e| e.1).collect();
    assert_eq!(array(&t, 1, ArrayKind::Idx), rows);
    assert_eq!(array(&t, 2, ArrayKind::Idx), cols);
}

#[test]
fn dcsr_arrays_match_the_derivation() {
    let t = build("dcsr");
    assert_eq!(array(&t, 1, ArrayKind::Pos), [0, 7]);
    assert_eq!(array(&t, 1, ArrayKind::Idx), [0, 1, 2, 3, 5, 6, 8]);
    assert_eq!(array(&t, 2, ArrayKind::Pos), [0, 3, 6, 8, 12, 16, 19, 21]);
}

#[test]
fn dia_stores_four_diagonals_of_nine_rows() {
    let t = build("dia");
    assert_eq!(array(&t, 2, ArrayKind::Offset), [-1, 0, 3, 6]);
    assert_eq!(t.values().len(), 36);
    // (i, i + off[d]) lives at vals[d*9 + i]: (1,0) is on diagonal -1 (d = 0).
    assert_eq!(t.values().get(1), 4.0);
    assert_eq!(t.values().get(9 + 8), 20.0); // (8,8) = U on the main diagonal
}

#[test]
fn ell_has_four_slots_per_row() {
    let t = build("ell");
    assert_eq!(t.levels()[0].param(ParamKind::Size), 4);
    assert_eq!(t.values().len(), 36);
    assert_eq!(array(&t, 3, ArrayKind::Idx).len(), 36);
}

#[test]
fn every_format_round_trips() {
    for format in [
        "dd", "csr", "csc", "uq", "dcsr", "dcsc", "ss", "hh", "dh", "dia", "ell", "bcsr:2x3",
        "bcsr:4x4", "ds:1,0", "db", "bs", "bb", "sb", "bd", "db:1,0", "sell:4", "sell:8", "sell:1",
    ] {
        let t = build(format);
        let back = t.to_coo();
        let mut expected = example();
        expected.sort_and_sum();
        assert_eq!(back.max_difference(&expected), 0.0, "format {format}");
        let again = t.convert(&Format::parse("csr", 2).unwrap()).unwrap();
        assert!(again.approx_eq(&build("csr"), 0.0), "format {format}");
    }
}

/// Presence flags of the 9x12 example, row-major: one per (row, column).
fn row_major_flags() -> Vec<i64> {
    let mut flags = vec![0; 9 * 12];
    for &(i, j) in &ENTRIES {
        flags[(i * 12 + j) as usize] = 1;
    }
    flags
}

#[test]
fn bytemap_levels_store_dense_positions_and_presence_flags() {
    // Dense rows over bytemap columns: 108 positions, a flag and a value at each.
    let t = build("db");
    assert_eq!(t.levels()[1].param(ParamKind::Size), 12);
    let flags = array(&t, 2, ArrayKind::Present);
    assert_eq!(flags, row_major_flags());
    assert_eq!(flags[..12], [1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0]); // A, B, C
    assert_eq!(flags[4 * 12..5 * 12], [0; 12]); // row 4 is empty
    assert_eq!(flags[8 * 12..], [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1]); // U, V
    let values = vals(&t);
    assert_eq!(values.len(), 108);
    for (e, &(i, j)) in ENTRIES.iter().enumerate() {
        assert_eq!(values[(i * 12 + j) as usize], e as f64 + 1.0);
    }
    assert_eq!(values.iter().filter(|&&v| v != 0.0).count(), 21);

    // Bytemap rows over compressed columns: rows 4 and 7 are absent, and the columns are
    // CSR's, since positions of absent rows own empty segments.
    let t = build("bs");
    assert_eq!(
        array(&t, 1, ArrayKind::Present),
        [1, 1, 1, 1, 0, 1, 1, 0, 1]
    );
    assert_eq!(
        array(&t, 2, ArrayKind::Pos),
        array(&build("csr"), 2, ArrayKind::Pos)
    );
    assert_eq!(
        array(&t, 2, ArrayKind::Idx),
        array(&build("csr"), 2, ArrayKind::Idx)
    );

    // Bytemap over bytemap: absent rows keep all-zero flags below them.
    let t = build("bb");
    assert_eq!(
        array(&t, 1, ArrayKind::Present),
        [1, 1, 1, 1, 0, 1, 1, 0, 1]
    );
    assert_eq!(array(&t, 2, ArrayKind::Present), row_major_flags());

    // Reading back evaluates `found` = the flag: only the 21 entries come out.
    for format in ["db", "bs", "bb"] {
        let t = build(format);
        let mut seen = Vec::new();
        t.for_each_stored(|c, _| seen.push((c[0], c[1])));
        assert_eq!(seen, ENTRIES, "format {format}");
        let bytes = sparsec::io::encode_spt(&t);
        assert!(
            sparsec::io::decode_spt("b.spt", &bytes).unwrap() == t,
            "{format}"
        );
    }
}

#[test]
fn bytemap_locate_reads_the_flag() {
    let t = build("db");
    let bytemap = &t.format().levels()[1].format;
    let site = LevelSite {
        operand: OperandId(0),
        level: 2,
        ancestors: vec![Expr::Int(5)],
    };
    let levels = t.levels().to_vec();
    let env = Env {
        levels: &levels,
        argument: 0,
    };
    let locate = |i: i64| {
        let (pos, found) = bytemap
            .locate(&site, &Expr::Int(5), &Expr::Int(i), &Expr::Int(0))
            .unwrap();
        (env.eval(&pos), env.eval(&found) != 0)
    };
    assert_eq!(locate(4), (64, true)); // M at (5, 4)
    assert_eq!(locate(6), (66, false));
    assert_eq!(locate(11), (71, true)); // P at (5, 11)
}

#[test]
fn hashed_vector_locate_follows_linear_probing() {
    // The thesis's hash-map vector: W = 12, idx = [0,12,13,3,14,5,6,-1,8,-1,-1,-1].
    let coords = vec![0, 3, 5, 6, 8, 12, 13, 14];
    let n = coords.len();
    let coo = Coo::new(vec![16], coords, vec![1.0; n]).unwrap();
    let t = Tensor::from_coo(&coo, &Format::parse("h", 1).unwrap(), ValueType::F64).unwrap();
    let levels = t.levels().to_vec();
    // Replace the packed table by the thesis's table to check locate on it exactly.
    let mut storage = levels[0].clone();
    storage.arrays = vec![(
        ArrayKind::Idx,
        vec![0i64, 12, 13, 3, 14, 5, 6, -1, 8, -1, -1, -1].into(),
    )];
    storage.params = vec![(ParamKind::Size, 16), (ParamKind::Width, 12)];
    let hashed = &t.format().levels()[0].format;
    let site = LevelSite {
        operand: OperandId(0),
        level: 1,
        ancestors: vec![],
    };
    let levels = vec![storage];
    let env = Env {
        levels: &levels,
        argument: 0,
    };
    let locate = |i: i64| {
        let (pos, _) = hashed
            .locate(&site, &Expr::Int(0), &Expr::Int(i), &Expr::Int(0))
            .unwrap();
        let p = env.eval(&pos);
        // `found` reads the located position, which the caller has bound: here `p`.
        let (_, found) = hashed
            .locate(&site, &Expr::Int(0), &Expr::Int(i), &Expr::Int(p))
            .unwrap();
        (p, env.eval(&found) != 0)
    };
    assert_eq!(locate(13), (2, true));
    assert_eq!(locate(7), (7, false));
    assert_eq!(locate(14), (4, true));
    assert_eq!(locate(0), (0, true));
}

#[test]
fn bad_format_strings_are_explained() {
    let err = |s: &str, order| Format::parse(s, order).unwrap_err().to_string();
    assert!(err("dx", 2).contains("unknown level letter `x`"));
    assert!(err("dss", 2).contains("3 level letters for a tensor of order 2"));
    // A misspelled named format is named, with what its letters would have meant.
    for (typo, meant) in [
        ("csrr", "csr"),
        ("crs", "csr"),
        ("dcrs", "dcsr"),
        ("hsah", "hash"),
    ] {
        let text = err(typo, 2);
        assert!(
            text.contains(&format!("did you mean `{meant}`?")),
            "{typo}: {text}"
        );
        assert!(text.contains("level letter"), "{typo}: {text}");
    }
    assert!(!err("xyz", 2).contains("did you mean"));
    assert!(err("ds:0,0", 2).contains("permutation"));
    assert!(err("csr", 3).contains("order-2"));
    assert!(err("bcsr", 2).contains("block sizes"));
    assert!(err("bcsr:0x2", 2).contains("positive"));
    // Found by the format fuzz target: storing one entry allocated a whole 8.9e7-value block.
    assert!(err("bcsr:1x88888888", 2).contains("more than 65536 values"));
    assert!(err("bcsr:99999999999x99999999999", 2).contains("more than 65536 values"));
    assert!(Format::parse("bcsr:256x256", 2).is_ok());
    assert!(err("qs", 2).contains("singleton level cannot be the first"));
    assert!(err("d(!z)s", 2).contains("unknown level property"));
    assert!(err("rs", 2).contains("only occurs in DIA"));
    assert!(err("so", 2).contains("only occurs in DIA"));
    assert!(err("dx", 2).contains("b (bytemap)"));
    for (text, order) in [("bs", 2), ("db", 2), ("bb", 2), ("b", 1), ("bsb:2,0,1", 3)] {
        let format = Format::parse(text, order).unwrap();
        assert_eq!(format.spelling(), text);
        assert!(!format.is_all_dense(), "{text}");
    }
    assert_eq!(
        Format::parse("bs", 2).unwrap().levels()[0].format.name(),
        "bytemap"
    );
    // Sliced ELL: 8 rows a slice unless told, spelled back with its slice.
    assert_eq!(Format::parse("sell", 2).unwrap().spelling(), "sell:8");
    assert_eq!(Format::parse("SELL:16", 2).unwrap().spelling(), "sell:16");
    assert!(err("sell:0", 2).contains("from 1 to 1024"));
    assert!(err("sell:4x4", 2).contains("from 1 to 1024"));
    assert!(err("sell:1025", 2).contains("from 1 to 1024"));
    assert!(err("sell", 3).contains("order-2"));
}

#[test]
fn singleton_under_unique_parent_is_rejected_with_reason() {
    let e =
        Tensor::from_coo(&example(), &Format::parse("sq", 2).unwrap(), ValueType::F64).unwrap_err();
    assert!(e.to_string().contains("non-unique"), "{e}");
}
