//! A readable listing of a function's IR, for tests, debugging and targets that show the
//! IR itself: C-like statements with each loop's parallel unit, mapping, reductions and
//! scratch arrays spelled out, names from the one allocator (so they are unique).

use std::fmt::{self, Write};

use super::{BinOp, Expr, Function, Local, Loop, LoopKind, Mapping, Names, Reduction, Stmt, Store};

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = Names::new(self, &self.signature(), &[]);
        let mut p = Printer {
            names: &names,
            out: String::new(),
            indent: 0,
        };
        for (condition, message) in &self.assumptions {
            p.line(&format!("assume {}; // {message}", p.expr(condition)));
        }
        p.locals("alloc", &self.locals);
        p.stmts(&self.body);
        f.write_str(&p.out)
    }
}

struct Printer<'a> {
    names: &'a Names,
    out: String,
    indent: usize,
}

impl Printer<'_> {
    fn line(&mut self, text: &str) {
        let _ = writeln!(self.out, "{:width$}{text}", "", width = 2 * self.indent);
    }

    fn nested(&mut self, head: &str, body: &[Stmt]) {
        self.line(&format!("{head} {{"));
        self.indent += 1;
        self.stmts(body);
        self.indent -= 1;
        self.line("}");
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        stmts.iter().for_each(|s| self.stmt(s));
    }

    fn locals(&mut self, what: &str, locals: &[Local]) {
        for l in locals {
            let line = format!(
                "{what} {}[{}] in {:?};",
                self.names.scratch(l.array),
                self.expr(&l.len),
                l.space
            );
            self.line(&line);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let n = self.names;
        match s {
            Stmt::Decl(v, e) => self.line(&format!("let {} = {};", n.var(*v), self.expr(e))),
            Stmt::Assign(v, e) => self.line(&format!("{} = {};", n.var(*v), self.expr(e))),
            Stmt::Store(Store {
                array,
                index,
                value,
                accumulate,
            }) => self.line(&format!(
                "{}[{}] {} {};",
                n.array(array),
                self.expr(index),
                if *accumulate { "+=" } else { "=" },
                self.expr(value)
            )),
            Stmt::For(l) => self.for_loop(l),
            Stmt::Atomic(inner) => self.nested("atomic", std::slice::from_ref(inner)),
            Stmt::While(c, body) => self.nested(&format!("while ({})", self.expr(c)), body),
            Stmt::If(c, then, otherwise) => {
                self.nested(&format!("if ({})", self.expr(c)), then);
                if !otherwise.is_empty() {
                    self.nested("else", otherwise);
                }
            }
            Stmt::Emit { coords, value } => {
                let coords: Vec<String> = coords.iter().map(|c| self.expr(c)).collect();
                self.line(&format!(
                    "emit ({}) {};",
                    coords.join(", "),
                    self.expr(value)
                ));
            }
            Stmt::Block(body) => {
                self.line("{");
                self.indent += 1;
                self.stmts(body);
                self.indent -= 1;
                self.line("}");
            }
            Stmt::OrderTouched {
                list, len, width, ..
            } => self.line(&format!(
                "order {}[0:{}] below {};",
                n.scratch(*list),
                self.expr(len),
                self.expr(width)
            )),
            Stmt::Prefetch { array, index } => self.line(&format!(
                "prefetch {}[{}];",
                n.array(array),
                self.expr(index)
            )),
            Stmt::Barrier => self.line("barrier;"),
            Stmt::Launch(n) => self.line(&format!("launch kernel {n};")),
        }
    }

    fn for_loop(&mut self, l: &Loop) {
        let mut head = format!(
            "for {} in {}..{}",
            self.names.var(l.var),
            self.expr(&l.start),
            self.expr(&l.end)
        );
        match &l.kind {
            LoopKind::Serial => {}
            LoopKind::Unrolled(n) => {
                let _ = write!(head, " unrolled {n}");
            }
            LoopKind::Team { work, all } => {
                let _ = write!(
                    head,
                    " on a team sharing {} of {}",
                    self.expr(work),
                    self.expr(all)
                );
            }
            LoopKind::Parallel {
                unit,
                mapping,
                reductions,
                reduce_by,
                locals,
            } => {
                let _ = write!(head, " on {unit:?}");
                match mapping {
                    Mapping::Cpu { schedule, chunk } => {
                        let _ = write!(head, " {schedule:?} {chunk}");
                    }
                    Mapping::Gpu { dim } => {
                        let _ = write!(head, " along {dim:?}");
                    }
                }
                if !reductions.is_empty() {
                    let reduced: Vec<String> = reductions
                        .iter()
                        .map(|r| match r {
                            Reduction::Scalar(v) => self.names.var(*v).to_string(),
                            Reduction::Array(a, len) => {
                                format!("{}[0:{}]", self.names.array(a), self.expr(len))
                            }
                        })
                        .collect();
                    let _ = write!(head, " reduce {} by {reduce_by:?}", reduced.join(", "));
                }
                self.line(&format!("{head} {{"));
                self.indent += 1;
                self.locals("alloc", locals);
                self.stmts(&l.body);
                self.indent -= 1;
                self.line("}");
                return;
            }
        }
        self.nested(&head, &l.body);
    }

    fn expr(&self, e: &Expr) -> String {
        let n = self.names;
        match e {
            Expr::Int(i) => i.to_string(),
            Expr::Float(x) => format!("{x:?}"),
            Expr::Bool(b) => b.to_string(),
            Expr::Var(v) => n.var(*v).to_string(),
            Expr::Param(p) => n.param(p).to_string(),
            Expr::Symbol(s) => format!("{s:?}"),
            Expr::Load(a, i) => format!("{}[{}]", n.array(a), self.expr(i)),
            Expr::Neg(a) => format!("-{}", self.atom(a)),
            Expr::Not(a) => format!("!{}", self.atom(a)),
            Expr::Bin(op @ (BinOp::Min | BinOp::Max), a, b) => format!(
                "{}({}, {})",
                if *op == BinOp::Min { "min" } else { "max" },
                self.expr(a),
                self.expr(b)
            ),
            Expr::Bin(op, a, b) => {
                let sym = op.c_operator().expect("min and max are printed as calls");
                format!("{} {sym} {}", self.atom(a), self.atom(b))
            }
            Expr::Select(c, a, b) => {
                format!("{} ? {} : {}", self.atom(c), self.atom(a), self.atom(b))
            }
            Expr::Math(f, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                f.c_expr(&args)
            }
            Expr::Call(helper, array, args) => {
                let args: Vec<String> = std::iter::once(n.array(array).to_string())
                    .chain(args.iter().map(|a| self.expr(a)))
                    .collect();
                format!("{}({})", helper.name, args.join(", "))
            }
        }
    }

    /// `e` parenthesised unless it is a leaf or a call.
    fn atom(&self, e: &Expr) -> String {
        match e {
            Expr::Bin(..) | Expr::Select(..) => format!("({})", self.expr(e)),
            _ => self.expr(e),
        }
    }
}
