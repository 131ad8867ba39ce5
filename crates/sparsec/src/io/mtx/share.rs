//! One process's share of a MatrixMarket file, for processes that read a file together
//! (the distributed kernels' ranks): each parses only the lines of its share of the bytes.

use std::path::Path;

use super::read::{coo_of, expected_entries, parse_preamble, read_matrix_market};
use super::{MatrixMarket, MtxLayout};
use crate::io::scan::{parse_one_share, read_prefix, Rejected};
use crate::io::IoError;

/// One share of a MatrixMarket file's entries ([`read_matrix_market_share`]).
#[derive(Debug)]
pub struct MatrixMarketShare {
    /// The share's entries (symmetry expanded), with the whole matrix's dimensions, and
    /// the file's header.
    pub matrix: MatrixMarket,
    /// How many entry lines the share held: the shares' counts add up to the size line's
    /// when the file is whole.
    pub entry_lines: usize,
}

/// Share `part` of `parts` of a coordinate MatrixMarket file: the entry lines of one of
/// `parts` processes that read the file together, split at line boundaries nearest an even
/// split by bytes, so that no process reads the whole file. Every share reads the header.
/// An `array` file (dense) is read whole and its entries split evenly. A malformed share
/// is read whole, to say where and why, which only the process holding it does.
pub fn read_matrix_market_share(
    path: impl AsRef<Path>,
    part: usize,
    parts: usize,
) -> Result<MatrixMarketShare, IoError> {
    let path = path.as_ref();
    let (head, len) = read_prefix(path)?;
    let preamble = match parse_preamble(path, &head) {
        Ok(p)
            if p.header.layout == MtxLayout::Coordinate
                && head[..p.body_start].ends_with(b"\n") =>
        {
            p
        }
        // An array, a preamble longer than the head, or an error, which reading whole
        // reports with its line.
        _ => return whole_share(read_matrix_market(path)?, part, parts),
    };
    let body = preamble.body(path);
    let body_len = len - preamble.body_start as u64;
    let declared = preamble.header.stored_entries;
    let expected = expected_entries(declared, body_len / parts.max(1) as u64, body_len);
    let mut piece = body.empty_piece(expected, usize::try_from(body_len).unwrap_or(usize::MAX));
    let parsed = parse_one_share(
        path,
        (preamble.body_start as u64, len),
        (part, parts),
        &mut |lines| {
            body.coordinate_lines(lines, &mut piece)
                .map_err(|_| Rejected)
        },
    )?;
    if parsed.is_err() {
        return Err(read_matrix_market(path).err().unwrap_or_else(|| {
            IoError::parse(
                path,
                body.first_line,
                "an entry line changed while it was read",
            )
        }));
    }
    let (rows, cols) = (preamble.header.rows, preamble.header.cols);
    Ok(MatrixMarketShare {
        entry_lines: piece.entries,
        matrix: MatrixMarket {
            coo: coo_of(rows, cols, piece.coords, piece.values),
            header: preamble.header,
        },
    })
}

/// Share `part` of `parts` of a matrix read whole: an even split of its entries.
fn whole_share(
    whole: MatrixMarket,
    part: usize,
    parts: usize,
) -> Result<MatrixMarketShare, IoError> {
    let n = whole.coo.values.len();
    let parts = parts.max(1);
    let (from, to) = (n * part / parts, n * (part + 1) / parts);
    let coo = coo_of(
        whole.header.rows,
        whole.header.cols,
        whole.coo.coords[2 * from..2 * to].to_vec(),
        whole.coo.values[from..to].to_vec(),
    );
    Ok(MatrixMarketShare {
        entry_lines: if part == 0 {
            whole.header.stored_entries
        } else {
            0
        },
        matrix: MatrixMarket {
            coo,
            header: whole.header,
        },
    })
}
