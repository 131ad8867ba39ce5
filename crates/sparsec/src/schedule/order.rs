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
            // Dropping goes from the last operand back, so some dropped operands (vectors,
            // layouts the order happens to follow) were never in the way: keep only those
            // the order really reads against their layout.
            let position = |v: VarId| order.iter().position(|&u| u == v);
            dropped.retain(|&o| {
                !level_vars[o]
                    .windows(2)
                    .all(|w| position(w[0]) < position(w[1]))
            });
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

#[cfg(test)]
mod tests {
    //! The default order of whole statements, built through the public front end
    //! (`notation::parse`, `notation::bind` with formats) as the integration tests do.

    use crate::format::Format;
    use crate::notation::{self, TensorDecl};
    use crate::schedule::{Concrete, LowerError};

    /// Concretize `expr`; `tensors` gives each tensor's format (`""`: all dense) and
    /// every dimension is 8, so any index pattern binds.
    fn concrete(expr: &str, tensors: &[(&str, &str)]) -> Result<Concrete, LowerError> {
        let assignment = notation::parse(expr).unwrap();
        let mut orders = vec![(assignment.lhs.tensor.clone(), assignment.lhs.indices.len())];
        collect(&assignment.rhs, &mut orders);
        let decls: Vec<TensorDecl> = orders
            .iter()
            .enumerate()
            .map(|(n, (name, order))| {
                let spelling = tensors
                    .iter()
                    .find(|(t, _)| t == name)
                    .map_or("", |(_, f)| *f);
                TensorDecl {
                    name: name.clone(),
                    dims: (n > 0).then(|| vec![8; *order]),
                    format: (!spelling.is_empty())
                        .then(|| Format::parse(spelling, *order).unwrap()),
                    fill: 0.0,
                }
            })
            .collect();
        let stmt = notation::bind(&assignment, &decls, &[]).unwrap_or_else(|e| panic!("{e}"));
        Concrete::new(&stmt)
    }

    fn collect(e: &crate::notation::ast::Expr, out: &mut Vec<(String, usize)>) {
        for a in e.accesses() {
            if !out.iter().any(|(n, _)| *n == a.tensor) {
                out.push((a.tensor.clone(), a.indices.len()));
            }
        }
    }

    /// Loop names outer to inner and the reordered occurrences.
    fn order_of(expr: &str, tensors: &[(&str, &str)]) -> (Vec<String>, Vec<usize>) {
        let c = concrete(expr, tensors).unwrap_or_else(|e| panic!("{expr}: {e}"));
        let loops = c.loops().iter().map(|s| s.to_string()).collect();
        (loops, c.reordered.clone())
    }

    #[test]
    fn spmv_csr_iterates_rows_then_columns() {
        let (loops, reordered) = order_of("y(i) = A(i,j) * x(j)", &[("A", "csr")]);
        assert_eq!(loops, ["i", "j"]);
        assert!(reordered.is_empty());
    }

    #[test]
    fn spmv_csc_follows_the_column_major_layout() {
        // The hoisted sum over `j` accumulates into `y(i)` directly, so nothing keeps `i`
        // outside and A's storage order decides: no transposition.
        let (loops, reordered) = order_of("y(i) = A(i,j) * x(j)", &[("A", "csc")]);
        assert_eq!(loops, ["j", "i"]);
        assert!(reordered.is_empty());
    }

    #[test]
    fn spgemm_csr_is_gustavson() {
        let csr = [("A", "csr"), ("B", "csr"), ("C", "csr")];
        let (loops, reordered) = order_of("C(i,j) = A(i,k) * B(k,j)", &csr);
        assert_eq!(loops, ["i", "k", "j"]);
        assert!(reordered.is_empty());
    }

    #[test]
    fn dense_only_variables_go_inside_the_sparse_ones() {
        // SpMM: `j` is only a dense operand's, so it runs innermost, below A's levels.
        let (loops, reordered) = order_of("C(i,j) = A(i,k) * B(k,j)", &[("A", "csr")]);
        assert_eq!(loops, ["i", "k", "j"]);
        assert!(reordered.is_empty());
        // All dense: the output's variables first, in its order.
        let (loops, reordered) = order_of("y(i) = A(i,j) * x(j)", &[]);
        assert_eq!(loops, ["i", "j"]);
        assert!(reordered.is_empty());
    }

    #[test]
    fn a_sum_under_addition_is_nested_inside_its_temporary_variables() {
        // The sum over `j` sits under `+`: it is computed into a temporary per `i`, so `j`
        // must be inside `i` although A (CSC) stores `j` first; A is transposed instead.
        let (loops, reordered) = order_of("y(i) = A(i,j) * x(j) + b(i)", &[("A", "csc")]);
        assert_eq!(loops, ["i", "j"]);
        assert_eq!(reordered, [0]);
    }

    #[test]
    fn the_later_operand_is_reordered_when_layouts_conflict() {
        let csr = [("A", "csr"), ("B", "csr")];
        let (loops, reordered) = order_of("C(i,j) = A(i,j) * B(j,i)", &csr);
        assert_eq!(loops, ["i", "j"]);
        assert_eq!(reordered, [1]);
        // The first operand keeps its layout whichever tensor it is.
        let (loops, reordered) = order_of("C(i,j) = B(j,i) * A(i,j)", &csr);
        assert_eq!(loops, ["j", "i"]);
        assert_eq!(reordered, [1]);
    }

    #[test]
    fn a_fixed_layout_is_never_the_one_reordered() {
        // ELL cannot be transposed: the CSR operand is, even though it comes first.
        let formats = [("A", "csr"), ("B", "ell")];
        let c = concrete("C(i,j) = A(i,j) * B(j,i)", &formats).unwrap();
        assert_eq!(c.reordered, [0]);
        assert!(!c.fixed[0] && c.fixed[1]);
    }

    #[test]
    fn conflicting_fixed_layouts_read_the_later_one_through_a_plain_copy() {
        for f in ["ell", "bcsr:2x2"] {
            let formats = [("A", f), ("B", f)];
            let c = concrete("C(i,j) = A(i,j) * B(j,i)", &formats).unwrap();
            // One keeps its layout; the other is read as CSR (and transposed to follow the
            // loops when they read it against that).
            let read: Vec<String> = (0..2).map(|o| c.access_format(o).spelling()).collect();
            let converted = read
                .iter()
                .position(|r| r == "ds")
                .expect("one is converted");
            assert_eq!(read[1 - converted], f);
            assert!(c.fixed[1 - converted] && !c.fixed[converted]);
        }
    }
}
