//! Building storage: map logical coordinates to storage coordinates (blocks, ELL slots,
//! diagonals), sort by storage order, then let each level pack itself.

use super::{Coo, Tensor, TensorError, ValueType, Values};
use crate::format::{Format, LevelCoord, PackInput, Segment};

/// Pack `coo` into `format`, also returning the value slot each entry of `coo` (in its
/// original order, duplicates included) was summed into.
pub(super) fn pack(
    mut coo: Coo,
    format: &Format,
    value_type: ValueType,
) -> Result<(Tensor, Vec<usize>), TensorError> {
    coo.validate()?;
    let moved_to = coo.sort_and_sum_tracked();
    let nnz = coo.len();
    let specs = format.levels();
    let unrepresentable = |reason: String| TensorError::Unrepresentable {
        format: format.spelling(),
        reason,
    };

    let diagonal_offsets = diagonal_offsets(&coo, format);
    let ell_slots = ell_slots(&coo, format);
    let order = coo.order();
    let level_coords: Vec<Vec<i64>> = specs
        .iter()
        .map(|spec| {
            let mode_column = |m: usize| coo.coords.iter().skip(m).step_by(order.max(1));
            match spec.coord {
                LevelCoord::Mode(m) => mode_column(m).copied().collect(),
                LevelCoord::BlockOuter { mode, block } => {
                    mode_column(mode).map(|&c| c / block as i64).collect()
                }
                LevelCoord::BlockInner { mode, block } => {
                    mode_column(mode).map(|&c| c % block as i64).collect()
                }
                LevelCoord::EllSlot => ell_slots.clone(),
                LevelCoord::Diagonal => (0..nnz)
                    .map(|e| {
                        let c = coo.coord(e);
                        diagonal_offsets
                            .binary_search(&(c[1] - c[0]))
                            .expect("every diagonal is listed") as i64
                    })
                    .collect(),
            }
        })
        .collect();
    let level_sizes: Vec<usize> = specs
        .iter()
        .map(|spec| match spec.coord {
            LevelCoord::Mode(m) => coo.dims[m],
            LevelCoord::BlockOuter { mode, block } => coo.dims[mode].div_ceil(block),
            LevelCoord::BlockInner { block, .. } => block,
            LevelCoord::EllSlot => ell_slots.iter().map(|&s| s as usize + 1).max().unwrap_or(0),
            LevelCoord::Diagonal => diagonal_offsets.len(),
        })
        .collect();

    // Sort entries by storage coordinates, outermost level first. Entries are sorted by
    // mode already, so storage that lists the modes in order needs no permutation.
    let modes_in_order = specs
        .iter()
        .enumerate()
        .all(|(k, spec)| spec.coord == LevelCoord::Mode(k));
    let in_order = modes_in_order || (1..nnz).all(|e| storage_order_le(&level_coords, e - 1, e));
    let perm: Option<Vec<usize>> = (!in_order).then(|| {
        let mut perm: Vec<usize> = (0..nnz).collect();
        perm.sort_by(|&a, &b| {
            level_coords
                .iter()
                .map(|c| c[a])
                .cmp(level_coords.iter().map(|c| c[b]))
        });
        perm
    });
    let entry = |e: usize| perm.as_ref().map_or(e, |p| p[e]);
    let sorted_coords: Vec<Vec<i64>> = match &perm {
        None => level_coords,
        Some(perm) => level_coords
            .iter()
            .map(|c| perm.iter().map(|&e| c[e]).collect())
            .collect(),
    };

    let mut segments = if nnz > 0 || specs.is_empty() {
        vec![Segment {
            parent: 0,
            lo: 0,
            hi: nnz,
        }]
    } else {
        vec![]
    };
    let mut positions = 1usize;
    let mut levels = Vec::with_capacity(specs.len());
    for (k, spec) in specs.iter().enumerate() {
        let input = PackInput {
            level: k + 1,
            size: level_sizes[k],
            parent_positions: positions,
            segments: &segments,
            coords: &sorted_coords[k],
            diagonal_offsets: &diagonal_offsets,
            next_size: level_sizes.get(k + 1).copied().unwrap_or(0),
        };
        let out = spec.format.pack(&input).map_err(unrepresentable)?;
        levels.push(out.storage);
        positions = out.positions;
        segments = out.children;
    }
    let mut values = Values::zeros(value_type, positions);
    let mut slot_of_summed = vec![0; nnz];
    for seg in &segments {
        let sum: f64 = (seg.lo..seg.hi).map(|e| coo.values[entry(e)]).sum();
        values.set(seg.parent, sum);
        for e in seg.lo..seg.hi {
            slot_of_summed[entry(e)] = seg.parent;
        }
    }
    let slots = match moved_to {
        Some(moved_to) => moved_to.iter().map(|&s| slot_of_summed[s]).collect(),
        None => slot_of_summed,
    };
    let tensor = Tensor {
        dims: coo.dims.clone(),
        format: format.clone(),
        levels,
        values,
    };
    Ok((tensor, slots))
}

/// True when entry `a` is at or before entry `b` in storage order.
fn storage_order_le(level_coords: &[Vec<i64>], a: usize, b: usize) -> bool {
    for c in level_coords {
        if c[a] != c[b] {
            return c[a] < c[b];
        }
    }
    true
}

/// Sorted distinct `j - i` over the entries, when the format has a diagonal level.
fn diagonal_offsets(coo: &Coo, format: &Format) -> Vec<i64> {
    if !format
        .levels()
        .iter()
        .any(|l| l.coord == LevelCoord::Diagonal)
    {
        return vec![];
    }
    let mut offsets: Vec<i64> = (0..coo.len())
        .map(|e| coo.coord(e)[1] - coo.coord(e)[0])
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

/// Rank of each entry among the entries of its row (entries are sorted by row).
fn ell_slots(coo: &Coo, format: &Format) -> Vec<i64> {
    if !format
        .levels()
        .iter()
        .any(|l| l.coord == LevelCoord::EllSlot)
    {
        return vec![];
    }
    let mut slots = Vec::with_capacity(coo.len());
    for e in 0..coo.len() {
        let same_row = e > 0 && coo.coord(e - 1)[0] == coo.coord(e)[0];
        slots.push(if same_row { slots[e - 1] + 1 } else { 0 });
    }
    slots
}
