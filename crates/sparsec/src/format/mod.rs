//! Storage formats: level formats and their composition into tensor formats.
//!
//! A tensor's storage is a *coordinate hierarchy* with one level per stored dimension
//! (Chou, "Unified Sparse Formats", ch. 3). Each level is stored by a [`LevelFormat`]
//! that declares its [`Properties`] and [`Capabilities`] and provides its *level
//! functions* (`coord_iter`, `pos_iter`, `locate`, ...) as IR expressions. Code generation
//! and the runtime interpreter read only these, so a new level format is one type that
//! implements [`LevelFormat`]; nothing else changes.
//!
//! A [`Format`] is a sequence of levels, each bound to a [`LevelCoord`] that says which
//! coordinate of the logical tensor the level stores: a mode (plain formats and any mode
//! ordering), a block index or offset (BCSR), the ELL slot, or the DIA diagonal.

mod index;
mod levels;
mod parse;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

pub use index::IndexArray;
pub use levels::{
    hash_locate, Bytemap, Compressed, Dense, Hashed, Offset, Range, Siblings, Singleton,
    HASH_LOCATE,
};
pub use parse::FormatError;

use crate::ir::{ArrayKind, Expr, OperandId, ParamKind};

/// Invariants a level guarantees (Table 3.2 of the thesis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Properties {
    /// Every sibling set holds all coordinates of the dimension.
    pub full: bool,
    /// Siblings are in increasing order.
    pub ordered: bool,
    /// No sibling set holds a coordinate twice.
    pub unique: bool,
    /// No coordinate has a sibling and every parent has a child.
    pub branchless: bool,
    /// No position between two coordinates is left unused.
    pub compact: bool,
}

/// Level functions a level provides (Tables 3.1 and 3.3 of the thesis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Capabilities {
    /// `coord_iter` + `coord_access`.
    pub coord_value_iter: bool,
    /// `pos_iter` + `pos_access`.
    pub coord_pos_iter: bool,
    /// `locate`: O(1) random access to a child coordinate.
    pub locate: bool,
    // Chou's insert and append capabilities are what [`LevelFormat::streaming`] describes:
    // the runtime builds storage through that, so it is their single description.
}

/// Where a level sits and what its ancestors' coordinates and positions are, as IR.
///
/// Level functions are pure functions of this context; they return IR expressions.
#[derive(Clone, Debug)]
pub struct LevelSite {
    /// The operand whose level this is.
    pub operand: OperandId,
    /// 1-based level number.
    pub level: usize,
    /// Coordinates of levels `1..level` (the ancestors), outermost first.
    pub ancestors: Vec<Expr>,
}

impl LevelSite {
    /// The array `kind` of this level.
    pub fn array(&self, kind: ArrayKind) -> crate::ir::ArrayRef {
        crate::ir::ArrayRef::Level {
            operand: self.operand,
            level: self.level,
            kind,
        }
    }
    /// The parameter `kind` of this level.
    pub fn param(&self, kind: ParamKind) -> Expr {
        Expr::Param(crate::ir::ParamRef::Level {
            operand: self.operand,
            level: self.level,
            kind,
        })
    }
}

/// A `(value, found)` or `(begin, end)` pair returned by a level function.
pub type Pair = (Expr, Expr);

/// Storage produced by [`LevelFormat::pack`] for one level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelStorage {
    /// Arrays, by kind (only those in [`LevelFormat::arrays`]).
    pub arrays: Vec<(ArrayKind, IndexArray)>,
    /// Scalar parameters (size, width).
    pub params: Vec<(ParamKind, i64)>,
}

impl LevelStorage {
    /// The array of `kind`, if the level has one.
    pub fn array(&self, kind: ArrayKind) -> Option<&IndexArray> {
        self.arrays.iter().find(|(k, _)| *k == kind).map(|(_, a)| a)
    }
    /// The parameter of `kind` (0 when the level has none).
    pub fn param(&self, kind: ParamKind) -> i64 {
        self.params
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, v)| *v)
            .unwrap_or(0)
    }
}

/// A tensor's levels, as the IR interpreter reads them (level `k` is `self[k - 1]`).
impl crate::ir::interp::LevelArrays for Vec<LevelStorage> {
    fn array(&self, level: usize, kind: ArrayKind) -> Cow<'_, [i64]> {
        self[level - 1]
            .array(kind)
            .unwrap_or_else(|| panic!("level {level} has no {kind:?} array"))
            .to_i64()
    }
    fn load(&self, level: usize, kind: ArrayKind, index: usize) -> i64 {
        self[level - 1]
            .array(kind)
            .unwrap_or_else(|| panic!("level {level} has no {kind:?} array"))
            .get(index)
    }
    fn param(&self, level: usize, kind: ParamKind) -> i64 {
        self[level - 1].param(kind)
    }
}

/// One group of entries that share a parent position, handed from level to level while
/// packing. `entries` indexes the sorted storage-coordinate list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Position in the parent level.
    pub parent: usize,
    /// First entry (inclusive).
    pub lo: usize,
    /// Last entry (exclusive).
    pub hi: usize,
}

/// Input of [`LevelFormat::pack`]: the entries under each parent, sorted lexicographically by
/// storage coordinates, and this level's coordinate of each entry.
pub struct PackInput<'a> {
    /// 1-based level number (for messages).
    pub level: usize,
    /// Dimension size `N_k` of this level.
    pub size: usize,
    /// Number of positions of the parent level (`p_{k-1}_max`).
    pub parent_positions: usize,
    /// Non-empty groups of entries, by parent position, in increasing parent order.
    pub segments: &'a [Segment],
    /// This level's coordinate for every entry.
    pub coords: &'a [i64],
    /// The DIA diagonal offsets, when the format has a diagonal level.
    pub diagonal_offsets: &'a [i64],
    /// The size of the dimension stored by the next level (range needs `M`).
    pub next_size: usize,
}

/// Output of [`LevelFormat::pack`].
pub struct PackOutput {
    /// The level's arrays and parameters.
    pub storage: LevelStorage,
    /// Number of positions of this level (`p_k_max`).
    pub positions: usize,
    /// Groups of entries under each child position, for the next level.
    pub children: Vec<Segment>,
}

/// How a level stores entries that arrive in storage order: Chou's insert and append
/// capabilities, as far as the runtime's streaming packer implements them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Streaming {
    /// Every coordinate has a position, `parent * size + coord`; only the size is stored.
    Inserted,
    /// Each new coordinate under a parent is appended: `pos` holds the start of each
    /// parent's segment, `idx` the coordinates.
    Appended,
}

/// How a level lays out its stored coordinates, for readers that walk storage natively
/// instead of evaluating the level functions (converting, writing files): the layout the
/// level functions describe, said once more so that a reader need not interpret them.
/// Levels without one ([`LevelFormat::layout`] is `None`) are read through their functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every coordinate `0..size` under each parent, at position `parent * size + coord`.
    Full,
    /// The children of parent position `p` are the positions `pos[p]..pos[p + 1]`, their
    /// coordinates in `idx`.
    Segments,
    /// One child per parent, at the parent's own position, its coordinate in `idx`.
    Singleton,
    /// Parent position `p` owns the slots `p * width..(p + 1) * width` (`width` is the
    /// level's `Width` parameter); a slot holds a child's coordinate in `idx`, or -1 when
    /// empty. Children come in slot order. The level says how wide a table is and where a
    /// coordinate goes in it ([`LevelFormat::table_rule`]).
    Table,
}

/// How a level of [`Layout::Table`] places its coordinates, for writers that build it one
/// coordinate at a time.
#[derive(Clone, Copy, Debug)]
pub struct TableRule {
    /// The width of every parent's table when no parent has more than `widest` children
    /// and the level's dimension is `size`.
    pub width: fn(widest: usize, size: usize) -> usize,
    /// The slot of `coord` in the table of `parent` (tables of `width` slots in
    /// `table`): where it is, else where it goes.
    pub slot: fn(table: &[i64], width: usize, parent: usize, coord: i64) -> usize,
}

/// Input of [`LevelFormat::validate`]: one level's storage as read from a file, and what
/// the levels above it established.
pub struct ValidateInput<'a> {
    /// 1-based level number.
    pub level: usize,
    /// The stored arrays and parameters. Their kinds are exactly [`LevelFormat::arrays`] and
    /// [`LevelFormat::params`], and the size matches the dimension the level stores.
    pub storage: &'a LevelStorage,
    /// Dimension size `N_k` (the stored size parameter, non-negative).
    pub size: usize,
    /// Number of positions of the parent level (`p_{k-1}_max`), already validated.
    pub parent_positions: usize,
    /// Storage of the levels above, outermost first, already validated.
    pub ancestors: &'a [LevelStorage],
    /// The stored size of the next level (0 for the last level), as in [`PackInput`].
    pub next_size: usize,
}

impl ValidateInput<'_> {
    /// The array of `kind` as `int64_t` (empty if the level has none).
    pub fn array(&self, kind: ArrayKind) -> Cow<'_, [i64]> {
        self.storage
            .array(kind)
            .map_or(Cow::Borrowed(&[][..]), IndexArray::to_i64)
    }
}

/// A level format: how one level of a coordinate hierarchy is stored.
///
/// The level functions return IR; `None` means the level lacks that capability (and
/// [`LevelFormat::capabilities`] says so). They are the single description of the level's
/// behaviour: the code generator inlines them and [`crate::ir::interp`] evaluates them
/// when reading storage back.
pub trait LevelFormat: fmt::Debug + Send + Sync {
    /// Lower-case name (`"compressed"`).
    fn name(&self) -> &'static str;
    /// Letter in the format-string syntax, with property suffixes (see [`Format::parse`]).
    fn spelling(&self) -> String;
    /// Properties of this instance.
    fn properties(&self) -> Properties;
    /// Capabilities of this level format.
    fn capabilities(&self) -> Capabilities;
    /// Arrays the level stores.
    fn arrays(&self) -> &'static [ArrayKind];
    /// Scalar parameters the level stores.
    fn params(&self) -> &'static [ParamKind] {
        &[ParamKind::Size]
    }
    /// True when the level's arrays may be stored as `int32_t` when their indices fit;
    /// false for a level whose helper (see [`crate::ir::Helper`]) reads `int64_t` arrays.
    fn narrowable(&self) -> bool {
        true
    }
    /// `coord_iter(i1..i_{k-1}) -> <begin, end>`.
    fn coord_iter(&self, _site: &LevelSite) -> Option<Pair> {
        None
    }
    /// `coord_access(p_{k-1}, i1..i_k) -> <p_k, found>`.
    fn coord_access(&self, _site: &LevelSite, _parent_pos: &Expr, _coord: &Expr) -> Option<Pair> {
        None
    }
    /// `pos_iter(p_{k-1}) -> <begin, end>`.
    fn pos_iter(&self, _site: &LevelSite, _parent_pos: &Expr) -> Option<Pair> {
        None
    }
    /// `pos_access(p_k, i1..i_{k-1}) -> <i_k, found>`.
    fn pos_access(&self, _site: &LevelSite, _pos: &Expr) -> Option<Pair> {
        None
    }
    /// `locate(p_{k-1}, i1..i_k) -> <p_k, found>`. The caller binds `p_k` before it
    /// evaluates `found`, which may read it as `located` (a hashed level compares the
    /// coordinate stored at the located bucket).
    fn locate(
        &self,
        _site: &LevelSite,
        _parent_pos: &Expr,
        _coord: &Expr,
        _located: &Expr,
    ) -> Option<Pair> {
        None
    }
    /// Build this level's storage from sorted, deduplicated entries.
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String>;
    /// Check storage that did not come from [`LevelFormat::pack`] (a file): every access
    /// the level functions make for the parent's positions must stay in bounds and every
    /// coordinate they produce must lie in `0..size`. Returns the level's number of
    /// positions; the error says what is inconsistent.
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String>;
    /// How the level stores entries that arrive one at a time in storage order, when it
    /// can build itself that way (the runtime then packs without intermediate arrays);
    /// `None` (the default) means only [`LevelFormat::pack`].
    fn streaming(&self) -> Option<Streaming> {
        None
    }
    /// The level's layout when it is one the runtime reads natively ([`Layout`]); `None`
    /// (the default) means readers evaluate the level functions. It must agree with them:
    /// `tensor`'s tests compare both readings for every level that has one.
    fn layout(&self) -> Option<Layout> {
        None
    }
    /// How the level places coordinates when its layout is [`Layout::Table`]; `None` (the
    /// default) for other layouts. Building by it must give what [`LevelFormat::pack`]
    /// gives for coordinates inserted in increasing order under each parent.
    fn table_rule(&self) -> Option<TableRule> {
        None
    }
    /// An upper bound on the level's positions when its parent level has
    /// `parent_positions`, its dimension is `size`, no parent holds more than `widest`
    /// coordinates here and the tensor stores `entries` components: what a tuner checks
    /// before it builds storage that cannot pay. The default: a full level has a position
    /// per coordinate of every parent; a unique one at most one per entry, and no more
    /// than its parents have coordinates; a non-unique one (COO's upper level) one per
    /// entry, however few its coordinates.
    fn positions_bound(
        &self,
        parent_positions: u128,
        size: u128,
        widest: u128,
        entries: u128,
    ) -> u128 {
        let _ = widest;
        let every = parent_positions.saturating_mul(size);
        let properties = self.properties();
        if properties.full {
            every
        } else if properties.unique {
            every.min(entries)
        } else {
            entries
        }
    }
}

/// A shared, immutable level format instance.
pub type Level = Arc<dyn LevelFormat>;

/// Which coordinate of the logical tensor a storage level holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LevelCoord {
    /// Mode `m` of the tensor, unchanged.
    Mode(usize),
    /// `i / block` for mode `m` (outer block index).
    BlockOuter { mode: usize, block: usize },
    /// `i % block` for mode `m` (offset inside the block).
    BlockInner { mode: usize, block: usize },
    /// ELL slot: the rank of the entry among the entries of its row (mode 0).
    EllSlot,
    /// DIA diagonal: the index of `j - i` in the sorted list of occupied diagonals.
    Diagonal,
}

/// One storage level: a level format and the coordinate it stores.
#[derive(Clone, Debug)]
pub struct LevelSpec {
    /// How the level is stored.
    pub format: Level,
    /// What it stores.
    pub coord: LevelCoord,
}

/// A tensor format: levels in storage order.
#[derive(Clone, Debug)]
pub struct Format {
    levels: Vec<LevelSpec>,
    order: usize,
    /// What [`Format::spelling`] returns, spelled once: formats are compared by it on
    /// every kernel call.
    spelled: String,
}

impl Format {
    /// A format over `order` modes from explicit levels. Checks that every mode is stored
    /// and that structured coordinates are used consistently.
    pub fn new(order: usize, levels: Vec<LevelSpec>) -> Result<Format, FormatError> {
        let mut format = Format {
            levels,
            order,
            spelled: String::new(),
        };
        format.validate()?;
        format.spelled = parse::spell(&format);
        Ok(format)
    }

    /// Plain format: one level per mode, stored in `mode_order` order.
    pub fn with_mode_order(
        levels: Vec<Level>,
        mode_order: &[usize],
    ) -> Result<Format, FormatError> {
        if levels.len() != mode_order.len() {
            return Err(FormatError::new(format!(
                "{} levels but a mode ordering of {} modes",
                levels.len(),
                mode_order.len()
            )));
        }
        let specs = levels
            .into_iter()
            .zip(mode_order)
            .map(|(format, &m)| LevelSpec {
                format,
                coord: LevelCoord::Mode(m),
            })
            .collect();
        Format::new(mode_order.len(), specs)
    }

    /// All-dense format of the given order (row-major).
    pub fn dense(order: usize) -> Format {
        let levels = (0..order).map(|_| Dense::level()).collect();
        Format::with_mode_order(levels, &(0..order).collect::<Vec<_>>()).expect("dense is valid")
    }

    /// The format an operand is read through when a statement cannot use its own: a
    /// dense outer level and compressed (ordered, unique) ones below it, in this format's
    /// mode order, or the natural order for a structured layout (blocks, ELL slots, DIA
    /// diagonals): a compressed vector, CSR or CSC for a matrix, CSF with a dense root
    /// above. It can hold any
    /// tensor, every level can be iterated, merged and searched, and it is its own
    /// equivalent.
    pub fn general_equivalent(&self) -> Format {
        let modes = self
            .mode_order()
            .unwrap_or_else(|| (0..self.order).collect());
        // A vector's one level is compressed: a dense copy of a sparse vector could be huge.
        let levels = (0..self.order)
            .map(|k| match k {
                0 if self.order > 1 => Dense::level(),
                _ => Compressed::level(true, true),
            })
            .collect();
        Format::with_mode_order(levels, &modes).expect("one level per mode is a valid format")
    }

    /// Parse a format string (see the crate documentation for the syntax).
    pub fn parse(text: &str, order: usize) -> Result<Format, FormatError> {
        parse::parse_format(text, order)
    }

    /// Number of logical modes.
    pub fn order(&self) -> usize {
        self.order
    }

    /// Storage levels, outermost first.
    pub fn levels(&self) -> &[LevelSpec] {
        &self.levels
    }

    /// True when every level stores a mode directly (no blocks, slots or diagonals).
    pub fn is_plain(&self) -> bool {
        self.levels
            .iter()
            .all(|l| matches!(l.coord, LevelCoord::Mode(_)))
    }

    /// For plain formats, the mode stored by each level.
    pub fn mode_order(&self) -> Option<Vec<usize>> {
        self.levels
            .iter()
            .map(|l| match l.coord {
                LevelCoord::Mode(m) => Some(m),
                _ => None,
            })
            .collect()
    }

    /// The arrays and parameters of each level of this plain format over `dims`, when its
    /// levels store only a size parameter and the arrays `array(level, kind)` gives
    /// (`level` counted from 0), so that storage another owner laid out can be taken as it
    /// is, without packing; `None` when a level needs an array not given or another
    /// parameter.
    #[allow(clippy::type_complexity)]
    pub fn plain_levels<A>(
        &self,
        dims: &[usize],
        mut array: impl FnMut(usize, ArrayKind) -> Option<A>,
    ) -> Option<Vec<(Vec<(ArrayKind, A)>, Vec<(ParamKind, i64)>)>> {
        let modes = self.mode_order()?;
        self.levels
            .iter()
            .zip(modes)
            .enumerate()
            .map(|(k, (spec, mode))| {
                let arrays = spec
                    .format
                    .arrays()
                    .iter()
                    .map(|&kind| array(k, kind).map(|a| (kind, a)))
                    .collect::<Option<Vec<_>>>()?;
                let params = spec
                    .format
                    .params()
                    .iter()
                    .map(|&kind| (kind == ParamKind::Size).then(|| (kind, dims[mode] as i64)))
                    .collect::<Option<Vec<_>>>()?;
                Some((arrays, params))
            })
            .collect()
    }

    /// Whether this format's padding repeats a coordinate: an unused ELL or sliced ELL
    /// slot names column 0 with a value of its own, so it reads as an entry (harmless
    /// while that value is 0 and only sums read it).
    pub fn pads_with_repeated_coordinates(&self) -> bool {
        self.levels
            .iter()
            .any(|l| matches!(l.coord, LevelCoord::EllSlot))
    }

    /// Whether storing a tensor in this format adds values the tensor does not have: the
    /// zeros of padding (ELL and sliced ELL slots, DIA diagonals, BCSR blocks) or of a full
    /// level below a sparse one (the dense columns of a compressed row). Under `(+, *)`
    /// they add nothing; over another semiring they would be entries.
    pub fn pads_with_zeros(&self) -> bool {
        let mut sparse_above = false;
        for level in &self.levels {
            if !matches!(level.coord, LevelCoord::Mode(_)) {
                return true;
            }
            let full = level.format.properties().full;
            if full && sparse_above {
                return true;
            }
            sparse_above |= !full;
        }
        false
    }

    /// True when all levels are dense (values are a plain row-major array in storage
    /// order): every level is full, ordered, unique and compact, so each parent position
    /// owns `N_k` consecutive positions holding the coordinates `0..N_k` in order, at
    /// `p_{k-1} * N_k + i_k` since sibling sets are laid out in parent order.
    pub fn is_all_dense(&self) -> bool {
        self.levels.iter().all(|l| {
            let p = l.format.properties();
            p.full && p.ordered && p.unique && p.compact
        })
    }

    /// An upper bound on the positions of the largest level when a tensor of this format
    /// over `dims` stores `entries` components, of which no parent at level `k` holds more
    /// than `widest[k]` (each level's [`LevelFormat::positions_bound`]): the storage's
    /// size, since the last level's positions are the value slots and a level's arrays
    /// have an entry per position of it or of its parent (a compressed level under a
    /// dense one has a segment start for every position of the dense one, however few
    /// the entries). A level of blocks has a coordinate per block, one inside blocks the
    /// block's side; ELL's slot level has `widest[k]` slots (the widest row's entries)
    /// and DIA's diagonal level `widest[k]` diagonals (those occupied), the root being
    /// their one parent. `None` when `dims` or `widest` has too few values.
    ///
    /// ```
    /// use sparsec::format::Format;
    /// // No row, column or block row holds more than 100 entries; no level more than 100.
    /// let (dims, widest) = ([20_000, 20_000], [100; 4]);
    /// let bound = |f: &str| Format::parse(f, 2).unwrap().positions_bound(&dims, &widest, 100);
    /// assert_eq!(bound("dcsr"), Some(100));
    /// assert_eq!(bound("csr"), Some(20_000));
    /// assert_eq!(bound("dense"), Some(400_000_000));
    /// assert_eq!(bound("bcsr:4x4"), Some(5_000)); // 5,000 block rows; 100 blocks of 16
    /// assert_eq!(bound("ell"), Some(2_000_000)); // 100 slots for each of 20,000 rows
    /// assert_eq!(bound("dia"), Some(2_000_000)); // 100 diagonals of up to 20,000 rows
    /// ```
    pub fn positions_bound(
        &self,
        dims: &[usize],
        widest: &[usize],
        entries: usize,
    ) -> Option<u128> {
        let mut positions: u128 = 1;
        let mut largest: u128 = 1;
        for (k, level) in self.levels.iter().enumerate() {
            let size = match level.coord {
                LevelCoord::Mode(m) => *dims.get(m)?,
                LevelCoord::BlockOuter { mode, block } => dims.get(mode)?.div_ceil(block.max(1)),
                LevelCoord::BlockInner { block, .. } => block,
                LevelCoord::EllSlot => (*widest.get(k)?).min(*dims.get(1)?),
                LevelCoord::Diagonal => {
                    let diagonals = (dims.first()? + dims.get(1)?).saturating_sub(1);
                    (*widest.get(k)?).min(diagonals)
                }
            };
            positions = level.format.positions_bound(
                positions,
                size as u128,
                *widest.get(k)? as u128,
                entries as u128,
            );
            largest = largest.max(positions);
        }
        Some(largest)
    }

    /// How a kernel can fill this format row by row (`ir::rows`): the `(mode, streaming
    /// kind)` of each level above the leaf, outermost first, and the leaf's mode, when the
    /// leaf appends coordinates (compressed) and every level above it stores a mode and
    /// streams. `None` for other formats.
    pub fn row_levels(&self) -> Option<(Vec<(usize, Streaming)>, usize)> {
        let mode = |coord: LevelCoord| match coord {
            LevelCoord::Mode(m) => Some(m),
            _ => None,
        };
        let (leaf, upper) = self.levels.split_last()?;
        if leaf.format.streaming()? != Streaming::Appended {
            return None;
        }
        let upper = upper
            .iter()
            .map(|spec| Some((mode(spec.coord)?, spec.format.streaming()?)))
            .collect::<Option<Vec<_>>>()?;
        Some((upper, mode(leaf.coord)?))
    }

    fn validate(&self) -> Result<(), FormatError> {
        let mut stored = vec![0u8; self.order];
        let mut outer_blocks = vec![None; self.order];
        let mut inner_blocks = vec![None; self.order];
        for (k, spec) in self.levels.iter().enumerate() {
            let level = k + 1;
            match spec.coord {
                LevelCoord::Mode(m)
                | LevelCoord::BlockInner { mode: m, .. }
                | LevelCoord::BlockOuter { mode: m, .. }
                    if m >= self.order =>
                {
                    return Err(FormatError::new(format!(
                        "level {level} stores mode {m}, but the tensor has only {} modes",
                        self.order
                    )))
                }
                LevelCoord::Mode(m) => stored[m] += 2,
                LevelCoord::BlockOuter { mode, block } => {
                    stored[mode] += 1;
                    outer_blocks[mode] = Some(block);
                }
                LevelCoord::BlockInner { mode, block } => {
                    stored[mode] += 1;
                    if outer_blocks[mode].is_none() {
                        return Err(FormatError::new(format!(
                            "level {level} stores the inner block of mode {mode} before its outer block"
                        )));
                    }
                    inner_blocks[mode] = Some(block);
                }
                LevelCoord::EllSlot | LevelCoord::Diagonal => {
                    if self.order != 2 {
                        return Err(FormatError::new(
                            "ELL and DIA formats are defined for matrices only",
                        ));
                    }
                }
            }
            if spec.coord == LevelCoord::Diagonal && k != 0 {
                return Err(FormatError::new(
                    "the DIA diagonal level must be the first level",
                ));
            }
        }
        for (m, &count) in stored.iter().enumerate() {
            if count != 2 {
                return Err(FormatError::new(format!(
                    "mode {m} is stored {} times; every mode must be stored exactly once",
                    count as f64 / 2.0
                )));
            }
            if outer_blocks[m] != inner_blocks[m] {
                return Err(FormatError::new(format!(
                    "mode {m} is split into blocks of {:?} and {:?}; the outer and inner block sizes must agree",
                    outer_blocks[m], inner_blocks[m]
                )));
            }
        }
        // Levels that read the diagonal offsets find them through the diagonal coordinate
        // two and one levels up, so the diagonal coordinate and those levels only occur
        // together, in exactly the layout `dia` names.
        let reads_offsets = |spec: &LevelSpec| spec.format.arrays().contains(&ArrayKind::Offset);
        if let Some(spec) = self
            .levels
            .iter()
            .find(|l| l.coord == LevelCoord::Diagonal || reads_offsets(l))
        {
            let shape = |levels: &[LevelSpec]| -> Vec<(String, LevelCoord)> {
                levels
                    .iter()
                    .map(|l| (l.format.spelling(), l.coord))
                    .collect()
            };
            if shape(&self.levels) != shape(&parse::dia_levels()) {
                let what = if reads_offsets(spec) {
                    format!(
                        "the {} level reads DIA diagonal offsets",
                        spec.format.name()
                    )
                } else {
                    "the diagonal coordinate".to_string()
                };
                return Err(FormatError::new(format!(
                    "{what}, so it only occurs in DIA (dense diagonal level, range row level, \
                     offset column level); write `dia`"
                )));
            }
        }
        if let Some(spec) = self.levels.first() {
            // A branchless level holds one coordinate per parent position, and the root is
            // a single position.
            if spec.format.properties().branchless {
                return Err(FormatError::new(format!(
                    "a {} level cannot be the first level: it holds one coordinate per parent \
                     position, so it needs a parent level",
                    spec.format.name()
                )));
            }
        }
        Ok(())
    }

    /// The format-string spelling that [`Format::parse`] reads back to this format.
    pub fn spelling(&self) -> String {
        self.spelled.clone()
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelled)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.order == other.order && self.spelled == other.spelled
    }
}
