//! The scheduled statement and the scheduling language (Senanayake 2020).
//!
//! [`Concrete`] is a checked statement made concrete: its right-hand side with reductions
//! placed ([`lexpr`]), one *occurrence* per tensor access with the index variable of each
//! storage level, a loop order (`order`), and the *provenance graph* — the relations by
//! which scheduling transformations derived new index variables from old ones. The
//! transformations are methods that return a new `Concrete` (see `transform`), and
//! [`Schedule`] is their text form (`"split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)"`).
//!
//! Invariants (established here, relied on by [`crate::lower`]):
//! - `vars` lists the statement's variables first (same ids), then variables added for
//!   structured storage levels and by transformations.
//! - A variable is replaced by at most one relation (it is that relation's *parent*), and
//!   created by at most one. A variable that no relation replaces is a *loop*.
//! - `order` lists every variable once. A replaced variable comes after every variable its
//!   relation created, so lowering can recover it from them; a loop's position is where
//!   its loop is emitted.
//! - `order` respects `sum_edges` (reduction placement) and, for occurrences not listed in
//!   `reordered`, each occurrence's storage level order.

pub mod lexpr;
mod order;
mod parse;
mod transform;

use std::collections::BTreeSet;

use lexpr::LExpr;

pub use crate::error::LowerError;
use crate::format::{Format, LevelCoord};
use crate::ir::{Expr, ParamRef, Symbol};
pub use crate::ir::{OmpSchedule, ParallelUnit};
use crate::notation::ast::Op;
use crate::notation::cin::{CExpr, Statement, TensorId, VarId};

pub use parse::{Schedule, ScheduleSyntaxError};
pub(crate) use transform::ceil_div;
pub use transform::{AssembleStrategy, BoundKind, ScheduleError, SplitBy, Transform};

/// How writes that several parallel iterations make to the same place are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RaceStrategy {
    /// There are none; a race is a compile-time error.
    NoRaces,
    /// The user asserts races cannot happen for the inputs given.
    IgnoreRaces,
    /// Racing updates become atomic.
    Atomics,
    /// Each thread reduces into its own copy; the copies are summed at the end.
    Temporary,
    /// A reduction across the lanes of the parallel unit.
    ParallelReduction,
}

/// Scheduling tags of one loop.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopTags {
    /// Parallel unit, race strategy, OpenMP schedule and chunk.
    pub parallel: Option<Parallel>,
    /// Unroll factor.
    pub unroll: Option<usize>,
    /// How the loop co-iterates its sparse operands (`mergeby`).
    pub merge: MergeStrategy,
}

/// How a loop intersects or unions the coordinates of several sparse operands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MergeStrategy {
    /// Advance the operand with the smallest coordinate one step at a time (what lowering
    /// emits).
    #[default]
    TwoFinger,
    /// Move each operand behind the largest coordinate straight to it, by exponential
    /// then binary search (an intersection of two or more operands iterated by position).
    Gallop,
}

/// A `parallelize` tag.
#[derive(Clone, Debug, PartialEq)]
pub struct Parallel {
    pub unit: ParallelUnit,
    pub races: RaceStrategy,
    pub schedule: OmpSchedule,
    pub chunk: usize,
}

/// Where a variable comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarOrigin {
    /// Written in the statement.
    Statement,
    /// Added for a structured storage level (ELL slot, DIA diagonal, BCSR block).
    Storage,
    /// Created by a scheduling transformation.
    Schedule,
}

/// One index variable of the concrete statement.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopVar {
    /// The name users write in schedules (and the hint for its name in generated code).
    pub name: String,
    /// Number of iterations of its loop, from 0.
    pub extent: Expr,
    pub origin: VarOrigin,
    pub tags: LoopTags,
}

/// A relation of the provenance graph: how derived variables map to the one they replace.
#[derive(Clone, Debug, PartialEq)]
pub enum Relation {
    /// `parent = outer * factor + inner` (split, divide, and blocked storage levels).
    Split {
        parent: VarId,
        outer: VarId,
        inner: VarId,
        by: SplitBy,
    },
    /// `parent = bounded`, with a bound the user asserts.
    Bound {
        parent: VarId,
        bounded: VarId,
        kind: BoundKind,
        value: usize,
    },
    /// `parent = coordinate at position pos` of occurrence `occurrence`'s levels that
    /// store `parent` (one level, or several consecutive ones for a fused variable).
    Pos {
        parent: VarId,
        pos: VarId,
        occurrence: usize,
    },
    /// `parent` (a position variable) is the position of coordinate `coord`, searched
    /// among the positions of its space.
    Coord { parent: VarId, coord: VarId },
    /// `outer = fused / extent(inner)`, `inner = fused % extent(inner)`.
    Fuse {
        outer: VarId,
        inner: VarId,
        fused: VarId,
    },
}

impl Relation {
    /// The variables this relation replaces.
    pub fn parents(&self) -> Vec<VarId> {
        match *self {
            Relation::Split { parent, .. }
            | Relation::Bound { parent, .. }
            | Relation::Coord { parent, .. }
            | Relation::Pos { parent, .. } => vec![parent],
            Relation::Fuse { outer, inner, .. } => vec![outer, inner],
        }
    }

    /// The variables this relation creates.
    pub fn children(&self) -> Vec<VarId> {
        match *self {
            Relation::Split { outer, inner, .. } => vec![outer, inner],
            Relation::Bound { bounded, .. } => vec![bounded],
            Relation::Pos { pos, .. } => vec![pos],
            Relation::Coord { coord, .. } => vec![coord],
            Relation::Fuse { fused, .. } => vec![fused],
        }
    }
}

/// A statement in concrete index notation with its schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Concrete {
    pub(crate) statement: Statement,
    /// Right-hand side with reductions placed.
    pub(crate) rhs: LExpr,
    /// Tensor and index variables of each access, in order of appearance.
    pub(crate) accesses: Vec<(TensorId, Vec<VarId>)>,
    /// The layout each access is read in (see [`Concrete::access_format`]).
    formats: Vec<Format>,
    pub(crate) vars: Vec<LoopVar>,
    /// Variable of each storage level of each occurrence.
    pub(crate) level_vars: Vec<Vec<VarId>>,
    /// Occurrences whose layout cannot be converted to follow another loop order.
    pub(crate) fixed: Vec<bool>,
    /// `(outer, inner)` pairs that reduction placement requires.
    pub(crate) sum_edges: Vec<(VarId, VarId)>,
    pub(crate) relations: Vec<Relation>,
    pub(crate) order: Vec<VarId>,
    /// Occurrences read through a copy whose mode order follows `order`.
    pub(crate) reordered: Vec<usize>,
    /// True once a `parallelize` was applied (only more `parallelize` may follow).
    pub(crate) parallelized: bool,
    /// Fresh names a `precompute` gave its producer's loops (TACO's `i_pre`): each names
    /// the loop the producer shares with the consumer, so later transformations (an
    /// `unroll` of the producer) may use it.
    pub(crate) aliases: Vec<(String, VarId)>,
}

impl Concrete {
    /// Concretize a checked statement with the default loop order.
    ///
    /// An operand stored in a structured layout (ELL, DIA, BCSR) that this statement
    /// cannot read as stored (an ELL slot or DIA diagonal summed under `+`, `-`, a
    /// denominator or another reduction; a layout that the loop order other operands
    /// impose reads backwards), or one with a level other than a singleton below a
    /// non-unique one (a segment under each duplicate), is read
    /// through a copy in its general equivalent ([`Format::general_equivalent`]),
    /// converted at run time as reordered operands are.
    pub fn new(statement: &Statement) -> Result<Concrete, LowerError> {
        let mut accesses = Vec::new();
        collect_accesses(&statement.rhs, &mut accesses);
        let mut formats: Vec<Format> = accesses
            .iter()
            .map(|(t, _)| statement.tensors[*t].format.clone())
            .collect();
        loop {
            match Concrete::with_formats(statement, &formats)? {
                Ok(concrete) => return Ok(concrete),
                // Each retry makes one more access plain, so this ends.
                Err(o) => formats[o] = formats[o].general_equivalent(),
            }
        }
    }

    /// The format occurrence `o` is read in before any reordering: its tensor's, or the
    /// plain equivalent when the statement cannot read that layout.
    pub(crate) fn access_format(&self, o: usize) -> &Format {
        &self.formats[o]
    }

    /// [`Concrete::new`] with each access read in `formats[o]`; `Ok(Err(o))` when access
    /// `o`'s structured layout cannot serve this statement.
    fn with_formats(
        statement: &Statement,
        formats: &[Format],
    ) -> Result<Result<Concrete, usize>, LowerError> {
        let stmt = statement;
        let mut hoisted = Vec::new();
        let rhs = LExpr::from_cin(&stmt.rhs, true, &mut 0, &mut hoisted);
        let mut factors = Vec::new();
        factors_of_whole(&stmt.rhs, true, &mut factors);
        let mut accesses = Vec::new();
        collect_accesses(&stmt.rhs, &mut accesses);
        let mut vars: Vec<LoopVar> = stmt
            .vars
            .iter()
            .enumerate()
            .map(|(n, v)| LoopVar {
                name: v.name.clone(),
                extent: Expr::Param(ParamRef::Extent(n)),
                origin: VarOrigin::Statement,
                tags: LoopTags::default(),
            })
            .collect();
        let mut relations = Vec::new();
        let mut blocked: Vec<Option<(VarId, VarId, usize)>> = vec![None; stmt.vars.len()];
        let mut level_vars: Vec<Vec<VarId>> = Vec::with_capacity(accesses.len());
        for (o, (t, indices)) in accesses.iter().enumerate() {
            let tensor = &stmt.tensors[*t];
            let mut lvars = Vec::new();
            for (k, spec) in formats[o].levels().iter().enumerate() {
                match spec.coord {
                    LevelCoord::Mode(m) => lvars.push(indices[m]),
                    // Storage levels that hold no mode (the ELL slot, the DIA diagonal) get
                    // a fresh variable each, summed over: A(i,j) is the sum of A'(s,i,j)
                    // over the slots s. That sum distributes only over a factor of the
                    // whole right-hand side.
                    LevelCoord::EllSlot | LevelCoord::Diagonal => {
                        if !factors[o] {
                            return Ok(Err(o));
                        }
                        hoisted.push(vars.len());
                        lvars.push(vars.len());
                        vars.push(LoopVar {
                            name: format!("{}_o{o}_slot", tensor.name),
                            extent: Expr::Symbol(Symbol::AccessLevelSize {
                                access: o,
                                level: k + 1,
                            }),
                            origin: VarOrigin::Storage,
                            tags: LoopTags::default(),
                        });
                    }
                    LevelCoord::BlockOuter { mode, block }
                    | LevelCoord::BlockInner { mode, block } => {
                        // A blocked mode's variable is split into outer and inner
                        // variables; every other operand reaches it by `locate`.
                        let original = indices[mode];
                        let inner = matches!(spec.coord, LevelCoord::BlockInner { .. });
                        let (outer_var, inner_var) = match blocked[original] {
                            Some((o_var, i_var, b)) if b == block => (o_var, i_var),
                            // Blocked differently by an earlier operand: read this one
                            // unblocked.
                            Some(_) => return Ok(Err(o)),
                            None => {
                                let base = vars.len();
                                let root = &stmt.vars[original].name;
                                // A format stores a mode's outer block before its inner
                                // one (`Format::validate`), so this is the outer level.
                                // The blocks are counted by its size, a parameter, so
                                // that one compiled kernel serves inputs of every size,
                                // as unblocked ones do.
                                let blocks = Expr::Symbol(Symbol::AccessLevelSize {
                                    access: o,
                                    level: k + 1,
                                });
                                let extents = [blocks, Expr::Int(block as i64)];
                                for (suffix, extent) in ["blk", "in"].iter().zip(extents) {
                                    vars.push(LoopVar {
                                        name: format!("{root}_{suffix}"),
                                        extent,
                                        origin: VarOrigin::Storage,
                                        tags: LoopTags::default(),
                                    });
                                }
                                blocked[original] = Some((base, base + 1, block));
                                // Its loops enclose the non-hoisted sums only when the
                                // variable itself does.
                                let free = stmt.lhs.contains(&original);
                                if free || hoisted.contains(&original) {
                                    hoisted.extend([base, base + 1]);
                                }
                                relations.push(Relation::Split {
                                    parent: original,
                                    outer: base,
                                    inner: base + 1,
                                    by: SplitBy::Factor(block),
                                });
                                (base, base + 1)
                            }
                        };
                        lvars.push(if inner { inner_var } else { outer_var });
                    }
                }
            }
            level_vars.push(lvars);
        }
        // A variable other operands' blocks compute is reached in a structured layout only
        // by locate or by search in ordered unique coordinates.
        for (o, format) in formats.iter().enumerate() {
            let computed = |v: VarId| relations.iter().any(|r| r.parents().contains(&v));
            let levels = format.levels();
            let unreachable =
                levels
                    .iter()
                    .zip(&level_vars[o])
                    .enumerate()
                    .any(|(k, (spec, &v))| {
                        let (caps, props) = (spec.format.capabilities(), spec.format.properties());
                        let searchable = props.ordered && props.unique && caps.coord_pos_iter;
                        let below_duplicates =
                            levels[..k].iter().any(|l| !l.format.properties().unique);
                        computed(v) && (below_duplicates || !(caps.locate || searchable))
                    });
            if unreachable && format.general_equivalent() != *format {
                return Ok(Err(o));
            }
            // Below a non-unique level, coordinate prefixes repeat; only branchless levels
            // (singletons, as in COO) have one child per repeated prefix, and of those only
            // the last level's coordinates are unique within the repeats (COO is `ucq`:
            // a middle singleton repeats its coordinate too, so it must say so). Any other
            // level's segments, one per duplicate, would be read as one unmerged sequence
            // or under one duplicate only.
            let levels = format.levels();
            let below_duplicates = (1..levels.len()).any(|k| {
                let repeats = levels[..k].iter().any(|l| !l.format.properties().unique);
                let properties = levels[k].format.properties();
                let last = k + 1 == levels.len();
                repeats && !(properties.branchless && (last || !properties.unique))
            });
            if below_duplicates {
                return Ok(Err(o));
            }
        }
        let fixed: Vec<bool> = formats.iter().map(|f| !f.is_plain()).collect();
        let free: BTreeSet<VarId> = stmt.lhs.iter().copied().collect();
        let sum_edges = reduction_edges(&rhs, &free, &hoisted);
        let mut edges = Vec::new();
        for rel in &relations {
            for c in rel.children() {
                edges.extend(rel.parents().into_iter().map(|p| (c, p)));
            }
        }
        // A variable a reduction must stay inside is recovered before every loop derived
        // from the reduction's variable starts (blocked storage splits both into loops).
        // (Loops a blocked format derives from the reduction's own variable count among
        // the hoisted ones but are the reduction's loops.)
        for &(outer, summed) in &sum_edges {
            let mut derived = vec![summed];
            let mut next = 0;
            while let Some(&u) = derived.get(next) {
                let children = relations.iter().filter(|r| r.parents().contains(&u));
                derived.extend(children.flat_map(Relation::children));
                next += 1;
            }
            if !derived.contains(&outer) {
                edges.extend(derived.into_iter().map(|u| (outer, u)));
            }
        }
        // Dense operands neither constrain the order nor drive it: the loops iterate the
        // sparse operands' levels outside, the variables only dense operands use inside
        // (SpMM `i,j,k`, SDDMM `i,j,k`, MTTKRP `i,k,l,j`), and a dense operand read
        // against its layout is transposed once per run.
        let dense: Vec<bool> = formats
            .iter()
            .map(|f| f.is_plain() && f.is_all_dense())
            .collect();
        let sparse_levels: Vec<Vec<VarId>> = level_vars
            .iter()
            .zip(&dense)
            .map(|(lv, &d)| if d { vec![] } else { lv.clone() })
            .collect();
        let mut priority = var_priority(stmt, &accesses);
        priority.extend(stmt.vars.len()..vars.len());
        let indexes_sparse: BTreeSet<VarId> = sparse_levels.iter().flatten().copied().collect();
        let any_sparse = !indexes_sparse.is_empty();
        for (v, p) in priority.iter_mut().enumerate() {
            if any_sparse && !indexes_sparse.contains(&v) {
                *p += vars.len();
            }
        }
        let hard_levels = if any_sparse {
            &sparse_levels
        } else {
            &level_vars
        };
        let mut chosen = order::choose(vars.len(), hard_levels, &fixed, &edges, &priority);
        if let Some((first, relaxed)) = rows_outermost(stmt, hard_levels, &fixed, &chosen.order) {
            let retry = order::choose(vars.len(), &relaxed, &fixed, &edges, &priority);
            if retry.order.first() == Some(&first) {
                chosen = retry;
            }
        }
        let position = |v: VarId| chosen.order.iter().position(|&u| u == v);
        let before = |a: VarId, b: VarId| position(a) < position(b);
        let sparse = sparse_accesses(stmt, &accesses);
        let place = |v: VarId| position(v).unwrap_or(usize::MAX);
        let mut reordered = match order::conflicts(&level_vars, &fixed, &sparse, &before, &place) {
            Ok(reordered) => reordered,
            Err(o) => return Ok(Err(o)),
        };
        reordered.extend(chosen.reordered);
        reordered.sort_unstable();
        reordered.dedup();
        Ok(Ok(Concrete {
            statement: stmt.clone(),
            rhs,
            accesses,
            formats: formats.to_vec(),
            vars,
            level_vars,
            fixed,
            sum_edges,
            relations,
            order: chosen.order,
            reordered,
            parallelized: false,
            aliases: Vec::new(),
        }))
    }

    /// The checked statement.
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// The loops in nesting order, by name.
    pub fn loops(&self) -> Vec<&str> {
        self.order
            .iter()
            .filter(|&&v| self.is_loop(v))
            .map(|&v| self.vars[v].name.as_str())
            .collect()
    }

    /// All variables of the concrete statement.
    pub fn vars(&self) -> &[LoopVar] {
        &self.vars
    }

    /// The relation that replaced `v`, if any.
    pub fn replaced_by(&self, v: VarId) -> Option<&Relation> {
        self.relations.iter().find(|r| r.parents().contains(&v))
    }

    /// The relation that created `v`, if any.
    pub fn created_by(&self, v: VarId) -> Option<&Relation> {
        self.relations.iter().find(|r| r.children().contains(&v))
    }

    /// True when `v` is emitted as a loop (no relation replaced it).
    pub fn is_loop(&self, v: VarId) -> bool {
        self.replaced_by(v).is_none()
    }

    /// The statement variables `v` was derived from (itself when it is one).
    pub fn roots(&self, v: VarId) -> Vec<VarId> {
        match self.created_by(v) {
            None => vec![v],
            Some(rel) => rel
                .parents()
                .into_iter()
                .flat_map(|p| self.roots(p))
                .collect(),
        }
    }

    /// Every variable derived from `v`, transitively, `v` included.
    pub fn descendants(&self, v: VarId) -> Vec<VarId> {
        let mut out = vec![v];
        if let Some(rel) = self.replaced_by(v) {
            for c in rel.children() {
                out.extend(self.descendants(c));
            }
        }
        out
    }

    /// The `pos` relation above `v` (through splits of the position variable), if any.
    pub fn position_space(&self, v: VarId) -> Option<&Relation> {
        match self.created_by(v)? {
            rel @ Relation::Pos { .. } => Some(rel),
            Relation::Split { parent, .. } | Relation::Bound { parent, .. } => {
                self.position_space(*parent)
            }
            Relation::Fuse { .. } | Relation::Coord { .. } => None,
        }
    }

    /// The `pos` relation `v` derives from, also through a `coord` back to coordinates:
    /// the position space whose segment `v`'s loops need.
    pub fn pos_ancestor(&self, v: VarId) -> Option<&Relation> {
        match self.created_by(v)? {
            rel @ Relation::Pos { .. } => Some(rel),
            Relation::Split { parent, .. }
            | Relation::Bound { parent, .. }
            | Relation::Coord { parent, .. } => self.pos_ancestor(*parent),
            Relation::Fuse { .. } => None,
        }
    }

    /// Look up a variable by name.
    pub(crate) fn var_named(&self, name: &str) -> Option<VarId> {
        self.vars.iter().position(|v| v.name == name).or_else(|| {
            self.aliases
                .iter()
                .find(|(alias, _)| alias == name)
                .map(|&(_, v)| v)
        })
    }
}

/// Whether each access, left to right, is a factor of the whole right-hand side: its path
/// to the root passes only through `*`, unary minus, numerators and reductions.
fn factors_of_whole(expr: &CExpr, factor: bool, out: &mut Vec<bool>) {
    match expr {
        CExpr::Access(_) => out.push(factor),
        CExpr::Literal(_) => {}
        CExpr::Neg(a) | CExpr::Sum(_, a) => factors_of_whole(a, factor, out),
        CExpr::Binary(op, a, b) => {
            let (left, right) = match op {
                Op::Mul => (factor, factor),
                Op::Div => (factor, false),
                Op::Add | Op::Sub => (false, false),
            };
            factors_of_whole(a, left, out);
            factors_of_whole(b, right, out);
        }
        // f(0) = 0 passes its argument's zero on; other functions (and max(0, y)) do not.
        CExpr::Math(f, args) => {
            let through = factor && f.keeps_zero() && args.len() == 1;
            for a in args {
                factors_of_whole(a, through, out);
            }
        }
    }
}

fn collect_accesses(expr: &CExpr, out: &mut Vec<(TensorId, Vec<VarId>)>) {
    match expr {
        CExpr::Access(a) => out.push((a.tensor, a.indices.clone())),
        CExpr::Literal(_) => {}
        CExpr::Neg(a) | CExpr::Sum(_, a) => collect_accesses(a, out),
        CExpr::Binary(_, a, b) => {
            collect_accesses(a, out);
            collect_accesses(b, out);
        }
        CExpr::Math(_, args) => args.iter().for_each(|a| collect_accesses(a, out)),
    }
}

/// Every free or hoisted variable encloses each non-hoisted sum, and a sum encloses the
/// variables it sums.
fn reduction_edges(rhs: &LExpr, free: &BTreeSet<VarId>, hoisted: &[VarId]) -> Vec<(VarId, VarId)> {
    let mut sums = Vec::new();
    lexpr::sums(rhs, &mut sums);
    let mut edges = Vec::new();
    for (n, sum) in sums.iter().enumerate() {
        let LExpr::Sum(v, _, _) = sum else {
            unreachable!()
        };
        let mut inside = Vec::new();
        lexpr::summed_vars(sum, &mut inside);
        for &u in free.iter().chain(hoisted) {
            edges.push((u, *v));
        }
        // Enclosing non-hoisted sums come earlier in `sums` and contain this one; their
        // own variable and the sums hoisted into their temporary loop around it.
        for outer in &sums[..n] {
            let mut outer_inside = Vec::new();
            lexpr::summed_vars(outer, &mut outer_inside);
            if let (LExpr::Sum(w, outer_hoisted, _), true) = (outer, outer_inside.contains(v)) {
                edges.extend(std::iter::once(w).chain(outer_hoisted).map(|&u| (u, *v)));
            }
        }
        edges.extend(inside.iter().filter(|&&w| w != *v).map(|&w| (*v, w)));
    }
    edges
}

/// A sparse output whose outermost loop is a summed variable (`C(i,j) = A(k,i) * A(k,j)`
/// with `A` in CSR runs `k, i, j`) receives each entry from many iterations and sorts and
/// sums them all. When that happens, the output's outermost storage variable and the
/// sparse levels with the variable stored below another one, which operands then read
/// through reordered copies (a transposed `A`): with the output's rows outermost, each row
/// is gathered in a workspace and placed in order. `None` when the output is dense or its
/// rows already come first.
fn rows_outermost(
    stmt: &Statement,
    levels: &[Vec<VarId>],
    fixed: &[bool],
    order: &[VarId],
) -> Option<(VarId, Vec<Vec<VarId>>)> {
    let output = &stmt.tensors[0];
    if output.format.is_all_dense() || !output.format.is_plain() {
        return None;
    }
    let first = stmt.lhs[*output.format.mode_order()?.first()?];
    if order
        .first()
        .is_none_or(|v| *v == first || stmt.lhs.contains(v))
    {
        return None;
    }
    let relaxed = levels
        .iter()
        .zip(fixed)
        .map(|(vars, &fixed)| {
            if !fixed && vars.iter().skip(1).any(|&v| v == first) {
                vec![]
            } else {
                vars.clone()
            }
        })
        .collect();
    Some((first, relaxed))
}

fn var_priority(stmt: &Statement, accesses: &[(TensorId, Vec<VarId>)]) -> Vec<usize> {
    let mut priority = vec![usize::MAX; stmt.vars.len()];
    let out_order = stmt.tensors[0]
        .format
        .mode_order()
        .unwrap_or_else(|| (0..stmt.lhs.len()).collect());
    let mut rank = 0;
    for &m in &out_order {
        priority[stmt.lhs[m]] = rank;
        rank += 1;
    }
    for (_, indices) in accesses {
        for &v in indices {
            if priority[v] == usize::MAX {
                priority[v] = rank;
                rank += 1;
            }
        }
    }
    for p in priority.iter_mut().filter(|p| **p == usize::MAX) {
        *p = rank;
        rank += 1;
    }
    priority
}

/// Which accesses read a tensor with a sparse level.
pub(crate) fn sparse_accesses(stmt: &Statement, accesses: &[(TensorId, Vec<VarId>)]) -> Vec<bool> {
    accesses
        .iter()
        .map(|(t, _)| !stmt.tensors[*t].format.is_all_dense())
        .collect()
}

/// The layout an occurrence is read in when its storage order conflicts with the loops.
pub(crate) fn reordered_format(
    format: &Format,
    order: &[VarId],
    indices: &[VarId],
) -> Result<Format, LowerError> {
    let position = |v: VarId| order.iter().position(|&u| u == v).unwrap_or(usize::MAX);
    let mut modes: Vec<usize> = (0..indices.len()).collect();
    modes.sort_by_key(|&m| position(indices[m]));
    let levels = format.levels().iter().map(|l| l.format.clone()).collect();
    Format::with_mode_order(levels, &modes).map_err(|e| LowerError(e.to_string()))
}
