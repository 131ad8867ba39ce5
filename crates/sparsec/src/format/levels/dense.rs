//! The dense level: every coordinate of `[0, N)`, positions computed.

use super::*;

/// Dense level: stores only its size and encodes every coordinate in `[0, N)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dense {
    /// Configurable: siblings in increasing order (always true as stored).
    pub ordered: bool,
    /// Configurable: no duplicate siblings.
    pub unique: bool,
}

/// The default dense level (ordered, unique).
pub(super) const DENSE: Dense = Dense {
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
    fn layout(&self) -> Option<Layout> {
        Some(Layout::Full)
    }
    fn pack(&self, input: &PackInput<'_>) -> Result<PackOutput, String> {
        let size = input.size;
        Ok(PackOutput {
            children: pack_computed(input)?,
            storage: LevelStorage {
                arrays: vec![],
                params: vec![(ParamKind::Size, size as i64)],
            },
            positions: padded_positions(input)?,
        })
    }
    fn validate(&self, input: &ValidateInput<'_>) -> Result<usize, String> {
        computed_positions(input)
    }
}
