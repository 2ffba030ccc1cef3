/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_pool.c: conv2d_pool on the CPU (ops/defs/conv.c; the pass in ops/passes_pool.c).
 *
 * Where conv2d's float32 kernel would take its direct loop (resnet's 7x7 stride-2 stem, whose
 * 3x3 max pool follows), the convolution's rows go through a buffer of each piece a band at a
 * time and are pooled from there (ops/cpu/conv_direct.c): the convolution's output, 3.2 MB an
 * image for resnet's stem, is never written to memory nor read back. Its epilogue is applied
 * where conv2d_fusion applies it on that path: in the loop's rows (bias, relu, clip between
 * bounds float32 holds), or by conv2d_fusion's pass, here on each row of the buffer once
 * computed (a batch norm, clip in double). Elsewhere (another algorithm, float64, a residual)
 * conv2d_fusion's kernel writes the convolution into a tensor of the kernel's own and pool2d's
 * kernel pools it. Either way each value is the one conv2d_fusion then pool2d compute: the same
 * bits. */

#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/defs.h"

/* How the banded path applies the epilogue (false: it does not, a residual's planes): the loop
 * in its rows (*e; bias, relu, clip between bounds float32 holds), conv2d_fusion's pass on each
 * row once computed (*post: a batch norm, clip in double), or nothing (*none). */
static bool band_epilogue(const ct_kernel_ctx *c, ct__conv_epi *e, ct__fusion_epi *post,
                          bool *use_post, bool *none) {
  ct__fusion_epi_make(c, sizeof(float), post);
  if (post->res != NULL) return false;
  *e = (ct__conv_epi){.bias = post->bias, .n_bias = post->n_bias, .act = post->act,
                      .lo = post->lo, .hi = post->hi};
  *use_post = post->bn[0] != NULL || (post->act != CT__EPI_NONE && post->act != CT__EPI_RELU &&
                                      post->act != CT__EPI_CLAMP);
  *none = post->bias == NULL && post->bn[0] == NULL && post->act == CT__EPI_NONE;
  return true;
}

/* conv2d_fusion's kernel into a tensor of its own, then pool2d's from it into Output. */
static ct_status conv_then_pool(const ct_kernel_ctx *c, ct_kernel_fn conv, ct_kernel_fn pool) {
  const ct_tensor *in = ct_kernel_in(c, CT__CONV_INPUT, 0);
  ct__conv_geom g;
  ct_status s = ct__conv_plan(c, in->dims, ct_kernel_in(c, CT__CONV_FILTER, 0)->dims, &g);
  if (s != CT_OK) return s;
  ct_tensor *t = ct_tensor_new();
  if (t == NULL) return ct_kernel_fail(c, ct_last_status(), "%s", ct_last_error());
  s = ct_tensor_resize(t, ct__conv_out_dims(&g));
  if (s != CT_OK) {
    ct_tensor_free(t);
    return ct_kernel_fail(c, s, "%s", ct_last_error());
  }
  /* the convolution writes t (its messages still name Output's variable) */
  ct_tensor *outs[1] = {t};
  static const uint32_t one[2] = {0, 1};
  ct_kernel_ctx cc = *c;
  cc.out_t = outs;
  cc.out_pos = one;
  s = ct__k_run_view(c, &cc, true, conv);
  if (s == CT_OK) {
    const ct_tensor *ins[1] = {t};
    ct_kernel_ctx pc = ct__cpool_pool_view(c); /* pool2d's X (slot 0) is t */
    pc.in_t = ins;
    pc.in_pos = one;
    s = ct__k_run_view(c, &pc, false, pool);
  }
  ct_tensor_free(t);
  return s;
}

ct_status ct__cpu_conv2d_pool_f32(const ct_kernel_ctx *c) {
  ct__conv_epi e;
  ct__fusion_epi post;
  bool use_post = false, none = false;
  if (band_epilogue(c, &e, &post, &use_post, &none)) {
    bool taken = false;
    ct_status s = ct__conv_direct_pooled(c, none || use_post ? NULL : &e,
                                         use_post ? &post : NULL, &taken);
    if (s != CT_OK || taken) return s;
  }
  return conv_then_pool(c, ct__cpu_conv2d_fusion_f32, ct__cpu_pool2d_f32);
}

ct_status ct__cpu_conv2d_pool_f64(const ct_kernel_ctx *c) {
  return conv_then_pool(c, ct__cpu_conv2d_fusion_f64, ct__cpu_pool2d_f64);
}
