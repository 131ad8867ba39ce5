//! Fill values in index notation: what a tensor's unstored components hold, and what the
//! output's are computed to be.
//!
//! Over `(+, *)` an input whose fill value `f` is not 0 is read as `where(pattern(A), A, f)`
//! (Finch's reading): its stored entries where it has them, `f` elsewhere. The function is
//! not 0 at an absent entry, so the merge lattices iterate the coordinates `A` lacks too,
//! exactly as they do for any function with `f(0) != 0`. Over another semiring a missing
//! entry is absent (GraphBLAS's structural semantics), which binding checks.

use super::cin::{Access, CExpr, Statement, TensorVar};
use super::semiring::Semiring;
use crate::ir::MathFn;

/// `rhs` with each access to an input whose fill value is not 0 reading that value where
/// the input has no entry (over `(+, *)`; a semiring's inputs are unchanged).
pub(super) fn read_absent_as_fill(rhs: CExpr, tensors: &[TensorVar], semiring: &Semiring) -> CExpr {
    if !semiring.is_arithmetic() {
        return rhs;
    }
    let filled = |access: Access| {
        let fill = tensors[access.tensor].fill;
        if fill == 0.0 {
            return CExpr::Access(access);
        }
        CExpr::Math(
            MathFn::Where,
            vec![
                CExpr::Math(MathFn::Pattern, vec![CExpr::Access(access.clone())]),
                CExpr::Access(access),
                CExpr::Literal(fill),
            ],
        )
    };
    map_accesses(rhs, &filled)
}

fn map_accesses(e: CExpr, f: &dyn Fn(Access) -> CExpr) -> CExpr {
    match e {
        CExpr::Access(a) => f(a),
        CExpr::Literal(x) => CExpr::Literal(x),
        CExpr::Neg(a) => CExpr::Neg(Box::new(map_accesses(*a, f))),
        CExpr::Binary(op, a, b) => CExpr::Binary(
            op,
            Box::new(map_accesses(*a, f)),
            Box::new(map_accesses(*b, f)),
        ),
        CExpr::Math(g, args) => {
            CExpr::Math(g, args.into_iter().map(|a| map_accesses(a, f)).collect())
        }
        CExpr::Sum(v, a) => CExpr::Sum(v, Box::new(map_accesses(*a, f))),
    }
}

impl Statement {
    /// The value of the output's components that no entry of any input reaches: the
    /// right-hand side with every input absent (at its fill value), each reduction of it
    /// over its whole range. Over a semiring other than `(+, *)` that is ⊕'s identity.
    pub fn output_fill(&self) -> f64 {
        if !self.semiring.is_arithmetic() {
            return self.semiring.add.identity();
        }
        self.value_where_absent(&self.rhs)
    }

    fn value_where_absent(&self, e: &CExpr) -> f64 {
        match e {
            // Fills other than 0 were made explicit by `read_absent_as_fill`.
            CExpr::Access(_) => 0.0,
            CExpr::Literal(x) => *x,
            CExpr::Neg(a) => -self.value_where_absent(a),
            CExpr::Binary(op, a, b) => {
                op.apply(self.value_where_absent(a), self.value_where_absent(b))
            }
            CExpr::Math(MathFn::Pattern, _) => 0.0,
            CExpr::Math(f, args) => {
                let args: Vec<f64> = args.iter().map(|a| self.value_where_absent(a)).collect();
                f.eval(&args)
            }
            CExpr::Sum(v, a) => match self.value_where_absent(a) {
                // An empty range sums to 0 whatever the term (inf * 0 is not 0).
                0.0 => 0.0,
                x => x * self.vars[*v].size as f64,
            },
        }
    }

    /// True when the output's components that no input entry reaches all hold
    /// [`Statement::output_fill`], so a sparse output need store only the coordinates
    /// some input has an entry at: an element-wise statement over `(+, *)` (no reduction,
    /// no `+=`) in which every access indexes every output variable (an access missing
    /// one, `B(i,j) + c(i)`, makes the value vary where the others are absent), stored in a
    /// format without padding, which would hold zeros that no entry wrote.
    pub fn fills_unreached_components(&self) -> bool {
        fn element_wise(e: &CExpr, lhs: &[usize]) -> bool {
            match e {
                CExpr::Access(a) => lhs.iter().all(|v| a.indices.contains(v)),
                CExpr::Literal(_) => true,
                CExpr::Neg(a) => element_wise(a, lhs),
                CExpr::Binary(_, a, b) => element_wise(a, lhs) && element_wise(b, lhs),
                CExpr::Math(_, args) => args.iter().all(|a| element_wise(a, lhs)),
                CExpr::Sum(..) => false,
            }
        }
        let output = &self.tensors[0].format;
        self.semiring.is_arithmetic()
            && !self.accumulate
            && !output.is_all_dense()
            && !output.pads_with_zeros()
            && element_wise(&self.rhs, &self.lhs)
    }
}
