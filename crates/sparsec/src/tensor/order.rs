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

/// Items from which [`sort_by_packed_key`] distributes them by their most significant
/// digit first: beyond this many (16 to 24 bytes each, 4 to 6 MiB), a pass over them no
/// longer runs in the last level of cache. Below it, a pass per digit costs fewer
/// instructions than sorting each bucket apart (cage10's 150k entries: 6% more).
const BUCKETS_FIRST_FROM: usize = 1 << 18;

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
/// many items a radix sort, each pass reading the items in order and writing them to a
/// few thousand places at once, where a counting sort per coordinate scatters them over
/// the coordinate's whole range and reads the coordinates through the last pass's
/// permutation. Building CSR from a 1M x 1M coordinate list of 10M entries in random order
/// spent 7 of its 10 s in those counting passes.
///
/// Many items are first distributed by their most significant digit, then each bucket
/// (for uniform keys, a few thousand items) is sorted by its remaining digits while it is
/// in cache, the buckets shared among threads: one pass over memory instead of one per
/// digit.
pub(super) fn sort_by_packed_key<T: Copy + Default + Send>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> u64 + Sync,
    span: u64,
) -> Vec<T> {
    let len = items.len();
    if len < RADIX_FROM {
        items.sort_by_key(key);
        return items;
    }
    let bits = u64::BITS - span.saturating_sub(1).leading_zeros();
    let mut scratch = vec![T::default(); len];
    if len < BUCKETS_FIRST_FROM || bits <= RADIX_BITS {
        let in_scratch = sort_by_low_digits(&mut items, &mut scratch, &key, bits);
        return if in_scratch { scratch } else { items };
    }
    let low_bits = bits - RADIX_BITS;
    let top_digit = |item: &T| (key(item) >> low_bits) as usize;
    let mut starts = vec![0usize; (1 << RADIX_BITS) + 1];
    for item in &items {
        starts[top_digit(item) + 1] += 1;
    }
    scatter_by_digit(&items, &mut scratch, &mut starts, top_digit);
    // Each digit's next slot is now its bucket's end.
    let bucket_ends = starts[..1 << RADIX_BITS].to_vec();
    // The buckets are in `scratch` now, and `items` serves as their scratch space.
    let sort_buckets = |buckets: &mut [T], spare: &mut [T], ends: &[usize], offset: usize| {
        let (mut buckets, mut spare, mut start) = (buckets, spare, offset);
        for &end in ends {
            let (bucket, rest) = std::mem::take(&mut buckets).split_at_mut(end - start);
            let (bucket_spare, spare_rest) = std::mem::take(&mut spare).split_at_mut(end - start);
            (buckets, spare, start) = (rest, spare_rest, end);
            if bucket.len() < RADIX_FROM {
                bucket.sort_by_key(&key);
            } else if sort_by_low_digits(bucket, bucket_spare, &key, low_bits) {
                bucket.copy_from_slice(bucket_spare);
            }
        }
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(len / BUCKETS_FIRST_FROM);
    if threads <= 1 {
        sort_buckets(&mut scratch, &mut items, &bucket_ends, 0);
        return scratch;
    }
    // Each thread takes a run of whole buckets holding about its share of the items.
    std::thread::scope(|scope| {
        let sort_buckets = &sort_buckets;
        let (mut buckets, mut spare, mut start) = (&mut scratch[..], &mut items[..], 0);
        let mut first_bucket = 0;
        let mut handles = Vec::with_capacity(threads);
        for t in 1..=threads {
            let last_bucket = match t {
                t if t == threads => bucket_ends.len(),
                t => {
                    let share_end = len * t / threads;
                    first_bucket + bucket_ends[first_bucket..].partition_point(|&e| e < share_end)
                }
            };
            let ends = &bucket_ends[first_bucket..last_bucket];
            let end = ends.last().copied().unwrap_or(start);
            let (group, rest) = std::mem::take(&mut buckets).split_at_mut(end - start);
            let (group_spare, spare_rest) = std::mem::take(&mut spare).split_at_mut(end - start);
            let offset = start;
            (buckets, spare, start, first_bucket) = (rest, spare_rest, end, last_bucket);
            handles.push(scope.spawn(move || sort_buckets(group, group_spare, ends, offset)));
        }
        for handle in handles {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    scratch
}

/// Sorts `items` stably by the lowest `bits` bits of `key`, a digit a pass, every pass's
/// counts taken in one read; `scratch` is as long as `items`. True when the sorted items
/// ended in `scratch`.
fn sort_by_low_digits<T: Copy>(
    items: &mut [T],
    scratch: &mut [T],
    key: &impl Fn(&T) -> u64,
    bits: u32,
) -> bool {
    let len = items.len();
    let passes = bits.div_ceil(RADIX_BITS) as usize;
    let digit = |item: &T, pass: usize| {
        ((key(item) >> (pass as u32 * RADIX_BITS)) & ((1 << RADIX_BITS) - 1)) as usize
    };
    let mut counts = vec![[0usize; (1 << RADIX_BITS) + 1]; passes];
    for item in items.iter() {
        for (pass, starts) in counts.iter_mut().enumerate() {
            starts[digit(item, pass) + 1] += 1;
        }
    }
    let (mut from, mut to) = (items, scratch);
    let mut in_scratch = false;
    for (pass, starts) in counts.iter_mut().enumerate() {
        if starts.contains(&len) {
            // Every key has the same digit here.
            continue;
        }
        scatter_by_digit(from, to, starts, |item| digit(item, pass));
        (from, to) = (to, from);
        in_scratch = !in_scratch;
    }
    in_scratch
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
        scatter_by_digit(order, &mut sorted, &mut starts, |&e| key(e) as usize);
        std::mem::swap(order, &mut sorted);
    }
    true
}

/// The placing pass of a stable counting sort: `starts[d + 1]` holds how many of `from`'s
/// items have digit `d`; each item is copied to `to` at its digit's next slot, in order.
/// Afterwards `starts[d]` is where digit `d`'s items end.
fn scatter_by_digit<T: Copy>(
    from: &[T],
    to: &mut [T],
    starts: &mut [usize],
    digit: impl Fn(&T) -> usize,
) {
    for d in 1..starts.len() {
        starts[d] += starts[d - 1];
    }
    for item in from {
        let slot = &mut starts[digit(item)];
        to[*slot] = *item;
        *slot += 1;
    }
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

    /// Against a stable comparison sort, for every way the digit sort can go: few items;
    /// many, in one thread (fewer than twice [`BUCKETS_FIRST_FROM`]) or several; buckets
    /// small enough to compare, or sorted by one, two or three more digits; everything in
    /// one bucket; heavy ties.
    #[test]
    fn digit_sort_is_a_stable_sort() {
        let mut next = numbers_below(777);
        // (items, span, key of item `k` given a generator of numbers below a bound)
        type KeyOf<'a> = &'a dyn Fn(u64, &mut dyn FnMut(u64) -> u64) -> u64;
        let cases: [(usize, u64, KeyOf); 9] = [
            (5000, 1 << 40, &|_, n| n(1 << 40)),
            (400_000, 1 << 40, &|_, n| n(1 << 40)),
            (600_000, 1 << 40, &|_, n| n(1 << 40)),
            (600_000, 1 << 24, &|_, n| n(1 << 24)),
            (600_000, 1 << 40, &|_, n| n(1 << 15)),
            (600_000, 1 << 36, &|k, n| (k % 50) << 30 | n(1 << 20)),
            (600_000, 1 << 36, &|k, n| (k % 50) << 30 | n(1 << 25)),
            (600_000, 1 << 40, &|_, n| n(100)),
            (600_000, 1 << 30, &|k, n| {
                if k % 2 == 0 {
                    12345
                } else {
                    n(1 << 30)
                }
            }),
        ];
        for (case, (len, span, key_of)) in cases.into_iter().enumerate() {
            let items: Vec<(u64, usize)> =
                (0..len).map(|e| (key_of(e as u64, &mut next), e)).collect();
            assert!(items.iter().all(|&(key, _)| key < span));
            let got = sort_by_packed_key(items.clone(), |&(key, _)| key, span);
            let mut expected = items;
            expected.sort_by_key(|&(key, _)| key);
            assert!(got == expected, "case {case}");
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
