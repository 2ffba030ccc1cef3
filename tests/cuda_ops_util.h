/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the CUDA kernel suites (test_cuda_ops*.c), for a build with CUDA: deterministic
 * host inputs in every float dtype, an op run at a place over copies of them, and comparisons of
 * the results byte for byte or within a tolerance. */
#ifndef CORTEN_TESTS_CUDA_OPS_UTIL_H
#define CORTEN_TESTS_CUDA_OPS_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <corten/corten.h>

#include "ops/half.h"
#include "ops/op_impl.h"
#include "harness.h"

/* ---- Which kernels are registered (with or without a device) ------------------------------- */

/* A kernel of an op type for one dtype (CT_DTYPE_UNDEFINED: the any-dtype kernel). */
typedef struct kernel_key {
  const char *type;
  ct_dtype dtype;
} kernel_key;

static inline ct_kernel_fn kernel_at(const char *type, ct_device_kind kind, ct_dtype dtype) {
  const ct__opdef *d = ct__op_lookup(type);
  ck_assert_msg(d != NULL, "op type %s", type);
  return atomic_load(&((ct__opdef *)d)->kernels[kind][dtype]);
}

/* Each of the n kernels has a CUDA kernel in a CUDA build (none in a CPU-only one), and a CPU
 * kernel of its dtype or for any dtype, which the GPU tests compare it with. */
static inline void assert_cuda_kernels(const kernel_key *keys, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *type = keys[i].type;
    ct_dtype dt = keys[i].dtype;
    ct_kernel_fn fn = kernel_at(type, CT_DEVICE_CUDA, dt);
#ifdef CORTEN_TEST_CUDA
    ck_assert_msg(fn != NULL, "no CUDA kernel for %s/%s", type, ct_dtype_name(dt));
    ck_assert_msg(kernel_at(type, CT_DEVICE_CPU, dt) != NULL ||
                      kernel_at(type, CT_DEVICE_CPU, CT_DTYPE_UNDEFINED) != NULL,
                  "no CPU kernel for %s", type);
#else
    ck_assert_msg(fn == NULL, "a CPU-only build has a CUDA kernel for %s", type);
#endif
  }
}

#ifdef CORTEN_TEST_CUDA

/* A host tensor of dims and dtype with deterministic values in [lo, hi) (rounded to dtype). */
static inline ct_tensor *host_values(ct_ddim dims, ct_dtype dtype, double lo, double hi,
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

/* Element i of a float tensor of any float dtype, as a double. */
static inline double elem(const ct_tensor *t, int64_t i) {
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
static inline ct_tensor *run_at(const ct_op *op, const char *const *names,
                                ct_tensor *const *in, size_t n_in, ct_place place,
                                ct_status *st) {
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

/* Asserts that the host tensors a and b hold the same dims, dtype and bytes; what names the case
 * in a failure. */
static inline void assert_same_bytes(const ct_tensor *a, const ct_tensor *b, const char *what) {
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(a), ct_tensor_dims(b)), "%s: dims", what);
  ck_assert_int_eq(ct_tensor_dtype(a), ct_tensor_dtype(b));
  size_t n = (size_t)ct_tensor_numel(a) * ct_dtype_size(ct_tensor_dtype(a));
  const unsigned char *pa = ct_tensor_data(a, ct_tensor_dtype(a));
  const unsigned char *pb = ct_tensor_data(b, ct_tensor_dtype(b));
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(pa[i] == pb[i], "%s: byte %zu differs (%u vs %u)", what, i, pa[i], pb[i]);
  }
}

/* Asserts that got holds want's dims and, element by element, values within
 * abs_tol + rel |want|. */
static inline void assert_close(const ct_tensor *got, const ct_tensor *want, double rel,
                                double abs_tol, const char *what) {
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(got), ct_tensor_dims(want)), "%s: dims", what);
  for (int64_t i = 0; i < ct_tensor_numel(want); i++) {
    double g = elem(got, i), w = elem(want, i);
    ck_assert_msg(fabs(g - w) <= abs_tol + rel * fabs(w), "%s: element %lld is %.9g, want %.9g",
                  what, (long long)i, g, w);
  }
}

/* Ops of type reading X (and Y) and writing Out: the names run_at gives its inputs and reads
 * its output from. */
static inline ct_op *binary_op(const char *type) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", "X"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "Y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  return op;
}

static inline ct_op *unary_op(const char *type) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", "X"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  return op;
}

/* An op of type whose slots are wired to variables of the same names (a grad op reads "X",
 * "Out@GRAD" ...), as run_named and places_agree name their inputs and outputs. */
static inline ct_op *named_op(const char *type, const char *const *ins, size_t n_in,
                              const char *const *outs, size_t n_out) {
  ct_op *op = ct_op_new(type);
  ck_assert_msg(op != NULL, "%s", ct_last_error());
  for (size_t i = 0; i < n_in; i++) ck_assert_int_eq(ct_op_set_input(op, ins[i], ins[i]), CT_OK);
  for (size_t i = 0; i < n_out; i++) {
    ck_assert_int_eq(ct_op_set_output(op, outs[i], outs[i]), CT_OK);
  }
  return op;
}

static inline void free_all(ct_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) ct_tensor_free(t[i]);
}

/* The most outputs places_agree compares. */
#define MAX_OUTS 5

/* Runs op over the named host inputs at place (each copied there) and returns its named outputs
 * copied back to the host, in outs. */
static inline void run_named(const ct_op *op, const char *const *in_names,
                             ct_tensor *const *in, size_t n_in, const char *const *out_names,
                             ct_tensor **outs, size_t n_out, ct_place place) {
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < n_in; i++) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, in_names[i])), in[i], place),
                     CT_OK);
  }
  ck_assert_msg(ct_op_run(op, s, place) == CT_OK, "%s at %s: %s", ct_op_type(op),
                place.kind == CT_DEVICE_CPU ? "cpu" : "cuda:0", ct_last_error());
  for (size_t i = 0; i < n_out; i++) {
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, out_names[i]));
    ck_assert_msg(t != NULL, "no output %s", out_names[i]);
    ck_assert(ct_place_equal(ct_tensor_place(t), place));
    outs[i] = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_copy(outs[i], t, ct_cpu()), CT_OK);
  }
  ct_scope_free(s);
}

/* Runs op on the CPU and at cuda:0 and compares every named output: the same bytes for rel < 0,
 * else within abs_tol + rel |cpu|. */
static inline void places_agree(const ct_op *op, const char *const *in_names,
                                ct_tensor *const *in, size_t n_in,
                                const char *const *out_names, size_t n_out, double rel,
                                double abs_tol, const char *what) {
  ct_tensor *cpu[MAX_OUTS], *gpu[MAX_OUTS];
  ck_assert_uint_le(n_out, MAX_OUTS);
  run_named(op, in_names, in, n_in, out_names, cpu, n_out, ct_cpu());
  run_named(op, in_names, in, n_in, out_names, gpu, n_out, ct_cuda(0));
  for (size_t i = 0; i < n_out; i++) {
    char at[160]; /* the return checked: an unchecked one fails -Wformat-truncation at -O3 */
    ck_assert_int_lt(snprintf(at, sizeof at, "%s, %s", what, out_names[i]), (int)sizeof at);
    if (rel < 0) {
      assert_same_bytes(gpu[i], cpu[i], at);
    } else {
      assert_close(gpu[i], cpu[i], rel, abs_tol, at);
    }
    ct_tensor_free(cpu[i]);
    ct_tensor_free(gpu[i]);
  }
}

/* The input names of a binary op, for run_at. */
static const char *const xy[] = {"X", "Y"};

#endif /* CORTEN_TEST_CUDA */

#endif /* CORTEN_TESTS_CUDA_OPS_UTIL_H */
