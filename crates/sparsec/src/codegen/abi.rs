//! The kernel ABI every backend implements, so that [`crate::kernel`] calls any of them the
//! same way: `int sparsec_kernel(void **arrays, const int64_t *params, sparsec_buffer *out)`.
//!
//! The function's [`crate::ir::Signature`] gives the slots of `arrays`/`params`; `out` holds
//! one [`crate::codegen::runtime::RawBuffer`] per thread; a nonzero status reports a failed
//! assumption ([`assumption_status`]) or an allocation failure (`-1`).

use std::ffi::c_void;

use crate::codegen::runtime::RawBuffer;
use crate::ir::Function;

/// The entry point every target's code has: `int sparsec_kernel(void **arrays, const
/// int64_t *params, sparsec_buffer *out)`.
pub type EntryFn = unsafe extern "C" fn(*mut *mut c_void, *const i64, *mut RawBuffer) -> i32;

/// A kernel that a backend cannot generate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {backend} backend cannot generate this kernel: {reason}")]
pub struct BackendError {
    /// Which backend refused (`C`, `JIT`).
    pub backend: &'static str,
    /// Why.
    pub reason: String,
}

/// Status a kernel returns when assumption `n` of [`Function::assumptions`] fails.
pub fn assumption_status(n: usize) -> i32 {
    2 + n as i32
}

/// What a nonzero `status` of a call of `function`'s code means: the message of the
/// assumption that failed, or else that the kernel ran out of memory for `what`.
pub fn failure(function: &Function, status: i32, what: &str) -> String {
    let assumptions = &function.assumptions;
    (0..assumptions.len())
        .find(|&n| assumption_status(n) == status)
        .map(|n| assumptions[n].1.clone())
        .unwrap_or_else(|| format!("the kernel ran out of memory {what}"))
}
