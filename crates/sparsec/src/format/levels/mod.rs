//! The six level formats of the thesis (§3.1): dense, range, compressed, singleton, offset
//! and hashed, and a bytemap level (Finch's `SparseByteMap`, simplified). Each is a
//! self-contained description: properties, capabilities, level functions as IR, a packer
//! that builds its arrays from sorted entries and a validator for arrays read from a file.
//! [`LETTERS`] registers them with the format-string parser.

use std::ops::{Add, Mul, Sub};
use std::sync::Arc;

use super::{
    Capabilities, Layout, Level, LevelFormat, LevelSite, LevelStorage, PackInput, PackOutput, Pair,
    Properties, Segment, Streaming, TableRule, ValidateInput,
};
use crate::ir::{ArrayKind, BinOp, Expr, Helper, ParamKind};

const NO_CAPABILITIES: Capabilities = Capabilities {
    coord_value_iter: false,
    coord_pos_iter: false,
    locate: false,
};

/// One level letter of the format-string syntax.
pub(super) struct LevelLetter {
    /// The letter.
    pub letter: char,
    /// What it means, for the parser's error messages.
    pub meaning: &'static str,
    /// Whether the level is unique unless the spelling says `(!u)`.
    pub unique: bool,
    /// The level, from the `ordered` and `unique` flags of its spelling.
    pub make: fn(ordered: bool, unique: bool) -> Level,
}

/// Every level format's letter: the one registry the parser reads (and with it `.spt`
/// files, which store a format's spelling). [`LevelFormat::spelling`] writes these letters.
pub(super) const LETTERS: &[LevelLetter] = &[
    LevelLetter {
        letter: 'd',
        meaning: "dense",
        unique: true,
        make: |ordered, unique| Arc::new(Dense { ordered, unique }),
    },
    LevelLetter {
        letter: 's',
        meaning: "compressed",
        unique: true,
        make: Compressed::level,
    },
    LevelLetter {
        letter: 'u',
        meaning: "compressed, non-unique",
        unique: false,
        make: Compressed::level,
    },
    LevelLetter {
        letter: 'q',
        meaning: "singleton",
        unique: true,
        make: Singleton::level,
    },
    LevelLetter {
        letter: 'c',
        meaning: "singleton, non-unique",
        unique: false,
        make: Singleton::level,
    },
    LevelLetter {
        letter: 'h',
        meaning: "hashed",
        unique: true,
        make: |_, unique| Arc::new(Hashed { unique }),
    },
    LevelLetter {
        letter: 'b',
        meaning: "bytemap",
        unique: true,
        make: |_, _| Bytemap::level(),
    },
    LevelLetter {
        letter: 'r',
        meaning: "range, DIA only",
        unique: true,
        make: |_, _| Range::level(),
    },
    LevelLetter {
        letter: 'o',
        meaning: "offset, DIA only",
        unique: true,
        make: |_, _| Offset::level(),
    },
];

fn property_suffix(ordered: bool, unique: bool) -> String {
    let mut s = String::new();
    if !ordered {
        s.push_str("(!o)");
    }
    if !unique {
        s.push_str("(!u)");
    }
    s
}

/// Split the entries of every segment by this level's coordinate: one child group per
/// distinct coordinate, in entry order (entries are sorted, so equal coordinates are
/// adjacent within a segment).
fn group_by_coord(
    input: &PackInput<'_>,
    mut child_pos: impl FnMut(&Segment, i64) -> usize,
) -> Vec<Segment> {
    let mut children = Vec::with_capacity(input.segments.len());
    for seg in input.segments {
        push_groups(input.coords, seg, &mut children, &mut child_pos);
    }
    children
}

/// Append one child segment per run of equal coordinates in `seg`.
fn push_groups(
    coords: &[i64],
    seg: &Segment,
    children: &mut Vec<Segment>,
    mut child_pos: impl FnMut(&Segment, i64) -> usize,
) {
    let mut lo = seg.lo;
    while lo < seg.hi {
        let c = coords[lo];
        let mut hi = lo + 1;
        while hi < seg.hi && coords[hi] == c {
            hi += 1;
        }
        children.push(Segment {
            parent: child_pos(seg, c),
            lo,
            hi,
        });
        lo = hi;
    }
}

fn check_in_range(input: &PackInput<'_>, seg: &Segment) -> Result<(), String> {
    for e in seg.lo..seg.hi {
        let c = input.coords[e];
        if c < 0 || c as usize >= input.size.max(1) && !(input.size == 0 && c == 0) {
            return Err(format!(
                "level {}: coordinate {c} is outside the level's dimension of size {}",
                input.level, input.size
            ));
        }
    }
    Ok(())
}

/// Pack a level whose positions are computed, `p_{k-1} * N_k + i_k` (dense, range, bytemap):
/// check the coordinates and group the entries under their positions.
fn pack_computed(input: &PackInput<'_>) -> Result<Vec<Segment>, String> {
    for seg in input.segments {
        check_in_range(input, seg)?;
    }
    let size = input.size;
    Ok(group_by_coord(input, |seg, c| {
        seg.parent * size + c as usize
    }))
}

/// Positions a padded level gives its children (`N_k` per parent position), refused
/// when the values they need cannot be allocated: the values array is made only after
/// every level is packed, and a level below may multiply an impossible count further.
fn padded_positions(input: &PackInput<'_>) -> Result<usize, String> {
    let positions = input.parent_positions.checked_mul(input.size);
    crate::memory::bytes_for::<f32>(positions, &|| {
        format!("level {} (one value per position)", input.level)
    })?;
    Ok(positions.expect("bytes_for refuses an overflow"))
}

/// Positions of a level whose positions are computed: `N_k` per parent position.
fn computed_positions(input: &ValidateInput<'_>) -> Result<usize, String> {
    input
        .parent_positions
        .checked_mul(input.size)
        .ok_or_else(|| "too many positions".to_string())
}

/// Check that `array` has `len` entries.
fn check_len(kind: ArrayKind, array: &[i64], len: usize) -> Result<(), String> {
    if array.len() != len {
        return Err(format!(
            "{} has {} entries, expected {len}",
            kind.suffix(),
            array.len()
        ));
    }
    Ok(())
}

/// Check that every coordinate in `idx` lies in `0..size` (or is `empty`, when given).
fn check_coords(input: &ValidateInput<'_>, idx: &[i64], empty: Option<i64>) -> Result<(), String> {
    let size = input.size as u64;
    if idx
        .iter()
        .all(|&c| (c >= 0 && (c as u64) < size) || Some(c) == empty)
    {
        Ok(())
    } else {
        Err(format!("idx holds coordinates outside 0..{size}"))
    }
}

/// Check DIA diagonal offsets: one per diagonal (the size of the diagonal level `diagonal`
/// levels up), each naming a diagonal that meets a `rows x cols` matrix.
fn check_offsets(
    input: &ValidateInput<'_>,
    diagonal: usize,
    rows: i64,
    cols: i64,
) -> Result<(), String> {
    let offsets = input.array(ArrayKind::Offset);
    let diagonals = input.ancestors[input.level - 1 - diagonal].param(ParamKind::Size);
    if offsets.len() as i64 != diagonals {
        return Err(format!(
            "offset has {} entries, expected one per diagonal",
            offsets.len()
        ));
    }
    if offsets
        .iter()
        .any(|&o| o <= -rows.max(1) || o >= cols.max(1))
    {
        return Err("a diagonal offset lies outside the matrix".into());
    }
    Ok(())
}

mod bytemap;
mod dense;
mod dia;
mod hashed;
mod stored;

pub use bytemap::Bytemap;
pub use dense::Dense;
use dense::DENSE;
pub use dia::{Offset, Range};
pub use hashed::{hash_locate, Hashed, HASH_LOCATE};
pub use stored::{Compressed, Siblings, Singleton};

#[cfg(test)]
mod tests {
    use super::*;

    /// Lowering and the runtime decide from capabilities which level functions to call, so
    /// every registered level must provide exactly the functions its capabilities claim.
    #[test]
    fn capabilities_match_the_level_functions() {
        // Level 3 with two ancestors covers the deepest ancestor a level function reads
        // (DIA's offset level reads the diagonal two levels up).
        let site = LevelSite {
            operand: crate::ir::OperandId(0),
            level: 3,
            ancestors: vec![Expr::Int(0), Expr::Int(0)],
        };
        let (p, i) = (Expr::Int(0), Expr::Int(0));
        for entry in LETTERS {
            for (ordered, unique) in [(true, true), (false, false)] {
                let level = (entry.make)(ordered, unique);
                let caps = level.capabilities();
                let name = level.name();
                assert_eq!(
                    caps.coord_value_iter,
                    level.coord_iter(&site).is_some()
                        && level.coord_access(&site, &p, &i).is_some(),
                    "{name}: coordinate value iteration"
                );
                assert_eq!(
                    caps.coord_pos_iter,
                    level.pos_iter(&site, &p).is_some() && level.pos_access(&site, &p).is_some(),
                    "{name}: coordinate position iteration"
                );
                assert_eq!(
                    caps.locate,
                    level.locate(&site, &p, &i, &p).is_some(),
                    "{name}: locate"
                );
                assert!(
                    caps.coord_value_iter || caps.coord_pos_iter,
                    "{name} can be iterated"
                );
                // The spelling's letter is registered for this level format.
                let letter = level.spelling().chars().next().unwrap();
                let row = LETTERS.iter().find(|l| l.letter == letter);
                assert_eq!(
                    row.map(|l| (l.make)(ordered, unique).name()),
                    Some(name),
                    "{name}: letter `{letter}`"
                );
            }
        }
    }
}
