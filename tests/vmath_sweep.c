/* SPDX-License-Identifier: Apache-2.0 */
/* tests/vmath_sweep.c: the accuracy sweep of ops/cpu/vmath.h, run by hand (not a test: it takes
 * minutes). float32 exp, log, tanh, sigmoid and softmax's exp (ct__vexpf_sm, its argument
 * min(x, 89)) over all 2^32 inputs against the C library's
 * double functions; float64 exp and log over 2^28 random inputs covering their whole range
 * against long double. Prints, per function, the largest error in units in the last place of
 * the exact result, the input giving it, and the count of results that disagree in kind (inf,
 * NaN or zero where the reference has none).
 * `avx512` compares ops/cpu/vmath512.h with vmath.h over all 2^32 float32 inputs instead.
 * docs/design/vmath.md records its output. Usage: vmath_sweep [f32|f64|avx512|sm] (sm: softmax's
 * exp alone). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops/cpu/vmath.h"
#include "ops/cpu/vmath512.h"

#define BLK 4096

/* The error of y in ulps of the double format at the exact v; -1 when they disagree in kind
 * (inf, NaN or 0 where the other has none). */
static double ulp_err(long double y, long double v) {
  if (isnan(v) || isnan(y)) return isnan(v) && isnan(y) ? 0 : -1;
  if (isinf(v) || isinf(y)) return y == v ? 0 : -1;
  if (v == 0) return y == 0 ? 0 : -1;
  int e;
  frexpl(v, &e);
  if (e - 1 < -1022) e = -1021;
  return (double)(fabsl(y - v) / ldexpl(1.0L, e - 53));
}

typedef struct worst {
  double err;
  double at;
  long bad;
} worst;

static void note(worst *w, double err, double x) {
  if (err < 0) {
    if (w->bad++ < 5) printf("  kind mismatch at %a\n", x);
  } else if (err > w->err) {
    w->err = err;
    w->at = x;
  }
}

/* The float32 reference in double, rounded to float range where it overflows: inf when it
 * rounds so, else FLT_MAX. */
static double ref32(int fn, float x) {
  double d = x, v = fn == 0 || fn == 4 ? exp(d)
                    : fn == 1          ? log(d)
                    : fn == 2          ? tanh(d)
                                       : 1.0 / (1.0 + exp(-d));
  return fabs(v) > FLT_MAX ? (double)(float)v : v;
}

/* ulp_err for float32, in double (faster; exact enough for a float's error). */
static double ulp_err32(float y, double v) {
  if (isnan(v) || isnan(y)) return isnan(v) && isnan(y) ? 0 : -1;
  if (isinf(v) || isinf(y)) return y == v ? 0 : -1;
  if (v == 0) return y == 0 ? 0 : -1;
  int e;
  frexp(v, &e);
  return fabs((double)y - v) / ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 23);
}

static void sweep32(int first) {
  static const char *const names[] = {"expf", "logf", "tanhf", "sigmoidf", "expf_sm"};
  static float xs[BLK], ys[BLK];
  for (int fn = first; fn < 5; fn++) {
    worst w = {0, 0, 0};
    for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += BLK) {
      for (int i = 0; i < BLK; i++) {
        uint32_t u = (uint32_t)(base + (uint64_t)i);
        memcpy(&xs[i], &u, sizeof u);
        if (fn == 4 && xs[i] > 89.0f) xs[i] = 89.0f;
      }
      if (fn == 0) for (int i = 0; i < BLK; i++) ys[i] = ct__vexpf(xs[i]);
      if (fn == 1) for (int i = 0; i < BLK; i++) ys[i] = ct__vlogf(xs[i]);
      if (fn == 2) for (int i = 0; i < BLK; i++) ys[i] = ct__vtanhf(xs[i]);
      if (fn == 3) for (int i = 0; i < BLK; i++) ys[i] = ct__vsigmoidf(xs[i]);
      if (fn == 4) for (int i = 0; i < BLK; i++) ys[i] = ct__vexpf_sm(xs[i]);
      for (int i = 0; i < BLK; i++) note(&w, ulp_err32(ys[i], ref32(fn, xs[i])), xs[i]);
    }
    printf("%-9s max %.3f ulp at %a; kind mismatches %ld\n", names[fn], w.err, w.at, w.bad);
    fflush(stdout);
  }
}

static uint64_t rng = 88172645463325252u;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void sweep64(void) {
  static const char *const names[] = {"exp", "log"};
  static double xs[BLK], ys[BLK];
  for (int fn = 0; fn < 2; fn++) {
    worst w = {0, 0, 0};
    for (uint64_t n = 0; n < ((uint64_t)1 << 28); n += BLK) {
      for (int i = 0; i < BLK; i++) {
        /* log: any positive double; exp: any sign, exponents up to 2^10 (beyond: inf or 0). */
        uint64_t u = next() >> 1;
        if (fn == 0) u = (next() & 0x800fffffffffffffu) | ((next() % 1033) << 52);
        memcpy(&xs[i], &u, sizeof u);
      }
      if (fn == 0) for (int i = 0; i < BLK; i++) ys[i] = ct__vexp(xs[i]);
      if (fn == 1) for (int i = 0; i < BLK; i++) ys[i] = ct__vlog(xs[i]);
      for (int i = 0; i < BLK; i++) {
        long double v = fn == 0 ? expl(xs[i]) : logl(xs[i]);
        if (fabsl(v) > DBL_MAX) v = (double)v;
        note(&w, ulp_err(ys[i], v), xs[i]);
      }
    }
    printf("%-9s max %.3f ulp at %a; kind mismatches %ld\n", names[fn], w.err, w.at, w.bad);
    fflush(stdout);
  }
}

#ifdef CT__T16_X86
/* ops/cpu/vmath512.h against vmath.h over all 2^32 float32 inputs, bit for bit (exp, exp of
 * min(x, 89) by the unclamped one, sigmoid, tanh, softmax's exp of min(x, 89)): prints how many
 * differ, and the first few. */
__attribute__((target("avx512f"))) static void v512_block(const float *x, float *out) {
  for (int i = 0; i < BLK; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    __mmask16 big = _mm512_cmp_ps_mask(v, _mm512_set1_ps(89.0f), _CMP_GT_OQ);
    _mm512_storeu_ps(out + i, ct__v512_expf(v));
    _mm512_storeu_ps(out + BLK + i,
                     ct__v512_expf_nonpos(_mm512_mask_mov_ps(v, big, _mm512_set1_ps(89.0f))));
    _mm512_storeu_ps(out + 2 * BLK + i, ct__v512_sigmoidf(v));
    _mm512_storeu_ps(out + 3 * BLK + i, ct__v512_tanhf(v));
    _mm512_storeu_ps(out + 4 * BLK + i,
                     ct__v512_expf_sm(_mm512_mask_mov_ps(v, big, _mm512_set1_ps(89.0f))));
  }
}

static void sweep512(void) {
  if (!__builtin_cpu_supports("avx512f")) {
    printf("avx512: this CPU has no AVX-512\n");
    return;
  }
  static float x[BLK], out[5 * BLK];
  long differ = 0;
  for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += BLK) {
    for (int i = 0; i < BLK; i++) {
      uint32_t u = (uint32_t)(base + (uint64_t)i);
      memcpy(&x[i], &u, 4);
    }
    v512_block(x, out);
    for (int i = 0; i < BLK; i++) {
      float v = x[i], vc = v > 89.0f ? 89.0f : v;
      float want[5] = {ct__vexpf(v), ct__vexpf_nonpos(vc), ct__vsigmoidf(v), ct__vtanhf(v),
                       ct__vexpf_sm(vc)};
      for (int f = 0; f < 5; f++) {
        if (memcmp(&want[f], &out[f * BLK + i], 4) != 0 && differ++ < 5) {
          printf("  function %d at %a: %a, vmath.h %a\n", f, (double)v,
                 (double)out[f * BLK + i], (double)want[f]);
        }
      }
    }
  }
  printf("avx512: %ld results differ from vmath.h's over all 2^32 inputs\n", differ);
}
#endif

int main(int argc, char **argv) {
  int which = argc > 1 ? (strcmp(argv[1], "f32") == 0     ? 1
                          : strcmp(argv[1], "f64") == 0    ? 2
                          : strcmp(argv[1], "avx512") == 0 ? 4
                          : strcmp(argv[1], "sm") == 0     ? 8
                                                           : 3)
                       : 3;
  if (which & 1) sweep32(0);
  if (which & 8) sweep32(4);
  if (which & 2) sweep64();
#ifdef CT__T16_X86
  if (which & 4) sweep512();
#endif
  return 0;
}
