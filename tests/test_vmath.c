/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_vmath.c: corten's own exp, log, tanh and sigmoid (ops/cpu/vmath.h): every special
 * case with its exact result, the accuracy over structured samples of the whole range against
 * the C library's double (float32) or long double (float64) functions, within the bounds of
 * docs/design/vmath.md, and the ops computing exactly these functions, packed as they run in the
 * kernels. (tests/vmath_sweep.c measures float32 over all 2^32 inputs; too long for a test.) */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "op_util.h"
#include "ops/cpu/vmath.h"
#include "ops/cpu/vmath512.h"

/* The error of y in ulps of the exact v, in a format of mant bits whose smallest normal exponent
 * is emin (the ulp of subnormals fixed); -1 when they disagree in kind (inf, NaN or 0). */
static double ulps(long double y, long double v, int mant, int emin) {
  if (isnan(v) || isnan(y)) return isnan(v) && isnan(y) ? 0 : -1;
  if (isinf(v) || isinf(y)) return y == v ? 0 : -1;
  if (v == 0) return y == 0 ? 0 : -1;
  int e;
  frexpl(v, &e);
  return (double)(fabsl(y - v) / ldexpl(1.0L, (e - 1 < emin ? emin : e - 1) - (mant - 1)));
}
static double ulps32(float y, double v) {
  if (fabs(v) > FLT_MAX) v = (double)(float)v; /* inf where a float rounds to it */
  return ulps(y, v, 24, -126);
}
static double ulps64(double y, long double v) {
  if (fabsl(v) > DBL_MAX) v = (double)v;
  return ulps(y, v, 53, -1022);
}

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint64_t bits64(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

/* softmax's exp's bound over all float32 inputs (vmath.md). */
#define SM_EXP_ULP 0.883

/* ---- Special cases ---------------------------------------------------------------------------- */

START_TEST(exp_special_cases) {
  ck_assert(ct__vexpf(0.0f) == 1.0f && ct__vexpf(-0.0f) == 1.0f);
  ck_assert(ct__vexp(0.0) == 1.0 && ct__vexp(-0.0) == 1.0);
  ck_assert(isinf(ct__vexpf(INFINITY)) && ct__vexpf(INFINITY) > 0);
  ck_assert(isinf(ct__vexp(INFINITY)) && ct__vexp(INFINITY) > 0);
  ck_assert(ct__vexpf(-INFINITY) == 0.0f && !signbit(ct__vexpf(-INFINITY)));
  ck_assert(ct__vexp(-INFINITY) == 0.0 && !signbit(ct__vexp(-INFINITY)));
  ck_assert(isnan(ct__vexpf(NAN)) && isnan(ct__vexp(NAN)));
  /* Overflow: exp(88.72284) > FLT_MAX; the largest input below it stays finite. */
  ck_assert(isinf(ct__vexpf(88.72284f)) && isinf(ct__vexpf(FLT_MAX)));
  ck_assert(isfinite(ct__vexpf(88.72283f)));
  ck_assert(isinf(ct__vexp(709.79)) && isinf(ct__vexp(DBL_MAX)));
  ck_assert(isfinite(ct__vexp(709.78)));
  /* Underflow: subnormal results, rounded once, then 0. */
  ck_assert(ct__vexpf(-103.0f) == 0x1p-149f); /* 1.32 x 2^-149 */
  ck_assert(ct__vexpf(-90.0f) == 0x1.1d85p-130f); /* 584744.28 x 2^-149 */
  ck_assert(ct__vexpf(-104.0f) == 0.0f && ct__vexpf(-FLT_MAX) == 0.0f);
  ck_assert(ct__vexp(-745.0) == 0x1p-1074); /* 0.57 x 2^-1074 */
  ck_assert(ct__vexp(-746.0) == 0.0 && ct__vexp(-DBL_MAX) == 0.0);
  /* e: correctly rounded in float32, within the bound in float64. */
  ck_assert(ct__vexpf(1.0f) == 0x1.5bf0a8p+1f);
  ck_assert(ulps64(ct__vexp(1.0), expl(1.0L)) <= 1.0);
}
END_TEST

/* softmax's exp (fused multiply-adds): the same special values and underflow. */
START_TEST(softmax_exp_special_cases) {
  ck_assert(ct__vexpf_sm(0.0f) == 1.0f && ct__vexpf_sm(-0.0f) == 1.0f);
  ck_assert(ct__vexpf_sm(-INFINITY) == 0.0f && !signbit(ct__vexpf_sm(-INFINITY)));
  ck_assert(isnan(ct__vexpf_sm(NAN)));
  ck_assert(ct__vexpf_sm(-103.0f) == 0x1p-149f);
  ck_assert(ct__vexpf_sm(-90.0f) == 0x1.1d85p-130f);
  ck_assert(ct__vexpf_sm(-104.0f) == 0.0f && ct__vexpf_sm(-FLT_MAX) == 0.0f);
  ck_assert(ct__vexpf_sm(1.0f) == 0x1.5bf0a8p+1f);
  ck_assert(isfinite(ct__vexpf_sm(88.72283f)) && isinf(ct__vexpf_sm(89.0f)));
}
END_TEST

START_TEST(log_special_cases) {
  ck_assert(isinf(ct__vlogf(0.0f)) && ct__vlogf(0.0f) < 0 && ct__vlogf(-0.0f) < 0);
  ck_assert(isinf(ct__vlog(0.0)) && ct__vlog(0.0) < 0 && isinf(ct__vlog(-0.0)));
  ck_assert(isnan(ct__vlogf(-1.0f)) && isnan(ct__vlogf(-INFINITY)) && isnan(ct__vlogf(NAN)));
  ck_assert(isnan(ct__vlog(-1.0)) && isnan(ct__vlog(-INFINITY)) && isnan(ct__vlog(NAN)));
  ck_assert(isnan(ct__vlog(-0x1p-1074)));
  ck_assert(isinf(ct__vlogf(INFINITY)) && ct__vlogf(INFINITY) > 0);
  ck_assert(isinf(ct__vlog(INFINITY)) && ct__vlog(INFINITY) > 0);
  ck_assert(ct__vlogf(1.0f) == 0.0f && !signbit(ct__vlogf(1.0f)));
  ck_assert(ct__vlog(1.0) == 0.0 && !signbit(ct__vlog(1.0)));
  ck_assert(ct__vlog(2.0) == 0x1.62e42fefa39efp-1); /* ln 2, correctly rounded */
  ck_assert(ct__vlogf(2.0f) == 0x1.62e43p-1f);
  /* Subnormal inputs: ln(2^-1074) = -744.44007192138126..., ln(2^-149) = -103.27892990343185. */
  ck_assert(ulps64(ct__vlog(0x1p-1074), logl(0x1p-1074L)) <= 0.5);
  ck_assert(ct__vlogf(0x1p-149f) == -0x1.9d1dap+6f);
  ck_assert(ct__vlog(DBL_MAX) == 0x1.62e42fefa39efp+9);
}
END_TEST

START_TEST(tanh_and_sigmoid_special_cases) {
  ck_assert(ct__vtanhf(0.0f) == 0.0f && !signbit(ct__vtanhf(0.0f)));
  ck_assert(ct__vtanhf(-0.0f) == 0.0f && signbit(ct__vtanhf(-0.0f)));
  ck_assert(ct__vtanhf(INFINITY) == 1.0f && ct__vtanhf(-INFINITY) == -1.0f);
  ck_assert(ct__vtanhf(10.0f) == 1.0f && ct__vtanhf(-10.0f) == -1.0f);
  ck_assert(isnan(ct__vtanhf(NAN)));
  ck_assert(ct__vtanhf(0x1p-20f) == 0x1p-20f && ct__vtanhf(-0x1p-149f) == -0x1p-149f);
  ck_assert(ct__vsigmoidf(0.0f) == 0.5f && ct__vsigmoid(0.0) == 0.5);
  ck_assert(ct__vsigmoidf(INFINITY) == 1.0f && ct__vsigmoid(INFINITY) == 1.0);
  ck_assert(ct__vsigmoidf(-INFINITY) == 0.0f && ct__vsigmoid(-INFINITY) == 0.0);
  ck_assert(ct__vsigmoidf(-200.0f) == 0.0f && ct__vsigmoidf(20.0f) == 1.0f);
  ck_assert(isnan(ct__vsigmoidf(NAN)) && isnan(ct__vsigmoid(NAN)));
}
END_TEST

START_TEST(erf_special_cases) {
  ck_assert(ct__verff(0.0f) == 0.0f && !signbit(ct__verff(0.0f)));
  ck_assert(ct__verff(-0.0f) == 0.0f && signbit(ct__verff(-0.0f)));
  ck_assert(ct__verff(INFINITY) == 1.0f && ct__verff(-INFINITY) == -1.0f);
  ck_assert(ct__verff(3.92f) == 1.0f && ct__verff(-100.0f) == -1.0f);
  ck_assert(isnan(ct__verff(NAN)));
  ck_assert(ct__verff(0x1p-149f) == 0x1p-149f);   /* 2/sqrt(pi) x rounds back to x */
  ck_assert(ct__verff(1.0f) == 0x1.af767ap-1f);   /* erf(1) = 0.8427007929... */
  ck_assert(ct__verff(-0.5f) == -0x1.0a7ef6p-1f); /* erf(0.5) = 0.5204998778... */
  /* The first input of the middle and of the last polynomial, and one near 1 from below. */
  ck_assert(ct__verff(0.75f) == 0x1.6c1c98p-1f && ct__verff(1.5f) == 0x1.eea556p-1f);
  ck_assert(ct__verff(3.9f) == 0x1.fffffep-1f);
  /* The worst input over all float32 (0.826 ulp): the float below the correctly rounded one. */
  ck_assert(ct__verff(0x1.7ce614p-1f) == 0x1.6a1bd4p-1f);
}
END_TEST

/* ---- Accuracy ----------------------------------------------------------------------------------
 * float32: every 16411th bit pattern (262,000 inputs, every exponent), exp and log within 1 ulp
 * of the double function, tanh within 1.1, erf within 0.83 and softmax's exp (of min(x, 89))
 * within SM_EXP_ULP (their bounds over all inputs, vmath.md), no result of the wrong kind.
 * float64: 200,000 random patterns, for exp of either sign with exponents up to 2^9 (past the
 * points where it turns inf or 0), for log over all positive doubles, within 1 ulp of the long
 * double function. */

START_TEST(float32_within_the_bounds) {
  double worst[5] = {0, 0, 0, 0, 0};
  for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 16411) {
    float x = f32_of((uint32_t)u), xs = x > 89.0f ? 89.0f : x;
    double e[5] = {ulps32(ct__vexpf(x), exp((double)x)), ulps32(ct__vlogf(x), log((double)x)),
                   ulps32(ct__vtanhf(x), tanh((double)x)), ulps32(ct__verff(x), erf((double)x)),
                   ulps32(ct__vexpf_sm(xs), exp((double)xs))};
    for (int k = 0; k < 5; k++) {
      ck_assert_msg(e[k] >= 0, "function %d at %a: a result of the wrong kind", k, (double)x);
      if (e[k] > worst[k]) worst[k] = e[k];
    }
  }
  ck_assert_msg(worst[0] <= 1.0 && worst[1] <= 1.0 && worst[2] <= 1.1 && worst[3] <= 0.83 &&
                    worst[4] <= SM_EXP_ULP,
                "exp %g log %g tanh %g erf %g softmax's exp %g ulp", worst[0], worst[1],
                worst[2], worst[3], worst[4]);
}
END_TEST

START_TEST(float64_within_one_ulp) {
  double worst[2] = {0, 0};
  uint64_t r = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 200000; i++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    double xl, xe;
    uint64_t ul = r >> 1, ue = (r & 0x800fffffffffffffu) | ((uint64_t)(i % 1033) << 52);
    memcpy(&xl, &ul, sizeof xl);
    memcpy(&xe, &ue, sizeof xe);
    double el = ulps64(ct__vlog(xl), logl(xl)), ee = ulps64(ct__vexp(xe), expl(xe));
    ck_assert_msg(el >= 0 && ee >= 0, "a result of the wrong kind at %a or %a", xl, xe);
    if (ee > worst[0]) worst[0] = ee;
    if (el > worst[1]) worst[1] = el;
  }
  ck_assert_msg(worst[0] <= 1.0 && worst[1] <= 1.0, "exp %g log %g ulp", worst[0], worst[1]);
}
END_TEST

/* softmax's exp (no clamp from above) gives exp's bits wherever softmax calls it: every 4099th
 * float32 bit pattern up to 89 (all negative ones, 0 and the positive ones below 89), -inf,
 * NaN; float64 at 100,000 random inputs in [-800, 710). */
START_TEST(exp_nonpos_gives_exp_bits) {
  for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 4099) {
    float x = f32_of((uint32_t)u);
    if (x > 89.0f) continue;
    ck_assert_msg(f32_bits(ct__vexpf_nonpos(x)) == f32_bits(ct__vexpf(x)), "at %a", (double)x);
  }
  ck_assert(ct__vexpf_nonpos(-INFINITY) == 0.0f && isnan(ct__vexpf_nonpos(NAN)));
  ck_assert(ct__vexp_nonpos(-INFINITY) == 0.0 && isnan(ct__vexp_nonpos(NAN)));
  uint64_t r = 0x2545f4914f6cdd1du;
  for (int i = 0; i < 100000; i++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    double x = (double)(r >> 11) * 0x1p-53 * 1510.0 - 800.0;
    ck_assert_msg(bits64(ct__vexp_nonpos(x)) == bits64(ct__vexp(x)), "at %a", x);
  }
}
END_TEST

/* ---- vmath512.h: the same bits on AVX-512 --------------------------------------------------- */

#ifdef CT__T16_X86
/* x[0 .. n) (n a multiple of 16) through the AVX-512 functions: exp, exp of min(x, 89) by the
 * unclamped one, sigmoid, tanh and softmax's exp of min(x, 89). */
__attribute__((target("avx512f"))) static void v512_run(const float *x, int64_t n, float *e,
                                                       float *enp, float *sg, float *th,
                                                       float *esm) {
  for (int64_t i = 0; i < n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_ps(e + i, ct__v512_expf(v));
    __mmask16 big = _mm512_cmp_ps_mask(v, _mm512_set1_ps(89.0f), _CMP_GT_OQ);
    _mm512_storeu_ps(enp + i, ct__v512_expf_nonpos(_mm512_mask_mov_ps(v, big,
                                                                      _mm512_set1_ps(89.0f))));
    _mm512_storeu_ps(sg + i, ct__v512_sigmoidf(v));
    _mm512_storeu_ps(th + i, ct__v512_tanhf(v));
    _mm512_storeu_ps(esm + i, ct__v512_expf_sm(_mm512_mask_mov_ps(v, big, _mm512_set1_ps(89.0f))));
  }
}
#endif

/* vmath512.h's exp, sigmoid, tanh and softmax's exp give vmath.h's bits (NaN payloads
 * included): every 4099th float32 pattern, then the edges of each function's ranges and the
 * special values, each with its neighbours. (vmath_sweep avx512 compares all 2^32.) */
START_TEST(avx512_functions_give_the_same_bits) {
#ifdef CT__T16_X86
  if (!__builtin_cpu_supports("avx512f")) return;
  enum { CAP = (1 << 20) + 1024 };
  float *x = xmalloc(CAP, 4), *out = xmalloc(5 * (int64_t)CAP, 4);
  int64_t n = 0;
  for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 4099) x[n++] = f32_of((uint32_t)u);
  static const float edges[] = {-104.0f, 89.0f, 0.75f, 9.5f, 0.0f, 0x1p-149f, 0x1p-126f,
                                FLT_MAX, INFINITY, -87.33655f, 88.72284f, 1.0f};
  for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++) {
    for (int sg = 0; sg < 2; sg++) {
      uint32_t b = f32_bits(sg ? -edges[k] : edges[k]);
      for (int d = -20; d <= 20; d++) x[n++] = f32_of(b + (uint32_t)d);
    }
  }
  static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u,
                                  0x7fffffffu, 0xffffffffu};
  for (size_t k = 0; k < sizeof nans / sizeof nans[0]; k++) x[n++] = f32_of(nans[k]);
  while (n % 16 != 0) x[n++] = 0.5f;
  ck_assert(n <= CAP);
  float *e = out, *enp = out + CAP, *sg = out + 2 * CAP, *th = out + 3 * CAP,
        *esm = out + 4 * CAP;
  v512_run(x, n, e, enp, sg, th, esm);
  int64_t bad = 0; /* counted, then one assertion: Check's per-call bookkeeping is slow */
  float first = 0;
  for (int64_t i = 0; i < n; i++) {
    const float v = x[i], vc = v > 89.0f ? 89.0f : v;
    bool same = f32_bits(e[i]) == f32_bits(ct__vexpf(v)) &&
                f32_bits(enp[i]) == f32_bits(ct__vexpf_nonpos(vc)) &&
                f32_bits(sg[i]) == f32_bits(ct__vsigmoidf(v)) &&
                f32_bits(th[i]) == f32_bits(ct__vtanhf(v)) &&
                f32_bits(esm[i]) == f32_bits(ct__vexpf_sm(vc));
    if (!same && bad++ == 0) first = v;
  }
  ck_assert_msg(bad == 0, "%lld inputs differ, the first %a", (long long)bad, (double)first);
  free(x);
  free(out);
#endif
}
END_TEST

/* ---- The ops compute exactly these functions, packed ------------------------------------------ */

/* The special inputs first, in the kernels' widest packed steps (16 float32 lanes): infinities,
 * NaN, -0, a float32 subnormal, a float64 subnormal (0 as float32), the largest values; then
 * -125 .. 125 by sixteenths. */
enum { N_SPREAD = 4001, N_SPECIAL = 8 };
static double spread(int64_t i) {
  static const double special[N_SPECIAL] = {INFINITY, -INFINITY, NAN,    -0.0,
                                            1e-40,    1e-310,    3e38, 1e308};
  return i < N_SPECIAL ? special[i] : (double)(i - N_SPECIAL) * 0.0625 - 125.0;
}

static void check_op(const char *type, ct_dtype dt) {
  enum { N = N_SPREAD + N_SPECIAL };
  ct_scope *s = ct_scope_new();
  void *xs = xmalloc(N, 8); /* by hand: put_fn insists each value round-trips, NaN does not */
  for (int64_t i = 0; i < N; i++) {
    if (dt == CT_FLOAT32) ((float *)xs)[i] = (float)spread(i);
    else ((double *)xs)[i] = spread(i);
  }
  put(s, "x", dt, CT_DIMS(N), xs);
  free(xs);
  ct_op *op = op_x(type, "x", "y");
  run(op, s);
  const void *y = result(s, "y", dt, CT_DIMS(N));
  for (int64_t i = 0; i < N; i++) {
    double x = spread(i), want;
    if (dt == CT_FLOAT32) {
      float xf = (float)x;
      want = !strcmp(type, "exp")       ? ct__vexpf(xf)
             : !strcmp(type, "log")     ? ct__vlogf(xf)
             : !strcmp(type, "tanh")    ? ct__vtanhf(xf)
             : !strcmp(type, "erf")     ? ct__verff(xf)
                                        : ct__vsigmoidf(xf);
      ck_assert_msg(f32_bits(((const float *)y)[i]) == f32_bits((float)want),
                    "%s(%a): %a, expected %a", type, x, ((const float *)y)[i], want);
    } else {
      want = !strcmp(type, "exp") ? ct__vexp(x) : !strcmp(type, "log") ? ct__vlog(x)
                                                                       : ct__vsigmoid(x);
      ck_assert_msg(bits64(((const double *)y)[i]) == bits64(want), "%s(%a): %a, expected %a",
                    type, x, ((const double *)y)[i], want);
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(ops_give_the_same_bits) {
  static const char *const f32[] = {"exp", "log", "tanh", "sigmoid", "erf"};
  for (int k = 0; k < 5; k++) check_op(f32[k], CT_FLOAT32);
  for (int k = 0; k < 4; k++) {
    if (k != 2) check_op(f32[k], CT_FLOAT64); /* float64 tanh is the C library's */
  }
}
END_TEST

static Suite *vmath_suite(void) {
  Suite *s = suite_create("vmath");
  CT_ADD_TEST(s, exp_special_cases);
  CT_ADD_TEST(s, softmax_exp_special_cases);
  CT_ADD_TEST(s, log_special_cases);
  CT_ADD_TEST(s, tanh_and_sigmoid_special_cases);
  CT_ADD_TEST(s, erf_special_cases);
  CT_ADD_TEST(s, float32_within_the_bounds);
  CT_ADD_TEST(s, float64_within_one_ulp);
  CT_ADD_TEST(s, exp_nonpos_gives_exp_bits);
  CT_ADD_TEST(s, avx512_functions_give_the_same_bits);
  CT_ADD_TEST(s, ops_give_the_same_bits);
  return s;
}

CT_TEST_MAIN(vmath_suite)
