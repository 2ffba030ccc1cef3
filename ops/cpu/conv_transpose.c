/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_transpose.c: conv_transpose and its gradient on the CPU, float32 and float64,
 * following the plan of ops/defs/conv_transpose.c (1 to 3 spatial dims, padded to 3); and
 * conv_nd and its gradient (ops/defs/conv_nd.c), whose plan is the mirror of a transposed
 * convolution's, so they take the same im2col and col2im with X and Y exchanged.
 *
 * Forward, per image and group: one GEMM (corten's, ops/cpu/gemm.h) col = W_g^T X_g, [mg K, I]
 * (each input element times every tap of every output channel of the group), then col2im adds
 * each column's values into the output elements its taps land on, over Y's planes set to B
 * (or 0) first. Images split across threads when there are at least as many as threads (each
 * piece with its own col, its GEMMs on its thread), else each GEMM threads itself: either way
 * every element gets the same sums in the same order.
 * Gradient, per image and group: im2col gathers col from Y@GRAD (the unfolding of a
 * convolution of Y@GRAD), then X@GRAD = W_g col and W@GRAD += X_g col^T (images in order);
 * B@GRAD sums Y@GRAD in double. The kernels are in conv_transpose_tmpl.h, included per dtype. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <corten/op.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/defs/conv_transpose.h"
#include "common/alloc.h"

/* The inputs i in [*a, *b) whose output i s + off lies in [0, out) (a range: i s + off grows
 * with i), clipped to [0, in). */
static void cvt_range(int64_t off, int64_t s, int64_t in, int64_t out, int64_t *a, int64_t *b) {
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t hi = out - off <= 0 ? 0 : (out - off + s - 1) / s;
  if (hi > in) hi = in;
  if (lo > in) lo = in;
  *a = lo;
  *b = hi > lo ? hi : lo;
}

/* A GEMM's failure (out of memory for its packing, on whichever thread), reported after. */
static void cvt_note(atomic_bool *failed, ct_status st) {
  if (st != CT_OK) atomic_store_explicit(failed, true, memory_order_relaxed);
}

/* The forward's pieces of images: one per thread when there are at least as many images. */
static int64_t cvt_pieces(const ct__cvt_plan *p) {
  int64_t t = ct__parallel_nested() ? 1 : ct_get_num_threads();
  return t > 1 && p->n >= t ? t : 1;
}

/* The elements of one col buffer (0: nothing to multiply; -1: more than an int64 holds, which
 * no memory could hold either). */
static int64_t cvt_col_elems(const ct__cvt_plan *p) {
  int64_t mk, ni = ct__cvt_vol(p->in), n;
  if (__builtin_mul_overflow(p->m / p->groups, ct__cvt_vol(p->k), &mk)) return -1;
  bool empty = p->c == 0 || mk == 0 || ni == 0 || ct__cvt_vol(p->out) == 0;
  if (empty) return 0;
  return __builtin_mul_overflow(mk, ni, &n) ? -1 : n;
}

/* The working space of n elements: the thread's kept work buffer (common/alloc.h), the C
 * library's when that is taken; NULL with CT_ERR_OUT_OF_MEMORY naming the op. */
static void *cvt_scratch(const ct_kernel_ctx *c, int64_t n, size_t es) {
  bool fits = n >= 0 && (uint64_t)n <= SIZE_MAX / es;
  void *p = fits ? ct__work_take((size_t)n * es) : NULL;
  if (p == NULL) {
    ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                   "out of host memory for the %lld-element columns of input X variable '%s' "
                   "(run fewer images at once)",
                   (long long)n, ct_kernel_in_name(c, 0, 0));
  }
  return p;
}

static void cvt_scratch_free(void *p) { ct__work_free(p); }

#define T float
#define SFX(name) name##_f32
#define GEMM ct__gemm_f32
#include "ops/cpu/conv_transpose_tmpl.h"
#undef T
#undef SFX
#undef GEMM

#define T double
#define SFX(name) name##_f64
#define GEMM ct__gemm_f64
#include "ops/cpu/conv_transpose_tmpl.h"
#undef T
#undef SFX
#undef GEMM

static const ct__kernel_set kernels[] = {
    {"conv_transpose", CT__KERNELS_F32_F64(conv_transpose)},
    {"conv_transpose_grad", CT__KERNELS_F32_F64(conv_transpose_grad)},
    {"conv_nd", CT__KERNELS_F32_F64(conv_nd)},
    {"conv_nd_grad", CT__KERNELS_F32_F64(conv_nd_grad)},
};

const ct__kernel_table ct__cpu_conv_transpose = CT__TABLE(kernels);
