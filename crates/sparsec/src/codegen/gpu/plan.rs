//! The plan of a device kernel: its arguments, in order, and how its units map to
//! groups; and what the mapping cannot run, refused naming it.

use super::{Dialect, EmitRoom, KernelArg, KernelPlan};
use crate::codegen::abi::BackendError;
use crate::ir::outline::DeviceKernel;
use std::collections::BTreeSet;

use crate::ir::{
    visit, ArrayRef, Expr, GpuDim, Local, Loop, LoopKind, Mapping, MemorySpace, Names,
    ParallelUnit, Reduction, Scratch, Stmt, Var,
};

/// The arguments of kernel `n` and its group mapping; what the mapping cannot run is
/// refused, naming `dialect`'s target.
pub fn plan(
    names: &Names,
    kernel: &DeviceKernel,
    n: usize,
    dialect: &dyn Dialect,
) -> Result<KernelPlan, BackendError> {
    let refuse = |reason: &str| BackendError {
        backend: dialect.target(),
        reason: reason.to_string(),
    };
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
        return Err(refuse(&reason));
    }
    if warp_dim.is_some() && block_shared {
        return Err(refuse(
            "a block's warps share local memory, and this target runs each warp as a group of \
             its own (OpenCL 1.2 devices need not have sub-groups)",
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
            return Err(refuse(&format!(
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
    // Scratch a kernel never touches (a phase that only counts needs no values; the
    // device's ordering of touched lists needs no bitmap) is neither allocated nor
    // declared.
    let touched = touched_scratch(&stmts);
    for (_, local) in locals
        .into_iter()
        .filter(|(_, l)| touched.contains(&l.array))
    {
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
    // A warp's sums go through shuffles where the dialect has them.
    let shuffled = warp_dim.is_some()
        && dialect
            .warp_reduce("v", 32, &|a, b| format!("{a} + {b}"))
            .is_some();
    if combines && !shuffled {
        args.push(KernelArg::Combine);
    }
    if let Some(d) = warp_dim {
        args.push(KernelArg::Warps(d));
    }
    let mut emits = false;
    visit::walk_stmts(&stmts, &mut |s| emits |= matches!(s, Stmt::Emit { .. }));
    if emits {
        args.extend(EmitRoom::ALL.map(KernelArg::Emitted));
    }
    Ok(KernelPlan {
        name: format!("sparsec_kernel_{n}"),
        args,
        warp_dim,
    })
}

/// The scratch arrays `stmts` read or write (as the GPU printer spells them: a touched
/// list is ordered through its list and flags alone).
fn touched_scratch(stmts: &[Stmt]) -> BTreeSet<Scratch> {
    let mut touched = BTreeSet::new();
    visit::walk_stmts(stmts, &mut |s| match s {
        Stmt::Store(store) => {
            if let ArrayRef::Scratch(a) = store.array {
                touched.insert(a);
            }
        }
        Stmt::OrderTouched { list, flags, .. } => {
            touched.extend([*list, *flags]);
        }
        _ => {}
    });
    visit::walk_stmt_exprs(stmts, &mut |e| {
        if let Expr::Load(ArrayRef::Scratch(a), _) = e {
            touched.insert(*a);
        }
    });
    touched
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
        for body in visit::children(s) {
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
                for body in visit::children(s) {
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
                    for body in visit::children(s) {
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
