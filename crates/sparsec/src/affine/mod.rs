//! The affine front end: dense loop nests with affine bounds, guards and accesses (C as
//! PolyBench writes it), specialised to the sparse structure of their inputs by partial
//! evaluation (Dehame, Alias and Sadler, "Partial Evaluation of Dense Code on Sparse
//! Structures", the digest `spec/partial-evaluation.md`).
//!
//! Stages, one file each: [`parse`] reads the program (`docs/affine.md`) from the tokens
//! of `lex`, [`model`]
//! gives every statement its iteration domain, schedule and accesses as isl texts,
//! [`dataflow`] finds the exact source of every value a statement reads (array dataflow
//! analysis by parametric maxima, Feautrier's method), [`sparsity`] builds and solves the
//! sparsity equations (Arden's lemma over transitive closures, with the paper's
//! relaxation of intersections inside a recursion), [`boxes`] turns a matrix's pattern
//! into a union of rectangles, [`solution_map`] solves the equations once for boxes
//! whose bounds are parameters and applies that to new inputs, and [`dense`] runs the
//! program as written, the reference that the analysis and the specialised code are
//! checked against.

pub mod boxes;
pub mod codegen;
pub mod dataflow;
pub mod dense;
pub mod expr;
pub mod inputs;
pub mod kernel;
mod lex;
pub mod model;
pub mod parse;
pub mod solution_map;
pub mod sparsity;

use miette::{Diagnostic, NamedSource, SourceSpan};

pub use parse::{parse_program, Program};

/// Byte range in the program text.
pub type Span = (usize, usize);

/// An error in an affine program, pointing at the offending span of its text where
/// there is one.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[diagnostic(
    code(sparsec::affine),
    help("what it means and what to do: docs/troubleshooting.md, section `sparsec::affine`")
)]
#[error("{message}")]
pub struct AffineError {
    pub message: String,
    #[source_code]
    source_code: Option<NamedSource<String>>,
    #[label("here")]
    span: Option<SourceSpan>,
}

impl AffineError {
    /// An error at byte range `span`.
    pub fn new(message: impl Into<String>, span: Span) -> AffineError {
        AffineError {
            message: message.into(),
            source_code: None,
            span: Some((span.0, span.1.saturating_sub(span.0)).into()),
        }
    }

    /// An error that concerns no particular span.
    pub fn general(message: impl Into<String>) -> AffineError {
        AffineError {
            message: message.into(),
            source_code: None,
            span: None,
        }
    }

    /// The byte range the error points at.
    pub fn span(&self) -> Option<Span> {
        self.span.map(|s| (s.offset(), s.offset() + s.len()))
    }

    /// Attach the program text (named `name`) for the diagnostic to quote.
    pub fn in_source(mut self, name: &str, text: &str) -> AffineError {
        self.source_code = Some(NamedSource::new(name, text.to_string()));
        self
    }
}

/// isl's failures become errors that say which step of the analysis failed.
pub(crate) fn isl_error(step: &str) -> impl Fn(String) -> AffineError + '_ {
    move |message| AffineError::general(format!("{step}: {message}"))
}

use std::collections::BTreeMap;

use crate::polyhedral::isl::{Isl, UnionSet};

/// The set of parameter values `params`, in isl's syntax (`[N, M] -> { : N = 4 and M = 2 }`).
pub fn params_context(params: &BTreeMap<String, i64>) -> String {
    let names: Vec<&str> = params.keys().map(|s| s.as_str()).collect();
    let values: Vec<String> = params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    if values.is_empty() {
        "{ : }".to_string()
    } else {
        format!("[{}] -> {{ : {} }}", names.join(", "), values.join(" and "))
    }
}

/// A program specialised to the non-zero structure of its inputs: the model, the
/// dataflow, and the regions of interest, all in one isl context.
pub struct Specialised {
    pub isl: Isl,
    pub model: model::Model,
    pub dataflow: dataflow::Dataflow,
    pub regions: sparsity::Specialisation,
    /// The parameter values the analysis holds for, when it was given them.
    pub params: Option<BTreeMap<String, i64>>,
}

/// Analyse `program` for inputs whose non-zero cells are `patterns`: per array name, a
/// set in isl's syntax over the array's cells (`{ A[i, j] : 0 <= i < 4 and j = i }`).
/// Cells outside an array's extents are not part of it; an input without a pattern is
/// dense. With `params`, the analysis holds for those values of the parameters only
/// (every set is then finite, which lets stencils of several dimensions be solved
/// exactly where isl's transitive closures give up); without, for every value.
pub fn specialise(
    program: Program,
    patterns: &[(String, String)],
    params: Option<&BTreeMap<String, i64>>,
) -> Result<Specialised, AffineError> {
    let model = model::Model::new(program)?;
    let isl = Isl::new().with_operation_limit(200_000_000);
    let mut sets: BTreeMap<String, UnionSet> = BTreeMap::new();
    for (name, text) in patterns {
        let Some(array) = model.program.array(name) else {
            return Err(AffineError::general(format!(
                "a pattern is given for `{name}`, which the program does not declare"
            )));
        };
        let extents = isl
            .union_set(&model.extents_text(array))
            .map_err(isl_error("reading a pattern"))?;
        let set = isl
            .union_set(text)
            .map_err(|e| AffineError::general(format!("the pattern of `{name}`: {e}")))?;
        let (cells, _) = model.cells(array);
        let space = isl
            .union_set(&format!("{{ {cells} }}"))
            .map_err(isl_error("reading a pattern"))?;
        let inside = set
            .intersect(&extents)
            .map_err(isl_error("reading a pattern"))?;
        let outside = set
            .subtract(&space)
            .and_then(|s| s.is_empty())
            .map_err(isl_error("reading a pattern"))?;
        if !outside {
            return Err(AffineError::general(format!(
                "the pattern of `{name}` is not a set of `{name}`'s cells ({} of them)",
                array.extents.len()
            )));
        }
        sets.insert(name.clone(), inside);
    }
    isl.reset_operations();
    let dataflow = dataflow::analyse(&isl, &model)?;
    isl.reset_operations();
    let fixed = match params {
        Some(values) => {
            for p in &model.program.params {
                if !values.contains_key(p) {
                    return Err(AffineError::general(format!(
                        "the parameter `{p}` has no value"
                    )));
                }
            }
            let own: BTreeMap<String, i64> = model
                .program
                .params
                .iter()
                .map(|p| (p.clone(), values[p]))
                .collect();
            Some(params_context(&own))
        }
        None => None,
    };
    let regions = sparsity::solve(&isl, &model, &dataflow, &sets, fixed.as_deref())?;
    Ok(Specialised {
        isl,
        model,
        dataflow,
        regions,
        params: params.cloned(),
    })
}
