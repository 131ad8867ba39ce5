//! Every shared matrix and tensor (`../shared/data` beside the repository): read, checked
//! against the sizes in `SOURCES.md`, built in every format that can hold it and read back
//! entry by entry, and written to / read from `.mtx`, `.tns` and `.spt` files.
//!
//! Fails, naming the missing path, when the shared data directory is absent.

mod common;
use common::shared_data;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sparsec::format::Format;
use sparsec::io::{self, MtxLayout, MtxSymmetry, MtxWriteOptions};
use sparsec::tensor::{Coo, Tensor, ValueType, Values};

fn data_dir() -> PathBuf {
    shared_data("")
}

fn files(dir: &Path, sub: &str, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
        .unwrap_or_else(|e| panic!("{}/{sub}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    assert!(
        !out.is_empty(),
        "no .{ext} files in {}/{sub}",
        dir.display()
    );
    out
}

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn sorted(coo: &Coo) -> Coo {
    let mut c = coo.clone();
    c.sort_and_sum();
    c
}

/// Stored values (padding included) above which a padded format's read-back is skipped:
/// reading storage back walks it through the interpreted level functions, about a
/// microsecond per stored slot.
const PADDED_LIMIT: usize = 1_000_000;

/// Build `coo` in `spelling` and check it reads back exactly; for compact formats also that
/// every entry (explicit zeros included) is stored once. Returns false when a padded format
/// was too large to read back.
fn check_format(file: &str, coo: &Coo, reference: &Coo, spelling: &str, compact: bool) -> bool {
    let format = Format::parse(spelling, coo.order()).unwrap();
    let t0 = std::time::Instant::now();
    let t = Tensor::from_coo(coo, &format, ValueType::F64)
        .unwrap_or_else(|e| panic!("{file} as {spelling}: {e}"));
    assert_eq!(t.dims(), &coo.dims[..], "{file} as {spelling}: dims");
    if t.stored_values() > PADDED_LIMIT.max(reference.len()) {
        eprintln!(
            "note: {file} as {spelling}: {} stored values with padding, read-back skipped",
            t.stored_values()
        );
        return false;
    }
    let t1 = t0.elapsed();
    let back = t.to_coo();
    if std::env::var_os("IO_TIMING").is_some() {
        eprintln!(
            "{file} {spelling}: pack {t1:?} read {:?} stored {}",
            t0.elapsed() - t1,
            t.stored_values()
        );
    }
    let diff = back.max_difference(reference);
    assert_eq!(diff, 0.0, "{file} as {spelling}: entries differ by {diff}");
    if compact {
        assert_eq!(
            back.len(),
            reference.len(),
            "{file} as {spelling}: stored entries"
        );
    }
    true
}

/// `(rows, cols, stored, full)` per matrix file and `(dims, nnz)` per tensor file, from the
/// tables in SOURCES.md.
struct Sources {
    matrices: HashMap<String, (usize, usize, usize, usize)>,
    tensors: HashMap<String, (Vec<usize>, usize)>,
}

fn sources(dir: &Path) -> Sources {
    let path = dir.join("SOURCES.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut matrices = HashMap::new();
    let mut tensors = HashMap::new();
    let num = |s: &str| s.trim().parse::<usize>().ok();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 6 {
            continue;
        }
        let file = cells[1].trim_matches('`');
        if let Some(m) = file.strip_prefix("matrices/") {
            let shape: Vec<_> = cells[3].split('x').filter_map(num).collect();
            let counts: Vec<_> = cells[4].split('/').filter_map(num).collect();
            if let ([r, c], [s, f]) = (&shape[..], &counts[..]) {
                matrices.insert(m.to_string(), (*r, *c, *s, *f));
            }
        } else if let Some(t) = file.strip_prefix("tensors/") {
            let dims_text = cells[3].split('(').next().unwrap();
            let dims: Vec<_> = dims_text.split('x').filter_map(num).collect();
            if let Some(nnz) = num(cells[4]) {
                tensors.insert(t.to_string(), (dims, nnz));
            }
        }
    }
    // An unreadable table would silently skip every size check below.
    assert!(
        !matrices.is_empty() && !tensors.is_empty(),
        "{}: no matrix or tensor rows parsed",
        path.display()
    );
    Sources { matrices, tensors }
}

fn max_row_nnz(coo: &Coo) -> usize {
    let mut counts = vec![0usize; coo.dims[0]];
    for e in 0..coo.len() {
        counts[coo.coord(e)[0] as usize] += 1;
    }
    counts.into_iter().max().unwrap_or(0)
}

fn diagonals(coo: &Coo) -> usize {
    let mut seen = vec![false; coo.dims[0] + coo.dims[1]];
    for e in 0..coo.len() {
        let c = coo.coord(e);
        seen[(c[1] - c[0] + coo.dims[0] as i64) as usize] = true;
    }
    seen.into_iter().filter(|&s| s).count()
}

const LIMIT: usize = 4_000_000;

#[test]
fn matrices_match_sources_and_expand_symmetry() {
    let dir = data_dir();
    let sources = sources(&dir);
    for path in files(&dir, "matrices", "mtx") {
        let file = name(&path);
        let m = io::read_matrix_market(&path).unwrap();
        let h = &m.header;
        assert_eq!(m.coo.dims, [h.rows, h.cols], "{file}");
        m.coo.validate().unwrap();
        let diagonal = (0..m.coo.len())
            .filter(|&e| m.coo.coord(e)[0] == m.coo.coord(e)[1])
            .count();
        match h.symmetry {
            MtxSymmetry::General => assert_eq!(m.coo.len(), h.stored_entries, "{file}"),
            _ => assert_eq!(
                m.coo.len(),
                2 * h.stored_entries - diagonal,
                "{file}: every off-diagonal entry mirrored"
            ),
        }
        if let Some(&(rows, cols, stored, full)) = sources.matrices.get(&file) {
            assert_eq!((h.rows, h.cols), (rows, cols), "{file}: shape");
            assert_eq!(h.stored_entries, stored, "{file}: stored entries");
            assert_eq!(m.coo.len(), full, "{file}: expanded entries");
            assert_eq!(sorted(&m.coo).len(), full, "{file}: no duplicate entries");
        } else {
            eprintln!("note: {file} is not listed in SOURCES.md");
        }
    }
}

/// Round trip every shared matrix through the formats `formats` picks for it.
fn matrices_through(formats: impl Fn(&Coo) -> Vec<(String, bool)>) {
    let dir = data_dir();
    let (mut checked, mut skipped) = (0, 0);
    for path in files(&dir, "matrices", "mtx") {
        let file = name(&path);
        let coo = io::read_matrix_market(&path).unwrap().coo;
        let reference = sorted(&coo);
        for (spelling, compact) in formats(&coo) {
            if check_format(&file, &coo, &reference, &spelling, compact) {
                checked += 1;
            } else {
                skipped += 1;
            }
        }
    }
    eprintln!("{checked} matrix/format pairs checked, {skipped} too large to read back");
    assert!(checked > 0);
}

fn compact(spellings: &[&str]) -> Vec<(String, bool)> {
    spellings.iter().map(|s| (s.to_string(), true)).collect()
}

#[test]
fn matrices_round_trip_through_csr_csc_coo() {
    matrices_through(|_| compact(&["csr", "csc", "uq"]));
}

#[test]
fn matrices_round_trip_through_dcsr_dcsc() {
    matrices_through(|_| compact(&["dcsr", "dcsc"]));
}

#[test]
fn matrices_round_trip_through_hashed() {
    matrices_through(|_| compact(&["dh"]));
}

#[test]
fn matrices_round_trip_through_dense_ell_dia() {
    matrices_through(|coo| {
        let rows = coo.dims[0];
        let mut out = vec![];
        if rows * coo.dims[1] <= LIMIT {
            out.push(("dense".into(), false));
        }
        if max_row_nnz(coo) * rows <= LIMIT {
            out.push(("ell".into(), false));
        }
        if diagonals(coo) * rows <= LIMIT {
            out.push(("dia".into(), false));
        }
        out
    });
}

#[test]
fn matrices_round_trip_through_bcsr() {
    matrices_through(|_| vec![("bcsr:2x2".into(), false), ("bcsr:4x3".into(), false)]);
}

#[test]
fn tensors_round_trip_through_every_format() {
    let dir = data_dir();
    let sources = sources(&dir);
    for path in files(&dir, "tensors", "tns") {
        let file = name(&path);
        let coo = io::read_tns(&path, None).unwrap();
        coo.validate().unwrap();
        if let Some((dims, nnz)) = sources.tensors.get(&file) {
            assert_eq!(&coo.dims, dims, "{file}: dims = max index per mode");
            assert_eq!(coo.len(), *nnz, "{file}: entries");
        }
        let reference = sorted(&coo);
        let n = coo.order();
        let reversed: Vec<String> = (0..n).rev().map(|m| m.to_string()).collect();
        let rotated: Vec<String> = (1..n).chain([0]).map(|m| m.to_string()).collect();
        let mut formats = vec![
            "coo".to_string(),
            "csf".to_string(),
            format!("csf:{}", reversed.join(",")),
            format!("csf:{}", rotated.join(",")),
        ];
        if coo.len() <= 20_000 {
            formats.push(format!("{}h", "s".repeat(n - 1)));
        }
        for spelling in formats {
            check_format(&file, &coo, &reference, &spelling, true);
        }
        // Declared dimensions larger than the maxima are accepted; smaller are not.
        let bigger: Vec<usize> = coo.dims.iter().map(|d| d + 1).collect();
        assert_eq!(io::read_tns(&path, Some(&bigger)).unwrap().dims, bigger);
        let mut smaller = coo.dims.clone();
        smaller[0] -= 1;
        let err = io::read_tns(&path, Some(&smaller)).unwrap_err();
        assert!(err.line().is_some(), "{file}: {err}");
    }
}

#[test]
fn files_round_trip_through_mtx_tns_and_spt() {
    let dir = data_dir();
    let tmp = tempfile::tempdir().unwrap();
    for path in files(&dir, "matrices", "mtx") {
        let file = name(&path);
        let m = io::read_matrix_market(&path).unwrap();
        let reference = sorted(&m.coo);

        let out = tmp.path().join("copy.mtx");
        let options = MtxWriteOptions {
            comments: vec![format!("copy of {file}")],
            ..Default::default()
        };
        io::write_matrix_market(&out, &m.coo, &options).unwrap();
        let back = io::read_matrix_market(&out).unwrap();
        assert_eq!(
            back.coo, m.coo,
            "{file}: .mtx round trip keeps entries in order"
        );
        assert_eq!(back.header.comments, [format!("copy of {file}")]);
        assert_eq!(back.header.symmetry, MtxSymmetry::General);

        let out = tmp.path().join("copy.tns");
        io::write_tns(&out, &m.coo).unwrap();
        let back = io::read_tns(&out, Some(&m.coo.dims)).unwrap();
        assert_eq!(back, m.coo, "{file}: .tns round trip");

        // Every matrix as CSR in f64 and f32; small ones in every format.
        let mut spellings = vec!["csr"];
        if m.coo.len() <= 20_000 {
            spellings.extend(["dcsc", "uq", "bcsr:4x3", "dh", "ell", "dia"]);
            if m.coo.dims[0] * m.coo.dims[1] <= 1_000_000 {
                spellings.push("dense");
            }
        }
        for spelling in spellings {
            let t = Tensor::from_coo(&m.coo, &Format::parse(spelling, 2).unwrap(), ValueType::F64)
                .unwrap();
            let out = tmp.path().join("copy.spt");
            io::write_spt(&out, &t).unwrap();
            let back = io::read_spt(&out).unwrap();
            assert!(back == t, "{file} as {spelling}: .spt round trip is exact");
            if spelling == "csr" {
                let Values::F64(v) = t.values() else {
                    unreachable!()
                };
                let f32s = Tensor::from_parts(
                    t.dims().to_vec(),
                    t.format().clone(),
                    t.levels().to_vec(),
                    Values::F32(v.iter().map(|&x| x as f32).collect()),
                );
                io::write_spt(&out, &f32s).unwrap();
                assert!(io::read_spt(&out).unwrap() == f32s, "{file}: f32 .spt");
            }
        }

        if m.coo.dims[0] * m.coo.dims[1] <= 300_000 {
            let out = tmp.path().join("dense.mtx");
            let options = MtxWriteOptions {
                layout: MtxLayout::Array,
                ..Default::default()
            };
            io::write_matrix_market(&out, &m.coo, &options).unwrap();
            let back = io::read_matrix_market(&out).unwrap();
            assert_eq!(back.header.layout, MtxLayout::Array);
            assert_eq!(back.coo.len(), m.coo.dims[0] * m.coo.dims[1]);
            assert_eq!(sorted(&back.coo).max_difference(&reference), 0.0);
        }
    }
    for path in files(&dir, "tensors", "tns") {
        let file = name(&path);
        let coo = io::read_tns(&path, None).unwrap();
        let out = tmp.path().join("copy.tns");
        io::write_tns(&out, &coo).unwrap();
        assert_eq!(
            io::read_tns(&out, None).unwrap(),
            coo,
            "{file}: .tns round trip"
        );
        for spelling in ["csf", "coo"] {
            let t = Tensor::from_coo(
                &coo,
                &Format::parse(spelling, coo.order()).unwrap(),
                ValueType::F64,
            )
            .unwrap();
            let out = tmp.path().join("copy.spt");
            io::write_spt(&out, &t).unwrap();
            assert!(
                io::read_spt(&out).unwrap() == t,
                "{file} as {spelling}: .spt"
            );
            match io::read_any(&out).unwrap() {
                io::TensorFile::Binary(back) => assert!(back == t),
                other => panic!("read_any gave {other:?}"),
            }
        }
    }
}
