//! A kernel as one self-contained IR function: its operands, variables, scratch arrays,
//! entry checks and body. Lowering builds it; every backend takes it and nothing else.

use std::collections::BTreeSet;

use super::visit;
use super::{
    ArrayRef, BinOp, Expr, Helper, IndexWidth, Local, LocalType, Loop, LoopKind, MathFn, ParamRef,
    Scratch, Stmt, Store, Type, ValueType, Var,
};

/// A scalar variable: the hint a backend builds its identifier from, and its type.
#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    pub hint: String,
    pub ty: Type,
}

/// A scratch array: the hint for its identifier and its element type.
#[derive(Clone, Debug, PartialEq)]
pub struct ScratchInfo {
    pub hint: String,
    pub ty: LocalType,
}

/// A tensor the function reads or writes.
#[derive(Clone, Debug, PartialEq)]
pub struct OperandInfo {
    /// Hint for the identifiers of its arrays (`A` gives `A2_pos`).
    pub hint: String,
    /// Element type of its value array.
    pub values: ValueType,
}

/// How the function delivers its result (operand 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Writes the dense output's values in place; `accumulate` when stores are `+=`.
    Dense {
        accumulate: bool,
        /// The function zeroes the output's values before it adds into them
        /// ([`super::zero_rows`]); the caller need not.
        zeroed_by_kernel: bool,
    },
    /// Emits `order` coordinates and a value per entry for the runtime to assemble.
    Emit { order: usize },
    /// Writes a sparse output's leaf level and values directly, counting its rows in a
    /// first call and placing its entries in a second ([`super::rows`]); with `bounds`,
    /// it also has the phase that bounds each row's entries.
    Rows { bounds: bool },
}

/// One scalar argument of the function, in [`Signature::scalars`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScalarArg {
    /// A level parameter or an index variable's extent.
    Param(ParamRef),
    /// The number of threads parallel loops use.
    Threads,
}

/// Element type of an operand array the function is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Element {
    /// An index array of this width.
    Index(IndexWidth),
    /// A value array.
    Value(ValueType),
}

/// The arguments a caller passes, in order: the ABI every backend and the runtime share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Operand arrays (never scratch arrays), in `arrays[]` order.
    pub arrays: Vec<ArrayRef>,
    /// The element type of each of `arrays`.
    pub elements: Vec<Element>,
    /// Scalars, in `params[]` order.
    pub scalars: Vec<ScalarArg>,
}

/// A lowered kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Operands by [`OperandId`](crate::ir::OperandId), the output first.
    pub operands: Vec<OperandInfo>,
    /// Number of index-variable extents passed as [`ParamRef::Extent`] parameters (all of
    /// them are passed, used or not, so the argument layout depends on the statement only).
    pub extents: usize,
    /// Hints for the extents' printed names (the index variables' names), by extent.
    pub extent_hints: Vec<String>,
    /// Variables by [`Var`].
    pub vars: Vec<VarInfo>,
    /// Scratch arrays by [`Scratch`].
    pub scratch: Vec<ScratchInfo>,
    /// Conditions on the inputs checked before the body, with the message to report when
    /// one fails (assumption `n` fails with status `2 + n`).
    pub assumptions: Vec<(Expr, String)>,
    /// Scratch arrays allocated (zeroed) around the whole body.
    pub locals: Vec<Local>,
    pub body: Vec<Stmt>,
    pub output: OutputMode,
    /// The operands' index arrays stored as `int32_t`; every other one is `int64_t`.
    /// Lowering leaves it empty; a kernel sets it to what its inputs hold.
    pub narrow_arrays: BTreeSet<ArrayRef>,
    /// The rows of a dense output that an `=` statement adds into, as lowering knows
    /// them, for a target that zeroes them in the kernel ([`super::zero_rows`]).
    pub dense_rows: Option<super::zero_rows::DenseRows>,
    /// The variables of loops whose iterations each write their own element of a dense
    /// output and loop over nothing (a fixed layout's blocks of rows): a CPU target runs
    /// those of a constant trip count in SIMD lanes ([`super::lanes`]).
    pub lane_loops: Vec<Var>,
    /// How parallel reductions' copies combine; `None`: they are summed.
    pub reduction_operator: Option<super::ReductionOperator>,
}

impl Function {
    /// An empty function over `operands` and `extents` index-variable extents.
    pub fn new(operands: Vec<OperandInfo>, extents: usize, output: OutputMode) -> Function {
        Function {
            operands,
            extents,
            extent_hints: Vec::new(),
            vars: Vec::new(),
            scratch: Vec::new(),
            assumptions: Vec::new(),
            locals: Vec::new(),
            body: Vec::new(),
            output,
            narrow_arrays: BTreeSet::new(),
            dense_rows: None,
            lane_loops: Vec::new(),
            reduction_operator: None,
        }
    }

    /// A new variable; `hint` only suggests its printed name.
    pub fn fresh_var(&mut self, hint: impl Into<String>, ty: Type) -> Var {
        self.vars.push(VarInfo {
            hint: hint.into(),
            ty,
        });
        Var(u32::try_from(self.vars.len() - 1).expect("fewer than 2^32 variables"))
    }

    /// Give every top-level statement for which `version` returns a run-time condition
    /// and another version of it a second version, chosen once when the kernel runs:
    /// `flag = condition; if (flag) { other version } else { the statement }`, the flag
    /// named after `hint`. Passes that make faster versions of loops for some inputs
    /// choose so once, outside the loops, where a test in a loop would cost every
    /// iteration.
    pub fn version_statements(
        &mut self,
        hint: &str,
        mut version: impl FnMut(&Function, &Stmt) -> Option<(Expr, Stmt)>,
    ) {
        let body = std::mem::take(&mut self.body);
        let mut versioned = Vec::with_capacity(body.len());
        for statement in body {
            let Some((condition, other)) = version(self, &statement) else {
                versioned.push(statement);
                continue;
            };
            let flag = self.fresh_var(hint, Type::Bool);
            versioned.push(Stmt::Decl(flag, condition));
            versioned.push(Stmt::If(Expr::Var(flag), vec![other], vec![statement]));
        }
        self.body = versioned;
    }

    /// A new scratch array; `hint` only suggests its printed name.
    pub fn fresh_scratch(&mut self, hint: impl Into<String>, ty: LocalType) -> Scratch {
        self.scratch.push(ScratchInfo {
            hint: hint.into(),
            ty,
        });
        Scratch(u32::try_from(self.scratch.len() - 1).expect("fewer than 2^32 arrays"))
    }

    /// The variable's declaration.
    pub fn var(&self, v: Var) -> &VarInfo {
        &self.vars[v.index()]
    }

    /// The scratch array's declaration.
    pub fn scratch_info(&self, s: Scratch) -> &ScratchInfo {
        &self.scratch[s.index()]
    }

    /// The C type of `e` in this function: what it evaluates to before any conversion
    /// (literals and loads have their own type; `-` of a truth value and arithmetic
    /// promote like C, comparisons are truth values).
    pub fn type_of(&self, e: &Expr) -> Type {
        match e {
            Expr::Int(_) | Expr::Param(_) | Expr::Symbol(_) | Expr::Call(..) => Type::Index,
            Expr::Float(_) => Type::Value(ValueType::F64),
            Expr::Bool(_) | Expr::Not(_) => Type::Bool,
            Expr::Var(v) => self.var(*v).ty,
            Expr::Load(a, _) => self.element_type(a),
            Expr::Neg(a) => match self.type_of(a) {
                Type::Bool => Type::Index,
                t => t,
            },
            Expr::Bin(op, a, b) => match op {
                BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::And
                | BinOp::Or => Type::Bool,
                _ => Type::promote(self.type_of(a), self.type_of(b)),
            },
            Expr::Select(_, a, b) => Type::common(self.type_of(a), self.type_of(b)),
            Expr::Math(..) => Type::Value(ValueType::F64),
        }
    }

    /// The type of the elements of `array` (flags read as indices).
    pub fn element_type(&self, array: &ArrayRef) -> Type {
        match array {
            ArrayRef::Values(operand) => Type::Value(self.operands[operand.0].values),
            ArrayRef::Level { .. } => Type::Index,
            ArrayRef::Scratch(s) => match self.scratch_info(*s).ty {
                LocalType::Value => Type::Value(ValueType::F64),
                LocalType::Index | LocalType::Flag => Type::Index,
            },
        }
    }

    /// Set the element type of every operand's values (kernels compute in one type).
    pub fn set_value_type(&mut self, ty: ValueType) {
        for op in &mut self.operands {
            op.values = ty;
        }
    }

    /// Call `f` on every expression the function evaluates and their subexpressions: the
    /// body's, the entry checks' and the lengths of the scratch arrays around the body.
    pub fn walk_exprs<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        visit::walk_stmt_exprs(&self.body, f);
        for (e, _) in &self.assumptions {
            visit::walk_expr(e, f);
        }
        for l in &self.locals {
            visit::walk_expr(&l.len, f);
        }
    }

    /// The math functions the function calls, each once, in order of first call.
    pub fn math_functions(&self) -> Vec<MathFn> {
        let mut found: Vec<MathFn> = Vec::new();
        self.walk_exprs(&mut |e| {
            if let Expr::Math(f, _) = e {
                if !found.contains(f) {
                    found.push(*f);
                }
            }
        });
        found
    }

    /// The level formats' helpers the function calls, each once, in order of first call.
    pub fn helpers(&self) -> Vec<&'static Helper> {
        let mut helpers: Vec<&'static Helper> = Vec::new();
        self.walk_exprs(&mut |e| {
            if let Expr::Call(helper, ..) = e {
                if !helpers.contains(helper) {
                    helpers.push(helper);
                }
            }
        });
        helpers
    }

    /// The arguments the function reads: every operand array and level parameter it
    /// uses (sorted, so the layout is deterministic; the phase and capacity of a two-phase
    /// kernel after them), every extent, then the thread count when a loop runs on threads.
    pub fn signature(&self) -> Signature {
        let mut arrays = BTreeSet::new();
        let mut params = BTreeSet::new();
        let mut note = |e: &Expr| match e {
            Expr::Load(a, _) | Expr::Call(_, a, _) if !matches!(a, ArrayRef::Scratch(_)) => {
                arrays.insert(*a);
            }
            Expr::Param(
                p @ (ParamRef::Level { .. }
                | ParamRef::Length(_)
                | ParamRef::Scattered(_)
                | ParamRef::Uneven(_)
                | ParamRef::SumVersion
                | ParamRef::PrefetchDistance
                | ParamRef::Phase
                | ParamRef::Capacity),
            ) => {
                params.insert(*p);
            }
            _ => {}
        };
        self.walk_exprs(&mut note);
        let mut threads = false;
        visit::walk_stmts(&self.body, &mut |s| match s {
            Stmt::Store(Store { array, .. }) if !matches!(array, ArrayRef::Scratch(_)) => {
                arrays.insert(*array);
            }
            Stmt::For(Loop {
                kind: LoopKind::Parallel { unit, .. },
                ..
            }) if *unit == super::ParallelUnit::CpuThread => threads = true,
            _ => {}
        });
        let mut scalars: Vec<ScalarArg> = params.into_iter().map(ScalarArg::Param).collect();
        scalars.extend((0..self.extents).map(|n| ScalarArg::Param(ParamRef::Extent(n))));
        if threads {
            scalars.push(ScalarArg::Threads);
        }
        let arrays: Vec<ArrayRef> = arrays.into_iter().collect();
        let elements = arrays.iter().map(|a| self.element(a)).collect();
        Signature {
            arrays,
            elements,
            scalars,
        }
    }

    /// The element type of an operand array.
    pub fn element(&self, array: &ArrayRef) -> Element {
        match array {
            ArrayRef::Values(operand) => Element::Value(self.operands[operand.0].values),
            _ => Element::Index(self.index_width(array)),
        }
    }

    /// The width of an operand's index array (see [`Function::narrow_arrays`]).
    pub fn index_width(&self, array: &ArrayRef) -> IndexWidth {
        if self.narrow_arrays.contains(array) {
            IndexWidth::I32
        } else {
            IndexWidth::I64
        }
    }
}
