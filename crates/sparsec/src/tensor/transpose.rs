//! Converting a tensor to another mode order without a coordinate list: a compressed
//! matrix (CSR to CSC and back) in one counting pass, a dense tensor in tiles.

use super::Generation;
use super::{Team, Tensor, TensorError, Values};
use crate::format::{Format, IndexArray, LevelStorage, Streaming};
use crate::ir::{ArrayKind, ParamKind};
use std::mem::MaybeUninit;
use std::sync::Mutex;

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
    /// A dense tensor in another dense mode order: one pass over the values, in tiles,
    /// shared among `team` when each of its threads gets enough values to copy. The
    /// target's values are written once, by the copy (no zeroing pass before it).
    pub(super) fn transpose_dense(
        &self,
        format: &Format,
        team: &dyn Team,
    ) -> Result<Tensor, TensorError> {
        let from = self.format.mode_order().expect("plain");
        let to = format.mode_order().expect("plain");
        let layout = Permutation::new(&self.dims, &from, &to);
        let refused = |reason| TensorError::Unrepresentable {
            format: format.to_string(),
            reason,
        };
        let values = match &self.values {
            Values::F64(source) => Values::F64(layout.copied(source, team).map_err(refused)?),
            Values::F32(source) => Values::F32(layout.copied(source, team).map_err(refused)?),
        };
        // A dense level stores its mode's size alone: the target's levels are the source's
        // in the target's order.
        let level_of = |mode| from.iter().position(|&m| m == mode).expect("a permutation");
        let levels = to
            .iter()
            .map(|&m| self.levels[level_of(m)].clone())
            .collect();
        let mut transposed = Tensor::from_parts(self.dims.clone(), format.clone(), levels, values);
        transposed.fill = self.fill;
        Ok(transposed)
    }

    /// `self` in `format` when both are compressed matrices of opposite mode orders:
    /// count the entries of each target row, then place the source's rows in order, so
    /// that each target row comes out sorted; shared among `team` in blocks of source rows
    /// when there are enough entries. `None` for other pairs of formats.
    pub(super) fn transpose_compressed(&self, format: &Format, team: &dyn Team) -> Option<Tensor> {
        let (outer, inner) = compressed_modes(&self.format)?;
        if compressed_modes(format)? != (inner, outer) {
            return None;
        }
        let (rows, cols) = (self.dims[outer], self.dims[inner]);
        let leaf = &self.levels[1];
        let pos = leaf.array(ArrayKind::Pos)?.to_i64();
        let idx = leaf.array(ArrayKind::Idx)?;
        // The target stores `int32_t` indices when its positions (up to the entries the
        // rows' ranges hold, counted as placing counts them, so that no count or slot
        // overflows) and its indices (the rows that hold entries) fit.
        let (mut placed, mut last_row_placed) = (0usize, 0);
        for r in 0..pos.len().saturating_sub(1) {
            let entries = row_entries(&pos, r).len();
            if entries > 0 {
                placed = placed.saturating_add(entries);
                last_row_placed = r;
            }
        }
        let narrow = last_row_placed <= i32::MAX as usize && placed <= i32::MAX as usize;
        let (target_pos, target_idx, values) = match idx {
            IndexArray::I32(idx) => transposed_stored(&pos, idx, &self.values, cols, narrow, team),
            IndexArray::I64(idx) => transposed_stored(&pos, idx, &self.values, cols, narrow, team),
        };
        let size = |n: usize| vec![(ParamKind::Size, n as i64)];
        Some(Tensor {
            dims: self.dims.clone(),
            format: format.clone(),
            levels: vec![
                LevelStorage {
                    arrays: vec![],
                    params: size(cols),
                },
                LevelStorage {
                    arrays: vec![(ArrayKind::Pos, target_pos), (ArrayKind::Idx, target_idx)],
                    params: size(rows),
                },
            ],
            values,
            fill: self.fill,
            generation: Generation::fresh(),
        })
    }
}

/// The entries of row `r` of a compressed matrix whose positions are `pos`, empty where
/// the positions are negative or decrease.
fn row_entries(pos: &[i64], r: usize) -> std::ops::Range<usize> {
    pos[r].max(0) as usize..pos[r + 1].max(0) as usize
}

/// The integer types an index array stores.
trait Index: Copy + Send + Sync {
    fn to_usize(self) -> usize;
    /// `n`, which the caller has checked fits.
    fn from_usize(n: usize) -> Self;
}

impl Index for i32 {
    fn to_usize(self) -> usize {
        self as usize
    }
    fn from_usize(n: usize) -> Self {
        n as i32
    }
}

impl Index for i64 {
    fn to_usize(self) -> usize {
        self as usize
    }
    fn from_usize(n: usize) -> Self {
        n as i64
    }
}

/// A transposed compressed matrix: target positions, target indices, values.
struct Transposed<D, V>(Vec<D>, Vec<D>, Vec<V>);

impl<D, V> Transposed<D, V>
where
    Vec<D>: Into<IndexArray>,
{
    fn stored(self, values: fn(Vec<V>) -> Values) -> (IndexArray, IndexArray, Values) {
        (self.0.into(), self.1.into(), values(self.2))
    }
}

/// [`transposed`] for the values stored, with `int32_t` target indices when `narrow`.
fn transposed_stored<S: Index>(
    pos: &[i64],
    idx: &[S],
    values: &Values,
    cols: usize,
    narrow: bool,
    team: &dyn Team,
) -> (IndexArray, IndexArray, Values) {
    match (narrow, values) {
        (true, Values::F64(v)) => {
            transposed::<S, i32, _>(pos, idx, v, cols, team).stored(Values::F64)
        }
        (true, Values::F32(v)) => {
            transposed::<S, i32, _>(pos, idx, v, cols, team).stored(Values::F32)
        }
        (false, Values::F64(v)) => {
            transposed::<S, i64, _>(pos, idx, v, cols, team).stored(Values::F64)
        }
        (false, Values::F32(v)) => {
            transposed::<S, i64, _>(pos, idx, v, cols, team).stored(Values::F32)
        }
    }
}

/// The fewest stored entries a thread is given to transpose (as [`VALUES_PER_COPYING_THREAD`]).
const ENTRIES_PER_TRANSPOSING_THREAD: usize = 1 << 16;

/// Slots of an array that a team's threads write apart, each slot by one thread.
struct SharedSlots<T>(*mut T);

// SAFETY: the threads write disjoint slots (see `transposed`), and the array outlives the
// team's run.
unsafe impl<T: Send> Sync for SharedSlots<T> {}

impl<T> SharedSlots<T> {
    /// The first slot (a method, so that a closure captures the whole `Sync` wrapper).
    fn start(&self) -> *mut T {
        self.0
    }
}

/// The matrix whose rows `pos` and `idx` store (entries `pos[r]..pos[r + 1]` of row `r`,
/// columns below `cols`), stored by columns, each column's rows in order. Each part of
/// `team` takes a block of rows holding about its share of the entries: it counts its
/// entries in every column, and from those counts gets a run of slots in each column
/// after the runs of the blocks above it, which it fills in row order.
fn transposed<S: Index, D: Index, V: Copy + Default + Send + Sync>(
    pos: &[i64],
    idx: &[S],
    values: &[V],
    cols: usize,
    team: &dyn Team,
) -> Transposed<D, V> {
    let rows = pos.len().saturating_sub(1);
    let stored = pos.last().map_or(0, |&p| p.max(0) as usize);
    let parts = team
        .size()
        .min(stored / ENTRIES_PER_TRANSPOSING_THREAD)
        .max(1);
    let mut blocks = vec![0; parts + 1];
    for p in 1..parts {
        let first_entry = stored * p / parts;
        blocks[p] = pos
            .partition_point(|&q| (q.max(0) as usize) < first_entry)
            .clamp(blocks[p - 1], rows);
    }
    blocks[parts] = rows;
    let block_rows = |p: usize| blocks[p]..blocks[p + 1];
    // Counts and slots are kept at the target's index width: half the cache for `int32_t`.
    let counts: Vec<Mutex<Vec<D>>> = (0..parts).map(|_| Mutex::default()).collect();
    team.run(parts, &|p| {
        let mut counted = crate::memory::with_huge_pages(cols, D::from_usize(0));
        for r in block_rows(p) {
            for q in row_entries(pos, r) {
                let count = &mut counted[idx[q].to_usize()];
                *count = D::from_usize(count.to_usize() + 1);
            }
        }
        *counts[p].lock().unwrap_or_else(|e| e.into_inner()) = counted;
    });
    // Each block's counts become the first slot of its run in every column.
    let mut firsts: Vec<Vec<D>> = counts
        .into_iter()
        .map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    let mut target_pos = Vec::with_capacity(cols + 1);
    let mut next = 0usize;
    for c in 0..cols {
        target_pos.push(D::from_usize(next));
        for block in firsts.iter_mut() {
            let count = block[c].to_usize();
            block[c] = D::from_usize(next);
            next += count;
        }
    }
    target_pos.push(D::from_usize(next));
    let mut target_idx = crate::memory::with_huge_pages(next, D::from_usize(0));
    let mut target_values = crate::memory::with_huge_pages(next, V::default());
    let (idx_slots, value_slots) = (
        SharedSlots(target_idx.as_mut_ptr()),
        SharedSlots(target_values.as_mut_ptr()),
    );
    let firsts: Vec<Mutex<Vec<D>>> = firsts.into_iter().map(Mutex::new).collect();
    team.run(parts, &|p| {
        let mut slots = firsts[p].lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the block counted exactly the entries it places, so its run in each
        // column holds them, and the runs of the blocks lie apart within the `next` slots
        // allocated.
        unsafe {
            place_block(
                block_rows(p),
                pos,
                idx,
                values,
                &mut slots,
                idx_slots.start(),
                value_slots.start(),
            )
        };
    });
    Transposed(target_pos, target_idx, target_values)
}

/// Places the entries of `rows` (see [`transposed`]), each at the next free slot of its
/// column in `slots`. A function of its own, so that the compiler sees that writing an
/// entry changes no slot (in a closure it reloaded them after every write).
///
/// # Safety
/// For every column, `slots` holds the first of a run of slots in `idx_out` and
/// `values_out` long enough for this block's entries in that column, which no other
/// thread accesses meanwhile.
unsafe fn place_block<S: Index, D: Index, V: Copy>(
    rows: std::ops::Range<usize>,
    pos: &[i64],
    idx: &[S],
    values: &[V],
    slots: &mut [D],
    idx_out: *mut D,
    values_out: *mut V,
) {
    for r in rows {
        // The same entries as `transposed` counted.
        for q in row_entries(pos, r) {
            let slot = &mut slots[idx[q].to_usize()];
            let at = slot.to_usize();
            // SAFETY: as the caller promises.
            unsafe {
                idx_out.add(at).write(D::from_usize(r));
                values_out.add(at).write(values[q]);
            }
            *slot = D::from_usize(at + 1);
        }
    }
}

/// Where each component of a dense tensor lies in two mode orders: the strides of every
/// mode in the source's storage and in the target's.
#[derive(Clone)]
struct Permutation {
    dims: Vec<usize>,
    source_stride: Vec<usize>,
    target_stride: Vec<usize>,
    /// The mode contiguous in the source (its last in storage order) and in the target.
    source_inner: usize,
    target_inner: usize,
    /// The target's first mode in storage order: cut along it, the target falls into
    /// contiguous slabs that threads can fill apart.
    target_outer: usize,
}

/// The fewest values a thread is given to copy: waking one costs microseconds, the time
/// to copy some thousands of values. A 32 x 50,000 matrix transposed at every run of an
/// SDDMM took 3 to 5 ms on one thread, a fifth to a third of the run on two.
const VALUES_PER_COPYING_THREAD: usize = 1 << 16;

/// Side of the square tiles a transposing copy moves: a tile's rows in the source and in
/// the target (16 values of 8 bytes: two cache lines each) stay in the first-level cache
/// while it is copied. Copying in the source's order instead writes each target line once
/// per source row: a 32 x 100,000 matrix transposed that way took 20 ms, 7 ns a value,
/// converted at every run of an SDDMM whose loops read it by columns.
const TRANSPOSE_TILE: usize = 16;

impl Permutation {
    fn new(dims: &[usize], from: &[usize], to: &[usize]) -> Permutation {
        let strides = |order: &[usize]| {
            let mut stride = vec![0usize; dims.len()];
            let mut s = 1;
            for &m in order.iter().rev() {
                stride[m] = s;
                s *= dims[m];
            }
            stride
        };
        Permutation {
            dims: dims.to_vec(),
            source_stride: strides(from),
            target_stride: strides(to),
            source_inner: from.last().copied().unwrap_or(0),
            target_inner: to.last().copied().unwrap_or(0),
            target_outer: to.first().copied().unwrap_or(0),
        }
    }

    /// `source` (in the source's order) copied into a new vector in the target's order on
    /// `team`: one slab of the target's first mode a thread, each with at least
    /// [`VALUES_PER_COPYING_THREAD`] values. An error when the vector cannot be allocated.
    fn copied<T: Copy + Send + Sync>(
        &self,
        source: &[T],
        team: &dyn Team,
    ) -> Result<Vec<T>, String> {
        let parts = team.size().min(source.len() / VALUES_PER_COPYING_THREAD);
        self.copied_in(source, parts, team)
    }

    /// [`Permutation::copied`] in up to `parts` parts.
    fn copied_in<T: Copy + Send + Sync>(
        &self,
        source: &[T],
        parts: usize,
        team: &dyn Team,
    ) -> Result<Vec<T>, String> {
        let mut target = crate::memory::reserved(source.len(), &|| "the values array".into())?;
        let slots = &mut target.spare_capacity_mut()[..source.len()];
        self.copy_in(source, slots, parts, team);
        // SAFETY: the mode orders are permutations of one another, so the copy wrote each
        // of the `source.len()` slots once (every part runs, on the team or after it).
        unsafe { target.set_len(source.len()) };
        Ok(target)
    }

    /// Copy `source` into `target` in up to `parts` slabs of the target's first mode, run
    /// on `team`.
    fn copy_in<T: Copy + Send + Sync>(
        &self,
        source: &[T],
        target: &mut [MaybeUninit<T>],
        parts: usize,
        team: &dyn Team,
    ) {
        let outer = self.target_outer;
        let slabs = self.dims.get(outer).copied().unwrap_or(1);
        let parts = parts.min(slabs);
        if parts <= 1 || self.dims.contains(&0) {
            return self.copy(source, target);
        }
        let (slab_in_source, slab_in_target) =
            (self.source_stride[outer], self.target_stride[outer]);
        // Each part's layout, source and target, taken once by the thread that copies it.
        let mut pieces = Vec::with_capacity(parts);
        let mut rest = target;
        let mut first = 0;
        for part in 1..=parts {
            let end = slabs * part / parts;
            let (mine, others) =
                std::mem::take(&mut rest).split_at_mut((end - first) * slab_in_target);
            rest = others;
            let mut piece = self.clone();
            piece.dims[outer] = end - first;
            pieces.push(Mutex::new(Some((
                piece,
                &source[first * slab_in_source..],
                mine,
            ))));
            first = end;
        }
        team.run(parts, &|part| {
            let taken = pieces[part]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some((piece, from, to)) = taken {
                piece.copy(from, to);
            }
        });
        // A part the team left (a thread it could not start) is copied here.
        for piece in pieces {
            let left = piece.into_inner().unwrap_or_else(|e| e.into_inner());
            if let Some((piece, from, to)) = left {
                piece.copy(from, to);
            }
        }
    }

    /// Copy `source` (in the source's order) into `target` (in the target's).
    fn copy<T: Copy>(&self, source: &[T], target: &mut [MaybeUninit<T>]) {
        if self.dims.contains(&0) {
            return;
        }
        if self.dims.is_empty() {
            write_run(target, source);
            return;
        }
        let (a, b) = (self.source_inner, self.target_inner);
        // Every mode but the two inner ones, walked with an odometer.
        let outer: Vec<usize> = (0..self.dims.len()).filter(|&m| m != a && m != b).collect();
        let mut coord = vec![0usize; outer.len()];
        let (mut from, mut to) = (0usize, 0usize);
        loop {
            if a == b {
                // The same mode is contiguous in both: runs of it are copied whole.
                let run = self.dims[a];
                write_run(&mut target[to..to + run], &source[from..from + run]);
            } else {
                self.copy_tiles(source, target, from, to);
            }
            // The next outer coordinate, or the end.
            let mut k = outer.len();
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                let m = outer[k];
                coord[k] += 1;
                from += self.source_stride[m];
                to += self.target_stride[m];
                if coord[k] < self.dims[m] {
                    break;
                }
                from -= self.source_stride[m] * self.dims[m];
                to -= self.target_stride[m] * self.dims[m];
                coord[k] = 0;
            }
        }
    }

    /// The plane of the two inner modes at offsets `from` and `to`, in square tiles: `a`
    /// contiguous in the source, `b` in the target.
    fn copy_tiles<T: Copy>(
        &self,
        source: &[T],
        target: &mut [MaybeUninit<T>],
        from: usize,
        to: usize,
    ) {
        let (a, b) = (self.source_inner, self.target_inner);
        let (rows, columns) = (self.dims[b], self.dims[a]);
        let (source_row, target_column) = (self.source_stride[b], self.target_stride[a]);
        for row_tile in (0..rows).step_by(TRANSPOSE_TILE) {
            let row_end = (row_tile + TRANSPOSE_TILE).min(rows);
            for column_tile in (0..columns).step_by(TRANSPOSE_TILE) {
                let column_end = (column_tile + TRANSPOSE_TILE).min(columns);
                for column in column_tile..column_end {
                    let written = to + column * target_column;
                    for row in row_tile..row_end {
                        target[written + row].write(source[from + row * source_row + column]);
                    }
                }
            }
        }
    }
}

/// Write `source` into the slots of `target`, one for one.
fn write_run<T: Copy>(target: &mut [MaybeUninit<T>], source: &[T]) {
    for (slot, &value) in target.iter_mut().zip(source) {
        slot.write(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::walk::Reading;
    use crate::tensor::{CallingThread, Coo, IndexWidth, ValueType};
    use rand::{Rng, SeedableRng};

    /// A thread of the standard library for each part.
    struct ThreadEach;

    impl Team for ThreadEach {
        fn size(&self) -> usize {
            usize::MAX
        }

        fn run(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) {
            std::thread::scope(|scope| {
                for part in 0..parts {
                    scope.spawn(move || work(part));
                }
            });
        }
    }

    /// CSR to CSC and back against packing the same entries in the target format: empty
    /// and 1 x 1 matrices, empty rows and columns, one row holding half the entries (so
    /// that blocks of rows cannot be even), explicit zeros; both index widths and value
    /// types; on one thread and in up to 2 and 3 blocks of rows.
    #[test]
    fn compressed_matrices_transpose_entry_by_entry() {
        let mut r = rand::rngs::StdRng::seed_from_u64(11);
        let (csr, csc) = (
            Format::parse("csr", 2).unwrap(),
            Format::parse("csc", 2).unwrap(),
        );
        let team_of = |parts: usize| -> Box<dyn Team> {
            match parts {
                1 => Box::new(CallingThread),
                n => Box::new(Limited(n)),
            }
        };
        for (rows, cols, entries) in [
            (0, 0, 0),
            (1, 1, 1),
            (5, 0, 0),
            (0, 5, 0),
            (40, 30, 200),
            (700, 3, 2_000),
            (2_000, 200_000, 300_000),
        ] {
            let heavy = rows / 3;
            let mut coo = Coo::empty(vec![rows, cols]);
            for e in 0..entries {
                // Half the entries in one row, in distinct columns while there are enough.
                let (row, col) = match e % 2 {
                    0 => (heavy, e / 2 % cols),
                    _ => (r.gen_range(0..rows), r.gen_range(0..cols)),
                };
                let value = if e % 7 == 0 { 0.0 } else { e as f64 + 0.25 };
                coo.coords.extend([row as i64, col as i64]);
                coo.values.push(value);
            }
            for ty in [ValueType::F64, ValueType::F32] {
                for (from, to) in [(&csr, &csc), (&csc, &csr)] {
                    let expected = Tensor::from_coo(&coo, to, ty).unwrap();
                    let source = Tensor::from_coo(&coo, from, ty).unwrap();
                    for width in [IndexWidth::I32, IndexWidth::I64] {
                        let source = source.clone().with_fitting_width(width);
                        for parts in [1, 2, 3] {
                            let got = source.transpose_compressed(to, &*team_of(parts)).unwrap();
                            assert!(
                                got == expected,
                                "{rows} x {cols}, {entries} entries, {from} to {to}, {ty:?}, {width:?}, {parts} parts"
                            );
                        }
                    }
                }
            }
        }
    }

    /// [`ThreadEach`] with at most this many parts.
    struct Limited(usize);

    impl Team for Limited {
        fn size(&self) -> usize {
            self.0
        }

        fn run(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) {
            ThreadEach.run(parts, work)
        }
    }

    /// Dense tensors converted to every other dense mode order hold every component where
    /// the target order puts it: orders 1 to 4, sides across the tile's (1, 15, 16, 17,
    /// 40), empty sides, both value types, on one thread and cut among threads.
    #[test]
    fn dense_mode_orders_convert_component_by_component() {
        let mut r = rand::rngs::StdRng::seed_from_u64(5);
        let permutations = |n: usize| -> Vec<Vec<usize>> {
            let mut all = vec![vec![]];
            for _ in 0..n {
                all = all
                    .into_iter()
                    .flat_map(|p: Vec<usize>| {
                        (0..n)
                            .filter(|m| !p.contains(m))
                            .map(|m| {
                                let mut q = p.clone();
                                q.push(m);
                                q
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect();
            }
            all
        };
        let spelling = |order: &[usize]| {
            let levels = "d".repeat(order.len());
            let modes: Vec<String> = order.iter().map(|m| m.to_string()).collect();
            format!("{levels}:{}", modes.join(","))
        };
        for n in 1..=4usize {
            for trial in 0..6 {
                let sides = [1, 15, 16, 17, 40, 3, 0];
                let dims: Vec<usize> = (0..n)
                    .map(|_| {
                        let side = sides[r.gen_range(0..sides.len() - 1)];
                        // Keep order 4 small; one trial of each order has an empty side.
                        if trial == 5 {
                            0
                        } else if n == 4 {
                            side.min(17)
                        } else {
                            side
                        }
                    })
                    .collect();
                let total: usize = dims.iter().product();
                let coords: Vec<i64> = (0..total)
                    .flat_map(|mut k| {
                        let mut c = vec![0i64; n];
                        for m in (0..n).rev() {
                            c[m] = (k % dims[m]) as i64;
                            k /= dims[m];
                        }
                        c
                    })
                    .collect();
                let values: Vec<f64> = (0..total).map(|k| k as f64 + 0.5).collect();
                let coo = Coo {
                    dims: dims.clone(),
                    coords,
                    values,
                };
                for ty in [ValueType::F64, ValueType::F32] {
                    for from in permutations(n) {
                        let source_format = Format::parse(&spelling(&from), n).unwrap();
                        let source = Tensor::from_coo(&coo, &source_format, ty).unwrap();
                        for to in permutations(n) {
                            let format = Format::parse(&spelling(&to), n).unwrap();
                            let converted = source.convert(&format).unwrap();
                            // Cut in three among threads (uneven slabs of 15, 16, 17 and
                            // 40, one slab each of 3, fewer parts than asked for 1), the copy
                            // stores what it stores on one thread.
                            let layout = Permutation::new(&dims, &from, &to);
                            let parted = match source.values() {
                                Values::F64(v) => {
                                    Values::F64(layout.copied_in(v, 3, &ThreadEach).unwrap())
                                }
                                Values::F32(v) => {
                                    Values::F32(layout.copied_in(v, 3, &ThreadEach).unwrap())
                                }
                            };
                            assert_eq!(&parted, converted.values(), "{dims:?} {from:?} -> {to:?}");
                            assert_eq!(converted.format(), &format);
                            // Component by component: the value at each coordinate.
                            let mut at_target = vec![f64::NAN; total];
                            converted.walk_stored(Reading::Native, &mut |c, v| {
                                let k = c
                                    .iter()
                                    .zip(&dims)
                                    .fold(0usize, |k, (&x, &d)| k * d + x as usize);
                                at_target[k] = v;
                            });
                            let expected: Vec<f64> = (0..total).map(|k| k as f64 + 0.5).collect();
                            assert_eq!(at_target, expected, "{dims:?} {from:?} -> {to:?} {ty:?}");
                        }
                    }
                }
            }
        }
    }
}
