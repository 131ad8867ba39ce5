//! Writing MatrixMarket: `real general`, in the coordinate or the dense `array` layout.

use std::path::Path;

use super::{MtxLayout, MtxWriteOptions};
use crate::io::scan::TextOut;
use crate::io::IoError;
use crate::tensor::{Coo, Tensor};

/// Write a matrix (order 2), vector (order 1, written as one column) or scalar (order 0,
/// written as a 1 x 1 matrix) as MatrixMarket `real general`, in the layout the options ask
/// for; a scalar is always written in the `array` layout, since it always has its value.
pub fn write_matrix_market(
    path: impl AsRef<Path>,
    coo: &Coo,
    options: &MtxWriteOptions,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let (rows, cols) = match coo.dims[..] {
        [] => (1, 1),
        [n] => (n, 1),
        [r, c] => (r, c),
        _ => {
            return Err(IoError::invalid(
                path,
                format!(
                    "MatrixMarket holds matrices, vectors and scalars, but this tensor has order {}; write a .tns file instead",
                    coo.order()
                ),
            ))
        }
    };
    let layout = match coo.order() {
        0 => MtxLayout::Array,
        _ => options.layout,
    };
    coo.validate().map_err(|e| {
        IoError::invalid(
            path,
            format!("cannot write an invalid coordinate list: {e}"),
        )
    })?;
    let order = coo.order();
    // Missing modes are position 0: a vector is one column, a scalar the only entry.
    let at = |e: usize| -> (i64, i64) {
        let c = &coo.coords[e * order..(e + 1) * order];
        (
            c.first().copied().unwrap_or(0),
            c.get(1).copied().unwrap_or(0),
        )
    };
    let dense = match layout {
        MtxLayout::Coordinate => None,
        MtxLayout::Array => {
            let len = rows
                .checked_mul(cols)
                .filter(|&n| n <= 1 << 31)
                .ok_or_else(|| {
                    IoError::invalid(
                        path,
                        format!(
                            "a {rows} x {cols} matrix is too large for the dense `array` layout"
                        ),
                    )
                })?;
            let mut dense = vec![0.0f64; len];
            for e in 0..coo.len() {
                let (i, j) = at(e);
                dense[j as usize * rows + i as usize] += coo.values[e];
            }
            Some(dense)
        }
    };
    let mut out = TextOut::create(path)?;
    out.bytes(b"%%MatrixMarket matrix ");
    out.bytes(layout.as_str().as_bytes());
    out.bytes(b" real general");
    out.newline()?;
    for comment in &options.comments {
        for line in comment.lines() {
            out.bytes(b"%");
            out.bytes(line.as_bytes());
            out.newline()?;
        }
    }
    out.int(rows as i64);
    out.bytes(b" ");
    out.int(cols as i64);
    match dense {
        None => {
            out.bytes(b" ");
            out.int(coo.len() as i64);
            out.newline()?;
            for e in 0..coo.len() {
                let (i, j) = at(e);
                out.int(i + 1);
                out.bytes(b" ");
                out.int(j + 1);
                out.bytes(b" ");
                out.float(coo.values[e]);
                out.newline()?;
            }
        }
        Some(dense) => {
            out.newline()?;
            for v in dense {
                out.float(v);
                out.newline()?;
            }
        }
    }
    out.finish()
}

/// Write a tensor of order 0, 1 or 2 as MatrixMarket (its stored components: the padding of
/// ELL, DIA, BCSR and dense formats becomes explicit zeros in the coordinate layout).
pub fn write_matrix_market_tensor(
    path: impl AsRef<Path>,
    tensor: &Tensor,
    options: &MtxWriteOptions,
) -> Result<(), IoError> {
    write_matrix_market(path, &tensor.to_coo(), options)
}
