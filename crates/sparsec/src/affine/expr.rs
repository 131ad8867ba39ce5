//! The integer side of an affine program: affine expressions over loop counters and
//! sizes, constraints on them, and conditions in disjunctive normal form, each printed in
//! isl's syntax (which C shares) and evaluated for given values.

use std::collections::BTreeMap;

/// An affine expression `constant + Σ coefficient·name` over loop counters and parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Affine {
    pub constant: i64,
    pub terms: BTreeMap<String, i64>,
}

impl Affine {
    /// The constant `c`.
    pub fn constant(c: i64) -> Affine {
        Affine {
            constant: c,
            terms: BTreeMap::new(),
        }
    }

    /// The variable `name`.
    pub fn var(name: &str) -> Affine {
        Affine {
            constant: 0,
            terms: BTreeMap::from([(name.to_string(), 1)]),
        }
    }

    /// `self + k·other`, or None on overflow.
    pub fn add_scaled(&self, other: &Affine, k: i64) -> Option<Affine> {
        let mut out = self.clone();
        out.constant = out.constant.checked_add(other.constant.checked_mul(k)?)?;
        for (name, c) in &other.terms {
            let entry = out.terms.entry(name.clone()).or_insert(0);
            *entry = entry.checked_add(c.checked_mul(k)?)?;
        }
        out.terms.retain(|_, c| *c != 0);
        Some(out)
    }

    /// `k·self`, or None on overflow.
    pub fn scaled(&self, k: i64) -> Option<Affine> {
        Affine::constant(0).add_scaled(self, k)
    }

    /// The value with every name bound by `value`, or None on overflow or a free name.
    pub fn eval(&self, value: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        let mut sum = self.constant;
        for (name, c) in &self.terms {
            sum = sum.checked_add(c.checked_mul(value(name)?)?)?;
        }
        Some(sum)
    }
}

impl std::fmt::Display for Affine {
    /// isl's syntax (which C shares): `2*i + N - 1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for (name, c) in &self.terms {
            let sign = if *c < 0 { "-" } else { "+" };
            match (first, c.abs()) {
                (true, 1) if *c < 0 => write!(f, "-{name}")?,
                (true, 1) => write!(f, "{name}")?,
                (true, a) => write!(f, "{}{a}*{name}", if *c < 0 { "-" } else { "" })?,
                (false, 1) => write!(f, " {sign} {name}")?,
                (false, a) => write!(f, " {sign} {a}*{name}")?,
            }
            first = false;
        }
        match (first, self.constant) {
            (true, c) => write!(f, "{c}"),
            (false, 0) => Ok(()),
            (false, c) if c < 0 => write!(f, " - {}", -(c as i128)),
            (false, c) => write!(f, " + {c}"),
        }
    }
}

/// `expr >= 0`, `expr == 0`, or with a modulus `expr mod m == 0` (a loop's stride).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub expr: Affine,
    pub equality: bool,
    pub modulus: Option<i64>,
}

impl Constraint {
    /// `expr >= 0`.
    pub fn at_least_zero(expr: Affine) -> Constraint {
        Constraint {
            expr,
            equality: false,
            modulus: None,
        }
    }

    /// `expr == 0`.
    pub fn zero(expr: Affine) -> Constraint {
        Constraint {
            expr,
            equality: true,
            modulus: None,
        }
    }

    /// Whether the constraint holds with every name bound by `value`.
    pub fn holds(&self, value: &dyn Fn(&str) -> Option<i64>) -> Option<bool> {
        let v = self.expr.eval(value)?;
        Some(match self.modulus {
            Some(m) => v.rem_euclid(m) == 0,
            None if self.equality => v == 0,
            None => v >= 0,
        })
    }
}

impl std::fmt::Display for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.modulus {
            Some(m) => write!(f, "({}) mod {m} = 0", self.expr),
            None => {
                let op = if self.equality { "=" } else { ">=" };
                write!(f, "{} {op} 0", self.expr)
            }
        }
    }
}

/// A condition in disjunctive normal form: any of the conjunctions holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition(pub Vec<Vec<Constraint>>);

impl Condition {
    /// The condition that always holds.
    pub fn always() -> Condition {
        Condition(vec![Vec::new()])
    }

    /// Both conditions.
    pub fn and(&self, other: &Condition) -> Condition {
        let mut out = Vec::new();
        for a in &self.0 {
            for b in &other.0 {
                out.push(a.iter().chain(b).cloned().collect());
            }
        }
        Condition(out)
    }

    /// Either condition.
    pub fn or(mut self, other: Condition) -> Condition {
        self.0.extend(other.0);
        self
    }

    /// Whether the condition holds with every name bound by `value` (None if a name has
    /// no value or the arithmetic overflows).
    pub fn holds(&self, value: &dyn Fn(&str) -> Option<i64>) -> Option<bool> {
        let mut any = false;
        for conjunction in &self.0 {
            let mut all = true;
            for c in conjunction {
                all &= c.holds(value)?;
            }
            any |= all;
        }
        Some(any)
    }

    /// The negation, still in disjunctive normal form (integers: `!(e >= 0)` is
    /// `-e - 1 >= 0`, `!(e == 0)` is `e >= 1 or e <= -1`).
    pub fn negated(&self) -> Option<Condition> {
        let mut out = Condition::always();
        for conjunction in &self.0 {
            let mut any = Vec::new();
            for c in conjunction {
                let minus_one = Affine::constant(-1);
                if let Some(m) = c.modulus {
                    for r in 1..m {
                        any.push(vec![Constraint {
                            expr: c.expr.add_scaled(&Affine::constant(-r), 1)?,
                            equality: true,
                            modulus: Some(m),
                        }]);
                    }
                } else if c.equality {
                    any.push(vec![Constraint::at_least_zero(
                        c.expr.add_scaled(&minus_one, 1)?,
                    )]);
                    any.push(vec![Constraint::at_least_zero(
                        c.expr.scaled(-1)?.add_scaled(&minus_one, 1)?,
                    )]);
                } else {
                    any.push(vec![Constraint::at_least_zero(
                        c.expr.scaled(-1)?.add_scaled(&minus_one, 1)?,
                    )]);
                }
            }
            out = out.and(&Condition(any));
        }
        Some(out)
    }
}

impl std::fmt::Display for Condition {
    /// isl's syntax: `(a >= 0 and b = 0) or (...)`; `true` and `false` for the trivial
    /// cases.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return write!(f, "false");
        }
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|conj| {
                if conj.is_empty() {
                    "true".to_string()
                } else {
                    let cs: Vec<String> = conj.iter().map(|c| c.to_string()).collect();
                    format!("({})", cs.join(" and "))
                }
            })
            .collect();
        write!(f, "{}", parts.join(" or "))
    }
}
