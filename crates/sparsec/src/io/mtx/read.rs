//! Reading MatrixMarket: the preamble (banner, comments, size line), then the entries,
//! parsed in line-aligned pieces on several threads, or streamed from the file when it is
//! large ([`stream_lines`]).

use std::path::Path;

use super::{MatrixMarket, MtxField, MtxHeader, MtxLayout, MtxSymmetry};
use crate::io::scan::{
    concat_entries, count_fields, field_text, for_each_line, is_blank_line, parallelism, parse_f64,
    parse_int_value, parse_u64, read_head, run_pieces, skip_blanks, split_lines, stream_lines,
    Rejected,
};
use crate::io::{read_bytes, IoError};
use crate::tensor::Coo;

/// Read a MatrixMarket file.
pub fn read_matrix_market(path: impl AsRef<Path>) -> Result<MatrixMarket, IoError> {
    let path = path.as_ref();
    if let Some(streamed) = stream_matrix_market(path)? {
        return Ok(streamed);
    }
    let bytes = read_bytes(path)?;
    parse_matrix_market(path, &bytes)
}

/// A large coordinate file, its entries streamed ([`stream_lines`]). `None` when the
/// file is small, an array, or rejected anywhere: read whole, it then says where and why.
fn stream_matrix_market(path: &Path) -> Result<Option<MatrixMarket>, IoError> {
    let Some((head, len)) = read_head(path)? else {
        return Ok(None);
    };
    let Ok(preamble) = parse_preamble(path, &head) else {
        return Ok(None);
    };
    // The head may end inside the size line, which would then be read short (a longer
    // preamble is read with the whole file).
    let whole_size_line = head[..preamble.body_start].ends_with(b"\n");
    if preamble.header.layout != MtxLayout::Coordinate || !whole_size_line {
        return Ok(None);
    }
    let declared = preamble.header.stored_entries;
    let body = preamble.body(path);
    let body_len = len - preamble.body_start as u64;
    let share = |bytes: u64| {
        let expected = expected_entries(declared, bytes, body_len);
        body.empty_piece(expected, usize::try_from(bytes).unwrap_or(usize::MAX))
    };
    let streamed = stream_lines(
        path,
        preamble.body_start as u64,
        len,
        share,
        |lines, piece| body.coordinate_lines(lines, piece).map_err(|_| Rejected),
    )?;
    let Ok(pieces) = streamed else {
        return Ok(None);
    };
    if pieces.iter().map(|p| p.entries).sum::<usize>() != declared {
        return Ok(None);
    }
    let (coords, values) = Piece::concat(pieces);
    let (rows, cols) = (preamble.header.rows, preamble.header.cols);
    Ok(Some(MatrixMarket {
        coo: coo_of(rows, cols, coords, values),
        header: preamble.header,
    }))
}

/// How many entries `bytes` of a body of `body_len` bytes should hold when the size line
/// declares `declared`, with a little room over. Saturates: a size line may declare up to
/// `u64::MAX` entries, and the room is capped by the bytes anyway ([`Body::empty_piece`]).
pub(super) fn expected_entries(declared: usize, bytes: u64, body_len: u64) -> usize {
    let share = declared as u128 * bytes as u128 / body_len.max(1) as u128;
    usize::try_from(share)
        .unwrap_or(usize::MAX)
        .saturating_add(16)
}

/// Parse the bytes of a MatrixMarket file; `path` only names it in errors.
pub fn parse_matrix_market(path: impl AsRef<Path>, bytes: &[u8]) -> Result<MatrixMarket, IoError> {
    let path = path.as_ref();
    let mut preamble = parse_preamble(path, bytes)?;
    let body = preamble.body(path);
    let entries = &bytes[preamble.body_start..];
    let (rows, cols) = (preamble.header.rows, preamble.header.cols);
    let coo = match preamble.header.layout {
        MtxLayout::Coordinate => {
            let (coords, values) = body.coordinate(entries, preamble.header.stored_entries)?;
            coo_of(rows, cols, coords, values)
        }
        MtxLayout::Array => {
            let (coords, values, stored) = body.array(entries)?;
            preamble.header.stored_entries = stored;
            coo_of(rows, cols, coords, values)
        }
    };
    Ok(MatrixMarket {
        coo,
        header: preamble.header,
    })
}

/// What a file says before its entries, and where they start.
pub(super) struct Preamble {
    /// The header; its `stored_entries` are those the size line declares (coordinate
    /// layout), 0 in the array layout until the values are counted.
    pub(super) header: MtxHeader,
    /// The offset of the line after the size line.
    pub(super) body_start: usize,
    /// The size line's number.
    size_line: usize,
}

impl Preamble {
    /// What parsing the entry lines needs.
    pub(super) fn body<'a>(&self, path: &'a Path) -> Body<'a> {
        Body {
            path,
            first_line: self.size_line + 1,
            size_line: self.size_line,
            rows: self.header.rows as u64,
            cols: self.header.cols as u64,
            field: self.header.field,
            symmetry: self.header.symmetry,
        }
    }
}

/// Parse the banner, comments and size line at the start of `bytes`.
pub(super) fn parse_preamble(path: &Path, bytes: &[u8]) -> Result<Preamble, IoError> {
    let mut lines = LineReader {
        bytes,
        pos: 0,
        line: 0,
    };
    let banner = lines.next().ok_or_else(|| {
        IoError::parse(
            path,
            1,
            "empty file; expected a `%%MatrixMarket matrix coordinate|array FIELD SYMMETRY` header",
        )
    })?;
    let (layout, field, symmetry) = parse_banner(path, banner)?;

    let mut comments = Vec::new();
    let size_line = loop {
        let Some(line) = lines.next() else {
            return Err(IoError::parse(
                path,
                lines.line.max(1),
                "missing size line: the file ends before `ROWS COLS ENTRIES`",
            ));
        };
        let start = skip_blanks(line, 0);
        if start < line.len() && line[start] == b'%' {
            let text = &line[start + 1..];
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            comments.push(String::from_utf8_lossy(text).into_owned());
        } else if !is_blank_line(line) {
            break line;
        }
    };
    let size_line_no = lines.line;
    let size =
        parse_size_line(size_line, layout).map_err(|m| IoError::parse(path, size_line_no, m))?;
    let (rows, cols) = (size[0], size[1]);
    if symmetry != MtxSymmetry::General && rows != cols {
        return Err(IoError::parse(
            path,
            size_line_no,
            format!("a {symmetry} matrix must be square, but the size line says {rows} x {cols}"),
        ));
    }
    let (rows, cols) = match (usize::try_from(rows), usize::try_from(cols)) {
        (Ok(r), Ok(c)) if r < i64::MAX as usize && c < i64::MAX as usize => (r, c),
        _ => {
            return Err(IoError::parse(
                path,
                size_line_no,
                format!("dimensions {rows} x {cols} are too large"),
            ))
        }
    };
    let stored_entries = match layout {
        MtxLayout::Coordinate => usize::try_from(size[2]).unwrap_or(usize::MAX),
        MtxLayout::Array => 0,
    };
    Ok(Preamble {
        header: MtxHeader {
            layout,
            field,
            symmetry,
            rows,
            cols,
            stored_entries,
            comments,
        },
        body_start: lines.pos,
        size_line: size_line_no,
    })
}

pub(super) fn coo_of(rows: usize, cols: usize, coords: Vec<i64>, values: Vec<f64>) -> Coo {
    Coo {
        dims: vec![rows, cols],
        coords,
        values,
    }
}

/// Sequential line reader for the header part.
struct LineReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> LineReader<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let rest = &self.bytes[self.pos..];
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        self.pos += (end + 1).min(rest.len());
        self.line += 1;
        Some(&rest[..end])
    }
}

fn parse_banner(path: &Path, line: &[u8]) -> Result<(MtxLayout, MtxField, MtxSymmetry), IoError> {
    let err = |m: String| IoError::parse(path, 1, m);
    let text = String::from_utf8_lossy(line);
    let text = text.trim_start_matches('\u{feff}');
    let words: Vec<String> = text
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    if words.first().map(String::as_str) != Some("%%matrixmarket") {
        return Err(err(format!(
            "missing header: the first line must be `%%MatrixMarket matrix coordinate|array FIELD SYMMETRY`, found `{}`",
            shorten(text)
        )));
    }
    if words.len() != 5 {
        return Err(err(format!(
            "the header has {} words; expected `%%MatrixMarket matrix coordinate|array FIELD SYMMETRY`",
            words.len()
        )));
    }
    if words[1] != "matrix" {
        return Err(err(format!(
            "unknown object `{}`; only `matrix` is supported",
            words[1]
        )));
    }
    let layout = match words[2].as_str() {
        "coordinate" => MtxLayout::Coordinate,
        "array" => MtxLayout::Array,
        other => {
            return Err(err(format!(
                "unknown format `{other}`; expected `coordinate` or `array`"
            )))
        }
    };
    let field = match words[3].as_str() {
        "real" | "double" => MtxField::Real,
        "integer" => MtxField::Integer,
        "pattern" => MtxField::Pattern,
        "complex" => return Err(err("complex values are not supported".into())),
        other => {
            return Err(err(format!(
            "unknown field `{other}`; expected `real`, `double`, `integer`, `pattern` or `complex`"
        )))
        }
    };
    let symmetry = match words[4].as_str() {
        "general" => MtxSymmetry::General,
        "symmetric" => MtxSymmetry::Symmetric,
        "skew-symmetric" => MtxSymmetry::SkewSymmetric,
        "hermitian" => MtxSymmetry::Hermitian,
        other => {
            return Err(err(format!(
                "unknown symmetry `{other}`; expected `general`, `symmetric`, `skew-symmetric` or `hermitian`"
            )))
        }
    };
    if field == MtxField::Pattern && layout == MtxLayout::Array {
        return Err(err(
            "`pattern` is not allowed with the `array` format".into()
        ));
    }
    if field == MtxField::Pattern && symmetry == MtxSymmetry::SkewSymmetric {
        return Err(err("a `pattern` matrix cannot be `skew-symmetric`".into()));
    }
    Ok((layout, field, symmetry))
}

fn shorten(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() > 60 {
        format!("{}...", t.chars().take(60).collect::<String>())
    } else {
        t.to_string()
    }
}

fn parse_size_line(line: &[u8], layout: MtxLayout) -> Result<Vec<u64>, String> {
    let (want, shape) = match layout {
        MtxLayout::Coordinate => (3, "ROWS COLS ENTRIES"),
        MtxLayout::Array => (2, "ROWS COLS"),
    };
    let found = count_fields(line);
    if found != want {
        return Err(format!(
            "the size line must be `{shape}` ({want} numbers), found {found} fields"
        ));
    }
    let mut out = Vec::with_capacity(want);
    let mut i = skip_blanks(line, 0);
    for _ in 0..want {
        let (v, j) = parse_u64(line, i).ok_or_else(|| {
            format!(
                "the size line must be `{shape}`, but `{}` is not a non-negative integer",
                field_text(line, i)
            )
        })?;
        out.push(v);
        i = skip_blanks(line, j);
    }
    Ok(out)
}

/// The entry lines of a file and what is needed to parse them.
pub(super) struct Body<'a> {
    path: &'a Path,
    pub(super) first_line: usize,
    size_line: usize,
    rows: u64,
    cols: u64,
    field: MtxField,
    symmetry: MtxSymmetry,
}

/// Result of parsing one piece of a coordinate body.
pub(super) struct Piece {
    pub(super) coords: Vec<i64>,
    pub(super) values: Vec<f64>,
    pub(super) entries: usize,
    lines: usize,
}

impl Piece {
    /// The coordinates and values of all pieces, in order.
    fn concat(pieces: Vec<Piece>) -> (Vec<i64>, Vec<f64>) {
        concat_entries(pieces.into_iter().map(|p| (p.coords, p.values)))
    }
}

impl Body<'_> {
    fn columns_message(&self, line: &[u8]) -> String {
        let (n, what) = match self.field {
            MtxField::Pattern => (2, "row, column"),
            _ => (3, "row, column, value"),
        };
        format!("expected {n} fields ({what}), found {}", count_fields(line))
    }

    fn value(&self, line: &[u8], i: usize) -> Result<(f64, usize), String> {
        if self.field == MtxField::Pattern {
            return Ok((1.0, i));
        }
        let j = skip_blanks(line, i);
        if j == line.len() {
            return Err(self.columns_message(line));
        }
        match self.field {
            MtxField::Pattern => Ok((1.0, i)),
            MtxField::Real => parse_f64(line, j)
                .ok_or_else(|| format!("value `{}` is not a number", field_text(line, j))),
            MtxField::Integer => parse_int_value(line, j).ok_or_else(|| {
                format!(
                    "value `{}` is not an integer (the header says `integer`)",
                    field_text(line, j)
                )
            }),
        }
    }

    fn index(&self, line: &[u8], i: usize, what: &str, size: u64) -> Result<(u64, usize), String> {
        let i = skip_blanks(line, i);
        if i == line.len() {
            return Err(self.columns_message(line));
        }
        let (v, j) = parse_u64(line, i).ok_or_else(|| {
            format!(
                "{what} index `{}` is not a positive integer",
                field_text(line, i)
            )
        })?;
        if v == 0 || v > size {
            return Err(format!(
                "{what} index {v} is out of range 1..={size} (MatrixMarket indices are 1-based)"
            ));
        }
        Ok((v - 1, j))
    }

    /// The entry on a line that starts (after blanks) at `i`, or `None` when anything is
    /// wrong with it (then [`Body::entry_error`] says what).
    #[inline(always)]
    fn entry(&self, line: &[u8], i: usize) -> Option<(u64, u64, f64)> {
        let (r, i) = parse_u64(line, i)?;
        let (c, i) = parse_u64(line, skip_blanks(line, i))?;
        let (v, i) = match self.field {
            MtxField::Pattern => (1.0, i),
            MtxField::Real => parse_f64(line, skip_blanks(line, i))?,
            MtxField::Integer => parse_int_value(line, skip_blanks(line, i))?,
        };
        let ok = skip_blanks(line, i) == line.len()
            && r.wrapping_sub(1) < self.rows
            && c.wrapping_sub(1) < self.cols;
        if ok {
            Some((r - 1, c - 1, v))
        } else {
            None
        }
    }

    /// What is wrong with an entry line that [`Body::entry`] rejected.
    #[cold]
    #[inline(never)]
    fn entry_error(&self, line: &[u8], i: usize) -> String {
        let check = || -> Result<(), String> {
            let (_, i) = self.index(line, i, "row", self.rows)?;
            let (_, i) = self.index(line, i, "column", self.cols)?;
            let (_, i) = self.value(line, i)?;
            if skip_blanks(line, i) != line.len() {
                return Err(self.columns_message(line));
            }
            Ok(())
        };
        check()
            .err()
            .unwrap_or_else(|| format!("malformed entry `{}`", String::from_utf8_lossy(line)))
    }

    /// A piece with room for about `expected` entries in `bytes` bytes of lines.
    pub(super) fn empty_piece(&self, expected: usize, bytes: usize) -> Piece {
        let mirrored = self.symmetry != MtxSymmetry::General;
        let cap = expected.min(bytes / 4 + 1) * if mirrored { 2 } else { 1 };
        Piece {
            coords: Vec::with_capacity(cap * 2),
            values: Vec::with_capacity(cap),
            entries: 0,
            lines: 0,
        }
    }

    /// Parse one piece of a coordinate body.
    fn coordinate_piece(&self, piece: &[u8], expected: usize) -> Result<Piece, (usize, String)> {
        let mut parsed = self.empty_piece(expected, piece.len());
        self.coordinate_lines(piece, &mut parsed)?;
        Ok(parsed)
    }

    /// Parse whole entry lines of a coordinate body into `piece`; an error's line is
    /// counted within `lines`.
    pub(super) fn coordinate_lines(
        &self,
        lines: &[u8],
        piece: &mut Piece,
    ) -> Result<(), (usize, String)> {
        let mirrored = self.symmetry != MtxSymmetry::General;
        let (coords, values) = (&mut piece.coords, &mut piece.values);
        let mut entries = 0usize;
        let negate = self.symmetry == MtxSymmetry::SkewSymmetric;
        let counted = for_each_line(lines, |line| {
            let i = skip_blanks(line, 0);
            if i == line.len() || line[i] == b'%' {
                return Ok(());
            }
            let Some((r, c, v)) = self.entry(line, i) else {
                return Err(self.entry_error(line, i));
            };
            let (r, c) = (r as i64, c as i64);
            coords.extend_from_slice(&[r, c]);
            values.push(v);
            if mirrored && r != c {
                coords.extend_from_slice(&[c, r]);
                values.push(if negate { -v } else { v });
            }
            entries += 1;
            Ok(())
        })?;
        piece.entries += entries;
        piece.lines += counted;
        Ok(())
    }

    fn coordinate(&self, body: &[u8], declared: usize) -> Result<(Vec<i64>, Vec<f64>), IoError> {
        let pieces = split_lines(body, parallelism(body.len()));
        let share = |p: &[u8]| expected_entries(declared, p.len() as u64, body.len() as u64);
        let results = run_pieces(&pieces, |p| self.coordinate_piece(p, share(p)));
        let mut lines_before = 0usize;
        let mut parts = Vec::with_capacity(results.len());
        for r in results {
            match r {
                Ok(piece) => {
                    lines_before += piece.lines;
                    parts.push(piece);
                }
                Err((line, message)) => {
                    return Err(IoError::parse(
                        self.path,
                        self.first_line + lines_before + line - 1,
                        message,
                    ))
                }
            }
        }
        let total: usize = parts.iter().map(|p| p.entries).sum();
        if total > declared {
            return Err(self.too_many(&pieces, &parts, declared));
        }
        if total < declared {
            return Err(IoError::parse(
                self.path,
                (self.first_line + lines_before).saturating_sub(1).max(self.size_line),
                format!(
                    "the size line (line {}) declares {declared} entries, but the file ends after {total} (truncated?)",
                    self.size_line
                ),
            ));
        }
        Ok(Piece::concat(parts))
    }

    #[cold]
    fn too_many(&self, pieces: &[&[u8]], parts: &[Piece], declared: usize) -> IoError {
        let mut seen = 0usize;
        let mut lines_before = 0usize;
        for (piece, part) in pieces.iter().zip(parts) {
            if seen + part.entries > declared {
                let mut line_no = 0;
                let mut count = seen;
                let _ = for_each_line(piece, |line| {
                    line_no += 1;
                    let i = skip_blanks(line, 0);
                    if i < line.len() && line[i] != b'%' {
                        count += 1;
                        if count > declared {
                            return Err(String::new());
                        }
                    }
                    Ok(())
                });
                return IoError::parse(
                    self.path,
                    self.first_line + lines_before + line_no - 1,
                    format!(
                        "more entries than the {declared} declared on the size line (line {})",
                        self.size_line
                    ),
                );
            }
            seen += part.entries;
            lines_before += part.lines;
        }
        IoError::parse(self.path, self.size_line, "more entries than declared")
    }

    /// Parse an array body: values column by column (one triangle when symmetric).
    fn array(&self, body: &[u8]) -> Result<(Vec<i64>, Vec<f64>, usize), IoError> {
        let n = self.rows as u128;
        let expected: u128 = match self.symmetry {
            MtxSymmetry::General => n * self.cols as u128,
            MtxSymmetry::Symmetric | MtxSymmetry::Hermitian => n * (n + 1) / 2,
            MtxSymmetry::SkewSymmetric => n * n.saturating_sub(1) / 2,
        };
        let mirrored = self.symmetry != MtxSymmetry::General;
        let negate = self.symmetry == MtxSymmetry::SkewSymmetric;
        let cap =
            (expected.min(body.len() as u128 / 2 + 1) as usize) * if mirrored { 2 } else { 1 };
        let mut coords = Vec::with_capacity(cap * 2);
        let mut values = Vec::with_capacity(cap);
        let (rows, skew) = (self.rows, negate as u64);
        let (mut i, mut j) = (skew, 0u64);
        let mut count: u128 = 0;
        let result = for_each_line(body, |line| {
            let start = skip_blanks(line, 0);
            if start == line.len() || line[start] == b'%' {
                return Ok(());
            }
            if count == expected {
                return Err(format!(
                    "more values than the {expected} a {} x {} {} array holds (size line {})",
                    self.rows, self.cols, self.symmetry, self.size_line
                ));
            }
            let fields = count_fields(line);
            if fields != 1 {
                return Err(format!(
                    "expected 1 field (one value per line in the array format), found {fields}"
                ));
            }
            let (v, _) = self.value(line, start)?;
            coords.extend_from_slice(&[i as i64, j as i64]);
            values.push(v);
            if mirrored && i != j {
                coords.extend_from_slice(&[j as i64, i as i64]);
                values.push(if negate { -v } else { v });
            }
            count += 1;
            i += 1;
            if i >= rows {
                j += 1;
                i = if mirrored { j + skew } else { 0 };
            }
            Ok(())
        });
        let lines = match result {
            Ok(lines) => lines,
            Err((line, message)) => {
                return Err(IoError::parse(
                    self.path,
                    self.first_line + line - 1,
                    message,
                ))
            }
        };
        if count < expected {
            return Err(IoError::parse(
                self.path,
                (self.first_line + lines).saturating_sub(1).max(self.size_line),
                format!(
                    "a {} x {} {} array holds {expected} values, but the file ends after {count} (truncated?)",
                    self.rows, self.cols, self.symmetry
                ),
            ));
        }
        Ok((coords, values, count as usize))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::io::scan::STREAM_FROM;

    /// Entries enough for a file above [`STREAM_FROM`] bytes.
    const ENTRIES: u64 = 1_000_000;

    /// A file of `ENTRIES` entries in `symmetry` (row `k % n`, column `k * 7 % n`, lower
    /// triangle first when not general), with comment and blank lines among the entries,
    /// `\r\n` endings on every third line and no final newline; and the coordinate list
    /// it holds, built independently of the reader.
    fn large_file(dir: &tempfile::TempDir, symmetry: &str, field: &str) -> (PathBuf, Coo) {
        let n = 5_000u64;
        let mut text = format!("%%MatrixMarket matrix coordinate {field} {symmetry}\n% made by a test\n{n} {n} {ENTRIES}\n");
        let mut expected = Coo {
            dims: vec![n as usize; 2],
            ..Coo::default()
        };
        for k in 0..ENTRIES {
            let (mut r, mut c) = (k % n, k * 7 % n);
            if symmetry != "general" && r < c {
                (r, c) = (c, r);
            }
            if symmetry == "skew-symmetric" && r == c {
                r = (r + 1) % n;
                (r, c) = (r.max(c), r.min(c));
            }
            let v = match field {
                "integer" => (k % 1000) as f64 - 100.0,
                _ => (k % 1000) as f64 * 0.25 - 100.0,
            };
            let end = if k % 3 == 0 { "\r\n" } else { "\n" };
            match field {
                "pattern" => text.push_str(&format!("{} {}{end}", r + 1, c + 1)),
                _ => text.push_str(&format!("{} {}  {v}{end}", r + 1, c + 1)),
            }
            if k % 100_000 == 5 {
                text.push_str("% a comment among the entries\n\n");
            }
            let v = if field == "pattern" { 1.0 } else { v };
            expected.coords.extend([r as i64, c as i64]);
            expected.values.push(v);
            if symmetry != "general" && r != c {
                expected.coords.extend([c as i64, r as i64]);
                expected
                    .values
                    .push(if symmetry == "skew-symmetric" { -v } else { v });
            }
        }
        let text = text.trim_end();
        assert!(text.len() as u64 > STREAM_FROM);
        let path = dir.path().join(format!("{symmetry}-{field}.mtx"));
        std::fs::write(&path, text).unwrap();
        (path, expected)
    }

    #[test]
    fn large_coordinate_files_are_streamed() {
        let dir = tempfile::tempdir().unwrap();
        for (symmetry, field) in [
            ("general", "real"),
            ("symmetric", "pattern"),
            ("skew-symmetric", "integer"),
        ] {
            let (path, expected) = large_file(&dir, symmetry, field);
            let streamed = stream_matrix_market(&path).unwrap().expect("streamed");
            assert!(streamed.coo == expected, "{symmetry} {field}");
            assert_eq!(streamed.header.stored_entries, ENTRIES as usize);
            assert_eq!(streamed.header.comments, [" made by a test"]);
            let whole = parse_matrix_market(&path, &std::fs::read(&path).unwrap()).unwrap();
            assert!(whole == streamed, "{symmetry} {field}");
        }
    }
}
