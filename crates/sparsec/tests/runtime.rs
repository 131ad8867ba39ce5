//! The C runtime (`src/codegen/runtime.c`), called through the library build of it
//! (`sparsec::codegen::runtime`) and checked against independent Rust references.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sparsec::codegen::runtime::{self, sys, EntryBuffer};

/// Musser's median-of-3 killer: quicksort pivoting on the first, middle and last element
/// makes one-element progress per partition, so only the heapsort fallback saves it.
fn median_of_3_killer(n: usize) -> Vec<i64> {
    let k = n / 2;
    let mut a = vec![0; 2 * k];
    for i in 1..=k {
        a[i - 1] = if i % 2 == 1 { i } else { k + i - 1 } as i64;
        a[k + i - 1] = 2 * i as i64;
    }
    a
}

fn check_sort(a: &[i64]) {
    let mut got = a.to_vec();
    runtime::sort_index(&mut got);
    let mut want = a.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "sorting {} values", a.len());
}

#[test]
fn sort_index_matches_sort_unstable_on_random_lists() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut lengths: Vec<usize> = (0..=64).collect();
    lengths.extend([100, 255, 1000, 4095, 4096, 4097, 5000]);
    for n in lengths {
        // Few distinct values (many duplicates), a moderate range, the full range.
        for range in [3, 1000, i64::MAX] {
            let a: Vec<i64> = (0..n).map(|_| rng.gen_range(-range..range)).collect();
            check_sort(&a);
        }
    }
}

#[test]
fn sort_index_matches_sort_unstable_on_structured_lists() {
    for n in [0, 1, 2, 24, 25, 26, 100, 1000, 5000] {
        let sorted: Vec<i64> = (0..n as i64).collect();
        let reversed: Vec<i64> = sorted.iter().rev().copied().collect();
        let equal = vec![7; n];
        let organ_pipe: Vec<i64> = (0..n as i64).map(|i| i.min(n as i64 - i)).collect();
        let sawtooth: Vec<i64> = (0..n as i64).map(|i| i % 17).collect();
        for a in [sorted, reversed, equal, organ_pipe, sawtooth] {
            check_sort(&a);
        }
        check_sort(&median_of_3_killer(n));
    }
}

/// A touched list of the distinct coordinates `coords` (shuffled) and its flags.
fn touched(coords: &[i64], rng: &mut StdRng) -> (Vec<i64>, Vec<u8>) {
    let mut list = coords.to_vec();
    list.shuffle(rng);
    let len = coords.iter().max().map_or(0, |&m| m as usize + 1);
    let mut seen = vec![0u8; len];
    for &c in coords {
        assert_eq!(
            seen[c as usize], 0,
            "touched lists hold distinct coordinates"
        );
        seen[c as usize] = 1;
    }
    (list, seen)
}

/// `n` distinct coordinates in `lo..hi`, always including both ends.
fn distinct(n: usize, lo: i64, hi: i64, rng: &mut StdRng) -> Vec<i64> {
    let mut set = std::collections::BTreeSet::from([lo, hi - 1]);
    while set.len() < n {
        set.insert(rng.gen_range(lo..hi));
    }
    set.into_iter().collect()
}

fn check_order_touched(coords: &[i64], rng: &mut StdRng) {
    let (mut list, seen) = touched(coords, rng);
    runtime::order_touched(&mut list, &seen);
    let mut want = coords.to_vec();
    want.sort_unstable();
    assert_eq!(list, want, "ordering {} coordinates", coords.len());
}

// `sparsec_order_touched` takes, for n coordinates between lo and hi:
// - the flag scan when (hi - lo) / 8 <= n;
// - else the bitmap when (hi >> 12) - (lo >> 12) <= 2 n + 8 (summary words per entry);
// - else a radix sort when 32 < n <= 4096, and an introsort otherwise.
// The flags end at the largest coordinate, so each bitmap is as narrow as it can be.

#[test]
fn order_touched_short_lists() {
    let mut rng = StdRng::seed_from_u64(2);
    check_order_touched(&[], &mut rng);
    check_order_touched(&[5], &mut rng);
    check_order_touched(&[9, 3], &mut rng);
}

#[test]
fn order_touched_by_flag_scan() {
    let mut rng = StdRng::seed_from_u64(3);
    // Dense rows: spans up to 8 n, starting and ending off 32-column words, and a block
    // of consecutive columns (eight flags in one word).
    for (n, lo, hi) in [
        (2, 0, 2),
        (3, 5, 25),
        (40, 3, 300),
        (500, 17, 4001),
        (4000, 1, 32_000),
    ] {
        check_order_touched(&distinct(n, lo, hi, &mut rng), &mut rng);
    }
    check_order_touched(&(100..164).collect::<Vec<_>>(), &mut rng);
}

#[test]
fn order_touched_by_bitmap() {
    let mut rng = StdRng::seed_from_u64(6);
    // Sparser than the flag scan takes, within 2 n + 8 summary words: inside one word of
    // 64 columns, across a summary word's edge (4096 columns), over many summary words,
    // and longer than the radix sort's limit.
    for (n, lo, hi) in [
        (2, 0, 20),
        (3, 5, 40),
        (2, 4090, 4200),
        (20, 0, 100_000),
        (40, 3, 200_000),
        (1000, 7, 1 << 20),
        (5000, 0, 1 << 23),
    ] {
        check_order_touched(&distinct(n, lo, hi, &mut rng), &mut rng);
    }
}

#[test]
fn order_touched_by_radix_sort() {
    let mut rng = StdRng::seed_from_u64(4);
    // Spans over 2 n + 8 summary words: three byte passes (an odd count, which ends in
    // the scratch array) and four.
    for n in [33, 34, 100, 200] {
        check_order_touched(&distinct(n, 10, 1 << 22, &mut rng), &mut rng);
    }
    check_order_touched(&distinct(1000, 7, 1 << 25, &mut rng), &mut rng);
    check_order_touched(&distinct(4096, 7, 1 << 26, &mut rng), &mut rng);
}

#[test]
fn order_touched_by_introsort() {
    let mut rng = StdRng::seed_from_u64(5);
    // Sparse rows too short for the radix sort, and too long for its stack scratch.
    for (n, hi) in [(2, 100_000), (3, 100_000), (20, 1 << 20), (32, 1 << 20)] {
        check_order_touched(&distinct(n, 0, hi, &mut rng), &mut rng);
    }
    for n in [4097, 5000] {
        check_order_touched(&distinct(n, 0, 1 << 26, &mut rng), &mut rng);
    }
}

#[test]
#[should_panic(expected = "every touched coordinate is flagged")]
fn order_touched_refuses_an_unflagged_coordinate() {
    runtime::order_touched(&mut [1, 2], &[0, 1, 0, 1]);
}

#[test]
#[should_panic(expected = "every flagged coordinate is in the list")]
fn order_touched_refuses_a_flag_missing_from_the_list() {
    // The scan would write three coordinates into a list of two.
    runtime::order_touched(&mut [1, 3], &[0, 1, 1, 1]);
}

#[test]
#[should_panic(expected = "flags are 0 or 1")]
fn order_touched_refuses_other_flag_values() {
    runtime::order_touched(&mut [1], &[0, 2]);
}

/// Linear probing in block `parent` from the coordinate's home bucket: where `coord` is,
/// else the first empty bucket, else (a full block) the home bucket.
fn locate_model(idx: &[i64], width: usize, parent: usize, coord: i64) -> usize {
    let home = coord.rem_euclid(width as i64) as usize;
    (0..width)
        .map(|k| parent * width + (home + k) % width)
        .find(|&p| idx[p] == coord || idx[p] == -1)
        .unwrap_or(parent * width + home)
}

#[test]
fn hash_locate_probes_wrap_and_stop_on_a_full_block() {
    // Block 1 of width 8: 7, 15 and 23 share home bucket 7; 15 and 23 wrap to the start.
    let mut idx = vec![-1; 24];
    for coord in [7, 15, 23] {
        let p = sparsec::format::hash_locate(&idx, 8, 1, coord);
        assert_eq!(idx[p], -1);
        idx[p] = coord;
    }
    assert_eq!(&idx[8..16], &[15, 23, -1, -1, -1, -1, -1, 7]);
    assert_eq!(sparsec::format::hash_locate(&idx, 8, 1, 23), 9);
    assert_eq!(
        sparsec::format::hash_locate(&idx, 8, 1, 31),
        10,
        "absent: first empty bucket"
    );
    assert_eq!(
        sparsec::format::hash_locate(&idx, 8, 1, -2),
        14,
        "negative coordinates: home 6"
    );
    // A full block: a present coordinate is found, an absent one gets its home bucket.
    let full: Vec<i64> = (0..8).map(|b| 8 * b + (b + 3) % 8).collect();
    assert_eq!(sparsec::format::hash_locate(&full, 8, 0, 8 * 2 + 5), 2);
    assert_eq!(sparsec::format::hash_locate(&full, 8, 0, 100), 4);
}

#[test]
fn hash_locate_matches_a_linear_probing_model() {
    let mut rng = StdRng::seed_from_u64(6);
    for _ in 0..300 {
        let width = rng.gen_range(1..=17);
        let blocks = rng.gen_range(1..=4);
        let mut idx = vec![-1; width * blocks];
        for parent in 0..blocks {
            // From empty to full blocks, with coordinates colliding on few home buckets.
            for _ in 0..rng.gen_range(0..=width) {
                let coord = rng.gen_range(0..3 * width as i64);
                let p = locate_model(&idx, width, parent, coord);
                idx[p] = coord;
            }
        }
        for parent in 0..blocks {
            for coord in -20..4 * width as i64 {
                assert_eq!(
                    sparsec::format::hash_locate(&idx, width, parent, coord),
                    locate_model(&idx, width, parent, coord),
                    "coordinate {coord} in block {parent} of {idx:?} (width {width})"
                );
            }
        }
    }
}

#[test]
fn entry_buffer_grows_and_keeps_its_entries() {
    let mut buffer = EntryBuffer::new(2);
    assert!(buffer.is_empty());
    assert_eq!(
        (buffer.capacity(), buffer.coords(), buffer.vals()),
        (0, &[][..], &[][..])
    );
    let mut coords = Vec::new();
    let mut vals = Vec::new();
    for e in 0..5000i64 {
        buffer.push(&[e, -e], e as f64 * 0.5).unwrap();
        coords.extend([e, -e]);
        vals.push(e as f64 * 0.5);
        let capacity = match e + 1 {
            1..=1024 => 1024,
            1025..=2048 => 2048,
            2049..=4096 => 4096,
            _ => 8192,
        };
        assert_eq!(buffer.capacity(), capacity, "after {} entries", e + 1);
    }
    assert_eq!(buffer.len(), 5000);
    assert_eq!(buffer.coords(), coords);
    assert_eq!(buffer.vals(), vals);
}

#[test]
fn entry_buffer_of_order_zero_holds_values() {
    let mut buffer = EntryBuffer::new(0);
    for e in 0..3000 {
        buffer.push(&[], e as f64).unwrap();
    }
    assert_eq!(buffer.coords(), &[] as &[i64]);
    assert_eq!(buffer.vals(), (0..3000).map(f64::from).collect::<Vec<_>>());
}

#[test]
fn append_through_the_raw_buffer() {
    let mut buffer = EntryBuffer::new(3);
    buffer.push(&[1, 2, 3], 1.5).unwrap();
    // SAFETY: the buffer has order 3 and the coordinates are three.
    let ok = unsafe { sys::sparsec_append(buffer.as_raw_mut(), 3, [4, 5, 6].as_ptr(), 2.5) };
    assert_eq!(ok, 1);
    assert_eq!(buffer.coords(), &[1, 2, 3, 4, 5, 6]);
    assert_eq!(buffer.vals(), &[1.5, 2.5]);
}

#[test]
#[should_panic(expected = "one coordinate per mode")]
fn entry_buffer_refuses_entries_of_another_order() {
    let _ = EntryBuffer::new(2).push(&[1], 0.0);
}

/// The runtime compiles without warnings as C99 with OpenMP, the way it is built into the
/// library. Kernels print parts of it, so a warning here is one in every kernel.
#[test]
fn runtime_compiles_warning_free() {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/src/codegen/runtime.c");
    let object = tempfile::NamedTempFile::new().unwrap();
    let output = std::process::Command::new("gcc")
        .args([
            "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-fopenmp", "-c", source,
        ])
        .arg("-o")
        .arg(object.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc, which this test needs: {e}"));
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "gcc on runtime.c: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
