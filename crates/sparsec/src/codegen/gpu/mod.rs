//! What the GPU targets share: device kernels of an outlined function printed in a C
//! dialect (OpenCL C, CUDA C) from one printer, which asks a [`Dialect`] only how to
//! spell things; the plan of each kernel's arguments and unit mapping (`plan.rs`); and the
//! evaluator of the host part between launches (`host.rs`, for targets that run).
//!
//! The mapping is the same in every dialect. A block is a work-group (a CUDA block) and
//! its threads the work-items; each loop takes its iterations in turns from its index
//! along its dimension. A kernel with warp loops runs each warp as a group of
//! [`WARP_SIZE`] work-items of its own (OpenCL 1.2 devices need not have sub-groups), so
//! a group's barrier and local memory are the warp's; CUDA spells the same with a block of
//! warps. Block code runs in every work-item, so thread loops' sums are combined where
//! every work-item reads the total: a tree in local memory, or a warp's shuffles in CUDA.
//! A block loop's sums into host variables leave one partial sum per group (or warp),
//! which the host adds in order, so results are deterministic.

#[cfg(feature = "opencl")]
pub mod host;
mod plan;
mod print;

use crate::codegen::abi::BackendError;
use crate::ir::outline::{outline, LaunchDefaults, Outlined, WARP_SIZE};
use crate::ir::{ArrayRef, Expr, Function, GpuDim, Names, ParamRef, Scratch, Type, ValueType, Var};
use crate::target::Capabilities;

pub use plan::plan;

/// One argument of a device kernel, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// An array of the call (an operand's, or scratch the host allocates): a global
    /// buffer.
    Array(ArrayRef),
    /// A function parameter, by value (`int64_t`).
    Param(ParamRef),
    /// A host variable the kernel reads, by value.
    Captured(Var),
    /// A host variable the kernel sums into: a global buffer of one partial sum per
    /// group (see [`KernelPlan::warp_dim`]), which the host adds to the variable.
    Partial(Var),
    /// A scratch array in a group's local (shared) memory, of `len` elements: a pointer
    /// in OpenCL, an offset into the dynamic shared memory in CUDA.
    Shared { array: Scratch, len: Expr },
    /// A scratch array of `len` elements per work-item: one global buffer the launcher
    /// allocates and zeroes, each work-item its slice.
    Private { array: Scratch, len: Expr },
    /// Local memory for combining thread loops' sums: 8 bytes per work-item.
    Combine,
    /// The warps per block along the dimension, by value (`int64_t`).
    Warps(GpuDim),
    /// Part of the room an emitting kernel writes its entries in (see [`EmitRoom`]).
    Emitted(EmitRoom),
}

/// The room a kernel that emits entries ([`crate::ir::Stmt::Emit`]) writes them in, which
/// the launcher allocates: each entry takes the next slot of a counter atomically and is
/// written there while the slot is below the capacity. A launcher that finds the counter
/// past the capacity after the kernel grows the room to fit and launches it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitRoom {
    /// The entries' coordinates, `order` per slot (`int64_t`).
    Coords,
    /// The entries' values (`double`, as the runtime's entry buffers hold them).
    Values,
    /// The counter of slots taken (`int64_t`, zeroed before the launch).
    Counter,
    /// The slots there is room for, by value (`int64_t`).
    Capacity,
}

impl EmitRoom {
    /// In the order a kernel takes them.
    pub const ALL: [EmitRoom; 4] = [
        EmitRoom::Coords,
        EmitRoom::Values,
        EmitRoom::Counter,
        EmitRoom::Capacity,
    ];

    /// The parameter's name in the printed kernel.
    pub fn name(self) -> &'static str {
        match self {
            EmitRoom::Coords => "sparsec_emit_coords",
            EmitRoom::Values => "sparsec_emit_vals",
            EmitRoom::Counter => "sparsec_emit_count",
            EmitRoom::Capacity => "sparsec_emit_capacity",
        }
    }
}

/// A kernel's arguments and how its units map to groups.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelPlan {
    /// The kernel function's name.
    pub name: String,
    pub args: Vec<KernelArg>,
    /// The dimension whose groups are warps (a kernel with warp loops), if any: its
    /// partial sums are one per warp.
    pub warp_dim: Option<GpuDim>,
}

/// Kernels printed in one dialect.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The whole translation unit.
    pub source: String,
    /// Where the kernels start in `source`, after the helpers.
    pub body_offset: usize,
    /// The kernels, by the number their launch names.
    pub kernels: Vec<KernelPlan>,
}

/// An index of the launch along a dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchIndex {
    /// The group's index (OpenCL's `get_group_id`, CUDA's `blockIdx`).
    Group,
    /// The number of groups (`get_num_groups`, `gridDim`).
    Groups,
    /// The work-item's index in its group (`get_local_id`, `threadIdx`).
    Item,
    /// The work-items of a group (`get_local_size`, `blockDim`).
    Items,
}

/// How a GPU language spells what the shared printer prints.
pub trait Dialect {
    /// The target's name, for refusals.
    fn target(&self) -> &'static str;
    /// Text before the kernels: the types `int64_t` and `int32_t`, `sparsec_min` and
    /// `sparsec_max`, and the dialect's own helpers.
    fn prelude(&self) -> &'static str;
    /// What `SPARSEC_RT_GLOBAL` becomes in level helpers: the address space of their array.
    fn global_space(&self) -> &'static str;
    /// What `SPARSEC_RT_INLINE` becomes in level helpers: a function the kernels call.
    fn inline(&self) -> &'static str;
    /// The head of kernel `name` with `params`.
    fn kernel_head(&self, name: &str, params: &[String]) -> String;
    /// A parameter pointing to device memory of `ty` (`const ` or `""` in `constness`).
    fn global_param(&self, ty: &str, constness: &str, name: &str) -> String;
    /// The parameter of a scratch array `name` of `ty` in a group's shared memory, and the
    /// line that declares it at the kernel's top, if the dialect needs one.
    fn shared_param(&self, ty: &str, name: &str) -> (String, Option<String>);
    /// `ty *`, pointing into shared memory.
    fn shared_pointer(&self, ty: &str) -> String;
    /// `ty *`, pointing into global memory.
    fn global_pointer(&self, ty: &str) -> String;
    /// `index` along dimension `d` (0, 1, 2), as an `int64_t`.
    fn index(&self, index: LaunchIndex, d: usize) -> String;
    /// Wait for the group and make its memory writes visible.
    fn barrier(&self) -> &'static str;
    /// `*target += value` atomically, where `target` points to elements of `ty`
    /// (`int32_t` indices where `narrow`; in shared memory where `shared`).
    fn atomic_add(&self, ty: Type, narrow: bool, shared: bool, target: &str, value: &str)
        -> String;
    /// The value of the `int64_t` that `counter` points to in global memory, incremented
    /// atomically (an expression).
    fn fetch_increment(&self, counter: &str) -> String;
    /// Lines that leave in every lane of a warp (a group of `lanes` work-items) the
    /// reduction of `var` over its lanes, `combine(a, b)` spelling `a ⊕ b`, where the
    /// dialect has warp shuffles; `None` where the reduction goes through shared memory.
    fn warp_reduce(
        &self,
        var: &str,
        lanes: i64,
        combine: &dyn Fn(&str, &str) -> String,
    ) -> Option<Vec<String>>;
}

/// The element types the printer spells, the same in every dialect.
pub fn var_type(ty: Type) -> &'static str {
    match ty {
        Type::Index => "int64_t",
        Type::Bool => "int",
        Type::Value(ValueType::F64) => "double",
        Type::Value(ValueType::F32) => "float",
    }
}

/// The kernels of `outlined` (from `function`, named with `names`) in `dialect`.
pub fn program(
    function: &Function,
    outlined: &Outlined,
    names: &Names,
    dialect: &dyn Dialect,
) -> Result<Program, BackendError> {
    let signature = function.signature();
    let mut source = dialect.prelude().to_string();
    for helper in function.helpers() {
        let space = match dialect.global_space() {
            "" => String::new(),
            space => format!("{space} "),
        };
        source.push_str(
            &helper
                .definition()
                .replace("SPARSEC_RT_INLINE", dialect.inline())
                .replace("SPARSEC_RT_GLOBAL ", &space),
        );
        source.push_str("\n\n");
    }
    // Thread, warp and block copies of a reduction other than a sum combine through it.
    if let Some(op) = &function.reduction_operator {
        source.push_str(&format!(
            "{} double {REDUCE}(double {}, double {}) {{\n  return {};\n}}\n\n",
            dialect.inline(),
            names.var(op.acc),
            names.var(op.term),
            crate::codegen::c::expr::expr(names, &op.combined)
        ));
    }
    let body_offset = source.len();
    let mut kernels = Vec::new();
    for (n, kernel) in outlined.kernels.iter().enumerate() {
        let plan = plan(names, kernel, n, dialect)?;
        print::kernel(
            &mut source,
            function,
            &signature,
            names,
            kernel,
            &plan,
            dialect,
        );
        kernels.push(plan);
    }
    Ok(Program {
        source,
        body_offset,
        kernels,
    })
}

/// `function` outlined for the GPU target that `dialect` spells, whose code can do what
/// `can` says and whose language reserves `reserved` beyond C's words: its host part, and
/// its kernels printed. Refused, naming the target: what it cannot do, a sparse output,
/// and a function with no GPU loop.
pub fn outlined_program(
    function: &Function,
    can: &Capabilities,
    reserved: &'static [&'static str],
    dialect: &dyn Dialect,
) -> Result<(Outlined, Program), BackendError> {
    let target = dialect.target();
    crate::target::check_capabilities(function, target, can)?;
    let refuse = |reason: String| BackendError {
        backend: target,
        reason,
    };
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
        &[crate::codegen::c::RESERVED_WORDS, reserved],
    );
    let program = program(function, &outlined, &names, dialect)?;
    Ok((outlined, program))
}

/// The dimension's index (0 for `x`).
pub fn dim_index(d: GpuDim) -> usize {
    GpuDim::ALL
        .iter()
        .position(|x| *x == d)
        .expect("a dimension")
}

/// The device function computing `acc ⊕ term` for a function's
/// [`crate::ir::ReductionOperator`].
const REDUCE: &str = "sparsec_reduce_op";

/// Lanes of a warp, as printed.
const LANES: i64 = WARP_SIZE;
