//! Splits of an index range into contiguous blocks, one per rank.

use std::ops::Range;

/// A split of `0..n` into contiguous blocks, one per rank in rank order: rank `r` owns
/// `bounds[r]..bounds[r + 1]`. A block may be empty (more ranks than rows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPartition {
    bounds: Vec<usize>,
}

impl BlockPartition {
    /// Blocks whose lengths differ by at most one.
    pub fn even(n: usize, parts: usize) -> BlockPartition {
        let parts = parts.max(1);
        BlockPartition {
            bounds: (0..=parts).map(|r| n * r / parts).collect(),
        }
    }

    /// Blocks of rows with about equal work, row `i` weighing `counts[i]` (its nonzeros)
    /// plus one (its output): each bound falls where the weight before it is nearest its
    /// share, a row going to the block that holds most of its weight. A row is never
    /// split, so a row heavier than a share makes its block heavy; an empty matrix is
    /// split evenly by rows.
    pub fn balanced(counts: &[u64], parts: usize) -> BlockPartition {
        let parts = parts.max(1);
        let total: u128 = counts.iter().map(|&c| c as u128 + 1).sum();
        let mut bounds = Vec::with_capacity(parts + 1);
        bounds.push(0);
        let mut before: u128 = 0;
        let mut row = 0;
        for r in 1..parts {
            let share = total * r as u128 / parts as u128;
            let weight = |row: usize| counts[row] as u128 + 1;
            while row < counts.len() && 2 * before + weight(row) <= 2 * share {
                before += weight(row);
                row += 1;
            }
            bounds.push(row);
        }
        bounds.push(counts.len());
        BlockPartition { bounds }
    }

    /// How many blocks (ranks).
    pub fn parts(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The length of the range split.
    pub fn len(&self) -> usize {
        self.bounds[self.bounds.len() - 1]
    }

    /// True when the range split is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The block of rank `part`.
    pub fn range(&self, part: usize) -> Range<usize> {
        self.bounds[part]..self.bounds[part + 1]
    }

    /// The rank owning index `i` (`i < len`).
    pub fn owner(&self, i: usize) -> usize {
        self.bounds.partition_point(|&b| b <= i) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: &BlockPartition, n: usize, parts: usize) {
        assert_eq!((p.len(), p.parts()), (n, parts));
        for r in 0..parts {
            for i in p.range(r) {
                assert_eq!(p.owner(i), r, "{p:?} {i}");
            }
        }
    }

    #[test]
    fn blocks_cover_the_range_and_owners_agree() {
        for (n, parts) in [(10, 3), (2, 4), (0, 2), (7, 1), (1, 5)] {
            check(&BlockPartition::even(n, parts), n, parts);
            let counts: Vec<u64> = (0..n as u64).map(|i| i * i % 7).collect();
            check(&BlockPartition::balanced(&counts, parts), n, parts);
        }
    }

    #[test]
    fn balanced_blocks_split_the_work_not_the_rows() {
        // One heavy row first, then light ones: the heavy row gets a rank of its own.
        let mut counts = vec![300u64];
        counts.extend(std::iter::repeat_n(1, 100));
        let p = BlockPartition::balanced(&counts, 2);
        assert_eq!(p.range(0), 0..1);
        assert_eq!(p.range(1), 1..101);
        // Rows of equal weight: blocks of equal length.
        let p = BlockPartition::balanced(&[4; 12], 3);
        assert_eq!((p.range(0), p.range(1), p.range(2)), (0..4, 4..8, 8..12));
        // Each block's weight is within a row's weight of an even share.
        let counts: Vec<u64> = (0..500u64).map(|i| (i * 7919) % 23).collect();
        let p = BlockPartition::balanced(&counts, 7);
        let total: u64 = counts.iter().map(|c| c + 1).sum();
        for r in 0..7 {
            let weight: u64 = counts[p.range(r)].iter().map(|c| c + 1).sum();
            assert!(
                weight.abs_diff(total / 7) <= 24,
                "block {r}: {weight} of {total}"
            );
        }
        // More ranks than rows: some own none.
        let p = BlockPartition::balanced(&[3, 3], 4);
        check(&p, 2, 4);
        assert_eq!((0..4).map(|r| p.range(r).len()).sum::<usize>(), 2);
    }
}
