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
mod tests {
    use super::*;
    use crate::ir::{Local, OperandId, OperandInfo, OutputMode, Symbol, ValueType};

    fn function() -> Function {
        let operands = vec![
            OperandInfo {
                hint: "y".into(),
                values: ValueType::F64,
            },
            OperandInfo {
                hint: "x".into(),
                values: ValueType::F64,
            },
        ];
        Function::new(
            operands,
            1,
            OutputMode::Dense {
                accumulate: false,
                zeroed_by_kernel: false,
            },
        )
    }

    /// `for i in 0..n { y[i] = x[i] }`, checked by the verifier after `edit`.
    fn verify_loop(edit: impl FnOnce(&mut Function, Var) -> Vec<Stmt>) -> Result<(), VerifyError> {
        let mut f = function();
        let i = f.fresh_var("i", Type::Index);
        let body = edit(&mut f, i);
        f.body = vec![Stmt::For(Loop {
            var: i,
            start: Expr::Int(0),
            end: Expr::Param(crate::ir::ParamRef::Extent(0)),
            body,
            kind: LoopKind::Serial,
        })];
        verify(&f)
    }

    fn copy(i: Var) -> Stmt {
        Stmt::Store(Store {
            array: ArrayRef::Values(OperandId(0)),
            index: Expr::Var(i),
            value: Expr::load(ArrayRef::Values(OperandId(1)), Expr::Var(i)),
            accumulate: false,
        })
    }

    #[test]
    fn a_well_formed_loop_passes() {
        assert_eq!(verify_loop(|_, i| vec![copy(i)]), Ok(()));
    }

    #[test]
    fn use_before_declaration_is_caught() {
        let err = verify_loop(|f, i| {
            let t = f.fresh_var("t", Type::Index);
            vec![Stmt::Assign(t, Expr::Var(i)), copy(i)]
        })
        .unwrap_err();
        assert!(
            err.0.contains("`t`") && err.0.contains("not declared"),
            "{err}"
        );
    }

    #[test]
    fn a_variable_declared_twice_on_one_path_is_caught() {
        let err = verify_loop(|_, i| vec![Stmt::Decl(i, Expr::Int(0))]).unwrap_err();
        assert!(err.0.contains("declared again"), "{err}");
        // Declaring it in two sibling scopes is fine.
        assert_eq!(
            verify_loop(|f, i| {
                let p = f.fresh_var("p", Type::Index);
                vec![
                    Stmt::If(Expr::Bool(true), vec![Stmt::Decl(p, Expr::Var(i))], vec![]),
                    Stmt::If(Expr::Bool(true), vec![Stmt::Decl(p, Expr::Var(i))], vec![]),
                ]
            }),
            Ok(())
        );
    }

    #[test]
    fn a_variable_out_of_its_scope_is_caught() {
        let err = verify_loop(|f, i| {
            let p = f.fresh_var("p", Type::Index);
            vec![
                Stmt::If(Expr::Bool(true), vec![Stmt::Decl(p, Expr::Var(i))], vec![]),
                Stmt::Assign(p, Expr::Int(1)),
            ]
        })
        .unwrap_err();
        assert!(err.0.contains("not declared"), "{err}");
    }

    #[test]
    fn types_must_match() {
        let err = verify_loop(|f, _| {
            let flag = f.fresh_var("flag", Type::Bool);
            vec![Stmt::Decl(flag, Expr::Float(1.5))]
        })
        .unwrap_err();
        assert!(err.0.contains("type"), "{err}");
        let err = verify_loop(|f, _| {
            let k = f.fresh_var("k", Type::Value(ValueType::F64));
            vec![Stmt::For(Loop {
                var: k,
                start: Expr::Int(0),
                end: Expr::Int(3),
                body: vec![],
                kind: LoopKind::Serial,
            })]
        })
        .unwrap_err();
        assert!(err.0.contains("not an index"), "{err}");
    }

    #[test]
    fn scratch_arrays_must_be_allocated_around_their_use() {
        let mut f = function();
        let w = f.fresh_scratch("w", LocalType::Value);
        let store = Stmt::Store(Store {
            array: ArrayRef::Scratch(w),
            index: Expr::Int(0),
            value: Expr::Float(1.0),
            accumulate: true,
        });
        f.body = vec![store];
        assert!(verify(&f).unwrap_err().0.contains("not allocated"));
        f.locals.push(Local {
            array: w,
            len: Expr::Int(1),
            space: MemorySpace::Global,
        });
        assert_eq!(verify(&f), Ok(()));
    }

    #[test]
    fn unresolved_symbols_and_unknown_operands_are_caught() {
        let err = verify_loop(|_, i| {
            vec![Stmt::Store(Store {
                array: ArrayRef::Values(OperandId(0)),
                index: Expr::Symbol(Symbol::SegmentLength { var: 0 }),
                value: Expr::Var(i),
                accumulate: false,
            })]
        })
        .unwrap_err();
        assert!(err.0.contains("not resolved"), "{err}");
        let err = verify_loop(|_, i| {
            vec![Stmt::Store(Store {
                array: ArrayRef::Values(OperandId(7)),
                index: Expr::Var(i),
                value: Expr::Float(0.0),
                accumulate: false,
            })]
        })
        .unwrap_err();
        assert!(err.0.contains("operand #7"), "{err}");
    }

    #[test]
    fn emits_match_the_output() {
        let mut f = function();
        f.output = OutputMode::Emit { order: 2 };
        f.body = vec![Stmt::Emit {
            coords: vec![Expr::Int(0)],
            value: Expr::Float(1.0),
        }];
        assert!(verify(&f).unwrap_err().0.contains("order 2"));
    }

    /// A loop over `0..4` on `unit` (mapped along x on a GPU), allocating `locals`.
    fn parallel(f: &mut Function, unit: ParallelUnit, body: Vec<Stmt>, locals: Vec<Local>) -> Stmt {
        let mapping = if unit.is_gpu() {
            Mapping::Gpu {
                dim: crate::ir::GpuDim::X,
            }
        } else {
            Mapping::Cpu {
                schedule: crate::ir::OmpSchedule::Static,
                chunk: 1,
            }
        };
        Stmt::For(Loop {
            var: f.fresh_var("p", Type::Index),
            start: Expr::Int(0),
            end: Expr::Int(4),
            body,
            kind: LoopKind::Parallel {
                unit,
                mapping,
                reductions: Vec::new(),
                reduce_by: crate::ir::ReductionStrategy::Temporary,
                locals,
            },
        })
    }

    fn check(f: &mut Function, body: Vec<Stmt>) -> Result<(), VerifyError> {
        f.body = body;
        verify(f)
    }

    #[test]
    fn gpu_loops_nest_block_warp_thread_with_barriers_between_thread_loops() {
        use ParallelUnit::*;
        let mut f = function();
        let threads = parallel(&mut f, GpuThread, vec![], vec![]);
        let more = parallel(&mut f, GpuThread, vec![], vec![]);
        let warp = parallel(&mut f, GpuWarp, vec![threads.clone()], vec![]);
        let block = parallel(
            &mut f,
            GpuBlock,
            vec![threads.clone(), Stmt::Barrier, more, warp],
            vec![],
        );
        assert_eq!(check(&mut f, vec![block]), Ok(()));

        let lone = parallel(&mut f, GpuThread, vec![], vec![]);
        let err = check(&mut f, vec![lone]).unwrap_err();
        assert!(
            err.0.contains("GpuThread loop outside every GpuBlock loop"),
            "{err}"
        );
        let empty = parallel(&mut f, GpuBlock, vec![], vec![]);
        let err = check(&mut f, vec![empty]).unwrap_err();
        assert!(err.0.contains("holds no GpuThread loop"), "{err}");
        let warp = parallel(&mut f, GpuWarp, vec![], vec![]);
        let thread = parallel(&mut f, GpuThread, vec![warp], vec![]);
        let block = parallel(&mut f, GpuBlock, vec![thread], vec![]);
        let err = check(&mut f, vec![block]).unwrap_err();
        assert!(
            err.0.contains("GpuWarp loop inside a GpuThread loop"),
            "{err}"
        );
        let cpu = parallel(&mut f, CpuThread, vec![], vec![]);
        let thread = parallel(&mut f, GpuThread, vec![cpu], vec![]);
        let block = parallel(&mut f, GpuBlock, vec![thread], vec![]);
        let err = check(&mut f, vec![block]).unwrap_err();
        assert!(
            err.0.contains("CpuThread loop inside a GpuBlock loop"),
            "{err}"
        );
    }

    #[test]
    fn mappings_barriers_and_memory_spaces_suit_their_units_and_gpu_loops_emit() {
        use ParallelUnit::*;
        let mut f = function();
        let mut mismatched = parallel(&mut f, CpuThread, vec![], vec![]);
        if let Stmt::For(Loop {
            kind: LoopKind::Parallel { mapping, .. },
            ..
        }) = &mut mismatched
        {
            *mapping = Mapping::Gpu {
                dim: crate::ir::GpuDim::Y,
            };
        }
        let err = check(&mut f, vec![mismatched]).unwrap_err();
        assert!(err.0.contains("CpuThread loop is mapped as Gpu"), "{err}");

        let err = check(&mut f, vec![Stmt::Barrier]).unwrap_err();
        assert!(
            err.0
                .contains("barrier whose innermost parallel loop is None"),
            "{err}"
        );
        let thread = parallel(&mut f, GpuThread, vec![Stmt::Barrier], vec![]);
        let block = parallel(&mut f, GpuBlock, vec![thread], vec![]);
        let err = check(&mut f, vec![block]).unwrap_err();
        assert!(
            err.0.contains("Some(GpuThread), not a GpuBlock loop"),
            "{err}"
        );

        let mut emitting = function();
        emitting.output = OutputMode::Emit { order: 1 };
        let emit = Stmt::Emit {
            coords: vec![Expr::Int(0)],
            value: Expr::Float(1.0),
        };
        let thread = parallel(&mut emitting, GpuThread, vec![emit], vec![]);
        let block = parallel(&mut emitting, GpuBlock, vec![thread], vec![]);
        // Its entries take slots of the room the launcher allocates.
        assert_eq!(check(&mut emitting, vec![block]), Ok(()));

        let w = f.fresh_scratch("w", LocalType::Value);
        let local = |space| Local {
            array: w,
            len: Expr::Int(4),
            space,
        };
        let thread = parallel(&mut f, GpuThread, vec![], vec![local(MemorySpace::Private)]);
        let block = parallel(
            &mut f,
            GpuBlock,
            vec![thread],
            vec![local(MemorySpace::Shared)],
        );
        assert_eq!(check(&mut f, vec![block]), Ok(()));
        let cpu = parallel(&mut f, CpuThread, vec![], vec![local(MemorySpace::Shared)]);
        let err = check(&mut f, vec![cpu]).unwrap_err();
        assert!(err.0.contains("is in Shared memory, not Thread"), "{err}");
        f.locals = vec![local(MemorySpace::Private)];
        let err = check(&mut f, vec![]).unwrap_err();
        assert!(err.0.contains("in Private memory, not Global"), "{err}");
    }

    #[test]
    fn assumptions_read_scalars_only() {
        let mut f = function();
        let n = Expr::Param(crate::ir::ParamRef::Extent(0));
        f.assumptions = vec![(Expr::lt(Expr::Int(0), n), "n is positive".into())];
        assert_eq!(verify(&f), Ok(()));
        let first = Expr::load(ArrayRef::Values(OperandId(1)), Expr::Int(0));
        f.assumptions = vec![(Expr::lt(Expr::Float(0.0), first), "x[0] is positive".into())];
        let err = verify(&f).unwrap_err();
        assert!(
            err.0.contains("\"x[0] is positive\" reads an array"),
            "{err}"
        );
    }
}
