//! Lowering: concrete index notation plus formats to imperative IR.
//!
//! The pass follows Chou's code-generation algorithm (§4.5, Fig 4-5) over the loop order
//! chosen by [`order`]: for each index variable it builds the merge lattice
//! ([`lattice`]), decides per operand level whether to iterate it or `locate` into it
//! (from the level's capabilities and properties only), emits the loops and cases, and
//! recurses into each case with the operands that are absent from it removed. Level
//! functions come from the level formats, so no level kind is named here.
//!
//! Outputs: an all-dense output is written in place (`=` or `+=` when reductions scatter);
//! any other output format is produced as a stream of `(coordinates, value)` emits that
//! the runtime assembles into the requested format (sorting only when the stream is not
//! already in order).

mod derived;
mod lattice;
mod parallel;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::{Add, Sub};

use lattice::Point;

use crate::format::{Format, Level, LevelCoord, LevelSite};
use crate::ir::{
    ArrayRef, BinOp, Expr, Function, Local, LocalType, LoopKind, OperandId, OperandInfo,
    OutputMode, ParamKind, ParamRef, Scratch, Stmt, Symbol, Type, Var,
};
use crate::notation::ast::Op;
use crate::notation::cin::{Statement, TensorId, VarId};
use crate::schedule::lexpr::{self, LExpr};
use crate::schedule::{reordered_format, Concrete, Parallel};
use crate::tensor::ValueType;

pub use crate::schedule::LowerError;

/// A tensor as the kernel sees it: one per distinct (tensor, layout) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Operand {
    /// Name hint (`A`, or `A_1` for a reordered copy).
    pub name: String,
    /// The statement's tensor.
    pub tensor: TensorId,
    /// The layout the kernel reads; differs from the tensor's when reordered.
    pub format: Format,
}

/// Result of lowering one statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The kernel.
    pub function: Function,
    /// What each of the function's operands is, by [`OperandId`].
    pub operands: Vec<Operand>,
    /// The loops, outermost first, by user-visible name.
    pub loops: Vec<String>,
}

/// One use of a tensor on the right-hand side.
struct Occurrence {
    operand: usize,
    levels: Vec<Level>,
    level_vars: Vec<VarId>,
}

/// Per-path state: which levels of each occurrence are resolved, at which positions.
#[derive(Clone)]
struct Scope {
    positions: Vec<Vec<Expr>>,
    segment_ends: Vec<Vec<Option<Expr>>>,
    /// Variables already recovered by a fused position space.
    recovered: BTreeSet<VarId>,
    /// Position spaces entered, by pos variable.
    segments: BTreeMap<VarId, derived::Segment>,
    /// Split variables whose inner loop already stops at the parent's extent.
    guarded: BTreeSet<VarId>,
    /// Dense-output updates inside a fused position space are gathered in a private
    /// accumulator while they hit the same entry.
    coalesce: Option<Coalesce>,
}

/// The accumulator of a fused position space (see [`Scope::coalesce`]).
#[derive(Clone)]
struct Coalesce {
    /// Name stem of the accumulator (`_acc`), its entry (`_at`) and `_first` flag.
    stem: String,
    /// Parallel loops enclosing it.
    depth: usize,
    /// Each output entry is updated by one run of consecutive positions (the output's
    /// coordinates are the space's upper coordinates). Only a loop iteration's first and
    /// last runs can then be shared with other iterations; the runs between are private.
    contiguous_runs: bool,
}

impl Scope {
    fn resolved(&self, o: usize) -> usize {
        self.positions[o].len()
    }
    fn with(&self, o: usize, pos: Expr, segment_end: Option<Expr>) -> Scope {
        let mut s = self.clone();
        s.positions[o].push(pos);
        s.segment_ends[o].push(segment_end);
        s
    }
}

enum Dest {
    Output,
    /// Accumulate into workspace `name` at its variables' current values, recording
    /// each newly touched (linearised) coordinate; `depth` parallel loops enclose it.
    Workspace {
        name: String,
        vars: Vec<VarId>,
        depth: usize,
    },
    Temp {
        name: String,
        touched: Option<String>,
    },
    /// Accumulate into a precomputed workspace at its variables' current values.
    Local {
        name: String,
        vars: Vec<VarId>,
        depth: usize,
    },
}

struct Lowerer<'a> {
    plan: &'a Concrete,
    stmt: &'a Statement,
    operands: Vec<Operand>,
    occurrences: Vec<Occurrence>,
    temps: usize,
    dense_output: bool,
    store_accumulates: bool,
    /// Enclosing parallel loops, outermost first, with the reductions each must combine.
    parallel: Vec<(VarId, Parallel, Vec<crate::ir::Reduction>)>,
    /// Number of enclosing parallel loops where each scalar temporary is declared.
    temp_depth: BTreeMap<String, usize>,
    /// Conditions the inputs must meet (asserted bounds), with the message if not.
    assumptions: Vec<(Expr, String)>,
    /// Workspaces by the number of parallel loops around them: each is allocated per
    /// thread of the innermost one (or once, outside any).
    local_arrays: Vec<(usize, Local)>,
    /// The variable of each index variable of the plan, by `VarId`.
    index_vars: Vec<Var>,
    /// The function's variable and scratch tables, with the keys lowering knows them by.
    tables: RefCell<Tables>,
}

/// Variables and scratch arrays while lowering creates them. An iterator's state is
/// declared by one method and read by others (`q{stem}`, `{stem}_end`), so lowering
/// refers to it by a key that names the state; each key is one IR variable (also the hint
/// for its printed name), and the backend makes printed names unique.
struct Tables {
    function: Function,
    vars: HashMap<String, Var>,
    /// Variables first met in an expression, typed `Index` until a declaration says more.
    untyped: HashSet<Var>,
    scratch: HashMap<String, Scratch>,
}

/// What lowering may name a variable by: its key, or the variable itself.
trait VarKey {
    fn resolve(self, tables: &mut Tables, ty: Option<Type>) -> Var;
}

impl VarKey for Var {
    fn resolve(self, _: &mut Tables, _: Option<Type>) -> Var {
        self
    }
}

impl<S: AsRef<str>> VarKey for S {
    fn resolve(self, tables: &mut Tables, ty: Option<Type>) -> Var {
        let key = self.as_ref();
        match tables.vars.get(key) {
            Some(&v) => {
                if let Some(ty) = ty {
                    if tables.untyped.remove(&v) {
                        tables.function.vars[v.index()].ty = ty;
                    }
                }
                v
            }
            None => {
                let v = tables.function.fresh_var(key, ty.unwrap_or(Type::Index));
                if ty.is_none() {
                    tables.untyped.insert(v);
                }
                tables.vars.insert(key.to_string(), v);
                v
            }
        }
    }
}

/// Lower a scheduled concrete statement.
pub fn lower(plan: &Concrete) -> Result<Lowered, LowerError> {
    let stmt = &plan.statement;
    let output = &stmt.tensors[0];
    let mut operands = vec![Operand {
        name: output.name.clone(),
        tensor: 0,
        format: output.format.clone(),
    }];
    let mut occurrences = Vec::new();
    for (o, (t, indices)) in plan.accesses.iter().enumerate() {
        let tensor = &stmt.tensors[*t];
        let reordered = plan.reordered.contains(&o);
        let format = if reordered {
            reordered_format(&tensor.format, &plan.order, indices)?
        } else {
            tensor.format.clone()
        };
        let operand = match operands
            .iter()
            .position(|op| op.tensor == *t && op.format == format)
        {
            Some(i) => i,
            None => {
                let name = if operands.iter().any(|op| op.tensor == *t) || format != tensor.format {
                    format!("{}_{}", tensor.name, o)
                } else {
                    tensor.name.clone()
                };
                operands.push(Operand {
                    name,
                    tensor: *t,
                    format: format.clone(),
                });
                operands.len() - 1
            }
        };
        let vars = if reordered {
            let mode_order = format
                .mode_order()
                .expect("only plain formats are reordered");
            mode_order.iter().map(|&m| indices[m]).collect()
        } else {
            plan.level_vars[o].clone()
        };
        occurrences.push(Occurrence {
            operand,
            levels: format.levels().iter().map(|l| l.format.clone()).collect(),
            level_vars: vars,
        });
    }
    let dense_output = output.format.is_all_dense();
    let position = |v: VarId| {
        plan.order
            .iter()
            .position(|&u| u == v)
            .unwrap_or(usize::MAX)
    };
    let free: BTreeSet<VarId> = stmt.lhs.iter().copied().collect();
    let partly_free = |v: VarId| plan.roots(v).iter().any(|r| free.contains(r));
    let partly_summed = |v: VarId| plan.roots(v).iter().any(|r| !free.contains(r));
    let last_free = plan
        .order
        .iter()
        .filter(|&&v| partly_free(v))
        .map(|&v| position(v))
        .max();
    let scatters = plan
        .order
        .iter()
        .any(|&v| partly_summed(v) && last_free.is_some_and(|l| position(v) < l));
    let count = plan.accesses.len();
    let store_accumulates = stmt.accumulate || scatters;
    let output_mode = if dense_output {
        OutputMode::Dense {
            accumulate: store_accumulates,
        }
    } else {
        OutputMode::Emit {
            order: output.format.order(),
        }
    };
    let operand_info = operands
        .iter()
        .map(|op| OperandInfo {
            hint: op.name.clone(),
            values: ValueType::F64,
        })
        .collect();
    let mut function = Function::new(operand_info, stmt.vars.len(), output_mode);
    function.extent_hints = stmt.vars.iter().map(|v| v.name.clone()).collect();
    let index_vars = plan
        .vars
        .iter()
        .map(|v| function.fresh_var(&v.name, Type::Index))
        .collect();
    let mut lowerer = Lowerer {
        plan,
        stmt,
        operands,
        occurrences,
        temps: 0,
        dense_output,
        store_accumulates,
        parallel: Vec::new(),
        temp_depth: BTreeMap::new(),
        assumptions: Vec::new(),
        local_arrays: Vec::new(),
        index_vars,
        tables: RefCell::new(Tables {
            function,
            vars: HashMap::new(),
            untyped: HashSet::new(),
            scratch: HashMap::new(),
        }),
    };
    let scope = Scope {
        positions: vec![Vec::new(); count],
        segment_ends: vec![Vec::new(); count],
        recovered: BTreeSet::new(),
        segments: BTreeMap::new(),
        coalesce: None,
        guarded: BTreeSet::new(),
    };
    let body = lowerer.lower(&plan.order, &plan.rhs, &Dest::Output, &scope)?;
    let locals = lowerer.locals_at(0);
    let mut function = lowerer.tables.into_inner().function;
    function.body = crate::ir::simplify_stmts(body);
    function.assumptions = lowerer.assumptions;
    function.locals = locals;
    if cfg!(debug_assertions) {
        crate::ir::verify(&function).map_err(|e| LowerError(e.to_string()))?;
    }
    Ok(Lowered {
        function,
        operands: lowerer.operands,
        loops: plan.loops().iter().map(|s| s.to_string()).collect(),
    })
}

/// How one variable's loop treats each iterator.
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

impl Lowerer<'_> {
    /// The variable `key` names, declared with type `ty`.
    fn named(&self, key: impl VarKey, ty: Type) -> Var {
        key.resolve(&mut self.tables.borrow_mut(), Some(ty))
    }

    /// The variable `key` names, whatever its type.
    fn named_any(&self, key: impl VarKey) -> Var {
        key.resolve(&mut self.tables.borrow_mut(), None)
    }

    /// The value of the variable `key` names.
    fn iv(&self, key: impl VarKey) -> Expr {
        Expr::Var(self.named_any(key))
    }

    /// The scratch array `key` names.
    fn scratch(&self, key: &str, ty: LocalType) -> Scratch {
        let mut tables = self.tables.borrow_mut();
        if let Some(&s) = tables.scratch.get(key) {
            return s;
        }
        let s = tables.function.fresh_scratch(key, ty);
        tables.scratch.insert(key.to_string(), s);
        s
    }

    /// A key no other state has: `%` never starts a tensor or variable name.
    fn fresh(&mut self, stem: &str) -> String {
        self.temps += 1;
        format!("%\u{1}{stem}{}", self.temps - 1)
    }

    /// A fresh scalar temporary, recorded with the parallel depth it is private to.
    fn temp(&mut self) -> String {
        let name = self.fresh("t");
        self.temp_depth.insert(name.clone(), self.parallel.len());
        name
    }

    fn name(&self, v: VarId) -> Var {
        self.index_vars[v]
    }

    fn var(&self, v: VarId) -> Expr {
        Expr::Var(self.name(v))
    }

    /// The extent of `v`'s loop, its symbols resolved: a storage level's size becomes the
    /// operand's parameter, a position space's length the bounds lowering declared.
    fn size(&self, v: VarId) -> Expr {
        self.plan.vars[v]
            .extent
            .resolve_symbols(&|symbol| match symbol {
                Symbol::AccessLevelSize { access, level } => Expr::Param(ParamRef::Level {
                    operand: OperandId(self.occurrences[access].operand),
                    level,
                    kind: ParamKind::Size,
                }),
                Symbol::SegmentLength { var } => {
                    let stem = format!("#\u{1}{}", self.plan.vars[var].name);
                    self.iv(format!("{stem}\u{1}_end")) - self.iv(format!("{stem}\u{1}_begin"))
                }
                Symbol::CoordRange { var } => {
                    let stem = format!("@\u{1}{}", self.plan.vars[var].name);
                    self.iv(format!("{stem}\u{1}_cend")) - self.iv(format!("{stem}\u{1}_cbegin"))
                }
            })
    }

    /// True when `v` is, or is derived from, a variable of the output.
    fn is_free(&self, v: VarId) -> bool {
        self.plan.roots(v).iter().any(|r| self.stmt.lhs.contains(r))
    }

    /// True when the next unresolved level of occurrence `o` stores variable `v`.
    fn indexes(&self, o: usize, v: VarId, scope: &Scope) -> bool {
        let occ = &self.occurrences[o];
        occ.level_vars.get(scope.resolved(o)) == Some(&v)
    }

    fn lower(
        &mut self,
        remaining: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let Some((&v, rest)) = remaining.split_first() else {
            return self.store(expr, dest, scope);
        };
        if scope.recovered.contains(&v) {
            return self.lower(rest, expr, dest, scope);
        }
        let precomputed = self
            .plan
            .roots(v)
            .into_iter()
            .find_map(|r| expr.find_precompute(r).cloned());
        if let Some(p) = precomputed {
            return self.precompute(&p, remaining, expr, dest, scope);
        }
        let summed = self
            .plan
            .roots(v)
            .into_iter()
            .find_map(|r| expr.find_sum(r).cloned().map(|sum| (r, sum)));
        if let Some((root, sum)) = summed {
            let LExpr::Sum(_, _, body) = &sum else {
                unreachable!()
            };
            let mut inside = Vec::new();
            lexpr::summed_vars(&sum, &mut inside);
            let sub: Vec<VarId> = remaining
                .iter()
                .copied()
                .filter(|&u| self.derives_from_any(u, &inside))
                .collect();
            let others: Vec<VarId> = remaining
                .iter()
                .copied()
                .filter(|&u| !self.derives_from_any(u, &inside))
                .collect();
            let temp = self.temp();
            let mut stmts = vec![Stmt::Decl(
                self.named(temp.clone(), Type::Value(ValueType::F64)),
                Expr::Float(0.0),
            )];
            let into = Dest::Temp {
                name: temp.clone(),
                touched: None,
            };
            stmts.extend(self.lower(&sub, body, &into, scope)?);
            stmts.extend(self.lower(
                &others,
                &expr.replace_sum(root, self.named_any(&temp)),
                dest,
                scope,
            )?);
            return Ok(stmts);
        }
        if matches!(dest, Dest::Output) && remaining.iter().all(|&u| !self.is_free(u)) {
            let temp = self.temp();
            let touched = (!self.dense_output).then(|| format!("{temp}\u{1}_touched"));
            let mut stmts = vec![Stmt::Decl(
                self.named(temp.clone(), Type::Value(ValueType::F64)),
                Expr::Float(0.0),
            )];
            if let Some(flag) = &touched {
                stmts.push(Stmt::Decl(
                    self.named(flag.clone(), Type::Bool),
                    Expr::Bool(false),
                ));
            }
            let into = Dest::Temp {
                name: temp.clone(),
                touched: touched.clone(),
            };
            stmts.extend(self.lower(remaining, expr, &into, scope)?);
            let store = self.store(&LExpr::Temp(self.named_any(&temp)), dest, scope)?;
            match touched {
                Some(flag) => stmts.push(Stmt::If(self.iv(flag), store, vec![])),
                None => stmts.extend(store),
            }
            return Ok(stmts);
        }
        let free_rest: Vec<VarId> = remaining
            .iter()
            .copied()
            .filter(|&u| self.is_free(u))
            .collect();
        if matches!(dest, Dest::Output)
            && !self.dense_output
            && free_rest.len() == 1
            && !self.is_free(v)
        {
            return self.through_workspace(free_rest[0], remaining, expr, scope);
        }
        if let Some(rel) = self.plan.replaced_by(v).cloned() {
            return self.recover(v, &rel, rest, expr, dest, scope);
        }
        let (setup, scope) = self.enter_position_space(v, scope)?;
        let scope = &scope;
        let tags = self.plan.vars[v].tags.clone();
        if let Some(p) = &tags.parallel {
            self.parallel.push((v, p.clone(), Vec::new()));
        }
        let indexes = |o: usize| self.indexes(o, v, scope);
        let loops = match lattice::build(expr, &indexes) {
            None => {
                let (mut body, mut inner) = self.position_trackers(v, scope);
                let end = match self.tail_of_split(v, rest) {
                    Some((parent, end)) => {
                        inner.guarded.insert(parent);
                        end
                    }
                    None => self.size(v),
                };
                body.extend(self.lower(rest, expr, dest, &inner)?);
                body.extend(self.flush_coalesced(&inner, scope)?);
                Ok(vec![Stmt::For {
                    var: self.name(v),
                    start: Expr::Int(0),
                    end,
                    body,
                    kind: LoopKind::Serial,
                }])
            }
            Some(points) => self.merge(v, rest, expr, dest, scope, &points),
        };
        let (reductions, locals) = match tags.parallel {
            Some(_) => {
                let locals = self.locals_at(self.parallel.len());
                (self.parallel.pop().map(|p| p.2).unwrap_or_default(), locals)
            }
            None => (Vec::new(), Vec::new()),
        };
        let mut stmts = setup;
        stmts.extend(self.tag_loop(v, loops?, &tags, reductions, locals)?);
        Ok(stmts)
    }

    /// Take the workspaces allocated inside `depth` parallel loops.
    fn locals_at(&mut self, depth: usize) -> Vec<Local> {
        let (here, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.local_arrays)
            .into_iter()
            .partition(|(d, _)| *d == depth);
        self.local_arrays = rest;
        here.into_iter().map(|(_, local)| local).collect()
    }

    /// Allocate a zeroed workspace private to the innermost enclosing parallel loop.
    fn local(&mut self, name: &str, len: Expr, ty: LocalType) {
        let array = self.scratch(name, ty);
        if !self.local_arrays.iter().any(|(_, l)| l.array == array) {
            let local = Local { array, len };
            self.local_arrays.push((self.parallel.len(), local));
        }
    }

    /// `workspace(vars) = sum over private of body`: zero the workspace where the first
    /// private variable's loop starts, run the producer loops (the private variables and
    /// the workspace's) into it, then the rest with the workspace read in its place.
    fn precompute(
        &mut self,
        p: &lexpr::Precompute,
        remaining: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let producer: Vec<VarId> = remaining
            .iter()
            .copied()
            .filter(|&u| self.derives_from_any(u, &p.private) || self.derives_from_any(u, &p.vars))
            .collect();
        let consumer: Vec<VarId> = remaining
            .iter()
            .copied()
            .filter(|&u| !self.derives_from_any(u, &p.private))
            .collect();
        let sparse_consumer = matches!(dest, Dest::Output)
            && !self.dense_output
            && !p.vars.is_empty()
            && consumer.starts_with(&p.vars);
        if sparse_consumer {
            return self.precompute_touched(p, &producer, &consumer, expr, dest, scope);
        }
        if !self.dense_output {
            let names: Vec<&str> = p
                .vars
                .iter()
                .map(|&v| self.plan.vars[v].name.as_str())
                .collect();
            return Err(LowerError(format!(
                "precompute: precondition failed: a sparse output reads the workspace `{}` \
                 only along its variables ({}) as the next loops after the producer, in that \
                 order",
                p.workspace,
                names.join(", ")
            )));
        }
        let name = format!("%\u{1}{}", p.workspace);
        let len = p
            .vars
            .iter()
            .map(|&v| self.size(v))
            .reduce(|a, b| a * b)
            .unwrap_or(Expr::Int(1));
        let depth = self.parallel.len();
        self.local(&name, len.clone(), LocalType::Value);
        let array = ArrayRef::Scratch(self.scratch(&name, LocalType::Value));
        let q = format!("{name}\u{1}_q");
        let mut stmts = vec![Stmt::For {
            var: self.named(q.clone(), Type::Index),
            start: Expr::Int(0),
            end: len,
            body: vec![Stmt::Store {
                array,
                index: self.iv(q),
                value: Expr::Float(0.0),
                accumulate: false,
            }],
            kind: LoopKind::Serial,
        }];
        let into = Dest::Local {
            name: name.clone(),
            vars: p.vars.clone(),
            depth,
        };
        stmts.extend(self.lower(&producer, &p.body, &into, scope)?);
        let read = expr.read_workspace(&p.workspace, self.scratch(&name, LocalType::Value));
        stmts.extend(self.lower(&consumer, &read, dest, scope)?);
        Ok(stmts)
    }

    /// A precomputed workspace read by a sparse output along its variables: the producer
    /// records the coordinates it touches, and the consumer visits only those, in order,
    /// clearing each after use (the Gustavson pattern, so nothing is zeroed per row).
    fn precompute_touched(
        &mut self,
        p: &lexpr::Precompute,
        producer: &[VarId],
        consumer: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let name = format!("%\u{1}{}", p.workspace);
        let vals = self.scratch(&format!("{name}\u{1}_vals"), LocalType::Value);
        let read = expr.read_workspace(&p.workspace, vals);
        let rest = &consumer[p.vars.len()..];
        self.touched_workspace(
            &name,
            &p.vars,
            |lowerer, into| lowerer.lower(producer, &p.body, into, scope),
            |lowerer| lowerer.resolve_all(&p.vars, rest, &read, dest, scope),
        )
    }

    /// True when `u` is, or is derived from, one of `vars`.
    fn derives_from_any(&self, u: VarId, vars: &[VarId]) -> bool {
        self.plan.roots(u).iter().any(|r| vars.contains(r))
    }

    /// Reductions outside the output's last variable `w` scatter into it: gather them in a
    /// dense workspace row, then emit the touched coordinates in increasing order so the
    /// output needs no sort.
    fn through_workspace(
        &mut self,
        w: VarId,
        remaining: &[VarId],
        expr: &LExpr,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let name = self.fresh("w");
        let vals = ArrayRef::Scratch(self.scratch(&format!("{name}\u{1}_vals"), LocalType::Value));
        self.touched_workspace(
            &name,
            &[w],
            |lowerer, into| lowerer.lower(remaining, expr, into, scope),
            |lowerer| {
                Ok(vec![Stmt::Emit {
                    coords: lowerer.stmt.lhs.iter().map(|&v| lowerer.var(v)).collect(),
                    value: Expr::load(vals, lowerer.var(w)),
                }])
            },
        )
    }

    /// A dense workspace `name` over `vars` that records the coordinates it touches
    /// (linearised row-major): `produce` accumulates into it, the touched list is put in
    /// order, then for each touched coordinate `vars` are declared, `consume` runs, and
    /// the entry is cleared.
    fn touched_workspace(
        &mut self,
        name: &str,
        vars: &[VarId],
        produce: impl FnOnce(&mut Self, &Dest) -> Result<Vec<Stmt>, LowerError>,
        consume: impl FnOnce(&mut Self) -> Result<Vec<Stmt>, LowerError>,
    ) -> Result<Vec<Stmt>, LowerError> {
        let width = vars
            .iter()
            .map(|&v| self.size(v))
            .reduce(|a, b| a * b)
            .expect("a workspace has variables");
        for (suffix, ty) in [
            ("vals", LocalType::Value),
            ("seen", LocalType::Flag),
            ("list", LocalType::Index),
        ] {
            self.local(&format!("{name}\u{1}_{suffix}"), width.clone(), ty);
        }
        let count = format!("{name}\u{1}_count");
        let list = self.scratch(&format!("{name}\u{1}_list"), LocalType::Index);
        let mut stmts = vec![Stmt::Decl(
            self.named(count.clone(), Type::Index),
            Expr::Int(0),
        )];
        let into = Dest::Workspace {
            name: name.to_string(),
            vars: vars.to_vec(),
            depth: self.parallel.len(),
        };
        stmts.extend(produce(self, &into)?);
        stmts.push(Stmt::OrderTouched {
            list,
            len: self.iv(count.clone()),
            flags: self.scratch(&format!("{name}\u{1}_seen"), LocalType::Flag),
        });
        let at = format!("{name}\u{1}_p");
        let touched = Expr::load(ArrayRef::Scratch(list), self.iv(at.clone()));
        let (mut body, linear) = match vars {
            [v] => (
                vec![Stmt::Decl(self.named(self.name(*v), Type::Index), touched)],
                self.var(*v),
            ),
            _ => {
                // Peel the variables off the linearised coordinate, innermost first.
                let linear = format!("{name}\u{1}_at");
                let mut coords = Vec::new();
                let mut stride = Expr::Int(1);
                for (k, &v) in vars.iter().enumerate().rev() {
                    let above = Expr::bin(BinOp::Div, self.iv(linear.clone()), stride.clone());
                    let coord = if k == 0 {
                        above
                    } else {
                        Expr::bin(BinOp::Rem, above, self.size(v))
                    };
                    coords.push(Stmt::Decl(self.named(self.name(v), Type::Index), coord));
                    stride = stride * self.size(v);
                }
                let mut body = vec![Stmt::Decl(self.named(linear.clone(), Type::Index), touched)];
                body.extend(coords.into_iter().rev());
                (body, self.iv(linear))
            }
        };
        body.extend(consume(self)?);
        for (suffix, zero, ty) in [
            ("vals", Expr::Float(0.0), LocalType::Value),
            ("seen", Expr::Int(0), LocalType::Flag),
        ] {
            body.push(Stmt::Store {
                array: ArrayRef::Scratch(self.scratch(&format!("{name}\u{1}_{suffix}"), ty)),
                index: linear.clone(),
                value: zero,
                accumulate: false,
            });
        }
        stmts.push(Stmt::For {
            var: self.named(at, Type::Index),
            start: Expr::Int(0),
            end: self.iv(count),
            body,
            kind: LoopKind::Serial,
        });
        Ok(stmts)
    }

    /// The value of the expression at the current positions, stored to the destination.
    fn store(&mut self, expr: &LExpr, dest: &Dest, scope: &Scope) -> Result<Vec<Stmt>, LowerError> {
        let value = self.value(expr, scope);
        let target = match dest {
            Dest::Temp { name, .. } => parallel::Target::Temp(name),
            Dest::Workspace { depth, .. } => parallel::Target::Workspace { depth: *depth },
            Dest::Local { depth, vars, .. } => parallel::Target::Local {
                depth: *depth,
                vars,
            },
            Dest::Output if self.dense_output => parallel::Target::DenseOutput,
            Dest::Output => parallel::Target::Emit,
        };
        let atomic = self.resolve_races(target)?;
        let update = |s: Stmt| if atomic { Stmt::Atomic(Box::new(s)) } else { s };
        Ok(match dest {
            Dest::Temp { name, touched } => {
                let mut s = vec![update(Stmt::Assign(
                    self.named_any(name.clone()),
                    Add::add(self.iv(name.clone()), value),
                ))];
                if let Some(flag) = touched {
                    s.push(Stmt::Assign(self.named_any(flag.clone()), Expr::Bool(true)));
                }
                s
            }
            Dest::Local { name, vars, .. } => vec![update(Stmt::Store {
                array: ArrayRef::Scratch(self.scratch(name, LocalType::Value)),
                index: self.linear_index(vars),
                value,
                accumulate: true,
            })],
            Dest::Workspace { name, vars, .. } => {
                let at = self.linear_index(vars);
                let count = format!("{name}\u{1}_count");
                let seen =
                    ArrayRef::Scratch(self.scratch(&format!("{name}\u{1}_seen"), LocalType::Flag));
                vec![
                    Stmt::If(
                        Expr::Not(Box::new(Expr::load(seen.clone(), at.clone()))),
                        vec![
                            Stmt::Store {
                                array: seen,
                                index: at.clone(),
                                value: Expr::Int(1),
                                accumulate: false,
                            },
                            Stmt::Store {
                                array: ArrayRef::Scratch(
                                    self.scratch(&format!("{name}\u{1}_list"), LocalType::Index),
                                ),
                                index: self.iv(count.clone()),
                                value: at.clone(),
                                accumulate: false,
                            },
                            Stmt::Assign(
                                self.named_any(count.clone()),
                                self.iv(count) + Expr::Int(1),
                            ),
                        ],
                        vec![],
                    ),
                    Stmt::Store {
                        array: ArrayRef::Scratch(
                            self.scratch(&format!("{name}\u{1}_vals"), LocalType::Value),
                        ),
                        index: at,
                        value,
                        accumulate: true,
                    },
                ]
            }
            Dest::Output if self.dense_output && scope.coalesce.is_some() => {
                let coalesce = scope.coalesce.clone().expect("checked");
                if coalesce.depth != self.parallel.len() {
                    return Err(LowerError(
                        "a parallel loop inside a fused position space updates the output; \
                         parallelize the position space's outer loop instead"
                            .into(),
                    ));
                }
                let stem = &coalesce.stem;
                let (acc, at) = (format!("{stem}\u{1}_acc"), format!("{stem}\u{1}_at"));
                let flush = self.flush_store(stem, atomic, coalesce.contiguous_runs);
                vec![
                    Stmt::If(
                        Expr::bin(BinOp::Ne, self.output_position(), self.iv(at.clone())),
                        vec![
                            flush,
                            Stmt::Assign(self.named_any(at), self.output_position()),
                            Stmt::Assign(self.named_any(acc.clone()), Expr::Float(0.0)),
                        ],
                        vec![],
                    ),
                    Stmt::Assign(self.named_any(acc.clone()), self.iv(acc) + value),
                ]
            }
            Dest::Output if self.dense_output => {
                let out = &self.operands[0];
                let mut pos = Expr::Int(0);
                for (k, spec) in out.format.levels().iter().enumerate() {
                    let LevelCoord::Mode(m) = spec.coord else {
                        unreachable!("plain format")
                    };
                    let site = self.site(0, None, k);
                    let coord = self.var(self.stmt.lhs[m]);
                    pos = spec
                        .format
                        .locate(&site, &pos, &coord, &Expr::Int(0))
                        .expect("dense levels locate")
                        .0;
                }
                vec![update(Stmt::Store {
                    array: ArrayRef::Values(OperandId(0)),
                    index: pos,
                    value,
                    accumulate: self.store_accumulates,
                })]
            }
            Dest::Output => vec![Stmt::Emit {
                coords: self.stmt.lhs.iter().map(|&v| self.var(v)).collect(),
                value,
            }],
        })
    }

    /// Position of the current output coordinates in the dense output's values.
    fn output_position(&self) -> Expr {
        let out = &self.operands[0];
        let mut pos = Expr::Int(0);
        for (k, spec) in out.format.levels().iter().enumerate() {
            let LevelCoord::Mode(m) = spec.coord else {
                unreachable!("plain format")
            };
            let site = self.site(0, None, k);
            pos = spec
                .format
                .locate(&site, &pos, &self.var(self.stmt.lhs[m]), &Expr::Int(0))
                .expect("dense levels locate")
                .0;
        }
        pos
    }

    /// `if (at >= 0) out[at] += acc;` for a coalescing accumulator.
    /// Add the accumulator into its output entry, if it has one. With `first_only`, only
    /// the first flush of a loop iteration is atomic (see [`Coalesce::contiguous_runs`]).
    fn flush_store(&self, stem: &str, atomic: bool, first_only: bool) -> Stmt {
        let store = Stmt::Store {
            array: ArrayRef::Values(OperandId(0)),
            index: self.iv(format!("{stem}\u{1}_at")),
            value: self.iv(format!("{stem}\u{1}_acc")),
            accumulate: true,
        };
        let flush = match (atomic, first_only) {
            (false, _) => vec![store],
            (true, false) => vec![Stmt::Atomic(Box::new(store))],
            (true, true) => {
                let first = format!("{stem}\u{1}_first");
                vec![Stmt::If(
                    self.iv(first.clone()),
                    vec![
                        Stmt::Atomic(Box::new(store.clone())),
                        Stmt::Assign(self.named_any(first), Expr::Bool(false)),
                    ],
                    vec![store],
                )]
            }
        };
        Stmt::If(
            Expr::bin(BinOp::Ge, self.iv(format!("{stem}\u{1}_at")), Expr::Int(0)),
            flush,
            vec![],
        )
    }

    /// The last flush of the accumulator that `inner` opened (none if it opened none).
    fn flush_coalesced(&mut self, inner: &Scope, outer: &Scope) -> Result<Vec<Stmt>, LowerError> {
        match &inner.coalesce {
            Some(coalesce) if outer.coalesce.is_none() => {
                let atomic = self.resolve_races(parallel::Target::DenseOutput)?;
                Ok(vec![self.flush_store(&coalesce.stem, atomic, false)])
            }
            _ => Ok(vec![]),
        }
    }

    /// Row-major position of the variables' current values in a dense workspace.
    fn linear_index(&self, vars: &[VarId]) -> Expr {
        vars.iter()
            .fold(Expr::Int(0), |acc, &v| acc * self.size(v) + self.var(v))
    }

    fn value(&self, expr: &LExpr, scope: &Scope) -> Expr {
        match expr {
            LExpr::Access(o) => {
                let occ = &self.occurrences[*o];
                let mut pos = scope.positions[*o].last().cloned().unwrap_or(Expr::Int(0));
                // A dense operand read against its layout (see `order::conflicts`) still has
                // levels whose variables were bound by outer loops: locate them now.
                for k in scope.resolved(*o)..occ.levels.len() {
                    let site = self.site(occ.operand, Some(*o), k);
                    let (at, found) = occ.levels[k]
                        .locate(&site, &pos, &self.var(occ.level_vars[k]), &Expr::Int(0))
                        .expect("only dense operands are read against their layout");
                    debug_assert_eq!(found, Expr::Bool(true), "dense levels always find");
                    pos = at;
                }
                Expr::load(ArrayRef::Values(OperandId(occ.operand)), pos)
            }
            LExpr::Literal(v) => Expr::Float(*v),
            LExpr::Neg(a) => Expr::Neg(Box::new(self.value(a, scope))),
            LExpr::Binary(op, a, b) => {
                let op = match op {
                    Op::Add => BinOp::Add,
                    Op::Sub => BinOp::Sub,
                    Op::Mul => BinOp::Mul,
                    Op::Div => BinOp::Div,
                };
                Expr::bin(op, self.value(a, scope), self.value(b, scope))
            }
            LExpr::Temp(t) => self.iv(t.clone()),
            LExpr::WorkspaceRead(name, vars) => {
                Expr::load(ArrayRef::Scratch(*name), self.linear_index(vars))
            }
            LExpr::Precomputed(_) => {
                unreachable!("a workspace is computed before its first private loop")
            }
            LExpr::Zero => Expr::Float(0.0),
            LExpr::Sum(..) => unreachable!("every sum is lowered before its variable's loop ends"),
        }
    }

    /// Level site of occurrence `o` (or the output when `o` is None and `operand` is 0) at
    /// level `k`.
    fn site(&self, operand: usize, occurrence: Option<usize>, k: usize) -> LevelSite {
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

    fn occ_site(&self, o: usize, scope: &Scope) -> LevelSite {
        self.site(self.occurrences[o].operand, Some(o), scope.resolved(o))
    }

    fn level(&self, o: usize, scope: &Scope) -> &Level {
        &self.occurrences[o].levels[scope.resolved(o)]
    }

    fn parent_pos(&self, o: usize, scope: &Scope) -> Expr {
        scope.positions[o].last().cloned().unwrap_or(Expr::Int(0))
    }

    /// Name stem of occurrence `o`'s current level: `A2`, or `A_o1_2` when operand `A`
    /// is read by several occurrences (each has its own iterators).
    fn stem(&self, o: usize, scope: &Scope) -> String {
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
    fn pos_range(&self, o: usize, scope: &Scope) -> (Expr, Expr) {
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

    fn check_locatable(&self, o: usize, scope: &Scope) -> Result<(), LowerError> {
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

    fn strategy(&self, points: &[Point], scope: &Scope) -> Result<Strategy, LowerError> {
        let caps = |o: usize| self.level(o, scope).capabilities();
        let props = |o: usize| self.level(o, scope).properties();
        let all: BTreeSet<usize> = points
            .iter()
            .flat_map(|p| p.iterators.iter().copied())
            .collect();
        let top_universe = points.iter().any(|p| p.universe);
        let strategy = if points.len() == 1 {
            let p = &points[0];
            let iterated: Vec<usize> = p
                .iterators
                .iter()
                .copied()
                .filter(|&o| !caps(o).locate)
                .collect();
            let locatable: Vec<usize> = p
                .iterators
                .iter()
                .copied()
                .filter(|&o| caps(o).locate)
                .collect();
            if !iterated.is_empty() {
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
            }
        } else if top_universe || all.iter().any(|&o| props(o).full || !props(o).ordered) {
            let (located, cursors) = all.iter().partition(|&&o| props(o).full || caps(o).locate);
            Strategy::Dense { cursors, located }
        } else {
            Strategy::Coiterate {
                iterated: all.into_iter().collect(),
                located: vec![],
            }
        };
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

    fn merge(
        &mut self,
        v: VarId,
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
        points: &[Point],
    ) -> Result<Vec<Stmt>, LowerError> {
        match self.strategy(points, scope)? {
            Strategy::Coiterate { iterated, located } if iterated.len() == 1 => {
                self.single_loop(v, rest, expr, dest, scope, iterated[0], &located)
            }
            Strategy::Coiterate { iterated, located } => {
                self.two_finger(v, rest, expr, dest, scope, points, &iterated, &located)
            }
            Strategy::Dense { cursors, located } => {
                self.dense_loop(v, rest, expr, dest, scope, points, &cursors, &located)
            }
        }
    }

    /// Declarations of `p`, `found` for located iterators, and the scope with them.
    fn locate_all(
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
    fn search(&self, o: usize, v: VarId, scope: &Scope, name: &str) -> (Vec<Stmt>, (Expr, Expr)) {
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let (begin, end) = self.pos_range(o, scope);
        let crd = |q: Expr| level.pos_access(&site, &q).expect("searchable level").0;
        let (stmts, pos, found) = self.lower_bound(name, begin, end, &crd, self.var(v));
        (stmts, (pos, found))
    }

    /// True when a level can be located into: by `locate`, or by binary search in an
    /// ordered segment of unique coordinates.
    fn reachable(&self, o: usize, scope: &Scope) -> bool {
        let level = self.level(o, scope);
        let props = level.properties();
        level.capabilities().locate
            || (props.ordered && props.unique && level.capabilities().coord_pos_iter)
    }

    #[allow(clippy::too_many_arguments)]
    fn single_loop(
        &mut self,
        v: VarId,
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
        o: usize,
        located: &[usize],
    ) -> Result<Vec<Stmt>, LowerError> {
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
            return Ok(vec![Stmt::For {
                var: vname,
                start: begin,
                end,
                body,
                kind: LoopKind::Serial,
            }]);
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
            None => Ok(vec![Stmt::For {
                var: self.named(pname, Type::Index),
                start: begin,
                end,
                body,
                kind: LoopKind::Serial,
            }]),
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

    /// Declare the cursor state of an ordered iterator: position (or coordinate counter
    /// for value-iterated levels) and end.
    fn cursor_init(&self, o: usize, scope: &Scope) -> Result<Vec<Stmt>, LowerError> {
        let stem = self.stem(o, scope);
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let (begin, end) = match level.coord_iter(&site) {
            Some(range) => range,
            None => self.pos_range(o, scope),
        };
        Ok(vec![
            Stmt::Decl(self.named(format!("q\u{1}{stem}"), Type::Index), begin),
            Stmt::Decl(self.named(format!("{stem}\u{1}_end"), Type::Index), end),
        ])
    }

    /// The coordinate under a cursor and the position it stands for.
    fn cursor_coord(&self, o: usize, scope: &Scope) -> (Expr, Expr) {
        let stem = self.stem(o, scope);
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let q = self.iv(format!("q\u{1}{stem}"));
        if level.coord_iter(&site).is_some() {
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
    /// statement that advances the cursor past the run when `matched`.
    #[allow(clippy::too_many_arguments)]
    fn cursor_position(
        &self,
        o: usize,
        scope: &Scope,
        pos: Expr,
        coord: &Expr,
        matched: Expr,
        body: &mut Vec<Stmt>,
        inner: &mut Scope,
    ) -> Stmt {
        let stem = self.stem(o, scope);
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let pname = format!("p\u{1}{stem}");
        let q = format!("q\u{1}{stem}");
        body.push(Stmt::Decl(self.named(pname.clone(), Type::Index), pos));
        let next = if !level.properties().unique && level.coord_iter(&site).is_none() {
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

    #[allow(clippy::too_many_arguments)]
    fn two_finger(
        &mut self,
        v: VarId,
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
        points: &[Point],
        iterated: &[usize],
        located: &[usize],
    ) -> Result<Vec<Stmt>, LowerError> {
        let mut stmts = Vec::new();
        for &o in iterated {
            stmts.extend(self.cursor_init(o, scope)?);
        }
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
            let alive = conjunction(merged.iter().map(|&o| {
                let stem = self.stem(o, scope);
                Expr::lt(
                    self.iv(format!("q\u{1}{stem}")),
                    self.iv(format!("{stem}\u{1}_end")),
                )
            }));
            let mut body = Vec::new();
            let mut inner = scope.clone();
            let mut coords = Vec::new();
            let mut advance = Vec::new();
            for &o in &merged {
                let stem = self.stem(o, scope);
                let (coord, pos) = self.cursor_coord(o, scope);
                let cname = format!("i\u{1}{stem}");
                body.push(Stmt::Decl(self.named(cname.clone(), Type::Index), coord));
                let matched = Expr::eq(self.iv(cname.clone()), self.iv(vname.clone()));
                advance.push(self.cursor_position(
                    o,
                    scope,
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
            body.push(Stmt::Decl(self.named(vname.clone(), Type::Index), minimum));
            let (locates, flags, inner) = self.locate_all(located, v, &inner);
            body.extend(locates);
            let cases = points.iter().filter(|q| q.within(point)).map(|case| {
                let cond = conjunction(
                    coords
                        .iter()
                        .filter(|(o, _)| case.iterators.contains(o))
                        .map(|(_, c)| Expr::eq(c.clone(), self.iv(vname.clone())))
                        .chain(
                            flags
                                .iter()
                                .filter(|(o, _)| case.iterators.contains(o))
                                .map(|f| f.1.clone()),
                        ),
                );
                (cond, case.clone())
            });
            let cases: Vec<(Expr, Point)> = cases.collect();
            body.push(self.case_chain(&cases, rest, expr, dest, &inner, v, scope)?);
            body.extend(advance);
            stmts.push(Stmt::While(alive, body));
        }
        Ok(stmts)
    }

    #[allow(clippy::too_many_arguments)]
    fn dense_loop(
        &mut self,
        v: VarId,
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
        points: &[Point],
        cursors: &[usize],
        located: &[usize],
    ) -> Result<Vec<Stmt>, LowerError> {
        let mut stmts = Vec::new();
        for &o in cursors {
            stmts.extend(self.cursor_init(o, scope)?);
        }
        let vname = self.name(v);
        let mut body = Vec::new();
        let mut matched = Vec::new();
        let mut inner = scope.clone();
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
                scope,
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
        let cases: Vec<(Expr, Point)> = points
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
            .collect();
        body.push(self.case_chain(&cases, rest, expr, dest, &inner, v, scope)?);
        body.extend(advance);
        stmts.push(Stmt::For {
            var: vname,
            start: Expr::Int(0),
            end: self.size(v),
            body,
            kind: LoopKind::Serial,
        });
        Ok(stmts)
    }

    /// `if (case 1) {...} else if (case 2) {...}`: each case recurses with the operands
    /// absent from it removed from the expression.
    #[allow(clippy::too_many_arguments)]
    fn case_chain(
        &mut self,
        cases: &[(Expr, Point)],
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        inner: &Scope,
        v: VarId,
        outer: &Scope,
    ) -> Result<Stmt, LowerError> {
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
            let body = if case_expr == LExpr::Zero {
                vec![]
            } else {
                self.lower(&live, &case_expr, dest, inner)?
            };
            chain = vec![Stmt::If(cond.clone(), body, chain)];
        }
        Ok(Stmt::Block(chain))
    }
}

fn conjunction(terms: impl IntoIterator<Item = Expr>) -> Expr {
    terms.into_iter().fold(Expr::Bool(true), Expr::and)
}

impl Lowerer<'_> {
    /// Binary search for `target` among the increasing keys `key(q)` of positions
    /// `begin..end`: the statements (declaring `<name>_lo`, `_hi`, `_mid`, `_end`), the first
    /// position whose key is not below `target`, and whether its key equals `target`.
    fn lower_bound(
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
    fn segment_scan(
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
