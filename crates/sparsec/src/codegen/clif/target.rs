//! The Cranelift JIT as a [`Target`]: native code in process, at once, with no compiler
//! and no cache; every loop runs on the calling thread.

use std::ffi::c_void;
use std::sync::Arc;

use super::{compile, JitKernel, BACKEND};
use crate::codegen::abi::EntryFn;
use crate::codegen::runtime::RawBuffer;
use crate::ir::{Function, ParallelUnit};
use crate::target::{Artifact, Capabilities, Target};
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
    sum_versions: false,
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

    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error> {
        Ok(Arc::new(compile(function)?))
    }
}

impl Artifact for JitKernel {
    fn target(&self) -> &'static str {
        BACKEND
    }

    fn was_compiled(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    unsafe fn call(
        &self,
        arrays: *mut *mut c_void,
        params: *const i64,
        out: *mut RawBuffer,
    ) -> i32 {
        // SAFETY: `compile` generates a function of this signature, valid while `self` is.
        let entry = unsafe { std::mem::transmute::<*const u8, EntryFn>(self.entry) };
        // SAFETY: the caller keeps the ABI's contract.
        unsafe { entry(arrays, params, out) }
    }
}
