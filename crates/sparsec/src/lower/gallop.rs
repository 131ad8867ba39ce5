//! Galloping intersections (`mergeby(v, Gallop)`): every cursor below the largest
//! coordinate moves to it by exponential then binary search instead of one step at a time.

use super::iterate::conjunction;
use super::lattice::Point;
use super::{LowerError, Lowerer, Scope, Step};
use crate::ir::{Expr, Stmt, Type};

impl Lowerer<'_> {
    /// A galloping intersection applies where one lattice point (an intersection) merges
    /// levels whose coordinates are read from positions.
    pub(super) fn can_gallop(&self, points: &[Point], iterated: &[usize], scope: &Scope) -> bool {
        let by_position = |o: usize| !self.level(o, scope).capabilities().coord_value_iter;
        matches!(points, [p] if !p.universe) && iterated.iter().all(|&o| by_position(o))
    }

    /// `mergeby(v, Gallop)`: intersect the iterated levels by moving every cursor whose
    /// coordinate is below the largest one straight to the first coordinate not below
    /// it, by exponential then binary search, instead of one step at a time. An
    /// intersection of a short and a long segment then costs about `s log(l / s)` probes
    /// instead of `s + l`.
    pub(super) fn gallop(
        &mut self,
        step: Step,
        point: &Point,
        iterated: &[usize],
        located: &[usize],
    ) -> Result<Vec<Stmt>, LowerError> {
        let Step { var: v, scope, .. } = step;
        let mut stmts = self.cursors_init(iterated, scope);
        let vname = self.name(v);
        let alive = self.cursors_alive(iterated, scope);
        let mut body = Vec::new();
        let mut coords = Vec::new();
        for &o in iterated {
            let (coord, _) = self.cursor_coord(o, scope);
            let cname = format!("i\u{1}{}", self.stem(o, scope));
            body.push(Stmt::Decl(self.named(cname.clone(), Type::Index), coord));
            coords.push((o, self.iv(cname)));
        }
        let largest = coords
            .iter()
            .map(|c| c.1.clone())
            .reduce(|a, b| {
                Expr::Select(
                    Box::new(Expr::lt(a.clone(), b.clone())),
                    Box::new(b),
                    Box::new(a),
                )
            })
            .expect("at least two iterators");
        body.push(Stmt::Decl(self.named(vname, Type::Index), largest));
        let all_match = conjunction(
            coords
                .iter()
                .map(|(_, c)| Expr::eq(c.clone(), self.iv(vname))),
        );
        // Every coordinate equals the largest: the point is in the intersection.
        let mut matched = Vec::new();
        let mut inner = scope.clone();
        let mut advance = Vec::new();
        for (&o, (_, coord)) in iterated.iter().zip(&coords) {
            let (_, pos) = self.cursor_coord(o, scope);
            advance.push(self.cursor_position(
                o,
                pos,
                coord,
                Expr::Bool(true),
                &mut matched,
                &mut inner,
            ));
        }
        let (locates, flags, inner) = self.locate_all(located, v, &inner);
        matched.extend(locates);
        let cond = conjunction(flags.into_iter().map(|f| f.1));
        matched.push(self.case_chain(step, &[], &[(cond, point.clone())], &inner)?);
        matched.extend(advance);
        // Otherwise every cursor below the largest coordinate gallops up to it.
        let mut catch_up = Vec::new();
        for (&o, (_, coord)) in iterated.iter().zip(&coords) {
            let behind = Expr::lt(coord.clone(), self.iv(vname));
            catch_up.push(Stmt::If(
                behind,
                self.gallop_cursor(o, scope, vname),
                vec![],
            ));
        }
        body.push(Stmt::If(all_match, matched, catch_up));
        stmts.push(Stmt::While(alive, body));
        Ok(stmts)
    }

    /// Move cursor `o`, whose coordinate is below `target`, to the first position of its
    /// segment whose coordinate is not: probe 1, 2, 4, ... positions ahead until a
    /// coordinate reaches `target` (or the segment ends), then binary search the last gap.
    fn gallop_cursor(&self, o: usize, scope: &Scope, target: crate::ir::Var) -> Vec<Stmt> {
        let stem = self.stem(o, scope);
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let crd = |q: Expr| {
            level
                .pos_access(&site, &q)
                .expect("checked by can_gallop")
                .0
        };
        let q = format!("q\u{1}{stem}");
        let end = self.iv(format!("{stem}\u{1}_end"));
        let (lo, width) = (format!("{stem}\u{1}_glo"), format!("{stem}\u{1}_gwidth"));
        let probe = self.iv(lo.clone()) + self.iv(width.clone()) - Expr::Int(1);
        let mut stmts = vec![
            // The cursor's own coordinate is below the target: start after it.
            Stmt::Decl(
                self.named(lo.clone(), Type::Index),
                self.iv(q.clone()) + Expr::Int(1),
            ),
            Stmt::Decl(self.named(width.clone(), Type::Index), Expr::Int(1)),
            Stmt::While(
                Expr::and(
                    Expr::lt(probe.clone(), end.clone()),
                    Expr::lt(crd(probe.clone()), Expr::Var(target)),
                ),
                vec![
                    Stmt::Assign(self.named_any(lo.clone()), probe.clone() + Expr::Int(1)),
                    Stmt::Assign(
                        self.named_any(width.clone()),
                        self.iv(width.clone()) * Expr::Int(2),
                    ),
                ],
            ),
        ];
        let (search, first, _) = self.lower_bound(
            &format!("{stem}\u{1}_gsearch"),
            self.iv(lo),
            Expr::min(probe, end),
            &crd,
            Expr::Var(target),
        );
        stmts.extend(search);
        stmts.push(Stmt::Assign(self.named_any(q), first));
        stmts
    }
}
