//! Running a compiled kernel: binding its inputs, calling its native code with one entry
//! buffer per thread, and turning what it produced (a dense output, emitted entries, or
//! rows placed in two phases) into the output tensor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bind::Arguments;
use super::native;
use super::output::{self, OutputStructure, Produced};
use super::{Assembled, Kernel, Timings};
use crate::codegen::runtime::RawBuffer;
use crate::ir::OutputMode;
use crate::tensor::{Coo, Rows, Tensor, TensorView};
use crate::Error;

impl Kernel {
    /// Run on `inputs` (the statement's tensors after the output, in order): tensors, or
    /// [`TensorView`]s of storage another owner keeps, read in place when they are in the
    /// layout and value type the kernel reads.
    pub fn run<I: KernelInput>(&self, inputs: &[I]) -> Result<Tensor, Error> {
        self.run_timed(inputs, None).map(|(t, _)| t)
    }

    /// Run, adding into `initial` for `+=` statements, and report phase times.
    pub fn run_timed<I: KernelInput>(
        &self,
        inputs: &[I],
        initial: Option<&Tensor>,
    ) -> Result<(Tensor, Timings), Error> {
        let (produced, mut timings) = self.execute(inputs, initial)?;
        let assembling = Instant::now();
        let mut result = match produced {
            Produced::Dense(t) => t,
            Produced::Entries(coo) => {
                Tensor::from_coo_owned(coo, &self.statement.tensors[0].format, self.value_type)?
            }
            Produced::Rows(rows) => {
                let out = &self.statement.tensors[0];
                Tensor::from_rows(rows, out.dims.clone(), &out.format)?
            }
        };
        // What the components no entry reached hold: the reduction's identity over a
        // semiring (formats that pad are refused there), the right-hand side at absent
        // inputs over `(+, *)` (stored in full unless that is all they hold).
        result.set_fill(self.statement.output_fill());
        timings.assemble += assembling.elapsed();
        Ok((result, timings))
    }

    /// Run once and keep what the output's structure needs, so that [`Kernel::compute`] can
    /// later recompute its values for new input values of the same structure without
    /// assembling it again.
    ///
    /// ```no_run
    /// # use sparsec::{kernel::Kernel, tensor::Tensor};
    /// # fn demo(kernel: &Kernel, a: &Tensor, b: &mut Tensor) -> Result<(), sparsec::Error> {
    /// let mut c = kernel.assemble(&[a, b], None)?;
    /// for step in 0..10 {
    ///     b.values_mut().set(0, step as f64); // new values, same nonzeros
    ///     kernel.compute(&[a, b], None, &mut c)?;
    ///     println!("{:?}", c.tensor().to_coo());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn assemble<I: KernelInput>(
        &self,
        inputs: &[I],
        initial: Option<&Tensor>,
    ) -> Result<Assembled, Error> {
        let mut assembled = self.assemble_unfilled(inputs, initial)?;
        assembled.tensor.set_fill(self.statement.output_fill());
        Ok(assembled)
    }

    /// [`Kernel::assemble`], the output's fill value left at 0.
    fn assemble_unfilled<I: KernelInput>(
        &self,
        inputs: &[I],
        initial: Option<&Tensor>,
    ) -> Result<Assembled, Error> {
        let (produced, _) = self.execute(inputs, initial)?;
        let out = &self.statement.tensors[0];
        let coo = match produced {
            Produced::Dense(tensor) => {
                return Ok(Assembled {
                    tensor,
                    structure: None,
                })
            }
            Produced::Entries(coo) => coo,
            // Rows in order are the output's entries, one value each, in storage order.
            Produced::Rows(rows) if rows.in_order(&out.dims, &out.format) => {
                let (pos, idx) = (rows.pos.clone(), rows.idx.clone());
                return Ok(Assembled {
                    tensor: Tensor::from_rows(rows, out.dims.clone(), &out.format)?,
                    structure: Some(OutputStructure::Rows { pos, idx }),
                });
            }
            Produced::Rows(rows) => self.entries_of_rows(&rows),
        };
        let coords = coo.coords.clone();
        let (tensor, slots) = Tensor::from_coo_tracked(coo, &out.format, self.value_type)?;
        Ok(Assembled {
            tensor,
            structure: Some(OutputStructure::Entries { coords, slots }),
        })
    }

    /// Recompute the values of an output from [`Kernel::assemble`] for inputs whose values
    /// changed but whose structure did not. The entries the kernel produces are checked
    /// against those the output was assembled from; a different structure is an error
    /// (assemble again) and leaves `output` as it was.
    pub fn compute<I: KernelInput>(
        &self,
        inputs: &[I],
        initial: Option<&Tensor>,
        output: &mut Assembled,
    ) -> Result<Timings, Error> {
        let (produced, mut timings) = self.execute(inputs, initial)?;
        let scattering = Instant::now();
        let changed = |then: usize, now: usize| {
            Error::Input(format!(
                "the output `{}` was assembled for inputs of another nonzero structure ({then} \
                 entries then, {now} now); assemble it again",
                self.statement.tensors[0].name,
            ))
        };
        let produced = match (produced, &output.structure) {
            (Produced::Rows(rows), Some(OutputStructure::Entries { .. })) => {
                Produced::Entries(self.entries_of_rows(&rows))
            }
            (produced, _) => produced,
        };
        match (produced, &output.structure) {
            (Produced::Dense(tensor), None) => output.tensor = tensor,
            (Produced::Entries(coo), Some(OutputStructure::Entries { coords, slots })) => {
                if coo.coords != *coords {
                    return Err(changed(slots.len(), coo.len()));
                }
                output.tensor.values_mut().scatter_sums(slots, &coo.values);
            }
            (Produced::Rows(rows), Some(OutputStructure::Rows { pos, idx })) => {
                if rows.pos != *pos || rows.idx != *idx {
                    return Err(changed(idx.len(), rows.idx.len()));
                }
                *output.tensor.values_mut() = rows.values;
            }
            _ => {
                return Err(Error::Input(
                    "this output was assembled by another kernel".into(),
                ))
            }
        }
        timings.assemble += scattering.elapsed();
        Ok(timings)
    }

    /// Rows a two-phase kernel wrote, as the entries an emitting kernel would have emitted
    /// (what [`Kernel::assemble`] and [`Kernel::compute`] keep and compare).
    fn entries_of_rows(&self, rows: &Rows) -> Coo {
        let out = &self.statement.tensors[0];
        rows.to_coo(&out.dims, &out.format)
    }

    /// Check and convert the inputs, call the generated kernel, and collect what it
    /// produced (with `initial`'s entries for `+=` statements).
    fn execute<I: KernelInput>(
        &self,
        inputs: &[I],
        initial: Option<&Tensor>,
    ) -> Result<(Produced, Timings), Error> {
        let started = Instant::now();
        let inputs: Vec<TensorView<'_>> = inputs.iter().map(KernelInput::input_view).collect();
        self.check_inputs(&inputs, initial)?;
        let mut output = self.output(initial)?;
        let stored_entries =
            output::stored_sparse_entries(inputs.iter().map(|v| (v.format(), v.values().len())));
        let inputs = self.inputs(&inputs)?;
        let mut arguments = self.arguments(&mut output, &inputs);
        let prepared = Instant::now();
        let out = &self.statement.tensors[0];
        let target = output::PlacedOutput {
            name: &out.name,
            dims: &out.dims,
            format: &out.format,
            value_type: self.value_type,
        };
        let mut computed = prepared;
        let emitting = matches!(self.lowered.function.output, OutputMode::Emit { .. });
        let produced = output::produce(
            self.lowered.function.output,
            output,
            &target,
            self.compiled.signature(),
            &mut arguments,
            stored_entries,
            &self.placement,
            &mut |a| {
                let buffers = self.call(a)?;
                computed = Instant::now();
                // Only an emitting kernel's buffers hold entries.
                let entries = if emitting {
                    let (coords, values) = RawBuffer::entries(&buffers, out.dims.len());
                    Coo {
                        dims: out.dims.clone(),
                        coords,
                        values,
                    }
                } else {
                    Coo::empty(Vec::new())
                };
                self.keep_buffers(buffers);
                Ok(entries)
            },
        )?;
        let produced = match produced {
            Produced::Entries(entries) => Produced::Entries(self.with_initial(entries, initial)),
            other => other,
        };
        // Collecting the emitted entries is the first step of assembling them; placed rows
        // are assembled by the kernel.
        let (compute, assemble) = match produced {
            Produced::Rows(_) => (prepared.elapsed(), Duration::ZERO),
            _ => (computed - prepared, computed.elapsed()),
        };
        Ok((
            produced,
            Timings {
                prepare: prepared - started,
                compute,
                assemble,
            },
        ))
    }

    /// Call the current native code with one entry buffer per thread (serial code uses the
    /// first); a nonzero status becomes the failed assumption's message.
    fn call(&self, arguments: &mut Arguments) -> Result<Vec<RawBuffer>, Error> {
        let mut buffers = self.spare_buffers.take(self.threads);
        let code = match self.code_for(&arguments.narrow) {
            Ok(code) => code,
            Err(e) => {
                self.keep_buffers(buffers);
                return Err(e);
            }
        };
        let trial = self.sum_versions.begin(
            &mut arguments.params,
            Arc::as_ptr(&code) as *const () as usize,
            code.capabilities().tunable.is_some(),
        );
        let started = Instant::now();
        // SAFETY: every pointer addresses storage of the operand its slot names and stays
        // alive (owned by the caller's operands) for the call; the output's values are
        // written through the only mutable pointer, whose tensor is not aliased elsewhere.
        let called = unsafe {
            native::call(
                code.as_ref(),
                &self.lowered.function,
                self.compiled.signature(),
                arguments,
                &mut buffers,
                "while producing its output",
            )
        };
        match called {
            Ok(()) => {
                self.sum_versions.finish(trial, started.elapsed());
                Ok(buffers)
            }
            Err(e) => {
                self.keep_buffers(buffers);
                Err(e)
            }
        }
    }

    /// The entries the kernel emitted, then for `+=` statements those of `initial`.
    fn with_initial(&self, mut coo: Coo, initial: Option<&Tensor>) -> Coo {
        if let (true, Some(init)) = (self.statement.accumulate, initial) {
            let init = init.to_coo();
            coo.coords.extend_from_slice(&init.coords);
            coo.values.extend_from_slice(&init.values);
        }
        coo
    }

    /// Empty the buffers and keep them for the next run.
    fn keep_buffers(&self, buffers: Vec<RawBuffer>) {
        self.spare_buffers.keep(buffers);
    }
}

/// What a kernel reads as an input: a [`Tensor`], or a [`TensorView`] of storage another
/// owner keeps (such as a SciPy matrix's arrays), which the kernel reads in place.
pub trait KernelInput {
    /// The input's storage, borrowed.
    fn input_view(&self) -> TensorView<'_>;
}

impl KernelInput for Tensor {
    fn input_view(&self) -> TensorView<'_> {
        self.view()
    }
}

impl KernelInput for TensorView<'_> {
    fn input_view(&self) -> TensorView<'_> {
        self.clone()
    }
}

impl<T: KernelInput + ?Sized> KernelInput for &T {
    fn input_view(&self) -> TensorView<'_> {
        (**self).input_view()
    }
}
