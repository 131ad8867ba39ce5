//! Building storage from a coordinate list: sum duplicates, then stream the entries into
//! the levels where they can take them so (`stream.rs`); otherwise map logical
//! coordinates to storage coordinates (blocks, ELL slots, diagonals), sort by storage
//! order, and let each level pack itself.

use super::stream::{level_sizes, storage_coord};
use super::Generation;
use super::{Coo, Tensor, TensorError, ValueType, Values};
use crate::format::{Format, LevelCoord, PackInput, Segment};

/// Pack `coo` into `format`. With `track`, also return the value slot each entry of
/// `coo` (in its original order, duplicates included) was summed into (else no slots).
pub(super) fn pack(
    mut coo: Coo,
    format: &Format,
    value_type: ValueType,
    track: bool,
) -> Result<(Tensor, Vec<usize>), TensorError> {
    coo.validate()?;
    let moved_to = if coo.strictly_increasing() {
        None
    } else if track {
        coo.sort_and_sum_tracked()
    } else if let Some(sums) = coo.packed_sums() {
        // The coordinate list is no longer needed: its memory goes before the levels'.
        let dims = std::mem::take(&mut coo.dims);
        drop(coo);
        return pack_sums(dims, sums, format, value_type).map(|t| (t, Vec::new()));
    } else {
        coo.sort_and_sum();
        None
    };
    let (tensor, slot_of_summed) =
        match super::stream::pack_streaming(&coo, format, value_type, track)? {
            Some(packed) => packed,
            None => pack_general(&coo, format, value_type, track)?,
        };
    let tensor = tensor.with_narrowest_indices();
    Ok((tensor, original_slots(moved_to, slot_of_summed)))
}

/// Pack entries given as sorted, distinct packed coordinates with their values
/// ([`Coo::packed_sums`]): streamed straight into the levels, each key unpacked as it goes,
/// where the format takes entries so; else through a coordinate list and
/// [`pack_general`].
fn pack_sums(
    dims: Vec<usize>,
    sums: Vec<(u64, f64)>,
    format: &Format,
    value_type: ValueType,
) -> Result<Tensor, TensorError> {
    let mut coordinates = vec![0i64; dims.len()];
    let streamed = super::stream::stream_in_mode_order(
        &dims,
        format,
        value_type,
        sums.len(),
        false,
        |push| {
            for &(key, value) in &sums {
                super::order::unpacked_key(key, &dims, &mut coordinates);
                push(&coordinates, value);
            }
        },
    )?;
    let tensor = match streamed {
        Some((tensor, _)) => tensor,
        None => {
            let coo = Coo::from_packed_sums(dims, sums);
            pack_general(&coo, format, value_type, false)?.0
        }
    };
    Ok(tensor.with_narrowest_indices())
}

/// Pack sorted, unique entries level by level, each level grouping the entries under
/// its parent positions ([`crate::format::LevelFormat::pack`]).
pub(super) fn pack_general(
    coo: &Coo,
    format: &Format,
    value_type: ValueType,
    track: bool,
) -> Result<(Tensor, Vec<usize>), TensorError> {
    let nnz = coo.len();
    let specs = format.levels();
    let unrepresentable = |reason: String| TensorError::Unrepresentable {
        format: format.spelling(),
        reason,
    };

    let diagonal_offsets = diagonal_offsets(coo, format);
    let ell_slots = ell_slots(coo, format);
    let level_coords: Vec<Vec<i64>> = specs
        .iter()
        .map(|spec| match spec.coord {
            LevelCoord::Diagonal => (0..nnz)
                .map(|e| {
                    let c = coo.coord(e);
                    diagonal_offsets
                        .binary_search(&(c[1] - c[0]))
                        .expect("every diagonal is listed") as i64
                })
                .collect(),
            coord => (0..nnz)
                .map(|e| storage_coord(coord, coo.coord(e), ell_slots.get(e).map_or(0, |&s| s)))
                .collect(),
        })
        .collect();
    // The sizes the entries alone do not give: ELL's slots and DIA's diagonals.
    let mut level_sizes = level_sizes(format, &coo.dims);
    for (size, spec) in level_sizes.iter_mut().zip(specs) {
        match spec.coord {
            LevelCoord::EllSlot => {
                *size = ell_slots.iter().map(|&s| s as usize + 1).max().unwrap_or(0)
            }
            LevelCoord::Diagonal => *size = diagonal_offsets.len(),
            _ => {}
        }
    }

    // Sort entries by storage coordinates, outermost level first. Entries are sorted by
    // mode already, so storage that lists the modes in order needs no permutation.
    let modes_in_order = specs
        .iter()
        .enumerate()
        .all(|(k, spec)| spec.coord == LevelCoord::Mode(k));
    let in_order = modes_in_order || (1..nnz).all(|e| storage_order_le(&level_coords, e - 1, e));
    let perm: Option<Vec<usize>> = (!in_order).then(|| {
        let keys: Vec<Box<dyn Fn(usize) -> i64 + '_>> = level_coords
            .iter()
            .map(|c| Box::new(move |e: usize| c[e]) as Box<dyn Fn(usize) -> i64>)
            .collect();
        let keys: Vec<&dyn Fn(usize) -> i64> = keys.iter().map(|k| k.as_ref()).collect();
        super::order::lexicographic_order(nnz, &keys, &level_sizes)
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
    let mut values = Values::try_zeros(value_type, Some(positions)).map_err(unrepresentable)?;
    let mut slot_of_summed = vec![0; if track { nnz } else { 0 }];
    for seg in &segments {
        let sum: f64 = (seg.lo..seg.hi).map(|e| coo.values[entry(e)]).sum();
        values.set(seg.parent, sum);
        if track {
            for e in seg.lo..seg.hi {
                slot_of_summed[entry(e)] = seg.parent;
            }
        }
    }
    let tensor = Tensor {
        dims: coo.dims.clone(),
        format: format.clone(),
        levels,
        values,
        fill: 0.0,
        generation: Generation::fresh(),
    };
    Ok((tensor, slot_of_summed))
}

/// The slot of each original entry, from where sorting moved it and the slot of each
/// sorted entry (empty when slots are not tracked).
fn original_slots(moved_to: Option<Vec<usize>>, slot_of_summed: Vec<usize>) -> Vec<usize> {
    match moved_to {
        Some(moved_to) if !slot_of_summed.is_empty() => {
            moved_to.iter().map(|&s| slot_of_summed[s]).collect()
        }
        _ => slot_of_summed,
    }
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
