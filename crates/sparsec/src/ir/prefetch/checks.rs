//! Test helpers shared by the prefetch passes' tests: kernels lowered over random
//! operands, and every hint evaluated at every position against its arrays' bounds.

use super::segment_coordinate;
use crate::ir::testing::{self, Decl};
use crate::ir::visit;
use crate::ir::{ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, ParamKind, ParamRef, Stmt, Var};
use crate::tensor::{Coo, Tensor, ValueType};

/// `expr` lowered with the default schedule, its tensors `(name, format, dims)`, and
/// a random tensor of each format (the output's too), built with `seed`.
pub(super) fn lowered(expr: &str, tensors: &[Decl], seed: u64) -> (Function, Vec<Tensor>) {
    let lowered = testing::lowered(expr, tensors);
    let mut state = seed;
    let mut next = |bound: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % bound as u64) as i64
    };
    let operands = lowered
        .operands
        .iter()
        .map(|op| {
            let (_, _, dims) = tensors[op.tensor];
            let mut coo = Coo::new(dims.to_vec(), Vec::new(), Vec::new()).unwrap();
            // About a third of the coordinates, so that some rows are empty.
            let cells: usize = dims.iter().product();
            for _ in 0..cells / 3 {
                coo.coords.extend(dims.iter().map(|&d| next(d)));
                coo.values.push(1.0);
            }
            Tensor::from_coo(&coo, &op.format, ValueType::F64).unwrap()
        })
        .collect();
    (lowered.function, operands)
}

/// Every segment loop with prefetches, and its hints, guarded (rows') or not
/// (elements').
pub(super) fn hinted_loops(f: &Function) -> Vec<(&Loop, Vec<&Stmt>)> {
    let mut out = Vec::new();
    visit::walk_stmts(&f.body, &mut |s| {
        if let Stmt::For(l) = s {
            let hints: Vec<&Stmt> = l
                .body
                .iter()
                .flat_map(|s| match s {
                    Stmt::If(_, hints, _) => hints.iter().collect(),
                    hint => vec![hint],
                })
                .filter(|s| matches!(s, Stmt::Prefetch { .. }))
                .collect();
            if !hints.is_empty() {
                out.push((l, hints));
            }
        }
    });
    out
}

/// The value of a hint's index with the loop's position at `p`, every load checked
/// against its array's bounds (a panic names the first one out of bounds).
pub(super) fn eval(e: &Expr, position: Var, p: i64, operands: &[Tensor]) -> i64 {
    let array = |a: &ArrayRef| -> Vec<i64> {
        match *a {
            ArrayRef::Level {
                operand,
                level,
                kind,
            } => operands[operand.0]
                .view()
                .array(level, kind)
                .expect("a stored array")
                .to_array()
                .to_i64()
                .into_owned(),
            _ => panic!("a hint loads {a:?}"),
        }
    };
    match e {
        Expr::Int(v) => *v,
        Expr::Var(v) if *v == position => p,
        Expr::Param(ParamRef::Length(a)) => array(a).len() as i64,
        Expr::Param(ParamRef::Level {
            operand,
            level,
            kind: ParamKind::Size,
        }) => operands[operand.0].view().param(*level, ParamKind::Size),
        Expr::Load(a, index) => {
            let i = eval(index, position, p, operands);
            let values = array(a);
            assert!(
                (0..values.len() as i64).contains(&i),
                "load {i} of {a:?}, which has {} entries",
                values.len()
            );
            values[i as usize]
        }
        Expr::Bin(op, a, b) => {
            let (a, b) = (
                eval(a, position, p, operands),
                eval(b, position, p, operands),
            );
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                BinOp::Div => a / b,
                BinOp::Rem => a % b,
                _ => panic!("a hint computes {op:?}"),
            }
        }
        _ => panic!("a hint holds {e:?}"),
    }
}

/// Check that every hint of `f`, at every position of every operand's coordinate
/// array, loads in bounds and addresses at most one past its array's end.
pub(super) fn check_in_bounds(f: &Function, operands: &[Tensor]) -> usize {
    let mut checked = 0;
    for (l, hints) in hinted_loops(f) {
        let (_, coords) = segment_coordinate(l).expect("hints only in segment loops");
        let ArrayRef::Level { operand, level, .. } = coords else {
            unreachable!()
        };
        let len = operands[operand.0]
            .view()
            .array(level, ArrayKind::Idx)
            .unwrap()
            .len();
        for hint in hints {
            let Stmt::Prefetch { array, index } = hint else {
                unreachable!()
            };
            let end = match *array {
                ArrayRef::Level {
                    operand,
                    level,
                    kind,
                } => operands[operand.0].view().array(level, kind).unwrap().len(),
                ArrayRef::Values(operand) => operands[operand.0].values().len(),
                ArrayRef::Scratch(_) => panic!("a hint of a scratch array"),
            };
            // At each distance a kernel's versions prefetch at.
            for distance in [super::ELEMENT_DISTANCE, super::FAR_ELEMENT_DISTANCE] {
                let mut index = index.clone();
                crate::ir::visit::walk_expr_mut(&mut index, &mut |e| {
                    if *e == Expr::Param(ParamRef::PrefetchDistance) {
                        *e = Expr::Int(distance);
                    }
                });
                for p in 0..len as i64 {
                    let at = eval(&index, l.var, p, operands);
                    assert!(
                        (0..=end as i64).contains(&at),
                        "{hint:?} at {p}, {distance} ahead: {at} of {end}"
                    );
                    checked += 1;
                }
            }
        }
    }
    checked
}

pub(super) fn hinted_arrays(f: &Function) -> Vec<String> {
    let mut names: Vec<String> = hinted_loops(f)
        .into_iter()
        .flat_map(|(_, hints)| hints)
        .map(|hint| match hint {
            Stmt::Prefetch { array, .. } => format!("{array:?}"),
            _ => unreachable!(),
        })
        .collect();
    names.sort();
    names
}

/// For each case `(expr, tensors, arrays)`, over 20 random operands: `expr` prefetches
/// from exactly `arrays` distinct arrays, and every hint evaluated is in bounds.
pub(super) fn assert_prefetched_in_bounds(cases: &[(&str, &[Decl], usize)]) {
    for &(expr, tensors, expected) in cases {
        for seed in 0..20 {
            let (f, operands) = lowered(expr, tensors, seed);
            let arrays = hinted_arrays(&f);
            let distinct: std::collections::BTreeSet<_> = arrays.iter().collect();
            assert_eq!(distinct.len(), expected, "{expr}: {arrays:?}");
            assert!(
                check_in_bounds(&f, &operands) > 0,
                "{expr}: no hint evaluated"
            );
        }
    }
}
