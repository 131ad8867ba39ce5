//! The OpenCL target: GPU schedules run on any OpenCL 1.2 device (a GPU, or PoCL on the
//! CPU, which is how CI proves the code without a GPU).
//!
//! A function is outlined ([`crate::ir::outline`]) into a host part and device kernels;
//! the kernels are printed as OpenCL C (`print.rs`) and built by the device's driver at
//! compile time; the host part runs on the host (`host.rs`) and launches them. Running
//! needs the `opencl` cargo feature (`device.rs`: the `opencl3` crate, which loads the
//! OpenCL library at run time); without it the target still prints its listing and
//! refuses to compile with a message that names the feature.

#[cfg(feature = "opencl")]
mod device;
#[cfg(feature = "opencl")]
mod host;
mod print;
#[cfg(feature = "opencl")]
mod resident;

use std::sync::Arc;

use super::abi::BackendError;
use crate::ir::outline::{outline, LaunchDefaults, Outlined};
use crate::ir::{Function, Names, OutputMode, ParallelUnit};
use crate::target::{Artifact, Capabilities, Listing, Target};
use crate::Error;
pub use print::{KernelArg, KernelPlan, Program};

/// The name errors and reports give the target.
pub const NAME: &str = "OpenCL";

/// What the OpenCL target's code does: GPU loops on work-groups and work-items, atomic
/// additions, scratch in local and global memory, level helpers (printed as OpenCL C);
/// no appending of entries (a device cannot grow a buffer). The host checks the
/// assumptions before the first launch.
pub const CAPABILITIES: Capabilities = Capabilities {
    units: &[
        ParallelUnit::GpuBlock,
        ParallelUnit::GpuWarp,
        ParallelUnit::GpuThread,
    ],
    threads: false,
    emitting: false,
    atomics: true,
    scratch: true,
    helpers: true,
    tunable: None,
    checks_assumptions: false,
};

/// OpenCL C's words beyond C's ([`crate::codegen::c::RESERVED_WORDS`]): its keywords,
/// types and the built-in functions printed kernels call.
pub const RESERVED_WORDS: &[&str] = &[
    "kernel",
    "global",
    "local",
    "constant",
    "private",
    "read_only",
    "write_only",
    "read_write",
    "uniform",
    "pipe",
    "half",
    "bool",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "event_t",
    "sampler_t",
    "image1d_t",
    "image2d_t",
    "image3d_t",
    "char2",
    "char4",
    "int2",
    "int4",
    "long2",
    "long4",
    "float2",
    "float4",
    "double2",
    "double4",
    "barrier",
    "mem_fence",
    "prefetch",
    "get_global_id",
    "get_local_id",
    "get_group_id",
    "get_local_size",
    "get_num_groups",
    "get_global_size",
    "get_work_dim",
    "as_int",
    "as_long",
    "as_float",
    "as_double",
    "atom_add",
    "atom_cmpxchg",
    "atomic_add",
    "atomic_cmpxchg",
    "min",
    "max",
    "fmin",
    "fmax",
    "mad",
    "select",
];

/// Kernels for an OpenCL device, built by its driver.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenClTarget;

/// `function` split into host part and kernels, with the kernels' OpenCL C.
pub fn program(function: &Function) -> Result<(Outlined, Program), BackendError> {
    crate::target::check_capabilities(function, NAME, &CAPABILITIES)?;
    let refuse = |reason: String| BackendError {
        backend: NAME,
        reason,
    };
    if !matches!(function.output, OutputMode::Dense { .. }) {
        return Err(refuse(
            "the output is sparse, which GPU code does not assemble yet; store it dense".into(),
        ));
    }
    let outlined =
        outline(function, LaunchDefaults::default()).map_err(|e| refuse(e.to_string()))?;
    if outlined.kernels.is_empty() {
        return Err(refuse(
            "the schedule maps no loop to the GPU: parallelize one on GPUBlock (with GPUThread \
             inside), or use a CPU target"
                .into(),
        ));
    }
    let signature = function.signature();
    let names = Names::new(
        function,
        &signature,
        &[crate::codegen::c::RESERVED_WORDS, RESERVED_WORDS],
    );
    let program = print::program(function, &outlined, &names)?;
    Ok((outlined, program))
}

impl Target for OpenClTarget {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn listing(&self, function: &Function) -> Result<Option<Listing>, Error> {
        let (_, program) = program(function)?;
        Ok(Some(Listing {
            text: program.source,
            body_offset: program.body_offset,
        }))
    }

    #[cfg(feature = "opencl")]
    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error> {
        let (outlined, program) = program(function)?;
        Ok(Arc::new(device::build(
            outlined,
            function.signature(),
            &program,
            CAPABILITIES,
        )?))
    }

    #[cfg(not(feature = "opencl"))]
    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error> {
        program(function)?;
        Err(BackendError {
            backend: NAME,
            reason: "sparsec was built without the `opencl` feature, which runs kernels on \
                     OpenCL devices (cargo build --features opencl)"
                .into(),
        }
        .into())
    }
}

/// Bytes copied to OpenCL devices so far by every call (inputs kept on a device between
/// calls are copied once).
pub fn bytes_copied_to_device() -> u64 {
    #[cfg(feature = "opencl")]
    return resident::COPIED_TO_DEVICE.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(feature = "opencl"))]
    0
}

/// The name of the OpenCL device kernels run on, or why there is none.
pub fn device_name() -> Result<String, String> {
    #[cfg(feature = "opencl")]
    return device::device().map(|d| d.name().to_string());
    #[cfg(not(feature = "opencl"))]
    Err("sparsec was built without the `opencl` feature".into())
}
