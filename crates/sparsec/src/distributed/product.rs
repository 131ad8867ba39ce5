//! Statements over a row-distributed sparse matrix: `y(i) = A(i,j) * x(j)` (SpMV),
//! `Y(i,k) = A(i,j) * X(j,k)` (SpMM), and any statement of that shape, as PETSc
//! distributes `MatMult`. Each rank owns a block of `A`'s rows, balanced by nonzeros, the
//! same block of the output, and a block of each dense operand's rows (the row blocks
//! again when `A` is square, so that an iterative solver's vectors line up); it receives
//! the operands' rows at the columns its own rows read from their owners (its ghosts) and
//! runs a kernel the ordinary pipeline compiled, in any format and schedule, on its rows.

use mpi::Count;

use super::comm::Ranks;
use super::partition::BlockPartition;
use super::plan::GhostPlan;
use crate::tensor::Coo;

/// A rank's part of a row-distributed matrix, and the plan of its ghost exchange, computed
/// once and reused by every product (an iterative solver runs hundreds).
pub struct RowDistributed {
    /// The split of the matrix's rows (and the output's).
    pub rows: BlockPartition,
    /// The split of the dense operands' rows (the matrix's columns).
    pub columns: BlockPartition,
    /// This rank's rows, numbered from its first, with their columns numbered as
    /// [`GhostPlan::local_column`] says: its own block first, then the ghosts.
    pub local: Coo,
    pub plan: GhostPlan,
    /// The local rows of the dense operands that the other ranks read, by rank, flat.
    send: Vec<usize>,
    send_counts: Vec<Count>,
    receive_counts: Vec<Count>,
}

impl RowDistributed {
    /// Distributes the entries of `share` (the entries this rank read, of any rows, with
    /// the whole matrix's dimensions) among the ranks by balanced row blocks, and plans
    /// the exchange of ghosts. A collective.
    pub fn new(ranks: &Ranks, share: &Coo) -> Result<RowDistributed, String> {
        let (m, n) = match share.dims[..] {
            [m, n] => (m, n),
            _ => {
                return Err(format!(
                    "a distributed matrix has 2 modes, not {}",
                    share.order()
                ))
            }
        };
        let mut counts = vec![0u64; m];
        for c in share.coords.chunks(2) {
            counts[c[0] as usize] += 1;
        }
        let rows = BlockPartition::balanced(&ranks.sum(&counts), ranks.size);
        let columns = if m == n {
            rows.clone()
        } else {
            BlockPartition::even(n, ranks.size)
        };
        let mut coords_to = vec![Vec::new(); ranks.size];
        let mut values_to = vec![Vec::new(); ranks.size];
        for (c, &v) in share.coords.chunks(2).zip(&share.values) {
            let owner = rows.owner(c[0] as usize);
            coords_to[owner].extend_from_slice(c);
            values_to[owner].push(v);
        }
        let (mut coords, _) = ranks.exchange(&coords_to)?;
        let (values, _) = ranks.exchange(&values_to)?;
        let own_rows = rows.range(ranks.rank);
        let own_columns = columns.range(ranks.rank);
        let plan = GhostPlan::new(
            &columns,
            own_columns.clone(),
            coords.chunks(2).map(|c| c[1] as usize),
        );
        for c in coords.chunks_mut(2) {
            c[0] -= own_rows.start as i64;
            c[1] = plan.local_column(c[1] as usize) as i64;
        }
        let local = Coo::new(vec![own_rows.len(), plan.local_columns()], coords, values)
            .map_err(|e| e.to_string())?;
        // Ask each owner for the ghosts it holds; what others ask of this rank it sends.
        let mut requests = vec![Vec::new(); ranks.size];
        for &j in plan.ghosts() {
            requests[columns.owner(j)].push(j as u64);
        }
        let (asked, asked_counts) = ranks.exchange(&requests)?;
        let send = asked
            .iter()
            .map(|&j| j as usize - own_columns.start)
            .collect();
        let to_counts = |c: &[usize]| c.iter().map(|&c| c as Count).collect::<Vec<_>>();
        Ok(RowDistributed {
            send_counts: to_counts(&asked_counts),
            receive_counts: to_counts(plan.receive_counts()),
            rows,
            columns,
            local,
            plan,
            send,
        })
    }

    /// The rows of a dense operand that this rank's kernel reads: its own block
    /// `own` (`width` values per row) followed by the ghosts' rows, received from their
    /// owners. A collective.
    pub fn with_ghosts(
        &self,
        ranks: &Ranks,
        own: &[f64],
        width: usize,
    ) -> Result<Vec<f64>, String> {
        let flat: Vec<f64> = self
            .send
            .iter()
            .flat_map(|&r| own[r * width..(r + 1) * width].iter().copied())
            .collect();
        let scale = |c: &[Count]| -> Result<Vec<Count>, String> {
            c.iter()
                .map(|&c| {
                    Count::try_from(c as usize * width)
                        .map_err(|_| "a ghost message exceeds MPI's count".to_string())
                })
                .collect()
        };
        let ghosts = ranks.exchange_flat(
            &flat,
            &scale(&self.send_counts)?,
            &scale(&self.receive_counts)?,
        )?;
        let mut extended = Vec::with_capacity(own.len() + ghosts.len());
        extended.extend_from_slice(own);
        extended.extend_from_slice(&ghosts);
        Ok(extended)
    }

    /// How many values this rank sends per product for an operand of `width` values per
    /// row, and the lower bound: the ghosts it must receive (each value sent is received).
    pub fn volume(&self, width: usize) -> (usize, usize) {
        (self.send.len() * width, self.plan.ghosts().len() * width)
    }
}
