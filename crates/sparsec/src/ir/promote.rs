//! Scalar replacement: an array element that one iteration of a loop reads and writes at
//! a single index lives in a local variable for the iteration, loaded once before its
//! first use and stored once after its last.
//!
//! A forward substitution written as loops (`x(i) = b(i)`, then `x(i) -= L(i,j) * x(j)`
//! over the row's entries, then `x(i) /= L(i,i)`) otherwise sends every step of the row's
//! sum through memory: the C compiler cannot keep `x[i]` in a register, because it cannot
//! tell that `x[j]` is another element, so each entry waits for the previous entry's store
//! to reach the next load. SPF lower solve on EX5 (154k entries): 0.27 to 0.20 ms.
//!
//! An element `A[e]` is promoted in a loop's body when:
//! - every store to `A` in the body is at `e`, none atomic, and one of them is a direct
//!   statement of the body, so the element is written on every iteration anyway (the
//!   promoted code reads and writes it on every iteration, which is then in bounds and
//!   stores nothing the original would not);
//! - `e` reads only variables the body does not assign (declared before the first access
//!   or outside the loop), and loads from no array the body writes, so it names one
//!   element for the whole iteration;
//! - every other load of `A` in the body, at an index `j`, is inside an `if` whose
//!   condition has a conjunct `j < e`, `j <= e - 1`, `j > e`, `j >= e + 1` or `j != e`
//!   (either way round, the constants any that keep `j` off `e`), `j` a variable the body
//!   never assigns: it reads another element;
//! - nothing else in the body reads or writes `A` (helper calls, touched lists), and the
//!   body has no barrier, launch or parallel loop.

use super::analysis::{conjuncts, mirrored, plus_constant};
use super::visit;
use super::{ArrayRef, BinOp, Expr, Function, Loop, LoopKind, Stmt, Store, Var};

/// Promote, in every loop of `function`, the array elements that its iterations read and
/// write at one index (see the module's documentation), outermost loops first.
pub fn promote_invariant_elements(function: &mut Function) {
    let mut body = std::mem::take(&mut function.body);
    promote_in(function, &mut body);
    function.body = body;
}

fn promote_in(function: &mut Function, stmts: &mut [Stmt]) {
    for s in stmts.iter_mut() {
        if let Stmt::For(l) = s {
            promote_loop(function, l);
        }
        for body in visit::children_mut(s) {
            promote_in(function, body);
        }
    }
}

/// Promote every element `l`'s body allows, one array at a time.
fn promote_loop(function: &mut Function, l: &mut Loop) {
    let mut tried: Vec<ArrayRef> = Vec::new();
    while let Some((array, index)) = next_candidate(&l.body, &tried) {
        tried.push(array);
        if promotable(&l.body, array, &index) {
            promote(function, &mut l.body, array, &index);
        }
    }
}

/// The next array, not yet tried, that a direct statement of `body` stores to, with that
/// store's index.
fn next_candidate(body: &[Stmt], tried: &[ArrayRef]) -> Option<(ArrayRef, Expr)> {
    body.iter().find_map(|s| match s {
        Stmt::Store(Store { array, index, .. }) if !tried.contains(array) => {
            Some((*array, index.clone()))
        }
        _ => None,
    })
}

/// The variables `stmts` assign (not those they declare).
fn assigned(stmts: &[Stmt]) -> Vec<Var> {
    let mut out = Vec::new();
    visit::walk_stmts(stmts, &mut |s| {
        if let Stmt::Assign(v, _) = s {
            out.push(*v);
        }
    });
    out
}

/// The variables `e` reads.
fn vars_of(e: &Expr) -> Vec<Var> {
    let mut out = Vec::new();
    visit::walk_expr(e, &mut |e| {
        if let Expr::Var(v) = e {
            out.push(*v);
        }
    });
    out
}

/// Whether `A[index]` may be promoted in `body` (see the module's documentation).
fn promotable(body: &[Stmt], array: ArrayRef, index: &Expr) -> bool {
    let assigned = assigned(body);
    if vars_of(index).iter().any(|v| assigned.contains(v)) {
        return false;
    }
    let mut written = Vec::new();
    visit::walk_stmts(body, &mut |s| {
        if let Stmt::Store(store) = s {
            written.push(store.array);
        }
    });
    let mut loads_written = false;
    visit::walk_expr(index, &mut |e| {
        loads_written |= matches!(e, Expr::Load(a, _) if written.contains(a));
    });
    if loads_written {
        return false;
    }
    // The index's declared variables must be declared before the first access.
    let first_access = body
        .iter()
        .position(|s| touches(std::slice::from_ref(s), array))
        .expect("a direct statement stores to the array");
    let declared_after = body[first_access..].iter().any(|s| {
        matches!(s, Stmt::Decl(v, _) if vars_of(index).contains(v))
            || contains_decl_of(s, &vars_of(index))
    });
    if declared_after {
        return false;
    }
    let mut check = Check {
        array,
        index,
        assigned: &assigned,
        guards: Vec::new(),
        ok: true,
    };
    check.stmts(body);
    check.ok
}

fn contains_decl_of(s: &Stmt, vars: &[Var]) -> bool {
    let mut found = false;
    visit::walk_stmts(std::slice::from_ref(s), &mut |s| {
        found |= matches!(s, Stmt::Decl(v, _) if vars.contains(v));
    });
    found
}

/// Whether `stmts` read or write `array` in any way.
fn touches(stmts: &[Stmt], array: ArrayRef) -> bool {
    let mut found = false;
    visit::walk_stmts(stmts, &mut |s| {
        found |= match s {
            Stmt::Store(store) => store.array == array,
            Stmt::OrderTouched { list, flags, .. } => {
                array == ArrayRef::Scratch(*list) || array == ArrayRef::Scratch(*flags)
            }
            Stmt::Prefetch { array: a, .. } => *a == array,
            _ => false,
        };
    });
    visit::walk_stmt_exprs(stmts, &mut |e| {
        found |= matches!(e, Expr::Load(a, _) | Expr::Call(_, a, _) if *a == array);
    });
    found
}

/// The walk that checks every access of the array in a body, with the conditions of the
/// `if`s around the statement being checked.
struct Check<'c> {
    array: ArrayRef,
    index: &'c Expr,
    assigned: &'c [Var],
    guards: Vec<&'c Expr>,
    ok: bool,
}

impl<'c> Check<'c> {
    fn stmts(&mut self, stmts: &'c [Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &'c Stmt) {
        match s {
            Stmt::Store(store) if store.array == self.array => {
                self.ok &= store.index == *self.index;
            }
            Stmt::Atomic(inner) if touches(std::slice::from_ref(inner), self.array) => {
                self.ok = false;
            }
            Stmt::OrderTouched { .. } | Stmt::Prefetch { .. }
                if touches(std::slice::from_ref(s), self.array) =>
            {
                self.ok = false;
            }
            // Another thread's iterations would share the local.
            Stmt::For(Loop {
                kind: LoopKind::Parallel { .. },
                ..
            })
            | Stmt::Barrier
            | Stmt::Launch(_) => self.ok = false,
            _ => {}
        }
        for e in visit::own_exprs(s) {
            self.expr(e);
        }
        match s {
            Stmt::If(condition, then, otherwise) => {
                let depth = self.guards.len();
                conjuncts(condition, &mut self.guards);
                self.stmts(then);
                self.guards.truncate(depth);
                self.stmts(otherwise);
            }
            other => {
                for body in visit::children(other) {
                    self.stmts(body);
                }
            }
        }
    }

    fn expr(&mut self, e: &'c Expr) {
        visit::walk_expr(e, &mut |e| match e {
            Expr::Load(a, i) if *a == self.array && **i != *self.index => {
                self.ok &= self.another_element(i);
            }
            Expr::Call(_, a, _) if *a == self.array => self.ok = false,
            _ => {}
        });
    }

    /// Whether an enclosing condition says that `i` is not the promoted index.
    fn another_element(&self, i: &Expr) -> bool {
        let Expr::Var(v) = i else { return false };
        if self.assigned.contains(v) {
            return false;
        }
        self.guards.iter().any(|g| {
            let Expr::Bin(op, a, b) = g else {
                return false;
            };
            let (op, bound) = match (**a == *i, **b == *i) {
                (true, false) => (*op, b),
                (false, true) => (mirrored(*op), a),
                _ => return false,
            };
            // `i op index + d`, where `d` is how far the bound is from the index.
            let Some(d) = distance(self.index, bound) else {
                return false;
            };
            match op {
                BinOp::Lt => d <= 0,
                BinOp::Le => d <= -1,
                BinOp::Gt => d >= 0,
                BinOp::Ge => d >= 1,
                BinOp::Ne => d == 0,
                _ => false,
            }
        })
    }
}

/// `b - a` where the two are one expression plus different constants (a guard reads
/// `r - 1` or `(r - 1) + 1` where the store's index is `r`), else `None`.
fn distance(a: &Expr, b: &Expr) -> Option<i64> {
    let ((a, da), (b, db)) = (plus_constant(a), plus_constant(b));
    (a == b).then(|| db.wrapping_sub(da))
}

/// Keep `A[index]` in a fresh variable over `body`: loaded before the first statement that
/// uses it, stored after the last.
fn promote(function: &mut Function, body: &mut Vec<Stmt>, array: ArrayRef, index: &Expr) {
    let ty = function.element_type(&array);
    let local = function.fresh_var("element", ty);
    for s in body.iter_mut() {
        replace_accesses(s, array, index, local);
    }
    let uses = |s: &Stmt| {
        let mut found = false;
        visit::walk_stmt_exprs(std::slice::from_ref(s), &mut |e| {
            found |= matches!(e, Expr::Var(v) if *v == local);
        });
        visit::walk_stmts(std::slice::from_ref(s), &mut |s| {
            found |= matches!(s, Stmt::Assign(v, _) if *v == local);
        });
        found
    };
    let first = body
        .iter()
        .position(uses)
        .expect("a statement stored to it");
    let last = body
        .iter()
        .rposition(uses)
        .expect("a statement stored to it");
    body.insert(
        last + 1,
        Stmt::Store(Store {
            array,
            index: index.clone(),
            value: Expr::Var(local),
            accumulate: false,
        }),
    );
    body.insert(first, Stmt::Decl(local, Expr::load(array, index.clone())));
}

/// `s` with loads of `A[index]` reading `local` and stores to it assigning `local`.
fn replace_accesses(s: &mut Stmt, array: ArrayRef, index: &Expr, local: Var) {
    if let Stmt::Store(store) = s {
        if store.array == array {
            let value = std::mem::replace(&mut store.value, Expr::Int(0));
            let value = match store.accumulate {
                true => Expr::bin(BinOp::Add, Expr::Var(local), value),
                false => value,
            };
            *s = Stmt::Assign(local, value);
        }
    }
    for e in visit::own_exprs_mut(s) {
        visit::walk_expr_mut(e, &mut |e| {
            if matches!(e, Expr::Load(a, i) if *a == array && **i == *index) {
                *e = Expr::Var(local);
            }
        });
    }
    for body in visit::children_mut(s) {
        for s in body.iter_mut() {
            replace_accesses(s, array, index, local);
        }
    }
}
