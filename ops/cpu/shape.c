/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/shape.c: the CPU kernels of transpose and concat and of their gradients, for every
 * dtype (reshape's and reshape_grad's kernels, which only share memory, serve every place from
 * ops/defs/).
 *
 * transpose gathers X along the plan of ops/defs/shape.c (ct__tr_make_plan), transpose_grad
 * gathers Out@GRAD along the inverse permutation; concat copies each input's block in turn for
 * each index over the dims before the axis, concat_grad copies the same blocks back out. All
 * move elements by their size in bytes, so one kernel serves every dtype, and all split across
 * threads (ct__parallel_for). */
#include <string.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h" /* CT__VM_CLONES */
#include "ops/defs.h"

/* ---- transpose(axis) ------------------------------------------------------------------------- */

/* The gather's work, split by ct__parallel_for. Out is written in its own order, so it is seen
 * as `rows` of the plan's last dim. When that dim is contiguous in X each item is a row, copied
 * as one run; otherwise the last two dims are copied in TILE x TILE tiles (reads of a tile touch
 * TILE lines of X, each line used TILE times) and each item is a band of TILE rows of the dim
 * before the last, for one index of the dims before it. */
#define TILE 16
typedef struct tr_job {
  void *o;
  const void *x;
  const ct__tr_plan *p;
  int64_t bands; /* tiled: bands per outer index */
} tr_job;

/* X's offset of the start of (outer) row q of the plan's first `rank` dims. */
static int64_t tr_offset(const ct__tr_plan *p, int rank, int64_t q) {
  int64_t off = 0;
  for (int k = rank - 1; k >= 0; k--) {
    off += q % p->d[k] * p->is[k];
    q /= p->d[k];
  }
  return off;
}

/* An odometer over the plan's first `rank` dims: the digits of (outer) row q and X's offset of
 * its start, stepped row by row with carries (tr_offset's division a dim a row was most of a
 * transpose of short rows: the TransformerEncoder's [N, 10, 4, 16] -> [N, 4, 10, 16]). */
typedef struct tr_odo {
  int64_t digit[CT_MAX_RANK], off;
} tr_odo;

static void tr_odo_start(tr_odo *od, const ct__tr_plan *p, int rank, int64_t q) {
  od->off = 0;
  for (int k = rank - 1; k >= 0; k--) {
    od->digit[k] = q % p->d[k];
    od->off += od->digit[k] * p->is[k];
    q /= p->d[k];
  }
}

static inline void tr_odo_next(tr_odo *od, const ct__tr_plan *p, int rank) {
  for (int k = rank - 1; k >= 0; k--) {
    od->off += p->is[k];
    if (++od->digit[k] < p->d[k]) return;
    od->off -= p->is[k] * p->d[k];
    od->digit[k] = 0;
  }
}

/* A full TILE x TILE tile of 4-byte elements whose rows lie along X's rows (X's stride 1 down
 * Out's columns): o[i * oc + j] = x[i + j * xs], as 4 x 4 blocks transposed in registers. */
static void tile4x4(float *o, const float *x, int64_t oc, int64_t xs) {
#if defined(__SSE2__)
  for (int64_t j = 0; j < TILE; j += 4) {
    for (int64_t i = 0; i < TILE; i += 4) {
      __m128 r0 = _mm_loadu_ps(x + i + j * xs), r1 = _mm_loadu_ps(x + i + (j + 1) * xs);
      __m128 r2 = _mm_loadu_ps(x + i + (j + 2) * xs), r3 = _mm_loadu_ps(x + i + (j + 3) * xs);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(o + i * oc + j, r0);
      _mm_storeu_ps(o + (i + 1) * oc + j, r1);
      _mm_storeu_ps(o + (i + 2) * oc + j, r2);
      _mm_storeu_ps(o + (i + 3) * oc + j, r3);
    }
  }
#else
  for (int64_t i = 0; i < TILE; i++) {
    for (int64_t j = 0; j < TILE; j++) o[i * oc + j] = x[i + j * xs];
  }
#endif
}

/* Rows copied in the widest vectors the CPU has (an attention's heads split and merged: rows
 * of 16 floats, one AVX-512 vector, where the baseline's took four). */
#define TR_COPY(NAME, T)                                                                 \
  CT__VM_CLONES static void NAME##_rows(void *arg, int64_t first, int64_t last) {        \
    const tr_job *j = arg;                                                               \
    const ct__tr_plan *p = j->p;                                                         \
    int r = p->rank;                                                                     \
    int64_t inner = p->d[r - 1], st = p->is[r - 1];                                      \
    const T *x = j->x;                                                                   \
    T *o = (T *)j->o + first * inner;                                                    \
    tr_odo od;                                                                           \
    tr_odo_start(&od, p, r - 1, first);                                                  \
    for (int64_t q = first; q < last; q++, o += inner, tr_odo_next(&od, p, r - 1)) {     \
      const T *xr = x + od.off;                                                          \
      if (st == 1) {                                                                     \
        CT__SIMD for (int64_t i = 0; i < inner; i++) o[i] = xr[i];                       \
      } else {                                                                           \
        for (int64_t i = 0; i < inner; i++) o[i] = xr[i * st];                           \
      }                                                                                  \
    }                                                                                    \
  }                                                                                      \
  static void NAME##_tiles(void *arg, int64_t first, int64_t last) {                     \
    const tr_job *j = arg;                                                               \
    const ct__tr_plan *p = j->p;                                                         \
    int r = p->rank;                                                                     \
    int64_t R = p->d[r - 2], C = p->d[r - 1], sa = p->is[r - 2], sb = p->is[r - 1];      \
    for (int64_t q = first; q < last; q++) {                                             \
      int64_t a = q / j->bands, i0 = q % j->bands * TILE;                                \
      int64_t i1 = R - i0 < TILE ? R : i0 + TILE;                                        \
      const T *x = (const T *)j->x + tr_offset(p, r - 2, a);                             \
      T *o = (T *)j->o + a * R * C;                                                      \
      for (int64_t j0 = 0; j0 < C; j0 += TILE) {                                         \
        int64_t j1 = C - j0 < TILE ? C : j0 + TILE;                                      \
        if (sizeof(T) == 4 && sa == 1 && i1 - i0 == TILE && j1 - j0 == TILE) {           \
          tile4x4((float *)o + i0 * C + j0, (const float *)x + i0 + j0 * sb, C, sb);     \
          continue;                                                                      \
        }                                                                                \
        for (int64_t i = i0; i < i1; i++) {                                              \
          CT__SIMD for (int64_t jj = j0; jj < j1; jj++) o[i * C + jj] = x[i * sa + jj * sb]; \
        }                                                                                \
      }                                                                                  \
    }                                                                                    \
  }                                                                                      \
  static void NAME(void *o, const void *x, const ct__tr_plan *p) {                       \
    int r = p->rank;                                                                     \
    tr_job j = {o, x, p, 0};                                                             \
    int64_t rows = 1;                                                                    \
    for (int k = 0; k < r - 1; k++) rows *= p->d[k];                                     \
    if (r == 1 || p->is[r - 1] == 1) {                                                   \
      ct__parallel_for(rows, CT__GRAIN_MEM / p->d[r - 1] + 1, NAME##_rows, &j);          \
      return;                                                                            \
    }                                                                                    \
    j.bands = (p->d[r - 2] + TILE - 1) / TILE;                                           \
    int64_t items = rows / p->d[r - 2] * j.bands;                                        \
    ct__parallel_for(items, CT__GRAIN_MEM / (TILE * p->d[r - 1]) + 1, NAME##_tiles, &j); \
  }

TR_COPY(tr_copy8, uint8_t)
TR_COPY(tr_copy16, uint16_t)
TR_COPY(tr_copy32, uint32_t)
TR_COPY(tr_copy64, uint64_t)

void ct__cpu_gather(void *o, const void *x, size_t es, const ct__tr_plan *p) {
  if (p->rank == 1 && p->is[0] == 1) {
    memmove(o, x, (size_t)p->d[0] * es);
    return;
  }
  switch (es) {
    case 1: tr_copy8(o, x, p); break;
    case 2: tr_copy16(o, x, p); break;
    case 4: tr_copy32(o, x, p); break;
    default: tr_copy64(o, x, p); break;
  }
}

/* Output 0 = `from` with its dims permuted by perm, in from's dtype. */
static ct_status permute(const ct_kernel_ctx *c, const ct_tensor *from, const int *perm) {
  void *o = ct__k_out_data(c, 0, 0, from->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (from->numel == 0) return CT_OK;
  ct__tr_plan p;
  ct__tr_make_plan(from->dims, perm, &p);
  ct__cpu_gather(o, ct__k_in_data(from), ct_dtype_size(from->dtype), &p);
  return CT_OK;
}

static ct_status transpose_any(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status s = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  return permute(c, ct_kernel_in(c, CT__IN_X, 0), perm);
}

/* transpose_grad (X, Out@GRAD -> X@GRAD): Out@GRAD permuted back by the inverse of `axis`. */
static ct_status transpose_grad_any(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK], inv[CT_MAX_RANK];
  ct_status s = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  const ct_tensor *dout = ct_kernel_in(c, CT__G_UNARY_DOUT, 0);
  for (int k = 0; k < dout->dims.rank; k++) inv[perm[k]] = k;
  return permute(c, dout, inv);
}

/* ---- concat(axis) ---------------------------------------------------------------------------- */

/* Copies between concat's whole (Out, or concat_grad's Out@GRAD) and its parts (the inputs X,
 * or concat_grad's X@GRAD, already allocated): part i is, for each index over the dims before
 * the axis, one block of the whole's row. An X@GRAD named CT__GRAD_EMPTY is skipped. The indices
 * before the axis split across threads (ct__parallel_for), each piece copying its rows. */
typedef struct concat_job {
  const ct_kernel_ctx *c;
  char *whole;
  size_t row; /* bytes of one row of the whole */
  int64_t inner;
  int axis;
  bool split;
} concat_job;

static void concat_rows(void *arg, int64_t first, int64_t last) {
  const concat_job *j = arg;
  const ct_kernel_ctx *c = j->c;
  size_t es = ct_dtype_size(c->dtype), off = 0;
  for (size_t i = 0; i < ct_kernel_in_count(c, CT__IN_X); i++) {
    size_t block = (size_t)(ct_kernel_in(c, CT__IN_X, i)->dims.d[j->axis] * j->inner) * es;
    const ct_tensor *pt = j->split ? ct_kernel_out(c, CT__G_DX, i) : ct_kernel_in(c, CT__IN_X, i);
    bool skip = j->split && strcmp(ct_kernel_out_name(c, CT__G_DX, i), CT__GRAD_EMPTY) == 0;
    char *part = skip || block == 0 ? NULL : (char *)ct__k_in_data(pt);
    for (int64_t a = first; part != NULL && a < last; a++) {
      char *w = j->whole + (size_t)a * j->row + off, *q = part + (size_t)a * block;
      if (j->split) memcpy(q, w, block);
      else memcpy(w, q, block);
    }
    off += block;
  }
}

static void concat_walk(const ct_kernel_ctx *c, int axis, char *whole, bool split) {
  const ct_tensor *x0 = ct_kernel_in(c, CT__IN_X, 0);
  concat_job j = {c, whole, 0, 1, axis, split};
  int64_t outer = 1, row = 0;
  for (int k = 0; k < x0->dims.rank; k++) {
    if (k < axis) outer *= x0->dims.d[k];
    if (k > axis) j.inner *= x0->dims.d[k];
  }
  for (size_t i = 0; i < ct_kernel_in_count(c, CT__IN_X); i++) {
    row += ct_kernel_in(c, CT__IN_X, i)->dims.d[axis];
  }
  row *= j.inner;
  j.row = (size_t)row * ct_dtype_size(c->dtype);
  ct__parallel_for(outer, CT__GRAIN_MEM / (row + 1) + 1, concat_rows, &j);
}

static ct_status concat_any(const ct_kernel_ctx *c) {
  const ct_tensor *x0 = ct_kernel_in(c, CT__IN_X, 0);
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CT__CONCAT_AXIS].u.i, x0->dims.rank, &axis);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  char *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (ct_kernel_out(c, CT__OUT, 0)->numel > 0) concat_walk(c, axis, o, false);
  return CT_OK;
}

/* concat_grad (X, Out@GRAD -> X@GRAD): each X@GRAD_i is the slice of Out@GRAD that X_i filled;
 * an entry named CT__GRAD_EMPTY is not wanted and not written, and an unwired X@GRAD (infer-shape
 * allows none or one per X) leaves nothing to do. */
static ct_status concat_grad_any(const ct_kernel_ctx *c) {
  if (ct_kernel_out_count(c, CT__G_DX) == 0) return CT_OK;
  const ct_tensor *x0 = ct_kernel_in(c, CT__IN_X, 0);
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CT__CONCAT_AXIS].u.i, x0->dims.rank, &axis);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  for (size_t i = 0; i < ct_kernel_out_count(c, CT__G_DX); i++) {
    if (strcmp(ct_kernel_out_name(c, CT__G_DX, i), CT__GRAD_EMPTY) == 0) continue;
    if (CT__UNLIKELY(ct__k_out_data(c, CT__G_DX, i, c->dtype) == NULL)) return ct_last_status();
  }
  const ct_tensor *dout = ct_kernel_in(c, CT__G_UNARY_DOUT, 0);
  if (dout->numel > 0) concat_walk(c, axis, (char *)ct__k_in_data(dout), true);
  return CT_OK;
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"transpose", CT__KERNELS([0] = transpose_any)},
    {"concat", CT__KERNELS([0] = concat_any)},
    {"transpose_grad", CT__KERNELS([0] = transpose_grad_any)},
    {"concat_grad", CT__KERNELS([0] = concat_grad_any)},
};

const ct__kernel_table ct__cpu_shape = CT__TABLE(kernels);
