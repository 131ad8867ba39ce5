//! Reading a tensor back: a depth-first walk over its stored components, natively where a
//! level has a [`Layout`] and through its level functions elsewhere.

use super::Tensor;
use crate::format::{Layout, LevelCoord, LevelSite};
use crate::ir::interp::{Env, ARGUMENT};
use crate::ir::{ArrayKind, Expr, ParamKind};

/// How [`Tensor::walk_stored`] reads each level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reading {
    /// Natively where the level has a [`Layout`], through its level functions elsewhere.
    Native,
    /// Through the level functions at every level: what the native reading must agree with.
    #[cfg(test)]
    LevelFunctions,
}

/// A depth-first walk over a tensor's stored components.
struct Walk<'t, 'v> {
    tensor: &'t Tensor,
    /// Each level's coordinate, and its layout when it is read natively.
    level_coords: Vec<LevelCoord>,
    layouts: Vec<Option<Layout>>,
    /// The storage coordinates of the levels above the current one.
    storage_coords: Vec<i64>,
    /// The logical coordinates they amount to.
    logical: Vec<i64>,
    visit: &'v mut dyn FnMut(&[i64], f64),
}

impl Walk<'_, '_> {
    /// Visit everything under position `parent_pos` of level `k` (0-based; the root's
    /// position is 0).
    fn level(&mut self, k: usize, parent_pos: i64) {
        let tensor = self.tensor;
        let specs = tensor.format.levels();
        if k == specs.len() {
            let inside = self
                .logical
                .iter()
                .zip(&tensor.dims)
                .all(|(&c, &n)| (c as usize) < n);
            if inside {
                (self.visit)(&self.logical, tensor.values.get(parent_pos as usize));
            }
            return;
        }
        let layout = self.layouts[k];
        let storage = &tensor.levels[k];
        let array = |kind| {
            storage
                .array(kind)
                .unwrap_or_else(|| panic!("level {} has no {kind:?} array", k + 1))
        };
        match layout {
            Some(Layout::Full) => {
                let size = storage.param(ParamKind::Size);
                for coord in 0..size {
                    self.descend(k, coord, parent_pos * size + coord);
                }
            }
            Some(Layout::Segments) => {
                let (pos, idx) = (array(ArrayKind::Pos), array(ArrayKind::Idx));
                let parent = parent_pos as usize;
                for p in pos.get(parent)..pos.get(parent + 1) {
                    self.descend(k, idx.get(p as usize), p);
                }
            }
            Some(Layout::Singleton) => {
                let coord = array(ArrayKind::Idx).get(parent_pos as usize);
                self.descend(k, coord, parent_pos);
            }
            Some(Layout::Table) => {
                let (width, idx) = (storage.param(ParamKind::Width), array(ArrayKind::Idx));
                for slot in parent_pos * width..(parent_pos + 1) * width {
                    let coord = idx.get(slot as usize);
                    if coord != -1 {
                        self.descend(k, coord, slot);
                    }
                }
            }
            None => self.by_level_functions(k, parent_pos),
        }
    }

    /// Level `k`'s children of `parent_pos`, found by evaluating its level functions.
    fn by_level_functions(&mut self, k: usize, parent_pos: i64) {
        let tensor = self.tensor;
        let level = &tensor.format.levels()[k].format;
        let site = LevelSite {
            operand: crate::ir::OperandId(0),
            level: k + 1,
            ancestors: self.storage_coords.iter().map(|&c| Expr::Int(c)).collect(),
        };
        let parent = Expr::Int(parent_pos);
        let env = |argument| Env {
            levels: &tensor.levels,
            argument,
        };
        // Each level function is built once per parent, over ARGUMENT, and evaluated for
        // every coordinate or position under it.
        let argument = Expr::Var(ARGUMENT);
        if level.capabilities().coord_value_iter {
            let (begin, end) = level
                .coord_iter(&site)
                .expect("coordinate value iteration has coord_iter");
            let (begin, end) = (env(0).eval(&begin), env(0).eval(&end));
            let (pos, found) = level
                .coord_access(&site, &parent, &argument)
                .expect("coordinate value iteration has coord_access");
            for i in begin..end {
                let at = env(i);
                if at.eval(&found) != 0 {
                    self.descend(k, i, at.eval(&pos));
                }
            }
        } else {
            let (begin, end) = level
                .pos_iter(&site, &parent)
                .expect("a level without coordinate value iteration iterates positions");
            let (begin, end) = (env(0).eval(&begin), env(0).eval(&end));
            let (coord, found) = level
                .pos_access(&site, &argument)
                .expect("position iteration has pos_access");
            for p in begin..end {
                let at = env(p);
                if at.eval(&found) != 0 {
                    self.descend(k, at.eval(&coord), p);
                }
            }
        }
    }

    /// Take coordinate `coord` at position `pos` of level `k`, and walk below it.
    fn descend(&mut self, k: usize, coord: i64, pos: i64) {
        let level_coord = self.level_coords[k];
        // Each level changes at most one logical coordinate: save and restore just it.
        let touched = mode_of(level_coord);
        let saved = touched.map(|m| self.logical[m]);
        apply_coord(level_coord, coord, &mut self.logical);
        self.storage_coords.push(coord);
        self.level(k + 1, pos);
        self.storage_coords.pop();
        if let (Some(m), Some(old)) = (touched, saved) {
            self.logical[m] = old;
        }
    }
}

fn mode_of(coord: LevelCoord) -> Option<usize> {
    match coord {
        LevelCoord::Mode(m)
        | LevelCoord::BlockOuter { mode: m, .. }
        | LevelCoord::BlockInner { mode: m, .. } => Some(m),
        LevelCoord::EllSlot | LevelCoord::Diagonal => None,
    }
}

fn apply_coord(coord: LevelCoord, value: i64, logical: &mut [i64]) {
    match coord {
        LevelCoord::Mode(m) => logical[m] = value,
        LevelCoord::BlockOuter { mode, block } => logical[mode] += value * block as i64,
        LevelCoord::BlockInner { mode, .. } => logical[mode] += value,
        LevelCoord::EllSlot | LevelCoord::Diagonal => {}
    }
}

impl Tensor {
    pub(super) fn walk_stored(&self, reading: Reading, visit: &mut dyn FnMut(&[i64], f64)) {
        let levels = self.format.levels();
        let mut walk = Walk {
            tensor: self,
            level_coords: levels.iter().map(|l| l.coord).collect(),
            layouts: levels
                .iter()
                .map(|l| match reading {
                    Reading::Native => l.format.layout(),
                    #[cfg(test)]
                    Reading::LevelFunctions => None,
                })
                .collect(),
            storage_coords: Vec::with_capacity(self.format.levels().len()),
            logical: vec![0i64; self.order()],
            visit,
        };
        walk.level(0, 0);
    }
}
