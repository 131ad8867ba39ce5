//! Levels that store their coordinates: compressed (segments in `pos`) and singleton
//! (one child per parent).

use super::*;

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
    fn layout(&self) -> Option<Layout> {
        Some(Layout::Segments)
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        // Segments arrive in increasing parent order (their entry ranges need not be, below
        // a hashed level), and positions are laid out in that order.
        let mut pos = crate::memory::filled(input.parent_positions.checked_add(1), 0i64, &|| {
            format!("the positions array of level {}", input.level)
        })?;
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
                arrays: vec![(ArrayKind::Pos, pos.into()), (ArrayKind::Idx, idx.into())],
                params: vec![(ParamKind::Size, input.size as i64)],
            },
            children,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        let (pos, idx) = (input.array(ArrayKind::Pos), input.array(ArrayKind::Idx));
        let parents = input.parent_positions;
        check_len(ArrayKind::Pos, &pos, parents + 1)?;
        if pos[0] != 0
            || pos.windows(2).any(|w| w[0] > w[1])
            || pos[parents] as u64 != idx.len() as u64
        {
            return Err("pos is not a non-decreasing list from 0 to the idx length".into());
        }
        check_coords(input, &idx, None)?;
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
    fn layout(&self) -> Option<Layout> {
        Some(Layout::Singleton)
    }
    fn positions_bound(&self, parent_positions: u128, _: u128, _: u128, _: u128) -> u128 {
        parent_positions
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        // Positions without an entry (ELL padding) keep coordinate 0, a valid coordinate
        // whose value slot stays zero, so kernels may read padding unconditionally.
        let mut idx = crate::memory::filled(Some(input.parent_positions), 0i64, &|| {
            format!("the coordinates of level {}", input.level)
        })?;
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
                arrays: vec![(ArrayKind::Idx, idx.into())],
                params: vec![(ParamKind::Size, input.size as i64)],
            },
            children,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        let idx = input.array(ArrayKind::Idx);
        check_len(ArrayKind::Idx, &idx, input.parent_positions)?;
        check_coords(input, &idx, None)?;
        Ok(input.parent_positions)
    }
}
