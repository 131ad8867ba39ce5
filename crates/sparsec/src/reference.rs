//! A simple dense evaluator of concrete index notation, independent of lowering and code
//! generation, used as the oracle in tests.
//!
//! Inputs are read into dense `f64` arrays through [`Tensor::for_each_stored`]; the
//! right-hand side is evaluated at every point of the output's index variables, with
//! `Sum` looping over its variable's whole range.

use crate::format::Format;
use crate::notation::ast::Op;
use crate::notation::cin::{CExpr, Statement, VarId};
use crate::tensor::{unscaled_difference, Tensor, ValueType, Values};

/// The right-hand side with accesses resolved to flat arrays and strides.
enum Node {
    Access {
        tensor: usize,
        /// `(variable, stride)` per mode.
        terms: Vec<(VarId, usize)>,
    },
    Literal(f64),
    Neg(Box<Node>),
    Binary(Op, Box<Node>, Box<Node>),
    Sum {
        var: VarId,
        size: usize,
        body: Box<Node>,
    },
}

fn row_major_strides(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; dims.len()];
    for m in (0..dims.len().saturating_sub(1)).rev() {
        strides[m] = strides[m + 1] * dims[m + 1];
    }
    strides
}

fn compile(expr: &CExpr, stmt: &Statement) -> Node {
    match expr {
        CExpr::Access(a) => {
            let strides = row_major_strides(&stmt.tensors[a.tensor].dims);
            Node::Access {
                tensor: a.tensor,
                terms: a.indices.iter().copied().zip(strides).collect(),
            }
        }
        CExpr::Literal(x) => Node::Literal(*x),
        CExpr::Neg(e) => Node::Neg(Box::new(compile(e, stmt))),
        CExpr::Binary(op, a, b) => {
            Node::Binary(*op, Box::new(compile(a, stmt)), Box::new(compile(b, stmt)))
        }
        CExpr::Sum(v, e) => Node::Sum {
            var: *v,
            size: stmt.vars[*v].size,
            body: Box::new(compile(e, stmt)),
        },
    }
}

/// Evaluate `node`; with `magnitude`, evaluate the sum of the absolute values of its terms
/// instead (the scale of its rounding error).
fn eval(node: &Node, data: &[Vec<f64>], env: &mut [usize], magnitude: bool) -> f64 {
    let eval = |n: &Node, env: &mut [usize]| eval(n, data, env, magnitude);
    match node {
        Node::Access { tensor, terms } => {
            let idx: usize = terms.iter().map(|&(v, s)| env[v] * s).sum();
            let x = data[*tensor][idx];
            if magnitude {
                x.abs()
            } else {
                x
            }
        }
        Node::Literal(x) if magnitude => x.abs(),
        Node::Literal(x) => *x,
        Node::Neg(e) if magnitude => eval(e, env),
        Node::Neg(e) => -eval(e, env),
        Node::Binary(op, a, b) => {
            let x = eval(a, env);
            match op {
                Op::Add => x + eval(b, env),
                Op::Sub if magnitude => x + eval(b, env),
                Op::Sub => x - eval(b, env),
                Op::Mul => x * eval(b, env),
                // The numerator's zeros decide: 0 / anything is 0 (no NaN from 0/0).
                Op::Div => {
                    if x == 0.0 {
                        0.0
                    } else {
                        x / eval(b, env)
                    }
                }
            }
        }
        Node::Sum { var, size, body } => {
            let mut total = 0.0;
            for i in 0..*size {
                env[*var] = i;
                total += eval(body, env);
            }
            total
        }
    }
}

/// The tensor's components as a dense row-major array of the given dimensions.
fn densify(t: &Tensor, dims: &[usize], what: &str) -> Vec<f64> {
    assert_eq!(
        t.dims(),
        dims,
        "{what}: tensor dimensions differ from the statement's"
    );
    let strides = row_major_strides(dims);
    let mut data = vec![0.0; dims.iter().product()];
    t.for_each_stored(|c, v| {
        let idx: usize = c.iter().zip(&strides).map(|(&x, &s)| x as usize * s).sum();
        data[idx] += v;
    });
    data
}

/// Evaluate `stmt` densely. `inputs[k]` holds `stmt.tensors[k + 1]`; `output_init` is the
/// output's previous contents for `+=` (zeros when `None`; ignored for `=`).
///
/// Division follows the sparse rule: `a / b` is 0 wherever `a` is 0, else `a / b` in IEEE
/// arithmetic. The result is a dense `f64` tensor of the output's dimensions.
///
/// # Panics
/// If the number of inputs or any tensor's dimensions disagree with the statement.
pub fn evaluate(stmt: &Statement, inputs: &[&Tensor], output_init: Option<&Tensor>) -> Tensor {
    evaluate_as(stmt, inputs, output_init, false)
}

/// Per output component, the sum of the absolute values of the terms that
/// [`evaluate`] adds up: the scale of the rounding error of any evaluation order.
pub fn magnitude(stmt: &Statement, inputs: &[&Tensor], output_init: Option<&Tensor>) -> Tensor {
    evaluate_as(stmt, inputs, output_init, true)
}

/// Largest difference between `got` and `expected` relative to `1 + magnitude`, per
/// component (all three of the same dimensions). Equal non-finite components (NaN against
/// NaN, `+inf` against `+inf`) agree; a NaN against a number or `+inf` against `-inf` is an
/// infinite error.
pub fn max_error(got: &Tensor, expected: &Tensor, magnitude: &Tensor) -> f64 {
    let dims = expected.dims().to_vec();
    let (g, e, m) = (
        densify(got, &dims, "result"),
        densify(expected, &dims, "reference"),
        densify(magnitude, &dims, "magnitude"),
    );
    g.iter()
        .zip(&e)
        .zip(&m)
        .map(|((&g, &e), m)| {
            unscaled_difference(g, e).unwrap_or_else(|| {
                let r = (g - e).abs() / (1.0 + m);
                // A NaN magnitude (a NaN term that cancelled out of both results) leaves
                // no scale to forgive the difference by.
                if r.is_nan() {
                    f64::INFINITY
                } else {
                    r
                }
            })
        })
        .fold(0.0, f64::max)
}

fn evaluate_as(
    stmt: &Statement,
    inputs: &[&Tensor],
    output_init: Option<&Tensor>,
    magnitude: bool,
) -> Tensor {
    assert_eq!(
        inputs.len() + 1,
        stmt.tensors.len(),
        "the statement has {} inputs, but {} tensors were given",
        stmt.tensors.len() - 1,
        inputs.len()
    );
    let mut data = Vec::with_capacity(stmt.tensors.len());
    data.push(Vec::new());
    for (k, t) in inputs.iter().enumerate() {
        let decl = &stmt.tensors[k + 1];
        data.push(densify(t, &decl.dims, &format!("input `{}`", decl.name)));
    }
    let out_dims = stmt.tensors[0].dims.clone();
    let mut out = match (stmt.accumulate, output_init) {
        (true, Some(init)) => densify(init, &out_dims, "initial output"),
        _ => vec![0.0; out_dims.iter().product()],
    };
    let root = compile(&stmt.rhs, stmt);
    let mut env = vec![0usize; stmt.vars.len()];
    // Walk the output points in row-major order; the flat index is then the point count.
    let order = stmt.lhs.len();
    let mut point = vec![0usize; order];
    for slot in out.iter_mut() {
        for (m, &v) in stmt.lhs.iter().enumerate() {
            env[v] = point[m];
        }
        let x = eval(&root, &data, &mut env, magnitude);
        if stmt.accumulate && magnitude {
            *slot = slot.abs() + x;
        } else if stmt.accumulate {
            *slot += x;
        } else {
            *slot = x;
        }
        for m in (0..order).rev() {
            point[m] += 1;
            if point[m] < out_dims[m] {
                break;
            }
            point[m] = 0;
        }
    }
    let mut result = Tensor::zeros(&out_dims, ValueType::F64);
    *result.values_mut() = Values::F64(out);
    debug_assert_eq!(result.format(), &Format::dense(order));
    result
}
