//! The imperative intermediate representation that lowering produces and backends print.
//!
//! The IR is deliberately small and C-like: integer and floating-point expressions, loads
//! from the named arrays of tensor storage, and structured statements (no goto). Level
//! formats emit their level functions as IR expressions (see [`crate::format`]), so the
//! same description drives code generation and the runtime interpreter in [`interp`].
//!
//! A kernel is one [`Function`]: operands, a table of typed variables and scratch arrays
//! referred to by handle ([`Var`], [`Scratch`], [`OperandId`]), entry checks and a body.
//! Nothing in the IR is a name: a backend prints handles through [`Names`], one
//! allocator, so identifiers are unique whatever the user called things.
//!
//! Invariants ([`verify`] checks them):
//! - a variable is declared (`Stmt::Decl`, or as a `for` variable) before use and at most
//!   once on any path; its table type matches what is stored in it;
//! - every array is an operand's or a scratch array allocated around its use;
//! - no [`Symbol`] is left after lowering.

pub mod analysis;
pub mod barriers;
pub mod extents;
mod function;
pub mod gather;
pub mod guards;
pub mod interp;
pub mod lanes;
mod math;
mod names;
pub mod outline;
pub mod prefetch;
mod print;
pub mod promote;
pub mod rows;
pub mod segments;
mod simplify;
#[cfg(test)]
mod testing;
pub mod threads_to_gpu;
pub mod unswitch;
mod verify;
pub mod visit;
pub mod zero_rows;

pub use function::{
    Element, Function, OperandInfo, OutputMode, ScalarArg, ScratchInfo, Signature, VarInfo,
};
pub use math::MathFn;
pub use names::{NameAllocator, Names};
pub use simplify::{is_successor, simplify, simplify_stmts};
pub use verify::{verify, VerifyError};

/// Handle of a scalar variable of one [`Function`]: an index into [`Function::vars`].
///
/// Variables are named only by handle; a backend prints each as a unique identifier made
/// from its hint, so no user-chosen name can collide with another or with generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(u32);

impl Var {
    /// Position in [`Function::vars`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Handle of a scratch array of one [`Function`]: an index into [`Function::scratch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scratch(u32);

impl Scratch {
    /// Position in [`Function::scratch`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A tensor the function reads or writes: an index into [`Function::operands`]; operand 0
/// is the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperandId(pub usize);

/// An array the function reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArrayRef {
    /// Array `kind` of 1-based storage level `level` of an operand.
    Level {
        operand: OperandId,
        level: usize,
        kind: ArrayKind,
    },
    /// The component values of an operand, indexed by its last level's positions.
    Values(OperandId),
    /// A scratch array the function allocates (a workspace).
    Scratch(Scratch),
}

impl ArrayRef {
    /// The operand owning the array when it is one of an input's (not the output's, nor
    /// scratch): the arrays a kernel may only read.
    pub fn input_operand(&self) -> Option<OperandId> {
        match self {
            ArrayRef::Level { operand, .. } | ArrayRef::Values(operand) => {
                (operand.0 != 0).then_some(*operand)
            }
            ArrayRef::Scratch(_) => None,
        }
    }
}

/// Kinds of arrays a level can own.
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
}

impl ArrayKind {
    /// Suffix used in generated names (`A2_pos`).
    pub fn suffix(self) -> &'static str {
        match self {
            ArrayKind::Pos => "pos",
            ArrayKind::Idx => "idx",
            ArrayKind::Offset => "offset",
            ArrayKind::Present => "present",
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

/// A scalar the caller passes to the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParamRef {
    /// Parameter `kind` of 1-based storage level `level` of an operand.
    Level {
        operand: OperandId,
        level: usize,
        kind: ParamKind,
    },
    /// The extent of the front end's index variable number `n` (its loop runs `0..extent`).
    Extent(usize),
    /// Which call of a two-phase kernel this is (see [`rows`]): 0 counts, 1 places, 2
    /// appends in one pass.
    Phase,
    /// How many entries the appending call of a two-phase kernel may write (see [`rows`]).
    Capacity,
    /// The number of elements of an input operand's array (a level's, or its values):
    /// what bounds a load that reads ahead of its loop, and tells whether the array is
    /// large enough to prefetch (see [`prefetch`]).
    Length(ArrayRef),
    /// 1 when the coordinates in an input's level array jump far between nearby
    /// positions, so that the rows they locate are not near each other in memory, else 0:
    /// sampled by the runtime when the kernel is called ([`prefetch::scattered`]).
    Scattered(ArrayRef),
    /// 1 when the segments an input's level bounds (its `pos` array) vary in length from
    /// one to the next, else 0: sampled by the runtime when the kernel is called
    /// ([`gather::uneven`]).
    Uneven(ArrayRef),
    /// Which version of its gathered sums a call runs ([`gather::SumVersion`] as an
    /// integer), or [`gather::BY_TESTS`] to let the run-time tests choose: set for each
    /// call by the kernel, which measures the versions on repeated calls with one input.
    SumVersion,
    /// How many positions ahead an innermost segment loop prefetches the elements its
    /// coordinates locate ([`prefetch::ELEMENT_DISTANCE`] unless the kernel measures
    /// another, as it measures the sum versions).
    PrefetchDistance,
}

/// A value a front end or scheduler names before lowering knows how it is computed.
/// Lowering replaces every symbol; the verifier rejects a function that still holds one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Symbol {
    /// The size of 1-based storage level `level` of the right-hand side's `access`-th
    /// tensor access (the operand it reads is chosen by lowering).
    AccessLevelSize { access: usize, level: usize },
    /// The number of positions in the segment that position variable `var` iterates,
    /// known when lowering enters the space.
    SegmentLength { var: usize },
    /// The number of coordinates a coordinate variable `var` (over a position space)
    /// ranges over.
    CoordRange { var: usize },
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

impl BinOp {
    /// The C operator (`+`, `<=`, `&&`); `None` for `Min` and `Max`, which C spells as
    /// calls.
    pub fn c_operator(self) -> Option<&'static str> {
        Some(match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Min | BinOp::Max => return None,
        })
    }
}

/// A function a level format supplies for its level functions (a hashed level's probe):
/// lowering and the backends call it by this description and never know which level it
/// serves. Its C text is printed into kernels that call it; the same C, compiled into this
/// library, is what in-process backends call, and the interpreter runs [`Helper::eval`].
#[derive(Debug)]
pub struct Helper {
    /// The C function's name.
    pub name: &'static str,
    /// The C file that defines it: kernels print what follows the line `/* @helper */`,
    /// with `SPARSEC_RT_API`/`SPARSEC_RT_INLINE` standing for its linkage, as in the runtime.
    pub c_source: &'static str,
    /// The compiled function: the array, then three integer arguments.
    pub native: unsafe extern "C" fn(*const i64, i64, i64, i64) -> i64,
    /// The same function with its preconditions checked, over the array and the integer
    /// arguments.
    pub eval: fn(&[i64], &[i64]) -> i64,
}

impl Helper {
    /// The definition a kernel prints: the text of [`Helper::c_source`] after its marker,
    /// with `SPARSEC_RT_INLINE` for its linkage and `SPARSEC_RT_GLOBAL` for the address
    /// space of its array (nothing in C, `__global` in OpenCL C).
    pub fn definition(&self) -> &'static str {
        let (_, text) = self
            .c_source
            .split_once("/* @helper */\n")
            .expect("a helper's C file marks where its definition starts");
        text.trim_matches('\n')
    }
}

impl PartialEq for Helper {
    fn eq(&self, other: &Helper) -> bool {
        self.name == other.name
    }
}

/// Scalar type of an IR value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// Coordinates and positions (`int64_t`).
    Index,
    /// A component value.
    Value(ValueType),
    /// Truth values.
    Bool,
}

impl Type {
    /// The type both operands of an arithmetic operation convert to, as in C.
    pub fn promote(a: Type, b: Type) -> Type {
        match (a, b) {
            (Type::Value(ValueType::F64), _) | (_, Type::Value(ValueType::F64)) => {
                Type::Value(ValueType::F64)
            }
            (Type::Value(ValueType::F32), _) | (_, Type::Value(ValueType::F32)) => {
                Type::Value(ValueType::F32)
            }
            _ => Type::Index,
        }
    }

    /// The type of `c ? a : b` when `a` and `b` have these types.
    pub fn common(a: Type, b: Type) -> Type {
        match (a, b) {
            (Type::Bool, Type::Bool) => Type::Bool,
            _ => Type::promote(a, b),
        }
    }
}

/// Floating-point type of component values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `double`.
    #[default]
    F64,
    /// `float`.
    F32,
}

impl ValueType {
    /// The C spelling.
    pub fn c_name(self) -> &'static str {
        match self {
            ValueType::F64 => "double",
            ValueType::F32 => "float",
        }
    }
}

/// Element type of an operand's index array (positions, coordinates, offsets, flags).
/// Every index is computed in `int64_t`; a narrow array's loads are widened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexWidth {
    /// `int32_t`: chosen for a tensor whose every index fits.
    I32,
    /// `int64_t`.
    #[default]
    I64,
}

impl IndexWidth {
    /// The C spelling.
    pub fn c_name(self) -> &'static str {
        match self {
            IndexWidth::I32 => "int32_t",
            IndexWidth::I64 => "int64_t",
        }
    }
}

/// IR expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Int(i64),
    Float(f64),
    Bool(bool),
    Var(Var),
    Param(ParamRef),
    Symbol(Symbol),
    Load(ArrayRef, Box<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A level format's helper applied to one of its arrays and integer arguments.
    Call(&'static Helper, ArrayRef, Vec<Expr>),
    /// A math function of `double` arguments (as many as its arity).
    Math(MathFn, Vec<Expr>),
}

/// Shorthands that keep lowering code readable.
impl Expr {
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
    /// Replace every symbol by what `resolve` says it is.
    pub fn resolve_symbols(&self, resolve: &impl Fn(Symbol) -> Expr) -> Expr {
        let mut out = self.clone();
        visit::walk_expr_mut(&mut out, &mut |e| {
            if let Expr::Symbol(s) = e {
                *e = resolve(*s);
            }
        });
        out
    }
}

impl From<Var> for Expr {
    fn from(v: Var) -> Expr {
        Expr::Var(v)
    }
}

/// IR statements.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Declare a variable (its type is in [`Function::vars`]) with an initial value.
    Decl(Var, Expr),
    /// Assign to a declared variable.
    Assign(Var, Expr),
    /// A store to an array.
    Store(Store),
    /// A counted loop.
    For(Loop),
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
    /// coordinates below `width` whose `flags` are set; afterwards it holds them in
    /// increasing order (by scanning the flags, or the bitmap `marks` of
    /// [`touched_marks_len`]`(width)` words, between the extreme coordinates, or by
    /// sorting, whichever is cheaper). `marks` is zero before and after.
    OrderTouched {
        list: Scratch,
        len: Expr,
        flags: Scratch,
        marks: Scratch,
        width: Expr,
    },
    /// A hint that `array[index]` will be read soon: a backend may fetch its cache line
    /// or do nothing. `index` reads only in bounds and has no effect; it may be one past
    /// the array's end (the bound of an empty last segment), which is only an address.
    Prefetch { array: ArrayRef, index: Expr },
    /// Every GPU thread of the innermost enclosing `GpuBlock` loop waits here until all of
    /// them have arrived, and sees what the others wrote before (CUDA's `__syncthreads`):
    /// it separates thread loops of one block that communicate through shared memory.
    /// It sits in a block loop's body outside its thread loops, so running the loops one
    /// after the other (as serial code does) keeps its meaning.
    Barrier,
    /// Run device kernel `n` of an outlined function ([`outline::Outlined::kernels`]):
    /// found only in the host part that [`outline::outline`] makes.
    Launch(usize),
}

/// The words of the bitmap that `Stmt::OrderTouched` marks coordinates below `width` in
/// (the runtime's `sparsec_order_touched`): a summary word per 4096 coordinates, then a
/// word per 64.
pub fn touched_marks_len(width: Expr) -> Expr {
    Expr::bin(BinOp::Div, width.clone(), Expr::Int(4096))
        + Expr::bin(BinOp::Div, width, Expr::Int(64))
        + Expr::Int(2)
}

/// `array[index] = value` (or `+=` when `accumulate`).
#[derive(Clone, Debug, PartialEq)]
pub struct Store {
    pub array: ArrayRef,
    pub index: Expr,
    pub value: Expr,
    pub accumulate: bool,
}

/// `for (var = start; var < end; var++) body`, run as `kind` says; declares `var`.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub var: Var,
    pub start: Expr,
    pub end: Expr,
    pub body: Vec<Stmt>,
    pub kind: LoopKind,
}

/// Hardware a parallel loop runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParallelUnit {
    /// OpenMP threads.
    CpuThread,
    /// SIMD lanes of one core.
    CpuVector,
    /// GPU thread blocks: the iterations of a kernel's grid, with `GpuThread` loops inside.
    GpuBlock,
    /// GPU warps: groups of 32 threads of one block that run in lockstep.
    GpuWarp,
    /// GPU threads of one block (or of one warp, inside a `GpuWarp` loop).
    GpuThread,
}

impl ParallelUnit {
    /// Its name in the scheduling language (`CPUThread`, `GPUBlock`).
    pub fn spelling(self) -> &'static str {
        match self {
            ParallelUnit::CpuThread => "CPUThread",
            ParallelUnit::CpuVector => "CPUVector",
            ParallelUnit::GpuBlock => "GPUBlock",
            ParallelUnit::GpuWarp => "GPUWarp",
            ParallelUnit::GpuThread => "GPUThread",
        }
    }

    /// True for the units of a GPU kernel.
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            ParallelUnit::GpuBlock | ParallelUnit::GpuWarp | ParallelUnit::GpuThread
        )
    }

    /// Where GPU loops of this unit may sit, outermost first: a block loop holds warp and
    /// thread loops, a warp loop holds thread loops; a unit's rank is its place in that
    /// order (`None` for CPU units).
    pub fn gpu_rank(self) -> Option<usize> {
        match self {
            ParallelUnit::GpuBlock => Some(0),
            ParallelUnit::GpuWarp => Some(1),
            ParallelUnit::GpuThread => Some(2),
            ParallelUnit::CpuThread | ParallelUnit::CpuVector => None,
        }
    }
}

/// OpenMP loop scheduling of a `CpuThread` loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OmpSchedule {
    /// OpenMP `schedule(static, chunk)`.
    Static,
    /// OpenMP `schedule(dynamic, chunk)`.
    Dynamic,
    /// OpenMP `schedule(guided, chunk)`.
    Guided,
    /// One contiguous block of iterations per thread, of about equal work where the work
    /// of an iteration is known (see [`analysis::work_before`]; else of equal length), on
    /// no more threads than the work keeps busy; the chunk is unused. The default: static
    /// blocks keep each thread on its own rows (and a sparse output's entries in order),
    /// and dynamic chunks of a few rows cost more in scheduling than they gain.
    Balanced,
}

/// One of the three dimensions of a GPU grid (of blocks) or block (of threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuDim {
    X,
    Y,
    Z,
}

impl GpuDim {
    /// The dimensions in order: `x` varies fastest (consecutive threads along `x` make
    /// coalesced loads), so it goes to the innermost loop of a unit.
    pub const ALL: [GpuDim; 3] = [GpuDim::X, GpuDim::Y, GpuDim::Z];
}

/// How a parallel loop's iterations are spread over its unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mapping {
    /// Over CPU threads (OpenMP's schedule and chunk) or the SIMD lanes of one core (which
    /// use neither).
    Cpu { schedule: OmpSchedule, chunk: usize },
    /// Over the indices along `dim` of the GPU grid (`GpuBlock`), or of the block's warps
    /// (`GpuWarp`) or threads (`GpuThread`): index `n` runs iterations `start + n`,
    /// `start + n + extent`, ... where `extent` is the dimension's size at launch
    /// ([`outline::Geometry`]), so any size is correct and one index per iteration
    /// (the size the host can often compute) is fastest.
    Gpu { dim: GpuDim },
}

/// How the private copies of a parallel loop's reductions are combined when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReductionStrategy {
    /// Each unit adds into a temporary copy; the copies are summed serially afterwards
    /// (the schedule's `Temporary`).
    Temporary,
    /// The units combine their copies with the hardware's own reduction: SIMD lanes'
    /// horizontal sums, a GPU warp's shuffles (the schedule's `ParallelReduction`).
    ParallelReduction,
}

/// How a `for` loop runs.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopKind {
    Serial,
    /// Unrolled by this factor.
    Unrolled(usize),
    /// Iterations run in parallel on `unit`, spread as `mapping` says; `reductions` are
    /// summed across them as `reduce_by` says. `locals` are the scratch arrays the loop
    /// allocates, each in its memory space ([`MemorySpace::inside`]: one per CPU thread,
    /// GPU block or GPU thread, or shared by SIMD lanes).
    Parallel {
        unit: ParallelUnit,
        mapping: Mapping,
        reductions: Vec<Reduction>,
        reduce_by: ReductionStrategy,
        locals: Vec<Local>,
    },
    /// A serial loop that one team of CPU threads runs together, the team started once
    /// for the whole loop rather than once per parallel loop inside it (a level-set solve
    /// runs thousands of levels, each a parallel loop). Every thread runs each iteration:
    /// the `CpuThread` loops in the body share their iterations among the team and end at
    /// a barrier; declarations and the conditions of `if`s run on every thread (so they
    /// must agree); each run of other statements runs on one thread of the team and ends
    /// at a barrier (a variable declared in the body is each thread's own, so only the
    /// same run sees what that thread assigns to it). On one thread, or on a backend
    /// without teams, it is a serial loop with the same meaning. The team's size follows
    /// how the loop ran before: `work` units of the loop's `all` are shared among the team,
    /// the rest run on one thread.
    Team {
        work: Expr,
        all: Expr,
    },
}

/// A zeroed scratch array the kernel allocates (workspaces): `len` elements of
/// [`Function::scratch`]'s element type for `array`, in `space`.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    pub array: Scratch,
    pub len: Expr,
    pub space: MemorySpace,
}

/// Where a scratch array lives, which says which parallel iterations share one copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemorySpace {
    /// One copy for the whole call, outside every parallel loop: the host's heap, or a
    /// GPU's global memory.
    Global,
    /// One copy per CPU thread (its own heap allocation), shared by the SIMD lanes inside.
    Thread,
    /// One copy per GPU block, in its shared memory: the block's threads share it.
    Shared,
    /// One copy per GPU thread: registers, or the thread's local memory.
    Private,
}

impl MemorySpace {
    /// The space of a scratch array allocated inside parallel loops of units `enclosing`
    /// (outermost first; the allocating loop's included): outside GPU blocks, global
    /// memory; between blocks and threads, shared memory; inside threads, registers (the
    /// scheduling paper's placement of a precomputed workspace), and on the CPU, one copy
    /// per thread, which its SIMD lanes share.
    pub fn inside(enclosing: impl IntoIterator<Item = ParallelUnit>) -> MemorySpace {
        enclosing
            .into_iter()
            .fold(MemorySpace::Global, |space, unit| match unit {
                ParallelUnit::CpuThread => MemorySpace::Thread,
                ParallelUnit::CpuVector => space,
                ParallelUnit::GpuBlock | ParallelUnit::GpuWarp => MemorySpace::Shared,
                ParallelUnit::GpuThread => MemorySpace::Private,
            })
    }
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

/// How the copies of parallel loops' [`Reduction`]s combine when they are not summed (a
/// semiring's ⊕ such as `min`): each copy starts at `identity`, and two combine as
/// `combined`, an expression of the function's variables `acc` and `term` (`acc ⊕ term`).
#[derive(Clone, Debug, PartialEq)]
pub struct ReductionOperator {
    pub identity: f64,
    pub acc: Var,
    pub term: Var,
    pub combined: Expr,
}

/// A variable or array that each parallel iteration adds into a private copy of, combined
/// when the loop ends: summed, or by the function's [`ReductionOperator`].
#[derive(Clone, Debug, PartialEq)]
pub enum Reduction {
    Scalar(Var),
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
