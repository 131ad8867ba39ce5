//! `tune(search="model")`: the learned cost model ranks the candidates, when the package is
//! built with the `learned` feature; a clear error when it is not.

use std::path::Path;

use pyo3::PyResult;
use sparsec::notation::cin::Statement;
use sparsec::tensor::Tensor;
use sparsec::tune::{Choice, TuneOptions, Tuned};

use crate::errors;

/// How many of the model's best-ranked points are measured when the call does not say.
#[cfg(feature = "learned")]
const DEFAULT_CANDIDATES: usize = 10;

/// The cost model a model search ranks the candidates of one statement with.
#[cfg(feature = "learned")]
pub struct ModelSearch(sparsec::tune::model::CostModel);

/// Without the `learned` feature no model search can be made: [`ModelSearch::for_statement`]
/// always refuses.
#[cfg(not(feature = "learned"))]
pub enum ModelSearch {}

impl ModelSearch {
    /// The model stored at `stem` (`stem.json`, `stem.safetensors`), or the one shipped for
    /// the statement `expr`.
    #[cfg(feature = "learned")]
    pub fn for_statement(expr: &str, stem: Option<&Path>) -> PyResult<ModelSearch> {
        use sparsec::tune::model::CostModel;
        let model = match stem {
            Some(stem) => CostModel::load(stem).map_err(|e| errors::input(e.to_string()))?,
            None => CostModel::builtin(expr).ok_or_else(|| {
                errors::input(format!(
                    "no cost model ships for `{expr}`; train one with `sparsec tune collect` \
                     and `sparsec tune train` and pass its stem as model="
                ))
            })?,
        };
        Ok(ModelSearch(model))
    }

    #[cfg(not(feature = "learned"))]
    pub fn for_statement(_expr: &str, _stem: Option<&Path>) -> PyResult<ModelSearch> {
        Err(errors::input(
            "search=\"model\": this sparsec package was built without the `learned` feature; \
             reinstall it with MATURIN_PEP517_ARGS=\"--features learned\" pip install \
             ./crates/sparsec-py",
        ))
    }

    /// Measure sparsec's default and the model's best-ranked candidates within the budget,
    /// and keep the fastest (stored in the tuning cache as every search's choice is).
    #[cfg(feature = "learned")]
    pub fn tune(
        &self,
        statement: &Statement,
        inputs: Vec<Tensor>,
        options: &TuneOptions,
    ) -> Result<(Tuned, Choice), sparsec::Error> {
        let top = options.candidates.unwrap_or(DEFAULT_CANDIDATES);
        sparsec::tune::tune_with(statement, inputs, options, |space, measurer| {
            sparsec::tune::model::ann::search(
                space,
                measurer,
                &self.0,
                top,
                options.budget,
                options.seed,
                |_| {},
            )
        })
    }

    #[cfg(not(feature = "learned"))]
    pub fn tune(
        &self,
        _statement: &Statement,
        _inputs: Vec<Tensor>,
        _options: &TuneOptions,
    ) -> Result<(Tuned, Choice), sparsec::Error> {
        match *self {}
    }
}
