//! Property tests of tensor storage: random coordinate lists (unsorted, with duplicates and
//! explicit zeros) packed into every applicable format read back to the same values, and
//! conversions between formats preserve them.

use proptest::prelude::*;
use proptest::sample::Index;
use sparsec::format::Format;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// A small deterministic generator for the random choices inside one case (mode
/// orderings, block sizes, letters), seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for k in (1..n).rev() {
            p.swap(k, self.below(k + 1));
        }
        p
    }
    fn ordering_suffix(&mut self, n: usize) -> String {
        let p: Vec<String> = self.permutation(n).iter().map(usize::to_string).collect();
        format!(":{}", p.join(","))
    }
    fn letters(&mut self, alphabet: &[char], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[self.below(alphabet.len())])
            .collect()
    }
}

/// All strings of `n` letters over `alphabet`.
fn combinations(alphabet: &[char], n: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    for _ in 0..n {
        out = out
            .iter()
            .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
            .collect();
    }
    out
}

/// Format strings to try for a tensor of this order.
fn formats(order: usize, rng: &mut Rng) -> Vec<String> {
    let mut out = vec!["dense".to_string(), "hash".to_string()];
    let plain = if order <= 3 {
        combinations(&['d', 's'], order)
    } else {
        let mut v = vec!["dddd".to_string(), "ssss".to_string()];
        v.push(rng.letters(&['d', 's'], order));
        v.push(rng.letters(&['d', 's'], order));
        v
    };
    for letters in plain {
        out.push(letters.clone());
        if order > 1 {
            out.push(format!("{letters}{}", rng.ordering_suffix(order)));
        }
    }
    // Hashed levels mixed with dense and compressed ones.
    for _ in 0..3 {
        let mut letters: Vec<char> = rng.letters(&['d', 's', 'h'], order).chars().collect();
        let h = rng.below(order);
        letters[h] = 'h';
        let letters: String = letters.into_iter().collect();
        out.push(format!("{letters}{}", rng.ordering_suffix(order)));
    }
    // Bytemap levels mixed with dense and compressed ones, and all bytemap.
    out.push("b".repeat(order));
    for _ in 0..2 {
        let mut letters: Vec<char> = rng.letters(&['d', 's', 'b'], order).chars().collect();
        letters[rng.below(order)] = 'b';
        let letters: String = letters.into_iter().collect();
        out.push(format!("{letters}{}", rng.ordering_suffix(order)));
    }
    out.push("csf".into());
    out.push(format!("csf{}", rng.ordering_suffix(order)));
    out.push("coo".into());
    out.push(format!("coo{}", rng.ordering_suffix(order)));
    if order >= 2 {
        // COO spelled with letters, with a dense or hashed top level on top of it.
        out.push(format!("u{}q", "c".repeat(order - 2)));
        if order >= 3 {
            out.push(format!("du{}q", "c".repeat(order - 3)));
        }
    }
    match order {
        1 => out.push("sv".into()),
        2 => {
            for name in ["csr", "csc", "dcsr", "dcsc", "ell", "dia"] {
                out.push(name.into());
            }
            for _ in 0..2 {
                out.push(format!("bcsr:{}x{}", 1 + rng.below(4), 1 + rng.below(4)));
                out.push(format!("sell:{}", 1 + rng.below(9)));
            }
        }
        _ => {}
    }
    out
}

/// True when the format reads back exactly the entries (no padding slots): plain levels
/// with a last level that is not full (its padding, if any, is not found).
fn compact_values(format: &Format) -> bool {
    format.is_plain()
        && format
            .levels()
            .last()
            .is_some_and(|l| !l.format.properties().full)
}

/// A random coordinate list: dims, entries, and whether to present it sorted.
#[derive(Clone, Debug)]
struct Case {
    coo: Coo,
    seed: u64,
}

fn value() -> impl Strategy<Value = f64> {
    // Multiples of 1/2: sums are exact in any order, so results compare with == 0.
    prop_oneof![
        2 => Just(0.0),
        8 => (-8i32..=8).prop_map(|x| f64::from(x) * 0.5),
    ]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        8 => prop::collection::vec(1usize..=8, 1..=4),
        1 => Just(vec![1, 50]),
        1 => Just(vec![50, 1]),
        1 => Just(vec![1, 1]),
        1 => Just(vec![1]),
        1 => Just(vec![1, 1, 1]),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    shape()
        .prop_flat_map(|dims| {
            let coord: Vec<std::ops::Range<i64>> = dims.iter().map(|&d| 0..d as i64).collect();
            let points: usize = dims.iter().product();
            let max_entries = (points * 2).min(40);
            (
                Just(dims),
                prop::collection::vec((coord, value()), 0..=max_entries),
                prop::collection::vec((any::<Index>(), value()), 0..6),
                any::<bool>(),
                any::<u64>(),
            )
        })
        .prop_map(|(dims, entries, dups, sorted, seed)| {
            let mut entries = entries;
            if !entries.is_empty() {
                for (i, v) in dups {
                    let c = entries[i.index(entries.len())].0.clone();
                    entries.push((c, v));
                }
            }
            if sorted {
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            let coords = entries.iter().flat_map(|(c, _)| c.clone()).collect();
            let values = entries.iter().map(|(_, v)| *v).collect();
            Case {
                coo: Coo::new(dims, coords, values).unwrap(),
                seed: seed | 1,
            }
        })
}

fn build(coo: &Coo, spelling: &str) -> (Format, Tensor) {
    let format = Format::parse(spelling, coo.order())
        .unwrap_or_else(|e| panic!("format `{spelling}` for order {}: {e}", coo.order()));
    let t = Tensor::from_coo(coo, &format, ValueType::F64)
        .unwrap_or_else(|e| panic!("packing into `{spelling}`: {e}\n{coo:?}"));
    (format, t)
}

/// Coordinates of every entry of a sorted list.
fn coord_set(coo: &Coo) -> Vec<&[i64]> {
    (0..coo.len()).map(|e| coo.coord(e)).collect()
}

fn check_case(case: &Case) -> Result<(), TestCaseError> {
    let mut expected = case.coo.clone();
    expected.sort_and_sum();
    let mut rng = Rng(case.seed);
    let list = formats(case.coo.order(), &mut rng);
    let mut built = Vec::with_capacity(list.len());
    for spelling in &list {
        let (format, t) = build(&case.coo, spelling);
        prop_assert_eq!(t.dims(), &case.coo.dims[..]);
        let got = t.to_coo();
        prop_assert_eq!(&got.dims, &expected.dims);
        let diff = expected.max_difference(&got);
        prop_assert!(
            diff == 0.0,
            "`{}` ({}) reads back with difference {}\nexpected {:?}\ngot {:?}",
            spelling,
            format.spelling(),
            diff,
            expected,
            got
        );
        if compact_values(&format) {
            // Explicit zeros stay stored entries; nothing else is stored.
            prop_assert_eq!(
                got.len(),
                expected.len(),
                "`{}` ({}) stores a different number of entries",
                spelling,
                format.spelling()
            );
            prop_assert_eq!(&got.coords, &expected.coords);
            prop_assert_eq!(t.stored_values() >= expected.len(), true);
        } else {
            // Padding adds zeros, but every entry is still there.
            let have = coord_set(&got);
            for c in coord_set(&expected) {
                prop_assert!(
                    have.binary_search(&c).is_ok(),
                    "`{}` lost the entry at {:?}",
                    spelling,
                    c
                );
            }
        }
        // The format reads back to itself.
        prop_assert_eq!(
            Format::parse(&format.spelling(), format.order()).ok(),
            Some(format.clone())
        );
        built.push((spelling.clone(), t));
    }
    // Conversions between random pairs of formats.
    for _ in 0..4 {
        let (from_name, from) = &built[rng.below(built.len())];
        let to_name = &list[rng.below(list.len())];
        let to_format = Format::parse(to_name, case.coo.order()).unwrap();
        let converted = from
            .convert(&to_format)
            .unwrap_or_else(|e| panic!("converting `{from_name}` to `{to_name}`: {e}"));
        prop_assert_eq!(converted.format(), &to_format);
        let got = converted.to_coo();
        let diff = expected.max_difference(&got);
        prop_assert!(
            diff == 0.0,
            "`{}` -> `{}` differs by {}\nexpected {:?}\ngot {:?}",
            from_name,
            to_name,
            diff,
            expected,
            got
        );
        prop_assert_eq!(from.max_difference(&converted), Some(0.0));
    }
    // Single precision holds these values exactly too.
    let spelling = &list[rng.below(list.len())];
    let format = Format::parse(spelling, case.coo.order()).unwrap();
    let t32 = Tensor::from_coo(&case.coo, &format, ValueType::F32).unwrap();
    prop_assert_eq!(t32.value_type(), ValueType::F32);
    prop_assert_eq!(expected.max_difference(&t32.to_coo()), 0.0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_format_reads_back_the_summed_input(case in case()) {
        check_case(&case)?;
    }
}

/// Fixed edge cases, in addition to the random ones.
#[test]
fn edge_cases() {
    let cases = [
        // Empty tensors.
        Coo::new(vec![3, 4], vec![], vec![]).unwrap(),
        Coo::new(vec![1], vec![], vec![]).unwrap(),
        Coo::new(vec![1, 1, 1, 1], vec![], vec![]).unwrap(),
        // A single explicit zero, and duplicates cancelling to an explicit zero.
        Coo::new(vec![1, 1], vec![0, 0], vec![0.0]).unwrap(),
        Coo::new(vec![2, 3], vec![1, 2, 1, 2, 0, 0], vec![1.5, -1.5, 2.0]).unwrap(),
        // Skewed and full.
        Coo::new(
            vec![1, 50],
            (0..50).flat_map(|j| [0, 49 - j]).collect(),
            (0..50).map(|j| (j % 3) as f64).collect(),
        )
        .unwrap(),
        Coo::new(
            vec![50, 1],
            (0..50).flat_map(|i| [(i * 7) % 50, 0]).collect(),
            (0..50).map(|i| i as f64 - 25.0).collect(),
        )
        .unwrap(),
        // Every point of an 8x8x8 tensor plus duplicates.
        Coo::new(
            vec![8, 8, 8],
            (0..1024)
                .flat_map(|e| [(e / 64) % 8, (e / 8) % 8, e % 8])
                .collect(),
            (0..1024).map(|e| (e % 5) as f64 - 2.0).collect(),
        )
        .unwrap(),
    ];
    for (k, coo) in cases.into_iter().enumerate() {
        let case = Case {
            coo,
            seed: 0x9e37_79b9_7f4a_7c15 + k as u64,
        };
        check_case(&case).unwrap_or_else(|e| panic!("edge case {k}: {e}"));
    }
}

/// A hashed level places children in bucket order (`coord mod W`), which need not be
/// coordinate order; `Compressed::pack` assumes its parent segments' entry ranges increase
/// (it walks `segments` with `s.hi <= child.lo`) and so files every child under the first
/// bucket's parent. Found by `every_format_reads_back_the_summed_input`.
#[test]
fn hashed_level_above_compressed_level() {
    // 5x1 matrix with (1,0) = 1 and (4,0) = 2 in `hs`: width 4 puts coordinate 4 in bucket 0
    // and coordinate 1 in bucket 1; the compressed level's pos becomes [0, 2, 2, 2, 2] and
    // the tensor reads back as (4,0) = 3.
    let coo = Coo::new(vec![5, 1], vec![1, 0, 4, 0], vec![1.0, 2.0]).unwrap();
    for spelling in ["hs", "hu", "hds"] {
        let order = if spelling.len() == 3 { 3 } else { 2 };
        let coo = if order == 3 {
            Coo::new(vec![5, 1, 1], vec![1, 0, 0, 4, 0, 0], vec![1.0, 2.0]).unwrap()
        } else {
            coo.clone()
        };
        let (_, t) = build(&coo, spelling);
        let mut expected = coo.clone();
        expected.sort_and_sum();
        assert_eq!(t.to_coo(), expected, "`{spelling}`: {t:?}");
    }
}

proptest! {
    /// CSR to CSC and back (the one-pass transposition), at both index widths and both
    /// value types, equals packing the same entries in the target format.
    #[test]
    fn compressed_matrices_transpose_like_packing(case in case()) {
        prop_assume!(case.coo.order() == 2);
        for (from, to) in [("csr", "csc"), ("csc", "csr"), ("ds", "ds:1,0")] {
            for ty in [ValueType::F64, ValueType::F32] {
                let from_format = Format::parse(from, 2).unwrap();
                let to_format = Format::parse(to, 2).unwrap();
                let source = Tensor::from_coo(&case.coo, &from_format, ty).unwrap();
                let expected = Tensor::from_coo(&case.coo, &to_format, ty).unwrap();
                prop_assert_eq!(&source.convert(&to_format).unwrap(), &expected);
                let wide = source.with_index_width(sparsec::tensor::IndexWidth::I64).unwrap();
                prop_assert_eq!(&wide.convert(&to_format).unwrap(), &expected);
            }
        }
    }
}
