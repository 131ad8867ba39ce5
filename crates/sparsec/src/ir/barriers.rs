//! Barriers between the statements of a GPU block that share its memory.
//!
//! Inside a `GpuBlock` loop but outside its thread loops, every thread of the block runs
//! the same statements (zeroing a workspace, a serial loop around thread loops); the
//! threads run them at their own pace. Where such statements, or the thread loops among
//! them, read or write a scratch array in the block's shared memory, a thread could
//! otherwise reach the next statement while another still writes what it reads, or
//! overwrite what another still reads. [`insert_barriers`] puts a [`Stmt::Barrier`] after
//! each of them: conservative (a barrier costs far less than the block's memory traffic),
//! and a no-op for functions without shared memory, so lowering runs it on every function.

use std::collections::BTreeSet;

use super::{
    visit, ArrayRef, Expr, Function, Loop, LoopKind, MemorySpace, ParallelUnit, Scratch, Stmt,
};

/// Insert a barrier after every statement of a block's shared code that touches the
/// block's shared memory.
pub fn insert_barriers(function: &mut Function) {
    let mut shared = BTreeSet::new();
    visit::walk_stmts(&function.body, &mut |s| {
        if let Stmt::For(Loop {
            kind: LoopKind::Parallel { locals, .. },
            ..
        }) = s
        {
            shared.extend(
                locals
                    .iter()
                    .filter(|l| l.space == MemorySpace::Shared)
                    .map(|l| l.array),
            );
        }
    });
    if !shared.is_empty() {
        in_host_code(&mut function.body, &shared);
    }
}

/// Statements outside every block loop: find the block loops.
fn in_host_code(stmts: &mut [Stmt], shared: &BTreeSet<Scratch>) {
    for s in stmts {
        match s {
            Stmt::For(Loop {
                kind:
                    LoopKind::Parallel {
                        unit: ParallelUnit::GpuBlock,
                        ..
                    },
                body,
                ..
            }) => in_block_code(body, shared),
            _ => {
                for body in visit::children_mut(s) {
                    in_host_code(body, shared);
                }
            }
        }
    }
}

/// Statements every thread of a block runs: a barrier after each that touches shared
/// memory, and the same inside the serial statements among them.
fn in_block_code(stmts: &mut Vec<Stmt>, shared: &BTreeSet<Scratch>) {
    let mut out = Vec::with_capacity(stmts.len());
    for mut s in std::mem::take(stmts) {
        match &mut s {
            // A nested block loop (another grid dimension) is block code too; the threads
            // of warp and thread loops run their bodies apart.
            Stmt::For(Loop {
                kind:
                    LoopKind::Parallel {
                        unit: ParallelUnit::GpuBlock,
                        ..
                    },
                body,
                ..
            }) => in_block_code(body, shared),
            Stmt::For(Loop {
                kind: LoopKind::Parallel { .. },
                ..
            }) => {}
            Stmt::For(Loop { body, .. }) | Stmt::While(_, body) | Stmt::Block(body) => {
                in_block_code(body, shared)
            }
            Stmt::If(_, then, otherwise) => {
                in_block_code(then, shared);
                in_block_code(otherwise, shared);
            }
            _ => {}
        }
        let touches = touches_shared(&s, shared);
        out.push(s);
        if touches {
            out.push(Stmt::Barrier);
        }
    }
    *stmts = out;
}

fn touches_shared(s: &Stmt, shared: &BTreeSet<Scratch>) -> bool {
    let is_shared = |a: &ArrayRef| matches!(a, ArrayRef::Scratch(x) if shared.contains(x));
    let stmts = std::slice::from_ref(s);
    let mut touches = false;
    visit::walk_stmt_exprs(stmts, &mut |e| {
        touches |= matches!(e, Expr::Load(a, _) | Expr::Call(_, a, _) if is_shared(a));
    });
    visit::walk_stmts(stmts, &mut |s| match s {
        Stmt::Store(store) => touches |= is_shared(&store.array),
        Stmt::OrderTouched {
            list, flags, marks, ..
        } => touches |= [list, flags, marks].into_iter().any(|x| shared.contains(x)),
        _ => {}
    });
    touches
}
