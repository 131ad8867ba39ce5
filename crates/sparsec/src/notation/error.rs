//! Errors of the notation front end, as `miette` diagnostics pointing into the expression.

use std::fmt;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode};

use super::ast::Span;

/// What went wrong, with the details a caller may want to inspect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotationErrorKind {
    /// A character that is not part of index notation (`#`, `$`, ...).
    UnexpectedCharacter { ch: char },
    /// A number literal that does not parse (`1e`, `2.5e+`).
    InvalidNumber { text: String },
    /// A token where something else was expected.
    UnexpectedToken { found: String, expected: String },
    /// A `(` without its `)`.
    UnterminatedParenthesis,
    /// A math function given another number of arguments than it takes.
    WrongArgumentCount {
        function: String,
        expected: usize,
        got: usize,
    },
    /// Nothing to parse, or nothing after `=`.
    EmptyExpression { what: String },
    /// A tensor name without a declaration.
    UnknownTensor { name: String, declared: Vec<String> },
    /// An access with a different number of indices than the tensor has modes.
    WrongIndexCount {
        tensor: String,
        expected: usize,
        got: usize,
        /// Where the expected count comes from ("declared with dimensions 3x4").
        reason: String,
    },
    /// One index variable ranging over dimensions of different sizes.
    SizeConflict {
        var: String,
        /// The size established first, and where it comes from ("mode 1 of `A`").
        size: usize,
        source: String,
        /// The conflicting size and where it comes from.
        other_size: usize,
        other_source: String,
    },
    /// An access whose index variable's size differs from the size the tensor's mode
    /// already has (`y(j) = A(j) * A(i)` with `i` and `j` of different sizes).
    ModeSizeMismatch {
        tensor: String,
        mode: usize,
        var: String,
        var_size: usize,
        /// The mode's size, and where it comes from ("declared dimensions 3x4", "the
        /// access `A(j)`").
        dim: usize,
        dim_source: String,
    },
    /// `A(i,i) = ...`: an output index used twice.
    RepeatedOutputIndex { var: String },
    /// The output tensor read on the right-hand side (unsupported).
    OutputOnRight { tensor: String },
    /// An index variable whose size no tensor and no explicit size gives.
    UnknownSize { var: String },
    /// A declared format whose order differs from the access's number of indices.
    FormatOrderMismatch {
        tensor: String,
        format: String,
        format_order: usize,
        arity: usize,
    },
    /// An operation that a statement's semiring gives no meaning to (`-` over `(min, +)`).
    NotInSemiring { what: String, semiring: String },
    /// A `let` definition that does not define an operator (a built-in name, a repeated
    /// name or parameter, a body reading a tensor).
    BadOperator { name: String, problem: String },
    /// A user operator named as a semiring's ⊕ that cannot reduce: no declared identity,
    /// or a law it breaks.
    NotAReduction { operator: String, problem: String },
    /// A declared fill value the statement cannot take: the output's, or an input's that
    /// a semiring other than `(+, *)` cannot read as absence.
    BadFill {
        tensor: String,
        /// The declared value, as written.
        fill: String,
        problem: String,
    },
}

/// An error in an index-notation expression, with the span it points at.
///
/// Render it with `miette` (e.g. `miette::Report::new(err)`) to show the expression with
/// the offending part underlined.
#[derive(Debug)]
pub struct NotationError {
    // Boxed: errors travel through every `Result` of the parser and binder.
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: NotationErrorKind,
    span: Span,
    source_code: NamedSource<String>,
    message: String,
    label: String,
    help: Option<String>,
}

/// How an unexpected token describes the end of the text.
pub(crate) const END: &str = "end of expression";

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

impl NotationError {
    /// An error of `kind` at `span` of the expression `source`.
    pub fn new(kind: NotationErrorKind, source: &str, span: Span) -> NotationError {
        use NotationErrorKind as K;
        let (message, label, help): (String, String, Option<String>) = match &kind {
            K::UnexpectedCharacter { ch } => (
                format!("unexpected character `{}`", ch.escape_debug()),
                "not part of index notation".into(),
                Some(
                    "index notation consists of names, numbers, `(`, `)`, `,`, `=`, `+=` and \
                     the operators `+ - * /`"
                        .into(),
                ),
            ),
            K::InvalidNumber { text } => (
                format!("malformed number `{text}`"),
                "not a valid number".into(),
                Some("numbers look like `2`, `0.5`, `.5` or `1.5e-3`; an exponent needs digits".into()),
            ),
            K::UnexpectedToken { found, expected } => (
                format!("expected {expected}, found {found}"),
                if found == END {
                    format!("expected {expected} after this")
                } else {
                    format!("expected {expected}")
                },
                None,
            ),
            K::UnterminatedParenthesis => (
                "unterminated parenthesis".into(),
                "this `(` is never closed".into(),
                Some("add the matching `)`".into()),
            ),
            K::WrongArgumentCount {
                function,
                expected,
                got,
            } => (
                format!("`{function}` takes {expected} argument(s), not {got}"),
                format!("{got} argument(s) here"),
                Some(
                    "the functions are sqrt, abs, exp, log, sin, cos, tan, floor, ceil (one \
                     argument), pow, max, min (two) and where (three)"
                        .into(),
                ),
            ),
            K::EmptyExpression { what } => (
                format!("{what} is empty"),
                if span.start == 0 {
                    "expected an assignment here".into()
                } else {
                    "expected an expression after this".into()
                },
                Some("write an assignment such as `y(i) = A(i,j) * x(j)`".into()),
            ),
            K::UnknownTensor { name, declared } => (
                format!("unknown tensor `{name}`"),
                "not declared".into(),
                Some(if declared.is_empty() {
                    format!("declare `{name}`; no tensors are declared")
                } else {
                    let names: Vec<String> = declared.iter().map(|n| format!("`{n}`")).collect();
                    format!("declare `{name}`; the declared tensors are {}", names.join(", "))
                }),
            ),
            K::WrongIndexCount {
                tensor,
                expected,
                got,
                reason,
            } => (
                format!(
                    "wrong number of indices for tensor `{tensor}`: expected {expected}, got {got}"
                ),
                format!(
                    "{} here, but `{tensor}` has {}",
                    plural(*got, "index", "indices"),
                    plural(*expected, "mode", "modes")
                ),
                Some(format!("`{tensor}` is {reason}")),
            ),
            K::SizeConflict {
                var,
                size,
                source,
                other_size,
                other_source,
            } => (
                format!(
                    "index variable `{var}` is used with two different sizes: {size} ({source}) \
                     and {other_size} ({other_source})"
                ),
                format!("`{var}` has size {other_size} here ({other_source})"),
                Some(format!(
                    "an index variable ranges over one dimension, so every mode it indexes must \
                     have the same size; `{var}` already has size {size} from {source}"
                )),
            ),
            K::ModeSizeMismatch {
                tensor,
                mode,
                var,
                var_size,
                dim,
                dim_source,
            } => (
                format!(
                    "mode {mode} of tensor `{tensor}` has size {dim} ({dim_source}), but index \
                     variable `{var}` has size {var_size}"
                ),
                format!("`{var}` has size {var_size} here, mode {mode} of `{tensor}` has {dim}"),
                Some(format!(
                    "every access of `{tensor}` must index mode {mode} with a variable of size \
                     {dim}; give `{var}` that size or use another variable"
                )),
            ),
            K::RepeatedOutputIndex { var } => (
                format!("index variable `{var}` is repeated on the left-hand side"),
                format!("second use of `{var}`"),
                Some(
                    "every mode of the output needs its own index variable; writing a \
                     diagonal is not supported"
                        .into(),
                ),
            ),
            K::OutputOnRight { tensor } => (
                format!(
                    "the output tensor `{tensor}` also appears on the right-hand side, which is \
                     not supported"
                ),
                "output used as an input".into(),
                Some(format!(
                    "write the result to a new tensor, or use `+=` to add into `{tensor}`"
                )),
            ),
            K::UnknownSize { var } => (
                format!("the size of index variable `{var}` is unknown"),
                format!("size of `{var}` unknown"),
                Some(format!(
                    "declare the dimensions of a tensor indexed by `{var}`, or give the size of \
                     `{var}`"
                )),
            ),
            K::FormatOrderMismatch {
                tensor,
                format,
                format_order,
                arity,
            } => (
                format!(
                    "format `{format}` of tensor `{tensor}` has order {format_order}, but `{tensor}` \
                     is accessed with {}",
                    plural(*arity, "index", "indices")
                ),
                format!("{} here", plural(*arity, "index", "indices")),
                Some(format!(
                    "give `{tensor}` a format of order {arity}, or access it with {}",
                    plural(*format_order, "index", "indices")
                )),
            ),
            K::NotInSemiring { what, semiring } => (
                format!("{what} has no meaning over the semiring {semiring}"),
                "not an operation of the semiring".into(),
                Some(
                    "over a semiring, write its `+` and `*` (and a comparison or `pattern(..)` \
                     as a factor, which masks); compute anything else in a statement of its own"
                        .into(),
                ),
            ),
            K::BadOperator { name, problem } => (
                format!("operator `{name}` cannot be defined: {problem}"),
                problem.clone(),
                Some(
                    "an operator is `let name(a, b) = body [identity value];` before the \
                     statement, its body a function of its parameters alone"
                        .into(),
                ),
            ),
            K::BadFill {
                tensor,
                fill,
                problem,
            } => (
                format!("`{tensor}` cannot have the fill value {fill}: {problem}"),
                "declared with that fill value".into(),
                None,
            ),
            K::NotAReduction { operator, problem } => (
                format!("`{operator}` cannot reduce: {problem}"),
                "named here as the semiring's reduction".into(),
                Some(
                    "a reduction must be associative and commutative with an identity, \
                     declared as `let name(a, b) = body identity value;`"
                        .into(),
                ),
            ),
        };
        NotationError {
            inner: Box::new(Inner {
                kind,
                span,
                source_code: NamedSource::new("expression", source.to_string()),
                message,
                label,
                help,
            }),
        }
    }

    /// The kind of error, with its details.
    pub fn kind(&self) -> &NotationErrorKind {
        &self.inner.kind
    }
    /// The byte span of the expression the error points at.
    pub fn span(&self) -> Span {
        self.inner.span
    }
    /// The text of the label at the span.
    pub fn label(&self) -> &str {
        &self.inner.label
    }
    /// The help text, if any.
    pub fn help_text(&self) -> Option<&str> {
        self.inner.help.as_deref()
    }
    /// The main message (same as `to_string()`).
    pub fn message(&self) -> &str {
        &self.inner.message
    }
}

impl fmt::Display for NotationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.inner.message)
    }
}

impl std::error::Error for NotationError {}

impl Diagnostic for NotationError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("sparsec::notation"))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let pointer = crate::error::troubleshooting("sparsec::notation");
        Some(Box::new(match &self.inner.help {
            Some(own) => format!("{own}\n{pointer}"),
            None => pointer,
        }))
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.inner.source_code)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(self.inner.label.clone()),
            self.inner.span,
        ))))
    }
}
