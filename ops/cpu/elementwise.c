/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/elementwise.c: the CPU kernels of elementwise_{add,sub,mul,div} with numpy
 * broadcasting, the unary activations (relu, sigmoid, tanh, exp, log), scale, cast and assign.
 *
 * A binary op walks the broadcast plan of ops/defs/elementwise.c (ct__plan_bcast). The
 * innermost loop is specialised for strides (1,1), (1,0) and (0,1) so the compiler vectorises it.
 * Integer arithmetic wraps (computed unsigned) and integer division by zero is an error. */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h" /* ct__gemm_avx512: the kernels' AVX-512 switch */
#include "ops/cpu/parallel.h"
#include "ops/cpu/stream.h"
#include "ops/cpu/vmath.h"
#include "ops/cpu/vmath512.h"
#include "ops/defs.h"
#include "ops/half.h"

/* ---- Broadcast walk -------------------------------------------------------------------------- */

typedef ct__bcast_plan bcast_plan; /* ops/defs.h: every backend walks the same plan */

/* Calls INNER(o, x, y, n, sx, sy) over innermost runs row0 to row1 - 1 of the plan (a row: one
 * innermost run, d[rank - 1] elements of Out). */
#define BCAST_WALK(T, plan, o, x, y, row0, row1, INNER)                           \
  do {                                                                            \
    int r_ = (plan).rank;                                                         \
    int64_t n_ = (plan).d[r_ - 1], idx_[CT_MAX_RANK] = {0}, rem_ = (row0);        \
    int64_t ox_ = 0, oy_ = 0;                                                     \
    for (int k_ = r_ - 2; k_ >= 0; k_--) {                                        \
      idx_[k_] = rem_ % (plan).d[k_];                                             \
      rem_ /= (plan).d[k_];                                                       \
      ox_ += idx_[k_] * (plan).sx[k_];                                            \
      oy_ += idx_[k_] * (plan).sy[k_];                                            \
    }                                                                             \
    T *op_ = (o) + (row0)*n_;                                                     \
    for (int64_t row_ = (row0); row_ < (row1); row_++) {                          \
      INNER(op_, (x) + ox_, (y) + oy_, n_, (plan).sx[r_ - 1], (plan).sy[r_ - 1]); \
      op_ += n_;                                                                  \
      for (int k_ = r_ - 2; k_ >= 0; k_--) {                                      \
        ox_ += (plan).sx[k_];                                                     \
        oy_ += (plan).sy[k_];                                                     \
        if (++idx_[k_] < (plan).d[k_]) break;                                     \
        ox_ -= (plan).sx[k_] * (plan).d[k_];                                      \
        oy_ -= (plan).sy[k_] * (plan).d[k_];                                      \
        idx_[k_] = 0;                                                             \
      }                                                                           \
    }                                                                             \
  } while (0)

/* A binary kernel's work, split by ct__parallel_for: elements of Out (plan NULL) or rows of the
 * broadcast plan; stream: Out is at least the last-level cache's size (ops/cpu/stream.h). */
typedef struct bin_job {
  void *o;
  const void *x, *y;
  const bcast_plan *plan;
  bool stream;
} bin_job;

/* One binary kernel per (op, dtype): T the element type, U its unsigned twin for wrapping
 * integer arithmetic (T itself for floats), EXPR over a and b. NT defines NAME##_nt, the inner
 * loop with streaming stores (BIN_STREAM, float types) or none (BIN_PLAIN). */
#define BINARY_KERNEL_C(NAME, T, EXPR, NT)                                                  \
  static inline T NAME##_f(T a, T b) { return (EXPR); }                                     \
  static void NAME##_inner(T *o, const T *x, const T *y, int64_t n, int64_t sx,             \
                           int64_t sy) {                                                    \
    if (sx == 1 && sy == 1) {                                                               \
      CT__SIMD for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(x[i], y[i]);                 \
    } else if (sy == 0) {                                                                   \
      T b = y[0];                                                                           \
      CT__SIMD for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(x[i * sx], b);               \
    } else if (sx == 0) {                                                                   \
      T a = x[0];                                                                           \
      CT__SIMD for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(a, y[i * sy]);               \
    } else {                                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(x[i * sx], y[i * sy]);                \
    }                                                                                       \
  }                                                                                         \
  /* The equal-shapes loop alone, out of line: GCC aligns the head of a function's hottest  \
   * loop, and inlined into the kernel this loop was not the hottest (at -falign-loops=32   \
   * its 25 bytes then crossed a 64-byte line in some builds: 1.35x the time in L2). */      \
  __attribute__((noinline)) static void NAME##_flat(T *o, const T *x, const T *y,          \
                                                    int64_t n) {                            \
    CT__SIMD for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(x[i], y[i]);                   \
  }                                                                                         \
  NT(NAME, T, EXPR)                                                                         \
  /* The streaming range, out of line: the plain range stays small enough to inline into the \
   * kernel, which a one-element op feels. */                                               \
  __attribute__((noinline)) static void NAME##_range_nt(const bin_job *j, int64_t b,        \
                                                        int64_t e) {                        \
    const T *x = j->x, *y = j->y;                                                           \
    T *o = j->o;                                                                            \
    if (j->plan == NULL) NAME##_nt(o + b, x + b, y + b, e - b, 1, 1);                       \
    else BCAST_WALK(T, *j->plan, o, x, y, b, e, NAME##_nt);                                 \
    ct__stream_fence();                                                                     \
  }                                                                                         \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                               \
    const bin_job *j = arg;                                                                 \
    const T *x = j->x, *y = j->y;                                                           \
    T *o = j->o;                                                                            \
    if (NAME##_nt_ok && CT__UNLIKELY(j->stream)) NAME##_range_nt(j, b, e);                  \
    else if (j->plan == NULL) NAME##_flat(o + b, x + b, y + b, e - b);                      \
    else BCAST_WALK(T, *j->plan, o, x, y, b, e, NAME##_inner);                              \
  }                                                                                         \
  /* Under broadcasting, out of line: the plan's frame stays off the equal-shapes path. */    \
  __attribute__((noinline)) static void NAME##_bcast(const ct_kernel_ctx *c, bin_job *j,    \
                                                     const ct_tensor *xt,                   \
                                                     const ct_tensor *yt, int64_t n) {      \
    bcast_plan plan;                                                                        \
    ct__plan_bcast(xt->dims, yt->dims, ct_kernel_out(c, CT__OUT, 0)->dims, &plan);          \
    j->plan = &plan;                                                                        \
    int64_t row = plan.d[plan.rank - 1];                                                    \
    ct__parallel_for(n / row, CT__GRAIN_MEM / row + 1, NAME##_range, j);                    \
  }                                                                                         \
  static ct_status NAME(const ct_kernel_ctx *c) {                                           \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0), *yt = ct_kernel_in(c, CT__IN_Y, 0); \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                         \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                   \
    int64_t n = ct_kernel_out(c, CT__OUT, 0)->numel;                                        \
    bool stream = ct__stream_wanted((size_t)n * sizeof(T));                                 \
    const T *x = ct__k_in_data(xt), *y = ct__k_in_data(yt);                                 \
    if (CT__LIKELY(xt->numel == n && yt->numel == n)) {                                     \
      /* Work for one thread, plain: the loop, called from here with no job built (a         \
       * one-element op's whole cost is what surrounds its loop). */                        \
      if (n < 2 * CT__GRAIN_MEM && !stream) {                                               \
        NAME##_flat(o, x, y, n);                                                            \
        return CT_OK;                                                                       \
      }                                                                                     \
      bin_job j = {o, x, y, NULL, stream};                                                  \
      ct__parallel_for_job(n, CT__GRAIN_MEM, NAME##_range, &j);                             \
      return CT_OK;                                                                         \
    }                                                                                       \
    if (n == 0) return CT_OK;                                                               \
    bin_job j = {o, x, y, NULL, stream};                                                    \
    NAME##_bcast(c, &j, xt, yt, n);                                                         \
    return CT_OK;                                                                           \
  }

#define BIN_PLAIN(NAME, T, EXPR)                                                        \
  enum { NAME##_nt_ok = 0 };                                                            \
  static inline void NAME##_nt(T *o, const T *x, const T *y, int64_t n, int64_t sx,     \
                               int64_t sy) {                                            \
    NAME##_inner(o, x, y, n, sx, sy);                                                   \
  }
#define BINARY_KERNEL(NAME, T, EXPR) BINARY_KERNEL_C(NAME, T, EXPR, BIN_PLAIN)

#if CT__STREAM
/* The inner loop with streaming stores (ops/cpu/stream.h) for the unit and broadcast strides:
 * EXPR on SSE vectors of T, plain stores before Out's first 16-byte boundary and after its
 * last whole vector; other strides store plainly. The range ends with the fence. */
#define BIN_STREAM(NAME, T, EXPR)                                                           \
  enum { NAME##_nt_ok = 1 };                                                                \
  static void NAME##_nt(T *o, const T *x, const T *y, int64_t n, int64_t sx, int64_t sy) {  \
    if (((sx | sy) & ~(int64_t)1) != 0 || (sx | sy) == 0) {                                 \
      NAME##_inner(o, x, y, n, sx, sy);                                                     \
      return;                                                                               \
    }                                                                                       \
    if (sx == 1 && sy == 1) {                                                               \
      CT__STREAM_LOOP(o, 0, n, o[i] = NAME##_f(x[i], y[i]), {                               \
        CT__VTYPE(T) a = CT__VLOAD(x + i);                                                  \
        CT__VTYPE(T) b = CT__VLOAD(y + i);                                                  \
        CT__VSTREAM(o + i, (EXPR));                                                         \
      });                                                                                   \
    } else if (sy == 0) {                                                                   \
      CT__VTYPE(T) b = CT__VSET1(y[0]);                                                     \
      CT__STREAM_LOOP(o, 0, n, o[i] = NAME##_f(x[i], y[0]), {                               \
        CT__VTYPE(T) a = CT__VLOAD(x + i);                                                  \
        CT__VSTREAM(o + i, (EXPR));                                                         \
      });                                                                                   \
    } else {                                                                                \
      CT__VTYPE(T) a = CT__VSET1(x[0]);                                                     \
      CT__STREAM_LOOP(o, 0, n, o[i] = NAME##_f(x[0], y[i]), {                               \
        CT__VTYPE(T) b = CT__VLOAD(y + i);                                                  \
        CT__VSTREAM(o + i, (EXPR));                                                         \
      });                                                                                   \
    }                                                                                       \
  }
#else
#define BIN_STREAM BIN_PLAIN
#endif

BINARY_KERNEL_C(add_f32, float, a + b, BIN_STREAM)
BINARY_KERNEL_C(add_f64, double, a + b, BIN_STREAM)
BINARY_KERNEL(add_i32, int32_t, CT__WRAP(uint32_t, int32_t, a, +, b))
BINARY_KERNEL(add_i64, int64_t, CT__WRAP(uint64_t, int64_t, a, +, b))
BINARY_KERNEL_C(sub_f32, float, a - b, BIN_STREAM)
BINARY_KERNEL_C(sub_f64, double, a - b, BIN_STREAM)
BINARY_KERNEL(sub_i32, int32_t, CT__WRAP(uint32_t, int32_t, a, -, b))
BINARY_KERNEL(sub_i64, int64_t, CT__WRAP(uint64_t, int64_t, a, -, b))
BINARY_KERNEL_C(mul_f32, float, a * b, BIN_STREAM)
BINARY_KERNEL_C(mul_f64, double, a * b, BIN_STREAM)
BINARY_KERNEL(mul_i32, int32_t, CT__WRAP(uint32_t, int32_t, a, *, b))
BINARY_KERNEL(mul_i64, int64_t, CT__WRAP(uint64_t, int64_t, a, *, b))
BINARY_KERNEL_C(div_f32, float, a / b, BIN_STREAM)
BINARY_KERNEL_C(div_f64, double, a / b, BIN_STREAM)
/* Integer division truncates toward zero; MIN / -1 wraps to MIN; a zero divisor is refused
 * before the loop runs (div_int_check), so b is never 0 here. */
BINARY_KERNEL(div_i32_raw, int32_t,
              b == -1 ? CT__WRAP(uint32_t, int32_t, 0, -, a) : (int32_t)(a / b))
BINARY_KERNEL(div_i64_raw, int64_t,
              b == -1 ? CT__WRAP(uint64_t, int64_t, 0, -, a) : (int64_t)(a / b))

#define DIV_INT_KERNEL(NAME, T)                                                           \
  static ct_status NAME(const ct_kernel_ctx *c) {                                         \
    const ct_tensor *yt = ct_kernel_in(c, CT__IN_Y, 0);                                   \
    if (yt->dtype == c->dtype) {                                                          \
      const T *y = ct__k_in_data(yt);                                                     \
      for (int64_t i = 0; i < yt->numel; i++) {                                           \
        if (y[i] == 0) {                                                                  \
          return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,                               \
                                "input Y variable '%s' holds 0 at element %lld: integer " \
                                "division by zero",                                       \
                                ct_kernel_in_name(c, CT__IN_Y, 0), (long long)i);         \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    return NAME##_raw(c);                                                                 \
  }
DIV_INT_KERNEL(div_i32, int32_t)
DIV_INT_KERNEL(div_i64, int64_t)

/* The narrow integers (ONNX's uint8, int8 and int16 arithmetic): computed in uint32_t and
 * wrapped into T, as numpy wraps; division truncates toward zero and MIN / -1 wraps to MIN. */
#define NARROW_KERNELS(SUF, T)                                \
  BINARY_KERNEL(add_##SUF, T, CT__WRAP(uint32_t, T, a, +, b))   \
  BINARY_KERNEL(sub_##SUF, T, CT__WRAP(uint32_t, T, a, -, b))   \
  BINARY_KERNEL(mul_##SUF, T, CT__WRAP(uint32_t, T, a, *, b))   \
  DIV_INT_KERNEL(div_##SUF, T)
BINARY_KERNEL(div_i8_raw, int8_t, b == -1 ? CT__WRAP(uint32_t, int8_t, 0, -, a) : (int8_t)(a / b))
BINARY_KERNEL(div_i16_raw, int16_t,
              b == -1 ? CT__WRAP(uint32_t, int16_t, 0, -, a) : (int16_t)(a / b))
BINARY_KERNEL(div_u8_raw, uint8_t, (uint8_t)(a / b))
NARROW_KERNELS(i8, int8_t)
NARROW_KERNELS(u8, uint8_t)
NARROW_KERNELS(i16, int16_t)
/* uint16, uint32 and uint64 wrap modulo 2^bits (uint16 computed in uint32_t: its promotion to
 * int could overflow in a product); division truncates. */
BINARY_KERNEL(div_u16_raw, uint16_t, (uint16_t)(a / b))
BINARY_KERNEL(div_u32_raw, uint32_t, a / b)
BINARY_KERNEL(div_u64_raw, uint64_t, a / b)
NARROW_KERNELS(u16, uint16_t)
#define UNSIGNED_KERNELS(SUF, T)                           \
  BINARY_KERNEL(add_##SUF, T, CT__WRAP(T, T, a, +, b))         \
  BINARY_KERNEL(sub_##SUF, T, CT__WRAP(T, T, a, -, b))         \
  BINARY_KERNEL(mul_##SUF, T, CT__WRAP(T, T, a, *, b))         \
  DIV_INT_KERNEL(div_##SUF, T)
UNSIGNED_KERNELS(u32, uint32_t)
UNSIGNED_KERNELS(u64, uint64_t)

/* ---- Unary ---------------------------------------------------------------------------------- */

/* A unary kernel's work, split by ct__parallel_for: elements of Out. */
typedef struct un_job {
  void *o;
  const void *x;
  double sc, bi; /* scale's */
  bool stream;   /* Out is at least the last-level cache's size (ops/cpu/stream.h) */
} un_job;

#if CT__STREAM
/* A unary range of float type T with streaming stores when the job asks (ops/cpu/stream.h):
 * VEXPR of the vector a, EXPR of the scalar a before Out's first 16-byte boundary and after its
 * last whole vector. */
#define UN_STREAM(T, EXPR, VEXPR)                                                \
  if (j->stream) {                                                              \
    CT__STREAM_LOOP(o, b, e, { T a = x[i]; o[i] = (EXPR); }, {                  \
      CT__VTYPE(T) a = CT__VLOAD(x + i);                                        \
      CT__VSTREAM(o + i, (VEXPR));                                              \
    });                                                                         \
    ct__stream_fence();                                                         \
    return;                                                                     \
  }
#else
#define UN_STREAM(T, EXPR, VEXPR)
#endif

/* Whether a unary kernel streams an output of `bytes`, given NT_TEXT, its streaming path's text
 * (#NT): a kernel without one ("") asks nothing, a test the compiler folds away. */
#define UN_WANTS(NT_TEXT, bytes) (sizeof(NT_TEXT) > 1 && ct__stream_wanted(bytes))

/* One unary kernel per (op, dtype) over EXPR of a, GRAIN elements or more per thread; SIMD is
 * CT__SIMD or nothing (a loop calling libm). */
#define UNARY_KERNEL_G(NAME, T, GRAIN, SIMD, EXPR) UNARY_KERNEL_A(NAME, T, GRAIN, SIMD, , EXPR, )
/* ATTR: on the range function (CT__VM_CLONES for vmath.h's functions); NT: its streaming path
 * (UN_STREAM) or nothing. */
#define UNARY_KERNEL_A(NAME, T, GRAIN, SIMD, ATTR, EXPR, NT)      \
  ATTR static void NAME##_range(void *arg, int64_t b, int64_t e) { \
    const un_job *j = arg;                                        \
    const T *x = j->x;                                            \
    T *o = j->o;                                                  \
    NT                                                            \
    SIMD for (int64_t i = b; i < e; i++) {                        \
      T a = x[i];                                                 \
      o[i] = (EXPR);                                              \
    }                                                             \
  }                                                               \
  static ct_status NAME(const ct_kernel_ctx *c) {                 \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);           \
    un_job j = {ct__k_out_data(c, CT__OUT, 0, c->dtype), ct__k_in_data(xt), 0, 0,  \
                UN_WANTS(#NT, (size_t)xt->numel * sizeof(T))};    \
    if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();       \
    ct__parallel_for_job(xt->numel, GRAIN, NAME##_range, &j);     \
    return CT_OK;                                                 \
  }
#define UNARY_KERNEL(NAME, T, EXPR) UNARY_KERNEL_G(NAME, T, CT__GRAIN_MEM, CT__SIMD, EXPR)
#define MATH_KERNEL(NAME, T, EXPR) UNARY_KERNEL_G(NAME, T, CT__GRAIN_MATH, , EXPR)
/* A vectorised function costs a few times an add per element, not a libm call: a larger grain. */
#define VMATH_KERNEL(NAME, T, EXPR) \
  UNARY_KERNEL_A(NAME, T, 4 * CT__GRAIN_MATH, CT__SIMD, CT__VM_CLONES, EXPR, )

UNARY_KERNEL_A(relu_f32, float, CT__GRAIN_MEM, CT__SIMD, , a < 0 ? 0.0f : a,
               UN_STREAM(float, a < 0 ? 0.0f : a, CT__VRELU(a)))
UNARY_KERNEL_A(relu_f64, double, CT__GRAIN_MEM, CT__SIMD, , a < 0 ? 0.0 : a,
               UN_STREAM(double, a < 0 ? 0.0 : a, CT__VRELU(a)))
UNARY_KERNEL(relu_i32, int32_t, a < 0 ? 0 : a)
UNARY_KERNEL(relu_i64, int64_t, a < 0 ? 0 : a)
/* corten's own functions (ops/cpu/vmath.h), vectorised; float64 tanh is the C library's. */
VMATH_KERNEL(sigmoid_f64, double, ct__vsigmoid(a))
MATH_KERNEL(tanh_f64, double, tanh(a))
VMATH_KERNEL(exp_f64, double, ct__vexp(a))

/* float32 sigmoid, tanh and exp: vmath.h's loops, or on AVX-512 (behind the kernels' switch)
 * vmath512.h's functions, the same bits with exp's 2^k one instruction (exp 25 % faster), 16
 * elements at a time, the last few masked. */
#ifdef CT__T16_X86
#define VMATH16_KERNEL(NAME, EXPR, FN16)                                                     \
  UNARY_KERNEL_A(NAME##_c, float, 4 * CT__GRAIN_MATH, CT__SIMD, CT__VM_CLONES, EXPR, )     \
  __attribute__((target("avx512f"))) static void NAME##_range16(void *arg, int64_t b,      \
                                                                int64_t e) {               \
    const un_job *j = arg;                                                                 \
    CT__V512_MAP(FN16, (const float *)j->x + b, (float *)j->o + b, e - b);                 \
  }                                                                                        \
  static ct_status NAME(const ct_kernel_ctx *c) {                                          \
    if (!ct__gemm_avx512()) return NAME##_c(c);                                            \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                                    \
    un_job j = {ct__k_out_data(c, CT__OUT, 0, c->dtype), ct__k_in_data(xt), 0, 0, false}; \
    if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();                                \
    ct__parallel_for_job(xt->numel, 4 * CT__GRAIN_MATH, NAME##_range16, &j);               \
    return CT_OK;                                                                          \
  }
#else
#define VMATH16_KERNEL(NAME, EXPR, FN16) VMATH_KERNEL(NAME, float, EXPR)
#endif
VMATH16_KERNEL(sigmoid_f32, ct__vsigmoidf(a), ct__v512_sigmoidf)
VMATH16_KERNEL(tanh_f32, ct__vtanhf(a), ct__v512_tanhf)
VMATH16_KERNEL(exp_f32, ct__vexpf(a), ct__v512_expf)
VMATH_KERNEL(log_f32, float, ct__vlogf(a))
VMATH_KERNEL(log_f64, double, ct__vlog(a))

/* ---- scale: Out = scale * X + bias (or scale * (X + bias) when bias_after_scale is false) ---- */

/* scale's work: Out = EXPR of v = sc * X + bi, computed in CT, per element; NT its streaming
 * path (SCALE_STREAM, float types) or nothing. */
#define SCALE_KERNEL(NAME, T, CT, EXPR) SCALE_KERNEL_S(NAME, T, CT, EXPR, )
#define SCALE_STREAM(T) UN_STREAM(T, sc * a + bi, CT__VSET1(sc) * a + CT__VSET1(bi))
#define SCALE_KERNEL_S(NAME, T, CT, EXPR, NT)                                              \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                              \
    const un_job *j = arg;                                                                 \
    const T *x = j->x;                                                                     \
    T *o = j->o;                                                                           \
    CT sc = (CT)j->sc, bi = (CT)j->bi;                                                     \
    NT                                                                                     \
    CT__SIMD for (int64_t i = b; i < e; i++) {                                             \
      CT v = sc * (CT)x[i] + bi;                                                           \
      o[i] = (EXPR);                                                                       \
    }                                                                                      \
  }                                                                                        \
  static ct_status NAME(const ct_kernel_ctx *c) {                                          \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                                    \
    un_job j = {ct__k_out_data(c, CT__OUT, 0, c->dtype), ct__k_in_data(xt), 0, 0,          \
                UN_WANTS(#NT, (size_t)xt->numel * sizeof(T))};                            \
    if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();                                \
    CT sc = (CT)c->attr[CT__SCALE_SCALE].u.f, bi = (CT)c->attr[CT__SCALE_BIAS].u.f;        \
    if (!c->attr[CT__SCALE_BIAS_AFTER].u.b) bi *= sc;                                      \
    j.sc = sc; /* exact both ways */                                                       \
    j.bi = bi;                                                                             \
    ct__parallel_for_job(xt->numel, CT__GRAIN_MEM, NAME##_range, &j);                      \
    return CT_OK;                                                                          \
  }
SCALE_KERNEL_S(scale_f32, float, float, (float)v, SCALE_STREAM(float))
SCALE_KERNEL_S(scale_f64, double, double, v, SCALE_STREAM(double))
/* Integers scale in double and saturate on the way back, so no value is undefined. */
#define SAT(T, LO, HI) (v != v ? 0 : v <= (double)(LO) ? (LO) : v >= (double)(HI) ? (HI) : (T)v)
SCALE_KERNEL(scale_i32, int32_t, double, SAT(int32_t, INT32_MIN, INT32_MAX))
SCALE_KERNEL(scale_i64, int64_t, double, SAT(int64_t, INT64_MIN, INT64_MAX))

/* ---- cast and assign ------------------------------------------------------------------------- */

/* Reads element i of any dtype as a double and as an int64 (exact for integers). */
static inline void load_elem(const void *p, ct_dtype t, int64_t i, double *f, int64_t *n) {
  switch (t) {
    case CT_BOOL: *n = ((const uint8_t *)p)[i] != 0; *f = (double)*n; return;
    case CT_INT8: *n = ((const int8_t *)p)[i]; *f = (double)*n; return;
    case CT_UINT8: *n = ((const uint8_t *)p)[i]; *f = (double)*n; return;
    case CT_INT16: *n = ((const int16_t *)p)[i]; *f = (double)*n; return;
    case CT_INT32: *n = ((const int32_t *)p)[i]; *f = (double)*n; return;
    case CT_INT64: *n = ((const int64_t *)p)[i]; *f = (double)*n; return;
    case CT_UINT16: *n = ((const uint16_t *)p)[i]; *f = (double)*n; return;
    case CT_UINT32: *n = ((const uint32_t *)p)[i]; *f = (double)*n; return;
    case CT_FLOAT16: *f = ct__half_to_float(((const uint16_t *)p)[i]); break;
    case CT_BFLOAT16: *f = ct__bf16_to_float(((const uint16_t *)p)[i]); break;
    case CT_FLOAT32: *f = ((const float *)p)[i]; break;
    case CT_FLOAT64: *f = ((const double *)p)[i]; break;
    default: *f = 0; break;
  }
  /* A float to an integer: truncated toward zero, saturated, NaN as 0 (never undefined). */
  double v = *f;
  *n = v != v ? 0 : v <= -9223372036854775808.0 ? INT64_MIN
                  : v >= 9223372036854775808.0 ? INT64_MAX : (int64_t)v;
}

static inline int64_t clamp_i(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

static inline void store_elem(void *p, ct_dtype t, int64_t i, double f, int64_t n, bool from_int) {
  switch (t) {
    case CT_BOOL: ((uint8_t *)p)[i] = from_int ? n != 0 : f != 0; return;
    case CT_INT8: ((int8_t *)p)[i] = (int8_t)clamp_i(n, INT8_MIN, INT8_MAX); return;
    case CT_UINT8: ((uint8_t *)p)[i] = (uint8_t)clamp_i(n, 0, UINT8_MAX); return;
    case CT_INT16: ((int16_t *)p)[i] = (int16_t)clamp_i(n, INT16_MIN, INT16_MAX); return;
    case CT_INT32: ((int32_t *)p)[i] = (int32_t)clamp_i(n, INT32_MIN, INT32_MAX); return;
    case CT_INT64: ((int64_t *)p)[i] = n; return;
    case CT_UINT16: ((uint16_t *)p)[i] = (uint16_t)clamp_i(n, 0, UINT16_MAX); return;
    case CT_UINT32: ((uint32_t *)p)[i] = (uint32_t)clamp_i(n, 0, UINT32_MAX); return;
    case CT_UINT64:
      ((uint64_t *)p)[i] = from_int ? (n < 0 ? 0 : (uint64_t)n)
                           : f != f || f <= 0 ? 0
                           : f >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)f;
      return;
    /* Rounded once: an int64 or a double going through float would round twice. */
    case CT_FLOAT16:
      ((uint16_t *)p)[i] = from_int ? ct__i64_to_half(n) : ct__f64_to_half(f);
      return;
    case CT_BFLOAT16:
      ((uint16_t *)p)[i] = from_int ? ct__i64_to_bf16(n) : ct__f64_to_bf16(f);
      return;
    case CT_FLOAT32: ((float *)p)[i] = from_int ? (float)n : (float)f; return;
    case CT_FLOAT64: ((double *)p)[i] = f; return;
    default: return;
  }
}

/* A cast's work, split by ct__parallel_for: elements. */
typedef struct cast_job {
  void *o;
  const void *x;
  ct_dtype from, to;
} cast_job;

#define CAST_LOOP(TO, FROM)                                                             \
  do {                                                                                  \
    TO *o_ = j->o;                                                                      \
    const FROM *x_ = j->x;                                                              \
    CT__SIMD for (int64_t i = b; i < e; i++) o_[i] = (TO)x_[i];                         \
    return true;                                                                        \
  } while (0)
#define PAIR(a, b) ((int)(a)*CT__N_DTYPES + (int)(b))

/* The common casts whose C conversion gives what load_elem and store_elem give (exact, or one
 * rounding of the same value) as one vectorised loop; false for the others. */
static bool cast_fast(const cast_job *j, int64_t b, int64_t e) {
  switch (PAIR(j->from, j->to)) {
    case PAIR(CT_FLOAT32, CT_FLOAT64): CAST_LOOP(double, float);
    case PAIR(CT_FLOAT64, CT_FLOAT32): CAST_LOOP(float, double);
    case PAIR(CT_INT32, CT_FLOAT32): CAST_LOOP(float, int32_t);
    case PAIR(CT_INT32, CT_FLOAT64): CAST_LOOP(double, int32_t);
    case PAIR(CT_INT64, CT_FLOAT32): CAST_LOOP(float, int64_t);
    case PAIR(CT_INT64, CT_FLOAT64): CAST_LOOP(double, int64_t);
    case PAIR(CT_INT32, CT_INT64): CAST_LOOP(int64_t, int32_t);
    default: return false;
  }
}

/* Element i of uint64 source x, stored as dtype `to` at element i of o: a value above INT64_MAX
 * saturates every integer dtype (bool: true) and is rounded once into the floats. */
static void cast_u64_elem(void *o, ct_dtype to, const uint64_t *x, int64_t i) {
  uint64_t u = x[i];
  if (u <= INT64_MAX) {
    store_elem(o, to, i, (double)(int64_t)u, (int64_t)u, true);
    return;
  }
  switch (to) {
    case CT_FLOAT16: ((uint16_t *)o)[i] = ct__u64_to_half(u); return;
    case CT_BFLOAT16: ((uint16_t *)o)[i] = ct__u64_to_bf16(u); return;
    case CT_FLOAT32: ((float *)o)[i] = (float)u; return;
    case CT_FLOAT64: ((double *)o)[i] = (double)u; return;
    default: store_elem(o, to, i, 0, INT64_MAX, true); return;
  }
}

static void cast_range(void *arg, int64_t b, int64_t e) {
  const cast_job *j = arg;
  if (cast_fast(j, b, e)) return;
  if (j->from == CT_UINT64) {
    for (int64_t i = b; i < e; i++) cast_u64_elem(j->o, j->to, j->x, i);
    return;
  }
  bool from_int = j->from <= CT_INT64 || j->from == CT_UINT16 || j->from == CT_UINT32;
  for (int64_t i = b; i < e; i++) {
    double f;
    int64_t n;
    load_elem(j->x, j->from, i, &f, &n);
    store_elem(j->o, j->to, i, f, n, from_int);
  }
}

/* Output 0 = input `in` converted to dtype dt. */
static ct_status cast_into(const ct_kernel_ctx *c, size_t in, ct_dtype dt) {
  const ct_tensor *xt = ct_kernel_in(c, in, 0);
  cast_job j = {ct__k_out_data(c, 0, 0, dt), ct__k_in_data(xt), xt->dtype, dt};
  if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();
  if (j.from == dt) {
    memmove(j.o, j.x, ct__tensor_bytes(xt, dt));
    return CT_OK;
  }
  ct__parallel_for_job(xt->numel, CT__GRAIN_MEM, cast_range, &j);
  return CT_OK;
}

static ct_status cast_any(const ct_kernel_ctx *c) {
  ct_dtype dt;
  ct_status s = ct__k_attr_dtype(c, CT__CAST_DTYPE, &dt);
  return s == CT_OK ? cast_into(c, CT__IN_X, dt) : s;
}

/* cast_grad: Out@GRAD back to X's dtype (the kernel's). */
static ct_status cast_grad_any(const ct_kernel_ctx *c) {
  return cast_into(c, CT__G_UNARY_DOUT, c->dtype);
}

static ct_status assign_any(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  memmove(o, ct__k_in_data(xt), ct__tensor_bytes(xt, xt->dtype));
  return CT_OK;
}

#define NUMERIC(f32, f64, i32, i64) \
  CT__KERNELS([CT_FLOAT32] = f32, [CT_FLOAT64] = f64, [CT_INT32] = i32, [CT_INT64] = i64)
/* The four arithmetic ops also take the narrow integers. */
#define ARITH(op)                                                                          \
  CT__KERNELS([CT_FLOAT32] = op##_f32, [CT_FLOAT64] = op##_f64, [CT_INT32] = op##_i32,    \
              [CT_INT64] = op##_i64, [CT_INT8] = op##_i8, [CT_UINT8] = op##_u8,           \
              [CT_INT16] = op##_i16, [CT_UINT16] = op##_u16, [CT_UINT32] = op##_u32,       \
              [CT_UINT64] = op##_u64)

static const ct__kernel_set kernels[] = {
    {"elementwise_add", ARITH(add)},
    {"elementwise_sub", ARITH(sub)},
    {"elementwise_mul", ARITH(mul)},
    {"elementwise_div", ARITH(div)},
    {"relu", NUMERIC(relu_f32, relu_f64, relu_i32, relu_i64)},
    {"sigmoid", CT__KERNELS_F32_F64(sigmoid)},
    {"tanh", CT__KERNELS_F32_F64(tanh)},
    {"exp", CT__KERNELS_F32_F64(exp)},
    {"log", CT__KERNELS_F32_F64(log)},
    {"scale", NUMERIC(scale_f32, scale_f64, scale_i32, scale_i64)},
    {"cast", CT__KERNELS([0] = cast_any)},
    {"cast_grad", CT__KERNELS([0] = cast_grad_any)},
    {"assign", CT__KERNELS([0] = assign_any)},
};

const ct__kernel_table ct__cpu_elementwise = CT__TABLE(kernels);
