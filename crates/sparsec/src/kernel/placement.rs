//! Which way a kernel places a sparse output when it runs on several threads, learnt from
//! its own runs: appended in one pass on one thread, placed by the threads in each row's
//! bounded room and then packed, or counted by the threads and placed at exact offsets
//! (`output::place_rows`).

use std::sync::Mutex;
use std::time::Duration;

/// How a kernel places a sparse output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Appended in one pass, on one thread.
    OneThread,
    /// Placed by the threads, each row in the room its bound gives (a kernel with the
    /// bounding phase), then the rows packed on one thread.
    Bounded,
    /// Counted by the threads, then placed by them at each row's exact offset.
    Counted,
}

impl Placement {
    fn index(self) -> usize {
        self as usize
    }
}

/// Which [`Placement`] has been fastest for a kernel's outputs on threads, learnt from its
/// calls. None wins everywhere, by an amount that depends on the input, the machine and
/// the moment:
/// - appending takes one pass where the others take two (counting then placing, or
///   placing then packing), so one thread wins where each entry costs little work (A + B
///   into CSR: 0.95x, 2026-11-26 on this project's 2-core machine) and loses where it
///   costs much (SDDMM's inner products: 2.0x on two threads); TTV into `ss` on a uniform
///   1000^3 tensor with 2M entries, two threads against one, minutes apart on 2026-11-28:
///   0.7x, then 1.6x;
/// - packing bounded rooms is a serial copy of every entry, and rooms far larger than
///   their rows touch more fresh pages, where counting repeats the loops without their
///   values (SpGEMM A * A into CSR on two threads, ms, bounded against counted on
///   2026-12-07: a banded 100k x 100k matrix 38.5 against 33.5, bcsstk16 22.9 against 21.9,
///   ct2010 14.9 against 16.0, a uniform 100k x 100k one 108 against 112).
///
/// So after a first call on threads, whose time (starting the threads) is dropped, the
/// calls take each candidate in turn until each has [`PlacementPace::SAMPLES`] times
/// (or one, when that was far slower than another's);
/// later calls take the one with the lowest best time per entry placed, and every
/// [`PlacementPace::RETRY`] calls one of the others (in turn) while it is close. Best
/// times, because this machine's noise only ever slows a run down.
#[derive(Debug, Default)]
pub(crate) struct PlacementPace {
    state: Mutex<PaceState>,
}

#[derive(Debug, Default)]
struct PaceState {
    /// A first call was made (and its time dropped).
    warm: bool,
    /// Best seconds per entry, and runs timed, of each placement (by [`Placement::index`]).
    timed: [Timed; 3],
    /// Choices made since every candidate was sampled.
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
    /// One call in this many takes a placement not currently fastest, when its best time
    /// is under [`PlacementPace::RETRY_WITHIN`] times the fastest's: a placement far
    /// slower (one thread against many cores) is not worth the retries.
    const RETRY: u32 = 8;
    const RETRY_WITHIN: f64 = 1.5;

    /// The placement for the next output on threads, among `candidates` (not empty; the
    /// first of the least sampled is tried first).
    pub(crate) fn choose(&self, candidates: &[Placement]) -> Placement {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let timed = |p: Placement| state.timed[p.index()];
        let sampled = |p: Placement| timed(p).runs > 0;
        let fastest = candidates
            .iter()
            .copied()
            .filter(|&p| sampled(p))
            .min_by(|&a, &b| timed(a).best.total_cmp(&timed(b).best));
        // A candidate still to sample, unless its first time was already far slower than
        // the fastest's.
        let far_slower = |p: Placement| {
            fastest.is_some_and(|f| timed(p).best > Self::RETRY_WITHIN * timed(f).best)
        };
        let to_sample = candidates
            .iter()
            .copied()
            .filter(|&p| timed(p).runs < Self::SAMPLES && !(sampled(p) && far_slower(p)))
            .min_by_key(|&p| timed(p).runs);
        let (Some(fastest), None) = (fastest, to_sample) else {
            return to_sample.or(fastest).unwrap_or(Placement::Counted);
        };
        state.choices += 1;
        if !state.choices.is_multiple_of(Self::RETRY) {
            return fastest;
        }
        // The others close enough to retry, each in its turn.
        let within = Self::RETRY_WITHIN * state.timed[fastest.index()].best;
        let close: Vec<Placement> = candidates
            .iter()
            .copied()
            .filter(|&p| p != fastest && state.timed[p.index()].best < within)
            .collect();
        let turn = (state.choices / Self::RETRY) as usize;
        close
            .get(turn % close.len().max(1))
            .copied()
            .unwrap_or(fastest)
    }

    /// Record that `placement` placed an output of `entries` entries in `elapsed` (except
    /// for the first call).
    pub(crate) fn record(&self, placement: Placement, elapsed: Duration, entries: usize) {
        let sample = elapsed.as_secs_f64() / entries.max(1) as f64;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !std::mem::replace(&mut state.warm, true) {
            return;
        }
        let timed = &mut state.timed[placement.index()];
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

    const ALL: [Placement; 3] = [Placement::Bounded, Placement::Counted, Placement::OneThread];

    #[test]
    fn outputs_on_threads_take_the_placement_found_fastest() {
        let ms = Duration::from_millis;
        let entries = 1 << 20;
        let pace = PlacementPace::default();
        let record = |placement, time| {
            assert_eq!(pace.choose(&ALL), placement);
            pace.record(placement, ms(time), entries);
        };
        // The first call on threads, its time dropped; then each candidate in turn, twice.
        record(Placement::Bounded, 1);
        for (placement, time) in [(Placement::Bounded, 8), (Placement::Counted, 9)]
            .into_iter()
            .chain([(Placement::OneThread, 7), (Placement::Bounded, 7)])
            .chain([(Placement::Counted, 6), (Placement::OneThread, 7)])
        {
            record(placement, time);
        }
        // Then the fastest by its best time, and every eighth call one of the others
        // within 1.5x, in turn.
        let choices: Vec<Placement> = (0..24).map(|_| pace.choose(&ALL)).collect();
        for (k, choice) in choices.iter().enumerate() {
            let expected = match k + 1 {
                8 => Placement::OneThread,
                16 => Placement::Bounded,
                24 => Placement::OneThread,
                _ => Placement::Counted,
            };
            assert_eq!(*choice, expected, "choice {k}");
        }
        // Slow runs do not raise a best time; a faster retry of another turns the choice.
        pace.record(Placement::Counted, ms(100), entries);
        assert_eq!(pace.choose(&ALL), Placement::Counted);
        pace.record(Placement::OneThread, ms(4), entries);
        assert_eq!(pace.choose(&ALL), Placement::OneThread);
        // Times are per entry: a run twice as long over twice the entries is as fast.
        pace.record(Placement::Bounded, ms(7), 2 * entries);
        assert_eq!(pace.choose(&ALL), Placement::Bounded);
        // Only the candidates given are chosen.
        let two = [Placement::Counted, Placement::OneThread];
        assert_eq!(pace.choose(&two), Placement::OneThread);

        // A placement far slower than the others (one thread against many cores) is
        // neither sampled again nor retried.
        let pace = PlacementPace::default();
        let two = [Placement::Counted, Placement::OneThread];
        for (placement, time) in [(Placement::Counted, 1), (Placement::Counted, 2)]
            .into_iter()
            .chain([(Placement::OneThread, 10), (Placement::Counted, 2)])
        {
            assert_eq!(pace.choose(&two), placement);
            pace.record(placement, ms(time), entries);
        }
        assert!((0..32).all(|_| pace.choose(&two) == Placement::Counted));
    }
}
