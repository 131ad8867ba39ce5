//! Distributed kernels: a statement's operands split among processes (ranks) that MPI
//! starts, each rank's part computed by a kernel the ordinary pipeline compiles (any format
//! and schedule, OpenMP threads inside a rank), and the entries a rank needs from the
//! others exchanged by MPI's own collectives.
//!
//! - [`partition`]: splits of rows into contiguous blocks, even or balanced by nonzeros;
//! - [`plan`]: a rank's ghost columns and the local numbering its kernel reads;
//! - `comm` (feature `mpi`): agreeing on errors, so one rank's failure ends every rank
//!   with its message, and all-to-all exchanges;
//! - `product` (feature `mpi`): a row-distributed matrix and its ghost exchange;
//! - `kernel` (feature `mpi`): a statement over it, compiled for each rank's rows.
//!
//! Files are read in parallel: each rank reads its share of a MatrixMarket file's lines
//! ([`crate::io::read_matrix_market_share`]) and the entries move to their rows' owners.

pub mod partition;
pub mod plan;

#[cfg(feature = "mpi")]
pub mod comm;
#[cfg(feature = "mpi")]
pub mod kernel;
#[cfg(feature = "mpi")]
pub mod product;
