//! FROSTT (`.tns`) reading and writing: one entry per line, `i1 ... iN value`, 1-based,
//! no header. `#` starts a comment that runs to the end of the line; blank lines are
//! skipped. The order is the number of fields of the first entry minus one, so a file whose
//! lines hold a value and no indices is an order-0 tensor (a scalar). As for every order,
//! several lines at the same coordinates are duplicates, summed when the entries are stored:
//! a scalar file with several value lines holds their sum.

use std::path::Path;

use super::scan::{
    concat_entries, count_fields, field_text, for_each_line, parallelism, parse_f64, parse_u64,
    read_head, run_pieces, skip_blanks, split_lines, stream_lines, Rejected, TextOut,
};
use super::{read_bytes, IoError};
use crate::tensor::Coo;

/// Read a FROSTT file. Without `dims`, each dimension is the largest index of its mode;
/// with `dims`, their number must equal the file's order and every index must fit.
pub fn read_tns(path: impl AsRef<Path>, dims: Option<&[usize]>) -> Result<Coo, IoError> {
    let path = path.as_ref();
    if let Some(streamed) = stream_tns(path, dims)? {
        return Ok(streamed);
    }
    let bytes = read_bytes(path)?;
    parse_tns(path, &bytes, dims)
}

/// A large file, its entries streamed ([`stream_lines`]). `None` when the file is small,
/// its first entry is not in its first bytes, or it is rejected anywhere: read whole, it
/// then says where and why.
fn stream_tns(path: &Path, dims: Option<&[usize]>) -> Result<Option<Coo>, IoError> {
    let Some((head, len)) = read_head(path)? else {
        return Ok(None);
    };
    let Ok(Some(entries)) = EntryLines::find(path, &head, dims) else {
        return Ok(None);
    };
    // The head may end inside the first entry, whose fields would then be miscounted.
    if memchr::memchr(b'\n', &head[entries.offset..]).is_none() {
        return Ok(None);
    }
    let streamed = stream_lines(
        path,
        entries.offset as u64,
        len,
        |bytes| entries.empty_piece(usize::try_from(bytes).unwrap_or(usize::MAX)),
        |lines, piece| entries.parse(lines, piece).map_err(|_| Rejected),
    )?;
    Ok(streamed.ok().map(|pieces| entries.coo(pieces)))
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

/// How a file's entry lines are parsed, fixed by its first entry.
struct EntryLines<'d> {
    /// Fields on an entry line: the indices and a value.
    fields: usize,
    order: usize,
    /// The first entry's line number and offset.
    first_line: usize,
    offset: usize,
    /// The largest index of each mode.
    limits: Vec<u64>,
    dims: Option<&'d [usize]>,
}

impl<'d> EntryLines<'d> {
    /// The first entry in `bytes` and what it fixes; `None` when there is none.
    fn find(
        path: &Path,
        bytes: &[u8],
        dims: Option<&'d [usize]>,
    ) -> Result<Option<EntryLines<'d>>, IoError> {
        let mut offset = 0usize;
        let mut line_no = 0usize;
        while offset < bytes.len() {
            let rest = &bytes[offset..];
            let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            line_no += 1;
            let fields = count_fields(content(&rest[..end]));
            if fields > 0 {
                return EntryLines::fixed_by(path, fields, line_no, offset, dims).map(Some);
            }
            offset += end + 1;
        }
        Ok(None)
    }

    fn fixed_by(
        path: &Path,
        fields: usize,
        first_line: usize,
        offset: usize,
        dims: Option<&'d [usize]>,
    ) -> Result<EntryLines<'d>, IoError> {
        let order = fields - 1;
        if let Some(d) = dims {
            if d.len() != order {
                return Err(IoError::parse(
                    path,
                    first_line,
                    format!(
                        "the file has order {order} ({order} indices per line), but {} dimensions were given",
                        d.len()
                    ),
                ));
            }
        }
        let limits = match dims {
            Some(d) => d.iter().map(|&n| n as u64).collect(),
            None => vec![i64::MAX as u64; order],
        };
        Ok(EntryLines {
            fields,
            order,
            first_line,
            offset,
            limits,
            dims,
        })
    }

    /// A piece with room for the entries of `bytes` bytes of lines.
    fn empty_piece(&self, bytes: usize) -> Piece {
        let cap = bytes / (2 * self.fields + 2) + 1;
        Piece {
            coords: Vec::with_capacity(cap * self.order),
            values: Vec::with_capacity(cap),
            max: vec![0u64; self.order],
            lines: 0,
        }
    }

    /// Parse whole lines into `piece`; an error's line is counted within `lines`.
    fn parse(&self, lines: &[u8], piece: &mut Piece) -> Result<(), (usize, String)> {
        let (fields, order, first_line) = (self.fields, self.order, self.first_line);
        let (coords, values, max) = (&mut piece.coords, &mut piece.values, &mut piece.max);
        let counted = for_each_line(lines, |line| {
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
            for (m, (most, &limit)) in max.iter_mut().zip(&self.limits).enumerate() {
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
                if v > limit {
                    return Err(match self.dims {
                        Some(_) => format!(
                            "index {v} in column {} exceeds the dimension {limit}",
                            m + 1,
                        ),
                        None => format!("index {v} in column {} is too large", m + 1),
                    });
                }
                *most = (*most).max(v);
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
        piece.lines += counted;
        Ok(())
    }

    /// The coordinate list of all pieces, in order.
    fn coo(&self, pieces: Vec<Piece>) -> Coo {
        let dims = match self.dims {
            Some(d) => d.to_vec(),
            None => (0..self.order)
                .map(|m| pieces.iter().map(|p| p.max[m]).max().unwrap_or(0) as usize)
                .collect(),
        };
        let (coords, values) = concat_entries(pieces.into_iter().map(|p| (p.coords, p.values)));
        Coo {
            dims,
            coords,
            values,
        }
    }
}

/// Parse the bytes of a FROSTT file; `path` only names it in errors.
pub fn parse_tns(
    path: impl AsRef<Path>,
    bytes: &[u8],
    dims: Option<&[usize]>,
) -> Result<Coo, IoError> {
    let path = path.as_ref();
    let Some(entries) = EntryLines::find(path, bytes, dims)? else {
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
    let body = &bytes[entries.offset..];
    let pieces = split_lines(body, parallelism(body.len()));
    let results = run_pieces(&pieces, |lines| {
        let mut piece = entries.empty_piece(lines.len());
        entries.parse(lines, &mut piece).map(|()| piece)
    });
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
                    entries.first_line + lines_before + line - 1,
                    message,
                ))
            }
        }
    }
    Ok(entries.coo(parts))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_files_are_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("large.tns");
        let mut text = String::from("# made by a test\n\n");
        let mut expected = Coo {
            dims: vec![1000, 700, 13],
            ..Coo::default()
        };
        for k in 0..500_000i64 {
            let (i, j, l) = (k % 1000, k * 3 % 700, k % 13);
            let v = (k % 999) as f64 * 0.5 - 7.0;
            text.push_str(&format!("{} {} {}\t{v} # entry\n", i + 1, j + 1, l + 1));
            if k % 100_000 == 7 {
                text.push_str("\n# a comment among the entries\n");
            }
            expected.coords.extend([i, j, l]);
            expected.values.push(v);
        }
        assert!(text.len() as u64 > crate::io::scan::STREAM_FROM);
        std::fs::write(&path, &text).unwrap();
        let streamed = stream_tns(&path, None).unwrap().expect("streamed");
        assert!(streamed == expected);
        let given = [1000, 800, 20];
        let sized = stream_tns(&path, Some(&given)).unwrap().expect("streamed");
        assert_eq!(sized.dims, given);
        assert!(sized.coords == expected.coords);
        // Beyond the given dimensions, the whole file is read to say where.
        assert!(stream_tns(&path, Some(&[1000, 600, 13])).unwrap().is_none());
        assert!(parse_tns(&path, text.as_bytes(), None).unwrap() == expected);
    }
}
