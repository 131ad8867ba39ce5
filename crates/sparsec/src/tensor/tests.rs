//! Tests of storage: packing, reading back and converting tensors.

use super::*;
use crate::ir::{ArrayKind, ParamKind};
use rand::{Rng, SeedableRng};

/// An unwritten dense tensor has the levels packing gives an empty one of the same
/// dimensions and format, and room for every value.
#[test]
fn unwritten_dense_tensors_are_laid_out_as_packed_ones() {
    for (dims, spelling) in [
        (vec![3, 4], "dd"),
        (vec![3, 4], "dd:1,0"),
        (vec![2, 3, 5], "ddd:2,0,1"),
        (vec![0, 7], "dd"),
    ] {
        let format = Format::parse(spelling, dims.len()).unwrap();
        for ty in [ValueType::F64, ValueType::F32] {
            let packed = Tensor::from_coo(&Coo::empty(dims.clone()), &format, ty).unwrap();
            let unwritten = Tensor::dense_unwritten(&dims, &format, ty).unwrap();
            assert_eq!(unwritten.levels(), packed.levels(), "{spelling}");
            assert_eq!(unwritten.values().len(), packed.values().len());
            assert_eq!(unwritten.value_type(), ty);
        }
    }
    let csr = Format::parse("csr", 2).unwrap();
    assert!(Tensor::dense_unwritten(&[3, 4], &csr, ValueType::F64).is_err());
    assert!(Tensor::dense_unwritten(
        &[usize::MAX, 4],
        &Format::parse("dd", 2).unwrap(),
        ValueType::F64
    )
    .is_err());
}

#[test]
fn zeros_and_dense_values_are_laid_out_as_packed_ones() {
    for dims in [vec![3, 4], vec![2, 3, 5], vec![0, 7], vec![6], vec![]] {
        let packed = |coo: &Coo| Tensor::from_coo(coo, &Format::dense(dims.len()), ValueType::F64);
        let zeros = Tensor::zeros(&dims, ValueType::F64);
        let empty = packed(&Coo::empty(dims.clone())).unwrap();
        assert_eq!(zeros.levels(), empty.levels(), "{dims:?}");
        assert_eq!(zeros.values(), empty.values());
        // Row-major values read back at their coordinates.
        let len: usize = dims.iter().product();
        let values: Vec<f64> = (0..len).map(|v| v as f64 + 1.0).collect();
        let dense = Tensor::from_dense_values(&dims, Values::F64(values.clone())).unwrap();
        assert_eq!(dense.levels(), empty.levels());
        let mut read = Vec::new();
        dense.for_each_stored(|c, x| read.push((c.to_vec(), x)));
        let mut expected = Vec::new();
        for (flat, &x) in values.iter().enumerate() {
            let mut c = vec![0i64; dims.len()];
            let mut rest = flat;
            for m in (0..dims.len()).rev() {
                c[m] = (rest % dims[m]) as i64;
                rest /= dims[m];
            }
            expected.push((c, x));
        }
        assert_eq!(read, expected, "{dims:?}");
        // As many values as components, no more, no fewer.
        assert!(Tensor::from_dense_values(&dims, Values::F64(vec![0.0; len + 1])).is_err());
    }
    assert!(Tensor::try_zeros(&[usize::MAX, 4], ValueType::F64).is_err());
    assert!(Tensor::try_zeros(&[1 << 40, 1 << 20], ValueType::F32).is_err());
}

/// Every component a reading visits, in order.
fn read(tensor: &Tensor, reading: Reading) -> Vec<(Vec<i64>, f64)> {
    let mut seen = Vec::new();
    tensor.walk_stored(reading, &mut |c, v| seen.push((c.to_vec(), v)));
    seen
}

/// Packing without tracking (keys and values sorted and summed, then streamed or
/// unpacked: `pack_sums`) builds exactly what packing with tracking (entries summed
/// one by one) builds: unsorted lists with duplicates and explicit zeros, from empty to
/// beyond the sort's bucket pass, formats that stream and ones that do not (DIA, BCSR),
/// and shapes whose coordinates do not pack into one integer.
#[test]
fn packing_with_and_without_tracking_agree() {
    let mut r = rand::rngs::StdRng::seed_from_u64(23);
    let cases: [(Vec<usize>, &[&str]); 4] = [
        (
            vec![300, 200],
            &[
                "csr", "csc", "dcsr", "coo", "ell", "dia", "bcsr:2x3", "dh", "hh", "dense",
            ],
        ),
        (vec![1, 1], &["csr", "coo", "dense"]),
        (vec![40, 1 << 20, 9], &["csf", "coo", "sds:1,2,0"]),
        (vec![1 << 40, 1 << 40], &["dcsr", "coo"]),
    ];
    for (dims, formats) in cases {
        for len in [0, 1, 700, (1 << 18) + 5] {
            let mut coo = Coo::empty(dims.clone());
            for e in 0..len {
                for &d in &dims {
                    // Few distinct coordinates in the first mode: many duplicates.
                    coo.coords.push(r.gen_range(0..d.min(1 << 24)) as i64);
                }
                coo.values.push(if e % 5 == 0 {
                    0.0
                } else {
                    r.gen_range(-1.0..1.0)
                });
            }
            for spelling in formats {
                let format = Format::parse(spelling, dims.len()).unwrap();
                let untracked = Tensor::from_coo(&coo, &format, ValueType::F64).unwrap();
                let (tracked, _) =
                    Tensor::from_coo_tracked(coo.clone(), &format, ValueType::F64).unwrap();
                assert!(untracked == tracked, "{dims:?} {len} entries {spelling}");
            }
        }
    }
}

/// Reading natively the levels whose layout the runtime knows visits exactly what
/// evaluating every level's functions visits, in the same order: every level kind,
/// mode orders, partial blocks, padding, duplicates and explicit zeros, empty tensors.
#[test]
fn native_reading_agrees_with_the_level_functions() {
    let mut r = rand::rngs::StdRng::seed_from_u64(11);
    let by_order: [&[&str]; 3] = [
        &["dense", "s", "sv", "h", "b", "coo", "u"],
        &[
            "dense", "dd:1,0", "csr", "csc", "dcsr", "dcsc", "coo", "coo:1,0", "uq", "ell", "dia",
            "bcsr:2x3", "bcsr:4x1", "bcsr:1x1", "hash", "dh", "hh", "db", "bs:1,0",
        ],
        &[
            "dense",
            "csf",
            "csf:2,0,1",
            "coo",
            "sss",
            "dsd",
            "sds:1,2,0",
            "ucq",
            "duq",
            "dhh",
            "bbb",
            "ddh:2,1,0",
        ],
    ];
    // Spellings compared on tensors with something stored.
    let mut compared = std::collections::HashSet::new();
    for (k, spellings) in by_order.iter().enumerate() {
        let order = k + 1;
        for _ in 0..12 {
            let dims: Vec<usize> = (0..order).map(|_| r.gen_range(1..9)).collect();
            let entries = r.gen_range(0..=dims.iter().product::<usize>() + 3);
            let mut coo = Coo::empty(dims.clone());
            for _ in 0..entries {
                coo.coords
                    .extend(dims.iter().map(|&d| r.gen_range(0..d) as i64));
                // Zeros are stored explicitly; repeated coordinates are summed.
                coo.values.push(f64::from(r.gen_range(-3i32..4)));
            }
            for spelling in *spellings {
                let format = Format::parse(spelling, order).unwrap();
                let Ok(tensor) = Tensor::from_coo(&coo, &format, ValueType::F64) else {
                    continue; // formats that cannot hold these entries (a singleton's duplicates)
                };
                let native = read(&tensor, Reading::Native);
                assert_eq!(
                    native,
                    read(&tensor, Reading::LevelFunctions),
                    "{spelling} {dims:?}"
                );
                if !native.is_empty() {
                    compared.insert((order, *spelling));
                }
            }
        }
    }
    let every: usize = by_order.iter().map(|s| s.len()).sum();
    assert_eq!(compared.len(), every, "compared: {compared:?}");
}

/// `Format::positions_bound` bounds the storage every format builds, and is exact for
/// ELL and DIA given their widest row and their diagonals.
#[test]
fn positions_bound_covers_the_storage_of_every_format() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for _ in 0..20 {
        let (rows, cols) = (rng.gen_range(1..9), rng.gen_range(1..9));
        let mut coo = Coo::empty(vec![rows, cols]);
        for i in 0..rows {
            for j in 0..cols {
                if rng.gen_bool(0.3) {
                    coo.coords.extend([i as i64, j as i64]);
                    coo.values.push(1.0);
                }
            }
        }
        let entries = coo.len();
        for spelling in [
            "dense", "csr", "csc", "dcsr", "coo", "hash", "dh", "bcsr:2x3", "ell", "dia",
        ] {
            let format = Format::parse(spelling, 2).unwrap();
            let tensor = Tensor::from_coo(&coo, &format, ValueType::F64).unwrap();
            let anywhere = vec![entries; format.levels().len()];
            let bound = format.positions_bound(&[rows, cols], &anywhere, entries);
            assert!(
                bound >= Some(tensor.stored_values() as u128),
                "{spelling} {rows}x{cols}: {bound:?} < {}",
                tensor.stored_values()
            );
        }
        let widest_row = (0..rows)
            .map(|i| {
                (0..entries)
                    .filter(|&e| coo.coord(e)[0] == i as i64)
                    .count()
            })
            .max()
            .unwrap_or(0);
        let mut diagonals: Vec<i64> = (0..entries)
            .map(|e| coo.coord(e)[1] - coo.coord(e)[0])
            .collect();
        diagonals.sort_unstable();
        diagonals.dedup();
        for (spelling, widest) in [("ell", widest_row), ("dia", diagonals.len())] {
            let format = Format::parse(spelling, 2).unwrap();
            let tensor = Tensor::from_coo(&coo, &format, ValueType::F64).unwrap();
            let bound = format.positions_bound(&[rows, cols], &[widest; 3], entries);
            assert_eq!(bound, Some(tensor.stored_values() as u128), "{spelling}");
        }
    }
}

/// The widest fiber at each level, in both mode orders.
#[test]
fn widest_fibers_count_children_per_parent() {
    let coo = Coo::new(vec![3, 4], vec![0, 1, 0, 3, 2, 0], vec![1.0; 3]).unwrap();
    let csr = Format::parse("csr", 2).unwrap();
    let tensor = Tensor::from_coo(&coo, &csr, ValueType::F64).unwrap();
    assert_eq!(tensor.widest_fibers(&csr), Some(vec![2, 2]));
    let csc = Format::parse("csc", 2).unwrap();
    assert_eq!(tensor.widest_fibers(&csc), Some(vec![3, 1]));
    assert_eq!(
        tensor.widest_fibers(&Format::parse("bcsr:2x2", 2).unwrap()),
        None
    );
    let empty = Tensor::from_coo(&Coo::empty(vec![3, 4]), &csr, ValueType::F64).unwrap();
    assert_eq!(empty.widest_fibers(&csr), Some(vec![0, 0]));
}

/// Storage whose levels claim ordered, unique coordinates that it does not have (row 0
/// lists column 2 before column 0, row 1 lists column 1 twice) is converted through
/// sorting, as a coordinate list would be, instead of streamed out of order.
#[test]
fn storage_out_of_order_is_converted_by_sorting() {
    let level = |arrays: Vec<(ArrayKind, IndexArray)>, size| LevelStorage {
        arrays,
        params: vec![(ParamKind::Size, size)],
    };
    let csr = Tensor::from_parts(
        vec![2, 3],
        Format::parse("csr", 2).unwrap(),
        vec![
            level(vec![], 2),
            level(
                vec![
                    (ArrayKind::Pos, vec![0i64, 2, 4].into()),
                    (ArrayKind::Idx, vec![2i64, 0, 1, 1].into()),
                ],
                3,
            ),
        ],
        Values::F64(vec![1.0, 2.0, 3.0, 4.0]),
    );
    let expected = Coo::new(vec![2, 3], vec![0, 0, 0, 2, 1, 1], vec![2.0, 1.0, 7.0]).unwrap();
    for target in ["ss", "ds", "sd", "dd"] {
        let converted = csr.convert(&Format::parse(target, 2).unwrap()).unwrap();
        let mut stored = converted.to_coo();
        // Dense levels store their zeros: compare the nonzero components.
        let nonzero: Vec<usize> = (0..stored.len())
            .filter(|&e| stored.values[e] != 0.0)
            .collect();
        stored.coords = nonzero
            .iter()
            .flat_map(|&e| stored.coord(e).to_vec())
            .collect();
        stored.values = nonzero.iter().map(|&e| stored.values[e]).collect();
        assert_eq!(stored, expected, "{target}");
    }
}
