//! The crate's error type: every stage's errors, with diagnostics where they have spans.

use crate::codegen::abi::BackendError;
use crate::jit::JitError;
use crate::notation::NotationError;
use crate::schedule::{ScheduleError, ScheduleSyntaxError};
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
    /// A schedule string does not parse.
    #[error(transparent)]
    #[diagnostic(transparent)]
    ScheduleSyntax(#[from] ScheduleSyntaxError),
    /// A scheduling transformation's precondition does not hold.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The backend cannot print the lowered kernel.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// Compiling or loading the generated code failed.
    #[error(transparent)]
    Jit(#[from] JitError),
    /// A tensor could not be built in the requested format.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// A sparse polyhedral computation does not parse or cannot be compiled.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Spf(#[from] crate::spf::SpfError),
    /// An affine program is malformed, outside the affine class, or its analysis failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Affine(Box<crate::affine::AffineError>),
    /// Inputs do not match the compiled statement.
    #[error("{0}")]
    Input(String),
    /// The autotuner could not measure or choose a candidate (`crate::tune`).
    #[error("{0}")]
    Tune(String),
}

/// A statement that cannot be compiled as its formats and schedule say (and why): made
/// concrete by the scheduler or lowered to a kernel. Both stages report it, so it lives
/// with neither.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot compile this statement: {0}")]
pub struct LowerError(pub String);

impl From<crate::affine::AffineError> for Error {
    fn from(e: crate::affine::AffineError) -> Error {
        Error::Affine(Box::new(e))
    }
}
