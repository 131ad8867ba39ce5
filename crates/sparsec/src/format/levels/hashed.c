/* The probe of hashed levels (format::levels::Hashed), the one C helper a level format
   supplies. Kernels that locate into a hashed level print this text (with the linkage
   macros spelled `static inline`); build.rs compiles it into the library, where the
   interpreter and in-process backends call it. */
#include <stdint.h>
#ifndef SPARSEC_RT_INLINE
#define SPARSEC_RT_INLINE
#endif
/* The address space of the array (OpenCL's `__global`; nothing in C). */
#ifndef SPARSEC_RT_GLOBAL
#define SPARSEC_RT_GLOBAL
#endif

/* @helper */
/* Linear probing inside the parent's block of `width` buckets (hashed levels). */
SPARSEC_RT_INLINE int64_t sparsec_hash_locate(SPARSEC_RT_GLOBAL const int64_t *idx, int64_t width, int64_t parent, int64_t coord) {
  int64_t base = parent * width;
  /* A start inside the block for any coordinate, so the probe always ends. */
  int64_t start = base + ((coord % width) + width) % width;
  int64_t p = start;
  while (idx[p] != coord && idx[p] != -1) {
    p = base + (p - base + 1) % width;
    if (p == start) break;
  }
  return p;
}
