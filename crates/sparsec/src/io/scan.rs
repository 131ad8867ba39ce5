//! Byte-level scanning shared by the text readers: lines, fields, numbers, and splitting a
//! body into line-aligned chunks that are parsed on several threads, either from the
//! whole file in memory or, for a large file, each thread reading its own chunk.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::IoError;

/// Bytes below which a body is parsed on one thread.
const MIN_CHUNK: usize = 1 << 19;

/// Bytes from which a text file is streamed ([`stream_lines`]) rather than read whole.
pub(crate) const STREAM_FROM: u64 = 1 << 23;

/// Bytes a streaming thread reads at a time: few enough to stay in its core's cache while
/// they are parsed.
const BLOCK: usize = 1 << 18;

/// Bytes of a streamed file read first, for what comes before its entries (a header, or
/// the first entry, which fixes the order).
const HEAD: usize = 1 << 16;

/// Bytes read when looking for the start of the next line.
const PROBE: usize = 1 << 12;

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
pub(crate) fn run_pieces<P: Sync, T: Send>(pieces: &[P], f: impl Fn(&P) -> T + Sync) -> Vec<T> {
    if pieces.len() == 1 {
        return vec![f(&pieces[0])];
    }
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = pieces[1..]
            .iter()
            .map(|piece| scope.spawn(move || f(piece)))
            .collect();
        let mut results = vec![f(&pieces[0])];
        for h in handles {
            match h.join() {
                Ok(r) => results.push(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        results
    })
}

/// The first [`HEAD`] bytes of a file of at least [`STREAM_FROM`] bytes, and its length;
/// `None` for a smaller file.
pub(crate) fn read_head(path: &Path) -> Result<Option<(Vec<u8>, u64)>, IoError> {
    let (head, len) = read_prefix(path)?;
    Ok((len >= STREAM_FROM).then_some((head, len)))
}

/// The first [`HEAD`] bytes of a file (all of a shorter one), and its length.
pub(crate) fn read_prefix(path: &Path) -> Result<(Vec<u8>, u64), IoError> {
    let io = |e| IoError::io(path, e);
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut head = Vec::with_capacity(HEAD);
    file.take(HEAD as u64).read_to_end(&mut head).map_err(io)?;
    Ok((head, len))
}

/// Parse share `part` of `parts` of the lines of the file at `path` from byte `start` to
/// byte `len` (its length): the lines between the line starts nearest an even split by
/// bytes, as [`stream_lines`] splits a file among threads, here for one of several
/// processes that read the file together, each only its share.
pub(crate) fn parse_one_share(
    path: &Path,
    (start, len): (u64, u64),
    (part, parts): (usize, usize),
    parse: &mut dyn FnMut(&[u8]) -> Result<(), Rejected>,
) -> Result<Result<(), Rejected>, IoError> {
    let io = |e| IoError::io(path, e);
    let mut file = File::open(path).map_err(io)?;
    let parts = parts.max(1) as u64;
    let mut bound = |k: u64| -> Result<u64, IoError> {
        match k {
            0 => Ok(start),
            k if k >= parts => Ok(len),
            k => next_line_start(&mut file, start + (len - start) / parts * k, len)
                .map(|b| b.max(start))
                .map_err(io),
        }
    };
    let from = bound(part as u64)?;
    let to = bound(part as u64 + 1)?.max(from);
    parse_share(path, from, to, BLOCK, parse)
}

/// Lines that a parser passed to [`stream_lines`] rejected; the caller reads the file whole
/// to say where and why.
pub(crate) struct Rejected;

/// Parse the lines of the file at `path` from byte `start` to byte `len` (its length) on
/// as many threads as [`parallelism`] allows, each reading its own share of whole lines in
/// blocks of about [`BLOCK`] bytes (more for a longer line) that it hands to `parse` as
/// they arrive, into the accumulator `share` makes for its share's length in bytes; the
/// accumulators come back in file order. The text passes through the cache once, on the
/// thread that parses it, and is never held whole: read whole, a file is copied from the
/// page cache on one thread, into as much fresh memory as the file, before parsing starts.
pub(crate) fn stream_lines<T: Send>(
    path: &Path,
    start: u64,
    len: u64,
    share: impl Fn(u64) -> T + Sync,
    parse: impl Fn(&[u8], &mut T) -> Result<(), Rejected> + Sync,
) -> Result<Result<Vec<T>, Rejected>, IoError> {
    let parts = parallelism(usize::try_from(len - start).unwrap_or(usize::MAX));
    stream_shares(path, start, len, parts, BLOCK, share, parse)
}

/// [`stream_lines`] in `parts` shares, read `block` bytes at a time.
fn stream_shares<T: Send>(
    path: &Path,
    start: u64,
    len: u64,
    parts: usize,
    block: usize,
    share: impl Fn(u64) -> T + Sync,
    parse: impl Fn(&[u8], &mut T) -> Result<(), Rejected> + Sync,
) -> Result<Result<Vec<T>, Rejected>, IoError> {
    let io = |e| IoError::io(path, e);
    let parts = parts.max(1) as u64;
    let mut file = File::open(path).map_err(io)?;
    let mut bounds = vec![start];
    for part in 1..parts {
        let nominal = start + (len - start) / parts * part;
        let bound = next_line_start(&mut file, nominal, len).map_err(io)?;
        bounds.push(bound.max(bounds[bounds.len() - 1]));
    }
    bounds.push(len);
    let shares: Vec<(u64, u64)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let results = run_pieces(&shares, |&(from, to)| {
        let mut accumulator = share(to - from);
        parse_share(path, from, to, block, &mut |lines| {
            parse(lines, &mut accumulator)
        })
        .map(|parsed| parsed.map(|()| accumulator))
    });
    results
        .into_iter()
        .collect::<Result<Result<Vec<T>, Rejected>, IoError>>()
}

/// The first offset at or after `at` that starts a line of `file` (`len` bytes long).
fn next_line_start(file: &mut File, at: u64, len: u64) -> std::io::Result<u64> {
    if at == 0 {
        return Ok(0);
    }
    let mut offset = at - 1;
    let mut probe = vec![0u8; PROBE];
    file.seek(SeekFrom::Start(offset))?;
    while offset < len {
        let read = file.read(&mut probe)?;
        if read == 0 {
            break;
        }
        if let Some(k) = memchr::memchr(b'\n', &probe[..read]) {
            return Ok(offset + k as u64 + 1);
        }
        offset += read as u64;
    }
    Ok(len)
}

/// Read bytes `from..to` of the file at `path`, which start a line and end one (or the
/// file), `block` bytes at a time, and hand `parse` what was read up to its last newline.
fn parse_share(
    path: &Path,
    from: u64,
    to: u64,
    block: usize,
    parse: &mut dyn FnMut(&[u8]) -> Result<(), Rejected>,
) -> Result<Result<(), Rejected>, IoError> {
    let io = |e| IoError::io(path, e);
    let mut file = File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut buffer = Vec::new();
    // The unfinished line at the front of `buffer`, carried over from the last block.
    let mut kept = 0;
    let mut left = to - from;
    while left > 0 {
        let want = block.min(usize::try_from(left).unwrap_or(block));
        if buffer.len() < kept + want {
            buffer.resize(kept + want, 0);
        }
        file.read_exact(&mut buffer[kept..kept + want])
            .map_err(io)?;
        left -= want as u64;
        let filled = kept + want;
        let cut = if left == 0 {
            filled
        } else {
            memchr::memrchr(b'\n', &buffer[..filled]).map_or(0, |k| k + 1)
        };
        if cut > 0 {
            if let Err(rejected) = parse(&buffer[..cut]) {
                return Ok(Err(rejected));
            }
        }
        buffer.copy_within(cut..filled, 0);
        kept = filled - cut;
    }
    Ok(Ok(()))
}

/// The coordinates and values of per-piece entry lists, each concatenated in order. The
/// first piece's vectors grow: a large reallocation remaps pages instead of copying them.
/// (Copying coordinates and values on two threads measured no faster on a 347 MB file.)
pub(crate) fn concat_entries(
    pieces: impl IntoIterator<Item = (Vec<i64>, Vec<f64>)>,
) -> (Vec<i64>, Vec<f64>) {
    let mut pieces = pieces.into_iter();
    let (mut coords, mut values) = pieces.next().unwrap_or_default();
    for (c, v) in pieces {
        coords.extend_from_slice(&c);
        values.extend_from_slice(&v);
    }
    (coords, values)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of lines of many lengths (blank ones, one longer than the blocks) after a
    /// header of `skip` bytes, with or without a final newline.
    fn lines_file(
        dir: &tempfile::TempDir,
        final_newline: bool,
    ) -> (std::path::PathBuf, Vec<u8>, u64) {
        let mut text = b"a header line\n".to_vec();
        let skip = text.len() as u64;
        for k in 0..200usize {
            let len = (k * 7919) % 23;
            text.extend(std::iter::repeat_n(b'a' + (k % 26) as u8, len));
            text.push(b'\n');
        }
        text.extend([b'z'; 300]);
        text.extend(b"\nthe last line");
        if final_newline {
            text.push(b'\n');
        }
        let path = dir.path().join(format!("lines{final_newline}.txt"));
        std::fs::write(&path, &text).unwrap();
        (path, text, skip)
    }

    #[test]
    fn streamed_shares_hand_over_whole_lines_once_and_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for final_newline in [true, false] {
            let (path, text, skip) = lines_file(&dir, final_newline);
            let len = text.len() as u64;
            for parts in 1..=7 {
                for block in [1, 2, 5, 64, 4096] {
                    let shares = stream_shares(
                        &path,
                        skip,
                        len,
                        parts,
                        block,
                        |bytes| (bytes, Vec::<Vec<u8>>::new()),
                        |lines, (_, blocks)| {
                            blocks.push(lines.to_vec());
                            Ok(())
                        },
                    );
                    let Ok(Ok(shares)) = shares else {
                        panic!("{parts} parts, blocks of {block}: not streamed");
                    };
                    assert!(shares.len() <= parts);
                    let mut streamed = Vec::new();
                    for (bytes, blocks) in &shares {
                        let share: Vec<u8> = blocks.concat();
                        assert_eq!(share.len() as u64, *bytes);
                        streamed.extend(share);
                    }
                    let context = format!("{parts} parts, blocks of {block}");
                    assert_eq!(streamed, text[skip as usize..], "{context}");
                    let handed: Vec<&Vec<u8>> = shares.iter().flat_map(|(_, b)| b).collect();
                    let (last, whole) = handed.split_last().unwrap();
                    assert!(whole.iter().all(|b| b.ends_with(b"\n")), "{context}");
                    assert_eq!(last.ends_with(b"\n"), final_newline, "{context}");
                }
            }
        }
    }

    #[test]
    fn a_rejected_block_and_an_empty_body_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let (path, text, skip) = lines_file(&dir, true);
        let len = text.len() as u64;
        let rejected = stream_shares(
            &path,
            skip,
            len,
            3,
            64,
            |_| (),
            |lines, ()| match memchr::memmem::find(lines, b"the last") {
                Some(_) => Err(Rejected),
                None => Ok(()),
            },
        );
        assert!(matches!(rejected, Ok(Err(Rejected))));
        let empty = stream_shares(&path, len, len, 1, 64, |bytes| bytes, |_, _| Ok(()));
        assert!(matches!(empty, Ok(Ok(shares)) if shares == [0]));
        let missing = dir.path().join("missing.txt");
        assert!(stream_shares(&missing, 0, 10, 2, 64, |_| (), |_, ()| Ok(())).is_err());
    }
}
