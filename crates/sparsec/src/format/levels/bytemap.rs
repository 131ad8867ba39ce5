//! The bytemap level: dense positions with a presence flag per coordinate.

use super::*;

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
    fn positions_bound(&self, parent_positions: u128, size: u128, _: u128, _: u128) -> u128 {
        // A flag for every coordinate of every parent.
        parent_positions.saturating_mul(size)
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        let children = pack_computed(input)?;
        let positions = input.parent_positions.checked_mul(input.size);
        let mut present = crate::memory::filled(positions, 0i64, &|| {
            format!("the bytemap of level {}", input.level)
        })?;
        let positions = present.len();
        for child in &children {
            present[child.parent] = 1;
        }
        Ok(PackOutput {
            children,
            storage: LevelStorage {
                arrays: vec![(ArrayKind::Present, present.into())],
                params: vec![(ParamKind::Size, input.size as i64)],
            },
            positions,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        let positions = computed_positions(input)?;
        let present = input.array(ArrayKind::Present);
        check_len(ArrayKind::Present, &present, positions)?;
        if present.iter().any(|&f| f != 0 && f != 1) {
            return Err("present holds flags other than 0 and 1".into());
        }
        Ok(positions)
    }
}
