/* ops/cpu/shape.c: the CPU kernels of transpose and concat, for every dtype (reshape's kernel,
 * which only shares memory, serves every place from ops/defs/shape.c).
 *
 * transpose gathers X along the plan of ops/defs/shape.c (ct__tr_make_plan); concat copies each
 * input's block in turn for each index over the dims before the axis. Both move elements by
 * their size in bytes, so one kernel serves every dtype. */
#include <string.h>

#include "ops/defs.h"

/* ---- transpose(axis) ------------------------------------------------------------------------- */

/* Gathers X into Out (both n elements of type T) along the plan. */
#define TR_COPY(NAME, T)                                                    \
  static void NAME(T *o, const T *x, const ct__tr_plan *p) {                \
    int r = p->rank;                                                        \
    int64_t inner = p->d[r - 1], st = p->is[r - 1], idx[CT_MAX_RANK] = {0}; \
    int64_t off = 0;                                                        \
    for (;;) {                                                              \
      for (int64_t i = 0; i < inner; i++) o[i] = x[off + i * st];           \
      o += inner;                                                           \
      int k = r - 2;                                                        \
      for (; k >= 0; k--) {                                                 \
        off += p->is[k];                                                    \
        if (++idx[k] < p->d[k]) break;                                      \
        off -= p->is[k] * p->d[k];                                          \
        idx[k] = 0;                                                         \
      }                                                                     \
      if (k < 0) break;                                                     \
    }                                                                       \
  }

TR_COPY(tr_copy8, uint8_t)
TR_COPY(tr_copy16, uint16_t)
TR_COPY(tr_copy32, uint32_t)
TR_COPY(tr_copy64, uint64_t)

static ct_status transpose_any(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status s = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  const void *x = ct__k_in_data(xt);
  ct__tr_plan p;
  ct__tr_make_plan(xt->dims, perm, &p);
  size_t es = ct_dtype_size(xt->dtype);
  if (p.rank == 1 && p.is[0] == 1) {
    memmove(o, x, (size_t)xt->numel * es);
    return CT_OK;
  }
  switch (es) {
    case 1: tr_copy8(o, x, &p); break;
    case 2: tr_copy16(o, x, &p); break;
    case 4: tr_copy32(o, x, &p); break;
    default: tr_copy64(o, x, &p); break;
  }
  return CT_OK;
}

/* ---- concat(axis) ---------------------------------------------------------------------------- */

/* For each index over the dims before the axis, the block of each input in turn. */
static ct_status concat_any(const ct_kernel_ctx *c) {
  const ct_tensor *x0 = ct_kernel_in(c, CT__IN_X, 0);
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CT__CONCAT_AXIS].u.i, x0->dims.rank, &axis);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  char *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  size_t es = ct_dtype_size(c->dtype), n = ct_kernel_in_count(c, CT__IN_X);
  if (ct_kernel_out(c, CT__OUT, 0)->numel == 0) return CT_OK;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < x0->dims.rank; k++) {
    if (k < axis) outer *= x0->dims.d[k];
    if (k > axis) inner *= x0->dims.d[k];
  }
  for (int64_t a = 0; a < outer; a++) {
    for (size_t i = 0; i < n; i++) {
      const ct_tensor *xi = ct_kernel_in(c, CT__IN_X, i);
      size_t block = (size_t)(xi->dims.d[axis] * inner) * es;
      memcpy(o, (const char *)ct__k_in_data(xi) + (size_t)a * block, block);
      o += block;
    }
  }
  return CT_OK;
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"transpose", CT__KERNELS([0] = transpose_any)},
    {"concat", CT__KERNELS([0] = concat_any)},
};

const ct__kernel_table ct__cpu_shape = CT__TABLE(kernels);
