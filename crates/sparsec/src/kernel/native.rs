//! The kernel core every front end shares ([`Compiled`]): a lowered function compiled by
//! its targets, the code that runs now and, tiered, the switch from a quick target's code
//! to the main target's once its background compilation has finished; the variants for
//! other index widths; the argument layout; the listing; and the checked call.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use super::bind::Arguments;
use super::variants::WidthVariants;
use crate::codegen::abi;
use crate::codegen::c;
use crate::codegen::runtime::RawBuffer;
use crate::ir::{
    interp, visit, ArrayRef, Function, Local, LocalType, Loop, LoopKind, ParamRef, ScalarArg,
    Signature, Stmt,
};
use crate::target::{self, Artifact, Listing, Targets};
use crate::Error;

/// A lowered function compiled by its targets, with what running it needs whatever the
/// front end: `Kernel` (index notation) and `SpfKernel` (sparse polyhedral) each hold one
/// beside their own binding of inputs to arguments.
pub(crate) struct Compiled {
    targets: Targets,
    /// The layout of the arguments of every call, whichever target's code runs.
    signature: Signature,
    /// The code for inputs whose index arrays are as the function was compiled for.
    code: Tiers,
    /// Code compiled on first use for inputs with other index widths, by the set of
    /// `int32_t` arrays it reads (with the same targets).
    variants: WidthVariants<Tiers>,
    /// The source text, printed on first use.
    listing: OnceLock<Listing>,
}

impl Compiled {
    /// `function` (after its main target's passes) compiled by `targets`.
    pub(crate) fn new(function: &Function, targets: Targets) -> Result<Compiled, Error> {
        Ok(Compiled {
            code: Tiers::compile(function, &targets)?,
            signature: function.signature(),
            targets,
            variants: WidthVariants::new(),
            listing: OnceLock::new(),
        })
    }

    /// The targets it was compiled with.
    pub(crate) fn targets(&self) -> &Targets {
        &self.targets
    }

    /// Where each argument goes.
    pub(crate) fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The code that runs now for inputs of the widths compiled for.
    pub(crate) fn current(&self) -> Arc<dyn Artifact> {
        self.code.current()
    }

    /// The code of `function` that reads the `narrow` arrays as `int32_t` and the others
    /// as `int64_t`: the main code, or a variant compiled the first time inputs of these
    /// widths arrive.
    pub(crate) fn code_for(
        &self,
        function: &Function,
        narrow: &BTreeSet<ArrayRef>,
    ) -> Result<Arc<dyn Artifact>, Error> {
        if *narrow == function.narrow_arrays {
            return Ok(self.code.current());
        }
        let tiers = self
            .variants
            .get_or_compile(function, narrow, |f| Tiers::compile(f, &self.targets))?;
        Ok(tiers.current())
    }

    /// Wait until a tiered compilation has finished and run its code from now on; an
    /// error says why it failed (the quick code then keeps running).
    pub(crate) fn finish_compiling(&self) -> Result<(), Error> {
        self.code.finish().map_err(|reason| {
            Error::Input(format!(
                "the {} target's code could not replace the {}'s: {reason}",
                self.targets.main().name(),
                self.targets.quick().map_or("quick target", |t| t.name()),
            ))
        })
    }

    /// The source text of `function` as the targets print it (see [`listing`]).
    pub(crate) fn listing(&self, function: &Function) -> &Listing {
        self.listing
            .get_or_init(|| listing(&self.targets, function))
    }
}

/// Call `code` of `function` (its arguments laid out as `signature`) with `arguments`
/// and one entry buffer per thread in `buffers`; a nonzero status becomes the failed
/// assumption's message, or says that the kernel ran out of memory `what` (for what it
/// allocates). Where `code` does not check the assumptions itself, they are checked here,
/// on the host, first.
///
/// # Safety
/// Every pointer of `arguments` addresses live storage of the operand its slot names, of
/// the width `code` reads; only the output is written through them.
pub(crate) unsafe fn call(
    code: &dyn Artifact,
    function: &Function,
    signature: &Signature,
    arguments: &mut Arguments,
    buffers: &mut [RawBuffer],
    what: &str,
) -> Result<(), Error> {
    if !code.capabilities().checks_assumptions {
        if let Some(failed) = failed_assumption(function, signature, &arguments.params) {
            return Err(Error::Input(failed.to_string()));
        }
    }
    // SAFETY: as the caller promises; `buffers` holds one buffer per thread.
    let status = unsafe {
        code.call(target::Call {
            arrays: &mut arguments.arrays,
            bytes: &arguments.bytes,
            contents: &arguments.contents,
            params: &arguments.params,
            out: buffers.as_mut_ptr(),
        })?
    };
    match status {
        0 => Ok(()),
        _ => {
            let mut message = abi::failure(function, status, what);
            if status == -1 {
                if let Some(bytes) = largest_scratch(function, signature, &arguments.params) {
                    message.push_str(&format!(
                        " or its workspaces (the largest needs {bytes} bytes)"
                    ));
                }
            }
            Err(Error::Input(message))
        }
    }
}

/// The value of each parameter among the scalar arguments `params`, laid out as
/// `signature`: `None` for one not passed.
fn param_values<'p>(
    signature: &'p Signature,
    params: &'p [i64],
) -> impl Fn(ParamRef) -> Option<i64> + 'p {
    move |p| {
        let slot = signature
            .scalars
            .iter()
            .position(|s| *s == ScalarArg::Param(p))?;
        params.get(slot).copied()
    }
}

/// The bytes of the largest scratch array `function` allocates (one thread's copy), where
/// the scalar arguments `params` (laid out as `signature`) give the lengths.
fn largest_scratch(function: &Function, signature: &Signature, params: &[i64]) -> Option<u128> {
    let value = param_values(signature, params);
    let mut locals: Vec<&Local> = function.locals.iter().collect();
    visit::walk_stmts(&function.body, &mut |s| {
        if let Stmt::For(Loop {
            kind: LoopKind::Parallel { locals: more, .. },
            ..
        }) = s
        {
            locals.extend(more);
        }
    });
    locals
        .iter()
        .filter_map(|local| {
            let len = u128::try_from(interp::scalar(&local.len, &value)?).ok()?;
            let element = match function.scratch_info(local.array).ty {
                LocalType::Value | LocalType::Index => 8,
                LocalType::Flag => 1,
            };
            Some((len + 1) * element)
        })
        .max()
}

/// The message of the first of `function`'s assumptions that the scalar arguments
/// `params` (laid out as `signature`) do not satisfy. The verifier keeps arrays out of
/// them; one the host cannot evaluate (its arithmetic would overflow) fails.
fn failed_assumption<'f>(
    function: &'f Function,
    signature: &Signature,
    params: &[i64],
) -> Option<&'f str> {
    let value = param_values(signature, params);
    function
        .assumptions
        .iter()
        .find(|(condition, _)| interp::scalar(condition, &value).is_none_or(|v| v == 0))
        .map(|(_, message)| message.as_str())
}

/// A background compilation: the main target's code, or why there is none.
type Compilation = JoinHandle<Result<Arc<dyn Artifact>, Error>>;

/// The code a kernel calls now and, tiered, the compilation that will replace it.
struct Tiers {
    current: Mutex<Arc<dyn Artifact>>,
    pending: Mutex<Option<Compilation>>,
    /// Why the main target's code could not replace the quick one's, once known.
    failure: Mutex<Option<String>>,
}

impl Tiers {
    /// `function` compiled as `targets` say, each target checking first that it can: with
    /// one target, its code; tiered, the main target's code when its cache already holds
    /// it, else the quick target's code now and the main one's as soon as a background
    /// compilation finishes. Where the main target fails, the quick code stays and
    /// [`Tiers::finish`] says why; what the quick target cannot compile waits for the main.
    fn compile(function: &Function, targets: &Targets) -> Result<Tiers, Error> {
        let main = targets.main();
        target::check(function, main.as_ref())?;
        let Some(quick) = targets.quick() else {
            return Ok(Tiers::fixed(main.compile(function)?));
        };
        let cached = main.cached(function);
        if let Ok(Some(code)) = cached {
            return Ok(Tiers::fixed(code));
        }
        let quick_code = target::check(function, quick.as_ref())
            .map_err(Error::from)
            .and_then(|()| quick.compile(function));
        let Ok(quick_code) = quick_code else {
            return Ok(Tiers::fixed(main.compile(function)?));
        };
        let tiers = Tiers::fixed(quick_code);
        if let Err(e) = cached {
            *tiers.failure.lock().expect("tiers") = Some(e.to_string());
            return Ok(tiers);
        }
        let (function, main) = (function.clone(), main.clone());
        let compile = std::thread::Builder::new()
            .name("sparsec-cc".into())
            .spawn(move || main.compile(&function));
        match compile {
            Ok(handle) => *tiers.pending.lock().expect("tiers") = Some(handle),
            Err(e) => {
                *tiers.failure.lock().expect("tiers") =
                    Some(format!("cannot start the background compilation: {e}"))
            }
        }
        Ok(tiers)
    }

    /// Code that stays.
    fn fixed(code: Arc<dyn Artifact>) -> Tiers {
        Tiers {
            current: Mutex::new(code),
            pending: Mutex::new(None),
            failure: Mutex::new(None),
        }
    }

    /// The code to call now: the main target's once its compilation has finished.
    fn current(&self) -> Arc<dyn Artifact> {
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
    /// did (the quick code then stays).
    fn finish(&self) -> Result<(), String> {
        let pending = self.pending.lock().expect("tiers").take();
        if let Some(handle) = pending {
            self.install(handle);
        }
        match self.failure.lock().expect("tiers").clone() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn install(&self, handle: Compilation) {
        match handle.join() {
            Ok(Ok(code)) => *self.current.lock().expect("tiers") = code,
            Ok(Err(e)) => *self.failure.lock().expect("tiers") = Some(e.to_string()),
            Err(_) => {
                *self.failure.lock().expect("tiers") =
                    Some("the background compilation thread panicked".into())
            }
        }
    }
}

/// The source text of `function` as `targets` print it: the main target's, else the quick
/// one's; where neither prints one (the JIT), the C backend's, for reading. A function no
/// target prints gets a comment that says why.
fn listing(targets: &Targets, function: &Function) -> Listing {
    let printed = std::iter::once(targets.main())
        .chain(targets.quick())
        .find_map(|t| t.listing(function).transpose());
    let printed = printed.unwrap_or_else(|| Ok(c::listing(function)?));
    printed.unwrap_or_else(|e| Listing {
        text: format!("/* no listing: {e} */\n"),
        body_offset: 0,
    })
}

/// The entry buffers of an emitting kernel's calls, one per thread, kept between calls
/// (emptied) so that a kernel called again appends into storage it has already grown.
/// Every front end's kernel holds one.
#[derive(Debug, Default)]
pub(crate) struct EntryBuffers(Mutex<Vec<RawBuffer>>);

impl EntryBuffers {
    /// `threads` empty buffers (at least one), the kept ones first; a concurrent call of
    /// the same kernel finds none kept and starts empty ones.
    pub(crate) fn take(&self, threads: usize) -> Vec<RawBuffer> {
        let mut buffers = std::mem::take(&mut *self.0.lock().expect("buffers"));
        let wanted = threads.max(1);
        for b in buffers.iter_mut().skip(wanted) {
            // SAFETY: grown with the C allocator, no longer referenced.
            unsafe { crate::codegen::runtime::sys::sparsec_buffer_free(b) };
        }
        buffers.resize_with(wanted, || RawBuffer::EMPTY);
        buffers
    }

    /// Empty `buffers` and keep them for the next call (freeing any that another call
    /// kept meanwhile).
    pub(crate) fn keep(&self, mut buffers: Vec<RawBuffer>) {
        for b in &mut buffers {
            b.len = 0;
        }
        let mut spare = self.0.lock().expect("buffers");
        for b in spare.iter_mut() {
            // SAFETY: grown with the C allocator, no longer referenced.
            unsafe { crate::codegen::runtime::sys::sparsec_buffer_free(b) };
        }
        *spare = buffers;
    }
}

impl Drop for EntryBuffers {
    fn drop(&mut self) {
        let buffers = self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        for b in buffers.iter_mut() {
            // SAFETY: every target grows buffers with the C allocator; each is freed once.
            unsafe { crate::codegen::runtime::sys::sparsec_buffer_free(b) };
        }
    }
}
