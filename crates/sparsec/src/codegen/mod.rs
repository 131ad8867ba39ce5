//! Backends: print lowered IR as source code for a native compiler.

pub mod c;
pub mod runtime;
