//! The reference over a semiring other than `(+, *)` ([`crate::notation::semiring`]),
//! written from the semantics rather than from lowering: every subexpression is the set of
//! its present entries. An access is present where its tensor stores an entry (explicit
//! zeros included); `a * b` (⊗) where both are, `a + b` (⊕) where either is (the present
//! one alone); a reduction combines its present terms with ⊕. A mask's condition is
//! computed arithmetically and selects: the masked value is present where it holds, and
//! nothing where it is zero. The output holds ⊕'s identity where nothing is present when
//! it is dense, and stores nothing there when it is sparse.

use std::collections::HashMap;

use super::{csf_tensor, for_each_point, AccessKeys};
use crate::notation::ast::Op;
use crate::notation::cin::{CExpr, Statement, VarId};
use crate::notation::semiring::Semiring;
use crate::tensor::{Tensor, Values};

/// Present entries over `vars`, keyed by their values in order.
struct Entries {
    vars: Vec<VarId>,
    map: HashMap<Vec<usize>, f64>,
}

struct Cx<'a> {
    stmt: &'a Statement,
    inputs: &'a [&'a Tensor],
    semiring: Semiring,
}

/// The statement's result, as [`super::evaluate`] documents for `(+, *)`: all-dense
/// (row-major, ⊕'s identity where nothing is present) for an all-dense output, else a
/// `csf` tensor of the present entries; under `+=`, combined with `output_init` by ⊕.
pub(super) fn evaluate(
    stmt: &Statement,
    inputs: &[&Tensor],
    output_init: Option<&Tensor>,
) -> Tensor {
    let cx = Cx {
        stmt,
        inputs,
        semiring: stmt.semiring.clone(),
    };
    // A reduction ranges over the whole product around it, as the kernels' loops do: with
    // an ⊗ that does not distribute over ⊕ (`pair`), `sum_i (L(i,j) * L(i,k)) * L(j,k)`
    // is another number.
    let rhs = eval(&super::distribute_reductions(&stmt.rhs), &cx);
    let add = &stmt.semiring.add;
    let dims = &stmt.tensors[0].dims;
    let order = dims.len();
    // Every present entry at each output coordinate it covers (variables of the output
    // that the right-hand side does not use range over their whole dimension).
    let from_rhs: Vec<Option<usize>> = stmt
        .lhs
        .iter()
        .map(|v| rhs.vars.iter().position(|w| w == v))
        .collect();
    let missing: Vec<usize> = (0..order).filter(|&m| from_rhs[m].is_none()).collect();
    let missing_sizes: Vec<usize> = missing.iter().map(|&m| dims[m]).collect();
    let mut out: HashMap<Vec<usize>, f64> = HashMap::new();
    for (key, &x) in &rhs.map {
        let mut c: Vec<usize> = from_rhs.iter().map(|j| j.map_or(0, |j| key[j])).collect();
        for_each_point(&missing_sizes, |p| {
            missing.iter().zip(p).for_each(|(&m, &x)| c[m] = x);
            out.insert(c.clone(), x);
        });
    }
    if let Some(init) = output_init.filter(|_| stmt.accumulate) {
        init.for_each_stored(|c, old| {
            let c: Vec<usize> = c.iter().map(|&c| c as usize).collect();
            let combined = match out.get(&c) {
                Some(&x) => add.apply(old, x),
                None => old,
            };
            out.insert(c, combined);
        });
    }
    if stmt.tensors[0].format.is_all_dense() || order == 0 {
        let mut values = vec![add.identity(); dims.iter().product()];
        for (c, x) in out {
            let flat = c.iter().zip(dims).fold(0, |acc, (&c, &d)| acc * d + c);
            values[flat] = x;
        }
        let mut result = Tensor::from_dense_values(dims, Values::F64(values))
            .expect("as many values as components");
        result.set_fill(add.identity());
        return result;
    }
    // A coordinate without an entry is absent: ⊕'s identity.
    let mut result = csf_tensor(dims, out);
    result.set_fill(add.identity());
    result
}

fn eval(e: &CExpr, cx: &Cx) -> Entries {
    match e {
        CExpr::Access(a) => {
            let tensor = cx.inputs[a.tensor - 1];
            let keys = AccessKeys::new(&a.indices);
            let mut map = HashMap::new();
            tensor.for_each_stored(|c, x| {
                let Some(key) = keys.key(c) else {
                    return;
                };
                // A duplicated coordinate's values combine with ⊕.
                map.entry(key.to_vec())
                    .and_modify(|old| *old = cx.semiring.add.apply(*old, x))
                    .or_insert(x);
            });
            Entries {
                vars: keys.vars,
                map,
            }
        }
        CExpr::Binary(Op::Mul, a, b) if is_condition(a) || is_condition(b) => {
            let (condition, x) = if is_condition(a) { (a, b) } else { (b, a) };
            let mut selected = condition_entries(condition, cx);
            selected.map.retain(|_, holds| *holds != 0.0);
            join(&selected, &eval(x, cx), |_, x| x)
        }
        CExpr::Binary(Op::Mul, a, b) => {
            let mul = &cx.semiring.mul;
            join(&eval(a, cx), &eval(b, cx), |x, y| mul.apply(x, y))
        }
        CExpr::Binary(Op::Add, a, b) => union(eval(a, cx), eval(b, cx), cx),
        CExpr::Sum(v, body) => {
            let body = eval(body, cx);
            // Binding places every sum around the uses of its variable.
            let at = body
                .vars
                .iter()
                .position(|w| w == v)
                .expect("a sum's body uses its variable");
            let mut vars = body.vars.clone();
            vars.remove(at);
            let mut map: HashMap<Vec<usize>, f64> = HashMap::new();
            for (mut key, x) in body.map {
                key.remove(at);
                map.entry(key)
                    .and_modify(|old| *old = cx.semiring.add.apply(*old, x))
                    .or_insert(x);
            }
            Entries { vars, map }
        }
        other => panic!(
            "binding admits no {other:?} over the semiring {}",
            cx.semiring
        ),
    }
}

/// True for a mask's condition: a comparison, `pattern`, or one minus either.
fn is_condition(e: &CExpr) -> bool {
    match e {
        CExpr::Math(f, _) => f.is_condition(),
        CExpr::Binary(Op::Sub, one, c) => {
            matches!(**one, CExpr::Literal(x) if x == 1.0) && is_condition(c)
        }
        _ => false,
    }
}

/// A condition's value (1 or 0) where it is present, in plain arithmetic: a function is
/// present where an argument is, and everywhere when it is not 0 at 0 (`1 - pattern(M)`).
fn condition_entries(e: &CExpr, cx: &Cx) -> Entries {
    match e {
        CExpr::Access(_) => eval(e, cx),
        CExpr::Literal(x) => Entries {
            vars: vec![],
            map: HashMap::from([(vec![], *x)]),
        },
        CExpr::Math(f, args) => {
            let args: Vec<Entries> = args.iter().map(|a| condition_entries(a, cx)).collect();
            let mut vars: Vec<VarId> = Vec::new();
            for a in &args {
                vars.extend(
                    a.vars
                        .iter()
                        .filter(|v| !vars.contains(v))
                        .copied()
                        .collect::<Vec<_>>(),
                );
            }
            let keys: Vec<Vec<usize>> = if f.keeps_zero() {
                args.iter()
                    .flat_map(|a| broadcast_keys(a, &vars, cx))
                    .collect()
            } else {
                all_keys(&vars, cx)
            };
            let mut map = HashMap::new();
            for key in keys {
                let values: Vec<f64> = args
                    .iter()
                    .map(|a| lookup(a, &vars, &key).unwrap_or(0.0))
                    .collect();
                map.insert(key, f.eval(&values));
            }
            Entries { vars, map }
        }
        CExpr::Binary(Op::Sub, one, c) => {
            let c = condition_entries(c, cx);
            let one = match **one {
                CExpr::Literal(x) => x,
                _ => unreachable!("checked by is_condition"),
            };
            let map = all_keys(&c.vars, cx)
                .into_iter()
                .map(|k| {
                    let x = c.map.get(&k).copied().unwrap_or(0.0);
                    (k, one - x)
                })
                .collect();
            Entries { vars: c.vars, map }
        }
        other => panic!("not a condition: {other:?}"),
    }
}

/// The entry of `e` at the point `key` over `vars` (a superset of `e.vars`).
fn lookup(e: &Entries, vars: &[VarId], key: &[usize]) -> Option<f64> {
    let k: Vec<usize> = e
        .vars
        .iter()
        .map(|v| key[vars.iter().position(|w| w == v).expect("a superset")])
        .collect();
    e.map.get(&k).copied()
}

/// Every point over `vars` at which `e` is present.
fn broadcast_keys(e: &Entries, vars: &[VarId], cx: &Cx) -> Vec<Vec<usize>> {
    all_keys(vars, cx)
        .into_iter()
        .filter(|k| lookup(e, vars, k).is_some())
        .collect()
}

/// Every point over `vars`.
fn all_keys(vars: &[VarId], cx: &Cx) -> Vec<Vec<usize>> {
    let sizes: Vec<usize> = vars.iter().map(|&v| cx.stmt.vars[v].size).collect();
    let mut keys = Vec::new();
    for_each_point(&sizes, |p| keys.push(p.to_vec()));
    keys
}

/// The entries present in both, over the union of their variables, valued `f(a, b)`.
fn join(a: &Entries, b: &Entries, f: impl Fn(f64, f64) -> f64) -> Entries {
    let shared: Vec<usize> = a
        .vars
        .iter()
        .filter_map(|v| b.vars.iter().position(|w| w == v))
        .collect();
    let shared_in_a: Vec<usize> = b
        .vars
        .iter()
        .enumerate()
        .filter(|(k, _)| shared.contains(k))
        .map(|(_, v)| a.vars.iter().position(|w| w == v).expect("shared"))
        .collect();
    let b_only: Vec<usize> = (0..b.vars.len()).filter(|k| !shared.contains(k)).collect();
    let mut by_shared: HashMap<Vec<usize>, Vec<(&Vec<usize>, f64)>> = HashMap::new();
    for (k, &y) in &b.map {
        let s: Vec<usize> = (0..b.vars.len())
            .filter(|j| shared.contains(j))
            .map(|j| k[j])
            .collect();
        by_shared.entry(s).or_default().push((k, y));
    }
    let mut vars = a.vars.clone();
    vars.extend(b_only.iter().map(|&j| b.vars[j]));
    let mut map = HashMap::new();
    for (k, &x) in &a.map {
        let s: Vec<usize> = shared_in_a.iter().map(|&j| k[j]).collect();
        for (bk, y) in by_shared.get(&s).into_iter().flatten() {
            let mut key = k.clone();
            key.extend(b_only.iter().map(|&j| bk[j]));
            map.insert(key, f(x, *y));
        }
    }
    Entries { vars, map }
}

/// The entries present in either, over the union of their variables (each broadcast over
/// the variables it lacks), valued `a ⊕ b` where both are present.
fn union(a: Entries, b: Entries, cx: &Cx) -> Entries {
    let mut vars = a.vars.clone();
    vars.extend(b.vars.iter().filter(|v| !a.vars.contains(v)));
    let widen = |e: &Entries| -> HashMap<Vec<usize>, f64> {
        if e.vars.len() == vars.len() {
            let order: Vec<usize> = vars
                .iter()
                .map(|v| e.vars.iter().position(|w| w == v).expect("same variables"))
                .collect();
            return e
                .map
                .iter()
                .map(|(k, &x)| (order.iter().map(|&j| k[j]).collect(), x))
                .collect();
        }
        broadcast_keys(e, &vars, cx)
            .into_iter()
            .map(|k| {
                let x = lookup(e, &vars, &k).expect("present");
                (k, x)
            })
            .collect()
    };
    let mut map = widen(&a);
    for (k, y) in widen(&b) {
        map.entry(k)
            .and_modify(|x| *x = cx.semiring.add.apply(*x, y))
            .or_insert(y);
    }
    Entries { vars, map }
}
