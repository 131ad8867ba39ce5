//! Polyhedral scanning through isl's AST generator.
//!
//! isl scans affine sets; SPF sets also apply index arrays. Each distinct UF application
//! of a statement (`rowptr(i)`, `col(k)`) becomes a dimension of its own, a *slot*, placed
//! in the common schedule after the dimensions its arguments use and before the first
//! loop it bounds (or defines, as in `j = col(k)`); the slot's value lies in the range of
//! its array (`uf_min <= u <= uf_max`, run-time parameters), and the facts known about
//! index arrays (a `pos` array does not decrease) hold between slots. isl then generates
//! the loops of the whole program: bounds, guards, peeled and separated pieces.
//!
//! The tree isl returns is read back into IR by `walk.rs`.

use super::walk::ReadBack;
use super::*;
use crate::spf::presburger::{isl_affine, SYMBOL_PREFIX};

/// isl's work bound for one program's loops: separating the pieces of many fused
/// statements can grow exponentially, and a program that needs more is refused rather than
/// left to run for minutes. The examples need less than a million (ILU(0) and
/// Gauss-Seidel need more than 100,000).
const AST_OPERATION_LIMIT: u64 = 20_000_000;

/// What the innermost level emits for a statement.
pub(super) enum Leaf {
    /// The statement's body.
    Body,
    /// The wavefront inspector's update of row `lev[row - first]` from the rows it reads.
    Levels {
        lev: Scratch,
        first: Expr,
        rows: Vec<(String, Affine)>,
    },
}

/// A column of the common schedule.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Column {
    /// An execution dimension.
    Dim(usize),
    /// A slot: a UF application (its arguments over execution dimensions), evaluated
    /// before execution dimension `before` (the number of dimensions for after them all).
    Slot { before: usize, app: Term },
}

/// A statement abstracted for isl: its dimensions are its execution dimensions, then one
/// per UF application; `columns[d]` is where dimension `d` goes in the schedule.
pub(super) struct Prepared {
    pub(super) stmt: usize,
    pub(super) space: Abstraction,
    constraints: Vec<Constraint>,
    pub(super) columns: Vec<usize>,
}

impl Context<'_> {
    /// Scan statements `items` of `all` into IR. The first execution dimensions are
    /// already bound in `env`, one per range in `fixed` (`first <= value < end`: the
    /// wavefront executor's row); the outermost loop is parallel when `parallel` is set
    /// (the caller checked the dependences).
    pub(super) fn scan(
        &mut self,
        all: &[Scheduled],
        items: &[usize],
        fixed_ranges: &[(Affine, Affine)],
        env: &mut [Option<Var>],
        parallel: bool,
        leaf: &Leaf,
    ) -> Result<Vec<Stmt>, SpfError> {
        let fixed = fixed_ranges.len();
        check_distinct(all, items)?;
        check_bounded(all, items)?;
        let depth = env.len();
        let mut prepared: Vec<Prepared> = items.iter().map(|&n| prepare(&all[n], n)).collect();
        let layout = layout(all, &mut prepared)?;
        let columns = layout.len();
        let facts = deps::program_facts(self.prog);
        let mut params: Vec<String> = self
            .symbols
            .iter()
            .map(|s| format!("{SYMBOL_PREFIX}{s}"))
            .collect();
        for n in 0..self.ufs.len() {
            params.push(format!("uf_min_{n}"));
            params.push(format!("uf_max_{n}"));
        }
        params.extend((0..fixed).map(|d| format!("fixed_{d}")));
        let mut domain = Vec::new();
        let mut schedule = Vec::new();
        for p in &prepared {
            let tuple: Vec<String> = (0..p.space.dims()).map(|d| format!("x{d}")).collect();
            let mut conj = p.space.conjunction_text(&p.constraints, Some(&facts));
            for (d, c) in all[p.stmt].dims.iter().enumerate() {
                if let Some(c) = c {
                    conj.push(format!("x{d} = {c}"));
                }
            }
            conj.extend((0..fixed).map(|d| format!("x{d} = fixed_{d}")));
            for d in depth..p.space.dims() {
                let (name, _) = p.space.application(d).expect("a slot");
                let n = self.uf_number(name);
                conj.push(format!("uf_min_{n} <= x{d} <= uf_max_{n}"));
            }
            let name = format!("S{}", p.stmt);
            domain.push(format!(
                "{name}[{}] : {}",
                tuple.join(", "),
                if conj.is_empty() {
                    "1 = 1".to_string()
                } else {
                    conj.join(" and ")
                }
            ));
            let mut image = vec!["0".to_string(); columns];
            for (d, &col) in p.columns.iter().enumerate() {
                image[col] = format!("x{d}");
            }
            schedule.push(format!(
                "{name}[{}] -> [{}]",
                tuple.join(", "),
                image.join(", ")
            ));
        }
        let params = params.join(", ");
        // What holds for every array is also known of its smallest value.
        let mut context: Vec<String> = facts
            .0
            .iter()
            .filter_map(|f| {
                let n = self.ufs.iter().position(|(name, _)| *name == f.name)?;
                Some(format!("uf_min_{n} >= {}", isl_affine(f.lower.as_ref()?)))
            })
            .collect();
        for (d, (first, end)) in fixed_ranges.iter().enumerate() {
            context.push(format!(
                "{} <= fixed_{d} < {}",
                isl_affine(first),
                isl_affine(end)
            ));
        }
        let all_columns: Vec<String> = (0..columns).map(|c| format!("t{c}")).collect();
        let ast = Isl::new()
            .with_operation_limit(AST_OPERATION_LIMIT)
            .ast(
                &format!("[{params}] -> {{ : {} }}", context.join(" and ")),
                &format!("[{params}] -> {{ {} }}", domain.join("; ")),
                &format!("{{ {} }}", schedule.join("; ")),
                // Separate pieces where different statements run (the peeled iterations
                // of a shifted fusion) rather than guarding each instance.
                Some(&format!(
                    "{{ [{}] -> separate[x] }}",
                    all_columns.join(", ")
                )),
            )
            .map_err(|e| {
                let why = match e.contains("maximal number of operations") {
                    true => format!(
                        "isl gave up after {AST_OPERATION_LIMIT} operations (fuse fewer \
                         statements with different bounds, or separate them with constant \
                         schedule dimensions)"
                    ),
                    false => e,
                };
                SpfError::general(format!("generating the loops with isl: {why}"))
            })?;
        let walk = ReadBack {
            all,
            prepared: &prepared,
            layout: &layout,
            fixed,
            parallel,
            leaf,
        };
        walk.ast(self, &ast, env)
    }
}

/// The common schedule's columns: for each execution dimension, the slots evaluated
/// before it (ordered so that an application comes after those in its arguments), then
/// the dimension; each statement's `columns` are filled in.
fn layout(all: &[Scheduled], prepared: &mut [Prepared]) -> Result<Vec<Column>, SpfError> {
    let depth = all[prepared[0].stmt].dims.len();
    // (before, nesting, application) of every slot of every statement.
    let mut slots: Vec<(usize, usize, Term)> = Vec::new();
    let mut placed: Vec<Vec<(usize, usize, Term)>> = Vec::new();
    for p in prepared.iter() {
        let mine = placement(p, &all[p.stmt].dims);
        for s in &mine {
            if !slots.contains(s) {
                slots.push(s.clone());
            }
        }
        placed.push(mine);
    }
    let mut layout = Vec::new();
    for d in 0..=depth {
        let mut here: Vec<&(usize, usize, Term)> = slots.iter().filter(|s| s.0 == d).collect();
        here.sort_by_key(|s| s.1);
        layout.extend(here.into_iter().map(|s| Column::Slot {
            before: d,
            app: s.2.clone(),
        }));
        if d < depth {
            layout.push(Column::Dim(d));
        }
    }
    for (p, mine) in prepared.iter_mut().zip(&placed) {
        p.columns = (0..p.space.dims())
            .map(|d| {
                let column = if d < depth {
                    Column::Dim(d)
                } else {
                    let (before, _, app) = mine[d - depth].clone();
                    Column::Slot { before, app }
                };
                layout
                    .iter()
                    .position(|c| *c == column)
                    .expect("every column is laid out")
            })
            .collect();
    }
    check_slots_apart(all, prepared, &layout)?;
    Ok(layout)
}

/// A statement abstracted for isl. Arguments of UF applications are first rewritten
/// without the dimensions that other constraints define (`rowptr(k)` with `k = col(kk)`
/// becomes `rowptr(col(kk))`), so that a slot needs only loops to be evaluated.
fn prepare(s: &Scheduled, stmt: usize) -> Prepared {
    let depth = s.dims.len();
    let mut defs: Vec<Option<Affine>> = Vec::new();
    for d in 0..depth {
        let def = match s.dims[d] {
            Some(_) => None,
            None => classify(&s.constraints, d)
                .definition
                .map(|e| without_defined(&e, &defs, false)),
        };
        defs.push(def);
    }
    let mut space = Abstraction::new(depth);
    let constraints = s
        .constraints
        .iter()
        .map(|c| {
            space.constraint(&Constraint {
                expr: without_defined(&c.expr, &defs, false),
                kind: c.kind,
            })
        })
        .collect();
    Prepared {
        stmt,
        space,
        constraints,
        columns: Vec::new(),
    }
}

/// `e` with the defined dimensions (`defs`, already rewritten) replaced by their
/// definitions inside UF arguments, and also at the top level when `everywhere`.
fn without_defined(e: &Affine, defs: &[Option<Affine>], everywhere: bool) -> Affine {
    let mut out = Affine::constant(e.constant);
    for (c, t) in &e.terms {
        let replaced = match t {
            Term::Var(v) if everywhere => match defs.get(*v).and_then(Option::as_ref) {
                Some(def) => def.clone(),
                None => Affine::term(t.clone()),
            },
            Term::Uf(name, args) => Affine::term(Term::Uf(
                name.clone(),
                args.iter()
                    .map(|a| without_defined(a, defs, true))
                    .collect(),
            )),
            _ => Affine::term(t.clone()),
        };
        out = out.add_scaled(*c, &replaced);
    }
    out
}

/// Where each of a statement's slots goes: `(before, nesting, application)`. A slot comes
/// after the dimensions its arguments use and before the first dimension one of its
/// constraints bounds or defines; a slot only compared with outer dimensions (a guard)
/// goes before the next loop. An application in another's arguments comes no later.
fn placement(p: &Prepared, dims: &[Option<i64>]) -> Vec<(usize, usize, Term)> {
    let depth = dims.len();
    let apps = p.space.dims() - depth;
    let mut earliest = vec![0usize; apps];
    let mut nesting = vec![0usize; apps];
    for m in 0..apps {
        let (_, args) = p.space.application(depth + m).expect("a slot");
        for (_, t) in args.iter().flat_map(|a| &a.terms) {
            if let Term::Var(v) = t {
                if *v < depth {
                    earliest[m] = earliest[m].max(v + 1);
                } else {
                    // Inner applications were abstracted first.
                    earliest[m] = earliest[m].max(earliest[v - depth]);
                    nesting[m] = nesting[m].max(nesting[v - depth] + 1);
                }
            }
        }
    }
    let next_loop = |from: usize| (from..depth).find(|&d| dims[d].is_none()).unwrap_or(depth);
    let mut before: Vec<usize> = (0..apps)
        .map(|m| {
            let slot = Term::Var(depth + m);
            p.constraints
                .iter()
                .filter(|c| c.expr.terms.iter().any(|(_, t)| *t == slot))
                .filter_map(|c| {
                    c.expr
                        .terms
                        .iter()
                        .filter_map(|(_, t)| match t {
                            Term::Var(v) if *v < depth => Some(*v),
                            _ => None,
                        })
                        .max()
                })
                .filter(|&d| d >= earliest[m])
                .min()
                .unwrap_or_else(|| next_loop(earliest[m]))
        })
        .collect();
    for m in (0..apps).rev() {
        for n in m + 1..apps {
            let (_, args) = p.space.application(depth + n).expect("a slot");
            let uses = args
                .iter()
                .flat_map(|a| &a.terms)
                .any(|(_, t)| *t == Term::Var(depth + m));
            if uses {
                before[m] = before[m].min(before[n]);
            }
        }
    }
    (0..apps)
        .map(|m| {
            let concrete = p.space.concretize(&Affine::term(Term::Var(depth + m)));
            let app = concrete.terms[0].1.clone();
            (before[m], nesting[m], app)
        })
        .collect()
}

/// Whether two statements can never share the values of execution dimensions
/// `0..upto`: some dimension among them is a different constant in each.
fn apart(a: &Scheduled, b: &Scheduled, upto: usize) -> bool {
    (0..upto).any(|d| matches!((a.dims[d], b.dims[d]), (Some(x), Some(y)) if x != y))
}

/// No two statements may run at the same execution tuple (isl would order them
/// arbitrarily).
fn check_distinct(all: &[Scheduled], items: &[usize]) -> Result<(), SpfError> {
    for (k, &a) in items.iter().enumerate() {
        for &b in &items[k + 1..] {
            let depth = all[a].dims.len();
            if !apart(&all[a], &all[b], depth) {
                return Err(SpfError::new(
                    format!(
                        "{} and {} may be scheduled at the same execution tuples: give them \
                         different constants in some schedule dimension",
                        all[a].stmt.name, all[b].stmt.name
                    ),
                    all[b].stmt.span,
                ));
            }
        }
    }
    Ok(())
}

/// Every loop has a lower and an upper bound of its own (isl would fail on a loop
/// without a lower bound and never end one without an upper bound).
fn check_bounded(all: &[Scheduled], items: &[usize]) -> Result<(), SpfError> {
    for s in items.iter().map(|&n| &all[n]) {
        for d in (0..s.dims.len()).filter(|&d| s.dims[d].is_none()) {
            let at = classify(&s.constraints, d);
            if at.definition.is_some() || (!at.lower.is_empty() && !at.upper.is_empty()) {
                continue;
            }
            return Err(SpfError::new(
                format!(
                    "execution dimension {d} of {} has no {} bound: every loop needs \
                     `lo <= var` and `var < hi` constraints with outer variables, symbols \
                     and functions of outer variables",
                    s.stmt.name,
                    if at.lower.is_empty() {
                        "lower"
                    } else {
                        "upper"
                    }
                ),
                s.stmt.span,
            ));
        }
    }
    Ok(())
}

/// A slot is evaluated in place of a loop: a statement that does not read it must never
/// share the loops around it with one that does (it would run once per value isl
/// assumes for the slot, not once).
fn check_slots_apart(
    all: &[Scheduled],
    prepared: &[Prepared],
    layout: &[Column],
) -> Result<(), SpfError> {
    for (column, c) in layout.iter().enumerate() {
        let Column::Slot { before, app } = c else {
            continue;
        };
        for a in prepared.iter().filter(|p| p.columns.contains(&column)) {
            for b in prepared.iter().filter(|p| !p.columns.contains(&column)) {
                let (sa, sb) = (&all[a.stmt], &all[b.stmt]);
                if !apart(sa, sb, *before) {
                    let names = sa.names.clone();
                    return Err(SpfError::new(
                        format!(
                            "{} and {} share the loops before execution dimension {before}, \
                             where only {} reads `{}` to bound or define a loop: separate \
                             them with a constant schedule dimension before it",
                            sa.stmt.name,
                            sb.stmt.name,
                            sa.stmt.name,
                            Affine::term(app.clone()).display(&names)
                        ),
                        sb.stmt.span,
                    ));
                }
            }
        }
    }
    Ok(())
}
