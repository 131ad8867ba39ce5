//! The specialised program compiled and run: the IR of [`super::codegen`] compiled by a
//! target (C with OpenMP by default, or Cranelift), called on dense arrays that it
//! updates in place, as the dense program does.

use std::collections::BTreeMap;
use std::ffi::c_void;

use super::codegen::{self, Layout};
use super::dense::{self, Arrays};
use super::model::Model;
use super::{AffineError, Specialised};
use crate::ir::{ArrayRef, Function, ParamRef, ScalarArg};
use crate::kernel::bind::Arguments;
use crate::kernel::default_threads;
use crate::kernel::native::{self, Compiled, EntryBuffers};
use crate::target::{Contents, Targets};
use crate::Error;

/// A specialised program, compiled.
pub struct AffineKernel {
    model: Model,
    /// The parameter values it was generated for, if any: it runs with those only.
    fixed: Option<BTreeMap<String, i64>>,
    function: Function,
    layout: Layout,
    compiled: Compiled,
    buffers: EntryBuffers,
    threads: usize,
}

impl AffineKernel {
    /// Generate and compile the executed iterations of `specialised` with `targets`.
    pub fn compile(specialised: &Specialised, targets: Targets) -> Result<AffineKernel, Error> {
        AffineKernel::compile_sets(specialised, &specialised.regions.executed, targets)
    }

    /// The program as written (every iteration of every statement), compiled the same
    /// way: the dense baseline of the specialised kernel.
    pub fn compile_dense(
        specialised: &Specialised,
        targets: Targets,
    ) -> Result<AffineKernel, Error> {
        let model = &specialised.model;
        let domains = (0..model.statements.len())
            .map(|s| specialised.isl.union_set(&model.domain_text(s, None)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(super::isl_error("generating the dense loops"))?;
        AffineKernel::compile_sets(specialised, &domains, targets)
    }

    fn compile_sets(
        specialised: &Specialised,
        executed: &[crate::polyhedral::isl::UnionSet],
        targets: Targets,
    ) -> Result<AffineKernel, Error> {
        let (mut function, layout) = codegen::generate(
            &specialised.isl,
            &specialised.model,
            executed,
            specialised.params.as_ref(),
        )?;
        targets.prepare(&mut function)?;
        Ok(AffineKernel {
            model: specialised.model.clone(),
            fixed: specialised.params.clone(),
            compiled: Compiled::new(&function, targets)?,
            function,
            layout,
            buffers: EntryBuffers::default(),
            threads: default_threads(),
        })
    }

    /// The generated code, as its target prints it.
    pub fn source(&self) -> &str {
        self.compiled.listing(&self.function).kernel()
    }

    /// The generated IR.
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// Where the arrays live in the buffer the kernel updates.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The threads parallel loops use.
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.max(1);
    }

    /// Run on `arrays` (by name, row-major; an array not given starts as zeros) with the
    /// parameters `params`, updating them in place; every array the program declares is
    /// in `arrays` afterwards.
    pub fn run(&self, params: &BTreeMap<String, i64>, arrays: &mut Arrays) -> Result<(), Error> {
        let mut state = self.pack(params, arrays)?;
        self.call(params, &mut state)?;
        self.unpack(params, &state, arrays)
    }

    /// The buffer the kernel updates: every array of `arrays` (an array not given is
    /// zeros) one after the other, in declaration order, for the sizes `params`.
    pub fn pack(&self, params: &BTreeMap<String, i64>, arrays: &Arrays) -> Result<Vec<f64>, Error> {
        self.check_params(params)?;
        let shapes = dense::extents(&self.model.program, params)?;
        let mut state = Vec::new();
        for array in &self.model.program.arrays {
            let size: usize = shapes[&array.name].iter().product();
            match arrays.get(&array.name) {
                Some(given) if given.len() == size => state.extend_from_slice(given),
                Some(given) => {
                    return Err(Error::Input(format!(
                        "`{}` is given {} values; its extents hold {size}",
                        array.name,
                        given.len()
                    )))
                }
                None => state.resize(state.len() + size, 0.0),
            }
        }
        Ok(state)
    }

    /// The arrays of a buffer [`AffineKernel::pack`] made, into `arrays`.
    pub fn unpack(
        &self,
        params: &BTreeMap<String, i64>,
        state: &[f64],
        arrays: &mut Arrays,
    ) -> Result<(), Error> {
        let shapes = dense::extents(&self.model.program, params)?;
        let mut at = 0;
        for array in &self.model.program.arrays {
            let size: usize = shapes[&array.name].iter().product();
            let values = state.get(at..at + size).ok_or_else(|| {
                Error::Input("the buffer is shorter than the arrays it should hold".into())
            })?;
            arrays.insert(array.name.clone(), values.to_vec());
            at += size;
        }
        Ok(())
    }

    fn check_params(&self, params: &BTreeMap<String, i64>) -> Result<(), Error> {
        for p in &self.model.program.params {
            if !params.contains_key(p) {
                return Err(
                    AffineError::general(format!("the parameter `{p}` has no value")).into(),
                );
            }
        }
        if let Some(fixed) = &self.fixed {
            for (name, value) in fixed {
                if params.get(name) != Some(value) {
                    return Err(AffineError::general(format!(
                        "the kernel was specialised for `{name}` = {value}, and is run with {}",
                        params
                            .get(name)
                            .map_or("no value".to_string(), |v| v.to_string())
                    ))
                    .into());
                }
            }
        }
        Ok(())
    }

    /// Run the kernel on `state`, a buffer laid out as [`AffineKernel::pack`] lays it out
    /// for `params`: the call alone, with no copy.
    pub fn call(&self, params: &BTreeMap<String, i64>, state: &mut [f64]) -> Result<(), Error> {
        self.check_params(params)?;
        let shapes = dense::extents(&self.model.program, params)?;
        let len: usize = shapes.values().map(|d| d.iter().product::<usize>()).sum();
        if state.len() != len {
            return Err(Error::Input(format!(
                "the buffer holds {} values; the arrays need {len}",
                state.len()
            )));
        }
        let signature = self.compiled.signature();
        let mut values = Vec::new();
        for scalar in &signature.scalars {
            values.push(match scalar {
                ScalarArg::Param(ParamRef::Extent(n)) => params[&self.model.program.params[*n]],
                ScalarArg::Param(ParamRef::Length(ArrayRef::Values(_))) => state.len() as i64,
                ScalarArg::Threads => self.threads as i64,
                other => {
                    return Err(Error::Input(format!(
                        "the specialised kernel asks for {other:?}, which it cannot be given"
                    )))
                }
            });
        }
        let mut arguments = Arguments {
            arrays: vec![state.as_mut_ptr() as *mut c_void; signature.arrays.len()],
            bytes: vec![std::mem::size_of_val(state); signature.arrays.len()],
            contents: vec![Contents::Unnamed; signature.arrays.len()],
            params: values,
            narrow: Default::default(),
        };
        let code = self.compiled.current();
        let mut buffers = self.buffers.take(self.threads);
        // SAFETY: the only array is `state`, alive for the call and as long as the
        // extents make it (checked above); every access of the program stays inside its
        // array's extents for every parameter value with non-negative extents (checked by
        // `Model::new`, and `dense::extents` refused negative ones), and the kernel runs
        // a subset of the program's iterations.
        let called = unsafe {
            native::call(
                code.as_ref(),
                &self.function,
                signature,
                &mut arguments,
                &mut buffers,
                "for its scratch arrays",
            )
        };
        self.buffers.keep(buffers);
        called
    }
}
