//! Code compiled per set of `int32_t` index arrays: a kernel is compiled for the index
//! widths its inputs are expected to have, and for others the first time they arrive, so
//! inputs are always read in place rather than widened on every call.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use crate::ir::{ArrayRef, Function};
use crate::Error;

/// Compiled code of type `T` by the set of arrays it reads as `int32_t`.
pub(crate) struct WidthVariants<T> {
    compiled: Mutex<Vec<(BTreeSet<ArrayRef>, Arc<T>)>>,
}

impl<T> WidthVariants<T> {
    pub(crate) fn new() -> Self {
        WidthVariants {
            compiled: Mutex::new(Vec::new()),
        }
    }

    /// The code for `function` reading the `narrow` arrays as `int32_t`, compiled by
    /// `compile` the first time. Compiling holds the lock: a concurrent run with the same
    /// widths waits for this compilation instead of starting its own.
    pub(crate) fn get_or_compile(
        &self,
        function: &Function,
        narrow: &BTreeSet<ArrayRef>,
        compile: impl FnOnce(&Function) -> Result<T, Error>,
    ) -> Result<Arc<T>, Error> {
        let mut compiled = self.compiled.lock().expect("variants");
        if let Some((_, code)) = compiled.iter().find(|(n, _)| n == narrow) {
            return Ok(code.clone());
        }
        let mut function = function.clone();
        function.narrow_arrays = narrow.clone();
        // Storage built from parts may hold `int32_t` where a helper reads `int64_t`.
        crate::ir::verify(&function)
            .map_err(|e| Error::Input(format!("the inputs' index widths: {e}")))?;
        let code = Arc::new(compile(&function)?);
        compiled.push((narrow.clone(), code.clone()));
        Ok(code)
    }
}
