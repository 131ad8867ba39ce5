//! Ordering entries by several bounded integer keys (coordinates), as packing and
//! converting need: keys packed into one integer and sorted by its digits, or, when they
//! do not fit in one, a least-significant-key-first counting sort, which costs a pass over
//! the entries per key where a comparison sort costs `log n` comparisons of every key per
//! entry; the comparison sort is left for keys outside their range and key ranges much
//! larger than the number of entries (hypersparse dimensions).

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
    if let Some(packed) = packed_order(len, keys, sizes) {
        return packed;
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

/// Items from which [`sort_by_packed_key`] sorts by digits rather than by comparisons.
const RADIX_FROM: usize = 1 << 12;

/// Bits of a key [`sort_by_packed_key`] sorts by in one pass: 2,048 buckets, whose counts and
/// write positions stay in the first levels of cache.
const RADIX_BITS: u32 = 11;

/// The entries ordered by all their keys packed into one integer ([`packed_key`]),
/// sorted by its digits ([`sort_by_packed_key`]). `None` when the keys' ranges multiply
/// beyond `u64` or a key is outside its range.
fn packed_order(len: usize, keys: &[&dyn Fn(usize) -> i64], sizes: &[usize]) -> Option<Vec<usize>> {
    let span = packed_span(sizes)?;
    let mut packed = Vec::with_capacity(len);
    let mut coordinates = vec![0i64; keys.len()];
    for e in 0..len {
        for (c, key) in coordinates.iter_mut().zip(keys) {
            *c = key(e);
        }
        packed.push((packed_key(&coordinates, sizes)?, e));
    }
    let sorted = sort_by_packed_key(packed, |&(key, _)| key, span);
    Some(sorted.into_iter().map(|(_, e)| e).collect())
}

/// The number of packed keys ([`packed_key`]) of coordinates in `sizes`, when it fits in
/// `u64`.
pub(super) fn packed_span(sizes: &[usize]) -> Option<u64> {
    sizes
        .iter()
        .try_fold(1u64, |span, &size| span.checked_mul(size as u64))
}

/// `coordinates` as one mixed-radix number, the first the most significant, which orders
/// as they do lexicographically; `None` when one is outside `0..sizes[k]` (`sizes` must
/// have a [`packed_span`]).
#[inline(always)]
pub(super) fn packed_key(coordinates: &[i64], sizes: &[usize]) -> Option<u64> {
    let mut key = 0u64;
    for (&c, &size) in coordinates.iter().zip(sizes) {
        if c < 0 || c as u64 >= size as u64 {
            return None;
        }
        key = key * size as u64 + c as u64;
    }
    Some(key)
}

/// The coordinates whose [`packed_key`] is `key`.
#[inline(always)]
pub(super) fn unpacked_key(mut key: u64, sizes: &[usize], coordinates: &mut [i64]) {
    for (c, &size) in coordinates.iter_mut().zip(sizes).rev() {
        *c = (key % size as u64) as i64;
        key /= size as u64;
    }
}

/// `items` sorted by `key`, whose values are below `span`, ties keeping their order: for
/// many items a least-significant-digit radix sort, each pass reading the items in order
/// and writing them to a few thousand places at once, where a counting sort per
/// coordinate scatters them over the coordinate's whole range and reads the coordinates
/// through the last pass's permutation. Building CSR from a 1M x 1M coordinate list of
/// 10M entries in random order spent 7 of its 10 s in those counting passes.
pub(super) fn sort_by_packed_key<T: Copy + Default>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> u64,
    span: u64,
) -> Vec<T> {
    let len = items.len();
    if len < RADIX_FROM {
        items.sort_by_key(key);
        return items;
    }
    let bits = u64::BITS - span.saturating_sub(1).leading_zeros();
    let passes = bits.div_ceil(RADIX_BITS) as usize;
    let digit = |item: &T, pass: usize| {
        ((key(item) >> (pass as u32 * RADIX_BITS)) & ((1 << RADIX_BITS) - 1)) as usize
    };
    // Every pass's counts from one read of the items, as the start of each digit's run.
    let mut counts = vec![[0usize; (1 << RADIX_BITS) + 1]; passes];
    for item in &items {
        for (pass, starts) in counts.iter_mut().enumerate() {
            starts[digit(item, pass) + 1] += 1;
        }
    }
    let mut sorted = vec![T::default(); len];
    for (pass, starts) in counts.iter_mut().enumerate() {
        if starts.contains(&len) {
            // Every key has the same digit here.
            continue;
        }
        for d in 0..1 << RADIX_BITS {
            starts[d + 1] += starts[d];
        }
        for item in &items {
            let slot = &mut starts[digit(item, pass)];
            sorted[*slot] = *item;
            *slot += 1;
        }
        std::mem::swap(&mut items, &mut sorted);
    }
    items
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
pub(super) mod tests {
    use super::*;

    /// Numbers below each bound asked for, from a xorshift generator started at `seed`.
    pub(in crate::tensor) fn numbers_below(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |bound| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        }
    }

    /// Against a stable comparison sort, on keys with ties, in and out of range, with
    /// small and huge ranges.
    #[test]
    fn orders_as_a_stable_comparison_sort_would() {
        let mut next = numbers_below(12345);
        for (len, size0, size1, out_of_range) in [
            (0, 1, 1, false),
            (1, 1, 1, false),
            (50, 3, 4, false),
            (1000, 40, 1 << 30, false),
            (1000, 1 << 40, 1 << 30, false),
            (1000, 40, 1 << 62, false),
            (20_000, 5000, 1 << 30, false),
            (20_000, 1 << 40, 1 << 20, false),
            (20_000, 1 << 40, 1 << 62, false),
            (20_000, 7, 9, true),
            (1000, 7, 9, true),
        ] {
            let a: Vec<i64> = (0..len).map(|_| next(size0.min(1 << 20)) as i64).collect();
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
