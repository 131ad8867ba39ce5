//! Binding tensors to a kernel's arguments: the inputs are checked against the statement,
//! converted to the layouts and value type the kernel reads, and their arrays and
//! parameters laid out in the slots of the function's signature.

use std::collections::BTreeSet;
use std::ffi::c_void;

use super::team::OpenMpTeam;
use super::{Kernel, KernelInput};
use crate::ir::{
    ArrayRef, Function, IndexWidth, OperandId, OutputMode, ParamRef, ScalarArg, Signature,
};
use crate::lower;
use crate::target::{ContentKey, Contents};
use crate::tensor::{CallingThread, Coo, Team, Tensor, TensorView, ValueSlice, ValueType, Values};
use crate::Error;

/// The `arrays` and `params` arguments of one call.
pub(crate) struct Arguments {
    pub(crate) arrays: Vec<*mut c_void>,
    /// The size of each of `arrays` in bytes.
    pub(crate) bytes: Vec<usize>,
    /// What names each array's contents across calls (see [`crate::target::Call`]).
    pub(crate) contents: Vec<Contents>,
    pub(crate) params: Vec<i64>,
    /// The arrays among them that hold `int32_t` indices: the code called must read them so.
    pub(crate) narrow: BTreeSet<ArrayRef>,
}

impl Kernel {
    /// Check that `inputs` (and `initial`) have the shapes the statement declares.
    pub(super) fn check_inputs(
        &self,
        inputs: &[TensorView<'_>],
        initial: Option<&Tensor>,
    ) -> Result<(), Error> {
        let stmt = &self.statement;
        if inputs.len() + 1 != stmt.tensors.len() {
            return Err(Error::Input(format!(
                "the statement reads {} tensors but {} were given",
                stmt.tensors.len() - 1,
                inputs.len()
            )));
        }
        // The kernel's iteration depends on each input's fill value, declared when it was
        // compiled; over a semiring a missing entry is absent, whether its fill says 0 or
        // the reduction's identity.
        let identity = stmt.semiring.add.identity();
        let given = stmt.tensors[1..]
            .iter()
            .zip(inputs.iter().map(|t| (t.fill(), t.format().is_all_dense())))
            .chain(initial.map(|t| (&stmt.tensors[0], (t.fill(), t.format().is_all_dense()))));
        for (decl, (fill, dense)) in given {
            let same = |x: f64| x.to_bits() == fill.to_bits() || (x.is_nan() && fill.is_nan());
            let absent = !stmt.semiring.is_arithmetic() && (fill == 0.0 || same(identity));
            if dense || same(decl.fill) || (decl.fill == 0.0 && absent) {
                continue;
            }
            return Err(Error::Input(if stmt.semiring.is_arithmetic() {
                format!(
                    "`{}` has the fill value {fill} (the value of its missing entries), but \
                     the kernel was compiled for {}: declare that fill value when compiling \
                     (`TensorDecl::with_fill`), or store `{}` dense",
                    decl.name, decl.fill, decl.name
                )
            } else {
                format!(
                    "`{}` has the fill value {fill} (the value of its missing entries), but \
                     over the semiring {} a missing entry is absent, as {identity} is to its \
                     reduction: give it fill value 0 or {identity}, or store it dense",
                    decl.name, stmt.semiring
                )
            }));
        }
        for (decl, t) in stmt.tensors[1..].iter().zip(inputs) {
            if decl.dims != t.dims() {
                return Err(Error::Input(format!(
                    "tensor `{}` was declared with dimensions {:?} but has {:?}",
                    decl.name,
                    decl.dims,
                    t.dims()
                )));
            }
        }
        let out_decl = &stmt.tensors[0];
        match initial {
            Some(init) if init.dims() != out_decl.dims.as_slice() => Err(Error::Input(format!(
                "initial value of `{}` has dimensions {:?}, expected {:?}",
                out_decl.name,
                init.dims(),
                out_decl.dims
            ))),
            _ => Ok(()),
        }
    }

    /// The output to write: a dense one starts from `initial` for `+=` statements, else
    /// zero; a sparse one is assembled afterwards.
    pub(super) fn output(&self, initial: Option<&Tensor>) -> Result<Tensor, Error> {
        let out_decl = &self.statement.tensors[0];
        let zeroed_by_kernel = matches!(
            self.lowered.function.output,
            OutputMode::Dense {
                zeroed_by_kernel: true,
                ..
            }
        );
        let mut output = match (self.assembles_output(), self.statement.accumulate, initial) {
            (false, true, Some(init)) => init.convert(&out_decl.format)?,
            // The kernel zeroes each row on the thread that adds into it (`ir::zero_rows`).
            (false, false, _) if zeroed_by_kernel => {
                Tensor::dense_unwritten(&out_decl.dims, &out_decl.format, self.value_type).map_err(
                    |e| Error::Input(format!("cannot store the output `{}`: {e}", out_decl.name)),
                )?
            }
            // Fails only when the output's storage cannot be allocated: name it.
            (false, _, _) => Tensor::from_coo(
                &Coo::empty(out_decl.dims.clone()),
                &out_decl.format,
                self.value_type,
            )
            .map_err(|e| {
                Error::Input(format!("cannot store the output `{}`: {e}", out_decl.name))
            })?,
            (true, _, _) => Tensor::zeros(&[], self.value_type),
        };
        cast_values(&mut output, self.value_type);
        // Over a semiring, a dense output holds ⊕'s identity where nothing is reduced (the
        // zeros it was made with already are, for `+`, `or` and `any`).
        let identity = self.statement.semiring.add.identity();
        if identity != 0.0 && !self.statement.accumulate && !self.assembles_output() {
            output.values_mut().fill(identity);
        }
        Ok(output)
    }

    /// Each input in the layout and value type the kernel reads: read in place when it
    /// already is, else converted (a copy, shared with the kernel's threads where it can
    /// be).
    pub(super) fn inputs<'t>(&self, inputs: &[TensorView<'t>]) -> Result<Vec<Input<'t>>, Error> {
        let team: &dyn Team = match self.threads_used() {
            1 => &CallingThread,
            threads => &OpenMpTeam {
                library: &self.team,
                toolchain: &self.toolchain,
                threads,
            },
        };
        self.lowered.operands[1..]
            .iter()
            .map(|op| {
                let source = &inputs[op.tensor - 1];
                if self.reads_as_is(op, source) {
                    return Ok(Input::InPlace(source.clone()));
                }
                if source.format() == &op.format {
                    return Ok(Input::Recast {
                        source: source.clone(),
                        values: source.values().to_values_as(self.value_type),
                    });
                }
                let mut t = source.as_tensor().convert_on(&op.format, team)?;
                cast_values(&mut t, self.value_type);
                Ok(Input::Converted(t))
            })
            .collect()
    }

    /// For each input (in statement order), whether a call reads it where it is rather
    /// than converting a copy to the layout or value type the kernel reads.
    pub fn inputs_read_in_place<I: KernelInput>(&self, inputs: &[I]) -> Vec<bool> {
        inputs
            .iter()
            .enumerate()
            .map(|(k, input)| {
                let view = input.input_view();
                self.lowered.operands[1..]
                    .iter()
                    .filter(|op| op.tensor == k + 1)
                    .all(|op| self.reads_as_is(op, &view))
            })
            .collect()
    }

    /// True when the kernel reads `source` as `operand` without converting it.
    fn reads_as_is(&self, operand: &lower::Operand, source: &TensorView<'_>) -> bool {
        source.format() == &operand.format && source.value_type() == self.value_type
    }

    /// The arguments of a call writing `output` and reading `inputs` (operand `n` is
    /// `inputs[n - 1]`), in the slots of the function's signature. The pointers are valid
    /// while `output` and the storage the inputs view live, and `output` is not touched.
    pub(super) fn arguments(&self, output: &mut Tensor, inputs: &[Input<'_>]) -> Arguments {
        let views: Vec<TensorView<'_>> = inputs.iter().map(Input::view).collect();
        arguments(
            self.compiled.signature(),
            &self.lowered.function,
            output,
            &views,
            self,
        )
    }
}

impl Binder for Kernel {
    fn extent(&self, n: usize) -> i64 {
        self.statement.vars[n].size as i64
    }

    fn threads(&self) -> usize {
        self.threads
    }
}

/// What a front end supplies to lay out a call's arguments, beside its operands' storage:
/// the values of the scalars only it knows. Index notation's [`Kernel`] binds its index
/// variables' sizes; the sparse polyhedral `SpfKernel` its symbols and what it derives
/// from the inputs (array lengths and ranges).
pub(crate) trait Binder {
    /// The value of `ParamRef::Extent(n)` for this call.
    fn extent(&self, n: usize) -> i64;
    /// The threads the call's parallel loops use.
    fn threads(&self) -> usize;
}

/// The arguments of a call of `function` (laid out as `signature`) writing `output` and
/// reading `inputs` (operand `n` is `inputs[n - 1]`), with the scalars `binder` knows:
/// every front end's one layout of arrays, level parameters, array lengths, samples of
/// index arrays, and the values set per call. The pointers are valid while `output` and
/// the storage the inputs view live, and `output` is not touched.
pub(crate) fn arguments(
    signature: &Signature,
    function: &Function,
    output: &mut Tensor,
    inputs: &[TensorView<'_>],
    binder: &dyn Binder,
) -> Arguments {
    let mut narrow = BTreeSet::new();
    let mut arrays = Vec::with_capacity(signature.arrays.len());
    let mut bytes = Vec::with_capacity(signature.arrays.len());
    let mut contents = Vec::with_capacity(signature.arrays.len());
    let params;
    {
        let views: Vec<TensorView<'_>> = std::iter::once(output.view())
            .chain(inputs.iter().cloned())
            .collect();
        let level_array = |operand: OperandId, level, kind| {
            views[operand.0]
                .array(level, kind)
                .expect("lowering reads only arrays its level stores")
        };
        for a in &signature.arrays {
            let key = match *a {
                ArrayRef::Values(operand) | ArrayRef::Level { operand, .. } if operand.0 == 0 => {
                    None
                }
                ArrayRef::Values(operand) => views[operand.0].generation().map(|g| ContentKey {
                    tensor: g.number(),
                    level: 0,
                    kind: None,
                }),
                ArrayRef::Level {
                    operand,
                    level,
                    kind,
                } => views[operand.0].generation().map(|g| ContentKey {
                    tensor: g.number(),
                    level,
                    kind: Some(kind),
                }),
                ArrayRef::Scratch(_) => None,
            };
            contents.push(key.map_or(Contents::Unnamed, Contents::Named));
            bytes.push(match *a {
                ArrayRef::Values(operand) => views[operand.0].values().size_in_bytes(),
                ArrayRef::Level {
                    operand,
                    level,
                    kind,
                } if operand.0 != 0 => level_array(operand, level, kind).size_in_bytes(),
                // Set before each phase, with the pointer.
                _ => 0,
            });
            arrays.push(match *a {
                // The output's values are written: their pointer is taken below, from
                // the only mutable borrow.
                ArrayRef::Values(operand) if operand.0 == 0 => std::ptr::null_mut(),
                ArrayRef::Values(operand) => views[operand.0].values().as_ptr() as *mut c_void,
                // A two-phase kernel's leaf level: set before each phase, its coordinates
                // at the width the main code writes.
                ArrayRef::Level { operand, .. } if operand.0 == 0 => {
                    if function.narrow_arrays.contains(a) {
                        narrow.insert(*a);
                    }
                    std::ptr::null_mut()
                }
                ArrayRef::Level {
                    operand,
                    level,
                    kind,
                } => {
                    let array = level_array(operand, level, kind);
                    if array.width() == IndexWidth::I32 {
                        narrow.insert(*a);
                    }
                    array.as_ptr() as *mut c_void
                }
                ArrayRef::Scratch(_) => unreachable!("scratch arrays are not arguments"),
            });
        }
        params = signature
            .scalars
            .iter()
            .map(|s| match *s {
                ScalarArg::Param(ParamRef::Level {
                    operand,
                    level,
                    kind,
                }) => views[operand.0].param(level, kind),
                ScalarArg::Param(ParamRef::Extent(n)) => binder.extent(n),
                ScalarArg::Param(ParamRef::Length(array)) => match array {
                    ArrayRef::Level {
                        operand,
                        level,
                        kind,
                    } => level_array(operand, level, kind).len() as i64,
                    ArrayRef::Values(operand) => views[operand.0].values().len() as i64,
                    ArrayRef::Scratch(_) => {
                        unreachable!("scratch arrays have no length argument")
                    }
                },
                // Samples of a level's index array, which the kernel reads as flags.
                ScalarArg::Param(
                    sample @ (ParamRef::Scattered(array) | ParamRef::Uneven(array)),
                ) => {
                    let ArrayRef::Level {
                        operand,
                        level,
                        kind,
                    } = array
                    else {
                        unreachable!("only a level's index arrays are sampled")
                    };
                    let indices = level_array(operand, level, kind);
                    let at = |p| indices.get(p);
                    i64::from(match sample {
                        ParamRef::Scattered(_) => crate::ir::prefetch::scattered(indices.len(), at),
                        _ => crate::ir::gather::uneven(indices.len().saturating_sub(1), at),
                    })
                }
                // Set for each call by output placement.
                ScalarArg::Param(ParamRef::Phase | ParamRef::Capacity) => 0,
                // Set for each call where the kernel measures its target's tunable.
                ScalarArg::Param(ParamRef::SumVersion) => crate::ir::gather::BY_TESTS,
                ScalarArg::Param(ParamRef::PrefetchDistance) => {
                    crate::ir::prefetch::ELEMENT_DISTANCE
                }
                ScalarArg::Threads => binder.threads() as i64,
            })
            .collect();
    }
    let written = match output.values_mut() {
        Values::F64(v) => v.as_mut_ptr() as *mut c_void,
        Values::F32(v) => v.as_mut_ptr() as *mut c_void,
    };
    for (slot, a) in signature.arrays.iter().enumerate() {
        if matches!(a, ArrayRef::Values(operand) if operand.0 == 0) {
            arrays[slot] = written;
        }
    }
    Arguments {
        arrays,
        bytes,
        contents,
        params,
        narrow,
    }
}

impl Arguments {
    /// Point slot `slot` at `array`, which the kernel writes.
    pub(crate) fn point<T>(&mut self, slot: usize, array: &mut [T]) {
        self.arrays[slot] = array.as_mut_ptr().cast();
        self.bytes[slot] = std::mem::size_of_val(array);
        self.contents[slot] = Contents::Unnamed;
    }

    /// Point slot `slot` at the room reserved in `array` past its length, which the
    /// kernel only writes (its bytes are not initialised).
    pub(crate) fn point_room<T>(&mut self, slot: usize, array: &mut Vec<T>) {
        self.arrays[slot] = array.as_mut_ptr().cast();
        self.bytes[slot] = array.capacity() * std::mem::size_of::<T>();
        self.contents[slot] = Contents::Unwritten;
    }
}

/// One input as a kernel reads it.
pub(super) enum Input<'t> {
    /// The caller's storage, read in place.
    InPlace(TensorView<'t>),
    /// The caller's index arrays, read in place, and a copy of its values in the value
    /// type the kernel reads.
    Recast {
        source: TensorView<'t>,
        values: Values,
    },
    /// A copy in the layout or value type the kernel reads.
    Converted(Tensor),
}

impl Input<'_> {
    fn view(&self) -> TensorView<'_> {
        match self {
            Input::InPlace(v) => v.clone(),
            Input::Recast { source, values } => source.with_values(values.into()),
            Input::Converted(t) => t.view(),
        }
    }
}

/// Convert `t`'s values to `ty` in place.
pub(crate) fn cast_values(t: &mut Tensor, ty: ValueType) {
    if t.value_type() == ty {
        return;
    }
    let values = ValueSlice::from(t.values()).to_values_as(ty);
    *t.values_mut() = values;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::ir::ArrayKind;

    /// A recast input borrows the source's index arrays and reads the copied values.
    #[test]
    fn recast_inputs_read_the_source_index_arrays_with_copied_values() {
        let coo = Coo::new(vec![3, 4], vec![0, 1, 2, 3], vec![2.5, -1.0]).unwrap();
        let csr = Format::parse("csr", 2).unwrap();
        let source = Tensor::from_coo(&coo, &csr, ValueType::F64).unwrap();
        let input = Input::Recast {
            source: source.view(),
            values: source.view().values().to_values_as(ValueType::F32),
        };
        let view = input.view();
        for kind in [ArrayKind::Pos, ArrayKind::Idx] {
            let own = source.view().array(2, kind).unwrap();
            let read = view.array(2, kind).unwrap();
            assert_eq!(own.as_ptr(), read.as_ptr(), "{kind:?}");
        }
        assert_eq!(view.value_type(), ValueType::F32);
        assert_eq!(view.to_tensor().to_coo().values, vec![2.5, -1.0]);
        assert_eq!(view.format(), source.format());
    }
}
