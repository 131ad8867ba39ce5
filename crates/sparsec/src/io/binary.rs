//! The `.spt` binary layout: a [`Tensor`] in any format, stored exactly.
//!
//! All integers are little-endian.
//!
//! ```text
//! magic        8 bytes   SPT_MAGIC
//! version      u32       SPT_VERSION
//! flags        u32       bit 0: a fill value follows the value type; other bits 0
//! format       u32 length + UTF-8 bytes: the Format::spelling() string
//! order        u32, then one u64 per dimension
//! value type   u8        1 = f64, 2 = f32
//! fill value   f64       with flag bit 0 only: the value of the components not stored
//! levels       u32 count, then per level:
//!                u32 array count, per array: u8 kind (1 pos, 2 idx, 3 offset, 5 present), u64 length, i64 x length
//!                u32 param count, per param: u8 kind (1 size, 2 width), i64 value
//! values       u64 length, then f64 or f32 x length
//! checksum     32 bytes  BLAKE3 of everything before it
//! ```
//!
//! Reading checks the magic number, version and checksum, every length against the bytes
//! that remain, that the format parses and has the stored levels, arrays and parameters,
//! and that the level arrays are consistent with each other, so a damaged file gives an
//! error, never a panic or a tensor that reads out of bounds.

use std::io::Write;
use std::path::Path;

use super::{read_bytes, IoError};
use crate::format::{Format, IndexArray, LevelCoord, LevelStorage, ValidateInput};
use crate::ir::{ArrayKind, ParamKind};
use crate::tensor::{Tensor, ValueType, Values};

/// First bytes of every `.spt` file.
pub const SPT_MAGIC: [u8; 8] = *b"\x89SPT\r\n\x1a\n";
/// The layout version this build writes and reads.
pub const SPT_VERSION: u32 = 1;

const CHECKSUM: usize = 32;
/// The flag of a file that records a fill value.
const FILL_FLAG: u32 = 1;

fn array_tag(kind: ArrayKind) -> u8 {
    match kind {
        ArrayKind::Pos => 1,
        ArrayKind::Idx => 2,
        ArrayKind::Offset => 3,
        // Tag 4 was the value array's, which files store apart from the levels.
        ArrayKind::Present => 5,
    }
}

fn array_kind(tag: u8) -> Option<ArrayKind> {
    Some(match tag {
        1 => ArrayKind::Pos,
        2 => ArrayKind::Idx,
        3 => ArrayKind::Offset,
        5 => ArrayKind::Present,
        _ => return None,
    })
}

fn param_tag(kind: ParamKind) -> u8 {
    match kind {
        ParamKind::Size => 1,
        ParamKind::Width => 2,
    }
}

fn param_kind(tag: u8) -> Option<ParamKind> {
    Some(match tag {
        1 => ParamKind::Size,
        2 => ParamKind::Width,
        _ => return None,
    })
}

/// The bytes of the `.spt` encoding of `tensor`.
pub fn encode_spt(tensor: &Tensor) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(&mut out, tensor).expect("writing to a vector cannot fail");
    out
}

/// Write `tensor` to a `.spt` file. The encoding streams to the file through a small
/// buffer: a tensor as large as memory allows is written without a copy of its bytes.
pub fn write_spt(path: impl AsRef<Path>, tensor: &Tensor) -> Result<(), IoError> {
    let path = path.as_ref();
    let file = std::fs::File::create(path).map_err(|e| IoError::io(path, e))?;
    let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
    encode_into(&mut file, tensor)
        .and_then(|()| file.flush())
        .map_err(|e| IoError::io(path, e))
}

/// A writer that hashes what passes through it, for the checksum at the end.
struct Hashed<W> {
    inner: W,
    hasher: blake3::Hasher,
}

impl<W: Write> Write for Hashed<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.hasher.update(&bytes[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Write the `.spt` encoding of `tensor` (the layout in this module's documentation).
fn encode_into(out: &mut impl Write, tensor: &Tensor) -> std::io::Result<()> {
    let mut out = Hashed {
        inner: out,
        hasher: blake3::Hasher::new(),
    };
    out.write_all(&SPT_MAGIC)?;
    out.write_all(&SPT_VERSION.to_le_bytes())?;
    // A fill value of 0 is written as none, so that such files stay what they were.
    let fill = Some(tensor.fill()).filter(|f| f.to_bits() != 0f64.to_bits());
    out.write_all(&u32::from(fill.is_some()).to_le_bytes())?;
    let spelling = tensor.format().spelling();
    out.write_all(&(spelling.len() as u32).to_le_bytes())?;
    out.write_all(spelling.as_bytes())?;
    out.write_all(&(tensor.order() as u32).to_le_bytes())?;
    for &d in tensor.dims() {
        out.write_all(&(d as u64).to_le_bytes())?;
    }
    out.write_all(&[match tensor.value_type() {
        ValueType::F64 => 1,
        ValueType::F32 => 2,
    }])?;
    if let Some(fill) = fill {
        out.write_all(&fill.to_le_bytes())?;
    }
    out.write_all(&(tensor.levels().len() as u32).to_le_bytes())?;
    for level in tensor.levels() {
        out.write_all(&(level.arrays.len() as u32).to_le_bytes())?;
        for (kind, array) in &level.arrays {
            out.write_all(&[array_tag(*kind)])?;
            out.write_all(&(array.len() as u64).to_le_bytes())?;
            // Narrow indices are widened one at a time, not as a copy of the array.
            match array {
                IndexArray::I32(a) => a
                    .iter()
                    .try_for_each(|&x| out.write_all(&i64::from(x).to_le_bytes()))?,
                IndexArray::I64(a) => a.iter().try_for_each(|x| out.write_all(&x.to_le_bytes()))?,
            }
        }
        out.write_all(&(level.params.len() as u32).to_le_bytes())?;
        for (kind, v) in &level.params {
            out.write_all(&[param_tag(*kind)])?;
            out.write_all(&v.to_le_bytes())?;
        }
    }
    out.write_all(&(tensor.values().len() as u64).to_le_bytes())?;
    match tensor.values() {
        Values::F64(v) => v.iter().try_for_each(|x| out.write_all(&x.to_le_bytes()))?,
        Values::F32(v) => v.iter().try_for_each(|x| out.write_all(&x.to_le_bytes()))?,
    }
    let hash = out.hasher.finalize();
    out.inner.write_all(hash.as_bytes())
}

/// Read a `.spt` file.
pub fn read_spt(path: impl AsRef<Path>) -> Result<Tensor, IoError> {
    let path = path.as_ref();
    let bytes = read_bytes(path)?;
    decode_spt(path, &bytes)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.bytes.len() - self.pos < n {
            return Err(format!(
                "truncated: {what} needs {n} bytes at byte {}, but only {} remain",
                self.pos,
                self.bytes.len() - self.pos
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn i64(&mut self, what: &str) -> Result<i64, String> {
        Ok(self.u64(what)? as i64)
    }
    /// A count of items of `item` bytes each, checked against the remaining bytes.
    fn count(&mut self, wide: bool, item: usize, what: &str) -> Result<usize, String> {
        let n = if wide {
            self.u64(what)?
        } else {
            self.u32(what)? as u64
        };
        let remaining = (self.bytes.len() - self.pos) as u64;
        if n.saturating_mul(item.max(1) as u64) > remaining {
            return Err(format!(
                "corrupt: {what} says {n} items at byte {}, more than the {remaining} bytes that remain",
                self.pos
            ));
        }
        Ok(n as usize)
    }
}

/// Decode the bytes of a `.spt` file; `path` only names it in errors.
pub fn decode_spt(path: impl AsRef<Path>, bytes: &[u8]) -> Result<Tensor, IoError> {
    let path = path.as_ref();
    decode(bytes).map_err(|m| IoError::invalid(path, m))
}

fn decode(bytes: &[u8]) -> Result<Tensor, String> {
    if bytes.len() < SPT_MAGIC.len() || bytes[..SPT_MAGIC.len()] != SPT_MAGIC {
        return Err("not a sparsec binary tensor (bad magic number)".into());
    }
    if bytes.len() < SPT_MAGIC.len() + 4 + CHECKSUM {
        return Err(format!("truncated: only {} bytes", bytes.len()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != SPT_VERSION {
        return Err(format!(
            "unsupported version {version} (this build reads version {SPT_VERSION})"
        ));
    }
    let (content, checksum) = bytes.split_at(bytes.len() - CHECKSUM);
    if blake3::hash(content).as_bytes() != checksum {
        return Err("checksum mismatch: the file is truncated or corrupted".into());
    }
    let mut r = Reader {
        bytes: content,
        pos: 12,
    };
    let flags = r.u32("flags")?;
    if flags & !FILL_FLAG != 0 {
        return Err(format!(
            "unknown flags {flags:#x}: the file was written by a newer sparsec"
        ));
    }
    let len = r.count(false, 1, "format string length")?;
    let spelling = std::str::from_utf8(r.take(len, "format string")?)
        .map_err(|_| "corrupt: the format string is not UTF-8".to_string())?
        .to_string();
    let order = r.count(false, 8, "order")?;
    let mut dims = Vec::with_capacity(order);
    for _ in 0..order {
        let d = r.u64("dimension")?;
        dims.push(
            usize::try_from(d)
                .ok()
                .filter(|&d| d <= i64::MAX as usize)
                .ok_or_else(|| format!("corrupt: dimension {d} is too large"))?,
        );
    }
    let value_type = match r.u8("value type")? {
        1 => ValueType::F64,
        2 => ValueType::F32,
        t => return Err(format!("corrupt: unknown value type tag {t}")),
    };
    let fill = if flags & FILL_FLAG != 0 {
        f64::from_bits(r.u64("fill value")?)
    } else {
        0.0
    };
    let format = Format::parse(&spelling, order)
        .map_err(|e| format!("corrupt: stored format does not parse: {e}"))?;
    let nlevels = r.count(false, 8, "level count")?;
    if nlevels != format.levels().len() {
        return Err(format!(
            "corrupt: format `{spelling}` has {} levels, but {nlevels} are stored",
            format.levels().len()
        ));
    }
    let mut levels = Vec::with_capacity(nlevels);
    for k in 0..nlevels {
        let narrays = r.count(false, 9, "array count")?;
        let mut arrays = Vec::with_capacity(narrays);
        for _ in 0..narrays {
            let tag = r.u8("array kind")?;
            let kind = array_kind(tag).ok_or_else(|| {
                format!("corrupt: unknown array kind tag {tag} in level {}", k + 1)
            })?;
            let len = r.count(true, 8, "array length")?;
            let raw = r.take(len * 8, "array")?;
            let array: Vec<i64> = raw
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            arrays.push((kind, array.into()));
        }
        let nparams = r.count(false, 9, "parameter count")?;
        let mut params = Vec::with_capacity(nparams);
        for _ in 0..nparams {
            let tag = r.u8("parameter kind")?;
            let kind = param_kind(tag).ok_or_else(|| {
                format!(
                    "corrupt: unknown parameter kind tag {tag} in level {}",
                    k + 1
                )
            })?;
            params.push((kind, r.i64("parameter")?));
        }
        levels.push(LevelStorage { arrays, params });
    }
    let item = match value_type {
        ValueType::F64 => 8,
        ValueType::F32 => 4,
    };
    let nvalues = r.count(true, item, "value count")?;
    let raw = r.take(nvalues * item, "values")?;
    let values = match value_type {
        ValueType::F64 => Values::F64(
            raw.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        ),
        ValueType::F32 => Values::F32(
            raw.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect(),
        ),
    };
    if r.pos != content.len() {
        return Err(format!(
            "corrupt: {} unexpected bytes after the values",
            content.len() - r.pos
        ));
    }
    check_structure(&format, &dims, &levels, values.len())?;
    let mut tensor = Tensor::from_parts(dims, format, levels, values).with_narrowest_indices();
    // The storage was written with the fill value where it holds no entry.
    tensor.set_fill(fill);
    Ok(tensor)
}

/// Check that the level storage is what the format's levels need and that every array
/// access a reader makes stays in bounds: the kinds of arrays and parameters and the sizes
/// here, the arrays' contents by each level ([`crate::format::LevelFormat::validate`]).
fn check_structure(
    format: &Format,
    dims: &[usize],
    levels: &[LevelStorage],
    nvalues: usize,
) -> Result<(), String> {
    let mut positions: usize = 1;
    for (k, (spec, storage)) in format.levels().iter().zip(levels).enumerate() {
        let level = k + 1;
        let err = |m: String| format!("corrupt: level {level} ({}): {m}", spec.format.name());
        let mut kinds: Vec<ArrayKind> = storage.arrays.iter().map(|(k, _)| *k).collect();
        let mut want = spec.format.arrays().to_vec();
        kinds.sort_by_key(|k| array_tag(*k));
        want.sort_by_key(|k| array_tag(*k));
        if kinds != want {
            return Err(err(format!("stores arrays {kinds:?}, expected {want:?}")));
        }
        let mut pkinds: Vec<ParamKind> = storage.params.iter().map(|(k, _)| *k).collect();
        let mut pwant = spec.format.params().to_vec();
        pkinds.sort();
        pwant.sort();
        if pkinds != pwant {
            return Err(err(format!(
                "stores parameters {pkinds:?}, expected {pwant:?}"
            )));
        }
        let size = storage.param(ParamKind::Size);
        if size < 0 {
            return Err(err(format!("negative size {size}")));
        }
        let expected_size = match spec.coord {
            LevelCoord::Mode(m) => Some(dims[m] as i64),
            LevelCoord::BlockOuter { mode, block } => Some(dims[mode].div_ceil(block) as i64),
            LevelCoord::BlockInner { block, .. } => Some(block as i64),
            LevelCoord::EllSlot | LevelCoord::Diagonal => None,
        };
        if let Some(s) = expected_size {
            if s != size {
                return Err(err(format!(
                    "size {size} does not match the dimension it stores ({s})"
                )));
            }
        }
        let input = ValidateInput {
            level,
            storage,
            size: size as usize,
            parent_positions: positions,
            ancestors: &levels[..k],
            next_size: levels
                .get(k + 1)
                .map_or(0, |l| l.param(ParamKind::Size).max(0) as usize),
        };
        positions = spec.format.validate(&input).map_err(err)?;
    }
    if positions != nvalues {
        return Err(format!(
            "corrupt: the levels address {positions} values, but {nvalues} are stored"
        ));
    }
    Ok(())
}
