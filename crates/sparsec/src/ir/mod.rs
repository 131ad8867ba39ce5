//! The imperative intermediate representation that lowering produces and backends print.
//!
//! The IR is deliberately small and C-like: integer and floating-point expressions, loads
//! from the named arrays of tensor storage, and structured statements (no goto). Level
//! formats emit their level functions as IR expressions (see [`crate::format`]), so the
//! same description drives code generation and the runtime interpreter in [`interp`].
//!
//! Invariants:
//! - Variables are declared (`Stmt::Decl`) before use and names are unique per kernel.
//! - Every array reference names a tensor parameter of the kernel; the backend turns
//!   `Array { tensor: "A", level: Some(2), kind: Idx }` into `A2_idx`.

pub mod interp;
mod simplify;

pub use simplify::{simplify, simplify_stmts};

/// A storage array of one tensor: the per-level index arrays and the value array.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArrayRef {
    /// Name of the tensor (kernel parameter).
    pub tensor: String,
    /// 1-based storage level; `None` for the value array.
    pub level: Option<usize>,
    /// Which array of that level.
    pub kind: ArrayKind,
}

/// Kinds of arrays a level (or the value store) can own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArrayKind {
    /// Segment bounds (compressed).
    Pos,
    /// Coordinates (compressed, singleton, hashed).
    Idx,
    /// Diagonal offsets (range, offset).
    Offset,
    /// Presence flags, 1 where a coordinate holds an entry and 0 elsewhere (bytemap).
    Present,
    /// Component values, indexed by the last level's positions.
    Vals,
    /// A kernel-local scratch array (a workspace); `tensor` holds its full name.
    Local,
}

impl ArrayKind {
    /// Suffix used in generated names (`A2_pos`).
    pub fn suffix(self) -> &'static str {
        match self {
            ArrayKind::Pos => "pos",
            ArrayKind::Idx => "idx",
            ArrayKind::Offset => "offset",
            ArrayKind::Present => "present",
            ArrayKind::Vals => "vals",
            ArrayKind::Local => "",
        }
    }
}

/// Scalar parameters a level can own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParamKind {
    /// The level's dimension size `N_k`.
    Size,
    /// Hash table width `W_k` (hashed) or the second bound `M_k` (range).
    Width,
}

impl ParamKind {
    /// Suffix used in generated names (`A1_size`).
    pub fn suffix(self) -> &'static str {
        match self {
            ParamKind::Size => "size",
            ParamKind::Width => "width",
        }
    }
}

/// A scalar parameter of one level of one tensor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamRef {
    /// Tensor name.
    pub tensor: String,
    /// 1-based storage level.
    pub level: usize,
    /// Which parameter.
    pub kind: ParamKind,
}

/// Binary operators of the IR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

/// Operations with no C operator: they are small helper functions in the generated prelude.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// `hash_locate(idx, width, parent_pos, coord) -> position` (linear probing).
    HashLocate,
}

/// Scalar type of an IR value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// Coordinates and positions (`int64_t`).
    Index,
    /// A component value.
    Value(crate::tensor::ValueType),
    /// Truth values.
    Bool,
}

/// IR expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Int(i64),
    Float(f64),
    Bool(bool),
    Var(String),
    Param(ParamRef),
    Load(ArrayRef, Box<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(Intrinsic, ArrayRef, Vec<Expr>),
}

/// Shorthands that keep lowering code readable.
impl Expr {
    pub fn var(name: impl Into<String>) -> Expr {
        Expr::Var(name.into())
    }
    pub fn load(array: ArrayRef, index: Expr) -> Expr {
        Expr::Load(array, Box::new(index))
    }
    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }
    pub fn lt(a: Expr, b: Expr) -> Expr {
        Expr::bin(BinOp::Lt, a, b)
    }
    pub fn eq(a: Expr, b: Expr) -> Expr {
        Expr::bin(BinOp::Eq, a, b)
    }
    pub fn and(a: Expr, b: Expr) -> Expr {
        Expr::bin(BinOp::And, a, b)
    }
    pub fn min(a: Expr, b: Expr) -> Expr {
        Expr::bin(BinOp::Min, a, b)
    }
    pub fn max(a: Expr, b: Expr) -> Expr {
        Expr::bin(BinOp::Max, a, b)
    }
}

/// IR statements.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Declare a variable with an initial value.
    Decl(String, Type, Expr),
    /// Assign to a declared variable.
    Assign(String, Expr),
    /// `array[index] = value` (or `+=` when `accumulate`).
    Store {
        array: ArrayRef,
        index: Expr,
        value: Expr,
        accumulate: bool,
    },
    /// `for (var = start; var < end; var++)`, run as `kind` says.
    For {
        var: String,
        start: Expr,
        end: Expr,
        body: Vec<Stmt>,
        kind: LoopKind,
    },
    /// The update inside happens atomically with respect to other parallel iterations.
    Atomic(Box<Stmt>),
    /// `while (cond) { body }`.
    While(Expr, Vec<Stmt>),
    /// `if (cond) { then } else { otherwise }`.
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    /// Append one output coordinate tuple and value to the kernel's result buffer.
    Emit { coords: Vec<Expr>, value: Expr },
    /// A nested scope.
    Block(Vec<Stmt>),
    /// Order a workspace's touched list: `list[0, len)` holds, in any order, the
    /// coordinates whose `flags` are set; afterwards it holds them in increasing order
    /// (by sorting, or by scanning the flags between the extreme coordinates when that is
    /// cheaper).
    OrderTouched {
        list: ArrayRef,
        len: Expr,
        flags: ArrayRef,
    },
}

/// Hardware a parallel loop runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParallelUnit {
    /// OpenMP threads.
    CpuThread,
    /// SIMD lanes of one core.
    CpuVector,
    /// CUDA thread blocks (with `GpuThread` inside).
    GpuBlock,
    /// CUDA warps.
    GpuWarp,
    /// CUDA threads.
    GpuThread,
}

/// OpenMP loop scheduling of a `CpuThread` loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OmpSchedule {
    Static,
    Dynamic,
    Guided,
}

/// How a `for` loop runs.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopKind {
    Serial,
    /// Unrolled by this factor.
    Unrolled(usize),
    /// Iterations run in parallel on `unit`; `reductions` are summed across them.
    /// `locals` are scratch arrays private to each thread (`CpuThread`) or shared by the
    /// loop (`CpuVector`).
    Parallel {
        unit: ParallelUnit,
        schedule: OmpSchedule,
        chunk: usize,
        reductions: Vec<Reduction>,
        locals: Vec<Local>,
    },
}

/// A zeroed scratch array the kernel allocates (workspaces).
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    pub name: String,
    pub len: Expr,
    pub ty: LocalType,
}

/// Element type of a scratch array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalType {
    /// Values (`double`).
    Value,
    /// Coordinates (`int64_t`).
    Index,
    /// Flags (`char`).
    Flag,
}

/// A variable or array that each parallel iteration adds into a private copy of, combined
/// (summed) when the loop ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Reduction {
    Scalar(String),
    /// The first `len` entries of an array.
    Array(ArrayRef, Expr),
}

impl std::ops::Add for Expr {
    type Output = Expr;
    fn add(self, other: Expr) -> Expr {
        Expr::bin(BinOp::Add, self, other)
    }
}

impl std::ops::Sub for Expr {
    type Output = Expr;
    fn sub(self, other: Expr) -> Expr {
        Expr::bin(BinOp::Sub, self, other)
    }
}

impl std::ops::Mul for Expr {
    type Output = Expr;
    fn mul(self, other: Expr) -> Expr {
        Expr::bin(BinOp::Mul, self, other)
    }
}

impl ArrayRef {
    /// A kernel-local scratch array.
    pub fn local(name: impl Into<String>) -> ArrayRef {
        ArrayRef {
            tensor: name.into(),
            level: None,
            kind: ArrayKind::Local,
        }
    }
}
