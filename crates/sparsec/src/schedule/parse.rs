//! The text form of a schedule: transformation calls separated by `,` or `.`, e.g.
//! `split(i,i0,i1,32),order(i0,i1,j),parallelize(i0,CPUThread,NoRaces)`.
//!
//! `parallelize` takes an optional OpenMP schedule and chunk size after the race strategy
//! (`parallelize(i0,CPUThread,NoRaces,static,4)`; chunk 1 when only the schedule is given).
//! Without them the loop runs in `balanced` blocks: one contiguous block of about equal
//! work per thread. Unit, strategy and bound names are case-insensitive.
//!
//! TACO's spellings are accepted as well (its `-s` option and `docs/scheduling.md`):
//! `pos(i,ip,A)` with the tensor's name only, `bound(i,ib,100,MaxExact)` with the value
//! before the kind, `precompute(e,{i,j},{iw,jw})` with brace lists and the workspace name
//! left out, `parallelize(i,NotParallel,..)`, `mergeby(i,TwoFinger|Gallop)` and
//! `assemble(T,Append|Insert)`.

use miette::SourceSpan;

use super::transform::{AssembleStrategy, BoundKind, SplitBy, Transform};
use super::{Concrete, MergeStrategy, OmpSchedule, ParallelUnit, RaceStrategy, ScheduleError};

/// A parsed schedule: transformations applied left to right.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    pub transforms: Vec<Transform>,
}

/// A schedule string that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[diagnostic(
    code(sparsec::schedule::syntax),
    help("what it means and what to do: docs/troubleshooting.md, section `sparsec::schedule::syntax`")
)]
#[error("invalid schedule: {message}")]
pub struct ScheduleSyntaxError {
    pub message: String,
    #[source_code]
    pub text: String,
    #[label("here")]
    pub span: SourceSpan,
}

/// One argument of a call: a name, a number, an access `A(i,j)`, a list `(j,k)` or `{j,k}`, or
/// (first argument of `precompute`) an expression.
#[derive(Clone, Debug)]
enum Arg {
    Name(String),
    Number(usize),
    Access(String, Vec<String>),
    List(Vec<String>),
    Expr(String),
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Schedule {
    /// Parse the text form.
    ///
    /// ```
    /// use sparsec::schedule::Schedule;
    /// let s = Schedule::parse("split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)").unwrap();
    /// assert_eq!(s.transforms.len(), 2);
    /// assert!(Schedule::parse("split(i,i0,i1)").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Schedule, ScheduleSyntaxError> {
        let mut p = Parser { text, at: 0 };
        let mut transforms = Vec::new();
        p.skip_space();
        while p.at < text.len() {
            transforms.push(p.call()?);
            p.skip_space();
            if p.at < text.len() {
                p.expect_one_of(&[',', '.', ';'])?;
                p.skip_space();
            }
        }
        Ok(Schedule { transforms })
    }

    /// Apply every transformation in turn.
    pub fn apply(&self, concrete: &Concrete) -> Result<Concrete, ScheduleError> {
        self.transforms
            .iter()
            .try_fold(concrete.clone(), |c, t| c.apply(t))
    }
}

impl Parser<'_> {
    fn error(&self, start: usize, message: impl Into<String>) -> ScheduleSyntaxError {
        // At least the whole character at `start`, so that the span ends on a character
        // boundary (one byte past the end of the text at its end).
        let first = self.text[start..].chars().next().map_or(1, char::len_utf8);
        ScheduleSyntaxError {
            message: message.into(),
            text: self.text.to_string(),
            span: (start, self.at.saturating_sub(start).max(first)).into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn skip_space(&mut self) {
        // Whitespace is any Unicode whitespace, some of it several bytes long (U+0085).
        while let Some(c) = self.peek().filter(|c| c.is_whitespace()) {
            self.at += c.len_utf8();
        }
    }

    fn expect_one_of(&mut self, chars: &[char]) -> Result<char, ScheduleSyntaxError> {
        self.skip_space();
        match self.peek() {
            Some(c) if chars.contains(&c) => {
                self.at += c.len_utf8();
                Ok(c)
            }
            _ => {
                let want: Vec<String> = chars.iter().map(|c| format!("`{c}`")).collect();
                Err(self.error(self.at, format!("expected {}", want.join(" or "))))
            }
        }
    }

    fn word(&mut self) -> Result<String, ScheduleSyntaxError> {
        self.skip_space();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.at += 1;
        }
        if start == self.at {
            return Err(self.error(start, "expected a name or a number"));
        }
        Ok(self.text[start..self.at].to_string())
    }

    /// The text up to the next `,` or `)` outside parentheses.
    fn raw_expression(&mut self) -> Result<Arg, ScheduleSyntaxError> {
        self.skip_space();
        let start = self.at;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => break,
                ')' => depth -= 1,
                ',' if depth == 0 => break,
                _ => {}
            }
            self.at += c.len_utf8();
        }
        if start == self.at {
            return Err(self.error(start, "expected an expression"));
        }
        Ok(Arg::Expr(self.text[start..self.at].trim().to_string()))
    }

    /// Names separated by `,` up to `close`.
    fn list(&mut self, close: char) -> Result<Arg, ScheduleSyntaxError> {
        let mut names = Vec::new();
        loop {
            names.push(self.word()?);
            if self.expect_one_of(&[',', close])? == close {
                return Ok(Arg::List(names));
            }
        }
    }

    fn arg(&mut self) -> Result<Arg, ScheduleSyntaxError> {
        self.skip_space();
        // sparsec writes variable lists in parentheses, TACO in braces.
        for (open, close) in [('(', ')'), ('{', '}')] {
            if self.peek() == Some(open) {
                self.at += 1;
                return self.list(close);
            }
        }
        let start = self.at;
        let word = self.word()?;
        if word.chars().all(|c| c.is_ascii_digit()) {
            return word
                .parse()
                .map(Arg::Number)
                .map_err(|_| self.error(start, "number out of range"));
        }
        self.skip_space();
        if self.peek() != Some('(') {
            return Ok(Arg::Name(word));
        }
        self.at += 1;
        let mut indices = Vec::new();
        loop {
            indices.push(self.word()?);
            if self.expect_one_of(&[',', ')'])? == ')' {
                break;
            }
        }
        Ok(Arg::Access(word, indices))
    }

    fn call(&mut self) -> Result<Transform, ScheduleSyntaxError> {
        let start = self.at;
        let name = self.word()?;
        self.expect_one_of(&['('])?;
        let mut args = Vec::new();
        self.skip_space();
        if self.peek() == Some(')') {
            self.at += 1;
        } else {
            loop {
                let arg = if name == "precompute" && args.is_empty() {
                    self.raw_expression()?
                } else {
                    self.arg()?
                };
                args.push(arg);
                if self.expect_one_of(&[',', ')'])? == ')' {
                    break;
                }
            }
        }
        let call = Call {
            parser: self,
            start,
            name: &name,
            args: &args,
        };
        call.transform()
    }
}

struct Call<'p, 'a> {
    parser: &'p Parser<'a>,
    start: usize,
    name: &'p str,
    args: &'p [Arg],
}

impl Call<'_, '_> {
    fn fail(&self, message: String) -> ScheduleSyntaxError {
        self.parser.error(self.start, message)
    }

    fn arity(&self, min: usize, max: usize, usage: &str) -> Result<(), ScheduleSyntaxError> {
        if self.args.len() < min || self.args.len() > max {
            return Err(self.fail(format!(
                "`{}` takes {usage}, got {} arguments",
                self.name,
                self.args.len()
            )));
        }
        Ok(())
    }

    fn name_at(&self, n: usize) -> Result<String, ScheduleSyntaxError> {
        match &self.args[n] {
            Arg::Name(s) => Ok(s.clone()),
            other => Err(self.fail(format!(
                "argument {} of `{}` must be an index variable, not {other:?}",
                n + 1,
                self.name
            ))),
        }
    }

    /// A variable or a parenthesised list of them.
    fn names_at(&self, n: usize) -> Result<Vec<String>, ScheduleSyntaxError> {
        match &self.args[n] {
            Arg::List(names) => Ok(names.clone()),
            _ => Ok(vec![self.name_at(n)?]),
        }
    }

    fn number_at(&self, n: usize) -> Result<usize, ScheduleSyntaxError> {
        match &self.args[n] {
            Arg::Number(v) => Ok(*v),
            other => Err(self.fail(format!(
                "argument {} of `{}` must be a number, not {other:?}",
                n + 1,
                self.name
            ))),
        }
    }

    fn keyword<T: Copy>(
        &self,
        n: usize,
        what: &str,
        options: &[(&str, T)],
    ) -> Result<T, ScheduleSyntaxError> {
        let word = self.name_at(n)?;
        options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&word))
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|(k, _)| *k).collect();
                self.fail(format!(
                    "unknown {what} `{word}`; expected one of {}",
                    names.join(", ")
                ))
            })
    }

    fn race_strategy(&self, n: usize) -> Result<RaceStrategy, ScheduleSyntaxError> {
        self.keyword(
            n,
            "race strategy",
            &[
                ("NoRaces", RaceStrategy::NoRaces),
                ("IgnoreRaces", RaceStrategy::IgnoreRaces),
                ("Atomics", RaceStrategy::Atomics),
                ("Temporary", RaceStrategy::Temporary),
                ("ParallelReduction", RaceStrategy::ParallelReduction),
            ],
        )
    }

    fn transform(&self) -> Result<Transform, ScheduleSyntaxError> {
        match self.name {
            "reorder" if self.args.len() != 2 => {
                let names: Result<Vec<String>, _> =
                    (0..self.args.len()).map(|n| self.name_at(n)).collect();
                Ok(Transform::Order(names?))
            }
            "reorder" => Ok(Transform::Reorder(self.name_at(0)?, self.name_at(1)?)),
            "order" => {
                self.arity(1, usize::MAX, "a list of loops")?;
                let names: Result<Vec<String>, _> =
                    (0..self.args.len()).map(|n| self.name_at(n)).collect();
                Ok(Transform::Order(names?))
            }
            "split" | "divide" => {
                self.arity(4, 4, "(var, outer, inner, factor)")?;
                let (var, outer, inner) = (self.name_at(0)?, self.name_at(1)?, self.name_at(2)?);
                let amount = self.number_at(3)?;
                let by = if self.name == "split" {
                    SplitBy::Factor(amount)
                } else {
                    SplitBy::Parts(amount)
                };
                Ok(Transform::Split {
                    var,
                    outer,
                    inner,
                    by,
                })
            }
            "fuse" => {
                self.arity(3, 3, "(outer, inner, fused)")?;
                Ok(Transform::Fuse {
                    outer: self.name_at(0)?,
                    inner: self.name_at(1)?,
                    fused: self.name_at(2)?,
                })
            }
            "pos" => {
                self.arity(3, 3, "(var, pos, access or tensor)")?;
                let (tensor, indices) = match &self.args[2] {
                    Arg::Access(tensor, indices) => (tensor.clone(), Some(indices.clone())),
                    Arg::Name(tensor) => (tensor.clone(), None),
                    _ => {
                        return Err(self.fail(
                            "argument 3 of `pos` must be an access such as A(i,j) or a tensor \
                             name"
                                .into(),
                        ))
                    }
                };
                Ok(Transform::Pos {
                    var: self.name_at(0)?,
                    pos: self.name_at(1)?,
                    tensor,
                    indices,
                })
            }
            "coord" => {
                self.arity(2, 2, "(pos, coord)")?;
                Ok(Transform::Coord {
                    pos: self.name_at(0)?,
                    coord: self.name_at(1)?,
                })
            }
            "bound" => {
                self.arity(
                    4,
                    4,
                    "(var, bounded, kind, value) or (var, bounded, value, kind)",
                )?;
                // TACO writes the value before the kind, sparsec the kind first.
                let (kind_at, value_at) = match self.args[2] {
                    Arg::Number(_) => (3, 2),
                    _ => (2, 3),
                };
                Ok(Transform::Bound {
                    var: self.name_at(0)?,
                    bounded: self.name_at(1)?,
                    kind: self.keyword(
                        kind_at,
                        "bound kind",
                        &[
                            ("MinExact", BoundKind::MinExact),
                            ("MinConstraint", BoundKind::MinConstraint),
                            ("MaxExact", BoundKind::MaxExact),
                            ("MaxConstraint", BoundKind::MaxConstraint),
                        ],
                    )?,
                    value: self.number_at(value_at)?,
                })
            }
            "unroll" => {
                self.arity(2, 2, "(var, factor)")?;
                Ok(Transform::Unroll {
                    var: self.name_at(0)?,
                    factor: self.number_at(1)?,
                })
            }
            "parallelize" => {
                self.arity(
                    3,
                    5,
                    "(var, unit, races[, static|dynamic|guided|balanced[, chunk]])",
                )?;
                let units: Vec<(&str, Option<ParallelUnit>)> = [
                    ParallelUnit::CpuThread,
                    ParallelUnit::CpuVector,
                    ParallelUnit::GpuBlock,
                    ParallelUnit::GpuWarp,
                    ParallelUnit::GpuThread,
                ]
                .into_iter()
                .map(|u| (u.spelling(), Some(u)))
                .chain([("NotParallel", None)])
                .collect();
                let unit = self.keyword(1, "parallel unit", &units)?;
                let Some(unit) = unit else {
                    // TACO's unit for a serial loop: the race strategy is moot, but it is
                    // still checked so that a misspelt one is reported.
                    self.arity(3, 3, "(var, NotParallel, races)")?;
                    self.race_strategy(2)?;
                    return Ok(Transform::Serial {
                        var: self.name_at(0)?,
                    });
                };
                Ok(Transform::Parallelize {
                    var: self.name_at(0)?,
                    unit,
                    races: self.race_strategy(2)?,
                    schedule: if self.args.len() > 3 {
                        self.keyword(
                            3,
                            "OpenMP schedule",
                            &[
                                ("static", OmpSchedule::Static),
                                ("dynamic", OmpSchedule::Dynamic),
                                ("guided", OmpSchedule::Guided),
                                ("balanced", OmpSchedule::Balanced),
                            ],
                        )?
                    } else {
                        OmpSchedule::Balanced
                    },
                    chunk: if self.args.len() > 4 {
                        self.number_at(4)?
                    } else {
                        1
                    },
                })
            }
            "precompute" => {
                self.arity(
                    3,
                    4,
                    "(expression, var or (vars), producer var or (vars)[, workspace])",
                )?;
                let Arg::Expr(expr) = &self.args[0] else {
                    unreachable!("the first argument of precompute is read as an expression")
                };
                Ok(Transform::Precompute {
                    expr: expr.clone(),
                    vars: self.names_at(1)?,
                    producer_vars: self.names_at(2)?,
                    workspace: if self.args.len() > 3 {
                        Some(self.name_at(3)?)
                    } else {
                        None
                    },
                })
            }
            "mergeby" => {
                self.arity(2, 2, "(var, TwoFinger|Gallop)")?;
                Ok(Transform::MergeBy {
                    var: self.name_at(0)?,
                    strategy: self.keyword(
                        1,
                        "merge strategy",
                        &[
                            ("TwoFinger", MergeStrategy::TwoFinger),
                            ("Gallop", MergeStrategy::Gallop),
                        ],
                    )?,
                })
            }
            "assemble" => {
                self.arity(2, 2, "(tensor, Append|Insert)")?;
                Ok(Transform::Assemble {
                    tensor: self.name_at(0)?,
                    strategy: self.keyword(
                        1,
                        "assemble strategy",
                        &[
                            ("Append", AssembleStrategy::Append),
                            ("Insert", AssembleStrategy::Insert),
                        ],
                    )?,
                })
            }
            other => Err(self.fail(format!(
                "unknown transformation `{other}`; expected reorder, order, split, divide, fuse, \
                 pos, coord, bound, unroll, precompute, parallelize, mergeby or assemble"
            ))),
        }
    }
}
