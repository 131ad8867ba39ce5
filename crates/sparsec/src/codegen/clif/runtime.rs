//! The functions JIT-compiled kernels call: the C runtime's own (`runtime.c`, compiled into
//! this library, so both backends append, sort and free with the very same code) and the
//! allocator. They are registered with the JIT by [`symbols`]; the level formats' helpers
//! are registered beside them by name.

use crate::codegen::runtime::sys;

/// Zeroed memory for `count` elements of `size` bytes (null when it runs out).
extern "C" fn calloc(count: i64, size: i64) -> *mut u8 {
    // SAFETY: calloc accepts any sizes and reports failure with null.
    unsafe { libc::calloc(count as usize, size as usize).cast() }
}

/// Release memory from [`calloc`].
///
/// # Safety
/// `ptr` came from `calloc` and is freed once.
unsafe extern "C" fn free(ptr: *mut u8) {
    libc::free(ptr.cast())
}

/// A runtime function as the JIT sees it: its symbol, address, parameter and result types.
pub(super) struct Symbol {
    pub name: &'static str,
    pub address: *const u8,
    pub params: &'static [Ty],
    pub result: Option<Ty>,
}

/// Machine types of runtime function signatures.
#[derive(Clone, Copy)]
pub(super) enum Ty {
    I32,
    I64,
    F64,
    Ptr,
}

/// Runtime functions by the role the translator calls them in.
pub(super) const EMIT: usize = 0;
pub(super) const ORDER_TOUCHED: usize = 1;
pub(super) const CALLOC: usize = 2;
pub(super) const FREE: usize = 3;

/// Every runtime function, indexed by the constants above.
pub(super) fn symbols() -> [Symbol; 4] {
    use Ty::*;
    [
        Symbol {
            name: "sparsec_append",
            address: sys::sparsec_append as *const u8,
            params: &[Ptr, I64, Ptr, F64],
            result: Some(I32),
        },
        Symbol {
            name: "sparsec_order_touched",
            address: sys::sparsec_order_touched as *const u8,
            params: &[Ptr, I64, Ptr, Ptr, I64],
            result: None,
        },
        Symbol {
            name: "sparsec_jit_calloc",
            address: calloc as *const u8,
            params: &[I64, I64],
            result: Some(Ptr),
        },
        Symbol {
            name: "sparsec_jit_free",
            address: free as *const u8,
            params: &[Ptr],
            result: None,
        },
    ]
}
