//! Loops over one segment of an ordered level that run their body only where the
//! coordinate compares with a value they do not change, bounded instead: the coordinates
//! of a segment increase, so those below a value are a prefix of it and those above a
//! suffix, found by a binary search before the loop.
//!
//! The sparse polyhedral front end scans `rowptr(i) <= k < rowptr(i+1) && j = col(k) &&
//! j < i` as a loop over the row's entries with `if (col[k] < i)` inside (a lower solve
//! that ignores the upper triangle), and `j = i` as a second pass over the row that finds
//! the diagonal. Bounded, the first is a counted loop over the entries left of the
//! diagonal, with no test, and the second visits the diagonal only.
//!
//! A loop is bounded where it is serial, runs from `pos[t]` to `pos[t + 1]` of a level
//! the caller says is ordered (directly or through variables declared from those loads
//! and never assigned), and its body is declarations followed by one `if` without `else`
//! whose condition has conjuncts `crd[k] < x`, `<=`, `>`, `>=` or `==` (either way round;
//! the coordinate directly or through a declared variable), `x` reading only variables
//! declared outside the loop and never assigned, and no array. Those conjuncts become
//! the loop's bounds; an `==` one stays in the condition too, as a level need not be
//! unique (of a unique one, the loop visits the first coordinate not below the value).
//!
//! Searches share what they found: an equal search in scope is reused, one for a larger
//! value of the same segment starts at the smaller one's result, and one made in each
//! iteration of a loop that walks a segment of the same level in order, for the coordinate
//! that loop reads, starts at a cursor the last iteration's search left (a merge of two
//! rows, as ILU(0)'s update does).

use super::analysis::{conjuncts, mirrored, plus_constant};
use super::guards::bodies_mut;
use super::visit;
use super::{is_successor, simplify};
use super::{ArrayKind, ArrayRef, BinOp, Expr, Function, Loop, LoopKind, Stmt, Type, Var};

/// Bound every loop of `function` over a segment of an ordered level (`ordered` says
/// which coordinate arrays are) that filters its coordinates (see the module's
/// documentation).
pub fn bound_ordered_segments(function: &mut Function, ordered: &dyn Fn(ArrayRef) -> Order) {
    let mut assigned = Vec::new();
    visit::walk_stmts(&function.body, &mut |s| {
        if let Stmt::Assign(v, _) = s {
            assigned.push(*v);
        }
    });
    let mut body = std::mem::take(&mut function.body);
    let mut pass = Pass {
        function,
        ordered,
        assigned,
        declared: Vec::new(),
        searched: Vec::new(),
        loops: Vec::new(),
    };
    pass.stmts(&mut body);
    function.body = body;
}

struct Pass<'p> {
    function: &'p mut Function,
    ordered: &'p dyn Fn(ArrayRef) -> Order,
    /// Variables assigned anywhere in the function: their declarations say nothing of
    /// their later values.
    assigned: Vec<Var>,
    /// The declarations in scope, innermost last.
    declared: Vec<(Var, Expr)>,
    /// The searches whose results are in scope.
    searched: Vec<Search>,
    /// The loops around the statement being looked at, innermost last.
    loops: Vec<Enclosing>,
}

/// A loop around the statement being looked at: whether it walks one segment of an
/// ordered level in order (so the coordinates it reads never decrease), what its body
/// declares and stores (what may change from one iteration to the next), and the cursors
/// of the searches inside it, declared before it.
struct Enclosing {
    var: Var,
    segment: Option<(ArrayRef, Order)>,
    declared_inside: Vec<Var>,
    stored: Vec<ArrayRef>,
    cursors: Vec<Var>,
}

/// A search made: of `coords`, between two ends for a value (`key`: each as declared, as
/// an expression plus a constant), its result in `result`.
struct Search {
    key: [(Expr, i64); 3],
    coords: ArrayRef,
    result: Var,
}

/// How a level orders the coordinates of each segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// In no particular order.
    Unordered,
    /// Increasing, each coordinate perhaps more than once.
    Increasing,
    /// Strictly increasing: each coordinate once.
    StrictlyIncreasing,
}

/// Where a search expects its answer, which says how it gallops.
#[derive(Clone, Copy)]
enum Expect {
    /// Anywhere in the segment: it gallops from both ends.
    Anywhere,
    /// Near its start, which a cursor (then set to the result) or an earlier search of
    /// the segment for a smaller value gave.
    NearStart(Option<Var>),
}

/// Which end of a segment a conjunct bounds, and the value it compares with.
enum Bound {
    /// The coordinates below the value (exclusive).
    Below(Expr),
    /// The coordinates from the value (inclusive).
    From(Expr),
    /// The first of those only (the value is in a segment at most once).
    Once,
}

impl Pass<'_> {
    fn stmts(&mut self, stmts: &mut Vec<Stmt>) {
        let (declared, searched) = (self.declared.len(), self.searched.len());
        let mut at = 0;
        while at < stmts.len() {
            let mut segment = None;
            if let Stmt::For(l) = &stmts[at] {
                // The segment it walks, known before bounding moves its start.
                segment = self.segment_of(l);
                if let Some((searches, bounded)) = self.bounded(l) {
                    stmts[at] = bounded;
                    let found = searches.len();
                    stmts.splice(at..at, searches);
                    at += found;
                }
            }
            if let Stmt::For(l) = &stmts[at] {
                self.loops.push(enclosing(l, segment));
            }
            for body in bodies_mut(&mut stmts[at]) {
                self.stmts(body);
            }
            if let Stmt::For(_) = &stmts[at] {
                let cursors = self.loops.pop().expect("entered").cursors;
                let count = cursors.len();
                stmts.splice(
                    at..at,
                    cursors.into_iter().map(|c| Stmt::Decl(c, Expr::Int(0))),
                );
                at += count;
            }
            if let Stmt::Decl(v, e) = &stmts[at] {
                if !self.assigned.contains(v) {
                    self.declared.push((*v, e.clone()));
                }
            }
            at += 1;
        }
        self.declared.truncate(declared);
        self.searched.truncate(searched);
    }

    /// `e`, or what the variable `e` was declared as.
    fn resolve<'e>(&'e self, e: &'e Expr) -> &'e Expr {
        match e {
            Expr::Var(v) => self
                .declared
                .iter()
                .rev()
                .find(|(d, _)| d == v)
                .map_or(e, |(_, value)| value),
            other => other,
        }
    }

    /// The coordinate array whose segment `l` runs over, when it runs over exactly one
    /// segment of an ordered level, and how the level orders it.
    fn segment_of(&self, l: &Loop) -> Option<(ArrayRef, Order)> {
        let (Expr::Load(start_array, start), Expr::Load(end_array, end)) =
            (self.resolve(&l.start), self.resolve(&l.end))
        else {
            return None;
        };
        let ArrayRef::Level {
            operand,
            level,
            kind: ArrayKind::Pos,
        } = *start_array
        else {
            return None;
        };
        let coords = ArrayRef::Level {
            operand,
            level,
            kind: ArrayKind::Idx,
        };
        let order = (self.ordered)(coords);
        (start_array == end_array && is_successor(start, end) && order != Order::Unordered)
            .then_some((coords, order))
    }

    /// `l` bounded by the conjuncts of its filter on the coordinate, and the searches
    /// that find its bounds, or `None` where it does not apply.
    fn bounded(&mut self, l: &Loop) -> Option<(Vec<Stmt>, Stmt)> {
        if l.kind != LoopKind::Serial {
            return None;
        }
        let (coords, order) = self.segment_of(l)?;
        let (Stmt::If(condition, then, otherwise), declarations) = l.body.split_last()? else {
            return None;
        };
        if !otherwise.is_empty() || !declarations.iter().all(|s| matches!(s, Stmt::Decl(..))) {
            return None;
        }
        let coordinate = |e: &Expr| match e {
            Expr::Load(a, i) => *a == coords && **i == Expr::Var(l.var),
            Expr::Var(v) => declarations.iter().any(|d| {
                matches!(d, Stmt::Decl(dv, Expr::Load(a, i))
                    if dv == v && *a == coords && **i == Expr::Var(l.var))
            }),
            _ => false,
        };
        let mut declared_inside = Vec::new();
        visit::walk_stmts(&l.body, &mut |s| {
            if let Stmt::Decl(v, _) = s {
                declared_inside.push(*v);
            }
        });
        declared_inside.push(l.var);
        let invariant = |e: &Expr| {
            let mut ok = true;
            visit::walk_expr(e, &mut |e| match e {
                Expr::Var(v) => {
                    ok &= !declared_inside.contains(v) && !self.assigned.contains(v);
                }
                Expr::Load(..) | Expr::Call(..) => ok = false,
                _ => {}
            });
            ok
        };
        let mut parts = Vec::new();
        conjuncts(condition, &mut parts);
        let parts: Vec<Expr> = parts.into_iter().cloned().collect();
        let mut bounds = Vec::new();
        let mut kept = Vec::new();
        for part in parts {
            let Expr::Bin(op, a, b) = &part else {
                kept.push(part);
                continue;
            };
            let (op, value) = match (coordinate(a), coordinate(b)) {
                (true, false) if invariant(b) => (*op, (**b).clone()),
                (false, true) if invariant(a) => (mirrored(*op), (**a).clone()),
                _ => {
                    kept.push(part);
                    continue;
                }
            };
            let successor = || simplify(&Expr::bin(BinOp::Add, value.clone(), Expr::Int(1)));
            match op {
                BinOp::Lt => bounds.push(Bound::Below(value)),
                BinOp::Le => bounds.push(Bound::Below(successor())),
                BinOp::Gt => bounds.push(Bound::From(successor())),
                BinOp::Ge => bounds.push(Bound::From(value)),
                BinOp::Eq => {
                    bounds.push(Bound::From(value.clone()));
                    bounds.push(match order {
                        Order::StrictlyIncreasing => Bound::Once,
                        _ => Bound::Below(successor()),
                    });
                    kept.push(part);
                }
                _ => kept.push(part),
            }
        }
        if bounds.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        let (mut start, mut end) = (l.start.clone(), l.end.clone());
        // Searches from the bounds found so far: the segment's coordinates from `start`
        // on are those at least the lower bound.
        for bound in &bounds {
            if let Bound::From(value) = bound {
                start = self.search(coords, start, end.clone(), value, &mut out);
            }
        }
        for bound in &bounds {
            match bound {
                Bound::Below(value) => {
                    end = self.search(coords, start.clone(), end, value, &mut out);
                }
                Bound::Once => {
                    end = Expr::min(start.clone() + Expr::Int(1), end);
                }
                Bound::From(_) => {}
            }
        }
        let mut body = declarations.to_vec();
        match kept.into_iter().reduce(|a, b| Expr::bin(BinOp::And, a, b)) {
            Some(condition) => body.push(Stmt::If(condition, then.clone(), Vec::new())),
            None => body.extend(then.iter().cloned()),
        }
        let bounded = Stmt::For(Loop {
            var: l.var,
            start,
            end,
            body,
            kind: LoopKind::Serial,
        });
        Some((out, bounded))
    }

    /// Statements (pushed onto `out`) that find the first position in `start..end` whose
    /// coordinate is at least `value` (`end` when none is); returns it.
    ///
    /// The search gallops from both ends at once (probes 1, 2, 4, ... positions in from
    /// each), then searches the last gap by halves: it costs about `log d` probes, `d` the
    /// distance from the answer to the nearer end. A triangular solve's rows split next
    /// to an end (the diagonal), where a plain binary search of a short row, all of
    /// whose steps the processor mispredicts, costs more than the row's arithmetic.
    fn search(
        &mut self,
        coords: ArrayRef,
        start: Expr,
        end: Expr,
        value: &Expr,
        out: &mut Vec<Stmt>,
    ) -> Expr {
        // The variables a search assigns hold its result once it is done, and the
        // variables of the key are never assigned: an equal search in scope has the same
        // result.
        let key = [self.resolve(&start), self.resolve(&end), value].map(plus_constant);
        let earlier = self
            .searched
            .iter()
            .find(|s| s.key == key && s.coords == coords);
        if let Some(search) = earlier {
            return Expr::Var(search.result);
        }
        // A search in scope of the same segment for a smaller value (the diagonal's `j <
        // i + 1` after the lower part's `j < i`) ended where this one may start: the
        // coordinates before its result are below its value, so below this one.
        let narrower = self.searched.iter().rev().find(|s| {
            s.coords == coords
                && s.key[..2] == key[..2]
                && s.key[2].0 == key[2].0
                && s.key[2].1 <= key[2].1
        });
        if let Some(earlier) = narrower {
            let from = Expr::Var(earlier.result);
            let result = self.gallop_search(coords, from, end, value, Expect::NearStart(None), out);
            return self.found(key, coords, result);
        }
        let cursor = self.follows_the_loop(coords, &start, &end, value).then(|| {
            let cursor = self.function.fresh_var("cursor", Type::Index);
            self.loops.last_mut().expect("a loop").cursors.push(cursor);
            cursor
        });
        let start = match cursor {
            Some(cursor) => Expr::max(start, Expr::Var(cursor)),
            None => start,
        };
        let expect = match cursor {
            Some(cursor) => Expect::NearStart(Some(cursor)),
            None => Expect::Anywhere,
        };
        let result = self.gallop_search(coords, start, end, value, expect, out);
        self.found(key, coords, result)
    }

    /// Record a search made, for later ones to reuse or start from; its result.
    fn found(&mut self, key: [(Expr, i64); 3], coords: ArrayRef, result: Var) -> Expr {
        self.searched.push(Search {
            key,
            coords,
            result,
        });
        Expr::Var(result)
    }

    /// The statements of [`Pass::search`] from `start`, galloping as `expect` says; the
    /// variable that holds the result.
    fn gallop_search(
        &mut self,
        coords: ArrayRef,
        start: Expr,
        end: Expr,
        value: &Expr,
        expect: Expect,
        out: &mut Vec<Stmt>,
    ) -> Var {
        let f = &mut *self.function;
        let [low, high, step, galloping, probe, middle] =
            ["first", "last", "step", "galloping", "probe", "middle"]
                .map(|hint| f.fresh_var(hint, Type::Index));
        let var = Expr::Var;
        let int = Expr::Int;
        let add = |a, b| Expr::bin(BinOp::Add, a, b);
        let sub = |a, b| Expr::bin(BinOp::Sub, a, b);
        let below = |p: Var| Expr::lt(Expr::load(coords, var(p)), value.clone());
        let assign = |v: Var, e: Expr| Stmt::Assign(v, e);
        out.extend([
            Stmt::Decl(low, start),
            Stmt::Decl(high, end),
            Stmt::Decl(step, int(1)),
            Stmt::Decl(galloping, int(1)),
        ]);
        // Invariant: the coordinates before `first` are below the value, those from
        // `last` on are not. A probe that lands past the answer ends the galloping: the
        // answer is then within `step` of the probe.
        let from_end = vec![
            Stmt::Decl(probe, Expr::max(sub(var(high), var(step)), var(low))),
            Stmt::If(
                below(probe),
                vec![
                    assign(low, add(var(probe), int(1))),
                    assign(galloping, int(0)),
                ],
                vec![assign(high, var(probe))],
            ),
        ];
        let probe_from_start = Expr::min(
            sub(add(var(low), var(step)), int(1)),
            sub(var(high), int(1)),
        );
        let step_from_start = Stmt::If(
            below(probe),
            vec![assign(low, add(var(probe), int(1)))],
            vec![assign(high, var(probe)), assign(galloping, int(0))],
        );
        let still_galloping = Expr::and(
            Expr::bin(BinOp::Ne, var(galloping), int(0)),
            Expr::lt(var(low), var(high)),
        );
        // Searched from a cursor or an earlier search's end, the answer is most often a
        // position or two on: the gallop goes from the start only (probing the far end
        // first cost ILU(0) a mispredicted branch and a cache line per search).
        let mut gallop = match expect {
            Expect::NearStart(_) => vec![Stmt::Decl(probe, probe_from_start), step_from_start],
            Expect::Anywhere => {
                let mut both = from_end;
                both.push(Stmt::If(
                    still_galloping.clone(),
                    vec![assign(probe, probe_from_start), step_from_start],
                    Vec::new(),
                ));
                both
            }
        };
        gallop.push(assign(step, Expr::bin(BinOp::Mul, var(step), int(2))));
        out.push(Stmt::While(still_galloping, gallop));
        let half = Expr::bin(BinOp::Div, sub(var(high), var(low)), int(2));
        out.push(Stmt::While(
            Expr::lt(var(low), var(high)),
            vec![
                Stmt::Decl(middle, add(var(low), half)),
                Stmt::If(
                    below(middle),
                    vec![assign(low, add(var(middle), int(1)))],
                    vec![assign(high, var(middle))],
                ),
            ],
        ));
        if let Expect::NearStart(Some(cursor)) = expect {
            out.push(assign(cursor, var(low)));
        }
        low
    }

    /// True where a search of `coords` between `start` and `end` for `value`, made in
    /// each iteration of the innermost loop around it, may start where the last one
    /// ended (ILU(0)'s search of row k for each column j of row i after k): the loop
    /// walks an ordered segment of `coords` in order and `value` is the coordinate it
    /// reads (plus a constant), so the values never decrease; and the ends are the same
    /// in every iteration. The positions before the last result then hold coordinates
    /// below the last value, so below this one. The cursor starts at 0, below every
    /// position, each time the loop starts.
    fn follows_the_loop(&self, coords: ArrayRef, start: &Expr, end: &Expr, value: &Expr) -> bool {
        let Some(around) = self.loops.last() else {
            return false;
        };
        let Some((walked, order)) = around.segment else {
            return false;
        };
        if walked != coords || order == Order::Unordered {
            return false;
        }
        let (base, _) = plus_constant(self.resolve(value));
        let read = |e: &Expr| matches!(e, Expr::Load(a, i) if *a == coords && **i == Expr::Var(around.var));
        let reads_coordinate = read(&base) || read(self.resolve(&base));
        reads_coordinate
            && self.same_in_every_iteration(start, around)
            && self.same_in_every_iteration(end, around)
    }

    /// True where `e` has one value in every iteration of `around`: the variables it reads
    /// (through their declarations) are declared outside it and never assigned, and the
    /// arrays it loads are not stored in it.
    fn same_in_every_iteration(&self, e: &Expr, around: &Enclosing) -> bool {
        let mut same = true;
        visit::walk_expr(e, &mut |e| match e {
            Expr::Var(v) if *v == around.var || self.assigned.contains(v) => same = false,
            Expr::Var(v) if around.declared_inside.contains(v) => {
                let resolved = self.resolve(e);
                same &= resolved != e && self.same_in_every_iteration(resolved, around);
            }
            Expr::Load(a, _) => same &= !around.stored.contains(a),
            Expr::Call(..) => same = false,
            _ => {}
        });
        same
    }
}

/// What [`Pass::follows_the_loop`] needs to know of a loop around a search.
fn enclosing(l: &Loop, segment: Option<(ArrayRef, Order)>) -> Enclosing {
    let (mut declared_inside, mut stored) = (Vec::new(), Vec::new());
    visit::walk_stmts(&l.body, &mut |s| match s {
        Stmt::Decl(v, _) => declared_inside.push(*v),
        Stmt::Store(store) => stored.push(store.array),
        _ => {}
    });
    Enclosing {
        var: l.var,
        segment: (l.kind == LoopKind::Serial).then_some(segment).flatten(),
        declared_inside,
        stored,
        cursors: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::function_of_y_and_a;
    use crate::ir::{OperandId, Store};

    fn level_array(kind: ArrayKind) -> ArrayRef {
        ArrayRef::Level {
            operand: OperandId(1),
            level: 2,
            kind,
        }
    }

    /// `for k in pos[i]..pos[i + ends]: if (crd[k] < i) y[k] = 1`, in a loop over `i`.
    fn filtered_loop(ends: i64) -> Function {
        let mut f = function_of_y_and_a(1);
        let [i, k] = ["i", "k"].map(|hint| f.fresh_var(hint, Type::Index));
        let bound = |at: Expr| Expr::load(level_array(ArrayKind::Pos), at);
        let filter = Expr::lt(
            Expr::load(level_array(ArrayKind::Idx), Expr::Var(k)),
            Expr::Var(i),
        );
        let segment = Stmt::For(Loop {
            var: k,
            start: bound(Expr::Var(i)),
            end: bound(Expr::Var(i) + Expr::Int(ends)),
            body: vec![Stmt::If(
                filter,
                vec![Stmt::Store(Store {
                    array: ArrayRef::Values(OperandId(0)),
                    index: Expr::Var(k),
                    value: Expr::Float(1.0),
                    accumulate: false,
                })],
                Vec::new(),
            )],
            kind: LoopKind::Serial,
        });
        f.body = vec![Stmt::For(Loop {
            var: i,
            start: Expr::Int(0),
            end: Expr::Int(4),
            body: vec![segment],
            kind: LoopKind::Serial,
        })];
        f
    }

    fn searches(f: &Function) -> usize {
        let mut n = 0;
        visit::walk_stmts(&f.body, &mut |s| {
            n += usize::from(matches!(s, Stmt::While(..)))
        });
        n
    }

    #[test]
    fn only_a_loop_over_one_segment_of_an_ordered_level_is_bounded() {
        for (order, ends, bounded) in [
            (Order::StrictlyIncreasing, 1, true),
            (Order::Increasing, 1, true),
            (Order::Unordered, 1, false),
            // Two segments: their coordinates need not increase across the seam.
            (Order::StrictlyIncreasing, 2, false),
        ] {
            let mut f = filtered_loop(ends);
            bound_ordered_segments(&mut f, &|_| order);
            // A bounded loop has its search (a gallop, then halves) and no test left.
            assert_eq!(
                searches(&f) == 2,
                bounded,
                "{order:?}, {ends}: {:?}",
                f.body
            );
            let mut tests = 0;
            visit::walk_stmts(&f.body, &mut |s| {
                tests += usize::from(matches!(s, Stmt::If(..)))
            });
            // The searches' own tests: two in the gallop (one nested), one in the halves.
            let expected = if bounded { 4 } else { 1 };
            assert_eq!(tests, expected, "{order:?}, {ends}: {:?}", f.body);
        }
    }

    /// `for e in pos[0]..pos[1]: c = crd[e]; for m in pos[inner]..pos[inner + 1]: if
    /// (crd[m] == c) y[m] = 1`: a search of row `inner` for each coordinate of row 0.
    fn merge_loops(inner: impl Fn(Var) -> Expr) -> Function {
        let mut f = function_of_y_and_a(1);
        let [e, m, c] = ["e", "m", "c"].map(|hint| f.fresh_var(hint, Type::Index));
        let bound = |at: Expr| Expr::load(level_array(ArrayKind::Pos), at);
        let crd = |at: Var| Expr::load(level_array(ArrayKind::Idx), Expr::Var(at));
        let row = inner(e);
        let search = Stmt::For(Loop {
            var: m,
            start: bound(row.clone()),
            end: bound(row + Expr::Int(1)),
            body: vec![Stmt::If(
                Expr::eq(crd(m), Expr::Var(c)),
                vec![Stmt::Store(Store {
                    array: ArrayRef::Values(OperandId(0)),
                    index: Expr::Var(m),
                    value: Expr::Float(1.0),
                    accumulate: false,
                })],
                Vec::new(),
            )],
            kind: LoopKind::Serial,
        });
        f.body = vec![Stmt::For(Loop {
            var: e,
            start: bound(Expr::Int(0)),
            end: bound(Expr::Int(1)),
            body: vec![Stmt::Decl(c, crd(e)), search],
            kind: LoopKind::Serial,
        })];
        f
    }

    #[test]
    fn a_search_for_the_coordinates_an_ordered_loop_reads_starts_where_the_last_ended() {
        let cursors = |f: &Function| {
            let mut found = 0;
            visit::walk_stmts(&f.body, &mut |s| {
                found += usize::from(matches!(s, Stmt::Assign(v, _)
                    if f.var(*v).hint.starts_with("cursor")));
            });
            found
        };
        // Row 1, the same in every iteration: one cursor, declared before the loop.
        let mut f = merge_loops(|_| Expr::Int(1));
        bound_ordered_segments(&mut f, &|_| Order::StrictlyIncreasing);
        assert_eq!(cursors(&f), 1, "{:?}", f.body);
        assert!(
            matches!(&f.body[0], Stmt::Decl(v, Expr::Int(0)) if f.var(*v).hint.starts_with("cursor"))
        );
        // A row that changes with the loop's position: each search starts afresh.
        let mut f = merge_loops(Expr::Var);
        bound_ordered_segments(&mut f, &|_| Order::StrictlyIncreasing);
        assert_eq!((searches(&f), cursors(&f)), (2, 0), "{:?}", f.body);
        // Coordinates bounded but not walked in order: the outer loop's values may
        // decrease.
        let mut f = merge_loops(|_| Expr::Int(1));
        f.body = vec![Stmt::For(Loop {
            kind: LoopKind::Unrolled(2),
            ..match &f.body[0] {
                Stmt::For(l) => l.clone(),
                _ => unreachable!(),
            }
        })];
        bound_ordered_segments(&mut f, &|_| Order::StrictlyIncreasing);
        assert_eq!((searches(&f), cursors(&f)), (2, 0), "{:?}", f.body);
    }
}
