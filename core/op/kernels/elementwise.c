/* core/op/kernels/elementwise.c: elementwise_{add,sub,mul,div} with numpy broadcasting, the
 * unary activations (relu, sigmoid, tanh, exp, log), scale, cast and assign, on the CPU.
 *
 * A binary op plans its broadcast once per run: dims aligned at the end, a stride of 0 where an
 * input is broadcast, then neighbouring dims merged wherever both inputs stay contiguous, so
 * same-shape inputs become one flat loop and a row vector against a matrix becomes two. The
 * innermost loop is specialised for strides (1,1), (1,0) and (0,1) so the compiler vectorises it.
 * Integer arithmetic wraps (computed unsigned) and integer division by zero is an error. */
#include <math.h>
#include <string.h>

#include "op/kernels/kernels.h"
#include "op/kernels/half.h"

enum { IN_X, IN_Y };
enum { OUT_OUT };

/* ---- Broadcast planning --------------------------------------------------------------------- */

typedef ct__bcast_plan bcast_plan; /* kernels.h: shared with the CUDA kernels */

void ct__plan_bcast(ct_ddim x, ct_ddim y, ct_ddim out, ct__bcast_plan *p) {
  int64_t d[CT_MAX_RANK], sx[CT_MAX_RANK], sy[CT_MAX_RANK];
  int64_t stx = 1, sty = 1;
  int r = out.rank;
  for (int k = r - 1; k >= 0; k--) {
    int ix = x.rank - r + k, iy = y.rank - r + k;
    int64_t dx = ix >= 0 ? x.d[ix] : 1, dy = iy >= 0 ? y.d[iy] : 1;
    d[k] = out.d[k];
    sx[k] = dx == 1 ? 0 : stx;
    sy[k] = dy == 1 ? 0 : sty;
    stx *= dx;
    sty *= dy;
  }
  /* Merge dim k into the dim before it when both strides continue across the boundary. */
  int n = 0;
  for (int k = 0; k < r; k++) {
    if (d[k] == 1) continue;
    if (n > 0 && p->sx[n - 1] == sx[k] * d[k] && p->sy[n - 1] == sy[k] * d[k]) {
      p->d[n - 1] *= d[k];
      p->sx[n - 1] = sx[k];
      p->sy[n - 1] = sy[k];
      continue;
    }
    p->d[n] = d[k];
    p->sx[n] = sx[k];
    p->sy[n] = sy[k];
    n++;
  }
  if (n == 0) {
    p->d[0] = 1;
    p->sx[0] = p->sy[0] = 0;
    n = 1;
  }
  p->rank = n;
}

/* Calls INNER(o, x, y, n, sx, sy) over each innermost run of the plan. */
#define BCAST_WALK(T, plan, o, x, y, INNER)                                            \
  do {                                                                                  \
    int r_ = (plan).rank;                                                               \
    int64_t n_ = (plan).d[r_ - 1], idx_[CT_MAX_RANK] = {0};                             \
    int64_t ox_ = 0, oy_ = 0;                                                           \
    T *op_ = (o);                                                                       \
    for (;;) {                                                                          \
      INNER(op_, (x) + ox_, (y) + oy_, n_, (plan).sx[r_ - 1], (plan).sy[r_ - 1]);       \
      op_ += n_;                                                                        \
      int k_ = r_ - 2;                                                                  \
      for (; k_ >= 0; k_--) {                                                           \
        ox_ += (plan).sx[k_];                                                           \
        oy_ += (plan).sy[k_];                                                           \
        if (++idx_[k_] < (plan).d[k_]) break;                                           \
        ox_ -= (plan).sx[k_] * (plan).d[k_];                                            \
        oy_ -= (plan).sy[k_] * (plan).d[k_];                                            \
        idx_[k_] = 0;                                                                   \
      }                                                                                 \
      if (k_ < 0) break;                                                                \
    }                                                                                   \
  } while (0)

/* Checks the dtypes too, before Out is touched, so a failing op leaves Out as it was. */
static ct_status binary_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, IN_X, 0), *y = ct_kernel_in(c, IN_Y, 0);
  ct_ddim out;
  if (CT__UNLIKELY(y->dtype != x->dtype)) return ct__k_check_dtype(c, IN_Y, 0, x->dtype);
  if (CT__LIKELY(ct__ddim_eq(&x->dims, &y->dims))) {
    ct_tensor *o = ct_kernel_out(c, OUT_OUT, 0);
    return CT__LIKELY(ct__ddim_eq(&o->dims, &x->dims)) ? CT_OK : ct__k_resize(c, OUT_OUT, 0, x->dims);
  }
  ct_status s = ct__k_broadcast(c, x->dims, y->dims, &out);
  return s == CT_OK ? ct__k_resize(c, OUT_OUT, 0, out) : s;
}

/* One binary kernel per (op, dtype): T the element type, U its unsigned twin for wrapping
 * integer arithmetic (T itself for floats), EXPR over a and b. */
#define BINARY_KERNEL(NAME, T, EXPR)                                                     \
  static inline T NAME##_f(T a, T b) { return (EXPR); }                                  \
  static void NAME##_inner(T *o, const T *x, const T *y, int64_t n, int64_t sx,         \
                           int64_t sy) {                                                 \
    if (sx == 1 && sy == 1) {                                                            \
      for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(x[i], y[i]);                       \
    } else if (sy == 0) {                                                                \
      T b = y[0];                                                                        \
      for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(x[i * sx], b);                     \
    } else if (sx == 0) {                                                                \
      T a = x[0];                                                                        \
      for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(a, y[i * sy]);                     \
    } else {                                                                             \
      for (int64_t i = 0; i < n; i++) o[i] = NAME##_f(x[i * sx], y[i * sy]);             \
    }                                                                                    \
  }                                                                                      \
  static ct_status NAME(const ct_kernel_ctx *c) {                                        \
    const ct_tensor *xt = ct_kernel_in(c, IN_X, 0), *yt = ct_kernel_in(c, IN_Y, 0);      \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                                      \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                \
    const T *x = ct__k_in_data(xt), *y = ct__k_in_data(yt);                              \
    int64_t n = ct_kernel_out(c, OUT_OUT, 0)->numel;                                     \
    if (n == 0) return CT_OK;                                                            \
    if (CT__LIKELY(xt->numel == n && yt->numel == n)) {                                  \
      NAME##_inner(o, x, y, n, 1, 1);                                                    \
      return CT_OK;                                                                      \
    }                                                                                    \
    bcast_plan plan;                                                                     \
    ct__plan_bcast(xt->dims, yt->dims, ct_kernel_out(c, OUT_OUT, 0)->dims, &plan);       \
    BCAST_WALK(T, plan, o, x, y, NAME##_inner);                                          \
    return CT_OK;                                                                        \
  }

#define WRAP(U, T, a, op, b) ((T)((U)(a)op(U)(b)))

BINARY_KERNEL(add_f32, float, a + b)
BINARY_KERNEL(add_f64, double, a + b)
BINARY_KERNEL(add_i32, int32_t, WRAP(uint32_t, int32_t, a, +, b))
BINARY_KERNEL(add_i64, int64_t, WRAP(uint64_t, int64_t, a, +, b))
BINARY_KERNEL(sub_f32, float, a - b)
BINARY_KERNEL(sub_f64, double, a - b)
BINARY_KERNEL(sub_i32, int32_t, WRAP(uint32_t, int32_t, a, -, b))
BINARY_KERNEL(sub_i64, int64_t, WRAP(uint64_t, int64_t, a, -, b))
BINARY_KERNEL(mul_f32, float, a * b)
BINARY_KERNEL(mul_f64, double, a * b)
BINARY_KERNEL(mul_i32, int32_t, WRAP(uint32_t, int32_t, a, *, b))
BINARY_KERNEL(mul_i64, int64_t, WRAP(uint64_t, int64_t, a, *, b))
BINARY_KERNEL(div_f32, float, a / b)
BINARY_KERNEL(div_f64, double, a / b)
/* Integer division truncates toward zero; MIN / -1 wraps to MIN; a zero divisor is refused
 * before the loop runs (div_int_check), so b is never 0 here. */
BINARY_KERNEL(div_i32_raw, int32_t, b == -1 ? WRAP(uint32_t, int32_t, 0, -, a) : (int32_t)(a / b))
BINARY_KERNEL(div_i64_raw, int64_t, b == -1 ? WRAP(uint64_t, int64_t, 0, -, a) : (int64_t)(a / b))

#define DIV_INT_KERNEL(NAME, T)                                                            \
  static ct_status NAME(const ct_kernel_ctx *c) {                                          \
    const ct_tensor *yt = ct_kernel_in(c, IN_Y, 0);                                        \
    if (yt->dtype == c->dtype) {                                                           \
      const T *y = ct__k_in_data(yt);                                                      \
      for (int64_t i = 0; i < yt->numel; i++) {                                            \
        if (y[i] == 0) {                                                                   \
          return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,                                \
                                "input Y variable '%s' holds 0 at element %lld: integer "  \
                                "division by zero",                                        \
                                ct_kernel_in_name(c, IN_Y, 0), (long long)i);              \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
    return NAME##_raw(c);                                                                  \
  }
DIV_INT_KERNEL(div_i32, int32_t)
DIV_INT_KERNEL(div_i64, int64_t)

/* Registers an op type X[, Y] -> Out without attributes, with kernels for float32, float64 and
 * (when given) int32, int64. */
static void register_simple(const char *type, bool binary, ct_infer_shape_fn infer,
                            ct_kernel_fn f32, ct_kernel_fn f64, ct_kernel_fn i32,
                            ct_kernel_fn i64) {
  ct_op_def def = {.type = type, .inputs = binary ? ct__slot_xy : ct__slot_x,
                   .n_inputs = binary ? 2 : 1, .outputs = ct__slot_out, .n_outputs = 1,
                   .infer_shape = infer};
  ct__register_cpu(&def, CT__KERNELS([CT_FLOAT32] = f32, [CT_FLOAT64] = f64, [CT_INT32] = i32,
                                     [CT_INT64] = i64));
}

/* ---- Unary ------------------------------------------------------------------------------------ */

static ct_status same_dims_infer(const ct_kernel_ctx *c) {
  return ct__k_resize(c, OUT_OUT, 0, ct_kernel_in(c, IN_X, 0)->dims);
}

#define UNARY_KERNEL(NAME, T, EXPR)                                         \
  static ct_status NAME(const ct_kernel_ctx *c) {                           \
    const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);                         \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                         \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                   \
    const T *x = ct__k_in_data(xt);                                         \
    for (int64_t i = 0, n = xt->numel; i < n; i++) {                        \
      T a = x[i];                                                           \
      o[i] = (EXPR);                                                        \
    }                                                                       \
    return CT_OK;                                                           \
  }

UNARY_KERNEL(relu_f32, float, a > 0 ? a : 0.0f)
UNARY_KERNEL(relu_f64, double, a > 0 ? a : 0.0)
UNARY_KERNEL(relu_i32, int32_t, a > 0 ? a : 0)
UNARY_KERNEL(relu_i64, int64_t, a > 0 ? a : 0)
UNARY_KERNEL(sigmoid_f32, float, 1.0f / (1.0f + expf(-a)))
UNARY_KERNEL(sigmoid_f64, double, 1.0 / (1.0 + exp(-a)))
UNARY_KERNEL(tanh_f32, float, tanhf(a))
UNARY_KERNEL(tanh_f64, double, tanh(a))
UNARY_KERNEL(exp_f32, float, expf(a))
UNARY_KERNEL(exp_f64, double, exp(a))
UNARY_KERNEL(log_f32, float, logf(a))
UNARY_KERNEL(log_f64, double, log(a))

/* ---- scale: Out = scale * X + bias (or scale * (X + bias) when bias_after_scale is false) ---- */

enum { SCALE_SCALE, SCALE_BIAS, SCALE_AFTER };

#define SCALE_KERNEL(NAME, T, CT)                                                     \
  static ct_status NAME(const ct_kernel_ctx *c) {                                     \
    const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);                                   \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                                   \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                             \
    const T *x = ct__k_in_data(xt);                                                   \
    CT sc = (CT)c->attr[SCALE_SCALE].u.f, bi = (CT)c->attr[SCALE_BIAS].u.f;           \
    if (!c->attr[SCALE_AFTER].u.b) bi *= sc;                                          \
    for (int64_t i = 0, n = xt->numel; i < n; i++) o[i] = (T)(sc * (CT)x[i] + bi);    \
    return CT_OK;                                                                     \
  }
SCALE_KERNEL(scale_f32, float, float)
SCALE_KERNEL(scale_f64, double, double)

/* Integers scale in double and saturate on the way back, so no value is undefined. */
#define SCALE_INT_KERNEL(NAME, T, LO, HI)                                             \
  static ct_status NAME(const ct_kernel_ctx *c) {                                     \
    const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);                                   \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                                   \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                             \
    const T *x = ct__k_in_data(xt);                                                   \
    double sc = c->attr[SCALE_SCALE].u.f, bi = c->attr[SCALE_BIAS].u.f;               \
    if (!c->attr[SCALE_AFTER].u.b) bi *= sc;                                          \
    for (int64_t i = 0, n = xt->numel; i < n; i++) {                                  \
      double v = sc * (double)x[i] + bi;                                              \
      o[i] = v != v ? 0 : v <= (double)(LO) ? (LO) : v >= (double)(HI) ? (HI) : (T)v; \
    }                                                                                 \
    return CT_OK;                                                                     \
  }
SCALE_INT_KERNEL(scale_i32, int32_t, INT32_MIN, INT32_MAX)
SCALE_INT_KERNEL(scale_i64, int64_t, INT64_MIN, INT64_MAX)

static const ct_attr_def scale_attrs[] = {
    {"scale", {.type = CT_ATTR_FLOAT, .u.f = 1.0}, false},
    {"bias", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, false},
    {"bias_after_scale", {.type = CT_ATTR_BOOL, .u.b = true}, false},
};

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

static ct_status cast_any(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  ct_dtype from = xt->dtype, dt;
  ct_status s = ct__k_attr_dtype(c, 0, &dt);
  if (s != CT_OK) return s;
  void *o = ct__k_out_data(c, OUT_OUT, 0, dt);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const void *x = ct__k_in_data(xt);
  if (from == dt) {
    memmove(o, x, ct__tensor_bytes(xt, dt));
    return CT_OK;
  }
  bool from_int = from <= CT_INT64;
  for (int64_t i = 0; i < xt->numel; i++) {
    double f;
    int64_t n;
    load_elem(x, from, i, &f, &n);
    store_elem(o, dt, i, f, n, from_int);
  }
  return CT_OK;
}

static const ct_attr_def cast_attrs[] = {{"dtype", {.type = CT_ATTR_INT, .u.i = CT_FLOAT32}, true}};

static ct_status assign_any(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  memmove(o, ct__k_in_data(xt), ct__tensor_bytes(xt, xt->dtype));
  return CT_OK;
}

void ct__register_elementwise_ops(void) {
  register_simple("elementwise_add", true, binary_infer, add_f32, add_f64, add_i32, add_i64);
  register_simple("elementwise_sub", true, binary_infer, sub_f32, sub_f64, sub_i32, sub_i64);
  register_simple("elementwise_mul", true, binary_infer, mul_f32, mul_f64, mul_i32, mul_i64);
  register_simple("elementwise_div", true, binary_infer, div_f32, div_f64, div_i32, div_i64);
  register_simple("relu", false, same_dims_infer, relu_f32, relu_f64, relu_i32, relu_i64);
  register_simple("sigmoid", false, same_dims_infer, sigmoid_f32, sigmoid_f64, NULL, NULL);
  register_simple("tanh", false, same_dims_infer, tanh_f32, tanh_f64, NULL, NULL);
  register_simple("exp", false, same_dims_infer, exp_f32, exp_f64, NULL, NULL);
  register_simple("log", false, same_dims_infer, log_f32, log_f64, NULL, NULL);

  ct_op_def scale = {.type = "scale", .inputs = ct__slot_x, .n_inputs = 1,
                     .outputs = ct__slot_out, .n_outputs = 1, .attrs = scale_attrs, .n_attrs = 3,
                     .infer_shape = same_dims_infer};
  ct__register_cpu(&scale, CT__KERNELS([CT_FLOAT32] = scale_f32, [CT_FLOAT64] = scale_f64,
                                       [CT_INT32] = scale_i32, [CT_INT64] = scale_i64));
  ct_op_def cast = {.type = "cast", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
                    .n_outputs = 1, .attrs = cast_attrs, .n_attrs = 1,
                    .infer_shape = same_dims_infer};
  ct__register_cpu(&cast, CT__KERNELS([0] = cast_any));
  ct_op_def assign = {.type = "assign", .inputs = ct__slot_x, .n_inputs = 1,
                      .outputs = ct__slot_out, .n_outputs = 1, .infer_shape = same_dims_infer};
  ct__register_cpu(&assign, CT__KERNELS([0] = assign_any));
}
