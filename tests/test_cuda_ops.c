/* Tests of the CUDA kernels of the built-in ops.
 *
 * On a GPU: every CUDA kernel against its CPU kernel on the same inputs, run through ct_op_run
 * at ct_cuda(0) and at ct_cpu() over copies of one host tensor. Exact where the arithmetic is
 * the same (elementwise float32, scale, casts, fill and the random ops, which are bit-identical
 * by design); within a tolerance for expf / tanhf / logf and for matmul (cuBLAS sums in another
 * order). float16 and bfloat16 have no CPU kernels: their reference is computed here, in float
 * with half.h's rounding, or in double for matmul. The recurrent op runs test_rnn.c's Elman RNN
 * at ct_cuda(0) over device copies of its inputs: the outputs and every step scope's state match
 * the CPU's run within 1e-5, and the step scopes hold device tensors.
 *
 * Without a GPU: the registry holds exactly the CUDA kernels the build promises (none without
 * CUDA), cuBLAS loads in a CUDA build, and an op run at a CUDA place is refused without touching
 * its output; then the suite reports itself skipped (77).
 *
 * As in test_cuda.c, the device count is asked in a child process: Check forks per test and a
 * CUDA context does not survive fork. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corten/corten.h>

#include "ops/half.h"
#include "ops/op_impl.h"
#ifdef CORTEN_TEST_CUDA
#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"
#endif

#include "harness.h"

/* ---- Without a device ------------------------------------------------------------------------ */

typedef struct kernel_key {
  const char *type;
  ct_dtype dtype; /* CT_DTYPE_UNDEFINED: the any-dtype kernel */
} kernel_key;

static const kernel_key cuda_kernels[] = {
    {"recurrent", CT_DTYPE_UNDEFINED},
    {"elementwise_add", CT_FLOAT32}, {"elementwise_add", CT_FLOAT16},
    {"elementwise_add", CT_BFLOAT16}, {"elementwise_sub", CT_FLOAT32},
    {"elementwise_sub", CT_FLOAT16}, {"elementwise_sub", CT_BFLOAT16},
    {"elementwise_mul", CT_FLOAT32}, {"elementwise_mul", CT_FLOAT16},
    {"elementwise_mul", CT_BFLOAT16}, {"elementwise_div", CT_FLOAT32},
    {"elementwise_div", CT_FLOAT16}, {"elementwise_div", CT_BFLOAT16},
    {"relu", CT_FLOAT32}, {"sigmoid", CT_FLOAT32}, {"tanh", CT_FLOAT32}, {"exp", CT_FLOAT32},
    {"log", CT_FLOAT32}, {"scale", CT_FLOAT32}, {"cast", CT_FLOAT32}, {"cast", CT_FLOAT16},
    {"cast", CT_BFLOAT16}, {"matmul", CT_FLOAT32}, {"matmul", CT_FLOAT16},
    {"matmul", CT_BFLOAT16}, {"assign", CT_DTYPE_UNDEFINED}, {"reshape", CT_DTYPE_UNDEFINED},
    {"fill_constant", CT_DTYPE_UNDEFINED}, {"uniform_random", CT_FLOAT32},
    {"uniform_random", CT_FLOAT16}, {"uniform_random", CT_BFLOAT16},
    {"uniform_random", CT_FLOAT64}, {"gaussian_random", CT_FLOAT32},
    {"gaussian_random", CT_FLOAT16}, {"gaussian_random", CT_BFLOAT16},
    {"gaussian_random", CT_FLOAT64}, {"sum", CT_FLOAT32}, {"sum", CT_FLOAT64},
    {"mean", CT_FLOAT32}, {"mean", CT_FLOAT64}, {"reduce_sum", CT_FLOAT32},
    {"reduce_sum", CT_FLOAT64}, {"softmax", CT_FLOAT32}, {"softmax", CT_FLOAT64},
    {"transpose", CT_DTYPE_UNDEFINED}, {"concat", CT_DTYPE_UNDEFINED},
};


static ct_kernel_fn cuda_kernel(const char *type, ct_dtype dtype) {
  const ct__opdef *d = ct__op_lookup(type);
  ck_assert_msg(d != NULL, "op type %s", type);
  return atomic_load(&((ct__opdef *)d)->kernels[CT_DEVICE_CUDA][dtype]);
}

START_TEST(absent_registry_holds_the_cuda_kernels_of_this_build) {
  size_t n = sizeof cuda_kernels / sizeof cuda_kernels[0], found = 0;
  for (size_t i = 0; i < n; i++) {
    ct_kernel_fn fn = cuda_kernel(cuda_kernels[i].type, cuda_kernels[i].dtype);
    found += fn != NULL;
#ifdef CORTEN_TEST_CUDA
    ck_assert_msg(fn != NULL, "no CUDA kernel for %s/%s", cuda_kernels[i].type,
                  ct_dtype_name(cuda_kernels[i].dtype));
#endif
  }
#ifdef CORTEN_TEST_CUDA
  ck_assert_uint_eq(found, n);
#else
  /* A CPU-only build has no CUDA kernel at all. */
  static const char *const builtin_types[] = {
      "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "relu",
      "sigmoid", "tanh", "exp", "log", "scale", "cast", "assign", "matmul", "fill_constant",
      "uniform_random", "gaussian_random", "reshape", "transpose", "concat", "sum", "mean",
      "reduce_sum", "softmax", "recurrent"};
  ck_assert_uint_eq(found, 0);
  for (size_t i = 0; i < sizeof builtin_types / sizeof builtin_types[0]; i++) {
    const ct__opdef *d = ct__op_lookup(builtin_types[i]);
    if (d == NULL) continue;
    for (int t = 0; t < CT__N_DTYPES; t++) {
      ck_assert_ptr_null(atomic_load(&((ct__opdef *)d)->kernels[CT_DEVICE_CUDA][t]));
    }
  }
#endif
}
END_TEST

START_TEST(absent_cuda_kernels_are_not_registered_for_other_dtypes) {
#ifdef CORTEN_TEST_CUDA
  /* float64 and integer elementwise, and the half types for activations, stay CPU-only. */
  ck_assert_ptr_null(cuda_kernel("elementwise_add", CT_FLOAT64));
  ck_assert_ptr_null(cuda_kernel("elementwise_add", CT_INT32));
  ck_assert_ptr_null(cuda_kernel("elementwise_add", CT_DTYPE_UNDEFINED));
  ck_assert_ptr_null(cuda_kernel("relu", CT_FLOAT16));
  ck_assert_ptr_null(cuda_kernel("matmul", CT_FLOAT64));
  ck_assert_ptr_null(cuda_kernel("cast", CT_INT32));
  ck_assert_ptr_null(cuda_kernel("transpose", CT_FLOAT32));
  ck_assert_ptr_null(cuda_kernel("sum", CT_INT32));
  ck_assert_ptr_null(cuda_kernel("reduce_sum", CT_INT64));
  ck_assert_ptr_null(cuda_kernel("softmax", CT_FLOAT16));
  ck_assert_ptr_null(cuda_kernel("mean", CT_DTYPE_UNDEFINED));
  /* reshape only shares memory: the CUDA place runs the CPU kernel itself. */
  ck_assert_ptr_eq(cuda_kernel("reshape", CT_DTYPE_UNDEFINED),
                   atomic_load(&((ct__opdef *)ct__op_lookup("reshape"))
                                    ->kernels[CT_DEVICE_CPU][CT_DTYPE_UNDEFINED]));
#else
  ck_assert_ptr_null(cuda_kernel("reshape", CT_DTYPE_UNDEFINED));
#endif
}
END_TEST

START_TEST(absent_cublas_loads_in_a_cuda_build) {
#ifdef CORTEN_TEST_CUDA
  ck_assert_msg(ct__cuda_cublas_available() == CT_OK, "%s", ct_last_error());
  /* Loaded once: asking again gives the same answer. */
  ck_assert_int_eq(ct__cuda_cublas_available(), CT_OK);
#else
  ck_assert(!ct_cuda_is_built());
#endif
}
END_TEST

START_TEST(absent_op_at_a_cuda_place_is_refused_and_changes_nothing) {
  ct_scope *s = ct_scope_new();
  ct_op *op = ct_op_new("fill_constant");
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", (const int64_t[]){2, 3}, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", 1.5), CT_OK);
  ct_tensor *out = ct_var_tensor(ct_scope_var(s, "out"));
  const float old[2] = {7, 8};
  ck_assert_int_eq(ct_tensor_set_value(out, old, CT_DIMS(2), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)),
                   ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "fill_constant"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "cuda:0"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(2)));
  ck_assert(ct_place_equal(ct_tensor_place(out), ct_cpu()));
  const float *v = ct_tensor_data(out, CT_FLOAT32);
  ck_assert(v[0] == 7 && v[1] == 8);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *absent_suite(void) {
  Suite *s = suite_create("cuda_ops_absent");
  CT_ADD_TEST(s, absent_registry_holds_the_cuda_kernels_of_this_build);
  CT_ADD_TEST(s, absent_cuda_kernels_are_not_registered_for_other_dtypes);
  CT_ADD_TEST(s, absent_cublas_loads_in_a_cuda_build);
  CT_ADD_TEST(s, absent_op_at_a_cuda_place_is_refused_and_changes_nothing);
  return s;
}

/* ---- On a GPU ------------------------------------------------------------------------------ */

#ifdef CORTEN_TEST_CUDA

/* A host tensor of dims and dtype with deterministic values in [lo, hi) (rounded to dtype). */
static ct_tensor *host_values(ct_ddim dims, ct_dtype dtype, double lo, double hi,
                              unsigned seed) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  void *p = ct_tensor_mutable_data(t, dtype, ct_cpu());
  ck_assert_ptr_nonnull(p);
  uint64_t st = seed * 0x9E3779B97F4A7C15u + 1;
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
    st = st * 6364136223846793005u + 1442695040888963407u;
    double u = (double)(st >> 11) / 9007199254740992.0, v = lo + (hi - lo) * u;
    switch (dtype) {
      case CT_FLOAT32: ((float *)p)[i] = (float)v; break;
      case CT_FLOAT64: ((double *)p)[i] = v; break;
      case CT_FLOAT16: ((uint16_t *)p)[i] = ct__float_to_half((float)v); break;
      case CT_BFLOAT16: ((uint16_t *)p)[i] = ct__float_to_bf16((float)v); break;
      case CT_INT32: ((int32_t *)p)[i] = (int32_t)floor(v); break;
      case CT_INT64: ((int64_t *)p)[i] = (int64_t)floor(v); break;
      default: ck_abort_msg("host_values: dtype %s", ct_dtype_name(dtype));
    }
  }
  return t;
}

static double elem(const ct_tensor *t, int64_t i) {
  const void *p = ct_tensor_data(t, ct_tensor_dtype(t));
  switch (ct_tensor_dtype(t)) {
    case CT_FLOAT32: return ((const float *)p)[i];
    case CT_FLOAT64: return ((const double *)p)[i];
    case CT_FLOAT16: return ct__half_to_float(((const uint16_t *)p)[i]);
    case CT_BFLOAT16: return ct__bf16_to_float(((const uint16_t *)p)[i]);
    default: ck_abort_msg("elem: dtype"); return 0;
  }
}

/* Runs op over the named host inputs at place (each copied there), and returns Out copied back
 * to the host. Status through *st when st is not NULL (then a failure returns NULL). */
static ct_tensor *run_at(const ct_op *op, const char *const *names, ct_tensor *const *in,
                         size_t n_in, ct_place place, ct_status *st) {
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < n_in; i++) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, names[i])), in[i], place),
                     CT_OK);
  }
  ct_status r = ct_op_run(op, s, place);
  if (st != NULL) *st = r;
  if (r != CT_OK) {
    ck_assert_msg(st != NULL, "%s", ct_last_error());
    ct_scope_free(s);
    return NULL;
  }
  const ct_tensor *out = ct_var_get_tensor(ct_scope_find_var(s, "Out"));
  ck_assert(ct_place_equal(ct_tensor_place(out), place));
  ct_tensor *host = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(host, out, ct_cpu()), CT_OK);
  ct_scope_free(s);
  return host;
}

static void assert_same_bytes(const ct_tensor *a, const ct_tensor *b, const char *what) {
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(a), ct_tensor_dims(b)), "%s: dims", what);
  ck_assert_int_eq(ct_tensor_dtype(a), ct_tensor_dtype(b));
  size_t n = (size_t)ct_tensor_numel(a) * ct_dtype_size(ct_tensor_dtype(a));
  const unsigned char *pa = ct_tensor_data(a, ct_tensor_dtype(a));
  const unsigned char *pb = ct_tensor_data(b, ct_tensor_dtype(b));
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(pa[i] == pb[i], "%s: byte %zu differs (%u vs %u)", what, i, pa[i], pb[i]);
  }
}

static void assert_close(const ct_tensor *got, const ct_tensor *want, double rel, double abs_tol,
                         const char *what) {
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(got), ct_tensor_dims(want)), "%s: dims", what);
  for (int64_t i = 0; i < ct_tensor_numel(want); i++) {
    double g = elem(got, i), w = elem(want, i);
    ck_assert_msg(fabs(g - w) <= abs_tol + rel * fabs(w), "%s: element %lld is %.9g, want %.9g",
                  what, (long long)i, g, w);
  }
}

static ct_op *binary_op(const char *type) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", "X"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "Y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  return op;
}

static ct_op *unary_op(const char *type) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", "X"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  return op;
}

static const char *const xy[] = {"X", "Y"};
static const char *const binary_types[] = {"elementwise_add", "elementwise_sub",
                                           "elementwise_mul", "elementwise_div"};

/* Shape pairs covering the broadcast plans: same shape, a row, a column against a row, a
 * middle dim, rank 0, extent 1 everywhere, and empty. */
static const struct {
  ct_ddim x, y;
} bshapes[] = {
    {{2, {3, 4}}, {2, {3, 4}}},       {{2, {3, 4}}, {1, {4}}},    {{2, {3, 1}}, {2, {1, 4}}},
    {{3, {2, 3, 4}}, {2, {3, 1}}},    {{0, {0}}, {1, {5}}},       {{1, {5}}, {0, {0}}},
    {{3, {2, 1, 4}}, {3, {1, 3, 1}}}, {{2, {1, 1}}, {1, {1}}},    {{2, {0, 3}}, {1, {3}}},
    {{4, {2, 3, 5, 7}}, {4, {2, 1, 5, 1}}},
};

START_TEST(elementwise_float32_matches_the_cpu_exactly) {
  for (size_t t = 0; t < 4; t++) {
    ct_op *op = binary_op(binary_types[t]);
    for (size_t k = 0; k < sizeof bshapes / sizeof bshapes[0]; k++) {
      ct_tensor *in[2] = {host_values(bshapes[k].x, CT_FLOAT32, -4, 4, 1 + (unsigned)k),
                          host_values(bshapes[k].y, CT_FLOAT32, 0.5, 3, 100 + (unsigned)k)};
      ct_tensor *cpu = run_at(op, xy, in, 2, ct_cpu(), NULL);
      ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
      char what[64];
      snprintf(what, sizeof what, "%s shapes #%zu", binary_types[t], k);
      assert_same_bytes(gpu, cpu, what);
      ct_tensor_free(cpu);
      ct_tensor_free(gpu);
      ct_tensor_free(in[0]);
      ct_tensor_free(in[1]);
    }
    ct_op_free(op);
  }
}
END_TEST

/* float16 / bfloat16: the reference applies the op in float to the converted inputs and rounds
 * once, which is what the kernel promises. */
static void half_binary(ct_dtype dt) {
  for (size_t t = 0; t < 4; t++) {
    ct_op *op = binary_op(binary_types[t]);
    for (size_t k = 0; k < sizeof bshapes / sizeof bshapes[0]; k++) {
      ct_tensor *in[2] = {host_values(bshapes[k].x, dt, -4, 4, 1 + (unsigned)k),
                          host_values(bshapes[k].y, dt, 0.5, 3, 100 + (unsigned)k)};
      ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
      /* The CPU's float32 kernel over the converted inputs, then rounded to dt. */
      ct_op *to32 = unary_op("cast"), *back = unary_op("cast");
      ck_assert_int_eq(ct_op_set_attr_int(to32, "dtype", CT_FLOAT32), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_int(back, "dtype", dt), CT_OK);
      const char *xn[] = {"X"};
      ct_tensor *x32 = run_at(to32, xn, &in[0], 1, ct_cpu(), NULL);
      ct_tensor *y32 = run_at(to32, xn, &in[1], 1, ct_cpu(), NULL);
      ct_tensor *in32[2] = {x32, y32};
      ct_tensor *o32 = run_at(op, xy, in32, 2, ct_cpu(), NULL);
      ct_tensor *want = run_at(back, xn, &o32, 1, ct_cpu(), NULL);
      char what[64];
      snprintf(what, sizeof what, "%s %s shapes #%zu", binary_types[t], ct_dtype_name(dt), k);
      assert_same_bytes(gpu, want, what);
      ct_tensor *all[] = {gpu, x32, y32, o32, want, in[0], in[1]};
      for (size_t i = 0; i < 7; i++) ct_tensor_free(all[i]);
      ct_op_free(to32);
      ct_op_free(back);
    }
    ct_op_free(op);
  }
}

START_TEST(elementwise_float16_is_computed_in_float_and_rounded_once) { half_binary(CT_FLOAT16); }
END_TEST

START_TEST(elementwise_bfloat16_is_computed_in_float_and_rounded_once) {
  half_binary(CT_BFLOAT16);
}
END_TEST

START_TEST(activations_match_the_cpu) {
  static const char *const types[] = {"relu", "sigmoid", "tanh", "exp", "log"};
  const char *xn[] = {"X"};
  for (size_t t = 0; t < 5; t++) {
    ct_op *op = unary_op(types[t]);
    ct_ddim shapes[] = {CT_DIMS(1000), CT_DIMS(), CT_DIMS(0, 4), CT_DIMS(3, 5)};
    for (size_t k = 0; k < 4; k++) {
      bool is_log = strcmp(types[t], "log") == 0;
      ct_tensor *x = host_values(shapes[k], CT_FLOAT32, is_log ? 1e-3 : -8, 8, (unsigned)k);
      ct_tensor *cpu = run_at(op, xn, &x, 1, ct_cpu(), NULL);
      ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
      if (strcmp(types[t], "relu") == 0) {
        assert_same_bytes(gpu, cpu, "relu");
      } else {
        assert_close(gpu, cpu, 1e-6, 1e-7, types[t]);
      }
      ct_tensor_free(x);
      ct_tensor_free(cpu);
      ct_tensor_free(gpu);
    }
    ct_op_free(op);
  }
}
END_TEST

START_TEST(scale_matches_the_cpu_exactly_both_bias_orders) {
  const char *xn[] = {"X"};
  for (int after = 0; after < 2; after++) {
    ct_op *op = unary_op("scale");
    ck_assert_int_eq(ct_op_set_attr_float(op, "scale", 1.7), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_float(op, "bias", -0.3), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "bias_after_scale", after != 0), CT_OK);
    ct_tensor *x = host_values(CT_DIMS(517), CT_FLOAT32, -100, 100, 9);
    ct_tensor *cpu = run_at(op, xn, &x, 1, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
    assert_same_bytes(gpu, cpu, "scale");
    ct_tensor_free(x);
    ct_tensor_free(cpu);
    ct_tensor_free(gpu);
    ct_op_free(op);
  }
}
END_TEST

START_TEST(cast_between_float_types_matches_the_cpu_exactly) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16};
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 3; a++) {
    for (size_t b = 0; b < 3; b++) {
      ct_op *op = unary_op("cast");
      ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", types[b]), CT_OK);
      /* Values past float16's range and below its normal range round as the CPU rounds. */
      ct_tensor *x = host_values(CT_DIMS(4, 251), types[a], -70000, 70000, 3);
      float *p32 = NULL;
      if (types[a] == CT_FLOAT32) {
        p32 = ct_tensor_mutable_data(x, CT_FLOAT32, ct_cpu());
        p32[0] = 1e-6f;
        p32[1] = -3e-8f;
        p32[2] = 65519.f;
        p32[3] = 65520.f;
        p32[4] = NAN;
        p32[5] = INFINITY;
      }
      ct_tensor *cpu = run_at(op, xn, &x, 1, ct_cpu(), NULL);
      ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
      char what[64];
      snprintf(what, sizeof what, "cast %s to %s", ct_dtype_name(types[a]),
               ct_dtype_name(types[b]));
      assert_same_bytes(gpu, cpu, what);
      ct_tensor_free(x);
      ct_tensor_free(cpu);
      ct_tensor_free(gpu);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(cast_to_an_integer_on_cuda_is_unsupported_and_changes_nothing) {
  ct_op *op = unary_op("cast");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_INT32), CT_OK);
  ct_scope *s = ct_scope_new();
  ct_tensor *x = host_values(CT_DIMS(4), CT_FLOAT32, 0, 1, 1);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "X")), x, ct_cuda(0)), CT_OK);
  ct_tensor *out = ct_var_tensor(ct_scope_var(s, "Out"));
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "int32"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'X'"));
  ck_assert(!ct_tensor_has_memory(out));
  /* An integer input has no CUDA cast kernel at all. */
  ct_tensor *xi = host_values(CT_DIMS(4), CT_INT32, 0, 9, 1);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "X")), xi, ct_cuda(0)), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_FLOAT32), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)), CT_ERR_UNSUPPORTED);
  ck_assert(!ct_tensor_has_memory(out));
  ct_tensor_free(x);
  ct_tensor_free(xi);
  ct_scope_free(s);
  ct_op_free(op);
}
END_TEST

START_TEST(assign_copies_every_dtype_on_the_device) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_INT32, CT_INT64, CT_FLOAT16};
  const char *xn[] = {"X"};
  ct_op *op = unary_op("assign");
  for (size_t a = 0; a < 5; a++) {
    ct_tensor *x = host_values(CT_DIMS(3, 7), types[a], -50, 50, 5);
    ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
    assert_same_bytes(gpu, x, ct_dtype_name(types[a]));
    ct_tensor_free(gpu);
    ct_tensor_free(x);
  }
  ct_tensor *e = host_values(CT_DIMS(0, 2), CT_FLOAT32, 0, 1, 1);
  ct_tensor *gpu = run_at(op, xn, &e, 1, ct_cuda(0), NULL);
  ck_assert_int_eq(ct_tensor_numel(gpu), 0);
  ct_tensor_free(gpu);
  ct_tensor_free(e);
  ct_op_free(op);
}
END_TEST

START_TEST(reshape_on_cuda_shares_the_device_memory) {
  ct_op *op = unary_op("reshape");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", (const int64_t[]){-1, 2}, 2), CT_OK);
  ct_scope *s = ct_scope_new();
  ct_tensor *x = host_values(CT_DIMS(3, 4), CT_FLOAT16, -1, 1, 2);
  ct_tensor *dx = ct_var_tensor(ct_scope_var(s, "X"));
  ck_assert_int_eq(ct_tensor_copy(dx, x, ct_cuda(0)), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)), CT_OK);
  const ct_tensor *out = ct_var_get_tensor(ct_scope_find_var(s, "Out"));
  ck_assert(ct_tensor_shares_memory(out, dx));
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(6, 2)));
  ck_assert(ct_place_equal(ct_tensor_place(out), ct_cuda(0)));
  ct_tensor_free(x);
  ct_scope_free(s);
  ct_op_free(op);
}
END_TEST

static ct_op *fill_op(const char *type, ct_dtype dt, const int64_t *shape, size_t rank) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, rank), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", dt), CT_OK);
  return op;
}

START_TEST(fill_constant_matches_the_cpu_in_every_dtype) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16, CT_INT8,
                                   CT_UINT8,   CT_INT16,   CT_INT32,   CT_INT64,    CT_BOOL};
  for (size_t a = 0; a < sizeof types / sizeof types[0]; a++) {
    ct_op *op = fill_op("fill_constant", types[a], (const int64_t[]){5, 3}, 2);
    ck_assert_int_eq(ct_op_set_attr_float(op, "value", types[a] == CT_BOOL ? 1 : 3.0), CT_OK);
    if (types[a] >= CT_FLOAT16) {
      ck_assert_int_eq(ct_op_set_attr_float(op, "value", 0.1), CT_OK);
    }
    ct_tensor *cpu = run_at(op, NULL, NULL, 0, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, NULL, NULL, 0, ct_cuda(0), NULL);
    assert_same_bytes(gpu, cpu, ct_dtype_name(types[a]));
    ct_tensor_free(cpu);
    ct_tensor_free(gpu);
    ct_op_free(op);
  }
  /* A value the dtype cannot hold is refused on the device as on the CPU. */
  ct_op *op = fill_op("fill_constant", CT_INT8, (const int64_t[]){2}, 1);
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", 300), CT_OK);
  ct_status st;
  ck_assert_ptr_null(run_at(op, NULL, NULL, 0, ct_cuda(0), &st));
  ck_assert_int_eq(st, CT_ERR_OUT_OF_RANGE);
  ct_op_free(op);
}
END_TEST

/* Sizes that end inside a Philox block, and bounds where rounding to the dtype needs the clamp. */
static void random_case(const char *type, ct_dtype dt, int64_t n, double a, double b,
                        int64_t seed) {
  ct_op *op = fill_op(type, dt, &n, 1);
  bool uni = strcmp(type, "uniform_random") == 0;
  ck_assert_int_eq(ct_op_set_attr_float(op, uni ? "min" : "mean", a), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, uni ? "max" : "std", b), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "seed", seed), CT_OK);
  ct_tensor *cpu = run_at(op, NULL, NULL, 0, ct_cpu(), NULL);
  ct_tensor *gpu = run_at(op, NULL, NULL, 0, ct_cuda(0), NULL);
  char what[96];
  snprintf(what, sizeof what, "%s %s n=%lld [%g, %g]", type, ct_dtype_name(dt), (long long)n, a,
           b);
  assert_same_bytes(gpu, cpu, what);
  ct_tensor_free(cpu);
  ct_tensor_free(gpu);
  ct_op_free(op);
}

START_TEST(uniform_random_is_bit_identical_to_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16, CT_FLOAT64};
  static const int64_t sizes[] = {1, 3, 4, 5, 1001, 65537};
  for (size_t a = 0; a < 4; a++) {
    for (size_t k = 0; k < 6; k++) random_case("uniform_random", types[a], sizes[k], -1, 1, 42);
    random_case("uniform_random", types[a], 4099, 0.999, 1.0, 7);   /* clamps onto max's side */
    random_case("uniform_random", types[a], 4099, -3.14159, 2.71828, 1ll << 40);
    random_case("uniform_random", types[a], 16, 2.5, 2.5, 3);        /* min == max */
    random_case("uniform_random", types[a], 0, -1, 1, 3);
  }
}
END_TEST

START_TEST(gaussian_random_is_bit_identical_to_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16, CT_FLOAT64};
  static const int64_t sizes[] = {1, 3, 4, 5, 1001, 65537};
  for (size_t a = 0; a < 4; a++) {
    for (size_t k = 0; k < 6; k++) random_case("gaussian_random", types[a], sizes[k], 0, 1, 42);
    random_case("gaussian_random", types[a], 999, 10, 0.25, -5);
    random_case("gaussian_random", types[a], 7, 1, 0, 11);
  }
}
END_TEST

/* ---- matmul ---- */

static ct_op *mm_op(bool tx, bool ty) {
  ct_op *op = binary_op("matmul");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", tx), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", ty), CT_OK);
  return op;
}

static const struct {
  ct_ddim x, y;
  bool tx, ty;
} mshapes[] = {
    {{2, {3, 4}}, {2, {4, 5}}, false, false},
    {{2, {4, 3}}, {2, {4, 5}}, true, false},
    {{2, {3, 4}}, {2, {5, 4}}, false, true},
    {{2, {4, 3}}, {2, {5, 4}}, true, true},
    {{1, {4}}, {2, {4, 5}}, false, false},          /* rank-1 X */
    {{2, {3, 4}}, {1, {4}}, false, false},          /* rank-1 Y */
    {{1, {4}}, {1, {4}}, false, false},             /* dot product */
    {{3, {2, 3, 4}}, {2, {4, 5}}, false, false},    /* batch folds into rows */
    {{3, {2, 3, 4}}, {3, {2, 4, 5}}, false, false}, /* strided batch */
    {{3, {2, 4, 3}}, {2, {4, 5}}, true, false},     /* shared Y, transposed X */
    {{2, {3, 4}}, {3, {2, 4, 5}}, false, false},    /* shared X */
    {{4, {2, 1, 3, 4}}, {3, {3, 4, 5}}, false, false}, /* broadcast batch */
    {{4, {2, 1, 3, 4}}, {4, {1, 3, 5, 4}}, false, true},
    {{2, {3, 0}}, {2, {0, 4}}, false, false},       /* k = 0: zeros */
    {{2, {0, 4}}, {2, {4, 5}}, false, false},       /* empty result */
    {{2, {33, 70}}, {2, {70, 65}}, false, false},
};

START_TEST(matmul_float32_matches_the_cpu) {
  for (size_t k = 0; k < sizeof mshapes / sizeof mshapes[0]; k++) {
    ct_op *op = mm_op(mshapes[k].tx, mshapes[k].ty);
    ct_tensor *in[2] = {host_values(mshapes[k].x, CT_FLOAT32, -1, 1, 1 + (unsigned)k),
                        host_values(mshapes[k].y, CT_FLOAT32, -1, 1, 50 + (unsigned)k)};
    ct_tensor *cpu = run_at(op, xy, in, 2, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
    char what[32];
    snprintf(what, sizeof what, "matmul shapes #%zu", k);
    assert_close(gpu, cpu, 1e-5, 1e-4, what);
    ct_tensor_free(cpu);
    ct_tensor_free(gpu);
    ct_tensor_free(in[0]);
    ct_tensor_free(in[1]);
    ct_op_free(op);
  }
}
END_TEST

/* float16 / bfloat16: against the CPU's float32 matmul of the same (converted) values; the GPU
 * accumulates in float and rounds the result to the half type once. */
static void half_matmul(ct_dtype dt, double rel) {
  const char *xn[] = {"X"};
  for (size_t k = 0; k < sizeof mshapes / sizeof mshapes[0]; k++) {
    ct_op *op = mm_op(mshapes[k].tx, mshapes[k].ty);
    ct_tensor *in[2] = {host_values(mshapes[k].x, dt, -1, 1, 1 + (unsigned)k),
                        host_values(mshapes[k].y, dt, -1, 1, 50 + (unsigned)k)};
    ct_op *to32 = unary_op("cast");
    ck_assert_int_eq(ct_op_set_attr_int(to32, "dtype", CT_FLOAT32), CT_OK);
    ct_tensor *in32[2] = {run_at(to32, xn, &in[0], 1, ct_cpu(), NULL),
                          run_at(to32, xn, &in[1], 1, ct_cpu(), NULL)};
    ct_tensor *want = run_at(op, xy, in32, 2, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
    ck_assert_int_eq(ct_tensor_dtype(gpu), dt);
    char what[48];
    snprintf(what, sizeof what, "matmul %s shapes #%zu", ct_dtype_name(dt), k);
    assert_close(gpu, want, rel, rel, what);
    ct_tensor *all[] = {in[0], in[1], in32[0], in32[1], want, gpu};
    for (size_t i = 0; i < 6; i++) ct_tensor_free(all[i]);
    ct_op_free(to32);
    ct_op_free(op);
  }
}

START_TEST(matmul_float16_matches_a_float32_reference) { half_matmul(CT_FLOAT16, 4e-3); }
END_TEST

START_TEST(matmul_bfloat16_matches_a_float32_reference) { half_matmul(CT_BFLOAT16, 2e-2); }
END_TEST

START_TEST(matmul_runs_on_a_non_default_stream) {
  ct_stream *st = ct_stream_new(ct_cuda(0));
  ck_assert_ptr_nonnull(st);
  ck_assert_int_eq(ct_stream_set_current(st), CT_OK);
  ct_op *op = mm_op(false, false);
  ct_tensor *in[2] = {host_values(CT_DIMS(2, 64, 32), CT_FLOAT32, -1, 1, 1),
                      host_values(CT_DIMS(2, 32, 16), CT_FLOAT32, -1, 1, 2)};
  ct_tensor *cpu = run_at(op, xy, in, 2, ct_cpu(), NULL);
  ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
  assert_close(gpu, cpu, 1e-5, 1e-4, "matmul on a stream");
  ck_assert_int_eq(ct_stream_synchronize(st), CT_OK);
  ck_assert_int_eq(ct_stream_set_current(ct_stream_default(ct_cuda(0))), CT_OK);
  ct_stream_free(st);
  ct_tensor_free(cpu);
  ct_tensor_free(gpu);
  ct_tensor_free(in[0]);
  ct_tensor_free(in[1]);
  ct_op_free(op);
}
END_TEST

START_TEST(matmul_shape_errors_are_the_cpus) {
  ct_op *op = mm_op(false, false);
  ct_tensor *in[2] = {host_values(CT_DIMS(3, 4), CT_FLOAT32, -1, 1, 1),
                      host_values(CT_DIMS(5, 6), CT_FLOAT32, -1, 1, 2)};
  ct_status st;
  ck_assert_ptr_null(run_at(op, xy, in, 2, ct_cuda(0), &st));
  ck_assert_int_eq(st, CT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "inner dims 4 and 5 differ"));
  ct_tensor_free(in[0]);
  ct_tensor_free(in[1]);
  ct_op_free(op);
}
END_TEST

/* ---- sum, mean, reduce_sum, softmax, transpose, concat ---- */

static const char *const xs4[] = {"X0", "X1", "X2", "X3"};

/* An op of type with the k inputs X0.. in its slot X and output Out. */
static ct_op *many_op(const char *type, size_t k) {
  ct_op *op = ct_op_new(type);
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs4, k), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  return op;
}

/* Runs op at the CPU and at cuda:0 over the same k host inputs and checks the results: the same
 * bytes when rel is negative, else within rel (relative) plus abs_tol. */
static void compare_run(const ct_op *op, const char *const *names, ct_tensor *const *in,
                        size_t k, double rel, double abs_tol, const char *what) {
  ct_tensor *cpu = run_at(op, names, in, k, ct_cpu(), NULL);
  ct_tensor *gpu = run_at(op, names, in, k, ct_cuda(0), NULL);
  ck_assert_int_eq(ct_tensor_dtype(gpu), ct_tensor_dtype(cpu));
  if (rel < 0) {
    assert_same_bytes(gpu, cpu, what);
  } else {
    assert_close(gpu, cpu, rel, abs_tol, what);
  }
  ct_tensor_free(cpu);
  ct_tensor_free(gpu);
}

static const ct_ddim sum_shapes[] = {{0, {0}}, {1, {5}}, {2, {3, 4}}, {2, {0, 3}},
                                     {3, {2, 3, 4}}, {1, {4099}}};

START_TEST(sum_matches_the_cpu_exactly) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  for (size_t a = 0; a < 2; a++) {
    for (size_t k = 1; k <= 4; k++) {
      ct_op *op = many_op("sum", k);
      for (size_t d = 0; d < sizeof sum_shapes / sizeof sum_shapes[0]; d++) {
        ct_tensor *in[4] = {NULL, NULL, NULL, NULL};
        for (size_t i = 0; i < k; i++) {
          in[i] = host_values(sum_shapes[d], types[a], -3, 3, (unsigned)(10 * d + i + 1));
        }
        char what[64];
        snprintf(what, sizeof what, "sum %s of %zu, shape #%zu", ct_dtype_name(types[a]), k, d);
        compare_run(op, xs4, in, k, -1, 0, what);
        for (size_t i = 0; i < k; i++) ct_tensor_free(in[i]);
      }
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(mean_matches_the_cpu_and_an_empty_mean_is_nan) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  static const ct_ddim shapes[] = {{0, {0}}, {1, {7}}, {2, {3, 4}}, {2, {1000, 3}}, {1, {5000}}};
  const char *xn[] = {"X"};
  ct_op *op = unary_op("mean");
  for (size_t a = 0; a < 2; a++) {
    for (size_t d = 0; d < sizeof shapes / sizeof shapes[0]; d++) {
      ct_tensor *x = host_values(shapes[d], types[a], 0.5, 2, 3 + (unsigned)d);
      char what[48];
      snprintf(what, sizeof what, "mean %s shape #%zu", ct_dtype_name(types[a]), d);
      compare_run(op, xn, &x, 1, 1e-5, 0, what);
      ct_tensor_free(x);
    }
    ct_tensor *e = host_values(CT_DIMS(0, 3), types[a], 0, 1, 1);
    ct_tensor *gpu = run_at(op, xn, &e, 1, ct_cuda(0), NULL);
    ck_assert_int_eq(ct_tensor_dims(gpu).rank, 0);
    ck_assert(isnan(elem(gpu, 0)));
    ct_tensor_free(gpu);
    ct_tensor_free(e);
  }
  ct_op_free(op);
}
END_TEST

static const struct {
  ct_ddim x;
  int64_t dim[3];
  size_t n_dim;
  bool keep;
} rs_cases[] = {
    {{2, {3, 4}}, {0}, 0, false},        {{2, {3, 4}}, {0}, 1, false},
    {{2, {3, 4}}, {-1}, 1, true},        {{3, {2, 3, 4}}, {0, 2}, 2, false},
    {{3, {2, 3, 4}}, {1}, 1, true},      {{0, {0}}, {0}, 0, false},
    {{0, {0}}, {-1}, 1, true},           {{2, {0, 3}}, {0}, 1, false}, /* sums of nothing: 0 */
    {{2, {0, 3}}, {1}, 1, false},        {{4, {2, 1, 5, 3}}, {-3, 0}, 2, true},
    {{2, {1000, 7}}, {0}, 1, false},     {{1, {4099}}, {0}, 0, false},
    {{3, {4, 5, 6}}, {2, 0, 1}, 3, false},
};

START_TEST(reduce_sum_matches_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 2; a++) {
    for (size_t k = 0; k < sizeof rs_cases / sizeof rs_cases[0]; k++) {
      ct_op *op = unary_op("reduce_sum");
      if (rs_cases[k].n_dim > 0) {
        ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", rs_cases[k].dim, rs_cases[k].n_dim),
                         CT_OK);
      }
      ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", rs_cases[k].keep), CT_OK);
      ct_tensor *x = host_values(rs_cases[k].x, types[a], 0.5, 2, 20 + (unsigned)k);
      char what[48];
      snprintf(what, sizeof what, "reduce_sum %s case #%zu", ct_dtype_name(types[a]), k);
      compare_run(op, xn, &x, 1, 1e-5, 0, what);
      ct_tensor_free(x);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(softmax_matches_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  static const struct {
    ct_ddim x;
    int64_t axis;
    double lo, hi;
  } cases[] = {
      {{1, {5}}, -1, -4, 4},       {{2, {3, 4}}, -1, -4, 4},  {{2, {3, 4}}, 0, -4, 4},
      {{3, {2, 3, 4}}, 1, -4, 4},  {{3, {2, 3, 4}}, -3, -4, 4}, {{0, {0}}, 0, -4, 4},
      {{0, {0}}, -1, -4, 4},       {{2, {0, 3}}, 1, -4, 4},   {{2, {4, 1}}, 1, -4, 4},
      {{2, {2, 300}}, -1, -4, 4},  {{2, {3, 50}}, -1, 50, 90}, /* exp would overflow unshifted */
  };
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 2; a++) {
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      ct_op *op = unary_op("softmax");
      ck_assert_int_eq(ct_op_set_attr_int(op, "axis", cases[k].axis), CT_OK);
      ct_tensor *x = host_values(cases[k].x, types[a], cases[k].lo, cases[k].hi, 40 + (unsigned)k);
      char what[48];
      snprintf(what, sizeof what, "softmax %s case #%zu", ct_dtype_name(types[a]), k);
      compare_run(op, xn, &x, 1, 1e-5, 1e-7, what);
      ct_tensor_free(x);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(transpose_matches_the_cpu_exactly_in_every_size) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_INT64, CT_FLOAT16};
  static const struct {
    ct_ddim x;
    int64_t axis[CT_MAX_RANK];
  } cases[] = {
      {{2, {3, 4}}, {1, 0}},
      {{3, {2, 3, 4}}, {2, 0, 1}},
      {{3, {2, 3, 4}}, {-1, -2, -3}},
      {{3, {2, 3, 4}}, {0, 1, 2}}, /* nothing moves: a copy */
      {{0, {0}}, {0}},
      {{2, {0, 3}}, {1, 0}},
      {{3, {2, 1, 3}}, {1, 0, 2}}, /* extent 1 dropped: a copy */
      {{3, {65, 3, 70}}, {2, 1, 0}},
      {{9, {2, 3, 2, 1, 2, 3, 1, 2, 2}}, {8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {{9, {2, 3, 2, 1, 2, 3, 1, 2, 2}}, {1, 0, 3, 2, 5, 4, 8, 6, 7}},
  };
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 4; a++) {
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      ct_op *op = unary_op("transpose");
      ck_assert_int_eq(
          ct_op_set_attr_ints(op, "axis", cases[k].axis, (size_t)cases[k].x.rank), CT_OK);
      ct_tensor *x = host_values(cases[k].x, types[a], -100, 100, 60 + (unsigned)k);
      char what[48];
      snprintf(what, sizeof what, "transpose %s case #%zu", ct_dtype_name(types[a]), k);
      compare_run(op, xn, &x, 1, -1, 0, what);
      ct_tensor_free(x);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(concat_matches_the_cpu_exactly_in_every_size) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_INT32, CT_FLOAT16};
  static const struct {
    ct_ddim x[3];
    size_t k;
    int64_t axis;
  } cases[] = {
      {{{2, {2, 3}}, {2, {4, 3}}}, 2, 0},
      {{{2, {2, 3}}, {2, {2, 5}}, {2, {2, 1}}}, 3, 1},
      {{{2, {2, 3}}, {2, {2, 5}}, {2, {2, 1}}}, 3, -1},
      {{{3, {2, 3, 4}}, {3, {2, 0, 4}}, {3, {2, 2, 4}}}, 3, 1},
      {{{2, {0, 3}}, {2, {0, 3}}}, 2, 0}, /* empty result */
      {{{2, {3, 4}}}, 1, 0},
      {{{1, {5}}, {1, {0}}, {1, {7}}}, 3, -1},
      {{{3, {3, 70, 2}}, {3, {3, 65, 2}}}, 2, -2},
  };
  for (size_t a = 0; a < 4; a++) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      ct_op *op = many_op("concat", cases[c].k);
      ck_assert_int_eq(ct_op_set_attr_int(op, "axis", cases[c].axis), CT_OK);
      ct_tensor *in[3] = {NULL, NULL, NULL};
      for (size_t i = 0; i < cases[c].k; i++) {
        in[i] = host_values(cases[c].x[i], types[a], -100, 100, (unsigned)(80 + 3 * c + i));
      }
      char what[48];
      snprintf(what, sizeof what, "concat %s case #%zu", ct_dtype_name(types[a]), c);
      compare_run(op, xs4, in, cases[c].k, -1, 0, what);
      for (size_t i = 0; i < cases[c].k; i++) ct_tensor_free(in[i]);
      ct_op_free(op);
    }
  }
}
END_TEST

/* Runs op at the CPU and at cuda:0, both refused with status want and the same message. */
static void same_refusal(const ct_op *op, const char *const *names, ct_tensor *const *in,
                         size_t k, ct_status want) {
  ct_status st;
  char msg[512];
  ck_assert_ptr_null(run_at(op, names, in, k, ct_cpu(), &st));
  ck_assert_int_eq(st, want);
  snprintf(msg, sizeof msg, "%s", ct_last_error());
  ck_assert_ptr_null(run_at(op, names, in, k, ct_cuda(0), &st));
  ck_assert_int_eq(st, want);
  ck_assert_str_eq(ct_last_error(), msg);
}

START_TEST(reduce_and_shape_errors_are_the_cpus) {
  const char *xn[] = {"X"};
  ct_tensor *x = host_values(CT_DIMS(3, 4), CT_FLOAT32, 0, 1, 1);
  ct_tensor *y = host_values(CT_DIMS(3, 5), CT_FLOAT32, 0, 1, 2);
  ct_tensor *xy2[2] = {x, y};
  ct_op *op = unary_op("reduce_sum");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", (const int64_t[]){2}, 1), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", (const int64_t[]){1, -1}, 2), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_INVALID_ARGUMENT);
  ct_op_free(op);
  op = unary_op("softmax");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", -3), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_OUT_OF_RANGE);
  ct_op_free(op);
  op = unary_op("transpose");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", (const int64_t[]){0, 0}, 2), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", (const int64_t[]){0}, 1), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_SHAPE);
  ct_op_free(op);
  op = many_op("concat", 2);
  same_refusal(op, xs4, xy2, 2, CT_ERR_SHAPE);
  ct_op_free(op);
  op = many_op("sum", 2);
  same_refusal(op, xs4, xy2, 2, CT_ERR_SHAPE);
  ct_op_free(op);
  ct_tensor_free(x);
  ct_tensor_free(y);
}
END_TEST

/* ---- recurrent: an Elman RNN on the device ---- */

enum { RNN_B = 2, RNN_D = 3, RNN_H = 4 };

static void rnn_append(ct_program *p, const char *type, const char *x, const char *y,
                       const char *out) {
  ct_op *op = ct_op_new(type);
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  if (y != NULL) ck_assert_int_eq(ct_op_set_input(op, "Y", y), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
}

/* The recurrent op of test_rnn.c's Elman RNN: h = tanh(x W + h_prev U + b) per step, over x_seq
 * [T, B, D] from h0 [B, H]; outputs h_seq [T, B, H], h_last and the step scopes in "steps". */
static ct_op *elman_rnn_op(bool reverse) {
  ct_program *p = ct_program_new();
  ck_assert_ptr_nonnull(p);
  rnn_append(p, "matmul", "x", "W", "xw");
  rnn_append(p, "matmul", "h_prev", "U", "hu");
  rnn_append(p, "elementwise_add", "xw", "hu", "s");
  rnn_append(p, "elementwise_add", "s", "b", "pre");
  rnn_append(p, "tanh", "pre", NULL, "h");
  ct_op *op = ct_op_new("recurrent");
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_attr_program(op, "step_program", p), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "states", "h"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "ex_states", "h_prev"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_inputs", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_outputs", "h"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "reverse", reverse), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x_seq"), CT_OK);
  const char *params[] = {"W", "U", "b"};
  ck_assert_int_eq(ct_op_set_inputs(op, "Params", params, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "h_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "FinalStates", "h_last"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "StepScopes", "steps"), CT_OK);
  return op;
}

static const char *const elman_names[] = {"W", "U", "b", "h0", "x_seq"};

/* A scope holding copies of the Elman data at place. */
static ct_scope *elman_scope(ct_tensor *const *data, ct_place place) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_nonnull(s);
  for (size_t i = 0; i < 5; i++) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, elman_names[i])), data[i],
                                    place),
                     CT_OK);
  }
  return s;
}

/* The tensor called name as seen from s (s, then its ancestors), which must be at place. */
static const ct_tensor *tensor_at_place(const ct_scope *s, const char *name, ct_place place) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  ck_assert_msg(t != NULL, "no tensor %s", name);
  ck_assert_msg(ct_place_equal(ct_tensor_place(t), place), "%s is not at the expected place",
                name);
  return t;
}

/* A host copy of the device tensor t compared with the host tensor want, within 1e-5. */
static void assert_device_close(const ct_tensor *t, const ct_tensor *want, const char *what) {
  ct_tensor *host = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(host, t, ct_cpu()), CT_OK);
  assert_close(host, want, 0, 1e-5, what);
  ct_tensor_free(host);
}

static void check_elman_on_gpu(int64_t T, bool reverse) {
  ct_tensor *data[5] = {
      host_values(CT_DIMS(RNN_D, RNN_H), CT_FLOAT32, -1, 1, 71),
      host_values(CT_DIMS(RNN_H, RNN_H), CT_FLOAT32, -1, 1, 72),
      host_values(CT_DIMS(RNN_H), CT_FLOAT32, -1, 1, 73),
      host_values(CT_DIMS(RNN_B, RNN_H), CT_FLOAT32, -1, 1, 74),
      host_values(CT_DIMS(T, RNN_B, RNN_D), CT_FLOAT32, -1, 1, 75 + (unsigned)T)};
  ct_op *op = elman_rnn_op(reverse);
  ct_scope *cpu = elman_scope(data, ct_cpu()), *gpu = elman_scope(data, ct_cuda(0));
  ck_assert_msg(ct_op_run(op, cpu, ct_cpu()) == CT_OK, "%s", ct_last_error());
  ck_assert_msg(ct_op_run(op, gpu, ct_cuda(0)) == CT_OK, "%s", ct_last_error());
  char what[64];
  const ct_tensor *want_seq = tensor_at_place(cpu, "h_seq", ct_cpu());
  const ct_tensor *got_seq = tensor_at_place(gpu, "h_seq", ct_cuda(0));
  ck_assert(ct_ddim_equal(ct_tensor_dims(got_seq), CT_DIMS(T, RNN_B, RNN_H)));
  snprintf(what, sizeof what, "T=%lld%s h_seq", (long long)T, reverse ? " reversed" : "");
  assert_device_close(got_seq, want_seq, what);
  snprintf(what, sizeof what, "T=%lld%s h_last", (long long)T, reverse ? " reversed" : "");
  assert_device_close(tensor_at_place(gpu, "h_last", ct_cuda(0)),
                      tensor_at_place(cpu, "h_last", ct_cpu()), what);
  /* The step scopes: T of them, kids of the scope, holding device tensors; scope t holds h_t,
   * its x is row t of the device x_seq (a view) and its intermediates stay in it. */
  const ct_scope_list *gl = ct_var_get(ct_scope_find_var(gpu, "steps"), &ct_scope_list_type);
  const ct_scope_list *cl = ct_var_get(ct_scope_find_var(cpu, "steps"), &ct_scope_list_type);
  ck_assert_ptr_nonnull(gl);
  ck_assert_ptr_nonnull(cl);
  ck_assert_uint_eq(ct_scope_list_size(gl), (size_t)T);
  ck_assert_uint_eq(ct_scope_kid_count(gpu), (size_t)T);
  const float *xs = ct_tensor_data(tensor_at_place(gpu, "x_seq", ct_cuda(0)), CT_FLOAT32);
  for (int64_t t = 0; t < T; t++) {
    const ct_scope *gs = ct_scope_list_get(gl, (size_t)t), *cs = ct_scope_list_get(cl, (size_t)t);
    ck_assert_ptr_nonnull(gs);
    ck_assert_ptr_nonnull(ct_scope_find_local_var(gs, "x"));
    ck_assert_ptr_nonnull(ct_scope_find_local_var(gs, "xw"));
    ck_assert_ptr_nonnull(ct_scope_find_local_var(gs, "h"));
    const ct_tensor *x = tensor_at_place(gs, "x", ct_cuda(0));
    ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(RNN_B, RNN_D)));
    ck_assert_ptr_eq(ct_tensor_data(x, CT_FLOAT32), xs + t * RNN_B * RNN_D);
    static const char *const step_vars[] = {"h_prev", "xw", "hu", "s", "pre", "h"};
    for (size_t v = 0; v < sizeof step_vars / sizeof step_vars[0]; v++) {
      (void)tensor_at_place(gs, step_vars[v], ct_cuda(0));
    }
    snprintf(what, sizeof what, "T=%lld%s step scope %lld h", (long long)T,
             reverse ? " reversed" : "", (long long)t);
    assert_device_close(tensor_at_place(gs, "h", ct_cuda(0)), tensor_at_place(cs, "h", ct_cpu()),
                        what);
  }
  ct_scope_free(gpu);
  ct_scope_free(cpu);
  ct_op_free(op);
  for (size_t i = 0; i < 5; i++) ct_tensor_free(data[i]);
}

START_TEST(recurrent_elman_on_the_device_matches_the_cpu) {
  static const int64_t lengths[] = {1, 2, 7, 50};
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
    check_elman_on_gpu(lengths[i], false);
  }
}
END_TEST

START_TEST(recurrent_elman_reversed_on_the_device_matches_the_cpu) {
  check_elman_on_gpu(1, true);
  check_elman_on_gpu(9, true);
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_ops");
  CT_ADD_TEST(s, absent_registry_holds_the_cuda_kernels_of_this_build);
  CT_ADD_TEST(s, absent_cublas_loads_in_a_cuda_build);
  CT_ADD_TEST(s, elementwise_float32_matches_the_cpu_exactly);
  CT_ADD_TEST(s, elementwise_float16_is_computed_in_float_and_rounded_once);
  CT_ADD_TEST(s, elementwise_bfloat16_is_computed_in_float_and_rounded_once);
  CT_ADD_TEST(s, activations_match_the_cpu);
  CT_ADD_TEST(s, scale_matches_the_cpu_exactly_both_bias_orders);
  CT_ADD_TEST(s, cast_between_float_types_matches_the_cpu_exactly);
  CT_ADD_TEST(s, cast_to_an_integer_on_cuda_is_unsupported_and_changes_nothing);
  CT_ADD_TEST(s, assign_copies_every_dtype_on_the_device);
  CT_ADD_TEST(s, reshape_on_cuda_shares_the_device_memory);
  CT_ADD_TEST(s, fill_constant_matches_the_cpu_in_every_dtype);
  CT_ADD_TEST(s, uniform_random_is_bit_identical_to_the_cpu);
  CT_ADD_TEST(s, gaussian_random_is_bit_identical_to_the_cpu);
  CT_ADD_TEST(s, matmul_float32_matches_the_cpu);
  CT_ADD_TEST(s, matmul_float16_matches_a_float32_reference);
  CT_ADD_TEST(s, matmul_bfloat16_matches_a_float32_reference);
  CT_ADD_TEST(s, matmul_runs_on_a_non_default_stream);
  CT_ADD_TEST(s, matmul_shape_errors_are_the_cpus);
  CT_ADD_TEST(s, sum_matches_the_cpu_exactly);
  CT_ADD_TEST(s, mean_matches_the_cpu_and_an_empty_mean_is_nan);
  CT_ADD_TEST(s, reduce_sum_matches_the_cpu);
  CT_ADD_TEST(s, softmax_matches_the_cpu);
  CT_ADD_TEST(s, transpose_matches_the_cpu_exactly_in_every_size);
  CT_ADD_TEST(s, concat_matches_the_cpu_exactly_in_every_size);
  CT_ADD_TEST(s, reduce_and_shape_errors_are_the_cpus);
  CT_ADD_TEST(s, recurrent_elman_on_the_device_matches_the_cpu);
  CT_ADD_TEST(s, recurrent_elman_reversed_on_the_device_matches_the_cpu);
  return s;
}

#endif /* CORTEN_TEST_CUDA */

/* Asks for the device count in a child process, so this one never initializes CUDA. */
static int probe_devices(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(ct_cuda_device_count() > 100 ? 100 : ct_cuda_device_count());
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

static int run_suite(Suite *suite) {
  SRunner *sr = srunner_create(suite);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed;
}

int main(void) {
  int n = probe_devices();
  if (n < 0) {
    printf("could not probe for CUDA devices in a child process\n");
    return EXIT_FAILURE;
  }
  if (n == 0) {
    if (run_suite(absent_suite()) != 0) return EXIT_FAILURE;
    printf("skipped: the GPU tests need a CUDA device (the no-device checks passed)\n");
    return 77;
  }
#ifdef CORTEN_TEST_CUDA
  return run_suite(cuda_suite()) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
#else
  return EXIT_FAILURE; /* unreachable: without CUDA there are no devices */
#endif
}
