//! The solution map Φ of the paper's future work, computed once per program: the
//! regions of interest as a function of the inputs' boxes, so that a new input of the
//! same kind only applies Φ instead of solving the sparsity equations again.
//!
//! Φ is computed by solving the equations once with every input a single box whose
//! bounds are isl parameters (`{ A[a0, a1] : A_lo0 <= a0 <= A_hi0 and ... }`). That is
//! the whole of Φ when the solution splits box by box: when no product meets two cells
//! of the same input (the degrees of [`super::sparsity::Specialisation::self_products`]),
//! images and unions distribute over a union of boxes and each product takes one box per
//! input, so the regions of a union of boxes are the union, over one box per input, of
//! the single-box regions. Matrix multiply, GEMM and the stencils split this way; LU
//! (whose fill-in multiplies the matrix with itself) does not, and is refused.
//!
//! Applying Φ substitutes box bounds into the parametric pieces, with no isl call until
//! the surviving pieces are read back as sets: each piece names the bounds of only some
//! inputs, and combinations are enumerated over those alone, input by input, a
//! combination dropped as soon as a constraint over bounds alone fails.

use std::collections::{BTreeMap, BTreeSet};

use super::sparsity::{Specialisation, COALESCE_LIMIT};
use super::{isl_error, specialise, AffineError, Program, Specialised};
use crate::polyhedral::isl::{NamedBasicSet, UnionSet};

/// One box: inclusive bounds per dimension of its array (one pseudo-dimension `(0, 0)`
/// for a scalar that holds a non-zero).
pub type Bounds = Vec<(i64, i64)>;

/// Past this many combinations of boxes tried, applying the map gives up.
const MAX_COMBINATIONS: u64 = 4_000_000_000;

/// The upper bound that stands for "to the array's end" in a dense input's box (the
/// pattern is cut to the array's extents).
const UNBOUNDED: i64 = 1 << 40;

/// A parameter of the parametric solution.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// A size parameter of the program, kept symbolic.
    Size(usize),
    /// A bound of the box of input `input`, along `dim`.
    Bound {
        input: usize,
        dim: usize,
        upper: bool,
    },
}

/// One constraint of a piece: `constant + Σ bounds + Σ sizes + set·x + divs·e (= or >=) 0`.
#[derive(Clone, Debug)]
struct MapConstraint {
    equality: bool,
    constant: i64,
    /// (level in the piece's inputs, dimension, upper bound?, coefficient).
    bounds: Vec<(usize, usize, bool, i64)>,
    sizes: Vec<(usize, i64)>,
    set: Vec<i64>,
    divs: Vec<i64>,
    /// The level after which only bounds were left, if only bounds appear: it is
    /// decided there.
    decided_at: Option<usize>,
}

/// One basic set of the parametric solution.
#[derive(Clone, Debug)]
struct MapPiece {
    tuple: String,
    dims: usize,
    divs: usize,
    /// The inputs whose bounds it names, enumerated in this order.
    inputs: Vec<usize>,
    constraints: Vec<MapConstraint>,
}

/// The regions of interest of a program as a function of its inputs' boxes.
pub struct SolutionMap {
    parametric: Specialised,
    /// Every array of the program with its rank, in declaration order.
    inputs: Vec<(String, usize)>,
    statements: Vec<Vec<MapPiece>>,
    executed: Vec<Vec<MapPiece>>,
    outputs: Vec<(String, Vec<MapPiece>)>,
}

fn bound_name(array: &str, dim: usize, upper: bool) -> String {
    format!("sparsec_{array}_{}{dim}", if upper { "hi" } else { "lo" })
}

impl SolutionMap {
    /// Compute Φ for `program`, for every value of its size parameters or for those
    /// `params` gives (as [`specialise`] takes them), with every array's pattern a
    /// parameter.
    pub fn new(
        program: Program,
        params: Option<&BTreeMap<String, i64>>,
    ) -> Result<SolutionMap, AffineError> {
        SolutionMap::with_fixed(program, params, &[])
    }

    /// [`SolutionMap::new`] for a narrower class of inputs: the arrays `fixed` names keep
    /// the pattern given there (as [`specialise`] takes patterns: a work array that starts
    /// as zeros, `{ B[i, j] : false }`), and only the others' boxes are parameters. Fewer
    /// parameters make Φ cheaper to compute: stencils need it.
    pub fn with_fixed(
        program: Program,
        params: Option<&BTreeMap<String, i64>>,
        fixed: &[(String, String)],
    ) -> Result<SolutionMap, AffineError> {
        if let Some((name, _)) = fixed.iter().find(|(n, _)| program.array(n).is_none()) {
            return Err(AffineError::general(format!(
                "a pattern is given for `{name}`, which the program does not declare"
            )));
        }
        let inputs: Vec<(String, usize)> = program
            .arrays
            .iter()
            .filter(|a| !fixed.iter().any(|(n, _)| *n == a.name))
            .map(|a| (a.name.clone(), a.extents.len()))
            .collect();
        let mut slots: BTreeMap<String, Slot> = BTreeMap::new();
        for (p, name) in program.params.iter().enumerate() {
            slots.insert(name.clone(), Slot::Size(p));
        }
        let mut patterns = Vec::new();
        for (input, (name, rank)) in inputs.iter().enumerate() {
            let mut names = Vec::new();
            let mut vars = Vec::new();
            let mut conditions = Vec::new();
            for dim in 0..(*rank).max(1) {
                let (lo, hi) = (bound_name(name, dim, false), bound_name(name, dim, true));
                if slots.contains_key(&lo) || slots.contains_key(&hi) {
                    return Err(AffineError::general(format!(
                        "the size parameter `{lo}` or `{hi}` clashes with the names the \
                         solution map gives box bounds"
                    )));
                }
                let var = if *rank == 0 {
                    "0".to_string()
                } else {
                    vars.push(format!("a{dim}"));
                    format!("a{dim}")
                };
                conditions.push(format!("{lo} <= {var} <= {hi}"));
                for (n, upper) in [(lo, false), (hi, true)] {
                    slots.insert(n.clone(), Slot::Bound { input, dim, upper });
                    names.push(n);
                }
            }
            patterns.push((
                name.clone(),
                format!(
                    "[{}] -> {{ {name}[{}] : {} }}",
                    names.join(", "),
                    vars.join(", "),
                    conditions.join(" and ")
                ),
            ));
        }
        patterns.extend(fixed.iter().cloned());
        let parametric = specialise(program, &patterns, params)?;
        if let Some((input, statement)) = parametric.regions.self_products.first() {
            return Err(AffineError::general(format!(
                "this program has no solution map: `{input}` meets itself in a product in \
                 statement {statement}, so its regions depend on how the boxes of `{input}` \
                 combine and not on each box alone; analyse each input directly instead"
            )));
        }
        let err = isl_error("reading the solution map");
        let read = |set: &UnionSet| -> Result<Vec<MapPiece>, AffineError> {
            set.basic_sets()
                .map_err(&err)?
                .iter()
                .map(|b| map_piece(b, &slots))
                .collect()
        };
        let regions = &parametric.regions;
        let statements = regions
            .statements
            .iter()
            .map(read)
            .collect::<Result<_, _>>()?;
        let executed = regions
            .executed
            .iter()
            .map(read)
            .collect::<Result<_, _>>()?;
        let outputs = regions
            .outputs
            .iter()
            .map(|(name, set)| Ok((name.clone(), read(set)?)))
            .collect::<Result<_, AffineError>>()?;
        Ok(SolutionMap {
            parametric,
            inputs,
            statements,
            executed,
            outputs,
        })
    }

    /// Whether Φ is exact under the paper's rules, and what was approximated if not.
    pub fn exact(&self) -> (bool, &[String]) {
        (
            self.parametric.regions.exact,
            &self.parametric.regions.reasons,
        )
    }

    /// The number of basic sets Φ is made of.
    pub fn pieces(&self) -> usize {
        self.statements
            .iter()
            .chain(&self.executed)
            .chain(self.outputs.iter().map(|(_, p)| p))
            .map(Vec::len)
            .sum()
    }

    /// The regions of interest for inputs made of `boxes` (per array name; an array
    /// without an entry is dense, one with no boxes holds no non-zero), as
    /// [`specialise`] would find them for the union of the boxes.
    pub fn apply(&self, boxes: &BTreeMap<String, Vec<Bounds>>) -> Result<Specialised, AffineError> {
        for (name, list) in boxes {
            let Some((_, rank)) = self.inputs.iter().find(|(n, _)| n == name) else {
                let why = if self.parametric.model.program.array(name).is_some() {
                    "whose pattern the solution map fixed"
                } else {
                    "which the program does not declare"
                };
                return Err(AffineError::general(format!(
                    "boxes are given for `{name}`, {why}"
                )));
            };
            let dims = (*rank).max(1);
            if let Some(b) = list.iter().find(|b| b.len() != dims) {
                return Err(AffineError::general(format!(
                    "a box of `{name}` has {} dimension(s), and `{name}` has {rank}",
                    b.len()
                )));
            }
        }
        let resolved: Vec<Vec<Bounds>> = self
            .inputs
            .iter()
            .map(|(name, rank)| match boxes.get(name) {
                // No box: one empty box, so that pieces naming this input drop out.
                Some(list) if list.is_empty() => vec![vec![(0, -1); (*rank).max(1)]],
                Some(list) => list.clone(),
                None if *rank == 0 => vec![vec![(0, 0)]],
                None => vec![vec![(0, UNBOUNDED); *rank]],
            })
            .collect();
        let mut budget = MAX_COMBINATIONS;
        let mut read: Vec<(BTreeSet<String>, UnionSet)> = Vec::new();
        let prefix = self.parametric.model.params_prefix();
        let params = &self.parametric.model.program.params;
        let isl = &self.parametric.isl;
        isl.reset_operations();
        // isl quotes the text it could not read: thousands of pieces, cut short here.
        let err = |message: String| {
            let mut message = message;
            if message.len() > 400 {
                let mut cut = 400;
                while !message.is_char_boundary(cut) {
                    cut -= 1;
                }
                message.truncate(cut);
                message.push_str("...");
            }
            AffineError::general(format!("applying the solution map: {message}"))
        };
        let mut set_of = |pieces: &[MapPiece]| -> Result<UnionSet, AffineError> {
            let mut texts = BTreeSet::new();
            for piece in pieces {
                let mut residual: Vec<i64> = piece.constraints.iter().map(|c| c.constant).collect();
                enumerate(
                    piece,
                    0,
                    &resolved,
                    &mut residual,
                    &mut budget,
                    &mut texts,
                    params,
                )?;
            }
            if texts.is_empty() {
                return Ok(isl.empty_union_set());
            }
            // A statement's regions and its executed iterations are often the same set.
            if let Some((_, set)) = read.iter().find(|(t, _)| *t == texts) {
                return Ok(set.clone());
            }
            let key = texts.clone();
            // Read in small groups and united as a balanced tree: isl's reader adds
            // pieces one by one, sorting the growing union each time.
            let texts: Vec<String> = texts.into_iter().collect();
            let mut sets = texts
                .chunks(16)
                .map(|group| isl.union_set(&format!("{prefix}{{ {} }}", group.join("; "))))
                .collect::<Result<Vec<_>, _>>()
                .map_err(&err)?;
            while sets.len() > 1 {
                let mut next = Vec::with_capacity(sets.len().div_ceil(2));
                let mut pairs = sets.into_iter();
                while let Some(a) = pairs.next() {
                    next.push(match pairs.next() {
                        Some(b) => a.union(&b).map_err(&err)?,
                        None => a,
                    });
                }
                sets = next;
            }
            let set = sets
                .pop()
                .expect("at least one piece")
                .coalesce_below(COALESCE_LIMIT)
                .map_err(&err)?;
            read.push((key, set.clone()));
            Ok(set)
        };
        let statements = self
            .statements
            .iter()
            .map(|p| set_of(p))
            .collect::<Result<Vec<_>, _>>()?;
        let executed = self
            .executed
            .iter()
            .map(|p| set_of(p))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = self
            .outputs
            .iter()
            .map(|(name, p)| Ok((name.clone(), set_of(p)?)))
            .collect::<Result<Vec<_>, AffineError>>()?;
        let regions = &self.parametric.regions;
        Ok(Specialised {
            isl: isl.clone(),
            model: self.parametric.model.clone(),
            dataflow: self.parametric.dataflow.clone(),
            regions: Specialisation {
                statements,
                executed,
                outputs,
                exact: regions.exact,
                reasons: regions.reasons.clone(),
                self_products: Vec::new(),
            },
            params: self.parametric.params.clone(),
        })
    }
}

/// A basic set of the parametric solution, its parameters resolved to slots.
fn map_piece(b: &NamedBasicSet, slots: &BTreeMap<String, Slot>) -> Result<MapPiece, AffineError> {
    let resolved: Vec<Slot> = b
        .basic
        .params
        .iter()
        .map(|p| {
            slots.get(p).copied().ok_or_else(|| {
                AffineError::general(format!("the solution map names an unknown parameter `{p}`"))
            })
        })
        .collect::<Result<_, _>>()?;
    let mut inputs: Vec<usize> = Vec::new();
    for c in &b.basic.constraints {
        for (k, slot) in c.params.iter().zip(&resolved) {
            if let (Slot::Bound { input, .. }, true) = (slot, *k != 0) {
                if !inputs.contains(input) {
                    inputs.push(*input);
                }
            }
        }
    }
    inputs.sort();
    let constraints = b
        .basic
        .constraints
        .iter()
        .map(|c| {
            let mut bounds = Vec::new();
            let mut sizes = Vec::new();
            for (k, slot) in c.params.iter().zip(&resolved) {
                if *k == 0 {
                    continue;
                }
                match *slot {
                    Slot::Size(p) => sizes.push((p, *k)),
                    Slot::Bound { input, dim, upper } => {
                        let level = inputs.iter().position(|&i| i == input).expect("collected");
                        bounds.push((level, dim, upper, *k));
                    }
                }
            }
            let only_bounds =
                sizes.is_empty() && c.set.iter().all(|&k| k == 0) && c.divs.iter().all(|&k| k == 0);
            let last = bounds.iter().map(|b| b.0).max().unwrap_or(0);
            MapConstraint {
                equality: c.equality,
                constant: c.constant,
                decided_at: only_bounds.then_some(last),
                bounds,
                sizes,
                set: c.set.clone(),
                divs: c.divs.clone(),
            }
        })
        .collect();
    Ok(MapPiece {
        tuple: b.tuple.clone(),
        dims: b.dims,
        divs: b.basic.divs,
        inputs,
        constraints,
    })
}

/// Every combination of boxes for `piece`'s inputs from `level` on, with `residual`
/// the constants after the earlier levels' bounds: the surviving pieces' texts.
fn enumerate(
    piece: &MapPiece,
    level: usize,
    boxes: &[Vec<Bounds>],
    residual: &mut [i64],
    budget: &mut u64,
    out: &mut BTreeSet<String>,
    params: &[String],
) -> Result<(), AffineError> {
    let holds = |c: &MapConstraint, value: i64| {
        if c.equality {
            value == 0
        } else {
            value >= 0
        }
    };
    if level == piece.inputs.len() {
        let decided_false = level == 0
            && piece
                .constraints
                .iter()
                .any(|c| c.decided_at.is_some() && !holds(c, c.constant));
        if decided_false {
            return Ok(());
        }
        if let Some(range) = ranges(piece, residual) {
            out.insert(piece_text(piece, residual, &range, params));
        }
        return Ok(());
    }
    let saved = residual.to_vec();
    for b in &boxes[piece.inputs[level]] {
        *budget = budget.checked_sub(1).ok_or_else(|| {
            AffineError::general(format!(
                "applying the solution map tries more than {MAX_COMBINATIONS} combinations \
                 of boxes; fewer, larger boxes (a lower density threshold) need fewer"
            ))
        })?;
        let mut alive = true;
        for (c, constraint) in piece.constraints.iter().enumerate() {
            let mut value = saved[c];
            for &(l, dim, upper, k) in &constraint.bounds {
                if l == level {
                    value += k * if upper { b[dim].1 } else { b[dim].0 };
                }
            }
            residual[c] = value;
            if constraint.decided_at == Some(level) && !holds(constraint, value) {
                alive = false;
                break;
            }
        }
        if alive {
            enumerate(piece, level + 1, boxes, residual, budget, out, params)?;
        }
    }
    residual.copy_from_slice(&saved);
    Ok(())
}

/// Whether a constraint (bounds substituted) is on one variable alone, with no size
/// parameter or division: `a·x + constant (>= or =) 0`, as the variable and `a`.
fn single_variable(c: &MapConstraint) -> Option<(usize, i64)> {
    if !c.sizes.is_empty() || c.divs.iter().any(|&k| k != 0) {
        return None;
    }
    let mut vars = c.set.iter().enumerate().filter(|(_, &k)| k != 0);
    match (vars.next(), vars.next()) {
        (Some((d, &a)), None) => Some((d, a)),
        _ => None,
    }
}

/// The range of each variable that the constraints on it alone allow (bounds
/// substituted), or None when some variable has no value: the common way a combination
/// of boxes gives nothing (boxes that do not overlap), which the constraints over bounds
/// alone do not say.
fn ranges(piece: &MapPiece, residual: &[i64]) -> Option<Vec<(i64, i64)>> {
    let mut range = vec![(i64::MIN, i64::MAX); piece.dims];
    for (c, &constant) in piece.constraints.iter().zip(residual) {
        let Some((d, a)) = single_variable(c) else {
            continue;
        };
        // a·x + constant >= 0 (or = 0).
        let (lo, hi) = if c.equality {
            if constant % a != 0 {
                return None;
            }
            (Some(-constant / a), Some(-constant / a))
        } else if a > 0 {
            (Some(-(constant.div_euclid(a))), None)
        } else {
            (None, Some(constant.div_euclid(-a)))
        };
        if let Some(lo) = lo {
            range[d].0 = range[d].0.max(lo);
        }
        if let Some(hi) = hi {
            range[d].1 = range[d].1.min(hi);
        }
        if range[d].0 > range[d].1 {
            return None;
        }
    }
    Some(range)
}

/// `S[x0, x1] : constraints` with the bounds substituted: each variable's `range`
/// from the constraints on it alone, then the others (those over bounds alone are left
/// out: they hold). Fewer constraints make the text quicker for isl to read.
fn piece_text(
    piece: &MapPiece,
    residual: &[i64],
    range: &[(i64, i64)],
    params: &[String],
) -> String {
    let vars: Vec<String> = (0..piece.dims).map(|d| format!("x{d}")).collect();
    let divs: Vec<String> = (0..piece.divs).map(|d| format!("e{d}")).collect();
    let mut conditions = Vec::new();
    for (v, &(lo, hi)) in vars.iter().zip(range) {
        match (lo > i64::MIN, hi < i64::MAX) {
            (true, true) if lo == hi => conditions.push(format!("{v} = {lo}")),
            (true, true) => conditions.push(format!("{lo} <= {v} <= {hi}")),
            (true, false) => conditions.push(format!("{v} >= {lo}")),
            (false, true) => conditions.push(format!("{v} <= {hi}")),
            (false, false) => {}
        }
    }
    for (c, constant) in piece.constraints.iter().zip(residual) {
        if c.decided_at.is_some() || single_variable(c).is_some() {
            continue;
        }
        let mut terms = vec![constant.to_string()];
        let named = c
            .sizes
            .iter()
            .map(|&(p, k)| (k, params[p].as_str()))
            .chain(c.set.iter().zip(&vars).map(|(&k, v)| (k, v.as_str())))
            .chain(c.divs.iter().zip(&divs).map(|(&k, v)| (k, v.as_str())));
        for (k, name) in named {
            if k != 0 {
                terms.push(format!("{k}*{name}"));
            }
        }
        let op = if c.equality { "=" } else { ">=" };
        conditions.push(format!("{} {op} 0", terms.join(" + ")));
    }
    let body = if conditions.is_empty() {
        "true".to_string()
    } else {
        conditions.join(" and ")
    };
    let body = if divs.is_empty() {
        body
    } else {
        format!("exists ({} : {body})", divs.join(", "))
    };
    format!("{}[{}] : {body}", piece.tuple, vars.join(", "))
}
