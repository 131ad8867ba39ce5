//! The CUDA target: GPU schedules printed as CUDA C by the GPU targets' shared printer
//! ([`crate::codegen::gpu`], with [`CudaC`] spelling), one `extern "C" __global__`
//! function per device kernel of the outlined function.
//!
//! The mapping is the shared one: a block is a CUDA block, a kernel with warp loops runs
//! each warp as a block of 32 threads, and a warp's thread loops sum with shuffles
//! (`__shfl_down_sync`, then every lane reads lane 0's total), as the scheduling paper's
//! CUDA code does; other thread loops sum through shared memory. Scratch in shared memory
//! is a slice of one dynamic `extern __shared__` buffer, at an offset the launcher passes.
//! Atomic additions are CUDA's own (`atomicAdd` on `double` needs sm_60 or later).
//!
//! What is checked without a GPU: every printed kernel compiles with `nvcc` to PTX and a
//! cubin for sm_90 with warnings as errors (`tests/cuda.rs`, in CI with the
//! `nvidia-cuda-nvcc` wheel). Running needs a device runtime that this build does not
//! have yet: `compile` says so.

use std::sync::Arc;

use super::abi::BackendError;
use super::gpu::{self, Dialect, LaunchIndex, Program};
use crate::ir::outline::Outlined;
use crate::ir::{Function, Type, ValueType};
use crate::target::{Artifact, Capabilities, Listing, Target};
use crate::Error;

/// The name errors and reports give the target.
pub const NAME: &str = "CUDA";

/// What the CUDA target's code does: as the OpenCL target's.
pub const CAPABILITIES: Capabilities = super::opencl::CAPABILITIES;

/// C++'s and CUDA's words beyond C's ([`crate::codegen::c::RESERVED_WORDS`]): keywords,
/// the built-in variables and the functions printed kernels call.
pub const RESERVED_WORDS: &[&str] = &[
    "class",
    "namespace",
    "template",
    "typename",
    "this",
    "new",
    "delete",
    "operator",
    "public",
    "private",
    "protected",
    "virtual",
    "friend",
    "using",
    "explicit",
    "mutable",
    "nullptr",
    "bool",
    "true",
    "false",
    "try",
    "catch",
    "throw",
    "export",
    "asm",
    "and",
    "or",
    "not",
    "xor",
    "concept",
    "requires",
    "decltype",
    "constexpr",
    "static_assert",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "dim3",
    "__syncthreads",
    "atomicAdd",
    "__shfl_sync",
    "__shfl_down_sync",
    "min",
    "max",
];

/// CUDA C's spelling of the shared printer's kernels.
pub struct CudaC;

const PRELUDE: &str = "\
#include <stdint.h>
#define sparsec_min(a, b) ((a) < (b) ? (a) : (b))
#define sparsec_max(a, b) ((a) > (b) ? (a) : (b))
/* Scratch in shared memory: slices of the launch's dynamic shared memory. */
extern __shared__ __align__(8) unsigned char sparsec_shared[];

";

impl Dialect for CudaC {
    fn target(&self) -> &'static str {
        NAME
    }

    fn prelude(&self) -> &'static str {
        PRELUDE
    }

    fn global_space(&self) -> &'static str {
        ""
    }

    fn inline(&self) -> &'static str {
        "static __device__ inline"
    }

    fn kernel_head(&self, name: &str, params: &[String]) -> String {
        format!("extern \"C\" __global__ void {name}({})", params.join(", "))
    }

    fn global_param(&self, ty: &str, constness: &str, name: &str) -> String {
        format!("{constness}{ty} *__restrict__ {name}")
    }

    fn shared_param(&self, ty: &str, name: &str) -> (String, Option<String>) {
        (
            format!("const int64_t {name}_offset"),
            Some(format!(
                "{ty} *{name} = ({ty} *)(sparsec_shared + {name}_offset);"
            )),
        )
    }

    fn shared_pointer(&self, ty: &str) -> String {
        format!("{ty} *")
    }

    fn global_pointer(&self, ty: &str) -> String {
        format!("{ty} *")
    }

    fn index(&self, index: LaunchIndex, d: usize) -> String {
        let v = match index {
            LaunchIndex::Group => "blockIdx",
            LaunchIndex::Groups => "gridDim",
            LaunchIndex::Item => "threadIdx",
            LaunchIndex::Items => "blockDim",
        };
        format!("(int64_t){v}.{}", ["x", "y", "z"][d])
    }

    fn barrier(&self) -> &'static str {
        "__syncthreads();"
    }

    fn atomic_add(
        &self,
        ty: Type,
        narrow: bool,
        _shared: bool,
        target: &str,
        value: &str,
    ) -> String {
        match ty {
            Type::Value(ValueType::F64) => format!("atomicAdd({target}, (double)({value}));"),
            Type::Value(ValueType::F32) => format!("atomicAdd({target}, (float)({value}));"),
            _ if narrow => format!("atomicAdd((int *)({target}), (int)({value}));"),
            _ => format!(
                "atomicAdd((unsigned long long *)({target}), (unsigned long long)({value}));"
            ),
        }
    }

    fn fetch_increment(&self, counter: &str) -> String {
        format!("(int64_t)atomicAdd((unsigned long long *)({counter}), 1ULL)")
    }

    fn warp_reduce(
        &self,
        var: &str,
        lanes: i64,
        combine: &dyn Fn(&str, &str) -> String,
    ) -> Option<Vec<String>> {
        let shuffled = format!("__shfl_down_sync(0xffffffffu, {var}, sparsec_o)");
        Some(vec![
            format!(
                "for (int sparsec_o = {}; sparsec_o > 0; sparsec_o /= 2) {var} = {};",
                lanes / 2,
                combine(var, &shuffled)
            ),
            format!("{var} = __shfl_sync(0xffffffffu, {var}, 0);"),
        ])
    }
}

/// `function` split into host part and kernels, with the kernels' CUDA C.
pub fn program(function: &Function) -> Result<(Outlined, Program), BackendError> {
    gpu::outlined_program(function, &CAPABILITIES, RESERVED_WORDS, &CudaC)
}

/// CUDA C for NVIDIA GPUs.
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaTarget;

impl Target for CudaTarget {
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

    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error> {
        program(function)?;
        Err(BackendError {
            backend: NAME,
            reason: "this build prints and checks CUDA kernels (see `sparsec emit`) but has no \
                     CUDA runtime to launch them; run GPU schedules with the OpenCL target"
                .into(),
        }
        .into())
    }
}
