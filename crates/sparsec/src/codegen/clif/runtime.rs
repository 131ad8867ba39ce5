//! Runtime helpers that JIT-compiled kernels call: the operations the C backend prints as
//! prelude functions. They are registered with the JIT by `symbols`, under their `sparsec_jit_` names.
//! Entry buffers are grown with the C allocator, so the C backend's `sparsec_buffer_free`
//! and [`buffer_free`] free either backend's buffers alike.

use crate::codegen::abi::Buffer;

/// Append one entry (`order` coordinates at `coords`, then `value`) to `buffer`, growing it
/// like the C prelude's `sparsec_grow`. Returns 0 when memory runs out (nothing appended).
///
/// # Safety
/// `buffer` is a valid entry buffer whose blocks come from the C allocator, and `coords`
/// points to `order` readable coordinates.
pub unsafe extern "C" fn emit(
    buffer: *mut Buffer,
    order: i64,
    coords: *const i64,
    value: f64,
) -> i32 {
    let b = &mut *buffer;
    let width = order.max(1) as usize;
    if b.len == b.cap {
        let cap = if b.cap < 1024 { 1024 } else { 2 * b.cap };
        let bytes = cap as usize * width * std::mem::size_of::<i64>();
        let grown = libc::realloc(b.coords.cast(), bytes).cast::<i64>();
        if grown.is_null() {
            return 0;
        }
        b.coords = grown;
        let grown = libc::realloc(b.vals.cast(), cap as usize * std::mem::size_of::<f64>());
        if grown.is_null() {
            return 0;
        }
        b.vals = grown.cast();
        b.cap = cap;
    }
    let at = b.len as usize;
    let order = order as usize;
    std::ptr::copy_nonoverlapping(coords, b.coords.add(at * order), order);
    *b.vals.add(at) = value;
    b.len += 1;
    1
}

/// Put a workspace's touched list `list[0, len)` in increasing order (the C prelude's
/// `sparsec_order_touched` chooses between sorting and scanning the flags; sorting alone
/// gives the same order).
///
/// # Safety
/// `list` points to `len` writable coordinates.
pub unsafe extern "C" fn order_touched(list: *mut i64, len: i64) {
    if len > 1 {
        std::slice::from_raw_parts_mut(list, len as usize).sort_unstable();
    }
}

/// Position of `coord` in the hashed level block of `parent`: linear probing from
/// `coord mod width` to the coordinate or an empty (-1) bucket, as the C prelude's
/// `sparsec_hash_locate`.
///
/// # Safety
/// `idx` holds `(parent + 1) * width` readable buckets.
pub unsafe extern "C" fn hash_locate(idx: *const i64, width: i64, parent: i64, coord: i64) -> i64 {
    let base = parent * width;
    if width <= 0 {
        // No bucket to probe (C would divide by zero); the caller finds no match here.
        return base;
    }
    let start = base + coord.rem_euclid(width);
    let mut p = start;
    while *idx.add(p as usize) != coord && *idx.add(p as usize) != -1 {
        p = base + (p - base + 1) % width;
        if p == start {
            break;
        }
    }
    p
}

/// Free an entry buffer's blocks (the C prelude's `sparsec_buffer_free`).
///
/// # Safety
/// `buffer` is valid and its blocks came from the C allocator (or are null).
pub unsafe extern "C" fn buffer_free(buffer: *mut Buffer) {
    let b = &mut *buffer;
    libc::free(b.coords.cast());
    libc::free(b.vals.cast());
    b.coords = std::ptr::null_mut();
    b.vals = std::ptr::null_mut();
}

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
pub(super) const HASH_LOCATE: usize = 2;
pub(super) const CALLOC: usize = 3;
pub(super) const FREE: usize = 4;

/// Every runtime function, indexed by the constants above.
pub(super) fn symbols() -> [Symbol; 5] {
    use Ty::*;
    [
        Symbol {
            name: "sparsec_jit_emit",
            address: emit as *const u8,
            params: &[Ptr, I64, Ptr, F64],
            result: Some(I32),
        },
        Symbol {
            name: "sparsec_jit_order_touched",
            address: order_touched as *const u8,
            params: &[Ptr, I64],
            result: None,
        },
        Symbol {
            name: "sparsec_jit_hash_locate",
            address: hash_locate as *const u8,
            params: &[Ptr, I64, I64, I64],
            result: Some(I64),
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
