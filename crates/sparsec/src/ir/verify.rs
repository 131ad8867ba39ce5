//! The IR verifier: structural checks every lowered function must pass. Lowering runs it
//! in debug builds and tests, so a lowering bug is reported where it is made instead of
//! as a C compiler error or a wrong answer.

use std::collections::HashSet;

use super::visit;
use super::{
    ArrayRef, Expr, Function, LocalType, Loop, LoopKind, Mapping, MemorySpace, ParallelUnit,
    Reduction, Scratch, Stmt, Store, Type, Var,
};

/// A broken invariant of a function, described for the compiler's developers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid IR: {0}")]
pub struct VerifyError(pub String);

/// Check `function`: every variable is declared once on any path and before its uses;
/// declared types match initial values; loop variables are indices; every array names
/// an operand or a scratch array allocated around its use; no symbol is left; the
/// assumptions read scalars only; parallel loops nest as their units allow, with their
/// scratch arrays in the memory of where they are allocated.
pub fn verify(function: &Function) -> Result<(), VerifyError> {
    let mut v = Verifier {
        function,
        in_scope: Vec::new(),
        declared: HashSet::new(),
        allocated: function.locals.iter().map(|l| l.array).collect(),
        units: Vec::new(),
    };
    if let Some(l) = function
        .locals
        .iter()
        .find(|l| l.space != MemorySpace::Global)
    {
        return v.fail(format!(
            "scratch array `{}` is allocated around the body in {:?} memory, not Global",
            function.scratch_info(l.array).hint,
            l.space
        ));
    }
    for (e, message) in &function.assumptions {
        v.expr(e)?;
        let mut reads_array = false;
        visit::walk_expr(e, &mut |sub| {
            reads_array |= matches!(sub, Expr::Load(..) | Expr::Call(..));
        });
        // A launcher checks them on the host, before any array is on a device.
        if reads_array {
            return v.fail(format!("the assumption \"{message}\" reads an array"));
        }
    }
    for l in &function.locals {
        v.expr(&l.len)?;
    }
    v.block(&function.body)
}

struct Verifier<'a> {
    function: &'a Function,
    /// Variables visible here, innermost scope last.
    in_scope: Vec<Vec<Var>>,
    /// Variables visible here, as a set.
    declared: HashSet<Var>,
    /// Scratch arrays allocated around this point.
    allocated: Vec<Scratch>,
    /// The units of the parallel loops around this point, outermost first.
    units: Vec<ParallelUnit>,
}

impl Verifier<'_> {
    fn fail<T>(&self, what: String) -> Result<T, VerifyError> {
        Err(VerifyError(what))
    }

    fn var_name(&self, v: Var) -> String {
        format!("`{}` (#{})", self.function.var(v).hint, v.index())
    }

    fn block(&mut self, stmts: &[Stmt]) -> Result<(), VerifyError> {
        self.in_scope.push(Vec::new());
        let result = stmts.iter().try_for_each(|s| self.stmt(s));
        for v in self.in_scope.pop().expect("scope") {
            self.declared.remove(&v);
        }
        result
    }

    fn declare(&mut self, v: Var) -> Result<(), VerifyError> {
        if v.index() >= self.function.vars.len() {
            return self.fail(format!("variable #{} is not in the table", v.index()));
        }
        if !self.declared.insert(v) {
            return self.fail(format!(
                "{} is declared again where it is already visible",
                self.var_name(v)
            ));
        }
        self.in_scope.last_mut().expect("scope").push(v);
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), VerifyError> {
        match s {
            Stmt::Decl(v, e) => {
                let ty = self.expr(e)?;
                self.assignable(*v, ty)?;
                self.declare(*v)
            }
            Stmt::Assign(v, e) => {
                let ty = self.expr(e)?;
                self.used(*v)?;
                self.assignable(*v, ty)
            }
            Stmt::Store(store) => {
                self.index(&store.index)?;
                self.array(&store.array)?;
                let ty = self.expr(&store.value)?;
                if ty == Type::Bool {
                    return self.fail("a store writes a truth value".into());
                }
                Ok(())
            }
            Stmt::For(l) => {
                let Loop {
                    var, body, kind, ..
                } = l;
                self.index(&l.start)?;
                self.index(&l.end)?;
                if self.function.var(*var).ty != Type::Index {
                    return self.fail(format!(
                        "loop variable {} is not an index",
                        self.var_name(*var)
                    ));
                }
                let allocated = self.allocated.len();
                let units = self.units.len();
                if let LoopKind::Team { work, all } = kind {
                    self.index(work)?;
                    self.index(all)?;
                    self.team_loop(body)?;
                }
                if let LoopKind::Parallel {
                    unit,
                    mapping,
                    reductions,
                    locals,
                    ..
                } = kind
                {
                    self.parallel_loop(*unit, mapping, body)?;
                    self.units.push(*unit);
                    let space = MemorySpace::inside(self.units.iter().copied());
                    if let Some(l) = locals.iter().find(|l| l.space != space) {
                        return self.fail(format!(
                            "scratch array `{}` of a {unit:?} loop is in {:?} memory, not {space:?}",
                            self.function.scratch_info(l.array).hint,
                            l.space
                        ));
                    }
                    for r in reductions {
                        match r {
                            Reduction::Scalar(v) => self.used(*v)?,
                            Reduction::Array(a, len) => {
                                self.array(a)?;
                                self.index(len)?;
                            }
                        }
                    }
                    for l in locals {
                        self.index(&l.len)?;
                    }
                    self.allocated.extend(locals.iter().map(|l| l.array));
                }
                self.in_scope.push(Vec::new());
                self.declare(*var)?;
                let result = self.block(body);
                for v in self.in_scope.pop().expect("scope") {
                    self.declared.remove(&v);
                }
                self.allocated.truncate(allocated);
                self.units.truncate(units);
                result
            }
            Stmt::Atomic(inner) => match inner.as_ref() {
                Stmt::Store(Store { .. }) | Stmt::Assign(..) => self.stmt(inner),
                _ => self.fail("an atomic statement is not a single update".into()),
            },
            Stmt::While(c, body) => {
                self.condition(c)?;
                self.block(body)
            }
            Stmt::If(c, then, otherwise) => {
                self.condition(c)?;
                self.block(then)?;
                self.block(otherwise)
            }
            Stmt::Emit { coords, value } => {
                if let super::OutputMode::Emit { order } = self.function.output {
                    if coords.len() != order {
                        return self.fail(format!(
                            "an emit has {} coordinates, the output has order {order}",
                            coords.len()
                        ));
                    }
                } else {
                    return self.fail(format!(
                        "an emit in a function whose output mode is {:?}",
                        self.function.output
                    ));
                }
                coords.iter().try_for_each(|c| self.index(c))?;
                self.expr(value).map(|_| ())
            }
            Stmt::Block(body) => self.block(body),
            Stmt::OrderTouched {
                list,
                len,
                flags,
                marks,
                width,
            } => {
                self.scratch(*list, LocalType::Index)?;
                self.scratch(*flags, LocalType::Flag)?;
                self.scratch(*marks, LocalType::Index)?;
                self.index(len)?;
                self.index(width)
            }
            Stmt::Prefetch { array, index } => {
                self.array(array)?;
                self.index(index)
            }
            // The kernels' own arguments are checked where they are outlined.
            Stmt::Launch(_) => Ok(()),
            Stmt::Barrier => match self.units.last() {
                Some(ParallelUnit::GpuBlock) => Ok(()),
                innermost => self.fail(format!(
                    "a barrier whose innermost parallel loop is {innermost:?}, not a GpuBlock loop"
                )),
            },
        }
    }

    /// A parallel loop on `unit` may sit here, and `mapping` suits it: CPU and GPU loops
    /// do not nest in one another; GPU loops nest block, warp, thread, with a block loop
    /// around every warp and thread loop and thread loops inside every block loop.
    fn parallel_loop(
        &self,
        unit: ParallelUnit,
        mapping: &Mapping,
        body: &[Stmt],
    ) -> Result<(), VerifyError> {
        if unit.is_gpu() != matches!(mapping, Mapping::Gpu { .. }) {
            return self.fail(format!("a {unit:?} loop is mapped as {mapping:?}"));
        }
        if let Some(outer) = self.units.iter().find(|u| u.is_gpu() != unit.is_gpu()) {
            return self.fail(format!("a {unit:?} loop inside a {outer:?} loop"));
        }
        let Some(rank) = unit.gpu_rank() else {
            return Ok(());
        };
        if let Some(outer) = self.units.iter().find(|u| u.gpu_rank() > Some(rank)) {
            return self.fail(format!("a {unit:?} loop inside a {outer:?} loop"));
        }
        if rank > 0 && !self.units.contains(&ParallelUnit::GpuBlock) {
            return self.fail(format!("a {unit:?} loop outside every GpuBlock loop"));
        }
        let mut threads = false;
        visit::walk_stmts(body, &mut |s| {
            threads |= matches!(
                s,
                Stmt::For(Loop {
                    kind: LoopKind::Parallel {
                        unit: ParallelUnit::GpuThread,
                        ..
                    },
                    ..
                })
            )
        });
        if unit == ParallelUnit::GpuBlock && !threads {
            return self.fail("a GpuBlock loop holds no GpuThread loop".into());
        }
        Ok(())
    }

    /// A team loop sits outside every parallel loop and every other team loop; the
    /// thread loops it shares among its team sit directly in its body, `if`s and blocks
    /// (where every thread reaches them), and have no scratch arrays, sums or emits.
    fn team_loop(&self, body: &[Stmt]) -> Result<(), VerifyError> {
        if let Some(outer) = self.units.last() {
            return self.fail(format!("a team loop inside a {outer:?} loop"));
        }
        let mut nested = false;
        visit::walk_stmts(body, &mut |s| {
            nested |= matches!(
                s,
                Stmt::For(Loop {
                    kind: LoopKind::Team { .. },
                    ..
                })
            );
        });
        if nested {
            return self.fail("a team loop inside a team loop".into());
        }
        self.team_body(body)
    }

    fn team_body(&self, body: &[Stmt]) -> Result<(), VerifyError> {
        for s in body {
            match s {
                Stmt::For(Loop {
                    kind:
                        LoopKind::Parallel {
                            unit: ParallelUnit::CpuThread,
                            reductions,
                            locals,
                            ..
                        },
                    body,
                    ..
                }) => {
                    let mut emits = false;
                    visit::walk_stmts(body, &mut |s| emits |= matches!(s, Stmt::Emit { .. }));
                    if !reductions.is_empty() || !locals.is_empty() || emits {
                        return self
                            .fail("a team's thread loop has sums, scratch arrays or emits".into());
                    }
                }
                Stmt::If(_, then, otherwise) => {
                    self.team_body(then)?;
                    self.team_body(otherwise)?;
                }
                Stmt::Block(inner) => self.team_body(inner)?,
                _ => {
                    let mut threads = false;
                    visit::walk_stmts(std::slice::from_ref(s), &mut |s| {
                        threads |= matches!(
                            s,
                            Stmt::For(Loop {
                                kind: LoopKind::Parallel { unit, .. },
                                ..
                            }) if *unit != ParallelUnit::CpuVector
                        );
                    });
                    if threads {
                        return self.fail(
                            "a team's thread or GPU loop is inside a statement that one thread runs"
                                .into(),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    fn used(&self, v: Var) -> Result<(), VerifyError> {
        if self.declared.contains(&v) {
            Ok(())
        } else {
            self.fail(format!(
                "{} is used where it is not declared",
                self.var_name(v)
            ))
        }
    }

    fn assignable(&self, v: Var, ty: Type) -> Result<(), VerifyError> {
        let declared = self.function.var(v).ty;
        let fits = match (declared, ty) {
            (Type::Value(_), Type::Bool) => false,
            (Type::Value(_), _) => true,
            (a, b) => a == b,
        };
        if fits {
            Ok(())
        } else {
            self.fail(format!(
                "{} of type {declared:?} is given a value of type {ty:?}",
                self.var_name(v)
            ))
        }
    }

    fn scratch(&self, s: Scratch, ty: LocalType) -> Result<(), VerifyError> {
        self.array(&ArrayRef::Scratch(s))?;
        if self.function.scratch_info(s).ty != ty {
            return self.fail(format!(
                "scratch array `{}` has the wrong element type",
                self.function.scratch_info(s).hint
            ));
        }
        Ok(())
    }

    fn array(&self, a: &ArrayRef) -> Result<(), VerifyError> {
        match a {
            ArrayRef::Level { operand, .. } | ArrayRef::Values(operand)
                if operand.0 >= self.function.operands.len() =>
            {
                self.fail(format!("operand #{} does not exist", operand.0))
            }
            ArrayRef::Scratch(s) if !self.allocated.contains(s) => self.fail(format!(
                "scratch array `{}` is used where it is not allocated",
                self.function
                    .scratch
                    .get(s.index())
                    .map_or("?", |i| i.hint.as_str())
            )),
            _ => Ok(()),
        }
    }

    fn index(&self, e: &Expr) -> Result<(), VerifyError> {
        match self.expr(e)? {
            Type::Index | Type::Bool => Ok(()),
            ty => self.fail(format!("an index expression has type {ty:?}: {e:?}")),
        }
    }

    fn condition(&self, e: &Expr) -> Result<(), VerifyError> {
        self.expr(e).map(|_| ())
    }

    /// The type of `e`, after checking its parts.
    fn expr(&self, e: &Expr) -> Result<Type, VerifyError> {
        let mut problem = None;
        visit::walk_expr(e, &mut |sub| match sub {
            Expr::Var(v) if problem.is_none() => problem = self.used(*v).err(),
            Expr::Symbol(s) if problem.is_none() => {
                problem = Some(VerifyError(format!("symbol {s:?} was not resolved")))
            }
            Expr::Call(helper, a, _)
                if problem.is_none() && self.function.narrow_arrays.contains(a) =>
            {
                problem = Some(VerifyError(format!(
                    "{} reads an `int64_t` array, but {a:?} is stored as `int32_t`",
                    helper.name
                )))
            }
            Expr::Load(a, _) | Expr::Call(_, a, _) if problem.is_none() => {
                problem = self.array(a).err()
            }
            Expr::Param(
                super::ParamRef::Length(array)
                | super::ParamRef::Scattered(array)
                | super::ParamRef::Uneven(array),
            ) if problem.is_none() => {
                let input = array
                    .input_operand()
                    .is_some_and(|operand| operand.0 < self.function.operands.len());
                if !input {
                    problem = Some(VerifyError(format!(
                        "a parameter describes {array:?}, which is not an input's array"
                    )))
                }
            }
            _ => {}
        });
        if let Some(p) = problem {
            return Err(p);
        }
        Ok(self.function.type_of(e))
    }
}

#[cfg(test)]
mod tests;
