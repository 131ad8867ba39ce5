//! The sparse polyhedral (SPF) front end: computations whose loops run over index arrays
//! (forward substitution, Gauss-Seidel, SpMV written as loops), lowered to the same
//! [`ir::Function`](crate::ir::Function) as index notation and compiled by the C backend.
//!
//! Stages, one file each: [`parse`] reads the text format (`docs/spf.md`), [`set`] holds
//! sets and relations with uninterpreted functions, [`deps`] checks that a parallel or
//! level-set (wavefront) outer loop respects the dependences, [`codegen`] scans the
//! scheduled statements into IR, and [`exec`] binds tensors and runs the compiled kernel.

pub mod codegen;
pub mod deps;
pub mod exec;
pub mod parse;
pub mod presburger;
pub mod set;

use miette::{Diagnostic, NamedSource, SourceSpan};

pub use exec::SpfKernel;
pub use parse::{parse_map, parse_program, parse_set, Program};

/// An error in a computation, pointing at the offending span of its text.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[diagnostic(
    code(sparsec::spf),
    help("what it means and what to do: docs/troubleshooting.md, section `sparsec::spf`")
)]
#[error("{message}")]
pub struct SpfError {
    pub message: String,
    #[source_code]
    source_code: Option<NamedSource<String>>,
    #[label("here")]
    span: Option<SourceSpan>,
}

impl SpfError {
    /// An error at byte range `span` (the source is attached by [`SpfError::in_source`]).
    pub fn new(message: String, span: parse::Span) -> SpfError {
        SpfError {
            message,
            source_code: None,
            span: Some((span.0, span.1 - span.0).into()),
        }
    }

    /// An error that concerns no particular span.
    pub fn general(message: String) -> SpfError {
        SpfError {
            message,
            source_code: None,
            span: None,
        }
    }

    /// The byte range the error points at.
    pub fn span(&self) -> Option<parse::Span> {
        self.span.map(|s| (s.offset(), s.offset() + s.len()))
    }

    /// Attach the program text (named `name`) for the diagnostic to quote.
    pub fn in_source(mut self, name: &str, text: &str) -> SpfError {
        self.source_code = Some(NamedSource::new(name, text.to_string()));
        self
    }
}
