//! The levels of DIA: range (the rows a diagonal covers) and offset (the column of a
//! row on a diagonal).

use super::*;

/// Range level (DIA rows): the rows `[max(0, -offset[d]), min(N, M - offset[d]))` of the
/// parent diagonal `d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range;

impl Range {
    /// The range level.
    pub fn level() -> Level {
        Arc::new(Range)
    }
}

fn diagonal_offset(site: &LevelSite, ancestor: usize) -> Expr {
    Expr::load(
        site.array(ArrayKind::Offset),
        site.ancestors[ancestor].clone(),
    )
}

impl LevelFormat for Range {
    fn name(&self) -> &'static str {
        "range"
    }
    fn spelling(&self) -> String {
        "r".into()
    }
    fn properties(&self) -> Properties {
        Properties {
            full: false,
            ordered: true,
            unique: true,
            branchless: false,
            compact: false,
        }
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            coord_value_iter: true,
            ..NO_CAPABILITIES
        }
    }
    fn arrays(&self) -> &'static [ArrayKind] {
        &[ArrayKind::Offset]
    }
    fn params(&self) -> &'static [ParamKind] {
        &[ParamKind::Size, ParamKind::Width]
    }
    fn coord_iter(&self, site: &LevelSite) -> Option<Pair> {
        let offset = diagonal_offset(site, site.level - 2);
        Some((
            Expr::max(Expr::Int(0), Expr::Neg(Box::new(offset.clone()))),
            Expr::min(
                site.param(ParamKind::Size),
                Expr::sub(site.param(ParamKind::Width), offset),
            ),
        ))
    }
    fn coord_access(&self, site: &LevelSite, parent_pos: &Expr, coord: &Expr) -> Option<Pair> {
        DENSE.coord_access(site, parent_pos, coord)
    }
    fn positions_bound(&self, parent_positions: u128, size: u128, _: u128, _: u128) -> u128 {
        // Every diagonal keeps a slot for each row, inside the matrix or not.
        parent_positions.saturating_mul(size)
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        let size = input.size;
        Ok(PackOutput {
            children: pack_computed(input)?,
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Offset, input.diagonal_offsets.to_vec().into())],
                params: vec![
                    (ParamKind::Size, size as i64),
                    (ParamKind::Width, input.next_size as i64),
                ],
            },
            positions: padded_positions(input)?,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        // `coord_iter` bounds the rows by the column count: it must be the next level's.
        let width = input.storage.param(ParamKind::Width);
        if width != input.next_size as i64 {
            return Err("the range width must equal the number of columns".into());
        }
        check_offsets(input, 1, input.size as i64, width)?;
        computed_positions(input)
    }
}

/// Offset level (DIA columns): the single coordinate `i + offset[d]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset;

impl Offset {
    /// The offset level.
    pub fn level() -> Level {
        Arc::new(Offset)
    }
}

impl LevelFormat for Offset {
    fn name(&self) -> &'static str {
        "offset"
    }
    fn spelling(&self) -> String {
        "o".into()
    }
    fn properties(&self) -> Properties {
        Properties {
            full: false,
            ordered: true,
            unique: true,
            branchless: true,
            compact: false,
        }
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            coord_pos_iter: true,
            ..NO_CAPABILITIES
        }
    }
    fn arrays(&self) -> &'static [ArrayKind] {
        &[ArrayKind::Offset]
    }
    fn pos_iter(&self, _site: &LevelSite, parent_pos: &Expr) -> Option<Pair> {
        Some((
            parent_pos.clone(),
            Expr::add(parent_pos.clone(), Expr::Int(1)),
        ))
    }
    fn pos_access(&self, site: &LevelSite, _pos: &Expr) -> Option<Pair> {
        let row = site.ancestors[site.level - 2].clone();
        Some((
            Expr::add(row, diagonal_offset(site, site.level - 3)),
            Expr::Bool(true),
        ))
    }
    fn positions_bound(&self, parent_positions: u128, _: u128, _: u128, _: u128) -> u128 {
        // One column per row of a diagonal, stored or padding.
        parent_positions
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        // The diagonal coordinate is defined as the index of `j - i`, so every stored column
        // equals `i + offset[d]` by construction; only the one-child rule needs checking.
        for seg in input.segments {
            check_in_range(input, seg)?;
            if seg.hi - seg.lo > 1 {
                return Err(format!(
                    "level {}: an offset level holds one coordinate per parent",
                    input.level
                ));
            }
        }
        Ok(PackOutput {
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Offset, input.diagonal_offsets.to_vec().into())],
                params: vec![(ParamKind::Size, input.size as i64)],
            },
            positions: input.parent_positions,
            children: input.segments.to_vec(),
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        // The columns `i + offset[d]` stay inside the matrix only for the offsets the range
        // level above bounded its rows with.
        let rows = &input.ancestors[input.level - 2];
        check_offsets(input, 2, rows.param(ParamKind::Size), input.size as i64)?;
        if rows
            .array(ArrayKind::Offset)
            .map(crate::format::IndexArray::to_i64)
            != Some(input.array(ArrayKind::Offset))
        {
            return Err("the offsets differ from those of the row level".into());
        }
        Ok(input.parent_positions)
    }
}
