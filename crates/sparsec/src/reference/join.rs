//! Products of listed entries, joined on their shared variables: two operands at a time
//! (`join`), or a sum over three or more factors joined one at a time without listing
//! their product (`joined_sum`).

use crate::notation::cin::{Statement, VarId};

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
    stmt: &Statement,
) -> Map<Key, Pair> {
    let kept: Vec<usize> = (0..vars.len())
        .filter(|&m| Some(m) != drop)
        .map(|m| stmt.vars[vars[m]].size)
        .collect();
    let mut out = Totals::new(&kept, a.entries.len().max(b.entries.len()));
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
        out.add(&kept, ax.times(bx));
    };
    // An operand whose variables are all shared is its own index (SpMV's vector).
    if shared.len() == b.vars.len() {
        let b_lookup = Lookup::of(&b.entries, (0..b.vars.len()).collect());
        let mut bk = vec![0usize; b.vars.len()];
        for (ak, &ax) in &a.entries {
            shared.iter().for_each(|&(m, j)| bk[j] = ak[m]);
            if let Some(bx) = b_lookup.get(&bk) {
                emit(ak, ax, &bk, bx);
            }
        }
    } else if shared.len() == a.vars.len() {
        let a_lookup = Lookup::of(&a.entries, (0..a.vars.len()).collect());
        let mut ak = vec![0usize; a.vars.len()];
        for (bk, &bx) in &b.entries {
            shared.iter().for_each(|&(m, j)| ak[m] = bk[j]);
            if let Some(ax) = a_lookup.get(&ak) {
                emit(&ak, ax, bk, bx);
            }
        }
    } else if a.entries.len() <= b.entries.len() {
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
    out.into_entries()
}

/// `Sum(var, f1 * f2 * ... * fn)` where every factor lists its entries (structural zeros
/// elsewhere) and one has `var`: the products are joined one factor at a time and added
/// up as they are found, so the product over all variables is never listed (SDDMM's
/// `B(i,j) * C(i,k)` alone has as many components as `B` has entries times the size of
/// `k`: 29 million, 80 s and gigabytes on a banded 100,000-row `B` with `k` of 32).
/// Each product multiplies left to right, as the pairwise evaluation does.
pub(super) fn joined_sum(var: VarId, factors: &[Func], stmt: &Statement) -> Func {
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
                Matches::Single(Lookup::of(&f.entries, nesting))
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
    let kept: Vec<usize> = vars
        .iter()
        .enumerate()
        .filter(|&(m, _)| m != drop)
        .map(|(_, &v)| stmt.vars[v].size)
        .collect();
    let mut sums = Sums {
        totals: Totals::new(&kept, factors[0].entries.len()),
        run: None,
    };
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
struct Sums {
    totals: Totals,
    run: Option<(Key, Pair)>,
}

impl Sums {
    fn add(&mut self, key: Key, x: Pair) {
        match &mut self.run {
            Some((run_key, total)) if *run_key == key => total.add(x),
            _ => {
                if let Some((run_key, total)) = self.run.replace((key, x)) {
                    self.totals.add(&run_key, total);
                }
            }
        }
    }

    fn into_entries(mut self) -> Map<Key, Pair> {
        if let Some((key, total)) = self.run.take() {
            self.totals.add(&key, total);
        }
        self.totals.into_entries()
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
    /// Every variable is bound: at most one entry.
    Single(Lookup<'f>),
    /// The entries by their coordinates of the bound variables.
    Indexed(Map<Key, Vec<(Key, Pair)>>),
}

/// A factor's entries looked up by all their coordinates.
enum Lookup<'f> {
    /// The factor's own entries.
    Listed(&'f Map<Key, Pair>),
    /// The entries fill most of their box: an array of it, as a hash map of millions of
    /// entries misses the caches on nearly every lookup.
    Boxed(Boxed),
}

impl<'f> Lookup<'f> {
    /// An array of `entries` nested as `nesting` says (see [`Boxed::of`]), else the
    /// entries themselves.
    fn of(entries: &'f Map<Key, Pair>, nesting: Vec<usize>) -> Lookup<'f> {
        Boxed::of(entries, nesting).map_or(Lookup::Listed(entries), Lookup::Boxed)
    }

    fn get(&self, key: &[usize]) -> Option<Pair> {
        match self {
            Lookup::Listed(entries) => entries.get(key).copied(),
            Lookup::Boxed(boxed) => boxed.get(key),
        }
    }
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
        Matches::Single(lookup) => {
            if let Some(x) = lookup.get(&probe) {
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

/// The most slots of a [`Totals`] array: 2^25 (768 MiB).
const MAX_TOTAL_SLOTS: usize = 1 << 25;

/// The components of a sum as its products arrive: each product is added to the total at
/// its coordinates, which is listed from its first product on (kept as it is: a single
/// `-0` stays `-0`).
enum Totals {
    Listed(Map<Key, Pair>),
    /// Where the box of the coordinates has at most twice as many slots as there are
    /// products (SpMV's `y`, MTTKRP's output), an array of it, in row-major order, which
    /// costs no hashing, and no probe of a map of the totals for each new one: SpMV with
    /// `--check` on a uniform 1M x 1M with 10M entries, 7.3-7.9 s against 8.4-8.9 s with
    /// a map of the totals.
    Boxed {
        sizes: Vec<usize>,
        slots: Vec<Option<Pair>>,
    },
}

impl Totals {
    /// Totals over coordinates below `sizes`, for about `products` products.
    fn new(sizes: &[usize], products: usize) -> Totals {
        let slots = sizes
            .iter()
            .try_fold(1usize, |n, &s| n.checked_mul(s))
            .filter(|&n| n <= products.saturating_mul(2) && n <= MAX_TOTAL_SLOTS);
        match slots {
            Some(n) => Totals::Boxed {
                sizes: sizes.to_vec(),
                slots: vec![None; n],
            },
            None => Totals::Listed(Map::default()),
        }
    }

    /// Add `x` to the total at `key`.
    fn add(&mut self, key: &[usize], x: Pair) {
        match self {
            // Look up before inserting: most products land on a component already listed.
            Totals::Listed(out) => match out.get_mut(key) {
                Some(total) => total.add(x),
                None => {
                    out.insert(Key::from_slice(key), x);
                }
            },
            Totals::Boxed { sizes, slots } => {
                let slot = key.iter().zip(&*sizes).fold(0, |n, (&c, &s)| n * s + c);
                match &mut slots[slot] {
                    Some(total) => total.add(x),
                    empty => *empty = Some(x),
                }
            }
        }
    }

    /// The listed totals.
    fn into_entries(self) -> Map<Key, Pair> {
        match self {
            Totals::Listed(out) => out,
            Totals::Boxed { sizes, slots } => {
                let listed = slots.iter().flatten().count();
                let mut out = Map::with_capacity_and_hasher(listed, Default::default());
                let mut key = Key::from_elem(0, sizes.len());
                for (slot, total) in slots.into_iter().enumerate() {
                    if let Some(total) = total {
                        let mut rest = slot;
                        for (c, &s) in key.iter_mut().zip(&sizes).rev() {
                            *c = rest % s;
                            rest /= s;
                        }
                        out.insert(key.clone(), total);
                    }
                }
                out
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The array of totals lists the same components with the same sums as the map, each
    /// at its own coordinates (row-major decoding of three sizes), a single `-0` kept.
    #[test]
    fn boxed_totals_agree_with_listed_ones() {
        let sizes = [3, 1, 4];
        let products: [([usize; 3], f64); 6] = [
            ([2, 0, 3], 1.5),
            ([0, 0, 1], -0.0),
            ([2, 0, 3], 2.25),
            ([1, 0, 0], -4.0),
            ([0, 0, 3], 8.0),
            ([1, 0, 0], 0.5),
        ];
        let mut boxed = Totals::new(&sizes, products.len());
        let mut listed = Totals::new(&sizes, 1);
        assert!(matches!(boxed, Totals::Boxed { .. }));
        assert!(matches!(listed, Totals::Listed(_)));
        for (key, x) in products {
            boxed.add(&key, Pair::exact(x));
            listed.add(&key, Pair::exact(x));
        }
        let (boxed, listed) = (boxed.into_entries(), listed.into_entries());
        assert_eq!(boxed.len(), 4);
        assert_eq!(listed.len(), 4);
        for (key, total) in &listed {
            let other = boxed[key];
            assert_eq!(total.value.to_bits(), other.value.to_bits(), "at {key:?}");
            assert_eq!(total.magnitude, other.magnitude, "at {key:?}");
        }
        assert_eq!(boxed[&Key::from_slice(&[2, 0, 3])].value, 3.75);
        assert!(boxed[&Key::from_slice(&[0, 0, 1])].value.is_sign_negative());
        assert_eq!(boxed[&Key::from_slice(&[1, 0, 0])].magnitude, 4.5);
    }

    /// Sizes whose box is too large for an array (or overflows) keep a map.
    #[test]
    fn large_boxes_keep_a_map() {
        assert!(matches!(
            Totals::new(&[1 << 20, 1 << 20], 1 << 20),
            Totals::Listed(_)
        ));
        assert!(matches!(
            Totals::new(&[usize::MAX, 3], 10),
            Totals::Listed(_)
        ));
        assert!(matches!(Totals::new(&[0, 5], 0), Totals::Boxed { .. }));
    }
}
