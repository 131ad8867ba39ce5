//! The OpenCL target: GPU schedules run on any OpenCL 1.2 device (a GPU, or PoCL on the
//! CPU, which is how CI proves the code without a GPU).
//!
//! A function is outlined ([`crate::ir::outline`]) into a host part and device kernels;
//! the kernels are printed as OpenCL C by the GPU targets' shared printer
//! ([`crate::codegen::gpu`], with [`OpenClC`] spelling) and built by the device's driver
//! at compile time; the host part runs on the host ([`crate::codegen::gpu::host`]) and
//! launches them. Running
//! needs the `opencl` cargo feature (`device.rs`: the `opencl3` crate, which loads the
//! OpenCL library at run time); without it the target still prints its listing and
//! refuses to compile with a message that names the feature.

#[cfg(feature = "opencl")]
mod device;
#[cfg(feature = "opencl")]
mod resident;

use std::sync::Arc;

use super::abi::BackendError;
use super::gpu::{self, Dialect, LaunchIndex, Program};
use crate::ir::outline::Outlined;
use crate::ir::{Function, ParallelUnit, Type, ValueType};
use crate::target::{Artifact, Capabilities, Listing, Target};
use crate::Error;

/// The name errors and reports give the target.
pub const NAME: &str = "OpenCL";

/// What the OpenCL target's code does: GPU loops on work-groups and work-items, atomic
/// additions, scratch in local and global memory, level helpers (printed as OpenCL C);
/// entries appended into room the launcher allocates and grows (a device cannot grow a
/// buffer; see `codegen::gpu::EmitRoom`). The host checks the assumptions before the
/// first launch.
pub const CAPABILITIES: Capabilities = Capabilities {
    units: &[
        ParallelUnit::GpuBlock,
        ParallelUnit::GpuWarp,
        ParallelUnit::GpuThread,
    ],
    threads: false,
    emitting: true,
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
    gpu::outlined_program(function, &CAPABILITIES, RESERVED_WORDS, &OpenClC)
}

/// OpenCL C's spelling of the shared printer's kernels.
pub struct OpenClC;

const PRELUDE: &str = "\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
typedef long int64_t;
typedef int int32_t;
#define sparsec_min(a, b) ((a) < (b) ? (a) : (b))
#define sparsec_max(a, b) ((a) > (b) ? (a) : (b))
/* Floating-point atomic addition by compare-and-swap: OpenCL 1.2 has none. */
#define SPARSEC_ATOMIC_ADD(NAME, SPACE, T, U, AS_U, AS_T, CAS) \\
  void NAME(volatile SPACE T *p, T v) { \\
    U seen = AS_U(*p), expected; \\
    do { expected = seen; seen = CAS((volatile SPACE U *)p, expected, AS_U(AS_T(expected) + v)); } \\
    while (seen != expected); \\
  }
SPARSEC_ATOMIC_ADD(sparsec_atomic_add_f64_global, __global, double, long, as_long, as_double, atom_cmpxchg)
SPARSEC_ATOMIC_ADD(sparsec_atomic_add_f64_local, __local, double, long, as_long, as_double, atom_cmpxchg)
SPARSEC_ATOMIC_ADD(sparsec_atomic_add_f32_global, __global, float, int, as_int, as_float, atomic_cmpxchg)
SPARSEC_ATOMIC_ADD(sparsec_atomic_add_f32_local, __local, float, int, as_int, as_float, atomic_cmpxchg)

";

impl Dialect for OpenClC {
    fn target(&self) -> &'static str {
        NAME
    }

    fn prelude(&self) -> &'static str {
        PRELUDE
    }

    fn global_space(&self) -> &'static str {
        "__global"
    }

    fn inline(&self) -> &'static str {
        "static inline"
    }

    fn kernel_head(&self, name: &str, params: &[String]) -> String {
        format!("__kernel void {name}({})", params.join(", "))
    }

    fn global_param(&self, ty: &str, constness: &str, name: &str) -> String {
        format!("__global {constness}{ty} *restrict {name}")
    }

    fn shared_param(&self, ty: &str, name: &str) -> (String, Option<String>) {
        (format!("__local {ty} *restrict {name}"), None)
    }

    fn shared_pointer(&self, ty: &str) -> String {
        format!("__local {ty} *")
    }

    fn global_pointer(&self, ty: &str) -> String {
        format!("__global {ty} *")
    }

    fn index(&self, index: LaunchIndex, d: usize) -> String {
        let f = match index {
            LaunchIndex::Group => "get_group_id",
            LaunchIndex::Groups => "get_num_groups",
            LaunchIndex::Item => "get_local_id",
            LaunchIndex::Items => "get_local_size",
        };
        format!("(int64_t){f}({d})")
    }

    fn barrier(&self) -> &'static str {
        "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    }

    fn atomic_add(
        &self,
        ty: Type,
        narrow: bool,
        shared: bool,
        target: &str,
        value: &str,
    ) -> String {
        let space = if shared { "local" } else { "global" };
        match ty {
            Type::Value(ValueType::F64) => {
                format!("sparsec_atomic_add_f64_{space}({target}, {value});")
            }
            Type::Value(ValueType::F32) => {
                format!("sparsec_atomic_add_f32_{space}({target}, {value});")
            }
            _ if narrow => format!("atomic_add({target}, (int32_t)({value}));"),
            _ => format!("atom_add({target}, {value});"),
        }
    }

    fn fetch_increment(&self, counter: &str) -> String {
        format!("(int64_t)atom_inc((volatile __global long *)({counter}))")
    }

    fn warp_reduce(
        &self,
        _var: &str,
        _lanes: i64,
        _combine: &dyn Fn(&str, &str) -> String,
    ) -> Option<Vec<String>> {
        None
    }
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
