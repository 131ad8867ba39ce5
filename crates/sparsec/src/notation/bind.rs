//! Binding: check a parsed assignment against tensor declarations and produce concrete
//! index notation with explicit, placed reductions.

use super::ast::{self, Assignment, Expr, ExprKind, MathFn, Op, Span};
use super::cin::{self, CExpr, IndexVar, Statement, TensorId, TensorVar, VarId};
use super::error::{NotationError, NotationErrorKind};
use super::fill;
use super::semiring::Semiring;
use crate::format::Format;

/// What the caller knows about a tensor named in the expression.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDecl {
    pub name: String,
    /// Dimension sizes; `None` infers them from the index variables' sizes.
    pub dims: Option<Vec<usize>>,
    /// Storage format; `None` is all-dense of the access's order.
    pub format: Option<Format>,
    /// The value of the components the tensor does not store (0 unless declared): an
    /// input read with another fill value is refused, since the kernel's iteration depends
    /// on it (see [`Statement::output_fill`]).
    pub fill: f64,
}

impl TensorDecl {
    /// A declaration with neither dimensions nor format.
    pub fn new(name: impl Into<String>) -> TensorDecl {
        TensorDecl {
            name: name.into(),
            dims: None,
            format: None,
            fill: 0.0,
        }
    }
    /// With dimension sizes.
    pub fn with_dims(mut self, dims: &[usize]) -> TensorDecl {
        self.dims = Some(dims.to_vec());
        self
    }
    /// With a storage format.
    pub fn with_format(mut self, format: Format) -> TensorDecl {
        self.format = Some(format);
        self
    }
    /// With the value of its unstored components.
    pub fn with_fill(mut self, fill: f64) -> TensorDecl {
        self.fill = fill;
        self
    }
}

struct Binder<'a> {
    assignment: &'a Assignment,
    decls: &'a [TensorDecl],
    /// Per tensor id: declaration and number of indices.
    tensors: Vec<(&'a TensorDecl, usize)>,
    var_names: Vec<String>,
    var_first_span: Vec<Span>,
    /// Per variable: size and where it comes from (description, span of that use).
    sizes: Vec<Option<(usize, String, Option<Span>)>>,
    /// Per variable: number of right-hand-side accesses that use it.
    rhs_uses: Vec<usize>,
    on_lhs: Vec<bool>,
    /// Every access, left-hand side first, with its tensor and variables: checked against
    /// the tensor's dimensions once all sizes are known.
    accesses: Vec<(&'a ast::Access, TensorId, Vec<VarId>)>,
}

impl<'a> Binder<'a> {
    fn error(&self, kind: NotationErrorKind, span: Span) -> NotationError {
        NotationError::new(kind, &self.assignment.source, span)
    }

    fn decl(&self, access: &ast::Access) -> Result<&'a TensorDecl, NotationError> {
        self.decls
            .iter()
            .find(|d| d.name == access.tensor)
            .ok_or_else(|| {
                self.error(
                    NotationErrorKind::UnknownTensor {
                        name: access.tensor.clone(),
                        declared: self.decls.iter().map(|d| d.name.clone()).collect(),
                    },
                    access.tensor_span,
                )
            })
    }

    fn var(&mut self, name: &str, span: Span) -> VarId {
        if let Some(v) = self.var_names.iter().position(|n| n == name) {
            return v;
        }
        self.var_names.push(name.to_string());
        self.var_first_span.push(span);
        self.sizes.push(None);
        self.rhs_uses.push(0);
        self.on_lhs.push(false);
        self.var_names.len() - 1
    }

    /// Resolve the tensor of an access, checking its arity against the declaration and
    /// earlier accesses.
    fn tensor(&mut self, access: &ast::Access) -> Result<TensorId, NotationError> {
        let arity = access.indices.len();
        if let Some(id) = self
            .tensors
            .iter()
            .position(|(d, _)| d.name == access.tensor)
        {
            let expected = self.tensors[id].1;
            if expected != arity {
                let reason = match &self.tensors[id].0.dims {
                    Some(dims) => format!("declared with dimensions {}", dims_text(dims)),
                    None => format!(
                        "accessed with {expected} {} elsewhere in the expression",
                        if expected == 1 { "index" } else { "indices" }
                    ),
                };
                return Err(self.error(
                    NotationErrorKind::WrongIndexCount {
                        tensor: access.tensor.clone(),
                        expected,
                        got: arity,
                        reason,
                    },
                    access.span,
                ));
            }
            return Ok(id);
        }
        let decl = self.decl(access)?;
        if let Some(dims) = &decl.dims {
            if dims.len() != arity {
                return Err(self.error(
                    NotationErrorKind::WrongIndexCount {
                        tensor: access.tensor.clone(),
                        expected: dims.len(),
                        got: arity,
                        reason: format!("declared with dimensions {}", dims_text(dims)),
                    },
                    access.span,
                ));
            }
        }
        if let Some(format) = &decl.format {
            if format.order() != arity {
                return Err(self.error(
                    NotationErrorKind::FormatOrderMismatch {
                        tensor: access.tensor.clone(),
                        format: format.spelling(),
                        format_order: format.order(),
                        arity,
                    },
                    access.span,
                ));
            }
        }
        self.tensors.push((decl, arity));
        Ok(self.tensors.len() - 1)
    }

    /// Record the sizes the tensor's declared dimensions give its index variables.
    fn sizes_from(&mut self, access: &ast::Access, vars: &[VarId]) -> Result<(), NotationError> {
        let decl = self.decl(access)?;
        let Some(dims) = &decl.dims else {
            return Ok(());
        };
        for (m, (&v, &size)) in vars.iter().zip(dims).enumerate() {
            let here = format!("mode {m} of `{}`", access.tensor);
            match &self.sizes[v] {
                None => self.sizes[v] = Some((size, here, Some(access.index_spans[m]))),
                Some((known, source, _)) if *known != size => {
                    return Err(self.error(
                        NotationErrorKind::SizeConflict {
                            var: self.var_names[v].clone(),
                            size: *known,
                            source: source.clone(),
                            other_size: size,
                            other_source: here,
                        },
                        access.index_spans[m],
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    fn access_vars(&mut self, access: &ast::Access) -> Vec<VarId> {
        access
            .indices
            .iter()
            .zip(&access.index_spans)
            .map(|(name, &span)| self.var(name, span))
            .collect()
    }

    /// The right-hand side without reductions, collecting tensors and variables.
    fn resolve(&mut self, expr: &'a ast::Expr) -> Result<CExpr, NotationError> {
        Ok(match &expr.kind {
            ExprKind::Literal(x) => CExpr::Literal(*x),
            ExprKind::Neg(e) => CExpr::Neg(Box::new(self.resolve(e)?)),
            ExprKind::Math(f, args) => CExpr::Math(
                *f,
                args.iter()
                    .map(|a| self.resolve(a))
                    .collect::<Result<_, _>>()?,
            ),
            ExprKind::Binary(op, a, b) => {
                let a = self.resolve(a)?;
                let b = self.resolve(b)?;
                CExpr::Binary(*op, Box::new(a), Box::new(b))
            }
            ExprKind::Access(access) => {
                if access.tensor == self.assignment.lhs.tensor {
                    return Err(self.error(
                        NotationErrorKind::OutputOnRight {
                            tensor: access.tensor.clone(),
                        },
                        access.span,
                    ));
                }
                let tensor = self.tensor(access)?;
                let indices = self.access_vars(access);
                for &v in &indices {
                    self.rhs_uses[v] += 1;
                }
                self.sizes_from(access, &indices)?;
                self.accesses.push((access, tensor, indices.clone()));
                CExpr::Access(cin::Access { tensor, indices })
            }
        })
    }
}

fn dims_text(dims: &[usize]) -> String {
    if dims.is_empty() {
        return "() (a scalar)".into();
    }
    dims.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// Position of the first index that repeats an earlier one.
fn repeated(indices: &[String]) -> Option<usize> {
    (1..indices.len()).find(|&k| indices[..k].contains(&indices[k]))
}

/// Wrap every reduction variable's `Sum` around the smallest subexpression holding all its
/// uses. Returns the expression and, per variable, how many of its uses lie inside it and
/// are not yet enclosed by their `Sum`.
fn place(expr: CExpr, total: &[usize], reduce: &[bool]) -> (CExpr, Vec<usize>) {
    let (expr, mut open) = match expr {
        CExpr::Access(a) => {
            let mut open = vec![0; total.len()];
            for &v in &a.indices {
                if reduce[v] {
                    open[v] += 1;
                }
            }
            (CExpr::Access(a), open)
        }
        CExpr::Literal(x) => (CExpr::Literal(x), vec![0; total.len()]),
        CExpr::Neg(e) => {
            let (e, open) = place(*e, total, reduce);
            (CExpr::Neg(Box::new(e)), open)
        }
        CExpr::Binary(op, a, b) => {
            let (a, mut open) = place(*a, total, reduce);
            let (b, open_b) = place(*b, total, reduce);
            for (x, y) in open.iter_mut().zip(open_b) {
                *x += y;
            }
            (CExpr::Binary(op, Box::new(a), Box::new(b)), open)
        }
        CExpr::Math(f, args) => {
            let mut open = vec![0; total.len()];
            let mut placed = Vec::with_capacity(args.len());
            for a in args {
                let (a, open_a) = place(a, total, reduce);
                for (x, y) in open.iter_mut().zip(open_a) {
                    *x += y;
                }
                placed.push(a);
            }
            (CExpr::Math(f, placed), open)
        }
        CExpr::Sum(v, e) => {
            let (e, open) = place(*e, total, reduce);
            (CExpr::Sum(v, Box::new(e)), open)
        }
    };
    let mut expr = expr;
    // Variables are numbered in order of first appearance: wrap the last first so the
    // first ends up outermost.
    for v in (0..total.len()).rev() {
        if open[v] > 0 && open[v] == total[v] {
            expr = CExpr::Sum(v, Box::new(expr));
            open[v] = 0;
        }
    }
    (expr, open)
}

/// Check `assignment` against the declarations and produce concrete index notation.
///
/// `var_sizes` gives sizes of index variables that no declared dimension determines (or
/// confirms ones that do; a conflict is an error). Every right-hand-side variable that is
/// not on the left-hand side is summed by a `Sum` around the smallest subexpression that
/// holds all its uses; several `Sum`s at the same place nest in order of first
/// appearance, outermost first.
///
/// ```
/// use sparsec::notation::{bind, parse, TensorDecl};
/// let a = parse("y(i) = A(i,j) * x(j)").unwrap();
/// let decls = [
///     TensorDecl::new("y"),
///     TensorDecl::new("A").with_dims(&[3, 4]),
///     TensorDecl::new("x"),
/// ];
/// let stmt = bind(&a, &decls, &[]).unwrap();
/// assert_eq!(stmt.tensors[0].dims, vec![3]);
/// assert_eq!(stmt.tensors[2].dims, vec![4]);
/// ```
pub fn bind(
    assignment: &Assignment,
    decls: &[TensorDecl],
    var_sizes: &[(String, usize)],
) -> Result<Statement, NotationError> {
    let mut b = Binder {
        assignment,
        decls,
        tensors: vec![],
        var_names: vec![],
        var_first_span: vec![],
        sizes: vec![],
        rhs_uses: vec![],
        on_lhs: vec![],
        accesses: vec![],
    };
    let lhs = &assignment.lhs;
    let lhs_id = b.tensor(lhs)?;
    if let Some(k) = repeated(&lhs.indices) {
        return Err(b.error(
            NotationErrorKind::RepeatedOutputIndex {
                var: lhs.indices[k].clone(),
            },
            lhs.index_spans[k],
        ));
    }
    let lhs_vars = b.access_vars(lhs);
    for &v in &lhs_vars {
        b.on_lhs[v] = true;
    }
    b.sizes_from(lhs, &lhs_vars)?;
    b.accesses.push((lhs, lhs_id, lhs_vars.clone()));
    if let Some(over) = &assignment.over {
        if !over.semiring.is_arithmetic() {
            check_semiring_operations(&assignment.rhs, &over.semiring, &assignment.source)?;
        }
    }
    let rhs = b.resolve(&assignment.rhs)?;

    for (name, size) in var_sizes {
        let Some(v) = b.var_names.iter().position(|n| n == name) else {
            continue;
        };
        match &b.sizes[v] {
            None => b.sizes[v] = Some((*size, format!("the given size of `{name}`"), None)),
            Some((known, source, span)) if known != size => {
                return Err(b.error(
                    NotationErrorKind::SizeConflict {
                        var: name.clone(),
                        size: *size,
                        source: format!("the given size of `{name}`"),
                        other_size: *known,
                        other_source: source.clone(),
                    },
                    span.unwrap_or(b.var_first_span[v]),
                ))
            }
            Some(_) => {}
        }
    }
    let mut vars = Vec::with_capacity(b.var_names.len());
    for (v, name) in b.var_names.iter().enumerate() {
        let Some((size, _, _)) = b.sizes[v] else {
            return Err(b.error(
                NotationErrorKind::UnknownSize { var: name.clone() },
                b.var_first_span[v],
            ));
        };
        vars.push(IndexVar {
            name: name.clone(),
            size,
        });
    }

    let tensors: Vec<TensorVar> = b
        .tensors
        .iter()
        .enumerate()
        .map(|(id, (decl, arity))| {
            // An undeclared tensor takes its dimensions from its first access.
            let dims = decl.dims.clone().unwrap_or_else(|| {
                let (_, _, first) = b
                    .accesses
                    .iter()
                    .find(|(_, t, _)| *t == id)
                    .expect("every tensor is accessed");
                first.iter().map(|&v| vars[v].size).collect()
            });
            TensorVar {
                name: decl.name.clone(),
                dims,
                format: decl.format.clone().unwrap_or_else(|| Format::dense(*arity)),
                fill: decl.fill,
            }
        })
        .collect();
    check_mode_sizes(&b, &tensors, &vars)?;

    let reduce: Vec<bool> = (0..vars.len())
        .map(|v| !b.on_lhs[v] && b.rhs_uses[v] > 0)
        .collect();
    let (rhs, open) = place(rhs, &b.rhs_uses, &reduce);
    debug_assert!(open.iter().all(|&n| n == 0));
    let semiring: Semiring = assignment
        .over
        .as_ref()
        .map(|o| o.semiring.clone())
        .unwrap_or_default();
    check_fills(&b, &tensors, &semiring)?;
    let rhs = fill::read_absent_as_fill(rhs, &tensors, &semiring);
    Ok(Statement {
        tensors,
        vars,
        lhs: lhs_vars,
        accumulate: assignment.accumulate,
        rhs,
        semiring,
    })
}

/// The output's fill value is computed, never declared; over a semiring other than
/// `(+, *)` an input's missing entries are absent (0 or ⊕'s identity), not a value.
fn check_fills(
    b: &Binder<'_>,
    tensors: &[TensorVar],
    semiring: &Semiring,
) -> Result<(), NotationError> {
    let access_of = |id: TensorId| {
        b.accesses
            .iter()
            .find(|(_, t, _)| *t == id)
            .expect("every tensor is accessed")
            .0
            .span
    };
    if tensors[0].fill != 0.0 {
        return Err(b.error(
            NotationErrorKind::BadFill {
                tensor: tensors[0].name.clone(),
                fill: tensors[0].fill.to_string(),
                problem: "an output's fill value is computed from the statement, not declared"
                    .into(),
            },
            access_of(0),
        ));
    }
    if semiring.is_arithmetic() {
        return Ok(());
    }
    let identity = semiring.add.identity();
    for (id, t) in tensors.iter().enumerate().skip(1) {
        if t.fill != 0.0 && t.fill.to_bits() != identity.to_bits() {
            return Err(b.error(
                NotationErrorKind::BadFill {
                    tensor: t.name.clone(),
                    fill: t.fill.to_string(),
                    problem: format!(
                        "over the semiring {semiring} a missing entry is absent, as {identity} \
                         is to its reduction, not a value; give `{}` fill value 0 or \
                         {identity}",
                        t.name
                    ),
                },
                access_of(id),
            ));
        }
    }
    Ok(())
}

/// Over a semiring other than `(+, *)`, the right-hand side may use its `+` and `*`,
/// accesses, and conditions (comparisons, `pattern`, `1 - condition`) as
/// factors, which mask the other factor (how masks `C<M>` are written): no `-`, `/` or
/// other function, whose value where an operand is absent the semiring does not define.
fn check_semiring_operations(
    e: &Expr,
    semiring: &Semiring,
    source: &str,
) -> Result<(), NotationError> {
    let refuse = |what: String, span| {
        Err(NotationError::new(
            NotationErrorKind::NotInSemiring {
                what,
                semiring: semiring.to_string(),
            },
            source,
            span,
        ))
    };
    match &e.kind {
        ExprKind::Access(_) => Ok(()),
        // A literal factor would be indistinguishable from what lowering leaves of a
        // mask's condition where its operand is absent (`1 - pattern(M)` is 1 there).
        ExprKind::Literal(_) => refuse("a constant".into(), e.span),
        ExprKind::Binary(Op::Mul, a, b) if is_condition(a) => {
            check_semiring_operations(b, semiring, source)
        }
        ExprKind::Binary(Op::Mul, a, b) if is_condition(b) => {
            check_semiring_operations(a, semiring, source)
        }
        ExprKind::Binary(Op::Add | Op::Mul, a, b) => {
            check_semiring_operations(a, semiring, source)?;
            check_semiring_operations(b, semiring, source)
        }
        ExprKind::Binary(op, ..) => refuse(format!("`{}`", op.symbol()), e.span),
        ExprKind::Neg(_) => refuse("negation".into(), e.span),
        ExprKind::Math(f, _) => {
            let name = match f {
                MathFn::Abs => "abs",
                MathFn::Max => "max",
                MathFn::Min => "min",
                f => f.c_name(),
            };
            refuse(format!("`{name}`"), e.span)
        }
    }
}

/// True for an expression whose value is 1 or 0 by construction: a comparison, a
/// `pattern(..)`, or one minus either (a mask's complement).
pub fn is_condition(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Math(f, _) => f.is_condition(),
        ExprKind::Binary(Op::Sub, one, c) => {
            matches!(one.kind, ExprKind::Literal(x) if x == 1.0) && is_condition(c)
        }
        _ => false,
    }
}

/// Every access indexes each mode of its tensor with a variable of the mode's size: the
/// generated kernel trusts this, and a mismatch reads or writes out of bounds.
fn check_mode_sizes(
    b: &Binder<'_>,
    tensors: &[TensorVar],
    vars: &[IndexVar],
) -> Result<(), NotationError> {
    for (access, id, indices) in &b.accesses {
        for (mode, (&v, &dim)) in indices.iter().zip(&tensors[*id].dims).enumerate() {
            if vars[v].size == dim {
                continue;
            }
            let dim_source = match &b.tensors[*id].0.dims {
                Some(dims) => format!("declared dimensions {}", dims_text(dims)),
                None => {
                    let (first, _, _) = b
                        .accesses
                        .iter()
                        .find(|(_, t, _)| t == id)
                        .expect("this tensor is accessed");
                    format!(
                        "from the access `{}`",
                        &b.assignment.source[first.span.start..first.span.end]
                    )
                }
            };
            return Err(b.error(
                NotationErrorKind::ModeSizeMismatch {
                    tensor: access.tensor.clone(),
                    mode,
                    var: vars[v].name.clone(),
                    var_size: vars[v].size,
                    dim,
                    dim_source,
                },
                access.span,
            ));
        }
    }
    Ok(())
}
