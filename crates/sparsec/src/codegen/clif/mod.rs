//! The in-process JIT backend: lowered IR to native code through Cranelift, without a C
//! compiler. It produces a function with the C backend's ABI (see [`crate::codegen::abi`]):
//! same arguments in the same slots, same entry buffers, same statuses, so the runtime
//! calls either backend's function pointer the same way.
//!
//! Everything runs serially: thread and vector loops are plain loops (their reductions
//! need nothing, their per-thread scratch arrays are allocated once), atomic updates are
//! plain updates, and every entry goes to the first buffer of `out`. Operations with no
//! instruction (appending an entry, ordering a touched list) call the C runtime compiled
//! into this library, and a level format's helper calls its compiled C (see `codegen::runtime`).

mod expr;
mod runtime;
mod target;
mod translate;

pub use target::{CraneliftTarget, CAPABILITIES};

use cranelift_codegen::ir::{types, AbiParam, Signature, UserFuncName};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use std::collections::HashMap;

use crate::codegen::abi::BackendError;
use crate::ir::Function;

/// Name of the backend in errors.
pub const BACKEND: &str = "JIT";

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

/// Compile a kernel.
pub fn compile(function: &Function) -> Result<JitKernel, BackendError> {
    crate::target::check_capabilities(function, BACKEND, &CAPABILITIES)?;
    let signature_of_args = function.signature();
    let mut jit = JITBuilder::with_flags(&[("opt_level", "speed")], default_libcall_names())
        .map_err(|e| cranelift_error("target the host", e))?;
    let mut symbols: Vec<runtime::Symbol> = runtime::symbols().into();
    let helpers = function.helpers();
    symbols.extend(helpers.iter().map(|h| runtime::Symbol {
        name: h.name,
        address: h.native as *const u8,
        params: &[
            runtime::Ty::Ptr,
            runtime::Ty::I64,
            runtime::Ty::I64,
            runtime::Ty::I64,
        ],
        result: Some(runtime::Ty::I64),
    }));
    let math: Vec<runtime::Symbol> = function
        .math_functions()
        .into_iter()
        .filter_map(runtime::math_symbol)
        .collect();
    let named: Vec<&'static str> = helpers
        .iter()
        .map(|h| h.name)
        .chain(math.iter().map(|m| m.name))
        .collect();
    symbols.extend(math);
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
        let helper_funcs: HashMap<&'static str, _> = named
            .iter()
            .zip(&funcs[runtime::symbols().len()..])
            .map(|(&name, &f)| (name, f))
            .collect();
        translate::kernel(
            &mut builder,
            function,
            &signature_of_args,
            &funcs,
            helper_funcs,
            ptr,
        )?;
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
