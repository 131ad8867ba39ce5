//! MPI as the distributed kernels use it (rsmpi): agreeing on errors, so that a failure on
//! one rank ends every rank with the same message instead of leaving the others waiting in
//! a collective, and exchanging variable-length lists between all ranks.

use std::time::Duration;

use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

/// Starts MPI: the universe, which ends MPI when dropped, and the ranks of its world.
pub fn initialize() -> Result<(Universe, Ranks), String> {
    let universe = mpi::initialize()
        .ok_or("MPI is already initialized in this process, or failed to start")?;
    let ranks = Ranks::new(universe.world());
    Ok((universe, ranks))
}

/// The ranks of a communicator, and this process's place among them.
pub struct Ranks {
    pub comm: SimpleCommunicator,
    pub rank: usize,
    pub size: usize,
}

impl Ranks {
    /// The ranks of `comm`.
    pub fn new(comm: SimpleCommunicator) -> Ranks {
        let (rank, size) = (comm.rank() as usize, comm.size() as usize);
        Ranks { comm, rank, size }
    }

    /// Every rank's `result`, agreed: where some rank failed, every rank returns the error
    /// of the lowest failing one, prefixed with its number. A collective: every rank must
    /// call it at the same point.
    pub fn agree<T>(&self, result: Result<T, String>) -> Result<T, String> {
        let mine = if result.is_err() {
            self.rank as u64
        } else {
            u64::MAX
        };
        let mut first = 0u64;
        self.comm
            .all_reduce_into(&mine, &mut first, SystemOperation::min());
        if first == u64::MAX {
            return result;
        }
        let root = self.comm.process_at_rank(first as i32);
        let mut message = match &result {
            Err(e) if self.rank as u64 == first => e.clone().into_bytes(),
            _ => Vec::new(),
        };
        let mut len = message.len() as u64;
        root.broadcast_into(&mut len);
        message.resize(len as usize, 0);
        root.broadcast_into(&mut message[..]);
        Err(format!(
            "rank {first} of {}: {}",
            self.size,
            String::from_utf8_lossy(&message)
        ))
    }

    /// Waits until every rank has called it.
    pub fn barrier(&self) {
        self.comm.barrier();
    }

    /// The longest of every rank's `time`.
    pub fn slowest(&self, time: Duration) -> Duration {
        let mut longest = 0.0f64;
        self.comm
            .all_reduce_into(&time.as_secs_f64(), &mut longest, SystemOperation::max());
        Duration::from_secs_f64(longest)
    }

    /// The element-wise sum of `values` over all ranks.
    pub fn sum(&self, values: &[u64]) -> Vec<u64> {
        let mut total = vec![0u64; values.len()];
        self.comm
            .all_reduce_into(values, &mut total[..], SystemOperation::sum());
        total
    }

    /// The element-wise sum of `values` over all ranks.
    pub fn sum_f64(&self, values: &[f64]) -> Vec<f64> {
        let mut total = vec![0.0; values.len()];
        self.comm
            .all_reduce_into(values, &mut total[..], SystemOperation::sum());
        total
    }

    /// Sends `to[r]` to each rank `r`; returns what each rank sent this one, concatenated
    /// in rank order, with how many came from each.
    pub fn exchange<T: Equivalence + Default + Clone>(
        &self,
        to: &[Vec<T>],
    ) -> Result<(Vec<T>, Vec<usize>), String> {
        let send_counts = counts(to.iter().map(Vec::len))?;
        let mut receive_counts = vec![0 as Count; self.size];
        self.comm
            .all_to_all_into(&send_counts[..], &mut receive_counts[..]);
        let flat: Vec<T> = to.iter().flatten().cloned().collect();
        let received = self.exchange_flat(&flat, &send_counts, &receive_counts)?;
        Ok((
            received,
            receive_counts.iter().map(|&c| c as usize).collect(),
        ))
    }

    /// [`Self::exchange`] with the counts known on both sides: `flat` holds what goes to
    /// each rank in rank order, `send_counts[r]` of it to rank `r`.
    pub fn exchange_flat<T: Equivalence + Default + Clone>(
        &self,
        flat: &[T],
        send_counts: &[Count],
        receive_counts: &[Count],
    ) -> Result<Vec<T>, String> {
        let send_displs = displacements(send_counts)?;
        let receive_displs = displacements(receive_counts)?;
        let total = receive_counts.iter().map(|&c| c as usize).sum();
        let mut received = vec![T::default(); total];
        let send = Partition::new(flat, send_counts, &send_displs[..]);
        let mut receive = PartitionMut::new(&mut received[..], receive_counts, &receive_displs[..]);
        self.comm.all_to_all_varcount_into(&send, &mut receive);
        Ok(received)
    }

    /// Every rank's `values` on rank `root`, in rank order (empty elsewhere).
    pub fn gather(&self, values: &[f64], root: usize) -> Result<Vec<f64>, String> {
        let mine = count(values.len())?;
        let root_process = self.comm.process_at_rank(root as i32);
        if self.rank != root {
            root_process.gather_into(&mine);
            root_process.gather_varcount_into(values);
            return Ok(Vec::new());
        }
        let mut lengths = vec![0 as Count; self.size];
        root_process.gather_into_root(&mine, &mut lengths[..]);
        let displs = displacements(&lengths)?;
        let mut all = vec![0.0; lengths.iter().map(|&c| c as usize).sum()];
        let mut partition = PartitionMut::new(&mut all[..], &lengths[..], &displs[..]);
        root_process.gather_varcount_into_root(values, &mut partition);
        Ok(all)
    }
}

/// A length as MPI counts it, or why it cannot be sent in one message.
fn count(len: usize) -> Result<Count, String> {
    Count::try_from(len).map_err(|_| {
        format!(
            "{len} elements exceed what one MPI message may count ({})",
            Count::MAX
        )
    })
}

fn counts(lens: impl Iterator<Item = usize>) -> Result<Vec<Count>, String> {
    lens.map(count).collect()
}

fn displacements(counts: &[Count]) -> Result<Vec<Count>, String> {
    let mut at: usize = 0;
    let mut displs = Vec::with_capacity(counts.len());
    for &c in counts {
        displs.push(count(at)?);
        at += c as usize;
    }
    Ok(displs)
}
