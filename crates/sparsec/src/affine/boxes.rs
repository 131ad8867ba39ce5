//! A matrix's non-zero pattern as a union of rectangles, the form the analysis takes its
//! inputs in. The policy has one knob, the density threshold `d` in `(0, 1]`: a box may
//! hold explicit zeros (padding) as long as at least a fraction `d` of its cells are
//! non-zero when it is formed. With `d = 1` the boxes cover the non-zeros exactly.
//!
//! Boxes are formed in two passes. Along each row, non-zeros are gathered into runs: a
//! run takes the next non-zero of its row while its density stays at least `d`. Down the
//! rows, a run joins the box that ended on the row above with the same columns, or, when
//! the columns differ, the box whose bounding box with the run stays at least `d` dense
//! (the merging policy). Every non-zero is covered by construction; the count of
//! padding cells is exact (boxes may overlap after a merge, and overlap is counted once).

/// An inclusive rectangle of rows and columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rect {
    pub rows: (usize, usize),
    pub cols: (usize, usize),
}

impl Rect {
    fn area(&self) -> u64 {
        (self.rows.1 - self.rows.0 + 1) as u64 * (self.cols.1 - self.cols.0 + 1) as u64
    }
}

/// The boxes covering a pattern, and what they cost.
#[derive(Clone, Debug)]
pub struct Cover {
    pub boxes: Vec<Rect>,
    /// Distinct non-zero positions covered (all of them).
    pub nonzeros: u64,
    /// Cells inside some box that hold no non-zero.
    pub padding: u64,
}

/// Cover the positions `entries` (row, column; any order, duplicates allowed) with boxes
/// at least `threshold` dense.
pub fn cover(entries: &[(usize, usize)], threshold: f64) -> Result<Cover, String> {
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(format!(
            "the density threshold must be in (0, 1], not {threshold}"
        ));
    }
    let mut entries = entries.to_vec();
    entries.sort_unstable();
    entries.dedup();
    // Runs along rows: (row, first column, last column, non-zeros).
    let mut runs: Vec<(usize, usize, usize, u64)> = Vec::new();
    for &(r, c) in &entries {
        if let Some(last) = runs.last_mut() {
            if last.0 == r {
                let width = (c - last.1 + 1) as f64;
                if (last.3 + 1) as f64 / width >= threshold {
                    last.2 = c;
                    last.3 += 1;
                    continue;
                }
            }
        }
        runs.push((r, c, c, 1));
    }
    // Boxes down the rows; `open` holds the boxes that end on the previous row.
    struct Open {
        rect: Rect,
        nonzeros: u64,
    }
    let mut done: Vec<Rect> = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let row = runs[i].0;
        let mut next: Vec<Open> = Vec::new();
        let (mut still_open, closed): (Vec<Open>, Vec<Open>) =
            open.into_iter().partition(|o| o.rect.rows.1 + 1 == row);
        done.extend(closed.into_iter().map(|o| o.rect));
        while i < runs.len() && runs[i].0 == row {
            let (_, c0, c1, nz) = runs[i];
            let joined = still_open.iter().position(|o| {
                if o.rect.cols == (c0, c1) {
                    return true;
                }
                let overlap = o.rect.cols.0 <= c1 && c0 <= o.rect.cols.1;
                let merged = Rect {
                    rows: (o.rect.rows.0, row),
                    cols: (o.rect.cols.0.min(c0), o.rect.cols.1.max(c1)),
                };
                overlap && (o.nonzeros + nz) as f64 / merged.area() as f64 >= threshold
            });
            match joined {
                Some(k) => {
                    let o = still_open.swap_remove(k);
                    next.push(Open {
                        rect: Rect {
                            rows: (o.rect.rows.0, row),
                            cols: (o.rect.cols.0.min(c0), o.rect.cols.1.max(c1)),
                        },
                        nonzeros: o.nonzeros + nz,
                    });
                }
                None => next.push(Open {
                    rect: Rect {
                        rows: (row, row),
                        cols: (c0, c1),
                    },
                    nonzeros: nz,
                }),
            }
            i += 1;
        }
        done.extend(still_open.into_iter().map(|o| o.rect));
        open = next;
    }
    done.extend(open.into_iter().map(|o| o.rect));
    done.sort();
    let covered = union_area(&done);
    let nonzeros = entries.len() as u64;
    Ok(Cover {
        boxes: done,
        nonzeros,
        padding: covered - nonzeros,
    })
}

/// The number of cells in the union of `boxes`, by a sweep down the rows.
fn union_area(boxes: &[Rect]) -> u64 {
    let mut starts: Vec<&Rect> = boxes.iter().collect();
    starts.sort_by_key(|b| b.rows.0);
    let mut active: Vec<&Rect> = Vec::new();
    let mut total = 0u64;
    let mut next = 0;
    let mut row = match starts.first() {
        Some(b) => b.rows.0,
        None => return 0,
    };
    loop {
        while next < starts.len() && starts[next].rows.0 <= row {
            active.push(starts[next]);
            next += 1;
        }
        active.retain(|b| b.rows.1 >= row);
        if active.is_empty() {
            if next == starts.len() {
                return total;
            }
            row = starts[next].rows.0;
            continue;
        }
        // Rows until the active set changes cover the same columns.
        let until = active
            .iter()
            .map(|b| b.rows.1)
            .min()
            .unwrap_or(row)
            .min(starts.get(next).map_or(usize::MAX, |b| b.rows.0 - 1));
        let mut spans: Vec<(usize, usize)> = active.iter().map(|b| b.cols).collect();
        spans.sort_unstable();
        let mut width = 0u64;
        let mut current: Option<(usize, usize)> = None;
        for (a, b) in spans {
            current = match current {
                Some((x, y)) if a <= y + 1 => Some((x, y.max(b))),
                Some((x, y)) => {
                    width += (y - x + 1) as u64;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        if let Some((x, y)) = current {
            width += (y - x + 1) as u64;
        }
        total += width * (until - row + 1) as u64;
        row = until + 1;
    }
}

/// The paper's synthetic inputs (§5): `regions` random squares `[x, x + t] × [y, y + t]`
/// with `t` in `[3, n / regions]`, inside an `n × n` matrix, every cell of each square a
/// non-zero; deterministic in `seed`.
pub fn random_squares(n: usize, regions: usize, seed: u64) -> Vec<Rect> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let max_side = (n / regions.max(1)).max(3);
    (0..regions)
        .filter_map(|_| {
            let t = 3 + (next() % (max_side - 2) as u64) as usize;
            if t >= n {
                return None;
            }
            let x = (next() % (n - t) as u64) as usize;
            let y = (next() % (n - t) as u64) as usize;
            Some(Rect {
                rows: (x, x + t),
                cols: (y, y + t),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(rects: &[Rect]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for r in rects {
            for i in r.rows.0..=r.rows.1 {
                for j in r.cols.0..=r.cols.1 {
                    out.push((i, j));
                }
            }
        }
        out
    }

    #[test]
    fn exact_cover_recovers_disjoint_blocks() {
        let blocks = [
            Rect {
                rows: (0, 3),
                cols: (5, 9),
            },
            Rect {
                rows: (10, 12),
                cols: (0, 1),
            },
            Rect {
                rows: (2, 2),
                cols: (0, 0),
            },
        ];
        let c = cover(&cells(&blocks), 1.0).unwrap();
        let mut expected = blocks.to_vec();
        expected.sort();
        assert_eq!(c.boxes, expected);
        assert_eq!(c.padding, 0);
        assert_eq!(c.nonzeros, 20 + 6 + 1);
    }

    #[test]
    fn a_threshold_trades_boxes_for_padding_and_covers_every_nonzero() {
        // A checkerboard: exact cover needs a box per non-zero; at half density, one
        // box per row pair or less.
        let entries: Vec<(usize, usize)> = (0..8)
            .flat_map(|i| {
                (0..8)
                    .filter(move |j| (i + j) % 2 == 0)
                    .map(move |j| (i, j))
            })
            .collect();
        let exact = cover(&entries, 1.0).unwrap();
        assert_eq!(exact.boxes.len(), 32);
        let loose = cover(&entries, 0.5).unwrap();
        assert!(loose.boxes.len() < 8, "{:?}", loose.boxes);
        for &(i, j) in &entries {
            assert!(loose
                .boxes
                .iter()
                .any(|b| b.rows.0 <= i && i <= b.rows.1 && b.cols.0 <= j && j <= b.cols.1));
        }
        let area: u64 = cells(&loose.boxes)
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u64;
        assert_eq!(loose.padding, area - 32);
        assert!(cover(&entries, 0.0).is_err());
        assert!(cover(&entries, 1.5).is_err());
        assert_eq!(cover(&[], 1.0).unwrap().boxes.len(), 0);
    }

    #[test]
    fn random_squares_follow_the_papers_sizes() {
        let squares = random_squares(3000, 100, 7);
        assert_eq!(squares.len(), 100);
        for s in &squares {
            let side = s.rows.1 - s.rows.0;
            assert!((3..=30).contains(&side));
            assert!(s.rows.1 < 3000 && s.cols.1 < 3000);
        }
    }
}
