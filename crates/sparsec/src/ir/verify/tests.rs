//! The verifier's cases: well-formed functions pass, and each rule's breach is caught.

use super::*;
use crate::ir::{Local, OperandId, OperandInfo, OutputMode, Symbol, ValueType};

fn function() -> Function {
    let operands = vec![
        OperandInfo {
            hint: "y".into(),
            values: ValueType::F64,
        },
        OperandInfo {
            hint: "x".into(),
            values: ValueType::F64,
        },
    ];
    Function::new(
        operands,
        1,
        OutputMode::Dense {
            accumulate: false,
            zeroed_by_kernel: false,
        },
    )
}

/// `for i in 0..n { y[i] = x[i] }`, checked by the verifier after `edit`.
fn verify_loop(edit: impl FnOnce(&mut Function, Var) -> Vec<Stmt>) -> Result<(), VerifyError> {
    let mut f = function();
    let i = f.fresh_var("i", Type::Index);
    let body = edit(&mut f, i);
    f.body = vec![Stmt::For(Loop {
        var: i,
        start: Expr::Int(0),
        end: Expr::Param(crate::ir::ParamRef::Extent(0)),
        body,
        kind: LoopKind::Serial,
    })];
    verify(&f)
}

fn copy(i: Var) -> Stmt {
    Stmt::Store(Store {
        array: ArrayRef::Values(OperandId(0)),
        index: Expr::Var(i),
        value: Expr::load(ArrayRef::Values(OperandId(1)), Expr::Var(i)),
        accumulate: false,
    })
}

#[test]
fn a_well_formed_loop_passes() {
    assert_eq!(verify_loop(|_, i| vec![copy(i)]), Ok(()));
}

#[test]
fn use_before_declaration_is_caught() {
    let err = verify_loop(|f, i| {
        let t = f.fresh_var("t", Type::Index);
        vec![Stmt::Assign(t, Expr::Var(i)), copy(i)]
    })
    .unwrap_err();
    assert!(
        err.0.contains("`t`") && err.0.contains("not declared"),
        "{err}"
    );
}

#[test]
fn a_variable_declared_twice_on_one_path_is_caught() {
    let err = verify_loop(|_, i| vec![Stmt::Decl(i, Expr::Int(0))]).unwrap_err();
    assert!(err.0.contains("declared again"), "{err}");
    // Declaring it in two sibling scopes is fine.
    assert_eq!(
        verify_loop(|f, i| {
            let p = f.fresh_var("p", Type::Index);
            vec![
                Stmt::If(Expr::Bool(true), vec![Stmt::Decl(p, Expr::Var(i))], vec![]),
                Stmt::If(Expr::Bool(true), vec![Stmt::Decl(p, Expr::Var(i))], vec![]),
            ]
        }),
        Ok(())
    );
}

#[test]
fn a_variable_out_of_its_scope_is_caught() {
    let err = verify_loop(|f, i| {
        let p = f.fresh_var("p", Type::Index);
        vec![
            Stmt::If(Expr::Bool(true), vec![Stmt::Decl(p, Expr::Var(i))], vec![]),
            Stmt::Assign(p, Expr::Int(1)),
        ]
    })
    .unwrap_err();
    assert!(err.0.contains("not declared"), "{err}");
}

#[test]
fn types_must_match() {
    let err = verify_loop(|f, _| {
        let flag = f.fresh_var("flag", Type::Bool);
        vec![Stmt::Decl(flag, Expr::Float(1.5))]
    })
    .unwrap_err();
    assert!(err.0.contains("type"), "{err}");
    let err = verify_loop(|f, _| {
        let k = f.fresh_var("k", Type::Value(ValueType::F64));
        vec![Stmt::For(Loop {
            var: k,
            start: Expr::Int(0),
            end: Expr::Int(3),
            body: vec![],
            kind: LoopKind::Serial,
        })]
    })
    .unwrap_err();
    assert!(err.0.contains("not an index"), "{err}");
}

#[test]
fn scratch_arrays_must_be_allocated_around_their_use() {
    let mut f = function();
    let w = f.fresh_scratch("w", LocalType::Value);
    let store = Stmt::Store(Store {
        array: ArrayRef::Scratch(w),
        index: Expr::Int(0),
        value: Expr::Float(1.0),
        accumulate: true,
    });
    f.body = vec![store];
    assert!(verify(&f).unwrap_err().0.contains("not allocated"));
    f.locals.push(Local {
        array: w,
        len: Expr::Int(1),
        space: MemorySpace::Global,
    });
    assert_eq!(verify(&f), Ok(()));
}

#[test]
fn unresolved_symbols_and_unknown_operands_are_caught() {
    let err = verify_loop(|_, i| {
        vec![Stmt::Store(Store {
            array: ArrayRef::Values(OperandId(0)),
            index: Expr::Symbol(Symbol::SegmentLength { var: 0 }),
            value: Expr::Var(i),
            accumulate: false,
        })]
    })
    .unwrap_err();
    assert!(err.0.contains("not resolved"), "{err}");
    let err = verify_loop(|_, i| {
        vec![Stmt::Store(Store {
            array: ArrayRef::Values(OperandId(7)),
            index: Expr::Var(i),
            value: Expr::Float(0.0),
            accumulate: false,
        })]
    })
    .unwrap_err();
    assert!(err.0.contains("operand #7"), "{err}");
}

#[test]
fn emits_match_the_output() {
    let mut f = function();
    f.output = OutputMode::Emit { order: 2 };
    f.body = vec![Stmt::Emit {
        coords: vec![Expr::Int(0)],
        value: Expr::Float(1.0),
    }];
    assert!(verify(&f).unwrap_err().0.contains("order 2"));
}

/// A loop over `0..4` on `unit` (mapped along x on a GPU), allocating `locals`.
fn parallel(f: &mut Function, unit: ParallelUnit, body: Vec<Stmt>, locals: Vec<Local>) -> Stmt {
    let mapping = if unit.is_gpu() {
        Mapping::Gpu {
            dim: crate::ir::GpuDim::X,
        }
    } else {
        Mapping::Cpu {
            schedule: crate::ir::OmpSchedule::Static,
            chunk: 1,
        }
    };
    Stmt::For(Loop {
        var: f.fresh_var("p", Type::Index),
        start: Expr::Int(0),
        end: Expr::Int(4),
        body,
        kind: LoopKind::Parallel {
            unit,
            mapping,
            reductions: Vec::new(),
            reduce_by: crate::ir::ReductionStrategy::Temporary,
            locals,
        },
    })
}

fn check(f: &mut Function, body: Vec<Stmt>) -> Result<(), VerifyError> {
    f.body = body;
    verify(f)
}

#[test]
fn gpu_loops_nest_block_warp_thread_with_barriers_between_thread_loops() {
    use ParallelUnit::*;
    let mut f = function();
    let threads = parallel(&mut f, GpuThread, vec![], vec![]);
    let more = parallel(&mut f, GpuThread, vec![], vec![]);
    let warp = parallel(&mut f, GpuWarp, vec![threads.clone()], vec![]);
    let block = parallel(
        &mut f,
        GpuBlock,
        vec![threads.clone(), Stmt::Barrier, more, warp],
        vec![],
    );
    assert_eq!(check(&mut f, vec![block]), Ok(()));

    let lone = parallel(&mut f, GpuThread, vec![], vec![]);
    let err = check(&mut f, vec![lone]).unwrap_err();
    assert!(
        err.0.contains("GpuThread loop outside every GpuBlock loop"),
        "{err}"
    );
    let empty = parallel(&mut f, GpuBlock, vec![], vec![]);
    let err = check(&mut f, vec![empty]).unwrap_err();
    assert!(err.0.contains("holds no GpuThread loop"), "{err}");
    let warp = parallel(&mut f, GpuWarp, vec![], vec![]);
    let thread = parallel(&mut f, GpuThread, vec![warp], vec![]);
    let block = parallel(&mut f, GpuBlock, vec![thread], vec![]);
    let err = check(&mut f, vec![block]).unwrap_err();
    assert!(
        err.0.contains("GpuWarp loop inside a GpuThread loop"),
        "{err}"
    );
    let cpu = parallel(&mut f, CpuThread, vec![], vec![]);
    let thread = parallel(&mut f, GpuThread, vec![cpu], vec![]);
    let block = parallel(&mut f, GpuBlock, vec![thread], vec![]);
    let err = check(&mut f, vec![block]).unwrap_err();
    assert!(
        err.0.contains("CpuThread loop inside a GpuBlock loop"),
        "{err}"
    );
}

#[test]
fn mappings_barriers_and_memory_spaces_suit_their_units_and_gpu_loops_emit() {
    use ParallelUnit::*;
    let mut f = function();
    let mut mismatched = parallel(&mut f, CpuThread, vec![], vec![]);
    if let Stmt::For(Loop {
        kind: LoopKind::Parallel { mapping, .. },
        ..
    }) = &mut mismatched
    {
        *mapping = Mapping::Gpu {
            dim: crate::ir::GpuDim::Y,
        };
    }
    let err = check(&mut f, vec![mismatched]).unwrap_err();
    assert!(err.0.contains("CpuThread loop is mapped as Gpu"), "{err}");

    let err = check(&mut f, vec![Stmt::Barrier]).unwrap_err();
    assert!(
        err.0
            .contains("barrier whose innermost parallel loop is None"),
        "{err}"
    );
    let thread = parallel(&mut f, GpuThread, vec![Stmt::Barrier], vec![]);
    let block = parallel(&mut f, GpuBlock, vec![thread], vec![]);
    let err = check(&mut f, vec![block]).unwrap_err();
    assert!(
        err.0.contains("Some(GpuThread), not a GpuBlock loop"),
        "{err}"
    );

    let mut emitting = function();
    emitting.output = OutputMode::Emit { order: 1 };
    let emit = Stmt::Emit {
        coords: vec![Expr::Int(0)],
        value: Expr::Float(1.0),
    };
    let thread = parallel(&mut emitting, GpuThread, vec![emit], vec![]);
    let block = parallel(&mut emitting, GpuBlock, vec![thread], vec![]);
    // Its entries take slots of the room the launcher allocates.
    assert_eq!(check(&mut emitting, vec![block]), Ok(()));

    let w = f.fresh_scratch("w", LocalType::Value);
    let local = |space| Local {
        array: w,
        len: Expr::Int(4),
        space,
    };
    let thread = parallel(&mut f, GpuThread, vec![], vec![local(MemorySpace::Private)]);
    let block = parallel(
        &mut f,
        GpuBlock,
        vec![thread],
        vec![local(MemorySpace::Shared)],
    );
    assert_eq!(check(&mut f, vec![block]), Ok(()));
    let cpu = parallel(&mut f, CpuThread, vec![], vec![local(MemorySpace::Shared)]);
    let err = check(&mut f, vec![cpu]).unwrap_err();
    assert!(err.0.contains("is in Shared memory, not Thread"), "{err}");
    f.locals = vec![local(MemorySpace::Private)];
    let err = check(&mut f, vec![]).unwrap_err();
    assert!(err.0.contains("in Private memory, not Global"), "{err}");
}

#[test]
fn assumptions_read_scalars_only() {
    let mut f = function();
    let n = Expr::Param(crate::ir::ParamRef::Extent(0));
    f.assumptions = vec![(Expr::lt(Expr::Int(0), n), "n is positive".into())];
    assert_eq!(verify(&f), Ok(()));
    let first = Expr::load(ArrayRef::Values(OperandId(1)), Expr::Int(0));
    f.assumptions = vec![(Expr::lt(Expr::Float(0.0), first), "x[0] is positive".into())];
    let err = verify(&f).unwrap_err();
    assert!(
        err.0.contains("\"x[0] is positive\" reads an array"),
        "{err}"
    );
}

/// A team loop around `body`: `for l in 0..4` sharing 4 of 4 units.
fn team(f: &mut Function, body: Vec<Stmt>) -> Stmt {
    Stmt::For(Loop {
        var: f.fresh_var("l", Type::Index),
        start: Expr::Int(0),
        end: Expr::Int(4),
        body,
        kind: LoopKind::Team {
            work: Expr::Int(4),
            all: Expr::Int(4),
        },
    })
}

#[test]
fn team_loops_share_thread_loops_reached_by_every_thread() {
    use ParallelUnit::*;
    let mut f = function();
    let threads = parallel(&mut f, CpuThread, vec![], vec![]);
    let lanes = parallel(&mut f, CpuVector, vec![], vec![]);
    let branch = Stmt::If(Expr::Bool(true), vec![threads.clone()], vec![lanes.clone()]);
    let sweep = team(&mut f, vec![threads.clone(), Stmt::Block(vec![branch])]);
    assert_eq!(check(&mut f, vec![sweep]), Ok(()));

    // One thread runs a serial loop's body: a thread loop there would run on it alone.
    let serial = Stmt::For(Loop {
        var: f.fresh_var("k", Type::Index),
        start: Expr::Int(0),
        end: Expr::Int(2),
        body: vec![threads.clone()],
        kind: LoopKind::Serial,
    });
    let sweep = team(&mut f, vec![serial]);
    let err = check(&mut f, vec![sweep]).unwrap_err();
    assert!(
        err.0.contains("inside a statement that one thread runs"),
        "{err}"
    );
    let inner = team(&mut f, vec![threads.clone()]);
    let sweep = team(&mut f, vec![inner.clone()]);
    let err = check(&mut f, vec![sweep]).unwrap_err();
    assert!(err.0.contains("a team loop inside a team loop"), "{err}");
    let outer = parallel(&mut f, CpuThread, vec![inner], vec![]);
    let err = check(&mut f, vec![outer]).unwrap_err();
    assert!(
        err.0.contains("a team loop inside a CpuThread loop"),
        "{err}"
    );
    let scratch = f.fresh_scratch("w", crate::ir::LocalType::Index);
    let local = Local {
        array: scratch,
        len: Expr::Int(4),
        space: MemorySpace::Thread,
    };
    let with_scratch = parallel(&mut f, CpuThread, vec![], vec![local]);
    let sweep = team(&mut f, vec![with_scratch]);
    let err = check(&mut f, vec![sweep]).unwrap_err();
    assert!(err.0.contains("sums, scratch arrays or emits"), "{err}");
    let block = parallel(&mut f, GpuThread, vec![], vec![]);
    let block = parallel(&mut f, GpuBlock, vec![block], vec![]);
    let sweep = team(&mut f, vec![block]);
    assert!(check(&mut f, vec![sweep]).is_err());
}
