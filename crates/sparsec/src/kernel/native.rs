//! The native code a kernel calls: an entry point with the backends' shared ABI and the
//! memory that holds it, and, tiered, the switch from the in-process JIT's code to the C
//! compiler's once a background compilation has finished.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::Backend;
use crate::codegen::clif;
use crate::codegen::runtime::RawBuffer;
use crate::ir::Function;
use crate::jit::{self, JitError, Toolchain};
use crate::Error;

/// `int sparsec_kernel(void **arrays, const int64_t *params, sparsec_buffer *out)`.
pub(crate) type KernelFn =
    unsafe extern "C" fn(*mut *mut c_void, *const i64, *mut RawBuffer) -> i32;

/// Native code of one kernel.
pub(crate) struct Code {
    pub(crate) entry: KernelFn,
    /// [`Backend::C`] or [`Backend::Jit`]: which one produced it.
    pub(super) backend: Backend,
    /// Produced now rather than found in the kernel cache.
    pub(super) compiled: bool,
    /// Keeps the memory `entry` points into: a loaded library or JIT-compiled code.
    _owner: Box<dyn Send + Sync>,
}

impl Code {
    /// The C translation unit `source`, compiled (or found in the cache) and loaded.
    pub(crate) fn c(source: &str, toolchain: &Toolchain) -> Result<Code, JitError> {
        Code::from_library(jit::load(source, toolchain)?)
    }

    /// The C translation unit `source` if the cache holds it (no compiler runs).
    fn cached_c(source: &str, toolchain: &Toolchain) -> Result<Option<Code>, JitError> {
        jit::load_cached(source, toolchain)?
            .map(Code::from_library)
            .transpose()
    }

    fn from_library(loaded: jit::Loaded) -> Result<Code, JitError> {
        let jit::Loaded { library, compiled } = loaded;
        // SAFETY: the signature matches the entry point printed by `codegen::c`.
        let entry = unsafe { library.symbol::<KernelFn>(crate::codegen::c::ENTRY)? };
        Ok(Code {
            entry,
            backend: Backend::C,
            compiled,
            _owner: Box::new(library),
        })
    }

    /// `function` compiled in process by Cranelift.
    pub(super) fn jit(function: &Function) -> Result<Code, Error> {
        let code = clif::compile(function)?;
        // SAFETY: `codegen::clif` generates a function of this signature; `code` keeps it
        // alive as long as this value.
        let entry = unsafe { std::mem::transmute::<*const u8, KernelFn>(code.entry()) };
        Ok(Code {
            entry,
            backend: Backend::Jit,
            compiled: true,
            _owner: Box::new(code),
        })
    }
}

/// The code a kernel calls now and, tiered, the C compilation that will replace it.
pub(super) struct Tiers {
    current: Mutex<Arc<Code>>,
    pending: Mutex<Option<JoinHandle<Result<Code, JitError>>>>,
    /// Why the C compiler's code could not replace the JIT's, once known.
    failure: Mutex<Option<String>>,
}

impl Tiers {
    /// Code that stays.
    pub(super) fn fixed(code: Code) -> Tiers {
        Tiers {
            current: Mutex::new(Arc::new(code)),
            pending: Mutex::new(None),
            failure: Mutex::new(None),
        }
    }

    /// The C code when the cache already holds it; else the JIT's code now, and the C
    /// compiler's as soon as a background compilation of `source` finishes. Without a
    /// working C compiler the JIT's code stays, and [`Tiers::finish`] says why; what the
    /// JIT cannot compile waits for the C compiler.
    pub(super) fn tiered(
        function: &Function,
        source: &str,
        toolchain: &Toolchain,
    ) -> Result<Tiers, Error> {
        let cached = Code::cached_c(source, toolchain);
        if let Ok(Some(code)) = cached {
            return Ok(Tiers::fixed(code));
        }
        let jit = match Code::jit(function) {
            Ok(code) => code,
            // What the JIT cannot compile, the C compiler may: wait for it instead.
            Err(_) => return Ok(Tiers::fixed(Code::c(source, toolchain)?)),
        };
        let tiers = Tiers::fixed(jit);
        if let Err(e) = cached {
            *tiers.failure.lock().expect("tiers") = Some(e.to_string());
            return Ok(tiers);
        }
        let (source, toolchain) = (source.to_string(), toolchain.clone());
        let compile = std::thread::Builder::new()
            .name("sparsec-cc".into())
            .spawn(move || Code::c(&source, &toolchain));
        match compile {
            Ok(handle) => *tiers.pending.lock().expect("tiers") = Some(handle),
            Err(e) => {
                *tiers.failure.lock().expect("tiers") =
                    Some(format!("cannot start the C compilation: {e}"))
            }
        }
        Ok(tiers)
    }

    /// The code to call now: the C compiler's once its compilation has finished.
    pub(super) fn current(&self) -> Arc<Code> {
        let finished = {
            let mut pending = self.pending.lock().expect("tiers");
            match pending.as_ref() {
                Some(handle) if handle.is_finished() => pending.take(),
                _ => None,
            }
        };
        if let Some(handle) = finished {
            self.install(handle);
        }
        self.current.lock().expect("tiers").clone()
    }

    /// Wait for a compilation under way and switch to its code; the reason it failed, if it
    /// did (the JIT's code then stays).
    pub(super) fn finish(&self) -> Result<(), String> {
        let pending = self.pending.lock().expect("tiers").take();
        if let Some(handle) = pending {
            self.install(handle);
        }
        match self.failure.lock().expect("tiers").clone() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn install(&self, handle: JoinHandle<Result<Code, JitError>>) {
        match handle.join() {
            Ok(Ok(code)) => *self.current.lock().expect("tiers") = Arc::new(code),
            Ok(Err(e)) => *self.failure.lock().expect("tiers") = Some(e.to_string()),
            Err(_) => {
                *self.failure.lock().expect("tiers") =
                    Some("the C compilation thread panicked".into())
            }
        }
    }
}
