//! sparsec's errors as Python exceptions: one class per kind of failure, all subclasses
//! of `sparsec.Error`, itself a `ValueError`, carrying the message the command line prints.

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    sparsec,
    Error,
    PyValueError,
    "Base class of every error sparsec reports (a ValueError)."
);
create_exception!(
    sparsec,
    NotationError,
    Error,
    "The expression does not parse, or does not fit the tensors given."
);
create_exception!(
    sparsec,
    ScheduleError,
    Error,
    "A schedule does not parse, or a transformation's precondition does not hold."
);
create_exception!(
    sparsec,
    CompileError,
    Error,
    "The statement cannot be lowered, printed or compiled as its formats and schedule say."
);
create_exception!(
    sparsec,
    FormatError,
    Error,
    "A format string does not parse, or a format cannot hold the tensor."
);
create_exception!(
    sparsec,
    InputError,
    Error,
    "Arrays or tensors given to sparsec are malformed or do not match the statement."
);

create_exception!(
    sparsec,
    FileError,
    Error,
    "A file could not be read or written (the message names it, and the line for text files)."
);

/// The Python exception for a file error.
pub fn file(err: sparsec::io::IoError) -> PyErr {
    FileError::new_err(err.to_string())
}

/// The Python exception for a sparsec error. Errors that point into the expression or the
/// schedule text carry the same annotated excerpt as the command line's report.
pub fn to_py(err: sparsec::Error) -> PyErr {
    let message = describe(&err);
    match err {
        sparsec::Error::Notation(_) => NotationError::new_err(message),
        sparsec::Error::ScheduleSyntax(_) | sparsec::Error::Schedule(_) => {
            ScheduleError::new_err(message)
        }
        // The Python package does not compile SPF computations; an SPF error is a
        // compilation error wherever one surfaces.
        sparsec::Error::Lower(_)
        | sparsec::Error::Backend(_)
        | sparsec::Error::Jit(_)
        | sparsec::Error::Tune(_)
        | sparsec::Error::Spf(_)
        | sparsec::Error::Affine(_) => CompileError::new_err(message),
        sparsec::Error::Tensor(_) => FormatError::new_err(message),
        sparsec::Error::Input(_) => InputError::new_err(message),
    }
}

/// The message, followed by the excerpt of the source text when the error has one.
fn describe(err: &sparsec::Error) -> String {
    let message = err.to_string();
    if err.source_code().is_none() {
        return message;
    }
    let mut excerpt = String::new();
    let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
    match handler.render_report(&mut excerpt, err as &dyn Diagnostic) {
        Ok(()) => format!("{message}\n{}", excerpt.trim_end()),
        Err(_) => message,
    }
}

/// An input error with `message`.
pub fn input(message: impl Into<String>) -> PyErr {
    InputError::new_err(message.into())
}

/// A format error with `message`.
pub fn format(message: impl Into<String>) -> PyErr {
    FormatError::new_err(message.into())
}

/// Register the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("NotationError", py.get_type::<NotationError>())?;
    m.add("ScheduleError", py.get_type::<ScheduleError>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("FormatError", py.get_type::<FormatError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("FileError", py.get_type::<FileError>())?;
    Ok(())
}
