//! The kernel ABI every backend implements, so that [`crate::kernel`] calls any of them the
//! same way: `int sparsec_kernel(void **arrays, const int64_t *params, sparsec_buffer *out)`.
//!
//! [`Layout`] decides which storage arrays and scalars a kernel reads and in which slots of
//! `arrays`/`params` they arrive; [`Buffer`] is one entry buffer of `out`; a nonzero
//! status reports a failed assumption ([`assumption_status`]) or an allocation failure
//! (`-1`).

use std::collections::BTreeSet;

use crate::ir::{ArrayKind, ArrayRef, Expr, LoopKind, ParallelUnit, ParamRef, Reduction, Stmt};
use crate::lower::{Lowered, OutputMode};

/// What the runtime must pass for each kernel argument slot.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Binding {
    /// `arrays[n]`: a level array or a value array of an operand.
    Array(ArrayRef),
    /// `params[n]`: a level parameter of an operand.
    Param(ParamRef),
    /// `params[n]`: the extent of an index variable.
    VarSize(usize),
    /// `params[n]`: the number of threads of parallel loops.
    Threads,
}

/// A lowered kernel that a backend cannot generate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {backend} backend cannot generate this kernel: {reason}")]
pub struct BackendError {
    /// Which backend refused (`C`, `JIT`).
    pub backend: &'static str,
    /// Why.
    pub reason: String,
}

/// Argument slots of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Array arguments, in `arrays[]` order.
    pub arrays: Vec<ArrayRef>,
    /// Scalar arguments, in `params[]` order.
    pub params: Vec<Binding>,
}

/// Status a kernel returns when assumption `n` of [`Lowered::assumptions`] fails.
pub fn assumption_status(n: usize) -> i32 {
    2 + n as i32
}

/// Collect the arguments `lowered` reads, refusing GPU loops (no backend generates them
/// yet). `backend` names the refusing backend in errors.
pub fn layout(lowered: &Lowered, backend: &'static str) -> Result<Layout, BackendError> {
    let mut used = Used::default();
    for s in &lowered.body {
        used.stmt(s);
    }
    for (e, _) in &lowered.assumptions {
        used.expr(e);
    }
    if let Some(unit) = used.gpu {
        return Err(BackendError {
            backend,
            reason: format!(
                "a loop is parallelized on {unit:?}, which needs a GPU backend; this build of \
                 sparsec generates CPU code only (use CPUThread or CPUVector)"
            ),
        });
    }
    let arrays: Vec<ArrayRef> = used.arrays.into_iter().collect();
    let mut params: Vec<Binding> = used.params.into_iter().map(Binding::Param).collect();
    params.extend((0..lowered.statement_vars).map(Binding::VarSize));
    if used.threads {
        params.push(Binding::Threads);
    }
    Ok(Layout { arrays, params })
}

/// Number of coordinates of each emitted entry (0 when the kernel emits nothing).
pub fn emit_order(lowered: &Lowered) -> usize {
    match lowered.output {
        OutputMode::Emit => lowered.operands[0].format.order(),
        OutputMode::Dense { .. } => 0,
    }
}

/// Name by which the IR reads the extent of index variable `var` (`params[]` slot
/// [`Binding::VarSize`]).
pub fn var_size_name(lowered: &Lowered, var: usize) -> String {
    format!("{}_size", lowered.var_names[var])
}

/// Index of the operand owning the storage named `tensor`.
pub fn operand_index(lowered: &Lowered, tensor: &str) -> usize {
    lowered
        .operands
        .iter()
        .position(|o| o.name == tensor)
        .expect("arrays name operands")
}

/// One entry buffer of a kernel's `out` argument (`sparsec_buffer`): `len` entries of
/// `order` coordinates and one value, in blocks grown with `realloc` and freed with `free`.
#[repr(C)]
pub struct Buffer {
    /// `cap * order` coordinates.
    pub coords: *mut i64,
    /// `cap` values.
    pub vals: *mut f64,
    /// Entries written.
    pub len: i64,
    /// Entries allocated.
    pub cap: i64,
}

impl Buffer {
    /// A buffer with no blocks yet.
    pub const EMPTY: Buffer = Buffer {
        coords: std::ptr::null_mut(),
        vals: std::ptr::null_mut(),
        len: 0,
        cap: 0,
    };
}

// SAFETY: a buffer owns its two heap blocks (allocated by the kernel's `realloc`) and is
// used by one thread at a time: the kernel call that fills it, then the run that reads it.
unsafe impl Send for Buffer {}

#[derive(Default)]
struct Used {
    arrays: BTreeSet<ArrayRef>,
    params: BTreeSet<ParamRef>,
    /// Some loop runs on CPU threads.
    threads: bool,
    /// Some loop needs a GPU.
    gpu: Option<ParallelUnit>,
}

impl Used {
    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Param(p) => {
                self.params.insert(p.clone());
            }
            Expr::Load(a, i) => {
                if a.kind != ArrayKind::Local {
                    self.arrays.insert(a.clone());
                }
                self.expr(i);
            }
            Expr::Neg(a) | Expr::Not(a) => self.expr(a),
            Expr::Bin(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Expr::Select(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
            Expr::Call(_, a, args) => {
                self.arrays.insert(a.clone());
                args.iter().for_each(|x| self.expr(x));
            }
            Expr::Int(_) | Expr::Float(_) | Expr::Bool(_) | Expr::Var(_) => {}
        }
    }
    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Decl(_, _, e) | Stmt::Assign(_, e) => self.expr(e),
            Stmt::Store {
                array,
                index,
                value,
                ..
            } => {
                if array.kind != ArrayKind::Local {
                    self.arrays.insert(array.clone());
                }
                self.expr(index);
                self.expr(value);
            }
            Stmt::For {
                start,
                end,
                body,
                kind,
                ..
            } => {
                if let LoopKind::Parallel {
                    unit, reductions, ..
                } = kind
                {
                    match unit {
                        ParallelUnit::CpuThread => self.threads = true,
                        ParallelUnit::CpuVector => {}
                        gpu => self.gpu = Some(*gpu),
                    }
                    for r in reductions {
                        if let Reduction::Array(a, len) = r {
                            self.arrays.insert(a.clone());
                            self.expr(len);
                        }
                    }
                }
                self.expr(start);
                self.expr(end);
                body.iter().for_each(|x| self.stmt(x));
            }
            Stmt::Atomic(inner) => self.stmt(inner),
            Stmt::While(c, body) => {
                self.expr(c);
                body.iter().for_each(|x| self.stmt(x));
            }
            Stmt::If(c, a, b) => {
                self.expr(c);
                a.iter().chain(b).for_each(|x| self.stmt(x));
            }
            Stmt::Emit { coords, value } => {
                coords.iter().for_each(|x| self.expr(x));
                self.expr(value);
            }
            Stmt::Block(b) => b.iter().for_each(|x| self.stmt(x)),
            Stmt::OrderTouched { len, .. } => self.expr(len),
        }
    }
}
