//! SIMD lanes for the loops lowering found independent ([`Function::lane_loops`]): each
//! iteration writes its own element of a dense output and loops over nothing (sliced
//! ELL's blocks of rows). gcc vectorises such a loop of a few trips only when told, as it
//! unrolls it first and cannot then gather; a CPU target's pass tells it, and other
//! targets run the loops as they are.

use super::visit;
use super::{Expr, Function, Loop, LoopKind, Mapping, OmpSchedule, ParallelUnit};
use super::{ReductionStrategy, Stmt};

/// Run every serial loop of a constant trip count over one of `function`'s lane loops'
/// variables in SIMD lanes.
pub fn vectorise_lane_loops(function: &mut Function) {
    if function.lane_loops.is_empty() {
        return;
    }
    let lanes = function.lane_loops.clone();
    visit_loops(&mut function.body, &mut |l| {
        if lanes.contains(&l.var) && l.kind == LoopKind::Serial && matches!(l.end, Expr::Int(_)) {
            l.kind = LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                mapping: Mapping::Cpu {
                    schedule: OmpSchedule::Static,
                    chunk: 0,
                },
                reductions: Vec::new(),
                reduce_by: ReductionStrategy::ParallelReduction,
                locals: Vec::new(),
            };
        }
    });
}

fn visit_loops(stmts: &mut [Stmt], f: &mut impl FnMut(&mut Loop)) {
    for s in stmts {
        if let Stmt::For(l) = s {
            f(l);
        }
        for body in visit::children_mut(s) {
            visit_loops(body, f);
        }
    }
}
