//! A simple sparse evaluator of concrete index notation, independent of lowering and code
//! generation, used as the oracle in tests and by `sparsec run --check`.
//!
//! Every subexpression is evaluated to a `Func`: a function of its free index variables
//! that equals a constant `fill` everywhere except at the coordinates it lists. Inputs are
//! read through [`Tensor::for_each_stored`] (fill 0), so the work and memory follow the
//! stored entries rather than the index space: a product is listed only where both factors
//! are, a `Sum` groups the listed entries by the remaining variables and adds the fill for
//! the unlisted ones, and a nonzero literal or a division changes the fill instead of
//! making the operand dense. A dense expansion happens only where the value genuinely
//! varies over a variable the operand with listed entries lacks (`A(i,j) + x(k)`). A sum
//! of a product of three or more such factors adds each product up as the factors are
//! joined, never listing the product over all variables (SDDMM, MTTKRP).

mod budget;
mod join;
mod pointwise;
mod semiring;

use indexmap::IndexMap;
use smallvec::SmallVec;

use join::{join, joined_sum};
use pointwise::{binary, math};
use std::hash::{BuildHasherDefault, Hasher};

use crate::format::Format;
use crate::notation::ast::Op;
use crate::notation::cin::{CExpr, Statement, VarId};
use crate::tensor::{unscaled_difference, Coo, Tensor, ValueType, Values};

/// The Fx hash (rustc's): coordinate tuples hash several times faster than with SipHash,
/// which dominates evaluation on millions of entries.
#[derive(Default)]
struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Entries by their coordinates, iterated in the order they were first listed: an input's
/// in its storage order, so that the components a join looks up or adds to next (SpMV's
/// `y(i)` of one row after another) lie close together, as they would not in a hash
/// map's order. The order is the same on every run, hence summation order too. With
/// [`join`]'s arrays, SpMV with `--check` on a uniform 1M x 1M with 10M entries took
/// 9.8-10.7 s with hashbrown's order and 7.6-7.8 s with this one (peak memory 1.62 GB and
/// 1.31 GB), SDDMM on a banded 30k x 30k with k = 32 took 2.9 s and 1.8 s.
type Map<K, V> = IndexMap<K, V, BuildHasherDefault<FxHasher>>;

/// Coordinates in a function's variable order: held inline up to order 4, so that the
/// millions of components an SDDMM or MTTKRP join lists are not one allocation each.
type Key = SmallVec<[usize; 4]>;

/// A component's value and, beside it, the magnitude of its terms: the same evaluation
/// with every stored value and literal replaced by its absolute value and every
/// subtraction by an addition. Both are computed in one pass, because the joins that list
/// the components are most of the work.
#[derive(Clone, Copy)]
struct Pair {
    value: f64,
    magnitude: f64,
}

impl Pair {
    const ZERO: Pair = Pair {
        value: 0.0,
        magnitude: 0.0,
    };

    /// A stored value or a literal.
    fn exact(x: f64) -> Pair {
        Pair {
            value: x,
            magnitude: x.abs(),
        }
    }

    /// `x op y` in IEEE arithmetic (stored values, explicit zeros included); magnitudes
    /// add up for a difference, as a difference's terms are as large as a sum's.
    fn apply(op: Op, x: Pair, y: Pair) -> Pair {
        let magnitude_op = if op == Op::Sub { Op::Add } else { op };
        Pair {
            value: op.apply(x.value, y.value),
            magnitude: magnitude_op.apply(x.magnitude, y.magnitude),
        }
    }

    /// The negated value; a magnitude has no sign.
    fn negated(self) -> Pair {
        Pair {
            value: -self.value,
            ..self
        }
    }

    fn scaled(self, n: f64) -> Pair {
        Pair {
            value: self.value * n,
            magnitude: self.magnitude * n,
        }
    }

    fn add(&mut self, x: Pair) {
        self.value += x.value;
        self.magnitude += x.magnitude;
    }

    fn times(self, x: Pair) -> Pair {
        Pair::apply(Op::Mul, self, x)
    }
}

/// A function of `vars`: `entries[coords]` where listed (coordinates in `vars` order),
/// `fill` elsewhere.
struct Func {
    vars: Vec<VarId>,
    entries: Map<Key, Pair>,
    fill: Pair,
    /// The fill is a structural zero: the unlisted coordinates are entries no operand
    /// stores (rather than values computed there), which annihilate a product or a
    /// numerator whatever the other operand holds there, infinities included.
    structural: bool,
}

impl Func {
    fn constant(fill: Pair) -> Func {
        Func {
            vars: Vec::new(),
            entries: Map::default(),
            fill,
            structural: false,
        }
    }

    fn get(&self, key: &[usize]) -> Pair {
        self.entries.get(key).copied().unwrap_or(self.fill)
    }

    /// A function with no listed entries is the constant `fill`: dropping its variables
    /// keeps later operations from expanding over them.
    fn normalized(mut self) -> Func {
        if self.entries.is_empty() {
            self.vars.clear();
        }
        self
    }
}

/// What is being evaluated.
struct Cx<'a> {
    stmt: &'a Statement,
    inputs: &'a [&'a Tensor],
}

/// Calls `visit` with every assignment of coordinates below `sizes`, reusing one buffer.
/// The points count against the evaluation's budget ([`budget`]): none is visited when
/// they would exceed it.
fn for_each_point(sizes: &[usize], mut visit: impl FnMut(&[usize])) {
    if sizes.contains(&0) {
        return;
    }
    let points = sizes
        .iter()
        .try_fold(1u64, |n, &s| n.checked_mul(s as u64))
        .unwrap_or(u64::MAX);
    if !budget::take(points) {
        return;
    }
    let mut point = vec![0usize; sizes.len()];
    loop {
        visit(&point);
        let mut m = sizes.len();
        loop {
            if m == 0 {
                return;
            }
            m -= 1;
            point[m] += 1;
            if point[m] < sizes[m] {
                break;
            }
            point[m] = 0;
        }
    }
}

/// How an access's stored components become keys over its distinct variables.
struct AccessKeys {
    /// The access's variables, each once, in order of first use.
    vars: Vec<VarId>,
    /// The mode that supplies each variable's coordinate.
    first: Vec<usize>,
    /// Modes of a repeated variable (`A(i,i)`) and the mode it first appears at: only
    /// components whose coordinates agree there are the access's.
    repeated: Vec<(usize, usize)>,
}

impl AccessKeys {
    fn new(indices: &[VarId]) -> AccessKeys {
        let mut vars: Vec<VarId> = Vec::new();
        for &v in indices {
            if !vars.contains(&v) {
                vars.push(v);
            }
        }
        let first: Vec<usize> = vars
            .iter()
            .map(|v| indices.iter().position(|w| w == v).expect("listed"))
            .collect();
        let repeated = indices
            .iter()
            .enumerate()
            .map(|(m, v)| (m, first[vars.iter().position(|w| w == v).expect("listed")]))
            .filter(|&(m, source)| m != source)
            .collect();
        AccessKeys {
            vars,
            first,
            repeated,
        }
    }

    /// The key of the component at coordinates `c`, or `None` where a repeated variable's
    /// coordinates disagree.
    fn key(&self, c: &[i64]) -> Option<Key> {
        if self.repeated.iter().any(|&(m, source)| c[m] != c[source]) {
            return None;
        }
        Some(self.first.iter().map(|&m| c[m] as usize).collect())
    }
}

fn eval(expr: &CExpr, cx: &Cx) -> Func {
    match expr {
        CExpr::Access(a) => {
            let tensor = cx.inputs[a.tensor - 1];
            let keys = AccessKeys::new(&a.indices);
            // Sized for every stored entry at once: growing a map of millions of entries
            // by doubling rehashes it and touches fresh pages each time.
            let mut entries: Map<Key, Pair> =
                Map::with_capacity_and_hasher(tensor.stored_values(), Default::default());
            tensor.for_each_stored(|c, x| {
                let Some(key) = keys.key(c) else {
                    return;
                };
                // Duplicates add up, as they do in the tensor's value; a single entry keeps
                // its value exactly (-0 included, which `0.0 + x` would make +0).
                entries
                    .entry(key)
                    .and_modify(|sum: &mut Pair| sum.value += x)
                    .or_insert(Pair::exact(x));
            });
            // The magnitude of a stored component is that of its value, duplicates summed.
            entries
                .values_mut()
                .for_each(|x| x.magnitude = x.value.abs());
            listed(keys.vars, entries)
        }
        CExpr::Literal(x) => Func::constant(Pair::exact(*x)),
        CExpr::Neg(e) => {
            let mut f = eval(e, cx);
            f.entries.values_mut().for_each(|x| *x = x.negated());
            // A structural zero has no sign (kernels drop the negated absent operand):
            // `1 / -A(i)` is +inf where `A` stores nothing, as `1 / A(i)` is.
            if !f.structural {
                f.fill = f.fill.negated();
            }
            f
        }
        CExpr::Binary(op, a, b) => binary(*op, eval(a, cx), eval(b, cx), cx.stmt),
        CExpr::Math(f, args) => math(*f, args.iter().map(|a| eval(a, cx)).collect(), cx.stmt),
        CExpr::Sum(v, e) => {
            let size = cx.stmt.vars[*v].size;
            if let CExpr::Binary(Op::Mul, ..) = &**e {
                let mut factors: Vec<Func> =
                    left_factors(e).into_iter().map(|f| eval(f, cx)).collect();
                if factors.len() > 2
                    && factors.iter().all(|f| f.structural)
                    && factors.iter().any(|f| f.vars.contains(v))
                {
                    return joined_sum(*v, &factors, cx.stmt);
                }
                let last = factors.pop().expect("a product has two factors");
                let mut factors = factors.into_iter();
                let first = factors.next().expect("a product has two factors");
                let rest = factors.fold(first, |product, f| binary(Op::Mul, product, f, cx.stmt));
                return contract(*v, size, rest, last, cx.stmt);
            }
            sum(*v, eval(e, cx), size)
        }
    }
}

/// `Sum(var, a * b)` without listing the product over all its variables first (the
/// intermediate of SpGEMM is much larger than its result).
fn contract(var: VarId, size: usize, a: Func, b: Func, stmt: &Statement) -> Func {
    let mut vars = a.vars.clone();
    vars.extend(b.vars.iter().filter(|v| !a.vars.contains(v)));
    let Some(drop) = vars.iter().position(|&v| v == var) else {
        return sum(var, binary(Op::Mul, a, b, stmt), size);
    };
    if !a.structural || !b.structural {
        return sum(var, binary(Op::Mul, a, b, stmt), size);
    }
    let b_pos = positions(&b.vars, &vars);
    let entries = join(&a, &b, &vars, &b_pos, Some(drop), stmt);
    vars.remove(drop);
    listed(vars, entries)
}

/// The factors of a product along its left spine, leftmost first: `(a * b) * c` is
/// `[a, b, c]`, which multiplies in that order; `a * (b * c)` is `[a, b * c]`.
fn left_factors(e: &CExpr) -> Vec<&CExpr> {
    match e {
        CExpr::Binary(Op::Mul, a, b) => {
            let mut factors = left_factors(a);
            factors.push(b);
            factors
        }
        other => vec![other],
    }
}

/// `entries` over `vars`, structural zeros elsewhere: an input's stored components, or
/// sums of their products.
fn listed(vars: Vec<VarId>, entries: Map<Key, Pair>) -> Func {
    Func {
        vars,
        entries,
        fill: Pair::ZERO,
        structural: true,
    }
    .normalized()
}

/// Where each of `of` sits in `vars` (which holds them all).
fn positions(of: &[VarId], vars: &[VarId]) -> Vec<usize> {
    of.iter()
        .map(|v| vars.iter().position(|w| w == v).expect("united"))
        .collect()
}

/// `f` summed over all `size` values of `var`.
fn sum(var: VarId, f: Func, size: usize) -> Func {
    if size == 0 {
        return Func::constant(Pair::ZERO);
    }
    let Some(pos) = f.vars.iter().position(|&v| v == var) else {
        // Constant in `var`: every term is the same.
        let n = size as f64;
        return Func {
            vars: f.vars,
            entries: f
                .entries
                .into_iter()
                .map(|(k, x)| (k, x.scaled(n)))
                .collect(),
            fill: if f.structural {
                Pair::ZERO
            } else {
                f.fill.scaled(n)
            },
            structural: f.structural,
        };
    };
    let mut groups: Map<Key, (Pair, usize)> = Map::default();
    for (mut k, x) in f.entries {
        k.remove(pos);
        let g = groups.entry(k).or_insert((Pair::ZERO, 0));
        g.0.add(x);
        g.1 += 1;
    }
    // The unlisted values of `var` contribute the fill each (skipped when there are none,
    // so that a non-finite fill does not leak into a fully listed group).
    let unlisted = |count: usize| {
        if count == size || f.structural {
            Pair::ZERO
        } else {
            f.fill.scaled((size - count) as f64)
        }
    };
    let mut vars = f.vars;
    vars.remove(pos);
    Func {
        vars,
        fill: unlisted(0),
        structural: f.structural,
        entries: groups
            .into_iter()
            .map(|(k, (mut total, count))| {
                total.add(unlisted(count));
                (k, total)
            })
            .collect(),
    }
    .normalized()
}

/// The right-hand side with every reduction distributed over the products and numerators
/// around it: a `Sum` whose path up to the root, or up to the `Sum` that encloses it,
/// passes only through `*`, unary minus and numerators becomes a sum of the whole
/// expression at that level (`c(i) * sum_j A(i,j)` is `sum_j c(i) * A(i,j)`). Equal in
/// real arithmetic; under IEEE it decides the non-finite cases (`(sum_j a(j)) / 0` with
/// a zero term is NaN when distributed, and kernels distribute, as TACO's do). Operands of
/// `+`, `-` and denominators keep their sums.
pub fn distribute_reductions(rhs: &CExpr) -> CExpr {
    fn within(e: &CExpr, linear: bool, pulled: &mut Vec<VarId>) -> CExpr {
        let boxed = |e: CExpr| Box::new(e);
        match e {
            CExpr::Access(_) | CExpr::Literal(_) => e.clone(),
            CExpr::Neg(a) => CExpr::Neg(boxed(within(a, linear, pulled))),
            CExpr::Binary(op, a, b) => {
                let (left, right) = match op {
                    Op::Mul => (linear, linear),
                    Op::Div => (linear, false),
                    Op::Add | Op::Sub => (false, false),
                };
                CExpr::Binary(
                    *op,
                    boxed(within(a, left, pulled)),
                    boxed(within(b, right, pulled)),
                )
            }
            // A sum inside a function is not a factor: it stays where it is.
            CExpr::Math(f, args) => {
                CExpr::Math(*f, args.iter().map(|a| within(a, false, pulled)).collect())
            }
            CExpr::Sum(v, body) if linear => {
                pulled.push(*v);
                within(body, true, pulled)
            }
            CExpr::Sum(v, body) => CExpr::Sum(*v, boxed(distribute_reductions(body))),
        }
    }
    let mut pulled = Vec::new();
    let body = within(rhs, true, &mut pulled);
    pulled
        .into_iter()
        .rev()
        .fold(body, |e, v| CExpr::Sum(v, Box::new(e)))
}

/// Evaluate `stmt`. `inputs[k]` holds `stmt.tensors[k + 1]`; `output_init` is the
/// output's previous contents for `+=` (zeros when `None`; ignored for `=`).
///
/// Reductions distribute over the products and numerators around them
/// ([`distribute_reductions`]). Stored values follow IEEE arithmetic (explicit zeros
/// included: `0 / 0` is NaN), and an
/// unstored entry is a structural zero that annihilates: a product is 0 wherever a factor
/// is unstored, and `a / b` is 0 wherever `a` is (an infinite or NaN other operand
/// included), as the kernels skip those coordinates. The result
/// is an `f64` tensor of the output's dimensions: all-dense (row-major) when the output is
/// declared all-dense or is nonzero at its unlisted points, else in `csf` format, storing
/// the components the evaluation listed (explicit zeros included).
///
/// # Panics
/// If the number of inputs or any tensor's dimensions disagree with the statement.
pub fn evaluate(stmt: &Statement, inputs: &[&Tensor], output_init: Option<&Tensor>) -> Tensor {
    if !stmt.semiring.is_arithmetic() {
        return semiring::evaluate(stmt, inputs, output_init);
    }
    let f = evaluate_pairs(stmt, inputs, output_init);
    output(stmt, &f, output_init, Lane::Value)
}

/// Per output component, the sum of the absolute values of the terms that
/// [`evaluate`] adds up: the scale of the rounding error of any evaluation order.
pub fn magnitude(stmt: &Statement, inputs: &[&Tensor], output_init: Option<&Tensor>) -> Tensor {
    if !stmt.semiring.is_arithmetic() {
        return evaluate_with_magnitude(stmt, inputs, output_init).1;
    }
    let f = evaluate_pairs(stmt, inputs, output_init);
    output(stmt, &f, output_init, Lane::Magnitude)
}

/// [`evaluate_with_magnitude`], or an error when the evaluation would list more points
/// than memory holds (a scalar added over a dimension of billions), instead of filling
/// memory until the process aborts.
///
/// # Panics
/// As [`evaluate`].
pub fn try_evaluate_with_magnitude(
    stmt: &Statement,
    inputs: &[&Tensor],
    output_init: Option<&Tensor>,
) -> Result<(Tensor, Tensor), String> {
    budget::evaluate_within(|| evaluate_with_magnitude(stmt, inputs, output_init))
}

/// [`evaluate`] and [`magnitude`] together, for the price of one evaluation: the result,
/// then the magnitude of its terms.
///
/// # Panics
/// As [`evaluate`].
pub fn evaluate_with_magnitude(
    stmt: &Statement,
    inputs: &[&Tensor],
    output_init: Option<&Tensor>,
) -> (Tensor, Tensor) {
    if !stmt.semiring.is_arithmetic() {
        // Over a semiring the result's own size is the scale of its rounding error
        // (only `+` and `*` round, and a `min` or `max` picks one of its terms).
        let value = semiring::evaluate(stmt, inputs, output_init);
        let mut magnitude = value.clone();
        let abs: Vec<f64> = (0..value.values().len())
            .map(|p| value.values().get(p).abs())
            .collect();
        *magnitude.values_mut() = Values::F64(abs);
        return (value, magnitude);
    }
    let f = evaluate_pairs(stmt, inputs, output_init);
    (
        output(stmt, &f, output_init, Lane::Value),
        output(stmt, &f, output_init, Lane::Magnitude),
    )
}

/// Largest difference between `got` and `expected` relative to `1 + magnitude`, per
/// component (all three of the same dimensions, in any formats; an unstored component is
/// zero). Equal non-finite components (NaN against NaN, `+inf` against `+inf`) agree; a NaN
/// against a number or `+inf` against `-inf` is an infinite error.
pub fn max_error(got: &Tensor, expected: &Tensor, magnitude: &Tensor) -> f64 {
    let dims = expected.dims();
    for (t, what) in [(got, "result"), (magnitude, "magnitude")] {
        assert_eq!(
            t.dims(),
            dims,
            "{what}: tensor dimensions differ from the reference's"
        );
    }
    let lists = [got.to_coo(), expected.to_coo(), magnitude.to_coo()];
    let n = dims.len();
    let mut next = [0usize; 3];
    let mut worst = 0.0f64;
    // Merge the three sorted lists, visiting each stored coordinate once.
    loop {
        let Some(least) = (0..3)
            .filter(|&l| next[l] < lists[l].len())
            .map(|l| lists[l].coord(next[l]))
            .min()
        else {
            return worst;
        };
        let least = least.to_vec();
        let mut x = [0.0; 3];
        for l in 0..3 {
            if next[l] < lists[l].len() && lists[l].coords[next[l] * n..][..n] == least[..] {
                x[l] = lists[l].values[next[l]];
                next[l] += 1;
            }
        }
        let [g, e, m] = x;
        let error = unscaled_difference(g, e).unwrap_or_else(|| {
            let r = (g - e).abs() / (1.0 + m);
            // A NaN magnitude (a NaN term that cancelled out of both results) leaves
            // no scale to forgive the difference by.
            if r.is_nan() {
                f64::INFINITY
            } else {
                r
            }
        });
        worst = worst.max(error);
    }
}

fn check_dims(t: &Tensor, dims: &[usize], what: &str) {
    assert_eq!(
        t.dims(),
        dims,
        "{what}: tensor dimensions differ from the statement's"
    );
}

/// Which half of the evaluated pairs an output tensor holds.
#[derive(Clone, Copy)]
enum Lane {
    Value,
    Magnitude,
}

impl Lane {
    fn of(self, x: Pair) -> f64 {
        match self {
            Lane::Value => x.value,
            Lane::Magnitude => x.magnitude,
        }
    }
}

/// The right-hand side as a function of its free variables, after checking the tensors'
/// dimensions against the statement.
fn evaluate_pairs(stmt: &Statement, inputs: &[&Tensor], output_init: Option<&Tensor>) -> Func {
    assert_eq!(
        inputs.len() + 1,
        stmt.tensors.len(),
        "the statement has {} inputs, but {} tensors were given",
        stmt.tensors.len() - 1,
        inputs.len()
    );
    for (k, t) in inputs.iter().enumerate() {
        let decl = &stmt.tensors[k + 1];
        check_dims(t, &decl.dims, &format!("input `{}`", decl.name));
    }
    if let Some(init) = output_init.filter(|_| stmt.accumulate) {
        check_dims(init, &stmt.tensors[0].dims, "initial output");
    }
    eval(&distribute_reductions(&stmt.rhs), &Cx { stmt, inputs })
}

/// One lane of `f` as the output tensor, combined with the output's previous contents
/// under `+=`.
fn output(stmt: &Statement, f: &Func, output_init: Option<&Tensor>, lane: Lane) -> Tensor {
    let out_dims = &stmt.tensors[0].dims;
    let init = output_init.filter(|_| stmt.accumulate);
    let fill = lane.of(f.fill);
    // The previous contents and the right-hand side's value combine per component.
    let combine = |old: f64, x: f64| match lane {
        Lane::Value => old + x,
        Lane::Magnitude => old.abs() + x,
    };
    // Where each of the function's variables sits on the left-hand side.
    let lhs_pos: Vec<usize> = f
        .vars
        .iter()
        .map(|v| {
            stmt.lhs
                .iter()
                .position(|w| w == v)
                .expect("the right-hand side's free variables are the left-hand side's")
        })
        .collect();
    let order = stmt.lhs.len();
    if stmt.tensors[0].format.is_all_dense() || fill != 0.0 || order == 0 {
        let mut out = vec![fill; out_dims.iter().product()];
        let strides = row_major_strides(out_dims);
        if lhs_pos.len() == order {
            // Every output mode has its own variable: each listed entry is one component.
            for (k, &x) in &f.entries {
                let flat: usize = lhs_pos.iter().zip(k).map(|(&m, &c)| c * strides[m]).sum();
                out[flat] = lane.of(x);
            }
        } else {
            // The value is broadcast over the output variables it does not depend on.
            let mut key = vec![0usize; f.vars.len()];
            let mut flat = 0;
            for_each_point(out_dims, |p| {
                lhs_pos.iter().zip(&mut key).for_each(|(&m, c)| *c = p[m]);
                out[flat] = lane.of(f.get(&key));
                flat += 1;
            });
        }
        if let Some(init) = init {
            // Duplicates add up first: the previous value is the tensor's component.
            let mut old = vec![0.0; out.len()];
            init.for_each_stored(|c, x| {
                let flat: usize = c.iter().zip(&strides).map(|(&c, &s)| c as usize * s).sum();
                old[flat] += x;
            });
            for (slot, o) in out.iter_mut().zip(old) {
                *slot = combine(o, *slot);
            }
        }
        return Tensor::from_dense_values(out_dims, Values::F64(out))
            .expect("as many values as components");
    }
    // A sparse output with zeros where nothing is listed: store only the listed components,
    // so that the result is as large as the kernel's rather than as the index space.
    let free: Vec<usize> = (0..order)
        .filter(|&m| !f.vars.contains(&stmt.lhs[m]))
        .collect();
    let free_sizes: Vec<usize> = free.iter().map(|&m| out_dims[m]).collect();
    let mut components: Map<Key, f64> = Map::default();
    let mut c = vec![0usize; order];
    for (k, &x) in &f.entries {
        for (m, v) in stmt.lhs.iter().enumerate() {
            if let Some(j) = f.vars.iter().position(|w| w == v) {
                c[m] = k[j];
            }
        }
        for_each_point(&free_sizes, |p| {
            free.iter().zip(p).for_each(|(&m, &x)| c[m] = x);
            components.insert(Key::from_slice(&c), lane.of(x));
        });
    }
    if let Some(init) = init {
        let mut old: Map<Key, f64> = Map::default();
        init.for_each_stored(|c, x| {
            *old.entry(c.iter().map(|&c| c as usize).collect())
                .or_insert(0.0) += x;
        });
        for (c, o) in old {
            let x = components.get(&c).copied().unwrap_or(0.0);
            components.insert(c, combine(o, x));
        }
    }
    csf_tensor(out_dims, components)
}

/// The components, in any order, as a `csf` tensor of dimensions `dims`.
fn csf_tensor<K: AsRef<[usize]> + Ord>(
    dims: &[usize],
    components: impl IntoIterator<Item = (K, f64)>,
) -> Tensor {
    let mut sorted: Vec<(K, f64)> = components.into_iter().collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let coords = sorted
        .iter()
        .flat_map(|(c, _)| c.as_ref().iter().map(|&c| c as i64))
        .collect();
    let values = sorted.into_iter().map(|(_, x)| x).collect();
    let coo = Coo::new(dims.to_vec(), coords, values).expect("coordinates are in range");
    let format = Format::parse("csf", dims.len()).expect("csf is a format of every order");
    Tensor::from_coo_owned(coo, &format, ValueType::F64).expect("a csf tensor can be built")
}

fn row_major_strides(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; dims.len()];
    for m in (0..dims.len().saturating_sub(1)).rev() {
        strides[m] = strides[m + 1] * dims[m + 1];
    }
    strides
}
