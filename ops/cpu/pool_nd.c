/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/pool_nd.c: pool_nd (float32, float64; max also int8, uint8, int32, int64), its
 * gradient (float32, float64), max_unpool (any dtype: elements moved by their size) and the
 * integer max kernels of pool2d (int8, uint8, int32, int64: pool2d's float kernels stay in
 * ops/cpu/conv.c; its integer ones walk pool2d's plan here as a 2-dim ct__pnd_plan, where a
 * window of padding alone gives 0 as pool2d's float kernels do).
 *
 * Each output walks its window's taps inside X in window order (dims outer to inner); avg sums
 * them in double and divides once. The work splits across threads over the N x C planes. */
#include <string.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/defs/index.h"
#include "ops/defs/pool_nd.h"

typedef struct pnd_run {
  ct__pnd_plan p;
  const void *x, *d; /* X; Out@GRAD (the gradient) */
  void *out;         /* Out or X@GRAD */
  int64_t *idx;      /* Indices, or NULL */
} pnd_run;

/* The flat index into X of the tap at spatial position pos of plane pl. */
static int64_t flat_index(const ct__pnd_plan *p, int64_t pl, const int64_t pos[3]) {
  int64_t at = p->storage == 0 ? (pos[0] * p->in[1] + pos[1]) * p->in[2] + pos[2]
                               : pos[0] + p->in[0] * (pos[1] + p->in[1] * pos[2]);
  return pl * p->in_sz + at;
}

static int64_t grain_of(const ct__pnd_plan *p) {
  int64_t vol = p->ks[0] * p->ks[1] * p->ks[2], w; /* at most 2^40 (the plan checks) */
  if (__builtin_mul_overflow(p->out_sz, vol, &w) || __builtin_add_overflow(w, p->in_sz, &w)) {
    return 1;
  }
  return w >= CT__GRAIN_MEM ? 1 : CT__GRAIN_MEM / (w > 0 ? w : 1);
}

/* The taps of window o: [t0[j], t1[j]) along each dim. */
static void window(const ct__pnd_plan *p, const int64_t o[3], int64_t t0[3], int64_t t1[3]) {
  for (int j = 0; j < 3; j++) ct__pnd_taps(p, j, o[j], &t0[j], &t1[j]);
}

#define TAP_LOOP(p, o, t0, t1, pos, ...)                                                   \
  for (int64_t a0 = t0[0]; a0 < t1[0]; a0++) {                                            \
    pos[0] = o[0] * p->st[0] - p->pb[0] + a0 * p->dil[0];                                 \
    for (int64_t a1 = t0[1]; a1 < t1[1]; a1++) {                                          \
      pos[1] = o[1] * p->st[1] - p->pb[1] + a1 * p->dil[1];                               \
      for (int64_t a2 = t0[2]; a2 < t1[2]; a2++) {                                        \
        pos[2] = o[2] * p->st[2] - p->pb[2] + a2 * p->dil[2];                             \
        int64_t at = (pos[0] * p->in[1] + pos[1]) * p->in[2] + pos[2];                    \
        __VA_ARGS__                                                                       \
      }                                                                                   \
    }                                                                                     \
  }

#define OUT_LOOP(p, o, ...)                                                                \
  for (o[0] = 0; o[0] < p->out[0]; o[0]++) {                                              \
    for (o[1] = 0; o[1] < p->out[1]; o[1]++) {                                            \
      for (o[2] = 0; o[2] < p->out[2]; o[2]++) __VA_ARGS__                                \
    }                                                                                     \
  }

/* The planes [b, e) of pool_nd for element type T (FLT: a floating type, where a NaN wins). */
#define PND_FORWARD(SFX, T, FLT)                                                           \
  static void planes_##SFX(void *arg, int64_t b, int64_t e) {                             \
    const pnd_run *r = arg;                                                               \
    const ct__pnd_plan *p = &r->p;                                                        \
    for (int64_t pl = b; pl < e; pl++) {                                                  \
      const T *xp = (const T *)r->x + pl * p->in_sz;                                      \
      T *op = (T *)r->out + pl * p->out_sz;                                               \
      int64_t o[3], t0[3], t1[3], pos[3], q = 0;                                          \
      OUT_LOOP(p, o, {                                                                    \
        window(p, o, t0, t1);                                                             \
        if (p->max) {                                                                     \
          T best = 0;                                                                     \
          int64_t bp[3] = {0, 0, 0};                                                      \
          bool have = false;                                                              \
          TAP_LOOP(p, o, t0, t1, pos, {                                                   \
            T v = xp[at];                                                                 \
            if (!have || v > best || (FLT && v != v && best == best)) {                   \
              best = v;                                                                   \
              memcpy(bp, pos, sizeof bp);                                                 \
              have = true;                                                                \
            }                                                                             \
          })                                                                              \
          op[q] = best;                                                                   \
          if (r->idx != NULL) r->idx[pl * p->out_sz + q] = have ? flat_index(p, pl, bp) : -1; \
        } else {                                                                          \
          double acc = 0;                                                                 \
          TAP_LOOP(p, o, t0, t1, pos, { acc += (double)xp[at]; })                         \
          int64_t cnt = ct__pnd_count(p, o);                                              \
          op[q] = (T)(cnt > 0 ? acc / (double)cnt : 0);                                   \
        }                                                                                 \
        q++;                                                                              \
      })                                                                                  \
    }                                                                                     \
  }

PND_FORWARD(f32, float, 1)
PND_FORWARD(f64, double, 1)
PND_FORWARD(i8, int8_t, 0)
PND_FORWARD(u8, uint8_t, 0)
PND_FORWARD(i32, int32_t, 0)
PND_FORWARD(i64, int64_t, 0)

/* Runs fn over the planes of r (plan made, X read) into Out (and Indices when wired). */
static ct_status run_forward(const ct_kernel_ctx *c, pnd_run *r, ct__range_fn fn, bool indices) {
  if (!r->p.max && c->dtype != CT_FLOAT32 && c->dtype != CT_FLOAT64) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "avg pooling of %s input X variable '%s' is not supported: cast it to "
                          "float32 first",
                          ct_dtype_name(c->dtype), ct_kernel_in_name(c, CT__IN_X, 0));
  }
  r->idx = NULL;
  if (indices && ct_kernel_out_count(c, CT__PND_INDICES) > 0) {
    r->idx = ct__k_out_data(c, CT__PND_INDICES, 0, CT_INT64);
    if (r->idx == NULL) return ct_last_status();
  }
  r->out = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (r->out == NULL) return ct_last_status();
  r->x = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));
  ct__parallel_for(r->p.n * r->p.c, grain_of(&r->p), fn, r);
  return CT_OK;
}

#define PND_KERNEL(SFX)                                                                    \
  static ct_status pool_nd_##SFX(const ct_kernel_ctx *c) {                                \
    pnd_run r;                                                                            \
    ct_status s = ct__pnd_plan_make(c, ct_kernel_in(c, CT__IN_X, 0)->dims, &r.p);         \
    return s == CT_OK ? run_forward(c, &r, planes_##SFX, true) : s;                       \
  }
#define POOL2D_KERNEL(SFX)                                                                 \
  static ct_status pool2d_##SFX(const ct_kernel_ctx *c) {                                 \
    ct__conv_geom g;                                                                      \
    pnd_run r;                                                                            \
    ct_status s = ct__pool_plan(c, ct_kernel_in(c, CT__IN_X, 0)->dims, &g);               \
    if (s != CT_OK) return s;                                                             \
    ct__pnd_from_pool2d(&g, &r.p);                                                        \
    return run_forward(c, &r, planes_##SFX, false);                                       \
  }

PND_KERNEL(f32)
PND_KERNEL(f64)
PND_KERNEL(i8)
PND_KERNEL(u8)
PND_KERNEL(i32)
PND_KERNEL(i64)
POOL2D_KERNEL(i8)
POOL2D_KERNEL(u8)
POOL2D_KERNEL(i32)
POOL2D_KERNEL(i64)

/* ---- pool_nd_grad ---------------------------------------------------------------------------- */

#define PND_BACKWARD(SFX, T)                                                               \
  static void grad_planes_##SFX(void *arg, int64_t b, int64_t e) {                        \
    const pnd_run *r = arg;                                                               \
    const ct__pnd_plan *p = &r->p;                                                        \
    for (int64_t pl = b; pl < e; pl++) {                                                  \
      const T *xp = (const T *)r->x + pl * p->in_sz, *dp = (const T *)r->d + pl * p->out_sz; \
      T *gp = (T *)r->out + pl * p->in_sz;                                                \
      for (int64_t i = 0; i < p->in_sz; i++) gp[i] = 0;                                   \
      int64_t o[3], t0[3], t1[3], pos[3], q = 0;                                          \
      OUT_LOOP(p, o, {                                                                    \
        window(p, o, t0, t1);                                                             \
        T dv = dp[q++];                                                                   \
        if (p->max) {                                                                     \
          T best = 0;                                                                     \
          int64_t bat = -1;                                                               \
          TAP_LOOP(p, o, t0, t1, pos, {                                                   \
            T v = xp[at];                                                                 \
            if (bat < 0 || v > best || (v != v && best == best)) {                        \
              best = v;                                                                   \
              bat = at;                                                                   \
            }                                                                             \
          })                                                                              \
          if (bat >= 0) gp[bat] += dv;                                                    \
        } else {                                                                          \
          int64_t cnt = ct__pnd_count(p, o);                                              \
          T share = cnt > 0 ? dv / (T)cnt : 0;                                            \
          TAP_LOOP(p, o, t0, t1, pos, { gp[at] += share; })                               \
        }                                                                                 \
      })                                                                                  \
    }                                                                                     \
  }                                                                                       \
  static ct_status pool_nd_grad_##SFX(const ct_kernel_ctx *c) {                           \
    pnd_run r;                                                                            \
    ct_status s = ct__pnd_plan_make(c, ct_kernel_in(c, CT__PNDG_X, 0)->dims, &r.p);       \
    if (s != CT_OK) return s;                                                             \
    r.out = ct__k_out_data(c, 0, 0, c->dtype);                                            \
    if (r.out == NULL) return ct_last_status();                                           \
    r.x = ct__k_in_data(ct_kernel_in(c, CT__PNDG_X, 0));                                  \
    r.d = ct__k_in_data(ct_kernel_in(c, CT__PNDG_DOUT, 0));                               \
    ct__parallel_for(r.p.n * r.p.c, grain_of(&r.p), grad_planes_##SFX, &r);               \
    return CT_OK;                                                                         \
  }

PND_BACKWARD(f32, float)
PND_BACKWARD(f64, double)

/* ---- max_unpool ------------------------------------------------------------------------------ */

/* The flat position in Out (dims out) of flat position i in the unpooled dims u, U sitting at
 * Out's start. */
static int64_t relocate(int64_t i, ct_ddim u, ct_ddim out) {
  int64_t at = 0, mul = 1;
  for (int k = u.rank - 1; k >= 0; k--) {
    int64_t e = u.d[k] > 0 ? u.d[k] : 1;
    at += (i % e) * mul;
    i /= e;
    mul *= out.d[k];
  }
  return at;
}

/* Any dtype: every index checked against the unpooled size first, then Out zeroed and each
 * element of X copied to its place. */
static ct_status max_unpool_any(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__MUP_X, 0), *ix = ct_kernel_in(c, CT__MUP_INDICES, 0);
  ct_ddim u, od;
  ct_status s = ct__mup_dims(c, &u, &od);
  if (s != CT_OK) return s;
  int64_t total = ct_ddim_numel(u);
  bool same = ct_ddim_equal(u, od);
  const void *ip = ct__k_in_data(ix);
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t at = ct__ix_index(ip, ix->dtype, i);
    if (at < 0 || at >= total) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "input Indices variable '%s' element %lld is %lld, outside the %lld "
                            "unpooled elements: indices are flat positions in the unpooled dims",
                            ct_kernel_in_name(c, CT__MUP_INDICES, 0), (long long)i,
                            (long long)at, (long long)total);
    }
  }
  size_t es = ct_dtype_size(x->dtype);
  char *o = ct__k_out_data(c, CT__OUT, 0, x->dtype);
  if (o == NULL) return ct_last_status();
  int64_t n_out = ct_ddim_numel(od);
  if (n_out > 0) memset(o, 0, (size_t)n_out * es);
  const char *xd = ct__k_in_data(x);
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t at = ct__ix_index(ip, ix->dtype, i);
    if (!same) at = relocate(at, u, od);
    memcpy(o + (size_t)at * es, xd + (size_t)i * es, es);
  }
  return CT_OK;
}

#define INT_MAX_KERNELS(name)                                                              \
  [CT_INT8] = name##_i8, [CT_UINT8] = name##_u8, [CT_INT32] = name##_i32,                 \
  [CT_INT64] = name##_i64

static const ct__kernel_set kernels[] = {
    {"pool_nd", CT__KERNELS([CT_FLOAT32] = pool_nd_f32, [CT_FLOAT64] = pool_nd_f64,
                            INT_MAX_KERNELS(pool_nd))},
    {"pool2d", CT__KERNELS(INT_MAX_KERNELS(pool2d))},
    {"pool_nd_grad", CT__KERNELS_F32_F64(pool_nd_grad)},
    {"max_unpool", CT__KERNELS([CT_DTYPE_UNDEFINED] = max_unpool_any)},
};

const ct__kernel_table ct__cpu_pool_nd = CT__TABLE(kernels);
