//! Intersecting two large unions of boxes without trying every pair of pieces: isl's
//! own intersection of unions tries all `|a|·|b|` pairs, which dominates the analysis of
//! inputs with thousands of regions. Here the pieces' bounds along one dimension are
//! swept in order, and only pieces whose constant bounds overlap on every dimension are
//! intersected; pieces without constant bounds fall back to every pair.

use super::union::{isl_union_set_subtract, RawSpace, RawUnionSet, UnionSet};
use super::*;

type SetFn = unsafe extern "C" fn(*mut RawSet, *mut c_void) -> c_int;

extern "C" {
    fn isl_union_set_foreach_set(s: *mut RawUnionSet, f: SetFn, user: *mut c_void) -> c_int;
    fn isl_union_set_add_set(s: *mut RawUnionSet, set: *mut RawSet) -> *mut RawUnionSet;
    fn isl_union_set_align_params(s: *mut RawUnionSet, model: *mut RawSpace) -> *mut RawUnionSet;
    fn isl_union_set_get_space(s: *mut RawUnionSet) -> *mut RawSpace;
    fn isl_basic_set_copy(b: *mut RawBasicSet) -> *mut RawBasicSet;
    fn isl_basic_set_intersect(a: *mut RawBasicSet, b: *mut RawBasicSet) -> *mut RawBasicSet;
    fn isl_basic_set_is_empty(b: *mut RawBasicSet) -> c_int;
    fn isl_basic_set_get_tuple_name(b: *mut RawBasicSet) -> *const c_char;
    fn isl_set_from_basic_set(b: *mut RawBasicSet) -> *mut RawSet;
    fn isl_set_get_tuple_name(s: *mut RawSet) -> *const c_char;
}

/// One basic set of a union, read out: its tuple's name and arity, and its constraints.
#[derive(Clone, Debug)]
pub struct NamedBasicSet {
    pub tuple: String,
    pub dims: usize,
    pub basic: BasicSet,
}

struct ReadOut {
    isl: Isl,
    out: Vec<NamedBasicSet>,
    failure: Option<String>,
}

unsafe extern "C" fn on_set_read(set: *mut RawSet, user: *mut c_void) -> c_int {
    let read = &mut *(user as *mut ReadOut);
    let name = isl_set_get_tuple_name(set);
    let tuple = if name.is_null() {
        String::new()
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    };
    // The wrapper owns the set from here and frees it.
    let set = match read.isl.wrap(set, "isl set") {
        Ok(set) => set,
        Err(e) => {
            read.failure = Some(e);
            return -1;
        }
    };
    match set.basic_sets() {
        Ok(basics) => {
            let dims = set.dims();
            read.out
                .extend(basics.into_iter().map(|basic| NamedBasicSet {
                    tuple: tuple.clone(),
                    dims,
                    basic,
                }));
            0
        }
        Err(e) => {
            read.failure = Some(e);
            -1
        }
    }
}

/// One basic set of a union, owned, with its constant bounds per dimension.
struct Piece {
    raw: *mut RawBasicSet,
    space: (String, usize),
    bounds: Vec<(Option<i64>, Option<i64>)>,
}

impl Drop for Piece {
    fn drop(&mut self) {
        // SAFETY: owned by the piece.
        unsafe {
            isl_basic_set_free(self.raw);
        }
    }
}

struct Collect {
    out: Vec<Piece>,
    failed: bool,
}

unsafe extern "C" fn on_set(set: *mut RawSet, user: *mut c_void) -> c_int {
    let status = isl_set_foreach_basic_set(set, on_piece, user);
    isl_set_free(set);
    status
}

unsafe extern "C" fn on_piece(bset: *mut RawBasicSet, user: *mut c_void) -> c_int {
    let collect = &mut *(user as *mut Collect);
    let name = isl_basic_set_get_tuple_name(bset);
    let name = if name.is_null() {
        String::new()
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    };
    let dims = isl_basic_set_dim(bset, DIM_SET).max(0) as usize;
    // Coefficients beyond 64 bits: no bounds, still correct.
    let constraints = constraints_of(bset).unwrap_or_default();
    let mut bounds: Vec<(Option<i64>, Option<i64>)> = vec![(None, None); dims];
    for c in &constraints {
        let vars: Vec<usize> = (0..dims).filter(|&d| c.set[d] != 0).collect();
        if vars.len() != 1 || c.params.iter().any(|&p| p != 0) || c.divs.iter().any(|&p| p != 0) {
            continue;
        }
        // a·x + k >= 0, or = 0.
        let d = vars[0];
        let (mut a, mut k) = (c.set[d], c.constant);
        let (mut lo, mut hi) = (None, None);
        if c.equality {
            if a < 0 {
                (a, k) = (-a, -k);
            }
            lo = Some(ceil_div(-k, a));
            hi = Some((-k).div_euclid(a));
        } else if a > 0 {
            lo = Some(ceil_div(-k, a));
        } else {
            hi = Some(k.div_euclid(-a));
        }
        if let Some(l) = lo {
            bounds[d].0 = Some(bounds[d].0.map_or(l, |b| b.max(l)));
        }
        if let Some(h) = hi {
            bounds[d].1 = Some(bounds[d].1.map_or(h, |b| b.min(h)));
        }
    }
    collect.out.push(Piece {
        raw: bset,
        space: (name, dims),
        bounds,
    });
    0
}

/// `ceil(a / b)` for `b > 0`.
fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

fn pieces(set: &UnionSet) -> Result<Vec<Piece>, String> {
    let mut collect = Collect {
        out: Vec::new(),
        failed: false,
    };
    // SAFETY: the callbacks take ownership of what isl hands them: sets are freed,
    // basic sets kept by the pieces; `collect` outlives the call.
    let status = unsafe {
        isl_union_set_foreach_set(set.raw(), on_set, &mut collect as *mut Collect as *mut _)
    };
    if status < 0 || collect.failed {
        return Err("isl: splitting a union into its pieces failed".into());
    }
    Ok(collect.out)
}

/// The pieces of both unions in one space.
type Pair<'p> = (Vec<&'p Piece>, Vec<&'p Piece>);

fn overlap(a: &Piece, b: &Piece) -> bool {
    a.bounds.iter().zip(&b.bounds).all(|(x, y)| {
        let lo = match (x.0, y.0) {
            (Some(p), Some(q)) => Some(p.max(q)),
            (p, q) => p.or(q),
        };
        let hi = match (x.1, y.1) {
            (Some(p), Some(q)) => Some(p.min(q)),
            (p, q) => p.or(q),
        };
        match (lo, hi) {
            (Some(l), Some(h)) => l <= h,
            _ => true,
        }
    })
}

impl UnionSet {
    /// Every basic set of the union with its constraints, space by space.
    pub fn basic_sets(&self) -> Result<Vec<NamedBasicSet>, String> {
        let mut read = ReadOut {
            isl: self.isl().clone(),
            out: Vec::new(),
            failure: None,
        };
        // SAFETY: the callback takes ownership of each set; `read` outlives the call.
        let status = unsafe {
            isl_union_set_foreach_set(self.raw(), on_set_read, &mut read as *mut ReadOut as *mut _)
        };
        if let Some(message) = read.failure {
            return Err(message);
        }
        if status < 0 {
            return Err("isl: reading a union's pieces failed".into());
        }
        Ok(read.out)
    }

    /// The number of basic sets the union is made of.
    pub fn pieces(&self) -> Result<usize, String> {
        pieces(self).map(|p| p.len())
    }

    /// [`UnionSet::coalesce`] below `limit` pieces, the union itself above: isl's
    /// coalescing compares pairs of pieces, and on thousands of them costs more than the
    /// rest of an analysis while changing no point.
    pub fn coalesce_below(&self, limit: usize) -> Result<UnionSet, String> {
        if self.pieces()? <= limit {
            self.coalesce()
        } else {
            Ok(self.clone())
        }
    }

    /// The points in both unions, as [`UnionSet::intersect`], trying only pairs of
    /// pieces whose constant bounds overlap.
    pub fn intersect_pieces(&self, other: &UnionSet) -> Result<UnionSet, String> {
        // SAFETY: every call takes copies or owned results; null results are checked by
        // the wrappers.
        let (a, b) = unsafe {
            let a =
                isl_union_set_align_params(self.copy_raw(), isl_union_set_get_space(other.raw()));
            let a = self.isl().union_set_from(a, "isl parameter alignment")?;
            let b = isl_union_set_align_params(other.copy_raw(), isl_union_set_get_space(a.raw()));
            let b = self.isl().union_set_from(b, "isl parameter alignment")?;
            (a, b)
        };
        let (ours, theirs) = (pieces(&a)?, pieces(&b)?);
        if ours.len().saturating_mul(theirs.len()) < 64 {
            return self.intersect(other);
        }
        // SAFETY: the empty union in the aligned space; each added set is owned.
        let mut out = unsafe {
            let empty = isl_union_set_subtract(a.copy_raw(), a.copy_raw());
            self.isl().union_set_from(empty, "isl empty union")?
        };
        let mut groups: std::collections::BTreeMap<&(String, usize), Pair<'_>> = Default::default();
        for p in &ours {
            groups.entry(&p.space).or_default().0.push(p);
        }
        for p in &theirs {
            groups.entry(&p.space).or_default().1.push(p);
        }
        for (&(_, dims), (xs, mut ys)) in groups {
            if xs.is_empty() || ys.is_empty() {
                continue;
            }
            // Sweep along the dimension whose pieces are shortest among those every
            // piece bounds on both sides.
            let widest = |d: usize| -> Option<i64> {
                xs.iter()
                    .chain(&ys)
                    .try_fold(0i64, |w, p| match p.bounds[d] {
                        (Some(l), Some(h)) => Some(w.max(h.saturating_sub(l))),
                        _ => None,
                    })
            };
            let sweep = (0..dims).filter_map(|d| widest(d).map(|w| (w, d))).min();
            let mut pairs: Vec<(&Piece, &Piece)> = Vec::new();
            match sweep {
                Some((width, d)) => {
                    ys.sort_by_key(|p| p.bounds[d].0);
                    let starts: Vec<i64> = ys.iter().map(|p| p.bounds[d].0.unwrap_or(0)).collect();
                    for x in &xs {
                        let (lo, hi) = (x.bounds[d].0.unwrap_or(0), x.bounds[d].1.unwrap_or(0));
                        let first = starts.partition_point(|&s| s < lo.saturating_sub(width));
                        for y in &ys[first..] {
                            if y.bounds[d].0.unwrap_or(0) > hi {
                                break;
                            }
                            if overlap(x, y) {
                                pairs.push((x, y));
                            }
                        }
                    }
                }
                None => {
                    for x in &xs {
                        for y in &ys {
                            if overlap(x, y) {
                                pairs.push((x, y));
                            }
                        }
                    }
                }
            }
            // The non-empty intersections, united as a balanced tree: adding them one by
            // one to a growing set re-sorts it each time.
            let mut found: Vec<*mut RawSet> = Vec::new();
            let mut failure = None;
            for (x, y) in pairs {
                // SAFETY: the intersection takes copies; the result is owned until it
                // is given to `found` (or freed).
                unsafe {
                    let both = isl_basic_set_intersect(
                        isl_basic_set_copy(x.raw),
                        isl_basic_set_copy(y.raw),
                    );
                    if both.is_null() {
                        failure = Some("isl: an intersection failed".to_string());
                        break;
                    }
                    match isl_basic_set_is_empty(both) {
                        0 => found.push(isl_set_from_basic_set(both)),
                        1 => {
                            isl_basic_set_free(both);
                        }
                        _ => {
                            isl_basic_set_free(both);
                            failure = Some("isl: an emptiness test failed".to_string());
                            break;
                        }
                    }
                }
            }
            // SAFETY: each set in `found` is owned; `isl_set_union` takes both operands.
            let united = unsafe {
                while found.len() > 1 {
                    let mut next = Vec::with_capacity(found.len().div_ceil(2));
                    let mut sets = found.into_iter();
                    while let Some(a) = sets.next() {
                        next.push(match sets.next() {
                            Some(b) => isl_set_union(a, b),
                            None => a,
                        });
                    }
                    found = next;
                }
                found.pop()
            };
            if let Some(message) = failure {
                // SAFETY: owned.
                unsafe {
                    united.map(|u| isl_set_free(u));
                }
                return Err(message);
            }
            if let Some(set) = united {
                // SAFETY: the union takes the set.
                let raw = unsafe { isl_union_set_add_set(out.take_raw(), set) };
                out = self.isl().union_set_from(raw, "isl union")?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_finds_what_every_pair_finds() {
        let isl = Isl::new();
        let mut state = 12345u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % m) as i64
        };
        for round in 0..20 {
            let mut texts = Vec::new();
            for _ in 0..2 {
                let mut pieces = Vec::new();
                for p in 0..(10 + round) {
                    let (i, j) = (next(60), next(60));
                    let (h, w) = (next(8), next(8));
                    pieces.push(match p % 5 {
                        // Parametric and strided pieces, and an equality.
                        0 => format!("S[i, j] : {i} <= i <= {} and j >= {j} and j < N", i + h),
                        1 => format!("S[i, j] : i = {i} and {j} <= j <= {}", j + w),
                        2 => format!(
                            "S[i, j] : {i} <= i <= {} and {j} <= j <= {} and (i + j) mod 2 = 0",
                            i + h,
                            j + w
                        ),
                        3 => format!("T[i] : {i} <= i <= {}", i + h),
                        _ => format!("S[i, j] : {i} <= i <= {} and {j} <= j <= {}", i + h, j + w),
                    });
                }
                texts.push(format!("[N] -> {{ {} }}", pieces.join("; ")));
            }
            let a = isl.union_set(&texts[0]).unwrap();
            let b = isl.union_set(&texts[1]).unwrap();
            let fast = a.intersect_pieces(&b).unwrap();
            let slow = a.intersect(&b).unwrap();
            assert!(fast.is_equal(&slow).unwrap(), "{fast}\n{slow}");
        }
        // Parameters that only one side names are aligned.
        let a = isl.union_set("{ S[i] : 0 <= i <= 5 }").unwrap();
        let b = isl
            .union_set("[M] -> { S[i] : 3 <= i <= 9 and i < M }")
            .unwrap();
        let expected = isl
            .union_set("[M] -> { S[i] : 3 <= i <= 5 and i < M }")
            .unwrap();
        assert!(a.intersect_pieces(&b).unwrap().is_equal(&expected).unwrap());
    }
}
