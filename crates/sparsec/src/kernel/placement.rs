//! Which way a kernel places a sparse output when it runs on threads, learnt from
//! its own runs: appended in one pass on one thread, or counted (or bounded) and placed by
//! the threads (`output::place_rows`).

use std::sync::Mutex;
use std::time::Duration;

/// How a kernel that can append its output places it when it runs on several threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Appended in one pass, on one thread.
    OneThread,
    /// Counted (or bounded) and placed by the threads.
    Threads,
}

impl Placement {
    fn other(self) -> Placement {
        match self {
            Placement::OneThread => Placement::Threads,
            Placement::Threads => Placement::OneThread,
        }
    }
}

/// Which [`Placement`] has been faster for a kernel's outputs on threads, learnt from its
/// calls. Neither wins everywhere: on threads the output takes two passes (counting, then
/// placing) where appending takes one, so the threads win where each entry costs much
/// work (SDDMM's inner products: 2.0x on two threads) and lose where it costs little
/// (A + B into CSR: 0.95x, 2026-11-26 on this project's 2-core machine), by an amount
/// that depends on the machine and on the moment (TTV into `ss` on a uniform 1000^3
/// tensor with 2M entries, two threads against one, minutes apart on 2026-11-28: 0.7x,
/// then 1.6x). So after a first call on threads, whose time (starting the threads) is
/// dropped, the calls alternate until each placement has [`PlacementPace::SAMPLES`]
/// times; later calls take the placement with the lower best time per entry of room,
/// and try the other every [`PlacementPace::RETRY`] calls while it is close. Best times,
/// because this machine's noise only ever slows a run down.
#[derive(Debug, Default)]
pub(crate) struct PlacementPace {
    state: Mutex<PaceState>,
}

#[derive(Debug, Default)]
struct PaceState {
    /// A first call was made (and its time dropped).
    warm: bool,
    /// Best seconds per entry of room, and runs timed, of each placement.
    one_thread: Timed,
    threads: Timed,
    /// Choices made since both placements were sampled.
    choices: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Timed {
    best: f64,
    runs: u32,
}

impl PlacementPace {
    /// Times of each placement taken before choosing between them.
    const SAMPLES: u32 = 2;
    /// One call in this many takes the placement not currently faster, when its best time
    /// is under [`PlacementPace::RETRY_WITHIN`] times the faster's: a placement far
    /// slower (one thread against many cores) is not worth the retries.
    const RETRY: u32 = 8;
    const RETRY_WITHIN: f64 = 1.5;

    /// The placement for the next output on threads.
    pub(crate) fn choose(&self) -> Placement {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (threads, one) = (state.threads, state.one_thread);
        if threads.runs < Self::SAMPLES || one.runs < Self::SAMPLES {
            return if one.runs < threads.runs {
                Placement::OneThread
            } else {
                Placement::Threads
            };
        }
        state.choices += 1;
        let (faster, best, other_best) = if one.best <= threads.best {
            (Placement::OneThread, one.best, threads.best)
        } else {
            (Placement::Threads, threads.best, one.best)
        };
        if state.choices.is_multiple_of(Self::RETRY) && other_best < best * Self::RETRY_WITHIN {
            faster.other()
        } else {
            faster
        }
    }

    /// Record that `placement` placed an output with `room` entries of room in `elapsed`
    /// (except for the first call).
    pub(crate) fn record(&self, placement: Placement, elapsed: Duration, room: usize) {
        let sample = elapsed.as_secs_f64() / room.max(1) as f64;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !std::mem::replace(&mut state.warm, true) {
            return;
        }
        let timed = match placement {
            Placement::OneThread => &mut state.one_thread,
            Placement::Threads => &mut state.threads,
        };
        timed.best = if timed.runs == 0 {
            sample
        } else {
            timed.best.min(sample)
        };
        timed.runs += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_outputs_on_threads_take_the_placement_found_faster() {
        let ms = Duration::from_millis;
        let room = 1 << 20;
        let pace = PlacementPace::default();
        // The first call on threads, its time dropped; then both placements in turn.
        let record = |placement, time| {
            assert_eq!(pace.choose(), placement);
            pace.record(placement, ms(time), room);
        };
        record(Placement::Threads, 1);
        record(Placement::Threads, 12);
        record(Placement::OneThread, 5);
        record(Placement::Threads, 7);
        record(Placement::OneThread, 7);
        // Then the faster by its best time, and the other (within 1.5x) every eighth.
        let choices: Vec<Placement> = (0..16).map(|_| pace.choose()).collect();
        for (k, choice) in choices.iter().enumerate() {
            let retry = (k + 1) % PlacementPace::RETRY as usize == 0;
            let expected = if retry {
                Placement::Threads
            } else {
                Placement::OneThread
            };
            assert_eq!(*choice, expected, "choice {k}");
        }
        // Slow runs do not raise a best time; a faster retry of the other turns the choice.
        pace.record(Placement::OneThread, ms(100), room);
        assert_eq!(pace.choose(), Placement::OneThread);
        pace.record(Placement::Threads, ms(4), room);
        assert_eq!(pace.choose(), Placement::Threads);
        // Times are per entry of room: a run twice as long over twice the room is as fast.
        pace.record(Placement::OneThread, ms(7), 2 * room);
        assert_eq!(pace.choose(), Placement::OneThread);

        // A placement far slower than the other (threads on many cores against one) is
        // not retried.
        let pace = PlacementPace::default();
        for (placement, time) in [(Placement::Threads, 1), (Placement::Threads, 2)]
            .into_iter()
            .chain([(Placement::OneThread, 10), (Placement::Threads, 2)])
            .chain([(Placement::OneThread, 10)])
        {
            assert_eq!(pace.choose(), placement);
            pace.record(placement, ms(time), room);
        }
        assert!((0..32).all(|_| pace.choose() == Placement::Threads));
    }
}
