//! What a rank of a row-distributed product needs from the others (its ghost entries), and
//! how its local kernel numbers the columns it reads.

use std::ops::Range;

use super::partition::BlockPartition;

/// The columns a rank's rows read, numbered for its local kernel: the columns of its own
/// block of the vector first, in order, then the ghosts (columns other ranks own), in
/// order, which groups them by owner since blocks ascend with rank. The vector's entries
/// (or a dense matrix's rows) at the ghosts arrive from their owners in that order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GhostPlan {
    own: Range<usize>,
    ghosts: Vec<usize>,
    /// By owner rank: how many ghosts it sends.
    receive_counts: Vec<usize>,
}

impl GhostPlan {
    /// The plan of the rank owning `own` of `columns` (the vector's partition), whose rows
    /// read `used` columns (global indices, any order, repeats allowed).
    pub fn new(
        columns: &BlockPartition,
        own: Range<usize>,
        used: impl IntoIterator<Item = usize>,
    ) -> GhostPlan {
        let mut ghosts: Vec<usize> = used.into_iter().filter(|j| !own.contains(j)).collect();
        ghosts.sort_unstable();
        ghosts.dedup();
        let mut receive_counts = vec![0; columns.parts()];
        for &j in &ghosts {
            receive_counts[columns.owner(j)] += 1;
        }
        GhostPlan {
            own,
            ghosts,
            receive_counts,
        }
    }

    /// The local number of global column `j`, which the rank's rows read.
    pub fn local_column(&self, j: usize) -> usize {
        if self.own.contains(&j) {
            j - self.own.start
        } else {
            let k = self
                .ghosts
                .binary_search(&j)
                .expect("a column the rows read is a ghost or owned");
            self.own.len() + k
        }
    }

    /// How many columns the local kernel reads: the own block's and the ghosts.
    pub fn local_columns(&self) -> usize {
        self.own.len() + self.ghosts.len()
    }

    /// The ghosts, ascending (grouped by owner).
    pub fn ghosts(&self) -> &[usize] {
        &self.ghosts
    }

    /// By owner rank: how many ghosts it sends this rank.
    pub fn receive_counts(&self) -> &[usize] {
        &self.receive_counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ghosts_are_numbered_after_the_own_block_by_owner() {
        let columns = BlockPartition::even(10, 3); // 0..3, 3..6, 6..10
        let plan = GhostPlan::new(&columns, 3..6, [9, 4, 1, 9, 3, 7, 1]);
        assert_eq!(plan.ghosts(), &[1, 7, 9]);
        assert_eq!(plan.receive_counts(), &[1, 0, 2]);
        assert_eq!(plan.local_columns(), 6);
        let locals: Vec<usize> = [3, 4, 5, 1, 7, 9].map(|j| plan.local_column(j)).to_vec();
        assert_eq!(locals, vec![0, 1, 2, 3, 4, 5]);
        // A rank owning nothing reads everything as ghosts.
        let plan = GhostPlan::new(&columns, 10..10, [2, 0]);
        assert_eq!((plan.local_column(0), plan.local_column(2)), (0, 1));
    }
}
