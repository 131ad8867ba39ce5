//! Levels appended from distinct coordinate tuples given in storage order: the writer
//! shared by streamed conversion (`stream.rs`) and rows placed by a kernel (`rows.rs`).

use crate::format::{LevelStorage, Streaming, TableRule};
use crate::ir::{ArrayKind, ParamKind};

/// How a level is built from distinct coordinate tuples given in storage order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Built {
    /// Every coordinate has a position, `parent * size + coord` ([`Streaming::Inserted`]).
    Inserted,
    /// A new coordinate under its parent is appended to `idx`, `pos` holding each parent's
    /// segment ([`Streaming::Appended`]). Without `unique`, every tuple gets a position of
    /// its own here, also one whose coordinate repeats its predecessor's (the upper levels
    /// of COO).
    Appended { unique: bool },
    /// One coordinate at its parent's own position; positions without a tuple keep
    /// coordinate 0, as the general packing leaves them.
    Singleton,
    /// A coordinate goes in its parent's table where the level's rule puts it
    /// ([`Layout::Table`]); slots without one keep -1.
    Table,
}

impl From<Streaming> for Built {
    fn from(kind: Streaming) -> Built {
        match kind {
            Streaming::Inserted => Built::Inserted,
            Streaming::Appended => Built::Appended { unique: true },
        }
    }
}

/// Levels built from distinct coordinate tuples given one at a time in storage order, each
/// level inserting, appending or placing its coordinate as [`Built`] says: Chou's insert
/// and append, and a singleton's one child per parent.
pub(super) struct StreamedLevels {
    kinds: Vec<Built>,
    /// Each level's size.
    sizes: Vec<usize>,
    /// Appending levels' segment starts, one per parent position seen so far.
    pos: Vec<Vec<i64>>,
    /// Appending, singleton and table levels' coordinates.
    idx: Vec<Vec<i64>>,
    /// Each table level's rule and width ([`StreamedLevels::place_computed`]).
    tables: Vec<Option<(TableRule, usize)>>,
    /// The position of the last tuple at each level.
    current: Vec<usize>,
    /// The first level that gives every tuple a new position whatever its coordinate (not
    /// unique); the number of levels when none does.
    first_non_unique: usize,
    /// Why the tuples cannot be stored: a singleton level given two coordinates under one
    /// parent position.
    conflict: Option<String>,
}

/// Why the last of levels of `sizes`, each inserting under the one above, cannot be
/// stored: its positions are more than an address can count.
fn positions_beyond_addresses(sizes: &[usize]) -> String {
    let positions = sizes.iter().map(|&size| size as f64).product::<f64>();
    format!(
        "level {} would have {positions:.3e} positions, beyond the address space",
        sizes.len()
    )
}

impl StreamedLevels {
    pub(super) fn new(kinds: Vec<Built>, sizes: Vec<usize>) -> StreamedLevels {
        let levels = kinds.len();
        let first_non_unique = kinds
            .iter()
            .position(|kind| *kind == Built::Appended { unique: false })
            .unwrap_or(levels);
        StreamedLevels {
            kinds,
            sizes,
            pos: vec![Vec::new(); levels],
            idx: vec![Vec::new(); levels],
            tables: vec![None; levels],
            current: vec![0; levels],
            first_non_unique,
            conflict: None,
        }
    }

    /// Make room for `tuples` more coordinates at the last level, grown once rather than by
    /// doubling.
    pub(super) fn reserve_last(&mut self, tuples: usize) -> Result<(), String> {
        match self.idx.last_mut() {
            Some(idx) => idx
                .try_reserve_exact(tuples)
                .map_err(|_| format!("{tuples} coordinates do not fit in memory")),
            None => Ok(()),
        }
    }

    /// Make room for the segment starts of every appending level whose parents are all
    /// inserted (CSR's rows, CSF's first compressed level under dense ones): their number
    /// is the product of the sizes above, known before any tuple, and a dimension of
    /// billions needs gigabytes of them. An error says how many bytes, instead of the
    /// process aborting when a later push cannot grow the array.
    pub(super) fn reserve_offsets(&mut self) -> Result<(), String> {
        for k in 0..self.kinds.len() {
            if !matches!(self.kinds[k], Built::Appended { .. }) {
                continue;
            }
            if self.kinds[..k].iter().any(|kind| *kind != Built::Inserted) {
                continue;
            }
            let starts = self.sizes[..k]
                .iter()
                .try_fold(1usize, |n, &size| n.checked_mul(size))
                .and_then(|parents| parents.checked_add(1));
            let what = || format!("the array of segment starts of storage level {}", k + 1);
            crate::memory::bytes_for::<i64>(starts, &what)?;
            let starts = starts.expect("bytes_for refuses an overflowed count");
            self.pos[k]
                .try_reserve_exact(starts)
                .map_err(|_| format!("{} ({starts} of them) cannot be allocated", what()))?;
        }
        Ok(())
    }

    /// Whether the last level appends a coordinate for every tuple.
    pub(super) fn leaf_appends(&self) -> bool {
        matches!(self.kinds.last(), Some(Built::Appended { .. }))
    }

    /// Set level `k`'s size where the tuples decide it (ELL's slots).
    pub(super) fn set_size(&mut self, k: usize, size: usize) {
        self.sizes[k] = size;
    }

    /// Add the tuple `coords` (one coordinate per level, after the previous tuple in
    /// storage order), given the first level whose coordinate differs from the previous
    /// tuple's (0 for the first tuple); returns its position in the last level.
    #[inline]
    pub(super) fn push_changed(&mut self, coords: &[i64], first_changed: usize) -> usize {
        let levels = self.kinds.len();
        let first_new = first_changed.min(self.first_non_unique);
        for (k, &c) in coords.iter().enumerate().skip(first_new) {
            let parent = if k == 0 { 0 } else { self.current[k - 1] };
            self.current[k] = match self.kinds[k] {
                Built::Inserted => {
                    // Dense levels under dense levels of billions of points have more
                    // positions than an address: storing them fails at the end.
                    let position = parent
                        .checked_mul(self.sizes[k])
                        .and_then(|p| p.checked_add(c as usize));
                    position.unwrap_or_else(|| {
                        let why = positions_beyond_addresses(&self.sizes[..=k]);
                        self.conflict.get_or_insert(why);
                        0
                    })
                }
                Built::Appended { .. } => {
                    // A segment start for every parent position so far: under a dense level
                    // of billions, one tuple can ask for gigabytes of them.
                    let starts = parent + 1;
                    if self.pos[k].len() < starts {
                        let missing = starts - self.pos[k].len();
                        if self.pos[k].try_reserve(missing).is_err() {
                            self.conflict.get_or_insert_with(|| {
                                format!(
                                    "the array of segment starts of storage level {} needs {} \
                                     bytes, which cannot be allocated",
                                    k + 1,
                                    starts as u128 * 8
                                )
                            });
                            return 0;
                        }
                        let start = self.idx[k].len() as i64;
                        self.pos[k].resize(starts, start);
                    }
                    self.idx[k].push(c);
                    self.idx[k].len() - 1
                }
                Built::Singleton => {
                    // The parent's position is new unless this is the first level that
                    // changed (a singleton level is never the first: formats refuse it).
                    if k == first_new && self.conflict.is_none() {
                        self.conflict = Some(format!(
                            "level {} is singleton, so each parent position holds one \
                             coordinate, but parent position {parent} holds more than one; make \
                             the parent level non-unique (e.g. COO `uq`)",
                            k + 1
                        ));
                    }
                    let idx = &mut self.idx[k];
                    if idx.len() <= parent {
                        if idx.try_reserve(parent + 1 - idx.len()).is_err() {
                            self.conflict.get_or_insert_with(|| {
                                format!(
                                    "the coordinates of level {} need {} bytes, which cannot \
                                     be allocated",
                                    k + 1,
                                    (parent as u128 + 1) * 8
                                )
                            });
                            return 0;
                        }
                        idx.resize(parent + 1, 0);
                    }
                    idx[parent] = c;
                    parent
                }
                Built::Table => {
                    let (rule, width) = self.tables[k].expect("tables are placed before tuples");
                    let slot = (rule.slot)(&self.idx[k], width, parent, c);
                    self.idx[k][slot] = c;
                    slot
                }
            };
        }
        self.current[levels - 1]
    }

    /// Allocate every singleton level's coordinates and every table at once, the tables
    /// with the rules and widths in `tables`, when the levels above each have all their
    /// positions (they insert, or are tables): tuples may then come in any order.
    pub(super) fn place_computed(
        &mut self,
        tables: Vec<Option<(TableRule, usize)>>,
    ) -> Result<(), String> {
        let mut positions = Some(1usize);
        for (k, table) in tables.iter().enumerate() {
            let what = || format!("the coordinates of level {}", k + 1);
            match self.kinds[k] {
                Built::Inserted => positions = positions.and_then(|p| p.checked_mul(self.sizes[k])),
                Built::Singleton => self.idx[k] = crate::memory::filled(positions, 0i64, &what)?,
                Built::Table => {
                    let width = table.map_or(0, |(_, width)| width);
                    positions = positions.and_then(|p| p.checked_mul(width));
                    self.idx[k] = crate::memory::filled(positions, -1i64, &what)?;
                }
                Built::Appended { .. } => break,
            }
        }
        self.tables = tables;
        Ok(())
    }

    /// The levels' storage and the number of positions of the last one; an error when the
    /// tuples do not fit the levels, or a level's positions cannot be counted or allocated.
    pub(super) fn finish(mut self) -> Result<(Vec<LevelStorage>, usize), String> {
        if let Some(conflict) = self.conflict.take() {
            return Err(conflict);
        }
        let mut positions = 1usize;
        let mut levels = Vec::with_capacity(self.kinds.len());
        for (k, kind) in self.kinds.iter().enumerate() {
            let params = vec![(ParamKind::Size, self.sizes[k] as i64)];
            match kind {
                Built::Inserted => {
                    positions = positions
                        .checked_mul(self.sizes[k])
                        .ok_or_else(|| positions_beyond_addresses(&self.sizes[..=k]))?;
                    levels.push(LevelStorage {
                        arrays: vec![],
                        params,
                    });
                }
                Built::Appended { .. } => {
                    let mut starts = std::mem::take(&mut self.pos[k]);
                    let children = self.idx[k].len();
                    crate::memory::resize(
                        &mut starts,
                        positions.checked_add(1),
                        children as i64,
                        &|| format!("the positions array of level {}", k + 1),
                    )?;
                    positions = children;
                    levels.push(LevelStorage {
                        arrays: vec![
                            (ArrayKind::Pos, starts.into()),
                            (ArrayKind::Idx, std::mem::take(&mut self.idx[k]).into()),
                        ],
                        params,
                    });
                }
                Built::Table => {
                    let width = self.tables[k].map_or(0, |(_, width)| width);
                    positions = positions
                        .checked_mul(width)
                        .ok_or_else(|| format!("level {} has too many positions", k + 1))?;
                    levels.push(LevelStorage {
                        arrays: vec![(ArrayKind::Idx, std::mem::take(&mut self.idx[k]).into())],
                        params: vec![
                            (ParamKind::Size, self.sizes[k] as i64),
                            (ParamKind::Width, width as i64),
                        ],
                    });
                }
                Built::Singleton => {
                    let mut coords = std::mem::take(&mut self.idx[k]);
                    crate::memory::resize(&mut coords, Some(positions), 0, &|| {
                        format!("the coordinates of level {}", k + 1)
                    })?;
                    levels.push(LevelStorage {
                        arrays: vec![(ArrayKind::Idx, coords.into())],
                        params,
                    });
                }
            }
        }
        Ok((levels, positions))
    }
}
