/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_util.h: what the fuzz targets share: a reader that turns the fuzzer's bytes into
 * values (zeros once they run out), and a host allocator that refuses blocks above a cap, so an
 * input asking for gigabytes gets CT_ERR_OUT_OF_MEMORY from corten instead of tripping
 * libFuzzer's own memory limit. */
#ifndef CORTEN_FUZZ_UTIL_H
#define CORTEN_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

typedef struct fz_bytes {
  const uint8_t *p;
  size_t n;
} fz_bytes;

static inline uint64_t fz_take(fz_bytes *b, size_t k) {
  uint64_t v = 0;
  for (size_t i = 0; i < k; i++) {
    uint64_t byte = 0;
    if (b->n > 0) {
      byte = *b->p++;
      b->n--;
    }
    v |= byte << (8 * i);
  }
  return v;
}

static inline uint8_t fz_u8(fz_bytes *b) { return (uint8_t)fz_take(b, 1); }
static inline int64_t fz_i64(fz_bytes *b) { return (int64_t)fz_take(b, 8); }

/* A small value, mostly in [lo, hi], sometimes (1 in 16) an extreme one. */
static inline int64_t fz_dim(fz_bytes *b, int64_t lo, int64_t hi) {
  uint8_t sel = fz_u8(b);
  if ((sel & 15) == 15) {
    static const int64_t extremes[] = {-1, INT64_MIN, INT64_MAX, (int64_t)1 << 32,
                                       (int64_t)1 << 62, -((int64_t)1 << 40), 0, 1 << 20};
    return extremes[(sel >> 4) % 8];
  }
  return lo + (int64_t)(sel >> 4) % (hi - lo + 1);
}

#define FZ_CHECK(cond)                                                              \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: broken promise: %s (last error: %s)\n", __FILE__,     \
              __LINE__, #cond, ct_last_error());                                    \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* 16 MiB: the largest fill an input can ask for (4M floats) stays well inside the 10 s limit
 * under the sanitizers and libFuzzer's tracing (64 MiB took 3 s alone, over 10 s on a loaded
 * machine: a false timeout). */
#define FZ_CAP ((size_t)16 << 20)

static void *fz_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  if (size > FZ_CAP) return NULL;
  return aligned_alloc(align, (size + align - 1) / align * align);
}

static void fz_free(void *ctx, void *p, size_t size) {
  (void)ctx;
  (void)size;
  free(p);
}

static inline void fz_cap_host_memory(void) {
  static int done;
  if (!done) {
    ct_allocator a = {fz_alloc, fz_free, NULL};
    if (ct_set_allocator(ct_cpu(), &a) != CT_OK) abort();
    done = 1;
  }
}

#endif /* CORTEN_FUZZ_UTIL_H */
