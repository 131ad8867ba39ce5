//! The six level formats of the thesis (§3.1): dense, range, compressed, singleton, offset
//! and hashed, and a bytemap level (Finch's `SparseByteMap`, simplified). Each is a
//! self-contained description: properties, capabilities, level functions as IR, a packer
//! that builds its arrays from sorted entries and a validator for arrays read from a file.
//! [`LETTERS`] registers them with the format-string parser.

use std::ops::{Add, Mul, Sub};
use std::sync::Arc;

use super::{
    Capabilities, Level, LevelFormat, LevelSite, LevelStorage, PackInput, PackOutput, Pair,
    Properties, Segment, Streaming, ValidateInput,
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

/// Dense level: stores only its size and encodes every coordinate in `[0, N)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dense {
    /// Configurable: siblings in increasing order (always true as stored).
    pub ordered: bool,
    /// Configurable: no duplicate siblings.
    pub unique: bool,
}

/// The default dense level (ordered, unique).
const DENSE: Dense = Dense {
    ordered: true,
    unique: true,
};

impl Dense {
    /// The default dense level (ordered, unique).
    pub fn level() -> Level {
        Arc::new(DENSE)
    }
}

impl LevelFormat for Dense {
    fn name(&self) -> &'static str {
        "dense"
    }
    fn spelling(&self) -> String {
        format!("d{}", property_suffix(self.ordered, self.unique))
    }
    fn properties(&self) -> Properties {
        Properties {
            full: true,
            ordered: self.ordered,
            unique: self.unique,
            branchless: false,
            compact: true,
        }
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            coord_value_iter: true,
            locate: true,
            ..NO_CAPABILITIES
        }
    }
    fn arrays(&self) -> &'static [ArrayKind] {
        &[]
    }
    fn coord_iter(&self, site: &LevelSite) -> Option<Pair> {
        Some((Expr::Int(0), site.param(ParamKind::Size)))
    }
    fn coord_access(&self, site: &LevelSite, parent_pos: &Expr, coord: &Expr) -> Option<Pair> {
        Some((
            Expr::add(
                Expr::mul(parent_pos.clone(), site.param(ParamKind::Size)),
                coord.clone(),
            ),
            Expr::Bool(true),
        ))
    }
    fn locate(&self, site: &LevelSite, parent_pos: &Expr, coord: &Expr, _: &Expr) -> Option<Pair> {
        self.coord_access(site, parent_pos, coord)
    }
    fn streaming(&self) -> Option<Streaming> {
        Some(Streaming::Inserted)
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        let size = input.size;
        Ok(PackOutput {
            children: pack_computed(input)?,
            storage: LevelStorage {
                arrays: vec![],
                params: vec![(ParamKind::Size, size as i64)],
            },
            positions: input.parent_positions * size,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        computed_positions(input)
    }
}

/// The configurable properties of a level that stores its coordinates (compressed,
/// singleton): whether siblings are in increasing order, and whether they are distinct
/// (not for the upper levels of COO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Siblings {
    pub ordered: bool,
    pub unique: bool,
}

impl Siblings {
    /// The level's letter (one for unique siblings, another for duplicates) with the
    /// suffix of a non-default order.
    fn spelling(self, unique: char, duplicates: char) -> String {
        let letter = if self.unique { unique } else { duplicates };
        format!("{letter}{}", property_suffix(self.ordered, true))
    }

    /// The properties of a compact, never full level with these siblings.
    fn properties(self, branchless: bool) -> Properties {
        Properties {
            full: false,
            ordered: self.ordered,
            unique: self.unique,
            branchless,
            compact: true,
        }
    }
}

/// Compressed level: `pos` segment bounds and `idx` coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compressed(pub Siblings);

impl Compressed {
    /// A compressed level with the given properties.
    pub fn level(ordered: bool, unique: bool) -> Level {
        Arc::new(Compressed(Siblings { ordered, unique }))
    }
}

impl LevelFormat for Compressed {
    fn name(&self) -> &'static str {
        "compressed"
    }
    fn spelling(&self) -> String {
        // TACO spells a non-unique compressed level `u`.
        self.0.spelling('s', 'u')
    }
    fn properties(&self) -> Properties {
        self.0.properties(false)
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            coord_pos_iter: true,
            ..NO_CAPABILITIES
        }
    }
    fn arrays(&self) -> &'static [ArrayKind] {
        &[ArrayKind::Pos, ArrayKind::Idx]
    }
    fn pos_iter(&self, site: &LevelSite, parent_pos: &Expr) -> Option<Pair> {
        let pos = site.array(ArrayKind::Pos);
        Some((
            Expr::load(pos, parent_pos.clone()),
            Expr::load(pos, Expr::add(parent_pos.clone(), Expr::Int(1))),
        ))
    }
    fn pos_access(&self, site: &LevelSite, pos: &Expr) -> Option<Pair> {
        Some((
            Expr::load(site.array(ArrayKind::Idx), pos.clone()),
            Expr::Bool(true),
        ))
    }
    fn streaming(&self) -> Option<Streaming> {
        self.0.unique.then_some(Streaming::Appended)
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        // Segments arrive in increasing parent order (their entry ranges need not be, below
        // a hashed level), and positions are laid out in that order.
        let mut pos = vec![0i64; input.parent_positions + 1];
        let mut idx = Vec::new();
        let mut children = Vec::with_capacity(input.segments.len());
        for seg in input.segments {
            check_in_range(input, seg)?;
            let start = children.len();
            if self.0.unique {
                push_groups(input.coords, seg, &mut children, |_, _| 0);
            } else {
                children.extend((seg.lo..seg.hi).map(|e| Segment {
                    parent: 0,
                    lo: e,
                    hi: e + 1,
                }));
            }
            for (p, child) in children.iter_mut().enumerate().skip(start) {
                child.parent = p;
                idx.push(input.coords[child.lo]);
            }
            pos[seg.parent + 1] += (children.len() - start) as i64;
        }
        for p in 0..input.parent_positions {
            pos[p + 1] += pos[p];
        }
        Ok(PackOutput {
            positions: children.len(),
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Pos, pos), (ArrayKind::Idx, idx)],
                params: vec![(ParamKind::Size, input.size as i64)],
            },
            children,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        let (pos, idx) = (input.array(ArrayKind::Pos), input.array(ArrayKind::Idx));
        let parents = input.parent_positions;
        check_len(ArrayKind::Pos, pos, parents + 1)?;
        if pos[0] != 0
            || pos.windows(2).any(|w| w[0] > w[1])
            || pos[parents] as u64 != idx.len() as u64
        {
            return Err("pos is not a non-decreasing list from 0 to the idx length".into());
        }
        check_coords(input, idx, None)?;
        Ok(idx.len())
    }
}

/// Singleton level: one child per parent position, at the same position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Singleton(pub Siblings);

impl Singleton {
    /// A singleton level with the given properties.
    pub fn level(ordered: bool, unique: bool) -> Level {
        Arc::new(Singleton(Siblings { ordered, unique }))
    }
}

impl LevelFormat for Singleton {
    fn name(&self) -> &'static str {
        "singleton"
    }
    fn spelling(&self) -> String {
        self.0.spelling('q', 'c')
    }
    fn properties(&self) -> Properties {
        self.0.properties(true)
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            coord_pos_iter: true,
            ..NO_CAPABILITIES
        }
    }
    fn arrays(&self) -> &'static [ArrayKind] {
        &[ArrayKind::Idx]
    }
    fn pos_iter(&self, _site: &LevelSite, parent_pos: &Expr) -> Option<Pair> {
        Some((
            parent_pos.clone(),
            Expr::add(parent_pos.clone(), Expr::Int(1)),
        ))
    }
    fn pos_access(&self, site: &LevelSite, pos: &Expr) -> Option<Pair> {
        Some((
            Expr::load(site.array(ArrayKind::Idx), pos.clone()),
            Expr::Bool(true),
        ))
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        // Positions without an entry (ELL padding) keep coordinate 0, a valid coordinate
        // whose value slot stays zero, so kernels may read padding unconditionally.
        let mut idx = vec![0i64; input.parent_positions];
        let mut children = Vec::with_capacity(input.segments.len());
        for seg in input.segments {
            check_in_range(input, seg)?;
            if seg.hi - seg.lo > 1 {
                return Err(format!(
                    "level {} is singleton, so each parent position holds one coordinate, but parent \
                     position {} holds {}; make the parent level non-unique (e.g. COO `uq`)",
                    input.level,
                    seg.parent,
                    seg.hi - seg.lo
                ));
            }
            idx[seg.parent] = input.coords[seg.lo];
            children.push(*seg);
        }
        Ok(PackOutput {
            positions: input.parent_positions,
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Idx, idx)],
                params: vec![(ParamKind::Size, input.size as i64)],
            },
            children,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        let idx = input.array(ArrayKind::Idx);
        check_len(ArrayKind::Idx, idx, input.parent_positions)?;
        check_coords(input, idx, None)?;
        Ok(input.parent_positions)
    }
}

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
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        let size = input.size;
        Ok(PackOutput {
            children: pack_computed(input)?,
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Offset, input.diagonal_offsets.to_vec())],
                params: vec![
                    (ParamKind::Size, size as i64),
                    (ParamKind::Width, input.next_size as i64),
                ],
            },
            positions: input.parent_positions * size,
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
                arrays: vec![(ArrayKind::Offset, input.diagonal_offsets.to_vec())],
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
        if rows.array(ArrayKind::Offset) != Some(input.array(ArrayKind::Offset)) {
            return Err("the offsets differ from those of the row level".into());
        }
        Ok(input.parent_positions)
    }
}

/// Hashed level: per parent, a block of `W` buckets holding coordinates (`-1` = empty),
/// hash `i mod W`, linear probing that wraps inside the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hashed {
    /// Configurable: no duplicate siblings.
    pub unique: bool,
}

impl Hashed {
    /// The default hashed level (unique, unordered).
    pub fn level() -> Level {
        Arc::new(Hashed { unique: true })
    }
}

impl LevelFormat for Hashed {
    fn name(&self) -> &'static str {
        "hashed"
    }
    fn spelling(&self) -> String {
        format!("h{}", property_suffix(true, self.unique))
    }
    fn properties(&self) -> Properties {
        Properties {
            full: false,
            ordered: false,
            unique: self.unique,
            branchless: false,
            compact: false,
        }
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            coord_pos_iter: true,
            locate: true,
            ..NO_CAPABILITIES
        }
    }
    fn arrays(&self) -> &'static [ArrayKind] {
        &[ArrayKind::Idx]
    }
    fn params(&self) -> &'static [ParamKind] {
        &[ParamKind::Size, ParamKind::Width]
    }
    fn pos_iter(&self, site: &LevelSite, parent_pos: &Expr) -> Option<Pair> {
        let width = site.param(ParamKind::Width);
        Some((
            Expr::mul(parent_pos.clone(), width.clone()),
            Expr::mul(Expr::add(parent_pos.clone(), Expr::Int(1)), width),
        ))
    }
    fn pos_access(&self, site: &LevelSite, pos: &Expr) -> Option<Pair> {
        let coord = Expr::load(site.array(ArrayKind::Idx), pos.clone());
        Some((coord.clone(), Expr::bin(BinOp::Ne, coord, Expr::Int(-1))))
    }
    fn locate(
        &self,
        site: &LevelSite,
        parent_pos: &Expr,
        coord: &Expr,
        located: &Expr,
    ) -> Option<Pair> {
        let pos = Expr::Call(
            &HASH_LOCATE,
            site.array(ArrayKind::Idx),
            vec![
                site.param(ParamKind::Width),
                parent_pos.clone(),
                coord.clone(),
            ],
        );
        let found = Expr::eq(
            Expr::load(site.array(ArrayKind::Idx), located.clone()),
            coord.clone(),
        );
        Some((pos, found))
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        let mut groups = Vec::new();
        let mut max_children = 0usize;
        for seg in input.segments {
            check_in_range(input, seg)?;
            let start = groups.len();
            groups.extend(group_by_coord(
                &PackInput {
                    segments: std::slice::from_ref(seg),
                    ..*input
                },
                |s, _| s.parent,
            ));
            max_children = max_children.max(groups.len() - start);
        }
        let width = hash_width(max_children, input.size);
        let mut idx = vec![-1i64; input.parent_positions * width];
        let mut children = Vec::with_capacity(groups.len());
        for g in groups {
            let coord = input.coords[g.lo];
            let base = g.parent * width;
            let mut slot = (coord as usize) % width;
            while idx[base + slot] != -1 {
                slot = (slot + 1) % width;
            }
            idx[base + slot] = coord;
            children.push(Segment {
                parent: base + slot,
                lo: g.lo,
                hi: g.hi,
            });
        }
        children.sort_by_key(|c| c.parent);
        Ok(PackOutput {
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Idx, idx)],
                params: vec![
                    (ParamKind::Size, input.size as i64),
                    (ParamKind::Width, width as i64),
                ],
            },
            positions: input.parent_positions * width,
            children,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        let width = input.storage.param(ParamKind::Width);
        if width < 1 {
            return Err(format!("hash width {width} must be positive"));
        }
        let idx = input.array(ArrayKind::Idx);
        let n = input
            .parent_positions
            .checked_mul(width as usize)
            .ok_or_else(|| "too many positions".to_string())?;
        check_len(ArrayKind::Idx, idx, n)?;
        check_coords(input, idx, Some(-1))?;
        Ok(n)
    }
}

/// Bytemap level (Finch's `SparseByteMap`, simplified): positions are a dense level's,
/// `p_{k-1} * N + i`, and `present[p]` says whether position `p` holds an entry. Iteration
/// visits every coordinate and tests its flag, locate is one load; children and values of
/// absent positions are zero padding. Flags are `i64` like every level array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytemap;

impl Bytemap {
    /// The bytemap level.
    pub fn level() -> Level {
        Arc::new(Bytemap)
    }
}

impl LevelFormat for Bytemap {
    fn name(&self) -> &'static str {
        "bytemap"
    }
    fn spelling(&self) -> String {
        "b".into()
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
            locate: true,
            ..NO_CAPABILITIES
        }
    }
    fn arrays(&self) -> &'static [ArrayKind] {
        &[ArrayKind::Present]
    }
    // Iteration and positions are a dense level's; only `found` differs.
    fn coord_iter(&self, site: &LevelSite) -> Option<Pair> {
        DENSE.coord_iter(site)
    }
    fn coord_access(&self, site: &LevelSite, parent_pos: &Expr, coord: &Expr) -> Option<Pair> {
        let (pos, _) = DENSE.coord_access(site, parent_pos, coord)?;
        let present = Expr::load(site.array(ArrayKind::Present), pos.clone());
        Some((pos, Expr::bin(BinOp::Ne, present, Expr::Int(0))))
    }
    fn locate(&self, site: &LevelSite, parent_pos: &Expr, coord: &Expr, _: &Expr) -> Option<Pair> {
        self.coord_access(site, parent_pos, coord)
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        let children = pack_computed(input)?;
        let positions = input.parent_positions * input.size;
        let mut present = vec![0i64; positions];
        for child in &children {
            present[child.parent] = 1;
        }
        Ok(PackOutput {
            children,
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Present, present)],
                params: vec![(ParamKind::Size, input.size as i64)],
            },
            positions,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        let positions = computed_positions(input)?;
        let present = input.array(ArrayKind::Present);
        check_len(ArrayKind::Present, present, positions)?;
        if present.iter().any(|&f| f != 0 && f != 1) {
            return Err("present holds flags other than 0 and 1".into());
        }
        Ok(positions)
    }
}

/// The probe of a hashed level: `hash_locate(idx, width, parent, coord)` is the bucket of
/// `coord` in block `parent` (`width` buckets, -1 marks an empty one): where it is, else the
/// first empty bucket of its linear probe, else (a full block) its home bucket.
pub static HASH_LOCATE: Helper = Helper {
    name: "sparsec_hash_locate",
    c_source: include_str!("hashed.c"),
    native: sparsec_hash_locate,
    eval: |idx, args| {
        let [width, parent, coord] = args else {
            panic!("hash_locate takes a width, a parent and a coordinate")
        };
        let (width, parent) = (usize::try_from(*width), usize::try_from(*parent));
        let (Ok(width), Ok(parent)) = (width, parent) else {
            panic!("hash_locate: width and parent are not negative")
        };
        hash_locate(idx, width, parent, *coord) as i64
    },
};

extern "C" {
    /// `hashed.c`, compiled into the library by the build script.
    fn sparsec_hash_locate(idx: *const i64, width: i64, parent: i64, coord: i64) -> i64;
}

/// [`HASH_LOCATE`] on a hashed level's index `idx`, with its bounds checked.
///
/// # Panics
/// If `width` is 0 or block `parent` is not inside `idx`.
pub fn hash_locate(idx: &[i64], width: usize, parent: usize, coord: i64) -> usize {
    assert!(width > 0, "a block has buckets");
    assert!(
        (parent + 1)
            .checked_mul(width)
            .is_some_and(|end| end <= idx.len()),
        "block {parent} of width {width} is inside the index"
    );
    // SAFETY: the probe reads block `parent` only, which is inside `idx`.
    let p = unsafe { sparsec_hash_locate(idx.as_ptr(), width as i64, parent as i64, coord) };
    p as usize
}

/// Bucket count per parent: room for every child at a load factor of at most 2/3, never
/// more than the dimension (where `i mod W` is already collision-free).
fn hash_width(max_children: usize, size: usize) -> usize {
    let wanted = (max_children * 3 / 2 + 1).next_power_of_two();
    wanted.min(size.max(1)).max(max_children).max(1)
}

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
