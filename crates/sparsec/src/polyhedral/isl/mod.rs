//! A small safe binding to isl, the integer set library behind GCC Graphite, Polly and
//! PPCG: exact Presburger operations on the affine part of a front end's sets (emptiness,
//! projection, union, simplification, transitive closure) and the AST isl scans them
//! into. Sets cross the boundary as isl's text syntax going in and as lists of integer
//! constraints coming out, so nothing here knows about uninterpreted functions (the SPF
//! front end's layer over it is [`crate::spf::presburger`]).
//!
//! Every isl object is owned by one [`Isl`] context, which is not thread-safe; the wrappers
//! hold a reference count on it and are neither `Send` nor `Sync`. isl is told to return
//! null on errors instead of aborting, and its message becomes the `Err`.

use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr, CString};
use std::rc::Rc;

mod ast;
mod pieces;
mod union;
pub use ast::{Ast, AstExpr, AstOp};
pub use pieces::NamedBasicSet;
pub use union::{NamedPoint, UnionMap, UnionSet};

#[repr(C)]
struct RawCtx {
    _private: [u8; 0],
}
#[repr(C)]
struct RawSet {
    _private: [u8; 0],
}
#[repr(C)]
struct RawMap {
    _private: [u8; 0],
}
#[repr(C)]
struct RawBasicSet {
    _private: [u8; 0],
}
#[repr(C)]
struct RawConstraint {
    _private: [u8; 0],
}
#[repr(C)]
struct RawVal {
    _private: [u8; 0],
}

/// `enum isl_dim_type` (isl/space_type.h).
const DIM_PARAM: c_int = 1;
const DIM_IN: c_int = 2;
const DIM_OUT: c_int = 3;
const DIM_SET: c_int = 3;
const DIM_DIV: c_int = 4;
/// `ISL_ON_ERROR_CONTINUE` (isl/options.h): return null and keep the message.
const ON_ERROR_CONTINUE: c_int = 1;

type BasicSetFn = unsafe extern "C" fn(*mut RawBasicSet, *mut c_void) -> c_int;
type ConstraintFn = unsafe extern "C" fn(*mut RawConstraint, *mut c_void) -> c_int;

// The library is found and linked by build.rs.
extern "C" {
    fn isl_ctx_alloc() -> *mut RawCtx;
    fn isl_ctx_free(ctx: *mut RawCtx);
    fn isl_options_set_on_error(ctx: *mut RawCtx, val: c_int) -> c_int;
    fn isl_ctx_last_error_msg(ctx: *mut RawCtx) -> *const c_char;
    fn isl_ctx_reset_error(ctx: *mut RawCtx);
    fn isl_ctx_set_max_operations(ctx: *mut RawCtx, max: std::ffi::c_ulong);
    fn isl_set_read_from_str(ctx: *mut RawCtx, text: *const c_char) -> *mut RawSet;
    fn isl_set_copy(set: *mut RawSet) -> *mut RawSet;
    fn isl_set_free(set: *mut RawSet) -> *mut RawSet;
    fn isl_set_to_str(set: *mut RawSet) -> *mut c_char;
    fn isl_set_is_empty(set: *mut RawSet) -> c_int;
    fn isl_set_is_subset(a: *mut RawSet, b: *mut RawSet) -> c_int;
    fn isl_set_union(a: *mut RawSet, b: *mut RawSet) -> *mut RawSet;
    fn isl_set_intersect(a: *mut RawSet, b: *mut RawSet) -> *mut RawSet;
    fn isl_set_project_out(set: *mut RawSet, kind: c_int, first: c_uint, n: c_uint) -> *mut RawSet;
    fn isl_set_coalesce(set: *mut RawSet) -> *mut RawSet;
    fn isl_set_flatten(set: *mut RawSet) -> *mut RawSet;
    fn isl_map_from_range(set: *mut RawSet) -> *mut RawMap;
    fn isl_map_move_dims(
        map: *mut RawMap,
        dst_type: c_int,
        dst_pos: c_uint,
        src_type: c_int,
        src_pos: c_uint,
        n: c_uint,
    ) -> *mut RawMap;
    fn isl_map_transitive_closure(map: *mut RawMap, exact: *mut c_int) -> *mut RawMap;
    fn isl_map_wrap(map: *mut RawMap) -> *mut RawSet;
    fn isl_set_remove_redundancies(set: *mut RawSet) -> *mut RawSet;
    fn isl_set_dim(set: *mut RawSet, kind: c_int) -> c_int;
    fn isl_set_get_dim_name(set: *mut RawSet, kind: c_int, pos: c_uint) -> *const c_char;
    fn isl_set_foreach_basic_set(set: *mut RawSet, f: BasicSetFn, user: *mut c_void) -> c_int;
    fn isl_basic_set_free(bset: *mut RawBasicSet) -> *mut RawBasicSet;
    fn isl_basic_set_foreach_constraint(
        bset: *mut RawBasicSet,
        f: ConstraintFn,
        user: *mut c_void,
    ) -> c_int;
    fn isl_basic_set_dim(bset: *mut RawBasicSet, kind: c_int) -> c_int;
    fn isl_constraint_free(c: *mut RawConstraint) -> *mut RawConstraint;
    fn isl_constraint_is_equality(c: *mut RawConstraint) -> c_int;
    fn isl_constraint_get_constant_val(c: *mut RawConstraint) -> *mut RawVal;
    fn isl_constraint_get_coefficient_val(
        c: *mut RawConstraint,
        kind: c_int,
        pos: c_int,
    ) -> *mut RawVal;
    fn isl_val_get_num_si(v: *mut RawVal) -> c_long;
    fn isl_val_get_den_si(v: *mut RawVal) -> c_long;
    fn isl_val_free(v: *mut RawVal) -> *mut RawVal;
}

struct CtxHandle(*mut RawCtx);

impl Drop for CtxHandle {
    fn drop(&mut self) {
        // SAFETY: every object of the context holds an `Rc` on this handle, so none is
        // alive when it drops.
        unsafe { isl_ctx_free(self.0) }
    }
}

/// An isl context: the owner of every set made from it.
#[derive(Clone)]
pub struct Isl(Rc<CtxHandle>);

impl Isl {
    /// A new context whose errors are returned, not printed or aborted on.
    pub fn new() -> Isl {
        // SAFETY: a fresh context; the option only changes how errors are reported.
        unsafe {
            let ctx = isl_ctx_alloc();
            assert!(!ctx.is_null(), "isl could not allocate a context");
            isl_options_set_on_error(ctx, ON_ERROR_CONTINUE);
            Isl(Rc::new(CtxHandle(ctx)))
        }
    }

    /// The same context, whose computations fail (with an error, not a hang) after about
    /// `max` elementary operations.
    pub fn with_operation_limit(self, max: u64) -> Isl {
        // SAFETY: the context is alive; the limit only makes later operations fail early.
        unsafe { isl_ctx_set_max_operations(self.0 .0, max as std::ffi::c_ulong) };
        self
    }

    /// Parse a set (or a union of sets) in isl's syntax, e.g. `[N] -> { [i] : 0 <= i < N }`.
    pub fn set(&self, text: &str) -> Result<IslSet, String> {
        let c = CString::new(text).map_err(|_| "a set's text holds a NUL byte".to_string())?;
        // SAFETY: `c` is a valid C string for the call; the result is owned or null.
        let raw = unsafe { isl_set_read_from_str(self.0 .0, c.as_ptr()) };
        self.wrap(raw, &format!("isl could not read `{text}`"))
    }

    fn wrap(&self, raw: *mut RawSet, context: &str) -> Result<IslSet, String> {
        if raw.is_null() {
            // SAFETY: the context is alive; the message, if any, is a C string it owns.
            let msg = unsafe {
                let m = isl_ctx_last_error_msg(self.0 .0);
                let s = if m.is_null() {
                    "unknown error".to_string()
                } else {
                    CStr::from_ptr(m).to_string_lossy().into_owned()
                };
                isl_ctx_reset_error(self.0 .0);
                s
            };
            return Err(format!("{context}: {msg}"));
        }
        Ok(IslSet {
            raw,
            isl: self.clone(),
        })
    }
}

impl Default for Isl {
    fn default() -> Self {
        Isl::new()
    }
}

/// A union of basic sets (conjunctions of affine constraints over parameters, set
/// dimensions and existentially quantified divisions).
pub struct IslSet {
    raw: *mut RawSet,
    isl: Isl,
}

impl Drop for IslSet {
    fn drop(&mut self) {
        // SAFETY: `raw` is owned by this wrapper.
        unsafe {
            isl_set_free(self.raw);
        }
    }
}

impl Clone for IslSet {
    fn clone(&self) -> Self {
        // SAFETY: isl copies are reference counted; the copy is owned by the new wrapper.
        IslSet {
            raw: unsafe { isl_set_copy(self.raw) },
            isl: self.isl.clone(),
        }
    }
}

/// One affine constraint `constant + params·p + set·x + divs·e (= or >=) 0` of a basic set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearConstraint {
    pub equality: bool,
    pub constant: i64,
    pub params: Vec<i64>,
    pub set: Vec<i64>,
    pub divs: Vec<i64>,
}

/// The constraints of one basic set, with the names of the parameters they refer to.
#[derive(Clone, Debug)]
pub struct BasicSet {
    pub params: Vec<String>,
    pub divs: usize,
    pub constraints: Vec<LinearConstraint>,
}

impl IslSet {
    fn op(&self, raw: *mut RawSet, what: &str) -> Result<IslSet, String> {
        self.isl.wrap(raw, what)
    }

    fn truth(&self, answer: c_int, what: &str) -> Result<bool, String> {
        match answer {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self
                .isl
                .wrap(std::ptr::null_mut(), what)
                .err()
                .unwrap_or_default()),
        }
    }

    /// Whether no integer point satisfies the set (exact).
    pub fn is_empty(&self) -> Result<bool, String> {
        // SAFETY: `raw` is kept, not taken.
        let answer = unsafe { isl_set_is_empty(self.raw) };
        self.truth(answer, "isl emptiness test")
    }

    /// Whether every point of `self` is in `other`.
    pub fn is_subset(&self, other: &IslSet) -> Result<bool, String> {
        // SAFETY: both are kept, not taken.
        let answer = unsafe { isl_set_is_subset(self.raw, other.raw) };
        self.truth(answer, "isl subset test")
    }

    /// The points in either set.
    pub fn union(&self, other: &IslSet) -> Result<IslSet, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_set_union(isl_set_copy(self.raw), isl_set_copy(other.raw)) };
        self.op(raw, "isl union")
    }

    /// The points in both sets.
    pub fn intersect(&self, other: &IslSet) -> Result<IslSet, String> {
        // SAFETY: the operation takes copies.
        let raw = unsafe { isl_set_intersect(isl_set_copy(self.raw), isl_set_copy(other.raw)) };
        self.op(raw, "isl intersection")
    }

    /// Existentially quantify set dimensions `first..first + n` away (exact projection).
    pub fn project_out(&self, first: usize, n: usize) -> Result<IslSet, String> {
        // SAFETY: the operation takes a copy; isl checks the range and reports errors.
        let raw = unsafe {
            isl_set_project_out(
                isl_set_copy(self.raw),
                DIM_SET,
                first as c_uint,
                n as c_uint,
            )
        };
        self.op(raw, "isl projection")
    }

    /// The same set with fewer basic sets and no redundant constraints.
    pub fn simplify(&self) -> Result<IslSet, String> {
        // SAFETY: each call takes the previous result.
        let raw = unsafe { isl_set_remove_redundancies(isl_set_coalesce(isl_set_copy(self.raw))) };
        self.op(raw, "isl simplification")
    }

    /// The transitive closure `R+ = R ∪ R∘R ∪ ...` of the relation whose pairs are this
    /// set's points, the first `n` dimensions a pair's source and the rest its target, as
    /// a set of the same kind; and whether isl computed it exactly (else the set is an
    /// over-approximation).
    pub fn transitive_closure(&self, n: usize) -> Result<(IslSet, bool), String> {
        let mut exact: c_int = -1;
        // SAFETY: each call takes the previous result (null propagates to the end, where
        // `op` reports the error); `exact` outlives the call that writes it.
        let raw = unsafe {
            let map = isl_map_move_dims(
                isl_map_from_range(isl_set_copy(self.raw)),
                DIM_IN,
                0,
                DIM_OUT,
                0,
                n as c_uint,
            );
            let closure = isl_map_transitive_closure(map, &mut exact);
            isl_set_flatten(isl_map_wrap(closure))
        };
        Ok((self.op(raw, "isl transitive closure")?, exact == 1))
    }

    /// The number of set dimensions.
    pub fn dims(&self) -> usize {
        // SAFETY: `raw` is kept.
        unsafe { isl_set_dim(self.raw, DIM_SET).max(0) as usize }
    }

    /// Each basic set's constraints.
    pub fn basic_sets(&self) -> Result<Vec<BasicSet>, String> {
        // SAFETY: `raw` is kept; names are C strings owned by the set while it lives.
        let params: Vec<String> = unsafe {
            (0..isl_set_dim(self.raw, DIM_PARAM).max(0))
                .map(|p| {
                    let name = isl_set_get_dim_name(self.raw, DIM_PARAM, p as c_uint);
                    if name.is_null() {
                        String::new()
                    } else {
                        CStr::from_ptr(name).to_string_lossy().into_owned()
                    }
                })
                .collect()
        };
        let mut walk = Walk {
            params,
            out: Vec::new(),
            failed: false,
        };
        // SAFETY: the callbacks take ownership of what isl hands them and free it; `walk`
        // outlives the call.
        let status = unsafe {
            isl_set_foreach_basic_set(self.raw, on_basic_set, &mut walk as *mut Walk as *mut _)
        };
        if status < 0 || walk.failed {
            return Err(
                "isl: reading a set's constraints failed (a coefficient does not fit \
                        64 bits, or is not an integer)"
                    .into(),
            );
        }
        Ok(walk.out)
    }
}

impl std::fmt::Display for IslSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: isl returns a malloc'ed string (or null), freed here.
        unsafe {
            let s = isl_set_to_str(self.raw);
            if s.is_null() {
                return write!(f, "<isl set>");
            }
            let text = CStr::from_ptr(s).to_string_lossy().into_owned();
            libc::free(s as *mut c_void);
            write!(f, "{text}")
        }
    }
}

struct Walk {
    params: Vec<String>,
    out: Vec<BasicSet>,
    failed: bool,
}

struct ConstraintWalk {
    n_params: usize,
    n_set: usize,
    n_div: usize,
    out: Vec<LinearConstraint>,
    failed: bool,
}

/// An integer value, taking (and freeing) `v`; None if it is not an integer that fits.
unsafe fn integer(v: *mut RawVal) -> Option<i64> {
    if v.is_null() {
        return None;
    }
    let (num, den) = (isl_val_get_num_si(v), isl_val_get_den_si(v));
    isl_val_free(v);
    (den == 1).then_some(num)
}

/// The constraints of `bset` (kept), or None if a coefficient does not fit 64 bits or is
/// not an integer.
unsafe fn constraints_of(bset: *mut RawBasicSet) -> Option<Vec<LinearConstraint>> {
    let mut walk = ConstraintWalk {
        n_params: isl_basic_set_dim(bset, DIM_PARAM).max(0) as usize,
        n_set: isl_basic_set_dim(bset, DIM_SET).max(0) as usize,
        n_div: isl_basic_set_dim(bset, DIM_DIV).max(0) as usize,
        out: Vec::new(),
        failed: false,
    };
    let status =
        isl_basic_set_foreach_constraint(bset, on_constraint, &mut walk as *mut _ as *mut _);
    (status >= 0 && !walk.failed).then_some(walk.out)
}

unsafe extern "C" fn on_basic_set(bset: *mut RawBasicSet, user: *mut c_void) -> c_int {
    let walk = &mut *(user as *mut Walk);
    let divs = isl_basic_set_dim(bset, DIM_DIV).max(0) as usize;
    let constraints = constraints_of(bset);
    isl_basic_set_free(bset);
    let Some(constraints) = constraints else {
        walk.failed = true;
        return -1;
    };
    walk.out.push(BasicSet {
        params: walk.params.clone(),
        divs,
        constraints,
    });
    0
}

unsafe extern "C" fn on_constraint(c: *mut RawConstraint, user: *mut c_void) -> c_int {
    let walk = &mut *(user as *mut ConstraintWalk);
    let coefficients = |kind: c_int, n: usize| -> Option<Vec<i64>> {
        (0..n)
            .map(|p| integer(isl_constraint_get_coefficient_val(c, kind, p as c_int)))
            .collect()
    };
    let read = (|| {
        Some(LinearConstraint {
            equality: isl_constraint_is_equality(c) == 1,
            constant: integer(isl_constraint_get_constant_val(c))?,
            params: coefficients(DIM_PARAM, walk.n_params)?,
            set: coefficients(DIM_SET, walk.n_set)?,
            divs: coefficients(DIM_DIV, walk.n_div)?,
        })
    })();
    isl_constraint_free(c);
    match read {
        Some(constraint) => {
            walk.out.push(constraint);
            0
        }
        None => {
            walk.failed = true;
            -1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emptiness_projection_and_constraints() {
        let isl = Isl::new();
        let s = isl
            .set("[N] -> { [i, j] : 0 <= i < N and 0 <= j < i }")
            .unwrap();
        assert!(!s.is_empty().unwrap());
        let none = isl.set("{ [i] : 2i = 1 }").unwrap();
        assert!(
            none.is_empty().unwrap(),
            "no integer point: exact, not rational"
        );
        // Fourier-Motzkin over the integers: j < i < N gives j <= N - 2.
        let j = s.project_out(0, 1).unwrap().simplify().unwrap();
        let pieces = j.basic_sets().unwrap();
        assert_eq!(pieces.len(), 1);
        let upper = LinearConstraint {
            equality: false,
            constant: -2,
            params: vec![1],
            set: vec![-1],
            divs: vec![],
        };
        assert!(pieces[0].constraints.contains(&upper), "{pieces:?}");
        assert_eq!(pieces[0].params, vec!["N".to_string()]);
        let part = isl
            .set("[N] -> { [i, j] : 0 <= j < i < 3 and i < N }")
            .unwrap();
        let u = s.union(&part).unwrap();
        assert!(s.is_subset(&u).unwrap() && u.is_subset(&s).unwrap());
    }

    #[test]
    fn errors_are_returned_not_printed_or_aborted() {
        let isl = Isl::new();
        let err = isl.set("{ [i] : i <= }").err().expect("malformed");
        assert!(err.contains("isl could not read"), "{err}");
        let s = isl.set("{ [i] : 0 <= i }").unwrap();
        assert!(s.project_out(3, 1).is_err());
        // The context still works after an error.
        assert!(!s.is_empty().unwrap());
    }

    #[test]
    fn the_ast_generator_scans_a_triangle_and_separates_statements() {
        let isl = Isl::new();
        let ast = isl
            .ast(
                "[N] -> { : }",
                "[N] -> { S0[i, j] : 0 <= i < N and 0 <= j <= i; S1[i] : 0 <= i < N }",
                "{ S0[i, j] -> [i, 0, j]; S1[i] -> [i, 1, 0] }",
                None,
            )
            .unwrap();
        let id = |s: &str| AstExpr::Id(s.to_string());
        let Ast::For {
            iterator,
            init,
            cond,
            body,
            ..
        } = &ast
        else {
            panic!("{ast:?}")
        };
        assert_eq!(
            (iterator.as_str(), init),
            ("c0", &AstExpr::Int(0)),
            "{ast:?}"
        );
        assert_eq!(cond, &AstExpr::Op(AstOp::Lt, vec![id("c0"), id("N")]));
        let Ast::Block(parts) = body.as_ref() else {
            panic!("{ast:?}")
        };
        assert!(matches!(&parts[0], Ast::For { iterator, .. } if iterator == "c2"));
        assert_eq!(
            parts[1],
            Ast::User(AstExpr::Op(AstOp::Call, vec![id("S1"), id("c0")]))
        );
        let bad = isl.ast(
            "[N] -> { : }",
            "{ S0[i] : i <= 0 }",
            "{ S0[i] -> [i] }",
            None,
        );
        assert!(
            bad.is_err(),
            "a loop without a lower bound is an error, not a crash"
        );
    }
}
