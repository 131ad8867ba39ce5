//! A kernel's output: what one call produced, the assembled output kept for recomputing
//! its values, and the driver of a two-phase kernel ([`crate::ir::rows`]) that places a
//! sparse output's entries in its storage, shared by index-notation kernels
//! ([`super::Kernel`]) and SPF kernels (`crate::spf::SpfKernel`), which bind their
//! arguments differently but run the phases alike.

use std::time::Instant;

use crate::format::{Format, IndexArray};
use crate::ir::{ArrayKind, ArrayRef, OperandId, OutputMode, ParamRef, ScalarArg, Signature};
use crate::tensor::{Coo, Rows, Tensor, ValueType, Values};
use crate::Error;

use super::bind::Arguments;
use super::placement::{Placement, PlacementPace};

/// The sparse output whose rows a kernel places.
pub(crate) struct PlacedOutput<'a> {
    pub(crate) name: &'a str,
    pub(crate) dims: &'a [usize],
    pub(crate) format: &'a Format,
    pub(crate) value_type: ValueType,
}

impl PlacedOutput<'_> {
    /// The error for storage the output cannot have.
    fn cannot_store(&self, reason: String) -> Error {
        Error::Input(format!("cannot store the output `{}`: {reason}", self.name))
    }
}

/// Entries of room from which a kernel that can append its output, run on threads, lets
/// its [`PlacementPace`] choose between appending on one thread and counting and placing
/// on the threads; shorter outputs are appended on one thread. Whether the threads pay
/// depends on the work an entry costs, which the entries do not tell: an element-wise sum
/// spends an addition on each, SDDMM an inner product (32 multiply-adds and a row of `D`
/// fetched from memory at `k = 32`). A line at 524,288 entries kept SDDMM with 500,000
/// entries on one thread (33 ms on one thread, 36 ms "on two", 2026-11-28). The line is
/// now the least work a team forms for (two shares of `SPARSEC_MIN_SHARE` units in
/// `runtime.c`, which a unit test keeps in step), each entry taking at least one unit;
/// below it the two placements differ by microseconds.
const CONTESTED_FROM: usize = 8192;

/// Largest room a workspace kernel's summed row bounds may reserve for appending (in
/// entries: 2 GiB of 64-bit coordinates and values). Only the slots written are touched,
/// so a loose bound costs address space, not memory; beyond it the rows are counted.
const BOUNDED_ROOM_MAX: usize = 1 << 27;

/// Place the output's entries in its rows. A kernel with an appending phase
/// ([`crate::ir::rows`]) that runs on one thread, or on threads that so few entries
/// would not keep busy, or on threads that `pace` found slower, appends them in one call
/// on one thread, into room for `expected_entries` (a guess; 0 skips the attempt), or,
/// for a kernel with `bounds`, for the sum of its rows' bounds (phase 3), which appending
/// cannot exceed. On threads, such a kernel places each row in its bounded room (phase 1),
/// and the rows are then packed. Otherwise, or when its rows came out of order, the
/// entries of each row are counted (phase 0), the leaf level and values allocated once,
/// and the entries placed (phase 1). `call` runs the code once on `arguments`, whose
/// output slots this function fills. The leaf's coordinates are `int32_t` when
/// `arguments.narrow` holds them, so they need no narrowing afterwards.
pub(crate) fn place_rows(
    out: &PlacedOutput,
    signature: &Signature,
    arguments: &mut Arguments,
    expected_entries: usize,
    bounds: bool,
    pace: &PlacementPace,
    call: &mut dyn FnMut(&mut Arguments) -> Result<(), Error>,
) -> Result<Rows, Error> {
    let levels = out.format.levels();
    let (upper, _) = out
        .format
        .row_levels()
        .expect("rows are placed for row formats");
    let rows = upper
        .iter()
        .try_fold(1usize, |rows, &(m, _)| rows.checked_mul(out.dims[m]));
    let mut pos = crate::memory::filled(rows.and_then(|r| r.checked_add(1)), 0i64, &|| {
        "the offsets of its rows".to_string()
    })
    .map_err(|e| out.cannot_store(e))?;
    let rows = pos.len() - 1;
    let leaf = |kind| ArrayRef::Level {
        operand: OperandId(0),
        level: levels.len(),
        kind,
    };
    let slot = |array: ArrayRef| signature.arrays.iter().position(|a| *a == array);
    let scalar = |arg: ScalarArg| signature.scalars.iter().position(|s| *s == arg);
    let idx = slot(leaf(ArrayKind::Idx));
    let slots = LeafSlots {
        pos: slot(leaf(ArrayKind::Pos)).expect("the kernel counts rows"),
        idx,
        values: slot(ArrayRef::Values(OperandId(0))),
        phase: scalar(ScalarArg::Param(ParamRef::Phase))
            .expect("a two-phase kernel reads its phase"),
        narrow_idx: idx.is_some_and(|s| arguments.narrow.contains(&signature.arrays[s])),
    };
    let phase = slots.phase;
    let threads = scalar(ScalarArg::Threads);
    // The kernel's rows bounded (phase 3), as the start of each row's room.
    let bounded_starts = if bounds {
        arguments.point(slots.pos, &mut pos);
        arguments.params[phase] = 3;
        call(arguments)?;
        let mut starts = Vec::with_capacity(rows + 1);
        let mut room = 0usize;
        for &bound in &pos[1..] {
            starts.push(room as i64);
            room = room.saturating_add(bound as usize);
        }
        starts.push(room as i64);
        pos.fill(0);
        (room <= BOUNDED_ROOM_MAX).then_some(starts)
    } else {
        None
    };
    let room = match &bounded_starts {
        Some(starts) => starts[rows] as usize,
        None if bounds => 0,
        None => expected_entries,
    };
    let capacity = scalar(ScalarArg::Param(ParamRef::Capacity));
    // Outputs of kernels that can append (those with a capacity; the placement of the
    // others is not read) are placed as the kernel's calls found faster, on threads and
    // with room enough; the time of that placement is recorded for the next choice.
    let contested = capacity.is_some()
        && threads.is_some_and(|t| arguments.params[t] > 1)
        && room >= CONTESTED_FROM;
    let placement = if contested {
        pace.choose()
    } else {
        Placement::OneThread
    };
    let started = Instant::now();
    let placed = place_rows_as(
        placement,
        out,
        &slots,
        Prepared {
            pos,
            bounded_starts,
            bounds,
            room,
            capacity,
            threads,
        },
        arguments,
        call,
    );
    if contested && placed.is_ok() {
        pace.record(placement, started.elapsed(), room);
    }
    placed
}

/// What [`place_rows`] prepared before choosing the placement.
struct Prepared {
    /// Zeroed, one more than the rows.
    pos: Vec<i64>,
    /// Each row's room from a kernel's bounds (phase 3), when they fit.
    bounded_starts: Option<Vec<i64>>,
    /// The kernel has a bounding phase.
    bounds: bool,
    /// The entries to reserve for appending.
    room: usize,
    /// The scalar slots of the appending phase's capacity and of the thread count.
    capacity: Option<usize>,
    threads: Option<usize>,
}

/// The rest of [`place_rows`], once the placement is chosen.
fn place_rows_as(
    placement: Placement,
    out: &PlacedOutput,
    slots: &LeafSlots,
    prepared: Prepared,
    arguments: &mut Arguments,
    call: &mut dyn FnMut(&mut Arguments) -> Result<(), Error>,
) -> Result<Rows, Error> {
    let Prepared {
        mut pos,
        mut bounded_starts,
        bounds,
        room,
        capacity,
        threads,
    } = prepared;
    let rows = pos.len() - 1;
    let phase = slots.phase;

    // Room that bounds ask for but the allocator refuses is counted instead.
    let reserve = |room| match LeafArrays::reserved(room, slots, out) {
        Err(_) if bounds => Ok(None),
        reserved => reserved.map(Some),
    };
    if let Some(capacity) = capacity.filter(|_| placement == Placement::OneThread && room > 0) {
        if let Some(mut leaf) = reserve(room)? {
            leaf.bind(arguments, slots, &mut pos);
            arguments.params[phase] = 2;
            arguments.params[capacity] = room as i64;
            let requested = threads.map(|t| (t, std::mem::replace(&mut arguments.params[t], 1)));
            let appended = call(arguments);
            if let Some((t, requested)) = requested {
                arguments.params[t] = requested;
            }
            appended?;
            if pos[0] == 0 {
                // Rows came in order: each holds its end, rows without entries still 0.
                for r in 0..rows {
                    pos[r + 1] = pos[r + 1].max(pos[r]);
                }
                let entries = pos[rows] as usize;
                if entries <= room {
                    leaf.written(entries, slots, out.name)?;
                    return Ok(leaf.into_rows(pos));
                }
                if bounds {
                    return Err(Error::Input(format!(
                        "internal error: the kernel placed {entries} entries in `{}`, more than \
                         its rows' bounds ({room})",
                        out.name
                    )));
                }
                // More entries than room: `pos` holds each row's start, as counting gives.
                return place_counted(pos, out, slots, arguments, call);
            }
            pos.fill(0);
        } else {
            // Refused once: not tried again for the rows on threads.
            bounded_starts = None;
        }
    }

    if let Some(starts) = bounded_starts.filter(|_| room > 0) {
        if let Some(leaf) = reserve(room)? {
            return place_bounded(starts, leaf, slots, out.name, arguments, call);
        }
    }

    arguments.point(slots.pos, &mut pos);
    arguments.params[phase] = 0;
    call(arguments)?;
    // Counts, `pos[r + 1]` for row `r`, become starts, `pos[r]`.
    let mut entries = 0i64;
    for r in 0..rows {
        let count = pos[r + 1];
        pos[r] = entries;
        entries += count;
    }
    pos[rows] = entries;
    place_counted(pos, out, slots, arguments, call)
}

/// The guess [`place_rows`] appends with: the entries the sparse inputs store (dense ones
/// aside), given as each input's format and number of stored values. An output whose
/// entries each come from an entry of some input (element-wise operations, SDDMM, TTV
/// into a sparse result) has no more.
pub(crate) fn stored_sparse_entries<'f>(
    inputs: impl IntoIterator<Item = (&'f Format, usize)>,
) -> usize {
    inputs
        .into_iter()
        .filter(|(format, _)| !format.is_all_dense())
        .map(|(_, stored)| stored)
        .fold(0, usize::saturating_add)
}

/// Where a two-phase kernel's output goes in its arguments: the array slots of the leaf
/// level and the values, the scalar slot of the phase, and whether the leaf's coordinates
/// are `int32_t`.
struct LeafSlots {
    pos: usize,
    idx: Option<usize>,
    values: Option<usize>,
    phase: usize,
    narrow_idx: bool,
}

/// Phase 1 of a two-phase kernel: `pos` holds each row's start (and its last slot the
/// number of entries); the leaf's coordinates and values are allocated at their exact size
/// and the kernel places the entries.
fn place_counted(
    mut pos: Vec<i64>,
    out: &PlacedOutput,
    slots: &LeafSlots,
    arguments: &mut Arguments,
    call: &mut dyn FnMut(&mut Arguments) -> Result<(), Error>,
) -> Result<Rows, Error> {
    let rows = pos.len() - 1;
    let entries = pos[rows] as usize;
    // Not zeroed: the placing phase writes every slot, which the check below confirms
    // before the lengths are set.
    let leaf = LeafArrays::reserved(entries, slots, out)?;
    let (mut leaf, starts) = place_from(&mut pos, leaf, slots, arguments, call)?;
    // Each row's cursor stopped at its end, the next row's start: every slot of every
    // row was written once (each placed entry writes its coordinate and value).
    if pos[..rows] != starts[1..] {
        return Err(Error::Input(format!(
            "internal error: the kernel placed other entries in the rows of `{}` than it \
             counted",
            out.name
        )));
    }
    leaf.written(entries, slots, out.name)?;
    pos.copy_within(0..rows, 1);
    pos[0] = 0;
    Ok(leaf.into_rows(pos))
}

/// Run phase 1 into `leaf`, with each row's cursor in `cursors` starting where it holds;
/// returns `leaf` and the starts.
fn place_from(
    cursors: &mut [i64],
    mut leaf: LeafArrays,
    slots: &LeafSlots,
    arguments: &mut Arguments,
    call: &mut dyn FnMut(&mut Arguments) -> Result<(), Error>,
) -> Result<(LeafArrays, Vec<i64>), Error> {
    let starts = cursors.to_vec();
    leaf.bind(arguments, slots, cursors);
    arguments.params[slots.phase] = 1;
    call(arguments)?;
    Ok((leaf, starts))
}

/// Phase 1 of a kernel with bounds, on threads: each row is placed from the start of its
/// room (`starts`, the bounds' prefix sums), then the rows are moved left to close the gaps
/// the bounds left. One numeric pass and a copy of the entries, where counting would take
/// a symbolic pass as long as the numeric one's loops.
fn place_bounded(
    starts: Vec<i64>,
    room: LeafArrays,
    slots: &LeafSlots,
    name: &str,
    arguments: &mut Arguments,
    call: &mut dyn FnMut(&mut Arguments) -> Result<(), Error>,
) -> Result<Rows, Error> {
    let rows = starts.len() - 1;
    let mut pos = starts;
    let (mut leaf, starts) = place_from(&mut pos, room, slots, arguments, call)?;
    if (0..rows).any(|r| pos[r] < starts[r] || pos[r] > starts[r + 1]) {
        return Err(Error::Input(format!(
            "internal error: the kernel placed more entries in a row of `{}` than its bound",
            name
        )));
    }
    // Each cursor holds its row's end; rows move left in order, so none overwrites a row
    // still to move.
    let mut entries = 0usize;
    for r in 0..rows {
        let (from, len) = (starts[r] as usize, (pos[r] - starts[r]) as usize);
        // SAFETY: the kernel wrote slots `from..from + len` of both arrays (the cursor
        // moved over them, within the row's room), and `entries <= from`.
        unsafe { leaf.move_slots(from, entries, len) };
        pos[r] = entries as i64;
        entries += len;
    }
    pos[rows] = entries as i64;
    leaf.written(entries, slots, name)?;
    Ok(leaf.into_rows(pos))
}

/// The leaf level's coordinates and the values of a sparse output being placed: reserved,
/// then given their length once the kernel has written them.
struct LeafArrays {
    idx: IndexArray,
    values: Values,
}

impl LeafArrays {
    /// Room for `entries` of `out`, at the coordinate width `slots` says.
    fn reserved(
        entries: usize,
        slots: &LeafSlots,
        out: &PlacedOutput,
    ) -> Result<LeafArrays, Error> {
        let what = || format!("the {entries} entries");
        let room = || -> Result<LeafArrays, String> {
            let idx = if slots.narrow_idx {
                IndexArray::I32(crate::memory::reserved(entries, &what)?)
            } else {
                IndexArray::I64(crate::memory::reserved(entries, &what)?)
            };
            let values = match out.value_type {
                ValueType::F64 => Values::F64(crate::memory::reserved(entries, &what)?),
                ValueType::F32 => Values::F32(crate::memory::reserved(entries, &what)?),
            };
            Ok(LeafArrays { idx, values })
        };
        room().map_err(|e| out.cannot_store(e))
    }

    /// Point the kernel's output slots at these arrays and at `pos`.
    fn bind(&mut self, arguments: &mut Arguments, slots: &LeafSlots, pos: &mut [i64]) {
        arguments.point(slots.pos, pos);
        if let Some(s) = slots.idx {
            match &mut self.idx {
                IndexArray::I32(v) => arguments.point_room(s, v),
                IndexArray::I64(v) => arguments.point_room(s, v),
            }
        }
        if let Some(s) = slots.values {
            match &mut self.values {
                Values::F64(v) => arguments.point_room(s, v),
                Values::F32(v) => arguments.point_room(s, v),
            }
        }
    }

    /// The kernel wrote slots `0..entries` of both arrays (which the caller checked),
    /// within their reserved room; room beyond is given back.
    fn written(&mut self, entries: usize, slots: &LeafSlots, name: &str) -> Result<(), Error> {
        if entries > 0 && (slots.idx.is_none() || slots.values.is_none()) {
            return Err(Error::Input(format!(
                "internal error: the kernel placed entries of `{name}` without writing their \
                 coordinates and values"
            )));
        }
        // SAFETY: the kernel wrote slots 0..entries of both arrays, whose capacity is at
        // least `entries` (the kernel writes no slot at or past its room).
        unsafe {
            match &mut self.idx {
                IndexArray::I32(v) => set_len_within(v, entries),
                IndexArray::I64(v) => set_len_within(v, entries),
            }
            match &mut self.values {
                Values::F64(v) => set_len_within(v, entries),
                Values::F32(v) => set_len_within(v, entries),
            }
        }
        Ok(())
    }

    /// Move slots `from..from + len` of both arrays to `to..to + len` (the ranges may
    /// overlap).
    ///
    /// # Safety
    /// Both ranges lie within the reserved room and the slots moved were written.
    unsafe fn move_slots(&mut self, from: usize, to: usize, len: usize) {
        unsafe fn move_within<T>(v: &mut Vec<T>, from: usize, to: usize, len: usize) {
            let base = v.as_mut_ptr();
            std::ptr::copy(base.add(from), base.add(to), len);
        }
        match &mut self.idx {
            IndexArray::I32(v) => move_within(v, from, to, len),
            IndexArray::I64(v) => move_within(v, from, to, len),
        }
        match &mut self.values {
            Values::F64(v) => move_within(v, from, to, len),
            Values::F32(v) => move_within(v, from, to, len),
        }
    }

    fn into_rows(self, pos: Vec<i64>) -> Rows {
        Rows {
            pos,
            idx: self.idx,
            values: self.values,
        }
    }
}

/// Set the length of `v`, whose first `len` slots the kernel wrote, and give back the
/// room it reserved beyond them when that is more than they fill. (Shrinking a block
/// moves or splits it: on 20M appended entries, a shrink by a few slots made the next
/// run's allocation fault its pages in again, 110 ms became 180.)
///
/// # Safety
/// Slots `0..len` of `v`'s allocation are initialised and `len <= v.capacity()`.
unsafe fn set_len_within<T>(v: &mut Vec<T>, len: usize) {
    assert!(len <= v.capacity());
    v.set_len(len);
    if v.capacity() - len > len {
        v.shrink_to_fit();
    }
}

/// Run a lowered function's code as its output `mode` requires, and what it produced:
/// a two-phase kernel's rows placed in `target` through [`place_rows`] (expecting about
/// `expected_entries`), else one call, whose entries (an emitting kernel's) or `dense`
/// output (written in place) are the result. `call` runs the code once and returns the
/// entries it emitted (none for other outputs). Every front end's run goes through here.
#[allow(clippy::too_many_arguments)]
pub(crate) fn produce(
    mode: OutputMode,
    dense: Tensor,
    target: &PlacedOutput,
    signature: &Signature,
    arguments: &mut Arguments,
    expected_entries: usize,
    pace: &PlacementPace,
    call: &mut dyn FnMut(&mut Arguments) -> Result<Coo, Error>,
) -> Result<Produced, Error> {
    Ok(match mode {
        OutputMode::Rows { bounds } => Produced::Rows(place_rows(
            target,
            signature,
            arguments,
            expected_entries,
            bounds,
            pace,
            &mut |a| call(a).map(drop),
        )?),
        OutputMode::Emit { .. } => Produced::Entries(call(arguments)?),
        OutputMode::Dense { .. } => {
            call(arguments)?;
            Produced::Dense(dense)
        }
    })
}

/// What one call of the generated kernel produced.
pub(crate) enum Produced {
    /// A dense output, complete.
    Dense(Tensor),
    /// A sparse output's entries in the order the kernel emitted them, to be assembled.
    Entries(Coo),
    /// A sparse output's leaf level and values, placed row by row by the kernel.
    Rows(Rows),
}

/// A kernel's output kept with what is needed to recompute its values in place
/// (see [`super::Kernel::assemble`]).
pub struct Assembled {
    pub(super) tensor: Tensor,
    /// For sparse outputs: the entries the kernel emitted and the value slot of each.
    pub(super) structure: Option<OutputStructure>,
}

pub(super) enum OutputStructure {
    /// The entries a kernel emitted (or placed out of order), and the value slot of each.
    Entries { coords: Vec<i64>, slots: Vec<usize> },
    /// The rows a two-phase kernel placed in order: each entry is its own value slot.
    Rows { pos: Vec<i64>, idx: IndexArray },
}

impl Assembled {
    /// The output tensor, in the statement's output format.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// Take the output tensor.
    pub fn into_tensor(self) -> Tensor {
        self.tensor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Element, IndexWidth};
    use std::collections::BTreeSet;

    /// A stand-in for a generated CSR kernel that emits `entries` (row, column, value) in
    /// the given order, following the phase protocol of `ir::rows`; returns the rows
    /// placed and the phases called, in order.
    /// Place `entries` through a kernel that emits them in the given order; with
    /// `bound_per_entry`, the kernel has the bounding phase, which adds that much per
    /// entry to its row. Returns the rows and the phases called.
    fn place(
        entries: &[(usize, i64, f64)],
        threads: i64,
        expected: usize,
        bound_per_entry: Option<i64>,
    ) -> (Rows, Vec<i64>) {
        place_paced(
            entries,
            threads,
            expected,
            bound_per_entry,
            &PlacementPace::default(),
        )
    }

    /// [`place`], for a kernel whose earlier runs `pace` measured.
    fn place_paced(
        entries: &[(usize, i64, f64)],
        threads: i64,
        expected: usize,
        bound_per_entry: Option<i64>,
        pace: &PlacementPace,
    ) -> (Rows, Vec<i64>) {
        let pos = |kind| ArrayRef::Level {
            operand: OperandId(0),
            level: 2,
            kind,
        };
        let signature = Signature {
            arrays: vec![
                pos(ArrayKind::Pos),
                pos(ArrayKind::Idx),
                ArrayRef::Values(OperandId(0)),
            ],
            elements: vec![
                Element::Index(IndexWidth::I64),
                Element::Index(IndexWidth::I64),
                Element::Value(ValueType::F64),
            ],
            scalars: vec![
                ScalarArg::Param(ParamRef::Phase),
                ScalarArg::Param(ParamRef::Capacity),
                ScalarArg::Threads,
            ],
        };
        let mut arguments = Arguments {
            arrays: vec![std::ptr::null_mut(); 3],
            bytes: vec![0; 3],
            contents: vec![crate::target::Contents::Unnamed; 3],
            params: vec![0, 0, threads],
            narrow: BTreeSet::new(),
        };
        let format = Format::parse("csr", 2).unwrap();
        let out = PlacedOutput {
            name: "C",
            dims: &[4, 5],
            format: &format,
            value_type: ValueType::F64,
        };
        let mut phases = Vec::new();
        let mut kernel = |a: &mut Arguments| {
            let (pos, idx, vals) = (
                a.arrays[0].cast::<i64>(),
                a.arrays[1].cast::<i64>(),
                a.arrays[2].cast::<f64>(),
            );
            let (mut taken, mut last_row) = (0i64, 0usize);
            phases.push(a.params[0]);
            assert!(
                a.params[0] != 2 || a.params[2] == 1,
                "phase 2 runs on one thread"
            );
            // SAFETY: the driver bound `pos` to 5 offsets and room for the slots written.
            unsafe {
                for &(row, column, value) in entries {
                    match a.params[0] {
                        0 => *pos.add(row + 1) += 1,
                        3 => *pos.add(row + 1) += bound_per_entry.expect("a bounding kernel"),
                        1 => {
                            let slot = *pos.add(row);
                            *pos.add(row) = slot + 1;
                            *idx.offset(slot as isize) = column;
                            *vals.offset(slot as isize) = value;
                        }
                        _ => {
                            if row < last_row {
                                *pos = 1;
                            }
                            last_row = row;
                            if taken < a.params[1] {
                                *idx.offset(taken as isize) = column;
                                *vals.offset(taken as isize) = value;
                            }
                            taken += 1;
                            *pos.add(row + 1) = taken;
                        }
                    }
                }
            }
            Ok(())
        };
        let bounds = bound_per_entry.is_some();
        let rows = place_rows(
            &out,
            &signature,
            &mut arguments,
            expected,
            bounds,
            pace,
            &mut kernel,
        );
        let rows = rows.unwrap();
        (rows, phases)
    }

    /// Four entries of a 4 x 5 matrix, emitted row by row and with row 2 first.
    const IN_ORDER: [(usize, i64, f64); 4] = [(0, 1, 1.0), (0, 3, 2.0), (2, 0, 3.0), (3, 4, 4.0)];
    const OUT_OF_ORDER: [(usize, i64, f64); 4] =
        [(2, 0, 3.0), (0, 1, 1.0), (0, 3, 2.0), (3, 4, 4.0)];

    /// The rows of [`IN_ORDER`]'s entries.
    fn four_entries() -> Rows {
        Rows {
            pos: vec![0, 2, 2, 3, 4],
            idx: IndexArray::I64(vec![1, 3, 0, 4]),
            values: Values::F64(vec![1.0, 2.0, 3.0, 4.0]),
        }
    }

    #[test]
    fn rows_are_appended_in_one_call_when_they_come_in_order_and_fit() {
        let (in_order, out_of_order) = (IN_ORDER, OUT_OF_ORDER);
        let expected = four_entries();
        // Room for every entry, on one thread: one appending call.
        assert_eq!(place(&in_order, 1, 4, None), (expected.clone(), vec![2]));
        // Too little room: the appending call counted the rows; the entries are placed.
        assert_eq!(place(&in_order, 1, 3, None), (expected.clone(), vec![2, 1]));
        // On threads that few entries would not keep busy: appended on one thread.
        assert_eq!(place(&in_order, 2, 4, None), (expected.clone(), vec![2]));
        // On threads with work for them, or without a guess: counted, then placed.
        assert_eq!(
            place(&in_order, 2, 1 << 20, None),
            (expected.clone(), vec![0, 1])
        );
        assert_eq!(place(&in_order, 1, 0, None), (expected.clone(), vec![0, 1]));
        // Row 0 after row 2: counted and placed after all.
        assert_eq!(place(&out_of_order, 1, 8, None), (expected, vec![2, 0, 1]));
        // No entries at all.
        let empty = Rows {
            pos: vec![0; 5],
            idx: IndexArray::I64(vec![]),
            values: Values::F64(vec![]),
        };
        assert_eq!(place(&[], 1, 4, None), (empty, vec![2]));
    }

    #[test]
    fn bounded_rows_are_appended_into_their_summed_bounds() {
        let (in_order, out_of_order) = (IN_ORDER, OUT_OF_ORDER);
        let expected = four_entries();
        // Bounded, then appended, whatever the guess: the bounds make the room.
        for guess in [0, 1, 4, 1 << 20] {
            assert_eq!(
                place(&in_order, 1, guess, Some(2)),
                (expected.clone(), vec![3, 2])
            );
        }
        // Bounds too loose to reserve: counted, then placed.
        assert_eq!(
            place(&in_order, 1, 4, Some(1 << 26)),
            (expected.clone(), vec![3, 0, 1])
        );
        // On threads: a small bound appends on one thread; a large one places each row in
        // its room on the threads (rows in any order), then packs the rows.
        assert_eq!(
            place(&in_order, 2, 0, Some(1)),
            (expected.clone(), vec![3, 2])
        );
        for entries in [&in_order, &out_of_order] {
            assert_eq!(
                place(entries, 2, 0, Some(1 << 18)),
                (expected.clone(), vec![3, 1])
            );
        }
        // Rows out of order on one thread: placed in their rooms after all, not counted.
        assert_eq!(
            place(&out_of_order, 1, 0, Some(1)),
            (expected, vec![3, 2, 1])
        );
    }

    #[test]
    fn outputs_are_contested_from_the_least_work_a_team_forms_for() {
        let min_share = crate::codegen::runtime::defined("SPARSEC_MIN_SHARE");
        assert_eq!(CONTESTED_FROM as i64, 2 * min_share);
    }

    #[test]
    fn a_paced_kernel_places_its_first_outputs_on_threads_and_its_third_on_one() {
        let expected = four_entries();
        let on_threads = (expected.clone(), vec![0, 1]);
        let appended = (expected.clone(), vec![2]);
        for room in [CONTESTED_FROM, 1 << 20] {
            let pace = PlacementPace::default();
            for phases in [&on_threads, &on_threads, &appended, &on_threads, &appended] {
                assert_eq!(&place_paced(&IN_ORDER, 2, room, None, &pace), phases);
            }
        }
        // Shorter outputs are appended on one thread, and do not count.
        let unpaced = PlacementPace::default();
        for room in [4, CONTESTED_FROM - 1] {
            assert_eq!(place_paced(&IN_ORDER, 2, room, None, &unpaced), appended);
        }
        assert_eq!(
            place_paced(&IN_ORDER, 2, CONTESTED_FROM, None, &unpaced),
            on_threads
        );
    }
}
