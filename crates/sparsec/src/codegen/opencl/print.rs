//! OpenCL C for the device kernels of an outlined function.
//!
//! A kernel is one `__kernel` function per [`DeviceKernel`], its arguments as
//! [`KernelArg`] lists them. GPU units map to OpenCL's work-groups and work-items: a
//! block is a work-group and its threads are the work-items, a loop takes its iterations
//! in turns from its index along its dimension. OpenCL 1.2 devices need not have
//! sub-groups (PoCL's CPU device has none), so a kernel with warp loops runs each warp as
//! a work-group of [`WARP_SIZE`] work-items, and a block as `warps` consecutive groups:
//! a barrier or local memory of a work-group is then the warp's. Thread loops' sums are
//! combined through local memory (a tree, every work-item reading the total, as block
//! code needs: every thread of a block runs it); a block loop's sums into host variables
//! leave one partial sum per work-group, which the host adds in order, so results are
//! deterministic. What needs more (a block's warps sharing memory, array reductions)
//! is refused by [`plan`], naming it.

use std::fmt::Write;

use crate::codegen::abi::BackendError;
use crate::codegen::c::expr::expr;
use crate::ir::outline::{DeviceKernel, Outlined};
use crate::ir::{
    visit, ArrayRef, Element, Expr, Function, GpuDim, Local, LocalType, Loop, LoopKind, Mapping,
    MemorySpace, Names, ParallelUnit, ParamRef, Reduction, Scratch, Signature, Stmt, Type,
    ValueType, Var,
};

use super::NAME;

/// One argument of a device kernel, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// An array of the call (an operand's, or scratch the host allocates): a global
    /// buffer.
    Array(ArrayRef),
    /// A function parameter, by value (`long`).
    Param(ParamRef),
    /// A host variable the kernel reads, by value.
    Captured(Var),
    /// A host variable the kernel sums into: a global buffer of one partial sum per
    /// work-group, which the host adds to the variable.
    Partial(Var),
    /// A scratch array in a work-group's local memory, of `len` elements.
    Shared { array: Scratch, len: Expr },
    /// A scratch array of `len` elements per work-item: one global buffer the launcher
    /// allocates and zeroes, each work-item its slice.
    Private { array: Scratch, len: Expr },
    /// Local memory for combining thread loops' sums: 8 bytes per work-item.
    Combine,
    /// The warps per block along the dimension, by value (`long`).
    Warps(GpuDim),
}

/// How a kernel's units map to work-groups.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelPlan {
    /// The `__kernel` function's name.
    pub name: String,
    pub args: Vec<KernelArg>,
    /// The dimension whose work-groups are warps (a kernel with warp loops), if any.
    pub warp_dim: Option<GpuDim>,
}

/// OpenCL C for every kernel of an outlined function.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The whole translation unit.
    pub source: String,
    /// Where the kernels start in `source`, after the helpers.
    pub body_offset: usize,
    /// The kernels, by the number their launch names.
    pub kernels: Vec<KernelPlan>,
}

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

/// The OpenCL C of `outlined`'s kernels, named with `names` (the whole function's).
pub fn program(
    function: &Function,
    outlined: &Outlined,
    names: &Names,
) -> Result<Program, BackendError> {
    let signature = function.signature();
    let mut source = PRELUDE.to_string();
    for helper in function.helpers() {
        source.push_str(
            &helper
                .definition()
                .replace("SPARSEC_RT_INLINE", "static inline")
                .replace("SPARSEC_RT_GLOBAL", "__global"),
        );
        source.push_str("\n\n");
    }
    let body_offset = source.len();
    let mut kernels = Vec::new();
    for (n, kernel) in outlined.kernels.iter().enumerate() {
        let plan = plan(names, kernel, n)?;
        print_kernel(&mut source, function, &signature, names, kernel, &plan);
        kernels.push(plan);
    }
    Ok(Program {
        source,
        body_offset,
        kernels,
    })
}

fn refuse(reason: impl Into<String>) -> BackendError {
    BackendError {
        backend: NAME,
        reason: reason.into(),
    }
}

/// The arguments of kernel `n` and its work-group mapping; what the mapping cannot run
/// is refused.
pub fn plan(names: &Names, kernel: &DeviceKernel, n: usize) -> Result<KernelPlan, BackendError> {
    let stmts = [Stmt::For(kernel.nest.clone())];
    let mut warp_dim = None;
    let mut block_shared = false;
    let mut locals: Vec<(ParallelUnit, Local)> = Vec::new();
    let mut combines = false;
    let mut problem: Option<String> = None;
    let name = |v: Var| names.var(v).to_string();
    walk_loops(&stmts, 0, &mut |l, unit, dim, threads_around| {
        let LoopKind::Parallel {
            reductions,
            locals: allocated,
            ..
        } = &l.kind
        else {
            return;
        };
        if unit == ParallelUnit::GpuWarp {
            if warp_dim.is_some_and(|d| d != dim) {
                problem.get_or_insert("warp loops run along two dimensions".into());
            }
            warp_dim = Some(dim);
        }
        for local in allocated {
            block_shared |= unit == ParallelUnit::GpuBlock && local.space == MemorySpace::Shared;
            locals.push((unit, local.clone()));
        }
        if let Some(v) = unsummed_assignment(l, reductions) {
            problem.get_or_insert(format!(
                "{unit:?} loop `{}` assigns `{}`, declared outside it, without summing it: its \
                 iterations would race (the schedule ignores races); use ParallelReduction, \
                 Temporary or Atomics",
                name(l.var),
                name(v)
            ));
        }
        for r in reductions {
            match r {
                // Summed by atomic additions into the array itself.
                Reduction::Array(array, _) => {
                    if let Some(why) = not_only_added(&l.body, array) {
                        problem.get_or_insert(format!(
                            "loop `{}` sums into an array that its iterations also {why}",
                            name(l.var)
                        ));
                    }
                }
                Reduction::Scalar(v) => match unit {
                    ParallelUnit::GpuThread if threads_around > 0 => {
                        problem.get_or_insert(format!(
                            "thread loop `{}` sums into `{}` inside another thread loop, whose \
                             work-items need not all reach the sum",
                            name(l.var),
                            name(*v)
                        ));
                    }
                    ParallelUnit::GpuThread => combines = true,
                    _ if kernel.results.contains(v) => {}
                    _ => {
                        problem.get_or_insert(format!(
                            "{unit:?} loop `{}` sums into `{}`, which its block's warps would \
                             combine through memory they do not share here",
                            name(l.var),
                            name(*v)
                        ));
                    }
                },
            }
        }
    });
    if let Some(reason) = problem {
        return Err(refuse(reason));
    }
    if warp_dim.is_some() && block_shared {
        return Err(refuse(
            "a block's warps share local memory, and this target runs each warp as a \
             work-group of its own (OpenCL 1.2 devices need not have sub-groups)",
        ));
    }
    if let Some(d) = warp_dim {
        let mut lone_threads = false;
        walk_loops(&stmts, 0, &mut |_, unit, dim, _| {
            lone_threads |= unit == ParallelUnit::GpuThread && dim != d;
        });
        let mut warp_free_threads = false;
        outside_warps(&stmts, &mut warp_free_threads);
        if lone_threads || warp_free_threads {
            return Err(refuse(
                "a block with warps also runs thread loops outside them; this target runs each \
                 warp as a work-group, which would repeat those loops once per warp",
            ));
        }
    }
    let mut reads_assigned = false;
    visit::walk_stmts(&stmts, &mut |s| {
        if let Stmt::Assign(v, _) = s {
            reads_assigned |= kernel.results.contains(v) && !reduced(&stmts, *v);
        }
    });
    if reads_assigned {
        return Err(refuse(
            "the kernel assigns a host variable other than by a sum, which its work-items \
             would race on",
        ));
    }
    for (_, local) in &locals {
        if reads_kernel_vars(&local.len, &kernel.nest) {
            return Err(refuse(format!(
                "scratch array `{}` has a length the host cannot compute before the launch",
                names.scratch(local.array)
            )));
        }
    }
    let mut args: Vec<KernelArg> = kernel
        .arrays
        .iter()
        .copied()
        .map(KernelArg::Array)
        .collect();
    args.extend(kernel.params.iter().copied().map(KernelArg::Param));
    args.extend(kernel.captured.iter().copied().map(KernelArg::Captured));
    args.extend(kernel.results.iter().copied().map(KernelArg::Partial));
    for (_, local) in locals {
        args.push(match local.space {
            MemorySpace::Shared => KernelArg::Shared {
                array: local.array,
                len: local.len,
            },
            _ => KernelArg::Private {
                array: local.array,
                len: local.len,
            },
        });
    }
    if combines {
        args.push(KernelArg::Combine);
    }
    if let Some(d) = warp_dim {
        args.push(KernelArg::Warps(d));
    }
    Ok(KernelPlan {
        name: format!("sparsec_kernel_{n}"),
        args,
        warp_dim,
    })
}

/// What `stmts` do with `array` beyond adding into it (`read`, `overwrite`), if anything.
fn not_only_added(stmts: &[Stmt], array: &ArrayRef) -> Option<&'static str> {
    let mut why = None;
    visit::walk_stmts(stmts, &mut |s| {
        if let Stmt::Store(store) = s {
            if store.array == *array && !store.accumulate {
                why.get_or_insert("overwrite");
            }
        }
    });
    visit::walk_stmt_exprs(stmts, &mut |e| {
        if matches!(e, Expr::Load(a, _) if a == array) {
            why.get_or_insert("read");
        }
    });
    why
}

/// A variable declared outside `l` that its body assigns and `reductions` do not sum.
fn unsummed_assignment(l: &Loop, reductions: &[Reduction]) -> Option<Var> {
    let mut declared = Vec::new();
    let mut assigned = Vec::new();
    visit::walk_stmts(&l.body, &mut |s| match s {
        Stmt::Decl(v, _) => declared.push(*v),
        Stmt::For(inner) => declared.push(inner.var),
        Stmt::Assign(v, _) => assigned.push(*v),
        _ => {}
    });
    assigned
        .into_iter()
        .find(|v| !declared.contains(v) && !reductions.contains(&Reduction::Scalar(*v)))
}

/// Visit every GPU loop of `stmts` with its unit, dimension and the number of thread
/// loops around it.
fn walk_loops(
    stmts: &[Stmt],
    threads_around: usize,
    f: &mut dyn FnMut(&Loop, ParallelUnit, GpuDim, usize),
) {
    for s in stmts {
        if let Stmt::For(
            l @ Loop {
                kind:
                    LoopKind::Parallel {
                        unit,
                        mapping: Mapping::Gpu { dim },
                        ..
                    },
                ..
            },
        ) = s
        {
            f(l, *unit, *dim, threads_around);
            let inner = threads_around + usize::from(*unit == ParallelUnit::GpuThread);
            walk_loops(&l.body, inner, f);
            continue;
        }
        let mut s = s.clone();
        for body in visit::children_mut(&mut s) {
            walk_loops(body, threads_around, f);
        }
    }
}

/// Set `found` where a thread loop sits outside every warp loop.
fn outside_warps(stmts: &[Stmt], found: &mut bool) {
    for s in stmts {
        match s {
            Stmt::For(Loop {
                kind:
                    LoopKind::Parallel {
                        unit: ParallelUnit::GpuWarp,
                        ..
                    },
                ..
            }) => {}
            Stmt::For(Loop {
                kind:
                    LoopKind::Parallel {
                        unit: ParallelUnit::GpuThread,
                        ..
                    },
                ..
            }) => *found = true,
            _ => {
                let mut s = s.clone();
                for body in visit::children_mut(&mut s) {
                    outside_warps(body, found);
                }
            }
        }
    }
}

/// True when every assignment of `v` in `stmts` is inside a GPU loop that sums into it.
fn reduced(stmts: &[Stmt], v: Var) -> bool {
    let mut inside_sum = true;
    fn walk(stmts: &[Stmt], v: Var, summed: bool, ok: &mut bool) {
        for s in stmts {
            match s {
                Stmt::Assign(w, _) if *w == v && !summed => *ok = false,
                Stmt::For(l) => {
                    let sums = matches!(&l.kind, LoopKind::Parallel { reductions, .. }
                        if reductions.contains(&Reduction::Scalar(v)));
                    walk(&l.body, v, summed || sums, ok);
                }
                _ => {
                    let mut s = s.clone();
                    for body in visit::children_mut(&mut s) {
                        walk(body, v, summed, ok);
                    }
                }
            }
        }
    }
    walk(stmts, v, false, &mut inside_sum);
    inside_sum
}

/// True when `e` reads a variable that `nest` declares.
fn reads_kernel_vars(e: &Expr, nest: &Loop) -> bool {
    let mut declared = vec![nest.var];
    visit::walk_stmts(&nest.body, &mut |s| match s {
        Stmt::Decl(v, _) => declared.push(*v),
        Stmt::For(l) => declared.push(l.var),
        _ => {}
    });
    let mut reads = false;
    visit::walk_expr(e, &mut |sub| {
        reads |= matches!(sub, Expr::Var(v) if declared.contains(v));
    });
    reads
}

/// The OpenCL C type of a variable of type `ty`.
pub fn var_type(ty: Type) -> &'static str {
    match ty {
        Type::Index => "long",
        Type::Bool => "int",
        Type::Value(v) => v.c_name(),
    }
}

/// The OpenCL C type of a scratch array's elements.
fn scratch_type(ty: LocalType) -> &'static str {
    match ty {
        LocalType::Value => "double",
        LocalType::Index => "long",
        LocalType::Flag => "char",
    }
}

/// The OpenCL C type of an array's elements.
fn element_type(function: &Function, signature: &Signature, a: &ArrayRef) -> &'static str {
    match a {
        ArrayRef::Scratch(s) => scratch_type(function.scratch_info(*s).ty),
        _ => {
            let slot = signature
                .arrays
                .iter()
                .position(|b| b == a)
                .expect("a kernel's operand arrays are the function's");
            match signature.elements[slot] {
                Element::Value(v) => v.c_name(),
                Element::Index(w) => match w {
                    crate::ir::IndexWidth::I32 => "int",
                    crate::ir::IndexWidth::I64 => "long",
                },
            }
        }
    }
}

const LOCAL_ID: &str = "sparsec_lid";
const LOCAL_SIZE: &str = "sparsec_lsize";
const GROUP: &str = "sparsec_group";
const COMBINE: &str = "sparsec_combine";

fn print_kernel(
    out: &mut String,
    function: &Function,
    signature: &Signature,
    names: &Names,
    kernel: &DeviceKernel,
    plan: &KernelPlan,
) {
    let mut params = Vec::new();
    let mut spaces = Vec::new();
    for arg in &plan.args {
        params.push(match arg {
            KernelArg::Array(a) => {
                let constness = if kernel.written.contains(a) {
                    ""
                } else {
                    "const "
                };
                format!(
                    "__global {constness}{} *restrict {}",
                    element_type(function, signature, a),
                    names.array(a)
                )
            }
            KernelArg::Param(p) => format!("const long {}", names.param(p)),
            KernelArg::Captured(v) => {
                format!("const {} {}", var_type(function.var(*v).ty), names.var(*v))
            }
            KernelArg::Partial(v) => format!(
                "__global {} *restrict {}_partial",
                var_type(function.var(*v).ty),
                names.var(*v)
            ),
            KernelArg::Shared { array, .. } => {
                spaces.push((*array, "__local"));
                format!(
                    "__local {} *restrict {}",
                    scratch_type(function.scratch_info(*array).ty),
                    names.scratch(*array)
                )
            }
            KernelArg::Private { array, .. } => {
                spaces.push((*array, "__global"));
                format!(
                    "__global {} *restrict {}_all",
                    scratch_type(function.scratch_info(*array).ty),
                    names.scratch(*array)
                )
            }
            KernelArg::Combine => format!("__local long *restrict {COMBINE}"),
            KernelArg::Warps(d) => format!("const long sparsec_warps_{}", dim_index(*d)),
        });
    }
    let _ = writeln!(out, "__kernel void {}({}) {{", plan.name, params.join(", "));
    let _ = writeln!(
        out,
        "  const long {LOCAL_ID} = get_local_id(0) + get_local_size(0) * (get_local_id(1) + \
         get_local_size(1) * get_local_id(2));"
    );
    let _ = writeln!(
        out,
        "  const long {LOCAL_SIZE} = get_local_size(0) * get_local_size(1) * get_local_size(2);"
    );
    let _ = writeln!(
        out,
        "  const long {GROUP} = get_group_id(0) + get_num_groups(0) * (get_group_id(1) + \
         get_num_groups(1) * get_group_id(2));"
    );
    let _ = writeln!(
        out,
        "  (void){LOCAL_ID}; (void){LOCAL_SIZE}; (void){GROUP};"
    );
    for v in &kernel.results {
        let _ = writeln!(
            out,
            "  {} {} = 0;",
            var_type(function.var(*v).ty),
            names.var(*v)
        );
    }
    for arg in &plan.args {
        match arg {
            KernelArg::Private { array, len } => {
                let name = names.scratch(*array);
                let ty = scratch_type(function.scratch_info(*array).ty);
                let _ = writeln!(
                    out,
                    "  __global {ty} *restrict {name} = {name}_all + ({GROUP} * {LOCAL_SIZE} + \
                     {LOCAL_ID}) * ({});",
                    expr(names, len)
                );
            }
            KernelArg::Shared { array, len } => {
                let _ = writeln!(
                    out,
                    "  for (long sparsec_q = {LOCAL_ID}; sparsec_q < {}; sparsec_q += {LOCAL_SIZE}) \
                     {}[sparsec_q] = 0;",
                    expr(names, len),
                    names.scratch(*array)
                );
                let _ = writeln!(out, "  barrier(CLK_LOCAL_MEM_FENCE);");
            }
            _ => {}
        }
    }
    let mut printer = Printer {
        out,
        names,
        function,
        indent: 1,
        spaces,
        warp_dim: plan.warp_dim,
        sums: 0,
        summed: Vec::new(),
    };
    printer.for_loop(&kernel.nest);
    for v in &kernel.results {
        let name = names.var(*v);
        let _ = writeln!(
            printer.out,
            "  if ({LOCAL_ID} == 0) {name}_partial[{GROUP}] = {name};"
        );
    }
    printer.out.push_str("}\n\n");
}

fn dim_index(d: GpuDim) -> usize {
    match d {
        GpuDim::X => 0,
        GpuDim::Y => 1,
        GpuDim::Z => 2,
    }
}

struct Printer<'a> {
    out: &'a mut String,
    names: &'a Names,
    function: &'a Function,
    indent: usize,
    /// The address space of each scratch array the kernel allocates.
    spaces: Vec<(Scratch, &'static str)>,
    warp_dim: Option<GpuDim>,
    /// Thread loops' sums printed so far, each with its own saved value.
    sums: usize,
    /// Arrays that enclosing GPU loops sum into: every addition into them is atomic.
    summed: Vec<ArrayRef>,
}

impl Printer<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn block(&mut self, head: &str, body: &[Stmt]) {
        self.line(format!("{head} {{").trim_start());
        self.indent += 1;
        body.iter().for_each(|s| self.stmt(s));
        self.indent -= 1;
        self.line("}");
    }

    fn for_loop(&mut self, l: &Loop) {
        let names = self.names;
        let var = names.var(l.var);
        let (start, end) = (expr(names, &l.start), expr(names, &l.end));
        let LoopKind::Parallel {
            unit,
            mapping: Mapping::Gpu { dim },
            reductions,
            ..
        } = &l.kind
        else {
            self.block(
                &format!("for (long {var} = {start}; {var} < {end}; {var}++)"),
                &l.body,
            );
            return;
        };
        let d = dim_index(*dim);
        let warped = self.warp_dim == Some(*dim);
        let (first, step) = match unit {
            ParallelUnit::GpuBlock if warped => (
                format!("(long)get_group_id({d}) / sparsec_warps_{d}"),
                format!("(long)get_num_groups({d}) / sparsec_warps_{d}"),
            ),
            ParallelUnit::GpuBlock => (
                format!("(long)get_group_id({d})"),
                format!("(long)get_num_groups({d})"),
            ),
            ParallelUnit::GpuWarp => (
                format!("(long)get_group_id({d}) % sparsec_warps_{d}"),
                format!("sparsec_warps_{d}"),
            ),
            _ => (
                format!("(long)get_local_id({d})"),
                format!("(long)get_local_size({d})"),
            ),
        };
        let sums: Vec<Var> = match unit {
            ParallelUnit::GpuThread => reductions
                .iter()
                .filter_map(|r| match r {
                    Reduction::Scalar(v) => Some(*v),
                    Reduction::Array(..) => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        // Each work-item sums its iterations from zero; the sums are combined after the
        // loop and added to the value before it.
        let saved: Vec<String> = sums
            .iter()
            .map(|v| {
                self.sums += 1;
                let saved = format!("sparsec_before_{}", self.sums);
                let name = names.var(*v);
                let ty = var_type(self.function.var(*v).ty);
                self.line(&format!("const {ty} {saved} = {name};"));
                self.line(&format!("{name} = 0;"));
                saved
            })
            .collect();
        let summed_before = self.summed.len();
        self.summed
            .extend(reductions.iter().filter_map(|r| match r {
                Reduction::Array(array, _) => Some(*array),
                Reduction::Scalar(_) => None,
            }));
        self.block(
            &format!("for (long {var} = {start} + {first}; {var} < {end}; {var} += {step})"),
            &l.body,
        );
        self.summed.truncate(summed_before);
        for (v, saved) in sums.iter().zip(saved) {
            self.combine(*v, &saved);
        }
    }

    /// Every work-item's `v` becomes `saved` plus the sum of all of theirs: a tree in
    /// local memory, barriers between its levels.
    fn combine(&mut self, v: Var, saved: &str) {
        let name = self.names.var(v).to_string();
        let ty = var_type(self.function.var(v).ty);
        let slots = format!("((__local {ty} *){COMBINE})");
        self.line(&format!("{slots}[{LOCAL_ID}] = {name};"));
        self.line("barrier(CLK_LOCAL_MEM_FENCE);");
        self.line(&format!(
            "for (long sparsec_s = 1; sparsec_s < {LOCAL_SIZE}; sparsec_s *= 2) {{ if ({LOCAL_ID} % \
             (2 * sparsec_s) == 0 && {LOCAL_ID} + sparsec_s < {LOCAL_SIZE}) {slots}[{LOCAL_ID}] \
             += {slots}[{LOCAL_ID} + sparsec_s]; barrier(CLK_LOCAL_MEM_FENCE); }}"
        ));
        self.line(&format!("{name} = {saved} + {slots}[0];"));
        self.line("barrier(CLK_LOCAL_MEM_FENCE);");
    }

    fn space(&self, a: &ArrayRef) -> &'static str {
        match a {
            ArrayRef::Scratch(s) => self
                .spaces
                .iter()
                .find(|(t, _)| t == s)
                .map_or("__global", |(_, space)| space),
            _ => "__global",
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let names = self.names;
        match s {
            Stmt::Decl(v, e) => {
                let ty = var_type(self.function.var(*v).ty);
                self.line(&format!("{ty} {} = {};", names.var(*v), expr(names, e)));
            }
            Stmt::Assign(v, e) => self.line(&format!("{} = {};", names.var(*v), expr(names, e))),
            Stmt::Store(store) if store.accumulate && self.summed.contains(&store.array) => {
                self.stmt(&Stmt::Atomic(Box::new(s.clone())));
            }
            Stmt::Store(store) => {
                let op = if store.accumulate { "+=" } else { "=" };
                self.line(&format!(
                    "{}[{}] {op} {};",
                    names.array(&store.array),
                    expr(names, &store.index),
                    expr(names, &store.value)
                ));
            }
            Stmt::Atomic(inner) => match &**inner {
                Stmt::Store(store) if store.accumulate => {
                    let target = format!(
                        "&{}[{}]",
                        names.array(&store.array),
                        expr(names, &store.index)
                    );
                    let value = expr(names, &store.value);
                    let space = self.space(&store.array).trim_start_matches("__");
                    let call = match self.function.element_type(&store.array) {
                        Type::Value(ValueType::F64) => {
                            format!("sparsec_atomic_add_f64_{space}({target}, {value});")
                        }
                        Type::Value(ValueType::F32) => {
                            format!("sparsec_atomic_add_f32_{space}({target}, {value});")
                        }
                        _ => format!("atom_add({target}, {value});"),
                    };
                    self.line(&call);
                }
                other => self.stmt(other),
            },
            Stmt::For(l) => self.for_loop(l),
            Stmt::While(c, body) => self.block(&format!("while ({})", expr(names, c)), body),
            Stmt::If(c, then, otherwise) => {
                self.line(&format!("if ({}) {{", expr(names, c)));
                self.indent += 1;
                then.iter().for_each(|s| self.stmt(s));
                self.indent -= 1;
                if otherwise.is_empty() {
                    self.line("}");
                } else {
                    self.block("} else", otherwise);
                }
            }
            Stmt::Block(b) => self.block("", b),
            Stmt::Barrier => {
                self.line("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);");
            }
            // A hint only.
            Stmt::Prefetch { .. } => {}
            Stmt::Emit { .. } | Stmt::OrderTouched { .. } | Stmt::Launch(_) => {
                unreachable!("refused before printing: {s:?}")
            }
        }
    }
}
