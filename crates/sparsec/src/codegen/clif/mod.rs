//! The in-process JIT backend: lowered IR to native code through Cranelift, without a C
//! compiler. It produces a function with the C backend's ABI (see [`crate::codegen::abi`]):
//! same arguments in the same slots, same entry buffers, same statuses, so the runtime
//! calls either backend's function pointer the same way.
//!
//! Everything runs serially: thread and vector loops are plain loops (their reductions
//! need nothing, their per-thread scratch arrays are allocated once), atomic updates are
//! plain updates, and every entry goes to the first buffer of `out`. Operations with no
//! instruction (appending an entry, ordering a touched list, hashed locate) call the small
//! Rust functions of [`runtime`].

mod expr;
pub mod runtime;
mod translate;

use cranelift_codegen::ir::{types, AbiParam, Signature, UserFuncName};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use crate::codegen::abi::{self, BackendError};
use crate::lower::Lowered;
use crate::tensor::ValueType;

/// Name of the backend in errors.
const BACKEND: &str = "JIT";

/// A kernel compiled to native code in this process.
pub struct JitKernel {
    /// Owns the executable memory `entry` points into; `None` only while dropping.
    module: Option<JITModule>,
    entry: *const u8,
}

// SAFETY: after `compile` the module is never used again except to free its memory when
// the kernel is dropped (which takes `&mut self`); the code itself is immutable and may
// run on any thread.
unsafe impl Send for JitKernel {}
unsafe impl Sync for JitKernel {}

impl JitKernel {
    /// The kernel function: `int (void **arrays, const int64_t *params,
    /// sparsec_buffer *out)`, valid while `self` lives.
    pub fn entry(&self) -> *const u8 {
        self.entry
    }
}

impl Drop for JitKernel {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: the owner of this kernel calls `entry` only while it holds `self`,
            // so no call is running and none follows.
            unsafe { module.free_memory() };
        }
    }
}

fn cranelift_error(what: &str, e: impl std::fmt::Debug) -> BackendError {
    BackendError {
        backend: BACKEND,
        reason: format!("Cranelift failed to {what}: {e:?}"),
    }
}

/// Compile a lowered kernel. `value_types[n]` is the value type of operand `n`.
pub fn compile(lowered: &Lowered, value_types: &[ValueType]) -> Result<JitKernel, BackendError> {
    let layout = abi::layout(lowered, BACKEND)?;
    let mut jit = JITBuilder::with_flags(&[("opt_level", "speed")], default_libcall_names())
        .map_err(|e| cranelift_error("target the host", e))?;
    let symbols = runtime::symbols();
    for s in &symbols {
        jit.symbol(s.name, s.address);
    }
    let mut module = JITModule::new(jit);
    let ptr = module.target_config().pointer_type();
    let mut imported = Vec::with_capacity(symbols.len());
    for s in &symbols {
        let mut sig = module.make_signature();
        let machine = |t: runtime::Ty| match t {
            runtime::Ty::I32 => types::I32,
            runtime::Ty::I64 => types::I64,
            runtime::Ty::F64 => types::F64,
            runtime::Ty::Ptr => ptr,
        };
        sig.params
            .extend(s.params.iter().map(|&t| AbiParam::new(machine(t))));
        sig.returns
            .extend(s.result.map(|t| AbiParam::new(machine(t))));
        let id = module
            .declare_function(s.name, Linkage::Import, &sig)
            .map_err(|e| cranelift_error("declare a runtime function", e))?;
        imported.push(id);
    }

    let mut sig: Signature = module.make_signature();
    sig.params.extend([AbiParam::new(ptr); 3]);
    sig.returns.push(AbiParam::new(types::I32));
    let id = module
        .declare_function(super::c::ENTRY, Linkage::Local, &sig)
        .map_err(|e| cranelift_error("declare the kernel", e))?;
    let mut ctx = Context::new();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut builder = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let funcs: Vec<_> = imported
            .iter()
            .map(|&f| module.declare_func_in_func(f, builder.func))
            .collect();
        translate::kernel(&mut builder, lowered, value_types, &layout, &funcs, ptr)?;
        builder.seal_all_blocks();
        builder.finalize(module.target_config());
    }
    module
        .define_function(id, &mut ctx)
        .map_err(|e| cranelift_error("compile the kernel", e))?;
    module
        .finalize_definitions()
        .map_err(|e| cranelift_error("link the kernel", e))?;
    let entry = module.get_finalized_function(id);
    Ok(JitKernel {
        module: Some(module),
        entry,
    })
}

#[cfg(test)]
mod tests {
    use super::runtime;
    use crate::codegen::abi::Buffer;

    #[test]
    fn hash_locate_probes_within_the_parent_block() {
        // Parent 1 owns buckets 4..8; coordinate 6 hashes to bucket 6 (taken by 9), so it
        // is found one further; 3 is absent and stops at the empty bucket 7.
        let idx = [-1, -1, -1, -1, 4, -1, 9, 6];
        let at = |c| unsafe { runtime::hash_locate(idx.as_ptr(), 4, 1, c) };
        assert_eq!(at(4), 4);
        assert_eq!(at(6), 7);
        assert_eq!(at(-3), 5);
    }

    #[test]
    fn order_touched_sorts_the_list_only() {
        let mut list = [9, 3, 7, 1, 5, 42];
        unsafe { runtime::order_touched(list.as_mut_ptr(), 5) };
        assert_eq!(list, [1, 3, 5, 7, 9, 42]);
    }

    #[test]
    fn emit_grows_and_buffer_free_releases() {
        let mut b = Buffer::EMPTY;
        for k in 0..3000i64 {
            let coords = [k, -k];
            assert_eq!(
                unsafe { runtime::emit(&mut b, 2, coords.as_ptr(), k as f64) },
                1
            );
        }
        assert_eq!(b.len, 3000);
        assert!(b.cap >= 3000);
        let read = unsafe { std::slice::from_raw_parts(b.coords, 6000) };
        assert_eq!(&read[5996..], &[2998, -2998, 2999, -2999]);
        unsafe { runtime::buffer_free(&mut b) };
        assert!(b.coords.is_null() && b.vals.is_null());
    }
}
