//! The crate's error type: every stage's errors, with diagnostics where they have spans.

use crate::jit::JitError;
use crate::lower::LowerError;
use crate::notation::NotationError;
use crate::tensor::TensorError;

/// Any error sparsec reports.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// The expression does not parse or does not fit the tensors.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Notation(#[from] NotationError),
    /// The statement cannot be compiled (and why).
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// Compiling or loading the generated code failed.
    #[error(transparent)]
    Jit(#[from] JitError),
    /// A tensor could not be built in the requested format.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// Inputs do not match the compiled statement.
    #[error("{0}")]
    Input(String),
}
