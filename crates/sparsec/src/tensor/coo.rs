//! Coordinate lists: the interchange form between files, generators and formats.

use super::{order, unscaled_difference, TensorError};

/// A coordinate list: `values[e]` sits at `coords[e*order .. (e+1)*order]`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Coo {
    /// Dimension sizes.
    pub dims: Vec<usize>,
    /// Flattened coordinates, `order` per entry.
    pub coords: Vec<i64>,
    /// One value per entry.
    pub values: Vec<f64>,
}

impl Coo {
    /// A coordinate list, checked for consistent lengths and in-range coordinates.
    pub fn new(dims: Vec<usize>, coords: Vec<i64>, values: Vec<f64>) -> Result<Coo, TensorError> {
        let coo = Coo {
            dims,
            coords,
            values,
        };
        coo.validate()?;
        Ok(coo)
    }

    /// A coordinate list with no entries.
    pub fn empty(dims: Vec<usize>) -> Coo {
        Coo {
            dims,
            coords: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Number of modes.
    pub fn order(&self) -> usize {
        self.dims.len()
    }

    /// Number of entries (stored components, duplicates counted).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Coordinates of entry `e`.
    pub fn coord(&self, e: usize) -> &[i64] {
        let n = self.order();
        &self.coords[e * n..(e + 1) * n]
    }

    /// Check lengths and ranges.
    pub fn validate(&self) -> Result<(), TensorError> {
        let n = self.order();
        if self.coords.len() != self.values.len() * n {
            return Err(TensorError::Malformed(format!(
                "{} coordinates for {} entries of an order-{n} tensor",
                self.coords.len(),
                self.values.len()
            )));
        }
        for e in 0..self.len() {
            for (mode, (&c, &size)) in self.coord(e).iter().zip(&self.dims).enumerate() {
                if c < 0 || c as u64 >= size as u64 {
                    return Err(TensorError::OutOfRange {
                        entry: e,
                        mode,
                        coord: c,
                        size,
                    });
                }
            }
        }
        Ok(())
    }

    /// Sort entries lexicographically and sum duplicates (explicit zeros stay).
    pub fn sort_and_sum(&mut self) {
        self.sort_and_sum_as(false);
    }

    /// [`Coo::sort_and_sum`], returning where each original entry went: `Some(m)` with
    /// `m[e]` the index of entry `e` after sorting and summing, or `None` when the entries
    /// were already strictly increasing and stay where they are.
    pub fn sort_and_sum_tracked(&mut self) -> Option<Vec<usize>> {
        self.sort_and_sum_as(true)
    }

    /// [`Coo::sort_and_sum_tracked`]; without `track` the list of where the entries went
    /// stays empty, sparing a write at random per entry.
    fn sort_and_sum_as(&mut self, track: bool) -> Option<Vec<usize>> {
        let n = self.order();
        if self.strictly_increasing() {
            return None;
        }
        if !track {
            if let Some(sums) = self.packed_sums() {
                *self = Coo::from_packed_sums(std::mem::take(&mut self.dims), sums);
                return Some(Vec::new());
            }
        }
        let mut summed = Summed {
            order: n,
            coords: Vec::with_capacity(self.coords.len()),
            values: Vec::with_capacity(self.values.len()),
            moved_to: if track {
                vec![0; self.len()]
            } else {
                Vec::new()
            },
        };
        if let Some(sorted) = self.packed_entries() {
            // The coordinates come back from the keys, and the values with them: no
            // entry is read at random.
            let mut coordinates = vec![0i64; n];
            let mut previous = None;
            for (key, e, value) in sorted {
                let repeated = previous == Some(key);
                if !repeated {
                    order::unpacked_key(key, &self.dims, &mut coordinates);
                }
                summed.add(e, &coordinates, value, repeated);
                previous = Some(key);
            }
        } else {
            for e in self.sorted_permutation(&(0..n).collect::<Vec<_>>()) {
                let c = self.coord(e);
                summed.add(e, c, self.values[e], summed.last_is(c));
            }
        }
        self.coords = summed.coords;
        self.values = summed.values;
        Some(summed.moved_to)
    }

    /// True when each entry's coordinates come after the previous entry's: sorted, with
    /// no duplicates.
    pub(super) fn strictly_increasing(&self) -> bool {
        (1..self.len()).all(|e| self.coord(e - 1) < self.coord(e))
    }

    /// The entries as (packed coordinates, value), sorted by their coordinates, the values
    /// of each coordinates summed in the list's order; `None` when the coordinates do not
    /// pack into one integer (as [`Coo::packed_entries`]). Without the entries' numbers
    /// (which only tracking needs) the sort moves 16 bytes an entry instead of 24.
    pub(super) fn packed_sums(&self) -> Option<Vec<(u64, f64)>> {
        let span = order::packed_span(&self.dims)?;
        let mut packed = Vec::with_capacity(self.len());
        for (e, &value) in self.values.iter().enumerate() {
            packed.push((order::packed_key(self.coord(e), &self.dims)?, value));
        }
        let mut sums = order::sort_by_packed_key(packed, |&(key, _)| key, span);
        sums.dedup_by(|later, kept| {
            let repeated = later.0 == kept.0;
            if repeated {
                kept.1 += later.1;
            }
            repeated
        });
        Some(sums)
    }

    /// The coordinate list of entries given as packed coordinates and values (as
    /// [`Coo::packed_sums`] gives them), in their order.
    pub(super) fn from_packed_sums(dims: Vec<usize>, sums: Vec<(u64, f64)>) -> Coo {
        let mut coordinates = vec![0i64; dims.len()];
        let mut coords = Vec::with_capacity(sums.len() * dims.len());
        let mut values = Vec::with_capacity(sums.len());
        for (key, value) in sums {
            order::unpacked_key(key, &dims, &mut coordinates);
            coords.extend_from_slice(&coordinates);
            values.push(value);
        }
        Coo {
            dims,
            coords,
            values,
        }
    }

    /// The entries as (packed coordinates, entry, value), sorted by their coordinates;
    /// `None` when the coordinates do not pack into one integer
    /// ([`order::packed_key`]). A coordinate out of range gives `None` too; only an
    /// unvalidated list gets that far, and its fallback (`lexicographic_order`) tries
    /// packing once more before sorting mode by mode, a cost left on that rare path.
    fn packed_entries(&self) -> Option<Vec<(u64, usize, f64)>> {
        let span = order::packed_span(&self.dims)?;
        let mut packed = Vec::with_capacity(self.len());
        for (e, &value) in self.values.iter().enumerate() {
            packed.push((order::packed_key(self.coord(e), &self.dims)?, e, value));
        }
        Some(order::sort_by_packed_key(packed, |&(key, _, _)| key, span))
    }

    /// Entry indices sorted by the given modes (stable for ties).
    pub fn sorted_permutation(&self, modes: &[usize]) -> Vec<usize> {
        let n = self.order();
        let keys: Vec<Box<dyn Fn(usize) -> i64 + '_>> = modes
            .iter()
            .map(|&m| Box::new(move |e: usize| self.coords[e * n + m]) as Box<dyn Fn(usize) -> i64>)
            .collect();
        let keys: Vec<&dyn Fn(usize) -> i64> = keys.iter().map(|k| k.as_ref()).collect();
        let sizes: Vec<usize> = modes.iter().map(|&m| self.dims[m]).collect();
        super::order::lexicographic_order(self.len(), &keys, &sizes)
    }

    /// Largest scaled difference between two sorted, summed lists (absent = zero; equal
    /// non-finite values, NaN against NaN included, agree).
    pub fn max_difference(&self, other: &Coo) -> f64 {
        let n = self.order();
        let (mut a, mut b) = (0, 0);
        let mut worst = 0.0f64;
        let scaled = |x: f64, y: f64| {
            unscaled_difference(x, y)
                .unwrap_or_else(|| (x - y).abs() / x.abs().max(y.abs()).max(1.0))
        };
        while a < self.len() || b < other.len() {
            let ord = match (a < self.len(), b < other.len()) {
                (true, true) => {
                    self.coords[a * n..(a + 1) * n].cmp(&other.coords[b * n..(b + 1) * n])
                }
                (true, false) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match ord {
                std::cmp::Ordering::Less => {
                    worst = worst.max(scaled(self.values[a], 0.0));
                    a += 1;
                }
                std::cmp::Ordering::Greater => {
                    worst = worst.max(scaled(0.0, other.values[b]));
                    b += 1;
                }
                std::cmp::Ordering::Equal => {
                    worst = worst.max(scaled(self.values[a], other.values[b]));
                    a += 1;
                    b += 1;
                }
            }
        }
        worst
    }
}

/// Sorted entries with duplicates summed, built in order by [`Coo::sort_and_sum_as`].
struct Summed {
    order: usize,
    coords: Vec<i64>,
    values: Vec<f64>,
    /// Where each original entry went (empty when not tracked).
    moved_to: Vec<usize>,
}

impl Summed {
    /// Whether the last entry is at `coordinates`, compared one by one: a slice
    /// comparison calls `memcmp`, 9% of the time summing 10M entries of a matrix.
    fn last_is(&self, coordinates: &[i64]) -> bool {
        let last = self.values.len();
        last > 0
            && self.coords[(last - 1) * self.order..]
                .iter()
                .eq(coordinates.iter())
    }

    /// Add entry `e`, which is at `coordinates`, to the last entry (`repeated`) or after
    /// it.
    #[inline(always)]
    fn add(&mut self, e: usize, coordinates: &[i64], value: f64, repeated: bool) {
        if repeated {
            *self
                .values
                .last_mut()
                .expect("a repeated entry follows one") += value;
        } else {
            self.coords.extend_from_slice(coordinates);
            self.values.push(value);
        }
        if !self.moved_to.is_empty() {
            self.moved_to[e] = self.values.len() - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Unsorted entries with duplicates, many enough to be sorted by digits, against a
    /// map summing them; with coordinates that pack into one integer and ones that do
    /// not (order 4 in 2^20 each), tracked and not.
    #[test]
    fn unsorted_duplicates_are_sorted_and_summed() {
        let mut next = order::tests::numbers_below(99);
        for dims in [
            vec![300, 7],
            vec![50, 1 << 30, 3],
            vec![1 << 20; 4],
            vec![],
            vec![9],
        ] {
            let len = 20_000;
            let mut coo = Coo {
                dims: dims.clone(),
                ..Coo::default()
            };
            for e in 0..len {
                for &d in &dims {
                    coo.coords
                        .push(next((d as u64).min(40)) as i64 + (d as i64 - 40).max(0));
                }
                coo.values.push(e as f64);
            }
            let mut expected = BTreeMap::<Vec<i64>, f64>::new();
            for e in 0..len {
                *expected.entry(coo.coord(e).to_vec()).or_default() += coo.values[e];
            }
            let original = coo.clone();
            let mut tracked = coo.clone();
            coo.sort_and_sum();
            let moved_to = tracked.sort_and_sum_tracked().expect("unsorted");
            assert!(coo == tracked, "{dims:?}");
            let got: Vec<(Vec<i64>, f64)> = (0..coo.len())
                .map(|e| (coo.coord(e).to_vec(), coo.values[e]))
                .collect();
            assert_eq!(got, expected.into_iter().collect::<Vec<_>>(), "{dims:?}");
            for (e, &slot) in moved_to.iter().enumerate() {
                assert_eq!(original.coord(e), tracked.coord(slot), "{dims:?} entry {e}");
            }
        }
    }
}
