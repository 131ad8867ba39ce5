//! sparsec: a sparse tensor algebra compiler.
//!
//! The crate is a pipeline; each module is one stage and data flows one way:
//!
//! ```text
//! notation -> lower (iteration order, merge lattices, level functions) -> ir
//!          -> codegen (C) -> jit (compile, cache, load) -> kernel (run on tensors)
//! ```
//!
//! Storage is described by [`format`] (level formats with properties and capabilities)
//! and held by [`tensor`]; [`io`] reads and writes MatrixMarket and FROSTT files.

pub mod codegen;
mod error;
pub mod format;
pub mod generate;
pub mod io;
pub mod ir;
pub mod jit;
pub mod kernel;
pub mod lower;
pub mod memory;
pub mod notation;
pub mod reference;
pub mod schedule;
pub mod tensor;

pub use error::Error;
