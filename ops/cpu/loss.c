/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/loss.c: the CPU kernels of softmax_with_cross_entropy and its gradient (ops/defs/
 * loss.c), float32 and float64.
 *
 * Each row's Softmax is the softmax kernel's (ops/cpu/softmax_row.h: the same bits), and its
 * loss is log-sum-exp minus the label's logit, with the sum and the log (ops/cpu/vmath.h) in
 * double for both dtypes: large logits neither overflow nor round the loss to 0. Hard labels
 * are checked before any output is written, so a bad label leaves the outputs as they were. */
#include "ops/cpu/softmax_row.h"
#include "ops/defs.h"

/* T: the dtype; SUF: its suffix in softmax_row.h. */
#define SCE_KERNEL(NAME, T, SUF)                                                              \
  static ct_status NAME(const ct_kernel_ctx *c) {                                             \
    const ct_tensor *xt = ct_kernel_in(c, CT__SCE_LOGITS, 0);                                 \
    const ct_tensor *yt = ct_kernel_in(c, CT__SCE_LABEL, 0);                                  \
    int64_t n = xt->dims.d[0], k = xt->dims.d[1];                                             \
    bool soft = c->attr[CT__SCE_SOFT_LABEL].u.b;                                              \
    int64_t ignore = c->attr[CT__SCE_IGNORE_INDEX].u.i;                                       \
    const int64_t *hard = soft ? NULL : ct__k_in_data(yt);                                    \
    const T *y = soft ? ct__k_in_data(yt) : NULL;                                             \
    if (!soft) {                                                                              \
      ct_status s = ct__sce_check_labels(c, CT__SCE_LABEL, hard, n, k);                       \
      if (s != CT_OK) return s;                                                               \
    }                                                                                         \
    T *sm = ct__k_out_data(c, CT__SCE_SOFTMAX, 0, c->dtype);                                  \
    if (CT__UNLIKELY(sm == NULL)) return ct_last_status();                                    \
    T *loss = ct__k_out_data(c, CT__SCE_LOSS, 0, c->dtype);                                   \
    if (CT__UNLIKELY(loss == NULL)) return ct_last_status();                                  \
    const T *x = ct__k_in_data(xt);                                                           \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T *xr = x + i * k;                                                                \
      T *sr = sm + i * k;                                                                     \
      T mx = 0;                                                                               \
      double sum = k > 0 ? ct__sm_row_##SUF(xr, sr, k, &mx) : 0;                              \
      double lse = (double)mx + ct__vlog(sum), l = 0;                                         \
      if (soft) {                                                                             \
        const T *yr = y + i * k;                                                              \
        for (int64_t j = 0; j < k; j++) l += (double)yr[j] * (lse - (double)xr[j]);           \
      } else if (hard[i] != ignore) {                                                         \
        l = lse - (double)xr[hard[i]];                                                        \
      }                                                                                       \
      loss[i] = (T)l;                                                                         \
    }                                                                                         \
    return CT_OK;                                                                             \
  }

SCE_KERNEL(sce_f32, float, f32)
SCE_KERNEL(sce_f64, double, f64)

/* Logits@GRAD = (Softmax x (the row's label sum) - Label) x Loss@GRAD, the label one-hot for
 * hard labels (sum 1) and the row 0 where the label is ignore_index. */
#define SCE_GRAD_KERNEL(NAME, T)                                                             \
  static ct_status NAME(const ct_kernel_ctx *c) {                                            \
    const ct_tensor *st = ct_kernel_in(c, CT__SCEG_SOFTMAX, 0);                              \
    const ct_tensor *yt = ct_kernel_in(c, CT__SCEG_LABEL, 0);                                \
    int64_t n = st->dims.d[0], k = st->dims.d[1];                                            \
    bool soft = c->attr[CT__SCE_SOFT_LABEL].u.b;                                             \
    int64_t ignore = c->attr[CT__SCE_IGNORE_INDEX].u.i;                                      \
    const int64_t *hard = soft ? NULL : ct__k_in_data(yt);                                   \
    const T *y = soft ? ct__k_in_data(yt) : NULL;                                            \
    if (!soft) {                                                                             \
      ct_status s = ct__sce_check_labels(c, CT__SCEG_LABEL, hard, n, k);                     \
      if (s != CT_OK) return s;                                                              \
    }                                                                                        \
    T *dx = ct__k_out_data(c, CT__SCEG_DLOGITS, 0, c->dtype);                                \
    if (CT__UNLIKELY(dx == NULL)) return ct_last_status();                                   \
    const T *sm = ct__k_in_data(st);                                                         \
    const T *dl = ct__k_in_data(ct_kernel_in(c, CT__SCEG_DLOSS, 0));                         \
    for (int64_t i = 0; i < n; i++) {                                                        \
      const T *sr = sm + i * k;                                                              \
      T *dr = dx + i * k, g = dl[i];                                                         \
      if (soft) {                                                                            \
        const T *yr = y + i * k;                                                             \
        T total = 0;                                                                         \
        for (int64_t j = 0; j < k; j++) total += yr[j];                                      \
        for (int64_t j = 0; j < k; j++) dr[j] = (sr[j] * total - yr[j]) * g;                 \
      } else if (hard[i] == ignore) {                                                        \
        for (int64_t j = 0; j < k; j++) dr[j] = 0;                                           \
      } else {                                                                               \
        for (int64_t j = 0; j < k; j++) dr[j] = sr[j] * g;                                   \
        dr[hard[i]] = (sr[hard[i]] - 1) * g;                                                 \
      }                                                                                      \
    }                                                                                        \
    return CT_OK;                                                                            \
  }

SCE_GRAD_KERNEL(sce_grad_f32, float)
SCE_GRAD_KERNEL(sce_grad_f64, double)


static const ct__kernel_set kernels[] = {
    {"softmax_with_cross_entropy", CT__KERNELS_F32_F64(sce)},
    {"softmax_with_cross_entropy_grad", CT__KERNELS_F32_F64(sce_grad)},
};

const ct__kernel_table ct__cpu_loss = CT__TABLE(kernels);
