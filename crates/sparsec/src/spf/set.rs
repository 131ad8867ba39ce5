//! Integer sets and relations whose constraints may apply uninterpreted functions (UFs):
//! affine expressions over tuple variables, symbolic constants and UF applications, and
//! conjunctions of `expr >= 0` and `expr = 0` constraints over them.
//!
//! A UF application is a term like a symbol: nothing is assumed about its value beyond
//! what the program's bindings guarantee at run time, so every operation here is exact
//! for the affine part and treats UF terms as opaque (sound, never assuming a UF value).

use std::fmt;

use super::presburger::{Abstraction, Facts};
use crate::polyhedral::isl::{Isl, IslSet};

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
    /// The same constraint with every `Var(v)` replaced by `by(v)`.
    pub fn substitute(&self, by: &impl Fn(usize) -> Affine) -> Constraint {
        Constraint {
            expr: self.expr.substitute(by),
            kind: self.kind,
        }
    }

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
    /// (False does not mean non-empty: [`Set::is_empty`] decides.)
    pub fn is_obviously_empty(&self) -> bool {
        self.constraints.iter().any(Constraint::trivially_false)
    }

    /// Whether no tuple belongs to the set for any index arrays that satisfy `facts`
    /// (isl, exact for the affine part; see [`super::presburger`]). `Ok(false)` means the
    /// facts cannot rule every tuple out, which for some arrays may still be empty.
    pub fn is_empty(&self, facts: &Facts) -> Result<bool, String> {
        let mut space = Abstraction::new(self.vars.len());
        let part: Vec<Constraint> = self
            .constraints
            .iter()
            .map(|c| space.constraint(c))
            .collect();
        space.to_isl(&Isl::new(), &[part], Some(facts))?.is_empty()
    }

    /// The same set without redundant constraints (isl; the UF applications are opaque
    /// terms, so a constraint is dropped only when the others imply it for any values).
    pub fn reduced(&self) -> Result<SetUnion, String> {
        self.through_isl(&[], |s| s.simplify())
    }

    /// The tuples of either set (of the same arity), with as few conjunctions as isl finds.
    pub fn union(&self, other: &Set) -> Result<SetUnion, String> {
        if self.vars.len() != other.vars.len() {
            return Err(format!(
                "cannot unite {self} and {other}: their arities differ"
            ));
        }
        SetUnion {
            parts: vec![self.clone(), other.clone()],
        }
        .reduced()
    }

    /// The set with tuple variable `v` projected out (exact over the integers, the UF
    /// applications opaque). A variable inside a UF argument cannot be projected, since
    /// the application would lose its meaning; that is an error.
    pub fn project_out(&self, v: usize) -> Result<SetUnion, String> {
        if v >= self.vars.len() {
            return Err(format!("{self} has no variable number {v}"));
        }
        if self.constraints.iter().any(|c| c.expr.var_in_uf(v)) {
            return Err(format!(
                "cannot project `{}` out of {self}: it is the argument of an uninterpreted \
                 function",
                self.vars[v]
            ));
        }
        let mut out = self.through_isl(&[v], |s| Ok(s.clone()))?;
        let down = |d: usize| Affine::term(Term::Var(if d > v { d - 1 } else { d }));
        for part in &mut out.parts {
            part.vars.remove(v);
            for c in &mut part.constraints {
                c.expr = c.expr.substitute(&down);
            }
        }
        Ok(out)
    }

    /// The image of the set under `map` (whose outputs are an invertible affine function
    /// of its inputs, [`Map::input_from_outputs`]): exact, UF applications included.
    pub fn apply(&self, map: &Map) -> Result<Set, String> {
        if map.inputs.len() != self.vars.len() {
            return Err(format!(
                "cannot apply {map} to {self}: their arities differ"
            ));
        }
        let inverse = map.inverse().ok_or_else(|| {
            format!(
                "{map} is not an invertible affine map (its variable outputs must be a \
                     unimodular function of its inputs)"
            )
        })?;
        let back = |v: usize| inverse.outputs[v].clone();
        let mut constraints = inverse.constraints.clone();
        constraints.extend(self.constraints.iter().map(|c| c.substitute(&back)));
        Ok(Set {
            vars: inverse.inputs,
            constraints,
        }
        .simplify())
    }

    /// Through isl with variables `dropped` projected out, then `op`, then back.
    fn through_isl(
        &self,
        dropped: &[usize],
        op: impl Fn(&IslSet) -> Result<IslSet, String>,
    ) -> Result<SetUnion, String> {
        SetUnion {
            parts: vec![self.clone()],
        }
        .through_isl(dropped, op)
    }
}

/// A union of sets of one arity: `{[i] : ...} union {[i] : ...}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetUnion {
    pub parts: Vec<Set>,
}

impl SetUnion {
    /// The same union with as few conjunctions and constraints as isl finds.
    pub fn reduced(&self) -> Result<SetUnion, String> {
        self.through_isl(&[], |s| s.simplify())
    }

    /// Whether no part has a tuple, for any index arrays satisfying `facts`.
    pub fn is_empty(&self, facts: &Facts) -> Result<bool, String> {
        for part in &self.parts {
            if !part.is_empty(facts)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn through_isl(
        &self,
        dropped: &[usize],
        op: impl Fn(&IslSet) -> Result<IslSet, String>,
    ) -> Result<SetUnion, String> {
        let Some(first) = self.parts.first() else {
            return Ok(self.clone());
        };
        let mut space = Abstraction::new(first.vars.len());
        let parts: Vec<Vec<Constraint>> = self
            .parts
            .iter()
            .map(|p| p.constraints.iter().map(|c| space.constraint(c)).collect())
            .collect();
        let mut set = space.to_isl(&Isl::new(), &parts, None)?;
        for &v in dropped.iter().rev() {
            set = set.project_out(v, 1)?;
        }
        let set = op(&set)?.simplify()?;
        let kept: Vec<usize> = (0..space.dims()).filter(|d| !dropped.contains(d)).collect();
        read_union(&set, &space, &kept, &first.vars)
    }
}

/// The basic sets of `set`, an isl set over `space`'s dimensions `kept`, as sets over
/// `vars` with their UF applications rebuilt.
fn read_union(
    set: &IslSet,
    space: &Abstraction,
    kept: &[usize],
    vars: &[String],
) -> Result<SetUnion, String> {
    let parts = set
        .basic_sets()?
        .iter()
        .map(|b| {
            Ok(Set {
                vars: vars.to_vec(),
                constraints: space.read_back(b, kept)?,
            }
            .simplify())
        })
        .collect::<Result<Vec<Set>, String>>()?;
    Ok(SetUnion { parts })
}

impl fmt::Display for SetUnion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.parts.is_empty() {
            return write!(f, "{{}}");
        }
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                write!(f, " union ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
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
/// inputs and of the map's own output variables (the form execution schedules and
/// transformations take).
///
/// An output variable is a name of the output tuple that is not an input, as in isl's
/// `{[i] -> [ii, i] : 32ii <= i < 32ii + 32}` (strip-mining: `ii` is `floor(i / 32)`).
/// Variables are numbered inputs first, then output variables: `Term::Var(inputs.len() + k)`
/// is `fresh[k]`. Each must be a function of the inputs, which [`Map::strip_mined`] checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Map {
    pub inputs: Vec<String>,
    /// The output variables' names.
    pub fresh: Vec<String>,
    pub outputs: Vec<Affine>,
    pub constraints: Vec<Constraint>,
}

impl Map {
    /// For each input variable, its value as an affine function of the outputs, when the
    /// outputs that use variables are as many as the inputs and form a unimodular affine
    /// function of them (the map is then a bijection onto its image: interchange, shift,
    /// reversal, skew and their compositions), else None. Outputs without variables are
    /// the map's constants and recover nothing.
    ///
    /// Output variables count as inputs here: the result gives them too, after the inputs.
    pub fn input_from_outputs(&self) -> Option<Vec<Affine>> {
        let n = self.vars();
        let loops: Vec<usize> = (0..self.outputs.len())
            .filter(|&d| self.outputs[d].max_var().is_some())
            .collect();
        if loops.len() != n {
            return None;
        }
        let mut matrix = Vec::new();
        for &d in &loops {
            let out = &self.outputs[d];
            if out.terms.iter().any(|(_, t)| matches!(t, Term::Uf(..))) {
                return None;
            }
            matrix.push((0..n).map(|v| out.coefficient(v)).collect::<Vec<i64>>());
        }
        let inverse = unimodular_inverse(&matrix)?;
        // in = inverse * (out_loops - rest), rest being each output's constant and symbols.
        let shifted: Vec<Affine> = loops
            .iter()
            .map(|&d| {
                let out = &self.outputs[d];
                let rest = out.add_scaled(
                    -1,
                    &(0..n).fold(Affine::default(), |acc, v| {
                        acc.add_scaled(out.coefficient(v), &Affine::term(Term::Var(v)))
                    }),
                );
                Affine::term(Term::Var(d)).add_scaled(-1, &rest)
            })
            .collect();
        Some(
            inverse
                .iter()
                .map(|row| {
                    row.iter()
                        .zip(&shifted)
                        .fold(Affine::default(), |acc, (k, e)| acc.add_scaled(*k, e))
                })
                .collect(),
        )
    }

    /// The map from outputs to inputs, when [`Map::input_from_outputs`] can invert it;
    /// its constraints hold the map's constant outputs and its own constraints.
    pub fn inverse(&self) -> Option<Map> {
        let mut outputs = self.input_from_outputs()?;
        let names: Vec<String> = (0..self.outputs.len()).map(|d| format!("o{d}")).collect();
        let mut constraints: Vec<Constraint> = self
            .outputs
            .iter()
            .enumerate()
            .filter(|(_, o)| o.max_var().is_none())
            .map(|(d, o)| Constraint {
                expr: Affine::term(Term::Var(d)).add_scaled(-1, o),
                kind: Relation0::Zero,
            })
            .collect();
        constraints.extend(
            self.constraints
                .iter()
                .map(|c| c.substitute(&|v| outputs[v].clone())),
        );
        // Output variables are outputs here, recovered, and constrained above.
        outputs.truncate(self.inputs.len());
        Some(Map {
            inputs: names,
            fresh: Vec::new(),
            outputs,
            constraints,
        })
    }

    /// For each output variable `v`, the `(e, B)` of its definition `v = floor(e / B)`,
    /// when the map's constraints are exactly one pair `B*v <= e < B*v + B` per output
    /// variable, `e` an expression of the inputs and `B >= 1`: then every input has
    /// one image, so the map is a bijection onto its image wherever its outputs are
    /// invertible. Else an error saying which variable is not so defined.
    pub fn strip_mined(&self) -> Result<Vec<(Affine, i64)>, String> {
        let n = self.inputs.len();
        let names = self.names();
        let mut used = vec![false; self.constraints.len()];
        let mut out = Vec::new();
        for (k, name) in self.fresh.iter().enumerate() {
            let v = n + k;
            let var = Affine::term(Term::Var(v));
            // `e - B*v >= 0` gives (e, B); its partner is `B*v + B - 1 - e >= 0`.
            let found = self.constraints.iter().enumerate().find_map(|(at, c)| {
                let b = -c.expr.coefficient(v);
                let e = c.expr.add_scaled(b, &var);
                let inputs_only = e.terms.iter().all(|(_, t)| match t {
                    Term::Var(u) => *u < n,
                    _ => true,
                });
                if c.kind != Relation0::NonNegative || b < 1 || !inputs_only {
                    return None;
                }
                let partner = var
                    .scale(b)
                    .add_scaled(1, &Affine::constant(b - 1))
                    .add_scaled(-1, &e);
                let other = self
                    .constraints
                    .iter()
                    .position(|c| c.kind == Relation0::NonNegative && c.expr == partner)?;
                Some((at, other, e, b))
            });
            let Some((at, other, e, b)) = found else {
                return Err(format!(
                    "output variable `{name}` of {self} must be defined by a pair \
                     `B*{name} <= e < B*{name} + B` (so it is floor(e / B)) with `e` an \
                     expression of the inputs"
                ));
            };
            used[at] = true;
            used[other] = true;
            out.push((e, b));
        }
        if let Some(c) = used.iter().position(|u| !u) {
            return Err(format!(
                "{self} may constrain only its output variables (`B*v <= e < B*v + B`), not \
                 `{}`",
                self.constraints[c].display(&names)
            ));
        }
        Ok(out)
    }

    /// The transitive closure `R+ = R ∪ R∘R ∪ ...` of the map as a relation (chains of
    /// one or more steps), as a union of sets over pairs `[in..., in'...]`, and whether
    /// isl computed it exactly (otherwise it is an over-approximation, which is sound
    /// wherever "no chain reaches there" is what is asked). The map must take and give
    /// tuples of one arity, without index arrays or output variables.
    pub fn transitive_closure(&self) -> Result<(SetUnion, bool), String> {
        let n = self.inputs.len();
        let affine = self.fresh.is_empty()
            && self.outputs.len() == n
            && self
                .outputs
                .iter()
                .chain(self.constraints.iter().map(|c| &c.expr))
                .all(|e| e.terms.iter().all(|(_, t)| !matches!(t, Term::Uf(..))));
        if !affine {
            return Err(format!(
                "the transitive closure of {self} is not computed: it needs as many outputs \
                 as inputs, and no index arrays or output variables"
            ));
        }
        let mut constraints = self.constraints.clone();
        constraints.extend(self.outputs.iter().enumerate().map(|(k, out)| Constraint {
            expr: Affine::term(Term::Var(n + k)).add_scaled(-1, out),
            kind: Relation0::Zero,
        }));
        let mut space = Abstraction::new(2 * n);
        let part: Vec<Constraint> = constraints.iter().map(|c| space.constraint(c)).collect();
        let set = space.to_isl(&Isl::new(), &[part], None)?;
        let (closure, exact) = set.transitive_closure(n)?;
        let vars: Vec<String> = self
            .inputs
            .iter()
            .cloned()
            .chain(self.inputs.iter().map(|v| format!("{v}'")))
            .collect();
        let kept: Vec<usize> = (0..2 * n).collect();
        Ok((
            read_union(&closure.simplify()?, &space, &kept, &vars)?,
            exact,
        ))
    }

    /// The number of variables: inputs, then output variables.
    pub fn vars(&self) -> usize {
        self.inputs.len() + self.fresh.len()
    }

    /// Every variable's name, inputs first.
    pub fn names(&self) -> Vec<String> {
        self.inputs.iter().chain(&self.fresh).cloned().collect()
    }

    /// `self ∘ inner`: `inner` first, then `self` (whose inputs are `inner`'s outputs).
    /// The result's output variables are `inner`'s, then `self`'s.
    pub fn compose(&self, inner: &Map) -> Result<Map, String> {
        if self.inputs.len() != inner.outputs.len() {
            return Err(format!(
                "cannot compose {self} after {inner}: it takes {} inputs, not {}",
                self.inputs.len(),
                inner.outputs.len()
            ));
        }
        let (ns, ni) = (self.inputs.len(), inner.vars());
        let through = |v: usize| match v.checked_sub(ns) {
            None => inner.outputs[v].clone(),
            Some(k) => Affine::term(Term::Var(ni + k)),
        };
        let mut constraints = inner.constraints.clone();
        constraints.extend(self.constraints.iter().map(|c| c.substitute(&through)));
        Ok(Map {
            inputs: inner.inputs.clone(),
            fresh: inner.fresh.iter().chain(&self.fresh).cloned().collect(),
            outputs: self
                .outputs
                .iter()
                .map(|e| e.substitute(&through))
                .collect(),
            constraints,
        })
    }
}

/// The inverse of a square integer matrix whose determinant is ±1 (exact, by
/// Gauss-Jordan elimination over the rationals), else None.
fn unimodular_inverse(m: &[Vec<i64>]) -> Option<Vec<Vec<i64>>> {
    let n = m.len();
    // Rationals as (numerator, denominator), denominators positive and reduced.
    type Q = (i128, i128);
    fn reduce((a, b): Q) -> Q {
        let (mut x, mut y) = (a.abs(), b.abs());
        while y != 0 {
            (x, y) = (y, x % y);
        }
        let g = x.max(1) * b.signum();
        (a / g, b / g)
    }
    let sub = |(a, b): Q, (c, d): Q, (e, f): Q| reduce((a * d * f - c * e * b, b * d * f));
    let div = |(a, b): Q, (c, d): Q| reduce((a * d, b * c));
    let mut rows: Vec<Vec<Q>> = (0..n)
        .map(|r| {
            let mut row: Vec<Q> = m[r].iter().map(|&x| (x as i128, 1)).collect();
            row.extend((0..n).map(|c| (i128::from(c == r), 1)));
            row
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n).find(|&r| rows[r][col].0 != 0)?;
        rows.swap(col, pivot);
        let p = rows[col][col];
        rows[col] = rows[col].iter().map(|&x| div(x, p)).collect();
        for r in 0..n {
            if r != col && rows[r][col].0 != 0 {
                let factor = rows[r][col];
                rows[r] = (0..2 * n)
                    .map(|c| sub(rows[r][c], factor, rows[col][c]))
                    .collect();
            }
        }
    }
    rows.iter()
        .map(|row| {
            row[n..]
                .iter()
                .map(|&(a, b)| (b == 1).then(|| i64::try_from(a).ok()).flatten())
                .collect()
        })
        .collect()
}

impl fmt::Display for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names();
        let outs: Vec<String> = self
            .outputs
            .iter()
            .map(|o| o.display(&names).to_string())
            .collect();
        write!(f, "{{[{}] -> [{}]", self.inputs.join(", "), outs.join(", "))?;
        write_constraints(f, &self.constraints, &names)?;
        write!(f, "}}")
    }
}
