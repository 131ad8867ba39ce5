//! The functions JIT-compiled kernels call: the C runtime's own (`runtime.c`, compiled into
//! this library, so both backends append, sort and free with the very same code) and the
//! allocator. They are registered with the JIT by [`symbols`]; the level formats' helpers
//! are registered beside them by name.

use crate::codegen::runtime::sys;
use crate::ir::MathFn;

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

/// The C library's math functions that Cranelift has no instruction for, called by
/// kernels through these (sqrt, fabs, floor and ceil are instructions).
extern "C" fn exp(x: f64) -> f64 {
    x.exp()
}
extern "C" fn log(x: f64) -> f64 {
    x.ln()
}
extern "C" fn sin(x: f64) -> f64 {
    x.sin()
}
extern "C" fn cos(x: f64) -> f64 {
    x.cos()
}
extern "C" fn tan(x: f64) -> f64 {
    x.tan()
}
extern "C" fn pow(x: f64, y: f64) -> f64 {
    x.powf(y)
}
extern "C" fn fmax(x: f64, y: f64) -> f64 {
    x.max(y)
}
extern "C" fn fmin(x: f64, y: f64) -> f64 {
    x.min(y)
}
// Conversions as the C backend computes them (`MathFn::c_expr`).
extern "C" fn to_bool(x: f64) -> f64 {
    MathFn::ToBool.eval(&[x])
}
extern "C" fn to_i32(x: f64) -> f64 {
    MathFn::ToI32.eval(&[x])
}
extern "C" fn to_i64(x: f64) -> f64 {
    MathFn::ToI64.eval(&[x])
}
extern "C" fn to_f32(x: f64) -> f64 {
    MathFn::ToF32.eval(&[x])
}
extern "C" fn to_f64(x: f64) -> f64 {
    x
}

/// The function a kernel calls for `f`, or None where `f` is an instruction.
pub(super) fn math_symbol(f: MathFn) -> Option<Symbol> {
    use Ty::F64;
    let (name, address, params): (&'static str, *const u8, &'static [Ty]) = match f {
        MathFn::Sqrt
        | MathFn::Abs
        | MathFn::Floor
        | MathFn::Ceil
        | MathFn::Lt
        | MathFn::Le
        | MathFn::Gt
        | MathFn::Ge
        | MathFn::Eq
        | MathFn::Ne
        | MathFn::Where
        | MathFn::Pattern => return None,
        MathFn::Exp => ("sparsec_jit_exp", exp as *const u8, &[F64]),
        MathFn::Log => ("sparsec_jit_log", log as *const u8, &[F64]),
        MathFn::Sin => ("sparsec_jit_sin", sin as *const u8, &[F64]),
        MathFn::Cos => ("sparsec_jit_cos", cos as *const u8, &[F64]),
        MathFn::Tan => ("sparsec_jit_tan", tan as *const u8, &[F64]),
        MathFn::Pow => ("sparsec_jit_pow", pow as *const u8, &[F64, F64]),
        // C's NaN rule (the other argument), which Cranelift's instructions do not follow.
        MathFn::Max => ("sparsec_jit_fmax", fmax as *const u8, &[F64, F64]),
        MathFn::Min => ("sparsec_jit_fmin", fmin as *const u8, &[F64, F64]),
        MathFn::ToBool => ("sparsec_jit_to_bool", to_bool as *const u8, &[F64]),
        MathFn::ToI32 => ("sparsec_jit_to_i32", to_i32 as *const u8, &[F64]),
        MathFn::ToI64 => ("sparsec_jit_to_i64", to_i64 as *const u8, &[F64]),
        MathFn::ToF32 => ("sparsec_jit_to_f32", to_f32 as *const u8, &[F64]),
        MathFn::ToF64 => ("sparsec_jit_to_f64", to_f64 as *const u8, &[F64]),
    };
    Some(Symbol {
        name,
        address,
        params,
        result: Some(F64),
    })
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
