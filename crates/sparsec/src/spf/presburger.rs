//! Uninterpreted functions on top of isl: a set whose constraints apply index arrays
//! (`rowptr(i)`, `col(k)`) becomes a Presburger set with one extra dimension per distinct
//! application, which isl then decides exactly.
//!
//! Replacing `f(a)` by a fresh variable `u` forgets what makes `f` a function, so the facts
//! that hold for every index array are added back (Ackermann's reduction):
//! - **functional consistency**: for two applications `f(a) = u` and `f(b) = v`,
//!   `a = b` implies `u = v`;
//! - **monotonicity**, for arrays declared non-decreasing (a compressed level's `pos`):
//!   `a < b` implies `u <= v`;
//! - **lower bounds**, where known: `lo <= f(a)` (index arrays hold no negative value).
//!
//! Every array the program can be given satisfies these facts, so the abstraction holds
//! every point of the real set for every input: "empty" here is a proof of emptiness for
//! all inputs, and "not empty" only means the facts cannot rule a point out (the answer is
//! then conservative). Pairs whose arguments differ by a constant get a plain constraint;
//! the others a disjunction, which isl splits into basic sets.

use super::set::{Affine, Constraint, Relation0, Term};
use crate::polyhedral::isl::{BasicSet, Isl, IslSet};

/// What is known about one uninterpreted function.
#[derive(Clone, Debug)]
pub struct UfFact {
    pub name: String,
    /// Non-decreasing in its (single) argument.
    pub monotone: bool,
    /// `lower <= f(x)` for every argument in its domain.
    pub lower: Option<Affine>,
}

/// The facts about the functions a set applies (none: each is only a function).
#[derive(Clone, Debug, Default)]
pub struct Facts(pub Vec<UfFact>);

impl Facts {
    fn of(&self, name: &str) -> Option<&UfFact> {
        self.0.iter().find(|f| f.name == name)
    }
}

/// Tuple variables `0..vars`, then one dimension per distinct UF application.
#[derive(Clone, Debug)]
pub struct Abstraction {
    vars: usize,
    /// Application `m` is dimension `vars + m`: the function and its arguments, in which
    /// inner applications are already dimensions.
    apps: Vec<(String, Vec<Affine>)>,
}

/// The prefix of symbols in isl text, so that a symbol named like an isl keyword (`and`,
/// `floor`, `exists`) cannot be misread.
pub(super) const SYMBOL_PREFIX: &str = "s_";

impl Abstraction {
    /// A space of `vars` tuple variables and no applications yet.
    pub fn new(vars: usize) -> Abstraction {
        Abstraction {
            vars,
            apps: Vec::new(),
        }
    }

    /// The number of dimensions: tuple variables and applications.
    pub fn dims(&self) -> usize {
        self.vars + self.apps.len()
    }

    /// `e` with every UF application replaced by its dimension (added when new).
    pub fn abstracted(&mut self, e: &Affine) -> Affine {
        let mut out = Affine::constant(e.constant);
        for (c, t) in &e.terms {
            let term = match t {
                Term::Uf(name, args) => {
                    let args: Vec<Affine> = args.iter().map(|a| self.abstracted(a)).collect();
                    let app = (name.clone(), args);
                    let m = match self.apps.iter().position(|a| *a == app) {
                        Some(m) => m,
                        None => {
                            self.apps.push(app);
                            self.apps.len() - 1
                        }
                    };
                    Term::Var(self.vars + m)
                }
                other => other.clone(),
            };
            out = out.add_scaled(*c, &Affine::term(term));
        }
        out
    }

    /// A constraint with its applications abstracted.
    pub fn constraint(&mut self, c: &Constraint) -> Constraint {
        Constraint {
            expr: self.abstracted(&c.expr),
            kind: c.kind,
        }
    }

    /// Dimension `d` as the term it stands for (a UF application is rebuilt).
    fn concrete(&self, d: usize) -> Term {
        if d < self.vars {
            return Term::Var(d);
        }
        let (name, args) = &self.apps[d - self.vars];
        Term::Uf(
            name.clone(),
            args.iter().map(|a| self.concretize(a)).collect(),
        )
    }

    /// An abstracted expression with its application dimensions rebuilt as terms.
    pub fn concretize(&self, e: &Affine) -> Affine {
        e.substitute(&|d| Affine::term(self.concrete(d)))
    }

    /// Whether dimension `d` depends on tuple variable `v` (through its arguments).
    pub fn depends_on(&self, d: usize, v: usize) -> bool {
        if d < self.vars {
            return d == v;
        }
        self.apps[d - self.vars].1.iter().any(|a| {
            a.terms.iter().any(|(_, t)| match t {
                Term::Var(e) => self.depends_on(*e, v),
                _ => false,
            })
        })
    }

    /// Application dimension `d`'s function and abstracted arguments (None for a tuple
    /// variable).
    pub fn application(&self, d: usize) -> Option<(&str, &[Affine])> {
        let (name, args) = self.apps.get(d.checked_sub(self.vars)?)?;
        Some((name, args))
    }

    /// `part` in isl's syntax over this space's dimensions (`x0`, `x1`, ...), with the
    /// facts that need no disjunction when given: what a scanner may assume at each point.
    pub fn conjunction_text(&self, part: &[Constraint], facts: Option<&Facts>) -> Vec<String> {
        let mut out: Vec<String> = part.iter().map(isl_constraint).collect();
        if let Some(facts) = facts {
            out.extend(self.facts(facts, false));
        }
        out
    }

    /// The facts about every pair of applications and every application's range; pairs
    /// whose arguments are not a constant apart give disjunctions, only when asked for.
    fn facts(&self, facts: &Facts, disjunctive: bool) -> Vec<String> {
        let mut out = Vec::new();
        for (m, (name, args)) in self.apps.iter().enumerate() {
            let u = self.vars + m;
            let fact = facts.of(name);
            if let Some(lo) = fact.and_then(|f| f.lower.as_ref()) {
                out.push(format!("x{u} >= {}", isl_affine(lo)));
            }
            let monotone = fact.is_some_and(|f| f.monotone) && args.len() == 1;
            for (m2, (name2, args2)) in self.apps.iter().enumerate().skip(m + 1) {
                if name2 != name || args2.len() != args.len() {
                    continue;
                }
                let v = self.vars + m2;
                let gaps: Vec<Affine> = args
                    .iter()
                    .zip(args2)
                    .map(|(a, b)| a.add_scaled(-1, b))
                    .collect();
                if let [gap] = gaps.as_slice() {
                    match (gap.as_constant(), monotone) {
                        // Arguments a constant apart: the order is known.
                        (Some(g), true) if g < 0 => out.push(format!("x{u} <= x{v}")),
                        (Some(_), true) => out.push(format!("x{u} >= x{v}")),
                        (Some(_), false) => {}
                        (None, _) if !disjunctive => {}
                        (None, true) => out.push(format!(
                            "(({g} < 0 and x{u} <= x{v}) or ({g} = 0 and x{u} = x{v}) or \
                             ({g} > 0 and x{u} >= x{v}))",
                            g = isl_affine(gap)
                        )),
                        (None, false) => out.push(format!(
                            "({g} < 0 or {g} > 0 or x{u} = x{v})",
                            g = isl_affine(gap)
                        )),
                    }
                } else if disjunctive {
                    let differ: Vec<String> = gaps
                        .iter()
                        .map(|g| format!("{g} < 0 or {g} > 0", g = isl_affine(g)))
                        .collect();
                    out.push(format!("({} or x{u} = x{v})", differ.join(" or ")));
                }
            }
        }
        out
    }

    /// isl text for the union of `parts` (each a conjunction over this space's
    /// dimensions), with the facts added when given.
    pub fn isl_text(&self, parts: &[Vec<Constraint>], facts: Option<&Facts>) -> String {
        let mut symbols: Vec<String> = Vec::new();
        let mut note = |e: &Affine| {
            for (_, t) in &e.terms {
                if let Term::Sym(s) = t {
                    if !symbols.contains(s) {
                        symbols.push(s.clone());
                    }
                }
            }
        };
        for c in parts.iter().flatten() {
            note(&c.expr);
        }
        for (_, args) in &self.apps {
            args.iter().for_each(&mut note);
        }
        if let Some(facts) = facts {
            for f in &facts.0 {
                if let Some(lo) = &f.lower {
                    note(lo);
                }
            }
        }
        let params: Vec<String> = symbols
            .iter()
            .map(|s| format!("{SYMBOL_PREFIX}{s}"))
            .collect();
        let tuple: Vec<String> = (0..self.dims()).map(|d| format!("x{d}")).collect();
        let fact_text = facts.map(|f| self.facts(f, true)).unwrap_or_default();
        let pieces: Vec<String> = parts
            .iter()
            .map(|part| {
                let mut conj: Vec<String> = part.iter().map(isl_constraint).collect();
                conj.extend(fact_text.iter().cloned());
                if conj.is_empty() {
                    conj.push("1 = 1".into());
                }
                format!("[{}] : {}", tuple.join(", "), conj.join(" and "))
            })
            .collect();
        let body = if pieces.is_empty() {
            format!("[{}] : 1 = 0", tuple.join(", "))
        } else {
            pieces.join("; ")
        };
        format!("[{}] -> {{ {body} }}", params.join(", "))
    }

    /// The union of `parts` as an isl set, with the facts when given.
    pub fn to_isl(
        &self,
        isl: &Isl,
        parts: &[Vec<Constraint>],
        facts: Option<&Facts>,
    ) -> Result<IslSet, String> {
        isl.set(&self.isl_text(parts, facts))
    }

    /// A basic set isl returned, whose set dimensions are this space's dimensions `kept`
    /// (the others were projected out), as constraints with UF applications rebuilt.
    pub fn read_back(&self, bset: &BasicSet, kept: &[usize]) -> Result<Vec<Constraint>, String> {
        if bset.divs > 0
            && bset
                .constraints
                .iter()
                .any(|c| c.divs.iter().any(|&d| d != 0))
        {
            return Err(
                "the result needs existentially quantified variables (a stride or \
                        a division), which sparsec's sets do not represent"
                    .into(),
            );
        }
        let mut out = Vec::new();
        for c in &bset.constraints {
            let mut e = Affine::constant(c.constant);
            for (p, &k) in c.params.iter().enumerate() {
                if k != 0 {
                    let name = bset.params[p]
                        .strip_prefix(SYMBOL_PREFIX)
                        .unwrap_or(&bset.params[p]);
                    e = e.add_scaled(k, &Affine::term(Term::Sym(name.to_string())));
                }
            }
            for (&d, &k) in kept.iter().zip(&c.set) {
                if k != 0 {
                    e = e.add_scaled(k, &Affine::term(Term::Var(d)));
                }
            }
            out.push(Constraint {
                expr: self.concretize(&e),
                kind: if c.equality {
                    Relation0::Zero
                } else {
                    Relation0::NonNegative
                },
            });
        }
        Ok(out)
    }
}

pub(super) fn isl_affine(e: &Affine) -> String {
    let mut s = e.constant.to_string();
    for (c, t) in &e.terms {
        let name = match t {
            Term::Var(d) => format!("x{d}"),
            Term::Sym(n) => format!("{SYMBOL_PREFIX}{n}"),
            Term::Uf(..) => unreachable!("applications are abstracted before printing"),
        };
        match *c {
            c if c < 0 => s.push_str(&format!(" - {}*{name}", -c)),
            c => s.push_str(&format!(" + {c}*{name}")),
        }
    }
    s
}

fn isl_constraint(c: &Constraint) -> String {
    match c.kind {
        Relation0::NonNegative => format!("{} >= 0", isl_affine(&c.expr)),
        Relation0::Zero => format!("{} = 0", isl_affine(&c.expr)),
    }
}
