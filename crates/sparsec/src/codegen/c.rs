//! The C99 backend.
//!
//! A kernel is one function `int sparsec_kernel(void **arrays, const int64_t *params,
//! sparsec_buffer *out)`. Every array and scalar the body reads is unpacked into a named
//! local at the top (`A2_pos`, `A1_size`, `i_size`), in the order given by
//! [`CKernel::arrays`] and [`CKernel::params`] (see [`super::abi`]), which the runtime follows when it passes storage. Index arrays are
//! `int64_t`; values are `double` or `float` per tensor.

use std::fmt::Write;

use super::abi::{self, Layout};
pub use super::abi::{assumption_status, BackendError, Binding};
use crate::ir::{
    ArrayKind, ArrayRef, BinOp, Expr, Intrinsic, Local, LocalType, LoopKind, OmpSchedule,
    ParallelUnit, ParamRef, Reduction, Stmt, Type,
};
use crate::lower::Lowered;
use crate::tensor::ValueType;

/// Generated C source and its argument layout.
#[derive(Clone, Debug, PartialEq)]
pub struct CKernel {
    /// Complete translation unit.
    pub source: String,
    /// Array arguments, in `arrays[]` order.
    pub arrays: Vec<ArrayRef>,
    /// Scalar arguments, in `params[]` order.
    pub params: Vec<Binding>,
    /// Start of the kernel function in `source` (after the prelude).
    pub body_offset: usize,
}

/// Name of the exported kernel function.
pub const ENTRY: &str = "sparsec_kernel";
/// Name of the exported function that frees an output buffer.
pub const FREE_BUFFER: &str = "sparsec_buffer_free";

const PRELUDE: &str = r#"#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#else
static inline int omp_get_thread_num(void) { return 0; }
#endif

typedef struct {
  int64_t *coords;
  double *vals;
  int64_t len;
  int64_t cap;
} sparsec_buffer;

static int sparsec_grow(sparsec_buffer *b, int64_t order) {
  int64_t cap = b->cap < 1024 ? 1024 : 2 * b->cap;
  int64_t *coords = (int64_t *)realloc(b->coords, (size_t)(cap * (order > 0 ? order : 1)) * sizeof(int64_t));
  if (!coords) return 0;
  b->coords = coords;
  double *vals = (double *)realloc(b->vals, (size_t)cap * sizeof(double));
  if (!vals) return 0;
  b->vals = vals;
  b->cap = cap;
  return 1;
}

void sparsec_buffer_free(sparsec_buffer *b) {
  free(b->coords);
  free(b->vals);
  b->coords = 0;
  b->vals = 0;
}

static void sparsec_insertion_sort(int64_t *a, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    int64_t x = a[i], j = i - 1;
    while (j >= 0 && a[j] > x) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = x;
  }
}

static void sparsec_sift_down(int64_t *a, int64_t root, int64_t n) {
  int64_t x = a[root];
  for (int64_t child = 2 * root + 1; child < n; child = 2 * root + 1) {
    if (child + 1 < n && a[child + 1] > a[child]) child++;
    if (a[child] <= x) break;
    a[root] = a[child];
    root = child;
  }
  a[root] = x;
}

/* Introsort of a workspace row's touched coordinates: quicksort on the median of three,
   insertion sort for short ranges (most rows), heapsort when partitions keep failing, so
   no input is quadratic. Inline comparisons: qsort's callback costs twice as much. */
static void sparsec_sort_index_bounded(int64_t *a, int64_t n, int depth) {
  while (n > 24) {
    if (depth-- == 0) {
      for (int64_t i = n / 2 - 1; i >= 0; i--) sparsec_sift_down(a, i, n);
      for (int64_t end = n - 1; end > 0; end--) {
        int64_t t = a[0]; a[0] = a[end]; a[end] = t;
        sparsec_sift_down(a, 0, end);
      }
      return;
    }
    int64_t x = a[0], y = a[n / 2], z = a[n - 1];
    int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    int64_t i = 0, j = n - 1;
    for (;;) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i >= j) break;
      int64_t t = a[i]; a[i] = a[j]; a[j] = t;
      i++;
      j--;
    }
    /* [0, j] <= pivot <= [j + 1, n): recurse on the smaller side, loop on the larger. */
    if (j + 1 < n - j - 1) {
      sparsec_sort_index_bounded(a, j + 1, depth);
      a += j + 1;
      n -= j + 1;
    } else {
      sparsec_sort_index_bounded(a + j + 1, n - j - 1, depth);
      n = j + 1;
    }
  }
  sparsec_insertion_sort(a, n);
}

static void sparsec_sort_index(int64_t *a, int64_t n) {
  int depth = 0;
  for (int64_t m = n; m > 1; m >>= 1) depth += 2;
  sparsec_sort_index_bounded(a, n, depth);
}

/* Least-significant-digit radix sort of `n` values in [lo, hi], a byte per pass through
   `scratch`: no comparisons to mispredict, which on a few hundred random coordinates is
   several times faster than comparison sorts. */
static void sparsec_radix_sort(int64_t *a, int64_t *scratch, int64_t n, int64_t lo, int64_t hi) {
  int64_t *from = a, *to = scratch;
  for (int shift = 0; shift < 64 && ((hi - lo) >> shift) > 0; shift += 8) {
    int64_t count[257] = {0};
    for (int64_t q = 0; q < n; q++) count[(((from[q] - lo) >> shift) & 0xFF) + 1]++;
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    for (int64_t q = 0; q < n; q++) to[count[((from[q] - lo) >> shift) & 0xFF]++] = from[q];
    int64_t *t = from; from = to; to = t;
  }
  if (from != a) memcpy(a, from, (size_t)n * sizeof(int64_t));
}

/* `list` holds the `n` coordinates flagged in `seen`, in any order: put them in
   increasing order. Sorting costs about n log n compares, many mispredicted; scanning the
   flags between the smallest and largest coordinate, 32 at a time, costs a step per 32
   columns and mispredicts only around the flagged ones. Take the cheaper. */
static void sparsec_order_touched(int64_t *list, int64_t n, const char *seen) {
  if (n < 2) return;
  int64_t lo = list[0], hi = list[0], log = 1;
  for (int64_t q = 1; q < n; q++) {
    lo = list[q] < lo ? list[q] : lo;
    hi = list[q] > hi ? list[q] : hi;
  }
  for (int64_t m = n; m > 1; m >>= 1) log++;
  if ((hi - lo) / 32 > n * log) {
    if (n > 32 && n <= 4096) {
      int64_t scratch[n];
      sparsec_radix_sort(list, scratch, n, lo, hi);
    } else {
      sparsec_sort_index(list, n);
    }
    return;
  }
  int64_t k = 0, w = lo;
  for (; w + 32 <= hi + 1; w += 32) {
    uint64_t a, b, c, d;
    memcpy(&a, seen + w, 8);
    memcpy(&b, seen + w + 8, 8);
    memcpy(&c, seen + w + 16, 8);
    memcpy(&d, seen + w + 24, 8);
    if (!(a | b | c | d)) continue;
    uint64_t words[4] = {a, b, c, d};
    for (int q = 0; q < 4; q++) {
      for (uint64_t bytes = words[q]; bytes; bytes &= bytes - 1) {
        /* Flags are 0 or 1: each set bit is one flagged column. */
        list[k++] = w + 8 * q + (__builtin_ctzll(bytes) >> 3);
      }
    }
  }
  for (; w <= hi; w++) {
    if (seen[w]) list[k++] = w;
  }
}

static inline int64_t sparsec_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t sparsec_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* Linear probing inside the parent's block of `width` buckets (hashed levels). */
static inline int64_t sparsec_hash_locate(const int64_t *idx, int64_t width, int64_t parent, int64_t coord) {
  int64_t base = parent * width;
  /* A start inside the block for any coordinate, so the probe always ends. */
  int64_t start = base + ((coord % width) + width) % width;
  int64_t p = start;
  while (idx[p] != coord && idx[p] != -1) {
    p = base + (p - base + 1) % width;
    if (p == start) break;
  }
  return p;
}

"#;

/// Print a lowered kernel. `value_types[n]` is the value type of operand `n`.
pub fn emit(lowered: &Lowered, value_types: &[ValueType]) -> Result<CKernel, BackendError> {
    let Layout { arrays, params } = abi::layout(lowered, "C")?;

    let mut out = String::from(PRELUDE);
    let body_offset = out.len();
    let order = abi::emit_order(lowered);
    let _ = writeln!(
        out,
        "int {ENTRY}(void **arrays, const int64_t *params, sparsec_buffer *out) {{"
    );
    let _ = writeln!(out, "  (void)arrays; (void)params; (void)out;");
    for (n, a) in arrays.iter().enumerate() {
        let name = array_name(a);
        let writable = a.tensor == lowered.operands[0].name && a.kind == ArrayKind::Vals;
        let ty = match a.kind {
            ArrayKind::Vals => value_types[abi::operand_index(lowered, &a.tensor)].c_name(),
            _ => "int64_t",
        };
        let constness = if writable { "" } else { "const " };
        let _ = writeln!(
            out,
            "  {constness}{ty} *restrict {name} = ({constness}{ty} *)arrays[{n}];"
        );
    }
    for (n, p) in params.iter().enumerate() {
        let name = match p {
            Binding::Param(p) => param_name(p),
            Binding::VarSize(v) => abi::var_size_name(lowered, *v),
            Binding::Threads => "sparsec_threads".to_string(),
            Binding::Array(_) => unreachable!(),
        };
        let _ = writeln!(out, "  const int64_t {name} = params[{n}];");
    }
    // `out` holds one entry buffer per thread; serial code appends to the first.
    let _ = writeln!(
        out,
        "  sparsec_buffer *sparsec_out = out; (void)sparsec_out;"
    );
    let _ = writeln!(out, "  int sparsec_oom = 0;");
    for (n, (holds, _)) in lowered.assumptions.iter().enumerate() {
        let _ = writeln!(
            out,
            "  if (!({})) return {};",
            expr(holds),
            assumption_status(n)
        );
    }
    let mut printer = Printer {
        out: &mut out,
        indent: 1,
        emit_order: order,
        parallel_depth: 0,
    };
    printer.allocate(&lowered.locals, "", "1");
    for s in &lowered.body {
        printer.stmt(s);
    }
    printer.release(&lowered.locals, "");
    out.push_str("  return sparsec_oom ? -1 : 0;\n}\n");
    Ok(CKernel {
        source: out,
        arrays,
        params,
        body_offset,
    })
}

fn array_name(a: &ArrayRef) -> String {
    if a.kind == ArrayKind::Local {
        return a.tensor.clone();
    }
    match a.level {
        Some(l) => format!("{}{}_{}", a.tensor, l, a.kind.suffix()),
        None => format!("{}_{}", a.tensor, a.kind.suffix()),
    }
}

fn param_name(p: &ParamRef) -> String {
    format!("{}{}_{}", p.tensor, p.level, p.kind.suffix())
}

struct Printer<'a> {
    out: &'a mut String,
    indent: usize,
    emit_order: usize,
    /// Number of enclosing OpenMP thread teams.
    parallel_depth: usize,
}

impl Printer<'_> {
    /// Allocate zeroed scratch arrays, `copies` times each.
    fn allocate(&mut self, locals: &[Local], suffix: &str, copies: &str) {
        for Local { name, len, ty } in locals {
            let ty = local_type(*ty);
            self.line(&format!(
                "{ty} *{name}{suffix} = ({ty} *)calloc((size_t)({}) * (size_t)({copies}) + 1, \
                 sizeof({ty}));",
                expr(len)
            ));
            // No early return from inside a parallel region.
            let fail = if self.parallel_depth > 0 {
                "abort();"
            } else {
                "return -1;"
            };
            self.line(&format!("if (!{name}{suffix}) {fail}"));
        }
    }

    fn release(&mut self, locals: &[Local], suffix: &str) {
        for Local { name, .. } in locals {
            self.line(&format!("free({name}{suffix});"));
        }
    }

    fn for_loop(&mut self, var: &str, start: &Expr, end: &Expr, body: &[Stmt], kind: &LoopKind) {
        let head = format!(
            "for (int64_t {var} = {}; {var} < {}; {var}++)",
            expr(start),
            expr(end)
        );
        let plain = |p: &mut Self| {
            p.block(&head, body);
            p.line("}");
        };
        match kind {
            LoopKind::Serial => plain(self),
            LoopKind::Unrolled(n) => {
                self.line(&format!("#pragma GCC unroll {n}"));
                plain(self);
            }
            LoopKind::Parallel {
                unit: ParallelUnit::CpuThread,
                schedule,
                chunk,
                reductions,
                locals,
            } => {
                // Threads append to their own entry buffers, which the runtime concatenates
                // in thread order: contiguous blocks keep the entries sorted.
                let emits = body.iter().any(contains_emit);
                let schedule = if emits {
                    "schedule(static)".to_string()
                } else {
                    omp_schedule(*schedule, *chunk)
                };
                let team = team_clauses(start, end, *chunk);
                let reductions = reduction_clauses(reductions);
                self.parallel_depth += 1;
                if locals.is_empty() && !emits {
                    self.line(&format!(
                        "#pragma omp parallel for {schedule} {team}{reductions}"
                    ));
                    plain(self);
                } else {
                    // Each thread gets its own copy of the scratch arrays.
                    self.parallel_depth -= 1;
                    self.allocate(locals, "_all", "sparsec_threads");
                    self.parallel_depth += 1;
                    self.line(&format!("#pragma omp parallel {team}"));
                    self.line("{");
                    self.indent += 1;
                    for Local { name, len, ty } in locals {
                        let ty = local_type(*ty);
                        self.line(&format!(
                            "{ty} *{name} = {name}_all + (int64_t)omp_get_thread_num() * ({});",
                            expr(len)
                        ));
                    }
                    if emits {
                        self.line("sparsec_buffer *sparsec_out = out + omp_get_thread_num();");
                    }
                    self.line(&format!("#pragma omp for {schedule}{reductions}"));
                    plain(self);
                    self.indent -= 1;
                    self.line("}");
                    self.parallel_depth -= 1;
                    self.release(locals, "_all");
                    self.parallel_depth += 1;
                }
                self.parallel_depth -= 1;
            }
            LoopKind::Parallel {
                unit: ParallelUnit::CpuVector,
                reductions,
                locals,
                ..
            } => {
                self.allocate(locals, "", "1");
                self.line(&format!(
                    "#pragma omp simd{}",
                    reduction_clauses(reductions)
                ));
                plain(self);
                self.release(locals, "");
            }
            LoopKind::Parallel { .. } => unreachable!("GPU loops are refused before printing"),
        }
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn block(&mut self, head: &str, body: &[Stmt]) {
        self.line(&format!("{head} {{"));
        self.indent += 1;
        body.iter().for_each(|s| self.stmt(s));
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Decl(name, ty, e) => {
                let ty = match ty {
                    Type::Index => "int64_t",
                    Type::Bool => "int",
                    Type::Value(v) => v.c_name(),
                };
                self.line(&format!("{ty} {name} = {};", expr(e)));
            }
            Stmt::Assign(name, e) => match e {
                Expr::Bin(BinOp::Add, a, b) if matches!(&**a, Expr::Var(n) if n == name) => {
                    match &**b {
                        Expr::Int(1) => self.line(&format!("{name}++;")),
                        b => self.line(&format!("{name} += {};", expr(b))),
                    }
                }
                _ => self.line(&format!("{name} = {};", expr(e))),
            },
            Stmt::Store {
                array,
                index,
                value,
                accumulate,
            } => {
                let op = if *accumulate { "+=" } else { "=" };
                self.line(&format!(
                    "{}[{}] {op} {};",
                    array_name(array),
                    expr(index),
                    expr(value)
                ));
            }
            Stmt::For {
                var,
                start,
                end,
                body,
                kind,
            } => self.for_loop(var, start, end, body, kind),
            Stmt::While(c, body) => {
                self.block(&format!("while ({})", expr(c)), body);
                self.line("}");
            }
            Stmt::Atomic(inner) => {
                self.line("#pragma omp atomic");
                self.stmt(inner);
            }
            Stmt::If(c, then, otherwise) => {
                self.block(&format!("if ({})", expr(c)), then);
                let mut rest = otherwise.as_slice();
                loop {
                    if rest.is_empty() {
                        self.line("}");
                        break;
                    }
                    if let Some(Stmt::If(c, then, otherwise)) = single_if(rest) {
                        self.block(&format!("}} else if ({})", expr(c)), then);
                        rest = otherwise;
                    } else {
                        self.block("} else", rest);
                        self.line("}");
                        break;
                    }
                }
            }
            Stmt::Emit { coords, value } => {
                let n = self.emit_order;
                self.line(&format!(
                    "if (sparsec_out->len == sparsec_out->cap && !sparsec_grow(sparsec_out, {n})) {{"
                ));
                self.line("  sparsec_oom = 1;");
                self.line("} else {");
                self.indent += 1;
                for (k, c) in coords.iter().enumerate() {
                    self.line(&format!(
                        "sparsec_out->coords[sparsec_out->len * {n} + {k}] = {};",
                        expr(c)
                    ));
                }
                self.line(&format!(
                    "sparsec_out->vals[sparsec_out->len++] = {};",
                    expr(value)
                ));
                self.indent -= 1;
                self.line("}");
            }
            Stmt::Block(b) if !b.iter().any(|s| matches!(s, Stmt::Decl(..))) => {
                b.iter().for_each(|s| self.stmt(s));
            }
            Stmt::Block(b) => {
                self.line("{");
                self.indent += 1;
                b.iter().for_each(|s| self.stmt(s));
                self.indent -= 1;
                self.line("}");
            }
            Stmt::OrderTouched { list, len, flags } => self.line(&format!(
                "sparsec_order_touched({}, {}, {});",
                array_name(list),
                expr(len),
                array_name(flags)
            )),
        }
    }
}

fn local_type(ty: LocalType) -> &'static str {
    match ty {
        LocalType::Value => "double",
        LocalType::Index => "int64_t",
        LocalType::Flag => "char",
    }
}

fn contains_emit(s: &Stmt) -> bool {
    match s {
        Stmt::Emit { .. } => true,
        Stmt::For { body, .. } | Stmt::While(_, body) | Stmt::Block(body) => {
            body.iter().any(contains_emit)
        }
        Stmt::If(_, a, b) => a.iter().chain(b).any(contains_emit),
        _ => false,
    }
}

fn reduction_clauses(reductions: &[Reduction]) -> String {
    reductions
        .iter()
        .map(|r| match r {
            Reduction::Scalar(name) => format!(" reduction(+:{name})"),
            Reduction::Array(a, len) => {
                format!(" reduction(+:{}[0:{}])", array_name(a), expr(len))
            }
        })
        .collect()
}

fn omp_schedule(schedule: OmpSchedule, chunk: usize) -> String {
    let kind = match schedule {
        OmpSchedule::Static => "static",
        OmpSchedule::Dynamic => "dynamic",
        OmpSchedule::Guided => "guided",
    };
    format!("schedule({kind}, {chunk})")
}

/// `num_threads` and `if` clauses of a thread team for a loop from `start` to `end`: a
/// loop of one chunk cannot use a second thread, so it skips the team's start-up.
fn team_clauses(start: &Expr, end: &Expr, chunk: usize) -> String {
    let trips = crate::ir::simplify(&(end.clone() - start.clone()));
    format!(
        "num_threads(sparsec_threads) if(sparsec_threads > 1 && {} > {chunk})",
        atom(&trips)
    )
}

/// The lone `if` of an `else` branch (through empty nesting), printed as `else if`.
fn single_if(stmts: &[Stmt]) -> Option<&Stmt> {
    match stmts {
        [s @ Stmt::If(..)] => Some(s),
        [Stmt::Block(inner)] => single_if(inner),
        _ => None,
    }
}

/// Print an expression, fully parenthesised where precedence could be misread.
pub fn expr(e: &Expr) -> String {
    match e {
        Expr::Int(v) => v.to_string(),
        Expr::Float(v) => {
            if v.is_finite() {
                let s = format!("{v:?}");
                if s.contains(['.', 'e', 'E']) {
                    s
                } else {
                    format!("{s}.0")
                }
            } else if v.is_nan() {
                "NAN".into()
            } else if *v > 0.0 {
                "INFINITY".into()
            } else {
                "(-INFINITY)".into()
            }
        }
        Expr::Bool(b) => (*b as i32).to_string(),
        Expr::Var(n) => n.clone(),
        Expr::Param(p) => param_name(p),
        Expr::Load(a, i) => format!("{}[{}]", array_name(a), expr(i)),
        Expr::Neg(a) => format!("-{}", atom(a)),
        Expr::Not(a) => format!("!{}", atom(a)),
        Expr::Bin(BinOp::Min, a, b) => format!("sparsec_min({}, {})", expr(a), expr(b)),
        Expr::Bin(BinOp::Max, a, b) => format!("sparsec_max({}, {})", expr(a), expr(b)),
        Expr::Bin(op, a, b) => {
            let sym = match op {
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
                BinOp::Min | BinOp::Max => unreachable!(),
            };
            format!("{} {sym} {}", atom(a), atom(b))
        }
        Expr::Select(c, a, b) => format!("({} ? {} : {})", expr(c), expr(a), expr(b)),
        Expr::Call(Intrinsic::HashLocate, array, args) => {
            let args: Vec<String> = args.iter().map(expr).collect();
            format!(
                "sparsec_hash_locate({}, {})",
                array_name(array),
                args.join(", ")
            )
        }
    }
}

fn atom(e: &Expr) -> String {
    match e {
        Expr::Bin(op, ..) if !matches!(op, BinOp::Min | BinOp::Max) => format!("({})", expr(e)),
        Expr::Neg(_) => format!("({})", expr(e)),
        Expr::Float(v) if *v < 0.0 => format!("({})", expr(e)),
        Expr::Int(v) if *v < 0 => format!("({v})"),
        _ => expr(e),
    }
}
