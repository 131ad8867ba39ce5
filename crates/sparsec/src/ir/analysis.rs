//! Facts about loops that backends use to print faster code without changing what it
//! computes: which loops are sums into one scalar (their additions may be reassociated,
//! and nothing else may), and how much work each iteration of a loop over a compressed
//! level's parents does (so that threads get contiguous blocks of equal work).

use std::collections::HashMap;

use super::{
    visit, ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, LoopKind, Stmt, Store, Type, Var,
};

/// A loop whose only effect is adding a value into one scalar declared outside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumReduction {
    /// The value variable the loop adds into.
    pub accumulator: Var,
    /// True when a load's index depends on a value loaded in the loop (`x[idx[p]]`): SIMD
    /// code would need gathers, which are slower than scalar loads on many x86 cores.
    pub indirect: bool,
    /// A flag declared outside the loop that every iteration sets (`touched = true`, which
    /// a sparse output reads to know whether the sum has terms): it is set exactly when
    /// the loop runs at all, so a backend may set it once, ahead of the loop.
    pub flag: Option<Var>,
}

/// The sum `l` computes, when it is a serial loop whose body only declares variables,
/// adds into one value variable declared outside it (`acc += e` or `acc -= e`, with `acc`
/// read nowhere else) and sets at most one flag declared outside it: no stores, branches, nested loops
/// or calls, though prefetch hints may come first. Its iterations then differ only in the
/// order of the additions into `acc`, so a backend may split `acc` into partial sums.
pub fn sum_reduction(function: &Function, l: &Loop) -> Option<SumReduction> {
    if l.kind != LoopKind::Serial {
        return None;
    }
    summed_body(function, l)
}

/// The sum `l`'s body computes (see [`sum_reduction`]), whatever `l`'s kind: a vector loop
/// made from a serial sum (`gather`) still sums the same way.
pub fn summed_body(function: &Function, l: &Loop) -> Option<SumReduction> {
    let mut accumulator = None;
    let mut declared = vec![l.var];
    let mut loaded = Vec::new();
    let mut indirect = false;
    let mut flag = None;
    let mut ok = true;
    visit::walk_stmts(&l.body, &mut |s| match s {
        Stmt::Assign(v, Expr::Bool(true))
            if function.var(*v).ty == Type::Bool && flag.is_none_or(|f| f == *v) =>
        {
            flag = Some(*v)
        }
        Stmt::Decl(v, e) => {
            declared.push(*v);
            if reads_load(e) || depends_on(e, &loaded) {
                loaded.push(*v);
            }
        }
        // Subtracting is adding the negated term: partial sums reassociate it the same way
        // (a triangular solve's `x = x - l * x[j]`).
        Stmt::Assign(v, Expr::Bin(BinOp::Add | BinOp::Sub, a, _))
            if **a == Expr::Var(*v) && accumulator.is_none_or(|acc| acc == *v) =>
        {
            accumulator = Some(*v)
        }
        // Hints change no value.
        Stmt::Block(_) | Stmt::Prefetch { .. } => {}
        _ => ok = false,
    });
    let acc = accumulator?;
    if !ok || declared.contains(&acc) || !matches!(function.var(acc).ty, Type::Value(_)) {
        return None;
    }
    if flag.is_some_and(|f| declared.contains(&f)) {
        return None;
    }
    // `acc` may appear only as the left operand of its own updates.
    let mut reads_acc = false;
    visit::walk_stmts(&l.body, &mut |s| {
        let value = match s {
            Stmt::Decl(_, e) => e,
            Stmt::Assign(_, Expr::Bin(_, _, e)) => e,
            _ => return,
        };
        visit::walk_expr(value, &mut |e| match e {
            Expr::Var(v) if *v == acc => reads_acc = true,
            Expr::Call(..) => reads_acc = true,
            Expr::Load(_, index) if depends_on(index, &loaded) || reads_load(index) => {
                indirect = true
            }
            _ => {}
        });
    });
    (!reads_acc).then_some(SumReduction {
        accumulator: acc,
        indirect,
        flag,
    })
}

/// `body` without its statements setting `flag` (a sum reduction's body: declarations,
/// assignments and blocks).
pub fn without_flag(body: &[Stmt], flag: Var) -> Vec<Stmt> {
    body.iter()
        .filter(|s| !matches!(s, Stmt::Assign(v, Expr::Bool(true)) if *v == flag))
        .map(|s| match s {
            Stmt::Block(inner) => Stmt::Block(without_flag(inner, flag)),
            other => other.clone(),
        })
        .collect()
}

/// A serial loop that adds one row of products into one row of the dense output per
/// iteration: its body declares variables and ends with a loop over columns
/// `j in start..end` (serial, or in SIMD lanes) whose body declares variables and ends
/// with `out[base + j] += value` (the index through the column loop's declarations:
/// sliced ELL's `y[i]`, with `i = slice * 8 + j`), where `base`, `start` and `end` do not
/// change in the loop and nothing in either body
/// reads `out` (SpMM's `C(i,:) += A(i,k) * B(k,:)` for each `k` of row `i`). A backend may
/// sum a block of columns over all the loop's iterations in registers and add each column
/// to the output once. Where `out`'s row starts at zero, as a computed output's does, the
/// result is the same to the bit (the same additions in the same order); otherwise the
/// row's old value is added last instead of first.
pub struct RowSum<'a> {
    /// Guarded prefetch hints at the top of the loop's body (see `prefetch`).
    pub hints: Vec<&'a Stmt>,
    /// The declarations that follow them.
    pub decls: Vec<&'a Stmt>,
    /// The loop over columns.
    pub columns: &'a Loop,
    /// Its declarations.
    pub column_decls: Vec<&'a Stmt>,
    /// Its store, `out[index] += value`.
    pub store: &'a Store,
    /// The store's index, `base + j`, with the column loop's declarations replaced by
    /// their values: it reads nothing the loop over columns declares.
    pub index: Expr,
}

/// `l` as a [`RowSum`], when it is one.
pub fn row_sum(l: &Loop) -> Option<RowSum<'_>> {
    if l.kind != LoopKind::Serial {
        return None;
    }
    let body = unblocked(&l.body);
    let (Stmt::For(columns), rest) = body.split_last()? else {
        return None;
    };
    let hinted = rest
        .iter()
        .take_while(|s| super::prefetch::is_guarded_hint(s))
        .count();
    let (hints, decls) = rest.split_at(hinted);
    let column_body = unblocked(&columns.body);
    let Some((Stmt::Store(store), column_decls)) = column_body.split_last() else {
        return None;
    };
    // Columns in SIMD lanes (sliced ELL's full slices) may be summed in lanes as well.
    let lanes = matches!(
        &columns.kind,
        LoopKind::Parallel {
            unit: super::ParallelUnit::CpuVector,
            reductions,
            locals,
            ..
        } if reductions.is_empty() && locals.is_empty()
    );
    if columns.kind != LoopKind::Serial && !lanes {
        return None;
    }
    let only_decls = |stmts: &[&Stmt]| stmts.iter().all(|s| matches!(s, Stmt::Decl(..)));
    if !only_decls(decls) || !only_decls(column_decls) || !store.accumulate {
        return None;
    }
    if !matches!(store.array, ArrayRef::Values(super::OperandId(0))) {
        return None;
    }
    let mut varying = vec![l.var, columns.var];
    visit::walk_stmts(&l.body, &mut |s| {
        if let Stmt::Decl(v, _) = s {
            varying.push(*v)
        }
    });
    let column_defs: HashMap<Var, Expr> = column_decls
        .iter()
        .filter_map(|s| match s {
            Stmt::Decl(v, e) => Some((*v, e.clone())),
            _ => None,
        })
        .collect();
    let index = substitute(&store.index, &column_defs)?;
    let base = match &index {
        Expr::Bin(BinOp::Add, a, b) if **b == Expr::Var(columns.var) => a,
        Expr::Bin(BinOp::Add, a, b) if **a == Expr::Var(columns.var) => b,
        _ => return None,
    };
    if [&**base, &columns.start, &columns.end]
        .iter()
        .any(|e| depends_on(e, &varying))
    {
        return None;
    }
    (!reads_array(&l.body, store.array)).then(|| RowSum {
        hints: hints.to_vec(),
        decls: decls.to_vec(),
        columns,
        column_decls: column_decls.to_vec(),
        store,
        index: index.clone(),
    })
}

/// `stmts` with nested blocks opened, in order: every variable is declared once, under
/// its own name, so a block's scope only shortens its declarations' lives.
pub fn unblocked(stmts: &[Stmt]) -> Vec<&Stmt> {
    stmts
        .iter()
        .flat_map(|s| match s {
            Stmt::Block(inner) => unblocked(inner),
            other => vec![other],
        })
        .collect()
}

/// True when an expression in `stmts` loads from `array`.
pub fn reads_array(stmts: &[Stmt], array: ArrayRef) -> bool {
    let mut reads = false;
    visit::walk_stmt_exprs(stmts, &mut |e| {
        reads |= matches!(e, Expr::Load(a, _) if *a == array)
    });
    reads
}

/// True when `e` loads from an array.
fn reads_load(e: &Expr) -> bool {
    let mut found = false;
    visit::walk_expr(e, &mut |e| found |= matches!(e, Expr::Load(..)));
    found
}

/// `e` simplified, as an expression plus a constant: `(r - 1) + 1` is `(r, 0)`, `i + 2` is
/// `(i, 2)`, so that two spellings of one value compare equal.
pub fn plus_constant(e: &Expr) -> (Expr, i64) {
    fn split(e: Expr) -> (Expr, i64) {
        match e {
            Expr::Bin(op @ (BinOp::Add | BinOp::Sub), x, c) if matches!(*c, Expr::Int(_)) => {
                let Expr::Int(c) = *c else {
                    unreachable!("matched")
                };
                let (base, offset) = split(*x);
                let c = if op == BinOp::Add {
                    c
                } else {
                    c.wrapping_neg()
                };
                (base, offset.wrapping_add(c))
            }
            Expr::Int(c) => (Expr::Int(0), c),
            other => (other, 0),
        }
    }
    split(super::simplify(e))
}

/// The comparison `b op a` means for `a op b`.
pub fn mirrored(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Gt => BinOp::Lt,
        BinOp::Le => BinOp::Ge,
        BinOp::Ge => BinOp::Le,
        other => other,
    }
}

/// The conjuncts of `e` (`a && b && c`), pushed onto `out`.
pub fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Bin(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// True when `e` reads one of `vars`.
pub fn depends_on(e: &Expr, vars: &[Var]) -> bool {
    let mut found = false;
    visit::walk_expr(e, &mut |e| {
        found |= matches!(e, Expr::Var(v) if vars.contains(v))
    });
    found
}

/// The work done by the iterations of `l` before iteration `l.var`, as an expression of
/// `l.var` that does not decrease as it grows and can be evaluated for every value from
/// `l.start` to `l.end` included: the number of positions that the loops over compressed
/// levels nested in `l`'s body (`for p in pos[q]..pos[q + 1]`, through as many levels as
/// their positions chain) visit before it, plus `l.var` itself, so that empty iterations
/// count too. Positions count once per iteration of the dense loops nested unconditionally
/// inside the innermost of those loops (SpMM's columns). `None` when no loop over a
/// compressed level is nested unconditionally in the body. A position that loops over
/// another operand's segment (SpGEMM) or merges segments (a masked product's
/// intersections) counts for `GATHERED_SEGMENT_WORK`, and the work is then only
/// [`Work::estimated`].
pub fn work_before(l: &Loop) -> Option<Work> {
    let work = positions(l)?;
    let mut per_position = work.per_position;
    if work.gathers_segments {
        per_position = per_position * Expr::Int(GATHERED_SEGMENT_WORK);
    }
    Some(Work {
        before: super::simplify(&(work.before * per_position + Expr::Var(l.var))),
        estimated: work.gathers_segments,
    })
}

/// The work of a loop's iterations (see [`work_before`]).
pub struct Work {
    /// The work before iteration `l.var`.
    pub before: Expr,
    /// The work is only estimated: positions loop over segments of another operand
    /// (SpGEMM's rows of `B`), whose lengths the estimate does not read, so blocks of equal
    /// estimated work may hold very unequal work (most of A*A's products can fall in a
    /// few rows).
    pub estimated: bool,
}

/// The positions `l`'s iterations visit (see [`work_before`]).
struct Positions {
    /// The positions visited before iteration `l.var`.
    before: Expr,
    /// The dense iterations each position runs.
    per_position: Expr,
    /// Each position loops over a segment of another operand.
    gathers_segments: bool,
}

fn positions(l: &Loop) -> Option<Positions> {
    let (array, q, inner) = segment_loop(&l.body, l.var, &mut HashMap::new())?;
    // What is left of `q` but the loop's variable must be in scope before the loop.
    let mut inside = Vec::new();
    visit::walk_stmts(&l.body, &mut |s| match s {
        Stmt::Decl(v, _) | Stmt::For(Loop { var: v, .. }) => inside.push(*v),
        _ => {}
    });
    if depends_on(&q, &inside) {
        return None;
    }
    let mut before = Expr::load(array, q);
    // A loop over each position's own segment in the next level down: the work is that
    // level's positions.
    let mut outer = inner;
    while let Some((below, q, next)) = segment_loop(&outer.body, outer.var, &mut HashMap::new()) {
        if q != Expr::Var(outer.var) {
            break;
        }
        before = Expr::load(below, before);
        outer = next;
    }
    // Dense loops inside the innermost one (SpMM's columns) multiply every position's work.
    let mut per_position = Expr::Int(1);
    let mut body = &outer.body;
    while let Some(dense) = dense_loop(body) {
        per_position = per_position * dense.end.clone();
        body = &dense.body;
    }
    Some(Positions {
        before,
        per_position,
        gathers_segments: gathers_segments(body),
    })
}

/// The work a position counts for when it loops over a segment of another operand that it
/// selects by a coordinate (SpGEMM's `B(k,:)` for each `A(i,k)`): that segment's length
/// is not known before the loop runs, so a position counts for a typical row of a sparse
/// matrix. It decides how many threads a loop is worth, not how its work is split.
const GATHERED_SEGMENT_WORK: i64 = 16;

/// True when `body` holds a loop over a segment of a compressed level (`pos[q]..pos[q+1]`),
/// or merges segments: a cursor that starts at a segment's start, advanced by a `while`
/// loop (the intersections of a masked product or a triangle count, each as long as the
/// rows it meets).
fn gathers_segments(body: &[Stmt]) -> bool {
    let (mut segment_loop, mut cursor, mut merge) = (false, false, false);
    let segment_start = |e: &Expr| {
        matches!(
            e,
            Expr::Load(
                ArrayRef::Level {
                    kind: ArrayKind::Pos,
                    ..
                },
                _
            )
        )
    };
    visit::walk_stmts(body, &mut |s| match s {
        Stmt::For(l) if segment_start(&l.start) => segment_loop = true,
        Stmt::Decl(_, value) if segment_start(value) => cursor = true,
        Stmt::While(..) => merge = true,
        _ => {}
    });
    segment_loop || (cursor && merge)
}

/// The first loop in `body` (unconditionally, at any depth of plain blocks, or as both
/// ways of an `if`) that runs from
/// 0 to a bound fixed by the kernel's parameters.
fn dense_loop(body: &[Stmt]) -> Option<&Loop> {
    body.iter().find_map(|s| match s {
        Stmt::Block(inner) => dense_loop(inner),
        Stmt::For(l) if l.start == Expr::Int(0) && parameters_only(&l.end) => Some(l),
        _ => None,
    })
}

/// True when `e` is built from parameters and non-negative constants with `+` and `*`.
fn parameters_only(e: &Expr) -> bool {
    match e {
        Expr::Int(n) => *n >= 0,
        Expr::Param(_) => true,
        Expr::Bin(BinOp::Add | BinOp::Mul, a, b) => parameters_only(a) && parameters_only(b),
        _ => false,
    }
}

/// The first loop in `body` (unconditionally, at any depth of plain blocks, or as both
/// ways of an `if`) that runs
/// over `pos[q]..pos[q + 1]` with `q` a position of iteration `var` (`var` itself, or
/// `base + var` with `base` free of `var`): the array `pos`, `q` and the loop. `defs`
/// holds the variables declared before, by value.
fn segment_loop<'a>(
    body: &'a [Stmt],
    var: Var,
    defs: &mut HashMap<Var, Expr>,
) -> Option<(ArrayRef, Expr, &'a Loop)> {
    for s in body {
        match s {
            Stmt::Decl(v, e) => {
                defs.insert(*v, e.clone());
            }
            Stmt::Block(inner) => {
                if let Some(found) = segment_loop(inner, var, defs) {
                    return Some(found);
                }
            }
            Stmt::For(inner) => {
                if let Some((array, q)) = segment_of(inner, var, defs) {
                    return Some((array, q, inner));
                }
                forget_assigned(std::slice::from_ref(s), defs);
            }
            // Both ways run a loop over the same segment (copies of a loop unswitched
            // around a condition, `ir::unswitch`): either copy's positions are the work.
            Stmt::If(_, then, otherwise) => {
                let either = segment_loop(then, var, &mut defs.clone());
                let other = segment_loop(otherwise, var, &mut defs.clone());
                match (either, other) {
                    (Some(a), Some(b)) if (&a.0, &a.1) == (&b.0, &b.1) => return Some(a),
                    _ => forget_assigned(std::slice::from_ref(s), defs),
                }
            }
            other => forget_assigned(std::slice::from_ref(other), defs),
        }
    }
    None
}

/// `(pos, q)` when `inner` runs over `pos[q]..pos[q + 1]` with `q` ascending in `var`.
fn segment_of(inner: &Loop, var: Var, defs: &HashMap<Var, Expr>) -> Option<(ArrayRef, Expr)> {
    let (Expr::Load(array, start), Expr::Load(end_array, end)) = (&inner.start, &inner.end) else {
        return None;
    };
    if !matches!(
        array,
        ArrayRef::Level {
            kind: ArrayKind::Pos,
            ..
        }
    ) || array != end_array
        || !super::simplify::is_successor(start, end)
    {
        return None;
    }
    let q = substitute(start, defs)?;
    let ascending = match &q {
        Expr::Var(v) => *v == var,
        Expr::Bin(BinOp::Add, base, last) => **last == Expr::Var(var) && affine_free_of(base, var),
        _ => false,
    };
    ascending.then_some((*array, q))
}

/// `e` with the variables declared before replaced by their values.
fn substitute(e: &Expr, defs: &HashMap<Var, Expr>) -> Option<Expr> {
    let mut out = e.clone();
    // Each round replaces one level of declarations; a chain longer than this is not a
    // position computed from the loop's variable.
    for _ in 0..16 {
        let mut changed = false;
        visit::walk_expr_mut(&mut out, &mut |e| {
            if let Expr::Var(v) = e {
                if let Some(value) = defs.get(v) {
                    *e = value.clone();
                    changed = true;
                }
            }
        });
        if !changed {
            return Some(super::simplify(&out));
        }
    }
    None
}

/// True when `e` is built from integer constants, parameters and variables other than
/// `var` with `+` and `*` only, so that adding `var` to it keeps the order of `var`.
fn affine_free_of(e: &Expr, var: Var) -> bool {
    match e {
        Expr::Int(n) => *n >= 0,
        Expr::Param(_) => true,
        Expr::Var(v) => *v != var,
        Expr::Bin(BinOp::Add | BinOp::Mul, a, b) => {
            affine_free_of(a, var) && affine_free_of(b, var)
        }
        _ => false,
    }
}

/// Drop the variables that `stmts` assign from `defs`: their declared values no longer hold.
fn forget_assigned(stmts: &[Stmt], defs: &mut HashMap<Var, Expr>) {
    visit::walk_stmts(stmts, &mut |s| {
        if let Stmt::Assign(v, _) = s {
            defs.remove(v);
        }
    });
}
