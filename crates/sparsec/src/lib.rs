//! sparsec: a sparse tensor algebra compiler.
//!
//! The crate is a pipeline; each module is one stage and data flows one way:
//!
//! ```text
//! notation -> schedule -> lower (merge lattices, level functions) -> ir::Function
//!          -> target (C + OpenMP, or Cranelift in process; see [`target::Target`])
//!          -> jit (compile, cache, load) -> kernel (run on tensors)
//! ```
//!
//! Storage is described by [`format`](mod@crate::format) (level formats with properties and capabilities)
//! and held by [`tensor`]; [`io`] reads and writes MatrixMarket, FROSTT and `.spt` files.
//! `ARCHITECTURE.md` in the repository is the map.
//!
//! SpMV on a CSR matrix, compiled in process (no C compiler needed) and run:
//!
//! ```
//! use sparsec::format::Format;
//! use sparsec::jit::Toolchain;
//! use sparsec::kernel::{lower_with_default_parallelism, Backend, Kernel};
//! use sparsec::notation::{self, TensorDecl};
//! use sparsec::schedule::Concrete;
//! use sparsec::tensor::{Coo, Tensor, ValueType};
//!
//! let csr = Format::parse("csr", 2)?;
//! let decls = [
//!     TensorDecl::new("y"),
//!     TensorDecl::new("A").with_dims(&[2, 3]).with_format(csr.clone()),
//!     TensorDecl::new("x").with_dims(&[3]),
//! ];
//! let statement = notation::bind(&notation::parse("y(i) = A(i,j) * x(j)")?, &decls, &[])?;
//! let lowered = lower_with_default_parallelism(&Concrete::new(&statement)?)?;
//! let kernel = Kernel::from_lowered(
//!     statement,
//!     lowered,
//!     ValueType::F64,
//!     &Toolchain::default(),
//!     Backend::Jit,
//! )?;
//! // A = [[1, 0, 2], [0, 3, 0]], x = [1, 1, 1]
//! let a = Coo::new(vec![2, 3], vec![0, 0, 0, 2, 1, 1], vec![1.0, 2.0, 3.0])?;
//! let a = Tensor::from_coo(&a, &csr, ValueType::F64)?;
//! let x = Coo::new(vec![3], vec![0, 1, 2], vec![1.0; 3])?;
//! let x = Tensor::from_coo(&x, &Format::dense(1), ValueType::F64)?;
//! let y = kernel.run(&[&a, &x])?;
//! assert_eq!(y.to_coo().values, [3.0, 3.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod affine;
pub mod codegen;
pub mod distributed;
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
pub mod polyhedral;
pub mod reference;
pub mod schedule;
pub mod spf;
pub mod target;
pub mod tensor;
pub mod trust;
pub mod tune;

pub use error::Error;
