//! Backends: turn lowered IR into native kernels with one shared ABI ([`abi`]): printed as
//! C for a native compiler ([`c`]), or compiled in process by Cranelift ([`clif`]).

pub mod abi;
pub mod c;
pub mod clif;
pub mod cuda;
pub mod gpu;
pub mod opencl;
pub mod runtime;
