//! CPU thread loops mapped to GPU blocks and threads, for front ends whose programs say
//! only that a loop's iterations are independent (the sparse polyhedral `parallel;` and
//! `wavefront;`), not how a GPU should run them.
//!
//! Each outermost `CpuThread` loop becomes a `GpuBlock` loop over chunks of
//! [`THREADS_PER_BLOCK`] iterations with a `GpuThread` loop over each chunk's iterations,
//! along `x`; the loop's sums go to both (blocks' partial sums, then the threads'), its
//! per-thread scratch becomes per-GPU-thread scratch, and SIMD loops inside run serially.
//! A serial loop around it (a wavefront's levels, a team loop on the CPU) then launches a
//! kernel per iteration.

use super::{
    simplify, visit, BinOp, Expr, Function, GpuDim, Local, Loop, LoopKind, Mapping, MemorySpace,
    ParallelUnit, ReductionStrategy, Stmt, Type,
};

/// The iterations of a mapped loop that one block runs, one per GPU thread.
pub const THREADS_PER_BLOCK: i64 = 256;

/// Map every outermost `CpuThread` loop of `function` to GPU blocks and threads; an error
/// says what a GPU loop cannot do (emit entries).
pub fn threads_to_gpu(function: &mut Function) -> Result<(), String> {
    let mut body = std::mem::take(&mut function.body);
    let mapped = map(function, &mut body);
    function.body = body;
    mapped
}

fn map(function: &mut Function, stmts: &mut [Stmt]) -> Result<(), String> {
    for s in stmts.iter_mut() {
        if let Stmt::For(
            l @ Loop {
                kind:
                    LoopKind::Parallel {
                        unit: ParallelUnit::CpuThread,
                        ..
                    },
                ..
            },
        ) = s
        {
            let nest = gpu_nest(function, l)?;
            *s = nest;
            continue;
        }
        // A team of CPU threads has no meaning on the device: its loop runs on the host,
        // launching its thread loops.
        if let Stmt::For(
            l @ Loop {
                kind: LoopKind::Team { .. },
                ..
            },
        ) = s
        {
            l.kind = LoopKind::Serial;
        }
        for body in visit::children_mut(s) {
            map(function, body)?;
        }
    }
    Ok(())
}

fn gpu_nest(function: &mut Function, l: &Loop) -> Result<Stmt, String> {
    let LoopKind::Parallel {
        reductions, locals, ..
    } = &l.kind
    else {
        unreachable!("a CPU thread loop")
    };
    let mut emits = false;
    visit::walk_stmts(&l.body, &mut |s| emits |= matches!(s, Stmt::Emit { .. }));
    if emits {
        return Err(format!(
            "parallel loop `{}` appends output entries, which GPU threads cannot; store the \
             output dense",
            function.var(l.var).hint
        ));
    }
    let hint = function.var(l.var).hint.clone();
    let block = function.fresh_var(format!("{hint}_block"), Type::Index);
    let thread = function.fresh_var(format!("{hint}_thread"), Type::Index);
    let chunk = Expr::Int(THREADS_PER_BLOCK);
    let trips = simplify(&(l.end.clone() - l.start.clone()));
    let blocks = simplify(&Expr::bin(
        BinOp::Div,
        trips.clone() + Expr::Int(THREADS_PER_BLOCK - 1),
        chunk.clone(),
    ));
    let in_block = simplify(&Expr::min(
        chunk.clone(),
        trips - Expr::bin(BinOp::Mul, Expr::Var(block), chunk.clone()),
    ));
    let index = simplify(
        &(l.start.clone() + Expr::bin(BinOp::Mul, Expr::Var(block), chunk) + Expr::Var(thread)),
    );
    let mut body = vec![Stmt::Decl(l.var, index)];
    body.extend(l.body.iter().cloned());
    serial_lanes(&mut body);
    let gpu = |unit, reduce_by, locals| LoopKind::Parallel {
        unit,
        mapping: Mapping::Gpu { dim: GpuDim::X },
        reductions: reductions.clone(),
        reduce_by,
        locals,
    };
    let private: Vec<Local> = locals
        .iter()
        .map(|local| Local {
            space: MemorySpace::Private,
            ..local.clone()
        })
        .collect();
    let threads = Loop {
        var: thread,
        start: Expr::Int(0),
        end: in_block,
        body,
        kind: gpu(
            ParallelUnit::GpuThread,
            ReductionStrategy::ParallelReduction,
            private,
        ),
    };
    Ok(Stmt::For(Loop {
        var: block,
        start: Expr::Int(0),
        end: blocks,
        body: vec![Stmt::For(threads)],
        kind: gpu(
            ParallelUnit::GpuBlock,
            ReductionStrategy::Temporary,
            Vec::new(),
        ),
    }))
}

/// SIMD loops inside a GPU thread run serially.
fn serial_lanes(stmts: &mut [Stmt]) {
    for s in stmts.iter_mut() {
        if let Stmt::For(
            l @ Loop {
                kind:
                    LoopKind::Parallel {
                        unit: ParallelUnit::CpuVector,
                        ..
                    },
                ..
            },
        ) = s
        {
            l.kind = LoopKind::Serial;
        }
        for body in visit::children_mut(s) {
            serial_lanes(body);
        }
    }
}
