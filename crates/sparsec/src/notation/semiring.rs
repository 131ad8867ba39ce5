//! Semirings: the `over (⊕, ⊗)` clause of index notation, as GraphBLAS has them.
//!
//! `y(i) = A(i,j) * x(j) over (min, +)` reduces with `min` where plain notation adds, and
//! combines with `+` where it multiplies: Bellman-Ford's step. Under a semiring, a tensor's
//! missing entries are *absent* rather than zero: `*` (⊗) has an entry where both operands
//! have one, `+` (⊕) where either has one (the present one's value alone), and a reduction
//! combines the entries that are present. A dense output holds ⊕'s identity where nothing
//! was reduced (`+inf` for `min`), which is then its fill value; a sparse output stores no
//! entry there. Under `(+, *)` this is exactly ordinary index notation.

use std::fmt;
use std::sync::Arc;

use super::operator::Operator;

/// The reduction operator ⊕ of a semiring: associative and commutative, with an identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Monoid {
    Plus,
    Times,
    Min,
    Max,
    /// Logical or of truth values (non-zero is true), 1 or 0.
    Or,
    /// Logical and of truth values, 1 or 0.
    And,
    /// Any one of the values reduced (GraphBLAS's `any`): the cheapest reduction where
    /// only whether something was reduced matters, as in breadth-first search.
    Any,
    /// A user-defined operator (`let name(a, b) = ... identity v;`) whose laws were checked
    /// and whose identity was declared.
    User(Arc<Operator>),
}

/// The combining operator ⊗ of a semiring.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Combine {
    Times,
    Plus,
    Min,
    Max,
    And,
    Or,
    /// The left operand's value.
    First,
    /// The right operand's value.
    Second,
    /// 1 wherever both operands are present (GraphBLAS's `pair`, `oneb`).
    Pair,
    /// A user-defined binary operator.
    User(Arc<Operator>),
}

/// A semiring (⊕, ⊗) for index notation's reductions and products.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Semiring {
    pub add: Monoid,
    pub mul: Combine,
}

impl Default for Semiring {
    /// `(+, *)`: ordinary arithmetic.
    fn default() -> Semiring {
        Semiring::PLUS_TIMES
    }
}

impl Semiring {
    /// Ordinary arithmetic, the semiring of every statement without an `over` clause.
    pub const PLUS_TIMES: Semiring = Semiring {
        add: Monoid::Plus,
        mul: Combine::Times,
    };

    /// True for `(+, *)`, under which a statement means what it does without a clause.
    pub fn is_arithmetic(&self) -> bool {
        *self == Semiring::PLUS_TIMES
    }
}

impl fmt::Display for Semiring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.add.spelling(), self.mul.spelling())
    }
}

/// True where `x` counts as true for `or` and `and`: non-zero.
fn truth(x: f64) -> bool {
    x != 0.0
}

fn from_truth(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

impl Monoid {
    /// Every reduction operator, for listing in messages.
    pub const ALL: [Monoid; 7] = [
        Monoid::Plus,
        Monoid::Times,
        Monoid::Min,
        Monoid::Max,
        Monoid::Or,
        Monoid::And,
        Monoid::Any,
    ];

    /// The operator named `name` in an `over` clause: `+`, `*`, `min`, `max`, `or`,
    /// `and`, `any` (with `plus` and `times` for the first two).
    pub fn from_name(name: &str) -> Option<Monoid> {
        Some(match name {
            "+" | "plus" => Monoid::Plus,
            "*" | "times" => Monoid::Times,
            "min" => Monoid::Min,
            "max" => Monoid::Max,
            "or" => Monoid::Or,
            "and" => Monoid::And,
            "any" => Monoid::Any,
            _ => return None,
        })
    }

    /// How an `over` clause writes it.
    pub fn spelling(&self) -> &str {
        match self {
            Monoid::User(op) => &op.name,
            Monoid::Plus => "+",
            Monoid::Times => "*",
            Monoid::Min => "min",
            Monoid::Max => "max",
            Monoid::Or => "or",
            Monoid::And => "and",
            Monoid::Any => "any",
        }
    }

    /// The value that reducing nothing gives: `x ⊕ identity = x` (for `any`, which has
    /// none, 0, which its first operand replaces).
    pub fn identity(&self) -> f64 {
        match self {
            Monoid::User(op) => op
                .identity
                .expect("a reducing operator declares its identity"),
            Monoid::Plus | Monoid::Or | Monoid::Any => 0.0,
            Monoid::Times | Monoid::And => 1.0,
            Monoid::Min => f64::INFINITY,
            Monoid::Max => f64::NEG_INFINITY,
        }
    }

    /// `acc ⊕ x`, where `acc` holds what was reduced before `x`. `min` and `max` ignore a
    /// NaN operand, as C's `fmin` and `fmax` do.
    pub fn apply(&self, acc: f64, x: f64) -> f64 {
        match self {
            Monoid::User(op) => op.eval(&[acc, x]),
            Monoid::Plus => acc + x,
            Monoid::Times => acc * x,
            Monoid::Min => acc.min(x),
            Monoid::Max => acc.max(x),
            Monoid::Or => from_truth(truth(acc) || truth(x)),
            Monoid::And => from_truth(truth(acc) && truth(x)),
            Monoid::Any => x,
        }
    }
}

impl Combine {
    /// Every combining operator, for listing in messages.
    pub const ALL: [Combine; 9] = [
        Combine::Times,
        Combine::Plus,
        Combine::Min,
        Combine::Max,
        Combine::And,
        Combine::Or,
        Combine::First,
        Combine::Second,
        Combine::Pair,
    ];

    /// The operator named `name` in an `over` clause: `*`, `+`, `min`, `max`, `and`,
    /// `or`, `first`, `second`, `pair` (with `times` and `plus` for the first two).
    pub fn from_name(name: &str) -> Option<Combine> {
        Some(match name {
            "*" | "times" => Combine::Times,
            "+" | "plus" => Combine::Plus,
            "min" => Combine::Min,
            "max" => Combine::Max,
            "and" => Combine::And,
            "or" => Combine::Or,
            "first" => Combine::First,
            "second" => Combine::Second,
            "pair" => Combine::Pair,
            _ => return None,
        })
    }

    /// How an `over` clause writes it.
    pub fn spelling(&self) -> &str {
        match self {
            Combine::User(op) => &op.name,
            Combine::Times => "*",
            Combine::Plus => "+",
            Combine::Min => "min",
            Combine::Max => "max",
            Combine::And => "and",
            Combine::Or => "or",
            Combine::First => "first",
            Combine::Second => "second",
            Combine::Pair => "pair",
        }
    }

    /// `a ⊗ b`.
    pub fn apply(&self, a: f64, b: f64) -> f64 {
        match self {
            Combine::User(op) => op.eval(&[a, b]),
            Combine::Times => a * b,
            Combine::Plus => a + b,
            Combine::Min => a.min(b),
            Combine::Max => a.max(b),
            Combine::And => from_truth(truth(a) && truth(b)),
            Combine::Or => from_truth(truth(a) || truth(b)),
            Combine::First => a,
            Combine::Second => b,
            Combine::Pair => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_neutral_and_names_round_trip() {
        for m in Monoid::ALL {
            assert_eq!(Monoid::from_name(m.spelling()), Some(m.clone()));
            for x in [-2.5, 0.0, 1.0, 7.0] {
                let x = if matches!(m, Monoid::Or | Monoid::And) {
                    from_truth(truth(x))
                } else {
                    x
                };
                assert_eq!(m.apply(m.identity(), x), x, "{m:?} on {x}");
            }
        }
        for c in Combine::ALL {
            assert_eq!(Combine::from_name(c.spelling()), Some(c));
        }
        assert_eq!(Monoid::from_name("minus"), None);
        assert_eq!(Semiring::default().to_string(), "(+, *)");
    }
}
