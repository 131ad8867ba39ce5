//! The Cranelift JIT as a [`Target`]: native code in process, at once, with no compiler
//! and no cache; every loop runs on the calling thread.

use std::sync::Arc;

use super::{compile, BACKEND};
use crate::codegen::abi::EntryFn;
use crate::ir::{Function, ParallelUnit};
use crate::target::{Artifact, Capabilities, NativeCode, Pass, Target, ZERO_ROWS};
use crate::Error;

/// What the JIT's code does: loops on threads and in SIMD lanes run as plain loops, atomic
/// updates as plain updates, and every version of the gathered sums as the same loops.
pub const CAPABILITIES: Capabilities = Capabilities {
    units: &[ParallelUnit::CpuThread, ParallelUnit::CpuVector],
    threads: false,
    emitting: true,
    atomics: true,
    scratch: true,
    helpers: true,
    tunable: None,
    checks_assumptions: true,
};

/// Cranelift, in this process.
#[derive(Clone, Copy, Debug, Default)]
pub struct CraneliftTarget;

impl Target for CraneliftTarget {
    fn name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    /// The CPU pass that applies to serial code; the gathered sums' versions and the
    /// prefetch hints would compile to the same loops.
    fn passes(&self) -> &'static [Pass] {
        &[ZERO_ROWS]
    }

    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error> {
        let kernel = compile(function)?;
        // SAFETY: `compile` generates a function of the kernel ABI, valid while `kernel` is.
        let entry = unsafe { std::mem::transmute::<*const u8, EntryFn>(kernel.entry) };
        // SAFETY: `kernel` owns the memory `entry` points into.
        Ok(Arc::new(unsafe {
            NativeCode::new(BACKEND, CAPABILITIES, entry, true, kernel)
        }))
    }
}
