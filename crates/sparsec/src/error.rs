//! The crate's error type: every stage's errors, with diagnostics where they have spans.

use std::fmt;

use miette::Diagnostic;

use crate::codegen::abi::BackendError;
use crate::jit::JitError;
use crate::notation::NotationError;
use crate::schedule::{ScheduleError, ScheduleSyntaxError};
use crate::tensor::TensorError;

/// Any error sparsec reports. Its diagnostic code names its class ([`Error::class`]), and
/// its help points to that class's section of `docs/troubleshooting.md`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The expression does not parse or does not fit the tensors.
    #[error(transparent)]
    Notation(#[from] NotationError),
    /// The statement cannot be compiled (and why).
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// A schedule string does not parse.
    #[error(transparent)]
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
    Spf(#[from] crate::spf::SpfError),
    /// An affine program is malformed, outside the affine class, or its analysis failed.
    #[error(transparent)]
    Affine(Box<crate::affine::AffineError>),
    /// Inputs do not match the compiled statement.
    #[error("{0}")]
    Input(String),
    /// The autotuner could not measure or choose a candidate (`crate::tune`).
    #[error("{0}")]
    Tune(String),
}

impl Error {
    /// The error's class: its diagnostic code and its section of `docs/troubleshooting.md`.
    pub fn class(&self) -> &'static str {
        match self {
            Error::Notation(_) => "sparsec::notation",
            Error::Lower(_) => "sparsec::lower",
            Error::ScheduleSyntax(_) => "sparsec::schedule::syntax",
            Error::Schedule(_) => "sparsec::schedule",
            Error::Backend(_) => "sparsec::backend",
            Error::Jit(_) => "sparsec::jit",
            Error::Tensor(_) => "sparsec::tensor",
            Error::Spf(_) => "sparsec::spf",
            Error::Affine(_) => "sparsec::affine",
            Error::Input(_) => "sparsec::input",
            Error::Tune(_) => "sparsec::tune",
        }
    }

    /// The wrapped error's own diagnostic, where it has a source span or help (and then
    /// its own pointer to the troubleshooting page).
    fn detail(&self) -> Option<&dyn Diagnostic> {
        match self {
            Error::Notation(e) => Some(e),
            Error::ScheduleSyntax(e) => Some(e),
            Error::Spf(e) => Some(e),
            Error::Affine(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

/// The help line every error class ends with.
pub(crate) fn troubleshooting(class: &str) -> String {
    format!("what it means and what to do: docs/troubleshooting.md, section `{class}`")
}

impl Diagnostic for Error {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.class()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        match self.detail() {
            Some(detail) => detail.help(),
            None => Some(Box::new(troubleshooting(self.class()))),
        }
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.detail()?.source_code()
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.detail()?.labels()
    }
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
