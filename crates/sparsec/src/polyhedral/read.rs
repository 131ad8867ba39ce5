//! Reading isl's AST back into IR, for every front end that scans integer sets with isl:
//! blocks, conditions and loops (their ends read from isl's conditions, strided loops
//! counted), and isl's integer expressions. What the AST's names and statement instances
//! mean, which loops run in parallel, and loops a front end reads in its own way (the
//! sparse polyhedral front end's uninterpreted-function slots) are the front end's
//! ([`FrontEnd`]).

use crate::ir::{self, BinOp, Expr, Loop, LoopKind, Stmt, Type, Var};
use crate::polyhedral::isl::{Ast, AstExpr, AstOp};

/// A loop node of isl's AST.
pub struct LoopNode<'a> {
    pub iterator: &'a str,
    pub init: &'a AstExpr,
    pub cond: &'a AstExpr,
    /// The step, at least 1.
    pub step: i64,
    pub body: &'a Ast,
}

/// What a front end decides while its AST is read back.
pub trait FrontEnd {
    /// The front end's error.
    type Error;

    /// An error for what isl gave that the reader cannot read.
    fn internal(&self, message: String) -> Self::Error;

    /// A new variable of the function being built.
    fn fresh_var(&mut self, hint: String, ty: Type) -> Var;

    /// The value of a name isl's AST uses: an enclosing loop's iterator (see
    /// [`FrontEnd::enter`]), a parameter, or anything else the front end gave isl.
    fn name(&mut self, name: &str) -> Result<Expr, Self::Error>;

    /// Read a loop the front end emits in its own way (reading its body with [`node`]),
    /// or `None` to have it read as a loop.
    fn own_loop(
        &mut self,
        node: &LoopNode<'_>,
        out: &mut Vec<Stmt>,
    ) -> Option<Result<(), Self::Error>>;

    /// The name hint and the kind of the loop over `iterator`.
    fn loop_var(&mut self, iterator: &str) -> Result<(String, LoopKind), Self::Error>;

    /// `iterator` is `var` in the loop body about to be read.
    fn enter(&mut self, iterator: &str, var: Var);

    /// The body of the loop over `iterator` has been read.
    fn leave(&mut self, iterator: &str);

    /// The statements of one statement instance, isl's call `args` (the statement's name,
    /// then its arguments; translate them with [`expr`]).
    fn instance(&mut self, args: &[AstExpr]) -> Result<Vec<Stmt>, Self::Error>;
}

/// The kind of a loop whose iterations run on the CPU team, in static chunks of 16.
pub fn cpu_parallel() -> LoopKind {
    LoopKind::Parallel {
        unit: crate::ir::ParallelUnit::CpuThread,
        mapping: crate::ir::Mapping::Cpu {
            schedule: crate::ir::OmpSchedule::Static,
            chunk: 16,
        },
        reductions: Vec::new(),
        reduce_by: crate::ir::ReductionStrategy::Temporary,
        locals: Vec::new(),
    }
}

/// The IR of isl's tree `ast`.
pub fn read<F: FrontEnd>(front: &mut F, ast: &Ast) -> Result<Vec<Stmt>, F::Error> {
    let mut out = Vec::new();
    node(front, ast, &mut out)?;
    Ok(out)
}

/// Append the IR of the node `ast` to `out`.
pub fn node<F: FrontEnd>(front: &mut F, ast: &Ast, out: &mut Vec<Stmt>) -> Result<(), F::Error> {
    match ast {
        Ast::Block(nodes) => {
            for n in nodes {
                node(front, n, out)?;
            }
        }
        Ast::If {
            cond,
            then,
            otherwise,
        } => {
            let cond = expr(front, cond)?;
            let mut yes = Vec::new();
            node(front, then, &mut yes)?;
            let mut no = Vec::new();
            if let Some(o) = otherwise {
                node(front, o, &mut no)?;
            }
            out.push(Stmt::If(cond, yes, no));
        }
        Ast::For {
            iterator,
            init,
            cond,
            inc,
            degenerate,
            body,
        } => {
            let step = match inc {
                AstExpr::Int(k) if *k >= 1 => *k,
                other => return Err(front.internal(format!("isl gave a loop step {other:?}"))),
            };
            let loop_node = LoopNode {
                iterator,
                init,
                cond,
                step,
                body,
            };
            if let Some(read) = front.own_loop(&loop_node, out) {
                return read;
            }
            for_loop(front, &loop_node, *degenerate, out)?;
        }
        Ast::User(call) => {
            let AstExpr::Op(AstOp::Call, args) = call else {
                return Err(front.internal(format!("isl gave a statement instance {call:?}")));
            };
            out.extend(front.instance(args)?);
        }
    }
    Ok(())
}

fn for_loop<F: FrontEnd>(
    front: &mut F,
    node_: &LoopNode<'_>,
    degenerate: bool,
    out: &mut Vec<Stmt>,
) -> Result<(), F::Error> {
    let (hint, kind) = front.loop_var(node_.iterator)?;
    let start = expr(front, node_.init)?;
    let var = front.fresh_var(hint, Type::Index);
    front.enter(node_.iterator, var);
    let mut stmts = Vec::new();
    let body = node(front, node_.body, &mut stmts);
    let end = match (&body, degenerate) {
        (Ok(()), false) => Some(loop_end(front, node_.cond, node_.iterator)),
        _ => None,
    };
    front.leave(node_.iterator);
    body?;
    let Some(end) = end else {
        out.push(Stmt::Decl(var, start));
        out.extend(stmts);
        return Ok(());
    };
    let end = end?;
    if node_.step == 1 {
        out.push(Stmt::For(Loop {
            var,
            start,
            end,
            body: stmts,
            kind,
        }));
        return Ok(());
    }
    // A strided loop counts its iterations.
    let count = front.fresh_var("step".into(), Type::Index);
    let trips = ceil_div(end - start.clone(), node_.step);
    let mut counted = vec![Stmt::Decl(
        var,
        start + Expr::Var(count) * Expr::Int(node_.step),
    )];
    counted.extend(stmts);
    out.push(Stmt::For(Loop {
        var: count,
        start: Expr::Int(0),
        end: trips,
        body: counted,
        kind,
    }));
    Ok(())
}

/// Whether `e` is the iterator `iterator`.
pub fn is_iterator(e: &AstExpr, iterator: &str) -> bool {
    matches!(e, AstExpr::Id(name) if name == iterator)
}

/// The exclusive end of a loop over `iterator` from its condition (`c <= e`, `c < e`, or
/// a conjunction of those).
pub fn loop_end<F: FrontEnd>(
    front: &mut F,
    cond: &AstExpr,
    iterator: &str,
) -> Result<Expr, F::Error> {
    match cond {
        AstExpr::Op(AstOp::Le | AstOp::Lt, args) if is_iterator(&args[0], iterator) => {
            let inclusive = matches!(cond, AstExpr::Op(AstOp::Le, _));
            // `c <= min(a, b)` ends at `min(a + 1, b + 1)`.
            let bounds = match &args[1] {
                AstExpr::Op(AstOp::Min, bounds) if inclusive => bounds.as_slice(),
                bound => std::slice::from_ref(bound),
            };
            let mut ends = Vec::new();
            for b in bounds {
                let e = expr(front, b)?;
                ends.push(match inclusive {
                    true => plus_one(e),
                    false => e,
                });
            }
            Ok(ends.into_iter().reduce(Expr::min).expect("a bound"))
        }
        AstExpr::Op(AstOp::And | AstOp::AndThen, parts) => {
            let mut ends = Vec::new();
            for p in parts {
                ends.push(loop_end(front, p, iterator)?);
            }
            Ok(ends.into_iter().reduce(Expr::min).expect("a conjunction"))
        }
        other => Err(front.internal(format!(
            "isl gave a loop condition sparsec cannot read: {other:?}"
        ))),
    }
}

/// The IR of isl's expression `e`.
pub fn expr<F: FrontEnd>(front: &mut F, e: &AstExpr) -> Result<Expr, F::Error> {
    Ok(match e {
        AstExpr::Int(k) => Expr::Int(*k),
        AstExpr::Id(name) => front.name(name)?,
        AstExpr::Op(op, operands) => {
            let mut a = Vec::with_capacity(operands.len());
            for operand in operands {
                a.push(expr(front, operand)?);
            }
            let unreadable = |front: &F| front.internal(format!("isl gave {e:?}"));
            let two = |front: &F, op: BinOp| match a.as_slice() {
                [x, y] => Ok(Expr::bin(op, x.clone(), y.clone())),
                _ => Err(unreadable(front)),
            };
            match op {
                AstOp::And | AstOp::AndThen => two(front, BinOp::And)?,
                AstOp::Or | AstOp::OrElse => two(front, BinOp::Or)?,
                AstOp::Max => a
                    .into_iter()
                    .reduce(Expr::max)
                    .ok_or_else(|| unreadable(front))?,
                AstOp::Min => a
                    .into_iter()
                    .reduce(Expr::min)
                    .ok_or_else(|| unreadable(front))?,
                AstOp::Minus => match a.as_slice() {
                    [x] => Expr::Int(0) - x.clone(),
                    _ => return Err(unreadable(front)),
                },
                AstOp::Add => two(front, BinOp::Add)?,
                AstOp::Sub => two(front, BinOp::Sub)?,
                AstOp::Mul => two(front, BinOp::Mul)?,
                // Exact, or of a non-negative dividend: C's division is right.
                AstOp::Div | AstOp::PdivQ => two(front, BinOp::Div)?,
                AstOp::PdivR | AstOp::ZdivR => two(front, BinOp::Rem)?,
                AstOp::FdivQ => match (a.first(), operands.get(1)) {
                    (Some(x), Some(AstExpr::Int(d))) if *d >= 1 => floor_div(x.clone(), *d),
                    _ => return Err(unreadable(front)),
                },
                AstOp::Cond | AstOp::Select => match a.as_slice() {
                    [c, x, y] => Expr::Select(
                        Box::new(c.clone()),
                        Box::new(x.clone()),
                        Box::new(y.clone()),
                    ),
                    _ => return Err(unreadable(front)),
                },
                AstOp::Eq => two(front, BinOp::Eq)?,
                AstOp::Le => two(front, BinOp::Le)?,
                AstOp::Lt => two(front, BinOp::Lt)?,
                AstOp::Ge => two(front, BinOp::Ge)?,
                AstOp::Gt => two(front, BinOp::Gt)?,
                AstOp::Call | AstOp::Access | AstOp::Member | AstOp::AddressOf => {
                    return Err(front.internal(format!("isl gave {e:?} in an expression")))
                }
            }
        }
    })
}

/// `e + 1`, folded into a constant term of `e`.
fn plus_one(e: Expr) -> Expr {
    match e {
        Expr::Bin(BinOp::Sub, a, b) if *b == Expr::Int(1) => *a,
        Expr::Bin(BinOp::Add, a, b) if matches!(*b, Expr::Int(_)) => {
            let Expr::Int(k) = *b else { unreachable!() };
            ir::simplify(&(*a + Expr::Int(k + 1)))
        }
        e => ir::simplify(&(e + Expr::Int(1))),
    }
}

/// `floor(a / b)` for `b >= 1`, also for negative `a` (C's `/` truncates toward zero).
pub fn floor_div(a: Expr, b: i64) -> Expr {
    if b == 1 {
        return a;
    }
    let rem = Expr::bin(
        BinOp::Rem,
        Expr::bin(BinOp::Rem, a.clone(), Expr::Int(b)) + Expr::Int(b),
        Expr::Int(b),
    );
    ir::simplify(&Expr::bin(BinOp::Div, a - rem, Expr::Int(b)))
}

/// `ceil(a / b)` for `b >= 1`.
pub fn ceil_div(a: Expr, b: i64) -> Expr {
    if b == 1 {
        return a;
    }
    ir::simplify(&(Expr::Int(0) - floor_div(Expr::Int(0) - a, b)))
}

/// The conjunction of `conds` (true when there are none).
pub fn conjunction(conds: Vec<Expr>) -> Expr {
    conds
        .into_iter()
        .reduce(Expr::and)
        .unwrap_or(Expr::Bool(true))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::ir::{ArrayRef, Function, OperandId, OperandInfo, OutputMode, ParamRef, ValueType};
    use crate::polyhedral::isl::Isl;

    /// A front end whose one statement `S0[i, j]` stores to `y[i * 100 + j]`, with one
    /// parameter `N`.
    struct Toy {
        function: Function,
        iterators: Vec<(String, Var)>,
    }

    impl FrontEnd for Toy {
        type Error = String;

        fn internal(&self, message: String) -> String {
            message
        }

        fn fresh_var(&mut self, hint: String, ty: Type) -> Var {
            self.function.fresh_var(hint, ty)
        }

        fn name(&mut self, name: &str) -> Result<Expr, String> {
            if let Some((_, v)) = self.iterators.iter().rev().find(|(n, _)| n == name) {
                return Ok(Expr::Var(*v));
            }
            match name {
                "N" => Ok(Expr::Param(ParamRef::Extent(0))),
                _ => Err(format!("unknown name {name}")),
            }
        }

        fn own_loop(&mut self, _: &LoopNode<'_>, _: &mut Vec<Stmt>) -> Option<Result<(), String>> {
            None
        }

        fn loop_var(&mut self, iterator: &str) -> Result<(String, LoopKind), String> {
            Ok((iterator.to_string(), LoopKind::Serial))
        }

        fn enter(&mut self, iterator: &str, var: Var) {
            self.iterators.push((iterator.to_string(), var));
        }

        fn leave(&mut self, _: &str) {
            self.iterators.pop();
        }

        fn instance(&mut self, args: &[AstExpr]) -> Result<Vec<Stmt>, String> {
            let [AstExpr::Id(name), i, j] = args else {
                return Err(format!("instance {args:?}"));
            };
            assert_eq!(name, "S0");
            let (i, j) = (expr(self, i)?, expr(self, j)?);
            Ok(vec![Stmt::Store(crate::ir::Store {
                array: ArrayRef::Values(OperandId(0)),
                index: i * Expr::Int(100) + j,
                value: Expr::Float(1.0),
                accumulate: true,
            })])
        }
    }

    /// The indices the statements store to, in order, with `N = n`.
    fn run(stmts: &[Stmt], n: i64, env: &mut HashMap<Var, i64>, stores: &mut Vec<i64>) {
        fn eval(e: &Expr, n: i64, env: &HashMap<Var, i64>) -> i64 {
            match e {
                Expr::Int(k) => *k,
                Expr::Bool(b) => i64::from(*b),
                Expr::Var(v) => env[v],
                Expr::Param(ParamRef::Extent(0)) => n,
                Expr::Bin(op, a, b) => {
                    crate::ir::interp::apply(*op, eval(a, n, env), eval(b, n, env))
                        .expect("the test's loops neither overflow nor divide by zero")
                }
                Expr::Select(c, a, b) => match eval(c, n, env) {
                    0 => eval(b, n, env),
                    _ => eval(a, n, env),
                },
                other => panic!("not in the test's IR: {other:?}"),
            }
        }
        for s in stmts {
            match s {
                Stmt::Decl(v, e) | Stmt::Assign(v, e) => {
                    let value = eval(e, n, env);
                    env.insert(*v, value);
                }
                Stmt::For(l) => {
                    let (start, end) = (eval(&l.start, n, env), eval(&l.end, n, env));
                    for k in start..end {
                        env.insert(l.var, k);
                        run(&l.body, n, env, stores);
                    }
                }
                Stmt::If(c, then, otherwise) => match eval(c, n, env) {
                    0 => run(otherwise, n, env, stores),
                    _ => run(then, n, env, stores),
                },
                Stmt::Block(body) => run(body, n, env, stores),
                Stmt::Store(store) => stores.push(eval(&store.index, n, env)),
                other => panic!("not in the test's IR: {other:?}"),
            }
        }
    }

    /// isl's loops for a triangle of even columns (bounds with `min`, a stride of 2), and
    /// a domain split in two pieces, read back by a front end that knows only its names
    /// and its statement: the instances run are the domain's points, in the schedule's
    /// order, for every `N`.
    #[test]
    fn a_front_end_reads_isl_loops_through_the_trait_alone() {
        let isl = Isl::new();
        for (domain, schedule, holds) in [
            (
                "[N] -> { S0[i, j] : 0 <= i < N and 0 <= j <= i and j mod 2 = 0 }",
                "[N] -> { S0[i, j] -> [i, j] }",
                (|i: i64, j: i64, _n: i64| j <= i && j % 2 == 0) as fn(i64, i64, i64) -> bool,
            ),
            (
                "[N] -> { S0[i, j] : 0 <= i < N and 0 <= j < N and (j < 3 or j >= N - 2) }",
                "[N] -> { S0[i, j] -> [j, i] }",
                |_i, j, n| j < 3 || j >= n - 2,
            ),
        ] {
            let ast = isl
                .ast("[N] -> { : N >= 0 }", domain, schedule, None)
                .unwrap();
            let operands = vec![OperandInfo {
                hint: "y".into(),
                values: ValueType::F64,
            }];
            let output = OutputMode::Dense {
                accumulate: true,
                zeroed_by_kernel: false,
            };
            let mut toy = Toy {
                function: Function::new(operands, 1, output),
                iterators: Vec::new(),
            };
            let stmts = read(&mut toy, &ast).unwrap();
            let column_major = schedule.contains("[j, i]");
            for n in [0, 1, 2, 5, 8] {
                let mut stores = Vec::new();
                run(&stmts, n, &mut HashMap::new(), &mut stores);
                let mut expected = Vec::new();
                for a in 0..n {
                    for b in 0..n {
                        let (i, j) = if column_major { (b, a) } else { (a, b) };
                        if holds(i, j, n) {
                            expected.push(i * 100 + j);
                        }
                    }
                }
                assert_eq!(stores, expected, "{domain} at N = {n}:\n{stmts:#?}");
            }
        }
    }
}
