//! How many points an evaluation may list. The reference lists every point where an
//! operand with a nonzero fill (a scalar added, `x + 1`) meets a dimension of billions:
//! such an evaluation would fill memory until an allocation aborts the process. Each
//! evaluation counts the points it visits against a budget from the memory available,
//! and stops visiting once over it; [`evaluate_within`] then reports it.

use std::cell::Cell;

/// Bytes one listed point costs at least: its key, its value pair and the map's slot.
const BYTES_PER_POINT: u64 = 96;

/// What the evaluation on a thread may still visit.
#[derive(Clone, Copy)]
enum Left {
    /// No budget: an evaluation outside [`evaluate_within`].
    Unlimited,
    Points(u64),
    /// It went over: nothing more is visited.
    Spent,
}

thread_local! {
    static LEFT: Cell<Left> = const { Cell::new(Left::Unlimited) };
}

/// Take `points` from the budget: whether they may be visited. Once the budget is spent
/// nothing more may be.
pub(super) fn take(points: u64) -> bool {
    LEFT.with(|left| match left.get() {
        Left::Unlimited => true,
        Left::Points(l) if points <= l => {
            left.set(Left::Points(l - points));
            true
        }
        _ => {
            left.set(Left::Spent);
            false
        }
    })
}

/// Run the evaluation `evaluate` with a budget of the points memory can hold: its result,
/// or an error when it would list more.
pub(super) fn evaluate_within<T>(evaluate: impl FnOnce() -> T) -> Result<T, String> {
    let points = crate::memory::available_bytes().map_or(u64::MAX, |b| b as u64 / BYTES_PER_POINT);
    let outer = LEFT.with(|left| left.replace(Left::Points(points)));
    let result = evaluate();
    match LEFT.with(|left| left.replace(outer)) {
        Left::Spent => Err(format!(
            "the reference evaluator would list more than {points} points (at least \
             {BYTES_PER_POINT} bytes each), more than memory holds"
        )),
        _ => Ok(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_budget_stays_spent_until_the_evaluation_ends() {
        let outcome = evaluate_within(|| {
            assert!(take(10));
            assert!(!take(u64::MAX));
            assert!(!take(1), "spent");
        });
        assert!(outcome.unwrap_err().contains("more than memory holds"));
        // The next evaluation starts afresh, and outside one nothing is counted.
        assert!(evaluate_within(|| take(10)).unwrap());
        assert!(take(u64::MAX) && take(u64::MAX));
    }
}
