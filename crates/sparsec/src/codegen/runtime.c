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
/* The threads a parallel loop of `work` units (entries and rows) runs on: one per
   SPARSEC_GRAIN units, at least 1 and at most `threads`. Waking a team and its closing
   barrier cost tens of microseconds on an idle machine, and up to a scheduler time slice
   (milliseconds) when other processes hold the cores, so a thread only joins for about
   a quarter of a millisecond of work. Tests compile with -DSPARSEC_GRAIN=1 to split small
   inputs too. */
#ifndef SPARSEC_GRAIN
#define SPARSEC_GRAIN 262144
#endif
SPARSEC_RT_INLINE int64_t sparsec_team(int64_t threads, int64_t work) {
  int64_t team = work / SPARSEC_GRAIN;
  return team < 1 ? 1 : team < threads ? team : threads;
}
