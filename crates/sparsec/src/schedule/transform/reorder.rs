//! `reorder` and `order`: permuting loops.

use super::super::Concrete;
use super::ScheduleError;

impl Concrete {
    pub(super) fn reorder_vars(
        &self,
        text: &str,
        a: &str,
        b: &str,
    ) -> Result<Concrete, ScheduleError> {
        let (va, vb) = (self.loop_named(text, a)?, self.loop_named(text, b)?);
        let mut loops = self.loop_sequence();
        let (pa, pb) = (
            loops.iter().position(|&v| v == va).expect("loop"),
            loops.iter().position(|&v| v == vb).expect("loop"),
        );
        if pa.abs_diff(pb) != 1 {
            return Err(ScheduleError::new(
                text,
                "the two loops are directly nested",
                format!(
                    "the loops are {}; use order(...) to move loops further",
                    self.loops().join(", ")
                ),
            ));
        }
        loops.swap(pa, pb);
        self.with_loops(text, loops)
    }

    pub(super) fn order_vars(
        &self,
        text: &str,
        names: &[String],
    ) -> Result<Concrete, ScheduleError> {
        let mut wanted = Vec::new();
        for n in names {
            let v = self.loop_named(text, n)?;
            if wanted.contains(&v) {
                return Err(ScheduleError::new(
                    text,
                    "each loop is listed once",
                    format!("`{n}` is listed twice"),
                ));
            }
            wanted.push(v);
        }
        let mut loops = self.loop_sequence();
        let mut slots: Vec<usize> = wanted
            .iter()
            .map(|v| loops.iter().position(|u| u == v).expect("loop"))
            .collect();
        slots.sort_unstable();
        for (slot, v) in slots.into_iter().zip(wanted) {
            loops[slot] = v;
        }
        self.with_loops(text, loops)
    }
}
