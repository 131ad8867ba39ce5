//! Front end: tensor index notation.
//!
//! `parse` turns text such as `y(i) = A(i,j) * x(j)` into a syntax tree ([`ast`]) with
//! source spans; `bind` checks it against the tensors' declarations and produces
//! *concrete index notation* ([`cin`]): tensors and index variables resolved to ids, sizes
//! known, and every reduction made explicit as a `Sum` placed around the smallest
//! subexpression that holds all uses of its variable (TACO's reduction placement).
//! An `over (⊕, ⊗)` clause ([`semiring`]) changes what `+`, `*` and reductions mean.
//! Errors carry the offending span for `miette` diagnostics.

pub mod ast;
pub mod bind;
pub mod cin;
pub mod error;
mod fill;
mod lex;
pub mod operator;
pub mod parse;
pub mod semiring;
pub mod traced;

pub use bind::{bind, TensorDecl};
pub use error::{NotationError, NotationErrorKind};
pub use parse::parse;
