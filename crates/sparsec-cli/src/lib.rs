//! The `sparsec` command line as a library: one module per subcommand, which the binary
//! (`main.rs`) only dispatches to. Being a library lets fuzz targets and tests reach the
//! parts that need no process, such as the translation of a TACO command line
//! ([`taco::translate`]).

pub mod collect;
pub mod convert;
#[cfg(feature = "mpi")]
pub mod distributed;
pub mod emit;
#[cfg(feature = "plot")]
pub mod figure;
pub mod formats;
pub mod info;
#[cfg(feature = "plot")]
pub mod plot;
pub mod run;
pub mod spec;
pub mod specialise;
pub mod spf;
pub mod taco;
pub mod train;
pub mod tune;
