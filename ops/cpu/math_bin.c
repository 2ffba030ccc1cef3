/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/math_bin.c: the CPU kernels of the math family's binary op types (max, min, pow, mod,
 * fmod, the shifts, the comparisons and logic), where, clip, prelu and cast_like
 * (ops/defs/math.c says what each computes).
 *
 * A binary kernel walks Out in order: one flat loop when X, Y and Out have the same number of
 * elements (then the same layout), else the broadcast walk of ops/defs/math.h. Arithmetic runs
 * in int64 or double (ops/cpu/math_kernels.h) and is stored back once. Integer division by zero
 * (mod, fmod) and an integer zero raised to a negative integer power are refused before Out is
 * written. */
#include <math.h>
#include <string.h>

#include "ops/cpu/math_kernels.h"

/* A binary kernel's work, split by ct__parallel_for: elements of Out. */
typedef struct bin_job {
  void *o;
  const void *x, *y;
  ct_dtype ydt;
  bool flat; /* X, Y and Out have Out's layout */
  ct_ddim od, in[2];
} bin_job;

static ct_status run_bin(const ct_kernel_ctx *c, ct__range_fn fn, ct_dtype out_dt) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0), *yt = ct_kernel_in(c, CT__IN_Y, 0);
  ct_tensor *ot = ct_kernel_out(c, CT__OUT, 0);
  bin_job j = {.x = ct__k_in_data(xt), .y = ct__k_in_data(yt), .ydt = yt->dtype,
               .flat = xt->numel == ot->numel && yt->numel == ot->numel,
               .od = ot->dims, .in = {xt->dims, yt->dims}};
  j.o = ct__k_out_data(c, CT__OUT, 0, out_dt);
  if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();
  ct__parallel_for(ot->numel, CT__GRAIN_MATH, fn, &j);
  return CT_OK;
}

/* The range of op NAME for dtype TAG: Out (OT, stored through OS) = EXPR of a = X and b = Y,
 * both read as C_TAG. */
#define BIN_RANGE(NAME, TAG, OT, OS, EXPR)                                      \
  static void NAME##_##TAG##_r(void *arg, int64_t lo, int64_t hi) {            \
    const bin_job *j = arg;                                                    \
    const T_##TAG *x = j->x, *y = j->y;                                        \
    OT *o = j->o;                                                              \
    if (j->flat) {                                                             \
      for (int64_t i = lo; i < hi; i++) {                                      \
        C_##TAG a = L_##TAG(x[i]), b = L_##TAG(y[i]);                          \
        o[i] = OS(EXPR);                                                       \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    ct__mwalk w;                                                               \
    ct__mwalk_init(&w, j->od, j->in, 2, lo);                                   \
    for (int64_t i = lo; i < hi; i++) {                                        \
      C_##TAG a = L_##TAG(x[w.off[0]]), b = L_##TAG(y[w.off[1]]);              \
      o[i] = OS(EXPR);                                                         \
      ct__mwalk_next(&w);                                                      \
    }                                                                          \
  }

/* Out of X's dtype. */
#define ARITH(TAG, NAME, EXPR)                                                 \
  BIN_RANGE(NAME, TAG, T_##TAG, S_##TAG, EXPR)                                 \
  static ct_status NAME##_##TAG(const ct_kernel_ctx *c) {                      \
    return run_bin(c, NAME##_##TAG##_r, DT_##TAG);                             \
  }
/* Out bool. */
#define CMP(TAG, NAME, EXPR)                                                   \
  BIN_RANGE(NAME, TAG, uint8_t, (uint8_t), EXPR)                               \
  static ct_status NAME##_##TAG(const ct_kernel_ctx *c) {                      \
    return run_bin(c, NAME##_##TAG##_r, CT_BOOL);                              \
  }

#define FOR_INTS(M, ...) M(i8, __VA_ARGS__) M(u8, __VA_ARGS__) M(i16, __VA_ARGS__) \
  M(i32, __VA_ARGS__) M(i64, __VA_ARGS__) M(u16, __VA_ARGS__) M(u32, __VA_ARGS__)
#define FOR_FLOATS(M, ...) M(f16, __VA_ARGS__) M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)
#define K_INTS(NAME)                                                                     \
  [CT_INT8] = NAME##_i8, [CT_UINT8] = NAME##_u8, [CT_INT16] = NAME##_i16,                \
  [CT_INT32] = NAME##_i32, [CT_INT64] = NAME##_i64, [CT_UINT16] = NAME##_u16,            \
  [CT_UINT32] = NAME##_u32
/* The integers with uint64, whose kernels are written apart (it runs in uint64). */
#define K_INTS64(NAME) K_INTS(NAME), [CT_UINT64] = NAME##_u64
#define K_FLOATS(NAME) [CT_FLOAT16] = NAME##_f16, [CT_FLOAT32] = NAME##_f32, [CT_FLOAT64] = NAME##_f64
#define EXPORT(name, ...) const ct_kernel_fn ct__cpu_math_##name[CT__N_DTYPES] = {__VA_ARGS__};

/* ---- max, min: a NaN wins (numpy's maximum and minimum) ---------------------------------- */

#define MAX_F(a, b) ((a) != (a) || (a) >= (b) ? (a) : (b))
#define MIN_F(a, b) ((a) != (a) || (a) <= (b) ? (a) : (b))
FOR_INTS(ARITH, max_, a >= b ? a : b)
ARITH(u64, max_, a >= b ? a : b)
FOR_FLOATS(ARITH, max_, MAX_F(a, b))
FOR_INTS(ARITH, min_, a <= b ? a : b)
ARITH(u64, min_, a <= b ? a : b)
FOR_FLOATS(ARITH, min_, MIN_F(a, b))
EXPORT(elementwise_max, K_INTS64(max_), K_FLOATS(max_))
EXPORT(elementwise_min, K_INTS64(min_), K_FLOATS(min_))

/* ---- mod (the divisor's sign) and fmod (the dividend's) ------------------------------------ */

static inline int64_t pymod_i(int64_t a, int64_t b) {
  if (b == -1) return 0; /* INT64_MIN % -1 would trap */
  int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
static inline double pymod_f(double a, double b) {
  double r = fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
FOR_INTS(ARITH, mod_raw, pymod_i(a, b))
FOR_FLOATS(ARITH, mod_, pymod_f(a, b))
FOR_INTS(ARITH, fmod_raw, b == -1 ? 0 : a % b)
/* Unsigned: mod and fmod agree. */
ARITH(u64, mod_raw, a % b)
ARITH(u64, fmod_raw, a % b)
FOR_FLOATS(ARITH, fmod_, fmod(a, b))

/* Refuses an integer Y holding 0 before anything is written. */
static ct_status no_zero_divisor(const ct_kernel_ctx *c) {
  const ct_tensor *yt = ct_kernel_in(c, CT__IN_Y, 0);
  const void *y = ct__k_in_data(yt);
  for (int64_t i = 0; i < yt->numel; i++) {
    if (ct__math_ldi(y, yt->dtype, i) != 0) continue;
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "input Y variable '%s' holds 0 at element %lld: integer division by "
                          "zero",
                          ct_kernel_in_name(c, CT__IN_Y, 0), (long long)i);
  }
  return CT_OK;
}
#define CHECKED(TAG, NAME)                                                       \
  static ct_status NAME##_##TAG(const ct_kernel_ctx *c) {                        \
    ct_status s = no_zero_divisor(c);                                            \
    return s == CT_OK ? NAME##raw_##TAG(c) : s;                                 \
  }
FOR_INTS(CHECKED, mod_)
FOR_INTS(CHECKED, fmod_)
CHECKED(u64, mod_)
CHECKED(u64, fmod_)
EXPORT(elementwise_mod, K_INTS64(mod_), K_FLOATS(mod_))
EXPORT(elementwise_fmod, K_INTS64(fmod_), K_FLOATS(fmod_))

/* ---- shifts (the unsigned integers): a shift past the width gives 0 ------------------------- */

#define SHIFTS(TAG, BITS)                                  \
  ARITH(TAG, shl_, b >= BITS ? 0 : S_##TAG(a << b))        \
  ARITH(TAG, shr_, b >= BITS ? 0 : a >> b)
SHIFTS(u8, 8)
SHIFTS(u16, 16)
SHIFTS(u32, 32)
SHIFTS(u64, 64)
#define K_SHIFTS(NAME)                                                               \
  [CT_UINT8] = NAME##_u8, [CT_UINT16] = NAME##_u16, [CT_UINT32] = NAME##_u32,        \
  [CT_UINT64] = NAME##_u64
EXPORT(bitwise_left_shift, K_SHIFTS(shl_))
EXPORT(bitwise_right_shift, K_SHIFTS(shr_))

/* ---- comparisons and logic ------------------------------------------------------------------ */

#define CMP_ALL(NAME, EXPR) FOR_INTS(CMP, NAME, EXPR) CMP(u64, NAME, EXPR) FOR_FLOATS(CMP, NAME, EXPR)
CMP_ALL(eq_, a == b)
CMP_ALL(ne_, a != b)
CMP_ALL(lt_, a < b)
CMP_ALL(le_, a <= b)
CMP_ALL(gt_, a > b)
CMP_ALL(ge_, a >= b)
/* bool: any nonzero byte is true. */
CMP(u8, beq_, (a != 0) == (b != 0))
CMP(u8, bne_, (a != 0) != (b != 0))
CMP(u8, and_, a != 0 && b != 0)
CMP(u8, or_, a != 0 || b != 0)
CMP(u8, xor_, (a != 0) != (b != 0))
EXPORT(equal, K_INTS64(eq_), K_FLOATS(eq_), [CT_BOOL] = beq__u8)
EXPORT(not_equal, K_INTS64(ne_), K_FLOATS(ne_), [CT_BOOL] = bne__u8)
EXPORT(less_than, K_INTS64(lt_), K_FLOATS(lt_))
EXPORT(less_equal, K_INTS64(le_), K_FLOATS(le_))
EXPORT(greater_than, K_INTS64(gt_), K_FLOATS(gt_))
EXPORT(greater_equal, K_INTS64(ge_), K_FLOATS(ge_))
EXPORT(logical_and, [CT_BOOL] = and__u8)
EXPORT(logical_or, [CT_BOOL] = or__u8)
EXPORT(logical_xor, [CT_BOOL] = xor__u8)

/* ---- pow: Y of any numeric dtype ------------------------------------------------------------ */

#define MIN_i8 INT8_MIN
#define MAX_i8 INT8_MAX
#define MIN_u8 0
#define MAX_u8 UINT8_MAX
#define MIN_i16 INT16_MIN
#define MAX_i16 INT16_MAX
#define MIN_i32 INT32_MIN
#define MAX_i32 INT32_MAX
#define MIN_i64 INT64_MIN
#define MAX_i64 INT64_MAX
#define MIN_u16 0
#define MAX_u16 UINT16_MAX
#define MIN_u32 0
#define MAX_u32 UINT32_MAX

/* base^e modulo 2^64. */
static inline uint64_t ipow_u(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  for (uint64_t k = e; k != 0; k >>= 1) {
    if (k & 1) r *= base;
    base *= base;
  }
  return r;
}

/* a^e for an integer exponent, wrapping; e < 0 truncates 1 / a^-e (a = 0 refused before). */
static inline int64_t ipow(int64_t a, int64_t e) {
  if (e < 0) return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;
  return (int64_t)ipow_u((uint64_t)a, (uint64_t)e);
}

/* a^Y[iy] for an integer Y of any integer dtype (a uint64 exponent read whole), wrapping. */
static inline int64_t ipow_y(int64_t a, const void *y, ct_dtype ydt, int64_t iy) {
  if (ydt == CT_UINT64) return (int64_t)ipow_u((uint64_t)a, ((const uint64_t *)y)[iy]);
  return ipow(a, ct__math_ldi(y, ydt, iy));
}

/* A double into [0, 2^64 - 1], truncated toward zero; NaN gives 0. */
static inline uint64_t sat_u64(double v) {
  return v != v || v <= 0 ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
}

/* A double into [lo, hi], truncated toward zero; NaN gives 0. */
static inline int64_t sat_i(double v, int64_t lo, int64_t hi) {
  if (v != v) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)v;
}

/* Element k of Y as a double (float exponents) or exactly (integer exponents). */
#define POW_RANGE(TAG, EXPR)                                                         \
  static void pow_##TAG##_r(void *arg, int64_t lo, int64_t hi) {                    \
    const bin_job *j = arg;                                                         \
    const T_##TAG *x = j->x;                                                        \
    T_##TAG *o = j->o;                                                              \
    bool yint = ct__math_is_int(j->ydt);                                            \
    ct__mwalk w;                                                                    \
    ct__mwalk_init(&w, j->od, j->in, 2, lo);                                        \
    for (int64_t i = lo; i < hi; i++) {                                             \
      int64_t ix = j->flat ? i : w.off[0], iy = j->flat ? i : w.off[1];             \
      C_##TAG a = L_##TAG(x[ix]);                                                   \
      o[i] = S_##TAG(EXPR);                                                         \
      ct__mwalk_next(&w);                                                           \
    }                                                                               \
  }
#define POW_INT(TAG, _)                                                                   \
  POW_RANGE(TAG, yint ? ipow_y(a, j->y, j->ydt, iy)                                       \
                      : sat_i(pow((double)a, ct__math_ld(j->y, j->ydt, iy)), MIN_##TAG,   \
                              MAX_##TAG))                                                 \
  static ct_status pow_##TAG(const ct_kernel_ctx *c) {                                    \
    ct_status s = pow_int_check(c);                                                       \
    return s == CT_OK ? run_bin(c, pow_##TAG##_r, DT_##TAG) : s;                          \
  }
#define POW_FLOAT(TAG, _)                                                                 \
  POW_RANGE(TAG, ct__pow_f(a, yint && j->ydt != CT_UINT64                                 \
                                   ? (double)ct__math_ldi(j->y, j->ydt, iy)               \
                                   : ct__math_ld(j->y, j->ydt, iy)))                      \
  static ct_status pow_##TAG(const ct_kernel_ctx *c) {                                    \
    return run_bin(c, pow_##TAG##_r, DT_##TAG);                                           \
  }

/* Integer X and Y: refuses 0 raised to a negative power (a division by zero). */
static ct_status pow_int_check(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0), *yt = ct_kernel_in(c, CT__IN_Y, 0);
  if (!ct__math_is_int(yt->dtype)) return CT_OK;
  const ct_tensor *ot = ct_kernel_out(c, CT__OUT, 0);
  ct_ddim in[2] = {xt->dims, yt->dims};
  ct__mwalk w;
  ct__mwalk_init(&w, ot->dims, in, 2, 0);
  const void *x = ct__k_in_data(xt), *y = ct__k_in_data(yt);
  for (int64_t i = 0; i < ot->numel; i++, ct__mwalk_next(&w)) {
    if (ct__math_ldi(x, xt->dtype, w.off[0]) != 0 || ct__math_ldi(y, yt->dtype, w.off[1]) >= 0) {
      continue;
    }
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "input X variable '%s' holds 0 where input Y variable '%s' holds a "
                          "negative power (Out element %lld): integer division by zero",
                          ct_kernel_in_name(c, CT__IN_X, 0), ct_kernel_in_name(c, CT__IN_Y, 0),
                          (long long)i);
  }
  return CT_OK;
}

FOR_INTS(POW_INT, _)
FOR_FLOATS(POW_FLOAT, _)
/* uint64: wrapping under an integer exponent (a negative one truncates 1 / a^-e: 1 for a = 1,
 * else 0), saturated under a float one. */
POW_RANGE(u64, yint ? (j->ydt == CT_UINT64 ? ipow_u(a, ((const uint64_t *)j->y)[iy])
                      : ct__math_ldi(j->y, j->ydt, iy) < 0 ? (uint64_t)(a == 1)
                      : ipow_u(a, (uint64_t)ct__math_ldi(j->y, j->ydt, iy)))
                   : sat_u64(pow((double)a, ct__math_ld(j->y, j->ydt, iy))))
static ct_status pow_u64(const ct_kernel_ctx *c) {
  ct_status s = pow_int_check(c);
  return s == CT_OK ? run_bin(c, pow_u64_r, CT_UINT64) : s;
}
EXPORT(elementwise_pow, K_INTS64(pow), K_FLOATS(pow))

/* ---- prelu: Alpha broadcast to X --------------------------------------------------------- */

FOR_FLOATS(ARITH, prelu_, a >= 0 ? a : b * a)
EXPORT(prelu, K_FLOATS(prelu_))

/* ---- where -------------------------------------------------------------------------------- */

typedef struct where_job {
  void *o;
  const void *c, *x, *y;
  size_t es;
  ct_ddim od, in[3];
} where_job;

static void where_r(void *arg, int64_t lo, int64_t hi) {
  const where_job *j = arg;
  const uint8_t *cond = j->c;
  const char *x = j->x, *y = j->y;
  char *o = j->o;
  ct__mwalk w;
  ct__mwalk_init(&w, j->od, j->in, 3, lo);
  for (int64_t i = lo; i < hi; i++, ct__mwalk_next(&w)) {
    const char *src = cond[w.off[0]] ? x + w.off[1] * (int64_t)j->es : y + w.off[2] * (int64_t)j->es;
    memcpy(o + i * (int64_t)j->es, src, j->es);
  }
}

static ct_status where_any(const ct_kernel_ctx *c) {
  const ct_tensor *ct_ = ct_kernel_in(c, CT__WHERE_COND, 0);
  const ct_tensor *xt = ct_kernel_in(c, CT__WHERE_X, 0), *yt = ct_kernel_in(c, CT__WHERE_Y, 0);
  ct_tensor *ot = ct_kernel_out(c, CT__OUT, 0);
  where_job j = {.c = ct__k_in_data(ct_), .x = ct__k_in_data(xt), .y = ct__k_in_data(yt),
                 .es = ct_dtype_size(xt->dtype), .od = ot->dims,
                 .in = {ct_->dims, xt->dims, yt->dims}};
  j.o = ct__k_out_data(c, CT__OUT, 0, xt->dtype);
  if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();
  ct__parallel_for(ot->numel, CT__GRAIN_MEM, where_r, &j);
  return CT_OK;
}
EXPORT(where, [0] = where_any)

/* ---- clip --------------------------------------------------------------------------------- */

typedef struct clip_job {
  void *o;
  const void *x;
  double flo, fhi;
  int64_t ilo, ihi;
} clip_job;

/* Bound `slot` (Min or Max) of the run: the input's element when wired, else the attribute. */
static double clip_bound(const ct_kernel_ctx *c, size_t slot, size_t attr) {
  if (ct_kernel_in_count(c, slot) == 0) return c->attr[attr].u.f;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  return ct__math_ld(ct__k_in_data(t), t->dtype, 0);
}

/* An integer bound: the input's element exactly, or the attribute rounded into [lo, hi] (min
 * up, max down, so that no value outside the real bound is kept). */
static int64_t clip_ibound(const ct_kernel_ctx *c, size_t slot, size_t attr, int64_t lo,
                           int64_t hi) {
  if (ct_kernel_in_count(c, slot) > 0) {
    const ct_tensor *t = ct_kernel_in(c, slot, 0);
    return ct__math_ldi(ct__k_in_data(t), t->dtype, 0);
  }
  double v = c->attr[attr].u.f;
  v = slot == CT__CLIP_MIN ? ceil(v) : floor(v);
  return sat_i(v, lo, hi);
}

#define CLIP_KERNEL(TAG, LOV, HIV, PREP)                                            \
  static void clip_##TAG##_r(void *arg, int64_t lo, int64_t hi) {                  \
    const clip_job *j = arg;                                                       \
    const T_##TAG *x = j->x;                                                       \
    T_##TAG *o = j->o;                                                             \
    for (int64_t i = lo; i < hi; i++) {                                            \
      C_##TAG v = L_##TAG(x[i]);                                                   \
      v = v < j->LOV ? j->LOV : v;                                                 \
      v = v > j->HIV ? j->HIV : v;                                                 \
      o[i] = S_##TAG(v);                                                           \
    }                                                                              \
  }                                                                                \
  static ct_status clip_##TAG(const ct_kernel_ctx *c) {                            \
    const ct_tensor *xt = ct_kernel_in(c, CT__CLIP_X, 0);                          \
    clip_job j = {.x = ct__k_in_data(xt)};                                         \
    PREP;                                                                          \
    j.o = ct__k_out_data(c, CT__OUT, 0, DT_##TAG);                                 \
    if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();                        \
    ct__parallel_for(xt->numel, CT__GRAIN_MEM, clip_##TAG##_r, &j);                \
    return CT_OK;                                                                  \
  }
#define CLIP_INT(TAG, _)                                                                     \
  CLIP_KERNEL(TAG, ilo, ihi,                                                                 \
              (j.ilo = clip_ibound(c, CT__CLIP_MIN, CT__CLIP_ATTR_MIN, MIN_##TAG, MAX_##TAG), \
               j.ihi = clip_ibound(c, CT__CLIP_MAX, CT__CLIP_ATTR_MAX, MIN_##TAG, MAX_##TAG)))
#define CLIP_FLOAT(TAG, _)                                                                   \
  CLIP_KERNEL(TAG, flo, fhi,                                                                 \
              (j.flo = clip_bound(c, CT__CLIP_MIN, CT__CLIP_ATTR_MIN),                       \
               j.fhi = clip_bound(c, CT__CLIP_MAX, CT__CLIP_ATTR_MAX)))
FOR_INTS(CLIP_INT, _)
FOR_FLOATS(CLIP_FLOAT, _)
EXPORT(clip, K_INTS(clip), K_FLOATS(clip))

/* ---- cast_like: corten's cast rules (floats to integers truncate toward zero and saturate,
 * NaN gives 0; to float16 and bfloat16 rounded once) ---------------------------------------- */

static inline int64_t clamp_i(int64_t n, int64_t lo, int64_t hi) {
  return n < lo ? lo : n > hi ? hi : n;
}

static void store_as(void *p, ct_dtype t, int64_t i, double f, int64_t n, bool from_int) {
  if (!from_int) n = sat_i(f, INT64_MIN, INT64_MAX);
  switch (t) {
    case CT_BOOL: ((uint8_t *)p)[i] = from_int ? n != 0 : f != 0; return;
    case CT_INT8: ((int8_t *)p)[i] = (int8_t)clamp_i(n, INT8_MIN, INT8_MAX); return;
    case CT_UINT8: ((uint8_t *)p)[i] = (uint8_t)clamp_i(n, 0, UINT8_MAX); return;
    case CT_INT16: ((int16_t *)p)[i] = (int16_t)clamp_i(n, INT16_MIN, INT16_MAX); return;
    case CT_INT32: ((int32_t *)p)[i] = (int32_t)clamp_i(n, INT32_MIN, INT32_MAX); return;
    case CT_INT64: ((int64_t *)p)[i] = n; return;
    case CT_UINT16: ((uint16_t *)p)[i] = (uint16_t)clamp_i(n, 0, UINT16_MAX); return;
    case CT_UINT32: ((uint32_t *)p)[i] = (uint32_t)clamp_i(n, 0, UINT32_MAX); return;
    case CT_UINT64: ((uint64_t *)p)[i] = from_int ? (n < 0 ? 0 : (uint64_t)n) : sat_u64(f); return;
    case CT_FLOAT16:
      ((uint16_t *)p)[i] = from_int ? ct__i64_to_half(n) : ct__f64_to_half(f);
      return;
    case CT_BFLOAT16:
      ((uint16_t *)p)[i] = from_int ? ct__i64_to_bf16(n) : ct__f64_to_bf16(f);
      return;
    case CT_FLOAT32: ((float *)p)[i] = from_int ? (float)n : (float)f; return;
    case CT_FLOAT64: ((double *)p)[i] = from_int ? (double)n : f; return;
    default: return;
  }
}

/* Element i of uint64 X stored as dtype t: above INT64_MAX, saturated into every integer dtype
 * (bool: true) and rounded once into the floats. */
static void store_u64(void *p, ct_dtype t, int64_t i, uint64_t u) {
  if (u <= INT64_MAX) {
    store_as(p, t, i, (double)(int64_t)u, (int64_t)u, true);
    return;
  }
  switch (t) {
    case CT_FLOAT16: ((uint16_t *)p)[i] = ct__u64_to_half(u); return;
    case CT_BFLOAT16: ((uint16_t *)p)[i] = ct__u64_to_bf16(u); return;
    case CT_FLOAT32: ((float *)p)[i] = (float)u; return;
    case CT_FLOAT64: ((double *)p)[i] = (double)u; return;
    default: store_as(p, t, i, 0, INT64_MAX, true); return;
  }
}

static ct_status cast_like_any(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__CL_X, 0);
  ct_dtype to = ct_kernel_in(c, CT__CL_LIKE, 0)->dtype;
  if (!ct__math_numeric(to) && to != CT_BOOL && to != CT_BFLOAT16) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "input Like variable '%s' is %s: cast_like "
                          "converts to bool, integer and float dtypes",
                          ct_kernel_in_name(c, CT__CL_LIKE, 0), ct_dtype_name(to));
  }
  void *o = ct__k_out_data(c, CT__OUT, 0, to);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const void *x = ct__k_in_data(xt);
  if (xt->dtype == to) {
    memmove(o, x, ct__tensor_bytes(xt, to));
    return CT_OK;
  }
  if (xt->dtype == CT_UINT64) {
    for (int64_t i = 0; i < xt->numel; i++) store_u64(o, to, i, ((const uint64_t *)x)[i]);
    return CT_OK;
  }
  bool from_int = ct__math_is_int(xt->dtype);
  for (int64_t i = 0; i < xt->numel; i++) {
    store_as(o, to, i, ct__math_ld(x, xt->dtype, i), from_int ? ct__math_ldi(x, xt->dtype, i) : 0,
             from_int);
  }
  return CT_OK;
}
EXPORT(cast_like, [0] = cast_like_any)
