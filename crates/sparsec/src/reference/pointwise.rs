//! Operands combined entry by entry: the arithmetic operators and the element-wise
//! functions, each listed wherever one of its operands is, with the structural zeros and
//! fill that the kernels' lattices give it.

use crate::notation::ast::{MathFn, Op};
use crate::notation::cin::{Statement, VarId};

use super::{for_each_point, join, positions, Func, Key, Map, Pair};

pub(super) fn binary(op: Op, a: Func, b: Func, stmt: &Statement) -> Func {
    // An unlisted factor of a product, or an unlisted numerator, is a zero that the
    // kernels skip: the result is zero there whatever the other operand holds.
    let a_zeroes = a.structural && matches!(op, Op::Mul | Op::Div);
    let b_zeroes = b.structural && op == Op::Mul;
    let structural = a_zeroes || b_zeroes || (a.structural && b.structural);
    let fill = if structural {
        Pair::ZERO
    } else {
        Pair::apply(op, a.fill, b.fill)
    };
    if a_zeroes && b_zeroes {
        let mut vars = a.vars.clone();
        vars.extend(b.vars.iter().filter(|v| !a.vars.contains(v)));
        let b_pos = positions(&b.vars, &vars);
        let entries = join(&a, &b, &vars, &b_pos, None, stmt);
        return Func {
            vars,
            entries,
            fill,
            structural,
        }
        .normalized();
    }
    let (a_structural, b_structural) = (a.structural, b.structural);
    let (a_fill, b_fill) = (a.fill, b.fill);
    let value = move |xs: &[Option<Pair>]| match (op, xs[0], xs[1]) {
        // An absent term leaves the other as it is (`x + absent` is `x`, even for
        // x = -0, and `absent - x` is `-x`, not `0 - x`), as the kernels drop it.
        (Op::Add | Op::Sub, Some(x), None) if b_structural => x,
        (Op::Add, None, Some(y)) if a_structural => y,
        (Op::Sub, None, Some(y)) if a_structural => y.negated(),
        (op, x, y) => Pair::apply(op, x.unwrap_or(a_fill), y.unwrap_or(b_fill)),
    };
    merge(
        &[a, b],
        &[!b_zeroes, !a_zeroes],
        fill,
        structural,
        value,
        stmt,
    )
}

/// `value` of the operands wherever one of those `from` marks lists an entry, `fill`
/// elsewhere: each listed entry covers every coordinate of the variables only the other
/// operands have. `value` gets None for an operand that lists nothing there.
fn merge(
    args: &[Func],
    from: &[bool],
    fill: Pair,
    structural: bool,
    value: impl Fn(&[Option<Pair>]) -> Pair,
    stmt: &Statement,
) -> Func {
    let mut vars: Vec<VarId> = Vec::new();
    for a in args {
        vars.extend(
            a.vars
                .iter()
                .filter(|v| !vars.contains(v))
                .collect::<Vec<_>>(),
        );
    }
    let at: Vec<Vec<usize>> = args.iter().map(|a| positions(&a.vars, &vars)).collect();
    let size = |v: &VarId| stmt.vars[*v].size;
    let mut entries = Map::default();
    let mut key = vec![0usize; vars.len()];
    let mut found: Vec<Option<Pair>> = vec![None; args.len()];
    for (k, a) in args.iter().enumerate().filter(|(k, _)| from[*k]) {
        let others: Vec<usize> = (0..vars.len()).filter(|m| !at[k].contains(m)).collect();
        let extra: Vec<usize> = others.iter().map(|&m| size(&vars[m])).collect();
        for (ak, &ax) in &a.entries {
            at[k].iter().zip(ak).for_each(|(&m, &c)| key[m] = c);
            for_each_point(&extra, |p| {
                others.iter().zip(p).for_each(|(&m, &c)| key[m] = c);
                for (n, b) in args.iter().enumerate() {
                    found[n] = if n == k {
                        Some(ax)
                    } else {
                        let own: Key = at[n].iter().map(|&m| key[m]).collect();
                        b.entries.get(own.as_slice()).copied()
                    };
                }
                entries.insert(Key::from_slice(&key), value(&found));
            });
        }
    }
    Func {
        vars,
        entries,
        fill,
        structural,
    }
    .normalized()
}

/// `f` of the functions `args`, entry by entry. A function with `f(0, ..., 0) = 0` keeps
/// the structural zeros where every argument has one; any other is applied to them too
/// (the kernels apply it to the zero of an absent entry), so its result has a fill.
pub(super) fn math(f: MathFn, args: Vec<Func>, stmt: &Statement) -> Func {
    let fills: Vec<Pair> = args.iter().map(|a| a.fill).collect();
    let at = move |xs: &[Option<Pair>]| {
        let values: Vec<f64> = xs
            .iter()
            .zip(&fills)
            .map(|(x, fill)| x.unwrap_or(*fill).value)
            .collect();
        let value = f.eval(&values);
        // Rounding in the arguments carries through the function: scale their
        // magnitudes by the result's (`pattern` reads no value: its 1 is exact).
        let spread: f64 = xs
            .iter()
            .zip(&fills)
            .filter(|_| f != MathFn::Pattern)
            .map(|(x, fill)| x.unwrap_or(*fill).magnitude)
            .sum();
        Pair {
            value,
            magnitude: value.abs() * (1.0 + spread) + spread,
        }
    };
    let structural = f.keeps_zero() && args.iter().all(|a| a.structural);
    let fill = if structural {
        Pair::ZERO
    } else {
        at(&vec![None; args.len()])
    };
    merge(&args, &vec![true; args.len()], fill, structural, at, stmt)
}
