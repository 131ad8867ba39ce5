//! Unions of sets and relations over named spaces (`{ S[i, j] : ...; T[i] : ... }`), for
//! front ends that relate many statements at once: array dataflow by parametric
//! lexicographic maxima, images and preimages through access relations, transitive
//! closures with isl's exactness flag, and the enumeration of a set's points once its
//! parameters are fixed.

use super::*;

#[repr(C)]
pub(super) struct RawUnionSet {
    _private: [u8; 0],
}
#[repr(C)]
pub(super) struct RawUnionMap {
    _private: [u8; 0],
}
#[repr(C)]
struct RawPoint {
    _private: [u8; 0],
}
#[repr(C)]
pub(super) struct RawSpace {
    _private: [u8; 0],
}

type PointFn = unsafe extern "C" fn(*mut RawPoint, *mut c_void) -> c_int;

extern "C" {
    pub(super) fn isl_union_set_read_from_str(
        ctx: *mut RawCtx,
        text: *const c_char,
    ) -> *mut RawUnionSet;
    fn isl_union_set_copy(s: *mut RawUnionSet) -> *mut RawUnionSet;
    fn isl_union_set_free(s: *mut RawUnionSet) -> *mut RawUnionSet;
    fn isl_union_set_union(a: *mut RawUnionSet, b: *mut RawUnionSet) -> *mut RawUnionSet;
    fn isl_union_set_intersect(a: *mut RawUnionSet, b: *mut RawUnionSet) -> *mut RawUnionSet;
    pub(super) fn isl_union_set_subtract(
        a: *mut RawUnionSet,
        b: *mut RawUnionSet,
    ) -> *mut RawUnionSet;
    fn isl_union_set_apply(s: *mut RawUnionSet, m: *mut RawUnionMap) -> *mut RawUnionSet;
    fn isl_union_set_intersect_params(s: *mut RawUnionSet, p: *mut RawSet) -> *mut RawUnionSet;
    fn isl_union_set_coalesce(s: *mut RawUnionSet) -> *mut RawUnionSet;
    fn isl_union_set_is_empty(s: *mut RawUnionSet) -> c_int;
    fn isl_union_set_is_subset(a: *mut RawUnionSet, b: *mut RawUnionSet) -> c_int;
    fn isl_union_set_is_equal(a: *mut RawUnionSet, b: *mut RawUnionSet) -> c_int;
    fn isl_union_set_to_str(s: *mut RawUnionSet) -> *mut c_char;
    fn isl_union_set_foreach_point(s: *mut RawUnionSet, f: PointFn, user: *mut c_void) -> c_int;

    pub(super) fn isl_union_map_read_from_str(
        ctx: *mut RawCtx,
        text: *const c_char,
    ) -> *mut RawUnionMap;
    fn isl_union_map_copy(m: *mut RawUnionMap) -> *mut RawUnionMap;
    pub(super) fn isl_union_map_free(m: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_union(a: *mut RawUnionMap, b: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_intersect(a: *mut RawUnionMap, b: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_subtract(a: *mut RawUnionMap, b: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_apply_range(a: *mut RawUnionMap, b: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_reverse(m: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_domain(m: *mut RawUnionMap) -> *mut RawUnionSet;
    fn isl_union_map_range(m: *mut RawUnionMap) -> *mut RawUnionSet;
    fn isl_union_map_lexmax(m: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_coalesce(m: *mut RawUnionMap) -> *mut RawUnionMap;
    fn isl_union_map_is_empty(m: *mut RawUnionMap) -> c_int;
    fn isl_union_map_wrap(m: *mut RawUnionMap) -> *mut RawUnionSet;
    fn isl_union_map_to_str(m: *mut RawUnionMap) -> *mut c_char;
    pub(super) fn isl_union_map_intersect_domain_union_set(
        m: *mut RawUnionMap,
        s: *mut RawUnionSet,
    ) -> *mut RawUnionMap;
    fn isl_union_map_intersect_range_union_set(
        m: *mut RawUnionMap,
        s: *mut RawUnionSet,
    ) -> *mut RawUnionMap;
    fn isl_union_map_lex_gt_union_map(a: *mut RawUnionMap, b: *mut RawUnionMap)
        -> *mut RawUnionMap;
    fn isl_union_map_transitive_closure(m: *mut RawUnionMap, exact: *mut c_int)
        -> *mut RawUnionMap;

    fn isl_ctx_reset_operations(ctx: *mut RawCtx);
    fn isl_point_get_space(p: *mut RawPoint) -> *mut RawSpace;
    fn isl_point_get_coordinate_val(p: *mut RawPoint, kind: c_int, pos: c_int) -> *mut RawVal;
    fn isl_point_free(p: *mut RawPoint) -> *mut RawPoint;
    fn isl_space_dim(space: *mut RawSpace, kind: c_int) -> c_int;
    fn isl_space_get_tuple_name(space: *mut RawSpace, kind: c_int) -> *const c_char;
    fn isl_space_free(space: *mut RawSpace) -> *mut RawSpace;
}

/// A union of sets, each in its own named space.
pub struct UnionSet {
    raw: *mut RawUnionSet,
    isl: Isl,
}

/// A union of relations, each between two named spaces.
pub struct UnionMap {
    raw: *mut RawUnionMap,
    isl: Isl,
}

impl Isl {
    /// Start counting the operation limit ([`Isl::with_operation_limit`]) afresh: isl
    /// counts operations over the context's life, so each step of a long analysis resets
    /// it to have the whole limit.
    pub fn reset_operations(&self) {
        // SAFETY: the context is alive.
        unsafe { isl_ctx_reset_operations(self.0 .0) }
    }

    fn last_error(&self, context: &str) -> String {
        self.wrap(std::ptr::null_mut(), context)
            .err()
            .unwrap_or_default()
    }

    /// Parse a union of sets, e.g. `[N] -> { S[i, j] : 0 <= i, j < N; A[i] : i = 0 }`.
    pub fn union_set(&self, text: &str) -> Result<UnionSet, String> {
        let c = CString::new(text).map_err(|_| "a set's text holds a NUL byte".to_string())?;
        // SAFETY: `c` is a valid C string for the call; the result is owned or null.
        let raw = unsafe { isl_union_set_read_from_str(self.0 .0, c.as_ptr()) };
        self.union_set_from(raw, &format!("isl could not read `{text}`"))
    }

    /// Parse a union of relations, e.g. `{ S[i, j] -> A[i] }`.
    pub fn union_map(&self, text: &str) -> Result<UnionMap, String> {
        let c = CString::new(text).map_err(|_| "a map's text holds a NUL byte".to_string())?;
        // SAFETY: as for `union_set`.
        let raw = unsafe { isl_union_map_read_from_str(self.0 .0, c.as_ptr()) };
        self.union_map_from(raw, &format!("isl could not read `{text}`"))
    }

    /// The empty union of sets.
    pub fn empty_union_set(&self) -> UnionSet {
        self.union_set("{ }").expect("isl reads the empty union")
    }

    /// The empty union of relations.
    pub fn empty_union_map(&self) -> UnionMap {
        self.union_map("{ }").expect("isl reads the empty union")
    }

    pub(super) fn union_set_from(
        &self,
        raw: *mut RawUnionSet,
        context: &str,
    ) -> Result<UnionSet, String> {
        if raw.is_null() {
            return Err(self.last_error(context));
        }
        Ok(UnionSet {
            raw,
            isl: self.clone(),
        })
    }

    fn union_map_from(&self, raw: *mut RawUnionMap, context: &str) -> Result<UnionMap, String> {
        if raw.is_null() {
            return Err(self.last_error(context));
        }
        Ok(UnionMap {
            raw,
            isl: self.clone(),
        })
    }

    fn answer(&self, answer: c_int, what: &str) -> Result<bool, String> {
        match answer {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.last_error(what)),
        }
    }
}

impl Drop for UnionSet {
    fn drop(&mut self) {
        // SAFETY: `raw` is owned by this wrapper.
        unsafe {
            isl_union_set_free(self.raw);
        }
    }
}

impl Clone for UnionSet {
    fn clone(&self) -> Self {
        // SAFETY: isl copies are reference counted; the copy is owned by the new wrapper.
        UnionSet {
            raw: unsafe { isl_union_set_copy(self.raw) },
            isl: self.isl.clone(),
        }
    }
}

impl Drop for UnionMap {
    fn drop(&mut self) {
        // SAFETY: `raw` is owned by this wrapper.
        unsafe {
            isl_union_map_free(self.raw);
        }
    }
}

impl Clone for UnionMap {
    fn clone(&self) -> Self {
        // SAFETY: as for `UnionSet`.
        UnionMap {
            raw: unsafe { isl_union_map_copy(self.raw) },
            isl: self.isl.clone(),
        }
    }
}

/// One point of a union of sets: its space's name and its coordinates.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NamedPoint {
    pub space: String,
    pub coordinates: Vec<i64>,
}

struct PointWalk {
    out: Vec<NamedPoint>,
    limit: usize,
    failed: Option<String>,
}

unsafe extern "C" fn on_point(point: *mut RawPoint, user: *mut c_void) -> c_int {
    let walk = &mut *(user as *mut PointWalk);
    if walk.out.len() >= walk.limit {
        isl_point_free(point);
        walk.failed = Some(format!("the set has more than {} points", walk.limit));
        return -1;
    }
    let space = isl_point_get_space(point);
    let name = isl_space_get_tuple_name(space, DIM_SET);
    let name = if name.is_null() {
        String::new()
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    };
    let n = isl_space_dim(space, DIM_SET).max(0);
    isl_space_free(space);
    let mut coordinates = Vec::with_capacity(n as usize);
    for pos in 0..n {
        match integer(isl_point_get_coordinate_val(point, DIM_SET, pos)) {
            Some(value) => coordinates.push(value),
            None => {
                isl_point_free(point);
                walk.failed = Some("a coordinate does not fit 64 bits".into());
                return -1;
            }
        }
    }
    isl_point_free(point);
    walk.out.push(NamedPoint {
        space: name,
        coordinates,
    });
    0
}

impl UnionSet {
    fn op(&self, raw: *mut RawUnionSet, what: &str) -> Result<UnionSet, String> {
        self.isl.union_set_from(raw, what)
    }

    /// The points in either union.
    pub fn union(&self, other: &UnionSet) -> Result<UnionSet, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_set_union(self.copy(), other.copy()) };
        self.op(raw, "isl union")
    }

    /// The points in both unions.
    pub fn intersect(&self, other: &UnionSet) -> Result<UnionSet, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_set_intersect(self.copy(), other.copy()) };
        self.op(raw, "isl intersection")
    }

    /// The points of `self` not in `other`.
    pub fn subtract(&self, other: &UnionSet) -> Result<UnionSet, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_set_subtract(self.copy(), other.copy()) };
        self.op(raw, "isl difference")
    }

    /// The image of the union under `map`.
    pub fn apply(&self, map: &UnionMap) -> Result<UnionSet, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_set_apply(self.copy(), map.copy()) };
        self.op(raw, "isl image")
    }

    /// The union with its parameters constrained by `params`, a set over parameters
    /// alone in isl's syntax (e.g. `[N] -> { : N = 4 }`).
    pub fn with_params(&self, params: &str) -> Result<UnionSet, String> {
        let set = self.isl.set(params)?;
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_set_intersect_params(self.copy(), isl_set_copy(set.raw)) };
        self.op(raw, "isl parameter constraint")
    }

    /// The same union with fewer pieces.
    pub fn coalesce(&self) -> Result<UnionSet, String> {
        // SAFETY: the operation takes a copy.
        let raw = unsafe { isl_union_set_coalesce(self.copy()) };
        self.op(raw, "isl coalescing")
    }

    /// Whether the union holds no point.
    pub fn is_empty(&self) -> Result<bool, String> {
        // SAFETY: `raw` is kept.
        let answer = unsafe { isl_union_set_is_empty(self.raw) };
        self.isl.answer(answer, "isl emptiness test")
    }

    /// Whether every point of `self` is in `other`.
    pub fn is_subset(&self, other: &UnionSet) -> Result<bool, String> {
        // SAFETY: both are kept.
        let answer = unsafe { isl_union_set_is_subset(self.raw, other.raw) };
        self.isl.answer(answer, "isl subset test")
    }

    /// Whether both unions hold the same points.
    pub fn is_equal(&self, other: &UnionSet) -> Result<bool, String> {
        // SAFETY: both are kept.
        let answer = unsafe { isl_union_set_is_equal(self.raw, other.raw) };
        self.isl.answer(answer, "isl equality test")
    }

    /// Every point of a bounded union with no free parameters, in no particular order;
    /// an error past `limit` points.
    pub fn points(&self, limit: usize) -> Result<Vec<NamedPoint>, String> {
        let mut walk = PointWalk {
            out: Vec::new(),
            limit,
            failed: None,
        };
        // SAFETY: the callback takes ownership of each point and frees it; `walk`
        // outlives the call.
        let status = unsafe {
            isl_union_set_foreach_point(self.raw, on_point, &mut walk as *mut PointWalk as *mut _)
        };
        if let Some(message) = walk.failed {
            return Err(message);
        }
        if status < 0 {
            return Err(self.isl.last_error(
                "isl could not enumerate the points (is the set bounded, with every \
                 parameter fixed?)",
            ));
        }
        Ok(walk.out)
    }

    fn copy(&self) -> *mut RawUnionSet {
        // SAFETY: reference counted copy.
        unsafe { isl_union_set_copy(self.raw) }
    }

    /// The isl object, kept by the wrapper.
    pub(super) fn raw(&self) -> *mut RawUnionSet {
        self.raw
    }

    /// A reference-counted copy of the isl object, owned by the caller.
    pub(super) fn copy_raw(&self) -> *mut RawUnionSet {
        self.copy()
    }

    /// The isl object, now owned by the caller (the wrapper is left empty).
    pub(super) fn take_raw(&mut self) -> *mut RawUnionSet {
        std::mem::replace(&mut self.raw, std::ptr::null_mut())
    }

    /// The context that owns it.
    pub(super) fn isl(&self) -> &Isl {
        &self.isl
    }
}

impl UnionMap {
    fn op(&self, raw: *mut RawUnionMap, what: &str) -> Result<UnionMap, String> {
        self.isl.union_map_from(raw, what)
    }

    fn copy(&self) -> *mut RawUnionMap {
        // SAFETY: reference counted copy.
        unsafe { isl_union_map_copy(self.raw) }
    }

    /// The pairs in either union.
    pub fn union(&self, other: &UnionMap) -> Result<UnionMap, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_map_union(self.copy(), other.copy()) };
        self.op(raw, "isl union")
    }

    /// The pairs in both unions.
    pub fn intersect(&self, other: &UnionMap) -> Result<UnionMap, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_map_intersect(self.copy(), other.copy()) };
        self.op(raw, "isl intersection")
    }

    /// The pairs of `self` not in `other`.
    pub fn subtract(&self, other: &UnionMap) -> Result<UnionMap, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_map_subtract(self.copy(), other.copy()) };
        self.op(raw, "isl difference")
    }

    /// `self` then `next`: the pairs `(a, c)` with `(a, b)` in `self`, `(b, c)` in `next`.
    pub fn then(&self, next: &UnionMap) -> Result<UnionMap, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_map_apply_range(self.copy(), next.copy()) };
        self.op(raw, "isl composition")
    }

    /// The pairs turned around.
    pub fn reverse(&self) -> Result<UnionMap, String> {
        // SAFETY: the operation takes a copy.
        let raw = unsafe { isl_union_map_reverse(self.copy()) };
        self.op(raw, "isl reversal")
    }

    /// The sources of the pairs.
    pub fn domain(&self) -> Result<UnionSet, String> {
        // SAFETY: the operation takes a copy.
        let raw = unsafe { isl_union_map_domain(self.copy()) };
        self.isl.union_set_from(raw, "isl domain")
    }

    /// The targets of the pairs.
    pub fn range(&self) -> Result<UnionSet, String> {
        // SAFETY: the operation takes a copy.
        let raw = unsafe { isl_union_map_range(self.copy()) };
        self.isl.union_set_from(raw, "isl range")
    }

    /// The pairs whose source is in `set`.
    pub fn restrict_domain(&self, set: &UnionSet) -> Result<UnionMap, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_map_intersect_domain_union_set(self.copy(), set.copy()) };
        self.op(raw, "isl domain restriction")
    }

    /// The pairs whose target is in `set`.
    pub fn restrict_range(&self, set: &UnionSet) -> Result<UnionMap, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_map_intersect_range_union_set(self.copy(), set.copy()) };
        self.op(raw, "isl range restriction")
    }

    /// For every source and every target space, the lexicographically largest target
    /// (parametric and exact).
    pub fn lexmax(&self) -> Result<UnionMap, String> {
        // SAFETY: the operation takes a copy.
        let raw = unsafe { isl_union_map_lexmax(self.copy()) };
        self.op(raw, "isl lexicographic maximum")
    }

    /// The pairs `(a, b)` of a source of `self` and a source of `other` whose images
    /// compare `self(a) >lex other(b)`.
    pub fn lex_gt(&self, other: &UnionMap) -> Result<UnionMap, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_union_map_lex_gt_union_map(self.copy(), other.copy()) };
        self.op(raw, "isl lexicographic order")
    }

    /// `R+ = R ∪ R∘R ∪ ...`, and whether isl computed it exactly (else it is an
    /// over-approximation).
    pub fn transitive_closure(&self) -> Result<(UnionMap, bool), String> {
        let mut exact: c_int = -1;
        // SAFETY: the operation takes a copy; `exact` outlives the call that writes it.
        let raw = unsafe { isl_union_map_transitive_closure(self.copy(), &mut exact) };
        Ok((self.op(raw, "isl transitive closure")?, exact == 1))
    }

    /// The relation as a set of pairs `[a -> b]` (isl's wrapping).
    pub fn wrap(&self) -> Result<UnionSet, String> {
        // SAFETY: the operation takes a copy.
        let raw = unsafe { isl_union_map_wrap(self.copy()) };
        self.isl.union_set_from(raw, "isl wrapping")
    }

    /// The same union with fewer pieces.
    pub fn coalesce(&self) -> Result<UnionMap, String> {
        // SAFETY: the operation takes a copy.
        let raw = unsafe { isl_union_map_coalesce(self.copy()) };
        self.op(raw, "isl coalescing")
    }

    /// Whether the union holds no pair.
    pub fn is_empty(&self) -> Result<bool, String> {
        // SAFETY: `raw` is kept.
        let answer = unsafe { isl_union_map_is_empty(self.raw) };
        self.isl.answer(answer, "isl emptiness test")
    }
}

/// Print what isl's printer returns (a malloc'ed string, or null on failure).
unsafe fn printed(s: *mut c_char, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    if s.is_null() {
        return write!(f, "<isl union>");
    }
    let text = CStr::from_ptr(s).to_string_lossy().into_owned();
    libc::free(s as *mut c_void);
    write!(f, "{text}")
}

impl std::fmt::Display for UnionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: `raw` is kept; the string is freed by `printed`.
        unsafe { printed(isl_union_set_to_str(self.raw), f) }
    }
}

impl std::fmt::Display for UnionMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: as for `UnionSet`.
        unsafe { printed(isl_union_map_to_str(self.raw), f) }
    }
}

impl std::fmt::Debug for UnionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Debug for UnionMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_writers_by_parametric_maximum() {
        // Reads of `S[i]` (writing x[i] for 0 <= i < N) by `R[j]` reading x[j - 1]: each
        // read's last writer is the one instance writing that cell before it.
        let isl = Isl::new();
        let reads = isl
            .union_map("[N] -> { R[j] -> x[j - 1] : 1 <= j < N }")
            .unwrap();
        let writes = isl
            .union_map("[N] -> { S[i] -> x[i] : 0 <= i < N }")
            .unwrap();
        let schedule = isl.union_map("{ S[i] -> [i, 0]; R[j] -> [j, 1] }").unwrap();
        let before = schedule.lex_gt(&schedule).unwrap();
        let flow = reads.then(&writes.reverse().unwrap()).unwrap();
        let flow = flow.intersect(&before).unwrap();
        let last = flow
            .then(&schedule)
            .unwrap()
            .lexmax()
            .unwrap()
            .then(&schedule.reverse().unwrap())
            .unwrap();
        let expected = isl
            .union_map("[N] -> { R[j] -> S[j - 1] : 1 <= j < N }")
            .unwrap();
        assert!(last.subtract(&expected).unwrap().is_empty().unwrap());
        assert!(expected.subtract(&last).unwrap().is_empty().unwrap());
    }

    #[test]
    fn closures_report_exactness_and_points_enumerate() {
        let isl = Isl::new();
        let step = isl
            .union_map("[N] -> { S[k] -> S[k + 1] : 0 <= k < N - 1 }")
            .unwrap();
        let (closure, exact) = step.transitive_closure().unwrap();
        assert!(exact);
        let start = isl.union_set("{ S[2] }").unwrap();
        let reached = start
            .apply(&closure)
            .unwrap()
            .with_params("[N] -> { : N = 6 }")
            .unwrap();
        let mut points = reached.points(100).unwrap();
        points.sort();
        let ks: Vec<i64> = points.iter().map(|p| p.coordinates[0]).collect();
        assert_eq!(ks, vec![3, 4, 5]);
        assert!(points.iter().all(|p| p.space == "S"));
        let unbounded = isl.union_set("{ S[k] : k >= 0 }").unwrap();
        assert!(unbounded.points(10).is_err());
        assert!(isl.union_set("{ S[k] : k >= }").is_err());
    }
}
