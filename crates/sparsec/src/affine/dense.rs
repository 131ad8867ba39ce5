//! The program run as written, on dense arrays: the reference the analysis and the
//! specialised code are checked against. It records which statement instances compute a
//! non-zero value, so the regions of interest can be compared with the true ones by brute
//! force on small inputs.

use std::collections::BTreeMap;

use super::model::Model;
use super::parse::{Access, BinaryOp, Node, Program, Value};
use super::AffineError;
use crate::ir::MathFn;

/// The most elements the reference run allocates over all arrays.
const MAX_ELEMENTS: u64 = 1 << 28;

/// Dense arrays by name, row-major over their extents.
pub type Arrays = BTreeMap<String, Vec<f64>>;

/// What a dense run computed.
#[derive(Debug)]
pub struct DenseRun {
    /// Every array's final contents.
    pub arrays: Arrays,
    /// Per statement, the iterations (counter values) that computed a non-zero value.
    pub nonzero: Vec<Vec<Vec<i64>>>,
}

/// Every array's extents under `params`.
pub fn extents(
    program: &Program,
    params: &BTreeMap<String, i64>,
) -> Result<BTreeMap<String, Vec<usize>>, AffineError> {
    let mut out = BTreeMap::new();
    let mut total: u64 = 0;
    for array in &program.arrays {
        let mut dims = Vec::new();
        for e in &array.extents {
            let v = e.eval(&|n| params.get(n).copied()).ok_or_else(|| {
                AffineError::new(
                    format!(
                        "the extents of `{}` need every parameter's value",
                        array.name
                    ),
                    array.span,
                )
            })?;
            if v < 0 {
                return Err(AffineError::new(
                    format!("an extent of `{}` is negative ({v})", array.name),
                    array.span,
                ));
            }
            dims.push(v as usize);
        }
        let size = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64));
        total = size.and_then(|s| total.checked_add(s)).filter(|t| *t <= MAX_ELEMENTS).ok_or_else(|| {
            AffineError::general(format!("the arrays hold more than {MAX_ELEMENTS} elements in all: too large for a dense run"))
        })?;
        out.insert(array.name.clone(), dims);
    }
    Ok(out)
}

/// Run the program with the parameters `params` on the initial contents `inputs` (an
/// array not given starts as zeros).
pub fn run(
    model: &Model,
    params: &BTreeMap<String, i64>,
    inputs: &Arrays,
) -> Result<DenseRun, AffineError> {
    let shapes = extents(&model.program, params)?;
    let mut arrays = Arrays::new();
    for (name, dims) in &shapes {
        let size: usize = dims.iter().product();
        let data = match inputs.get(name) {
            Some(given) if given.len() == size => given.clone(),
            Some(given) => {
                return Err(AffineError::general(format!(
                    "`{name}` is given {} values; its extents hold {size}",
                    given.len()
                )))
            }
            None => vec![0.0; size],
        };
        arrays.insert(name.clone(), data);
    }
    let mut state = State {
        params,
        shapes: &shapes,
        arrays,
        counters: Vec::new(),
        next: 0,
        nonzero: vec![Vec::new(); model.statements.len()],
    };
    state.nodes(&model.program.body)?;
    Ok(DenseRun {
        arrays: state.arrays,
        nonzero: state.nonzero,
    })
}

/// The value of `name`: the innermost loop counter of that name, else the parameter.
fn value_of(params: &BTreeMap<String, i64>, counters: &[(String, i64)], name: &str) -> Option<i64> {
    counters
        .iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .or_else(|| params.get(name).copied())
}

struct State<'a> {
    params: &'a BTreeMap<String, i64>,
    shapes: &'a BTreeMap<String, Vec<usize>>,
    arrays: Arrays,
    counters: Vec<(String, i64)>,
    /// The statement number of the next assignment met in program order.
    next: usize,
    nonzero: Vec<Vec<Vec<i64>>>,
}

impl State<'_> {
    fn nodes(&mut self, nodes: &[Node]) -> Result<(), AffineError> {
        for node in nodes {
            self.node(node)?;
        }
        Ok(())
    }

    /// Statements are numbered in program order, the order the model lists them in; a
    /// subtree not run still takes its numbers.
    fn count(node: &Node) -> usize {
        match node {
            Node::Loop { body, .. } => body.iter().map(State::count).sum(),
            Node::If {
                then, otherwise, ..
            } => then.iter().chain(otherwise).map(State::count).sum(),
            Node::Assign { .. } => 1,
        }
    }

    fn node(&mut self, node: &Node) -> Result<(), AffineError> {
        let unbound =
            || AffineError::general("a bound or condition names a parameter without a value");
        match node {
            Node::Loop {
                counter,
                lower,
                upper,
                step,
                body,
            } => {
                let lo = lower
                    .eval(&|n| value_of(self.params, &self.counters, n))
                    .ok_or_else(unbound)?;
                let hi = upper
                    .eval(&|n| value_of(self.params, &self.counters, n))
                    .ok_or_else(unbound)?;
                let first = self.next;
                let width = body.iter().map(State::count).sum::<usize>();
                let mut i = lo;
                while i <= hi {
                    self.next = first;
                    self.counters.push((counter.clone(), i));
                    let result = self.nodes(body);
                    self.counters.pop();
                    result?;
                    i += step;
                }
                self.next = first + width;
            }
            Node::If {
                condition,
                then,
                otherwise,
            } => {
                let holds = condition
                    .holds(&|n| value_of(self.params, &self.counters, n))
                    .ok_or_else(unbound)?;
                let first = self.next;
                if holds {
                    self.nodes(then)?;
                } else {
                    self.next = first + then.iter().map(State::count).sum::<usize>();
                    self.nodes(otherwise)?;
                }
                self.next = first + State::count(node);
            }
            Node::Assign { target, value, .. } => {
                let v = self.value(value)?;
                let at = self.offset(target)?;
                self.arrays.get_mut(&target.array).expect("allocated")[at] = v;
                if v != 0.0 {
                    let counters = self.counters.iter().map(|(_, c)| *c).collect();
                    self.nonzero[self.next].push(counters);
                }
                self.next += 1;
            }
        }
        Ok(())
    }

    fn offset(&self, access: &Access) -> Result<usize, AffineError> {
        let dims = &self.shapes[&access.array];
        let mut at = 0usize;
        for (e, &d) in access.index.iter().zip(dims) {
            let i = e
                .eval(&|n| value_of(self.params, &self.counters, n))
                .filter(|&i| i >= 0 && (i as usize) < d)
                .ok_or_else(|| {
                    AffineError::new("this access falls outside its array", access.span)
                })?;
            at = at * d + i as usize;
        }
        Ok(at)
    }

    fn value(&self, value: &Value) -> Result<f64, AffineError> {
        Ok(match value {
            Value::Number(x) => *x,
            Value::Read(access) => self.arrays[&access.array][self.offset(access)?],
            Value::Neg(v) => -self.value(v)?,
            Value::Binary(op, a, b) => {
                let (a, b) = (self.value(a)?, self.value(b)?);
                match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::Div => a / b,
                }
            }
            Value::Call(name, args) => {
                let values = args
                    .iter()
                    .map(|a| self.value(a))
                    .collect::<Result<Vec<f64>, _>>()?;
                MathFn::from_c_name(name)
                    .expect("the parser admits the IR's functions only")
                    .eval(&values)
            }
        })
    }
}

/// How many times each statement runs in the dense program under `params`, counting
/// without running: a loop whose body holds only assignments counts them by its trip
/// count. None if counting would take over `steps` loop iterations.
pub fn iterations(
    program: &Program,
    params: &BTreeMap<String, i64>,
    steps: u64,
) -> Option<Vec<u64>> {
    struct Count<'a> {
        params: &'a BTreeMap<String, i64>,
        counters: Vec<(String, i64)>,
        out: Vec<u64>,
        next: usize,
        steps: u64,
    }
    impl Count<'_> {
        fn nodes(&mut self, nodes: &[Node], times: u64) -> Option<()> {
            for n in nodes {
                self.node(n, times)?;
            }
            Some(())
        }
        fn node(&mut self, node: &Node, times: u64) -> Option<()> {
            match node {
                Node::Loop {
                    counter,
                    lower,
                    upper,
                    step,
                    body,
                } => {
                    let lo = lower.eval(&|n| value_of(self.params, &self.counters, n))?;
                    let hi = upper.eval(&|n| value_of(self.params, &self.counters, n))?;
                    let trips = if hi < lo {
                        0
                    } else {
                        ((hi - lo) / step + 1) as u64
                    };
                    let first = self.next;
                    let width: usize = body.iter().map(State::count).sum();
                    if body.iter().all(|b| matches!(b, Node::Assign { .. })) {
                        self.nodes(body, times.checked_mul(trips)?)?;
                    } else {
                        let mut i = lo;
                        while i <= hi {
                            self.steps = self.steps.checked_sub(1)?;
                            self.next = first;
                            self.counters.push((counter.clone(), i));
                            let done = self.nodes(body, times);
                            self.counters.pop();
                            done?;
                            i += step;
                        }
                    }
                    self.next = first + width;
                }
                Node::If {
                    condition,
                    then,
                    otherwise,
                } => {
                    let holds = condition.holds(&|n| value_of(self.params, &self.counters, n))?;
                    let first = self.next;
                    if holds {
                        self.nodes(then, times)?;
                    } else {
                        self.next = first + then.iter().map(State::count).sum::<usize>();
                        self.nodes(otherwise, times)?;
                    }
                    self.next = first + State::count(node);
                }
                Node::Assign { .. } => {
                    self.out[self.next] = self.out[self.next].checked_add(times)?;
                    self.next += 1;
                }
            }
            Some(())
        }
    }
    let n: usize = program.body.iter().map(State::count).sum();
    let mut count = Count {
        params,
        counters: Vec::new(),
        out: vec![0; n],
        next: 0,
        steps,
    };
    count.nodes(&program.body, 1)?;
    Some(count.out)
}
