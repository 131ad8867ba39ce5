//! Inputs kept on the OpenCL device between calls (the `opencl` feature): a kernel called
//! again on the same tensors copies only its output; a tensor whose values change is
//! copied again, and the result follows the new values. Alone in its test binary, since
//! it counts the process's copies.
#![cfg(feature = "opencl")]

mod common;
use common::*;

use std::sync::Arc;

use sparsec::codegen::opencl::{bytes_copied_to_device, OpenClTarget};
use sparsec::jit::Toolchain;
use sparsec::kernel::Kernel;
use sparsec::lower;
use sparsec::schedule::{Concrete, Schedule};
use sparsec::target::Targets;
use sparsec::tensor::{ValueType, Values};

#[test]
fn repeated_calls_copy_only_what_changed() {
    let mut r = rng(21);
    let (rows, cols) = (200, 150);
    let inputs = vec![
        ("A", random_coo(&mut r, &[rows, cols], 0.05)),
        ("x", random_coo(&mut r, &[cols], 1.0)),
    ];
    let (stmt, mut tensors) = statement("y(i) = A(i,j) * x(j)", &[("A", "csr")], &inputs, &[]);
    let schedule = Schedule::parse(
        "split(i,i0,i1,8),parallelize(i0,GPUBlock,NoRaces),parallelize(i1,GPUWarp,NoRaces),\
         parallelize(j,GPUThread,ParallelReduction)",
    )
    .unwrap();
    let concrete = schedule.apply(&Concrete::new(&stmt).unwrap()).unwrap();
    let kernel = Kernel::from_lowered_on(
        stmt.clone(),
        lower::lower(&concrete).unwrap(),
        ValueType::F64,
        &Toolchain::default(),
        Targets::one(Arc::new(OpenClTarget)),
    )
    .unwrap();
    let output_bytes = (rows * 8) as u64;

    let before = bytes_copied_to_device();
    compare_with_reference(&kernel, &stmt, &tensors, "first call");
    let first = bytes_copied_to_device() - before;
    let inputs_bytes: u64 = {
        let a = tensors[0].view();
        let pos = a.array(2, sparsec::ir::ArrayKind::Pos).unwrap();
        let idx = a.array(2, sparsec::ir::ArrayKind::Idx).unwrap();
        (pos.size_in_bytes() + idx.size_in_bytes() + a.values().size_in_bytes()) as u64
            + (cols * 8) as u64
    };
    assert_eq!(
        first,
        inputs_bytes + output_bytes,
        "the first call copies everything"
    );

    let before = bytes_copied_to_device();
    compare_with_reference(&kernel, &stmt, &tensors, "second call");
    assert_eq!(
        bytes_copied_to_device() - before,
        output_bytes,
        "the second call copies only the output"
    );

    // New values of x: copied again, and the result follows them.
    match tensors[1].values_mut() {
        Values::F64(v) => v.iter_mut().for_each(|x| *x = *x * 2.0 + 1.0),
        Values::F32(_) => unreachable!("f64 inputs"),
    }
    let before = bytes_copied_to_device();
    compare_with_reference(&kernel, &stmt, &tensors, "after x changed");
    assert_eq!(
        bytes_copied_to_device() - before,
        output_bytes + (cols * 8) as u64,
        "only x and the output are copied"
    );
}
