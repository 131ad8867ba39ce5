//! Random schedules over a generated statement: chains of the scheduling language's
//! transformations naming the statement's variables, accesses and subexpressions. Most are
//! plausible, some cannot hold (a fuse of loops that are not nested, a variable that does
//! not exist): sparsec must refuse those clearly.

use std::fmt::Write as _;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

use crate::case::{access_text, print_expr, tensor_name, Expr, Var};

/// Chooses transformations, keeping track of the loop variables they create and replace.
struct Chain<'a> {
    rng: &'a mut StdRng,
    vars: &'a [Var],
    /// The loop variables as the chain leaves them, roughly in loop order.
    live: Vec<String>,
    /// Variables made by `pos`, which `coord` may turn back into coordinates.
    positions: Vec<String>,
    /// `(access text, its variables)` of every access with variables.
    accesses: Vec<(String, Vec<String>)>,
    /// `(subexpression text, its variables)` of every operation and access, and of every
    /// workspace a `precompute` named, for `precompute`.
    subexpressions: Vec<(String, Vec<String>)>,
    fresh: usize,
    /// Whether `IgnoreRaces` may be chosen: only where a race cannot change the result.
    racy_ok: bool,
}

/// A schedule of one to three transformations for the statement `statement` whose
/// right-hand side is `rhs` over `vars`.
pub fn schedule(
    rng: &mut StdRng,
    vars: &[Var],
    rhs: &Expr,
    statement: &str,
    racy_ok: bool,
) -> String {
    let live: Vec<String> = vars
        .iter()
        .filter(|v| {
            statement
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == v.name)
        })
        .map(|v| v.name.clone())
        .collect();
    let mut chain = Chain {
        rng,
        vars,
        live,
        positions: Vec::new(),
        accesses: Vec::new(),
        subexpressions: Vec::new(),
        fresh: 0,
        racy_ok,
    };
    chain.collect(rhs);
    // Now and then a longer chain, so that combinations (pos then coord then precompute,
    // a split inside a fused space, ...) come up often enough to count.
    let count = chain.rng.gen_range(1..=3) + usize::from(chain.rng.gen_bool(0.3)) * 2;
    let mut steps = Vec::new();
    for k in 0..count {
        let last = k + 1 == count;
        if let Some(step) = chain.step(last) {
            steps.push(step);
        }
    }
    steps.join(",")
}

impl Chain<'_> {
    fn collect(&mut self, e: &Expr) -> Vec<String> {
        match e {
            Expr::Access { tensor, vars } => {
                let names: Vec<String> = vars.iter().map(|&v| self.vars[v].name.clone()).collect();
                if !vars.is_empty() {
                    let text = format!(
                        "{}{}",
                        tensor_name(*tensor),
                        access_text(self.vars, vars, false)
                    );
                    self.accesses.push((text.clone(), names.clone()));
                    self.subexpressions.push((text, names.clone()));
                }
                names
            }
            Expr::Literal(_) => Vec::new(),
            Expr::Neg(x) => {
                let names = self.collect(x);
                self.push_subexpression(e, &names);
                names
            }
            Expr::Binary(_, l, r) => {
                let mut names = self.collect(l);
                for n in self.collect(r) {
                    if !names.contains(&n) {
                        names.push(n);
                    }
                }
                self.push_subexpression(e, &names);
                names
            }
        }
    }

    fn push_subexpression(&mut self, e: &Expr, names: &[String]) {
        if !names.is_empty() {
            let mut text = String::new();
            print_expr(e, self.vars, &mut text, 0);
            self.subexpressions.push((text, names.to_vec()));
        }
    }

    fn fresh(&mut self, stem: &str) -> String {
        self.fresh += 1;
        format!("{stem}{}", self.fresh)
    }

    /// A live variable, or now and then one that does not exist.
    fn pick(&mut self) -> Option<String> {
        if self.rng.gen_bool(0.03) {
            return Some("zz".to_string());
        }
        self.live.choose(self.rng).cloned()
    }

    fn replace(&mut self, old: &str, new: &[String]) {
        if let Some(at) = self.live.iter().position(|v| v == old) {
            self.live.splice(at..=at, new.iter().cloned());
        }
    }

    fn step(&mut self, last: bool) -> Option<String> {
        let kind = if last && self.rng.gen_bool(0.5) {
            9
        } else {
            self.rng.gen_range(0..10)
        };
        match kind {
            0 | 1 => {
                let v = self.pick()?;
                let (outer, inner) = (self.fresh(&format!("{v}o")), self.fresh(&format!("{v}i")));
                let by_parts = self.rng.gen_bool(0.3);
                let factor = if by_parts {
                    *[1, 2, 3, 4].choose(self.rng).expect("non-empty")
                } else {
                    *[1, 2, 3, 4, 8, 32].choose(self.rng).expect("non-empty")
                };
                self.replace(&v, &[outer.clone(), inner.clone()]);
                let name = if by_parts { "divide" } else { "split" };
                Some(format!("{name}({v},{outer},{inner},{factor})"))
            }
            2 => {
                if self.live.len() < 2 {
                    return None;
                }
                // Mostly adjacent loops, which fuse when they nest directly.
                let at = self.rng.gen_range(0..self.live.len() - 1);
                let (a, b) = if self.rng.gen_bool(0.8) {
                    (self.live[at].clone(), self.live[at + 1].clone())
                } else {
                    (self.live[at + 1].clone(), self.live[at].clone())
                };
                let f = self.fresh("f");
                self.live.retain(|v| *v != b);
                self.replace(&a, std::slice::from_ref(&f));
                Some(format!("fuse({a},{b},{f})"))
            }
            3 => {
                let candidates: Vec<String> = self
                    .live
                    .iter()
                    .filter(|v| self.accesses.iter().any(|(_, vs)| vs.contains(v)))
                    .cloned()
                    .collect();
                let v = candidates.choose(self.rng)?.clone();
                let holders: Vec<String> = self
                    .accesses
                    .iter()
                    .filter(|(_, vs)| vs.contains(&v))
                    .map(|(t, _)| t.clone())
                    .collect();
                let access = holders.choose(self.rng)?.clone();
                let p = self.fresh(&format!("{v}p"));
                self.replace(&v, std::slice::from_ref(&p));
                self.positions.push(p.clone());
                Some(format!("pos({v},{p},{access})"))
            }
            4 => {
                let p = self.positions.pop()?;
                let c = self.fresh(&format!("{p}c"));
                self.replace(&p, std::slice::from_ref(&c));
                Some(format!("coord({p},{c})"))
            }
            5 => {
                let v = self.pick()?;
                let b = self.fresh(&format!("{v}b"));
                let size = self.vars.iter().find(|x| x.name == v).map_or(4, |x| x.size);
                let value = self.rng.gen_range(1..=size + 2);
                let kind = *["MaxExact", "MaxConstraint", "MinExact", "MinConstraint"]
                    .choose(self.rng)
                    .expect("non-empty");
                self.replace(&v, std::slice::from_ref(&b));
                Some(format!("bound({v},{b},{kind},{value})"))
            }
            6 => {
                if self.live.len() < 2 {
                    return None;
                }
                if self.rng.gen_bool(0.5) {
                    let mut order = self.live.clone();
                    order.shuffle(self.rng);
                    self.live = order.clone();
                    return Some(format!("order({})", order.join(",")));
                }
                let mut two: Vec<String> =
                    self.live.choose_multiple(self.rng, 2).cloned().collect();
                two.shuffle(self.rng);
                let (a, b) = (two[0].clone(), two[1].clone());
                let (ia, ib) = (
                    self.live.iter().position(|v| *v == a)?,
                    self.live.iter().position(|v| *v == b)?,
                );
                self.live.swap(ia, ib);
                Some(format!("reorder({a},{b})"))
            }
            7 => {
                let v = self.pick()?;
                let factor = *[2, 3, 4, 8].choose(self.rng).expect("non-empty");
                Some(format!("unroll({v},{factor})"))
            }
            8 => {
                let (text, names) = self.subexpressions.choose(self.rng)?.clone();
                let take = self.rng.gen_range(1..=names.len().min(2));
                // Now and then over loops the chain made (a split's inner loop: a tile).
                let from = if self.rng.gen_bool(0.25) {
                    &self.live
                } else {
                    &names
                };
                let chosen: Vec<String> = from.choose_multiple(self.rng, take).cloned().collect();
                let workspace: Vec<String> = chosen
                    .iter()
                    .map(|v| self.fresh(&format!("{v}w")))
                    .collect();
                let list = |vs: &[String]| {
                    if vs.len() == 1 {
                        vs[0].clone()
                    } else {
                        format!("({})", vs.join(","))
                    }
                };
                let mut step = format!("precompute({text},{},{}", list(&chosen), list(&workspace));
                if self.rng.gen_bool(0.4) {
                    // A named workspace, which a later precompute may read.
                    let name = self.fresh("w");
                    let _ = write!(step, ",{name}");
                    self.subexpressions
                        .push((format!("{name}({})", chosen.join(",")), chosen.clone()));
                }
                step.push(')');
                // The consumer keeps its loops; the producer's loops are new ones.
                self.live.extend(workspace);
                Some(step)
            }
            _ => {
                let v = self.pick()?;
                // GPU units lower to GPU loops (and outline) though no target runs them:
                // their nesting preconditions and the IR they make are fuzzed too.
                let unit = match self.rng.gen_range(0..20) {
                    0 => "GPUThread",
                    1 => "GPUBlock",
                    2 => "GPUWarp",
                    3 | 4 => "CPUVector",
                    _ => "CPUThread",
                };
                let mut races = vec![
                    "NoRaces",
                    "NoRaces",
                    "Atomics",
                    "Temporary",
                    "ParallelReduction",
                ];
                if self.racy_ok {
                    races.push("IgnoreRaces");
                }
                let race = *races.choose(self.rng).expect("non-empty");
                let mut step = format!("parallelize({v},{unit},{race}");
                if self.rng.gen_bool(0.2) {
                    let kind = *["static", "dynamic", "guided"]
                        .choose(self.rng)
                        .expect("non-empty");
                    let _ = write!(step, ",{kind}");
                    if self.rng.gen_bool(0.5) {
                        let _ = write!(step, ",{}", self.rng.gen_range(1..=8));
                    }
                }
                step.push(')');
                Some(step)
            }
        }
    }
}
