//! The C runtime (`runtime.c`): the entry buffer kernels append their output to and the
//! helpers generated kernels call.
//!
//! The C backend prints into each kernel only the sections of the file the kernel uses.
//! The build script also compiles the whole file into this library with every helper
//! exported, so an in-process backend calls the very same C functions: [`sys`] declares
//! them, and the safe wrappers here check their preconditions.

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int};

use crate::ir::{Expr, Helper};

/// The runtime's C source.
const SOURCE: &str = include_str!("runtime.c");

/// Start of the line that opens a section of [`SOURCE`], followed by its name and ` */`.
const MARKER: &str = "\n/* @section ";

/// A section of the runtime that a kernel prints when it needs it. Variants are in the
/// order of the file, which is the order of dependencies. The file's `free` and `append`
/// sections have no variant: kernels never call them (they print appending inline), only
/// the library exports them, and the runtime frees every backend's buffers with its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Section {
    /// Includes, the OpenMP stub, the `sparsec_buffer` type: every kernel.
    Base,
    /// `sparsec_grow`: kernels that emit entries.
    Grow,
    /// The sorts and `sparsec_order_touched`.
    Order,
    /// `sparsec_min`.
    Min,
    /// `sparsec_max`.
    Max,
    /// `sparsec_team` and the `sparsec_pace` it reads: kernels with a balanced parallel
    /// loop.
    Team,
    /// The intrinsics of masked gathers: kernels with a gathered dot product.
    Gather,
    /// Vector types as wide as the registers: kernels with rows summed in registers.
    Vectors,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Base => "base",
            Section::Grow => "grow",
            Section::Order => "order",
            Section::Min => "min",
            Section::Max => "max",
            Section::Team => "team",
            Section::Gather => "gather",
            Section::Vectors => "vectors",
        }
    }
}

/// The value of the runtime's `#define name value`, for tests that keep a Rust constant
/// in step with the C one it derives from.
#[cfg(test)]
pub(crate) fn defined(name: &str) -> i64 {
    SOURCE
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix("#define ")?.strip_prefix(name)?;
            rest.strip_prefix(' ')?.trim().parse().ok()
        })
        .unwrap_or_else(|| panic!("runtime.c defines {name} as a number"))
}

/// The sections of [`SOURCE`] in file order: name and text.
fn sections() -> impl Iterator<Item = (&'static str, &'static str)> {
    SOURCE.split(MARKER).skip(1).map(|s| {
        let (name, text) = s
            .split_once(" */\n")
            .expect("section marker ends with ` */`");
        (name, text.trim_matches('\n'))
    })
}

/// The runtime a kernel prints ahead of its function: the `needed` sections in file order,
/// then the level formats' `helpers`, all `static` so that each kernel library keeps
/// private copies.
pub(crate) fn kernel_prelude(needed: &BTreeSet<Section>, helpers: &[&Helper]) -> String {
    let mut out = String::new();
    let mut printed = 0;
    let texts = sections()
        .filter_map(|(name, text)| needed.iter().any(|s| s.name() == name).then_some(text));
    for text in texts {
        printed += 1;
        out.push_str(&private(text));
        out.push_str("\n\n");
    }
    assert_eq!(
        printed,
        needed.len(),
        "a runtime section is missing from runtime.c"
    );
    for helper in helpers {
        out.push_str(&private(helper.definition()).replace("SPARSEC_RT_GLOBAL ", ""));
        out.push_str("\n\n");
    }
    out
}

/// Runtime text with its linkage macros spelled for a kernel: private to its library.
fn private(text: &str) -> String {
    text.replace("SPARSEC_RT_INLINE", "static inline")
        .replace("SPARSEC_RT_API", "static")
}

/// The runtime's entry buffer (`sparsec_buffer`): a growable list of entries, each
/// `order` coordinates (at least one slot, so order-0 outputs still allocate) and a value.
/// Its blocks come from C `realloc`; `sparsec_buffer_free` releases them.
#[repr(C)]
#[derive(Debug)]
pub struct RawBuffer {
    /// `cap * max(order, 1)` coordinates, entry-major.
    pub coords: *mut i64,
    /// `cap` values.
    pub vals: *mut f64,
    /// Entries appended.
    pub len: i64,
    /// Entries allocated.
    pub cap: i64,
}

impl RawBuffer {
    /// A buffer with no blocks yet.
    pub const EMPTY: RawBuffer = RawBuffer {
        coords: std::ptr::null_mut(),
        vals: std::ptr::null_mut(),
        len: 0,
        cap: 0,
    };

    /// The entries a kernel of `order` output coordinates emitted into `buffers` (one
    /// per thread), in buffer order: coordinates entry-major, and values.
    pub fn entries(buffers: &[RawBuffer], order: usize) -> (Vec<i64>, Vec<f64>) {
        let total: usize = buffers.iter().map(|b| b.len as usize).sum();
        let mut coords = Vec::with_capacity(total * order);
        let mut values = Vec::with_capacity(total);
        for b in buffers {
            let len = b.len as usize;
            // SAFETY: the kernel wrote `len` entries of `order` coordinates and one value
            // to each buffer it used.
            unsafe {
                if len * order > 0 {
                    coords.extend_from_slice(std::slice::from_raw_parts(b.coords, len * order));
                }
                if len > 0 {
                    values.extend_from_slice(std::slice::from_raw_parts(b.vals, len));
                }
            }
        }
        (coords, values)
    }
}

// SAFETY: a buffer owns its two heap blocks (C `realloc`) and is used by one thread at a
// time: the kernel call that fills it, then the run that reads it.
unsafe impl Send for RawBuffer {}

/// The runtime's exported C functions, for code that calls them by address (an
/// in-process backend). Prefer the checked wrappers in the parent module elsewhere.
pub mod sys {
    use super::*;

    extern "C" {
        /// Append an entry of `order` coordinates read from `coords` and value `val`,
        /// growing the buffer (capacity 1024, then doubling); 0 when out of memory, 1 else.
        /// Every append to one buffer must use the same `order`.
        pub fn sparsec_append(b: *mut RawBuffer, order: i64, coords: *const i64, val: f64)
            -> c_int;
        /// Free both blocks of `b` and null its pointers (`len` and `cap` are kept).
        pub fn sparsec_buffer_free(b: *mut RawBuffer);
        /// Sort `a[0..n)` increasingly (introsort: quicksort, insertion sort on short
        /// ranges, heapsort when partitions keep failing).
        pub fn sparsec_sort_index(a: *mut i64, n: i64);
        /// Put `list[0..n)`, the distinct coordinates flagged (byte 1, others 0) in
        /// `seen`, all below `width`, in increasing order: by a scan of the flags, of a
        /// two-level bitmap (`marks`, [`crate::ir::touched_marks_len`] words, zero before
        /// and after), a radix sort or an introsort, whichever is cheaper.
        pub fn sparsec_order_touched(
            list: *mut i64,
            n: i64,
            seen: *const c_char,
            marks: *mut i64,
            width: i64,
        );
    }
}

/// A [`RawBuffer`] ran out of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("out of memory growing an entry buffer")]
pub struct OutOfMemory;

/// An owned entry buffer whose entries all have `order` coordinates.
#[derive(Debug)]
pub struct EntryBuffer {
    raw: RawBuffer,
    order: usize,
}

impl EntryBuffer {
    /// An empty buffer (nothing allocated until the first push).
    pub fn new(order: usize) -> Self {
        EntryBuffer {
            raw: RawBuffer::EMPTY,
            order,
        }
    }

    /// Append an entry with `sparsec_append`.
    ///
    /// # Panics
    /// If `coords` does not hold `order` coordinates.
    pub fn push(&mut self, coords: &[i64], val: f64) -> Result<(), OutOfMemory> {
        assert_eq!(
            coords.len(),
            self.order,
            "an entry has one coordinate per mode"
        );
        // SAFETY: `raw` is a valid buffer of this order and `coords` holds `order` values.
        let ok =
            unsafe { sys::sparsec_append(&mut self.raw, self.order as i64, coords.as_ptr(), val) };
        if ok == 1 {
            Ok(())
        } else {
            Err(OutOfMemory)
        }
    }

    /// Entries appended.
    pub fn len(&self) -> usize {
        self.raw.len as usize
    }

    /// Whether no entry was appended.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// Entries the buffer holds before it grows again.
    pub fn capacity(&self) -> usize {
        self.raw.cap as usize
    }

    /// The coordinates of all entries, entry-major (`len() * order`).
    pub fn coords(&self) -> &[i64] {
        if self.raw.len == 0 {
            return &[];
        }
        // SAFETY: the first `len * order` coordinates were written by appends.
        unsafe { std::slice::from_raw_parts(self.raw.coords, self.len() * self.order) }
    }

    /// The values of all entries.
    pub fn vals(&self) -> &[f64] {
        if self.raw.len == 0 {
            return &[];
        }
        // SAFETY: the first `len` values were written by appends.
        unsafe { std::slice::from_raw_parts(self.raw.vals, self.len()) }
    }

    /// The buffer for code that appends through [`sys::sparsec_append`] (or a kernel's
    /// inline equivalent), which must pass this buffer's `order`.
    pub fn as_raw_mut(&mut self) -> *mut RawBuffer {
        &mut self.raw
    }
}

impl Drop for EntryBuffer {
    fn drop(&mut self) {
        // SAFETY: the blocks came from the runtime's `realloc` and are freed once here.
        unsafe { sys::sparsec_buffer_free(&mut self.raw) }
    }
}

/// Sort with the runtime's introsort.
pub fn sort_index(a: &mut [i64]) {
    // SAFETY: `a` holds `a.len()` writable values.
    unsafe { sys::sparsec_sort_index(a.as_mut_ptr(), a.len() as i64) }
}

/// Order a touched list with `sparsec_order_touched`: `list` holds, in any order, the
/// positions whose flag in `seen` is 1.
///
/// # Panics
/// If a flag is neither 0 nor 1, an entry of `list` is not a flagged position, or `seen`
/// has more flags than `list` entries: the flag scan would write past `list`.
pub fn order_touched(list: &mut [i64], seen: &[u8]) {
    assert!(seen.iter().all(|&f| f <= 1), "flags are 0 or 1");
    assert!(
        list.iter().all(|&x| usize::try_from(x)
            .ok()
            .and_then(|x| seen.get(x))
            .is_some_and(|&f| f == 1)),
        "every touched coordinate is flagged"
    );
    assert_eq!(
        seen.iter().filter(|&&f| f == 1).count(),
        list.len(),
        "every flagged coordinate is in the list"
    );
    let width = seen.len() as i64;
    let marks_len = match crate::ir::simplify(&crate::ir::touched_marks_len(Expr::Int(width))) {
        Expr::Int(words) => words as usize,
        other => unreachable!("a constant width gives a constant length, not {other:?}"),
    };
    let mut marks = vec![0i64; marks_len];
    // SAFETY: checked above: every read of `seen` is in bounds, the scans write at most
    // one entry per flag, which is `list.len()`, and every coordinate is below `width`,
    // so its bits lie in `marks`.
    unsafe {
        sys::sparsec_order_touched(
            list.as_mut_ptr(),
            list.len() as i64,
            seen.as_ptr().cast(),
            marks.as_mut_ptr(),
            width,
        )
    }
    assert!(marks.iter().all(|&w| w == 0), "the bitmap is left zeroed");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_of_the_file_are_the_variants_in_order() {
        let names: Vec<&str> = sections().map(|(name, _)| name).collect();
        let variants = [
            Section::Base,
            Section::Grow,
            Section::Order,
            Section::Min,
            Section::Max,
            Section::Team,
            Section::Gather,
            Section::Vectors,
        ];
        let mut expected = variants.map(Section::name).to_vec();
        // Kernels never call these two: only the library exports them.
        expected.insert(2, "free");
        expected.insert(3, "append");
        assert_eq!(names, expected);
    }

    /// `sparsec_pace`, for calling the team functions the library exports.
    #[repr(C)]
    #[derive(Default)]
    struct Pace {
        ps_per_unit: i64,
        lag_ns: i64,
        lag_seen_ns: i64,
        earlier_lags_ns: [i64; 2],
        solo_runs: i64,
        first_team_ns: i64,
        learnt_on: [i64; 2],
    }

    extern "C" {
        fn sparsec_team(pace: *const Pace, threads: i64, work: i64, start: i64) -> i64;
        fn sparsec_pace_renew(pace: *mut Pace, work: i64, all: i64);
        fn sparsec_pace_record(
            pace: *mut Pace,
            team: i64,
            work: i64,
            start: i64,
            done_ns: i64,
            end_ns: i64,
        );
    }

    const MS: i64 = 1_000_000;

    impl Pace {
        /// A loop that first ran on a team long ago: its threads have settled, and late
        /// runs count.
        fn settled() -> Pace {
            Pace {
                first_team_ns: 1,
                ..Pace::default()
            }
        }

        fn team(&self, threads: i64, work: i64, now: i64) -> i64 {
            // SAFETY: reads the three fields of a live `Pace`.
            unsafe { sparsec_team(self, threads, work, now) }
        }

        /// A run of `work` units on `team` threads starting at `start`, the first thread
        /// busy for `busy` ns and then waiting `lag` ns for the others.
        fn record(&mut self, team: i64, work: i64, start: i64, busy: i64, lag: i64) {
            // SAFETY: writes the three fields of a live `Pace`.
            unsafe {
                sparsec_pace_record(self, team, work, start, start + busy, start + busy + lag)
            }
        }

        /// Runs alone, `busy` ns for `work` units, until the pace is sure.
        fn learn(&mut self, work: i64, start: i64, busy: i64) {
            for _ in 0..2 {
                self.record(1, work, start, busy, 0);
            }
        }
    }

    #[test]
    fn teams_follow_the_work_and_the_lag_of_past_runs() {
        let now = 1000 * MS;
        let mut pace = Pace::settled();
        // Not timed (start 0), one thread asked, or too little work for two shares.
        assert_eq!(pace.team(4, 1 << 40, 0), 1);
        assert_eq!(pace.team(1, 1 << 40, now), 1);
        assert_eq!(pace.team(4, 8191, now), 1);
        // Before a run alone, only plainly large work gets a team.
        assert_eq!(pace.team(4, 4_194_303, now), 1);
        assert_eq!(pace.team(4, 1 << 40, now), 4);
        // A cold first run alone sets no team; after a second at 0.5 ns a unit, with the
        // 1 us lag guessed, 2 threads from 8,192 units on (two lags per thread: 8,000;
        // two shares of the fewest units a thread joins for: 8,192).
        pace.record(1, 100_000, now, 150_000, 0);
        assert_eq!(pace.team(4, 16_000, now), 1);
        pace.record(1, 100_000, now, 50_000, 0);
        assert_eq!(pace.team(4, 8_191, now), 1);
        assert_eq!(pace.team(4, 8_192, now), 2);
        // Team runs that take 1 us beyond their share: 2 threads from 8,192 units on (two
        // shares of the fewest units a thread joins for), 4 from 16,384.
        for run in 0..20 {
            pace.record(2, 200_000, now + run * MS, 50_000, 1_000);
        }
        let quiet = now + 20 * MS;
        assert_eq!(pace.team(4, 200_000, quiet), 4);
        assert_eq!(pace.team(4, 8_191, quiet), 1);
        assert_eq!(pace.team(4, 8_192, quiet), 2);
        assert_eq!(pace.team(4, 16_384, quiet), 4);
        // A busy machine: every run on a team is 10 ms late. After three such runs, the
        // lag is 10 ms, and a loop of 1 ms stays on one thread.
        let mut busy = quiet;
        for run in 0..3 {
            assert_eq!(pace.team(2, 2_000_000, busy), 2, "run {run}");
            pace.record(2, 2_000_000, busy, 500_000, 10 * MS);
            busy += 11 * MS;
        }
        assert_eq!(pace.team(2, 2_000_000, busy), 1);
        // A lag fades by half every 16 lags' time (160 ms here), and the team comes back;
        // one more late run sends the loop back to one thread at once.
        assert_eq!(pace.team(2, 2_000_000, busy + 500 * MS), 1);
        let later = busy + 2000 * MS;
        assert_eq!(pace.team(2, 2_000_000, later), 2);
        pace.record(2, 2_000_000, later, 500_000, 10 * MS);
        assert_eq!(pace.team(2, 2_000_000, later + 11 * MS), 1);
    }

    #[test]
    fn a_team_loops_pace_starts_afresh_on_other_inputs() {
        let now = 1000 * MS;
        let mut pace = Pace::settled();
        let renew = |pace: &mut Pace, work, all| unsafe { sparsec_pace_renew(pace, work, all) };
        renew(&mut pace, 100_000, 120_000);
        pace.learn(100_000, now, 50_000);
        for run in 0..3 {
            pace.record(2, 100_000, now + run * 20 * MS, 25_000, 10 * MS);
        }
        assert_eq!(pace.team(2, 100_000, now + 60 * MS), 1);
        // The same inputs keep what was learnt.
        renew(&mut pace, 100_000, 120_000);
        assert_eq!(pace.team(2, 100_000, now + 60 * MS), 1);
        // Others learn alone again (two runs), then try a team; the threads stay settled.
        renew(&mut pace, 100_000, 130_000);
        assert_eq!((pace.solo_runs, pace.lag_ns, pace.first_team_ns), (0, 0, 1));
        assert_eq!(pace.team(2, 100_000, now + 60 * MS), 1);
        pace.learn(100_000, now, 50_000);
        assert_eq!(pace.team(2, 100_000, now + 60 * MS), 2);
    }

    #[test]
    fn loops_without_a_pace_take_the_same_team_every_run() {
        let team = |threads, work| unsafe { sparsec_team(std::ptr::null(), threads, work, 0) };
        assert_eq!(team(4, 0), 1);
        assert_eq!(team(4, 524_287), 1);
        assert_eq!(team(4, 524_288), 2);
        assert_eq!(team(4, 1 << 40), 4);
        assert_eq!(team(1, 1 << 40), 1);
    }

    #[test]
    fn a_late_run_raises_the_lag_only_when_the_two_before_were_late_too() {
        // Threads descheduled once in a while, on a machine that is not busy.
        let now = 1000 * MS;
        let mut pace = Pace::settled();
        pace.learn(100_000, now, 50_000);
        for run in 0..2 {
            pace.record(2, 200_000, now + run * 10 * MS, 50_000, 5 * MS);
            assert_eq!(pace.team(2, 200_000, now + 9 * MS), 2);
        }
        // Runs 1 us late in between: the next late run is the first of a row again, and
        // 8,192 units still get two threads.
        for run in 2..5 {
            pace.record(2, 200_000, now + run * 10 * MS, 50_000, 1_000);
        }
        pace.record(2, 200_000, now + 50 * MS, 50_000, 5 * MS);
        assert_eq!(pace.team(2, 8_192, now + 59 * MS), 2);
        // The third late run in a row raises it.
        for run in 6..8 {
            pace.record(2, 200_000, now + run * 10 * MS, 50_000, 5 * MS);
        }
        assert_eq!(pace.team(2, 200_000, now + 89 * MS), 1);
    }

    #[test]
    fn large_loops_that_never_ran_alone_count_only_the_wait_at_the_barrier() {
        // 10M units at 5 ns on two threads that share memory bandwidth: each block takes
        // 25 ms, where the guessed 1 ns a unit would say 5 ms.
        let now = 1000 * MS;
        let mut pace = Pace::default();
        for run in 0..10 {
            assert_eq!(
                pace.team(2, 10_000_000, now + run * 30 * MS),
                2,
                "run {run}"
            );
            pace.record(2, 10_000_000, now + run * 30 * MS, 25 * MS, 2_000);
        }
    }

    #[test]
    fn a_loops_first_teams_raise_no_lag_while_their_threads_settle() {
        // SpMV on bayer10 (108,000 units at 0.45 ns, 48 us alone) in a new process: its
        // first three team runs 8 ms late, as the second thread waits to leave the first
        // one's core. The loop keeps its team; once 50 ms have passed since its first
        // team, three late runs send it to one thread.
        let now = 1000 * MS;
        let mut pace = Pace::default();
        pace.learn(108_000, now, 48_600);
        let mut start = now + MS;
        for run in 0..3 {
            assert_eq!(pace.team(2, 108_000, start), 2, "settling run {run}");
            pace.record(2, 108_000, start, 24_300, 8 * MS);
            start += 9 * MS;
        }
        for run in 0..3 {
            assert_eq!(pace.team(2, 108_000, start), 2, "settled run {run}");
            pace.record(2, 108_000, start, 24_300, 1_000);
            start += 100_000;
        }
        start = now + MS + 50 * MS;
        for run in 0..3 {
            assert_eq!(pace.team(2, 108_000, start), 2, "late run {run}");
            pace.record(2, 108_000, start, 24_300, 8 * MS);
            start += 9 * MS;
        }
        assert_eq!(pace.team(2, 108_000, start), 1);
    }

    #[test]
    fn the_lag_of_three_late_runs_fades_within_milliseconds() {
        // Three team runs 300 us late: a loop of 0.4 ms alone (800,000 units at 0.5 ns)
        // then runs alone, until sixteen lags' time has passed twice (9.6 ms), when the
        // lag is 75 us.
        let now = 1000 * MS;
        let mut pace = Pace::settled();
        pace.learn(800_000, now, 400_000);
        for run in 0..3 {
            pace.record(2, 800_000, now + run * MS, 200_000, 300_000);
        }
        // The last of them ended 2.5 ms after the first began.
        let seen = now + 2 * MS + 500_000;
        assert_eq!(pace.team(2, 800_000, seen + MS), 1);
        assert_eq!(pace.team(2, 800_000, seen + 9 * MS), 1);
        assert_eq!(pace.team(2, 800_000, seen + 10 * MS), 2);
    }

    #[test]
    fn a_run_descheduled_alone_barely_slows_the_pace() {
        // A 0.25 ns pace, then a run alone that took 100 times as long: the pace creeps
        // up by 1/32 (to 0.258 ns), so with the 1 us lag guessed 20,000 units still take
        // two threads and 15,400 one (at 25 ns they would take four and three).
        let now = 1000 * MS;
        let mut pace = Pace::default();
        pace.learn(100_000, now, 25_000);
        pace.record(1, 100_000, now + MS, 2_500_000, 0);
        assert_eq!(pace.team(4, 20_000, now + 2 * MS), 2);
        assert_eq!(pace.team(4, 15_400, now + 2 * MS), 1);
    }

    #[test]
    fn a_cold_first_run_alone_does_not_set_the_pace() {
        // MTTKRP on a small tensor whose first slice holds three quarters of the entries:
        // 596,967 units, 435 us cold, then 130 us alone; on two threads the first thread's
        // block takes 155 us. From the cold run's pace the block looked early (its share
        // at 0.73 ns a unit: 216 us) and the loop kept its team; from the second run's
        // pace (0.22 ns) each team run is 90 us late, and after three the loop runs alone.
        let now = 1000 * MS;
        let mut pace = Pace::settled();
        pace.record(1, 596_967, now, 435_000, 0);
        assert_eq!(
            pace.team(2, 596_967, now + MS),
            1,
            "one cold run is not enough"
        );
        pace.record(1, 596_967, now + MS, 130_000, 0);
        let mut start = now + 2 * MS;
        for run in 0..3 {
            assert_eq!(pace.team(2, 596_967, start), 2, "run {run}");
            pace.record(2, 596_967, start, 155_000, 1_000);
            start += 200_000;
        }
        assert_eq!(pace.team(2, 596_967, start), 1);
    }

    #[test]
    fn kernel_prelude_prints_needed_sections_private() {
        let prelude = kernel_prelude(
            &BTreeSet::from([Section::Base, Section::Min]),
            &[&crate::format::HASH_LOCATE],
        );
        assert!(prelude.starts_with("#include <stdint.h>\n"));
        assert!(prelude.contains("static inline int64_t sparsec_min("));
        assert!(prelude.contains("static inline int64_t sparsec_hash_locate("));
        assert!(!prelude.contains("@helper"));
        assert!(!prelude.contains("sparsec_grow"));
        assert!(!prelude.contains("SPARSEC_RT"));
        assert!(!prelude.contains("@section"));
    }
}
