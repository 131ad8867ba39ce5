//! Statements: the kernel function's entry (arguments, assumptions, scratch arrays) and
//! structured control flow as Cranelift blocks.

use std::collections::HashMap;

use cranelift_codegen::ir::{
    types, Block, FuncRef, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};

use super::expr::Kind;
use super::runtime;
use super::BACKEND;
use crate::codegen::abi::{self, BackendError};
use crate::ir::{
    ArrayRef, Expr, Function, Helper, IndexWidth, Local, LocalType, LoopKind, OutputMode, ParamRef,
    ScalarArg, Scratch, Signature, Stmt, ValueType, Var,
};

/// Translation state of one kernel function.
pub(super) struct Translator<'a, 'f> {
    pub(super) b: &'a mut FunctionBuilder<'f>,
    pub(super) function: &'a Function,
    /// Storage arrays, loaded from `arrays[]` at entry.
    arrays: HashMap<ArrayRef, Value>,
    /// Level parameters and extents, loaded from `params[]` at entry.
    pub(super) params: HashMap<ParamRef, Value>,
    /// Variables in scope, innermost last (see [`Translator::declare`]).
    vars: Vec<(Var, Variable, Kind)>,
    /// Scratch arrays in scope, innermost last.
    locals: Vec<(Scratch, Value)>,
    /// Runtime functions, indexed as [`runtime::symbols`], then the level formats' helpers
    /// the function calls.
    pub(super) funcs: &'a [FuncRef],
    /// The helpers' functions, by name.
    helpers: HashMap<&'static str, FuncRef>,
    /// The first entry buffer of `out`: serial code appends everything there.
    out: Value,
    /// Stack room for one emitted entry's coordinates (kernels with sparse outputs).
    coords: Option<Value>,
}

pub(super) fn error(reason: String) -> BackendError {
    BackendError {
        backend: BACKEND,
        reason,
    }
}

/// Translate the whole kernel into `b`'s function.
pub(super) fn kernel(
    b: &mut FunctionBuilder<'_>,
    function: &Function,
    signature: &Signature,
    funcs: &[FuncRef],
    helpers: HashMap<&'static str, FuncRef>,
    ptr: Type,
) -> Result<(), BackendError> {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [arrays_arg, params_arg, out] = b.block_params(entry) else {
        unreachable!("the signature has three parameters")
    };
    let (arrays_arg, params_arg, out) = (*arrays_arg, *params_arg, *out);
    let order = match function.output {
        OutputMode::Emit { order } => order,
        OutputMode::Dense { .. } | OutputMode::Rows { .. } => 0,
    };
    let coords = (order > 0).then(|| {
        let room = StackSlotData::new(StackSlotKind::ExplicitSlot, 8 * order as u32, 3);
        let room = b.create_sized_stack_slot(room);
        b.ins().stack_addr(ptr, room, 0)
    });
    let mut t = Translator {
        b,
        function,
        arrays: HashMap::new(),
        params: HashMap::new(),
        vars: Vec::new(),
        locals: Vec::new(),
        funcs,
        helpers,
        out,
        coords,
    };
    let slot = |n: usize| (n * 8) as i32;
    for (n, a) in signature.arrays.iter().enumerate() {
        let v =
            t.b.ins()
                .load(ptr, MemFlagsData::trusted(), arrays_arg, slot(n));
        t.arrays.insert(*a, v);
    }
    for (n, p) in signature.scalars.iter().enumerate() {
        // Serial code never reads the thread count.
        if let ScalarArg::Param(p) = p {
            let v =
                t.b.ins()
                    .load(types::I64, MemFlagsData::trusted(), params_arg, slot(n));
            t.params.insert(*p, v);
        }
    }
    for (n, (holds, _)) in function.assumptions.iter().enumerate() {
        let holds = t.cond(holds)?;
        t.return_unless(holds, abi::assumption_status(n));
    }
    let scope = t.allocate(&function.locals)?;
    t.stmts(&function.body)?;
    t.release(scope);
    let ok = t.b.ins().iconst(types::I32, 0);
    t.b.ins().return_(&[ok]);
    Ok(())
}

impl<'a> Translator<'a, '_> {
    /// Bring `name` into scope as a new variable of `kind` holding `value`. Every IR
    /// variable goes through here and [`Translator::var`]: the one place that maps the
    /// IR's variable names to Cranelift variables (C-like scoping: an inner declaration
    /// hides an outer one until its scope ends).
    fn declare(&mut self, name: Var, kind: Kind, value: Value) {
        let var = self.b.declare_var(kind.clif());
        self.b.def_var(var, value);
        self.vars.push((name, var, kind));
    }

    /// The variable `name` refers to in the current scope.
    pub(super) fn var(&self, name: Var) -> Result<(Variable, Kind), BackendError> {
        self.vars
            .iter()
            .rev()
            .find(|(n, ..)| *n == name)
            .map(|&(_, var, kind)| (var, kind))
            .ok_or_else(|| {
                error(format!(
                    "the variable `{}` is used but not declared",
                    self.function.var(name).hint
                ))
            })
    }

    /// The imported function of a level format's helper.
    pub(super) fn helper(&self, helper: &Helper) -> Result<FuncRef, BackendError> {
        self.imported(helper.name)
    }

    /// An imported function (a helper or a math function) by its symbol.
    pub(super) fn imported(&self, name: &str) -> Result<FuncRef, BackendError> {
        self.helpers
            .get(name)
            .copied()
            .ok_or_else(|| error(format!("the function `{name}` was not imported")))
    }

    /// Base pointer and element kind of an array; `Flag` elements are bytes.
    pub(super) fn array(&self, a: &ArrayRef) -> Result<(Value, Type, Kind), BackendError> {
        if let ArrayRef::Scratch(scratch) = a {
            let (_, base) = self
                .locals
                .iter()
                .rev()
                .find(|(s, _)| s == scratch)
                .ok_or_else(|| {
                    error(format!(
                        "the scratch array `{}` is not allocated",
                        self.function.scratch_info(*scratch).hint
                    ))
                })?;
            return Ok(match self.function.scratch_info(*scratch).ty {
                LocalType::Value => (*base, types::F64, Kind::F64),
                LocalType::Index => (*base, types::I64, Kind::Int),
                LocalType::Flag => (*base, types::I8, Kind::Int),
            });
        }
        let base = *self
            .arrays
            .get(a)
            .expect("the signature collects every array read");
        Ok(match a {
            ArrayRef::Values(operand) => match self.function.operands[operand.0].values {
                ValueType::F64 => (base, types::F64, Kind::F64),
                ValueType::F32 => (base, types::F32, Kind::F32),
            },
            _ => match self.function.index_width(a) {
                IndexWidth::I32 => (base, types::I32, Kind::Int),
                IndexWidth::I64 => (base, types::I64, Kind::Int),
            },
        })
    }

    /// Address of `base[index]` for elements of `ty`.
    pub(super) fn element(&mut self, base: Value, ty: Type, index: Value) -> Value {
        let offset = self.b.ins().imul_imm_s(index, i64::from(ty.bytes()));
        self.b.ins().iadd(base, offset)
    }

    /// Continue only when `holds` (a truth value); else free the scratch arrays in scope
    /// and return `status`.
    fn return_unless(&mut self, holds: Value, status: i32) {
        let fail = self.b.create_block();
        let next = self.b.create_block();
        self.b.ins().brif(holds, next, &[], fail, &[]);
        self.b.switch_to_block(fail);
        for &(_, base) in &self.locals {
            self.b.ins().call(self.funcs[runtime::FREE], &[base]);
        }
        let status = self.b.ins().iconst(types::I32, i64::from(status));
        self.b.ins().return_(&[status]);
        self.b.switch_to_block(next);
    }

    /// Allocate zeroed scratch arrays (one spare element, as the C backend) and bring them
    /// into scope; the kernel returns -1 when memory runs out. Returns the scope to give
    /// [`Translator::release`].
    fn allocate(&mut self, locals: &'a [Local]) -> Result<usize, BackendError> {
        let scope = self.locals.len();
        for Local { array, len, .. } in locals {
            let len = self.int(len)?;
            let count = self.b.ins().iadd_imm_s(len, 1);
            let size = match self.function.scratch_info(*array).ty {
                LocalType::Value | LocalType::Index => 8,
                LocalType::Flag => 1,
            };
            let size = self.b.ins().iconst(types::I64, size);
            let call = self
                .b
                .ins()
                .call(self.funcs[runtime::CALLOC], &[count, size]);
            let base = self.b.inst_results(call)[0];
            self.return_unless(base, -1);
            self.locals.push((*array, base));
        }
        Ok(scope)
    }

    /// Free the scratch arrays allocated since `scope`.
    fn release(&mut self, scope: usize) {
        for (_, base) in self.locals.split_off(scope) {
            self.b.ins().call(self.funcs[runtime::FREE], &[base]);
        }
    }

    /// Translate statements in a scope of their own.
    fn stmts(&mut self, stmts: &'a [Stmt]) -> Result<(), BackendError> {
        let scope = self.vars.len();
        for s in stmts {
            self.stmt(s)?;
        }
        self.vars.truncate(scope);
        Ok(())
    }

    /// Translate `body` into a new block and continue at `after`.
    fn branch(&mut self, block: Block, body: &'a [Stmt], after: Block) -> Result<(), BackendError> {
        self.b.switch_to_block(block);
        self.stmts(body)?;
        self.b.ins().jump(after, &[]);
        Ok(())
    }

    fn stmt(&mut self, s: &'a Stmt) -> Result<(), BackendError> {
        match s {
            Stmt::Decl(name, e) => {
                let kind = Kind::of(self.function.var(*name).ty);
                let v = self.expr_as(e, kind)?;
                self.declare(*name, kind, v);
            }
            Stmt::Assign(name, e) => {
                let (var, kind) = self.var(*name)?;
                let v = self.expr_as(e, kind)?;
                self.b.def_var(var, v);
            }
            Stmt::Store(store) => {
                let (base, ty, kind) = self.array(&store.array)?;
                let index = self.int(&store.index)?;
                let at = self.element(base, ty, index);
                let (mut v, mut k) = self.expr(&store.value)?;
                if store.accumulate {
                    // `a[i] += v` adds in the promoted type, then converts back (as C).
                    let old = self.b.ins().load(ty, MemFlagsData::trusted(), at, 0);
                    let old = self.widen(old, ty);
                    (v, k) = self.arith(crate::ir::BinOp::Add, (old, kind), (v, k));
                }
                let v = self.convert(v, k, kind);
                let v = if ty == types::I8 || ty == types::I32 {
                    self.b.ins().ireduce(ty, v)
                } else {
                    v
                };
                self.b.ins().store(MemFlagsData::trusted(), v, at, 0);
            }
            Stmt::For(l) => {
                let (var, start, end, body, kind) = (&l.var, &l.start, &l.end, &l.body, &l.kind);
                // Parallel and unrolled loops run as plain loops: reductions need nothing,
                // per-thread scratch arrays are needed once.
                let locals = match kind {
                    LoopKind::Parallel { locals, .. } => locals.as_slice(),
                    LoopKind::Serial | LoopKind::Unrolled(_) | LoopKind::Team { .. } => &[],
                };
                let scope = self.allocate(locals)?;
                let start = self.int(start)?;
                let vars = self.vars.len();
                self.declare(*var, Kind::Int, start);
                let (counter, _) = self.var(*var)?;
                let [head, next, exit] = [(); 3].map(|_| self.b.create_block());
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(head);
                let at = self.b.use_var(counter);
                let end = self.int(end)?;
                let more = self.b.ins().icmp(
                    cranelift_codegen::ir::condcodes::IntCC::SignedLessThan,
                    at,
                    end,
                );
                self.b.ins().brif(more, next, &[], exit, &[]);
                self.b.switch_to_block(next);
                self.stmts(body)?;
                let at = self.b.use_var(counter);
                let at = self.b.ins().iadd_imm_s(at, 1);
                self.b.def_var(counter, at);
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
                self.vars.truncate(vars);
                self.release(scope);
            }
            // Serial code has no other iteration to race with.
            Stmt::Atomic(inner) => self.stmt(inner)?,
            Stmt::While(cond, body) => {
                let [head, next, exit] = [(); 3].map(|_| self.b.create_block());
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(head);
                let c = self.cond(cond)?;
                self.b.ins().brif(c, next, &[], exit, &[]);
                self.branch(next, body, head)?;
                self.b.switch_to_block(exit);
            }
            Stmt::If(cond, then, otherwise) => {
                let c = self.cond(cond)?;
                let [yes, no, exit] = [(); 3].map(|_| self.b.create_block());
                self.b.ins().brif(c, yes, &[], no, &[]);
                self.branch(yes, then, exit)?;
                self.branch(no, otherwise, exit)?;
                self.b.switch_to_block(exit);
            }
            Stmt::Emit { coords, value } => self.emit(coords, value)?,
            Stmt::Block(body) => {
                let scope = self.locals.len();
                self.stmts(body)?;
                self.release(scope);
            }
            Stmt::OrderTouched {
                list,
                len,
                flags,
                marks,
                width,
            } => {
                let (list, ..) = self.array(&ArrayRef::Scratch(*list))?;
                let (flags, ..) = self.array(&ArrayRef::Scratch(*flags))?;
                let (marks, ..) = self.array(&ArrayRef::Scratch(*marks))?;
                let len = self.int(len)?;
                let width = self.int(width)?;
                self.b.ins().call(
                    self.funcs[runtime::ORDER_TOUCHED],
                    &[list, len, flags, marks, width],
                );
            }
            // Cranelift has no prefetch instruction; the hint has no effect to keep.
            Stmt::Prefetch { .. } => {}
            Stmt::Barrier | Stmt::Launch(_) => {
                unreachable!("barriers and launches are refused before translating (no GPU blocks)")
            }
        }
        Ok(())
    }

    /// Append an entry to the first buffer; a failure to grow it is remembered in `oom`.
    fn emit(&mut self, coords: &'a [Expr], value: &'a Expr) -> Result<(), BackendError> {
        let order = match self.function.output {
            OutputMode::Emit { order } => order,
            OutputMode::Dense { .. } | OutputMode::Rows { .. } => 0,
        };
        if coords.len() != order {
            return Err(error(format!(
                "an entry has {} coordinates but the output has order {order}",
                coords.len()
            )));
        }
        let room = self
            .coords
            .ok_or_else(|| error("an entry is emitted to a dense output".into()))?;
        for (k, c) in coords.iter().enumerate() {
            let c = self.int(c)?;
            self.b
                .ins()
                .store(MemFlagsData::trusted(), c, room, (8 * k) as i32);
        }
        let value = self.expr_as(value, Kind::F64)?;
        let order = self.b.ins().iconst(types::I64, order as i64);
        let call = self
            .b
            .ins()
            .call(self.funcs[runtime::EMIT], &[self.out, order, room, value]);
        // Out of memory, the kernel stops at once: the rest of the loops may be billions
        // of iterations.
        let appended = self.b.inst_results(call)[0];
        self.return_unless(appended, -1);
        Ok(())
    }
}
