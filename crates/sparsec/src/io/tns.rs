//! FROSTT (`.tns`) reading and writing: one entry per line, `i1 ... iN value`, 1-based,
//! no header. `#` starts a comment that runs to the end of the line; blank lines are
//! skipped. The order is the number of fields of the first entry minus one, so a file whose
//! lines hold a value and no indices is an order-0 tensor (a scalar). As for every order,
//! several lines at the same coordinates are duplicates, summed when the entries are stored:
//! a scalar file with several value lines holds their sum.

use std::path::Path;

use super::scan::{
    concat, count_fields, field_text, for_each_line, parallelism, parse_f64, parse_u64, run_pieces,
    skip_blanks, split_lines, TextOut,
};
use super::{read_bytes, IoError};
use crate::tensor::Coo;

/// Read a FROSTT file. Without `dims`, each dimension is the largest index of its mode;
/// with `dims`, their number must equal the file's order and every index must fit.
pub fn read_tns(path: impl AsRef<Path>, dims: Option<&[usize]>) -> Result<Coo, IoError> {
    let path = path.as_ref();
    let bytes = read_bytes(path)?;
    parse_tns(path, &bytes, dims)
}

/// The part of a line before any `#` comment.
#[inline(always)]
fn content(line: &[u8]) -> &[u8] {
    match memchr::memchr(b'#', line) {
        Some(k) => &line[..k],
        None => line,
    }
}

struct Piece {
    coords: Vec<i64>,
    values: Vec<f64>,
    max: Vec<u64>,
    lines: usize,
}

/// Parse the bytes of a FROSTT file; `path` only names it in errors.
pub fn parse_tns(
    path: impl AsRef<Path>,
    bytes: &[u8],
    dims: Option<&[usize]>,
) -> Result<Coo, IoError> {
    let path = path.as_ref();
    // Find the first entry: it fixes the order.
    let mut offset = 0usize;
    let mut line_no = 0usize;
    let mut first = None;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        line_no += 1;
        let fields = count_fields(content(&rest[..end]));
        if fields > 0 {
            first = Some(fields);
            break;
        }
        offset += end + 1;
    }
    let Some(fields) = first else {
        return match dims {
            Some(d) => Ok(Coo {
                dims: d.to_vec(),
                coords: vec![],
                values: vec![],
            }),
            None => Err(IoError::invalid(
                path,
                "no entries, so the order and dimensions are unknown (give the dimensions)",
            )),
        };
    };
    let order = fields - 1;
    if let Some(d) = dims {
        if d.len() != order {
            return Err(IoError::parse(
                path,
                line_no,
                format!(
                    "the file has order {order} ({order} indices per line), but {} dimensions were given",
                    d.len()
                ),
            ));
        }
    }
    let first_line = line_no;
    let limits: Vec<u64> = match dims {
        Some(d) => d.iter().map(|&n| n as u64).collect(),
        None => vec![i64::MAX as u64; order],
    };
    let body = &bytes[offset..];
    let pieces = split_lines(body, parallelism(body.len()));
    let parse_piece = |piece: &[u8]| -> Result<Piece, (usize, String)> {
        let cap = piece.len() / (2 * fields + 2) + 1;
        let mut coords = Vec::with_capacity(cap * order);
        let mut values = Vec::with_capacity(cap);
        let mut max = vec![0u64; order];
        let lines = for_each_line(piece, |line| {
            let line = content(line);
            let mut i = skip_blanks(line, 0);
            if i == line.len() {
                return Ok(());
            }
            let columns = |line: &[u8]| {
                let found = count_fields(line);
                (found != fields).then(|| match order {
                    0 => format!(
                        "expected 1 field (a value and no indices, like line {first_line}: the file holds a scalar), found {found}"
                    ),
                    _ => format!(
                        "expected {fields} fields ({order} indices and a value, like line {first_line}), found {found}"
                    ),
                })
            };
            for m in 0..order {
                i = skip_blanks(line, i);
                let Some((v, j)) = (i < line.len()).then(|| parse_u64(line, i)).flatten() else {
                    return Err(columns(line).unwrap_or_else(|| {
                        format!(
                            "index `{}` in column {} is not a positive integer",
                            field_text(line, i),
                            m + 1
                        )
                    }));
                };
                if v == 0 {
                    return Err(format!(
                        "index 0 in column {} is out of range (FROSTT indices are 1-based)",
                        m + 1
                    ));
                }
                if v > limits[m] {
                    return Err(match dims {
                        Some(_) => format!(
                            "index {v} in column {} exceeds the dimension {}",
                            m + 1,
                            limits[m]
                        ),
                        None => format!("index {v} in column {} is too large", m + 1),
                    });
                }
                max[m] = max[m].max(v);
                coords.push(v as i64 - 1);
                i = j;
            }
            i = skip_blanks(line, i);
            let Some((v, j)) = (i < line.len()).then(|| parse_f64(line, i)).flatten() else {
                return Err(columns(line).unwrap_or_else(|| {
                    format!("value `{}` is not a number", field_text(line, i))
                }));
            };
            if skip_blanks(line, j) != line.len() {
                return Err(columns(line).unwrap_or_default());
            }
            values.push(v);
            Ok(())
        })?;
        Ok(Piece {
            coords,
            values,
            max,
            lines,
        })
    };
    let results = run_pieces(&pieces, parse_piece);
    let mut lines_before = 0;
    let mut parts = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(p) => {
                lines_before += p.lines;
                parts.push(p);
            }
            Err((line, message)) => {
                return Err(IoError::parse(
                    path,
                    first_line + lines_before + line - 1,
                    message,
                ))
            }
        }
    }
    let dims = match dims {
        Some(d) => d.to_vec(),
        None => (0..order)
            .map(|m| parts.iter().map(|p| p.max[m]).max().unwrap_or(0) as usize)
            .collect(),
    };
    let (coords, values): (Vec<_>, Vec<_>) =
        parts.into_iter().map(|p| (p.coords, p.values)).unzip();
    Ok(Coo {
        dims,
        coords: concat(coords),
        values: concat(values),
    })
}

/// Write a coordinate list as FROSTT text (1-based indices, one entry per line; an
/// order-0 tensor's entry is a line holding only its value).
pub fn write_tns(path: impl AsRef<Path>, coo: &Coo) -> Result<(), IoError> {
    let path = path.as_ref();
    coo.validate().map_err(|e| {
        IoError::invalid(
            path,
            format!("cannot write an invalid coordinate list: {e}"),
        )
    })?;
    let mut out = TextOut::create(path)?;
    let order = coo.order();
    for (e, &v) in coo.values.iter().enumerate() {
        for &c in &coo.coords[e * order..(e + 1) * order] {
            out.int(c + 1);
            out.bytes(b" ");
        }
        out.float(v);
        out.newline()?;
    }
    out.finish()
}
