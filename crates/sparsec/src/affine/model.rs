//! The polyhedral model of an affine program: every assignment becomes a statement with
//! its iteration domain (the conditions of the loops and branches around it), its place
//! in the program order as a `2d+1` schedule, the element it writes and what it computes.
//! Everything isl sees is written here, in isl's text syntax.

use super::parse::{Access, Affine, ArrayDecl, Condition, Constraint, Node, Program, Value};
use super::{isl_error, AffineError, Span};
use crate::polyhedral::isl::Isl;

/// One assignment and the iterations that run it.
#[derive(Clone, Debug)]
pub struct Statement {
    /// Its isl name, `S1`, `S2`, ... in program order.
    pub name: String,
    /// The counters of the loops around it, outermost first.
    pub counters: Vec<String>,
    /// The conditions on the counters and parameters under which it runs.
    pub domain: Condition,
    /// Its `2d+1` schedule: positions among siblings interleaved with the counters.
    pub schedule: Vec<Affine>,
    pub target: Access,
    pub value: Value,
    pub span: Span,
}

/// The statements of a program, with what isl needs to reason about them.
#[derive(Clone, Debug)]
pub struct Model {
    pub program: Program,
    pub statements: Vec<Statement>,
    /// The length every schedule is padded to.
    pub schedule_len: usize,
}

impl Model {
    /// Build the model of `program`, checking that every access stays inside its
    /// array's extents for every value of the parameters that keeps the extents
    /// non-negative.
    pub fn new(program: Program) -> Result<Model, AffineError> {
        let mut statements = Vec::new();
        let mut walk = Walk {
            counters: Vec::new(),
            condition: Condition(vec![Vec::new()]),
            schedule: Vec::new(),
            out: &mut statements,
            taken: program.arrays.iter().map(|a| a.name.clone()).collect(),
        };
        walk.nodes(&program.body)?;
        let schedule_len = statements
            .iter()
            .map(|s| s.schedule.len())
            .max()
            .unwrap_or(1);
        let model = Model {
            program,
            statements,
            schedule_len,
        };
        model.check_extents()?;
        Ok(model)
    }

    /// `[N, M] -> ` for isl texts.
    pub fn params_prefix(&self) -> String {
        format!("[{}] -> ", self.program.params.join(", "))
    }

    /// `S1[i, j, k]`.
    pub fn tuple(&self, s: usize) -> String {
        let st = &self.statements[s];
        format!("{}[{}]", st.name, st.counters.join(", "))
    }

    /// The iteration domain of statement `s`, named after it (or after `tag`).
    pub fn domain_text(&self, s: usize, tag: Option<&str>) -> String {
        let st = &self.statements[s];
        let name = tag.unwrap_or(&st.name);
        format!(
            "{}{{ {name}[{}] : {} }}",
            self.params_prefix(),
            st.counters.join(", "),
            st.domain
        )
    }

    /// Every statement's domain, as one union.
    pub fn domains_text(&self) -> String {
        let pieces: Vec<String> = (0..self.statements.len())
            .map(|s| {
                let st = &self.statements[s];
                format!("{} : {}", self.tuple(s), st.domain)
            })
            .collect();
        format!("{}{{ {} }}", self.params_prefix(), pieces.join("; "))
    }

    /// `S1[i, j] -> [0, i, 0, j, 1]` (padded with zeros) for statement `s` under `tag`.
    pub fn schedule_piece(&self, s: usize, tag: Option<&str>) -> String {
        let st = &self.statements[s];
        let mut times: Vec<String> = st.schedule.iter().map(|a| a.to_string()).collect();
        times.resize(self.schedule_len, "0".to_string());
        format!(
            "{}[{}] -> [{}]",
            tag.unwrap_or(&st.name),
            st.counters.join(", "),
            times.join(", ")
        )
    }

    /// The program order of every statement, as one union map into a common time space.
    pub fn schedule_text(&self) -> String {
        let pieces: Vec<String> = (0..self.statements.len())
            .map(|s| self.schedule_piece(s, None))
            .collect();
        format!("{}{{ {} }}", self.params_prefix(), pieces.join("; "))
    }

    /// `S1[i, j] -> A[i, j + 1] : <domain>` for an access of statement `s` under `tag`.
    pub fn access_piece(&self, s: usize, access: &Access, tag: Option<&str>) -> String {
        let st = &self.statements[s];
        let index: Vec<String> = access.index.iter().map(|a| a.to_string()).collect();
        format!(
            "{}[{}] -> {}[{}] : ({})",
            tag.unwrap_or(&st.name),
            st.counters.join(", "),
            access.array,
            index.join(", "),
            st.domain
        )
    }

    /// `A[a0, a1]` and the condition `0 <= a0 < N and 0 <= a1 < M` on its cells.
    pub fn cells(&self, array: &ArrayDecl) -> (String, String) {
        let names: Vec<String> = (0..array.extents.len()).map(|d| format!("a{d}")).collect();
        let bounds: Vec<String> = array
            .extents
            .iter()
            .zip(&names)
            .map(|(e, n)| format!("0 <= {n} < {e}"))
            .collect();
        let condition = if bounds.is_empty() {
            "true".to_string()
        } else {
            bounds.join(" and ")
        };
        (format!("{}[{}]", array.name, names.join(", ")), condition)
    }

    /// The cells of `array` inside its extents.
    pub fn extents_text(&self, array: &ArrayDecl) -> String {
        let (tuple, condition) = self.cells(array);
        format!("{}{{ {tuple} : {condition} }}", self.params_prefix())
    }

    /// Every access lands inside its array for all parameter values with non-negative
    /// extents; otherwise the dense program itself would read or write out of bounds.
    fn check_extents(&self) -> Result<(), AffineError> {
        let isl = Isl::new();
        for (s, st) in self.statements.iter().enumerate() {
            let mut accesses = vec![&st.target];
            reads(&st.value, &mut accesses);
            for access in accesses {
                let array = self
                    .program
                    .array(&access.array)
                    .expect("the parser checked declarations");
                let nonneg: Vec<String> =
                    array.extents.iter().map(|e| format!("{e} >= 0")).collect();
                let context = if nonneg.is_empty() {
                    String::new()
                } else {
                    format!(" and {}", nonneg.join(" and "))
                };
                let text = format!(
                    "{}{{ {}{context} }}",
                    self.params_prefix(),
                    self.access_piece(s, access, None)
                );
                let cells = isl
                    .union_map(&text)
                    .and_then(|m| m.range())
                    .map_err(isl_error("checking an access"))?;
                let inside = isl
                    .union_set(&self.extents_text(array))
                    .map_err(isl_error("checking an access"))?;
                let outside = cells.subtract(&inside).and_then(|d| d.is_empty());
                if !outside.map_err(isl_error("checking an access"))? {
                    return Err(AffineError::new(
                        format!(
                            "this access may fall outside `{}`'s extents for some iteration",
                            access.array
                        ),
                        access.span,
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The reads of a value, left to right.
pub fn reads<'a>(value: &'a Value, out: &mut Vec<&'a Access>) {
    match value {
        Value::Number(_) => {}
        Value::Read(a) => out.push(a),
        Value::Neg(v) => reads(v, out),
        Value::Binary(_, a, b) => {
            reads(a, out);
            reads(b, out);
        }
        Value::Call(_, args) => args.iter().for_each(|a| reads(a, out)),
    }
}

struct Walk<'a> {
    counters: Vec<String>,
    condition: Condition,
    /// The schedule prefix: sibling positions interleaved with counters.
    schedule: Vec<Affine>,
    out: &'a mut Vec<Statement>,
    taken: Vec<String>,
}

impl Walk<'_> {
    fn nodes(&mut self, nodes: &[Node]) -> Result<(), AffineError> {
        let mut position = 0;
        for node in nodes {
            self.node(node, &mut position)?;
        }
        Ok(())
    }

    /// A node at sibling `position`; an `if` passes its position on, so that the
    /// statements of both branches and of a block are ordered as one sequence.
    fn node(&mut self, node: &Node, position: &mut i64) -> Result<(), AffineError> {
        match node {
            Node::Loop {
                counter,
                lower,
                upper,
                step,
                body,
            } => {
                let outer = self.condition.clone();
                let mut bounds = vec![
                    Constraint::at_least_zero(
                        Affine::var(counter)
                            .add_scaled(lower, -1)
                            .ok_or_else(overflow)?,
                    ),
                    Constraint::at_least_zero(
                        upper
                            .add_scaled(&Affine::var(counter), -1)
                            .ok_or_else(overflow)?,
                    ),
                ];
                if *step > 1 {
                    bounds.push(Constraint {
                        expr: Affine::var(counter)
                            .add_scaled(lower, -1)
                            .ok_or_else(overflow)?,
                        equality: true,
                        modulus: Some(*step),
                    });
                }
                self.condition = self.condition.and(&Condition(vec![bounds]));
                self.schedule.push(Affine::constant(*position));
                self.schedule.push(Affine::var(counter));
                self.counters.push(counter.clone());
                self.nodes(body)?;
                self.counters.pop();
                self.schedule.truncate(self.schedule.len() - 2);
                self.condition = outer;
                *position += 1;
            }
            Node::If {
                condition,
                then,
                otherwise,
            } => {
                let outer = self.condition.clone();
                self.condition = outer.and(condition);
                for n in then {
                    self.node(n, position)?;
                }
                if !otherwise.is_empty() {
                    let negated = condition.negated().ok_or_else(overflow)?;
                    self.condition = outer.and(&negated);
                    for n in otherwise {
                        self.node(n, position)?;
                    }
                }
                self.condition = outer;
            }
            Node::Assign {
                target,
                value,
                span,
            } => {
                let mut schedule = self.schedule.clone();
                schedule.push(Affine::constant(*position));
                let mut n = self.out.len() + 1;
                let name = loop {
                    let candidate = format!("S{n}");
                    if !self.taken.contains(&candidate) {
                        break candidate;
                    }
                    n += 1000;
                };
                self.taken.push(name.clone());
                self.out.push(Statement {
                    name,
                    counters: self.counters.clone(),
                    domain: self.condition.clone(),
                    schedule,
                    target: target.clone(),
                    value: value.clone(),
                    span: *span,
                });
                *position += 1;
            }
        }
        Ok(())
    }
}

fn overflow() -> AffineError {
    AffineError::general("a loop bound or condition overflows 64-bit integers")
}
