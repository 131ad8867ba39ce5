//! Choosing the loop order (the iteration graph of TACO, Chou §4.1).
//!
//! Constraints: each operand's storage levels must be visited outer to inner (a level's
//! positions hang below its parent's), and a non-hoisted reduction's variable must be
//! nested inside every variable its temporary depends on and outside the variables it
//! sums. When operands' level orders conflict (`B(i,j) + C(j,i)` with both CSR), the
//! conflicting operands are marked for conversion to a compatible mode ordering rather than
//! rejected. Among valid orders, output variables come first in the output's order, then
//! reduction variables in order of appearance.

use std::collections::BTreeSet;

use crate::notation::cin::VarId;

/// The chosen order and the occurrences whose storage must be reordered to follow it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopOrder {
    pub order: Vec<VarId>,
    pub reordered: Vec<usize>,
}

/// `level_vars[o]` lists the variables of occurrence `o` in storage order (`fixed[o]`:
/// its layout cannot be reordered);
/// `sum_edges` are mandatory `(outer, inner)` pairs; `priority` ranks variables.
pub fn choose(
    num_vars: usize,
    level_vars: &[Vec<VarId>],
    fixed: &[bool],
    sum_edges: &[(VarId, VarId)],
    priority: &[usize],
) -> LoopOrder {
    let mut dropped: BTreeSet<usize> = BTreeSet::new();
    // Drop the constraints of later occurrences first: the first operands keep their
    // layout, later ones get reordered copies.
    let mut candidates = (0..level_vars.len()).rev().filter(|&o| !fixed[o]);
    loop {
        let mut edges: Vec<(VarId, VarId)> = sum_edges.to_vec();
        for (o, vars) in level_vars.iter().enumerate() {
            if !dropped.contains(&o) {
                edges.extend(vars.windows(2).map(|w| (w[0], w[1])));
            }
        }
        if let Some(order) = topological(num_vars, &edges, priority) {
            return LoopOrder {
                order,
                reordered: dropped.into_iter().collect(),
            };
        }
        let Some(next) = candidates.next() else {
            // Only fixed layouts remain constrained; keep the best effort (cannot happen
            // for the structured formats, whose extra variables are fresh).
            let order = topological(num_vars, sum_edges, priority)
                .expect("reduction constraints are acyclic");
            return LoopOrder {
                order,
                reordered: dropped.into_iter().collect(),
            };
        };
        dropped.insert(next);
    }
}

fn topological(n: usize, edges: &[(VarId, VarId)], priority: &[usize]) -> Option<Vec<VarId>> {
    let mut indegree = vec![0usize; n];
    for &(_, b) in edges {
        indegree[b] += 1;
    }
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    for _ in 0..n {
        let next = (0..n)
            .filter(|&v| !done[v] && indegree[v] == 0)
            .min_by_key(|&v| priority[v])?;
        done[next] = true;
        order.push(next);
        for &(a, b) in edges {
            if a == next {
                indegree[b] -= 1;
            }
        }
    }
    Some(order)
}

/// Occurrences whose storage order conflicts with `order` (they are read through a
/// reordered copy), or `Err(o)` for the first conflicting occurrence whose layout is fixed.
/// `before(a, b)` tells whether level variable `a` is resolved before `b` is needed.
/// `position(v)` is where `v` is resolved in the loop order.
///
/// Dense operands are reordered too when their innermost variable runs over its whole
/// dimension: a transposed copy costs one pass, while reading across rows in an inner
/// loop (SDDMM's `D(k,j)` with `k` innermost) misses the cache on every iteration. When
/// that variable comes from a sparse operand's coordinates instead, every read is a
/// gather whatever the layout, and reading in place keeps the reuse that a schedule built
/// around the stored layout creates (SpMM tiled as in A.12: `B(j,k)` with `k` outside the
/// tile of `j`s), so those are read in place.
pub fn conflicts(
    level_vars: &[Vec<VarId>],
    fixed: &[bool],
    sparse: &[bool],
    before: &dyn Fn(VarId, VarId) -> bool,
    position: &dyn Fn(VarId) -> usize,
) -> Result<Vec<usize>, usize> {
    let mut reordered = Vec::new();
    for (o, vars) in level_vars.iter().enumerate() {
        if vars.windows(2).all(|w| before(w[0], w[1])) {
            continue;
        }
        if fixed[o] {
            return Err(o);
        }
        let innermost = vars.iter().copied().max_by_key(|&v| position(v));
        let gathered = innermost.is_some_and(|v| {
            level_vars
                .iter()
                .zip(sparse)
                .any(|(vars, &is_sparse)| is_sparse && vars.contains(&v))
        });
        if sparse[o] || !gathered {
            reordered.push(o);
        }
    }
    Ok(reordered)
}
