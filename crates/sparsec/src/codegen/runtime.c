/* The sparsec C runtime: the entry buffer kernels append their output to, and the helpers
   generated kernels call.

   Generated kernels print only the sections they need (codegen::c), in this file's order,
   which is also the order of dependencies (a section only calls sections above it), with
   SPARSEC_RT_API spelled `static` and SPARSEC_RT_INLINE `static inline` so each kernel
   library keeps private copies. Compiled on its own (build.rs builds it into the Rust
   library) every helper is exported under its name, so Rust code (codegen::runtime) calls
   the very same functions. Each section begins with a comment line `@section NAME`. */
#define SPARSEC_RT_API
#define SPARSEC_RT_INLINE

/* @section base */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#else
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
#endif

typedef struct {
  int64_t *coords;
  double *vals;
  int64_t len;
  int64_t cap;
} sparsec_buffer;

/* Zeroed room for `copies` scratch arrays of `len` elements of `size` bytes, and one spare
   element; null when that many cannot be allocated, or when their count is negative or
   overflows (sizes come from the inputs' dimensions). */
SPARSEC_RT_INLINE void *sparsec_scratch(int64_t len, int64_t copies, size_t size) {
  size_t count;
  if (len < 0 || copies < 0 || __builtin_mul_overflow((size_t)len, (size_t)copies, &count) ||
      count == SIZE_MAX)
    return 0;
  return calloc(count + 1, size);
}

/* @section grow */
SPARSEC_RT_API int sparsec_grow(sparsec_buffer *b, int64_t order) {
  int64_t cap = b->cap < 1024 ? 1024 : 2 * b->cap;
  int64_t *coords = (int64_t *)realloc(b->coords, (size_t)(cap * (order > 0 ? order : 1)) * sizeof(int64_t));
  if (!coords) return 0;
  b->coords = coords;
  double *vals = (double *)realloc(b->vals, (size_t)cap * sizeof(double));
  if (!vals) return 0;
  b->vals = vals;
  b->cap = cap;
  return 1;
}

/* @section free */
void sparsec_buffer_free(sparsec_buffer *b) {
  free(b->coords);
  free(b->vals);
  b->coords = 0;
  b->vals = 0;
}

/* @section append */
/* Append one entry, its `order` coordinates read from `coords`, to `b`; 0 when out of
   memory. Kernels print these steps inline with their coordinates in registers; the
   in-process backend (codegen::runtime) calls this. */
SPARSEC_RT_API int sparsec_append(sparsec_buffer *b, int64_t order, const int64_t *coords, double val) {
  if (b->len == b->cap && !sparsec_grow(b, order)) return 0;
  for (int64_t k = 0; k < order; k++) b->coords[b->len * order + k] = coords[k];
  b->vals[b->len++] = val;
  return 1;
}

/* @section order */
SPARSEC_RT_API void sparsec_insertion_sort(int64_t *a, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    int64_t x = a[i], j = i - 1;
    while (j >= 0 && a[j] > x) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = x;
  }
}

SPARSEC_RT_API void sparsec_sift_down(int64_t *a, int64_t root, int64_t n) {
  int64_t x = a[root];
  for (int64_t child = 2 * root + 1; child < n; child = 2 * root + 1) {
    if (child + 1 < n && a[child + 1] > a[child]) child++;
    if (a[child] <= x) break;
    a[root] = a[child];
    root = child;
  }
  a[root] = x;
}

/* Introsort of a workspace row's touched coordinates: quicksort on the median of three,
   insertion sort for short ranges (most rows), heapsort when partitions keep failing, so
   no input is quadratic. Inline comparisons: qsort's callback costs twice as much. */
SPARSEC_RT_API void sparsec_sort_index_bounded(int64_t *a, int64_t n, int depth) {
  while (n > 24) {
    if (depth-- == 0) {
      for (int64_t i = n / 2 - 1; i >= 0; i--) sparsec_sift_down(a, i, n);
      for (int64_t end = n - 1; end > 0; end--) {
        int64_t t = a[0]; a[0] = a[end]; a[end] = t;
        sparsec_sift_down(a, 0, end);
      }
      return;
    }
    int64_t x = a[0], y = a[n / 2], z = a[n - 1];
    int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    int64_t i = 0, j = n - 1;
    for (;;) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i >= j) break;
      int64_t t = a[i]; a[i] = a[j]; a[j] = t;
      i++;
      j--;
    }
    /* [0, j] <= pivot <= [j + 1, n): recurse on the smaller side, loop on the larger. */
    if (j + 1 < n - j - 1) {
      sparsec_sort_index_bounded(a, j + 1, depth);
      a += j + 1;
      n -= j + 1;
    } else {
      sparsec_sort_index_bounded(a + j + 1, n - j - 1, depth);
      n = j + 1;
    }
  }
  sparsec_insertion_sort(a, n);
}

SPARSEC_RT_API void sparsec_sort_index(int64_t *a, int64_t n) {
  int depth = 0;
  for (int64_t m = n; m > 1; m >>= 1) depth += 2;
  sparsec_sort_index_bounded(a, n, depth);
}

/* Least-significant-digit radix sort of `n` values in [lo, hi], a byte per pass through
   `scratch`: no comparisons to mispredict, which on a few hundred random coordinates is
   several times faster than comparison sorts. */
SPARSEC_RT_API void sparsec_radix_sort(int64_t *a, int64_t *scratch, int64_t n, int64_t lo, int64_t hi) {
  int64_t *from = a, *to = scratch;
  for (int shift = 0; shift < 64 && ((hi - lo) >> shift) > 0; shift += 8) {
    int64_t count[257] = {0};
    for (int64_t q = 0; q < n; q++) count[(((from[q] - lo) >> shift) & 0xFF) + 1]++;
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    for (int64_t q = 0; q < n; q++) to[count[((from[q] - lo) >> shift) & 0xFF]++] = from[q];
    int64_t *t = from; from = to; to = t;
  }
  if (from != a) memcpy(a, from, (size_t)n * sizeof(int64_t));
}

/* `list` holds the `n` coordinates flagged in `seen`, in any order, all below `width`:
   put them in increasing order. `marks` is a zeroed two-level bitmap over [0, width) of
   `width / 4096 + width / 64 + 2` words (a summary bit per word of 64 coordinates, then
   a bit per coordinate), zeroed again on return.
   - Dense lists (a flag in every 8 columns or more) scan the flags between the smallest
     and largest coordinate, 32 at a time.
   - Others set their bits and walk the summary words between the extremes: a pass over
     the list and one word per 4096 columns, with no comparison to mispredict, several
     times faster than sorting a row of SpGEMM's output.
   - Lists spread so thin that even the summary words outnumber them fall back to a radix
     sort (33 to 4096 coordinates: a pass and 256 counters per byte of their range) or a
     comparison sort (n log n compares). */
SPARSEC_RT_API void sparsec_order_touched(int64_t *list, int64_t n, const char *seen, int64_t *marks, int64_t width) {
  if (n < 2) return;
  int64_t lo = list[0], hi = list[0];
  for (int64_t q = 1; q < n; q++) {
    lo = list[q] < lo ? list[q] : lo;
    hi = list[q] > hi ? list[q] : hi;
  }
  if ((hi - lo) / 8 <= n) {
    int64_t k = 0, w = lo;
    for (; w + 32 <= hi + 1; w += 32) {
      uint64_t a, b, c, d;
      memcpy(&a, seen + w, 8);
      memcpy(&b, seen + w + 8, 8);
      memcpy(&c, seen + w + 16, 8);
      memcpy(&d, seen + w + 24, 8);
      if (!(a | b | c | d)) continue;
      uint64_t words[4] = {a, b, c, d};
      for (int q = 0; q < 4; q++) {
        for (uint64_t bytes = words[q]; bytes; bytes &= bytes - 1) {
          /* Flags are 0 or 1: each set bit is one flagged column. */
          list[k++] = w + 8 * q + (__builtin_ctzll(bytes) >> 3);
        }
      }
    }
    for (; w <= hi; w++) {
      if (seen[w]) list[k++] = w;
    }
    return;
  }
  if ((hi >> 12) - (lo >> 12) > 2 * n + 8) {
    if (n > 32 && n <= 4096) {
      int64_t scratch[n];
      sparsec_radix_sort(list, scratch, n, lo, hi);
    } else {
      sparsec_sort_index(list, n);
    }
    return;
  }
  uint64_t *summary = (uint64_t *)marks, *bits = summary + (width >> 12) + 1;
  for (int64_t q = 0; q < n; q++) {
    const int64_t j = list[q];
    bits[j >> 6] |= 1ull << (j & 63);
    summary[j >> 12] |= 1ull << ((j >> 6) & 63);
  }
  int64_t k = 0;
  for (int64_t s = lo >> 12; s <= hi >> 12; s++) {
    for (uint64_t words = summary[s]; words; words &= words - 1) {
      const int64_t w = (s << 6) + __builtin_ctzll(words);
      for (uint64_t b = bits[w]; b; b &= b - 1) list[k++] = (w << 6) + __builtin_ctzll(b);
      bits[w] = 0;
    }
    summary[s] = 0;
  }
}

/* @section min */
SPARSEC_RT_INLINE int64_t sparsec_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* @section max */
SPARSEC_RT_INLINE int64_t sparsec_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* @section team */
#include <time.h>

/* How a balanced parallel loop ran lately, from which its next run takes its team
   (sparsec_team): the picoseconds a thread takes per unit of work (entries and rows), and
   the team's lag, the time a run on a team took beyond its first thread's share of work
   at that pace, with the clock when that lag was seen. A team costs its lag: a few
   microseconds while the threads still spin, tens to wake sleeping ones on an idle
   machine, and several scheduler time slices (milliseconds) when other processes hold
   the cores, where waking a thread hands the core away and the first thread itself comes
   back late. All zero (a fresh static) means nothing seen yet. Each kernel keeps one per
   loop; calls may overlap, so the fields are read and written by relaxed atomics. */
typedef struct {
  int64_t ps_per_unit;
  int64_t lag_ns;
  int64_t lag_seen_ns;
  /* The lags of the two runs on a team before the last one (0: none). */
  int64_t earlier_lags_ns[2];
  /* Runs alone recorded, up to SPARSEC_SOLO_RUNS. */
  int64_t solo_runs;
  /* The clock when the loop's first run on a team began (0: none yet). */
  int64_t first_team_ns;
  /* The shared and the whole work of the inputs the pace was learnt on, for loops that
     renew it (sparsec_pace_renew); zero elsewhere. */
  int64_t learnt_on[2];
} sparsec_pace;

/* Before a loop has run on a team: a lag of 1 us, about what a team of threads that still
   spin costs (SpMV on cryg2500, 7.6 us alone, took 5.0 us on two). The lag is learnt only
   from runs on a team, so the guess must let loops of a few microseconds try one: with
   10 us, loops under 40 us never did, and kept one thread where two would halve their
   time; with 2 us, loops under 8 us never did (SpMV at 2 threads, 1001 runs in a new
   process, ms: cryg2500 0.0076 against 0.0053 with 1 us, dwt_992 0.0065 against 0.0047,
   jagmesh7 0.0044 against 0.0037; inputs with less work than two shares of
   SPARSEC_MIN_SHARE, such as 494_bus and west0479, still run alone).
   Where the threads sleep, or other processes hold the cores, three late runs send the
   loop back to one thread. Until a loop has run alone (SPARSEC_SOLO_RUNS times), its pace
   is unsure (a guess, a nanosecond a unit, or a cold run's), and only work that would
   earn a team even at an eighth of that pace (4M units) gets one: other loops run alone
   first, to learn their pace. */
#define SPARSEC_GUESS_LAG_NS 1000
/* A loop's first run alone is cold (its data not yet in cache, its pages not yet mapped)
   and can take three times as long as the next: MTTKRP on a small tensor took 0.44 ms
   then 0.13. A pace learnt from it alone makes every team look early, and teams record no
   pace, so the loop kept a team that was slower than one thread (0.16 ms). The pace is
   taken from the second run alone, outright, and a loop below SPARSEC_SURE_WORK gets a
   team only after it. */
#define SPARSEC_SOLO_RUNS 2
#define SPARSEC_GUESS_PS_PER_UNIT 1000
#define SPARSEC_SURE_WORK 4194304
/* No team starts and joins in less than a microsecond: a run faster than its pace says
   (its data in two threads' caches) does not lower the lag below that. */
#define SPARSEC_LEAST_LAG_NS 1000
/* Loops without a pace: one thread per this many units, about a quarter of a
   millisecond of work, which covers waking a thread on an idle machine. */
#define SPARSEC_STEADY_GRAIN 262144
/* No thread joins for fewer units than this. */
#define SPARSEC_MIN_SHARE 4096
/* A balanced loop of at least SPARSEC_CLAIMED_WORK units (milliseconds of work) is cut
   into SPARSEC_CLAIMS blocks of equal work a thread, which the threads claim as they
   finish, rather than one block a thread: where another process takes part of one
   thread's core, the others take over its blocks. (SpMV on a banded 1M x 1M matrix with
   10M entries, two threads: the first thread's half took 5.7 ms and the second's 8, in
   runs where both had taken 6.) Each block costs a claim and two binary searches, a few
   microseconds, which smaller loops would feel. Tests compile with
   -DSPARSEC_CLAIMED_WORK=1 to have small inputs claim blocks. */
#ifndef SPARSEC_CLAIMED_WORK
#define SPARSEC_CLAIMED_WORK 4194304
#endif
#define SPARSEC_CLAIMS 8
/* A loop's runs on a team in the first SPARSEC_SETTLE_NS after its first one raise no
   lag. A process's threads settle on their cores in that time: the scheduler starts a new
   thread on its parent's core, and moves it only at a later tick, so the first teams take
   milliseconds even on an idle machine. A C harness of a 100 us parallel loop, 60 runs in
   each of 8 fresh processes on 2 cores: in 5 of them the first one to three runs took 4
   to 10 ms (none with the threads bound to cores). Three late runs were enough to raise
   the lag to milliseconds, which then took about half a second to fade: SpMV on bayer10
   at 2 threads, 1001 runs in a new process, ran alone in about one process of four
   (0.0485 ms a run against 0.0250). */
#define SPARSEC_SETTLE_NS 50000000
/* A loop that runs on one thread sees no lag, so a lag from a busy spell fades, and
   teams are tried again: it halves each time this many lags' time passes since it was
   seen. A try on a machine still busy costs about one lag, so tries cost a few percent
   of the time in between, whatever the lag; and the lag of a process's first teams (a
   few hundred microseconds while their threads start) fades within milliseconds,
   where a fixed quarter of a second kept a loop of 0.4 ms on one thread for the rest
   of a short run. */
#define SPARSEC_LAG_PATIENCE 16

SPARSEC_RT_INLINE int64_t sparsec_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The clock as a loop of `work` units on at most `threads` threads starts, or 0 when no
   team could form: such a loop is not timed. */
SPARSEC_RT_INLINE int64_t sparsec_pace_start(int64_t threads, int64_t work) {
  return threads > 1 && work >= 2 * SPARSEC_MIN_SHARE ? sparsec_now_ns() : 0;
}

/* The clock when the loop is timed (`start` is not 0), else 0. */
SPARSEC_RT_INLINE int64_t sparsec_pace_clock(int64_t start) {
  return start ? sparsec_now_ns() : 0;
}

/* The lag of `pace` at `now_ns`, faded by its age; the guess when none was seen. */
SPARSEC_RT_INLINE int64_t sparsec_lag(const sparsec_pace *pace, int64_t now_ns) {
  int64_t lag = __atomic_load_n(&pace->lag_ns, __ATOMIC_RELAXED);
  if (lag == 0) return SPARSEC_GUESS_LAG_NS;
  int64_t halvings = (now_ns - __atomic_load_n(&pace->lag_seen_ns, __ATOMIC_RELAXED)) / (SPARSEC_LAG_PATIENCE * lag);
  if (halvings > 0) lag >>= halvings < 62 ? halvings : 62;
  return lag > 0 ? lag : 1;
}

/* The threads a balanced loop of `work` units runs on, from 1 to `threads`, `start`
   being its sparsec_pace_start: each thread joins for at least twice the lag's time of
   work, and never for fewer than SPARSEC_MIN_SHARE units. (Two threads halve the time
   and cost a lag, so they pay from four lags of work on; near that line either choice
   costs about one lag.) A loop that combines its threads' partial sums passes no pace
   and gets one thread per SPARSEC_STEADY_GRAIN units: the same team, so the same
   rounding, on every run. Tests compile with -DSPARSEC_GRAIN=G to get one thread per G
   units instead, however the loop ran before. */
SPARSEC_RT_INLINE int64_t sparsec_team(const sparsec_pace *pace, int64_t threads, int64_t work, int64_t start) {
#ifdef SPARSEC_GRAIN
  (void)pace;
  (void)start;
  int64_t team = work / SPARSEC_GRAIN;
#else
  const int64_t ps = pace ? __atomic_load_n(&pace->ps_per_unit, __ATOMIC_RELAXED) : 0;
  int64_t team;
  if (!pace) {
    team = work / SPARSEC_STEADY_GRAIN;
  } else if (!start || (__atomic_load_n(&pace->solo_runs, __ATOMIC_RELAXED) < SPARSEC_SOLO_RUNS && work < SPARSEC_SURE_WORK)) {
    team = 1;
  } else {
    const double ns = (double)work * (double)(ps ? ps : SPARSEC_GUESS_PS_PER_UNIT) / 1000.0;
    const double by_time = ns / (2.0 * (double)sparsec_lag(pace, start));
    team = work / SPARSEC_MIN_SHARE;
    if (by_time < (double)team) team = (int64_t)by_time;
  }
#endif
  return team < 1 ? 1 : team < threads ? team : threads;
}

/* A team loop's pace (LoopKind::Team: a level-set sweep) holds for the inputs it was
   learnt on: another structure's sweep, whose shared `work` or whole work `all` differ,
   does the same time a row only by chance (5 ns on one matrix, 20 on the next), and a pace
   carried over kept a sweep that two threads run in 0.6 ms on one thread (1.37 ms) for
   dozens of calls. Such a pace starts afresh, but for when its threads settled. */
SPARSEC_RT_INLINE void sparsec_pace_renew(sparsec_pace *pace, int64_t work, int64_t all) {
  if (__atomic_load_n(&pace->learnt_on[0], __ATOMIC_RELAXED) == work && __atomic_load_n(&pace->learnt_on[1], __ATOMIC_RELAXED) == all) return;
  __atomic_store_n(&pace->ps_per_unit, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->lag_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->lag_seen_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->earlier_lags_ns[0], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->earlier_lags_ns[1], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->solo_runs, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->learnt_on[0], work, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->learnt_on[1], all, __ATOMIC_RELAXED);
}

/* Record a run of a loop of `work` units on `team` threads, timed from `start` (not
   timed when 0): the first thread finished its block at `done_ns`, the closing barrier
   at `end_ns`. The pace is learnt from runs on one thread only: in a team, the first
   thread's block also takes the time its wake-up cost it. It follows a faster run at
   once but creeps up by 1/32 a run, as a run descheduled midway measures the machine, not
   the loop. The lag falls by at most half a run, and rises only to the least of the last
   three runs' lags, and not at all while the threads settle (SPARSEC_SETTLE_NS): a single
   late run is a thread descheduled once, while a busy machine makes every run late, and
   after three of them sends the loop to one thread. */
SPARSEC_RT_INLINE void sparsec_pace_record(sparsec_pace *pace, int64_t team, int64_t work, int64_t start, int64_t done_ns, int64_t end_ns) {
  if (!start || team < 1 || work / team < 1 || done_ns <= start) return;
  const int64_t old_ps = __atomic_load_n(&pace->ps_per_unit, __ATOMIC_RELAXED);
  if (team == 1) {
    const int64_t solo = __atomic_load_n(&pace->solo_runs, __ATOMIC_RELAXED);
    const int64_t seen_ps = (done_ns - start) * 1000 / work;
    const int64_t creep = old_ps + old_ps / 32 + 1;
    const int64_t ps = solo < SPARSEC_SOLO_RUNS || seen_ps < old_ps ? seen_ps : seen_ps < creep ? seen_ps : creep;
    __atomic_store_n(&pace->ps_per_unit, ps > 0 ? ps : 1, __ATOMIC_RELAXED);
    if (solo < SPARSEC_SOLO_RUNS) __atomic_store_n(&pace->solo_runs, solo + 1, __ATOMIC_RELAXED);
    return;
  }
  int64_t first_team = __atomic_load_n(&pace->first_team_ns, __ATOMIC_RELAXED);
  if (!first_team) {
    first_team = start;
    __atomic_store_n(&pace->first_team_ns, first_team, __ATOMIC_RELAXED);
  }
  const int settling = end_ns - first_team < SPARSEC_SETTLE_NS;
  const int64_t lag = sparsec_lag(pace, end_ns);
  /* Beyond the first thread's share at the pace of a run alone (which includes what
     threads slow each other down by sharing memory bandwidth); while there has been none,
     the first thread's own block stands for its share, and only the wait at the barrier
     counts. */
  const int64_t share_ns = old_ps ? (int64_t)((double)(work / team) * (double)old_ps / 1000.0) : done_ns - start;
  int64_t seen = end_ns - start - share_ns;
  if (seen < SPARSEC_LEAST_LAG_NS) seen = SPARSEC_LEAST_LAG_NS;
  if (settling && seen >= lag) return;
  const int64_t before = __atomic_load_n(&pace->earlier_lags_ns[0], __ATOMIC_RELAXED);
  const int64_t before_that = __atomic_load_n(&pace->earlier_lags_ns[1], __ATOMIC_RELAXED);
  __atomic_store_n(&pace->earlier_lags_ns[1], before, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->earlier_lags_ns[0], seen, __ATOMIC_RELAXED);
  int64_t next;
  if (seen < lag) {
    next = seen > lag / 2 ? seen : lag / 2;
  } else {
    int64_t steady = seen < before ? seen : before;
    steady = steady < before_that ? steady : before_that;
    next = steady > lag ? steady : lag;
  }
  __atomic_store_n(&pace->lag_ns, next > SPARSEC_LEAST_LAG_NS ? next : SPARSEC_LEAST_LAG_NS, __ATOMIC_RELAXED);
  __atomic_store_n(&pace->lag_seen_ns, end_ns, __ATOMIC_RELAXED);
}

/* @section gather */
/* Sums over segments in SIMD lanes (ir::gather): masked gathers with AVX-512, lanes
   filled from scalar loads with AVX2 and FMA; kernels compiled for a processor with
   neither run the loop as a plain `omp simd` loop instead. */
#if (defined(__AVX512F__) && defined(__AVX512VL__)) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

/* @section vectors */
/* Vectors as wide as the widest registers the kernel is compiled for, in GCC's vector
   extensions: rows of a dense output summed in registers (codegen::c::row_sums). A wider
   type than the registers compiles to slow code (64-byte vectors under AVX2 ran SpMM 10
   to 20 times slower than 32-byte ones). aligned(element) and may_alias let them load and
   store at any element of an array. */
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__)
#define SPARSEC_VECTOR_BYTES 64
#elif defined(__AVX__)
#define SPARSEC_VECTOR_BYTES 32
#else
#define SPARSEC_VECTOR_BYTES 16
#endif
typedef double sparsec_vector_double __attribute__((vector_size(SPARSEC_VECTOR_BYTES), aligned(8), may_alias));
typedef float sparsec_vector_float __attribute__((vector_size(SPARSEC_VECTOR_BYTES), aligned(4), may_alias));
#define SPARSEC_LANES_double (SPARSEC_VECTOR_BYTES / 8)
#define SPARSEC_LANES_float (SPARSEC_VECTOR_BYTES / 4)
/* A vector of base[at[0]], base[at[1]], ... (sliced ELL's x read by a slot's columns):
   one gather instruction under AVX-512 and AVX2, one load a lane otherwise. */
#define SPARSEC_GATHER_BY_LANE(ty, index)                                                 \
  static inline sparsec_vector_##ty sparsec_gather_lanes_##ty##_##index(const ty *base,   \
                                                                        const index *at) { \
    sparsec_vector_##ty v;                                                                \
    for (int lane = 0; lane < SPARSEC_LANES_##ty; lane++) v[lane] = base[at[lane]];       \
    return v;                                                                             \
  }
SPARSEC_GATHER_BY_LANE(double, int32_t)
SPARSEC_GATHER_BY_LANE(double, int64_t)
SPARSEC_GATHER_BY_LANE(float, int32_t)
SPARSEC_GATHER_BY_LANE(float, int64_t)
static inline sparsec_vector_double sparsec_gather_double_i32(const double *base, const int32_t *at) {
#if SPARSEC_VECTOR_BYTES == 64
  return (sparsec_vector_double)_mm512_i32gather_pd(_mm256_loadu_si256((const __m256i *)at), base, 8);
#elif SPARSEC_VECTOR_BYTES == 32 && defined(__AVX2__)
  return (sparsec_vector_double)_mm256_i32gather_pd(base, _mm_loadu_si128((const __m128i *)at), 8);
#else
  return sparsec_gather_lanes_double_int32_t(base, at);
#endif
}
static inline sparsec_vector_double sparsec_gather_double_i64(const double *base, const int64_t *at) {
#if SPARSEC_VECTOR_BYTES == 64
  return (sparsec_vector_double)_mm512_i64gather_pd(_mm512_loadu_si512((const void *)at), base, 8);
#elif SPARSEC_VECTOR_BYTES == 32 && defined(__AVX2__)
  return (sparsec_vector_double)_mm256_i64gather_pd(base, _mm256_loadu_si256((const __m256i *)at), 8);
#else
  return sparsec_gather_lanes_double_int64_t(base, at);
#endif
}
static inline sparsec_vector_float sparsec_gather_float_i32(const float *base, const int32_t *at) {
#if SPARSEC_VECTOR_BYTES == 64
  return (sparsec_vector_float)_mm512_i32gather_ps(_mm512_loadu_si512((const void *)at), base, 4);
#elif SPARSEC_VECTOR_BYTES == 32 && defined(__AVX2__)
  return (sparsec_vector_float)_mm256_i32gather_ps(base, _mm256_loadu_si256((const __m256i *)at), 4);
#else
  return sparsec_gather_lanes_float_int32_t(base, at);
#endif
}
static inline sparsec_vector_float sparsec_gather_float_i64(const float *base, const int64_t *at) {
  return sparsec_gather_lanes_float_int64_t(base, at);
}
