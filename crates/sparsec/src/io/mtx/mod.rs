//! MatrixMarket (`.mtx`) reading and writing.
//!
//! Reading supports the `coordinate` and `array` (column-major) layouts, the `real`
//! (`double`), `integer` and `pattern` fields (pattern values are 1.0), and the `general`,
//! `symmetric`, `skew-symmetric` and `hermitian` symmetries. Symmetric files are expanded:
//! every stored entry off the diagonal is mirrored (negated for skew-symmetric). For real
//! data a hermitian matrix is a symmetric one. `complex` files are rejected. Explicit zeros
//! are kept as entries.

use std::fmt;

use crate::tensor::Coo;

mod read;
mod share;
mod write;

pub use read::{parse_matrix_market, read_matrix_market};
pub use share::{read_matrix_market_share, MatrixMarketShare};
pub use write::{write_matrix_market, write_matrix_market_tensor};

/// How entries are laid out in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MtxLayout {
    /// `coordinate`: one `row column [value]` line per stored entry.
    #[default]
    Coordinate,
    /// `array`: every value, column by column.
    Array,
}

/// The value field of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MtxField {
    /// `real` (or `double`).
    Real,
    /// `integer`.
    Integer,
    /// `pattern`: no values; every entry is 1.0.
    Pattern,
}

/// The symmetry of the file; all but `general` store one triangle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MtxSymmetry {
    /// Every entry is stored.
    General,
    /// `a(i,j) = a(j,i)`; one triangle stored.
    Symmetric,
    /// `a(i,j) = -a(j,i)`; the strict lower triangle stored.
    SkewSymmetric,
    /// `a(i,j) = conj(a(j,i))`; for real values the same as symmetric.
    Hermitian,
}

impl MtxLayout {
    /// The header word.
    pub fn as_str(self) -> &'static str {
        match self {
            MtxLayout::Coordinate => "coordinate",
            MtxLayout::Array => "array",
        }
    }
}

impl MtxField {
    /// The header word.
    pub fn as_str(self) -> &'static str {
        match self {
            MtxField::Real => "real",
            MtxField::Integer => "integer",
            MtxField::Pattern => "pattern",
        }
    }
}

impl MtxSymmetry {
    /// The header word.
    pub fn as_str(self) -> &'static str {
        match self {
            MtxSymmetry::General => "general",
            MtxSymmetry::Symmetric => "symmetric",
            MtxSymmetry::SkewSymmetric => "skew-symmetric",
            MtxSymmetry::Hermitian => "hermitian",
        }
    }
}

impl fmt::Display for MtxLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
impl fmt::Display for MtxField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
impl fmt::Display for MtxSymmetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the header, comments and size line of a MatrixMarket file say.
#[derive(Clone, Debug, PartialEq)]
pub struct MtxHeader {
    /// `coordinate` or `array`.
    pub layout: MtxLayout,
    /// The value field.
    pub field: MtxField,
    /// The symmetry.
    pub symmetry: MtxSymmetry,
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Entries stored in the file (before symmetric expansion).
    pub stored_entries: usize,
    /// Comment lines between the header and the size line, without the leading `%`.
    pub comments: Vec<String>,
}

/// A MatrixMarket file: its entries (symmetry expanded, in file order, each mirror right
/// after its entry) and its header.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixMarket {
    /// The entries, 0-based, with dims `[rows, cols]`.
    pub coo: Coo,
    /// Header information.
    pub header: MtxHeader,
}

/// Options for [`write_matrix_market`].
#[derive(Clone, Debug, Default)]
pub struct MtxWriteOptions {
    /// `coordinate` (default) or `array` (dense, column-major, duplicates summed).
    pub layout: MtxLayout,
    /// Comment lines written after the header (a `%` is prepended to each).
    pub comments: Vec<String>,
}
