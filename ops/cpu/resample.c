/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/resample.c: the CPU kernels of resize and resize_grad (ops/defs/resample.h), float32
 * and float64, and the table of the family (grid_sample and roi_align are in resample_grid.c).
 *
 * The plan's taps are tabulated once per run for every output index of every dim (at most 4
 * each); an output element is then the nested weighted sum over the dims, the first dim
 * outermost, as ONNX's reference nests its one-dim interpolations, summed in double and rounded
 * once (the tables live in the thread's scratch buffer, so a steady run allocates nothing).
 * resize_grad walks the same taps and adds each Out@GRAD element, times the product of
 * its weights, to the X elements it was made of. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/cpu/resample.h"

/* Per dim of Out: the tap count, element offsets into X and weights of each output index. */
typedef struct rsz_tabs {
  int rank;
  uint8_t *nt[CT_MAX_RANK];
  int64_t *ix[CT_MAX_RANK];
  double *w[CT_MAX_RANK];
  void *mem;
} rsz_tabs;

static ct_status rsz_tabs_make(const ct_kernel_ctx *c, const ct__rsz_plan *p, rsz_tabs *t) {
  int r = p->in.rank;
  int64_t total = 0, st[CT_MAX_RANK], s = 1;
  for (int k = r - 1; k >= 0; k--) {
    st[k] = s;
    s *= p->in.d[k];
    total += p->out.d[k];
  }
  size_t per = 4 * sizeof(int64_t) + 4 * sizeof(double) + 1;
  t->rank = r;
  bool fits = (uint64_t)total < SIZE_MAX / per;
  size_t bytes = fits ? (size_t)(total > 0 ? total : 1) * per : 0;
  t->mem = fits ? ct__work_take(bytes) : NULL;
  if (t->mem == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "out of host memory for the interpolation taps of %lld output "
                          "indices",
                          (long long)total);
  }
  int64_t *ix = t->mem;
  double *w = (double *)(ix + 4 * total);
  uint8_t *nt = (uint8_t *)(w + 4 * total);
  for (int k = 0; k < r; k++) {
    t->ix[k] = ix;
    t->w[k] = w;
    t->nt[k] = nt;
    for (int64_t o = 0; o < p->out.d[k]; o++) {
      int n = ct__rsz_taps(p, k, o, ix + 4 * o, w + 4 * o);
      for (int j = 0; j < n; j++) ix[4 * o + j] *= st[k];
      nt[o] = (uint8_t)n;
    }
    ix += 4 * p->out.d[k];
    w += 4 * p->out.d[k];
    nt += p->out.d[k];
  }
  return CT_OK;
}

/* Whether output index oi falls outside the roi along some dim. */
static void rsz_tabs_free(rsz_tabs *t) {
  ct__work_free(t->mem);
}

static bool rsz_outside(const rsz_tabs *t, const int64_t *oi) {
  for (int k = 0; k < t->rank; k++) {
    if (t->nt[k][oi[k]] == 0) return true;
  }
  return false;
}

static void rsz_next(const ct__rsz_plan *p, int64_t *oi) {
  for (int k = p->out.rank - 1; k >= 0; k--) {
    if (++oi[k] < p->out.d[k]) return;
    oi[k] = 0;
  }
}

#define RSZ_KERNELS(SUF, T)                                                                   \
  static double acc_##SUF(const rsz_tabs *t, const T *x, int k, int64_t off,                 \
                          const int64_t *oi) {                                               \
    if (k == t->rank) return (double)x[off];                                                  \
    int64_t o = oi[k];                                                                        \
    const int64_t *ix = t->ix[k] + 4 * o;                                                     \
    const double *w = t->w[k] + 4 * o;                                                        \
    double s = 0;                                                                             \
    for (int j = 0; j < t->nt[k][o]; j++) s += w[j] * acc_##SUF(t, x, k + 1, off + ix[j], oi); \
    return s;                                                                                 \
  }                                                                                           \
  static void scatter_##SUF(const rsz_tabs *t, T *dx, int k, int64_t off, double g,           \
                            const int64_t *oi) {                                              \
    if (k == t->rank) {                                                                       \
      dx[off] += (T)g;                                                                        \
      return;                                                                                 \
    }                                                                                         \
    int64_t o = oi[k];                                                                        \
    const int64_t *ix = t->ix[k] + 4 * o;                                                     \
    const double *w = t->w[k] + 4 * o;                                                        \
    for (int j = 0; j < t->nt[k][o]; j++) scatter_##SUF(t, dx, k + 1, off + ix[j], g * w[j], oi); \
  }                                                                                           \
  static ct_status resize_##SUF(const ct_kernel_ctx *c) {                                     \
    ct__rsz_plan p;                                                                           \
    rsz_tabs t;                                                                               \
    ct_status s = ct__rsz_plan_make(c, &p);                                                   \
    if (s != CT_OK) return s;                                                                 \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                           \
    if (o == NULL) return ct_last_status();                                                   \
    if (ct_ddim_numel(p.out) == 0) return CT_OK; /* no taps to tabulate */                    \
    s = rsz_tabs_make(c, &p, &t);                                                             \
    if (s != CT_OK) return s;                                                                 \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__RSZ_X, 0));                                \
    int64_t n = ct_ddim_numel(p.out), oi[CT_MAX_RANK] = {0};                                  \
    for (int64_t e = 0; e < n; e++, rsz_next(&p, oi)) {                                       \
      o[e] = rsz_outside(&t, oi) ? (T)p.extrap : (T)acc_##SUF(&t, x, 0, 0, oi);               \
    }                                                                                         \
    rsz_tabs_free(&t);                                                                        \
    return CT_OK;                                                                             \
  }                                                                                           \
  static ct_status resize_grad_##SUF(const ct_kernel_ctx *c) {                                \
    ct__rsz_plan p;                                                                           \
    rsz_tabs t;                                                                               \
    ct_status s = ct__rsz_plan_make(c, &p);                                                   \
    if (s != CT_OK) return s;                                                                 \
    T *dx = ct__k_out_data(c, 0, 0, c->dtype);                                                \
    if (dx == NULL) return ct_last_status();                                                  \
    if (ct_ddim_numel(p.out) == 0) {                                                          \
      memset(dx, 0, sizeof(T) * (size_t)ct_ddim_numel(p.in));                                 \
      return CT_OK;                                                                           \
    }                                                                                         \
    s = rsz_tabs_make(c, &p, &t);                                                             \
    if (s != CT_OK) return s;                                                                 \
    memset(dx, 0, sizeof(T) * (size_t)ct_ddim_numel(p.in));                                   \
    const T *dout = ct__k_in_data(ct_kernel_in(c, CT__RSZ_DOUT, 0));                          \
    int64_t n = ct_ddim_numel(p.out), oi[CT_MAX_RANK] = {0};                                  \
    for (int64_t e = 0; e < n; e++, rsz_next(&p, oi)) {                                       \
      if (!rsz_outside(&t, oi)) scatter_##SUF(&t, dx, 0, 0, (double)dout[e], oi);             \
    }                                                                                         \
    rsz_tabs_free(&t);                                                                        \
    return CT_OK;                                                                             \
  }

RSZ_KERNELS(f32, float)
RSZ_KERNELS(f64, double)

static const ct__kernel_set kernels[] = {
    {"resize", CT__KERNELS_F32_F64(resize)},
    {"resize_grad", CT__KERNELS_F32_F64(resize_grad)},
    {"grid_sample", CT__KERNELS([CT_FLOAT32] = ct__gs_k_f32, [CT_FLOAT64] = ct__gs_k_f64)},
    {"grid_sample_grad",
     CT__KERNELS([CT_FLOAT32] = ct__gs_grad_k_f32, [CT_FLOAT64] = ct__gs_grad_k_f64)},
    {"roi_align", CT__KERNELS([CT_FLOAT32] = ct__ra_k_f32, [CT_FLOAT64] = ct__ra_k_f64)},
};

const ct__kernel_table ct__cpu_resample = CT__TABLE(kernels);
