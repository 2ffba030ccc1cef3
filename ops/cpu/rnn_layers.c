/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/rnn_layers.c: the CPU kernels of simple_rnn, gru, lstm and their gradients
 * (ops/defs/rnn_layers.c, rnn_layers_grad.c), float32 and float64.
 *
 * One kernel serves the three types: per direction, one GEMM gives X W^T for every step, then
 * each step one GEMM gives H' R^T for the batch (gru without linear_before_reset: two, the
 * second over r H') and a loop applies the gates (ops/cpu/rnn_layers_tmpl.h). The gradients run
 * the steps again keeping their gates, then walk them backwards (rnn_layers_grad_tmpl.h). The
 * GEMM is corten's (ops/cpu/gemm.h): its sums do not depend on the thread count or on the rows
 * a call covers, and the batch entries, split across the threads for the steps (each piece all
 * the steps of its entries), never read one another's states, so the results do not depend on
 * the thread count either. The working space is the calling thread's kept work buffer
 * (common/alloc.h), so a layer run again allocates nothing. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h"
#include "ops/cpu/vmath512.h"
#include "ops/defs/rnn_layers.h"

/* n elements of es bytes of working space, or NULL with CT_ERR_OUT_OF_MEMORY naming the op. */
static void *rl_scratch(const ct_kernel_ctx *c, int64_t n, size_t es) {
  bool fits = n >= 0 && (uint64_t)n <= (SIZE_MAX - 64) / es;
  size_t bytes = fits ? (size_t)(n > 0 ? n : 1) * es : 0;
  void *p = fits ? ct__work_take(bytes) : NULL;
  if (p == NULL) {
    ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                   "out of host memory for the %lld-element working space of the steps of "
                   "input X variable '%s'",
                   (long long)n, ct_kernel_in_name(c, CT__RL_X, 0));
  }
  return p;
}

static void rl_scratch_free(void *p) { ct__work_free(p); }

/* The tags of the kept W packing and R^T (ct__k_derived), above the width and element size. */
#define RL_W_TAG ((uint64_t)4 << 32)
#define RL_R_TAG ((uint64_t)5 << 32)

#ifdef CT__T16_X86
/* The usual cells of float32 on AVX-512: the template's RL(lstm_cells), RL(gru_cells) and
 * RL(rnn_cells) with vmath512.h's functions (the same bits; exp's 2^k one instruction: an
 * LSTM's cells of 32 units 22 % faster), 16 units at a time, the last masked. */
__attribute__((target("avx512f"))) static void lstm_cells16(int64_t h, const float *z,
                                                           const float *cp, float *cn,
                                                           float *hn) {
  for (int64_t k = 0; k < h; k += 16) {
    const __mmask16 m = ct__v512_rest(h - k);
    __m512 ig = ct__v512_sigmoidf(_mm512_maskz_loadu_ps(m, z + k));
    __m512 og = ct__v512_sigmoidf(_mm512_maskz_loadu_ps(m, z + h + k));
    __m512 fg = ct__v512_sigmoidf(_mm512_maskz_loadu_ps(m, z + 2 * h + k));
    __m512 gg = ct__v512_tanhf(_mm512_maskz_loadu_ps(m, z + 3 * h + k));
    __m512 cell = _mm512_add_ps(_mm512_mul_ps(fg, _mm512_maskz_loadu_ps(m, cp + k)),
                                _mm512_mul_ps(ig, gg));
    _mm512_mask_storeu_ps(cn + k, m, cell);
    _mm512_mask_storeu_ps(hn + k, m, _mm512_mul_ps(og, ct__v512_tanhf(cell)));
  }
}
__attribute__((target("avx512f"))) static void gru_cells16(int64_t h, float *z, const float *add,
                                                          const float *rbh, bool lbr,
                                                          const float *hp, float *hn) {
  for (int64_t k = 0; k < h; k += 16) {
    const __mmask16 m = ct__v512_rest(h - k);
    __m512 zt = ct__v512_sigmoidf(_mm512_maskz_loadu_ps(m, z + k));
    __m512 rg = ct__v512_sigmoidf(_mm512_maskz_loadu_ps(m, z + h + k));
    __m512 a = _mm512_maskz_loadu_ps(m, add + k);
    __m512 r = lbr ? _mm512_mul_ps(rg, a) : _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, rbh + k));
    __m512 c = _mm512_add_ps(_mm512_maskz_loadu_ps(m, z + 2 * h + k), r);
    _mm512_mask_storeu_ps(z + 2 * h + k, m, c);
    __m512 y = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), zt),
                                           ct__v512_tanhf(c)),
                             _mm512_mul_ps(zt, _mm512_maskz_loadu_ps(m, hp + k)));
    _mm512_mask_storeu_ps(hn + k, m, y);
  }
}
__attribute__((target("avx512f"))) static void rnn_cells16(int64_t h, const float *z,
                                                          float *hn) {
  CT__V512_MAP(ct__v512_tanhf, z, hn, h);
}
#endif

#define T float
#define SUF f32
#define GEMM ct__gemm_f32
#define GEMM_KEPT ct__gemm_kept_f32
#define EXP expf
#define TANH tanhf
#define LOG1P log1pf
#include "ops/cpu/rnn_layers_tmpl.h"
#include "ops/cpu/rnn_layers_grad_tmpl.h"
#undef T
#undef SUF
#undef GEMM
#undef GEMM_KEPT
#undef EXP
#undef TANH
#undef LOG1P

#define T double
#define SUF f64
#define GEMM ct__gemm_f64
#define GEMM_KEPT ct__gemm_kept_f64
#define EXP exp
#define TANH tanh
#define LOG1P log1p
#include "ops/cpu/rnn_layers_tmpl.h"
#include "ops/cpu/rnn_layers_grad_tmpl.h"
#undef T
#undef SUF
#undef GEMM
#undef GEMM_KEPT
#undef EXP
#undef TANH
#undef LOG1P

/* The forward kernel of kind K for dtype SUF: plan, check the lengths, then run each
 * direction over the scratch. */
#define RL_FORWARD(NAME, SUF_, T_, K)                                                  \
  static ct_status NAME(const ct_kernel_ctx *c) {                                      \
    ct__rl_plan p;                                                                     \
    ct_status s = ct__rl_plan_make(c, K, false, &p);                                   \
    if (s == CT_OK) s = ct__rl_check_seq(c, &p);                                       \
    if (s != CT_OK) return s;                                                          \
    T_ *buf = rl_scratch(c, scratch_elems_##SUF_(&p, false), sizeof(T_));              \
    if (buf == NULL) return ct_last_status();                                          \
    run_##SUF_ j;                                                                      \
    s = open_##SUF_(&j, c, &p, buf, false, true);                                      \
    if (s == CT_OK) consts_##SUF_(&j);                                                 \
    for (int64_t d = 0; d < p.dirs && s == CT_OK; d++) s = forward_dir_##SUF_(&j, d);  \
    rl_scratch_free(buf);                                                              \
    return s == CT_OK ? CT_OK : ct__gemm_fail(c);                                      \
  }

/* The grad kernel of kind K: the gradients wanted allocated (those summed over steps zeroed),
 * then per direction the forward steps kept and walked back. */
#define RL_BACKWARD(NAME, SUF_, T_, K)                                                      \
  static ct_status NAME(const ct_kernel_ctx *c) {                                           \
    ct__rl_plan p;                                                                          \
    ct_status s = ct__rl_plan_make(c, K, true, &p);                                         \
    if (s == CT_OK) s = ct__rl_check_seq(c, &p);                                            \
    if (s != CT_OK) return s;                                                               \
    grad_##SUF_ g;                                                                          \
    memset(&g, 0, sizeof g);                                                                \
    const T_ **gin[3] = {&g.gy, &g.glh, &g.glc};                                            \
    for (size_t o = 0; o < (K == CT__RL_LSTM ? 3u : 2u); o++) {                             \
      if (ct_kernel_in_count(c, p.n_in + o) > 0) {                                          \
        *gin[o] = ct__k_in_data(ct_kernel_in(c, p.n_in + o, 0));                            \
      }                                                                                     \
    }                                                                                       \
    T_ **gout[7] = {&g.dx, &g.dw, &g.dr, &g.db, &g.dh0, &g.dc0, &g.dp};                     \
    for (size_t o = 0; o < (K == CT__RL_LSTM ? 7u : 5u); o++) {                             \
      if (ct_kernel_out_count(c, o) == 0) continue;                                         \
      *gout[o] = ct__k_out_data(c, o, 0, c->dtype);                                         \
      if (*gout[o] == NULL) return ct_last_status();                                        \
    }                                                                                       \
    int64_t gh = p.gates * p.h, nh = p.n * p.h;                                             \
    if (g.dr != NULL) memset(g.dr, 0, sizeof(T_) * (size_t)(p.dirs * gh * p.h));            \
    if (g.db != NULL) memset(g.db, 0, sizeof(T_) * (size_t)(p.dirs * 2 * gh));              \
    if (g.dp != NULL) memset(g.dp, 0, sizeof(T_) * (size_t)(p.dirs * 3 * p.h));             \
    if (g.dx != NULL && gh == 0) {                                                          \
      memset(g.dx, 0, sizeof(T_) * (size_t)(p.t * p.n * p.i));                              \
    }                                                                                       \
    int64_t base = scratch_elems_##SUF_(&p, true);                                          \
    T_ *buf = rl_scratch(c, base + 5 * nh, sizeof(T_));                                     \
    if (buf == NULL) return ct_last_status();                                               \
    g.dh = buf + base, g.dc = g.dh + nh, g.dhn = g.dc + nh, g.dq = g.dhn + nh;              \
    g.dd = g.dq + nh;                                                                       \
    run_##SUF_ j;                                                                           \
    s = open_##SUF_(&j, c, &p, buf, true, false);                                           \
    for (int64_t d = 0; d < p.dirs && s == CT_OK; d++) {                                    \
      s = forward_dir_##SUF_(&j, d);                                                        \
      if (s == CT_OK) s = backward_dir_##SUF_(&j, &g, d);                                   \
    }                                                                                       \
    rl_scratch_free(buf);                                                                   \
    return s == CT_OK ? CT_OK : ct__gemm_fail(c);                                           \
  }

RL_FORWARD(simple_rnn_f32, f32, float, CT__RL_RNN)
RL_FORWARD(simple_rnn_f64, f64, double, CT__RL_RNN)
RL_FORWARD(gru_f32, f32, float, CT__RL_GRU)
RL_FORWARD(gru_f64, f64, double, CT__RL_GRU)
RL_FORWARD(lstm_f32, f32, float, CT__RL_LSTM)
RL_FORWARD(lstm_f64, f64, double, CT__RL_LSTM)
RL_BACKWARD(simple_rnn_grad_f32, f32, float, CT__RL_RNN)
RL_BACKWARD(simple_rnn_grad_f64, f64, double, CT__RL_RNN)
RL_BACKWARD(gru_grad_f32, f32, float, CT__RL_GRU)
RL_BACKWARD(gru_grad_f64, f64, double, CT__RL_GRU)
RL_BACKWARD(lstm_grad_f32, f32, float, CT__RL_LSTM)
RL_BACKWARD(lstm_grad_f64, f64, double, CT__RL_LSTM)

static const ct__kernel_set kernels[] = {
    {"simple_rnn", CT__KERNELS_F32_F64(simple_rnn)},
    {"gru", CT__KERNELS_F32_F64(gru)},
    {"lstm", CT__KERNELS_F32_F64(lstm)},
    {"simple_rnn_grad", CT__KERNELS_F32_F64(simple_rnn_grad)},
    {"gru_grad", CT__KERNELS_F32_F64(gru_grad)},
    {"lstm_grad", CT__KERNELS_F32_F64(lstm_grad)},
};

const ct__kernel_table ct__cpu_rnn_layers = CT__TABLE(kernels);
