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

mod lattice;
mod lexpr;
mod order;

use std::collections::BTreeSet;
use std::ops::{Add, Sub};

use lattice::Point;
use lexpr::LExpr;

use crate::format::{Format, Level, LevelCoord, LevelSite};
use crate::ir::{ArrayKind, ArrayRef, BinOp, Expr, Stmt, Type};
use crate::notation::ast::Op;
use crate::notation::cin::{CExpr, Statement, TensorId, VarId};
use crate::tensor::ValueType;

/// A tensor as the kernel sees it: one per distinct (tensor, layout) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Operand {
    /// C-level name (`A`, or `A_1` for a reordered copy).
    pub name: String,
    /// The statement's tensor.
    pub tensor: TensorId,
    /// The layout the kernel reads; differs from the tensor's when reordered.
    pub format: Format,
}

/// How the kernel delivers its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Writes the dense output's values in place; `accumulate` when stores are `+=`.
    Dense { accumulate: bool },
    /// Emits coordinates and values for the runtime to assemble.
    Emit,
}

/// A dense scratch row that gathers scattered contributions to the output's last
/// variable before they are emitted in order (Gustavson's SpGEMM workspace). The backend
/// allocates `<name>_vals` (zeroed values), `<name>_seen` (flags) and `<name>_list`
/// (touched coordinates), each of `size` entries.
#[derive(Clone, Debug, PartialEq)]
pub struct Workspace {
    pub name: String,
    pub size: Expr,
}

/// Result of lowering one statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The kernel body.
    pub body: Vec<Stmt>,
    /// Operands read or written, output first.
    pub operands: Vec<Operand>,
    /// C names of the index variables, by `VarId`: the statement's first (`<name>_size`
    /// holds each one's extent), then variables added for structured levels.
    pub var_names: Vec<String>,
    /// Number of the statement's own variables (those with a `<name>_size` parameter).
    pub statement_vars: usize,
    /// The loop order chosen.
    pub loop_order: Vec<VarId>,
    /// How the result is produced.
    pub output: OutputMode,
    /// Scratch arrays the kernel allocates.
    pub workspaces: Vec<Workspace>,
}

/// A statement that lowering cannot compile, with the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot compile this statement: {0}")]
pub struct LowerError(pub String);

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
    /// Accumulate into workspace `name` at the coordinate of variable `var`.
    Workspace {
        name: String,
        var: VarId,
    },
    Temp {
        name: String,
        touched: Option<String>,
    },
}

struct Lowerer<'a> {
    stmt: &'a Statement,
    operands: Vec<Operand>,
    occurrences: Vec<Occurrence>,
    var_names: Vec<String>,
    /// Extents of the variables added for structured levels (after the statement's).
    extra_sizes: Vec<Expr>,
    /// For a blocked variable: its outer and inner variables and the block size.
    derived: Vec<Option<(VarId, VarId, usize)>>,
    order: Vec<VarId>,
    workspaces: Vec<Workspace>,
    temps: usize,
    dense_output: bool,
    store_accumulates: bool,
}

/// Lower a checked statement.
pub fn lower(stmt: &Statement) -> Result<Lowered, LowerError> {
    let mut linear = Vec::new();
    let mut hoisted = Vec::new();
    let rhs = LExpr::from_cin(&stmt.rhs, true, &mut linear, &mut hoisted);
    let count = linear.len();
    let mut accesses = Vec::new();
    collect_accesses(&stmt.rhs, &mut accesses);

    // Storage levels that hold no mode (the ELL slot, the DIA diagonal) get a fresh
    // variable each, summed over: A(i,j) is the sum of A'(s,i,j) over the slots s.
    let mut var_names: Vec<String> = stmt.vars.iter().map(|v| c_name(&v.name)).collect();
    let mut extra_sizes = Vec::new();
    let mut derived: Vec<Option<(VarId, VarId, usize)>> = vec![None; stmt.vars.len()];
    let mut level_vars: Vec<Vec<VarId>> = Vec::with_capacity(count);
    for (o, (t, indices)) in accesses.iter().enumerate() {
        let tensor = &stmt.tensors[*t];
        let mut vars = Vec::new();
        for (k, spec) in tensor.format.levels().iter().enumerate() {
            match spec.coord {
                LevelCoord::Mode(m) => vars.push(indices[m]),
                LevelCoord::EllSlot | LevelCoord::Diagonal => {
                    if !linear[o] {
                        return Err(LowerError(format!(
                            "`{}` is stored as `{}`, whose extra slot/diagonal level is summed over; \
                             that is only valid where `{}` is a factor of the whole right-hand side \
                             (not under `+`, `-` or a denominator); convert it to csr for this statement",
                            tensor.name,
                            tensor.format.spelling(),
                            tensor.name
                        )));
                    }
                    hoisted.push(var_names.len());
                    vars.push(var_names.len());
                    var_names.push(format!("{}_o{o}_slot", c_name(&tensor.name)));
                    derived.push(None);
                    extra_sizes.push(Expr::Param(crate::ir::ParamRef {
                        tensor: c_name(&tensor.name),
                        level: k + 1,
                        kind: crate::ir::ParamKind::Size,
                    }));
                }
                LevelCoord::BlockOuter { mode, block } | LevelCoord::BlockInner { mode, block } => {
                    // A blocked mode's variable is split into fresh outer and inner
                    // variables; the original is derived from them (`i = io*b + ii`) and
                    // every other operand reaches it by `locate`.
                    let original = indices[mode];
                    let inner = matches!(spec.coord, LevelCoord::BlockInner { .. });
                    let (outer_var, inner_var) = match derived[original] {
                        Some((o_var, i_var, b)) if b == block => (o_var, i_var),
                        Some(_) => {
                            return Err(LowerError(format!(
                                "index variable `{}` is blocked with two different block sizes",
                                stmt.vars[original].name
                            )))
                        }
                        None => {
                            let base = var_names.len();
                            for suffix in ["blk", "in"] {
                                var_names.push(format!(
                                    "{}_{suffix}",
                                    c_name(&stmt.vars[original].name)
                                ));
                            }
                            extra_sizes
                                .push(Expr::Int(stmt.vars[original].size.div_ceil(block) as i64));
                            extra_sizes.push(Expr::Int(block as i64));
                            derived.resize(var_names.len(), None);
                            derived[original] = Some((base, base + 1, block));
                            hoisted.extend([base, base + 1]);
                            (base, base + 1)
                        }
                    };
                    vars.push(if inner { inner_var } else { outer_var });
                }
            }
        }
        level_vars.push(vars);
    }
    let fixed: Vec<bool> = accesses
        .iter()
        .map(|(t, _)| !stmt.tensors[*t].format.is_plain())
        .collect();
    let free: BTreeSet<VarId> = stmt.lhs.iter().copied().collect();
    let mut sum_edges = reduction_edges(&rhs, &free, &hoisted);
    for (v, split) in derived.iter().enumerate() {
        if let Some((outer, inner, _)) = split {
            sum_edges.extend([(*outer, v), (*inner, v)]);
        }
    }
    let mut priority = var_priority(stmt, &accesses);
    priority.extend((0..extra_sizes.len()).map(|n| stmt.vars.len() + n));
    let loop_order = order::choose(var_names.len(), &level_vars, &fixed, &sum_edges, &priority);

    let output = &stmt.tensors[0];
    let mut operands = vec![Operand {
        name: c_name(&output.name),
        tensor: 0,
        format: output.format.clone(),
    }];
    let mut occurrences = Vec::new();
    for (o, (t, _)) in accesses.iter().enumerate() {
        let tensor = &stmt.tensors[*t];
        let format = if loop_order.reordered.contains(&o) {
            reordered_format(&tensor.format, &loop_order.order, &accesses[o].1)?
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
                    format!("{}_{}", c_name(&tensor.name), o)
                } else {
                    c_name(&tensor.name)
                };
                operands.push(Operand {
                    name,
                    tensor: *t,
                    format: format.clone(),
                });
                operands.len() - 1
            }
        };
        let vars = if loop_order.reordered.contains(&o) {
            let mode_order = format
                .mode_order()
                .expect("only plain formats are reordered");
            mode_order.iter().map(|&m| accesses[o].1[m]).collect()
        } else {
            level_vars[o].clone()
        };
        occurrences.push(Occurrence {
            operand,
            levels: format.levels().iter().map(|l| l.format.clone()).collect(),
            level_vars: vars,
        });
    }
    let dense_output = output.format.is_all_dense();
    let position = |v: VarId| {
        loop_order
            .order
            .iter()
            .position(|&u| u == v)
            .unwrap_or(usize::MAX)
    };
    let last_free = stmt.lhs.iter().map(|&v| position(v)).max();
    let scatters = loop_order
        .order
        .iter()
        .any(|v| !free.contains(v) && last_free.is_some_and(|l| position(*v) < l));
    let mut lowerer = Lowerer {
        stmt,
        operands,
        occurrences,
        var_names,
        extra_sizes,
        derived,
        order: loop_order.order.clone(),
        workspaces: Vec::new(),
        temps: 0,
        dense_output,
        store_accumulates: stmt.accumulate || scatters,
    };
    let scope = Scope {
        positions: vec![Vec::new(); count],
        segment_ends: vec![Vec::new(); count],
    };
    let order = lowerer.order.clone();
    let body = lowerer.lower(&order, &rhs, &Dest::Output, &scope)?;
    Ok(Lowered {
        body: crate::ir::simplify_stmts(body),
        output: if dense_output {
            OutputMode::Dense {
                accumulate: lowerer.store_accumulates,
            }
        } else {
            OutputMode::Emit
        },
        workspaces: lowerer.workspaces,
        operands: lowerer.operands,
        statement_vars: stmt.vars.len(),
        var_names: lowerer.var_names,
        loop_order: loop_order.order,
    })
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

fn reordered_format(
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

/// C identifiers for user names: C keywords and names that could clash with generated
/// ones get a trailing underscore.
fn c_name(name: &str) -> String {
    const RESERVED: &[&str] = &[
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
        "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
        "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
        "union", "unsigned", "void", "volatile", "while", "bool", "out", "args", "params", "main",
    ];
    if RESERVED.contains(&name) || name.starts_with("sparsec") {
        format!("{name}_")
    } else {
        name.to_string()
    }
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
    fn fresh(&mut self, stem: &str) -> String {
        self.temps += 1;
        format!("{stem}{}", self.temps - 1)
    }

    fn var(&self, v: VarId) -> Expr {
        Expr::var(self.var_names[v].clone())
    }

    fn size(&self, v: VarId) -> Expr {
        match v.checked_sub(self.stmt.vars.len()) {
            Some(extra) => self.extra_sizes[extra].clone(),
            None => Expr::var(format!("{}_size", self.var_names[v])),
        }
    }

    fn is_free(&self, v: VarId) -> bool {
        self.stmt.lhs.contains(&v)
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
            return Ok(self.store(expr, dest, scope));
        };
        if let Some(sum) = expr.find_sum(v).cloned() {
            let LExpr::Sum(_, _, body) = &sum else {
                unreachable!()
            };
            let mut inside = Vec::new();
            lexpr::summed_vars(&sum, &mut inside);
            let sub: Vec<VarId> = remaining
                .iter()
                .copied()
                .filter(|u| inside.contains(u))
                .collect();
            let others: Vec<VarId> = remaining
                .iter()
                .copied()
                .filter(|u| !inside.contains(u))
                .collect();
            let temp = self.fresh("t");
            let mut stmts = vec![Stmt::Decl(
                temp.clone(),
                Type::Value(ValueType::F64),
                Expr::Float(0.0),
            )];
            let into = Dest::Temp {
                name: temp.clone(),
                touched: None,
            };
            stmts.extend(self.lower(&sub, body, &into, scope)?);
            stmts.extend(self.lower(&others, &expr.replace_sum(v, &temp), dest, scope)?);
            return Ok(stmts);
        }
        if matches!(dest, Dest::Output) && remaining.iter().all(|&u| !self.is_free(u)) {
            let temp = self.fresh("t");
            let touched = (!self.dense_output).then(|| format!("{temp}_touched"));
            let mut stmts = vec![Stmt::Decl(
                temp.clone(),
                Type::Value(ValueType::F64),
                Expr::Float(0.0),
            )];
            if let Some(flag) = &touched {
                stmts.push(Stmt::Decl(flag.clone(), Type::Bool, Expr::Bool(false)));
            }
            let into = Dest::Temp {
                name: temp.clone(),
                touched: touched.clone(),
            };
            stmts.extend(self.lower(remaining, expr, &into, scope)?);
            let store = self.store(&LExpr::Temp(temp), dest, scope);
            match touched {
                Some(flag) => stmts.push(Stmt::If(Expr::var(flag), store, vec![])),
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
        let indexes = |o: usize| self.indexes(o, v, scope);
        if let Some((outer, inner, block)) = self.derived[v] {
            return self.derived_var(v, outer, inner, block, rest, expr, dest, scope);
        }
        match lattice::build(expr, &indexes) {
            None => {
                let body = self.lower(rest, expr, dest, scope)?;
                Ok(vec![Stmt::For {
                    var: self.var_names[v].clone(),
                    start: Expr::Int(0),
                    end: self.size(v),
                    body,
                }])
            }
            Some(points) => self.merge(v, rest, expr, dest, scope, &points),
        }
    }

    /// A blocked variable: compute it from its parts, skip the padding of partial blocks,
    /// and locate every other operand that reads it.
    #[allow(clippy::too_many_arguments)]
    fn derived_var(
        &mut self,
        v: VarId,
        outer: VarId,
        inner: VarId,
        block: usize,
        rest: &[VarId],
        expr: &LExpr,
        dest: &Dest,
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let indexes = |o: usize| self.indexes(o, v, scope);
        let value = self.var(outer) * Expr::Int(block as i64) + self.var(inner);
        let mut body = Vec::new();
        let mut inner_scope = scope.clone();
        if let Some(points) = lattice::build(expr, &indexes) {
            let located: Vec<usize> = points[0].iterators.iter().copied().collect();
            let refused = points.len() > 1
                || located
                    .iter()
                    .any(|&o| !self.level(o, scope).capabilities().locate);
            if refused {
                return Err(LowerError(format!(
                    "index variable `{}` is blocked in one operand, so every other operand must \
                     reach it by locate in a product (store them dense or hashed in that mode)",
                    self.stmt.vars[v].name
                )));
            }
            let (locates, flags, scope_after) = self.locate_all(&located, v, scope);
            body.extend(locates);
            inner_scope = scope_after;
            let cond = conjunction(flags.into_iter().map(|f| f.1));
            body.push(Stmt::If(
                cond,
                self.lower(rest, expr, dest, &inner_scope)?,
                vec![],
            ));
        } else {
            body.extend(self.lower(rest, expr, dest, &inner_scope)?);
        }
        Ok(vec![
            Stmt::Decl(self.var_names[v].clone(), Type::Index, value),
            Stmt::If(Expr::lt(self.var(v), self.size(v)), body, vec![]),
        ])
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
        let name = format!("w{}", self.workspaces.len());
        self.workspaces.push(Workspace {
            name: name.clone(),
            size: self.size(w),
        });
        let count = format!("{name}_count");
        let list = ArrayRef::local(format!("{name}_list"));
        let vals = ArrayRef::local(format!("{name}_vals"));
        let seen = ArrayRef::local(format!("{name}_seen"));
        let mut stmts = vec![Stmt::Decl(count.clone(), Type::Index, Expr::Int(0))];
        let into = Dest::Workspace {
            name: name.clone(),
            var: w,
        };
        stmts.extend(self.lower(remaining, expr, &into, scope)?);
        stmts.push(Stmt::Sort {
            array: list.clone(),
            len: Expr::var(count.clone()),
        });
        let p = format!("{name}_p");
        stmts.push(Stmt::For {
            var: p.clone(),
            start: Expr::Int(0),
            end: Expr::var(count),
            body: vec![
                Stmt::Decl(
                    self.var_names[w].clone(),
                    Type::Index,
                    Expr::load(list, Expr::var(p)),
                ),
                Stmt::Emit {
                    coords: self.stmt.lhs.iter().map(|&v| self.var(v)).collect(),
                    value: Expr::load(vals.clone(), self.var(w)),
                },
                Stmt::Store {
                    array: vals,
                    index: self.var(w),
                    value: Expr::Float(0.0),
                    accumulate: false,
                },
                Stmt::Store {
                    array: seen,
                    index: self.var(w),
                    value: Expr::Int(0),
                    accumulate: false,
                },
            ],
        });
        Ok(stmts)
    }

    /// The value of the expression at the current positions, stored to the destination.
    fn store(&self, expr: &LExpr, dest: &Dest, scope: &Scope) -> Vec<Stmt> {
        let value = self.value(expr, scope);
        match dest {
            Dest::Temp { name, touched } => {
                let mut s = vec![Stmt::Assign(
                    name.clone(),
                    Expr::add(Expr::var(name.clone()), value),
                )];
                if let Some(flag) = touched {
                    s.push(Stmt::Assign(flag.clone(), Expr::Bool(true)));
                }
                s
            }
            Dest::Workspace { name, var } => {
                let at = self.var(*var);
                let count = format!("{name}_count");
                let seen = ArrayRef::local(format!("{name}_seen"));
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
                                array: ArrayRef::local(format!("{name}_list")),
                                index: Expr::var(count.clone()),
                                value: at.clone(),
                                accumulate: false,
                            },
                            Stmt::Assign(count.clone(), Expr::var(count) + Expr::Int(1)),
                        ],
                        vec![],
                    ),
                    Stmt::Store {
                        array: ArrayRef::local(format!("{name}_vals")),
                        index: at,
                        value,
                        accumulate: true,
                    },
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
                        .locate(&site, &pos, &coord)
                        .expect("dense levels locate")
                        .0;
                }
                vec![Stmt::Store {
                    array: ArrayRef {
                        tensor: out.name.clone(),
                        level: None,
                        kind: ArrayKind::Vals,
                    },
                    index: pos,
                    value,
                    accumulate: self.store_accumulates,
                }]
            }
            Dest::Output => vec![Stmt::Emit {
                coords: self.stmt.lhs.iter().map(|&v| self.var(v)).collect(),
                value,
            }],
        }
    }

    fn value(&self, expr: &LExpr, scope: &Scope) -> Expr {
        match expr {
            LExpr::Access(o) => {
                let occ = &self.occurrences[*o];
                let pos = scope.positions[*o].last().cloned().unwrap_or(Expr::Int(0));
                debug_assert_eq!(scope.resolved(*o), occ.levels.len());
                Expr::load(
                    ArrayRef {
                        tensor: self.operands[occ.operand].name.clone(),
                        level: None,
                        kind: ArrayKind::Vals,
                    },
                    pos,
                )
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
            LExpr::Temp(t) => Expr::var(t.clone()),
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
            tensor: self.operands[operand].name.clone(),
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
            format!("{name}_o{o}_{}", scope.resolved(o) + 1)
        } else {
            format!("{name}{}", scope.resolved(o) + 1)
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
                let last = Expr::sub(seg_end, Expr::Int(1));
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
            let (pos, f) = self
                .level(o, scope)
                .locate(&site, &self.parent_pos(o, scope), &self.var(v))
                .expect("locatable level");
            stmts.push(Stmt::Decl(name.clone(), Type::Index, pos));
            let f = substitute_located(&f, &name);
            if f != Expr::Bool(true) {
                let flag = format!("{}_found", self.stem(o, scope));
                stmts.push(Stmt::Decl(flag.clone(), Type::Bool, f));
                found.push((o, Expr::var(flag)));
            } else {
                found.push((o, Expr::Bool(true)));
            }
            inner = inner.with(o, Expr::var(name), None);
        }
        (stmts, found, inner)
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
        let pname = format!("p{stem}");
        let vname = self.var_names[v].clone();
        if let Some((begin, end)) = level.coord_iter(&site) {
            let (pos, found) = level
                .coord_access(&site, &self.parent_pos(o, scope), &self.var(v))
                .expect("coordinate access");
            let inner = scope.with(o, Expr::var(pname.clone()), None);
            let (mut body, flags, inner) = self.locate_all(located, v, &inner);
            body.insert(0, Stmt::Decl(pname, Type::Index, pos));
            let cond = conjunction(flags.into_iter().map(|f| f.1).chain([found]));
            let inner_body = self.lower(rest, expr, dest, &inner)?;
            body.push(Stmt::If(cond, inner_body, vec![]));
            return Ok(vec![Stmt::For {
                var: vname,
                start: begin,
                end,
                body,
            }]);
        }
        let (begin, end) = self.pos_range(o, scope);
        let (coord, found) = level
            .pos_access(&site, &Expr::var(pname.clone()))
            .expect("position access");
        let unique = level.properties().unique;
        let seg = (!unique).then(|| format!("{stem}_segend"));
        let inner = scope.with(o, Expr::var(pname.clone()), seg.clone().map(Expr::var));
        let (locates, flags, inner) = self.locate_all(located, v, &inner);
        let mut body = vec![Stmt::Decl(vname, Type::Index, coord.clone())];
        if let Some(seg) = &seg {
            body.extend(segment_scan(
                seg,
                &pname,
                &format!("{stem}_end"),
                &level,
                &site,
                &self.var(v),
            ));
        }
        body.extend(locates);
        let cond = conjunction(flags.into_iter().map(|f| f.1).chain([found]));
        body.push(Stmt::If(
            cond,
            self.lower(rest, expr, dest, &inner)?,
            vec![],
        ));
        match seg {
            None => Ok(vec![Stmt::For {
                var: pname,
                start: begin,
                end,
                body,
            }]),
            Some(seg) => {
                body.push(Stmt::Assign(pname.clone(), Expr::var(seg)));
                Ok(vec![
                    Stmt::Decl(pname.clone(), Type::Index, begin),
                    Stmt::Decl(format!("{stem}_end"), Type::Index, end),
                    Stmt::While(
                        Expr::lt(Expr::var(pname), Expr::var(format!("{stem}_end"))),
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
            Stmt::Decl(format!("q{stem}"), Type::Index, begin),
            Stmt::Decl(format!("{stem}_end"), Type::Index, end),
        ])
    }

    /// The coordinate under a cursor and the position it stands for.
    fn cursor_coord(&self, o: usize, scope: &Scope) -> (Expr, Expr) {
        let stem = self.stem(o, scope);
        let level = self.level(o, scope);
        let site = self.occ_site(o, scope);
        let q = Expr::var(format!("q{stem}"));
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
        let pname = format!("p{stem}");
        let q = format!("q{stem}");
        body.push(Stmt::Decl(pname.clone(), Type::Index, pos));
        let next = if !level.properties().unique && level.coord_iter(&site).is_none() {
            let seg = format!("{stem}_segend");
            body.extend(segment_scan(
                &seg,
                &q,
                &format!("{stem}_end"),
                level,
                &site,
                coord,
            ));
            *inner = inner.with(o, Expr::var(pname), Some(Expr::var(seg.clone())));
            Expr::var(seg)
        } else {
            *inner = inner.with(o, Expr::var(pname), None);
            Expr::var(q.clone()) + Expr::Int(1)
        };
        Stmt::If(matched, vec![Stmt::Assign(q, next)], vec![])
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
        let vname = self.var_names[v].clone();
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
                    Expr::var(format!("q{stem}")),
                    Expr::var(format!("{stem}_end")),
                )
            }));
            let mut body = Vec::new();
            let mut inner = scope.clone();
            let mut coords = Vec::new();
            let mut advance = Vec::new();
            for &o in &merged {
                let stem = self.stem(o, scope);
                let (coord, pos) = self.cursor_coord(o, scope);
                let cname = format!("i{stem}");
                body.push(Stmt::Decl(cname.clone(), Type::Index, coord));
                let matched = Expr::eq(Expr::var(cname.clone()), Expr::var(vname.clone()));
                advance.push(self.cursor_position(
                    o,
                    scope,
                    pos,
                    &Expr::var(cname.clone()),
                    matched,
                    &mut body,
                    &mut inner,
                ));
                coords.push((o, Expr::var(cname)));
            }
            let minimum = coords
                .iter()
                .map(|c| c.1.clone())
                .reduce(Expr::min)
                .expect("at least one merged iterator");
            body.push(Stmt::Decl(vname.clone(), Type::Index, minimum));
            let (locates, flags, inner) = self.locate_all(located, v, &inner);
            body.extend(locates);
            let cases = points.iter().filter(|q| q.within(point)).map(|case| {
                let cond = conjunction(
                    coords
                        .iter()
                        .filter(|(o, _)| case.iterators.contains(o))
                        .map(|(_, c)| Expr::eq(c.clone(), Expr::var(vname.clone())))
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
        let vname = self.var_names[v].clone();
        let mut body = Vec::new();
        let mut matched = Vec::new();
        let mut inner = scope.clone();
        let mut advance = Vec::new();
        for &o in cursors {
            let stem = self.stem(o, scope);
            let (coord, pos) = self.cursor_coord(o, scope);
            let q = format!("q{stem}");
            let flag = format!("{stem}_match");
            body.push(Stmt::Decl(
                flag.clone(),
                Type::Bool,
                Expr::and(
                    Expr::lt(Expr::var(q.clone()), Expr::var(format!("{stem}_end"))),
                    Expr::eq(coord, self.var(v)),
                ),
            ));
            advance.push(self.cursor_position(
                o,
                scope,
                pos,
                &self.var(v),
                Expr::var(flag.clone()),
                &mut body,
                &mut inner,
            ));
            matched.push((o, Expr::var(flag)));
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
        let mut chain: Vec<Stmt> = Vec::new();
        for (cond, case) in cases.iter().rev() {
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
                .filter(|u| !before.contains(u) || after.contains(u))
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

/// `found` of a hashed locate refers to the located position by a placeholder name.
fn substitute_located(expr: &Expr, name: &str) -> Expr {
    match expr {
        Expr::Var(v) if v == crate::format::LOCATED => Expr::var(name),
        Expr::Load(a, i) => Expr::load(a.clone(), substitute_located(i, name)),
        Expr::Bin(op, a, b) => Expr::bin(
            *op,
            substitute_located(a, name),
            substitute_located(b, name),
        ),
        Expr::Neg(a) => Expr::Neg(Box::new(substitute_located(a, name))),
        Expr::Not(a) => Expr::Not(Box::new(substitute_located(a, name))),
        other => other.clone(),
    }
}

fn conjunction(terms: impl IntoIterator<Item = Expr>) -> Expr {
    terms.into_iter().fold(Expr::Bool(true), Expr::and)
}

/// Advance `seg` past the duplicates of `coord` that start at `pos` (Chou §4.4).
fn segment_scan(
    seg: &str,
    pos: &str,
    end: &str,
    level: &Level,
    site: &LevelSite,
    coord: &Expr,
) -> Vec<Stmt> {
    let next = level
        .pos_access(site, &Expr::var(seg))
        .expect("position access")
        .0;
    vec![
        Stmt::Decl(
            seg.into(),
            Type::Index,
            Expr::add(Expr::var(pos), Expr::Int(1)),
        ),
        Stmt::While(
            Expr::and(
                Expr::lt(Expr::var(seg), Expr::var(end)),
                Expr::eq(next, coord.clone()),
            ),
            vec![Stmt::Assign(
                seg.into(),
                Expr::add(Expr::var(seg), Expr::Int(1)),
            )],
        ),
    ]
}
