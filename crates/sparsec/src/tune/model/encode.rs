//! A point of the space as the fixed-length vector the schedule embedder reads.
//!
//! The layout follows from the statement alone, as the space does, so one encoder serves
//! every statement: categorical choices are one-hot (a learned linear layer over a one-hot
//! is WACO's embedding table), split factors and chunks are log2-scaled, and the loop
//! order is a permutation matrix over the slots `(variable, outer or inner part)`.

use crate::format::{Format, LevelCoord};
use crate::notation::cin::Statement;
use crate::schedule::{OmpSchedule, Schedule, Transform};

use super::super::space::Point;

/// Level kinds by [`crate::format::LevelFormat::name`]; any other reads as none of them.
const LEVEL_KINDS: [&str; 7] = [
    "dense",
    "compressed",
    "singleton",
    "hashed",
    "bytemap",
    "range",
    "offset",
];

/// OpenMP schedule kinds in their one-hot order.
const OMP_KINDS: [OmpSchedule; 4] = [
    OmpSchedule::Static,
    OmpSchedule::Dynamic,
    OmpSchedule::Guided,
    OmpSchedule::Balanced,
];

/// Scale of log2 split factors (WACO's largest split is 2^15).
const SPLIT_LOG2_SCALE: f32 = 15.0;

/// Scale of log2 chunks (WACO's largest chunk is 2^8).
const CHUNK_LOG2_SCALE: f32 = 8.0;

/// Encodes the points of one statement's space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleEncoder {
    /// Index variables, in the statement's order.
    vars: Vec<String>,
    /// Number of modes of each tuned tensor.
    tuned_orders: Vec<usize>,
}

impl ScheduleEncoder {
    /// The encoder of `statement`'s points whose tuned tensors have `tuned_orders` modes.
    pub fn new(statement: &Statement, tuned_orders: Vec<usize>) -> ScheduleEncoder {
        ScheduleEncoder {
            vars: statement.vars.iter().map(|v| v.name.clone()).collect(),
            tuned_orders,
        }
    }

    /// The variables and tuned tensors' orders the encoder was made for.
    pub fn shape(&self) -> (&[String], &[usize]) {
        (&self.vars, &self.tuned_orders)
    }

    /// An encoder from its [`ScheduleEncoder::shape`].
    pub fn from_shape(vars: Vec<String>, tuned_orders: Vec<usize>) -> ScheduleEncoder {
        ScheduleEncoder { vars, tuned_orders }
    }

    fn level_width(order: usize) -> usize {
        // kind, unique, mode, block outer, block inner, log2 block, other coordinate
        LEVEL_KINDS.len() + 1 + order + 4
    }

    fn slots(&self) -> usize {
        2 * self.vars.len()
    }

    /// Length of every encoding.
    pub fn width(&self) -> usize {
        let formats: usize = self
            .tuned_orders
            .iter()
            .map(|&r| 2 * r * Self::level_width(r))
            .sum();
        let s = self.slots();
        formats + self.vars.len() + s * s + (s + 1) + OMP_KINDS.len() + 1 + 2 + 1
    }

    /// The encoding of `point`.
    pub fn encode(&self, point: &Point) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.width());
        for (k, &order) in self.tuned_orders.iter().enumerate() {
            encode_format(&mut out, point.formats.get(k), order);
        }
        for v in 0..self.vars.len() {
            let split = point.splits.get(v).copied().unwrap_or(1).max(1);
            out.push((split as f32).log2() / SPLIT_LOG2_SCALE);
        }

        // Loop order: slot s at position p.
        let slot_of = self.slot_names(&point.schedule);
        let s = self.slots();
        let mut perm = vec![0.0f32; s * s];
        for (position, name) in point.order.iter().enumerate().take(s) {
            if let Some(&(_, slot)) = slot_of.iter().find(|(n, _)| n == name) {
                perm[slot * s + position] = 1.0;
            }
        }
        out.extend(perm);

        let mut parallel = vec![0.0f32; s + 1 + OMP_KINDS.len() + 1];
        match &point.parallel {
            None => parallel[s] = 1.0,
            Some(p) => {
                if let Some(&(_, slot)) = slot_of.iter().find(|(n, _)| *n == p.var) {
                    parallel[slot] = 1.0;
                }
                if let Some(kind) = OMP_KINDS.iter().position(|&k| k == p.schedule) {
                    parallel[s + 1 + kind] = 1.0;
                }
                parallel[s + 1 + OMP_KINDS.len()] =
                    (p.chunk.max(1) as f32).log2() / CHUNK_LOG2_SCALE;
            }
        }
        out.extend(parallel);
        out.push((point.threads.max(1) as f32).log2());
        out.push(if point.threads <= 1 { 1.0 } else { 0.0 });
        out.push(if point.schedule.is_empty() { 1.0 } else { 0.0 });
        debug_assert_eq!(out.len(), self.width());
        out
    }

    /// Loop names and their slots: a variable's own name and its split's outer part take
    /// slot `2v`, the inner part `2v + 1`.
    fn slot_names(&self, schedule: &str) -> Vec<(String, usize)> {
        let mut names: Vec<(String, usize)> = self
            .vars
            .iter()
            .enumerate()
            .map(|(v, n)| (n.clone(), 2 * v))
            .collect();
        if let Ok(parsed) = Schedule::parse(schedule) {
            for t in &parsed.transforms {
                if let Transform::Split {
                    var, outer, inner, ..
                } = t
                {
                    if let Some(v) = self.vars.iter().position(|n| n == var) {
                        names.push((outer.clone(), 2 * v));
                        names.push((inner.clone(), 2 * v + 1));
                    }
                }
            }
        }
        names
    }
}

/// One tuned tensor's format: `2 * order` level slots (a blocked format has twice the
/// levels of a plain one), unused slots zero.
fn encode_format(out: &mut Vec<f32>, format: Option<&Format>, order: usize) {
    let width = ScheduleEncoder::level_width(order);
    let start = out.len();
    out.resize(start + 2 * order * width, 0.0);
    let Some(format) = format else { return };
    for (l, spec) in format.levels().iter().take(2 * order).enumerate() {
        let slot = &mut out[start + l * width..start + (l + 1) * width];
        if let Some(kind) = LEVEL_KINDS.iter().position(|&k| k == spec.format.name()) {
            slot[kind] = 1.0;
        }
        let k = LEVEL_KINDS.len();
        slot[k] = if spec.format.properties().unique {
            1.0
        } else {
            0.0
        };
        let mode_at = k + 1;
        let extra = mode_at + order;
        match spec.coord {
            LevelCoord::Mode(m) if m < order => slot[mode_at + m] = 1.0,
            LevelCoord::BlockOuter { mode, block } if mode < order => {
                slot[mode_at + mode] = 1.0;
                slot[extra] = 1.0;
                slot[extra + 2] = (block.max(1) as f32).log2() / 4.0;
            }
            LevelCoord::BlockInner { mode, block } if mode < order => {
                slot[mode_at + mode] = 1.0;
                slot[extra + 1] = 1.0;
                slot[extra + 2] = (block.max(1) as f32).log2() / 4.0;
            }
            _ => slot[extra + 3] = 1.0,
        }
    }
}
