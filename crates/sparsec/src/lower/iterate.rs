//! Iteration strategies: per variable, from the operands' capabilities and properties,
//! a loop over one iterated level, a two-finger merge per lattice point, or a loop over
//! the whole dimension with cursors; then the chain of lattice cases.

use std::collections::BTreeSet;

use super::lattice::Point;
use super::{LExpr, LowerError, Lowerer, Scope, Step};
use crate::format::{Capabilities, Properties};
use crate::ir::{Expr, Loop, LoopKind, Stmt, Type};
use crate::notation::cin::VarId;
use crate::schedule::{lexpr, MergeStrategy};

/// How one variable's loop treats each iterator.
#[derive(Debug, PartialEq, Eq)]
enum Strategy {
    /// Loop over the iterated levels' coordinates (one level: a for loop; several: a
    /// two-finger merge per lattice point); locate into the others.
    Coiterate {
        iterated: Vec<usize>,
        located: Vec<usize>,
    },
    /// Loop over the whole dimension; cursors advance through ordered sparse levels and
    /// the rest are located.
    Dense {
        cursors: Vec<usize>,
        located: Vec<usize>,
    },
}

/// Choose how a variable's loop treats the iterators of its lattice `points`, from each
/// iterator's current level: `level(o)` gives its capabilities and properties.
///
/// One point (an intersection) iterates the levels that cannot locate and locates into the
/// others; when all can locate, it loops over the dimension if the point includes the
/// universe or a full level, else over the first level. Several points (a union) merge
/// ordered levels two fingers at a time, unless a full, unordered or possibly incomplete
/// value-iterated level (a bytemap) joins the union: then the loop visits every coordinate,
/// with cursors through the ordered sparse levels and locates into the rest.
fn choose(points: &[Point], level: &dyn Fn(usize) -> (Capabilities, Properties)) -> Strategy {
    let caps = |o: usize| level(o).0;
    let props = |o: usize| level(o).1;
    let all: BTreeSet<usize> = points
        .iter()
        .flat_map(|p| p.iterators.iter().copied())
        .collect();
    if let [p] = points {
        let (locatable, iterated): (Vec<usize>, Vec<usize>) =
            p.iterators.iter().partition(|&&o| caps(o).locate);
        return if !iterated.is_empty() {
            Strategy::Coiterate {
                iterated,
                located: locatable,
            }
        } else if p.universe || locatable.iter().any(|&o| props(o).full) {
            Strategy::Dense {
                cursors: vec![],
                located: locatable,
            }
        } else {
            Strategy::Coiterate {
                iterated: vec![locatable[0]],
                located: locatable[1..].to_vec(),
            }
        };
    }
    // A level iterated by value holds every coordinate (dense) or may lack some (a
    // bytemap, which says so per coordinate): either way the loop visits every coordinate.
    let visits_every_coordinate = |o: usize| {
        let (caps, props) = level(o);
        props.full || !props.ordered || caps.coord_value_iter
    };
    if points.iter().any(|p| p.universe) || all.iter().any(|&o| visits_every_coordinate(o)) {
        let (located, cursors) = all.iter().partition(|&&o| props(o).full || caps(o).locate);
        Strategy::Dense { cursors, located }
    } else {
        Strategy::Coiterate {
            iterated: all.into_iter().collect(),
            located: vec![],
        }
    }
}

/// The points a loop can reach: a point below another that adds only full levels (which
/// hold every coordinate, so they are never absent where the loop is) is dropped. A
/// complemented mask over a dense tensor (`1 - (M(j) != 0)`, everywhere) then leaves the
/// other factor's entries to iterate, with the mask located, instead of the dimension.
fn reachable_points(points: &[Point], full: &dyn Fn(usize) -> bool) -> Vec<Point> {
    points
        .iter()
        .filter(|p| {
            !points.iter().any(|q| {
                q != *p
                    && q.universe == p.universe
                    && p.iterators.is_subset(&q.iterators)
                    && q.iterators.difference(&p.iterators).all(|&o| full(o))
            })
        })
        .cloned()
        .collect()
}

impl Lowerer<'_> {
    /// [`choose`] for the iterators' levels in `scope`, checked: merged levels are ordered
    /// and located ones can be located.
    fn strategy(&self, points: &[Point], scope: &Scope) -> Result<Strategy, LowerError> {
        let props = |o: usize| self.level(o, scope).properties();
        let strategy = choose(points, &|o| {
            let level = self.level(o, scope);
            (level.capabilities(), level.properties())
        });
        let (merged, located) = match &strategy {
            Strategy::Coiterate { iterated, located } if iterated.len() > 1 => {
                (iterated.clone(), located)
            }
            Strategy::Coiterate { located, .. } => (vec![], located),
            Strategy::Dense { cursors, located } => (cursors.clone(), located),
        };
        for &o in &merged {
            if !props(o).ordered {
                return Err(LowerError(format!(
                    "level {} of `{}` is unordered and cannot be merged with other operands \
                     without locate; store it ordered",
                    scope.resolved(o) + 1,
                    self.operands[self.occurrences[o].operand].name
                )));
            }
        }
        for &o in located {
            self.check_locatable(o, scope)?;
        }
        Ok(strategy)
    }

    pub(super) fn merge(&mut self, step: Step, points: &[Point]) -> Result<Vec<Stmt>, LowerError> {
        let scope = step.scope;
        let points = &reachable_points(points, &|o: usize| self.level(o, scope).properties().full);
        match self.strategy(points, scope)? {
            Strategy::Coiterate { iterated, located } if iterated.len() == 1 => {
                self.single_loop(step, iterated[0], &located)
            }
            Strategy::Coiterate { iterated, located } => {
                let gallop = self.plan.vars[step.var].tags.merge == MergeStrategy::Gallop;
                if gallop && self.can_gallop(points, &iterated, scope) {
                    self.galloped.insert(step.var);
                    self.gallop(step, &points[0], &iterated, &located)
                } else {
                    self.two_finger(step, points, &iterated, &located)
                }
            }
            Strategy::Dense { cursors, located } => {
                self.dense_loop(step, points, &cursors, &located)
            }
        }
    }

    /// Declarations of `p`, `found` for located iterators, and the scope with them.
    pub(super) fn locate_all(
        &self,
        located: &[usize],
        v: VarId,
        scope: &Scope,
    ) -> (Vec<Stmt>, Vec<(usize, Expr)>, Scope) {
        let mut stmts = Vec::new();
        let mut found = Vec::new();
        let mut inner = scope.clone();
        for &o in located {
            let site = self.occ_site(o, scope);
            let name = format!("p{}", self.stem(o, scope));
            let located = self.level(o, scope).locate(
                &site,
                &self.parent_pos(o, scope),
                &self.var(v),
                &self.iv(&name),
            );
            let (pos, f) = match located {
                Some(pair) => pair,
                None => {
                    let (search, pair) = self.search(o, v, scope, &name);
                    stmts.extend(search);
                    pair
                }
            };
            stmts.push(Stmt::Decl(self.named(name.clone(), Type::Index), pos));
            if f != Expr::Bool(true) {
                let flag = format!("{}\u{1}_found", self.stem(o, scope));
                stmts.push(Stmt::Decl(self.named(flag.clone(), Type::Bool), f));
                found.push((o, self.iv(flag)));
            } else {
                found.push((o, Expr::Bool(true)));
            }
            inner = inner.with(o, self.iv(name), None);
        }
        (stmts, found, inner)
    }

    /// Find coordinate `v` in the segment of an ordered, unique level without `locate`,
    /// by binary search: the statements, then the position and whether it was found.
    pub(super) fn search(
        &self,
        o: usize,
        v: VarId,
        scope: &Scope,
        name: &str,
    ) -> (Vec<Stmt>, (Expr, Expr)) {
        self.search_for(o, self.var(v), scope, name)
    }

    /// The first position of occurrence `o`'s current segment whose coordinate is not
    /// below `target` (the level is ordered), and whether its coordinate is `target`.
    pub(super) fn search_for(
        &self,
        o: usize,
        target: Expr,
        scope: &Scope,
        name: &str,
    ) -> (Vec<Stmt>, (Expr, Expr)) {
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let (begin, end) = self.pos_range(o, scope);
        let crd = |q: Expr| level.pos_access(&site, &q).expect("searchable level").0;
        let (stmts, pos, found) = self.lower_bound(name, begin, end, &crd, target);
        (stmts, (pos, found))
    }

    /// True when a level can be located into: by `locate`, or by binary search in an
    /// ordered segment of unique coordinates.
    pub(super) fn reachable(&self, o: usize, scope: &Scope) -> bool {
        let level = self.level(o, scope);
        let props = level.properties();
        level.capabilities().locate
            || (props.ordered && props.unique && level.capabilities().coord_pos_iter)
    }

    pub(super) fn single_loop(
        &mut self,
        step: Step,
        o: usize,
        located: &[usize],
    ) -> Result<Vec<Stmt>, LowerError> {
        let (v, rest, expr, dest, scope) = step.parts();
        let level = self.level(o, scope).clone();
        let site = self.occ_site(o, scope);
        let stem = self.stem(o, scope);
        let pname = format!("p\u{1}{stem}");
        let vname = self.name(v);
        if let Some((begin, end)) = level.coord_iter(&site) {
            let (pos, found) = level
                .coord_access(&site, &self.parent_pos(o, scope), &self.var(v))
                .expect("coordinate access");
            let inner = scope.with(o, self.iv(pname.clone()), None);
            let (mut body, flags, inner) = self.locate_all(located, v, &inner);
            body.insert(0, Stmt::Decl(self.named(pname, Type::Index), pos));
            let cond = conjunction(flags.into_iter().map(|f| f.1).chain([found]));
            let inner_body = self.lower(rest, expr, dest, &inner)?;
            body.push(Stmt::If(cond, inner_body, vec![]));
            return Ok(vec![Stmt::For(Loop {
                var: vname,
                start: begin,
                end,
                body,
                kind: LoopKind::Serial,
            })]);
        }
        let (begin, end) = self.pos_range(o, scope);
        let (coord, found) = level
            .pos_access(&site, &self.iv(pname.clone()))
            .expect("position access");
        let unique = level.properties().unique;
        let seg = (!unique).then(|| format!("{stem}\u{1}_segend"));
        let inner = scope.with(o, self.iv(pname.clone()), seg.clone().map(|k| self.iv(k)));
        let (locates, flags, inner) = self.locate_all(located, v, &inner);
        let mut body = vec![Stmt::Decl(self.named(vname, Type::Index), coord.clone())];
        if let Some(seg) = &seg {
            body.extend(self.segment_scan(
                seg,
                &pname,
                &format!("{stem}\u{1}_end"),
                &level,
                &site,
                &self.var(v),
            ));
        }
        // The other operands are located only at a coordinate that exists: the position
        // of an empty hash bucket holds no coordinate to look up.
        let mut located_body = locates;
        located_body.push(Stmt::If(
            conjunction(flags.into_iter().map(|f| f.1)),
            self.lower(rest, expr, dest, &inner)?,
            vec![],
        ));
        if found == Expr::Bool(true) {
            body.extend(located_body);
        } else {
            body.push(Stmt::If(found, located_body, vec![]));
        }
        match seg {
            None => Ok(vec![Stmt::For(Loop {
                var: self.named(pname, Type::Index),
                start: begin,
                end,
                body,
                kind: LoopKind::Serial,
            })]),
            Some(seg) => {
                body.push(Stmt::Assign(self.named_any(pname.clone()), self.iv(seg)));
                Ok(vec![
                    Stmt::Decl(self.named(pname.clone(), Type::Index), begin),
                    Stmt::Decl(self.named(format!("{stem}\u{1}_end"), Type::Index), end),
                    Stmt::While(
                        Expr::lt(self.iv(pname), self.iv(format!("{stem}\u{1}_end"))),
                        body,
                    ),
                ])
            }
        }
    }

    /// Declare the cursor state of ordered iterators: each one's position (or coordinate
    /// counter for value-iterated levels) and end.
    pub(super) fn cursors_init(&self, cursors: &[usize], scope: &Scope) -> Vec<Stmt> {
        let mut stmts = Vec::new();
        for &o in cursors {
            let stem = self.stem(o, scope);
            let level = self.level(o, scope);
            let site = self.occ_site(o, scope);
            let (begin, end) = match level.coord_iter(&site) {
                Some(range) => range,
                None => self.pos_range(o, scope),
            };
            stmts.push(Stmt::Decl(
                self.named(format!("q\u{1}{stem}"), Type::Index),
                begin,
            ));
            stmts.push(Stmt::Decl(
                self.named(format!("{stem}\u{1}_end"), Type::Index),
                end,
            ));
        }
        stmts
    }

    /// The coordinate under a cursor and the position it stands for.
    pub(super) fn cursor_coord(&self, o: usize, scope: &Scope) -> (Expr, Expr) {
        let stem = self.stem(o, scope);
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let q = self.iv(format!("q\u{1}{stem}"));
        if level.capabilities().coord_value_iter {
            let pos = level
                .coord_access(&site, &self.parent_pos(o, scope), &q)
                .expect("coordinate access")
                .0;
            (q, pos)
        } else {
            (level.pos_access(&site, &q).expect("position access").0, q)
        }
    }

    /// Declare the position under cursor `o`, and for a non-unique level the end of the
    /// run of duplicates of `coord` after it; extend `inner` with them and return the
    /// statement that advances the cursor past the run when `matched`. `inner` has not
    /// resolved `o`'s level yet, so it also names the level.
    pub(super) fn cursor_position(
        &self,
        o: usize,
        pos: Expr,
        coord: &Expr,
        matched: Expr,
        body: &mut Vec<Stmt>,
        inner: &mut Scope,
    ) -> Stmt {
        let scope = inner.clone();
        let stem = self.stem(o, &scope);
        let level = self.level(o, &scope);
        let site = self.occ_site(o, &scope);
        let pname = format!("p\u{1}{stem}");
        let q = format!("q\u{1}{stem}");
        body.push(Stmt::Decl(self.named(pname.clone(), Type::Index), pos));
        let next = if !level.properties().unique && !level.capabilities().coord_value_iter {
            let seg = format!("{stem}\u{1}_segend");
            body.extend(self.segment_scan(
                &seg,
                &q,
                &format!("{stem}\u{1}_end"),
                level,
                &site,
                coord,
            ));
            *inner = inner.with(o, self.iv(pname), Some(self.iv(seg.clone())));
            self.iv(seg)
        } else {
            *inner = inner.with(o, self.iv(pname), None);
            self.iv(q.clone()) + Expr::Int(1)
        };
        Stmt::If(matched, vec![Stmt::Assign(self.named_any(q), next)], vec![])
    }

    /// True while every one of `cursors` is inside its segment.
    pub(super) fn cursors_alive(&self, cursors: &[usize], scope: &Scope) -> Expr {
        conjunction(cursors.iter().map(|&o| {
            let stem = self.stem(o, scope);
            Expr::lt(
                self.iv(format!("q\u{1}{stem}")),
                self.iv(format!("{stem}\u{1}_end")),
            )
        }))
    }

    pub(super) fn two_finger(
        &mut self,
        step: Step,
        points: &[Point],
        iterated: &[usize],
        located: &[usize],
    ) -> Result<Vec<Stmt>, LowerError> {
        let Step { var: v, scope, .. } = step;
        let mut stmts = self.cursors_init(iterated, scope);
        let vname = self.name(v);
        for point in points {
            let merged: Vec<usize> = iterated
                .iter()
                .copied()
                .filter(|o| point.iterators.contains(o))
                .collect();
            if merged.is_empty() {
                continue;
            }
            let alive = self.cursors_alive(&merged, scope);
            let mut body = Vec::new();
            let mut inner = scope.clone();
            let mut coords = Vec::new();
            let mut advance = Vec::new();
            for &o in &merged {
                let stem = self.stem(o, scope);
                let (coord, pos) = self.cursor_coord(o, scope);
                let cname = format!("i\u{1}{stem}");
                body.push(Stmt::Decl(self.named(cname.clone(), Type::Index), coord));
                let matched = Expr::eq(self.iv(cname.clone()), self.iv(vname));
                advance.push(self.cursor_position(
                    o,
                    pos,
                    &self.iv(cname.clone()),
                    matched,
                    &mut body,
                    &mut inner,
                ));
                coords.push((o, self.iv(cname)));
            }
            let minimum = coords
                .iter()
                .map(|c| c.1.clone())
                .reduce(Expr::min)
                .expect("at least one merged iterator");
            body.push(Stmt::Decl(self.named(vname, Type::Index), minimum));
            let (locates, flags, inner) = self.locate_all(located, v, &inner);
            body.extend(locates);
            let conditions: Vec<(usize, Expr)> = coords
                .iter()
                .map(|(o, c)| (*o, Expr::eq(c.clone(), self.iv(vname))))
                .chain(flags)
                .collect();
            let within: Vec<Point> = points.iter().filter(|q| q.within(point)).cloned().collect();
            let cases = lattice_cases(&within, &conditions);
            body.push(self.case_chain(step, &[], &cases, &inner)?);
            body.extend(advance);
            stmts.push(Stmt::While(alive, body));
        }
        Ok(stmts)
    }

    pub(super) fn dense_loop(
        &mut self,
        step: Step,
        points: &[Point],
        cursors: &[usize],
        located: &[usize],
    ) -> Result<Vec<Stmt>, LowerError> {
        let Step {
            var: v,
            scope,
            rest,
            ..
        } = step;
        let mut stmts = self.cursors_init(cursors, scope);
        let vname = self.name(v);
        let mut body = Vec::new();
        let mut matched = Vec::new();
        let mut inner = scope.clone();
        // The inner loop of a split stops at its parent's extent, rather than guarding
        // each iteration: coordinates past it hold no entries (a blocked level's padding).
        let tail = self.tail_of_split(v, rest);
        if let Some((parent, _)) = &tail {
            inner.guarded.insert(*parent);
        }
        let mut advance = Vec::new();
        for &o in cursors {
            let stem = self.stem(o, scope);
            let (coord, pos) = self.cursor_coord(o, scope);
            let q = format!("q\u{1}{stem}");
            let flag = format!("{stem}\u{1}_match");
            body.push(Stmt::Decl(
                self.named(flag.clone(), Type::Bool),
                Expr::and(
                    Expr::lt(self.iv(q.clone()), self.iv(format!("{stem}\u{1}_end"))),
                    Expr::eq(coord, self.var(v)),
                ),
            ));
            advance.push(self.cursor_position(
                o,
                pos,
                &self.var(v),
                self.iv(flag.clone()),
                &mut body,
                &mut inner,
            ));
            matched.push((o, self.iv(flag)));
        }
        let (locates, flags, inner) = self.locate_all(located, v, &inner);
        body.extend(locates);
        let conditions: Vec<(usize, Expr)> = matched.into_iter().chain(flags).collect();
        let cases = lattice_cases(points, &conditions);
        body.push(self.case_chain(step, &[], &cases, &inner)?);
        body.extend(advance);
        let full = Loop {
            var: vname,
            start: Expr::Int(0),
            end: self.size(v),
            body,
            kind: LoopKind::Serial,
        };
        stmts.push(match tail {
            // Blocks of a constant size run a loop of that many trips, which a C compiler
            // unrolls and vectorises (sliced ELL's rows in SIMD lanes); the last block,
            // cut short by the parent's extent, a copy that stops there.
            Some((parent, left)) if matches!(full.end, Expr::Int(_)) => {
                let short = Loop {
                    end: left.clone(),
                    ..full.clone()
                };
                // Where each iteration writes its own element of a dense output (the
                // parent is one of its indices) and loops over nothing (one position of
                // a singleton level at most), the block's iterations are SIMD lanes: gcc
                // vectorises such a loop of a few trips only when told, as it unrolls it
                // first and cannot then gather (sliced ELL's rows). Not inside GPU loops,
                // whose threads run no CPU lanes.
                // Running them in lanes is the CPU targets' pass (`ir::lanes`).
                let on_gpu = self.parallel.iter().any(|(_, p, _)| p.unit.is_gpu());
                if self.dense_output
                    && !on_gpu
                    && self.is_free(parent)
                    && one_trip_loops_only(&full.body)
                {
                    self.tables.borrow_mut().function.lane_loops.push(full.var);
                }
                Stmt::If(
                    Expr::lt(left, full.end.clone()),
                    vec![Stmt::For(short)],
                    vec![Stmt::For(full)],
                )
            }
            Some((_, left)) => Stmt::For(Loop {
                end: Expr::min(full.end.clone(), left),
                ..full
            }),
            None => Stmt::For(full),
        });
        Ok(stmts)
    }

    /// `if (case 1) {...} else if (case 2) {...}`: each case recurses with the operands
    /// absent from it removed from the expression, first resolving `then` (variables whose
    /// values are already set, computed together with the step's), then the loops after.
    pub(super) fn case_chain(
        &mut self,
        step: Step,
        then: &[VarId],
        cases: &[(Expr, Point)],
        inner: &Scope,
    ) -> Result<Stmt, LowerError> {
        let (v, rest, expr, dest, outer) = step.parts();
        // A case whose condition repeats an earlier one's is unreachable (an operand that
        // is always present, such as a dense one, makes two lattice points test the same).
        let mut reachable: Vec<(Expr, &Point)> = Vec::new();
        for (cond, case) in cases {
            let cond = crate::ir::simplify(cond);
            if !reachable.iter().any(|earlier| earlier.0 == cond) {
                reachable.push((cond, case));
            }
        }
        let mut chain: Vec<Stmt> = Vec::new();
        for (cond, case) in reachable.into_iter().rev() {
            let case_expr =
                expr.without(&|o| self.indexes(o, v, outer) && !case.iterators.contains(&o));
            // Sums whose operands are all absent in this case vanish with them; looping
            // over their variables would multiply what is left.
            let mut before = Vec::new();
            lexpr::summed_vars(expr, &mut before);
            let mut after = Vec::new();
            lexpr::summed_vars(&case_expr, &mut after);
            let live: Vec<VarId> = rest
                .iter()
                .copied()
                .filter(|&u| !self.derives_from_any(u, &before) || self.derives_from_any(u, &after))
                .collect();
            // A mask's entry is known here when its iterator is in the case at its last
            // level.
            let mask_holds = |o: usize| {
                case.iterators.contains(&o)
                    && self.indexes(o, v, outer)
                    && outer.resolved(o) + 1 == self.occurrences[o].level_vars.len()
            };
            let body = if case_expr == LExpr::Zero || case_expr.masked_out(&mask_holds) {
                vec![]
            } else {
                self.resolve_all(then, &live, &case_expr, dest, inner)?
            };
            chain = vec![Stmt::If(cond.clone(), body, chain)];
        }
        Ok(Stmt::Block(chain))
    }
}

/// Whether every loop in `body` (at any depth) runs one trip: over the position below a
/// computed one, as a singleton level's (no `while` loop: no search).
fn one_trip_loops_only(body: &[Stmt]) -> bool {
    let mut only = true;
    crate::ir::visit::walk_stmts(body, &mut |s| match s {
        Stmt::For(l) => only &= crate::ir::is_successor(&l.start, &l.end),
        Stmt::While(..) => only = false,
        _ => {}
    });
    only
}

pub(super) fn conjunction(terms: impl IntoIterator<Item = Expr>) -> Expr {
    terms.into_iter().fold(Expr::Bool(true), Expr::and)
}

/// Each lattice point with its condition: the conjunction of the conditions of the
/// iterators it merges (their coordinate matches, or their located levels found it).
pub(super) fn lattice_cases(points: &[Point], conditions: &[(usize, Expr)]) -> Vec<(Expr, Point)> {
    points
        .iter()
        .map(|case| {
            let cond = conjunction(
                conditions
                    .iter()
                    .filter(|(o, _)| case.iterators.contains(o))
                    .map(|c| c.1.clone()),
            );
            (cond, case.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Levels by letter: `d` dense, `s` compressed, `u` compressed non-unique, `h` hashed,
    /// `b` bytemap, `x` an unordered compressed level (as after a hashed parent).
    fn level(letter: char) -> (Capabilities, Properties) {
        let props = |full, ordered, unique| Properties {
            full,
            ordered,
            unique,
            branchless: false,
            compact: full,
        };
        let caps = |coord_value_iter, coord_pos_iter, locate| Capabilities {
            coord_value_iter,
            coord_pos_iter,
            locate,
        };
        match letter {
            'd' => (caps(true, false, true), props(true, true, true)),
            's' => (caps(false, true, false), props(false, true, true)),
            'u' => (caps(false, true, false), props(false, true, false)),
            'h' => (caps(false, true, true), props(false, false, true)),
            'b' => (caps(true, false, true), props(false, true, true)),
            'x' => (caps(false, true, false), props(false, false, true)),
            _ => unreachable!("test level letter"),
        }
    }

    fn point(iterators: &[usize], universe: bool) -> Point {
        Point {
            iterators: iterators.iter().copied().collect(),
            universe,
        }
    }

    /// The strategy for `points` over operands whose levels are `letters` (by index).
    fn strategy(letters: &str, points: &[Point]) -> Strategy {
        let letters: Vec<char> = letters.chars().collect();
        choose(points, &|o| level(letters[o]))
    }

    fn coiterate(iterated: &[usize], located: &[usize]) -> Strategy {
        Strategy::Coiterate {
            iterated: iterated.to_vec(),
            located: located.to_vec(),
        }
    }

    fn dense(cursors: &[usize], located: &[usize]) -> Strategy {
        Strategy::Dense {
            cursors: cursors.to_vec(),
            located: located.to_vec(),
        }
    }

    #[test]
    fn points_that_only_lack_full_levels_are_unreachable() {
        // A row times a complemented dense mask: {A, M} and {A}; M is never absent.
        let points = [point(&[0, 1], false), point(&[0], false)];
        let letters: Vec<char> = "sd".chars().collect();
        let full = |o: usize| level(letters[o]).1.full;
        let reachable = reachable_points(&points, &full);
        assert_eq!(reachable, [point(&[0, 1], false)]);
        assert_eq!(strategy("sd", &reachable), coiterate(&[0], &[1]));
        // A hashed mask may lack a coordinate: both cases stay.
        let letters: Vec<char> = "sh".chars().collect();
        let full = |o: usize| level(letters[o]).1.full;
        assert_eq!(reachable_points(&points, &full), points);
        // Over the whole dimension, a dense M is everywhere too: {universe} alone is not.
        let points = [point(&[1], true), point(&[], true)];
        let letters: Vec<char> = "sd".chars().collect();
        let full = |o: usize| level(letters[o]).1.full;
        assert_eq!(reachable_points(&points, &full), [point(&[1], true)]);
    }

    #[test]
    fn an_intersection_iterates_what_cannot_locate_and_locates_the_rest() {
        // CSR row times a dense vector: loop over the row, locate into x.
        assert_eq!(
            strategy("sd", &[point(&[0, 1], false)]),
            coiterate(&[0], &[1])
        );
        // Two compressed levels: a two-finger merge of both.
        assert_eq!(
            strategy("ss", &[point(&[0, 1], false)]),
            coiterate(&[0, 1], &[])
        );
        // A hashed level locates even when it comes first.
        assert_eq!(
            strategy("hs", &[point(&[0, 1], false)]),
            coiterate(&[1], &[0])
        );
    }

    #[test]
    fn an_intersection_of_locatable_levels_picks_a_loop() {
        // Something full: loop over the dimension and locate everything.
        assert_eq!(
            strategy("dh", &[point(&[0, 1], false)]),
            dense(&[], &[0, 1])
        );
        // Only hashed (not full): iterate the first, locate the second.
        assert_eq!(
            strategy("hh", &[point(&[0, 1], false)]),
            coiterate(&[0], &[1])
        );
        // The universe point (an operand absent from the variable) covers the dimension.
        assert_eq!(strategy("h", &[point(&[0], true)]), dense(&[], &[0]));
    }

    #[test]
    fn a_union_of_ordered_sparse_levels_is_a_two_finger_merge() {
        let points = [
            point(&[0, 1], false),
            point(&[0], false),
            point(&[1], false),
        ];
        assert_eq!(strategy("ss", &points), coiterate(&[0, 1], &[]));
        assert_eq!(strategy("su", &points), coiterate(&[0, 1], &[]));
    }

    #[test]
    fn a_union_with_a_full_unordered_or_bytemap_level_visits_every_coordinate() {
        let points = [
            point(&[0, 1], false),
            point(&[0], false),
            point(&[1], false),
        ];
        // A dense operand in a sum: loop over the dimension, cursor through the sparse one.
        assert_eq!(strategy("sd", &points), dense(&[0], &[1]));
        // Hashed (unordered, locatable): located.
        assert_eq!(strategy("sh", &points), dense(&[0], &[1]));
        // Unordered and not locatable: a cursor (rejected later, as it cannot merge).
        assert_eq!(strategy("sx", &points), dense(&[0, 1], &[]));
        // A bytemap may lack coordinates: every coordinate, and its flag is tested.
        assert_eq!(strategy("bs", &points), dense(&[1], &[0]));
        // The universe in a union (a constant added): every coordinate too.
        let with_universe = [point(&[0], true), point(&[0], false)];
        assert_eq!(strategy("s", &with_universe), dense(&[0], &[]));
    }
}
