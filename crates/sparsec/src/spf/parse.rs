//! Parsing the IEGenLib-style set and relation syntax and the computation text format
//! (grammar in `docs/spf.md`), every error pointing at the offending span.

use super::set::{Affine, Constraint, Map, Relation0, Set, Term};
use super::SpfError;

/// The largest integer literal, coefficient or constant a program may write: sums of as
/// many of them as a program can hold stay far from `i64` overflow.
const MAX_CONSTANT: i64 = 1 << 31;

/// Byte range in the source.
pub type Span = (usize, usize);

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    /// Punctuation and operators, by their spelling.
    Punct(&'static str),
    End,
}

const PUNCTS: [&str; 24] = [
    "->", "<=", ">=", "==", "&&", "+=", "-=", "*=", "/=", "{", "}", "[", "]", "(", ")", ",", ":",
    ";", "<", ">", "=", "+", "-", "*",
];

fn lex(src: &str) -> Result<Vec<(Tok, Span)>, SpfError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), (start, i)));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let mut float = false;
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                float = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let text = &src[start..i];
            let tok = if float {
                Tok::Float(text.parse().expect("digits '.' digits is a float"))
            } else {
                Tok::Int(
                    text.parse()
                        .ok()
                        .filter(|n: &i64| *n <= MAX_CONSTANT)
                        .ok_or_else(|| {
                            SpfError::new(
                                format!("integer `{text}` is beyond {MAX_CONSTANT}"),
                                (start, i),
                            )
                        })?,
                )
            };
            out.push((tok, (start, i)));
        } else if c == b'.' {
            out.push((Tok::Punct("."), (i, i + 1)));
            i += 1;
        } else if c == b'/' {
            let two = bytes.get(i + 1) == Some(&b'=');
            let len = 1 + usize::from(two);
            out.push((Tok::Punct(if two { "/=" } else { "/" }), (i, i + len)));
            i += len;
        } else if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            out.push((Tok::Punct(p), (i, i + p.len())));
            i += p.len();
        } else {
            let ch = src[i..].chars().next().expect("in bounds");
            return Err(SpfError::new(
                format!("unexpected character `{ch}`"),
                (i, i + ch.len_utf8()),
            ));
        }
    }
    out.push((Tok::End, (src.len(), src.len())));
    Ok(out)
}

/// Names a set may use besides its tuple variables.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    /// Any other name is a symbolic constant, any applied name an uninterpreted function.
    Open,
    /// Only these symbols and functions are bound.
    Bound {
        symbols: &'a [String],
        ufs: &'a [String],
    },
}

/// The format of a tensor a computation reads or writes, and its dimensions.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDecl {
    pub name: String,
    /// Each dimension: a symbol the file's size binds (or checks), or a literal.
    pub dims: Vec<Dim>,
    /// Format name as [`crate::format::Format::parse`] reads it: an input's, or the output's
    /// (`output B[N, M] : csr;`, assembled from the entries the statements add); `dense`
    /// otherwise.
    pub format: String,
    /// `output F[N, N] : pattern(A);`: the output has input `A`'s stored entries (its
    /// format and structure), and its data space is their values by position.
    pub pattern: Option<String>,
    pub span: Span,
}

/// One dimension of a declared tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum Dim {
    Sym(String),
    Int(i64),
}

/// Which index array of a level a UF reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UfArray {
    /// `pos`: segment bounds.
    Pos,
    /// `crd`: coordinates.
    Crd,
}

/// `uf NAME = TENSOR.pos(LEVEL)` / `.crd(LEVEL)`.
#[derive(Clone, Debug, PartialEq)]
pub struct UfDecl {
    pub name: String,
    pub tensor: String,
    pub level: usize,
    pub array: UfArray,
    pub span: Span,
}

/// `data NAME = TENSOR.vals`: a one-dimensional data space over a tensor's values.
#[derive(Clone, Debug, PartialEq)]
pub struct DataDecl {
    pub name: String,
    pub tensor: String,
    pub span: Span,
}

/// An access `D(e1, ..., en)` to a data space, indices affine in the iteration variables.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub space: String,
    pub index: Vec<Affine>,
    pub span: Span,
}

/// A statement body's right-hand side.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyExpr {
    Num(f64),
    Access(Access),
    Neg(Box<BodyExpr>),
    /// `+`, `-`, `*` or `/`.
    Bin(char, Box<BodyExpr>, Box<BodyExpr>),
}

/// A statement: it runs `target op= value` at every tuple of `domain`, in the order of
/// the tuples `schedule` maps them to.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub name: String,
    pub domain: Set,
    pub schedule: Map,
    pub target: Access,
    /// `None` for `=`, else the operator of `+=`, `-=`, `*=`, `/=`.
    pub update: Option<char>,
    pub value: BodyExpr,
    pub span: Span,
}

/// A parsed computation.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub inputs: Vec<TensorDecl>,
    pub output: Option<TensorDecl>,
    /// Scratch data spaces (`temp t[N];`), zero at the start.
    pub temps: Vec<TensorDecl>,
    pub ufs: Vec<UfDecl>,
    pub data: Vec<DataDecl>,
    pub statements: Vec<Statement>,
    /// `parallel;`: run the outermost loop in parallel (checked against dependences).
    pub parallel: Option<Span>,
    /// `wavefront;`: run the outermost loop by level sets an inspector computes.
    pub wavefront: Option<Span>,
    /// `transform ...;`, in order: each is composed after the schedules it names.
    pub transforms: Vec<Transform>,
    /// `param T;`: symbols given a value at run time rather than by a tensor's size.
    pub params: Vec<(String, Span)>,
}

/// `transform S1, S2 {[...] -> [...]};` (or without names: every statement): a relation
/// from execution tuples to new execution tuples, composed after the statements'
/// schedules (interchange, shift, skew, reversal, fusion by equal constants). Its
/// legality is checked against the dependences of the original schedules.
#[derive(Clone, Debug, PartialEq)]
pub struct Transform {
    /// The statements it applies to (all when empty).
    pub statements: Vec<String>,
    pub map: Map,
    pub span: Span,
}

impl Program {
    /// Symbolic constants: the `param`s, then the others in order of first binding by a
    /// dimension.
    pub fn symbols(&self) -> Vec<String> {
        let mut out: Vec<String> = self.params.iter().map(|(p, _)| p.clone()).collect();
        for d in self.inputs.iter().chain(&self.output).chain(&self.temps) {
            for dim in &d.dims {
                if let Dim::Sym(s) = dim {
                    if !out.contains(s) {
                        out.push(s.clone());
                    }
                }
            }
        }
        out
    }
}

struct Parser {
    toks: Vec<(Tok, Span)>,
    at: usize,
}

/// Parse a set `{[i,j] : constraints}`; every name other than the tuple's is a symbol, and
/// every applied name an uninterpreted function.
pub fn parse_set(src: &str) -> Result<Set, SpfError> {
    let mut p = Parser::new(src)?;
    let set = p.set(Scope::Open)?;
    p.expect_end()?;
    Ok(set)
}

/// Parse a relation `{[i,j] -> [j,i] : constraints}` whose outputs are affine in the
/// inputs.
pub fn parse_map(src: &str) -> Result<Map, SpfError> {
    let mut p = Parser::new(src)?;
    let map = p.map(Scope::Open)?;
    p.expect_end()?;
    Ok(map)
}

/// Parse a computation (see `docs/spf.md`).
pub fn parse_program(src: &str) -> Result<Program, SpfError> {
    let mut p = Parser::new(src)?;
    let mut prog = Program {
        inputs: Vec::new(),
        output: None,
        temps: Vec::new(),
        ufs: Vec::new(),
        data: Vec::new(),
        statements: Vec::new(),
        parallel: None,
        wavefront: None,
        transforms: Vec::new(),
        params: Vec::new(),
    };
    loop {
        let (tok, span) = p.peek();
        let Tok::Ident(word) = tok else {
            if tok == Tok::End {
                break;
            }
            return Err(p.unexpected("a declaration or `stmt`"));
        };
        p.at += 1;
        match word.as_str() {
            "input" | "output" | "temp" => {
                let decl = p.tensor_decl(&word, span)?;
                if prog.declared(&decl.name) {
                    return Err(SpfError::new(
                        format!("`{}` is declared twice", decl.name),
                        decl.span,
                    ));
                }
                if let Some(source) = &decl.pattern {
                    let same = prog.inputs.iter().find(|t| t.name == *source);
                    match same {
                        None => {
                            return Err(SpfError::new(
                                format!("`{source}` is not an input declared before the output"),
                                decl.span,
                            ))
                        }
                        Some(t) if t.dims != decl.dims => {
                            return Err(SpfError::new(
                                format!("an output in `{source}`'s pattern has its dimensions"),
                                decl.span,
                            ))
                        }
                        Some(_) => {}
                    }
                }
                match word.as_str() {
                    "input" => prog.inputs.push(decl),
                    "temp" => prog.temps.push(decl),
                    _ if prog.output.is_some() => {
                        return Err(SpfError::new(
                            "a computation has one output".to_string(),
                            decl.span,
                        ))
                    }
                    _ => prog.output = Some(decl),
                }
            }
            "uf" => {
                let name = p.ident("a function name")?;
                p.punct("=")?;
                let (tensor, tspan) = p.ident_spanned("a tensor name")?;
                p.punct(".")?;
                let (kind, kspan) = p.ident_spanned("`pos` or `crd`")?;
                let array = match kind.as_str() {
                    "pos" => UfArray::Pos,
                    "crd" => UfArray::Crd,
                    _ => {
                        return Err(SpfError::new(
                            format!("`{kind}` is not an index array: use `pos` or `crd`"),
                            kspan,
                        ))
                    }
                };
                p.punct("(")?;
                let (level, lspan) = p.int()?;
                p.punct(")")?;
                let end = p.punct(";")?;
                if !prog.inputs.iter().any(|t| t.name == tensor) {
                    return Err(SpfError::new(
                        format!("`{tensor}` is not an input tensor"),
                        tspan,
                    ));
                }
                let level = usize::try_from(level)
                    .ok()
                    .filter(|l| *l >= 1)
                    .ok_or_else(|| SpfError::new("levels are numbered from 1".into(), lspan))?;
                if prog.declared(&name) || prog.ufs.iter().any(|u| u.name == name) {
                    return Err(SpfError::new(format!("`{name}` is declared twice"), span));
                }
                prog.ufs.push(UfDecl {
                    name,
                    tensor,
                    level,
                    array,
                    span: (span.0, end.1),
                });
            }
            "data" => {
                let name = p.ident("a data space name")?;
                p.punct("=")?;
                let (tensor, tspan) = p.ident_spanned("a tensor name")?;
                p.punct(".")?;
                let (vals, vspan) = p.ident_spanned("`vals`")?;
                if vals != "vals" {
                    return Err(SpfError::new("expected `vals`".into(), vspan));
                }
                let end = p.punct(";")?;
                if !prog.inputs.iter().any(|t| t.name == tensor) {
                    return Err(SpfError::new(
                        format!("`{tensor}` is not an input tensor"),
                        tspan,
                    ));
                }
                if prog.declared(&name) {
                    return Err(SpfError::new(format!("`{name}` is declared twice"), span));
                }
                prog.data.push(DataDecl {
                    name,
                    tensor,
                    span: (span.0, end.1),
                });
            }
            "parallel" => prog.parallel = Some((span.0, p.punct(";")?.1)),
            "wavefront" => prog.wavefront = Some((span.0, p.punct(";")?.1)),
            "stmt" => {
                let stmt = p.statement(&prog, span)?;
                if prog.statements.iter().any(|s| s.name == stmt.name) {
                    return Err(SpfError::new(
                        format!("statement `{}` is declared twice", stmt.name),
                        stmt.span,
                    ));
                }
                prog.statements.push(stmt);
            }
            "param" => {
                let (name, nspan) = p.ident_spanned("a parameter name")?;
                p.punct(";")?;
                if prog.symbols().contains(&name) || prog.declared(&name) {
                    return Err(SpfError::new(format!("`{name}` is declared twice"), nspan));
                }
                prog.params.push((name, nspan));
            }
            "transform" => {
                let transform = p.transform(&prog, span)?;
                prog.transforms.push(transform);
            }
            _ => {
                return Err(SpfError::new(
                    format!(
                        "unknown declaration `{word}`: expected input, output, temp, uf, \
                         data, param, parallel, wavefront, stmt or transform"
                    ),
                    span,
                ))
            }
        }
    }
    Ok(prog)
}

impl Program {
    fn declared(&self, name: &str) -> bool {
        self.inputs
            .iter()
            .chain(&self.output)
            .chain(&self.temps)
            .any(|t| t.name == name)
            || self.data.iter().any(|d| d.name == name)
    }
}

impl Parser {
    fn new(src: &str) -> Result<Parser, SpfError> {
        Ok(Parser {
            toks: lex(src)?,
            at: 0,
        })
    }

    fn peek(&self) -> (Tok, Span) {
        self.toks[self.at].clone()
    }

    fn unexpected(&self, expected: &str) -> SpfError {
        let (tok, span) = self.peek();
        let found = match tok {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(f) => format!("`{f}`"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::End => "the end of the input".into(),
        };
        SpfError::new(format!("expected {expected}, found {found}"), span)
    }

    fn expect_end(&self) -> Result<(), SpfError> {
        match self.peek().0 {
            Tok::End => Ok(()),
            _ => Err(self.unexpected("the end of the input")),
        }
    }

    fn eat(&mut self, p: &str) -> Option<Span> {
        match self.peek() {
            (Tok::Punct(q), span) if q == p => {
                self.at += 1;
                Some(span)
            }
            _ => None,
        }
    }

    fn punct(&mut self, p: &str) -> Result<Span, SpfError> {
        self.eat(p)
            .ok_or_else(|| self.unexpected(&format!("`{p}`")))
    }

    fn ident_spanned(&mut self, what: &str) -> Result<(String, Span), SpfError> {
        match self.peek() {
            (Tok::Ident(s), span) => {
                self.at += 1;
                Ok((s, span))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn ident(&mut self, what: &str) -> Result<String, SpfError> {
        Ok(self.ident_spanned(what)?.0)
    }

    fn keyword(&mut self, word: &str) -> Result<(), SpfError> {
        match self.peek().0 {
            Tok::Ident(s) if s == word => {
                self.at += 1;
                Ok(())
            }
            _ => Err(self.unexpected(&format!("`{word}`"))),
        }
    }

    fn int(&mut self) -> Result<(i64, Span), SpfError> {
        match self.peek() {
            (Tok::Int(i), span) => {
                self.at += 1;
                Ok((i, span))
            }
            _ => Err(self.unexpected("an integer")),
        }
    }

    /// `NAME[dims] : FORMAT ;` after `input`, `output` or `temp`.
    fn tensor_decl(&mut self, kind: &str, start: Span) -> Result<TensorDecl, SpfError> {
        let name = self.ident("a tensor name")?;
        self.punct("[")?;
        let mut dims = Vec::new();
        loop {
            match self.peek() {
                (Tok::Ident(s), _) => dims.push(Dim::Sym(s)),
                (Tok::Int(i), _) => dims.push(Dim::Int(i)),
                _ => return Err(self.unexpected("a dimension (a symbol or a size)")),
            }
            self.at += 1;
            if self.eat("]").is_some() {
                break;
            }
            self.punct(",")?;
        }
        let mut pattern = None;
        let format = if kind == "input" {
            self.punct(":")?;
            self.ident("a format name")?
        } else {
            match self.eat(":") {
                Some(_) if kind == "output" => {
                    let word = self.ident("a format name or `pattern`")?;
                    if word == "pattern" {
                        self.punct("(")?;
                        pattern = Some(self.ident("an input tensor")?);
                        self.punct(")")?;
                        "dense".to_string()
                    } else {
                        word
                    }
                }
                Some(span) => {
                    return Err(SpfError::new(
                        "a temp is dense: it takes no format".into(),
                        span,
                    ))
                }
                None => "dense".to_string(),
            }
        };
        let end = self.punct(";")?;
        Ok(TensorDecl {
            name,
            dims,
            format,
            pattern,
            span: (start.0, end.1),
        })
    }

    fn statement(&mut self, prog: &Program, start: Span) -> Result<Statement, SpfError> {
        let name = self.ident("a statement name")?;
        let symbols = prog.symbols();
        let ufs: Vec<String> = prog.ufs.iter().map(|u| u.name.clone()).collect();
        let scope = Scope::Bound {
            symbols: &symbols,
            ufs: &ufs,
        };
        self.keyword("domain")?;
        let domain = self.set(scope)?;
        self.keyword("schedule")?;
        let schedule_span = self.peek().1;
        let schedule = self.map(scope)?;
        if schedule.inputs.len() != domain.vars.len() {
            return Err(SpfError::new(
                format!(
                    "the schedule maps {} variables but the domain has {}",
                    schedule.inputs.len(),
                    domain.vars.len()
                ),
                schedule_span,
            ));
        }
        self.keyword("body")?;
        let vars = &domain.vars;
        let target = self.access(vars, scope)?;
        let update = match self.peek().0 {
            Tok::Punct("=") => None,
            Tok::Punct(p @ ("+=" | "-=" | "*=" | "/=")) => p.chars().next(),
            _ => return Err(self.unexpected("`=`, `+=`, `-=`, `*=` or `/=`")),
        };
        self.at += 1;
        let value = self.body_sum(vars, scope)?;
        let end = self.punct(";")?;
        Ok(Statement {
            name,
            domain,
            schedule,
            target,
            update,
            value,
            span: (start.0, end.1),
        })
    }

    /// `transform [NAME ("," NAME)*] map ";"`, after the statements it names.
    fn transform(&mut self, prog: &Program, start: Span) -> Result<Transform, SpfError> {
        let mut statements = Vec::new();
        while let (Tok::Ident(name), span) = self.peek() {
            self.at += 1;
            if !prog.statements.iter().any(|s| s.name == name) {
                return Err(SpfError::new(
                    format!("no statement `{name}` is declared before this transform"),
                    span,
                ));
            }
            statements.push(name);
            if self.eat(",").is_none() {
                break;
            }
        }
        let symbols = prog.symbols();
        let map = self.map(Scope::Bound {
            symbols: &symbols,
            ufs: &[],
        })?;
        let end = self.punct(";")?;
        Ok(Transform {
            statements,
            map,
            span: (start.0, end.1),
        })
    }

    fn body_sum(&mut self, vars: &[String], scope: Scope) -> Result<BodyExpr, SpfError> {
        let mut e = self.body_product(vars, scope)?;
        loop {
            let op = match self.peek().0 {
                Tok::Punct("+") => '+',
                Tok::Punct("-") => '-',
                _ => return Ok(e),
            };
            self.at += 1;
            let rhs = self.body_product(vars, scope)?;
            e = BodyExpr::Bin(op, Box::new(e), Box::new(rhs));
        }
    }

    fn body_product(&mut self, vars: &[String], scope: Scope) -> Result<BodyExpr, SpfError> {
        let mut e = self.body_factor(vars, scope)?;
        loop {
            let op = match self.peek().0 {
                Tok::Punct("*") => '*',
                Tok::Punct("/") => '/',
                _ => return Ok(e),
            };
            self.at += 1;
            let rhs = self.body_factor(vars, scope)?;
            e = BodyExpr::Bin(op, Box::new(e), Box::new(rhs));
        }
    }

    fn body_factor(&mut self, vars: &[String], scope: Scope) -> Result<BodyExpr, SpfError> {
        match self.peek().0 {
            Tok::Punct("-") => {
                self.at += 1;
                Ok(BodyExpr::Neg(Box::new(self.body_factor(vars, scope)?)))
            }
            Tok::Punct("(") => {
                self.at += 1;
                let e = self.body_sum(vars, scope)?;
                self.punct(")")?;
                Ok(e)
            }
            Tok::Int(i) => {
                self.at += 1;
                Ok(BodyExpr::Num(i as f64))
            }
            Tok::Float(f) => {
                self.at += 1;
                Ok(BodyExpr::Num(f))
            }
            Tok::Ident(_) => Ok(BodyExpr::Access(self.access(vars, scope)?)),
            _ => Err(self.unexpected("a number, an access or `(`")),
        }
    }

    /// `D(e1, ..., en)` with affine indices.
    fn access(&mut self, vars: &[String], scope: Scope) -> Result<Access, SpfError> {
        let (space, span) = self.ident_spanned("a data space")?;
        self.punct("(")?;
        let mut index = Vec::new();
        loop {
            index.push(self.affine(vars, scope)?);
            if self.eat(")").is_some() {
                break;
            }
            self.punct(",")?;
        }
        let end = self.toks[self.at - 1].1;
        Ok(Access {
            space,
            index,
            span: (span.0, end.1),
        })
    }

    /// `[a, b, c]` with distinct names.
    fn tuple_vars(&mut self) -> Result<Vec<String>, SpfError> {
        self.punct("[")?;
        let mut vars: Vec<String> = Vec::new();
        if self.eat("]").is_some() {
            return Ok(vars);
        }
        loop {
            let (v, span) = self.ident_spanned("a tuple variable")?;
            // `_` marks an unused position (`[_, i, _, j]`); each one is a distinct
            // variable that no expression can name.
            let v = if v == "_" {
                format!("_{}", vars.len())
            } else {
                v
            };
            if vars.contains(&v) {
                return Err(SpfError::new(
                    format!("`{v}` appears twice in the tuple"),
                    span,
                ));
            }
            vars.push(v);
            if self.eat("]").is_some() {
                return Ok(vars);
            }
            self.punct(",")?;
        }
    }

    fn set(&mut self, scope: Scope) -> Result<Set, SpfError> {
        self.punct("{")?;
        let vars = self.tuple_vars()?;
        let constraints = self.constraints_and_close(&vars, scope)?;
        Ok(Set { vars, constraints })
    }

    fn map(&mut self, scope: Scope) -> Result<Map, SpfError> {
        self.punct("{")?;
        let inputs = self.tuple_vars()?;
        self.punct("->")?;
        self.punct("[")?;
        let fresh = self.output_variables(&inputs, scope);
        let vars: Vec<String> = inputs.iter().chain(&fresh).cloned().collect();
        let mut outputs = Vec::new();
        if self.eat("]").is_none() {
            loop {
                outputs.push(self.affine(&vars, scope)?);
                if self.eat("]").is_some() {
                    break;
                }
                self.punct(",")?;
            }
        }
        let constraints = self.constraints_and_close(&vars, scope)?;
        Ok(Map {
            inputs,
            fresh,
            outputs,
            constraints,
        })
    }

    /// The output tuple's variables, as isl reads them: the entries (from here to the
    /// closing `]`) that are a bare name other than an input's or a bound symbol's.
    fn output_variables(&self, inputs: &[String], scope: Scope) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let (mut depth, mut entry) = (0usize, Vec::new());
        for (tok, _) in &self.toks[self.at..] {
            let closes = match tok {
                Tok::Punct("(" | "[") => {
                    depth += 1;
                    false
                }
                Tok::Punct(")") => {
                    depth = depth.saturating_sub(1);
                    false
                }
                Tok::Punct("]") if depth == 0 => true,
                Tok::Punct("]") => {
                    depth -= 1;
                    false
                }
                Tok::Punct(",") if depth == 0 => true,
                Tok::End => true,
                _ => false,
            };
            if !closes {
                entry.push(tok);
                continue;
            }
            if let [Tok::Ident(name)] = entry.as_slice() {
                let symbol =
                    matches!(scope, Scope::Bound { symbols, .. } if symbols.contains(name));
                if !symbol && !inputs.contains(name) && !out.contains(name) && name != "_" {
                    out.push(name.clone());
                }
            }
            entry.clear();
            if !matches!(tok, Tok::Punct(",")) {
                break;
            }
        }
        out
    }

    /// `: c1 && c2 ... }` or `}`; chains such as `0 <= i < N` give one constraint a link.
    fn constraints_and_close(
        &mut self,
        vars: &[String],
        scope: Scope,
    ) -> Result<Vec<Constraint>, SpfError> {
        let mut out = Vec::new();
        if self.eat("}").is_some() {
            return Ok(out);
        }
        self.punct(":")?;
        loop {
            let mut lhs = self.affine(vars, scope)?;
            let mut links = 0;
            while let Tok::Punct(op @ ("<" | "<=" | ">" | ">=" | "=" | "==")) = self.peek().0 {
                self.at += 1;
                let rhs = self.affine(vars, scope)?;
                let (expr, kind) = match op {
                    "<" => (
                        rhs.add_scaled(-1, &lhs)
                            .add_scaled(1, &Affine::constant(-1)),
                        Relation0::NonNegative,
                    ),
                    "<=" => (rhs.add_scaled(-1, &lhs), Relation0::NonNegative),
                    ">" => (
                        lhs.add_scaled(-1, &rhs)
                            .add_scaled(1, &Affine::constant(-1)),
                        Relation0::NonNegative,
                    ),
                    ">=" => (lhs.add_scaled(-1, &rhs), Relation0::NonNegative),
                    _ => (lhs.add_scaled(-1, &rhs), Relation0::Zero),
                };
                out.push(Constraint { expr, kind });
                lhs = rhs;
                links += 1;
            }
            if links == 0 {
                return Err(self.unexpected("a comparison (`<`, `<=`, `=`, `>=`, `>`)"));
            }
            if self.eat("}").is_some() {
                return Ok(out);
            }
            match self.peek().0 {
                Tok::Punct("&&") => self.at += 1,
                Tok::Ident(w) if w == "and" => self.at += 1,
                _ => return Err(self.unexpected("`&&`, `and` or `}`")),
            }
        }
    }

    fn affine(&mut self, vars: &[String], scope: Scope) -> Result<Affine, SpfError> {
        let negate = self.eat("-").is_some();
        let first = self.affine_product(vars, scope)?;
        let mut e = if negate { first.scale(-1) } else { first };
        loop {
            let k = match self.peek().0 {
                Tok::Punct("+") => 1,
                Tok::Punct("-") => -1,
                _ => return Ok(e),
            };
            self.at += 1;
            let rhs = self.affine_product(vars, scope)?;
            e = e.add_scaled(k, &rhs);
        }
    }

    /// Factors multiplied together, at most one of them not a constant.
    fn affine_product(&mut self, vars: &[String], scope: Scope) -> Result<Affine, SpfError> {
        let start = self.peek().1;
        let mut e = self.affine_factor(vars, scope)?;
        while self.eat("*").is_some() {
            let rhs = self.affine_factor(vars, scope)?;
            let end = self.toks[self.at - 1].1;
            e = match (e.as_constant(), rhs.as_constant()) {
                (Some(k), _) => rhs.scale(k),
                (_, Some(k)) => e.scale(k),
                _ => {
                    return Err(SpfError::new(
                        "non-affine term: a product of two non-constants (only an \
                         uninterpreted function may hide a non-affine value)"
                            .into(),
                        (start.0, end.1),
                    ))
                }
            };
            let magnitude = |c: i64| c.unsigned_abs() > MAX_CONSTANT as u64;
            if magnitude(e.constant) || e.terms.iter().any(|(c, _)| magnitude(*c)) {
                return Err(SpfError::new(
                    format!("a constant or coefficient beyond {MAX_CONSTANT}"),
                    (start.0, end.1),
                ));
            }
        }
        Ok(e)
    }

    fn affine_factor(&mut self, vars: &[String], scope: Scope) -> Result<Affine, SpfError> {
        match self.peek() {
            (Tok::Int(i), _) => {
                self.at += 1;
                Ok(Affine::constant(i))
            }
            (Tok::Punct("("), _) => {
                self.at += 1;
                let e = self.affine(vars, scope)?;
                self.punct(")")?;
                Ok(e)
            }
            (Tok::Punct("-"), _) => {
                self.at += 1;
                Ok(self.affine_factor(vars, scope)?.scale(-1))
            }
            (Tok::Ident(name), span) => {
                self.at += 1;
                if self.eat("(").is_some() {
                    if let Scope::Bound { ufs, .. } = scope {
                        if !ufs.contains(&name) {
                            return Err(SpfError::new(
                                format!(
                                    "`{name}` is not a bound uninterpreted function (declare \
                                     it with `uf {name} = TENSOR.pos(LEVEL);` or `.crd`)"
                                ),
                                span,
                            ));
                        }
                    }
                    let mut args = Vec::new();
                    loop {
                        args.push(self.affine(vars, scope)?);
                        if self.eat(")").is_some() {
                            break;
                        }
                        self.punct(",")?;
                    }
                    return Ok(Affine::term(Term::Uf(name, args)));
                }
                if let Some(v) = vars.iter().position(|v| *v == name) {
                    return Ok(Affine::term(Term::Var(v)));
                }
                if let Scope::Bound { symbols, .. } = scope {
                    if !symbols.contains(&name) {
                        return Err(SpfError::new(
                            format!(
                                "`{name}` is neither a tuple variable nor a symbol bound by a \
                                 tensor's dimensions"
                            ),
                            span,
                        ));
                    }
                }
                Ok(Affine::term(Term::Sym(name)))
            }
            _ => Err(self.unexpected("an integer, a variable, a symbol or a function")),
        }
    }
}
