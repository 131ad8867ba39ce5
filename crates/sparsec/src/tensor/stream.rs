//! Building storage by streaming: components arrive one at a time in the modes' order
//! (from a sorted coordinate list, or from the walk over another tensor's storage) and
//! go straight into the new levels, put in storage order group by group where the two
//! orders differ, without the general packing's per-level arrays (`pack.rs`).

use super::levels::{Built, StreamedLevels};
use super::Generation;
use super::{Coo, Tensor, TensorError, ValueType, Values};
use crate::format::{Format, Layout, LevelCoord};

/// Pack sorted, unique entries straight into levels that take entries one at a time
/// ([`stream_in_mode_order`]), without the intermediate arrays of the general path. `None`
/// when the format's levels cannot be built so, or for scalars; an error when the storage
/// cannot be allocated.
pub(super) fn pack_streaming(
    coo: &Coo,
    format: &Format,
    value_type: ValueType,
    track: bool,
) -> Result<Option<(Tensor, Vec<usize>)>, TensorError> {
    stream_in_mode_order(&coo.dims, format, value_type, coo.len(), track, |push| {
        (0..coo.len()).for_each(|e| push(coo.coord(e), coo.values[e]));
    })
}

/// `source` in `format` without a coordinate list, when `format`'s levels can be built
/// from components in the modes' order ([`stream_in_mode_order`]) and `source` gives them
/// so: it stores them in that order, each once (plain levels in mode order, ordered and
/// unique), or its first level is ordered and stores mode 0 or its blocks, so that each
/// group sharing that level's coordinate sorted is in order ([`Regather`]). The
/// components go from the walk over the source's storage straight into the new levels.
/// `None` for other pairs, or when the source's storage turns out not to be in order (its
/// levels claimed so wrongly, or a component stored twice).
pub(super) fn stream_converted(
    source: &Tensor,
    format: &Format,
) -> Result<Option<Tensor>, TensorError> {
    let levels = source.format.levels();
    let in_mode_order = source.format.mode_order() == Some((0..source.order()).collect::<Vec<_>>())
        && levels.iter().all(|level| {
            let properties = level.format.properties();
            properties.ordered && properties.unique
        });
    let grouped = levels.first().is_some_and(|level| {
        level.format.properties().ordered
            && matches!(
                level.coord,
                LevelCoord::Mode(0) | LevelCoord::BlockOuter { mode: 0, .. }
            )
    });
    if !(in_mode_order || grouped) {
        return Ok(None);
    }
    let streamed = stream_in_mode_order(
        &source.dims,
        format,
        source.value_type(),
        source.stored_values(),
        false,
        |visit| {
            if in_mode_order {
                return source.walk_stored(super::walk::Reading::Native, visit);
            }
            let mut regather = Regather {
                first: levels[0].coord,
                key: None,
                group: HeldGroup::new(&source.dims),
            };
            source.walk_stored(super::walk::Reading::Native, &mut |entry, value| {
                regather.add(entry, value, visit)
            });
            regather.flush(visit);
        },
    )?;
    Ok(streamed.map(|(tensor, _)| tensor))
}

/// Build `format` from distinct entries that `entries` hands over in the modes' order
/// (about `expected` of them), when every level has a layout the runtime writes natively
/// ([`Layout`]) and stores a mode, a block of one or an ELL slot, in one of three ways:
/// - storage in the modes' order (CSR, DCSR, CSF, COO): each entry goes straight on;
/// - levels that all compute their positions from their parents' (dense, singleton, hash
///   tables: ELL, `dh`, `hh`): the entries are held until every size is known (the widest
///   row's slots, each table's width), then placed in the order given;
/// - a first level storing mode 0 or its blocks (BCSR): the entries sharing its
///   coordinate come together, and each such group is sorted into storage order
///   ([`Regroup`]) and streamed.
///
/// With `track`, also returns the value slot of each entry. `None` when the format's
/// levels cannot be built so, or when the entries turn out not to be in order.
pub(super) fn stream_in_mode_order(
    dims: &[usize],
    format: &Format,
    value_type: ValueType,
    expected: usize,
    track: bool,
    entries: impl FnOnce(&mut dyn FnMut(&[i64], f64)),
) -> Result<Option<(Tensor, Vec<usize>)>, TensorError> {
    let Some(kinds) = built_levels(format) else {
        return Ok(None);
    };
    let coords: Vec<LevelCoord> = format.levels().iter().map(|l| l.coord).collect();
    // Where every level stores the mode of its own number, storage order is the modes'
    // order and each entry goes straight on.
    let direct = coords
        .iter()
        .enumerate()
        .all(|(k, &c)| c == LevelCoord::Mode(k));
    // Levels that place each coordinate at a position computed from its parent's (dense,
    // singleton, hash tables) can take the entries out of storage order, once every
    // level's size is known: ELL's slots (an entry's rank in its row, so the entries go
    // on in the modes' order; distinct entries have distinct (slot, row) pairs, so the
    // singleton level never sees two coordinates under one parent) and the tables' widths
    // (from the widest parent, counted over entries in storage order).
    let has_tables = kinds.contains(&Built::Table);
    let placed = (coords.contains(&LevelCoord::EllSlot) || has_tables)
        && (direct || !has_tables)
        && kinds
            .iter()
            .all(|kind| matches!(kind, Built::Inserted | Built::Singleton | Built::Table));
    // Groups of rows regrouped in storage order; not under slots (sliced ELL), which are
    // ranks in a row that regrouping does not count.
    let grouped = matches!(
        coords[0],
        LevelCoord::Mode(0) | LevelCoord::BlockOuter { mode: 0, .. }
    ) && !coords.contains(&LevelCoord::EllSlot);
    // Tables take their widths before any tuple: not by streaming as the tuples come.
    if !(direct || placed || grouped) || has_tables && !placed {
        return Ok(None);
    }
    let sizes = level_sizes(format, dims);
    let unrepresentable = |reason: String| TensorError::Unrepresentable {
        format: format.spelling(),
        reason,
    };
    let mut sink = Sink::new(kinds, sizes.clone(), expected, track).map_err(unrepresentable)?;
    let mut in_order = true;
    if direct && !placed {
        let (mut previous, mut seen) = (Vec::new(), 0);
        entries(
            &mut |entry, value| match next_in_order(&mut previous, entry) {
                Some(first_changed) if in_order => {
                    sink.push(entry, first_changed, value, seen);
                    seen += 1;
                }
                _ => in_order = false,
            },
        );
    } else if placed {
        // The tuples are held until every level's size is known; then each level is
        // allocated once.
        let mut previous = Vec::new();
        let (mut tuples, mut values) = (Vec::with_capacity(expected * coords.len()), Vec::new());
        let (mut slot, mut slots_used) = (0i64, 0);
        entries(&mut |entry, value| {
            let Some(first_changed) = next_in_order(&mut previous, entry).filter(|_| in_order)
            else {
                in_order = false;
                return;
            };
            // A new row (mode 0 changed, or the first entry) starts at slot 0.
            slot = if first_changed == 0 { 0 } else { slot + 1 };
            slots_used = slots_used.max(slot as usize + 1);
            tuples.extend(coords.iter().map(|&c| storage_coord(c, entry, slot)));
            values.push(value);
        });
        let levels = coords.len();
        let tuple = |e: usize| &tuples[e * levels..(e + 1) * levels];
        // The level of the first coordinate each tuple changes (0 for the first).
        let changed: Vec<usize> = (0..values.len())
            .map(|e| match e {
                0 => 0,
                _ => first_difference(tuple(e - 1), tuple(e))
                    .expect("distinct entries, distinct tuples"),
            })
            .collect();
        let mut tables = vec![None; levels];
        for (k, spec) in format.levels().iter().enumerate() {
            if spec.coord == LevelCoord::EllSlot {
                sink.stream.set_size(k, slots_used);
            }
            if let Some(rule) = spec.format.table_rule() {
                // Tuples in storage order: a parent's children are consecutive.
                let (mut widest, mut children) = (0, 0);
                for &first in &changed {
                    if first < k {
                        children = 0;
                    }
                    if first <= k {
                        children += 1;
                    }
                    widest = widest.max(children);
                }
                tables[k] = Some((rule, (rule.width)(widest, sizes[k])));
            }
        }
        sink.stream
            .place_computed(tables)
            .map_err(unrepresentable)?;
        for (e, &value) in values.iter().enumerate() {
            sink.push(tuple(e), changed[e], value, e);
        }
    } else {
        let mut regroup = Regroup::new(coords, &sizes);
        entries(&mut |entry, value| {
            if in_order && !regroup.add(entry, value, &mut sink) {
                in_order = false;
            }
        });
        if in_order && !regroup.flush(&mut sink) {
            in_order = false;
        }
    }
    if !in_order {
        return Ok(None);
    }
    sink.finish(dims, format, value_type)
        .map(Some)
        .map_err(unrepresentable)
}

/// The first level at which `next` differs from `previous` (0 when `previous` is empty,
/// before the first tuple), which then holds `next`; `None` when `next` does not come
/// after `previous` in lexicographic order.
#[inline]
fn next_in_order(previous: &mut Vec<i64>, next: &[i64]) -> Option<usize> {
    let first_changed = if previous.is_empty() {
        previous.extend_from_slice(next);
        0
    } else {
        match first_difference(previous, next) {
            Some(k) if previous[k] < next[k] => k,
            _ => return None,
        }
    };
    previous[first_changed..].copy_from_slice(&next[first_changed..]);
    Some(first_changed)
}

/// Tuples held together and handed on in lexicographic order: the step that puts a group
/// of entries in another order.
struct HeldGroup {
    /// Coordinates per tuple.
    width: usize,
    /// Each coordinate's share of a packed sort key, in bits, outermost first; `None` when
    /// the extents need more than 128 bits (tuples are then compared coordinate by
    /// coordinate).
    key_bits: Option<Vec<u32>>,
    /// The held tuples, one after another, their sort keys and their values.
    tuples: Vec<i64>,
    keys: Vec<u128>,
    values: Vec<f64>,
    /// The held tuples' order.
    order: Vec<usize>,
}

impl HeldGroup {
    /// A group of tuples whose coordinates lie in `0..extents[k]`.
    fn new(extents: &[usize]) -> HeldGroup {
        let bits: Vec<u32> = extents
            .iter()
            .map(|&extent| usize::BITS - extent.saturating_sub(1).leading_zeros())
            .collect();
        HeldGroup {
            width: extents.len(),
            key_bits: (bits.iter().sum::<u32>() <= u128::BITS).then_some(bits),
            tuples: Vec::new(),
            keys: Vec::new(),
            values: Vec::new(),
            order: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    /// The first coordinate of the last tuple held.
    fn last_first(&self) -> Option<i64> {
        self.len()
            .checked_sub(1)
            .map(|last| self.tuples[last * self.width])
    }

    fn hold(&mut self, tuple: impl IntoIterator<Item = i64>, value: f64) {
        let start = self.tuples.len();
        self.tuples.extend(tuple);
        if let Some(bits) = &self.key_bits {
            let key = bits
                .iter()
                .zip(&self.tuples[start..])
                .fold(0u128, |key, (&b, &c)| (key << b) | c as u128);
            self.keys.push(key);
        }
        self.values.push(value);
    }

    /// Hand the held tuples to `each` in lexicographic order, with their values and their
    /// numbers in the order held, then forget them; false as soon as `each` is.
    fn drain(&mut self, mut each: impl FnMut(&[i64], f64, usize) -> bool) -> bool {
        let (width, held) = (self.width, self.len());
        let tuples = &self.tuples;
        let at = |e: usize| &tuples[e * width..(e + 1) * width];
        self.order.clear();
        self.order.extend(0..held);
        if !(1..held).all(|e| at(e - 1) < at(e)) {
            match self.key_bits {
                Some(_) => {
                    let keys = &self.keys;
                    self.order.sort_unstable_by_key(|&e| keys[e]);
                }
                None => self.order.sort_unstable_by(|&a, &b| at(a).cmp(at(b))),
            }
        }
        let all = self.order.iter().all(|&e| each(at(e), self.values[e], e));
        self.tuples.clear();
        self.keys.clear();
        self.values.clear();
        all
    }
}

/// Entries in the modes' order put in storage order: the entries sharing a first-level
/// coordinate are held until the next one starts, then sorted by their storage
/// coordinates and streamed.
struct Regroup {
    coords: Vec<LevelCoord>,
    group: HeldGroup,
    /// The previous entry's coordinates, to check that entries come in the modes' order.
    previous_entry: Vec<i64>,
    /// The last streamed tuple, to find the first level each tuple changes.
    previous_tuple: Vec<i64>,
    /// Entries seen so far.
    seen: usize,
}

impl Regroup {
    fn new(coords: Vec<LevelCoord>, sizes: &[usize]) -> Regroup {
        Regroup {
            coords,
            group: HeldGroup::new(sizes),
            previous_entry: Vec::new(),
            previous_tuple: Vec::new(),
            seen: 0,
        }
    }

    /// Take one entry; false when it does not come after the previous entry in the
    /// modes' order, or a group streamed before it was out of storage order.
    fn add(&mut self, entry: &[i64], value: f64, sink: &mut Sink) -> bool {
        if next_in_order(&mut self.previous_entry, entry).is_none() {
            return false;
        }
        let first = storage_coord(self.coords[0], entry, 0);
        let starts_group = self.group.last_first().is_some_and(|last| last != first);
        if starts_group && !self.flush(sink) {
            return false;
        }
        let tuple = self.coords.iter().map(|&c| storage_coord(c, entry, 0));
        self.group.hold(tuple, value);
        self.seen += 1;
        true
    }

    /// Stream the held entries in storage order; false when two have the same storage
    /// coordinates or the group does not come after the previous one.
    fn flush(&mut self, sink: &mut Sink) -> bool {
        let first_entry = self.seen - self.group.len();
        let previous = &mut self.previous_tuple;
        self.group.drain(|tuple, value, e| {
            let Some(first_changed) = next_in_order(previous, tuple) else {
                return false;
            };
            sink.push(tuple, first_changed, value, first_entry + e);
            true
        })
    }
}

/// The entries of a source whose first level is ordered and stores mode 0 or its blocks
/// (BCSR, hashed rows, COO with repeated rows), put back in the modes' order: they come
/// grouped by that level's coordinate, and each group is sorted by the entries'
/// coordinates.
struct Regather {
    first: LevelCoord,
    /// The first level's coordinate of the group held.
    key: Option<i64>,
    group: HeldGroup,
}

impl Regather {
    fn add(&mut self, entry: &[i64], value: f64, visit: &mut dyn FnMut(&[i64], f64)) {
        let key = storage_coord(self.first, entry, 0);
        if self.key != Some(key) {
            self.flush(visit);
            self.key = Some(key);
        }
        self.group.hold(entry.iter().copied(), value);
    }

    fn flush(&mut self, visit: &mut dyn FnMut(&[i64], f64)) {
        self.group.drain(|entry, value, _| {
            visit(entry, value);
            true
        });
    }
}

/// The coordinate a level of `coord` stores for an entry with coordinates `entry`, of
/// rank `slot` among the entries of its row.
#[inline]
pub(super) fn storage_coord(coord: LevelCoord, entry: &[i64], slot: i64) -> i64 {
    match coord {
        LevelCoord::Mode(m) => entry[m],
        LevelCoord::BlockOuter { mode, block } => entry[mode] / block as i64,
        LevelCoord::BlockInner { mode, block } => entry[mode] % block as i64,
        LevelCoord::EllSlot => slot,
        LevelCoord::Diagonal => unreachable!("built levels do not store diagonals"),
    }
}

/// Each level's size: its mode's dimension, its number of blocks or the block's side (0
/// for ELL slots and diagonals, which the entries decide).
pub(super) fn level_sizes(format: &Format, dims: &[usize]) -> Vec<usize> {
    format
        .levels()
        .iter()
        .map(|spec| match spec.coord {
            LevelCoord::Mode(m) => dims[m],
            LevelCoord::BlockOuter { mode, block } => dims[mode].div_ceil(block),
            LevelCoord::BlockInner { block, .. } => block,
            LevelCoord::EllSlot | LevelCoord::Diagonal => 0,
        })
        .collect()
}

/// How each level of `format` is built from tuples in storage order, when every level has
/// a layout the runtime writes natively ([`Layout`]; hash tables only of distinct
/// coordinates) and stores a mode, a block of one or an ELL slot; `None` otherwise and for
/// scalars.
fn built_levels(format: &Format) -> Option<Vec<Built>> {
    let kinds: Vec<Built> = format
        .levels()
        .iter()
        .map(|spec| {
            if spec.coord == LevelCoord::Diagonal {
                return None;
            }
            Some(match spec.format.layout()? {
                Layout::Full => Built::Inserted,
                Layout::Segments => Built::Appended {
                    unique: spec.format.properties().unique,
                },
                Layout::Singleton => Built::Singleton,
                Layout::Table if spec.format.properties().unique => Built::Table,
                Layout::Table => return None,
            })
        })
        .collect::<Option<_>>()?;
    (!kinds.is_empty()).then_some(kinds)
}

/// The first level at which two coordinate tuples differ; `None` when they are equal.
fn first_difference(a: &[i64], b: &[i64]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// Levels being built from tuples of storage coordinates, with the values that go with
/// them.
struct Sink {
    stream: StreamedLevels,
    /// The leaf level appends: each value's position is its own number.
    leaf_appends: bool,
    /// Each value's leaf position, when the leaf does not append.
    placed: Vec<usize>,
    /// Each entry's leaf position, by the entry's number, when tracked.
    slots: Option<Vec<usize>>,
    values: Vec<f64>,
}

impl Sink {
    /// Room for about `expected` tuples; an error when the leaf's coordinates cannot be
    /// allocated.
    fn new(
        kinds: Vec<Built>,
        sizes: Vec<usize>,
        expected: usize,
        track: bool,
    ) -> Result<Sink, String> {
        let mut stream = StreamedLevels::new(kinds, sizes);
        stream.reserve_offsets()?;
        let leaf_appends = stream.leaf_appends();
        if leaf_appends {
            // The leaf level takes one coordinate per entry.
            stream.reserve_last(expected)?;
        }
        Ok(Sink {
            stream,
            leaf_appends,
            placed: Vec::with_capacity(if leaf_appends { 0 } else { expected }),
            slots: track.then(|| vec![0; expected]),
            values: Vec::with_capacity(expected),
        })
    }

    /// Add a tuple of storage coordinates (after the previous one in storage order), the
    /// first level at which it differs from the previous (0 for the first), its value
    /// and the number of its entry in the order given.
    #[inline]
    fn push(&mut self, coords: &[i64], first_changed: usize, value: f64, entry: usize) {
        let position = self.stream.push_changed(coords, first_changed);
        if !self.leaf_appends {
            self.placed.push(position);
        }
        if let Some(slots) = &mut self.slots {
            if slots.len() <= entry {
                slots.resize(entry + 1, 0);
            }
            slots[entry] = position;
        }
        self.values.push(value);
    }

    /// The tensor of `dims` in `format`, and each entry's value slot when tracked.
    fn finish(
        self,
        dims: &[usize],
        format: &Format,
        value_type: ValueType,
    ) -> Result<(Tensor, Vec<usize>), String> {
        let (levels, positions) = self.stream.finish()?;
        let values = match (self.leaf_appends, value_type) {
            // One value per tuple, in storage order: the values are the tuples' own.
            (true, ValueType::F64) => Values::F64(self.values),
            (true, ValueType::F32) => Values::F32(self.values.iter().map(|&v| v as f32).collect()),
            (false, _) => {
                let mut values = Values::try_zeros(value_type, Some(positions))?;
                for (&slot, &v) in self.placed.iter().zip(&self.values) {
                    values.set(slot, v);
                }
                values
            }
        };
        let tensor = Tensor {
            dims: dims.to_vec(),
            format: format.clone(),
            levels,
            values,
            fill: 0.0,
            generation: Generation::fresh(),
        };
        Ok((tensor, self.slots.unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::pack::pack_general;
    use rand::{Rng, SeedableRng};

    /// Converting from a source whose first level stores mode 0 or its blocks out of the
    /// modes' order below it (BCSR, hashed rows, COO) builds exactly what packing its
    /// coordinate list builds, explicit zeros of its padding included.
    #[test]
    fn regathered_sources_convert_like_their_coordinate_lists() {
        let mut r = rand::rngs::StdRng::seed_from_u64(5);
        for _ in 0..20 {
            let dims = vec![r.gen_range(1..13), r.gen_range(1..13)];
            let mut coo = Coo::empty(dims.clone());
            for i in 0..dims[0] {
                for j in 0..dims[1] {
                    if r.gen_bool(0.25) {
                        coo.coords.extend([i as i64, j as i64]);
                        coo.values.push(r.gen_range(-1.0..1.0));
                    }
                }
            }
            for from in ["bcsr:2x3", "bcsr:3x1", "dh", "uq", "coo"] {
                let source =
                    Tensor::from_coo(&coo, &Format::parse(from, 2).unwrap(), ValueType::F64)
                        .unwrap();
                for to in ["csr", "dcsr", "bcsr:2x2", "ell", "dh"] {
                    let target = Format::parse(to, 2).unwrap();
                    let streamed = stream_converted(&source, &target)
                        .unwrap()
                        .unwrap_or_else(|| panic!("{from} to {to} streams"));
                    let packed =
                        Tensor::from_coo(&source.to_coo(), &target, ValueType::F64).unwrap();
                    assert!(
                        streamed.with_narrowest_indices() == packed,
                        "{from} to {to} over {dims:?}"
                    );
                }
            }
        }
    }

    /// The streaming path builds exactly what the general path builds.
    #[test]
    fn streaming_matches_general_packing() {
        let mut r = rand::rngs::StdRng::seed_from_u64(7);
        let mut singleton_conflicts = 0;
        for spelling in [
            "d", "s", "dd", "ds", "sd", "ss", "dss", "sds", "ssd", "sss", "dsss", "uq", "ucq",
            "us", "su", "uu", "dq", "duq", "bcsr:2x2", "bcsr:1x3", "bcsr:3x1", "bcsr:4x2", "ell",
            "h", "dh", "hh", "hd", "dhh", "hq",
        ] {
            let order = if spelling.starts_with("bcsr") || spelling == "ell" {
                2
            } else {
                spelling.len()
            };
            let format = Format::parse(spelling, order).unwrap();
            for density in [0.0, 0.05, 0.3, 1.0].repeat(5) {
                // Matrices up to 12 x 12: several block rows, hash collisions, long rows.
                let side = if order <= 2 { 13 } else { 6 };
                let dims: Vec<usize> = (0..order).map(|_| r.gen_range(1..side)).collect();
                let total: usize = dims.iter().product();
                let mut coo = Coo::empty(dims.clone());
                for p in 0..total {
                    if r.gen_bool(density) {
                        let mut rest = p;
                        let mut c = vec![0i64; order];
                        for m in (0..order).rev() {
                            c[m] = (rest % dims[m]) as i64;
                            rest /= dims[m];
                        }
                        coo.coords.extend(c);
                        coo.values.push(r.gen_range(-1.0..1.0));
                    }
                }
                let what = format!("{spelling} {dims:?} density {density}");
                let streamed = match pack_streaming(&coo, &format, ValueType::F64, true) {
                    Ok(Some(packed)) => Ok(packed),
                    Ok(None) => {
                        panic!(
                            "{what}: dense, compressed, singleton, blocked and ELL levels stream"
                        )
                    }
                    Err(e) => Err(e),
                };
                let general = pack_general(&coo, &format, ValueType::F64, true);
                match (streamed, general) {
                    (Ok(streamed), Ok(general)) => {
                        assert!(streamed.0 == general.0, "{what}");
                        assert_eq!(streamed.1, general.1, "{what}: slots");
                    }
                    // A singleton level under a parent with two entries.
                    (Err(_), Err(_)) => singleton_conflicts += 1,
                    (streamed, general) => panic!("{what}: {streamed:?} against {general:?}"),
                }
            }
        }
        // Both paths refused the same inputs, and there were some to refuse.
        assert!(singleton_conflicts > 0);
        // A table above a level that appends would need its parents in slot order.
        let coo = Coo::new(vec![3, 3], vec![0, 1, 2, 2], vec![1.0, 2.0]).unwrap();
        for spelling in ["hs", "sh"] {
            let format = Format::parse(spelling, 2).unwrap();
            let streamed = pack_streaming(&coo, &format, ValueType::F64, false).unwrap();
            assert!(streamed.is_none(), "{spelling}");
        }
    }
}
