//! Seeded random tensor generators for tests and benchmarks.
//!
//! Every generator returns a [`Coo`] with distinct coordinates, sorted lexicographically
//! (row-major), and nonzero values drawn uniformly from `[-1, -0.1] ∪ [0.1, 1]` (no
//! accidental zeros, no values small enough to hide cancellation). The same arguments and
//! seed give the same tensor on every platform.
//!
//! Sparse generators never build a dense mask: they draw coordinates and deduplicate, so
//! a 1M x 1M matrix with 10M nonzeros costs about as much memory as its coordinate list.
//! Sizes come from the user (`-d i:3000000000`), so every array a generator builds is
//! allocated fallibly: one that cannot be is [`TensorError::TooLarge`], naming the bytes.
//!
//! ```
//! use sparsec::generate;
//! let a = generate::uniform(&[1000, 1000], 0.01, 42)?;
//! assert_eq!(a.len(), 10_000);
//! let b = generate::skewed_rows(100, 100, 1.0, 1.05, 7)?; // row i: about 1.05^i nonzeros
//! assert!(b.len() > 0);
//! assert!(generate::dense(&[1 << 40, 1 << 40], 1).is_err());
//! # Ok::<(), sparsec::tensor::TensorError>(())
//! ```

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::tensor::{Coo, TensorError};

/// A vector of the items of `items`, of which there are at most `len`, in room reserved
/// fallibly: `what` names the array in the error.
fn collected<T>(
    len: Option<usize>,
    items: impl Iterator<Item = T>,
    what: &str,
) -> Result<Vec<T>, TensorError> {
    let mut v = reserved(len, what)?;
    v.extend(items);
    Ok(v)
}

/// An empty vector with room for `len` elements (`None`: a count that overflowed).
fn reserved<T>(len: Option<usize>, what: &str) -> Result<Vec<T>, TensorError> {
    let what = || format!("the generated tensor's {what}");
    let len = len.ok_or_else(|| {
        TensorError::TooLarge(format!("{} would outnumber the address space", what()))
    })?;
    crate::memory::reserved(len, &what).map_err(TensorError::TooLarge)
}

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A random value in `[-1, -0.1] ∪ [0.1, 1]`.
fn value(rng: &mut StdRng) -> f64 {
    let magnitude = rng.gen_range(0.1..=1.0);
    if rng.gen::<bool>() {
        magnitude
    } else {
        -magnitude
    }
}

/// `k` distinct integers of `0..n`, sorted. Exact count (`k` is capped at `n`).
///
/// Dense selections (`k` at least a quarter of `n`) scan `0..n` once (Knuth's selection
/// sampling); sparse ones draw `k` values, sort, deduplicate and draw again for the few
/// duplicates, so memory stays proportional to `k`.
fn sample_distinct(rng: &mut StdRng, n: u64, k: u64) -> Result<Vec<u64>, TensorError> {
    let k = k.min(n);
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut out: Vec<u64> = reserved(usize::try_from(k).ok(), "coordinates")?;
    if k.saturating_mul(4) >= n {
        let mut needed = k;
        for i in 0..n {
            let remaining = n - i;
            if rng.gen_range(0..remaining) < needed {
                out.push(i);
                needed -= 1;
                if needed == 0 {
                    break;
                }
            }
        }
        return Ok(out);
    }
    while (out.len() as u64) < k {
        let missing = k - out.len() as u64;
        out.extend((0..missing).map(|_| rng.gen_range(0..n)));
        out.sort_unstable();
        out.dedup();
    }
    Ok(out)
}

/// Total number of points of a tensor of `dims`, if it fits in `u64`.
fn total_points(dims: &[usize]) -> Option<u64> {
    dims.iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
}

/// Decode sorted row-major linear indices into a coordinate list with random values.
fn from_linear(dims: &[usize], linear: &[u64], rng: &mut StdRng) -> Result<Coo, TensorError> {
    let order = dims.len();
    let len = linear.len().checked_mul(order);
    let mut coords =
        crate::memory::filled(len, 0i64, &|| "the generated tensor's coordinates".into())
            .map_err(TensorError::TooLarge)?;
    for (e, &p) in linear.iter().enumerate() {
        let mut rest = p;
        for m in (0..order).rev() {
            let d = dims[m] as u64;
            coords[e * order + m] = (rest % d) as i64;
            rest /= d;
        }
    }
    let values = collected(
        Some(linear.len()),
        (0..linear.len()).map(|_| value(rng)),
        "values",
    )?;
    Ok(Coo {
        dims: dims.to_vec(),
        coords,
        values,
    })
}

/// A uniformly random sparse tensor: `round(density * points)` distinct coordinates, each
/// point equally likely. `density` is clamped to `[0, 1]`.
///
/// Cost is `O(nnz log nnz)` time and `O(nnz)` memory for sparse densities, independent of
/// the number of points (for densities of a quarter and above, one pass over the points).
pub fn uniform(dims: &[usize], density: f64, seed: u64) -> Result<Coo, TensorError> {
    let mut rng = rng(seed);
    let density = if density.is_nan() {
        0.0
    } else {
        density.clamp(0.0, 1.0)
    };
    match total_points(dims) {
        Some(total) => {
            let nnz = ((total as f64) * density).round() as u64;
            let linear = sample_distinct(&mut rng, total, nnz.min(total))?;
            from_linear(dims, &linear, &mut rng)
        }
        None => {
            // More points than u64 holds: the density is necessarily tiny relative to the
            // space, so draw coordinates per mode and deduplicate.
            let total: f64 = dims.iter().map(|&d| d as f64).product();
            let nnz = (total * density).round() as usize;
            let order = dims.len();
            let mut entries: Vec<Vec<i64>> = collected(
                Some(nnz),
                (0..nnz).map(|_| dims.iter().map(|&d| rng.gen_range(0..d) as i64).collect()),
                "coordinates",
            )?;
            entries.sort_unstable();
            entries.dedup();
            let mut coords = reserved(entries.len().checked_mul(order), "coordinates")?;
            for e in &entries {
                coords.extend_from_slice(e);
            }
            let values = collected(
                Some(entries.len()),
                (0..entries.len()).map(|_| value(&mut rng)),
                "values",
            )?;
            Ok(Coo {
                dims: dims.to_vec(),
                coords,
                values,
            })
        }
    }
}

/// Every point of `dims`, with random values.
pub fn dense(dims: &[usize], seed: u64) -> Result<Coo, TensorError> {
    let mut rng = rng(seed);
    let total = total_points(dims).and_then(|t| usize::try_from(t).ok());
    let order = dims.len();
    let mut coords = reserved(total.and_then(|t| t.checked_mul(order)), "coordinates")?;
    let total = total.expect("`reserved` refuses a count that overflowed");
    let mut c = vec![0i64; order];
    for _ in 0..total {
        coords.extend_from_slice(&c);
        for m in (0..order).rev() {
            c[m] += 1;
            if (c[m] as usize) < dims[m] {
                break;
            }
            c[m] = 0;
        }
    }
    let values = collected(Some(total), (0..total).map(|_| value(&mut rng)), "values")?;
    Ok(Coo {
        dims: dims.to_vec(),
        coords,
        values,
    })
}

/// A banded matrix: every `(i, j)` with `|i - j| <= bandwidth` (inside the matrix) is
/// stored, with random values. `bandwidth` 0 is the diagonal.
pub fn banded(dims: [usize; 2], bandwidth: usize, seed: u64) -> Result<Coo, TensorError> {
    let mut rng = rng(seed);
    let [rows, cols] = dims;
    // At most this many entries a row.
    let width = bandwidth.saturating_mul(2).saturating_add(1).min(cols);
    let entries = rows.checked_mul(width);
    let mut coords = reserved(entries.and_then(|e| e.checked_mul(2)), "coordinates")?;
    let mut values = reserved(entries, "values")?;
    for i in 0..rows {
        let lo = i.saturating_sub(bandwidth);
        let hi = i.saturating_add(bandwidth).saturating_add(1).min(cols);
        for j in lo..hi {
            coords.push(i as i64);
            coords.push(j as i64);
            values.push(value(&mut rng));
        }
    }
    Ok(Coo {
        dims: dims.to_vec(),
        coords,
        values,
    })
}

/// Slices of the first mode (rows of a matrix) with given nonzero counts, capped at the
/// slice's points; the other coordinates uniformly random and distinct within a slice.
fn slices_with_counts(
    dims: &[usize],
    counts: &[u64],
    rng: &mut StdRng,
) -> Result<Coo, TensorError> {
    let order = dims.len();
    let trailing = &dims[1..];
    let points = total_points(trailing);
    let total: u64 = counts
        .iter()
        .map(|&c| c.min(points.unwrap_or(u64::MAX)))
        .sum();
    let mut coords = reserved(
        usize::try_from(total)
            .ok()
            .and_then(|t| t.checked_mul(order)),
        "coordinates",
    )?;
    for (i, &count) in counts.iter().enumerate() {
        match points {
            Some(points) => {
                for linear in sample_distinct(rng, points, count)? {
                    coords.push(i as i64);
                    let start = coords.len();
                    coords.resize(start + trailing.len(), 0);
                    let mut rest = linear;
                    for (m, &d) in trailing.iter().enumerate().rev() {
                        coords[start + m] = (rest % d as u64) as i64;
                        rest /= d as u64;
                    }
                }
            }
            None => {
                // More points in a slice than u64 holds: draw per mode and deduplicate
                // (a count is necessarily tiny against such a slice).
                let mut tails: Vec<Vec<i64>> = collected(
                    usize::try_from(count).ok(),
                    (0..count).map(|_| {
                        trailing
                            .iter()
                            .map(|&d| rng.gen_range(0..d) as i64)
                            .collect()
                    }),
                    "coordinates",
                )?;
                tails.sort_unstable();
                tails.dedup();
                for tail in tails {
                    coords.push(i as i64);
                    coords.extend(tail);
                }
            }
        }
    }
    let entries = coords.len() / order;
    let values = collected(Some(entries), (0..entries).map(|_| value(rng)), "values")?;
    Ok(Coo {
        dims: dims.to_vec(),
        coords,
        values,
    })
}

/// A matrix whose rows' nonzero counts follow a power law (Zipf): the row of rank `r`
/// (1-based; ranks are assigned to rows in random order) gets a share of `nnz` proportional
/// to `r^-exponent`, rounded randomly and capped at the number of columns. Columns are
/// uniform. The total is about `nnz` (less when the cap cuts the heaviest rows).
///
/// `exponent` 0 gives equal rows; 1 is a classic Zipf distribution (row degrees with a
/// power-law tail of exponent 2); larger values concentrate the nonzeros in fewer rows.
///
/// A tensor of any other order gets the same law over the slices of its first mode (the
/// heavy slices of real tensors: a few users, authors or products with most of the
/// entries), the other coordinates uniform within a slice.
pub fn power_law(dims: &[usize], nnz: usize, exponent: f64, seed: u64) -> Result<Coo, TensorError> {
    let mut rng = rng(seed);
    let rows = dims.first().copied().unwrap_or(0);
    if rows == 0 {
        return Ok(Coo {
            dims: dims.to_vec(),
            ..Coo::default()
        });
    }
    let weights: Vec<f64> = collected(
        Some(rows),
        (1..=rows).map(|r| (r as f64).powf(-exponent)),
        "row weights",
    )?;
    let sum: f64 = weights.iter().sum();
    // Random assignment of ranks to rows (Fisher-Yates).
    let mut rank_of_row: Vec<usize> = collected(Some(rows), 0..rows, "row ranks")?;
    for i in (1..rows).rev() {
        let j = rng.gen_range(0..=i);
        rank_of_row.swap(i, j);
    }
    let counts: Vec<u64> = collected(
        Some(rows),
        rank_of_row.iter().map(|&r| {
            let expected = nnz as f64 * weights[r] / sum;
            let whole = expected.floor();
            let extra = rng.gen_bool((expected - whole).clamp(0.0, 1.0));
            whole as u64 + extra as u64
        }),
        "row counts",
    )?;
    slices_with_counts(dims, &counts, &mut rng)
}

/// The skewed matrices of sparse-iteration-space scheduling experiments: row `i` has
/// `round(k * c^i)` nonzeros, capped at `cols`, in uniformly random columns. With `c > 1`
/// the last rows are far heavier than the first, which defeats static row partitioning.
pub fn skewed_rows(
    rows: usize,
    cols: usize,
    k: f64,
    c: f64,
    seed: u64,
) -> Result<Coo, TensorError> {
    let mut rng = rng(seed);
    let counts: Vec<u64> = collected(
        Some(rows),
        (0..rows).map(|i| {
            let n = k * c.powf(i as f64);
            if n.is_nan() || n <= 0.0 {
                0
            } else {
                n.round().min(cols as f64) as u64
            }
        }),
        "row counts",
    )?;
    slices_with_counts(&[rows, cols], &counts, &mut rng)
}

/// A well-conditioned lower triangular system from a square matrix: the entries of `coo`
/// strictly below the diagonal, and a diagonal `1 + sum |row|` (one entry a row), so that
/// forward substitution is stable whatever the pattern. What the triangular-solve
/// benchmarks solve on real and generated matrices.
pub fn dominant_lower_triangle(coo: &Coo) -> Result<Coo, TensorError> {
    dominant_keeping(coo, |i, j| j < i)
}

/// A strictly diagonally dominant matrix of `coo`'s pattern: its entries off the diagonal,
/// and a diagonal `1 + sum |row|` (one entry a row), so that Gauss-Seidel converges and
/// ILU(0) meets no zero pivot whatever the pattern. What the smoother benchmarks run on.
pub fn dominant(coo: &Coo) -> Result<Coo, TensorError> {
    dominant_keeping(coo, |i, j| j != i)
}

/// The entries `(i, j)` of `coo` that `keep` keeps, and a diagonal `1 + sum |row|`.
fn dominant_keeping(coo: &Coo, keep: impl Fn(i64, i64) -> bool) -> Result<Coo, TensorError> {
    let n = coo.dims.first().copied().unwrap_or(0);
    let mut diagonal = vec![1.0; n];
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for (e, v) in coo.values.iter().enumerate() {
        let (i, j) = (coo.coord(e)[0], coo.coord(e)[1]);
        if keep(i, j) {
            coords.extend([i, j]);
            values.push(*v);
            diagonal[i as usize] += v.abs();
        }
    }
    for (i, d) in diagonal.into_iter().enumerate() {
        coords.extend([i as i64, i as i64]);
        values.push(d);
    }
    Coo::new(vec![n, n], coords, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_valid(coo: &Coo) {
        coo.validate().unwrap();
        let n = coo.order();
        for e in 1..coo.len() {
            assert!(
                coo.coord(e - 1) < coo.coord(e),
                "entries sorted and distinct at {e}"
            );
        }
        assert!(coo.values.iter().all(|v| v.abs() >= 0.1 && v.abs() <= 1.0));
        assert_eq!(coo.coords.len(), coo.len() * n);
    }

    #[test]
    fn uniform_shape_count_and_determinism() {
        let a = uniform(&[300, 200], 0.05, 1).unwrap();
        check_valid(&a);
        assert_eq!(a.dims, vec![300, 200]);
        assert_eq!(a.len(), 3000);
        assert_eq!(a, uniform(&[300, 200], 0.05, 1).unwrap());
        assert_ne!(a, uniform(&[300, 200], 0.05, 2).unwrap());
        // Dense-ish densities take the scanning path.
        let b = uniform(&[40, 50], 0.6, 3).unwrap();
        check_valid(&b);
        assert_eq!(b.len(), 1200);
        let full = uniform(&[7, 9], 1.0, 3).unwrap();
        assert_eq!(full.len(), 63);
        assert!(uniform(&[10, 10], 0.0, 3).unwrap().is_empty());
    }

    #[test]
    fn uniform_higher_order_and_vectors() {
        let t = uniform(&[20, 30, 40], 0.01, 5).unwrap();
        check_valid(&t);
        assert_eq!(t.len(), 240);
        let v = uniform(&[1000], 0.1, 5).unwrap();
        check_valid(&v);
        assert_eq!(v.len(), 100);
    }

    #[test]
    fn uniform_large_is_fast_and_light() {
        // 1M x 1M with 1M nonzeros (the 10M case of benchmarks works the same way).
        let started = std::time::Instant::now();
        let a = uniform(&[1_000_000, 1_000_000], 1e-6, 9).unwrap();
        assert_eq!(a.len(), 1_000_000);
        assert!(a.coords.iter().all(|&c| (0..1_000_000).contains(&c)));
        assert!(started.elapsed().as_secs() < 20);
    }

    #[test]
    fn uniform_beyond_u64_points() {
        let dims = [1usize << 40, 1 << 40];
        let a = uniform(&dims, 1e-21, 4).unwrap();
        check_valid(&a);
        assert_eq!(a.len(), 1209); // round(2^80 * 1e-21)
    }

    #[test]
    fn dense_covers_every_point() {
        let d = dense(&[3, 4, 2], 1).unwrap();
        check_valid(&d);
        assert_eq!(d.len(), 24);
        assert_eq!(d.coord(23), &[2, 3, 1]);
        assert_eq!(d, dense(&[3, 4, 2], 1).unwrap());
        assert_eq!(dense(&[], 1).unwrap().len(), 1);
    }

    #[test]
    fn banded_stays_in_band() {
        let b = banded([10, 8], 2, 1).unwrap();
        check_valid(&b);
        for e in 0..b.len() {
            let c = b.coord(e);
            assert!((c[0] - c[1]).abs() <= 2);
        }
        // Rows 0..6 hold 3,4,5,5,5,5 entries; rows 6..10 are clipped by 8 columns.
        assert_eq!(b.len(), 3 + 4 + 5 + 5 + 5 + 5 + 4 + 3 + 2 + 1);
        assert_eq!(banded([5, 5], 0, 1).unwrap().len(), 5);
        assert_eq!(b, banded([10, 8], 2, 1).unwrap());
    }

    #[test]
    fn power_law_is_skewed_and_near_target() {
        let p = power_law(&[2000, 2000], 20_000, 1.0, 11).unwrap();
        check_valid(&p);
        let n = p.len() as f64;
        assert!((n - 20_000.0).abs() < 1000.0, "nnz {n}");
        let mut per_row = vec![0usize; 2000];
        for e in 0..p.len() {
            per_row[p.coord(e)[0] as usize] += 1;
        }
        per_row.sort_unstable();
        let max = *per_row.last().unwrap();
        let median = per_row[1000];
        assert!(max > 50 * median.max(1), "max {max} median {median}");
        assert_eq!(p, power_law(&[2000, 2000], 20_000, 1.0, 11).unwrap());
        let flat = power_law(&[100, 100], 1000, 0.0, 1).unwrap();
        assert_eq!(flat.len(), 1000);
    }

    #[test]
    fn power_law_tensors_have_heavy_slices_of_distinct_points() {
        let t = power_law(&[500, 40, 30], 20_000, 1.0, 5).unwrap();
        check_valid(&t);
        // About 20,000, less what the cap cuts off the heaviest slices.
        assert!((15_000..=21_000).contains(&t.len()), "nnz {}", t.len());
        let mut per_slice = vec![0usize; 500];
        for e in 0..t.len() {
            per_slice[t.coord(e)[0] as usize] += 1;
        }
        per_slice.sort_unstable();
        let (max, median) = (per_slice[499], per_slice[250]);
        // The heaviest slice (a share of about 2,900) is capped at its 1,200 points.
        assert!(
            max == 1200 && max > 20 * median.max(1),
            "max {max} median {median}"
        );
        // Every trailing mode is used, not only the first columns.
        for (m, size) in [(1, 40), (2, 30)] {
            let top = (0..t.len()).map(|e| t.coord(e)[m]).max().unwrap();
            assert_eq!(top, size - 1);
        }
        // Slices whose points do not fit in u64 still get their counts, drawn per mode.
        let huge = power_law(&[4, 1 << 40, 1 << 40], 100, 0.0, 2).unwrap();
        check_valid(&huge);
        assert_eq!(huge.len(), 100);
    }

    #[test]
    fn skewed_rows_follow_geometric_counts() {
        let s = skewed_rows(60, 500, 2.0, 1.1, 3).unwrap();
        check_valid(&s);
        let mut per_row = vec![0usize; 60];
        for e in 0..s.len() {
            per_row[s.coord(e)[0] as usize] += 1;
        }
        for (i, &count) in per_row.iter().enumerate() {
            let expected = (2.0 * 1.1f64.powi(i as i32)).round().min(500.0) as usize;
            assert_eq!(count, expected, "row {i}");
        }
        let capped = skewed_rows(30, 50, 1.0, 2.0, 3).unwrap();
        check_valid(&capped);
        assert_eq!(capped.coords.chunks(2).filter(|c| c[0] == 29).count(), 50);
        assert_eq!(s, skewed_rows(60, 500, 2.0, 1.1, 3).unwrap());
    }

    #[test]
    fn dominant_matrices_keep_the_pattern_and_dominate_every_row() {
        // Entries below, on and above the diagonal (the diagonal one replaced).
        let coo = Coo::new(
            vec![3, 3],
            vec![0, 2, 1, 0, 1, 1, 2, 1],
            vec![-0.5, 0.25, 7.0, 2.0],
        )
        .unwrap();
        let full = dominant(&coo).unwrap();
        let mut entries: Vec<_> = (0..full.len())
            .map(|e| (full.coord(e).to_vec(), full.values[e]))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let want = [
            (vec![0, 0], 1.5),
            (vec![0, 2], -0.5),
            (vec![1, 0], 0.25),
            (vec![1, 1], 1.25),
            (vec![2, 1], 2.0),
            (vec![2, 2], 3.0),
        ];
        assert_eq!(entries, want.map(|(c, v)| (c.to_vec(), v)).to_vec());
        let lower = dominant_lower_triangle(&coo).unwrap();
        assert_eq!(lower.len(), 5);
        assert!((0..lower.len()).all(|e| lower.coord(e)[1] <= lower.coord(e)[0]));
    }
}
