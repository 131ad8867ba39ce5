//! Ordering entries by several bounded integer keys (coordinates), as packing and
//! converting need: a least-significant-key-first counting sort, which costs a pass over
//! the entries per key where a comparison sort costs `log n` comparisons of every key per
//! entry, and falls back to the comparison sort when a key's range is much larger than
//! the number of entries (hypersparse dimensions) or a key is outside its range.

/// The entries `0..len` ordered lexicographically by `keys` (outermost first; entry `e`'s
/// key `k` is `keys[k](e)`, expected in `0..sizes[k]`), ties keeping their order.
pub(super) fn lexicographic_order(
    len: usize,
    keys: &[&dyn Fn(usize) -> i64],
    sizes: &[usize],
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    let in_order = (1..len).all(|e| {
        keys.iter()
            .map(|key| key(e - 1))
            .le(keys.iter().map(|key| key(e)))
    });
    if in_order {
        return order;
    }
    // A counting pass touches its whole count array: worth it while that is not much
    // larger than the entries.
    let countable = sizes
        .iter()
        .all(|&size| size <= len.saturating_mul(4).max(1 << 16));
    if countable && counting_sort_passes(&mut order, keys, sizes) {
        return order;
    }
    order.sort_by(|&a, &b| {
        keys.iter()
            .map(|key| key(a))
            .cmp(keys.iter().map(|key| key(b)))
    });
    order
}

/// Stable counting sorts of `order`, innermost key first; `false` (and `order` in some
/// permutation) when a key is outside its range.
fn counting_sort_passes(
    order: &mut Vec<usize>,
    keys: &[&dyn Fn(usize) -> i64],
    sizes: &[usize],
) -> bool {
    let mut sorted = vec![0usize; order.len()];
    for (key, &size) in keys.iter().zip(sizes).rev() {
        let mut starts = vec![0usize; size + 1];
        for &e in order.iter() {
            let k = key(e);
            if k < 0 || k as u64 >= size as u64 {
                return false;
            }
            starts[k as usize + 1] += 1;
        }
        for k in 0..size {
            starts[k + 1] += starts[k];
        }
        for &e in order.iter() {
            let slot = &mut starts[key(e) as usize];
            sorted[*slot] = e;
            *slot += 1;
        }
        std::mem::swap(order, &mut sorted);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a stable comparison sort, on keys with ties, in and out of range, with
    /// small and huge ranges.
    #[test]
    fn orders_as_a_stable_comparison_sort_would() {
        let mut seed = 12345u64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for (len, size0, size1, out_of_range) in [
            (0, 1, 1, false),
            (1, 1, 1, false),
            (50, 3, 4, false),
            (1000, 40, 1 << 30, false),
            (1000, 7, 9, true),
        ] {
            let a: Vec<i64> = (0..len).map(|_| next(size0) as i64).collect();
            let mut b: Vec<i64> = (0..len).map(|_| next(size1.min(1000)) as i64).collect();
            if out_of_range && len > 0 {
                b[len / 2] = size1 as i64 + 5;
            }
            let keys: [&dyn Fn(usize) -> i64; 2] = [&|e| a[e], &|e| b[e]];
            let got = lexicographic_order(len, &keys, &[size0 as usize, size1 as usize]);
            let mut expected: Vec<usize> = (0..len).collect();
            expected.sort_by_key(|&e| (a[e], b[e]));
            assert_eq!(got, expected, "len {len}");
        }
    }
}
