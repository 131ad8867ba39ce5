//! The code a kernel calls and, tiered, the switch from a quick target's code to the main
//! target's once its background compilation has finished.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::codegen::c;
use crate::ir::Function;
use crate::target::{self, Artifact, Listing, Targets};
use crate::Error;

/// A background compilation: the main target's code, or why there is none.
type Compilation = JoinHandle<Result<Arc<dyn Artifact>, Error>>;

/// The code a kernel calls now and, tiered, the compilation that will replace it.
pub(crate) struct Tiers {
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
    pub(crate) fn compile(function: &Function, targets: &Targets) -> Result<Tiers, Error> {
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
    pub(crate) fn current(&self) -> Arc<dyn Artifact> {
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
    pub(crate) fn finish(&self) -> Result<(), String> {
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
pub(crate) fn listing(targets: &Targets, function: &Function) -> Listing {
    let printed = std::iter::once(targets.main())
        .chain(targets.quick())
        .find_map(|t| t.listing(function).transpose());
    let printed = printed.unwrap_or_else(|| Ok(c::listing(function)?));
    printed.unwrap_or_else(|e| Listing {
        text: format!("/* no listing: {e} */\n"),
        body_offset: 0,
    })
}
