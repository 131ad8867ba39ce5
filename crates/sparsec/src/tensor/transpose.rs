//! Converting a compressed matrix to the other mode order (CSR to CSC and back) in one
//! counting pass, instead of through a coordinate list.

use super::{Tensor, Values};
use crate::format::{Format, LevelStorage, Streaming};
use crate::ir::{ArrayKind, ParamKind};

/// The modes of a matrix format whose outer level stores one position per coordinate
/// and whose inner level appends ordered, unique coordinates (CSR, CSC): outer, inner.
fn compressed_modes(format: &Format) -> Option<(usize, usize)> {
    let [outer, inner] = format.levels() else {
        return None;
    };
    let properties = inner.format.properties();
    let fits = format.is_plain()
        && outer.format.streaming()? == Streaming::Inserted
        && inner.format.streaming()? == Streaming::Appended
        && properties.ordered
        && properties.unique;
    let order = format.mode_order()?;
    fits.then(|| (order[0], order[1]))
}

impl Tensor {
    /// `self` in `format` when both are compressed matrices of opposite mode orders:
    /// count the entries of each target row, then place the source's rows in order, so
    /// that each target row comes out sorted. `None` for other pairs of formats.
    pub(super) fn transpose_compressed(&self, format: &Format) -> Option<Tensor> {
        let (outer, inner) = compressed_modes(&self.format)?;
        if compressed_modes(format)? != (inner, outer) {
            return None;
        }
        let (rows, cols) = (self.dims[outer], self.dims[inner]);
        let leaf = &self.levels[1];
        let pos = leaf.array(ArrayKind::Pos)?.to_i64();
        let idx = leaf.array(ArrayKind::Idx)?.to_i64();
        let mut starts = vec![0i64; cols + 1];
        for &c in idx.iter() {
            starts[c as usize + 1] += 1;
        }
        for c in 0..cols {
            starts[c + 1] += starts[c];
        }
        let mut next = starts.clone();
        let mut target_idx = vec![0i64; idx.len()];
        let mut source_of = vec![0usize; idx.len()];
        for r in 0..rows {
            for p in pos[r] as usize..pos[r + 1] as usize {
                let slot = &mut next[idx[p] as usize];
                target_idx[*slot as usize] = r as i64;
                source_of[*slot as usize] = p;
                *slot += 1;
            }
        }
        let values = match &self.values {
            Values::F64(v) => Values::F64(source_of.iter().map(|&p| v[p]).collect()),
            Values::F32(v) => Values::F32(source_of.iter().map(|&p| v[p]).collect()),
        };
        let size = |n: usize| vec![(ParamKind::Size, n as i64)];
        Some(
            Tensor {
                dims: self.dims.clone(),
                format: format.clone(),
                levels: vec![
                    LevelStorage {
                        arrays: vec![],
                        params: size(cols),
                    },
                    LevelStorage {
                        arrays: vec![
                            (ArrayKind::Pos, starts.into()),
                            (ArrayKind::Idx, target_idx.into()),
                        ],
                        params: size(rows),
                    },
                ],
                values,
            }
            .with_narrowest_indices(),
        )
    }
}
