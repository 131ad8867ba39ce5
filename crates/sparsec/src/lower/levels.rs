//! Operands' levels as lowering reaches them: level sites, positions and their ranges,
//! locating a coordinate (by `locate` or by binary search), and scanning duplicates.

use std::ops::{Add, Sub};

use super::{LowerError, Lowerer, Scope};
use crate::format::{Level, LevelCoord, LevelSite};
use crate::ir::{BinOp, Expr, OperandId, Stmt, Type};

impl Lowerer<'_> {
    /// Level site of occurrence `o` (or the output when `o` is None and `operand` is 0) at
    /// level `k`.
    pub(super) fn site(&self, operand: usize, occurrence: Option<usize>, k: usize) -> LevelSite {
        let ancestors = match occurrence {
            Some(o) => self.occurrences[o].level_vars[..k]
                .iter()
                .map(|&v| self.var(v))
                .collect(),
            None => {
                let out = &self.operands[0];
                out.format.levels()[..k]
                    .iter()
                    .map(|l| match l.coord {
                        LevelCoord::Mode(m) => self.var(self.stmt.lhs[m]),
                        _ => unreachable!("plain format"),
                    })
                    .collect()
            }
        };
        LevelSite {
            operand: OperandId(operand),
            level: k + 1,
            ancestors,
        }
    }

    pub(super) fn occ_site(&self, o: usize, scope: &Scope) -> LevelSite {
        self.site(self.occurrences[o].operand, Some(o), scope.resolved(o))
    }

    pub(super) fn level(&self, o: usize, scope: &Scope) -> &Level {
        &self.occurrences[o].levels[scope.resolved(o)]
    }

    pub(super) fn parent_pos(&self, o: usize, scope: &Scope) -> Expr {
        scope.positions[o].last().cloned().unwrap_or(Expr::Int(0))
    }

    /// Name stem of occurrence `o`'s current level: `A2`, or `A_o1_2` when operand `A`
    /// is read by several occurrences (each has its own iterators).
    pub(super) fn stem(&self, o: usize, scope: &Scope) -> String {
        let operand = self.occurrences[o].operand;
        let name = &self.operands[operand].name;
        let shared = self
            .occurrences
            .iter()
            .filter(|x| x.operand == operand)
            .count()
            > 1;
        if shared {
            format!("{name}\u{1}_o{o}_{}", scope.resolved(o) + 1)
        } else {
            format!("{name}\u{1}{}", scope.resolved(o) + 1)
        }
    }

    /// `(begin, end)` of a position iterator, chaining through a non-unique parent.
    pub(super) fn pos_range(&self, o: usize, scope: &Scope) -> (Expr, Expr) {
        let site = self.occ_site(o, scope);
        let level = self.level(o, scope);
        let parent = self.parent_pos(o, scope);
        let (begin, end) = level.pos_iter(&site, &parent).expect("position iteration");
        match scope.segment_ends[o].last().cloned().flatten() {
            Some(seg_end) => {
                let last = Sub::sub(seg_end, Expr::Int(1));
                (
                    begin,
                    level.pos_iter(&site, &last).expect("position iteration").1,
                )
            }
            None => (begin, end),
        }
    }

    pub(super) fn check_locatable(&self, o: usize, scope: &Scope) -> Result<(), LowerError> {
        if scope.segment_ends[o].last().cloned().flatten().is_some() {
            return Err(LowerError(format!(
                "level {} of `{}` would be located under a non-unique parent level; store the \
                 operand with a unique parent (e.g. csr instead of coo for this expression)",
                scope.resolved(o) + 1,
                self.operands[self.occurrences[o].operand].name
            )));
        }
        Ok(())
    }

    /// Binary search for `target` among the increasing keys `key(q)` of positions
    /// `begin..end`: the statements (declaring `<name>_lo`, `_hi`, `_mid`, `_end`), the first
    /// position whose key is not below `target`, and whether its key equals `target`.
    pub(super) fn lower_bound(
        &self,
        name: &str,
        begin: Expr,
        end: Expr,
        key: &dyn Fn(Expr) -> Expr,
        target: Expr,
    ) -> (Vec<Stmt>, Expr, Expr) {
        let var = |suffix: &str| format!("{name}\u{1}_{suffix}");
        let (lo, hi, mid, end_name) = (var("lo"), var("hi"), var("mid"), var("end"));
        let stmts = vec![
            Stmt::Decl(self.named(lo.clone(), Type::Index), begin),
            Stmt::Decl(self.named(end_name.clone(), Type::Index), end),
            Stmt::Decl(
                self.named(hi.clone(), Type::Index),
                self.iv(end_name.clone()),
            ),
            Stmt::While(
                Expr::lt(self.iv(lo.clone()), self.iv(hi.clone())),
                vec![
                    Stmt::Decl(
                        self.named(mid.clone(), Type::Index),
                        Expr::bin(
                            BinOp::Div,
                            self.iv(lo.clone()) + self.iv(hi.clone()),
                            Expr::Int(2),
                        ),
                    ),
                    Stmt::If(
                        Expr::lt(key(self.iv(mid.clone())), target.clone()),
                        vec![Stmt::Assign(
                            self.named_any(lo.clone()),
                            self.iv(mid.clone()) + Expr::Int(1),
                        )],
                        vec![Stmt::Assign(self.named_any(hi.clone()), self.iv(mid))],
                    ),
                ],
            ),
        ];
        let found = Expr::and(
            Expr::lt(self.iv(lo.clone()), self.iv(end_name)),
            Expr::eq(key(self.iv(lo.clone())), target),
        );
        (stmts, self.iv(lo), found)
    }

    /// Advance `seg` past the duplicates of `coord` that start at `pos` (Chou §4.4).
    pub(super) fn segment_scan(
        &self,
        seg: &str,
        pos: &str,
        end: &str,
        level: &Level,
        site: &LevelSite,
        coord: &Expr,
    ) -> Vec<Stmt> {
        let next = level
            .pos_access(site, &self.iv(seg))
            .expect("position access")
            .0;
        vec![
            Stmt::Decl(
                self.named(seg, Type::Index),
                Add::add(self.iv(pos), Expr::Int(1)),
            ),
            Stmt::While(
                Expr::and(
                    Expr::lt(self.iv(seg), self.iv(end)),
                    Expr::eq(next, coord.clone()),
                ),
                vec![Stmt::Assign(
                    self.named_any(seg),
                    Add::add(self.iv(seg), Expr::Int(1)),
                )],
            ),
        ]
    }
}
