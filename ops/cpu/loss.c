/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/loss.c: the CPU kernels of softmax_with_cross_entropy and its gradient (ops/defs/
 * loss.c), float32 and float64.
 *
 * Each row's Softmax is the softmax kernel's (ops/cpu/softmax_row.h: the same bits), and its
 * loss is log-sum-exp minus the label's logit, with the sum and the log (ops/cpu/vmath.h) in
 * double for both dtypes: large logits neither overflow nor round the loss to 0. Hard labels
 * are checked before any output is written, so a bad label leaves the outputs as they were.
 * Both kernels split their rows across threads (ct__parallel_for); a row's results do not
 * depend on the split. */
#include "ops/cpu/parallel.h"
#include "ops/cpu/softmax_row.h"
#include "ops/defs.h"

/* The work of both kernels, split by ct__parallel_for over rows (each row's outputs come from
 * that row alone, the same whatever the split). a: Logits or Softmax; out: Softmax or
 * Logits@GRAD; loss: Loss. */
typedef struct sce_job {
  const void *a, *y, *dl; /* dl: Loss@GRAD */
  const int64_t *hard;
  void *out, *loss;
  int64_t k, ignore;
  bool soft;
} sce_job;

/* Fills the inputs of either kernel's job (a: the input that has Logits' dims) and checks hard
 * labels (none is written before they are checked). */
static ct_status sce_prepare(const ct_kernel_ctx *c, const ct_tensor *at, size_t label_slot,
                             sce_job *jb) {
  bool soft = c->attr[CT__SCE_SOFT_LABEL].u.b;
  const void *label = ct__k_in_data(ct_kernel_in(c, label_slot, 0));
  *jb = (sce_job){.a = ct__k_in_data(at), .y = soft ? label : NULL, .hard = soft ? NULL : label,
                  .k = at->dims.d[1], .ignore = c->attr[CT__SCE_IGNORE_INDEX].u.i, .soft = soft};
  return soft ? CT_OK : ct__sce_check_labels(c, label_slot, jb->hard, at->dims.d[0], jb->k);
}

/* T: the dtype; SUF: its suffix in softmax_row.h. */
#define SCE_KERNEL(NAME, T, SUF)                                                              \
  CT__VM_CLONES static void NAME##_rows(void *arg, int64_t first, int64_t last) {             \
    const sce_job *jb = arg;                                                                  \
    int64_t k = jb->k;                                                                        \
    const int64_t *hard = jb->hard;                                                           \
    for (int64_t i = first; i < last; i++) {                                                  \
      const T *xr = (const T *)jb->a + i * k;                                                 \
      T *sr = (T *)jb->out + i * k;                                                           \
      T mx = 0;                                                                               \
      const T *next = i + 1 < last ? xr + k : NULL;                                           \
      double sum = k > 0 ? ct__sm_row_##SUF(xr, sr, k, next, &mx) : 0;                        \
      double lse = (double)mx + ct__vlog(sum), l = 0;                                         \
      if (jb->soft) {                                                                         \
        const T *yr = (const T *)jb->y + i * k;                                               \
        for (int64_t j = 0; j < k; j++) l += (double)yr[j] * (lse - (double)xr[j]);           \
      } else if (hard[i] != jb->ignore) {                                                     \
        l = lse - (double)xr[hard[i]];                                                        \
      }                                                                                       \
      ((T *)jb->loss)[i] = (T)l;                                                              \
    }                                                                                         \
  }                                                                                           \
  static ct_status NAME(const ct_kernel_ctx *c) {                                             \
    const ct_tensor *xt = ct_kernel_in(c, CT__SCE_LOGITS, 0);                                 \
    sce_job jb;                                                                               \
    ct_status s = sce_prepare(c, xt, CT__SCE_LABEL, &jb);                                     \
    if (s != CT_OK) return s;                                                                 \
    jb.out = ct__k_out_data(c, CT__SCE_SOFTMAX, 0, c->dtype);                                 \
    if (CT__UNLIKELY(jb.out == NULL)) return ct_last_status();                                \
    jb.loss = ct__k_out_data(c, CT__SCE_LOSS, 0, c->dtype);                                   \
    if (CT__UNLIKELY(jb.loss == NULL)) return ct_last_status();                               \
    ct__parallel_for(xt->dims.d[0], CT__GRAIN_MATH / (jb.k + 1) + 1, NAME##_rows, &jb);       \
    return CT_OK;                                                                             \
  }

SCE_KERNEL(sce_f32, float, f32)
SCE_KERNEL(sce_f64, double, f64)

/* Logits@GRAD = (Softmax x (the row's label sum) - Label) x Loss@GRAD, the label one-hot for
 * hard labels (sum 1) and the row 0 where the label is ignore_index. */
#define SCE_GRAD_KERNEL(NAME, T)                                                             \
  static void NAME##_rows(void *arg, int64_t first, int64_t last) {                          \
    const sce_job *jb = arg;                                                                 \
    int64_t k = jb->k;                                                                       \
    const int64_t *hard = jb->hard;                                                          \
    for (int64_t i = first; i < last; i++) {                                                 \
      const T *sr = (const T *)jb->a + i * k;                                                \
      T *dr = (T *)jb->out + i * k, g = ((const T *)jb->dl)[i];                              \
      if (jb->soft) {                                                                        \
        const T *yr = (const T *)jb->y + i * k;                                              \
        T total = 0;                                                                         \
        for (int64_t j = 0; j < k; j++) total += yr[j];                                      \
        for (int64_t j = 0; j < k; j++) dr[j] = (sr[j] * total - yr[j]) * g;                 \
      } else if (hard[i] == jb->ignore) {                                                    \
        for (int64_t j = 0; j < k; j++) dr[j] = 0;                                           \
      } else {                                                                               \
        for (int64_t j = 0; j < k; j++) dr[j] = sr[j] * g;                                   \
        dr[hard[i]] = (sr[hard[i]] - 1) * g;                                                 \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  static ct_status NAME(const ct_kernel_ctx *c) {                                            \
    const ct_tensor *st = ct_kernel_in(c, CT__SCEG_SOFTMAX, 0);                              \
    sce_job jb;                                                                              \
    ct_status s = sce_prepare(c, st, CT__SCEG_LABEL, &jb);                                   \
    if (s != CT_OK) return s;                                                                \
    jb.out = ct__k_out_data(c, CT__SCEG_DLOGITS, 0, c->dtype);                               \
    if (CT__UNLIKELY(jb.out == NULL)) return ct_last_status();                               \
    jb.dl = ct__k_in_data(ct_kernel_in(c, CT__SCEG_DLOSS, 0));                               \
    ct__parallel_for(st->dims.d[0], CT__GRAIN_MEM / (jb.k + 1) + 1, NAME##_rows, &jb);       \
    return CT_OK;                                                                            \
  }

SCE_GRAD_KERNEL(sce_grad_f32, float)
SCE_GRAD_KERNEL(sce_grad_f64, double)


static const ct__kernel_set kernels[] = {
    {"softmax_with_cross_entropy", CT__KERNELS_F32_F64(sce)},
    {"softmax_with_cross_entropy_grad", CT__KERNELS_F32_F64(sce_grad)},
};

const ct__kernel_table ct__cpu_loss = CT__TABLE(kernels);
