//! Integer sets and relations whose constraints may apply uninterpreted functions (UFs):
//! affine expressions over tuple variables, symbolic constants and UF applications, and
//! conjunctions of `expr >= 0` and `expr = 0` constraints over them.
//!
//! A UF application is a term like a symbol: nothing is assumed about its value beyond
//! what the program's bindings guarantee at run time, so every operation here is exact
//! for the affine part and treats UF terms as opaque (sound, never assuming a UF value).

use std::fmt;

/// A term of an affine expression.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Term {
    /// Tuple variable number `n` of the set (or the relation's input tuple).
    Var(usize),
    /// A symbolic constant, by name.
    Sym(String),
    /// An uninterpreted function applied to affine arguments.
    Uf(String, Vec<Affine>),
}

/// `constant + sum(coefficient * term)`, terms sorted and merged, no zero coefficients.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Affine {
    pub constant: i64,
    pub terms: Vec<(i64, Term)>,
}

impl Affine {
    /// The constant `c`.
    pub fn constant(c: i64) -> Affine {
        Affine {
            constant: c,
            terms: Vec::new(),
        }
    }

    /// The single term `t`.
    pub fn term(t: Term) -> Affine {
        Affine {
            constant: 0,
            terms: vec![(1, t)],
        }
    }

    /// `self + k * other`.
    pub fn add_scaled(&self, k: i64, other: &Affine) -> Affine {
        let mut terms = self.terms.clone();
        terms.extend(other.terms.iter().map(|(c, t)| (c * k, t.clone())));
        Affine {
            constant: self.constant + k * other.constant,
            terms: Vec::new(),
        }
        .with_terms(terms)
    }

    /// `k * self`.
    pub fn scale(&self, k: i64) -> Affine {
        Affine::default().add_scaled(k, self)
    }

    fn with_terms(mut self, mut terms: Vec<(i64, Term)>) -> Affine {
        terms.sort_by(|a, b| a.1.cmp(&b.1));
        for (c, t) in terms {
            match self.terms.last_mut() {
                Some((last, lt)) if *lt == t => *last += c,
                _ => self.terms.push((c, t)),
            }
        }
        self.terms.retain(|(c, _)| *c != 0);
        self
    }

    /// The constant value, when the expression has no terms.
    pub fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The coefficient of `Var(v)` outside UF arguments.
    pub fn coefficient(&self, v: usize) -> i64 {
        self.terms
            .iter()
            .find(|(_, t)| *t == Term::Var(v))
            .map_or(0, |(c, _)| *c)
    }

    /// Whether `Var(v)` occurs inside some UF application's arguments.
    pub fn var_in_uf(&self, v: usize) -> bool {
        self.terms.iter().any(|(_, t)| match t {
            Term::Uf(_, args) => args.iter().any(|a| a.coefficient(v) != 0 || a.var_in_uf(v)),
            _ => false,
        })
    }

    /// The largest variable number used anywhere (inside UF arguments too).
    pub fn max_var(&self) -> Option<usize> {
        self.terms
            .iter()
            .filter_map(|(_, t)| match t {
                Term::Var(v) => Some(*v),
                Term::Uf(_, args) => args.iter().filter_map(Affine::max_var).max(),
                Term::Sym(_) => None,
            })
            .max()
    }

    /// Replace every `Var(v)` (inside UF arguments too) by `by(v)`.
    pub fn substitute(&self, by: &impl Fn(usize) -> Affine) -> Affine {
        let mut out = Affine::constant(self.constant);
        for (c, t) in &self.terms {
            let replaced = match t {
                Term::Var(v) => by(*v),
                Term::Sym(_) => Affine::term(t.clone()),
                Term::Uf(name, args) => Affine::term(Term::Uf(
                    name.clone(),
                    args.iter().map(|a| a.substitute(by)).collect(),
                )),
            };
            out = out.add_scaled(*c, &replaced);
        }
        out
    }

    /// Print with `names` for the tuple variables.
    pub fn display<'a>(&'a self, names: &'a [String]) -> impl fmt::Display + 'a {
        DisplayAffine(self, names)
    }
}

struct DisplayAffine<'a>(&'a Affine, &'a [String]);

impl fmt::Display for DisplayAffine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DisplayAffine(a, names) = *self;
        let mut first = true;
        for (c, t) in &a.terms {
            let sign = if *c < 0 { "-" } else { "+" };
            match (first, *c) {
                (true, 1) => {}
                (true, -1) => write!(f, "-")?,
                (true, c) => write!(f, "{c}*")?,
                (false, c) if c.abs() == 1 => write!(f, " {sign} ")?,
                (false, c) => write!(f, " {sign} {}*", c.abs())?,
            }
            match t {
                Term::Var(v) => match names.get(*v) {
                    Some(n) => write!(f, "{n}")?,
                    None => write!(f, "_{v}")?,
                },
                Term::Sym(s) => write!(f, "{s}")?,
                Term::Uf(name, args) => {
                    write!(f, "{name}(")?;
                    for (i, arg) in args.iter().enumerate() {
                        if i > 0 {
                            write!(f, ", ")?;
                        }
                        write!(f, "{}", arg.display(names))?;
                    }
                    write!(f, ")")?;
                }
            }
            first = false;
        }
        match (first, a.constant) {
            (true, c) => write!(f, "{c}"),
            (false, 0) => Ok(()),
            (false, c) if c < 0 => write!(f, " - {}", -c),
            (false, c) => write!(f, " + {c}"),
        }
    }
}

/// How a constraint compares its expression with zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Relation0 {
    /// `expr >= 0`.
    NonNegative,
    /// `expr = 0`.
    Zero,
}

/// One constraint `expr >= 0` or `expr = 0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Constraint {
    pub expr: Affine,
    pub kind: Relation0,
}

impl Constraint {
    /// A constraint without terms that holds (`3 >= 0`).
    fn trivially_true(&self) -> bool {
        match (self.expr.as_constant(), self.kind) {
            (Some(c), Relation0::NonNegative) => c >= 0,
            (Some(c), Relation0::Zero) => c == 0,
            (None, _) => false,
        }
    }

    /// A constraint without terms that no assignment satisfies (`-1 >= 0`).
    fn trivially_false(&self) -> bool {
        self.expr.as_constant().is_some() && !self.trivially_true()
    }

    fn display<'a>(&'a self, names: &'a [String]) -> impl fmt::Display + 'a {
        struct D<'a>(&'a Constraint, &'a [String]);
        impl fmt::Display for D<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let op = match self.0.kind {
                    Relation0::NonNegative => ">=",
                    Relation0::Zero => "=",
                };
                write!(f, "{} {op} 0", self.0.expr.display(self.1))
            }
        }
        D(self, names)
    }
}

/// `{[v0, v1, ...] : c0 && c1 && ...}`: the integer tuples that satisfy every constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    /// Names of the tuple variables (only for printing: variables are numbered).
    pub vars: Vec<String>,
    pub constraints: Vec<Constraint>,
}

impl Set {
    /// The tuples in both sets (of the same arity; `other`'s variable names are dropped).
    pub fn intersect(&self, other: &Set) -> Option<Set> {
        (self.vars.len() == other.vars.len()).then(|| {
            let mut constraints = self.constraints.clone();
            constraints.extend(other.constraints.iter().cloned());
            Set {
                vars: self.vars.clone(),
                constraints,
            }
            .simplify()
        })
    }

    /// The same set with duplicate and trivially true constraints removed, and a single
    /// `-1 >= 0` when a constraint without terms is false.
    pub fn simplify(&self) -> Set {
        let mut constraints: Vec<Constraint> = Vec::new();
        for c in &self.constraints {
            if c.trivially_false() {
                return Set {
                    vars: self.vars.clone(),
                    constraints: vec![Constraint {
                        expr: Affine::constant(-1),
                        kind: Relation0::NonNegative,
                    }],
                };
            }
            if !c.trivially_true() && !constraints.contains(c) {
                constraints.push(c.clone());
            }
        }
        Set {
            vars: self.vars.clone(),
            constraints,
        }
    }

    /// True when a constraint without terms is false, so no tuple belongs to the set.
    /// (False does not mean non-empty: deciding emptiness in general needs a solver.)
    pub fn is_obviously_empty(&self) -> bool {
        self.constraints.iter().any(Constraint::trivially_false)
    }
}

impl fmt::Display for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{[{}]", self.vars.join(", "))?;
        write_constraints(f, &self.constraints, &self.vars)?;
        write!(f, "}}")
    }
}

fn write_constraints(
    f: &mut fmt::Formatter<'_>,
    constraints: &[Constraint],
    names: &[String],
) -> fmt::Result {
    for (i, c) in constraints.iter().enumerate() {
        let sep = if i == 0 { " : " } else { " && " };
        write!(f, "{sep}{}", c.display(names))?;
    }
    Ok(())
}

/// `{[in...] -> [out...] : constraints}` where each output is an affine expression of the
/// inputs (the form execution schedules and transformations take).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Map {
    pub inputs: Vec<String>,
    pub outputs: Vec<Affine>,
    pub constraints: Vec<Constraint>,
}

impl Map {
    /// For each input variable `v`, `(d, sign, c)` with `out_d = sign * in_v + c`, when
    /// every output is a constant or `±in_v + c` and each input appears exactly once (the
    /// map is then a bijection onto its image), else None.
    pub fn invert_unimodular(&self) -> Option<Vec<(usize, i64, i64)>> {
        // out_d = sign * in_v + c  =>  in_v = sign * (out_d - c)
        let mut by_input = vec![None; self.inputs.len()];
        for (d, out) in self.outputs.iter().enumerate() {
            match out.terms.as_slice() {
                [] => {}
                [(sign, Term::Var(v))] if sign.abs() == 1 && by_input[*v].is_none() => {
                    by_input[*v] = Some((d, *sign, out.constant));
                }
                _ => return None,
            }
        }
        by_input.into_iter().collect()
    }

    /// The map from outputs to inputs, when [`Map::invert_unimodular`] can invert it.
    pub fn inverse(&self) -> Option<Map> {
        let inverse = self.invert_unimodular()?;
        let outputs = (0..self.inputs.len())
            .map(|v| outputs_of(&inverse, v))
            .collect();
        let names: Vec<String> = (0..self.outputs.len()).map(|d| format!("o{d}")).collect();
        let to_out = |v: usize| outputs_of(&inverse, v);
        Some(Map {
            inputs: names,
            outputs,
            constraints: self
                .constraints
                .iter()
                .map(|c| Constraint {
                    expr: c.expr.substitute(&to_out),
                    kind: c.kind,
                })
                .collect(),
        })
    }
}

fn outputs_of(inverse: &[(usize, i64, i64)], v: usize) -> Affine {
    let (d, sign, c) = inverse[v];
    Affine::term(Term::Var(d))
        .add_scaled(1, &Affine::constant(-c))
        .scale(sign)
}

impl fmt::Display for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outs: Vec<String> = self
            .outputs
            .iter()
            .map(|o| o.display(&self.inputs).to_string())
            .collect();
        write!(f, "{{[{}] -> [{}]", self.inputs.join(", "), outs.join(", "))?;
        write_constraints(f, &self.constraints, &self.inputs)?;
        write!(f, "}}")
    }
}
