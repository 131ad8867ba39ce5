//! A kernel's output: what one call produced, the assembled output kept for recomputing
//! its values, and the driver of a two-phase kernel ([`crate::ir::rows`]) that places a
//! sparse output's entries in its storage, shared by index-notation kernels
//! ([`super::Kernel`]) and SPF kernels (`crate::spf::SpfKernel`), which bind their
//! arguments differently but run the phases alike.

use crate::format::{Format, IndexArray};
use crate::ir::{ArrayKind, ArrayRef, OperandId, ParamRef, ScalarArg, Signature};
use crate::tensor::{Coo, Rows, Tensor, ValueType, Values};
use crate::Error;

use super::bind::Arguments;

/// The sparse output whose rows a kernel places.
pub(crate) struct PlacedOutput<'a> {
    pub(crate) name: &'a str,
    pub(crate) dims: &'a [usize],
    pub(crate) format: &'a Format,
    pub(crate) value_type: ValueType,
}

/// Count the entries of each row of the output (`call` with the phase parameter 0),
/// allocate its leaf level and values once, then place the entries (phase 1). `call`
/// runs the code once on `arguments`, whose output slots this function fills. The leaf's
/// coordinates are `int32_t` when `arguments.narrow` holds them, so they need no
/// narrowing afterwards.
pub(crate) fn place_rows(
    out: &PlacedOutput,
    signature: &Signature,
    arguments: &mut Arguments,
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
    let cannot = |e: String| Error::Input(format!("cannot store the output `{}`: {e}", out.name));
    let mut pos = crate::memory::filled(rows.and_then(|r| r.checked_add(1)), 0i64, &|| {
        "the offsets of its rows".to_string()
    })
    .map_err(cannot)?;
    let rows = pos.len() - 1;
    let leaf = |kind| ArrayRef::Level {
        operand: OperandId(0),
        level: levels.len(),
        kind,
    };
    let slot = |array: ArrayRef| signature.arrays.iter().position(|a| *a == array);
    let phase = signature
        .scalars
        .iter()
        .position(|s| *s == ScalarArg::Param(ParamRef::Phase))
        .expect("a two-phase kernel reads its phase");
    let (pos_slot, idx_slot, values_slot) = (
        slot(leaf(ArrayKind::Pos)).expect("the kernel counts rows"),
        slot(leaf(ArrayKind::Idx)),
        slot(ArrayRef::Values(OperandId(0))),
    );

    arguments.arrays[pos_slot] = pos.as_mut_ptr().cast();
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
    let starts = pos.clone();
    let entries = entries as usize;
    // Not zeroed: the placing phase writes every slot, which the check below confirms
    // before the lengths are set.
    let what = || format!("the {entries} entries");
    let narrow_leaf = idx_slot.is_some_and(|s| arguments.narrow.contains(&signature.arrays[s]));
    let mut idx = if narrow_leaf {
        IndexArray::I32(crate::memory::reserved(entries, &what).map_err(cannot)?)
    } else {
        IndexArray::I64(crate::memory::reserved(entries, &what).map_err(cannot)?)
    };
    let mut values = match out.value_type {
        ValueType::F64 => Values::F64(crate::memory::reserved(entries, &what).map_err(cannot)?),
        ValueType::F32 => Values::F32(crate::memory::reserved(entries, &what).map_err(cannot)?),
    };

    arguments.arrays[pos_slot] = pos.as_mut_ptr().cast();
    if let Some(s) = idx_slot {
        arguments.arrays[s] = match &mut idx {
            IndexArray::I32(v) => v.as_mut_ptr().cast(),
            IndexArray::I64(v) => v.as_mut_ptr().cast(),
        };
    }
    if let Some(s) = values_slot {
        arguments.arrays[s] = match &mut values {
            Values::F64(v) => v.as_mut_ptr().cast(),
            Values::F32(v) => v.as_mut_ptr().cast(),
        };
    }
    arguments.params[phase] = 1;
    call(arguments)?;
    // Each row's cursor stopped at its end, the next row's start: every slot of every
    // row was written once (each placed entry writes its coordinate and value).
    let unwritten = entries > 0 && (idx_slot.is_none() || values_slot.is_none());
    if pos[..rows] != starts[1..] || unwritten {
        return Err(Error::Input(format!(
            "internal error: the kernel placed other entries in the rows of `{}` than it \
             counted",
            out.name
        )));
    }
    // SAFETY: capacity `entries` was reserved, and the kernel wrote slots 0..entries of
    // both arrays (checked above).
    unsafe {
        match &mut idx {
            IndexArray::I32(v) => v.set_len(entries),
            IndexArray::I64(v) => v.set_len(entries),
        }
        match &mut values {
            Values::F64(v) => v.set_len(entries),
            Values::F32(v) => v.set_len(entries),
        }
    }
    pos.copy_within(0..rows, 1);
    pos[0] = 0;
    Ok(Rows { pos, idx, values })
}

/// What one call of the generated kernel produced.
pub(super) enum Produced {
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
