//! Helpers for the passes' unit tests.

use crate::format::Format;
use crate::jit::Toolchain;
use crate::kernel::{lower_with_default_parallelism, Backend};
use crate::lower::Lowered;
use crate::notation::{self, TensorDecl};
use crate::schedule::Concrete;

/// A tensor of a test statement: name, format, dimensions.
pub type Decl<'a> = (&'a str, &'a str, &'a [usize]);

/// `expr` lowered with the default schedule, then the C target's passes, its tensors
/// `(name, format, dims)`.
pub fn lowered(expr: &str, tensors: &[Decl]) -> Lowered {
    let decls: Vec<TensorDecl> = tensors
        .iter()
        .map(|(name, format, dims)| {
            TensorDecl::new(*name)
                .with_format(Format::parse(format, dims.len()).unwrap())
                .with_dims(dims)
        })
        .collect();
    let statement = notation::bind(&notation::parse(expr).unwrap(), &decls, &[]).unwrap();
    let mut lowered = lower_with_default_parallelism(&Concrete::new(&statement).unwrap()).unwrap();
    Backend::C
        .targets(&Toolchain::default())
        .prepare(&mut lowered.function)
        .unwrap();
    lowered
}

/// An empty function of a dense output `y` and one input `A` (values of `f64`), with
/// `extents` parameters, for passes' tests that build their IR by hand.
pub fn function_of_y_and_a(extents: usize) -> crate::ir::Function {
    use crate::ir::{Function, OperandInfo, OutputMode, ValueType};
    let operands = ["y", "A"].map(|hint| OperandInfo {
        hint: hint.into(),
        values: ValueType::F64,
    });
    let output = OutputMode::Dense {
        accumulate: false,
        zeroed_by_kernel: false,
    };
    Function::new(operands.to_vec(), extents, output)
}
