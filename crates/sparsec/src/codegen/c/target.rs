//! The C backend as a [`Target`]: the printed translation unit, compiled by the system C
//! compiler with OpenMP (or found in the kernel cache) and loaded.

use std::sync::Arc;

use super::{emit, CKernel, ENTRY};
use crate::codegen::abi::{BackendError, EntryFn};
use crate::ir::{gather, lanes, prefetch, Function, ParallelUnit, ParamRef};
use crate::jit::{self, Toolchain};
use crate::target::{
    Artifact, Capabilities, Listing, NativeCode, Pass, Target, Tunable, MAX_CANDIDATES, ZERO_ROWS,
};
use crate::Error;

/// The target's name in errors and reports.
pub const NAME: &str = "C";

/// What C code with OpenMP does: everything on the CPU.
pub const CAPABILITIES: Capabilities = Capabilities {
    units: &[ParallelUnit::CpuThread, ParallelUnit::CpuVector],
    threads: true,
    emitting: true,
    atomics: true,
    scratch: true,
    helpers: true,
    tunable: Some(&GATHERED_SUMS),
    checks_assumptions: true,
};

/// The version of the gathered sums ([`gather::SumVersion`]) and the distance their
/// elements are prefetched ahead ([`prefetch::ELEMENT_DISTANCE`] or
/// [`prefetch::FAR_ELEMENT_DISTANCE`]): the serial, lane-filled and gathering sums with
/// the near distance (candidate `n` is [`gather::SumVersion`] `n`), then serial sums with
/// the far one. The best depends on the machine's gathers and caches (SpMV over short
/// uneven rows: 2.4x faster with gathers on an Intel Xeon, 2x slower on AMD Zen 4).
pub const GATHERED_SUMS: Tunable = Tunable {
    name: "version of the gathered sums",
    params: &[ParamRef::SumVersion, ParamRef::PrefetchDistance],
    candidates: &[
        &[
            gather::SumVersion::Scalar as i64,
            prefetch::ELEMENT_DISTANCE,
        ],
        &[gather::SumVersion::Lanes as i64, prefetch::ELEMENT_DISTANCE],
        &[
            gather::SumVersion::Gathers as i64,
            prefetch::ELEMENT_DISTANCE,
        ],
        &[
            gather::SumVersion::Scalar as i64,
            prefetch::FAR_ELEMENT_DISTANCE,
        ],
    ],
    untuned: &[gather::BY_TESTS, prefetch::ELEMENT_DISTANCE],
};

const _: () = assert!(GATHERED_SUMS.candidates.len() <= MAX_CANDIDATES);

/// The CPU passes the C target runs before printing: dense outputs' rows zeroed by the
/// threads that add into them, independent blocks of rows in SIMD lanes (see [`lanes`]), gathered dot products get a version
/// in SIMD lanes and one with hardware gathers (chosen per call, see [`gather`]), loops
/// that locate rows prefetch them, and sums over scattered elements prefetch those
/// (see [`prefetch`]).
pub const PASSES: &[Pass] = &[
    ZERO_ROWS,
    Pass {
        name: "vectorise lane loops",
        run: lanes::vectorise_lane_loops,
    },
    Pass {
        name: "vectorise gathered sums",
        run: gather::vectorise_gathered_sums,
    },
    Pass {
        name: "prefetch located rows",
        run: prefetch::prefetch_located_rows,
    },
    Pass {
        name: "prefetch gathered elements",
        run: prefetch::prefetch_gathered_elements,
    },
];

/// The translation unit [`emit`] prints for `function`.
pub fn listing(function: &Function) -> Result<Listing, BackendError> {
    let CKernel {
        source,
        body_offset,
        ..
    } = emit(function)?;
    Ok(Listing {
        text: source,
        body_offset,
    })
}

/// C's keywords and the library and runtime names its generated code may see: no printed
/// identifier is one of them.
pub const RESERVED_WORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "bool",
    "true",
    "false",
    "int64_t",
    "int32_t",
    "size_t",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "memset",
    "memcpy",
    "abs",
    "fabs",
    "sqrt",
    "exp",
    "log",
    "pow",
    "floor",
    "ceil",
    "fmin",
    "fmax",
    "main",
    "arrays",
    "params",
    "out",
    "omp_get_thread_num",
];

/// C printed by [`emit`] and compiled by `toolchain`'s compiler, cached on disk.
#[derive(Clone, Debug, Default)]
pub struct CTarget {
    /// The compiler, its flags and the cache.
    pub toolchain: Toolchain,
}

impl CTarget {
    /// The C target compiling with `toolchain`.
    pub fn new(toolchain: Toolchain) -> CTarget {
        CTarget { toolchain }
    }
}

impl Target for CTarget {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn passes(&self) -> &'static [Pass] {
        PASSES
    }

    fn listing(&self, function: &Function) -> Result<Option<Listing>, Error> {
        Ok(Some(listing(function)?))
    }

    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error> {
        let source = emit(function)?.source;
        Ok(Arc::new(native_code(jit::load(&source, &self.toolchain)?)?))
    }

    fn cached(&self, function: &Function) -> Result<Option<Arc<dyn Artifact>>, Error> {
        let source = emit(function)?.source;
        match jit::load_cached(&source, &self.toolchain)? {
            Some(loaded) => Ok(Some(Arc::new(native_code(loaded)?))),
            None => Ok(None),
        }
    }
}

/// The kernel in a loaded library.
fn native_code(loaded: jit::Loaded) -> Result<NativeCode, Error> {
    let jit::Loaded { library, compiled } = loaded;
    // SAFETY: the signature matches the entry point `emit` prints.
    let entry = unsafe { library.symbol::<EntryFn>(ENTRY)? };
    // SAFETY: the library, loaded while `library` lives (and never unloaded), holds it.
    Ok(unsafe { NativeCode::new(NAME, CAPABILITIES, entry, compiled, library) })
}
