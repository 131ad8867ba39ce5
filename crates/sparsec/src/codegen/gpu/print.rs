//! The shared printer of device kernels: statements and loops in the C that OpenCL C and
//! CUDA C have in common, and what differs asked of the [`Dialect`].

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{
    dim_index, var_type, Dialect, EmitRoom, KernelArg, KernelPlan, LaunchIndex, LANES, REDUCE,
};
use crate::codegen::c::expr::expr;
use crate::ir::outline::DeviceKernel;
use crate::ir::{
    visit, ArrayRef, Element, Expr, Function, GpuDim, IndexWidth, LocalType, Loop, LoopKind,
    Mapping, Names, ParallelUnit, Reduction, Scratch, Signature, Stmt, Var,
};

/// The value a reduction's copies start from: 0 for a sum, else its operator's identity.
fn reduction_identity(function: &Function, names: &Names) -> String {
    match &function.reduction_operator {
        Some(op) => expr(names, &Expr::Float(op.identity)),
        None => "0".into(),
    }
}

/// The C type of a scratch array's elements.
fn scratch_type(ty: LocalType) -> &'static str {
    match ty {
        LocalType::Value => "double",
        LocalType::Index => "int64_t",
        LocalType::Flag => "char",
    }
}

/// The C type of an array's elements.
fn element_type(function: &Function, signature: &Signature, a: &ArrayRef) -> &'static str {
    match a {
        ArrayRef::Scratch(s) => scratch_type(function.scratch_info(*s).ty),
        _ => {
            let slot = signature
                .arrays
                .iter()
                .position(|b| b == a)
                .expect("a kernel's operand arrays are the function's");
            match signature.elements[slot] {
                Element::Value(v) => v.c_name(),
                Element::Index(IndexWidth::I32) => "int32_t",
                Element::Index(IndexWidth::I64) => "int64_t",
            }
        }
    }
}

const LOCAL_ID: &str = "sparsec_lid";
const LOCAL_SIZE: &str = "sparsec_lsize";
const GROUP: &str = "sparsec_group";
const COMBINE: &str = "sparsec_combine";

/// Print `kernel` as `plan` lays it out, in `dialect`.
pub(super) fn kernel(
    out: &mut String,
    function: &Function,
    signature: &Signature,
    names: &Names,
    kernel: &DeviceKernel,
    plan: &KernelPlan,
    dialect: &dyn Dialect,
) {
    let mut params = Vec::new();
    let mut declared = Vec::new();
    let mut shared = Vec::new();
    for arg in &plan.args {
        params.push(match arg {
            KernelArg::Array(a) => {
                let constness = if kernel.written.contains(a) {
                    ""
                } else {
                    "const "
                };
                let ty = element_type(function, signature, a);
                dialect.global_param(ty, constness, names.array(a))
            }
            KernelArg::Param(p) => format!("const int64_t {}", names.param(p)),
            KernelArg::Captured(v) => {
                format!("const {} {}", var_type(function.var(*v).ty), names.var(*v))
            }
            KernelArg::Partial(v) => dialect.global_param(
                var_type(function.var(*v).ty),
                "",
                &format!("{}_partial", names.var(*v)),
            ),
            KernelArg::Shared { array, .. } => {
                shared.push(*array);
                let ty = scratch_type(function.scratch_info(*array).ty);
                let (param, decl) = dialect.shared_param(ty, names.scratch(*array));
                declared.extend(decl);
                param
            }
            KernelArg::Private { array, .. } => dialect.global_param(
                scratch_type(function.scratch_info(*array).ty),
                "",
                &format!("{}_all", names.scratch(*array)),
            ),
            KernelArg::Combine => {
                let (param, decl) = dialect.shared_param("int64_t", COMBINE);
                declared.extend(decl);
                param
            }
            KernelArg::Warps(d) => format!("const int64_t sparsec_warps_{}", dim_index(*d)),
            KernelArg::Emitted(EmitRoom::Capacity) => {
                format!("const int64_t {}", EmitRoom::Capacity.name())
            }
            KernelArg::Emitted(room @ (EmitRoom::Coords | EmitRoom::Counter)) => {
                dialect.global_param("int64_t", "", room.name())
            }
            KernelArg::Emitted(EmitRoom::Values) => {
                dialect.global_param("double", "", EmitRoom::Values.name())
            }
        });
    }
    let index = |i, d| dialect.index(i, d);
    let linear = |i: LaunchIndex, size: LaunchIndex| {
        format!(
            "{} + {} * ({} + {} * {})",
            index(i, 0),
            index(size, 0),
            index(i, 1),
            index(size, 1),
            index(i, 2)
        )
    };
    let _ = writeln!(out, "{} {{", dialect.kernel_head(&plan.name, &params));
    for line in declared {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "  const int64_t {LOCAL_ID} = {};",
        linear(LaunchIndex::Item, LaunchIndex::Items)
    );
    let _ = writeln!(
        out,
        "  const int64_t {LOCAL_SIZE} = {} * {} * {};",
        index(LaunchIndex::Items, 0),
        index(LaunchIndex::Items, 1),
        index(LaunchIndex::Items, 2)
    );
    let _ = writeln!(
        out,
        "  const int64_t {GROUP} = {};",
        linear(LaunchIndex::Group, LaunchIndex::Groups)
    );
    let _ = writeln!(
        out,
        "  (void){LOCAL_ID}; (void){LOCAL_SIZE}; (void){GROUP};"
    );
    for v in &kernel.results {
        let _ = writeln!(
            out,
            "  {} {} = {};",
            var_type(function.var(*v).ty),
            names.var(*v),
            reduction_identity(function, names)
        );
    }
    for arg in &plan.args {
        match arg {
            KernelArg::Private { array, len } => {
                let name = names.scratch(*array);
                let ty = scratch_type(function.scratch_info(*array).ty);
                let _ = writeln!(
                    out,
                    "  {} {name} = {name}_all + ({GROUP} * {LOCAL_SIZE} + {LOCAL_ID}) * ({});",
                    dialect.global_pointer(ty),
                    expr(names, len)
                );
            }
            KernelArg::Shared { array, len } => {
                let _ = writeln!(
                    out,
                    "  for (int64_t sparsec_q = {LOCAL_ID}; sparsec_q < {}; sparsec_q += \
                     {LOCAL_SIZE}) {}[sparsec_q] = 0;",
                    expr(names, len),
                    names.scratch(*array)
                );
                let _ = writeln!(out, "  {}", dialect.barrier());
            }
            _ => {}
        }
    }
    // Variables the kernel never reads are left out (their values are loads or
    // arithmetic, without effects): a device compiler warns of them.
    let mut read = BTreeSet::new();
    visit::walk_stmt_exprs(
        std::slice::from_ref(&Stmt::For(kernel.nest.clone())),
        &mut |e| {
            if let Expr::Var(v) = e {
                read.insert(*v);
            }
        },
    );
    read.extend(kernel.results.iter().copied());
    let mut printer = Printer {
        out,
        names,
        function,
        dialect,
        read,
        indent: 1,
        shared,
        warp_dim: plan.warp_dim,
        sums: 0,
        summed: Vec::new(),
        declared: Vec::new(),
    };
    printer.for_loop(&kernel.nest);
    for v in &kernel.results {
        let name = names.var(*v);
        let _ = writeln!(
            printer.out,
            "  if ({LOCAL_ID} == 0) {name}_partial[{GROUP}] = {name};"
        );
    }
    printer.out.push_str("}\n\n");
}

struct Printer<'a> {
    out: &'a mut String,
    names: &'a Names,
    function: &'a Function,
    dialect: &'a dyn Dialect,
    /// The variables the kernel reads.
    read: BTreeSet<Var>,
    /// The variables declared in the blocks being printed, innermost last, each with
    /// whether its declaration is printed (something after it reads it).
    declared: Vec<(Var, bool)>,
    indent: usize,
    /// The scratch arrays in shared memory.
    shared: Vec<Scratch>,
    warp_dim: Option<GpuDim>,
    /// Thread loops' sums printed so far, each with its own saved value.
    sums: usize,
    /// Arrays that enclosing GPU loops sum into: every addition into them is atomic.
    summed: Vec<ArrayRef>,
}

impl Printer<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn block(&mut self, head: &str, body: &[Stmt]) {
        self.line(format!("{head} {{").trim_start());
        self.indent += 1;
        self.stmts(body);
        self.indent -= 1;
        self.line("}");
    }

    /// The statements of one block. A declaration whose variable nothing after it in the
    /// block reads is left out with the assignments to it (the phases of a two-phase
    /// kernel share variables, which each phase reads in only some of their scopes, and a
    /// workspace's producer and consumer recover the same variables), as device compilers
    /// warn of it. A read by a statement left out does not count, so chains of such
    /// declarations go together.
    fn stmts(&mut self, body: &[Stmt]) {
        let mut left_out = vec![false; body.len()];
        // The variables of the declarations left out so far.
        let mut dropped: Vec<Var> = Vec::new();
        loop {
            let mut changed = false;
            for k in (0..body.len()).rev() {
                let Stmt::Decl(v, _) = &body[k] else {
                    continue;
                };
                if left_out[k] {
                    continue;
                }
                let mut read_after = false;
                for (m, s) in body.iter().enumerate().skip(k + 1) {
                    let skipped = left_out[m]
                        || matches!(s, Stmt::Assign(u, _) if u == v || dropped.contains(u));
                    if !skipped {
                        visit::walk_stmt_exprs(std::slice::from_ref(s), &mut |e| {
                            read_after |= matches!(e, Expr::Var(u) if u == v);
                        });
                    }
                }
                if !read_after {
                    left_out[k] = true;
                    dropped.push(*v);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let scopes = self.declared.len();
        for (k, s) in body.iter().enumerate() {
            if let Stmt::Decl(v, _) = s {
                self.declared.push((*v, !left_out[k]));
            }
            self.stmt(s);
        }
        self.declared.truncate(scopes);
    }

    /// False when the innermost declaration of `v` in scope is left out.
    fn printed(&self, v: Var) -> bool {
        self.read.contains(&v)
            && self
                .declared
                .iter()
                .rev()
                .find(|(u, _)| *u == v)
                .is_none_or(|(_, read)| *read)
    }

    fn for_loop(&mut self, l: &Loop) {
        let names = self.names;
        let var = names.var(l.var);
        let (start, end) = (expr(names, &l.start), expr(names, &l.end));
        let LoopKind::Parallel {
            unit,
            mapping: Mapping::Gpu { dim },
            reductions,
            ..
        } = &l.kind
        else {
            self.block(
                &format!("for (int64_t {var} = {start}; {var} < {end}; {var}++)"),
                &l.body,
            );
            return;
        };
        let d = dim_index(*dim);
        let warped = self.warp_dim == Some(*dim);
        let index = |i| self.dialect.index(i, d);
        let (first, step) = match unit {
            ParallelUnit::GpuBlock if warped => (
                format!("{} / sparsec_warps_{d}", index(LaunchIndex::Group)),
                format!("{} / sparsec_warps_{d}", index(LaunchIndex::Groups)),
            ),
            ParallelUnit::GpuBlock => (index(LaunchIndex::Group), index(LaunchIndex::Groups)),
            ParallelUnit::GpuWarp => (
                format!("{} % sparsec_warps_{d}", index(LaunchIndex::Group)),
                format!("sparsec_warps_{d}"),
            ),
            _ => (index(LaunchIndex::Item), index(LaunchIndex::Items)),
        };
        let sums: Vec<Var> = match unit {
            ParallelUnit::GpuThread => reductions
                .iter()
                .filter_map(|r| match r {
                    Reduction::Scalar(v) => Some(*v),
                    Reduction::Array(..) => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        // Each work-item reduces its iterations from the identity (0 for a sum); the
        // copies are combined after the loop, and with the value before it.
        let saved: Vec<String> = sums
            .iter()
            .map(|v| {
                self.sums += 1;
                let saved = format!("sparsec_before_{}", self.sums);
                let name = names.var(*v);
                let ty = var_type(self.function.var(*v).ty);
                self.line(&format!("const {ty} {saved} = {name};"));
                self.line(&format!(
                    "{name} = {};",
                    reduction_identity(self.function, names)
                ));
                saved
            })
            .collect();
        let summed_before = self.summed.len();
        self.summed
            .extend(reductions.iter().filter_map(|r| match r {
                Reduction::Array(array, _) => Some(*array),
                Reduction::Scalar(_) => None,
            }));
        self.block(
            &format!("for (int64_t {var} = {start} + {first}; {var} < {end}; {var} += {step})"),
            &l.body,
        );
        self.summed.truncate(summed_before);
        for (v, saved) in sums.iter().zip(saved) {
            self.combine(*v, &saved);
        }
    }

    /// `a ⊕ b` for the function's reduction: a sum unless it has a
    /// [`crate::ir::ReductionOperator`].
    fn reduce(&self, a: &str, b: &str) -> String {
        match self.function.reduction_operator {
            Some(_) => format!("{REDUCE}({a}, {b})"),
            None => format!("{a} + {b}"),
        }
    }

    /// Every work-item's `v` becomes `saved` ⊕ the reduction of all of theirs: a warp's
    /// shuffles where the dialect has them and the group is one warp, else a tree in
    /// shared memory, barriers between its levels.
    fn combine(&mut self, v: Var, saved: &str) {
        let name = self.names.var(v).to_string();
        if self.warp_dim.is_some() {
            let combine = |a: &str, b: &str| self.reduce(a, b);
            if let Some(lines) = self.dialect.warp_reduce(&name, LANES, &combine) {
                for line in lines {
                    self.line(&line);
                }
                let total = self.reduce(saved, &name);
                self.line(&format!("{name} = {total};"));
                return;
            }
        }
        let ty = var_type(self.function.var(v).ty);
        let barrier = self.dialect.barrier();
        let slots = format!("(({}){COMBINE})", self.dialect.shared_pointer(ty));
        self.line(&format!("{slots}[{LOCAL_ID}] = {name};"));
        self.line(barrier);
        let pair = self.reduce(
            &format!("{slots}[{LOCAL_ID}]"),
            &format!("{slots}[{LOCAL_ID} + sparsec_s]"),
        );
        self.line(&format!(
            "for (int64_t sparsec_s = 1; sparsec_s < {LOCAL_SIZE}; sparsec_s *= 2) {{ if \
             ({LOCAL_ID} % (2 * sparsec_s) == 0 && {LOCAL_ID} + sparsec_s < {LOCAL_SIZE}) \
             {slots}[{LOCAL_ID}] = {pair}; {barrier} }}"
        ));
        let total = self.reduce(saved, &format!("{slots}[0]"));
        self.line(&format!("{name} = {total};"));
        self.line(barrier);
    }

    fn stmt(&mut self, s: &Stmt) {
        let names = self.names;
        match s {
            Stmt::Decl(v, _) | Stmt::Assign(v, _) if !self.printed(*v) => {}
            Stmt::Decl(v, e) => {
                let ty = var_type(self.function.var(*v).ty);
                self.line(&format!("{ty} {} = {};", names.var(*v), expr(names, e)));
            }
            Stmt::Assign(v, e) => self.line(&format!("{} = {};", names.var(*v), expr(names, e))),
            Stmt::Store(store) if store.accumulate && self.summed.contains(&store.array) => {
                self.stmt(&Stmt::Atomic(Box::new(s.clone())));
            }
            Stmt::Store(store) => {
                let op = if store.accumulate { "+=" } else { "=" };
                self.line(&format!(
                    "{}[{}] {op} {};",
                    names.array(&store.array),
                    expr(names, &store.index),
                    expr(names, &store.value)
                ));
            }
            Stmt::Atomic(inner) => match &**inner {
                Stmt::Store(store) if store.accumulate => {
                    let target = format!(
                        "&{}[{}]",
                        names.array(&store.array),
                        expr(names, &store.index)
                    );
                    let value = expr(names, &store.value);
                    let shared =
                        matches!(store.array, ArrayRef::Scratch(s) if self.shared.contains(&s));
                    let ty = self.function.element_type(&store.array);
                    let narrow = names.is_narrow(&store.array);
                    let line = self.dialect.atomic_add(ty, narrow, shared, &target, &value);
                    self.line(&line);
                }
                other => self.stmt(other),
            },
            Stmt::For(l) => self.for_loop(l),
            Stmt::While(c, body) => self.block(&format!("while ({})", expr(names, c)), body),
            Stmt::If(c, then, otherwise) => {
                self.line(&format!("if ({}) {{", expr(names, c)));
                self.indent += 1;
                self.stmts(then);
                self.indent -= 1;
                if otherwise.is_empty() {
                    self.line("}");
                } else {
                    self.block("} else", otherwise);
                }
            }
            Stmt::Block(b) => self.block("", b),
            Stmt::Barrier => self.line(self.dialect.barrier()),
            // A hint only.
            Stmt::Prefetch { .. } => {}
            Stmt::OrderTouched {
                list, len, flags, ..
            } => self.order_touched(
                names.scratch(*list),
                &expr(names, len),
                names.scratch(*flags),
            ),
            Stmt::Emit { coords, value } => {
                let slot = "sparsec_slot";
                self.line("{");
                self.line(&format!(
                    "  const int64_t {slot} = {};",
                    self.dialect.fetch_increment(EmitRoom::Counter.name())
                ));
                self.line(&format!("  if ({slot} < {}) {{", EmitRoom::Capacity.name()));
                for (k, c) in coords.iter().enumerate() {
                    self.line(&format!(
                        "    {}[{slot} * {} + {k}] = {};",
                        EmitRoom::Coords.name(),
                        coords.len(),
                        expr(names, c)
                    ));
                }
                self.line(&format!(
                    "    {}[{slot}] = (double)({});",
                    EmitRoom::Values.name(),
                    expr(names, value)
                ));
                self.line("  }");
                self.line("}");
            }
            Stmt::Launch(_) => unreachable!("refused before printing: {s:?}"),
        }
    }

    /// Put the `len` coordinates of a workspace's touched `list`, each flagged in `flags`,
    /// in increasing order, in the work-item that owns them: a scan of the flags between
    /// the extreme coordinates when they are dense (one flag in 8 or more), else a
    /// heapsort, which no list makes quadratic and which needs no memory of its own (the
    /// CPU runtime's bitmap and radix sort would need scratch per work-item).
    fn order_touched(&mut self, list: &str, len: &str, flags: &str) {
        let sift = |root: &str, end: &str| {
            format!(
                "{{ int64_t sparsec_r = {root}; const int64_t sparsec_x = {list}[sparsec_r]; \
                 for (int64_t sparsec_c = 2 * sparsec_r + 1; sparsec_c < {end}; sparsec_c = 2 * \
                 sparsec_r + 1) {{ if (sparsec_c + 1 < {end} && {list}[sparsec_c + 1] > \
                 {list}[sparsec_c]) sparsec_c++; if ({list}[sparsec_c] <= sparsec_x) break; \
                 {list}[sparsec_r] = {list}[sparsec_c]; sparsec_r = sparsec_c; }} \
                 {list}[sparsec_r] = sparsec_x; }}"
            )
        };
        let lines = [
            "{".to_string(),
            format!("  const int64_t sparsec_n = {len};"),
            "  if (sparsec_n > 1) {".to_string(),
            format!("    int64_t sparsec_lo = {list}[0], sparsec_hi = {list}[0];"),
            format!(
                "    for (int64_t sparsec_q = 1; sparsec_q < sparsec_n; sparsec_q++) {{ \
                 sparsec_lo = sparsec_min(sparsec_lo, {list}[sparsec_q]); sparsec_hi = \
                 sparsec_max(sparsec_hi, {list}[sparsec_q]); }}"
            ),
            "    if ((sparsec_hi - sparsec_lo) / 8 <= sparsec_n) {".to_string(),
            "      int64_t sparsec_k = 0;".to_string(),
            format!(
                "      for (int64_t sparsec_w = sparsec_lo; sparsec_w <= sparsec_hi; \
                 sparsec_w++) if ({flags}[sparsec_w]) {list}[sparsec_k++] = sparsec_w;"
            ),
            "    } else {".to_string(),
            format!(
                "      for (int64_t sparsec_s = sparsec_n / 2 - 1; sparsec_s >= 0; sparsec_s--) {}",
                sift("sparsec_s", "sparsec_n")
            ),
            format!(
                "      for (int64_t sparsec_e = sparsec_n - 1; sparsec_e > 0; sparsec_e--) {{ \
                 const int64_t sparsec_t = {list}[0]; {list}[0] = {list}[sparsec_e]; \
                 {list}[sparsec_e] = sparsec_t; {} }}",
                sift("0", "sparsec_e")
            ),
            "    }".to_string(),
            "  }".to_string(),
            "}".to_string(),
        ];
        for line in lines {
            self.line(&line);
        }
    }
}
