//! The hashed level and its probe, the C helper `hashed.c`.

use super::*;

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
    /// The probe helper reads the coordinates as `int64_t`.
    fn narrowable(&self) -> bool {
        false
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
    fn layout(&self) -> Option<Layout> {
        Some(Layout::Table)
    }
    fn table_rule(&self) -> Option<TableRule> {
        Some(TableRule {
            width: hash_width,
            slot: hash_locate,
        })
    }
    fn positions_bound(&self, parent_positions: u128, size: u128, widest: u128, _: u128) -> u128 {
        // Every parent gets a table as wide as the widest one needs.
        let fits = |x: u128| usize::try_from(x).unwrap_or(usize::MAX);
        parent_positions.saturating_mul(hash_width(fits(widest), fits(size)) as u128)
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
        let mut idx =
            crate::memory::filled(input.parent_positions.checked_mul(width), -1i64, &|| {
                format!("the hash table of level {}", input.level)
            })?;
        let mut children = Vec::with_capacity(groups.len());
        for g in groups {
            let coord = input.coords[g.lo];
            let slot = hash_locate(&idx, width, g.parent, coord);
            idx[slot] = coord;
            children.push(Segment {
                parent: slot,
                lo: g.lo,
                hi: g.hi,
            });
        }
        children.sort_by_key(|c| c.parent);
        Ok(PackOutput {
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Idx, idx.into())],
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
        check_len(ArrayKind::Idx, &idx, n)?;
        check_coords(input, &idx, Some(-1))?;
        Ok(n)
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
