//! Coordinate lists: the interchange form between files, generators and formats.

use super::{unscaled_difference, TensorError};

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
        self.sort_and_sum_tracked();
    }

    /// [`Coo::sort_and_sum`], returning where each original entry went: `Some(m)` with
    /// `m[e]` the index of entry `e` after sorting and summing, or `None` when the entries
    /// were already strictly increasing and stay where they are.
    pub fn sort_and_sum_tracked(&mut self) -> Option<Vec<usize>> {
        let n = self.order();
        let strictly_increasing = (1..self.len()).all(|e| self.coord(e - 1) < self.coord(e));
        if strictly_increasing {
            return None;
        }
        let perm = self.sorted_permutation(&(0..n).collect::<Vec<_>>());
        let mut coords = Vec::with_capacity(self.coords.len());
        let mut values: Vec<f64> = Vec::with_capacity(self.values.len());
        let mut moved_to = vec![0; self.len()];
        for e in perm {
            let c = self.coord(e);
            let last = values.len();
            if last > 0 && &coords[(last - 1) * n..last * n] == c {
                values[last - 1] += self.values[e];
                moved_to[e] = last - 1;
            } else {
                coords.extend_from_slice(c);
                values.push(self.values[e]);
                moved_to[e] = last;
            }
        }
        self.coords = coords;
        self.values = values;
        Some(moved_to)
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
