//! File formats: MatrixMarket (`.mtx`), FROSTT (`.tns`) and sparsec's own binary layout
//! (`.spt`), which stores a [`Tensor`] in any format exactly.
//!
//! Text readers work on the raw bytes of the file (no per-line allocation) and split large
//! bodies into chunks parsed in parallel. Every error is an [`IoError`] that names the file
//! and, for content errors, the 1-based line number; no input makes a reader panic.
//!
//! ```no_run
//! use sparsec::io;
//! let m = io::read_matrix_market("bcsstk13.mtx")?;          // symmetric files are expanded
//! println!("{:?} {} stored, {} expanded", m.coo.dims, m.header.stored_entries, m.coo.len());
//! let t = io::read_tns("fao_trade.tns", None)?;               // dims = max index per mode
//! io::write_tns("/tmp/copy.tns", &t)?;
//! # Ok::<(), sparsec::io::IoError>(())
//! ```

mod binary;
#[cfg(feature = "binsparse")]
mod binsparse;
mod mtx;
mod scan;
mod tns;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub use binary::{decode_spt, encode_spt, read_spt, write_spt, SPT_MAGIC, SPT_VERSION};
#[cfg(feature = "binsparse")]
pub use binsparse::{read_binsparse, write_binsparse, BINSPARSE_VERSION};
pub use mtx::{
    parse_matrix_market, read_matrix_market, read_matrix_market_share, write_matrix_market,
    write_matrix_market_tensor, MatrixMarket, MatrixMarketShare, MtxField, MtxHeader, MtxLayout,
    MtxSymmetry, MtxWriteOptions,
};
pub use tns::{parse_tns, read_tns, write_tns};

use crate::format::Format;
use crate::tensor::{Coo, Tensor, TensorError, ValueType};

/// Why a file could not be read or written. Every variant names the file; content errors
/// also give the 1-based line number.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum IoError {
    /// The operating system refused to read or write the file.
    #[diagnostic(
        code(sparsec::io),
        help("what it means and what to do: docs/troubleshooting.md, section `sparsec::io`")
    )]
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
    /// The content of a text file is malformed at `line`.
    #[diagnostic(
        code(sparsec::io),
        help("what it means and what to do: docs/troubleshooting.md, section `sparsec::io`")
    )]
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file as a whole is unusable (binary corruption, unknown extension, a tensor the
    /// format cannot hold, ...).
    #[diagnostic(
        code(sparsec::io),
        help("what it means and what to do: docs/troubleshooting.md, section `sparsec::io`")
    )]
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl IoError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            IoError::Io { path, .. }
            | IoError::Parse { path, .. }
            | IoError::Invalid { path, .. } => path,
        }
    }

    /// The 1-based line number, for content errors of text files.
    pub fn line(&self) -> Option<usize> {
        match self {
            IoError::Parse { line, .. } => Some(*line),
            _ => None,
        }
    }

    pub(crate) fn io(path: &Path, error: std::io::Error) -> IoError {
        IoError::Io {
            path: path.to_path_buf(),
            error,
        }
    }

    pub(crate) fn parse(path: &Path, line: usize, message: impl Into<String>) -> IoError {
        IoError::Parse {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> IoError {
        IoError::Invalid {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// The file kinds sparsec reads and writes, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `.mtx`: MatrixMarket.
    MatrixMarket,
    /// `.tns`: FROSTT coordinate text.
    Frostt,
    /// `.spt`: sparsec binary tensor.
    Binary,
    /// `.h5` or `.hdf5` (`a.bsp.h5`): binsparse in HDF5, read and written when sparsec is
    /// built with the `binsparse` feature.
    Binsparse,
}

impl FileKind {
    /// The kind of `path`, from its extension (case-insensitive).
    pub fn from_path(path: &Path) -> Result<FileKind, IoError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("mtx") => Ok(FileKind::MatrixMarket),
            Some("tns") => Ok(FileKind::Frostt),
            Some("spt") => Ok(FileKind::Binary),
            Some("h5" | "hdf5") => Ok(FileKind::Binsparse),
            Some(other) => Err(IoError::invalid(
                path,
                format!("unknown extension `.{other}`; expected .mtx (MatrixMarket), .tns (FROSTT), .spt (sparsec binary) or .h5 (binsparse)"),
            )),
            None => Err(IoError::invalid(
                path,
                "no file extension; expected .mtx (MatrixMarket), .tns (FROSTT), .spt (sparsec binary) or .h5 (binsparse)",
            )),
        }
    }
}

/// The content of a file read by [`read_any`].
#[derive(Clone, Debug)]
pub enum TensorFile {
    /// A MatrixMarket file: entries (symmetry expanded) and header.
    MatrixMarket(MatrixMarket),
    /// A FROSTT file: its entries.
    Frostt(Coo),
    /// A binary tensor (`.spt` or binsparse), in the format it was stored in.
    Binary(Tensor),
}

impl TensorFile {
    /// Dimension sizes.
    pub fn dims(&self) -> &[usize] {
        match self {
            TensorFile::MatrixMarket(m) => &m.coo.dims,
            TensorFile::Frostt(c) => &c.dims,
            TensorFile::Binary(t) => t.dims(),
        }
    }

    /// The value of the components the file does not list: a binary tensor's recorded
    /// fill value, else 0.
    pub fn fill(&self) -> f64 {
        match self {
            TensorFile::Binary(t) => t.fill(),
            _ => 0.0,
        }
    }

    /// The entries as a coordinate list (a binary tensor's stored components, sorted).
    pub fn coo(&self) -> Cow<'_, Coo> {
        match self {
            TensorFile::MatrixMarket(m) => Cow::Borrowed(&m.coo),
            TensorFile::Frostt(c) => Cow::Borrowed(c),
            TensorFile::Binary(t) => Cow::Owned(t.to_coo()),
        }
    }

    /// The format that stores what the file holds the way the file does: a binary
    /// tensor's own, dense for a MatrixMarket `array`, and for coordinates a dense outer
    /// level over compressed ones (a compressed vector, CSR, CSF under a dense root), so
    /// that a sparse file is never made dense unless asked to be.
    pub fn natural_format(&self) -> Format {
        match self {
            TensorFile::Binary(t) => t.format().clone(),
            TensorFile::MatrixMarket(m) if m.header.layout == MtxLayout::Array => {
                Format::dense(m.coo.dims.len())
            }
            other => Format::dense(other.dims().len()).general_equivalent(),
        }
    }

    /// The entries as an owned coordinate list.
    pub fn into_coo(self) -> Coo {
        match self {
            TensorFile::MatrixMarket(m) => m.coo,
            TensorFile::Frostt(c) => c,
            TensorFile::Binary(t) => t.to_coo(),
        }
    }

    /// The tensor in `format` (a binary tensor already in `format` is returned as is).
    pub fn into_tensor(
        self,
        format: &Format,
        value_type: ValueType,
    ) -> Result<Tensor, TensorError> {
        match self {
            TensorFile::Binary(t) if t.format() == format && t.value_type() == value_type => Ok(t),
            TensorFile::Binary(t) => {
                let fill = t.fill();
                Tensor::from_coo_filled(t.to_coo(), format, value_type, fill)
            }
            other => Tensor::from_coo(&other.into_coo(), format, value_type),
        }
    }
}

/// Read a `.mtx`, `.tns`, `.spt` or binsparse `.h5` file, chosen by extension.
pub fn read_any(path: impl AsRef<Path>) -> Result<TensorFile, IoError> {
    let path = path.as_ref();
    match FileKind::from_path(path)? {
        FileKind::MatrixMarket => read_matrix_market(path).map(TensorFile::MatrixMarket),
        FileKind::Frostt => read_tns(path, None).map(TensorFile::Frostt),
        FileKind::Binary => read_spt(path).map(TensorFile::Binary),
        FileKind::Binsparse => read_binsparse_file(path).map(TensorFile::Binary),
    }
}

/// Write `tensor` to a `.mtx` (order 1 or 2 as coordinate real general, a scalar as a 1 x 1
/// array), `.tns` or `.spt` file, chosen by extension. Text files receive the tensor's stored components, so the
/// padding of ELL, DIA, BCSR and dense formats is written as explicit zeros.
pub fn write_any(path: impl AsRef<Path>, tensor: &Tensor) -> Result<(), IoError> {
    let path = path.as_ref();
    let kind = FileKind::from_path(path)?;
    let unstored = !tensor.format().is_all_dense();
    if matches!(kind, FileKind::MatrixMarket | FileKind::Frostt) && unstored && tensor.fill() != 0.0
    {
        // Their missing entries are zeros: the file would say something else (a dense
        // tensor stores every component, so its fill value is nothing the file must say).
        return Err(IoError::invalid(
            path,
            format!(
                "the tensor's missing entries are {}, and a text file's are 0; write a .spt \
                 or binsparse (.h5) file, which records the fill value",
                tensor.fill()
            ),
        ));
    }
    match kind {
        FileKind::MatrixMarket => {
            write_matrix_market_tensor(path, tensor, &MtxWriteOptions::default())
        }
        FileKind::Frostt => write_tns(path, &tensor.to_coo()),
        FileKind::Binary => write_spt(path, tensor),
        FileKind::Binsparse => write_binsparse_file(path, tensor),
    }
}

/// Read a binsparse file ([`read_binsparse`]).
#[cfg(feature = "binsparse")]
pub fn read_binsparse_file(path: &Path) -> Result<Tensor, IoError> {
    read_binsparse(path)
}

/// Read a binsparse file: an error, since sparsec was built without the `binsparse` feature.
#[cfg(not(feature = "binsparse"))]
pub fn read_binsparse_file(path: &Path) -> Result<Tensor, IoError> {
    Err(binsparse_unavailable(path))
}

/// Write a binsparse file ([`write_binsparse`]).
#[cfg(feature = "binsparse")]
pub fn write_binsparse_file(path: &Path, tensor: &Tensor) -> Result<(), IoError> {
    write_binsparse(path, tensor)
}

/// Write a binsparse file: an error, since sparsec was built without the `binsparse` feature.
#[cfg(not(feature = "binsparse"))]
pub fn write_binsparse_file(path: &Path, _tensor: &Tensor) -> Result<(), IoError> {
    Err(binsparse_unavailable(path))
}

#[cfg(not(feature = "binsparse"))]
fn binsparse_unavailable(path: &Path) -> IoError {
    IoError::invalid(
        path,
        "binsparse (.h5) files need sparsec built with the `binsparse` feature \
         (cargo build --features binsparse, with the HDF5 library: apt-get install libhdf5-dev)",
    )
}

pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, IoError> {
    std::fs::read(path).map_err(|e| IoError::io(path, e))
}
