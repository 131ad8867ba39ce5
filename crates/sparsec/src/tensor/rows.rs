//! Building a tensor from the rows a two-phase kernel wrote ([`crate::ir::rows`]): the
//! leaf level is already in place, the levels above it follow from which rows hold
//! entries.

use super::levels::StreamedLevels;
use super::Generation;
use super::{Coo, IndexSlice, Tensor, TensorError, Values};
use crate::format::{Format, IndexArray, LevelStorage, Streaming};
use crate::ir::{ArrayKind, IndexWidth, ParamKind};

/// A sparse output as a two-phase kernel leaves it: its leaf level over every *row* (the
/// coordinates above the leaf, linearised in storage order as though every upper level
/// were dense), and the values.
#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    /// `rows + 1` offsets: row `r` holds entries `pos[r]..pos[r + 1]`.
    pub pos: Vec<i64>,
    /// The leaf coordinate of each entry, at the width the kernel wrote it.
    pub idx: IndexArray,
    /// The value of each entry.
    pub values: Values,
}

impl Rows {
    /// True when every row's coordinates are strictly increasing and in range, for a
    /// tensor of `dims` in `format`: then the rows are the tensor's leaf level as it is.
    pub fn in_order(&self, dims: &[usize], format: &Format) -> bool {
        format.row_levels().is_some_and(|(_, leaf_mode)| {
            super::view::check_canonical_at_widths(
                IndexSlice::I64(&self.pos),
                IndexSlice::from(&self.idx),
                self.pos.len() - 1,
                dims[leaf_mode],
            )
            .is_ok()
        })
    }

    /// The entries, as a coordinate list of a tensor with these dimensions in `format`
    /// (the format the rows were written for).
    pub fn to_coo(&self, dims: &[usize], format: &Format) -> Coo {
        let (upper, leaf_mode) = format
            .row_levels()
            .expect("rows are written for row formats");
        let order = dims.len();
        let mut coords = vec![0i64; self.idx.len() * order];
        for (row, w) in self.pos.windows(2).enumerate() {
            let mut rest = row;
            let mut c = vec![0i64; order];
            for &(mode, _) in upper.iter().rev() {
                c[mode] = (rest % dims[mode]) as i64;
                rest /= dims[mode];
            }
            for e in w[0] as usize..w[1] as usize {
                c[leaf_mode] = self.idx.get(e);
                coords[e * order..(e + 1) * order].copy_from_slice(&c);
            }
        }
        let values = (0..self.values.len()).map(|p| self.values.get(p)).collect();
        Coo {
            dims: dims.to_vec(),
            coords,
            values,
        }
    }
}

impl Tensor {
    /// The tensor of `dims` in `format` that `rows` hold. Rows whose coordinates are not
    /// strictly increasing (a kernel that emitted out of order or twice) are sorted and
    /// summed through the coordinate list; otherwise the leaf level and the values are
    /// taken as they are and the upper levels are built from the rows that hold entries.
    pub fn from_rows(rows: Rows, dims: Vec<usize>, format: &Format) -> Result<Tensor, TensorError> {
        let unrepresentable = |reason: String| TensorError::Unrepresentable {
            format: format.spelling(),
            reason,
        };
        let (upper, leaf_mode) = format
            .row_levels()
            .ok_or_else(|| unrepresentable("its levels cannot be filled row by row".to_string()))?;
        if !rows.in_order(&dims, format) {
            let value_type = rows.values.value_type();
            return Tensor::from_coo_owned(rows.to_coo(&dims, format), format, value_type);
        }
        let rows_count = rows.pos.len() - 1;
        let entries = rows.idx.len();
        let size = |mode: usize| vec![(ParamKind::Size, dims[mode] as i64)];
        let mut levels: Vec<LevelStorage> = Vec::with_capacity(upper.len() + 1);
        let leaf_pos = if upper.iter().all(|&(_, kind)| kind == Streaming::Inserted) {
            levels.extend(upper.iter().map(|&(mode, _)| LevelStorage {
                arrays: vec![],
                params: size(mode),
            }));
            rows.pos
        } else {
            let (compacted, leaf_pos) =
                compact(&rows.pos, &upper, &dims).map_err(unrepresentable)?;
            levels.extend(compacted);
            leaf_pos
        };
        levels.push(LevelStorage {
            arrays: vec![
                (ArrayKind::Pos, leaf_pos.into()),
                (ArrayKind::Idx, rows.idx),
            ],
            params: size(leaf_mode),
        });
        // Every index is a coordinate below a dimension or an offset up to the number of
        // entries or rows: no array needs scanning to know whether it fits 32 bits.
        let largest = dims.iter().copied().chain([entries, rows_count]).max();
        let tensor = Tensor {
            dims,
            format: format.clone(),
            levels,
            values: rows.values,
            fill: 0.0,
            generation: Generation::fresh(),
        };
        // A leaf written as `int32_t` widens with the rest when an offset does not fit.
        Ok(if largest.unwrap_or(0) <= i32::MAX as usize {
            tensor.with_fitting_width(IndexWidth::I32)
        } else {
            tensor.with_fitting_width(IndexWidth::I64)
        })
    }
}

/// The upper levels of a format with some compressed level above the leaf, streamed from
/// the rows that hold entries (as the streaming packer streams entries), and the leaf's
/// offsets over the last upper level's positions.
fn compact(
    pos: &[i64],
    upper: &[(usize, Streaming)],
    dims: &[usize],
) -> Result<(Vec<LevelStorage>, Vec<i64>), String> {
    let filled = pos.windows(2).filter(|w| w[0] != w[1]).count();
    if let [(mode, Streaming::Appended)] = upper {
        // One compressed level (DCSR, a list of fibres): its coordinates are the rows that
        // hold entries, without the stream's bookkeeping per row.
        let mut held = Vec::with_capacity(filled);
        let mut leaf_pos = Vec::with_capacity(filled + 1);
        for (row, w) in pos.windows(2).enumerate() {
            if w[0] != w[1] {
                held.push(row as i64);
                leaf_pos.push(w[0]);
            }
        }
        leaf_pos.push(*pos.last().expect("rows have an end"));
        let level = LevelStorage {
            arrays: vec![
                (ArrayKind::Pos, vec![0, filled as i64].into()),
                (ArrayKind::Idx, held.into()),
            ],
            params: vec![(ParamKind::Size, dims[*mode] as i64)],
        };
        return Ok((vec![level], leaf_pos));
    }
    let sizes = upper.iter().map(|&(mode, _)| dims[mode]).collect();
    let mut stream =
        StreamedLevels::new(upper.iter().map(|&(_, kind)| kind.into()).collect(), sizes);
    stream.reserve_offsets()?;
    stream.reserve_last(filled)?;
    let mut leaf_pos: Vec<i64> = Vec::with_capacity(filled + 1);
    // The rows' coordinates advance as an odometer (no division per row), and the
    // outermost level that moved since the last row holding entries tells the stream
    // where the tuples differ.
    let mut coords = vec![0i64; upper.len()];
    let mut first_changed = 0;
    for w in pos.windows(2) {
        if w[0] != w[1] {
            let position = stream.push_changed(&coords, first_changed);
            first_changed = upper.len();
            // Positions of the last upper level without a row of their own are empty.
            while leaf_pos.len() <= position {
                leaf_pos.push(w[0]);
            }
        }
        // After the last row, the outermost coordinate runs past its size; nothing reads it.
        let mut k = upper.len() - 1;
        coords[k] += 1;
        while k > 0 && coords[k] as usize == dims[upper[k].0] {
            coords[k] = 0;
            k -= 1;
            coords[k] += 1;
        }
        first_changed = first_changed.min(k);
    }
    let (levels, positions) = stream.finish()?;
    leaf_pos.resize(positions + 1, *pos.last().expect("rows have an end"));
    Ok((levels, leaf_pos))
}
