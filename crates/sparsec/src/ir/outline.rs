//! Outlining: a function with GPU loops split into the host part, which a CPU runs, and
//! the device kernels it launches (Halide's offloading of GPU loops, and the host launch
//! the scheduling paper's CUDA backend writes).
//!
//! Every outermost `GpuBlock` loop becomes a kernel; the host part runs the rest of the
//! function and a [`Stmt::Launch`] where the loop was, so host loops around a GPU loop
//! nest launch it once per iteration. A kernel records what crosses the boundary: the
//! host scalars it reads (and those it assigns), the operand and scratch arrays it
//! reads and writes (a launcher copies only what a kernel needs, and back only what it
//! writes), the parameters it reads, and its launch [`Geometry`], computed on the host.
//! The pass is target-neutral: the CUDA and OpenCL targets print the same kernels.

use std::collections::BTreeSet;

use super::{
    simplify, visit, ArrayRef, BinOp, Expr, Function, GpuDim, Loop, LoopKind, Mapping,
    ParallelUnit, ParamRef, Reduction, Stmt, Store, Var,
};

/// Lanes of a GPU warp (NVIDIA's; OpenCL targets run a warp's loops as sub-group-sized
/// groups of work-items).
pub const WARP_SIZE: i64 = 32;

/// Sizes a launch takes along a dimension whose loops' trip counts the host cannot bound
/// (a thread loop over one row's entries): the loops then run in turns over these many
/// indices. A GPU target tunes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDefaults {
    /// Blocks along a grid dimension.
    pub blocks: i64,
    /// Warps along a block dimension.
    pub warps: i64,
    /// Threads along a block dimension without warps.
    pub threads: i64,
}

impl Default for LaunchDefaults {
    fn default() -> LaunchDefaults {
        LaunchDefaults {
            blocks: 1024,
            warps: 8,
            threads: 256,
        }
    }
}

/// How many blocks, warps and threads a kernel starts along each dimension (`x`, `y`,
/// `z`), as expressions the host evaluates before the launch. A dimension no loop uses
/// has size 1; a launcher starts nothing when a size is below 1 (the loops' trip counts
/// are then 0). Where warp loops use a dimension, its threads are a warp's lanes
/// ([`WARP_SIZE`]) and a block holds `warps * threads` threads along it.
#[derive(Clone, Debug, PartialEq)]
pub struct Geometry {
    pub grid: [Expr; 3],
    pub warps: [Expr; 3],
    pub threads: [Expr; 3],
}

/// A device kernel: one GPU loop nest and what it exchanges with the host.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceKernel {
    /// The outermost `GpuBlock` loop, as lowering made it.
    pub nest: Loop,
    /// Host variables the kernel reads (declared before the launch), passed by value.
    pub captured: Vec<Var>,
    /// Host variables the kernel assigns (its loops' reductions, or updates a schedule
    /// declared free of races), passed by reference and read back.
    pub results: Vec<Var>,
    /// Operand arrays, and scratch arrays allocated outside the kernel, that it reads or
    /// writes.
    pub arrays: Vec<ArrayRef>,
    /// The arrays among `arrays` it writes.
    pub written: Vec<ArrayRef>,
    /// The function's parameters it reads.
    pub params: Vec<ParamRef>,
    pub geometry: Geometry,
}

/// A function split into its host part and device kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct Outlined {
    /// The function with each kernel's loop nest replaced by a [`Stmt::Launch`] of it.
    pub host: Function,
    /// The kernels, by the number their launch names.
    pub kernels: Vec<DeviceKernel>,
}

impl Outlined {
    /// The function this was outlined from: every launch replaced by its kernel's loop
    /// nest (what a target without a device, or a test, runs).
    pub fn inline(&self) -> Function {
        let mut function = self.host.clone();
        function.body = self.inline_stmts(&function.body);
        function
    }

    fn inline_stmts(&self, stmts: &[Stmt]) -> Vec<Stmt> {
        stmts
            .iter()
            .map(|s| match s {
                Stmt::Launch(n) => Stmt::For(self.kernels[*n].nest.clone()),
                _ => {
                    let mut s = s.clone();
                    for body in visit::children_mut(&mut s) {
                        let inlined = self.inline_stmts(body);
                        body.clone_from_slice(&inlined);
                    }
                    s
                }
            })
            .collect()
    }
}

/// Why a function's GPU loops cannot become kernels.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot outline the GPU loops: {0}")]
pub struct OutlineError(pub String);

/// Split `function` into its host part and a kernel per outermost `GpuBlock` loop;
/// `defaults` size the launch dimensions the host cannot bound.
pub fn outline(function: &Function, defaults: LaunchDefaults) -> Result<Outlined, OutlineError> {
    let mut kernels = Vec::new();
    let body = host_stmts(function, &function.body, defaults, &mut kernels)?;
    let mut host = function.clone();
    host.body = body;
    Ok(Outlined { host, kernels })
}

fn host_stmts(
    function: &Function,
    stmts: &[Stmt],
    defaults: LaunchDefaults,
    kernels: &mut Vec<DeviceKernel>,
) -> Result<Vec<Stmt>, OutlineError> {
    let mut out = Vec::with_capacity(stmts.len());
    for s in stmts {
        match s {
            Stmt::For(
                nest @ Loop {
                    kind:
                        LoopKind::Parallel {
                            unit: ParallelUnit::GpuBlock,
                            ..
                        },
                    ..
                },
            ) => {
                kernels.push(kernel(function, nest, defaults)?);
                out.push(Stmt::Launch(kernels.len() - 1));
            }
            Stmt::For(Loop {
                kind: LoopKind::Parallel { unit, .. },
                ..
            }) if unit.is_gpu() => {
                return Err(OutlineError(format!(
                    "a {unit:?} loop is outside every GpuBlock loop"
                )))
            }
            _ => {
                let mut s = s.clone();
                for body in visit::children_mut(&mut s) {
                    let outlined = host_stmts(function, body, defaults, kernels)?;
                    body.clone_from_slice(&outlined);
                }
                out.push(s);
            }
        }
    }
    Ok(out)
}

fn kernel(
    function: &Function,
    nest: &Loop,
    defaults: LaunchDefaults,
) -> Result<DeviceKernel, OutlineError> {
    let stmts = [Stmt::For(nest.clone())];
    // What the nest declares and allocates stays on the device.
    let mut declared = BTreeSet::new();
    let mut allocated = BTreeSet::new();
    visit::walk_stmts(&stmts, &mut |s| match s {
        Stmt::Decl(v, _) => {
            declared.insert(*v);
        }
        Stmt::For(l) => {
            declared.insert(l.var);
            if let LoopKind::Parallel { locals, .. } = &l.kind {
                allocated.extend(locals.iter().map(|l| l.array));
            }
        }
        _ => {}
    });
    let mut read_vars = BTreeSet::new();
    let mut arrays = BTreeSet::new();
    let mut params = BTreeSet::new();
    visit::walk_stmt_exprs(&stmts, &mut |e| match e {
        Expr::Var(v) => {
            read_vars.insert(*v);
        }
        Expr::Param(p) => {
            params.insert(*p);
        }
        Expr::Load(a, _) | Expr::Call(_, a, _) => {
            arrays.insert(*a);
        }
        _ => {}
    });
    let mut assigned = BTreeSet::new();
    let mut written = BTreeSet::new();
    visit::walk_stmts(&stmts, &mut |s| match s {
        Stmt::Assign(v, _) => {
            assigned.insert(*v);
        }
        Stmt::Store(Store { array, .. }) => {
            written.insert(*array);
        }
        Stmt::OrderTouched {
            list, flags, marks, ..
        } => {
            for scratch in [list, flags, marks] {
                written.insert(ArrayRef::Scratch(*scratch));
            }
        }
        Stmt::Prefetch { array, .. } => {
            arrays.insert(*array);
        }
        Stmt::For(Loop {
            kind: LoopKind::Parallel { reductions, .. },
            ..
        }) => {
            for r in reductions {
                if let Reduction::Array(array, _) = r {
                    written.insert(*array);
                }
            }
        }
        _ => {}
    });
    arrays.extend(written.iter().copied());
    let on_device = |a: &ArrayRef| matches!(a, ArrayRef::Scratch(s) if allocated.contains(s));
    let arrays: Vec<ArrayRef> = arrays.into_iter().filter(|a| !on_device(a)).collect();
    let written: Vec<ArrayRef> = written.into_iter().filter(|a| !on_device(a)).collect();
    let host_assigned: Vec<Var> = assigned.difference(&declared).copied().collect();
    let captured = read_vars
        .difference(&declared)
        .filter(|v| !host_assigned.contains(v))
        .copied()
        .collect();
    let geometry = geometry(function, nest, &declared, defaults)?;
    Ok(DeviceKernel {
        nest: nest.clone(),
        captured,
        results: host_assigned,
        arrays,
        written,
        params: params.into_iter().collect(),
        geometry,
    })
}

/// The launch sizes of `nest`: along each dimension, the largest trip count of the loops
/// mapped to it, where the host can bound them (before the kernel runs, reading none of
/// its variables `inside`), else the default.
fn geometry(
    function: &Function,
    nest: &Loop,
    inside: &BTreeSet<Var>,
    defaults: LaunchDefaults,
) -> Result<Geometry, OutlineError> {
    // Per unit and dimension: the host bounds of the loops' trip counts, `None` for one
    // without.
    let mut bounds: Vec<(ParallelUnit, GpuDim, Option<Expr>)> = Vec::new();
    let stmts = [Stmt::For(nest.clone())];
    let mut misplaced_lanes = None;
    visit::walk_stmts(&stmts, &mut |s| {
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
            let trips = simplify(&(l.end.clone() - l.start.clone()));
            bounds.push((*unit, *dim, host_bound(&trips, inside)));
            if *unit == ParallelUnit::GpuWarp {
                // A warp's thread loops run on its lanes.
                visit::walk_stmts(&l.body, &mut |inner| {
                    if let Stmt::For(
                        t @ Loop {
                            kind:
                                LoopKind::Parallel {
                                    unit: ParallelUnit::GpuThread,
                                    mapping: Mapping::Gpu { dim: thread_dim },
                                    ..
                                },
                            ..
                        },
                    ) = inner
                    {
                        if thread_dim != dim {
                            misplaced_lanes = Some(format!(
                                "thread loop `{}` inside warp loop `{}` runs along {thread_dim:?}, \
                                 not along the warp's {dim:?}, where its lanes are",
                                function.var(t.var).hint,
                                function.var(l.var).hint
                            ));
                        }
                    }
                });
            }
        }
    });
    if let Some(reason) = misplaced_lanes {
        return Err(OutlineError(reason));
    }
    let size = |unit: ParallelUnit, dim: GpuDim, default: i64| -> Expr {
        let along: Vec<&Option<Expr>> = bounds
            .iter()
            .filter(|(u, d, _)| *u == unit && *d == dim)
            .map(|(_, _, bound)| bound)
            .collect();
        if along.is_empty() {
            return Expr::Int(1);
        }
        along
            .into_iter()
            .map(|bound| bound.clone().unwrap_or(Expr::Int(default)))
            .reduce(Expr::max)
            .map(|e| simplify(&e))
            .expect("a loop along the dimension")
    };
    let warped = |dim: GpuDim| {
        bounds
            .iter()
            .any(|(u, d, _)| *u == ParallelUnit::GpuWarp && *d == dim)
    };
    let per_dim = |f: &dyn Fn(GpuDim) -> Expr| GpuDim::ALL.map(f);
    Ok(Geometry {
        grid: per_dim(&|d| size(ParallelUnit::GpuBlock, d, defaults.blocks)),
        warps: per_dim(&|d| size(ParallelUnit::GpuWarp, d, defaults.warps)),
        threads: per_dim(&|d| {
            if warped(d) {
                Expr::Int(WARP_SIZE)
            } else {
                size(ParallelUnit::GpuThread, d, defaults.threads)
            }
        }),
    })
}

/// An upper bound on `e` that reads none of `inside`: `e` itself when it reads none,
/// else the bound of either side of a `min` (both, where both have one).
fn host_bound(e: &Expr, inside: &BTreeSet<Var>) -> Option<Expr> {
    let mut reads_inside = false;
    visit::walk_expr(e, &mut |sub| {
        reads_inside |= matches!(sub, Expr::Var(v) if inside.contains(v));
    });
    if !reads_inside {
        return Some(e.clone());
    }
    match e {
        Expr::Bin(BinOp::Min, a, b) => match (host_bound(a, inside), host_bound(b, inside)) {
            (Some(a), Some(b)) => Some(Expr::min(a, b)),
            (Some(bound), None) | (None, Some(bound)) => Some(bound),
            (None, None) => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{
        MemorySpace, OperandId, OperandInfo, OutputMode, ReductionStrategy, Type, ValueType,
    };

    fn gpu_loop(f: &mut Function, unit: ParallelUnit, end: Expr, body: Vec<Stmt>) -> Loop {
        Loop {
            var: f.fresh_var(format!("{unit:?}"), Type::Index),
            start: Expr::Int(0),
            end,
            body,
            kind: LoopKind::Parallel {
                unit,
                mapping: Mapping::Gpu { dim: GpuDim::X },
                reductions: Vec::new(),
                reduce_by: ReductionStrategy::Temporary,
                locals: Vec::new(),
            },
        }
    }

    fn function() -> Function {
        let operands = vec![OperandInfo {
            hint: "y".into(),
            values: ValueType::F64,
        }];
        let output = OutputMode::Dense {
            accumulate: false,
            zeroed_by_kernel: false,
        };
        Function::new(operands, 1, output)
    }

    #[test]
    fn a_host_variable_a_kernel_assigns_is_one_of_its_results() {
        let mut f = function();
        let flag = f.fresh_var("flag", Type::Index);
        let thread = gpu_loop(
            &mut f,
            ParallelUnit::GpuThread,
            Expr::Int(4),
            vec![Stmt::Assign(flag, Expr::Int(1))],
        );
        let block = gpu_loop(
            &mut f,
            ParallelUnit::GpuBlock,
            Expr::Int(2),
            vec![Stmt::For(thread)],
        );
        f.body = vec![Stmt::Decl(flag, Expr::Int(0)), Stmt::For(block)];
        let o = outline(&f, LaunchDefaults::default()).unwrap();
        assert_eq!(o.kernels[0].results, vec![flag]);
        assert!(o.kernels[0].captured.is_empty());
    }

    #[test]
    fn a_thread_loop_outside_blocks_is_refused_and_thread_counts_take_the_largest_loop() {
        let mut f = function();
        let lone = gpu_loop(&mut f, ParallelUnit::GpuThread, Expr::Int(4), vec![]);
        f.body = vec![Stmt::For(lone)];
        let err = outline(&f, LaunchDefaults::default()).unwrap_err();
        assert!(
            err.0
                .contains("GpuThread loop is outside every GpuBlock loop"),
            "{err}"
        );

        // Two thread loops of one block, 8 and `n` iterations, around a barrier; the
        // block's shared scratch stays on the device.
        let n = Expr::Param(ParamRef::Extent(0));
        let store = |v| {
            Stmt::Store(Store {
                array: ArrayRef::Values(OperandId(0)),
                index: Expr::Var(v),
                value: Expr::Float(1.0),
                accumulate: false,
            })
        };
        let mut first = gpu_loop(&mut f, ParallelUnit::GpuThread, Expr::Int(8), vec![]);
        first.body = vec![store(first.var)];
        let second = gpu_loop(&mut f, ParallelUnit::GpuThread, n.clone(), vec![]);
        let shared = f.fresh_scratch("w", crate::ir::LocalType::Value);
        let mut block = gpu_loop(
            &mut f,
            ParallelUnit::GpuBlock,
            Expr::Int(3),
            vec![Stmt::For(first), Stmt::Barrier, Stmt::For(second)],
        );
        if let LoopKind::Parallel { locals, .. } = &mut block.kind {
            locals.push(crate::ir::Local {
                array: shared,
                len: Expr::Int(8),
                space: MemorySpace::Shared,
            });
        }
        f.body = vec![Stmt::For(block)];
        crate::ir::verify(&f).unwrap();
        let o = outline(&f, LaunchDefaults::default()).unwrap();
        let k = &o.kernels[0];
        assert_eq!(k.geometry.grid[0], Expr::Int(3));
        assert_eq!(k.geometry.threads[0], Expr::max(Expr::Int(8), n));
        assert_eq!(k.arrays, vec![ArrayRef::Values(OperandId(0))]);
        assert_eq!(o.inline(), f);
    }
}
