//! Binding tensors to a kernel's arguments: the inputs are checked against the statement,
//! converted to the layouts and value type the kernel reads, and their arrays and
//! parameters laid out in the slots of the function's signature.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::ffi::c_void;

use super::Kernel;
use crate::ir::{ArrayRef, IndexWidth, ParamRef, ScalarArg};
use crate::tensor::{Coo, Tensor, ValueType, Values};
use crate::Error;

/// The `arrays` and `params` arguments of one call.
pub(super) struct Arguments {
    pub(super) arrays: Vec<*mut c_void>,
    pub(super) params: Vec<i64>,
    /// The arrays among them that hold `int32_t` indices: the code called must read them so.
    pub(super) narrow: BTreeSet<ArrayRef>,
}

impl Kernel {
    /// Check that `inputs` (and `initial`) have the shapes the statement declares.
    pub(super) fn check_inputs(
        &self,
        inputs: &[&Tensor],
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

    /// The kernel's operands: the output to write (a dense one starts from `initial` for
    /// `+=` statements, else zero; a sparse one is assembled afterwards), then each input
    /// in the layout and value type the kernel reads (borrowed when it already is).
    pub(super) fn operands<'t>(
        &self,
        inputs: &[&'t Tensor],
        initial: Option<&Tensor>,
    ) -> Result<Vec<Cow<'t, Tensor>>, Error> {
        let out_decl = &self.statement.tensors[0];
        let mut output = match (self.assembles_output(), self.statement.accumulate, initial) {
            (false, true, Some(init)) => init.convert(&out_decl.format)?,
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
        let mut operands = Vec::with_capacity(self.lowered.operands.len());
        operands.push(Cow::Owned(output));
        for op in &self.lowered.operands[1..] {
            let source = inputs[op.tensor - 1];
            let mut t = if source.format() == &op.format {
                Cow::Borrowed(source)
            } else {
                Cow::Owned(source.convert(&op.format)?)
            };
            if t.value_type() != self.value_type {
                cast_values(t.to_mut(), self.value_type);
            }
            operands.push(t);
        }
        Ok(operands)
    }

    /// The arguments of a call on `operands`, in the slots of the function's signature.
    /// The pointers are valid while `operands` lives.
    pub(super) fn arguments(&self, operands: &[Cow<'_, Tensor>]) -> Arguments {
        let signature = &self.generated.signature;
        let mut narrow = BTreeSet::new();
        let arrays = signature
            .arrays
            .iter()
            .map(|a| match *a {
                ArrayRef::Values(operand) => match operands[operand.0].values() {
                    Values::F64(v) => v.as_ptr() as *mut c_void,
                    Values::F32(v) => v.as_ptr() as *mut c_void,
                },
                ArrayRef::Level {
                    operand,
                    level,
                    kind,
                } => {
                    let array = operands[operand.0].levels()[level - 1]
                        .array(kind)
                        .expect("lowering reads only arrays its level stores");
                    if array.width() == IndexWidth::I32 {
                        narrow.insert(*a);
                    }
                    array.as_ptr() as *mut c_void
                }
                ArrayRef::Scratch(_) => unreachable!("scratch arrays are not arguments"),
            })
            .collect();
        let params = signature
            .scalars
            .iter()
            .map(|s| match *s {
                ScalarArg::Param(ParamRef::Level {
                    operand,
                    level,
                    kind,
                }) => operands[operand.0].levels()[level - 1].param(kind),
                ScalarArg::Param(ParamRef::Extent(n)) => self.statement.vars[n].size as i64,
                ScalarArg::Threads => self.threads as i64,
            })
            .collect();
        Arguments {
            arrays,
            params,
            narrow,
        }
    }
}

/// Convert `t`'s values to `ty` in place.
pub(crate) fn cast_values(t: &mut Tensor, ty: ValueType) {
    if t.value_type() == ty {
        return;
    }
    let n = t.values().len();
    let mut values = Values::zeros(ty, n);
    for p in 0..n {
        values.set(p, t.values().get(p));
    }
    *t.values_mut() = values;
}
