//! Products of listed entries, joined on their shared variables: two operands at a time
//! (`join`), or a sum over three or more factors joined one at a time without listing
//! their product (`joined_sum`).

use crate::notation::cin::VarId;

use super::{listed, positions, Func, Key, Map, Pair};

/// The product of the listed entries of `a` and `b` where both are listed: a hash join on
/// their shared variables, indexing the operand with fewer entries. With `drop`, the
/// products are summed over the variable at that position of `vars` instead.
pub(super) fn join(
    a: &Func,
    b: &Func,
    vars: &[VarId],
    b_pos: &[usize],
    drop: Option<usize>,
    out: &mut Map<Key, Pair>,
) {
    let shared: Vec<(usize, usize)> = b_pos
        .iter()
        .enumerate()
        .filter(|&(_, &m)| m < a.vars.len())
        .map(|(j, &m)| (m, j))
        .collect();
    let a_shared = |k: &[usize]| shared.iter().map(|&(m, _)| k[m]).collect::<Key>();
    let b_shared = |k: &[usize]| shared.iter().map(|&(_, j)| k[j]).collect::<Key>();
    let mut key = vec![0usize; vars.len()];
    let mut kept = Vec::with_capacity(vars.len());
    let mut emit = |ak: &[usize], ax: Pair, bk: &[usize], bx: Pair| {
        key[..ak.len()].copy_from_slice(ak);
        b_pos.iter().zip(bk).for_each(|(&m, &c)| key[m] = c);
        kept.clear();
        kept.extend(
            key.iter()
                .enumerate()
                .filter(|&(m, _)| Some(m) != drop)
                .map(|(_, &c)| c),
        );
        accumulate(out, &kept, ax.times(bx));
    };
    // An operand whose variables are all shared is its own index (SpMV's vector).
    if shared.len() == b.vars.len() {
        let mut bk = vec![0usize; b.vars.len()];
        for (ak, &ax) in &a.entries {
            shared.iter().for_each(|&(m, j)| bk[j] = ak[m]);
            if let Some(&bx) = b.entries.get(bk.as_slice()) {
                emit(ak, ax, &bk, bx);
            }
        }
        return;
    }
    if shared.len() == a.vars.len() {
        let mut ak = vec![0usize; a.vars.len()];
        for (bk, &bx) in &b.entries {
            shared.iter().for_each(|&(m, j)| ak[m] = bk[j]);
            if let Some(&ax) = a.entries.get(ak.as_slice()) {
                emit(&ak, ax, bk, bx);
            }
        }
        return;
    }
    if a.entries.len() <= b.entries.len() {
        hash_join(
            &a.entries,
            a_shared,
            &b.entries,
            b_shared,
            |ak, ax, bk, bx| emit(ak, ax, bk, bx),
        );
    } else {
        hash_join(
            &b.entries,
            b_shared,
            &a.entries,
            a_shared,
            |bk, bx, ak, ax| emit(ak, ax, bk, bx),
        );
    }
}

/// `Sum(var, f1 * f2 * ... * fn)` where every factor lists its entries (structural zeros
/// elsewhere) and one has `var`: the products are joined one factor at a time and added
/// up as they are found, so the product over all variables is never listed (SDDMM's
/// `B(i,j) * C(i,k)` alone has as many components as `B` has entries times the size of
/// `k`: 29 million, 80 s and gigabytes on a banded 100,000-row `B` with `k` of 32).
/// Each product multiplies left to right, as the pairwise evaluation does.
pub(super) fn joined_sum(var: VarId, factors: &[Func]) -> Func {
    let mut vars: Vec<VarId> = Vec::new();
    for f in factors {
        vars.extend(
            f.vars
                .iter()
                .filter(|v| !vars.contains(v))
                .collect::<Vec<_>>(),
        );
    }
    let drop = vars
        .iter()
        .position(|&v| v == var)
        .expect("a factor has `var`");
    // Each later factor is indexed by the coordinates of its variables that the factors
    // before it bind.
    let mut bound: Vec<VarId> = factors[0].vars.clone();
    let steps: Vec<JoinStep> = factors[1..]
        .iter()
        .map(|f| {
            let positions = positions(&f.vars, &vars);
            let shared: Vec<usize> = (0..f.vars.len())
                .filter(|&m| bound.contains(&f.vars[m]))
                .collect();
            bound.extend(
                f.vars
                    .iter()
                    .filter(|v| !bound.contains(v))
                    .collect::<Vec<_>>(),
            );
            // A factor whose variables are all bound already is its own index (SDDMM's
            // `D(k,j)`): one lookup a product, no list to follow; into an array when it
            // lists most of its box (a dense input), as a hash map of millions of entries
            // misses the caches on nearly every lookup.
            let matches = if shared.len() == f.vars.len() {
                // The variable bound last varies fastest between lookups: innermost.
                let mut nesting: Vec<usize> = (0..f.vars.len()).collect();
                nesting.sort_by_key(|&m| bound.iter().position(|&v| v == f.vars[m]));
                Boxed::of(&f.entries, nesting).map_or(Matches::Listed(&f.entries), Matches::Boxed)
            } else {
                let mut index: Map<Key, Vec<(Key, Pair)>> = Map::default();
                for (k, &x) in &f.entries {
                    let probe: Key = shared.iter().map(|&m| k[m]).collect();
                    index.entry(probe).or_default().push((k.clone(), x));
                }
                Matches::Indexed(index)
            };
            JoinStep {
                positions,
                shared,
                matches,
            }
        })
        .collect();
    let first = positions(&factors[0].vars, &vars);
    let mut coords = vec![0usize; vars.len()];
    let mut sums = Sums::default();
    for (k, &x) in &factors[0].entries {
        first.iter().zip(k).for_each(|(&m, &c)| coords[m] = c);
        extend_join(&steps, x, &mut coords, drop, &mut sums);
    }
    vars.remove(drop);
    listed(vars, sums.into_entries())
}

/// The components of a [`joined_sum`] as its products arrive. The products of one
/// component often come in a run (SDDMM's, one for each value of the summed variable,
/// which the last factors bind), so a run is added up before its component is looked up.
#[derive(Default)]
struct Sums {
    entries: Map<Key, Pair>,
    run: Option<(Key, Pair)>,
}

impl Sums {
    fn add(&mut self, key: Key, x: Pair) {
        match &mut self.run {
            Some((run_key, total)) if *run_key == key => total.add(x),
            _ => {
                if let Some((run_key, total)) = self.run.replace((key, x)) {
                    accumulate(&mut self.entries, &run_key, total);
                }
            }
        }
    }

    fn into_entries(mut self) -> Map<Key, Pair> {
        if let Some((key, total)) = self.run.take() {
            accumulate(&mut self.entries, &key, total);
        }
        self.entries
    }
}

/// One factor after the first of a [`joined_sum`].
struct JoinStep<'f> {
    /// Where each of the factor's variables sits in the joined variables.
    positions: Vec<usize>,
    /// Which of the factor's variables earlier factors bind (by its own order).
    shared: Vec<usize>,
    matches: Matches<'f>,
}

/// How a [`JoinStep`] finds the entries of its factor that match the bound coordinates.
enum Matches<'f> {
    /// Every variable is bound: the factor's own entries, at most one.
    Listed(&'f Map<Key, Pair>),
    /// Every variable is bound, and the entries fill most of their box: an array of it.
    Boxed(Boxed),
    /// The entries by their coordinates of the bound variables.
    Indexed(Map<Key, Vec<(Key, Pair)>>),
}

/// Multiply `product` (over the coordinates bound so far, in `coords`) by the matching
/// entries of each of `steps` in turn, adding each complete product to `out` at `coords`
/// without the summed variable's position `drop`.
fn extend_join(
    steps: &[JoinStep],
    product: Pair,
    coords: &mut [usize],
    drop: usize,
    out: &mut Sums,
) {
    let Some((step, rest)) = steps.split_first() else {
        let key: Key = coords
            .iter()
            .enumerate()
            .filter(|&(m, _)| m != drop)
            .map(|(_, &c)| c)
            .collect();
        out.add(key, product);
        return;
    };
    let probe: Key = step
        .shared
        .iter()
        .map(|&m| coords[step.positions[m]])
        .collect();
    match &step.matches {
        Matches::Listed(entries) => {
            if let Some(&x) = entries.get(&probe) {
                extend_join(rest, product.times(x), coords, drop, out);
            }
        }
        Matches::Boxed(boxed) => {
            if let Some(x) = boxed.get(&probe) {
                extend_join(rest, product.times(x), coords, drop, out);
            }
        }
        Matches::Indexed(index) => {
            for (k, x) in index.get(&probe).into_iter().flatten() {
                step.positions
                    .iter()
                    .zip(k)
                    .for_each(|(&m, &c)| coords[m] = c);
                extend_join(rest, product.times(*x), coords, drop, out);
            }
        }
    }
}

/// A factor's entries in an array over the box from the origin to its largest coordinates,
/// each slot the entry at those coordinates, if listed.
struct Boxed {
    /// The key's positions from the outermost dimension of the array to the innermost.
    nesting: Vec<usize>,
    /// The box's extent in each key position.
    extents: Key,
    slots: Vec<Option<Pair>>,
}

impl Boxed {
    /// The array of `entries` nested as `nesting` says, when it has at most twice as many
    /// slots as entries.
    fn of(entries: &Map<Key, Pair>, nesting: Vec<usize>) -> Option<Boxed> {
        let order = entries.keys().next()?.len();
        let mut extents: Key = Key::from_elem(0, order);
        for k in entries.keys() {
            extents
                .iter_mut()
                .zip(k)
                .for_each(|(e, &c)| *e = (*e).max(c + 1));
        }
        let size = extents.iter().try_fold(1usize, |n, &e| n.checked_mul(e))?;
        if size > entries.len().saturating_mul(2) {
            return None;
        }
        let mut boxed = Boxed {
            nesting,
            extents,
            slots: vec![None; size],
        };
        for (k, &x) in entries {
            let slot = boxed.slot(k).expect("within the box");
            boxed.slots[slot] = Some(x);
        }
        Some(boxed)
    }

    /// Where the entry at `key` is kept, if `key` is in the box.
    fn slot(&self, key: &[usize]) -> Option<usize> {
        let mut slot = 0;
        for &m in &self.nesting {
            let (c, e) = (key[m], self.extents[m]);
            if c >= e {
                return None;
            }
            slot = slot * e + c;
        }
        Some(slot)
    }

    fn get(&self, key: &[usize]) -> Option<Pair> {
        self.slots[self.slot(key)?]
    }
}

/// Add `x` to the component of `out` at `key`, listing it if it is not yet.
fn accumulate(out: &mut Map<Key, Pair>, key: &[usize], x: Pair) {
    // Look up before inserting: most products land on a component already listed.
    match out.get_mut(key) {
        Some(total) => total.add(x),
        None => {
            out.insert(Key::from_slice(key), x);
        }
    }
}

/// Call `f` on every pair of entries of `build` and `probe` whose keys agree, indexing the
/// `build` side (the smaller one) by its key.
fn hash_join(
    build: &Map<Key, Pair>,
    build_key: impl Fn(&[usize]) -> Key,
    probe: &Map<Key, Pair>,
    probe_key: impl Fn(&[usize]) -> Key,
    mut f: impl FnMut(&[usize], Pair, &[usize], Pair),
) {
    let mut index: Map<Key, Vec<(&[usize], Pair)>> = Map::default();
    for (k, &x) in build {
        index.entry(build_key(k)).or_default().push((k, x));
    }
    for (pk, &px) in probe {
        for &(bk, bx) in index.get(&probe_key(pk)).into_iter().flatten() {
            f(bk, bx, pk, px);
        }
    }
}
