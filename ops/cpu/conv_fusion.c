/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_fusion.c: conv2d_fusion on the CPU: conv2d's kernel with the epilogue (Bias,
 * ResidualData, the activation) applied where it can, as each output tile leaves the GEMM's
 * registers or each depthwise plane is done (ct__conv_epi); elsewhere (Winograd, batched small
 * images, clip bounds the dtype does not hold, a residual broadcast within a plane, a batch
 * norm: batch_norm's arithmetic in double, which the tiles' epilogue does not do) conv2d's
 * kernel writes Output and one pass over it, plane by plane in parallel, applies the epilogue.
 * Each step computes what the separate op's kernel computes, in the same order: an
 * elementwise_add in the dtype (a + b is commutative in IEEE arithmetic, so the operands' order
 * does not matter), relu as `v < 0 ? 0 : v`, clip in double against the double bounds, stored
 * back in the dtype (ops/cpu/math_bin.c). So the bits are those of the unfused ops. */
#include <string.h>

#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h"
#include "ops/defs.h"

/* The activations: gemm.h's CT__EPI_ values (ACT_CLIP_T: clip whose bounds the dtype holds
 * exactly, 0 and 6 say, compared in the dtype, which gives the bits of the comparison in double:
 * the element converts exactly both ways), and clip in double, which the pass alone runs. */
enum {
  ACT_IDENTITY = CT__EPI_NONE,
  ACT_RELU = CT__EPI_RELU,
  ACT_CLIP_T = CT__EPI_CLAMP,
  ACT_CLIP
};

typedef ct__fusion_epi epilogue;

/* ResidualData's strides against Output's dims (infer-shape checked that they broadcast). */
static void res_strides(epilogue *ep, const ct_tensor *r, const ct_tensor *out) {
  int64_t stride = 1;
  for (int k = 3; k >= 0; k--) {
    int rk = r->dims.rank - 4 + k;
    int64_t ext = rk >= 0 ? r->dims.d[rk] : 1;
    ep->rs[k] = ext == 1 && out->dims.d[k] != 1 ? 0 : stride;
    stride *= ext;
  }
  ep->res_plane = ep->rs[3] == 1 && ep->rs[2] == ep->ow;
}

void ct__fusion_epi_make(const ct_kernel_ctx *c, size_t es, ct__fusion_epi *ep) {
  const ct_tensor *out = ct_kernel_out(c, CT__OUT, 0);
  *ep = (ct__fusion_epi){.m = out->dims.d[1], .ow = out->dims.d[3]};
  ep->plane = out->dims.d[2] * ep->ow;
  if (ct_kernel_in_count(c, CT__FUSION_BIAS) > 0) {
    const ct_tensor *bt = ct_kernel_in(c, CT__FUSION_BIAS, 0);
    ep->bias = ct__k_in_data(bt);
    ep->n_bias = bt->numel;
  }
  if (ct_kernel_in_count(c, CT__FUSION_RESIDUAL) > 0) {
    const ct_tensor *rt = ct_kernel_in(c, CT__FUSION_RESIDUAL, 0);
    ep->res = ct__k_in_data(rt);
    res_strides(ep, rt, out);
  }
  if (ct_kernel_in_count(c, CT__FUSION_BN_SCALE) > 0) {
    for (int k = 0; k < 4; k++) {
      ep->bn[k] = ct__k_in_data(ct_kernel_in(c, CT__FUSION_BN_SCALE + (size_t)k, 0));
    }
    ep->eps = c->attr[CT__FUSION_EPSILON].u.f;
  }
  const char *act = c->attr[CT__FUSION_ACTIVATION].u.s;
  ep->act = strcmp(act, "relu") == 0 ? ACT_RELU : strcmp(act, "clip") == 0 ? ACT_CLIP
                                                                           : ACT_IDENTITY;
  ep->lo = c->attr[CT__FUSION_CLIP_MIN].u.f;
  ep->hi = c->attr[CT__FUSION_CLIP_MAX].u.f;
  const bool exact = es == sizeof(double) ||
                     ((double)(float)ep->lo == ep->lo && (double)(float)ep->hi == ep->hi);
  if (ep->act == ACT_CLIP && exact) ep->act = ACT_CLIP_T;
}

/* One contiguous run of n outputs: bias (hb), residual r (hr) and activation act, the flags
 * constants at every call below so that each combination compiles to its own loop. */
#define EPILOGUE(T, SFX)                                                                   \
  static inline __attribute__((always_inline)) void run_##SFX(                            \
      T *o, const T *r, T bv, int64_t n, bool hb, bool hr, int act, double lo, double hi) { \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T v = o[i];                                                                         \
      if (hb) v = v + bv;                                                                 \
      if (hr) v = v + r[i];                                                               \
      if (act == ACT_RELU) {                                                              \
        v = v < 0 ? (T)0 : v;                                                             \
      } else if (act == ACT_CLIP) {                                                       \
        double d = (double)v;                                                             \
        d = d < lo ? lo : d;                                                              \
        d = d > hi ? hi : d;                                                              \
        v = (T)d;                                                                         \
      } else if (act == ACT_CLIP_T) {                                                     \
        v = v < (T)lo ? (T)lo : v;                                                        \
        v = v > (T)hi ? (T)hi : v;                                                        \
      }                                                                                   \
      o[i] = v;                                                                           \
    }                                                                                     \
  }                                                                                       \
  CT__VM_CLONES static void run_any_##SFX(T *o, const T *r, T bv, int64_t n, bool hb,     \
                                          bool hr, int act, double lo, double hi) {     \
    switch ((hb ? 1 : 0) + (hr ? 2 : 0) + 4 * act) {                                      \
      case 0: break;                                                                      \
      case 1: run_##SFX(o, r, bv, n, true, false, ACT_IDENTITY, lo, hi); break;           \
      case 2: run_##SFX(o, r, bv, n, false, true, ACT_IDENTITY, lo, hi); break;           \
      case 3: run_##SFX(o, r, bv, n, true, true, ACT_IDENTITY, lo, hi); break;            \
      case 4: run_##SFX(o, r, bv, n, false, false, ACT_RELU, lo, hi); break;              \
      case 5: run_##SFX(o, r, bv, n, true, false, ACT_RELU, lo, hi); break;               \
      case 6: run_##SFX(o, r, bv, n, false, true, ACT_RELU, lo, hi); break;               \
      case 7: run_##SFX(o, r, bv, n, true, true, ACT_RELU, lo, hi); break;                \
      case 8: run_##SFX(o, r, bv, n, false, false, ACT_CLIP_T, lo, hi); break;            \
      case 9: run_##SFX(o, r, bv, n, true, false, ACT_CLIP_T, lo, hi); break;             \
      case 10: run_##SFX(o, r, bv, n, false, true, ACT_CLIP_T, lo, hi); break;            \
      case 11: run_##SFX(o, r, bv, n, true, true, ACT_CLIP_T, lo, hi); break;             \
      case 12: run_##SFX(o, r, bv, n, false, false, ACT_CLIP, lo, hi); break;             \
      case 13: run_##SFX(o, r, bv, n, true, false, ACT_CLIP, lo, hi); break;              \
      case 14: run_##SFX(o, r, bv, n, false, true, ACT_CLIP, lo, hi); break;              \
      default: run_##SFX(o, r, bv, n, true, true, ACT_CLIP, lo, hi); break;               \
    }                                                                                     \
  }                                                                                       \
  void ct__conv_epi_rows_##SFX(const ct__conv_epi *e, T *plane, int64_t n, int64_t m,     \
                               int64_t i0, int64_t i1) {                                  \
    const T *r = e->res != NULL ? (const T *)e->res + n * e->rs_n + m * e->rs_m + i0 : NULL; \
    const T bv = e->bias != NULL ? ((const T *)e->bias)[e->n_bias == 1 ? 0 : m] : 0;      \
    run_any_##SFX(plane + i0, r, bv, i1 - i0, e->bias != NULL, r != NULL, e->act, e->lo,  \
                  e->hi);                                                                 \
  }                                                                                       \
  /* The bias, then batch_norm's inference arithmetic (ops/cpu/norm.c: in double, rounded  \
   * once) on n values of one channel, in place. */                                       \
  CT__VM_CLONES static void bn_##SFX(T *o, int64_t n, bool hb, T bv, double mu, double inv, \
                                     double g, double bb) {                               \
    if (hb) {                                                                             \
      for (int64_t i = 0; i < n; i++) o[i] = o[i] + bv;                                   \
    }                                                                                     \
    for (int64_t i = 0; i < n; i++) o[i] = (T)(((double)o[i] - mu) * inv * g + bb);       \
  }                                                                                       \
  static void planes_##SFX(void *arg, int64_t b, int64_t e) {                             \
    const epilogue *ep = arg;                                                             \
    const T *bias = ep->bias, *res = ep->res;                                             \
    for (int64_t p = b; p < e; p++) {                                                     \
      T *o = (T *)ep->o + p * ep->plane;                                                  \
      const T *r = res != NULL ? res + (p / ep->m) * ep->rs[0] + (p % ep->m) * ep->rs[1]  \
                               : NULL;                                                    \
      T bv = bias != NULL ? bias[ep->n_bias == 1 ? 0 : p % ep->m] : 0;                    \
      bool hb = bias != NULL;                                                             \
      if (ep->bn[0] != NULL) { /* the bias goes in first: bn(conv + Bias) */              \
        const T *sc = ep->bn[0], *sh = ep->bn[1], *mu = ep->bn[2], *var = ep->bn[3];      \
        int64_t ch = p % ep->m;                                                           \
        bn_##SFX(o, ep->plane, hb, bv, (double)mu[ch], ct__inv_std((double)var[ch], ep->eps), \
                 (double)sc[ch], (double)sh[ch]);                                         \
        hb = false;                                                                       \
      }                                                                                   \
      if (r == NULL || ep->res_plane) {                                                   \
        run_any_##SFX(o, r, bv, ep->plane, hb, r != NULL, ep->act, ep->lo, ep->hi);       \
        continue;                                                                         \
      }                                                                                   \
      /* A broadcast residual: row by row, each row's residual gathered first. */         \
      T row[256];                                                                         \
      for (int64_t y = 0; y < ep->plane / ep->ow; y++) {                                  \
        for (int64_t x0 = 0; x0 < ep->ow; x0 += 256) {                                    \
          int64_t w = ep->ow - x0 < 256 ? ep->ow - x0 : 256;                              \
          for (int64_t x = 0; x < w; x++) row[x] = r[y * ep->rs[2] + (x0 + x) * ep->rs[3]]; \
          run_any_##SFX(o + y * ep->ow + x0, row, bv, w, hb, true, ep->act, ep->lo,       \
                        ep->hi);                                                          \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }                                                                                       \
  void ct__fusion_values_##SFX(const ct__fusion_epi *ep, T *v, int64_t n, int64_t m) {     \
    const T *bias = ep->bias;                                                             \
    T bv = bias != NULL ? bias[ep->n_bias == 1 ? 0 : m] : 0;                              \
    bool hb = bias != NULL;                                                               \
    if (ep->bn[0] != NULL) { /* the bias goes in first: bn(conv + Bias) */                \
      const T *sc = ep->bn[0], *sh = ep->bn[1], *mu = ep->bn[2], *var = ep->bn[3];        \
      bn_##SFX(v, n, hb, bv, (double)mu[m], ct__inv_std((double)var[m], ep->eps),         \
               (double)sc[m], (double)sh[m]);                                             \
      hb = false;                                                                         \
    }                                                                                     \
    run_any_##SFX(v, NULL, bv, n, hb, false, ep->act, ep->lo, ep->hi);                    \
  }                                                                                       \
  ct_status ct__cpu_conv2d_fusion_##SFX(const ct_kernel_ctx *c) {                         \
    const ct_tensor *out = ct_kernel_out(c, CT__OUT, 0);                                  \
    epilogue ep;                                                                          \
    ct__fusion_epi_make(c, sizeof(T), &ep);                                               \
    if (ep.bias == NULL && ep.res == NULL && ep.bn[0] == NULL && ep.act == ACT_IDENTITY) { \
      return ct__cpu_conv2d_##SFX(c);                                                     \
    }                                                                                     \
    /* The kernel applies it itself where it can: the activation in the dtype, the       \
     * residual whole planes (else the pass below, after the kernel). */                  \
    bool applied = false;                                                                 \
    ct__conv_epi ce = {.bias = ep.bias, .n_bias = ep.n_bias, .res = ep.res,               \
                       .rs_n = ep.rs[0], .rs_m = ep.rs[1], .act = ep.act, .lo = ep.lo,    \
                       .hi = ep.hi};                                                      \
    bool fits = ep.act != ACT_CLIP && (ep.res == NULL || ep.res_plane) && ep.bn[0] == NULL; \
    ct_status s = ct__cpu_conv2d_epi_##SFX(c, fits ? &ce : NULL, &applied);               \
    if (s != CT_OK || applied) return s;                                                  \
    ep.o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                       \
    if (ep.o == NULL) return ct_last_status();                                            \
    ct__parallel_for(out->dims.d[0] * ep.m, ep.plane > 0 ? CT__GRAIN_MEM / ep.plane + 1 : 1, \
                     planes_##SFX, &ep);                                                  \
    return CT_OK;                                                                         \
  }

EPILOGUE(float, f32)
EPILOGUE(double, f64)
