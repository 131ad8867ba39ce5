//! Byte-level scanning shared by the text readers: lines, fields, numbers, and splitting a
//! body into line-aligned chunks that are parsed on several threads.

use std::io::Write;
use std::path::Path;

use super::IoError;

/// Bytes below which a body is parsed on one thread.
const MIN_CHUNK: usize = 1 << 19;

#[inline(always)]
pub(crate) fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r' || b == 0x0b || b == 0x0c
}

/// Index of the first non-blank byte at or after `i`.
#[inline(always)]
pub(crate) fn skip_blanks(line: &[u8], mut i: usize) -> usize {
    while i < line.len() && is_blank(line[i]) {
        i += 1;
    }
    i
}

/// Index just past the field starting at `i`.
#[inline(always)]
pub(crate) fn field_end(line: &[u8], mut i: usize) -> usize {
    while i < line.len() && !is_blank(line[i]) {
        i += 1;
    }
    i
}

/// True when the line holds only blanks.
#[inline]
pub(crate) fn is_blank_line(line: &[u8]) -> bool {
    skip_blanks(line, 0) == line.len()
}

/// The field starting at `i`, for messages (lossy, shortened).
pub(crate) fn field_text(line: &[u8], i: usize) -> String {
    let end = field_end(line, i);
    let text = String::from_utf8_lossy(&line[i..end]);
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(40).collect::<String>())
    } else {
        text.into_owned()
    }
}

/// Number of whitespace-separated fields on the line.
pub(crate) fn count_fields(line: &[u8]) -> usize {
    let mut n = 0;
    let mut i = skip_blanks(line, 0);
    while i < line.len() {
        n += 1;
        i = skip_blanks(line, field_end(line, i));
    }
    n
}

/// An unsigned decimal integer starting at `i` that ends at a blank or the line's end.
/// Returns the value and the index past it, or `None` (not a number, or overflow).
#[inline(always)]
pub(crate) fn parse_u64(line: &[u8], i: usize) -> Option<(u64, usize)> {
    let mut j = i;
    let mut v: u64 = 0;
    while j < line.len() {
        let d = line[j].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        j += 1;
    }
    if j == i || (j < line.len() && !is_blank(line[j])) {
        return None;
    }
    if j - i > 19 {
        // Up to 19 digits cannot overflow; longer numbers are checked the slow way.
        return parse_u64_checked(&line[i..j]).map(|v| (v, j));
    }
    Some((v, j))
}

#[cold]
fn parse_u64_checked(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |v, &d| {
        v.checked_mul(10)?.checked_add((d - b'0') as u64)
    })
}

/// A signed decimal integer (as `f64`) starting at `i`.
#[inline(always)]
pub(crate) fn parse_int_value(line: &[u8], i: usize) -> Option<(f64, usize)> {
    let (negative, start) = match line.get(i) {
        Some(b'-') => (true, i + 1),
        Some(b'+') => (false, i + 1),
        _ => (false, i),
    };
    let (v, j) = parse_u64(line, start)?;
    let v = i64::try_from(v).ok()?;
    Some((if negative { -(v as f64) } else { v as f64 }, j))
}

/// A floating-point number starting at `i` that ends at a blank or the line's end. Also
/// accepts Fortran exponents (`1.5D+03`).
#[inline(always)]
pub(crate) fn parse_f64(line: &[u8], i: usize) -> Option<(f64, usize)> {
    if let Ok((v, n)) = fast_float2::parse_partial::<f64, _>(&line[i..]) {
        let j = i + n;
        if n > 0 && (j == line.len() || is_blank(line[j])) {
            return Some((v, j));
        }
    }
    parse_fortran_f64(line, i)
}

#[cold]
fn parse_fortran_f64(line: &[u8], i: usize) -> Option<(f64, usize)> {
    let end = field_end(line, i);
    let field: Vec<u8> = line[i..end]
        .iter()
        .map(|&b| if b == b'd' || b == b'D' { b'e' } else { b })
        .collect();
    if field == line[i..end] {
        return None;
    }
    fast_float2::parse::<f64, _>(&field).ok().map(|v| (v, end))
}

/// Call `f` on every line of `chunk` (without the `\n`). Returns the number of lines, or the
/// 1-based line (within the chunk) and message of the first error.
#[inline(always)]
pub(crate) fn for_each_line(
    chunk: &[u8],
    mut f: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<usize, (usize, String)> {
    let mut lines = 0;
    let mut start = 0;
    while start < chunk.len() {
        let end = memchr::memchr(b'\n', &chunk[start..]).map_or(chunk.len(), |k| start + k);
        lines += 1;
        f(&chunk[start..end]).map_err(|m| (lines, m))?;
        start = end + 1;
    }
    Ok(lines)
}

/// Split `body` into at most `parts` pieces that each end just after a `\n` (the last one
/// at the end of the body).
pub(crate) fn split_lines(body: &[u8], parts: usize) -> Vec<&[u8]> {
    let parts = parts.max(1);
    let mut pieces = Vec::with_capacity(parts);
    let mut start = 0;
    for p in 1..parts {
        let target = (body.len() * p / parts).max(start);
        if target >= body.len() {
            break;
        }
        let cut = match memchr::memchr(b'\n', &body[target..]) {
            Some(k) => target + k + 1,
            None => break,
        };
        pieces.push(&body[start..cut]);
        start = cut;
    }
    pieces.push(&body[start..]);
    pieces
}

/// How many pieces to parse a body of `len` bytes in.
pub(crate) fn parallelism(len: usize) -> usize {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads.min(len / MIN_CHUNK).clamp(1, 64)
}

/// Run `f` on every piece, in parallel when there are several, returning results in order.
pub(crate) fn run_pieces<T: Send>(pieces: &[&[u8]], f: impl Fn(&[u8]) -> T + Sync) -> Vec<T> {
    if pieces.len() == 1 {
        return vec![f(pieces[0])];
    }
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = pieces[1..]
            .iter()
            .map(|&piece| scope.spawn(move || f(piece)))
            .collect();
        let mut results = vec![f(pieces[0])];
        for h in handles {
            match h.join() {
                Ok(r) => results.push(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        results
    })
}

/// Concatenate per-piece vectors, growing the first one (a large reallocation remaps
/// pages instead of copying them).
pub(crate) fn concat<T: Copy>(parts: Vec<Vec<T>>) -> Vec<T> {
    let mut parts = parts.into_iter();
    let mut out = parts.next().unwrap_or_default();
    for p in parts {
        out.extend_from_slice(&p);
    }
    out
}

/// A buffered text writer that reports errors against the file's path.
pub(crate) struct TextOut<'p> {
    path: &'p Path,
    file: std::fs::File,
    buf: Vec<u8>,
    int: itoa::Buffer,
    float: ryu::Buffer,
}

impl<'p> TextOut<'p> {
    pub(crate) fn create(path: &'p Path) -> Result<TextOut<'p>, IoError> {
        let file = std::fs::File::create(path).map_err(|e| IoError::io(path, e))?;
        Ok(TextOut {
            path,
            file,
            buf: Vec::with_capacity(1 << 20),
            int: itoa::Buffer::new(),
            float: ryu::Buffer::new(),
        })
    }

    #[inline]
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub(crate) fn int(&mut self, v: i64) {
        let s = self.int.format(v);
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Shortest text that reads back to exactly `v`; integral values print without `.0`.
    #[inline]
    pub(crate) fn float(&mut self, v: f64) {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            let s = self.int.format(v as i64);
            if v == 0.0 && v.is_sign_negative() {
                self.buf.push(b'-');
            }
            self.buf.extend_from_slice(s.as_bytes());
        } else {
            let s = self.float.format(v);
            self.buf.extend_from_slice(s.as_bytes());
        }
    }

    /// End a line, flushing the buffer when it is large.
    #[inline]
    pub(crate) fn newline(&mut self) -> Result<(), IoError> {
        self.buf.push(b'\n');
        if self.buf.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.file
            .write_all(&self.buf)
            .map_err(|e| IoError::io(self.path, e))?;
        self.buf.clear();
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<(), IoError> {
        self.flush()?;
        self.file.flush().map_err(|e| IoError::io(self.path, e))
    }
}
