//! Lowering: concrete index notation plus formats to imperative IR.
//!
//! The pass follows Chou's code-generation algorithm (§4.5, Fig 4-5) over the loop order
//! chosen by `order`: for each index variable it builds the merge lattice
//! (`lattice`), decides per operand level whether to iterate it or `locate` into it
//! (from the level's capabilities and properties only), emits the loops and cases, and
//! recurses into each case with the operands that are absent from it removed. Level
//! functions come from the level formats, so no level kind is named here.
//!
//! Outputs: an all-dense output is written in place (`=` or `+=` when reductions scatter);
//! any other output format is produced as a stream of `(coordinates, value)` emits. When
//! the output's leaf level is compressed and no two threads emit into one of its rows
//! ([`row_layout`], `Lowerer::note_emit`), the emits become direct writes of a two-phase
//! kernel ([`crate::ir::rows`]); otherwise the runtime assembles them into the requested
//! format (sorting only when the stream is not already in order).

mod derived;
mod gallop;
mod iterate;
mod keys;
mod lattice;
mod levels;
mod parallel;
mod plan;
mod rewrite;
mod semiring;
mod store;
mod workspace;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::format::{Format, Level, LevelCoord, Streaming};
use crate::ir::ValueType;
use crate::ir::{
    Expr, Function, Local, OperandId, OperandInfo, OutputMode, ParamKind, ParamRef, Symbol, Type,
    Var,
};
use crate::notation::cin::{Statement, TensorId, VarId};
use crate::schedule::lexpr::LExpr;
use crate::schedule::{reordered_format, Concrete, MergeStrategy, Parallel};
use keys::Tables;

pub use crate::error::LowerError;

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

/// One step of the walk over the loop order: the variable whose loop is emitted, the
/// variables still to come inside it, the expression, where its value goes, and what the
/// path so far has resolved.
#[derive(Clone, Copy)]
struct Step<'s> {
    var: VarId,
    rest: &'s [VarId],
    expr: &'s LExpr,
    dest: &'s Dest,
    scope: &'s Scope,
}

impl<'s> Step<'s> {
    /// The step's variable, the variables after it, the expression, its destination and
    /// the path's scope.
    fn parts(self) -> (VarId, &'s [VarId], &'s LExpr, &'s Dest, &'s Scope) {
        (self.var, self.rest, self.expr, self.dest, self.scope)
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
        /// A flag set when the temporary is first added into (read by one thread).
        touched: Option<String>,
        /// A second temporary counting the entries added, reduced across threads as the
        /// temporary is (see `Lowerer::touched_temps`).
        counted: Option<String>,
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
    /// The output's components no input entry reaches hold its fill value, which the
    /// kernel does not write: loops visit only the coordinates some operand has.
    fills_unreached: bool,
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
    /// Variables at least one of whose loops intersects by galloping (`mergeby`).
    galloped: BTreeSet<VarId>,
    /// Reduction temporaries that a product or numerator reads, with the temporary that
    /// counts the entries they summed (see `store.rs::guarded_value`).
    touched_temps: BTreeMap<Var, Var>,
    /// Some entry of a sparse output is emitted where two threads can emit into one row
    /// of it (see `Lowerer::note_emit`): its entries cannot be placed straight into rows.
    rows_shared: bool,
}

/// Lower a scheduled concrete statement.
pub fn lower(plan: &Concrete) -> Result<Lowered, LowerError> {
    let stmt = &plan.statement;
    if !stmt.semiring.is_arithmetic() {
        if let Some(t) = stmt.tensors.iter().find(|t| t.format.pads_with_zeros()) {
            return Err(LowerError(format!(
                "`{}` is stored as {}, which pads its storage with zeros, and over the \
                 semiring {} they would be read as entries; store it in a format without \
                 padding (csr, csc, coo, dcsr, csf, hash, or all dense)",
                t.name,
                t.format.spelling(),
                stmt.semiring
            )));
        }
    }
    if let Some(t) = stmt.tensors[1..]
        .iter()
        .find(|t| t.fill != 0.0 && t.format.pads_with_repeated_coordinates())
    {
        return Err(LowerError(format!(
            "`{}` is stored as {}, whose unused slots repeat column 0, and with the fill \
             value {} they would be read as entries; store it in a format without such \
             padding (csr, csc, coo, dcsr, csf, hash, dia, bcsr, or all dense)",
            t.name,
            t.format.spelling(),
            t.fill
        )));
    }
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
            reordered_format(plan.access_format(o), &plan.order, indices)?
        } else {
            plan.access_format(o).clone()
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
            zeroed_by_kernel: false,
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
        fills_unreached: stmt.fills_unreached_components(),
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
        galloped: BTreeSet::new(),
        touched_temps: BTreeMap::new(),
        rows_shared: false,
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
    lowerer.check_gallop_requests()?;
    let locals = lowerer.locals_at(0);
    // A `+=` statement's output starts from its initial value, which must stay; over a
    // semiring, rows start from ⊕'s identity, which the caller fills in.
    let dense_rows = (!stmt.accumulate && stmt.semiring.add.identity() == 0.0)
        .then(|| lowerer.dense_rows())
        .flatten();
    let reduction_operator = lowerer.reduction_operator();
    let mut function = lowerer.tables.into_inner().function;
    function.reduction_operator = reduction_operator;
    function.body = crate::ir::simplify_stmts(body);
    function.assumptions = lowerer.assumptions;
    function.locals = locals;
    // Zeroing those rows in the kernel is the CPU targets' pass.
    function.dense_rows = dense_rows;
    crate::ir::extents::fix_params(&mut function, &fixed_params(plan, &lowerer.operands));
    crate::ir::unswitch::unswitch_invariant_conditions(&mut function);
    crate::ir::barriers::insert_barriers(&mut function);
    if !lowerer.rows_shared && !stmt.accumulate {
        if let Some(layout) = row_layout(stmt) {
            crate::ir::rows::place_rows(&mut function, &layout);
        }
    }
    // The CPU's gathered-sum versions and prefetch hints are the C target's passes
    // (`codegen::c::PASSES`), run when a kernel is compiled.
    if cfg!(debug_assertions) {
        crate::ir::verify(&function).map_err(|e| LowerError(e.to_string()))?;
    }
    Ok(Lowered {
        function,
        operands: lowerer.operands,
        loops: plan.loops().iter().map(|s| s.to_string()).collect(),
    })
}

/// The largest extent [`fixed_extents`] fixes: a row of 64 `double`s is eight AVX-512
/// registers, as many as gcc keeps a sum in; longer rows gain no unrolling.
pub const MAX_FIXED_EXTENT: usize = 64;

/// The parameters compiled as constants (`ir::extents`): the [`fixed_extents`], the size
/// of every level of `operands` that stores a mode one of them indexes (a level storing
/// mode `m` is as long as the tensor's mode `m`, whatever variable indexes it), and that
/// of every level inside blocks, the block's side (BCSR's, sliced ELL's rows).
pub fn fixed_params(plan: &Concrete, operands: &[Operand]) -> BTreeMap<ParamRef, i64> {
    let extents = fixed_extents(plan);
    let stmt = &plan.statement;
    let accesses = std::iter::once((0, stmt.lhs.as_slice())).chain(
        plan.accesses
            .iter()
            .map(|(t, indices)| (*t, indices.as_slice())),
    );
    // The size of each mode of each tensor that a fixed variable indexes.
    let mut modes = BTreeMap::new();
    for (t, indices) in accesses {
        for (m, v) in indices.iter().enumerate() {
            if let Some(&size) = extents.get(v) {
                modes.insert((t, m), size);
            }
        }
    }
    let mut fixed: BTreeMap<ParamRef, i64> = extents
        .iter()
        .map(|(&n, &size)| (ParamRef::Extent(n), size))
        .collect();
    for (o, operand) in operands.iter().enumerate() {
        for (k, level) in operand.format.levels().iter().enumerate() {
            let size = match level.coord {
                LevelCoord::Mode(m) => modes.get(&(operand.tensor, m)).copied(),
                LevelCoord::BlockInner { block, .. } => Some(block as i64),
                _ => None,
            };
            if let Some(size) = size {
                let param = ParamRef::Level {
                    operand: OperandId(o),
                    level: k + 1,
                    kind: ParamKind::Size,
                };
                fixed.insert(param, size);
            }
        }
    }
    fixed
}

/// The extents compiled as constants (`ir::extents`): those of index variables that only
/// dense tensors read or write (an MTTKRP's or SpMM's rank), up to [`MAX_FIXED_EXTENT`].
/// A variable that indexes a sparse operand keeps its extent a parameter, so that one
/// kernel serves inputs of every size.
pub fn fixed_extents(plan: &Concrete) -> BTreeMap<usize, i64> {
    let stmt = &plan.statement;
    let output = (0, stmt.lhs.as_slice());
    let inputs = plan
        .accesses
        .iter()
        .map(|(t, indices)| (*t, indices.as_slice()));
    let mut on_sparse = BTreeSet::new();
    for (t, indices) in std::iter::once(output).chain(inputs) {
        if !stmt.tensors[t].format.is_all_dense() {
            on_sparse.extend(indices.iter().copied());
        }
    }
    stmt.vars
        .iter()
        .enumerate()
        .filter(|&(n, v)| !on_sparse.contains(&n) && (1..=MAX_FIXED_EXTENT).contains(&v.size))
        .map(|(n, v)| (n, v.size as i64))
        .collect()
}

/// Rows larger in number than this are not counted when some level above the output's
/// leaf is compacted afterwards (its storage holds only the rows with entries): an array
/// of this many positions per call would cost more than sorting the entries.
pub const MAX_COMPACTED_ROWS: usize = 1 << 22;

/// Where a sparse output's entries go when they are placed straight into its storage
/// (`ir::rows`): its leaf level appends coordinates in order (compressed), and every level
/// above stores one coordinate of a mode and streams (dense, or compressed and compacted
/// by the runtime, for at most [`MAX_COMPACTED_ROWS`] rows). `None` for other formats,
/// whose entries are emitted and packed.
pub fn row_layout(stmt: &Statement) -> Option<crate::ir::rows::RowLayout> {
    let output = &stmt.tensors[0];
    let (upper, leaf_mode) = output.format.row_levels()?;
    let rows = upper
        .iter()
        .try_fold(1usize, |rows, &(m, _)| rows.checked_mul(output.dims[m]))?;
    let compacted = upper.iter().any(|&(_, kind)| kind == Streaming::Appended);
    if compacted && rows > MAX_COMPACTED_ROWS {
        return None;
    }
    Some(crate::ir::rows::RowLayout {
        leaf_level: upper.len() + 1,
        leaf_mode,
        upper: upper
            .iter()
            .map(|&(m, _)| (m, Expr::Param(ParamRef::Extent(stmt.lhs[m]))))
            .collect(),
    })
}

impl Lowerer<'_> {
    /// The rows of a dense output: the variable of its first stored level's mode, and that
    /// variable's extent as its loops run to it.
    fn dense_rows(&self) -> Option<crate::ir::zero_rows::DenseRows> {
        if !self.dense_output {
            return None;
        }
        let LevelCoord::Mode(m) = self.operands[0].format.levels().first()?.coord else {
            return None;
        };
        let v = self.stmt.lhs[m];
        Some(crate::ir::zero_rows::DenseRows {
            row: self.name(v),
            rows: self.size(v),
        })
    }

    pub(super) fn name(&self, v: VarId) -> Var {
        self.index_vars[v]
    }

    pub(super) fn var(&self, v: VarId) -> Expr {
        Expr::Var(self.name(v))
    }

    /// The extent of `v`'s loop, its symbols resolved: a storage level's size becomes the
    /// operand's parameter, a position space's length the bounds lowering declared.
    pub(super) fn size(&self, v: VarId) -> Expr {
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

    /// A `mergeby(v, Gallop)` that no loop could honour is an error, not a silent
    /// two-finger merge.
    fn check_gallop_requests(&self) -> Result<(), LowerError> {
        let requested = self.plan.vars.iter().enumerate();
        let ignored = requested
            .filter(|(v, var)| {
                var.tags.merge == MergeStrategy::Gallop && !self.galloped.contains(v)
            })
            .map(|(_, var)| var.name.as_str())
            .next();
        match ignored {
            Some(name) => Err(LowerError(format!(
                "mergeby({name},Gallop): precondition failed: a galloping merge intersects two \
                 or more operands iterated by position, but no loop over `{name}` does (it \
                 iterates one operand, a dense range, or a union under `+`/`-`)"
            ))),
            None => Ok(()),
        }
    }

    /// True when `v` is, or is derived from, a variable of the output.
    pub(super) fn is_free(&self, v: VarId) -> bool {
        self.plan.roots(v).iter().any(|r| self.stmt.lhs.contains(r))
    }

    /// True when the next unresolved level of occurrence `o` stores variable `v`.
    pub(super) fn indexes(&self, o: usize, v: VarId, scope: &Scope) -> bool {
        let occ = &self.occurrences[o];
        occ.level_vars.get(scope.resolved(o)) == Some(&v)
    }

    /// The merge lattice of `expr` for the loop over `v`: the coordinates it visits and
    /// the cases inside (`None` when `expr` does not depend on `v`).
    pub(super) fn lattice(
        &self,
        expr: &LExpr,
        v: VarId,
        scope: &Scope,
    ) -> Option<Vec<lattice::Point>> {
        let points = lattice::build(expr, &|o| self.indexes(o, v, scope))?;
        if !self.fills_unreached {
            return Some(points);
        }
        // The universe may also stand for an operand this loop does not iterate (its
        // levels in another order): only where every operand is merged here is it the
        // constant fill alone.
        let mut occurrences = Vec::new();
        expr.occurrences(&mut occurrences);
        if occurrences.iter().all(|&o| self.indexes(o, v, scope)) {
            lattice::without_universe(points)
        } else {
            Some(points)
        }
    }
}
