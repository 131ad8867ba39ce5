//! The OpenMP team a kernel computes on, lent to the Rust side between runs: a conversion
//! that copies on threads of its own finds the team's idle threads spinning on the cores
//! (libgomp waits for the next parallel region busily, for milliseconds), and its own
//! threads then get half a core each. On an SDDMM at 2 threads whose dense operand (32 x
//! 50,000) is transposed at every run, copying on the calling thread took 3.0-3.3 ms and
//! on two threads of the standard library 5.1-7.2 ms; the team's own threads share it.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use crate::jit::{self, Library, Toolchain};
use crate::tensor::{CallingThread, Team};

/// A C function that runs `work(context, part)` for every part below `parts` in one
/// parallel region of `parts` threads.
const SOURCE: &str = "#include <stdint.h>
void sparsec_on_team(int64_t parts, void (*work)(void *, int64_t), void *context) {
#pragma omp parallel for num_threads(parts) schedule(static, 1)
  for (int64_t part = 0; part < parts; part++) work(context, part);
}
";

type OnTeam = unsafe extern "C" fn(i64, extern "C" fn(*mut c_void, i64), *mut c_void);

/// The library `SOURCE` compiles to, with the kernels' toolchain (so with their OpenMP
/// runtime, whose threads it runs on).
pub(super) struct TeamLibrary {
    on_team: OnTeam,
    /// Keeps the library, and so `on_team`, loaded.
    _library: Arc<Library>,
}

impl TeamLibrary {
    /// The library, or `None` when it cannot be compiled or loaded (the kernels' compiler
    /// missing: conversions then run on the calling thread).
    pub(super) fn load(toolchain: &Toolchain) -> Option<TeamLibrary> {
        let library = jit::load(SOURCE, toolchain).ok()?.library;
        // SAFETY: `OnTeam` is the signature `SOURCE` defines.
        let on_team = unsafe { library.symbol::<OnTeam>("sparsec_on_team") }.ok()?;
        Some(TeamLibrary {
            on_team,
            _library: library,
        })
    }
}

/// The OpenMP team of `threads` threads, its library loaded into `library` on first use.
pub(super) struct OpenMpTeam<'k> {
    pub(super) library: &'k OnceLock<Option<TeamLibrary>>,
    pub(super) toolchain: &'k Toolchain,
    pub(super) threads: usize,
}

/// What a part's call finds behind its context pointer.
struct Work<'w> {
    work: &'w (dyn Fn(usize) + Sync),
    /// The first panic of a part, carried across the C frames and resumed after them.
    panicked: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

extern "C" fn run_part(context: *mut c_void, part: i64) {
    // SAFETY: `context` is the `Work` that `OpenMpTeam::run` passes, alive until the
    // parallel region it calls returns.
    let work = unsafe { &*(context as *const Work<'_>) };
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (work.work)(part as usize)));
    if let Err(panic) = ran {
        work.panicked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(panic);
    }
}

impl Team for OpenMpTeam<'_> {
    fn size(&self) -> usize {
        self.threads
    }

    fn run(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) {
        let loaded = self
            .library
            .get_or_init(|| TeamLibrary::load(self.toolchain));
        let Some(library) = loaded else {
            return CallingThread.run(parts, work);
        };
        let work = Work {
            work,
            panicked: Mutex::new(None),
        };
        // SAFETY: `on_team` calls `run_part` with the context given, from threads that
        // have all returned when it does; `work` outlives the call.
        unsafe {
            (library.on_team)(
                parts as i64,
                run_part,
                &work as *const Work<'_> as *mut c_void,
            )
        };
        if let Some(panic) = work
            .panicked
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
        {
            std::panic::resume_unwind(panic);
        }
    }
}
